/*
 * pool: the threads ranks run on. Every item runs exactly once, on any
 * thread count; NULL and nested calls run in order on the caller; the
 * per-rank loop over a pool reports the lowest failing rank, as the
 * sequential loop does.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "memory.h"
#include "mesh.h"
#include "pool.h"

#define ITEMS 1000

struct counting {
	atomic_int runs[ITEMS];
	int order[2 * ITEMS]; /* two calls in the first test */
	atomic_int n_order;
};

static void count_item(void *opaque, int64_t i)
{
	struct counting *c = opaque;
	atomic_fetch_add(&c->runs[i], 1);
	c->order[atomic_fetch_add(&c->n_order, 1)] = (int)i;
}

START_TEST(pool_runs_every_item_exactly_once_for_any_thread_count)
{
	static const int counts[] = {1, 2, 3, 8};
	for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
		static struct counting c;
		struct tps_pool *pool = NULL;
		memset(&c, 0, sizeof c);
		ck_assert_int_eq(tps_pool_new(&pool, counts[k], NULL), TPS_OK);
		ck_assert_int_eq(tps_pool_threads(pool), counts[k]);
		/* Twice: a pool serves one call after another. */
		tps_pool_for(pool, ITEMS, count_item, &c);
		tps_pool_for(pool, ITEMS, count_item, &c);
		for (int i = 0; i < ITEMS; i++) {
			ck_assert_msg(atomic_load(&c.runs[i]) == 2,
				      "threads %d: item %d ran %d times",
				      counts[k], i, atomic_load(&c.runs[i]));
		}
		tps_pool_free(pool);
	}
}
END_TEST

START_TEST(pool_null_runs_items_in_ascending_order_on_the_caller)
{
	static struct counting c;
	memset(&c, 0, sizeof c);
	ck_assert_int_eq(tps_pool_threads(NULL), 1);
	tps_pool_for(NULL, ITEMS, count_item, &c);
	for (int i = 0; i < ITEMS; i++) {
		ck_assert_int_eq(c.order[i], i);
	}
	tps_pool_free(NULL);
}
END_TEST

/* Each outer item runs an inner loop on the same pool: the inner items
 * run inline, in order, on the outer item's thread. */
struct nested {
	struct tps_pool *pool;
	pthread_t outer_thread[8];
	atomic_int inner_on_other_thread, inner_out_of_order;
	atomic_int threads_here_not_1;
	int next_inner[8];
};

struct inner_ctx {
	struct nested *n;
	int outer;
};

static void inner_item(void *opaque, int64_t i)
{
	struct inner_ctx *ic = opaque;
	struct nested *n = ic->n;
	if (!pthread_equal(pthread_self(), n->outer_thread[ic->outer])) {
		atomic_fetch_add(&n->inner_on_other_thread, 1);
	}
	if (n->next_inner[ic->outer]++ != i) {
		atomic_fetch_add(&n->inner_out_of_order, 1);
	}
}

static void outer_item(void *opaque, int64_t i)
{
	struct nested *n = opaque;
	struct inner_ctx ic = {n, (int)i};
	n->outer_thread[i] = pthread_self();
	if (tps_pool_threads_here(n->pool) != 1) {
		atomic_fetch_add(&n->threads_here_not_1, 1);
	}
	tps_pool_for(n->pool, 50, inner_item, &ic);
}

START_TEST(pool_nested_call_runs_inline_in_order)
{
	struct nested n;
	memset(&n, 0, sizeof n);
	ck_assert_int_eq(tps_pool_new(&n.pool, 3, NULL), TPS_OK);
	ck_assert_int_eq(tps_pool_threads_here(n.pool), 3);
	tps_pool_for(n.pool, 8, outer_item, &n);
	/* Inside an item a further cut would run inline: 1 thread. */
	ck_assert_int_eq(atomic_load(&n.threads_here_not_1), 0);
	ck_assert_int_eq(atomic_load(&n.inner_on_other_thread), 0);
	ck_assert_int_eq(atomic_load(&n.inner_out_of_order), 0);
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(n.next_inner[i], 50);
	}
	tps_pool_free(n.pool);
}
END_TEST

/* Items that charge the memory account of the thread running them and
 * sleep, so that they spread over the workers: each records whether its
 * thread had the submitter's account bound. */
struct charging {
	struct tps_memory_account *expected;
	atomic_int wrong_account;
	pthread_t who[64];
};

static void charging_item(void *opaque, int64_t i)
{
	struct charging *c = opaque;
	struct timespec ms = {0, 1000000};
	if (tps_memory_account_bound() != c->expected) {
		atomic_fetch_add(&c->wrong_account, 1);
	}
	tps_memory_account_charge(i + 1);
	c->who[i] = pthread_self();
	nanosleep(&ms, NULL);
}

START_TEST(pool_items_charge_the_submitters_memory_account)
{
	/* A run's ranks charge the run's account, whichever thread runs
	 * them (memory.h); the next call's submitter its own; none bound,
	 * none charged. */
	struct tps_memory_account a, b, *before;
	struct tps_pool *pool = NULL;
	static struct charging c;
	int64_t live, peak;
	bool spread = false;

	ck_assert_int_eq(tps_pool_new(&pool, 4, NULL), TPS_OK);
	tps_memory_account_init(&a);
	tps_memory_account_init(&b);
	memset(&c, 0, sizeof c);
	before = tps_memory_account_bind(&a);
	c.expected = &a;
	tps_pool_for(pool, 64, charging_item, &c);
	for (int i = 1; i < 64; i++) {
		spread |= !pthread_equal(c.who[i], c.who[0]);
	}
	ck_assert(spread);
	tps_memory_account_read(&a, &live, &peak);
	ck_assert_int_eq(live, 64 * 65 / 2);

	tps_memory_account_bind(&b);
	c.expected = &b;
	tps_pool_for(pool, 64, charging_item, &c);
	tps_memory_account_read(&b, &live, &peak);
	ck_assert_int_eq(live, 64 * 65 / 2);

	tps_memory_account_bind(NULL);
	c.expected = NULL;
	tps_pool_for(pool, 64, charging_item, &c);
	tps_memory_account_read(&a, &live, &peak);
	ck_assert_int_eq(live, 64 * 65 / 2);
	tps_memory_account_read(&b, &live, &peak);
	ck_assert_int_eq(live, 64 * 65 / 2);
	ck_assert_int_eq(atomic_load(&c.wrong_account), 0);

	tps_memory_account_bind(before);
	tps_pool_free(pool);
}
END_TEST

/* Items that sleep: with 4 threads they spread over more than one. */
struct spread {
	pthread_t who[64];
};

static void sleepy_item(void *opaque, int64_t i)
{
	struct spread *s = opaque;
	struct timespec ms = {0, 1000000};
	s->who[i] = pthread_self();
	nanosleep(&ms, NULL);
}

START_TEST(pool_runs_items_on_several_threads)
{
	struct spread s;
	struct tps_pool *pool = NULL;
	int distinct = 0;
	ck_assert_int_eq(tps_pool_new(&pool, 4, NULL), TPS_OK);
	tps_pool_for(pool, 64, sleepy_item, &s);
	for (int i = 0; i < 64; i++) {
		bool seen = false;
		for (int j = 0; j < i; j++) {
			seen = seen || pthread_equal(s.who[i], s.who[j]);
		}
		distinct += !seen;
	}
	ck_assert_msg(distinct > 1, "64 sleeping items ran on %d thread",
		      distinct);
	tps_pool_free(pool);
}
END_TEST

START_TEST(pool_refuses_thread_counts_out_of_range)
{
	static const int bad[] = {0, -1, TPS_POOL_MAX_THREADS + 1};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct tps_pool *pool = NULL;
		struct tps_error err = {0};
		ck_assert_int_eq(tps_pool_new(&pool, bad[i], &err),
				 TPS_ERR_USAGE);
		ck_assert_ptr_null(pool);
		ck_assert_msg(strstr(err.message, "threads must be 1-256"),
			      "%s", err.message);
	}
	ck_assert_int_ge(tps_pool_default_threads(), 1);
}
END_TEST

/* Ranks 3 and 5 of 8 fail; every other rank marks itself done. */
struct failing {
	atomic_int done[8];
};

static enum tps_status fail_some(void *opaque, int rank, struct tps_error *err)
{
	struct failing *f = opaque;
	if (rank == 3 || rank == 5) {
		return tps_error_set(err,
				     rank == 3 ? TPS_ERR_SHAPE : TPS_ERR_NOMEM,
				     "rank %d failed", rank);
	}
	atomic_store(&f->done[rank], 1);
	return TPS_OK;
}

START_TEST(for_each_rank_reports_the_lowest_failing_rank_on_any_pool)
{
	static const int counts[] = {1, 2, 3, 8};
	static const int shape[] = {8};
	static const char *const names[] = {"tp"};
	struct tps_mesh mesh;
	ck_assert_int_eq(tps_mesh_init(&mesh, 1, shape, names, NULL), TPS_OK);
	for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
		struct failing f;
		struct tps_error err = {0};
		struct tps_pool *pool = NULL;
		memset(&f, 0, sizeof f);
		ck_assert_int_eq(tps_pool_new(&pool, counts[k], NULL), TPS_OK);
		mesh.pool = pool;
		ck_assert_int_eq(
			tps_mesh_for_each_rank(&mesh, fail_some, &f, &err),
			TPS_ERR_SHAPE);
		ck_assert_str_eq(err.message, "rank 3 failed");
		/* The ranks before the failure have all run. */
		for (int r = 0; r < 3; r++) {
			ck_assert_int_eq(atomic_load(&f.done[r]), 1);
		}
		tps_pool_free(pool);
	}
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *items = tcase_create("items");
	TCase *ranks = tcase_create("ranks");
	tcase_add_test(items,
		       pool_runs_every_item_exactly_once_for_any_thread_count);
	tcase_add_test(items,
		       pool_null_runs_items_in_ascending_order_on_the_caller);
	tcase_add_test(items, pool_nested_call_runs_inline_in_order);
	tcase_add_test(items, pool_runs_items_on_several_threads);
	tcase_add_test(items, pool_items_charge_the_submitters_memory_account);
	tcase_add_test(items, pool_refuses_thread_counts_out_of_range);
	tcase_add_test(
		ranks,
		for_each_rank_reports_the_lowest_failing_rank_on_any_pool);
	suite_add_tcase(s, items);
	suite_add_tcase(s, ranks);
	return s;
}

int main(void)
{
	return tu_run_suite(pool_suite());
}
