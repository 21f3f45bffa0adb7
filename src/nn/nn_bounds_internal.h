/*
 * What the bound rules of nn_bounds_*.c share (nn_bounds.h): the unit
 * roundoffs of a run's dtypes, the rounding of a sum, of a store and of
 * one float operation, and the softmax row both attention and
 * cross-entropy take apart.
 */
#ifndef TPSIM_NN_BOUNDS_INTERNAL_H
#define TPSIM_NN_BOUNDS_INTERNAL_H

#include "bound.h"
#include "nn_bounds.h"

/* double's unit roundoff, for the parts the code computes in double. */
#define TPS_BOUND_U_DOUBLE 0x1p-53
/* glibc's exp and log are within 1 ulp (2 u) of the exact result. */
#define TPS_BOUND_U_LIBM (2 * TPS_BOUND_U_DOUBLE)

/* One dtype as a bound sees it. */
struct tps_bound_format {
	double u;     /* unit roundoff */
	double tiny;  /* the smallest normal */
	double eta;   /* a rounding's absolute error below tiny */
	double limit; /* integers of magnitude below this are exact */
};

struct tps_bound_units {
	struct tps_bound_format acc, store, reduce;
	enum tps_dtype store_dtype;
	/* store is narrower than acc: a stored result rounds again */
	bool store_rounds;
};

void tps_bound_units_init(struct tps_bound_units *un,
			  const struct tps_bound_dtypes *dt);

/* gamma(path) = path / (1 - path): the first-order product of the
 * roundings along a path whose unit roundoffs add to `path`; +inf when
 * path >= 1. */
double tps_bound_gamma_path(double path);

/* One operation's rounding in f, of a result v: u |v|, plus f's eta
 * when v is below its normal range. */
double tps_bound_round(const struct tps_bound_format *f, double v);

/* The store of a result v computed in acc, whose bound so far is e_pre:
 * nothing when store is acc; an exact value (e_pre 0) that store holds
 * rounds by nothing; else one rounding in store. */
double tps_bound_store(const struct tps_bound_units *un, double v,
		       double e_pre);

/*
 * The rounding of a sum of `terms` terms whose magnitudes add to
 * abs_sum, in any order, split into at most `parts` parts: each summed in
 * acc, stored, and the parts summed in reduce. A term's path has at most
 * terms - 1 additions, at most parts - 1 of them in reduce, and one store
 * when parts > 1. 0 when every term is an integer and abs_sum stays
 * below the limit of every dtype the sum passes through.
 */
double tps_bound_sum(const struct tps_bound_units *un, double abs_sum,
		     int64_t terms, int64_t parts, bool integral);

/* tps_bound_up (bound.h): v rounded up to a float, +inf past the float
 * range: a bound stored never falls below the double it was computed
 * in. */

/* Whether every element of a tensor with data is an integer. */
bool tps_bound_integral(const float *x, int64_t n);

/*
 * One softmax row as the code computes it: from n float scores s (the
 * entries past `last` masked out), p_j = exp(s_j - max) / sum_k exp(s_k -
 * max) with the exponentials and the sum in double (nn_attention.c's
 * head_probs, nn_loss.c's softmax_stats). Fills, for j <= last:
 *
 *   p[j]      the probability (double, the exact one's stand-in)
 *   rel[j]    the relative error of the evaluated exp(s_j - max), the
 *             argument's rounding and exp's
 * and returns the relative error of the evaluated sum of exponentials
 * (the sum_k p_k rel_k of its terms plus the sum's own rounding).
 */
double tps_bound_softmax_row(const float *s, int64_t last, double *p,
			     double *rel);

/* The bound of the probabilities from the scores' bounds e_s, through
 * softmax's Jacobian p_j (delta_jk - p_k):
 * e_p_j = p_j ((1 - 2 p_j) e_s_j + sum_k p_k e_s_k). */
void tps_bound_softmax_jacobian(const double *p, const double *e_s,
				int64_t last, double *e_p);

#endif
