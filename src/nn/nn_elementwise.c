/*
 * Element-wise activations: relu, gelu, silu. y = f(x), same shape, no
 * parameters. Exact on any shard, so each rank applies f to its local
 * values and the layout is kept; only a partial input is reduced first,
 * since f(a + b) != f(a) + f(b).
 *
 * Each has its ops table (tps_relu_ops, tps_gelu_ops, tps_silu_ops): the same steps
 * below, given its function (struct activation).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn.h"

/* An element-wise function, its derivative, their error bounds and what
 * its events say. */
struct activation {
	/* The op of forward's compute event; backward's is "<op>_backward". */
	const char *op;
	enum tps_status (*f)(struct tps_tensor *y, const struct tps_tensor *x,
			     struct tps_error *err);
	/* dx = f'(x) dy */
	enum tps_status (*df)(struct tps_tensor *dx,
			      const struct tps_tensor *dy,
			      const struct tps_tensor *x,
			      struct tps_error *err);
	const char *backward_note;
	/* The bounds of one element (docs/numerics.md), called where some
	 * input's bound is not 0 (where all are, every evaluation computes
	 * the same float: 0): y = f(x) from x's bound ex; dx from x, ex,
	 * dy and its bound edy. u: the stored value's unit roundoff. */
	double (*bound_y)(double x, double ex, double y, double u);
	double (*bound_dx)(double x, double ex, double dy, double edy,
			   double dx, double u);
};

/* relu is 1-Lipschitz and rounds nothing: e_y = e_x. */
static double relu_bound_y(double x, double ex, double y, double u)
{
	(void)x;
	(void)y;
	(void)u;
	return ex;
}

/* dx = dy where x > 0: where |x| > 2 e_x every evaluation and the center
 * agree on the mask; elsewhere dx is dy or 0 on either side. */
static double relu_bound_dx(double x, double ex, double dy, double edy,
			    double dx, double u)
{
	(void)dx;
	(void)u;
	if (ex == 0.0 || fabs(x) > 2.0 * ex) {
		return x > 0.0 ? edy : 0.0;
	}
	return fabs(dy) + 2.0 * edy;
}

/* |gelu''| = phi(x) |2 - x^2| <= 2 phi(0) < 0.8: gelu' is 0.8-Lipschitz,
 * and |gelu'| within 2 e of x is at most |gelu'(x)| + 1.6 e. */
#define GELU_D2_MAX 0.8

static double gelu_d1(double v)
{
	double cdf = 0.5 * (1.0 + erf(v * 0.70710678118654752440));
	double pdf = exp(-0.5 * v * v) * 0.39894228040143267794;
	return cdf + v * pdf;
}

/* y = gelu(x), evaluated in double and rounded once: Lipschitz times e_x,
 * the rounding u |y|, and the double evaluation's own error (1 + erf
 * cancels for negative x: |x| 2^-52 absolute). */
static double gelu_bound_y(double x, double ex, double y, double u)
{
	double lip = fabs(gelu_d1(x)) + 2.0 * GELU_D2_MAX * ex;
	return lip * ex + u * (fabs(y) + 2.0 * lip * ex) +
	       fabs(x) * 0x1p-52 + fabs(y) * 0x1p-50;
}

/* dx = dy g, g = gelu'(x) in double rounded once: g's error is 0.8 e_x
 * plus its rounding; then the product's rounding. */
static double gelu_bound_dx(double x, double ex, double dy, double edy,
			    double dx, double u)
{
	/* (1 + 2^-20): g as rounded to float may be above gelu'(x). */
	double gmax = fabs(gelu_d1(x)) * (1.0 + 0x1p-20) + 2.0 * GELU_D2_MAX * ex;
	double eg = ex > 0.0 ? GELU_D2_MAX * ex + u * gmax + 0x1p-50 : 0.0;
	double prop = edy * (gmax + 2.0 * eg) + (fabs(dy) + edy) * eg;
	return prop + u * (fabs(dx) + 2.0 * prop);
}

/* silu'' = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x): its largest
 * magnitude is 0.5, at x = 0 (docs/numerics.md), so silu' is 0.5-Lipschitz
 * and |silu'| within 2 e of x is at most |silu'(x)| + e. */
#define SILU_D2_MAX 0.5

static double silu_d1(double v)
{
	double s = 1.0 / (1.0 + exp(-v));
	return s * (1.0 + v * (1.0 - s));
}

/* y = silu(x), evaluated in double and rounded once: Lipschitz times e_x,
 * the rounding u |y|, and the double evaluation's own error (a few ulps
 * of double, relative to |x| since |silu(x)| <= |x|). */
static double silu_bound_y(double x, double ex, double y, double u)
{
	double lip = fabs(silu_d1(x)) + 2.0 * SILU_D2_MAX * ex;
	return lip * ex + u * (fabs(y) + 2.0 * lip * ex) +
	       fabs(x) * 0x1p-50 + fabs(y) * 0x1p-50;
}

/* dx = dy g, g = silu'(x) in double rounded once: g's error is 0.5 e_x
 * plus its rounding; then the product's rounding (as gelu's). */
static double silu_bound_dx(double x, double ex, double dy, double edy,
			    double dx, double u)
{
	/* (1 + 2^-20): g as rounded to float may be above silu'(x). */
	double gmax = fabs(silu_d1(x)) * (1.0 + 0x1p-20) + 2.0 * SILU_D2_MAX * ex;
	double eg = ex > 0.0 ? SILU_D2_MAX * ex + u * gmax + 0x1p-50 : 0.0;
	double prop = edy * (gmax + 2.0 * eg) + (fabs(dy) + edy) * eg;
	return prop + u * (fabs(dx) + 2.0 * prop);
}

static const struct activation relu = {
	"relu",
	tps_tensor_relu,
	tps_tensor_relu_backward,
	"dX = dY where X > 0, else 0: element-wise, the layout is kept",
	relu_bound_y,
	relu_bound_dx};
static const struct activation gelu = {
	"gelu",
	tps_tensor_gelu,
	tps_tensor_gelu_backward,
	"dX = dY gelu'(X): element-wise, the layout is kept",
	gelu_bound_y,
	gelu_bound_dx};
static const struct activation silu = {
	"silu",
	tps_tensor_silu,
	tps_tensor_silu_backward,
	"dX = dY silu'(X): element-wise, the layout is kept",
	silu_bound_y,
	silu_bound_dx};

struct apply_job {
	const struct activation *fn;
	const struct tps_dtensor *x;
};

static enum tps_status apply_rank(void *opaque, int r, struct tps_tensor *out,
				  struct tps_error *err)
{
	const struct apply_job *job = opaque;
	return job->fn->f(out, &job->x->locals[r], err);
}

static enum tps_status activation_forward(const struct activation *fn,
					  const struct tps_nn_context *ctx,
					  struct tps_module *m,
					  struct tps_dtensor *x,
					  struct tps_dtensor *y,
					  struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct apply_job job = {fn, x};
	char in_name[TPS_NAME_MAX + 8], out_name[TPS_NAME_MAX + 8];
	struct tps_dtensor out = {0};
	enum tps_status st = TPS_OK;

	snprintf(in_name, sizeof in_name, "%s.in", s->name);
	snprintf(out_name, sizeof out_name, "%s.out", s->name);
	tps_nn_forward_begin(ctx, m);
	if (ctx->save) {
		tps_layout_chain_start(&m->in_chain, ctx, x);
	}
	if (x->placements[ctx->tp_dim].kind == TPS_PLACEMENT_PARTIAL) {
		st = tps_nn_to_layout_chained(
			ctx, x, tps_placement_replicate(),
			ctx->save ? &m->in_chain : NULL, s->name, in_name,
			"an activation of partial sums is wrong: reduce first",
			err);
	}
	if (st == TPS_OK) {
		st = tps_dtensor_map(&out, ctx->mesh, &x->global, x->placements,
				     apply_rank, &job, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(
			ctx, s->name, fn->op, out_name,
			"element-wise on each rank's local values: the layout "
			"is kept",
			&out, 0, err);
	}
	/* f'(x) needs x, as the ranks applied f to it. */
	return tps_nn_forward_end(ctx, m, x, &out, y, st);
}

struct backward_job {
	const struct activation *fn;
	const struct tps_dtensor *dy, *x;
};

static enum tps_status backward_rank(void *opaque, int r,
				     struct tps_tensor *out,
				     struct tps_error *err)
{
	const struct backward_job *job = opaque;
	return job->fn->df(out, &job->dy->locals[r], &job->x->locals[r], err);
}

static enum tps_status activation_backward(const struct activation *fn,
					   const struct tps_nn_context *ctx,
					   struct tps_module *m,
					   struct tps_dtensor *dy,
					   struct tps_dtensor *dx,
					   struct tps_error *err)
{
	struct backward_job job = {fn, dy, &m->saved_in};
	char op[TPS_NAME_MAX];
	struct tps_dtensor g = {0};
	enum tps_status st = TPS_OK;

	snprintf(op, sizeof op, "%s_backward", fn->op);
	/* No parameters: without an input gradient there is nothing to do. */
	if (dx) {
		st = tps_dtensor_map(&g, ctx->mesh, &dy->global, dy->placements,
				     backward_rank, &job, err);
		if (st == TPS_OK) {
			st = tps_nn_input_grad(ctx, m, &g, op,
					       fn->backward_note, 0, dx, err);
		}
	}
	tps_dtensor_free(dy);
	tps_module_free_saved(m);
	return st;
}

static enum tps_status
activation_reference_backward(const struct activation *fn, struct tps_module *m,
			      const struct tps_tensor *dy,
			      struct tps_tensor *dx, struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	if (dx) {
		st = fn->df(dx, dy, &m->ref_saved_in, err);
	}
	tps_tensor_free(&m->ref_saved_in);
	return st;
}

/* The reference's y = f(x) with its bound, element by element. */
static enum tps_status activation_bound_forward(const struct activation *fn,
						const struct tps_bound_ctx *bc,
						const struct tps_tensor *x,
						const struct tps_bound *ex,
						struct tps_tensor *y,
						struct tps_bound *ey,
						struct tps_error *err)
{
	struct tps_tensor out = {0};
	struct tps_bound e = {0};
	enum tps_status st = fn->f(&out, x, err);
	int64_t n = tps_tensor_numel(x);
	if (st == TPS_OK && tps_bound_is_none(ex)) {
		tps_bound_none_like(&e, ex);
	} else if (st == TPS_OK) {
		st = tps_bound_zero(&e, &x->shape, err);
		for (int64_t i = 0; st == TPS_OK && i < n; i++) {
			double xe = ex->e.data[i];
			e.e.data[i] = xe > 0.0 ? tps_bound_up(fn->bound_y(
							 x->data[i], xe,
							 out.data[i], bc->u_act))
					       : 0.0f;
		}
	}
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*y = out;
	*ey = e;
	return TPS_OK;
}

/* The reference's dx = f'(x) dy with its bound, element by element. */
static enum tps_status activation_bound_backward(
	const struct activation *fn, struct tps_module *m,
	const struct tps_bound_ctx *bc, const struct tps_tensor *dy,
	const struct tps_bound *edy, struct tps_tensor *dx,
	struct tps_bound *edx, struct tps_error *err)
{
	const struct tps_tensor *x = &m->ref_saved_in;
	const struct tps_bound *ex = &m->ref_saved_bound;
	const struct tps_bound *inputs[2] = {ex, edy};
	const struct tps_bound *none = tps_bound_first_none(inputs, 2);
	struct tps_tensor d = {0};
	struct tps_bound e = {0};
	int64_t n = tps_tensor_numel(x);
	enum tps_status st = TPS_OK;
	if (dx) {
		st = fn->df(&d, dy, x, err);
	}
	if (st == TPS_OK && dx && none) {
		tps_bound_none_like(&e, none);
	} else if (st == TPS_OK && dx) {
		st = tps_bound_zero(&e, &x->shape, err);
		for (int64_t i = 0; st == TPS_OK && i < n; i++) {
			double xe = ex->e.data[i], dye = edy->e.data[i];
			e.e.data[i] = xe > 0.0 || dye > 0.0
					      ? tps_bound_up(fn->bound_dx(
							x->data[i], xe,
							dy->data[i], dye,
							d.data[i], bc->u_grad))
					      : 0.0f;
		}
	}
	if (st != TPS_OK) {
		tps_tensor_free(&d);
		return st;
	}
	tps_tensor_free(&m->ref_saved_in);
	if (dx) {
		*dx = d;
		*edx = e;
	}
	return TPS_OK;
}

/* Each activation's ops: the functions above with its f. */

static enum tps_status relu_forward(const struct tps_nn_context *ctx,
				    struct tps_module *m, struct tps_dtensor *x,
				    struct tps_dtensor *y,
				    struct tps_error *err)
{
	return activation_forward(&relu, ctx, m, x, y, err);
}

static enum tps_status relu_backward(const struct tps_nn_context *ctx,
				     struct tps_module *m,
				     struct tps_dtensor *dy,
				     struct tps_dtensor *dx,
				     struct tps_error *err)
{
	return activation_backward(&relu, ctx, m, dy, dx, err);
}

static enum tps_status relu_reference_forward(struct tps_module *m,
					      struct tps_pool *pool,
					      const struct tps_tensor *x,
					      struct tps_tensor *y,
					      struct tps_error *err)
{
	(void)m;
	(void)pool;
	return tps_tensor_relu(y, x, err);
}

static enum tps_status relu_reference_backward(struct tps_module *m,
					       struct tps_pool *pool,
					       const struct tps_tensor *dy,
					       struct tps_tensor *dx,
					       struct tps_error *err)
{
	(void)pool;
	return activation_reference_backward(&relu, m, dy, dx, err);
}

static enum tps_status relu_bound_forward(struct tps_module *m,
					  const struct tps_bound_ctx *bc,
					  const struct tps_tensor *x,
					  const struct tps_bound *ex,
					  struct tps_tensor *y,
					  struct tps_bound *ey,
					  struct tps_error *err)
{
	(void)m;
	return activation_bound_forward(&relu, bc, x, ex, y, ey, err);
}

static enum tps_status relu_bound_backward(struct tps_module *m,
					   const struct tps_bound_ctx *bc,
					   const struct tps_tensor *dy,
					   const struct tps_bound *edy,
					   struct tps_tensor *dx,
					   struct tps_bound *edx,
					   struct tps_error *err)
{
	return activation_bound_backward(&relu, m, bc, dy, edy, dx, edx, err);
}

const struct tps_module_ops tps_relu_ops = {
	.forward = relu_forward,
	.backward = relu_backward,
	.reference_forward = relu_reference_forward,
	.reference_backward = relu_reference_backward,
	.bound_forward = relu_bound_forward,
	.bound_backward = relu_bound_backward,
	.parameters = tps_nn_no_parameters,
	.memory_estimate = tps_nn_no_memory,
};

static enum tps_status gelu_forward(const struct tps_nn_context *ctx,
				    struct tps_module *m, struct tps_dtensor *x,
				    struct tps_dtensor *y,
				    struct tps_error *err)
{
	return activation_forward(&gelu, ctx, m, x, y, err);
}

static enum tps_status gelu_backward(const struct tps_nn_context *ctx,
				     struct tps_module *m,
				     struct tps_dtensor *dy,
				     struct tps_dtensor *dx,
				     struct tps_error *err)
{
	return activation_backward(&gelu, ctx, m, dy, dx, err);
}

static enum tps_status gelu_reference_forward(struct tps_module *m,
					      struct tps_pool *pool,
					      const struct tps_tensor *x,
					      struct tps_tensor *y,
					      struct tps_error *err)
{
	(void)m;
	(void)pool;
	return tps_tensor_gelu(y, x, err);
}

static enum tps_status gelu_reference_backward(struct tps_module *m,
					       struct tps_pool *pool,
					       const struct tps_tensor *dy,
					       struct tps_tensor *dx,
					       struct tps_error *err)
{
	(void)pool;
	return activation_reference_backward(&gelu, m, dy, dx, err);
}

static enum tps_status gelu_bound_forward(struct tps_module *m,
					  const struct tps_bound_ctx *bc,
					  const struct tps_tensor *x,
					  const struct tps_bound *ex,
					  struct tps_tensor *y,
					  struct tps_bound *ey,
					  struct tps_error *err)
{
	(void)m;
	return activation_bound_forward(&gelu, bc, x, ex, y, ey, err);
}

static enum tps_status gelu_bound_backward(struct tps_module *m,
					   const struct tps_bound_ctx *bc,
					   const struct tps_tensor *dy,
					   const struct tps_bound *edy,
					   struct tps_tensor *dx,
					   struct tps_bound *edx,
					   struct tps_error *err)
{
	return activation_bound_backward(&gelu, m, bc, dy, edy, dx, edx, err);
}

const struct tps_module_ops tps_gelu_ops = {
	.forward = gelu_forward,
	.backward = gelu_backward,
	.reference_forward = gelu_reference_forward,
	.reference_backward = gelu_reference_backward,
	.bound_forward = gelu_bound_forward,
	.bound_backward = gelu_bound_backward,
	.parameters = tps_nn_no_parameters,
	.memory_estimate = tps_nn_no_memory,
};

static enum tps_status silu_forward(const struct tps_nn_context *ctx,
				    struct tps_module *m, struct tps_dtensor *x,
				    struct tps_dtensor *y,
				    struct tps_error *err)
{
	return activation_forward(&silu, ctx, m, x, y, err);
}

static enum tps_status silu_backward(const struct tps_nn_context *ctx,
				     struct tps_module *m,
				     struct tps_dtensor *dy,
				     struct tps_dtensor *dx,
				     struct tps_error *err)
{
	return activation_backward(&silu, ctx, m, dy, dx, err);
}

static enum tps_status silu_reference_forward(struct tps_module *m,
					      struct tps_pool *pool,
					      const struct tps_tensor *x,
					      struct tps_tensor *y,
					      struct tps_error *err)
{
	(void)m;
	(void)pool;
	return tps_tensor_silu(y, x, err);
}

static enum tps_status silu_reference_backward(struct tps_module *m,
					       struct tps_pool *pool,
					       const struct tps_tensor *dy,
					       struct tps_tensor *dx,
					       struct tps_error *err)
{
	(void)pool;
	return activation_reference_backward(&silu, m, dy, dx, err);
}

static enum tps_status silu_bound_forward(struct tps_module *m,
					  const struct tps_bound_ctx *bc,
					  const struct tps_tensor *x,
					  const struct tps_bound *ex,
					  struct tps_tensor *y,
					  struct tps_bound *ey,
					  struct tps_error *err)
{
	(void)m;
	return activation_bound_forward(&silu, bc, x, ex, y, ey, err);
}

static enum tps_status silu_bound_backward(struct tps_module *m,
					   const struct tps_bound_ctx *bc,
					   const struct tps_tensor *dy,
					   const struct tps_bound *edy,
					   struct tps_tensor *dx,
					   struct tps_bound *edx,
					   struct tps_error *err)
{
	return activation_bound_backward(&silu, m, bc, dy, edy, dx, edx, err);
}

const struct tps_module_ops tps_silu_ops = {
	.forward = silu_forward,
	.backward = silu_backward,
	.reference_forward = silu_reference_forward,
	.reference_backward = silu_reference_backward,
	.bound_forward = silu_bound_forward,
	.bound_backward = silu_bound_backward,
	.parameters = tps_nn_no_parameters,
	.memory_estimate = tps_nn_no_memory,
};
