/*
 * explain: the library's explanation of a trace (explain.h), called as the
 * public API and the CLI call it: a loaded trace and options in, text or
 * Markdown out, and a status with a message (never an exit) for what it
 * refuses. `tpsim explain`'s own tests (tests/cli/test_cli.c) hold the
 * command line.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "explain.h"
#include "trace.h"

#define GOLDEN "tests/golden/seed_2x4_rowwise_after_reduce.trace.json"

static cJSON *load(const char *relative)
{
	cJSON *trace = NULL;
	struct tps_error e = {0};
	ck_assert_msg(tps_trace_read(tu_source_path(relative), &trace, NULL,
				     NULL, &e) == TPS_OK,
		      "%s", e.message);
	return trace;
}

/* What tps_explain wrote (a malloc'd string, *len bytes) and its
 * status. */
static enum tps_status explain_into(const cJSON *trace,
				    const struct tps_explain_options *o,
				    char **text, size_t *len,
				    struct tps_error *e)
{
	FILE *out = open_memstream(text, len);
	enum tps_status st;
	ck_assert_ptr_nonnull(out);
	st = tps_explain(out, trace, "t.json", o, e);
	ck_assert_int_eq(fclose(out), 0);
	return st;
}

/* tests/golden/explain holds `tpsim explain`'s text and Markdown of the
 * seed's trace, checked by hand when it was written: the library writes
 * those bytes itself. */
START_TEST(explain_writes_the_golden_text_and_markdown)
{
	static const struct {
		enum tps_explain_format format;
		const char *golden;
	} cases[] = {
		{TPS_EXPLAIN_TEXT,
		 "tests/golden/explain/seed_2x4_rowwise_after_reduce.txt"},
		{TPS_EXPLAIN_MARKDOWN,
		 "tests/golden/explain/seed_2x4_rowwise_after_reduce.md"},
	};
	cJSON *trace = load(GOLDEN);
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct tps_explain_options o = TPS_EXPLAIN_OPTIONS_DEFAULT;
		struct tps_error e = {0};
		char *text = NULL, *want;
		size_t len = 0, want_len = 0;
		o.format = cases[c].format;
		ck_assert_int_eq(explain_into(trace, &o, &text, &len, &e),
				 TPS_OK);
		want = tu_read_file(tu_source_path(cases[c].golden), &want_len);
		ck_assert_ptr_nonnull(want);
		ck_assert_msg(len == want_len && memcmp(text, want, len) == 0,
			      "%s differs; the library wrote:\n%s",
			      cases[c].golden, text);
		free(text);
		free(want);
	}
	cJSON_Delete(trace);
}
END_TEST

/* Colour is the caller's to ask for, never the library's to guess (no
 * terminal test, no environment): text gets it when asked, Markdown
 * never. */
START_TEST(explain_colours_text_only_when_asked)
{
	cJSON *trace = load(GOLDEN);
	struct tps_explain_options o = TPS_EXPLAIN_OPTIONS_DEFAULT;
	struct tps_error e = {0};
	char *text = NULL;
	size_t len = 0;

	ck_assert_int_eq(explain_into(trace, &o, &text, &len, &e), TPS_OK);
	ck_assert_ptr_null(strchr(text, '\033'));
	free(text);
	o.color = true;
	ck_assert_int_eq(explain_into(trace, &o, &text, &len, &e), TPS_OK);
	/* The heading bold, the all_reduce yellow, the verdict green. */
	ck_assert_ptr_nonnull(strstr(text, "\033[1mforward, step 0:\033[0m\n"));
	ck_assert_ptr_nonnull(strstr(text, "\033[33mall_reduce "));
	ck_assert_ptr_nonnull(strstr(text, "; \033[32mmatches the reference bit "
					   "for bit, as it must: no sum rounds "
					   "(bound 0)\033[0m\n"));
	free(text);
	o.format = TPS_EXPLAIN_MARKDOWN;
	ck_assert_int_eq(explain_into(trace, &o, &text, &len, &e), TPS_OK);
	ck_assert_ptr_null(strchr(text, '\033'));
	free(text);
	cJSON_Delete(trace);
}
END_TEST

/*
 * What the library refuses, each before writing a byte, with a status and
 * a message (the CLI turns TPS_ERR_USAGE into exit 2 and the hint): a
 * module no event has, naming the closest; options out of range, which a
 * caller other than the CLI could pass.
 */
START_TEST(explain_refuses_before_writing_anything)
{
	struct row {
		const char *module, *phase;
		long step;
		int format, heading;
		enum tps_status status;
		const char *message;
	};
	static const struct row rows[] = {
		{"fcc", NULL, -1, TPS_EXPLAIN_TEXT, 1, TPS_ERR_USAGE,
		 "--module 'fcc' names no module of t.json; the closest: "
		 "'fc'"},
		{"c", NULL, -1, TPS_EXPLAIN_MARKDOWN, 1, TPS_ERR_USAGE,
		 "--module 'c' names no module of t.json; the closest: 'fc'"},
		{"a\nb", NULL, -1, TPS_EXPLAIN_TEXT, 1, TPS_ERR_USAGE,
		 "--module 'a\\nb' names no module of t.json; the closest: "
		 "'fc'"},
		{NULL, "sideways", -1, TPS_EXPLAIN_TEXT, 1, TPS_ERR_USAGE,
		 "explain: phase 'sideways': expected setup, forward, "
		 "backward or optimizer"},
		{NULL, NULL, -2, TPS_EXPLAIN_TEXT, 1, TPS_ERR_USAGE,
		 "explain: step -2: expected a step number (0, 1, ...) or -1 "
		 "for every step"},
		{NULL, NULL, -1, TPS_EXPLAIN_MARKDOWN, 5, TPS_ERR_USAGE,
		 "explain: heading level 5: expected 1, 2, 3 or 4"},
		{NULL, NULL, -1, TPS_EXPLAIN_MARKDOWN, 0, TPS_ERR_USAGE,
		 "explain: heading level 0: expected 1, 2, 3 or 4"},
		{NULL, NULL, -1, 7, 1, TPS_ERR_USAGE,
		 "explain: format 7 is neither text nor Markdown"},
	};
	cJSON *trace = load(GOLDEN);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct tps_explain_options o = TPS_EXPLAIN_OPTIONS_DEFAULT;
		struct tps_error e = {0};
		char *text = NULL;
		size_t len = 0;
		o.module = rows[i].module;
		o.phase = rows[i].phase;
		o.step = rows[i].step;
		o.format = (enum tps_explain_format)rows[i].format;
		o.heading_level = rows[i].heading;
		ck_assert_int_eq(explain_into(trace, &o, &text, &len, &e),
				 rows[i].status);
		ck_assert_int_eq(e.status, rows[i].status);
		ck_assert_msg(strcmp(e.message, rows[i].message) == 0,
			      "row %zu: got \"%s\"", i, e.message);
		ck_assert_msg(len == 0, "row %zu wrote: %s", i, text);
		free(text);
	}
	cJSON_Delete(trace);
}
END_TEST

/* With pictures, an event that cannot be drawn (a tree that did not come
 * through the validating reader) is refused before the first byte, with
 * the picture's own message at its JSON Pointer. */
START_TEST(explain_refuses_a_picture_it_cannot_draw_before_writing)
{
	cJSON *trace = load(GOLDEN);
	cJSON *ev = cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(trace, "events"), 5);
	struct tps_explain_options o = TPS_EXPLAIN_OPTIONS_DEFAULT;
	struct tps_error e = {0};
	char *text = NULL;
	size_t len = 0;

	ck_assert(cJSON_ReplaceItemInArray(
		cJSON_GetObjectItemCaseSensitive(ev, "placements"), 0,
		cJSON_CreateString("spread")));
	ck_assert_int_eq(explain_into(trace, &o, &text, &len, &e), TPS_OK);
	free(text);
	o.pictures = true;
	ck_assert_int_eq(explain_into(trace, &o, &text, &len, &e),
			 TPS_ERR_INPUT);
	ck_assert_msg(strstr(e.message, "t.json: /events/5/placements/0: ") ==
			      e.message,
		      "%s", e.message);
	ck_assert_msg(len == 0, "wrote: %s", text);
	free(text);
	cJSON_Delete(trace);
}
END_TEST

/* A stream that cannot be written is an I/O error, not a success. */
START_TEST(explain_reports_an_output_it_cannot_write)
{
	cJSON *trace = load(GOLDEN);
	struct tps_explain_options o = TPS_EXPLAIN_OPTIONS_DEFAULT;
	struct tps_error e = {0};
	FILE *full = fopen("/dev/full", "w");
	ck_assert_ptr_nonnull(full);
	setvbuf(full, NULL, _IONBF, 0);
	ck_assert_int_eq(tps_explain(full, trace, "t.json", &o, &e),
			 TPS_ERR_IO);
	ck_assert_str_eq(e.message,
			 "explain: writing the explanation of t.json failed");
	fclose(full);
	cJSON_Delete(trace);
}
END_TEST

/* How the tensors were compared, in explain's words. */
START_TEST(comparison_is_described_in_four_ways)
{
	char buf[96];
	tps_trace_describe_comparison(9, 9, 9, buf, sizeof buf);
	ck_assert_str_eq(buf, "exact comparison");
	tps_trace_describe_comparison(2, 9, 9, buf, sizeof buf);
	ck_assert_str_eq(buf, "error-bound comparison");
	tps_trace_describe_comparison(0, 0, 9, buf, sizeof buf);
	ck_assert_str_eq(buf, "tolerance comparison");
	tps_trace_describe_comparison(2, 5, 9, buf, sizeof buf);
	ck_assert_str_eq(buf, "error bounds for 5 of 9 tensors (2 exact), "
			      "tolerance for the rest");
}
END_TEST

static Suite *explain_suite(void)
{
	Suite *s = suite_create("explain");
	TCase *t = tcase_create("explain");
	tcase_add_test(t, explain_writes_the_golden_text_and_markdown);
	tcase_add_test(t, explain_colours_text_only_when_asked);
	tcase_add_test(t, explain_refuses_before_writing_anything);
	tcase_add_test(t,
		       explain_refuses_a_picture_it_cannot_draw_before_writing);
	tcase_add_test(t, explain_reports_an_output_it_cannot_write);
	tcase_add_test(t, comparison_is_described_in_four_ways);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tu_run_suite(explain_suite());
}
