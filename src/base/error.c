#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsonio.h"

static void clear_place(struct tps_error *err)
{
	err->at = false;
	err->file[0] = '\0';
	err->pointer[0] = '\0';
	err->what = 0;
}

enum tps_status tps_error_set(struct tps_error *err, enum tps_status status,
			      const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->status = status;
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
		clear_place(err);
	}
	return status;
}

enum tps_status tps_error_set_at(struct tps_error *err, enum tps_status status,
				 const char *file, const char *pointer,
				 const char *fmt, ...)
{
	char what[TPS_ERROR_MESSAGE_MAX];
	char file_esc[TPS_ERROR_FILE_MAX], ptr_esc[TPS_ERROR_POINTER_MAX];
	va_list ap;
	int head;

	if (!err) {
		return status;
	}
	/* Formatted apart first: the arguments may point into err. */
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	tps_json_escape_for_message(file, file_esc, sizeof file_esc);
	tps_json_escape_for_message(pointer[0] ? pointer : "(root)", ptr_esc,
				    sizeof ptr_esc);
	head = snprintf(err->message, sizeof err->message, "%s: %s: ",
			file_esc, ptr_esc);
	if (head < 0 || (size_t)head >= sizeof err->message) {
		head = (int)strlen(err->message);
	}
	snprintf(err->message + head, sizeof err->message - (size_t)head, "%s",
		 what);
	err->status = status;
	err->at = true;
	snprintf(err->file, sizeof err->file, "%s", file);
	snprintf(err->pointer, sizeof err->pointer, "%s", pointer);
	err->what = (size_t)head;
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
	if (err->at) {
		/* The words after the place moved right with the text. */
		err->what += strlen(prefix) + 2;
		if (err->what > strlen(err->message)) {
			err->what = strlen(err->message);
		}
	}
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
