/*
 * Concurrent runs in one process (issue 16, section 3): the library keeps
 * no process-wide state, so four different configs run at once on four
 * threads each write the trace they write alone, byte for byte, and each
 * run's statistics (the tensors at peak) are its own.
 *
 * It runs through the public API alone (include/tpsim.h, libtpsim.so),
 * as a program embedding tpsim would, in one small helper, run_config.
 * The process's locale is no run's either: a decimal comma changes no
 * byte.
 */
#include <check.h>
#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "tpsim.h"

/* Configs that keep the pool busy in different ways: the 1024-wide MLP
 * of tools/bench (ranks, and the reference's matmuls cut into blocks on
 * the pool), dp x tp training with adamw (seed 004), attention, and a
 * 2-D mesh's training with the dp gradient all_reduce. */
static const char *const configs[] = {
	"tools/bench/mlp4_h1024_b64_tp8.json",
	"examples/seed004_ddp_tp/config.json",
	"fixtures/attention_2_heads_over_2_ranks/config.json",
	"fixtures/train_dp2_tp2_mse/config.json",
};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

/* One run's result: its trace in memory and its tensors at peak. */
struct one_run {
	char path[4096];
	char output[4096]; /* "": the trace goes to a stream */
	int threads;
	enum tpsim_status st;
	char err[1024]; /* the error's message, when st is not TPSIM_OK */
	char *trace;
	size_t len;
	int64_t tensor_peak;
};

/* The write callback of tpsim_run: appends to a memstream. */
static int append(void *ctx, const char *data, size_t len)
{
	return fwrite(data, 1, len, ctx) == len ? 0 : -1;
}

/* Runs r->path on r->threads threads, the trace to r->output or to a
 * stream, then into r->trace (malloc'd, the caller frees it). The only
 * calls into tpsim. */
static void run_config(struct one_run *r)
{
	struct tpsim_config *config = NULL;
	struct tpsim_result *result = NULL;
	struct tpsim_error *error = NULL;
	struct tpsim_run_options opts;
	FILE *f = NULL;

	tpsim_run_options_init(&opts);
	opts.threads = r->threads;
	r->err[0] = '\0';
	r->st = tpsim_config_load(r->path, NULL, 0, &config, &error);
	if (r->st == TPSIM_OK && r->output[0]) {
		r->st = tpsim_run_to_file(config, &opts, r->output, &result,
					  &error);
	} else if (r->st == TPSIM_OK) {
		f = open_memstream(&r->trace, &r->len);
		r->st = f ? tpsim_run(config, &opts, append, f, &result, &error)
			  : TPSIM_ERR_NOMEM;
		if (f) {
			fclose(f);
		}
	}
	if (r->st == TPSIM_OK) {
		r->tensor_peak = tpsim_result_tensor_peak_bytes(result);
	}
	if (r->st == TPSIM_OK && r->output[0]) {
		r->trace = tu_read_file(r->output, &r->len);
		r->st = r->trace ? TPSIM_OK : TPSIM_ERR_IO;
	}
	if (error) {
		snprintf(r->err, sizeof r->err, "%s",
			 tpsim_error_message(error));
	}
	tpsim_error_free(error);
	tpsim_result_free(result);
	tpsim_config_free(config);
}

struct start {
	pthread_barrier_t barrier;
	struct one_run *run;
};

struct worker {
	struct start *start;
	struct one_run *run;
};

static void *run_thread(void *opaque)
{
	struct worker *w = opaque;
	/* Every run starts at once, so that they overlap. */
	pthread_barrier_wait(&w->start->barrier);
	run_config(w->run);
	return NULL;
}

static void init_runs(struct one_run *runs, int threads)
{
	for (int i = 0; i < N_CONFIGS; i++) {
		memset(&runs[i], 0, sizeof runs[i]);
		/* tu_source_path's buffer is shared: copied here, on the
		 * test's own thread. */
		snprintf(runs[i].path, sizeof runs[i].path, "%s",
			 tu_source_path(configs[i]));
		runs[i].threads = threads;
	}
}

static void free_runs(struct one_run *runs)
{
	for (int i = 0; i < N_CONFIGS; i++) {
		free(runs[i].trace);
	}
}

static double seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

START_TEST(four_runs_at_once_write_the_bytes_and_peaks_of_runs_alone)
{
	struct one_run alone1[N_CONFIGS], alone2[N_CONFIGS],
		together[N_CONFIGS];
	struct worker workers[N_CONFIGS];
	pthread_t tid[N_CONFIGS];
	struct start start;
	const char *dir;
	double t0;

	/* Alone: one thread (the trace's reference bytes), and two (the
	 * peak of a run alone on as many threads as below). */
	init_runs(alone1, 1);
	init_runs(alone2, 2);
	t0 = seconds();
	for (int i = 0; i < N_CONFIGS; i++) {
		run_config(&alone1[i]);
		ck_assert_msg(alone1[i].st == TPSIM_OK, "%s alone: %s",
			      configs[i], alone1[i].err);
		run_config(&alone2[i]);
		ck_assert_msg(alone2[i].st == TPSIM_OK, "%s alone: %s",
			      configs[i], alone2[i].err);
		ck_assert_int_gt(alone1[i].tensor_peak, 0);
	}
	printf("alone, 1 and 2 threads, one after another: %.2f s\n",
	       seconds() - t0);

	/* Together: the four at once, on two threads each; two write their
	 * trace to a file (each through its own temporary, renamed), two to
	 * a stream. */
	init_runs(together, 2);
	dir = tu_tempdir();
	for (int i = 1; i < N_CONFIGS; i += 2) {
		snprintf(together[i].output, sizeof together[i].output,
			 "%s/%d.json", dir, i);
	}
	ck_assert_int_eq(pthread_barrier_init(&start.barrier, NULL, N_CONFIGS),
			 0);
	t0 = seconds();
	for (int i = 0; i < N_CONFIGS; i++) {
		workers[i] = (struct worker){&start, &together[i]};
		ck_assert_int_eq(
			pthread_create(&tid[i], NULL, run_thread, &workers[i]),
			0);
	}
	for (int i = 0; i < N_CONFIGS; i++) {
		ck_assert_int_eq(pthread_join(tid[i], NULL), 0);
	}
	printf("together, 2 threads each: %.2f s\n", seconds() - t0);
	pthread_barrier_destroy(&start.barrier);

	for (int i = 0; i < N_CONFIGS; i++) {
		ck_assert_msg(together[i].st == TPSIM_OK, "%s together: %s",
			      configs[i], together[i].err);
		printf("%s: %zu trace bytes, tensors at peak %lld bytes\n",
		       configs[i], together[i].len,
		       (long long)together[i].tensor_peak);
		ck_assert_msg(together[i].len == alone1[i].len &&
				      memcmp(together[i].trace, alone1[i].trace,
					     alone1[i].len) == 0,
			      "%s: the trace run together differs from the "
			      "trace run alone on one thread",
			      configs[i]);
		ck_assert_msg(alone2[i].len == alone1[i].len &&
				      memcmp(alone2[i].trace, alone1[i].trace,
					     alone1[i].len) == 0,
			      "%s: 2 threads alone differ from 1", configs[i]);
		ck_assert_msg(together[i].tensor_peak == alone2[i].tensor_peak,
			      "%s: tensors at peak %lld together, %lld alone",
			      configs[i], (long long)together[i].tensor_peak,
			      (long long)alone2[i].tensor_peak);
	}
	free_runs(alone1);
	free_runs(alone2);
	free_runs(together);
	tu_rmtree(dir);
}
END_TEST

START_TEST(a_run_in_a_comma_locale_writes_the_bytes_of_the_c_locale)
{
	/* A program embedding tpsim may set a decimal comma for the whole
	 * process (setlocale, every thread); seed 004's normalised config
	 * (lr 0.01, atol 0.00001) is still written as in the C locale. */
	const char *dir = tu_tempdir();
	const char *comma = tu_comma_locale(dir);
	char text[16];
	struct one_run c_run = {.threads = 2}, comma_run = {.threads = 2};
	snprintf(c_run.path, sizeof c_run.path, "%s",
		 tu_source_path(configs[1]));
	snprintf(comma_run.path, sizeof comma_run.path, "%s", c_run.path);
	run_config(&c_run);
	ck_assert_msg(c_run.st == TPSIM_OK, "%s", c_run.err);
	ck_assert_ptr_nonnull(setlocale(LC_NUMERIC, comma));
	snprintf(text, sizeof text, "%g", 0.5);
	run_config(&comma_run);
	ck_assert_ptr_nonnull(setlocale(LC_NUMERIC, "C"));
	ck_assert_str_eq(text, "0,5"); /* the locale was in force */
	ck_assert_msg(comma_run.st == TPSIM_OK, "%s", comma_run.err);
	ck_assert_msg(comma_run.len == c_run.len &&
			      memcmp(comma_run.trace, c_run.trace, c_run.len) ==
				      0,
		      "%s: the trace differs in a comma locale", configs[1]);
	free(c_run.trace);
	free(comma_run.trace);
	tu_rmtree(dir);
}
END_TEST

static Suite *concurrent_suite(void)
{
	Suite *s = suite_create("concurrent");
	TCase *tc = tcase_create("runs");
	tcase_add_test(
		tc, four_runs_at_once_write_the_bytes_and_peaks_of_runs_alone);
	tcase_add_test(
		tc, a_run_in_a_comma_locale_writes_the_bytes_of_the_c_locale);
	/* Under ThreadSanitizer a run is several times slower. */
	tcase_set_timeout(tc, 600);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(concurrent_suite());
}
