/* The losses, on plain tensors (see nn.h). y, t: (..., n); rows of n. A
 * meta y has loss 0 and a meta gradient. */
#include <math.h>

#include "nn.h"

static int64_t row_length(const struct tps_tensor *y)
{
	return y->shape.ndim ? y->shape.dim[y->shape.ndim - 1] : 1;
}

int64_t tps_loss_rows(const struct tps_tensor *y)
{
	int64_t rows = 1;
	for (int d = 0; d + 1 < y->shape.ndim; d++) {
		rows *= y->shape.dim[d];
	}
	return rows;
}

/* A row's max and sum of exp(y - max), in double, in order. */
static void softmax_stats(const float *y, int64_t n, double *max, double *sum)
{
	*max = n ? y[0] : 0.0;
	for (int64_t j = 1; j < n; j++) {
		*max = y[j] > *max ? y[j] : *max;
	}
	*sum = 0.0;
	for (int64_t j = 0; j < n; j++) {
		*sum += exp((double)y[j] - *max);
	}
}

double tps_loss_value(enum tps_loss type, const struct tps_tensor *y,
		      const struct tps_tensor *t, const double *row_scale)
{
	int64_t n = row_length(y);
	int64_t rows = n && !y->meta ? tps_tensor_numel(y) / n : 0;
	double total = 0.0;
	for (int64_t r = 0; r < rows; r++) {
		double row = 0.0;
		if (type == TPS_LOSS_CROSS_ENTROPY) {
			/* logsumexp(y) - y[t] */
			double max, sum;
			softmax_stats(y->data + r * n, n, &max, &sum);
			row = max + log(sum) -
			      y->data[r * n + (int64_t)t->data[r]];
			total += row_scale[r] * row;
			continue;
		}
		for (int64_t j = 0; j < n; j++) {
			double v = y->data[r * n + j];
			switch (type) {
			case TPS_LOSS_MSE: {
				double d = v - (double)t->data[r * n + j];
				row += d * d;
				break;
			}
			case TPS_LOSS_SUM: row += v; break;
			case TPS_LOSS_CROSS_ENTROPY: break;
			}
		}
		total += row_scale[r] * row;
	}
	return total;
}

enum tps_status tps_loss_grad(enum tps_loss type, const struct tps_tensor *y,
			      const struct tps_tensor *t,
			      const double *row_scale, struct tps_tensor *dy,
			      struct tps_error *err)
{
	struct tps_tensor g;
	int64_t n = row_length(y);
	int64_t rows = n && !y->meta ? tps_tensor_numel(y) / n : 0;
	enum tps_status st = tps_tensor_init_like(&g, &y->shape, y, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int64_t r = 0; r < rows; r++) {
		double max = 0.0, sum = 1.0;
		if (type == TPS_LOSS_CROSS_ENTROPY) {
			softmax_stats(y->data + r * n, n, &max, &sum);
		}
		for (int64_t j = 0; j < n; j++) {
			int64_t e = r * n + j;
			switch (type) {
			case TPS_LOSS_MSE:
				/* d/dy scale (y - t)^2 = 2 scale (y - t) */
				g.data[e] = (float)(2.0 * row_scale[r]) *
					    (y->data[e] - t->data[e]);
				break;
			case TPS_LOSS_SUM:
				g.data[e] = (float)row_scale[r];
				break;
			case TPS_LOSS_CROSS_ENTROPY:
				/* scale (softmax(y) - onehot(t)) */
				g.data[e] =
					(float)(row_scale[r] *
						(exp((double)y->data[e] - max) /
							 sum -
						 (j == (int64_t)t->data[r]
							  ? 1.0
							  : 0.0)));
				break;
			}
		}
	}
	*dy = g;
	return TPS_OK;
}
