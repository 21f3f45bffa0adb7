/*
 * tpsim diff TRACE_A TRACE_B [--format text|md] [--step N] [-o FILE]:
 * the options, the traces read and checked, and the exit codes (0 within
 * what reordering explains, 1 a divergence, 2 trouble); the comparison is
 * the library's (run_diff.h; docs/diff.md).
 */
#include "cli_internal.h"
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run_diff.h"
#include "run_plot.h"
#include "trace.h"

struct diff_args {
	const char *trace[2];
	int n_traces;
	const char *output; /* NULL: stdout */
	enum tps_diff_format format;
	long step; /* -1: every step */
};

static int diff_options(int argc, char **argv, struct diff_args *a, FILE *err)
{
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "diff: %s needs a file", opt);
			}
			/* "-o -" is stdout, as for tpsim run. */
			a->output = strcmp(arg, "-") == 0 ? NULL : arg;
			i++;
		} else if (strcmp(opt, "--format") == 0) {
			if (arg && strcmp(arg, "text") == 0) {
				a->format = TPS_DIFF_TEXT;
			} else if (arg && strcmp(arg, "md") == 0) {
				a->format = TPS_DIFF_MARKDOWN;
			} else {
				return tps_cli_usage_error(
					err,
					"diff: --format expects text or md, "
					"got '%s'",
					arg ? arg : "");
			}
			i++;
		} else if (strcmp(opt, "--step") == 0) {
			char *end = NULL;
			long n = 0;
			errno = 0;
			if (arg) {
				n = strtol(arg, &end, 10);
			}
			if (!arg || errno || end == arg || *end != '\0' ||
			    n < 0 || n > 1000000000L) {
				return tps_cli_usage_error(
					err,
					"diff: --step needs a step number (0, "
					"1, ...), got '%s'",
					arg ? arg : "");
			}
			a->step = n;
			i++;
		} else if (opt[0] == '-' && opt[1] != '\0') {
			return tps_cli_usage_error(
				err, "diff: unknown option '%s'", opt);
		} else if (a->n_traces == 2) {
			return tps_cli_usage_error(
				err, "diff: unexpected argument '%s'", opt);
		} else {
			a->trace[a->n_traces++] = opt;
		}
	}
	if (a->n_traces != 2) {
		return tps_cli_usage_error(
			err, "diff: expected TRACE_A TRACE_B%s", "");
	}
	return TPS_EXIT_OK;
}

int tps_cli_diff(int argc, char **argv, FILE *out, FILE *err)
{
	struct diff_args a = {{NULL, NULL}, 0, NULL, TPS_DIFF_TEXT, -1};
	cJSON *trace[2] = {NULL, NULL};
	struct tps_diff d = {0};
	bool built = false;
	struct tps_error e = {0};
	char *text = NULL;
	size_t text_len = 0;
	FILE *mem;
	int rc = diff_options(argc, argv, &a, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	for (int i = 0; i < 2; i++) {
		if (tps_trace_read(a.trace[i], &trace[i], NULL, NULL, &e) !=
		    TPS_OK) {
			rc = tps_cli_trouble(err, &e);
			goto out;
		}
	}
	if (tps_diff_build(&d, trace[0], a.trace[0], trace[1], a.trace[1], 0,
			   &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	built = true;
	/* Made whole in memory first: nothing is published unless all of
	 * it was. */
	mem = open_memstream(&text, &text_len);
	if (!mem) {
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	tps_diff_write(mem, &d, a.format, a.step);
	if ((ferror(mem) != 0) + (fclose(mem) != 0)) {
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	if (tps_outfile_write_all(a.output, out, "comparison", text, text_len,
				  a.trace, 2, tps_cli_pending(),
				  &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	rc = d.first >= 0 ? TPS_EXIT_MISMATCH : TPS_EXIT_OK;
out:
	free(text);
	if (built) {
		tps_diff_free(&d);
	}
	cJSON_Delete(trace[0]);
	cJSON_Delete(trace[1]);
	return rc;
}

/* ---- tpsim plot TRACE... [-o FILE.svg] [--label TEXT]... ---------- */

struct plot_args {
	const char *trace[TPS_PLOT_MAX_TRACES];
	const char *label[TPS_PLOT_MAX_TRACES];
	int n_traces, n_labels;
	const char *output; /* NULL: stdout */
};

static int plot_options(int argc, char **argv, struct plot_args *a, FILE *err)
{
	for (int i = 2; i < argc; i++) {
		const char *opt = argv[i];
		const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "plot: %s needs a file", opt);
			}
			a->output = strcmp(arg, "-") == 0 ? NULL : arg;
			i++;
		} else if (strcmp(opt, "--label") == 0) {
			if (!arg) {
				return tps_cli_usage_error(
					err, "plot: --label needs a text%s",
					"");
			}
			if (a->n_labels == TPS_PLOT_MAX_TRACES ||
			    strlen(arg) >= TPS_PLOT_LABEL_MAX) {
				return tps_cli_usage_error(
					err,
					"plot: --label takes one text per "
					"trace, each under 96 bytes, got "
					"'%s'",
					arg);
			}
			a->label[a->n_labels++] = arg;
			i++;
		} else if (opt[0] == '-' && opt[1] != '\0') {
			return tps_cli_usage_error(
				err, "plot: unknown option '%s'", opt);
		} else if (a->n_traces == TPS_PLOT_MAX_TRACES) {
			return tps_cli_usage_error(
				err, "plot: at most 16 traces, got '%s' more",
				opt);
		} else {
			a->trace[a->n_traces++] = opt;
		}
	}
	if (a->n_traces == 0) {
		return tps_cli_usage_error(err, "plot: expected TRACE...%s",
					   "");
	}
	if (a->n_labels && a->n_labels != a->n_traces) {
		char what[128];
		snprintf(what, sizeof what,
			 "plot: %d --label for %d traces (one per trace, or "
			 "none)%s",
			 a->n_labels, a->n_traces, "%s");
		return tps_cli_usage_error(err, what, "");
	}
	return TPS_EXIT_OK;
}

int tps_cli_plot(int argc, char **argv, FILE *out, FILE *err)
{
	struct plot_args a = {{NULL}, {NULL}, 0, 0, NULL};
	cJSON *trace[TPS_PLOT_MAX_TRACES] = {NULL};
	struct tps_plot p;
	bool built = false;
	struct tps_error e = {0};
	char *svg = NULL;
	size_t svg_len = 0;
	FILE *mem;
	int rc = plot_options(argc, argv, &a, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	for (int i = 0; i < a.n_traces; i++) {
		if (tps_trace_read(a.trace[i], &trace[i], NULL, NULL, &e) !=
		    TPS_OK) {
			rc = tps_cli_trouble(err, &e);
			goto out;
		}
	}
	if (tps_plot_build(&p, (const cJSON *const *)trace, a.trace,
			   a.n_labels ? a.label : NULL, a.n_traces, 0,
			   &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	built = true;
	mem = open_memstream(&svg, &svg_len);
	if (!mem) {
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	tps_plot_write_svg(mem, &p);
	if ((ferror(mem) != 0) + (fclose(mem) != 0)) {
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	if (tps_outfile_write_all(a.output, out, "SVG", svg, svg_len, a.trace,
				  a.n_traces, tps_cli_pending(),
				  &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	rc = TPS_EXIT_OK;
out:
	free(svg);
	if (built) {
		tps_plot_free(&p);
	}
	for (int i = 0; i < a.n_traces; i++) {
		cJSON_Delete(trace[i]);
	}
	return rc;
}
