/* Helpers shared by the Check suites. */
#ifndef TPSIM_TESTUTIL_H
#define TPSIM_TESTUTIL_H

#include <stddef.h>

#include <check.h>

/* Runs a suite (it is freed) and returns the process exit status: every
 * suite's main() is `return tu_run_suite(x_suite());`. */
int tu_run_suite(Suite *suite);
/* The source tree root (env TPSIM_SOURCE_ROOT, set by meson; "." otherwise). */
const char *tu_source_root(void);
/* Joins the source root and a relative path into a static buffer. */
const char *tu_source_path(const char *relative);
/* Creates a fresh temporary directory (under $TMPDIR or /tmp) and returns its
 * path in a static buffer; removed by tu_rmtree(). */
const char *tu_tempdir(void);
/* Writes len bytes to path; aborts the test on failure. */
void tu_write_file(const char *path, const char *data, size_t len);
/* Reads a whole file into a malloc'd NUL-terminated buffer (caller frees);
 * NULL if it cannot be read. */
char *tu_read_file(const char *path, size_t *len);
/* Removes a directory tree created by tu_tempdir(). */
void tu_rmtree(const char *path);

/* A locale whose decimal point is a comma, as a program embedding tpsim
 * may set (de_DE's): "tpsimcomma", LC_NUMERIC alone, compiled by libc's
 * own localedef into dir, which LOCPATH then names for the rest of the
 * process, for setlocale(LC_NUMERIC, ...) to find it there (glibc's
 * newlocale would leak LOCPATH's copy at each call). Fails the test when
 * localedef cannot make it. Returns its name. */
const char *tu_comma_locale(const char *dir);
/* The same for LC_CTYPE: an 8-bit locale (en_US, ISO-8859-1) whose
 * isalpha takes bytes of UTF-8 letters such as "ª" (c2 aa). */
const char *tu_latin1_locale(const char *dir);

/* What one tps_cli_main call printed and returned. */
struct tu_result {
	int rc;
	char *out, *err;
	size_t out_len, err_len;
};
/* tps_cli_main with argv[0] "tpsim" and the argc - 1 strings that follow,
 * stdout and stderr captured (free with tu_result_free). */
struct tu_result tu_cli(int argc, ...);
void tu_result_free(struct tu_result *r);
/* The number of '\n' in s. */
int tu_count_lines(const char *s);

#endif
