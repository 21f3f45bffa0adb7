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

#endif
