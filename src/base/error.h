/*
 * tpsim error reporting.
 *
 * Every fallible function returns enum tps_status and, on failure, fills a
 * caller-owned struct tps_error with the same status and a one-line message.
 * There is no global error state. On failure a function leaves its outputs
 * untouched unless its comment says otherwise.
 *
 * Two kinds of error (as in Lua): misuse of the API by tpsim's own code is an
 * assert; bad user input (configs, fixtures, traces, command lines) is a
 * status plus a message, never an assert, abort or exit.
 */
#ifndef TPSIM_ERROR_H
#define TPSIM_ERROR_H

#include <stdbool.h>
#include <stddef.h>

enum tps_status {
	TPS_OK = 0,
	TPS_ERR_INPUT,	     /* bad config, fixture or trace content */
	TPS_ERR_IO,	     /* a file could not be read or written */
	TPS_ERR_SHAPE,	     /* shapes do not fit together */
	TPS_ERR_LIMIT,	     /* a size or memory limit would be exceeded */
	TPS_ERR_NOMEM,	     /* an allocation failed */
	TPS_ERR_NUMERIC,     /* a NaN or Inf was produced */
	TPS_ERR_UNSUPPORTED, /* valid request this version cannot do */
	TPS_ERR_USAGE,	     /* bad command line */
};

#define TPS_ERROR_MESSAGE_MAX 1024
#define TPS_ERROR_FILE_MAX 256
#define TPS_ERROR_POINTER_MAX 512

struct tps_error {
	enum tps_status status;
	/* One line: "cfg.json: /model/0/in_features: expected 8, got 6". */
	char message[TPS_ERROR_MESSAGE_MAX];
	/* Set by tps_error_set_at, for an error at a place in a JSON
	 * document (a config, a trace, a fixture): the document's name and
	 * the JSON Pointer of the value as given, not escaped ("" is the
	 * whole document), each cut to fit; and where in message the words
	 * after them start ("expected 8, got 6"), for callers that show the
	 * three apart (the public API's error). tps_error_set clears them:
	 * at is false, file and pointer "", what 0. */
	bool at;
	char file[TPS_ERROR_FILE_MAX];
	char pointer[TPS_ERROR_POINTER_MAX];
	size_t what;
};

/* Sets err (if not NULL) and returns status, so callers can
 * `return tps_error_set(err, TPS_ERR_SHAPE, "...", ...);`. The message is
 * truncated to fit. */
enum tps_status tps_error_set(struct tps_error *err, enum tps_status status,
			      const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* An error at a place in a JSON document: the message is
 * "<file>: <pointer>: <what>", the file and the pointer escaped
 * (tps_json_escape_for_message's rules: control characters, quotes and
 * backslashes, so the line stays one line) and the empty pointer written
 * "(root)"; err's file, pointer and what say where the parts are. */
enum tps_status tps_error_set_at(struct tps_error *err, enum tps_status status,
				 const char *file, const char *pointer,
				 const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Prepends "<prefix>: " to err's message; the status and the place (file,
 * pointer; what moves with the text) are kept. */
void tps_error_prefix(struct tps_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Short lower-case name of a status ("bad input", "I/O error", ...). */
const char *tps_status_name(enum tps_status status);

#endif
