/*
 * Element-wise activations: relu, gelu. y = f(x), same shape, no
 * parameters. Exact on any shard, so each rank applies f to its local
 * values and the layout is kept; only a partial input is reduced first,
 * since f(a + b) != f(a) + f(b).
 */
#include <stdio.h>
#include <string.h>

#include "nn.h"

/* f on one tensor, for the parallel ranks and the reference alike. */
static enum tps_status apply(enum tps_module_type type, struct tps_tensor *y,
			     const struct tps_tensor *x, struct tps_error *err)
{
	switch (type) {
	case TPS_MODULE_RELU: return tps_tensor_relu(y, x, err);
	case TPS_MODULE_GELU: return tps_tensor_gelu(y, x, err);
	case TPS_MODULE_LINEAR:
	case TPS_MODULE_LAYERNORM:
	case TPS_MODULE_RESIDUAL:
	case TPS_MODULE_EMBEDDING:
	case TPS_MODULE_ATTENTION: break;
	}
	return tps_error_set(err, TPS_ERR_UNSUPPORTED,
			     "%s is not an element-wise module",
			     tps_module_type_names[type]);
}

struct apply_job {
	enum tps_module_type type;
	const struct tps_dtensor *x;
};

static enum tps_status apply_rank(void *opaque, int r, struct tps_tensor *out,
				  struct tps_error *err)
{
	const struct apply_job *job = opaque;
	return apply(job->type, out, &job->x->locals[r], err);
}

static enum tps_status elementwise_forward(const struct tps_nn_context *ctx,
					   struct tps_module *m,
					   struct tps_dtensor *x,
					   struct tps_dtensor *y,
					   struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct apply_job job = {s->type, x};
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
			ctx, s->name, tps_module_type_names[s->type], out_name,
			"element-wise on each rank's local values: the layout "
			"is kept",
			&out, 0, err);
	}
	/* f'(x) needs x, as the ranks applied f to it. */
	return tps_nn_forward_end(ctx, m, x, &out, y, st);
}

/* f' applied to dy, on one tensor. */
static enum tps_status apply_backward(enum tps_module_type type,
				      struct tps_tensor *dx,
				      const struct tps_tensor *dy,
				      const struct tps_tensor *x,
				      struct tps_error *err)
{
	switch (type) {
	case TPS_MODULE_RELU: return tps_tensor_relu_backward(dx, dy, x, err);
	case TPS_MODULE_GELU: return tps_tensor_gelu_backward(dx, dy, x, err);
	case TPS_MODULE_LINEAR:
	case TPS_MODULE_LAYERNORM:
	case TPS_MODULE_RESIDUAL:
	case TPS_MODULE_EMBEDDING:
	case TPS_MODULE_ATTENTION: break;
	}
	return tps_error_set(err, TPS_ERR_UNSUPPORTED,
			     "%s is not an element-wise module",
			     tps_module_type_names[type]);
}

struct backward_job {
	enum tps_module_type type;
	const struct tps_dtensor *dy, *x;
};

static enum tps_status backward_rank(void *opaque, int r,
				     struct tps_tensor *out,
				     struct tps_error *err)
{
	const struct backward_job *job = opaque;
	return apply_backward(job->type, out, &job->dy->locals[r],
			      &job->x->locals[r], err);
}

static enum tps_status elementwise_backward(const struct tps_nn_context *ctx,
					    struct tps_module *m,
					    struct tps_dtensor *dy,
					    struct tps_dtensor *dx,
					    struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct backward_job job = {s->type, dy, &m->saved_in};
	char op[TPS_NAME_MAX];
	struct tps_dtensor g = {0};
	enum tps_status st = TPS_OK;

	snprintf(op, sizeof op, "%s_backward", tps_module_type_names[s->type]);
	/* No parameters: without an input gradient there is nothing to do. */
	if (dx) {
		st = tps_dtensor_map(&g, ctx->mesh, &dy->global, dy->placements,
				     backward_rank, &job, err);
		if (st == TPS_OK) {
			st = tps_nn_input_grad(
				ctx, m, &g, op,
				s->type == TPS_MODULE_RELU
					? "dX = dY where X > 0, else 0: "
					  "element-wise, the layout is kept"
					: "dX = dY gelu'(X): element-wise, the "
					  "layout is kept",
				0, dx, err);
		}
	}
	tps_dtensor_free(dy);
	tps_module_free_saved(m);
	return st;
}

static enum tps_status elementwise_reference_forward(struct tps_module *m,
						     struct tps_pool *pool,
						     const struct tps_tensor *x,
						     struct tps_tensor *y,
						     struct tps_error *err)
{
	return apply(m->spec->type, y, x, err);
}

static enum tps_status
elementwise_reference_backward(struct tps_module *m, struct tps_pool *pool,
			       const struct tps_tensor *dy,
			       struct tps_tensor *dx, struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	if (dx) {
		st = apply_backward(m->spec->type, dx, dy, &m->ref_saved_in,
				    err);
	}
	tps_tensor_free(&m->ref_saved_in);
	return st;
}

static int elementwise_parameters(const struct tps_module_spec *s, int tp_dim,
				  struct tps_param_spec *out)
{
	(void)s;
	(void)tp_dim;
	(void)out;
	return 0;
}

static int64_t elementwise_memory_estimate(const struct tps_module_spec *s,
					   const struct tps_memory_context *mc)
{
	/* No parameters; activations are counted by the model. */
	(void)s;
	(void)mc;
	return 0;
}

const struct tps_module_ops tps_elementwise_ops = {
	.forward = elementwise_forward,
	.backward = elementwise_backward,
	.reference_forward = elementwise_reference_forward,
	.reference_backward = elementwise_reference_backward,
	.parameters = elementwise_parameters,
	.memory_estimate = elementwise_memory_estimate,
};
