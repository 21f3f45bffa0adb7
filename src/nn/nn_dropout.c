/*
 * Dropout, nn.Dropout(p): in training each element is kept with
 * probability 1 - p and scaled by s = 1 / (1 - p) (inverted dropout), or
 * zeroed:
 *
 *   y = x * (kept ? s : 0)        dx = dy * (kept ? s : 0)
 *
 * with s computed in double and rounded once to float32, and one float32
 * product per element (x * 0 keeps the sign of x, as PyTorch's does). In
 * inference, and for p = 0, it is the identity. Element-wise: it keeps the
 * layout, and a partial input is reduced first (a mask does not commute
 * with the sum of the partials).
 *
 * The masks come from seeded counters (rng.h's tps_rng_counter: XXH3 of
 * the counter): element e is kept when
 *
 *   unit(generator, (FNV-1a(module name), step, index)) < 1 - p
 *
 * and the generator and the index follow Megatron's get_cuda_rng_tracker
 * (docs/transformer.md, "Dropout and random streams"):
 *
 *   inside the TP region (the input is sharded over tp on its last dim,
 *   the features: a colwise output, a rowwise input), tp rank t draws from
 *   its own generator, seed + 2718 + t (Megatron's model-parallel seed),
 *   and the index is the element's row-major index in t's shard of the
 *   global tensor (its dim sharded over tp cut to t's chunk, every other
 *   dim whole, so dp ranks draw different rows);
 *
 *   outside it (replicated, or sharded over tp on another dim: sequence
 *   parallel), every tp rank draws from the default generator, seed, and
 *   the index is the element's row-major index in the global tensor.
 *
 * The reference draws each element of its global tensor by the same rule,
 * with the owner t of an element inside the TP region found from the chunk
 * rule; so the ranks' masks are the reference's, bit for bit, and the
 * module's layout under the plan is part of the reference's draw
 * (tps_dropout_state, which tps_model_init fills before any step).
 * In training forward keeps the mask for backward (saved_more[0], 1 and
 * 0: a bool, one byte an element on a GPU, as torch's dropout and
 * Megatron's bias-dropout-add keep it; Korthikanti et al. 2022 count it
 * so); backward multiplies by the kept mask, the factors forward used.
 *
 * inject same_dropout_seed: inside the TP region every tp rank draws from
 * rank 0's generator, seed + 2718, so equal shards get the same mask.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "nn.h"
#include "rng.h"

/* Megatron's model-parallel generator: seed + 2718 + tp_rank
 * (megatron/core/tensor_parallel/random.py, model_parallel_cuda_manual_seed).
 */
#define TPS_DROPOUT_TP_SEED_OFFSET 2718

/* What a forward or backward draws its masks from. */
struct draw {
	uint64_t seed, name, step;
	double keep; /* 1 - p */
	float scale; /* (float)(1 / (1 - p)) */
	/* Inside the TP region: the shard dim, its block, the tp size. */
	bool inside;
	int dim;
	int64_t block;
	int tp;
	bool same_seed; /* inject same_dropout_seed */
	const struct tps_shape *global;
};

/* Whether the input's tp placement p puts it inside the TP region: shard
 * on its last dim (the features), as a colwise output is. */
static bool inside_tp_region(struct tps_placement p, int ndim)
{
	return p.kind == TPS_PLACEMENT_SHARD && ndim > 0 && p.dim == ndim - 1;
}

static struct draw draw_of(const struct tps_module *m,
			   const struct tps_shape *global, int step,
			   bool same_seed)
{
	const struct tps_dropout_state *ds = &m->dropout;
	struct draw d = {0};
	const char *name = m->spec->name;
	d.seed = ds->seed;
	d.name = tps_fnv1a64(name, strlen(name), TPS_FNV1A64_INIT);
	d.step = (uint64_t)step;
	d.keep = 1.0 - m->spec->p;
	d.scale = (float)(1.0 / (1.0 - m->spec->p));
	d.inside = inside_tp_region(ds->tp, global->ndim);
	d.dim = ds->tp.dim;
	d.block = tps_placement_block(ds->tp);
	d.tp = ds->tp_size;
	d.same_seed = same_seed;
	d.global = global;
	return d;
}

/* The factor element c (global coordinates) is multiplied by: s if kept,
 * else 0. */
static float factor_at(const struct draw *d, const int64_t *c)
{
	const struct tps_shape *g = d->global;
	uint64_t gen = d->seed, index = 0;
	if (d->inside) {
		int64_t n = g->dim[d->dim], start = 0, len = 0;
		int t = 0;
		/* The owner: the tp rank whose chunk holds c[dim] (empty
		 * chunks come last). */
		for (; t < d->tp; t++) {
			tps_chunk_range_blocks(n, d->block, d->tp, t, &start,
					       &len);
			if (c[d->dim] < start + len) {
				break;
			}
		}
		gen = d->seed + TPS_DROPOUT_TP_SEED_OFFSET +
		      (uint64_t)(d->same_seed ? 0 : t);
		for (int k = 0; k < g->ndim; k++) {
			int64_t size = k == d->dim ? len : g->dim[k];
			int64_t at = k == d->dim ? c[k] - start : c[k];
			index = index * (uint64_t)size + (uint64_t)at;
		}
	} else {
		for (int k = 0; k < g->ndim; k++) {
			index = index * (uint64_t)g->dim[k] + (uint64_t)c[k];
		}
	}
	return (double)tps_rng_counter_unit(gen, d->name, d->step, index) <
			       d->keep
		       ? d->scale
		       : 0.0f;
}

/* out[i] = in[i] * factor of its element (mask_only: the factor's 0 or 1
 * instead), for a region [offset, offset + length) of the global tensor
 * walked in row-major order. */
static void apply_region(const struct draw *d, const int64_t *offset,
			 const int64_t *length, const float *in, float *out,
			 bool mask_only)
{
	const struct tps_shape *g = d->global;
	int64_t c[TPS_MAX_DIMS] = {0}, n = 1;
	for (int k = 0; k < g->ndim; k++) {
		n *= length[k];
		c[k] = offset[k];
	}
	for (int64_t i = 0; i < n; i++) {
		float f = factor_at(d, c);
		out[i] = mask_only ? (f != 0.0f ? 1.0f : 0.0f) : in[i] * f;
		for (int k = g->ndim - 1; k >= 0; k--) {
			if (++c[k] < offset[k] + length[k]) {
				break;
			}
			c[k] = offset[k];
		}
	}
}

struct rank_job {
	const struct tps_mesh *mesh;
	const struct tps_dtensor *in; /* x or dy */
	const struct draw *draw;
	bool mask_only;
	/* backward: the mask forward kept, in dy's layout (NULL: drawn
	 * again, p = 0's identity) */
	const struct tps_dtensor *mask;
};

static enum tps_status apply_rank(void *opaque, int r, struct tps_tensor *out,
				  struct tps_error *err)
{
	const struct rank_job *job = opaque;
	const struct tps_tensor *in = &job->in->locals[r];
	int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
	struct tps_tensor t;
	enum tps_status st = tps_tensor_init_like(&t, &in->shape, in, err);
	if (st != TPS_OK || in->meta) {
		*out = t;
		return st;
	}
	if (job->mask) {
		/* dx = dy * m s: the factor forward multiplied by. */
		const struct tps_tensor *m = &job->mask->locals[r];
		int64_t n = tps_tensor_numel(in);
		if (tps_tensor_numel(m) != n) {
			tps_tensor_free(&t);
			return tps_error_set(err, TPS_ERR_SHAPE,
					     "dropout backward: the gradient "
					     "and the kept mask differ in "
					     "size on rank %d",
					     r);
		}
		for (int64_t i = 0; i < n; i++) {
			t.data[i] =
				in->data[i] *
				(m->data[i] != 0.0f ? job->draw->scale : 0.0f);
		}
		*out = t;
		return TPS_OK;
	}
	tps_dtensor_local_region(job->mesh, &job->in->global,
				 job->in->placements, r, offset, length);
	apply_region(job->draw, offset, length, in->data, t.data,
		     job->mask_only);
	*out = t;
	return TPS_OK;
}

/* Whether every tp rank's local mask equals its tp group's local rank
 * 0's over the elements both hold, in local order: the same stream drawn
 * by the same local indices. */
static bool shards_identical(const struct tps_nn_context *ctx,
			     const struct tps_dtensor *mask)
{
	const struct tps_mesh *mesh = ctx->mesh;
	unsigned tp_mask = 1u << ctx->tp_dim;
	int members[TPS_MAX_WORLD];
	if (mesh->shape[ctx->tp_dim] < 2) {
		return false;
	}
	for (int g = 0; g < tps_mesh_group_count(mesh, tp_mask); g++) {
		const struct tps_tensor *first;
		tps_mesh_group_members(mesh, tp_mask, g, members);
		first = &mask->locals[members[0]];
		for (int i = 1; i < mesh->shape[ctx->tp_dim]; i++) {
			const struct tps_tensor *t = &mask->locals[members[i]];
			int64_t a = tps_tensor_numel(first);
			int64_t b = tps_tensor_numel(t);
			int64_t n = a < b ? a : b;
			if (n > 0 && memcmp(first->data, t->data,
					    (size_t)n * sizeof(float)) != 0) {
				return false;
			}
		}
	}
	return true;
}

static bool mistaken(const struct tps_nn_context *ctx,
		     const struct tps_module *m)
{
	return ctx->mistake == TPS_MISTAKE_SAME_DROPOUT_SEED &&
	       ctx->mistake_site == m->spec;
}

/* The note of the mask event: which generator each rank drew from. */
static const char *mask_note(const struct draw *d)
{
	if (!d->inside) {
		return "outside the TP region: every tp rank draws from the "
		       "default generator (seed), by the element's index in "
		       "the global tensor; 1 kept, 0 dropped";
	}
	if (d->same_seed) {
		return "MISTAKE (inject same_dropout_seed): inside the TP "
		       "region every tp rank draws from one generator (seed + "
		       "2718), so shards of one shape get the same mask";
	}
	return "inside the TP region: tp rank t draws from its own generator "
	       "(seed + 2718 + t, Megatron's model-parallel seed), by the "
	       "element's index in its shard; 1 kept, 0 dropped";
}

static enum tps_status dropout_forward(const struct tps_nn_context *ctx,
				       struct tps_module *m,
				       struct tps_dtensor *x,
				       struct tps_dtensor *y,
				       struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	char in_name[TPS_NAME_MAX + 8], out_name[TPS_NAME_MAX + 8];
	char mask_name[TPS_NAME_MAX + 8];
	struct tps_dtensor out = {0}, mask = {0};
	struct draw d;
	struct rank_job job = {ctx->mesh, x, &d, false, NULL};
	bool identity = !ctx->save || s->p == 0.0;
	enum tps_status st = TPS_OK;

	snprintf(in_name, sizeof in_name, "%s.in", s->name);
	snprintf(out_name, sizeof out_name, "%s.out", s->name);
	snprintf(mask_name, sizeof mask_name, "%s.mask", s->name);
	tps_nn_forward_begin(ctx, m);
	if (ctx->save) {
		tps_layout_chain_start(&m->in_chain, ctx, x);
	}
	if (x->placements[ctx->tp_dim].kind == TPS_PLACEMENT_PARTIAL) {
		st = tps_nn_to_layout_chained(
			ctx, x, tps_placement_replicate(),
			ctx->save ? &m->in_chain : NULL, s->name, in_name,
			"a mask does not commute with a sum of partials: "
			"reduce first",
			err);
	}
	if (st == TPS_OK) {
		m->dropout.known = true;
		m->dropout.tp = x->placements[ctx->tp_dim];
		m->dropout.tp_size = ctx->mesh->shape[ctx->tp_dim];
	}
	d = draw_of(m, &x->global, ctx->step, mistaken(ctx, m));
	if (st == TPS_OK && identity) {
		st = tps_dtensor_copy(&out, x, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_compute(
				ctx, s->name, "dropout", out_name,
				ctx->save ? "p = 0: the identity"
					  : "inference: the identity "
					    "(nn.Dropout in eval mode)",
				&out, 0, err);
		}
		return tps_nn_forward_end(ctx, m, NULL, &out, y, st);
	}
	if (st == TPS_OK) {
		job.mask_only = true;
		st = tps_dtensor_map(&mask, ctx->mesh, &x->global,
				     x->placements, apply_rank, &job, err);
	}
	if (st == TPS_OK) {
		/* Under a backend (backend.h) every process compares every
		 * rank's mask: the others' are fetched. */
		if (d.inside && ctx->mesh->backend) {
			st = tps_backend_fetch(ctx->mesh, mask.locals,
					       tps_backend_need_all, NULL,
					       TPS_TRAFFIC_ASSEMBLE, err);
		}
		m->dropout.shards_identical = st == TPS_OK && d.inside &&
					      !mask.locals[0].meta &&
					      shards_identical(ctx, &mask);
		tps_backend_drop(ctx->mesh, mask.locals);
	}
	if (st == TPS_OK) {
		st = d.same_seed
			     ? tps_nn_emit_mistaken_compute(
				       ctx, s->name, "dropout_mask", mask_name,
				       mask_note(&d), &mask, err)
			     : tps_nn_emit_compute(ctx, s->name, "dropout_mask",
						   mask_name, mask_note(&d),
						   &mask, 0, err);
	}
	if (st == TPS_OK) {
		job.mask_only = false;
		st = tps_dtensor_map(&out, ctx->mesh, &x->global, x->placements,
				     apply_rank, &job, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(
			ctx, s->name, "dropout", out_name,
			"x * mask / (1 - p) on each rank's local values: the "
			"layout is kept",
			&out, 0, err);
	}
	/* The mask, kept for backward (the input is not needed). */
	if (st == TPS_OK) {
		m->saved_more[0] = mask;
		memset(&mask, 0, sizeof mask);
	}
	tps_dtensor_free(&mask);
	return tps_nn_forward_end(ctx, m, NULL, &out, y, st);
}

static enum tps_status dropout_backward(const struct tps_nn_context *ctx,
					struct tps_module *m,
					struct tps_dtensor *dy,
					struct tps_dtensor *dx,
					struct tps_error *err)
{
	struct draw d = draw_of(m, &dy->global, ctx->step, mistaken(ctx, m));
	const struct tps_dtensor *kept =
		m->saved_more[0].locals ? &m->saved_more[0] : NULL;
	struct rank_job job = {ctx->mesh, dy, &d, false, kept};
	struct tps_dtensor g = {0};
	enum tps_status st = TPS_OK;
	if (dx) {
		st = tps_dtensor_map(&g, ctx->mesh, &dy->global, dy->placements,
				     apply_rank, &job, err);
		if (st == TPS_OK) {
			st = tps_nn_input_grad(
				ctx, m, &g, "dropout_backward",
				kept ? "dy * mask / (1 - p), the mask forward "
				       "kept"
				     : "dy: p = 0, the identity",
				0, dx, err);
		}
	}
	tps_dtensor_free(dy);
	tps_module_free_saved(m);
	return st;
}

/* The reference's y = x * factor over the global tensor, at its step. */
static enum tps_status reference_apply(const struct tps_module *m,
				       const struct tps_tensor *in,
				       struct tps_tensor *out,
				       struct tps_error *err)
{
	const struct tps_shape *g = &in->shape;
	int64_t offset[TPS_MAX_DIMS] = {0}, length[TPS_MAX_DIMS] = {0};
	struct draw d;
	struct tps_tensor t;
	enum tps_status st;
	if (!m->dropout.known && !in->meta) {
		return tps_error_set(err, TPS_ERR_UNSUPPORTED,
				     "%s: dropout's reference needs its "
				     "input's tp layout, which no forward has "
				     "found",
				     m->spec->name);
	}
	st = tps_tensor_init_like(&t, g, in, err);
	if (st != TPS_OK || in->meta) {
		*out = t;
		return st;
	}
	d = draw_of(m, g, m->dropout.ref_step, false);
	for (int k = 0; k < g->ndim; k++) {
		length[k] = g->dim[k];
	}
	apply_region(&d, offset, length, in->data, t.data, false);
	*out = t;
	return TPS_OK;
}

static bool reference_identity(const struct tps_module *m)
{
	return !m->training || m->spec->p == 0.0;
}

static enum tps_status dropout_reference_forward(struct tps_module *m,
						 struct tps_pool *pool,
						 const struct tps_tensor *x,
						 struct tps_tensor *y,
						 struct tps_error *err)
{
	(void)pool;
	return reference_identity(m) ? tps_tensor_copy(y, x, err)
				     : reference_apply(m, x, y, err);
}

static enum tps_status dropout_reference_backward(struct tps_module *m,
						  struct tps_pool *pool,
						  const struct tps_tensor *dy,
						  struct tps_tensor *dx,
						  struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	(void)pool;
	if (dx) {
		st = reference_identity(m) ? tps_tensor_copy(dx, dy, err)
					   : reference_apply(m, dy, dx, err);
	}
	tps_tensor_free(&m->ref_saved_in);
	return st;
}

/*
 * The bound of y = fl(v * f), f the element's factor (0 or s), from v's
 * bound ev (docs/numerics.md, "Dropout"): where f = 0, or ev = 0, every
 * evaluation computes the same float; elsewhere an evaluation v' within
 * ev of v gives |fl(v' s) - v s| <= s ev + u |v' s| <= s ev (1 + u) +
 * u (1 + u) |y|, y the reference's fl(v s) (|v s| <= (1 + u) |y|).
 */
static enum tps_status bound_apply(const struct tps_tensor *v,
				   const struct tps_bound *ev,
				   const struct tps_tensor *out, double scale,
				   double u, struct tps_bound *e,
				   struct tps_error *err)
{
	int64_t n = tps_tensor_numel(v);
	enum tps_status st;
	if (tps_bound_is_none(ev)) {
		tps_bound_none_like(e, ev);
		return TPS_OK;
	}
	st = tps_bound_zero(e, &v->shape, err);
	for (int64_t i = 0; st == TPS_OK && i < n; i++) {
		double ei = ev->e.data[i];
		/* A dropped element is 0 (or -0) on every evaluation. */
		bool dropped = out->data[i] == 0.0f && v->data[i] != 0.0f;
		e->e.data[i] =
			ei > 0.0 && !dropped
				? tps_bound_up(scale * ei * (1.0 + u) +
					       u * (1.0 + u) *
						       fabs(out->data[i]))
				: 0.0f;
	}
	return st;
}

static enum tps_status
dropout_bound_forward(struct tps_module *m, const struct tps_bound_ctx *bc,
		      const struct tps_tensor *x, const struct tps_bound *ex,
		      struct tps_tensor *y, struct tps_bound *ey,
		      struct tps_error *err)
{
	struct tps_tensor out = {0};
	struct tps_bound e = {0};
	enum tps_status st;
	m->dropout.ref_step = bc->step;
	st = dropout_reference_forward(m, bc->pool, x, &out, err);
	if (st == TPS_OK && reference_identity(m)) {
		st = tps_bound_copy(&e, ex, err);
	} else if (st == TPS_OK) {
		st = bound_apply(x, ex, &out, 1.0 / (1.0 - m->spec->p),
				 bc->u_act, &e, err);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*y = out;
	*ey = e;
	return TPS_OK;
}

static enum tps_status
dropout_bound_backward(struct tps_module *m, const struct tps_bound_ctx *bc,
		       const struct tps_tensor *dy, const struct tps_bound *edy,
		       struct tps_tensor *dx, struct tps_bound *edx,
		       struct tps_error *err)
{
	struct tps_tensor d = {0};
	struct tps_bound e = {0};
	enum tps_status st = TPS_OK;
	if (dx) {
		st = dropout_reference_backward(m, bc->pool, dy, &d, err);
		if (st == TPS_OK && reference_identity(m)) {
			st = tps_bound_copy(&e, edy, err);
		} else if (st == TPS_OK) {
			st = bound_apply(dy, edy, &d, 1.0 / (1.0 - m->spec->p),
					 bc->u_grad, &e, err);
		}
	} else {
		tps_tensor_free(&m->ref_saved_in);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&d);
		return st;
	}
	if (dx) {
		*dx = d;
		*edx = e;
	}
	return TPS_OK;
}

const struct tps_module_ops tps_dropout_ops = {
	.forward = dropout_forward,
	.backward = dropout_backward,
	.reference_forward = dropout_reference_forward,
	.reference_backward = dropout_reference_backward,
	.bound_forward = dropout_bound_forward,
	.bound_backward = dropout_bound_backward,
	.parameters = tps_nn_no_parameters,
	/* No parameters; the mask it keeps is counted with the
	 * activations. */
	.memory_estimate = tps_nn_no_memory,
	/* The mask: a bool, one byte an element. */
	.saved_more_size = {1},
};
