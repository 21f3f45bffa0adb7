/*
 * Element-wise activations: relu, gelu. y = f(x), same shape, no
 * parameters. Exact on any shard, so each rank applies f to its local
 * values and the layout is kept; only a partial input is reduced first,
 * since f(a + b) != f(a) + f(b).
 *
 * Each has its ops table (tps_relu_ops, tps_gelu_ops): the same steps
 * below, given its function (struct activation).
 */
#include <stdio.h>
#include <string.h>

#include "nn.h"

/* An element-wise function, its derivative and what its events say. */
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
};

static const struct activation relu = {
	"relu", tps_tensor_relu, tps_tensor_relu_backward,
	"dX = dY where X > 0, else 0: element-wise, the layout is kept"};
static const struct activation gelu = {
	"gelu", tps_tensor_gelu, tps_tensor_gelu_backward,
	"dX = dY gelu'(X): element-wise, the layout is kept"};

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

static int no_parameters(const struct tps_module_spec *s, int tp_dim,
			 struct tps_param_spec *out)
{
	(void)s;
	(void)tp_dim;
	(void)out;
	return 0;
}

static int64_t no_memory(const struct tps_module_spec *s,
			 const struct tps_memory_context *mc)
{
	/* No parameters; activations are counted by the model. */
	(void)s;
	(void)mc;
	return 0;
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

const struct tps_module_ops tps_relu_ops = {
	.forward = relu_forward,
	.backward = relu_backward,
	.reference_forward = relu_reference_forward,
	.reference_backward = relu_reference_backward,
	.parameters = no_parameters,
	.memory_estimate = no_memory,
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

const struct tps_module_ops tps_gelu_ops = {
	.forward = gelu_forward,
	.backward = gelu_backward,
	.reference_forward = gelu_reference_forward,
	.reference_backward = gelu_reference_backward,
	.parameters = no_parameters,
	.memory_estimate = no_memory,
};
