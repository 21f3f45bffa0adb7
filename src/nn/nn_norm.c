/*
 * The driver layernorm and rmsnorm share (nn_norm.h). Rows are
 * independent, so a rank holding whole rows computes exactly what the
 * reference does for them. The styles:
 *
 *   replicate  the input gathered to replicate on tp; every rank computes
 *              every row, and the weight gradient is whole on every rank.
 *   sequence   (SequenceParallel) each rank normalizes its sequence shard
 *              (the input's declared shard, shard(1) of (batch, seq, dim)
 *              by default); the weight is replicated, so each rank's
 *              weight gradient covers its own rows only: partial over tp,
 *              all-reduced in backward (Megatron all-reduces these
 *              "sequence parallel" gradients before the optimizer step).
 *
 * The weight (and bias) gradients sum the rows in ascending order.
 */
#include <stdio.h>
#include <stdlib.h>

#include "nn_norm.h"

enum { WEIGHT = TPS_NORM_WEIGHT, BIAS = TPS_NORM_BIAS };

static bool has_bias(const struct tps_norm_kind *k, const struct tps_module *m)
{
	return k->bias && m->spec->bias;
}

/* y = norm(x) with w, b (b may be NULL), for ranks and reference. */
static enum tps_status
norm_forward(const struct tps_norm_kind *k, struct tps_tensor *y,
	     const struct tps_tensor *x, const struct tps_tensor *w,
	     const struct tps_tensor *b, double eps, struct tps_error *err)
{
	int64_t n = w->shape.dim[0];
	int64_t rows = n ? tps_tensor_numel(x) / n : 0;
	enum tps_status st;
	if (x->shape.ndim < 1 || x->shape.dim[x->shape.ndim - 1] != n) {
		char xs[128];
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"%s: input %s does not end in its dim %lld", k->name,
			tps_shape_format(&x->shape, xs, sizeof xs),
			(long long)n);
	}
	st = tps_tensor_init_like(y, &x->shape, x, err);
	for (int64_t r = 0; st == TPS_OK && y->data && r < rows; r++) {
		k->row_forward(x->data + r * n, w->data, b ? b->data : NULL,
			       y->data + r * n, n, eps);
	}
	return st;
}

/* dx (NULL: not wanted), dw and db (NULL: no bias) from dy and the saved
 * x, over x's rows. */
static enum tps_status
norm_backward(const struct tps_norm_kind *k, struct tps_tensor *dx,
	      struct tps_tensor *dw, struct tps_tensor *db,
	      const struct tps_tensor *dy, const struct tps_tensor *x,
	      const struct tps_tensor *w, double eps, struct tps_error *err)
{
	int64_t n = w->shape.dim[0];
	int64_t rows = n ? tps_tensor_numel(x) / n : 0;
	/* Meta tensors (tpsim comm) carry shapes only. */
	enum tps_status st = tps_tensor_init_like(dw, &w->shape, dy, err);
	if (st == TPS_OK && db) {
		st = tps_tensor_init_like(db, &w->shape, dy, err);
	}
	if (st == TPS_OK && dx) {
		st = tps_tensor_init_like(dx, &x->shape, x, err);
	}
	if (st != TPS_OK) {
		tps_tensor_free(dw);
		if (db) {
			tps_tensor_free(db);
		}
		return st;
	}
	for (int64_t r = 0; dw->data && r < rows; r++) {
		k->row_backward(x->data + r * n, dy->data + r * n, w->data,
				dx ? dx->data + r * n : NULL, dw->data,
				db ? db->data : NULL, n, eps);
	}
	return TPS_OK;
}

struct forward_job {
	const struct tps_norm_kind *k;
	const struct tps_module *m;
	const struct tps_dtensor *x;
};

static enum tps_status forward_rank(void *opaque, int r, struct tps_tensor *out,
				    struct tps_error *err)
{
	const struct forward_job *job = opaque;
	const struct tps_module *m = job->m;
	return norm_forward(
		job->k, out, &job->x->locals[r],
		&m->params[WEIGHT].value.locals[r],
		has_bias(job->k, m) ? &m->params[BIAS].value.locals[r] : NULL,
		m->spec->eps, err);
}

/* The tp layout a style computes on: sequence, its declared shard (of a
 * dim that is not the normalized one); replicate, replicate. */
static enum tps_status compute_layout(const struct tps_module *m,
				      const struct tps_dtensor *x,
				      struct tps_placement *out,
				      struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	int ndim = x->global.ndim;
	*out = tps_placement_replicate();
	if (s->style != TPS_STYLE_SEQUENCE) {
		return TPS_OK;
	}
	*out = tps_nn_normalized(s->input, ndim);
	if (out->kind != TPS_PLACEMENT_SHARD || out->dim == ndim - 1) {
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"%s: sequence parallel needs its input sharded on a "
			"dim other than the normalized last one (a %d-dim "
			"input, declared %s)",
			s->plan_pointer, ndim,
			out->kind == TPS_PLACEMENT_SHARD ? "its last dim"
							 : "replicate");
	}
	return TPS_OK;
}

enum tps_status tps_norm_forward(const struct tps_norm_kind *k,
				 const struct tps_nn_context *ctx,
				 struct tps_module *m, struct tps_dtensor *x,
				 struct tps_dtensor *y, struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct forward_job job = {k, m, x};
	struct tps_placement want;
	char in_name[TPS_NAME_MAX + 8], out_name[TPS_NAME_MAX + 8];
	bool sequence = s->style == TPS_STYLE_SEQUENCE;
	struct tps_dtensor out = {0};
	enum tps_status st;

	snprintf(in_name, sizeof in_name, "%s.in", s->name);
	snprintf(out_name, sizeof out_name, "%s.out", s->name);
	tps_nn_forward_begin(ctx, m);
	st = compute_layout(m, x, &want, err);
	if (st != TPS_OK) {
		return tps_nn_forward_end(ctx, m, x, &out, y, st);
	}
	if (ctx->save) {
		tps_layout_chain_start(&m->in_chain, ctx, x);
	}
	st = tps_nn_to_layout_chained(
		ctx, x, want, ctx->save ? &m->in_chain : NULL, s->name, in_name,
		sequence ? "sequence parallel: each rank normalizes its own "
			   "tokens"
			 : k->replicate_why,
		err);
	if (st == TPS_OK) {
		st = tps_dtensor_map(&out, ctx->mesh, &x->global, x->placements,
				     forward_rank, &job, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(ctx, s->name, k->name, out_name,
					 sequence ? k->forward_sequence
						  : k->forward_replicate,
					 &out, 0, err);
	}
	return tps_nn_forward_end(ctx, m, x, &out, y, st);
}

struct backward_job {
	const struct tps_norm_kind *k;
	const struct tps_module *m;
	const struct tps_dtensor *dy;
	struct tps_tensor *dw, *db; /* per rank; db NULL without a bias */
};

static enum tps_status backward_rank(void *opaque, int r,
				     struct tps_tensor *out,
				     struct tps_error *err)
{
	const struct backward_job *job = opaque;
	const struct tps_module *m = job->m;
	return norm_backward(job->k, out, &job->dw[r],
			     has_bias(job->k, m) ? &job->db[r] : NULL,
			     &job->dy->locals[r], &m->saved_in.locals[r],
			     &m->params[WEIGHT].value.locals[r], m->spec->eps,
			     err);
}

/* Hands the ranks' gradients of parameter i to p->grad (placements: the
 * batch dims' partial, and on tp partial for sequence), emits it, and for
 * sequence all-reduces it over tp. */
static enum tps_status param_grad(const struct tps_norm_kind *k,
				  const struct tps_nn_context *ctx,
				  struct tps_module *m, int i,
				  struct tps_tensor *locals,
				  struct tps_error *err)
{
	struct tps_param *p = &m->params[i];
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	bool sequence = m->spec->style == TPS_STYLE_SEQUENCE;
	char name[TPS_NAME_MAX + 16];
	enum tps_status st;

	for (int d = 0; d < ctx->mesh->ndim; d++) {
		placements[d] =
			m->saved_in.placements[d].kind == TPS_PLACEMENT_SHARD
				? tps_placement_partial()
				: tps_placement_replicate();
	}
	placements[ctx->tp_dim] =
		sequence ? tps_placement_partial() : tps_placement_replicate();
	tps_dtensor_free(&p->grad);
	tps_dtensor_wrap(&p->grad, ctx->mesh, &p->value.global, placements,
			 locals);
	snprintf(name, sizeof name, "%s.grad", p->name);
	st = tps_nn_emit_compute(
		ctx, m->spec->name, i == WEIGHT ? k->dw_op : "sum", name,
		i == WEIGHT ? (sequence ? "dw = sum over this rank's rows of "
					  "dy xhat: partial over tp"
					: "dw = sum over the rows of dy xhat")
			    : (sequence ? "db = sum over this rank's rows of "
					  "dy: partial over tp"
					: "db = sum over the rows of dy"),
		&p->grad, 0, err);
	if (st == TPS_OK && sequence) {
		st = tps_nn_to_layout(ctx, &p->grad, tps_placement_replicate(),
				      m->spec->name, name,
				      i == WEIGHT
					      ? "sequence parallel: the "
						"replicated weight's gradient "
						"is summed over the tp ranks' "
						"tokens"
					      : "sequence parallel: the "
						"replicated bias's gradient is "
						"summed over the tp ranks' "
						"tokens",
				      err);
	}
	return st;
}

enum tps_status tps_norm_backward(const struct tps_norm_kind *k,
				  const struct tps_nn_context *ctx,
				  struct tps_module *m, struct tps_dtensor *dy,
				  struct tps_dtensor *dx, struct tps_error *err)
{
	int world = ctx->mesh->world_size;
	struct tps_tensor *dw = calloc((size_t)world, sizeof *dw);
	struct tps_tensor *db =
		k->bias ? calloc((size_t)world, sizeof *db) : NULL;
	struct backward_job job = {k, m, dy, dw, db};
	struct tps_dtensor g = {0};
	enum tps_status st = TPS_OK;

	if (!dw || (k->bias && !db)) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	/* dx comes with the parameter gradients; dropped if not wanted. */
	if (st == TPS_OK) {
		st = tps_dtensor_map(&g, ctx->mesh, &dy->global, dy->placements,
				     backward_rank, &job, err);
	}
	if (st == TPS_OK) {
		st = param_grad(k, ctx, m, WEIGHT, dw, err);
		dw = NULL;
	}
	if (st == TPS_OK && has_bias(k, m)) {
		st = param_grad(k, ctx, m, BIAS, db, err);
		db = NULL;
	}
	if (st == TPS_OK && dx) {
		st = tps_nn_input_grad(ctx, m, &g, k->backward_op,
				       k->backward_eq, 0, dx, err);
	} else {
		tps_dtensor_free(&g);
	}
	for (int r = 0; r < world; r++) {
		if (dw) {
			tps_tensor_free(&dw[r]);
		}
		if (db) {
			tps_tensor_free(&db[r]);
		}
	}
	free(dw);
	free(db);
	tps_dtensor_free(dy);
	tps_module_free_saved(m);
	return st;
}

enum tps_status tps_norm_reference_forward(const struct tps_norm_kind *k,
					   struct tps_module *m,
					   const struct tps_tensor *x,
					   struct tps_tensor *y,
					   struct tps_error *err)
{
	return norm_forward(k, y, x, &m->params[WEIGHT].global,
			    has_bias(k, m) ? &m->params[BIAS].global : NULL,
			    m->spec->eps, err);
}

enum tps_status tps_norm_reference_backward(const struct tps_norm_kind *k,
					    struct tps_module *m,
					    const struct tps_tensor *dy,
					    struct tps_tensor *dx,
					    struct tps_error *err)
{
	struct tps_tensor dw = {0}, db = {0};
	bool bias = has_bias(k, m);
	enum tps_status st;
	st = norm_backward(k, dx, &dw, bias ? &db : NULL, dy, &m->ref_saved_in,
			   &m->params[WEIGHT].global, m->spec->eps, err);
	if (st == TPS_OK) {
		tps_tensor_move(&m->params[WEIGHT].ref_grad, &dw);
		if (bias) {
			tps_tensor_move(&m->params[BIAS].ref_grad, &db);
		}
	}
	tps_tensor_free(&m->ref_saved_in);
	return st;
}

/* The operands of nn_bounds.h's layer norm rules (with rms for
 * rmsnorm): the reference's x, w, b and their bounds. The row sums of
 * dw and db split over the dp ranks, and under sequence parallel over
 * the tp ranks too. */
static struct tps_bound_layernorm bound_operands(const struct tps_norm_kind *k,
						 const struct tps_module *m,
						 const struct tps_bound_ctx *bc,
						 const struct tps_tensor *x,
						 const struct tps_bound *ex)
{
	bool bias = has_bias(k, m);
	int64_t dp = (int64_t)bc->grad_scale;
	struct tps_bound_layernorm ln = {
		.x = x,
		.e_x = &ex->e,
		.w = &m->params[WEIGHT].global,
		.e_w = &m->params[WEIGHT].ref_bound.e,
		.b = bias ? &m->params[BIAS].global : NULL,
		.e_b = bias ? &m->params[BIAS].ref_bound.e : NULL,
		.eps = m->spec->eps,
		.row_parts =
			m->spec->style == TPS_STYLE_SEQUENCE ? dp * bc->tp : dp,
		.rms = k->rms};
	return ln;
}

/* The first "no bound" among x's and the parameters' bounds, or NULL. */
static const struct tps_bound *first_none(const struct tps_norm_kind *k,
					  const struct tps_module *m,
					  const struct tps_bound *ex)
{
	const struct tps_bound *in[3] = {
		ex, &m->params[WEIGHT].ref_bound,
		has_bias(k, m) ? &m->params[BIAS].ref_bound : NULL};
	return tps_bound_first_none(in, k->bias ? 3 : 2);
}

/* docs/numerics.md, "Layer norm" and "rmsnorm": the store is the
 * sequence's (nn_seq.c), the sums of dw and db over row parts are
 * all-reduced in the reduce dtype. */
enum tps_status
tps_norm_bound_forward(const struct tps_norm_kind *k, struct tps_module *m,
		       const struct tps_bound_ctx *bc,
		       const struct tps_tensor *x, const struct tps_bound *ex,
		       struct tps_tensor *y, struct tps_bound *ey,
		       struct tps_error *err)
{
	struct tps_bound_dtypes dt = {TPS_DTYPE_F32, TPS_DTYPE_F32,
				      bc->dtypes.of[TPS_ROLE_REDUCE]};
	struct tps_bound_layernorm ln = bound_operands(k, m, bc, x, ex);
	const struct tps_bound *none = first_none(k, m, ex);
	struct tps_tensor out = {0};
	struct tps_bound e = {0};
	enum tps_status st = tps_norm_reference_forward(k, m, x, &out, err);
	if (st == TPS_OK && none) {
		tps_bound_none_like(&e, none);
	} else if (st == TPS_OK) {
		st = tps_bound_layernorm_forward(&ln, &dt, &e.e, err);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*y = out;
	*ey = e;
	return TPS_OK;
}

enum tps_status
tps_norm_bound_backward(const struct tps_norm_kind *k, struct tps_module *m,
			const struct tps_bound_ctx *bc,
			const struct tps_tensor *dy,
			const struct tps_bound *edy, struct tps_tensor *dx,
			struct tps_bound *edx, struct tps_error *err)
{
	/* dw and db: each rank's part of the row sums is stored in the
	 * grads dtype before the all_reduce (the sequence then rounds the
	 * results once more: counted twice, never missed). */
	struct tps_bound_dtypes dt = {bc->dtypes.of[TPS_ROLE_GRADS],
				      TPS_DTYPE_F32,
				      bc->dtypes.of[TPS_ROLE_REDUCE]};
	struct tps_bound_layernorm ln =
		bound_operands(k, m, bc, &m->ref_saved_in, &m->ref_saved_bound);
	const struct tps_bound *none = first_none(k, m, &m->ref_saved_bound);
	struct tps_param *w = &m->params[WEIGHT];
	struct tps_param *b = has_bias(k, m) ? &m->params[BIAS] : NULL;
	struct tps_bound ed = {0}, ew = {0}, eb = {0};
	struct tps_tensor d = {0};
	enum tps_status st = TPS_OK;
	none = none ? none : (tps_bound_is_none(edy) ? edy : NULL);
	if (none) {
		tps_bound_none_like(&ed, none);
		tps_bound_none_like(&ew, none);
		if (k->bias) {
			tps_bound_none_like(&eb, none);
		}
	} else {
		st = tps_bound_layernorm_backward(&ln, dy, &edy->e, &dt,
						  dx ? &ed.e : NULL, &ew.e,
						  b ? &eb.e : NULL, err);
	}
	/* The values last: reference_backward frees the saved input. */
	if (st == TPS_OK) {
		st = tps_norm_reference_backward(k, m, dy, dx ? &d : NULL, err);
	}
	if (st != TPS_OK) {
		tps_bound_free(&ed);
		tps_bound_free(&ew);
		tps_bound_free(&eb);
		return st;
	}
	tps_bound_move(&w->ref_grad_bound, &ew);
	if (b) {
		tps_bound_move(&b->ref_grad_bound, &eb);
	}
	tps_bound_free(&eb);
	if (dx) {
		*dx = d;
		*edx = ed;
	} else {
		tps_bound_free(&ed);
	}
	return TPS_OK;
}
