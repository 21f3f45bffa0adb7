/*
 * rmsnorm: LLaMA's RMSNorm (torch.nn.RMSNorm(dim, eps)) over the last
 * dim, a weight and no bias. Per row x (dim values):
 *
 *   ms   = sum(x^2) / dim                             (double, in order)
 *   rstd = 1 / sqrt(ms + eps)
 *   xhat = (float)(x * rstd)
 *   y    = xhat * w                                   (float)
 *
 * Replicated or sequence parallel as layernorm, through the driver they
 * share (nn_norm.c, which says what the styles do).
 *
 * Backward, per row, with g = dy * w (y = w x rstd, d rstd / dx_j =
 * -x_j rstd^3 / dim):
 *
 *   dx = rstd * (g - xhat * sum(g * xhat) / dim)
 *   dw += dy * xhat                  (float, rows in ascending order)
 *
 * Its error bounds are layer norm's rules without the mean
 * (nn_bounds_layernorm.c with rms; docs/numerics.md, "rmsnorm").
 */
#include <math.h>

#include "nn_norm.h"

enum { WEIGHT = TPS_NORM_WEIGHT };

/* One row's 1 / sqrt(mean(x^2) + eps). */
static double row_rstd(const float *x, int64_t n, double eps)
{
	double sq = 0.0;
	for (int64_t j = 0; j < n; j++) {
		sq += (double)x[j] * x[j];
	}
	return 1.0 / sqrt((n ? sq / (double)n : 0.0) + eps);
}

/* One row: y = rmsnorm(x) with w (rmsnorm has no bias: b is NULL). */
static void row_forward(const float *x, const float *w, const float *b,
			float *y, int64_t n, double eps)
{
	double rstd = row_rstd(x, n, eps);
	(void)b;
	for (int64_t j = 0; j < n; j++) {
		float xhat = (float)(x[j] * rstd);
		y[j] = xhat * w[j];
	}
}

/* One row: dx (NULL: not wanted) from dy; dy xhat added to dw (db is
 * NULL). */
static void row_backward(const float *x, const float *dy, const float *w,
			 float *dx, float *dw, float *db, int64_t n, double eps)
{
	double rstd = row_rstd(x, n, eps), sum_gx = 0.0;
	(void)db;
	for (int64_t j = 0; j < n; j++) {
		float xhat = (float)(x[j] * rstd);
		float g = dy[j] * w[j];
		sum_gx += (double)g * xhat;
		dw[j] += dy[j] * xhat;
	}
	for (int64_t j = 0; dx && j < n; j++) {
		float xhat = (float)(x[j] * rstd);
		double g = (double)dy[j] * w[j];
		dx[j] = (float)(rstd * (g - xhat * sum_gx / (double)n));
	}
}

static const struct tps_norm_kind rmsnorm = {
	.name = "rmsnorm",
	.replicate_why = "a replicated rmsnorm needs every row whole on "
			 "every rank",
	.forward_sequence = "y = x / sqrt(mean(x^2) + eps) w over the last "
			    "dim, on each rank's sequence shard: rows are "
			    "independent, no communication",
	.forward_replicate = "y = x / sqrt(mean(x^2) + eps) w over the last "
			     "dim, every row on every rank",
	.dw_op = "rmsnorm_dw",
	.backward_op = "rmsnorm_backward",
	.backward_eq = "dx = rstd (g - xhat mean(g xhat)), g = dy w: row by "
		       "row, the layout is kept",
	.bias = false,
	.rms = true,
	.row_forward = row_forward,
	.row_backward = row_backward,
};

static enum tps_status rmsnorm_forward(const struct tps_nn_context *ctx,
				       struct tps_module *m,
				       struct tps_dtensor *x,
				       struct tps_dtensor *y,
				       struct tps_error *err)
{
	return tps_norm_forward(&rmsnorm, ctx, m, x, y, err);
}

static enum tps_status rmsnorm_backward(const struct tps_nn_context *ctx,
					struct tps_module *m,
					struct tps_dtensor *dy,
					struct tps_dtensor *dx,
					struct tps_error *err)
{
	return tps_norm_backward(&rmsnorm, ctx, m, dy, dx, err);
}

static enum tps_status rmsnorm_reference_forward(struct tps_module *m,
						 struct tps_pool *pool,
						 const struct tps_tensor *x,
						 struct tps_tensor *y,
						 struct tps_error *err)
{
	(void)pool;
	return tps_norm_reference_forward(&rmsnorm, m, x, y, err);
}

static enum tps_status rmsnorm_reference_backward(struct tps_module *m,
						  struct tps_pool *pool,
						  const struct tps_tensor *dy,
						  struct tps_tensor *dx,
						  struct tps_error *err)
{
	(void)pool;
	return tps_norm_reference_backward(&rmsnorm, m, dy, dx, err);
}

/* docs/numerics.md, "rmsnorm" (nn_norm.c). */
static enum tps_status
rmsnorm_bound_forward(struct tps_module *m, const struct tps_bound_ctx *bc,
		      const struct tps_tensor *x, const struct tps_bound *ex,
		      struct tps_tensor *y, struct tps_bound *ey,
		      struct tps_error *err)
{
	return tps_norm_bound_forward(&rmsnorm, m, bc, x, ex, y, ey, err);
}

static enum tps_status
rmsnorm_bound_backward(struct tps_module *m, const struct tps_bound_ctx *bc,
		       const struct tps_tensor *dy, const struct tps_bound *edy,
		       struct tps_tensor *dx, struct tps_bound *edx,
		       struct tps_error *err)
{
	return tps_norm_bound_backward(&rmsnorm, m, bc, dy, edy, dx, edx, err);
}

static int rmsnorm_parameters(const struct tps_module_spec *s, int tp_dim,
			      struct tps_param_spec *out)
{
	int64_t dim = s->in_features;
	(void)tp_dim;
	/* Replicated in both styles. nn.RMSNorm starts at ones (model.c:
	 * so do "uniform" and "normal"); fan_in dim for the methods that
	 * draw. */
	out[WEIGHT] = (struct tps_param_spec){"weight", tps_shape_make(1, &dim),
					      dim, TPS_INIT_ONES,
					      tps_placement_replicate()};
	return 1;
}

static int64_t rmsnorm_memory_estimate(const struct tps_module_spec *s,
				       const struct tps_memory_context *mc)
{
	/* w: a global copy and every rank's. */
	int64_t bytes =
		tps_sat_mul(tps_sat_mul(s->in_features, mc->world + 1), 4);
	return mc->training
		       ? tps_sat_mul(bytes, 2 + (int64_t)mc->optimizer_states)
		       : bytes;
}

const struct tps_module_ops tps_rmsnorm_ops = {
	.forward = rmsnorm_forward,
	.backward = rmsnorm_backward,
	.reference_forward = rmsnorm_reference_forward,
	.reference_backward = rmsnorm_reference_backward,
	.bound_forward = rmsnorm_bound_forward,
	.bound_backward = rmsnorm_bound_backward,
	.parameters = rmsnorm_parameters,
	.memory_estimate = rmsnorm_memory_estimate,
};
