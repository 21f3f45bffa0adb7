/*
 * Tests of the fixture checker (fixture_check.h, docs/design.md section 6).
 *
 * Test JSON is written with ' for " so the literals stay readable; parse_q()
 * swaps them back before cJSON_Parse.
 */
#include "testutil.h"
#include "fixture_check.h"

#include <check.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A small trace: fc1 colwise over 2 ranks, gather, relu, fc2. */
static const char *const TRACE =
	"{'format':'tpsim.trace','version':1,'generator':'tpsim 0.1.0',"
	"'events':["
	"{'seq':0,'step':0,'phase':'forward','module':'fc1','kind':'compute',"
	"'op':'matmul','tensor':'fc1.out',"
	"'ranks':[{'rank':0,'shape':[1,2],'values':[[30,70]]},"
	"{'rank':1,'shape':[1,2],'values':[[110,150]]}]},"
	"{'seq':1,'step':0,'phase':'forward','module':'fc1',"
	"'kind':'collective','op':'all_gather','tensor':'fc1.out',"
	"'groups':[[0,1]],'bytes_per_rank':8,"
	"'ranks':[{'rank':0,'shape':[1,4],'values':[[30,70,110,150]]}]},"
	"{'seq':2,'step':0,'phase':'forward','module':'act',"
	"'kind':'compute','op':'relu','tensor':'act.out',"
	"'ranks':[{'rank':0,'shape':[1,4],'values':[[30,70,110,150]]}]},"
	"{'seq':3,'step':0,'phase':'forward','module':'fc2',"
	"'kind':'compute','op':'matmul','tensor':'fc2.out',"
	"'note':'bias added once',"
	"'ranks':[{'rank':0,'shape':[1,2],'values':[[0.5,-2.25]]}]}],"
	"'result':{'output':[[0.5,-2.25]],'max_abs_diff':0,'match':true}}";

/* Distinguishes "left untouched" from any count the checker could set. */
#define UNTOUCHED ((size_t)987654321)
#define MAX_LINES 256

struct lines {
	size_t n;
	char *v[MAX_LINES];
	/* Each mismatch's parts: "pointer|expected|got|seq", "-" for NULL. */
	char *parts[MAX_LINES];
};

struct outcome {
	enum tps_status status;
	size_t mismatches;
	struct lines lines;
	struct tps_error err;
};

static void collect(void *ctx, const struct tps_check_mismatch *m)
{
	struct lines *l = ctx;
	char parts[1024];

	ck_assert_uint_lt(l->n, MAX_LINES);
	l->v[l->n] = strdup(m->line);
	ck_assert_ptr_nonnull(l->v[l->n]);
	snprintf(parts, sizeof parts, "%s|%s|%s|%lld",
		 m->pointer ? m->pointer : "-", m->expected ? m->expected : "-",
		 m->got ? m->got : "-", m->seq);
	l->parts[l->n] = strdup(parts);
	ck_assert_ptr_nonnull(l->parts[l->n]);
	l->n++;
}

static void outcome_free(struct outcome *o)
{
	for (size_t i = 0; i < o->lines.n; i++) {
		free(o->lines.v[i]);
		free(o->lines.parts[i]);
	}
	o->lines.n = 0;
}

static cJSON *parse_q(const char *text)
{
	char *copy = strdup(text);
	cJSON *tree;

	ck_assert_ptr_nonnull(copy);
	for (char *p = copy; *p; p++) {
		if (*p == '\'') {
			*p = '"';
		}
	}
	tree = cJSON_Parse(copy);
	free(copy);
	ck_assert_msg(tree != NULL, "test JSON does not parse: %s", text);
	return tree;
}

static void run_trees(const cJSON *trace, const cJSON *fixture,
		      struct outcome *o)
{
	memset(o, 0, sizeof *o);
	o->mismatches = UNTOUCHED;
	o->status =
		tps_check_fixture(trace, "trace.json", fixture, "fix.json",
				  collect, &o->lines, &o->mismatches, &o->err);
}

static void run_texts(const char *trace, const char *fixture, struct outcome *o)
{
	cJSON *t = parse_q(trace);
	cJSON *f = parse_q(fixture);

	run_trees(t, f, o);
	cJSON_Delete(t);
	cJSON_Delete(f);
}

/* Succeeded with exactly n mismatches, all reported (n <= 100). */
static void expect_count(const struct outcome *o, size_t n)
{
	ck_assert_msg(o->status == TPS_OK, "status %d: %s", (int)o->status,
		      o->err.message);
	ck_assert_msg(o->mismatches == n && o->lines.n == n,
		      "expected %zu mismatches, got %zu (%zu lines; first: %s)",
		      n, o->mismatches, o->lines.n,
		      o->lines.n ? o->lines.v[0] : "none");
}

static void expect_line(const struct outcome *o, size_t i, const char *want)
{
	ck_assert_uint_lt(i, o->lines.n);
	ck_assert_str_eq(o->lines.v[i], want);
}

/* One case: trace and fixture, expecting exactly one given line. */
static void expect_one(const char *trace, const char *fixture, const char *want)
{
	struct outcome o;

	run_texts(trace, fixture, &o);
	expect_count(&o, 1);
	expect_line(&o, 0, want);
	outcome_free(&o);
}

/* A malloc'd copy of s with the first `from` replaced by `to`. */
static char *replace_once(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	size_t head, out_len;
	char *out;

	ck_assert_ptr_nonnull(at);
	head = (size_t)(at - s);
	out_len = strlen(s) - strlen(from) + strlen(to);
	out = malloc(out_len + 1);
	ck_assert_ptr_nonnull(out);
	memcpy(out, s, head);
	memcpy(out + head, to, strlen(to));
	memcpy(out + head + strlen(to), at + strlen(from),
	       strlen(at + strlen(from)) + 1);
	return out;
}

/* --- identity --- */

START_TEST(identical_trace_has_no_mismatches)
{
	struct outcome o;

	run_texts(TRACE, TRACE, &o);
	expect_count(&o, 0);
	outcome_free(&o);
}
END_TEST

START_TEST(empty_fixture_has_no_mismatches)
{
	struct outcome o;

	run_texts(TRACE, "{}", &o);
	expect_count(&o, 0);
	outcome_free(&o);
}
END_TEST

START_TEST(version_one_point_zero_is_version_one)
{
	struct outcome o;

	run_texts("{'format':'tpsim.trace','version':1.0}", "{}", &o);
	expect_count(&o, 0);
	outcome_free(&o);
}
END_TEST

/* --- numbers --- */

START_TEST(one_wrong_number_names_pointer_values_and_seq)
{
	char *fixture = replace_once(TRACE, "[[30,70]]", "[[30,71]]");

	expect_one(TRACE, fixture,
		   "/events/0/ranks/0/values/0/1: expected 71, got 70 "
		   "(trace event seq 0)");
	free(fixture);
}
END_TEST

/* The public API's check reports a mismatch's parts apart (tpsim.h):
 * the fixture's pointer unescaped, both values as the line writes them,
 * the trace event's seq. */
START_TEST(mismatch_parts_are_reported_apart)
{
	char *fixture = replace_once(TRACE, "[[30,70]]", "[[30,71]]");
	struct outcome o;

	run_texts(TRACE, fixture, &o);
	expect_count(&o, 1);
	ck_assert_str_eq(o.lines.parts[0],
			 "/events/0/ranks/0/values/0/1|71|70|0");
	outcome_free(&o);
	run_texts(TRACE,
		  "{'events':[{'match':{'seq':3},'bias':'after_reduce'}],"
		  "'comm':{'a~b/c':1}}",
		  &o);
	expect_count(&o, 2);
	ck_assert_str_eq(o.lines.parts[0],
			 "/events/0/bias|\"after_reduce\"|-|3");
	ck_assert_str_eq(o.lines.parts[1], "/comm|{\"a~b/c\":1}|-|-1");
	outcome_free(&o);
	run_texts("{'format':'tpsim.trace','version':1,'comm':{'a~b/c':2}}",
		  "{'comm':{'a~b/c':1}}", &o);
	expect_count(&o, 1);
	ck_assert_str_eq(o.lines.parts[0], "/comm/a~0b~1c|1|2|-1");
	outcome_free(&o);
	free(fixture);
}
END_TEST

START_TEST(every_mismatch_is_reported_in_fixture_order)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'events':[{'ranks':[{'values':[[31,70]]},"
		  "{'values':[[110,151]]}]}],"
		  "'result':{'max_abs_diff':1e-7}}",
		  &o);
	expect_count(&o, 3);
	expect_line(&o, 0,
		    "/events/0/ranks/0/values/0/0: expected 31, got 30 "
		    "(trace event seq 0)");
	expect_line(&o, 1,
		    "/events/0/ranks/1/values/0/1: expected 151, got 150 "
		    "(trace event seq 0)");
	expect_line(&o, 2, "/result/max_abs_diff: expected 1e-07, got 0");
	outcome_free(&o);
}
END_TEST

START_TEST(numbers_compare_as_doubles)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'events':[{'ranks':[{'values':[[3e1,70.0]]},{}]}],"
		  "'result':{'output':[[0.50,-225e-2]]}}",
		  &o);
	expect_count(&o, 0);
	outcome_free(&o);
}
END_TEST

START_TEST(numbers_print_shortest_round_trip)
{
	expect_one(TRACE, "{'result':{'output':[[0.1,-2.25]]}}",
		   "/result/output/0/0: expected 0.1, got 0.5");
	expect_one(TRACE, "{'result':{'output':[[0.5,-2.2500001]]}}",
		   "/result/output/0/1: expected -2.2500001, got -2.25");
}
END_TEST

START_TEST(numbers_print_alike_in_a_comma_locale)
{
	/* A decimal comma set by a program embedding tpsim does not reach
	 * the mismatch lines: "0.1", never "0,1". */
	const char *dir = tu_tempdir();
	struct outcome o;
	ck_assert_ptr_nonnull(setlocale(LC_NUMERIC, tu_comma_locale(dir)));
	run_texts(TRACE, "{'result':{'output':[[0.1,-2.25]]}}", &o);
	ck_assert_ptr_nonnull(setlocale(LC_NUMERIC, "C"));
	expect_count(&o, 1);
	expect_line(&o, 0, "/result/output/0/0: expected 0.1, got 0.5");
	outcome_free(&o);
	tu_rmtree(dir);
}
END_TEST

START_TEST(nan_never_matches)
{
	cJSON *trace = parse_q(TRACE);
	cJSON *fixture = parse_q("{'result':{'max_abs_diff':0}}");
	cJSON *t_result = cJSON_GetObjectItemCaseSensitive(trace, "result");
	cJSON *f_result = cJSON_GetObjectItemCaseSensitive(fixture, "result");
	struct outcome o;

	/* JSON cannot spell NaN; a tree built in memory can. */
	ck_assert(cJSON_ReplaceItemInObjectCaseSensitive(
		t_result, "max_abs_diff", cJSON_CreateNumber(NAN)));
	ck_assert(cJSON_ReplaceItemInObjectCaseSensitive(
		f_result, "max_abs_diff", cJSON_CreateNumber(NAN)));
	run_trees(trace, fixture, &o);
	expect_count(&o, 1);
	expect_line(&o, 0, "/result/max_abs_diff: expected NaN, got NaN");
	outcome_free(&o);
	cJSON_Delete(trace);
	cJSON_Delete(fixture);
}
END_TEST

/* --- structure --- */

START_TEST(missing_key_is_a_mismatch)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'events':[{'match':{'seq':3},'bias':'after_reduce'}],"
		  "'comm':{'all_reduce':1}}",
		  &o);
	expect_count(&o, 2);
	expect_line(&o, 0,
		    "/events/0/bias: missing in trace (trace event seq 3)");
	expect_line(&o, 1, "/comm: missing in trace");
	outcome_free(&o);
}
END_TEST

START_TEST(missing_events_in_trace_is_one_mismatch)
{
	expect_one("{'format':'tpsim.trace','version':1}",
		   "{'events':[{'op':'matmul'},{'op':'relu'}]}",
		   "/events: missing in trace");
}
END_TEST

START_TEST(array_length_difference_is_one_mismatch)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'events':[{'ranks':[{'shape':[1,2,1],"
		  "'values':[[30,70,1]]}]}]}",
		  &o);
	/* ranks has 1 element, the trace's 2: its elements go unchecked. */
	expect_count(&o, 1);
	ck_assert_ptr_nonnull(
		strstr(o.lines.v[0], "/events/0/ranks: expected 1 element "));
	outcome_free(&o);

	run_texts(TRACE,
		  "{'events':[{'ranks':[{'shape':[1,2,1],"
		  "'values':[[30,70,1]]},{}]}]}",
		  &o);
	expect_count(&o, 2);
	expect_line(&o, 0,
		    "/events/0/ranks/0/shape: expected 3 elements [1,2,1], "
		    "got 2 [1,2] (trace event seq 0)");
	expect_line(&o, 1,
		    "/events/0/ranks/0/values/0: expected 3 elements "
		    "[30,70,1], got 2 [30,70] (trace event seq 0)");
	outcome_free(&o);
}
END_TEST

START_TEST(ranks_that_name_their_rank_match_by_number)
{
	struct outcome o;
	/* Only rank 1, first in the fixture: it is the trace's rank 1. */
	run_texts(TRACE,
		  "{'events':[{'ranks':[{'rank':1,'values':[[110,150]]}]}]}",
		  &o);
	expect_count(&o, 0);
	outcome_free(&o);
	/* A wrong value names the fixture's pointer (its index 0). */
	expect_one(TRACE,
		   "{'events':[{'ranks':[{'rank':1,'values':[[110,151]]}]}]}",
		   "/events/0/ranks/0/values/0/1: expected 151, got 150 "
		   "(trace event seq 0)");
	/* Out of order, both ranks. */
	run_texts(TRACE,
		  "{'events':[{'ranks':[{'rank':1,'values':[[110,150]]},"
		  "{'rank':0,'values':[[30,70]]}]}]}",
		  &o);
	expect_count(&o, 0);
	outcome_free(&o);
	/* A rank the trace event does not have. */
	expect_one(TRACE, "{'events':[{'ranks':[{'rank':5}]}]}",
		   "/events/0/ranks/0: no rank 5 in the trace event "
		   "(trace event seq 0)");
	/* Outside an event's ranks, "rank" keys change nothing: the
	 * positional rule holds when one entry lacks its rank. */
	run_texts(TRACE, "{'events':[{'ranks':[{'rank':1},{}, {}]}]}", &o);
	expect_count(&o, 1);
	ck_assert_ptr_nonnull(
		strstr(o.lines.v[0], "/events/0/ranks: expected 3 elements"));
	outcome_free(&o);
}
END_TEST

START_TEST(type_difference_is_a_mismatch)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'result':{'output':{'a':1},'max_abs_diff':'0',"
		  "'match':1}}",
		  &o);
	expect_count(&o, 3);
	expect_line(&o, 0,
		    "/result/output: expected {\"a\":1}, got [[0.5,-2.25]]");
	expect_line(&o, 1, "/result/max_abs_diff: expected \"0\", got 0");
	expect_line(&o, 2, "/result/match: expected 1, got true");
	outcome_free(&o);
}
END_TEST

START_TEST(trace_events_not_an_array_is_a_type_mismatch)
{
	expect_one("{'format':'tpsim.trace','version':1,'events':{}}",
		   "{'events':[{'op':'matmul'}]}",
		   "/events: expected [{\"op\":\"matmul\"}], got {}");
}
END_TEST

START_TEST(long_values_are_cut_at_60_characters)
{
	expect_one(TRACE,
		   "{'result':{'match':[1000000,1000001,1000002,1000003,"
		   "1000004,1000005,1000006,1000007,1000008]}}",
		   "/result/match: expected [1000000,1000001,1000002,"
		   "1000003,1000004,1000005,1000006,100..., got true");
}
END_TEST

START_TEST(match_and_tolerance_are_ordinary_keys_elsewhere)
{
	struct outcome o;

	/* Only directly in a fixture event ("match", "tolerance") and at the
	 * top level ("tolerance") are they reserved. */
	run_texts(TRACE,
		  "{'match':{'module':'fc1'},"
		  "'events':[{'ranks':[{'match':1,'tolerance':-1},{}]}],"
		  "'result':{'match':false,'tolerance':{'atol':1}}}",
		  &o);
	expect_count(&o, 5);
	expect_line(&o, 0, "/match: missing in trace");
	expect_line(&o, 1,
		    "/events/0/ranks/0/match: missing in trace "
		    "(trace event seq 0)");
	expect_line(&o, 2,
		    "/events/0/ranks/0/tolerance: missing in trace "
		    "(trace event seq 0)");
	expect_line(&o, 3, "/result/match: expected false, got true");
	expect_line(&o, 4, "/result/tolerance: missing in trace");
	outcome_free(&o);
}
END_TEST

/* --- scalars --- */

START_TEST(string_mismatch_is_quoted)
{
	expect_one(TRACE, "{'events':[{'module':'fc2'}]}",
		   "/events/0/module: expected \"fc2\", got \"fc1\" "
		   "(trace event seq 0)");
	expect_one(TRACE, "{'events':[{'module':'FC1'}]}",
		   "/events/0/module: expected \"FC1\", got \"fc1\" "
		   "(trace event seq 0)");
}
END_TEST

START_TEST(string_control_characters_are_escaped)
{
	expect_one(TRACE, "{'result':{'match':'a\\nb'}}",
		   "/result/match: expected \"a\\nb\", got true");
}
END_TEST

START_TEST(boolean_mismatch_is_reported)
{
	expect_one(TRACE, "{'result':{'match':false}}",
		   "/result/match: expected false, got true");
}
END_TEST

/* --- events --- */

START_TEST(events_match_in_order_skipping_others)
{
	expect_one(TRACE,
		   "{'events':[{'match':{'module':'fc1'},'op':'matmul'},"
		   "{'match':{'module':'fc2'},'op':'matmul',"
		   "'ranks':[{'values':[[0.5,-2.5]]}]}]}",
		   "/events/1/ranks/0/values/0/1: expected -2.5, got -2.25 "
		   "(trace event seq 3)");
}
END_TEST

START_TEST(match_takes_the_first_event_after_the_previous)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'events':[{'match':{'module':'fc1'},'op':'matmul'},"
		  "{'match':{'module':'fc1'},'op':'all_gather'}]}",
		  &o);
	expect_count(&o, 0);
	outcome_free(&o);
	/* The first match is taken, not the best one. */
	expect_one(TRACE,
		   "{'events':[{'match':{'module':'fc1'},'op':'all_gather'}]}",
		   "/events/0/op: expected \"all_gather\", got \"matmul\" "
		   "(trace event seq 0)");
}
END_TEST

START_TEST(match_compares_nested_values_partially)
{
	struct outcome o;

	/* ranks of length 1 and rank 0: seq 1, not seq 0 (two ranks). */
	run_texts(TRACE,
		  "{'events':[{'match':{'ranks':[{'rank':0}]},"
		  "'op':'all_gather'}]}",
		  &o);
	expect_count(&o, 0);
	outcome_free(&o);
}
END_TEST

START_TEST(match_finding_nothing_is_one_mismatch)
{
	expect_one(TRACE,
		   "{'events':[{'match':{'module':'fc9'},'op':'matmul'}]}",
		   "/events/0: no trace event matches {\"module\":\"fc9\"}");
}
END_TEST

START_TEST(failed_match_leaves_the_position)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'events':[{'match':{'module':'fc1'}},"
		  "{'match':{'module':'fc9'}},"
		  "{'match':{'module':'act'},'op':'relu'},"
		  "{'match':{'module':'fc1'}}]}",
		  &o);
	expect_count(&o, 2);
	expect_line(&o, 0,
		    "/events/1: no trace event after seq 0 matches "
		    "{\"module\":\"fc9\"}");
	expect_line(&o, 1,
		    "/events/3: no trace event after seq 2 matches "
		    "{\"module\":\"fc1\"}");
	outcome_free(&o);
}
END_TEST

START_TEST(event_without_match_takes_the_next)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'events':[{'match':{'op':'all_gather'}},{'op':'relu'},"
		  "{'module':'fc2'}]}",
		  &o);
	expect_count(&o, 0);
	outcome_free(&o);
	expect_one(TRACE,
		   "{'events':[{'match':{'op':'all_gather'}},{'op':'matmul'}]}",
		   "/events/1/op: expected \"matmul\", got \"relu\" "
		   "(trace event seq 2)");
}
END_TEST

START_TEST(events_beyond_the_trace_are_mismatches)
{
	struct outcome o;

	run_texts(TRACE, "{'events':[{},{},{},{},{},{'seq':5}]}", &o);
	expect_count(&o, 2);
	expect_line(&o, 0,
		    "/events/4: no trace event left after seq 3 to compare "
		    "with");
	expect_line(&o, 1,
		    "/events/5: no trace event left after seq 3 to compare "
		    "with");
	outcome_free(&o);
	expect_one("{'format':'tpsim.trace','version':1,'events':[]}",
		   "{'events':[{'op':'matmul'}]}",
		   "/events/0: no trace event left to compare with");
}
END_TEST

START_TEST(event_without_seq_is_named_by_its_index)
{
	expect_one("{'format':'tpsim.trace','version':1,"
		   "'events':[{'op':'a'},{'op':'b'}]}",
		   "{'events':[{'match':{'op':'b'},'x':1}]}",
		   "/events/0/x: missing in trace (trace event /events/1)");
}
END_TEST

/* --- tolerance --- */

START_TEST(top_level_atol_accepts_within_and_rejects_outside)
{
	struct outcome o;

	/* |30.5 - 30| = 0.5 is exactly atol: inside. */
	run_texts(TRACE,
		  "{'tolerance':{'atol':0.5},'result':{'output':[[0.9,-2.5]]},"
		  "'events':[{'ranks':[{'values':[[30.5,69.5]]},{}]}]}",
		  &o);
	expect_count(&o, 0);
	outcome_free(&o);

	run_texts(TRACE,
		  "{'tolerance':{'atol':0.5},'result':{'output':[[1.1,-2.5]]}}",
		  &o);
	expect_count(&o, 1);
	ck_assert_ptr_nonnull(strstr(o.lines.v[0],
				     "/result/output/0/0: expected 1.1, got "
				     "0.5 (|diff| 0.6"));
	ck_assert_ptr_nonnull(strstr(o.lines.v[0], " > 0.5 allowed)"));
	outcome_free(&o);
}
END_TEST

START_TEST(rtol_is_relative_to_the_fixture_value)
{
	struct outcome o;

	/* 0.5 <= 0.01 * 70.5, but 0.5 > 0.01 * 30.5. */
	run_texts(TRACE,
		  "{'tolerance':{'rtol':0.01},"
		  "'events':[{'ranks':[{'values':[[30.5,70.5]]},{}]}]}",
		  &o);
	expect_count(&o, 1);
	ck_assert_ptr_nonnull(strstr(o.lines.v[0],
				     "/events/0/ranks/0/values/0/0: expected "
				     "30.5, got 30 (|diff| 0.5 > 0.305"));
	ck_assert_ptr_nonnull(strstr(o.lines.v[0], "(trace event seq 0)"));
	outcome_free(&o);
}
END_TEST

START_TEST(event_tolerance_applies_to_its_event_only)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'events':[{'match':{'seq':0},'tolerance':{'atol':1},"
		  "'ranks':[{'values':[[30.9,70]]},{}]},"
		  "{'match':{'seq':1},'ranks':[{'values':[[30.9,70,110,150]]}]}"
		  "],'result':{'output':[[0.9,-2.25]]}}",
		  &o);
	expect_count(&o, 2);
	expect_line(&o, 0,
		    "/events/1/ranks/0/values/0/0: expected 30.9, got 30 "
		    "(trace event seq 1)");
	expect_line(&o, 1, "/result/output/0/0: expected 0.9, got 0.5");
	outcome_free(&o);
}
END_TEST

START_TEST(event_tolerance_overrides_top_level)
{
	struct outcome o;

	expect_one(TRACE,
		   "{'tolerance':{'atol':1},"
		   "'events':[{'tolerance':{'atol':0},"
		   "'ranks':[{'values':[[30.5,70]]},{}]}],"
		   "'result':{'output':[[1,-2.25]]}}",
		   "/events/0/ranks/0/values/0/0: expected 30.5, got 30 "
		   "(trace event seq 0)");
	/* A key the event leaves out keeps the top-level value. */
	run_texts(TRACE,
		  "{'tolerance':{'rtol':0.01},"
		  "'events':[{'tolerance':{'atol':0},"
		  "'ranks':[{'values':[[30,70.5]]},{}]}]}",
		  &o);
	expect_count(&o, 0);
	outcome_free(&o);
}
END_TEST

START_TEST(match_ignores_tolerance)
{
	expect_one(TRACE,
		   "{'tolerance':{'atol':1},"
		   "'events':[{'match':{'seq':0.5},'tolerance':{'atol':1}}]}",
		   "/events/0: no trace event matches {\"seq\":0.5}");
}
END_TEST

START_TEST(tolerance_does_not_loosen_strings_or_lengths)
{
	struct outcome o;

	run_texts(TRACE,
		  "{'tolerance':{'atol':100,'rtol':1},"
		  "'events':[{'op':'matmul ','ranks':[{'shape':[1]}]}]}",
		  &o);
	expect_count(&o, 2);
	outcome_free(&o);
}
END_TEST

/* --- bad fixture (table) --- */

struct bad_case {
	const char *json;
	const char *message;
};

static const struct bad_case bad_fixtures[] = {
	{"[1]", "fix.json: (root): expected an object"},
	{"'x'", "fix.json: (root): expected an object (a partial trace), "
		"got \"x\""},
	{"{'tolerance':{'atol':-1}}",
	 "fix.json: /tolerance/atol: expected a finite number >= 0, "
	 "got -1"},
	{"{'tolerance':{'atol':'0.1'}}",
	 "fix.json: /tolerance/atol: expected a finite number >= 0, "
	 "got \"0.1\""},
	{"{'tolerance':{'rtol':1e999}}",
	 "fix.json: /tolerance/rtol: expected a finite number >= 0, "
	 "got Infinity"},
	{"{'tolerance':{'abs':0.1}}",
	 "fix.json: /tolerance/abs: unknown tolerance key"},
	{"{'tolerance':0.1}",
	 "fix.json: /tolerance: expected an object {\"atol\": a, "
	 "\"rtol\": r}, got 0.1"},
	{"{'events':[{'tolerance':{'rtol':-0.5}}]}",
	 "fix.json: /events/0/tolerance/rtol: expected a finite number"},
	{"{'events':[{},{'tolerance':{'atol':1,'Atol':1}}]}",
	 "fix.json: /events/1/tolerance/Atol: unknown tolerance key"},
	{"{'events':[{'tolerance':[]}]}",
	 "fix.json: /events/0/tolerance: expected an object"},
	{"{'events':{}}",
	 "fix.json: /events: expected an array of events, got {}"},
	{"{'events':[{},1]}",
	 "fix.json: /events/1: expected an event object, got 1"},
	{"{'events':[{'match':['fc1']}]}",
	 "fix.json: /events/0/match: expected an object of keys to match, "
	 "got [\"fc1\"]"},
	/* Trouble anywhere means no mismatch line at all. */
	{"{'result':{'match':false},'tolerance':{'atol':-1}}",
	 "fix.json: /tolerance/atol: "},
	{"{'result':{'match':false},'events':[{},{'match':1}]}",
	 "fix.json: /events/1/match: "},
	/* A config is no fixture: its keys would all be "missing in trace"
	 * mismatches, exit 1, which reads as a regression (issue 15, 4). */
	{"{'tpsim':1,'mesh':{'shape':[2],'dim_names':['tp']}}",
	 "fix.json: /tpsim: expected a fixture (a partial trace), got a "
	 "tpsim config: tpsim check TRACE FIXTURE compares a trace with a "
	 "fixture"},
	{"{'format':'tpsim.trace','tpsim':1}",
	 "fix.json: /tpsim: expected a fixture (a partial trace), got a "
	 "tpsim config"},
};

static void expect_trouble(const struct outcome *o, const char *message)
{
	ck_assert_msg(o->status == TPS_ERR_INPUT, "status %d, want %d",
		      (int)o->status, (int)TPS_ERR_INPUT);
	ck_assert_int_eq(o->err.status, TPS_ERR_INPUT);
	ck_assert_msg(strstr(o->err.message, message) != NULL,
		      "message \"%s\" lacks \"%s\"", o->err.message, message);
	ck_assert_uint_eq(o->mismatches, UNTOUCHED);
	ck_assert_uint_eq(o->lines.n, 0);
}

START_TEST(bad_fixture_is_input_error_naming_pointer)
{
	const struct bad_case *bc = &bad_fixtures[_i];
	struct outcome o;

	run_texts(TRACE, bc->json, &o);
	expect_trouble(&o, bc->message);
	outcome_free(&o);
}
END_TEST

/* --- bad trace (table) --- */

static const struct bad_case bad_traces[] = {
	{"[]", "trace.json: (root): not a tpsim trace: expected an object, "
	       "got []"},
	{"{'version':1}", "trace.json: /format: missing"},
	{"{'Format':'tpsim.trace','version':1}",
	 "trace.json: /format: missing"},
	{"{'format':'tpsim.config','version':1}",
	 "trace.json: /format: expected \"tpsim.trace\", "
	 "got \"tpsim.config\""},
	{"{'format':1,'version':1}",
	 "trace.json: /format: expected \"tpsim.trace\", got 1"},
	{"{'format':'tpsim.trace'}", "trace.json: /version: missing"},
	{"{'format':'tpsim.trace','version':2}",
	 "trace.json: /version: expected 1, got 2"},
	{"{'format':'tpsim.trace','version':'1'}",
	 "trace.json: /version: expected 1, got \"1\""},
	/* A config or a fixture where a trace belongs (issue 15, 4). */
	{"{'tpsim':1,'mesh':{'shape':[2],'dim_names':['tp']}}",
	 "trace.json: /tpsim: expected a tpsim trace (\"format\": "
	 "\"tpsim.trace\"), got a tpsim config: tpsim run CONFIG -o TRACE "
	 "makes its trace"},
	{"{'format':'tpsim.trace','version':1,'events':[{'match':{'op':'x'}}]}",
	 "trace.json: /events/0/match: expected a tpsim trace, got a tpsim "
	 "fixture: tpsim check TRACE FIXTURE takes the fixture second"},
	{"{'format':'tpsim.trace','version':1,'tolerance':{'atol':1}}",
	 "trace.json: /tolerance: expected a tpsim trace, got a tpsim "
	 "fixture"},
	{"{'events':[{},{'tolerance':{'atol':1}}]}",
	 "trace.json: /events/1/tolerance: expected a tpsim trace, got a "
	 "tpsim fixture"},
};

START_TEST(not_a_trace_is_input_error)
{
	const struct bad_case *bc = &bad_traces[_i];
	struct outcome o;

	run_texts(bc->json, "{}", &o);
	expect_trouble(&o, bc->message);
	outcome_free(&o);
}
END_TEST

START_TEST(trace_trouble_is_reported_before_fixture_trouble)
{
	struct outcome o;

	run_texts("{'format':'tpsim.trace','version':2}", "[]", &o);
	expect_trouble(&o, "trace.json: /version: ");
	outcome_free(&o);
}
END_TEST

/* --- cap --- */

/* A trace and fixture whose /result/v arrays differ in all n elements. */
static void run_n_wrong(size_t n, tps_check_report_fn report, struct outcome *o)
{
	char trace[2048];
	char fixture[2048];
	size_t tl, fl;
	cJSON *t, *f;

	ck_assert_uint_le(n, 500);
	tl = (size_t)snprintf(trace, sizeof trace,
			      "{\"format\":\"tpsim.trace\",\"version\":1,"
			      "\"result\":{\"v\":[");
	fl = (size_t)snprintf(fixture, sizeof fixture, "{\"result\":{\"v\":[");
	for (size_t i = 0; i < n; i++) {
		tl += (size_t)snprintf(trace + tl, sizeof trace - tl, "%s0",
				       i ? "," : "");
		fl += (size_t)snprintf(fixture + fl, sizeof fixture - fl, "%s1",
				       i ? "," : "");
	}
	snprintf(trace + tl, sizeof trace - tl, "]}}");
	snprintf(fixture + fl, sizeof fixture - fl, "]}}");
	t = cJSON_Parse(trace);
	f = cJSON_Parse(fixture);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(f);
	memset(o, 0, sizeof *o);
	o->mismatches = UNTOUCHED;
	o->status = tps_check_fixture(t, "trace.json", f, "fix.json", report,
				      &o->lines, &o->mismatches, &o->err);
	cJSON_Delete(t);
	cJSON_Delete(f);
}

START_TEST(over_100_mismatches_are_capped_with_exact_count)
{
	struct outcome o;

	run_n_wrong(150, collect, &o);
	ck_assert_int_eq(o.status, TPS_OK);
	ck_assert_uint_eq(o.mismatches, 150);
	ck_assert_uint_eq(o.lines.n, 101);
	expect_line(&o, 0, "/result/v/0: expected 1, got 0");
	expect_line(&o, 99, "/result/v/99: expected 1, got 0");
	expect_line(&o, 100, "... 50 more mismatches");
	outcome_free(&o);
}
END_TEST

START_TEST(exactly_100_mismatches_have_no_cap_line)
{
	struct outcome o;

	run_n_wrong(100, collect, &o);
	expect_count(&o, 100);
	expect_line(&o, 99, "/result/v/99: expected 1, got 0");
	outcome_free(&o);

	run_n_wrong(101, collect, &o);
	ck_assert_uint_eq(o.mismatches, 101);
	ck_assert_uint_eq(o.lines.n, 101);
	expect_line(&o, 100, "... 1 more mismatch");
	outcome_free(&o);
}
END_TEST

START_TEST(null_report_still_counts)
{
	struct outcome o;

	run_n_wrong(150, NULL, &o);
	ck_assert_int_eq(o.status, TPS_OK);
	ck_assert_uint_eq(o.mismatches, 150);
	ck_assert_uint_eq(o.lines.n, 0);
	outcome_free(&o);
}
END_TEST

static Suite *check_suite(void)
{
	Suite *s = suite_create("check");
	TCase *tc;

	tc = tcase_create("identity");
	tcase_add_test(tc, identical_trace_has_no_mismatches);
	tcase_add_test(tc, empty_fixture_has_no_mismatches);
	tcase_add_test(tc, version_one_point_zero_is_version_one);
	suite_add_tcase(s, tc);

	tc = tcase_create("numbers");
	tcase_add_test(tc, one_wrong_number_names_pointer_values_and_seq);
	tcase_add_test(tc, mismatch_parts_are_reported_apart);
	tcase_add_test(tc, every_mismatch_is_reported_in_fixture_order);
	tcase_add_test(tc, numbers_compare_as_doubles);
	tcase_add_test(tc, numbers_print_shortest_round_trip);
	tcase_add_test(tc, numbers_print_alike_in_a_comma_locale);
	tcase_add_test(tc, nan_never_matches);
	suite_add_tcase(s, tc);

	tc = tcase_create("structure");
	tcase_add_test(tc, missing_key_is_a_mismatch);
	tcase_add_test(tc, missing_events_in_trace_is_one_mismatch);
	tcase_add_test(tc, array_length_difference_is_one_mismatch);
	tcase_add_test(tc, ranks_that_name_their_rank_match_by_number);
	tcase_add_test(tc, type_difference_is_a_mismatch);
	tcase_add_test(tc, trace_events_not_an_array_is_a_type_mismatch);
	tcase_add_test(tc, long_values_are_cut_at_60_characters);
	tcase_add_test(tc, match_and_tolerance_are_ordinary_keys_elsewhere);
	suite_add_tcase(s, tc);

	tc = tcase_create("scalars");
	tcase_add_test(tc, string_mismatch_is_quoted);
	tcase_add_test(tc, string_control_characters_are_escaped);
	tcase_add_test(tc, boolean_mismatch_is_reported);
	suite_add_tcase(s, tc);

	tc = tcase_create("events");
	tcase_add_test(tc, events_match_in_order_skipping_others);
	tcase_add_test(tc, match_takes_the_first_event_after_the_previous);
	tcase_add_test(tc, match_compares_nested_values_partially);
	tcase_add_test(tc, match_finding_nothing_is_one_mismatch);
	tcase_add_test(tc, failed_match_leaves_the_position);
	tcase_add_test(tc, event_without_match_takes_the_next);
	tcase_add_test(tc, events_beyond_the_trace_are_mismatches);
	tcase_add_test(tc, event_without_seq_is_named_by_its_index);
	suite_add_tcase(s, tc);

	tc = tcase_create("tolerance");
	tcase_add_test(tc, top_level_atol_accepts_within_and_rejects_outside);
	tcase_add_test(tc, rtol_is_relative_to_the_fixture_value);
	tcase_add_test(tc, event_tolerance_applies_to_its_event_only);
	tcase_add_test(tc, event_tolerance_overrides_top_level);
	tcase_add_test(tc, match_ignores_tolerance);
	tcase_add_test(tc, tolerance_does_not_loosen_strings_or_lengths);
	suite_add_tcase(s, tc);

	tc = tcase_create("bad_fixture");
	tcase_add_loop_test(
		tc, bad_fixture_is_input_error_naming_pointer, 0,
		(int)(sizeof bad_fixtures / sizeof bad_fixtures[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("bad_trace");
	tcase_add_loop_test(tc, not_a_trace_is_input_error, 0,
			    (int)(sizeof bad_traces / sizeof bad_traces[0]));
	tcase_add_test(tc, trace_trouble_is_reported_before_fixture_trouble);
	suite_add_tcase(s, tc);

	tc = tcase_create("cap");
	tcase_add_test(tc, over_100_mismatches_are_capped_with_exact_count);
	tcase_add_test(tc, exactly_100_mismatches_have_no_cap_line);
	tcase_add_test(tc, null_report_still_counts);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return tu_run_suite(check_suite());
}
