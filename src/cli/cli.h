/*
 * The `tpsim` command line. The only code that writes to stdout/stderr;
 * main() only calls tps_cli_install_signals, then tps_cli_main, and exits
 * with what it returns.
 *
 * Exit codes, like diff: 0 success or match, 1 mismatch (a fixture check
 * failed, or the simulation disagrees with the reference), 2 trouble (usage,
 * bad input, I/O).
 */
#ifndef TPSIM_CLI_H
#define TPSIM_CLI_H

#include <stdio.h>

enum tps_exit {
	TPS_EXIT_OK = 0,
	TPS_EXIT_MISMATCH = 1,
	TPS_EXIT_TROUBLE = 2,
};

/* Runs one command line; out and err stand for stdout and stderr. */
int tps_cli_main(int argc, char **argv, FILE *out, FILE *err);

/*
 * The process's signal dispositions for the command line (cli_output.c),
 * set once by main() before tps_cli_main:
 *  - SIGXFSZ is ignored: past a file-size limit (ulimit -f) a write then
 *    fails with EFBIG, which the verb reports naming its output (exit 2),
 *    instead of the kernel killing the process mid-file.
 *  - SIGTERM, SIGINT and SIGHUP remove the temporary output being written,
 *    if any, then kill the process with the signal's default action.
 *  - SIGBUS (a mapped input file cut short while it is parsed) removes it
 *    too, says so in one line and exits 2; with that handler in place,
 *    tps_json_load maps files (tps_json_load_maps_files), so that a big
 *    config's text is never resident whole.
 * Not called by the test suites, which run tps_cli_main in-process.
 */
void tps_cli_install_signals(void);

#endif
