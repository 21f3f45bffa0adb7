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

struct tps_run_options {
	const char *config_path; /* "-" is stdin */
	const char *output_path; /* NULL: write to `stream` */
	int64_t max_memory;	 /* bytes; refuse larger runs */
};

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
};

/*
 * Runs the config. On TPS_OK the trace is complete and *summary filled;
 * summary->match tells whether TP agreed with the reference. On error
 * nothing was written (the temporary file is removed).
 */
enum tps_status tps_run(const struct tps_run_options *opts, FILE *stream,
			struct tps_run_summary *summary, struct tps_error *err);

/*
 * max |a - b| over all elements (shapes must be equal, else *match is false
 * and *max_abs_diff is +inf), and whether it is within atol + rtol * max|b|.
 */
void tps_run_compare(const struct tps_tensor *a, const struct tps_tensor *b,
		     double atol, double rtol, float *max_abs_diff,
		     bool *match);

#endif
