/*
 * Times reading a trace as the verbs that read one do (explain, picture,
 * timeline, view, check): the load (tps_json_load: the file and the
 * strict parse, what every reader did before traces were validated), then
 * tps_trace_validate on the same tree, in this fresh process (cold heap,
 * as tpsim meets it), and prints wall and CPU seconds of each.
 *
 * Meson builds it as build/tools/bench/time_trace_read:
 *   build/src/tpsim run tools/viewer/mlp4_h544_b64_tp8_full.json -o /tmp/t.json
 *   build/tools/bench/time_trace_read /tmp/t.json
 *
 * Run it several times and take the median: one run is one cold load.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "jsonio.h"
#include "memory.h"
#include "trace.h"

static double seconds(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct tps_error err = {0};
	struct stat sb;
	cJSON *tree = NULL;
	double wall[2], cpu[2], mb;

	tps_memory_tune_process();
	if (argc != 2) {
		fprintf(stderr, "usage: time_trace_read TRACE\n");
		return 2;
	}
	if (stat(argv[1], &sb) != 0) {
		perror(argv[1]);
		return 2;
	}
	wall[0] = seconds(CLOCK_MONOTONIC);
	cpu[0] = seconds(CLOCK_PROCESS_CPUTIME_ID);
	if (tps_json_load(argv[1], TPS_JSON_MAX_TRACE_BYTES, &tree, &err) !=
	    TPS_OK) {
		fprintf(stderr, "%s\n", err.message);
		return 2;
	}
	wall[1] = seconds(CLOCK_MONOTONIC);
	cpu[1] = seconds(CLOCK_PROCESS_CPUTIME_ID);
	if (tps_trace_validate(tree, argv[1], &err) != TPS_OK) {
		fprintf(stderr, "%s\n", err.message);
		cJSON_Delete(tree);
		return 2;
	}
	mb = (double)sb.st_size / 1e6;
	printf("%.2f MB: load wall %.3f s, cpu %.3f s; validate wall %.3f s, "
	       "cpu %.3f s\n",
	       mb, wall[1] - wall[0], cpu[1] - cpu[0],
	       seconds(CLOCK_MONOTONIC) - wall[1],
	       seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu[1]);
	cJSON_Delete(tree);
	return 0;
}
