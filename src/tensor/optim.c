#include "optim.h"

#include "bound.h"

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

/* ---- error bounds (docs/numerics.md, "optimizers") ------------------- */

/* An operation's bound from what its inputs' bounds propagate through it
 * (prop): prop and its rounding, u |result| (the result being within
 * 2 prop of the reference's); 0 when prop is 0. */
static double rnd(double prop, double result, double u)
{
	return prop > 0.0 ? prop + u * (fabs(result) + 2.0 * prop) : 0.0;
}

static void sgd_bound_step(const struct tps_optimizer_spec *o, int64_t t,
			   const float *p, const float *grad, const float *buf,
			   int64_t n, double u, float *ep, const float *egrad,
			   float *ebuf)
{
	const float wd = (float)o->weight_decay;
	const float momentum = (float)o->momentum;
	const float keep = (float)(1.0 - o->dampening);
	const float neg_lr = (float)-o->lr;
	for (int64_t i = 0; i < n; i++) {
		/* The values as sgd_step computes them, and their bounds. */
		float g = grad[i], q;
		double eg = egrad[i];
		if (o->weight_decay != 0.0) {
			float wdp = wd * p[i];
			double e_wdp = rnd(fabsf(wd) * ep[i], wdp, u);
			g = g + wdp;
			eg = rnd(eg + e_wdp, g, u);
		}
		if (o->momentum != 0.0) {
			float b;
			double eb;
			if (t == 1) {
				b = g;
				eb = eg;
			} else {
				float a = buf[i] * momentum, c = keep * g;
				double ea = rnd(fabsf(momentum) * ebuf[i], a, u);
				double ec = rnd(fabsf(keep) * eg, c, u);
				b = a + c;
				eb = rnd(ea + ec, b, u);
			}
			ebuf[i] = tps_bound_up(eb);
			if (o->nesterov) {
				float mb = momentum * b;
				double emb = rnd(fabsf(momentum) * eb, mb, u);
				g = g + mb;
				eg = rnd(eg + emb, g, u);
			} else {
				g = b;
				eg = eb;
			}
		}
		q = neg_lr * g;
		ep[i] = tps_bound_up(
			rnd(ep[i] + rnd(fabsf(neg_lr) * eg, q, u), p[i] + q, u));
	}
}

/* The most |(-lr / bc1) m| / (sqrt(v) / sqrt(bc2) + eps) can be at step
 * t, whatever the gradients: |m| <= w1 sqrt(S / w2) sqrt(v) with
 * S = sum_{j<t} ((1 - w1)^2 / b2)^j (Cauchy-Schwarz on m's and v's sums
 * of the same gradients), so the step is at most
 * |lr / bc1| sqrt(bc2) w1 sqrt(S / w2); with room for the floats'
 * rounding of m and v over t steps. */
static double adamw_step_most(double neg_step, double bc2_sqrt, double w1,
			      double b2, double w2, int64_t t, double u)
{
	double r = (1.0 - w1) * (1.0 - w1) / b2, s = 0.0, term = 1.0;
	for (int64_t j = 0; j < t; j++) {
		s += term;
		term *= r;
	}
	return fabs(neg_step) * bc2_sqrt * w1 * sqrt(s / w2) *
	       (1.0 + 16.0 * (double)(t + 4) * u);
}

static void adamw_bound_step(const struct tps_optimizer_spec *o, int64_t t,
			     const float *p, const float *grad, const float *m,
			     const float *v, int64_t n, double u, float *ep,
			     const float *egrad, float *em, float *ev)
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
	const double most =
		adamw_step_most(neg_step, bc2_sqrt, w1, b2, w2, t, u);
	for (int64_t i = 0; i < n; i++) {
		float pp = p[i], mm, vv, d, s, den, num, q;
		double e_p = ep[i], eg = egrad[i], e_m, e_v, e_s, e_den, e_num;
		double e_q = 0.0, vlo, dlo;
		if (o->weight_decay != 0.0) {
			pp = pp * decay;
			e_p = rnd(fabsf(decay) * e_p, pp, u);
		}
		/* m = m + w1 (g - m) = (1 - w1) m + w1 g, three roundings */
		d = grad[i] - m[i];
		mm = m[i] + w1 * d;
		e_m = fabs(1.0 - (double)w1) * em[i] + (double)w1 * eg;
		e_m = e_m > 0.0 ? e_m + u * (2.0 * w1 * fabsf(d) + fabsf(mm) +
					     4.0 * e_m)
				: 0.0;
		/* v = v b2 + (w2 g) g: |g^2 - g'^2| <= e (2 |g| + 3 e) */
		vv = v[i] * b2 + (w2 * grad[i]) * grad[i];
		e_v = b2 * (double)ev[i] +
		      w2 * eg * (2.0 * fabsf(grad[i]) + 3.0 * eg);
		e_v = e_v > 0.0 ? e_v + u * (b2 * fabsf(v[i]) +
					     2.0 * w2 * grad[i] * grad[i] +
					     fabsf(vv) + 4.0 * e_v)
				: 0.0;
		/* |sqrt a - sqrt b| <= min(sqrt |a - b|,
		 * |a - b| / (sqrt a + sqrt b)), a, b >= vlo */
		s = sqrtf(vv);
		vlo = fmax(0.0, (double)vv - 2.0 * e_v);
		e_s = vlo > 0.0 ? fmin(sqrt(e_v), e_v / (2.0 * sqrt(vlo)))
				: sqrt(e_v);
		e_s = rnd(e_s, s, u);
		den = s / bc2_sqrt + eps;
		e_den = rnd(e_s / bc2_sqrt, s / bc2_sqrt, u);
		e_den = rnd(e_den, den, u);
		num = neg_step * mm;
		e_num = rnd(fabsf(neg_step) * e_m, num, u);
		q = num / den;
		if (e_num > 0.0 || e_den > 0.0) {
			/* Both sides' denominators are at least dlo. */
			dlo = fmax((double)eps, (double)den - 2.0 * e_den);
			e_q = rnd(e_num / dlo +
					  (fabsf(num) + e_num) * e_den /
						  (dlo * dlo),
				  q, u);
			/* And each side's step is at most `most`, or, were
			 * its v to underflow (below 2^-126, where
			 * |m| sqrt(w2) <= sqrt(v) no longer holds), at most
			 * the `most` of such a tiny v: |neg_step m| <= most
			 * sqrt(v) / bc2_sqrt over eps. */
			e_q = fmin(e_q, 2.0 * fmax(most, most * 0x1p-63 /
								 ((double)bc2_sqrt *
								  (double)eps)));
		}
		ep[i] = tps_bound_up(rnd(e_p + e_q, pp + q, u));
		em[i] = tps_bound_up(e_m);
		ev[i] = tps_bound_up(e_v);
	}
}

void tps_optim_bound_step(const struct tps_optimizer_spec *o, int64_t t,
			  const float *p, const float *grad,
			  const float *const *state, int64_t n, double u,
			  float *ep, const float *egrad, float *const *estate)
{
	switch (o->type) {
	case TPS_OPTIMIZER_SGD:
		sgd_bound_step(o, t, p, grad,
			       o->momentum != 0.0 ? state[0] : NULL, n, u, ep,
			       egrad, o->momentum != 0.0 ? estate[0] : NULL);
		return;
	case TPS_OPTIMIZER_ADAMW:
		adamw_bound_step(o, t, p, grad, state[0], state[1], n, u, ep,
				 egrad, estate[0], estate[1]);
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
