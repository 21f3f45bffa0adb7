/*
 * What tpsim's SVG writers share (picture_render.c's sharding pictures,
 * run_plot.c's loss curves): text escaped for XML, and the width a
 * monospace text takes, so that boxes and images are sized without a
 * font. No locale, no floating point: the same bytes for the same text.
 */
#ifndef TPSIM_SVG_H
#define TPSIM_SVG_H

#include <stdint.h>
#include <stdio.h>

/* A monospace character at 12px, rounded up to whole pixels. */
#define TPS_SVG_CHAR_W 8

/* Writes s with &, <, > and " as XML entities. */
void tps_svg_put_xml(FILE *out, const char *s);

/* The width of s in characters (UTF-8 sequences count once) times
 * char_w. */
int64_t tps_svg_text_width(const char *s, int char_w);

/* <text x="x" y="y"ATTRS>s</text> and a newline; attrs starts with a
 * space, or is "". */
void tps_svg_text(FILE *out, int64_t x, int64_t y, const char *attrs,
		  const char *text);

#endif
