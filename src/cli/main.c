#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "memory.h"
#include "tensor.h"

int main(int argc, char **argv)
{
	/* A run allocates and frees tensors of the same sizes op after op,
	 * and a big config is a million JSON nodes: memory.h says how the
	 * process is told to keep and reuse its memory. */
	tps_memory_tune_process();
	/* TPSIM_GEMM=generic|avx2|avx512 forces a GEMM variant
	 * (docs/performance.md). The environment is the process's: main()
	 * reads it, once, and the library reads none. */
	tps_matmul_variant_use(tps_matmul_variant_pick(
		getenv("TPSIM_GEMM"), tps_matmul_cpu_features()));
	tps_cli_install_signals();
	return tps_cli_main(argc, argv, stdout, stderr);
}
