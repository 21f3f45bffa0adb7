/*
 * numfmt_exhaustive: tps_format_float (Schubfach, src/base/numfmt_float.c)
 * against tps_format_float_exact (the snprintf/strtof oracle it replaced,
 * src/base/numfmt_internal.h) on float32 bit patterns, byte for byte; each new
 * string must also read back with strtof to the same bits.
 *
 *   numfmt_exhaustive [--start N] [--end N] [--stride N] [--threads N]
 *
 * checks the patterns start, start + stride, ... below end (default: all of
 * [0, 2^32), stride 1, 2 threads). Numbers are decimal or 0x hex. NaN and
 * Inf patterns (exponent field 255), which a trace never holds, are counted
 * as skipped. Progress goes to stderr every 10 s; the first mismatches and
 * the final counts to stdout. Exit 0 if every compared pattern matched, 1 on
 * any mismatch, 2 on bad usage.
 *
 * The full sweep is
 *   build/tools/numfmt_exhaustive --threads 2
 * The oracle dominates (1-2 us a pattern; the new formatter takes ~50 ns).
 * On the project's 2-core machine, shared with other builds, the sweep took
 * 71 min as two runs: --end 0x80000000 (41 min) and --start 0x80000000
 * (30 min), 4,278,190,080 finite patterns, no mismatch. Sign only adds the
 * '-': --end 0x7f800000 (every positive finite float) covers every digit
 * decision in half the time. A sample of every exponent and sign:
 * --stride 7 (614 million patterns, a seventh of the time).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numfmt_internal.h"
#include "numfmt.h"

#define BLOCK	    65536 /* indices a worker takes at a time */
#define MAX_THREADS 256
#define MAX_SHOWN   20 /* mismatches printed */

struct sweep {
	uint64_t start, stride, count; /* pattern i is start + i stride */
	atomic_uint_fast64_t next;     /* next index to hand out */
	atomic_uint_fast64_t done, compared, skipped, mismatches;
	pthread_mutex_t print_lock;
};

static void report_mismatch(struct sweep *sw, uint32_t bits, const char *got,
			    const char *want, const char *why)
{
	uint64_t n = atomic_fetch_add(&sw->mismatches, 1);
	if (n < MAX_SHOWN) {
		pthread_mutex_lock(&sw->print_lock);
		printf("mismatch 0x%08x: new \"%s\", oracle \"%s\" (%s)\n",
		       (unsigned)bits, got, want, why);
		fflush(stdout);
		pthread_mutex_unlock(&sw->print_lock);
	}
}

/* Returns 1 if compared, 0 if skipped (NaN or Inf). */
static int check_pattern(struct sweep *sw, uint32_t bits)
{
	char got[TPS_NUMFMT_MAX], want[TPS_NUMFMT_MAX];
	float v, back;
	uint32_t back_bits;
	char *end;

	if (((bits >> 23) & 0xff) == 0xff) {
		return 0;
	}
	memcpy(&v, &bits, sizeof v);
	tps_format_float(v, got);
	tps_format_float_exact(v, want);
	if (strcmp(got, want) != 0) {
		report_mismatch(sw, bits, got, want, "bytes differ");
		return 1;
	}
	back = strtof(got, &end);
	memcpy(&back_bits, &back, sizeof back_bits);
	if (*end != '\0' || back_bits != bits) {
		report_mismatch(sw, bits, got, want, "does not read back");
	}
	return 1;
}

static void *worker(void *arg)
{
	struct sweep *sw = arg;
	for (;;) {
		uint64_t first = atomic_fetch_add(&sw->next, BLOCK);
		uint64_t last, compared = 0;
		if (first >= sw->count) {
			break;
		}
		last = first + BLOCK < sw->count ? first + BLOCK : sw->count;
		for (uint64_t i = first; i < last; i++) {
			compared += (uint64_t)check_pattern(
				sw, (uint32_t)(sw->start + i * sw->stride));
		}
		atomic_fetch_add(&sw->compared, compared);
		atomic_fetch_add(&sw->skipped, last - first - compared);
		atomic_fetch_add(&sw->done, last - first);
	}
	return NULL;
}

static bool parse_u64(const char *text, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;
	if (text == NULL || text[0] == '-' || text[0] == '\0') {
		return false;
	}
	errno = 0;
	v = strtoull(text, &end, 0);
	if (errno != 0 || *end != '\0' || v > max) {
		return false;
	}
	*out = v;
	return true;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static int usage(const char *why)
{
	fprintf(stderr,
		"numfmt_exhaustive: %s\n"
		"usage: numfmt_exhaustive [--start N] [--end N] [--stride N] "
		"[--threads N]\n",
		why);
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t start = 0, end = UINT64_C(1) << 32, stride = 1, threads = 2;
	pthread_t tids[MAX_THREADS];
	struct sweep sw;
	struct timespec t0;
	double elapsed, last_report = 0;
	uint64_t compared, skipped, mismatches;

	for (int i = 1; i < argc; i += 2) {
		uint64_t *dst = NULL, max = UINT64_C(1) << 32;
		if (strcmp(argv[i], "--start") == 0) {
			dst = &start;
		} else if (strcmp(argv[i], "--end") == 0) {
			dst = &end;
		} else if (strcmp(argv[i], "--stride") == 0) {
			dst = &stride;
		} else if (strcmp(argv[i], "--threads") == 0) {
			dst = &threads;
			max = MAX_THREADS;
		} else {
			return usage("unknown option");
		}
		if (!parse_u64(argv[i + 1], max, dst)) {
			return usage("expected a number (0x hex or decimal) "
				     "in range after the option");
		}
	}
	if (start >= end || stride == 0 || threads == 0) {
		return usage("need start < end, stride >= 1, threads >= 1");
	}

	memset(&sw, 0, sizeof sw);
	sw.start = start;
	sw.stride = stride;
	sw.count = (end - start + stride - 1) / stride;
	pthread_mutex_init(&sw.print_lock, NULL);
	printf("patterns [0x%llx, 0x%llx) stride %llu: %llu, %llu threads\n",
	       (unsigned long long)start, (unsigned long long)end,
	       (unsigned long long)stride, (unsigned long long)sw.count,
	       (unsigned long long)threads);
	fflush(stdout);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t t = 0; t < threads; t++) {
		if (pthread_create(&tids[t], NULL, worker, &sw) != 0) {
			fprintf(stderr, "numfmt_exhaustive: pthread_create "
					"failed\n");
			return 2;
		}
	}
	for (;;) {
		struct timespec nap = {0, 100 * 1000 * 1000};
		uint64_t done = atomic_load(&sw.done);
		if (done >= sw.count) {
			break;
		}
		nanosleep(&nap, NULL);
		elapsed = seconds_since(&t0);
		if (elapsed - last_report >= 10 && done > 0) {
			last_report = elapsed;
			fprintf(stderr,
				"%.1f%% (%llu of %llu) in %.0f s, "
				"%.0f ns a pattern, ~%.0f s left, "
				"%llu mismatches\n",
				100.0 * (double)done / (double)sw.count,
				(unsigned long long)done,
				(unsigned long long)sw.count, elapsed,
				elapsed * 1e9 / (double)done,
				elapsed * (double)(sw.count - done) /
					(double)done,
				(unsigned long long)atomic_load(
					&sw.mismatches));
		}
	}
	for (uint64_t t = 0; t < threads; t++) {
		pthread_join(tids[t], NULL);
	}
	elapsed = seconds_since(&t0);
	pthread_mutex_destroy(&sw.print_lock);

	compared = atomic_load(&sw.compared);
	skipped = atomic_load(&sw.skipped);
	mismatches = atomic_load(&sw.mismatches);
	printf("compared %llu, skipped %llu (NaN/Inf), mismatches %llu, "
	       "%.0f s\n",
	       (unsigned long long)compared, (unsigned long long)skipped,
	       (unsigned long long)mismatches, elapsed);
	return mismatches == 0 ? 0 : 1;
}
