/*
 * Which comparisons of a run are exact (model.h, struct tps_model_exactness).
 *
 * The simulation and the reference compute the same real numbers in other
 * orders: a rank sums its part of k, an all_reduce sums the ranks' partial
 * sums, the bias comes before or after. In float32 the orders may round
 * differently, which is why the run compares within a tolerance. But when
 * every value on the way is an integer and every partial sum, in any order,
 * stays below 2^24 in magnitude, nothing rounds at all: both sides are the
 * exact result, equal bit for bit, and the comparison is ==.
 *
 * The proof is carried per tensor as a bound B >= |t|, element by element,
 * made by running the model on absolute values:
 *
 *   linear     B(y) = B(x) |W|^T + |b|: the sum of every term's magnitude,
 *              which bounds any partial sum of any subset of the terms (a
 *              rank's part of k, the ranks' sum, the bias added first or
 *              last); backward B(dx) = B(dy) |W|, B(dW) = B(dy)^T B(x),
 *              B(db) = the sum over rows of B(dy)
 *   relu       B(y) = B(x); backward B(dx) = B(dy), when x is exact (the
 *              mask x > 0 must agree)
 *   residual   B(y) = B(x) + B(body(x)); backward B(dy) + B(d body)
 *   embedding  B(y) = |W| at the ids (one nonzero term per vocab-parallel
 *              sum); backward the scatter-add of B(dy)
 *   gelu, layernorm, attention: not integers; nothing after them is exact,
 *              and no gradient of theirs
 *
 * A tensor is exact when its inputs are exact, every parameter it reads is
 * integral (and equal on both sides: no inexact gradient updated it) and
 * every element of its bound is below 2^24. Bounds are computed in float32
 * on non-negative integers, which is exact below 2^24 and, rounding being
 * monotone, never falls below 2^24 once a true sum reaches it: the test
 * B < 2^24 is decided exactly.
 *
 * Training adds the loss and backward. Only `sum` has an integer gradient:
 * the simulation seeds each dp rank's backward with dp (dp_grad global: the
 * rank's loss is scaled by dp), so backward bounds start at dp, and the dp
 * all_reduce (sum, then / dp) of those gradients divides an exact integer
 * by dp, which is exact. dp_grad ddp's 1/dp is not an integer (unless dp is
 * 1); mse and cross_entropy never are. The loss itself is summed in double
 * on both sides; exact while the sum of magnitudes times dp stays below
 * 2^53. The input's gradient is the assembled one times 1/dp: exact for dp
 * a power of two. An optimizer step is element-wise and the same code on
 * both sides, so a parameter stays equal while every gradient it was given
 * was; whether it is still integral is checked on its value at each step.
 * partial_split adds b/N (not an integer) on each of the N ranks: a rowwise
 * linear with a bias in that mode over 2 or more ranks is not exact.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Integers are exact in float32 below 2^24; a run with a narrower dtype
 * (spec.h) stores and sums them exactly below 2^bits of the narrowest
 * (2^8 with a bfloat16 role, 2^11 with a float16 one): that is its
 * limit (tps_dtypes_exact_bits). */

/* A value as the proof sees it: exact, with its bound, or not. */
struct bound {
	bool exact;
	struct tps_tensor t; /* exact only: >= |value|, element-wise */
};

struct exact_run {
	struct tps_model *model;
	struct tps_pool *pool;
	/* Per parameter: equal on both sides so far (no inexact gradient
	 * updated it) and, at this step, integral. */
	const bool *param_ok;
	/* Per module (training): the bound of its input, for backward. */
	struct bound *saved;
	/* Per parameter: this step's gradient is exact. */
	bool *grad_ok;
	bool training;
	float limit; /* 2^24, or less with narrower dtypes (above) */
};

static void bound_free(struct bound *b)
{
	tps_tensor_free(&b->t);
	b->exact = false;
}

static struct bound inexact(void)
{
	struct bound b;
	memset(&b, 0, sizeof b);
	return b;
}

/* Every element of t is an integer of magnitude below the limit. */
static bool integral(const struct tps_tensor *t, float limit)
{
	int64_t n = tps_tensor_numel(t);
	if (t->meta) {
		return false;
	}
	for (int64_t i = 0; i < n; i++) {
		float v = t->data[i];
		if (!(fabsf(v) < limit) || v != truncf(v)) {
			return false;
		}
	}
	return true;
}

/* Every element of a bound is below the limit. */
static bool below_limit(const struct tps_tensor *t, float limit)
{
	int64_t n = tps_tensor_numel(t);
	for (int64_t i = 0; i < n; i++) {
		if (!(t->data[i] < limit)) {
			return false;
		}
	}
	return true;
}

/* out = |t|, new. */
static enum tps_status abs_of(struct tps_tensor *out,
			      const struct tps_tensor *t, struct tps_error *err)
{
	enum tps_status st = tps_tensor_copy(out, t, err);
	for (int64_t i = 0; st == TPS_OK && i < tps_tensor_numel(out); i++) {
		out->data[i] = fabsf(out->data[i]);
	}
	return st;
}

/* *b = a copy of a; on error *b is inexact. */
static enum tps_status bound_copy(struct bound *b, const struct bound *a,
				  struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	*b = inexact();
	if (a->exact) {
		st = tps_tensor_copy(&b->t, &a->t, err);
		b->exact = st == TPS_OK;
	}
	return st;
}

/* Settles *b from a computed bound: exact when its computation succeeded
 * and every element is below r's limit. */
static void settle(const struct exact_run *r, struct bound *b,
		   enum tps_status st)
{
	b->exact = st == TPS_OK && below_limit(&b->t, r->limit);
	if (!b->exact) {
		tps_tensor_free(&b->t);
	}
}

static bool params_ok(const struct exact_run *r, const struct tps_module *m)
{
	for (int k = 0; k < m->n_params; k++) {
		if (!r->param_ok[m->params + k - r->model->params]) {
			return false;
		}
	}
	return true;
}

static int param_index(const struct exact_run *r, const struct tps_module *m,
		       int k)
{
	return (int)(m->params + k - r->model->params);
}

/* ---- forward ---------------------------------------------------------- */

static enum tps_status forward_seq(struct exact_run *r,
				   struct tps_module *begin,
				   struct tps_module *end, struct bound *x,
				   struct bound *y, struct tps_error *err);

/* B(x) |W|^T + |b|. */
static enum tps_status linear_forward(const struct exact_run *r,
				      const struct tps_module *m,
				      const struct bound *x, struct bound *y,
				      struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	const struct tps_model_spec *spec = r->model->spec;
	struct tps_tensor w = {0}, b = {0};
	enum tps_status st;
	/* partial_split's b/N: not an integer on each rank. */
	bool split_bias = s->style == TPS_STYLE_ROWWISE && s->bias &&
			  s->bias_mode == TPS_BIAS_PARTIAL_SPLIT &&
			  spec->mesh.shape[spec->tp_dim] > 1;
	*y = inexact();
	if (!x->exact || !params_ok(r, m) || split_bias) {
		return TPS_OK;
	}
	st = abs_of(&w, &m->params[0].global, err);
	if (st == TPS_OK && s->bias) {
		st = abs_of(&b, &m->params[1].global, err);
	}
	if (st == TPS_OK) {
		st = tps_tensor_linear(&y->t, &x->t, &w, s->bias ? &b : NULL,
				       r->pool, err);
	}
	tps_tensor_free(&w);
	tps_tensor_free(&b);
	settle(r, y, st);
	return st;
}

/* |W| at the ids x holds (token ids: x's bound is the ids). */
static enum tps_status embedding_forward(const struct exact_run *r,
					 const struct tps_module *m,
					 const struct bound *x, struct bound *y,
					 struct tps_error *err)
{
	const struct tps_tensor *w = &m->params[0].global;
	int64_t rows = w->shape.dim[0], width = w->shape.dim[1];
	struct tps_shape shape;
	enum tps_status st;
	*y = inexact();
	if (!x->exact || !params_ok(r, m)) {
		return TPS_OK;
	}
	shape = x->t.shape;
	shape.dim[shape.ndim++] = width;
	st = tps_tensor_init(&y->t, &shape, err);
	for (int64_t i = 0; st == TPS_OK && i < tps_tensor_numel(&x->t); i++) {
		int64_t id = (int64_t)x->t.data[i];
		for (int64_t j = 0; id >= 0 && id < rows && j < width; j++) {
			y->t.data[i * width + j] =
				fabsf(w->data[id * width + j]);
		}
	}
	settle(r, y, st);
	return st;
}

/* x + body(x). */
static enum tps_status residual_forward(struct exact_run *r,
					struct tps_module *m,
					const struct bound *x, struct bound *y,
					struct tps_error *err)
{
	struct bound xb = {0}, h = {0};
	enum tps_status st = bound_copy(&xb, x, err);
	*y = inexact();
	if (st == TPS_OK) {
		st = forward_seq(r, m + 1, tps_module_next(m), &xb, &h, err);
	}
	if (st == TPS_OK && x->exact && h.exact) {
		st = tps_tensor_copy(&y->t, &x->t, err);
		if (st == TPS_OK) {
			tps_tensor_add(&y->t, &h.t);
		}
		settle(r, y, st);
	}
	bound_free(&xb);
	bound_free(&h);
	return st;
}

static enum tps_status forward_module(struct exact_run *r, struct tps_module *m,
				      const struct bound *x, struct bound *y,
				      struct tps_error *err)
{
	*y = inexact();
	switch (m->spec->type) {
	case TPS_MODULE_LINEAR: return linear_forward(r, m, x, y, err);
	case TPS_MODULE_RELU: return bound_copy(y, x, err);
	case TPS_MODULE_RESIDUAL: return residual_forward(r, m, x, y, err);
	case TPS_MODULE_EMBEDDING: return embedding_forward(r, m, x, y, err);
	case TPS_MODULE_GELU:
	case TPS_MODULE_LAYERNORM:
	case TPS_MODULE_ATTENTION: return TPS_OK; /* not integers */
	}
	return TPS_OK;
}

/* The bound of the output of [begin, end) from x (consumed) into *y; in
 * training, each module keeps its input's bound. */
static enum tps_status forward_seq(struct exact_run *r,
				   struct tps_module *begin,
				   struct tps_module *end, struct bound *x,
				   struct bound *y, struct tps_error *err)
{
	struct bound cur = *x, out;
	enum tps_status st = TPS_OK;
	*x = inexact();
	for (struct tps_module *m = begin; m < end && st == TPS_OK;
	     m = tps_module_next(m)) {
		st = forward_module(r, m, &cur, &out, err);
		if (r->training) {
			bound_free(&r->saved[m - r->model->modules]);
			r->saved[m - r->model->modules] = cur;
		} else {
			bound_free(&cur);
		}
		cur = out;
	}
	if (st != TPS_OK) {
		bound_free(&cur);
		return st;
	}
	*y = cur;
	return TPS_OK;
}

/* ---- backward --------------------------------------------------------- */

static enum tps_status backward_seq(struct exact_run *r,
				    struct tps_module *begin,
				    struct tps_module *end, struct bound *dy,
				    struct bound *dx, struct tps_error *err);

static enum tps_status linear_backward(struct exact_run *r,
				       const struct tps_module *m,
				       const struct bound *dy, struct bound *dx,
				       struct tps_error *err)
{
	const struct bound *x = &r->saved[m - r->model->modules];
	struct bound g = inexact();
	struct tps_tensor w = {0};
	enum tps_status st = TPS_OK;
	*dx = inexact();
	if (!dy->exact) {
		return TPS_OK;
	}
	if (x->exact) {
		st = tps_tensor_linear_backward_weight(&g.t, &dy->t, &x->t,
						       r->pool, err);
		settle(r, &g, st);
		r->grad_ok[param_index(r, m, 0)] = g.exact;
		bound_free(&g);
	}
	if (st == TPS_OK && m->spec->bias) {
		st = tps_tensor_sum_rows(&g.t, &dy->t, err);
		settle(r, &g, st);
		r->grad_ok[param_index(r, m, 1)] = g.exact;
		bound_free(&g);
	}
	if (st == TPS_OK && r->param_ok[param_index(r, m, 0)]) {
		st = abs_of(&w, &m->params[0].global, err);
		if (st == TPS_OK) {
			st = tps_tensor_linear_backward_input(&dx->t, &dy->t,
							      &w, r->pool, err);
		}
		settle(r, dx, st);
	}
	tps_tensor_free(&w);
	return st;
}

/* dW[id] += B(dy) at each id. */
static enum tps_status embedding_backward(struct exact_run *r,
					  const struct tps_module *m,
					  const struct bound *dy,
					  struct tps_error *err)
{
	const struct bound *ids = &r->saved[m - r->model->modules];
	const struct tps_tensor *w = &m->params[0].global;
	int64_t rows = w->shape.dim[0], width = w->shape.dim[1];
	struct bound g = inexact();
	enum tps_status st;
	if (!dy->exact || !ids->exact) {
		return TPS_OK;
	}
	st = tps_tensor_init(&g.t, &w->shape, err);
	for (int64_t i = 0; st == TPS_OK && i < tps_tensor_numel(&ids->t);
	     i++) {
		int64_t id = (int64_t)ids->t.data[i];
		for (int64_t j = 0; id >= 0 && id < rows && j < width; j++) {
			g.t.data[id * width + j] += dy->t.data[i * width + j];
		}
	}
	settle(r, &g, st);
	r->grad_ok[param_index(r, m, 0)] = g.exact;
	bound_free(&g);
	return st;
}

static enum tps_status residual_backward(struct exact_run *r,
					 struct tps_module *m,
					 const struct bound *dy,
					 struct bound *dx,
					 struct tps_error *err)
{
	struct bound db = {0}, dh = {0};
	enum tps_status st = bound_copy(&db, dy, err);
	*dx = inexact();
	if (st == TPS_OK) {
		st = backward_seq(r, m + 1, tps_module_next(m), &db, &dh, err);
	}
	if (st == TPS_OK && dy->exact && dh.exact) {
		st = tps_tensor_copy(&dx->t, &dy->t, err);
		if (st == TPS_OK) {
			tps_tensor_add(&dx->t, &dh.t);
		}
		settle(r, dx, st);
	}
	bound_free(&db);
	bound_free(&dh);
	return st;
}

/* The parameter gradients of m (grad_ok) and the bound of its input's
 * gradient. */
static enum tps_status backward_module(struct exact_run *r,
				       struct tps_module *m,
				       const struct bound *dy, struct bound *dx,
				       struct tps_error *err)
{
	*dx = inexact();
	switch (m->spec->type) {
	case TPS_MODULE_LINEAR: return linear_backward(r, m, dy, dx, err);
	case TPS_MODULE_RELU:
		/* The mask x > 0 agrees only where x does. */
		return r->saved[m - r->model->modules].exact
			       ? bound_copy(dx, dy, err)
			       : TPS_OK;
	case TPS_MODULE_RESIDUAL: return residual_backward(r, m, dy, dx, err);
	case TPS_MODULE_EMBEDDING: return embedding_backward(r, m, dy, err);
	case TPS_MODULE_GELU:
	case TPS_MODULE_LAYERNORM:
	case TPS_MODULE_ATTENTION: return TPS_OK; /* not integers */
	}
	return TPS_OK;
}

/* Backward over the top-level modules of [begin, end), last first, from dy
 * (consumed) into *dx. */
static enum tps_status backward_seq(struct exact_run *r,
				    struct tps_module *begin,
				    struct tps_module *end, struct bound *dy,
				    struct bound *dx, struct tps_error *err)
{
	struct tps_module **list = malloc((size_t)(end - begin) * sizeof *list);
	struct bound cur = *dy, next;
	enum tps_status st = TPS_OK;
	int n = 0;
	*dy = inexact();
	if (!list) {
		bound_free(&cur);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (struct tps_module *m = begin; m < end; m = tps_module_next(m)) {
		list[n++] = m;
	}
	for (int i = n - 1; i >= 0 && st == TPS_OK; i--) {
		st = backward_module(r, list[i], &cur, &next, err);
		bound_free(&cur);
		cur = next;
	}
	free(list);
	if (st != TPS_OK) {
		bound_free(&cur);
		return st;
	}
	*dx = cur;
	return TPS_OK;
}

/* ---- a step ----------------------------------------------------------- */

/* Whether n is a power of two (1 included). */
static bool power_of_two(int n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

/* The sum over the elements of a bound, in double. */
static double bound_sum(const struct tps_tensor *t)
{
	double s = 0.0;
	for (int64_t i = 0; i < tps_tensor_numel(t); i++) {
		s += t->data[i];
	}
	return s;
}

enum tps_status tps_model_exact_step(struct tps_model *model,
				     const struct tps_tensor *input,
				     const bool *param_equal, int step,
				     struct tps_model_exactness *exact,
				     bool *grad_ok, struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	bool training = spec->mode == TPS_MODE_TRAINING;
	int n = model->n_params;
	struct exact_run r = {
		model,
		spec->mesh.pool,
		NULL,
		NULL,
		grad_ok,
		training,
		ldexpf(1.0f, tps_dtypes_exact_bits(&spec->dtypes))};
	struct bound x = inexact(), y = inexact(), dy = inexact(),
		     dx = inexact();
	bool *ok = calloc((size_t)(n > 0 ? n : 1), sizeof *ok);
	struct tps_shape out_shape = tps_model_output_shape(spec);
	enum tps_status st = TPS_OK;

	if (!ok || (training && !(r.saved = calloc((size_t)spec->n_modules,
						   sizeof *r.saved)))) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++) {
		ok[i] = param_equal[i] &&
			integral(&model->params[i].global, r.limit);
		grad_ok[i] = false;
	}
	r.param_ok = ok;
	if (integral(input, r.limit)) {
		st = abs_of(&x.t, input, err);
		x.exact = st == TPS_OK;
	}
	if (st == TPS_OK) {
		st = forward_seq(&r, model->modules,
				 model->modules + spec->n_modules, &x, &y, err);
	}
	if (st != TPS_OK || !training) {
		exact->output = st == TPS_OK && y.exact;
		goto out;
	}
	if (step == spec->steps - 1) {
		exact->output = y.exact;
	}
	/* sum's gradient is the simulation's scale, dp (global), on every
	 * element; ddp's 1/dp is an integer only for dp 1. */
	if (spec->loss != TPS_LOSS_SUM ||
	    (model->dp > 1 && spec->dp_grad != TPS_DP_GRAD_GLOBAL)) {
		goto out;
	}
	exact->loss[step] = y.exact && bound_sum(&y.t) * model->dp <
					       9007199254740992.0; /* 2^53 */
	st = tps_tensor_init(&dy.t, &out_shape, err);
	for (int64_t i = 0; st == TPS_OK && i < tps_tensor_numel(&dy.t); i++) {
		dy.t.data[i] = (float)model->dp;
	}
	dy.exact = st == TPS_OK;
	if (st == TPS_OK) {
		st = backward_seq(&r, model->modules,
				  model->modules + spec->n_modules, &dy, &dx,
				  err);
	}
	if (st == TPS_OK && spec->input_requires_grad &&
	    step == spec->steps - 1) {
		exact->grads[n] = dx.exact && power_of_two(model->dp);
	}
out:
	for (int i = 0; r.saved && i < spec->n_modules; i++) {
		bound_free(&r.saved[i]);
	}
	free(r.saved);
	free(ok);
	bound_free(&x);
	bound_free(&y);
	bound_free(&dy);
	bound_free(&dx);
	return st;
}
