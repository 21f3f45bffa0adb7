/*
 * diff: `tpsim diff` (two traces against both traces' error bounds) and
 * `tpsim plot` (loss curves and the band reordering allows), through the
 * CLI and through run_diff.h. Bad command lines are rows of test_cli.c's
 * usage tables; here, bad traces.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "run_diff.h"
#include "run_plot.h"
#include "trace.h"

/* fc1 (8 -> 16, colwise), gelu, fc2 (16 -> 4, rowwise) trained with sgd
 * for $steps steps on a mesh (dp, tp): every value a non-trivial float. */
static const char mlp_config[] =
	"{\"tpsim\": 1, \"vars\": {\"tp\": 2, \"dp\": 1, \"steps\": 2},\n"
	" \"mesh\": {\"shape\": [\"$dp\", \"$tp\"], \"dim_names\": [\"dp\", "
	"\"tp\"]}, \"dp_dim\": \"dp\",\n"
	" \"model\": [{\"name\": \"fc1\", \"type\": \"linear\", "
	"\"in_features\": 8, \"out_features\": 16, \"bias\": true},\n"
	"  {\"name\": \"act\", \"type\": \"gelu\"},\n"
	"  {\"name\": \"fc2\", \"type\": \"linear\", \"in_features\": 16, "
	"\"out_features\": 4, \"bias\": true}],\n"
	" \"plan\": {\"fc1\": \"colwise\", \"fc2\": \"rowwise\"},\n"
	" \"input\": {\"shape\": [4, 8], \"init\": \"uniform\", \"seed\": 1},\n"
	" \"init\": {\"method\": \"uniform\", \"seed\": 2},\n"
	" \"mode\": \"training\", \"loss\": \"mse\", \"target\": {\"init\": "
	"\"uniform\", \"seed\": 3},\n"
	" \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1}, \"steps\": "
	"\"$steps\"%s}\n";

/* Writes mlp_config with `extra` (", \"key\": ..." or "") to dir/name. */
static void write_mlp(const char *dir, const char *name, const char *extra)
{
	char path[512], text[2048];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	snprintf(text, sizeof text, mlp_config, extra);
	tu_write_file(path, text, strlen(text));
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	tu_write_file(path, text, strlen(text));
}

/* tpsim run dir/config -o dir/trace [--set a] [--set b]; exit 0 or 1
 * (a run with an injected mistake differs from its reference). */
static void run(const char *dir, const char *config, const char *trace,
		const char *set1, const char *set2)
{
	char c[512], t[512];
	struct tu_result r;
	snprintf(c, sizeof c, "%s/%s", dir, config);
	snprintf(t, sizeof t, "%s/%s", dir, trace);
	if (set2) {
		r = tu_cli(9, "run", c, "-o", t, "--set", set1, "--set", set2);
	} else if (set1) {
		r = tu_cli(7, "run", c, "-o", t, "--set", set1);
	} else {
		r = tu_cli(5, "run", c, "-o", t);
	}
	ck_assert_msg(r.rc == 0 || r.rc == 1, "%s: %s", config, r.err);
	tu_result_free(&r);
}

/* Runs tpsim with cwd = dir and the arguments up to the first NULL, so
 * that the traces' names in its output are the relative ones given
 * (goldens do not hold the temporary dir). */
static struct tu_result in_dir(const char *dir, const char *a1, const char *a2,
			       const char *a3, const char *a4, const char *a5)
{
	char cwd[PATH_MAX];
	const char *args[] = {a1, a2, a3, a4, a5};
	int argc = 1;
	struct tu_result r;
	while (argc <= 5 && args[argc - 1]) {
		argc++;
	}
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	ck_assert_int_eq(chdir(dir), 0);
	r = tu_cli(argc, a1, a2, a3, a4, a5);
	ck_assert_int_eq(chdir(cwd), 0);
	return r;
}

/* Compares got with tests/golden/<rel>; TPSIM_UPDATE_GOLDEN=1 rewrites
 * it. Goldens are the code's output, kept to catch any change; what they
 * say is checked by hand in the assertions beside each call. */
static void compare_golden(const char *rel, const char *got)
{
	char path[512];
	char *want;
	snprintf(path, sizeof path, "tests/golden/%s", rel);
	if (getenv("TPSIM_UPDATE_GOLDEN")) {
		tu_write_file(tu_source_path(path), got, strlen(got));
		return;
	}
	want = tu_read_file(tu_source_path(path), NULL);
	ck_assert_msg(want != NULL, "%s is missing", path);
	ck_assert_msg(strcmp(want, got) == 0, "%s differs; now:\n%s", path,
		      got);
	free(want);
}

/* Every table row of a text diff (lines starting with a step or "-"):
 * its verdict is one of the given words. */
static void assert_verdicts(const char *out, const char *const *ok, int n)
{
	const char *line = strstr(out, "\nstep ");
	int rows = 0;
	ck_assert_ptr_nonnull(line);
	line = strchr(line + 1, '\n') + 1;
	for (; *line && *line != '\n'; line = strchr(line, '\n') + 1) {
		const char *end = strchr(line, '\n');
		bool found = false;
		for (int i = 0; i < n && !found; i++) {
			size_t w = strlen(ok[i]);
			found = (size_t)(end - line) >= w &&
				strncmp(end - w, ok[i], w) == 0;
		}
		ck_assert_msg(found, "row with another verdict: %.*s",
			      (int)(end - line), line);
		rows++;
	}
	ck_assert_int_gt(rows, 0);
}

/* The reordering tp 2 -> tp 8 does (k of fc2 split 8 ways instead of 2)
 * is within e_A + e_B at every element of every tensor. */
START_TEST(tp2_against_tp8_is_within_the_bounds)
{
	static const char *const ok[] = {"  rounding", "  exact"};
	const char *dir = tu_tempdir();
	struct tu_result r;
	write_mlp(dir, "mlp.json", "");
	run(dir, "mlp.json", "tp2.json", NULL, NULL);
	run(dir, "mlp.json", "tp8.json", "tp=8", NULL);
	r = in_dir(dir, "diff", "tp2.json", "tp8.json", NULL, NULL);
	ck_assert_msg(r.rc == 0, "%s%s", r.out, r.err);
	ck_assert_uint_eq(r.err_len, 0);
	/* 4 parameters at setup, then per step 4 forward tensors, 7
	 * backward and 4 updates: 4 + 2 x 15. */
	ck_assert_msg(strstr(r.out, "; 34 tensors in both traces") != NULL,
		      "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "\n-     setup      fc1.weight  "
					    "     0          0        0       "
					    "exact\n"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nno divergence: the traces "
					    "differ by at most "));
	assert_verdicts(r.out, ok, 2);
	compare_golden("diff/tp2_tp8.txt", r.out);
	tu_result_free(&r);
	r = in_dir(dir, "diff", "tp2.json", "tp8.json", "--format", "md");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "\n| step | phase | tensor |"));
	compare_golden("diff/tp2_tp8.md", r.out);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/*
 * examples/mistakes/bias_every_rank.json against the same config without
 * the mistake. By hand: fc (4 -> 2, rowwise over 2 ranks), arange weight
 * [[1,2,3,4],[5,6,7,8]], bias [1,2], input [[1,2,3,4],[5,6,7,8]]; every
 * product and sum is an integer below 2^24, so the bound is 0. The
 * mistake adds the bias on both ranks before the all_reduce: fc.out is
 * the correct one plus [[1,2],[1,2]], so the largest difference is 2, at
 * fc.out[0][1], where no sum rounds.
 */
START_TEST(a_bias_bug_diverges_at_its_tensor_where_no_sum_rounds)
{
	const char *dir = tu_tempdir();
	char *good = tu_read_file(
		tu_source_path("examples/mistakes/bias_every_rank.json"), NULL);
	char *cut;
	struct tu_result r;
	ck_assert_ptr_nonnull(good);
	cut = strstr(good, ",\n  \"inject\"");
	ck_assert_ptr_nonnull(cut);
	/* The tail shrinks: the literal fits where ",\n  \"inject\"" was. */
	memcpy(cut, "\n}\n", sizeof "\n}\n");
	write_text(dir, "good.json", good);
	free(good);
	run(dir, "good.json", "good.trace.json", NULL, NULL);
	{
		struct tu_result m;
		char t[512];
		snprintf(t, sizeof t, "%s/bad.trace.json", dir);
		m = tu_cli(5, "run",
			   tu_source_path(
				   "examples/mistakes/bias_every_rank.json"),
			   "-o", t);
		ck_assert_int_eq(m.rc, 1);
		tu_result_free(&m);
	}
	r = in_dir(dir, "diff", "good.trace.json", "bad.trace.json", NULL,
		   NULL);
	ck_assert_msg(r.rc == 1, "%s%s", r.out, r.err);
	ck_assert_ptr_nonnull(
		strstr(r.out, "\n0     forward  fc.out     2          0      "
			      "inf    NOT rounding\n"));
	ck_assert_ptr_nonnull(
		strstr(r.out, "\nfirst divergence: step 0, forward, fc.out: "
			      "differs by 2 at fc.out[0][1], where no sum "
			      "rounds (bound 0)\n"));
	compare_golden("diff/bias_every_rank.txt", r.out);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/*
 * tp_allreduce_weight_grad all-reduces the tp-sharded weight gradients
 * over tp. Backward runs fc2 first, and fc2's weight (shard(1)) is the
 * first gradient the mistake sums: the first divergence is step 0's
 * fc2.weight.grad; the forward of step 0 is untouched.
 */
START_TEST(a_gradient_bug_diverges_at_the_first_gradient_it_sums)
{
	const char *dir = tu_tempdir();
	struct tu_result r;
	write_mlp(dir, "mlp.json", "");
	write_mlp(dir, "bug.json",
		  ", \"inject\": [\"tp_allreduce_weight_grad\"]");
	run(dir, "mlp.json", "good.json", NULL, NULL);
	run(dir, "bug.json", "bug.trace.json", NULL, NULL);
	r = in_dir(dir, "diff", "good.json", "bug.trace.json", "--step", "0");
	ck_assert_msg(r.rc == 1, "%s%s", r.out, r.err);
	ck_assert_msg(strstr(r.out, "\nfirst divergence: step 0, backward, "
				    "fc2.weight.grad: differs by ") != NULL,
		      "%s", r.out);
	ck_assert_ptr_nonnull(strstr(r.out, "; reordering can explain at "
					    "most "));
	ck_assert_ptr_nonnull(strstr(r.out, "0     forward    fc2.out   "));
	ck_assert_ptr_null(strstr(r.out, "\n1     "));
	ck_assert_ptr_null(strstr(r.out, "\n-     "));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/*
 * A dp rank's backward values are dp times the reference's until the dp
 * average, and its per-rank losses sum to dp times the loss: divided by
 * dp (2, a power of two, and 3, which is not), dp x tp agrees with tp
 * alone within the bounds. So does DistributedSampler's strided split,
 * its rows put back in sample order. Without the division every gradient
 * would differ by a factor dp.
 */
START_TEST(dp_runs_are_compared_per_sample_and_per_gradient)
{
	static const char *const ok[] = {"  rounding", "  exact",
					 "  within tolerance"};
	static const char *const sets[][2] = {
		{"dp=2", NULL}, {"dp=3", "tp=1"}, {"dp=2", "tp=4"}};
	const char *dir = tu_tempdir();
	write_mlp(dir, "mlp.json", "");
	write_mlp(dir, "ds.json", ", \"sampler\": \"distributed\"");
	run(dir, "mlp.json", "tp2.json", NULL, NULL);
	for (size_t i = 0; i < 4; i++) {
		struct tu_result r;
		if (i < 3) {
			run(dir, "mlp.json", "dp.json", sets[i][0], sets[i][1]);
		} else {
			run(dir, "ds.json", "dp.json", "dp=2", NULL);
		}
		r = in_dir(dir, "diff", "tp2.json", "dp.json", NULL, NULL);
		ck_assert_msg(r.rc == 0, "case %zu: %s%s", i, r.out, r.err);
		ck_assert_msg(strstr(r.out, "0     backward   output.grad") !=
				      NULL,
			      "%s", r.out);
		assert_verdicts(r.out, ok, 3);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

/*
 * float32 against bfloat16: the differences are those of 8-bit
 * significands (fc2.out's near 1e-3), far past float32's bounds, and
 * within the bfloat16 run's. At setup the parameters differ by their
 * rounding to bfloat16 (at most 2^-8 of each), which is their bound.
 */
START_TEST(float32_against_bfloat16_is_within_the_bfloat16_bounds)
{
	static const char *const ok[] = {"  rounding", "  exact",
					 "  within tolerance"};
	const char *dir = tu_tempdir();
	struct tu_result r;
	const char *row;
	double diff = 0.0;
	write_mlp(dir, "mlp.json", "");
	write_mlp(dir, "bf16.json", ", \"dtype\": \"bfloat16\"");
	run(dir, "mlp.json", "f32.json", NULL, NULL);
	run(dir, "bf16.json", "bf16.trace.json", "tp=8", NULL);
	r = in_dir(dir, "diff", "f32.json", "bf16.trace.json", NULL, NULL);
	ck_assert_msg(r.rc == 0, "%s%s", r.out, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "\nB: bf16.trace.json: mesh dp=1 "
					    "x tp=8, bfloat16, 2 training "
					    "steps\n"));
	row = strstr(r.out, "\n0     forward    fc2.out          ");
	ck_assert_ptr_nonnull(row);
	diff = strtod(row + 34, NULL);
	ck_assert_msg(diff > 1e-4, "fc2.out differs by only %g", diff);
	ck_assert_ptr_nonnull(
		strstr(r.out, "\n-     setup      fc1.weight       0.0"));
	assert_verdicts(r.out, ok, 3);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* A small transformer block under plain TP and under sequence
 * parallelism: the same model, other collectives, the same values within
 * what reordering explains (attention has no bound rule yet: those rows
 * fall back to the tolerance). */
START_TEST(sequence_parallel_against_plain_tp_does_not_diverge)
{
	static const char head[] =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"block\", \"type\": "
		"\"transformer_block\", \"dim\": 8, \"num_heads\": 2, "
		"\"hidden\": 16}], \"input\": {\"shape\": [1, 4, 8], "
		"\"init\": \"uniform\"}, \"init\": {\"method\": \"uniform\"}, "
		"\"plan\": ";
	static const char tp[] =
		"{\"block.attn.[qkv]\": \"colwise\", \"block.attn.o\": "
		"\"rowwise\", \"block.mlp.fc1\": \"colwise\", "
		"\"block.mlp.fc2\": \"rowwise\"}}";
	static const char sp[] =
		"{\"block.ln[12]\": \"sequence\", \"block.attn.[qkv]\": "
		"\"colwise\", \"block.attn.o\": {\"style\": \"rowwise\", "
		"\"output\": \"shard(1)\"}, \"block.mlp.fc1\": {\"style\": "
		"\"colwise\", \"input\": \"shard(1)\"}, \"block.mlp.fc2\": "
		"{\"style\": \"rowwise\", \"output\": \"shard(1)\"}}}";
	const char *dir = tu_tempdir();
	char text[2048];
	struct tu_result r;
	snprintf(text, sizeof text, "%s%s", head, tp);
	write_text(dir, "tp.json", text);
	snprintf(text, sizeof text, "%s%s", head, sp);
	write_text(dir, "sp.json", text);
	run(dir, "tp.json", "tp.trace.json", NULL, NULL);
	run(dir, "sp.json", "sp.trace.json", NULL, NULL);
	r = in_dir(dir, "diff", "tp.trace.json", "sp.trace.json", NULL, NULL);
	ck_assert_msg(r.rc == 0, "%s%s", r.out, r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "block.mlp.fc2.out"));
	ck_assert_ptr_nonnull(strstr(r.out, "\nno divergence: "));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* The same traces give the same bytes, whatever the bound passes'
 * thread count; a trace against itself differs nowhere. */
START_TEST(diff_is_deterministic_and_a_trace_matches_itself)
{
	const char *dir = tu_tempdir();
	char a[512], b[512];
	cJSON *ta = NULL, *tb = NULL;
	char *out[2] = {NULL, NULL};
	size_t len[2];
	struct tps_error e = {0};
	struct tu_result r;
	write_mlp(dir, "mlp.json", "");
	run(dir, "mlp.json", "a.json", NULL, NULL);
	run(dir, "mlp.json", "b.json", "tp=4", "dp=2");
	snprintf(a, sizeof a, "%s/a.json", dir);
	snprintf(b, sizeof b, "%s/b.json", dir);
	ck_assert_int_eq(tps_trace_read(a, &ta, NULL, NULL, &e), TPS_OK);
	ck_assert_int_eq(tps_trace_read(b, &tb, NULL, NULL, &e), TPS_OK);
	for (int i = 0; i < 2; i++) {
		struct tps_diff d;
		FILE *f = open_memstream(&out[i], &len[i]);
		ck_assert_int_eq(
			tps_diff_build(&d, ta, "a", tb, "b", i ? 3 : 1, &e),
			TPS_OK);
		tps_diff_write(f, &d, TPS_DIFF_MARKDOWN, -1);
		fclose(f);
		tps_diff_free(&d);
	}
	ck_assert_uint_eq(len[0], len[1]);
	ck_assert_int_eq(memcmp(out[0], out[1], len[0]), 0);
	free(out[0]);
	free(out[1]);
	cJSON_Delete(ta);
	cJSON_Delete(tb);
	r = tu_cli(4, "diff", a, a);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "\nno divergence: every bounded "
					    "value is the same in both "
					    "traces"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/*
 * Traces diff cannot compare: exit 2, one line naming the file and the
 * JSON Pointer, nothing on stdout, and no output file (an existing one
 * kept). Each row: the second trace (made from a config the row names,
 * or a file written as is) and the message.
 */
START_TEST(traces_that_cannot_be_compared_are_refused_at_their_pointer)
{
	const char *dir = tu_tempdir();
	static const struct {
		const char *b; /* a name under dir */
		const char *message;
	} rows[] = {
		{"missing.json", "tpsim: missing.json: No such file or "
				 "directory\n"},
		{"mlp.json",
		 "tpsim: mlp.json: /tpsim: expected a tpsim trace (\"format\": "
		 "\"tpsim.trace\"), got a tpsim config"},
		{"relu.trace.json",
		 "tpsim: relu.trace.json: /config/model/1/type: expected "
		 "\"gelu\" as in a.json, got \"relu\": the traces are of "
		 "different models\n"},
		{"wide.trace.json",
		 "tpsim: wide.trace.json: /config/model/0/out_features: "
		 "expected 16 as in a.json, got 32: the traces are of "
		 "different models\n"},
		{"summary.trace.json",
		 "tpsim: summary.trace.json: /config/trace/values: expected "
		 "\"full\" (every value, to compare element by element), got "
		 "\"summary\"\n"},
		{"symbolic.trace.json",
		 "tpsim: symbolic.trace.json: /config/compute: expected a "
		 "trace with values, got a symbolic one"},
	};
	char *mlp;
	write_mlp(dir, "mlp.json", "");
	run(dir, "mlp.json", "a.json", NULL, NULL);
	{
		char p[512];
		snprintf(p, sizeof p, "%s/mlp.json", dir);
		mlp = tu_read_file(p, NULL);
	}
	{
		/* relu for gelu; fc1 32 wide (fc2 takes 32); summaries. */
		char text[2048];
		char *at = strstr(mlp, "\"gelu\"");
		snprintf(text, sizeof text, "%.*s\"relu\"%s", (int)(at - mlp),
			 mlp, at + 6);
		write_text(dir, "relu.json", text);
		write_mlp(dir, "summary.json",
			  ", \"trace\": {\"values\": \"summary\"}");
		write_mlp(dir, "symbolic.json", ", \"compute\": \"symbolic\"");
		at = strstr(mlp, "\"out_features\": 16");
		snprintf(text, sizeof text, "%.*s\"out_features\": 32%s",
			 (int)(at - mlp), mlp, at + 18);
		at = strstr(text, "\"in_features\": 16");
		memcpy(at, "\"in_features\": 32", 17);
		write_text(dir, "wide.json", text);
	}
	free(mlp);
	run(dir, "relu.json", "relu.trace.json", NULL, NULL);
	run(dir, "wide.json", "wide.trace.json", NULL, NULL);
	run(dir, "summary.json", "summary.trace.json", NULL, NULL);
	run(dir, "symbolic.json", "symbolic.trace.json", NULL, NULL);
	write_text(dir, "kept.txt", "kept\n");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct tu_result r =
			in_dir(dir, "diff", "a.json", rows[i].b, NULL, NULL);
		char *kept;
		ck_assert_msg(r.rc == 2, "row %zu: exit %d", i, r.rc);
		ck_assert_msg(strncmp(r.err, rows[i].message,
				      strlen(rows[i].message)) == 0,
			      "row %zu: %s", i, r.err);
		ck_assert_int_eq(tu_count_lines(r.err), 1);
		ck_assert_uint_eq(r.out_len, 0);
		tu_result_free(&r);
		/* -o: no partial output, an existing file kept. */
		r = in_dir(dir, "diff", "a.json", rows[i].b, "-o", "new.txt");
		ck_assert_int_eq(r.rc, 2);
		tu_result_free(&r);
		r = in_dir(dir, "diff", rows[i].b, "a.json", "-o", "kept.txt");
		ck_assert_int_eq(r.rc, 2);
		tu_result_free(&r);
		{
			char p[600];
			struct stat st;
			snprintf(p, sizeof p, "%s/new.txt", dir);
			ck_assert_int_ne(stat(p, &st), 0);
			snprintf(p, sizeof p, "%s/kept.txt", dir);
			kept = tu_read_file(p, NULL);
			ck_assert_str_eq(kept, "kept\n");
			free(kept);
		}
	}
	tu_rmtree(dir);
}
END_TEST

/* ---- plot -------------------------------------------------------------- */

/*
 * One device, tp 2, and tp 2 with tp_allreduce_weight_grad, 4 steps. By
 * hand: step 0's loss comes before any update, so all three start
 * together; the mistake's first update is wrong, so its loss leaves the
 * band at step 1, while the correct runs stay inside at every step.
 */
START_TEST(plot_draws_the_curves_and_the_band_byte_for_byte)
{
	const char *dir = tu_tempdir();
	struct tu_result r, again;
	write_mlp(dir, "mlp.json", "");
	write_mlp(dir, "bug.json",
		  ", \"inject\": [\"tp_allreduce_weight_grad\"]");
	run(dir, "mlp.json", "tp1.json", "tp=1", "steps=4");
	run(dir, "mlp.json", "tp2.json", "steps=4", NULL);
	run(dir, "bug.json", "bug.trace.json", "steps=4", NULL);
	r = in_dir(dir, "plot", "tp1.json", "tp2.json", "bug.trace.json", NULL);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, ">1 device: inside the band<"));
	ck_assert_ptr_nonnull(strstr(r.out, ">tp=2: inside the band<"));
	ck_assert_ptr_nonnull(strstr(r.out, ">tp=2 tp_allreduce_weight_grad: "
					    "outside the band from step 1<"));
	ck_assert_ptr_nonnull(strstr(r.out, ">float32 band: the reference "
					    "loss of 1 device \u00b1 2e, "));
	ck_assert_int_eq(strncmp(r.out, "<?xml version=\"1.0\"", 19), 0);
	compare_golden("plot/mlp_tp1_tp2_bug.svg", r.out);
	again = in_dir(dir, "plot", "tp1.json", "tp2.json", "bug.trace.json",
		       "--label");
	ck_assert_int_eq(again.rc, 2); /* --label needs its text */
	tu_result_free(&again);
	again = in_dir(dir, "plot", "tp1.json", "tp2.json", "--label", "x");
	ck_assert_int_eq(again.rc, 2);
	ck_assert_str_eq(again.err, "tpsim: plot: 1 --label for 2 traces "
				    "(one per trace, or none)\nTry 'tpsim "
				    "--help'.\n");
	tu_result_free(&again);
	/* -o naming an input is refused, the input kept. */
	again = in_dir(dir, "plot", "tp1.json", "tp2.json", "-o", "tp2.json");
	ck_assert_int_eq(again.rc, 2);
	ck_assert_ptr_nonnull(strstr(again.err, "tpsim: tp2.json: -o names the "
						"input tp2.json (the same "
						"file)"));
	tu_result_free(&again);
	again = in_dir(dir, "plot", "tp1.json", "tp2.json", NULL, NULL);
	ck_assert_int_eq(again.rc, 0);
	tu_result_free(&again);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* --label names each curve in order; the SVG escapes it. */
START_TEST(plot_labels_are_the_users_and_escaped)
{
	const char *dir = tu_tempdir();
	char t[512], o[512];
	struct tu_result r;
	char *svg;
	write_mlp(dir, "mlp.json", "");
	run(dir, "mlp.json", "tp2.json", NULL, NULL);
	snprintf(t, sizeof t, "%s/tp2.json", dir);
	snprintf(o, sizeof o, "%s/loss.svg", dir);
	r = tu_cli(7, "plot", t, "--label", "TP <2> & \"more\"", "-o", o);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert_uint_eq(r.out_len, 0);
	svg = tu_read_file(o, NULL);
	ck_assert_ptr_nonnull(
		strstr(svg, ">TP &lt;2&gt; &amp; &quot;more&quot;: inside "));
	free(svg);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* What has no loss per step cannot be plotted: exit 2 at the pointer. */
START_TEST(plot_refuses_traces_without_a_loss_per_step)
{
	static const char inference[] =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": "
		"[\"tp\"]}, \"model\": [{\"name\": \"fc\", \"type\": "
		"\"linear\", \"in_features\": 4, \"out_features\": 2}], "
		"\"plan\": {\"fc\": \"rowwise\"}, \"input\": {\"shape\": [2, "
		"4], \"init\": \"arange\"}}";
	const char *dir = tu_tempdir();
	char t[512], s[512];
	struct tu_result r;
	write_text(dir, "inf.json", inference);
	write_mlp(dir, "symbolic.json", ", \"compute\": \"symbolic\"");
	run(dir, "inf.json", "inf.trace.json", NULL, NULL);
	run(dir, "symbolic.json", "symbolic.trace.json", NULL, NULL);
	snprintf(t, sizeof t, "%s/inf.trace.json", dir);
	snprintf(s, sizeof s, "%s/symbolic.trace.json", dir);
	r = tu_cli(2 + 1, "plot", t);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_msg(strstr(r.err, "inf.trace.json: /config/mode: expected "
				    "a training trace (tpsim plot draws the "
				    "loss per step), got an inference "
				    "trace\n") != NULL,
		      "%s", r.err);
	ck_assert_int_eq(tu_count_lines(r.err), 1);
	tu_result_free(&r);
	r = tu_cli(3, "plot", s);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_msg(strstr(r.err, "symbolic.trace.json: /config/compute: "
				    "expected a trace with values, got a "
				    "symbolic one") != NULL,
		      "%s", r.err);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

static Suite *diff_suite(void)
{
	Suite *s = suite_create("diff");
	TCase *diff = tcase_create("diff");
	TCase *plot = tcase_create("plot");
	tcase_set_timeout(diff, 300);
	tcase_set_timeout(plot, 300);
	tcase_add_test(diff, tp2_against_tp8_is_within_the_bounds);
	tcase_add_test(diff,
		       a_bias_bug_diverges_at_its_tensor_where_no_sum_rounds);
	tcase_add_test(diff,
		       a_gradient_bug_diverges_at_the_first_gradient_it_sums);
	tcase_add_test(diff, dp_runs_are_compared_per_sample_and_per_gradient);
	tcase_add_test(diff,
		       float32_against_bfloat16_is_within_the_bfloat16_bounds);
	tcase_add_test(diff,
		       sequence_parallel_against_plain_tp_does_not_diverge);
	tcase_add_test(diff, diff_is_deterministic_and_a_trace_matches_itself);
	tcase_add_test(
		diff,
		traces_that_cannot_be_compared_are_refused_at_their_pointer);
	tcase_add_test(plot, plot_draws_the_curves_and_the_band_byte_for_byte);
	tcase_add_test(plot, plot_labels_are_the_users_and_escaped);
	tcase_add_test(plot, plot_refuses_traces_without_a_loss_per_step);
	suite_add_tcase(s, diff);
	suite_add_tcase(s, plot);
	return s;
}

int main(void)
{
	return tu_run_suite(diff_suite());
}
