/*
 * tpsim as a library: runs a config (by default the 2x4 example,
 * fixtures/seed_2x4_rowwise_after_reduce/config.json) through the public
 * API, include/tpsim.h, and prints its verdict, the output of every
 * all_reduce on every rank, and the run's output.
 *
 *   cc embed.c $(pkg-config --cflags --libs tpsim) -o embed
 *   ./embed CONFIG
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tpsim.h>

/* The trace, gathered in memory from tpsim_run's write callback. */
struct buffer {
	char *data;
	size_t len;
};

static int append(void *ctx, const char *data, size_t len)
{
	struct buffer *b = ctx;
	char *grown = realloc(b->data, b->len + len);
	if (!grown) {
		return -1;
	}
	memcpy(grown + b->len, data, len);
	b->data = grown;
	b->len += len;
	return 0;
}

/* A tensor's values as nested lists: [[30, 70], [70, 174]]. */
static int print_tensor(const struct tpsim_tensor *t)
{
	int64_t shape[TPSIM_MAX_DIMS];
	size_t ndim = tpsim_tensor_shape(t, shape);
	size_t n = tpsim_tensor_numel(t), got = 0;
	float *v = malloc((n ? n : 1) * sizeof *v);

	if (!v || tpsim_tensor_values(t, v, n, &got, NULL) != TPSIM_OK) {
		free(v);
		return -1;
	}
	/* Row-major: an element opens as many brackets as the trailing dims
	 * it starts, and closes as many as it ends. */
	for (size_t i = 0; i < n; i++) {
		size_t span = 1;
		for (size_t d = ndim; d-- > 0;) {
			span *= (size_t)shape[d];
			if (i % span == 0) {
				putchar('[');
			}
		}
		printf("%g", (double)v[i]);
		span = 1;
		for (size_t d = ndim; d-- > 0;) {
			span *= (size_t)shape[d];
			if ((i + 1) % span == 0) {
				putchar(']');
			}
		}
		if (i + 1 < n) {
			fputs(", ", stdout);
		}
	}
	putchar('\n');
	free(v);
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "config.json";
	struct tpsim_config *config = NULL;
	struct tpsim_result *result = NULL;
	struct tpsim_trace *trace = NULL;
	struct tpsim_error *error = NULL;
	struct tpsim_run_options options;
	struct buffer trace_text = {NULL, 0};
	int rc = 2;

	tpsim_run_options_init(&options);
	if (tpsim_config_load(path, NULL, 0, &config, &error) != TPSIM_OK ||
	    tpsim_run(config, &options, append, &trace_text, &result, &error) !=
		    TPSIM_OK ||
	    tpsim_trace_parse(trace_text.data, trace_text.len, path, &trace,
			      &error) != TPSIM_OK) {
		fprintf(stderr, "embed: %s\n", tpsim_error_message(error));
		goto out;
	}
	printf("tpsim %s: %s\n", tpsim_version(), tpsim_result_verdict(result));
	for (size_t i = 0; i < tpsim_trace_event_count(trace); i++) {
		const struct tpsim_event *ev = tpsim_trace_event(trace, i);
		if (strcmp(tpsim_event_op(ev), "all_reduce") != 0) {
			continue;
		}
		for (size_t r = 0; r < tpsim_event_rank_count(ev); r++) {
			printf("all_reduce of %s (seq %lld), rank %zu: ",
			       tpsim_event_tensor(ev),
			       (long long)tpsim_event_seq(ev), r);
			if (print_tensor(tpsim_event_rank(ev, r)) != 0) {
				fprintf(stderr, "embed: out of memory\n");
				goto out;
			}
		}
	}
	fputs("output: ", stdout);
	if (print_tensor(tpsim_trace_result_tensor(trace, "output", NULL)) !=
	    0) {
		fprintf(stderr, "embed: out of memory\n");
		goto out;
	}
	/* diff's exit codes, as tpsim run's. */
	rc = tpsim_result_match(result) ? 0 : 1;
out:
	tpsim_error_free(error);
	tpsim_trace_free(trace);
	tpsim_result_free(result);
	tpsim_config_free(config);
	free(trace_text.data);
	return rc;
}
