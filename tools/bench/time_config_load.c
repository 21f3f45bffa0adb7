/*
 * Times one tps_json_load or one tps_config_load of FILE in this fresh
 * process, as `tpsim run` meets it (cold heap: page faults included), and
 * prints wall and CPU seconds and MB/s (MB = 10^6 bytes of FILE).
 *
 * Meson builds it as build/tools/bench/time_config_load; it tunes the
 * process's memory and maps its input as tpsim's main() does
 * (tps_memory_tune_process, tps_json_load_maps_files).
 *   tools/bench/make_params_config.sh >/tmp/params.json
 *   build/tools/bench/time_config_load /tmp/params.json json    # tps_json_load
 *   build/tools/bench/time_config_load /tmp/params.json config  #
 * tps_config_load
 *
 * Run it several times and take the median: one run is one cold load.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "jsonio.h"
#include "memory.h"

static double seconds(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct tps_error err = {0};
	struct tps_run_spec spec = {0};
	struct stat sb;
	cJSON *tree = NULL;
	enum tps_status st;
	double wall, cpu, mb;
	bool json;

	tps_memory_tune_process();
	tps_json_load_maps_files(true);
	if (argc != 3 ||
	    (strcmp(argv[2], "json") != 0 && strcmp(argv[2], "config") != 0)) {
		fprintf(stderr, "usage: time_config_load FILE json|config\n");
		return 2;
	}
	if (stat(argv[1], &sb) != 0) {
		perror(argv[1]);
		return 2;
	}
	json = strcmp(argv[2], "json") == 0;
	wall = seconds(CLOCK_MONOTONIC);
	cpu = seconds(CLOCK_PROCESS_CPUTIME_ID);
	st = json ? tps_json_load(argv[1], TPS_JSON_MAX_INPUT_BYTES, &tree,
				  &err)
		  : tps_config_load(argv[1], &spec, &err);
	wall = seconds(CLOCK_MONOTONIC) - wall;
	cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	if (st != TPS_OK) {
		fprintf(stderr, "%s\n", err.message);
		return 2;
	}
	mb = (double)sb.st_size / 1e6;
	printf("%s %.2f MB: wall %.3f s (%.1f MB/s), cpu %.3f s (%.1f MB/s)\n",
	       json ? "tps_json_load" : "tps_config_load", mb, wall, mb / wall,
	       cpu, mb / cpu);
	cJSON_Delete(tree);
	tps_run_spec_free(&spec);
	return 0;
}
