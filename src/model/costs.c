#include "costs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "comm.h"
#include "model.h"

int64_t tps_cost_ring_steps(const char *op, int n)
{
	if (n <= 1) {
		return 0;
	}
	/* A pipeline's point-to-point: one step from the sender; the
	 * receiver's event sends nothing. */
	if (strcmp(op, "send") == 0 || strcmp(op, "recv") == 0) {
		return op[0] == 's' ? 1 : 0;
	}
	return strcmp(op, tps_comm_op_name(TPS_COMM_ALL_REDUCE)) == 0
		       ? 2 * (int64_t)(n - 1)
		       : (int64_t)(n - 1);
}

struct tps_link_spec tps_cost_link_of(const struct tps_cost_spec *cost,
				      const struct tps_mesh *mesh,
				      unsigned mask)
{
	struct tps_link_spec slow = {0.0, 0.0};
	bool first = true;
	for (int i = 0; i < mesh->ndim; i++) {
		const struct tps_link_spec *l = &cost->links[i];
		if (!(mask & (1u << i))) {
			continue;
		}
		if (first || l->gbps < slow.gbps) {
			slow.gbps = l->gbps;
		}
		if (first || l->latency_us > slow.latency_us) {
			slow.latency_us = l->latency_us;
		}
		first = false;
	}
	return slow;
}

double tps_cost_collective_seconds(const char *op, int n,
				   int64_t bytes_per_rank,
				   struct tps_link_spec link)
{
	return (double)tps_cost_ring_steps(op, n) * link.latency_us * 1e-6 +
	       (double)bytes_per_rank / (link.gbps * 1e9);
}

/* ---- redistributions that the next one undoes ------------------------ */

/* snprintf into a fixed buffer, where a long module name may cut the
 * sentence short (it stays NUL-terminated). */
static void put(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void put(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/* What the watch remembers of one redistribution step. */
struct redist {
	char module[TPS_NAME_MAX], tensor[TPS_NAME_MAX + 16], op[32];
	unsigned mask;
	struct tps_shape shape;
	struct tps_placement before, after;
	bool collective;
};

/* Follows a forward pass's events (tps_cost_plan_warning). */
struct undo_watch {
	const struct tps_model_spec *spec;
	bool have;     /* last holds the latest redistribution step */
	bool consumed; /* a compute made a new tensor since */
	struct redist last;
	int pairs; /* how many pairs, and the first in words */
	char first[TPS_COST_WARNING_MAX];
};

static void remember(struct redist *r, const struct tps_event *ev)
{
	snprintf(r->module, sizeof r->module, "%s", ev->module);
	snprintf(r->tensor, sizeof r->tensor, "%s", ev->tensor);
	snprintf(r->op, sizeof r->op, "%s", ev->op);
	r->mask = ev->mask;
	r->shape = ev->value->global;
	r->before = *ev->before;
	r->after = ev->value->placements[__builtin_ctz(ev->mask)];
	r->collective = ev->kind == TPS_EVENT_COLLECTIVE;
}

/* What one step p0 -> p2 is (dtensor.h's table): "" for none (p2 is p0),
 * NULL when it takes more than one (a shard's block changes). */
static const char *one_step(struct tps_placement p0, struct tps_placement p2)
{
	if (tps_placement_equal(p0, p2)) {
		return "";
	}
	switch (p0.kind) {
	case TPS_PLACEMENT_PARTIAL:
		return p2.kind == TPS_PLACEMENT_REPLICATE ? "all_reduce"
		       : p2.kind == TPS_PLACEMENT_SHARD	  ? "reduce_scatter"
							  : NULL;
	case TPS_PLACEMENT_REPLICATE:
		return p2.kind == TPS_PLACEMENT_SHARD ? "local split" : NULL;
	case TPS_PLACEMENT_SHARD:
		return p2.kind == TPS_PLACEMENT_REPLICATE ? "all_gather"
		       : p2.kind == TPS_PLACEMENT_SHARD && p2.dim != p0.dim
			       ? "all_to_all"
			       : NULL;
	}
	return NULL;
}

static bool is_residual(const struct tps_model_spec *spec, const char *name)
{
	for (int i = 0; i < spec->n_modules; i++) {
		if (strcmp(spec->modules[i].name, name) == 0) {
			return spec->modules[i].type == TPS_MODULE_RESIDUAL;
		}
	}
	return false;
}

/* The first pair, in words. */
static void describe_pair(struct undo_watch *w, const struct redist *a,
			  const struct redist *b, const char *step)
{
	char p0[32], p1[32], p2[32];
	tps_placement_format(a->before, p0, sizeof p0);
	tps_placement_format(a->after, p1, sizeof p1);
	tps_placement_format(b->after, p2, sizeof p2);
	put(w->first, sizeof w->first,
	    "%s's %s of %s (%s -> %s) is undone by %s's %s right after "
	    "it (%s -> %s), with nothing computed on it between them: "
	    "%s%s%s%s",
	    a->module, a->op, a->tensor, p0, p1, b->module, b->op, p1, p2,
	    step[0] ? "one " : "neither is needed", step,
	    step[0] ? " would do both" : "",
	    is_residual(w->spec, b->module)
		    ? ". A residual brings its body's output to the "
		      "layout of its input: split the model input into "
		      "sequence shards once, with prepare_input, and the "
		      "residuals add shards (docs/transformer.md)"
		    : "");
}

static void watch_event(struct undo_watch *w, const struct tps_event *ev)
{
	struct redist now;
	const char *step;
	if (ev->phase != TPS_PHASE_FORWARD) {
		w->have = false;
		return;
	}
	if (ev->kind == TPS_EVENT_COMPUTE) {
		/* A bias added to the reduced tensor leaves it the same
		 * activation; anything else made from it is new. */
		w->consumed = w->consumed || !w->have ||
			      strcmp(ev->tensor, w->last.tensor) != 0;
		return;
	}
	if (!ev->before || !ev->value || __builtin_popcount(ev->mask) != 1) {
		w->have = false; /* not one step of a redistribution */
		return;
	}
	remember(&now, ev);
	if (w->have && !w->consumed && now.mask == w->last.mask &&
	    tps_shape_equal(&now.shape, &w->last.shape) &&
	    tps_placement_equal(now.before, w->last.after) &&
	    (now.collective || w->last.collective) &&
	    (step = one_step(w->last.before, now.after)) != NULL) {
		if (w->pairs++ == 0) {
			describe_pair(w, &w->last, &now, step);
		}
	}
	w->last = now;
	w->have = true;
	w->consumed = false;
}

/* The sentence of a finished watch ("" without pairs). */
static void watch_sentence(const struct undo_watch *w, char *out)
{
	if (w->pairs == 0) {
		out[0] = '\0';
	} else if (w->pairs == 1) {
		put(out, TPS_COST_WARNING_MAX, "%s", w->first);
	} else {
		put(out, TPS_COST_WARNING_MAX,
		    "%d redistributions in a forward step undo the one "
		    "before them; the first: %s",
		    w->pairs, w->first);
	}
}

/* The sink: one row per (phase, op, module, group), by mode; watch
 * (may be NULL) follows the events too. */
struct tally {
	const struct tps_model_spec *spec;
	const struct tps_mesh *mesh;
	const struct tps_cost_spec *cost;
	enum tps_cost_mode mode;
	struct tps_cost_report *report;
	struct undo_watch *watch;
};

static struct tps_cost_row *row_for(struct tps_cost_report *r,
				    const struct tps_event *ev,
				    const char *group, struct tps_error *err)
{
	int stage = ev->stage ? ev->stage->stage : -1;
	for (int i = 0; i < r->n_rows; i++) {
		struct tps_cost_row *row = &r->rows[i];
		if (row->phase == ev->phase && row->mask == ev->mask &&
		    row->stage == stage && strcmp(row->op, ev->op) == 0 &&
		    strcmp(row->module, ev->module) == 0) {
			return row;
		}
	}
	if (r->n_rows == r->cap_rows) {
		int cap = r->cap_rows ? 2 * r->cap_rows : 16;
		struct tps_cost_row *grown =
			realloc(r->rows, (size_t)cap * sizeof *grown);
		if (!grown) {
			tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
			return NULL;
		}
		r->rows = grown;
		r->cap_rows = cap;
	}
	memset(&r->rows[r->n_rows], 0, sizeof r->rows[0]);
	r->rows[r->n_rows].phase = ev->phase;
	r->rows[r->n_rows].mask = ev->mask;
	r->rows[r->n_rows].stage = stage;
	snprintf(r->rows[r->n_rows].op, sizeof r->rows[0].op, "%s", ev->op);
	snprintf(r->rows[r->n_rows].module, sizeof r->rows[0].module, "%s",
		 ev->module);
	snprintf(r->rows[r->n_rows].mesh_dim, sizeof r->rows[0].mesh_dim, "%s",
		 group);
	return &r->rows[r->n_rows++];
}

/* A step's sum past int64_t: an error at the config key of the module
 * whose event pushed it over (its width: what grows the count). */
static enum tps_status too_many(const struct tally *t,
				const struct tps_event *ev, const char *what,
				struct tps_error *err)
{
	const char *pointer = "/model";
	for (int i = 0; i < t->spec->n_modules; i++) {
		const struct tps_module_spec *m = &t->spec->modules[i];
		if (strcmp(m->name, ev->module) == 0 && m->width_pointer[0]) {
			pointer = m->width_pointer;
		}
	}
	return tps_error_set(
		err, TPS_ERR_LIMIT, "%s: the %s step's %s pass 2^63 at %s's %s",
		pointer,
		t->mode == TPS_COST_TRAINING ? "training" : "inference", what,
		ev->module, ev->op);
}

static enum tps_status count(void *ctx, const struct tps_event *ev,
			     struct tps_error *err)
{
	struct tally *t = ctx;
	struct tps_cost_report *r = t->report;
	struct tps_cost_row *row;
	struct tps_link_spec link;
	char group[TPS_MAX_MESH_DIMS * TPS_MESH_NAME_MAX];
	int n;
	double seconds;

	if (t->watch) {
		watch_event(t->watch, ev);
	}
	if (ev->kind == TPS_EVENT_COMPUTE) {
		double tflops = t->cost->tflops;
		/* Flops are even (2 per multiply-add): INT64_MAX is an
		 * event's count saturated (tps_sat_mul), not a count. */
		if (ev->flops == INT64_MAX ||
		    __builtin_add_overflow(r->flops[t->mode], ev->flops,
					   &r->flops[t->mode])) {
			return too_many(t, ev, "flops", err);
		}
		r->compute_seconds[t->mode] +=
			(double)ev->flops / (tflops * 1e12);
		return TPS_OK;
	}
	if (ev->kind != TPS_EVENT_COLLECTIVE) {
		return TPS_OK;
	}
	tps_mesh_mask_name(t->mesh, ev->mask, group, sizeof group);
	row = row_for(r, ev, group, err);
	if (!row) {
		return TPS_ERR_NOMEM;
	}
	n = tps_mesh_group_size(t->mesh, ev->mask);
	link = tps_cost_link_of(t->cost, t->mesh, ev->mask);
	seconds = tps_cost_collective_seconds(ev->op, n, ev->bytes_per_rank,
					      link);
	/* A row's bytes are part of the total's: one check covers both. */
	if (__builtin_add_overflow(r->total[t->mode].bytes_per_rank,
				   ev->bytes_per_rank,
				   &r->total[t->mode].bytes_per_rank)) {
		return too_many(t, ev, "collectives' bytes per rank", err);
	}
	row->mode[t->mode].count++;
	row->mode[t->mode].bytes_per_rank += ev->bytes_per_rank;
	row->mode[t->mode].seconds += seconds;
	r->total[t->mode].count++;
	r->total[t->mode].seconds += seconds;
	return TPS_OK;
}

/* One step of spec (as mode) on meta tensors, into sink; footprint (may
 * be NULL) receives what each rank holds after it. */
static enum tps_status run_meta_step(const struct tps_model_spec *spec,
				     enum tps_cost_mode mode,
				     struct tps_event_sink sink,
				     struct tps_model_footprint *footprint,
				     struct tps_error *err)
{
	struct tps_model_spec s = *spec; /* shares modules; not freed */
	struct tps_model model = {0};
	struct tps_tensor input = {0}, target = {0};
	struct tps_shape oshape;
	struct tps_model_outcome out = {0};
	enum tps_status st;

	s.steps = 1;
	/* Shapes alone, in this process: no values to exchange. */
	s.mesh.backend = NULL;
	s.mode = mode == TPS_COST_TRAINING ? TPS_MODE_TRAINING
					   : TPS_MODE_INFERENCE;
	if (spec->mode == TPS_MODE_INFERENCE) {
		/* Training settings the config could not give. */
		s.loss = TPS_LOSS_MSE;
		s.dp_grad = TPS_DP_GRAD_GLOBAL;
		s.input_requires_grad = false;
		memset(&s.optimizer, 0, sizeof s.optimizer);
		s.optimizer.type = TPS_OPTIMIZER_SGD;
		s.optimizer.lr = 0.1;
	}
	oshape = tps_model_output_shape(&s);
	if (s.loss == TPS_LOSS_CROSS_ENTROPY) {
		oshape.ndim--; /* a class id per row */
	}
	st = tps_model_init_meta(&model, &s, err);
	if (st == TPS_OK) {
		st = tps_tensor_init_meta(&input, &s.input_shape, err);
	}
	if (st == TPS_OK) {
		st = tps_tensor_init_meta(&target, &oshape, err);
	}
	if (st == TPS_OK) {
		bool with_target =
			s.mode == TPS_MODE_TRAINING && s.loss != TPS_LOSS_SUM;
		st = tps_model_run(&model, &input, with_target ? &target : NULL,
				   sink, &out, err);
	}
	if (st == TPS_OK && footprint) {
		st = tps_model_footprint(&model, footprint, err);
	}
	tps_model_outcome_free(&out);
	tps_tensor_free(&input);
	tps_tensor_free(&target);
	tps_model_free(&model);
	return st;
}

/* The mode a spec runs in. */
static enum tps_cost_mode own_mode(const struct tps_model_spec *spec)
{
	return spec->mode == TPS_MODE_TRAINING ? TPS_COST_TRAINING
					       : TPS_COST_INFERENCE;
}

/* Under a pipeline a rank sends only its own stage's events: the
 * figures per rank of mode are those of the stage that sends the most
 * (the trace's bytes_per_rank, trace.c), so its rows stay and every
 * other stage's are dropped from mode, and the total is theirs again.
 * Rows of no stage (-1) stay. Without a pipeline, nothing changes. */
static void keep_busiest_stage(struct tps_cost_report *r,
			       enum tps_cost_mode mode)
{
	int busiest = -1;
	int64_t most = -1;
	int kept = 0;
	for (int i = 0; i < r->n_rows; i++) {
		int s = r->rows[i].stage;
		int64_t b = 0;
		bool seen = false;
		if (s < 0) {
			continue;
		}
		for (int k = 0; k < i; k++) {
			seen = seen || r->rows[k].stage == s;
		}
		if (seen) {
			continue; /* counted at its first row */
		}
		/* Parts of the total: no overflow. */
		for (int k = i; k < r->n_rows; k++) {
			if (r->rows[k].stage == s) {
				b += r->rows[k].mode[mode].bytes_per_rank;
			}
		}
		if (b > most) { /* the first stage of the most on a tie */
			most = b;
			busiest = s;
		}
	}
	if (busiest < 0) {
		return;
	}
	memset(&r->total[mode], 0, sizeof r->total[mode]);
	for (int i = 0; i < r->n_rows; i++) {
		struct tps_cost_row *row = &r->rows[i];
		bool any = false;
		if (row->stage >= 0 && row->stage != busiest) {
			memset(&row->mode[mode], 0, sizeof row->mode[mode]);
		}
		r->total[mode].count += row->mode[mode].count;
		r->total[mode].bytes_per_rank += row->mode[mode].bytes_per_rank;
		r->total[mode].seconds += row->mode[mode].seconds;
		for (int m = 0; m < TPS_COST_MODES; m++) {
			any = any || row->mode[m].count > 0;
		}
		if (any) {
			r->rows[kept++] = *row;
		}
	}
	r->n_rows = kept;
}

/* One step of spec (as mode) on meta tensors, counted into report; the
 * spec's own mode is watched for undone redistributions too. */
static enum tps_status run_mode(const struct tps_model_spec *spec,
				const struct tps_cost_spec *cost,
				enum tps_cost_mode mode,
				struct tps_cost_report *report,
				struct tps_error *err)
{
	struct undo_watch watch = {0};
	struct tally t = {spec, &spec->mesh, cost, mode, report,
			  mode == own_mode(spec) ? &watch : NULL};
	struct tps_event_sink sink = {count, &t};
	enum tps_status st;
	watch.spec = spec;
	st = run_meta_step(
		spec, mode, sink,
		mode == TPS_COST_TRAINING ? &report->footprint : NULL, err);
	if (st == TPS_OK && t.watch) {
		watch_sentence(&watch, report->warning);
	}
	if (st == TPS_OK) {
		keep_busiest_stage(report, mode);
	}
	return st;
}

static enum tps_status watch_only(void *ctx, const struct tps_event *ev,
				  struct tps_error *err)
{
	(void)err;
	watch_event(ctx, ev);
	return TPS_OK;
}

enum tps_status tps_cost_plan_warning(const struct tps_model_spec *spec,
				      char *warning, struct tps_error *err)
{
	struct tps_model_spec planned = *spec; /* shares modules */
	struct undo_watch watch = {0};
	struct tps_event_sink sink = {watch_only, &watch};
	enum tps_status st;
	/* The plan as written: an injected mistake is the run's to make
	 * (and may stop it at a shape error, which the run reports). A
	 * pipeline runs the same modules in the same layouts, once per
	 * microbatch: one step without it finds what it would. */
	planned.inject = 0;
	planned.pipeline.enabled = false;
	watch.spec = spec;
	warning[0] = '\0';
	st = run_meta_step(&planned, own_mode(spec), sink, NULL, err);
	if (st == TPS_OK) {
		watch_sentence(&watch, warning);
	}
	return st;
}

enum tps_status tps_cost_estimate(const struct tps_model_spec *spec,
				  const struct tps_cost_spec *cost,
				  struct tps_cost_report *out,
				  struct tps_error *err)
{
	struct tps_cost_report r = {0};
	enum tps_status st = run_mode(spec, cost, TPS_COST_INFERENCE, &r, err);
	if (st == TPS_OK) {
		st = run_mode(spec, cost, TPS_COST_TRAINING, &r, err);
	}
	if (st != TPS_OK) {
		tps_cost_report_free(&r);
		return st;
	}
	*out = r;
	return TPS_OK;
}

void tps_cost_report_free(struct tps_cost_report *r)
{
	if (!r) {
		return;
	}
	free(r->rows);
	memset(r, 0, sizeof *r);
}
