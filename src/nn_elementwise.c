/*
 * Element-wise activations: relu, gelu. y = f(x), same shape, no
 * parameters. Exact on any shard, so each rank applies f to its local
 * values and the layout is kept; only a partial input is reduced first,
 * since f(a + b) != f(a) + f(b).
 */
#include <stdio.h>

#include "tpsim/nn.h"

/* f on one tensor, for the parallel ranks and the reference alike. */
static enum tps_status apply(enum tps_module_type type, struct tps_tensor *y,
			     const struct tps_tensor *x, struct tps_error *err)
{
	switch (type) {
	case TPS_MODULE_RELU: return tps_tensor_relu(y, x, err);
	case TPS_MODULE_GELU: return tps_tensor_gelu(y, x, err);
	case TPS_MODULE_LINEAR: break;
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
	enum tps_status st = TPS_OK;

	snprintf(in_name, sizeof in_name, "%s.in", s->name);
	snprintf(out_name, sizeof out_name, "%s.out", s->name);
	if (x->placements[ctx->tp_dim].kind == TPS_PLACEMENT_PARTIAL) {
		st = tps_nn_to_layout(ctx, x, tps_placement_replicate(),
				      s->name, in_name,
				      "an activation of partial sums "
				      "is wrong: reduce first",
				      err);
	}
	if (st == TPS_OK) {
		st = tps_dtensor_map(y, ctx->mesh, &x->global, x->placements,
				     apply_rank, &job, err);
	}
	if (st != TPS_OK) {
		return st;
	}
	st = tps_nn_emit_compute(ctx, s->name, tps_module_type_names[s->type],
				 out_name,
				 "element-wise on each rank's local "
				 "values: the layout is kept",
				 y, 0, err);
	if (st != TPS_OK) {
		tps_dtensor_free(y);
	}
	return st;
}

static enum tps_status elementwise_reference_forward(const struct tps_module *m,
						     const struct tps_tensor *x,
						     struct tps_tensor *y,
						     struct tps_error *err)
{
	return apply(m->spec->type, y, x, err);
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
	.reference_forward = elementwise_reference_forward,
	.parameters = elementwise_parameters,
	.memory_estimate = elementwise_memory_estimate,
};
