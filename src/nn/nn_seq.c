/*
 * Sequences of modules (nn.h): the model's list and a residual's body are
 * both a range [begin, end) of the pre-order module array. Forward runs the
 * top-level modules in order; backward runs them last first, each getting
 * an input gradient only if something before it trains or the sequence's
 * own input wants one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_type.h"
#include "nn.h"

struct tps_module *tps_module_next(struct tps_module *m)
{
	return m + 1 + m->spec->n_descendants;
}

bool tps_module_trains(const struct tps_module *m)
{
	for (int i = 0; i <= m->spec->n_descendants; i++) {
		if (m[i].n_params > 0) {
			return true;
		}
	}
	return false;
}

/* Frees what every module of [begin, end) (descendants too) saved. */
static void free_saved(struct tps_module *begin, struct tps_module *end)
{
	for (struct tps_module *m = begin; m < end; m++) {
		tps_module_free_saved(m);
	}
}

/* The index of the first module of list[0..n) that trains, or n. */
static int first_trainer_of(struct tps_module **list, int n)
{
	int i = 0;
	while (i < n && !tps_module_trains(list[i])) {
		i++;
	}
	return i;
}

/* The top-level modules of [begin, end), in order, into a new array. */
static struct tps_module **top_level(struct tps_module *begin,
				     struct tps_module *end, int *n)
{
	struct tps_module **list;
	int k = 0;
	for (struct tps_module *m = begin; m < end; m = tps_module_next(m)) {
		k++;
	}
	list = malloc((size_t)(k > 0 ? k : 1) * sizeof *list);
	*n = k;
	k = 0;
	for (struct tps_module *m = begin; list && m < end;
	     m = tps_module_next(m)) {
		list[k++] = m;
	}
	return list;
}

/*
 * prepare_input (before m's forward, on its input) or prepare_output (after
 * it, on its output): x must arrive in the declared layout (PyTorch's
 * input_layouts: a DTensor in another is an error) and is brought to the
 * desired one, the steps kept in m->prep_chain for backward.
 */
static enum tps_status prepare(const struct tps_nn_context *ctx,
			       struct tps_module *m, struct tps_dtensor *x,
			       bool input, struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	int ndim = x->global.ndim;
	struct tps_placement expect =
		tps_nn_normalized(input ? s->input : s->output, ndim);
	struct tps_placement desired =
		input ? s->desired_input : s->desired_output;
	char name[TPS_NAME_MAX + 8], a[32], b[32];
	if (!tps_placement_equal(x->placements[ctx->tp_dim], expect)) {
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"%s: %s expects %s's %s %s on tp, and it arrives %s",
			s->plan_pointer, tps_style_names[s->style], s->name,
			input ? "input" : "output",
			tps_placement_format(expect, a, sizeof a),
			tps_placement_format(x->placements[ctx->tp_dim], b,
					     sizeof b));
	}
	snprintf(name, sizeof name, "%s.%s", s->name, input ? "in" : "out");
	if (ctx->save) {
		tps_layout_chain_start(&m->prep_chain, ctx, x);
	}
	return tps_nn_to_layout_chained(
		ctx, x, desired, ctx->save ? &m->prep_chain : NULL, s->name,
		name,
		input ? "PrepareModuleInput: the input brought to the layout "
			"the module wants"
		      : "PrepareModuleOutput: the output brought to the "
			"layout the next module wants",
		err);
}

enum tps_status tps_nn_forward_seq(const struct tps_nn_context *ctx,
				   struct tps_module *begin,
				   struct tps_module *end,
				   struct tps_dtensor *x, struct tps_dtensor *y,
				   struct tps_error *err)
{
	struct tps_dtensor cur = *x;
	enum tps_status st = TPS_OK;
	memset(x, 0, sizeof *x);
	for (struct tps_module *m = begin; m < end && st == TPS_OK;
	     m = tps_module_next(m)) {
		struct tps_dtensor out = {0};
		if (m->spec->style == TPS_STYLE_PREPARE_INPUT) {
			st = prepare(ctx, m, &cur, true, err);
		}
		if (st == TPS_OK) {
			st = tps_nn_module_forward(ctx, m, &cur, &out, err);
		}
		if (st == TPS_OK) {
			tps_dtensor_free(&cur);
			cur = out;
		}
		if (st == TPS_OK &&
		    m->spec->style == TPS_STYLE_PREPARE_OUTPUT) {
			st = prepare(ctx, m, &cur, false, err);
		}
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&cur);
		return st;
	}
	*y = cur;
	return TPS_OK;
}

/* m's backward, with its prepare_input or prepare_output walked back. */
static enum tps_status backward_one(const struct tps_nn_context *ctx,
				    struct tps_module *m,
				    struct tps_dtensor *dy,
				    struct tps_dtensor *dx, bool keep_partial,
				    struct tps_error *err)
{
	const struct tps_module_spec *s = m->spec;
	char name[TPS_NAME_MAX + 16];
	enum tps_status st = TPS_OK;
	if (s->style == TPS_STYLE_PREPARE_OUTPUT) {
		snprintf(name, sizeof name, "%s.out.grad", s->name);
		st = tps_nn_grad_through(ctx, dy, &m->prep_chain, s->name, name,
					 err);
		if (st != TPS_OK) {
			tps_dtensor_free(dy);
			tps_module_free_saved(m);
			return st;
		}
	}
	/* Under prepare_input, a partial input gradient is reduced by the
	 * prepared layouts' walk, once (a reduce_scatter back into sequence
	 * shards, as PyTorch's autograd does), not first to replicate. */
	m->keep_partial_dx =
		keep_partial || s->style == TPS_STYLE_PREPARE_INPUT;
	st = tps_nn_module_backward(ctx, m, dy, dx, err);
	m->keep_partial_dx = false;
	if (st == TPS_OK && dx && s->style == TPS_STYLE_PREPARE_INPUT) {
		snprintf(name, sizeof name, "%s.in.grad", s->name);
		st = tps_nn_grad_through(ctx, dx, &m->prep_chain, s->name, name,
					 err);
		if (st != TPS_OK) {
			tps_dtensor_free(dx);
		}
	}
	return st;
}

static enum tps_status
backward_seq(const struct tps_nn_context *ctx, struct tps_module *begin,
	     struct tps_module *end, struct tps_dtensor *dy,
	     struct tps_dtensor *dx, bool keep_partial, struct tps_error *err)
{
	struct tps_dtensor g = *dy;
	int n, i, first_trainer;
	struct tps_module **list = top_level(begin, end, &n);
	enum tps_status st = TPS_OK;

	memset(dy, 0, sizeof *dy);
	if (!list) {
		tps_dtensor_free(&g);
		free_saved(begin, end);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	first_trainer = first_trainer_of(list, n);
	for (i = n - 1; i >= 0 && st == TPS_OK; i--) {
		struct tps_dtensor d = {0};
		/* The input gradient is wanted when the sequence's is, or
		 * when a module before this one trains. */
		bool want = dx != NULL || first_trainer < i;
		if (!want && first_trainer != i) {
			break; /* nothing before it trains */
		}
		st = backward_one(ctx, list[i], &g, want ? &d : NULL,
				  keep_partial && i == 0, err);
		g = d;
	}
	/* Whatever did not run backward still holds its saved input. */
	free_saved(begin, i >= 0 ? tps_module_next(list[i]) : begin);
	free(list);
	if (st == TPS_OK && dx) {
		*dx = g;
	} else {
		tps_dtensor_free(&g);
	}
	return st;
}

enum tps_status
tps_nn_backward_seq(const struct tps_nn_context *ctx, struct tps_module *begin,
		    struct tps_module *end, struct tps_dtensor *dy,
		    struct tps_dtensor *dx, struct tps_error *err)
{
	return backward_seq(ctx, begin, end, dy, dx, false, err);
}

enum tps_status tps_nn_backward_seq_partial(const struct tps_nn_context *ctx,
					    struct tps_module *begin,
					    struct tps_module *end,
					    struct tps_dtensor *dy,
					    struct tps_dtensor *dx,
					    struct tps_error *err)
{
	return backward_seq(ctx, begin, end, dy, dx, true, err);
}

enum tps_dtype tps_module_dtype(const struct tps_module *m,
				enum tps_dtype_role r)
{
	return m->dtypes ? m->dtypes->of[r] : TPS_DTYPE_F32;
}

static void round_tensor(struct tps_tensor *t, enum tps_dtype d)
{
	if (t->data) {
		tps_dtype_round_array(t->data, tps_tensor_numel(t), d);
	}
}

enum tps_status tps_nn_reference_forward(struct tps_module *m,
					 struct tps_pool *pool,
					 const struct tps_tensor *x,
					 struct tps_tensor *y,
					 struct tps_error *err)
{
	enum tps_status st = m->ops->reference_forward(m, pool, x, y, err);
	if (st == TPS_OK) {
		round_tensor(y, tps_module_dtype(m, TPS_ROLE_ACTIVATIONS));
	}
	return st;
}

enum tps_status tps_nn_reference_backward(struct tps_module *m,
					  struct tps_pool *pool,
					  const struct tps_tensor *dy,
					  struct tps_tensor *dx,
					  struct tps_error *err)
{
	enum tps_dtype g = tps_module_dtype(m, TPS_ROLE_GRADS);
	enum tps_status st = m->ops->reference_backward(m, pool, dy, dx, err);
	if (st == TPS_OK && dx) {
		round_tensor(dx, g);
	}
	for (int i = 0; st == TPS_OK && i < m->n_params; i++) {
		round_tensor(&m->params[i].ref_grad, g);
	}
	return st;
}

enum tps_status tps_nn_reference_forward_seq(struct tps_module *begin,
					     struct tps_module *end,
					     struct tps_pool *pool, bool save,
					     const struct tps_tensor *x,
					     struct tps_tensor *y,
					     struct tps_error *err)
{
	struct tps_tensor cur = {0}, out = {0};
	enum tps_status st = tps_tensor_copy(&cur, x, err);
	for (struct tps_module *m = begin; m < end && st == TPS_OK;
	     m = tps_module_next(m)) {
		st = tps_nn_reference_forward(m, pool, &cur, &out, err);
		/* Every module's backward needs its input: keep it. */
		if (st == TPS_OK && save) {
			tps_tensor_move(&m->ref_saved_in, &cur);
		}
		if (st == TPS_OK) {
			tps_tensor_move(&cur, &out);
		}
	}
	if (st != TPS_OK) {
		tps_tensor_free(&cur);
		return st;
	}
	*y = cur;
	return TPS_OK;
}

enum tps_status tps_nn_reference_backward_seq(struct tps_module *begin,
					      struct tps_module *end,
					      struct tps_pool *pool,
					      const struct tps_tensor *dy,
					      struct tps_tensor *dx,
					      struct tps_error *err)
{
	struct tps_tensor g = {0};
	int n, i, first_trainer;
	struct tps_module **list = top_level(begin, end, &n);
	enum tps_status st =
		list ? tps_tensor_copy(&g, dy, err)
		     : tps_error_set(err, TPS_ERR_NOMEM, "out of memory");

	first_trainer = list ? first_trainer_of(list, n) : 0;
	for (i = n - 1; i >= 0 && st == TPS_OK; i--) {
		struct tps_tensor d = {0};
		/* The input gradient is wanted when the sequence's is, or
		 * when a module before this one trains. */
		bool want = dx != NULL || first_trainer < i;
		if (!want && first_trainer != i) {
			break;
		}
		st = tps_nn_reference_backward(list[i], pool, &g,
					       want ? &d : NULL, err);
		tps_tensor_move(&g, &d);
	}
	for (struct tps_module *m = begin;
	     list && m < (i >= 0 ? tps_module_next(list[i]) : begin); m++) {
		tps_tensor_free(&m->ref_saved_in);
	}
	free(list);
	if (st == TPS_OK && dx) {
		tps_tensor_move(dx, &g);
	}
	tps_tensor_free(&g);
	return st;
}

/* ---- the bound pass ---------------------------------------------------- */

enum tps_status tps_bound_emit(const struct tps_bound_ctx *bc,
			       const char *tensor,
			       const struct tps_tensor *value,
			       const struct tps_bound *bound,
			       struct tps_error *err)
{
	struct tps_bound_event ev = {bc->step, bc->phase, tensor, value,
				     bound};
	if (!bc->sink.emit) {
		return TPS_OK;
	}
	return bc->sink.emit(bc->sink.ctx, &ev, err);
}

double tps_bound_ctx_gamma(const struct tps_bound_ctx *bc, int64_t n,
			   double u)
{
	double g = tps_bound_gamma(n, u);
	if (bc->narrow == 0.0) {
		return g;
	}
	return (double)tps_bound_up((1.0 + g) * (1.0 + bc->narrow) - 1.0);
}

/*
 * nn.h. t stored in dtype d (float32: already): every value rounded to d
 * (the bytes tps_nn_reference_forward and _backward make), and its bound
 * e gains the rounding where e > 0: an evaluation z within e of the
 * center stores fl(z), |fl(z) - z| <= u |z| <= u (|fl(t)| / (1 - u) +
 * 2 e). Where e = 0 every evaluation rounds the same float alike.
 */
void tps_nn_bound_store(struct tps_tensor *t, struct tps_bound *e,
			enum tps_dtype d)
{
	int64_t n = tps_tensor_numel(t);
	double u = tps_dtype_unit_roundoff(d);
	if (d == TPS_DTYPE_F32 || !t->data) {
		return;
	}
	tps_dtype_round_array(t->data, n, d);
	if (tps_bound_is_none(e) || !e->e.data) {
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		double v = e->e.data[i];
		if (v > 0.0) {
			e->e.data[i] = tps_bound_up(
				v + u * (fabs(t->data[i]) / (1.0 - u) +
					 2.0 * v));
		}
	}
}

/* The reason a type without rules gives: "<name>: <type> has no
 * error-bound rule". */
static void no_rule(struct tps_bound *b, const struct tps_module *m)
{
	tps_bound_set_none(b, "%s: %s has no error-bound rule", m->spec->name,
			   tps_module_types[m->spec->type].name);
}

/* m's forward with its bound: its rule, or the reference's op and no
 * bound. */
static enum tps_status bound_forward_one(struct tps_module *m,
					 const struct tps_bound_ctx *bc,
					 const struct tps_tensor *x,
					 const struct tps_bound *ex,
					 struct tps_tensor *y,
					 struct tps_bound *ey,
					 struct tps_error *err)
{
	enum tps_status st;
	if (m->ops->bound_forward) {
		st = m->ops->bound_forward(m, bc, x, ex, y, ey, err);
	} else {
		st = m->ops->reference_forward(m, bc->pool, x, y, err);
		if (st == TPS_OK) {
			no_rule(ey, m);
		}
	}
	if (st == TPS_OK) {
		tps_nn_bound_store(y, ey, tps_module_dtype(m, TPS_ROLE_ACTIVATIONS));
	}
	return st;
}

enum tps_status tps_nn_bound_forward_seq(struct tps_module *begin,
					 struct tps_module *end,
					 const struct tps_bound_ctx *bc,
					 bool save, const struct tps_tensor *x,
					 const struct tps_bound *ex,
					 struct tps_tensor *y,
					 struct tps_bound *ey,
					 struct tps_error *err)
{
	struct tps_tensor cur = {0}, out = {0};
	struct tps_bound ecur = {0}, eout = {0};
	char name[TPS_NAME_MAX + 8];
	enum tps_status st = tps_tensor_copy(&cur, x, err);
	if (st == TPS_OK) {
		st = tps_bound_copy(&ecur, ex, err);
	}
	for (struct tps_module *m = begin; m < end && st == TPS_OK;
	     m = tps_module_next(m)) {
		/* "<m>.in": the input the ranks' layout events redistribute
		 * (tpsim diff compares those too). */
		snprintf(name, sizeof name, "%s.in", m->spec->name);
		st = tps_bound_emit(bc, name, &cur, &ecur, err);
		if (st != TPS_OK) {
			break;
		}
		st = bound_forward_one(m, bc, &cur, &ecur, &out, &eout, err);
		if (st == TPS_OK) {
			snprintf(name, sizeof name, "%s.out", m->spec->name);
			tps_bound_settle(&eout, name);
			st = tps_bound_emit(bc, name, &out, &eout, err);
		}
		/* Every module's backward needs its input: keep it. */
		if (st == TPS_OK && save) {
			tps_tensor_move(&m->ref_saved_in, &cur);
			tps_bound_move(&m->ref_saved_bound, &ecur);
		}
		tps_tensor_move(&cur, &out);
		tps_bound_move(&ecur, &eout);
	}
	if (st != TPS_OK) {
		tps_tensor_free(&cur);
		tps_bound_free(&ecur);
		return st;
	}
	*y = cur;
	*ey = ecur;
	return TPS_OK;
}

/* m's backward with its bounds: its rule, or the reference's op and no
 * bound for dx and m's parameter gradients. */
static enum tps_status bound_backward_one(struct tps_module *m,
					  const struct tps_bound_ctx *bc,
					  const struct tps_tensor *dy,
					  const struct tps_bound *edy,
					  struct tps_tensor *dx,
					  struct tps_bound *edx,
					  struct tps_error *err)
{
	enum tps_status st;
	char name[TPS_NAME_MAX + 16];
	if (m->ops->bound_backward) {
		st = m->ops->bound_backward(m, bc, dy, edy, dx, edx, err);
	} else {
		st = m->ops->reference_backward(m, bc->pool, dy, dx, err);
		for (int i = 0; st == TPS_OK && i <= m->spec->n_descendants;
		     i++) {
			for (int k = 0; k < m[i].n_params; k++) {
				no_rule(&m[i].params[k].ref_grad_bound, m);
			}
		}
		if (st == TPS_OK && dx) {
			no_rule(edx, m);
		}
	}
	for (int k = 0; st == TPS_OK && k < m->n_params; k++) {
		tps_nn_bound_store(&m->params[k].ref_grad,
			    &m->params[k].ref_grad_bound,
			    tps_module_dtype(m, TPS_ROLE_GRADS));
	}
	if (st == TPS_OK && dx) {
		tps_nn_bound_store(dx, edx, tps_module_dtype(m, TPS_ROLE_GRADS));
	}
	for (int k = 0; st == TPS_OK && k < m->n_params; k++) {
		struct tps_param *p = &m->params[k];
		snprintf(name, sizeof name, "%s.grad", p->name);
		tps_bound_settle(&p->ref_grad_bound, name);
		st = tps_bound_emit(bc, name, &p->ref_grad, &p->ref_grad_bound,
				    err);
	}
	if (st == TPS_OK && dx) {
		snprintf(name, sizeof name, "%s.in.grad", m->spec->name);
		tps_bound_settle(edx, name);
		st = tps_bound_emit(bc, name, dx, edx, err);
	}
	tps_bound_free(&m->ref_saved_bound);
	return st;
}

enum tps_status tps_nn_bound_backward_seq(struct tps_module *begin,
					  struct tps_module *end,
					  const struct tps_bound_ctx *bc,
					  const struct tps_tensor *dy,
					  const struct tps_bound *edy,
					  struct tps_tensor *dx,
					  struct tps_bound *edx,
					  struct tps_error *err)
{
	struct tps_tensor g = {0};
	struct tps_bound eg = {0};
	int n, i, first_trainer;
	struct tps_module **list = top_level(begin, end, &n);
	enum tps_status st =
		list ? tps_tensor_copy(&g, dy, err)
		     : tps_error_set(err, TPS_ERR_NOMEM, "out of memory");

	if (st == TPS_OK) {
		st = tps_bound_copy(&eg, edy, err);
	}
	first_trainer = list ? first_trainer_of(list, n) : 0;
	for (i = n - 1; i >= 0 && st == TPS_OK; i--) {
		struct tps_tensor d = {0};
		struct tps_bound ed = {0};
		/* The input gradient is wanted when the sequence's is, or
		 * when a module before this one trains. */
		bool want = dx != NULL || first_trainer < i;
		if (!want && first_trainer != i) {
			break;
		}
		st = bound_backward_one(list[i], bc, &g, &eg,
					want ? &d : NULL, &ed, err);
		tps_tensor_move(&g, &d);
		tps_bound_move(&eg, &ed);
	}
	for (struct tps_module *m = begin;
	     list && m < (i >= 0 ? tps_module_next(list[i]) : begin); m++) {
		tps_tensor_free(&m->ref_saved_in);
		tps_bound_free(&m->ref_saved_bound);
	}
	free(list);
	if (st == TPS_OK && dx) {
		tps_tensor_move(dx, &g);
		tps_bound_move(edx, &eg);
	}
	tps_tensor_free(&g);
	tps_bound_free(&eg);
	return st;
}

enum tps_status tps_nn_sum_bound(double u, const struct tps_tensor *sum,
				 const struct tps_bound *ea,
				 const struct tps_bound *eb, struct tps_bound *e,
				 struct tps_error *err)
{
	const struct tps_bound *inputs[2] = {ea, eb};
	const struct tps_bound *none = tps_bound_first_none(inputs, 2);
	int64_t n = tps_tensor_numel(sum);
	enum tps_status st;
	if (none) {
		tps_bound_none_like(e, none);
		return TPS_OK;
	}
	st = tps_bound_zero(e, &sum->shape, err);
	for (int64_t i = 0; st == TPS_OK && i < n; i++) {
		double p = (double)ea->e.data[i] + (double)eb->e.data[i];
		e->e.data[i] =
			p > 0.0 ? tps_bound_up(p + u * (fabs(sum->data[i]) +
							2.0 * p))
				: 0.0f;
	}
	return st;
}
