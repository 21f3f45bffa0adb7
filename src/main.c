#include <stdio.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cJSON.h>

#include "tpsim/cli.h"
#include "tpsim/memory.h"

int main(int argc, char **argv)
{
#ifdef __GLIBC__
	/* A run frees and allocates tensors of the same sizes op after op
	 * (every rank's output, every collective's buffers). glibc would
	 * hand blocks over 128 KiB back to the kernel with munmap and get
	 * fresh ones with mmap, paying a page fault per 4 KiB each time (on
	 * a virtual machine, the larger part of a step). Keeping freed
	 * memory in the heap reuses warm pages; RSS is the run's peak. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	/* The heap grows in 32 MiB steps: each new step gets memory.h's
	 * huge-page advice before anything touches it. */
	mallopt(M_TOP_PAD, 32 << 20);
#endif
	{
		/* A big config is a million cJSON nodes: their heap gets the
		 * huge-page advice too. */
		cJSON_Hooks hooks = {tps_memory_malloc, free};
		cJSON_InitHooks(&hooks);
	}
	return tps_cli_main(argc, argv, stdout, stderr);
}
