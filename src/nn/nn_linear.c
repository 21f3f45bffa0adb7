/*
 * nn.Linear under the parallel styles (see nn.h for the rules).
 *
 * Shapes: x (..., in) -> y (..., out); W (out, in); b (out).
 *   colwise   rank r holds W_r (out_r, in), b_r (out_r); y_r (..., out_r)
 *   rowwise   rank r holds W_r (out, in_r), b (out);     y_r (..., out)
 *             partial until the reduction
 *   replicate every rank holds W, b and computes y
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "nn.h"

/* The parameters' order in the module, as linear_parameters makes them. */
enum { WEIGHT, BIAS };

static const struct tps_dtensor *weight(const struct tps_module *m)
{
	return &m->params[WEIGHT].value;
}

static const struct tps_dtensor *bias(const struct tps_module *m)
{
	return m->spec->bias ? &m->params[BIAS].value : NULL;
}

/* A shard of a dim of features: of whole heads in an attention's
 * linears, of single features elsewhere. */
static struct tps_placement feature_shard(const struct tps_module_spec *s,
					  int dim)
{
	return tps_placement_shard_blocks(
		dim, s->shard_block > 1 ? s->shard_block : 1);
}

/* The most multiply-adds any rank does for y = x W^T, times 2. */
static int64_t matmul_flops(const struct tps_dtensor *x,
			    const struct tps_dtensor *y)
{
	int64_t most = 0;
	for (int r = 0; r < x->mesh->world_size; r++) {
		const struct tps_tensor *xr = &x->locals[r];
		int64_t k =
			xr->shape.ndim ? xr->shape.dim[xr->shape.ndim - 1] : 1;
		int64_t f = tps_sat_mul(
			2, tps_sat_mul(tps_tensor_numel(&y->locals[r]), k));
		most = f > most ? f : most;
	}
	return most;
}

struct matmul_job {
	const struct tps_dtensor *x, *w;
};

static enum tps_status matmul_rank(void *opaque, int r, struct tps_tensor *out,
				   struct tps_error *err)
{
	const struct matmul_job *job = opaque;
	/* Inside the ranks' pool this runs on the rank's thread; with one
	 * rank, the matmul itself shares out the pool. */
	return tps_tensor_linear(out, &job->x->locals[r], &job->w->locals[r],
				 NULL, job->x->mesh->pool, err);
}

/* y's locals = x's locals W_r^T on every rank (W: the module's weight, or
 * a mistaken sharding of it); y gets x's placements with the tp one
 * replaced by tp_out. */
static enum tps_status
local_matmul(const struct tps_nn_context *ctx, const struct tps_module *m,
	     const struct tps_dtensor *x, const struct tps_dtensor *w,
	     struct tps_placement tp_out, struct tps_dtensor *y,
	     struct tps_error *err)
{
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	struct tps_shape global = x->global;
	struct matmul_job job = {x, w};
	enum tps_status st;

	global.dim[global.ndim - 1] = w->global.dim[0];
	for (int i = 0; i < ctx->mesh->ndim; i++) {
		placements[i] = x->placements[i];
	}
	placements[ctx->tp_dim] = tps_nn_normalized(tp_out, global.ndim);
	st = tps_dtensor_map(y, ctx->mesh, &global, placements, matmul_rank,
			     &job, err);
	if (st != TPS_OK) {
		tps_error_prefix(err, "%s %s", tps_style_names[m->spec->style],
				 m->spec->name);
	}
	return st;
}

/*
 * Adding the bias on every rank whose turn it is: the slice of the rank's
 * local bias that lines up with its output's last-dim region (the whole
 * local bias for colwise shards), divided by `divisor`.
 */
struct bias_job {
	const struct tps_nn_context *ctx;
	const struct tps_dtensor *b;
	struct tps_dtensor *y;
	bool only_local_rank0, bias_is_sharded;
	float divisor;
};

static enum tps_status bias_rank(void *opaque, int r, struct tps_error *err)
{
	const struct bias_job *job = opaque;
	const struct tps_mesh *mesh = job->ctx->mesh;
	struct tps_dtensor *y = job->y;
	int last = y->global.ndim - 1;
	int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
	struct tps_tensor slice = {0};
	enum tps_status st;

	if (job->only_local_rank0 &&
	    tps_mesh_local_rank(mesh, 1u << job->ctx->tp_dim, r) != 0) {
		return TPS_OK;
	}
	if (job->bias_is_sharded) {
		st = tps_tensor_copy(&slice, &job->b->locals[r], err);
	} else {
		tps_dtensor_local_region(mesh, &y->global, y->placements, r,
					 offset, length);
		st = tps_tensor_narrow(&slice, &job->b->locals[r], 0,
				       offset[last], length[last], err);
	}
	if (st == TPS_OK && job->divisor != 1.0f && slice.data) {
		int64_t n = tps_tensor_numel(&slice);
		for (int64_t e = 0; e < n; e++) {
			slice.data[e] /= job->divisor;
		}
	}
	if (st == TPS_OK) {
		tps_tensor_add_bias(&y->locals[r], &slice, 1.0f);
	}
	tps_tensor_free(&slice);
	return st;
}

static enum tps_status add_bias(const struct tps_nn_context *ctx,
				const struct tps_module *m,
				struct tps_dtensor *y, bool only_local_rank0,
				float divisor, bool bias_is_sharded,
				struct tps_error *err)
{
	struct bias_job job = {
		ctx, bias(m), y, only_local_rank0, bias_is_sharded, divisor};
	return tps_mesh_for_each_rank(ctx->mesh, bias_rank, &job, err);
}

/* Tensor names of a module: "<name>.in", "<name>.out". */
struct io_names {
	char in[TPS_NAME_MAX + 8], out[TPS_NAME_MAX + 8];
};

static struct io_names io_names_of(const char *module)
{
	struct io_names n;
	snprintf(n.in, sizeof n.in, "%s.in", module);
	snprintf(n.out, sizeof n.out, "%s.out", module);
	return n;
}

/* The chains forward records when it saves for backward (else NULL). The
 * input's starts at the layout it arrived in. */
static struct tps_layout_chain *in_chain(const struct tps_nn_context *ctx,
					 struct tps_module *m,
					 const struct tps_dtensor *x)
{
	if (!ctx->save) {
		return NULL;
	}
	if (m->in_chain.n == 0) {
		tps_layout_chain_start(&m->in_chain, ctx, x);
	}
	return &m->in_chain;
}

static struct tps_layout_chain *out_chain(const struct tps_nn_context *ctx,
					  struct tps_module *m)
{
	return ctx->save ? &m->out_chain : NULL;
}

static void start_out_chain(const struct tps_nn_context *ctx,
			    struct tps_module *m, const struct tps_dtensor *out)
{
	if (ctx->save) {
		tps_layout_chain_start(&m->out_chain, ctx, out);
	}
}

/* Whether ctx's injected mistake happens in this module. */
static bool mistaken_here(const struct tps_nn_context *ctx,
			  const struct tps_module *m, enum tps_mistake which)
{
	return ctx->mistake_site == m->spec && ctx->mistake == which;
}

/*
 * inject wrong_shard_dim: the weight [out, in] sharded over tp on the
 * other dim than the style's (colwise: dim 1 instead of 0; rowwise: dim 0
 * instead of 1), recorded as the mistaken event, into *wrong. The matmul
 * then fails on its shapes, as seed 000's fifth pitfall says.
 */
static enum tps_status wrong_shard(const struct tps_nn_context *ctx,
				   const struct tps_module *m,
				   struct tps_dtensor *wrong,
				   struct tps_error *err)
{
	const struct tps_param *w = &m->params[WEIGHT];
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	struct tps_nn_context pctx = *ctx;
	struct tps_event ev = {0};
	enum tps_status st;
	int right = w->value.placements[ctx->tp_dim].dim;

	for (int i = 0; i < ctx->mesh->ndim; i++) {
		placements[i] = w->value.placements[i];
	}
	placements[ctx->tp_dim] = tps_placement_shard(1 - right);
	st = tps_dtensor_distribute(wrong, ctx->mesh, &w->global, placements,
				    err);
	if (st != TPS_OK) {
		return st;
	}
	ev.module = m->spec->name;
	ev.kind = TPS_EVENT_LAYOUT;
	ev.op = "distribute";
	ev.tensor = w->name;
	ev.note = right == 0 ? "MISTAKE (inject wrong_shard_dim): the weight "
			       "is split by its columns (input features), "
			       "where colwise splits its rows (output "
			       "features)"
			     : "MISTAKE (inject wrong_shard_dim): the weight "
			       "is split by its rows (output features), "
			       "where rowwise splits its columns (input "
			       "features)";
	ev.value = wrong;
	/* A weight in the forward phase: its dtype is the params'. */
	pctx.dtypes.of[TPS_ROLE_ACTIVATIONS] = ctx->dtypes.of[TPS_ROLE_PARAMS];
	st = tps_nn_emit_mistaken_event(&pctx, &ev, err);
	if (st != TPS_OK) {
		tps_dtensor_free(wrong);
	}
	return st;
}

/* The matmul of a sharded linear, with the weight sharded as the style
 * says or, under wrong_shard_dim, on the other dim. */
static enum tps_status
sharded_matmul(const struct tps_nn_context *ctx, const struct tps_module *m,
	       const struct tps_dtensor *x, struct tps_placement tp_out,
	       struct tps_dtensor *y, struct tps_error *err)
{
	struct tps_dtensor wrong = {0};
	enum tps_status st;
	if (!mistaken_here(ctx, m, TPS_MISTAKE_WRONG_SHARD_DIM)) {
		return local_matmul(ctx, m, x, weight(m), tp_out, y, err);
	}
	st = wrong_shard(ctx, m, &wrong, err);
	if (st == TPS_OK) {
		st = local_matmul(ctx, m, x, &wrong, tp_out, y, err);
	}
	tps_dtensor_free(&wrong);
	return st;
}

/*
 * inject skip_gather: instead of all-gathering the output features, each
 * rank returns its local shard [..., out_r] as the whole output, recorded
 * as the mistaken event. Ranks whose shards differ in size (uneven) cannot
 * even agree on its shape: a shape error.
 */
static enum tps_status skip_gather(const struct tps_nn_context *ctx,
				   const struct tps_module *m,
				   struct tps_dtensor *out,
				   struct tps_error *err)
{
	const struct tps_shape *first = &out->locals[0].shape;
	char a[128], b[128];
	enum tps_status st;
	out->placements[ctx->tp_dim] = tps_placement_replicate();
	out->global = *first;
	st = tps_nn_emit_mistaken_compute(
		ctx, m->spec->name, "skip_all_gather",
		io_names_of(m->spec->name).out,
		"MISTAKE (inject skip_gather): each rank "
		"returns its local shard of the output "
		"features as the whole output; no all_gather",
		out, err);
	for (int r = 1; st == TPS_OK && r < ctx->mesh->world_size; r++) {
		const struct tps_shape *other = &out->locals[r].shape;
		if (!tps_shape_equal(other, first)) {
			st = tps_error_set(
				err, TPS_ERR_SHAPE,
				"%s: the ranks return outputs of different "
				"shapes, rank 0 %s and rank %d %s",
				m->spec->name,
				tps_shape_format(first, a, sizeof a), r,
				tps_shape_format(other, b, sizeof b));
		}
	}
	return st;
}

static enum tps_status colwise_forward(const struct tps_nn_context *ctx,
				       struct tps_module *m,
				       struct tps_dtensor *x,
				       struct tps_dtensor *y,
				       struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct io_names n = io_names_of(s->name);
	struct tps_dtensor out = {0}, shard = {0};
	enum tps_status st;

	/* Sequence parallel: the declared shard(seq) input is all-gathered;
	 * backward gathers it again from the shard it keeps (sp_save). */
	st = tps_nn_to_layout_chained(ctx, x, s->input, in_chain(ctx, m, x),
				      s->name, n.in, NULL, err);
	if (st == TPS_OK) {
		st = tps_nn_keep_shard(ctx, x, &shard, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_to_layout_chained(
			ctx, x, tps_placement_replicate(), in_chain(ctx, m, x),
			s->name, n.in, "colwise computes on the full input",
			err);
	}
	if (st == TPS_OK) {
		st = sharded_matmul(ctx, m, x, feature_shard(s, -1), &out, err);
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&shard);
		return tps_nn_forward_end(ctx, m, x, &out, y, st);
	}
	start_out_chain(ctx, m, &out);
	st = tps_nn_emit_compute(ctx, s->name, "matmul", n.out,
				 "y_i = x W_i^T: each rank computes its slice "
				 "of the output features",
				 &out, matmul_flops(x, &out), err);
	if (st == TPS_OK && s->bias) {
		st = add_bias(ctx, m, &out, false, 1.0f, true, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_compute(ctx, s->name, "add_bias",
						 n.out,
						 "each rank adds its own bias "
						 "shard b_i",
						 &out, 0, err);
		}
	}
	if (st == TPS_OK && mistaken_here(ctx, m, TPS_MISTAKE_SKIP_GATHER)) {
		st = skip_gather(ctx, m, &out, err);
	} else if (st == TPS_OK) {
		st = tps_nn_to_layout_chained(ctx, &out, s->output,
					      out_chain(ctx, m), s->name, n.out,
					      NULL, err);
	}
	if (shard.locals) {
		st = tps_nn_forward_end(ctx, m, &shard, &out, y, st);
		tps_dtensor_free(&shard);
		return st;
	}
	return tps_nn_forward_end(ctx, m, x, &out, y, st);
}

static enum tps_status rowwise_forward(const struct tps_nn_context *ctx,
				       struct tps_module *m,
				       struct tps_dtensor *x,
				       struct tps_dtensor *y,
				       struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct io_names n = io_names_of(s->name);
	struct tps_dtensor out = {0};
	int tp = ctx->mesh->shape[ctx->tp_dim];
	/* inject bias_every_rank: the whole bias on every rank, before. */
	bool every_rank = mistaken_here(ctx, m, TPS_MISTAKE_BIAS_EVERY_RANK);
	bool bias_before = s->bias && (s->bias_mode != TPS_BIAS_AFTER_REDUCE ||
				       every_rank);
	/* inject skip_all_reduce: the partial sums taken as the output. */
	bool skip_reduce = mistaken_here(ctx, m, TPS_MISTAKE_SKIP_ALL_REDUCE);
	enum tps_status st;

	st = tps_nn_to_layout_chained(ctx, x, s->input, in_chain(ctx, m, x),
				      s->name, n.in, NULL, err);
	if (st == TPS_OK) {
		st = tps_nn_to_layout_chained(
			ctx, x, feature_shard(s, -1), in_chain(ctx, m, x),
			s->name, n.in,
			"rowwise takes the input features split "
			"like its weight's columns",
			err);
	}
	if (st == TPS_OK) {
		st = sharded_matmul(ctx, m, x, tps_placement_partial(), &out,
				    err);
	}
	if (st != TPS_OK) {
		return tps_nn_forward_end(ctx, m, x, &out, y, st);
	}
	start_out_chain(ctx, m, &out);
	st = tps_nn_emit_compute(ctx, s->name, "matmul", n.out,
				 "y_i = x_i W_i^T: partial sums, y = sum_i y_i",
				 &out, matmul_flops(x, &out), err);
	if (st == TPS_OK && every_rank) {
		st = add_bias(ctx, m, &out, false, 1.0f, false, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_mistaken_compute(
				ctx, s->name, "add_bias", n.out,
				"MISTAKE (inject bias_every_rank): every rank "
				"adds the whole bias before the reduction",
				&out, err);
		}
	} else if (st == TPS_OK && bias_before) {
		bool rank0 = s->bias_mode == TPS_BIAS_RANK0;
		char note[128];
		if (rank0) {
			snprintf(note, sizeof note,
				 "bias added once, by local "
				 "rank 0, before the reduction (rank0)");
		} else {
			snprintf(note, sizeof note,
				 "each of the %d ranks adds "
				 "b/%d before the reduction (partial_split)",
				 tp, tp);
		}
		st = add_bias(ctx, m, &out, rank0, rank0 ? 1.0f : (float)tp,
			      false, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_compute(ctx, s->name, "add_bias",
						 n.out, note, &out, 0, err);
		}
	}
	if (st == TPS_OK && skip_reduce) {
		out.placements[ctx->tp_dim] = tps_placement_replicate();
		st = tps_nn_emit_mistaken_compute(
			ctx, s->name, "skip_all_reduce", n.out,
			"MISTAKE (inject skip_all_reduce): each rank takes its "
			"partial sum for the whole output; no all_reduce",
			&out, err);
	} else if (st == TPS_OK) {
		st = tps_nn_to_layout_chained(ctx, &out, s->output,
					      out_chain(ctx, m), s->name, n.out,
					      NULL, err);
	}
	if (st == TPS_OK && s->bias && !bias_before) {
		st = add_bias(ctx, m, &out, false, 1.0f, false, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_compute(
				ctx, s->name, "add_bias", n.out,
				skip_reduce ? "bias added once, where the "
					      "(skipped) reduction would have "
					      "been (after_reduce)"
					    : "bias added once, after the "
					      "reduction (after_reduce)",
				&out, 0, err);
		}
	}
	return tps_nn_forward_end(ctx, m, x, &out, y, st);
}

static enum tps_status replicated_forward(const struct tps_nn_context *ctx,
					  struct tps_module *m,
					  struct tps_dtensor *x,
					  struct tps_dtensor *y,
					  struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct io_names n = io_names_of(s->name);
	struct tps_dtensor out = {0};
	enum tps_status st;

	st = tps_nn_to_layout_chained(ctx, x, tps_placement_replicate(),
				      in_chain(ctx, m, x), s->name, n.in,
				      "a replicated module needs its whole "
				      "input on every rank",
				      err);
	if (st == TPS_OK) {
		st = local_matmul(ctx, m, x, weight(m),
				  tps_placement_replicate(), &out, err);
	}
	if (st != TPS_OK) {
		return tps_nn_forward_end(ctx, m, x, &out, y, st);
	}
	start_out_chain(ctx, m, &out);
	st = tps_nn_emit_compute(ctx, s->name, "matmul", n.out,
				 "every rank computes the whole layer", &out,
				 matmul_flops(x, &out), err);
	if (st == TPS_OK && s->bias) {
		st = add_bias(ctx, m, &out, false, 1.0f, false, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_compute(ctx, s->name, "add_bias",
						 n.out, NULL, &out, 0, err);
		}
	}
	return tps_nn_forward_end(ctx, m, x, &out, y, st);
}

static enum tps_status linear_forward(const struct tps_nn_context *ctx,
				      struct tps_module *m,
				      struct tps_dtensor *x,
				      struct tps_dtensor *y,
				      struct tps_error *err)
{
	tps_nn_forward_begin(ctx, m);
	switch (m->spec->style) {
	case TPS_STYLE_COLWISE: return colwise_forward(ctx, m, x, y, err);
	case TPS_STYLE_ROWWISE: return rowwise_forward(ctx, m, x, y, err);
	case TPS_STYLE_REPLICATE: return replicated_forward(ctx, m, x, y, err);
	case TPS_STYLE_SEQUENCE:
	case TPS_STYLE_VOCAB:
	case TPS_STYLE_PREPARE_INPUT:
	case TPS_STYLE_PREPARE_OUTPUT: break; /* the config refuses them */
	}
	return tps_error_set(err, TPS_ERR_UNSUPPORTED, "%s: unknown style",
			     m->spec->name);
}

/* ---- backward ------------------------------------------------------ */

/* A parameter gradient's placements: the parameter's on tp; partial on a
 * mesh dim that splits the batch (each rank summed its own rows);
 * replicate elsewhere. */
static void grad_placements(const struct tps_nn_context *ctx,
			    const struct tps_param *p,
			    const struct tps_dtensor *x,
			    struct tps_placement *out)
{
	for (int i = 0; i < ctx->mesh->ndim; i++) {
		out[i] = x->placements[i].kind == TPS_PLACEMENT_SHARD
				 ? tps_placement_partial()
				 : tps_placement_replicate();
	}
	out[ctx->tp_dim] = p->value.placements[ctx->tp_dim];
}

struct backward_job {
	const struct tps_dtensor *dy, *x, *w;
};

static enum tps_status dw_rank(void *opaque, int r, struct tps_tensor *out,
			       struct tps_error *err)
{
	const struct backward_job *job = opaque;
	return tps_tensor_linear_backward_weight(out, &job->dy->locals[r],
						 &job->x->locals[r],
						 job->dy->mesh->pool, err);
}

static enum tps_status db_rank(void *opaque, int r, struct tps_tensor *out,
			       struct tps_error *err)
{
	const struct backward_job *job = opaque;
	return tps_tensor_sum_rows(out, &job->dy->locals[r], err);
}

static enum tps_status dx_rank(void *opaque, int r, struct tps_tensor *out,
			       struct tps_error *err)
{
	const struct backward_job *job = opaque;
	return tps_tensor_linear_backward_input(out, &job->dy->locals[r],
						&job->w->locals[r],
						job->dy->mesh->pool, err);
}

/* The notes of the three backward computations, per style. */
struct backward_notes {
	const char *dw, *db, *dx;
};

static struct backward_notes notes_of(enum tps_style style)
{
	switch (style) {
	case TPS_STYLE_COLWISE:
		return (struct backward_notes){
			"dW_i = dY_i^T X: each rank's rows of the weight, "
			"local (no communication)",
			"db_i = dY_i summed over the batch: local",
			"dX = sum_i dY_i W_i: each rank holds one term, "
			"partial"};
	case TPS_STYLE_ROWWISE:
		return (struct backward_notes){
			"dW_i = dY^T X_i: each rank's columns of the weight, "
			"local (no communication)",
			"db = dY summed over the batch: the whole bias "
			"gradient on every rank, in every bias mode, with no "
			"communication",
			"dX_i = dY W_i: each rank's input features, split as "
			"X was"};
	case TPS_STYLE_REPLICATE:
	case TPS_STYLE_SEQUENCE:
	case TPS_STYLE_VOCAB:
	case TPS_STYLE_PREPARE_INPUT:
	case TPS_STYLE_PREPARE_OUTPUT: break;
	}
	return (struct backward_notes){
		"dW = dY^T X: every rank computes the whole weight gradient",
		"db = dY summed over the batch", "dX = dY W on every rank"};
}

/* Makes one parameter's gradient with fn and emits its event. */
static enum tps_status param_grad(const struct tps_nn_context *ctx,
				  const struct tps_module *m,
				  struct tps_param *p, tps_local_fn fn,
				  struct backward_job *job, const char *op,
				  const char *note, int64_t flops,
				  struct tps_error *err)
{
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	struct tps_dtensor g;
	char name[TPS_NAME_MAX + 16];
	enum tps_status st;

	grad_placements(ctx, p, job->x, placements);
	st = tps_dtensor_map(&g, ctx->mesh, &p->value.global, placements, fn,
			     job, err);
	if (st != TPS_OK) {
		return st;
	}
	tps_dtensor_free(&p->grad);
	p->grad = g;
	snprintf(name, sizeof name, "%s.grad", p->name);
	return tps_nn_emit_compute(ctx, m->spec->name, op, name, note, &p->grad,
				   flops, err);
}

/*
 * inject tp_allreduce_weight_grad (seed 003's claim): p's tp-sharded
 * gradient all-reduced over tp, so that every rank's shard dW_r becomes
 * sum_s dW_s, a sum of different blocks of the weight. Shards of unequal
 * size (uneven) cannot be all-reduced at all: a shape error.
 */
static enum tps_status allreduce_sharded_grad(const struct tps_nn_context *ctx,
					      const struct tps_module *m,
					      struct tps_param *p,
					      struct tps_error *err)
{
	struct tps_comm_report report;
	struct tps_event ev = {0};
	char name[TPS_NAME_MAX + 16];
	enum tps_status st;

	const struct tps_shape *first = &p->grad.locals[0].shape;
	bool equal = true;

	if (p->grad.placements[ctx->tp_dim].kind != TPS_PLACEMENT_SHARD) {
		return TPS_OK;
	}
	for (int r = 1; r < ctx->mesh->world_size; r++) {
		equal = equal &&
			tps_shape_equal(&p->grad.locals[r].shape, first);
	}
	snprintf(name, sizeof name, "%s.grad", p->name);
	ev.module = m->spec->name;
	ev.kind = TPS_EVENT_COLLECTIVE;
	ev.op = "all_reduce";
	ev.tensor = name;
	ev.mask = 1u << ctx->tp_dim;
	ev.value = &p->grad;
	if (!equal) {
		/* Recorded as it stands, where the reduction breaks. */
		ev.note = "MISTAKE (inject tp_allreduce_weight_grad): the "
			  "sharded gradient is to be summed over tp, but the "
			  "ranks' blocks differ in size, so it cannot be";
		st = tps_nn_emit_mistaken_event(ctx, &ev, err);
	} else {
		st = TPS_OK;
	}
	if (st == TPS_OK) {
		st = tps_comm_all_reduce(ctx->mesh, 1u << ctx->tp_dim,
					 p->grad.locals, TPS_REDUCE_SUM,
					 tps_nn_comm_dtypes(ctx), &report, err);
		if (st != TPS_OK) {
			tps_error_prefix(err, "%s: all_reduce over tp", name);
		}
	}
	if (st != TPS_OK) {
		return st;
	}
	ev.bytes_per_rank = report.bytes_per_rank;
	ev.note = "MISTAKE (inject tp_allreduce_weight_grad): the sharded "
		  "gradient is summed over tp, every rank's different block "
		  "added together";
	return tps_nn_emit_mistaken_event(ctx, &ev, err);
}

static enum tps_status linear_backward(const struct tps_nn_context *ctx,
				       struct tps_module *m,
				       struct tps_dtensor *dy,
				       struct tps_dtensor *dx,
				       struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct backward_notes notes = notes_of(s->style);
	struct tps_dtensor gathered = {0};
	/* The input as the matmul consumed it. */
	const struct tps_dtensor *x = &m->saved_in;
	struct backward_job job = {dy, x, weight(m)};
	char out_grad[TPS_NAME_MAX + 16], in_name[TPS_NAME_MAX + 8];
	/* dW and dX cost what the forward matmul did. */
	int64_t flops = 0;
	enum tps_status st;

	snprintf(out_grad, sizeof out_grad, "%s.out.grad", s->name);
	snprintf(in_name, sizeof in_name, "%s.in", s->name);
	/* dY back to the layout the matmul produced Y in. */
	st = tps_nn_grad_through(ctx, dy, &m->out_chain, s->name, out_grad,
				 err);
	/* Colwise computes on the whole input: a kept sequence shard
	 * (tps_nn_keep_shard) is gathered again. */
	if (st == TPS_OK && s->style == TPS_STYLE_COLWISE &&
	    x->placements[ctx->tp_dim].kind == TPS_PLACEMENT_SHARD) {
		st = tps_nn_regather(ctx, x, s->name, in_name, &gathered, err);
		x = &gathered;
		job.x = x;
	}
	for (int r = 0; st == TPS_OK && r < ctx->mesh->world_size; r++) {
		const struct tps_tensor *xr = &x->locals[r];
		int64_t k = xr->shape.dim[xr->shape.ndim - 1];
		int64_t f = tps_sat_mul(
			2, tps_sat_mul(tps_tensor_numel(&dy->locals[r]), k));
		flops = f > flops ? f : flops;
	}
	if (st == TPS_OK) {
		st = param_grad(ctx, m, &m->params[WEIGHT], dw_rank, &job,
				"matmul", notes.dw, flops, err);
	}
	if (st == TPS_OK && s->bias) {
		st = param_grad(ctx, m, &m->params[BIAS], db_rank, &job, "sum",
				notes.db, 0, err);
	}
	for (int i = 0; st == TPS_OK && i < m->n_params &&
			ctx->mistake == TPS_MISTAKE_TP_ALLREDUCE_WEIGHT_GRAD &&
			ctx->mistake_site;
	     i++) {
		st = allreduce_sharded_grad(ctx, m, &m->params[i], err);
	}
	if (st == TPS_OK && dx) {
		struct tps_placement placements[TPS_MAX_MESH_DIMS];
		struct tps_placement tp = s->style == TPS_STYLE_COLWISE
						  ? tps_placement_partial()
						  : x->placements[ctx->tp_dim];
		struct tps_dtensor g = {0};
		for (int i = 0; i < ctx->mesh->ndim; i++) {
			placements[i] = x->placements[i];
		}
		placements[ctx->tp_dim] = tp;
		st = tps_dtensor_map(&g, ctx->mesh, &x->global, placements,
				     dx_rank, &job, err);
		/* Then back through the input's redistributions: a partial
		 * dX of a replicated input all-reduces (Megatron's f). */
		if (st == TPS_OK) {
			st = tps_nn_input_grad(ctx, m, &g, "matmul", notes.dx,
					       flops, dx, err);
		}
	}
	tps_dtensor_free(dy);
	tps_dtensor_free(&gathered);
	tps_module_free_saved(m);
	return st;
}

static enum tps_status linear_reference_forward(struct tps_module *m,
						struct tps_pool *pool,
						const struct tps_tensor *x,
						struct tps_tensor *y,
						struct tps_error *err)
{
	enum tps_dtype act = tps_module_dtype(m, TPS_ROLE_ACTIVATIONS);
	enum tps_status st;
	if (act == TPS_DTYPE_F32 || !m->spec->bias) {
		return tps_tensor_linear(y, x, &m->params[WEIGHT].global,
					 m->spec->bias ? &m->params[BIAS].global
						       : NULL,
					 pool, err);
	}
	/* The ranks store the matmul, then add the bias and store again
	 * (nn.h): two roundings, the same here. */
	st = tps_tensor_linear(y, x, &m->params[WEIGHT].global, NULL, pool,
			       err);
	if (st == TPS_OK && y->data) {
		tps_dtype_round_array(y->data, tps_tensor_numel(y), act);
		tps_tensor_add_bias(y, &m->params[BIAS].global, 1.0f);
	}
	return st;
}

static enum tps_status linear_reference_backward(struct tps_module *m,
						 struct tps_pool *pool,
						 const struct tps_tensor *dy,
						 struct tps_tensor *dx,
						 struct tps_error *err)
{
	struct tps_param *w = &m->params[WEIGHT];
	struct tps_tensor dw = {0}, db = {0};
	enum tps_status st = tps_tensor_linear_backward_weight(
		&dw, dy, &m->ref_saved_in, pool, err);
	if (st == TPS_OK && m->spec->bias) {
		st = tps_tensor_sum_rows(&db, dy, err);
	}
	if (st == TPS_OK && dx) {
		st = tps_tensor_linear_backward_input(dx, dy, &w->global, pool,
						      err);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&dw);
		tps_tensor_free(&db);
		return st;
	}
	tps_tensor_move(&w->ref_grad, &dw);
	if (m->spec->bias) {
		tps_tensor_move(&m->params[BIAS].ref_grad, &db);
	}
	tps_tensor_free(&m->ref_saved_in);
	return TPS_OK;
}

/* ---- error bounds (docs/numerics.md, "linear") ------------------------ */

/* One of the matmuls of a linear: c = a W^T (forward), dy W (input) or
 * dy^T x (weight), on pool, on the magnitudes of the operands abs names
 * (TPS_ABS_A, TPS_ABS_B; tensor.h). */
typedef enum tps_status (*matmul_fn)(struct tps_tensor *c,
				     const struct tps_tensor *a,
				     const struct tps_tensor *b, unsigned abs,
				     struct tps_pool *pool,
				     struct tps_error *err);

/* What one matmul's bound is made of: C = op(A, B) (+ a bias row), each
 * element a sum of products. */
struct matmul_bound {
	matmul_fn op;
	/* Roundings in the longest chain of any evaluation (docs/numerics.md:
	 * the terms it adds, each a rounded product). */
	int64_t n;
	double u;
	/* The simulation's values are `scale` times these (the dp-scaled
	 * gradients): integers stay exact while scale op(|A|, |B|) < 2^24. */
	double scale;
	/* Some term is never an integer (partial_split's b / tp): no
	 * element is exact. */
	bool inexact;
	const struct tps_tensor *a, *b, *bias; /* bias NULL: none */
	const struct tps_bound *ea, *eb, *ebias;
};

/* *out = |t| + k e, or |t| when e is all zeros (k e adds nothing). */
static enum tps_status magnitude(struct tps_tensor *out,
				 const struct tps_tensor *t,
				 const struct tps_bound *e, float k,
				 struct tps_error *err)
{
	return tps_bound_magnitude(out, t, tps_bound_is_zero(e) ? NULL : &e->e,
				   k, err);
}

/*
 * The bound of C = op(A, B) + bias (Higham 3.5, with the operands' own
 * bounds):
 *   e_C = op(g |A| + (2 g + 1) e_A, |B| + 2 e_B) + op(|A| + e_A, e_B)
 *         + g (|bias| + 2 e_bias) + e_bias,        g = gamma_n(u)
 * and 0 where every operand is exact (bound 0), every operand an integer
 * and scale (op(|A|, |B|) + |bias|) < 2^24: every partial sum of every
 * order is then an exact integer. On error *out is untouched.
 */
static enum tps_status matmul_bound(const struct matmul_bound *mb,
				    const struct tps_bound_ctx *bc,
				    struct tps_bound *out,
				    struct tps_error *err)
{
	struct tps_pool *pool = bc->pool;
	double g = tps_bound_ctx_gamma(bc, mb->n, mb->u);
	float gf = tps_bound_up(g), g2 = tps_bound_up(2.0 * g + 1.0);
	struct tps_tensor a = {0}, b = {0}, c = {0}, d = {0};
	struct tps_bound e = {0};
	bool exact_in = tps_bound_is_zero(mb->ea) && tps_bound_is_zero(mb->eb) &&
			(!mb->bias || tps_bound_is_zero(mb->ebias));
	bool integral = exact_in && !mb->inexact &&
			tps_tensor_integral(mb->a) &&
			tps_tensor_integral(mb->b) &&
			(!mb->bias || tps_tensor_integral(mb->bias));
	enum tps_status st;
	int64_t n;

	/* |A| and |B| (a weight, mostly) are taken by the matmul itself
	 * where they are plain magnitudes, so |W| is never whole. */
	if (exact_in) {
		/* e_C = g P, P = op(|A|, |B|) + |bias|: 0 where exact. */
		st = mb->op(&e.e, mb->a, mb->b, TPS_ABS_A | TPS_ABS_B, pool,
			    err);
	} else {
		bool exact_b = tps_bound_is_zero(mb->eb);
		st = tps_bound_combine(&a, gf, mb->a, g2,
				       tps_bound_is_zero(mb->ea) ? NULL
								 : &mb->ea->e,
				       err);
		if (st == TPS_OK && !exact_b) {
			st = magnitude(&b, mb->b, mb->eb, 2.0f, err);
		}
		if (st == TPS_OK) {
			st = mb->op(&e.e, &a, exact_b ? mb->b : &b,
				    exact_b ? TPS_ABS_B : 0, pool, err);
		}
	}
	if (st == TPS_OK && !exact_in && !tps_bound_is_zero(mb->eb)) {
		st = magnitude(&c, mb->a, mb->ea, 1.0f, err);
		if (st == TPS_OK) {
			st = mb->op(&d, &c, &mb->eb->e, 0, pool, err);
		}
		if (st == TPS_OK) {
			tps_tensor_add(&e.e, &d);
		}
	}
	n = tps_tensor_numel(&e.e);
	if (st == TPS_OK && mb->bias) {
		/* Rows of the bias's width: the last dim. */
		int64_t width = tps_tensor_numel(mb->bias);
		for (int64_t i = 0; i < n; i++) {
			float v = fabsf(mb->bias->data[i % width]);
			if (!exact_in) {
				float eb = mb->ebias->e.data[i % width];
				v = gf * (v + 2.0f * eb) + eb;
			}
			e.e.data[i] += v;
		}
	}
	for (int64_t i = 0; st == TPS_OK && exact_in && i < n; i++) {
		float p = e.e.data[i];
		e.e.data[i] = integral && mb->scale * (double)p <
						  bc->exact_limit
				      ? 0.0f
				      : tps_bound_up(g * (double)p);
	}
	tps_tensor_free(&a);
	tps_tensor_free(&b);
	tps_tensor_free(&c);
	tps_tensor_free(&d);
	if (st != TPS_OK) {
		tps_bound_free(&e);
		return st;
	}
	/* The sums above: n + 4 roundings of non-negative terms. */
	tps_bound_inflate(&e, mb->n + 4, mb->u);
	*out = e;
	return TPS_OK;
}

/* Whether the simulation adds b / tp on every rank (partial_split over
 * two or more ranks): tp more terms, each rounded by its division, and
 * never an integer. */
static bool split_bias(const struct tps_module *m, const struct tps_bound_ctx *bc)
{
	const struct tps_module_spec *s = m->spec;
	return s->bias && s->style == TPS_STYLE_ROWWISE &&
	       s->bias_mode == TPS_BIAS_PARTIAL_SPLIT && bc->tp > 1;
}

/* y = x W^T + b: n = in_features products, + 1 for the bias (+ tp for
 * partial_split's b / tp, each rounded once before it is added). */
static enum tps_status linear_bound_forward(struct tps_module *m,
					    const struct tps_bound_ctx *bc,
					    const struct tps_tensor *x,
					    const struct tps_bound *ex,
					    struct tps_tensor *y,
					    struct tps_bound *ey,
					    struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	bool split = split_bias(m, bc);
	const struct tps_bound *inputs[3] = {
		ex, &m->params[WEIGHT].ref_bound,
		s->bias ? &m->params[BIAS].ref_bound : NULL};
	const struct tps_bound *none = tps_bound_first_none(inputs, 3);
	struct matmul_bound mb = {tps_tensor_linear_abs,
				  s->in_features +
					  (s->bias ? (split ? bc->tp : 1) : 0),
				  bc->u_acc,
				  1.0,
				  split,
				  x,
				  &m->params[WEIGHT].global,
				  s->bias ? &m->params[BIAS].global : NULL,
				  ex,
				  &m->params[WEIGHT].ref_bound,
				  s->bias ? &m->params[BIAS].ref_bound : NULL};
	struct tps_tensor out = {0};
	struct tps_bound e = {0};
	enum tps_status st = linear_reference_forward(m, bc->pool, x, &out, err);
	if (st == TPS_OK && none) {
		tps_bound_none_like(&e, none);
	} else if (st == TPS_OK) {
		st = matmul_bound(&mb, bc, &e, err);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		return st;
	}
	*y = out;
	*ey = e;
	return TPS_OK;
}

/* db = the sum over rows of dy, n = rows terms:
 *   e_db = sum_rows (g |dy| + (2 g + 1) e_dy)
 * and 0 where dy is exact, integral, and scale sum_rows |dy| < 2^24. */
static enum tps_status rows_bound(const struct tps_bound_ctx *bc,
				  const struct tps_tensor *dy,
				  const struct tps_bound *edy,
				  struct tps_bound *out, struct tps_error *err)
{
	int64_t width = dy->shape.ndim ? dy->shape.dim[dy->shape.ndim - 1] : 1;
	int64_t rows = width ? tps_tensor_numel(dy) / width : 0;
	double g = tps_bound_ctx_gamma(bc, rows, bc->u_acc);
	bool exact_in = tps_bound_is_zero(edy);
	bool integral = exact_in && tps_tensor_integral(dy);
	struct tps_tensor a = {0};
	struct tps_bound e = {0};
	enum tps_status st =
		exact_in ? tps_bound_magnitude(&a, dy, NULL, 0.0f, err)
			 : tps_bound_combine(&a, tps_bound_up(g), dy,
					     tps_bound_up(2.0 * g + 1.0),
					     &edy->e, err);
	if (st == TPS_OK) {
		st = tps_tensor_sum_rows(&e.e, &a, err);
	}
	for (int64_t i = 0; st == TPS_OK && exact_in && i < width; i++) {
		float p = e.e.data[i];
		e.e.data[i] = integral && bc->grad_scale * (double)p <
						  bc->exact_limit
				      ? 0.0f
				      : tps_bound_up(g * (double)p);
	}
	tps_tensor_free(&a);
	if (st != TPS_OK) {
		tps_bound_free(&e);
		return st;
	}
	tps_bound_inflate(&e, rows + 3, bc->u_acc);
	*out = e;
	return TPS_OK;
}

/* dx = dy W (n = out_features), dW = dy^T x and db = sum_rows dy (n = the
 * rows, the batch over every dp rank). */
static enum tps_status linear_bound_backward(struct tps_module *m,
					     const struct tps_bound_ctx *bc,
					     const struct tps_tensor *dy,
					     const struct tps_bound *edy,
					     struct tps_tensor *dx,
					     struct tps_bound *edx,
					     struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	struct tps_param *w = &m->params[WEIGHT];
	struct tps_param *b = s->bias ? &m->params[BIAS] : NULL;
	int64_t rows = s->out_features ? tps_tensor_numel(dy) / s->out_features
				       : 0;
	const struct tps_bound *wgrad_in[2] = {edy, &m->ref_saved_bound};
	const struct tps_bound *dx_in[2] = {edy, &w->ref_bound};
	const struct tps_bound *none;
	struct matmul_bound dw = {tps_tensor_linear_backward_weight_abs,
				  rows,
				  bc->u_acc,
				  bc->grad_scale,
				  false,
				  dy,
				  &m->ref_saved_in,
				  NULL,
				  edy,
				  &m->ref_saved_bound,
				  NULL};
	struct matmul_bound din = {tps_tensor_linear_backward_input_abs,
				   s->out_features,
				   bc->u_acc,
				   bc->grad_scale,
				   false,
				   dy,
				   &w->global,
				   NULL,
				   edy,
				   &w->ref_bound,
				   NULL};
	struct tps_bound ew = {0}, eb = {0}, ed = {0};
	struct tps_tensor d = {0};
	enum tps_status st = TPS_OK;

	none = tps_bound_first_none(wgrad_in, 2);
	if (none) {
		tps_bound_none_like(&ew, none);
	} else {
		st = matmul_bound(&dw, bc, &ew, err);
	}
	if (st == TPS_OK && b && tps_bound_is_none(edy)) {
		tps_bound_none_like(&eb, edy);
	} else if (st == TPS_OK && b) {
		st = rows_bound(bc, dy, edy, &eb, err);
	}
	none = tps_bound_first_none(dx_in, 2);
	if (st == TPS_OK && dx && none) {
		tps_bound_none_like(&ed, none);
	} else if (st == TPS_OK && dx) {
		st = matmul_bound(&din, bc, &ed, err);
	}
	/* The values last: reference_backward frees the saved input. */
	if (st == TPS_OK) {
		st = linear_reference_backward(m, bc->pool, dy, dx ? &d : NULL,
					       err);
	}
	if (st != TPS_OK) {
		tps_bound_free(&ew);
		tps_bound_free(&eb);
		tps_bound_free(&ed);
		tps_tensor_free(&d);
		return st;
	}
	tps_bound_move(&w->ref_grad_bound, &ew);
	if (b) {
		tps_bound_move(&b->ref_grad_bound, &eb);
	}
	if (dx) {
		*dx = d;
		*edx = ed;
	}
	return TPS_OK;
}

static int linear_parameters(const struct tps_module_spec *s, int tp_dim,
			     struct tps_param_spec *out)
{
	int64_t wdims[2] = {s->out_features, s->in_features};
	struct tps_placement w = tps_placement_replicate();
	struct tps_placement b = tps_placement_replicate();
	(void)tp_dim;
	if (s->tie[0]) {
		/* Tied: its weight is the embedding's, which the model hands
		 * it (model.c); it has none of its own, and no bias. */
		return 0;
	}
	if (s->style == TPS_STYLE_COLWISE) {
		w = feature_shard(s, 0);
		b = feature_shard(s, 0);
	} else if (s->style == TPS_STYLE_ROWWISE) {
		w = feature_shard(s, 1);
	}
	/* nn.Linear draws W and b from U(-a, a), a = 1/sqrt(in_features). */
	/* nn.Linear: kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(in), ...),
	 * and the bias U(-1/sqrt(in), 1/sqrt(in)). */
	out[WEIGHT] =
		(struct tps_param_spec){"weight", tps_shape_make(2, wdims),
					s->in_features, TPS_INIT_UNIFORM, w};
	if (!s->bias) {
		return 1;
	}
	out[BIAS] =
		(struct tps_param_spec){"bias", tps_shape_make(1, wdims),
					s->in_features, TPS_INIT_UNIFORM, b};
	return 2;
}

static int64_t linear_memory_estimate(const struct tps_module_spec *s,
				      const struct tps_memory_context *mc)
{
	/* W and b: out * (in + 1) floats, once globally plus every rank's
	 * copy or shard (sharded: world / tp full copies). */
	/* Tied: the embedding's weight, counted there. */
	int64_t w = s->tie[0]
			    ? 0
			    : tps_sat_mul(s->out_features, s->in_features + 1);
	int64_t copies =
		s->style == TPS_STYLE_COLWISE || s->style == TPS_STYLE_ROWWISE
			? mc->world / mc->tp
			: mc->world;
	int64_t bytes = tps_sat_mul(tps_sat_mul(w, copies + 1), 4);
	/* Training: the gradients and each optimizer state, held alike. */
	return mc->training
		       ? tps_sat_mul(bytes, 2 + (int64_t)mc->optimizer_states)
		       : bytes;
}

const struct tps_module_ops tps_linear_ops = {
	.forward = linear_forward,
	.backward = linear_backward,
	.reference_forward = linear_reference_forward,
	.reference_backward = linear_reference_backward,
	.bound_forward = linear_bound_forward,
	.bound_backward = linear_bound_backward,
	.parameters = linear_parameters,
	.memory_estimate = linear_memory_estimate,
};
