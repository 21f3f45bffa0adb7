/*
 * Which kind of tpsim document a JSON value is (jsonio.h), by a key only
 * that kind has, so that a file given in the wrong place is named for
 * what it is.
 */
#include "jsonio_internal.h"

#include <string.h>

enum tps_file_kind tps_json_file_kind(const cJSON *root,
				       struct tps_json_path *where)
{
	const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "events");
	const cJSON *ev;
	struct tps_json_path p;
	size_t i = 0;

	tps_json_path_init(&p);
	if (!cJSON_IsObject(root)) {
		return TPS_FILE_OTHER;
	}
	if (cJSON_GetObjectItemCaseSensitive(root, "tpsim")) {
		tps_json_path_push_key(&p, "tpsim");
		goto out_config;
	}
	if (cJSON_GetObjectItemCaseSensitive(root, "tolerance")) {
		tps_json_path_push_key(&p, "tolerance");
		goto out_fixture;
	}
	/* Events of a trace are objects of fixed keys: a linear scan of
	 * each is ~15 string compares. */
	if (!cJSON_IsArray(events)) {
		events = NULL;
	}
	cJSON_ArrayForEach(ev, events)
	{
		const char *key =
			cJSON_GetObjectItemCaseSensitive(ev, "match") ? "match"
			: cJSON_GetObjectItemCaseSensitive(ev, "tolerance")
				? "tolerance"
				: NULL;
		if (key) {
			tps_json_path_push_key(&p, "events");
			tps_json_path_push_index(&p, i);
			tps_json_path_push_key(&p, key);
			goto out_fixture;
		}
		i++;
	}
	if (cJSON_IsString(format) &&
	    strcmp(format->valuestring, "tpsim.trace") == 0) {
		tps_json_path_push_key(&p, "format");
		if (where) {
			*where = p;
		}
		return TPS_FILE_TRACE;
	}
	return TPS_FILE_OTHER;
out_config:
	if (where) {
		*where = p;
	}
	return TPS_FILE_CONFIG;
out_fixture:
	if (where) {
		*where = p;
	}
	return TPS_FILE_FIXTURE;
}
