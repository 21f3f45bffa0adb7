/*
 * JSON Pointer building (RFC 6901) for error messages.
 */
#include "jsonio_internal.h"

#include <assert.h>
#include <stdbool.h>
#include <string.h>

/*
 * An untruncated pointer is at most PATH_ROOM bytes, so "..." always fits
 * after it. A truncated pointer fills the buffer (len == TPS_JSON_PATH_MAX -
 * 1), which is how later pushes know to leave it alone. Pushes never modify
 * text before the length they started at, so tps_json_path_pop() restores it.
 */
#define PATH_ROOM (TPS_JSON_PATH_MAX - 4)
#define PATH_FULL (TPS_JSON_PATH_MAX - 1)

void tps_json_path_init(struct tps_json_path *p)
{
	assert(p);
	p->text[0] = '\0';
	p->len = 0;
}

/* Appends one unit (never split) or, if it does not fit, the dots. */
static bool path_put(struct tps_json_path *p, const char *unit, size_t n)
{
	if (p->len >= PATH_FULL) {
		return false;
	}
	if (p->len + n <= PATH_ROOM) {
		memcpy(p->text + p->len, unit, n);
		p->len += n;
		p->text[p->len] = '\0';
		return true;
	}
	memset(p->text + p->len, '.', PATH_FULL - p->len);
	p->len = PATH_FULL;
	p->text[p->len] = '\0';
	return false;
}

void tps_json_path_push_key(struct tps_json_path *p, const char *key)
{
	const unsigned char *s = (const unsigned char *)key;
	size_t n;

	assert(p && key);
	if (!path_put(p, "/", 1)) {
		return;
	}
	for (; *s; s += n) {
		bool ok;

		/* RFC 6901: "~" -> "~0" and "/" -> "~1". */
		if (*s == '~') {
			n = 1;
			ok = path_put(p, "~0", 2);
		} else if (*s == '/') {
			n = 1;
			ok = path_put(p, "~1", 2);
		} else {
			n = tps_json_utf8_unit_len(s);
			ok = path_put(p, (const char *)s, n);
		}
		if (!ok) {
			return;
		}
	}
}

void tps_json_path_push_index(struct tps_json_path *p, size_t index)
{
	char digits[24];
	char unit[26];
	size_t nd = 0;
	size_t n = 0;

	assert(p);
	do {
		digits[nd++] = (char)('0' + index % 10);
		index /= 10;
	} while (index);
	unit[n++] = '/';
	while (nd) {
		unit[n++] = digits[--nd];
	}
	path_put(p, unit, n);
}

void tps_json_path_pop(struct tps_json_path *p, size_t saved_len)
{
	assert(p && saved_len <= p->len);
	p->len = saved_len;
	p->text[saved_len] = '\0';
}

const char *tps_json_path_str(const struct tps_json_path *p)
{
	assert(p);
	return p->len ? p->text : "(root)";
}
