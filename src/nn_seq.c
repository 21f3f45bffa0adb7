/*
 * Sequences of modules (nn.h): the model's list and a residual's body are
 * both a range [begin, end) of the pre-order module array. Forward runs the
 * top-level modules in order; backward runs them last first, each getting
 * an input gradient only if something before it trains or the sequence's
 * own input wants one.
 */
#include <stdlib.h>
#include <string.h>

#include "tpsim/nn.h"

struct tps_module *tps_module_next(struct tps_module *m)
{
	return m + 1 + m->spec->n_descendants;
}

bool tps_module_trains(const struct tps_module *m)
{
	for (int i = 0; i <= m->spec->n_descendants; i++) {
		if (m[i].n_params > 0) {
			return true;
		}
	}
	return false;
}

/* Frees what every module of [begin, end) (descendants too) saved. */
static void free_saved(struct tps_module *begin, struct tps_module *end)
{
	for (struct tps_module *m = begin; m < end; m++) {
		tps_module_free_saved(m);
	}
}

/* The top-level modules of [begin, end), in order, into a new array. */
static struct tps_module **top_level(struct tps_module *begin,
				     struct tps_module *end, int *n)
{
	struct tps_module **list;
	int k = 0;
	for (struct tps_module *m = begin; m < end; m = tps_module_next(m)) {
		k++;
	}
	list = malloc((size_t)(k > 0 ? k : 1) * sizeof *list);
	*n = k;
	k = 0;
	for (struct tps_module *m = begin; list && m < end;
	     m = tps_module_next(m)) {
		list[k++] = m;
	}
	return list;
}

enum tps_status tps_nn_forward_seq(const struct tps_nn_context *ctx,
				   struct tps_module *begin,
				   struct tps_module *end,
				   struct tps_dtensor *x, struct tps_dtensor *y,
				   struct tps_error *err)
{
	struct tps_dtensor cur = *x;
	enum tps_status st = TPS_OK;
	memset(x, 0, sizeof *x);
	for (struct tps_module *m = begin; m < end && st == TPS_OK;
	     m = tps_module_next(m)) {
		struct tps_dtensor out = {0};
		st = m->ops->forward(ctx, m, &cur, &out, err);
		if (st == TPS_OK) {
			tps_dtensor_free(&cur);
			cur = out;
		}
	}
	if (st != TPS_OK) {
		tps_dtensor_free(&cur);
		return st;
	}
	*y = cur;
	return TPS_OK;
}

enum tps_status
tps_nn_backward_seq(const struct tps_nn_context *ctx, struct tps_module *begin,
		    struct tps_module *end, struct tps_dtensor *dy,
		    struct tps_dtensor *dx, struct tps_error *err)
{
	struct tps_dtensor g = *dy;
	int n, i;
	struct tps_module **list = top_level(begin, end, &n);
	enum tps_status st = TPS_OK;

	memset(dy, 0, sizeof *dy);
	if (!list) {
		tps_dtensor_free(&g);
		free_saved(begin, end);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (i = n - 1; i >= 0 && st == TPS_OK; i--) {
		struct tps_dtensor d = {0};
		bool want = dx != NULL;
		for (int j = 0; j < i && !want; j++) {
			want = tps_module_trains(list[j]);
		}
		if (!want && !tps_module_trains(list[i])) {
			break; /* nothing before it trains */
		}
		st = list[i]->ops->backward(ctx, list[i], &g, want ? &d : NULL,
					    err);
		g = d;
	}
	/* Whatever did not run backward still holds its saved input. */
	free_saved(begin, i >= 0 ? tps_module_next(list[i]) : begin);
	free(list);
	if (st == TPS_OK && dx) {
		*dx = g;
	} else {
		tps_dtensor_free(&g);
	}
	return st;
}

enum tps_status tps_nn_reference_forward_seq(struct tps_module *begin,
					     struct tps_module *end,
					     struct tps_pool *pool, bool save,
					     const struct tps_tensor *x,
					     struct tps_tensor *y,
					     struct tps_error *err)
{
	struct tps_tensor cur = {0}, out = {0};
	enum tps_status st = tps_tensor_copy(&cur, x, err);
	for (struct tps_module *m = begin; m < end && st == TPS_OK;
	     m = tps_module_next(m)) {
		st = m->ops->reference_forward(m, pool, &cur, &out, err);
		/* Every module's backward needs its input: keep it. */
		if (st == TPS_OK && save) {
			tps_tensor_move(&m->ref_saved_in, &cur);
		}
		if (st == TPS_OK) {
			tps_tensor_move(&cur, &out);
		}
	}
	if (st != TPS_OK) {
		tps_tensor_free(&cur);
		return st;
	}
	*y = cur;
	return TPS_OK;
}

enum tps_status tps_nn_reference_backward_seq(struct tps_module *begin,
					      struct tps_module *end,
					      struct tps_pool *pool,
					      const struct tps_tensor *dy,
					      struct tps_tensor *dx,
					      struct tps_error *err)
{
	struct tps_tensor g = {0};
	int n, i;
	struct tps_module **list = top_level(begin, end, &n);
	enum tps_status st =
		list ? tps_tensor_copy(&g, dy, err)
		     : tps_error_set(err, TPS_ERR_NOMEM, "out of memory");

	for (i = n - 1; i >= 0 && st == TPS_OK; i--) {
		struct tps_tensor d = {0};
		bool want = dx != NULL;
		for (int j = 0; j < i && !want; j++) {
			want = tps_module_trains(list[j]);
		}
		if (!want && !tps_module_trains(list[i])) {
			break;
		}
		st = list[i]->ops->reference_backward(list[i], pool, &g,
						      want ? &d : NULL, err);
		tps_tensor_move(&g, &d);
	}
	for (struct tps_module *m = begin;
	     list && m < (i >= 0 ? tps_module_next(list[i]) : begin); m++) {
		tps_tensor_free(&m->ref_saved_in);
	}
	free(list);
	if (st == TPS_OK && dx) {
		tps_tensor_move(dx, &g);
	}
	tps_tensor_free(&g);
	return st;
}
