/*
 * embedding: nn.Embedding(num_embeddings V, embedding_dim E). The input
 * holds token ids (..., stored as floats, exact below 2^24); the output
 * (..., E) holds row id of the weight W (V, E) for each id.
 *
 *   replicate  every rank holds W and looks up every id.
 *   vocab      (Megatron's VocabParallelEmbedding) rank r holds the rows
 *              [start_r, start_r + V_r) of W; an id outside them gives a
 *              zero row, so each rank's output is a partial sum with one
 *              nonzero term per row, and an all_reduce (or, into sequence
 *              shards, a reduce_scatter) completes it.
 *
 * Backward scatters dy into the rows the ids picked, rows in ascending
 * order: dW[id] += dy[i]. Rank r only adds the ids in its rows, in the same
 * order the reference does, so the gradient is exact. Ids take no
 * gradient.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn.h"

enum { WEIGHT };

/* The first vocabulary row rank r holds (0 when replicated). */
static int64_t first_row(const struct tps_dtensor *w, int r)
{
	int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
	tps_dtensor_local_region(w->mesh, &w->global, w->placements, r, offset,
				 length);
	return offset[0];
}

/* y = the rows of w (first vocabulary row `start`) that ids pick; zeros
 * for ids outside them. y has ids' shape plus w's width. */
static enum tps_status lookup(struct tps_tensor *y,
			      const struct tps_tensor *ids,
			      const struct tps_tensor *w, int64_t start,
			      struct tps_error *err)
{
	struct tps_shape shape = ids->shape;
	int64_t rows = w->shape.dim[0], width = w->shape.dim[1];
	int64_t n = tps_tensor_numel(ids);
	enum tps_status st;
	shape.dim[shape.ndim++] = width;
	/* Zeros, or a meta tensor for meta ids (tpsim comm). */
	st = tps_tensor_init_like(y, &shape, ids, err);
	for (int64_t i = 0; st == TPS_OK && y->data && i < n; i++) {
		int64_t id = (int64_t)ids->data[i] - start;
		if (id >= 0 && id < rows) {
			memcpy(y->data + i * width, w->data + id * width,
			       (size_t)width * sizeof(float));
		}
	}
	return st;
}

/* dw (w's shape, zeroed) += dy's rows at the ids in w's rows. */
static enum tps_status scatter_add(struct tps_tensor *dw,
				   const struct tps_shape *w_shape,
				   const struct tps_tensor *ids,
				   const struct tps_tensor *dy, int64_t start,
				   struct tps_error *err)
{
	int64_t rows = w_shape->dim[0], width = w_shape->dim[1];
	int64_t n = tps_tensor_numel(ids);
	enum tps_status st = tps_tensor_init_like(dw, w_shape, dy, err);
	for (int64_t i = 0; st == TPS_OK && dw->data && i < n; i++) {
		int64_t id = (int64_t)ids->data[i] - start;
		if (id >= 0 && id < rows) {
			for (int64_t j = 0; j < width; j++) {
				dw->data[id * width + j] +=
					dy->data[i * width + j];
			}
		}
	}
	return st;
}

struct lookup_job {
	const struct tps_dtensor *ids, *w;
};

static enum tps_status lookup_rank(void *opaque, int r, struct tps_tensor *out,
				   struct tps_error *err)
{
	const struct lookup_job *job = opaque;
	return lookup(out, &job->ids->locals[r], &job->w->locals[r],
		      first_row(job->w, r), err);
}

static enum tps_status embedding_forward(const struct tps_nn_context *ctx,
					 struct tps_module *m,
					 struct tps_dtensor *x,
					 struct tps_dtensor *y,
					 struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	const struct tps_dtensor *w = &m->params[WEIGHT].value;
	struct lookup_job job = {x, w};
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	struct tps_shape global = x->global;
	bool vocab = s->style == TPS_STYLE_VOCAB;
	char in_name[TPS_NAME_MAX + 8], out_name[TPS_NAME_MAX + 8];
	struct tps_dtensor out = {0};
	enum tps_status st;

	snprintf(in_name, sizeof in_name, "%s.in", s->name);
	snprintf(out_name, sizeof out_name, "%s.out", s->name);
	tps_nn_forward_begin(ctx, m);
	/* The ids, whole on every tp rank. */
	st = tps_nn_to_layout(ctx, x, tps_placement_replicate(), s->name,
			      in_name, "every rank needs every token id", err);
	global.dim[global.ndim++] = s->out_features;
	for (int i = 0; i < ctx->mesh->ndim; i++) {
		placements[i] = x->placements[i];
	}
	placements[ctx->tp_dim] =
		vocab ? tps_placement_partial() : tps_placement_replicate();
	if (st == TPS_OK) {
		st = tps_dtensor_map(&out, ctx->mesh, &global, placements,
				     lookup_rank, &job, err);
	}
	if (st == TPS_OK && ctx->save) {
		tps_layout_chain_start(&m->out_chain, ctx, &out);
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(
			ctx, s->name, "embedding", out_name,
			vocab ? "y_i = W_i[id] for the ids in rank i's rows of "
				"the vocabulary, zeros for the others: partial "
				"sums, one nonzero term per token"
			      : "y = W[id]: every rank looks up every id",
			&out, 0, err);
	}
	if (st == TPS_OK && vocab) {
		st = tps_nn_to_layout_chained(
			ctx, &out, s->output, ctx->save ? &m->out_chain : NULL,
			s->name, out_name,
			"the masked lookups summed: each token's row comes "
			"from the one rank that holds it",
			err);
	}
	/* Backward scatters dy into the rows of the ids it keeps. */
	return tps_nn_forward_end(ctx, m, x, &out, y, st);
}

struct scatter_job {
	const struct tps_dtensor *ids, *dy, *w;
};

static enum tps_status scatter_rank(void *opaque, int r, struct tps_tensor *out,
				    struct tps_error *err)
{
	const struct scatter_job *job = opaque;
	return scatter_add(out, &job->w->locals[r].shape, &job->ids->locals[r],
			   &job->dy->locals[r], first_row(job->w, r), err);
}

static enum tps_status add_rank(void *opaque, int r, struct tps_tensor *out,
				struct tps_error *err)
{
	const struct tps_dtensor *const *ab = opaque;
	enum tps_status st = tps_tensor_copy(out, &ab[0]->locals[r], err);
	if (st == TPS_OK && out->data) {
		tps_tensor_add(out, &ab[1]->locals[r]);
	}
	return st;
}

/*
 * Tied embeddings: the weight's gradient is the sum of its two uses,
 * dW = dW_head + dW_embedding, where dW_head = dlogits^T x (the tied
 * linear's, whose backward ran first and left it in the parameter's
 * grad) and dW_embedding = g, the scatter of dy into the rows of the ids.
 * Both are laid out as the weight (shard(0) of the vocabulary under
 * vocab / colwise, or replicated), so each rank adds its own shards:
 * no communication. Megatron's finalize_model_grads all-reduces this
 * gradient over the embedding group (the first and the last pipeline
 * stage); without pipeline parallelism that group is one rank. The dp
 * average (the optimizer phase) then averages the sum once.
 */
static enum tps_status tied_sum(const struct tps_nn_context *ctx,
				struct tps_module *m,
				const struct tps_dtensor *g, const char *name,
				struct tps_error *err)
{
	struct tps_param *p = &m->params[WEIGHT];
	const struct tps_dtensor *ab[2] = {&p->grad, g};
	struct tps_dtensor sum = {0};
	enum tps_status st;
	/* The tied linear's backward ran first (it comes later in the
	 * model), in the weight's layout (the config checked it). */
	assert(p->grad.locals && tps_shape_equal(&p->grad.global, &g->global));
	st = tps_dtensor_map(&sum, ctx->mesh, &g->global, g->placements,
			     add_rank, (void *)ab, err);
	if (st == TPS_OK) {
		tps_dtensor_free(&p->grad);
		p->grad = sum;
		st = tps_nn_emit_compute(
			ctx, m->spec->name, "tied_grad_sum", name,
			"dW = dW_head + dW_embedding: the tied weight's two "
			"uses added on each rank's own shard (the same rows "
			"in both), no communication; Megatron's "
			"finalize_model_grads all-reduces it over the "
			"embedding group (first and last pipeline stage), "
			"which without pipeline parallelism is one rank",
			&p->grad, 0, err);
	}
	return st;
}

static enum tps_status embedding_backward(const struct tps_nn_context *ctx,
					  struct tps_module *m,
					  struct tps_dtensor *dy,
					  struct tps_dtensor *dx,
					  struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct tps_param *p = &m->params[WEIGHT];
	struct scatter_job job = {&m->saved_in, dy, &p->value};
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	char out_grad[TPS_NAME_MAX + 16], name[TPS_NAME_MAX + 16];
	struct tps_dtensor g = {0};
	enum tps_status st;

	snprintf(out_grad, sizeof out_grad, "%s.out.grad", s->name);
	snprintf(name, sizeof name, "%s.grad", p->name);
	/* dy back to the lookup's layout (partial's gradient: replicate). */
	st = tps_nn_grad_through(ctx, dy, &m->out_chain, s->name, out_grad,
				 err);
	if (st == TPS_OK && dx) {
		st = tps_error_set(err, TPS_ERR_UNSUPPORTED,
				   "%s: token ids take no gradient", s->name);
	}
	/* Each rank summed its own tokens: partial over the batch dims. */
	for (int i = 0; i < ctx->mesh->ndim; i++) {
		placements[i] =
			m->saved_in.placements[i].kind == TPS_PLACEMENT_SHARD
				? tps_placement_partial()
				: tps_placement_replicate();
	}
	placements[ctx->tp_dim] = p->value.placements[ctx->tp_dim];
	if (st == TPS_OK) {
		st = tps_dtensor_map(&g, ctx->mesh, &p->value.global,
				     placements, scatter_rank, &job, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(
			ctx, s->name, "embedding_backward", name,
			s->style == TPS_STYLE_VOCAB
				? "dW_i[id] += dy for the ids in rank i's "
				  "rows, in token order: local, no "
				  "communication"
				: "dW[id] += dy for every id, in token order",
			&g, 0, err);
	}
	if (st == TPS_OK && m->tied) {
		st = tied_sum(ctx, m, &g, name, err);
	} else if (st == TPS_OK) {
		tps_dtensor_free(&p->grad);
		p->grad = g;
		g = (struct tps_dtensor){0};
	}
	tps_dtensor_free(&g);
	tps_dtensor_free(dy);
	tps_module_free_saved(m);
	return st;
}

static enum tps_status embedding_reference_forward(struct tps_module *m,
						   struct tps_pool *pool,
						   const struct tps_tensor *x,
						   struct tps_tensor *y,
						   struct tps_error *err)
{
	(void)pool;
	return lookup(y, x, &m->params[WEIGHT].global, 0, err);
}

static enum tps_status embedding_reference_backward(struct tps_module *m,
						    struct tps_pool *pool,
						    const struct tps_tensor *dy,
						    struct tps_tensor *dx,
						    struct tps_error *err)
{
	struct tps_param *p = &m->params[WEIGHT];
	struct tps_tensor dw = {0};
	enum tps_status st = scatter_add(&dw, &p->global.shape,
					 &m->ref_saved_in, dy, 0, err);
	(void)pool;
	(void)dx;
	if (st == TPS_OK && m->tied && dw.data) {
		/* The tied linear's part is in ref_grad already: this use's
		 * part, stored as the ranks store it, is added to it. */
		tps_dtype_round_array(dw.data, tps_tensor_numel(&dw),
				      tps_module_dtype(m, TPS_ROLE_GRADS));
		tps_tensor_add(&p->ref_grad, &dw);
		tps_tensor_free(&dw);
	} else if (st == TPS_OK) {
		tps_tensor_move(&p->ref_grad, &dw);
	}
	tps_tensor_free(&m->ref_saved_in);
	return st;
}

/* ---- error bounds (docs/numerics.md, "embedding") --------------------- */

/* y = W[ids]: a copy, whose bound is e_W's rows at the ids (under vocab,
 * the all_reduce adds one nonzero term to zeros: exact). Token ids are
 * exact inputs; ids with a bound have none. */
static enum tps_status embedding_bound_forward(struct tps_module *m,
					       const struct tps_bound_ctx *bc,
					       const struct tps_tensor *x,
					       const struct tps_bound *ex,
					       struct tps_tensor *y,
					       struct tps_bound *ey,
					       struct tps_error *err)
{
	const struct tps_param *w = &m->params[WEIGHT];
	struct tps_tensor out = {0};
	struct tps_bound e = {0};
	enum tps_status st = lookup(&out, x, &w->global, 0, err);
	(void)bc;
	if (st == TPS_OK && tps_bound_is_none(ex)) {
		tps_bound_none_like(&e, ex);
	} else if (st == TPS_OK && !tps_bound_is_zero(ex)) {
		tps_bound_set_none(&e, "%s: its token ids have an error bound",
				   m->spec->name);
	} else if (st == TPS_OK && tps_bound_is_none(&w->ref_bound)) {
		tps_bound_none_like(&e, &w->ref_bound);
	} else if (st == TPS_OK) {
		st = lookup(&e.e, x, &w->ref_bound.e, 0, err);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*y = out;
	*ey = e;
	return TPS_OK;
}

/*
 * Tied embeddings: ref_grad (the tied linear's part a, bound e_a in
 * ref_grad_bound, stored already) plus this use's part b (bound *e on
 * entry), stored in the grads dtype first as the ranks store it. The
 * sum's bound is the residual's rule (docs/numerics.md, "residual"):
 * e_a + e_b + u (|a + b| + 2 (e_a + e_b)), 0 where both are 0 (every
 * evaluation adds the same floats). On return ref_grad is a + b and *e
 * its bound.
 */
static enum tps_status tied_sum_bound(struct tps_module *m,
				      const struct tps_bound_ctx *bc,
				      const struct tps_tensor *dy,
				      struct tps_bound *e,
				      struct tps_error *err)
{
	struct tps_param *p = &m->params[WEIGHT];
	const struct tps_bound *ea = &p->ref_grad_bound;
	const struct tps_bound *inputs[2] = {ea, e};
	const struct tps_bound *none;
	struct tps_tensor b = {0};
	struct tps_bound sum = {0};
	int64_t n;
	enum tps_status st =
		scatter_add(&b, &p->global.shape, &m->ref_saved_in, dy, 0, err);
	if (st == TPS_OK) {
		tps_nn_bound_store(&b, e, tps_module_dtype(m, TPS_ROLE_GRADS));
		st = embedding_reference_backward(m, bc->pool, dy, NULL, err);
	}
	none = tps_bound_first_none(inputs, 2);
	if (st == TPS_OK && none) {
		tps_bound_none_like(&sum, none);
	} else if (st == TPS_OK) {
		st = tps_bound_zero(&sum, &p->ref_grad.shape, err);
	}
	n = tps_tensor_numel(&p->ref_grad);
	for (int64_t i = 0; st == TPS_OK && !none && i < n; i++) {
		double pe = (double)ea->e.data[i] + (double)e->e.data[i];
		sum.e.data[i] =
			pe > 0.0 ? tps_bound_up(
					   pe +
					   bc->u_grad *
						   (fabs(p->ref_grad.data[i]) +
						    2.0 * pe))
				 : 0.0f;
	}
	tps_tensor_free(&b);
	if (st != TPS_OK) {
		tps_bound_free(&sum);
		return st;
	}
	tps_bound_move(e, &sum);
	return TPS_OK;
}

/* dW[id] = the sum of dy's rows at id, in row order: n = how often id
 * occurs, e = gamma_n sum (|dy| + 2 e_dy) + sum e_dy over those rows; 0
 * where dy is exact, integral and grad_scale sum |dy| < 2^24. */
static enum tps_status embedding_bound_backward(struct tps_module *m,
						const struct tps_bound_ctx *bc,
						const struct tps_tensor *dy,
						const struct tps_bound *edy,
						struct tps_tensor *dx,
						struct tps_bound *edx,
						struct tps_error *err)
{
	struct tps_param *p = &m->params[WEIGHT];
	const struct tps_tensor *ids = &m->ref_saved_in;
	int64_t rows = p->global.shape.dim[0], width = p->global.shape.dim[1];
	int64_t n = tps_tensor_numel(ids);
	bool exact_in = tps_bound_is_zero(edy);
	bool integral = exact_in && tps_tensor_integral(dy);
	int64_t *count = calloc((size_t)(rows > 0 ? rows : 1), sizeof *count);
	struct tps_tensor a = {0};
	struct tps_bound e = {0};
	enum tps_status st =
		count ? TPS_OK
		      : tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	(void)dx;
	(void)edx;
	for (int64_t i = 0; st == TPS_OK && i < n; i++) {
		int64_t id = (int64_t)ids->data[i];
		count[id >= 0 && id < rows ? id : 0] +=
			id >= 0 && id < rows ? 1 : 0;
	}
	if (st == TPS_OK && tps_bound_is_none(edy)) {
		tps_bound_none_like(&e, edy);
	} else if (st == TPS_OK) {
		/* Each row's terms, g |dy| + (2 g + 1) e_dy with its id's g
		 * (exact_in: |dy|, the sum P, scaled after). */
		st = tps_tensor_init(&a, &dy->shape, err);
		for (int64_t i = 0; st == TPS_OK && i < n; i++) {
			int64_t id = (int64_t)ids->data[i];
			double g = tps_bound_ctx_gamma(
				bc, id >= 0 && id < rows ? count[id] : 0,
				bc->u_acc);
			for (int64_t j = 0; j < width; j++) {
				int64_t k = i * width + j;
				a.data[k] = exact_in
						    ? fabsf(dy->data[k])
						    : tps_bound_up(
							      g * fabs(dy->data[k]) +
							      (2.0 * g + 1.0) *
								      edy->e.data[k]);
			}
		}
		if (st == TPS_OK) {
			st = scatter_add(&e.e, &p->global.shape, ids, &a, 0,
					 err);
		}
		for (int64_t i = 0; st == TPS_OK && exact_in && i < rows * width;
		     i++) {
			double pv = e.e.data[i];
			e.e.data[i] =
				integral && bc->grad_scale * pv <
						    bc->exact_limit
					? 0.0f
					: tps_bound_up(tps_bound_ctx_gamma(
							       bc, count[i / width],
							       bc->u_acc) *
						       pv);
		}
		if (st == TPS_OK) {
			tps_bound_inflate(&e, n + 3, bc->u_acc);
		}
	}
	if (st == TPS_OK && m->tied) {
		st = tied_sum_bound(m, bc, dy, &e, err);
	} else if (st == TPS_OK) {
		st = embedding_reference_backward(m, bc->pool, dy, NULL, err);
	}
	free(count);
	tps_tensor_free(&a);
	if (st != TPS_OK) {
		tps_bound_free(&e);
		return st;
	}
	tps_bound_move(&p->ref_grad_bound, &e);
	return TPS_OK;
}

static int embedding_parameters(const struct tps_module_spec *s, int tp_dim,
				struct tps_param_spec *out)
{
	/* A padded vocabulary's rows past num_embeddings are padding: no
	 * id picks them (docs/transformer.md, "The vocabulary"). */
	int64_t rows = s->padded_vocab ? s->padded_vocab : s->num_embeddings;
	int64_t dims[2] = {rows, s->out_features};
	(void)tp_dim;
	/* nn.Embedding draws N(0, 1): fan_in 1 makes the init's a = 1. */
	out[WEIGHT] = (struct tps_param_spec){
		"weight", tps_shape_make(2, dims), 1, TPS_INIT_NORMAL,
		s->style == TPS_STYLE_VOCAB ? tps_placement_shard(0)
					    : tps_placement_replicate()};
	return 1;
}

static int64_t embedding_memory_estimate(const struct tps_module_spec *s,
					 const struct tps_memory_context *mc)
{
	int64_t w = tps_sat_mul(
		s->padded_vocab ? s->padded_vocab : s->num_embeddings,
		s->out_features);
	int64_t copies =
		s->style == TPS_STYLE_VOCAB ? mc->world / mc->tp : mc->world;
	int64_t bytes = tps_sat_mul(tps_sat_mul(w, copies + 1), 4);
	return mc->training
		       ? tps_sat_mul(bytes, 2 + (int64_t)mc->optimizer_states)
		       : bytes;
}

const struct tps_module_ops tps_embedding_ops = {
	.forward = embedding_forward,
	.backward = embedding_backward,
	.reference_forward = embedding_reference_forward,
	.reference_backward = embedding_reference_backward,
	.bound_forward = embedding_bound_forward,
	.bound_backward = embedding_bound_backward,
	.parameters = embedding_parameters,
	.memory_estimate = embedding_memory_estimate,
	/* Its input is token ids, stored as float32 whole numbers
	 * (tps_model_input_dtype) whatever the activations' dtype. */
	.saved_in_size = 4,
};
