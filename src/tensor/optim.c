#include "optim.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

const char *const tps_optimizer_type_names[] = {"sgd", "adamw", NULL};

int tps_optim_state_count(const struct tps_optimizer_spec *o)
{
	switch (o->type) {
	case TPS_OPTIMIZER_SGD: return o->momentum != 0.0 ? 1 : 0;
	case TPS_OPTIMIZER_ADAMW: return 2;
	}
	return 0;
}

static void sgd_step(const struct tps_optimizer_spec *o, int64_t t, float *p,
		     const float *grad, float *buf, int64_t n,
		     enum tps_dtype pd, enum tps_dtype sd)
{
	const float wd = (float)o->weight_decay;
	const float momentum = (float)o->momentum;
	const float keep = (float)(1.0 - o->dampening);
	const float neg_lr = (float)-o->lr;
	for (int64_t i = 0; i < n; i++) {
		float g = grad[i];
		if (o->weight_decay != 0.0) {
			g = g + wd * p[i];
		}
		if (o->momentum != 0.0) {
			/* torch clones the gradient into the buffer at its
			 * first step, undamped. */
			buf[i] = tps_dtype_round(
				t == 1 ? g : buf[i] * momentum + keep * g, sd);
			g = o->nesterov ? g + momentum * buf[i] : buf[i];
		}
		p[i] = tps_dtype_round(p[i] + neg_lr * g, pd);
	}
}

static void adamw_step(const struct tps_optimizer_spec *o, int64_t t, float *p,
		       const float *grad, float *m, float *v, int64_t n,
		       enum tps_dtype pd, enum tps_dtype sd)
{
	const double bc1 = 1.0 - pow(o->beta1, (double)t);
	const double bc2 = 1.0 - pow(o->beta2, (double)t);
	const float decay = (float)(1.0 - o->lr * o->weight_decay);
	const float w1 = (float)(1.0 - o->beta1);
	const float b2 = (float)o->beta2;
	const float w2 = (float)(1.0 - o->beta2);
	const float bc2_sqrt = (float)sqrt(bc2);
	const float eps = (float)o->eps;
	const float neg_step = (float)(-o->lr / bc1);
	for (int64_t i = 0; i < n; i++) {
		float denom, q = p[i];
		if (o->weight_decay != 0.0) {
			q = q * decay;
		}
		m[i] = tps_dtype_round(m[i] + w1 * (grad[i] - m[i]), sd);
		v[i] = tps_dtype_round(v[i] * b2 + (w2 * grad[i]) * grad[i],
				       sd);
		denom = sqrtf(v[i]) / bc2_sqrt + eps;
		p[i] = tps_dtype_round(q + (neg_step * m[i]) / denom, pd);
	}
}

void tps_optim_step(const struct tps_optimizer_spec *o, int64_t t, float *p,
		    const float *grad, float *const *state, int64_t n,
		    enum tps_dtype p_dtype, enum tps_dtype state_dtype)
{
	switch (o->type) {
	case TPS_OPTIMIZER_SGD:
		sgd_step(o, t, p, grad, o->momentum != 0.0 ? state[0] : NULL, n,
			 p_dtype, state_dtype);
		return;
	case TPS_OPTIMIZER_ADAMW:
		adamw_step(o, t, p, grad, state[0], state[1], n, p_dtype,
			   state_dtype);
		return;
	}
}

const char *tps_optim_note(const struct tps_optimizer_spec *o)
{
	switch (o->type) {
	case TPS_OPTIMIZER_SGD:
		return o->momentum != 0.0
			       ? "SGD with momentum on each rank's shard: "
				 "b = m b + (1 - dampening) g, p -= lr b; the "
				 "buffer is sharded like the parameter"
			       : "SGD on each rank's shard: p -= lr g";
	case TPS_OPTIMIZER_ADAMW:
		return "AdamW on each rank's shard: p *= 1 - lr wd, then p -= "
		       "lr m_hat / (sqrt(v_hat) + eps); m and v are sharded "
		       "like the parameter";
	}
	return NULL;
}
