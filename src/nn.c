#include "tpsim/nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum tps_status emit(const struct tps_nn_context *ctx,
			    struct tps_event *ev, struct tps_error *err)
{
	ev->step = ctx->step;
	ev->phase = ctx->phase;
	return tps_event_emit(ctx->sink, ev, err);
}

static enum tps_status emit_compute(const struct tps_nn_context *ctx,
				    const char *module, const char *op,
				    const char *tensor, const char *note,
				    const struct tps_dtensor *value,
				    struct tps_error *err)
{
	struct tps_event ev = {0};
	ev.module = module;
	ev.kind = TPS_EVENT_COMPUTE;
	ev.op = op;
	ev.tensor = tensor;
	ev.note = note;
	ev.value = value;
	return emit(ctx, &ev, err);
}

struct layout_observer {
	const struct tps_nn_context *ctx;
	const char *module, *tensor, *note;
	bool sink_failed; /* the sink's message is complete: no prefix */
};

/* Turns each redistribution step into one event. */
static enum tps_status on_step(void *opaque,
			       const struct tps_redistribute_step *s,
			       const struct tps_dtensor *dt,
			       struct tps_error *err)
{
	struct layout_observer *o = opaque;
	struct tps_event ev = {0};
	bool split = s->kind == TPS_REDISTRIBUTE_SPLIT;
	enum tps_status st;
	ev.module = o->module;
	ev.kind = split ? TPS_EVENT_LAYOUT : TPS_EVENT_COLLECTIVE;
	ev.op = split ? "split" : tps_comm_op_name(s->report.op);
	ev.tensor = o->tensor;
	ev.mask = 1u << s->mesh_dim;
	ev.bytes_per_rank = split ? 0 : s->report.bytes_per_rank;
	ev.note = o->note;
	ev.value = dt;
	st = emit(o->ctx, &ev, err);
	o->sink_failed = st != TPS_OK;
	return st;
}

static struct tps_placement normalized(struct tps_placement p, int ndim)
{
	if (p.kind == TPS_PLACEMENT_SHARD) {
		p.dim = tps_dim_normalize(p.dim, ndim);
	}
	return p;
}

enum tps_status tps_nn_redistribute(const struct tps_nn_context *ctx,
				    struct tps_dtensor *x,
				    const struct tps_placement *target,
				    const char *module, const char *tensor,
				    const char *note, struct tps_error *err)
{
	struct layout_observer o = {ctx, module, tensor, note, false};
	enum tps_status st =
		tps_dtensor_redistribute(x, target, on_step, &o, err);
	/* dtensor's own messages lack the place; the sink's name it. */
	if (st != TPS_OK && !o.sink_failed) {
		tps_error_prefix(err, "%s: %s", module, tensor);
	}
	return st;
}

enum tps_status tps_nn_to_layout(const struct tps_nn_context *ctx,
				 struct tps_dtensor *x,
				 struct tps_placement tp_target,
				 const char *module, const char *tensor,
				 const char *note, struct tps_error *err)
{
	struct tps_placement target[TPS_MAX_MESH_DIMS];

	tp_target = normalized(tp_target, x->global.ndim);
	if (tp_target.kind == TPS_PLACEMENT_SHARD && tp_target.dim < 0) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"%s: %s is %d-dim, it has no dim for this shard",
			module, tensor, x->global.ndim);
	}
	if (tps_placement_equal(x->placements[ctx->tp_dim], tp_target)) {
		return TPS_OK;
	}
	for (int i = 0; i < ctx->mesh->ndim; i++) {
		target[i] = x->placements[i];
	}
	target[ctx->tp_dim] = tp_target;
	return tps_nn_redistribute(ctx, x, target, module, tensor, note, err);
}

/* y's locals = x's locals W_r^T on every rank; y gets x's placements with
 * the tp one replaced by tp_out. */
static enum tps_status
local_matmul(const struct tps_nn_context *ctx, const struct tps_linear *layer,
	     const struct tps_dtensor *x, struct tps_placement tp_out,
	     struct tps_dtensor *y, struct tps_error *err)
{
	const struct tps_mesh *mesh = ctx->mesh;
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	struct tps_tensor *locals;
	struct tps_shape global = x->global;
	enum tps_status st = TPS_OK;

	global.dim[global.ndim - 1] = layer->weight.global.dim[0];
	locals = calloc((size_t)mesh->world_size, sizeof *locals);
	if (!locals) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int r = 0; r < mesh->world_size && st == TPS_OK; r++) {
		st = tps_tensor_linear(&locals[r], &x->locals[r],
				       &layer->weight.locals[r], NULL, err);
		if (st != TPS_OK) {
			tps_error_prefix(err, "%s %s on rank %d",
					 tps_style_names[layer->style],
					 layer->name, r);
		}
	}
	for (int i = 0; i < mesh->ndim; i++) {
		placements[i] = x->placements[i];
	}
	placements[ctx->tp_dim] = normalized(tp_out, global.ndim);
	tps_dtensor_wrap(y, mesh, &global, placements, locals);
	if (st != TPS_OK) {
		tps_dtensor_free(y);
	}
	return st;
}

/*
 * Adds the bias to every rank whose `adds` flag is set: the slice of the
 * rank's local bias that lines up with its output's last-dim region (the
 * whole local bias for colwise shards), divided by `divisor`.
 */
static enum tps_status add_bias(const struct tps_nn_context *ctx,
				const struct tps_linear *layer,
				struct tps_dtensor *y, bool only_local_rank0,
				float divisor, bool bias_is_sharded,
				struct tps_error *err)
{
	const struct tps_mesh *mesh = ctx->mesh;
	unsigned tp_mask = 1u << ctx->tp_dim;
	int last = y->global.ndim - 1;
	enum tps_status st = TPS_OK;

	for (int r = 0; r < mesh->world_size && st == TPS_OK; r++) {
		int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
		struct tps_tensor slice = {0};
		const struct tps_tensor *b = &layer->bias.locals[r];
		if (only_local_rank0 &&
		    tps_mesh_local_rank(mesh, tp_mask, r) != 0) {
			continue;
		}
		if (!bias_is_sharded) {
			tps_dtensor_local_region(mesh, &y->global,
						 y->placements, r, offset,
						 length);
			st = tps_tensor_narrow(&slice, b, 0, offset[last],
					       length[last], err);
			b = &slice;
		} else {
			st = tps_tensor_copy(&slice, b, err);
			b = &slice;
		}
		if (st == TPS_OK && divisor != 1.0f) {
			int64_t n = tps_tensor_numel(&slice);
			for (int64_t e = 0; e < n; e++) {
				slice.data[e] /= divisor;
			}
		}
		if (st == TPS_OK) {
			tps_tensor_add_bias(&y->locals[r], b, 1.0f);
		}
		tps_tensor_free(&slice);
	}
	return st;
}

static enum tps_status
colwise_forward(const struct tps_nn_context *ctx,
		const struct tps_linear *layer, struct tps_dtensor *x,
		struct tps_dtensor *y, const char *in_name,
		const char *out_name, struct tps_error *err)
{
	struct tps_dtensor out = {0};
	enum tps_status st;

	/* Sequence parallel: the declared shard(seq) input is all-gathered. */
	st = tps_nn_to_layout(ctx, x, layer->input, layer->name, in_name, NULL,
			      err);
	if (st == TPS_OK) {
		st = tps_nn_to_layout(
			ctx, x, tps_placement_replicate(), layer->name, in_name,
			"colwise computes on the full input", err);
	}
	if (st == TPS_OK) {
		st = local_matmul(ctx, layer, x, tps_placement_shard(-1), &out,
				  err);
	}
	if (st != TPS_OK) {
		return st;
	}
	st = emit_compute(ctx, layer->name, "matmul", out_name,
			  "y_i = x W_i^T: each rank computes its slice of the "
			  "output features",
			  &out, err);
	if (st == TPS_OK && layer->has_bias) {
		st = add_bias(ctx, layer, &out, false, 1.0f, true, err);
		if (st == TPS_OK) {
			st = emit_compute(ctx, layer->name, "add_bias",
					  out_name,
					  "each rank adds its own bias shard "
					  "b_i",
					  &out, err);
		}
	}
	if (st == TPS_OK) {
		st = tps_nn_to_layout(ctx, &out, layer->output, layer->name,
				      out_name, NULL, err);
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&out);
		return st;
	}
	*y = out;
	return TPS_OK;
}

static enum tps_status
rowwise_forward(const struct tps_nn_context *ctx,
		const struct tps_linear *layer, struct tps_dtensor *x,
		struct tps_dtensor *y, const char *in_name,
		const char *out_name, struct tps_error *err)
{
	struct tps_dtensor out = {0};
	int n = ctx->mesh->shape[ctx->tp_dim];
	bool bias_before =
		layer->has_bias && layer->bias_mode != TPS_BIAS_AFTER_REDUCE;
	enum tps_status st;

	st = tps_nn_to_layout(ctx, x, layer->input, layer->name, in_name, NULL,
			      err);
	if (st == TPS_OK) {
		st = tps_nn_to_layout(ctx, x, tps_placement_shard(-1),
				      layer->name, in_name,
				      "rowwise takes the input features split "
				      "like its weight's columns",
				      err);
	}
	if (st == TPS_OK) {
		st = local_matmul(ctx, layer, x, tps_placement_partial(), &out,
				  err);
	}
	if (st != TPS_OK) {
		return st;
	}
	st = emit_compute(ctx, layer->name, "matmul", out_name,
			  "y_i = x_i W_i^T: partial sums, y = sum_i y_i", &out,
			  err);
	if (st == TPS_OK && bias_before) {
		bool rank0 = layer->bias_mode == TPS_BIAS_RANK0;
		char note[128];
		if (rank0) {
			snprintf(note, sizeof note,
				 "bias added once, by local "
				 "rank 0, before the reduction (rank0)");
		} else {
			snprintf(note, sizeof note,
				 "each of the %d ranks adds "
				 "b/%d before the reduction (partial_split)",
				 n, n);
		}
		st = add_bias(ctx, layer, &out, rank0, rank0 ? 1.0f : (float)n,
			      false, err);
		if (st == TPS_OK) {
			st = emit_compute(ctx, layer->name, "add_bias",
					  out_name, note, &out, err);
		}
	}
	if (st == TPS_OK) {
		st = tps_nn_to_layout(ctx, &out, layer->output, layer->name,
				      out_name, NULL, err);
	}
	if (st == TPS_OK && layer->has_bias && !bias_before) {
		st = add_bias(ctx, layer, &out, false, 1.0f, false, err);
		if (st == TPS_OK) {
			st = emit_compute(ctx, layer->name, "add_bias",
					  out_name,
					  "bias added once, after the "
					  "reduction (after_reduce)",
					  &out, err);
		}
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&out);
		return st;
	}
	*y = out;
	return TPS_OK;
}

static enum tps_status
replicated_forward(const struct tps_nn_context *ctx,
		   const struct tps_linear *layer, struct tps_dtensor *x,
		   struct tps_dtensor *y, const char *in_name,
		   const char *out_name, struct tps_error *err)
{
	struct tps_dtensor out = {0};
	enum tps_status st;

	st = tps_nn_to_layout(ctx, x, tps_placement_replicate(), layer->name,
			      in_name,
			      "a replicated module needs its whole "
			      "input on every rank",
			      err);
	if (st == TPS_OK) {
		st = local_matmul(ctx, layer, x, tps_placement_replicate(),
				  &out, err);
	}
	if (st != TPS_OK) {
		return st;
	}
	st = emit_compute(ctx, layer->name, "matmul", out_name,
			  "every rank computes the whole layer", &out, err);
	if (st == TPS_OK && layer->has_bias) {
		st = add_bias(ctx, layer, &out, false, 1.0f, false, err);
		if (st == TPS_OK) {
			st = emit_compute(ctx, layer->name, "add_bias",
					  out_name, NULL, &out, err);
		}
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&out);
		return st;
	}
	*y = out;
	return TPS_OK;
}

enum tps_status tps_nn_linear_forward(const struct tps_nn_context *ctx,
				      const struct tps_linear *layer,
				      struct tps_dtensor *x,
				      struct tps_dtensor *y,
				      struct tps_error *err)
{
	char in_name[160], out_name[160];
	snprintf(in_name, sizeof in_name, "%s.in", layer->name);
	snprintf(out_name, sizeof out_name, "%s.out", layer->name);
	switch (layer->style) {
	case TPS_STYLE_COLWISE:
		return colwise_forward(ctx, layer, x, y, in_name, out_name,
				       err);
	case TPS_STYLE_ROWWISE:
		return rowwise_forward(ctx, layer, x, y, in_name, out_name,
				       err);
	case TPS_STYLE_REPLICATE: break;
	}
	return replicated_forward(ctx, layer, x, y, in_name, out_name, err);
}

enum tps_status tps_nn_activation_forward(const struct tps_nn_context *ctx,
					  enum tps_module_type type,
					  const char *name,
					  struct tps_dtensor *x,
					  struct tps_dtensor *y,
					  struct tps_error *err)
{
	const struct tps_mesh *mesh = ctx->mesh;
	struct tps_tensor *locals;
	char in_name[160], out_name[160];
	enum tps_status st = TPS_OK;

	snprintf(in_name, sizeof in_name, "%s.in", name);
	snprintf(out_name, sizeof out_name, "%s.out", name);
	if (x->placements[ctx->tp_dim].kind == TPS_PLACEMENT_PARTIAL) {
		st = tps_nn_to_layout(ctx, x, tps_placement_replicate(), name,
				      in_name,
				      "an activation of partial sums "
				      "is wrong: reduce first",
				      err);
		if (st != TPS_OK) {
			return st;
		}
	}
	locals = calloc((size_t)mesh->world_size, sizeof *locals);
	if (!locals) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int r = 0; r < mesh->world_size && st == TPS_OK; r++) {
		st = type == TPS_MODULE_GELU
			     ? tps_tensor_gelu(&locals[r], &x->locals[r], err)
			     : tps_tensor_relu(&locals[r], &x->locals[r], err);
	}
	tps_dtensor_wrap(y, mesh, &x->global, x->placements, locals);
	if (st == TPS_OK) {
		st = emit_compute(ctx, name, tps_module_type_names[type],
				  out_name,
				  "element-wise on each rank's local "
				  "values: the layout is kept",
				  y, err);
	}
	if (st != TPS_OK) {
		tps_dtensor_free(y);
	}
	return st;
}
