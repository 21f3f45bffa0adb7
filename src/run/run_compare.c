/*
 * The comparison of a run with its reference (run.h): max |a - b| of each
 * tensor the two outcomes hold, exactly where the reference proves a
 * tensor exact (tps_model_exactness), within the tolerance elsewhere; how
 * many tensors were compared and how many of them exactly; whether an
 * outcome is finite. Nothing here runs, writes or prints.
 */
#include <math.h>

#include "run_internal.h"

void tps_run_compare(const struct tps_tensor *a, const struct tps_tensor *b,
		     double atol, double rtol, float *max_abs_diff, bool *match)
{
	int64_t n = tps_tensor_numel(b);
	float diff = 0.0f, scale = 0.0f;
	if (!tps_shape_equal(&a->shape, &b->shape)) {
		*max_abs_diff = INFINITY;
		*match = false;
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		float d = fabsf(a->data[i] - b->data[i]);
		diff = d > diff ? d : diff;
		scale = fabsf(b->data[i]) > scale ? fabsf(b->data[i]) : scale;
	}
	*max_abs_diff = diff;
	*match = (double)diff <= atol + rtol * (double)scale;
}

/* Folds one comparison into the running max and match: exactly (every
 * element equal) or within the tolerance. */
static void compare_into(const struct tps_tensor *a, const struct tps_tensor *b,
			 bool exact, double atol, double rtol,
			 float *max_abs_diff, bool *all_match)
{
	float diff;
	bool match;
	tps_run_compare(a, b, atol, rtol, &diff, &match);
	if (exact) {
		match = diff == 0.0f;
	}
	*max_abs_diff = diff > *max_abs_diff ? diff : *max_abs_diff;
	*all_match = *all_match && match;
}

void tps_run_compare_outcomes(const struct tps_model_outcome *a,
			      const struct tps_model_outcome *b, double atol,
			      double rtol, float *max_abs_diff, bool *match)
{
	const struct tps_model_exactness *x = &b->exact;
	*max_abs_diff = 0.0f;
	*match = a->steps == b->steps && a->n_grads == b->n_grads &&
		 a->n_params == b->n_params;
	if (!*match) {
		*max_abs_diff = INFINITY;
		return;
	}
	compare_into(&a->output, &b->output, x->output, atol, rtol,
		     max_abs_diff, match);
	for (int i = 0; i < a->steps; i++) {
		int64_t one = 1;
		struct tps_shape s = tps_shape_make(1, &one);
		struct tps_tensor la = {s, &a->loss[i], false};
		struct tps_tensor lb = {s, &b->loss[i], false};
		compare_into(&la, &lb, x->loss[i], atol, rtol, max_abs_diff,
			     match);
	}
	for (int i = 0; i < a->n_grads; i++) {
		compare_into(&a->grads[i], &b->grads[i], x->grads[i], atol,
			     rtol, max_abs_diff, match);
	}
	for (int i = 0; i < a->n_params; i++) {
		compare_into(&a->params_after[i], &b->params_after[i],
			     x->params_after[i], atol, rtol, max_abs_diff,
			     match);
	}
}

void tps_run_count_exact(const struct tps_model_outcome *ref, int *exact,
			 int *compared)
{
	const struct tps_model_exactness *x = &ref->exact;
	*compared = 1 + ref->steps + ref->n_grads + ref->n_params;
	*exact = x->output ? 1 : 0;
	for (int i = 0; i < ref->steps; i++) {
		*exact += x->loss[i] ? 1 : 0;
	}
	for (int i = 0; i < ref->n_grads; i++) {
		*exact += x->grads[i] ? 1 : 0;
	}
	for (int i = 0; i < ref->n_params; i++) {
		*exact += x->params_after[i] ? 1 : 0;
	}
}

bool tps_run_outcome_finite(const struct tps_model_outcome *o)
{
	bool ok = tps_tensor_all_finite(&o->output, NULL);
	for (int i = 0; i < o->steps; i++) {
		ok = ok && isfinite(o->loss[i]);
	}
	for (int i = 0; i < o->n_grads; i++) {
		ok = ok && tps_tensor_all_finite(&o->grads[i], NULL);
	}
	for (int i = 0; i < o->n_params; i++) {
		ok = ok && tps_tensor_all_finite(&o->params_after[i], NULL);
	}
	return ok;
}
