/*
 * The run spec: what a validated config says, as plain structs. The config
 * module (config.h) makes it from JSON; the model (model.h) runs it; nothing
 * here knows JSON.
 *
 * Every enum has exactly one name table, NULL-terminated and indexed by the
 * enum's values. The config reads names through it and the trace writes
 * them from it, so the two cannot disagree:
 *
 *   tps_style_names[TPS_STYLE_ROWWISE]                  -> "rowwise"
 *   tps_name_index(tps_style_names, "rowwise")          -> TPS_STYLE_ROWWISE
 *
 * The module types' names are in their descriptors (module_type.h), with
 * everything else about each type.
 */
#ifndef TPSIM_SPEC_H
#define TPSIM_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "dtensor.h"
#include "dtype.h"
#include "mesh.h"
#include "optim.h"
#include "pipeline_schedule.h"
#include "tensor.h"

#define TPS_NAME_MAX	128
#define TPS_MAX_MODULES 4096 /* in a model, descendants included */
#define TPS_POINTER_MAX 192

/* Index of name in a NULL-terminated name table, or -1. */
int tps_name_index(const char *const *table, const char *name);

struct tps_module_spec;
/* Whether the module has a width (out_features, and in_features but for
 * an embedding): a linear changes it, a layernorm needs it, an embedding
 * makes it; the others keep whatever arrives (its type's width rule,
 * module_type.h). */
bool tps_module_has_width(const struct tps_module_spec *m);

struct tps_model_spec;
/* Whether the model starts with a module that makes the width (an
 * embedding), so that its input holds token ids. */
bool tps_model_takes_tokens(const struct tps_model_spec *spec);
/* The dims of the activations: the input's, one more after an
 * embedding. */
int tps_model_activation_ndim(const struct tps_model_spec *spec);
/* The model's output shape: the input's, with an embedding's dim added
 * and each width the modules set in turn as its last dim. */
struct tps_shape tps_model_spec_output_shape(const struct tps_model_spec *spec);
/* The classes of the output's last dim: spec->classes when the head's
 * vocabulary is padded (the columns past them are padding), else the
 * output's width. */
int64_t tps_model_spec_classes(const struct tps_model_spec *spec);
/* The first module that sets the width (tps_module_has_width) whose global
 * output, the input's rows by its width, has more than `limit` elements,
 * or -1; *shape gets that output's shape. Element counts only: nothing is
 * allocated, and a meta run and a values run each pass their own limit
 * (TPS_MAX_META_ELEMENTS, TPS_MAX_ELEMENTS). */
int tps_model_spec_output_over(const struct tps_model_spec *spec, int64_t limit,
			       struct tps_shape *shape);

enum tps_module_type {
	TPS_MODULE_LINEAR,
	TPS_MODULE_RELU,
	TPS_MODULE_GELU,
	TPS_MODULE_LAYERNORM, /* over the last dim, as nn.LayerNorm(dim) */
	TPS_MODULE_RESIDUAL,  /* x + body(x): its descendants are the body */
	/* nn.Embedding(num_embeddings, embedding_dim): token ids -> rows of
	 * its weight. First in the model, whose input is then token ids. */
	TPS_MODULE_EMBEDDING,
	/* Multi-head self-attention: its four descendants are the linears
	 * q, k, v and o ("<name>.q", ...), (embed_dim, embed_dim) each. */
	TPS_MODULE_ATTENTION,
	TPS_MODULE_RMSNORM, /* over the last dim, as nn.RMSNorm(dim) */
	TPS_MODULE_SILU,    /* x sigmoid(x), as nn.SiLU */
	/* gate(x) * up(x), element-wise: its descendants are two bodies
	 * run on the same input, the gate's first (n_first_body of them),
	 * then the up's (SwiGLU's w2's input, silu(w1 x) * w3 x). */
	TPS_MODULE_GATED,
	/* nn.Dropout(p) in training, the identity in inference; masks from
	 * seeded counters on tp-aware streams (nn_dropout.c) */
	TPS_MODULE_DROPOUT,
};
/* The number of module types (a define, not a member, so that switches
 * over the type need no case for it): the length of module_type.h's
 * table of descriptors, which has one per type. */
#define TPS_MODULE_TYPE_COUNT (TPS_MODULE_DROPOUT + 1)

/* How a module's weights are split over tp (docs/design.md section 2). A module
 * no plan key matches is TPS_STYLE_REPLICATE with `planned` false. */
enum tps_style {
	TPS_STYLE_COLWISE,   /* ColumnParallelLinear: W shard(0) */
	TPS_STYLE_ROWWISE,   /* RowParallelLinear: W shard(1) */
	TPS_STYLE_REPLICATE, /* every rank computes the whole module */
	/* SequenceParallel: a layernorm on the ranks' sequence shards, its
	 * weight replicated and its weight gradient all-reduced over tp. */
	TPS_STYLE_SEQUENCE,
	/* VocabParallelEmbedding: the weight's rows (the vocabulary) split
	 * over tp; ids outside a rank's rows give zeros, then an all_reduce
	 * (or a reduce_scatter into sequence shards). */
	TPS_STYLE_VOCAB,
	/* PrepareModuleInput / PrepareModuleOutput: the module's input (or
	 * output) must arrive in `input` (`output`) and is redistributed to
	 * `desired_input` (`desired_output`); nothing else changes. */
	TPS_STYLE_PREPARE_INPUT,
	TPS_STYLE_PREPARE_OUTPUT,
};
extern const char *const tps_style_names[];

/* Where a rowwise layer adds its (replicated) bias. */
enum tps_bias_mode {
	TPS_BIAS_AFTER_REDUCE,	/* once, after the all_reduce (Megatron) */
	TPS_BIAS_PARTIAL_SPLIT, /* b/N on every rank, before it (DTensor) */
	TPS_BIAS_RANK0,		/* local rank 0 adds b before it (nanotron) */
};
extern const char *const tps_bias_mode_names[];

enum tps_uneven {
	TPS_UNEVEN_CHUNK,     /* torch.chunk: ceil(n/k), trailing short */
	TPS_UNEVEN_DIVISIBLE, /* Megatron: n % k != 0 is an error */
};
extern const char *const tps_uneven_names[];

enum tps_init_method {
	TPS_INIT_ARANGE, /* 1, 2, 3, ... row-major */
	TPS_INIT_ONES,
	TPS_INIT_ZEROS,
	TPS_INIT_UNIFORM, /* U(-a, a) */
	TPS_INIT_NORMAL,  /* N(0, a^2) */
	TPS_INIT_TOKENS,  /* integer ids, uniform in [0, a) */
	/* Parameters only: each parameter's PyTorch default (nn.h's
	 * tps_param_spec.torch). */
	TPS_INIT_TORCH,
};
extern const char *const tps_init_method_names[];

/* How the batch (dim 0 of the input) is split over the dp ranks: dp rank
 * r is r in the flattened dp group (row-major over the dp dims in mesh
 * order, as mesh["dp", "cp"]._flatten()). */
enum tps_sampler {
	/* torch.chunk over the flattened group: contiguous chunks, the
	 * chunk rule once (5 rows over 4 dp ranks: 2, 2, 1, 0). */
	TPS_SAMPLER_CHUNK,
	TPS_SAMPLER_DISTRIBUTED, /* DistributedSampler, shuffle=False:
				    dp rank r takes samples r, r+dp, ... */
	/* DTensor's Shard(0) on each dp dim in mesh order: the chunk rule
	 * dim by dim, a chunk of a chunk (5 rows over (2, 2): 2, 1, 1, 1).
	 * The same as chunk over a single dp dim. */
	TPS_SAMPLER_CHUNK_OF_CHUNKS,
};
extern const char *const tps_sampler_names[];

/* A classic mistake the simulation can make on purpose ("inject"), so that
 * its symptom can be seen and named: seed 000's pitfalls and seed 003's
 * claim. */
enum tps_mistake {
	/* Rowwise: every rank adds the whole bias before the all_reduce, so
	 * the output carries (tp - 1) extra copies of it. */
	TPS_MISTAKE_BIAS_EVERY_RANK,
	/* Rowwise: each rank takes its partial sum for the output; the
	 * all_reduce that adds them never happens. */
	TPS_MISTAKE_SKIP_ALL_REDUCE,
	/* Colwise with a replicated output (gather_output): each rank returns
	 * its local shard [..., out_r]; the all_gather never happens. */
	TPS_MISTAKE_SKIP_GATHER,
	/* Colwise or rowwise: the weight is sharded on the other dim (rows
	 * and columns swapped), so the local matmul's shapes do not fit. */
	TPS_MISTAKE_WRONG_SHARD_DIM,
	/* Training (seed 003's claim): every tp-sharded parameter's gradient
	 * is all-reduced over tp, so each rank's shard becomes the sum of
	 * every rank's different shard. */
	TPS_MISTAKE_TP_ALLREDUCE_WEIGHT_GRAD,
	/* Training: a dropout inside the TP region (on tp-sharded
	 * activations) draws every tp rank's mask from one stream, so the
	 * shards get the same mask (PyTorch's test_tp_random_state checks
	 * that they do not). */
	TPS_MISTAKE_SAME_DROPOUT_SEED,
};
extern const char *const tps_mistake_names[];
#define TPS_MISTAKE_BIT(m) (1u << (m))

enum tps_mode {
	TPS_MODE_INFERENCE, /* one forward pass */
	TPS_MODE_TRAINING,  /* forward, loss, backward, optimizer; `steps` */
};
extern const char *const tps_mode_names[];

/* Losses over the global batch (docs/design.md section 2). */
enum tps_loss {
	TPS_LOSS_MSE, /* mean over all elements of (y - target)^2 */
	TPS_LOSS_SUM, /* sum of all output elements (seed 004's output.sum()) */
	/* mean over the rows of logsumexp(y) - y[target]: the last dim holds
	 * the logits of its classes, the target a class id per row. */
	TPS_LOSS_CROSS_ENTROPY,
};
extern const char *const tps_loss_names[];

/* What the dp average of the gradients means. */
enum tps_dp_grad {
	/* Each dp rank scales its loss so the average is the gradient of the
	 * loss over the global batch. */
	TPS_DP_GRAD_GLOBAL,
	/* As DDP: the average of the gradients of the unscaled local
	 * losses; the run's loss is the mean of the local losses. */
	TPS_DP_GRAD_DDP,
};
extern const char *const tps_dp_grad_names[];

/* ZeRO over the dp dims (docs/zero.md): stage 0 is none (plain DDP). Each
 * parameter's tp-local tensor is sharded on dim 0 over the flattened dp
 * group by the chunk rule: stage 1 shards the optimizer state (and the
 * master copy), 2 also the gradients, 3 also the parameters. */
struct tps_zero_spec {
	int stage; /* 0..3 */
	/* Stage 3: free each gathered parameter after its forward and
	 * gather it again before its backward (fully_shard's default). */
	bool reshard_after_forward;
	/* Stage 1: Megatron's distributed optimizer, the gradient
	 * reduce_scattered (into a full-size buffer) instead of
	 * all_reduced. */
	bool distributed_optimizer;
};

/*
 * What a colwise linear keeps for backward when its input arrived in
 * sequence shards and was all-gathered for the matmul (sequence
 * parallel; docs/symbolic.md, "Sequence parallelism").
 */
enum tps_sp_save {
	/* The sequence shard, all-gathered again in backward for dW:
	 * Megatron's LinearWithGradAccumulationAndAsyncCommunication
	 * (Korthikanti et al. 2022, section 4.2.2). */
	TPS_SP_SAVE_SHARD,
	/* The gathered input, as the matmul consumed it: what autograd
	 * keeps under PyTorch's DTensor (ColwiseParallel with
	 * input_layouts Shard(1)); no backward all_gather. */
	TPS_SP_SAVE_GATHERED,
};
extern const char *const tps_sp_save_names[];

/* Activation recompute ("recompute"; Korthikanti et al. 2022,
 * docs/symbolic.md "Activation recompute"). */
enum tps_recompute {
	/* Forward keeps what backward needs (an attention its softmax
	 * probabilities too). */
	TPS_RECOMPUTE_NONE,
	/* Each attention keeps its q, k and v but not the probabilities;
	 * backward runs the core (q k^T, softmax, the product with v)
	 * again from them, recorded (Megatron's --recompute-granularity
	 * selective: core_attention checkpointed). */
	TPS_RECOMPUTE_SELECTIVE,
	/* Each transformer_block keeps only its input; backward runs the
	 * block's forward again, recorded, then its backward (Megatron's
	 * --recompute-granularity full, uniform, one layer a chunk). */
	TPS_RECOMPUTE_FULL,
};
#define TPS_RECOMPUTE_COUNT 3
/* "none", "selective", "full": the config's values; NULL-terminated. */
extern const char *const tps_recompute_names[];

/* One virtual stage's modules: top-level module indices first..last,
 * inclusive (the n-th top-level module of the spec's list, counting a
 * composite with its descendants as one). */
struct tps_pp_range {
	int first, last;
};

/*
 * Pipeline parallelism over a mesh dim ("pipeline"; docs/pipeline.md):
 * the model cut into p v virtual stages, virtual stage k = c p + s (model
 * chunk c of stage s) on the ranks whose coordinate on `dim` is s; each
 * dp rank's part of the batch cut in `microbatches` microbatches, run in
 * the schedule's order, their gradients accumulated before one optimizer
 * step. A zeroed struct is no pipeline.
 */
struct tps_pipeline_spec {
	bool enabled;
	int dim;	  /* the pp mesh dim's index */
	int p;		  /* its size: the stages */
	int microbatches; /* m */
	enum tps_pp_schedule schedule;
	int virtual_stages; /* v: 1 but for interleaved_1f1b */
	/* p v ranges, virtual stage k's at k, covering every top-level
	 * module once, in order; owned (tps_model_spec_free). */
	struct tps_pp_range *ranges;
};

/* Where the input batch is loaded. */
enum tps_input_source {
	TPS_INPUT_EVERY_RANK, /* every rank's data loader yields its dp part */
	TPS_INPUT_TP_ROOT,    /* local rank 0 of each tp group loads it and
				 broadcasts it over tp (seed 004's script) */
};
extern const char *const tps_input_source_names[];

/* How much of each tensor the trace writes ("trace": {"values": ...}). */
enum tps_trace_values {
	TPS_TRACE_VALUES_FULL,
	TPS_TRACE_VALUES_SUMMARY,
	TPS_TRACE_VALUES_NONE,
};
extern const char *const tps_trace_values_names[];

/* What a run computes ("compute"): values (the default), or shapes,
 * placements and collectives only, on meta tensors (docs/symbolic.md). */
enum tps_compute {
	TPS_COMPUTE_VALUES,
	TPS_COMPUTE_SYMBOLIC,
};
extern const char *const tps_compute_names[];

/*
 * The roles a run's tensors play, each stored in a dtype of its own
 * ("dtype" in the config; docs/config.md, docs/design.md section 3).
 * Every store rounds to its role's dtype, to nearest even; arithmetic is
 * float32 in between (a matmul accumulates in float32, as tensor cores
 * do, and rounds once when it stores).
 */
enum tps_dtype_role {
	/* The parameters the ranks and the reference compute with, as
	 * Megatron's params_dtype: rounded at setup and after each update. */
	TPS_ROLE_PARAMS,
	/* The optimizer's own copy of the parameters ("main params",
	 * master weights): when it differs from params (float32 for bf16
	 * params), the update runs on it and the parameter is its rounding;
	 * when equal, no copy is kept and the update rounds into the
	 * parameter itself. */
	TPS_ROLE_MASTER_PARAMS,
	/* The input (but token ids) and every value the forward stores: each
	 * module's output and the partial sums it reduces. The loss is
	 * computed in float32 whatever this says, as mixed-precision
	 * training computes it. */
	TPS_ROLE_ACTIVATIONS,
	/* Every gradient the backward stores, the activations' and the
	 * parameters', and their dp average. */
	TPS_ROLE_GRADS,
	/* sgd's momentum buffer, adamw's exp_avg and exp_avg_sq. */
	TPS_ROLE_OPTIMIZER_STATE,
	/* The running sum of a collective's reduction (all_reduce,
	 * reduce_scatter: comm.h): bfloat16 adds in bfloat16, as NCCL does
	 * for a bf16 tensor; float32 sums the members in float32 and rounds
	 * once, as Megatron's grad reduce in fp32. */
	TPS_ROLE_REDUCE,
};
#define TPS_DTYPE_ROLE_COUNT 6
/* "params", "master_params", "activations", "grads", "optimizer_state",
 * "reduce": the config's keys; NULL-terminated. */
extern const char *const tps_dtype_role_names[];

/* The dtype of each role; a zeroed struct is float32 everywhere. */
struct tps_dtypes {
	enum tps_dtype of[TPS_DTYPE_ROLE_COUNT];
};

/* Whether every role is float32 (the default: the run is tpsim's float32
 * run, and the normalised config leaves "dtype" out). */
bool tps_dtypes_all_f32(const struct tps_dtypes *d);
/* The narrowest significand among the roles, in bits (24 for float32
 * everywhere, 11 with a float16 role, 8 with a bfloat16 one): integers
 * below 2^bits survive every store and every sum of the run. */
int tps_dtypes_exact_bits(const struct tps_dtypes *d);

/*
 * The dtypes a tensor is computed in, for the error bounds (the unit
 * roundoff of each: tps_dtype_unit_roundoff): `accumulate`, the dtype its
 * sums run in (float32 for every matmul and element-wise op; the reduce
 * dtype for a collective's sum), and `store`, the dtype it is rounded to
 * when stored.
 */
struct tps_dtype_use {
	enum tps_dtype store, accumulate;
};
/* A module's output (and each forward partial sum): store activations,
 * accumulate float32. */
struct tps_dtype_use tps_dtype_use_output(const struct tps_dtypes *d);
/* A gradient (an activation's, a parameter's): store grads, accumulate
 * float32. */
struct tps_dtype_use tps_dtype_use_grad(const struct tps_dtypes *d);
/* A parameter after an update: the update's arithmetic is float32,
 * stored in master_params, then in params (once when they are equal). */
struct tps_dtype_use tps_dtype_use_param(const struct tps_dtypes *d);
/* Optimizer state: store optimizer_state, accumulate float32. */
struct tps_dtype_use tps_dtype_use_state(const struct tps_dtypes *d);
/* A collective's sum of a tensor stored in `store`: accumulate reduce
 * (each member's value rounded to it, then the running sum after each
 * addition), then rounded once to store. */
struct tps_dtype_use tps_dtype_use_reduction(const struct tps_dtypes *d,
					     enum tps_dtype store);

struct tps_init_spec {
	enum tps_init_method method;
	uint64_t seed;
};

struct tps_module_spec {
	char name[TPS_NAME_MAX]; /* dotted path: "block.fc1" */
	enum tps_module_type type;
	/* The modules are listed in pre-order: a composite module (residual)
	 * is followed by its n_descendants descendants, its body, which it
	 * runs itself. 0 for a leaf. */
	int n_descendants;
	/* A composite of two bodies (gated): the first n_first_body
	 * descendants are the first body, the rest the second. 0 for the
	 * others, whose descendants are one body (or parts). */
	int n_first_body;
	/* The first top-level module of a transformer block (a residual
	 * "<p>.attn_residual" followed by "<p>.mlp_residual", as a
	 * transformer_block expands; config_model.c): the block's
	 * top-level modules from this one, 2, which "recompute": "full"
	 * runs again in backward as one chunk. 0 for the others. */
	int block_span;
	/* The widths (last dims) of the input and the output: a linear's
	 * in_features and out_features (its weight is (out, in)); a
	 * layernorm's and an attention's dim, both; an embedding's output,
	 * embedding_dim (its input is token ids: in_features 0). Types that
	 * keep the width: 0. */
	int64_t in_features, out_features;
	/* embedding: the vocabulary, the rows of its weight
	 * (num_embeddings, embedding_dim); 0 for the other types. */
	int64_t num_embeddings;
	/* linear: the name of the embedding whose weight it uses as its
	 * own (tied embeddings, "tie"; docs/transformer.md): the head then
	 * has no parameter of its own, its weight is the embedding's
	 * (num_embeddings, embedding_dim) as (out_features, in_features).
	 * "" when untied. */
	char tie[TPS_NAME_MAX];
	/* Vocabulary padding (Megatron's make_vocab_size_divisible_by,
	 * docs/transformer.md, "The vocabulary"): on an embedding or the
	 * linear head that feeds the loss, d (0: no padding). The padded
	 * vocabulary is the least multiple of d x tp at or above the real
	 * one: an embedding's weight then has padded_vocab rows, a head's
	 * out_features is padded_vocab (a tied head's follows its
	 * embedding's). real_vocab: the real one (num_embeddings, or the
	 * head's out_features as the config gave it); both 0 unpadded. */
	int64_t vocab_divisor;
	int64_t padded_vocab, real_vocab;
	/* "/model/0/make_vocab_size_divisible_by" when given, for
	 * messages about the padding; else "". */
	char vocab_pointer[TPS_POINTER_MAX];
	bool bias;  /* linear and layernorm */
	double eps; /* layernorm, rmsnorm: added to the variance, the mean square */
	double p;   /* dropout: the probability of zeroing, in [0, 1) */
	/* attention: its heads (in_features = out_features = embed_dim),
	 * its kv heads (grouped-query attention: num_kv_heads divides
	 * num_heads, each kv head serving num_heads / num_kv_heads query
	 * heads; num_heads is plain multi-head attention) and whether
	 * position i attends to positions after it. */
	int64_t num_heads;
	int64_t num_kv_heads;
	bool causal;
	/* attention: rotary position embeddings on q and k (RoFormer,
	 * LLaMA): base theta (0: none) and which features pair, an enum
	 * tps_rope_style (tensor.h). */
	double rope_theta;
	int rope_style;
	/* A linear of an attention: its tp shards are whole heads of this
	 * many features (shard(d,block=head_dim)); 0 or 1 otherwise. */
	int64_t shard_block;
	bool planned; /* a plan key matched it */
	enum tps_style style;
	enum tps_bias_mode bias_mode; /* rowwise only */
	/* Declared tp layouts of the input and output, as the plan says them:
	 * a shard dim may be negative (from the end), unlike a DTensor's. */
	struct tps_placement input;
	struct tps_placement output;
	/* prepare_input / prepare_output: where it is brought. */
	struct tps_placement desired_input, desired_output;
	/* "/plan/fc2" when planned, else "/model/2": messages about the
	 * module's plan start with it. */
	char plan_pointer[TPS_POINTER_MAX];
	/* The config key its output width comes from, for messages about
	 * sizes: "/model/2/out_features", "/model/0/embed_dim" (an
	 * attention and its linears), "/model/1/hidden" (a block's fc1);
	 * "" for a type that keeps the width. */
	char width_pointer[TPS_POINTER_MAX];
};

/* An explicit global value for one parameter ("params" in the config). */
struct tps_param_override {
	char name[TPS_NAME_MAX + 8]; /* "fc1.bias" */
	struct tps_tensor value;     /* the parameter's global shape */
};

struct tps_model_spec {
	struct tps_mesh mesh;
	int tp_dim;	  /* mesh dim index */
	unsigned dp_mask; /* mesh dims the batch is split over; 0: none */
	/* TP on a mesh dim that is not the innermost: PyTorch's error rather
	 * than tpsim's warning. */
	bool strict_tp_innermost;
	struct tps_module_spec *modules;
	int n_modules;
	struct tps_shape input_shape;
	struct tps_init_spec input_init;
	/* "input": {"values": ...}: the batch given value by value (then
	 * input_init is unused). */
	bool input_explicit;
	struct tps_tensor input_values;
	enum tps_input_source input_source;
	bool input_requires_grad; /* training only */
	unsigned inject;	  /* TPS_MISTAKE_BIT()s; 0: none */
	struct tps_init_spec param_init;
	struct tps_param_override *overrides;
	int n_overrides;
	enum tps_uneven uneven;
	enum tps_sampler sampler;
	enum tps_mode mode;
	/* Training only (the config refuses these keys in inference). */
	int steps;
	enum tps_loss loss;
	struct tps_init_spec target_init; /* mse and cross_entropy */
	/* "target": {"values": ...}: given value by value (then target_init
	 * is unused); cross_entropy's are class ids. */
	bool target_explicit;
	struct tps_tensor target_values;
	/* cross_entropy over logits left sharded on their classes (PyTorch's
	 * loss_parallel): three all_reduces, no gather of the logits. */
	bool loss_parallel;
	/* The output's real classes when its last dim is a padded
	 * vocabulary (the head's real_vocab): the logits past them are
	 * padding, which cross_entropy masks out as -inf. 0: every
	 * column is a class. tps_model_spec_classes reads it. */
	int64_t classes;
	struct tps_optimizer_spec optimizer;
	enum tps_dp_grad dp_grad;
	struct tps_zero_spec zero;
	/* "sequence_parallel_save" and "recompute" (training only). */
	enum tps_sp_save sp_save;
	enum tps_recompute recompute;
	/* "pipeline" (training only); zeroed: none. */
	struct tps_pipeline_spec pipeline;
	/* The dtype of each role ("dtype"); float32 everywhere unless
	 * given. */
	struct tps_dtypes dtypes;
};

/* Frees what the spec owns (modules, overrides); NULL is a no-op. */
void tps_model_spec_free(struct tps_model_spec *spec);

/*
 * The alpha-beta cost model of `tpsim comm`: a collective of `steps` ring
 * steps sending B bytes per rank over a link takes steps * latency + B /
 * bandwidth; a matmul of F flops takes F / device FLOP/s.
 */
struct tps_link_spec {
	double gbps;	   /* GB/s (10^9 bytes) each rank sends at */
	double latency_us; /* per ring step */
};

struct tps_cost_spec {
	struct tps_link_spec links[TPS_MAX_MESH_DIMS]; /* per mesh dim */
	double tflops;				       /* per device */
};

/*
 * The module mistake m happens in: the first linear with what it needs
 * (bias_every_rank: rowwise with a bias; skip_all_reduce: rowwise with a
 * replicated output; skip_gather: colwise with a replicated output;
 * wrong_shard_dim and tp_allreduce_weight_grad: colwise or rowwise;
 * same_dropout_seed: a dropout with p > 0), on a
 * tp group of 2 or more; -1 when the model has none. The config refuses a
 * mistake without a site; the run injects it and diagnoses it there.
 * tp_allreduce_weight_grad happens in every tp-sharded linear.
 */
int tps_mistake_site(const struct tps_model_spec *spec, enum tps_mistake m);

/* Whether the batch is split over the dp dims as one flattened group, a
 * shard(0,flat) on each (dtensor.h): two or more dp dims, and a sampler
 * other than chunk_of_chunks. */
bool tps_dp_split_flat(const struct tps_model_spec *spec);

/* The positions [*start, *start + *rows) of the sampler's order of the
 * batch that dp rank r (in the flattened dp group) holds. */
void tps_dp_split_range(const struct tps_model_spec *spec, int r,
			int64_t *start, int64_t *rows);

/* Whether m is made in training rather than in inference: in the backward
 * pass (tp_allreduce_weight_grad), or in a dropout, which only training
 * draws (same_dropout_seed). */
bool tps_mistake_in_backward(enum tps_mistake m);

#endif
