/*
 * gated: y = gate(x) * up(x), element by element, the two bodies being the
 * module's descendants (the gate's first, spec->n_first_body of them, then
 * the up's). SwiGLU's w2 input is one: gate = [w1, silu], up = [w3]
 * (swiglu_mlp, config_model.c). The product is tps_dtensor_mul, rank by
 * rank with no collective: both bodies must end in one layout (w1 and w3
 * both colwise: shard(-1)), and the run stops, naming both layouts, when
 * they do not. Backward (docs/transformer.md, "SwiGLU"):
 *
 *   d gate = dy * up,  d up = dy * gate,
 *   dx = d gate(x)/dx + d up(x)/dx
 *
 * the two input gradients summed on each rank before one reduction (a
 * colwise w1's and w3's are partial), as Megatron's fused w1/w3 reduces
 * once. Both bodies read the whole input: a sequence-sharded (or partial)
 * input is brought to replicate once, for the two.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn.h"

static struct tps_module *gate_begin(struct tps_module *m)
{
	return m + 1;
}

static struct tps_module *gate_end(struct tps_module *m)
{
	return m + 1 + m->spec->n_first_body;
}

static struct tps_module *up_end(struct tps_module *m)
{
	return m + 1 + m->spec->n_descendants;
}

/* The last top-level module of [begin, end), whose output the body's is. */
static const char *last_name(struct tps_module *begin, struct tps_module *end)
{
	struct tps_module *last = begin;
	for (struct tps_module *b = begin; b < end; b = tps_module_next(b)) {
		last = b;
	}
	return last->spec->name;
}

/* The product needs its operands of one shape and one layout: the
 * message names the gated's pointer in the config, both bodies' last
 * modules and both layouts. */
static enum tps_status check_operands(const struct tps_nn_context *ctx,
				      struct tps_module *m,
				      const struct tps_dtensor *g,
				      const struct tps_dtensor *u,
				      struct tps_error *err)
{
	const char *name = m->spec->name;
	char a[128], b[128];
	if (!tps_shape_equal(&g->global, &u->global)) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"%s: gate(x) * up(x) needs both bodies' outputs of "
			"one shape, got %s (gate, ending at %s) and %s (up, "
			"ending at %s)",
			name, tps_shape_format(&g->global, a, sizeof a),
			last_name(gate_begin(m), gate_end(m)),
			tps_shape_format(&u->global, b, sizeof b),
			last_name(gate_end(m), up_end(m)));
	}
	for (int i = 0; i < g->mesh->ndim; i++) {
		if (tps_placement_equal(g->placements[i], u->placements[i])) {
			continue;
		}
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"%s: %s: the element-wise product gate(x) * up(x) "
			"needs both operands in one layout, got %s (gate, %s's "
			"output) and %s (up, %s's output) on mesh dim %d "
			"(%s): plan the two bodies alike (swiglu_mlp: w1 and "
			"w3 both colwise)",
			m->spec->plan_pointer, name,
			tps_placement_format(g->placements[i], a, sizeof a),
			last_name(gate_begin(m), gate_end(m)),
			tps_placement_format(u->placements[i], b, sizeof b),
			last_name(gate_end(m), up_end(m)), i,
			ctx->mesh->dim_names[i]);
	}
	return TPS_OK;
}

/* Whether b, a body's first module, is a colwise linear that kept the
 * gathered input whole: what a kept sequence shard replaces. */
static bool reads_gathered(const struct tps_nn_context *ctx,
			   const struct tps_module *b)
{
	return b->spec->type == TPS_MODULE_LINEAR &&
	       b->spec->style == TPS_STYLE_COLWISE && b->saved_in.locals &&
	       b->saved_in.placements[ctx->tp_dim].kind ==
		       TPS_PLACEMENT_REPLICATE;
}

/* One body's forward on its own copy of x. */
static enum tps_status
body_forward(const struct tps_nn_context *ctx, struct tps_module *begin,
	     struct tps_module *end, const struct tps_dtensor *x,
	     struct tps_dtensor *y, struct tps_error *err)
{
	struct tps_dtensor xb = {0};
	enum tps_status st = tps_dtensor_copy(&xb, x, err);
	if (st == TPS_OK) {
		st = tps_nn_forward_seq(ctx, begin, end, &xb, y, err);
	}
	tps_dtensor_free(&xb);
	return st;
}

static enum tps_status gated_forward(const struct tps_nn_context *ctx,
				     struct tps_module *m,
				     struct tps_dtensor *x,
				     struct tps_dtensor *y,
				     struct tps_error *err)
{
	const char *name = m->spec->name;
	char in_name[TPS_NAME_MAX + 8], out_name[TPS_NAME_MAX + 8];
	struct tps_dtensor g = {0}, u = {0}, out = {0}, shard = {0};
	struct tps_placement p = x->placements[ctx->tp_dim];
	enum tps_status st = TPS_OK;

	snprintf(in_name, sizeof in_name, "%s.in", name);
	snprintf(out_name, sizeof out_name, "%s.out", name);
	tps_nn_forward_begin(ctx, m);
	if (ctx->save) {
		tps_layout_chain_start(&m->in_chain, ctx, x);
	}
	/* Sequence shards (or partial sums) would be gathered (reduced) by
	 * each body: once here instead. Feature shards stay for the
	 * bodies, as a residual's do. */
	if (p.kind == TPS_PLACEMENT_PARTIAL ||
	    (p.kind == TPS_PLACEMENT_SHARD &&
	     tps_nn_normalized(p, x->global.ndim).dim != x->global.ndim - 1)) {
		/* A colwise first module of a body keeps the shard in
		 * place of the gathered input (sp_save): kept here once,
		 * gathered again in backward. */
		st = tps_nn_keep_shard(ctx, x, &shard, err);
	}
	if (st == TPS_OK && (p.kind == TPS_PLACEMENT_PARTIAL ||
			     (p.kind == TPS_PLACEMENT_SHARD &&
			      tps_nn_normalized(p, x->global.ndim).dim !=
				      x->global.ndim - 1))) {
		st = tps_nn_to_layout_chained(
			ctx, x, tps_placement_replicate(),
			ctx->save ? &m->in_chain : NULL, name, in_name,
			"the gate and the up read the whole input: one "
			"gather for the two",
			err);
	}
	if (st == TPS_OK) {
		st = body_forward(ctx, gate_begin(m), gate_end(m), x, &g, err);
	}
	if (st == TPS_OK) {
		st = body_forward(ctx, gate_end(m), up_end(m), x, &u, err);
	}
	if (st == TPS_OK) {
		st = check_operands(ctx, m, &g, &u, err);
	}
	if (st == TPS_OK) {
		st = tps_dtensor_mul(&out, &g, &u, err);
		if (st != TPS_OK) {
			tps_error_prefix(err, "%s", name);
		}
	}
	if (st == TPS_OK) {
		st = tps_nn_emit_compute(ctx, name, "mul", out_name,
					 "y = gate(x) * up(x): each rank "
					 "multiplies its local values, no "
					 "communication",
					 &out, 0, err);
	}
	/* Backward needs both operands: d gate = dy * up, d up = dy * gate. */
	if (st == TPS_OK && ctx->save) {
		m->saved_more[0] = g;
		m->saved_more[1] = u;
		memset(&g, 0, sizeof g);
		memset(&u, 0, sizeof u);
	}
	if (st == TPS_OK && shard.locals) {
		bool kept = false;
		struct tps_module *first[2] = {gate_begin(m), gate_end(m)};
		for (int i = 0; i < 2; i++) {
			if (reads_gathered(ctx, first[i])) {
				tps_dtensor_free(&first[i]->saved_in);
				kept = true;
			}
		}
		if (!kept) {
			tps_dtensor_free(&shard);
		}
	}
	tps_dtensor_free(&g);
	tps_dtensor_free(&u);
	st = tps_nn_forward_end(ctx, m, shard.locals ? &shard : NULL, &out, y,
				st);
	tps_dtensor_free(&shard);
	return st;
}

/* The kept shard (m's saved_in) gathered again, once, and a copy given
 * to each body's first module that gave up its gathered input. */
static enum tps_status regather(const struct tps_nn_context *ctx,
				struct tps_module *m, struct tps_error *err)
{
	char in_name[TPS_NAME_MAX + 8];
	struct tps_dtensor gathered = {0};
	struct tps_module *first[2] = {gate_begin(m), gate_end(m)};
	enum tps_status st;
	snprintf(in_name, sizeof in_name, "%s.in", m->spec->name);
	st = tps_nn_regather(ctx, &m->saved_in, m->spec->name, in_name,
			     &gathered, err);
	for (int i = 0; i < 2 && st == TPS_OK; i++) {
		struct tps_module *b = first[i];
		if (b->spec->type == TPS_MODULE_LINEAR &&
		    b->spec->style == TPS_STYLE_COLWISE &&
		    !b->saved_in.locals) {
			st = tps_dtensor_copy(&b->saved_in, &gathered, err);
		}
	}
	tps_dtensor_free(&gathered);
	return st;
}

/* *d = dy * other (d gate or d up), emitted as `tensor`. */
static enum tps_status
operand_grad(const struct tps_nn_context *ctx, const char *name,
	     const char *tensor, const char *note, const struct tps_dtensor *dy,
	     const struct tps_dtensor *other, struct tps_dtensor *d,
	     struct tps_error *err)
{
	enum tps_status st = tps_dtensor_mul(d, dy, other, err);
	if (st != TPS_OK) {
		tps_error_prefix(err, "%s", name);
		return st;
	}
	st = tps_nn_emit_compute(ctx, name, "mul", tensor, note, d, 0, err);
	if (st != TPS_OK) {
		tps_dtensor_free(d);
	}
	return st;
}

static void free_descendants(struct tps_module *m)
{
	for (struct tps_module *d = m + 1; d < up_end(m); d++) {
		tps_module_free_saved(d);
	}
}

static enum tps_status gated_backward(const struct tps_nn_context *ctx,
				      struct tps_module *m,
				      struct tps_dtensor *dy,
				      struct tps_dtensor *dx,
				      struct tps_error *err)
{
	const char *name = m->spec->name;
	char gate_grad[TPS_NAME_MAX + 24], up_grad[TPS_NAME_MAX + 24];
	char in_grad[TPS_NAME_MAX + 16];
	struct tps_dtensor dg = {0}, du = {0}, dxg = {0}, dxu = {0};
	struct tps_nn_sum_job job = {&dxg, &dxu};
	enum tps_status st;

	snprintf(gate_grad, sizeof gate_grad, "%s.gate.out.grad", name);
	snprintf(up_grad, sizeof up_grad, "%s.up.out.grad", name);
	snprintf(in_grad, sizeof in_grad, "%s.in.grad", name);
	st = m->saved_in.locals ? regather(ctx, m, err) : TPS_OK;
	if (st == TPS_OK) {
		st = operand_grad(ctx, name, gate_grad,
				  "d gate = dy * up: each rank's local values",
				  dy, &m->saved_more[1], &dg, err);
	}
	if (st == TPS_OK) {
		st = operand_grad(ctx, name, up_grad,
				  "d up = dy * gate: each rank's local values",
				  dy, &m->saved_more[0], &du, err);
	}
	tps_dtensor_free(dy);
	if (st != TPS_OK) {
		tps_dtensor_free(&dg);
		free_descendants(m);
		tps_module_free_saved(m);
		return st;
	}
	/* The up body ran last: its backward first. Each leaves its input
	 * gradient partial where its first module computed it so. */
	st = tps_nn_backward_seq_partial(ctx, gate_end(m), up_end(m), &du,
					 dx ? &dxu : NULL, err);
	if (st == TPS_OK) {
		st = tps_nn_backward_seq_partial(ctx, gate_begin(m),
						 gate_end(m), &dg,
						 dx ? &dxg : NULL, err);
	} else {
		tps_dtensor_free(&dg);
		free_descendants(m);
	}
	if (st == TPS_OK && dx && !tps_nn_same_layout(&dxg, &dxu)) {
		/* Not both partial (or both alike): each brought to the
		 * gradient layout of the input as the bodies read it. */
		struct tps_layout_chain read = {.n = 1};
		read.tp[0] = m->in_chain.tp[m->in_chain.n - 1];
		st = tps_nn_grad_through(ctx, &dxg, &read, name, in_grad, err);
		if (st == TPS_OK) {
			st = tps_nn_grad_through(ctx, &dxu, &read, name,
						 in_grad, err);
		}
	}
	if (st == TPS_OK && dx) {
		st = tps_dtensor_map(dx, ctx->mesh, &dxg.global, dxg.placements,
				     tps_nn_sum_rank, &job, err);
		if (st == TPS_OK) {
			st = tps_nn_emit_compute(
				ctx, name, "add", in_grad,
				"dx = dx_gate + dx_up on each rank, before "
				"one reduction",
				dx, 0, err);
		}
		if (st == TPS_OK && !m->keep_partial_dx) {
			st = tps_nn_grad_through(ctx, dx, &m->in_chain, name,
						 in_grad, err);
		}
		if (st != TPS_OK) {
			tps_dtensor_free(dx);
		}
	}
	tps_dtensor_free(&dxg);
	tps_dtensor_free(&dxu);
	tps_module_free_saved(m);
	return st;
}

/* ---- the reference ---------------------------------------------------- */

static enum tps_status gated_reference_forward(struct tps_module *m,
					       struct tps_pool *pool,
					       const struct tps_tensor *x,
					       struct tps_tensor *y,
					       struct tps_error *err)
{
	struct tps_tensor g = {0}, u = {0};
	enum tps_status st = tps_nn_reference_forward_seq(
		gate_begin(m), gate_end(m), pool, m->training, x, &g, err);
	if (st == TPS_OK) {
		st = tps_nn_reference_forward_seq(gate_end(m), up_end(m), pool,
						  m->training, x, &u, err);
	}
	if (st == TPS_OK && !tps_shape_equal(&g.shape, &u.shape)) {
		char a[128], b[128];
		st = tps_error_set(
			err, TPS_ERR_SHAPE,
			"%s: gate(x) * up(x) needs both bodies' outputs of "
			"one shape, got %s and %s",
			m->spec->name, tps_shape_format(&g.shape, a, sizeof a),
			tps_shape_format(&u.shape, b, sizeof b));
	}
	if (st == TPS_OK) {
		st = tps_tensor_mul(y, &g, &u, err);
	}
	if (st == TPS_OK && m->training) {
		tps_tensor_free(&m->ref_saved_more[0]);
		tps_tensor_free(&m->ref_saved_more[1]);
		tps_tensor_move(&m->ref_saved_more[0], &g);
		tps_tensor_move(&m->ref_saved_more[1], &u);
	}
	tps_tensor_free(&g);
	tps_tensor_free(&u);
	return st;
}

/* d = dy * other, stored in the grads dtype as the ranks store it. */
static enum tps_status reference_operand_grad(struct tps_module *m,
					      const struct tps_tensor *dy,
					      const struct tps_tensor *other,
					      struct tps_tensor *d,
					      struct tps_error *err)
{
	enum tps_status st = tps_tensor_mul(d, dy, other, err);
	if (st == TPS_OK && d->data) {
		tps_dtype_round_array(d->data, tps_tensor_numel(d),
				      tps_module_dtype(m, TPS_ROLE_GRADS));
	}
	return st;
}

static void free_reference_saved(struct tps_module *m)
{
	tps_tensor_free(&m->ref_saved_in);
	tps_tensor_free(&m->ref_saved_more[0]);
	tps_tensor_free(&m->ref_saved_more[1]);
	tps_bound_free(&m->ref_saved_bound);
	tps_bound_free(&m->ref_saved_more_bound[0]);
	tps_bound_free(&m->ref_saved_more_bound[1]);
}

static enum tps_status gated_reference_backward(struct tps_module *m,
						struct tps_pool *pool,
						const struct tps_tensor *dy,
						struct tps_tensor *dx,
						struct tps_error *err)
{
	struct tps_tensor dg = {0}, du = {0}, dxg = {0}, dxu = {0};
	enum tps_status st =
		reference_operand_grad(m, dy, &m->ref_saved_more[1], &dg, err);
	if (st == TPS_OK) {
		st = reference_operand_grad(m, dy, &m->ref_saved_more[0], &du,
					    err);
	}
	if (st == TPS_OK) {
		st = tps_nn_reference_backward_seq(gate_end(m), up_end(m), pool,
						   &du, dx ? &dxu : NULL, err);
	}
	if (st == TPS_OK) {
		st = tps_nn_reference_backward_seq(gate_begin(m), gate_end(m),
						   pool, &dg, dx ? &dxg : NULL,
						   err);
	}
	if (st == TPS_OK && dx) {
		st = tps_tensor_copy(dx, &dxg, err);
		if (st == TPS_OK) {
			tps_tensor_add(dx, &dxu);
		}
	}
	tps_tensor_free(&dg);
	tps_tensor_free(&du);
	tps_tensor_free(&dxg);
	tps_tensor_free(&dxu);
	free_reference_saved(m);
	return st;
}

/* ---- error bounds (docs/numerics.md, "gated") ------------------------- */

/*
 * *e = the bound of p = fl(a b), a and b the reference's values with
 * bounds ea and eb: |a b - a* b*| <= |a| e_b + |b| e_a + e_a e_b, and
 * the product's rounding, u |a b| (a b exact in double). Either bound
 * "none" gives "none".
 */
static enum tps_status product_bound(double u, const struct tps_tensor *a,
				     const struct tps_bound *ea,
				     const struct tps_tensor *b,
				     const struct tps_bound *eb,
				     struct tps_bound *e, struct tps_error *err)
{
	const struct tps_bound *inputs[2] = {ea, eb};
	const struct tps_bound *none = tps_bound_first_none(inputs, 2);
	int64_t n = tps_tensor_numel(a);
	enum tps_status st;
	if (none) {
		tps_bound_none_like(e, none);
		return TPS_OK;
	}
	st = tps_bound_zero(e, &a->shape, err);
	for (int64_t i = 0; st == TPS_OK && i < n; i++) {
		double x = a->data[i], y = b->data[i];
		double ex = ea->e.data[i], ey = eb->e.data[i];
		double p = fabs(x) * ey + fabs(y) * ex + ex * ey;
		e->e.data[i] = tps_bound_up(p + u * (fabs(x * y) + 2.0 * p));
	}
	return st;
}

static enum tps_status
gated_bound_forward(struct tps_module *m, const struct tps_bound_ctx *bc,
		    const struct tps_tensor *x, const struct tps_bound *ex,
		    struct tps_tensor *y, struct tps_bound *ey,
		    struct tps_error *err)
{
	struct tps_tensor g = {0}, u = {0}, out = {0};
	struct tps_bound eg = {0}, eu = {0}, e = {0};
	enum tps_status st =
		tps_nn_bound_forward_seq(gate_begin(m), gate_end(m), bc,
					 m->training, x, ex, &g, &eg, err);
	if (st == TPS_OK) {
		st = tps_nn_bound_forward_seq(gate_end(m), up_end(m), bc,
					      m->training, x, ex, &u, &eu, err);
	}
	if (st == TPS_OK && !tps_shape_equal(&g.shape, &u.shape)) {
		st = tps_error_set(err, TPS_ERR_SHAPE,
				   "%s: gate(x) * up(x) needs both bodies' "
				   "outputs of one shape",
				   m->spec->name);
	}
	if (st == TPS_OK) {
		st = tps_tensor_mul(&out, &g, &u, err);
	}
	if (st == TPS_OK) {
		st = product_bound(bc->u_act, &g, &eg, &u, &eu, &e, err);
	}
	if (st == TPS_OK && m->training) {
		for (int i = 0; i < 2; i++) {
			tps_tensor_free(&m->ref_saved_more[i]);
			tps_bound_free(&m->ref_saved_more_bound[i]);
		}
		tps_tensor_move(&m->ref_saved_more[0], &g);
		tps_tensor_move(&m->ref_saved_more[1], &u);
		tps_bound_move(&m->ref_saved_more_bound[0], &eg);
		tps_bound_move(&m->ref_saved_more_bound[1], &eu);
	}
	tps_tensor_free(&g);
	tps_tensor_free(&u);
	tps_bound_free(&eg);
	tps_bound_free(&eu);
	if (st != TPS_OK) {
		tps_tensor_free(&out);
		tps_bound_free(&e);
		return st;
	}
	*y = out;
	*ey = e;
	return TPS_OK;
}

/* d = dy * other with its bound, stored in the grads dtype. */
static enum tps_status
bound_operand_grad(struct tps_module *m, const struct tps_bound_ctx *bc,
		   const struct tps_tensor *dy, const struct tps_bound *edy,
		   const struct tps_tensor *other,
		   const struct tps_bound *eother, struct tps_tensor *d,
		   struct tps_bound *ed, struct tps_error *err)
{
	enum tps_status st = tps_tensor_mul(d, dy, other, err);
	if (st == TPS_OK) {
		st = product_bound(bc->u_grad, dy, edy, other, eother, ed, err);
	}
	if (st == TPS_OK) {
		tps_nn_bound_store(d, ed, tps_module_dtype(m, TPS_ROLE_GRADS));
	}
	return st;
}

static enum tps_status
gated_bound_backward(struct tps_module *m, const struct tps_bound_ctx *bc,
		     const struct tps_tensor *dy, const struct tps_bound *edy,
		     struct tps_tensor *dx, struct tps_bound *edx,
		     struct tps_error *err)
{
	struct tps_tensor dg = {0}, du = {0}, dxg = {0}, dxu = {0}, d = {0};
	struct tps_bound edg = {0}, edu = {0}, edxg = {0}, edxu = {0}, e = {0};
	enum tps_status st =
		bound_operand_grad(m, bc, dy, edy, &m->ref_saved_more[1],
				   &m->ref_saved_more_bound[1], &dg, &edg, err);
	if (st == TPS_OK) {
		st = bound_operand_grad(m, bc, dy, edy, &m->ref_saved_more[0],
					&m->ref_saved_more_bound[0], &du, &edu,
					err);
	}
	if (st == TPS_OK) {
		st = tps_nn_bound_backward_seq(gate_end(m), up_end(m), bc, &du,
					       &edu, dx ? &dxu : NULL, &edxu,
					       err);
	}
	if (st == TPS_OK) {
		st = tps_nn_bound_backward_seq(gate_begin(m), gate_end(m), bc,
					       &dg, &edg, dx ? &dxg : NULL,
					       &edxg, err);
	}
	if (st == TPS_OK && dx) {
		st = tps_tensor_copy(&d, &dxg, err);
		if (st == TPS_OK) {
			tps_tensor_add(&d, &dxu);
			st = tps_nn_sum_bound(bc->u_grad, &d, &edxg, &edxu, &e,
					      err);
		}
	}
	tps_tensor_free(&dg);
	tps_tensor_free(&du);
	tps_tensor_free(&dxg);
	tps_tensor_free(&dxu);
	tps_bound_free(&edg);
	tps_bound_free(&edu);
	tps_bound_free(&edxg);
	tps_bound_free(&edxu);
	free_reference_saved(m);
	if (st != TPS_OK) {
		tps_tensor_free(&d);
		tps_bound_free(&e);
		return st;
	}
	if (dx) {
		*dx = d;
		*edx = e;
	}
	return TPS_OK;
}

const struct tps_module_ops tps_gated_ops = {
	.forward = gated_forward,
	.backward = gated_backward,
	.reference_forward = gated_reference_forward,
	.reference_backward = gated_reference_backward,
	.bound_forward = gated_bound_forward,
	.bound_backward = gated_bound_backward,
	/* the bodies' modules have their own */
	.parameters = tps_nn_no_parameters,
	.memory_estimate = tps_nn_no_memory,
};
