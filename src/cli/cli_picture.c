/*
 * tpsim picture: one tensor's sharding picture as a standalone SVG; and
 * the pictures `tpsim explain --pictures` prints under each event.
 */
#include "cli_internal.h"
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "jsonio.h"
#include "picture.h"

/* --event SEQ: a whole number from 0. */
static bool parse_seq(const char *text, long long *seq)
{
	char *end;
	long long n;
	errno = 0;
	n = strtoll(text, &end, 10);
	if (errno || end == text || *end != '\0' || n < 0) {
		return false;
	}
	*seq = n;
	return true;
}

struct picture_args {
	const char *trace, *tensor, *output; /* output NULL: stdout */
	long long seq;			     /* -1: the tensor's first event */
};

static int picture_options(int argc, char **argv, struct picture_args *a,
			   FILE *err)
{
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(opt, "--tensor") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "picture: --tensor needs a name%s",
					"");
			}
			a->tensor = arg;
			i++;
		} else if (strcmp(opt, "--event") == 0) {
			if (!arg || !parse_seq(arg, &a->seq)) {
				return tps_cli_usage_error(
					err,
					"picture: --event needs an event's seq "
					"(0, 1, ...), got '%s'",
					arg ? arg : "");
			}
			i++;
		} else if (strcmp(opt, "-o") == 0 ||
			   strcmp(opt, "--output") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "picture: %s needs a file", opt);
			}
			/* "-o -" is stdout, as for tpsim run. */
			a->output = strcmp(arg, "-") == 0 ? NULL : arg;
			i++;
		} else if (opt[0] == '-' && opt[1] != '\0') {
			return tps_cli_usage_error(
				err, "picture: unknown option '%s'", opt);
		} else if (a->trace) {
			return tps_cli_usage_error(
				err, "picture: unexpected argument '%s'", opt);
		} else {
			a->trace = opt;
		}
	}
	if (!a->trace) {
		return tps_cli_usage_error(err, "picture: expected TRACE%s",
					   "");
	}
	if (!a->tensor) {
		return tps_cli_usage_error(
			err,
			"picture: missing --tensor NAME (e.g. --tensor "
			"fc1.weight)%s",
			"");
	}
	return TPS_EXIT_OK;
}

int tps_cli_picture(int argc, char **argv, FILE *out, FILE *err)
{
	struct picture_args a = {NULL, NULL, NULL, -1};
	cJSON *trace = NULL;
	struct tps_picture pic = {0};
	struct tps_error e = {0};
	char *svg = NULL;
	size_t svg_len = 0;
	FILE *mem = NULL;
	int index, rc = picture_options(argc, argv, &a, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	if (tps_trace_read(a.trace, &trace, NULL, NULL, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	if (tps_picture_select(trace, a.trace, a.tensor, a.seq, &index, &e) !=
	    TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	if (tps_picture_from_event(&pic, trace, a.trace, index, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	/* Drawn whole into memory first: nothing is published unless all of
	 * it was made. */
	mem = open_memstream(&svg, &svg_len);
	if (!mem) {
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	tps_picture_write_svg(mem, &pic);
	if (fclose(mem) != 0) {
		mem = NULL;
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	mem = NULL;
	if (tps_cli_publish(a.output, svg, svg_len, "SVG", out, a.trace, &e) !=
	    TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	rc = TPS_EXIT_OK;
out:
	free(svg);
	tps_picture_free(&pic);
	cJSON_Delete(trace);
	return rc;
}
