/*
 * attention: multi-head self-attention over (..., seq S, embed_dim E),
 * with num_heads H of head_dim d = E / H. Its descendants are four
 * linears q, k, v, o (E -> E); the plan splits them as Megatron does:
 * q, k, v colwise and o rowwise, each rank holding whole heads (their
 * shards are shard(d, block=d): 5 heads over 2 ranks are 3 and 2), or all
 * four replicated.
 *
 *   x   brought to replicate on tp once (an all_gather from sequence
 *       shards: Megatron's one gather before its fused QKV)
 *   q, k, v = the linears on x             (..., S, H_r d) on rank r
 *   q, k    turned by rotary position embeddings when rope_theta is
 *           set (tps_tensor_rope: per head, by the global position of
 *           each row; whole heads on every rank, so no communication)
 *   per head h of the rank: a_h = softmax(q_h k_h^T / sqrt(d) [+ causal
 *       mask]) v_h                         no communication
 *   y   = o(a)                             partial, then o's reduction
 *
 * The core, per head, in fixed order: s_ij = (sum over c of q_ic k_jc) /
 * sqrt(d) in float; p_ij = exp(s_ij - max_j s) / sum_j (double, in
 * order); a_ic = sum over j of p_ij v_jc in float. Each head is computed
 * alike on its rank and in the reference, so the core adds no rounding
 * difference of its own. In training forward keeps p for backward, as
 * Megatron keeps its softmax output (Korthikanti et al. 2022's 2as^2b),
 * in float32, the precision the core multiplies v by: the ranks'
 * `<attn>` keeps one (..., S, H_r S) tensor, row i of head h at columns
 * [h S, (h + 1) S). Under "recompute": "selective" it keeps none, and
 * backward runs the core's forward again from q, k and v (a recorded
 * event) to get the same p. Backward takes
 *
 *   dv = p^T da, dp = da v^T, ds = p (dp - rowsum(p dp)),
 *   dq = ds k / sqrt(d), dk = ds^T q / sqrt(d)
 *
 * With RoPE the core runs on the turned q and k, and its dq and dk turn
 * back by the transpose (the angle negated) before q's and k's linears.
 *
 * The three input gradients of q, k, v (partial when colwise) are summed
 * on each rank before one reduction: one all_reduce (or reduce_scatter
 * back into sequence shards), as Megatron's f.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"
#include "nn_bounds.h"

/* The linears (children) and, past V, the probabilities' slot among
 * what the attention keeps (saved_more). */
enum { Q, K, V, O };
enum { PROBS = 3 };

static_assert(PROBS < TPS_MODULE_SAVED_MORE, "saved_more holds probs");

static struct tps_module *child(struct tps_module *m, int i)
{
	return m + 1 + i;
}

static int64_t head_dim(const struct tps_module_spec *s)
{
	return s->in_features / s->num_heads;
}

/* The attention core over every head in q (..., S, Fq) and k, v
 * (..., S, Fk), Fq and Fk multiples of d, Fq a multiple of Fk: out (q's
 * shape) = softmax(q_h k_g^T / sqrt(d)) v_g per query head h, g = h / (Fq
 * / Fk) its kv head (grouped-query attention; g = h when Fq = Fk). With
 * probs (NULL: not kept), the probabilities p too, (..., S, (Fq / d) S):
 * probs_shape's. The heads run on pool's threads (NULL: the caller's);
 * each is computed alike on any thread, so the bytes do not depend on it. */
static enum tps_status
core_forward(struct tps_tensor *out, struct tps_tensor *probs,
	     const struct tps_tensor *q, const struct tps_tensor *k,
	     const struct tps_tensor *v, int64_t d, bool causal,
	     struct tps_pool *pool, struct tps_error *err);

/* The shape of the probabilities of q (..., S, Fq) with heads of d: (...,
 * S, (Fq / d) S), row i of head h at columns [h S, (h + 1) S). */
static struct tps_shape probs_shape(const struct tps_shape *q, int64_t d)
{
	struct tps_shape sh = *q;
	int64_t S = sh.dim[sh.ndim - 2];
	sh.dim[sh.ndim - 1] = sh.dim[sh.ndim - 1] / d * S;
	return sh;
}

/* One (batch, head) of the core: where its q, k, v (and da, dq, dk, dv:
 * the same layouts) start, rows Fq or Fk floats apart. */
struct head_at {
	int64_t base;  /* into q's layout */
	int64_t kbase; /* into k's */
};

static struct head_at head_at(int64_t S, int64_t Fq, int64_t Fk, int64_t d,
			      int64_t b, int64_t h)
{
	struct head_at at = {b * S * Fq + h * d,
			     b * S * Fk + h / (Fq / Fk) * d};
	return at;
}

/* Scores q_h k_g^T of `rows` query rows from q (rows Fq floats apart)
 * against all S keys, (rows, S), into sp: every s_ij is the sum over c
 * ascending of q_ic k_jc (the GEMM's order), the causal mask's too
 * (computed, then not used). */
static void head_scores(float *sp, const float *q, const float *k,
			int64_t rows, int64_t S, int64_t Fq, int64_t Fk,
			int64_t d)
{
	tps_matmul_ld(sp, S, q, Fq, k, Fk, rows, S, d, false, true);
}

/* Turns the scores row i (S floats) into its softmax probabilities in
 * place: p_ij = exp(s_ij scale - max) / sum over j <= last (double, in
 * order), 0 past the causal mask's last column. */
static void row_softmax(float *p, int64_t S, int64_t i, bool causal,
			float scale)
{
	int64_t last = causal ? i : S - 1;
	float max = -INFINITY;
	double sum = 0.0;
	for (int64_t j = 0; j <= last; j++) {
		p[j] = p[j] * scale;
		max = p[j] > max ? p[j] : max;
	}
	for (int64_t j = 0; j <= last; j++) {
		sum += exp((double)p[j] - max);
	}
	for (int64_t j = 0; j < S; j++) {
		p[j] = j <= last ? (float)(exp((double)p[j] - max) / sum)
				 : 0.0f;
	}
}

/* One head's probabilities, (S, S), into p: scores, then softmax. */
static void head_probs(float *p, const float *q, const float *k, int64_t S,
		       int64_t Fq, int64_t Fk, int64_t d, bool causal,
		       float scale)
{
	head_scores(p, q, k, S, S, Fq, Fk, d);
	for (int64_t i = 0; i < S; i++) {
		row_softmax(p + i * S, S, i, causal, scale);
	}
}

struct core_fwd_job {
	struct tps_tensor *out, *probs;
	const struct tps_tensor *q, *k, *v;
	int64_t S, F, Fk, d;
	bool causal;
	float scale;
};

/* Query rows per block of the forward: about 64 KiB of probabilities at a
 * time, so a long sequence never holds a whole head's (S, S). */
static int64_t rows_per_block(int64_t S)
{
	int64_t rows = ((int64_t)1 << 14) / (S > 0 ? S : 1);
	return rows < 1 ? 1 : rows > S ? S : rows;
}

/* Item b * heads + h: head h of batch b, a = p v_g into out's columns,
 * a block of query rows at a time (each row's sums are whole in it). */
static enum tps_status core_forward_head(void *opaque, int64_t item,
					 struct tps_error *err)
{
	const struct core_fwd_job *job = opaque;
	const int64_t S = job->S, F = job->F, Fk = job->Fk, d = job->d;
	const int64_t heads = F / d, b = item / heads, h = item % heads;
	const int64_t R = rows_per_block(S);
	const struct head_at at = head_at(S, F, Fk, d, b, h);
	float *p = malloc((size_t)(R * S) * sizeof *p);
	if (!p) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int64_t i0 = 0; i0 < S; i0 += R) {
		const int64_t rows = S - i0 < R ? S - i0 : R;
		head_scores(p, job->q->data + at.base + i0 * F,
			    job->k->data + at.kbase, rows, S, F, Fk, d);
		for (int64_t i = 0; i < rows; i++) {
			row_softmax(p + i * S, S, i0 + i, job->causal,
				    job->scale);
		}
		for (int64_t i = 0; job->probs && i < rows; i++) {
			memcpy(job->probs->data +
				       (b * S + i0 + i) * heads * S + h * S,
			       p + i * S, (size_t)S * sizeof *p);
		}
		/* a_ic = sum over j ascending of p_ij v_jc */
		tps_matmul_ld(job->out->data + at.base + i0 * F, F, p, S,
			      job->v->data + at.kbase, Fk, rows, d, S, false,
			      false);
	}
	free(p);
	return TPS_OK;
}

static enum tps_status
core_forward(struct tps_tensor *out, struct tps_tensor *probs,
	     const struct tps_tensor *q, const struct tps_tensor *k,
	     const struct tps_tensor *v, int64_t d, bool causal,
	     struct tps_pool *pool, struct tps_error *err)
{
	const struct tps_shape *sh = &q->shape;
	int64_t F = sh->dim[sh->ndim - 1], S = sh->dim[sh->ndim - 2];
	int64_t Fk = k->shape.dim[k->shape.ndim - 1];
	int64_t batches = S > 0 && F > 0 ? tps_tensor_numel(q) / (S * F) : 0;
	struct core_fwd_job job = {out,
				   probs,
				   q,
				   k,
				   v,
				   S,
				   F,
				   Fk,
				   d,
				   causal,
				   1.0f / sqrtf((float)d)};
	enum tps_status st = tps_tensor_init_like(out, sh, q, err);
	if (st == TPS_OK && probs) {
		struct tps_shape ps = probs_shape(sh, d);
		st = tps_tensor_init_like(probs, &ps, q, err);
		if (st != TPS_OK) {
			tps_tensor_free(out);
		}
	}
	if (st != TPS_OK || !out->data || F == 0 || Fk == 0 || S == 0) {
		return st;
	}
	st = tps_pool_try(pool, batches * (F / d), core_forward_head, &job,
			  err);
	if (st != TPS_OK) {
		tps_tensor_free(out);
		if (probs) {
			tps_tensor_free(probs);
		}
	}
	return st;
}

struct core_bwd_job {
	struct tps_tensor *grads; /* dq, dk, dv */
	const struct tps_tensor *da, *q, *k, *v, *probs;
	int64_t S, F, Fk, d;
	bool causal;
	float scale;
};

/* dst[r * ld + c] = first ? src : dst + src (src (S, d) contiguous),
 * each times scale (1: as is). */
static void put_head(float *dst, int64_t ld, const float *src, int64_t S,
		     int64_t d, float scale, bool scaled, bool first)
{
	for (int64_t r = 0; r < S; r++) {
		for (int64_t c = 0; c < d; c++) {
			float v = scaled ? src[r * d + c] * scale
					 : src[r * d + c];
			dst[r * ld + c] = first ? v : dst[r * ld + c] + v;
		}
	}
}

/* Item b * kv_heads + g: every query head of kv head g in batch b, in
 * head order; the first sets dk and dv, the others add to them. */
static enum tps_status core_backward_group(void *opaque, int64_t item,
					   struct tps_error *err)
{
	const struct core_bwd_job *job = opaque;
	const int64_t S = job->S, F = job->F, Fk = job->Fk, d = job->d;
	const int64_t heads = F / d, group = F / Fk, kv_heads = Fk / d;
	const int64_t b = item / kv_heads, g = item % kv_heads;
	float *p = malloc((size_t)(2 * S * S + S * d) * sizeof *p);
	float *dp = p + S * S, *tmp = dp + S * S;
	if (!p) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int64_t h = g * group; h < (g + 1) * group && h < heads; h++) {
		const struct head_at at = head_at(S, F, Fk, d, b, h);
		const bool first = h == g * group;
		const float *qb = job->q->data + at.base;
		const float *kb = job->k->data + at.kbase;
		const float *vb = job->v->data + at.kbase;
		const float *ga = job->da->data + at.base;
		float *dq = job->grads[0].data + at.base;
		float *dk = job->grads[1].data + at.kbase;
		float *dv = job->grads[2].data + at.kbase;
		if (job->probs) {
			for (int64_t i = 0; i < S; i++) {
				memcpy(p + i * S,
				       job->probs->data +
					       (b * S + i) * heads * S + h * S,
				       (size_t)S * sizeof *p);
			}
		} else {
			head_probs(p, qb, kb, S, F, Fk, d, job->causal,
				   job->scale);
		}
		/* dv_jc = sum over i of p_ij da_ic */
		tps_matmul_ld(tmp, d, p, S, ga, F, S, d, S, true, false);
		put_head(dv, Fk, tmp, S, d, 1.0f, false, first);
		/* dp_ij = sum over c of da_ic v_jc; ds_ij = p_ij (dp_ij -
		 * rowdot_i), rowdot in double, in order; ds replaces p */
		tps_matmul_ld(dp, S, ga, F, vb, Fk, S, S, d, false, true);
		for (int64_t i = 0; i < S; i++) {
			double rowdot = 0.0;
			for (int64_t j = 0; j < S; j++) {
				rowdot += (double)p[i * S + j] * dp[i * S + j];
			}
			for (int64_t j = 0; j < S; j++) {
				p[i * S + j] =
					(float)(p[i * S + j] *
						(dp[i * S + j] - rowdot));
			}
		}
		/* dq = (ds k) / sqrt(d), dk = (ds^T q) / sqrt(d) */
		tps_matmul_ld(tmp, d, p, S, kb, Fk, S, d, S, false, false);
		put_head(dq, F, tmp, S, d, job->scale, true, true);
		tps_matmul_ld(tmp, d, p, S, qb, F, S, d, S, true, false);
		put_head(dk, Fk, tmp, S, d, job->scale, true, first);
	}
	free(p);
	return TPS_OK;
}

/* dq (q's shape), dk, dv (k's) from da and the saved q, k, v, and the
 * probabilities forward kept (probs; NULL: recomputed from q and k, the
 * same floats): a kv head's gradients are the sum over its query heads,
 * in head order. The kv heads run on pool's threads (NULL: the
 * caller's). */
static enum tps_status
core_backward(struct tps_tensor grads[3], const struct tps_tensor *da,
	      const struct tps_tensor *q, const struct tps_tensor *k,
	      const struct tps_tensor *v, const struct tps_tensor *probs,
	      int64_t d, bool causal, struct tps_pool *pool,
	      struct tps_error *err)
{
	const struct tps_shape *sh = &q->shape;
	int64_t F = sh->dim[sh->ndim - 1], S = sh->dim[sh->ndim - 2];
	int64_t Fk = k->shape.dim[k->shape.ndim - 1];
	int64_t batches = S > 0 && F > 0 ? tps_tensor_numel(q) / (S * F) : 0;
	struct core_bwd_job job = {
		grads, da, q,  k, v,	  probs,
		S,     F,  Fk, d, causal, 1.0f / sqrtf((float)d)};
	enum tps_status st = TPS_OK;

	for (int i = 0; i < 3 && st == TPS_OK; i++) {
		st = tps_tensor_init_like(&grads[i], i == 0 ? sh : &k->shape,
					  q, err);
	}
	if (st == TPS_OK && grads[0].data && S > 0 && Fk > 0) {
		st = tps_pool_try(pool, batches * (Fk / d), core_backward_group,
				  &job, err);
	}
	if (st != TPS_OK) {
		for (int i = 0; i < 3; i++) {
			tps_tensor_free(&grads[i]);
		}
	}
	return st;
}

/* RoPE on q or k (sign 1) or on the gradient of the turned one (sign -1,
 * the transpose) in place, emitted as `tensor`. The rows are the global
 * positions, whatever the layout (tps_dtensor_rope). */
static enum tps_status rope_step(const struct tps_nn_context *ctx,
				 const struct tps_module_spec *s,
				 struct tps_dtensor *t, int sign,
				 const char *tensor, const char *note,
				 struct tps_error *err)
{
	struct tps_dtensor r = {0};
	enum tps_status st =
		tps_dtensor_rope(&r, t, head_dim(s), s->rope_theta,
				 (enum tps_rope_style)s->rope_style, sign, err);
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(ctx, s->name,
					 sign > 0 ? "rope" : "rope_backward",
					 tensor, note, &r, 0, err);
	}
	if (st == TPS_OK) {
		tps_dtensor_free(t);
		*t = r;
	} else {
		tps_dtensor_free(&r);
	}
	return st;
}

/* The reference's RoPE on the whole tensor (positions from 0), stored
 * in dtype d as the ranks store their event. */
static enum tps_status rope_reference(const struct tps_module_spec *s,
				      struct tps_tensor *t, int sign,
				      enum tps_dtype d, struct tps_error *err)
{
	struct tps_tensor r = {0};
	enum tps_status st =
		tps_tensor_rope(&r, t, head_dim(s), 0, s->rope_theta,
				(enum tps_rope_style)s->rope_style, sign, err);
	if (st == TPS_OK) {
		if (r.data) {
			tps_dtype_round_array(r.data, tps_tensor_numel(&r), d);
		}
		tps_tensor_free(t);
		tps_tensor_move(t, &r);
	}
	return st;
}

struct core_job {
	const struct tps_module *m;
	const struct tps_dtensor *qkv; /* q, k, v */
	const struct tps_dtensor *da;
	struct tps_tensor *grads; /* backward: 3 per rank */
	/* forward: each rank's probabilities, kept (NULL: not kept) */
	struct tps_tensor *probs;
};

static enum tps_status core_rank(void *opaque, int r, struct tps_tensor *out,
				 struct tps_error *err)
{
	const struct core_job *job = opaque;
	const struct tps_module_spec *s = job->m->spec;
	return core_forward(out, job->probs ? &job->probs[r] : NULL,
			    &job->qkv[Q].locals[r], &job->qkv[K].locals[r],
			    &job->qkv[V].locals[r], head_dim(s), s->causal,
			    NULL, err);
}

/* The probabilities' layout, from q's (..., S, H d): (..., S, H S), a
 * shard of q's last dim in whole heads of d becoming one in whole rows
 * of S (the same heads on each rank); the other placements as q's. */
static void probs_layout(const struct tps_dtensor *q, int64_t d,
			 struct tps_shape *global,
			 struct tps_placement placements[TPS_MAX_MESH_DIMS])
{
	int last = q->global.ndim - 1;
	int64_t S = q->global.dim[last - 1];
	*global = probs_shape(&q->global, d);
	for (int i = 0; i < TPS_MAX_MESH_DIMS; i++) {
		placements[i] = q->placements[i];
		if (placements[i].kind == TPS_PLACEMENT_SHARD &&
		    placements[i].dim == last && !placements[i].flat &&
		    !placements[i].local) {
			placements[i] = tps_placement_shard_blocks(
				last,
				tps_placement_block(placements[i]) / d * S);
		}
	}
}

/* Whether forward keeps the probabilities for backward: in training,
 * unless selective recompute runs the core again instead. */
static bool keep_probs(const struct tps_nn_context *ctx)
{
	return ctx->save && ctx->recompute != TPS_RECOMPUTE_SELECTIVE;
}

/* The core's event, "<attn>.heads" (again: run again in backward, from
 * the kept q, k and v). */
static enum tps_status emit_core(const struct tps_nn_context *ctx,
				 const struct tps_module *m,
				 struct tps_dtensor *a, bool again,
				 struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	char core_name[TPS_NAME_MAX + 16], note[320];
	int tp = ctx->mesh->shape[ctx->tp_dim];
	bool split = a->placements[ctx->tp_dim].kind == TPS_PLACEMENT_SHARD;
	snprintf(core_name, sizeof core_name, "%s.heads", s->name);
	snprintf(note, sizeof note,
		 "%sa_h = softmax(q_h k_h^T / sqrt(%lld)%s) v_h for each of "
		 "%s: no communication",
		 again ? "selective recompute, the core again from the kept "
			 "q, k and v for its probabilities: "
		       : "",
		 (long long)head_dim(s), s->causal ? ", causal" : "",
		 split && tp > 1 ? "the rank's whole heads"
				 : "the heads, on every rank");
	return tps_nn_emit_compute(ctx, s->name, "attention", core_name, note,
				   a, 0, err);
}

/*
 * The core on every rank: *a its output; with keep (training without
 * selective recompute), the probabilities too, into *probs (laid out by
 * probs_layout), as forward keeps them for backward. On error both
 * untouched.
 */
static enum tps_status
core_run(const struct tps_nn_context *ctx, const struct tps_module *m,
	 const struct tps_dtensor qkv[3], bool keep, struct tps_dtensor *a,
	 struct tps_dtensor *probs, struct tps_error *err)
{
	int world = ctx->mesh->world_size;
	struct core_job job = {m, qkv, NULL, NULL, NULL};
	struct tps_dtensor out = {0};
	enum tps_status st = TPS_OK;
	if (keep) {
		job.probs = calloc((size_t)world, sizeof *job.probs);
		if (!job.probs) {
			return tps_error_set(err, TPS_ERR_NOMEM,
					     "out of memory");
		}
	}
	st = tps_dtensor_map(&out, ctx->mesh, &qkv[Q].global, qkv[Q].placements,
			     core_rank, &job, err);
	if (st == TPS_OK && keep) {
		struct tps_shape global;
		struct tps_placement placements[TPS_MAX_MESH_DIMS];
		probs_layout(&qkv[Q], head_dim(m->spec), &global, placements);
		tps_dtensor_wrap(probs, ctx->mesh, &global, placements,
				 job.probs);
		job.probs = NULL;
	}
	for (int r = 0; job.probs && r < world; r++) {
		tps_tensor_free(&job.probs[r]);
	}
	free(job.probs);
	if (st == TPS_OK) {
		*a = out;
	}
	return st;
}

/* Whether q, k and v each kept x itself for backward (the same layout:
 * no linear split it its own way), so that one copy serves the three. */
static bool one_input(struct tps_module *m, const struct tps_dtensor *x)
{
	for (int i = Q; i <= V; i++) {
		const struct tps_dtensor *in = &child(m, i)->saved_in;
		if (!in->locals || !tps_shape_equal(&in->global, &x->global) ||
		    memcmp(in->placements, x->placements,
			   sizeof x->placements) != 0) {
			return false;
		}
	}
	return true;
}

static enum tps_status attention_forward(const struct tps_nn_context *ctx,
					 struct tps_module *m,
					 struct tps_dtensor *x,
					 struct tps_dtensor *y,
					 struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	char in_name[TPS_NAME_MAX + 8];
	struct tps_dtensor qkv[3] = {{0}}, a = {0}, out = {0}, shard = {0};
	struct tps_dtensor probs = {0};
	enum tps_status st = TPS_OK;
	char note[256];

	snprintf(in_name, sizeof in_name, "%s.in", s->name);
	tps_nn_forward_begin(ctx, m);
	if (ctx->save) {
		tps_layout_chain_start(&m->in_chain, ctx, x);
	}
	/* Sequence shards: q, k and v keep none of the gathered copies;
	 * the attention keeps the shard once, as Megatron's fused QKV
	 * does, and backward gathers it again (sp_save). */
	st = tps_nn_keep_shard(ctx, x, &shard, err);
	/* Every head needs every position: the whole sequence, once. */
	if (st == TPS_OK) {
		st = tps_nn_to_layout_chained(
			ctx, x, tps_placement_replicate(),
			ctx->save ? &m->in_chain : NULL, s->name, in_name,
			"q, k and v read the whole sequence: "
			"one gather for the three",
			err);
	}
	for (int i = Q; i <= V && st == TPS_OK; i++) {
		struct tps_dtensor xi = {0};
		st = tps_dtensor_copy(&xi, x, err);
		if (st == TPS_OK) {
			struct tps_module *c = child(m, i);
			st = tps_nn_module_forward(ctx, c, &xi, &qkv[i], err);
		}
		tps_dtensor_free(&xi);
	}
	for (int i = Q; i <= K && st == TPS_OK && s->rope_theta > 0.0; i++) {
		char name[TPS_NAME_MAX + 16];
		snprintf(name, sizeof name, "%s.%c.rope", s->name, "qk"[i]);
		snprintf(note, sizeof note,
			 "rotary embeddings (%s, theta %g): each head's "
			 "pairs turned by the row's global position times "
			 "theta^(-2i/%lld); whole heads: no communication",
			 tps_rope_style_names[s->rope_style], s->rope_theta,
			 (long long)head_dim(s));
		st = rope_step(ctx, s, &qkv[i], 1, name, note, err);
	}
	if (st == TPS_OK) {
		st = core_run(ctx, m, qkv, keep_probs(ctx), &a, &probs, err);
	}
	if (st == TPS_OK) {
		st = emit_core(ctx, m, &a, false, err);
	}
	if (st == TPS_OK) {
		struct tps_module *o = child(m, O);
		st = tps_nn_module_forward(ctx, o, &a, &out, err);
	}
	/* Its input is its children's: what it keeps is q, k and v, the
	 * probabilities, and in q's, k's and v's place one input for the
	 * three (the sequence shard, when it keeps one; else the input
	 * they all read, as Megatron's fused QKV and PyTorch's autograd,
	 * three uses of one tensor, keep one). */
	if (st == TPS_OK && ctx->save && !shard.locals && one_input(m, x)) {
		shard = child(m, Q)->saved_in;
		memset(&child(m, Q)->saved_in, 0, sizeof shard);
	}
	if (st == TPS_OK && ctx->save) {
		for (int i = Q; i <= V; i++) {
			m->saved_more[i] = qkv[i];
			memset(&qkv[i], 0, sizeof qkv[i]);
			tps_dtensor_free(&child(m, i)->saved_in);
		}
		m->saved_more[PROBS] = probs;
		memset(&probs, 0, sizeof probs);
	}
	for (int i = Q; i <= V; i++) {
		tps_dtensor_free(&qkv[i]);
	}
	tps_dtensor_free(&probs);
	tps_dtensor_free(&a);
	st = tps_nn_forward_end(ctx, m, shard.locals ? &shard : NULL, &out, y,
				st);
	tps_dtensor_free(&shard);
	return st;
}

static enum tps_status core_backward_rank(void *opaque, int r,
					  struct tps_error *err)
{
	const struct core_job *job = opaque;
	const struct tps_module_spec *s = job->m->spec;
	const struct tps_dtensor *probs = &job->m->saved_more[PROBS];
	return core_backward(job->grads + 3 * r, &job->da->locals[r],
			     &job->m->saved_more[Q].locals[r],
			     &job->m->saved_more[K].locals[r],
			     &job->m->saved_more[V].locals[r],
			     probs->locals ? &probs->locals[r] : NULL,
			     head_dim(s), s->causal, NULL, err);
}

/* Selective recompute: the core's forward run again from the kept q, k
 * and v, its event marked, for the probabilities forward did not keep
 * (into saved_more[PROBS]); its output is not needed. */
static enum tps_status recompute_core(const struct tps_nn_context *ctx,
				      struct tps_module *m,
				      struct tps_error *err)
{
	struct tps_nn_context rc = tps_nn_recompute_context(ctx);
	struct tps_dtensor a = {0}, probs = {0};
	enum tps_status st =
		core_run(&rc, m, m->saved_more, true, &a, &probs, err);
	if (st == TPS_OK) {
		st = emit_core(&rc, m, &a, true, err);
	}
	if (st == TPS_OK) {
		m->saved_more[PROBS] = probs;
		memset(&probs, 0, sizeof probs);
	}
	tps_dtensor_free(&probs);
	tps_dtensor_free(&a);
	return st;
}

struct sum_job {
	struct tps_dtensor *parts; /* 3 */
};

static enum tps_status sum_rank(void *opaque, int r, struct tps_tensor *out,
				struct tps_error *err)
{
	const struct sum_job *job = opaque;
	enum tps_status st =
		tps_tensor_copy(out, &job->parts[0].locals[r], err);
	for (int i = 1; i < 3 && st == TPS_OK; i++) {
		tps_tensor_add(out, &job->parts[i].locals[r]);
	}
	return st;
}

static enum tps_status attention_backward(const struct tps_nn_context *ctx,
					  struct tps_module *m,
					  struct tps_dtensor *dy,
					  struct tps_dtensor *dx,
					  struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	int world = ctx->mesh->world_size;
	struct tps_dtensor da = {0}, dqkv[3] = {{0}}, dxs[3] = {{0}};
	struct tps_tensor *grads = calloc((size_t)world * 3, sizeof *grads);
	struct core_job job = {m, NULL, &da, grads, NULL};
	static const char *const names[3] = {"q", "k", "v"};
	char name[TPS_NAME_MAX + 24], in_grad[TPS_NAME_MAX + 16];
	enum tps_status st =
		grads ? TPS_OK
		      : tps_error_set(err, TPS_ERR_NOMEM, "out of memory");

	snprintf(in_grad, sizeof in_grad, "%s.in.grad", s->name);
	if (st == TPS_OK) {
		struct tps_module *o = child(m, O);
		st = tps_nn_module_backward(ctx, o, dy, &da, err);
	} else {
		tps_dtensor_free(dy);
	}
	if (st == TPS_OK && !m->saved_more[PROBS].locals) {
		st = recompute_core(ctx, m, err);
	}
	if (st == TPS_OK) {
		st = tps_mesh_for_each_rank(ctx->mesh, core_backward_rank, &job,
					    err);
	}
	for (int i = Q; i <= V && st == TPS_OK; i++) {
		struct tps_tensor *locals =
			calloc((size_t)world, sizeof *locals);
		if (!locals) {
			st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
			break;
		}
		for (int r = 0; r < world; r++) {
			tps_tensor_move(&locals[r], &grads[3 * r + i]);
		}
		tps_dtensor_wrap(&dqkv[i], ctx->mesh, &m->saved_more[i].global,
				 m->saved_more[i].placements, locals);
		snprintf(name, sizeof name,
			 s->rope_theta > 0.0 && i != V ? "%s.%s.rope.grad"
						       : "%s.%s.out.grad",
			 s->name, names[i]);
		st = tps_nn_emit_compute(
			ctx, s->name, "attention_backward", name,
			i == Q	 ? "dq = ds k / sqrt(d), ds = p (da v^T - "
				   "rowsum(p da v^T)): per head, local"
			: i == K ? "dk = ds^T q / sqrt(d): per head, local"
				 : "dv = p^T da: per head, local",
			&dqkv[i], 0, err);
		if (st == TPS_OK && s->rope_theta > 0.0 && i != V) {
			snprintf(name, sizeof name, "%s.%s.out.grad", s->name,
				 names[i]);
			st = rope_step(ctx, s, &dqkv[i], -1, name,
				       "turned back: the rotation's transpose "
				       "(the angle negated), per head, local",
				       err);
		}
	}
	/* The one input kept for q, k and v, handed to each: a sequence
	 * shard gathered again first, once for the three. */
	if (st == TPS_OK && m->saved_in.locals) {
		struct tps_dtensor gathered = {0};
		snprintf(name, sizeof name, "%s.in", s->name);
		if (m->saved_in.placements[ctx->tp_dim].kind ==
		    TPS_PLACEMENT_SHARD) {
			st = tps_nn_regather(ctx, &m->saved_in, s->name, name,
					     &gathered, err);
		} else {
			gathered = m->saved_in;
			memset(&m->saved_in, 0, sizeof m->saved_in);
		}
		for (int i = Q; i <= V && st == TPS_OK; i++) {
			struct tps_module *c = child(m, i);
			tps_dtensor_free(&c->saved_in);
			if (i == V) {
				c->saved_in = gathered;
				memset(&gathered, 0, sizeof gathered);
			} else {
				st = tps_dtensor_copy(&c->saved_in, &gathered,
						      err);
			}
		}
		tps_dtensor_free(&gathered);
	}
	/* q, k and v back to x; their input gradients, partial when they
	 * are colwise, are summed before one reduction. */
	for (int i = Q; i <= V; i++) {
		struct tps_module *c = child(m, i);
		c->keep_partial_dx = true;
		if (st == TPS_OK) {
			st = tps_nn_module_backward(ctx, c, &dqkv[i],
						    dx ? &dxs[i] : NULL, err);
		} else {
			tps_dtensor_free(&dqkv[i]);
			tps_module_free_saved(c);
		}
		c->keep_partial_dx = false;
	}
	if (st == TPS_OK && dx) {
		struct sum_job sj = {dxs};
		st = tps_dtensor_map(dx, ctx->mesh, &dxs[Q].global,
				     dxs[Q].placements, sum_rank, &sj, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_compute(
				ctx, s->name, "add", in_grad,
				"dx = dx_q + dx_k + dx_v on each rank, before "
				"one reduction",
				dx, 0, err);
		}
		if (st == TPS_OK && !m->keep_partial_dx) {
			st = tps_nn_grad_through(ctx, dx, &m->in_chain, s->name,
						 in_grad, err);
		}
		if (st != TPS_OK) {
			tps_dtensor_free(dx);
		}
	}
	for (int r = 0; grads && r < 3 * world; r++) {
		tps_tensor_free(&grads[r]);
	}
	free(grads);
	for (int i = 0; i < 3; i++) {
		tps_dtensor_free(&dxs[i]);
		tps_dtensor_free(&dqkv[i]);
	}
	tps_dtensor_free(&da);
	tps_module_free_saved(m);
	return st;
}

static enum tps_status attention_reference_forward(struct tps_module *m,
						   struct tps_pool *pool,
						   const struct tps_tensor *x,
						   struct tps_tensor *y,
						   struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct tps_tensor qkv[3] = {0}, a = {0};
	enum tps_status st = TPS_OK;
	for (int i = Q; i <= V && st == TPS_OK; i++) {
		struct tps_module *c = child(m, i);
		st = tps_nn_reference_forward(c, pool, x, &qkv[i], err);
		if (st == TPS_OK && m->training) {
			st = tps_tensor_copy(&c->ref_saved_in, x, err);
		}
	}
	for (int i = Q; i <= K && st == TPS_OK && s->rope_theta > 0.0; i++) {
		st = rope_reference(s, &qkv[i], 1,
				    tps_module_dtype(m, TPS_ROLE_ACTIVATIONS),
				    err);
	}
	if (st == TPS_OK) {
		st = core_forward(&a, NULL, &qkv[Q], &qkv[K], &qkv[V],
				  head_dim(s), s->causal, pool, err);
	}
	if (st == TPS_OK && a.data) {
		/* Stored as the ranks store their heads' event. */
		tps_dtype_round_array(
			a.data, tps_tensor_numel(&a),
			tps_module_dtype(m, TPS_ROLE_ACTIVATIONS));
	}
	if (st == TPS_OK) {
		struct tps_module *o = child(m, O);
		st = tps_nn_reference_forward(o, pool, &a, y, err);
		if (st == TPS_OK && m->training) {
			tps_tensor_move(&o->ref_saved_in, &a);
		}
	}
	for (int i = Q; i <= V; i++) {
		if (st == TPS_OK && m->training) {
			tps_tensor_move(&m->ref_saved_more[i], &qkv[i]);
		}
		tps_tensor_free(&qkv[i]);
	}
	tps_tensor_free(&a);
	return st;
}

static enum tps_status attention_reference_backward(struct tps_module *m,
						    struct tps_pool *pool,
						    const struct tps_tensor *dy,
						    struct tps_tensor *dx,
						    struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct tps_tensor da = {0}, grads[3] = {0}, dxs[3] = {0};
	struct tps_module *o = child(m, O);
	enum tps_status st = tps_nn_reference_backward(o, pool, dy, &da, err);
	if (st == TPS_OK) {
		st = core_backward(grads, &da, &m->ref_saved_more[Q],
				   &m->ref_saved_more[K], &m->ref_saved_more[V],
				   NULL, head_dim(s), s->causal, pool, err);
	}
	for (int i = Q; i <= V && st == TPS_OK; i++) {
		if (grads[i].data) {
			tps_dtype_round_array(
				grads[i].data, tps_tensor_numel(&grads[i]),
				tps_module_dtype(m, TPS_ROLE_GRADS));
		}
		if (s->rope_theta > 0.0 && i != V) {
			st = rope_reference(s, &grads[i], -1,
					    tps_module_dtype(m, TPS_ROLE_GRADS),
					    err);
		}
	}
	for (int i = Q; i <= V; i++) {
		struct tps_module *c = child(m, i);
		if (st == TPS_OK) {
			st = tps_nn_reference_backward(
				c, pool, &grads[i], dx ? &dxs[i] : NULL, err);
		} else {
			tps_tensor_free(&c->ref_saved_in);
		}
	}
	if (st == TPS_OK && dx) {
		st = tps_tensor_copy(dx, &dxs[Q], err);
		if (st == TPS_OK) {
			tps_tensor_add(dx, &dxs[K]);
			tps_tensor_add(dx, &dxs[V]);
		}
	}
	for (int i = 0; i < 3; i++) {
		tps_tensor_free(&grads[i]);
		tps_tensor_free(&dxs[i]);
		tps_tensor_free(&m->ref_saved_more[i]);
	}
	tps_tensor_free(&da);
	tps_tensor_free(&m->ref_saved_in);
	return st;
}

/* RoPE on the reference's t (q or k, or their gradients: sign -1) with
 * its bound e (tps_bound_rope), stored in dtype d and emitted as
 * `tensor`, as the ranks' rope_step does. A "no bound" stays one. */
static enum tps_status rope_bound(const struct tps_module_spec *s,
				  const struct tps_bound_ctx *bc,
				  const struct tps_bound_dtypes *dt,
				  struct tps_tensor *t, struct tps_bound *e,
				  int sign, enum tps_dtype d,
				  const char *tensor, struct tps_error *err)
{
	struct tps_tensor r = {0};
	struct tps_bound er = {0};
	enum tps_status st =
		tps_tensor_rope(&r, t, head_dim(s), 0, s->rope_theta,
				(enum tps_rope_style)s->rope_style, sign, err);
	if (st == TPS_OK && tps_bound_is_none(e)) {
		tps_bound_none_like(&er, e);
	} else if (st == TPS_OK) {
		st = tps_bound_rope(t, &e->e, &r, head_dim(s), s->rope_theta,
				    (enum tps_rope_style)s->rope_style, sign,
				    dt, &er.e, err);
	}
	if (st == TPS_OK) {
		tps_nn_bound_store(&r, &er, d);
		st = tps_bound_emit(bc, tensor, &r, &er, err);
	}
	if (st == TPS_OK) {
		tps_tensor_free(t);
		tps_tensor_move(t, &r);
		tps_bound_free(e);
		tps_bound_move(e, &er);
	}
	tps_tensor_free(&r);
	tps_bound_free(&er);
	return st;
}

/* The first "no bound" of three, or NULL. */
static const struct tps_bound *none_of3(const struct tps_bound *e)
{
	const struct tps_bound *in[3] = {&e[0], &e[1], &e[2]};
	return tps_bound_first_none(in, 3);
}

/*
 * The reference with bounds (docs/numerics.md, "Attention"): q, k and v
 * through their linears' rules, RoPE's rule for q and k when it is on
 * ("Rotary embeddings"), the core through nn_bounds.h's (grouped-query
 * attention's too), stored
 * in the activations dtype, the output projection through its rule.
 */
static enum tps_status attention_bound_forward(struct tps_module *m,
					       const struct tps_bound_ctx *bc,
					       const struct tps_tensor *x,
					       const struct tps_bound *ex,
					       struct tps_tensor *y,
					       struct tps_bound *ey,
					       struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct tps_bound_dtypes dt = {TPS_DTYPE_F32, TPS_DTYPE_F32,
				      bc->dtypes.of[TPS_ROLE_REDUCE]};
	struct tps_tensor qkv[3] = {0}, a = {0};
	struct tps_bound eqkv[3] = {0}, ea = {0};
	enum tps_status st = TPS_OK;
	for (int i = Q; i <= V && st == TPS_OK; i++) {
		struct tps_module *c = child(m, i);
		st = tps_nn_bound_forward_seq(c, tps_module_next(c), bc,
					      m->training, x, ex, &qkv[i],
					      &eqkv[i], err);
	}
	for (int i = Q; i <= K && st == TPS_OK && s->rope_theta > 0.0; i++) {
		char name[TPS_NAME_MAX + 16];
		snprintf(name, sizeof name, "%s.%c.rope", s->name, "qk"[i]);
		st = rope_bound(s, bc, &dt, &qkv[i], &eqkv[i], 1,
				tps_module_dtype(m, TPS_ROLE_ACTIVATIONS), name,
				err);
	}
	if (st == TPS_OK) {
		st = core_forward(&a, NULL, &qkv[Q], &qkv[K], &qkv[V],
				  head_dim(s), s->causal, bc->pool, err);
	}
	if (st == TPS_OK && none_of3(eqkv)) {
		tps_bound_none_like(&ea, none_of3(eqkv));
	} else if (st == TPS_OK) {
		struct tps_bound_attention att = {
			&qkv[Q],     &qkv[K],	 &qkv[V],
			&eqkv[Q].e,  &eqkv[K].e, &eqkv[V].e,
			head_dim(s), s->causal,	 bc->pool};
		st = tps_bound_attention_forward(&att, &dt, &ea.e, err);
	}
	if (st == TPS_OK) {
		/* Stored as the ranks store their heads' event. */
		tps_nn_bound_store(&a, &ea,
				   tps_module_dtype(m, TPS_ROLE_ACTIVATIONS));
		char name[TPS_NAME_MAX + 8];
		snprintf(name, sizeof name, "%s.heads", s->name);
		st = tps_bound_emit(bc, name, &a, &ea, err);
	}
	if (st == TPS_OK) {
		struct tps_module *o = child(m, O);
		st = tps_nn_bound_forward_seq(o, tps_module_next(o), bc,
					      m->training, &a, &ea, y, ey,
					      err);
	}
	for (int i = Q; i <= V; i++) {
		if (st == TPS_OK && m->training) {
			tps_tensor_move(&m->ref_saved_more[i], &qkv[i]);
			tps_bound_move(&m->ref_saved_more_bound[i], &eqkv[i]);
		}
		tps_tensor_free(&qkv[i]);
		tps_bound_free(&eqkv[i]);
	}
	tps_tensor_free(&a);
	tps_bound_free(&ea);
	return st;
}

/* dx = the sum of the q, k and v linears' input gradients: three terms
 * in any order, gamma_2 (|terms| + their bounds) more. */
static enum tps_status sum_of_three(const struct tps_bound_ctx *bc,
				    const struct tps_tensor d[3],
				    const struct tps_bound e[3],
				    struct tps_tensor *dx,
				    struct tps_bound *edx,
				    struct tps_error *err)
{
	double g = tps_bound_ctx_gamma(bc, 2, bc->u_grad);
	enum tps_status st = tps_tensor_copy(dx, &d[Q], err);
	if (st != TPS_OK) {
		return st;
	}
	tps_tensor_add(dx, &d[K]);
	tps_tensor_add(dx, &d[V]);
	if (none_of3(e)) {
		tps_bound_none_like(edx, none_of3(e));
		return TPS_OK;
	}
	st = tps_bound_zero(edx, &dx->shape, err);
	for (int64_t k = 0; st == TPS_OK && k < tps_tensor_numel(dx); k++) {
		double sum = 0.0, mag = 0.0;
		for (int i = Q; i <= V; i++) {
			sum += e[i].e.data[k];
			mag += fabs(d[i].data[k]) + 2.0 * e[i].e.data[k];
		}
		/* Every term's bound 0: the same three floats added, but
		 * maybe in another order. */
		edx->e.data[k] = tps_bound_up(sum + g * mag);
	}
	if (st != TPS_OK) {
		tps_tensor_free(dx);
	}
	return st;
}

static enum tps_status attention_bound_backward(struct tps_module *m,
						const struct tps_bound_ctx *bc,
						const struct tps_tensor *dy,
						const struct tps_bound *edy,
						struct tps_tensor *dx,
						struct tps_bound *edx,
						struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct tps_bound_dtypes dt = {TPS_DTYPE_F32, TPS_DTYPE_F32,
				      bc->dtypes.of[TPS_ROLE_REDUCE]};
	struct tps_tensor da = {0}, grads[3] = {0}, dxs[3] = {0};
	struct tps_bound eda = {0}, eg[3] = {0}, edxs[3] = {0};
	struct tps_module *o = child(m, O);
	enum tps_status st = tps_nn_bound_backward_seq(
		o, tps_module_next(o), bc, dy, edy, &da, &eda, err);
	const struct tps_bound *none = NULL;
	if (st == TPS_OK) {
		none = none_of3(m->ref_saved_more_bound);
		none = none ? none : (tps_bound_is_none(&eda) ? &eda : NULL);
	}
	if (st == TPS_OK && none) {
		for (int i = Q; i <= V; i++) {
			tps_bound_none_like(&eg[i], none);
		}
	} else if (st == TPS_OK) {
		struct tps_bound_attention att = {&m->ref_saved_more[Q],
						  &m->ref_saved_more[K],
						  &m->ref_saved_more[V],
						  &m->ref_saved_more_bound[Q].e,
						  &m->ref_saved_more_bound[K].e,
						  &m->ref_saved_more_bound[V].e,
						  head_dim(s),
						  s->causal,
						  bc->pool};
		st = tps_bound_attention_backward(&att, &da, &eda.e, &dt,
						  &eg[Q].e, &eg[K].e, &eg[V].e,
						  err);
	}
	if (st == TPS_OK) {
		st = core_backward(grads, &da, &m->ref_saved_more[Q],
				   &m->ref_saved_more[K], &m->ref_saved_more[V],
				   NULL, head_dim(s), s->causal, bc->pool, err);
	}
	for (int i = Q; i <= V && st == TPS_OK; i++) {
		/* "<attn>.q.out.grad", as the ranks' events name it
		 * ("<attn>.q.rope.grad" before RoPE's transpose). */
		char name[TPS_NAME_MAX + 16];
		bool rope = s->rope_theta > 0.0 && i != V;
		tps_nn_bound_store(&grads[i], &eg[i],
				   tps_module_dtype(m, TPS_ROLE_GRADS));
		snprintf(name, sizeof name,
			 rope ? "%s.%c.rope.grad" : "%s.%c.out.grad", s->name,
			 "qkv"[i]);
		st = tps_bound_emit(bc, name, &grads[i], &eg[i], err);
		if (st == TPS_OK && rope) {
			snprintf(name, sizeof name, "%s.%c.out.grad", s->name,
				 "qkv"[i]);
			st = rope_bound(s, bc, &dt, &grads[i], &eg[i], -1,
					tps_module_dtype(m, TPS_ROLE_GRADS),
					name, err);
		}
	}
	for (int i = Q; i <= V; i++) {
		struct tps_module *c = child(m, i);
		if (st == TPS_OK) {
			st = tps_nn_bound_backward_seq(
				c, tps_module_next(c), bc, &grads[i], &eg[i],
				dx ? &dxs[i] : NULL, &edxs[i], err);
		} else {
			tps_tensor_free(&c->ref_saved_in);
			tps_bound_free(&c->ref_saved_bound);
		}
	}
	if (st == TPS_OK && dx) {
		st = sum_of_three(bc, dxs, edxs, dx, edx, err);
	}
	for (int i = 0; i < 3; i++) {
		tps_tensor_free(&grads[i]);
		tps_tensor_free(&dxs[i]);
		tps_bound_free(&eg[i]);
		tps_bound_free(&edxs[i]);
		tps_tensor_free(&m->ref_saved_more[i]);
		tps_bound_free(&m->ref_saved_more_bound[i]);
	}
	tps_tensor_free(&da);
	tps_bound_free(&eda);
	tps_tensor_free(&m->ref_saved_in);
	return st;
}

static int attention_parameters(const struct tps_module_spec *s, int tp_dim,
				struct tps_param_spec *out)
{
	(void)s;
	(void)tp_dim;
	(void)out;
	return 0; /* q, k, v, o have their own */
}

static int64_t attention_memory_estimate(const struct tps_module_spec *s,
					 const struct tps_memory_context *mc)
{
	(void)s;
	(void)mc;
	return 0;
}

/* Whole heads: embed_dim splits into num_heads heads of head_dim, which
 * num_kv_heads kv heads serve in equal groups. */
static enum tps_status attention_check(const struct tps_module_spec *s,
				       const char **key, struct tps_error *err)
{
	if (s->in_features % s->num_heads != 0) {
		*key = "num_heads";
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"embed_dim %lld is not a multiple of num_heads %lld "
			"(each head takes embed_dim / num_heads features)",
			(long long)s->in_features, (long long)s->num_heads);
	}
	if (s->num_heads % s->num_kv_heads != 0) {
		*key = "num_kv_heads";
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"num_heads %lld is not a multiple of num_kv_heads "
			"%lld (each kv head serves num_heads / num_kv_heads "
			"query heads)",
			(long long)s->num_heads, (long long)s->num_kv_heads);
	}
	if (s->rope_theta > 0.0 && head_dim(s) % 2 != 0) {
		*key = "rope_theta";
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"rotary embeddings turn pairs of features, so head_dim "
			"must be even, got %lld (%lld features / %lld heads)",
			(long long)head_dim(s), (long long)s->in_features,
			(long long)s->num_heads);
	}
	return TPS_OK;
}

const struct tps_module_ops tps_attention_ops = {
	.forward = attention_forward,
	.backward = attention_backward,
	.reference_forward = attention_reference_forward,
	.reference_backward = attention_reference_backward,
	.bound_forward = attention_bound_forward,
	.bound_backward = attention_bound_backward,
	.parameters = attention_parameters,
	.memory_estimate = attention_memory_estimate,
	.check = attention_check,
	/* q, k, v in the activations' dtype; the probabilities float32, as
	 * the core computes them. */
	.saved_more_size = {[PROBS] = 4},
};
