/*
 * fuzz_trace: the trace reader behind `tpsim explain`, `picture`,
 * `timeline` and `view`.
 *
 * The input is the trace. When it is JSON at all (the strict parser is
 * fuzz_config's and fuzz_check's too), it is written to a scratch file and
 * each verb runs on it as the CLI runs it, stdout to /dev/null:
 *   explain --format md --pictures
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

#include "tpsim/jsonio.h"

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
	tps_fuzz_cli("tpsim", "explain", path, "--format", "md", "--pictures",
		     NULL);
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
