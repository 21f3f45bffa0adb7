/*
 * The optimizers' update rules, on plain float arrays: the same code
 * updates each rank's shard and the reference's global parameter, element
 * by element, so the state of a shard is the shard of the state.
 *
 * PyTorch's formulas (torch.optim, single-tensor path), in float32, each
 * operation rounded on its own (no FMA), scalars computed in double and
 * rounded to float once. t counts steps from 1.
 *
 *   sgd     g = grad + wd p                         (weight_decay != 0)
 *           b = g at t = 1, else m b + (1 - dampening) g   (momentum != 0)
 *           g = g + m b (nesterov) or b
 *           p = p + (-lr) g
 *   adamw   p = p (1 - lr wd)                       (decoupled decay)
 *           m = m + (1 - beta1) (grad - m)          (torch's lerp)
 *           v = v beta2 + ((1 - beta2) grad) grad
 *           denom = sqrt(v) / sqrt(1 - beta2^t) + eps
 *           p = p + ((-lr / (1 - beta1^t)) m) / denom
 *
 * Dtypes (dtype.h): each state element is stored, rounded to its dtype,
 * as soon as it is updated (the update then reads the stored value, as a
 * bf16 exp_avg is read back), and each parameter element once, at the end
 * of its update (a fused optimizer's one store); float32 rounds nothing.
 */
#ifndef TPSIM_OPTIM_H
#define TPSIM_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "dtype.h"

enum tps_optimizer_type {
	TPS_OPTIMIZER_SGD,
	TPS_OPTIMIZER_ADAMW,
};
extern const char *const tps_optimizer_type_names[];

/* PyTorch's optimizers, with PyTorch's defaults (lr: docs/design.md's 0.1 for
 * sgd, torch's 1e-3 for adamw). */
struct tps_optimizer_spec {
	enum tps_optimizer_type type;
	double lr;
	double weight_decay; /* sgd 0, adamw 0.01 */
	/* sgd */
	double momentum, dampening; /* 0, 0 */
	bool nesterov;		    /* false */
	/* adamw */
	double beta1, beta2; /* 0.9, 0.999 */
	double eps;	     /* 1e-8 */
};


/* State arrays per parameter: sgd 1 with momentum (else 0), adamw 2. */
int tps_optim_state_count(const struct tps_optimizer_spec *o);

/* One step on n elements: p updated from grad and stored in p_dtype;
 * state[i] holds n floats each (zeroed before step 1), stored in
 * state_dtype. */
void tps_optim_step(const struct tps_optimizer_spec *o, int64_t t, float *p,
		    const float *grad, float *const *state, int64_t n,
		    enum tps_dtype p_dtype, enum tps_dtype state_dtype);

/*
 * The error bounds (bound.h, docs/numerics.md) of one tps_optim_step on
 * the same values, called before it: on entry ep, egrad and estate[i]
 * bound p, grad and state[i] (estate zero before step 1), on return ep
 * and estate bound the values the step makes. u: the unit roundoff of
 * the parameter and its state as stored. Each element's bounds follow
 * its operations in the step's order; where every input of an operation
 * has bound 0 its result has bound 0 (the same float operation on the
 * same floats on every side). AdamW's m / (sqrt(v) / c + eps) is bounded
 * as a quotient of intervals, and never by more than twice the most a
 * step can move (|m| / sqrt(v) is bounded for any gradients, by
 * Cauchy-Schwarz): where rounding may flip a gradient's sign, that is
 * the bound.
 */
void tps_optim_bound_step(const struct tps_optimizer_spec *o, int64_t t,
			  const float *p, const float *grad,
			  const float *const *state, int64_t n, double u,
			  float *ep, const float *egrad, float *const *estate);

/* One line on what a step does, for the trace's notes. */
const char *tps_optim_note(const struct tps_optimizer_spec *o);

#endif
