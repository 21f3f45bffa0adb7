/*
 * Strict JSON input (docs/design.md section 8) for configs, fixtures and
 * traces.
 *
 * cJSON alone accepts things RFC 8259 forbids (duplicate keys, leading zeros,
 * raw control characters, invalid UTF-8, NUL bytes, trailing garbage), so the
 * text is read here by a strict parser that builds the cJSON tree in the same
 * pass; the result is a plain cJSON tree.
 *
 * Error messages follow the CLI's format, without the "tpsim: " prefix:
 *   "<file>: <json-pointer>: <what is wrong>"
 * e.g. "cfg.json: /plan/fc2: duplicate key \"fc2\"" or, for a syntax error,
 * "cfg.json: /model/1: invalid JSON at line 3, column 7: leading zero in
 * number". The pointer is that of the value being read when the error was
 * found ("" for the whole document, printed as "/" is NOT used: the empty
 * pointer is printed as "(root)").
 */
#ifndef TPSIM_JSONIO_H
#define TPSIM_JSONIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "error.h"

/* Largest config, fixture or trace-to-check file accepted (16 MiB). Traces
 * read by `tpsim check` use TPS_JSON_MAX_TRACE_BYTES. */
#define TPS_JSON_MAX_INPUT_BYTES ((size_t)16 << 20)
#define TPS_JSON_MAX_TRACE_BYTES ((size_t)1 << 30)
/* Deepest nesting accepted; deeper input is an error, not a stack overflow. */
#define TPS_JSON_MAX_DEPTH 64

/*
 * Reads the whole file at `path` ("-" means standard input) into a new
 * NUL-terminated buffer. Only regular files and "-" are accepted (a directory,
 * FIFO or device is an error naming the path). A file larger than max_bytes is
 * refused before reading it all, with the limit named.
 * On success *out (caller frees with free()) and *out_len are set.
 * On error: TPS_ERR_IO or TPS_ERR_LIMIT, outputs untouched.
 */
enum tps_status tps_json_read_file(const char *path, size_t max_bytes,
				   char **out, size_t *out_len,
				   struct tps_error *err);

/*
 * Parses `text` (len bytes; it may contain NUL bytes, which are errors) as
 * strict RFC 8259 JSON into a cJSON tree, in one pass.
 * `name` is the file name used in messages.
 * Rejected, each naming the JSON Pointer: syntax errors, trailing non-space
 * content, NUL bytes, invalid UTF-8 (overlong, surrogates, > U+10FFFF),
 * raw control characters in strings, invalid escapes, lone surrogate \u
 * escapes, leading zeros, `null` anywhere, duplicate keys in an object, and
 * nesting deeper than TPS_JSON_MAX_DEPTH. A leading UTF-8 BOM is skipped.
 * The tree is laid out as cJSON_Parse lays it out (types, valueint, order),
 * but numbers of any length are read whole (cJSON 1.7.15 cuts them at 63
 * characters), as strtod reads them in the C locale whatever the program's
 * locale: correctly rounded, and +-inf past the largest double (a reader that
 * needs finite values checks them).
 * On success *out is the parsed tree; the caller frees it with cJSON_Delete().
 * On error: TPS_ERR_INPUT (or TPS_ERR_NOMEM), *out untouched and nothing
 * leaked.
 */
enum tps_status tps_json_parse_strict(const char *name, const char *text,
				      size_t len, cJSON **out,
				      struct tps_error *err);

/*
 * Packed number arrays. A config's explicit values can be millions of
 * numbers, and a cJSON node each (64 bytes) is eight times their double.
 * Parsed with a pack key, every non-empty array that holds numbers only,
 * anywhere inside the root object's member of that name, is one cJSON
 * array node without children: its valuestring holds its doubles (the
 * values a node each would have had) and valueint their count, and
 * cJSON_Delete frees them with it. Arrays holding anything else (a string,
 * an array) are as before, so their readers report what they always did.
 * cJSON's own functions see a packed array as empty: read it with the
 * functions below; cJSON_Duplicate and cJSON_Print must not meet it.
 */

/* tps_json_parse_strict, with the arrays under root[pack_key] packed
 * (pack_key NULL: none, as tps_json_parse_strict). */
enum tps_status tps_json_parse_strict_packed(const char *name, const char *text,
					     size_t len, const char *pack_key,
					     cJSON **out,
					     struct tps_error *err);
/*
 * tps_json_parse_strict_packed for a reader that only checks the numbers
 * (tpsim view's trace, whose full values can be tens of millions): every
 * array of numbers only under a member named key, at any depth, is packed
 * without its numbers. It holds their count (tps_json_array_size) and its
 * first non-finite one (tps_json_counted_first_bad); tps_json_packed_values
 * and tps_json_packed_item must not meet it. An array that turns out to
 * hold something else gets stand-in nodes for the numbers before it: 0,
 * but its first number and its first non-finite one as they were.
 */
enum tps_status tps_json_parse_counted(const char *name, const char *text,
				       size_t len, const char *key, cJSON **out,
				       struct tps_error *err);
/* A counted array's record (its valuestring; its valuedouble is
 * TPS_JSON_COUNTED, which no other array's is). */
#define TPS_JSON_COUNTED (-1.0)
struct tps_json_counted {
	double first_value; /* element 0 */
	int64_t first_bad;  /* -1: every number is finite */
	double bad_value;
};
/* Whether v is a packed array without its numbers. */
bool tps_json_is_counted(const cJSON *v);
/* A counted array's first non-finite number's index (-1: none), and its
 * value in *value. */
int64_t tps_json_counted_first_bad(const cJSON *v, double *value);
/* A counted array's element 0. */
double tps_json_counted_first(const cJSON *v);
/* Whether v is a packed array (with its numbers, or counted). */
bool tps_json_is_packed(const cJSON *v);
/* A packed array's doubles (tps_json_array_size of them). */
const double *tps_json_packed_values(const cJSON *v);
/* Elements of an array or members of an object, packed or not
 * (cJSON_GetArraySize). */
int tps_json_array_size(const cJSON *v);
/* Makes *item the number node element i of a packed array would have been
 * (valueint saturated as cJSON_CreateNumber does; no key, no siblings).
 * It borrows nothing: it lives as long as the caller's variable. */
void tps_json_packed_item(const cJSON *array, int i, cJSON *item);
/* A deep copy of v, packed arrays included (cJSON_Duplicate(v, true));
 * NULL when out of memory. The caller frees it with cJSON_Delete(). */
cJSON *tps_json_duplicate(const cJSON *v);

/*
 * tps_json_parse_strict into an arena: the same tree, but its nodes, keys
 * and strings are carved from large blocks rather than allocated one by
 * one (a node takes 64 bytes, not malloc's 80), and freed all at once.
 * For a large tree that is only read (tpsim timeline's trace). The tree
 * is read-only: nothing may be added to it, detached or freed but by
 * tps_json_arena_free. On success *arena (tps_json_arena_free) and *out,
 * its root. On error as tps_json_parse_strict's, outputs untouched.
 */
struct tps_json_arena;
enum tps_status tps_json_parse_arena(const char *name, const char *text,
				     size_t len, struct tps_json_arena **arena,
				     const cJSON **out, struct tps_error *err);

/* Frees the arena and the tree in it; NULL is a no-op. */
void tps_json_arena_free(struct tps_json_arena *arena);

/*
 * The RFC 8259 number at the start of `text` (len bytes), for numbers that
 * come from elsewhere than a JSON document (the command line's --set): the
 * parser's own grammar and conversion, so that such a value reads exactly
 * as it would in a file. On success *used gets its length and *out its
 * value (correctly rounded; +-inf past the largest double). What follows
 * it is the caller's to check: "0x10" is the number 0 and then "x10".
 * Returns false, outputs untouched, when text does not start with a JSON
 * number ("+8", " 8", "08", "8.", "1e", "inf"), or, for a number the
 * exact fast path cannot convert (over 19 digits, or beyond 1e+-22), when
 * memory runs out.
 */
bool tps_json_scan_number(const char *text, size_t len, size_t *used,
			  double *out);

/*
 * tps_json_read_file followed by tps_json_parse_strict: the same checks,
 * limits and messages. Once tps_json_load_maps_files(true), a regular file
 * is mapped rather than read, and its pages are handed back as the parser
 * moves past them, so that a big file's text is never resident whole
 * beside its tree (a 16 MiB config's explicit params:
 * docs/performance.md); standard input, an empty file or one that cannot
 * be mapped is read whole.
 */
/*
 * Whether tps_json_load maps regular files (default: no, it reads them).
 * A mapped file cut short by another process while it is parsed raises
 * SIGBUS, which only a process's owner can turn into an error: `tpsim`'s
 * main() turns mapping on with its handler in place
 * (tps_cli_install_signals); a host of the library keeps reading. Call
 * before any thread loads.
 */
void tps_json_load_maps_files(bool on);
enum tps_status tps_json_load(const char *path, size_t max_bytes, cJSON **out,
			      struct tps_error *err);
/* tps_json_load, parsed with tps_json_parse_strict_packed; no text is
 * left when it returns. */
enum tps_status tps_json_load_packed(const char *path, size_t max_bytes,
				     const char *pack_key, cJSON **out,
				     struct tps_error *err);

/*
 * JSON Pointer building (RFC 6901), for error messages.
 * A struct tps_json_path is a fixed buffer; appending past its capacity keeps
 * it truncated with "..." rather than failing.
 */
#define TPS_JSON_PATH_MAX 512
struct tps_json_path {
	char text[TPS_JSON_PATH_MAX]; /* "" or "/a/0/b~1c" */
	size_t len;
};

void tps_json_path_init(struct tps_json_path *p);
/* Appends "/<key>" with "~" -> "~0" and "/" -> "~1". */
void tps_json_path_push_key(struct tps_json_path *p, const char *key);
/* Appends "/<index>". */
void tps_json_path_push_index(struct tps_json_path *p, size_t index);
/* Undoes the last push (restores the previous length `saved_len`). */
void tps_json_path_pop(struct tps_json_path *p, size_t saved_len);
/* The pointer as text for messages: "(root)" for the empty pointer. */
const char *tps_json_path_str(const struct tps_json_path *p);

/*
 * Copies `text` into out (size out_size, always NUL-terminated, truncated
 * with "..." if needed) with control characters, quotes and backslashes
 * escaped as in JSON (\n, \t, \u001b, \", \\), so user text echoed in a
 * message cannot break the line. Returns out.
 */
char *tps_json_escape_for_message(const char *text, char *out, size_t out_size);

enum tps_file_kind {
	TPS_FILE_OTHER,	  /* none of the below */
	TPS_FILE_CONFIG,  /* a top-level "tpsim": configs have it, traces and
			     fixtures never do */
	TPS_FILE_FIXTURE, /* a fixture's reserved keys: "tolerance" at the top
			     level or in an event, "match" in an event */
	TPS_FILE_TRACE,	  /* "format": "tpsim.trace", and nothing above */
};

/* The kind of root, and into where (may be NULL) the pointer of the key
 * that tells (/tpsim, /tolerance, /events/3/match, /format). A fixture
 * that is a trace in full (no reserved key) is a trace. */
enum tps_file_kind tps_json_file_kind(const cJSON *root,
				       struct tps_json_path *where);

/* Writes s as a JSON string literal (control characters escaped). */
void tps_json_write_string(FILE *out, const char *s);
/* Writes a cJSON value (a string, number, bool, array, packed or not, or
 * object) compactly, numbers as the shortest round-trip decimal (numfmt.h). */
void tps_json_write_value(FILE *out, const cJSON *value);

#endif
