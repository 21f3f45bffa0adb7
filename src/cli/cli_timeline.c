/*
 * tpsim timeline TRACE [-o FILE]: the trace laid out in time per rank, as
 * Chrome Trace Event Format JSON for Perfetto and chrome://tracing
 * (timeline.h; docs/timeline.md).
 */
#include "cli_internal.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "jsonio.h"
#include "timeline.h"

struct timeline_args {
	const char *trace, *output; /* output NULL: stdout */
};

static int timeline_options(int argc, char **argv, struct timeline_args *a,
			    FILE *err)
{
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		if (strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0) {
			if (i + 1 >= argc) {
				return tps_cli_usage_error(
					err, "timeline: %s needs a file", opt);
			}
			/* "-o -" is stdout, as for tpsim run. */
			a->output = strcmp(argv[i + 1], "-") == 0 ? NULL
								  : argv[i + 1];
			i++;
		} else if (opt[0] == '-' && opt[1] != '\0') {
			return tps_cli_usage_error(
				err, "timeline: unknown option '%s'", opt);
		} else if (a->trace) {
			return tps_cli_usage_error(
				err, "timeline: unexpected argument '%s'", opt);
		} else {
			a->trace = opt;
		}
	}
	if (!a->trace) {
		return tps_cli_usage_error(err, "timeline: expected TRACE%s",
					   "");
	}
	return TPS_EXIT_OK;
}

int tps_cli_timeline(int argc, char **argv, FILE *out, FILE *err)
{
	struct timeline_args a = {NULL, NULL};
	cJSON *trace = NULL;
	struct tps_timeline tl = {0};
	struct tps_error e = {0};
	char *json = NULL;
	size_t json_len = 0;
	FILE *mem;
	int rc = timeline_options(argc, argv, &a, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	if (tps_trace_read(a.trace, &trace, NULL, NULL, &e) != TPS_OK ||
	    tps_timeline_build(&tl, trace, a.trace, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	/* Written whole into memory first: nothing is published unless all
	 * of it was made. */
	mem = open_memstream(&json, &json_len);
	if (!mem) {
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	tps_timeline_write_json(mem, &tl);
	if ((ferror(mem) != 0) + (fclose(mem) != 0)) {
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	if (tps_cli_publish(a.output, json, json_len, "timeline", out, a.trace,
			    &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	rc = TPS_EXIT_OK;
out:
	free(json);
	tps_timeline_free(&tl);
	cJSON_Delete(trace);
	return rc;
}
