/*
 * A hash of a run's outcome (model.h: the output, each step's loss, the
 * gradients and the parameters after the last step), for the model
 * suites' "these runs give the same bytes" checks: equal outcomes hash
 * equal; a differing bit almost surely does not (64-bit FNV-1a over the
 * floats' bytes, in the outcome's order).
 */
#ifndef TPSIM_TESTS_OUTCOME_HASH_H
#define TPSIM_TESTS_OUTCOME_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

static inline uint64_t tu_fnv1a(uint64_t h, const void *data, size_t n)
{
	const unsigned char *b = data;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ b[i]) * 1099511628211ull;
	}
	return h;
}

static inline uint64_t tu_tensor_hash(uint64_t h, const struct tps_tensor *t)
{
	return t->data ? tu_fnv1a(h, t->data,
				  (size_t)tps_tensor_numel(t) * sizeof(float))
		       : h;
}

static inline uint64_t tu_outcome_hash(const struct tps_model_outcome *o)
{
	uint64_t h = tu_tensor_hash(14695981039346656037ull, &o->output);
	h = tu_fnv1a(h, o->loss, (size_t)o->steps * sizeof *o->loss);
	for (int i = 0; i < o->n_grads; i++) {
		h = tu_tensor_hash(h, &o->grads[i]);
	}
	for (int i = 0; i < o->n_params; i++) {
		h = tu_tensor_hash(h, &o->params_after[i]);
	}
	return h;
}

#endif
