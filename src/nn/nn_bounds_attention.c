/*
 * The attention core's bounds and softmax's (nn_bounds.h;
 * docs/numerics.md, "Softmax" and "Attention").
 *
 * Per head and query row i, as nn_attention.c computes it (head_probs):
 *
 *   s_j = fl(fl(sum_c fl(q_c k_jc)) scale)   scale = fl(1 / fl(sqrt(d)))
 *   p_j = fl(exp(s_j - max) / sum_k exp(s_k - max))   (double inside)
 *
 * for j <= last (i under the causal mask, else S - 1). The exact scores
 * are q k^T / sqrt(d): the float scale is off by its own relative error
 * (0 when d is a power of 4, up to 2u otherwise), which every
 * evaluation shares and the bound counts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_bounds_internal.h"

#define U_D TPS_BOUND_U_DOUBLE

static enum tps_status mismatch(const char *what, const struct tps_tensor *a,
				const char *of, const struct tps_tensor *b,
				struct tps_error *err)
{
	char as[128], bs[128];
	return tps_error_set(err, TPS_ERR_SHAPE,
			     "%s bound: %s %s does not match %s %s",
			     strcmp(of, "s") == 0   ? "softmax"
			     : strcmp(of, "x") == 0 ? "rope"
						    : "attention",
			     what, tps_shape_format(&a->shape, as, sizeof as),
			     of, tps_shape_format(&b->shape, bs, sizeof bs));
}

/* Per query row: n values each. */
struct scratch {
	float *s;
	double *p, *rel, *es, *eps_p, *ep, *dp, *edp, *ds, *eds;
};

static void scratch_free(struct scratch *w)
{
	double **arrays[] = {&w->p,  &w->rel, &w->es, &w->eps_p, &w->ep,
			     &w->dp, &w->edp, &w->ds, &w->eds};
	free(w->s);
	w->s = NULL;
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
		free(*arrays[i]);
		*arrays[i] = NULL;
	}
}

static enum tps_status scratch_init(struct scratch *w, int64_t n,
				    struct tps_error *err)
{
	double **arrays[] = {&w->p,  &w->rel, &w->es, &w->eps_p, &w->ep,
			     &w->dp, &w->edp, &w->ds, &w->eds};
	size_t count = (size_t)(n > 0 ? n : 1);
	bool ok;
	*w = (struct scratch){0};
	w->s = malloc(count * sizeof *w->s);
	ok = w->s != NULL;
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
		*arrays[i] = malloc(count * sizeof **arrays[i]);
		ok = ok && *arrays[i];
	}
	if (!ok) {
		scratch_free(w);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	return TPS_OK;
}

/*
 * The probabilities of one softmax row of float scores s[0..last] with
 * bounds es: p (double), eps_p the rounding of each evaluated p_j (its
 * exponential, the sum's, the division, the float it is stored in), ep
 * the whole bound of the float p_j the code goes on with (es through
 * softmax's Jacobian, plus eps_p).
 */
static void softmax_row(struct scratch *w, const struct tps_bound_units *un,
			int64_t last)
{
	double rel_sum = tps_bound_softmax_row(w->s, last, w->p, w->rel);
	tps_bound_softmax_jacobian(w->p, w->es, last, w->ep);
	for (int64_t j = 0; j <= last; j++) {
		w->eps_p[j] = w->p[j] * (w->rel[j] + rel_sum + U_D) +
			      tps_bound_round(&un->acc, w->p[j]);
		w->ep[j] += w->eps_p[j];
	}
}

enum tps_status tps_bound_softmax(const struct tps_tensor *s,
				  const struct tps_tensor *e_s,
				  const struct tps_bound_dtypes *dt,
				  struct tps_tensor *e_p, struct tps_error *err)
{
	const struct tps_shape *sh = &s->shape;
	int64_t n = sh->ndim ? sh->dim[sh->ndim - 1] : 1;
	int64_t rows = n && !s->meta ? tps_tensor_numel(s) / n : 0;
	struct tps_bound_units un;
	struct tps_tensor out = {0};
	struct scratch w = {0};
	enum tps_status st = TPS_OK;

	if (!tps_shape_equal(&e_s->shape, sh)) {
		return mismatch("e_s", e_s, "s", s, err);
	}
	st = tps_tensor_init_like(&out, sh, s, err);
	if (st == TPS_OK && rows > 0) {
		st = scratch_init(&w, n, err);
	}
	if (st != TPS_OK || rows == 0) {
		goto out;
	}
	tps_bound_units_init(&un, dt);
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < n; j++) {
			w.s[j] = s->data[r * n + j];
			w.es[j] = e_s->data[r * n + j];
		}
		softmax_row(&w, &un, n - 1);
		for (int64_t j = 0; j < n; j++) {
			double e = w.ep[j];
			e += tps_bound_store(&un, w.p[j], e);
			out.data[r * n + j] = tps_bound_up(e);
		}
	}
out:
	scratch_free(&w);
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*e_p = out;
	return TPS_OK;
}

/* One query head of one batch entry and its kv head: strided views into
 * q (S, F) and k, v (S, Fk) (grouped-query attention: Fk < F). */
struct head {
	const float *q, *k, *v, *eq, *ek, *ev;
	int64_t S, F, Fk, d;
	bool causal;
	double scale;	  /* 1 / sqrt(d), exact but for double's rounding */
	float scale_f;	  /* the code's */
	double scale_rel; /* |scale_f sqrt(d) - 1|, and double's part */
};

/* q and e_q (..., S, F); k, v, e_k, e_v (..., S, Fk), Fk a multiple of
 * head_dim dividing F (F / Fk query heads per kv head). */
static enum tps_status check(const struct tps_bound_attention *att,
			     struct tps_error *err)
{
	const struct tps_tensor *q = att->q, *k = att->k;
	const struct tps_tensor *others[] = {att->e_q, att->v, att->e_k,
					     att->e_v};
	static const char *const names[] = {"e_q", "v", "e_k", "e_v"};
	struct tps_shape kv_shape;
	int64_t F, Fk;
	if (q->shape.ndim < 2) {
		return tps_error_set(err, TPS_ERR_SHAPE,
				     "attention bound: q needs (..., S, F), "
				     "got %d dims",
				     q->shape.ndim);
	}
	kv_shape = q->shape;
	kv_shape.dim[kv_shape.ndim - 1] =
		k->shape.ndim == q->shape.ndim ? k->shape.dim[k->shape.ndim - 1]
					       : -1;
	if (!tps_shape_equal(&k->shape, &kv_shape)) {
		return mismatch("k", k, "q", q, err);
	}
	for (int i = 0; i < 4; i++) {
		const struct tps_shape *want = i == 0 ? &q->shape : &kv_shape;
		if (!tps_shape_equal(&others[i]->shape, want)) {
			return mismatch(names[i], others[i], i == 0 ? "q" : "k",
					i == 0 ? q : k, err);
		}
	}
	F = q->shape.dim[q->shape.ndim - 1];
	Fk = kv_shape.dim[kv_shape.ndim - 1];
	if (att->head_dim < 1 || F % att->head_dim != 0 ||
	    Fk % att->head_dim != 0 || Fk == 0 || F % Fk != 0) {
		return tps_error_set(err, TPS_ERR_SHAPE,
				     "attention bound: head_dim %lld does not "
				     "divide the %lld features into whole "
				     "groups of the %lld kv features",
				     (long long)att->head_dim, (long long)F,
				     (long long)Fk);
	}
	return TPS_OK;
}

/* Query head hd of batch entry b; its kv head is hd / (F / Fk). */
static void head_init(struct head *h, const struct tps_bound_attention *att,
		      int64_t b, int64_t hd)
{
	const struct tps_shape *sh = &att->q->shape;
	int64_t base, kbase;
	h->S = sh->dim[sh->ndim - 2];
	h->F = sh->dim[sh->ndim - 1];
	h->Fk = att->k->shape.dim[att->k->shape.ndim - 1];
	h->d = att->head_dim;
	h->causal = att->causal;
	base = b * h->S * h->F + hd * h->d;
	kbase = b * h->S * h->Fk + hd / (h->F / h->Fk) * h->d;
	h->q = att->q->data + base;
	h->k = att->k->data + kbase;
	h->v = att->v->data + kbase;
	h->eq = att->e_q->data + base;
	h->ek = att->e_k->data + kbase;
	h->ev = att->e_v->data + kbase;
	h->scale_f = 1.0f / sqrtf((float)h->d);
	h->scale = 1.0 / sqrt((double)h->d);
	h->scale_rel =
		fabs((double)h->scale_f * sqrt((double)h->d) - 1.0) + 2 * U_D;
}

/*
 * Row i's scores and their bounds, then its probabilities:
 *
 *   e_s_j = (sum_c |k_jc| e_q_ic + |q_ic| e_k_jc) / sqrt(d)
 *           + gamma_d sum_c |q_ic k_jc| scale + scale_rel |s_j| + u |s_j|
 */
static void row_scores(struct scratch *w, const struct tps_bound_units *un,
		       const struct head *h, int64_t i, int64_t last)
{
	double gd = tps_bound_gamma_path((double)h->d * un->acc.u);
	for (int64_t j = 0; j <= last; j++) {
		float acc = 0.0f;
		double prop = 0.0, mag = 0.0;
		for (int64_t c = 0; c < h->d; c++) {
			float qc = h->q[i * h->F + c], kc = h->k[j * h->Fk + c];
			acc += qc * kc;
			prop += fabs((double)kc) * h->eq[i * h->F + c] +
				fabs((double)qc) * h->ek[j * h->Fk + c];
			mag += fabs((double)qc * kc);
		}
		w->s[j] = acc * h->scale_f;
		w->es[j] = h->scale * (prop + gd * mag) +
			   h->scale_rel * fabs((double)w->s[j]) +
			   tps_bound_round(&un->acc, w->s[j]);
	}
	softmax_row(w, un, last);
}

/*
 * a_ic = fl(sum_j fl(p_ij v_jc)):
 *
 *   e_a_ic = sum_j p_ij |v_jc - a_ic| e_s_ij     the scores, through softmax
 *            + sum_j |v_jc| eps_p_ij              p's rounding
 *            + sum_j p_ij e_v_jc                  v
 *            + gamma_L sum_j p_ij |v_jc|          the products and the sum
 *            + the store
 *
 * The first term is the Jacobian's own: sum_j v_jc dp_j = sum_j p_j
 * ds_j (v_jc - a_c), tighter than bounding each p_j apart.
 */
static void head_forward(struct scratch *w, const struct tps_bound_units *un,
			 const struct head *h, float *out)
{
	for (int64_t i = 0; i < h->S; i++) {
		int64_t last = h->causal ? i : h->S - 1;
		double gl = tps_bound_gamma_path((double)(last + 1) * un->acc.u);
		row_scores(w, un, h, i, last);
		for (int64_t c = 0; c < h->d; c++) {
			double a = 0.0, e = 0.0, mag = 0.0;
			for (int64_t j = 0; j <= last; j++) {
				a += w->p[j] * h->v[j * h->Fk + c];
			}
			for (int64_t j = 0; j <= last; j++) {
				double v = h->v[j * h->Fk + c];
				e += w->p[j] * fabs(v - a) * w->es[j] +
				     fabs(v) * w->eps_p[j] +
				     w->p[j] * h->ev[j * h->Fk + c];
				mag += w->p[j] * fabs(v);
			}
			e += gl * mag;
			e += tps_bound_store(un, a, e);
			out[i * h->F + c] = tps_bound_up(e);
		}
	}
}

/* What every head's (kv group's, in backward) bound needs: the units, the
 * sizes, the outputs (da and e_da too in backward). */
struct heads_job {
	const struct tps_bound_attention *att;
	struct tps_bound_units un;
	int64_t S, F, Fk, group;
	const struct tps_tensor *da, *e_da;
	struct tps_tensor *out;
};

/* Item (b, hd) of the forward: one head's bounds, with its own scratch.
 * Heads write disjoint columns, so they run at once. */
static enum tps_status forward_head(void *opaque, int64_t item,
				    struct tps_error *err)
{
	const struct heads_job *job = opaque;
	int64_t heads = job->F / job->att->head_dim;
	int64_t b = item / heads, hd = item % heads;
	struct scratch w;
	struct head h;
	enum tps_status st = scratch_init(&w, job->S, err);
	if (st != TPS_OK) {
		return st;
	}
	head_init(&h, job->att, b, hd);
	head_forward(&w, &job->un, &h,
		     job->out[0].data + b * job->S * job->F +
			     hd * job->att->head_dim);
	scratch_free(&w);
	return TPS_OK;
}

enum tps_status
tps_bound_attention_forward(const struct tps_bound_attention *att,
			    const struct tps_bound_dtypes *dt,
			    struct tps_tensor *e_a, struct tps_error *err)
{
	const struct tps_shape *sh = &att->q->shape;
	struct tps_tensor out = {0};
	struct heads_job job = {.att = att, .out = &out};
	enum tps_status st = check(att, err);

	if (st == TPS_OK) {
		st = tps_tensor_init_like(&out, sh, att->q, err);
	}
	if (st == TPS_OK && out.data) {
		job.S = sh->dim[sh->ndim - 2];
		job.F = sh->dim[sh->ndim - 1];
		tps_bound_units_init(&job.un, dt);
		st = tps_pool_try(att->pool,
				  tps_tensor_numel(att->q) / (job.S * job.F) *
					  (job.F / att->head_dim),
				  forward_head, &job, err);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*e_a = out;
	return TPS_OK;
}

/* The sums over query rows of dk and dv, per (j, c) of one head; and
 * over the query heads of a kv head's group (grouped-query attention):
 * the heads' dk and dv, their magnitudes and their bounds. */
struct column_sums {
	double *dk, *dk_abs, *dk_e, *dv, *dv_abs, *dv_e;
	double *gdk, *gdk_abs, *gdk_e, *gdv, *gdv_abs, *gdv_e;
};

#define COLUMN_ARRAYS(s)                                                       \
	{                                                                      \
		&(s)->dk, &(s)->dk_abs, &(s)->dk_e, &(s)->dv, &(s)->dv_abs,    \
			&(s)->dv_e, &(s)->gdk, &(s)->gdk_abs, &(s)->gdk_e,     \
			&(s)->gdv, &(s)->gdv_abs, &(s)->gdv_e                  \
	}

static void columns_free(struct column_sums *s)
{
	double **arrays[] = COLUMN_ARRAYS(s);
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
		free(*arrays[i]);
	}
	*s = (struct column_sums){0};
}

static enum tps_status columns_init(struct column_sums *s, int64_t n,
				    struct tps_error *err)
{
	size_t count = (size_t)(n > 0 ? n : 1);
	double **arrays[] = COLUMN_ARRAYS(s);
	bool ok = true;
	for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
		*arrays[i] = calloc(count, sizeof **arrays[i]);
		ok = ok && *arrays[i];
	}
	if (!ok) {
		columns_free(s);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	return TPS_OK;
}

/* The row sums (group false) or the group sums (true) to 0. */
static void columns_zero(struct column_sums *s, int64_t n, bool group)
{
	for (int64_t i = 0; i < n; i++) {
		if (group) {
			s->gdk[i] = s->gdk_abs[i] = s->gdk_e[i] = 0.0;
			s->gdv[i] = s->gdv_abs[i] = s->gdv_e[i] = 0.0;
		} else {
			s->dk[i] = s->dk_abs[i] = s->dk_e[i] = 0.0;
			s->dv[i] = s->dv_abs[i] = s->dv_e[i] = 0.0;
		}
	}
}

/*
 * Row i's dp_ij = fl(sum_c fl(da_ic v_jc)) with its bound, rowdot
 * rho = sum_j p_ij dp_ij (double) and ds_ij = fl(p_ij (dp_ij - rho)):
 *
 *   e_ds_j = p_j ((1 - 2 p_j) e_dp_j + sum_k p_k e_dp_k)   dp, through
 *                                                       softmax's Jacobian
 *            + |ds_j| (e_s_j + W) + p_j V               the scores: W =
 *                         sum_k p_k e_s_k, V = sum_k |ds_k| e_s_k, from
 *                         d ds_j / d s_k = delta_jk ds_j
 *                                       - p_j p_k (D_j + D_k), D = dp - rho
 *            + |D_j| eps_p_j + p_j sum_m |dp_m| eps_p_m p's rounding
 *            + p_j gamma_L sum_k p_k |dp_k|             rho's sum
 *            + 2 u_d p_j |D_j| + u |ds_j|               ds's own
 */
static void row_ds(struct scratch *w, const struct tps_bound_units *un,
		   const struct head *h, const float *da, const float *eda,
		   int64_t i, int64_t last)
{
	double gd = tps_bound_gamma_path((double)h->d * un->acc.u);
	double rho = 0.0, rho_abs = 0.0, wsum = 0.0, vsum = 0.0, psum = 0.0;
	for (int64_t j = 0; j <= last; j++) {
		double dp = 0.0, e = 0.0, mag = 0.0;
		for (int64_t c = 0; c < h->d; c++) {
			double g = da[i * h->F + c], v = h->v[j * h->Fk + c];
			dp += g * v;
			e += fabs(v) * eda[i * h->F + c] +
			     fabs(g) * h->ev[j * h->Fk + c];
			mag += fabs(g * v);
		}
		w->dp[j] = dp;
		w->edp[j] = e + gd * mag;
		rho += w->p[j] * dp;
		rho_abs += w->p[j] * fabs(dp);
	}
	for (int64_t j = 0; j <= last; j++) {
		w->ds[j] = w->p[j] * (w->dp[j] - rho);
		wsum += w->p[j] * w->es[j];
		vsum += fabs(w->ds[j]) * w->es[j];
		psum += fabs(w->dp[j]) * w->eps_p[j];
	}
	/* dp's bound through the Jacobian, into eds */
	tps_bound_softmax_jacobian(w->p, w->edp, last, w->eds);
	for (int64_t j = 0; j <= last; j++) {
		double p = w->p[j], dd = fabs(w->dp[j] - rho);
		w->eds[j] += fabs(w->ds[j]) * (w->es[j] + wsum) + p * vsum +
			     dd * w->eps_p[j] + p * psum +
			     p * tps_bound_gamma_path((double)(last + 1) * U_D) *
				     rho_abs +
			     2 * U_D * p * dd +
			     tps_bound_round(&un->acc, w->ds[j]);
	}
}

/* dq_ic = fl(fl(sum_j fl(ds_ij k_jc)) scale), and row i's terms of dk's
 * and dv's sums over rows. */
static void row_backward(struct scratch *w, const struct tps_bound_units *un,
			 const struct head *h, const float *da,
			 const float *eda, int64_t i, int64_t last,
			 struct column_sums *cs, float *edq)
{
	double gl = tps_bound_gamma_path((double)(last + 1) * un->acc.u);
	for (int64_t c = 0; c < h->d; c++) {
		double dq = 0.0, e = 0.0, mag = 0.0;
		double q = h->q[i * h->F + c], eq = h->eq[i * h->F + c];
		double g = da[i * h->F + c], eg = eda[i * h->F + c];
		for (int64_t j = 0; j <= last; j++) {
			double k = h->k[j * h->Fk + c];
			int64_t at = j * h->d + c;
			dq += w->ds[j] * k;
			e += w->eds[j] * fabs(k) +
			     fabs(w->ds[j]) * h->ek[j * h->Fk + c];
			mag += fabs(w->ds[j] * k);
			cs->dk[at] += w->ds[j] * q;
			cs->dk_abs[at] += fabs(w->ds[j] * q);
			cs->dk_e[at] +=
				w->eds[j] * fabs(q) + fabs(w->ds[j]) * eq;
			cs->dv[at] += w->p[j] * g;
			cs->dv_abs[at] += w->p[j] * fabs(g);
			cs->dv_e[at] += fabs(g) * w->ep[j] + w->p[j] * eg;
		}
		dq *= h->scale;
		e = h->scale * (e + gl * mag) + h->scale_rel * fabs(dq) +
		    tps_bound_round(&un->acc, dq);
		e += tps_bound_store(un, dq, e);
		edq[i * h->F + c] = tps_bound_up(e);
	}
}

/* One query head's dk_jc and dv_jc from their sums over the L_j rows
 * that see key j, with their bounds, added to the group's sums. */
static void head_columns(const struct tps_bound_units *un, const struct head *h,
			 struct column_sums *cs)
{
	for (int64_t j = 0; j < h->S; j++) {
		int64_t rows = h->causal ? h->S - j : h->S;
		double gl = tps_bound_gamma_path((double)rows * un->acc.u);
		for (int64_t c = 0; c < h->d; c++) {
			int64_t at = j * h->d + c;
			double dk = h->scale * cs->dk[at];
			cs->gdk[at] += dk;
			cs->gdk_abs[at] += fabs(dk);
			cs->gdk_e[at] += h->scale * (cs->dk_e[at] +
						     gl * cs->dk_abs[at]) +
					 h->scale_rel * fabs(dk) +
					 tps_bound_round(&un->acc, dk);
			cs->gdv[at] += cs->dv[at];
			cs->gdv_abs[at] += fabs(cs->dv[at]);
			cs->gdv_e[at] += cs->dv_e[at] + gl * cs->dv_abs[at];
		}
	}
}

/*
 * A kv head's dk and dv: the sum of its `group` query heads' in head
 * order, in float (nn_attention.c's core_backward), so each head's bound
 * plus gamma_{group - 1} of the heads' magnitudes; then the store. One
 * head (plain attention) is its own bound.
 */
static void group_columns(const struct tps_bound_units *un,
			  const struct head *h, const struct column_sums *cs,
			  int64_t group, float *edk, float *edv)
{
	double gg = tps_bound_gamma_path((double)(group - 1) * un->acc.u);
	for (int64_t j = 0; j < h->S; j++) {
		for (int64_t c = 0; c < h->d; c++) {
			int64_t at = j * h->d + c;
			double e = cs->gdk_e[at] + gg * cs->gdk_abs[at];
			e += tps_bound_store(un, cs->gdk[at], e);
			edk[j * h->Fk + c] = tps_bound_up(e);
			e = cs->gdv_e[at] + gg * cs->gdv_abs[at];
			e += tps_bound_store(un, cs->gdv[at], e);
			edv[j * h->Fk + c] = tps_bound_up(e);
		}
	}
}

/* Item (b, kv head) of the backward: the bounds of its group's query
 * heads in order, each adding into the group's dk and dv sums, with its
 * own scratch and sums. Groups write disjoint columns of dq, dk and dv,
 * so they run at once. */
static enum tps_status backward_group(void *opaque, int64_t item,
				      struct tps_error *err)
{
	const struct heads_job *job = opaque;
	int64_t S = job->S, F = job->F, Fk = job->Fk, group = job->group;
	int64_t kv_heads = Fk / job->att->head_dim;
	int64_t b = item / kv_heads, kv = item % kv_heads;
	int64_t kbase = b * S * Fk + kv * job->att->head_dim;
	struct column_sums cs = {0};
	struct scratch w;
	enum tps_status st = scratch_init(&w, S, err);
	if (st == TPS_OK) {
		st = columns_init(&cs, S * job->att->head_dim, err);
	}
	for (int64_t hd = kv * group; st == TPS_OK && hd < (kv + 1) * group;
	     hd++) {
		int64_t base = b * S * F + hd * job->att->head_dim;
		const float *da = job->da->data + base;
		const float *e_da = job->e_da->data + base;
		struct head h;
		head_init(&h, job->att, b, hd);
		columns_zero(&cs, S * h.d, false);
		if (hd % group == 0) {
			columns_zero(&cs, S * h.d, true);
		}
		for (int64_t i = 0; i < S; i++) {
			int64_t last = h.causal ? i : S - 1;
			row_scores(&w, &job->un, &h, i, last);
			row_ds(&w, &job->un, &h, da, e_da, i, last);
			row_backward(&w, &job->un, &h, da, e_da, i, last, &cs,
				     job->out[0].data + base);
		}
		head_columns(&job->un, &h, &cs);
		if (hd % group == group - 1) {
			group_columns(&job->un, &h, &cs, group,
				      job->out[1].data + kbase,
				      job->out[2].data + kbase);
		}
	}
	scratch_free(&w);
	columns_free(&cs);
	return st;
}

enum tps_status tps_bound_attention_backward(
	const struct tps_bound_attention *att, const struct tps_tensor *da,
	const struct tps_tensor *e_da, const struct tps_bound_dtypes *dt,
	struct tps_tensor *e_dq, struct tps_tensor *e_dk,
	struct tps_tensor *e_dv, struct tps_error *err)
{
	const struct tps_shape *sh = &att->q->shape;
	struct tps_tensor out[3] = {0};
	struct heads_job job = {.att = att, .da = da, .e_da = e_da, .out = out};
	enum tps_status st = check(att, err);

	if (st == TPS_OK && !tps_shape_equal(&da->shape, sh)) {
		st = mismatch("da", da, "q", att->q, err);
	}
	if (st == TPS_OK && !tps_shape_equal(&e_da->shape, sh)) {
		st = mismatch("e_da", e_da, "q", att->q, err);
	}
	for (int i = 0; i < 3 && st == TPS_OK; i++) {
		st = tps_tensor_init_like(&out[i], i ? &att->k->shape : sh,
					  da->meta ? da : att->q, err);
	}
	if (st == TPS_OK && out[0].data) {
		job.S = sh->dim[sh->ndim - 2];
		job.F = sh->dim[sh->ndim - 1];
		job.Fk = att->k->shape.dim[att->k->shape.ndim - 1];
		job.group = job.F / job.Fk;
		tps_bound_units_init(&job.un, dt);
		st = tps_pool_try(att->pool,
				  tps_tensor_numel(att->q) / (job.S * job.F) *
					  (job.Fk / att->head_dim),
				  backward_group, &job, err);
	}
	if (st != TPS_OK) {
		for (int i = 0; i < 3; i++) {
			tps_tensor_free(&out[i]);
		}
		return st;
	}
	*e_dq = out[0];
	*e_dk = out[1];
	*e_dv = out[2];
	return TPS_OK;
}

enum tps_status tps_bound_rope(const struct tps_tensor *x,
			       const struct tps_tensor *e_x,
			       const struct tps_tensor *y, int64_t head_dim,
			       double theta, enum tps_rope_style style,
			       int sign, const struct tps_bound_dtypes *dt,
			       struct tps_tensor *e_y, struct tps_error *err)
{
	const struct tps_shape *sh = &x->shape;
	int64_t F = sh->ndim ? sh->dim[sh->ndim - 1] : 0;
	int64_t S = sh->ndim > 1 ? sh->dim[sh->ndim - 2] : 0;
	int64_t rows = x->meta || F == 0 ? 0 : tps_tensor_numel(x) / F;
	int64_t half = head_dim / 2;
	double g2 = tps_bound_gamma_path(2 * U_D);
	struct tps_bound_units un;
	struct tps_tensor out = {0};
	enum tps_status st;

	if (!tps_shape_equal(&e_x->shape, sh)) {
		return mismatch("e_x", e_x, "x", x, err);
	}
	if (!tps_shape_equal(&y->shape, sh)) {
		return mismatch("y", y, "x", x, err);
	}
	if (sh->ndim < 2 || head_dim < 2 || head_dim % 2 != 0 ||
	    F % head_dim != 0) {
		return tps_error_set(err, TPS_ERR_SHAPE,
				     "rope bound: head_dim %lld must be even "
				     "and divide the %lld features",
				     (long long)head_dim, (long long)F);
	}
	st = tps_tensor_init_like(&out, sh, x, err);
	if (st != TPS_OK) {
		return st;
	}
	tps_bound_units_init(&un, dt);
	for (int64_t r = 0; r < rows; r++) {
		double pos = (double)(r % S);
		for (int64_t i = 0; i < half; i++) {
			double t =
				sign * pos *
				pow(theta, -(double)(2 * i) / (double)head_dim);
			double c = fabs(cos(t)), sn = fabs(sin(t));
			double delta = U_D * (4 * fabs(t) + 4);
			int64_t a = style == TPS_ROPE_INTERLEAVED ? 2 * i : i;
			int64_t b = style == TPS_ROPE_INTERLEAVED ? 2 * i + 1
								  : i + half;
			for (int64_t h = 0; h < F; h += head_dim) {
				int64_t ia = r * F + h + a, ib = r * F + h + b;
				double ea = e_x->data[ia], eb = e_x->data[ib];
				double mag = fabs((double)x->data[ia]) +
					     fabs((double)x->data[ib]) + ea +
					     eb;
				double common = (delta + g2) * mag;
				double e = c * ea + sn * eb + common;
				e += tps_bound_round(&un.acc, y->data[ia]);
				e += tps_bound_store(&un, y->data[ia], e);
				out.data[ia] = tps_bound_up(e);
				e = c * eb + sn * ea + common;
				e += tps_bound_round(&un.acc, y->data[ib]);
				e += tps_bound_store(&un, y->data[ib], e);
				out.data[ib] = tps_bound_up(e);
			}
		}
	}
	*e_y = out;
	return TPS_OK;
}
