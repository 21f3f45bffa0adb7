/*
 * fuzz_config: the config reader and validator, then a whole `tpsim run`
 * of the configs that are small.
 *
 * 1. The bytes go through tpsim's strict JSON parser
 *    (tps_json_parse_strict) and, when they parse, tps_config_parse.
 *    Contracts checked: a refusal has a one-line message and leaves the
 *    spec untouched. A config with "vars" is parsed again with its first
 *    variable set to 3, as `--set` does.
 * 2. A config that parses and fits the caps below is run as the CLI runs
 *    it, `tpsim run FILE --threads 1 --max-memory 4M`, then once more
 *    with --symbolic; the trace goes to /dev/null. The caps keep an input
 *    to milliseconds (a valid config may ask for a 4096-rank mesh):
 *      world size <= 8, modules <= 32, training steps <= 3,
 *      tps_model_estimate_bytes <= 4 MiB.
 */
#include "fuzz.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "jsonio.h"
#include "model.h"

#define CAP_WORLD   8
#define CAP_MODULES 32
#define CAP_STEPS   3
#define CAP_BYTES   ((int64_t)4 << 20)

static bool small_enough(const struct tps_run_spec *spec)
{
	const struct tps_model_spec *m = &spec->model;
	return m->mesh.world_size <= CAP_WORLD && m->n_modules <= CAP_MODULES &&
	       m->steps <= CAP_STEPS &&
	       tps_model_estimate_bytes(m) <= CAP_BYTES;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tps_error err = {0};
	struct tps_run_spec spec, before;
	cJSON *root = NULL;
	bool run;

	if (tps_json_parse_strict("fuzz.json", (const char *)data, size, &root,
				  &err) != TPS_OK) {
		tps_fuzz_check_error("tps_json_parse_strict", &err);
		if (root) {
			tps_fuzz_fail(
				"tps_json_parse_strict: *out set on error",
				NULL);
		}
		return 0;
	}
	memset(&spec, 0xa5, sizeof spec);
	memcpy(&before, &spec, sizeof spec);
	if (tps_config_parse(root, "fuzz.json", &spec, &err) != TPS_OK) {
		tps_fuzz_check_error("tps_config_parse", &err);
		if (memcmp(&spec, &before, sizeof spec) != 0) {
			tps_fuzz_fail("tps_config_parse: spec touched on error",
				      err.message);
		}
		cJSON_Delete(root);
		return 0;
	}
	if (spec.n_vars > 0) {
		/* The CLI's --set: the first variable set from outside. */
		struct tps_run_spec again;
		struct tps_config_var set = spec.vars[0];
		set.value = 3;
		if (tps_config_parse_with(root, "fuzz.json", &set, 1, &again,
					  &err) == TPS_OK) {
			tps_run_spec_free(&again);
		} else {
			tps_fuzz_check_error("tps_config_parse_with", &err);
		}
	}
	cJSON_Delete(root);
	run = small_enough(&spec);
	tps_run_spec_free(&spec);
	if (run) {
		const char *path = tps_fuzz_scratch(0, data, size);
		tps_fuzz_cli("tpsim", "run", path, "--threads", "1",
			     "--max-memory", "4M", NULL);
		tps_fuzz_cli("tpsim", "run", path, "--threads", "1",
			     "--max-memory", "4M", "--symbolic", NULL);
	}
	return 0;
}
