/*
 * The steps on every simulated rank: forward, loss, backward, optimizer
 * (see model.h). Every local computation, split and collective is an event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "comm.h"
#include "model.h"
#include "model_internal.h"
#include "optim.h"

struct tps_nn_context tps_step_context(const struct tps_model *model,
				       struct tps_event_sink sink, int step,
				       enum tps_phase phase)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_nn_context ctx = {.mesh = &spec->mesh,
				     .tp_dim = spec->tp_dim,
				     .sink = sink,
				     .step = step,
				     .phase = phase,
				     .dtypes = spec->dtypes,
				     .sp_save = spec->sp_save,
				     .recompute = spec->recompute,
				     .gathered_now = model->gathered_bytes,
				     .gathered_peak =
					     model->gathered_peak_bytes};
	ctx.save = spec->mode == TPS_MODE_TRAINING;
	/* One mistake at a time (config.c): the lowest set bit. */
	for (int m = 0; tps_mistake_names[m]; m++) {
		if (spec->inject & TPS_MISTAKE_BIT(m)) {
			ctx.mistake = (enum tps_mistake)m;
			ctx.mistake_site = &spec->modules[tps_mistake_site(
				spec, ctx.mistake)];
			break;
		}
	}
	return ctx;
}

/* out = t with its rows (dim 0) reordered: out row p is t row order[p], or,
 * with inverse, out row order[p] is t row p. */
enum tps_status tps_step_permute_rows(const struct tps_tensor *t,
				      const int64_t *order, bool inverse,
				      struct tps_tensor *out,
				      struct tps_error *err)
{
	int64_t rows = t->shape.dim[0];
	int64_t inner = rows ? tps_tensor_numel(t) / rows : 0;
	enum tps_status st = tps_tensor_init_like(out, &t->shape, t, err);
	for (int64_t p = 0; st == TPS_OK && out->data && p < rows; p++) {
		int64_t to = inverse ? order[p] : p;
		int64_t from = inverse ? p : order[p];
		memcpy(out->data + to * inner, t->data + from * inner,
		       (size_t)inner * sizeof(float));
	}
	return st;
}

/* The global batch as the dp ranks take it: a copy, in the sampler's row
 * order. */
static enum tps_status sampled(const struct tps_model *model,
			       const struct tps_tensor *t,
			       struct tps_tensor *out, struct tps_error *err)
{
	if (model->spec->sampler == TPS_SAMPLER_DISTRIBUTED) {
		return tps_step_permute_rows(t, model->sample_order, false, out,
					     err);
	}
	return tps_tensor_copy(out, t, err);
}

/* A batch-major dtensor assembled and put back in the batch's row order. */
static enum tps_status assembled(const struct tps_model *model,
				 const struct tps_dtensor *x,
				 struct tps_tensor *out, struct tps_error *err)
{
	struct tps_tensor full = {0};
	/* An outcome: process 0's to read (backend.h). */
	enum tps_status st = tps_dtensor_full_tensor_on_writer(x, &full, err);
	if (st != TPS_OK || model->spec->sampler != TPS_SAMPLER_DISTRIBUTED) {
		*out = full;
		return st;
	}
	st = tps_step_permute_rows(&full, model->sample_order, true, out, err);
	tps_tensor_free(&full);
	return st;
}

struct zero_job {
	struct tps_dtensor *x;
	unsigned tp_mask;
};

static enum tps_status zero_off_root(void *opaque, int r, struct tps_error *err)
{
	const struct zero_job *job = opaque;
	(void)err;
	if (tps_mesh_local_rank(job->x->mesh, job->tp_mask, r) != 0) {
		tps_tensor_scale(&job->x->locals[r], 0.0f);
	}
	return TPS_OK;
}

/* Seed 004's script: each tp group's root loads the batch, the others
 * hold torch.empty until the broadcast. */
enum tps_status
tps_step_broadcast_from_tp_root(const struct tps_nn_context *ctx,
				struct tps_dtensor *x, struct tps_error *err)
{
	struct zero_job job = {x, 1u << ctx->tp_dim};
	struct tps_comm_report report;
	struct tps_event ev = {0};
	enum tps_status st;

	if (ctx->mesh->shape[ctx->tp_dim] == 1) {
		return TPS_OK;
	}
	st = tps_mesh_for_each_rank(ctx->mesh, zero_off_root, &job, err);
	if (st == TPS_OK) {
		st = tps_comm_broadcast(ctx->mesh, job.tp_mask, x->locals, 0,
					&report, err);
	}
	if (st != TPS_OK) {
		return st;
	}
	ev.step = ctx->step;
	ev.phase = ctx->phase;
	ev.kind = TPS_EVENT_COLLECTIVE;
	ev.module = "input";
	ev.op = "broadcast";
	ev.tensor = "input";
	ev.mask = job.tp_mask;
	ev.bytes_per_rank = report.bytes_per_rank;
	ev.note = "each tp group's root loads the batch and broadcasts it "
		  "once; every step reuses it (loaded_on tp_root, as seed "
		  "004's script does)";
	ev.value = x;
	return tps_event_emit(ctx->sink, &ev, err);
}

/* The event of the batch's split over the flattened dp group (dp_mask):
 * one layout event, as redistribute's steps are one mesh dim each. */
static enum tps_status emit_flat_split(const struct tps_nn_context *ctx,
				       unsigned dp_mask,
				       const struct tps_dtensor *x,
				       const char *module, const char *tensor,
				       const char *note, struct tps_error *err)
{
	struct tps_event ev = {0};
	ev.step = ctx->step;
	ev.phase = ctx->phase;
	ev.kind = TPS_EVENT_LAYOUT;
	ev.module = module;
	ev.op = "split";
	ev.tensor = tensor;
	ev.mask = dp_mask;
	ev.note = note;
	ev.value = x;
	return tps_event_emit(ctx->sink, &ev, err);
}

/* A global batch-major tensor on every rank: each dp rank's part of it,
 * as the sampler says. Over several dp dims, one split over their
 * flattened group (shard(0,flat) on each: one event); with
 * chunk_of_chunks, or over one dp dim, a shard(0) on each dp dim, the
 * whole batch distributed and then split dim by dim (one event each). */
enum tps_status tps_step_distribute_batch(
	const struct tps_nn_context *ctx, const struct tps_model *model,
	const struct tps_tensor *global, const char *module, const char *tensor,
	struct tps_dtensor *x, struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_placement p[TPS_MAX_MESH_DIMS];
	bool flat = tps_dp_split_flat(spec);
	const char *note = spec->sampler == TPS_SAMPLER_DISTRIBUTED
				   ? "DistributedSampler (shuffle=False): dp "
				     "rank r takes samples r, r + dp, r + 2 "
				     "dp, ..."
			   : flat ? "each dp rank takes its chunk of the "
				    "batch, one chunk over the flattened dp "
				    "group"
				  : "each dp rank takes its chunk of the "
				    "batch";
	enum tps_status st;
	for (int i = 0; i < spec->mesh.ndim; i++) {
		p[i] = flat && (spec->dp_mask & (1u << i))
			       ? tps_placement_shard_flat(0)
			       : tps_placement_replicate();
	}
	st = tps_dtensor_distribute(x, &spec->mesh, global, p, err);
	if (st != TPS_OK || !spec->dp_mask) {
		return st;
	}
	if (flat) {
		st = emit_flat_split(ctx, spec->dp_mask, x, module, tensor,
				     note, err);
	} else {
		for (int i = 0; i < spec->mesh.ndim; i++) {
			if (spec->dp_mask & (1u << i)) {
				p[i] = tps_placement_shard(0);
			}
		}
		st = tps_nn_redistribute(ctx, x, p, module, tensor, note, err);
	}
	if (st != TPS_OK) {
		tps_dtensor_free(x);
	}
	return st;
}

/* ---- activation recompute ("recompute": "full") ----------------------
 *
 * The model's top-level modules run in chunks: each transformer_block's
 * (block_span top-level modules: its two residuals), and the runs of
 * other modules between them. With "full", forward runs a block without
 * saving, and keeps only its input (in its first module's saved_in, so
 * that the footprint counts it); backward runs the block's forward again,
 * saving, its events marked "recompute", then the block's backward
 * (Korthikanti et al. 2022, section 5; docs/symbolic.md). The other
 * chunks save as usual. Without "full" the whole model is one chunk.
 */

/* The end of the chunk that starts at m, at most `end`; *recompute:
 * whether it is a block that "full" runs again (the config keeps a block
 * within one pipeline stage). */
static struct tps_module *chunk_end(const struct tps_model *model,
				    struct tps_module *m,
				    struct tps_module *end, bool *recompute)
{
	const struct tps_model_spec *spec = model->spec;
	bool full = spec->mode == TPS_MODE_TRAINING &&
		    spec->recompute == TPS_RECOMPUTE_FULL;
	*recompute = full && m->spec->block_span > 0;
	if (*recompute) {
		int span = m->spec->block_span;
		for (int i = 0; i < span && m < end; i++) {
			m = tps_module_next(m);
		}
		return m;
	}
	while (m < end && !(full && m->spec->block_span > 0)) {
		m = tps_module_next(m);
	}
	return m;
}

enum tps_status
tps_step_forward_range(const struct tps_nn_context *ctx,
		       struct tps_model *model, struct tps_module *begin,
		       struct tps_module *end, struct tps_dtensor *x,
		       struct tps_dtensor *y, struct tps_error *err)
{
	struct tps_dtensor cur = *x;
	enum tps_status st = TPS_OK;
	memset(x, 0, sizeof *x);
	for (struct tps_module *a = begin; a < end && st == TPS_OK;) {
		bool again;
		struct tps_module *b = chunk_end(model, a, end, &again);
		struct tps_nn_context c = *ctx;
		struct tps_dtensor kept = {0}, out = {0};
		if (again && ctx->save) {
			c.save = false;
			st = tps_dtensor_copy(&kept, &cur, err);
		}
		if (st == TPS_OK) {
			st = tps_nn_forward_seq(&c, a, b, &cur, &out, err);
		}
		if (st == TPS_OK && kept.locals) {
			tps_dtensor_free(&a->saved_in);
			a->saved_in = kept;
			memset(&kept, 0, sizeof kept);
		}
		tps_dtensor_free(&kept);
		tps_dtensor_free(&cur);
		cur = out;
		a = b;
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&cur);
		return st;
	}
	*y = cur;
	return TPS_OK;
}

enum tps_status tps_step_output(const struct tps_nn_context *ctx,
				struct tps_model *model, struct tps_dtensor *x,
				struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	tps_layout_chain_start(&model->output_chain, ctx, x);
	/* loss_parallel keeps the logits sharded over their classes. */
	if (spec->loss_parallel && spec->mode == TPS_MODE_TRAINING) {
		return TPS_OK;
	}
	return tps_nn_to_layout_chained(ctx, x, tps_placement_replicate(),
					&model->output_chain, "output",
					"output",
					"the model output is "
					"materialised in full",
					err);
}

/* Forward on every rank: *y is the output, replicated over tp. */
static enum tps_status forward(struct tps_model *model,
			       const struct tps_tensor *input,
			       struct tps_event_sink sink, int step,
			       struct tps_dtensor *y, struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_nn_context ctx =
		tps_step_context(model, sink, step, TPS_PHASE_FORWARD);
	struct tps_dtensor x = {0};
	enum tps_status st = tps_step_distribute_batch(
		&ctx, model, input, "input", "input", &x, err);

	/* Every step reuses the batch: it is loaded and broadcast once,
	 * and each rank keeps what it received, as in seed 004's loop. */
	if (st == TPS_OK && spec->input_source == TPS_INPUT_TP_ROOT &&
	    step == 0) {
		st = tps_step_broadcast_from_tp_root(&ctx, &x, err);
	}
	if (st == TPS_OK) {
		struct tps_dtensor in = x;
		memset(&x, 0, sizeof x);
		st = tps_step_forward_range(&ctx, model, model->modules,
					    model->modules + spec->n_modules,
					    &in, &x, err);
	}
	if (st == TPS_OK) {
		st = tps_step_output(&ctx, model, &x, err);
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&x);
		return st;
	}
	*y = x;
	return TPS_OK;
}

/* ---- loss ------------------------------------------------------------ */

/* Each rank's loss and its gradient. loss_r = scale_r * sum of f over the
 * rank's local output; DDP averages the gradients over dp, so the run's
 * loss is the mean over dp of loss_r (see scale_of). */
struct loss_job {
	const struct tps_model *model;
	const struct tps_dtensor *y, *target;
	int64_t global_numel;
	double *values; /* per rank: loss_r */
	/* The microbatches y is one of (1 without a pipeline): the counts
	 * below are the whole batch's, m times the microbatch's, so that
	 * the gradients summed over the microbatches are the batch's. */
	int microbatches;
};

static double scale_of(const struct loss_job *job, int r)
{
	const struct tps_model_spec *spec = job->model->spec;
	const struct tps_tensor *y = &job->y->locals[r];
	double dp = job->model->dp;
	int64_t local = tps_tensor_numel(y);
	int64_t n = job->y->global.dim[job->y->global.ndim - 1];
	/* mse averages over elements, cross_entropy over rows (n classes
	 * each, whole on every rank but under loss_parallel), sum neither. */
	double m = job->microbatches;
	double global = spec->loss == TPS_LOSS_MSE ? m * job->global_numel
			: spec->loss == TPS_LOSS_CROSS_ENTROPY
				? m * (n ? job->global_numel / n : 0)
				: 1.0;
	double mine = spec->loss == TPS_LOSS_MSE ? m * local
		      : spec->loss == TPS_LOSS_CROSS_ENTROPY
			      ? m * tps_loss_rows(y)
			      : 1.0;
	switch (spec->dp_grad) {
	case TPS_DP_GRAD_GLOBAL:
		/* dp times the rank's share of the global-batch loss: the dp
		 * average of the gradients is then the global gradient. */
		return dp / global;
	case TPS_DP_GRAD_DDP:
		/* The rank's own loss, unscaled, as DDP has it. */
		return 1.0 / mine;
	}
	return 1.0;
}

/* A row_scale array of the rank's rows, all scale_of(r). A meta output
 * has no rows to weigh (the losses read none): one element, so that a
 * symbolic run costs nothing per row. */
static double *row_scales(const struct loss_job *job, int r,
			  struct tps_error *err)
{
	const struct tps_tensor *y = &job->y->locals[r];
	int64_t n = y->shape.dim[y->shape.ndim - 1];
	int64_t rows = n && !y->meta ? tps_tensor_numel(y) / n : 0;
	double s = scale_of(job, r);
	double *scale = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *scale);
	if (!scale) {
		tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	for (int64_t i = 0; i < rows; i++) {
		scale[i] = s;
	}
	return scale;
}

static enum tps_status loss_rank(void *opaque, int r, struct tps_tensor *out,
				 struct tps_error *err)
{
	struct loss_job *job = opaque;
	struct tps_shape scalar = tps_shape_make(0, NULL);
	double *scale = row_scales(job, r, err);
	enum tps_status st =
		scale ? tps_tensor_init_like(out, &scalar, &job->y->locals[r],
					     err)
		      : TPS_ERR_NOMEM;
	if (st == TPS_OK) {
		job->values[r] = tps_loss_value(
			job->model->spec->loss, &job->y->locals[r],
			job->target ? &job->target->locals[r] : NULL, scale,
			job->model->spec->classes);
	}
	if (st == TPS_OK && out->data) {
		out->data[0] = (float)job->values[r];
	}
	free(scale);
	return st;
}

static enum tps_status loss_grad_rank(void *opaque, int r,
				      struct tps_tensor *out,
				      struct tps_error *err)
{
	struct loss_job *job = opaque;
	double *scale = row_scales(job, r, err);
	enum tps_status st =
		scale ? tps_loss_grad(
				job->model->spec->loss, &job->y->locals[r],
				job->target ? &job->target->locals[r] : NULL,
				scale, job->model->spec->classes, out, err)
		      : TPS_ERR_NOMEM;
	free(scale);
	return st;
}

static const char *loss_note(const struct tps_model *model)
{
	const struct tps_model_spec *spec = model->spec;
	bool mse = spec->loss == TPS_LOSS_MSE;
	if (spec->loss == TPS_LOSS_CROSS_ENTROPY) {
		if (model->dp == 1) {
			return "the mean over the rows of logsumexp(y) - "
			       "y[target]";
		}
		return spec->dp_grad == TPS_DP_GRAD_GLOBAL
			       ? "each dp rank's sum over its rows of "
				 "logsumexp(y) - y[target], times dp / rows "
				 "of the global batch (dp_grad global); the "
				 "run's loss is the mean over dp"
			       : "each dp rank's own mean over its rows of "
				 "logsumexp(y) - y[target], as DDP has it "
				 "(dp_grad ddp)";
	}
	if (model->dp == 1) {
		return mse ? "the mean of (y - target)^2 over every element"
			   : "the sum of every output element";
	}
	if (spec->dp_grad == TPS_DP_GRAD_GLOBAL) {
		return mse ? "each dp rank's sum of (y - target)^2 times dp / "
			     "N (N: elements of the global batch): DDP's "
			     "average of the gradients is then the gradient "
			     "of the global-batch mean (dp_grad global); the "
			     "run's loss is the mean over dp"
			   : "each dp rank's sum of its outputs times dp: "
			     "DDP's average of the gradients is then the "
			     "gradient of the global sum (dp_grad global); "
			     "the run's loss is the mean over dp";
	}
	return mse ? "each dp rank's own mean over its part of the batch, "
		     "as DDP has it (dp_grad ddp): the step follows the mean "
		     "of the local losses, which is the run's loss"
		   : "each dp rank's own sum over its part of the batch, as "
		     "DDP has it (dp_grad ddp): the gradients are averaged, "
		     "so the step is 1/dp of the global sum's";
}

/* loss_parallel (nn.h): each rank's row weight is scale_of's; the loss
 * is partial over the dp dims. */
static enum tps_status
loss_parallel(const struct tps_nn_context *ctx, struct loss_job *job,
	      const struct tps_dtensor *t, struct tps_dtensor *value,
	      struct tps_dtensor *g, struct tps_error *err)
{
	int world = ctx->mesh->world_size;
	double *scale = malloc((size_t)world * sizeof *scale);
	enum tps_status st;
	if (!scale) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int r = 0; r < world; r++) {
		scale[r] = scale_of(job, r);
	}
	st = tps_nn_loss_parallel(ctx, job->y, t, scale,
				  job->model->spec->dp_mask,
				  job->model->spec->classes, value, job->values,
				  g, err);
	free(scale);
	return st;
}

enum tps_status tps_step_loss(struct tps_model *model,
			      const struct tps_dtensor *y,
			      const struct tps_tensor *target,
			      struct tps_event_sink sink, int step,
			      int microbatches, double *run_loss,
			      struct tps_dtensor *dy, struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_mesh *mesh = &spec->mesh;
	struct tps_nn_context ctx =
		tps_step_context(model, sink, step, TPS_PHASE_FORWARD);
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	struct tps_shape scalar = tps_shape_make(0, NULL);
	struct tps_dtensor t = {0}, value = {0}, g = {0};
	struct loss_job job = {model, y, NULL, 0, NULL, microbatches};
	unsigned others = ((1u << mesh->ndim) - 1) & ~spec->dp_mask;
	double total = 0.0;
	enum tps_status st = TPS_OK;

	/* The loss is computed in float32 whatever the activations' dtype,
	 * as mixed-precision training computes it (spec.h); its gradient,
	 * in the backward phase, is stored in the grads dtype. */
	ctx.dtypes.of[TPS_ROLE_ACTIVATIONS] = TPS_DTYPE_F32;

	job.global_numel = 1;
	for (int d = 0; d < y->global.ndim; d++) {
		job.global_numel *= y->global.dim[d];
	}
	job.values = calloc((size_t)mesh->world_size, sizeof *job.values);
	if (!job.values) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	if (target) {
		st = tps_step_distribute_batch(&ctx, model, target, "loss",
					       "target", &t, err);
		job.target = &t;
	}
	/* The losses sum over dp to dp times the run's loss: partial. */
	for (int i = 0; i < mesh->ndim; i++) {
		placements[i] = spec->dp_mask & (1u << i)
					? tps_placement_partial()
					: tps_placement_replicate();
	}
	if (st == TPS_OK && spec->loss_parallel) {
		st = loss_parallel(&ctx, &job, &t, &value, &g, err);
		goto done;
	}
	if (st == TPS_OK) {
		st = tps_dtensor_map(&value, mesh, &scalar, placements,
				     loss_rank, &job, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(&ctx, "loss",
					 tps_loss_names[spec->loss], "loss",
					 loss_note(model), &value, 0, err);
	}
	if (st == TPS_OK) {
		ctx.phase = TPS_PHASE_BACKWARD;
		st = tps_dtensor_map(&g, mesh, &y->global, y->placements,
				     loss_grad_rank, &job, err);
	}
	if (st == TPS_OK) {
		char op[32];
		snprintf(op, sizeof op, "%s_backward",
			 tps_loss_names[spec->loss]);
		st = tps_nn_emit_compute(
			&ctx, "loss", op, "output.grad",
			"d loss_r / dy, on each rank's part of "
			"the batch",
			&g, 0, err);
	}
done:
	if (st == TPS_OK) {
		/* Each process has its own ranks' (backend.h). */
		st = tps_backend_share(mesh, job.values, err);
	} else {
		st = tps_backend_agree(mesh, st, err);
	}
	/* One rank per dp rank: those at coordinate 0 off the dp dims. */
	for (int r = 0; st == TPS_OK && r < mesh->world_size; r++) {
		if (tps_mesh_local_rank(mesh, others, r) == 0) {
			total += job.values[r];
		}
	}
	tps_dtensor_free(&t);
	tps_dtensor_free(&value);
	free(job.values);
	if (st != TPS_OK) {
		tps_dtensor_free(&g);
		return st;
	}
	*run_loss = total / model->dp;
	*dy = g;
	return TPS_OK;
}

/* ---- backward -------------------------------------------------------- */

bool tps_step_trains_before(const struct tps_model *model,
			    const struct tps_module *m)
{
	for (const struct tps_module *p = model->modules; p < m; p++) {
		if (p->n_params > 0) {
			return true;
		}
	}
	return false;
}

enum tps_status
tps_step_backward_range(const struct tps_nn_context *ctx,
			struct tps_model *model, struct tps_module *begin,
			struct tps_module *end, struct tps_dtensor *g,
			struct tps_dtensor *dinput, struct tps_error *err)
{
	struct tps_module **starts = NULL;
	bool *again = NULL;
	int n = 0;
	enum tps_status st = TPS_OK;
	/* A forward again: saving, its events marked, its values stored in
	 * the activations' dtype although the phase is backward. */
	struct tps_nn_context rc = tps_nn_recompute_context(ctx);

	starts = malloc((size_t)(end - begin + 1) * sizeof *starts);
	again = malloc((size_t)(end - begin + 1) * sizeof *again);
	if (!starts || !again) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (struct tps_module *a = begin; st == TPS_OK && a < end; n++) {
		starts[n] = a;
		a = chunk_end(model, a, end, &again[n]);
	}
	if (st == TPS_OK) {
		starts[n] = end;
	}
	for (int k = n - 1; st == TPS_OK && k >= 0; k--) {
		struct tps_module *a = starts[k], *b = starts[k + 1];
		bool want = k > 0 ? tps_step_trains_before(model, a) || dinput
				  : dinput != NULL;
		struct tps_dtensor dx = {0};
		if (again[k]) {
			struct tps_dtensor in = a->saved_in, out = {0};
			memset(&a->saved_in, 0, sizeof a->saved_in);
			st = tps_nn_forward_seq(&rc, a, b, &in, &out, err);
			tps_dtensor_free(&out);
		}
		if (st == TPS_OK) {
			st = tps_nn_backward_seq(ctx, a, b, g,
						 want ? &dx : NULL, err);
		}
		if (st == TPS_OK && k > 0 && !want) {
			/* Nothing before it trains: the chunks before keep
			 * what they saved for nothing. */
			for (struct tps_module *m = begin; m < a; m++) {
				tps_module_free_saved(m);
			}
			break;
		}
		if (st == TPS_OK && k > 0) {
			*g = dx;
		} else if (st == TPS_OK && dinput) {
			*dinput = dx;
		} else {
			tps_dtensor_free(&dx);
		}
	}
	if (st != TPS_OK) {
		tps_dtensor_free(g);
		for (struct tps_module *m = begin; m < end; m++) {
			tps_module_free_saved(m);
		}
	}
	free(starts);
	free(again);
	return st;
}

static enum tps_status backward(struct tps_model *model, struct tps_dtensor *dy,
				struct tps_event_sink sink, int step,
				struct tps_dtensor *dinput,
				struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_nn_context ctx =
		tps_step_context(model, sink, step, TPS_PHASE_BACKWARD);
	struct tps_dtensor g = *dy;
	enum tps_status st;

	memset(dy, 0, sizeof *dy);
	st = tps_nn_grad_through(&ctx, &g, &model->output_chain, "output",
				 "output.grad", err);
	if (st != TPS_OK) {
		tps_dtensor_free(&g);
		for (int i = 0; i < spec->n_modules; i++) {
			tps_module_free_saved(&model->modules[i]);
		}
		return st;
	}
	return tps_step_backward_range(
		&ctx, model, model->modules, model->modules + spec->n_modules,
		&g, spec->input_requires_grad ? dinput : NULL, err);
}

/* ---- optimizer ------------------------------------------------------- */

/* DDP: the gradient averaged over the dp group, one all_reduce. */
static enum tps_status dp_average(const struct tps_nn_context *ctx,
				  const struct tps_model *model,
				  struct tps_param *p, struct tps_error *err)
{
	unsigned mask = model->spec->dp_mask;
	struct tps_comm_report report;
	struct tps_event ev = {0};
	char name[TPS_NAME_MAX + 16];
	/* A gradient, in the optimizer phase: summed in the reduce dtype
	 * and stored in the grads dtype. */
	struct tps_comm_dtypes dt = {ctx->dtypes.of[TPS_ROLE_REDUCE],
				     ctx->dtypes.of[TPS_ROLE_GRADS]};
	enum tps_status st =
		tps_comm_all_reduce(ctx->mesh, mask, p->grad.locals,
				    TPS_REDUCE_AVG, dt, &report, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int i = 0; i < ctx->mesh->ndim; i++) {
		if (mask & (1u << i)) {
			p->grad.placements[i] = tps_placement_replicate();
		}
	}
	snprintf(name, sizeof name, "%s.grad", p->name);
	ev.step = ctx->step;
	ev.phase = ctx->phase;
	ev.kind = TPS_EVENT_COLLECTIVE;
	ev.module = p->module;
	ev.op = tps_comm_op_name(TPS_COMM_ALL_REDUCE);
	ev.tensor = name;
	ev.mask = mask;
	ev.bytes_per_rank = report.bytes_per_rank;
	ev.note =
		model->spec->zero.stage
			? "ZeRO stage 1 averages the whole gradient over dp "
			  "(sum, then / dp), as DDP does; each rank then "
			  "updates only its shard"
			: "DDP averages the gradient over dp (sum, then / dp)";
	ev.value = &p->grad;
	ev.dtype = dt.store;
	return tps_event_emit(ctx->sink, &ev, err);
}

/* ---- ZeRO (docs/zero.md) ----------------------------------------------- */

/* The placements of a ZeRO shard of a tensor laid out as `like`: its own
 * on the tp dim (and any other), shard(0,local) on each dp dim (flat over
 * several): each rank's chunk of its tp-local tensor's dim 0. */
static void zero_placements(const struct tps_model_spec *spec,
			    const struct tps_dtensor *like,
			    struct tps_placement *out)
{
	bool flat = __builtin_popcount(spec->dp_mask) > 1;
	for (int i = 0; i < spec->mesh.ndim; i++) {
		out[i] = spec->dp_mask & (1u << i)
				 ? tps_placement_shard_local(0, flat)
				 : like->placements[i];
	}
}

/* Rank r's shard of a tp-local tensor t: rows [*start, *start + *rows)
 * of its dim 0, by the chunk rule over the flattened dp group. */
static void zero_rows(const struct tps_model *model, const struct tps_tensor *t,
		      int r, int64_t *start, int64_t *rows)
{
	const struct tps_model_spec *spec = model->spec;
	tps_chunk_range(t->shape.dim[0], model->dp,
			tps_mesh_local_rank(&spec->mesh, spec->dp_mask, r),
			start, rows);
}

/* Stage 2 and the distributed optimizer: the gradient averaged over dp
 * and scattered, each rank keeping the average of its shard's rows (the
 * sum in all_reduce's order: the DDP run's bits). */
static enum tps_status zero_reduce_scatter(const struct tps_nn_context *ctx,
					   const struct tps_model *model,
					   struct tps_param *p,
					   struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_comm_report report;
	struct tps_event ev = {0};
	char name[TPS_NAME_MAX + 16];
	struct tps_comm_dtypes dt = {ctx->dtypes.of[TPS_ROLE_REDUCE],
				     ctx->dtypes.of[TPS_ROLE_GRADS]};
	enum tps_status st = tps_comm_reduce_scatter(
		ctx->mesh, spec->dp_mask, p->grad.locals, TPS_REDUCE_AVG, dt, 0,
		&report, err);
	if (st != TPS_OK) {
		return st;
	}
	zero_placements(spec, &p->value, p->grad.placements);
	snprintf(name, sizeof name, "%s.grad", p->name);
	ev.step = ctx->step;
	ev.phase = ctx->phase;
	ev.kind = TPS_EVENT_COLLECTIVE;
	ev.module = p->module;
	ev.op = tps_comm_op_name(TPS_COMM_REDUCE_SCATTER);
	ev.tensor = name;
	ev.mask = spec->dp_mask;
	ev.bytes_per_rank = report.bytes_per_rank;
	ev.note = spec->zero.distributed_optimizer
			  ? "Megatron's distributed optimizer reduce_scatters "
			    "the gradient over dp (sum, then / dp) into its "
			    "full-size buffer: each rank keeps the average of "
			    "its shard's rows"
			  : "ZeRO stage 2 reduce_scatters the gradient over dp "
			    "(sum, then / dp): each rank keeps the average of "
			    "its shard's rows";
	ev.value = &p->grad;
	ev.dtype = dt.store;
	return tps_event_emit(ctx->sink, &ev, err);
}

/* Rank r's shard of like's tp-local tensor: zeroed (state), or a copy of
 * its rows (the master copy). */
struct shard_job {
	const struct tps_model *model;
	const struct tps_dtensor *like;
	bool copy;
};

static enum tps_status shard_rank(void *opaque, int r, struct tps_tensor *out,
				  struct tps_error *err)
{
	const struct shard_job *job = opaque;
	const struct tps_tensor *t = &job->like->locals[r];
	struct tps_shape shape = t->shape;
	int64_t start, rows;
	zero_rows(job->model, t, r, &start, &rows);
	if (job->copy) {
		return tps_tensor_narrow(out, t, 0, start, rows, err);
	}
	shape.dim[0] = rows;
	return tps_tensor_init_like(out, &shape, t, err);
}

static enum tps_status zero_shard_of(struct tps_dtensor *out,
				     const struct tps_model *model,
				     const struct tps_dtensor *like, bool copy,
				     struct tps_error *err)
{
	struct tps_placement pl[TPS_MAX_MESH_DIMS];
	struct shard_job job = {model, like, copy};
	zero_placements(model->spec, like, pl);
	return tps_dtensor_map(out, like->mesh, &like->global, pl, shard_rank,
			       &job, err);
}

enum tps_status tps_model_fsdp_shard(struct tps_model *model,
				     struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	enum tps_status st = TPS_OK;
	if (spec->mode != TPS_MODE_TRAINING || spec->zero.stage != 3 ||
	    model->dp < 2) {
		return TPS_OK;
	}
	for (int i = 0; i < model->n_params && st == TPS_OK; i++) {
		struct tps_param *p = &model->params[i];
		struct tps_dtensor shard = {0};
		st = zero_shard_of(&shard, model, &p->value, true, err);
		if (st == TPS_OK) {
			tps_dtensor_free(&p->value);
			p->value = shard;
			p->fsdp_mask = spec->dp_mask;
			p->fsdp_reshard = spec->zero.reshard_after_forward;
		}
	}
	return st;
}

/* After each rank updated its shard's rows of the parameter: every rank's
 * rows gathered over dp into its tp-local parameter. The update event
 * shows the shards, the all_gather the whole parameter. */
static enum tps_status zero_gather_params(const struct tps_nn_context *ctx,
					  const struct tps_model *model,
					  struct tps_param *p,
					  struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_comm_report report;
	struct tps_event ev = {0};
	struct tps_dtensor shards = {0};
	enum tps_status st =
		zero_shard_of(&shards, model, &p->value, true, err);
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(
			ctx, p->module,
			tps_optimizer_type_names[spec->optimizer.type], p->name,
			tps_optim_note(&spec->optimizer), &shards, 0, err);
	}
	if (st == TPS_OK) {
		st = tps_comm_all_gather(ctx->mesh, spec->dp_mask,
					 shards.locals, 0, &report, err);
	}
	for (int r = 0; st == TPS_OK && r < ctx->mesh->world_size; r++) {
		struct tps_tensor *t = &p->value.locals[r];
		if (t->data) {
			memcpy(t->data, shards.locals[r].data,
			       (size_t)tps_tensor_numel(t) * sizeof(float));
		}
	}
	tps_dtensor_free(&shards);
	if (st != TPS_OK) {
		return st;
	}
	ev.step = ctx->step;
	ev.phase = ctx->phase;
	ev.kind = TPS_EVENT_COLLECTIVE;
	ev.module = p->module;
	ev.op = tps_comm_op_name(TPS_COMM_ALL_GATHER);
	ev.tensor = p->name;
	ev.mask = spec->dp_mask;
	ev.bytes_per_rank = report.bytes_per_rank;
	ev.note = "ZeRO: each dp rank updated its shard; the all_gather gives "
		  "every rank the whole updated parameter";
	ev.value = &p->value;
	ev.dtype = spec->dtypes.of[TPS_ROLE_PARAMS];
	return tps_event_emit(ctx->sink, &ev, err);
}

struct update_job {
	const struct tps_optimizer_spec *opt;
	int64_t t;
	struct tps_param *p;
	int states;
	const struct tps_dtypes *dtypes;
	/* ZeRO: the model, when each rank updates only its shard's rows
	 * (its state and master copy are of the shard; its gradient too
	 * when grad_sharded); NULL: the whole tp-local tensor. */
	const struct tps_model *zero;
	bool grad_sharded;
};

static enum tps_status zero_like_rank(void *opaque, int r,
				      struct tps_tensor *out,
				      struct tps_error *err)
{
	const struct tps_dtensor *like = opaque;
	return tps_tensor_init_like(out, &like->locals[r].shape,
				    &like->locals[r], err);
}

static enum tps_status update_rank(void *opaque, int r, struct tps_error *err)
{
	const struct update_job *job = opaque;
	struct tps_param *p = job->p;
	float *state[2] = {NULL, NULL};
	(void)err;
	if (p->value.locals[r].meta) {
		return TPS_OK;
	}
	for (int k = 0; k < job->states; k++) {
		state[k] = p->state[k].locals[r].data;
	}
	if (job->zero) {
		/* The shard's rows of the parameter (and of the gradient,
		 * when all_reduce left it whole): a view. */
		struct tps_tensor view = p->value.locals[r];
		const float *grad = p->grad.locals[r].data;
		int64_t start, rows, inner;
		zero_rows(job->zero, &view, r, &start, &rows);
		inner = view.shape.dim[0]
				? tps_tensor_numel(&view) / view.shape.dim[0]
				: 0;
		view.shape.dim[0] = rows;
		view.data = rows ? view.data + start * inner : NULL;
		if (!job->grad_sharded && grad) {
			grad += start * inner;
		}
		if (rows) {
			tps_model_update(job->opt, job->t, job->dtypes, &view,
					 p->master.locals ? &p->master.locals[r]
							  : NULL,
					 grad, state);
		}
		return TPS_OK;
	}
	tps_model_update(job->opt, job->t, job->dtypes, &p->value.locals[r],
			 p->master.locals ? &p->master.locals[r] : NULL,
			 p->grad.locals[r].data, state);
	return TPS_OK;
}

static enum tps_status copy_rank(void *opaque, int r, struct tps_tensor *out,
				 struct tps_error *err)
{
	const struct tps_dtensor *x = opaque;
	return tps_tensor_copy(out, &x->locals[r], err);
}

enum tps_status tps_step_optimizer(struct tps_model *model,
				   struct tps_event_sink sink, int step,
				   struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_nn_context octx =
		tps_step_context(model, sink, step, TPS_PHASE_OPTIMIZER);
	struct update_job job = {&spec->optimizer,
				 step + 1,
				 NULL,
				 tps_optim_state_count(&spec->optimizer),
				 &spec->dtypes,
				 NULL,
				 false};
	bool master = spec->dtypes.of[TPS_ROLE_MASTER_PARAMS] !=
		      spec->dtypes.of[TPS_ROLE_PARAMS];
	/* ZeRO over a dp size of 1 shards nothing: DDP's step, which
	 * spends no collective either. Stage 3 (FSDP) holds the shards
	 * already, their gradients reduce_scattered in backward: each rank
	 * updates what it holds, as without ZeRO, and gathers nothing. */
	bool fsdp = spec->zero.stage == 3 && model->dp > 1;
	bool zero = spec->zero.stage > 0 && model->dp > 1 && !fsdp;
	enum tps_status st = TPS_OK;

	job.zero = zero ? model : NULL;
	job.grad_sharded = zero && (spec->zero.stage >= 2 ||
				    spec->zero.distributed_optimizer);
	for (int i = 0; i < model->n_params && st == TPS_OK; i++) {
		struct tps_param *p = &model->params[i];
		/* Under a pipeline, the ranks of the parameter's stage. */
		int vs = tps_model_param_virtual_stage(model, p);
		struct tps_nn_context ctx = octx;
		struct tps_stage_tag tag = {sink, {0, 0, -1, -1, 0, 0}};
		if (vs >= 0) {
			tag.info.stage = vs % spec->pipeline.p;
			tag.info.chunk = vs / spec->pipeline.p;
			ctx.sink = tps_stage_tag_sink(&tag);
		}
		if (job.grad_sharded) {
			st = zero_reduce_scatter(&ctx, model, p, err);
		} else if (model->dp > 1 && !fsdp) {
			st = dp_average(&ctx, model, p, err);
		}
		/* State is made at the first step, zeroed, shaped like the
		 * parameter on every rank (under ZeRO, like its shard). */
		for (int k = 0; k < job.states && st == TPS_OK; k++) {
			if (!p->state[k].locals) {
				st = zero ? zero_shard_of(&p->state[k], model,
							  &p->value, false, err)
					  : tps_dtensor_map(&p->state[k],
							    ctx.mesh,
							    &p->value.global,
							    p->value.placements,
							    zero_like_rank,
							    &p->value, err);
			}
		}
		/* The master copy, from the parameter at the first step. */
		if (st == TPS_OK && master && !p->master.locals) {
			st = zero ? zero_shard_of(&p->master, model, &p->value,
						  true, err)
				  : tps_dtensor_map(&p->master, ctx.mesh,
						    &p->value.global,
						    p->value.placements,
						    copy_rank, &p->value, err);
		}
		job.p = p;
		if (st == TPS_OK) {
			st = tps_mesh_for_each_rank(ctx.mesh, update_rank, &job,
						    err);
		}
		if (st == TPS_OK && zero) {
			st = zero_gather_params(&ctx, model, p, err);
		} else if (st == TPS_OK) {
			st = tps_nn_emit_compute(
				&ctx, p->module,
				tps_optimizer_type_names[spec->optimizer.type],
				p->name, tps_optim_note(&spec->optimizer),
				&p->value, 0, err);
		}
	}
	return st;
}

/* ---- the run --------------------------------------------------------- */

/* What forward left alive for backward (model.h): every module's saved
 * tensors, per rank and per module, and the output y (in the
 * activations' dtype). */
static void measure_saved(struct tps_model *model, const struct tps_dtensor *y)
{
	const struct tps_dtypes *dt = &model->spec->dtypes;
	int world = model->spec->mesh.world_size;
	int act = tps_dtype_size(dt->of[TPS_ROLE_ACTIVATIONS]);
	for (int r = 0; r < world; r++) {
		model->saved_bytes[r] = 0;
		model->output_bytes[r] =
			y->locals ? tps_tensor_numel(&y->locals[r]) * act : 0;
	}
	for (int i = 0; i < model->spec->n_modules; i++) {
		const struct tps_module *m = &model->modules[i];
		int64_t most = 0;
		for (int r = 0; r < world; r++) {
			int64_t b = tps_module_saved_bytes(m, dt, r);
			model->saved_bytes[r] += b;
			most = b > most ? b : most;
		}
		model->module_saved_bytes[i] = most;
	}
}

/* The parameters' gradients (and the input's) and values, assembled. */
static enum tps_status collect_training(const struct tps_model *model,
					const struct tps_dtensor *dinput,
					struct tps_model_outcome *out,
					struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	int n = model->n_params;
	for (int i = 0; i < n && st == TPS_OK; i++) {
		st = tps_dtensor_full_tensor_on_writer(&model->params[i].grad,
						       &out->grads[i], err);
		if (st == TPS_OK) {
			st = tps_dtensor_full_tensor_on_writer(
				&model->params[i].value, &out->params_after[i],
				err);
		}
	}
	if (st == TPS_OK && model->spec->input_requires_grad) {
		/* Each dp rank's input gradient is that of its own loss, as
		 * x.grad is under DDP; the run's loss is their mean, so its
		 * gradient is the assembled one over dp. */
		st = assembled(model, dinput, &out->grads[n], err);
		if (st == TPS_OK && model->dp > 1) {
			struct tps_tensor *g = &out->grads[n];
			tps_tensor_scale(g, 1.0f / (float)model->dp);
			/* A gradient: stored in the grads dtype. */
			if (g->data) {
				tps_dtype_round_array(
					g->data, tps_tensor_numel(g),
					model->spec->dtypes.of[TPS_ROLE_GRADS]);
			}
		}
	}
	return st;
}

static enum tps_status train_step(struct tps_model *model,
				  struct tps_dtensor *y,
				  const struct tps_tensor *target,
				  struct tps_event_sink sink, int step,
				  float *run_loss, struct tps_dtensor *dinput,
				  struct tps_error *err)
{
	struct tps_dtensor dy = {0};
	double value = 0.0;
	enum tps_status st = tps_step_loss(model, y, target, sink, step, 1,
					   &value, &dy, err);
	if (st == TPS_OK) {
		*run_loss = (float)value;
		tps_dtensor_free(dinput);
		st = backward(model, &dy, sink, step, dinput, err);
	}
	if (st == TPS_OK) {
		st = tps_step_optimizer(model, sink, step, err);
	}
	return st;
}

enum tps_status
tps_model_run(struct tps_model *model, const struct tps_tensor *input,
	      const struct tps_tensor *target, struct tps_event_sink sink,
	      struct tps_model_outcome *out, struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	bool training = spec->mode == TPS_MODE_TRAINING;
	int steps = training ? spec->steps : 1;
	struct tps_model_outcome o = {0};
	struct tps_tensor x = {0}, t = {0};
	struct tps_dtensor dinput = {0};
	enum tps_status st;

	if (model->n_virtual > 0) {
		return tps_model_run_pipeline(model, input, target, sink, out,
					      err);
	}
	st = tps_model_outcome_init(&o, model, err);

	if (st == TPS_OK) {
		st = sampled(model, input, &x, err);
	}
	if (st == TPS_OK && target) {
		st = sampled(model, target, &t, err);
	}
	for (int step = 0; step < steps && st == TPS_OK; step++) {
		struct tps_dtensor y = {0};
		/* The step's peak of gathered parameters starts from what is
		 * gathered now: nothing, as every step ends resharded. */
		memcpy(model->gathered_peak_bytes, model->gathered_bytes,
		       (size_t)spec->mesh.world_size *
			       sizeof *model->gathered_bytes);
		st = forward(model, &x, sink, step, &y, err);
		if (st == TPS_OK && training) {
			measure_saved(model, &y);
		}
		if (st == TPS_OK && step == steps - 1) {
			st = assembled(model, &y, &o.output, err);
		}
		if (st == TPS_OK && training) {
			st = train_step(model, &y, target ? &t : NULL, sink,
					step, &o.loss[step], &dinput, err);
		}
		tps_dtensor_free(&y);
	}
	if (st == TPS_OK && training) {
		st = collect_training(model, &dinput, &o, err);
	}
	tps_dtensor_free(&dinput);
	tps_tensor_free(&x);
	tps_tensor_free(&t);
	if (st != TPS_OK) {
		tps_model_outcome_free(&o);
		return st;
	}
	*out = o;
	return TPS_OK;
}

enum tps_status tps_model_plan_dropout(struct tps_model *model,
				       struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_model meta;
	struct tps_tensor input = {0};
	struct tps_dtensor x = {0}, y = {0};
	struct tps_nn_context ctx;
	struct tps_error e = {0};
	enum tps_status st = tps_model_init_meta(&meta, spec, err);
	if (st != TPS_OK) {
		return st;
	}
	ctx = tps_step_context(&meta, (struct tps_event_sink){0}, 0,
			       TPS_PHASE_FORWARD);
	ctx.mistake = 0;
	ctx.mistake_site = NULL;
	ctx.save = false;
	st = tps_tensor_init_meta(&input, &spec->input_shape, &e);
	if (st == TPS_OK) {
		st = tps_step_distribute_batch(&ctx, &meta, &input, "input",
					       "input", &x, &e);
	}
	if (st == TPS_OK) {
		st = tps_nn_forward_seq(&ctx, meta.modules,
					meta.modules + spec->n_modules, &x, &y,
					&e);
	}
	/* Out of memory is this step's failure; any other is the real
	 * run's too, reported there: the dropouts it did not reach stay
	 * unknown. */
	if (st == TPS_ERR_NOMEM) {
		if (err) {
			*err = e;
		}
		tps_tensor_free(&input);
		tps_model_free(&meta);
		return st;
	}
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_dropout_state *d = &meta.modules[i].dropout;
		if (d->known) {
			model->modules[i].dropout.known = true;
			model->modules[i].dropout.tp = d->tp;
			model->modules[i].dropout.tp_size = d->tp_size;
		}
	}
	tps_dtensor_free(&x);
	tps_dtensor_free(&y);
	tps_tensor_free(&input);
	tps_model_free(&meta);
	return TPS_OK;
}

enum tps_status tps_model_forward(struct tps_model *model,
				  const struct tps_tensor *input,
				  struct tps_event_sink sink, int step,
				  struct tps_tensor *output,
				  struct tps_error *err)
{
	struct tps_tensor x = {0};
	struct tps_dtensor y = {0};
	enum tps_status st = sampled(model, input, &x, err);
	if (st == TPS_OK) {
		st = forward(model, &x, sink, step, &y, err);
	}
	if (st == TPS_OK) {
		st = assembled(model, &y, output, err);
	}
	tps_dtensor_free(&y);
	tps_tensor_free(&x);
	return st;
}
