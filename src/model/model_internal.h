/*
 * The parts of a training step (model_step.c) that the pipeline's step
 * (model_pipeline.c, docs/pipeline.md) runs in its own order: per
 * microbatch, per virtual stage. Internal to src/model.
 */
#ifndef TPSIM_MODEL_INTERNAL_H
#define TPSIM_MODEL_INTERNAL_H

#include "model.h"

/* The context the model's modules run in at `step` and `phase`. */
struct tps_nn_context tps_step_context(const struct tps_model *model,
				       struct tps_event_sink sink, int step,
				       enum tps_phase phase);

/* out = t with its rows (dim 0) reordered: out row p is t row order[p], or,
 * with inverse, out row order[p] is t row p. */
enum tps_status tps_step_permute_rows(const struct tps_tensor *t,
				      const int64_t *order, bool inverse,
				      struct tps_tensor *out,
				      struct tps_error *err);

/* A global batch-major tensor on every rank: each dp rank's part of it,
 * as the sampler says, with the split's events. */
enum tps_status tps_step_distribute_batch(
	const struct tps_nn_context *ctx, const struct tps_model *model,
	const struct tps_tensor *global, const char *module, const char *tensor,
	struct tps_dtensor *x, struct tps_error *err);

/* loaded_on tp_root: each tp group's root broadcasts the batch. */
enum tps_status
tps_step_broadcast_from_tp_root(const struct tps_nn_context *ctx,
				struct tps_dtensor *x, struct tps_error *err);

/* The forward of the modules [begin, end) of the model's list (top-level
 * ones; "recompute": "full" blocks as model_step.c runs them): *x
 * consumed, *y made. */
enum tps_status
tps_step_forward_range(const struct tps_nn_context *ctx,
		       struct tps_model *model, struct tps_module *begin,
		       struct tps_module *end, struct tps_dtensor *x,
		       struct tps_dtensor *y, struct tps_error *err);

/* The model output's last layouts: the chain backward walks starts at x,
 * and x is materialised in full over tp (but for loss_parallel). */
enum tps_status tps_step_output(const struct tps_nn_context *ctx,
				struct tps_model *model, struct tps_dtensor *x,
				struct tps_error *err);

/* The loss on every rank (forward phase) and its gradient, the seed of
 * backward (backward phase), for y, one of `microbatches` equal
 * microbatches of the batch (1: the whole batch): each rank's loss is
 * scaled as dp_grad says for the whole batch, so that the gradients
 * summed over the microbatches are the batch's. *dy is laid out as y;
 * *run_loss is the mean over the dp ranks of their losses. */
enum tps_status tps_step_loss(struct tps_model *model,
			      const struct tps_dtensor *y,
			      const struct tps_tensor *target,
			      struct tps_event_sink sink, int step,
			      int microbatches, double *run_loss,
			      struct tps_dtensor *dy, struct tps_error *err);

/* Whether a module before m trains: then the range starting at m (a
 * recompute chunk, a pipeline stage) owes its input a gradient. */
bool tps_step_trains_before(const struct tps_model *model,
			    const struct tps_module *m);

/* The backward of the modules [begin, end), last first: *g consumed;
 * *dinput (NULL: not wanted) the gradient of the range's input. Frees
 * what their forward saved. */
enum tps_status
tps_step_backward_range(const struct tps_nn_context *ctx,
			struct tps_model *model, struct tps_module *begin,
			struct tps_module *end, struct tps_dtensor *g,
			struct tps_dtensor *dinput, struct tps_error *err);

/* The optimizer phase: each parameter's gradient averaged over dp (or
 * ZeRO's collectives), then its update. */
enum tps_status tps_step_optimizer(struct tps_model *model,
				   struct tps_event_sink sink, int step,
				   struct tps_error *err);

/* ---- the pipeline (model_pipeline.c) ----------------------------------- */

/* A sink that marks every event with the stage, chunk, microbatch and
 * slots of `info` and passes it on to `inner`. */
struct tps_stage_tag {
	struct tps_event_sink inner;
	struct tps_event_stage info;
};
struct tps_event_sink tps_stage_tag_sink(struct tps_stage_tag *tag);

/* tps_model_run for a pipelined spec: `steps` steps, each over the
 * microbatches. */
enum tps_status tps_model_run_pipeline(struct tps_model *model,
				       const struct tps_tensor *input,
				       const struct tps_tensor *target,
				       struct tps_event_sink sink,
				       struct tps_model_outcome *out,
				       struct tps_error *err);

#endif
