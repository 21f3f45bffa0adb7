/*
 * tpsim diff: two traces of one model, run differently (tp 2 against tp 8,
 * float32 against bfloat16, plain TP against sequence parallel, a fixed
 * run against its regression), compared tensor by tensor against what
 * reordering the sums can explain (docs/diff.md).
 *
 * Events are aligned by (step, phase, tensor) on their global values: the
 * last event of each key in each trace (after its collectives), its ranks'
 * blocks assembled as the run assembles its outcome (trace.h,
 * tps_trace_event_global). Each trace's error bounds come from the bound
 * pass of its own embedded config (run.h, tps_run_bound_pass): A's value is
 * within e_A of the exact result and B's within e_B, so where both are
 * correct evaluations |A_i - B_i| <= e_A,i + e_B,i, element by element.
 * A dp run's backward values and per-rank losses are dp times the
 * reference's until the dp average; they are divided by dp before the
 * comparison. A tensor without a bound on either side (a rule says none
 * exists, or the bound pass does not bound it) is compared by the
 * tolerance rule instead (docs/design.md section 3): max |A - B| <= atol
 * + rtol max |A|, with the larger of the two configs' tolerances.
 *
 * Example (what `tpsim diff a.json b.json` does):
 *
 *   struct tps_diff d;
 *   if (tps_diff_build(&d, a, "a.json", b, "b.json", 0, &err) == TPS_OK) {
 *           tps_diff_write(stdout, &d, TPS_DIFF_TEXT, -1);
 *           rc = d.first >= 0 ? 1 : 0;
 *           tps_diff_free(&d);
 *   }
 */
#ifndef TPSIM_RUN_DIFF_H
#define TPSIM_RUN_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "bound.h"
#include "model.h"
#include "nn_event.h"

enum tps_diff_format {
	TPS_DIFF_TEXT,	   /* aligned columns, for a terminal */
	TPS_DIFF_MARKDOWN, /* a GitHub table, for docs */
};

/* One (step, phase, tensor) of either trace, and how it compared. */
struct tps_diff_row {
	int step; /* -1: setup */
	enum tps_phase phase;
	const char *tensor;   /* in the trace it was first seen in */
	int event_a, event_b; /* the key's last event in each, -1: none */
	/* Each side's bound, once its bound pass reported one. */
	struct tps_bound bound_a, bound_b;
	bool has_a, has_b;
	/* Compared (both events present): */
	enum tps_compare_rule rule;
	bool within;	    /* no element beyond its rule */
	bool shapes_differ; /* nothing compared */
	struct tps_shape shape_a, shape_b;
	double max_diff; /* max |A_i - B_i| */
	/* exact, bound: the largest e_A,i + e_B,i and the worst ratio
	 * |d_i| / (e_A,i + e_B,i) (INFINITY where the bound is 0 < |d_i|);
	 * tolerance: atol + rtol max |A|, and max_diff over it. */
	double max_bound, ratio;
	/* The element of the worst ratio (tolerance: of max |d|), -1 when
	 * nothing differs, with its |d| and bound. */
	int64_t at;
	double at_diff, at_bound;
	char none[TPS_BOUND_REASON_MAX]; /* tolerance: why no bound */
};

struct tps_diff {
	const char *name_a, *name_b;	 /* not owned */
	char label_a[256], label_b[256]; /* "mesh tp=2, 3 training steps" */
	int n_modules, n_params;
	int n_rows;
	struct tps_diff_row *rows; /* execution order: A's, then B's own */
	int compared;		   /* rows in both traces */
	int only_a, only_b;	   /* rows in one trace only */
	int first; /* the first row beyond its rule (execution order), -1 */
	int worst; /* the row of the largest ratio, -1 when none */
	int tolerance_rows; /* compared by the tolerance rule */
	double atol, rtol;  /* the tolerance rule's */
};

/*
 * Compares traces a and b (named name_a and name_b in messages; each as
 * tps_trace_read loads and validates it; not modified) into *d, running
 * each one's bound pass on `threads` threads (0: the cores). Errors, with
 * *d untouched:
 *   TPS_ERR_INPUT  a trace without values (symbolic, summary, none), or
 *                  whose config does not parse, at its pointer; traces of
 *                  different models (the modules, the parameters' names
 *                  and shapes, the input's shape, the loss), at B's
 *                  pointer of the first difference, naming A
 *   TPS_ERR_NOMEM, TPS_ERR_LIMIT, TPS_ERR_NUMERIC  from the bound passes
 */
enum tps_status tps_diff_build(struct tps_diff *d, const cJSON *a,
			       const char *name_a, const cJSON *b,
			       const char *name_b, int threads,
			       struct tps_error *err);

/* Writes the comparison: both traces, the table of every compared tensor
 * in execution order (only step `step`'s when step >= 0; setup rows only
 * when it is -1), then the first divergence or that there is none, which
 * always speak of every step. The same bytes for the same traces: no
 * locale, no clock. */
void tps_diff_write(FILE *out, const struct tps_diff *d,
		    enum tps_diff_format format, long step);

/* "step 0, forward, fc2.out" or "setup, fc1.weight" into buf. */
void tps_diff_row_name(const struct tps_diff_row *r, char *buf, size_t size);

/* A trace for a legend or a heading: "mesh dp=2 x tp=2, bfloat16, inject
 * skip_all_reduce" (long), or "dp=2 x tp=2 bfloat16 skip_all_reduce"
 * (short: only mesh dims of more than one rank, "1 device" when none). */
void tps_diff_trace_label(const cJSON *trace, bool brief, char *buf,
			  size_t size);

/* The trace's storage dtypes in a few words: "float32" (every role),
 * "bfloat16", "bfloat16 (master_params float32, reduce float32)": the
 * dtype most roles have, then the others. */
void tps_diff_dtype_label(const cJSON *trace, char *buf, size_t size);

void tps_diff_free(struct tps_diff *d);

#endif
