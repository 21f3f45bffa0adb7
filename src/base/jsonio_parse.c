/*
 * Strict JSON input: one pass that validates the text and builds the cJSON
 * tree as it goes. cJSON's own parser is not used: it accepts what RFC 8259
 * forbids, and (1.7.15) reads at most 63 characters of a number.
 *
 * The scanner is iterative (an explicit stack of at most TPS_JSON_MAX_DEPTH
 * frames), so hostile nesting cannot overflow the C stack. Each frame holds
 * the container being filled; every value is attached as soon as it is
 * created, so on error freeing the root frees everything. The scanner keeps
 * the decoded keys of every open object in one arena and a per-object hash
 * set of them, so duplicate detection is O(1) per key; the arena's top also
 * holds the string or number being converted. The JSON Pointer of the value
 * being read is rebuilt from the frame stack only when an error is reported,
 * and so is the line/column.
 *
 * The tree is the one cJSON_Parse builds from the same text (the same
 * types, strings, keys and order, valueint as cJSON_CreateNumber saturates
 * it, valueint 1 on true), except that numbers are read whole, however long
 * (number_value), and that arrays under the pack key are packed (jsonio.h).
 * An array there collects its numbers in its frame's buffer, and becomes
 * packed when it closes; the first element that is not a number turns the
 * numbers so far into nodes (unpack), and the array reads on as any other.
 */
#include "jsonio_internal.h"

#include <assert.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum frame_kind { FRAME_ARRAY, FRAME_OBJECT };

struct key_rec {
	uint64_t hash;
	size_t off; /* into scanner.keys */
	size_t len;
};

struct frame {
	enum frame_kind kind;
	bool in_child;	  /* a member is being read: it is in the pointer */
	size_t index;	  /* arrays: the current element */
	size_t key_off;	  /* objects: the current key, in scanner.keys */
	size_t first_rec; /* objects: this object's keys start here */
	size_t keys_mark; /* objects: scanner.keys_len at '{' */
	size_t *slots;	  /* objects: hash set of record index + 1, 0 empty */
	size_t nslots;	  /* a power of two, or 0 */
	cJSON *node;	  /* the container being filled (owned by root) */
	bool packing;	  /* arrays: numbers only so far, under the pack key */
	double *vals;	  /* arrays, packing: the numbers (cJSON_malloc) */
	size_t nvals, vals_cap;
	/* arrays, counting (no vals): the first number, and the first
	 * non-finite one (-1: none) */
	double first_value;
	int64_t bad_index;
	double bad_value;
};

struct scanner {
	const char *name;     /* escaped for messages */
	const char *raw_name; /* as given (tps_error_set_at escapes it) */
	const unsigned char *s;
	size_t len;
	size_t pos;
	struct frame frames[TPS_JSON_MAX_DEPTH];
	size_t depth;
	/* Decoded keys of the open objects, each NUL-terminated; objects
	 * close in LIFO order, so this is a stack. */
	char *keys;
	size_t keys_len, keys_cap;
	struct key_rec *recs;
	size_t nrecs, recs_cap;
	cJSON *root; /* the tree so far; NULL before the first value */
	const char *pack_key; /* NULL: nothing is packed */
	/* Packed arrays hold their count and first non-finite number, not
	 * their numbers, and lie under pack_key at any depth
	 * (tps_json_parse_counted). */
	bool counting;
	struct tps_error *err;
	/* Not NULL: every node, key and string is carved from here
	 * (tps_json_parse_arena), and the tree is freed with it. */
	struct tps_json_arena *arena;
	/* Not NULL: told where the text read for good ends
	 * (tps_json_parse_releasing), once pos reaches next_consumed. */
	void (*consumed)(void *ctx, const char *upto);
	void *consumed_ctx;
	size_t next_consumed;
};

/*
 * A bump allocator: blocks of at least ARENA_BLOCK bytes, never freed one
 * by one. A cJSON node is 64 bytes here, where malloc takes 80 for it (its
 * header, and 16-byte chunks): GPT-3 175B's symbolic trace has 1.2 million
 * nodes, mostly its collectives' ranks.
 */
#define ARENA_BLOCK ((size_t)1 << 20)

struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	max_align_t data[];
};

struct tps_json_arena {
	struct arena_block *top; /* the one being filled; then older ones */
};

/* size bytes, zeroed, at a multiple of align (a power of two, at most
 * max_align_t's); NULL when out of memory. */
static void *arena_alloc(struct tps_json_arena *a, size_t size, size_t align)
{
	struct arena_block *b = a->top;
	size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
	void *p;

	if (!b || at > b->cap || b->cap - at < size) {
		size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
		b = malloc(sizeof *b + cap);
		if (!b) {
			return NULL;
		}
		b->next = a->top;
		b->cap = cap;
		a->top = b;
		at = 0;
	}
	p = (char *)b->data + at;
	b->used = at + size;
	memset(p, 0, size);
	return p;
}

static char *arena_strdup(struct tps_json_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *copy = arena_alloc(a, n, 1);
	if (copy) {
		memcpy(copy, s, n);
	}
	return copy;
}

void tps_json_arena_free(struct tps_json_arena *arena)
{
	if (!arena) {
		return;
	}
	while (arena->top) {
		struct arena_block *b = arena->top;
		arena->top = b->next;
		free(b);
	}
	free(arena);
}

/*
 * A new node of `type` as cJSON_Create* makes it: valueint saturated as
 * cJSON_CreateNumber does, a string's own copy of text. NULL when out of
 * memory. In the arena, strings and keys are marked as not the node's
 * (cJSON_IsReference, cJSON_StringIsConst): cJSON frees neither.
 */
static cJSON *new_node(struct scanner *sc, int type, double number,
		       const char *text)
{
	cJSON *item;

	if (!sc->arena) {
		switch (type) {
		case cJSON_Number: return cJSON_CreateNumber(number);
		case cJSON_String: return cJSON_CreateString(text);
		case cJSON_Array: return cJSON_CreateArray();
		case cJSON_Object: return cJSON_CreateObject();
		default: return cJSON_CreateBool(type == cJSON_True);
		}
	}
	item = arena_alloc(sc->arena, sizeof *item, _Alignof(cJSON));
	if (!item) {
		return NULL;
	}
	item->type = type;
	if (type == cJSON_Number) {
		item->valuedouble = number;
		item->valueint = number >= INT_MAX   ? INT_MAX
				 : number <= INT_MIN ? INT_MIN
						     : (int)number;
	} else if (type == cJSON_String) {
		item->type |= cJSON_IsReference;
		item->valuestring = arena_strdup(sc->arena, text);
		if (!item->valuestring) {
			return NULL;
		}
	}
	return item;
}

/* Appends item to the children of parent, as cJSON_AddItemToArray does
 * (the last child in child->prev). */
static void arena_append(cJSON *parent, cJSON *item)
{
	cJSON *first = parent->child;
	if (!first) {
		parent->child = item;
		item->prev = item;
	} else {
		first->prev->next = item;
		item->prev = first->prev;
		first->prev = item;
	}
}

/* Makes room for one more item in *buf (holding `used` of *cap). */
static bool grow(void **buf, size_t *cap, size_t used, size_t item)
{
	size_t want, bytes;
	void *bigger;

	if (used < *cap) {
		return true;
	}
	want = *cap ? *cap : 16;
	if (*cap && __builtin_mul_overflow(*cap, 2, &want)) {
		return false;
	}
	if (__builtin_mul_overflow(want, item, &bytes)) {
		return false;
	}
	bigger = realloc(*buf, bytes);
	if (!bigger) {
		return false;
	}
	*buf = bigger;
	*cap = want;
	return true;
}

/* Line and column (1-based, columns in characters) of byte offset `at`. */
static void line_col(const struct scanner *sc, size_t at, size_t *line,
		     size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < at && i < sc->len; i++) {
		if (sc->s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if ((sc->s[i] & 0xC0) != 0x80) {
			(*col)++;
		}
	}
}

/* Rebuilds the pointer of the value being read from the frame stack. */
static void scan_pointer(const struct scanner *sc, struct tps_json_path *p)
{
	tps_json_path_init(p);
	for (size_t i = 0; i < sc->depth; i++) {
		const struct frame *f = &sc->frames[i];

		if (!f->in_child) {
			break;
		}
		if (f->kind == FRAME_ARRAY) {
			tps_json_path_push_index(p, f->index);
		} else {
			tps_json_path_push_key(p, sc->keys + f->key_off);
		}
	}
}

/* Fills err with "<name>: <pointer>: <what>". */
static enum tps_status scan_fail(struct scanner *sc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static enum tps_status scan_fail(struct scanner *sc, const char *fmt, ...)
{
	struct tps_json_path p;
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	scan_pointer(sc, &p);
	/* Keys may hold control characters: tps_error_set_at escapes them,
	 * so that the line stays one line. */
	return tps_error_set_at(sc->err, TPS_ERR_INPUT, sc->raw_name, p.text,
				"%s", what);
}

/* "invalid JSON at line L, column C: <what>" for the byte at `at`. */
static enum tps_status syntax_error(struct scanner *sc, size_t at,
				    const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum tps_status syntax_error(struct scanner *sc, size_t at,
				    const char *fmt, ...)
{
	char what[400];
	size_t line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	line_col(sc, at, &line, &col);
	return scan_fail(sc, "invalid JSON at line %zu, column %zu: %s", line,
			 col, what);
}

static enum tps_status eof_error(struct scanner *sc)
{
	size_t line, col;

	line_col(sc, sc->len, &line, &col);
	return scan_fail(sc, "unexpected end of input at line %zu, column %zu",
			 line, col);
}

static enum tps_status nomem_error(struct scanner *sc)
{
	return tps_error_set(sc->err, TPS_ERR_NOMEM,
			     "%s: out of memory while checking JSON", sc->name);
}

static enum tps_status tree_nomem_error(struct scanner *sc)
{
	return tps_error_set(sc->err, TPS_ERR_NOMEM,
			     "%s: out of memory while building the JSON tree",
			     sc->name);
}

/* A packing array's numbers so far become its nodes: an element that is
 * not a number came. A counting array's are stand-ins: 0, but its first
 * number and its first non-finite one as they were, which is all a reader
 * that only checks them can tell apart. */
static enum tps_status unpack(struct scanner *sc, struct frame *f)
{
	enum tps_status st = TPS_OK;

	for (size_t i = 0; i < f->nvals && st == TPS_OK; i++) {
		double d = !sc->counting		? f->vals[i]
			   : (int64_t)i == f->bad_index ? f->bad_value
			   : i == 0			? f->first_value
							: 0.0;
		cJSON *item = cJSON_CreateNumber(d);

		if (!item || !cJSON_AddItemToArray(f->node, item)) {
			cJSON_Delete(item);
			st = tree_nomem_error(sc);
		}
	}
	cJSON_free(f->vals);
	f->vals = NULL;
	f->nvals = 0;
	f->vals_cap = 0;
	f->packing = false;
	return st;
}

/*
 * Puts a new value (NULL if its allocation failed) into the open container,
 * under the current key in an object, or makes it the root. The tree owns
 * item from here on; on failure item is freed.
 */
static enum tps_status attach(struct scanner *sc, cJSON *item)
{
	struct frame *f;
	bool added;

	if (!item) {
		return tree_nomem_error(sc);
	}
	if (sc->depth == 0) {
		sc->root = item;
		return TPS_OK;
	}
	f = &sc->frames[sc->depth - 1];
	if (f->packing && unpack(sc, f) != TPS_OK) {
		cJSON_Delete(item);
		return TPS_ERR_NOMEM;
	}
	if (sc->arena) {
		if (f->kind == FRAME_OBJECT) {
			item->string =
				arena_strdup(sc->arena, sc->keys + f->key_off);
			if (!item->string) {
				return tree_nomem_error(sc);
			}
			item->type |= cJSON_StringIsConst;
		}
		arena_append(f->node, item);
		return TPS_OK;
	}
	/* Both append in O(1): cJSON keeps the last child in child->prev. */
	if (f->kind == FRAME_ARRAY) {
		added = cJSON_AddItemToArray(f->node, item);
	} else {
		added = cJSON_AddItemToObject(f->node, sc->keys + f->key_off,
					      item);
	}
	if (!added) {
		cJSON_Delete(item);
		return tree_nomem_error(sc);
	}
	return TPS_OK;
}

/*
 * Decodes the UTF-8 sequence at s (n bytes available) per RFC 3629: returns
 * its length and code point, or 0 with *why naming the defect.
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp,
			  const char **why)
{
	size_t need;
	uint32_t c = s[0];

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c < 0xC0) {
		*why = "unexpected continuation byte";
		return 0;
	}
	if (c < 0xC2) {
		*why = "overlong encoding";
		return 0;
	}
	if (c < 0xE0) {
		need = 2;
		c &= 0x1F;
	} else if (c < 0xF0) {
		need = 3;
		c &= 0x0F;
	} else if (c < 0xF5) {
		need = 4;
		c &= 0x07;
	} else if (c < 0xF8) {
		*why = "code point above U+10FFFF";
		return 0;
	} else {
		*why = "byte that never appears in UTF-8";
		return 0;
	}
	for (size_t i = 1; i < need; i++) {
		if (i >= n || (s[i] & 0xC0) != 0x80) {
			*why = "truncated sequence";
			return 0;
		}
		c = (c << 6) | (s[i] & 0x3F);
	}
	if ((need == 3 && c < 0x800) || (need == 4 && c < 0x10000)) {
		*why = "overlong encoding";
		return 0;
	}
	if (c >= 0xD800 && c <= 0xDFFF) {
		*why = "UTF-16 surrogate encoded in UTF-8";
		return 0;
	}
	if (c > 0x10FFFF) {
		*why = "code point above U+10FFFF";
		return 0;
	}
	*cp = c;
	return need;
}

/* Reports a NUL byte or invalid UTF-8 at `at`; TPS_OK if neither. */
static enum tps_status check_bad_byte(struct scanner *sc, size_t at,
				      const char *where)
{
	const char *why = NULL;
	uint32_t cp;

	if (sc->s[at] == 0) {
		return syntax_error(sc, at, "NUL byte%s", where);
	}
	if (sc->s[at] >= 0x80 &&
	    !utf8_decode(sc->s + at, sc->len - at, &cp, &why)) {
		return syntax_error(sc, at, "invalid UTF-8 (%s)", why);
	}
	return TPS_OK;
}

/* "expected <what>, got <the character at pos>". */
static enum tps_status unexpected(struct scanner *sc, const char *expected)
{
	const char *why = NULL;
	size_t at = sc->pos;
	uint32_t cp = 0;
	unsigned c;

	if (at >= sc->len) {
		return eof_error(sc);
	}
	if (check_bad_byte(sc, at, "") != TPS_OK) {
		return TPS_ERR_INPUT;
	}
	c = sc->s[at];
	if (c >= 0x80) {
		utf8_decode(sc->s + at, sc->len - at, &cp, &why);
		return syntax_error(sc, at, "expected %s, got U+%04" PRIX32,
				    expected, cp);
	}
	if (c < 0x20 || c == 0x7F) {
		return syntax_error(sc, at,
				    "expected %s, got control character "
				    "U+%04X",
				    expected, c);
	}
	return syntax_error(sc, at, "expected %s, got '%c'", expected, (int)c);
}

static void skip_ws(struct scanner *sc)
{
	while (sc->pos < sc->len) {
		unsigned char c = sc->s[sc->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			break;
		}
		sc->pos++;
	}
}

static bool key_put(struct scanner *sc, const void *bytes, size_t n)
{
	while (sc->keys_len + n > sc->keys_cap) {
		if (!grow((void **)&sc->keys, &sc->keys_cap, sc->keys_cap, 1)) {
			return false;
		}
	}
	memcpy(sc->keys + sc->keys_len, bytes, n);
	sc->keys_len += n;
	return true;
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9') {
		return c - '0';
	}
	if (c >= 'a' && c <= 'f') {
		return c - 'a' + 10;
	}
	if (c >= 'A' && c <= 'F') {
		return c - 'A' + 10;
	}
	return -1;
}

/* Reads the 4 hex digits after "\u" at `esc` into *v. */
static enum tps_status scan_hex4(struct scanner *sc, size_t esc, uint32_t *v)
{
	*v = 0;
	for (size_t i = 2; i < 6; i++) {
		int h;

		if (esc + i >= sc->len) {
			return eof_error(sc);
		}
		h = hex_value(sc->s[esc + i]);
		if (h < 0) {
			return syntax_error(sc, esc,
					    "invalid \\u escape (expected 4 "
					    "hex digits)");
		}
		*v = (*v << 4) | (uint32_t)h;
	}
	return TPS_OK;
}

static size_t utf8_encode(uint32_t cp, unsigned char *out)
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xC0 | (cp >> 6));
		out[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xE0 | (cp >> 12));
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | (cp >> 18));
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Scans the escape at sc->pos and appends its decoded bytes to sc->keys. */
static enum tps_status scan_escape(struct scanner *sc)
{
	enum tps_status st;
	unsigned char utf8[4];
	size_t esc = sc->pos, n = 1;
	uint32_t cp, lo;
	unsigned char e;

	if (esc + 1 >= sc->len) {
		return eof_error(sc);
	}
	e = sc->s[esc + 1];
	switch (e) {
	case '"':
	case '\\':
	case '/': utf8[0] = e; break;
	case 'b': utf8[0] = '\b'; break;
	case 'f': utf8[0] = '\f'; break;
	case 'n': utf8[0] = '\n'; break;
	case 'r': utf8[0] = '\r'; break;
	case 't': utf8[0] = '\t'; break;
	case 'u':
		st = scan_hex4(sc, esc, &cp);
		if (st != TPS_OK) {
			return st;
		}
		if (cp >= 0xDC00 && cp <= 0xDFFF) {
			return syntax_error(sc, esc,
					    "lone surrogate \\u%04" PRIX32
					    " (a low surrogate without a "
					    "high one before it)",
					    cp);
		}
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			size_t next = esc + 6;

			if (next + 1 >= sc->len) {
				return eof_error(sc);
			}
			if (sc->s[next] != '\\' || sc->s[next + 1] != 'u') {
				return syntax_error(
					sc, esc,
					"lone surrogate \\u%04" PRIX32
					" (expected a low surrogate "
					"\\uDC00-\\uDFFF next)",
					cp);
			}
			st = scan_hex4(sc, next, &lo);
			if (st != TPS_OK) {
				return st;
			}
			if (lo < 0xDC00 || lo > 0xDFFF) {
				return syntax_error(sc, esc,
						    "mismatched surrogate: "
						    "\\u%04" PRIX32 " followed "
						    "by \\u%04" PRIX32 ", not "
						    "a low surrogate",
						    cp, lo);
			}
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			sc->pos += 6;
		}
		if (cp == 0) {
			/* cJSON strings end at NUL: the text would be cut. */
			return syntax_error(sc, esc,
					    "\\u0000 (NUL) is not allowed");
		}
		sc->pos += 4;
		n = utf8_encode(cp, utf8);
		break;
	default:
		if (e >= 0x21 && e < 0x7F) {
			return syntax_error(sc, esc, "invalid escape '\\%c'",
					    (int)e);
		}
		return syntax_error(sc, esc,
				    "invalid escape (backslash followed by "
				    "byte 0x%02X)",
				    (unsigned)e);
	}
	sc->pos += 2;
	if (!key_put(sc, utf8, n)) {
		return nomem_error(sc);
	}
	return TPS_OK;
}

/*
 * Scans the string whose '"' is at sc->pos: its decoded bytes and a NUL are
 * appended to sc->keys, and *out_len is their count without the NUL.
 */
static enum tps_status scan_string(struct scanner *sc, size_t *out_len)
{
	enum tps_status st;
	size_t start = sc->keys_len;
	const char *why = NULL;
	uint32_t cp;

	sc->pos++;
	for (;;) {
		unsigned char c;
		size_t from = sc->pos, n;

		/* Fast path: plain printable ASCII. */
		while (sc->pos < sc->len) {
			c = sc->s[sc->pos];
			if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') {
				break;
			}
			sc->pos++;
		}
		if (sc->pos > from &&
		    !key_put(sc, sc->s + from, sc->pos - from)) {
			return nomem_error(sc);
		}
		if (sc->pos >= sc->len) {
			return eof_error(sc);
		}
		c = sc->s[sc->pos];
		if (c == '"') {
			sc->pos++;
			break;
		}
		if (c == '\\') {
			st = scan_escape(sc);
			if (st != TPS_OK) {
				return st;
			}
			continue;
		}
		if (c == 0) {
			return syntax_error(sc, sc->pos, "NUL byte in string");
		}
		if (c < 0x20) {
			return syntax_error(sc, sc->pos,
					    "raw control character U+%04X in "
					    "string (it must be escaped)",
					    (unsigned)c);
		}
		n = utf8_decode(sc->s + sc->pos, sc->len - sc->pos, &cp, &why);
		if (!n) {
			return syntax_error(sc, sc->pos, "invalid UTF-8 (%s)",
					    why);
		}
		if (!key_put(sc, sc->s + sc->pos, n)) {
			return nomem_error(sc);
		}
		sc->pos += n;
	}
	*out_len = sc->keys_len - start;
	if (!key_put(sc, "", 1)) {
		return nomem_error(sc);
	}
	return TPS_OK;
}

/* A string value: decoded on top of the key arena, copied into the tree. */
static enum tps_status scan_string_value(struct scanner *sc)
{
	enum tps_status st;
	size_t mark = sc->keys_len, len;

	st = scan_string(sc, &len);
	if (st == TPS_OK) {
		st = attach(sc, new_node(sc, cJSON_String, 0, sc->keys + mark));
	}
	sc->keys_len = mark;
	return st;
}

/* 10^0 .. 10^22, each exactly a double (5^22 < 2^53). */
static const double exact_tens[] = {
	1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8,  1e9,  1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * Clinger's fast path for the number text s (n bytes matching the grammar):
 * its value is m * 10^k for an integer m. When m <= 2^53 and |k| <= 22, m
 * and 10^|k| are exact doubles, so the one IEEE multiplication (or
 * division) rounds the exact value once, correctly, which is what strtod
 * does: the same double, bit for bit (test_jsonio checks). Returns false
 * for every other number, which strtod reads. Under excess precision
 * (FLT_EVAL_METHOD != 0) the operation could round twice, so strtod reads
 * them all.
 */
static bool fast_number(const unsigned char *s, size_t n, double *out)
{
	const uint64_t max_exact = (uint64_t)1 << 53;
	uint64_t m = 0;
	long k = 0, e = 0;
	int digits = 0; /* in m, leading zeros skipped; 19 fit in 64 bits */
	bool neg = false, in_fraction = false;
	size_t i = 0;
	double d;

	if (FLT_EVAL_METHOD != 0) {
		return false;
	}
	if (s[i] == '-') {
		neg = true;
		i++;
	}
	for (; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
		if (s[i] == '.') {
			in_fraction = true;
			continue;
		}
		if (in_fraction) {
			k--;
		}
		if (m == 0 && s[i] == '0') {
			continue;
		}
		if (++digits > 19) {
			return false;
		}
		m = m * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < n) {
		bool e_neg = false;

		i++; /* the 'e'; a digit follows, or a sign and a digit */
		if (s[i] == '-' || s[i] == '+') {
			e_neg = s[i] == '-';
			i++;
		}
		for (; i < n; i++) {
			if (e > 1000) {
				return false;
			}
			e = e * 10 + (s[i] - '0');
		}
		k += e_neg ? -e : e;
	}
	if (m > max_exact || (m != 0 && (k < -22 || k > 22))) {
		return false;
	}
	d = (double)m;
	if (m != 0) {
		d = k < 0 ? d / exact_tens[-k] : d * exact_tens[k];
	}
	*out = neg ? -d : d;
	return true;
}

/* A number value: into the packing array's buffer, or a node of its own. */
static enum tps_status attach_number(struct scanner *sc, double d)
{
	struct frame *f = sc->depth ? &sc->frames[sc->depth - 1] : NULL;

	if (!f || !f->packing || f->nvals >= INT_MAX) {
		/* valueint saturated as cJSON's parser does (new_node). */
		return attach(sc, new_node(sc, cJSON_Number, d, NULL));
	}
	if (sc->counting) {
		if (f->nvals == 0) {
			f->first_value = d;
		}
		if (f->bad_index < 0 && !isfinite(d)) {
			f->bad_index = (int64_t)f->nvals;
			f->bad_value = d;
		}
		f->nvals++;
		return TPS_OK;
	}
	if (f->nvals == f->vals_cap) {
		/* cJSON_malloc, so that cJSON_Delete frees it (jsonio.h); it
		 * has no realloc. */
		size_t cap = f->vals_cap ? f->vals_cap * 2 : 16, bytes;
		double *bigger;

		if (__builtin_mul_overflow(cap, sizeof *bigger, &bytes) ||
		    !(bigger = cJSON_malloc(bytes))) {
			return tree_nomem_error(sc);
		}
		if (f->nvals) {
			memcpy(bigger, f->vals, f->nvals * sizeof *bigger);
		}
		cJSON_free(f->vals);
		f->vals = bigger;
		f->vals_cap = cap;
	}
	f->vals[f->nvals++] = d;
	return TPS_OK;
}

/*
 * Converts the number text at s[start], n bytes that match the grammar, and
 * attaches it. Unless the fast path takes it, strtod reads it whole, however
 * long: it rounds correctly, so the double is the one nearest the decimal
 * value (and +-inf beyond the largest double, 0 or a subnormal below the
 * smallest, as before: a reader that needs finite values checks). The C
 * locale's decimal point is in effect (tps_json_parse_strict). The input
 * need not end in a NUL, so the text is copied to one that does.
 */
static enum tps_status number_value(struct scanner *sc, size_t start, size_t n)
{
	char small[64];
	char *text = small;
	char *end = NULL;
	size_t mark = sc->keys_len;
	double d;

	if (fast_number(sc->s + start, n, &d)) {
		return attach_number(sc, d);
	}
	if (n >= sizeof small) {
		if (!key_put(sc, sc->s + start, n) || !key_put(sc, "", 1)) {
			return nomem_error(sc);
		}
		text = sc->keys + mark;
	} else {
		memcpy(small, sc->s + start, n);
		small[n] = '\0';
	}
	d = strtod(text, &end);
	assert(end == text + n);
	sc->keys_len = mark;
	return attach_number(sc, d);
}

/* Why a text is not an RFC 8259 number, or NUMBER_OK. */
enum number_fault {
	NUMBER_OK,
	NUMBER_NO_DIGIT,	  /* at the start, or after '-' */
	NUMBER_LEADING_ZERO,	  /* "08" */
	NUMBER_NO_FRACTION_DIGIT, /* "8." */
	NUMBER_NO_EXPONENT_DIGIT, /* "8e", "8e+" */
};

static bool digit_at(const unsigned char *s, size_t len, size_t at)
{
	return at < len && s[at] >= '0' && s[at] <= '9';
}

/*
 * The one number grammar of tpsim's JSON, for the parser and for numbers
 * read elsewhere (tps_json_scan_number: the command line's --set):
 *
 *   number = [ "-" ] ( "0" / [1-9] *DIGIT ) [ "." 1*DIGIT ]
 *            [ ( "e" / "E" ) [ "+" / "-" ] 1*DIGIT ]   (RFC 8259)
 *
 * matched at the start of s (len bytes). *end gets the offset reached: the
 * number's length, or where it went wrong.
 */
static enum number_fault number_span(const unsigned char *s, size_t len,
				     size_t *end)
{
	size_t i = 0;
	enum number_fault f = NUMBER_OK;

	if (i < len && s[i] == '-') {
		i++;
	}
	if (!digit_at(s, len, i)) {
		f = NUMBER_NO_DIGIT;
		goto out;
	}
	if (s[i] == '0') {
		i++;
		if (digit_at(s, len, i)) {
			f = NUMBER_LEADING_ZERO;
			goto out;
		}
	} else {
		while (digit_at(s, len, i)) {
			i++;
		}
	}
	if (i < len && s[i] == '.') {
		i++;
		if (!digit_at(s, len, i)) {
			f = NUMBER_NO_FRACTION_DIGIT;
			goto out;
		}
		while (digit_at(s, len, i)) {
			i++;
		}
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-')) {
			i++;
		}
		if (!digit_at(s, len, i)) {
			f = NUMBER_NO_EXPONENT_DIGIT;
			goto out;
		}
		while (digit_at(s, len, i)) {
			i++;
		}
	}
out:
	*end = i;
	return f;
}

static enum tps_status scan_number(struct scanner *sc)
{
	size_t start = sc->pos, end;
	enum number_fault f = number_span(sc->s + start, sc->len - start, &end);

	sc->pos = start + end;
	switch (f) {
	case NUMBER_OK: break;
	case NUMBER_NO_DIGIT: return unexpected(sc, "a digit after '-'");
	case NUMBER_LEADING_ZERO:
		return syntax_error(sc, start, "leading zero in number");
	case NUMBER_NO_FRACTION_DIGIT:
		return unexpected(sc, "a digit after '.' in number");
	case NUMBER_NO_EXPONENT_DIGIT:
		return unexpected(sc, "a digit in the exponent");
	}
	return number_value(sc, start, end);
}

bool tps_json_scan_number(const char *text, size_t len, size_t *used,
			  double *out)
{
	const unsigned char *s = (const unsigned char *)text;
	char small[64];
	char *copy = small, *end = NULL;
	locale_t c_numeric = (locale_t)0, saved;
	bool ok = false;
	size_t n;
	double d;

	if (number_span(s, len, &n) != NUMBER_OK) {
		return false;
	}
	if (fast_number(s, n, &d)) {
		ok = true;
		goto out;
	}
	/* strtod, as number_value: a NUL after the number, and the C
	 * locale's decimal point whatever the program's. */
	if (n >= sizeof small) {
		copy = malloc(n + 1);
	}
	c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	if (!copy || c_numeric == (locale_t)0) {
		goto out;
	}
	memcpy(copy, text, n);
	copy[n] = '\0';
	saved = uselocale(c_numeric);
	d = strtod(copy, &end);
	uselocale(saved);
	assert(end == copy + n);
	ok = true;
out:
	if (c_numeric != (locale_t)0) {
		freelocale(c_numeric);
	}
	if (copy != small) {
		free(copy);
	}
	if (ok) {
		*used = n;
		*out = d;
	}
	return ok;
}

static enum tps_status attach_bool(struct scanner *sc, bool value)
{
	cJSON *item = new_node(sc, value ? cJSON_True : cJSON_False, 0, NULL);

	/* cJSON's parser sets valueint 1 on true; cJSON_CreateBool does not. */
	if (item && value) {
		item->valueint = 1;
	}
	return attach(sc, item);
}

/* true / false; null is reported as not allowed. */
static enum tps_status scan_literal(struct scanner *sc)
{
	static const char *const words[] = {"true", "false", "null"};
	size_t left = sc->len - sc->pos;

	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(words[i]);

		if (sc->s[sc->pos] != (unsigned char)words[i][0]) {
			continue;
		}
		if (memcmp(sc->s + sc->pos, words[i], n < left ? n : left)) {
			return syntax_error(sc, sc->pos,
					    "invalid literal (expected true "
					    "or false)");
		}
		if (left < n) {
			return eof_error(sc);
		}
		if (i == 2) {
			size_t line, col;

			line_col(sc, sc->pos, &line, &col);
			return scan_fail(sc,
					 "null is not allowed (line %zu, "
					 "column %zu)",
					 line, col);
		}
		sc->pos += n;
		return attach_bool(sc, i == 0);
	}
	return unexpected(sc, "a JSON value");
}

/* FNV-1a: keys are local file content, not an attacker-chosen flood. */
static uint64_t key_hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037u;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211u;
	}
	return h;
}

/* Doubles f's hash set once it is half full. */
static bool key_set_grow(struct scanner *sc, struct frame *f)
{
	size_t count = sc->nrecs - f->first_rec;
	size_t nslots, *slots;

	if ((count + 1) * 2 <= f->nslots) {
		return true;
	}
	nslots = f->nslots ? f->nslots * 2 : 16;
	slots = calloc(nslots, sizeof *slots);
	if (!slots) {
		return false;
	}
	for (size_t r = f->first_rec; r < sc->nrecs; r++) {
		size_t i = (size_t)sc->recs[r].hash & (nslots - 1);

		while (slots[i]) {
			i = (i + 1) & (nslots - 1);
		}
		slots[i] = r + 1;
	}
	free(f->slots);
	f->slots = slots;
	f->nslots = nslots;
	return true;
}

/* Adds the key just decoded at keys[off] (len bytes) to the top object;
 * *dup is set instead if it is already there. */
static enum tps_status key_add(struct scanner *sc, size_t off, size_t len,
			       bool *dup)
{
	struct frame *f = &sc->frames[sc->depth - 1];
	uint64_t h = key_hash(sc->keys + off, len);
	size_t i;

	*dup = false;
	if (!key_set_grow(sc, f) || !grow((void **)&sc->recs, &sc->recs_cap,
					  sc->nrecs, sizeof *sc->recs)) {
		return nomem_error(sc);
	}
	i = (size_t)h & (f->nslots - 1);
	while (f->slots[i]) {
		const struct key_rec *r = &sc->recs[f->slots[i] - 1];

		if (r->hash == h && r->len == len &&
		    memcmp(sc->keys + r->off, sc->keys + off, len) == 0) {
			*dup = true;
			return TPS_OK;
		}
		i = (i + 1) & (f->nslots - 1);
	}
	sc->recs[sc->nrecs].hash = h;
	sc->recs[sc->nrecs].off = off;
	sc->recs[sc->nrecs].len = len;
	sc->nrecs++;
	f->slots[i] = sc->nrecs;
	return TPS_OK;
}

static enum tps_status open_container(struct scanner *sc, enum frame_kind k)
{
	enum tps_status st;
	struct frame *f;
	cJSON *node;
	/* Anywhere under root[pack_key], root being an object; counting,
	 * under any member named pack_key. */
	bool pack = k == FRAME_ARRAY && sc->pack_key && sc->depth > 0 &&
		    sc->frames[0].kind == FRAME_OBJECT &&
		    sc->frames[0].in_child &&
		    strcmp(sc->keys + sc->frames[0].key_off, sc->pack_key) == 0;

	for (size_t i = 1;
	     k == FRAME_ARRAY && sc->counting && !pack && i < sc->depth; i++) {
		const struct frame *o = &sc->frames[i];
		pack = o->kind == FRAME_OBJECT && o->in_child &&
		       strcmp(sc->keys + o->key_off, sc->pack_key) == 0;
	}

	if (sc->depth == TPS_JSON_MAX_DEPTH) {
		size_t line, col;

		line_col(sc, sc->pos, &line, &col);
		return scan_fail(sc,
				 "nesting deeper than %d levels (line %zu, "
				 "column %zu)",
				 TPS_JSON_MAX_DEPTH, line, col);
	}
	node = new_node(sc, k == FRAME_ARRAY ? cJSON_Array : cJSON_Object, 0,
			NULL);
	st = attach(sc, node);
	if (st != TPS_OK) {
		return st;
	}
	f = &sc->frames[sc->depth++];
	memset(f, 0, sizeof *f);
	f->kind = k;
	f->node = node;
	f->packing = pack;
	f->bad_index = -1;
	f->first_rec = sc->nrecs;
	f->keys_mark = sc->keys_len;
	sc->pos++;
	return TPS_OK;
}

static enum tps_status close_container(struct scanner *sc)
{
	struct frame *f = &sc->frames[--sc->depth];
	enum tps_status st = TPS_OK;

	if (f->kind == FRAME_OBJECT) {
		free(f->slots);
		sc->nrecs = f->first_rec;
		sc->keys_len = f->keys_mark;
	}
	if (f->packing && f->nvals && sc->counting) {
		struct tps_json_counted *c = cJSON_malloc(sizeof *c);
		if (!c) {
			/* Counted as empty would be wrong: fail the parse. */
			st = tree_nomem_error(sc);
		} else {
			c->first_value = f->first_value;
			c->first_bad = f->bad_index;
			c->bad_value = f->bad_value;
			f->node->valuestring = (char *)c;
			f->node->valueint = (int)f->nvals;
			f->node->valuedouble = TPS_JSON_COUNTED;
		}
	} else if (f->packing && f->nvals) {
		double *fit = NULL;

		/* Doubling left up to half the buffer spare. */
		if (f->nvals < f->vals_cap) {
			fit = cJSON_malloc(f->nvals * sizeof *fit);
		}
		if (fit) {
			memcpy(fit, f->vals, f->nvals * sizeof *fit);
			cJSON_free(f->vals);
			f->vals = fit;
		}
		f->node->valuestring = (char *)f->vals;
		f->node->valueint = (int)f->nvals;
		f->vals = NULL;
	}
	sc->pos++;
	return st;
}

enum scan_state {
	ST_VALUE,      /* a value starts here */
	ST_FIRST_KEY,  /* after '{' */
	ST_KEY,	       /* after ',' in an object */
	ST_AFTER_VALUE /* a value just ended */
};

/* Reads `{"key"` up to and including the ':' after it. */
static enum tps_status scan_member_key(struct scanner *sc, bool first)
{
	struct frame *f = &sc->frames[sc->depth - 1];
	enum tps_status st;
	size_t off = sc->keys_len, len = 0;
	char shown[128];
	bool dup;

	if (sc->pos >= sc->len || sc->s[sc->pos] != '"') {
		return unexpected(sc, first ? "a string key or '}'"
					    : "a string key");
	}
	st = scan_string(sc, &len);
	if (st != TPS_OK) {
		return st;
	}
	/* From here on the pointer names this member. */
	f->in_child = true;
	f->key_off = off;
	st = key_add(sc, off, len, &dup);
	if (st != TPS_OK) {
		return st;
	}
	if (dup) {
		return scan_fail(sc, "duplicate key \"%s\"",
				 tps_json_escape_for_message(
					 sc->keys + off, shown, sizeof shown));
	}
	skip_ws(sc);
	if (sc->pos >= sc->len || sc->s[sc->pos] != ':') {
		return unexpected(sc, "':' after the key");
	}
	sc->pos++;
	return TPS_OK;
}

static enum tps_status scan_value_start(struct scanner *sc,
					enum scan_state *next)
{
	enum tps_status st;
	unsigned char c;

	skip_ws(sc);
	if (sc->pos >= sc->len) {
		return eof_error(sc);
	}
	c = sc->s[sc->pos];
	*next = ST_AFTER_VALUE;
	if (c == '[' || c == '{') {
		st = open_container(sc, c == '[' ? FRAME_ARRAY : FRAME_OBJECT);
		if (st != TPS_OK) {
			return st;
		}
		skip_ws(sc);
		if (sc->pos < sc->len &&
		    sc->s[sc->pos] == (c == '[' ? ']' : '}')) {
			return close_container(sc);
		} else if (c == '[') {
			sc->frames[sc->depth - 1].in_child = true;
			*next = ST_VALUE;
		} else {
			*next = ST_FIRST_KEY;
		}
		return TPS_OK;
	}
	if (c == '"') {
		return scan_string_value(sc);
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		return scan_number(sc);
	}
	return scan_literal(sc);
}

/* After a value: ',' or the end of the container (or of the input). */
static enum tps_status scan_after_value(struct scanner *sc,
					enum scan_state *next, bool *done)
{
	struct frame *f;
	unsigned char c;

	skip_ws(sc);
	if (sc->depth == 0) {
		if (sc->pos < sc->len) {
			if (check_bad_byte(sc, sc->pos,
					   " after the JSON value") != TPS_OK) {
				return TPS_ERR_INPUT;
			}
			return syntax_error(sc, sc->pos,
					    "trailing content after the JSON "
					    "value");
		}
		*done = true;
		return TPS_OK;
	}
	f = &sc->frames[sc->depth - 1];
	f->in_child = false;
	if (sc->pos >= sc->len) {
		return eof_error(sc);
	}
	c = sc->s[sc->pos];
	if (c == ',') {
		sc->pos++;
		if (f->kind == FRAME_ARRAY) {
			f->index++;
			f->in_child = true;
			*next = ST_VALUE;
		} else {
			*next = ST_KEY;
		}
		return TPS_OK;
	}
	if (c == (f->kind == FRAME_ARRAY ? ']' : '}')) {
		*next = ST_AFTER_VALUE;
		return close_container(sc);
	}
	return unexpected(sc,
			  f->kind == FRAME_ARRAY ? "',' or ']'" : "',' or '}'");
}

static enum tps_status scan_document(struct scanner *sc)
{
	enum scan_state state = ST_VALUE;
	enum tps_status st = TPS_OK;
	bool done = false;

	skip_ws(sc);
	if (sc->pos >= sc->len) {
		return scan_fail(sc, "empty input (expected a JSON value)");
	}
	while (!done && st == TPS_OK) {
		/* Between tokens: nothing before pos is read again, but for
		 * an error's line and column (every error from here on is
		 * at pos or after it). */
		if (sc->consumed && sc->pos >= sc->next_consumed) {
			sc->consumed(sc->consumed_ctx,
				     (const char *)sc->s + sc->pos);
			sc->next_consumed = sc->pos + TPS_JSON_CONSUMED_STEP;
		}
		switch (state) {
		case ST_VALUE: st = scan_value_start(sc, &state); break;
		case ST_FIRST_KEY:
		case ST_KEY:
			skip_ws(sc);
			st = scan_member_key(sc, state == ST_FIRST_KEY);
			state = ST_VALUE;
			break;
		case ST_AFTER_VALUE:
			st = scan_after_value(sc, &state, &done);
			break;
		}
	}
	return st;
}

/* Frees the scanner's own memory; the tree at sc->root is the caller's. */
static void scanner_free(struct scanner *sc)
{
	while (sc->depth) {
		struct frame *f = &sc->frames[--sc->depth];
		if (f->kind == FRAME_OBJECT) {
			free(f->slots);
		}
		cJSON_free(f->vals);
	}
	free(sc->keys);
	free(sc->recs);
}

/* What parse() is told besides the text: the pack key (NULL: nothing is
 * packed), counting (tps_json_parse_counted), an arena (never with a pack
 * key) and whom to tell of the text consumed (NULL: nobody). */
struct parse_opts {
	const char *pack_key;
	bool counting;
	struct tps_json_arena *arena;
	void (*consumed)(void *ctx, const char *upto);
	void *consumed_ctx;
};

static enum tps_status parse(const char *name, const char *text, size_t len,
			     const struct parse_opts *o, cJSON **out,
			     struct tps_error *err)
{
	const char *pack_key = o->pack_key;
	struct tps_json_arena *arena = o->arena;
	struct scanner sc;
	char shown[256];
	enum tps_status st;
	locale_t c_numeric, saved;

	assert(name && out && (text || len == 0) && !(pack_key && arena));
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
		text += 3;
		len -= 3;
	}
	memset(&sc, 0, sizeof sc);
	sc.name = tps_json_escape_for_message(name, shown, sizeof shown);
	sc.raw_name = name;
	sc.s = (const unsigned char *)text;
	sc.len = len;
	sc.pack_key = pack_key;
	sc.counting = o->counting;
	sc.err = err;
	sc.arena = arena;
	sc.consumed = o->consumed;
	sc.consumed_ctx = o->consumed_ctx;
	sc.next_consumed = TPS_JSON_CONSUMED_STEP;

	/* strtod takes its decimal point from LC_NUMERIC; JSON's is '.'
	 * whatever locale the program runs in. uselocale is per thread. */
	c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	if (c_numeric == (locale_t)0) {
		st = nomem_error(&sc);
		goto out;
	}
	saved = uselocale(c_numeric);
	st = scan_document(&sc);
	uselocale(saved);
	freelocale(c_numeric);
	if (st != TPS_OK) {
		goto out;
	}
	*out = sc.root;
	sc.root = NULL;
out:
	if (!arena) {
		cJSON_Delete(sc.root);
	}
	scanner_free(&sc);
	return st;
}

enum tps_status tps_json_parse_strict(const char *name, const char *text,
				      size_t len, cJSON **out,
				      struct tps_error *err)
{
	const struct parse_opts o = {0};

	return parse(name, text, len, &o, out, err);
}

enum tps_status tps_json_parse_strict_packed(const char *name, const char *text,
					     size_t len, const char *pack_key,
					     cJSON **out, struct tps_error *err)
{
	const struct parse_opts o = {.pack_key = pack_key};

	return parse(name, text, len, &o, out, err);
}

enum tps_status
tps_json_parse_releasing(const char *name, const char *text, size_t len,
			 const char *pack_key,
			 void (*consumed)(void *ctx, const char *upto),
			 void *ctx, cJSON **out, struct tps_error *err)
{
	const struct parse_opts o = {.pack_key = pack_key,
				     .consumed = consumed,
				     .consumed_ctx = ctx};

	return parse(name, text, len, &o, out, err);
}

enum tps_status tps_json_parse_counted(const char *name, const char *text,
				       size_t len, const char *key, cJSON **out,
				       struct tps_error *err)
{
	const struct parse_opts o = {.pack_key = key, .counting = true};

	return parse(name, text, len, &o, out, err);
}

enum tps_status tps_json_parse_arena(const char *name, const char *text,
				     size_t len, struct tps_json_arena **arena,
				     const cJSON **out, struct tps_error *err)
{
	struct tps_json_arena *a = calloc(1, sizeof *a);
	struct parse_opts o = {0};
	cJSON *root = NULL;
	enum tps_status st;

	assert(arena && out);
	if (!a) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	o.arena = a;
	st = parse(name, text, len, &o, &root, err);
	if (st != TPS_OK) {
		tps_json_arena_free(a);
		return st;
	}
	*arena = a;
	*out = root;
	return TPS_OK;
}
