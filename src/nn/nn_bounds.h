/*
 * Error bounds of the nonlinear module types: layer norm and rmsnorm,
 * softmax, the attention core and the cross-entropy losses (whole rows
 * and loss_parallel's class shards). docs/numerics.md states each rule and
 * its derivation; docs/design.md section 3 what a bound means.
 *
 * Each function takes the reference's values, as the reference has them,
 * and element-wise bounds on them, e >= |value - exact|, where exact is
 * the real-arithmetic result of the model on the run's float inputs and
 * parameters. It returns element-wise bounds e_out on its outputs that
 * hold for ANY evaluation of the module on inputs within their bounds
 * that differs from the reference only in summation order (a sum over
 * rows or classes split over ranks, the parts added in any order) and in
 * the roundings of its dtypes:
 *
 *   |out_i - exact_i| <= e_out_i
 *
 * to first order: products of two errors are dropped (Higham, Accuracy
 * and Stability of Numerical Algorithms, ch. 3-4). The rules follow each
 * function's Jacobian and the rounding of every operation the code does
 * (src/nn/nn_layernorm.c, nn_rmsnorm.c, nn_attention.c, nn_loss.c,
 * nn_loss_parallel.c): a sum of n terms in float32 rounds by at most
 * gamma_n = n u / (1 - n u) times the sum of the terms' magnitudes, its
 * parts in double by the same with u = 2^-53, exp, log, sqrt and a
 * division by their own relative error. A sum of integers whose sum of
 * magnitudes stays below 2^p (p the significand bits of every dtype it
 * passes through) rounds by nothing: its bound is that of its inputs
 * alone, 0 when they are exact.
 *
 * Bounds are float32 tensors rounded upward (never below the double
 * they are computed in); a bound past the float range is +inf (no useful
 * bound). A meta input makes meta bounds. Every e_* output is a new
 * tensor the caller frees; on failure (a shape that does not fit,
 * memory) every output is untouched.
 */
#ifndef TPSIM_NN_BOUNDS_H
#define TPSIM_NN_BOUNDS_H

#include <stdbool.h>
#include <stdint.h>

#include "dtype.h"
#include "error.h"
#include "tensor.h"

/*
 * The dtypes whose roundings a bound counts. A zeroed struct is float32
 * everywhere, the default.
 *
 *   store    the outputs' storage dtype: each stored output rounds once
 *            more when it is narrower than acc (bf16, fp16)
 *   acc      the float arithmetic and its accumulators (float32: the
 *            code's; the double parts count u = 2^-53 whatever this is)
 *   reduce   a collective's sums over ranks (NCCL sums bf16 in bf16):
 *            loss_parallel's all_reduce of the sums of exponentials,
 *            the all_reduce of a weight gradient summed over row parts
 */
struct tps_bound_dtypes {
	enum tps_dtype store;
	enum tps_dtype acc;
	enum tps_dtype reduce;
};

/*
 * Layer norm's operands, as nn_layernorm.c takes them, and rmsnorm's,
 * as nn_rmsnorm.c does (rows of n = w's length over x's last dim):
 *
 *   x, e_x   (..., n)   the input and its bound
 *   w, e_w   (n)        the weight
 *   b, e_b   (n)        the bias; both NULL without one
 *   eps                 the module's eps
 *   row_parts           backward: the number of parts, at most, that the
 *                       sums over rows of dw and db are split into (each
 *                       part summed on its rank, stored, the parts
 *                       all-reduced): dp times tp under sequence
 *                       parallel, dp otherwise; 1 when nothing splits
 */
struct tps_bound_layernorm {
	const struct tps_tensor *x, *e_x;
	const struct tps_tensor *w, *e_w;
	const struct tps_tensor *b, *e_b;
	double eps;
	int64_t row_parts;
	/* rmsnorm (nn_rmsnorm.c): no mean is subtracted, r = 1 /
	 * sqrt(mean(x^2) + eps), and there is no bias (b, e_b NULL) */
	bool rms;
};

/* e_y (x's shape): the bound of y = (x - mean) / sqrt(var + eps) w + b;
 * with rms, of y = x / sqrt(mean(x^2) + eps) w. */
enum tps_status
tps_bound_layernorm_forward(const struct tps_bound_layernorm *ln,
			    const struct tps_bound_dtypes *dt,
			    struct tps_tensor *e_y, struct tps_error *err);

/* From dy and e_dy (x's shape): e_dx (x's shape; NULL: not wanted),
 * e_dw (n) and e_db (n; NULL without a bias), the bounds of
 * dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy w (with rms,
 * dx = rstd (g - xhat mean(g xhat))), of dw = sum over rows of dy xhat
 * and of db = sum over rows of dy. */
enum tps_status tps_bound_layernorm_backward(
	const struct tps_bound_layernorm *ln, const struct tps_tensor *dy,
	const struct tps_tensor *e_dy, const struct tps_bound_dtypes *dt,
	struct tps_tensor *e_dx, struct tps_tensor *e_dw,
	struct tps_tensor *e_db, struct tps_error *err);

/* e_p (s's shape): the bound of p = softmax(s) over the last dim, as the
 * attention core computes it (float scores, the exponentials and their
 * sum in double, the probabilities stored as floats). */
enum tps_status tps_bound_softmax(const struct tps_tensor *s,
				  const struct tps_tensor *e_s,
				  const struct tps_bound_dtypes *dt,
				  struct tps_tensor *e_p,
				  struct tps_error *err);

/*
 * The attention core's operands, as nn_attention.c takes them: q
 * (..., S, F) and k, v (..., S, Fk), the outputs of the q, k, v linears
 * (turned by RoPE, for q and k, when it is on), F and Fk multiples of
 * head_dim d, Fk dividing F; per query head h (features [h d, (h + 1) d))
 * and batch, with g = h / (F / Fk) its kv head (grouped-query attention;
 * g = h when Fk = F),
 *
 *   a_h = softmax(q_h k_g^T / sqrt(d) [+ causal mask]) v_g
 *
 * and backward dk_g, dv_g summed over the group's query heads in head
 * order.
 */
struct tps_bound_attention {
	const struct tps_tensor *q, *k, *v;
	const struct tps_tensor *e_q, *e_k, *e_v;
	int64_t head_dim;
	bool causal;
	/* Heads (kv-head groups in backward) at once; NULL: one by one.
	 * Each head's bound is the same either way. */
	struct tps_pool *pool;
};

/*
 * e_y (x's shape): the bound of y = RoPE(x) as tps_tensor_rope computes
 * it from x (..., S, F) at positions 0 .. S - 1 (sign 1, or -1: its
 * transpose, the backward), y its result. Per pair (a, b) turned by the
 * angle t = sign pos theta^(-2i/d), the code's cos and sin c, s within
 * delta = u_d (4 |t| + 4) of the exact ones (pow, the product and libm's
 * cos and sin, 1 ulp each), the sum in double, one float rounding:
 *
 *   e_y_a = |c| e_a + |s| e_b + (delta + gamma_2(u_d)) (|x_a| + |x_b|
 *           + e_a + e_b) + u |y_a| (and the store)
 *
 * and alike for b (docs/numerics.md, "Rotary embeddings").
 */
enum tps_status tps_bound_rope(const struct tps_tensor *x,
			       const struct tps_tensor *e_x,
			       const struct tps_tensor *y, int64_t head_dim,
			       double theta, enum tps_rope_style style,
			       int sign, const struct tps_bound_dtypes *dt,
			       struct tps_tensor *e_y, struct tps_error *err);

/* e_a (q's shape): the bound of the heads' output a. */
enum tps_status
tps_bound_attention_forward(const struct tps_bound_attention *att,
			    const struct tps_bound_dtypes *dt,
			    struct tps_tensor *e_a, struct tps_error *err);

/* From da and e_da (q's shape): e_dq (q's shape), e_dk, e_dv (k's), the
 * bounds of dv = p^T da, ds = p (da v^T - rowsum(p da v^T)),
 * dq = ds k / sqrt(d), dk = ds^T q / sqrt(d). */
enum tps_status tps_bound_attention_backward(
	const struct tps_bound_attention *att, const struct tps_tensor *da,
	const struct tps_tensor *e_da, const struct tps_bound_dtypes *dt,
	struct tps_tensor *e_dq, struct tps_tensor *e_dk,
	struct tps_tensor *e_dv, struct tps_error *err);

/*
 * Cross-entropy's operands, as nn_loss.c takes them: logits y (..., C)
 * and e_y, target (...) of class ids, row_scale (one per row: the weight
 * of the row in the run's loss, as tps_loss_value takes it).
 * class_parts: 1 for cross_entropy over whole rows; loss_parallel's tp,
 * the number of class shards, whose sums of exponentials are stored and
 * all-reduced (nn_loss_parallel.c). The bound then covers both the
 * reference's evaluation and the sharded one.
 */
struct tps_bound_cross_entropy {
	const struct tps_tensor *y, *e_y;
	const struct tps_tensor *target;
	const double *row_scale;
	int64_t class_parts;
};

/* *e_loss: the bound of the loss, the sum over rows of row_scale
 * (logsumexp(y) - y[target]), stored as a float32 (and in the store
 * dtype). A target that is not a class id of y is TPS_ERR_INPUT. */
enum tps_status
tps_bound_cross_entropy_loss(const struct tps_bound_cross_entropy *ce,
			     const struct tps_bound_dtypes *dt, double *e_loss,
			     struct tps_error *err);

/* e_dy (y's shape): the bound of the loss's gradient,
 * row_scale (softmax(y) - onehot(target)). */
enum tps_status
tps_bound_cross_entropy_grad(const struct tps_bound_cross_entropy *ce,
			     const struct tps_bound_dtypes *dt,
			     struct tps_tensor *e_dy, struct tps_error *err);

#endif
