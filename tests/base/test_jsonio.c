/* Tests for the strict JSON reader (src/jsonio_*.c). */
#include "jsonio.h"
#include "jsonio_internal.h"

#include <check.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/* A byte string literal and its length, NUL bytes included. */
#define IN(s) s, sizeof(s) - 1

/* Parses from an exact-size heap copy, so ASan catches any over-read. */
static enum tps_status parse_copy(const char *in, size_t len, cJSON **out,
				  struct tps_error *err)
{
	char *copy = malloc(len ? len : 1);
	enum tps_status st;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, in, len);
	st = tps_json_parse_strict("t.json", copy, len, out, err);
	free(copy);
	return st;
}

/* Checks status and message substring; the tree must stay untouched. */
static void expect_error(const char *in, size_t len, enum tps_status want,
			 const char *msg)
{
	struct tps_error err = {0};
	cJSON *tree = NULL;
	enum tps_status st = parse_copy(in, len, &tree, &err);

	ck_assert_msg(st == want, "status %d, want %d (message: %s)", (int)st,
		      (int)want, err.message);
	ck_assert_ptr_null(tree);
	ck_assert_msg(strstr(err.message, msg) != NULL,
		      "message \"%s\" lacks \"%s\"", err.message, msg);
	cJSON_Delete(tree);
}

static cJSON *expect_ok(const char *in, size_t len)
{
	struct tps_error err = {0};
	cJSON *tree = NULL;
	enum tps_status st = parse_copy(in, len, &tree, &err);

	ck_assert_msg(st == TPS_OK, "rejected %.*s: %s", (int)len, in,
		      err.message);
	ck_assert_ptr_nonnull(tree);
	return tree;
}

/* ------------------------------------------------------------------------ */
/* Bad input, table-driven                                                  */
/* ------------------------------------------------------------------------ */

struct bad_case {
	const char *in;
	size_t len;
	enum tps_status status;
	const char *msg;
};

static const struct bad_case bad_cases[] = {
	/* Syntax. */
	{IN("{\"a\":1 \"b\":2}"), TPS_ERR_INPUT,
	 "t.json: (root): invalid JSON at line 1, column 8: "
	 "expected ',' or '}'"},
	{IN("[1 2]"), TPS_ERR_INPUT,
	 "t.json: (root): invalid JSON at line 1, column 4: "
	 "expected ',' or ']'"},
	{IN("{\"a\":[1,{\"b\":[1 2]}]}"), TPS_ERR_INPUT,
	 "t.json: /a/1/b: invalid JSON at line 1, column 17: "
	 "expected ',' or ']', got '2'"},
	{IN("[1,]"), TPS_ERR_INPUT,
	 "t.json: /1: invalid JSON at line 1, column 4: "
	 "expected a JSON value, got ']'"},
	{IN("{\"a\":1,}"), TPS_ERR_INPUT,
	 "t.json: (root): invalid JSON at line 1, column 8: "
	 "expected a string key, got '}'"},
	{IN("{'a':1}"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 2: "
	 "expected a string key or '}', got '''"},
	{IN("{\"a\" 1}"), TPS_ERR_INPUT,
	 "t.json: /a: invalid JSON at line 1, column 6: "
	 "expected ':' after the key, got '1'"},
	{IN("True"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 1: "
	 "expected a JSON value, got 'T'"},
	{IN("[trux]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 2: invalid literal"},
	{IN("[1,\x01]"), TPS_ERR_INPUT,
	 "/1: invalid JSON at line 1, column 4: "
	 "expected a JSON value, got control character U+0001"},
	{IN("{\n  \"a\": [\n    1,\n    x\n  ]\n}"), TPS_ERR_INPUT,
	 "t.json: /a/1: invalid JSON at line 4, column 5: "
	 "expected a JSON value, got 'x'"},
	/* A second BOM is content (U+FEFF), not skipped. */
	{IN("\xEF\xBB\xBF\xEF\xBB\xBF{}"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 1: "
	 "expected a JSON value, got U+FEFF"},

	/* Truncated input. */
	{IN("{\"a\":[1,{\"b\":tru"), TPS_ERR_INPUT,
	 "t.json: /a/1/b: unexpected end of input at line 1, column 17"},
	{IN("{\"a\":"), TPS_ERR_INPUT,
	 "t.json: /a: unexpected end of input at line 1, column 6"},
	{IN("[1,"), TPS_ERR_INPUT,
	 "t.json: /1: unexpected end of input at line 1, column 4"},
	{IN("{"), TPS_ERR_INPUT,
	 "t.json: (root): unexpected end of input at line 1, column 2"},
	{IN("{\"a\":{\"b\":\"abc"), TPS_ERR_INPUT,
	 "t.json: /a/b: unexpected end of input"},
	{IN("[\"\\u12"), TPS_ERR_INPUT, "/0: unexpected end of input"},
	{IN("1."), TPS_ERR_INPUT, "(root): unexpected end of input"},
	{IN("[1\n"), TPS_ERR_INPUT,
	 "(root): unexpected end of input at line 2, column 1"},

	/* Empty input. */
	{IN(""), TPS_ERR_INPUT, "t.json: (root): empty input"},
	{IN(" \t\r\n "), TPS_ERR_INPUT, "t.json: (root): empty input"},
	{IN("\xEF\xBB\xBF"), TPS_ERR_INPUT, "t.json: (root): empty input"},

	/* Trailing content. */
	{IN("{\"a\":1}x"), TPS_ERR_INPUT,
	 "t.json: (root): invalid JSON at line 1, column 8: "
	 "trailing content after the JSON value"},
	{IN("{} {}"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 4: trailing content"},
	{IN("1 2"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, "
	 "column 3: trailing content"},

	/* NUL bytes. */
	{IN("[1]\0"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 4: "
	 "NUL byte after the JSON value"},
	{IN("\0"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, "
	 "column 1: NUL byte"},
	{IN("{\"a\":[1,{\"b\":\"x\0y\"}]}"), TPS_ERR_INPUT,
	 "t.json: /a/1/b: invalid JSON at line 1, column 16: "
	 "NUL byte in string"},
	{IN("{\"a\0\":1}"), TPS_ERR_INPUT,
	 "t.json: (root): invalid JSON at line 1, column 4: "
	 "NUL byte in string"},
	{IN("[1,\0]"), TPS_ERR_INPUT,
	 "/1: invalid JSON at line 1, "
	 "column 4: NUL byte"},
	{IN("[\"a\\u0000b\"]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 4: "
	 "\\u0000 (NUL) is not allowed"},

	/* Invalid UTF-8. */
	{IN("{\"a\":[1,{\"b\":\"\xC0\xAF\"}]}"), TPS_ERR_INPUT,
	 "t.json: /a/1/b: invalid JSON at line 1, column 15: "
	 "invalid UTF-8 (overlong encoding)"},
	{IN("\"\xE0\x80\xAF\""), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 2: "
	 "invalid UTF-8 (overlong encoding)"},
	{IN("\"\xF0\x80\x80\xAF\""), TPS_ERR_INPUT,
	 "invalid UTF-8 (overlong encoding)"},
	{IN("[\"\xED\xA0\x80\"]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 3: "
	 "invalid UTF-8 (UTF-16 surrogate encoded in UTF-8)"},
	{IN("[\"\xED\xBF\xBF\"]"), TPS_ERR_INPUT,
	 "invalid UTF-8 (UTF-16 surrogate"},
	{IN("[\"\xF4\x90\x80\x80\"]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 3: "
	 "invalid UTF-8 (code point above U+10FFFF)"},
	{IN("[\"\xF5\x80\x80\x80\"]"), TPS_ERR_INPUT,
	 "invalid UTF-8 (code point above U+10FFFF)"},
	{IN("[\"\x80\"]"), TPS_ERR_INPUT,
	 "invalid UTF-8 (unexpected continuation byte)"},
	{IN("[\"\xC3\"]"), TPS_ERR_INPUT, "invalid UTF-8 (truncated sequence)"},
	{IN("[\"\xE4\xB8\"]"), TPS_ERR_INPUT,
	 "invalid UTF-8 (truncated sequence)"},
	{IN("[\"\xFF\"]"), TPS_ERR_INPUT, "invalid UTF-8 (byte that never"},
	{IN("{\"x\":{\"\xC0\x80\":1}}"), TPS_ERR_INPUT,
	 "t.json: /x: invalid JSON at line 1, column 8: "
	 "invalid UTF-8 (overlong encoding)"},
	{IN("{\"a\":[1, \xFF]}"), TPS_ERR_INPUT,
	 "t.json: /a/1: invalid JSON at line 1, column 10: invalid UTF-8"},
	{IN("{}\xC3"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 3: "
	 "invalid UTF-8 (truncated sequence)"},

	/* Raw control characters in strings. */
	{IN("{\"a\":{\"b\":\"x\ty\"}}"), TPS_ERR_INPUT,
	 "t.json: /a/b: invalid JSON at line 1, column 13: "
	 "raw control character U+0009 in string"},
	{IN("{\"a\nb\":1}"), TPS_ERR_INPUT,
	 "t.json: (root): invalid JSON at line 1, column 4: "
	 "raw control character U+000A in string"},
	{IN("[\"\x1f\"]"), TPS_ERR_INPUT, "raw control character U+001F"},

	/* Invalid escapes. */
	{IN("{\"a\":[\"\\x\"]}"), TPS_ERR_INPUT,
	 "t.json: /a/0: invalid JSON at line 1, column 8: "
	 "invalid escape '\\x'"},
	{IN("[\"\\'\"]"), TPS_ERR_INPUT, "invalid escape '\\''"},
	{IN("[\"\\\x01\"]"), TPS_ERR_INPUT,
	 "invalid escape (backslash followed by byte 0x01)"},
	{IN("[\"\\u12G4\"]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 3: "
	 "invalid \\u escape (expected 4 hex digits)"},
	{IN("{\"\\q\":1}"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 3: invalid escape '\\q'"},

	/* Surrogate escapes. */
	{IN("{\"a\":{\"b\":\"\\uD800\"}}"), TPS_ERR_INPUT,
	 "t.json: /a/b: invalid JSON at line 1, column 12: "
	 "lone surrogate \\uD800"},
	{IN("[\"\\uD83Dx\"]"), TPS_ERR_INPUT, "lone surrogate \\uD83D"},
	{IN("[\"\\uDC00\"]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 3: lone surrogate \\uDC00"},
	{IN("[\"\\uDE00\\uD83D\"]"), TPS_ERR_INPUT, "lone surrogate \\uDE00"},
	{IN("[\"\\uD800\\u0041\"]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 3: mismatched surrogate: "
	 "\\uD800 followed by \\u0041"},
	{IN("[\"\\uD800\\uD800\"]"), TPS_ERR_INPUT, "mismatched surrogate"},
	{IN("[\"\\uD800\\n\"]"), TPS_ERR_INPUT, "lone surrogate \\uD800"},

	/* Numbers. */
	{IN("{\"a\":[0,{\"b\":01}]}"), TPS_ERR_INPUT,
	 "t.json: /a/1/b: invalid JSON at line 1, column 14: "
	 "leading zero in number"},
	{IN("-01"), TPS_ERR_INPUT,
	 "(root): invalid JSON at line 1, column 1: leading zero in number"},
	{IN("[00]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 2: "
	 "leading zero"},
	{IN("[-00.5]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, "
	 "column 2: leading zero"},
	{IN("[1.]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 4: "
	 "expected a digit after '.' in number, got ']'"},
	{IN("[1.e5]"), TPS_ERR_INPUT, "expected a digit after '.'"},
	{IN("{\"a\":[.5]}"), TPS_ERR_INPUT,
	 "t.json: /a/0: invalid JSON at line 1, column 7: "
	 "expected a JSON value, got '.'"},
	{IN("[+1]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 2: "
	 "expected a JSON value, got '+'"},
	{IN("[1e]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 4: "
	 "expected a digit in the exponent, got ']'"},
	{IN("[1E+]"), TPS_ERR_INPUT, "expected a digit in the exponent"},
	{IN("[-]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 3: "
	 "expected a digit after '-', got ']'"},
	{IN("[-a]"), TPS_ERR_INPUT, "expected a digit after '-'"},
	{IN("[0x10]"), TPS_ERR_INPUT, "expected ',' or ']', got 'x'"},
	{IN("[1.5.2]"), TPS_ERR_INPUT, "expected ',' or ']', got '.'"},
	{IN("[\xC3\xA9, 01]"), TPS_ERR_INPUT,
	 /* Columns count characters, not bytes. */
	 "/0: invalid JSON at line 1, column 2: expected a JSON value, "
	 "got U+00E9"},
	{IN("[\"\xC3\xA9\", 01]"), TPS_ERR_INPUT,
	 "/1: invalid JSON at line 1, column 7: leading zero in number"},
	{IN("{\n  \"a\": 01\n}"), TPS_ERR_INPUT,
	 "t.json: /a: invalid JSON at line 2, column 8: "
	 "leading zero in number"},

	/* null. */
	{IN("{\"a\":[1,{\"b\":null}]}"), TPS_ERR_INPUT,
	 "t.json: /a/1/b: null is not allowed (line 1, column 14)"},
	{IN("null"), TPS_ERR_INPUT, "t.json: (root): null is not allowed"},
	{IN("[null]"), TPS_ERR_INPUT, "t.json: /0: null is not allowed"},
	{IN("[nul"), TPS_ERR_INPUT, "/0: unexpected end of input"},
	{IN("[nil]"), TPS_ERR_INPUT,
	 "/0: invalid JSON at line 1, column 2: "
	 "invalid literal"},

	/* Duplicate keys (compared after decoding escapes). */
	{IN("{\"a\":1,\"a\":2}"), TPS_ERR_INPUT,
	 "t.json: /a: duplicate key \"a\""},
	{IN("{\"a\":1,\"\\u0061\":2}"), TPS_ERR_INPUT,
	 "t.json: /a: duplicate key \"a\""},
	{IN("{\"x\":[{\"k\":1,\"m\":2,\"k\":3}]}"), TPS_ERR_INPUT,
	 "t.json: /x/0/k: duplicate key \"k\""},
	{IN("{\"a/b\":1,\"a\\/b\":2}"), TPS_ERR_INPUT,
	 "t.json: /a~1b: duplicate key \"a/b\""},
	{IN("{\"m~n\":{},\"m~n\":{}}"), TPS_ERR_INPUT,
	 "t.json: /m~0n: duplicate key \"m~n\""},
	{IN("{\"\":1,\"\":2}"), TPS_ERR_INPUT, "t.json: /: duplicate key \"\""},
	{IN("{\"\xC3\xA9\":1,\"\\u00e9\":2}"), TPS_ERR_INPUT,
	 "t.json: /\xC3\xA9: duplicate key \"\xC3\xA9\""},
	{IN("{\"\\ud83d\\ude00\":1,\"\xF0\x9F\x98\x80\":2}"), TPS_ERR_INPUT,
	 "duplicate key \"\xF0\x9F\x98\x80\""},
	/* Key text echoed in messages is escaped, pointer included. */
	{IN("{\"a\\nb\":1,\"a\\nb\":2}"), TPS_ERR_INPUT,
	 "t.json: /a\\nb: duplicate key \"a\\nb\""},
	{IN("{\"q\\\"\\u001b\":1,\"q\\\"\\u001b\":2}"), TPS_ERR_INPUT,
	 "duplicate key \"q\\\"\\u001b\""},
	/* The duplicate is found before later errors in the object. */
	{IN("{\"a\":1,\"a\":01}"), TPS_ERR_INPUT, "/a: duplicate key"},
	/* Pointer keys escaped per RFC 6901 for other errors too. */
	{IN("{\"a/b\":[1,{\"c\":null}]}"), TPS_ERR_INPUT,
	 "t.json: /a~1b/1/c: null is not allowed"},
	{IN("{\"m~n\":01}"), TPS_ERR_INPUT,
	 "t.json: /m~0n: invalid JSON at line 1, column 8: leading zero"},
};

START_TEST(parse_strict_rejects_bad_input)
{
	const struct bad_case *c = &bad_cases[_i];

	expect_error(c->in, c->len, c->status, c->msg);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Good input                                                               */
/* ------------------------------------------------------------------------ */

struct good_case {
	const char *in;
	size_t len;
};

static const struct good_case good_cases[] = {
	{IN("{}")},
	{IN("[]")},
	{IN("0")},
	{IN("-0")},
	{IN("2.0")},
	{IN("1e5")},
	{IN("1E+5")},
	{IN("-1.5e-3")},
	{IN("0.0e0")},
	{IN("true")},
	{IN("false")},
	{IN("\"\"")},
	{IN(" \t\r\n[1]\n")},
	{IN("\xEF\xBB\xBF{\"a\":1}")},
	{IN("\xEF\xBB\xBF 7 ")},
	{IN("{\"a\":[1,{\"b\":[true,false,\"x\",[],{}]}],\"c\":{}}")},
	{IN("[\"\\u00e9\\u4E2D\"]")},
	{IN("[\"\\ud83d\\ude00\"]")},
	{IN("[\"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF\"]")},
	{IN("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]")},
	{IN("{\"\":1,\"a\":2}")},
	{IN("{\"a/b\":1,\"m~n\":2,\"a~1b\":3}")},
	/* Same key in different objects, and inner keys reused outside. */
	{IN("{\"a\":{\"a\":1},\"b\":{\"a\":2}}")},
	{IN("[{\"a\":1},{\"a\":2}]")},
	{IN("{\"x\":{\"k\":1},\"k\":2}")},
	{IN("{\"a\":1,\"\\u0062\":2,\"A\":3}")},
	/* Keys equal only as byte prefixes. */
	{IN("{\"ab\":1,\"a\":2,\"abc\":3}")},
};

START_TEST(parse_strict_accepts_good_input)
{
	const struct good_case *c = &good_cases[_i];
	cJSON *tree = expect_ok(c->in, c->len);

	cJSON_Delete(tree);
}
END_TEST

START_TEST(parse_strict_builds_expected_values)
{
	static const char in[] =
		"\xEF\xBB\xBF{\"two\":2.0,\"negzero\":-0,\"big\":1e5,"
		"\"e\":\"\\u00e9\",\"pair\":\"\\ud83d\\ude00\","
		"\"raw\":\"\xE4\xB8\xAD\",\"a/b\":[true,false],"
		"\"m~n\":{\"esc\":\"\\\"\\\\\\/\\n\"}}";
	cJSON *tree = expect_ok(in, sizeof in - 1);
	cJSON *item;

	item = cJSON_GetObjectItemCaseSensitive(tree, "two");
	ck_assert(cJSON_IsNumber(item));
	ck_assert(item->valuedouble == 2.0);
	item = cJSON_GetObjectItemCaseSensitive(tree, "negzero");
	ck_assert(cJSON_IsNumber(item));
	ck_assert(item->valuedouble == 0.0 && signbit(item->valuedouble));
	item = cJSON_GetObjectItemCaseSensitive(tree, "big");
	ck_assert(item->valuedouble == 100000.0);
	item = cJSON_GetObjectItemCaseSensitive(tree, "e");
	ck_assert_str_eq(cJSON_GetStringValue(item), "\xC3\xA9");
	item = cJSON_GetObjectItemCaseSensitive(tree, "pair");
	ck_assert_str_eq(cJSON_GetStringValue(item), "\xF0\x9F\x98\x80");
	item = cJSON_GetObjectItemCaseSensitive(tree, "raw");
	ck_assert_str_eq(cJSON_GetStringValue(item), "\xE4\xB8\xAD");
	item = cJSON_GetObjectItemCaseSensitive(tree, "a/b");
	ck_assert_int_eq(cJSON_GetArraySize(item), 2);
	ck_assert(cJSON_IsTrue(cJSON_GetArrayItem(item, 0)));
	ck_assert(cJSON_IsFalse(cJSON_GetArrayItem(item, 1)));
	item = cJSON_GetObjectItemCaseSensitive(tree, "m~n");
	item = cJSON_GetObjectItemCaseSensitive(item, "esc");
	ck_assert_str_eq(cJSON_GetStringValue(item), "\"\\/\n");
	cJSON_Delete(tree);
}
END_TEST

START_TEST(parse_strict_leaves_output_untouched_on_error)
{
	struct tps_error err = {0};
	cJSON sentinel;
	cJSON *tree = &sentinel;

	ck_assert_int_eq(tps_json_parse_strict("x", "[01]", 4, &tree, &err),
			 TPS_ERR_INPUT);
	ck_assert_ptr_eq(tree, &sentinel);
	ck_assert_int_eq(err.status, TPS_ERR_INPUT);
}
END_TEST

START_TEST(parse_strict_reads_only_len_bytes)
{
	struct tps_error err = {0};
	cJSON *tree = NULL;

	/* The text after len is not part of the document. */
	ck_assert_int_eq(
		tps_json_parse_strict("x", "[1] garbage", 3, &tree, &err),
		TPS_OK);
	ck_assert_int_eq(cJSON_GetArraySize(tree), 1);
	cJSON_Delete(tree);
}
END_TEST

START_TEST(parse_strict_escapes_name_in_messages)
{
	struct tps_error err = {0};
	cJSON *tree = NULL;

	ck_assert_int_eq(
		tps_json_parse_strict("a\nb.json", "null", 4, &tree, &err),
		TPS_ERR_INPUT);
	ck_assert_str_eq(err.message, "a\\nb.json: (root): null is not allowed "
				      "(line 1, column 1)");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Nesting depth                                                            */
/* ------------------------------------------------------------------------ */

/* n '[' then n ']' (or only the opening half). */
static char *nested_arrays(size_t n, bool close, size_t *len)
{
	char *s = malloc(2 * n + 1);

	ck_assert_ptr_nonnull(s);
	memset(s, '[', n);
	*len = n;
	if (close) {
		memset(s + n, ']', n);
		*len = 2 * n;
	}
	s[*len] = '\0';
	return s;
}

START_TEST(parse_strict_accepts_max_depth)
{
	size_t len;
	char *s = nested_arrays(TPS_JSON_MAX_DEPTH, true, &len);
	cJSON *tree = expect_ok(s, len);

	cJSON_Delete(tree);
	free(s);
}
END_TEST

START_TEST(parse_strict_rejects_depth_over_max)
{
	char want[256];
	size_t len;
	char *s = nested_arrays(TPS_JSON_MAX_DEPTH + 1, true, &len);

	snprintf(want, sizeof want,
		 "nesting deeper than %d levels (line 1, column %d)",
		 TPS_JSON_MAX_DEPTH, TPS_JSON_MAX_DEPTH + 1);
	expect_error(s, len, TPS_ERR_INPUT, want);
	free(s);
}
END_TEST

START_TEST(parse_strict_rejects_hostile_depth_without_overflow)
{
	size_t len;
	char *s = nested_arrays(1000000, false, &len);

	expect_error(s, len, TPS_ERR_INPUT, "t.json: /0/0/0/0/0/0/0/0/0/0/0");
	expect_error(s, len, TPS_ERR_INPUT, "nesting deeper than 64 levels");
	free(s);
}
END_TEST

START_TEST(parse_strict_rejects_deep_objects_at_pointer)
{
	static const char in[] = "{\"a\":[{\"b\":{\"c\":[[{}]]}}]}";
	cJSON *tree = expect_ok(in, sizeof in - 1);
	char want[512];
	size_t n_want;
	char *deep;
	size_t n = 0;

	cJSON_Delete(tree);
	/* {"k":{"k":...}} 65 levels deep. */
	deep = malloc(6 * (TPS_JSON_MAX_DEPTH + 1) + 1);
	ck_assert_ptr_nonnull(deep);
	for (int i = 0; i < TPS_JSON_MAX_DEPTH + 1; i++) {
		memcpy(deep + n, "{\"k\":", 5);
		n += 5;
	}
	deep[n++] = '1';
	for (int i = 0; i < TPS_JSON_MAX_DEPTH + 1; i++) {
		deep[n++] = '}';
	}
	/* The pointer names the 64 members already open. */
	n_want = (size_t)snprintf(want, sizeof want, "t.json: ");
	for (int i = 0; i < TPS_JSON_MAX_DEPTH; i++) {
		n_want += (size_t)snprintf(want + n_want, sizeof want - n_want,
					   "/k");
	}
	snprintf(want + n_want, sizeof want - n_want,
		 ": nesting deeper than %d levels", TPS_JSON_MAX_DEPTH);
	expect_error(deep, n, TPS_ERR_INPUT, want);
	free(deep);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Duplicate keys in big objects                                           */
/* ------------------------------------------------------------------------ */

#define BIG_KEYS 100000

/* {"k0":0,"k1":1,...} with BIG_KEYS keys, then `extra` before the '}'. */
static char *big_object(const char *extra, size_t *len)
{
	size_t cap = (size_t)BIG_KEYS * 24 + strlen(extra) + 4;
	char *s = malloc(cap);
	size_t n = 0;

	ck_assert_ptr_nonnull(s);
	s[n++] = '{';
	for (int i = 0; i < BIG_KEYS; i++) {
		n += (size_t)snprintf(s + n, cap - n, "%s\"k%d\":%d",
				      i ? "," : "", i, i);
	}
	n += (size_t)snprintf(s + n, cap - n, "%s}", extra);
	*len = n;
	return s;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

START_TEST(parse_strict_handles_big_object_fast)
{
	struct timespec t0;
	size_t len;
	char *s = big_object("", &len);
	cJSON *tree;
	double dt;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	tree = expect_ok(s, len);
	dt = seconds_since(&t0);
	printf("parse of %d keys: %.3f s\n", BIG_KEYS, dt);
	/* Quadratic duplicate checking would take minutes, not seconds. */
	ck_assert_msg(dt < 20.0, "took %.3f s", dt);
	ck_assert_int_eq(cJSON_GetArraySize(tree), BIG_KEYS);
	cJSON_Delete(tree);
	free(s);
}
END_TEST

START_TEST(parse_strict_finds_duplicate_in_big_object)
{
	size_t len;
	char *s = big_object(",\"k77777\":1", &len);

	expect_error(s, len, TPS_ERR_INPUT,
		     "t.json: /k77777: duplicate key \"k77777\"");
	free(s);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Numbers longer than cJSON's 63-character buffer                          */
/* ------------------------------------------------------------------------ */

START_TEST(parse_strict_keeps_value_of_long_numbers)
{
	char in[1024];
	char num[512];
	cJSON *tree, *item;
	size_t n;

	/* 1 followed by 70 zeros is 1e70, not the 63-digit prefix. */
	memset(num, '0', 71);
	num[0] = '1';
	num[71] = '\0';
	n = (size_t)snprintf(in, sizeof in, "{\"a\":[%s,-%s],\"b\":\"x\"}", num,
			     num);
	tree = expect_ok(in, n);
	item = cJSON_GetObjectItemCaseSensitive(tree, "a");
	ck_assert(cJSON_GetArrayItem(item, 0)->valuedouble == 1e70);
	ck_assert(cJSON_GetArrayItem(item, 1)->valuedouble == -1e70);
	item = cJSON_GetObjectItemCaseSensitive(tree, "b");
	ck_assert_str_eq(cJSON_GetStringValue(item), "x");
	cJSON_Delete(tree);

	/* At the root cJSON would silently keep the prefix. */
	tree = expect_ok(num, 71);
	ck_assert(tree->valuedouble == 1e70);
	cJSON_Delete(tree);

	/* 0.333... with 80 digits rounds like strtod of the whole text. */
	memcpy(num, "0.", 2);
	memset(num + 2, '3', 80);
	num[82] = '\0';
	tree = expect_ok(num, 82);
	ck_assert(tree->valuedouble == strtod(num, NULL));
	ck_assert(tree->valuedouble == 1.0 / 3.0);
	cJSON_Delete(tree);

	/* Overflowing long numbers give the infinity strtod gives. */
	memset(num, '9', 400);
	num[400] = '\0';
	tree = expect_ok(num, 400);
	ck_assert(isinf(tree->valuedouble) && tree->valuedouble > 0);
	cJSON_Delete(tree);

	/* Long numbers are still checked: a leading zero is an error. */
	memset(num, '0', 70);
	num[70] = '\0';
	n = (size_t)snprintf(in, sizeof in, "[1, %s]", num);
	expect_error(in, n, TPS_ERR_INPUT,
		     "/1: invalid JSON at line 1, column 5: leading zero");
}
END_TEST

START_TEST(parse_strict_reads_numbers_longer_than_63_characters)
{
	char num[512], in[1100];
	cJSON *tree, *item;
	size_t n;

	/* 0.000...0001 with 100 digits after the point is 1e-100. */
	memcpy(num, "0.", 2);
	memset(num + 2, '0', 99);
	memcpy(num + 101, "1", 2);
	tree = expect_ok(num, strlen(num));
	ck_assert(tree->valuedouble == 1e-100);
	ck_assert_int_eq(tree->valueint, 0);
	cJSON_Delete(tree);

	/* A finite 300-digit integer: valueint saturates as in cJSON. */
	for (int i = 0; i < 300; i++) {
		num[i] = (char)('1' + i % 9);
	}
	num[300] = '\0';
	n = (size_t)snprintf(in, sizeof in, "{\"a\":[%s,7,-%s],\"b\":1}", num,
			     num);
	tree = expect_ok(in, n);
	item = cJSON_GetObjectItemCaseSensitive(tree, "a");
	ck_assert_int_eq(cJSON_GetArraySize(item), 3);
	ck_assert(item->child->valuedouble == strtod(num, NULL));
	ck_assert(isfinite(item->child->valuedouble));
	ck_assert_int_eq(item->child->valueint, INT_MAX);
	ck_assert(item->child->next->valuedouble == 7.0);
	ck_assert(item->child->next->next->valuedouble == -strtod(num, NULL));
	ck_assert_int_eq(item->child->next->next->valueint, INT_MIN);
	ck_assert(cJSON_GetObjectItemCaseSensitive(tree, "b")->valuedouble ==
		  1.0);
	cJSON_Delete(tree);

	/* 400 digits overflow to +-inf, as strtod (and before it cJSON) gave;
	 * readers that need finite values say so at the pointer. */
	memset(num, '1', 400);
	num[400] = '\0';
	n = (size_t)snprintf(in, sizeof in, "[%s,-%s]", num, num);
	tree = expect_ok(in, n);
	ck_assert(isinf(tree->child->valuedouble) &&
		  tree->child->valuedouble > 0);
	ck_assert_int_eq(tree->child->valueint, INT_MAX);
	ck_assert(isinf(tree->child->next->valuedouble) &&
		  tree->child->next->valuedouble < 0);
	ck_assert_int_eq(tree->child->next->valueint, INT_MIN);
	cJSON_Delete(tree);

	/* Below the smallest subnormal: 0, not the 63-character prefix. */
	memcpy(num, "1.", 2);
	memset(num + 2, '0', 200);
	memcpy(num + 202, "e-400", 6);
	tree = expect_ok(num, strlen(num));
	ck_assert(tree->valuedouble == 0.0 && !signbit(tree->valuedouble));
	cJSON_Delete(tree);

	/* Digits past the 63rd decide the rounding. */
	tree = expect_ok(IN("1.00000000000000011102230246251565404236316680908"
			    "203125000000000000000001"));
	ck_assert(tree->valuedouble == 0x1.0000000000001p+0);
	cJSON_Delete(tree);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Exact doubles                                                            */
/* ------------------------------------------------------------------------ */

struct decimal_case {
	const char *in;
	double want; /* compared bit for bit */
};

static const struct decimal_case decimal_cases[] = {
	{"0.1", 0x1.999999999999ap-4},
	{"0.30000000000000004", 0x1.3333333333334p-2},
	/* Ties round to even: 2^53 + 1 and 2^53 + 3. */
	{"9007199254740993", 0x1p+53},
	{"9007199254740995", 0x1.0000000000002p+53},
	/* Exactly half an ulp above 1 rounds to 1. */
	{"1.00000000000000011102230246251565404236316680908203125", 1.0},
	{"123456789012345678901234567890", 0x1.8ee90ff6c373ep+96},
	/* Subnormals: the largest, the smallest, and either side of half the
	 * smallest. */
	{"2.2250738585072011e-308", 0x0.fffffffffffffp-1022},
	{"2.2250738585072014e-308", 0x1p-1022},
	{"4.9406564584124654e-324", 0x0.0000000000001p-1022},
	{"2.4703282292062327e-324", 0.0},
	{"2.4703282292062328e-324", 0x0.0000000000001p-1022},
	{"1e-400", 0.0},
	{"-0.0", -0.0},
	/* The largest double, and past half an ulp above it. */
	{"1.7976931348623157e308", DBL_MAX},
	{"1.7976931348623158e308", DBL_MAX},
	{"1.7976931348623159e308", INFINITY},
	{"-1e400", -INFINITY},
	{"3.14159265358979323846264338327950288419716939937510582097494459230"
	 "781640628620899",
	 0x1.921fb54442d18p+1},
};

START_TEST(parse_strict_reads_tricky_decimals_exactly)
{
	const struct decimal_case *c = &decimal_cases[_i];
	cJSON *tree = expect_ok(c->in, strlen(c->in));

	ck_assert_msg(memcmp(&tree->valuedouble, &c->want, sizeof c->want) == 0,
		      "%s: got %a, want %a", c->in, tree->valuedouble, c->want);
	cJSON_Delete(tree);
}
END_TEST

/* xorshift64: the same number strings on every run. */
static uint64_t next_random(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Writes into out (64 bytes) a random decimal of a shape the fast path
 * takes or must decline: up to 45 digits, integers near 2^53 and 2^64,
 * exponents up to 47 either way. Returns its length. */
static size_t random_number(uint64_t *state, char *out)
{
	static const char *const near_2_53[] = {
		"9007199254740991",    "9007199254740992",
		"9007199254740993",    "9007199254740994",
		"9007199254740995",    "18014398509481984",
		"9999999999999999999", "10000000000000000000"};
	uint64_t r = next_random(state);
	size_t n = 0;
	int int_digits = (int)(r % 21), frac_digits = (int)((r >> 8) % 26);

	if (r & (1u << 20)) {
		out[n++] = '-';
	}
	if ((r >> 21) % 8 == 0) {
		const char *m = near_2_53[(r >> 24) % 8];

		memcpy(out + n, m, strlen(m));
		n += strlen(m);
		frac_digits = 0;
	} else if (int_digits == 0) {
		out[n++] = '0';
	} else {
		out[n++] = (char)('1' + next_random(state) % 9);
		for (int i = 1; i < int_digits; i++) {
			out[n++] = (char)('0' + next_random(state) % 10);
		}
	}
	if (frac_digits && (r >> 30) % 2) {
		out[n++] = '.';
		for (int i = 0; i < frac_digits; i++) {
			/* Zeros 6 times in 15, for runs as in 0.000123. */
			uint64_t d = next_random(state) % 15;

			out[n++] = (char)(d < 10 ? '0' + d : '0');
		}
	}
	if ((r >> 31) % 2) {
		out[n++] = (r >> 32) % 2 ? 'e' : 'E';
		if ((r >> 33) % 3 == 0) {
			out[n++] = '-';
		} else if ((r >> 33) % 3 == 1) {
			out[n++] = '+';
		}
		n += (size_t)snprintf(out + n, 64 - n, "%d",
				      (int)((r >> 40) % 48));
	}
	out[n] = '\0';
	return n;
}

#define FAST_NUMBERS 200000

/* The fast path (Clinger's) and strtod give the same double, bit for bit. */
START_TEST(parse_strict_fast_numbers_match_strtod)
{
	size_t cap = (size_t)FAST_NUMBERS * 64 + 2, n = 0;
	char *s = malloc(cap);
	char *texts = malloc((size_t)FAST_NUMBERS * 64);
	uint64_t state = 0x9E3779B97F4A7C15u;
	const cJSON *item;
	cJSON *tree;
	long i = 0, mismatches = 0;
	double max_diff = 0;

	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(texts);
	s[n++] = '[';
	for (long k = 0; k < FAST_NUMBERS; k++) {
		char *t = texts + k * 64;
		size_t len = random_number(&state, t);

		if (k) {
			s[n++] = ',';
		}
		memcpy(s + n, t, len);
		n += len;
	}
	s[n++] = ']';
	tree = expect_ok(s, n);
	cJSON_ArrayForEach(item, tree)
	{
		double want = strtod(texts + i * 64, NULL);

		if (memcmp(&item->valuedouble, &want, sizeof want) != 0) {
			if (mismatches++ < 5) {
				printf("%s: got %a, strtod %a\n",
				       texts + i * 64, item->valuedouble, want);
			}
			if (fabs(item->valuedouble - want) > max_diff) {
				max_diff = fabs(item->valuedouble - want);
			}
		}
		i++;
	}
	printf("%ld numbers against strtod: %ld differ, max difference %g\n", i,
	       mismatches, max_diff);
	ck_assert_int_eq(i, FAST_NUMBERS);
	ck_assert_int_eq(mismatches, 0);
	cJSON_Delete(tree);
	free(texts);
	free(s);
}
END_TEST

/* Decimal points in a locale that writes "0,5" do not change the values. */
START_TEST(parse_strict_reads_numbers_whatever_the_locale)
{
	static const char *const comma_locales[] = {
		"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8",
		"ru_RU.UTF-8", "de_DE",	     "fr_FR"};
	const char *used = NULL;
	char point[8];
	cJSON *tree;

	for (size_t i = 0; i < sizeof comma_locales / sizeof *comma_locales;
	     i++) {
		if (setlocale(LC_NUMERIC, comma_locales[i])) {
			used = comma_locales[i];
			break;
		}
	}
	if (!used) {
		used = "C (no locale with a decimal comma is installed)";
	}
	printf("locale for parse_strict: %s\n", used);
	snprintf(point, sizeof point, "%s", localeconv()->decimal_point);
	tree = expect_ok(IN("[0.5,-1.25e1,0.333333333333333333333333333333333"
			    "333333333333333333333333333333333]"));
	ck_assert(tree->child->valuedouble == 0.5);
	ck_assert(tree->child->next->valuedouble == -12.5);
	ck_assert(tree->child->next->next->valuedouble == 1.0 / 3.0);
	cJSON_Delete(tree);
	/* The caller's locale is back. */
	ck_assert_str_eq(localeconv()->decimal_point, point);
	setlocale(LC_NUMERIC, "C");
}
END_TEST

/* tps_json_scan_number, for numbers outside a document (--set): the
 * parser's grammar and its value, bit for bit, whatever follows. */
START_TEST(scan_number_reads_what_parse_strict_reads)
{
	static const struct {
		const char *text;
		size_t used; /* 0: not a number */
	} cases[] = {
		{"8", 1},
		{"-0", 2},
		{"0.5", 3},
		{"-12.5e-1", 8},
		{"1E+2", 4},
		{"1e400", 5},
		{"1e-30", 5}, /* past 10^22: strtod */
		{"123456789012345678901234567890", 30},
		{"0.1000000000000000055511151231257827021181583404541015625",
		 57},
		{"8,16", 1},
		{"0x10", 1},
		{"2 ", 1},
		{"08", 0},
		{"-08", 0},
		{"+8", 0},
		{" 8", 0},
		{"8.", 0},
		{".5", 0},
		{"1e", 0},
		{"1e+", 0},
		{"-", 0},
		{"inf", 0},
		{"nan", 0},
		{"", 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *t = cases[i].text;
		size_t used = 99;
		double v = 99.0;
		bool ok = tps_json_scan_number(t, strlen(t), &used, &v);
		cJSON *tree;
		if (cases[i].used == 0) {
			ck_assert_msg(!ok, "\"%s\" was read", t);
			ck_assert_uint_eq(used, 99);
			ck_assert(v == 99.0);
			continue;
		}
		ck_assert_msg(ok, "\"%s\" was refused", t);
		ck_assert_uint_eq(used, cases[i].used);
		tree = expect_ok(t, used);
		ck_assert_msg(memcmp(&v, &tree->valuedouble, sizeof v) == 0,
			      "\"%s\": %a, parse_strict %a", t, v,
			      tree->valuedouble);
		cJSON_Delete(tree);
	}
	/* It reads only len bytes. */
	{
		size_t used = 0;
		double v = 0;
		ck_assert(tps_json_scan_number("125", 2, &used, &v));
		ck_assert_uint_eq(used, 2);
		ck_assert(v == 12.0);
	}
}
END_TEST

START_TEST(scan_number_reads_numbers_whatever_the_locale)
{
	static const char *const comma_locales[] = {
		"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8",
		"ru_RU.UTF-8", "de_DE",	     "fr_FR"};
	static const char third[] = "0.33333333333333333333333333333333333";
	size_t used = 0;
	double v = 0;
	for (size_t i = 0; i < sizeof comma_locales / sizeof *comma_locales;
	     i++) {
		if (setlocale(LC_NUMERIC, comma_locales[i])) {
			break;
		}
	}
	ck_assert(tps_json_scan_number(third, strlen(third), &used, &v));
	ck_assert_uint_eq(used, strlen(third));
	ck_assert(v == 1.0 / 3.0);
	setlocale(LC_NUMERIC, "C");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The tree is the one cJSON builds                                         */
/* ------------------------------------------------------------------------ */

/* The same document, laid out as cJSON lays it out: types, valueint, the
 * bits of valuedouble, strings, keys, order, and the last child in
 * child->prev (cJSON's O(1) append relies on it); a's type may also have
 * `flags` (an arena's tree: cJSON frees none of its strings). */
static void expect_same_tree_but(const cJSON *a, const cJSON *b, int flags)
{
	for (; a && b; a = a->next, b = b->next) {
		ck_assert_int_eq(a->type & ~flags, b->type);
		ck_assert_int_eq(a->valueint, b->valueint);
		ck_assert_msg(memcmp(&a->valuedouble, &b->valuedouble,
				     sizeof a->valuedouble) == 0,
			      "valuedouble %a, cJSON's %a", a->valuedouble,
			      b->valuedouble);
		ck_assert((a->valuestring == NULL) == (b->valuestring == NULL));
		if (a->valuestring) {
			ck_assert_str_eq(a->valuestring, b->valuestring);
		}
		ck_assert((a->string == NULL) == (b->string == NULL));
		if (a->string) {
			ck_assert_str_eq(a->string, b->string);
		}
		ck_assert((a->child == NULL) == (b->child == NULL));
		if (a->child) {
			const cJSON *last = a->child;

			while (last->next) {
				last = last->next;
			}
			ck_assert_ptr_eq(a->child->prev, last);
			expect_same_tree_but(a->child, b->child, flags);
		}
	}
	ck_assert_ptr_null(a);
	ck_assert_ptr_null(b);
}

static void expect_same_tree(const cJSON *a, const cJSON *b)
{
	expect_same_tree_but(a, b, 0);
}

static void expect_tree_of_cjson(const char *in, size_t len)
{
	cJSON *tree = expect_ok(in, len);
	cJSON *theirs;

	/* cJSON does not skip a BOM. */
	if (len >= 3 && memcmp(in, "\xEF\xBB\xBF", 3) == 0) {
		in += 3;
		len -= 3;
	}
	theirs = cJSON_ParseWithLength(in, len);
	ck_assert_ptr_nonnull(theirs);
	ck_assert_ptr_null(tree->prev);
	ck_assert_ptr_null(tree->next);
	expect_same_tree(tree, theirs);
	cJSON_Delete(theirs);
	cJSON_Delete(tree);
}

/* Beside good_cases: valueint at the int limits, and true's valueint 1. */
static const struct good_case cjson_tree_cases[] = {
	{IN("[2147483647,2147483648,-2147483648,-2147483649,2147483646.5,"
	    "-2147483647.5,3e9,-3e9,1e400,-1e400,2.5,-2.5,0.99,-0.99]")},
	{IN("{\"t\":true,\"f\":false,\"s\":\"\",\"n\":[1,[2,[3,{}]],{\"a\":"
	    "[]}],\"k\":{\"a\":{\"b\":{\"c\":\"\\u00e9\\ud83d\\ude00\"}}}}")},
	{IN("[[],[[]],{},[{}],\"x\",{\"\":\"\"}]")},
};

START_TEST(parse_strict_builds_the_tree_cjson_builds)
{
	expect_tree_of_cjson(good_cases[_i].in, good_cases[_i].len);
}
END_TEST

START_TEST(parse_strict_builds_the_tree_cjson_builds_at_int_limits)
{
	expect_tree_of_cjson(cjson_tree_cases[_i].in, cjson_tree_cases[_i].len);
}
END_TEST

/* The arena's tree is tps_json_parse_strict's, but that cJSON frees
 * none of its strings; its errors are the same. Loop: good_cases, then
 * cjson_tree_cases, then bad_cases. */
START_TEST(parse_arena_builds_the_tree_parse_strict_builds)
{
	const int n_good = (int)(sizeof good_cases / sizeof good_cases[0]);
	const int n_cjson =
		(int)(sizeof cjson_tree_cases / sizeof cjson_tree_cases[0]);
	const char *in;
	size_t len;
	struct tps_error err = {0}, arena_err = {0};
	cJSON *tree = NULL;
	const cJSON *arena_tree = NULL;
	struct tps_json_arena *arena = NULL;
	enum tps_status st, arena_st;
	if (_i < n_good) {
		in = good_cases[_i].in;
		len = good_cases[_i].len;
	} else if (_i < n_good + n_cjson) {
		in = cjson_tree_cases[_i - n_good].in;
		len = cjson_tree_cases[_i - n_good].len;
	} else {
		in = bad_cases[_i - n_good - n_cjson].in;
		len = bad_cases[_i - n_good - n_cjson].len;
	}
	st = tps_json_parse_strict("t.json", in, len, &tree, &err);
	arena_st = tps_json_parse_arena("t.json", in, len, &arena, &arena_tree,
					&arena_err);
	ck_assert_int_eq(arena_st, st);
	if (st == TPS_OK) {
		ck_assert_ptr_nonnull(arena);
		expect_same_tree_but(arena_tree, tree,
				     cJSON_IsReference | cJSON_StringIsConst);
	} else {
		ck_assert_ptr_null(arena);
		ck_assert_ptr_null(arena_tree);
		ck_assert_str_eq(arena_err.message, err.message);
	}
	tps_json_arena_free(arena);
	cJSON_Delete(tree);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Big arrays                                                               */
/* ------------------------------------------------------------------------ */

#define BIG_ROWS 500
#define BIG_COLS 1000

START_TEST(parse_strict_reads_big_arrays)
{
	/* [[0, 0.25, 0.5, ...], ...]: BIG_ROWS x BIG_COLS quarters, exact. */
	size_t cap = (size_t)BIG_ROWS * BIG_COLS * 12 + 16, n = 0;
	char *s = malloc(cap);
	struct timespec t0;
	const cJSON *row, *item;
	cJSON *tree;
	long k = 0;
	double dt;

	ck_assert_ptr_nonnull(s);
	s[n++] = '[';
	for (int r = 0; r < BIG_ROWS; r++) {
		n += (size_t)snprintf(s + n, cap - n, "%s[", r ? "," : "");
		for (int i = 0; i < BIG_COLS; i++, k++) {
			n += (size_t)snprintf(s + n, cap - n, "%s%.2f",
					      i ? "," : "", (double)k * 0.25);
		}
		s[n++] = ']';
	}
	s[n++] = ']';
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tree = expect_ok(s, n);
	dt = seconds_since(&t0);
	printf("parse of %d numbers (%zu bytes): %.3f s\n", BIG_ROWS * BIG_COLS,
	       n, dt);
	/* Quadratic appending would take minutes. */
	ck_assert_msg(dt < 20.0, "took %.3f s", dt);
	ck_assert_int_eq(cJSON_GetArraySize(tree), BIG_ROWS);
	k = 0;
	cJSON_ArrayForEach(row, tree)
	{
		int cols = 0;

		cJSON_ArrayForEach(item, row)
		{
			ck_assert_msg(item->valuedouble == (double)k * 0.25,
				      "element %ld: %.17g", k,
				      item->valuedouble);
			k++;
			cols++;
		}
		ck_assert_int_eq(cols, BIG_COLS);
	}
	ck_assert_int_eq(k, (long)BIG_ROWS * BIG_COLS);
	cJSON_Delete(tree);
	free(s);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Out of memory                                                            */
/* ------------------------------------------------------------------------ */

/* cJSON allocates every node through its hooks: these count the blocks
 * alive and fail once `hook_budget` allocations have succeeded. */
static long hook_live;
static long hook_budget;

static void *hook_malloc(size_t n)
{
	void *p;

	if (hook_budget == 0) {
		return NULL;
	}
	hook_budget--;
	p = malloc(n);
	if (p) {
		hook_live++;
	}
	return p;
}

static void hook_free(void *p)
{
	if (p) {
		hook_live--;
	}
	free(p);
}

static void setup_hooks(void)
{
	cJSON_Hooks hooks = {hook_malloc, hook_free};

	cJSON_InitHooks(&hooks);
}

static void teardown_hooks(void)
{
	cJSON_InitHooks(NULL);
}

START_TEST(parse_strict_fails_cleanly_when_out_of_memory)
{
	static const char in[] = "{\"a\":[1,2.5,\"s\",true,{\"b\":[]}],"
				 "\"key\":\"x\",\"c\":{\"d\":false}}";
	long k;

	for (k = 0;; k++) {
		struct tps_error err = {0};
		cJSON sentinel;
		cJSON *tree = &sentinel;
		enum tps_status st;

		hook_budget = k;
		hook_live = 0;
		st = parse_copy(in, sizeof in - 1, &tree, &err);
		if (st == TPS_OK) {
			cJSON_Delete(tree);
			ck_assert_int_eq(hook_live, 0);
			break;
		}
		ck_assert_int_eq(st, TPS_ERR_NOMEM);
		ck_assert_ptr_eq(tree, &sentinel);
		ck_assert_str_eq(err.message, "t.json: out of memory while "
					      "building the JSON tree");
		/* Everything built before the failure is freed. */
		ck_assert_int_eq(hook_live, 0);
	}
	printf("out of memory at each of %ld allocations: clean\n", k);
	/* 11 nodes, 2 strings and 5 keys: each allocation failed once. */
	ck_assert_int_ge(k, 18);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Packed number arrays                                                     */
/* ------------------------------------------------------------------------ */

/* Parses a NUL-terminated text with pack key "params"; it must parse. */
static cJSON *parse_packed(const char *in)
{
	struct tps_error err = {0};
	cJSON *tree = NULL;

	ck_assert_msg(tps_json_parse_strict_packed("t.json", in, strlen(in),
						   "params", &tree,
						   &err) == TPS_OK,
		      "%s", err.message);
	return tree;
}

/* tps_json_write_value's text (caller frees). */
static char *written(const cJSON *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	tps_json_write_value(f, v);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

/* Every number of `packed` (a packed tree) as the node of `plain` (the
 * same text parsed without packing) holds it: the same double, bit for
 * bit, the same valueint; *n_packed counts packed arrays. */
static void expect_same_numbers(const cJSON *packed, const cJSON *plain,
				int *n_packed)
{
	if (tps_json_is_packed(packed)) {
		const double *d = tps_json_packed_values(packed);
		const cJSON *item = plain->child;

		ck_assert_int_eq(tps_json_array_size(packed),
				 cJSON_GetArraySize(plain));
		for (int i = 0; i < tps_json_array_size(packed); i++) {
			cJSON one;

			ck_assert(cJSON_IsNumber(item));
			ck_assert(memcmp(&d[i], &item->valuedouble,
					 sizeof d[i]) == 0);
			tps_json_packed_item(packed, i, &one);
			ck_assert(cJSON_IsNumber(&one));
			ck_assert(memcmp(&one.valuedouble, &item->valuedouble,
					 sizeof d[i]) == 0);
			ck_assert_int_eq(one.valueint, item->valueint);
			item = item->next;
		}
		(*n_packed)++;
		return;
	}
	ck_assert_int_eq(packed->type, plain->type);
	ck_assert_int_eq(tps_json_array_size(packed),
			 tps_json_array_size(plain));
	if (cJSON_IsNumber(packed)) {
		ck_assert(memcmp(&packed->valuedouble, &plain->valuedouble,
				 sizeof packed->valuedouble) == 0);
	}
	for (const cJSON *a = packed->child, *b = plain->child; a;
	     a = a->next, b = b->next) {
		expect_same_numbers(a, b, n_packed);
	}
}

static const struct packed_case {
	const char *in;
	int n_packed;  /* arrays packed */
	bool infinite; /* holds +-inf, which cannot be written */
} packed_cases[] = {
	/* Every kind of number, long ones and ones past the largest double
	 * included; valueint saturates. */
	{"{\"params\":{\"w\":[0,-0,1,2.5,-3e-7,1e10,-1e10,3.99,-2.5,1e400,"
	 "-1e400,4.9e-324,0.1000000000000000055511151231257827021181583404"
	 "541015625,123456789012345678901234567890]}}",
	 1, true},
	{"{\"params\":{\"w\":[0,-0,1,2.5,-3e-7,1e10,-1e10,3.99,-2.5,"
	 "1.7976931348623157e308,4.9e-324,123456789012345678901234567890]}}",
	 1, false},
	/* Rows are packed, the array of rows is not. */
	{"{\"params\":{\"w\":[[1,2],[3,4],[5]],\"b\":[7]}}", 4, false},
	/* Any depth under the key; the key's own value too. */
	{"{\"params\":{\"a\":{\"b\":[[[1]],[2,3]]}},\"x\":1}", 2, false},
	{"{\"params\":[1,2,3]}", 1, false},
	/* Anything but a number: an array as any other. */
	{"{\"params\":{\"w\":[1,\"x\",2],\"v\":[1,2,true],\"u\":[1,[2],3],"
	 "\"e\":[],\"o\":[{\"a\":1}]}}",
	 1, false},
	/* Not under the root's "params": nothing packed. */
	{"{\"input\":[1,2],\"a\":{\"params\":[1,2]},\"params2\":[1]}", 0,
	 false},
	{"[[1,2],{\"params\":[1]}]", 0, false},
	{"[1,2,3]", 0, false},
	{"7", 0, false},
};

START_TEST(packed_arrays_hold_the_numbers_a_node_each_would)
{
	const struct packed_case *pc = &packed_cases[_i];
	cJSON *packed = parse_packed(pc->in), *plain = NULL, *copy;
	struct tps_error err = {0};
	char *a, *b, *c;
	int n = 0;

	ck_assert_int_eq(parse_copy(pc->in, strlen(pc->in), &plain, &err),
			 TPS_OK);
	expect_same_numbers(packed, plain, &n);
	ck_assert_int_eq(n, pc->n_packed);
	/* Written and copied as they would be unpacked. */
	copy = tps_json_duplicate(packed);
	ck_assert_ptr_nonnull(copy);
	n = 0;
	expect_same_numbers(copy, plain, &n);
	ck_assert_int_eq(n, pc->n_packed);
	if (!pc->infinite) {
		a = written(packed);
		b = written(plain);
		c = written(copy);
		ck_assert_str_eq(a, b);
		ck_assert_str_eq(c, b);
		free(a);
		free(b);
		free(c);
	}
	cJSON_Delete(copy);
	cJSON_Delete(packed);
	cJSON_Delete(plain);
}
END_TEST

/* Syntax errors inside a packed array: the message of the unpacked
 * parse, pointer and all, and nothing leaked (valgrind, ASan). */
static const char *const packed_bad[] = {
	"{\"params\":{\"w\":[[1,2],[3,01]]}}",
	"{\"params\":{\"w\":[[1,2],[3,null]]}}",
	"{\"params\":{\"w\":[[1,2],[3,1.]]}}",
	"{\"params\":{\"w\":[[1,2],[3,4]",
	"{\"params\":{\"w\":[[1,2],[3,4,]]}}",
	"{\"params\":{\"w\":[[1,2],[3,4 5]]}}",
	"{\"params\":{\"w\":[1,2,\"\\x\"]}}",
	"{\"params\":{\"w\":[1,2],\"w\":[3]}}",
	"{\"params\":{\"w\":[1,2,tru]}}",
	"{\"params\":{\"w\":[1,2]}} x",
};

START_TEST(packed_array_errors_are_those_of_the_unpacked_parse)
{
	const char *in = packed_bad[_i];
	struct tps_error packed_err = {0}, plain_err = {0};
	cJSON *tree = NULL;

	ck_assert_int_eq(parse_copy(in, strlen(in), &tree, &plain_err),
			 TPS_ERR_INPUT);
	ck_assert_int_eq(tps_json_parse_strict_packed("t.json", in, strlen(in),
						      "params", &tree,
						      &packed_err),
			 TPS_ERR_INPUT);
	ck_assert_ptr_null(tree);
	ck_assert_str_eq(packed_err.message, plain_err.message);
}
END_TEST

/* A row of a big weight: packing grows its buffer by doubling; lengths
 * around each doubling, and one long row. */
START_TEST(packed_arrays_of_every_length_keep_every_number)
{
	static const int lengths[] = {1,  2,  15, 16,	17,   31,
				      32, 33, 64, 1000, 1024, 100000};

	for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
		int n = lengths[k];
		size_t cap = 64 + (size_t)n * 24, used;
		char *in = malloc(cap);
		cJSON *tree, *w;

		ck_assert_ptr_nonnull(in);
		used = (size_t)snprintf(in, cap, "{\"params\":{\"w\":[");
		for (int i = 0; i < n; i++) {
			used += (size_t)snprintf(in + used, cap - used,
						 "%s%d.25", i ? "," : "", i);
		}
		snprintf(in + used, cap - used, "]}}");
		tree = parse_packed(in);
		w = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(tree, "params"), "w");
		ck_assert(tps_json_is_packed(w));
		ck_assert_int_eq(tps_json_array_size(w), n);
		for (int i = 0; i < n; i++) {
			ck_assert(tps_json_packed_values(w)[i] == i + 0.25);
		}
		cJSON_Delete(tree);
		free(in);
	}
}
END_TEST

START_TEST(packed_parse_fails_cleanly_when_out_of_memory)
{
	/* Packed, unpacked at its "x", and packed again after a nested
	 * array. */
	static const char in[] = "{\"params\":{\"w\":[[1,2,3],[4,5]],"
				 "\"v\":[1,2,\"x\",3],\"k\":\"s\"}}";
	long k;

	for (k = 0;; k++) {
		struct tps_error err = {0};
		cJSON sentinel;
		cJSON *tree = &sentinel;
		enum tps_status st;

		hook_budget = k;
		hook_live = 0;
		st = tps_json_parse_strict_packed("t.json", in, sizeof in - 1,
						  "params", &tree, &err);
		if (st == TPS_OK) {
			cJSON *copy;

			ck_assert_int_eq(
				tps_json_array_size(
					cJSON_GetObjectItem(tree->child, "v")),
				4);
			/* The copy fails as cleanly. */
			for (long j = 0;; j++) {
				hook_budget = j;
				copy = tps_json_duplicate(tree);
				if (copy) {
					break;
				}
			}
			hook_budget = -1;
			cJSON_Delete(copy);
			cJSON_Delete(tree);
			ck_assert_int_eq(hook_live, 0);
			break;
		}
		ck_assert_int_eq(st, TPS_ERR_NOMEM);
		ck_assert_ptr_eq(tree, &sentinel);
		ck_assert_int_eq(hook_live, 0);
	}
	printf("packed: out of memory at each of %ld allocations: clean\n", k);
}
END_TEST

/* Counted arrays: under "values" at any depth, rows of numbers hold their
 * count, first number and first non-finite one; rows of rows, arrays
 * elsewhere and empty arrays are as the plain parse makes them. */
START_TEST(counted_arrays_hold_count_first_and_first_non_finite)
{
	static const char in[] =
		"{\"a\":{\"values\":[[1,2,3],[4,1e999,-1e999]],"
		"\"shape\":[2,3]},\"values\":[5,6],\"x\":[7,8],"
		"\"b\":[{\"values\":[]}],\"c\":{\"values\":[9,\"s\",1e999]}}";
	struct tps_error err = {0};
	cJSON *tree = NULL, *a, *rows, *row, *v;
	double value = 0.0;

	ck_assert_int_eq(tps_json_parse_counted("t.json", in, sizeof in - 1,
						"values", &tree, &err),
			 TPS_OK);
	a = cJSON_GetObjectItemCaseSensitive(tree, "a");
	rows = cJSON_GetObjectItemCaseSensitive(a, "values");
	ck_assert(!tps_json_is_packed(rows));
	ck_assert_int_eq(cJSON_GetArraySize(rows), 2);
	row = cJSON_GetArrayItem(rows, 0);
	ck_assert(tps_json_is_counted(row));
	ck_assert_int_eq(tps_json_array_size(row), 3);
	ck_assert(tps_json_counted_first(row) == 1.0);
	ck_assert_int_eq(tps_json_counted_first_bad(row, &value), -1);
	row = cJSON_GetArrayItem(rows, 1);
	ck_assert_int_eq(tps_json_counted_first_bad(row, &value), 1);
	ck_assert(isinf(value) && value > 0);
	ck_assert(!tps_json_is_packed(
		cJSON_GetObjectItemCaseSensitive(a, "shape")));
	v = cJSON_GetObjectItemCaseSensitive(tree, "values");
	ck_assert(tps_json_is_counted(v));
	ck_assert_int_eq(tps_json_array_size(v), 2);
	ck_assert(!tps_json_is_packed(
		cJSON_GetObjectItemCaseSensitive(tree, "x")));
	v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(tree, "b"),
				   0),
		"values");
	ck_assert(cJSON_IsArray(v) && !tps_json_is_packed(v) && !v->child);
	/* A string came: stand-ins for the numbers before it (the first as
	 * it was), the rest as parsed. */
	v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(tree, "c"), "values");
	ck_assert(!tps_json_is_packed(v));
	ck_assert_int_eq(cJSON_GetArraySize(v), 3);
	ck_assert(cJSON_GetArrayItem(v, 0)->valuedouble == 9.0);
	ck_assert(cJSON_IsString(cJSON_GetArrayItem(v, 1)));
	ck_assert(isinf(cJSON_GetArrayItem(v, 2)->valuedouble));
	/* A copy is counted alike. */
	{
		cJSON *copy = tps_json_duplicate(tree);
		cJSON *r1 = cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(copy, "a"),
				"values"),
			1);
		ck_assert(tps_json_is_counted(r1));
		ck_assert_int_eq(tps_json_counted_first_bad(r1, &value), 1);
		cJSON_Delete(copy);
	}
	cJSON_Delete(tree);
}
END_TEST

/* Syntax errors inside counted arrays: the plain parse's messages. */
START_TEST(counted_array_errors_are_those_of_the_plain_parse)
{
	const char *in = packed_bad[_i];
	struct tps_error counted_err = {0}, plain_err = {0};
	cJSON *tree = NULL;

	ck_assert_int_eq(parse_copy(in, strlen(in), &tree, &plain_err),
			 TPS_ERR_INPUT);
	ck_assert_int_eq(tps_json_parse_counted("t.json", in, strlen(in), "w",
						&tree, &counted_err),
			 TPS_ERR_INPUT);
	ck_assert_ptr_null(tree);
	ck_assert_str_eq(counted_err.message, plain_err.message);
}
END_TEST

START_TEST(counted_parse_fails_cleanly_when_out_of_memory)
{
	static const char in[] = "{\"e\":[{\"values\":[[1,2,3],[4,5]]},"
				 "{\"values\":[1,2,\"x\",3]}],\"k\":\"s\"}";
	long k;

	for (k = 0;; k++) {
		struct tps_error err = {0};
		cJSON sentinel;
		cJSON *tree = &sentinel;
		enum tps_status st;

		hook_budget = k;
		hook_live = 0;
		st = tps_json_parse_counted("t.json", in, sizeof in - 1,
					    "values", &tree, &err);
		if (st == TPS_OK) {
			hook_budget = -1;
			cJSON_Delete(tree);
			ck_assert_int_eq(hook_live, 0);
			break;
		}
		ck_assert_int_eq(st, TPS_ERR_NOMEM);
		ck_assert_ptr_eq(tree, &sentinel);
		ck_assert_int_eq(hook_live, 0);
	}
	printf("counted: out of memory at each of %ld allocations: clean\n", k);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Reading files                                                            */
/* ------------------------------------------------------------------------ */

static char tmpdir[PATH_MAX];

static void setup_tmp(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s", tu_tempdir());
}

static void teardown_tmp(void)
{
	tu_rmtree(tmpdir);
}

static const char *tmp_path(const char *name)
{
	static char buf[PATH_MAX + 64];

	snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
	return buf;
}

START_TEST(read_file_reads_regular_file)
{
	struct tps_error err = {0};
	const char *path = tmp_path("a.json");
	char *buf = NULL;
	size_t len = 0;

	tu_write_file(path, "{\"a\":1}\n\0x", 10);
	ck_assert_int_eq(tps_json_read_file(path, 16, &buf, &len, &err),
			 TPS_OK);
	ck_assert_uint_eq(len, 10);
	ck_assert(memcmp(buf, "{\"a\":1}\n\0x", 10) == 0);
	ck_assert_int_eq(buf[len], '\0');
	free(buf);
}
END_TEST

START_TEST(read_file_reads_empty_file)
{
	struct tps_error err = {0};
	const char *path = tmp_path("empty.json");
	char *buf = NULL;
	size_t len = 99;

	tu_write_file(path, "", 0);
	ck_assert_int_eq(tps_json_read_file(path, 16, &buf, &len, &err),
			 TPS_OK);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(buf, "");
	free(buf);
}
END_TEST

START_TEST(read_file_accepts_file_at_limit)
{
	struct tps_error err = {0};
	const char *path = tmp_path("limit.json");
	char *buf = NULL;
	size_t len = 0;

	tu_write_file(path, "0123456789abcdef", 16);
	ck_assert_int_eq(tps_json_read_file(path, 16, &buf, &len, &err),
			 TPS_OK);
	ck_assert_uint_eq(len, 16);
	free(buf);
}
END_TEST

START_TEST(read_file_refuses_file_over_limit)
{
	struct tps_error err = {0};
	char want[2 * PATH_MAX + 128];
	const char *path = tmp_path("big.json");
	char sentinel = 0;
	char *buf = &sentinel;
	size_t len = 7;

	tu_write_file(path, "0123456789abcdefg", 17);
	ck_assert_int_eq(tps_json_read_file(path, 16, &buf, &len, &err),
			 TPS_ERR_LIMIT);
	snprintf(want, sizeof want,
		 "%s: file is 17 bytes, over the limit of 16 bytes", path);
	ck_assert_str_eq(err.message, want);
	ck_assert_ptr_eq(buf, &sentinel);
	ck_assert_uint_eq(len, 7);
}
END_TEST

START_TEST(read_file_names_limit_in_mib)
{
	struct tps_error err = {0};
	const size_t limit = (size_t)1 << 20;
	const char *path = tmp_path("mib.json");
	char *data = calloc(limit + 1, 1);
	char *buf = NULL;
	size_t len = 0;

	ck_assert_ptr_nonnull(data);
	tu_write_file(path, data, limit + 1);
	free(data);
	ck_assert_int_eq(tps_json_read_file(path, limit, &buf, &len, &err),
			 TPS_ERR_LIMIT);
	ck_assert_ptr_nonnull(strstr(err.message,
				     ": file is 1048577 bytes, over the limit "
				     "of 1048576 bytes (1 MiB)"));
	ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(read_file_refuses_directory)
{
	struct tps_error err = {0};
	char want[2 * PATH_MAX + 128];
	char *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(tps_json_read_file(tmpdir, 16, &buf, &len, &err),
			 TPS_ERR_IO);
	snprintf(want, sizeof want, "%s: not a regular file (a directory)",
		 tmpdir);
	ck_assert_str_eq(err.message, want);
	ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(read_file_refuses_fifo_without_blocking)
{
	struct tps_error err = {0};
	const char *path = tmp_path("fifo");
	char *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(tps_json_read_file(path, 16, &buf, &len, &err),
			 TPS_ERR_IO);
	ck_assert_ptr_nonnull(
		strstr(err.message, "fifo: not a regular file (a FIFO)"));
	ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(read_file_refuses_device)
{
	struct tps_error err = {0};
	char *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(tps_json_read_file("/dev/null", 16, &buf, &len, &err),
			 TPS_ERR_IO);
	ck_assert_str_eq(err.message,
			 "/dev/null: not a regular file (a character device)");
	ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(read_file_reports_missing_file)
{
	struct tps_error err = {0};
	char want[2 * PATH_MAX + 128];
	const char *path = tmp_path("missing.json");
	char *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(tps_json_read_file(path, 16, &buf, &len, &err),
			 TPS_ERR_IO);
	snprintf(want, sizeof want, "%s: No such file or directory", path);
	ck_assert_str_eq(err.message, want);
	ck_assert_ptr_null(buf);
}
END_TEST

/* Runs read_file("-") with stdin replaced by fd; restores stdin. */
static enum tps_status read_stdin_from(int fd, size_t max_bytes, char **buf,
				       size_t *len, struct tps_error *err)
{
	int saved = dup(STDIN_FILENO);
	enum tps_status st;

	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fd, STDIN_FILENO), 0);
	close(fd);
	st = tps_json_read_file("-", max_bytes, buf, len, err);
	ck_assert_int_ge(dup2(saved, STDIN_FILENO), 0);
	close(saved);
	return st;
}

/* A pipe whose read end is returned, holding n copies of 'x'. */
static int pipe_with(size_t n)
{
	char data[256];
	int fds[2];

	ck_assert(n <= sizeof data);
	memset(data, 'x', n);
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], data, n), (ssize_t)n);
	close(fds[1]);
	return fds[0];
}

START_TEST(read_file_reads_stdin_pipe)
{
	struct tps_error err = {0};
	char *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(read_stdin_from(pipe_with(16), 16, &buf, &len, &err),
			 TPS_OK);
	ck_assert_uint_eq(len, 16);
	ck_assert_str_eq(buf, "xxxxxxxxxxxxxxxx");
	free(buf);
}
END_TEST

START_TEST(read_file_refuses_stdin_pipe_over_limit)
{
	struct tps_error err = {0};
	char *buf = NULL;
	size_t len = 0;

	ck_assert_int_eq(read_stdin_from(pipe_with(200), 16, &buf, &len, &err),
			 TPS_ERR_LIMIT);
	ck_assert_str_eq(err.message,
			 "<stdin>: input is over the limit of 16 bytes");
	ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(read_file_checks_size_of_stdin_file)
{
	struct tps_error err = {0};
	const char *path = tmp_path("stdin.json");
	char *buf = NULL;
	size_t len = 0;
	int fd;

	tu_write_file(path, "[1,2,3]", 7);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read_stdin_from(fd, 6, &buf, &len, &err),
			 TPS_ERR_LIMIT);
	ck_assert_str_eq(err.message, "<stdin>: file is 7 bytes, over the "
				      "limit of 6 bytes");
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read_stdin_from(fd, 7, &buf, &len, &err), TPS_OK);
	ck_assert_str_eq(buf, "[1,2,3]");
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */
/* ------------------------------------------------------------------------ */

START_TEST(load_parses_file)
{
	static const char text[] = "\xEF\xBB\xBF{\"tpsim\": 1}\n";
	struct tps_error err = {0};
	const char *path = tmp_path("cfg.json");
	cJSON *tree = NULL;

	tu_write_file(path, text, sizeof text - 1);
	ck_assert_int_eq(
		tps_json_load(path, TPS_JSON_MAX_INPUT_BYTES, &tree, &err),
		TPS_OK);
	ck_assert(
		cJSON_GetObjectItemCaseSensitive(tree, "tpsim")->valuedouble ==
		1.0);
	cJSON_Delete(tree);
}
END_TEST

START_TEST(load_names_file_in_parse_errors)
{
	struct tps_error err = {0};
	char want[2 * PATH_MAX + 128];
	const char *path = tmp_path("bad.json");
	cJSON *tree = NULL;

	tu_write_file(path, "{\"plan\":{\"fc2\":1,\"fc2\":2}}", 26);
	ck_assert_int_eq(
		tps_json_load(path, TPS_JSON_MAX_INPUT_BYTES, &tree, &err),
		TPS_ERR_INPUT);
	snprintf(want, sizeof want, "%s: /plan/fc2: duplicate key \"fc2\"",
		 path);
	ck_assert_str_eq(err.message, want);
	ck_assert_ptr_null(tree);
}
END_TEST

START_TEST(load_passes_read_errors_through)
{
	struct tps_error err = {0};
	const char *path = tmp_path("big.json");
	cJSON *tree = NULL;

	ck_assert_int_eq(tps_json_load(path, 16, &tree, &err), TPS_ERR_IO);
	tu_write_file(path, "[1,2,3,4,5,6,7,8,9]", 19);
	ck_assert_int_eq(tps_json_load(path, 16, &tree, &err), TPS_ERR_LIMIT);
	ck_assert_ptr_null(tree);
}
END_TEST

START_TEST(load_names_stdin)
{
	struct tps_error err = {0};
	const char *path = tmp_path("in.json");
	cJSON *tree = NULL;
	int saved = dup(STDIN_FILENO);
	int fd;

	tu_write_file(path, "[null]", 6);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fd, STDIN_FILENO), 0);
	close(fd);
	ck_assert_int_eq(tps_json_load("-", 16, &tree, &err), TPS_ERR_INPUT);
	ck_assert_int_ge(dup2(saved, STDIN_FILENO), 0);
	close(saved);
	ck_assert_str_eq(err.message, "<stdin>: /0: null is not allowed "
				      "(line 1, column 2)");
}
END_TEST

/*
 * A config-like text of about `bytes` bytes, most of it a params block of
 * rows of numbers in every form the grammar has (integers, fractions,
 * exponents, negatives), between members with strings and escapes, so a
 * mapped load crosses many TPS_JSON_CONSUMED_STEPs inside packed arrays,
 * strings and keys alike. `tail` ends the root object ("" for none).
 * Caller frees; *len gets its length.
 */
static char *big_text(size_t bytes, const char *tail, size_t *len)
{
	static const char *const forms[] = {"%d",     "-%d.25", "%de-7",
					    "0.%09d", "-%dE+3", "1.5e%d"};
	size_t cap = bytes + 4096, n = 0;
	char *t = malloc(cap);
	unsigned x = 12345;
	int row = 0;

	ck_assert_ptr_nonnull(t);
	n += (size_t)snprintf(t + n, cap - n,
			      "{\"tpsim\": 1, \"name\": \"caf\\u00e9 \xC3\xA9"
			      "\\n\",\n \"params\": {\"fc1.weight\": [\n");
	while (n < bytes) {
		n += (size_t)snprintf(t + n, cap - n, "%s  [",
				      row ? ",\n" : "");
		for (int c = 0; c < 64; c++) {
			x = x * 1103515245u + 12345u;
			n += (size_t)snprintf(t + n, cap - n, c ? ", " : "");
			n += (size_t)snprintf(t + n, cap - n,
					      forms[(x >> 8) % 6],
					      (int)((x >> 12) % 300));
		}
		n += (size_t)snprintf(t + n, cap - n, "]");
		row++;
	}
	n += (size_t)snprintf(t + n, cap - n,
			      "\n ]},\n \"after\": {\"k\\\"ey\": [\"s\", true]}"
			      "%s}\n",
			      tail);
	ck_assert_uint_lt(n, cap);
	*len = n;
	return t;
}

/* The same tree, packed alike, with the same numbers bit for bit. */
static void expect_same_packed(const cJSON *a, const cJSON *b)
{
	ck_assert_int_eq(a->type, b->type);
	ck_assert_int_eq(tps_json_is_packed(a), tps_json_is_packed(b));
	ck_assert_int_eq(tps_json_array_size(a), tps_json_array_size(b));
	if (tps_json_is_packed(a)) {
		ck_assert(memcmp(tps_json_packed_values(a),
				 tps_json_packed_values(b),
				 (size_t)tps_json_array_size(a) *
					 sizeof(double)) == 0);
		return;
	}
	if (cJSON_IsNumber(a)) {
		ck_assert(memcmp(&a->valuedouble, &b->valuedouble,
				 sizeof a->valuedouble) == 0);
	}
	if (cJSON_IsString(a)) {
		ck_assert_str_eq(a->valuestring, b->valuestring);
	}
	if (a->string || b->string) {
		ck_assert_str_eq(a->string, b->string);
	}
	for (a = a->child, b = b->child; a && b; a = a->next, b = b->next) {
		expect_same_packed(a, b);
	}
	ck_assert_ptr_eq(a, b);
}

/* Both trees write the same text and are the same tree. */
static void expect_same_written(const cJSON *a, const cJSON *b)
{
	char *ta = written(a), *tb = written(b);

	ck_assert_str_eq(ta, tb);
	expect_same_packed(a, b);
	free(ta);
	free(tb);
}

START_TEST(load_maps_file_into_the_tree_that_parse_builds)
{
	struct tps_error err = {0};
	const char *path = tmp_path("big.json");
	cJSON *mapped = NULL, *parsed = NULL;
	size_t len;
	char *text = big_text((size_t)3 << 20, "", &len);

	tu_write_file(path, text, len);
	/* Packed, as a config is read, and plain. */
	ck_assert_msg(tps_json_load_packed(path, TPS_JSON_MAX_INPUT_BYTES,
					   "params", &mapped, &err) == TPS_OK,
		      "%s", err.message);
	ck_assert_int_eq(tps_json_parse_strict_packed(path, text, len, "params",
						      &parsed, &err),
			 TPS_OK);
	ck_assert(tps_json_is_packed(cJSON_GetArrayItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(mapped, "params"),
				    "fc1.weight"),
		0)));
	expect_same_written(mapped, parsed);
	cJSON_Delete(mapped);
	cJSON_Delete(parsed);
	mapped = parsed = NULL;
	ck_assert_int_eq(
		tps_json_load(path, TPS_JSON_MAX_INPUT_BYTES, &mapped, &err),
		TPS_OK);
	ck_assert_int_eq(tps_json_parse_strict(path, text, len, &parsed, &err),
			 TPS_OK);
	expect_same_written(mapped, parsed);
	cJSON_Delete(mapped);
	cJSON_Delete(parsed);
	free(text);
}
END_TEST

/* What the parser said it was done with, in a text it may not read again:
 * each call overwrites the bytes newly behind it. */
struct consumed_log {
	char *text;
	size_t len;
	size_t upto; /* the last offset told */
	int calls;
	bool backwards;
};

static void poison_consumed(void *ctx, const char *upto)
{
	struct consumed_log *log = ctx;
	size_t at = (size_t)(upto - log->text);

	ck_assert(upto >= log->text && at <= log->len);
	if (at < log->upto) {
		log->backwards = true;
		return;
	}
	/* A control character: read again inside a string it is an error,
	 * anywhere else a syntax error, and it is no digit. */
	memset(log->text + log->upto, '\x01', at - log->upto);
	log->upto = at;
	log->calls++;
}

START_TEST(parse_releasing_never_reads_what_it_said_it_was_done_with)
{
	struct tps_error err = {0};
	struct consumed_log log = {0};
	cJSON *released = NULL, *parsed = NULL;
	size_t len;
	char *text = big_text((size_t)2 << 20, "", &len);

	ck_assert_int_eq(tps_json_parse_strict_packed("t.json", text, len,
						      "params", &parsed, &err),
			 TPS_OK);
	log.text = text;
	log.len = len;
	ck_assert_msg(tps_json_parse_releasing("t.json", text, len, "params",
					       poison_consumed, &log, &released,
					       &err) == TPS_OK,
		      "%s", err.message);
	expect_same_written(released, parsed);
	ck_assert(!log.backwards);
	/* Told about every step of the way, not once at the end. */
	ck_assert_int_ge(log.calls, (int)(len / TPS_JSON_CONSUMED_STEP) - 1);
	ck_assert_uint_ge(log.upto, len - TPS_JSON_CONSUMED_STEP);
	cJSON_Delete(released);
	cJSON_Delete(parsed);
	free(text);
}
END_TEST

/* Errors past the dropped text: the same message as the parse of the text
 * in memory (file, pointer, and a line and column counted from the
 * start, through the pages read again). */
static const struct {
	const char *tail;
	const char *want; /* part of the message, after the file name */
} late_errors[] = {
	{", \"after\": 2", ": /after: duplicate key \"after\""},
	{", \"x\": [1, 2,]", ": /x/2: invalid JSON at line "},
	{", \"x\": {\"y\": nul}", ": /x/y: invalid JSON at line "},
	{", \"x\": \"\x01\"", ": /x: invalid JSON at line "},
	{", \"x\": [1, 2", ": /x: unexpected end of input at line "},
};

START_TEST(load_names_file_pointer_line_and_column_after_dropped_text)
{
	struct tps_error mapped_err = {0}, parsed_err = {0};
	const char *path = tmp_path("late.json");
	cJSON *tree = NULL;
	size_t len;
	char *text, want[2 * PATH_MAX + 128];

	text = big_text((size_t)1 << 20, late_errors[_i].tail, &len);
	if (strstr(late_errors[_i].tail, "[1, 2") &&
	    !strstr(late_errors[_i].tail, "]")) {
		/* Cut after the "2": the end comes inside the array. */
		len = (size_t)(strstr(text, "[1, 2") - text) + 5;
	}
	tu_write_file(path, text, len);
	ck_assert_int_eq(tps_json_load_packed(path, TPS_JSON_MAX_INPUT_BYTES,
					      "params", &tree, &mapped_err),
			 TPS_ERR_INPUT);
	ck_assert_ptr_null(tree);
	ck_assert_int_eq(tps_json_parse_strict_packed(path, text, len, "params",
						      &tree, &parsed_err),
			 TPS_ERR_INPUT);
	ck_assert_str_eq(mapped_err.message, parsed_err.message);
	snprintf(want, sizeof want, "%s%s", path, late_errors[_i].want);
	ck_assert_msg(strncmp(mapped_err.message, want, strlen(want)) == 0,
		      "%s", mapped_err.message);
	/* The error is past the first megabyte of text, many lines in. */
	ck_assert_ptr_null(strstr(mapped_err.message, "at line 1,"));
	free(text);
}
END_TEST

/* A mapping ends where the file does: a file of exactly one page whose
 * last byte ends a number (or is cut inside a value) is read to its last
 * byte and not one past it. */
START_TEST(load_reads_a_file_that_ends_at_a_page_boundary)
{
	struct tps_error err = {0};
	const char *path = tmp_path("page.json");
	long page = sysconf(_SC_PAGESIZE);
	char *text, want[2 * PATH_MAX + 128];
	cJSON *tree = NULL;

	ck_assert_int_gt(page, 16);
	text = malloc((size_t)page);
	ck_assert_ptr_nonnull(text);
	memset(text, ' ', (size_t)page);
	memcpy(text + page - 9, "123456789", 9);
	tu_write_file(path, text, (size_t)page);
	ck_assert_int_eq(tps_json_load_packed(path, TPS_JSON_MAX_INPUT_BYTES,
					      "params", &tree, &err),
			 TPS_OK);
	ck_assert(cJSON_IsNumber(tree) && tree->valuedouble == 123456789.0);
	cJSON_Delete(tree);
	tree = NULL;
	memset(text, ' ', (size_t)page);
	memcpy(text + page - 4, "[1e1", 4);
	tu_write_file(path, text, (size_t)page);
	ck_assert_int_eq(tps_json_load_packed(path, TPS_JSON_MAX_INPUT_BYTES,
					      "params", &tree, &err),
			 TPS_ERR_INPUT);
	snprintf(want, sizeof want,
		 "%s: (root): unexpected end of input at line 1, column %ld",
		 path, page + 1);
	ck_assert_str_eq(err.message, want);
	ck_assert_ptr_null(tree);
	free(text);
}
END_TEST

START_TEST(load_refuses_file_over_limit_and_reads_empty_file)
{
	struct tps_error err = {0};
	char want[2 * PATH_MAX + 128];
	const char *path = tmp_path("limit.json");
	cJSON *tree = NULL;

	tu_write_file(path, "[1, 2, 3, 4, 5, 6]", 18);
	ck_assert_int_eq(tps_json_load_packed(path, 17, "params", &tree, &err),
			 TPS_ERR_LIMIT);
	snprintf(want, sizeof want,
		 "%s: file is 18 bytes, over the limit of 17 bytes", path);
	ck_assert_str_eq(err.message, want);
	ck_assert_ptr_null(tree);
	ck_assert_int_eq(tps_json_load_packed(path, 18, "params", &tree, &err),
			 TPS_OK);
	ck_assert_int_eq(cJSON_GetArraySize(tree), 6);
	cJSON_Delete(tree);
	tree = NULL;
	/* Nothing to map: read, and refused as the parser refuses "". */
	tu_write_file(path, "", 0);
	ck_assert_int_eq(tps_json_load_packed(path, 18, "params", &tree, &err),
			 TPS_ERR_INPUT);
	snprintf(want, sizeof want,
		 "%s: (root): empty input (expected a JSON value)", path);
	ck_assert_str_eq(err.message, want);
	ck_assert_ptr_null(tree);
	ck_assert_int_eq(
		tps_json_load_packed(tmpdir, 18, "params", &tree, &err),
		TPS_ERR_IO);
	ck_assert_ptr_nonnull(
		strstr(err.message, ": not a regular file (a directory)"));
}
END_TEST

/* ------------------------------------------------------------------------ */
/* JSON Pointer helpers                                                     */
/* ------------------------------------------------------------------------ */

START_TEST(path_builds_and_pops_pointers)
{
	struct tps_json_path p;
	size_t at_root, at_a, at_1;

	tps_json_path_init(&p);
	ck_assert_str_eq(tps_json_path_str(&p), "(root)");
	ck_assert_uint_eq(p.len, 0);
	at_root = p.len;
	tps_json_path_push_key(&p, "a");
	at_a = p.len;
	tps_json_path_push_index(&p, 1);
	at_1 = p.len;
	tps_json_path_push_key(&p, "b");
	ck_assert_str_eq(tps_json_path_str(&p), "/a/1/b");
	ck_assert_uint_eq(p.len, strlen(p.text));
	tps_json_path_pop(&p, at_1);
	ck_assert_str_eq(tps_json_path_str(&p), "/a/1");
	tps_json_path_pop(&p, at_a);
	ck_assert_str_eq(tps_json_path_str(&p), "/a");
	tps_json_path_pop(&p, at_root);
	ck_assert_str_eq(tps_json_path_str(&p), "(root)");
}
END_TEST

START_TEST(path_escapes_tilde_and_slash)
{
	struct tps_json_path p;

	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "a/b");
	ck_assert_str_eq(tps_json_path_str(&p), "/a~1b");
	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "m~n");
	ck_assert_str_eq(tps_json_path_str(&p), "/m~0n");
	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "~1/~0");
	ck_assert_str_eq(tps_json_path_str(&p), "/~01~1~00");
	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "");
	ck_assert_str_eq(tps_json_path_str(&p), "/");
	tps_json_path_push_index(&p, 0);
	ck_assert_str_eq(tps_json_path_str(&p), "//0");
}
END_TEST

START_TEST(path_prints_big_indices)
{
	struct tps_json_path p;
	char want[32];

	tps_json_path_init(&p);
	tps_json_path_push_index(&p, SIZE_MAX);
	snprintf(want, sizeof want, "/%zu", (size_t)SIZE_MAX);
	ck_assert_str_eq(tps_json_path_str(&p), want);
}
END_TEST

START_TEST(path_truncates_long_pointers_with_dots)
{
	struct tps_json_path p;
	char key[700];
	size_t before;

	memset(key, 'k', sizeof key - 1);
	key[sizeof key - 1] = '\0';
	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "top");
	before = p.len;
	tps_json_path_push_key(&p, key);
	ck_assert_uint_eq(p.len, TPS_JSON_PATH_MAX - 1);
	ck_assert_uint_eq(strlen(p.text), p.len);
	ck_assert_str_eq(p.text + p.len - 3, "...");
	ck_assert(strncmp(p.text, "/top/kkk", 8) == 0);
	/* Further pushes leave a truncated pointer alone. */
	tps_json_path_push_index(&p, 5);
	tps_json_path_push_key(&p, "x");
	ck_assert_uint_eq(p.len, TPS_JSON_PATH_MAX - 1);
	ck_assert_str_eq(p.text + p.len - 3, "...");
	/* Popping restores the pointer before the long key. */
	tps_json_path_pop(&p, before);
	ck_assert_str_eq(tps_json_path_str(&p), "/top");
}
END_TEST

START_TEST(path_truncation_keeps_utf8_whole)
{
	struct tps_json_path p;
	char key[3 * 300 + 1];
	size_t n;

	/* 300 copies of U+4E2D (3 bytes each). */
	for (int i = 0; i < 300; i++) {
		memcpy(key + 3 * i, "\xE4\xB8\xAD", 3);
	}
	key[900] = '\0';
	tps_json_path_init(&p);
	tps_json_path_push_key(&p, key);
	ck_assert_uint_eq(p.len, TPS_JSON_PATH_MAX - 1);
	n = strcspn(p.text, ".");
	/* "/" then whole 3-byte characters, then only dots. */
	ck_assert_uint_eq((n - 1) % 3, 0);
	ck_assert_uint_eq(strspn(p.text + n, "."), p.len - n);
	ck_assert_uint_ge(p.len - n, 3);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Escaping for messages                                                    */
/* ------------------------------------------------------------------------ */

START_TEST(escape_escapes_controls_quotes_and_backslashes)
{
	char out[128];

	ck_assert_ptr_eq(tps_json_escape_for_message("a\nb", out, sizeof out),
			 out);
	ck_assert_str_eq(out, "a\\nb");
	tps_json_escape_for_message("\t\r\b\f\"\\\x1b\x01\x7f", out,
				    sizeof out);
	ck_assert_str_eq(out, "\\t\\r\\b\\f\\\"\\\\\\u001b\\u0001\\u007f");
	/* C1 controls are escaped, other UTF-8 kept. */
	tps_json_escape_for_message("\xC2\x9B"
				    "2J \xC3\xA9\xE4\xB8\xAD",
				    out, sizeof out);
	ck_assert_str_eq(out, "\\u009b2J \xC3\xA9\xE4\xB8\xAD");
	tps_json_escape_for_message("", out, sizeof out);
	ck_assert_str_eq(out, "");
	tps_json_escape_for_message("plain text", out, sizeof out);
	ck_assert_str_eq(out, "plain text");
}
END_TEST

START_TEST(escape_truncates_with_dots)
{
	char out[8];
	char tiny[3];

	tps_json_escape_for_message("abcdefg", out, sizeof out);
	ck_assert_str_eq(out, "abcdefg");
	tps_json_escape_for_message("abcdefgh", out, sizeof out);
	ck_assert_str_eq(out, "abcd...");
	/* An escape sequence is never cut in half. */
	tps_json_escape_for_message("abc\n\n\n", out, sizeof out);
	ck_assert_str_eq(out, "abc...");
	tps_json_escape_for_message("a\x01"
				    "bcdefgh",
				    out, sizeof out);
	ck_assert_str_eq(out, "a...");
	/* Nor a UTF-8 character. */
	tps_json_escape_for_message("ab\xE4\xB8\xAD\xE4\xB8\xAD", out,
				    sizeof out);
	ck_assert_str_eq(out, "ab...");
	tps_json_escape_for_message("abcdef", tiny, sizeof tiny);
	ck_assert_str_eq(tiny, "..");
	tps_json_escape_for_message("ab", tiny, sizeof tiny);
	ck_assert_str_eq(tiny, "ab");
	tps_json_escape_for_message("abc", out, 1);
	ck_assert_str_eq(out, "");
}
END_TEST

/* ------------------------------------------------------------------------ */

static void setup_tmp_mapped(void)
{
	setup_tmp();
	tps_json_load_maps_files(true);
}

static void teardown_tmp_mapped(void)
{
	tps_json_load_maps_files(false);
	teardown_tmp();
}

static void add_load_tests(TCase *tc)
{
	tcase_add_test(tc, load_parses_file);
	tcase_add_test(tc, load_names_file_in_parse_errors);
	tcase_add_test(tc, load_passes_read_errors_through);
	tcase_add_test(tc, load_names_stdin);
	tcase_add_test(tc, load_maps_file_into_the_tree_that_parse_builds);
	tcase_add_test(
		tc, parse_releasing_never_reads_what_it_said_it_was_done_with);
	tcase_add_loop_test(
		tc, load_names_file_pointer_line_and_column_after_dropped_text,
		0, (int)(sizeof late_errors / sizeof late_errors[0]));
	tcase_add_test(tc, load_reads_a_file_that_ends_at_a_page_boundary);
	tcase_add_test(tc, load_refuses_file_over_limit_and_reads_empty_file);
}

static Suite *jsonio_suite(void)
{
	Suite *s = suite_create("jsonio");
	TCase *tc;

	tc = tcase_create("bad_input");
	tcase_add_loop_test(tc, parse_strict_rejects_bad_input, 0,
			    (int)(sizeof bad_cases / sizeof bad_cases[0]));
	tcase_add_test(tc, parse_strict_leaves_output_untouched_on_error);
	tcase_add_test(tc, parse_strict_escapes_name_in_messages);
	suite_add_tcase(s, tc);

	tc = tcase_create("good_input");
	tcase_add_loop_test(tc, parse_strict_accepts_good_input, 0,
			    (int)(sizeof good_cases / sizeof good_cases[0]));
	tcase_add_test(tc, parse_strict_builds_expected_values);
	tcase_add_test(tc, parse_strict_reads_only_len_bytes);
	suite_add_tcase(s, tc);

	tc = tcase_create("depth");
	tcase_add_test(tc, parse_strict_accepts_max_depth);
	tcase_add_test(tc, parse_strict_rejects_depth_over_max);
	tcase_add_test(tc, parse_strict_rejects_hostile_depth_without_overflow);
	tcase_add_test(tc, parse_strict_rejects_deep_objects_at_pointer);
	suite_add_tcase(s, tc);

	tc = tcase_create("duplicate_keys");
	tcase_add_test(tc, parse_strict_handles_big_object_fast);
	tcase_add_test(tc, parse_strict_finds_duplicate_in_big_object);
	suite_add_tcase(s, tc);

	tc = tcase_create("long_numbers");
	tcase_add_test(tc, parse_strict_keeps_value_of_long_numbers);
	tcase_add_test(tc,
		       parse_strict_reads_numbers_longer_than_63_characters);
	suite_add_tcase(s, tc);

	tc = tcase_create("numbers");
	tcase_add_loop_test(
		tc, parse_strict_reads_tricky_decimals_exactly, 0,
		(int)(sizeof decimal_cases / sizeof decimal_cases[0]));
	tcase_add_test(tc, parse_strict_fast_numbers_match_strtod);
	tcase_add_test(tc, parse_strict_reads_numbers_whatever_the_locale);
	tcase_add_test(tc, scan_number_reads_what_parse_strict_reads);
	tcase_add_test(tc, scan_number_reads_numbers_whatever_the_locale);
	suite_add_tcase(s, tc);

	tc = tcase_create("tree");
	tcase_add_loop_test(tc, parse_strict_builds_the_tree_cjson_builds, 0,
			    (int)(sizeof good_cases / sizeof good_cases[0]));
	tcase_add_loop_test(
		tc, parse_strict_builds_the_tree_cjson_builds_at_int_limits, 0,
		(int)(sizeof cjson_tree_cases / sizeof cjson_tree_cases[0]));
	tcase_add_test(tc, parse_strict_reads_big_arrays);
	tcase_add_loop_test(
		tc, parse_arena_builds_the_tree_parse_strict_builds, 0,
		(int)(sizeof good_cases / sizeof good_cases[0] +
		      sizeof cjson_tree_cases / sizeof cjson_tree_cases[0] +
		      sizeof bad_cases / sizeof bad_cases[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("out_of_memory");
	tcase_add_checked_fixture(tc, setup_hooks, teardown_hooks);
	tcase_add_test(tc, parse_strict_fails_cleanly_when_out_of_memory);
	tcase_add_test(tc, packed_parse_fails_cleanly_when_out_of_memory);
	tcase_add_test(tc, counted_parse_fails_cleanly_when_out_of_memory);
	suite_add_tcase(s, tc);

	tc = tcase_create("packed");
	tcase_add_loop_test(
		tc, packed_arrays_hold_the_numbers_a_node_each_would, 0,
		(int)(sizeof packed_cases / sizeof packed_cases[0]));
	tcase_add_loop_test(tc,
			    packed_array_errors_are_those_of_the_unpacked_parse,
			    0, (int)(sizeof packed_bad / sizeof packed_bad[0]));
	tcase_add_test(tc, packed_arrays_of_every_length_keep_every_number);
	tcase_add_test(tc,
		       counted_arrays_hold_count_first_and_first_non_finite);
	tcase_add_loop_test(tc,
			    counted_array_errors_are_those_of_the_plain_parse,
			    0, (int)(sizeof packed_bad / sizeof packed_bad[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("read_file");
	tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
	tcase_add_test(tc, read_file_reads_regular_file);
	tcase_add_test(tc, read_file_reads_empty_file);
	tcase_add_test(tc, read_file_accepts_file_at_limit);
	tcase_add_test(tc, read_file_refuses_file_over_limit);
	tcase_add_test(tc, read_file_names_limit_in_mib);
	tcase_add_test(tc, read_file_refuses_directory);
	tcase_add_test(tc, read_file_refuses_fifo_without_blocking);
	tcase_add_test(tc, read_file_refuses_device);
	tcase_add_test(tc, read_file_reports_missing_file);
	tcase_add_test(tc, read_file_reads_stdin_pipe);
	tcase_add_test(tc, read_file_refuses_stdin_pipe_over_limit);
	tcase_add_test(tc, read_file_checks_size_of_stdin_file);
	suite_add_tcase(s, tc);

	/* tps_json_load reading files (the library's default) and mapping
	 * them (tpsim's): the same trees, messages and limits. */
	tc = tcase_create("load");
	tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
	add_load_tests(tc);
	suite_add_tcase(s, tc);
	tc = tcase_create("load_mapped");
	tcase_add_checked_fixture(tc, setup_tmp_mapped, teardown_tmp_mapped);
	add_load_tests(tc);
	suite_add_tcase(s, tc);

	tc = tcase_create("path");
	tcase_add_test(tc, path_builds_and_pops_pointers);
	tcase_add_test(tc, path_escapes_tilde_and_slash);
	tcase_add_test(tc, path_prints_big_indices);
	tcase_add_test(tc, path_truncates_long_pointers_with_dots);
	tcase_add_test(tc, path_truncation_keeps_utf8_whole);
	suite_add_tcase(s, tc);

	tc = tcase_create("escape");
	tcase_add_test(tc, escape_escapes_controls_quotes_and_backslashes);
	tcase_add_test(tc, escape_truncates_with_dots);
	suite_add_tcase(s, tc);

	return s;
}

int main(void)
{
	return tu_run_suite(jsonio_suite());
}
