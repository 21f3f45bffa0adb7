/*
 * fuzz_trace: the trace reader behind `tpsim explain`, `picture`,
 * `timeline` and `view`.
 *
 * The input is the trace. When it is JSON at all (the strict parser is
 * fuzz_config's and fuzz_check's too), it is written to a scratch file and
 * each verb runs on it as the CLI runs it, stdout to /dev/null:
 *   explain --format md --pictures (without --pictures past 64 ranks:
 *   see CAP_PICTURE_WORLD)
 *   explain --step 0 --max-values 3 (text)
 *   picture --tensor <the first key of "params">
 *   picture --tensor <the last event's tensor> --event <its seq>
 *   timeline
 *   view
 * The contract checked is the exit code (0, 1 or 2); the sanitizers check
 * the rest.
 */
#include "fuzz.h"

#include <stdio.h>

#include <cjson/cJSON.h>

#include "jsonio.h"

/* explain --pictures lists every block of every event's tensor
 * (docs/pictures.md: "the block lines are always there"): 4096 lines an
 * event on a 4096-rank mesh, 165 MB of Markdown from a 125 KB trace. Such
 * traces are explained without pictures, to keep an input to
 * milliseconds; `picture` still draws them, one event at a time. */
#define CAP_PICTURE_WORLD 64

/* The product of the trace's mesh shape, as far as it is numbers (at
 * least 1; saturates past CAP_PICTURE_WORLD). */
static double mesh_size(const cJSON *root)
{
	const cJSON *mesh = cJSON_GetObjectItemCaseSensitive(root, "mesh");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(mesh, "shape");
	const cJSON *d;
	double n = 1;
	cJSON_ArrayForEach(d, shape)
	{
		if (cJSON_IsNumber(d) && d->valuedouble > 1) {
			n *= d->valuedouble;
		}
		if (n > CAP_PICTURE_WORLD) {
			break;
		}
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tps_error err = {0};
	cJSON *root = NULL;
	const cJSON *params, *events, *last, *tensor, *seq;
	const char *path;
	char seq_text[32];

	if (tps_json_parse_strict("fuzz.json", (const char *)data, size, &root,
				  &err) != TPS_OK) {
		tps_fuzz_check_error("tps_json_parse_strict", &err);
		return 0;
	}
	path = tps_fuzz_scratch(0, data, size);
	if (mesh_size(root) <= CAP_PICTURE_WORLD) {
		tps_fuzz_cli("tpsim", "explain", path, "--format", "md",
			     "--pictures", NULL);
	} else {
		tps_fuzz_cli("tpsim", "explain", path, "--format", "md", NULL);
	}
	tps_fuzz_cli("tpsim", "explain", path, "--step", "0", "--max-values",
		     "3", NULL);
	params = cJSON_GetObjectItemCaseSensitive(root, "params");
	if (cJSON_IsObject(params) && params->child && params->child->string) {
		tps_fuzz_cli("tpsim", "picture", path, "--tensor",
			     params->child->string, NULL);
	}
	events = cJSON_GetObjectItemCaseSensitive(root, "events");
	last = cJSON_IsArray(events) && events->child ? events->child->prev
						      : NULL;
	tensor = cJSON_GetObjectItemCaseSensitive(last, "tensor");
	seq = cJSON_GetObjectItemCaseSensitive(last, "seq");
	if (cJSON_IsString(tensor) && cJSON_IsNumber(seq) &&
	    seq->valuedouble >= 0 && seq->valuedouble < 1e15) {
		snprintf(seq_text, sizeof seq_text, "%lld",
			 (long long)seq->valuedouble);
		tps_fuzz_cli("tpsim", "picture", path, "--tensor",
			     tensor->valuestring, "--event", seq_text, NULL);
	}
	tps_fuzz_cli("tpsim", "timeline", path, NULL);
	tps_fuzz_cli("tpsim", "view", path, NULL);
	cJSON_Delete(root);
	return 0;
}
