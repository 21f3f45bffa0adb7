/*
 * One `tpsim run`: config -> model -> trace, checked against the reference.
 *
 * The trace goes to a temporary file first and is renamed onto the output
 * path (or copied to the given stream) only when the whole run succeeded, so
 * a failed run never leaves a partial trace and an existing output file is
 * only replaced on success.
 */
#ifndef TPSIM_RUN_H
#define TPSIM_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tpsim/config.h"
#include "tpsim/model.h"

struct tps_run_options {
	const char *config_path; /* "-" is stdin */
	const char *output_path; /* NULL: write to `stream` */
	int64_t max_memory;	 /* bytes; refuse larger runs */
	/* Config variables set from outside ("--set"); see config.h. */
	const struct tps_config_var *overrides;
	int n_overrides;
	/* Threads the ranks and the reference run on; 0: the machine's
	 * cores. The trace is the same bytes for every count. */
	int threads;
	/* "--symbolic": run as if the config said "compute": "symbolic". */
	bool symbolic;
};

/* Where a run's time and memory went (`tpsim run --stats`). Seconds are
 * wall-clock; the trace's writing is taken out of the phase it happened
 * in. */
struct tps_run_stats {
	int threads;
	double init_s;	    /* config, parameters, their distribution, input */
	double tp_s;	    /* the simulated ranks' steps */
	double reference_s; /* the single-device reference */
	double trace_s;	    /* formatting and writing the trace */
	double total_s;
	int64_t trace_bytes;
	int64_t tensor_peak_bytes; /* the most tensor values held at once */
	int64_t peak_rss_bytes;	   /* the process's (getrusage), 0 unknown */
};

/* TP off the innermost dim, up to 3 idle mesh dims, unequal dp parts. */
#define TPS_RUN_MAX_WARNINGS 8

/* What the one-line summary says. */
struct tps_run_summary {
	char mesh[128]; /* "(2, 2) dp x tp" */
	int world_size;
	int n_modules;
	int64_t events;
	int64_t collectives;
	int64_t bytes_per_rank;
	float max_abs_diff;
	bool match;
	/* The tensors compared (output; in training also every loss,
	 * gradient and parameter after), and how many of them exactly
	 * (tps_model_exactness); the rest within the tolerance. */
	int compared, exact;
	/* The injected mistake the run carried out ("" if none): then match
	 * is false; mistake_hidden when the numbers alone were within the
	 * tolerance. */
	char mistake[64];
	bool mistake_hidden;
	/* Training: the steps run and the last step's loss, both ways. */
	int steps;
	float loss, reference_loss;
	/* What the trace's "warnings" hold, for stderr too. */
	int n_warnings;
	char warnings[TPS_RUN_MAX_WARNINGS][512];
	/* With "inject": what the mistake did, read from its symptom, and
	 * the shape error it stopped the simulation at ("" if none). */
	char diagnosis[1024];
	char stopped[TPS_ERROR_MESSAGE_MAX];
	/* A symbolic run: no values and no reference (match is true); what
	 * each rank holds, and the collective bytes per rank by phase. */
	bool symbolic;
	int optimizer_states;
	struct tps_model_footprint footprint;
	int64_t phase_bytes[TPS_PHASE_COUNT];
	struct tps_run_stats stats;
};

/*
 * Runs the config. On TPS_OK the trace is complete and *summary filled;
 * summary->match tells whether TP agreed with the reference (a symbolic
 * run has none to agree with: match is true). On error
 * nothing was written (the temporary file is removed).
 */
enum tps_status tps_run(const struct tps_run_options *opts, FILE *stream,
			struct tps_run_summary *summary, struct tps_error *err);

/*
 * The warnings a spec earns, at most TPS_RUN_MAX_WARNINGS, into
 * summary->warnings: TP off the innermost mesh dim; each mesh dim of size 2
 * or more that is neither tp_dim nor a dp dim (its ranks repeat each other's
 * work; a name like "dp" gets the hint that dp_dim would split the batch);
 * with a mean loss, dp ranks holding unequal parts of the batch (dp_grad
 * global: what DDP would weight differently; ddp: that the step is not the
 * global-batch gradient).
 */
void tps_run_warnings(const struct tps_model_spec *spec,
		      const int64_t *dp_counts, int dp,
		      struct tps_run_summary *summary);

/*
 * max |a - b| over all elements (shapes must be equal, else *match is false
 * and *max_abs_diff is +inf), and whether it is within atol + rtol * max|b|.
 */
void tps_run_compare(const struct tps_tensor *a, const struct tps_tensor *b,
		     double atol, double rtol, float *max_abs_diff,
		     bool *match);

/* Compares two outcomes (the simulation's and the reference's): the
 * output, and in training every step's loss, every gradient and every
 * parameter after the last step; the max over all of max |a - b|, and
 * whether each matches: exactly (every element equal) where b->exact says
 * so, else within atol + rtol * its largest reference value. */
void tps_run_compare_outcomes(const struct tps_model_outcome *a,
			      const struct tps_model_outcome *b, double atol,
			      double rtol, float *max_abs_diff, bool *match);

/* How many tensors tps_run_compare_outcomes compares against ref, and how
 * many of them exactly. */
void tps_run_count_exact(const struct tps_model_outcome *ref, int *exact,
			 int *compared);

#endif
