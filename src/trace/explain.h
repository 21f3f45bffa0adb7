/*
 * explain: a trace, step by step, for people (`tpsim explain`;
 * docs/design.md section 7). Every event with every rank's shard, as text
 * or as Markdown: the mesh, the warnings, the global tensors, then each
 * event under a heading per phase and step (its placements before and
 * after, its groups and bytes, each rank's shape and values, the equation
 * of a collective, its note, and with pictures the sharding picture,
 * picture.h), the result against the reference and the communication.
 * More values than max_values are elided visibly, never dropped; the
 * step, module and phase filters pick the events.
 *
 * One view, two formats: each part is gathered once into a view (an
 * event's is struct explain_event_view, in explain.c) and written by the
 * text or the Markdown formatter. The output is the same bytes for the
 * same trace and options: no locale, no clock, no environment (colour is
 * the caller's choice).
 *
 * Example (what `tpsim explain t.json --format md` does):
 *
 *   struct tps_explain_options o = TPS_EXPLAIN_OPTIONS_DEFAULT;
 *   cJSON *trace;
 *   o.format = TPS_EXPLAIN_MARKDOWN;
 *   if (tps_trace_read("t.json", &trace, NULL, NULL, &err) == TPS_OK) {
 *           st = tps_explain(stdout, trace, "t.json", &o, &err);
 *           cJSON_Delete(trace);
 *   }
 */
#ifndef TPSIM_EXPLAIN_H
#define TPSIM_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "error.h"

enum tps_explain_format {
	TPS_EXPLAIN_TEXT,     /* aligned lines, for a terminal */
	TPS_EXPLAIN_MARKDOWN, /* headings, tables, code spans */
};

struct tps_explain_options {
	enum tps_explain_format format;
	/* The events shown: those of this step (-1: every step; setup
	 * events have none), module (NULL: every module; otherwise a name
	 * some event of the trace has) and phase (NULL: every phase;
	 * otherwise "setup", "forward", "backward" or "optimizer"). */
	long step;
	const char *module;
	const char *phase;
	/* Values per tensor before the rest are elided (0: no limit): the
	 * first and last max_values / 2 (at least 1, at most 512) are kept
	 * around "...". */
	size_t max_values;
	/* Markdown: the title's heading level, 1 to 4 (phases are one level
	 * below it, events two). */
	int heading_level;
	/* Each event's sharding picture under it (picture.h). */
	bool pictures;
	/* Text: ANSI colours (headings bold, collectives yellow, the verdict
	 * green or red). The caller decides; the CLI does on a terminal
	 * without NO_COLOR. Markdown has none. */
	bool color;
};

/* What `tpsim explain TRACE` shows: text, every event, 16 values, title
 * level 1, no pictures, no colour. */
#define TPS_EXPLAIN_OPTIONS_DEFAULT                                            \
	{                                                                      \
		TPS_EXPLAIN_TEXT, -1, NULL, NULL, 16, 1, false, false          \
	}

/*
 * Writes the explanation of `trace` (a tpsim trace as tps_trace_read
 * loads and validates it; not modified) to out. trace_name is the trace's
 * file name, for messages. Nothing is written unless everything can be:
 * errors found before the first byte are
 *   TPS_ERR_USAGE   options out of range; a module that no event of the
 *                   trace has, the message naming the closest names
 *                   ("--module 'fcc' names no module of t.json; the
 *                   closest: 'fc1', 'fc2'")
 *   TPS_ERR_INPUT   with pictures, an event that cannot be drawn
 *                   (tps_picture_from_event's message)
 *   TPS_ERR_NOMEM
 * After that, TPS_ERR_IO if out reports a write error (ferror), and
 * TPS_ERR_NOMEM if a picture cannot be made after all; out then holds part
 * of the explanation.
 */
enum tps_status tps_explain(FILE *out, const cJSON *trace,
			    const char *trace_name,
			    const struct tps_explain_options *opts,
			    struct tps_error *err);


#endif
