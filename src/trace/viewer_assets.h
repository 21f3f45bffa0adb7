/*
 * The viewer page of `tpsim view`, made at build time by
 * src/trace/viewer/embed.py from src/trace/viewer/viewer.html, viewer.css and
 * viewer.js (the stylesheet and script inlined): the bytes before the
 * trace's JSON and those after it. Not NUL-terminated. Not installed.
 */
#ifndef TPSIM_VIEWER_ASSETS_H
#define TPSIM_VIEWER_ASSETS_H

#include <stddef.h>

extern const char tps_viewer_head[];
extern const size_t tps_viewer_head_len;
extern const char tps_viewer_tail[];
extern const size_t tps_viewer_tail_len;

#endif
