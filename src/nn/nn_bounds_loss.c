/*
 * Cross-entropy's bounds, over whole rows and over loss_parallel's class
 * shards (nn_bounds.h; docs/numerics.md, "Cross-entropy and
 * loss_parallel").
 *
 * Per row of n logits y and target t, as nn_loss.c computes it, in
 * double:
 *
 *   M = max y, S = sum_j exp(y_j - M), row = M + log S - y_t
 *   g_j = fl(scale (exp(y_j - M) / S - [j == t]))
 *
 * and the loss is fl(sum over rows of scale_r row_r). loss_parallel
 * (nn_loss_parallel.c) computes the same from class shards: M and the
 * target's logit exactly (a max, a sum with one nonzero term), but each
 * shard's S_r, summed in double, is stored as a float (and in the store
 * dtype) and the S_r are all-reduced in the reduction dtype: S gains the
 * relative error of those roundings, which the bound adds when
 * class_parts > 1.
 */
#include <math.h>
#include <stdlib.h>

#include "nn_bounds_internal.h"

#define U_D TPS_BOUND_U_DOUBLE

struct ce_rows {
	int64_t n, rows;
	double *p, *rel, *es, *ep;
	float *y;
};

static void rows_free(struct ce_rows *c)
{
	free(c->p);
	free(c->rel);
	free(c->es);
	free(c->ep);
	free(c->y);
	c->p = c->rel = c->es = c->ep = NULL;
	c->y = NULL;
}

static enum tps_status check(const struct tps_bound_cross_entropy *ce,
			     struct ce_rows *c, struct tps_error *err)
{
	const struct tps_tensor *y = ce->y;
	char ys[128], ts[128];
	size_t count;
	*c = (struct ce_rows){0};
	if (y->shape.ndim < 1 || !tps_shape_equal(&ce->e_y->shape, &y->shape)) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"cross_entropy bound: e_y %s does not match the logits "
			"%s",
			tps_shape_format(&ce->e_y->shape, ts, sizeof ts),
			tps_shape_format(&y->shape, ys, sizeof ys));
	}
	c->n = y->shape.dim[y->shape.ndim - 1];
	c->rows = c->n && !y->meta ? tps_tensor_numel(y) / c->n : 0;
	if (!y->meta && tps_tensor_numel(ce->target) != c->rows) {
		return tps_error_set(
			err, TPS_ERR_SHAPE,
			"cross_entropy bound: target %s does not have one "
			"class "
			"per row of the logits %s",
			tps_shape_format(&ce->target->shape, ts, sizeof ts),
			tps_shape_format(&y->shape, ys, sizeof ys));
	}
	for (int64_t r = 0; r < c->rows; r++) {
		float t = ce->target->data[r];
		if (!(t >= 0 && t < (float)c->n && t == truncf(t))) {
			return tps_error_set(err, TPS_ERR_INPUT,
					     "cross_entropy bound: target %lld "
					     "is %g, not a class id in [0, "
					     "%lld)",
					     (long long)r, (double)t,
					     (long long)c->n);
		}
	}
	count = (size_t)(c->n > 0 ? c->n : 1);
	c->p = malloc(count * sizeof *c->p);
	c->rel = malloc(count * sizeof *c->rel);
	c->es = malloc(count * sizeof *c->es);
	c->ep = malloc(count * sizeof *c->ep);
	c->y = malloc(count * sizeof *c->y);
	if (!c->p || !c->rel || !c->es || !c->ep || !c->y) {
		rows_free(c);
		*c = (struct ce_rows){0};
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	return TPS_OK;
}

/* The relative error of the sum of exponentials S loss_parallel adds:
 * each shard's S_r rounded to a float (and to store), the shards' sum
 * in reduce: a path of u + u_store + (parts - 1) u_reduce, and the
 * stores' absolute error below the normal range, against S >= 1. */
static double sharded_sum(const struct tps_bound_units *un, int64_t parts)
{
	double path = un->acc.u, tiny = (double)parts * un->acc.eta;
	if (parts <= 1) {
		return 0.0;
	}
	if (un->store_rounds) {
		path += un->store.u;
		tiny += (double)parts * un->store.eta;
	}
	path += (double)(parts - 1) * un->reduce.u;
	return tps_bound_gamma_path(path) + tiny;
}

/* Row r: p, the exponentials' relative errors, e_y, and the relative
 * error of its S; the target in *t, the max in *max. */
static double row_softmax(struct ce_rows *c,
			  const struct tps_bound_cross_entropy *ce,
			  const struct tps_bound_units *un, int64_t r,
			  int64_t *t, double *max)
{
	const float *y = ce->y->data + r * c->n;
	double rel_s;
	*max = -INFINITY;
	for (int64_t j = 0; j < c->n; j++) {
		c->y[j] = y[j];
		c->es[j] = ce->e_y->data[r * c->n + j];
		*max = y[j] > *max ? y[j] : *max;
	}
	*t = (int64_t)ce->target->data[r];
	rel_s = tps_bound_softmax_row(c->y, c->n - 1, c->p, c->rel);
	return rel_s + sharded_sum(un, ce->class_parts);
}

/*
 * row_r = M + log S - y_t, d row / d y_j = p_j - [j == t]:
 *
 *   e_row = sum_j |p_j - [j == t]| e_y_j        the logits
 *           + rel_S + u_libm |log S|             S's error, log's
 *           + gamma_2 (|M| + |log S| + |y_t|)    the two additions
 *   e_loss = sum_r |scale_r| (e_row_r + u_d |row_r|)
 *            + gamma_{2 rows + 4} sum_r |scale_r row_r|   (double, any
 *                           order: the dp ranks' losses, their mean)
 *            + u |loss| + the store
 */
enum tps_status
tps_bound_cross_entropy_loss(const struct tps_bound_cross_entropy *ce,
			     const struct tps_bound_dtypes *dt, double *e_loss,
			     struct tps_error *err)
{
	struct tps_bound_units un;
	struct ce_rows c;
	double total = 0.0, mag = 0.0, e = 0.0;
	enum tps_status st = check(ce, &c, err);
	if (st != TPS_OK) {
		return st;
	}
	tps_bound_units_init(&un, dt);
	for (int64_t r = 0; r < c.rows; r++) {
		int64_t t;
		double max, rel_s = row_softmax(&c, ce, &un, r, &t, &max);
		double sum = 0.0, log_s, row, er = 0.0;
		for (int64_t j = 0; j < c.n; j++) {
			sum += exp((double)c.y[j] - max);
			er += fabs(c.p[j] - (j == t ? 1.0 : 0.0)) * c.es[j];
		}
		log_s = log(sum);
		row = max + log_s - c.y[t];
		er += rel_s + TPS_BOUND_U_LIBM * fabs(log_s) +
		      tps_bound_gamma_path(2 * U_D) *
			      (fabs(max) + fabs(log_s) + fabs((double)c.y[t]));
		e += fabs(ce->row_scale[r]) * (er + U_D * fabs(row));
		total += ce->row_scale[r] * row;
		mag += fabs(ce->row_scale[r] * row);
	}
	e += tps_bound_gamma_path((double)(2 * c.rows + 4) * U_D) * mag +
	     tps_bound_round(&un.acc, total);
	e += tps_bound_store(&un, total, e);
	rows_free(&c);
	*e_loss = (double)tps_bound_up(e);
	return TPS_OK;
}

/*
 * g_j = fl(scale (p_j - [j == t])), d g_j / d y_k = scale p_j (delta_jk
 * - p_k):
 *
 *   e_g_j = |scale| (p_j ((1 - 2 p_j) e_y_j + sum_k p_k e_y_k)  Jacobian
 *                    + p_j (rel_j + rel_S + u_d)    exp, S, the division
 *                    + u_d |p_j - [j == t]|)        the subtraction
 *           + 2 u_d |g_j|                            the scale's product
 *           + u |g_j| + the store
 */
enum tps_status
tps_bound_cross_entropy_grad(const struct tps_bound_cross_entropy *ce,
			     const struct tps_bound_dtypes *dt,
			     struct tps_tensor *e_dy, struct tps_error *err)
{
	struct tps_bound_units un;
	struct tps_tensor out = {0};
	struct ce_rows c;
	enum tps_status st = check(ce, &c, err);
	if (st != TPS_OK) {
		return st;
	}
	st = tps_tensor_init_like(&out, &ce->y->shape, ce->y, err);
	if (st != TPS_OK) {
		rows_free(&c);
		return st;
	}
	tps_bound_units_init(&un, dt);
	for (int64_t r = 0; r < c.rows; r++) {
		int64_t t;
		double max, rel_s = row_softmax(&c, ce, &un, r, &t, &max);
		double scale = ce->row_scale[r];
		tps_bound_softmax_jacobian(c.p, c.es, c.n - 1, c.ep);
		for (int64_t j = 0; j < c.n; j++) {
			double q = c.p[j] - (j == t ? 1.0 : 0.0);
			double g = scale * q, e;
			e = fabs(scale) * (c.ep[j] +
					   c.p[j] * (c.rel[j] + rel_s + U_D) +
					   U_D * fabs(q)) +
			    2 * U_D * fabs(g) + tps_bound_round(&un.acc, g);
			e += tps_bound_store(&un, g, e);
			out.data[r * c.n + j] = tps_bound_up(e);
		}
	}
	rows_free(&c);
	*e_dy = out;
	return TPS_OK;
}
