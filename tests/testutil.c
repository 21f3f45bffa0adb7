#include "testutil.h"

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


int tu_run_suite(Suite *suite)
{
	SRunner *sr = srunner_create(suite);
	int failed;
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

const char *tu_source_root(void)
{
	const char *root = getenv("TPSIM_SOURCE_ROOT");
	return root && *root ? root : ".";
}

const char *tu_source_path(const char *relative)
{
	static char buf[PATH_MAX];
	snprintf(buf, sizeof buf, "%s/%s", tu_source_root(), relative);
	return buf;
}

const char *tu_tempdir(void)
{
	static char buf[PATH_MAX];
	const char *base = getenv("TMPDIR");
	snprintf(buf, sizeof buf, "%s/tpsim-test-XXXXXX",
		 base && *base ? base : "/tmp");
	ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp: %s", strerror(errno));
	return buf;
}

void tu_write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

char *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;
	if (!f) {
		return NULL;
	}
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			char *grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = grown;
		}
		size_t got = fread(buf + n, 1, 4096, f);
		n += got;
		if (got == 0) {
			break;
		}
	}
	fclose(f);
	buf[n] = '\0';
	if (len) {
		*len = n;
	}
	return buf;
}

void tu_rmtree(const char *path)
{
	char cmd[PATH_MAX + 32];
	/* Test-only clean-up of a directory this suite created. */
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

const char *tu_comma_locale(const char *dir)
{
	static const char source[] = "LC_NUMERIC\n"
				     "decimal_point \",\"\n"
				     "thousands_sep \"\"\n"
				     "grouping -1\n"
				     "END LC_NUMERIC\n";
	char src[PATH_MAX], cmd[3 * PATH_MAX], before[256];
	const char *loaded;
	snprintf(src, sizeof src, "%s/tpsimcomma.src", dir);
	tu_write_file(src, source, strlen(source));
	/* -c: the other categories are missing on purpose (warnings, exit
	 * status 1); what counts is whether the locale loads. */
	snprintf(cmd, sizeof cmd,
		 "localedef -c -i '%s' '%s/tpsimcomma' >/dev/null 2>&1", src,
		 dir);
	(void)system(cmd);
	ck_assert_int_eq(setenv("LOCPATH", dir, 1), 0);
	snprintf(before, sizeof before, "%s", setlocale(LC_NUMERIC, NULL));
	loaded = setlocale(LC_NUMERIC, "tpsimcomma");
	ck_assert_ptr_nonnull(setlocale(LC_NUMERIC, before));
	ck_assert_msg(loaded != NULL,
		      "localedef made no locale tpsimcomma in %s", dir);
	return "tpsimcomma";
}

const char *tu_latin1_locale(const char *dir)
{
	char cmd[2 * PATH_MAX], before[256];
	const char *loaded;
	/* en_US in ISO-8859-1: its LC_CTYPE calls 0xaa (ª) and 0xc2 (Â)
	 * letters, bytes a UTF-8 "ª" is made of. Needs Debian's locales
	 * package (the quick start's test job installs it). */
	snprintf(cmd, sizeof cmd,
		 "localedef -c -i en_US -f ISO-8859-1 '%s/tpsimlatin1' "
		 ">/dev/null 2>&1",
		 dir);
	(void)system(cmd);
	ck_assert_int_eq(setenv("LOCPATH", dir, 1), 0);
	snprintf(before, sizeof before, "%s", setlocale(LC_CTYPE, NULL));
	loaded = setlocale(LC_CTYPE, "tpsimlatin1");
	ck_assert_ptr_nonnull(setlocale(LC_CTYPE, before));
	ck_assert_msg(loaded != NULL,
		      "localedef made no locale tpsimlatin1 in %s (is the "
		      "locales package installed?)",
		      dir);
	return "tpsimlatin1";
}

int tu_count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++) {
		n += *s == '\n';
	}
	return n;
}
