/* The losses, on plain tensors (see nn.h). y, t: (..., n); rows of n. A
 * meta y has loss 0 and a meta gradient. */
#include <math.h>
#include <stdbool.h>

#include "nn.h"
#include "nn_bounds.h"

static int64_t row_length(const struct tps_tensor *y)
{
	return y->shape.ndim ? y->shape.dim[y->shape.ndim - 1] : 1;
}

int64_t tps_loss_rows(const struct tps_tensor *y)
{
	int64_t rows = 1;
	for (int d = 0; d + 1 < y->shape.ndim; d++) {
		rows *= y->shape.dim[d];
	}
	return rows;
}

/* A row's max and sum of exp(y - max), in double, in order. */
static void softmax_stats(const float *y, int64_t n, double *max, double *sum)
{
	*max = n ? y[0] : 0.0;
	for (int64_t j = 1; j < n; j++) {
		*max = y[j] > *max ? y[j] : *max;
	}
	*sum = 0.0;
	for (int64_t j = 0; j < n; j++) {
		*sum += exp((double)y[j] - *max);
	}
}

/* The classes of a row of n logits: the first `classes` when it is set
 * (a padded vocabulary), else all n. */
static int64_t real_classes(int64_t n, int64_t classes)
{
	return classes > 0 && classes < n ? classes : n;
}

double tps_loss_value(enum tps_loss type, const struct tps_tensor *y,
		      const struct tps_tensor *t, const double *row_scale,
		      int64_t classes)
{
	int64_t n = row_length(y), nc = real_classes(n, classes);
	int64_t rows = n && !y->meta ? tps_tensor_numel(y) / n : 0;
	double total = 0.0;
	for (int64_t r = 0; r < rows; r++) {
		double row = 0.0;
		if (type == TPS_LOSS_CROSS_ENTROPY) {
			/* logsumexp(y) - y[t] over the real classes: the
			 * padding's logits are -inf, exp(-inf) = 0. */
			double max, sum;
			softmax_stats(y->data + r * n, nc, &max, &sum);
			row = max + log(sum) -
			      y->data[r * n + (int64_t)t->data[r]];
			total += row_scale[r] * row;
			continue;
		}
		for (int64_t j = 0; j < n; j++) {
			double v = y->data[r * n + j];
			switch (type) {
			case TPS_LOSS_MSE: {
				double d = v - (double)t->data[r * n + j];
				row += d * d;
				break;
			}
			case TPS_LOSS_SUM: row += v; break;
			case TPS_LOSS_CROSS_ENTROPY: break;
			}
		}
		total += row_scale[r] * row;
	}
	return total;
}

enum tps_status tps_loss_grad(enum tps_loss type, const struct tps_tensor *y,
			      const struct tps_tensor *t,
			      const double *row_scale, int64_t classes,
			      struct tps_tensor *dy, struct tps_error *err)
{
	struct tps_tensor g;
	int64_t n = row_length(y), nc = real_classes(n, classes);
	int64_t rows = n && !y->meta ? tps_tensor_numel(y) / n : 0;
	enum tps_status st = tps_tensor_init_like(&g, &y->shape, y, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t r = 0; r < rows; r++) {
		double max = 0.0, sum = 1.0;
		if (type == TPS_LOSS_CROSS_ENTROPY) {
			softmax_stats(y->data + r * n, nc, &max, &sum);
		}
		for (int64_t j = 0; j < n; j++) {
			int64_t e = r * n + j;
			switch (type) {
			case TPS_LOSS_MSE:
				/* d/dy scale (y - t)^2 = 2 scale (y - t) */
				g.data[e] = (float)(2.0 * row_scale[r]) *
					    (y->data[e] - t->data[e]);
				break;
			case TPS_LOSS_SUM:
				g.data[e] = (float)row_scale[r];
				break;
			case TPS_LOSS_CROSS_ENTROPY:
				/* scale (softmax(y) - onehot(t)); a padding
				 * logit's softmax is exp(-inf) = 0, and no
				 * target is padding: 0 (the init's zero). */
				if (j >= nc) {
					break;
				}
				g.data[e] =
					(float)(row_scale[r] *
						(exp((double)y->data[e] - max) /
							 sum -
						 (j == (int64_t)t->data[r]
							  ? 1.0
							  : 0.0)));
				break;
			}
		}
	}
	*dy = g;
	return TPS_OK;
}

/* ---- error bounds (docs/numerics.md, "losses") ------------------------ */

/* Whether n is a power of two (1 included). */
static bool power_of_two(int n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

/*
 * The loss, summed in double (u_d = 2^-53) in the reference's order or,
 * on the simulation, per dp rank and then over the ranks (K additions at
 * most), then rounded once to float:
 *   e_L = sum_r s_r sum_j |f'(y)| e_y (+ its second order)
 *         + gamma_K(u_d) sum_r s_r sum_j |f(y)| + u (|L| + ...)
 * and 0 for a sum of exact integers (every row weight 1) that stays below
 * 2^53 in magnitude even dp times over: every evaluation then holds the
 * exact double and rounds it alike.
 */
static enum tps_status loss_value_bound(enum tps_loss type,
					const struct tps_tensor *y,
					const struct tps_bound *ey,
					const struct tps_tensor *t,
					const double *row_scale, int dp,
					double loss, double u,
					struct tps_bound *out,
					struct tps_error *err)
{
	int64_t n = row_length(y);
	int64_t rows = n ? tps_tensor_numel(y) / n : 0;
	double prop = 0.0, mag = 0.0, gd;
	bool exact = type == TPS_LOSS_SUM && tps_bound_is_zero(ey) &&
		     tps_tensor_integral(y);
	struct tps_shape scalar = tps_shape_make(0, NULL);
	enum tps_status st = tps_bound_zero(out, &scalar, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t r = 0; r < rows; r++) {
		double s = fabs(row_scale[r]), rp = 0.0, rm = 0.0;
		exact = exact && row_scale[r] == 1.0;
		for (int64_t j = 0; j < n; j++) {
			int64_t k = r * n + j;
			double v = y->data[k], e = ey->e.data[k];
			if (type == TPS_LOSS_MSE) {
				double d = fabs(v - (double)t->data[k]);
				/* |a^2 - b^2| <= |a - b| (|a| + |b|) */
				rp += e * (2.0 * d + 3.0 * e);
				rm += d * d;
			} else {
				rp += e;
				rm += fabs(v);
			}
		}
		prop += s * rp;
		mag += s * rm;
	}
	if (exact && mag * dp < 0x1p53) {
		return TPS_OK;
	}
	/* Each term: a subtraction and a square (mse), the row weight, the
	 * dp weight and its division; then the additions. */
	gd = tps_bound_gamma(tps_tensor_numel(y) + 2 * (int64_t)dp + 8,
			     0x1p-53);
	out->e.data[0] = tps_bound_up(
		(prop + gd * mag) * (1.0 + 0x1p-40) +
		u * (fabs(loss) + 2.0 * (prop + gd * mag)));
	return TPS_OK;
}

/*
 * cross_entropy through nn_bounds.h's rules (the reference's row
 * weights), then what the simulation's weights add: each dp rank weighs
 * its rows by sim_scale, dp times row_scale, and the dp average divides
 * again, so its gradient may differ by the weights' own roundings, ew
 * relative to |p - onehot| <= 1 (plus its bound), and one more rounding
 * of the product.
 */
static enum tps_status cross_entropy_bound(
	const struct tps_tensor *y, const struct tps_bound *ey,
	const struct tps_tensor *t, const double *row_scale,
	const double *sim_scale, int dp, const struct tps_tensor *dy, double u,
	int64_t class_parts, enum tps_dtype reduce, struct tps_bound *el,
	struct tps_bound *ed, struct tps_error *err)
{
	struct tps_bound_cross_entropy ce = {y, &ey->e, t, row_scale,
					     class_parts};
	struct tps_bound_dtypes dt = {TPS_DTYPE_F32, TPS_DTYPE_F32, reduce};
	struct tps_shape scalar = tps_shape_make(0, NULL);
	int64_t n = row_length(y);
	int64_t rows = n ? tps_tensor_numel(y) / n : 0;
	double e_loss = 0.0;
	enum tps_status st =
		tps_bound_cross_entropy_loss(&ce, &dt, &e_loss, err);
	if (st == TPS_OK) {
		st = tps_bound_zero(el, &scalar, err);
	}
	if (st == TPS_OK) {
		el->e.data[0] = tps_bound_up(e_loss);
		st = tps_bound_cross_entropy_grad(&ce, &dt, &ed->e, err);
		if (st != TPS_OK) {
			tps_bound_free(el);
		}
	}
	for (int64_t r = 0; st == TPS_OK && r < rows; r++) {
		double w = row_scale[r];
		double ew = fabs((double)(float)(sim_scale[r] / dp) - w) +
			    fabs((double)(float)w - w) + fabs(w) * 0x1p-50;
		for (int64_t j = 0; j < n; j++) {
			int64_t k = r * n + j;
			double e = ed->e.data[k];
			ed->e.data[k] = tps_bound_up(
				e + ew * (1.0 + e / fmax(fabs(w), 1e-300)) +
				2.0 * u * (fabs(dy->data[k]) + e));
		}
	}
	return st;
}

/* out: the first nc columns of each row of n of src (a new tensor). */
static enum tps_status first_columns(const struct tps_tensor *src,
				     int64_t nc, struct tps_tensor *out,
				     struct tps_error *err)
{
	struct tps_shape shape = src->shape;
	int64_t n = row_length(src), rows = n ? tps_tensor_numel(src) / n : 0;
	enum tps_status st;
	shape.dim[shape.ndim - 1] = nc;
	st = tps_tensor_init(out, &shape, err);
	for (int64_t r = 0; st == TPS_OK && r < rows; r++) {
		for (int64_t j = 0; j < nc; j++) {
			out->data[r * nc + j] = src->data[r * n + j];
		}
	}
	return st;
}

/*
 * cross_entropy over the first nc of n classes (a padded vocabulary):
 * the rule of the real classes (cross_entropy_bound on the logits'
 * first nc columns), and 0 for the padding's gradient, an exact zero
 * on both sides (docs/numerics.md, "losses").
 */
static enum tps_status padded_cross_entropy_bound(
	const struct tps_tensor *y, const struct tps_bound *ey,
	const struct tps_tensor *t, const double *row_scale,
	const double *sim_scale, int dp, const struct tps_tensor *dy, double u,
	int64_t nc, int64_t class_parts, enum tps_dtype reduce,
	struct tps_bound *el, struct tps_bound *ed, struct tps_error *err)
{
	struct tps_tensor yc = {0}, dyc = {0};
	struct tps_bound eyc = {0}, edc = {0};
	int64_t n = row_length(y), rows = n ? tps_tensor_numel(y) / n : 0;
	enum tps_status st = first_columns(y, nc, &yc, err);
	if (st == TPS_OK) {
		st = first_columns(dy, nc, &dyc, err);
	}
	if (st == TPS_OK) {
		st = first_columns(&ey->e, nc, &eyc.e, err);
	}
	if (st == TPS_OK) {
		st = cross_entropy_bound(&yc, &eyc, t, row_scale, sim_scale,
					 dp, &dyc, u, class_parts, reduce, el,
					 &edc, err);
	}
	if (st == TPS_OK) {
		st = tps_bound_zero(ed, &dy->shape, err);
		if (st != TPS_OK) {
			tps_bound_free(el);
		}
	}
	for (int64_t r = 0; st == TPS_OK && r < rows; r++) {
		for (int64_t j = 0; j < nc; j++) {
			ed->e.data[r * n + j] = edc.e.data[r * nc + j];
		}
	}
	tps_tensor_free(&yc);
	tps_tensor_free(&dyc);
	tps_bound_free(&eyc);
	tps_bound_free(&edc);
	return st;
}

enum tps_status tps_loss_bound(enum tps_loss type, const struct tps_tensor *y,
			       const struct tps_bound *ey,
			       const struct tps_tensor *t,
			       const double *row_scale,
			       const double *sim_scale, int dp, double loss,
			       const struct tps_tensor *dy, double u,
			       int64_t classes, int64_t class_parts,
			       enum tps_dtype reduce, struct tps_bound *eloss,
			       struct tps_bound *edy, struct tps_error *err)
{
	int64_t n = row_length(y);
	int64_t rows = n ? tps_tensor_numel(y) / n : 0;
	struct tps_bound el = {0}, ed = {0};
	enum tps_status st = TPS_OK;

	if (tps_bound_is_none(ey)) {
		tps_bound_none_like(&el, ey);
		tps_bound_none_like(&ed, ey);
		goto out;
	}
	if (type == TPS_LOSS_CROSS_ENTROPY && real_classes(n, classes) < n) {
		st = padded_cross_entropy_bound(y, ey, t, row_scale, sim_scale,
						dp, dy, u, classes, class_parts,
						reduce, &el, &ed, err);
		goto out;
	}
	if (type == TPS_LOSS_CROSS_ENTROPY) {
		st = cross_entropy_bound(y, ey, t, row_scale, sim_scale, dp,
					 dy, u, class_parts, reduce, &el, &ed,
					 err);
		goto out;
	}
	st = loss_value_bound(type, y, ey, t, row_scale, dp, loss, u, &el,
			      err);
	if (st == TPS_OK) {
		st = tps_bound_zero(&ed, &dy->shape, err);
	}
	for (int64_t r = 0; st == TPS_OK && r < rows; r++) {
		/* The weight as each side rounds it, 2 s (mse) or s (sum);
		 * the simulation's is dp times the reference's. It scales
		 * alike (the same bits, dp times) only when it is, and dp a
		 * power of two (an exact scaling of every product). */
		double w = type == TPS_LOSS_MSE ? 2.0 * row_scale[r]
						: row_scale[r];
		double ws = type == TPS_LOSS_MSE ? 2.0 * sim_scale[r]
						 : sim_scale[r];
		float wf = (float)w, wsf = (float)ws;
		bool alike = (double)wsf == (double)dp * (double)wf &&
			     (type == TPS_LOSS_SUM || power_of_two(dp));
		/* How far either side's float weight is from w, relative. */
		double ew = fmax(fabs((double)wf - w),
				 fabs((double)wsf / dp - w)) +
			    fabs(w) * 0x1p-52;
		for (int64_t j = 0; j < n; j++) {
			int64_t k = r * n + j;
			double e = ey->e.data[k], v;
			if (type == TPS_LOSS_SUM) {
				/* dy = the weight: no y in it. */
				ed.e.data[k] = alike ? 0.0f : tps_bound_up(ew);
				continue;
			}
			if (e == 0.0 && alike) {
				continue;
			}
			/* dy = fl(w) fl(y - t): the difference's bound and
			 * rounding, the weight's, the product's. */
			v = fabs((double)y->data[k] - (double)t->data[k]);
			ed.e.data[k] = tps_bound_up(
				fabs(w) * (e + u * (v + 2.0 * e)) +
				ew * (v + 3.0 * e) +
				u * (fabs(dy->data[k]) +
				     2.0 * fabs(w) * (e + u * v)));
		}
	}
out:
	if (st != TPS_OK) {
		tps_bound_free(&el);
		tps_bound_free(&ed);
		return st;
	}
	*eloss = el;
	*edy = ed;
	return TPS_OK;
}
