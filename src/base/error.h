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

struct tps_error {
	enum tps_status status;
	char message[TPS_ERROR_MESSAGE_MAX];
};

/* Sets err (if not NULL) and returns status, so callers can
 * `return tps_error_set(err, TPS_ERR_SHAPE, "...", ...);`. The message is
 * truncated to fit. */
enum tps_status tps_error_set(struct tps_error *err, enum tps_status status,
			      const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prepends "<prefix>: " to err's message; the status is kept. */
void tps_error_prefix(struct tps_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Short lower-case name of a status ("bad input", "I/O error", ...). */
const char *tps_status_name(enum tps_status status);

#endif
