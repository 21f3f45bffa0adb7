/*
 * tpsim view: a trace as one self-contained HTML page (docs/viewer.md).
 *
 * The page is src/cli/viewer/viewer.html with viewer.css and viewer.js
 * inlined, turned into two byte arrays at build time by
 * src/cli/viewer/embed.py (viewer_assets.h): everything before the trace and
 * everything after it. Between them goes the trace file's own bytes, as
 * the text of a <script type="application/json">, with every "<" written
 * \u003c so that no "</script" or "<!--" can occur in it. In valid JSON a
 * "<" can only stand inside a string, where \u003c reads back as the same
 * character, so the page's JSON.parse gives the trace unchanged.
 *
 * No name, date or path goes in: the same trace gives the same bytes.
 */
#include "cli_internal.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "jsonio.h"
#include "viewer_assets.h"

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

/* The page: head, the trace with "<" as \u003c, tail. NULL when out of
 * memory. */
static char *page_of(const char *trace, size_t trace_len, size_t *page_len)
{
	size_t n = tps_viewer_head_len + tps_viewer_tail_len, lt = 0;
	char *page, *p;
	for (size_t i = 0; i < trace_len; i++) {
		lt += trace[i] == '<';
	}
	/* "<" grows to 6 bytes; a trace is at most 1 GiB, so no overflow. */
	n += trace_len + 5 * lt;
	page = malloc(n);
	if (!page) {
		return NULL;
	}
	p = page;
	memcpy(p, tps_viewer_head, tps_viewer_head_len);
	p += tps_viewer_head_len;
	for (size_t i = 0; i < trace_len; i++) {
		if (trace[i] == '<') {
			memcpy(p, "\\u003c", 6);
			p += 6;
		} else {
			*p++ = trace[i];
		}
	}
	memcpy(p, tps_viewer_tail, tps_viewer_tail_len);
	*page_len = n;
	return page;
}

int tps_cli_view(int argc, char **argv, FILE *out, FILE *err)
{
	struct view_args a = {NULL, NULL};
	struct tps_error e = {0};
	cJSON *tree = NULL;
	char *text = NULL, *page = NULL;
	size_t text_len = 0, page_len = 0, skip = 0;
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
	/* A leading UTF-8 BOM, which the parser skips, is not JSON.parse's. */
	if (text_len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) {
		skip = 3;
	}
	page = page_of(text + skip, text_len - skip, &page_len);
	if (!page) {
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
