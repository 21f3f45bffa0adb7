/* cli: verbs, exit codes (0/1/2), messages, fixtures, the mesh printout. */
#include <check.h>
#include <pty.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "tpsim/cli.h"
#include "tpsim/jsonio.h"

static void write_text(const char *path, const char *text)
{
	tu_write_file(path, text, strlen(text));
}

static const char *write_config(const char *dir, const char *name,
				const char *text)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	tu_write_file(path, text, strlen(text));
	return path;
}

/* tpsim run CFG -o DIR/t.json, which must succeed; the trace's path in
 * trace. */
static void run_to_trace(const char *cfg, const char *dir, char *trace,
			 size_t size)
{
	struct tu_result r;
	snprintf(trace, size, "%s/t.json", dir);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s: %s", cfg, r.err);
	tu_result_free(&r);
}

static const char small_config[] =
	"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": [\"tp\"]},"
	" \"model\": [{\"name\": \"fc\", \"type\": \"linear\", "
	"\"in_features\": 4, \"out_features\": 2, \"bias\": false}], "
	"\"plan\": {\"fc\": \"rowwise\"}, \"input\": {\"shape\": [2, 4], "
	"\"init\": \"arange\"},"
	" \"init\": {\"method\": \"arange\"}}";

START_TEST(help_and_version_go_to_stdout)
{
	struct tu_result r = tu_cli(2, "--help");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "Usage: tpsim"));
	ck_assert_uint_eq(r.err_len, 0);
	tu_result_free(&r);
	r = tu_cli(2, "--version");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.out, "tpsim 0.3.0\n");
	tu_result_free(&r);
	r = tu_cli(3, "run", "--help");
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
}
END_TEST

START_TEST(usage_errors_are_one_line_and_a_hint)
{
	static const char *const cases[][4] = {
		{"", NULL, NULL, "missing command"},
		{"frobnicate", NULL, NULL, "unknown command 'frobnicate'"},
		{"run", NULL, NULL, "run: missing CONFIG"},
		{"run", "a.json", "--bogus", "unknown option '--bogus'"},
		{"run", "a.json", "-o", "-o needs a file"},
		{"check", "t.json", NULL, "expected TRACE FIXTURE"},
		{"mesh", "--shape", "3,x", "--shape expects"},
		{"mesh", "--names", "a", "missing --shape"},
		{"explain", NULL, NULL, "explain: expected TRACE"},
		{"explain", "t.json", "--step", "--step needs a step number"},
		{"explain", "--step", "x",
		 "--step needs a step number (0, 1, "
		 "...), got 'x'"},
		{"explain", "--max-values", "-1",
		 "--max-values needs a count "
		 "(0: no limit), got '-1'"},
		{"explain", "--phase", "sideways",
		 "--phase expects setup, forward, backward or optimizer, got "
		 "'sideways'"},
		{"explain", "t.json", "--module", "--module needs a name"},
		{"explain", "t.json", "--frob",
		 "explain: unknown option '--frob'"},
		{"explain", "a.json", "b.json",
		 "explain: unexpected argument "
		 "'b.json'"},
		{"explain", "t.json", "--format",
		 "--format expects text or md, got ''"},
		{"explain", "--format", "html",
		 "--format expects text or md, got 'html'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int argc = !cases[i][0][0]	 ? 1
			   : cases[i][1] == NULL ? 2
			   : cases[i][2] == NULL ? 3
						 : 4;
		struct tu_result r =
			tu_cli(argc, cases[i][0], cases[i][1], cases[i][2]);
		ck_assert_int_eq(r.rc, 2);
		ck_assert_msg(strstr(r.err, cases[i][3]) != NULL, "%s", r.err);
		ck_assert_ptr_nonnull(strstr(r.err, "\nTry 'tpsim --help'.\n"));
		ck_assert_int_eq(tu_count_lines(r.err), 2);
		ck_assert_uint_eq(r.out_len, 0);
		tu_result_free(&r);
	}
}
END_TEST

START_TEST(run_writes_trace_and_one_line_summary)
{
	const char *dir = tu_tempdir();
	char trace[512];
	const char *cfg = write_config(dir, "c.json", small_config);
	struct tu_result r;
	cJSON *root = NULL;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_uint_eq(r.out_len, 0);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	/* all_reduce of the (2, 2) output over 2 ranks: c = ceil(4/2) = 2
	 * floats = 8 bytes, 2 (n-1) c = 16. */
	ck_assert_ptr_nonnull(strstr(r.err, "1 collective (16 bytes/rank)"));
	ck_assert_ptr_nonnull(strstr(r.err, "matches the reference"));
	ck_assert_int_eq(
		tps_json_load(trace, TPS_JSON_MAX_TRACE_BYTES, &root, NULL),
		TPS_OK);
	cJSON_Delete(root);
	{
		/* An ordinary file: the umask's mode, not mkstemp's 0600. */
		struct stat st;
		mode_t mask = umask(0);
		umask(mask);
		ck_assert_int_eq(stat(trace, &st), 0);
		ck_assert_int_eq(st.st_mode & 0777, 0666 & ~mask);
	}
	tu_result_free(&r);
	/* "-o -" is stdout too. */
	r = tu_cli(5, "run", cfg, "-o", "-");
	ck_assert_int_eq(r.rc, 0);
	ck_assert(strncmp(r.out, "{\"format\":\"tpsim.trace\"", 23) == 0);
	ck_assert_int_ne(access("-", F_OK), 0);
	tu_result_free(&r);
	/* Without -o the trace goes to stdout, the summary to stderr. */
	r = tu_cli(2 + 1, "run", cfg, NULL);
	ck_assert_int_eq(r.rc, 0);
	ck_assert(strncmp(r.out, "{\"format\":\"tpsim.trace\"", 23) == 0);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(run_reads_the_config_from_stdin)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	struct tu_result r;
	ck_assert_ptr_nonnull(freopen(cfg, "r", stdin));
	r = tu_cli(3, "run", "-");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "\"result\""));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(bad_config_is_exit_2_naming_file_and_pointer)
{
	const char *dir = tu_tempdir();
	char trace[512], expect[768];
	const char *cfg = write_config(
		dir, "bad.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 2}], "
		"\"plan\": {\"fc\": {\"style\": \"rowise\"}}, \"input\": "
		"{\"shape\": [2, 4]}}");
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_int_eq(r.rc, 2);
	snprintf(expect, sizeof expect,
		 "tpsim: %s: /plan/fc/style: unknown "
		 "style \"rowise\" (expected one of colwise, rowwise, "
		 "replicate, sequence, vocab, prepare_input, prepare_output)\n",
		 cfg);
	ck_assert_str_eq(r.err, expect);
	ck_assert_int_ne(access(trace, F_OK), 0);
	tu_result_free(&r);
	r = tu_cli(3, "run", "/nonexistent/cfg.json");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "tpsim: /nonexistent/cfg.json"));
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* Issue 2's bad configs through the real command line: each is exit 2 with
 * one line "tpsim: FILE: POINTER: message" on stderr and nothing written. */
START_TEST(bad_configs_exit_2_with_one_line)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"{\"tpsim\": 1, \"bogus\": 1}",
		 ": /bogus: unknown key \"bogus\""},
		{"{\"tpsim\": 1, \"tpsim\": 1}", ": /tpsim: duplicate key"},
		{"{\"tpsim\": \"1\"}", ": /tpsim: expected an integer, got "
				       "string \"1\""},
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [0], \"dim_names\": "
		 "[\"tp\"]}}",
		 ": /mesh/shape/0: out of range"},
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [-2], \"dim_names\": "
		 "[\"tp\"]}}",
		 ": /mesh/shape/0: out of range"},
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [1e30], "
		 "\"dim_names\": [\"tp\"]}}",
		 ": /mesh/shape/0: "},
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2], "
		 "\"dim_names\": [\"tp\"]}}",
		 ": /mesh/dim_names: expected 2 "
		 "names"},
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		 "[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		 "\"linear\", \"in_features\": 4, \"out_features\": 2}], "
		 "\"plan\": {\"fc9\": \"colwise\"}, \"input\": {\"shape\": "
		 "[1, 4]}}",
		 ": /plan/fc9: \"fc9\" matches no module"},
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [4], \"dim_names\": "
		 "[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		 "\"linear\", \"in_features\": 10, \"out_features\": 2}], "
		 "\"plan\": {\"fc\": \"rowwise\"}, \"input\": {\"shape\": "
		 "[1, 10]}, \"uneven\": \"divisible\"}",
		 ": /plan/fc: rowwise fc: in_features 10 not divisible by tp=4 "
		 "(uneven: divisible)"},
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [2]",
		 ": /mesh: unexpected end of input"},
	};
	const char *dir = tu_tempdir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char trace[512];
		const char *cfg = write_config(dir, "bad.json", cases[i].text);
		struct tu_result r;
		snprintf(trace, sizeof trace, "%s/t.json", dir);
		r = tu_cli(5, "run", cfg, "-o", trace);
		ck_assert_msg(r.rc == 2, "case %zu: rc %d", i, r.rc);
		ck_assert_msg(strncmp(r.err, "tpsim: ", 7) == 0 &&
				      strstr(r.err, "bad.json") &&
				      strstr(r.err, cases[i].want),
			      "case %zu: %s", i, r.err);
		ck_assert_int_eq(tu_count_lines(r.err), 1);
		ck_assert_uint_eq(r.out_len, 0);
		ck_assert_int_ne(access(trace, F_OK), 0);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

START_TEST(values_none_writes_shapes_only)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 2}], "
		"\"plan\": {\"fc\": \"colwise\"}, \"input\": {\"shape\": "
		"[2, 4]}, \"trace\": {\"values\": \"none\"}}");
	struct tu_result r = tu_cli(3, "run", cfg);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_null(strstr(r.out, "\"values\":["));
	ck_assert_ptr_null(strstr(r.out, "\"hash\""));
	ck_assert_ptr_nonnull(strstr(r.out, "{\"rank\":1,\"shape\":[2,1]}"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(output_directory_and_memory_budget_are_refused)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	struct tu_result r = tu_cli(5, "run", cfg, "-o", dir);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "is a directory"));
	tu_result_free(&r);
	r = tu_cli(5, "run", cfg, "--max-memory", "100");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "over the memory budget of 100 "
					    "bytes"));
	ck_assert_uint_eq(r.out_len, 0);
	tu_result_free(&r);
	r = tu_cli(5, "run", cfg, "--max-memory", "lots");
	ck_assert_int_eq(r.rc, 2);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(output_to_a_device_writes_to_it_in_place)
{
	/* -o /dev/null must not rename a file over the device: a trace is
	 * written to an output that is not a regular file, in place. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	struct stat st;
	struct tu_result r;
	ck_assert_int_eq(stat("/dev/null", &st), 0);
	ck_assert_msg(S_ISCHR(st.st_mode), "/dev/null is not a device");
	r = tu_cli(5, "run", cfg, "-o", "/dev/null");
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	ck_assert_int_eq(stat("/dev/null", &st), 0);
	ck_assert_msg(S_ISCHR(st.st_mode),
		      "-o /dev/null replaced the device with a file");
	tu_rmtree(dir);
}
END_TEST

START_TEST(disagreement_with_the_reference_is_exit_1)
{
	/* partial_split adds b/3 on each of 3 ranks: b/3 * 3 is not b in
	 * float32, so with zero tolerance the run disagrees. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [3], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 3, \"out_features\": 1}], "
		"\"plan\": {\"fc\": {\"style\": \"rowwise\", \"bias\": "
		"\"partial_split\"}}, \"input\": {\"shape\": [1, 3], \"init\": "
		"\"zeros\"}, \"params\": {\"fc.bias\": [0.1]}, \"tolerance\": "
		"{\"atol\": 0, \"rtol\": 0}}");
	char trace[512];
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "DIFFERS from the reference"));
	/* The trace is still written: it is the evidence. */
	ck_assert_int_eq(access(trace, F_OK), 0);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* Runs every fixtures/<case>/config.json and checks its fixture.json. */
START_TEST(every_fixture_passes_tpsim_check)
{
	DIR *d = opendir(tu_source_path("fixtures"));
	const char *dir = tu_tempdir();
	struct dirent *e;
	int checked = 0;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char cfg[1024], fix[1024], trace[1024];
		struct tu_result r;
		if (e->d_name[0] == '.') {
			continue;
		}
		snprintf(cfg, sizeof cfg, "%s/%s/config.json",
			 tu_source_path("fixtures"), e->d_name);
		snprintf(fix, sizeof fix, "%s/%s/fixture.json",
			 tu_source_path("fixtures"), e->d_name);
		snprintf(trace, sizeof trace, "%s/%s.json", dir, e->d_name);
		if (access(fix, F_OK) != 0) {
			continue;
		}
		r = tu_cli(5, "run", cfg, "-o", trace);
		ck_assert_msg(r.rc == 0, "%s: %s", e->d_name, r.err);
		tu_result_free(&r);
		r = tu_cli(4, "check", trace, fix);
		ck_assert_msg(r.rc == 0, "%s: %s%s", e->d_name, r.out, r.err);
		tu_result_free(&r);
		checked++;
	}
	closedir(d);
	printf("%d fixtures checked\n", checked);
	/* The fixtures of issue 2 (the seed's 2x4 cases, world 1, uneven,
	 * a 2-D mesh) and of issue 5 (training: the seed's 2x4 backward and
	 * SGD step, colwise and rowwise; a dp x tp mse step). */
	ck_assert_int_ge(checked, 14);
	tu_rmtree(dir);
}
END_TEST

/* Configs beyond the fixtures for the thread-count test: uneven shards,
 * gelu (non-integer values), a 2-D dp x tp mesh training with adamw,
 * 3-D input, several steps. */
static const char *const thread_configs[] = {
	"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 3], \"dim_names\": "
	"[\"dp\", \"tp\"]}, \"model\": [{\"name\": \"fc1\", \"type\": "
	"\"linear\", \"in_features\": 7, \"out_features\": 13}, "
	"{\"name\": \"act\", \"type\": \"gelu\"}, {\"name\": \"fc2\", "
	"\"type\": \"linear\", \"in_features\": 13, \"out_features\": 5}], "
	"\"plan\": {\"fc1\": \"colwise\", \"fc2\": \"rowwise\"}, "
	"\"input\": {\"shape\": [5, 3, 7], \"seed\": 3, "
	"\"requires_grad\": true}, \"mode\": \"training\", \"steps\": 3, "
	"\"optimizer\": {\"type\": \"adamw\", \"lr\": 0.01}}",
	"{\"tpsim\": 1, \"mesh\": {\"shape\": [8], \"dim_names\": "
	"[\"tp\"]}, \"model\": [{\"name\": \"fc1\", \"type\": "
	"\"linear\", \"in_features\": 33, \"out_features\": 17}, "
	"{\"name\": \"act\", \"type\": \"relu\"}, {\"name\": \"fc2\", "
	"\"type\": \"linear\", \"in_features\": 17, \"out_features\": 9}], "
	"\"plan\": {\"fc1\": \"colwise\", \"fc2\": \"rowwise\"}, "
	"\"input\": {\"shape\": [3, 33], \"seed\": 1}, \"mode\": "
	"\"training\", \"loss\": \"sum\"}",
};

/* tpsim run CFG --threads N for N = 1, 2, 3, 8: the same bytes. */
static int traces_agree_across_threads(const char *cfg, const char *dir,
				       const char *label)
{
	static const char *const threads[] = {"1", "2", "3", "8"};
	char *first = NULL;
	size_t first_len = 0;
	for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
		char path[1024];
		struct tu_result r;
		char *bytes;
		size_t len;
		snprintf(path, sizeof path, "%s/threads%s.json", dir,
			 threads[i]);
		r = tu_cli(7, "run", cfg, "-o", path, "--threads", threads[i]);
		ck_assert_msg(r.rc == 0 || r.rc == 1, "%s: %s", label, r.err);
		tu_result_free(&r);
		bytes = tu_read_file(path, &len);
		ck_assert_ptr_nonnull(bytes);
		if (!first) {
			first = bytes;
			first_len = len;
			continue;
		}
		ck_assert_msg(len == first_len &&
				      memcmp(bytes, first, len) == 0,
			      "%s: --threads %s differs from --threads 1",
			      label, threads[i]);
		free(bytes);
	}
	free(first);
	return 1;
}

START_TEST(traces_are_byte_identical_for_every_thread_count)
{
	const char *dir = tu_tempdir();
	DIR *d = opendir(tu_source_path("fixtures"));
	struct dirent *e;
	int compared = traces_agree_across_threads(
		tu_source_path("examples/seed004_ddp_tp/config.json"), dir,
		"seed004_ddp_tp");
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char cfg[1024];
		if (e->d_name[0] == '.') {
			continue;
		}
		snprintf(cfg, sizeof cfg, "%s/%s/config.json",
			 tu_source_path("fixtures"), e->d_name);
		compared += traces_agree_across_threads(cfg, dir, e->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < sizeof thread_configs / sizeof thread_configs[0];
	     i++) {
		const char *cfg =
			write_config(dir, "threads.json", thread_configs[i]);
		compared += traces_agree_across_threads(cfg, dir, cfg);
	}
	printf("%d configs byte-identical at 1, 2, 3 and 8 threads\n",
	       compared);
	ck_assert_int_ge(compared, 1 + 14 + 2);
	tu_rmtree(dir);
}
END_TEST

/* The bytes after the "generator" line (the second), which names the
 * version. */
static const char *after_generator(const char *trace)
{
	const char *p = strchr(trace, '\n');
	ck_assert_ptr_nonnull(p);
	ck_assert_msg(strncmp(p + 1, "\"generator\":\"tpsim ",
			      strlen("\"generator\":\"tpsim ")) == 0,
		      "the second line is not the generator");
	p = strchr(p + 1, '\n');
	ck_assert_ptr_nonnull(p);
	return p;
}

/* tests/golden/README.md: tpsim 0.2.0's traces, which every speed-up
 * must reproduce byte for byte, at 1 and at 8 threads. */
START_TEST(traces_are_byte_identical_to_the_golden_ones)
{
	struct golden {
		const char *config, *name;
	};
	static const struct golden cases[] = {
		{"examples/seed004_ddp_tp/config.json", "seed004_ddp_tp"},
		{"tools/bench/mlp4_h1024_b64_tp8.json", "mlp4_h1024_b64_tp8"},
		{"tools/bench/mlp4_h1024_b64_tp8_train.json",
		 "mlp4_h1024_b64_tp8_train"},
		{"tests/golden/gelu_dp_tp_sgd.config.json", "gelu_dp_tp_sgd"},
	};
	const char *dir = tu_tempdir();
	DIR *d = opendir(tu_source_path("fixtures"));
	struct dirent *e;
	char configs[64][512], names[64][256];
	int n = 0, compared = 0;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++, n++) {
		snprintf(configs[n], sizeof configs[n], "%s",
			 tu_source_path(cases[i].config));
		snprintf(names[n], sizeof names[n], "%s", cases[i].name);
	}
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) && n < 64) {
		if (e->d_name[0] == '.') {
			continue;
		}
		snprintf(configs[n], sizeof configs[n], "%s/%s/config.json",
			 tu_source_path("fixtures"), e->d_name);
		snprintf(names[n++], sizeof names[0], "%s", e->d_name);
	}
	closedir(d);
	for (int i = 0; i < n; i++) {
		char golden_path[320];
		char *golden;
		size_t golden_len;
		snprintf(golden_path, sizeof golden_path,
			 "tests/golden/%.255s.trace.json", names[i]);
		golden = tu_read_file(tu_source_path(golden_path), &golden_len);
		ck_assert_msg(golden != NULL, "%s is missing", golden_path);
		for (int t = 0; t < 2; t++) {
			char path[720];
			const char *want, *got;
			char *trace;
			size_t len;
			struct tu_result r;
			snprintf(path, sizeof path, "%.400s/%.255s.json", dir,
				 names[i]);
			r = tu_cli(7, "run", configs[i], "-o", path,
				   "--threads", t ? "8" : "1");
			ck_assert_msg(r.rc == 0, "%s: %s", names[i], r.err);
			tu_result_free(&r);
			trace = tu_read_file(path, &len);
			ck_assert_ptr_nonnull(trace);
			want = after_generator(golden);
			got = after_generator(trace);
			if (strcmp(want, got) != 0) {
				size_t at = 0;
				while (want[at] && want[at] == got[at]) {
					at++;
				}
				ck_abort_msg(
					"%s at %s threads: differs from %s "
					"at byte %zu after the generator "
					"line: ...%.40s",
					names[i], t ? "8" : "1", golden_path,
					at, got + at);
			}
			free(trace);
			compared++;
		}
		free(golden);
	}
	printf("%d traces byte-identical to tpsim 0.2.0's\n", compared);
	ck_assert_int_ge(compared, 2 * (4 + 14));
	tu_rmtree(dir);
}
END_TEST

START_TEST(explicit_input_values_run_as_their_init_would)
{
	/* The seed's 2x4 example with its arange input written out: every
	 * line after the config (line 3) matches the fixture's run. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "values.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 2, "
		"\"bias\": true}], \"plan\": {\"fc\": {\"style\": "
		"\"rowwise\", \"bias\": \"after_reduce\"}}, \"input\": "
		"{\"values\": [[1, 2, 3, 4], [5, 6, 7, 8]]}, \"init\": "
		"{\"method\": \"arange\"}}");
	char a[1024], b[1024];
	char *ta, *tb;
	const char *la, *lb;
	struct tu_result r;
	snprintf(a, sizeof a, "%s/a.json", dir);
	snprintf(b, sizeof b, "%s/b.json", dir);
	r = tu_cli(5, "run", cfg, "-o", a);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(
		5, "run",
		tu_source_path(
			"fixtures/seed_2x4_rowwise_after_reduce/config.json"),
		"-o", b);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	ta = tu_read_file(a, NULL);
	tb = tu_read_file(b, NULL);
	ck_assert_ptr_nonnull(strstr(ta, "\"input\":{\"shape\":[2,4],"
					 "\"values\":[[1,2,3,4],[5,6,7,8]],"));
	la = strchr(strchr(strchr(ta, '\n') + 1, '\n') + 1, '\n');
	lb = strchr(strchr(strchr(tb, '\n') + 1, '\n') + 1, '\n');
	ck_assert_str_eq(la, lb);
	free(ta);
	free(tb);
	tu_rmtree(dir);
}
END_TEST

/* README's quick start shows what `tools/quickstart.sh demo` prints: the
 * explain output of the seed's 2x4 example, as an indented block after a
 * marker. It is compared with the real output line for line. */
/* comm.<section>.<key>.count of a trace, 0 when absent. */
static int comm_count(const cJSON *trace, const char *section, const char *key)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(trace, "comm"),
			section),
		key);
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(c, "count");
	return cJSON_IsNumber(n) ? n->valueint : 0;
}

START_TEST(gpt_example_counts_in_its_trace_are_megatrons)
{
	/* examples/gpt_2block: 2 blocks, 3 steps, loss_parallel, from the
	 * trace's own comm section. Per step, plain TP: forward the
	 * embedding's all_reduce, 2 per block, 3 for the loss; backward 2 per
	 * block and the vocabulary projection's input gradient. Sequence
	 * parallel: forward a reduce_scatter out of the embedding and 2 per
	 * block, an all_gather into each block's attention and fc1 and into
	 * the projection, the loss's 3 all_reduces; backward the mirror
	 * (all_gathers and reduce_scatters swapped: 5 and 5) and 10
	 * all_reduces of layer-norm weight and bias gradients (5 layer norms:
	 * 2 per block and the final one). */
	const char *dir = tu_tempdir();
	char trace[512];
	cJSON *t;
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", tu_source_path("examples/gpt_2block/config.json"),
		   "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	ck_assert_int_eq(tps_json_load(trace, 1 << 30, &t, NULL), TPS_OK);
	ck_assert_int_eq(comm_count(t, "by_op", "all_reduce"), 3 * (8 + 5));
	ck_assert_int_eq(comm_count(t, "by_phase", "forward"), 3 * 8);
	ck_assert_int_eq(comm_count(t, "by_phase", "backward"), 3 * 5);
	ck_assert_int_eq(comm_count(t, "by_op", "all_gather"), 0);
	cJSON_Delete(t);
	r = tu_cli(5, "run",
		   tu_source_path("examples/gpt_2block/config_sp.json"), "-o",
		   trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	ck_assert_int_eq(tps_json_load(trace, 1 << 30, &t, NULL), TPS_OK);
	ck_assert_int_eq(comm_count(t, "by_op", "reduce_scatter"), 3 * (5 + 5));
	ck_assert_int_eq(comm_count(t, "by_op", "all_gather"), 3 * (5 + 5));
	ck_assert_int_eq(comm_count(t, "by_op", "all_reduce"), 3 * (3 + 10));
	ck_assert_int_eq(comm_count(t, "by_phase", "forward"), 3 * (5 + 5 + 3));
	cJSON_Delete(t);
	tu_rmtree(dir);
}
END_TEST

START_TEST(readme_quick_start_shows_the_real_demo_output)
{
	static const char marker[] =
		"<!-- the demo's explain output, checked by tests/test_cli.c "
		"-->\n\n";
	const char *dir = tu_tempdir();
	char trace[1024];
	char *readme = tu_read_file(tu_source_path("README.md"), NULL);
	char *shown = NULL;
	size_t shown_len = 0;
	FILE *w = open_memstream(&shown, &shown_len);
	const char *p;
	struct tu_result r;

	ck_assert_ptr_nonnull(readme);
	p = strstr(readme, marker);
	ck_assert_msg(p != NULL, "README.md lost its demo marker");
	/* The indented lines (and blank lines between them), unindented. */
	for (p += strlen(marker); strncmp(p, "    ", 4) == 0;) {
		const char *eol = strchr(p, '\n');
		ck_assert_ptr_nonnull(eol);
		fprintf(w, "%.*s\n", (int)(eol - p - 4), p + 4);
		p = eol + 1;
	}
	fclose(w);
	snprintf(trace, sizeof trace, "%s/trace.json", dir);
	r = tu_cli(
		5, "run",
		tu_source_path(
			"fixtures/seed_2x4_rowwise_after_reduce/config.json"),
		"-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(3, "explain", trace);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_msg(strcmp(shown, r.out) == 0,
		      "README.md's demo output is stale; tpsim explain "
		      "prints:\n%s",
		      r.out);
	tu_result_free(&r);
	free(shown);
	free(readme);
	tu_rmtree(dir);
}
END_TEST

/* A rowwise fc (in 4, out 2, bias [1, 2]) on arange input, tp = n, with
 * the bias added on every rank; `after` puts a relu behind it. */
static const char *inject_config(const char *dir, int tp, bool after,
				 const char *mistake)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "{\"tpsim\": 1, \"mesh\": {\"shape\": [%d], "
		 "\"dim_names\": [\"tp\"]}, \"model\": [{\"name\": "
		 "\"fc\", \"type\": \"linear\", \"in_features\": 4, "
		 "\"out_features\": 2}%s], \"plan\": {\"fc\": "
		 "\"rowwise\"}, \"input\": {\"shape\": [2, 4], "
		 "\"init\": \"arange\"}, \"init\": {\"method\": "
		 "\"arange\"}, \"inject\": [\"%s\"]}",
		 tp, after ? ", {\"name\": \"act\", \"type\": \"relu\"}" : "",
		 mistake);
	return write_config(dir, "inject.json", text);
}

START_TEST(inject_bias_every_rank_is_diagnosed_from_its_symptom)
{
	/* The seed's 2x4 rowwise example: y = [[30,70],[70,174]] + b with
	 * b = [1, 2]; with the bias on both ranks, y + b more:
	 * [[32,74],[72,178]], and the diagnosis says so. */
	const char *dir = tu_tempdir();
	char trace[512];
	char *text;
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", inject_config(dir, 2, false, "bias_every_rank"),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err, "inject.json: diagnosis: output is larger than the "
		       "reference by exactly (tp - 1) x bias = 1 x fc.bias in "
		       "every row: the bias was added on every rank before "
		       "the all_reduce (inject bias_every_rank)\n"));
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	ck_assert_ptr_nonnull(strstr(text,
				     "\"output\":{\"shape\":[2,2],\"values\":"
				     "[[32,74],[72,178]]}"));
	ck_assert_ptr_nonnull(strstr(text, "\"mistake\":\"bias_every_rank\""));
	ck_assert_ptr_nonnull(strstr(
		text, "\"match\":false,\"comparison\":{\"output\":\"exact\"},"
		      "\"diverged_at\":{\"seq\":4,\"mistake\":"
		      "\"bias_every_rank\"},\"diagnosis\":"));
	free(text);
	/* tp = 4: three extra copies. */
	r = tu_cli(5, "run", inject_config(dir, 4, false, "bias_every_rank"),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "= 3 x fc.bias in every row"));
	tu_result_free(&r);
	/* A relu behind it: not an exact multiple any more, still named. */
	r = tu_cli(5, "run", inject_config(dir, 2, true, "bias_every_rank"),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err,
		"diagnosis: output differs from the reference "
		"(max_abs_diff 2): fc added its whole bias on every rank "
		"before the all_reduce, (tp - 1) x bias = 1 x fc.bias "
		"too much in its output"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* A one-linear config: mesh, in -> out rowwise, the input's shape and init,
 * and what follows (inject, params). */
static const char *rowwise_config(const char *dir, const char *mesh, int in,
				  int out, int batch, const char *init,
				  const char *rest)
{
	char text[1024];
	snprintf(
		text, sizeof text,
		"{\"tpsim\": 1, \"mesh\": %s, \"model\": [{\"name\": \"fc\", "
		"\"type\": \"linear\", \"in_features\": %d, \"out_features\": "
		"%d}], \"plan\": {\"fc\": \"rowwise\"}, \"input\": {\"shape\": "
		"[%d, %d], \"init\": \"%s\"}, \"init\": {\"method\": "
		"\"%s\"}%s}",
		mesh, in, out, batch, in, init, init, rest);
	return write_config(dir, "c.json", text);
}

START_TEST(a_bias_bug_is_never_a_match)
{
	/* The cases. Rowwise 64 -> 2 at tp 2 on arange: x and W are
	 * both [1..64; 65..128], b = [1, 2], so by hand y = x W^T + b is
	 *   y00 = sum_{k=1}^{64} k^2 + 1             = 89440 + 1  = 89441
	 *   y01 = sum_{k=1}^{64} k (64 + k) + 2      = 222560 + 2 = 222562
	 *   y10 = the same sum + 1                                = 222561
	 *   y11 = sum_{k=65}^{128} k^2 + 2 = 707264 - 89440 + 2   = 617826
	 * The bias on both ranks adds 1 x b (max_abs_diff 2), which the
	 * tolerance, 1e-5 + 1e-5 x 617826 = 6.2, would call a match. The
	 * values are integers whose sums stay below 2^24, so they are
	 * compared exactly. The same on a (2, 3) dp x tp mesh with 4
	 * outputs: 2 x b, 2 x 4 = 8 at most. */
	static const struct {
		const char *mesh, *dp;
		int out, batch;
		const char *verdict, *diagnosis;
	} cases[] = {
		{"{\"shape\": [2], \"dim_names\": [\"tp\"]}", "", 2, 2,
		 "max_abs_diff 2 (exact comparison): DIFFERS from the "
		 "reference\n",
		 "by exactly (tp - 1) x bias = 1 x fc.bias in every row"},
		{"{\"shape\": [2, 3], \"dim_names\": [\"dp\", \"tp\"]}, "
		 "\"dp_dim\": \"dp\"",
		 "", 4, 4,
		 "max_abs_diff 8 (exact comparison): DIFFERS from the "
		 "reference\n",
		 "by exactly (tp - 1) x bias = 2 x fc.bias in every row"},
	};
	const char *dir = tu_tempdir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tu_result r = tu_cli(
			3, "run",
			rowwise_config(dir, cases[i].mesh, 64, cases[i].out,
				       cases[i].batch, "arange",
				       ", \"inject\": [\"bias_every_rank\"]"));
		ck_assert_int_eq(r.rc, 1);
		ck_assert_msg(strstr(r.err, cases[i].verdict) != NULL,
			      "case %zu: %s", i, r.err);
		ck_assert_ptr_nonnull(strstr(r.err, cases[i].diagnosis));
		ck_assert_ptr_null(strstr(r.err, "matches"));
		ck_assert_ptr_nonnull(strstr(
			r.out, "\"match\":false,\"comparison\":{\"output\":"
			       "\"exact\"},\"diverged_at\":"));
		tu_result_free(&r);
	}
	/* The reference is the hand's y above. */
	{
		struct tu_result r =
			tu_cli(3, "run",
			       rowwise_config(dir, cases[0].mesh, 64, 2, 2,
					      "arange", ""));
		ck_assert_int_eq(r.rc, 0);
		ck_assert_ptr_nonnull(
			strstr(r.out, "\"reference_output\":{\"shape\":[2,2],"
				      "\"values\":[[89441,222562],[222561,"
				      "617826]]}"));
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

START_TEST(a_mistake_the_tolerance_would_pass_still_differs)
{
	/* Uniform values, a zero bias: the bias on both ranks adds nothing,
	 * and the numbers differ by rounding only (within the tolerance).
	 * The run carried the mistake out, so it is not a match, and the
	 * summary says why. */
	const char *dir = tu_tempdir();
	struct tu_result r = tu_cli(
		3, "run",
		rowwise_config(dir, "{\"shape\": [2], \"dim_names\": [\"tp\"]}",
			       4, 2, 2, "uniform",
			       ", \"params\": {\"fc.bias\": [0, 0]}, "
			       "\"inject\": [\"bias_every_rank\"]"));
	ck_assert_int_eq(r.rc, 1);
	ck_assert_msg(strstr(r.err, "(tolerance comparison): DIFFERS from the "
				    "reference, by the injected mistake "
				    "bias_every_rank, which the run carried "
				    "out (its numbers are within the "
				    "tolerance)\n") != NULL,
		      "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "diagnosis: "));
	ck_assert_ptr_null(strstr(r.err, "matches"));
	ck_assert_ptr_nonnull(
		strstr(r.out, "\"match\":false,\"comparison\":{\"output\":"
			      "\"tolerance\"},\"diverged_at\":"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(the_trace_says_which_comparison_was_used)
{
	/* Clean runs: arange's integers are compared exactly, uniform
	 * values within the tolerance; in training, each compared tensor
	 * is named (mse's loss and gradients are fractions). */
	const char *dir = tu_tempdir();
	const char *tp2 = "{\"shape\": [2], \"dim_names\": [\"tp\"]}";
	struct tu_result r = tu_cli(
		3, "run", rowwise_config(dir, tp2, 4, 2, 2, "arange", ""));
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(
		strstr(r.err, "max_abs_diff 0 (exact comparison): matches the "
			      "reference\n"));
	ck_assert_ptr_nonnull(strstr(
		r.out,
		"\"match\":true,\"comparison\":{\"output\":\"exact\"}}"));
	tu_result_free(&r);
	r = tu_cli(3, "run", rowwise_config(dir, tp2, 4, 2, 2, "uniform", ""));
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "(tolerance comparison): matches "
					    "the reference\n"));
	ck_assert_ptr_nonnull(
		strstr(r.out, "\"match\":true,\"comparison\":{\"output\":"
			      "\"tolerance\"}}"));
	tu_result_free(&r);
	r = tu_cli(3, "run",
		   rowwise_config(dir, tp2, 4, 2, 2, "arange",
				  ", \"mode\": \"training\""));
	ck_assert_int_eq(r.rc, 0);
	ck_assert_msg(strstr(r.err, "(exact comparison of 1 of 6 tensors, "
				    "tolerance for the rest): matches the "
				    "reference\n") != NULL,
		      "%s", r.err);
	ck_assert_ptr_nonnull(strstr(
		r.out,
		"\"comparison\":{\"output\":\"exact\",\"loss\":["
		"\"tolerance\"],\"grads\":{\"fc.weight\":\"tolerance\","
		"\"fc.bias\":\"tolerance\"},\"params_after\":{"
		"\"fc.weight\":\"tolerance\",\"fc.bias\":\"tolerance\"}}"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(inject_skip_all_reduce_is_diagnosed_from_its_symptom)
{
	/* Rank 0's partial sum x_0 W_0^T = [[5,17],[17,61]] plus the bias
	 * [1, 2] after the (skipped) reduction: [[6,19],[18,63]]. */
	const char *dir = tu_tempdir();
	char trace[512];
	char *text;
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", inject_config(dir, 2, false, "skip_all_reduce"),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err, "diagnosis: output is rank 0's partial sum alone, x_0 "
		       "W_0^T over 2 of the 4 input features: the all_reduce "
		       "that adds the 2 ranks' partial sums was skipped "
		       "(inject skip_all_reduce)\n"));
	ck_assert_ptr_nonnull(strstr(r.err, "0 collectives"));
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	ck_assert_ptr_nonnull(strstr(text,
				     "\"output\":{\"shape\":[2,2],\"values\":"
				     "[[6,19],[18,63]]}"));
	ck_assert_ptr_nonnull(strstr(text,
				     "\"diverged_at\":{\"seq\":4,\"mistake\":"
				     "\"skip_all_reduce\"}"));
	free(text);
	/* A relu behind it: the model is more than the linear, the
	 * diagnosis names what was skipped without the exact check. */
	r = tu_cli(5, "run", inject_config(dir, 4, true, "skip_all_reduce"),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err, "fc's ranks each kept their partial sum, and the "
		       "all_reduce that adds the 4 of them was skipped"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* A config on a tp mesh of `tp`: the model and plan given as JSON text,
 * arange input (2, 4) and arange parameters, with one mistake; `extra`
 * adds top-level keys (training). */
static const char *mistake_config(const char *dir, int tp, const char *model,
				  const char *plan, const char *mistake,
				  const char *extra)
{
	char text[2048];
	snprintf(text, sizeof text,
		 "{\"tpsim\": 1, \"mesh\": {\"shape\": [%d], \"dim_names\": "
		 "[\"tp\"]}, \"model\": [%s], \"plan\": {%s}, \"input\": "
		 "{\"shape\": [2, 4], \"init\": \"arange\"}, \"init\": "
		 "{\"method\": \"arange\"}, \"inject\": [\"%s\"]%s}",
		 tp, model, plan, mistake, extra);
	return write_config(dir, "mistake.json", text);
}

#define FC_4_TO(out)                                                           \
	"{\"name\": \"fc\", \"type\": \"linear\", \"in_features\": 4, "        \
	"\"out_features\": " #out "}"
#define GATHERED "\"fc\": {\"style\": \"colwise\", \"output\": \"replicate\"}"

START_TEST(inject_skip_gather_is_diagnosed_from_its_symptom)
{
	/* Seed 000's first pitfall. W = arange(16) + 1 as (4, 4), b =
	 * [1,2,3,4], x = [[1,2,3,4],[5,6,7,8]]: y = x W^T + b =
	 * [[31,72,113,154],[71,176,281,386]] (row 0: 1+4+9+16 + 1 = 31,
	 * 5+12+21+32 + 2 = 72). Rank 0's shard is columns 0-1,
	 * [[31,72],[71,176]], and that is what comes out, shape (2, 2). */
	const char *dir = tu_tempdir();
	char trace[512];
	char *text;
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(
		5, "run",
		mistake_config(dir, 2, FC_4_TO(4), GATHERED, "skip_gather", ""),
		"-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err, "max_abs_diff none (the shapes differ): DIFFERS"));
	ck_assert_ptr_nonnull(strstr(
		r.err, "mistake.json: diagnosis: output has shape (2, 2) where "
		       "the reference has (2, 4): it is rank 0's local shard, "
		       "the reference's columns 0-1; fc returned its shard of "
		       "the 4 output features and the all_gather was skipped "
		       "(inject skip_gather)\n"));
	ck_assert_ptr_nonnull(strstr(r.err, "0 collectives"));
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	ck_assert_ptr_nonnull(strstr(
		text, "\"result\":{\"output\":{\"shape\":[2,2],\"values\":"
		      "[[31,72],[71,176]]},\"reference_output\":{\"shape\":"
		      "[2,4],\"values\":[[31,72,113,154],[71,176,281,386]]},"
		      "\"match\":false,\"diverged_at\":{\"seq\":4,"
		      "\"mistake\":\"skip_gather\"}"));
	free(text);
	/* 5 features over 2 ranks: 3 and 2 columns, and the ranks cannot
	 * even agree on the output's shape. */
	r = tu_cli(
		5, "run",
		mistake_config(dir, 2, FC_4_TO(5), GATHERED, "skip_gather", ""),
		"-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(
		strstr(r.err, "STOPPED by a shape error: fc: the ranks return "
			      "outputs of different shapes, rank 0 (2, 3) and "
			      "rank 1 (2, 2)\n"));
	ck_assert_ptr_nonnull(strstr(r.err, "instead of all-gathering them "
					    "(inject skip_gather)\n"));
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	ck_assert_ptr_nonnull(strstr(text, "\"result\":{\"stopped\":\"fc: "));
	free(text);
	/* A rowwise linear behind it: the shard is too narrow for its
	 * weight, a shape error in the next matmul. */
	r = tu_cli(5, "run",
		   mistake_config(dir, 2,
				  FC_4_TO(4) ", {\"name\": \"fc2\", \"type\": "
					     "\"linear\", \"in_features\": 4, "
					     "\"out_features\": 2}",
				  GATHERED ", \"fc2\": \"rowwise\"",
				  "skip_gather", ""),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "STOPPED by a shape error: rowwise "
					    "fc2: linear: input (2, 1) does "
					    "not fit weight (2, 2)\n"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(inject_wrong_shard_dim_is_a_shape_error_in_the_matmul)
{
	/* Seed 000's fifth pitfall. Colwise with W (4, 4) split by columns:
	 * each rank holds (4, 2), and x (2, 4) x W_r^T cannot be formed. */
	const char *dir = tu_tempdir();
	char trace[512];
	char *text;
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run",
		   mistake_config(dir, 2, FC_4_TO(4), "\"fc\": \"colwise\"",
				  "wrong_shard_dim", ""),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err, "diagnosis: shape mismatch in the matmul (colwise fc: "
		       "linear: input (2, 4) does not fit weight (4, 2)): "
		       "fc.weight [out, in] was split over tp by dim 1, its "
		       "input features, where colwise splits dim 0, its output "
		       "features (inject wrong_shard_dim)\n"));
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	/* The mistaken layout is recorded, with rank 0's columns 0-1. */
	ck_assert_ptr_nonnull(strstr(
		text, "\"op\":\"distribute\",\"tensor\":\"fc.weight\","
		      "\"placements\":[\"shard(1)\"],\"global_shape\":[4,4],"
		      "\"ranks\":[{\"rank\":0,\"shape\":[4,2],\"values\":"
		      "[[1,2],[5,6],[9,10],[13,14]]}"));
	/* Setup distributes fc.weight and fc.bias (seq 0, 1); the mistake
	 * is the forward's first event. */
	ck_assert_ptr_nonnull(strstr(text, "\"diverged_at\":{\"seq\":2,"));
	free(text);
	/* Rowwise with W (2, 4) split by rows: W_r (1, 4) against x_r
	 * (2, 2). */
	r = tu_cli(5, "run",
		   mistake_config(dir, 2, FC_4_TO(2), "\"fc\": \"rowwise\"",
				  "wrong_shard_dim", ""),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err, "(rowwise fc: linear: input (2, 2) does not fit weight "
		       "(1, 4)): fc.weight [out, in] was split over tp by dim "
		       "0, its output features, where rowwise splits dim 1, "
		       "its input features (inject wrong_shard_dim)\n"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

#define TRAIN_SUM                                                              \
	", \"mode\": \"training\", \"loss\": \"sum\", \"optimizer\": "         \
	"{\"type\": \"sgd\", \"lr\": 0.01}"
#define MLP_4_4_2                                                              \
	FC_4_TO(4)                                                             \
	", {\"name\": \"fc2\", \"type\": \"linear\", "                         \
	"\"in_features\": 4, \"out_features\": 2}"
#define MLP_PLAN "\"fc\": \"colwise\", \"fc2\": \"rowwise\""

START_TEST(inject_tp_allreduce_weight_grad_is_diagnosed_from_its_symptom)
{
	/* Seed 003's claim. One step: the forward and the loss are right,
	 * and every tp-sharded gradient's blocks are the sum of the
	 * reference's blocks, which the run checks element by element. */
	const char *dir = tu_tempdir();
	char trace[512];
	char *text;
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run",
		   mistake_config(dir, 2, MLP_4_4_2, MLP_PLAN,
				  "tp_allreduce_weight_grad", TRAIN_SUM),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err,
		"diagnosis: the loss matches but the weight gradients do "
		"not: every rank's block of each tp-sharded weight "
		"gradient is the sum of all 2 ranks' blocks, sum_s dW_s "
		"instead of dW_r; gradients of tp-sharded weights are "
		"not all-reduced over tp, only activation gradients "
		"are, and weight gradients only over dp (inject "
		"tp_allreduce_weight_grad, seed 003's claim)\n"));
	/* fc's forward all_reduce, plus the mistaken ones of fc.weight,
	 * fc.bias and fc2.weight (fc2.bias is replicated: left alone). */
	ck_assert_ptr_nonnull(strstr(r.err, "4 collectives"));
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	ck_assert_ptr_nonnull(
		strstr(text, "\"op\":\"all_reduce\",\"tensor\":\"fc.weight."
			     "grad\",\"mesh_dim\":\"tp\",\"groups\":[[0,1]],"
			     "\"placements\":[\"shard(0)\"]"));
	ck_assert_ptr_null(strstr(text, "\"op\":\"all_reduce\",\"tensor\":"
					"\"fc2.bias.grad\""));
	ck_assert_ptr_nonnull(strstr(text, "\"mistake\":\"tp_allreduce_weight_"
					   "grad\"},\"diagnosis\""));
	free(text);
	/* Two steps: the second starts from other weights, so the run
	 * names the mistake without the exact check. */
	r = tu_cli(5, "run",
		   mistake_config(dir, 2, MLP_4_4_2, MLP_PLAN,
				  "tp_allreduce_weight_grad",
				  TRAIN_SUM ", \"steps\": 2"),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "diagnosis: gradients and "
					    "parameters differ from the "
					    "reference (max_abs_diff "));
	tu_result_free(&r);
	/* fc2's 4 input features over 3 ranks, by torch.chunk: blocks of 2,
	 * 2 and 0 columns, which cannot be all-reduced at all (backward
	 * reaches fc2 first). */
	r = tu_cli(5, "run",
		   mistake_config(dir, 3, MLP_4_4_2, MLP_PLAN,
				  "tp_allreduce_weight_grad", TRAIN_SUM),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "STOPPED by a shape error: "
					    "fc2.weight.grad: all_reduce over "
					    "tp: sum: rank 0 has shape (2, 2) "
					    "but rank 2 has (2, 0)\n"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(run_threads_and_stats_options)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	static const char *const bad[] = {"0", "257", "two", "", "2x"};
	struct tu_result r;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		r = tu_cli(7, "run", cfg, "-o", "/dev/null", "--threads",
			   bad[i]);
		ck_assert_int_eq(r.rc, 2);
		ck_assert_msg(strstr(r.err, "run: --threads needs a number "
					    "from 1 to 256"),
			      "%s", r.err);
		tu_result_free(&r);
	}
	r = tu_cli(6, "run", cfg, "--threads", "3", "--stats", "-o",
		   "/dev/null");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	/* The summary line, then the figures. */
	ck_assert_int_eq(tu_count_lines(r.err), 6);
	ck_assert_ptr_nonnull(strstr(r.err, "tpsim: stats: threads 3\n"));
	ck_assert_ptr_nonnull(strstr(r.err, "seconds: init "));
	ck_assert_ptr_nonnull(strstr(r.err, ", tp steps "));
	ck_assert_ptr_nonnull(strstr(r.err, ", reference "));
	ck_assert_ptr_nonnull(strstr(r.err, ", trace writing "));
	ck_assert_ptr_nonnull(strstr(r.err, "tpsim: stats: trace: "));
	/* (2, 4) input, (2, 4) weight and its two shards, (2, 2) output...:
	 * some tensor bytes, counted. */
	ck_assert_ptr_nonnull(strstr(r.err, "memory: tensors at peak "));
	ck_assert_ptr_null(strstr(r.err, "tensors at peak 0 "));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(a_wrong_number_in_a_fixture_fails_naming_it)
{
	/* rowwise 2x4, arange: x = [[1,2,3,4],[5,6,7,8]], W = the same.
	 * y[0] = [30, 70]; claim 71 instead of 70. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	char trace[512], fix[512], line[768];
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	snprintf(fix, sizeof fix, "%s/f.json", dir);
	write_text(fix, "{\"result\": {\"output\": {\"values\": "
			"[[30, 71], [70, 174]]}}}");
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	r = tu_cli(4, "check", trace, fix);
	ck_assert_int_eq(r.rc, 1);
	snprintf(line, sizeof line,
		 "%s: /result/output/values/0/1: expected "
		 "71, got 70\n",
		 fix);
	ck_assert_str_eq(r.out, line);
	ck_assert_ptr_nonnull(strstr(r.err, "1 mismatch"));
	tu_result_free(&r);
	/* The right numbers pass. */
	write_text(fix, "{\"result\": {\"output\": {\"values\": "
			"[[30, 70], [70, 174]]}}}");
	r = tu_cli(4, "check", trace, fix);
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	/* A fixture that is not JSON, or a trace that is not a trace, is
	 * trouble: exit 2 on stderr. */
	write_text(fix, "{\"result\": ");
	r = tu_cli(4, "check", trace, fix);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_uint_eq(r.out_len, 0);
	tu_result_free(&r);
	r = tu_cli(4, "check", cfg, cfg);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "/format"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(explain_walks_the_trace_step_by_step)
{
	/* The seed's rowwise 2x4 (bias off): partial sums [[5,17],[17,61]]
	 * and [[25,53],[53,113]], summed to [[30,70],[70,174]]. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	char trace[512];
	struct tu_result r;
	run_to_trace(cfg, dir, trace, sizeof trace);
	r = tu_cli(3, "explain", trace);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "forward, step 0:\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "rank 1: (2, 2) "
					    "[[25,53],[53,113]]\n"));
	ck_assert_ptr_nonnull(strstr(r.out,
				     "all_reduce  fc.out: [partial] -> "
				     "[replicate] global (2, 2), over tp "
				     "groups [[0,1]], 16 bytes/rank\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "matches the single-device "
					    "reference (max_abs_diff 0, exact "
					    "comparison)"));
	tu_result_free(&r);
	/* A config is not a trace: trouble, exit 2. */
	r = tu_cli(3, "explain", cfg);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "not a tpsim trace"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* One rank line per rank, each with its values or a stated elision:
 * nothing is dropped silently. */
static void every_rank_line_shows_values(const char *out)
{
	for (const char *p = strstr(out, "        rank "); p;
	     p = strstr(p + 1, "        rank ")) {
		const char *eol = strchr(p, '\n');
		const char *v = strstr(p, ") [");
		const char *h = strstr(p, " hash ");
		ck_assert_msg((v && v < eol) || (h && h < eol),
			      "a rank line without values: %.*s",
			      (int)(eol - p), p);
	}
}

START_TEST(explain_elides_long_values_visibly_and_filters_events)
{
	/* x (3, 8) @ W (6, 8)^T colwise over 2: each rank's output is (3, 3),
	 * 9 values; its weight shard (3, 8), 24 values, more than the
	 * default 16. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 8, \"out_features\": 6}], "
		"\"plan\": {\"fc\": \"colwise\"}, \"input\": {\"shape\": "
		"[3, 8], \"init\": \"arange\"}, \"init\": {\"method\": "
		"\"arange\"}}");
	char trace[512];
	struct tu_result r;
	run_to_trace(cfg, dir, trace, sizeof trace);

	r = tu_cli(3, "explain", trace);
	ck_assert_int_eq(r.rc, 0);
	every_rank_line_shows_values(r.out);
	/* W = arange (6, 8): rank 1 holds rows 3-5, values 25 .. 48. */
	ck_assert_ptr_nonnull(
		strstr(r.out, "rank 1: (3, 8) [25,26,27,28,29,30,31,32,...,"
			      "41,42,43,44,45,46,47,48] (16 of 24 values: the "
			      "first and last 8 in row-major order; "
			      "--max-values)\n"));
	tu_result_free(&r);
	/* --max-values 0: everything; 4: the first and last 2. */
	r = tu_cli(5, "explain", trace, "--max-values", "0");
	ck_assert_ptr_nonnull(strstr(
		r.out,
		"rank 1: (3, 8) [[25,26,27,28,29,30,31,32],"
		"[33,34,35,36,37,38,39,40],[41,42,43,44,45,46,47,48]]\n"));
	ck_assert_ptr_null(strstr(r.out, "..."));
	tu_result_free(&r);
	r = tu_cli(5, "explain", trace, "--max-values", "4");
	ck_assert_ptr_nonnull(strstr(r.out, "rank 1: (3, 8) [25,26,...,47,48] "
					    "(4 of 24 values: the first and "
					    "last 2"));
	every_rank_line_shows_values(r.out);
	tu_result_free(&r);
	/* Filters: forward only, no setup section; one module; none. */
	r = tu_cli(5, "explain", trace, "--phase", "forward");
	ck_assert_ptr_null(strstr(r.out, "setup:"));
	ck_assert_ptr_nonnull(strstr(r.out, "forward, step 0:\n"));
	tu_result_free(&r);
	r = tu_cli(7, "explain", trace, "--step", "0", "--module", "output");
	ck_assert_ptr_null(strstr(r.out, " fc       "));
	ck_assert_ptr_nonnull(strstr(r.out, "all_gather"));
	tu_result_free(&r);
	r = tu_cli(5, "explain", trace, "--step", "3");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(
		r.out, "(no event matches --step, --module and --phase)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "result: output (3, 6)"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(explain_shows_a_summary_traces_statistics)
{
	const char *dir = tu_tempdir();
	char text[1024], trace[512];
	const char *cfg;
	struct tu_result r;
	snprintf(text, sizeof text,
		 "%.*s, \"trace\": {\"values\": "
		 "\"summary\"}}",
		 (int)strlen(small_config) - 1, small_config);
	cfg = write_config(dir, "c.json", text);
	run_to_trace(cfg, dir, trace, sizeof trace);
	r = tu_cli(3, "explain", trace);
	every_rank_line_shows_values(r.out);
	/* Rank 1's partial sums [[25,53],[53,113]]: min 25, max 113, mean
	 * 61. */
	ck_assert_ptr_nonnull(strstr(
		r.out, "rank 1: (2, 2) min 25, max 113, mean 61, hash "));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* tests/golden/explain: explain's text and Markdown for the seed's 2x4
 * example and a 2-D mesh, byte for byte after the first line (which names
 * the version). The values in them are the hand-derived fixtures'. */
START_TEST(explain_text_and_md_match_their_golden_files)
{
	static const char *const cases[] = {"seed_2x4_rowwise_after_reduce",
					    "mesh_2d_dp_tp"};
	static const char *const formats[] = {"text", "md"};
	const char *dir = tu_tempdir();
	for (size_t c = 0; c < 2; c++) {
		char cfg[1024], trace[1024], golden_path[512];
		struct tu_result r;
		snprintf(cfg, sizeof cfg, "%s/%s/config.json",
			 tu_source_path("fixtures"), cases[c]);
		snprintf(trace, sizeof trace, "%s/%s.json", dir, cases[c]);
		r = tu_cli(5, "run", cfg, "-o", trace);
		ck_assert_msg(r.rc == 0, "%s", r.err);
		tu_result_free(&r);
		for (size_t f = 0; f < 2; f++) {
			char *golden;
			snprintf(golden_path, sizeof golden_path,
				 "tests/golden/explain/%s.%s", cases[c],
				 f ? "md" : "txt");
			golden =
				tu_read_file(tu_source_path(golden_path), NULL);
			ck_assert_msg(golden != NULL, "%s is missing",
				      golden_path);
			r = tu_cli(5, "explain", trace, "--format", formats[f]);
			ck_assert_int_eq(r.rc, 0);
			ck_assert_msg(strcmp(strchr(golden, '\n'),
					     strchr(r.out, '\n')) == 0,
				      "%s differs; explain now prints:\n%s",
				      golden_path, r.out);
			tu_result_free(&r);
			free(golden);
		}
	}
	tu_rmtree(dir);
}
END_TEST

START_TEST(explain_md_escapes_text_from_the_config)
{
	/* Module names are letters, digits, '_', '-' and '.': '_' is the
	 * one Markdown may read as emphasis (MkDocs does, between words). */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc_a_b\", "
		"\"type\": \"linear\", \"in_features\": 4, "
		"\"out_features\": 2}], \"plan\": {\"*\": \"rowwise\"}, "
		"\"input\": {\"shape\": [2, 4], \"init\": \"arange\"}}");
	char trace[512];
	struct tu_result r;
	run_to_trace(cfg, dir, trace, sizeof trace);
	r = tu_cli(5, "explain", trace, "--format", "md");
	ck_assert_ptr_nonnull(
		strstr(r.out, "] fc\\_a\\_b: matmul -> fc\\_a\\_b.out\n"));
	/* Outside code spans (equations, where '_' is literal), nothing is
	 * left unescaped. */
	for (char *p = r.out, *open = NULL; *p; p++) {
		if (*p == '`' && !open) {
			open = p;
		} else if (*p == '`') {
			memset(open, ' ', (size_t)(p - open + 1));
			open = NULL;
		}
	}
	ck_assert_ptr_null(strstr(r.out, "fc_a_b"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* explain's output written to a pseudo-terminal, read back. */
static char *explain_on_a_terminal(const char *trace)
{
	int master, slave;
	char *argv[] = {"tpsim", "explain", (char *)trace, NULL};
	char *text = calloc(1, 65536);
	size_t used = 0;
	FILE *out, *err = tmpfile();
	ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
	out = fdopen(slave, "w");
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(tps_cli_main(3, argv, out, err), 0);
	fclose(out);
	fclose(err);
	/* Read until the closed slave gives EOF or EIO. */
	for (;;) {
		ssize_t n = read(master, text + used, 65535 - used);
		if (n <= 0) {
			break;
		}
		used += (size_t)n;
	}
	close(master);
	return text;
}

START_TEST(explain_colours_only_a_terminal_and_never_under_no_color)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	char trace[512];
	char *text;
	struct tu_result r;
	run_to_trace(cfg, dir, trace, sizeof trace);
	/* Not a terminal (a memory stream): no escape codes. */
	r = tu_cli(3, "explain", trace);
	ck_assert_ptr_null(strchr(r.out, '\033'));
	tu_result_free(&r);
	/* A terminal: bold phases, a yellow collective, a green verdict. */
	unsetenv("NO_COLOR");
	text = explain_on_a_terminal(trace);
	ck_assert_ptr_nonnull(strstr(text, "\033[1mforward, step 0:\033[0m"));
	ck_assert_ptr_nonnull(
		strstr(text, "\033[33mall_reduce \033[0m fc.out"));
	ck_assert_ptr_nonnull(strstr(text, "\033[32mmatches\033[0m"));
	free(text);
	/* NO_COLOR set: a terminal gets plain text. */
	setenv("NO_COLOR", "1", 1);
	text = explain_on_a_terminal(trace);
	ck_assert_ptr_nonnull(strstr(text, "forward, step 0:"));
	ck_assert_ptr_null(strchr(text, '\033'));
	free(text);
	unsetenv("NO_COLOR");
	tu_rmtree(dir);
}
END_TEST

START_TEST(explain_aligns_op_and_tensor_columns_for_long_names)
{
	/* Training has ops longer than 11 characters (relu_backward):
	 * every event line's op and tensor still start in one column. */
	const char *dir = tu_tempdir();
	char trace[512];
	struct tu_result r;
	int op_col = -1, tensor_col = -1, lines = 0;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run",
		   tu_source_path("fixtures/train_dp2_tp2_mse/config.json"),
		   "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(3, "explain", trace);
	for (const char *p = r.out; (p = strstr(p, "\n  [")); p++) {
		const char *line = p + 1, *b = strstr(line, "]");
		const char *op = b + 1, *tensor;
		while (*op == ' ') { /* the seq's padding */
			op++;
		}
		while (*op != ' ') { /* the module */
			op++;
		}
		while (*op == ' ') {
			op++;
		}
		tensor = op;
		while (*tensor != ' ') {
			tensor++;
		}
		while (*tensor == ' ') {
			tensor++;
		}
		if (op_col < 0) {
			op_col = (int)(op - line);
			tensor_col = (int)(tensor - line);
		}
		ck_assert_msg((int)(op - line) == op_col &&
				      (int)(tensor - line) == tensor_col,
			      "misaligned: %.80s", line);
		lines++;
	}
	ck_assert_ptr_nonnull(strstr(r.out, "relu_backward"));
	ck_assert_int_gt(lines, 10);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(explain_prints_byte_counts_as_integers)
{
	/* A (512, 512) all_reduce over 2 ranks: c = 131072 floats, 2 (n-1) c
	 * = 1048576 bytes, which %g would print as 1.04858e+06. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 512}], "
		"\"plan\": {\"fc\": \"rowwise\"}, \"input\": {\"shape\": "
		"[512, 4]}, \"trace\": {\"values\": \"none\"}}");
	char trace[512];
	struct tu_result r;
	run_to_trace(cfg, dir, trace, sizeof trace);
	r = tu_cli(3, "explain", trace);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_msg(strstr(r.out, ", 1048576 bytes/rank\n") != NULL, "%s",
		      r.out);
	ck_assert_msg(strstr(r.out, "1 collective, 1048576 bytes per rank") !=
			      NULL,
		      "%s", r.out);
	ck_assert_ptr_null(strstr(r.out, "e+"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* fc1 linear 8 -> 16 colwise, relu, fc2 16 -> 8 rowwise on dp 2 x tp 4,
 * batch 4: test_costs.c derives its counts by hand (96 bytes forward over
 * tp; 304 bytes of dp gradient averages). */
/* The integers of the first line of text that starts with `start`, into
 * v; returns how many. */
static int numbers_of_line(const char *text, const char *start, long *v,
			   int max)
{
	const char *line = text;
	int n = 0;
	while (line && strncmp(line, start, strlen(start)) != 0) {
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	ck_assert_msg(line != NULL, "no line \"%s\" in %s", start, text);
	for (const char *p = line; *p && *p != '\n' && n < max;) {
		char *end;
		long x = strtol(p, &end, 10);
		if (end != p && (p == line || p[-1] == ' ') &&
		    (*end == ' ' || *end == '\n' || *end == '\0')) {
			v[n++] = x;
			p = end;
		} else {
			p++;
		}
	}
	return n;
}

static const char comm_config[] =
	"{\"tpsim\": 1, \"vars\": {\"dp\": 2}, \"mesh\": {\"shape\": "
	"[\"$dp\", 4], \"dim_names\": [\"dp\", \"tp\"]}, \"dp_dim\": \"dp\", "
	"\"model\": [{\"name\": \"fc1\", \"type\": \"linear\", "
	"\"in_features\": 8, \"out_features\": 16}, {\"name\": \"act\", "
	"\"type\": \"relu\"}, {\"name\": \"fc2\", \"type\": \"linear\", "
	"\"in_features\": 16, \"out_features\": 8}], \"plan\": {\"fc1\": "
	"\"colwise\", \"fc2\": \"rowwise\"}, \"input\": {\"shape\": "
	"[\"2*$dp\", 8]}}";

START_TEST(comm_counts_inference_and_training_side_by_side)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", comm_config);
	struct tu_result r = tu_cli(3, "comm", cfg);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_uint_eq(r.err_len, 0);
	/* inference: 1 collective, 96 bytes; training: 5, 400. */
	{
		long v[8];
		ck_assert_int_eq(numbers_of_line(r.out, "total", v, 8), 4);
		ck_assert_int_eq(v[0], 1);
		ck_assert_int_eq(v[1], 96);
		ck_assert_int_eq(v[2], 5);
		ck_assert_int_eq(v[3], 400);
	}
	ck_assert_ptr_nonnull(
		strstr(r.out, "bytes per rank, training / inference: 4.17\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "optimizer  all_reduce  fc1"));
	ck_assert_ptr_nonnull(
		strstr(r.out, "links: dp 25 GB/s, 10 us; tp 150 GB/s, 3 us; "
			      "device 100 TFLOP/s\n"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(comm_sweeps_every_combination_of_set_values)
{
	/* dp 1 (tp only): training adds nothing, ratio 1; dp 2: 400 / 96. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", comm_config);
	struct tu_result r = tu_cli(5, "comm", cfg, "--set", "dp=1,2");
	const char *sweep;
	ck_assert_msg(r.rc == 0, "%s", r.err);
	sweep = strstr(r.out, "sweep: ");
	ck_assert_ptr_nonnull(sweep);
	ck_assert_int_eq(tu_count_lines(sweep), 4); /* title, head, 2 points */
	{
		/* Per point: dp, inference bytes, training bytes, ratio (an
		 * integer only for dp 1), the times' leading numbers. */
		char first[512];
		long v[8];
		const char *row = strchr(strchr(sweep, '\n') + 1, '\n') + 1;
		snprintf(first, sizeof first, "%.*s",
			 (int)(strchr(row, ' ') - row), row);
		ck_assert_int_ge(numbers_of_line(row, first, v, 8), 4);
		ck_assert_int_eq(v[0], 1);
		ck_assert_int_eq(v[1], 96);
		ck_assert_int_eq(v[2], 96);
		ck_assert_int_eq(v[3], 1);
		ck_assert_ptr_nonnull(strstr(row, " 4.17 "));
	}
	tu_result_free(&r);
	/* --json: strict JSON, one point per combination. */
	r = tu_cli(6, "comm", cfg, "--set", "dp=1,2", "--json");
	{
		cJSON *root = NULL;
		ck_assert_int_eq(tps_json_parse_strict("out", r.out, r.out_len,
						       &root, NULL),
				 TPS_OK);
		ck_assert_int_eq(
			cJSON_GetArraySize(cJSON_GetObjectItem(root, "points")),
			2);
		cJSON_Delete(root);
	}
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(comm_refuses_bad_input_with_one_line)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", comm_config);
	struct tu_result r = tu_cli(2, "comm");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "comm: missing CONFIG"));
	tu_result_free(&r);
	r = tu_cli(5, "comm", cfg, "--set", "dp=two");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "--set expects NAME=V[,V...]"));
	tu_result_free(&r);
	/* A variable the config does not define: at /vars. */
	r = tu_cli(5, "comm", cfg, "--set", "hidden=8");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_msg(strstr(r.err, "c.json: /vars: no variable \"hidden\"") !=
			      NULL,
		      "%s", r.err);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	ck_assert_uint_eq(r.out_len, 0);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(run_set_overrides_a_config_variable)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", comm_config);
	char trace[512];
	char *text;
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(7, "run", cfg, "--set", "dp=1", "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	ck_assert_ptr_nonnull(strstr(text, "\"vars\":{\"dp\":1}"));
	ck_assert_ptr_nonnull(strstr(text, "\"mesh\":{\"shape\":[1,4]"));
	free(text);
	r = tu_cli(5, "run", cfg, "--set", "dp=1,2");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "run: --set expects NAME=VALUE"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/*
 * docs/comm.md holds tables `tpsim comm` printed, each after a line
 * "<!-- generated: tpsim ARGS -->" in a fenced block. They are run again
 * here, from the source root, and must be what the doc says; with
 * TPSIM_UPDATE_DOCS=1 the doc is rewritten instead.
 */
START_TEST(the_generated_tables_in_docs_are_current)
{
	static const char *const docs[] = {"docs/comm.md",
					   "examples/seed004_ddp_tp/README.md"};
	char cwd[4096];
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	ck_assert_int_eq(chdir(tu_source_root()), 0);
	for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
		char *text = tu_read_file(docs[d], NULL);
		char *rebuilt = NULL;
		size_t rebuilt_len = 0;
		FILE *w = open_memstream(&rebuilt, &rebuilt_len);
		const char *p;
		int blocks = 0;
		ck_assert_ptr_nonnull(text);
		for (p = text; *p;) {
			const char *tag = strstr(p, "<!-- generated: tpsim ");
			const char *fence, *body, *end;
			char args[1024], *argv[16] = {"tpsim"};
			int argc = 1;
			struct tu_result r;
			FILE *out, *err;
			if (!tag) {
				fputs(p, w);
				break;
			}
			end = strstr(tag, " -->\n");
			ck_assert_ptr_nonnull(end);
			snprintf(args, sizeof args, "%.*s",
				 (int)(end - tag) - 22, tag + 22);
			/* Split on spaces (strtok is banned, STYLE.md). */
			for (char *a = args; *a && argc < 16;) {
				argv[argc++] = a;
				while (*a && *a != ' ') {
					a++;
				}
				while (*a == ' ') {
					*a++ = '\0';
				}
			}
			fence = end + 5;
			ck_assert_msg(strncmp(fence, "```\n", 4) == 0,
				      "%s: no fence after %.*s", docs[d],
				      (int)(end - tag), tag);
			body = fence + 4;
			end = strstr(body, "```\n<!-- end generated -->");
			ck_assert_ptr_nonnull(end);
			memset(&r, 0, sizeof r);
			out = open_memstream(&r.out, &r.out_len);
			err = open_memstream(&r.err, &r.err_len);
			r.rc = tps_cli_main(argc, argv, out, err);
			fclose(out);
			fclose(err);
			ck_assert_msg(r.rc == 0, "%s", r.err);
			if (!getenv("TPSIM_UPDATE_DOCS")) {
				ck_assert_msg(
					(size_t)(end - body) == r.out_len &&
						memcmp(body, r.out,
						       r.out_len) == 0,
					"%s is stale at \"%.*s\": rerun with "
					"TPSIM_UPDATE_DOCS=1 meson test -C "
					"build cli",
					docs[d], (int)(fence - tag - 5), tag);
			}
			fwrite(p, 1, (size_t)(body - p), w);
			fwrite(r.out, 1, r.out_len, w);
			p = end;
			blocks++;
			tu_result_free(&r);
		}
		fclose(w);
		if (getenv("TPSIM_UPDATE_DOCS")) {
			tu_write_file(docs[d], rebuilt, rebuilt_len);
			printf("rewrote %s\n", docs[d]);
		}
		ck_assert_int_gt(blocks, 0);
		free(rebuilt);
		free(text);
	}
	ck_assert_int_eq(chdir(cwd), 0);
}
END_TEST

/* The count of trace events with these keys (NULL: any). */
static int count_events(const cJSON *trace, int step, const char *phase,
			const char *op, const char *mesh_dim)
{
	const cJSON *ev;
	int n = 0;
	cJSON_ArrayForEach(ev, cJSON_GetObjectItem(trace, "events"))
	{
		const cJSON *s = cJSON_GetObjectItem(ev, "step");
		const cJSON *k = cJSON_GetObjectItem(ev, "kind");
		const cJSON *d = cJSON_GetObjectItem(ev, "mesh_dim");
		if (strcmp(k->valuestring, "collective") != 0 ||
		    (step >= 0 && (!s || s->valueint != step)) ||
		    (phase &&
		     strcmp(cJSON_GetObjectItem(ev, "phase")->valuestring,
			    phase) != 0) ||
		    (op && strcmp(cJSON_GetObjectItem(ev, "op")->valuestring,
				  op) != 0) ||
		    (mesh_dim && (!d || strcmp(d->valuestring, mesh_dim)))) {
			continue;
		}
		n++;
	}
	return n;
}

START_TEST(seed_004_example_runs_as_ddp_and_tp_do)
{
	/* examples/seed004_ddp_tp: mesh (3, 2) named (col, row), DDP over
	 * col, TP over row; linear1 colwise, linear2 rowwise, linear3
	 * replicated, relu after each; loss output.sum(), SGD, 10 steps,
	 * the batch broadcast from each TP group's root. Per step: one TP
	 * all_reduce forward (linear2), no TP collective backward (the
	 * input needs no gradient), and one DP all_reduce per parameter. */
	const char *dir = tu_tempdir();
	char trace[512];
	char *text;
	cJSON *root = NULL;
	const cJSON *result;
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run",
		   tu_source_path("examples/seed004_ddp_tp/config.json"), "-o",
		   trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	ck_assert_int_eq(
		tps_json_parse_strict("t", text, strlen(text), &root, NULL),
		TPS_OK);
	for (int step = 0; step < 10; step++) {
		ck_assert_int_eq(
			count_events(root, step, "forward", "broadcast", "row"),
			step == 0 ? 1 : 0);
		ck_assert_int_eq(count_events(root, step, "forward",
					      "all_reduce", "row"),
				 1);
		ck_assert_int_eq(
			count_events(root, step, "backward", NULL, NULL), 0);
		ck_assert_int_eq(count_events(root, step, "optimizer",
					      "all_reduce", "col"),
				 6);
		ck_assert_int_eq(count_events(root, step, NULL, NULL, NULL),
				 step == 0 ? 8 : 7);
	}
	result = cJSON_GetObjectItem(root, "result");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(result, "match")));
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(result, "loss")), 10);
	cJSON_Delete(root);
	free(text);
	tu_rmtree(dir);
}
END_TEST

START_TEST(tp_off_the_innermost_dim_warns_in_trace_and_on_stderr)
{
	/* Seed 004's first naming: TP over the outer dim. tpsim runs it and
	 * says why it matters; strict_tp_innermost gives PyTorch's error. */
	const char *dir = tu_tempdir();
	static const char cfg_text[] =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 3], \"dim_names\": "
		"[\"tp\", \"dp\"]}, \"tp_dim\": \"tp\", \"dp_dim\": \"dp\", "
		"\"model\": [{\"name\": \"fc\", \"type\": \"linear\", "
		"\"in_features\": 4, \"out_features\": 2}], \"plan\": {\"fc\": "
		"\"rowwise\"}, \"input\": {\"shape\": [3, 4]}%s}";
	char text[1024], trace[512], *out;
	const char *cfg;
	struct tu_result r;
	snprintf(text, sizeof text, cfg_text, "");
	cfg = write_config(dir, "c.json", text);
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_msg(strstr(r.err, "tpsim: warning: ") == r.err, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "TP runs over mesh dim \"tp\" (dim "
					    "0 of 2), not the innermost"));
	ck_assert_int_eq(tu_count_lines(r.err), 2);
	tu_result_free(&r);
	out = tu_read_file(trace, NULL);
	ck_assert_ptr_nonnull(strstr(out, "\n\"warnings\":[\"TP runs over"));
	free(out);
	snprintf(text, sizeof text, cfg_text,
		 ", \"strict_tp_innermost\": true");
	cfg = write_config(dir, "c.json", text);
	r = tu_cli(3, "run", cfg);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_msg(strstr(r.err, "TP needs to be the innermost dimension "
				    "on its parent mesh") != NULL,
		      "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(unequal_dp_parts_warn_that_ddp_would_differ)
{
	/* 5 samples over dp 2: 3 and 2. DDP's mean of local means weights
	 * them unequally; dp_grad global scales them, and says so. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2], \"dim_names\": "
		"[\"dp\", \"tp\"]}, \"dp_dim\": \"dp\", \"model\": [{\"name\": "
		"\"fc\", \"type\": \"linear\", \"in_features\": 4, "
		"\"out_features\": 2}], \"plan\": {\"fc\": \"colwise\"}, "
		"\"input\": {\"shape\": [5, 4]}, \"mode\": \"training\"}");
	struct tu_result r = tu_cli(3, "run", cfg);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "unequal parts of the batch (3 "
					    "to 2 samples)"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"warnings\":["));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(ddp_with_unequal_dp_parts_warns_what_its_step_is)
{
	/* The same 5 samples over dp 2 with dp_grad ddp: the step is the
	 * plain average of the two local means, so the 2-sample rank's
	 * samples weigh more. That differs from the global-batch gradient,
	 * and the warning says so, as global's does. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2], \"dim_names\": "
		"[\"dp\", \"tp\"]}, \"dp_dim\": \"dp\", \"model\": [{\"name\": "
		"\"fc\", \"type\": \"linear\", \"in_features\": 4, "
		"\"out_features\": 2}], \"plan\": {\"fc\": \"colwise\"}, "
		"\"input\": {\"shape\": [5, 4]}, \"mode\": \"training\", "
		"\"dp_grad\": \"ddp\"}");
	struct tu_result r = tu_cli(3, "run", cfg);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_msg(strstr(r.err, "tpsim: warning: ") == r.err, "%s", r.err);
	ck_assert_msg(strstr(r.err, "unequal parts of the batch (3 to 2 "
				    "samples): with dp_grad ddp the step is "
				    "the plain average of the ranks' local "
				    "means") != NULL,
		      "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "not the gradient of the "
					    "global-batch mean"));
	ck_assert_ptr_nonnull(strstr(r.out, "\"warnings\":[\"the dp ranks "
					    "hold unequal parts"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* Runs a 1-linear config on the given mesh (JSON text) and dp_dim member
 * ("" for none); r gets what tpsim printed, the trace on stdout. */
static struct tu_result run_on_mesh(const char *dir, const char *mesh,
				    const char *dp)
{
	char text[1024];
	snprintf(text, sizeof text,
		 "{\"tpsim\": 1, \"mesh\": %s,%s \"model\": [{\"name\": "
		 "\"fc\", \"type\": \"linear\", \"in_features\": 4, "
		 "\"out_features\": 2}], \"plan\": {\"fc\": \"colwise\"}, "
		 "\"input\": {\"shape\": [4, 4]}}",
		 mesh, dp);
	return tu_cli(3, "run", write_config(dir, "c.json", text));
}

START_TEST(idle_mesh_dims_warn_naming_the_dim)
{
	/* A mesh dim that is neither tp_dim nor dp_dim replicates the whole
	 * run along it. Named like a dp dim, the warning says that dp_dim
	 * would split the batch; a dim of size 1 repeats nothing, and says
	 * nothing. */
	static const struct {
		const char *mesh, *dp;
		const char *warning; /* NULL: none */
	} cases[] = {
		{"{\"shape\": [2, 2], \"dim_names\": [\"dp\", \"tp\"]}", "",
		 "mesh dim \"dp\" (size 2) is neither tp_dim nor dp_dim, so it "
		 "does nothing: its 2 ranks repeat each other, each holding "
		 "the same parameters and computing the whole batch; naming "
		 "it in \"dp_dim\" would split the batch over it "
		 "(\"dp_dim\": \"dp\")"},
		{"{\"shape\": [3, 2], \"dim_names\": [\"pp\", \"tp\"]}", "",
		 "mesh dim \"pp\" (size 3) is neither tp_dim nor dp_dim, so it "
		 "does nothing: its 3 ranks repeat each other, each holding "
		 "the same parameters and computing the whole batch\n"},
		{"{\"shape\": [2, 2, 2], \"dim_names\": [\"dp_shard\", \"dp\", "
		 "\"tp\"]}",
		 " \"dp_dim\": \"dp\",",
		 "mesh dim \"dp_shard\" (size 2) is neither tp_dim nor dp_dim, "
		 "so it does nothing: its 2 ranks repeat each other, each "
		 "holding the same parameters and computing the same part of "
		 "the batch; naming it in \"dp_dim\" would split the batch "
		 "over it too\n"},
		{"{\"shape\": [1, 2], \"dim_names\": [\"dp\", \"tp\"]}", "",
		 NULL},
		{"{\"shape\": [2, 2], \"dim_names\": [\"dp\", \"tp\"]}",
		 " \"dp_dim\": \"dp\",", NULL},
	};
	const char *dir = tu_tempdir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tu_result r =
			run_on_mesh(dir, cases[i].mesh, cases[i].dp);
		ck_assert_int_eq(r.rc, 0);
		if (!cases[i].warning) {
			ck_assert_msg(strstr(r.err, "warning") == NULL,
				      "case %zu: %s", i, r.err);
			ck_assert_ptr_null(strstr(r.out, "\"warnings\""));
		} else {
			ck_assert_msg(strstr(r.err, "tpsim: warning: ") ==
						      r.err &&
					      strstr(r.err, cases[i].warning),
				      "case %zu: %s", i, r.err);
			ck_assert_int_eq(tu_count_lines(r.err), 2);
			ck_assert_ptr_nonnull(
				strstr(r.out, "\n\"warnings\":[\"mesh dim "));
		}
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

/* The rows of the batch each rank holds after the input's dp split(s) in
 * step 0 of trace text (the last split event of tensor "input"), and that
 * event's placement on mesh dim 0. */
static void input_split_rows(const char *text, int64_t *rows, int world,
			     char *placement, size_t size)
{
	cJSON *root = cJSON_Parse(text);
	const cJSON *ev, *last = NULL, *rank;
	int r = 0;
	ck_assert_ptr_nonnull(root);
	cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "events"))
	{
		if (strcmp(cJSON_GetObjectItem(ev, "op")->valuestring,
			   "split") == 0 &&
		    strcmp(cJSON_GetObjectItem(ev, "tensor")->valuestring,
			   "input") == 0) {
			last = ev;
		}
	}
	ck_assert_ptr_nonnull(last);
	snprintf(placement, size, "%s",
		 cJSON_GetArrayItem(cJSON_GetObjectItem(last, "placements"), 0)
			 ->valuestring);
	cJSON_ArrayForEach(rank, cJSON_GetObjectItem(last, "ranks"))
	{
		ck_assert_int_lt(r, world);
		rows[r++] = (int64_t)cJSON_GetArrayItem(
				    cJSON_GetObjectItem(rank, "shape"), 0)
				    ->valuedouble;
	}
	ck_assert_int_eq(r, world);
	cJSON_Delete(root);
}

START_TEST(batch_over_flattened_dp_dims_is_one_chunk)
{
	/* DESIGN's numbers: 5 rows over dp and cp of a (2, 2, 2) mesh, the
	 * flattened group [0, 2, 4, 6], are one torch.chunk over it: 2, 2, 1,
	 * 0 (ranks 1, 3, 5, 7 are their tp twins). "chunk_of_chunks" keeps
	 * DTensor's Shard(0) per dim: 2, 1, 1, 1. Inference and training
	 * (mse, sum, ddp's sum; rank 6 holds no rows) match the reference. */
	static const struct {
		const char *extra;
		int64_t rows[8];
		const char *placement;
	} cases[] = {
		{"", {2, 2, 2, 2, 1, 1, 0, 0}, "shard(0,flat)"},
		{", \"mode\": \"training\", \"steps\": 2",
		 {2, 2, 2, 2, 1, 1, 0, 0},
		 "shard(0,flat)"},
		{", \"mode\": \"training\", \"loss\": \"sum\", \"dp_grad\": "
		 "\"ddp\"",
		 {2, 2, 2, 2, 1, 1, 0, 0},
		 "shard(0,flat)"},
		{", \"sampler\": \"chunk_of_chunks\"",
		 {2, 2, 1, 1, 1, 1, 1, 1},
		 "shard(0)"},
		{", \"sampler\": \"chunk_of_chunks\", \"mode\": \"training\", "
		 "\"optimizer\": {\"type\": \"adamw\"}",
		 {2, 2, 1, 1, 1, 1, 1, 1},
		 "shard(0)"},
	};
	const char *dir = tu_tempdir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[1024], placement[32];
		int64_t rows[8];
		struct tu_result r;
		bool training = strstr(cases[i].extra, "training") != NULL;
		snprintf(text, sizeof text,
			 "{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2, 2], "
			 "\"dim_names\": [\"dp\", \"cp\", \"tp\"]}, "
			 "\"dp_dim\": [\"dp\", \"cp\"], \"model\": [{\"name\": "
			 "\"fc1\", \"type\": \"linear\", \"in_features\": 4, "
			 "\"out_features\": 6}, {\"name\": \"act\", \"type\": "
			 "\"relu\"}, {\"name\": \"fc2\", \"type\": \"linear\", "
			 "\"in_features\": 6, \"out_features\": 3}], \"plan\": "
			 "{\"fc1\": \"colwise\", \"fc2\": \"rowwise\"}, "
			 "\"input\": {\"shape\": [5, 4]%s}%s}",
			 training ? ", \"requires_grad\": true" : "",
			 cases[i].extra);
		r = tu_cli(3, "run", write_config(dir, "c.json", text));
		ck_assert_msg(r.rc == 0, "case %zu: %s", i, r.err);
		ck_assert_msg(strstr(r.err, "matches the reference") != NULL,
			      "case %zu: %s", i, r.err);
		input_split_rows(r.out, rows, 8, placement, sizeof placement);
		for (int k = 0; k < 8; k++) {
			ck_assert_msg(rows[k] == cases[i].rows[k],
				      "case %zu: rank %d holds %lld rows, not "
				      "%lld",
				      i, k, (long long)rows[k],
				      (long long)cases[i].rows[k]);
		}
		ck_assert_str_eq(placement, cases[i].placement);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

START_TEST(mesh_prints_pytorch_groups)
{
	/* (3,2) named (row, col): mesh["row"] of rank 0 is [0, 2, 4] (the
	 * size-3 dim 0), mesh["col"] is [0, 1]; seed 004's first printout
	 * has these swapped. */
	struct tu_result r =
		tu_cli(6, "mesh", "--shape", "3,2", "--names", "row,col");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
				     "Rank 0: coordinate (0, 0), "
				     "mesh['row'] = [0, 2, 4] (local rank 0), "
				     "mesh['col'] = [0, 1] (local rank 0)\n"));
	ck_assert_ptr_nonnull(strstr(r.out,
				     "Rank 3: coordinate (1, 1), "
				     "mesh['row'] = [1, 3, 5] (local rank 1), "
				     "mesh['col'] = [2, 3] (local rank 1)\n"));
	ck_assert_int_eq(tu_count_lines(r.out), 7);
	tu_result_free(&r);
}
END_TEST

START_TEST(mesh_errors_quote_names_without_backslashes)
{
	/* The message is ours: its quotes stay quotes. A name the user
	 * typed is escaped, so a control character cannot break the line. */
	struct tu_result r =
		tu_cli(6, "mesh", "--shape", "2,2", "--names", "tp,tp");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_msg(strstr(r.err, "tpsim: mesh: mesh dims 0 and 1 are both "
				    "named \"tp\"\n") != NULL,
		      "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(6, "mesh", "--shape", "2,2", "--names", "a\033,a\033");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_msg(strstr(r.err, "both named \"a\\u001b\"\n") != NULL, "%s",
		      r.err);
	ck_assert_int_eq(tu_count_lines(r.err), 2);
	tu_result_free(&r);
}
END_TEST

START_TEST(mesh_json_is_strict_json)
{
	struct tu_result r = tu_cli(7, "mesh", "--shape", "2,2,2", "--names",
				    "dp,cp,tp", "--json");
	cJSON *root = NULL, *g;
	char *dp;
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(
		tps_json_parse_strict("out", r.out, r.out_len, &root, NULL),
		TPS_OK);
	g = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "groups"), "dp");
	dp = cJSON_PrintUnformatted(g);
	ck_assert_str_eq(dp, "[[0,4],[1,5],[2,6],[3,7]]");
	free(dp);
	ck_assert_int_eq(cJSON_GetObjectItem(root, "world_size")->valueint, 8);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "ranks")),
			 8);
	cJSON_Delete(root);
	tu_result_free(&r);
	r = tu_cli(6, "mesh", "--shape", "4096,2", "--names", "a,b");
	ck_assert_int_eq(r.rc, 2);
	tu_result_free(&r);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *usage = tcase_create("usage");
	TCase *run = tcase_create("run");
	TCase *check = tcase_create("check");
	TCase *mesh = tcase_create("mesh");
	TCase *comm = tcase_create("comm");
	tcase_add_test(usage, help_and_version_go_to_stdout);
	tcase_add_test(usage, usage_errors_are_one_line_and_a_hint);
	tcase_add_test(run, run_writes_trace_and_one_line_summary);
	tcase_add_test(run, run_reads_the_config_from_stdin);
	tcase_add_test(run, bad_config_is_exit_2_naming_file_and_pointer);
	tcase_add_test(run, output_directory_and_memory_budget_are_refused);
	tcase_add_test(run, bad_configs_exit_2_with_one_line);
	tcase_add_test(run, values_none_writes_shapes_only);
	tcase_add_test(run, disagreement_with_the_reference_is_exit_1);
	tcase_add_test(run, output_to_a_device_writes_to_it_in_place);
	tcase_add_test(run, traces_are_byte_identical_for_every_thread_count);
	tcase_add_test(run, run_threads_and_stats_options);
	tcase_add_test(run, explicit_input_values_run_as_their_init_would);
	tcase_add_test(run,
		       inject_bias_every_rank_is_diagnosed_from_its_symptom);
	tcase_add_test(run, a_bias_bug_is_never_a_match);
	tcase_add_test(run, a_mistake_the_tolerance_would_pass_still_differs);
	tcase_add_test(run, the_trace_says_which_comparison_was_used);
	tcase_add_test(run,
		       inject_skip_all_reduce_is_diagnosed_from_its_symptom);
	tcase_add_test(run, gpt_example_counts_in_its_trace_are_megatrons);
	tcase_add_test(run, inject_skip_gather_is_diagnosed_from_its_symptom);
	tcase_add_test(run,
		       inject_wrong_shard_dim_is_a_shape_error_in_the_matmul);
	tcase_add_test(
		run,
		inject_tp_allreduce_weight_grad_is_diagnosed_from_its_symptom);
	tcase_add_test(run, readme_quick_start_shows_the_real_demo_output);
	tcase_add_test(run, traces_are_byte_identical_to_the_golden_ones);
	tcase_add_test(check, every_fixture_passes_tpsim_check);
	tcase_add_test(check, a_wrong_number_in_a_fixture_fails_naming_it);
	tcase_add_test(check, explain_walks_the_trace_step_by_step);
	tcase_add_test(check,
		       explain_aligns_op_and_tensor_columns_for_long_names);
	tcase_add_test(
		check,
		explain_colours_only_a_terminal_and_never_under_no_color);
	tcase_add_test(check, explain_text_and_md_match_their_golden_files);
	tcase_add_test(check, explain_md_escapes_text_from_the_config);
	tcase_add_test(check,
		       explain_elides_long_values_visibly_and_filters_events);
	tcase_add_test(check, explain_shows_a_summary_traces_statistics);
	tcase_add_test(check, explain_prints_byte_counts_as_integers);
	tcase_add_test(comm, comm_counts_inference_and_training_side_by_side);
	tcase_add_test(comm, comm_sweeps_every_combination_of_set_values);
	tcase_add_test(comm, comm_refuses_bad_input_with_one_line);
	tcase_add_test(comm, run_set_overrides_a_config_variable);
	tcase_add_test(comm, the_generated_tables_in_docs_are_current);
	tcase_add_test(comm, seed_004_example_runs_as_ddp_and_tp_do);
	tcase_add_test(run,
		       tp_off_the_innermost_dim_warns_in_trace_and_on_stderr);
	tcase_add_test(run, unequal_dp_parts_warn_that_ddp_would_differ);
	tcase_add_test(run, ddp_with_unequal_dp_parts_warns_what_its_step_is);
	tcase_add_test(run, idle_mesh_dims_warn_naming_the_dim);
	tcase_add_test(run, batch_over_flattened_dp_dims_is_one_chunk);
	tcase_add_test(mesh, mesh_prints_pytorch_groups);
	tcase_add_test(mesh, mesh_json_is_strict_json);
	tcase_add_test(mesh, mesh_errors_quote_names_without_backslashes);
	suite_add_tcase(s, usage);
	suite_add_tcase(s, run);
	suite_add_tcase(s, check);
	suite_add_tcase(s, mesh);
	suite_add_tcase(s, comm);
	return s;
}

int main(void)
{
	return tu_run_suite(cli_suite());
}
