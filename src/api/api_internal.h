/*
 * What the public API's files share (api_*.c; include/tpsim.h is the
 * API). Not installed.
 */
#ifndef TPSIM_API_INTERNAL_H
#define TPSIM_API_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "error.h"
#include "tpsim.h"

/* A parsed config: its text, kept to be run (tps_run parses it again,
 * so that a const config runs on any number of threads), and its spec
 * (for comm). */
struct tpsim_config {
	char *name; /* the path, or the name given with the text */
	bool from_file;
	char *text;
	size_t len;
	struct tps_config_var vars[TPS_CONFIG_MAX_VARS];
	int n_vars;
	struct tps_run_spec spec;
};

/* A read trace: the validated tree, and the text it was read from (the
 * view embeds it). */
struct tpsim_trace {
	char *name;
	cJSON *tree;
	char *text;
	size_t len;
};

/* Hands err to the caller as a new tpsim_error in *error (when error is
 * not NULL); returns err's status. */
enum tpsim_status tps_api_fail(struct tpsim_error **error,
			       const struct tps_error *err);

/* TPSIM_ERR_MISUSE: "<function>: <argument> is NULL". */
enum tpsim_status tps_api_misuse(struct tpsim_error **error,
				 const char *function, const char *argument);

/* A status of the library's, as the API's enum (the same values). */
enum tpsim_status tps_api_status(enum tps_status st);

/*
 * Writes what render puts on a stream through write(ctx, ...), only when
 * render succeeded: the output is made whole in memory first, so a
 * failure writes nothing. A write that fails is TPS_ERR_IO.
 */
typedef enum tps_status (*tps_api_render_fn)(FILE *out, const void *arg,
					     struct tps_error *err);
enum tpsim_status tps_api_write_rendered(tps_api_render_fn render,
					 const void *arg, tpsim_write_fn write,
					 void *ctx, struct tpsim_error **error);

/* A stream whose writes go to write(ctx, ...) (fopencookie); NULL without
 * memory. A failed write makes the stream's writes fail (ferror). */
FILE *tps_api_stream(tpsim_write_fn write, void *ctx);

/* A copy of s (NULL without memory). */
char *tps_api_strdup(const char *s);

#endif
