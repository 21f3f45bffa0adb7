/*
 * Modules and parallel styles, and the events they emit.
 *
 * A module runs on every simulated rank at once: its input is a DTensor, its
 * parameters are DTensors, and each local computation, local split and
 * collective it performs is reported as one event to an event sink (the
 * trace implements the sink; see nn_event.h).
 *
 * A module is an interface: an ops table (struct tps_module_ops) of its
 * parallel forward and backward, its single-device reference (forward and
 * backward), its parameters and its memory estimate. Each family has its own
 * file (nn_linear.c, nn_elementwise.c), and each type its own table, which
 * its descriptor in module_type.h's table points at (tps_module_ops_of).
 *
 * Styles (docs/design.md section 2), for y = x W^T + b with W (out, in):
 *
 *   colwise (ColumnParallelLinear): W shard(0), b shard(0) on the tp dim.
 *     x replicate -> y_i = x W_i^T + b_i, y shard(-1). No communication;
 *     output "replicate" (gather_output) adds an all_gather.
 *     Input "shard(d)" (sequence parallel) all-gathers x first.
 *   rowwise (RowParallelLinear): W shard(1), b replicate.
 *     x shard(-1) (a replicated x is split locally) -> y_i = x_i W_i^T,
 *     partial; all_reduce gives y = sum_i y_i (output "shard(d)": a
 *     reduce_scatter). The bias is added once:
 *       after_reduce   y + b after the reduction (Megatron; the default)
 *       partial_split  every rank adds b / N before it (DTensor)
 *       rank0          local rank 0 adds b before it (nanotron)
 *   replicate / unplanned: W, b replicate; x is made replicate on tp first.
 *   relu, gelu, silu: element-wise on each rank's local values, which is exact for
 *     replicate and shard(d) layouts, so they keep the layout (as PyTorch's
 *     local tensors do); a partial input is all-reduced first, since
 *     relu(a + b) != relu(a) + relu(b).
 *
 * Placements of activations on mesh dims other than tp (a dp batch shard, or
 * replicate) are carried through unchanged.
 *
 * Backward follows from the placements (docs/design.md section 2). Each forward
 * redistribution from layout A to B is undone, in reverse order, by
 * redistributing the gradient from B to A', where A' is A with partial
 * turned replicate (the gradient of each summand of a sum is the whole
 * gradient). So:
 *   partial -> replicate (all_reduce)    backward: nothing
 *   replicate -> shard (local split)     backward: all_gather
 *   shard -> replicate (all_gather)      backward: split, or reduce_scatter
 *                                        when the gradient is partial
 *   partial -> shard (reduce_scatter)    backward: all_gather
 * and the local backward of each style:
 *   colwise    dW_i = dY_i^T X, db_i = sum dY_i: local; dX = sum_i dY_i W_i
 *              is partial, so a replicated input's gradient all-reduces
 *   rowwise    dW_i = dY^T X_i: local; db = sum dY, the whole of it on
 *              every rank in every bias mode; dX_i = dY W_i stays shard(-1)
 *   replicate  everything local and replicated
 * Weight gradients are partial over the dp dims (each dp rank's batch
 * part) until the optimizer phase averages them; they never need tp
 * communication.
 */
#ifndef TPSIM_NN_H
#define TPSIM_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "arith.h"
#include "bound.h"
#include "dtensor.h"
#include "nn_event.h"
#include "spec.h"

/* Where a module runs: the mesh, which mesh dim is tp, the sink, the step;
 * `save`: forward keeps what backward needs (training). */
struct tps_nn_context {
	const struct tps_mesh *mesh;
	int tp_dim;
	struct tps_event_sink sink;
	int step;
	enum tps_phase phase;
	bool save;
	/* An injected mistake and the module it happens in (NULL: none;
	 * tps_mistake_site). */
	enum tps_mistake mistake;
	const struct tps_module_spec *mistake_site;
	/* The dtype of each role (spec.h); zeroed: float32 everywhere.
	 * What a phase stores is tps_nn_store_dtype's. */
	struct tps_dtypes dtypes;
	/* What a colwise linear keeps of an input all-gathered from
	 * sequence shards (spec.h; zeroed: the shard, Megatron's). */
	enum tps_sp_save sp_save;
	/* FSDP's gathered parameters (tps_nn_module_forward): per rank
	 * (the mesh's world_size entries), the bytes (in the params dtype) of the
	 * gathered tp-local parameters alive now, and the most alive at
	 * once since the caller last set peak; NULL: not counted. */
	int64_t *gathered_now, *gathered_peak;
	/* Activation recompute (spec.h; zeroed: none): under "selective"
	 * an attention keeps no probabilities and runs its core again in
	 * backward. */
	enum tps_recompute recompute;
};

/*
 * The context of a forward run again in backward (activation recompute,
 * docs/symbolic.md), from backward's ctx: it saves what backward needs,
 * its events go to ctx's sink marked "recompute" (struct tps_event), and
 * what it stores is stored in the activations' dtype, as forward stored
 * it, although its phase is backward. It points at ctx's sink: it must
 * not outlive *ctx.
 */
struct tps_nn_context
tps_nn_recompute_context(const struct tps_nn_context *ctx);

/* The dtype the values ctx's phase computes are stored in: activations in
 * forward, grads in backward, params in setup and in the optimizer phase
 * (whose compute events are the updated parameters). */
enum tps_dtype tps_nn_store_dtype(const struct tps_nn_context *ctx);
/* The dtypes of a collective's sum in ctx's phase: the reduce dtype, then
 * stored as tps_nn_store_dtype. */
struct tps_comm_dtypes tps_nn_comm_dtypes(const struct tps_nn_context *ctx);
/* Rounds every rank's values of v to dtype d (a store, dtype.h); meta
 * tensors have none. */
void tps_nn_round(struct tps_dtensor *v, enum tps_dtype d);

/* The tp layouts a tensor went through in forward, first to last, so that
 * backward can walk them back. */
#define TPS_LAYOUT_CHAIN_MAX 4
struct tps_layout_chain {
	int n;
	struct tps_placement tp[TPS_LAYOUT_CHAIN_MAX];
};

/* A parameter, as the ranks hold it and as the reference holds it. */
struct tps_param {
	char name[TPS_NAME_MAX + 8]; /* "fc1.weight" */
	const char *module;	     /* "fc1": its module's name */
	/* The reference's global value: at setup the initial value (what
	 * the trace's "params" record), then updated by the reference's
	 * optimizer. */
	struct tps_tensor global;
	struct tps_dtensor value; /* every rank's shard or copy */
	/* Training: the gradient after backward (partial over dp until the
	 * optimizer phase averages it), the optimizer state on the rank's
	 * shard, and the reference's counterparts. */
	struct tps_dtensor grad;
	struct tps_dtensor state[2];
	struct tps_tensor ref_grad;
	struct tps_tensor ref_state[2];
	/* The reference's error bounds (bound.h, docs/numerics.md) of its
	 * global value (zero at setup, then carried through each update),
	 * of ref_grad and of ref_state. */
	struct tps_bound ref_bound, ref_grad_bound, ref_state_bound[2];
	/* ref_master's bound, when there is a master copy. */
	struct tps_bound ref_master_bound;
	/* The optimizer's own copy of value (and of global), in the
	 * master_params dtype, when it is not the params dtype (spec.h):
	 * made at the first step from the parameter, updated in its place;
	 * the parameter is then its rounding. Empty otherwise. */
	struct tps_dtensor master;
	struct tps_tensor ref_master;
	/* ZeRO stage 3 / FSDP (docs/zero.md): the dp dims value is sharded
	 * over between uses (0: none), each rank holding shard(0,local) of
	 * its tp-local tensor; whether forward frees the gathered value
	 * (reshard_after_forward); and, while value holds it gathered, the
	 * shard. tps_nn_module_forward and _backward gather and free it. */
	unsigned fsdp_mask;
	bool fsdp_reshard;
	struct tps_dtensor fsdp_shard;
};

#define TPS_MODULE_MAX_PARAMS 2

/* What a module's parameter is, before it exists. */
struct tps_param_spec {
	const char *suffix; /* "weight": the parameter is "<module>.weight" */
	struct tps_shape shape;	 /* global */
	int64_t fan_in;		 /* nn.Linear's init bound 1/sqrt(fan_in) */
	/* PyTorch's default init of it (init method "torch"): uniform
	 * (nn.Linear's, a = 1/sqrt(fan_in)), normal (nn.Embedding's, a = 1
	 * through fan_in 1), ones or zeros (nn.LayerNorm's). */
	enum tps_init_method torch;
	struct tps_placement tp; /* on the tp dim; replicate on the others */
};

/* What the memory estimate of a module needs to know about the run. */
struct tps_memory_context {
	int64_t world, tp; /* world size, tp group size */
	/* Training: gradients and this many optimizer state tensors per
	 * parameter, held like the parameter. */
	bool training;
	int optimizer_states;
};

struct tps_module;

/*
 * The error-bound pass (docs/numerics.md): the reference run again, each
 * tensor carrying its bound (bound.h). Every tensor it bounds is reported
 * to a bound sink under the name its trace events have, with the step
 * and phase, so that a tool can align bounds with events: "<m>.out"
 * (forward), "loss" (forward), "output.grad", "<m>.in.grad" and
 * "<param>.grad" (backward), "<param>" after its update (optimizer).
 */
struct tps_bound_event {
	int step;
	enum tps_phase phase;
	const char *tensor;
	const struct tps_tensor *value; /* the reference's */
	const struct tps_bound *bound;
};

struct tps_bound_sink {
	enum tps_status (*emit)(void *ctx, const struct tps_bound_event *ev,
				struct tps_error *err);
	void *ctx; /* emit NULL: no sink */
};

/* What a module's bound rules need to know of the run. */
struct tps_bound_ctx {
	struct tps_pool *pool; /* the reference's matmuls' */
	/* Unit roundoffs (bound.h) of the rules' float32 arithmetic: a
	 * matmul's accumulation (float32, as tensor cores) and each value
	 * the rule computes. A module's output, input gradient and
	 * parameter gradients in a narrower dtype are rounded once more
	 * when stored: the sequence adds that rounding to the rule's
	 * bound (nn_seq.c). */
	double u_acc, u_act, u_grad;
	/*
	 * With a narrower dtype, a sum's chain of roundings gains some of
	 * the narrow dtype inside a module: a rank's partial sum stored
	 * before the collective, the collective's member rounding and its
	 * additions in the reduce dtype, the matmul stored before its
	 * bias. `narrow` is that chain's relative error,
	 * (1 + u_store)^3 (1 + u_reduce)^(tp + dp) - 1, which every sum's
	 * rule multiplies in (tps_bound_ctx_gamma); 0 when every role is
	 * float32. `exact_limit`: integers stay exact through every store
	 * and sum below it (2^24, or 2^bits of the narrowest dtype).
	 */
	double narrow, exact_limit;
	/* The dtypes (reduce: the collectives' sums), for the rules that
	 * take them whole (nn_bounds.h). */
	struct tps_dtypes dtypes;
	/* The tp group's size (rowwise partial_split adds b / tp on each
	 * rank), and the factor between the simulation's backward values
	 * and the reference's: each dp rank's loss is scaled so that the
	 * dp average gives the global gradient, so its gradients are dp
	 * times the reference's until the average, and integers stay exact
	 * only while grad_scale times their sums stays below 2^24. */
	int tp;
	double grad_scale;
	int step;
	enum tps_phase phase;
	struct tps_bound_sink sink;
};

/* gamma_n(u) (bound.h) with bc's narrow chain multiplied in:
 * (1 + gamma_n(u)) (1 + narrow) - 1, rounded up. */
double tps_bound_ctx_gamma(const struct tps_bound_ctx *bc, int64_t n,
			   double u);

/* t stored in dtype d (a no-op for float32): its values rounded as the
 * reference stores them, its bound e widened by the rounding. */
void tps_nn_bound_store(struct tps_tensor *t, struct tps_bound *e,
			enum tps_dtype d);

/* *e = the bound of sum = a + b (ea and eb each a bound or "none"):
 * e_a + e_b and the sum's rounding at unit roundoff u, 0 where both are
 * 0 (the same floats added alike); docs/numerics.md, "residual". */
enum tps_status tps_nn_sum_bound(double u, const struct tps_tensor *sum,
				 const struct tps_bound *ea,
				 const struct tps_bound *eb, struct tps_bound *e,
				 struct tps_error *err);

/* Reports a bound to bc's sink under bc's step and phase (no sink: a
 * no-op). */
enum tps_status tps_bound_emit(const struct tps_bound_ctx *bc,
			       const char *tensor,
			       const struct tps_tensor *value,
			       const struct tps_bound *bound,
			       struct tps_error *err);

/* The slots of struct tps_module's saved_more. */
#define TPS_MODULE_SAVED_MORE 4

struct tps_module_ops {
	/* The parallel forward: x (redistributed in place as the style needs)
	 * -> *y, new. Emits one event per step. On error *y is untouched. */
	enum tps_status (*forward)(const struct tps_nn_context *ctx,
				   struct tps_module *m, struct tps_dtensor *x,
				   struct tps_dtensor *y,
				   struct tps_error *err);
	/* The parallel backward: *dy, the gradient of forward's output in
	 * the layout forward left it (partial as replicate), is consumed;
	 * *dx gets the input's gradient in the layout the input arrived in
	 * (dx NULL: the input needs none). Parameter gradients land in each
	 * parameter's grad. Frees what forward saved. */
	enum tps_status (*backward)(const struct tps_nn_context *ctx,
				    struct tps_module *m,
				    struct tps_dtensor *dy,
				    struct tps_dtensor *dx,
				    struct tps_error *err);
	/* The single-device reference on each parameter's global value:
	 * y = module(x), its matmuls shared out over pool's threads (the
	 * same bytes for any pool). For training the model keeps x in
	 * ref_saved_in for reference_backward. */
	enum tps_status (*reference_forward)(struct tps_module *m,
					     struct tps_pool *pool,
					     const struct tps_tensor *x,
					     struct tps_tensor *y,
					     struct tps_error *err);
	/* dx (NULL: not needed) and each parameter's ref_grad from dy. */
	enum tps_status (*reference_backward)(struct tps_module *m,
					      struct tps_pool *pool,
					      const struct tps_tensor *dy,
					      struct tps_tensor *dx,
					      struct tps_error *err);
	/* The reference with its error bounds (docs/numerics.md has each
	 * type's rules). bound_forward: *y the bytes reference_forward
	 * makes, and *ey its bound from x's, ex (on any error both
	 * untouched); a composite runs its descendants through
	 * tps_nn_bound_forward_seq. The sequence keeps x and ex in
	 * ref_saved_in and ref_saved_bound for training. bound_backward:
	 * reference_backward's dx (NULL: not needed) with its bound *edx,
	 * and each parameter's ref_grad with its ref_grad_bound, from dy
	 * and its bound edy. A bound that is "none" gives "none" onward.
	 * NULL (a type without rules): the sequence runs the reference's
	 * ops and gives what they make no bound. */
	enum tps_status (*bound_forward)(struct tps_module *m,
					 const struct tps_bound_ctx *bc,
					 const struct tps_tensor *x,
					 const struct tps_bound *ex,
					 struct tps_tensor *y,
					 struct tps_bound *ey,
					 struct tps_error *err);
	enum tps_status (*bound_backward)(struct tps_module *m,
					  const struct tps_bound_ctx *bc,
					  const struct tps_tensor *dy,
					  const struct tps_bound *edy,
					  struct tps_tensor *dx,
					  struct tps_bound *edx,
					  struct tps_error *err);
	/* Fills out[0..n) with the module's parameters (at most
	 * TPS_MODULE_MAX_PARAMS), weight first, and returns n. */
	int (*parameters)(const struct tps_module_spec *spec, int tp_dim,
			  struct tps_param_spec *out);
	/* Bytes the module's parameters take: the global value plus every
	 * rank's copy or shard, and in training as much again for the
	 * gradients and for each optimizer state. Saturates at INT64_MAX. */
	int64_t (*memory_estimate)(const struct tps_module_spec *spec,
				   const struct tps_memory_context *mc);
	/* Rules across the module's own keys that their ranges cannot
	 * state (attention: embed_dim a multiple of num_heads), on the spec
	 * the config has just read: on failure *key gets the key the
	 * message is about. NULL: none. */
	enum tps_status (*check)(const struct tps_module_spec *spec,
				 const char **key, struct tps_error *err);
	/* The bytes an element of what forward keeps takes on a real
	 * system, for the memory figures (tps_module_saved_bytes): of
	 * saved_in, and of each saved_more slot; 0 (the default) is the
	 * activations' dtype. An embedding's input is token ids, float32
	 * here; an attention keeps its probabilities in float32. */
	int saved_in_size;
	int saved_more_size[TPS_MODULE_SAVED_MORE];
};

/*
 * What a dropout draws its masks from (nn_dropout.c, docs/transformer.md).
 * The mask of an element is a pure function of the run's seed, the
 * module's name, the step and where the element is, so the ranks and the
 * reference draw the same bits without sharing a generator's state.
 */
struct tps_dropout_state {
	uint64_t seed; /* the run's (init.seed), set by tps_model_init */
	/* The tp layout of the module's input under the plan, and the tp
	 * group's size: the ranks' forward sets them, and tps_model_init
	 * sets them first from a meta forward of the model without its
	 * injected mistake, so that the reference knows them before any
	 * step. known: set. */
	bool known;
	struct tps_placement tp;
	int tp_size;
	/* The step the reference's next forward (and the backward after
	 * it) draws for: its bound pass sets it. */
	int ref_step;
	/* The last training forward inside the TP region: whether every tp
	 * rank's mask was the same as its group's local rank 0's (over the
	 * elements both hold, in local order), the symptom PyTorch's
	 * test_tp_random_state.py checks for. */
	bool shards_identical;
};

/* A module as it runs. */
struct tps_module {
	const struct tps_module_spec *spec; /* not owned */
	const struct tps_module_ops *ops;
	struct tps_param *params; /* n_params, in the model's array */
	int n_params;
	/* Saved by forward for backward, as llm.c keeps its activations:
	 * the input as the computation consumed it (after its
	 * redistributions), and the tp layouts the input and the output went
	 * through. The reference keeps its input too. */
	struct tps_dtensor saved_in;
	struct tps_layout_chain in_chain, out_chain;
	/* prepare_input / prepare_output: the layouts the sequence runner
	 * brought the module's input (output) through. */
	struct tps_layout_chain prep_chain;
	struct tps_tensor ref_saved_in;
	/* The bound pass's: ref_saved_in's bound (bound_forward). */
	struct tps_bound ref_saved_bound;
	/* What a module keeps besides its input: attention its q, k and v
	 * (the ranks' and the reference's) and the ranks' softmax
	 * probabilities; gated its two bodies' outputs. */
	struct tps_dtensor saved_more[TPS_MODULE_SAVED_MORE];
	struct tps_tensor ref_saved_more[3];
	/* The bound pass's: ref_saved_more's bounds. */
	struct tps_bound ref_saved_more_bound[3];
	/* Training: the reference keeps inputs for backward. */
	bool training;
	/* The run's dtypes (the spec's; NULL: float32 everywhere), for the
	 * reference, which stores as the ranks do: tps_nn_reference_forward
	 * and _backward round what a module computes. */
	const struct tps_dtypes *dtypes;
	/* dropout only */
	struct tps_dropout_state dropout;
	/* Set by a parent that sums its children's input gradients before
	 * reducing them once (attention's q, k, v, as Megatron's fused QKV):
	 * backward leaves dx as computed (partial) instead of walking it
	 * back through the input's layouts. */
	bool keep_partial_dx;
	/* An embedding whose weight a later linear also uses ("tie"; that
	 * linear's params point at this module's): the linear's backward
	 * runs first and leaves its part of the gradient in the
	 * parameter's grad (ref_grad, ref_grad_bound), to which this
	 * module's backward adds its own (nn_embedding.c). */
	bool tied;
};

/* Frees what forward saved (backward does it; a failed run calls this). */
void tps_module_free_saved(struct tps_module *m);

/* The bytes of what m keeps for backward on rank r (saved_in and
 * saved_more), each tensor at its size on a real system: its type's
 * saved_in_size and saved_more_size, or the activations' dtype in dt
 * (tps_dtype_size). */
int64_t tps_module_saved_bytes(const struct tps_module *m,
			       const struct tps_dtypes *dt, int r);

/*
 * The start and the end of every module type's forward, so that what a
 * forward keeps for backward is kept, and forgotten, in one way.
 *
 * tps_nn_forward_begin: in training (ctx->save), forgets what m saved at
 * the step before (its input, its layout chains): each step starts afresh.
 *
 * tps_nn_forward_end, given forward's status st: on success hands *out
 * over as *y and, in training, keeps *x (the input as the computation
 * consumed it, after its redistributions; NULL for a module that keeps
 * none: attention, residual) as m->saved_in for backward, freeing any
 * input saved before; on failure frees *out and everything m and its
 * descendants saved, so that a failed forward leaves them holding
 * nothing. Returns st.
 */
void tps_nn_forward_begin(const struct tps_nn_context *ctx,
			  struct tps_module *m);
enum tps_status tps_nn_forward_end(const struct tps_nn_context *ctx,
				   struct tps_module *m, struct tps_dtensor *x,
				   struct tps_dtensor *out,
				   struct tps_dtensor *y, enum tps_status st);

/*
 * Sequences of modules: [begin, end) of a pre-order module array, whose
 * top-level modules run in order (a composite runs its descendants
 * itself). The model's whole list is one; a residual's body is another.
 */
/* The module after m and its descendants. */
struct tps_module *tps_module_next(struct tps_module *m);
/* m->ops->forward and ->backward, as every sequence and container calls
 * them: under FSDP (a parameter's fsdp_mask), each of m's own parameters
 * is all-gathered over dp first (an event), and freed after (forward:
 * when fsdp_reshard; backward: always, its gradient then reduce_scattered
 * over dp, an event), its bytes counted in ctx->gathered_now and _peak
 * while gathered. Otherwise just the op. Contracts as the ops'. */
enum tps_status tps_nn_module_forward(const struct tps_nn_context *ctx,
				      struct tps_module *m,
				      struct tps_dtensor *x,
				      struct tps_dtensor *y,
				      struct tps_error *err);
enum tps_status tps_nn_module_backward(const struct tps_nn_context *ctx,
				       struct tps_module *m,
				       struct tps_dtensor *dy,
				       struct tps_dtensor *dx,
				       struct tps_error *err);
/* Whether m or any of its descendants has parameters. */
bool tps_module_trains(const struct tps_module *m);
/* Forward through the sequence: *x is consumed, *y made. */
enum tps_status tps_nn_forward_seq(const struct tps_nn_context *ctx,
				   struct tps_module *begin,
				   struct tps_module *end,
				   struct tps_dtensor *x, struct tps_dtensor *y,
				   struct tps_error *err);
/* Backward through it, last module first: *dy is consumed; *dx gets the
 * sequence input's gradient (dx NULL: not wanted, and modules before the
 * last one that trains are skipped). Frees what forward saved. */
enum tps_status
tps_nn_backward_seq(const struct tps_nn_context *ctx, struct tps_module *begin,
		    struct tps_module *end, struct tps_dtensor *dy,
		    struct tps_dtensor *dx, struct tps_error *err);
/* tps_nn_backward_seq, but the first module's input gradient is left as
 * its backward computed it (partial, for a colwise linear on a replicated
 * input) rather than walked back through its input's layouts, as
 * keep_partial_dx does: for a parent that sums several bodies' input
 * gradients before one reduction (gated). A first module under
 * prepare_input walks its prepared layouts back as ever. */
enum tps_status tps_nn_backward_seq_partial(const struct tps_nn_context *ctx,
					    struct tps_module *begin,
					    struct tps_module *end,
					    struct tps_dtensor *dy,
					    struct tps_dtensor *dx,
					    struct tps_error *err);
/* One module's reference forward (its ops'), its output then stored in
 * the activations dtype (m->dtypes), as the ranks store it. */
enum tps_status tps_nn_reference_forward(struct tps_module *m,
					 struct tps_pool *pool,
					 const struct tps_tensor *x,
					 struct tps_tensor *y,
					 struct tps_error *err);
/* One module's reference backward, dx and its parameters' ref_grad then
 * stored in the grads dtype. */
enum tps_status tps_nn_reference_backward(struct tps_module *m,
					  struct tps_pool *pool,
					  const struct tps_tensor *dy,
					  struct tps_tensor *dx,
					  struct tps_error *err);
/* The dtype of role r in m's run (float32 when m->dtypes is NULL). */
enum tps_dtype tps_module_dtype(const struct tps_module *m,
				enum tps_dtype_role r);
/* The same for the reference; with save, each module keeps its input in
 * ref_saved_in for reference backward. */
enum tps_status tps_nn_reference_forward_seq(struct tps_module *begin,
					     struct tps_module *end,
					     struct tps_pool *pool, bool save,
					     const struct tps_tensor *x,
					     struct tps_tensor *y,
					     struct tps_error *err);
enum tps_status tps_nn_reference_backward_seq(struct tps_module *begin,
					      struct tps_module *end,
					      struct tps_pool *pool,
					      const struct tps_tensor *dy,
					      struct tps_tensor *dx,
					      struct tps_error *err);
/* The same with error bounds (bound_forward, bound_backward): the values
 * are the reference's bytes, each with its bound; each module's output
 * (and in backward each input gradient and parameter gradient) is
 * reported to bc's sink. */
enum tps_status tps_nn_bound_forward_seq(struct tps_module *begin,
					 struct tps_module *end,
					 const struct tps_bound_ctx *bc,
					 bool save, const struct tps_tensor *x,
					 const struct tps_bound *ex,
					 struct tps_tensor *y,
					 struct tps_bound *ey,
					 struct tps_error *err);
enum tps_status tps_nn_bound_backward_seq(struct tps_module *begin,
					  struct tps_module *end,
					  const struct tps_bound_ctx *bc,
					  const struct tps_tensor *dy,
					  const struct tps_bound *edy,
					  struct tps_tensor *dx,
					  struct tps_bound *edx,
					  struct tps_error *err);

/* The ops table of a module type: its descriptor's (module_type.h). */
const struct tps_module_ops *tps_module_ops_of(enum tps_module_type type);

/*
 * Redistributes x to `target` (one placement per mesh dim), emitting one
 * event per step with the given module and tensor names.
 */
enum tps_status tps_nn_redistribute(const struct tps_nn_context *ctx,
				    struct tps_dtensor *x,
				    const struct tps_placement *target,
				    const char *module, const char *tensor,
				    const char *note, struct tps_error *err);

/*
 * Redistributes x so that its tp placement is `tp_target` (other mesh dims
 * unchanged), emitting one event per step with the given module and tensor
 * names. A tp_target shard dim may be negative (counted from the end).
 */
enum tps_status tps_nn_to_layout(const struct tps_nn_context *ctx,
				 struct tps_dtensor *x,
				 struct tps_placement tp_target,
				 const char *module, const char *tensor,
				 const char *note, struct tps_error *err);

/*
 * Sequence parallel, Megatron's way (docs/symbolic.md, "Sequence
 * parallelism"): a module that all-gathers a sequence-sharded input for
 * colwise matmuls keeps the shard for backward, not the gathered input,
 * and all-gathers it again in backward.
 *
 * tps_nn_keep_shard: in training under TPS_SP_SAVE_SHARD, when x is
 * sharded on tp along a dim other than its last (a sequence shard, which
 * colwise gathers), *shard gets a copy of x; otherwise *shard is left
 * empty (no locals). On error *shard is empty.
 *
 * tps_nn_regather: *out = shard all-gathered to replicate on tp, in
 * ctx's phase (backward), as recorded events named module / tensor with
 * the activations' dtype (the values are the saved ones: a gather only
 * copies). On error *out is untouched.
 */
enum tps_status tps_nn_keep_shard(const struct tps_nn_context *ctx,
				  const struct tps_dtensor *x,
				  struct tps_dtensor *shard,
				  struct tps_error *err);
enum tps_status tps_nn_regather(const struct tps_nn_context *ctx,
				const struct tps_dtensor *shard,
				const char *module, const char *tensor,
				struct tps_dtensor *out, struct tps_error *err);

/* Starts a chain at x's tp layout. */
void tps_layout_chain_start(struct tps_layout_chain *chain,
			    const struct tps_nn_context *ctx,
			    const struct tps_dtensor *x);
/* tps_nn_to_layout that also appends the new layout to chain (when it
 * changes; chain may be NULL). */
enum tps_status tps_nn_to_layout_chained(const struct tps_nn_context *ctx,
					 struct tps_dtensor *x,
					 struct tps_placement tp_target,
					 struct tps_layout_chain *chain,
					 const char *module, const char *tensor,
					 const char *note,
					 struct tps_error *err);

/* The layout a gradient takes for a tensor of layout p: p, but partial
 * becomes replicate. */
struct tps_placement tps_nn_grad_layout(struct tps_placement p);

/*
 * Walks a gradient back through a chain. g is the gradient of a tensor in
 * the chain's last layout, in any valid form (a partial dX of a replicated
 * input is one); it is redistributed to tps_nn_grad_layout of each earlier
 * layout in turn, ending at the first one (for a chain of one layout, to
 * that one). Events are named module / tensor.
 */
enum tps_status tps_nn_grad_through(const struct tps_nn_context *ctx,
				    struct tps_dtensor *g,
				    const struct tps_layout_chain *chain,
				    const char *module, const char *tensor,
				    struct tps_error *err);

/*
 * The end of a module's backward: emits g, the input's gradient as the
 * computation made it (op, note, flops), as "<module>.in.grad"; walks it
 * back through the module's in_chain; hands it over as *dx. g is consumed
 * (freed on error).
 */
enum tps_status tps_nn_input_grad(const struct tps_nn_context *ctx,
				  struct tps_module *m, struct tps_dtensor *g,
				  const char *op, const char *note,
				  int64_t flops, struct tps_dtensor *dx,
				  struct tps_error *err);

/* Stores `value` (every rank): rounds it to tps_nn_store_dtype(ctx), as
 * each computed value is stored in its dtype (a no-op in float32), then
 * emits a compute event for it, with the step, the phase and that dtype
 * of ctx. Every module computes, then emits, then uses what it stored.
 * flops: the most any one rank did (0 where not counted). */
enum tps_status tps_nn_emit_compute(const struct tps_nn_context *ctx,
				    const char *module, const char *op,
				    const char *tensor, const char *note,
				    struct tps_dtensor *value, int64_t flops,
				    struct tps_error *err);
/* Events that ctx's injected mistake made: they carry the mistake's name.
 * tps_nn_emit_mistaken_event emits ev, of any kind, with the step and
 * phase of ctx; tps_nn_emit_mistaken_compute is tps_nn_emit_compute's
 * (flops not counted). */
enum tps_status tps_nn_emit_mistaken_event(const struct tps_nn_context *ctx,
					   struct tps_event *ev,
					   struct tps_error *err);
enum tps_status tps_nn_emit_mistaken_compute(const struct tps_nn_context *ctx,
					     const char *module, const char *op,
					     const char *tensor,
					     const char *note,
					     struct tps_dtensor *value,
					     struct tps_error *err);

/* p with a negative shard dim counted from the end of an ndim tensor. */
struct tps_placement tps_nn_normalized(struct tps_placement p, int ndim);

/* Whether a and b have the same placement on every mesh dim. */
bool tps_nn_same_layout(const struct tps_dtensor *a,
			const struct tps_dtensor *b);

/* A tps_dtensor_map job (tps_nn_sum_rank): out = a + b on each rank, a
 * and b of one shape and layout (residual's and gated's sums). */
struct tps_nn_sum_job {
	const struct tps_dtensor *a, *b;
};
enum tps_status tps_nn_sum_rank(void *opaque, int r, struct tps_tensor *out,
				struct tps_error *err);

/* The parameters and memory_estimate ops of a type with no parameters
 * (activations are counted by the model; a container's bodies count
 * their own): none, 0 bytes. */
int tps_nn_no_parameters(const struct tps_module_spec *s, int tp_dim,
			 struct tps_param_spec *out);
int64_t tps_nn_no_memory(const struct tps_module_spec *s,
			 const struct tps_memory_context *mc);

/*
 * Losses (nn_loss.c), on plain tensors: the ranks' local outputs and the
 * reference's global one alike. With f = (y - t)^2 (mse) or y (sum):
 *   loss  = sum over rows r of row_scale[r] * sum over the row of f,
 *           in double, element order
 *   dy    = (float)(2 row_scale[r]) * (y - t)   (mse)
 *           (float)row_scale[r]                 (sum)
 * A row is the last dim; row_scale has one entry per row (leading dims
 * flattened). t is NULL for sum.
 */
/* The rows of y: the product of its dims but the last (1 for a vector). */
int64_t tps_loss_rows(const struct tps_tensor *y);
/* classes: cross_entropy's real classes, the first of each row (a
 * padded vocabulary's: the logits past them are -inf, out of the
 * log-sum-exp, and their gradient 0); 0 for every column. */
double tps_loss_value(enum tps_loss type, const struct tps_tensor *y,
		      const struct tps_tensor *t, const double *row_scale,
		      int64_t classes);
enum tps_status tps_loss_grad(enum tps_loss type, const struct tps_tensor *y,
			      const struct tps_tensor *t,
			      const double *row_scale, int64_t classes,
			      struct tps_tensor *dy, struct tps_error *err);

/*
 * The error bounds (bound.h, docs/numerics.md) of tps_loss_value's loss
 * (the run's, a float) and of tps_loss_grad's dy, from y's bound ey, as
 * the reference computes them with row_scale: *eloss (a scalar) and *edy
 * (y's shape). sim_scale: the row weights the simulation uses, which are
 * dp times row_scale (each dp rank's loss scaled for the dp average);
 * loss: the reference's loss; u: the gradient's unit roundoff.
 * cross_entropy's rules are nn_bounds.h's, over class_parts shards of
 * the classes (loss_parallel's tp, else 1) whose sums are all-reduced in
 * the reduce dtype; classes as tps_loss_value's (the padding's gradient
 * is an exact 0). On error the outputs are untouched.
 */
enum tps_status tps_loss_bound(enum tps_loss type, const struct tps_tensor *y,
			       const struct tps_bound *ey,
			       const struct tps_tensor *t,
			       const double *row_scale,
			       const double *sim_scale, int dp, double loss,
			       const struct tps_tensor *dy, double u,
			       int64_t classes, int64_t class_parts,
			       enum tps_dtype reduce, struct tps_bound *eloss,
			       struct tps_bound *edy, struct tps_error *err);

/*
 * Cross-entropy over class-sharded logits, PyTorch's loss_parallel
 * (nn_loss_parallel.c). y: the logits (..., C), shard(-1) on ctx's tp dim;
 * target: a class id per row of y, laid out as y's rows and whole on tp.
 * Per row, from each rank's own classes, M the max, S the sum of
 * exp(z - M) and Z the target's logit, each completed by an all_reduce
 * over tp (max, sum, sum); then on every rank
 *   loss_r = scale[r] * sum over its rows of (M + log S - Z)
 *   dz     = scale[r] * (exp(z - M) / S - onehot(target)), its own classes
 * with no backward collective. scale: one row weight per rank (world
 * size entries); partial_mask: the mesh dims the losses are partial sums
 * over (dp); classes: the real classes (a padded vocabulary's; the
 * logits from there on are -inf, out of M, S and Z, with a 0 gradient),
 * 0 for all C. Emits the statistics, their all_reduces and the loss in
 * ctx's phase, the gradient in the backward phase. On success *loss is
 * each rank's loss (a scalar, partial on partial_mask's dims, replicate
 * on the others), losses[r] the same in double, and *dy the gradient of
 * y, laid out as y. On error *loss and *dy are untouched.
 */
enum tps_status tps_nn_loss_parallel(const struct tps_nn_context *ctx,
				     const struct tps_dtensor *y,
				     const struct tps_dtensor *target,
				     const double *scale, unsigned partial_mask,
				     int64_t classes, struct tps_dtensor *loss,
				     double *losses, struct tps_dtensor *dy,
				     struct tps_error *err);

/* Each type's ops table, in its family's file (nn_linear.c,
 * nn_elementwise.c, ...), for its descriptor (module_type.c). */
extern const struct tps_module_ops tps_linear_ops;
extern const struct tps_module_ops tps_relu_ops;
extern const struct tps_module_ops tps_gelu_ops;
extern const struct tps_module_ops tps_silu_ops;
extern const struct tps_module_ops tps_dropout_ops;
extern const struct tps_module_ops tps_layernorm_ops;
extern const struct tps_module_ops tps_rmsnorm_ops;
extern const struct tps_module_ops tps_residual_ops;
extern const struct tps_module_ops tps_embedding_ops;
extern const struct tps_module_ops tps_attention_ops;
extern const struct tps_module_ops tps_gated_ops;

#endif
