/* What the harnesses share: scratch files, /dev/null, the CLI with its
 * exit-code contract, and the one-line-message contract. */
#include "fuzz.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* tpsim's verbs read files: each input goes to one of two scratch files
 * (a check needs a trace and a fixture at once). */
#define SCRATCH_SLOTS 2
static char scratch_path[SCRATCH_SLOTS][4096];

_Noreturn void tps_fuzz_fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz: broken contract: %s%s%s\n", what,
		detail ? ": " : "", detail ? detail : "");
	abort();
}

FILE *tps_fuzz_devnull(void)
{
	static FILE *devnull;
	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		if (!devnull) {
			tps_fuzz_fail("cannot open /dev/null", NULL);
		}
	}
	return devnull;
}

static void remove_scratch(void)
{
	for (int i = 0; i < SCRATCH_SLOTS; i++) {
		if (scratch_path[i][0]) {
			unlink(scratch_path[i]);
		}
	}
}

const char *tps_fuzz_scratch(int slot, const uint8_t *data, size_t size)
{
	char *path = scratch_path[slot];
	FILE *f;
	if (!path[0]) {
		struct stat st;
		const char *dir = getenv("TMPDIR");
		if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
		    access("/dev/shm", W_OK) == 0) {
			dir = "/dev/shm";
		} else if (!dir || !dir[0]) {
			dir = "/tmp";
		}
		snprintf(path, sizeof scratch_path[slot],
			 "%s/tpsim-fuzz-%ld-%d.json", dir, (long)getpid(),
			 slot);
		if (slot == 0) {
			atexit(remove_scratch);
		}
	}
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
		tps_fuzz_fail("cannot write the scratch file", path);
	}
	return path;
}

int tps_fuzz_cli(const char *arg0, ...)
{
	char *argv[16];
	int argc = 0, rc;
	va_list ap;
	va_start(ap, arg0);
	for (const char *a = arg0; a; a = va_arg(ap, const char *)) {
		if (argc == 15) {
			tps_fuzz_fail("too many arguments", arg0);
		}
		argv[argc++] = (char *)a;
	}
	va_end(ap);
	argv[argc] = NULL;
	rc = tps_cli_main(argc, argv, tps_fuzz_devnull(), tps_fuzz_devnull());
	if (rc != TPS_EXIT_OK && rc != TPS_EXIT_MISMATCH &&
	    rc != TPS_EXIT_TROUBLE) {
		tps_fuzz_fail("tpsim exited with a code other than 0, 1, 2",
			      argv[1]);
	}
	return rc;
}

void tps_fuzz_check_error(const char *what, const struct tps_error *e)
{
	size_t len = strnlen(e->message, sizeof e->message);
	if (len == 0) {
		tps_fuzz_fail("an error without a message", what);
	}
	if (len == sizeof e->message) {
		tps_fuzz_fail("an error message without its NUL", what);
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)e->message[i];
		unsigned char next = (unsigned char)e->message[i + 1];
		/* C0, DEL and C1 (U+0080..U+009F, 0xC2 0x80..0x9F) */
		if (c < 0x20 || c == 0x7f ||
		    (c == 0xc2 && next >= 0x80 && next <= 0x9f)) {
			fprintf(stderr, "fuzz: message: %s\n", e->message);
			tps_fuzz_fail("a control character in an error message",
				      what);
		}
	}
}
