/*
 * Timelines: a tpsim trace laid out in time, one track per rank, written
 * as the Chrome Trace Event Format that Perfetto (ui.perfetto.dev) and
 * chrome://tracing open. Behind `tpsim timeline`; docs/timeline.md.
 *
 * The time model (stated, not measured; tpsim comm's alpha-beta model,
 * costs.h, applied event by event):
 *   every rank has its own clock, in whole nanoseconds, from 0
 *   a compute event runs on every rank, each for its own flops / device
 *     FLOP/s; only matmuls have flops (2 per multiply-add: y = x W^T, and
 *     in backward dW and dX, which cost what the forward did), so every
 *     other compute event, and every layout event (a local split), takes
 *     the least slice, 1 ns
 *   a collective starts, per group, when the last member arrives (the
 *     latest clock of the group); every member's slice starts then and
 *     lasts steps * latency + bytes_per_rank / bandwidth
 *     (tps_cost_collective_seconds, over tps_cost_link_of the event's
 *     mesh dims), and every member's clock moves to its end
 *   each duration is rounded to whole nanoseconds, at least 1 ns
 *   nothing overlaps: a rank computes or communicates, never both
 *   setup events (the parameters' distribution before step 0) are not
 *   drawn; clocks run on from one step into the next
 *
 * A rank's flops are its own (its local shapes, from the event's
 * global_shape and placements through tps_dtensor_local_region), so
 * uneven shards show up as waits at the next collective. tpsim comm
 * counts the busiest rank's.
 *
 * Traces carry no flops: a forward matmul's, on rank r, are
 * 2 * numel(Y_r) * k_r, with Y the event's tensor and k_r the rank's
 * columns of the module's weight (params["M.weight"], its shape and
 * placements); a backward matmul of M reuses the last forward one's.
 * Values are never read, so full, summary, none and symbolic traces (no
 * "ranks") all give the same timeline.
 *
 * A pipeline's trace (config "pipeline", docs/pipeline.md) is laid out by
 * its schedule instead: each event with a "stage" is drawn on that
 * stage's ranks only; an event with a "slot" [a, b] (a forward of one
 * microbatch on one chunk takes 1 unit slot, its backward 2) shares the
 * window [a, b] x TPS_TIMELINE_SLOT_NS from the step's start evenly with
 * the other events of that operation on its stage, in trace order, and
 * each operation is a slice of its own around them (struct
 * tps_timeline_op). The step's events without a slot (the optimizer's)
 * follow on the alpha-beta model once the last operation of the step has
 * ended, on their stage's ranks. A rank's busy time in a step is its
 * operations', its idle time the step's span of operations (over every
 * rank) less that: the bubble, measured (tps_timeline_bubble).
 */
#ifndef TPSIM_TIMELINE_H
#define TPSIM_TIMELINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "error.h"
#include "nn_event.h"
#include "mesh.h"
#include "spec.h"

/* A pipeline schedule's unit slot (a forward of one chunk of one
 * microbatch), in ns. */
#define TPS_TIMELINE_SLOT_NS 1000000

/* The least slice: an event that costs nothing in the model still shows,
 * in order, rather than as a zero-length mark viewers nest under its
 * neighbour. */
#define TPS_TIMELINE_MIN_NS 1

/* One rank's part of one event. */
struct tps_timeline_slice {
	int event; /* index into the timeline's events */
	int rank;
	int group; /* collectives: the rank's group in "groups"; else -1 */
	int64_t ts_ns, dur_ns;
	int64_t flops; /* compute: this rank's; else 0 */
	/* Collectives: elements each rank sends in and receives out, as
	 * PyTorch's profiler records them ("In msg nelems", "Out msg
	 * nelems"; docs/timeline.md); else 0. */
	int64_t in_nelems, out_nelems;
};

/* One drawn event of the trace (a step's; setup events are not drawn). */
struct tps_timeline_event {
	const cJSON *json; /* borrowed from the trace */
	int step;
	enum tps_event_kind kind;
	int group_size; /* collectives: the largest group's size; else 0 */
};

/* A pipeline's forward or backward of one microbatch on one chunk, on one
 * rank of its stage, as its events' "slot" place it. */
struct tps_timeline_op {
	int step, rank, stage, chunk, microbatch;
	bool backward;
	int64_t ts_ns, dur_ns;
};

struct tps_timeline {
	struct tps_mesh mesh;
	struct tps_cost_spec cost; /* the trace's config "links", "device" */
	int n_steps;		   /* the highest step + 1; 0: none */
	int n_events;
	struct tps_timeline_event *events; /* owned, trace order */
	size_t n_slices;
	/* Owned: event by event in trace order, each event's in rank
	 * order. */
	struct tps_timeline_slice *slices;
	/* A pipeline's trace: the pp mesh dim (-1: none) and its size, and
	 * its operations (owned), step by step, each on its stage's ranks
	 * in rank order. */
	int pp_dim, pp;
	size_t n_ops;
	struct tps_timeline_op *ops;
};

/* A pipeline trace's step: rank r's busy ns (the length of its
 * operations) and idle ns (the span of the step's operations over every
 * rank, less busy); both 0 without operations. idle / busy is the rank's
 * bubble fraction (Narayanan et al. 2021). */
void tps_timeline_bubble(const struct tps_timeline *tl, int step, int rank,
			 int64_t *busy, int64_t *idle);

/*
 * Lays out `trace` (a parsed tpsim trace, already checked to be one;
 * trace_name names it in messages) in time. It borrows from trace, which
 * must outlive *tl. On error (TPS_ERR_INPUT naming the file and the JSON
 * Pointer of what is wrong, TPS_ERR_LIMIT, TPS_ERR_NOMEM) *tl is
 * untouched. Free with tps_timeline_free.
 */
enum tps_status tps_timeline_build(struct tps_timeline *tl, const cJSON *trace,
				   const char *trace_name,
				   struct tps_error *err);

/*
 * Writes the timeline as a Chrome Trace Event Format object:
 * {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}},
 * metadata events first (a process per step, a thread per rank), then one
 * complete ("X") event per slice, one per line; ts and dur in
 * microseconds with three decimals. The same timeline gives the same
 * bytes. Write errors are the caller's to detect on out.
 */
void tps_timeline_write_json(FILE *out, const struct tps_timeline *tl);

/*
 * tps_timeline_build then tps_timeline_write_json, the same bytes, without
 * keeping the slices (one per rank per event: GPT-3 175B's 4.2M on 512
 * ranks would take 235 MB): each is written to out as it is laid out. A
 * pipeline's trace, whose operations are written before its slices, is
 * built whole first. Errors as tps_timeline_build's; on error out may
 * hold part of a timeline, for the caller to discard. Write errors are
 * the caller's to detect on out.
 */
enum tps_status tps_timeline_stream_json(FILE *out, const cJSON *trace,
					 const char *trace_name,
					 struct tps_error *err);

/* Frees what tl owns; NULL is a no-op. */
void tps_timeline_free(struct tps_timeline *tl);

/* PyTorch's "Collective name" for a tpsim collective op ("all_reduce" ->
 * "allreduce"); the op itself when PyTorch has no other name for it. */
const char *tps_timeline_collective_name(const char *op);

#endif
