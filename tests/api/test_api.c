/*
 * The public API, include/tpsim.h, through the shared library alone: this
 * suite links libtpsim.so and Check (and cJSON, to read traces on its
 * own), never the engine's internals. What the API writes is compared
 * with what the `tpsim` binary (TPSIM_EXE) writes for the same input, and
 * the 2x4 example's numbers with their derivation by hand
 * (fixtures/seed_2x4_rowwise_after_reduce/DERIVATION.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>
#include <cjson/cJSON.h>

#include "tpsim.h"

extern char **environ;

#define EXAMPLE "fixtures/seed_2x4_rowwise_after_reduce"

/* ---- helpers ---------------------------------------------------------- */

static char root_buf[2048], path_buf[8][4608], tmp_dir[2048];
static int path_next;

/* A path under the source root, in one of a few rotating buffers. */
static const char *src(const char *relative)
{
	const char *root = getenv("TPSIM_SOURCE_ROOT");
	char *p = path_buf[path_next++ % 8];
	snprintf(root_buf, sizeof root_buf, "%s", root ? root : ".");
	snprintf(p, sizeof path_buf[0], "%s/%s", root_buf, relative);
	return p;
}

/* A path in this test's temporary directory. */
static const char *tmp(const char *name)
{
	char *p = path_buf[path_next++ % 8];
	snprintf(p, sizeof path_buf[0], "%s/%s", tmp_dir, name);
	return p;
}

static void make_tmp(void)
{
	const char *base = getenv("TMPDIR");
	snprintf(tmp_dir, sizeof tmp_dir, "%s/tpsim_api_XXXXXX",
		 base ? base : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

static void remove_tmp(void)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A whole file, NUL-terminated (*len without the NUL); NULL if missing. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	size_t n = 0, cap = 0;
	if (!f) {
		return NULL;
	}
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = 2 * cap + 8192;
			data = realloc(data, cap);
			ck_assert_ptr_nonnull(data);
		}
		size_t got = fread(data + n, 1, 4096, f);
		n += got;
		if (got < 4096) {
			break;
		}
	}
	fclose(f);
	data[n] = '\0';
	if (len) {
		*len = n;
	}
	return data;
}

/* Runs the tpsim binary with args (NULL-terminated), its stdout to
 * out_path and stderr to err_path (NULL: /dev/null); its exit status. */
static int tpsim_cli(const char *out_path, const char *err_path, ...)
{
	const char *argv[32];
	int argc = 0, status = 0;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	va_list ap;

	argv[argc++] = getenv("TPSIM_EXE");
	ck_assert_ptr_nonnull(argv[0]);
	va_start(ap, err_path);
	while ((argv[argc] = va_arg(ap, const char *)) != NULL) {
		argc++;
		ck_assert_int_lt(argc, 31);
	}
	va_end(ap);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1,
					 out_path ? out_path : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2,
					 err_path ? err_path : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_eq(posix_spawn(&pid, argv[0], &fa, NULL,
				     (char *const *)argv, environ),
			 0);
	posix_spawn_file_actions_destroy(&fa);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Output gathered from a tpsim_write_fn. */
struct buffer {
	char *data;
	size_t len;
	int calls;
	int fail_after; /* fail the call after this many; -1 never */
};

static int append(void *ctx, const char *data, size_t len)
{
	struct buffer *b = ctx;
	if (b->fail_after >= 0 && b->calls >= b->fail_after) {
		return -1;
	}
	b->calls++;
	b->data = realloc(b->data, b->len + len + 1);
	ck_assert_ptr_nonnull(b->data);
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

#define BUFFER_INIT                                                            \
	{                                                                      \
		NULL, 0, 0, -1                                                 \
	}

static void buffer_free(struct buffer *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->calls = 0;
}

/* The buffer holds exactly the bytes of the file. */
static void assert_same_bytes(const struct buffer *b, const char *path)
{
	size_t len = 0, i = 0;
	char *want = slurp(path, &len);
	ck_assert_msg(want != NULL, "%s is missing", path);
	while (i < len && i < b->len && b->data[i] == want[i]) {
		i++;
	}
	ck_assert_msg(b->len == len && i == len,
		      "%zu bytes through the API, %zu in %s, first difference "
		      "at %zu",
		      b->len, len, path, i);
	free(want);
}

static struct tpsim_config *load_config(const char *path)
{
	struct tpsim_config *c = NULL;
	struct tpsim_error *e = NULL;
	ck_assert_msg(tpsim_config_load(path, NULL, 0, &c, &e) == TPSIM_OK,
		      "%s", tpsim_error_message(e));
	return c;
}

/* Runs a config file to a buffer, and its result. */
static struct tpsim_result *run_config(const char *path,
				       const struct tpsim_run_options *o,
				       struct buffer *trace)
{
	struct tpsim_config *c = load_config(path);
	struct tpsim_result *r = NULL;
	struct tpsim_error *e = NULL;
	ck_assert_msg(tpsim_run(c, o, append, trace, &r, &e) == TPSIM_OK, "%s",
		      tpsim_error_message(e));
	tpsim_config_free(c);
	return r;
}

static struct tpsim_trace *parse_trace(const struct buffer *b)
{
	struct tpsim_trace *t = NULL;
	struct tpsim_error *e = NULL;
	ck_assert_msg(tpsim_trace_parse(b->data, b->len, "trace.json", &t,
					&e) == TPSIM_OK,
		      "%s", tpsim_error_message(e));
	return t;
}

/* The first event of op in t. */
static const struct tpsim_event *event_of_op(const struct tpsim_trace *t,
					     const char *op)
{
	for (size_t i = 0; i < tpsim_trace_event_count(t); i++) {
		const struct tpsim_event *ev = tpsim_trace_event(t, i);
		if (strcmp(tpsim_event_op(ev), op) == 0) {
			return ev;
		}
	}
	ck_abort_msg("no %s event", op);
	return NULL;
}

static void assert_values(const struct tpsim_tensor *t, const float *want,
			  size_t n)
{
	float got[64];
	size_t count = 0;
	struct tpsim_error *e = NULL;
	ck_assert_msg(tpsim_tensor_values(t, got, 64, &count, &e) == TPSIM_OK,
		      "%s", tpsim_error_message(e));
	ck_assert_uint_eq(count, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(got[i] == want[i], "value %zu: %g, want %g", i,
			      (double)got[i], (double)want[i]);
	}
}

/* ---- version, statuses, errors ---------------------------------------- */

START_TEST(version_is_the_cli_s)
{
	char line[64];
	snprintf(line, sizeof line, "tpsim %s\n", tpsim_version());
	make_tmp();
	ck_assert_int_eq(tpsim_cli(tmp("v"), NULL, "--version", NULL), 0);
	char *want = slurp(tmp("v"), NULL);
	ck_assert_str_eq(want, line);
	free(want);
	remove_tmp();
}
END_TEST

START_TEST(status_names_cover_every_status)
{
	static const char *const want[] = {"ok",
					   "bad input",
					   "I/O error",
					   "shape error",
					   "limit exceeded",
					   "out of memory",
					   "non-finite value",
					   "unsupported",
					   "usage error",
					   "API misuse"};
	for (int s = TPSIM_OK; s <= TPSIM_ERR_MISUSE; s++) {
		ck_assert_str_eq(tpsim_status_name((enum tpsim_status)s),
				 want[s]);
	}
	ck_assert_str_eq(tpsim_status_name((enum tpsim_status)42),
			 "unknown status");
	ck_assert_str_eq(tpsim_status_name((enum tpsim_status) - 1),
			 "unknown status");
}
END_TEST

START_TEST(null_error_accessors_are_safe)
{
	ck_assert_int_eq(tpsim_error_status(NULL), TPSIM_ERR_MISUSE);
	ck_assert_str_eq(tpsim_error_message(NULL), "");
	ck_assert_str_eq(tpsim_error_what(NULL), "");
	ck_assert_ptr_null(tpsim_error_file(NULL));
	ck_assert_ptr_null(tpsim_error_pointer(NULL));
	tpsim_error_free(NULL);
	tpsim_config_free(NULL);
	tpsim_result_free(NULL);
	tpsim_trace_free(NULL);
	tpsim_run_options_init(NULL);
	tpsim_explain_options_init(NULL);
}
END_TEST

/* ---- configs: bad input, its place apart ------------------------------ */

/* A config the API refuses: its text, the status, and the error's parts
 * (file "cfg.json" unless file says otherwise; pointer NULL: none). */
struct bad_api_config {
	const char *json;
	enum tpsim_status status;
	const char *pointer;
	const char *what; /* the start of tpsim_error_what */
};

#define GOOD_MODEL                                                             \
	"\"mesh\":{\"shape\":[2],\"dim_names\":[\"tp\"]},"                     \
	"\"model\":[{\"name\":\"fc\",\"type\":\"linear\",\"in_features\":4,"   \
	"\"out_features\":2}],\"input\":{\"shape\":[2,4]}"

static const struct bad_api_config bad_api_configs[] = {
	{"{" GOOD_MODEL "}", TPSIM_ERR_INPUT, "/tpsim", "missing"},
	{"[1]", TPSIM_ERR_INPUT, "", "expected a config object, got an array"},
	{"{\"tpsim\":1," GOOD_MODEL ",\"plan\":{\"fc\":\"rowise\"}}",
	 TPSIM_ERR_INPUT, "/plan/fc", "unknown style \"rowise\""},
	{"{\"tpsim\":1,\"tpsim\":1}", TPSIM_ERR_INPUT, "/tpsim",
	 "duplicate key \"tpsim\""},
	{"{\"tpsim\":1,\"a/b~c\":1," GOOD_MODEL "}", TPSIM_ERR_INPUT,
	 "/a~1b~0c", "unknown key"},
	{"{\"tpsim\":1," GOOD_MODEL ",\"vars\":{\"h\":4}}", TPSIM_ERR_INPUT,
	 "/vars", "no variable \"hidden\" to set"},
	{"{\"format\":\"tpsim.trace\",\"version\":1}", TPSIM_ERR_INPUT, NULL,
	 NULL},
};

#define N_BAD_API_CONFIGS                                                      \
	((int)(sizeof bad_api_configs / sizeof bad_api_configs[0]))

START_TEST(bad_config_gives_file_pointer_and_what)
{
	const struct bad_api_config *bc = &bad_api_configs[_i];
	struct tpsim_config *c = (struct tpsim_config *)&c;
	struct tpsim_config *const untouched = c;
	struct tpsim_error *e = NULL;
	/* Row 5 sets a variable the config does not define. */
	struct tpsim_var var = {"hidden", 8};
	enum tpsim_status st =
		tpsim_config_parse(bc->json, strlen(bc->json), "cfg.json", &var,
				   _i == 5 ? 1 : 0, &c, &e);
	char line[2048];

	ck_assert_msg(st == bc->status, "row %d: status %d (%s), want %d", _i,
		      (int)st, tpsim_error_message(e), (int)bc->status);
	ck_assert_int_eq(tpsim_error_status(e), bc->status);
	ck_assert_ptr_eq(c, untouched);
	if (bc->pointer) {
		ck_assert_str_eq(tpsim_error_file(e), "cfg.json");
		ck_assert_str_eq(tpsim_error_pointer(e), bc->pointer);
		ck_assert_msg(strncmp(tpsim_error_what(e), bc->what,
				      strlen(bc->what)) == 0 ||
				      strstr(tpsim_error_what(e), bc->what),
			      "row %d: what \"%s\", want \"%s\"", _i,
			      tpsim_error_what(e), bc->what);
		/* The one line: file, pointer as written, what. */
		snprintf(line, sizeof line, "cfg.json: %s: %s",
			 bc->pointer[0] ? bc->pointer : "(root)",
			 tpsim_error_what(e));
		ck_assert_str_eq(tpsim_error_message(e), line);
	} else {
		ck_assert_ptr_nonnull(
			strstr(tpsim_error_message(e), "cfg.json"));
	}
	tpsim_error_free(e);
}
END_TEST

START_TEST(config_errors_without_a_place_have_none)
{
	struct tpsim_config *c = NULL;
	struct tpsim_error *e = NULL;
	struct tpsim_var long_name = {
		"a_variable_name_longer_than_sixty_three_characters_is_refused_"
		"here",
		1};
	struct tpsim_var nan_value = {"h", NAN};

	make_tmp();
	ck_assert_int_eq(
		tpsim_config_load(tmp("missing.json"), NULL, 0, &c, &e),
		TPSIM_ERR_IO);
	ck_assert_ptr_null(c);
	ck_assert_ptr_null(tpsim_error_file(e));
	ck_assert_ptr_null(tpsim_error_pointer(e));
	ck_assert_str_eq(tpsim_error_what(e), tpsim_error_message(e));
	ck_assert_ptr_nonnull(strstr(tpsim_error_message(e), "missing.json"));
	tpsim_error_free(e);
	e = NULL;
	ck_assert_int_eq(tpsim_config_load(src(EXAMPLE "/config.json"),
					   &long_name, 1, &c, &e),
			 TPSIM_ERR_USAGE);
	tpsim_error_free(e);
	e = NULL;
	ck_assert_int_eq(tpsim_config_load(src(EXAMPLE "/config.json"),
					   &nan_value, 1, &c, &e),
			 TPSIM_ERR_USAGE);
	tpsim_error_free(e);
	/* Without an error object: the status alone. */
	ck_assert_int_eq(tpsim_config_parse("{", 1, "x", NULL, 0, &c, NULL),
			 TPSIM_ERR_INPUT);
	ck_assert_ptr_null(c);
	remove_tmp();
}
END_TEST

START_TEST(variables_are_set_as_with_set)
{
	static const char cfg[] =
		"{\"tpsim\":1,\"vars\":{\"out\":2},"
		"\"mesh\":{\"shape\":[2],\"dim_names\":[\"tp\"]},"
		"\"model\":[{\"name\":\"fc\",\"type\":\"linear\","
		"\"in_features\":4,\"out_features\":\"$out\"}],"
		"\"input\":{\"shape\":[2,4]}}";
	struct tpsim_var var = {"out", 6};
	struct tpsim_config *c = NULL;
	struct tpsim_result *r = NULL;
	struct buffer b = BUFFER_INIT;
	struct tpsim_trace *t;
	int64_t shape[TPSIM_MAX_DIMS];

	ck_assert_int_eq(tpsim_config_parse(cfg, sizeof cfg - 1, "v.json", &var,
					    1, &c, NULL),
			 TPSIM_OK);
	ck_assert_int_eq(tpsim_run(c, NULL, append, &b, &r, NULL), TPSIM_OK);
	t = parse_trace(&b);
	ck_assert_uint_eq(
		tpsim_tensor_shape(tpsim_trace_result_tensor(t, "output", NULL),
				   shape),
		2);
	ck_assert_int_eq(shape[1], 6);
	tpsim_trace_free(t);
	tpsim_result_free(r);
	tpsim_config_free(c);
	buffer_free(&b);
}
END_TEST

/* ---- runs ------------------------------------------------------------- */

/* The trace through the API is `tpsim run`'s, byte for byte, from a file
 * and from a buffer, at 1 and 3 threads, and to a file. */
START_TEST(run_writes_tpsim_run_s_bytes)
{
	static const char *const configs[] = {
		EXAMPLE "/config.json",
		"fixtures/train_dp2_tp2_mse/config.json",
		"examples/seed004_ddp_tp/config.json",
	};
	make_tmp();
	for (size_t k = 0; k < 3; k++) {
		struct tpsim_run_options o;
		struct buffer b1 = BUFFER_INIT, b3 = BUFFER_INIT,
			      bb = BUFFER_INIT;
		struct tpsim_result *r;
		struct tpsim_config *c;
		struct tpsim_error *e = NULL;
		size_t len = 0;
		char *text = slurp(src(configs[k]), &len);

		ck_assert_int_le(tpsim_cli(NULL, NULL, "run", src(configs[k]),
					   "-o", tmp("cli.json"), NULL),
				 1);
		tpsim_run_options_init(&o);
		o.threads = 1;
		tpsim_result_free(run_config(src(configs[k]), &o, &b1));
		o.threads = 3;
		tpsim_result_free(run_config(src(configs[k]), &o, &b3));
		assert_same_bytes(&b1, tmp("cli.json"));
		assert_same_bytes(&b3, tmp("cli.json"));
		ck_assert_int_eq(tpsim_config_parse(text, len, src(configs[k]),
						    NULL, 0, &c, &e),
				 TPSIM_OK);
		ck_assert_int_eq(tpsim_run(c, NULL, append, &bb, &r, &e),
				 TPSIM_OK);
		tpsim_result_free(r);
		assert_same_bytes(&bb, tmp("cli.json"));
		ck_assert_int_eq(
			tpsim_run_to_file(c, NULL, tmp("api.json"), &r, &e),
			TPSIM_OK);
		tpsim_result_free(r);
		buffer_free(&bb);
		bb.data = slurp(tmp("api.json"), &bb.len);
		assert_same_bytes(&bb, tmp("cli.json"));
		tpsim_config_free(c);
		free(text);
		buffer_free(&b1);
		buffer_free(&b3);
		buffer_free(&bb);
	}
	remove_tmp();
}
END_TEST

/* The 2x4 example's result, and its verdict as `tpsim run` prints it. */
START_TEST(result_of_the_2x4_example)
{
	struct buffer b = BUFFER_INIT;
	struct tpsim_result *r;
	char *err, *verdict;
	const char *cfg = src(EXAMPLE "/config.json");
	char prefix[4200];

	make_tmp();
	r = run_config(cfg, NULL, &b);
	ck_assert_int_eq(tpsim_cli(NULL, tmp("err"), "run", cfg, "-o",
				   "/dev/null", NULL),
			 0);
	err = slurp(tmp("err"), NULL);
	snprintf(prefix, sizeof prefix, "tpsim: %s: ", cfg);
	ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "%s", err);
	verdict = err + strlen(prefix);
	verdict[strcspn(verdict, "\n")] = '\0';
	ck_assert_str_eq(tpsim_result_verdict(r), verdict);
	ck_assert_int_eq(tpsim_result_match(r), 1);
	ck_assert(tpsim_result_max_abs_diff(r) == 0.0);
	ck_assert_int_eq(tpsim_result_comparison(r), TPSIM_COMPARISON_EXACT);
	ck_assert_int_gt(tpsim_result_compared(r), 0);
	ck_assert_int_eq(tpsim_result_exact(r), tpsim_result_compared(r));
	ck_assert_uint_eq(tpsim_result_steps(r), 0);
	ck_assert(isnan(tpsim_result_loss(r, 0)));
	ck_assert_int_eq(tpsim_result_symbolic(r), 0);
	/* One all_reduce of (2, 2) floats over 2 ranks: 2 (n-1) ceil(4/2)
	 * * 4 bytes = 16 (docs/design.md section 5). */
	ck_assert_int_eq(tpsim_result_collectives(r), 1);
	ck_assert_int_eq(tpsim_result_bytes_per_rank(r), 16);
	ck_assert_int_gt(tpsim_result_events(r), 0);
	ck_assert_ptr_null(tpsim_result_diagnosis(r));
	ck_assert_ptr_null(tpsim_result_stopped(r));
	ck_assert_uint_eq(tpsim_result_warning_count(r), 0);
	ck_assert_ptr_null(tpsim_result_warning(r, 0));
	free(err);
	tpsim_result_free(r);
	buffer_free(&b);
	remove_tmp();
}
END_TEST

/* A number of the trace's result as a float. */
static float result_number(const cJSON *result, const char *key, int i)
{
	const cJSON *v = cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(result, key), i);
	ck_assert_ptr_nonnull(v);
	return (float)v->valuedouble;
}

/* Training: every step's loss, both ways, as the trace has them. */
START_TEST(result_losses_are_the_trace_s)
{
	static const char cfg[] =
		"{\"tpsim\":1,\"mesh\":{\"shape\":[2],\"dim_names\":[\"tp\"]},"
		"\"model\":[{\"name\":\"fc\",\"type\":\"linear\","
		"\"in_features\":4,\"out_features\":2}],"
		"\"plan\":{\"fc\":\"colwise\"},"
		"\"input\":{\"shape\":[2,4],\"init\":\"uniform\"},"
		"\"init\":{\"method\":\"uniform\",\"seed\":3},"
		"\"mode\":\"training\",\"loss\":\"mse\","
		"\"target\":{\"init\":\"zeros\"},"
		"\"optimizer\":{\"type\":\"sgd\",\"lr\":0.1},\"steps\":3}";
	struct buffer b = BUFFER_INIT;
	struct tpsim_config *c = NULL;
	struct tpsim_result *r = NULL;
	cJSON *trace;

	ck_assert_int_eq(tpsim_config_parse(cfg, sizeof cfg - 1, "t.json", NULL,
					    0, &c, NULL),
			 TPSIM_OK);
	ck_assert_int_eq(tpsim_run(c, NULL, append, &b, &r, NULL), TPSIM_OK);
	tpsim_config_free(c);
	trace = cJSON_Parse(b.data);
	const cJSON *result = cJSON_GetObjectItemCaseSensitive(trace, "result");
	size_t steps = tpsim_result_steps(r);

	ck_assert_uint_eq(steps, 3);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
				 result, "loss")),
			 (int)steps);
	for (size_t s = 0; s < steps; s++) {
		ck_assert((float)tpsim_result_loss(r, s) ==
			  result_number(result, "loss", (int)s));
		ck_assert((float)tpsim_result_reference_loss(r, s) ==
			  result_number(result, "reference_loss", (int)s));
	}
	ck_assert(isnan(tpsim_result_loss(r, steps)));
	/* Each compared tensor's figures are the trace's result.bounds, in
	 * its order: the output, each step's loss, each gradient, each
	 * parameter after (uniform draws: every one by its bound). */
	{
		const cJSON *bounds =
			cJSON_GetObjectItemCaseSensitive(result, "bounds");
		const cJSON *want[16];
		const char *names[16];
		size_t n = 0;
		const cJSON *e;
		want[n] = cJSON_GetObjectItemCaseSensitive(bounds, "output");
		names[n++] = "fc.out";
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(bounds,
								       "loss"))
		{
			want[n] = e;
			names[n++] = "loss";
		}
		/* fc.weight and fc.bias (linear's default bias). */
		want[n] = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(bounds, "grads"),
			"fc.weight");
		names[n++] = "fc.weight.grad";
		want[n] = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(bounds, "grads"),
			"fc.bias");
		names[n++] = "fc.bias.grad";
		want[n] = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(bounds,
							 "params_after"),
			"fc.weight");
		names[n++] = "fc.weight";
		want[n] = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(bounds,
							 "params_after"),
			"fc.bias");
		names[n++] = "fc.bias";
		ck_assert_uint_eq(tpsim_result_tensor_count(r), n);
		ck_assert_int_eq(tpsim_result_compared(r), (int)n);
		ck_assert_int_eq(tpsim_result_bounded(r), (int)n);
		for (size_t i = 0; i < n; i++) {
			ck_assert_ptr_nonnull(want[i]);
			ck_assert_str_eq(tpsim_result_tensor_name(r, i),
					 names[i]);
			ck_assert_str_eq(
				tpsim_result_tensor_rule(r, i),
				cJSON_GetObjectItemCaseSensitive(want[i],
								 "rule")
					->valuestring);
			ck_assert_int_eq(tpsim_result_tensor_match(r, i), 1);
			ck_assert((float)tpsim_result_tensor_max_abs_diff(
					  r, i) ==
				  (float)cJSON_GetObjectItemCaseSensitive(
					  want[i], "max_abs_diff")
					  ->valuedouble);
			ck_assert((float)tpsim_result_tensor_max_bound(r, i) ==
				  (float)cJSON_GetObjectItemCaseSensitive(
					  want[i], "max_bound")
					  ->valuedouble);
			ck_assert(tpsim_result_tensor_ratio(r, i) <= 1.0);
			/* A bound: no reason to have none. */
			ck_assert_ptr_null(tpsim_result_tensor_no_bound(r, i));
		}
		ck_assert_ptr_null(tpsim_result_tensor_name(r, n));
		ck_assert(isnan(tpsim_result_tensor_max_bound(r, n)));
		ck_assert(tpsim_result_max_bound(r) > 0.0);
	}
	cJSON_Delete(trace);
	tpsim_result_free(r);
	buffer_free(&b);
}
END_TEST

/* Warnings and an injected mistake's diagnosis, as the trace has them. */
START_TEST(result_warnings_and_diagnosis_are_the_trace_s)
{
	struct buffer b = BUFFER_INIT;
	struct tpsim_result *r = run_config(
		src("examples/tutorial/08_tp_outer/config.json"), NULL, &b);
	cJSON *trace = cJSON_Parse(b.data);
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(trace, "warnings");

	ck_assert_uint_gt(tpsim_result_warning_count(r), 0);
	ck_assert_int_eq(cJSON_GetArraySize(w),
			 (int)tpsim_result_warning_count(r));
	for (size_t i = 0; i < tpsim_result_warning_count(r); i++) {
		ck_assert_str_eq(tpsim_result_warning(r, i),
				 cJSON_GetArrayItem(w, (int)i)->valuestring);
	}
	cJSON_Delete(trace);
	tpsim_result_free(r);
	buffer_free(&b);

	r = run_config(src("examples/mistakes/skip_all_reduce.json"), NULL, &b);
	trace = cJSON_Parse(b.data);
	ck_assert_int_eq(tpsim_result_match(r), 0);
	ck_assert_ptr_nonnull(tpsim_result_diagnosis(r));
	ck_assert_str_eq(
		tpsim_result_diagnosis(r),
		cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(trace, "result"),
			"diagnosis")
			->valuestring);
	cJSON_Delete(trace);
	tpsim_result_free(r);
	buffer_free(&b);
}
END_TEST

START_TEST(symbolic_run_has_no_comparison)
{
	struct tpsim_run_options o;
	struct buffer b = BUFFER_INIT;
	struct tpsim_result *r;
	struct tpsim_trace *t;

	tpsim_run_options_init(&o);
	o.symbolic = 1;
	r = run_config(src(EXAMPLE "/config.json"), &o, &b);
	ck_assert_int_eq(tpsim_result_symbolic(r), 1);
	ck_assert_int_eq(tpsim_result_match(r), 1);
	ck_assert_int_eq(tpsim_result_comparison(r), TPSIM_COMPARISON_NONE);
	ck_assert(tpsim_result_max_abs_diff(r) == 0.0);
	ck_assert_ptr_nonnull(strstr(tpsim_result_verdict(r),
				     "symbolic: no values, no reference"));
	t = parse_trace(&b);
	ck_assert_uint_eq(tpsim_event_rank_count(event_of_op(t, "all_reduce")),
			  0);
	tpsim_trace_free(t);
	tpsim_result_free(r);
	buffer_free(&b);
}
END_TEST

/* Grouped-query attention has an error-bound rule (nn_bounds.h): the
 * hand-derived fixture (inference) and a training step of GQA with
 * rotary embeddings on a dp 2 x tp 2 mesh compare every tensor by its
 * bound, and the bounds hold. */
START_TEST(grouped_query_attention_runs_have_bounds)
{
	static const char text[] =
		"{\"tpsim\":1,\"mesh\":{\"shape\":[2,2],\"dim_names\":"
		"[\"dp\",\"tp\"]},\"dp_dim\":\"dp\",\"model\":[{\"name\":"
		"\"attn\",\"type\":\"attention\",\"embed_dim\":16,"
		"\"num_heads\":4,\"num_kv_heads\":2,\"causal\":true,"
		"\"rope_theta\":10000}],\"plan\":{\"attn.[qkv]\":"
		"\"colwise\",\"attn.o\":\"rowwise\"},\"input\":{\"shape\":"
		"[4,5,16],\"requires_grad\":true},\"init\":{\"method\":"
		"\"uniform\",\"seed\":3},\"mode\":\"training\",\"steps\":2}";
	struct buffer b = BUFFER_INIT;
	struct tpsim_config *c = NULL;
	struct tpsim_error *e = NULL;
	struct tpsim_result *r =
		run_config(src("fixtures/gqa_4_heads_2_kv_over_2_ranks/"
			       "config.json"),
			   NULL, &b);
	ck_assert_int_eq(tpsim_result_match(r), 1);
	ck_assert_int_eq(tpsim_result_comparison(r), TPSIM_COMPARISON_BOUND);
	tpsim_result_free(r);
	buffer_free(&b);
	b = (struct buffer)BUFFER_INIT;
	ck_assert_msg(tpsim_config_parse(text, sizeof text - 1, "gqa.json",
					 NULL, 0, &c, &e) == TPSIM_OK,
		      "%s", tpsim_error_message(e));
	ck_assert_int_eq(tpsim_run(c, NULL, append, &b, &r, NULL), TPSIM_OK);
	printf("gqa + rope training: %s\n", tpsim_result_verdict(r));
	ck_assert_int_eq(tpsim_result_match(r), 1);
	ck_assert_int_eq(tpsim_result_comparison(r), TPSIM_COMPARISON_BOUND);
	tpsim_result_free(r);
	tpsim_config_free(c);
	buffer_free(&b);
}
END_TEST

/* Refused runs write nothing, through the callback or to the file. */
START_TEST(refused_run_writes_nothing)
{
	struct tpsim_config *c = load_config(src(EXAMPLE "/config.json"));
	struct tpsim_run_options o;
	struct tpsim_result *r = (struct tpsim_result *)&r;
	struct tpsim_result *const untouched = r;
	struct buffer b = BUFFER_INIT;
	struct tpsim_error *e = NULL;
	struct stat st;

	make_tmp();
	tpsim_run_options_init(&o);
	o.max_memory = 16;
	ck_assert_int_eq(tpsim_run(c, &o, append, &b, &r, &e), TPSIM_ERR_LIMIT);
	ck_assert_ptr_eq(r, untouched);
	ck_assert_int_eq(b.calls, 0);
	ck_assert_ptr_nonnull(strstr(tpsim_error_message(e), "--max-memory"));
	tpsim_error_free(e);
	ck_assert_int_eq(tpsim_run_to_file(c, &o, tmp("t.json"), &r, NULL),
			 TPSIM_ERR_LIMIT);
	ck_assert_int_ne(stat(tmp("t.json"), &st), 0);
	o.max_memory = (int64_t)8 << 30;
	o.max_trace = 100;
	ck_assert_int_eq(tpsim_run(c, &o, append, &b, &r, NULL),
			 TPSIM_ERR_LIMIT);
	ck_assert_int_eq(b.calls, 0);
	o.max_trace = (int64_t)1 << 30;
	o.threads = 257;
	ck_assert_int_eq(tpsim_run(c, &o, append, &b, &r, NULL),
			 TPSIM_ERR_USAGE);
	o.threads = -1;
	ck_assert_int_eq(tpsim_run(c, &o, append, &b, &r, NULL),
			 TPSIM_ERR_USAGE);
	ck_assert_int_eq(b.calls, 0);
	/* A directory is no trace file. */
	ck_assert_int_eq(tpsim_run_to_file(c, NULL, tmp_dir, &r, NULL),
			 TPSIM_ERR_IO);
	ck_assert_ptr_eq(r, untouched);
	tpsim_config_free(c);
	remove_tmp();
}
END_TEST

/* A run may not write its trace over its own config. */
START_TEST(run_to_file_refuses_the_config_s_file)
{
	struct tpsim_config *c;
	struct tpsim_result *r = NULL;
	struct tpsim_error *e = NULL;
	char *before, *after;

	make_tmp();
	{
		size_t len = 0;
		char *text = slurp(src(EXAMPLE "/config.json"), &len);
		FILE *f = fopen(tmp("c.json"), "wb");
		ck_assert_ptr_nonnull(f);
		fwrite(text, 1, len, f);
		fclose(f);
		free(text);
	}
	c = load_config(tmp("c.json"));
	before = slurp(tmp("c.json"), NULL);
	ck_assert_int_eq(tpsim_run_to_file(c, NULL, tmp("c.json"), &r, &e),
			 TPSIM_ERR_USAGE);
	ck_assert_ptr_null(r);
	after = slurp(tmp("c.json"), NULL);
	ck_assert_str_eq(before, after);
	tpsim_error_free(e);
	free(before);
	free(after);
	tpsim_config_free(c);
	remove_tmp();
}
END_TEST

/* A write callback that fails is an I/O error. */
START_TEST(failing_write_is_an_io_error)
{
	struct tpsim_config *c = load_config(src(EXAMPLE "/config.json"));
	struct tpsim_result *r = NULL;
	struct tpsim_trace *t;
	struct buffer b = BUFFER_INIT, fail = {NULL, 0, 0, 0};
	struct tpsim_error *e = NULL;

	ck_assert_int_eq(tpsim_run(c, NULL, append, &fail, &r, &e),
			 TPSIM_ERR_IO);
	ck_assert_ptr_null(r);
	tpsim_error_free(e);
	tpsim_result_free(run_config(src(EXAMPLE "/config.json"), NULL, &b));
	t = parse_trace(&b);
	ck_assert_int_eq(tpsim_explain(t, NULL, append, &fail, NULL),
			 TPSIM_ERR_IO);
	ck_assert_int_eq(tpsim_view(t, append, &fail, NULL), TPSIM_ERR_IO);
	tpsim_trace_free(t);
	tpsim_config_free(c);
	buffer_free(&b);
}
END_TEST

/* ---- traces ----------------------------------------------------------- */

/* The all_reduce of the 2x4 example, read through the API: every field,
 * and the values of DERIVATION.md. */
START_TEST(trace_events_of_the_2x4_example)
{
	static const float reduced[] = {30, 70, 70, 174};
	static const float output[] = {31, 72, 71, 176};
	struct tpsim_trace *t = NULL;
	const struct tpsim_event *ev;
	int64_t shape[TPSIM_MAX_DIMS];
	struct tpsim_error *e = NULL;

	ck_assert_int_eq(
		tpsim_trace_load(
			src("tests/golden/"
			    "seed_2x4_rowwise_after_reduce.trace.json"),
			&t, &e),
		TPSIM_OK);
	ev = event_of_op(t, "all_reduce");
	ck_assert_int_eq(tpsim_event_seq(ev),
			 (int64_t)(ev == tpsim_trace_event(
						 t, (size_t)tpsim_event_seq(ev))
					   ? tpsim_event_seq(ev)
					   : -2));
	ck_assert_int_eq(tpsim_event_step(ev), 0);
	ck_assert_str_eq(tpsim_event_phase(ev), "forward");
	ck_assert_str_eq(tpsim_event_module(ev), "fc");
	ck_assert_str_eq(tpsim_event_kind(ev), "collective");
	ck_assert_str_eq(tpsim_event_tensor(ev), "fc.out");
	ck_assert_str_eq(tpsim_event_mesh_dim(ev), "tp");
	ck_assert_uint_eq(tpsim_event_group_count(ev), 1);
	ck_assert_uint_eq(tpsim_event_group_size(ev, 0), 2);
	ck_assert_int_eq(tpsim_event_group_rank(ev, 0, 0), 0);
	ck_assert_int_eq(tpsim_event_group_rank(ev, 0, 1), 1);
	ck_assert_int_eq(tpsim_event_group_rank(ev, 0, 2), -1);
	ck_assert_uint_eq(tpsim_event_placement_count(ev), 1);
	ck_assert_str_eq(tpsim_event_placement(ev, 0), "replicate");
	ck_assert_ptr_null(tpsim_event_placement(ev, 1));
	ck_assert_uint_eq(tpsim_event_global_shape(ev, shape), 2);
	ck_assert_int_eq(shape[0], 2);
	ck_assert_int_eq(shape[1], 2);
	ck_assert_int_eq(tpsim_event_bytes_per_rank(ev), 16);
	ck_assert_uint_eq(tpsim_event_rank_count(ev), 2);
	for (size_t r = 0; r < 2; r++) {
		const struct tpsim_tensor *rt = tpsim_event_rank(ev, r);
		ck_assert_int_eq(tpsim_tensor_has_values(rt), 1);
		ck_assert_uint_eq(tpsim_tensor_numel(rt), 4);
		assert_values(rt, reduced, 4);
	}
	ck_assert_ptr_null(tpsim_event_rank(ev, 2));
	assert_values(tpsim_trace_result_tensor(t, "output", NULL), output, 4);
	assert_values(tpsim_trace_result_tensor(t, "reference_output", NULL),
		      output, 4);
	/* A setup event has no step; a compute event no mesh dim. */
	ck_assert_int_eq(tpsim_event_step(tpsim_trace_event(t, 0)), -1);
	ck_assert_str_eq(tpsim_event_phase(tpsim_trace_event(t, 0)), "setup");
	ck_assert_ptr_null(tpsim_event_mesh_dim(event_of_op(t, "matmul")));
	ck_assert_uint_eq(tpsim_event_group_count(event_of_op(t, "matmul")), 0);
	ck_assert_ptr_null(tpsim_trace_event(t, tpsim_trace_event_count(t)));
	/* Inference has no grads. */
	ck_assert_ptr_null(tpsim_trace_result_tensor(t, "grads", "fc.weight"));
	ck_assert_uint_eq(tpsim_trace_result_count(t, "grads"), 0);
	ck_assert_ptr_null(tpsim_trace_result_tensor(t, "nonsense", NULL));
	tpsim_trace_free(t);
}
END_TEST

/* The text a trace was read from, for a reader of its own: the file's
 * bytes, or those given to tpsim_trace_parse. */
START_TEST(trace_text_is_the_bytes_read)
{
	const char *path =
		src("tests/golden/seed_2x4_rowwise_after_reduce.trace.json");
	struct tpsim_trace *t = NULL, *p = NULL;
	size_t len = 0, n = 7;
	char *want = slurp(path, &len);
	const char *text;

	ck_assert_int_eq(tpsim_trace_load(path, &t, NULL), TPSIM_OK);
	text = tpsim_trace_text(t, &n);
	ck_assert_uint_eq(n, len);
	ck_assert_int_eq(memcmp(text, want, len), 0);
	ck_assert_ptr_eq(tpsim_trace_text(t, NULL), text);
	ck_assert_int_eq(tpsim_trace_parse(want, len, "t", &p, NULL), TPSIM_OK);
	text = tpsim_trace_text(p, &n);
	ck_assert_uint_eq(n, len);
	ck_assert_ptr_ne(text, want);
	ck_assert_int_eq(memcmp(text, want, len), 0);
	ck_assert_ptr_null(tpsim_trace_text(NULL, &n));
	ck_assert_uint_eq(n, 0);
	tpsim_trace_free(p);
	tpsim_trace_free(t);
	free(want);
}
END_TEST

static struct tpsim_trace *golden(const char *name);

/* The largest bound of any rank's shard at event. */
static double shard_bounds_max(const struct tpsim_bounds *b,
			       const struct tpsim_event *ev)
{
	double top = 0.0;
	for (size_t r = 0; r < tpsim_event_rank_count(ev); r++) {
		float v[64];
		size_t n = 0;
		ck_assert_int_eq(tpsim_bounds_shard(b, ev, r, v, 64, &n, NULL),
				 TPSIM_OK);
		ck_assert_uint_eq(n,
				  tpsim_tensor_numel(tpsim_event_rank(ev, r)));
		for (size_t i = 0; i < n; i++) {
			ck_assert(v[i] >= 0.0f);
			top = v[i] > top ? v[i] : top;
		}
	}
	return top;
}

/* The event of tensor in phase, the last one. */
static const struct tpsim_event *
last_event(const struct tpsim_trace *t, const char *phase, const char *tensor)
{
	const struct tpsim_event *found = NULL;
	for (size_t i = 0; i < tpsim_trace_event_count(t); i++) {
		const struct tpsim_event *ev = tpsim_trace_event(t, i);
		if (strcmp(tpsim_event_phase(ev), phase) == 0 &&
		    strcmp(tpsim_event_tensor(ev), tensor) == 0) {
			found = ev;
		}
	}
	ck_assert_ptr_nonnull(found);
	return found;
}

/*
 * The bounds the API makes again from a trace's config are those the run
 * compared with: each compared tensor's largest 2 e over every rank's
 * shard is the trace's result.bounds max_bound (the output at its last
 * forward event, the gradients after the dp average, the parameters
 * after the update); the 2x4 example's integers are exact everywhere.
 */
START_TEST(bounds_are_the_runs)
{
	static const char *const params[] = {"fc1.weight", "fc1.bias",
					     "fc2.weight", "fc2.bias"};
	struct tpsim_trace *t = golden("train_dp2_tp2_mse");
	struct tpsim_trace *x = golden("seed_2x4_rowwise_after_reduce");
	struct tpsim_bounds *b = NULL, *bx = NULL;
	struct tpsim_error *e = NULL;
	size_t len = 0, n = 99;
	char *text =
		slurp(src("tests/golden/train_dp2_tp2_mse.trace.json"), &len);
	cJSON *tree = cJSON_Parse(text);
	const cJSON *bounds = cJSON_GetObjectItem(
		cJSON_GetObjectItem(tree, "result"), "bounds");
	float v[64];

	ck_assert_ptr_nonnull(bounds);
	ck_assert_int_eq(tpsim_trace_bounds(t, 1, &b, &e), TPSIM_OK);
	ck_assert_double_eq(
		shard_bounds_max(b, last_event(t, "forward", "fc2.out")),
		cJSON_GetObjectItem(cJSON_GetObjectItem(bounds, "output"),
				    "max_bound")
			->valuedouble);
	for (size_t i = 0; i < 4; i++) {
		char grad[64];
		snprintf(grad, sizeof grad, "%s.grad", params[i]);
		ck_assert_float_eq(
			(float)shard_bounds_max(
				b, last_event(t, "optimizer", grad)),
			(float)cJSON_GetObjectItem(
				cJSON_GetObjectItem(
					cJSON_GetObjectItem(bounds, "grads"),
					params[i]),
				"max_bound")
				->valuedouble);
		ck_assert_float_eq(
			(float)shard_bounds_max(
				b, last_event(t, "optimizer", params[i])),
			(float)cJSON_GetObjectItem(
				cJSON_GetObjectItem(
					cJSON_GetObjectItem(bounds,
							    "params_after"),
					params[i]),
				"max_bound")
				->valuedouble);
	}
	/* A partial value (each dp rank's own rows' sum) has none; nor an
	 * event before the last of its tensor (the all_reduce before the
	 * bias); a rank out of range is usage. */
	ck_assert_int_eq(
		tpsim_bounds_shard(b,
				   last_event(t, "backward", "fc1.weight.grad"),
				   0, v, 64, &n, &e),
		TPSIM_ERR_INPUT);
	ck_assert_ptr_nonnull(strstr(tpsim_error_message(e), "partial"));
	tpsim_error_free(e);
	e = NULL;
	ck_assert_int_eq(tpsim_bounds_shard(b, event_of_op(t, "all_reduce"), 0,
					    v, 64, &n, &e),
			 TPSIM_ERR_INPUT);
	ck_assert_ptr_nonnull(strstr(tpsim_error_message(e),
				     "fc2.out at seq 9 has no bound: the bound "
				     "is of the tensor's value at the last "
				     "event of its step and phase, seq 10"));
	tpsim_error_free(e);
	e = NULL;
	ck_assert_int_eq(tpsim_bounds_shard(b, tpsim_trace_event(t, 0), 4, v,
					    64, &n, &e),
			 TPSIM_ERR_USAGE);
	tpsim_error_free(e);
	e = NULL;
	/* Room for too few: *n says how many. */
	ck_assert_int_eq(tpsim_bounds_shard(b, tpsim_trace_event(t, 0), 0, NULL,
					    0, &n, NULL),
			 TPSIM_ERR_USAGE);
	ck_assert_uint_eq(n, 8);
	ck_assert_int_eq(tpsim_trace_bounds(x, 0, &bx, NULL), TPSIM_OK);
	for (size_t i = 0; i < tpsim_trace_event_count(x); i++) {
		const struct tpsim_event *ev = tpsim_trace_event(x, i);
		if (strcmp(tpsim_event_placement(ev, 0), "partial") == 0 ||
		    ev != last_event(x, tpsim_event_phase(ev),
				     tpsim_event_tensor(ev))) {
			continue;
		}
		ck_assert_double_eq(shard_bounds_max(bx, ev), 0.0);
	}
	ck_assert_int_eq(tpsim_trace_bounds(x, 257, &bx, NULL),
			 TPSIM_ERR_USAGE);
	ck_assert_int_eq(tpsim_trace_bounds(NULL, 0, &bx, NULL),
			 TPSIM_ERR_MISUSE);
	tpsim_bounds_free(bx);
	tpsim_bounds_free(b);
	tpsim_bounds_free(NULL);
	cJSON_Delete(tree);
	free(text);
	tpsim_trace_free(t);
	tpsim_trace_free(x);
}
END_TEST

/* A symbolic trace has no values to bound: an error at its pointer. */
START_TEST(bounds_of_a_symbolic_trace_are_refused)
{
	struct tpsim_config *c = load_config(src(EXAMPLE "/config.json"));
	struct tpsim_run_options o;
	struct tpsim_result *r = NULL;
	struct tpsim_trace *t = NULL;
	struct tpsim_bounds *b = NULL;
	struct tpsim_error *e = NULL;
	struct buffer buf = BUFFER_INIT;

	tpsim_run_options_init(&o);
	o.symbolic = 1;
	ck_assert_int_eq(tpsim_run(c, &o, append, &buf, &r, NULL), TPSIM_OK);
	t = parse_trace(&buf);
	ck_assert_int_eq(tpsim_trace_bounds(t, 0, &b, &e), TPSIM_ERR_INPUT);
	ck_assert_ptr_null(b);
	ck_assert_str_eq(tpsim_error_pointer(e), "/config/compute");
	tpsim_error_free(e);
	tpsim_trace_free(t);
	tpsim_result_free(r);
	tpsim_config_free(c);
	buffer_free(&buf);
}
END_TEST

/* Whether every value of tensor is a bfloat16 (its low 16 bits 0). */
static int all_bfloat16(const struct tpsim_tensor *tensor, size_t *count)
{
	float v[256];
	size_t n = 0;
	ck_assert_int_eq(tpsim_tensor_values(tensor, v, 256, &n, NULL),
			 TPSIM_OK);
	for (size_t i = 0; i < n; i++) {
		uint32_t bits;
		memcpy(&bits, &v[i], sizeof bits);
		if (bits & 0xffffu) {
			return 0;
		}
	}
	*count += n;
	return 1;
}

/* A scalar (a loss, shape []) has one value, written as a number. */
START_TEST(scalar_values_are_values)
{
	struct tpsim_trace *t = golden("train_dp2_tp2_mse");
	const struct tpsim_event *ev = event_of_op(t, "mse");
	const struct tpsim_tensor *r0 = tpsim_event_rank(ev, 0);
	int64_t shape[TPSIM_MAX_DIMS];
	float v = -1;
	size_t n = 0;

	ck_assert_uint_eq(tpsim_tensor_shape(r0, shape), 0);
	ck_assert_uint_eq(tpsim_tensor_numel(r0), 1);
	ck_assert_int_eq(tpsim_tensor_has_values(r0), 1);
	ck_assert_int_eq(tpsim_tensor_values(r0, &v, 1, &n, NULL), TPSIM_OK);
	ck_assert_uint_eq(n, 1);
	/* The golden trace's rank 0 loss: "values": 1. */
	ck_assert_float_eq(v, 1.0f);
	tpsim_trace_free(t);
}
END_TEST

/* A bfloat16 trace's values are its bfloat16s: "0.0039" is 2^-8, not the
 * float32 nearest 0.0039 (docs/trace.md, "Dtypes"). */
START_TEST(bfloat16_values_are_bfloat16s)
{
	struct tpsim_trace *t = golden("bf16_all_reduce_3_ranks");
	size_t count = 0;
	for (size_t i = 0; i < tpsim_trace_event_count(t); i++) {
		const struct tpsim_event *ev = tpsim_trace_event(t, i);
		for (size_t r = 0; r < tpsim_event_rank_count(ev); r++) {
			ck_assert_msg(
				all_bfloat16(tpsim_event_rank(ev, r), &count),
				"event %zu rank %zu", i, r);
		}
	}
	ck_assert(all_bfloat16(tpsim_trace_result_tensor(t, "output", NULL),
			       &count));
	ck_assert_uint_gt(count, 20);
	tpsim_trace_free(t);
}
END_TEST

/* Training traces: grads and params_after by name, in the trace's order. */
START_TEST(trace_result_tensors_by_name)
{
	struct tpsim_trace *t = NULL;
	cJSON *tree;
	char *text;
	size_t len;
	const char *path =
		src("tests/golden/train_seed_2x4_rowwise_backward.trace.json");
	static const char *const sections[] = {"grads", "reference_grads",
					       "params_after",
					       "reference_params_after"};

	ck_assert_int_eq(tpsim_trace_load(path, &t, NULL), TPSIM_OK);
	text = slurp(path, &len);
	tree = cJSON_Parse(text);
	for (size_t s = 0; s < 4; s++) {
		const cJSON *want = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(tree, "result"),
			sections[s]);
		const cJSON *w;
		size_t i = 0;
		ck_assert_uint_eq(tpsim_trace_result_count(t, sections[s]),
				  (size_t)cJSON_GetArraySize(want));
		ck_assert_uint_gt(tpsim_trace_result_count(t, sections[s]), 0);
		cJSON_ArrayForEach(w, want)
		{
			const struct tpsim_tensor *tt;
			const cJSON *v;
			float got[256];
			size_t n = 0, k = 0;
			ck_assert_str_eq(
				tpsim_trace_result_name(t, sections[s], i++),
				w->string);
			tt = tpsim_trace_result_tensor(t, sections[s],
						       w->string);
			ck_assert_ptr_nonnull(tt);
			ck_assert_int_eq(
				tpsim_tensor_values(tt, got, 256, &n, NULL),
				TPSIM_OK);
			/* Nested rows, flattened in order. */
			cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(
						      w, "values"))
			{
				const cJSON *x;
				if (cJSON_IsNumber(v)) {
					ck_assert(got[k++] ==
						  (float)v->valuedouble);
					continue;
				}
				cJSON_ArrayForEach(x, v)
				{
					ck_assert(got[k++] ==
						  (float)x->valuedouble);
				}
			}
			ck_assert_uint_eq(k, n);
		}
		ck_assert_ptr_null(tpsim_trace_result_name(t, sections[s], i));
	}
	cJSON_Delete(tree);
	free(text);
	tpsim_trace_free(t);
}
END_TEST

START_TEST(tensor_values_need_room_and_values)
{
	struct tpsim_trace *t = NULL;
	const struct tpsim_tensor *out;
	float v[4] = {-1, -1, -1, -1};
	size_t n = 0;
	struct tpsim_error *e = NULL;
	struct buffer b = BUFFER_INIT;
	static const char cfg[] =
		"{\"tpsim\":1,\"mesh\":{\"shape\":[2],\"dim_names\":[\"tp\"]},"
		"\"model\":[{\"name\":\"fc\",\"type\":\"linear\","
		"\"in_features\":4,\"out_features\":2}],"
		"\"input\":{\"shape\":[2,4]},\"trace\":{\"values\":\"summary\"}"
		"}";
	struct tpsim_config *c = NULL;
	struct tpsim_result *r = NULL;

	ck_assert_int_eq(
		tpsim_trace_load(
			src("tests/golden/"
			    "seed_2x4_rowwise_after_reduce.trace.json"),
			&t, NULL),
		TPSIM_OK);
	out = tpsim_trace_result_tensor(t, "output", NULL);
	ck_assert_int_eq(tpsim_tensor_values(out, NULL, 0, &n, NULL),
			 TPSIM_ERR_USAGE);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(tpsim_tensor_values(out, v, 3, &n, &e),
			 TPSIM_ERR_USAGE);
	ck_assert(v[0] == -1.0f);
	tpsim_error_free(e);
	tpsim_trace_free(t);
	/* A summary trace has shapes and no values. */
	ck_assert_int_eq(tpsim_config_parse(cfg, sizeof cfg - 1, "s.json", NULL,
					    0, &c, NULL),
			 TPSIM_OK);
	ck_assert_int_eq(tpsim_run(c, NULL, append, &b, &r, NULL), TPSIM_OK);
	t = parse_trace(&b);
	out = tpsim_trace_result_tensor(t, "output", NULL);
	ck_assert_int_eq(tpsim_tensor_has_values(out), 0);
	ck_assert_uint_eq(tpsim_tensor_numel(out), 4);
	ck_assert_int_eq(tpsim_tensor_values(out, v, 4, &n, NULL),
			 TPSIM_ERR_INPUT);
	tpsim_trace_free(t);
	tpsim_result_free(r);
	tpsim_config_free(c);
	buffer_free(&b);
}
END_TEST

/* A bad trace is refused by the one reader, at its pointer. */
START_TEST(bad_trace_gives_file_and_pointer)
{
	static const char bad[] = "{\"format\":\"tpsim.trace\",\"version\":2}";
	struct tpsim_trace *t = NULL;
	struct tpsim_error *e = NULL;

	ck_assert_int_eq(
		tpsim_trace_parse(bad, sizeof bad - 1, "t.json", &t, &e),
		TPSIM_ERR_INPUT);
	ck_assert_ptr_null(t);
	ck_assert_str_eq(tpsim_error_file(e), "t.json");
	ck_assert_str_eq(tpsim_error_pointer(e), "/version");
	tpsim_error_free(e);
	e = NULL;
	/* A config is not a trace. */
	ck_assert_int_eq(tpsim_trace_load(src(EXAMPLE "/config.json"), &t, &e),
			 TPSIM_ERR_INPUT);
	ck_assert_ptr_nonnull(strstr(tpsim_error_message(e), "config"));
	tpsim_error_free(e);
}
END_TEST

/* ---- check ------------------------------------------------------------ */

struct mismatches {
	int n;
	char pointer[4][256], expected[4][64], got[4][64];
	int64_t seq[4];
	char line[4][512];
};

static void collect(void *ctx, const struct tpsim_mismatch *m)
{
	struct mismatches *ms = ctx;
	if (ms->n < 4) {
		snprintf(ms->pointer[ms->n], 256, "%s",
			 m->pointer ? m->pointer : "(null)");
		snprintf(ms->expected[ms->n], 64, "%s",
			 m->expected ? m->expected : "(null)");
		snprintf(ms->got[ms->n], 64, "%s", m->got ? m->got : "(null)");
		ms->seq[ms->n] = m->seq;
		snprintf(ms->line[ms->n], 512, "%s", m->line);
	}
	ms->n++;
}

START_TEST(check_reports_each_mismatch_apart)
{
	struct tpsim_trace *t = NULL;
	struct mismatches ms = {0};
	size_t count = 99;
	struct tpsim_error *e = NULL;
	char *fixture, *wrong;
	size_t len;
	const struct tpsim_event *ev;

	ck_assert_int_eq(
		tpsim_trace_load(
			src("tests/golden/"
			    "seed_2x4_rowwise_after_reduce.trace.json"),
			&t, NULL),
		TPSIM_OK);
	ck_assert_int_eq(tpsim_check(t, src(EXAMPLE "/fixture.json"), collect,
				     &ms, &count, &e),
			 TPSIM_OK);
	ck_assert_uint_eq(count, 0);
	ck_assert_int_eq(ms.n, 0);
	/* The fixture's hand-derived 174 made 175. */
	fixture = slurp(src(EXAMPLE "/fixture.json"), &len);
	wrong = strstr(fixture, "174");
	ck_assert_ptr_nonnull(wrong);
	wrong[2] = '5';
	ck_assert_int_eq(tpsim_check_parse(t, fixture, len, "fix.json", collect,
					   &ms, &count, &e),
			 TPSIM_OK);
	ck_assert_uint_ge(count, 1);
	ck_assert_str_eq(ms.expected[0], "175");
	ck_assert_str_eq(ms.got[0], "174");
	ck_assert_int_ge(ms.seq[0], 0);
	ev = tpsim_trace_event(t, (size_t)ms.seq[0]);
	ck_assert_ptr_nonnull(ev);
	ck_assert_ptr_nonnull(strstr(ms.line[0], ms.pointer[0]));
	ck_assert_msg(strncmp(ms.pointer[0], "/events/", 8) == 0, "%s",
		      ms.pointer[0]);
	/* The report may be NULL: the count alone. */
	count = 0;
	ck_assert_int_eq(tpsim_check_parse(t, fixture, len, "fix.json", NULL,
					   NULL, &count, NULL),
			 TPSIM_OK);
	ck_assert_uint_ge(count, 1);
	free(fixture);
	/* A config where the fixture belongs: trouble, not a mismatch. */
	count = 99;
	ck_assert_int_eq(tpsim_check(t, src(EXAMPLE "/config.json"), collect,
				     &ms, &count, &e),
			 TPSIM_ERR_INPUT);
	ck_assert_uint_eq(count, 99);
	ck_assert_ptr_nonnull(tpsim_error_pointer(e));
	tpsim_error_free(e);
	tpsim_trace_free(t);
}
END_TEST

/* ---- explain, picture, timeline, view, comm: the verbs' bytes --------- */

static struct tpsim_trace *golden(const char *name)
{
	char rel[256];
	struct tpsim_trace *t = NULL;
	struct tpsim_error *e = NULL;
	snprintf(rel, sizeof rel, "tests/golden/%s.trace.json", name);
	ck_assert_msg(tpsim_trace_load(src(rel), &t, &e) == TPSIM_OK, "%s",
		      tpsim_error_message(e));
	return t;
}

START_TEST(explain_writes_tpsim_explain_s_bytes)
{
	const char *trace = src("tests/golden/mesh_2d_dp_tp.trace.json");
	struct tpsim_trace *t = golden("mesh_2d_dp_tp");
	struct tpsim_explain_options o;
	struct buffer b = BUFFER_INIT;

	make_tmp();
	tpsim_explain_options_init(&o);
	ck_assert_int_eq(tpsim_explain(t, &o, append, &b, NULL), TPSIM_OK);
	ck_assert_int_eq(tpsim_cli(tmp("x"), NULL, "explain", trace, NULL), 0);
	assert_same_bytes(&b, tmp("x"));
	buffer_free(&b);
	o.markdown = 1;
	o.step = 0;
	o.phase = "forward";
	o.max_values = 4;
	o.heading_level = 3;
	o.pictures = 1;
	ck_assert_int_eq(tpsim_explain(t, &o, append, &b, NULL), TPSIM_OK);
	ck_assert_int_eq(tpsim_cli(tmp("x"), NULL, "explain", trace, "--format",
				   "md", "--step", "0", "--phase", "forward",
				   "--max-values", "4", "--heading-level", "3",
				   "--pictures", NULL),
			 0);
	assert_same_bytes(&b, tmp("x"));
	buffer_free(&b);
	tpsim_explain_options_init(&o);
	o.module = "fc1";
	ck_assert_int_eq(tpsim_explain(t, &o, append, &b, NULL), TPSIM_OK);
	ck_assert_int_eq(tpsim_cli(tmp("x"), NULL, "explain", trace, "--module",
				   "fc1", NULL),
			 0);
	assert_same_bytes(&b, tmp("x"));
	buffer_free(&b);
	tpsim_trace_free(t);
	remove_tmp();
}
END_TEST

/* explain's options out of range, as the CLI's usage errors. */
START_TEST(explain_refuses_bad_options)
{
	struct tpsim_trace *t = golden("mesh_2d_dp_tp");
	struct tpsim_explain_options o;
	struct buffer b = BUFFER_INIT;
	struct tpsim_error *e = NULL;

	tpsim_explain_options_init(&o);
	o.heading_level = 2;
	ck_assert_int_eq(tpsim_explain(t, &o, append, &b, NULL),
			 TPSIM_ERR_USAGE);
	o.markdown = 1;
	o.heading_level = 5;
	ck_assert_int_eq(tpsim_explain(t, &o, append, &b, NULL),
			 TPSIM_ERR_USAGE);
	tpsim_explain_options_init(&o);
	o.phase = "sideways";
	ck_assert_int_eq(tpsim_explain(t, &o, append, &b, NULL),
			 TPSIM_ERR_USAGE);
	tpsim_explain_options_init(&o);
	o.step = -2;
	ck_assert_int_eq(tpsim_explain(t, &o, append, &b, NULL),
			 TPSIM_ERR_USAGE);
	tpsim_explain_options_init(&o);
	o.module = "fc3";
	ck_assert_int_eq(tpsim_explain(t, &o, append, &b, &e), TPSIM_ERR_INPUT);
	ck_assert_ptr_nonnull(strstr(tpsim_error_message(e), "'fc3'"));
	ck_assert_ptr_nonnull(strstr(tpsim_error_message(e), "closest"));
	ck_assert_ptr_null(strchr(tpsim_error_message(e), '\n'));
	ck_assert_int_eq(b.calls, 0);
	tpsim_error_free(e);
	tpsim_trace_free(t);
}
END_TEST

START_TEST(picture_timeline_view_write_the_verbs_bytes)
{
	const char *trace = src("tests/golden/mesh_2d_dp_tp.trace.json");
	struct tpsim_trace *t = golden("mesh_2d_dp_tp");
	struct buffer b = BUFFER_INIT;
	struct tpsim_error *e = NULL;

	make_tmp();
	ck_assert_int_eq(
		tpsim_picture_svg(t, "fc1.weight", -1, append, &b, NULL),
		TPSIM_OK);
	ck_assert_int_eq(tpsim_cli(NULL, NULL, "picture", trace, "--tensor",
				   "fc1.weight", "-o", tmp("p.svg"), NULL),
			 0);
	assert_same_bytes(&b, tmp("p.svg"));
	buffer_free(&b);
	ck_assert_int_eq(tpsim_picture_svg(t, "fc1.out", 5, append, &b, NULL),
			 tpsim_cli(NULL, NULL, "picture", trace, "--tensor",
				   "fc1.out", "--event", "5", "-o",
				   tmp("p5.svg"), NULL) == 0
				 ? TPSIM_OK
				 : TPSIM_ERR_INPUT);
	buffer_free(&b);
	ck_assert_int_eq(tpsim_picture_svg(t, "nothing", -1, append, &b, &e),
			 TPSIM_ERR_INPUT);
	ck_assert_str_eq(tpsim_error_pointer(e), "/events");
	ck_assert_int_eq(b.calls, 0);
	tpsim_error_free(e);
	ck_assert_int_eq(tpsim_timeline(t, append, &b, NULL), TPSIM_OK);
	ck_assert_int_eq(tpsim_cli(NULL, NULL, "timeline", trace, "-o",
				   tmp("tl.json"), NULL),
			 0);
	assert_same_bytes(&b, tmp("tl.json"));
	buffer_free(&b);
	ck_assert_int_eq(tpsim_view(t, append, &b, NULL), TPSIM_OK);
	ck_assert_int_eq(
		tpsim_cli(NULL, NULL, "view", trace, "-o", tmp("v.html"), NULL),
		0);
	assert_same_bytes(&b, tmp("v.html"));
	buffer_free(&b);
	tpsim_trace_free(t);
	remove_tmp();
}
END_TEST

START_TEST(comm_writes_tpsim_comm_s_bytes)
{
	const char *paths[2] = {src("examples/comm_sweep/config.json"),
				src(EXAMPLE "/config.json")};
	struct tpsim_config *c[2] = {load_config(paths[0]),
				     load_config(paths[1])};
	const struct tpsim_config *const *cs =
		(const struct tpsim_config *const *)c;
	struct buffer b = BUFFER_INIT;

	make_tmp();
	ck_assert_int_eq(tpsim_comm(cs, 2, TPSIM_COMM_TABLES, append, &b, NULL),
			 TPSIM_OK);
	ck_assert_int_eq(
		tpsim_cli(tmp("c"), NULL, "comm", paths[0], paths[1], NULL), 0);
	assert_same_bytes(&b, tmp("c"));
	buffer_free(&b);
	ck_assert_int_eq(tpsim_comm(cs, 2, TPSIM_COMM_JSON, append, &b, NULL),
			 TPSIM_OK);
	ck_assert_int_eq(tpsim_cli(tmp("c"), NULL, "comm", paths[0], paths[1],
				   "--json", NULL),
			 0);
	assert_same_bytes(&b, tmp("c"));
	buffer_free(&b);
	ck_assert_int_eq(
		tpsim_comm(cs, 1, TPSIM_COMM_SUMMARY, append, &b, NULL),
		TPSIM_OK);
	ck_assert_int_eq(
		tpsim_cli(tmp("c"), NULL, "comm", paths[0], "--summary", NULL),
		0);
	assert_same_bytes(&b, tmp("c"));
	buffer_free(&b);
	ck_assert_int_eq(tpsim_comm(cs, 0, TPSIM_COMM_JSON, append, &b, NULL),
			 TPSIM_ERR_USAGE);
	ck_assert_int_eq(
		tpsim_comm(cs, 1, (enum tpsim_comm_format)7, append, &b, NULL),
		TPSIM_ERR_USAGE);
	tpsim_config_free(c[0]);
	tpsim_config_free(c[1]);
	remove_tmp();
}
END_TEST

/* ---- misuse ----------------------------------------------------------- */

/* NULL where a pointer is required: TPSIM_ERR_MISUSE naming it, never a
 * crash; accessors give NULL, 0 or -1. */
START_TEST(null_arguments_are_misuse)
{
	struct tpsim_config *c = load_config(src(EXAMPLE "/config.json"));
	struct tpsim_config *out_c = NULL;
	struct tpsim_result *r = NULL;
	struct tpsim_trace *t = golden("seed_2x4_rowwise_after_reduce");
	struct tpsim_error *e = NULL;
	struct buffer b = BUFFER_INIT;
	size_t n = 0;
	const struct tpsim_config *const none[1] = {NULL};

	ck_assert_int_eq(tpsim_config_load(NULL, NULL, 0, &out_c, &e),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_error_status(e), TPSIM_ERR_MISUSE);
	ck_assert_str_eq(tpsim_error_message(e),
			 "tpsim_config_load: path is NULL");
	tpsim_error_free(e);
	ck_assert_int_eq(tpsim_config_load("x", NULL, 1, &out_c, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_config_load("x", NULL, 0, NULL, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(
		tpsim_config_parse(NULL, 0, "x", NULL, 0, &out_c, NULL),
		TPSIM_ERR_MISUSE);
	ck_assert_int_eq(
		tpsim_config_parse("{}", 2, NULL, NULL, 0, &out_c, NULL),
		TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_run(NULL, NULL, append, &b, &r, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_run(c, NULL, NULL, &b, &r, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_run(c, NULL, append, &b, NULL, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_run_to_file(c, NULL, NULL, &r, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_trace_load(NULL, &t, NULL), TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_trace_parse(NULL, 0, "x", NULL, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_check(NULL, "f", NULL, NULL, &n, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_check(t, "f", NULL, NULL, NULL, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(
		tpsim_check_parse(t, NULL, 0, "f", NULL, NULL, &n, NULL),
		TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_explain(NULL, NULL, append, &b, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_explain(t, NULL, NULL, &b, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_picture_svg(t, NULL, -1, append, &b, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_timeline(NULL, append, &b, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_view(t, NULL, NULL, NULL), TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_comm(NULL, 1, TPSIM_COMM_JSON, append, &b, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_comm(none, 1, TPSIM_COMM_JSON, append, &b, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(tpsim_tensor_values(NULL, NULL, 0, &n, NULL),
			 TPSIM_ERR_MISUSE);
	ck_assert_int_eq(b.calls, 0);
	ck_assert_ptr_null(out_c);
	/* Accessors of NULL. */
	ck_assert_int_eq(tpsim_result_match(NULL), 0);
	ck_assert(tpsim_result_max_abs_diff(NULL) == 0.0);
	ck_assert_int_eq(tpsim_result_comparison(NULL), TPSIM_COMPARISON_NONE);
	ck_assert_int_eq(tpsim_result_compared(NULL), 0);
	ck_assert_int_eq(tpsim_result_exact(NULL), 0);
	ck_assert_int_eq(tpsim_result_bounded(NULL), 0);
	ck_assert(tpsim_result_max_bound(NULL) == 0.0);
	ck_assert_uint_eq(tpsim_result_tensor_count(NULL), 0);
	ck_assert_ptr_null(tpsim_result_tensor_name(NULL, 0));
	ck_assert_ptr_null(tpsim_result_tensor_rule(NULL, 0));
	ck_assert_int_eq(tpsim_result_tensor_match(NULL, 0), 0);
	ck_assert(isnan(tpsim_result_tensor_ratio(NULL, 0)));
	ck_assert_str_eq(tpsim_result_tensor_worst(NULL, 0), "");
	ck_assert_ptr_null(tpsim_result_tensor_no_bound(NULL, 0));
	ck_assert_uint_eq(tpsim_result_steps(NULL), 0);
	ck_assert(isnan(tpsim_result_loss(NULL, 0)));
	ck_assert(isnan(tpsim_result_reference_loss(NULL, 0)));
	ck_assert_int_eq(tpsim_result_symbolic(NULL), 0);
	ck_assert_int_eq(tpsim_result_events(NULL), 0);
	ck_assert_int_eq(tpsim_result_collectives(NULL), 0);
	ck_assert_int_eq(tpsim_result_bytes_per_rank(NULL), 0);
	ck_assert_str_eq(tpsim_result_verdict(NULL), "");
	ck_assert_ptr_null(tpsim_result_diagnosis(NULL));
	ck_assert_ptr_null(tpsim_result_stopped(NULL));
	ck_assert_uint_eq(tpsim_result_warning_count(NULL), 0);
	ck_assert_ptr_null(tpsim_result_warning(NULL, 0));
	ck_assert_uint_eq(tpsim_trace_event_count(NULL), 0);
	ck_assert_ptr_null(tpsim_trace_event(NULL, 0));
	ck_assert_int_eq(tpsim_event_seq(NULL), -1);
	ck_assert_int_eq(tpsim_event_step(NULL), -1);
	ck_assert_ptr_null(tpsim_event_phase(NULL));
	ck_assert_ptr_null(tpsim_event_module(NULL));
	ck_assert_ptr_null(tpsim_event_kind(NULL));
	ck_assert_ptr_null(tpsim_event_op(NULL));
	ck_assert_ptr_null(tpsim_event_tensor(NULL));
	ck_assert_ptr_null(tpsim_event_mesh_dim(NULL));
	ck_assert_uint_eq(tpsim_event_group_count(NULL), 0);
	ck_assert_uint_eq(tpsim_event_group_size(NULL, 0), 0);
	ck_assert_int_eq(tpsim_event_group_rank(NULL, 0, 0), -1);
	ck_assert_uint_eq(tpsim_event_placement_count(NULL), 0);
	ck_assert_ptr_null(tpsim_event_placement(NULL, 0));
	ck_assert_uint_eq(tpsim_event_global_shape(NULL, NULL), 0);
	ck_assert_int_eq(tpsim_event_bytes_per_rank(NULL), 0);
	ck_assert_uint_eq(tpsim_event_rank_count(NULL), 0);
	ck_assert_ptr_null(tpsim_event_rank(NULL, 0));
	ck_assert_uint_eq(tpsim_tensor_shape(NULL, NULL), 0);
	ck_assert_uint_eq(tpsim_tensor_numel(NULL), 0);
	ck_assert_int_eq(tpsim_tensor_has_values(NULL), 0);
	ck_assert_ptr_null(tpsim_trace_result_tensor(NULL, "output", NULL));
	ck_assert_ptr_null(tpsim_trace_result_tensor(t, NULL, NULL));
	ck_assert_uint_eq(tpsim_trace_result_count(NULL, "grads"), 0);
	ck_assert_ptr_null(tpsim_trace_result_name(t, NULL, 0));
	tpsim_trace_free(t);
	tpsim_config_free(c);
}
END_TEST

static Suite *api_suite(void)
{
	Suite *s = suite_create("api");
	TCase *tc;

	tc = tcase_create("errors");
	tcase_add_test(tc, version_is_the_cli_s);
	tcase_add_test(tc, status_names_cover_every_status);
	tcase_add_test(tc, null_error_accessors_are_safe);
	tcase_add_test(tc, null_arguments_are_misuse);
	suite_add_tcase(s, tc);

	tc = tcase_create("config");
	tcase_add_loop_test(tc, bad_config_gives_file_pointer_and_what, 0,
			    N_BAD_API_CONFIGS);
	tcase_add_test(tc, config_errors_without_a_place_have_none);
	tcase_add_test(tc, variables_are_set_as_with_set);
	suite_add_tcase(s, tc);

	tc = tcase_create("run");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, run_writes_tpsim_run_s_bytes);
	tcase_add_test(tc, result_of_the_2x4_example);
	tcase_add_test(tc, result_losses_are_the_trace_s);
	tcase_add_test(tc, result_warnings_and_diagnosis_are_the_trace_s);
	tcase_add_test(tc, symbolic_run_has_no_comparison);
	tcase_add_test(tc, grouped_query_attention_runs_have_bounds);
	tcase_add_test(tc, refused_run_writes_nothing);
	tcase_add_test(tc, run_to_file_refuses_the_config_s_file);
	tcase_add_test(tc, failing_write_is_an_io_error);
	suite_add_tcase(s, tc);

	tc = tcase_create("trace");
	tcase_add_test(tc, trace_events_of_the_2x4_example);
	tcase_add_test(tc, trace_result_tensors_by_name);
	tcase_add_test(tc, trace_text_is_the_bytes_read);
	tcase_add_test(tc, bounds_are_the_runs);
	tcase_add_test(tc, bfloat16_values_are_bfloat16s);
	tcase_add_test(tc, scalar_values_are_values);
	tcase_add_test(tc, bounds_of_a_symbolic_trace_are_refused);
	tcase_add_test(tc, tensor_values_need_room_and_values);
	tcase_add_test(tc, bad_trace_gives_file_and_pointer);
	tcase_add_test(tc, check_reports_each_mismatch_apart);
	suite_add_tcase(s, tc);

	tc = tcase_create("verbs");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, explain_writes_tpsim_explain_s_bytes);
	tcase_add_test(tc, explain_refuses_bad_options);
	tcase_add_test(tc, picture_timeline_view_write_the_verbs_bytes);
	tcase_add_test(tc, comm_writes_tpsim_comm_s_bytes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(api_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
