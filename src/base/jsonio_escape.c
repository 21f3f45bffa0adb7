/*
 * Escaping user text echoed in messages, so that it cannot break the line or
 * drive a terminal.
 */
#include "jsonio_internal.h"

#include <assert.h>
#include <string.h>

static void hex_u4(char *unit, unsigned cp)
{
	static const char hex[] = "0123456789abcdef";

	unit[0] = '\\';
	unit[1] = 'u';
	unit[2] = hex[(cp >> 12) & 0xF];
	unit[3] = hex[(cp >> 8) & 0xF];
	unit[4] = hex[(cp >> 4) & 0xF];
	unit[5] = hex[cp & 0xF];
}

/* The escaped form of the character at s, consuming *used bytes. */
static size_t escape_unit(const unsigned char *s, char unit[8], size_t *used)
{
	const char *two = NULL;
	size_t n;

	*used = 1;
	switch (s[0]) {
	case '"': two = "\\\""; break;
	case '\\': two = "\\\\"; break;
	case '\n': two = "\\n"; break;
	case '\t': two = "\\t"; break;
	case '\r': two = "\\r"; break;
	case '\b': two = "\\b"; break;
	case '\f': two = "\\f"; break;
	default: break;
	}
	if (two) {
		memcpy(unit, two, 2);
		return 2;
	}
	if (s[0] < 0x20 || s[0] == 0x7F) {
		hex_u4(unit, s[0]);
		return 6;
	}
	/* C1 controls (U+0080..U+009F) can drive terminals too. */
	if (s[0] == 0xC2 && s[1] >= 0x80 && s[1] <= 0x9F) {
		*used = 2;
		hex_u4(unit, s[1]);
		return 6;
	}
	n = tps_json_utf8_unit_len(s);
	memcpy(unit, s, n);
	*used = n;
	return n;
}

char *tps_json_escape_for_message(const char *text, char *out, size_t out_size)
{
	const unsigned char *s;
	char unit[8];
	size_t used, n, total = 0, limit, pos = 0;

	assert(text && out);
	if (out_size == 0) {
		return out;
	}
	/* First pass: does the whole escaped text fit? Stop once it cannot. */
	s = (const unsigned char *)text;
	for (; *s && total < out_size; s += used) {
		total += escape_unit(s, unit, &used);
	}
	limit = out_size - 1;
	if (total > limit) {
		limit = limit >= 3 ? limit - 3 : 0;
	}
	for (s = (const unsigned char *)text; *s; s += used) {
		n = escape_unit(s, unit, &used);
		if (pos + n > limit) {
			break;
		}
		memcpy(out + pos, unit, n);
		pos += n;
	}
	if (total > out_size - 1) {
		for (size_t dots = 0; dots < 3 && pos < out_size - 1; dots++) {
			out[pos++] = '.';
		}
	}
	out[pos] = '\0';
	return out;
}
