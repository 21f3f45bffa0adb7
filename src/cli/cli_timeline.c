/*
 * tpsim timeline TRACE [-o FILE]: the trace laid out in time per rank, as
 * Chrome Trace Event Format JSON for Perfetto and chrome://tracing
 * (timeline.h; docs/timeline.md).
 */
#include "cli_internal.h"
#include "cli.h"

#include <errno.h>
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
	struct tps_json_arena *arena = NULL;
	const cJSON *trace = NULL;
	struct tps_error e = {0};
	struct tps_outfile o = {0};
	int rc = timeline_options(argc, argv, &a, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	/* Only read: its tree in an arena, the smaller one. */
	if (tps_trace_read_arena(a.trace, &arena, &trace, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	/* Laid out and written as it is made, into the output's temporary
	 * file (outfile.h): neither its slices nor its size sit in memory,
	 * and nothing is published unless all of it was made and written. */
	if (tps_outfile_open(&o, a.output, out, "timeline", &a.trace, 1,
			     tps_cli_pending(), &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	errno = 0;
	if (tps_timeline_stream_json(o.f, trace, a.trace, &e) != TPS_OK ||
	    tps_cli_commit_stream(&o, errno, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	rc = TPS_EXIT_OK;
out:
	tps_outfile_discard(&o); /* a no-op once committed */
	tps_json_arena_free(arena);
	return rc;
}
