#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memory.h"

/*
 * One job at a time: the caller publishes (fn, ctx, n) under `lock`, bumps
 * `generation` and wakes the workers; every thread, the caller included,
 * claims items from the atomic `next` until none are left; the caller
 * waits until no worker is still inside the job. `submit` keeps two
 * callers (two non-pool threads) from sharing the job slot.
 */
struct tps_pool {
	int threads;
	int n_workers; /* threads - 1: the caller works too */
	pthread_t *workers;
	pthread_mutex_t lock, submit;
	pthread_cond_t wake, done;
	uint64_t generation;
	bool stop;
	tps_pool_fn fn;
	void *ctx;
	int64_t n;
	atomic_int_fast64_t next;
	int busy; /* workers not yet finished with this generation */
	/* The submitting thread's memory account, which every thread binds
	 * while it runs the job's items: a worker's tensors are charged to
	 * the run that handed it the work (memory.h). */
	struct tps_memory_account *account;
};

/* Set while a thread runs an item: a nested tps_pool_for runs inline. */
static _Thread_local bool in_item;

static void run_items(struct tps_pool *pool)
{
	struct tps_memory_account *own = tps_memory_account_bind(pool->account);
	int64_t i;
	in_item = true;
	while ((i = atomic_fetch_add(&pool->next, 1)) < pool->n) {
		pool->fn(pool->ctx, i);
	}
	in_item = false;
	tps_memory_account_bind(own);
}

static void *worker_main(void *opaque)
{
	struct tps_pool *pool = opaque;
	uint64_t seen = 0;
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (!pool->stop && pool->generation == seen) {
			pthread_cond_wait(&pool->wake, &pool->lock);
		}
		if (pool->stop) {
			break;
		}
		seen = pool->generation;
		pthread_mutex_unlock(&pool->lock);
		run_items(pool);
		pthread_mutex_lock(&pool->lock);
		if (--pool->busy == 0) {
			pthread_cond_signal(&pool->done);
		}
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

static void stop_workers(struct tps_pool *pool, int started)
{
	pthread_mutex_lock(&pool->lock);
	pool->stop = true;
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);
	for (int i = 0; i < started; i++) {
		pthread_join(pool->workers[i], NULL);
	}
}

static void destroy(struct tps_pool *pool)
{
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->wake);
	pthread_mutex_destroy(&pool->submit);
	pthread_mutex_destroy(&pool->lock);
	free(pool->workers);
	free(pool);
}

enum tps_status tps_pool_new(struct tps_pool **out, int threads,
			     struct tps_error *err)
{
	struct tps_pool *pool;
	int started = 0, rc = 0;

	if (threads < 1 || threads > TPS_POOL_MAX_THREADS) {
		return tps_error_set(err, TPS_ERR_USAGE,
				     "threads must be 1-%d, got %d",
				     TPS_POOL_MAX_THREADS, threads);
	}
	pool = calloc(1, sizeof *pool);
	if (!pool) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	pool->threads = threads;
	pool->n_workers = threads - 1;
	pool->workers = calloc((size_t)threads, sizeof *pool->workers);
	if (!pool->workers) {
		free(pool);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_mutex_init(&pool->submit, NULL);
	pthread_cond_init(&pool->wake, NULL);
	pthread_cond_init(&pool->done, NULL);
	atomic_init(&pool->next, 0);
	for (; started < pool->n_workers; started++) {
		rc = pthread_create(&pool->workers[started], NULL, worker_main,
				    pool);
		if (rc != 0) {
			break;
		}
	}
	if (rc != 0) {
		stop_workers(pool, started);
		destroy(pool);
		return tps_error_set(err, TPS_ERR_NOMEM,
				     "cannot start %d threads: %s", threads,
				     strerror(rc));
	}
	*out = pool;
	return TPS_OK;
}

void tps_pool_free(struct tps_pool *pool)
{
	if (!pool) {
		return;
	}
	stop_workers(pool, pool->n_workers);
	destroy(pool);
}

int tps_pool_threads(const struct tps_pool *pool)
{
	return pool ? pool->threads : 1;
}

int tps_pool_threads_here(const struct tps_pool *pool)
{
	return in_item ? 1 : tps_pool_threads(pool);
}

int tps_pool_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1) {
		return 1;
	}
	return n > TPS_POOL_MAX_THREADS ? TPS_POOL_MAX_THREADS : (int)n;
}

/* Whether a call with n items runs them on the caller, in order: no
 * workers, a nested call, or nothing to share. */
static bool runs_inline(const struct tps_pool *pool, int64_t n)
{
	return tps_pool_threads_here(pool) == 1 || n <= 1;
}

void tps_pool_for(struct tps_pool *pool, int64_t n, tps_pool_fn fn, void *ctx)
{
	if (runs_inline(pool, n)) {
		for (int64_t i = 0; i < n; i++) {
			fn(ctx, i);
		}
		return;
	}
	pthread_mutex_lock(&pool->submit);
	pthread_mutex_lock(&pool->lock);
	pool->fn = fn;
	pool->ctx = ctx;
	pool->n = n;
	pool->account = tps_memory_account_bound();
	atomic_store(&pool->next, 0);
	pool->busy = pool->n_workers;
	pool->generation++;
	pthread_cond_broadcast(&pool->wake);
	pthread_mutex_unlock(&pool->lock);

	run_items(pool);

	pthread_mutex_lock(&pool->lock);
	while (pool->busy > 0) {
		pthread_cond_wait(&pool->done, &pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	pthread_mutex_unlock(&pool->submit);
}

/* The items of one tps_pool_try: each fails into its own error; the lowest
 * failing item's is kept, under `lock`. */
struct try_job {
	tps_pool_try_fn fn;
	void *ctx;
	pthread_mutex_t lock;
	int64_t failed; /* n while none failed */
	enum tps_status status;
	struct tps_error first;
};

static void try_item(void *opaque, int64_t i)
{
	struct try_job *job = opaque;
	struct tps_error err = {0};
	enum tps_status st;
	bool later;

	/* An item after a failed one need not run: its result is dropped. */
	pthread_mutex_lock(&job->lock);
	later = i > job->failed;
	pthread_mutex_unlock(&job->lock);
	if (later || (st = job->fn(job->ctx, i, &err)) == TPS_OK) {
		return;
	}
	pthread_mutex_lock(&job->lock);
	if (i < job->failed) {
		job->failed = i;
		job->status = st;
		job->first = err;
	}
	pthread_mutex_unlock(&job->lock);
}

enum tps_status tps_pool_try(struct tps_pool *pool, int64_t n,
			     tps_pool_try_fn fn, void *ctx,
			     struct tps_error *err)
{
	struct try_job job;
	enum tps_status st = TPS_OK;

	if (runs_inline(pool, n)) {
		for (int64_t i = 0; i < n && st == TPS_OK; i++) {
			st = fn(ctx, i, err);
		}
		return st;
	}
	job.fn = fn;
	job.ctx = ctx;
	job.failed = n;
	job.status = TPS_OK;
	pthread_mutex_init(&job.lock, NULL);
	tps_pool_for(pool, n, try_item, &job);
	pthread_mutex_destroy(&job.lock);
	if (job.failed == n) {
		return TPS_OK;
	}
	if (err) {
		*err = job.first;
	}
	return job.status;
}
