/*
 * Events: one thing that happened on the simulated ranks, as the trace
 * records it (docs/design.md section 5), and the sink that receives them.
 *
 * The modules (nn.h) and the model report events; they never decide what
 * becomes of them. The trace (trace.h) implements the sink that writes
 * them, tests implement sinks that count them, and `tpsim comm` sums their
 * bytes and flops. A sink that fails stops the run.
 */
#ifndef TPSIM_NN_EVENT_H
#define TPSIM_NN_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "dtensor.h"

/* The part of a step an event belongs to. */
enum tps_phase {
	TPS_PHASE_SETUP,     /* parameters distributed; no step */
	TPS_PHASE_FORWARD,   /* modules, the output, the loss */
	TPS_PHASE_BACKWARD,  /* gradients, last module first */
	TPS_PHASE_OPTIMIZER, /* the dp gradient average, the updates */
};
#define TPS_PHASE_COUNT 4
extern const char *const tps_phase_names[];

enum tps_event_kind {
	TPS_EVENT_COMPUTE,    /* local arithmetic on every rank */
	TPS_EVENT_COLLECTIVE, /* a collective over the groups of `mask` */
	TPS_EVENT_LAYOUT,     /* a local split, or a distribution at setup */
};
extern const char *const tps_event_kind_names[];

/*
 * Pipeline parallelism (docs/pipeline.md): the stage whose ranks ran an
 * event (those whose coordinate on the pp dim is `stage`), the model
 * chunk it belongs to (virtual stage chunk * p + stage), the microbatch
 * (-1: none, as a parameter's setup or update), the other stage of a
 * send or a recv (-1 otherwise), and the schedule's operation it is part
 * of, in unit slots (pipeline_schedule.h; slot_end 0: none).
 */
struct tps_event_stage {
	int stage, chunk, microbatch, peer;
	int64_t slot_start, slot_end;
};

struct tps_event {
	int step; /* -1 for setup events */
	enum tps_phase phase;
	enum tps_event_kind kind;
	const char *module; /* "fc1", "input", "output", "loss" */
	const char *op;	    /* "matmul", "all_reduce", "split", ... */
	const char *tensor; /* what was produced: "fc1.out", "fc1.in.grad" */
	/* The mesh dims the groups run along (collectives and splits); 0 for
	 * none. Several bits: the dims flattened into one group. */
	unsigned mask;
	int64_t bytes_per_rank; /* collectives; 0 otherwise */
	/* Compute events: the largest number of floating-point operations
	 * any one rank performed (2 per multiply-add of a matmul). */
	int64_t flops;
	/* A step of a redistribution (a local split or a collective along
	 * one mesh dim, mask's one bit): the placement on that dim before
	 * it; NULL for every other event. Not written to the trace (the
	 * tensor's earlier event has it); tps_cost_plan_warning reads it. */
	const struct tps_placement *before;
	const char *note;    /* NULL or one sentence */
	const char *mistake; /* NULL, or the injected mistake that made it */
	/* Made by a forward run again in backward ("recompute": "full"):
	 * the trace marks it "recompute": true. */
	bool recompute;
	/* NULL: no pipeline, every rank ran it. */
	const struct tps_event_stage *stage;
	/* The dtype value is stored in (its values are all of it); float32
	 * unless the config's "dtype" says otherwise (spec.h). */
	enum tps_dtype dtype;
	const struct tps_dtensor *value; /* the produced tensor, every rank */
};

struct tps_event_sink {
	/* Records ev; an error (I/O, a NaN in ev's values) stops the run. */
	enum tps_status (*emit)(void *ctx, const struct tps_event *ev,
				struct tps_error *err);
	void *ctx;
};

/* Passes ev to the sink; a sink without emit accepts everything. */
enum tps_status tps_event_emit(struct tps_event_sink sink,
			       const struct tps_event *ev,
			       struct tps_error *err);

#endif
