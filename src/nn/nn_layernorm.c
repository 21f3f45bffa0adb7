/*
 * layernorm: nn.LayerNorm(dim, eps) over the last dim. Per row x (dim
 * values):
 *
 *   mean = sum(x) / dim, var = sum((x - mean)^2) / dim   (double, in order)
 *   rstd = 1 / sqrt(var + eps)
 *   xhat = (float)((x - mean) * rstd)
 *   y    = xhat * w + b                                 (float)
 *
 * Replicated or sequence parallel, through the driver it shares with
 * rmsnorm (nn_norm.c, which says what the styles do).
 *
 * Backward, per row, with g = dy * w:
 *
 *   dx = rstd * (g - sum(g) / dim - xhat * sum(g * xhat) / dim)
 *   dw += dy * xhat, db += dy       (float, rows in ascending order)
 */
#include <math.h>

#include "nn_norm.h"

enum { WEIGHT = TPS_NORM_WEIGHT, BIAS = TPS_NORM_BIAS };

/* One row's mean and 1 / sqrt(var + eps). */
static void row_stats(const float *x, int64_t n, double eps, double *mean,
		      double *rstd)
{
	double sum = 0.0, sq = 0.0;
	for (int64_t j = 0; j < n; j++) {
		sum += x[j];
	}
	*mean = n ? sum / (double)n : 0.0;
	for (int64_t j = 0; j < n; j++) {
		double d = x[j] - *mean;
		sq += d * d;
	}
	*rstd = 1.0 / sqrt((n ? sq / (double)n : 0.0) + eps);
}

/* One row: y = layernorm(x) with w, b (b may be NULL). */
static void row_forward(const float *x, const float *w, const float *b,
			float *y, int64_t n, double eps)
{
	double mean, rstd;
	row_stats(x, n, eps, &mean, &rstd);
	for (int64_t j = 0; j < n; j++) {
		float xhat = (float)((x[j] - mean) * rstd);
		y[j] = xhat * w[j] + (b ? b[j] : 0.0f);
	}
}

/* One row: dx (NULL: not wanted) from dy; dy xhat added to dw, dy to db
 * (NULL: no bias). */
static void row_backward(const float *x, const float *dy, const float *w,
			 float *dx, float *dw, float *db, int64_t n, double eps)
{
	double mean, rstd, sum_g = 0.0, sum_gx = 0.0;
	row_stats(x, n, eps, &mean, &rstd);
	for (int64_t j = 0; j < n; j++) {
		float xhat = (float)((x[j] - mean) * rstd);
		float g = dy[j] * w[j];
		sum_g += g;
		sum_gx += (double)g * xhat;
		dw[j] += dy[j] * xhat;
		if (db) {
			db[j] += dy[j];
		}
	}
	for (int64_t j = 0; dx && j < n; j++) {
		float xhat = (float)((x[j] - mean) * rstd);
		double g = (double)dy[j] * w[j];
		dx[j] = (float)(rstd * (g - sum_g / (double)n -
					xhat * sum_gx / (double)n));
	}
}

static const struct tps_norm_kind layernorm = {
	.name = "layernorm",
	.replicate_why = "a replicated layernorm needs every row whole on "
			 "every rank",
	.forward_sequence = "y = (x - mean) / sqrt(var + eps) w + b over the "
			    "last dim, on each rank's sequence shard: rows "
			    "are independent, no communication",
	.forward_replicate = "y = (x - mean) / sqrt(var + eps) w + b over "
			     "the last dim, every row on every rank",
	.dw_op = "layernorm_dw",
	.backward_op = "layernorm_backward",
	.backward_eq = "dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy "
		       "w: row by row, the layout is kept",
	.bias = true,
	.rms = false,
	.row_forward = row_forward,
	.row_backward = row_backward,
};

static enum tps_status layernorm_forward(const struct tps_nn_context *ctx,
					 struct tps_module *m,
					 struct tps_dtensor *x,
					 struct tps_dtensor *y,
					 struct tps_error *err)
{
	return tps_norm_forward(&layernorm, ctx, m, x, y, err);
}

static enum tps_status layernorm_backward(const struct tps_nn_context *ctx,
					  struct tps_module *m,
					  struct tps_dtensor *dy,
					  struct tps_dtensor *dx,
					  struct tps_error *err)
{
	return tps_norm_backward(&layernorm, ctx, m, dy, dx, err);
}

static enum tps_status layernorm_reference_forward(struct tps_module *m,
						   struct tps_pool *pool,
						   const struct tps_tensor *x,
						   struct tps_tensor *y,
						   struct tps_error *err)
{
	(void)pool;
	return tps_norm_reference_forward(&layernorm, m, x, y, err);
}

static enum tps_status layernorm_reference_backward(struct tps_module *m,
						    struct tps_pool *pool,
						    const struct tps_tensor *dy,
						    struct tps_tensor *dx,
						    struct tps_error *err)
{
	(void)pool;
	return tps_norm_reference_backward(&layernorm, m, dy, dx, err);
}

/* docs/numerics.md, "Layer norm" (nn_norm.c). */
static enum tps_status
layernorm_bound_forward(struct tps_module *m, const struct tps_bound_ctx *bc,
			const struct tps_tensor *x, const struct tps_bound *ex,
			struct tps_tensor *y, struct tps_bound *ey,
			struct tps_error *err)
{
	return tps_norm_bound_forward(&layernorm, m, bc, x, ex, y, ey, err);
}

static enum tps_status
layernorm_bound_backward(struct tps_module *m, const struct tps_bound_ctx *bc,
			 const struct tps_tensor *dy,
			 const struct tps_bound *edy, struct tps_tensor *dx,
			 struct tps_bound *edx, struct tps_error *err)
{
	return tps_norm_bound_backward(&layernorm, m, bc, dy, edy, dx, edx,
				       err);
}

static int layernorm_parameters(const struct tps_module_spec *s, int tp_dim,
				struct tps_param_spec *out)
{
	int64_t dim = s->in_features;
	(void)tp_dim;
	/* Replicated in both styles. nn.LayerNorm starts at ones and zeros
	 * (model.c: so do "uniform" and "normal"); fan_in dim for the
	 * methods that draw. */
	out[WEIGHT] = (struct tps_param_spec){"weight", tps_shape_make(1, &dim),
					      dim, TPS_INIT_ONES,
					      tps_placement_replicate()};
	if (!s->bias) {
		return 1;
	}
	out[BIAS] = (struct tps_param_spec){"bias", tps_shape_make(1, &dim),
					    dim, TPS_INIT_ZEROS,
					    tps_placement_replicate()};
	return 2;
}

static int64_t layernorm_memory_estimate(const struct tps_module_spec *s,
					 const struct tps_memory_context *mc)
{
	/* w and b: a global copy and every rank's. */
	int64_t bytes =
		tps_sat_mul(tps_sat_mul(2 * s->in_features, mc->world + 1), 4);
	return mc->training
		       ? tps_sat_mul(bytes, 2 + (int64_t)mc->optimizer_states)
		       : bytes;
}

const struct tps_module_ops tps_layernorm_ops = {
	.forward = layernorm_forward,
	.backward = layernorm_backward,
	.reference_forward = layernorm_reference_forward,
	.reference_backward = layernorm_reference_backward,
	.bound_forward = layernorm_bound_forward,
	.bound_backward = layernorm_bound_backward,
	.parameters = layernorm_parameters,
	.memory_estimate = layernorm_memory_estimate,
};
