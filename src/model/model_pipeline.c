/*
 * Pipeline parallelism's training step (docs/pipeline.md).
 *
 * The model is cut into virtual stages (model.h: stage_begin), virtual
 * stage k = c p + s being chunk c of stage s, the ranks whose coordinate
 * on the pp dim is s. Each dp rank's part of the batch is cut in m
 * microbatches; each microbatch runs forward through the virtual stages
 * in order, then its loss on the last, scaled for the whole batch
 * (tps_step_loss), then backward through them in reverse; each
 * parameter's gradient is summed over the microbatches (in float32, as
 * Megatron's main_grad) before the one optimizer step.
 *
 * The values do not depend on the schedule: every schedule runs each
 * stage's backwards in microbatch order, and a microbatch's values depend
 * on no other microbatch's but through the parameters, which change only
 * in the optimizer step. So the microbatches are computed in turn, and
 * each event carries where the schedule puts it (struct tps_event_stage:
 * the stage, the chunk, the microbatch and the slots of the schedule's
 * operation). Each stage's modules are computed on the whole mesh, their
 * values the same on every coordinate of the pp dim (placement replicate
 * on it); the event's stage says whose ranks ran it, and the figures per
 * rank count what the rank's stage holds.
 *
 * Between virtual stages on two stages, a `send` event on the sending
 * stage (its bytes_per_rank the activation's block, or its gradient's, as
 * each rank holds it) and a `recv` on the receiving one (bytes_per_rank
 * 0: it sends nothing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "model.h"
#include "model_internal.h"

/* ---- tagging events with their stage ----------------------------------- */

/* A tag of virtual stage k's operations on microbatch mb: the events of
 * its forward get the forward's slots, those of its backward (and of a
 * forward run again in backward) the backward's. */
struct op_tag {
	struct tps_stage_tag tag;
	struct tps_pp_slot fwd, bwd;
};

static enum tps_status tag_emit(void *opaque, const struct tps_event *ev,
				struct tps_error *err)
{
	const struct tps_stage_tag *tag = opaque;
	struct tps_event e = *ev;
	e.stage = &tag->info;
	return tps_event_emit(tag->inner, &e, err);
}

struct tps_event_sink tps_stage_tag_sink(struct tps_stage_tag *tag)
{
	struct tps_event_sink sink = {tag_emit, tag};
	return sink;
}

static enum tps_status op_emit(void *opaque, const struct tps_event *ev,
			       struct tps_error *err)
{
	struct op_tag *t = opaque;
	const struct tps_pp_slot *slot =
		ev->phase == TPS_PHASE_FORWARD ? &t->fwd : &t->bwd;
	t->tag.info.slot_start = slot->start;
	t->tag.info.slot_end = slot->end;
	return tag_emit(&t->tag, ev, err);
}

/* The tag of virtual stage k, microbatch mb (-1: none), over inner. */
static struct op_tag op_tag_of(const struct tps_model *model,
			       struct tps_event_sink inner, int k, int mb)
{
	int p = model->spec->pipeline.p, m = model->spec->pipeline.microbatches;
	struct op_tag t = {
		{inner, {k % p, k / p, mb, -1, 0, 0}}, {0, 0}, {0, 0}};
	if (mb >= 0) {
		t.fwd = model->fwd_slots[(size_t)k * (size_t)m + (size_t)mb];
		t.bwd = model->bwd_slots[(size_t)k * (size_t)m + (size_t)mb];
	}
	return t;
}

static struct tps_event_sink op_sink(struct op_tag *t)
{
	struct tps_event_sink sink = {op_emit, t};
	return sink;
}

int tps_model_param_virtual_stage(const struct tps_model *model,
				  const struct tps_param *p)
{
	return model->n_virtual > 0 ? model->param_virtual[p - model->params]
				    : -1;
}

/* ---- microbatches ------------------------------------------------------- */

/* Microbatch mb of a batch-major tensor t in the sampled order: each dp
 * rank's part cut in m, rank r's piece mb the rows [start_r + mb q_r,
 * start_r + (mb + 1) q_r) with q_r = rows_r / m, the pieces in dp order.
 * The config checked that the sampler splits it back into those pieces. */
static enum tps_status microbatch_of(const struct tps_model *model,
				     const struct tps_tensor *t, int mb,
				     struct tps_tensor *out,
				     struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	int m = spec->pipeline.microbatches;
	struct tps_tensor *parts;
	struct tps_shape shape = t->shape;
	enum tps_status st = TPS_OK;
	int made = 0;

	if (t->meta) {
		shape.dim[0] /= m;
		return tps_tensor_init_meta(out, &shape, err);
	}
	parts = calloc((size_t)model->dp, sizeof *parts);
	if (!parts) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int r = 0; r < model->dp && st == TPS_OK; r++, made++) {
		int64_t start, rows;
		tps_dp_split_range(spec, r, &start, &rows);
		st = tps_tensor_narrow(&parts[r], t, 0, start + mb * (rows / m),
				       rows / m, err);
	}
	if (st == TPS_OK) {
		st = tps_tensor_concat(out, parts, model->dp, 0, err);
	}
	for (int r = 0; r < made; r++) {
		tps_tensor_free(&parts[r]);
	}
	free(parts);
	return st;
}

/* The inverse: part (microbatch mb, its dp ranks' pieces in dp order)
 * copied into whole (the batch, in the sampled order). */
static void put_microbatch(const struct tps_model *model,
			   struct tps_tensor *whole, int mb,
			   const struct tps_tensor *part)
{
	const struct tps_model_spec *spec = model->spec;
	int m = spec->pipeline.microbatches;
	int64_t rows_all = whole->shape.dim[0];
	int64_t inner = rows_all ? tps_tensor_numel(whole) / rows_all : 0;
	int64_t at = 0;
	if (!whole->data || !part->data) {
		return;
	}
	for (int r = 0; r < model->dp; r++) {
		int64_t start, rows;
		tps_dp_split_range(spec, r, &start, &rows);
		memcpy(whole->data + (start + mb * (rows / m)) * inner,
		       part->data + at * inner,
		       (size_t)(rows / m * inner) * sizeof(float));
		at += rows / m;
	}
}

/* ---- send and recv ------------------------------------------------------ */

/* The name of the last top-level module of virtual stage k. */
static const char *last_of(const struct tps_model *model, int k)
{
	struct tps_module *m = model->stage_begin[k];
	while (tps_module_next(m) < model->stage_begin[k + 1]) {
		m = tps_module_next(m);
	}
	return m->spec->name;
}

/*
 * v (tensor `tensor`) leaves virtual stage `from` for virtual stage `to`
 * (forward: the activation to the next; backward: the input's gradient to
 * the previous): a send event on from's stage and a recv on to's, each
 * naming the other. On one stage (p 1) nothing moves.
 */
static enum tps_status send_recv(const struct tps_model *model, int step,
				 enum tps_phase phase, struct op_tag *from,
				 struct op_tag *to, const struct tps_dtensor *v,
				 const char *tensor, struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct op_tag a = *from, b = *to;
	struct tps_event ev = {0};
	char note[256];
	int64_t bytes = 0;
	enum tps_status st;

	if (a.tag.info.stage == b.tag.info.stage) {
		return TPS_OK;
	}
	for (int r = 0; r < spec->mesh.world_size; r++) {
		int64_t n = tps_tensor_numel(&v->locals[r]) * 4;
		bytes = n > bytes ? n : bytes;
	}
	a.tag.info.peer = b.tag.info.stage;
	b.tag.info.peer = a.tag.info.stage;
	ev.step = step;
	ev.phase = phase;
	ev.kind = TPS_EVENT_COLLECTIVE;
	ev.module = "pipeline";
	ev.op = "send";
	ev.tensor = tensor;
	ev.mask = 1u << spec->pipeline.dim;
	ev.bytes_per_rank = bytes;
	ev.dtype = spec->dtypes
			   .of[phase == TPS_PHASE_FORWARD ? TPS_ROLE_ACTIVATIONS
							  : TPS_ROLE_GRADS];
	ev.value = v;
	snprintf(note, sizeof note,
		 "stage %d sends %s to stage %d: each rank its block, to the "
		 "rank with its coordinates off the pp dim (no scatter-gather: "
		 "a tp-replicated tensor is sent whole, not 1/t of it and an "
		 "all_gather)",
		 a.tag.info.stage,
		 phase == TPS_PHASE_FORWARD ? "its output activation"
					    : "the gradient of its input",
		 b.tag.info.stage);
	ev.note = note;
	st = op_emit(&a, &ev, err);
	if (st != TPS_OK) {
		return st;
	}
	ev.op = "recv";
	ev.bytes_per_rank = 0;
	snprintf(note, sizeof note,
		 "stage %d receives %lld bytes per rank from stage %d (a recv "
		 "sends nothing)",
		 b.tag.info.stage, (long long)bytes, a.tag.info.stage);
	return op_emit(&b, &ev, err);
}

/* ---- gradients over the microbatches ------------------------------------ */

/* acc[i] += each parameter's gradient of microbatch mb (the first one's
 * taken over), rank by rank in float32; after the last microbatch (of 2
 * or more), an event per parameter with the sum. */
static enum tps_status accumulate(struct tps_model *model, int step, int mb,
				  struct tps_dtensor *acc,
				  struct tps_event_sink sink,
				  struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	enum tps_status st = TPS_OK;
	for (int i = 0; i < model->n_params && st == TPS_OK; i++) {
		struct tps_param *p = &model->params[i];
		struct tps_nn_context ctx;
		struct op_tag tag;
		char name[TPS_NAME_MAX + 16];
		if (!p->grad.locals) {
			continue;
		}
		if (!acc[i].locals) {
			acc[i] = p->grad;
			memset(&p->grad, 0, sizeof p->grad);
			continue;
		}
		/* Meta locals (a meta run's, or another process's ranks:
		 * backend.h) add nothing. */
		for (int r = 0; r < spec->mesh.world_size; r++) {
			tps_tensor_add(&acc[i].locals[r], &p->grad.locals[r]);
		}
		tps_dtensor_free(&p->grad);
		if (mb < spec->pipeline.microbatches - 1) {
			continue;
		}
		tag = op_tag_of(model, sink,
				tps_model_param_virtual_stage(model, p), mb);
		ctx = tps_step_context(model, op_sink(&tag), step,
				       TPS_PHASE_BACKWARD);
		/* The running sum is float32, as Megatron's main_grad. */
		ctx.dtypes.of[TPS_ROLE_GRADS] = TPS_DTYPE_F32;
		snprintf(name, sizeof name, "%s.grad", p->name);
		st = tps_nn_emit_compute(
			&ctx, p->module, "accumulate", name,
			"the gradient summed over the step's "
			"microbatches, in float32 (the loss of "
			"each is scaled for the whole batch)",
			&acc[i], 0, err);
	}
	return st;
}

/* ---- one step ------------------------------------------------------------ */

/* What a step keeps of its microbatches for the outcome: the output and
 * the input's gradient, each in the sampled order (NULL: not kept). */
struct step_out {
	struct tps_tensor *output;
	struct tps_tensor *dinput;
	double loss;
};

int tps_model_rank_stage(const struct tps_model *model, int r)
{
	/* Row-major: the dims after the pp dim vary faster. */
	const struct tps_mesh *mesh = &model->spec->mesh;
	int stride = 1;
	for (int d = model->spec->pipeline.dim + 1; d < mesh->ndim; d++) {
		stride *= mesh->shape[d];
	}
	return r / stride % mesh->shape[model->spec->pipeline.dim];
}

int64_t tps_model_pipeline_peak(const struct tps_model *model, int r,
				int *in_flight)
{
	int p = model->spec->pipeline.p, s = tps_model_rank_stage(model, r);
	int world = model->spec->mesh.world_size, n = 0;
	const struct tps_pp_stage *g = &model->plan.stages[s];
	int64_t held = 0, most = 0;
	*in_flight = 0;
	for (int i = 0; i < g->n_ops; i++) {
		const struct tps_pp_op *op = &g->ops[i];
		int k = op->chunk * p + s;
		int64_t b =
			model->mb_saved[(size_t)k * (size_t)world + (size_t)r];
		bool fwd = op->kind == TPS_PP_FORWARD;
		held += fwd ? b : -b;
		n += fwd ? 1 : -1;
		if (held > most) {
			most = held;
		}
		if (n > *in_flight) {
			*in_flight = n;
		}
	}
	return most;
}

/* What forward left alive for backward (model.h): per virtual stage and
 * rank, one microbatch's (a module's bytes count on the ranks of its
 * stage only); per rank, the most its stage holds at once under the
 * schedule; the output, one microbatch's on the last stage's ranks. */
static void measure_saved(struct tps_model *model, const struct tps_dtensor *y)
{
	const struct tps_model_spec *spec = model->spec;
	int world = spec->mesh.world_size, p = spec->pipeline.p;
	int last = (model->n_virtual - 1) % p;
	int act = tps_dtype_size(spec->dtypes.of[TPS_ROLE_ACTIVATIONS]);
	memset(model->mb_saved, 0,
	       (size_t)model->n_virtual * (size_t)world *
		       sizeof *model->mb_saved);
	for (int r = 0; r < world; r++) {
		bool on_last = tps_model_rank_stage(model, r) == last;
		model->saved_bytes[r] = 0;
		model->output_bytes[r] =
			on_last && y->locals
				? tps_tensor_numel(&y->locals[r]) * act
				: 0;
	}
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module *m = &model->modules[i];
		int s = model->virtual_of[i] % p;
		int64_t most = 0;
		for (int r = 0; r < world; r++) {
			int64_t b;
			if (tps_model_rank_stage(model, r) != s) {
				continue;
			}
			/* Each tensor in its dtype, every saved_more slot (the
			 * attention's probabilities too), as without a
			 * pipeline (model_step.c's measure_saved). */
			b = tps_module_saved_bytes(m, &spec->dtypes, r);
			model->mb_saved[(size_t)model->virtual_of[i] *
						(size_t)world +
					(size_t)r] += b;
			most = b > most ? b : most;
		}
		model->module_saved_bytes[i] = most;
	}
	/* What the rank holds at its schedule's peak. */
	for (int r = 0; r < world; r++) {
		int in_flight;
		model->saved_bytes[r] =
			tps_model_pipeline_peak(model, r, &in_flight);
	}
}

/* Microbatch mb: forward through every virtual stage, the loss, backward
 * through them in reverse, the gradients added to acc. */
static enum tps_status
run_microbatch(struct tps_model *model, const struct tps_tensor *x,
	       const struct tps_tensor *t, struct tps_event_sink sink, int step,
	       int mb, struct tps_dtensor *acc, struct step_out *so,
	       struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	int K = model->n_virtual, m = spec->pipeline.microbatches;
	struct op_tag *tags = calloc((size_t)K, sizeof *tags);
	struct tps_tensor xin = {0}, tin = {0}, part = {0};
	struct tps_dtensor cur = {0}, next = {0}, dy = {0};
	struct tps_nn_context ctx;
	double loss = 0.0;
	enum tps_status st = TPS_OK;
	int k;

	if (!tags) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (k = 0; k < K; k++) {
		tags[k] = op_tag_of(model, sink, k, mb);
	}
	st = microbatch_of(model, x, mb, &xin, err);
	if (st == TPS_OK && t) {
		st = microbatch_of(model, t, mb, &tin, err);
	}
	ctx = tps_step_context(model, op_sink(&tags[0]), step,
			       TPS_PHASE_FORWARD);
	if (st == TPS_OK) {
		st = tps_step_distribute_batch(&ctx, model, &xin, "input",
					       "input", &cur, err);
	}
	if (st == TPS_OK && spec->input_source == TPS_INPUT_TP_ROOT &&
	    step == 0) {
		st = tps_step_broadcast_from_tp_root(&ctx, &cur, err);
	}
	for (k = 0; k < K && st == TPS_OK; k++) {
		char name[TPS_NAME_MAX + 8];
		ctx.sink = op_sink(&tags[k]);
		if (k > 0) {
			snprintf(name, sizeof name, "%s.out",
				 last_of(model, k - 1));
			st = send_recv(model, step, TPS_PHASE_FORWARD,
				       &tags[k - 1], &tags[k], &cur, name, err);
		}
		if (st == TPS_OK) {
			st = tps_step_forward_range(
				&ctx, model, model->stage_begin[k],
				model->stage_begin[k + 1], &cur, &next, err);
			tps_dtensor_free(&cur);
			cur = next;
			memset(&next, 0, sizeof next);
		}
	}
	if (st == TPS_OK) {
		st = tps_step_output(&ctx, model, &cur, err);
	}
	if (st == TPS_OK && mb == 0) {
		measure_saved(model, &cur);
	}
	if (st == TPS_OK && so->output) {
		st = tps_dtensor_full_tensor(&cur, &part, err);
		if (st == TPS_OK) {
			put_microbatch(model, so->output, mb, &part);
		}
		tps_tensor_free(&part);
	}
	if (spec->mode != TPS_MODE_TRAINING) {
		/* Inference (tpsim comm's count of a training config's
		 * forward): the microbatches' forwards only. */
		tps_dtensor_free(&cur);
		goto out;
	}
	if (st == TPS_OK) {
		st = tps_step_loss(model, &cur, t ? &tin : NULL,
				   op_sink(&tags[K - 1]), step, m, &loss, &dy,
				   err);
		so->loss += loss;
	}
	tps_dtensor_free(&cur);
	/* Backward, the last virtual stage first. */
	ctx = tps_step_context(model, op_sink(&tags[K - 1]), step,
			       TPS_PHASE_BACKWARD);
	if (st == TPS_OK) {
		st = tps_nn_grad_through(&ctx, &dy, &model->output_chain,
					 "output", "output.grad", err);
	}
	for (k = K - 1; k >= 0 && st == TPS_OK; k--) {
		struct tps_module *begin = model->stage_begin[k];
		bool want = k > 0 ? tps_step_trains_before(model, begin) ||
					    spec->input_requires_grad
				  : spec->input_requires_grad;
		struct tps_dtensor dx = {0};
		char name[TPS_NAME_MAX + 16];
		ctx.sink = op_sink(&tags[k]);
		st = tps_step_backward_range(&ctx, model, begin,
					     model->stage_begin[k + 1], &dy,
					     want ? &dx : NULL, err);
		if (st != TPS_OK) {
			break;
		}
		if (!want) {
			/* Nothing before it trains, nor the input: the
			 * stages before keep what they saved for nothing. */
			for (struct tps_module *a = model->modules; a < begin;
			     a++) {
				tps_module_free_saved(a);
			}
			break;
		}
		if (k > 0) {
			snprintf(name, sizeof name, "%s.in.grad",
				 begin->spec->name);
			st = send_recv(model, step, TPS_PHASE_BACKWARD,
				       &tags[k], &tags[k - 1], &dx, name, err);
			dy = dx;
		} else {
			if (so->dinput) {
				st = tps_dtensor_full_tensor(&dx, &part, err);
			}
			if (st == TPS_OK && so->dinput) {
				put_microbatch(model, so->dinput, mb, &part);
			}
			tps_tensor_free(&part);
			tps_dtensor_free(&dx);
		}
	}
	if (st != TPS_OK) {
		for (int i = 0; i < spec->n_modules; i++) {
			tps_module_free_saved(&model->modules[i]);
		}
	}
	tps_dtensor_free(&dy);
	if (st == TPS_OK) {
		st = accumulate(model, step, mb, acc, sink, err);
	}
out:
	tps_tensor_free(&xin);
	tps_tensor_free(&tin);
	free(tags);
	return st;
}

/* An empty tensor of the batch's rows and `like`'s other dims (values:
 * zeros; meta: no values). */
static enum tps_status batch_like(const struct tps_model *model,
				  const struct tps_shape *mb_shape,
				  struct tps_tensor *out, struct tps_error *err)
{
	struct tps_shape s = *mb_shape;
	s.dim[0] = model->spec->input_shape.dim[0];
	return model->meta ? tps_tensor_init_meta(out, &s, err)
			   : tps_tensor_init(out, &s, err);
}

enum tps_status tps_model_run_pipeline(struct tps_model *model,
				       const struct tps_tensor *input,
				       const struct tps_tensor *target,
				       struct tps_event_sink sink,
				       struct tps_model_outcome *out,
				       struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	int m = spec->pipeline.microbatches, n = model->n_params;
	bool training = spec->mode == TPS_MODE_TRAINING;
	int steps = training ? spec->steps : 1;
	struct tps_model_outcome o = {0};
	struct tps_tensor x = {0}, t = {0}, output = {0}, dinput = {0};
	struct tps_dtensor *acc = calloc((size_t)(n ? n : 1), sizeof *acc);
	struct tps_shape out_shape = tps_model_output_shape(spec);
	enum tps_status st =
		acc ? tps_model_outcome_init(&o, model, err)
		    : tps_error_set(err, TPS_ERR_NOMEM, "out of memory");

	if (st == TPS_OK) {
		st = model->spec->sampler == TPS_SAMPLER_DISTRIBUTED &&
				     !input->meta
			     ? tps_step_permute_rows(input, model->sample_order,
						     false, &x, err)
			     : tps_tensor_copy(&x, input, err);
	}
	if (st == TPS_OK && target) {
		st = model->spec->sampler == TPS_SAMPLER_DISTRIBUTED &&
				     !target->meta
			     ? tps_step_permute_rows(target,
						     model->sample_order, false,
						     &t, err)
			     : tps_tensor_copy(&t, target, err);
	}
	if (st == TPS_OK) {
		out_shape.dim[0] /= m;
		st = batch_like(model, &out_shape, &output, err);
	}
	if (st == TPS_OK && spec->input_requires_grad) {
		st = batch_like(model, &spec->input_shape, &dinput, err);
	}
	for (int step = 0; step < steps && st == TPS_OK; step++) {
		bool last = step == steps - 1;
		struct step_out so = {
			last ? &output : NULL,
			last && spec->input_requires_grad ? &dinput : NULL,
			0.0};
		for (int mb = 0; mb < m && st == TPS_OK; mb++) {
			st = run_microbatch(model, &x, target ? &t : NULL, sink,
					    step, mb, acc, &so, err);
		}
		/* The summed gradients are the step's. */
		for (int i = 0; i < n && st == TPS_OK; i++) {
			tps_dtensor_free(&model->params[i].grad);
			model->params[i].grad = acc[i];
			memset(&acc[i], 0, sizeof acc[i]);
		}
		if (st == TPS_OK && training) {
			o.loss[step] = (float)so.loss;
			st = tps_step_optimizer(model, sink, step, err);
		}
	}
	for (int i = 0; i < n; i++) {
		tps_dtensor_free(&acc[i]);
	}
	free(acc);
	/* The outcome, in the batch's row order, as collect_training's. */
	if (st == TPS_OK) {
		st = spec->sampler == TPS_SAMPLER_DISTRIBUTED && output.data
			     ? tps_step_permute_rows(&output,
						     model->sample_order, true,
						     &o.output, err)
			     : tps_tensor_copy(&o.output, &output, err);
	}
	for (int i = 0; i < n && st == TPS_OK && training; i++) {
		st = tps_dtensor_full_tensor(&model->params[i].grad,
					     &o.grads[i], err);
		if (st == TPS_OK) {
			st = tps_dtensor_full_tensor(&model->params[i].value,
						     &o.params_after[i], err);
		}
	}
	if (st == TPS_OK && spec->input_requires_grad) {
		struct tps_tensor *g = &o.grads[n];
		st = spec->sampler == TPS_SAMPLER_DISTRIBUTED && dinput.data
			     ? tps_step_permute_rows(&dinput,
						     model->sample_order, true,
						     g, err)
			     : tps_tensor_copy(g, &dinput, err);
		/* Each dp rank's input gradient is that of its own loss, as
		 * x.grad is under DDP: the run's is the assembled one over
		 * dp, stored in the grads dtype (collect_training's). */
		if (st == TPS_OK && model->dp > 1 && g->data) {
			tps_tensor_scale(g, 1.0f / (float)model->dp);
			tps_dtype_round_array(g->data, tps_tensor_numel(g),
					      spec->dtypes.of[TPS_ROLE_GRADS]);
		}
	}
	tps_tensor_free(&x);
	tps_tensor_free(&t);
	tps_tensor_free(&output);
	tps_tensor_free(&dinput);
	if (st != TPS_OK) {
		tps_model_outcome_free(&o);
		return st;
	}
	*out = o;
	return TPS_OK;
}
