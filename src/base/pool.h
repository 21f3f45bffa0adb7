/*
 * A fixed pool of threads that runs independent items concurrently: the
 * simulated ranks of a step, the column blocks of a reference matmul.
 *
 * Determinism comes from what the items do, not from the pool: an item
 * writes only memory no other item of the same call touches, so the result
 * is the same bytes for any thread count and any schedule. Reductions
 * across items (sums over ranks) are never done inside the pool; callers
 * do them afterwards in ascending order.
 *
 * tps_pool_for on a NULL pool, on a pool of one thread, or from inside an
 * item (nested) runs the items on the calling thread in ascending order.
 *
 * Every thread runs a call's items with the calling thread's memory
 * account bound (memory.h), so the tensors a worker makes are charged to
 * the run that handed it the work.
 */
#ifndef TPSIM_POOL_H
#define TPSIM_POOL_H

#include <stdint.h>

#include "error.h"

#define TPS_POOL_MAX_THREADS 256

struct tps_pool;

typedef void (*tps_pool_fn)(void *ctx, int64_t item);

/* A pool of `threads` threads (1..TPS_POOL_MAX_THREADS), the caller of
 * tps_pool_for being one of them. On error *out is untouched. */
enum tps_status tps_pool_new(struct tps_pool **out, int threads,
			     struct tps_error *err);
void tps_pool_free(struct tps_pool *pool);

/* Threads the pool runs items on; 1 for NULL. */
int tps_pool_threads(const struct tps_pool *pool);
/* Threads a tps_pool_for called from here would use: 1 inside an item
 * (nested calls run inline), else tps_pool_threads. Work that is cut into
 * blocks only to share it out asks this before cutting. */
int tps_pool_threads_here(const struct tps_pool *pool);

/* The machine's online cores (at least 1, at most TPS_POOL_MAX_THREADS). */
int tps_pool_default_threads(void);

/* Runs fn(ctx, i) once for each i in [0, n) and returns when all are done.
 * Items are claimed in ascending order, one at a time, by whichever thread
 * is free. */
void tps_pool_for(struct tps_pool *pool, int64_t n, tps_pool_fn fn, void *ctx);

/* An item that can fail: it fills its own err (never shared). */
typedef enum tps_status (*tps_pool_try_fn)(void *ctx, int64_t item,
					   struct tps_error *err);

/*
 * tps_pool_for for fallible items. On failure it returns the error of the
 * lowest failing item, as a loop in ascending order that stops at the
 * first error would; items after it may or may not have run.
 */
enum tps_status tps_pool_try(struct tps_pool *pool, int64_t n,
			     tps_pool_try_fn fn, void *ctx,
			     struct tps_error *err);

#endif
