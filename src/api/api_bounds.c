/*
 * The public API's error bounds of a trace's values (include/tpsim.h):
 * traces do not carry per-element bounds, so they are made again, as
 * `tpsim diff` makes them (run_bounds.c): the bound pass of the trace's
 * embedded config, the reference alone with its bounds. Each bound the
 * pass reports is kept under its step, phase and tensor; a rank's shard
 * of an event gets the global bound's elements at the shard's region
 * (tps_dtensor_local_region), doubled: |a - b| <= 2 e between two
 * computations that each hold within e of the exact value
 * (docs/numerics.md).
 */
#include "api_internal.h"

#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "dtensor.h"
#include "jsonio.h"
#include "mesh.h"
#include "nn_event.h"
#include "run.h"
#include "trace.h"

/* One bound the pass reported, and the seq of the trace's last event of
 * its tensor in its step and phase (-1: the trace has none). */
struct bound_entry {
	int step;
	enum tps_phase phase;
	char *tensor;
	struct tps_bound bound;
	int64_t last_seq;
};

struct tpsim_bounds {
	struct bound_entry *entries;
	size_t n, cap;
	struct tps_mesh mesh;
	/* A dp run's backward values and its loss are dp times the
	 * reference's (run.h, tps_run_bound_pass). */
	int dp;
	/* The config's sampler is "distributed": dp shards of the batch
	 * are strided, not chunks. */
	bool strided;
};

static void bounds_free(struct tpsim_bounds *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->entries[i].tensor);
		tps_bound_free(&b->entries[i].bound);
	}
	free(b->entries);
	free(b);
}

void tpsim_bounds_free(struct tpsim_bounds *bounds)
{
	if (bounds) {
		bounds_free(bounds);
	}
}

static struct bound_entry *find(const struct tpsim_bounds *b, int step,
				enum tps_phase phase, const char *tensor)
{
	for (size_t i = 0; i < b->n; i++) {
		struct bound_entry *e = &b->entries[i];
		if (e->step == step && e->phase == phase &&
		    strcmp(e->tensor, tensor) == 0) {
			return e;
		}
	}
	return NULL;
}

/* The bound sink: keeps a copy of each bound (a later report of the same
 * tensor in the same step and phase replaces the earlier). */
static enum tps_status keep(void *ctx, const struct tps_bound_event *ev,
			    struct tps_error *err)
{
	struct tpsim_bounds *b = ctx;
	struct bound_entry *e = find(b, ev->step, ev->phase, ev->tensor);
	struct tps_bound copy = {0};
	enum tps_status st = tps_bound_copy(&copy, ev->bound, err);

	if (st != TPS_OK) {
		return st;
	}
	if (!e) {
		if (b->n == b->cap) {
			size_t cap = b->cap ? 2 * b->cap : 32;
			struct bound_entry *grown =
				realloc(b->entries, cap * sizeof *grown);
			if (!grown) {
				tps_bound_free(&copy);
				return tps_error_set(err, TPS_ERR_NOMEM,
						     "out of memory");
			}
			b->entries = grown;
			b->cap = cap;
		}
		e = &b->entries[b->n];
		memset(e, 0, sizeof *e);
		e->tensor = tps_api_strdup(ev->tensor);
		if (!e->tensor) {
			tps_bound_free(&copy);
			return tps_error_set(err, TPS_ERR_NOMEM,
					     "out of memory");
		}
		e->step = ev->step;
		e->phase = ev->phase;
		e->last_seq = -1;
		b->n++;
	}
	tps_bound_free(&e->bound);
	tps_bound_move(&e->bound, &copy);
	return TPS_OK;
}

/* An event's phase as the enum (the reader checked it is one). */
static enum tps_phase phase_of(const char *name)
{
	for (int p = 0; tps_phase_names[p]; p++) {
		if (strcmp(name, tps_phase_names[p]) == 0) {
			return (enum tps_phase)p;
		}
	}
	return TPS_PHASE_SETUP;
}

/* Each entry's last event in the trace. */
static void mark_last_events(struct tpsim_bounds *b,
			     const struct tpsim_trace *trace)
{
	const cJSON *events =
		cJSON_GetObjectItemCaseSensitive(trace->tree, "events");
	const cJSON *ev;
	cJSON_ArrayForEach(ev, events)
	{
		const struct tpsim_event *e = (const void *)ev;
		struct bound_entry *entry = find(b, (int)tpsim_event_step(e),
						 phase_of(tpsim_event_phase(e)),
						 tpsim_event_tensor(e));
		if (entry) {
			entry->last_seq = tpsim_event_seq(e);
		}
	}
}

enum tpsim_status tpsim_trace_bounds(const struct tpsim_trace *trace,
				     int threads, struct tpsim_bounds **bounds,
				     struct tpsim_error **error)
{
	struct tps_error err = {0};
	struct tps_run_spec spec;
	struct tpsim_bounds *b;
	struct tps_bound_sink sink;
	enum tps_status st;

	if (!trace || !bounds) {
		return tps_api_misuse(error, "tpsim_trace_bounds",
				      !trace ? "trace" : "bounds");
	}
	if (threads < 0 || threads > TPS_POOL_MAX_THREADS) {
		tps_error_set(&err, TPS_ERR_USAGE,
			      "threads: expected 0 (the cores) to %d, got %d",
			      TPS_POOL_MAX_THREADS, threads);
		return tps_api_fail(error, &err);
	}
	b = calloc(1, sizeof *b);
	if (!b) {
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	st = tps_trace_read_mesh(&b->mesh, trace->tree, trace->name, &err);
	if (st == TPS_OK) {
		st = tps_run_trace_spec(trace->tree, trace->name, true, &spec,
					&err);
		if (st == TPS_OK) {
			b->strided =
				spec.model.sampler == TPS_SAMPLER_DISTRIBUTED;
			sink.emit = keep;
			sink.ctx = b;
			st = tps_run_bound_pass(&spec, threads, sink, &b->dp,
						&err);
			tps_run_spec_free(&spec);
		}
	}
	if (st != TPS_OK) {
		bounds_free(b);
		return tps_api_fail(error, &err);
	}
	mark_last_events(b, trace);
	*bounds = b;
	return TPSIM_OK;
}

/* A reason the event has no bound: TPSIM_ERR_INPUT, "<tensor> at seq N:
 * <why>". */
static enum tpsim_status no_bound(struct tpsim_error **error,
				  const struct tpsim_event *event,
				  const char *why)
{
	struct tps_error err = {0};
	char esc[256];
	tps_error_set(&err, TPS_ERR_INPUT, "%s at seq %lld has no bound: %s",
		      tps_json_escape_for_message(tpsim_event_tensor(event),
						  esc, sizeof esc),
		      (long long)tpsim_event_seq(event), why);
	return tps_api_fail(error, &err);
}

enum tpsim_status tpsim_bounds_shard(const struct tpsim_bounds *bounds,
				     const struct tpsim_event *event,
				     size_t rank, float *values,
				     size_t capacity, size_t *n,
				     struct tpsim_error **error)
{
	struct tps_error err = {0};
	struct tps_placement pl[TPS_MAX_MESH_DIMS];
	struct tps_shape global = {0};
	int64_t shape[TPSIM_MAX_DIMS], offset[TPS_MAX_DIMS];
	int64_t length[TPS_MAX_DIMS], numel = 1;
	const struct bound_entry *e;
	const char *phase;
	char why[TPS_BOUND_REASON_MAX + 64];
	double scale = 1.0;

	if (!bounds || !event || !n || (!values && capacity)) {
		return tps_api_misuse(error, "tpsim_bounds_shard",
				      !bounds  ? "bounds"
				      : !event ? "event"
				      : !n     ? "n"
					       : "values");
	}
	if (rank >= (size_t)bounds->mesh.world_size) {
		tps_error_set(&err, TPS_ERR_USAGE,
			      "rank %zu out of range: the mesh has ranks 0 "
			      "to %d",
			      rank, bounds->mesh.world_size - 1);
		return tps_api_fail(error, &err);
	}
	phase = tpsim_event_phase(event);
	e = find(bounds, (int)tpsim_event_step(event), phase_of(phase),
		 tpsim_event_tensor(event));
	if (!e) {
		return no_bound(error, event,
				"the bound pass does not bound it");
	}
	if (tps_bound_is_none(&e->bound)) {
		return no_bound(error, event, e->bound.none);
	}
	if (e->last_seq != tpsim_event_seq(event)) {
		snprintf(why, sizeof why,
			 "the bound is of the tensor's value at the last "
			 "event of its step and phase, seq %lld",
			 (long long)e->last_seq);
		return no_bound(error, event, why);
	}
	global.ndim = (int)tpsim_event_global_shape(event, shape);
	for (int d = 0; d < global.ndim; d++) {
		global.dim[d] = shape[d];
	}
	if (!tps_shape_equal(&global, &e->bound.e.shape)) {
		return no_bound(error, event,
				"its shape is not the bound's (an injected "
				"mistake)");
	}
	for (int i = 0; i < bounds->mesh.ndim; i++) {
		const char *p = tpsim_event_placement(event, i);
		/* The reader checked each placement. */
		if (!p || !tps_placement_parse(p, global.ndim, &pl[i])) {
			return no_bound(error, event, "a placement is missing");
		}
		if (pl[i].kind == TPS_PLACEMENT_PARTIAL) {
			return no_bound(error, event,
					"it is partial (each rank's share of "
					"a sum not yet reduced)");
		}
		if (bounds->strided && pl[i].kind == TPS_PLACEMENT_SHARD &&
		    pl[i].dim == 0 && bounds->mesh.shape[i] > 1) {
			return no_bound(error, event,
					"a DistributedSampler batch shard "
					"(its rows are strided over dp)");
		}
	}
	tps_dtensor_local_region(&bounds->mesh, &global, pl, (int)rank, offset,
				 length);
	for (int d = 0; d < global.ndim; d++) {
		numel *= length[d];
	}
	*n = (size_t)numel;
	if (capacity < (size_t)numel) {
		tps_error_set(&err, TPS_ERR_USAGE,
			      "room for %zu values, the shard has %lld",
			      capacity, (long long)numel);
		return tps_api_fail(error, &err);
	}
	if (strcmp(phase, "backward") == 0 ||
	    (strcmp(phase, "forward") == 0 &&
	     strcmp(tpsim_event_tensor(event), "loss") == 0)) {
		scale = (double)bounds->dp;
	}
	/* Row-major over the region: element k of the shard is the global
	 * element at offset + the region index of k. */
	for (int64_t k = 0; k < numel; k++) {
		int64_t rest = k, at = 0, stride = 1;
		for (int d = global.ndim - 1; d >= 0; d--) {
			at += (offset[d] + rest % length[d]) * stride;
			rest /= length[d];
			stride *= global.dim[d];
		}
		values[k] =
			tps_bound_up(2.0 * scale * (double)e->bound.e.data[at]);
	}
	return TPSIM_OK;
}
