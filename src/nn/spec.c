#include "spec.h"

#include "module_type.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const char *const tps_style_names[] = {
	"colwise", "rowwise",	    "replicate",      "sequence",
	"vocab",   "prepare_input", "prepare_output", NULL};
const char *const tps_bias_mode_names[] = {"after_reduce", "partial_split",
					   "rank0", NULL};
const char *const tps_uneven_names[] = {"chunk", "divisible", NULL};
const char *const tps_init_method_names[] = {
	"arange", "ones", "zeros", "uniform", "normal", "tokens", "torch", NULL};
const char *const tps_sampler_names[] = {"chunk", "distributed",
					 "chunk_of_chunks", NULL};
const char *const tps_mistake_names[] = {
	"bias_every_rank", "skip_all_reduce",	       "skip_gather",
	"wrong_shard_dim", "tp_allreduce_weight_grad", "same_dropout_seed",
	NULL};
const char *const tps_mode_names[] = {"inference", "training", NULL};
const char *const tps_loss_names[] = {"mse", "sum", "cross_entropy", NULL};
const char *const tps_dp_grad_names[] = {"global", "ddp", NULL};
const char *const tps_sp_save_names[] = {"shard", "gathered", NULL};
const char *const tps_recompute_names[] = {"none", "selective", "full", NULL};
static_assert(sizeof tps_recompute_names / sizeof *tps_recompute_names ==
		      TPS_RECOMPUTE_COUNT + 1,
	      "one name per recompute kind");
const char *const tps_input_source_names[] = {"every_rank", "tp_root", NULL};
const char *const tps_trace_values_names[] = {"full", "summary", "none", NULL};
const char *const tps_compute_names[] = {"values", "symbolic", NULL};
const char *const tps_dtype_role_names[] = {
	"params",	   "master_params", "activations", "grads",
	"optimizer_state", "reduce",	    NULL};
static_assert(sizeof tps_dtype_role_names / sizeof *tps_dtype_role_names ==
		      TPS_DTYPE_ROLE_COUNT + 1,
	      "a name for every dtype role");

bool tps_dtypes_all_f32(const struct tps_dtypes *d)
{
	for (int i = 0; i < TPS_DTYPE_ROLE_COUNT; i++) {
		if (d->of[i] != TPS_DTYPE_F32) {
			return false;
		}
	}
	return true;
}

int tps_dtypes_exact_bits(const struct tps_dtypes *d)
{
	static const int bits[TPS_DTYPE_COUNT] = {[TPS_DTYPE_F32] = 24,
						  [TPS_DTYPE_BF16] = 8,
						  [TPS_DTYPE_F16] = 11};
	int least = 24;
	for (int i = 0; i < TPS_DTYPE_ROLE_COUNT; i++) {
		least = bits[d->of[i]] < least ? bits[d->of[i]] : least;
	}
	return least;
}

static struct tps_dtype_use use(enum tps_dtype store, enum tps_dtype acc)
{
	struct tps_dtype_use u = {store, acc};
	return u;
}

struct tps_dtype_use tps_dtype_use_output(const struct tps_dtypes *d)
{
	return use(d->of[TPS_ROLE_ACTIVATIONS], TPS_DTYPE_F32);
}

struct tps_dtype_use tps_dtype_use_grad(const struct tps_dtypes *d)
{
	return use(d->of[TPS_ROLE_GRADS], TPS_DTYPE_F32);
}

struct tps_dtype_use tps_dtype_use_param(const struct tps_dtypes *d)
{
	return use(d->of[TPS_ROLE_PARAMS], TPS_DTYPE_F32);
}

struct tps_dtype_use tps_dtype_use_state(const struct tps_dtypes *d)
{
	return use(d->of[TPS_ROLE_OPTIMIZER_STATE], TPS_DTYPE_F32);
}

struct tps_dtype_use tps_dtype_use_reduction(const struct tps_dtypes *d,
					     enum tps_dtype store)
{
	return use(store, d->of[TPS_ROLE_REDUCE]);
}

int tps_name_index(const char *const *table, const char *name)
{
	for (int i = 0; table[i]; i++) {
		if (strcmp(table[i], name) == 0) {
			return i;
		}
	}
	return -1;
}

void tps_model_spec_free(struct tps_model_spec *spec)
{
	if (!spec) {
		return;
	}
	for (int i = 0; i < spec->n_overrides; i++) {
		tps_tensor_free(&spec->overrides[i].value);
	}
	free(spec->overrides);
	free(spec->modules);
	tps_tensor_free(&spec->input_values);
	tps_tensor_free(&spec->target_values);
	free(spec->pipeline.ranges);
	memset(spec, 0, sizeof *spec);
}

int tps_mistake_site(const struct tps_model_spec *spec, enum tps_mistake m)
{
	if (spec->mesh.shape[spec->tp_dim] < 2) {
		return -1;
	}
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module_spec *ms = &spec->modules[i];
		bool fits = false;
		bool rowwise = ms->style == TPS_STYLE_ROWWISE;
		bool colwise = ms->style == TPS_STYLE_COLWISE;
		bool replicated_out =
			ms->output.kind == TPS_PLACEMENT_REPLICATE;
		if (m == TPS_MISTAKE_SAME_DROPOUT_SEED) {
			if (ms->type == TPS_MODULE_DROPOUT && ms->p > 0) {
				return i;
			}
			continue;
		}
		if (ms->type != TPS_MODULE_LINEAR) {
			continue;
		}
		switch (m) {
		case TPS_MISTAKE_BIAS_EVERY_RANK:
			fits = rowwise && ms->bias;
			break;
		case TPS_MISTAKE_SKIP_ALL_REDUCE:
			fits = rowwise && replicated_out;
			break;
		case TPS_MISTAKE_SKIP_GATHER:
			fits = colwise && replicated_out;
			break;
		case TPS_MISTAKE_WRONG_SHARD_DIM:
		case TPS_MISTAKE_TP_ALLREDUCE_WEIGHT_GRAD:
			fits = rowwise || colwise;
			break;
		case TPS_MISTAKE_SAME_DROPOUT_SEED: break;
		}
		if (fits) {
			return i;
		}
	}
	return -1;
}

bool tps_dp_split_flat(const struct tps_model_spec *spec)
{
	unsigned mask = spec->dp_mask;
	return spec->sampler != TPS_SAMPLER_CHUNK_OF_CHUNKS &&
	       (mask & (mask - 1)) != 0;
}

void tps_dp_split_range(const struct tps_model_spec *spec, int r,
			int64_t *start, int64_t *rows)
{
	const struct tps_mesh *mesh = &spec->mesh;
	int64_t n = spec->input_shape.dim[0];
	int dp = tps_mesh_group_size(mesh, spec->dp_mask);
	int stride = dp;
	if (spec->sampler != TPS_SAMPLER_CHUNK_OF_CHUNKS) {
		/* DistributedSampler's n is a multiple of dp (config.h):
		 * its chunks, of its reordered rows, are n / dp each. */
		tps_chunk_range(n, dp, r, start, rows);
		return;
	}
	/* r is row-major over the dp dims in mesh order; each chunks the
	 * chunk the dims before it left. */
	*start = 0;
	*rows = n;
	for (int d = 0; d < mesh->ndim; d++) {
		int64_t at;
		if (!(spec->dp_mask & (1u << d))) {
			continue;
		}
		stride /= mesh->shape[d];
		tps_chunk_range(*rows, mesh->shape[d],
				r / stride % mesh->shape[d], &at, rows);
		*start += at;
	}
}

bool tps_mistake_in_backward(enum tps_mistake m)
{
	return m == TPS_MISTAKE_TP_ALLREDUCE_WEIGHT_GRAD ||
	       m == TPS_MISTAKE_SAME_DROPOUT_SEED;
}

bool tps_module_has_width(const struct tps_module_spec *m)
{
	return tps_module_types[m->type].width != TPS_WIDTH_KEEPS;
}

bool tps_model_takes_tokens(const struct tps_model_spec *spec)
{
	return spec->n_modules > 0 &&
	       tps_module_types[spec->modules[0].type].width == TPS_WIDTH_MAKES;
}

int tps_model_activation_ndim(const struct tps_model_spec *spec)
{
	return spec->input_shape.ndim + (tps_model_takes_tokens(spec) ? 1 : 0);
}

struct tps_shape tps_model_spec_output_shape(const struct tps_model_spec *spec)
{
	struct tps_shape shape = spec->input_shape;
	if (tps_model_takes_tokens(spec) && shape.ndim < TPS_MAX_DIMS) {
		shape.dim[shape.ndim++] = 0; /* set by the embedding below */
	}
	for (int i = 0; i < spec->n_modules && shape.ndim > 0; i++) {
		if (tps_module_has_width(&spec->modules[i])) {
			shape.dim[shape.ndim - 1] =
				spec->modules[i].out_features;
		}
	}
	return shape;
}

int64_t tps_model_spec_classes(const struct tps_model_spec *spec)
{
	struct tps_shape out = tps_model_spec_output_shape(spec);
	if (spec->classes > 0) {
		return spec->classes;
	}
	return out.ndim > 0 ? out.dim[out.ndim - 1] : 1;
}

int tps_model_spec_output_over(const struct tps_model_spec *spec, int64_t limit,
			       struct tps_shape *shape)
{
	struct tps_shape out = spec->input_shape;
	int64_t rows = 1, numel;
	/* Token ids are all rows: the embedding adds the width's dim. */
	int row_dims = tps_model_takes_tokens(spec) ? out.ndim : out.ndim - 1;
	for (int d = 0; d < row_dims; d++) {
		if (__builtin_mul_overflow(rows, out.dim[d], &rows)) {
			rows = INT64_MAX;
		}
	}
	out.ndim = row_dims + 1;
	if (out.ndim > TPS_MAX_DIMS) {
		return -1; /* the config refuses such ids */
	}
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		if (!tps_module_has_width(m)) {
			continue;
		}
		if (__builtin_mul_overflow(rows, m->out_features, &numel) ||
		    numel > limit) {
			out.dim[out.ndim - 1] = m->out_features;
			*shape = out;
			return i;
		}
	}
	return -1;
}
