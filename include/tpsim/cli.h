/*
 * The `tpsim` command line. The only code that writes to stdout/stderr;
 * main() only calls tps_cli_main and exits with what it returns.
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

#endif
