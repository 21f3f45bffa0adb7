/*
 * The fixture checker behind `tpsim check TRACE FIXTURE` (docs/design.md
 * section 6).
 *
 * A fixture is a partial trace: every key it has must match the trace, keys it
 * lacks are ignored. Rules:
 *  - Objects: each fixture key must exist in the trace's object and match.
 *  - Arrays: lengths must be equal, then element by element. One
 *    exception: a fixture event's "ranks" whose every entry has a numeric
 *    "rank" is matched by that number, so a fixture may list only some
 *    ranks ({"rank": 3, ...} is the trace's rank 3, not its first entry);
 *    a rank the trace lacks is a mismatch.
 *  - Numbers: |trace - fixture| <= atol + rtol * |fixture|, with the tolerance
 *    in force (default {"atol": 0, "rtol": 0}).
 *  - Strings and booleans: exactly. A type difference is a mismatch.
 *  - Reserved keys: "tolerance" ({"atol": a, "rtol": r}, finite, >= 0; at the
 *    fixture's top level or in one fixture event, where it applies to that
 *    event) and "match" (in fixture events only).
 *  - The top-level "events" array of the fixture is not compared by position:
 *    each fixture event is matched to the first trace event after the
 *    previously matched one whose keys equal every key of its "match" object
 *    (compared by the same rules, with zero tolerance); a fixture event without
 *    "match" takes the next trace event. The fixture event's other keys are
 *    then compared with that trace event. A fixture event that finds no trace
 *    event is a mismatch.
 *
 * Each mismatch is one line, naming the fixture's JSON Pointer, both values
 * and, inside events, the trace event's seq:
 *   "/events/3/ranks/1/values/0/1: expected 70, got 71 (trace event seq 5)"
 *   "/result/match: expected true, got false"
 *   "/events/4/op: missing in trace (trace event seq 7)"
 *   "/events/6: no trace event after seq 9 matches {\"module\":\"fc2\",...}"
 * Numbers in these lines are printed as the shortest round-trip decimal
 * (%.17g trimmed), strings JSON-escaped, objects/arrays as compact JSON cut
 * at 60 characters.
 */
#ifndef TPSIM_FIXTURE_CHECK_H
#define TPSIM_FIXTURE_CHECK_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "error.h"
#include "jsonio.h"

/* Mismatch lines reported before the rest are summed up in one line. */
#define TPS_CHECK_MAX_LINES 100

/* One mismatch, its line and the line's parts; valid during the call. */
struct tps_check_mismatch {
	/* The fixture's JSON Pointer, unescaped ("" is the whole fixture);
	 * NULL for the closing "... N more mismatches". */
	const char *pointer;
	/* The fixture's and the trace's values as the line writes them
	 * (numbers shortest, strings quoted, arrays and objects cut at 60
	 * characters); NULL where the mismatch is not two values: got is
	 * NULL for a key missing in the trace, both for an event or a rank
	 * the trace lacks. */
	const char *expected, *got;
	long long seq;	  /* the trace event's seq; -1 outside events */
	const char *what; /* the words after the pointer, without the seq */
	const char *line; /* the whole line, as `tpsim check` prints it */
};

/* Receives each mismatch (m->line has no newline); ctx is passed through. */
typedef void (*tps_check_report_fn)(void *ctx,
				    const struct tps_check_mismatch *m);

/*
 * Compares `trace` against `fixture` (both strictly parsed trees).
 * `fixture_name` is the fixture file's name, used in trouble messages.
 * Calls report() once per mismatch, in fixture order, for the first
 * TPS_CHECK_MAX_LINES of them, then once more with "... N more mismatches"
 * when there are more; sets *mismatches to their whole count (0 = the trace
 * matches).
 * Returns TPS_ERR_INPUT (trouble, not a mismatch) when the trace is not a
 * tpsim trace (tps_check_is_trace) or the fixture is malformed (not an
 * object; a config, which has a top-level "tpsim"; "events" not an array
 * of objects; "match" not an object; bad "tolerance": not an object,
 * unknown key, not a finite number >= 0). Such messages read
 * "<fixture_name>: <pointer>: <what is wrong>"; for the trace,
 * "<trace_name>: /format: expected \"tpsim.trace\", got ...".
 */
enum tps_status tps_check_fixture(const cJSON *trace, const char *trace_name,
				  const cJSON *fixture,
				  const char *fixture_name,
				  tps_check_report_fn report, void *ctx,
				  size_t *mismatches, struct tps_error *err);

/* TPS_OK when `trace` is a tpsim trace ("format": "tpsim.trace",
 * "version": 1, and none of a fixture's reserved keys); else TPS_ERR_INPUT
 * with a message naming trace_name and the pointer, as tps_check_fixture
 * reports it. A config or a fixture is named as such: "c.json: /tpsim:
 * expected a tpsim trace (...), got a tpsim config: ...". Only the header:
 * tps_trace_validate (trace.h) checks the rest. */
enum tps_status tps_check_is_trace(const cJSON *trace, const char *trace_name,
				   struct tps_error *err);

/* What a parsed file recognisably is, so that one passed where another
 * kind belongs is named as what it is, not reported as missing keys. */
#endif
