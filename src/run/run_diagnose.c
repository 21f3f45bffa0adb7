/*
 * The diagnosis of an injected mistake (run_internal.h): what the mistake
 * did, read from its symptom in the outcomes of the simulation and the
 * reference (an output larger by exactly (tp - 1) x bias, rank 0's
 * partial sum alone, a shard where the whole was due, a shape error,
 * gradients summed over tp, dropout masks equal on every tp rank), as one
 * sentence for the trace's result and
 * the summary. It reads the model and the outcomes and changes nothing.
 */
#include <math.h>
#include <stdio.h>

#include "numfmt.h"
#include "run_internal.h"

/* The module mistake m was injected in. */
static const struct tps_module *mistaken_module(const struct tps_model *model,
						enum tps_mistake m)
{
	return &model->modules[tps_mistake_site(model->spec, m)];
}

/* Whether got is want within float32 rounding of the sums involved. */
static bool about(float got, float want)
{
	return fabsf(got - want) <= 1e-5f + 1e-5f * fabsf(want);
}

/*
 * bias_every_rank: every rank added the rowwise bias b before the
 * all_reduce, so a model that ends in that linear outputs exactly
 * (tp - 1) b more than the reference in every row.
 */
static void diagnose_bias_every_rank(const struct tps_model *model,
				     const struct tps_model_outcome *sim,
				     const struct tps_model_outcome *ref,
				     const char *diff, char *buf, size_t size)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_BIAS_EVERY_RANK);
	int tp = spec->mesh.shape[spec->tp_dim];
	int64_t cols = m->spec->out_features;
	int64_t n = tps_tensor_numel(&sim->output);
	bool exact = m == &model->modules[spec->n_modules - 1];

	for (int64_t e = 0; exact && e < n; e++) {
		float b = m->params[1].global.data[e % cols];
		exact = about(sim->output.data[e],
			      ref->output.data[e] + (float)(tp - 1) * b);
	}
	if (exact) {
		snprintf(buf, size,
			 "output is larger than the reference by exactly "
			 "(tp - 1) x bias = %d x %s.bias in every row: the "
			 "bias was added on every rank before the all_reduce "
			 "(inject bias_every_rank)",
			 tp - 1, m->spec->name);
	} else {
		snprintf(buf, size,
			 "output differs from the reference (max_abs_diff "
			 "%s): %s added its whole bias on every rank before "
			 "the all_reduce, (tp - 1) x bias = %d x %s.bias too "
			 "much in its output (inject bias_every_rank)",
			 diff, m->spec->name, tp - 1, m->spec->name);
	}
}

/*
 * skip_all_reduce: each rank kept its partial sum x_i W_i^T, and the
 * output (replicated, so rank 0's) is x_0 W_0^T alone, plus rank 0's part
 * of the bias. Checked when that linear is the whole model, so that x is
 * the input.
 */
static void diagnose_skip_all_reduce(const struct tps_model *model,
				     const struct tps_tensor *input,
				     const struct tps_model_outcome *sim,
				     const char *diff, char *buf, size_t size)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_SKIP_ALL_REDUCE);
	int tp = spec->mesh.shape[spec->tp_dim];
	int64_t k = m->spec->in_features, cols = m->spec->out_features;
	int64_t rows = cols ? tps_tensor_numel(&sim->output) / cols : 0;
	int64_t start, len;
	bool exact = spec->n_modules == 1;
	float share = m->spec->bias_mode == TPS_BIAS_PARTIAL_SPLIT
			      ? 1.0f / (float)tp
			      : 1.0f;

	tps_chunk_range(k, tp, 0, &start, &len);
	for (int64_t r = 0; exact && r < rows; r++) {
		for (int64_t j = 0; exact && j < cols; j++) {
			const float *x = input->data + r * k;
			const float *w = m->params[0].global.data + j * k;
			float y = 0.0f;
			for (int64_t p = start; p < start + len; p++) {
				y += x[p] * w[p];
			}
			if (m->spec->bias) {
				y += m->params[1].global.data[j] * share;
			}
			exact = about(sim->output.data[r * cols + j], y);
		}
	}
	if (exact) {
		snprintf(buf, size,
			 "output is rank 0's partial sum alone, x_0 W_0^T over "
			 "%lld of the %lld input features: the all_reduce "
			 "that adds the %d ranks' partial sums was skipped "
			 "(inject skip_all_reduce)",
			 (long long)len, (long long)k, tp);
	} else {
		snprintf(buf, size,
			 "output differs from the reference (max_abs_diff "
			 "%s): %s's ranks each kept their partial sum, and the "
			 "all_reduce that adds the %d of them was skipped "
			 "(inject skip_all_reduce)",
			 diff, m->spec->name, tp);
	}
}

/*
 * skip_gather: each rank returned its local shard of the colwise linear's
 * output features. When the model ends there, the output is rank 0's
 * shard: the reference's first columns, and narrower than it.
 */
static void diagnose_skip_gather(const struct tps_model *model,
				 const struct tps_model_outcome *sim,
				 const struct tps_model_outcome *ref,
				 const char *stopped, char *buf, size_t size)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_SKIP_GATHER);
	int tp = spec->mesh.shape[spec->tp_dim];
	int64_t out = m->spec->out_features, start, len;
	const struct tps_shape *got = &sim->output.shape;
	const struct tps_shape *want = &ref->output.shape;
	char a[128], b[128];
	bool exact = !stopped && got->ndim == want->ndim && got->ndim > 0 &&
		     want->dim[want->ndim - 1] == out;

	tps_chunk_range(out, tp, 0, &start, &len);
	exact = exact && got->dim[got->ndim - 1] == len;
	for (int d = 0; exact && d + 1 < got->ndim; d++) {
		exact = got->dim[d] == want->dim[d];
	}
	for (int64_t e = 0; exact && e < tps_tensor_numel(&sim->output); e++) {
		int64_t row = e / len, col = e % len;
		exact = sim->output.data[e] ==
			ref->output.data[row * out + col];
	}
	if (stopped) {
		snprintf(buf, size,
			 "the simulation stopped at a shape error (%s): %s "
			 "returned each rank's local shard of its %lld output "
			 "features instead of all-gathering them (inject "
			 "skip_gather)",
			 stopped, m->spec->name, (long long)out);
	} else if (exact) {
		char cols[64];
		if (len == 1) {
			snprintf(cols, sizeof cols, "column 0");
		} else {
			snprintf(cols, sizeof cols, "columns 0-%lld",
				 (long long)len - 1);
		}
		snprintf(buf, size,
			 "output has shape %s where the reference has %s: it "
			 "is rank 0's local shard, the reference's %s; %s "
			 "returned its shard of the %lld output features and "
			 "the all_gather was skipped (inject skip_gather)",
			 tps_shape_format(got, a, sizeof a),
			 tps_shape_format(want, b, sizeof b), cols,
			 m->spec->name, (long long)out);
	} else {
		snprintf(buf, size,
			 "output has shape %s where the reference has %s: %s "
			 "returned each rank's local shard of its %lld output "
			 "features and the all_gather was skipped (inject "
			 "skip_gather)",
			 tps_shape_format(got, a, sizeof a),
			 tps_shape_format(want, b, sizeof b), m->spec->name,
			 (long long)out);
	}
}

/* wrong_shard_dim: the weight split on the other dim; the local matmul's
 * shapes cannot fit (at any tp of 2 or more, some rank's cannot). */
static void diagnose_wrong_shard_dim(const struct tps_model *model,
				     const char *stopped, const char *diff,
				     char *buf, size_t size)
{
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_WRONG_SHARD_DIM);
	bool colwise = m->spec->style == TPS_STYLE_COLWISE;
	char what[512];
	snprintf(what, sizeof what,
		 "%s.weight [out, in] was split over tp by dim %d, its %s "
		 "features, where %s splits dim %d, its %s features (inject "
		 "wrong_shard_dim)",
		 m->spec->name, colwise ? 1 : 0, colwise ? "input" : "output",
		 colwise ? "colwise" : "rowwise", colwise ? 0 : 1,
		 colwise ? "output" : "input");
	if (stopped) {
		snprintf(buf, size, "shape mismatch in the matmul (%s): %s",
			 stopped, what);
	} else {
		snprintf(buf, size,
			 "output differs from the reference (max_abs_diff "
			 "%s): %s",
			 diff, what);
	}
}

/*
 * Whether every tp-sharded parameter gradient in sim is, block by block,
 * the sum of the reference's blocks: what all-reducing them over tp makes.
 * Meaningful after one step only (later steps start from other weights).
 */
static bool grads_are_block_sums(const struct tps_model *model,
				 const struct tps_model_outcome *sim,
				 const struct tps_model_outcome *ref)
{
	const struct tps_model_spec *spec = model->spec;
	int tp = spec->mesh.shape[spec->tp_dim];
	for (int i = 0; i < model->n_params; i++) {
		const struct tps_param *p = &model->params[i];
		struct tps_placement pl = p->value.placements[spec->tp_dim];
		const struct tps_shape *sh = &ref->grads[i].shape;
		int64_t outer = 1, n, inner = 1, start, len;
		if (pl.kind != TPS_PLACEMENT_SHARD) {
			continue;
		}
		/* View the gradient as [outer, n, inner] around the shard
		 * dim; rank r's block is [:, start_r : start_r + len, :]. */
		for (int d = 0; d < pl.dim; d++) {
			outer *= sh->dim[d];
		}
		n = sh->dim[pl.dim];
		for (int d = pl.dim + 1; d < sh->ndim; d++) {
			inner *= sh->dim[d];
		}
		tps_chunk_range(n, tp, 0, &start, &len);
		for (int64_t o = 0; o < outer; o++) {
			for (int64_t j = 0; j < len; j++) {
				for (int64_t k = 0; k < inner; k++) {
					float want = 0.0f;
					for (int r = 0; r < tp; r++) {
						want += ref->grads[i].data
								[(o * n +
								  r * len + j) *
									 inner +
								 k];
					}
					for (int r = 0; r < tp; r++) {
						float got =
							sim->grads[i].data
								[(o * n +
								  r * len + j) *
									 inner +
								 k];
						if (!about(got, want)) {
							return false;
						}
					}
				}
			}
		}
	}
	return true;
}

/* tp_allreduce_weight_grad (seed 003's claim): every tp-sharded gradient
 * all-reduced over tp. */
static void diagnose_tp_allreduce_weight_grad(
	const struct tps_model *model, const struct tps_model_outcome *sim,
	const struct tps_model_outcome *ref, const char *stopped,
	const char *diff, char *buf, size_t size)
{
	const struct tps_model_spec *spec = model->spec;
	int tp = spec->mesh.shape[spec->tp_dim];
	static const char why[] =
		"gradients of tp-sharded weights are not all-reduced over tp, "
		"only activation gradients are, and weight gradients only "
		"over dp (inject tp_allreduce_weight_grad, seed 003's claim)";
	if (stopped) {
		snprintf(buf, size,
			 "the simulation stopped (%s): uneven shards of a "
			 "weight gradient cannot even be all-reduced; %s",
			 stopped, why);
	} else if (sim->steps == 1 && sim->loss[0] == ref->loss[0] &&
		   grads_are_block_sums(model, sim, ref)) {
		snprintf(buf, size,
			 "the loss matches but the weight gradients do not: "
			 "every rank's block of each tp-sharded weight "
			 "gradient is the sum of all %d ranks' blocks, sum_s "
			 "dW_s instead of dW_r; %s",
			 tp, why);
	} else {
		snprintf(buf, size,
			 "gradients and parameters differ from the reference "
			 "(max_abs_diff %s): every rank's block of each "
			 "tp-sharded weight gradient was summed with the other "
			 "ranks' blocks; %s",
			 diff, why);
	}
}

/*
 * same_dropout_seed: inside the TP region every tp rank drew the mistaken
 * dropout's mask from one generator. The symptom is in the masks the ranks
 * drew (tps_dropout_state's shards_identical, from the last training
 * forward), as PyTorch's test_tp_random_state.py looks at the local
 * tensors: identical on every tp rank.
 */
static void diagnose_same_dropout_seed(const struct tps_model *model,
				       const char *stopped, const char *diff,
				       char *buf, size_t size)
{
	const struct tps_module *m =
		mistaken_module(model, TPS_MISTAKE_SAME_DROPOUT_SEED);
	static const char why[] =
		"inside the TP region every tp rank drew its mask from one "
		"generator (seed + 2718), where Megatron's "
		"get_cuda_rng_tracker gives tp rank t its own (seed + 2718 + "
		"t) (inject same_dropout_seed)";
	if (stopped) {
		snprintf(buf, size, "the simulation stopped (%s); %s", stopped,
			 why);
	} else if (m->dropout.shards_identical) {
		snprintf(buf, size,
			 "the dropout masks of the shards of %s.out are "
			 "identical on every tp rank, and the output differs "
			 "from the reference (max_abs_diff %s): %s",
			 m->spec->name, diff, why);
	} else {
		snprintf(buf, size,
			 "the mistake changed no mask: %s.in is not sharded "
			 "over tp on its last dim, and outside the TP region "
			 "every tp rank draws from the default generator "
			 "anyway; %s",
			 m->spec->name, why);
	}
}

void tps_run_diagnose(const struct tps_model *model,
		      const struct tps_tensor *input,
		      const struct tps_model_outcome *sim,
		      const struct tps_model_outcome *ref, float max_abs_diff,
		      const char *stopped, char *buf, size_t size)
{
	char diff[TPS_NUMFMT_MAX];
	unsigned inject = model->spec->inject;
	if (isfinite(max_abs_diff)) {
		tps_format_float(max_abs_diff, diff);
	} else {
		snprintf(diff, sizeof diff, "none: shapes differ");
	}
	if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_BIAS_EVERY_RANK)) {
		diagnose_bias_every_rank(model, sim, ref, diff, buf, size);
	} else if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_SKIP_ALL_REDUCE)) {
		diagnose_skip_all_reduce(model, input, sim, diff, buf, size);
	} else if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_SKIP_GATHER)) {
		diagnose_skip_gather(model, sim, ref, stopped, buf, size);
	} else if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_WRONG_SHARD_DIM)) {
		diagnose_wrong_shard_dim(model, stopped, diff, buf, size);
	} else if (inject & TPS_MISTAKE_BIT(TPS_MISTAKE_SAME_DROPOUT_SEED)) {
		diagnose_same_dropout_seed(model, stopped, diff, buf, size);
	} else {
		diagnose_tp_allreduce_weight_grad(model, sim, ref, stopped,
						  diff, buf, size);
	}
}
