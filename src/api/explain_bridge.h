/*
 * TEMPORARY (issue 16): what the public API's tpsim_explain needs from
 * explain, until explain's rendering moves from src/cli/cli_explain.c into
 * the library (src/trace/explain.c, a helper's part of issue 16). Until
 * then src/cli/cli_explain.c defines tps_explain_write by running the verb
 * on the read trace, and libtpsim takes src/cli's objects in too (hidden:
 * they export nothing). When src/trace/explain.h lands with this
 * function, this header and the bridge go, api_render.c includes
 * explain.h, and libtpsim drops cli_lib (src/meson.build). Not installed.
 */
#ifndef TPSIM_EXPLAIN_BRIDGE_H
#define TPSIM_EXPLAIN_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "error.h"

/* tpsim explain's options, checked by the caller (tpsim_explain). */
struct tps_explain_options {
	bool md;	    /* --format md */
	long step;	    /* --step; -1: every step */
	const char *module; /* --module; NULL: every module */
	const char *phase;  /* --phase; NULL: every phase */
	size_t max_values;  /* --max-values; 0: all */
	int heading;	    /* --heading-level, 1 to 4 */
	bool pictures;	    /* --pictures */
	bool color;	    /* bold headings in text */
};

/*
 * Writes `tpsim explain` of a read and validated trace (tps_trace_read;
 * trace_name names it in messages) to out. On error (a --module the trace
 * lacks, a picture --pictures cannot draw: TPS_ERR_INPUT; TPS_ERR_NOMEM)
 * the message is the line `tpsim explain` prints after "tpsim: ", and
 * what was written to out is the caller's to drop.
 */
enum tps_status tps_explain_write(FILE *out, const cJSON *trace,
				  const char *trace_name,
				  const struct tps_explain_options *opts,
				  struct tps_error *err);

#endif
