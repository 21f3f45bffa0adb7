/*
 * The public API's errors, statuses and version (include/tpsim.h), and the
 * helpers its files share (api_internal.h): errors handed to the caller,
 * output made whole in memory, streams to a write callback.
 */
#define _GNU_SOURCE /* fopencookie */
#include "api_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "tps_version.h"

/* The library's statuses are the API's, value for value. */
static_assert((int)TPSIM_OK == (int)TPS_OK, "status");
static_assert((int)TPSIM_ERR_INPUT == (int)TPS_ERR_INPUT, "status");
static_assert((int)TPSIM_ERR_IO == (int)TPS_ERR_IO, "status");
static_assert((int)TPSIM_ERR_SHAPE == (int)TPS_ERR_SHAPE, "status");
static_assert((int)TPSIM_ERR_LIMIT == (int)TPS_ERR_LIMIT, "status");
static_assert((int)TPSIM_ERR_NOMEM == (int)TPS_ERR_NOMEM, "status");
static_assert((int)TPSIM_ERR_NUMERIC == (int)TPS_ERR_NUMERIC, "status");
static_assert((int)TPSIM_ERR_UNSUPPORTED == (int)TPS_ERR_UNSUPPORTED, "status");
static_assert((int)TPSIM_ERR_USAGE == (int)TPS_ERR_USAGE, "status");

struct tpsim_error {
	enum tpsim_status status;
	char *message;
	char *file, *pointer; /* NULL: at no place in a document */
	const char *what;     /* into message */
};

/* What a caller gets when even its error cannot be allocated: never
 * freed (tpsim_error_free knows it). */
static char nomem_text[] = "out of memory";
static struct tpsim_error nomem_error = {TPSIM_ERR_NOMEM, nomem_text, NULL,
					 NULL, nomem_text};

const char *tpsim_version(void)
{
	return TPS_VERSION;
}

const char *tpsim_status_name(enum tpsim_status status)
{
	if (status == TPSIM_ERR_MISUSE) {
		return "API misuse";
	}
	if ((int)status < (int)TPSIM_OK || (int)status > (int)TPSIM_ERR_USAGE) {
		return "unknown status";
	}
	return tps_status_name((enum tps_status)status);
}

enum tpsim_status tps_api_status(enum tps_status st)
{
	return (enum tpsim_status)st;
}

char *tps_api_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *copy = malloc(n);
	if (copy) {
		memcpy(copy, s, n);
	}
	return copy;
}

enum tpsim_status tps_api_fail(struct tpsim_error **error,
			       const struct tps_error *err)
{
	enum tpsim_status status = tps_api_status(err->status);
	struct tpsim_error *e;

	if (!error) {
		return status;
	}
	e = calloc(1, sizeof *e);
	if (!e || !(e->message = tps_api_strdup(err->message))) {
		free(e);
		*error = &nomem_error;
		return status;
	}
	e->status = status;
	e->what = e->message;
	if (err->at) {
		e->file = tps_api_strdup(err->file);
		e->pointer = tps_api_strdup(err->pointer);
		if (!e->file || !e->pointer) {
			tpsim_error_free(e);
			*error = &nomem_error;
			return status;
		}
		e->what = e->message + (err->what < strlen(e->message)
						? err->what
						: strlen(e->message));
	}
	*error = e;
	return status;
}

enum tpsim_status tps_api_misuse(struct tpsim_error **error,
				 const char *function, const char *argument)
{
	struct tps_error err = {0};
	tps_error_set(&err, TPS_ERR_USAGE, "%s: %s is NULL", function,
		      argument);
	err.status = (enum tps_status)TPSIM_ERR_MISUSE;
	return tps_api_fail(error, &err);
}

enum tpsim_status tpsim_error_status(const struct tpsim_error *e)
{
	return e ? e->status : TPSIM_ERR_MISUSE;
}

const char *tpsim_error_message(const struct tpsim_error *e)
{
	return e ? e->message : "";
}

const char *tpsim_error_file(const struct tpsim_error *e)
{
	return e ? e->file : NULL;
}

const char *tpsim_error_pointer(const struct tpsim_error *e)
{
	return e ? e->pointer : NULL;
}

const char *tpsim_error_what(const struct tpsim_error *e)
{
	return e ? e->what : "";
}

void tpsim_error_free(struct tpsim_error *e)
{
	if (!e || e == &nomem_error) {
		return;
	}
	free(e->message);
	free(e->file);
	free(e->pointer);
	free(e);
}

/* ---- output ----------------------------------------------------------- */

struct sink {
	tpsim_write_fn write;
	void *ctx;
};

static ssize_t sink_write(void *cookie, const char *data, size_t len)
{
	struct sink *s = cookie;
	/* A short count makes stdio report a write error (ferror). */
	return s->write(s->ctx, data, len) == 0 ? (ssize_t)len : -1;
}

static int sink_close(void *cookie)
{
	free(cookie);
	return 0;
}

FILE *tps_api_stream(tpsim_write_fn write, void *ctx)
{
	cookie_io_functions_t io = {NULL, sink_write, NULL, sink_close};
	struct sink *s = malloc(sizeof *s);
	FILE *f;

	if (!s) {
		return NULL;
	}
	s->write = write;
	s->ctx = ctx;
	f = fopencookie(s, "w", io);
	if (!f) {
		free(s);
	}
	return f;
}

enum tpsim_status tps_api_write_rendered(tps_api_render_fn render,
					 const void *arg, tpsim_write_fn write,
					 void *ctx, struct tpsim_error **error)
{
	struct tps_error err = {0};
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	enum tps_status st;
	bool made;

	if (!mem) {
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	st = render(mem, arg, &err);
	/* fclose whatever happened: it owns the stream. */
	made = !ferror(mem);
	made = fclose(mem) == 0 && made;
	if (st == TPS_OK && !made) {
		st = tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
	}
	/* Handed over in pieces of at most 1 MiB: a callback that copies
	 * need not take a whole page of a large trace at once. */
	for (size_t at = 0; st == TPS_OK && at < len;) {
		size_t n = len - at < ((size_t)1 << 20) ? len - at
							: (size_t)1 << 20;
		if (write(ctx, text + at, n) != 0) {
			st = tps_error_set(&err, TPS_ERR_IO,
					   "the write callback failed");
		}
		at += n;
	}
	free(text);
	return st == TPS_OK ? TPSIM_OK : tps_api_fail(error, &err);
}
