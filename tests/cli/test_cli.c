/* cli: verbs, exit codes (0/1/2), messages, fixtures, the mesh printout. */
#include <check.h>
#include <pty.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xxhash.h>

#include "testutil.h"
#include "cli.h"
#include "dtype.h"
#include "jsonio.h"
#include "tensor.h"

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

/* dp 2 x tp 2, two linears, 2 steps of SGD. */
static const char train_dp_tp_config[] =
	"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2], \"dim_names\": "
	"[\"dp\", \"tp\"]}, \"dp_dim\": \"dp\", \"model\": ["
	"{\"name\": \"fc1\", \"type\": \"linear\", \"in_features\": 4, "
	"\"out_features\": 6}, {\"name\": \"fc2\", \"type\": \"linear\", "
	"\"in_features\": 6, \"out_features\": 3}], \"plan\": {\"fc1\": "
	"\"colwise\", \"fc2\": \"rowwise\"}, \"input\": {\"shape\": [4, 4]},"
	" \"mode\": \"training\", \"steps\": 2, \"loss\": \"mse\", "
	"\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1}}";

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

/*
 * Each row: up to six arguments after "tpsim" and, last, a substring of
 * the message (NULLs between are left out). An argument "TRACE" stands
 * for a trace of small_config that the test writes first.
 */
START_TEST(usage_errors_are_one_line_and_a_hint)
{
	static const char *const cases[][7] = {
		{"", NULL, NULL, "missing command"},
		{"frobnicate", NULL, NULL, "unknown command 'frobnicate'"},
		{"run", NULL, NULL, "run: missing CONFIG"},
		{"run", "a.json", "--bogus", "unknown option '--bogus'"},
		{"run", "a.json", "--backend",
		 "run: --backend needs local or mpi, got ''"},
		{"run", "--backend", "nccl",
		 "run: --backend needs local or mpi, got 'nccl'"},
		{"run", "a.json", "-o", "-o needs a file"},
		{"run", "a.json", "--max-trace",
		 "run: --max-trace needs a size like 1G or 1048576, got ''"},
		{"run", "--max-trace", "lots",
		 "run: --max-trace needs a size like 1G or 1048576, got "
		 "'lots'"},
		{"run", "--max-trace", "-1",
		 "run: --max-trace needs a size like 1G or 1048576, got '-1'"},
		{"run", "--max-trace", "1GB",
		 "run: --max-trace needs a size like 1G or 1048576, got "
		 "'1GB'"},
		{"run", "--max-trace", "99999999999T",
		 "run: --max-trace needs a size like 1G or 1048576, got "
		 "'99999999999T'"},
		{"check", "t.json", NULL, "expected TRACE FIXTURE"},
		{"mesh", "--shape", "3,x", "--shape expects"},
		{"mesh", "--names", "a", "missing --shape"},
		{"mesh", "--shape", "64,128",
		 "mesh: --shape 64,128: the world size 8192 exceeds 4096"},
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
		{"explain", "t.json", "--heading-level",
		 "--heading-level expects 1, 2, 3 or 4 (the title's Markdown "
		 "level), got ''"},
		{"explain", "--heading-level", "0",
		 "--heading-level expects 1, 2, 3 or 4 (the title's Markdown "
		 "level), got '0'"},
		{"explain", "--heading-level", "5",
		 "--heading-level expects 1, 2, 3 or 4 (the title's Markdown "
		 "level), got '5'"},
		/* Text has no headings: the option is refused, not ignored. */
		{"explain", "t.json", "--heading-level", "2",
		 "explain: --heading-level applies to --format md"},
		/* A module the trace does not have (its one module is fc):
		 * the closest names (fc, at edit distance 1). */
		{"explain", "TRACE", "--module", "fcc",
		 "explain: --module 'fcc' names no module of "},
		{"explain", "TRACE", "--module", "fcc",
		 "t.json; the closest: 'fc'\n"},
		{"diff", NULL, NULL, "diff: expected TRACE_A TRACE_B"},
		{"diff", "TRACE", NULL, "diff: expected TRACE_A TRACE_B"},
		{"diff", "a.json", "b.json", "c.json",
		 "diff: unexpected argument 'c.json'"},
		{"diff", "a.json", "b.json", "--frob",
		 "diff: unknown option '--frob'"},
		{"diff", "a.json", "b.json", "--format",
		 "diff: --format expects text or md, got ''"},
		{"diff", "a.json", "--format", "html",
		 "diff: --format expects text or md, got 'html'"},
		{"diff", "a.json", "--step", "-1",
		 "diff: --step needs a step number (0, 1, ...), got '-1'"},
		{"diff", "a.json", "b.json", "-o", "diff: -o needs a file"},
		{"plot", NULL, NULL, "plot: expected TRACE..."},
		{"plot", "a.json", "-o", "plot: -o needs a file"},
		{"plot", "a.json", "--label", "plot: --label needs a text"},
		{"plot", "a.json", "--frob", "plot: unknown option '--frob'"},
		{"comm", "a.json", "--zero",
		 "comm: --zero expects ddp (or 0), 1, distributed_optimizer, "
		 "2 and 3, separated by commas and each once, or all; got ''"},
		{"comm", "a.json", "--zero", "4", "or all; got '4'"},
		{"comm", "a.json", "--zero", "stage1", "or all; got 'stage1'"},
		{"comm", "a.json", "--zero", "1,", "or all; got '1,'"},
		{"comm", "a.json", "--zero", ",1", "or all; got ',1'"},
		{"comm", "a.json", "--zero", "1,1", "or all; got '1,1'"},
		{"comm", "a.json", "--zero", "0,ddp", "or all; got '0,ddp'"},
		{"comm", "a.json", "--zero", "all,3", "or all; got 'all,3'"},
		{"comm", "a.json", "--zero",
		 "1,2,3,ddp,distributed_optimizer,1",
		 "or all; got '1,2,3,ddp,distributed_optimizer,1'"},
		{"comm", "--zero", "1", "--zero", "2",
		 "comm: --zero given twice"},
		{"comm", "a.json", "--columns", "--json",
		 "comm: --columns is a table of its own: expected --columns, "
		 "--summary or --json, one of them"},
		{"comm", "a.json", "--summary", "--columns",
		 "comm: --columns is a table of its own"},
		{"comm", "a.json", "--zero", "all", "--set",
		 "comm: --set needs NAME=V[,V...]"},
		/* 5 settings x 3 values: 15 columns, past 12. */
		{"comm", "a.json", "--zero", "all", "--set", "dp=1,2,3",
		 "comm: --columns puts at most 12 points side by side, got 15 "
		 "(use --summary or --json for more)"},
	};
	const char *dir = tu_tempdir();
	char trace[512];
	run_to_trace(write_config(dir, "c.json", small_config), dir, trace,
		     sizeof trace);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *args[6] = {NULL};
		const char *message = NULL;
		int argc = 1, last = 6;
		struct tu_result r;
		while (!cases[i][last]) {
			last--;
		}
		message = cases[i][last];
		for (int a = 0; a < last; a++) {
			if (cases[i][a] && cases[i][a][0]) {
				args[argc - 1] = strcmp(cases[i][a], "TRACE")
							 ? cases[i][a]
							 : trace;
				argc++;
			}
		}
		r = tu_cli(argc, args[0], args[1], args[2], args[3], args[4],
			   args[5]);
		ck_assert_int_eq(r.rc, 2);
		ck_assert_msg(strstr(r.err, message) != NULL, "%s", r.err);
		ck_assert_ptr_nonnull(strstr(r.err, "\nTry 'tpsim --help'.\n"));
		ck_assert_int_eq(tu_count_lines(r.err), 2);
		ck_assert_uint_eq(r.out_len, 0);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

/* Whether a run's summary says that it agrees with its reference: bit for
 * bit, within the error bounds, or within the tolerance where a tensor
 * has no bound. */
static bool agrees(const char *err)
{
	return strstr(err, "matches the reference") ||
	       strstr(err, "within what reordering the sums can explain") ||
	       strstr(err, "within the tolerance");
}

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

/* --no-reference: nothing compared, and the trace says so; the rest of
 * the trace is the run's with a reference, byte for byte, up to its
 * result. --backend local is the default. */
START_TEST(run_without_reference_says_so_and_compares_nothing)
{
	const char *dir = tu_tempdir();
	char with[512], without[512], local[512];
	const char *cfg = write_config(dir, "c.json", train_dp_tp_config);
	struct tu_result r;
	cJSON *root = NULL;
	const cJSON *result;
	char *a, *b;
	size_t a_len, b_len;
	snprintf(with, sizeof with, "%s/with.json", dir);
	snprintf(without, sizeof without, "%s/without.json", dir);
	snprintf(local, sizeof local, "%s/local.json", dir);
	r = tu_cli(5, "run", cfg, "-o", with);
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	r = tu_cli(7, "run", cfg, "-o", local, "--backend", "local");
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	r = tu_cli(6, "run", cfg, "-o", without, "--no-reference");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	ck_assert_msg(strstr(r.err, "loss ") && !strstr(r.err, "(reference ") &&
			      strstr(r.err, "no reference (--no-reference): "
					    "nothing compared"),
		      "%s", r.err);
	tu_result_free(&r);
	a = tu_read_file(with, &a_len);
	b = tu_read_file(without, &b_len);
	/* Everything before the result is the same bytes. */
	ck_assert_ptr_nonnull(strstr(a, "\"result\":"));
	ck_assert_int_eq(strstr(a, "\"result\":") - a,
			 strstr(b, "\"result\":") - b);
	ck_assert(memcmp(a, b, (size_t)(strstr(a, "\"result\":") - a)) == 0);
	free(b);
	b = tu_read_file(local, &b_len);
	ck_assert(a_len == b_len && memcmp(a, b, a_len) == 0);
	free(a);
	free(b);
	ck_assert_int_eq(
		tps_json_load(without, TPS_JSON_MAX_TRACE_BYTES, &root, NULL),
		TPS_OK);
	result = cJSON_GetObjectItemCaseSensitive(root, "result");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(result, "reference")
				 ->valuestring,
			 "skipped");
	ck_assert_ptr_nonnull(
		cJSON_GetObjectItemCaseSensitive(result, "output"));
	ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(result, "loss"));
	ck_assert_ptr_nonnull(
		cJSON_GetObjectItemCaseSensitive(result, "grads"));
	ck_assert_ptr_nonnull(
		cJSON_GetObjectItemCaseSensitive(result, "params_after"));
	for (const char *const *k =
		     (const char *const[]){"match", "max_abs_diff",
					   "reference_output", "reference_loss",
					   "reference_grads", "comparison",
					   "verdict", NULL};
	     *k; k++) {
		ck_assert_msg(!cJSON_GetObjectItemCaseSensitive(result, *k),
			      "result.%s present without a reference", *k);
	}
	cJSON_Delete(root);
	tu_rmtree(dir);
}
END_TEST

#ifndef TPSIM_HAVE_MPI
/* Built without MPI, --backend mpi is one clear line, exit 2 (with it,
 * tests/mpi/mpi_check.sh runs the backend under mpirun). */
START_TEST(backend_mpi_without_mpi_is_a_clear_error)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	struct tu_result r = tu_cli(5, "run", cfg, "--backend", "mpi");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	ck_assert_msg(strstr(r.err, "tpsim: --backend mpi: this tpsim was "
				    "built without MPI"),
		      "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST
#endif

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
		/* Sizes name the key they grow with: an output over a
		 * tensor's 2^31 elements (a meta tensor's 2^48 is the
		 * config's, test_config). */
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		 "[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		 "\"linear\", \"in_features\": 1, \"out_features\": 4}], "
		 "\"input\": {\"shape\": [1073741824, 1]}}",
		 ": /model/0/out_features: the output of fc, (1073741824, 4), "
		 "has more than 2^31 elements, the most a tensor with values "
		 "may have (its rows come from /input/shape; a symbolic run, "
		 "--symbolic, takes up to 2^48)"},
		/* A SwiGLU whose w1 and w3 the plan splits differently: the
		 * product is refused when it runs, naming both layouts. */
		{"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		 "[\"tp\"]}, \"model\": [{\"name\": \"mlp\", \"type\": "
		 "\"swiglu_mlp\", \"dim\": 4, \"hidden\": 6}], \"plan\": "
		 "{\"mlp.w1\": \"colwise\", \"mlp.w3\": \"rowwise\"}, "
		 "\"input\": {\"shape\": [2, 3, 4]}}",
		 ": /model/0: mlp.swiglu: the element-wise product gate(x) * "
		 "up(x) needs both operands in one layout, got shard(2) "
		 "(gate, mlp.act's output) and replicate (up, mlp.w3's "
		 "output)"},
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

/* The names in dir other than . and .., joined by spaces into buf. */
static const char *dir_listing(const char *dir, char *buf, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t len = 0;
	ck_assert_ptr_nonnull(d);
	buf[0] = '\0';
	while ((e = readdir(d))) {
		int n;
		if (strcmp(e->d_name, ".") == 0 ||
		    strcmp(e->d_name, "..") == 0) {
			continue;
		}
		n = snprintf(buf + len, size - len, "%s%s", len ? " " : "",
			     e->d_name);
		ck_assert(n >= 0 && (size_t)n < size - len);
		len += (size_t)n;
	}
	closedir(d);
	return buf;
}

/* Shapes that the engine would only have met at run time, as asserts or
 * crashes (a residual whose body widens, 4-dim token ids) or as a message
 * without a pointer (dp over a 1-dim input): each is a config error, the
 * same one line from run, run --symbolic and comm, and no file is left. */
START_TEST(shape_rules_are_config_errors_in_every_verb)
{
	static const struct {
		const char *model, *input, *extra, *want;
	} cases[] = {
		{"{\"name\": \"res\", \"type\": \"residual\", \"body\": "
		 "[{\"name\": \"fc\", \"type\": \"linear\", "
		 "\"in_features\": 4, \"out_features\": 8}]}",
		 "{\"shape\": [2, 4]}", "",
		 ": /model/0/body: the body ends with width 8 "
		 "(/model/0/body/0), but x + body(x) needs the input's, 4 (the "
		 "in_features of /model/0/body/0)\n"},
		{"{\"name\": \"emb\", \"type\": \"embedding\", "
		 "\"num_embeddings\": 6, \"embedding_dim\": 4}",
		 "{\"shape\": [1, 1, 2, 3], \"init\": \"tokens\"}", "",
		 ": /input/shape: token ids have at most 3 dims: the embedding "
		 "/model/0 adds one (embedding_dim) and a tensor has at "
		 "most 4, got 4\n"},
		{"{\"name\": \"fc\", \"type\": \"linear\", \"in_features\": 4, "
		 "\"out_features\": 3}",
		 "{\"shape\": [4]}", ", \"dp_dim\": \"dp\"",
		 ": /input/shape: /dp_dim splits the batch, dim 0 of the "
		 "activations, and these have 1 dim (expected at least 2: "
		 "batch, features)\n"},
	};
	const char *dir = tu_tempdir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[1024], trace[512], want[1024], listing[256];
		struct tu_result r[3];
		const char *cfg;
		snprintf(text, sizeof text,
			 "{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2], "
			 "\"dim_names\": [\"dp\", \"tp\"]}, \"model\": [%s], "
			 "\"input\": %s%s}",
			 cases[i].model, cases[i].input, cases[i].extra);
		cfg = write_config(dir, "bad.json", text);
		snprintf(trace, sizeof trace, "%s/t.json", dir);
		snprintf(want, sizeof want, "tpsim: %s%s", cfg, cases[i].want);
		r[0] = tu_cli(5, "run", cfg, "-o", trace);
		r[1] = tu_cli(6, "run", "--symbolic", cfg, "-o", trace);
		r[2] = tu_cli(3, "comm", cfg);
		for (int k = 0; k < 3; k++) {
			ck_assert_msg(r[k].rc == 2, "case %zu, verb %d: rc %d",
				      i, k, r[k].rc);
			ck_assert_str_eq(r[k].err, want);
			ck_assert_uint_eq(r[k].out_len, 0);
			tu_result_free(&r[k]);
		}
		ck_assert_str_eq(dir_listing(dir, listing, sizeof listing),
				 "bad.json");
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
	char want[1024];
	struct tu_result r = tu_cli(5, "run", cfg, "-o", dir);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "is a directory"));
	tu_result_free(&r);
	/* The budget's refusal names the key of its largest part: here
	 * the activations, whose widest is the input's (2, 4): 2 x 4
	 * floats, 32 bytes, x (4 world + 2) = 320 bytes. */
	r = tu_cli(5, "run", cfg, "--max-memory", "100");
	ck_assert_int_eq(r.rc, 2);
	snprintf(want, sizeof want,
		 "tpsim: %s: /input/shape: the run needs about 400 bytes, "
		 "over the memory budget of 100 bytes (--max-memory); the "
		 "largest part, about 320 bytes, is the activations, the "
		 "input's rows (/input/shape) by the widest output; without "
		 "values, tpsim run --symbolic reports what each rank holds "
		 "and tpsim comm what it sends, at any size\n",
		 cfg);
	ck_assert_str_eq(r.err, want);
	ck_assert_uint_eq(r.out_len, 0);
	tu_result_free(&r);
	/* fc2's weight and bias, 4096 x 4097 floats, once globally and
	 * on each of the 2 ranks: 3 x 67125248 bytes. */
	cfg = write_config(
		dir, "wide.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc1\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 4096}, "
		"{\"name\": \"fc2\", \"type\": \"linear\", \"in_features\": "
		"4096, \"out_features\": 4096}], \"input\": {\"shape\": "
		"[2, 4]}}");
	r = tu_cli(5, "run", cfg, "--max-memory", "1M");
	ck_assert_int_eq(r.rc, 2);
	ck_assert_msg(strstr(r.err, "wide.json: /model/1/out_features: the run "
				    "needs about ") &&
			      strstr(r.err, "the largest part, about 192 MiB, "
					    "is fc2's parameters, every rank's "
					    "copy or shard; without values"),
		      "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(5, "run", cfg, "--max-memory", "lots");
	ck_assert_int_eq(r.rc, 2);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(memory_budget_refusal_reads_in_gib_and_names_the_ways_without_values)
{
	/*
	 * One relu on a world of 1 over a (500000000, 1) input: the estimate
	 * (model.h) is 4 bytes x rows x widest x (4 x world + 2) =
	 * 4 x 5e8 x 1 x 6 = 1.2e10 bytes = 11.1758709 GiB. Sizes are given
	 * with as many digits as it takes for them to differ: 11999999999
	 * bytes is 11.1758708945 GiB, so 10 digits: 11.17587089 against
	 * 11.17587090 (its trailing zero dropped).
	 */
	static const struct {
		const char *budget, *need_text, *budget_text;
	} cases[] = {
		{NULL, "11.2 GiB", "8 GiB"},
		{"11G", "11.2 GiB", "11 GiB"},
		{"11999999999", "11.1758709 GiB", "11.17587089 GiB"},
	};
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [1], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"act\", \"type\": "
		"\"relu\"}], \"input\": {\"shape\": [500000000, 1]}}");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char want[1024], trace[512];
		struct tu_result r;
		snprintf(trace, sizeof trace, "%s/t.json", dir);
		snprintf(want, sizeof want,
			 "tpsim: %s: /input/shape: the run needs about %s, over "
			 "the memory budget of %s (--max-memory); the largest "
			 "part, about 11.2 GiB, is the activations, the input's "
			 "rows (/input/shape) by the widest output; without "
			 "values, tpsim run --symbolic reports what each rank "
			 "holds and tpsim comm what it sends, at any size\n",
			 cfg, cases[i].need_text, cases[i].budget_text);
		r = cases[i].budget ? tu_cli(7, "run", cfg, "-o", trace,
					     "--max-memory", cases[i].budget)
				    : tu_cli(5, "run", cfg, "-o", trace);
		ck_assert_int_eq(r.rc, 2);
		ck_assert_str_eq(r.err, want);
		ck_assert_int_ne(access(trace, F_OK), 0);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

/* Entries of a directory, without . and .. */
static int count_entries(const char *path)
{
	DIR *d = opendir(path);
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

/* Issue 15, item 3: `-o` naming the file a verb reads would replace it
 * (`tpsim run x.json -o x.json` replaced the config with the trace, exit
 * 0). Every verb that writes -o refuses it, by the same path, through a
 * symbolic link and through a hard link: exit 2, one line naming both,
 * the input kept byte for byte and nothing else left. */
START_TEST(output_naming_an_input_is_refused_by_every_verb)
{
	const char *dir = tu_tempdir();
	char cfg[512], trace[512], sym_cfg[512], hard_cfg[512], sym_trace[512],
		hard_trace[512];
	snprintf(cfg, sizeof cfg, "%s",
		 write_config(dir, "c.json", small_config));
	run_to_trace(cfg, dir, trace, sizeof trace);
	snprintf(sym_cfg, sizeof sym_cfg, "%s/sym_c.json", dir);
	snprintf(hard_cfg, sizeof hard_cfg, "%s/hard_c.json", dir);
	snprintf(sym_trace, sizeof sym_trace, "%s/sym_t.json", dir);
	snprintf(hard_trace, sizeof hard_trace, "%s/hard_t.json", dir);
	ck_assert_int_eq(symlink(cfg, sym_cfg), 0);
	ck_assert_int_eq(link(cfg, hard_cfg), 0);
	ck_assert_int_eq(symlink(trace, sym_trace), 0);
	ck_assert_int_eq(link(trace, hard_trace), 0);
	const struct {
		int argc;
		const char *argv[7];
		const char *input, *output;
	} rows[] = {
		{4, {"run", cfg, "-o", cfg}, cfg, cfg},
		{4, {"run", cfg, "-o", sym_cfg}, cfg, sym_cfg},
		{4, {"run", cfg, "-o", hard_cfg}, cfg, hard_cfg},
		{4, {"run", sym_cfg, "--output", hard_cfg}, sym_cfg, hard_cfg},
		{6,
		 {"picture", trace, "--tensor", "fc.weight", "-o", trace},
		 trace,
		 trace},
		{6,
		 {"picture", trace, "--tensor", "fc.weight", "-o", sym_trace},
		 trace,
		 sym_trace},
		{6,
		 {"picture", trace, "--tensor", "fc.weight", "-o", hard_trace},
		 trace,
		 hard_trace},
		{4, {"timeline", trace, "-o", trace}, trace, trace},
		{4, {"timeline", trace, "-o", sym_trace}, trace, sym_trace},
		{4, {"timeline", hard_trace, "-o", trace}, hard_trace, trace},
		{4, {"view", trace, "-o", trace}, trace, trace},
		{4, {"view", sym_trace, "-o", trace}, sym_trace, trace},
		{4, {"view", trace, "-o", hard_trace}, trace, hard_trace},
		{5,
		 {"diff", trace, sym_trace, "-o", hard_trace},
		 trace,
		 hard_trace},
		{5,
		 {"diff", sym_trace, trace, "--output", trace},
		 sym_trace,
		 trace},
	};
	size_t cfg_len, trace_len;
	char *cfg_bytes = tu_read_file(cfg, &cfg_len);
	char *trace_bytes = tu_read_file(trace, &trace_len);
	int n = count_entries(dir);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char *argv[10] = {"tpsim"};
		char want[1200];
		struct tu_result r = {0};
		FILE *out, *err;
		size_t len;
		char *kept;
		for (int a = 0; a < rows[i].argc; a++) {
			argv[a + 1] = (char *)rows[i].argv[a];
		}
		out = open_memstream(&r.out, &r.out_len);
		err = open_memstream(&r.err, &r.err_len);
		r.rc = tps_cli_main(rows[i].argc + 1, argv, out, err);
		fclose(out);
		fclose(err);
		snprintf(want, sizeof want,
			 "tpsim: %s: -o names the input %s (the same file): "
			 "writing the ",
			 rows[i].output, rows[i].input);
		ck_assert_msg(r.rc == 2, "row %zu: exit %d", i, r.rc);
		ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0,
			      "row %zu: want \"%s...\", got: %s", i, want,
			      r.err);
		ck_assert_msg(tu_count_lines(r.err) == 1, "row %zu: %s", i,
			      r.err);
		ck_assert_msg(r.out_len == 0, "row %zu: stdout", i);
		tu_result_free(&r);
		kept = tu_read_file(rows[i].input, &len);
		if (strcmp(rows[i].argv[0], "run") == 0) {
			ck_assert_msg(len == cfg_len &&
					      memcmp(kept, cfg_bytes, len) == 0,
				      "row %zu: the config changed", i);
		} else {
			ck_assert_msg(len == trace_len &&
					      memcmp(kept, trace_bytes, len) ==
						      0,
				      "row %zu: the trace changed", i);
		}
		free(kept);
		ck_assert_msg(count_entries(dir) == n, "row %zu: a file was left",
			      i);
	}
	/* Another file is fine, and so is writing over a copy. */
	{
		char copy[600];
		struct tu_result r;
		snprintf(copy, sizeof copy, "%s/copy.json", dir);
		tu_write_file(copy, cfg_bytes, cfg_len);
		r = tu_cli(5, "run", cfg, "-o", copy);
		ck_assert_msg(r.rc == 0, "%s", r.err);
		tu_result_free(&r);
	}
	free(cfg_bytes);
	free(trace_bytes);
	tu_rmtree(dir);
}
END_TEST

/* text with each of the n (from, to) pairs replaced at its first
 * occurrence (each must occur), malloc'd. */
static char *edited(const char *text, const char *const (*edits)[2], int n)
{
	char *cur = strdup(text);
	ck_assert_ptr_nonnull(cur);
	for (int i = 0; i < n; i++) {
		const char *from = edits[i][0], *to = edits[i][1];
		char *at = strstr(cur, from);
		size_t head, fl = strlen(from), tl = strlen(to);
		char *next;
		ck_assert_msg(at != NULL, "edit %d: \"%s\" not in the trace", i,
			      from);
		head = (size_t)(at - cur);
		next = malloc(strlen(cur) - fl + tl + 1);
		ck_assert_ptr_nonnull(next);
		memcpy(next, cur, head);
		memcpy(next + head, to, tl);
		memcpy(next + head + tl, at + fl, strlen(at + fl) + 1);
		free(cur);
		cur = next;
	}
	return cur;
}

/* Event 3's ranks as 100000 entries on the 2-rank mesh. */
static char *hundred_thousand_ranks(void)
{
	static const char one[] =
		"{\"rank\":0,\"shape\":[2,2],\"values\":[[30,70],[70,174]]}";
	size_t n = 100000, len = 0, cap = n * (sizeof one + 8) + 16;
	char *ranks = malloc(cap);
	ck_assert_ptr_nonnull(ranks);
	len += (size_t)snprintf(ranks + len, cap - len, "\"ranks\":[");
	for (size_t i = 0; i < n; i++) {
		len += (size_t)snprintf(ranks + len, cap - len, "%s%s",
					i ? "," : "", one);
	}
	snprintf(ranks + len, cap - len, "]}]");
	return ranks;
}

/*
 * Issue 15, item 15: the trace readers trusted the trace. explain printed
 * events out of order, repeated or negative seqs, values that do not fit
 * their shape, ranks outside the mesh, 100000 ranks on a 2-rank mesh,
 * negative or 5-D global shapes and invalid placements, and a fixture
 * passed as a trace, exit 0. Each malformed trace now gets exit 2 and one
 * line at its JSON Pointer from every verb that reads a trace: explain,
 * picture, timeline, view and check (the trace side).
 */
START_TEST(malformed_traces_are_refused_at_their_pointer_by_every_reader)
{
	const char *dir = tu_tempdir();
	char cfg[512], trace[512], bad[512], empty_fixture[512];
	char *good, *many = hundred_thousand_ranks();
	const char *const event3_ranks =
		"\"ranks\":[{\"rank\":0,\"shape\":[2,2],\"values\":[[30,70],"
		"[70,174]]},{\"rank\":1,\"shape\":[2,2],\"values\":[[30,70],"
		"[70,174]]}]}]";
	const struct {
		const char *edits[2][2];
		int n_edits;
		const char *want; /* after "<file>: " */
	} rows[] = {
		/* Events out of order (0, 2, 1, 3). */
		{{{"{\"seq\":1,", "{\"seq\":9,"},
		  {"{\"seq\":2,", "{\"seq\":1,"}},
		 2,
		 "/events/1/seq: expected 1 (events in order, each seq once), "
		 "got 9"},
		{{{"{\"seq\":2,", "{\"seq\":1,"}},
		 1,
		 "/events/2/seq: expected 2 (events in order, each seq once), "
		 "got 1"},
		{{{"{\"seq\":3,", "{\"seq\":2,"}},
		 1,
		 "/events/3/seq: expected 3 (events in order, each seq once), "
		 "got 2"},
		{{{"{\"seq\":0,", "{\"seq\":-1,"}},
		 1,
		 "/events/0/seq: expected 0 (events in order, each seq once), "
		 "got -1"},
		{{{"{\"seq\":0,", "{\"seq\":\"0\","}},
		 1,
		 "/events/0/seq: expected 0 (events in order, each seq once), "
		 "got \"0\""},
		/* Values that do not fit their shape. */
		{{{"\"values\":[[30,70],[70,174]]}", "\"values\":[[30,70]]}"}},
		 1,
		 "/events/3/ranks/0/values: expected 2 rows (shape (2, 2)), "
		 "got 1"},
		{{{"\"values\":[[30,70],[70,174]]}",
		   "\"values\":[[30],[70]]}"}},
		 1,
		 "/events/3/ranks/0/values/0: expected 2 values (shape (2, "
		 "2)), "
		 "got 1"},
		{{{"\"values\":[[30,70],[70,174]]}",
		   "\"values\":[[\"30\",70],[70,174]]}"}},
		 1,
		 "/events/3/ranks/0/values/0/0: expected a number, got \"30\""},
		{{{"\"values\":[[30,70],[70,174]]}", "\"values\":\"30\"}"}},
		 1,
		 "/events/3/ranks/0/values: expected 2 rows (shape (2, 2)), "
		 "got \"30\""},
		/* The same through a row of numbers only (view counts such
		 * rows, jsonio.h): numbers where rows belong, one out of
		 * range past others, and as the first of its row. */
		{{{"\"values\":[[30,70],[70,174]]}", "\"values\":[30,70]}"}},
		 1,
		 "/events/3/ranks/0/values/0: expected 2 values (shape (2, "
		 "2)), "
		 "got 30"},
		{{{"\"values\":[[30,70],[70,174]]}",
		   "\"values\":[[30,1e999],[70,174]]}"}},
		 1,
		 "/events/3/ranks/0/values/0/1: expected a number, got a "
		 "number "
		 "out of range"},
		{{{"\"values\":[[30,70],[70,174]]}",
		   "\"values\":[[30,70],[-1e999,174]]}"}},
		 1,
		 "/events/3/ranks/0/values/1/0: expected a number, got a "
		 "number "
		 "out of range"},
		{{{"\"shape\":[2,2],\"values\":[[5,17],[17,61]]",
		   "\"shape\":[1,1],\"values\":[[30,1]]"}},
		 1,
		 "/events/2/ranks/0/shape: expected (2, 2), the block of the "
		 "global shape (2, 2) that [partial] gives rank 0, got (1, 1)"},
		{{{"\"inputs\":{\"input\":{\"shape\":[2,4],\"values\":[[1,2,3,"
		   "4],"
		   "[5,6,7,8]]",
		   "\"inputs\":{\"input\":{\"shape\":[2,4],\"values\":[[1,2,3,"
		   "4],"
		   "[5,6,7]]"}},
		 1,
		 "/inputs/input/values/1: expected 4 values (shape (2, 4)), "
		 "got "
		 "3"},
		{{{"\"output\":{\"shape\":[2,2],\"values\":[[30,70],[70,174]]",
		   "\"output\":{\"shape\":[2,2],\"values\":[[30,70],[70,174,1]"
		   "]"}},
		 1,
		 "/result/output/values/1: expected 2 values (shape (2, 2)), "
		 "got 3"},
		/* Ranks outside the mesh, and too many. */
		{{{"{\"rank\":1,\"shape\":[2,2],\"values\":[[30,70]",
		   "{\"rank\":2,\"shape\":[2,2],\"values\":[[30,70]"}},
		 1,
		 "/events/3/ranks/1/rank: expected 1 (every rank of the mesh, "
		 "in rank order), got 2"},
		{{{event3_ranks, NULL}},
		 1,
		 "/events/3/ranks: expected 2 ranks (the mesh's world size), "
		 "got "
		 "100000"},
		{{{"\"groups\":[[0,1]],\"placements\":[\"replicate\"]",
		   "\"groups\":[[0,7]],\"placements\":[\"replicate\"]"}},
		 1,
		 "/events/3/groups/0/1: expected a rank from 0 to 1 in no "
		 "other "
		 "group"},
		/* Global shapes. */
		{{{"\"global_shape\":[2,2],\"bytes_per_rank\"",
		   "\"global_shape\":[-2,2],\"bytes_per_rank\""}},
		 1,
		 "/events/3/global_shape/0: expected a size from 0 to 2^48, "
		 "got "
		 "-2"},
		{{{"\"global_shape\":[2,2],\"bytes_per_rank\"",
		   "\"global_shape\":[2,2,1,1,1],\"bytes_per_rank\""}},
		 1,
		 "/events/3/global_shape: expected 0 to 4 sizes, got 5"},
		/* Placements. */
		{{{"\"placements\":[\"replicate\"],\"global_shape\":[2,2],"
		   "\"bytes",
		   "\"placements\":[\"shard(5)\"],\"global_shape\":[2,2],"
		   "\"bytes"}},
		 1,
		 "/events/3/placements/0: expected replicate, partial or "
		 "shard(d) "
		 "(or shard(d,block=b), shard(d,flat), shard(d,local), "
		 "shard(d,flat,local)) with d a dim of the global shape, got "
		 "\"shard(5)\""},
		{{{"\"placements\":[\"replicate\"],\"global_shape\":[2,2],"
		   "\"bytes",
		   "\"placements\":[\"replicate\",\"replicate\"],"
		   "\"global_shape\":[2,2],\"bytes"}},
		 1,
		 "/events/3/placements: expected one placement per mesh dim "
		 "(1), "
		 "got 2"},
		{{{"\"fc.weight\":{\"shape\":[2,4],\"placements\":[\"shard(1)"
		   "\"]",
		   "\"fc.weight\":{\"shape\":[2,4],\"placements\":["
		   "\"shard\"]"}},
		 1,
		 "/params/fc.weight/placements/0: expected replicate, partial "
		 "or "
		 "shard(d)"},
		/* The other keys of an event. */
		{{{"\"phase\":\"forward\"", "\"phase\":\"sideways\""}},
		 1,
		 "/events/1/phase: expected setup, forward, backward or "
		 "optimizer, got \"sideways\""},
		{{{"\"step\":0,", "\"step\":-3,"}},
		 1,
		 "/events/1/step: expected a step number from 0, got -3"},
		/* An event's dtype (issue 17). */
		{{{"\"tensor\":\"fc.in\",", "\"tensor\":\"fc.in\",\"dtype\":"
					    "\"bf16\","}},
		 1,
		 "/events/1/dtype: expected float32, bfloat16 or float16, got "
		 "\"bf16\""},
		/* A symbolic result's figures (issue 20): whole numbers,
		 * ranks of the mesh, one object per rank in per_rank. */
		{{{"\"result\":{\"output\"",
		   "\"result\":{\"symbolic\":{\"per_rank\":[{}]},"
		   "\"output\""}},
		 1,
		 "/result/symbolic/per_rank: expected an object per rank (2), "
		 "got an array of 1"},
		{{{"\"result\":{\"output\"",
		   "\"result\":{\"symbolic\":{\"per_rank\":[{},7]},"
		   "\"output\""}},
		 1,
		 "/result/symbolic/per_rank/1: expected an object of figures, "
		 "got 7"},
		{{{"\"result\":{\"output\"",
		   "\"result\":{\"symbolic\":{\"per_rank\":[{},"
		   "{\"total_bytes\":-1}]},\"output\""}},
		 1,
		 "/result/symbolic/per_rank/1/total_bytes: expected a whole "
		 "number from 0, got -1"},
		{{{"\"result\":{\"output\"",
		   "\"result\":{\"symbolic\":{\"total_bytes\":{\"bytes\":"
		   "1,\"rank\":2}},\"output\""}},
		 1,
		 "/result/symbolic/total_bytes/rank: expected a rank of the "
		 "mesh, got 2"},
		/* A pipeline's keys (issue 20, docs/pipeline.md). */
		{{{"\"tensor\":\"fc.in\",", "\"tensor\":\"fc.in\",\"stage\":"
					    "-1,"}},
		 1,
		 "/events/1/stage: expected a whole number from 0, got -1"},
		{{{"\"tensor\":\"fc.in\",",
		   "\"tensor\":\"fc.in\",\"microbatch\""
		   ":1.5,"}},
		 1,
		 "/events/1/microbatch: expected a whole number from 0, got "
		 "1.5"},
		{{{"\"tensor\":\"fc.in\",", "\"tensor\":\"fc.in\",\"slot\":"
					    "[3,2],"}},
		 1,
		 "/events/1/slot: expected [start, end], whole numbers with "
		 "start < end, got an array"},
		/* The mesh every rank is checked against. */
		{{{"\"world_size\":2", "\"world_size\":3"}},
		 1,
		 "/mesh/world_size: expected 2, the product of /mesh/shape, "
		 "got "
		 "3"},
		{{{"\"mesh\":{\"shape\":[2],\"dim_names\":[\"tp\"],\"world_"
		   "size\"",
		   "\"mesh\":{\"shape\":[0],\"dim_names\":[\"tp\"],\"world_"
		   "size\""}},
		 1,
		 "/mesh/shape/0: expected a mesh size from 1 to 4096"},
	};
	snprintf(cfg, sizeof cfg, "%s",
		 write_config(dir, "c.json", small_config));
	run_to_trace(cfg, dir, trace, sizeof trace);
	good = tu_read_file(trace, NULL);
	snprintf(bad, sizeof bad, "%s/bad.json", dir);
	snprintf(empty_fixture, sizeof empty_fixture, "%s/empty.json", dir);
	write_text(empty_fixture, "{}");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const char *const verbs[][6] = {
			{"explain", bad},
			{"picture", bad, "--tensor", "fc.out"},
			{"timeline", bad},
			{"view", bad},
			{"check", bad, empty_fixture},
		};
		static const int argcs[] = {2, 4, 2, 2, 3};
		char *text, want[600];
		if (rows[i].edits[0][1]) {
			text = edited(good, rows[i].edits, rows[i].n_edits);
		} else {
			/* The 100000 ranks. */
			const char *const e[1][2] = {{event3_ranks, many}};
			text = edited(good, e, 1);
		}
		write_text(bad, text);
		free(text);
		snprintf(want, sizeof want, "tpsim: %s: %s", bad, rows[i].want);
		for (size_t v = 0; v < sizeof argcs / sizeof argcs[0]; v++) {
			char *argv[8] = {"tpsim"};
			struct tu_result r = {0};
			FILE *out, *err;
			for (int a = 0; a < argcs[v]; a++) {
				argv[a + 1] = (char *)verbs[v][a];
			}
			out = open_memstream(&r.out, &r.out_len);
			err = open_memstream(&r.err, &r.err_len);
			r.rc = tps_cli_main(argcs[v] + 1, argv, out, err);
			fclose(out);
			fclose(err);
			ck_assert_msg(r.rc == 2, "row %zu, %s: exit %d", i,
				      verbs[v][0], r.rc);
			ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0,
				      "row %zu, %s: want \"%s\", got: %s", i,
				      verbs[v][0], want, r.err);
			ck_assert_msg(tu_count_lines(r.err) == 1,
				      "row %zu, %s: %s", i, verbs[v][0], r.err);
			ck_assert_msg(r.out_len == 0, "row %zu, %s: stdout", i,
				      verbs[v][0]);
			tu_result_free(&r);
		}
	}
	/* The trace they were made from passes every reader. */
	{
		struct tu_result r = tu_cli(3, "explain", trace);
		ck_assert_msg(r.rc == 0, "%s", r.err);
		tu_result_free(&r);
		r = tu_cli(4, "check", trace, empty_fixture);
		ck_assert_msg(r.rc == 0, "%s", r.err);
		tu_result_free(&r);
	}
	free(good);
	free(many);
	tu_rmtree(dir);
}
END_TEST

/*
 * Issue 15, item 4: a config passed as a fixture was a mismatch (`tpsim
 * check trace.json config.json`: exit 1 with "/tpsim: missing in trace"
 * lines, which CI reads as a regression), a trace passed to `run` was
 * "/tpsim: missing", and configs and fixtures passed as traces were "not a
 * tpsim trace" or printed as given. Each is now exit 2 and one line saying
 * what the file is and what was expected, for every verb.
 */
START_TEST(a_file_of_the_wrong_kind_says_what_it_is_and_what_was_expected)
{
	const char *dir = tu_tempdir();
	char cfg[512], trace[512], fixture[512];
	snprintf(cfg, sizeof cfg, "%s",
		 write_config(dir, "c.json", small_config));
	run_to_trace(cfg, dir, trace, sizeof trace);
	snprintf(fixture, sizeof fixture, "%s",
		 tu_source_path("fixtures/seed_2x4_rowwise/fixture.json"));
	const struct {
		int argc; /* entries of argv */
		const char *argv[5];
		const char *file, *want; /* "tpsim: <file>: <want>" */
	} rows[] = {
		{3,
		 {"check", trace, cfg},
		 cfg,
		 "/tpsim: expected a fixture (a partial trace), got a tpsim "
		 "config: tpsim check TRACE FIXTURE compares a trace with a "
		 "fixture"},
		{2,
		 {"run", trace},
		 trace,
		 "/format: expected a tpsim config (\"tpsim\": 1), got a tpsim "
		 "trace"},
		{2,
		 {"run", fixture},
		 fixture,
		 "/events/0/match: expected a tpsim config (\"tpsim\": 1), got "
		 "a "
		 "tpsim fixture"},
		{3,
		 {"check", cfg, fixture},
		 cfg,
		 "/tpsim: expected a tpsim trace (\"format\": "
		 "\"tpsim.trace\"), "
		 "got a tpsim config: tpsim run CONFIG -o TRACE makes its "
		 "trace"},
		{3,
		 {"check", fixture, trace},
		 fixture,
		 "/events/0/match: expected a tpsim trace, got a tpsim "
		 "fixture: "
		 "tpsim check TRACE FIXTURE takes the fixture second"},
		{2,
		 {"explain", cfg},
		 cfg,
		 "/tpsim: expected a tpsim trace (\"format\": "
		 "\"tpsim.trace\"), "
		 "got a tpsim config"},
		{2,
		 {"explain", fixture},
		 fixture,
		 "/events/0/match: expected a tpsim trace, got a tpsim "
		 "fixture"},
		{4,
		 {"picture", cfg, "--tensor", "fc.weight"},
		 cfg,
		 "/tpsim: expected a tpsim trace (\"format\": "
		 "\"tpsim.trace\"), "
		 "got a tpsim config"},
		{4,
		 {"picture", fixture, "--tensor", "fc.weight"},
		 fixture,
		 "/events/0/match: expected a tpsim trace, got a tpsim "
		 "fixture"},
		{2,
		 {"timeline", cfg},
		 cfg,
		 "/tpsim: expected a tpsim trace (\"format\": "
		 "\"tpsim.trace\"), "
		 "got a tpsim config"},
		{2,
		 {"timeline", fixture},
		 fixture,
		 "/events/0/match: expected a tpsim trace, got a tpsim "
		 "fixture"},
		{2,
		 {"view", cfg},
		 cfg,
		 "/tpsim: expected a tpsim trace (\"format\": "
		 "\"tpsim.trace\"), "
		 "got a tpsim config"},
		{2,
		 {"view", fixture},
		 fixture,
		 "/events/0/match: expected a tpsim trace, got a tpsim "
		 "fixture"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char *argv[8] = {"tpsim"};
		char want[1200];
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
		snprintf(want, sizeof want, "tpsim: %s: %s", rows[i].file,
			 rows[i].want);
		ck_assert_msg(r.rc == 2, "row %zu: exit %d: %s", i, r.rc,
			      r.err);
		ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0,
			      "row %zu: want \"%s\", got: %s", i, want, r.err);
		ck_assert_msg(tu_count_lines(r.err) == 1, "row %zu: %s", i,
			      r.err);
		ck_assert_msg(r.out_len == 0, "row %zu: stdout: %s", i, r.out);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

/* "...: the trace would take up to N UNIT (": N, and the unit's bytes. */
static double estimate_in_message(const char *err, const char **unit)
{
	const char *p = strstr(err, "the trace would take up to ");
	char *end;
	double v;
	ck_assert_ptr_nonnull(p);
	v = strtod(p + strlen("the trace would take up to "), &end);
	ck_assert(end[0] == ' ');
	*unit = end + 1;
	return v;
}

START_TEST(runs_whose_trace_is_over_the_budget_are_refused_before_they_start)
{
	/*
	 * Issue 15, item 13: 3 modules trained with values none. 1000 steps
	 * (a real run of 18004 events, 18 a step and 4 at setup; about 5 MB)
	 * are refused under --max-trace 1M and run under 6M, the estimate
	 * bounding the real size within 2%. A million steps (about 5 GB: the
	 * real size over 1000 steps, times 1000, and a few digits more per
	 * event) are refused under the default 1 GiB, at once, with the
	 * estimate, the events and what would make the trace smaller.
	 */
	static const char mlp[] =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc1\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 8}, "
		"{\"name\": \"act\", \"type\": \"relu\"}, {\"name\": \"fc2\", "
		"\"type\": \"linear\", \"in_features\": 8, \"out_features\": "
		"4}], \"plan\": {\"fc1\": \"colwise\", \"fc2\": \"rowwise\"}, "
		"\"input\": {\"shape\": [2, 4]}, \"mode\": \"training\", "
		"\"loss\": \"mse\", \"steps\": %d, \"trace\": {\"values\": "
		"\"%s\"}}";
	const char *dir = tu_tempdir();
	char text[1024], cfg[512], trace[512], want[512];
	const char *unit;
	struct tu_result r;
	struct stat st;
	double mib, gib, real;
	int64_t estimate;
	const char *at;

	snprintf(cfg, sizeof cfg, "%s/c.json", dir);
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	snprintf(text, sizeof text, mlp, 1000, "none");
	tu_write_file(cfg, text, strlen(text));
	r = tu_cli(7, "run", cfg, "-o", trace, "--max-trace", "1M");
	printf("%s", r.err);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	ck_assert_uint_eq(r.out_len, 0);
	ck_assert_int_ne(access(trace, F_OK), 0);
	ck_assert_ptr_nonnull(strstr(r.err, "tpsim: "));
	ck_assert_ptr_nonnull(
		strstr(r.err, "(18004 events over 1000 steps), over the trace "
			      "budget of 1 MiB (--max-trace); fewer steps, or "
			      "a larger --max-trace\n"));
	mib = estimate_in_message(r.err, &unit);
	ck_assert(strncmp(unit, "MiB (", 5) == 0);
	tu_result_free(&r);

	r = tu_cli(8, "run", cfg, "-o", trace, "--max-trace", "6M", "--stats");
	printf("%s", r.err);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.err, " 18004 events, "));
	ck_assert_int_eq(stat(trace, &st), 0);
	real = (double)st.st_size;
	at = strstr(r.err, "estimated before the run: trace at most ");
	ck_assert_ptr_nonnull(at);
	estimate = strtoll(at + strlen("estimated before the run: trace at "
				       "most "),
			   NULL, 10);
	ck_assert_int_ge(estimate, st.st_size);
	ck_assert_int_le(estimate, (int64_t)(1.02 * real));
	/* The message gave it in MiB, to 3 digits. */
	ck_assert(fabs(mib - (double)estimate / 1048576.0) <= 0.01);
	tu_result_free(&r);
	ck_assert_int_eq(unlink(trace), 0);

	snprintf(text, sizeof text, mlp, 1000000, "none");
	tu_write_file(cfg, text, strlen(text));
	r = tu_cli(5, "run", cfg, "-o", trace);
	printf("%s", r.err);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	ck_assert_int_ne(access(trace, F_OK), 0);
	gib = estimate_in_message(r.err, &unit);
	ck_assert(strncmp(unit, "GiB (", 5) == 0);
	printf("1000 steps: %.0f bytes; a million: estimate %.3g GiB, "
	       "1000 times the real 1000 steps %.3g GiB\n",
	       real, gib, 1000.0 * real / 1073741824.0);
	ck_assert(gib >= 1000.0 * real / 1073741824.0);
	ck_assert(gib <= 1.05 * 1000.0 * real / 1073741824.0);
	snprintf(want, sizeof want,
		 "(18000004 events over 1000000 steps), over the trace budget "
		 "of 1 GiB (--max-trace); fewer steps, or a larger "
		 "--max-trace\n");
	ck_assert_ptr_nonnull(strstr(r.err, want));
	tu_result_free(&r);

	/* A symbolic run of one step is its own estimate: GPT-3 175B's
	 * trace (6.5 MB) passes a 1 MiB budget part way and is counted to
	 * the end; nothing is left. */
	r = tu_cli(7, "run", tu_source_path("examples/gpt3_175b/config.json"),
		   "-o", trace, "--max-trace", "1M");
	printf("%s", r.err);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	ck_assert_ptr_nonnull(strstr(
		r.err,
		"(9728 events over 1 step), over the trace budget of "
		"1 MiB (--max-trace); a larger --max-trace allows it\n"));
	mib = estimate_in_message(r.err, &unit);
	ck_assert(strncmp(unit, "MiB (", 5) == 0);
	tu_result_free(&r);
	ck_assert_int_eq(count_entries(dir), 1); /* c.json, no temporary */
	r = tu_cli(5, "run", tu_source_path("examples/gpt3_175b/config.json"),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_int_eq(stat(trace, &st), 0);
	ck_assert(fabs(mib - (double)st.st_size / 1048576.0) <= 0.01);
	tu_result_free(&r);
	ck_assert_int_eq(unlink(trace), 0);

	/* With values, the message names the modes that write less. */
	snprintf(text, sizeof text, mlp, 1000000, "full");
	tu_write_file(cfg, text, strlen(text));
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(
		r.err, "(--max-trace); trace values \"summary\" or \"none\", "
		       "fewer steps, or a larger --max-trace\n"));
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
	 * float32 (0.10000001 for 0.1), which a tolerance of zero used to
	 * call a disagreement. It is rounding, within the error bound of
	 * those 6 terms (in_features 3 + 3 bias shares): exit 0. A bias
	 * added on every rank is not: exit 1, tolerance zero or not. */
	const char *dir = tu_tempdir();
	const char *rounding = write_config(
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
	r = tu_cli(5, "run", rounding, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "differs from the reference by "
					    "at most 7.5e-09, within what "
					    "reordering the sums can explain "
					    "(bound "));
	tu_result_free(&r);
	for (int zero = 0; zero < 2; zero++) {
		const char *bug = write_config(
			dir, "bug.json",
			zero ? "{\"tpsim\": 1, \"mesh\": {\"shape\": [3], "
			       "\"dim_names\": [\"tp\"]}, \"model\": "
			       "[{\"name\": \"fc\", \"type\": \"linear\", "
			       "\"in_features\": 3, \"out_features\": 1}], "
			       "\"plan\": {\"fc\": \"rowwise\"}, \"input\": "
			       "{\"shape\": [1, 3]}, \"params\": {\"fc.bias\": "
			       "[0.1]}, \"inject\": [\"bias_every_rank\"], "
			       "\"tolerance\": {\"atol\": 0, \"rtol\": 0}}"
			     : "{\"tpsim\": 1, \"mesh\": {\"shape\": [3], "
			       "\"dim_names\": [\"tp\"]}, \"model\": "
			       "[{\"name\": \"fc\", \"type\": \"linear\", "
			       "\"in_features\": 3, \"out_features\": 1}], "
			       "\"plan\": {\"fc\": \"rowwise\"}, \"input\": "
			       "{\"shape\": [1, 3]}, \"params\": {\"fc.bias\": "
			       "[0.1]}, \"inject\": [\"bias_every_rank\"]}");
		r = tu_cli(5, "run", bug, "-o", trace);
		ck_assert_int_eq(r.rc, 1);
		/* Two bias shares too many: 0.2. */
		ck_assert_msg(strstr(r.err, "differs by 0.2 at fc.out[0][0]; "
					    "reordering can explain at most ") !=
				      NULL,
			      "%s", r.err);
		ck_assert_ptr_nonnull(strstr(r.err, ": not rounding\n"));
		/* The trace is still written: it is the evidence. */
		ck_assert_int_eq(access(trace, F_OK), 0);
		tu_result_free(&r);
	}
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
	/* dropouts inside the TP region and on sequence shards: each rank
	 * draws its masks alone, in any order */
	"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 3], \"dim_names\": "
	"[\"dp\", \"tp\"]}, \"model\": [{\"name\": \"fc1\", \"type\": "
	"\"linear\", \"in_features\": 7, \"out_features\": 13}, "
	"{\"name\": \"d1\", \"type\": \"dropout\"}, {\"name\": \"fc2\", "
	"\"type\": \"linear\", \"in_features\": 13, \"out_features\": 7}, "
	"{\"name\": \"d2\", \"type\": \"dropout\", \"p\": 0.2}], "
	"\"plan\": {\"fc1\": \"colwise\", \"fc2\": {\"style\": "
	"\"rowwise\", \"output\": \"shard(1)\"}}, "
	"\"input\": {\"shape\": [4, 5, 7], \"seed\": 3}, \"mode\": "
	"\"training\", \"steps\": 2, \"optimizer\": {\"type\": "
	"\"sgd\", \"lr\": 0.1}}",
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
	ck_assert_int_ge(compared, 1 + 14 + 3);
	tu_rmtree(dir);
}
END_TEST

/* ---- dtypes (issue 17) ------------------------------------------------- */

/* cfg (a config file) with "dtype": dtype (JSON text) added, written to
 * dir/name; returns its path (a static buffer). */
static const char *with_dtype(const char *cfg, const char *dtype,
			      const char *dir, const char *name)
{
	size_t len;
	char *text = tu_read_file(cfg, &len);
	cJSON *root, *d;
	char *out;
	const char *path;
	ck_assert_ptr_nonnull(text);
	root = cJSON_Parse(text);
	d = cJSON_Parse(dtype);
	ck_assert_ptr_nonnull(root);
	ck_assert_ptr_nonnull(d);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "dtype");
	cJSON_AddItemToObject(root, "dtype", d);
	out = cJSON_PrintUnformatted(root);
	path = write_config(dir, name, out);
	free(out);
	free(text);
	cJSON_Delete(root);
	return path;
}

/* The dtypes of issue 17: every role in bfloat16, in float16, bf16 with
 * float32 master params and a float32 reduction (Megatron's --bf16 with
 * its fp32 main params and grad reduce), and float16 with float32 master
 * params and optimizer state (as PyTorch's AMP keeps them). */
static const char *const dtype_variants[] = {
	"\"bfloat16\"",
	"\"float16\"",
	"{\"default\": \"bfloat16\", \"master_params\": \"float32\", "
	"\"reduce\": \"float32\"}",
	"{\"default\": \"float16\", \"master_params\": \"float32\", "
	"\"optimizer_state\": \"float32\"}",
};

/* Every fixture model, seed 004 and the thread configs above, in each
 * dtype: the same bytes at 1, 2, 3 and 8 threads, and the dtype is in the
 * trace (its config, and its events). */
START_TEST(traces_in_bf16_and_fp16_are_byte_identical_for_every_thread_count)
{
	const char *dir = tu_tempdir();
	DIR *d = opendir(tu_source_path("fixtures"));
	struct dirent *e;
	char cfgs[64][1024];
	int n = 0, compared = 0;
	ck_assert_ptr_nonnull(d);
	snprintf(cfgs[n++], sizeof cfgs[0], "%s",
		 tu_source_path("examples/seed004_ddp_tp/config.json"));
	while ((e = readdir(d)) && n < 60) {
		if (e->d_name[0] != '.') {
			snprintf(cfgs[n++], sizeof cfgs[0], "%s/%s/config.json",
				 tu_source_path("fixtures"), e->d_name);
		}
	}
	closedir(d);
	for (size_t i = 0; i < sizeof thread_configs / sizeof thread_configs[0];
	     i++) {
		char name[32];
		/* Not threads<N>.json: traces_agree_across_threads' traces. */
		snprintf(name, sizeof name, "config%zu.json", i);
		snprintf(cfgs[n++], sizeof cfgs[0], "%s",
			 write_config(dir, name, thread_configs[i]));
	}
	for (int i = 0; i < n; i++) {
		for (size_t v = 0;
		     v < sizeof dtype_variants / sizeof dtype_variants[0];
		     v++) {
			char label[1100], first[1100], *text;
			const char *cfg;
			size_t len;
			/* adamw all in float16: (1 - beta2) g^2 underflows in
			 * exp_avg_sq, the step divides m by eps and the next
			 * forward overflows (exit 2, "Inf in fc2.out"), as
			 * PyTorch's Adam on fp16 state does: the last variant
			 * is how AMP runs it. */
			if (strstr(cfgs[i], "config0.json") && v == 1) {
				continue;
			}
			cfg = with_dtype(cfgs[i], dtype_variants[v], dir,
					 "dtype.json");
			snprintf(label, sizeof label, "%.900s in %.150s",
				 cfgs[i], dtype_variants[v]);
			compared +=
				traces_agree_across_threads(cfg, dir, label);
			/* Its trace at --threads 1. */
			snprintf(first, sizeof first, "%.1000s/threads1.json",
				 dir);
			text = tu_read_file(first, &len);
			ck_assert_ptr_nonnull(text);
			ck_assert_msg(strstr(text, ",\"dtype\":{\"params\":"),
				      "%s: no dtype in its config", cfgs[i]);
			ck_assert_msg(strstr(text, ",\"dtype\":\"bfloat16\"") ||
					      strstr(text, ",\"dtype\":"
							   "\"float16\""),
				      "%s: no event has a dtype", cfgs[i]);
			free(text);
		}
	}
	printf("%d configs in bf16 and fp16 byte-identical at 1, 2, 3 and "
	       "8 threads\n",
	       compared);
	ck_assert_int_ge(compared, 4 * (1 + 19 + 2) - 1);
	tu_rmtree(dir);
}
END_TEST

/* The numbers of nested arrays v, in order, into out[*n..], read in
 * dtype d (tps_dtype_round_double). */
static void flatten_values(const cJSON *v, enum tps_dtype d, float *out,
			   int64_t cap, int64_t *n)
{
	const cJSON *c;
	if (cJSON_IsNumber(v)) {
		ck_assert_int_lt(*n, cap);
		out[(*n)++] = tps_dtype_round_double(v->valuedouble, d);
		return;
	}
	cJSON_ArrayForEach(c, v)
	{
		flatten_values(c, d, out, cap, n);
	}
}

/* The values of a trace event's rank r, flattened, as the trace's
 * numbers read in dtype d. */
static int64_t event_values(const cJSON *ev, int r, enum tps_dtype d,
			    float *out, int64_t cap)
{
	const cJSON *rank =
		cJSON_GetArrayItem(cJSON_GetObjectItem(ev, "ranks"), r);
	int64_t n = 0;
	ck_assert_ptr_nonnull(rank);
	flatten_values(cJSON_GetObjectItem(rank, "values"), d, out, cap, &n);
	return n;
}

/* The first event of trace root with this op and tensor. */
static const cJSON *find_event(const cJSON *root, const char *op,
			       const char *tensor)
{
	const cJSON *ev;
	cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "events"))
	{
		if (strcmp(cJSON_GetObjectItem(ev, "op")->valuestring, op) ==
			    0 &&
		    strcmp(cJSON_GetObjectItem(ev, "tensor")->valuestring,
			   tensor) == 0) {
			return ev;
		}
	}
	ck_abort_msg("no %s event of %s", op, tensor);
	return NULL;
}

/* fixtures/bf16_all_reduce_3_ranks/DERIVATION.md: partial sums (1, 2^-8,
 * 2^-8) and (2^-8, 2^-8, 1), reduced over 3 ranks in rank order. In bf16
 * each addition rounds: 1 + 2^-8 ties to 1, twice, so the first output is
 * 1 where float32's sum is 1 + 2^-7; the second adds the small terms
 * first and gets 1 + 2^-7. Reduced in float32 (or in float16, where
 * 1 + 2^-8 is a value), both are 1 + 2^-7, as the reference. */
START_TEST(bf16_all_reduce_rounds_each_addition_in_rank_order)
{
	static const struct {
		const char *dtype;
		float want[2];
		const char *max_abs_diff;
	} cases[] = {
		{"\"bfloat16\"",
		 {1.0f, 1.0078125f},
		 "\"max_abs_diff\":0.0078125"},
		{"{\"default\": \"bfloat16\", \"reduce\": \"float32\"}",
		 {1.0078125f, 1.0078125f},
		 "\"max_abs_diff\":0,"},
		{"\"float16\"",
		 {1.0078125f, 1.0078125f},
		 "\"max_abs_diff\":0,"},
	};
	const char *dir = tu_tempdir();
	char trace[1024];
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *cfg = with_dtype(
			tu_source_path(
				"fixtures/bf16_all_reduce_3_ranks/config.json"),
			cases[i].dtype, dir, "c.json");
		struct tu_result r = tu_cli(5, "run", cfg, "-o", trace);
		size_t len;
		char *text;
		cJSON *root;
		const cJSON *ev;
		ck_assert_msg(r.rc == 0, "%s: %s", cases[i].dtype, r.err);
		tu_result_free(&r);
		text = tu_read_file(trace, &len);
		root = cJSON_Parse(text);
		ck_assert_ptr_nonnull(root);
		ev = find_event(root, "all_reduce", "fc.out");
		for (int rank = 0; rank < 3; rank++) {
			float v[2];
			ck_assert_int_eq(event_values(ev, rank,
						      i == 2 ? TPS_DTYPE_F16
							     : TPS_DTYPE_BF16,
						      v, 2),
					 2);
			ck_assert_msg(v[0] == cases[i].want[0] &&
					      v[1] == cases[i].want[1],
				      "%s, rank %d: [%.9g, %.9g], expected "
				      "[%.9g, %.9g]",
				      cases[i].dtype, rank, v[0], v[1],
				      cases[i].want[0], cases[i].want[1]);
		}
		ck_assert_msg(strstr(text, cases[i].max_abs_diff), "%s: %s",
			      cases[i].dtype, strstr(text, "\"result\""));
		cJSON_Delete(root);
		free(text);
	}
	tu_rmtree(dir);
}
END_TEST

/* A bf16 linear on one device: x = [1, 2^-8, 2^-8], W = [[1, 1, 1],
 * [1, 1, 0]], b = [0, 2^-8]. The matmul accumulates in float32 and
 * rounds once: 1 + 2^-7 (summed in bf16 it would be 1: each 1 + 2^-8 is
 * a tie to even) and 1 + 2^-8 -> 1 (the tie). The bias is added to the
 * stored matmul and rounded again: 1 + 2^-7 + 0 and 1 + 2^-8 -> 1 (a
 * fused bias would give 1 + 2^-7). The reference rounds alike. */
START_TEST(bf16_matmul_accumulates_in_float32_and_rounds_once)
{
	static const char cfg_text[] =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [1], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 3, \"out_features\": 2}], "
		"\"input\": {\"values\": [[1, 0.00390625, 0.00390625]]}, "
		"\"params\": {\"fc.weight\": [[1, 1, 1], [1, 1, 0]], "
		"\"fc.bias\": [0, 0.00390625]}, \"dtype\": \"bfloat16\", "
		"\"tolerance\": {\"atol\": 0, \"rtol\": 0}}";
	const char *dir = tu_tempdir();
	char trace[1024];
	const char *cfg = write_config(dir, "c.json", cfg_text);
	struct tu_result r;
	size_t len;
	char *text;
	cJSON *root;
	float v[2];
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	text = tu_read_file(trace, &len);
	root = cJSON_Parse(text);
	ck_assert_ptr_nonnull(root);
	event_values(find_event(root, "matmul", "fc.out"), 0, TPS_DTYPE_BF16, v,
		     2);
	ck_assert_msg(v[0] == 1.0078125f && v[1] == 1.0f,
		      "matmul [%.9g, %.9g], expected [1.0078125, 1]", v[0],
		      v[1]);
	event_values(find_event(root, "add_bias", "fc.out"), 0, TPS_DTYPE_BF16,
		     v, 2);
	ck_assert_msg(v[0] == 1.0078125f && v[1] == 1.0f,
		      "add_bias [%.9g, %.9g], expected [1.0078125, 1]", v[0],
		      v[1]);
	/* The reference: the same two roundings, bit for bit. */
	ck_assert_msg(strstr(text, "\"reference_output\":{\"shape\":[1,2],"
				   "\"values\":[[1.01,1]]}"),
		      "%s", strstr(text, "\"result\""));
	ck_assert_ptr_nonnull(strstr(text, "\"max_abs_diff\":0,"));
	cJSON_Delete(root);
	free(text);
	tu_rmtree(dir);
}
END_TEST

/* XXH3-64 of n floats as little-endian float32 bytes (the trace's hash on
 * a little-endian host; the test asserts it is one). */
static uint64_t hash_floats(const float *v, int64_t n)
{
	const uint32_t one = 1;
	unsigned char first;
	memcpy(&first, &one, 1);
	ck_assert_int_eq(first, 1);
	return XXH3_64bits(v, (size_t)n * sizeof *v);
}

/* The shortest decimals a bf16 or fp16 trace writes read back, in its
 * dtype, to the very values the run stored: for every rank of every event,
 * the full trace's values rounded to the event's dtype hash (XXH3 of their
 * float32 bytes) to the summary trace's "hash" of the same event, which
 * hashes the stored floats themselves. */
START_TEST(bf16_and_fp16_trace_values_read_back_to_the_stored_bits)
{
	static const char *const dtypes[] = {"\"bfloat16\"", "\"float16\""};
	const char *dir = tu_tempdir();
	char full[1024], summary[1024];
	int checked = 0;
	snprintf(full, sizeof full, "%s/full.json", dir);
	snprintf(summary, sizeof summary, "%s/summary.json", dir);
	for (size_t i = 0; i < 2; i++) {
		const char *cfg = with_dtype(
			tu_source_path(
				"tests/golden/gelu_dp_tp_sgd.config.json"),
			dtypes[i], dir, "c.json");
		struct tu_result r = tu_cli(5, "run", cfg, "-o", full);
		size_t len;
		char *a, *b;
		cJSON *fa, *fb;
		const cJSON *ea, *eb;
		ck_assert_msg(r.rc == 0 || r.rc == 1, "%s", r.err);
		tu_result_free(&r);
		/* The same run with summaries instead of values. */
		a = tu_read_file(cfg, &len);
		fa = cJSON_Parse(a);
		cJSON_DeleteItemFromObjectCaseSensitive(fa, "trace");
		cJSON_AddItemToObject(fa, "trace",
				      cJSON_Parse("{\"values\": \"summary\"}"));
		free(a);
		a = cJSON_PrintUnformatted(fa);
		cJSON_Delete(fa);
		cfg = write_config(dir, "s.json", a);
		free(a);
		r = tu_cli(5, "run", cfg, "-o", summary);
		ck_assert_msg(r.rc == 0 || r.rc == 1, "%s", r.err);
		tu_result_free(&r);
		a = tu_read_file(full, &len);
		b = tu_read_file(summary, &len);
		fa = cJSON_Parse(a);
		fb = cJSON_Parse(b);
		ck_assert_ptr_nonnull(fa);
		ck_assert_ptr_nonnull(fb);
		eb = cJSON_GetObjectItem(fb, "events")->child;
		cJSON_ArrayForEach(ea, cJSON_GetObjectItem(fa, "events"))
		{
			const cJSON *dt = cJSON_GetObjectItem(ea, "dtype");
			enum tps_dtype d =
				!dt ? TPS_DTYPE_F32
				: strcmp(dt->valuestring, "bfloat16") == 0
					? TPS_DTYPE_BF16
					: TPS_DTYPE_F16;
			int world = cJSON_GetArraySize(
				cJSON_GetObjectItem(ea, "ranks"));
			ck_assert_ptr_nonnull(eb);
			for (int rank = 0; rank < world; rank++) {
				static float v[4096];
				char want[17];
				int64_t n = event_values(ea, rank, d, v, 4096);
				const cJSON *h = cJSON_GetObjectItem(
					cJSON_GetArrayItem(cJSON_GetObjectItem(
								   eb, "ranks"),
							   rank),
					"hash");
				ck_assert_ptr_nonnull(h);
				snprintf(want, sizeof want, "%016llx",
					 (unsigned long long)hash_floats(v, n));
				ck_assert_msg(strcmp(h->valuestring, want) == 0,
					      "%s event %d rank %d: hash %s of "
					      "the values read back, %s stored",
					      dtypes[i],
					      cJSON_GetObjectItem(ea, "seq")
						      ->valueint,
					      rank, want, h->valuestring);
				checked++;
			}
			eb = eb->next;
		}
		cJSON_Delete(fa);
		cJSON_Delete(fb);
		free(a);
		free(b);
	}
	printf("%d event ranks read back to their stored bits\n", checked);
	ck_assert_int_gt(checked, 100);
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

/*
 * Issue 17: every injected mistake of examples/mistakes/ that changes the
 * numbers exits 1 and says "not rounding" by the error bound alone, with
 * tolerance at its default and at zero, with the example's integers (bound
 * 0) and with uniform draws (bounds above 0): never "within what
 * reordering the sums can explain" followed by the injected-mistake rule.
 * world_size_1 is the mistake that a single rank cannot make (it matches);
 * wrong_shard_dim stops at a shape error.
 */
START_TEST(every_injected_mistake_is_caught_by_the_bound_alone)
{
	static const char *const mistakes[] = {
		"bias_every_rank", "skip_all_reduce", "skip_gather",
		"tp_allreduce_weight_grad", "wrong_shard_dim",
		"same_dropout_seed"};
	const char *dir = tu_tempdir();
	char trace[600];
	int runs = 0;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	for (size_t i = 0; i < sizeof mistakes / sizeof mistakes[0]; i++) {
		char path[300];
		char *text;
		snprintf(path, sizeof path, "examples/mistakes/%s.json",
			 mistakes[i]);
		text = tu_read_file(tu_source_path(path), NULL);
		ck_assert_ptr_nonnull(text);
		for (int v = 0; v < 4; v++) {
			cJSON *root = cJSON_Parse(text);
			cJSON *input = cJSON_GetObjectItem(root, "input");
			char *out;
			struct tu_result r;
			bool zero = v & 1, uniform = v & 2;
			ck_assert_ptr_nonnull(root);
			if (zero) {
				cJSON *tol = cJSON_AddObjectToObject(
					root, "tolerance");
				cJSON_AddNumberToObject(tol, "atol", 0);
				cJSON_AddNumberToObject(tol, "rtol", 0);
			}
			if (uniform) {
				/* Draws for the input and every parameter
				 * the example does not give. */
				cJSON_ReplaceItemInObject(
					input, "init",
					cJSON_CreateString("uniform"));
				cJSON_DeleteItemFromObject(root, "init");
				cJSON_AddItemToObject(
					root, "init",
					cJSON_Parse("{\"method\": \"uniform\", "
						    "\"seed\": 7}"));
				cJSON_DeleteItemFromObject(root, "params");
			}
			out = cJSON_PrintUnformatted(root);
			r = tu_cli(5, "run",
				   write_config(dir, "m.json", out), "-o",
				   trace);
			ck_assert_msg(r.rc == 1, "%s (%s%s): exit %d: %s",
				      mistakes[i], zero ? "tolerance 0" : "",
				      uniform ? " uniform" : "", r.rc, r.err);
			ck_assert_msg(strstr(r.err, ": not rounding\n") ||
					      strstr(r.err, "STOPPED"),
				      "%s (%s%s): %s", mistakes[i],
				      zero ? "tolerance 0" : "",
				      uniform ? " uniform" : "", r.err);
			ck_assert_msg(!strstr(r.err, "but the run carried out"),
				      "%s: %s", mistakes[i], r.err);
			tu_result_free(&r);
			free(out);
			cJSON_Delete(root);
			runs++;
		}
		free(text);
	}
	ck_assert_int_eq(runs, 24);
	tu_rmtree(dir);
}
END_TEST

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
	 * (all_gathers and reduce_scatters swapped: 5 and 5), 10
	 * all_reduces of layer-norm weight and bias gradients (5 layer norms:
	 * 2 per block and the final one), and 5 all_gathers of the input
	 * shards that the attentions, the fc1s and the projection keep for
	 * their weight gradients (Megatron's sequence parallel: one per
	 * gather forward). */
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
	ck_assert_int_eq(comm_count(t, "by_op", "all_gather"), 3 * (5 + 5 + 5));
	ck_assert_int_eq(comm_count(t, "by_op", "all_reduce"), 3 * (3 + 10));
	ck_assert_int_eq(comm_count(t, "by_phase", "forward"), 3 * (5 + 5 + 3));
	ck_assert_int_eq(comm_count(t, "by_phase", "backward"),
			 3 * (5 + 5 + 10 + 5));
	cJSON_Delete(t);
	tu_rmtree(dir);
}
END_TEST

START_TEST(recomputed_events_are_marked_and_pass_every_reader)
{
	/* A transformer block with "recompute": "full" at tp 2: its
	 * forward run again in backward is marked "recompute": true, every
	 * such event in phase backward, among them o's and fc2's
	 * all_reduces; the others carry no mark. The trace passes explain,
	 * check and timeline. */
	static const char config[] =
		"{\"tpsim\":1,\"mesh\":{\"shape\":[2],\"dim_names\":"
		"[\"tp\"]},\"model\":[{\"name\":\"b\",\"type\":"
		"\"transformer_block\",\"dim\":8,\"num_heads\":2}],"
		"\"plan\":{\"b.attn.[qkv]\":\"colwise\",\"b.attn.o\":"
		"\"rowwise\",\"b.mlp.fc1\":\"colwise\",\"b.mlp.fc2\":"
		"\"rowwise\"},\"input\":{\"shape\":[2,3,8]},"
		"\"mode\":\"training\",\"recompute\":\"full\"}";
	const char *dir = tu_tempdir();
	char cfg[512], trace[512], fixture[512], timeline[512];
	const cJSON *ev;
	cJSON *t;
	int marked = 0, collectives = 0;
	struct tu_result r;
	snprintf(cfg, sizeof cfg, "%s/c.json", dir);
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	snprintf(fixture, sizeof fixture, "%s/f.json", dir);
	snprintf(timeline, sizeof timeline, "%s/tl.json", dir);
	write_text(cfg, config);
	write_text(fixture, "{}");
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	ck_assert_int_eq(tps_json_load(trace, 1 << 30, &t, NULL), TPS_OK);
	cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(t, "events"))
	{
		const cJSON *rc =
			cJSON_GetObjectItemCaseSensitive(ev, "recompute");
		const char *phase =
			cJSON_GetObjectItemCaseSensitive(ev, "phase")
				->valuestring;
		const char *kind = cJSON_GetObjectItemCaseSensitive(ev, "kind")
					   ->valuestring;
		if (!rc) {
			continue;
		}
		ck_assert(cJSON_IsTrue(rc));
		ck_assert_str_eq(phase, "backward");
		marked++;
		collectives += strcmp(kind, "collective") == 0;
	}
	cJSON_Delete(t);
	/* ln1, q, k, v (matmul and bias each), the heads, o (matmul,
	 * all_reduce, bias), the residual's add: 12; ln2, fc1 (2), gelu,
	 * fc2 (3), the add: 8. */
	ck_assert_int_eq(marked, 20);
	ck_assert_int_eq(collectives, 2);
	r = tu_cli(3, "explain", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(4, "check", trace, fixture);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(5, "timeline", trace, "-o", timeline);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(readme_quick_start_shows_the_real_demo_output)
{
	static const char marker[] =
		"<!-- the demo's explain output, checked by tests/cli/test_cli.c "
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
	/* Integers below 2^24: the bound is 0, and the largest difference,
	 * b[1] = 2, is at [0][1] first. */
	ck_assert_ptr_nonnull(strstr(
		text, "\"match\":false,\"comparison\":{\"output\":\"exact\"},"
		      "\"bounds\":{\"output\":{\"rule\":\"exact\","
		      "\"max_abs_diff\":2,\"max_bound\":0,\"at\":[0,1],"
		      "\"diff_at\":2,\"bound_at\":0,\"outside\":4}},"
		      "\"verdict\":\"differs by 2 at fc.out[0][1], where no sum "
		      "rounds (bound 0): not rounding\",\"diverged_at\":{\"seq\":"
		      "4,\"mistake\":\"bias_every_rank\"},\"diagnosis\":"));
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
	/* The issue's cases. Rowwise 64 -> 2 at tp 2 on arange: x and W are
	 * both [1..64; 65..128], b = [1, 2], so by hand y = x W^T + b is
	 *   y00 = sum_{k=1}^{64} k^2 + 1             = 89440 + 1  = 89441
	 *   y01 = sum_{k=1}^{64} k (64 + k) + 2      = 222560 + 2 = 222562
	 *   y10 = the same sum + 1                                = 222561
	 *   y11 = sum_{k=65}^{128} k^2 + 2 = 707264 - 89440 + 2   = 617826
	 * The bias on both ranks adds 1 x b (max_abs_diff 2), which the
	 * tolerance, 1e-5 + 1e-5 x 617826 = 6.2, would call a match. The
	 * values are integers whose sums stay below 2^24, so their error
	 * bound is 0 and they are compared exactly: the first largest
	 * difference, b[1] = 2, at [0][1]. The same on a (2, 3) dp x tp
	 * mesh with 4 outputs: 2 x b, 2 x b[3] = 8 at [0][3]. */
	static const struct {
		const char *mesh, *dp;
		int out, batch;
		const char *verdict, *diagnosis;
	} cases[] = {
		{"{\"shape\": [2], \"dim_names\": [\"tp\"]}", "", 2, 2,
		 "differs by 2 at fc.out[0][1], where no sum rounds (bound "
		 "0): not rounding\n",
		 "by exactly (tp - 1) x bias = 1 x fc.bias in every row"},
		{"{\"shape\": [2, 3], \"dim_names\": [\"dp\", \"tp\"]}, "
		 "\"dp_dim\": \"dp\"",
		 "", 4, 4,
		 "differs by 8 at fc.out[0][3], where no sum rounds (bound "
		 "0): not rounding\n",
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
			       "\"exact\"},\"bounds\":"));
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
	 * and the numbers differ by rounding only (within their bounds).
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
	ck_assert_msg(strstr(r.err, "within what reordering the sums can "
				    "explain (bound ") != NULL,
		      "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err,
				     "), but the run carried out the injected "
				     "mistake bias_every_rank, so it does not "
				     "match\n"));
	ck_assert_ptr_nonnull(strstr(r.err, "diagnosis: "));
	ck_assert_ptr_null(strstr(r.err, "matches"));
	ck_assert_ptr_nonnull(
		strstr(r.out, "\"match\":false,\"comparison\":{\"output\":"
			      "\"bound\"},\"bounds\":"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(the_trace_says_which_comparison_was_used)
{
	/* Clean runs: arange's integers have error bound 0 and are compared
	 * exactly; uniform values within their bounds; in training, each
	 * compared tensor is named (mse's loss and gradients are fractions:
	 * bounded, not exact). */
	const char *dir = tu_tempdir();
	const char *tp2 = "{\"shape\": [2], \"dim_names\": [\"tp\"]}";
	struct tu_result r = tu_cli(
		3, "run", rowwise_config(dir, tp2, 4, 2, 2, "arange", ""));
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(
		strstr(r.err, "matches the reference bit for bit, as it must: "
			      "no sum rounds (bound 0)\n"));
	ck_assert_ptr_nonnull(strstr(
		r.out, "\"match\":true,\"comparison\":{\"output\":\"exact\"},"
		       "\"bounds\":{\"output\":{\"rule\":\"exact\","
		       "\"max_abs_diff\":0,\"max_bound\":0,\"outside\":0}},"
		       "\"verdict\":\"matches the reference bit for bit, as it "
		       "must: no sum rounds (bound 0)\"}"));
	tu_result_free(&r);
	r = tu_cli(3, "run", rowwise_config(dir, tp2, 4, 2, 2, "uniform", ""));
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "(reordering the sums could "
					    "explain up to "));
	ck_assert_ptr_nonnull(
		strstr(r.out, "\"match\":true,\"comparison\":{\"output\":"
			      "\"bound\"},\"bounds\":{\"output\":{\"rule\":"
			      "\"bound\",\"max_abs_diff\":"));
	tu_result_free(&r);
	r = tu_cli(3, "run",
		   rowwise_config(dir, tp2, 4, 2, 2, "arange",
				  ", \"mode\": \"training\""));
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "(reordering the sums could "
					    "explain up to "));
	ck_assert_ptr_nonnull(strstr(
		r.out,
		"\"comparison\":{\"output\":\"exact\",\"loss\":["
		"\"bound\"],\"grads\":{\"fc.weight\":\"bound\","
		"\"fc.bias\":\"bound\"},\"params_after\":{"
		"\"fc.weight\":\"bound\",\"fc.bias\":\"bound\"}}"));
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
	ck_assert_ptr_nonnull(strstr(r.err, "fc.out has another shape than the "
					    "reference's: not rounding\n"));
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
		      "\"match\":false,\"comparison\":{\"output\":\"exact\"},"
		      "\"bounds\":{\"output\":{\"rule\":\"exact\","
		      "\"shapes_differ\":true}},\"verdict\":\"fc.out has another "
		      "shape than the reference's: not rounding\","
		      "\"diverged_at\":{\"seq\":4,\"mistake\":\"skip_gather\"}"));
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
	/* In a residual's body: the shard (2, 2) cannot be added to the
	 * input (2, 4), a shape error where the sum would be (it aborted on
	 * an assert in tps_tensor_add). */
	r = tu_cli(5, "run",
		   mistake_config(dir, 2,
				  "{\"name\": \"res\", \"type\": \"residual\", "
				  "\"body\": [" FC_4_TO(4) "]}",
				  GATHERED, "skip_gather", ""),
		   "-o", trace);
	ck_assert_int_eq(r.rc, 1);
	ck_assert_msg(strstr(r.err, "STOPPED by a shape error: res: the "
				    "body's output (2, 2) does not fit the "
				    "input (2, 4) it is added to\n") != NULL,
		      "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "(inject skip_gather)\n"));
	tu_result_free(&r);
	text = tu_read_file(trace, NULL);
	ck_assert_ptr_nonnull(strstr(text, "\"result\":{\"stopped\":\"res: "));
	free(text);
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

/* The tpsim binary (TPSIM_EXE, main() included) with TPSIM_GEMM set to
 * gemm (NULL: unset); what it printed on stderr (the caller frees). */
static char *exe_stderr_with_gemm(const char *dir, const char *gemm,
				  const char *const *argv)
{
	char err_path[512];
	int status = 0;
	pid_t pid;
	snprintf(err_path, sizeof err_path, "%s/exe.stderr", dir);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 2) < 0 ||
		    (gemm ? setenv("TPSIM_GEMM", gemm, 1)
			  : unsetenv("TPSIM_GEMM")) != 0) {
			_exit(127);
		}
		execv(getenv("TPSIM_EXE"), (char *const *)argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: status %d", getenv("TPSIM_EXE"), status);
	return tu_read_file(err_path, NULL);
}

START_TEST(run_stats_name_the_gemm_variant_main_took_from_the_environment)
{
	/* main() reads TPSIM_GEMM once and hands it to the library
	 * (docs/performance.md); --stats says which variant ran. */
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	const char *const argv[] = {"tpsim", "run",	  cfg, "--stats",
				    "-o",    "/dev/null", NULL};
	const char *best = tps_matmul_variant_name(
		tps_matmul_variant_pick(NULL, tps_matmul_cpu_features()));
	char want[64], *err;

	err = exe_stderr_with_gemm(dir, "generic", argv);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err, "tpsim: stats: threads ") &&
			      strstr(err, ", GEMM generic\n"),
		      "%s", err);
	free(err);
	snprintf(want, sizeof want, ", GEMM %s\n", best);
	err = exe_stderr_with_gemm(dir, NULL, argv);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err, want), "want \"%s\" in %s", want, err);
	free(err);
	/* A variant the CPU cannot run, or no variant at all: the best. */
	err = exe_stderr_with_gemm(dir, "bogus", argv);
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err, want), "want \"%s\" in %s", want, err);
	free(err);
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
	/* The summary line, then the figures, then the estimate. */
	ck_assert_int_eq(tu_count_lines(r.err), 7);
	ck_assert_ptr_nonnull(
		strstr(r.err, "tpsim: stats: estimated before the run: trace "
			      "at most "));
	ck_assert_ptr_nonnull(strstr(r.err, "tpsim: stats: threads 3, GEMM "));
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
	ck_assert_ptr_nonnull(
		strstr(r.err, "/tpsim: expected a tpsim trace (\"format\": "
			      "\"tpsim.trace\"), got a tpsim config"));
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
	ck_assert_ptr_nonnull(strstr(r.out, "; matches the reference bit for "
					    "bit, as it must: no sum rounds "
					    "(bound 0)\n"));
	tu_result_free(&r);
	/* A config is not a trace: trouble, exit 2. */
	r = tu_cli(3, "explain", cfg);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "got a tpsim config"));
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

/* How many times needle occurs in text. */
static int occurrences(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(text, needle); p;
	     p = strstr(p + 1, needle)) {
		n++;
	}
	return n;
}

START_TEST(explain_elides_long_values_visibly_and_filters_events)
{
	/* x (3, 8) @ W (6, 8)^T colwise over 2: each rank's output is (3, 3),
	 * 9 values; its weight shard (3, 8), 24 values, more than the
	 * default 16. The gathered output (3, 6) has 18. */
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
	/* W = arange (6, 8): rank 1 holds rows 3-5, values 25 .. 48; the
	 * rule is said once for the event, after its ranks. */
	ck_assert_ptr_nonnull(strstr(
		r.out, "        rank 0: (3, 8) [1,2,3,4,5,6,7,8,...,17,18,19,"
		       "20,21,22,23,24]\n"
		       "        rank 1: (3, 8) [25,26,27,28,29,30,31,32,...,"
		       "41,42,43,44,45,46,47,48]\n"
		       "        (elided: the first and last 8 values of each "
		       "rank, in row-major order; --max-values 0 prints "
		       "all)\n"));
	/* Once per block that elides: the global tensors (input 24 values,
	 * W 48), event 0 (W's shards), the output's gather (18 each) and
	 * the result (output and reference). */
	ck_assert_int_eq(occurrences(r.out, "(elided: "), 4);
	ck_assert_int_eq(occurrences(r.out, "values of each tensor"), 2);
	ck_assert_ptr_null(strstr(r.out, "of 24 values"));
	tu_result_free(&r);
	/* --max-values 0: everything; 4: the first and last 2. */
	r = tu_cli(5, "explain", trace, "--max-values", "0");
	ck_assert_ptr_nonnull(strstr(
		r.out,
		"rank 1: (3, 8) [[25,26,27,28,29,30,31,32],"
		"[33,34,35,36,37,38,39,40],[41,42,43,44,45,46,47,48]]\n"));
	ck_assert_ptr_null(strstr(r.out, "..."));
	ck_assert_ptr_null(strstr(r.out, "elided"));
	tu_result_free(&r);
	r = tu_cli(5, "explain", trace, "--max-values", "4");
	ck_assert_ptr_nonnull(strstr(
		r.out, "rank 1: (3, 8) [25,26,...,47,48]\n        (elided: "
		       "the first and last 2 values of each rank"));
	every_rank_line_shows_values(r.out);
	tu_result_free(&r);
	/* Filters: forward only, no setup section, and of the global
	 * tensors only the input, which every step's forward reads. */
	r = tu_cli(5, "explain", trace, "--phase", "forward");
	ck_assert_ptr_null(strstr(r.out, "setup:"));
	ck_assert_ptr_nonnull(strstr(r.out, "forward, step 0:\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "global tensors:\n  input (3, 8)"));
	ck_assert_ptr_null(strstr(r.out, "  fc.weight (6, 8)"));
	tu_result_free(&r);
	/* One module: its events, no global tensor (the output module has
	 * none), and the communication of what is shown. */
	r = tu_cli(7, "explain", trace, "--step", "0", "--module", "output");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_null(strstr(r.out, " fc       "));
	ck_assert_ptr_nonnull(strstr(r.out, "all_gather"));
	ck_assert_ptr_null(strstr(r.out, "global tensors:"));
	ck_assert_ptr_nonnull(
		strstr(r.out, "comm of the events shown: 1 collective, 36 "
			      "bytes per rank; all_gather x1\n  by module:\n"
			      "    output  x1  36 bytes/rank\n"));
	tu_result_free(&r);
	/* fc: its parameters' initial values (its setup), no input; it
	 * makes no collective. */
	r = tu_cli(5, "explain", trace, "--module", "fc");
	ck_assert_ptr_nonnull(strstr(r.out, "global tensors:\n  fc.weight "
					    "(6, 8) [shard(0)] [1,2,3,4,"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n  fc.bias (6) [shard(0)] "
					    "[1,2,3,4,5,6]\n"));
	ck_assert_ptr_null(strstr(r.out, "  input (3, 8)"));
	ck_assert_ptr_nonnull(strstr(
		r.out, "comm of the events shown: 0 collectives, 0 bytes per "
		       "rank\n"));
	ck_assert_ptr_null(strstr(r.out, "by module"));
	tu_result_free(&r);
	/* A step: the input, not the parameters' setup values. */
	r = tu_cli(5, "explain", trace, "--step", "0");
	ck_assert_ptr_nonnull(strstr(r.out, "global tensors:\n  input (3, 8)"));
	ck_assert_ptr_null(strstr(r.out, "fc.weight (6, 8)"));
	ck_assert_ptr_null(strstr(r.out, "setup:"));
	tu_result_free(&r);
	r = tu_cli(5, "explain", trace, "--step", "3");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(
		r.out, "(no event matches --step, --module and --phase)\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "result: output (3, 6)"));
	ck_assert_ptr_nonnull(strstr(r.out, "comm of the events shown: 0 "));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* The communication footer: one line per module, names aligned (the
 * trace's comm.by_module of train_dp2_tp2_mse: fc2 3 collectives, 32
 * bytes; fc1 2, 40). */
START_TEST(explain_lists_the_communication_one_module_a_line)
{
	const char *dir = tu_tempdir();
	char trace[512];
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run",
		   tu_source_path("fixtures/train_dp2_tp2_mse/config.json"),
		   "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(3, "explain", trace);
	ck_assert_msg(strstr(r.out, "comm: 5 collectives, 72 bytes per rank; "
				    "all_reduce x5\n  by module:\n"
				    "    fc2  x3  32 bytes/rank\n"
				    "    fc1  x2  40 bytes/rank\n") != NULL,
		      "%s", r.out);
	tu_result_free(&r);
	r = tu_cli(5, "explain", trace, "--format", "md");
	ck_assert_msg(strstr(r.out, "| module | collectives | bytes per rank "
				    "|\n|---|---:|---:|\n| fc2 | 3 | 32 bytes "
				    "|\n| fc1 | 2 | 40 bytes |\n") != NULL,
		      "%s", r.out);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* --heading-level N: the title at level N, sections at N + 1, events at
 * N + 2, so the output pastes under any heading. */
/* A step splits the batch anew from the global input: its split is no
 * redistribution of the last step's shards, so explain shows no
 * "before -> after" there (it showed "[shard(0), replicate] -> [shard(0),
 * replicate]" at every step but the first). Within a step, a collective
 * still shows both. */
START_TEST(explain_shows_placements_before_within_a_step)
{
	const char *dir = tu_tempdir();
	char trace[512];
	struct tu_result r;
	run_to_trace(tu_source_path("examples/seed004_ddp_tp/config.json"), dir,
		     trace, sizeof trace);
	r = tu_cli(5, "explain", trace, "--module", "input");
	ck_assert_int_eq(r.rc, 0);
	for (const char *line = strstr(r.out, " split "); line;
	     line = strstr(line + 1, " split ")) {
		const char *end = strchr(line, '\n');
		const char *arrow = strstr(line, " -> ");
		ck_assert_msg(!arrow || (end && arrow > end), "%.120s", line);
	}
	tu_result_free(&r);
	r = tu_cli(5, "explain", trace, "--step", "1");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(
		r.out, "linear2.out: [shard(0), partial] -> [shard(0), "
		       "replicate]"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(explain_md_headings_start_at_the_heading_level)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", small_config);
	char trace[512];
	struct tu_result r;
	run_to_trace(cfg, dir, trace, sizeof trace);
	r = tu_cli(7, "explain", trace, "--format", "md", "--heading-level",
		   "3");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_msg(strncmp(r.out, "### A tpsim ", 12) == 0, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "\n#### Global tensors\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n#### setup\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n##### [0] fc: distribute"));
	ck_assert_ptr_nonnull(strstr(r.out, "\n#### Result\n"));
	/* Nothing above level 3. */
	ck_assert_ptr_null(strstr(r.out, "\n# "));
	ck_assert_ptr_null(strstr(r.out, "\n## "));
	ck_assert_ptr_null(strstr(r.out, "\n### "));
	tu_result_free(&r);
	/* The default is 1, as before. */
	r = tu_cli(5, "explain", trace, "--format", "md");
	ck_assert_msg(strncmp(r.out, "# A tpsim ", 10) == 0, "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "\n### [0] fc: distribute"));
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
	ck_assert_ptr_nonnull(strstr(text, "\033[32mmatches the reference bit "
					   "for bit, as it must: no sum rounds "
					   "(bound 0)\033[0m"));
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

START_TEST(explain_prints_byte_counts_for_people)
{
	/* A (512, 512) all_reduce over 2 ranks: c = 131072 floats, 2 (n-1) c
	 * = 1048576 bytes = 1 MiB (numfmt.h), which %g would print as
	 * 1.04858e+06. */
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
	ck_assert_msg(strstr(r.out, ", 1 MiB/rank\n") != NULL, "%s", r.out);
	ck_assert_msg(strstr(r.out, "1 collective, 1 MiB per rank") != NULL,
		      "%s", r.out);
	ck_assert_msg(strstr(r.out, "    fc  x1  1 MiB/rank\n") != NULL, "%s",
		      r.out);
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

/* People read sizes in binary units; --json keeps exact integers. A
 * rowwise fc with a (512, 512) output over tp 2: the all_reduce sends
 * 2 (n-1) c = 2 * 131072 floats * 4 = 1048576 bytes = 1 MiB per rank,
 * in inference and in training alike (no input gradient). */
START_TEST(comm_prints_sizes_in_binary_units_and_exact_json)
{
	const char *dir = tu_tempdir();
	const char *cfg = write_config(
		dir, "c.json",
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 512}], "
		"\"plan\": {\"fc\": \"rowwise\"}, \"input\": {\"shape\": "
		"[512, 4]}}");
	struct tu_result r = tu_cli(4, "comm", cfg, "--summary");
	const char *row;
	ck_assert_msg(r.rc == 0, "%s", r.err);
	row = strstr(r.out, "c.json ");
	ck_assert_msg(row != NULL, "%s", r.out);
	ck_assert_msg(strstr(row, "  1 MiB  ") != NULL &&
			      strstr(strstr(row, "  1 MiB  ") + 1,
				     "  1 MiB  ") != NULL,
		      "%s", r.out);
	ck_assert_msg(strstr(r.out, "1048576") == NULL, "%s", r.out);
	tu_result_free(&r);
	/* The table of one point: the all_reduce's row and the total. */
	r = tu_cli(3, "comm", cfg);
	ck_assert_msg(strstr(r.out,
			     "all_reduce  fc      tp                1  "
			     "     1 MiB         1       1 MiB\n") != NULL,
		      "%s", r.out);
	ck_assert_msg(strstr(r.out, "1048576") == NULL, "%s", r.out);
	tu_result_free(&r);
	r = tu_cli(4, "comm", cfg, "--json");
	ck_assert_ptr_nonnull(strstr(r.out, "\"bytes_per_rank\":1048576,"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* A standalone sequence-parallel block on a replicated input (a small
 * examples/sp_block/sp.json): each residual gathers back what the
 * reduce_scatter before it split. */
static const char sp_block_config[] =
	"{\"tpsim\": 1, \"vars\": {\"tp\": 2}, \"mesh\": {\"shape\": "
	"[\"$tp\"], \"dim_names\": [\"tp\"]}, \"model\": [{\"name\": "
	"\"block\", \"type\": \"transformer_block\", \"dim\": 8, "
	"\"num_heads\": 2, \"hidden\": 16}], \"plan\": {%s\"block.ln[12]\": "
	"\"sequence\", \"block.attn.[qkv]\": \"colwise\", \"block.attn.o\": "
	"{\"style\": \"rowwise\", \"output\": \"shard(1)\"}, "
	"\"block.mlp.fc1\": {\"style\": \"colwise\", \"input\": "
	"\"shard(1)\"}, \"block.mlp.fc2\": {\"style\": \"rowwise\", "
	"\"output\": \"shard(1)\"}}, \"input\": {\"shape\": [1, 4, 8]}}";

START_TEST(run_and_comm_warn_of_a_redistribution_the_next_one_undoes)
{
	const char *dir = tu_tempdir();
	char text[2048], trace[512];
	const char *cfg;
	cJSON *t = NULL;
	const cJSON *w;
	struct tu_result r;
	snprintf(text, sizeof text, sp_block_config, "");
	cfg = write_config(dir, "sp.json", text);
	snprintf(trace, sizeof trace, "%s/t.json", dir);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_msg(strstr(r.err,
			     "sp.json: 2 redistributions in a forward "
			     "step undo the one before them; the "
			     "first: block.attn.o's reduce_scatter") != NULL,
		      "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.err, "tpsim: warning: "));
	/* 2 all_gathers (attn, fc1), 2 reduce_scatters, 2 gathered back. */
	ck_assert_ptr_nonnull(strstr(r.err, " 6 collectives ("));
	tu_result_free(&r);
	ck_assert_int_eq(tps_json_load(trace, 1 << 24, &t, NULL), TPS_OK);
	w = cJSON_GetObjectItem(t, "warnings");
	ck_assert_int_eq(cJSON_GetArraySize(w), 1);
	ck_assert_ptr_nonnull(strstr(cJSON_GetArrayItem(w, 0)->valuestring,
				     "block.attn_residual's all_gather"));
	cJSON_Delete(t);
	/* tpsim comm says it too, once for a sweep of two points. */
	r = tu_cli(5, "comm", cfg, "--set", "tp=2,4");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	ck_assert_ptr_nonnull(strstr(r.err, "tpsim: warning: "));
	ck_assert_ptr_nonnull(strstr(r.err, "block.attn_residual's"));
	tu_result_free(&r);
	/* The input split into sequence shards once: no warning, and the
	 * output's one gather in place of the two gathered back. */
	snprintf(
		text, sizeof text, sp_block_config,
		"\"block.attn_residual\": {\"style\": \"prepare_input\", "
		"\"input\": \"replicate\", \"desired_input\": \"shard(1)\"}, ");
	cfg = write_config(dir, "prepared.json", text);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	ck_assert_ptr_null(strstr(r.err, "warning"));
	ck_assert_ptr_nonnull(strstr(r.err, " 5 collectives ("));
	ck_assert_msg(agrees(r.err), "%s", r.err);
	tu_result_free(&r);
	r = tu_cli(3, "comm", cfg);
	ck_assert_uint_eq(r.err_len, 0);
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
	/* A step's flops past 2^63: an error at the key of the module that
	 * passes it, not a saturated 9223372036854775807 in --json. Linears
	 * 128 -> 2^24 and back on (2^24, 128) rows each take 2 x 2^24 x
	 * 2^24 x 128 = 2^56 flops (every size within its limit): the 128th
	 * matmul of the inference step, down127 (/model/127), reaches 2^63. */
	{
		size_t cap = 200 * 130 + 256, len = 0;
		char *text = malloc(cap);
		ck_assert_ptr_nonnull(text);
		len += (size_t)snprintf(text + len, cap - len,
					"{\"tpsim\": 1, \"mesh\": {\"shape\": "
					"[2], \"dim_names\": [\"tp\"]}, "
					"\"model\": [");
		for (int i = 0; i < 130; i++) {
			len += (size_t)snprintf(
				text + len, cap - len,
				"%s{\"name\": \"%s%d\", \"type\": "
				"\"linear\", \"in_features\": %d, "
				"\"out_features\": %d, \"bias\": false}",
				i ? ", " : "", i % 2 ? "down" : "up", i,
				i % 2 ? 16777216 : 128, i % 2 ? 128 : 16777216);
		}
		snprintf(text + len, cap - len,
			 "], \"input\": {\"shape\": [16777216, 128]}}");
		cfg = write_config(dir, "flops.json", text);
		free(text);
		r = tu_cli(4, "comm", cfg, "--json");
		ck_assert_int_eq(r.rc, 2);
		ck_assert_msg(strstr(r.err,
				     "flops.json: /model/127/out_features: "
				     "the inference step's flops pass "
				     "2^63 at down127's matmul\n") != NULL,
			      "%s", r.err);
		ck_assert_uint_eq(r.out_len, 0);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

/*
 * --zero asks of each config what its own "zero" key would: a dp dim to
 * shard over, no tied weight under stage 3. Each row: a config, the
 * --zero list, and the one line of the error (exit 2, no output), or NULL
 * for a config that it counts.
 */
START_TEST(comm_zero_refuses_what_the_zero_key_refuses)
{
	static const char tp_only[] =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 4}], "
		"\"plan\": {\"fc\": \"colwise\"}, \"input\": {\"shape\": "
		"[2, 4]}}";
	static const char tied[] =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2], \"dim_names\": "
		"[\"dp\", \"tp\"]}, \"dp_dim\": \"dp\", \"model\": [{\"name\": "
		"\"tok\", \"type\": \"embedding\", \"num_embeddings\": 6, "
		"\"embedding_dim\": 4}, {\"name\": \"head\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 6, "
		"\"bias\": false, \"tie\": \"tok\"}], \"input\": {\"shape\": "
		"[2, 3], \"init\": \"tokens\"}, \"mode\": \"training\", "
		"\"loss\": \"cross_entropy\"}";
	static const struct {
		const char *config, *zero, *message;
	} cases[] = {
		{tp_only, "1",
		 "c.json: /dp_dim: missing: --zero 1 shards over the dp dims: "
		 "expected a dp_dim to shard over\n"},
		{tp_only, "ddp,distributed_optimizer",
		 "c.json: /dp_dim: missing: --zero distributed_optimizer "
		 "shards over the dp dims: expected a dp_dim to shard over\n"},
		{tp_only, "3",
		 "c.json: /dp_dim: missing: --zero 3 shards over the dp dims"},
		{tp_only, "ddp", NULL}, /* DDP needs no dp dim: DP over 1 */
		{tied, "3",
		 "c.json: /model/1/tie: --zero 3: stage 3 shards each module's "
		 "own parameters, but head ties its weight to tok's: expected "
		 "no tie, or stage 1 or 2\n"},
		{tied, "ddp,1,distributed_optimizer,2", NULL},
	};
	const char *dir = tu_tempdir();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *cfg = write_config(dir, "c.json", cases[i].config);
		struct tu_result r =
			tu_cli(5, "comm", cfg, "--zero", cases[i].zero);
		if (!cases[i].message) {
			ck_assert_msg(r.rc == 0, "%s: %s", cases[i].zero,
				      r.err);
		} else {
			ck_assert_int_eq(r.rc, 2);
			ck_assert_msg(strstr(r.err, cases[i].message) != NULL,
				      "%s", r.err);
			ck_assert_int_eq(tu_count_lines(r.err), 1);
			ck_assert_uint_eq(r.out_len, 0);
		}
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

/* The training figures of `tpsim comm --json` for one point: its
 * "by_phase"."training" and its "memory". */
static cJSON *comm_point_json(const char *config, const char *zero, int index)
{
	struct tu_result r =
		zero ? tu_cli(6, "comm", config, "--zero", zero, "--json")
		     : tu_cli(4, "comm", config, "--json");
	cJSON *root = NULL, *point;
	struct tps_error e = {0};
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_msg(tps_json_parse_strict("out", r.out, r.out_len, &root,
					    &e) == TPS_OK,
		      "%s", e.message);
	tu_result_free(&r);
	point = cJSON_DetachItemFromArray(cJSON_GetObjectItem(root, "points"),
					  index);
	cJSON_Delete(root);
	ck_assert_ptr_nonnull(point);
	return point;
}

/*
 * examples/zero_tp/README.md derives by hand what each rank of its MLP
 * sends and holds under DDP, stage 1, the distributed optimizer, stage 2
 * and FSDP; `tpsim comm --zero all` counts its ddp.json at each, and the
 * figures are the README's: per step, over dp, an all_reduce of each
 * gradient 2 x 2 x (6 + 2 + 4 + 1) floats = 208 bytes, a reduce_scatter
 * or an all_gather of each 2 x (8 + 2 + 4 + 1) floats = 120 bytes, fc2's
 * forward all_reduce over tp 2 x 1 x 3 floats = 24 bytes; rank 0 holds
 * 35 floats of parameters (140 bytes), 15 in its dp chunks (60 bytes),
 * and AdamW's two states of what it updates.
 */
START_TEST(comm_zero_figures_are_the_zero_tp_readmes)
{
	static const struct {
		const char *zero, *label;
		struct {
			const char *phase, *op;
			int count, bytes;
		} ops[4];
		int params, grads, state;
		/* FSDP's parameters gathered at once besides the shards
		 * (fc1's 20 tp-local floats on rank 0); 0: no figure. */
		int gathered;
	} want[] = {
		{"ddp",
		 "DDP",
		 {{"forward", "all_reduce", 1, 24},
		  {"optimizer", "all_reduce", 4, 208}},
		 140,
		 140,
		 280,
		 0},
		{"1",
		 "stage 1",
		 {{"forward", "all_reduce", 1, 24},
		  {"optimizer", "all_reduce", 4, 208},
		  {"optimizer", "all_gather", 4, 120}},
		 140,
		 140,
		 120,
		 0},
		{"distributed_optimizer",
		 "distributed optimizer",
		 {{"forward", "all_reduce", 1, 24},
		  {"optimizer", "reduce_scatter", 4, 120},
		  {"optimizer", "all_gather", 4, 120}},
		 140,
		 140,
		 120,
		 0},
		{"2",
		 "stage 2",
		 {{"forward", "all_reduce", 1, 24},
		  {"optimizer", "reduce_scatter", 4, 120},
		  {"optimizer", "all_gather", 4, 120}},
		 140,
		 60,
		 120,
		 0},
		{"3",
		 "stage 3 (FSDP)",
		 {{"forward", "all_reduce", 1, 24},
		  {"forward", "all_gather", 4, 120},
		  {"backward", "all_gather", 4, 120},
		  {"backward", "reduce_scatter", 4, 120}},
		 60,
		 60,
		 120,
		 80},
	};
	/* Each example's own config counts as its --zero setting does. */
	static const char *const own[] = {
		"ddp", "stage1", "distributed_optimizer", "stage2", "fsdp"};
	static const char *const phases[] = {"forward", "backward",
					     "optimizer"};
	char ddp[4096];
	struct tu_result r;
	long v[8];
	snprintf(ddp, sizeof ddp, "%s/examples/zero_tp/ddp.json",
		 tu_source_root());
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		cJSON *point = comm_point_json(ddp, "all", (int)i);
		cJSON *training = cJSON_GetObjectItem(
			cJSON_GetObjectItem(point, "by_phase"), "training");
		cJSON *memory = cJSON_GetObjectItem(point, "memory");
		char path[4096];
		cJSON *mine;
		ck_assert_str_eq(
			cJSON_GetObjectItem(point, "zero")->valuestring,
			want[i].zero);
		for (size_t p = 0; p < 3; p++) {
			cJSON *phase = cJSON_GetObjectItem(training, phases[p]);
			cJSON *by_op = cJSON_GetObjectItem(phase, "by_op");
			int bytes = 0, ops = 0;
			for (size_t k = 0; k < 4 && want[i].ops[k].op; k++) {
				cJSON *op;
				if (strcmp(want[i].ops[k].phase, phases[p])) {
					continue;
				}
				op = cJSON_GetObjectItem(by_op,
							 want[i].ops[k].op);
				ck_assert_msg(op != NULL, "%s: %s %s",
					      want[i].zero, phases[p],
					      want[i].ops[k].op);
				ck_assert_int_eq(
					cJSON_GetObjectItem(op, "count")
						->valueint,
					want[i].ops[k].count);
				ck_assert_int_eq(cJSON_GetObjectItem(
							 op, "bytes_per_rank")
							 ->valueint,
						 want[i].ops[k].bytes);
				bytes += want[i].ops[k].bytes;
				ops++;
			}
			/* No other op, and the phase's sum. */
			ck_assert_int_eq(cJSON_GetArraySize(by_op), ops);
			ck_assert_int_eq(
				cJSON_GetObjectItem(phase, "bytes_per_rank")
					->valueint,
				bytes);
		}
		ck_assert_int_eq(
			cJSON_GetObjectItem(
				cJSON_GetObjectItem(memory, "param_bytes"),
				"bytes")
				->valueint,
			want[i].params);
		ck_assert_int_eq(
			cJSON_GetObjectItem(
				cJSON_GetObjectItem(memory, "grad_bytes"),
				"bytes")
				->valueint,
			want[i].grads);
		ck_assert_int_eq(
			cJSON_GetObjectItem(
				cJSON_GetObjectItem(memory,
						    "optimizer_state_bytes"),
				"bytes")
				->valueint,
			want[i].state);
		if (want[i].gathered) {
			cJSON *g = cJSON_GetObjectItem(memory,
						       "gathered_param_bytes");
			ck_assert_int_eq(
				cJSON_GetObjectItem(g, "bytes")->valueint,
				want[i].gathered);
			ck_assert_int_eq(
				cJSON_GetObjectItem(g, "rank")->valueint, 0);
		} else {
			ck_assert_ptr_null(cJSON_GetObjectItem(
				memory, "gathered_param_bytes"));
		}
		snprintf(path, sizeof path, "%s/examples/zero_tp/%s.json",
			 tu_source_root(), own[i]);
		mine = comm_point_json(path, NULL, 0);
		ck_assert_msg(
			cJSON_Compare(cJSON_GetObjectItem(mine, "by_phase"),
				      cJSON_GetObjectItem(point, "by_phase"),
				      true) &&
				cJSON_Compare(
					cJSON_GetObjectItem(mine, "memory"),
					memory, true),
			"%s.json counts otherwise than --zero %s", own[i],
			want[i].zero);
		cJSON_Delete(mine);
		/* --zero replaces the config's own: fsdp.json at ddp is
		 * ddp.json. */
		snprintf(path, sizeof path, "%s/examples/zero_tp/fsdp.json",
			 tu_source_root());
		mine = comm_point_json(path, want[i].zero, 0);
		ck_assert(cJSON_Compare(cJSON_GetObjectItem(mine, "by_phase"),
					cJSON_GetObjectItem(point, "by_phase"),
					true));
		cJSON_Delete(mine);
		cJSON_Delete(point);
	}
	/* The table: a column per setting, the README's sums per step. */
	r = tu_cli(5, "comm", ddp, "--zero", "all");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		ck_assert_ptr_nonnull(strstr(r.out, want[i].label));
	}
	ck_assert_int_eq(numbers_of_line(r.out, "total", v, 8), 5);
	ck_assert_int_eq(v[0], 24 + 208);
	ck_assert_int_eq(v[1], 24 + 208 + 120);
	ck_assert_int_eq(v[2], 24 + 120 + 120);
	ck_assert_int_eq(v[3], 24 + 120 + 120);
	ck_assert_int_eq(v[4], 24 + 120 + 120 + 120);
	ck_assert_int_eq(numbers_of_line(r.out, "held", v, 8), 5);
	ck_assert_int_eq(v[0], 140);
	ck_assert_int_eq(v[4], 60);
	ck_assert_msg(strstr(r.out, "held       + gathered at once") != NULL,
		      "%s", r.out);
	ck_assert_int_eq(numbers_of_line(strstr(r.out, "held       + gathered"),
					 "held", v, 8),
			 1);
	ck_assert_int_eq(v[0], 80);
	tu_result_free(&r);
}
END_TEST

/* --set values follow the JSON number grammar, as the config's own
 * numbers do: strtod took every one of these. Each is a usage error,
 * from run (one value) and from comm (a list, the bad value anywhere). */
START_TEST(set_values_are_json_numbers)
{
	static const char *const bad[] = {"0x10", " 8", "08",	 "8.", "+8",
					  ".5",	  "1e", "1e+",	 "-",  "inf",
					  "nan",  "8 ", "1_000", ""};
	static const char *const good[] = {"8", "-0.5", "1e3", "2E-1", "0"};
	const char *dir = tu_tempdir();
	const char *cfg = write_config(dir, "c.json", comm_config);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char arg[64], want[256];
		struct tu_result r;
		snprintf(arg, sizeof arg, "dp=%s", bad[i]);
		r = tu_cli(5, "run", cfg, "--set", arg);
		snprintf(want, sizeof want,
			 "tpsim: run: --set expects NAME=VALUE, got '%s'\n"
			 "Try 'tpsim --help'.\n",
			 arg);
		ck_assert_msg(r.rc == 2, "%s: rc %d", arg, r.rc);
		ck_assert_str_eq(r.err, want);
		ck_assert_uint_eq(r.out_len, 0);
		tu_result_free(&r);
		snprintf(arg, sizeof arg, "dp=1,%s,2", bad[i]);
		r = tu_cli(5, "comm", cfg, "--set", arg);
		snprintf(want, sizeof want,
			 "tpsim: comm: --set expects NAME=V[,V...] with "
			 "numbers V, got '%s'\nTry 'tpsim --help'.\n",
			 arg);
		ck_assert_msg(r.rc == 2, "%s: rc %d", arg, r.rc);
		ck_assert_str_eq(r.err, want);
		tu_result_free(&r);
	}
	/* Numbers JSON writes are taken; 2E-1 of a mesh size is refused by
	 * the config, at its pointer, not as a usage error. */
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char arg[64];
		struct tu_result r;
		snprintf(arg, sizeof arg, "dp=%s", good[i]);
		r = tu_cli(5, "comm", cfg, "--set", arg);
		ck_assert_msg(r.rc == 0 ||
				      strstr(r.err, "c.json: /mesh/shape/0"),
			      "%s: %s", arg, r.err);
		ck_assert_ptr_null(strstr(r.err, "--set expects"));
		tu_result_free(&r);
	}
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
	/* docs/design.md's numbers: 5 rows over dp and cp of a (2, 2, 2) mesh, the
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
		ck_assert_msg(agrees(r.err), "case %zu: %s", i, r.err);
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

START_TEST(a_mapped_input_cut_short_is_one_line_and_exit_2)
{
	/* A child with tpsim's signal dispositions maps a two-page file,
	 * cuts it to nothing and reads its second page: the genuine SIGBUS
	 * a config truncated while tps_json_load parses it would raise. It
	 * must end as any unreadable input does, one line and exit 2. */
	const char *dir = tu_tempdir();
	char path[512], err_path[512], *text;
	int status = 0;
	pid_t pid;
	snprintf(path, sizeof path, "%s/cut.json", dir);
	snprintf(err_path, sizeof err_path, "%s/stderr", dir);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		long page = sysconf(_SC_PAGESIZE);
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		volatile const char *map;
		if (fd < 0 || err_fd < 0 || dup2(err_fd, STDERR_FILENO) < 0 ||
		    ftruncate(fd, 2 * page) != 0) {
			_exit(99);
		}
		tps_cli_install_signals();
		map = mmap(NULL, (size_t)(2 * page), PROT_READ, MAP_PRIVATE, fd,
			   0);
		if (map == MAP_FAILED || ftruncate(fd, 0) != 0) {
			_exit(98);
		}
		(void)map[page];
		_exit(0); /* not reached: the read faults */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), TPS_EXIT_TROUBLE);
	text = tu_read_file(err_path, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "tpsim: an input file was cut short while it "
			       "was read (SIGBUS)\n");
	free(text);
	tu_rmtree(dir);
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
	tcase_add_test(usage, set_values_are_json_numbers);
	tcase_add_test(usage, a_mapped_input_cut_short_is_one_line_and_exit_2);
	tcase_add_test(run, run_writes_trace_and_one_line_summary);
	tcase_add_test(run, run_reads_the_config_from_stdin);
	tcase_add_test(run, run_without_reference_says_so_and_compares_nothing);
#ifndef TPSIM_HAVE_MPI
	tcase_add_test(run, backend_mpi_without_mpi_is_a_clear_error);
#endif
	tcase_add_test(run, bad_config_is_exit_2_naming_file_and_pointer);
	tcase_add_test(run, output_directory_and_memory_budget_are_refused);
	tcase_add_test(
		run,
		memory_budget_refusal_reads_in_gib_and_names_the_ways_without_values);
	tcase_add_test(
		run,
		runs_whose_trace_is_over_the_budget_are_refused_before_they_start);
	tcase_add_test(run, bad_configs_exit_2_with_one_line);
	tcase_add_test(run, shape_rules_are_config_errors_in_every_verb);
	tcase_add_test(run, values_none_writes_shapes_only);
	tcase_add_test(run, disagreement_with_the_reference_is_exit_1);
	tcase_add_test(run, output_to_a_device_writes_to_it_in_place);
	tcase_add_test(run, output_naming_an_input_is_refused_by_every_verb);
	tcase_add_test(run, traces_are_byte_identical_for_every_thread_count);
	tcase_add_test(
		run,
		traces_in_bf16_and_fp16_are_byte_identical_for_every_thread_count);
	tcase_add_test(run, bf16_all_reduce_rounds_each_addition_in_rank_order);
	tcase_add_test(run, bf16_matmul_accumulates_in_float32_and_rounds_once);
	tcase_add_test(run,
		       bf16_and_fp16_trace_values_read_back_to_the_stored_bits);
	tcase_add_test(run, run_threads_and_stats_options);
	tcase_add_test(
		run,
		run_stats_name_the_gemm_variant_main_took_from_the_environment);
	tcase_add_test(run, explicit_input_values_run_as_their_init_would);
	tcase_add_test(run,
		       inject_bias_every_rank_is_diagnosed_from_its_symptom);
	tcase_add_test(run, a_bias_bug_is_never_a_match);
	tcase_add_test(run, a_mistake_the_tolerance_would_pass_still_differs);
	tcase_add_test(run, the_trace_says_which_comparison_was_used);
	tcase_add_test(run,
		       inject_skip_all_reduce_is_diagnosed_from_its_symptom);
	tcase_add_test(run, gpt_example_counts_in_its_trace_are_megatrons);
	tcase_add_test(run, recomputed_events_are_marked_and_pass_every_reader);
	tcase_add_test(run, inject_skip_gather_is_diagnosed_from_its_symptom);
	tcase_add_test(run,
		       inject_wrong_shard_dim_is_a_shape_error_in_the_matmul);
	tcase_add_test(
		run,
		inject_tp_allreduce_weight_grad_is_diagnosed_from_its_symptom);
	tcase_add_test(run, readme_quick_start_shows_the_real_demo_output);
	tcase_add_test(run, traces_are_byte_identical_to_the_golden_ones);
	tcase_add_test(run, every_injected_mistake_is_caught_by_the_bound_alone);
	tcase_add_test(check, every_fixture_passes_tpsim_check);
	tcase_add_test(check, a_wrong_number_in_a_fixture_fails_naming_it);
	tcase_add_test(
		check,
		a_file_of_the_wrong_kind_says_what_it_is_and_what_was_expected);
	tcase_add_test(
		check,
		malformed_traces_are_refused_at_their_pointer_by_every_reader);
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
	tcase_add_test(check, explain_prints_byte_counts_for_people);
	tcase_add_test(check,
		       explain_lists_the_communication_one_module_a_line);
	tcase_add_test(check, explain_md_headings_start_at_the_heading_level);
	tcase_add_test(check, explain_shows_placements_before_within_a_step);
	tcase_add_test(comm, comm_counts_inference_and_training_side_by_side);
	tcase_add_test(comm, comm_sweeps_every_combination_of_set_values);
	tcase_add_test(comm, comm_prints_sizes_in_binary_units_and_exact_json);
	tcase_add_test(
		comm,
		run_and_comm_warn_of_a_redistribution_the_next_one_undoes);
	tcase_add_test(comm, comm_refuses_bad_input_with_one_line);
	tcase_add_test(comm, comm_zero_refuses_what_the_zero_key_refuses);
	tcase_add_test(comm, comm_zero_figures_are_the_zero_tp_readmes);
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
