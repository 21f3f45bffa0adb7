/*
 * Reading input files whole, with the size limit checked before reading
 * (docs/design.md section 8); tps_json_load reads and parses.
 *
 * tps_json_load maps a regular file rather than read it, when the process
 * asks (tps_json_load_maps_files: `tpsim` does): the parser tells
 * as it goes which text it is done with (tps_json_parse_releasing), and
 * those pages are dropped, so a big config's text is never resident all at
 * once beside the tree it becomes. A private read-only mapping of a file
 * reads the file again if a dropped page is touched (an error's line and
 * column are counted from the start). Standard input, and a file the
 * kernel will not map, are read whole as before.
 */
/* madvise and MADV_DONTNEED are Linux and BSD, beyond POSIX. */
#define _DEFAULT_SOURCE
#include "jsonio_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define STDIN_NAME "<stdin>"
#define READ_CHUNK ((size_t)64 << 10)

/* " (16 MiB)" for round limits, "" otherwise. */
static void size_suffix(size_t n, char *buf, size_t size)
{
	static const char *const units[] = {"GiB", "MiB", "KiB"};
	static const unsigned shifts[] = {30, 20, 10};

	buf[0] = '\0';
	for (size_t i = 0; i < 3; i++) {
		size_t unit = (size_t)1 << shifts[i];
		if (n >= unit && n % unit == 0) {
			snprintf(buf, size, " (%zu %s)", n / unit, units[i]);
			return;
		}
	}
}

static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode)) {
		return "a directory";
	}
	if (S_ISFIFO(mode)) {
		return "a FIFO";
	}
	if (S_ISCHR(mode)) {
		return "a character device";
	}
	if (S_ISBLK(mode)) {
		return "a block device";
	}
	if (S_ISSOCK(mode)) {
		return "a socket";
	}
	return "not a file";
}

/* An input opened for reading and checked: a regular file within the
 * limit, or standard input. */
struct input {
	int fd;
	bool is_stdin;
	struct stat sb;
	size_t max_bytes;
	char name[256];	 /* escaped for messages */
	char suffix[32]; /* the limit in round units: " (16 MiB)", or "" */
};

/* Opens and checks path ("-": standard input). On error the message names
 * the file, and nothing is left open. */
static enum tps_status input_open(const char *path, size_t max_bytes,
				  struct input *in, struct tps_error *err)
{
	enum tps_status st = TPS_OK;

	assert(path);
	in->is_stdin = strcmp(path, "-") == 0;
	in->fd = -1;
	tps_json_escape_for_message(in->is_stdin ? STDIN_NAME : path, in->name,
				    sizeof in->name);
	/* Leaves room for buf[max + 1] and the NUL without overflow. */
	if (max_bytes > SIZE_MAX - 2) {
		max_bytes = SIZE_MAX - 2;
	}
	in->max_bytes = max_bytes;
	size_suffix(max_bytes, in->suffix, sizeof in->suffix);

	if (in->is_stdin) {
		in->fd = STDIN_FILENO;
	} else {
		/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is
		 * refused below, and has no effect on regular files. */
		in->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (in->fd < 0) {
			st = tps_error_set(err, TPS_ERR_IO, "%s: %s", in->name,
					   strerror(errno));
			goto out;
		}
	}
	if (fstat(in->fd, &in->sb) != 0) {
		st = tps_error_set(err, TPS_ERR_IO, "%s: %s", in->name,
				   strerror(errno));
		goto out;
	}
	if (!in->is_stdin && !S_ISREG(in->sb.st_mode)) {
		st = tps_error_set(err, TPS_ERR_IO,
				   "%s: not a regular file (%s)", in->name,
				   file_kind(in->sb.st_mode));
		goto out;
	}
	if (S_ISREG(in->sb.st_mode) &&
	    (in->sb.st_size < 0 || (uintmax_t)in->sb.st_size > max_bytes)) {
		st = tps_error_set(err, TPS_ERR_LIMIT,
				   "%s: file is %jd bytes, over the limit of "
				   "%zu bytes%s",
				   in->name, (intmax_t)in->sb.st_size,
				   max_bytes, in->suffix);
		goto out;
	}
out:
	if (st != TPS_OK && in->fd >= 0 && !in->is_stdin) {
		close(in->fd);
		in->fd = -1;
	}
	return st;
}

static void input_close(struct input *in)
{
	if (in->fd >= 0 && !in->is_stdin) {
		close(in->fd);
	}
	in->fd = -1;
}

/* Reads an opened input to its end into a new NUL-terminated buffer
 * (tps_json_read_file's contract). */
static enum tps_status input_read(struct input *in, char **out, size_t *out_len,
				  struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	size_t max_bytes = in->max_bytes;
	char *buf = NULL;
	size_t cap, n = 0;

	if (S_ISREG(in->sb.st_mode)) {
		/* +2: one for the NUL, one so EOF is seen without growing. */
		cap = (size_t)in->sb.st_size + 2;
	} else {
		cap = READ_CHUNK < max_bytes + 2 ? READ_CHUNK : max_bytes + 2;
	}
	buf = malloc(cap);
	if (!buf) {
		st = tps_error_set(err, TPS_ERR_NOMEM,
				   "%s: out of memory reading %zu bytes",
				   in->name, cap);
		goto out;
	}
	for (;;) {
		ssize_t got;

		if (n > max_bytes) {
			/* Pipes (and files growing while read) end up here. */
			st = tps_error_set(err, TPS_ERR_LIMIT,
					   "%s: input is over the limit of %zu "
					   "bytes%s",
					   in->name, max_bytes, in->suffix);
			goto out;
		}
		if (n == cap - 1) {
			size_t grown = cap <= (max_bytes + 2) / 2
					       ? cap * 2
					       : max_bytes + 2;
			char *bigger = realloc(buf, grown);
			if (!bigger) {
				st = tps_error_set(err, TPS_ERR_NOMEM,
						   "%s: out of memory reading "
						   "%zu bytes",
						   in->name, grown);
				goto out;
			}
			buf = bigger;
			cap = grown;
		}
		got = read(in->fd, buf + n, cap - 1 - n);
		if (got < 0) {
			if (errno == EINTR) {
				continue;
			}
			st = tps_error_set(err, TPS_ERR_IO,
					   "%s: read error: %s", in->name,
					   strerror(errno));
			goto out;
		}
		if (got == 0) {
			break;
		}
		n += (size_t)got;
	}
	buf[n] = '\0';
	*out = buf;
	*out_len = n;
	buf = NULL;
out:
	free(buf);
	return st;
}

enum tps_status tps_json_read_file(const char *path, size_t max_bytes,
				   char **out, size_t *out_len,
				   struct tps_error *err)
{
	struct input in;
	enum tps_status st;

	assert(path && out && out_len);
	st = input_open(path, max_bytes, &in, err);
	if (st == TPS_OK) {
		st = input_read(&in, out, out_len, err);
	}
	input_close(&in);
	return st;
}

/* tps_json_load_maps_files: the process's choice, as the GEMM variant is
 * (docs/architecture.md, "No process-wide state"); speed and memory only,
 * the same trees either way. */
static atomic_bool maps_files;

void tps_json_load_maps_files(bool on)
{
	atomic_store_explicit(&maps_files, on, memory_order_relaxed);
}

/* A file's text mapped read-only, and how much of its start has been
 * handed back to the kernel. */
struct mapped_text {
	const char *base;
	size_t len;
	size_t dropped; /* a multiple of the page size */
};

/* The parser will read nothing before upto again (but an error's line
 * and column): the whole pages before it go. Advice only: if it fails,
 * they stay resident, as read text would. */
static void drop_consumed(void *ctx, const char *upto)
{
	struct mapped_text *m = ctx;
	long page = sysconf(_SC_PAGESIZE);
	size_t done;

	assert(upto >= m->base && upto <= m->base + m->len);
	if (page <= 0) {
		return;
	}
	done = (size_t)(upto - m->base) / (size_t)page * (size_t)page;
	if (done > m->dropped) {
		(void)madvise((void *)(uintptr_t)(m->base + m->dropped),
			      done - m->dropped, MADV_DONTNEED);
		m->dropped = done;
	}
}

/* Parses an opened regular file through a mapping (drop_consumed); false,
 * with nothing done, when it cannot be mapped (an empty file, a file
 * system without mmap), for the caller to read it instead. */
static bool parse_mapped(struct input *in, const char *name,
			 const char *pack_key, cJSON **out, enum tps_status *st,
			 struct tps_error *err)
{
	struct mapped_text m = {0};
	void *map;

	if (!atomic_load_explicit(&maps_files, memory_order_relaxed) ||
	    in->is_stdin || !S_ISREG(in->sb.st_mode) || in->sb.st_size <= 0) {
		return false;
	}
	m.len = (size_t)in->sb.st_size;
	map = mmap(NULL, m.len, PROT_READ, MAP_PRIVATE, in->fd, 0);
	if (map == MAP_FAILED) {
		return false;
	}
	m.base = map;
	*st = tps_json_parse_releasing(name, m.base, m.len, pack_key,
				       drop_consumed, &m, out, err);
	munmap(map, m.len);
	return true;
}

enum tps_status tps_json_load(const char *path, size_t max_bytes, cJSON **out,
			      struct tps_error *err)
{
	return tps_json_load_packed(path, max_bytes, NULL, out, err);
}

enum tps_status tps_json_load_packed(const char *path, size_t max_bytes,
				     const char *pack_key, cJSON **out,
				     struct tps_error *err)
{
	const char *name;
	struct input in;
	enum tps_status st;
	char *buf = NULL;
	size_t len = 0;

	assert(path && out);
	name = strcmp(path, "-") == 0 ? STDIN_NAME : path;
	st = input_open(path, max_bytes, &in, err);
	if (st == TPS_OK && !parse_mapped(&in, name, pack_key, out, &st, err)) {
		st = input_read(&in, &buf, &len, err);
		if (st == TPS_OK) {
			st = tps_json_parse_strict_packed(name, buf, len,
							  pack_key, out, err);
		}
		free(buf);
	}
	input_close(&in);
	return st;
}
