/*
 * ZeRO stage 3 / FSDP around a module's forward and backward (nn.h,
 * docs/zero.md): each parameter the module owns is held as each rank's
 * dim-0 chunk of its tp-local tensor over the dp group (shard(0,local)),
 * all-gathered over dp before the module's forward and freed after it
 * (reshard_after_forward), all-gathered again before its backward and
 * freed after; its gradient is reduce_scattered over dp (the average, in
 * all_reduce's summation order) as soon as the module's backward made it.
 */
#include <stdio.h>
#include <string.h>

#include "nn.h"

/* p->value gathered: its shard kept aside in p->fsdp_shard. */
static bool gathered(const struct tps_param *p)
{
	return p->fsdp_shard.locals != NULL;
}

/* Counts p's gathered value in (sign 1) or out (-1) of what each rank
 * holds gathered now, and the most at once, in the bytes an element of
 * the params' dtype takes (the symbolic figures', docs/symbolic.md).
 * Meta tensors count as real ones. */
static void count_gathered(const struct tps_nn_context *ctx,
			   const struct tps_param *p, int sign)
{
	for (int r = 0; ctx->gathered_now && r < ctx->mesh->world_size; r++) {
		ctx->gathered_now[r] +=
			sign * tps_tensor_numel(&p->value.locals[r]) *
			tps_dtype_size(ctx->dtypes.of[TPS_ROLE_PARAMS]);
		if (ctx->gathered_now[r] > ctx->gathered_peak[r]) {
			ctx->gathered_peak[r] = ctx->gathered_now[r];
		}
	}
}

static enum tps_status gather(const struct tps_nn_context *ctx,
			      const struct tps_module *m, struct tps_param *p,
			      const char *note, struct tps_error *err)
{
	struct tps_dtensor full = {0};
	struct tps_comm_report report;
	struct tps_event ev = {0};
	enum tps_status st;

	if (!p->fsdp_mask || gathered(p)) {
		return TPS_OK;
	}
	st = tps_dtensor_copy(&full, &p->value, err);
	if (st == TPS_OK) {
		st = tps_comm_all_gather(ctx->mesh, p->fsdp_mask, full.locals,
					 0, &report, err);
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&full);
		return st;
	}
	for (int i = 0; i < ctx->mesh->ndim; i++) {
		if (p->fsdp_mask & (1u << i)) {
			full.placements[i] = tps_placement_replicate();
		}
	}
	p->fsdp_shard = p->value;
	p->value = full;
	count_gathered(ctx, p, 1);
	ev.step = ctx->step;
	ev.phase = ctx->phase;
	ev.kind = TPS_EVENT_COLLECTIVE;
	ev.module = m->spec->name;
	ev.op = tps_comm_op_name(TPS_COMM_ALL_GATHER);
	ev.tensor = p->name;
	ev.mask = p->fsdp_mask;
	ev.bytes_per_rank = report.bytes_per_rank;
	ev.note = note;
	ev.value = &p->value;
	ev.dtype = ctx->dtypes.of[TPS_ROLE_PARAMS];
	return tps_event_emit(ctx->sink, &ev, err);
}

/* Frees the gathered parameter: each rank keeps its shard. */
static void reshard(const struct tps_nn_context *ctx, struct tps_param *p)
{
	if (gathered(p)) {
		count_gathered(ctx, p, -1);
		tps_dtensor_free(&p->value);
		p->value = p->fsdp_shard;
		memset(&p->fsdp_shard, 0, sizeof p->fsdp_shard);
	}
}

/* The gradient's average over dp, scattered: each rank keeps its
 * shard's rows. */
static enum tps_status reduce_scatter_grad(const struct tps_nn_context *ctx,
					   const struct tps_module *m,
					   struct tps_param *p,
					   struct tps_error *err)
{
	struct tps_comm_report report;
	struct tps_event ev = {0};
	char name[TPS_NAME_MAX + 16];
	struct tps_comm_dtypes dt = {ctx->dtypes.of[TPS_ROLE_REDUCE],
				     ctx->dtypes.of[TPS_ROLE_GRADS]};
	enum tps_status st;
	if (!p->fsdp_mask || !p->grad.locals) {
		return TPS_OK;
	}
	st = tps_comm_reduce_scatter(ctx->mesh, p->fsdp_mask, p->grad.locals,
				     TPS_REDUCE_AVG, dt, 0, &report, err);
	if (st != TPS_OK) {
		return st;
	}
	/* The shard's placements: the parameter's between uses. */
	memcpy(p->grad.placements, p->value.placements,
	       sizeof p->grad.placements);
	snprintf(name, sizeof name, "%s.grad", p->name);
	ev.step = ctx->step;
	ev.phase = ctx->phase;
	ev.kind = TPS_EVENT_COLLECTIVE;
	ev.module = m->spec->name;
	ev.op = tps_comm_op_name(TPS_COMM_REDUCE_SCATTER);
	ev.tensor = name;
	ev.mask = p->fsdp_mask;
	ev.bytes_per_rank = report.bytes_per_rank;
	ev.note = "FSDP reduce_scatters the gradient over dp (sum, then / dp) "
		  "after its module's backward: each rank keeps the average "
		  "of its shard's rows";
	ev.value = &p->grad;
	ev.dtype = dt.store;
	return tps_event_emit(ctx->sink, &ev, err);
}

enum tps_status tps_nn_module_forward(const struct tps_nn_context *ctx,
				      struct tps_module *m,
				      struct tps_dtensor *x,
				      struct tps_dtensor *y,
				      struct tps_error *err)
{
	/* A forward in the backward phase is a recompute ("recompute"),
	 * which runs just before the module's backward: as FSDP2 does
	 * (no reshard after a forward in its PRE_BACKWARD state), the
	 * parameter stays gathered for that backward, one gather for both. */
	bool recomputing = ctx->phase == TPS_PHASE_BACKWARD;
	const char *note =
		recomputing ? "FSDP gathers the parameter over dp again for "
			      "its module's recomputed forward, and keeps it "
			      "for the backward that follows"
			    : "FSDP gathers the parameter over dp before its "
			      "module's forward";
	enum tps_status st = TPS_OK;
	for (int k = 0; k < m->n_params && st == TPS_OK; k++) {
		st = gather(ctx, m, &m->params[k], note, err);
	}
	if (st == TPS_OK) {
		st = m->ops->forward(ctx, m, x, y, err);
	}
	/* Kept gathered until backward when it does not reshard, when it
	 * was a recompute, or when it failed (the model frees it). */
	for (int k = 0; st == TPS_OK && !recomputing && k < m->n_params; k++) {
		if (m->params[k].fsdp_reshard) {
			reshard(ctx, &m->params[k]);
		}
	}
	return st;
}

enum tps_status tps_nn_module_backward(const struct tps_nn_context *ctx,
				       struct tps_module *m,
				       struct tps_dtensor *dy,
				       struct tps_dtensor *dx,
				       struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	for (int k = 0; k < m->n_params && st == TPS_OK; k++) {
		st = gather(ctx, m, &m->params[k],
			    "FSDP gathers the parameter over dp again before "
			    "its module's backward (reshard_after_forward "
			    "freed it)",
			    err);
	}
	if (st == TPS_OK) {
		st = m->ops->backward(ctx, m, dy, dx, err);
	} else {
		tps_dtensor_free(dy);
		tps_module_free_saved(m);
	}
	for (int k = 0; st == TPS_OK && k < m->n_params; k++) {
		reshard(ctx, &m->params[k]);
		st = reduce_scatter_grad(ctx, m, &m->params[k], err);
	}
	return st;
}
