/*
 * Error bounds: how far the float32 evaluations of a tensor that differ
 * only in the order of their sums may lie apart (docs/numerics.md has the
 * rules and their derivations; Higham, Accuracy and Stability of
 * Numerical Algorithms, ch. 3-4).
 *
 * A bound e of a tensor t is element-wise: there is a center c, the same
 * for every evaluation, with
 *
 *   |t^_i - c_i| <= e_i   for every evaluation t^
 *
 * where an evaluation is the reference's or any other that adds the same
 * terms in another order (k split over ranks, the ranks summed in any
 * order, the bias before or after the reduction, the batch summed per dp
 * rank first) and rounds what the simulation rounds. The center is the
 * exact (real-arithmetic) result of each operation on the centers of its
 * operands, except where every operand of an element-wise operation has
 * bound 0: every evaluation then does the same float operation on the
 * same floats, and the center is that float. So
 *
 *   |sim_i - ref_i| <= 2 e_i
 *
 * for a correct simulation, and e_i = 0 says that every evaluation gives
 * the same bits (the exact comparison of docs/design.md section 3).
 *
 * Bounds are computed in float32 from the reference's values, every term
 * non-negative; a rule whose float32 arithmetic sums n of them per
 * element inflates its result by 1 + 2 gamma_{n+1} (tps_bound_inflate),
 * which keeps it above the exact value of what it computed: a float sum
 * of non-negative terms is at least (1 - gamma) times their exact sum.
 */
#ifndef TPSIM_BOUND_H
#define TPSIM_BOUND_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

/* Integers are exact in float32 below this magnitude (2^24). */
#define TPS_BOUND_EXACT_LIMIT 16777216.0
#define TPS_BOUND_REASON_MAX  160

struct tps_bound {
	/* The value's shape, every element >= 0 and finite; empty (no data)
	 * when `none` is set. */
	struct tps_tensor e;
	/* "" when e is a bound; else why no bound exists ("blk.ln1:
	 * layernorm has no error-bound rule"), and e is empty. */
	char none[TPS_BOUND_REASON_MAX];
};

/*
 * gamma_n for a unit roundoff u: (1 + u)^n - 1, which bounds the relative
 * error of n roundings in a row (Higham's lemma 3.1; it is at most
 * n u / (1 - n u)), rounded up. 0 for n <= 0.
 */
double tps_bound_gamma(int64_t n, double u);

/* The least float >= v (v >= 0; +inf past the largest float, and for
 * NaN: a bound that says nothing). */
float tps_bound_up(double v);

/* *b = a bound of all zeros of the shape. On error *b is untouched. */
enum tps_status tps_bound_zero(struct tps_bound *b,
			       const struct tps_shape *shape,
			       struct tps_error *err);
/* tps_bound_zero as read-only zeros that hold no memory
 * (tps_tensor_init_zero_view): for a bound that is never written, an
 * inference run's parameters'. */
enum tps_status tps_bound_zero_view(struct tps_bound *b,
				    const struct tps_shape *shape,
				    struct tps_error *err);
/* Makes *b "no bound", freeing its tensor, the reason formatted (cut to
 * TPS_BOUND_REASON_MAX - 1 bytes). */
void tps_bound_set_none(struct tps_bound *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* *b = "no bound" for the same reason as a (a's "none" copied). */
void tps_bound_none_like(struct tps_bound *b, const struct tps_bound *a);
/* *dst = a copy of src. On error *dst is untouched. */
enum tps_status tps_bound_copy(struct tps_bound *dst,
			       const struct tps_bound *src,
			       struct tps_error *err);
/* Replaces dst by src (dst's tensor freed); src is left empty. */
void tps_bound_move(struct tps_bound *dst, struct tps_bound *src);
/* Frees the tensor and clears the reason; NULL is a no-op. */
void tps_bound_free(struct tps_bound *b);

/*
 * A bound past TPS_BOUND_MAX (or not a number) says nothing a float32
 * could be compared with: errors can grow step by step through training
 * until their bound overflows. Makes such a b "no bound", saying of
 * `what` ("fc1.out") that its bound outgrew float32. Returns whether b
 * is still a bound.
 */
#define TPS_BOUND_MAX 1e30
bool tps_bound_settle(struct tps_bound *b, const char *what);

/* Whether b has no bound. */
bool tps_bound_is_none(const struct tps_bound *b);
/* Whether b is a bound of all zeros (every evaluation the same bits). */
bool tps_bound_is_zero(const struct tps_bound *b);
/* The first "no bound" of n bounds (NULL entries skipped), or NULL. */
const struct tps_bound *tps_bound_first_none(const struct tps_bound *const *b,
					     int n);

/* Whether every element of t is an integer of magnitude below 2^24 (an
 * empty tensor is; a meta one is not). */
bool tps_tensor_integral(const struct tps_tensor *t);

/* out = |t| + k e, new (e NULL: |t|). On error *out is untouched. */
enum tps_status tps_bound_magnitude(struct tps_tensor *out,
				    const struct tps_tensor *t,
				    const struct tps_tensor *e, float k,
				    struct tps_error *err);
/* out = a |t| + k e, new (e NULL: a |t|). On error *out is untouched. */
enum tps_status tps_bound_combine(struct tps_tensor *out, float a,
				  const struct tps_tensor *t, float k,
				  const struct tps_tensor *e,
				  struct tps_error *err);

/* Multiplies every element of b's tensor by 1 + 2 gamma_{n+1}(u),
 * rounded up: a rule whose float32 arithmetic summed n non-negative
 * products per element stays above the exact value of that sum. A no-op
 * on "no bound". */
void tps_bound_inflate(struct tps_bound *b, int64_t n, double u);

#endif
