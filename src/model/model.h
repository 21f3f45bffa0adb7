/*
 * A model: a sequence of named modules, a parallelization plan applied to
 * them, the steps run on every simulated rank, and the single-device
 * reference model on the same global parameters.
 *
 * The spec (spec.h) is what a validated config (config.h) produces; the
 * model never sees JSON. Messages about a module's plan start with the
 * JSON Pointer the spec carries for it, so the CLI can name the config file
 * and the place.
 *
 * Parameter values are made once, as global tensors, and then distributed:
 * a run's result does not depend on the world size. Each parameter draws from
 * its own random stream (seed + its name), so adding a module does not change
 * the others.
 *
 * A step (docs/design.md sections 2 and 5), on every rank at once:
 *   forward    the input split over dp (and broadcast from each tp group's
 *              root, with loaded_on tp_root), each module under its style,
 *              the output materialised over tp
 *   training:
 *   loss       each dp rank's loss on its part of the batch, scaled as
 *              dp_grad says (module "loss")
 *   backward   the output's gradient, then each module last to first
 *   optimizer  per parameter: the gradient averaged over dp (one
 *              all_reduce), then the update on each rank's shard
 * Inference runs one forward; training runs `steps` steps on the same
 * input and target.
 */
#ifndef TPSIM_MODEL_H
#define TPSIM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "nn.h"
#include "spec.h"

/* A pipeline operation's slots (pipeline_schedule.h). */
struct tps_pp_slot {
	int64_t start, end;
};

struct tps_model {
	const struct tps_model_spec *spec; /* not owned; must outlive model */
	/* Meta (tps_model_init_meta): parameters are meta tensors; so must
	 * the input and target be. */
	bool meta;
	struct tps_module *modules; /* n_modules, in spec order */
	struct tps_param *params;   /* every module's, in module order */
	int n_params;
	/* The data-parallel split of the batch (dim 0 of the input): dp
	 * ranks in the flattened dp group's order, each holding counts[r]
	 * rows; order[p] is the global row at position p of that layout
	 * (the identity for the chunk sampler, strided for DistributedSampler;
	 * not made for a meta model, which moves no rows).
	 */
	int dp;
	int64_t *dp_counts;
	int64_t *sample_order;
	/* The output's tp layouts in the last forward, to walk back. */
	struct tps_layout_chain output_chain;
	/*
	 * What the last training step's forward left alive for backward, in
	 * bytes (each tensor at its dtype's size, tps_module_saved_bytes;
	 * values or meta alike), taken when forward ends, before the loss:
	 * per rank (world_size entries), saved_bytes
	 * is every module's saved input and intermediates (saved_in,
	 * saved_more) and output_bytes the model output the loss reads; per
	 * module (n_modules entries, the module alone, not its
	 * descendants), the most any rank saved. Zero until a training step
	 * ran; inference saves nothing.
	 */
	int64_t *saved_bytes, *output_bytes;
	int64_t *module_saved_bytes;
	/* ZeRO stage 3 (FSDP): per rank, the bytes of gathered tp-local
	 * parameters alive now (nn.h's gathered_now; 0 between steps), and
	 * the most alive at once during the last step (0 when nothing is
	 * gathered). */
	int64_t *gathered_bytes, *gathered_peak_bytes;
	/*
	 * Pipeline parallelism (spec->pipeline.enabled; docs/pipeline.md),
	 * else all empty. Each virtual stage k's modules are
	 * [stage_begin[k], stage_begin[k + 1]) (n_virtual + 1 entries), the
	 * top-level ranges of the spec; virtual_of[i] is module i's virtual
	 * stage. plan is the schedule's, and fwd_slots[k m + mb] and
	 * bwd_slots[k m + mb] the slots of virtual stage k's forward and
	 * backward of microbatch mb in it.
	 */
	int n_virtual;
	struct tps_module **stage_begin;
	int *virtual_of;
	int *param_virtual; /* per parameter, in params' order */
	struct tps_pp_plan plan;
	struct tps_pp_slot *fwd_slots, *bwd_slots;
	/* What one microbatch's forward left saved on each rank, per
	 * virtual stage (mb_saved[k * world + r], bytes): the last
	 * training step's first microbatch. saved_bytes[r] is then the
	 * most rank r holds over its stage's order of operations
	 * (tps_model_pipeline_peak), output_bytes[r] one microbatch's
	 * output on the last stage. */
	int64_t *mb_saved;
};

/* A pipelined model's rank r: the bytes its stage holds for backward at
 * the peak of the schedule, walking its order of operations (each
 * forward of microbatch i on chunk c adds what chunk c saves per
 * microbatch, its backward frees it), and the microbatches (chunk
 * forwards, with v > 1) in flight there. 0 before a training step. */
int64_t tps_model_pipeline_peak(const struct tps_model *model, int r,
				int *in_flight);
/* A pipelined model's rank r's stage: its coordinate on the pp dim. */
int tps_model_rank_stage(const struct tps_model *model, int r);
/* The virtual stage holding parameter p, or -1 without a pipeline. */
int tps_model_param_virtual_stage(const struct tps_model *model,
				  const struct tps_param *p);

/*
 * Whether this process keeps each parameter's global value (param->global
 * with values): always without a backend; under one (backend.h) only
 * process 0, and only when it runs the reference (writer_keeps_params).
 * Otherwise a process makes and keeps its ranks' shards alone, and
 * param->global is a meta tensor of the parameter's shape.
 */
bool tps_model_keeps_params(const struct tps_model_spec *spec);

/* Fills t (of the given shape) by an init method; `a` is the bound of
 * uniform and the standard deviation of normal; `stream` names the random
 * stream (parameter name, "input", "target"). */
enum tps_status tps_model_init_tensor(struct tps_tensor *t,
				      const struct tps_shape *shape,
				      struct tps_init_spec init, float a,
				      const char *stream,
				      struct tps_error *err);

/*
 * Makes the global parameters and distributes them by the plan. With
 * uneven "divisible", a sharded size not divisible by the tp size is an
 * error naming the module, the dim, its size and tp.
 * On error *model is untouched.
 */
enum tps_status tps_model_init(struct tps_model *model,
			       const struct tps_model_spec *spec,
			       struct tps_error *err);
/* The same with meta parameters: shapes and no values, to count what a run
 * moves and computes (tpsim comm) at any size. The reference cannot run. */
enum tps_status tps_model_init_meta(struct tps_model *model,
				    const struct tps_model_spec *spec,
				    struct tps_error *err);
void tps_model_free(struct tps_model *model);

/*
 * tps_model_init's, for a model whose training draws dropout masks: each
 * dropout's input layout under the plan (nn.h's tps_dropout_state), found
 * by one forward of a meta twin of the model, without the injected
 * mistake and with no events, so that the reference draws the masks the
 * ranks will before any step has run. Fails only when out of memory
 * (TPS_ERR_NOMEM); another failure of that forward is the real run's too,
 * reported there: the dropouts it did not reach stay unknown (their
 * reference then says so).
 */
enum tps_status tps_model_plan_dropout(struct tps_model *model,
				       struct tps_error *err);

/* ZeRO stage 3 (FSDP, docs/zero.md), in training over a dp size of 2 or
 * more: each parameter's value becomes each rank's shard(0,local) of its
 * tp-local tensor, as fully_shard does (a local chunk, no collective).
 * Otherwise nothing. On error the model is only fit to be freed. */
enum tps_status tps_model_fsdp_shard(struct tps_model *model,
				     struct tps_error *err);

/*
 * One optimizer step of one parameter's values p (a rank's shard, or the
 * reference's global value) from grad and its state arrays, in the dtypes
 * dt (spec.h): with master (the master_params copy; NULL when none is
 * kept) the step updates master, stored in master_params, and p becomes
 * its rounding to params; without, it updates p, stored in params. The
 * state is stored in optimizer_state. p, master and grad have the same
 * number of elements; the ranks and the reference share this code.
 */
void tps_model_update(const struct tps_optimizer_spec *opt, int64_t t,
		      const struct tps_dtypes *dt, struct tps_tensor *p,
		      struct tps_tensor *master, const float *grad,
		      float *const *state);

/* Emits one setup event per parameter, in module order. */
enum tps_status tps_model_emit_setup(const struct tps_model *model,
				     struct tps_event_sink sink,
				     struct tps_error *err);

/* The shape of the model's output (tps_model_spec_output_shape): the
 * input's, with an embedding's dim added and each width the modules set
 * in turn (a linear's out_features, an embedding's embedding_dim, ...) as
 * its last dim. */
struct tps_shape tps_model_output_shape(const struct tps_model_spec *spec);

/* The dtype the input and the target are stored in: the activations',
 * but float32 for token ids and class ids (whole numbers up to 2^24). */
enum tps_dtype tps_model_input_dtype(const struct tps_model_spec *spec);
enum tps_dtype tps_model_target_dtype(const struct tps_model_spec *spec);

/* The global model input, from spec->input_init with a = 1, in
 * tps_model_input_dtype. */
enum tps_status tps_model_make_input(const struct tps_model_spec *spec,
				     struct tps_tensor *input,
				     struct tps_error *err);
/* The global target of an mse loss (the output's shape), from
 * spec->target_init with a = 1, stream "target". */
enum tps_status tps_model_make_target(const struct tps_model_spec *spec,
				      struct tps_tensor *target,
				      struct tps_error *err);

/*
 * The reference's error bounds (bound.h, docs/numerics.md) of what the
 * run compares, laid out as the outcome's tensors: how far any evaluation
 * that differs only in the order of its sums (the simulation's among
 * them) may lie from a common center, element by element, so that a
 * correct simulation differs from the reference by at most twice the
 * bound. A bound of all zeros: every evaluation gives the same bits
 * (exact comparison, docs/design.md section 3). The reference fills it;
 * the simulation's is empty.
 */
struct tps_model_bounds {
	struct tps_bound output; /* the compared output (the last step's) */
	struct tps_bound *loss;	 /* training: per step, scalars */
	struct tps_bound *grads; /* training: as the outcome's grads */
	struct tps_bound *params_after; /* training: per parameter */
};

/*
 * How each compared tensor compared with the reference (run_compare.c
 * decides; the trace's result writes it, docs/trace.md):
 *   exact      its bound is 0 everywhere: every evaluation gives the same
 *              bits, so it must equal the reference's, whatever the
 *              tolerance (docs/design.md section 3)
 *   bound      |sim_i - ref_i| <= 2 e_i + atol + rtol |ref_i| element by
 *              element, atol and rtol the config's tolerance where it
 *              gives one (0 otherwise)
 *   tolerance  no bound (a rule is missing): the tolerance rule,
 *              max |sim - ref| <= atol + rtol max |ref|
 */
enum tps_compare_rule {
	TPS_COMPARE_EXACT,
	TPS_COMPARE_BOUND,
	TPS_COMPARE_TOLERANCE,
};
extern const char *const tps_compare_rule_names[];

struct tps_compare_tensor {
	/* Where it is in the result: "output", "loss" (step), "grads" or
	 * "params_after" (index, as the outcome's); and its name as the
	 * trace's events name it: "fc2.out", "loss", "fc1.weight.grad",
	 * "input.grad", "fc1.weight" (after the last update). */
	const char *section;
	int index;
	char name[TPS_NAME_MAX + 16];
	struct tps_shape shape;
	enum tps_compare_rule rule;
	bool match;
	bool shapes_differ; /* nothing compared (an injected mistake's) */
	float max_abs_diff; /* max |sim - ref| (float32, as before) */
	/* exact, bound: the largest bound of the difference, 2 e_i; the
	 * worst ratio |d_i| / (2 e_i) (INFINITY where 2 e_i = 0 < |d_i|, 0
	 * when nothing differs). tolerance: atol + rtol max |ref|, and
	 * max_abs_diff over it. */
	double max_bound, ratio;
	/* The element of the worst ratio (tolerance: of max |d|), -1 when
	 * nothing differs, with its |d| and bound. */
	int64_t at;
	double at_diff, at_bound;
	int64_t outside; /* elements beyond what their rule allows */
	char none[TPS_BOUND_REASON_MAX]; /* tolerance: why no bound */
};

struct tps_comparison {
	int n;
	struct tps_compare_tensor *t; /* output, loss per step, grads,
				       * params_after */
	float max_abs_diff; /* the largest of the tensors' (INFINITY: some
			     * shapes differ) */
	bool match;
	int exact, bounded; /* how many by rule exact, and exact or bound */
	double max_bound;   /* the largest 2 e_i of the bounded tensors */
	/* The tensor that decided: the mismatch of the worst ratio (a
	 * bounded one before one by tolerance), or when all match the one
	 * with the largest max_abs_diff; -1 when there is none. */
	int worst;
};

/* What a run produced, global (assembled from the ranks by inspection). */
struct tps_model_outcome {
	struct tps_tensor output; /* the last step's, before its update */
	int steps;		  /* training: entries of loss */
	float *loss;		  /* the run's loss at each step */
	/* Training: the last step's gradients (after the dp average), one
	 * per parameter in model order, then the input's when it requires
	 * one; and the parameters after the last update. */
	int n_grads;
	struct tps_tensor *grads;
	int n_params;
	struct tps_tensor *params_after;
	struct tps_model_bounds bounds;
};

/* An outcome with its arrays made for the spec's run (training: steps
 * losses, the gradients' and parameters' slots; inference: none), every
 * tensor empty. On error *out is untouched. */
enum tps_status tps_model_outcome_init(struct tps_model_outcome *out,
				       const struct tps_model *model,
				       struct tps_error *err);
void tps_model_outcome_free(struct tps_model_outcome *out);

/*
 * Runs the spec on every rank, emitting every event to sink: one forward
 * in inference, `steps` training steps in training. target is the mse
 * target (NULL otherwise). On error *out is untouched.
 */
enum tps_status
tps_model_run(struct tps_model *model, const struct tps_tensor *input,
	      const struct tps_tensor *target, struct tps_event_sink sink,
	      struct tps_model_outcome *out, struct tps_error *err);

/*
 * The same run on one device: the reference, with the error bound of
 * every tensor it computes (model_reference.c, the bound pass of
 * docs/numerics.md), each reported to `bounds` (emit NULL: none) under
 * its trace name, step and phase (nn.h, struct tps_bound_event). It
 * updates each parameter's `global` (and its bound) as it trains, so it
 * runs once per model, after the trace has recorded the initial
 * parameters. out->bounds holds the bounds of what the run compares. On
 * error *out is untouched.
 */
enum tps_status tps_model_run_reference(struct tps_model *model,
					const struct tps_tensor *input,
					const struct tps_tensor *target,
					struct tps_bound_sink bounds,
					struct tps_model_outcome *out,
					struct tps_error *err);

/*
 * The longest reason a tensor of a run of spec can give for having no
 * error bound (tps_bound's "none": a module type without bound rules,
 * an embedding whose ids are not the given input, a bound
 * that outgrew float32), in bytes. For the trace's size estimate: it
 * depends on the spec alone.
 */
size_t tps_model_bound_reason_max(const struct tps_model_spec *spec);

/* One inference forward step on every rank (step number `step`): *output
 * receives the assembled global output. */
enum tps_status tps_model_forward(struct tps_model *model,
				  const struct tps_tensor *input,
				  struct tps_event_sink sink, int step,
				  struct tps_tensor *output,
				  struct tps_error *err);

/* The reference's inference forward (no bounds). */
enum tps_status tps_model_reference_forward(struct tps_model *model,
					    const struct tps_tensor *input,
					    struct tps_tensor *output,
					    struct tps_error *err);

/* One per-rank figure over the mesh: the largest and the lowest rank that
 * has it, the smallest and the lowest rank that has that. */
struct tps_model_figure {
	int64_t max, min;
	int max_rank, min_rank;
};

/*
 * What one rank holds, in bytes, each tensor at its role's dtype
 * (spec.h: 4 bytes an element for float32, 2 for bfloat16 and float16;
 * shapes only, so meta and real models alike; docs/symbolic.md):
 *   params            the rank's shards and copies of every parameter, in
 *                     the params dtype
 *   grads             their gradients (training, after a step), in the
 *                     grads dtype; under ZeRO stage 2 the rank's dp shard
 *                     of each, and with Megatron's distributed optimizer
 *                     the full-size buffer it reduce_scatters into
 *                     (docs/zero.md)
 *   master            the optimizer's master copy of the rank's shards,
 *                     in the master_params dtype, when it is not the
 *                     params dtype (0 otherwise); under ZeRO, of the
 *                     rank's dp shard of each
 *   optimizer_state   the optimizer's state tensors on the rank's shards
 *                     (sgd with momentum: 1 per parameter, adamw: 2), in
 *                     the optimizer_state dtype, and the master copy:
 *                     everything the optimizer keeps, as Megatron counts
 *                     it (its 12 bytes of 18 per parameter)
 *   saved             what forward keeps for backward (model.saved_bytes)
 *   output            the model output alive at the end of forward
 *   activations       saved + output: the peak of activations between
 *                     forward and backward
 *   gathered          under ZeRO stage 3 (FSDP), the most bytes of
 *                     parameters gathered at once during the last step,
 *                     besides the shards `params` counts: one module's
 *                     tp-local parameters while it runs (or, without
 *                     reshard_after_forward, every module's between the
 *                     end of forward and their backward); 0 otherwise
 *   total             params + grads + optimizer_state + activations +
 *                     gathered: each figure's own peak, summed (an upper
 *                     bound on the peak of the sum: gathered parameters
 *                     live while activations do)
 */
struct tps_model_held {
	int64_t params, grads, master, optimizer_state, saved, output,
		activations, gathered, total;
};

/* Each rank's, into per[0 .. world_size). Cannot fail. */
void tps_model_held_by_rank(const struct tps_model *model,
			    struct tps_model_held *per);

/* The same over the ranks: each figure's largest and smallest. */
struct tps_model_footprint {
	struct tps_model_figure params, grads, master, optimizer_state, saved,
		output, activations, gathered, total;
};
enum tps_status tps_model_footprint(const struct tps_model *model,
				    struct tps_model_footprint *out,
				    struct tps_error *err);

/* A rough upper bound of the bytes a run's tensors take, used to refuse a
 * run over the memory budget before allocating. Saturates at INT64_MAX. */
int64_t tps_model_estimate_bytes(const struct tps_model_spec *spec);

/* The largest part of that estimate, so that a refusal can name the config
 * key to shrink. */
struct tps_memory_part {
	int64_t bytes;
	/* The key it grows with: the module's width ("/model/0/out_features")
	 * for its parameters; for the activations, the widest module's, or
	 * "/input/shape" when the input is the widest. */
	const char *pointer;
	/* The module whose parameters (with their gradients and optimizer
	 * state) it is, or NULL: the activations. */
	const char *module;
};
/* tps_model_estimate_bytes, with its largest part in *largest (pointing
 * into spec). */
int64_t tps_model_estimate_largest(const struct tps_model_spec *spec,
				   struct tps_memory_part *largest);

#endif
