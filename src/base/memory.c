/* madvise, MADV_HUGEPAGE and sbrk are Linux and BSD, beyond POSIX. */
#define _DEFAULT_SOURCE
#include "memory.h"

#include <cJSON.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

/*
 * Large blocks are their own mapping (glibc mmaps them zeroed, untouched
 * until written), advised whole. Smaller ones come from the heap, which
 * grows by brk (main() asks glibc for 32 MiB at a time); a new stretch of
 * heap is advised when a block first lands in it, before the caller writes
 * (calloc does not touch memory fresh from the kernel). Under a sanitizer
 * malloc is not glibc's and no stretch of heap ever appears: no advice.
 */
#define HUGE_BYTES ((uintptr_t)2 << 20)

static void advise_huge(uintptr_t lo, uintptr_t hi)
{
#ifdef MADV_HUGEPAGE
	uintptr_t page = 4096;
	lo = (lo + page - 1) & ~(page - 1);
	if (hi > lo) {
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
	}
#else
	(void)lo;
	(void)hi;
#endif
}

/* The top of the heap the advice has reached. */
static atomic_uintptr_t advised_heap_top;

static void advise_heap_growth(uintptr_t block)
{
	uintptr_t top = (uintptr_t)sbrk(0);
	uintptr_t seen = atomic_load(&advised_heap_top);
	if (top == (uintptr_t)-1 || top <= seen || block >= top ||
	    !atomic_compare_exchange_strong(&advised_heap_top, &seen, top)) {
		return;
	}
	/* The first time, from the block's own 2 MiB boundary. */
	advise_huge(seen ? seen : block & ~(HUGE_BYTES - 1), top);
}

static void *advised(void *p, size_t bytes)
{
	if (p) {
		if (bytes >= HUGE_BYTES) {
			advise_huge((uintptr_t)p, (uintptr_t)p + bytes);
		}
		advise_heap_growth((uintptr_t)p);
	}
	return p;
}

void *tps_memory_calloc(size_t n, size_t size)
{
	/* calloc checks n * size for overflow. */
	return advised(calloc(n, size), n * size);
}

void *tps_memory_malloc(size_t size)
{
	return advised(malloc(size), size);
}

void tps_memory_release_free(void)
{
#ifdef __GLIBC__
	(void)malloc_trim(0);
#endif
}

/* The account of the run this thread works for (memory.h). Per thread, so
 * concurrent runs never share one. */
static _Thread_local struct tps_memory_account *bound_account;

void tps_memory_account_init(struct tps_memory_account *account)
{
	atomic_init(&account->live, 0);
	atomic_init(&account->peak, 0);
}

struct tps_memory_account *
tps_memory_account_bind(struct tps_memory_account *account)
{
	struct tps_memory_account *previous = bound_account;
	bound_account = account;
	return previous;
}

struct tps_memory_account *tps_memory_account_bound(void)
{
	return bound_account;
}

void tps_memory_account_charge(int64_t bytes)
{
	struct tps_memory_account *a = bound_account;
	int64_t live, peak;
	if (!a) {
		return;
	}
	live = atomic_fetch_add(&a->live, bytes) + bytes;
	peak = atomic_load(&a->peak);
	while (live > peak &&
	       !atomic_compare_exchange_weak(&a->peak, &peak, live)) {
	}
}

void tps_memory_account_read(struct tps_memory_account *account, int64_t *live,
			     int64_t *peak)
{
	*live = atomic_load(&account->live);
	*peak = atomic_load(&account->peak);
}

void tps_memory_tune_process(void)
{
	cJSON_Hooks hooks = {tps_memory_malloc, free};
#ifdef __GLIBC__
	/* glibc would hand blocks over 128 KiB back to the kernel with
	 * munmap and get fresh ones with mmap, a page fault per 4 KiB each
	 * time (on a virtual machine, the larger part of a step). */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_TOP_PAD, 32 << 20);
#endif
	cJSON_InitHooks(&hooks);
}

const void *tps_memory_zeros(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void tps_memory_zeros_free(const void *p, size_t bytes)
{
	if (p) {
		munmap((void *)(uintptr_t)p, bytes);
	}
}
