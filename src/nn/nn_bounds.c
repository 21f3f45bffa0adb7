/*
 * The pieces every bound rule of the nonlinear types uses
 * (nn_bounds_internal.h): roundings of sums, stores and single
 * operations, and one softmax row. docs/numerics.md derives them.
 */
#include <float.h>
#include <math.h>

#include "nn_bounds_internal.h"

static struct tps_bound_format format_of(enum tps_dtype d)
{
	/* tiny: the smallest normal; eta: half the subnormals' spacing,
	 * the most a rounding in the subnormal range can lose. */
	struct tps_bound_format f = {tps_dtype_unit_roundoff(d), 0x1p-126,
				     0x1p-150, 0};
	if (d == TPS_DTYPE_BF16) {
		f.eta = 0x1p-134;
	} else if (d == TPS_DTYPE_F16) {
		f.tiny = 0x1p-14;
		f.eta = 0x1p-25;
	}
	/* p significand bits hold every integer up to 2^p = 1 / u. */
	f.limit = 1.0 / f.u;
	return f;
}

void tps_bound_units_init(struct tps_bound_units *un,
			  const struct tps_bound_dtypes *dt)
{
	un->acc = format_of(dt->acc);
	un->store = format_of(dt->store);
	un->reduce = format_of(dt->reduce);
	un->store_dtype = dt->store;
	un->store_rounds = un->store.u > un->acc.u;
}

double tps_bound_gamma_path(double path)
{
	return path < 1.0 ? path / (1.0 - path) : INFINITY;
}

double tps_bound_round(const struct tps_bound_format *f, double v)
{
	double a = fabs(v);
	if (a == 0.0) {
		return 0.0;
	}
	return f->u * a + (a < f->tiny ? f->eta : 0.0);
}

double tps_bound_store(const struct tps_bound_units *un, double v, double e_pre)
{
	float f = (float)v;
	if (!un->store_rounds) {
		return 0.0;
	}
	if (e_pre == 0.0 && (double)f == v &&
	    tps_dtype_round(f, un->store_dtype) == f) {
		return 0.0;
	}
	return tps_bound_round(&un->store, v);
}

double tps_bound_sum(const struct tps_bound_units *un, double abs_sum,
		     int64_t terms, int64_t parts, bool integral)
{
	bool split = parts > 1 && terms > 0;
	double adds = terms > 1 ? (double)(terms - 1) : 0.0;
	double reduced = split ? fmin((double)(parts - 1), adds) : 0.0;
	double path, extra = 0.0;

	if (abs_sum == 0.0) {
		return 0.0;
	}
	if (integral && abs_sum < un->acc.limit &&
	    (!split || ((!un->store_rounds || abs_sum < un->store.limit) &&
			abs_sum < un->reduce.limit))) {
		return 0.0;
	}
	/* Every addition in acc, those of the reduction at reduce's u
	 * where it is coarser, one store of the part's sum. */
	path = adds * un->acc.u + reduced * fmax(un->reduce.u - un->acc.u, 0);
	if (split && un->store_rounds) {
		path += un->store.u;
		extra = (double)parts * un->store.eta;
	}
	return tps_bound_gamma_path(path) * abs_sum + extra;
}

bool tps_bound_integral(const float *x, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		if (x[i] != truncf(x[i])) {
			return false;
		}
	}
	return true;
}

double tps_bound_softmax_row(const float *s, int64_t last, double *p,
			     double *rel)
{
	float max = -INFINITY;
	double sum = 0.0, rel_sum = 0.0;
	for (int64_t j = 0; j <= last; j++) {
		max = s[j] > max ? s[j] : max;
	}
	for (int64_t j = 0; j <= last; j++) {
		double arg = (double)s[j] - max;
		p[j] = exp(arg);
		sum += p[j];
		/* exp's own rounding, and its argument's (a difference of
		 * two floats, within u of itself in double) times the
		 * derivative's relative size |arg|. */
		rel[j] = TPS_BOUND_U_LIBM + TPS_BOUND_U_DOUBLE * fabs(arg);
	}
	for (int64_t j = 0; j <= last; j++) {
		p[j] /= sum;
		rel_sum += p[j] * rel[j];
	}
	/* The sum of last + 1 positive terms in double, in any order. */
	return rel_sum + tps_bound_gamma_path((double)last * TPS_BOUND_U_DOUBLE);
}

void tps_bound_softmax_jacobian(const double *p, const double *e_s,
				int64_t last, double *e_p)
{
	double w = 0.0;
	for (int64_t k = 0; k <= last; k++) {
		w += p[k] * e_s[k];
	}
	for (int64_t j = 0; j <= last; j++) {
		/* sum_k |p_j (delta_jk - p_k)| e_k
		 *   = p_j ((1 - p_j) e_j + sum_{k != j} p_k e_k) */
		double others = w - p[j] * e_s[j];
		e_p[j] = p[j] * ((1.0 - p[j]) * e_s[j] + fmax(others, 0.0));
	}
}
