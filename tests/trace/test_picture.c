/* picture: the sharding pictures of `tpsim picture` and `tpsim explain
 * --pictures`: labels checked by hand, goldens, bad arguments, atomic
 * output, determinism. */
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
#include "jsonio.h"
#include "picture.h"

/* tpsim run on a fixture's config (or on config text when text is not
 * NULL) into DIR/NAME.json; the trace's path in a static buffer. */
static const char *trace_of(const char *dir, const char *name, const char *text)
{
	static char trace[1024];
	char cfg[1024];
	struct tu_result r;
	if (text) {
		snprintf(cfg, sizeof cfg, "%s/%s.config.json", dir, name);
		tu_write_file(cfg, text, strlen(text));
	} else {
		snprintf(cfg, sizeof cfg, "%s/%s/config.json",
			 tu_source_path("fixtures"), name);
	}
	snprintf(trace, sizeof trace, "%s/%s.json", dir, name);
	r = tu_cli(5, "run", cfg, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s: %s", cfg, r.err);
	tu_result_free(&r);
	return trace;
}

/* The text (or Markdown) picture of the event with that seq. */
static char *text_picture(const char *trace_path, long long seq, bool md)
{
	cJSON *trace = NULL;
	struct tps_error e = {0};
	struct tps_picture pic = {0};
	char *text = NULL;
	size_t len = 0;
	FILE *out;
	ck_assert_int_eq(tps_json_load(trace_path, (size_t)1 << 30, &trace, &e),
			 TPS_OK);
	ck_assert_msg(
		tps_picture_from_event(&pic, trace, trace_path,
				       tps_picture_event_of_seq(trace, seq),
				       &e) == TPS_OK,
		"%s", e.message);
	out = open_memstream(&text, &len);
	tps_picture_write_text(out, &pic, md);
	fclose(out);
	tps_picture_free(&pic);
	cJSON_Delete(trace);
	return text;
}

static void assert_has(const char *text, const char *want)
{
	ck_assert_msg(strstr(text, want) != NULL, "missing \"%s\" in:\n%s",
		      want, text);
}

static void assert_lacks(const char *text, const char *unwanted)
{
	ck_assert_msg(strstr(text, unwanted) == NULL,
		      "unexpected \"%s\" in:\n%s", unwanted, text);
}

START_TEST(picture_labels_the_colwise_weight_as_derived_by_hand)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "seed_2x4_colwise", NULL);
	char *text = text_picture(trace, 0, false);
	/* fc.weight (2, 4), shard(0) over tp=2: chunk = ceil(2/2) = 1 row,
	 * so rank 0 holds row 0 and rank 1 row 1, every column (0-3). */
	assert_has(text, "A   row 0, cols 0-3: rank 0 (tp=0)\n");
	assert_has(text, "B   row 1, cols 0-3: rank 1 (tp=1)\n");
	assert_has(text, "row 0:  A  A  A  A\n");
	assert_has(text, "row 1:  B  B  B  B\n");
	free(text);
	tu_rmtree(dir);
}
END_TEST

START_TEST(picture_shows_both_mesh_dims_of_a_2d_mesh)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "mesh_2d_dp_tp", NULL);
	char *weight = text_picture(trace, 0, false);
	char *out = text_picture(trace, 5, false);
	/* fc1.weight (4, 4), [replicate, shard(0)] on (2, 2) (dp, tp), ranks
	 * [[0, 1], [2, 3]]: tp coordinate 0 is ranks 0 and 2 (dp 0 and 1),
	 * chunk ceil(4/2) = 2 rows: rows 0-1; tp=1 (ranks 1, 3) rows 2-3.
	 * The dp dim copies each block. */
	assert_has(weight, "rows 0-1, cols 0-3: ranks 0,2 (tp=0; replicated "
			   "over dp)");
	assert_has(weight, "rows 2-3, cols 0-3: ranks 1,3 (tp=1; replicated "
			   "over dp)");
	/* fc1.out (2, 4), [shard(0), shard(1)]: rank = 2 dp + tp holds row
	 * dp and columns 2 tp .. 2 tp + 1. */
	assert_has(out, "A   row 0, cols 0-1: rank 0 (dp=0, tp=0)\n");
	assert_has(out, "B   row 0, cols 2-3: rank 1 (dp=0, tp=1)\n");
	assert_has(out, "C   row 1, cols 0-1: rank 2 (dp=1, tp=0)\n");
	assert_has(out, "D   row 1, cols 2-3: rank 3 (dp=1, tp=1)\n");
	free(weight);
	free(out);
	tu_rmtree(dir);
}
END_TEST

START_TEST(picture_marks_partial_apart_from_replicate)
{
	const char *dir = tu_tempdir();
	const char *trace =
		trace_of(dir, "seed_2x4_rowwise_after_reduce", NULL);
	/* [3] matmul: fc.out (2, 2) [partial]: ranks 0 and 1 each hold a full
	 * (2, 2) addend, x_i W_i^T; [4] all_reduce makes it replicate. */
	char *partial = text_picture(trace, 3, false);
	char *replicate = text_picture(trace, 4, false);
	char *partial_md = text_picture(trace, 3, true);
	assert_has(partial, "A+  rows 0-1, cols 0-1: ranks 0,1 (partial sum "
			    "over tp)\n");
	assert_has(partial, "row 0: A+ A+\n");
	assert_has(partial, "full-size addend");
	assert_lacks(partial, "replicat");
	assert_lacks(partial, "same copy");
	assert_has(partial, "          partial sum over tp: every rank listed "
			    "holds a full-size addend (a name ending in +, "
			    "A+), and the block's value is their sum over "
			    "the group.\n");
	assert_has(partial_md, "- **A+** rows 0-1, cols 0-1: ranks 0,1 "
			       "(partial sum over tp)\n");
	assert_has(replicate, "A   rows 0-1, cols 0-1: ranks 0,1 (replicated "
			      "over tp)\n");
	assert_lacks(replicate, "partial");
	assert_lacks(replicate, "+");
	assert_has(replicate, "          replicate over tp: every rank listed "
			      "holds the same copy of its block.\n");
	free(partial);
	free(replicate);
	free(partial_md);
	tu_rmtree(dir);
}
END_TEST

START_TEST(picture_draws_uneven_shards_as_the_chunk_rule_gives_them)
{
	const char *dir = tu_tempdir();
	const char *five = trace_of(dir, "uneven_5_over_2", NULL);
	char *weight = text_picture(five, 0, false);
	char *out = text_picture(five, 2, false);
	char *thirteen;
	/* 5 over 2 by chunk: ceil(5/2) = 3, so rank 0 rows (or cols) 0-2 and
	 * rank 1 the remaining 2: 3-4. fc.weight is (5, 3), fc.out (2, 5). */
	assert_has(weight, "A   rows 0-2, cols 0-2: rank 0 (tp=0)\n");
	assert_has(weight, "B   rows 3-4, cols 0-2: rank 1 (tp=1)\n");
	assert_has(out, "A   rows 0-1, cols 0-2: rank 0 (tp=0)\n");
	assert_has(out, "B   rows 0-1, cols 3-4: rank 1 (tp=1)\n");
	assert_has(out, "row 0:  A  A  A  B  B\n");
	free(weight);
	free(out);
	/* 13 over 6: ceil(13/6) = 3: 0-2, 3-5, 6-8, 9-11, then 12 alone and
	 * nothing for rank 5 (3,3,3,3,1,0). */
	thirteen =
		text_picture(trace_of(dir, "uneven_13_over_6", NULL), 0, false);
	assert_has(thirteen, "A   rows 0-2, cols 0-1: rank 0 (tp=0)\n");
	assert_has(thirteen, "D   rows 9-11, cols 0-1: rank 3 (tp=3)\n");
	assert_has(thirteen, "E   row 12, cols 0-1: rank 4 (tp=4)\n");
	assert_has(thirteen, "F   rows none, cols 0-1: rank 5 (tp=5): empty, "
			     "a (0, 2) shard\n");
	free(thirteen);
	tu_rmtree(dir);
}
END_TEST

/* A hand-made trace: one event whose (3, 10) tensor is 5 heads of
 * head_dim 2 along dim 1 over tp = 2, with `placement` and the ranks'
 * shapes given, and the other keys every trace has (no parameters, no
 * collectives). */
static const char *block_trace(const char *dir, const char *placement,
			       int cols0, int cols1)
{
	static char path[1024];
	char text[2048];
	snprintf(path, sizeof path, "%s/blocks.json", dir);
	snprintf(text, sizeof text,
		 "{\"format\":\"tpsim.trace\",\"version\":1,"
		 "\"generator\":\"tpsim 0.3.0\",\"config\":{},"
		 "\"mesh\":{\"shape\":[2],\"dim_names\":[\"tp\"],"
		 "\"world_size\":2,\"groups\":{\"tp\":[[0,1]]}},"
		 "\"params\":{},\"inputs\":{},"
		 "\"events\":[{\"seq\":0,\"phase\":\"setup\","
		 "\"module\":\"attn.q\",\"kind\":\"layout\","
		 "\"op\":\"distribute\",\"tensor\":\"attn.q.out\","
		 "\"placements\":[\"%s\"],\"global_shape\":[3,10],"
		 "\"ranks\":[{\"rank\":0,\"shape\":[3,%d]},"
		 "{\"rank\":1,\"shape\":[3,%d]}]}],\"result\":{},"
		 "\"comm\":{\"collectives\":0,\"bytes_per_rank\":0,"
		 "\"by_op\":{},\"by_phase\":{},\"by_module\":{},"
		 "\"by_mesh_dim\":{}}}",
		 placement, cols0, cols1);
	tu_write_file(path, text, strlen(text));
	return path;
}

START_TEST(picture_labels_block_shards_by_whole_heads)
{
	const char *dir = tu_tempdir();
	const char *trace = block_trace(dir, "shard(1,block=2)", 6, 4);
	char *text = text_picture(trace, 0, false);
	struct tu_result r;
	/* 5 heads of 2 over 2: ceil(5/2) = 3 heads, features 0-5, on rank
	 * 0; heads 3-4, features 6-9, on rank 1 (not 5 and 5). */
	assert_has(text, "A   rows 0-2, cols 0-5: rank 0 (tp=0)\n");
	assert_has(text, "B   rows 0-2, cols 6-9: rank 1 (tp=1)\n");
	assert_has(text, "row 0:  A  A  A  A  A  A  B  B  B  B\n");
	r = tu_cli(5, "picture", trace, "--tensor", "attn.q.out");
	ck_assert_int_eq(r.rc, 0);
	assert_has(r.out, "placements [shard(1,block=2)] on mesh (2)");
	assert_has(r.out, "<title>A rows 0-2, cols 0-5: rank 0 (tp=0)</title>");
	tu_result_free(&r);
	free(text);
	tu_rmtree(dir);
}
END_TEST

START_TEST(picture_refuses_blocks_that_do_not_divide_the_dim)
{
	const char *dir = tu_tempdir();
	const char *trace = block_trace(dir, "shard(1,block=3)", 6, 4);
	struct tu_result r =
		tu_cli(5, "picture", trace, "--tensor", "attn.q.out");
	ck_assert_int_eq(r.rc, 2);
	assert_has(r.err, "/blocks.json: /events/0/placements: "
			  "shard(1,block=3) on mesh dim \"tp\": tensor dim 1 "
			  "has 10 elements there, not a whole number of "
			  "blocks of 3\n");
	tu_result_free(&r);
	/* A block the parser does not read at all. */
	trace = block_trace(dir, "shard(1,block=0)", 6, 4);
	r = tu_cli(5, "picture", trace, "--tensor", "attn.q.out");
	ck_assert_int_eq(r.rc, 2);
	assert_has(r.err,
		   "/events/0/placements/0: expected replicate, "
		   "partial or shard(d) (or shard(d,block=b), shard(d,flat), "
		   "shard(d,local), shard(d,flat,local))");
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* 1 output feature over tp = 2. */
static const char one_feature_config[] =
	"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], \"dim_names\": [\"tp\"]},"
	" \"model\": [{\"name\": \"fc\", \"type\": \"linear\", "
	"\"in_features\": 4, \"out_features\": 1, \"bias\": false}], "
	"\"plan\": {\"fc\": \"colwise\"}, \"input\": {\"shape\": [2, 4], "
	"\"init\": \"arange\"}, \"init\": {\"method\": \"arange\"}}";

START_TEST(picture_lists_an_empty_shard_as_empty_and_draws_nothing_for_it)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "one", one_feature_config);
	char *text = text_picture(trace, 0, false);
	char svg_path[1024];
	char *svg;
	struct tu_result r;
	/* fc.weight (1, 4) shard(0) over 2: ceil(1/2) = 1, rank 0 row 0,
	 * rank 1 starts at 1 = the end: a (0, 4) shard. */
	assert_has(text, "A   row 0, cols 0-3: rank 0 (tp=0)\n");
	assert_has(text, "B   rows none, cols 0-3: rank 1 (tp=1): empty, a "
			 "(0, 4) shard\n");
	assert_lacks(text, "  B  B");
	snprintf(svg_path, sizeof svg_path, "%s/w.svg", dir);
	r = tu_cli(7, "picture", trace, "--tensor", "fc.weight", "-o",
		   svg_path);
	ck_assert_int_eq(r.rc, 0);
	svg = tu_read_file(svg_path, NULL);
	/* One drawn block (its <g>), and B only in the list. */
	assert_has(svg, "<title>A row 0, cols 0-3: rank 0 (tp=0)</title>");
	assert_lacks(svg, "<title>B ");
	assert_has(svg, ">B   rows none, cols 0-3: rank 1 (tp=1): empty, a "
			"(0, 4) shard</text>");
	free(svg);
	free(text);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* A 3-D batch (2, 3, 4) over dp = 2 and a colwise layer over tp = 2. */
static const char batch_3d_config[] =
	"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2], \"dim_names\": "
	"[\"dp\", \"tp\"]}, \"dp_dim\": \"dp\", \"model\": [{\"name\": "
	"\"fc\", \"type\": \"linear\", \"in_features\": 4, \"out_features\": "
	"6, \"bias\": false}], \"plan\": {\"fc\": \"colwise\"}, \"input\": "
	"{\"shape\": [2, 3, 4], \"init\": \"arange\"}, \"init\": {\"method\": "
	"\"arange\"}}";

START_TEST(picture_draws_the_last_two_dims_with_a_panel_per_leading_range)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "b3", batch_3d_config);
	char *text = text_picture(trace, 2, false);
	/* fc.out (2, 3, 6) [shard(0), shard(2)]: dp splits dim 0 (one
	 * sample each), tp the 6 features in 3s; each sample is a panel. */
	assert_has(text, "dim0 0:\n");
	assert_has(text, "dim0 1:\n");
	assert_has(text, "A   dim0 0, rows 0-2, cols 0-2: rank 0 (dp=0, "
			 "tp=0)\n");
	assert_has(text, "D   dim0 1, rows 0-2, cols 3-5: rank 3 (dp=1, "
			 "tp=1)\n");
	free(text);
	tu_rmtree(dir);
}
END_TEST

/* Goldens are the code's own output, kept to catch any change; the
 * assertions above are the hand-checked part. TPSIM_UPDATE_GOLDEN=1
 * rewrites them. */
static void compare_golden(const char *golden_rel, const char *got,
			   bool skip_first_line)
{
	char *golden;
	if (getenv("TPSIM_UPDATE_GOLDEN")) {
		tu_write_file(tu_source_path(golden_rel), got, strlen(got));
		return;
	}
	golden = tu_read_file(tu_source_path(golden_rel), NULL);
	ck_assert_msg(golden != NULL, "%s is missing", golden_rel);
	if (skip_first_line) {
		/* explain's first line names the version */
		ck_assert_msg(strcmp(strchr(golden, '\n'), strchr(got, '\n')) ==
				      0,
			      "%s differs; now:\n%s", golden_rel, got);
	} else {
		ck_assert_msg(strcmp(golden, got) == 0, "%s differs; now:\n%s",
			      golden_rel, got);
	}
	free(golden);
}

static const struct svg_case {
	const char *fixture, *tensor, *seq; /* seq NULL: the first event */
} svg_cases[] = {
	{"seed_2x4_rowwise_after_reduce", "fc.weight", NULL},
	{"seed_2x4_rowwise_after_reduce", "fc.out", "3"},
	{"mesh_2d_dp_tp", "fc1.weight", NULL},
	{"mesh_2d_dp_tp", "fc2.out", "8"},
};

START_TEST(picture_svg_matches_golden_for_the_2x4_and_2d_mesh_examples)
{
	const char *dir = tu_tempdir();
	for (size_t c = 0; c < sizeof svg_cases / sizeof svg_cases[0]; c++) {
		const struct svg_case *k = &svg_cases[c];
		const char *trace = trace_of(dir, k->fixture, NULL);
		char golden[512];
		struct tu_result r =
			k->seq ? tu_cli(9, "picture", trace, "--tensor",
					k->tensor, "--event", k->seq, "-o", "-")
			       : tu_cli(5, "picture", trace, "--tensor",
					k->tensor);
		ck_assert_msg(r.rc == 0, "%s", r.err);
		ck_assert_uint_eq(r.err_len, 0);
		snprintf(golden, sizeof golden,
			 "tests/golden/pictures/%s.%s.svg", k->fixture,
			 k->tensor);
		compare_golden(golden, r.out, false);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

START_TEST(explain_pictures_match_golden_text_and_md)
{
	static const char *const cases[] = {"seed_2x4_rowwise_after_reduce",
					    "mesh_2d_dp_tp"};
	const char *dir = tu_tempdir();
	for (size_t c = 0; c < 2; c++) {
		const char *trace = trace_of(dir, cases[c], NULL);
		for (int md = 0; md < 2; md++) {
			char golden[512];
			struct tu_result r =
				tu_cli(6, "explain", trace, "--pictures",
				       "--format", md ? "md" : "text");
			ck_assert_msg(r.rc == 0, "%s", r.err);
			snprintf(golden, sizeof golden,
				 "tests/golden/pictures/%s.%s", cases[c],
				 md ? "md" : "txt");
			compare_golden(golden, r.out, true);
			tu_result_free(&r);
		}
	}
	tu_rmtree(dir);
}
END_TEST

/* docs/pictures.md shows docs/img's copies of two goldens. */
START_TEST(picture_docs_images_equal_their_goldens)
{
	static const char *const names[] = {
		"seed_2x4_rowwise_after_reduce.fc.out.svg",
		"mesh_2d_dp_tp.fc1.weight.svg",
	};
	for (size_t i = 0; i < 2; i++) {
		char doc[256], golden[256];
		char *a, *b;
		snprintf(doc, sizeof doc, "docs/img/%s", names[i]);
		snprintf(golden, sizeof golden, "tests/golden/pictures/%s",
			 names[i]);
		a = tu_read_file(tu_source_path(doc), NULL);
		b = tu_read_file(tu_source_path(golden), NULL);
		ck_assert_msg(a && b && strcmp(a, b) == 0,
			      "%s differs from %s: cp %s %s", doc, golden,
			      golden, doc);
		free(a);
		free(b);
	}
}
END_TEST

START_TEST(picture_filters_follow_explain_step_module_and_phase)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "mesh_2d_dp_tp", NULL);
	struct tu_result r = tu_cli(8, "explain", trace, "--pictures",
				    "--module", "fc2", "--phase", "forward");
	ck_assert_int_eq(r.rc, 0);
	assert_has(r.out, "sharding of fc2.out, 2 blocks:");
	assert_lacks(r.out, "sharding of fc1");
	assert_lacks(r.out, "sharding of fc2.weight");
	tu_result_free(&r);
	r = tu_cli(3, "explain", trace);
	assert_lacks(r.out, "sharding of");
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

START_TEST(picture_is_byte_identical_across_runs)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "mesh_2d_dp_tp", NULL);
	char a_path[1024], b_path[1024];
	char *a, *b;
	size_t a_len, b_len;
	struct tu_result r;
	snprintf(a_path, sizeof a_path, "%s/a.svg", dir);
	snprintf(b_path, sizeof b_path, "%s/b.svg", dir);
	r = tu_cli(7, "picture", trace, "--tensor", "fc2.out", "-o", a_path);
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	r = tu_cli(7, "picture", trace, "--tensor", "fc2.out", "-o", b_path);
	ck_assert_int_eq(r.rc, 0);
	ck_assert_uint_eq(r.out_len, 0); /* -o FILE: nothing on stdout */
	tu_result_free(&r);
	a = tu_read_file(a_path, &a_len);
	b = tu_read_file(b_path, &b_len);
	ck_assert_uint_eq(a_len, b_len);
	ck_assert_int_eq(memcmp(a, b, a_len), 0);
	free(a);
	free(b);
	tu_rmtree(dir);
}
END_TEST

/* Without --event, the tensor's first event: for a parameter its setup
 * distribute; for fc2.out the forward matmul (seq 8), before any
 * redistribution. */
START_TEST(picture_without_event_draws_the_tensors_first_event)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "mesh_2d_dp_tp", NULL);
	struct tu_result r = tu_cli(5, "picture", trace, "--tensor", "fc2.out");
	ck_assert_int_eq(r.rc, 0);
	assert_has(r.out, "<desc>[8] matmul: global (2, 2), placements "
			  "[shard(0), partial] on mesh (2, 2) named (dp, "
			  "tp)</desc>");
	tu_result_free(&r);
	r = tu_cli(7, "picture", trace, "--tensor", "fc2.out", "--event", "9");
	ck_assert_int_eq(r.rc, 0);
	assert_has(r.out, "<desc>[9] all_reduce:");
	tu_result_free(&r);
	r = tu_cli(5, "picture", trace, "--tensor", "fc1.weight");
	assert_has(r.out, "<desc>[0] distribute:");
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* A trace whose event 5 has a placement tpsim never writes. */
static void write_bad_trace(const char *good, const char *bad)
{
	char *text = tu_read_file(good, NULL);
	char *at = strstr(text, "\"placements\":[\"shard(0)\",\"shard(1)\"]");
	ck_assert_ptr_nonnull(at);
	memcpy(at + 14, "\"spread!\" ", 10);
	tu_write_file(bad, text, strlen(text));
	free(text);
}

START_TEST(picture_refuses_bad_arguments_with_one_line)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "mesh_2d_dp_tp", NULL);
	char bad[1024], missing[1024], into_dir[1024];
	struct row {
		int argc;
		const char *argv[8];
		int lines; /* usage errors add the hint line */
		const char *message;
	};
	snprintf(bad, sizeof bad, "%s/bad.json", dir);
	snprintf(missing, sizeof missing, "%s/no/such/dir/x.svg", dir);
	snprintf(into_dir, sizeof into_dir, "%s/", dir);
	write_bad_trace(trace, bad);
	const struct row rows[] = {
		{2, {"picture", trace}, 2, "picture: missing --tensor NAME"},
		{3,
		 {"picture", "--tensor", "fc1.weight"},
		 2,
		 "picture: expected TRACE"},
		{3,
		 {"picture", trace, "--tensor"},
		 2,
		 "picture: --tensor needs a name"},
		{5,
		 {"picture", trace, "--tensor", "fc1.weight", "extra"},
		 2,
		 "picture: unexpected argument 'extra'"},
		{5,
		 {"picture", trace, "--tensor", "fc1.weight", "--bogus"},
		 2,
		 "picture: unknown option '--bogus'"},
		{6,
		 {"picture", trace, "--tensor", "fc1.weight", "--event", "x"},
		 2,
		 "picture: --event needs an event's seq (0, 1, ...), got 'x'"},
		{6,
		 {"picture", trace, "--tensor", "fc1.weight", "--event", "-1"},
		 2,
		 "got '-1'"},
		{5,
		 {"picture", trace, "--tensor", "fc1.weight", "-o"},
		 2,
		 "picture: -o needs a file"},
		{4,
		 {"picture", trace, "--tensor", "fc9.weight"},
		 1,
		 "/mesh_2d_dp_tp.json: /events: no event produces the tensor "
		 "\"fc9.weight\""},
		{6,
		 {"picture", trace, "--tensor", "fc1.weight", "--event", "99"},
		 1,
		 "/mesh_2d_dp_tp.json: /events: no event has seq 99 (--event)"},
		{6,
		 {"picture", trace, "--tensor", "fc1.weight", "--event", "8"},
		 1,
		 "/mesh_2d_dp_tp.json: /events/8/tensor: event 8 produces "
		 "\"fc2.out\", not \"fc1.weight\" (--tensor)"},
		{4,
		 {"picture", bad, "--tensor", "fc1.out"},
		 1,
		 "/bad.json: /events/5/placements/0: expected replicate, "
		 "partial or shard(d)"},
		{6,
		 {"picture", trace, "--tensor", "fc1.weight", "-o", trace},
		 1,
		 "/mesh_2d_dp_tp.json: -o names the input "},
		{6,
		 {"picture", trace, "--tensor", "fc1.weight", "-o", into_dir},
		 1,
		 "is a directory (-o names the SVG file)"},
		{6,
		 {"picture", trace, "--tensor", "fc1.weight", "-o", missing},
		 1,
		 "/no/such/dir/x.svg: cannot write: No such file or directory"},
		{4,
		 {"picture", "/nonexistent/t.json", "--tensor", "fc"},
		 1,
		 "/nonexistent/t.json"},
		{4,
		 {"explain", trace, "--pictures", "extra"},
		 2,
		 "explain: unexpected argument 'extra'"},
		{3,
		 {"explain", bad, "--pictures"},
		 1,
		 "/bad.json: /events/5/placements/0: expected replicate, "
		 "partial or shard(d)"},
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
	/* The trace bad.json was edited from is fine, so the rows fail for
	 * their own reason. (A trace with one bad event is refused whole,
	 * whichever tensor is drawn: trace.h, tps_trace_validate.) */
	{
		struct tu_result r =
			tu_cli(5, "picture", trace, "--tensor", "fc1.weight");
		ck_assert_msg(r.rc == 0, "%s", r.err);
		tu_result_free(&r);
	}
	tu_rmtree(dir);
}
END_TEST

/* Nothing in dir but the listed files. */
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

START_TEST(picture_leaves_no_partial_file_and_keeps_the_old_one_on_error)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "seed_2x4_colwise", NULL);
	char out_dir[1024], svg[1100], *kept;
	struct tu_result r;
	snprintf(out_dir, sizeof out_dir, "%s/out", dir);
	ck_assert_int_eq(mkdir(out_dir, 0777), 0);
	snprintf(svg, sizeof svg, "%s/fc.svg", out_dir);
	tu_write_file(svg, "old", 3);
	r = tu_cli(7, "picture", trace, "--tensor", "nope", "-o", svg);
	ck_assert_int_eq(r.rc, 2);
	tu_result_free(&r);
	kept = tu_read_file(svg, NULL);
	ck_assert_str_eq(kept, "old");
	free(kept);
	ck_assert_int_eq(count_entries(out_dir), 1);
	r = tu_cli(7, "picture", trace, "--tensor", "fc.weight", "-o", svg);
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	kept = tu_read_file(svg, NULL);
	assert_has(kept, "<svg ");
	free(kept);
	ck_assert_int_eq(count_entries(out_dir), 1); /* no .tmp left */
	r = tu_cli(7, "picture", trace, "--tensor", "fc.weight", "-o",
		   "/dev/null");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* Every attribute that starts with a digit is a whole number: "12", never
 * "12.5" or "1e3". */
static void assert_whole_numbers_only(const char *svg)
{
	/* past <?xml version="1.0" and <svg version="1.1" */
	const char *body = strstr(svg, "version=\"1.1\"");
	ck_assert_ptr_nonnull(body);
	body += strlen("version=\"1.1\"");
	for (const char *p = strstr(body, "=\""); p; p = strstr(p + 1, "=\"")) {
		const char *q = p + 2;
		while (*q == '-' || (*q >= '0' && *q <= '9')) {
			q++;
		}
		ck_assert_msg(q == p + 2 || *q == '"' || *q == ' ',
			      "a fraction at: %.40s", p);
	}
}

START_TEST(picture_svg_has_titles_integer_coordinates_and_a_legend)
{
	const char *dir = tu_tempdir();
	const char *trace =
		trace_of(dir, "seed_2x4_rowwise_after_reduce", NULL);
	struct tu_result r = tu_cli(7, "picture", trace, "--tensor", "fc.out",
				    "--event", "3");
	ck_assert_int_eq(r.rc, 0);
	assert_has(r.out, "<title>Sharding of fc.out</title>");
	assert_has(r.out, "<title>A+ rows 0-1, cols 0-1: ranks 0,1 (partial "
			  "sum over tp)</title>");
	assert_has(r.out, "stroke-dasharray=\"6 3\"");
	assert_has(r.out, "url(#partial-hatch)");
	assert_has(r.out, ">Legend</text>");
	assert_has(r.out, "font-family=\"monospace\"");
	assert_lacks(r.out, "<script");
	assert_whole_numbers_only(r.out);
	/* (2, 2) at 48px cells with row numbers: 96 x 96 from (48, 84), in
	 * the partial kind's fill, hatched, its border dashed in its line
	 * colour: the viewer's orange, not a rank's colour. */
	assert_has(r.out, "<rect x=\"48\" y=\"84\" width=\"96\" "
			  "height=\"96\" fill=\"#fff3ea\"/>\n<rect x=\"48\" "
			  "y=\"84\" width=\"96\" height=\"96\" "
			  "fill=\"url(#partial-hatch)\"/>");
	assert_has(r.out, "stroke=\"#b8560b\" stroke-width=\"2\" "
			  "stroke-dasharray=\"6 3\"/>");
	assert_has(r.out, "y2=\"8\" stroke=\"#b8560b\"");
	assert_lacks(r.out, "#8dd3c7");
	/* The legend speaks of the kinds the tensor has, as text does. */
	assert_has(r.out, ">partial sum over tp: every rank listed holds a "
			  "full-size addend (a name ending in +, A+), and "
			  "the block's value is their sum over the "
			  "group</text>");
	assert_lacks(r.out, "replicate");
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* The SVG legend's swatches of a tensor sharded over tp and replicated
 * over dp differ: each is drawn as its kind's blocks are. */
START_TEST(picture_svg_legend_draws_each_kind_apart)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "mesh_2d_dp_tp", NULL);
	struct tu_result r =
		tu_cli(5, "picture", trace, "--tensor", "fc1.weight");
	const char *legend;
	ck_assert_int_eq(r.rc, 0);
	legend = strstr(r.out, ">Legend</text>");
	ck_assert_ptr_nonnull(legend);
	assert_has(legend, "fill=\"#e6eef8\"/>\n<rect x=\"16\" y=\"");
	assert_has(legend, "fill=\"none\" stroke=\"#0b5cad\" "
			   "stroke-width=\"2\"/>\n<text x=\"40\" y=\"");
	assert_has(legend, ">shard over tp: a block of the tensor that only "
			   "the ranks listed hold</text>");
	assert_has(legend, "fill=\"#eef5ee\"/>");
	assert_has(legend, "stroke=\"#2f6b3a\"");
	assert_has(legend, ">replicate over dp: every rank listed holds the "
			   "same copy of its block</text>");
	assert_lacks(legend, "partial");
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/*
 * One scheme: tpsim view's stylesheet holds picture.h's colours, as CSS
 * variables named after the kinds, and its script the same legend words;
 * no two kinds share a fill or a line.
 */
START_TEST(viewer_uses_the_pictures_colours_and_legend)
{
	static const char *const keys[TPS_PICTURE_KINDS] = {
		[TPS_PICTURE_SHARD] = "shard",
		[TPS_PICTURE_REPLICATE] = "replicate",
		[TPS_PICTURE_PARTIAL] = "partial",
	};
	char *css = tu_read_file(tu_source_path("src/trace/viewer/viewer.css"), NULL);
	char *js = tu_read_file(tu_source_path("src/trace/viewer/viewer.js"), NULL);
	ck_assert_ptr_nonnull(css);
	ck_assert_ptr_nonnull(js);
	for (int k = 0; k < TPS_PICTURE_KINDS; k++) {
		const struct tps_picture_style *st = &tps_picture_styles[k];
		char want[256];
		snprintf(want, sizeof want, "--%s-fill: %s;", keys[k],
			 st->fill);
		assert_has(css, want);
		snprintf(want, sizeof want, "--%s-line: %s;", keys[k],
			 st->line);
		assert_has(css, want);
		snprintf(want, sizeof want, "kind: \"%s\", name: \"%s\"",
			 keys[k], st->name);
		assert_has(js, want);
		/* The sentence, which the script may split across lines
		 * only at its last clause. */
		snprintf(want, sizeof want, "%.60s", st->legend);
		assert_has(js, want);
		for (int j = 0; j < k; j++) {
			ck_assert_str_ne(st->fill, tps_picture_styles[j].fill);
			ck_assert_str_ne(st->line, tps_picture_styles[j].line);
		}
	}
	free(css);
	free(js);
}
END_TEST

static Suite *picture_suite(void)
{
	Suite *s = suite_create("picture");
	TCase *labels = tcase_create("labels");
	TCase *golden = tcase_create("golden");
	TCase *cli_tc = tcase_create("cli");
	tcase_add_test(labels,
		       picture_labels_the_colwise_weight_as_derived_by_hand);
	tcase_add_test(labels, picture_shows_both_mesh_dims_of_a_2d_mesh);
	tcase_add_test(labels, picture_marks_partial_apart_from_replicate);
	tcase_add_test(labels, picture_labels_block_shards_by_whole_heads);
	tcase_add_test(labels,
		       picture_refuses_blocks_that_do_not_divide_the_dim);
	tcase_add_test(
		labels,
		picture_draws_uneven_shards_as_the_chunk_rule_gives_them);
	tcase_add_test(
		labels,
		picture_lists_an_empty_shard_as_empty_and_draws_nothing_for_it);
	tcase_add_test(
		labels,
		picture_draws_the_last_two_dims_with_a_panel_per_leading_range);
	tcase_add_test(
		golden,
		picture_svg_matches_golden_for_the_2x4_and_2d_mesh_examples);
	tcase_add_test(golden, explain_pictures_match_golden_text_and_md);
	tcase_add_test(golden, picture_docs_images_equal_their_goldens);
	tcase_add_test(golden,
		       picture_svg_has_titles_integer_coordinates_and_a_legend);
	tcase_add_test(golden, picture_svg_legend_draws_each_kind_apart);
	tcase_add_test(golden, viewer_uses_the_pictures_colours_and_legend);
	tcase_add_test(cli_tc,
		       picture_filters_follow_explain_step_module_and_phase);
	tcase_add_test(cli_tc, picture_is_byte_identical_across_runs);
	tcase_add_test(cli_tc,
		       picture_without_event_draws_the_tensors_first_event);
	tcase_add_test(cli_tc, picture_refuses_bad_arguments_with_one_line);
	tcase_add_test(
		cli_tc,
		picture_leaves_no_partial_file_and_keeps_the_old_one_on_error);
	suite_add_tcase(s, labels);
	suite_add_tcase(s, golden);
	suite_add_tcase(s, cli_tc);
	return s;
}

int main(void)
{
	return tu_run_suite(picture_suite());
}
