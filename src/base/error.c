#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum tps_status tps_error_set(struct tps_error *err, enum tps_status status,
			      const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->status = status;
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return status;
}

void tps_error_prefix(struct tps_error *err, const char *fmt, ...)
{
	char prefix[TPS_ERROR_MESSAGE_MAX];
	/* Room for both parts, so the compiler sees no truncation; the
	 * result is cut to the message size below. */
	char joined[2 * TPS_ERROR_MESSAGE_MAX + 2];
	va_list ap;

	if (!err) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	snprintf(joined, sizeof joined, "%s: %s", prefix, err->message);
	memcpy(err->message, joined, sizeof err->message - 1);
	err->message[sizeof err->message - 1] = '\0';
}

const char *tps_status_name(enum tps_status status)
{
	switch (status) {
	case TPS_OK: return "ok";
	case TPS_ERR_INPUT: return "bad input";
	case TPS_ERR_IO: return "I/O error";
	case TPS_ERR_SHAPE: return "shape error";
	case TPS_ERR_LIMIT: return "limit exceeded";
	case TPS_ERR_NOMEM: return "out of memory";
	case TPS_ERR_NUMERIC: return "non-finite value";
	case TPS_ERR_UNSUPPORTED: return "unsupported";
	case TPS_ERR_USAGE: return "usage error";
	}
	return "unknown error";
}
