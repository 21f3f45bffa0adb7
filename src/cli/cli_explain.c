/*
 * tpsim explain: the options, the trace read and checked, and the exit
 * codes; the explanation itself is the library's (explain.h).
 */
#include "cli_internal.h"
#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "explain.h"
#include "nn_event.h"
#include "spec.h"
#include "trace.h"

/* Colour only on a terminal, and never under NO_COLOR (no-color.org). */
static bool want_color(FILE *out)
{
	const char *no_color = getenv("NO_COLOR");
	int fd = fileno(out);
	return fd >= 0 && isatty(fd) && !(no_color && no_color[0]);
}

/* ---- options --------------------------------------------------------- */

/* A whole number in [lo, hi] for an explain option. */
static bool parse_count(const char *text, long lo, long hi, long *out)
{
	char *end;
	long n;
	errno = 0;
	n = strtol(text, &end, 10);
	if (errno || end == text || *end != '\0' || n < lo || n > hi) {
		return false;
	}
	*out = n;
	return true;
}

static int explain_options(int argc, char **argv, struct tps_explain_options *f,
			   const char **path, FILE *err)
{
	bool heading_given = false;
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		long n;
		if (strcmp(opt, "--step") == 0 ||
		    strcmp(opt, "--max-values") == 0) {
			if (!arg || !parse_count(arg, 0, 1000000000L, &n)) {
				return tps_cli_usage_error(
					err,
					strcmp(opt, "--step") == 0
						? "explain: --step needs a "
						  "step "
						  "number (0, 1, ...), got '%s'"
						: "explain: --max-values needs "
						  "a "
						  "count (0: no limit), got "
						  "'%s'",
					arg ? arg : "");
			}
			if (strcmp(opt, "--step") == 0) {
				f->step = n;
			} else {
				f->max_values = (size_t)n;
			}
			i++;
		} else if (strcmp(opt, "--heading-level") == 0) {
			/* Events are two levels below the title: at most
			 * Markdown's 6. */
			if (!arg || !parse_count(arg, 1, 4, &n)) {
				return tps_cli_usage_error(
					err,
					"explain: --heading-level expects 1, "
					"2, 3 or 4 (the title's Markdown "
					"level), got '%s'",
					arg ? arg : "");
			}
			f->heading_level = (int)n;
			heading_given = true;
			i++;
		} else if (strcmp(opt, "--format") == 0) {
			if (!arg || (strcmp(arg, "text") != 0 &&
				     strcmp(arg, "md") != 0)) {
				return tps_cli_usage_error(
					err,
					"explain: --format expects text or md, "
					"got '%s'",
					arg ? arg : "");
			}
			f->format = strcmp(arg, "md") == 0
					    ? TPS_EXPLAIN_MARKDOWN
					    : TPS_EXPLAIN_TEXT;
			i++;
		} else if (strcmp(opt, "--pictures") == 0) {
			f->pictures = true;
		} else if (strcmp(opt, "--module") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "explain: --module needs a name%s",
					"");
			}
			f->module = arg;
			i++;
		} else if (strcmp(opt, "--phase") == 0) {
			if (!arg || tps_name_index(tps_phase_names, arg) < 0) {
				return tps_cli_usage_error(
					err,
					"explain: --phase expects setup, "
					"forward, backward or optimizer, got "
					"'%s'",
					arg ? arg : "");
			}
			f->phase = arg;
			i++;
		} else if (opt[0] == '-' && opt[1] != '\0') {
			return tps_cli_usage_error(
				err, "explain: unknown option '%s'", opt);
		} else if (*path) {
			return tps_cli_usage_error(
				err, "explain: unexpected argument '%s'", opt);
		} else {
			*path = opt;
		}
	}
	if (!*path) {
		return tps_cli_usage_error(err, "explain: expected TRACE%s",
					   "");
	}
	if (heading_given && f->format != TPS_EXPLAIN_MARKDOWN) {
		/* Text output has no headings: say so rather than ignore
		 * the option. */
		return tps_cli_usage_error(
			err,
			"explain: --heading-level applies to "
			"--format md%s",
			"");
	}
	return TPS_EXIT_OK;
}

int tps_cli_explain(int argc, char **argv, FILE *out, FILE *err)
{
	struct tps_explain_options o = TPS_EXPLAIN_OPTIONS_DEFAULT;
	struct tps_error e = {0};
	const char *path = NULL;
	cJSON *trace = NULL;
	enum tps_status st;
	int rc = explain_options(argc, argv, &o, &path, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	o.color = o.format == TPS_EXPLAIN_TEXT && want_color(out);
	if (tps_trace_read(path, &trace, NULL, NULL, &e) != TPS_OK) {
		return tps_cli_trouble(err, &e);
	}
	st = tps_explain(out, trace, path, &o, &e);
	cJSON_Delete(trace);
	if (st == TPS_ERR_USAGE) {
		/* --module naming no module of the trace: the names in the
		 * message are escaped already. */
		fprintf(err, "tpsim: explain: %s\nTry 'tpsim --help'.\n",
			e.message);
		return TPS_EXIT_TROUBLE;
	}
	return st == TPS_OK ? TPS_EXIT_OK : tps_cli_trouble(err, &e);
}
