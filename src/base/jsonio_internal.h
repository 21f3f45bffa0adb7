/*
 * Internals shared by the sources of the jsonio module:
 *   jsonio_pointer.c  JSON Pointer building (tps_json_path_*)
 *   jsonio_escape.c   escaping user text for messages
 *   jsonio_file.c     reading files with limits; tps_json_load
 *   jsonio_parse.c    the strict parser (tps_json_parse_strict)
 *   jsonio_packed.c   reading and copying packed number arrays
 */
#ifndef TPSIM_JSONIO_INTERNAL_H
#define TPSIM_JSONIO_INTERNAL_H

#include <stddef.h>

#include "jsonio.h"

/* Bytes in the UTF-8 sequence led by s[0] that are present (stops at NUL),
 * so that truncation never splits a character. */
static inline size_t tps_json_utf8_unit_len(const unsigned char *s)
{
	size_t need = 1;
	size_t n = 1;

	if (s[0] >= 0xF0) {
		need = 4;
	} else if (s[0] >= 0xE0) {
		need = 3;
	} else if (s[0] >= 0xC0) {
		need = 2;
	}
	while (n < need && (s[n] & 0xC0) == 0x80) {
		n++;
	}
	return n;
}

/*
 * tps_json_parse_strict_packed, telling consumed(ctx, upto) from time to
 * time (about every TPS_JSON_CONSUMED_STEP bytes) that it will read no
 * byte before upto again, but to count an error's line and column from
 * the start of the text (jsonio_file.c drops the pages of a mapped file
 * behind it). The tree holds no pointer into the text.
 */
#define TPS_JSON_CONSUMED_STEP ((size_t)256 << 10)
enum tps_status
tps_json_parse_releasing(const char *name, const char *text, size_t len,
			 const char *pack_key,
			 void (*consumed)(void *ctx, const char *upto),
			 void *ctx, cJSON **out, struct tps_error *err);

#endif
