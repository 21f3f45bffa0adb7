/*
 * Reading input files whole, with the size limit checked before reading
 * (docs/design.md section 8); tps_json_load reads and parses.
 */
#include "jsonio_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

enum tps_status tps_json_read_file(const char *path, size_t max_bytes,
				   char **out, size_t *out_len,
				   struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	bool is_stdin;
	char name[256];
	char suffix[32];
	struct stat sb;
	char *buf = NULL;
	size_t cap, n = 0;
	int fd = -1;

	assert(path && out && out_len);
	is_stdin = strcmp(path, "-") == 0;
	tps_json_escape_for_message(is_stdin ? STDIN_NAME : path, name,
				    sizeof name);
	/* Leaves room for buf[max + 1] and the NUL without overflow. */
	if (max_bytes > SIZE_MAX - 2) {
		max_bytes = SIZE_MAX - 2;
	}
	size_suffix(max_bytes, suffix, sizeof suffix);

	if (is_stdin) {
		fd = STDIN_FILENO;
	} else {
		/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is
		 * refused below, and has no effect on regular files. */
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			st = tps_error_set(err, TPS_ERR_IO, "%s: %s", name,
					   strerror(errno));
			goto out;
		}
	}
	if (fstat(fd, &sb) != 0) {
		st = tps_error_set(err, TPS_ERR_IO, "%s: %s", name,
				   strerror(errno));
		goto out;
	}
	if (!is_stdin && !S_ISREG(sb.st_mode)) {
		st = tps_error_set(err, TPS_ERR_IO,
				   "%s: not a regular file (%s)", name,
				   file_kind(sb.st_mode));
		goto out;
	}
	if (S_ISREG(sb.st_mode)) {
		if (sb.st_size < 0 || (uintmax_t)sb.st_size > max_bytes) {
			st = tps_error_set(err, TPS_ERR_LIMIT,
					   "%s: file is %jd bytes, over the "
					   "limit of %zu bytes%s",
					   name, (intmax_t)sb.st_size,
					   max_bytes, suffix);
			goto out;
		}
		/* +2: one for the NUL, one so EOF is seen without growing. */
		cap = (size_t)sb.st_size + 2;
	} else {
		cap = READ_CHUNK < max_bytes + 2 ? READ_CHUNK : max_bytes + 2;
	}
	buf = malloc(cap);
	if (!buf) {
		st = tps_error_set(err, TPS_ERR_NOMEM,
				   "%s: out of memory reading %zu bytes", name,
				   cap);
		goto out;
	}
	for (;;) {
		ssize_t got;

		if (n > max_bytes) {
			/* Pipes (and files growing while read) end up here. */
			st = tps_error_set(err, TPS_ERR_LIMIT,
					   "%s: input is over the limit of %zu "
					   "bytes%s",
					   name, max_bytes, suffix);
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
						   name, grown);
				goto out;
			}
			buf = bigger;
			cap = grown;
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got < 0) {
			if (errno == EINTR) {
				continue;
			}
			st = tps_error_set(err, TPS_ERR_IO,
					   "%s: read error: %s", name,
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
	if (fd >= 0 && !is_stdin) {
		close(fd);
	}
	free(buf);
	return st;
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
	enum tps_status st;
	char *buf = NULL;
	size_t len = 0;

	assert(path && out);
	st = tps_json_read_file(path, max_bytes, &buf, &len, err);
	if (st != TPS_OK) {
		return st;
	}
	st = tps_json_parse_strict_packed(strcmp(path, "-") == 0 ? STDIN_NAME
								 : path,
					  buf, len, pack_key, out, err);
	free(buf);
	return st;
}
