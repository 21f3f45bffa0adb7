/*
 * residual: y = x + body(x), the body being the module's descendants (a
 * sequence, nn_seq.c). The sum is local: the body's output is first
 * brought to the input's layout (a no-op in Megatron's blocks, where both
 * are replicated, or both sequence shards). Backward sends dy both ways:
 *
 *   dx = dy + d body(x) / dx
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn.h"

static struct tps_module *body_begin(struct tps_module *m)
{
	return m + 1;
}

static struct tps_module *body_end(struct tps_module *m)
{
	return m + 1 + m->spec->n_descendants;
}

/* x + body(x) needs both of one shape: a shape error otherwise. */
static enum tps_status check_sum_shapes(const char *name,
					const struct tps_shape *body,
					const struct tps_shape *in,
					struct tps_error *err)
{
	char a[128], b[128];
	if (tps_shape_equal(body, in)) {
		return TPS_OK;
	}
	return tps_error_set(err, TPS_ERR_SHAPE,
			     "%s: the body's output %s does not fit the input "
			     "%s it is added to",
			     name, tps_shape_format(body, a, sizeof a),
			     tps_shape_format(in, b, sizeof b));
}

static enum tps_status residual_forward(const struct tps_nn_context *ctx,
					struct tps_module *m,
					struct tps_dtensor *x,
					struct tps_dtensor *y,
					struct tps_error *err)
{
	const char *name = m->spec->name;
	char body_out[TPS_NAME_MAX + 16], out_name[TPS_NAME_MAX + 8];
	struct tps_dtensor xb = {0}, h = {0}, out = {0};
	struct tps_nn_sum_job job = {x, &h};
	enum tps_status st;

	snprintf(body_out, sizeof body_out, "%s.body.out", name);
	snprintf(out_name, sizeof out_name, "%s.out", name);
	tps_nn_forward_begin(ctx, m);
	/* The body consumes (and may redistribute) its own copy of x. */
	st = tps_dtensor_copy(&xb, x, err);
	if (st == TPS_OK) {
		st = tps_nn_forward_seq(ctx, body_begin(m), body_end(m), &xb,
					&h, err);
	}
	if (st == TPS_OK) {
		/* The config keeps the width; an injected mistake (a skipped
		 * all_gather) need not. */
		st = check_sum_shapes(name, &h.global, &x->global, err);
	}
	if (st == TPS_OK) {
		if (ctx->save) {
			tps_layout_chain_start(&m->out_chain, ctx, &h);
		}
		st = tps_nn_to_layout_chained(
			ctx, &h, x->placements[ctx->tp_dim],
			ctx->save ? &m->out_chain : NULL, name, body_out,
			"the body's output, brought to the layout of the "
			"input it is added to",
			err);
	}
	if (st == TPS_OK && !tps_nn_same_layout(&h, x)) {
		st = tps_error_set(err, TPS_ERR_SHAPE,
				   "%s: the body's output and the input are "
				   "split differently off tp",
				   name);
	}
	if (st == TPS_OK) {
		st = tps_dtensor_map(&out, ctx->mesh, &x->global, x->placements,
				     tps_nn_sum_rank, &job, err);
	}
	tps_dtensor_free(&xb);
	tps_dtensor_free(&h);
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(ctx, name, "add", out_name,
					 "y = x + body(x): each rank adds its "
					 "local values, no communication",
					 &out, 0, err);
	}
	/* Backward needs no input: only the chain back to x's layout. */
	return tps_nn_forward_end(ctx, m, NULL, &out, y, st);
}

static enum tps_status residual_backward(const struct tps_nn_context *ctx,
					 struct tps_module *m,
					 struct tps_dtensor *dy,
					 struct tps_dtensor *dx,
					 struct tps_error *err)
{
	const char *name = m->spec->name;
	char body_grad[TPS_NAME_MAX + 24], in_grad[TPS_NAME_MAX + 16];
	struct tps_dtensor gb = {0}, db = {0};
	struct tps_nn_sum_job job = {dy, &db};
	enum tps_status st;

	snprintf(body_grad, sizeof body_grad, "%s.body.out.grad", name);
	snprintf(in_grad, sizeof in_grad, "%s.in.grad", name);
	st = tps_dtensor_copy(&gb, dy, err);
	if (st == TPS_OK) {
		st = tps_nn_grad_through(ctx, &gb, &m->out_chain, name,
					 body_grad, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_backward_seq(ctx, body_begin(m), body_end(m), &gb,
					 dx ? &db : NULL, err);
	} else {
		tps_dtensor_free(&gb);
		for (struct tps_module *b = body_begin(m); b < body_end(m);
		     b++) {
			tps_module_free_saved(b);
		}
	}
	if (st == TPS_OK && dx && !tps_nn_same_layout(&db, dy)) {
		st = tps_nn_redistribute(
			ctx, &db, dy->placements, name, body_grad,
			"the body's input gradient, brought to "
			"the layout of the skip connection's",
			err);
	}
	if (st == TPS_OK && dx) {
		st = tps_dtensor_map(dx, ctx->mesh, &dy->global, dy->placements,
				     tps_nn_sum_rank, &job, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_compute(
				ctx, name, "add", in_grad,
				"dx = dy + d body(x)/dx: the gradient takes "
				"the skip connection and the body, summed "
				"locally",
				dx, 0, err);
			if (st != TPS_OK) {
				tps_dtensor_free(dx);
			}
		}
	}
	tps_dtensor_free(&db);
	tps_dtensor_free(dy);
	tps_module_free_saved(m);
	return st;
}

static enum tps_status residual_reference_forward(struct tps_module *m,
						  struct tps_pool *pool,
						  const struct tps_tensor *x,
						  struct tps_tensor *y,
						  struct tps_error *err)
{
	struct tps_tensor h = {0};
	enum tps_status st = tps_nn_reference_forward_seq(
		body_begin(m), body_end(m), pool, m->training, x, &h, err);
	if (st == TPS_OK) {
		st = check_sum_shapes(m->spec->name, &h.shape, &x->shape, err);
	}
	if (st == TPS_OK) {
		st = tps_tensor_copy(y, x, err);
	}
	if (st == TPS_OK) {
		tps_tensor_add(y, &h);
	}
	tps_tensor_free(&h);
	return st;
}

static enum tps_status residual_reference_backward(struct tps_module *m,
						   struct tps_pool *pool,
						   const struct tps_tensor *dy,
						   struct tps_tensor *dx,
						   struct tps_error *err)
{
	struct tps_tensor db = {0};
	enum tps_status st = tps_nn_reference_backward_seq(
		body_begin(m), body_end(m), pool, dy, dx ? &db : NULL, err);
	if (st == TPS_OK && dx) {
		st = tps_tensor_copy(dx, dy, err);
		if (st == TPS_OK) {
			tps_tensor_add(dx, &db);
		}
	}
	tps_tensor_free(&db);
	tps_tensor_free(&m->ref_saved_in);
	return st;
}

/* ---- error bounds (docs/numerics.md, "residual") ---------------------- */

/* y = x + body(x): the body's bound from x's, then the sum's. */
static enum tps_status
residual_bound_forward(struct tps_module *m, const struct tps_bound_ctx *bc,
		       const struct tps_tensor *x, const struct tps_bound *ex,
		       struct tps_tensor *y, struct tps_bound *ey,
		       struct tps_error *err)
{
	struct tps_tensor h = {0}, out = {0};
	struct tps_bound eh = {0}, e = {0};
	enum tps_status st =
		tps_nn_bound_forward_seq(body_begin(m), body_end(m), bc,
					 m->training, x, ex, &h, &eh, err);
	if (st == TPS_OK) {
		st = check_sum_shapes(m->spec->name, &h.shape, &x->shape, err);
	}
	if (st == TPS_OK) {
		st = tps_tensor_copy(&out, x, err);
	}
	if (st == TPS_OK) {
		tps_tensor_add(&out, &h);
		st = tps_nn_sum_bound(bc->u_act, &out, ex, &eh, &e, err);
	}
	tps_tensor_free(&h);
	tps_bound_free(&eh);
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*y = out;
	*ey = e;
	return TPS_OK;
}

/* dx = dy + d body(x) / dx. */
static enum tps_status
residual_bound_backward(struct tps_module *m, const struct tps_bound_ctx *bc,
			const struct tps_tensor *dy,
			const struct tps_bound *edy, struct tps_tensor *dx,
			struct tps_bound *edx, struct tps_error *err)
{
	struct tps_tensor db = {0}, d = {0};
	struct tps_bound edb = {0}, e = {0};
	enum tps_status st =
		tps_nn_bound_backward_seq(body_begin(m), body_end(m), bc, dy,
					  edy, dx ? &db : NULL, &edb, err);
	if (st == TPS_OK && dx) {
		st = tps_tensor_copy(&d, dy, err);
		if (st == TPS_OK) {
			tps_tensor_add(&d, &db);
			st = tps_nn_sum_bound(bc->u_grad, &d, edy, &edb, &e,
					      err);
		}
	}
	tps_tensor_free(&db);
	tps_bound_free(&edb);
	tps_tensor_free(&m->ref_saved_in);
	if (st != TPS_OK) {
		tps_tensor_free(&d);
		return st;
	}
	if (dx) {
		*dx = d;
		*edx = e;
	}
	return TPS_OK;
}

const struct tps_module_ops tps_residual_ops = {
	.forward = residual_forward,
	.backward = residual_backward,
	.reference_forward = residual_reference_forward,
	.reference_backward = residual_reference_backward,
	.bound_forward = residual_bound_forward,
	.bound_backward = residual_bound_backward,
	/* the body's modules have their own */
	.parameters = tps_nn_no_parameters,
	.memory_estimate = tps_nn_no_memory,
};
