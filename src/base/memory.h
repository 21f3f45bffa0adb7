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

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* calloc, with large blocks (their own mapping, untouched until written)
 * and any stretch of heap that is new since the last call advised. */
void *tps_memory_calloc(size_t n, size_t size);
/* malloc, likewise (for cJSON's nodes: cJSON_InitHooks). */
void *tps_memory_malloc(size_t size);
/* Hands the heap's free pages back to the kernel (glibc's malloc_trim;
 * elsewhere nothing), after freeing big blocks that nothing reuses soon
 * (a config's text and its explicit values, once echoed): the heap keeps
 * what is freed (tps_memory_tune_process), and the tensors made next need
 * not fit in those holes, which would stay resident for the whole run. */
void tps_memory_release_free(void);

/* bytes of read-only zeros that hold no memory (a private mapping the
 * kernel backs with its zero page; a write faults), or NULL. Freed with
 * tps_memory_zeros_free(p, bytes). */
const void *tps_memory_zeros(size_t bytes);
void tps_memory_zeros_free(const void *p, size_t bytes);

/*
 * The bytes of tensor values a run holds now and the most it has held
 * (`tpsim run --stats`'s "tensors at peak"), one account per run: two runs
 * on two threads of one process count their own tensors only.
 *
 * The account reaches the allocation sites through the thread that
 * allocates, not through their arguments (a tensor is made at some forty
 * places in six layers, none of which is told what run it serves): a run
 * binds its account to its own thread while it runs, and the pool binds
 * the submitting thread's account to each worker for the items it runs
 * (pool.c), so every tensor a run's ranks make is charged to that run.
 * A thread with no account bound charges nothing. A tensor is freed on a
 * thread of the run that made it (a run frees its tensors before it
 * returns). The counts never influence what is computed.
 */
struct tps_memory_account {
	atomic_int_least64_t live, peak;
};

/* Zero live and zero peak. */
void tps_memory_account_init(struct tps_memory_account *account);
/* Makes account (NULL: none) the calling thread's and returns the one it
 * replaces, to be bound again when the caller is done. */
struct tps_memory_account *
tps_memory_account_bind(struct tps_memory_account *account);
/* The calling thread's account; NULL if none is bound. */
struct tps_memory_account *tps_memory_account_bound(void);
/* Adds bytes (negative: freed) to the calling thread's account, if any,
 * raising its peak to live if live is higher. Thread-safe. */
void tps_memory_account_charge(int64_t bytes);
/* The account's bytes held now and at most (thread-safe). */
void tps_memory_account_read(struct tps_memory_account *account, int64_t *live,
			     int64_t *peak);

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
