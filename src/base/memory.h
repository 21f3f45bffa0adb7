/*
 * Memory that asks for transparent huge pages.
 *
 * A first touch of fresh memory faults once per 4 KiB page; on a virtual
 * machine each fault costs tens of microseconds, and a run touches every
 * rank's fresh activations and, reading a big config, a million JSON
 * nodes. With MADV_HUGEPAGE the kernel faults once per 2 MiB. The advice
 * changes speed only, never a value.
 */
#ifndef TPSIM_MEMORY_H
#define TPSIM_MEMORY_H

#include <stddef.h>

/* calloc, with large blocks (their own mapping, untouched until written)
 * and any stretch of heap that is new since the last call advised. */
void *tps_memory_calloc(size_t n, size_t size);
/* malloc, likewise (for cJSON's nodes: cJSON_InitHooks). */
void *tps_memory_malloc(size_t size);

/*
 * The process-wide settings a run wants, for main() (and the benchmark
 * tools, to load as tpsim does); the library itself never calls it:
 * - glibc keeps freed memory in its heap instead of unmapping it, so that
 *   each op's tensors reuse the last op's warm pages (RSS is the peak);
 * - the heap grows 32 MiB at a time, each stretch advised as it appears;
 * - cJSON allocates its nodes with tps_memory_malloc.
 */
void tps_memory_tune_process(void);

#endif
