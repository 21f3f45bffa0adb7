/*
 * tpsim view's page: a trace as one self-contained HTML page
 * (docs/viewer.md).
 *
 * The page is src/trace/viewer/viewer.html with viewer.css and viewer.js
 * inlined, turned into two byte arrays at build time by
 * src/trace/viewer/embed.py (viewer_assets.h): everything before the trace
 * and everything after it. Between them goes the trace file's own bytes,
 * as the text of a <script type="application/json">, with every "<"
 * written \u003c so that no "</script" or "<!--" can occur in it. In valid
 * JSON a "<" can only stand inside a string, where \u003c reads back as
 * the same character, so the page's JSON.parse gives the trace unchanged.
 *
 * No name, date or path goes in: the same trace gives the same bytes.
 */
#ifndef TPSIM_VIEW_H
#define TPSIM_VIEW_H

#include <stddef.h>
#include <stdio.h>

/*
 * Writes the page of a trace to out: `trace` is the trace file's text
 * (len bytes, as read; the caller has checked it is a trace,
 * tps_trace_read), a leading UTF-8 BOM left out (the parser skips it,
 * JSON.parse would not). Write errors are the caller's to detect on out.
 */
void tps_view_write(FILE *out, const char *trace, size_t len);

#endif
