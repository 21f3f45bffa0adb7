#include <stdio.h>

#include "cli.h"
#include "memory.h"

int main(int argc, char **argv)
{
	/* A run allocates and frees tensors of the same sizes op after op,
	 * and a big config is a million JSON nodes: memory.h says how the
	 * process is told to keep and reuse its memory. */
	tps_memory_tune_process();
	tps_cli_install_signals();
	return tps_cli_main(argc, argv, stdout, stderr);
}
