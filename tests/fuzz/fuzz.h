/*
 * The fuzz harnesses (tests/fuzz/README.md). Each fuzz_<target>.c defines
 * LLVMFuzzerTestOneInput; the same source links either libFuzzer (meson
 * -Dfuzz=true, clang) or replay_main.c, the driver the normal suite uses
 * to replay tests/fuzz/regression/<target>/.
 *
 * A harness returns 0 for every input, accepted or refused; a broken
 * contract (a message over two lines, an exit code other than 0, 1 or 2,
 * an output touched on error) is an abort(), which both drivers report as
 * a crash, with the contract named on stderr.
 */
#ifndef TPSIM_FUZZ_H
#define TPSIM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* /dev/null for writing, opened once (never closed). */
FILE *tps_fuzz_devnull(void);

/*
 * Writes data to this process's scratch file `slot` (0 or 1; under
 * /dev/shm when it exists, else $TMPDIR or /tmp) and returns its path,
 * valid until the next call with the same slot. The files go at exit.
 */
const char *tps_fuzz_scratch(int slot, const uint8_t *data, size_t size);

/* Runs `tpsim ARGS...` (NULL-terminated) with stdout to /dev/null and
 * stderr captured; aborts unless the exit code is 0, 1 or 2. Returns it. */
int tps_fuzz_cli(const char *arg0, ...);

/* Aborts, naming `what`, unless e holds a one-line, non-empty message
 * (docs/design.md section 8: user text echoed in a message is escaped). */
void tps_fuzz_check_error(const char *what, const struct tps_error *e);

/* Aborts with "fuzz: broken contract: <what>" on stderr. */
_Noreturn void tps_fuzz_fail(const char *what, const char *detail);

#endif
