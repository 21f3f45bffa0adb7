/*
 * The training keys of the config: "steps", "loss", "target", "optimizer",
 * "dp_grad" (docs/design.md sections 2 and 4), "zero" (docs/zero.md),
 * "pipeline" (config_pipeline.c, docs/pipeline.md), and the
 * checks that tie the batch to data parallelism. With "mode": "inference" each
 * training key is an error that says so, rather than a setting silently
 * ignored.
 */
#include "config_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The keys only training reads, in the order they are checked. */
static const char *const training_keys[] = {
	"steps",   "loss", "loss_parallel", "target", "optimizer",
	"dp_grad", "zero", "sequence_parallel_save", "recompute", "pipeline",
	NULL};

void cfg_training_only(struct cfg *c, const cJSON *obj, const char *key,
		       enum tps_mode mode)
{
	if (mode == TPS_MODE_INFERENCE && cfg_get(obj, key)) {
		cfg_fail_at(c, key, TPS_ERR_INPUT,
			    "\"%s\" needs \"mode\": \"training\" (this config "
			    "runs inference)",
			    key);
	}
}

/* ---- target ----------------------------------------------------------- */

/* "[2, 4]". Returns buf. */
static const char *shape_text(int ndim, const int64_t *dims, char *buf,
			      size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < ndim && used < size; i++) {
		int n = snprintf(buf + used, size - used, "%s%lld",
				 i ? ", " : "[", (long long)dims[i]);
		used += n > 0 ? (size_t)n : 0;
	}
	if (used < size) {
		snprintf(buf + used, size - used, "]");
	}
	return buf;
}

/* The model's output shape (tps_model_spec_output_shape), as dims. */
static int output_shape(const struct tps_model_spec *spec, int64_t *dims)
{
	struct tps_shape out = tps_model_spec_output_shape(spec);
	for (int i = 0; i < out.ndim; i++) {
		dims[i] = out.dim[i];
	}
	return out.ndim;
}

/* The target's expected shape: the output's (mse), or without its last
 * dim (cross_entropy: one class id per row). Returns ndim. */
static int target_shape(const struct tps_model_spec *spec, int64_t *dims)
{
	int ndim = output_shape(spec, dims);
	return spec->loss == TPS_LOSS_CROSS_ENTROPY ? ndim - 1 : ndim;
}

/* Explicit target values: the target's shape; class ids for
 * cross_entropy. */
static void read_target_values(struct cfg *c, const cJSON *v, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	int64_t want[TPS_MAX_DIMS], classes;
	int ndim = target_shape(spec, want);
	struct tps_shape shape = tps_shape_make(ndim, want);
	cfg_read_tensor(c, v, &shape, "the target's", &spec->target_values);
	spec->target_explicit = cfg_ok(c);
	/* A padded head's padding columns are no classes. */
	classes = tps_model_spec_classes(spec);
	for (int64_t i = 0; cfg_ok(c) && spec->loss == TPS_LOSS_CROSS_ENTROPY &&
			    i < tps_tensor_numel(&spec->target_values);
	     i++) {
		float id = spec->target_values.data[i];
		if (id != floorf(id) || id < 0 || id >= (float)classes) {
			char got[TPS_NUMFMT_MAX];
			cfg_fail(c, TPS_ERR_INPUT,
				 "class id %s (value %lld in row-major order) "
				 "is not an integer in [0, %lld), the "
				 "output's classes",
				 cfg_format_number(id, got), (long long)i,
				 (long long)classes);
		}
	}
}

static void target_body(struct cfg *c, const cJSON *target, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	int64_t dims[TPS_MAX_DIMS], want[TPS_MAX_DIMS];
	int ndim = 0, want_ndim;
	bool ce = spec->loss == TPS_LOSS_CROSS_ENTROPY;

	if (spec->loss == TPS_LOSS_SUM) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "loss \"sum\" takes no target (/loss: the loss is "
			 "the sum of the output's elements)");
		return;
	}
	cfg_init_method(c, target, "init", &spec->target_init);
	if (cfg_ok(c) && spec->target_init.method == TPS_INIT_TORCH) {
		cfg_fail_at(c, "init", TPS_ERR_INPUT,
			    "\"torch\" gives each parameter its PyTorch "
			    "default, for /init/method; the target is no "
			    "module's (expected %s)",
			    ce ? "tokens" : "arange, ones, zeros, uniform or "
					    "normal");
		return;
	}
	if (cfg_ok(c) && (spec->target_init.method == TPS_INIT_TOKENS) != ce &&
	    cfg_get(target, "init")) {
		cfg_fail_at(c, "init", TPS_ERR_INPUT,
			    ce ? "a cross_entropy target is class ids: "
				 "\"init\": \"tokens\", or explicit \"values\""
			       : "\"tokens\" draws class ids, for loss "
				 "\"cross_entropy\"");
		return;
	}
	cfg_sizes(c, target, "shape", CFG_OPTIONAL, "the target", TPS_MAX_DIMS,
		  TPS_MAX_ELEMENTS, dims, &ndim);
	if (!cfg_ok(c)) {
		return;
	}
	want_ndim = target_shape(spec, want);
	if (cfg_get(target, "shape") &&
	    (ndim != want_ndim ||
	     memcmp(dims, want, (size_t)ndim * sizeof dims[0]) != 0)) {
		char w[128], g[128];
		cfg_fail_at(c, "shape", TPS_ERR_INPUT,
			    ce ? "expected %s, the model output's shape "
				 "without its classes, got %s"
			       : "expected %s, the model output's shape, got "
				 "%s",
			    shape_text(want_ndim, want, w, sizeof w),
			    shape_text(ndim, dims, g, sizeof g));
	}
	if (cfg_ok(c) && cfg_get(target, "values")) {
		if (cfg_get(target, "init") || cfg_get(target, "seed")) {
			cfg_fail_at(c, "values", TPS_ERR_INPUT,
				    "explicit values and an init method both "
				    "given (expected one)");
			return;
		}
		cfg_value(c, target, "values", CFG_OPTIONAL, read_target_values,
			  spec);
	}
}

/* loss_parallel: cross_entropy over logits the last module leaves sharded
 * over their classes, a colwise linear with its output shard(-1). */
static void check_loss_parallel(struct cfg *c,
				const struct tps_model_spec *spec)
{
	const struct tps_module_spec *last = NULL;
	int ndim = tps_model_activation_ndim(spec);
	if (!cfg_ok(c) || !spec->loss_parallel) {
		return;
	}
	if (spec->loss != TPS_LOSS_CROSS_ENTROPY) {
		cfg_fail_at(c, "loss_parallel", TPS_ERR_INPUT,
			    "loss_parallel is a cross_entropy over sharded "
			    "logits (this config's loss is \"%s\")",
			    tps_loss_names[spec->loss]);
		return;
	}
	for (int i = 0; i < spec->n_modules;
	     i += 1 + spec->modules[i].n_descendants) {
		last = &spec->modules[i];
	}
	if (!last || last->type != TPS_MODULE_LINEAR ||
	    last->style != TPS_STYLE_COLWISE ||
	    last->output.kind != TPS_PLACEMENT_SHARD ||
	    tps_dim_normalize(last->output.dim, ndim) != ndim - 1) {
		cfg_fail_at(c, "loss_parallel", TPS_ERR_INPUT,
			    "loss_parallel takes the logits sharded over their "
			    "classes: the model must end with a colwise "
			    "linear whose output is shard(-1) (%s is not)",
			    last ? last->plan_pointer : "/model");
	}
}

/* ---- optimizer -------------------------------------------------------- */

static void parse_sgd(struct cfg *c, const cJSON *opt,
		      struct tps_optimizer_spec *o);
static void parse_adamw(struct cfg *c, const cJSON *opt,
			struct tps_optimizer_spec *o);

static const char *const sgd_keys[] = {"type",	    "lr",	    "momentum",
				       "dampening", "weight_decay", "nesterov",
				       NULL};
static const char *const adamw_keys[] = {"type", "lr",		 "betas",
					 "eps",	 "weight_decay", NULL};

/* One row per enum tps_optimizer_type: its keys, PyTorch's defaults (but
 * docs/design.md's lr 0.1 for sgd), and what reads its keys. */
static const struct optimizer_kind {
	const char *const *keys;
	struct tps_optimizer_spec defaults;
	void (*parse)(struct cfg *c, const cJSON *opt,
		      struct tps_optimizer_spec *o);
} optimizer_kinds[] = {
	[TPS_OPTIMIZER_SGD] = {sgd_keys,
			       {.type = TPS_OPTIMIZER_SGD, .lr = 0.1},
			       parse_sgd},
	[TPS_OPTIMIZER_ADAMW] = {adamw_keys,
				 {.type = TPS_OPTIMIZER_ADAMW,
				  .lr = 1e-3,
				  .weight_decay = 1e-2,
				  .beta1 = 0.9,
				  .beta2 = 0.999,
				  .eps = 1e-8},
				 parse_adamw},
};

/* lr and weight_decay, as both optimizers check them. */
static void parse_common(struct cfg *c, const cJSON *opt,
			 struct tps_optimizer_spec *o)
{
	cfg_number(c, opt, "lr", CFG_OPTIONAL, CFG_NONNEG, &o->lr);
	cfg_number(c, opt, "weight_decay", CFG_OPTIONAL, CFG_NONNEG,
		   &o->weight_decay);
}

static void parse_sgd(struct cfg *c, const cJSON *opt,
		      struct tps_optimizer_spec *o)
{
	parse_common(c, opt, o);
	cfg_number(c, opt, "momentum", CFG_OPTIONAL, CFG_NONNEG, &o->momentum);
	cfg_number(c, opt, "dampening", CFG_OPTIONAL, CFG_FINITE,
		   &o->dampening);
	cfg_bool(c, opt, "nesterov", &o->nesterov);
	if (cfg_ok(c) && o->nesterov && (o->momentum <= 0 || o->dampening)) {
		char m[32], d[32];
		cfg_fail_at(c, "nesterov", TPS_ERR_INPUT,
			    "Nesterov momentum requires a momentum and zero "
			    "dampening (PyTorch's SGD; got momentum %s, "
			    "dampening %s)",
			    cfg_format_number(o->momentum, m),
			    cfg_format_number(o->dampening, d));
	}
}

static void beta(struct cfg *c, const cJSON *item, int index, void *ctx)
{
	struct tps_optimizer_spec *o = ctx;
	cfg_read_number(c, item, CFG_UNIT, index == 0 ? &o->beta1 : &o->beta2);
}

static void betas(struct cfg *c, const cJSON *v, void *ctx)
{
	if (cfg_expect(c, v, cJSON_IsArray, "an array [beta1, beta2]") &&
	    cJSON_GetArraySize(v) != 2) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "expected 2 numbers [beta1, beta2], got %d",
			 cJSON_GetArraySize(v));
	}
	cfg_each_item(c, v, beta, ctx);
}

static void parse_adamw(struct cfg *c, const cJSON *opt,
			struct tps_optimizer_spec *o)
{
	parse_common(c, opt, o);
	cfg_value(c, opt, "betas", CFG_OPTIONAL, betas, o);
	cfg_number(c, opt, "eps", CFG_OPTIONAL, CFG_NONNEG, &o->eps);
}

/* The type first: it says which keys the object may have. */
static void optimizer_body(struct cfg *c, const cJSON *opt, void *ctx)
{
	struct tps_optimizer_spec *o = ctx;
	const struct optimizer_kind *kind;
	int type = TPS_OPTIMIZER_SGD;

	if (!cfg_choice(c, opt, "type", "optimizer", tps_optimizer_type_names,
			&type) &&
	    !cfg_ok(c)) {
		return;
	}
	kind = &optimizer_kinds[type];
	*o = kind->defaults;
	if (cfg_check_keys(c, opt, kind->keys)) {
		kind->parse(c, opt, o);
	}
}

/* ---- data parallelism and the batch ----------------------------------- */

/* The dp size: the product of the dp dims. */
static int dp_size(const struct tps_model_spec *spec)
{
	return tps_mesh_group_size(&spec->mesh, spec->dp_mask);
}

/* The first dp rank (in the flattened dp group) that the sampler leaves
 * without samples, or -1. */
static int first_empty_dp_rank(const struct tps_model_spec *spec)
{
	int n = dp_size(spec);
	for (int r = 0; r < n; r++) {
		int64_t start, rows;
		tps_dp_split_range(spec, r, &start, &rows);
		if (rows == 0) {
			return r;
		}
	}
	return -1;
}

void cfg_check_sampler(struct cfg *c, const struct tps_model_spec *spec)
{
	int64_t batch = spec->input_shape.dim[0];
	int dp = dp_size(spec);
	if (cfg_ok(c) && spec->sampler == TPS_SAMPLER_DISTRIBUTED &&
	    batch % dp != 0) {
		cfg_fail_at(c, "sampler", TPS_ERR_INPUT,
			    "DistributedSampler needs the batch (%lld) "
			    "divisible by the dp size (%d): PyTorch would pad "
			    "by repeating samples (drop_last=False)",
			    (long long)batch, dp);
	}
}

/* DDP averages the ranks' own losses: with mse, an empty rank's is the
 * mean over no elements. */
static void check_ddp(struct cfg *c, const struct tps_model_spec *spec)
{
	int empty;
	if (!cfg_ok(c) || spec->dp_grad != TPS_DP_GRAD_DDP ||
	    spec->loss == TPS_LOSS_SUM ||
	    spec->sampler == TPS_SAMPLER_DISTRIBUTED) {
		return;
	}
	empty = first_empty_dp_rank(spec);
	if (empty >= 0) {
		cfg_fail_at(c, "dp_grad", TPS_ERR_INPUT,
			    "\"ddp\" with loss \"%s\" needs samples on "
			    "every dp rank, but dp rank %d of %d gets none of "
			    "the batch of %lld (%s sampler): its loss, the "
			    "mean over no elements, is NaN, as in PyTorch",
			    tps_loss_names[spec->loss], empty, dp_size(spec),
			    (long long)spec->input_shape.dim[0],
			    tps_sampler_names[spec->sampler]);
	}
}

/* ---- zero ------------------------------------------------------------- */

static void zero_body(struct cfg *c, const cJSON *zero, void *ctx)
{
	struct tps_zero_spec *z = ctx;
	int64_t stage = 0;
	if (!cfg_int(c, zero, "stage", CFG_REQUIRED, 1, 3, &stage)) {
		return;
	}
	z->stage = (int)stage;
	if (cfg_get(zero, "reshard_after_forward") && z->stage != 3) {
		cfg_fail_at(c, "reshard_after_forward", TPS_ERR_INPUT,
			    "\"reshard_after_forward\" is stage 3's (FSDP's "
			    "fully_shard): stage %d keeps every parameter "
			    "whole",
			    z->stage);
		return;
	}
	if (cfg_get(zero, "distributed_optimizer") && z->stage != 1) {
		cfg_fail_at(c, "distributed_optimizer", TPS_ERR_INPUT,
			    "\"distributed_optimizer\" (Megatron's) is a "
			    "stage 1 option: stage %d reduce_scatters the "
			    "gradients already",
			    z->stage);
		return;
	}
	cfg_bool(c, zero, "reshard_after_forward", &z->reshard_after_forward);
	cfg_bool(c, zero, "distributed_optimizer", &z->distributed_optimizer);
}

/* A module that ties its weight to another's (a tied head), or NULL. A
 * tied weight is one parameter of two modules: FSDP2 would put both in
 * one fully_shard unit, which tpsim does not model, so stage 3 refuses
 * it. */
static const struct tps_module_spec *
tied_module(const struct tps_model_spec *spec)
{
	for (int i = 0; i < spec->n_modules; i++) {
		if (spec->modules[i].tie[0]) {
			return &spec->modules[i];
		}
	}
	return NULL;
}

/* ZeRO shards over the dp dims: without one it has nothing to do. */
static void parse_zero(struct cfg *c, const cJSON *root,
		       struct tps_model_spec *spec)
{
	const struct tps_module_spec *tied;
	static const char *const zero_keys[] = {"stage",
						"reshard_after_forward",
						"distributed_optimizer", NULL};
	spec->zero = (struct tps_zero_spec){0, true, false};
	if (!cfg_object(c, root, "zero", CFG_OPTIONAL, zero_keys, zero_body,
			&spec->zero) ||
	    !cfg_ok(c)) {
		return;
	}
	if (!spec->dp_mask) {
		cfg_fail_at(c, "zero", TPS_ERR_INPUT,
			    "ZeRO shards over the dp dims, but the config has "
			    "no \"dp_dim\": expected a dp_dim, or no "
			    "\"zero\"");
		return;
	}
	tied = tied_module(spec);
	if (spec->zero.stage == 3 && tied) {
		cfg_fail_at(c, "zero", TPS_ERR_INPUT,
			    "stage 3 shards each module's own parameters, but "
			    "%s ties its weight to %s's: expected no tie, or "
			    "stage 1 or 2",
			    tied->name, tied->tie);
	}
}

/* The top-level index of module m in the config's "model" array, or -1
 * when m is inside another module. */
static int top_level_index(const struct tps_model_spec *spec,
			   const struct tps_module_spec *m)
{
	int index = 0;
	for (int i = 0; i < spec->n_modules;
	     i += 1 + spec->modules[i].n_descendants) {
		if (&spec->modules[i] == m) {
			return index;
		}
		index++;
	}
	return -1;
}

enum tps_status tps_config_set_zero(struct tps_run_spec *run, const char *file,
				    struct tps_zero_spec z, const char *option,
				    struct tps_error *err)
{
	const struct tps_model_spec *spec = &run->model;
	const struct tps_module_spec *tied = tied_module(spec);
	char pointer[64];
	int top;

	if (z.stage > 0 && !spec->dp_mask) {
		return tps_error_set_at(
			err, TPS_ERR_INPUT, file, "/dp_dim",
			"missing: %s shards over the dp dims: expected a "
			"dp_dim to shard over",
			option);
	}
	if (z.stage == 3 && tied) {
		top = top_level_index(spec, tied);
		if (top >= 0) {
			snprintf(pointer, sizeof pointer, "/model/%d/tie", top);
		} else {
			snprintf(pointer, sizeof pointer, "/model");
		}
		return tps_error_set_at(
			err, TPS_ERR_INPUT, file, pointer,
			"%s: stage 3 shards each module's own parameters, but "
			"%s ties its weight to %s's: expected no tie, or "
			"stage 1 or 2",
			option, tied->name, tied->tie);
	}
	run->model.zero = z;
	return TPS_OK;
}

/* Full recompute runs transformer_blocks again, selective the
 * attentions' cores: a model without one would recompute nothing. */
static void check_recompute(struct cfg *c, const struct tps_model_spec *spec)
{
	bool full = spec->recompute == TPS_RECOMPUTE_FULL;
	if (!cfg_ok(c) || spec->recompute == TPS_RECOMPUTE_NONE) {
		return;
	}
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		if (full ? m->block_span > 0
			 : m->type == TPS_MODULE_ATTENTION) {
			return;
		}
	}
	if (full) {
		cfg_fail_at(c, "recompute", TPS_ERR_INPUT,
			    "\"full\" recomputes each transformer_block from "
			    "its input, and this model has none");
		return;
	}
	cfg_fail_at(c, "recompute", TPS_ERR_INPUT,
		    "\"selective\" recomputes each attention's core from its "
		    "q, k and v, and this model has no attention");
}

void cfg_parse_training(struct cfg *c, const cJSON *root,
			struct tps_model_spec *spec)
{
	static const char *const target_keys[] = {"init", "seed", "shape",
						  "values", NULL};
	int loss = TPS_LOSS_MSE, dp_grad = TPS_DP_GRAD_GLOBAL;
	int sp_save = TPS_SP_SAVE_SHARD, recompute = TPS_RECOMPUTE_NONE;
	int64_t steps = 1;
	struct tps_shape out = tps_model_spec_output_shape(spec);

	spec->steps = 1;
	spec->loss = TPS_LOSS_MSE;
	spec->target_init.method = TPS_INIT_ZEROS;
	spec->target_init.seed = 0;
	spec->optimizer = optimizer_kinds[TPS_OPTIMIZER_SGD].defaults;
	spec->dp_grad = TPS_DP_GRAD_GLOBAL;
	spec->zero = (struct tps_zero_spec){0, true, false};
	spec->sp_save = TPS_SP_SAVE_SHARD;
	spec->recompute = TPS_RECOMPUTE_NONE;
	if (spec->mode == TPS_MODE_INFERENCE) {
		for (int i = 0; training_keys[i]; i++) {
			cfg_training_only(c, root, training_keys[i],
					  spec->mode);
		}
		return;
	}
	cfg_int(c, root, "steps", CFG_OPTIONAL, 1, 1000000, &steps);
	spec->steps = (int)steps;
	cfg_choice(c, root, "loss", "loss", tps_loss_names, &loss);
	spec->loss = (enum tps_loss)loss;
	if (cfg_ok(c) && spec->classes > 0 &&
	    spec->loss != TPS_LOSS_CROSS_ENTROPY) {
		/* mse or sum would count the padding logits; cross_entropy
		 * masks them (docs/transformer.md, "The vocabulary"). */
		cfg_fail_at(c, "loss", TPS_ERR_INPUT,
			    "the model's logits end in a padded vocabulary "
			    "(%lld classes padded to %lld, "
			    "make_vocab_size_divisible_by): expected loss "
			    "\"cross_entropy\", which masks the padding, "
			    "got \"%s\"",
			    (long long)spec->classes,
			    (long long)out.dim[out.ndim - 1],
			    tps_loss_names[spec->loss]);
	}
	if (spec->loss == TPS_LOSS_CROSS_ENTROPY) {
		spec->target_init.method = TPS_INIT_TOKENS;
	}
	spec->loss_parallel = false;
	cfg_bool(c, root, "loss_parallel", &spec->loss_parallel);
	check_loss_parallel(c, spec);
	cfg_object(c, root, "target", CFG_OPTIONAL, target_keys, target_body,
		   spec);
	cfg_object(c, root, "optimizer", CFG_OPTIONAL, NULL, optimizer_body,
		   &spec->optimizer);
	cfg_choice(c, root, "dp_grad", "dp_grad", tps_dp_grad_names, &dp_grad);
	spec->dp_grad = (enum tps_dp_grad)dp_grad;
	check_ddp(c, spec);
	parse_zero(c, root, spec);
	cfg_choice(c, root, "sequence_parallel_save", "sequence_parallel_save",
		   tps_sp_save_names, &sp_save);
	spec->sp_save = (enum tps_sp_save)sp_save;
	cfg_choice(c, root, "recompute", "recompute", tps_recompute_names,
		   &recompute);
	spec->recompute = (enum tps_recompute)recompute;
	check_recompute(c, spec);
	cfg_parse_pipeline(c, root, spec);
}
