/*
 * Layer norm's bounds and rmsnorm's (nn_bounds.h; docs/numerics.md,
 * "Layer norm" and "rmsnorm").
 *
 * Per row x of n features, the statistics as nn_layernorm.c makes them,
 * in double (the exact ones' stand-ins):
 *
 *   mu = sum(x) / n, var = sum((x - mu)^2) / n, r = 1 / sqrt(var + eps),
 *   xh_j = (x_j - mu) r
 *
 * xhat's Jacobian is r K, K_jk = delta_jk - 1/n - xh_j xh_k / n, which is
 * symmetric; dx = r K g with g = dy w. The bounds go through
 * T_j(e) = sum_k |K_jk| e_k, computed exactly in O(n log n) per row
 * (kabs below), so that a row whose output hardly depends on its input
 * (2 features with a small eps: K is nearly 0) gets a bound to match.
 *
 * rmsnorm (ln->rms) is the same row without the mean: r = 1 /
 * sqrt(sum(x^2) / n + eps), xh_j = x_j r, K_jk = delta_jk - xh_j xh_k / n
 * (no 1/n), T_j(e) = |1 - xh_j^2 / n| e_j + (|xh_j| / n) sum_{k != j}
 * |xh_k| e_k in O(n), and dx = r (g - xh_j B) has no A = mean(g).
 */
#include <math.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn_bounds_internal.h"

#define U_D TPS_BOUND_U_DOUBLE

struct sorted_entry {
	double a;
	int64_t k;
};

static int by_value(const void *l, const void *r)
{
	double a = ((const struct sorted_entry *)l)->a;
	double b = ((const struct sorted_entry *)r)->a;
	return (a > b) - (a < b);
}

/* Per-row scratch, n values each (pe, px: n + 1). */
struct row {
	int64_t n;
	bool rms; /* rmsnorm: no mean, K without its 1/n */
	double *xh, *eps_xh, *ex, *g, *eg, *dx, *tx, *tg, *edx, *pe, *px;
	double *exh, *d2xh;
	struct sorted_entry *order;
	double mean, r;
	/* r's relative change, to first and second order */
	double rho, rho2;
};

static void row_free(struct row *w)
{
	double **arrays[] = {&w->xh, &w->eps_xh, &w->ex,  &w->g,   &w->eg,
			     &w->dx, &w->tx,	 &w->tg,  &w->edx, &w->pe,
			     &w->px, &w->exh,	 &w->d2xh};
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
		free(*arrays[i]);
		*arrays[i] = NULL;
	}
	free(w->order);
	w->order = NULL;
}

static enum tps_status row_init(struct row *w, int64_t n, bool rms,
				struct tps_error *err)
{
	double **arrays[] = {&w->xh, &w->eps_xh, &w->ex,  &w->g,   &w->eg,
			     &w->dx, &w->tx,	 &w->tg,  &w->edx, &w->pe,
			     &w->px, &w->exh,	 &w->d2xh};
	size_t count = (size_t)n + 1;
	bool ok = true;
	*w = (struct row){.n = n, .rms = rms};
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
		*arrays[i] = malloc(count * sizeof **arrays[i]);
		ok = ok && *arrays[i];
	}
	w->order = malloc(count * sizeof *w->order);
	if (!ok || !w->order) {
		row_free(w);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	return TPS_OK;
}

/*
 * One row's statistics, xhat and xhat's rounding as the code makes them:
 * the mean's sum of n terms in double (any order) is off by at most
 * gamma_n sum|x| / n, which moves every xhat by r times that; the rest
 * (the variance, which the mean's error leaves unchanged to first order,
 * sqrt, the divisions, the product) is a relative gamma_{n+9} in double;
 * then xhat is rounded to a float.
 *
 * rmsnorm: the squares of floats are exact in double, so r's relative
 * error is the sum's n - 1 additions, the division by n, + eps, sqrt and
 * 1 / (gamma_{n+3}), and the product x_j r one more: gamma_{n+4}; no
 * mean, no dmu.
 */
static void row_stats(struct row *w, const struct tps_bound_units *un,
		      const float *x, double eps)
{
	int64_t n = w->n;
	double sum = 0.0, sq = 0.0, abs_sum = 0.0, dmu = 0.0, rel;
	for (int64_t j = 0; !w->rms && j < n; j++) {
		sum += x[j];
		abs_sum += fabs((double)x[j]);
	}
	w->mean = sum / (double)n;
	for (int64_t j = 0; j < n; j++) {
		double d = x[j] - w->mean;
		sq += d * d;
	}
	w->r = 1.0 / sqrt(sq / (double)n + eps);
	if (w->rms) {
		rel = tps_bound_gamma_path((double)(n + 4) * U_D);
	} else {
		dmu = tps_bound_gamma_path((double)n * U_D) * abs_sum /
		      (double)n;
		rel = tps_bound_gamma_path((double)(n + 9) * U_D);
	}
	for (int64_t j = 0; j < n; j++) {
		w->xh[j] = (x[j] - w->mean) * w->r;
		w->eps_xh[j] = w->r * dmu + fabs(w->xh[j]) * rel +
			       tps_bound_round(&un->acc, w->xh[j]);
	}
	if (w->rms) {
		return; /* kabs_rms needs no order */
	}
	for (int64_t j = 0; j < n; j++) {
		w->order[j] = (struct sorted_entry){w->xh[j], j};
	}
	qsort(w->order, (size_t)n, sizeof *w->order, by_value);
}

/* The first position in the sorted row whose value is >= t (strict:
 * > t). */
static int64_t lower(const struct row *w, double t, bool strict)
{
	int64_t lo = 0, hi = w->n;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		double a = w->order[mid].a;
		if (strict ? a <= t : a < t) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/*
 * out_j = T_j(e) = sum_k |K_jk| e_k for every j of the row:
 *
 *   |1 - 1/n - xh_j^2 / n| e_j + (1/n) sum_{k != j} |1 + xh_j xh_k| e_k
 *
 * For c = xh_j, 1 + c xh_k >= 0 on one side of -1/c, a prefix or a
 * suffix of the row sorted by xh: with the prefix sums of e_k and
 * xh_k e_k the whole sum is 2 (E_G + c X_G) - (E + c X) over that side
 * G. The subtraction can lose a few ulps of sum (1 + |c xh_k|) e_k,
 * which the last term adds back.
 */
/*
 * rmsnorm's T_j(e), K_jk = delta_jk - xh_j xh_k / n:
 *
 *   |1 - xh_j^2 / n| e_j + (|xh_j| / n) (S - |xh_j| e_j),
 *   S = sum_k |xh_k| e_k
 *
 * The subtraction can lose a few ulps of S, which the slack adds back.
 */
static void kabs_rms(const struct row *w, const double *e, double *out)
{
	int64_t n = w->n;
	double s = 0.0, slack;
	for (int64_t k = 0; k < n; k++) {
		s += fabs(w->xh[k]) * e[k];
	}
	slack = 4.0 * (double)(n + 2) * U_D * s;
	for (int64_t j = 0; j < n; j++) {
		double c = fabs(w->xh[j]);
		out[j] = fabs(1.0 - c * c / (double)n) * e[j] +
			 c * (fmax(s - c * e[j], 0.0) + slack) / (double)n;
	}
}

static void kabs(struct row *w, const double *e, double *out)
{
	int64_t n = w->n;
	double abs_ae = 0.0, e_all, x_all;
	if (w->rms) {
		kabs_rms(w, e, out);
		return;
	}
	w->pe[0] = w->px[0] = 0.0;
	for (int64_t i = 0; i < n; i++) {
		double ek = e[w->order[i].k];
		w->pe[i + 1] = w->pe[i] + ek;
		w->px[i + 1] = w->px[i] + w->order[i].a * ek;
		abs_ae += fabs(w->order[i].a) * ek;
	}
	e_all = w->pe[n];
	x_all = w->px[n];
	for (int64_t j = 0; j < n; j++) {
		double c = w->xh[j], total = e_all, others, slack;
		if (c > 0.0) {
			int64_t i0 = lower(w, -1.0 / c, false);
			total = 2.0 * ((e_all - w->pe[i0]) +
				       c * (x_all - w->px[i0])) -
				(e_all + c * x_all);
		} else if (c < 0.0) {
			int64_t i1 = lower(w, -1.0 / c, true);
			total = 2.0 * (w->pe[i1] + c * w->px[i1]) -
				(e_all + c * x_all);
		}
		others = total - (1.0 + c * c) * e[j];
		slack = 4.0 * (double)(n + 2) * U_D *
			(e_all + fabs(c) * abs_ae);
		out[j] = fabs(1.0 - (1.0 + c * c) / (double)n) * e[j] +
			 (fmax(others, 0.0) + slack) / (double)n;
	}
}

/*
 * xhat's error from e_x (in w->ex), to second order. First order,
 * exh_j = r T_j(e_x) + eps_xhat_j. The products of errors are kept here
 * because a row can make them large: when x varies by little more than
 * its bounds (a nearly constant row), xhat's relative error is of order
 * 1 and its square is not negligible. With X1 = sum |xh_m| e_m,
 * d r = -r^2 sum xh_m dx_m / n moves r by at most rho r, rho = r X1 / n;
 * the variance's second-order part, (1/n) sum dx_m^2 - dmu^2, and r's
 * curvature (3/4) r^5 in the variance move it by rho2 r more,
 * rho2 = (3/2) rho^2 + (r^2 / 2n) sum e_m^2. Then
 *
 *   d2xh_j = r (e_j + sum e / n) rho + |xh_j| rho2
 *
 * bounds xhat's second-order part. rmsnorm: x_j itself moves by e_j
 * (no mean), so d2xh_j = r e_j rho + |xh_j| rho2 with the same rho and
 * rho2 (the mean square's second-order part is (1/n) sum dx_m^2).
 */
static void row_xhat_errors(struct row *w)
{
	int64_t n = w->n;
	double nn = (double)n, x1 = 0.0, e1 = 0.0, e2 = 0.0;
	kabs(w, w->ex, w->tx);
	for (int64_t m = 0; m < n; m++) {
		x1 += fabs(w->xh[m]) * w->ex[m];
		e1 += w->ex[m];
		e2 += w->ex[m] * w->ex[m];
	}
	w->rho = w->r * x1 / nn;
	w->rho2 = 1.5 * w->rho * w->rho + w->r * w->r * e2 / (2.0 * nn);
	for (int64_t j = 0; j < n; j++) {
		w->exh[j] = w->r * w->tx[j] + w->eps_xh[j];
		w->d2xh[j] =
			w->r * (w->ex[j] + (w->rms ? 0.0 : e1 / nn)) * w->rho +
			fabs(w->xh[j]) * w->rho2;
	}
}

static const char *rule_name(const struct tps_bound_layernorm *ln)
{
	return ln->rms ? "rmsnorm" : "layernorm";
}

static enum tps_status mismatch(const struct tps_bound_layernorm *ln,
				const char *what, const struct tps_tensor *a,
				const char *of, const struct tps_tensor *b,
				struct tps_error *err)
{
	char as[128], bs[128];
	return tps_error_set(
		err, TPS_ERR_SHAPE, "%s bound: %s %s does not match %s %s",
		rule_name(ln), what, tps_shape_format(&a->shape, as, sizeof as),
		of, tps_shape_format(&b->shape, bs, sizeof bs));
}

/* The operands' shapes: x (..., n), w, b (n), each bound its value's. */
static enum tps_status check(const struct tps_bound_layernorm *ln,
			     struct tps_error *err)
{
	const struct tps_tensor *x = ln->x, *w = ln->w;
	if (w->shape.ndim != 1 || x->shape.ndim < 1 ||
	    x->shape.dim[x->shape.ndim - 1] != w->shape.dim[0]) {
		return mismatch(ln, "weight", w, "the last dim of x", x, err);
	}
	if (!tps_shape_equal(&ln->e_x->shape, &x->shape)) {
		return mismatch(ln, "e_x", ln->e_x, "x", x, err);
	}
	if (!tps_shape_equal(&ln->e_w->shape, &w->shape)) {
		return mismatch(ln, "e_w", ln->e_w, "weight", w, err);
	}
	if (ln->rms && (ln->b || ln->e_b)) {
		return tps_error_set(err, TPS_ERR_SHAPE,
				     "rmsnorm bound: rmsnorm has no bias");
	}
	if ((ln->b == NULL) != (ln->e_b == NULL)) {
		return tps_error_set(err, TPS_ERR_SHAPE,
				     "layernorm bound: a bias without e_b, or "
				     "e_b without a bias");
	}
	if (ln->b && !tps_shape_equal(&ln->b->shape, &w->shape)) {
		return mismatch(ln, "bias", ln->b, "weight", w, err);
	}
	if (ln->b && !tps_shape_equal(&ln->e_b->shape, &w->shape)) {
		return mismatch(ln, "e_b", ln->e_b, "weight", w, err);
	}
	return TPS_OK;
}

static int64_t rows_of(const struct tps_bound_layernorm *ln)
{
	int64_t n = ln->w->shape.dim[0];
	return n ? tps_tensor_numel(ln->x) / n : 0;
}

/*
 * y_j = fl(fl(xhat_j w_j) + b_j):
 *
 *   e_y_j = |w_j| (exh_j + d2xh_j) + |xh_j| e_w_j + exh_j e_w_j + e_b_j
 *           + u |xh_j w_j| + u |y_j| (with a bias) + the store
 */
enum tps_status
tps_bound_layernorm_forward(const struct tps_bound_layernorm *ln,
			    const struct tps_bound_dtypes *dt,
			    struct tps_tensor *e_y, struct tps_error *err)
{
	struct tps_bound_units un;
	struct tps_tensor out = {0};
	struct row w = {0};
	int64_t n, rows;
	enum tps_status st = check(ln, err);

	if (st == TPS_OK) {
		st = tps_tensor_init_like(&out, &ln->x->shape, ln->x, err);
	}
	if (st != TPS_OK || !out.data) {
		goto out;
	}
	n = ln->w->shape.dim[0];
	rows = rows_of(ln);
	st = row_init(&w, n, ln->rms, err);
	if (st != TPS_OK) {
		goto out;
	}
	tps_bound_units_init(&un, dt);
	for (int64_t r = 0; r < rows; r++) {
		const float *x = ln->x->data + r * n;
		const float *ex = ln->e_x->data + r * n;
		row_stats(&w, &un, x, ln->eps);
		for (int64_t j = 0; j < n; j++) {
			w.ex[j] = ex[j];
		}
		row_xhat_errors(&w);
		for (int64_t j = 0; j < n; j++) {
			double wj = ln->w->data[j], xh = w.xh[j];
			double ew = ln->e_w->data[j];
			double prod = xh * wj, y = prod, e;
			e = fabs(wj) * (w.exh[j] + w.d2xh[j]) + fabs(xh) * ew +
			    w.exh[j] * ew + tps_bound_round(&un.acc, prod);
			if (ln->b) {
				y += ln->b->data[j];
				e += ln->e_b->data[j] +
				     tps_bound_round(&un.acc, y);
			}
			e += tps_bound_store(&un, y, e);
			out.data[r * n + j] = tps_bound_up(e);
		}
	}
out:
	row_free(&w);
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*e_y = out;
	return TPS_OK;
}

/* The sums over rows of dw and db, in double, as they build up. */
struct param_sums {
	double *dw, *dw_abs, *dw_e, *db, *db_abs, *db_e;
	bool *db_integral;
};

/* Frees and clears: sums_init's failure path frees, and its caller's
 * `out` frees again. */
static void sums_free(struct param_sums *s)
{
	free(s->dw);
	free(s->dw_abs);
	free(s->dw_e);
	free(s->db);
	free(s->db_abs);
	free(s->db_e);
	free(s->db_integral);
	memset(s, 0, sizeof *s);
}

static enum tps_status sums_init(struct param_sums *s, int64_t n,
				 struct tps_error *err)
{
	size_t count = (size_t)n + 1;
	s->dw = calloc(count, sizeof *s->dw);
	s->dw_abs = calloc(count, sizeof *s->dw_abs);
	s->dw_e = calloc(count, sizeof *s->dw_e);
	s->db = calloc(count, sizeof *s->db);
	s->db_abs = calloc(count, sizeof *s->db_abs);
	s->db_e = calloc(count, sizeof *s->db_e);
	s->db_integral = malloc(count * sizeof *s->db_integral);
	if (!s->dw || !s->dw_abs || !s->dw_e || !s->db || !s->db_abs ||
	    !s->db_e || !s->db_integral) {
		sums_free(s);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int64_t j = 0; j < n; j++) {
		s->db_integral[j] = true;
	}
	return TPS_OK;
}

/*
 * dx_j = fl(rstd (g_j - sum_g / n - xhat_j sum_gx / n)), the sums in
 * double of the float g = fl(dy w) and of g xhat. Propagated (first
 * order, d dx_j / d x_m = -(r/n) xh_m dx_j - r^2 B K_jm - (r/n) xh_j dx_m
 * with B = sum(g xh) / n):
 *
 *   r T_j(e_g) + (r/n) |dx_j| sum_m |xh_m| e_x_m + r^2 |B| T_j(e_x)
 *   + (r/n) |xh_j| sum_m |dx_m| e_x_m,       e_g = |dy| e_w + |w| e_dy
 *
 * Rounded: xhat's rounding through xhat_j B and B, g's rounding and the
 * double sums through A = sum(g) / n and B, the final expression's five
 * double operations, rstd's relative error, the float result. Second
 * order (row_xhat_errors): with Q_j = g_j - A - xh_j B, dx_j = r Q_j,
 *
 *   r (rho (e_g_j + E_A + |xh_j| E_B + |B| exh_j) + exh_j E_B
 *      + |xh_j| sum_k e_g_k exh_k / n + |B| d2xh_j
 *      + |xh_j| sum_k |g_k| d2xh_k / n) + rho2 |dx_j|
 *
 * E_A = sum e_g / n, E_B = sum (|g| exh + |xh| e_g) / n: Q's first-order
 * parts.
 *
 * rmsnorm: Q_j = g_j - xh_j B, A = E_A = 0; its K in T_j (kabs), the
 * same Jacobian otherwise (dx = r K g again); the final expression
 * rstd (g_j - xhat_j sum_gx / n) has four double operations on
 * |g_j| + |xh_j B|, and rstd's relative error is gamma_{n+3}.
 */
static void row_dx(struct row *w, const struct tps_bound_units *un)
{
	int64_t n = w->n;
	double nn = (double)n, r = w->r;
	double a = 0.0, b = 0.0, x1 = 0.0, d1 = 0.0;
	double abs_g = 0.0, round_g = 0.0, abs_gx = 0.0, round_gx = 0.0;
	double eps_gx = 0.0, da, db;
	double rel_rstd =
		tps_bound_gamma_path((double)(n + (w->rms ? 3 : 6)) * U_D);
	double ops = tps_bound_gamma_path((w->rms ? 4.0 : 5.0) * U_D);
	/* for the second order: sums of e_g, |g| exh, |xh| e_g, e_g exh,
	 * |g| d2xh */
	double s_eg = 0.0, s_gexh = 0.0, s_xheg = 0.0, s_egexh = 0.0;
	double s_gd2 = 0.0, ea, eb;
	for (int64_t k = 0; k < n; k++) {
		a += w->rms ? 0.0 : w->g[k];
		b += w->g[k] * w->xh[k];
	}
	a /= nn;
	b /= nn;
	for (int64_t k = 0; k < n; k++) {
		double rg = tps_bound_round(&un->acc, w->g[k]);
		w->dx[k] = r * (w->g[k] - a - w->xh[k] * b);
		x1 += fabs(w->xh[k]) * w->ex[k];
		abs_g += fabs(w->g[k]);
		round_g += w->rms ? 0.0 : rg;
		abs_gx += fabs(w->g[k] * w->xh[k]);
		round_gx += rg * fabs(w->xh[k]);
		eps_gx += fabs(w->g[k]) * w->eps_xh[k];
		s_eg += w->rms ? 0.0 : w->eg[k];
		s_gexh += fabs(w->g[k]) * w->exh[k];
		s_xheg += fabs(w->xh[k]) * w->eg[k];
		s_egexh += w->eg[k] * w->exh[k];
		s_gd2 += fabs(w->g[k]) * w->d2xh[k];
	}
	ea = s_eg / nn;
	eb = (s_gexh + s_xheg) / nn;
	for (int64_t k = 0; k < n; k++) {
		d1 += fabs(w->dx[k]) * w->ex[k];
	}
	kabs(w, w->eg, w->tg);
	da = w->rms ? 0.0
		    : (round_g + tps_bound_gamma_path(nn * U_D) * abs_g) / nn;
	db = (round_gx + eps_gx + tps_bound_gamma_path((nn + 1.0) * U_D) * abs_gx) /
	     nn;
	for (int64_t j = 0; j < n; j++) {
		double xh = fabs(w->xh[j]), dx = fabs(w->dx[j]), e;
		e = r * w->tg[j] + r / nn * dx * x1 +
		    r * r * fabs(b) * w->tx[j] + r / nn * xh * d1;
		e += r * (fabs(b) * w->eps_xh[j] + da + xh * db +
			  ops * (fabs(w->g[j]) + fabs(a) + xh * fabs(b)));
		e += dx * rel_rstd + tps_bound_round(&un->acc, w->dx[j]);
		/* second order: r's change times Q's, xhat_j's times B's,
		 * g's times xhat's inside B, xhat's own second order */
		e += r * (w->rho * (w->eg[j] + ea + xh * eb +
				    fabs(b) * w->exh[j]) +
			  w->exh[j] * eb + xh * s_egexh / nn +
			  fabs(b) * w->d2xh[j] + xh * s_gd2 / nn) +
		     w->rho2 * dx;
		e += tps_bound_store(un, w->dx[j], e);
		w->edx[j] = e;
	}
}

static enum tps_status check_dy(const struct tps_bound_layernorm *ln,
				const struct tps_tensor *dy,
				const struct tps_tensor *e_dy,
				struct tps_error *err)
{
	if (!tps_shape_equal(&dy->shape, &ln->x->shape)) {
		return mismatch(ln, "dy", dy, "x", ln->x, err);
	}
	if (!tps_shape_equal(&e_dy->shape, &ln->x->shape)) {
		return mismatch(ln, "e_dy", e_dy, "x", ln->x, err);
	}
	return TPS_OK;
}

/*
 * dw_j = sum over rows of fl(dy_j xhat_j), db_j = sum over rows of dy_j,
 * each a float sum over the rows split into at most row_parts parts:
 *
 *   e_dw_j = sum (|xh_j| e_dy_j + |dy_j| (exh_j + d2xh_j) + e_dy_j exh_j
 *                 + u |dy_j xh_j|) + the sum's rounding + the store
 *   e_db_j = sum e_dy_j + the sum's rounding (0 for integers below the
 *            limits) + the store
 */
enum tps_status tps_bound_layernorm_backward(
	const struct tps_bound_layernorm *ln, const struct tps_tensor *dy,
	const struct tps_tensor *e_dy, const struct tps_bound_dtypes *dt,
	struct tps_tensor *e_dx, struct tps_tensor *e_dw,
	struct tps_tensor *e_db, struct tps_error *err)
{
	struct tps_bound_units un;
	struct tps_tensor dx = {0}, dw = {0}, db = {0};
	struct param_sums s = {0};
	struct row w = {0};
	int64_t n = ln->w->shape.dim[0], rows;
	int64_t parts = ln->row_parts > 1 ? ln->row_parts : 1;
	const struct tps_tensor *like = dy->meta ? dy : ln->x;
	enum tps_status st = check(ln, err);

	if (st == TPS_OK) {
		st = check_dy(ln, dy, e_dy, err);
	}
	if (st == TPS_OK && e_dx) {
		st = tps_tensor_init_like(&dx, &ln->x->shape, like, err);
	}
	if (st == TPS_OK) {
		st = tps_tensor_init_like(&dw, &ln->w->shape, like, err);
	}
	if (st == TPS_OK && e_db) {
		st = tps_tensor_init_like(&db, &ln->w->shape, like, err);
	}
	if (st != TPS_OK || like->meta || n == 0) {
		goto out;
	}
	rows = rows_of(ln);
	st = row_init(&w, n, ln->rms, err);
	if (st == TPS_OK) {
		st = sums_init(&s, n, err);
	}
	if (st != TPS_OK) {
		goto out;
	}
	tps_bound_units_init(&un, dt);
	for (int64_t r = 0; r < rows; r++) {
		const float *x = ln->x->data + r * n, *g = dy->data + r * n;
		const float *ex = ln->e_x->data + r * n;
		const float *eg = e_dy->data + r * n;
		row_stats(&w, &un, x, ln->eps);
		for (int64_t j = 0; j < n; j++) {
			double wj = ln->w->data[j];
			w.ex[j] = ex[j];
			w.g[j] = (double)g[j] * wj;
			w.eg[j] = fabs((double)g[j]) * ln->e_w->data[j] +
				  fabs(wj) * eg[j];
		}
		row_xhat_errors(&w);
		for (int64_t j = 0; j < n; j++) {
			double prod = (double)g[j] * w.xh[j];
			s.dw[j] += prod;
			s.dw_abs[j] += fabs(prod);
			s.dw_e[j] +=
				fabs(w.xh[j]) * eg[j] +
				fabs((double)g[j]) * (w.exh[j] + w.d2xh[j]) +
				eg[j] * w.exh[j] +
				tps_bound_round(&un.acc, prod);
			s.db[j] += g[j];
			s.db_abs[j] += fabs((double)g[j]);
			s.db_e[j] += eg[j];
			s.db_integral[j] =
				s.db_integral[j] && g[j] == truncf(g[j]);
		}
		if (dx.data) {
			row_dx(&w, &un);
			for (int64_t j = 0; j < n; j++) {
				dx.data[r * n + j] = tps_bound_up(w.edx[j]);
			}
		}
	}
	for (int64_t j = 0; j < n; j++) {
		double e = s.dw_e[j] +
			   tps_bound_sum(&un, s.dw_abs[j], rows, parts, false);
		dw.data[j] = tps_bound_up(e + tps_bound_store(&un, s.dw[j], e));
		if (db.data) {
			e = s.db_e[j] + tps_bound_sum(&un, s.db_abs[j], rows,
						      parts, s.db_integral[j]);
			db.data[j] = tps_bound_up(
				e + tps_bound_store(&un, s.db[j], e));
		}
	}
out:
	row_free(&w);
	sums_free(&s);
	if (st != TPS_OK) {
		tps_tensor_free(&dx);
		tps_tensor_free(&dw);
		tps_tensor_free(&db);
		return st;
	}
	if (e_dx) {
		*e_dx = dx;
	}
	*e_dw = dw;
	if (e_db) {
		*e_db = db;
	}
	return TPS_OK;
}
