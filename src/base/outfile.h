/*
 * The one output writer: every verb that writes a file (`tpsim run -o`,
 * `picture`, `timeline`, `view`) writes it through here, so that the same
 * rules hold for all of them (docs/reliability.md, "Outputs are atomic"):
 *
 *  - An output path that is a regular file, or nothing yet, is written to
 *    PATH.tmp.XXXXXX in the same directory and renamed over PATH by
 *    tps_outfile_commit: a failure or a signal leaves no partial file, and
 *    an existing output is only replaced on success.
 *  - No path (stdout), or a path that is not a regular file (/dev/null, a
 *    FIFO: renaming over it would replace the device with a file), is
 *    written to an anonymous temporary file, copied out on commit.
 *  - A directory is refused ("-o names the trace file").
 *  - An output that is one of the inputs (the same file: the same path, a
 *    symbolic link to it or a hard link, compared by st_dev and st_ino) is
 *    refused before anything is written: the output would replace it.
 *
 * The temporary file is created with open(O_CREAT | O_EXCL, 0666), so the
 * kernel gives it the mode fopen would (the umask, and any default ACL of
 * the directory). mkstemp would make it 0600, and restoring the usual mode
 * would need the umask, which can only be read by setting it: process-wide
 * state, racy with other threads. This module never reads or sets it.
 *
 * Signals: this module installs no handler. A caller that wants SIGTERM,
 * SIGINT and SIGHUP to remove the temporary file passes a struct
 * tps_outfile_pending that its handler reads (the CLI's: cli_signals.c).
 * While the named temporary may exist, pending->path holds its name and
 * pending->armed is 1; the handler may unlink pending->path (async-signal-
 * safe) whenever armed is 1. The name is set before the file is created
 * and disarmed after it is renamed or removed, so the handler can at worst
 * unlink a name that no longer exists, never miss the file.
 */
#ifndef TPSIM_OUTFILE_H
#define TPSIM_OUTFILE_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "error.h"

#define TPS_OUTFILE_PATH_MAX 4096

/* The temporary file a signal handler should remove (see above). One per
 * process is enough: a verb writes one output at a time. */
struct tps_outfile_pending {
	volatile sig_atomic_t armed;
	char path[TPS_OUTFILE_PATH_MAX];
};

struct tps_outfile {
	FILE *f;	  /* write the output here, then commit or discard */
	const char *path; /* NULL: the stream */
	FILE *stream;	  /* not owned; where a NULL path goes */
	bool anonymous;	  /* f is a tmpfile() copied out on commit */
	char tmp_path[TPS_OUTFILE_PATH_MAX]; /* the named temporary, or "" */
	char noun[32];			     /* "trace", "SVG" */
	struct tps_outfile_pending *pending; /* may be NULL */
};

/*
 * Opens the output `path` (NULL: `stream`, stdout) for writing. `noun`
 * names the output in messages ("-o names the SVG file"). `inputs` are the
 * n_inputs files the verb read ("-" is standard input): an output that is
 * the same regular file as one of them is refused. pending may be NULL.
 * On error: TPS_ERR_IO (a directory, a file that cannot be created) or
 * TPS_ERR_USAGE (the output is an input), a message naming the path, and
 * nothing created.
 */
enum tps_status tps_outfile_open(struct tps_outfile *o, const char *path,
				 FILE *stream, const char *noun,
				 const char *const *inputs, int n_inputs,
				 struct tps_outfile_pending *pending,
				 struct tps_error *err);

/*
 * Publishes what was written to o->f: renames the temporary over the path,
 * or copies it to the stream or the device. On error (a write that failed
 * earlier included: EFBIG past a file-size limit, ENOSPC) TPS_ERR_IO with
 * a message naming the output, and the temporary removed; the existing
 * output, if any, is kept. Either way o is closed.
 */
enum tps_status tps_outfile_commit(struct tps_outfile *o,
				   struct tps_error *err);

/* Closes o and removes the temporary: nothing is published. A no-op on a
 * closed or never opened (zeroed) outfile. */
void tps_outfile_discard(struct tps_outfile *o);

/* The output's name for messages: the path, escaped, or "stdout". */
const char *tps_outfile_name(const struct tps_outfile *o, char *buf,
			     size_t size);

/*
 * Writes len bytes to `path` (NULL: stream) as one output: open, write,
 * commit. For the verbs that make their whole output in memory first.
 */
enum tps_status tps_outfile_write_all(const char *path, FILE *stream,
				      const char *noun, const char *data,
				      size_t len, const char *const *inputs,
				      int n_inputs,
				      struct tps_outfile_pending *pending,
				      struct tps_error *err);

#endif
