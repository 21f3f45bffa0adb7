/* trace: the document tpsim run writes, end to end through tps_run. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "testutil.h"
#include "dtensor.h"
#include "jsonio.h"
#include "run.h"
#include "trace.h"

static const char mlp_config[] =
	"{\"tpsim\": 1, \"mesh\": {\"shape\": [2, 2], \"dim_names\": "
	"[\"dp\", \"tp\"]}, \"dp_dim\": \"dp\",\n"
	" \"model\": [{\"name\": \"fc1\", \"type\": \"linear\", "
	"\"in_features\": 4, \"out_features\": 6},\n"
	"  {\"name\": \"act\", \"type\": \"gelu\"},\n"
	"  {\"name\": \"fc2\", \"type\": \"linear\", \"in_features\": 6, "
	"\"out_features\": 3}],\n"
	" \"plan\": {\"fc1\": \"colwise\", \"fc2\": {\"style\": \"rowwise\", "
	"\"bias\": \"partial_split\"}},\n"
	" \"input\": {\"shape\": [3, 4], \"seed\": 5}, \"init\": {\"method\": "
	"\"normal\", \"seed\": 9}%s}";

/* Writes config text (with `extra` spliced in) and runs it to out_path. */
static enum tps_status run_text(const char *dir, const char *extra,
				const char *out_path, struct tps_run_summary *s,
				struct tps_error *err)
{
	char cfg_path[512], text[4096];
	struct tps_run_options opts = {
		.config_path = cfg_path,
		.output_path = out_path,
		.max_memory = TPS_DEFAULT_MAX_MEMORY,
		.max_trace = TPS_DEFAULT_MAX_TRACE,
	};
	snprintf(cfg_path, sizeof cfg_path, "%s/cfg.json", dir);
	snprintf(text, sizeof text, mlp_config, extra);
	tu_write_file(cfg_path, text, strlen(text));
	return tps_run(&opts, stdout, s, err);
}

START_TEST(same_config_gives_byte_identical_traces)
{
	const char *dir = tu_tempdir();
	char a[512], b[512];
	struct tps_run_summary s;
	struct tps_error err = {0};
	char *ta, *tb;
	size_t la, lb;
	snprintf(a, sizeof a, "%s/a.json", dir);
	snprintf(b, sizeof b, "%s/b.json", dir);
	ck_assert_msg(run_text(dir, "", a, &s, &err) == TPS_OK, "%s",
		      err.message);
	ck_assert(s.match);
	ck_assert_msg(run_text(dir, "", b, &s, &err) == TPS_OK, "%s",
		      err.message);
	ta = tu_read_file(a, &la);
	tb = tu_read_file(b, &lb);
	ck_assert_uint_eq(la, lb);
	ck_assert_mem_eq(ta, tb, la);
	free(ta);
	free(tb);
	tu_rmtree(dir);
}
END_TEST

START_TEST(trace_is_strict_json_with_keys_in_order)
{
	static const char *const order[] = {
		"format", "version", "generator", "config", "mesh",
		"params", "inputs",  "events",	  "result", "comm"};
	const char *dir = tu_tempdir();
	char path[512];
	struct tps_run_summary s;
	cJSON *root = NULL, *item, *ev;
	int i = 0;
	snprintf(path, sizeof path, "%s/t.json", dir);
	ck_assert_int_eq(run_text(dir, "", path, &s, NULL), TPS_OK);
	ck_assert_int_eq(
		tps_json_load(path, TPS_JSON_MAX_TRACE_BYTES, &root, NULL),
		TPS_OK);
	cJSON_ArrayForEach(item, root)
	{
		ck_assert_str_eq(item->string, order[i++]);
	}
	ck_assert_int_eq(i, 10);
	/* Every event has seq in order; collectives carry groups and bytes;
	 * ranks are listed in rank order. */
	i = 0;
	cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "events"))
	{
		const char *kind = cJSON_GetObjectItem(ev, "kind")->valuestring;
		cJSON *ranks = cJSON_GetObjectItem(ev, "ranks"), *r;
		int k = 0;
		ck_assert_int_eq(cJSON_GetObjectItem(ev, "seq")->valueint, i++);
		if (strcmp(kind, "collective") == 0) {
			ck_assert_ptr_nonnull(
				cJSON_GetObjectItem(ev, "groups"));
			ck_assert_ptr_nonnull(
				cJSON_GetObjectItem(ev, "bytes_per_rank"));
		}
		ck_assert_int_eq(cJSON_GetArraySize(ranks), 4);
		cJSON_ArrayForEach(r, ranks)
		{
			ck_assert_int_eq(
				cJSON_GetObjectItem(r, "rank")->valueint, k++);
		}
	}
	/* 4 params (fc1 w/b shard(0), fc2 w shard(1), b replicate). */
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(root, "params")), 4);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(
		cJSON_GetObjectItem(root, "result"), "match")));
	/* One all_reduce in the forward (fc2), nothing else moved. */
	item = cJSON_GetObjectItem(root, "comm");
	ck_assert_int_eq(cJSON_GetObjectItem(item, "collectives")->valueint, 1);
	cJSON_Delete(root);
	tu_rmtree(dir);
}
END_TEST

/* XXH3-64 of bytes, from the xxHash library itself (docs/design.md section 5),
 * not through tpsim's trace writer. */
static unsigned long long xxh3(const unsigned char *p, size_t n)
{
	return (unsigned long long)XXH3_64bits(p, n);
}

START_TEST(summary_mode_replaces_values_with_stats_and_hash)
{
	/* The input is arange (3, 4) in this config: 1..12. Its hash is
	 * XXH3-64 of the little-endian float32 bytes of 1.0f .. 12.0f. */
	const char *dir = tu_tempdir();
	char path[512], want[32];
	unsigned char bytes[48];
	struct tps_run_summary s;
	cJSON *root = NULL, *in;
	snprintf(path, sizeof path, "%s/t.json", dir);
	ck_assert_int_eq(run_text(dir,
				  ", \"trace\": {\"values\": "
				  "\"summary\"}, \"params\": {}",
				  path, &s, NULL),
			 TPS_OK);
	ck_assert_int_eq(
		tps_json_load(path, TPS_JSON_MAX_TRACE_BYTES, &root, NULL),
		TPS_OK);
	in = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "inputs"), "input");
	ck_assert_ptr_null(cJSON_GetObjectItem(in, "values"));
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(in, "min"));
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(in, "mean"));
	cJSON_Delete(root);
	tu_rmtree(dir);

	dir = tu_tempdir();
	snprintf(path, sizeof path, "%s/t.json", dir);
	{
		char cfg[512], *text;
		const char *c =
			"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], "
			"\"dim_names\": [\"tp\"]}, \"model\": [{\"name\": "
			"\"fc\", \"type\": \"linear\", \"in_features\": 4, "
			"\"out_features\": 2}], \"plan\": {\"fc\": "
			"\"colwise\"}, \"input\": {\"shape\": [3, 4], "
			"\"init\": \"arange\"}, \"trace\": {\"values\": "
			"\"summary\"}}";
		struct tps_run_options opts = {
			.config_path = cfg,
			.output_path = path,
			.max_memory = TPS_DEFAULT_MAX_MEMORY,
			.max_trace = TPS_DEFAULT_MAX_TRACE,
		};
		snprintf(cfg, sizeof cfg, "%s/c.json", dir);
		tu_write_file(cfg, c, strlen(c));
		ck_assert_int_eq(tps_run(&opts, stdout, &s, NULL), TPS_OK);
		for (int i = 0; i < 12; i++) {
			float f = (float)(i + 1);
			unsigned int bits;
			memcpy(&bits, &f, 4);
			for (int b = 0; b < 4; b++) {
				bytes[4 * i + b] =
					(unsigned char)(bits >> (8 * b));
			}
		}
		snprintf(want, sizeof want, "%016llx", xxh3(bytes, 48));
		ck_assert_int_eq(tps_json_load(path, TPS_JSON_MAX_TRACE_BYTES,
					       &root, NULL),
				 TPS_OK);
		in = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "inputs"),
					 "input");
		ck_assert_str_eq(cJSON_GetObjectItem(in, "hash")->valuestring,
				 want);
		ck_assert_int_eq(cJSON_GetObjectItem(in, "min")->valueint, 1);
		ck_assert_int_eq(cJSON_GetObjectItem(in, "max")->valueint, 12);
		ck_assert_double_eq(
			cJSON_GetObjectItem(in, "mean")->valuedouble, 6.5);
		cJSON_Delete(root);
		text = tu_read_file(path, NULL);
		ck_assert_ptr_null(strstr(text, "\"values\":["));
		free(text);
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
		n += e->d_name[0] != '.';
	}
	closedir(d);
	return n;
}

START_TEST(nan_stops_the_run_and_leaves_no_file)
{
	/* fc1's bias of 3e38 passes gelu unchanged; fc2's weight of ones
	 * then sums three of them per rank: 9e38 overflows float32. */
	const char *dir = tu_tempdir();
	char path[512];
	struct tps_run_summary s;
	struct tps_error err = {0};
	snprintf(path, sizeof path, "%s/t.json", dir);
	ck_assert_int_eq(run_text(dir,
				  ", \"params\": {\"fc1.bias\": "
				  "[3e38, 3e38, 3e38, 3e38, 3e38, 3e38], "
				  "\"fc2.weight\": [[1, 1, 1, 1, 1, 1], "
				  "[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]]}",
				  path, &s, &err),
			 TPS_ERR_NUMERIC);
	ck_assert_ptr_nonnull(strstr(err.message, "Inf in fc2.out"));
	ck_assert_ptr_nonnull(strstr(err.message, "(forward fc2 matmul)"));
	ck_assert_int_ne(access(path, F_OK), 0);
	/* Nor a temporary: only the config is left in the directory. */
	ck_assert_int_eq(count_entries(dir), 1);
	tu_rmtree(dir);
}
END_TEST

START_TEST(inf_in_a_matmul_names_the_event)
{
	const char *dir = tu_tempdir();
	char cfg[512], path[512];
	struct tps_run_summary s;
	struct tps_error err = {0};
	struct tps_run_options opts = {
		.config_path = cfg,
		.output_path = path,
		.max_memory = TPS_DEFAULT_MAX_MEMORY,
		.max_trace = TPS_DEFAULT_MAX_TRACE,
	};
	const char *c =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], "
		"\"dim_names\": [\"tp\"]}, \"model\": [{\"name\": \"fc\", "
		"\"type\": \"linear\", \"in_features\": 2, \"out_features\": 2,"
		" \"bias\": false}], \"plan\": {\"fc\": \"colwise\"}, "
		"\"input\": {\"shape\": [1, 2], \"init\": \"arange\"}, "
		"\"params\": {\"fc.weight\": [[3e38, 3e38], [1, 1]]}}";
	snprintf(cfg, sizeof cfg, "%s/c.json", dir);
	snprintf(path, sizeof path, "%s/t.json", dir);
	tu_write_file(cfg, c, strlen(c));
	tu_write_file(path, "old", 3);
	ck_assert_int_eq(tps_run(&opts, stdout, &s, &err), TPS_ERR_NUMERIC);
	ck_assert_ptr_nonnull(strstr(err.message, "Inf in fc.out on rank 0"));
	ck_assert_ptr_nonnull(strstr(err.message, "seq 1 (forward fc matmul)"));
	ck_assert_ptr_nonnull(strstr(err.message, "c.json"));
	/* The existing output is only replaced on success. */
	{
		char *text = tu_read_file(path, NULL);
		ck_assert_str_eq(text, "old");
		free(text);
	}
	tu_rmtree(dir);
}
END_TEST

START_TEST(inf_in_a_collective_is_worded_as_in_a_matmul)
{
	/* Each rank's partial sum is 3e38, finite; the all_reduce adds them
	 * to Inf. The message has the one form of every NaN/Inf message:
	 * "<file>: Inf in <tensor> on rank R (element E) at event seq S
	 * (<phase> <module> <op>)", without a module prefix of its own. */
	const char *dir = tu_tempdir();
	char cfg[512], path[512];
	struct tps_run_summary s;
	struct tps_error err = {0};
	struct tps_run_options opts = {
		.config_path = cfg,
		.output_path = path,
		.max_memory = TPS_DEFAULT_MAX_MEMORY,
		.max_trace = TPS_DEFAULT_MAX_TRACE,
	};
	const char *c =
		"{\"tpsim\": 1, \"mesh\": {\"shape\": [2], "
		"\"dim_names\": [\"tp\"]}, \"model\": [{\"name\": \"fc\", "
		"\"type\": \"linear\", \"in_features\": 2, \"out_features\": 1,"
		" \"bias\": false}], \"plan\": {\"fc\": \"rowwise\"}, "
		"\"input\": {\"shape\": [1, 2], \"init\": \"ones\"}, "
		"\"params\": {\"fc.weight\": [[3e38, 3e38]]}}";
	char want[600];
	snprintf(cfg, sizeof cfg, "%s/c.json", dir);
	snprintf(path, sizeof path, "%s/t.json", dir);
	tu_write_file(cfg, c, strlen(c));
	ck_assert_int_eq(tps_run(&opts, stdout, &s, &err), TPS_ERR_NUMERIC);
	snprintf(want, sizeof want,
		 "%s: Inf in fc.out on rank 0 (element 0) at event seq 3 "
		 "(forward fc all_reduce)",
		 cfg);
	ck_assert_str_eq(err.message, want);
	tu_rmtree(dir);
}
END_TEST

START_TEST(inf_is_found_in_every_values_mode_at_any_thread_count)
{
	/* Summary mode finds Inf from the double sum of the values, the
	 * others scan for it; a pool finds every rank's at once. The
	 * message must be the same in every case. x = arange (3, 1) = 1, 2, 3,
	 * W =
	 * [[1], [2], [3], [3e38]], colwise over 2: rank 1 holds columns
	 * 2-3 of y, and y[1][3] = 2 x 3e38 = Inf is its element 3; rank 0
	 * is finite. */
	static const char *const modes[] = {"full", "summary", "none"};
	static const int threads[] = {1, 3};
	const char *dir = tu_tempdir();
	char cfg[512], path[512], c[1024], first[TPS_ERROR_MESSAGE_MAX];
	struct tps_run_summary s;
	snprintf(cfg, sizeof cfg, "%s/c.json", dir);
	snprintf(path, sizeof path, "%s/t.json", dir);
	for (int m = 0; m < 3; m++) {
		for (int t = 0; t < 2; t++) {
			struct tps_error err = {0};
			struct tps_run_options opts = {
				.config_path = cfg,
				.output_path = path,
				.max_memory = TPS_DEFAULT_MAX_MEMORY,
				.max_trace = TPS_DEFAULT_MAX_TRACE,
				.threads = threads[t],
			};
			snprintf(c, sizeof c,
				 "{\"tpsim\": 1, \"mesh\": {\"shape\": [2], "
				 "\"dim_names\": [\"tp\"]}, \"model\": "
				 "[{\"name\": \"fc\", \"type\": \"linear\", "
				 "\"in_features\": 1, \"out_features\": 4, "
				 "\"bias\": false}], \"plan\": {\"fc\": "
				 "\"colwise\"}, \"input\": {\"shape\": [3, 1], "
				 "\"init\": \"arange\"}, \"params\": "
				 "{\"fc.weight\": [[1], [2], [3], [3e38]]}, "
				 "\"trace\": {\"values\": \"%s\"}}",
				 modes[m]);
			tu_write_file(cfg, c, strlen(c));
			ck_assert_int_eq(tps_run(&opts, stdout, &s, &err),
					 TPS_ERR_NUMERIC);
			ck_assert_msg(strstr(err.message,
					     ": Inf in fc.out on rank 1 "
					     "(element 3) at event seq "),
				      "%s", err.message);
			if (m == 0 && t == 0) {
				snprintf(first, sizeof first, "%s",
					 err.message);
			}
			ck_assert_str_eq(err.message, first);
			ck_assert_int_ne(access(path, F_OK), 0);
		}
	}
	tu_rmtree(dir);
}
END_TEST

/* The comm counts are sums over the run: one past 2^63 bytes per rank
 * (many steps of collectives of meta tensors up to 2^48 elements) is an
 * error, not a wrapped (negative) count in the trace. */
START_TEST(comm_counts_past_int64_are_an_error)
{
	static const int shape[] = {2};
	static const char *const names[] = {"tp"};
	struct tps_placement pl[1] = {tps_placement_replicate()};
	struct tps_shape dims = tps_shape_make(1, (const int64_t[]){4});
	struct tps_tensor *locals = calloc(2, sizeof *locals);
	struct tps_mesh mesh;
	struct tps_dtensor v = {0};
	struct tps_trace t;
	struct tps_error err = {0};
	struct tps_event ev = {.step = 0,
			       .phase = TPS_PHASE_FORWARD,
			       .kind = TPS_EVENT_COLLECTIVE,
			       .module = "fc",
			       .op = "all_reduce",
			       .tensor = "fc.out",
			       .mask = 1u,
			       .bytes_per_rank = (int64_t)1 << 62,
			       .value = &v};
	FILE *out = tmpfile();
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(locals);
	ck_assert_int_eq(tps_mesh_init(&mesh, 1, shape, names, &err), TPS_OK);
	for (int r = 0; r < 2; r++) {
		ck_assert_int_eq(tps_tensor_init_meta(&locals[r], &dims, &err),
				 TPS_OK);
	}
	tps_dtensor_wrap(&v, &mesh, &dims, pl, locals);
	tps_trace_init(&t, out, TPS_TRACE_VALUES_NONE, &mesh);
	ck_assert_int_eq(tps_event_emit(tps_trace_sink(&t), &ev, &err), TPS_OK);
	ev.bytes_per_rank = INT64_MAX - ((int64_t)1 << 62) + 1;
	ck_assert_int_eq(tps_event_emit(tps_trace_sink(&t), &ev, &err),
			 TPS_ERR_LIMIT);
	ck_assert_str_eq(err.message,
			 "the run's collectives pass 2^63 bytes per rank at "
			 "event seq 1 (forward fc all_reduce), past what the "
			 "trace's comm counts hold");
	tps_trace_free(&t);
	tps_dtensor_free(&v);
	fclose(out);
}
END_TEST

START_TEST(placement_strings_round_trip_and_block_one_is_unchanged)
{
	/* format then parse gives the placement back, for a 4-dim tensor. */
	const int64_t blocks[5] = {1, 2, 3, 64, (int64_t)1 << 31};
	struct tps_placement p, back;
	char buf[32];
	for (int d = 0; d < 4; d++) {
		for (int b = 0; b < 5; b++) {
			p = tps_placement_shard_blocks(d, blocks[b]);
			tps_placement_format(p, buf, sizeof buf);
			ck_assert_msg(tps_placement_parse(buf, 4, &back), "%s",
				      buf);
			ck_assert_msg(tps_placement_equal(p, back), "%s", buf);
		}
	}
	ck_assert_str_eq(
		tps_placement_format(tps_placement_shard(1), buf, sizeof buf),
		"shard(1)");
	ck_assert_str_eq(tps_placement_format(tps_placement_shard_blocks(1, 1),
					      buf, sizeof buf),
			 "shard(1)");
	ck_assert_str_eq(tps_placement_format(tps_placement_shard_blocks(2, 4),
					      buf, sizeof buf),
			 "shard(2,block=4)");
	ck_assert_str_eq(tps_placement_format(tps_placement_shard_blocks(
						      3, (int64_t)1 << 31),
					      buf, sizeof buf),
			 "shard(3,block=2147483648)");
	ck_assert(tps_placement_parse("replicate", 2, &back));
	ck_assert(tps_placement_equal(back, tps_placement_replicate()));
	ck_assert(tps_placement_parse("partial", 2, &back));
	ck_assert(tps_placement_equal(back, tps_placement_partial()));
	/* Negative dims count from the end and are normalised. */
	ck_assert(tps_placement_parse("shard(-1,block=2)", 3, &back));
	ck_assert(tps_placement_equal(back, tps_placement_shard_blocks(2, 2)));
	/* block=1 is read, though never written. */
	ck_assert(tps_placement_parse("shard(0,block=1)", 1, &back));
	ck_assert(tps_placement_equal(back, tps_placement_shard(0)));
	/* A flat shard (the batch over several dp dims) is its own
	 * placement: not shard(0). */
	ck_assert_str_eq(tps_placement_format(tps_placement_shard_flat(0), buf,
					      sizeof buf),
			 "shard(0,flat)");
	ck_assert(tps_placement_parse("shard(0,flat)", 2, &back));
	ck_assert(tps_placement_equal(back, tps_placement_shard_flat(0)));
	ck_assert(!tps_placement_equal(back, tps_placement_shard(0)));
	ck_assert(tps_placement_parse("shard(-2,flat)", 3, &back));
	ck_assert(tps_placement_equal(back, tps_placement_shard_flat(1)));
	/* ZeRO's shard of a rank's local tensor (docs/zero.md), over one
	 * dp dim or a flattened group: neither shard(0) nor flat. */
	ck_assert_str_eq(
		tps_placement_format(tps_placement_shard_local(0, false), buf,
				     sizeof buf),
		"shard(0,local)");
	ck_assert_str_eq(
		tps_placement_format(tps_placement_shard_local(1, true), buf,
				     sizeof buf),
		"shard(1,flat,local)");
	ck_assert(tps_placement_parse("shard(0,local)", 2, &back));
	ck_assert(
		tps_placement_equal(back, tps_placement_shard_local(0, false)));
	ck_assert(!tps_placement_equal(back, tps_placement_shard(0)));
	ck_assert(tps_placement_parse("shard(-1,flat,local)", 2, &back));
	ck_assert(
		tps_placement_equal(back, tps_placement_shard_local(1, true)));
	ck_assert(!tps_placement_equal(back, tps_placement_shard_flat(1)));
}
END_TEST

START_TEST(placement_parse_refuses_other_spellings_and_keeps_the_output)
{
	static const char *const bad[] = {
		"shard(1,block=0)",
		"shard(1,block=)",
		"shard(1, block=2)",
		"shard(1,block=02)",
		"shard(1,blocks=2)",
		"shard(1,block=2",
		"shard(1,block=-2)",
		"shard(1,block=2)x",
		"shard(1)/2",
		"shard(1,block=2147483649)",
		"shard(2)",
		"shard(-3)",
		"shard( 1)",
		"shard(+1)",
		"shard()",
		"Shard(1)",
		"shard(01)",
		"shard(1,flat",
		"shard(1,Flat)",
		"shard(1, flat)",
		"shard(1,flat,block=2)",
		"shard(1,block=2,flat)",
		"shard(1,flat)x",
		"shard(1,local,flat)",
		"shard(1,local",
		"shard(1,local,block=2)",
		"shard(1,block=2,local)",
		"shard(1,flat,local,block=2)",
		"shard(1,flat,)",
		"shard(1,Local)",
		"replicate ",
		"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct tps_placement p = tps_placement_partial();
		ck_assert_msg(!tps_placement_parse(bad[i], 2, &p), "%s took",
			      bad[i]);
		ck_assert(tps_placement_equal(p, tps_placement_partial()));
	}
}
END_TEST

/* Every placement in tpsim 0.2.0's traces (tests/golden) reads back and
 * is written again byte for byte: the block-1 spelling did not move. */
START_TEST(golden_trace_placements_are_written_as_before)
{
	DIR *d = opendir(tu_source_path("tests/golden"));
	struct dirent *e;
	int files = 0, checked = 0;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char path[1024];
		cJSON *trace = NULL, *ev, *param;
		struct tps_error err = {0};
		if (n < 11 || strcmp(e->d_name + n - 11, ".trace.json") != 0) {
			continue;
		}
		snprintf(path, sizeof path, "%s/%s",
			 tu_source_path("tests/golden"), e->d_name);
		ck_assert_int_eq(
			tps_json_load(path, (size_t)1 << 30, &trace, &err),
			TPS_OK);
		files++;
		/* Events, then params: each has placements and a shape. */
		for (int pass = 0; pass < 2; pass++) {
			const cJSON *list = cJSON_GetObjectItemCaseSensitive(
				trace, pass ? "params" : "events");
			cJSON_ArrayForEach(ev, list)
			{
				const cJSON *shape =
					cJSON_GetObjectItemCaseSensitive(
						ev, pass ? "shape"
							 : "global_shape");
				const cJSON *pl =
					cJSON_GetObjectItemCaseSensitive(
						ev, "placements");
				cJSON_ArrayForEach(param, pl)
				{
					struct tps_placement p;
					char buf[32];
					ck_assert_msg(
						tps_placement_parse(
							param->valuestring,
							cJSON_GetArraySize(
								shape),
							&p),
						"%s: %s", e->d_name,
						param->valuestring);
					ck_assert_str_eq(
						tps_placement_format(
							p, buf, sizeof buf),
						param->valuestring);
					checked++;
				}
			}
		}
		cJSON_Delete(trace);
	}
	closedir(d);
	printf("%d placements in %d golden traces read back unchanged\n",
	       checked, files);
	ck_assert_int_ge(files, 18);
	ck_assert_int_gt(checked, 1000);
}
END_TEST

static Suite *trace_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *det = tcase_create("determinism");
	TCase *fmt = tcase_create("format");
	TCase *bad = tcase_create("non_finite");
	TCase *place = tcase_create("placements");
	tcase_add_test(det, same_config_gives_byte_identical_traces);
	tcase_add_test(place,
		       placement_strings_round_trip_and_block_one_is_unchanged);
	tcase_add_test(
		place,
		placement_parse_refuses_other_spellings_and_keeps_the_output);
	tcase_add_test(place, golden_trace_placements_are_written_as_before);
	tcase_add_test(fmt, trace_is_strict_json_with_keys_in_order);
	tcase_add_test(fmt, summary_mode_replaces_values_with_stats_and_hash);
	tcase_add_test(bad, nan_stops_the_run_and_leaves_no_file);
	tcase_add_test(bad, inf_in_a_matmul_names_the_event);
	tcase_add_test(bad, comm_counts_past_int64_are_an_error);
	tcase_add_test(bad, inf_in_a_collective_is_worded_as_in_a_matmul);
	tcase_add_test(bad,
		       inf_is_found_in_every_values_mode_at_any_thread_count);
	suite_add_tcase(s, det);
	suite_add_tcase(s, fmt);
	suite_add_tcase(s, bad);
	suite_add_tcase(s, place);
	return s;
}

int main(void)
{
	return tu_run_suite(trace_suite());
}
