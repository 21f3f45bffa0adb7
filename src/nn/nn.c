/* What every module uses: events, layouts. */
#include "nn.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tps_dtype tps_nn_store_dtype(const struct tps_nn_context *ctx)
{
	switch (ctx->phase) {
	case TPS_PHASE_FORWARD: return ctx->dtypes.of[TPS_ROLE_ACTIVATIONS];
	case TPS_PHASE_BACKWARD: return ctx->dtypes.of[TPS_ROLE_GRADS];
	case TPS_PHASE_SETUP:
	case TPS_PHASE_OPTIMIZER: break;
	}
	return ctx->dtypes.of[TPS_ROLE_PARAMS];
}

struct tps_comm_dtypes tps_nn_comm_dtypes(const struct tps_nn_context *ctx)
{
	struct tps_comm_dtypes dt = {ctx->dtypes.of[TPS_ROLE_REDUCE],
				     tps_nn_store_dtype(ctx)};
	return dt;
}

/* Passes a recomputed forward's events on to the run's sink, marked. */
static enum tps_status mark_recompute(void *opaque, const struct tps_event *ev,
				      struct tps_error *err)
{
	const struct tps_event_sink *sink = opaque;
	struct tps_event marked = *ev;
	marked.recompute = true;
	return tps_event_emit(*sink, &marked, err);
}

struct tps_nn_context tps_nn_recompute_context(const struct tps_nn_context *ctx)
{
	struct tps_nn_context rc = *ctx;
	rc.save = true;
	rc.sink = (struct tps_event_sink){mark_recompute, (void *)&ctx->sink};
	rc.dtypes.of[TPS_ROLE_GRADS] = ctx->dtypes.of[TPS_ROLE_ACTIVATIONS];
	return rc;
}

void tps_nn_round(struct tps_dtensor *v, enum tps_dtype d)
{
	if (d == TPS_DTYPE_F32 || !v->locals) {
		return;
	}
	for (int r = 0; r < v->mesh->world_size; r++) {
		struct tps_tensor *t = &v->locals[r];
		if (t->data) {
			tps_dtype_round_array(t->data, tps_tensor_numel(t), d);
		}
	}
}

static enum tps_status emit(const struct tps_nn_context *ctx,
			    struct tps_event *ev, struct tps_error *err)
{
	ev->step = ctx->step;
	ev->phase = ctx->phase;
	ev->dtype = tps_nn_store_dtype(ctx);
	return tps_event_emit(ctx->sink, ev, err);
}

enum tps_status tps_nn_emit_compute(const struct tps_nn_context *ctx,
				    const char *module, const char *op,
				    const char *tensor, const char *note,
				    struct tps_dtensor *value, int64_t flops,
				    struct tps_error *err)
{
	struct tps_event ev = {0};
	tps_nn_round(value, tps_nn_store_dtype(ctx));
	ev.module = module;
	ev.kind = TPS_EVENT_COMPUTE;
	ev.op = op;
	ev.tensor = tensor;
	ev.flops = flops;
	ev.note = note;
	ev.value = value;
	return emit(ctx, &ev, err);
}

enum tps_status tps_nn_emit_mistaken_event(const struct tps_nn_context *ctx,
					   struct tps_event *ev,
					   struct tps_error *err)
{
	ev->mistake = tps_mistake_names[ctx->mistake];
	return emit(ctx, ev, err);
}

enum tps_status tps_nn_emit_mistaken_compute(const struct tps_nn_context *ctx,
					     const char *module, const char *op,
					     const char *tensor,
					     const char *note,
					     struct tps_dtensor *value,
					     struct tps_error *err)
{
	struct tps_event ev = {0};
	tps_nn_round(value, tps_nn_store_dtype(ctx));
	ev.module = module;
	ev.kind = TPS_EVENT_COMPUTE;
	ev.op = op;
	ev.tensor = tensor;
	ev.note = note;
	ev.value = value;
	return tps_nn_emit_mistaken_event(ctx, &ev, err);
}

struct layout_observer {
	const struct tps_nn_context *ctx;
	const char *module, *tensor, *note;
	bool sink_failed; /* the sink's message is complete: no prefix */
};

/* Turns each redistribution step into one event. */
static enum tps_status on_step(void *opaque,
			       const struct tps_redistribute_step *s,
			       const struct tps_dtensor *dt,
			       struct tps_error *err)
{
	struct layout_observer *o = opaque;
	struct tps_event ev = {0};
	bool split = s->kind == TPS_REDISTRIBUTE_SPLIT;
	enum tps_status st;
	ev.module = o->module;
	ev.kind = split ? TPS_EVENT_LAYOUT : TPS_EVENT_COLLECTIVE;
	ev.op = split ? "split" : tps_comm_op_name(s->report.op);
	ev.tensor = o->tensor;
	ev.mask = 1u << s->mesh_dim;
	ev.bytes_per_rank = split ? 0 : s->report.bytes_per_rank;
	ev.before = &s->before;
	ev.note = o->note;
	ev.value = dt;
	st = emit(o->ctx, &ev, err);
	o->sink_failed = st != TPS_OK;
	return st;
}

struct tps_placement tps_nn_normalized(struct tps_placement p, int ndim)
{
	if (p.kind == TPS_PLACEMENT_SHARD) {
		p.dim = tps_dim_normalize(p.dim, ndim);
	}
	return p;
}

enum tps_status tps_nn_redistribute(const struct tps_nn_context *ctx,
				    struct tps_dtensor *x,
				    const struct tps_placement *target,
				    const char *module, const char *tensor,
				    const char *note, struct tps_error *err)
{
	struct layout_observer o = {ctx, module, tensor, note, false};
	enum tps_status st = tps_dtensor_redistribute(
		x, target, tps_nn_comm_dtypes(ctx), on_step, &o, err);
	/* dtensor's own messages lack the place; the sink's name it. The
	 * model output's module is "output" too: named once. */
	if (st != TPS_OK && !o.sink_failed) {
		if (strcmp(module, tensor) == 0) {
			tps_error_prefix(err, "%s", tensor);
		} else {
			tps_error_prefix(err, "%s: %s", module, tensor);
		}
	}
	return st;
}

void tps_module_free_saved(struct tps_module *m)
{
	tps_dtensor_free(&m->saved_in);
	tps_tensor_free(&m->ref_saved_in);
	tps_bound_free(&m->ref_saved_bound);
	for (int i = 0; i < TPS_MODULE_SAVED_MORE; i++) {
		tps_dtensor_free(&m->saved_more[i]);
	}
	for (int i = 0; i < 3; i++) {
		tps_tensor_free(&m->ref_saved_more[i]);
		tps_bound_free(&m->ref_saved_more_bound[i]);
	}
	m->in_chain.n = 0;
	m->out_chain.n = 0;
	m->prep_chain.n = 0;
}

/* Bytes of rank r's part of t at size bytes an element (0: act). */
static int64_t held(const struct tps_dtensor *t, int r, int size, int act)
{
	return t->locals ? tps_tensor_numel(&t->locals[r]) * (size ? size : act)
			 : 0;
}

int64_t tps_module_saved_bytes(const struct tps_module *m,
			       const struct tps_dtypes *dt, int r)
{
	int act = tps_dtype_size(dt->of[TPS_ROLE_ACTIVATIONS]);
	int64_t bytes = held(&m->saved_in, r, m->ops->saved_in_size, act);
	for (int k = 0; k < TPS_MODULE_SAVED_MORE; k++) {
		bytes += held(&m->saved_more[k], r, m->ops->saved_more_size[k],
			      act);
	}
	return bytes;
}

void tps_nn_forward_begin(const struct tps_nn_context *ctx,
			  struct tps_module *m)
{
	if (ctx->save) {
		tps_module_free_saved(m);
	}
}

enum tps_status tps_nn_forward_end(const struct tps_nn_context *ctx,
				   struct tps_module *m, struct tps_dtensor *x,
				   struct tps_dtensor *out,
				   struct tps_dtensor *y, enum tps_status st)
{
	if (st != TPS_OK) {
		/* Its descendants ran inside it: what they saved is of no
		 * use either. */
		tps_dtensor_free(out);
		for (struct tps_module *d = m; d < tps_module_next(m); d++) {
			tps_module_free_saved(d);
		}
		return st;
	}
	if (ctx->save && x) {
		tps_dtensor_free(&m->saved_in);
		m->saved_in = *x;
		memset(x, 0, sizeof *x);
	}
	*y = *out;
	memset(out, 0, sizeof *out);
	return TPS_OK;
}

enum tps_status tps_nn_keep_shard(const struct tps_nn_context *ctx,
				  const struct tps_dtensor *x,
				  struct tps_dtensor *shard,
				  struct tps_error *err)
{
	struct tps_placement p = x->placements[ctx->tp_dim];
	memset(shard, 0, sizeof *shard);
	if (!ctx->save || ctx->sp_save != TPS_SP_SAVE_SHARD ||
	    ctx->mesh->shape[ctx->tp_dim] == 1 ||
	    p.kind != TPS_PLACEMENT_SHARD ||
	    tps_nn_normalized(p, x->global.ndim).dim == x->global.ndim - 1) {
		return TPS_OK;
	}
	return tps_dtensor_copy(shard, x, err);
}

enum tps_status tps_nn_regather(const struct tps_nn_context *ctx,
				const struct tps_dtensor *shard,
				const char *module, const char *tensor,
				struct tps_dtensor *out, struct tps_error *err)
{
	/* An activation, not a gradient: recorded in its own dtype. */
	struct tps_nn_context c = *ctx;
	struct tps_dtensor g = {0};
	enum tps_status st;
	c.dtypes.of[TPS_ROLE_GRADS] = ctx->dtypes.of[TPS_ROLE_ACTIVATIONS];
	st = tps_dtensor_copy(&g, shard, err);
	if (st == TPS_OK) {
		st = tps_nn_to_layout(&c, &g, tps_placement_replicate(), module,
				      tensor,
				      "the saved sequence shard all-gathered "
				      "again for backward (Megatron's sequence "
				      "parallel keeps the shard, not the "
				      "gathered input)",
				      err);
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&g);
		return st;
	}
	*out = g;
	return TPS_OK;
}

void tps_layout_chain_start(struct tps_layout_chain *chain,
			    const struct tps_nn_context *ctx,
			    const struct tps_dtensor *x)
{
	chain->n = 1;
	chain->tp[0] = x->placements[ctx->tp_dim];
}

struct tps_placement tps_nn_grad_layout(struct tps_placement p)
{
	return p.kind == TPS_PLACEMENT_PARTIAL ? tps_placement_replicate() : p;
}

enum tps_status tps_nn_grad_through(const struct tps_nn_context *ctx,
				    struct tps_dtensor *g,
				    const struct tps_layout_chain *chain,
				    const char *module, const char *tensor,
				    struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	/* g is a gradient of the chain's last layout in any valid form (a
	 * partial dX of a replicated input), so it goes straight to the
	 * layout before; a chain of one layout still ends at that one
	 * (partial -> replicate: Megatron's f in backward). */
	for (int i = chain->n > 1 ? chain->n - 2 : 0; i >= 0 && st == TPS_OK;
	     i--) {
		st = tps_nn_to_layout(ctx, g, tps_nn_grad_layout(chain->tp[i]),
				      module, tensor, NULL, err);
	}
	return st;
}

enum tps_status tps_nn_input_grad(const struct tps_nn_context *ctx,
				  struct tps_module *m, struct tps_dtensor *g,
				  const char *op, const char *note,
				  int64_t flops, struct tps_dtensor *dx,
				  struct tps_error *err)
{
	char name[TPS_NAME_MAX + 16];
	enum tps_status st;
	snprintf(name, sizeof name, "%s.in.grad", m->spec->name);
	st = tps_nn_emit_compute(ctx, m->spec->name, op, name, note, g, flops,
				 err);
	if (st == TPS_OK && !m->keep_partial_dx) {
		st = tps_nn_grad_through(ctx, g, &m->in_chain, m->spec->name,
					 name, err);
	}
	if (st == TPS_OK) {
		*dx = *g;
	} else {
		tps_dtensor_free(g);
	}
	return st;
}

enum tps_status tps_nn_to_layout(const struct tps_nn_context *ctx,
				 struct tps_dtensor *x,
				 struct tps_placement tp_target,
				 const char *module, const char *tensor,
				 const char *note, struct tps_error *err)
{
	return tps_nn_to_layout_chained(ctx, x, tp_target, NULL, module, tensor,
					note, err);
}

enum tps_status tps_nn_to_layout_chained(const struct tps_nn_context *ctx,
					 struct tps_dtensor *x,
					 struct tps_placement tp_target,
					 struct tps_layout_chain *chain,
					 const char *module, const char *tensor,
					 const char *note,
					 struct tps_error *err)
{
	struct tps_placement target[TPS_MAX_MESH_DIMS];
	enum tps_status st;

	tp_target = tps_nn_normalized(tp_target, x->global.ndim);
	if (tp_target.kind == TPS_PLACEMENT_SHARD && tp_target.dim < 0) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"%s: %s is %d-dim, it has no dim for this shard",
			module, tensor, x->global.ndim);
	}
	if (tps_placement_equal(x->placements[ctx->tp_dim], tp_target)) {
		return TPS_OK;
	}
	for (int i = 0; i < ctx->mesh->ndim; i++) {
		target[i] = x->placements[i];
	}
	target[ctx->tp_dim] = tp_target;
	st = tps_nn_redistribute(ctx, x, target, module, tensor, note, err);
	if (st == TPS_OK && chain) {
		/* A module changes its input at most twice (to the declared
		 * layout, to the one it computes on): three entries. */
		assert(chain->n < TPS_LAYOUT_CHAIN_MAX);
		chain->tp[chain->n++] = tp_target;
	}
	return st;
}

bool tps_nn_same_layout(const struct tps_dtensor *a,
			const struct tps_dtensor *b)
{
	for (int i = 0; i < a->mesh->ndim; i++) {
		if (!tps_placement_equal(a->placements[i], b->placements[i])) {
			return false;
		}
	}
	return true;
}

enum tps_status tps_nn_sum_rank(void *opaque, int r, struct tps_tensor *out,
				struct tps_error *err)
{
	const struct tps_nn_sum_job *job = opaque;
	enum tps_status st = tps_tensor_copy(out, &job->a->locals[r], err);
	if (st == TPS_OK) {
		tps_tensor_add(out, &job->b->locals[r]);
	}
	return st;
}

int tps_nn_no_parameters(const struct tps_module_spec *s, int tp_dim,
			 struct tps_param_spec *out)
{
	(void)s;
	(void)tp_dim;
	(void)out;
	return 0;
}

int64_t tps_nn_no_memory(const struct tps_module_spec *s,
			 const struct tps_memory_context *mc)
{
	(void)s;
	(void)mc;
	return 0;
}
