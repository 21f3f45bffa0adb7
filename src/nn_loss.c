/* The losses, on plain tensors (see nn.h). y, t: (..., n); rows of n. A
 * meta y has loss 0 and a meta gradient. */
#include "tpsim/nn.h"

static int64_t row_length(const struct tps_tensor *y)
{
	return y->shape.ndim ? y->shape.dim[y->shape.ndim - 1] : 1;
}

double tps_loss_value(enum tps_loss type, const struct tps_tensor *y,
		      const struct tps_tensor *t, const double *row_scale)
{
	int64_t n = row_length(y);
	int64_t rows = n && !y->meta ? tps_tensor_numel(y) / n : 0;
	double total = 0.0;
	for (int64_t r = 0; r < rows; r++) {
		double row = 0.0;
		for (int64_t j = 0; j < n; j++) {
			double v = y->data[r * n + j];
			switch (type) {
			case TPS_LOSS_MSE: {
				double d = v - (double)t->data[r * n + j];
				row += d * d;
				break;
			}
			case TPS_LOSS_SUM: row += v; break;
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
			}
		}
	}
	*dy = g;
	return TPS_OK;
}
