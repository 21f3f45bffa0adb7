/*
 * tpsim view TRACE [-o FILE.html]: the page of view.h, published through
 * the one output writer.
 */
#include "cli_internal.h"
#include "cli.h"

#include <stdbool.h>
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
	cJSON *tree = NULL;
	char *text = NULL, *page = NULL;
	size_t text_len = 0, page_len = 0;
	FILE *mem = NULL;
	bool written = false;
	int rc = view_options(argc, argv, &a, err);

	if (rc != TPS_EXIT_OK) {
		return rc;
	}
	/* Parsed only to refuse what is not a trace; the page embeds the
	 * file's bytes, not a re-printing of them. */
	if (tps_trace_read(a.trace, &tree, &text, &text_len, &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	cJSON_Delete(tree);
	tree = NULL;
	mem = open_memstream(&page, &page_len);
	if (mem) {
		tps_view_write(mem, text, text_len);
		/* fclose, whatever ferror says: it owns the stream. */
		written = !ferror(mem);
		written = fclose(mem) == 0 && written;
	}
	if (!written) {
		/* open_memstream's stream fails only for want of memory. */
		tps_error_set(&e, TPS_ERR_NOMEM, "out of memory");
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	if (tps_cli_publish(a.output, page, page_len, "HTML", out, a.trace,
			    &e) != TPS_OK) {
		rc = tps_cli_trouble(err, &e);
		goto out;
	}
	rc = TPS_EXIT_OK;
out:
	free(page);
	free(text);
	cJSON_Delete(tree);
	return rc;
}
