/* view: `tpsim view TRACE -o FILE.html`: the page's golden bytes, its
 * embedding of the trace, determinism, bad arguments and atomic output.
 * What the page draws is tested in a browser: tests/browser/view_test.js
 * (the `browser` test). */
#include <check.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "cli.h"

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p;
	     p = strstr(p + 1, needle)) {
		n++;
	}
	return n;
}

/* tpsim run on a fixture's config into DIR/NAME.json; the trace's path in
 * a static buffer. */
static const char *trace_of(const char *dir, const char *name)
{
	static char trace[1024];
	char cfg[1024];
	struct tu_result r;
	snprintf(cfg, sizeof cfg, "%s/%s/config.json",
		 tu_source_path("fixtures"), name);
	snprintf(trace, sizeof trace, "%s/%s.json", dir, name);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s: %s", cfg, r.err);
	tu_result_free(&r);
	return trace;
}

/* The page of a trace, from stdout. */
static char *page_of(const char *trace)
{
	struct tu_result r = tu_cli(3, "view", trace);
	char *page = r.out;
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_uint_eq(r.err_len, 0);
	free(r.err);
	return page;
}

/* The golden is the code's own output, kept to catch any change; what the
 * page draws is asserted by the browser test. TPSIM_UPDATE_GOLDEN=1
 * rewrites it. */
START_TEST(view_page_matches_golden_for_the_2x4_example)
{
	const char *golden_rel =
		"tests/golden/view/seed_2x4_rowwise_after_reduce.html";
	const char *dir = tu_tempdir();
	char *page = page_of(trace_of(dir, "seed_2x4_rowwise_after_reduce"));
	char *golden;
	if (getenv("TPSIM_UPDATE_GOLDEN")) {
		tu_write_file(tu_source_path(golden_rel), page, strlen(page));
	}
	golden = tu_read_file(tu_source_path(golden_rel), NULL);
	ck_assert_msg(golden != NULL, "%s is missing", golden_rel);
	ck_assert_msg(strcmp(golden, page) == 0,
		      "%s differs (TPSIM_UPDATE_GOLDEN=1 rewrites it)",
		      golden_rel);
	free(golden);
	free(page);
	tu_rmtree(dir);
}
END_TEST

START_TEST(view_page_is_byte_identical_across_runs_and_paths)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "mesh_2d_dp_tp");
	char copy[1024], out[1024], *a, *b, *c, *text;
	size_t len;
	struct tu_result r;
	snprintf(copy, sizeof copy, "%s/elsewhere.json", dir);
	text = tu_read_file(trace, &len);
	tu_write_file(copy, text, len);
	free(text);
	a = page_of(trace);
	b = page_of(trace);
	c = page_of(copy); /* the file's name is not in the page */
	ck_assert_str_eq(a, b);
	ck_assert_str_eq(a, c);
	snprintf(out, sizeof out, "%s/m.html", dir);
	r = tu_cli(5, "view", trace, "-o", out);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_uint_eq(r.out_len + r.err_len, 0);
	tu_result_free(&r);
	text = tu_read_file(out, NULL);
	ck_assert_str_eq(text, a);
	free(text);
	free(a);
	free(b);
	free(c);
	tu_rmtree(dir);
}
END_TEST

/* The page is self-contained (no src=, href= or url( to fetch), and the
 * trace sits in it byte for byte but for "<", written \u003c. */
START_TEST(view_page_embeds_the_trace_and_fetches_nothing)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "seed_2x4_rowwise_after_reduce");
	char *text = tu_read_file(trace, NULL);
	char *page = page_of(trace);
	const char *open = "<script type=\"application/json\" id=\"trace\">";
	const char *at = strstr(page, open);
	ck_assert_ptr_nonnull(at);
	at += strlen(open);
	ck_assert_msg(strncmp(at, text, strlen(text)) == 0,
		      "the trace is not embedded as it is");
	at += strlen(text);
	ck_assert_msg(strncmp(at, "</script>\n<script>\n", 18) == 0,
		      "after the trace: %.40s", at);
	free(text);
	free(page);
	tu_rmtree(dir);
}
END_TEST

START_TEST(view_page_cannot_be_closed_early_by_the_trace)
{
	/* A note that says "</script><!--": the page must still have
	 * exactly its own two </script>, and the note must come back
	 * unchanged from JSON.parse (\u003c is "<"). */
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "seed_2x4_rowwise_after_reduce");
	char *text = tu_read_file(trace, NULL);
	char *evil, *page, path[1024];
	const char *note = "\"note\":\"";
	char *at = strstr(text, note);
	const char *inject = "</script><!--<script>";
	size_t pre, len = strlen(text);
	ck_assert_ptr_nonnull(at);
	pre = (size_t)(at - text) + strlen(note);
	evil = malloc(len + strlen(inject) + 1);
	memcpy(evil, text, pre);
	memcpy(evil + pre, inject, strlen(inject));
	memcpy(evil + pre + strlen(inject), text + pre, len - pre + 1);
	snprintf(path, sizeof path, "%s/evil.json", dir);
	tu_write_file(path, evil, strlen(evil));
	page = page_of(path);
	ck_assert_int_eq(count_of(page, "</script"), 2);
	ck_assert_int_eq(count_of(page, "<!--"), 0);
	ck_assert_ptr_nonnull(
		strstr(page, "\\u003c/script>\\u003c!--\\u003cscript>"));
	free(page);
	free(evil);
	free(text);
	tu_rmtree(dir);
}
END_TEST

START_TEST(view_page_has_no_network_references)
{
	const char *dir = tu_tempdir();
	char *page = page_of(trace_of(dir, "seed_2x4_colwise"));
	const char *never[] = {"http:",	  "https:", " src=",	  " href=",
			       "@import", "Date(",  "Math.random"};
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
		ck_assert_msg(strstr(page, never[i]) == NULL, "page has %s",
			      never[i]);
	}
	/* url() only for the page's own SVG markers (url(#id)) */
	for (const char *p = strstr(page, "url("); p;
	     p = strstr(p + 1, "url(")) {
		ck_assert_msg(p[4] == '#', "page fetches: %.40s", p);
	}
	ck_assert_ptr_nonnull(strstr(page, "default-src 'none'"));
	free(page);
	tu_rmtree(dir);
}
END_TEST

START_TEST(view_refuses_bad_arguments_with_one_line)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "seed_2x4_colwise");
	char config[1024], broken[1024], missing[1024], into_dir[1024];
	snprintf(config, sizeof config, "%s/seed_2x4_colwise/config.json",
		 tu_source_path("fixtures"));
	snprintf(broken, sizeof broken, "%s/broken.json", dir);
	tu_write_file(broken, "{\"format\": \"tpsim.trace\",", 25);
	snprintf(missing, sizeof missing, "%s/no/such/dir/x.html", dir);
	snprintf(into_dir, sizeof into_dir, "%s", dir);
	const struct {
		int argc;
		const char *argv[6];
		int lines;
		const char *message;
	} rows[] = {
		{1, {"view"}, 2, "view: expected TRACE"},
		{3,
		 {"view", trace, "extra"},
		 2,
		 "view: unexpected argument 'extra'"},
		{3,
		 {"view", trace, "--bogus"},
		 2,
		 "view: unknown option '--bogus'"},
		{3, {"view", trace, "-o"}, 2, "view: -o needs a file"},
		{2, {"view", "/nonexistent/t.json"}, 1, "/nonexistent/t.json"},
		{2, {"view", config}, 1, "/tpsim: expected a tpsim trace"},
		{2, {"view", broken}, 1, "/broken.json: "},
		{4,
		 {"view", trace, "-o", trace},
		 1,
		 "/seed_2x4_colwise.json: -o names the input "},
		{4,
		 {"view", trace, "-o", into_dir},
		 1,
		 "is a directory (-o names the HTML file)"},
		{4,
		 {"view", trace, "-o", missing},
		 1,
		 "/no/such/dir/x.html: cannot write: No such file or "
		 "directory"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char *argv[10] = {"tpsim"};
		struct tu_result r = {0};
		FILE *out, *err;
		for (int a = 0; a < rows[i].argc; a++) {
			argv[a + 1] = (char *)rows[i].argv[a];
		}
		out = open_memstream(&r.out, &r.out_len);
		err = open_memstream(&r.err, &r.err_len);
		r.rc = tps_cli_main(rows[i].argc + 1, argv, out, err);
		fclose(out);
		fclose(err);
		ck_assert_msg(r.rc == 2, "row %zu: exit %d", i, r.rc);
		ck_assert_msg(strstr(r.err, rows[i].message) != NULL,
			      "row %zu: \"%s\" not in: %s", i, rows[i].message,
			      r.err);
		ck_assert_msg(strncmp(r.err, "tpsim: ", 7) == 0, "row %zu: %s",
			      i, r.err);
		ck_assert_msg(tu_count_lines(r.err) == rows[i].lines,
			      "row %zu: %d lines: %s", i, tu_count_lines(r.err),
			      r.err);
		ck_assert_msg(r.out_len == 0, "row %zu: stdout: %s", i, r.out);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		n += strcmp(e->d_name, ".") != 0 &&
		     strcmp(e->d_name, "..") != 0;
	}
	closedir(d);
	return n;
}

START_TEST(view_leaves_no_partial_file_and_keeps_the_old_one_on_error)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "seed_2x4_colwise");
	char out_dir[1024], html[1100], config[1024], *kept;
	struct tu_result r;
	snprintf(config, sizeof config, "%s/seed_2x4_colwise/config.json",
		 tu_source_path("fixtures"));
	snprintf(out_dir, sizeof out_dir, "%s/out", dir);
	ck_assert_int_eq(mkdir(out_dir, 0777), 0);
	snprintf(html, sizeof html, "%s/t.html", out_dir);
	tu_write_file(html, "old", 3);
	r = tu_cli(5, "view", config, "-o", html); /* not a trace */
	ck_assert_int_eq(r.rc, 2);
	tu_result_free(&r);
	kept = tu_read_file(html, NULL);
	ck_assert_str_eq(kept, "old");
	free(kept);
	ck_assert_int_eq(count_entries(out_dir), 1);
	r = tu_cli(5, "view", trace, "-o", html);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	kept = tu_read_file(html, NULL);
	ck_assert_ptr_nonnull(strstr(kept, "<!DOCTYPE html>"));
	free(kept);
	ck_assert_int_eq(count_entries(out_dir), 1); /* no .tmp left */
	r = tu_cli(5, "view", trace, "-o", "/dev/null");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

static Suite *view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *page = tcase_create("page");
	TCase *cli_tc = tcase_create("cli");
	tcase_add_test(page, view_page_matches_golden_for_the_2x4_example);
	tcase_add_test(page, view_page_is_byte_identical_across_runs_and_paths);
	tcase_add_test(page, view_page_embeds_the_trace_and_fetches_nothing);
	tcase_add_test(page, view_page_cannot_be_closed_early_by_the_trace);
	tcase_add_test(page, view_page_has_no_network_references);
	tcase_add_test(cli_tc, view_refuses_bad_arguments_with_one_line);
	tcase_add_test(
		cli_tc,
		view_leaves_no_partial_file_and_keeps_the_old_one_on_error);
	suite_add_tcase(s, page);
	suite_add_tcase(s, cli_tc);
	return s;
}

int main(void)
{
	return tu_run_suite(view_suite());
}
