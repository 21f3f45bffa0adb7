/* timeline: `tpsim timeline`'s Chrome Trace Event JSON: its structure on
 * fixture traces, collective durations against the alpha-beta model done
 * again here (and once by hand), matmul flops against tpsim comm's count,
 * bad arguments, atomic output, determinism. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "cli.h"
#include "config.h"
#include "costs.h"
#include "jsonio.h"
#include "timeline.h"

/* tpsim run CONFIG (relative to the source root) [extra] into DIR/NAME;
 * the trace's path in a static buffer. */
static const char *trace_of(const char *dir, const char *config,
			    const char *name, const char *extra)
{
	static char trace[1024];
	struct tu_result r;
	snprintf(trace, sizeof trace, "%s/%s", dir, name);
	if (extra) {
		r = tu_cli(6, "run", tu_source_path(config), "-o", trace,
			   extra);
	} else {
		r = tu_cli(5, "run", tu_source_path(config), "-o", trace);
	}
	ck_assert_msg(r.rc == 0, "%s: %s", config, r.err);
	tu_result_free(&r);
	return trace;
}

/* tpsim timeline TRACE -o TRACE.tl, parsed. */
static cJSON *timeline_of(const char *trace)
{
	char out[1100];
	cJSON *tl = NULL;
	struct tps_error e = {0};
	struct tu_result r;
	snprintf(out, sizeof out, "%s.tl", trace);
	r = tu_cli(5, "timeline", trace, "-o", out);
	ck_assert_msg(r.rc == 0, "%s: %s", trace, r.err);
	ck_assert_uint_eq(r.out_len, 0);
	tu_result_free(&r);
	ck_assert_msg(tps_json_load(out, (size_t)1 << 30, &tl, &e) == TPS_OK,
		      "%s", e.message);
	return tl;
}

static cJSON *load(const char *path)
{
	cJSON *j = NULL;
	struct tps_error e = {0};
	ck_assert_msg(tps_json_load(path, (size_t)1 << 30, &j, &e) == TPS_OK,
		      "%s", e.message);
	return j;
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Microseconds with three decimals back to whole nanoseconds. */
static int64_t ns_of(const cJSON *us)
{
	ck_assert(cJSON_IsNumber(us));
	return (int64_t)llround(us->valuedouble * 1000.0);
}

/* The trace event with that seq. */
static const cJSON *trace_event(const cJSON *trace, double seq)
{
	const cJSON *ev;
	cJSON_ArrayForEach(ev, get(trace, "events"))
	{
		if (get(ev, "seq")->valuedouble == seq) {
			return ev;
		}
	}
	ck_abort_msg("no trace event has seq %g", seq);
	return NULL;
}

/*
 * The alpha-beta model again, from the trace's numbers and docs/comm.md
 * rather than costs.c: ring steps 2 (n - 1) for all_reduce and n - 1 for
 * the others, each paying the link's latency, plus bytes / bandwidth; a
 * group over several mesh dims takes the slowest; whole ns, at least 1.
 */
static int64_t model_ns(const cJSON *trace, const cJSON *ev, int n)
{
	const cJSON *links = get(get(trace, "config"), "links");
	const char *dim = get(ev, "mesh_dim")->valuestring;
	const char *op = get(ev, "op")->valuestring;
	double gbps = INFINITY, latency_us = 0, seconds, steps;
	const cJSON *link;
	int64_t ns;
	int found = 0;
	cJSON_ArrayForEach(link, links)
	{
		size_t len = strlen(link->string);
		const char *at = strstr(dim, link->string);
		/* "dp_cp" spans dp and cp. */
		if (at && (at == dim || at[-1] == '_') &&
		    (at[len] == '\0' || at[len] == '_')) {
			double g = get(link, "GBps")->valuedouble;
			double l = get(link, "latency_us")->valuedouble;
			gbps = g < gbps ? g : gbps;
			latency_us = l > latency_us ? l : latency_us;
			found++;
		}
	}
	ck_assert_msg(found > 0, "no link for %s", dim);
	steps = strcmp(op, "all_reduce") == 0 ? 2.0 * (n - 1) : n - 1.0;
	seconds = steps * latency_us * 1e-6 +
		  get(ev, "bytes_per_rank")->valuedouble / (gbps * 1e9);
	ns = (int64_t)llround(seconds * 1e9);
	return ns < 1 ? 1 : ns;
}

/* Per (pid, tid): the end of its last slice, to check that slices follow
 * each other. */
struct track {
	int pid, tid;
	int64_t end;
};

/*
 * The structure every timeline has: metadata names a process per step and
 * a thread per rank; every X event has pid, tid, ts, dur >= 0 and a phase
 * as its category; a thread's slices follow each other in file order
 * (each starts at or after the previous one's end: its clock is monotone
 * and no two slices partly overlap); each collective has exactly one slice
 * per member of each of its groups, the group's slices starting together
 * and lasting the model's time. Returns the number of X events.
 */
static int check_structure(const cJSON *trace, const cJSON *tl)
{
	const cJSON *events = get(tl, "traceEvents"), *e;
	int world = (int)get(get(trace, "mesh"), "world_size")->valuedouble;
	struct track *tracks = NULL;
	int n_tracks = 0, n_x = 0, named_threads = 0;
	double last_seq = -1;
	int *seen = calloc((size_t)world, sizeof *seen);

	ck_assert(cJSON_IsArray(events));
	ck_assert_str_eq(get(tl, "displayTimeUnit")->valuestring, "ns");
	cJSON_ArrayForEach(e, events)
	{
		const char *ph = get(e, "ph")->valuestring;
		int pid = (int)get(e, "pid")->valuedouble;
		int tid = (int)get(e, "tid")->valuedouble;
		const cJSON *args = get(e, "args");
		int64_t ts, dur;
		struct track *t = NULL;
		ck_assert_int_ge(pid, 1);
		ck_assert_int_ge(tid, 0);
		ck_assert_int_lt(tid, world);
		if (strcmp(ph, "M") == 0) {
			ck_assert_int_eq(n_x, 0); /* metadata first */
			named_threads += strcmp(get(e, "name")->valuestring,
						"thread_name") == 0;
			continue;
		}
		ck_assert_str_eq(ph, "X");
		n_x++;
		ts = ns_of(get(e, "ts"));
		dur = ns_of(get(e, "dur"));
		ck_assert_int_ge(ts, 0);
		ck_assert_int_ge(dur, 1);
		ck_assert_msg(strcmp(get(e, "cat")->valuestring, "forward") ==
					      0 ||
				      strcmp(get(e, "cat")->valuestring,
					     "backward") == 0 ||
				      strcmp(get(e, "cat")->valuestring,
					     "optimizer") == 0,
			      "cat %s", get(e, "cat")->valuestring);
		for (int i = 0; i < n_tracks; i++) {
			if (tracks[i].pid == pid && tracks[i].tid == tid) {
				t = &tracks[i];
			}
		}
		if (!t) {
			tracks = realloc(tracks,
					 (size_t)(n_tracks + 1) * sizeof *t);
			t = &tracks[n_tracks++];
			t->pid = pid;
			t->tid = tid;
			t->end = 0;
		}
		ck_assert_msg(ts >= t->end,
			      "pid %d tid %d: a slice at %lld ns before the "
			      "previous one's end %lld",
			      pid, tid, (long long)ts, (long long)t->end);
		t->end = ts + dur;
		/* A whole event's slices are together, events in seq
		 * order. */
		ck_assert(get(args, "seq")->valuedouble >= last_seq);
		if (get(args, "seq")->valuedouble != last_seq) {
			memset(seen, 0, (size_t)world * sizeof *seen);
			last_seq = get(args, "seq")->valuedouble;
		}
		ck_assert_msg(!seen[tid], "seq %g: two slices on rank %d",
			      last_seq, tid);
		seen[tid] = 1;
		if (strcmp(get(args, "kind")->valuestring, "collective") == 0) {
			const cJSON *ev = trace_event(trace, last_seq);
			const cJSON *g, *m;
			bool member = false;
			ck_assert_str_eq(get(args, "dtype")->valuestring,
					 "Float");
			ck_assert(cJSON_IsString(get(args, "Collective name")));
			ck_assert(cJSON_IsNumber(get(args, "In msg nelems")));
			ck_assert(cJSON_IsNumber(get(args, "Out msg nelems")));
			cJSON_ArrayForEach(g, get(ev, "groups"))
			{
				cJSON_ArrayForEach(m, g)
				{
					member |= (int)m->valuedouble == tid;
				}
				if (!member) {
					continue;
				}
				ck_assert_int_eq((int)get(args, "Group size")
							 ->valuedouble,
						 cJSON_GetArraySize(g));
				ck_assert_int_eq(
					dur, model_ns(trace, ev,
						      cJSON_GetArraySize(g)));
				break;
			}
			ck_assert_msg(member, "seq %g: rank %d in no group",
				      last_seq, tid);
		}
	}
	/* Every member of every group got its slice, all starting together:
	 * checked per collective event by walking it again. */
	cJSON_ArrayForEach(e, get(trace, "events"))
	{
		const cJSON *g, *m, *x;
		if (!get(e, "step") ||
		    strcmp(get(e, "kind")->valuestring, "collective") != 0) {
			continue;
		}
		cJSON_ArrayForEach(g, get(e, "groups"))
		{
			int64_t ts = -1, dur = -1;
			cJSON_ArrayForEach(m, g)
			{
				int found = 0;
				cJSON_ArrayForEach(x, events)
				{
					const cJSON *a = get(x, "args");
					if (strcmp(get(x, "ph")->valuestring,
						   "X") != 0 ||
					    get(a, "seq")->valuedouble !=
						    get(e, "seq")
							    ->valuedouble ||
					    get(x, "tid")->valuedouble !=
						    m->valuedouble) {
						continue;
					}
					found++;
					if (ts < 0) {
						ts = ns_of(get(x, "ts"));
						dur = ns_of(get(x, "dur"));
					}
					ck_assert_int_eq(ns_of(get(x, "ts")),
							 ts);
					ck_assert_int_eq(ns_of(get(x, "dur")),
							 dur);
				}
				ck_assert_msg(found == 1,
					      "seq %g rank %g: %d slices",
					      get(e, "seq")->valuedouble,
					      m->valuedouble, found);
			}
		}
	}
	ck_assert_int_gt(named_threads, 0);
	free(tracks);
	free(seen);
	return n_x;
}

static const char *const structure_configs[] = {
	"fixtures/seed_2x4_rowwise_after_reduce/config.json",
	"fixtures/mesh_2d_dp_tp/config.json",
	"fixtures/train_dp2_tp2_mse/config.json",
	"fixtures/uneven_13_over_6/config.json",
	"fixtures/sequence_parallel_layernorm/config.json",
	"fixtures/loss_parallel_2x4_logits/config.json",
	"examples/gpt_2block/config_sp.json",
	"examples/seed004_ddp_tp/config.json",
};

START_TEST(timeline_structure_holds_on_fixture_traces)
{
	const char *dir = tu_tempdir();
	const char *trace_path =
		trace_of(dir, structure_configs[_i], "t.json", NULL);
	cJSON *trace = load(trace_path);
	cJSON *tl = timeline_of(trace_path);
	int n_x = check_structure(trace, tl);
	ck_assert_int_gt(n_x, 0);
	cJSON_Delete(tl);
	cJSON_Delete(trace);
	tu_rmtree(dir);
}
END_TEST

/*
 * fixtures/seed_2x4_rowwise: x (2, 4) split over tp = 2, each rank's
 * matmul, then the all_reduce of the (2, 2) partial output. By hand:
 *   split, matmul: no time in the model but the least slice, 1 ns each
 *     (the matmul's 2 * 4 * 2 = 16 flops at 100 TFLOP/s are 0.16 ps)
 *   all_reduce over n = 2 on the default tp link (150 GB/s, 3 us):
 *     2 (n - 1) = 2 ring steps: 2 * 3 us = 6000 ns, plus
 *     16 bytes / 150e9 B/s = 0.107 ns: 6000.107 ns, 6000 ns whole
 *   so both ranks' all_reduce starts at 2 ns and lasts 6.000 us.
 */
START_TEST(timeline_times_the_rowwise_all_reduce_as_derived_by_hand)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(
		dir, "fixtures/seed_2x4_rowwise/config.json", "t.json", NULL);
	struct tu_result r = tu_cli(3, "timeline", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	for (int rank = 0; rank < 2; rank++) {
		char want[512];
		snprintf(want, sizeof want,
			 "{\"name\":\"fc all_reduce\",\"cat\":\"forward\","
			 "\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":0.002,"
			 "\"dur\":6.000,\"args\":{\"seq\":3,\"kind\":"
			 "\"collective\"",
			 rank);
		ck_assert_msg(strstr(r.out, want), "missing %s in:\n%s", want,
			      r.out);
		snprintf(want, sizeof want,
			 "\"tid\":%d,\"ts\":0.001,\"dur\":0.001,\"args\":{"
			 "\"seq\":2,\"kind\":\"compute\",\"module\":\"fc\","
			 "\"op\":\"matmul\"",
			 rank);
		ck_assert_msg(strstr(r.out, want), "missing %s", want);
	}
	/* (2, 2) replicated after the all_reduce: 4 elements in and out,
	 * as PyTorch's allreduce records tensor.numel() both ways. */
	ck_assert(strstr(r.out,
			 "\"bytes_per_rank\":16,\"Collective name\":"
			 "\"allreduce\",\"Group size\":2,\"In msg "
			 "nelems\":4,\"Out msg nelems\":4,\"dtype\":"
			 "\"Float\",\"Process Group Ranks\":\"[0, 1]\""));
	ck_assert(strstr(r.out, "{\"name\":\"thread_name\",\"ph\":\"M\","
				"\"pid\":1,\"tid\":1,\"args\":{\"name\":"
				"\"rank 1 (tp=1)\"}}"));
	ck_assert(strstr(r.out, "{\"name\":\"process_name\",\"ph\":\"M\","
				"\"pid\":1,\"tid\":0,\"args\":{\"name\":"
				"\"step 0\"}}"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/*
 * fixtures/mesh_2d_dp_tp on (dp, tp) = (2, 2): thread names carry both
 * coordinates; fc1 (4 -> 4, colwise) on the dp half of the (2, 4) batch
 * is x_r (1, 4) W_r^T with W_r (2, 4): Y_r (1, 2), 2 * 2 * 4 = 16 flops
 * per rank.
 */
START_TEST(timeline_names_ranks_by_mesh_coordinates_and_counts_own_flops)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "fixtures/mesh_2d_dp_tp/config.json",
				     "t.json", NULL);
	struct tu_result r = tu_cli(3, "timeline", trace);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	ck_assert(strstr(r.out, "\"args\":{\"name\":\"rank 2 (dp=1, tp=0)\"}"));
	ck_assert(strstr(r.out, "\"module\":\"fc1\",\"op\":\"matmul\","
				"\"tensor\":\"fc1.out\",\"placements\":["
				"\"shard(0)\",\"shard(1)\"],\"global_shape\":"
				"[2,4],\"flops\":16"));
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* The timeline's matmul flops are tpsim comm's: summed over one training
 * step's compute events (the busiest rank of each, as comm counts), they
 * equal tps_cost_estimate's figure for the same config. */
START_TEST(timeline_flops_equal_the_cost_models_count)
{
	const char *config = "examples/gpt_2block/config.json";
	const char *dir = tu_tempdir();
	const char *trace_path = trace_of(dir, config, "t.json", NULL);
	cJSON *trace = load(trace_path);
	struct tps_timeline tl = {0};
	struct tps_run_spec spec = {0};
	struct tps_cost_report report = {0};
	struct tps_error e = {0};
	int64_t sum = 0, most = 0;
	int event = -1;

	ck_assert_msg(tps_timeline_build(&tl, trace, trace_path, &e) == TPS_OK,
		      "%s", e.message);
	for (size_t i = 0; i < tl.n_slices; i++) {
		const struct tps_timeline_slice *s = &tl.slices[i];
		if (tl.events[s->event].step != 0) {
			continue;
		}
		if (s->event != event) {
			sum += most;
			most = 0;
			event = s->event;
		}
		most = s->flops > most ? s->flops : most;
	}
	sum += most;
	ck_assert_msg(tps_config_load(tu_source_path(config), &spec, &e) ==
			      TPS_OK,
		      "%s", e.message);
	ck_assert_msg(tps_cost_estimate(&spec.model, &spec.cost, &report, &e) ==
			      TPS_OK,
		      "%s", e.message);
	ck_assert_int_gt(sum, 0);
	ck_assert_int_eq(sum, report.flops[TPS_COST_TRAINING]);
	tps_cost_report_free(&report);
	tps_run_spec_free(&spec);
	tps_timeline_free(&tl);
	cJSON_Delete(trace);
	tu_rmtree(dir);
}
END_TEST

/* Values are never read: a symbolic run, and a run with "values":
 * "summary", give the full run's timeline byte for byte. */
START_TEST(timeline_of_symbolic_and_summary_traces_equals_the_full_traces)
{
	const char *dir = tu_tempdir();
	char full[1100], other[1100], cfg[1100];
	char *a, *b, *text;
	size_t a_len, b_len;
	struct tu_result r;
	snprintf(full, sizeof full, "%s",
		 trace_of(dir, "examples/gpt_2block/config_sp.json",
			  "full.json", NULL));
	snprintf(other, sizeof other, "%s",
		 trace_of(dir, "examples/gpt_2block/config_sp.json",
			  "symbolic.json", "--symbolic"));
	cJSON_Delete(timeline_of(full));
	cJSON_Delete(timeline_of(other));
	snprintf(full + strlen(full), sizeof full - strlen(full), ".tl");
	snprintf(other + strlen(other), sizeof other - strlen(other), ".tl");
	a = tu_read_file(full, &a_len);
	b = tu_read_file(other, &b_len);
	ck_assert_uint_eq(a_len, b_len);
	ck_assert_int_eq(memcmp(a, b, a_len), 0);
	free(b);
	/* summary: the fixture's config with "trace": {"values":
	 * "summary"} in place of full. */
	text = tu_read_file(
		tu_source_path("fixtures/train_dp2_tp2_mse/config.json"), NULL);
	ck_assert_ptr_nonnull(text);
	{
		cJSON *c = cJSON_Parse(text);
		cJSON *t = cJSON_CreateObject();
		char *s;
		cJSON_AddStringToObject(t, "values", "summary");
		cJSON_DeleteItemFromObjectCaseSensitive(c, "trace");
		cJSON_AddItemToObject(c, "trace", t);
		s = cJSON_PrintUnformatted(c);
		snprintf(cfg, sizeof cfg, "%s/summary.config.json", dir);
		tu_write_file(cfg, s, strlen(s));
		free(s);
		cJSON_Delete(c);
	}
	free(text);
	snprintf(other, sizeof other, "%s/summary.json", dir);
	r = tu_cli(5, "run", cfg, "-o", other);
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	free(a);
	snprintf(full, sizeof full, "%s",
		 trace_of(dir, "fixtures/train_dp2_tp2_mse/config.json",
			  "full2.json", NULL));
	text = tu_read_file(other, NULL);
	ck_assert_ptr_nonnull(strstr(text, "\"hash\":"));
	free(text);
	cJSON_Delete(timeline_of(full));
	cJSON_Delete(timeline_of(other));
	snprintf(full + strlen(full), sizeof full - strlen(full), ".tl");
	snprintf(other + strlen(other), sizeof other - strlen(other), ".tl");
	a = tu_read_file(full, &a_len);
	b = tu_read_file(other, &b_len);
	ck_assert_uint_eq(a_len, b_len);
	ck_assert_int_eq(memcmp(a, b, a_len), 0);
	free(a);
	free(b);
	tu_rmtree(dir);
}
END_TEST

START_TEST(timeline_is_byte_identical_across_runs)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(dir, "examples/seed004_ddp_tp/config.json",
				     "t.json", NULL);
	char a_path[1100], b_path[1100];
	char *a, *b;
	size_t a_len, b_len;
	struct tu_result r;
	snprintf(a_path, sizeof a_path, "%s/a.json", dir);
	snprintf(b_path, sizeof b_path, "%s/b.json", dir);
	r = tu_cli(5, "timeline", trace, "-o", a_path);
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	r = tu_cli(5, "timeline", trace, "-o", b_path);
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	a = tu_read_file(a_path, &a_len);
	b = tu_read_file(b_path, &b_len);
	ck_assert_uint_gt(a_len, 0);
	ck_assert_uint_eq(a_len, b_len);
	ck_assert_int_eq(memcmp(a, b, a_len), 0);
	free(a);
	free(b);
	tu_rmtree(dir);
}
END_TEST

/* good with `from` replaced by `to` (once) written to bad. */
static void write_edited(const char *good, const char *bad, const char *from,
			 const char *to)
{
	char *text = tu_read_file(good, NULL);
	char *at = strstr(text, from);
	size_t len = strlen(text), flen = strlen(from), tlen = strlen(to);
	char *out = malloc(len - flen + tlen + 1);
	ck_assert_ptr_nonnull(at);
	memcpy(out, text, (size_t)(at - text));
	memcpy(out + (at - text), to, tlen);
	memcpy(out + (at - text) + tlen, at + flen,
	       len - (size_t)(at - text) - flen + 1);
	tu_write_file(bad, out, strlen(out));
	free(out);
	free(text);
}

START_TEST(timeline_refuses_bad_arguments_with_one_line)
{
	const char *dir = tu_tempdir();
	char trace[1024]; /* trace_of's buffer is reused below */
	char bad_dim[1024], no_links[1024], bad_group[1024], missing[1024],
		into_dir[1024], huge[1024], huge_flops[1024], huge_ar[1024],
		slow[1024], gpt[1024];
	struct row {
		int argc;
		const char *argv[6];
		int lines; /* usage errors add the hint line */
		const char *message;
	};
	snprintf(trace, sizeof trace, "%s",
		 trace_of(dir, "fixtures/mesh_2d_dp_tp/config.json", "t.json",
			  NULL));
	snprintf(bad_dim, sizeof bad_dim, "%s/bad_dim.json", dir);
	snprintf(no_links, sizeof no_links, "%s/no_links.json", dir);
	snprintf(bad_group, sizeof bad_group, "%s/bad_group.json", dir);
	snprintf(missing, sizeof missing, "%s/no/such/dir/x.json", dir);
	snprintf(into_dir, sizeof into_dir, "%s/", dir);
	write_edited(trace, bad_dim, "\"mesh_dim\":\"tp\"",
		     "\"mesh_dim\":\"xx\"");
	write_edited(trace, no_links, "\"links\":", "\"lonks\":");
	write_edited(trace, bad_group, "\"groups\":[[0,1],[2,3]]",
		     "\"groups\":[[0,1],[1,3]]");
	/* Sizes whose products pass int64_t: an error at the shape, where
	 * the counts saturated (flops 9223372036854775807) or wrapped. Since
	 * the one trace reader validates every trace first, a global shape
	 * over 2^48 elements is refused there, at the same pointer. The
	 * first (2, 2) is fc2's forward matmul, event 8: rank 0's block is
	 * half its rows (dp) and it multiplies by 2 of fc2's 4 in_features
	 * (tp). 2^40 x 2^40 / 2 = 2^79 elements; 2^31 x 2^31 / 2 = 2^61
	 * elements fit, but 2 x 2^61 x 2 = 2^63 flops do not. */
	snprintf(huge, sizeof huge, "%s/huge.json", dir);
	snprintf(huge_flops, sizeof huge_flops, "%s/huge_flops.json", dir);
	snprintf(huge_ar, sizeof huge_ar, "%s/huge_ar.json", dir);
	snprintf(slow, sizeof slow, "%s/slow.json", dir);
	write_edited(trace, huge, "\"global_shape\":[2,2]",
		     "\"global_shape\":[1099511627776,1099511627776]");
	write_edited(trace, huge_flops, "\"global_shape\":[2,2]",
		     "\"global_shape\":[2147483648,2147483648]");
	/* The all_reduce (event 9): each rank's block is its in and out
	 * message. */
	write_edited(trace, huge_ar,
		     "\"global_shape\":[2,2],\"bytes_per_rank\":8",
		     "\"global_shape\":[1099511627776,1099511627776],"
		     "\"bytes_per_rank\":8");
	/* gpt_2block's 117 matmuls on rank 0 at 8192 flops at most: at
	 * 9.1e-18 TFLOPS the largest takes 9e17 ns, under an event's 10^18
	 * ns, and together they pass 2^63 ns (about 9.2e18) at event 95. */
	snprintf(gpt, sizeof gpt, "%s",
		 trace_of(dir, "examples/gpt_2block/config.json", "gpt.json",
			  NULL));
	write_edited(gpt, slow, "\"TFLOPS\":100", "\"TFLOPS\":9.1e-18");
	const struct row rows[] = {
		{1, {"timeline"}, 2, "tpsim: timeline: expected TRACE"},
		{3,
		 {"timeline", trace, "extra"},
		 2,
		 "tpsim: timeline: unexpected argument 'extra'"},
		{3,
		 {"timeline", trace, "--bogus"},
		 2,
		 "tpsim: timeline: unknown option '--bogus'"},
		{3, {"timeline", trace, "-o"}, 2, "timeline: -o needs a file"},
		{2,
		 {"timeline", "/nonexistent/t.json"},
		 1,
		 "tpsim: /nonexistent/t.json"},
		{2,
		 {"timeline",
		  tu_source_path("fixtures/mesh_2d_dp_tp/config.json")},
		 1,
		 "config.json: /tpsim: expected a tpsim trace"},
		{4,
		 {"timeline", trace, "-o", trace},
		 1,
		 "/t.json: -o names the input "},
		{4,
		 {"timeline", trace, "-o", into_dir},
		 1,
		 "is a directory (-o names the timeline file)"},
		{4,
		 {"timeline", trace, "-o", missing},
		 1,
		 "/no/such/dir/x.json: cannot write: No such file or "
		 "directory"},
		{2,
		 {"timeline", bad_dim},
		 1,
		 "/bad_dim.json: /events/9/mesh_dim: expected a mesh dim's "
		 "name"},
		{2,
		 {"timeline", no_links},
		 1,
		 "/no_links.json: /config/links/dp: missing (the timeline "
		 "times collectives with the config's links)"},
		{2,
		 {"timeline", bad_group},
		 1,
		 "/bad_group.json: /events/9/groups/1/0: expected a rank from "
		 "0 to 3 in no other group"},
		{2,
		 {"timeline", huge},
		 1,
		 "/huge.json: /events/8/global_shape: expected at most 2^48 "
		 "elements"},
		{2,
		 {"timeline", huge_flops},
		 1,
		 "/huge_flops.json: /events/8/global_shape: expected at most "
		 "2^48 elements"},
		{2,
		 {"timeline", huge_ar},
		 1,
		 "/huge_ar.json: /events/9/global_shape: expected at most "
		 "2^48 elements"},
		{2,
		 {"timeline", slow},
		 1,
		 "/slow.json: /events/95: rank 0's clock passes 2^63 ns (292 "
		 "years) at this event"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char *argv[8] = {"tpsim"};
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
	/* The trace they were made from is fine. */
	{
		struct tu_result r = tu_cli(3, "timeline", trace);
		ck_assert_msg(r.rc == 0, "%s", r.err);
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

START_TEST(timeline_leaves_no_partial_file_and_keeps_the_old_one_on_error)
{
	const char *dir = tu_tempdir();
	const char *trace = trace_of(
		dir, "fixtures/seed_2x4_colwise/config.json", "t.json", NULL);
	char out_dir[1024], bad[1024], path[1100], *kept;
	struct tu_result r;
	snprintf(out_dir, sizeof out_dir, "%s/out", dir);
	ck_assert_int_eq(mkdir(out_dir, 0777), 0);
	snprintf(path, sizeof path, "%s/run.json", out_dir);
	snprintf(bad, sizeof bad, "%s/bad.json", dir);
	write_edited(trace, bad, "\"device\":", "\"devise\":");
	tu_write_file(path, "old", 3);
	r = tu_cli(5, "timeline", bad, "-o", path);
	ck_assert_int_eq(r.rc, 2);
	ck_assert_msg(strstr(r.err, "/config/device: missing"), "%s", r.err);
	tu_result_free(&r);
	kept = tu_read_file(path, NULL);
	ck_assert_str_eq(kept, "old");
	free(kept);
	ck_assert_int_eq(count_entries(out_dir), 1);
	r = tu_cli(5, "timeline", trace, "-o", path);
	ck_assert_int_eq(r.rc, 0);
	tu_result_free(&r);
	kept = tu_read_file(path, NULL);
	ck_assert(strncmp(kept, "{\"traceEvents\":[", 16) == 0);
	free(kept);
	ck_assert_int_eq(count_entries(out_dir), 1); /* no .tmp left */
	r = tu_cli(5, "timeline", trace, "-o", "/dev/null");
	ck_assert_msg(r.rc == 0, "%s", r.err);
	tu_result_free(&r);
	tu_rmtree(dir);
}
END_TEST

/* ---- a pipeline's schedule ------------------------------------------- */

/* A symbolic training run of 12 linears (4 -> 4) on a (pp p, tp 1) mesh,
 * a batch of m rows in m microbatches, with `schedule` (and v chunks when
 * v > 1), into DIR/pp.json; its trace, parsed. */
static cJSON *pipeline_trace(const char *dir, int p, int m,
			     const char *schedule, int v)
{
	char config[4096], path[1024], trace[1100], vs[64] = "";
	size_t n;
	struct tu_result r;
	n = (size_t)snprintf(config, sizeof config,
			     "{\"tpsim\":1,\"mesh\":{\"shape\":[%d,1],"
			     "\"dim_names\":[\"pp\",\"tp\"]},\"model\":[",
			     p);
	for (int i = 0; i < 12; i++) {
		n += (size_t)snprintf(
			config + n, sizeof config - n,
			"%s{\"name\":\"fc%d\",\"type\":\"linear\","
			"\"in_features\":4,\"out_features\":4}",
			i ? "," : "", i);
	}
	if (v > 1) {
		snprintf(vs, sizeof vs, ",\"virtual_stages\":%d", v);
	}
	snprintf(config + n, sizeof config - n,
		 "],\"input\":{\"shape\":[%d,4]},\"mode\":\"training\","
		 "\"compute\":\"symbolic\",\"pipeline\":{\"dim\":\"pp\","
		 "\"microbatches\":%d,\"schedule\":\"%s\"%s}}",
		 m, m, schedule, vs);
	snprintf(path, sizeof path, "%s/pp.config.json", dir);
	tu_write_file(path, config, strlen(config));
	snprintf(trace, sizeof trace, "%s/pp.json", dir);
	r = tu_cli(5, "run", path, "-o", trace);
	ck_assert_msg(r.rc == 0, "%s: %s", config, r.err);
	tu_result_free(&r);
	return load(trace);
}

START_TEST(pipeline_timeline_measures_the_bubble_of_each_schedule)
{
	/* p = _i + 1 stages, m 1-8 microbatches; gpipe and 1f1b, and
	 * interleaved_1f1b with v 2 and 3 when m is a multiple of p. Laid
	 * out from the trace's events (their stages and slots), every rank
	 * is busy 3 m v slots and idle (p - 1) / m of that (gpipe, 1f1b)
	 * or (p - 1) / (v m) (interleaved, Narayanan et al. 2021), as
	 * integers: idle m v = busy (p - 1). The trace's result says how
	 * many microbatches stage 0 holds at its peak: m with GPipe,
	 * min(p, m) with 1F1B, and its peak activations are that many
	 * microbatches' (12 linears of a (1, 4) input: 16 bytes each). The
	 * trace's bytes per rank are the busiest stage's sends. */
	static const char *const schedules[] = {
		"gpipe", "1f1b", "interleaved_1f1b", "interleaved_1f1b"};
	const char *dir = tu_tempdir();
	int p = _i + 1;
	for (int m = 1; m <= 8; m++) {
		for (int k = 0; k < 4; k++) {
			int v = k < 2 ? 1 : k;
			struct tps_timeline tl;
			struct tps_error err = {0};
			const cJSON *st0;
			cJSON *trace;
			if (v > 1 && m % p != 0) {
				continue;
			}
			trace = pipeline_trace(dir, p, m, schedules[k], v);
			ck_assert_msg(tps_timeline_build(&tl, trace, "pp.json",
							 &err) == TPS_OK,
				      "%s", err.message);
			ck_assert_int_eq(tl.n_ops, (size_t)(2 * m * v * p));
			for (int r = 0; r < p; r++) {
				int64_t busy, idle;
				tps_timeline_bubble(&tl, 0, r, &busy, &idle);
				ck_assert_int_eq(busy,
						 (int64_t)3 * m * v *
							 TPS_TIMELINE_SLOT_NS);
				ck_assert_msg(idle * m * v == busy * (p - 1),
					      "%s p %d m %d v %d rank %d: idle "
					      "%lld, busy %lld",
					      schedules[k], p, m, v, r,
					      (long long)idle, (long long)busy);
			}
			st0 = cJSON_GetArrayItem(
				get(get(get(trace, "result"), "pipeline"),
				    "by_stage"),
				0);
			if (v == 1) {
				/* Each send is a (1, 4) microbatch's 16
				 * bytes; a middle stage sends m forward and
				 * m backward, the first and the last m, and
				 * a rank sends its stage's only. */
				int64_t most = p >= 3	? 32 * m
					       : p == 2 ? 16 * m
							: 0;
				ck_assert_int_eq(get(get(trace, "comm"),
						     "bytes_per_rank")
							 ->valuedouble,
						 most);
			}
			if (v == 1) {
				int want = k == 0 ? m : (p < m ? p : m);
				int64_t per =
					get(st0, "saved_bytes_per_microbatch")
						->valuedouble;
				ck_assert_int_eq(
					get(st0, "peak_in_flight")->valuedouble,
					want);
				ck_assert_int_eq(per, 16 * 12 / p);
				ck_assert_int_eq(
					get(st0, "peak_activation_bytes")
						->valuedouble,
					per * want + (p == 1 ? 16 : 0));
			}
			tps_timeline_free(&tl);
			cJSON_Delete(trace);
		}
	}
	tu_rmtree(dir);
}
END_TEST

/* tps_timeline_build then tps_timeline_write_json into memory; the
 * status, and on success the bytes (free). */
static enum tps_status built_then_written(const cJSON *trace, char **text,
					  size_t *len, struct tps_error *e)
{
	struct tps_timeline tl = {0};
	enum tps_status st = tps_timeline_build(&tl, trace, "t.json", e);
	FILE *f = open_memstream(text, len);
	ck_assert_ptr_nonnull(f);
	if (st == TPS_OK) {
		tps_timeline_write_json(f, &tl);
	}
	ck_assert_int_eq(fclose(f), 0);
	tps_timeline_free(&tl);
	return st;
}

/* tps_timeline_stream_json into memory, as built_then_written. */
static enum tps_status streamed(const cJSON *trace, char **text, size_t *len,
				struct tps_error *e)
{
	FILE *f = open_memstream(text, len);
	enum tps_status st;
	ck_assert_ptr_nonnull(f);
	st = tps_timeline_stream_json(f, trace, "t.json", e);
	ck_assert_int_eq(fclose(f), 0);
	return st;
}

/* Loop: each fixture of structure_configs, then a pipeline's trace, then a
 * trace the timeline refuses at its last collective. */
START_TEST(timeline_streamed_is_byte_identical_to_built_then_written)
{
	const char *dir = tu_tempdir();
	int n = (int)(sizeof structure_configs / sizeof structure_configs[0]);
	char *a = NULL, *b = NULL;
	size_t a_len = 0, b_len = 0;
	struct tps_error ea = {0}, eb = {0};
	enum tps_status sa, sb;
	cJSON *trace;

	if (_i < n) {
		trace = load(
			trace_of(dir, structure_configs[_i], "t.json", NULL));
	} else {
		trace = pipeline_trace(dir, 4, 8, "1f1b", 1);
	}
	if (_i == n + 1) {
		/* Two groups share rank 0: found after slices were written. */
		cJSON *ev, *last = NULL;
		cJSON_ArrayForEach(ev, get(trace, "events"))
		{
			if (get(ev, "groups") && get(ev, "step")) {
				last = ev;
			}
		}
		ck_assert_ptr_nonnull(last);
		cJSON_ReplaceItemInObject(last, "groups",
					  cJSON_Parse("[[0],[0]]"));
	}
	sa = built_then_written(trace, &a, &a_len, &ea);
	sb = streamed(trace, &b, &b_len, &eb);
	ck_assert_int_eq(sb, sa);
	if (_i == n + 1) {
		ck_assert_int_eq(sa, TPS_ERR_INPUT);
		ck_assert_str_eq(eb.message, ea.message);
	} else {
		ck_assert_msg(sa == TPS_OK, "%s", ea.message);
		ck_assert_uint_gt(a_len, 0);
		ck_assert_uint_eq(b_len, a_len);
		ck_assert(memcmp(a, b, a_len) == 0);
	}
	free(a);
	free(b);
	cJSON_Delete(trace);
	tu_rmtree(dir);
}
END_TEST

static Suite *timeline_suite(void)
{
	Suite *s = suite_create("timeline");
	TCase *structure = tcase_create("structure");
	TCase *model = tcase_create("model");
	TCase *cli_tc = tcase_create("cli");
	tcase_add_loop_test(
		structure, timeline_structure_holds_on_fixture_traces, 0,
		(int)(sizeof structure_configs / sizeof structure_configs[0]));
	tcase_add_test(
		structure,
		timeline_of_symbolic_and_summary_traces_equals_the_full_traces);
	tcase_add_test(
		model,
		timeline_times_the_rowwise_all_reduce_as_derived_by_hand);
	tcase_add_test(
		model,
		timeline_names_ranks_by_mesh_coordinates_and_counts_own_flops);
	tcase_add_test(model, timeline_flops_equal_the_cost_models_count);
	tcase_add_loop_test(
		model, pipeline_timeline_measures_the_bubble_of_each_schedule,
		0, 4);
	tcase_add_loop_test(
		structure,
		timeline_streamed_is_byte_identical_to_built_then_written, 0,
		(int)(sizeof structure_configs / sizeof structure_configs[0]) +
			2);
	tcase_add_test(cli_tc, timeline_is_byte_identical_across_runs);
	tcase_add_test(cli_tc, timeline_refuses_bad_arguments_with_one_line);
	tcase_add_test(
		cli_tc,
		timeline_leaves_no_partial_file_and_keeps_the_old_one_on_error);
	suite_add_tcase(s, structure);
	suite_add_tcase(s, model);
	suite_add_tcase(s, cli_tc);
	return s;
}

int main(void)
{
	return tu_run_suite(timeline_suite());
}
