/*
 * The one atomic writer of the verbs that draw whole outputs in memory
 * first (`tpsim picture`, `tpsim timeline`); `tpsim run` streams its trace
 * through run.c's temporary file instead.
 */
#include "cli_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tpsim/jsonio.h"

enum tps_status tps_cli_publish(const char *path, const char *data, size_t len,
				const char *noun, FILE *stdout_stream,
				struct tps_error *err)
{
	struct stat st;
	char esc[256], tmp[4096];
	FILE *f;
	int fd;
	mode_t mask;

	if (!path) {
		if (fwrite(data, 1, len, stdout_stream) != len ||
		    fflush(stdout_stream) != 0) {
			return tps_error_set(err, TPS_ERR_IO,
					     "writing the %s: %s", noun,
					     strerror(errno));
		}
		return TPS_OK;
	}
	tps_json_escape_for_message(path, esc, sizeof esc);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		return tps_error_set(
			err, TPS_ERR_IO,
			"%s: is a directory (-o names the %s file)", esc, noun);
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		f = fopen(path, "w");
		if (!f || fwrite(data, 1, len, f) != len) {
			int e = errno;
			if (f) {
				fclose(f);
			}
			return tps_error_set(err, TPS_ERR_IO, "%s: %s", esc,
					     strerror(e));
		}
		if (fclose(f) != 0) {
			return tps_error_set(err, TPS_ERR_IO, "%s: %s", esc,
					     strerror(errno));
		}
		return TPS_OK;
	}
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >=
	    sizeof tmp) {
		return tps_error_set(err, TPS_ERR_IO, "%s: path too long", esc);
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		return tps_error_set(err, TPS_ERR_IO, "%s: cannot write: %s",
				     esc, strerror(errno));
	}
	/* mkstemp makes the file 0600; give it the mode the umask gives
	 * new files, as any output file has. */
	mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return tps_error_set(err, TPS_ERR_IO, "%s: cannot write: %s",
				     esc, strerror(e));
	}
	if (fwrite(data, 1, len, f) != len) {
		int e = errno;
		fclose(f);
		unlink(tmp);
		return tps_error_set(err, TPS_ERR_IO, "%s: %s", esc,
				     strerror(e));
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return tps_error_set(err, TPS_ERR_IO, "%s: %s", esc,
				     strerror(e));
	}
	return TPS_OK;
}
