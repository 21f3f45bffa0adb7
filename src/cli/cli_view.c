/*
 * tpsim view TRACE [-o FILE.html]: the page of view.h, published through
 * the one output writer.
 */
#include "cli_internal.h"
#include "cli.h"

#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "trace.h"
#include "view.h"

struct view_args {
	const char *trace, *output; /* output NULL: stdout */
};

static int view_options(int argc, char **argv, struct view_args *a, FILE *err)
{
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "view: %s needs a file", opt);
			}
			/* "-o -" is stdout, as for tpsim run. */
			a->output = strcmp(arg, "-") == 0 ? NULL : arg;
			i++;
		} else if (opt[0] == '-' && opt[1] != '\0') {
			return tps_cli_usage_error(
				err, "view: unknown option '%s'", opt);
		} else if (a->trace) {
			return tps_cli_usage_error(
				err, "view: unexpected argument '%s'", opt);
		} else {
			a->trace = opt;
		}
	}
	if (!a->trace) {
		return tps_cli_usage_error(err,
					   "view: expected TRACE (tpsim view "
					   "TRACE -o FILE.html)%s",
					   "");
	}
	return TPS_EXIT_OK;
}

int tps_cli_view(int argc, char **argv, FILE *out, FILE *err)
{
	struct view_args a = {NULL, NULL};
	struct tps_error e = {0};
	struct tps_outfile o = {0};
	cJSON *tree = NULL;
	char *text = NULL;
	size_t text_len = 0;
	int rc = view_options(argc, argv, &a, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	/* Parsed only to refuse what is not a trace, its values counted
	 * rather than kept; the page embeds the file's bytes, not a
	 * re-printing of them. */
	if (tps_trace_read_counted(a.trace, &tree, &text, &text_len, &e) !=
	    TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	cJSON_Delete(tree);
	tree = NULL;
	/* Written as it is made, into the output's temporary file
	 * (outfile.h): the page never sits in memory beside the trace, and
	 * nothing is published unless all of it was written. */
	if (tps_outfile_open(&o, a.output, out, "HTML", &a.trace, 1,
			     tps_cli_pending(), &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	errno = 0;
	tps_view_write(o.f, text, text_len);
	if (tps_cli_commit_stream(&o, errno, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	rc = TPS_EXIT_OK;
out:
	free(text);
	cJSON_Delete(tree);
	return rc;
}
