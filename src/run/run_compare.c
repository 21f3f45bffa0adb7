/*
 * The comparison of a run with its reference (run.h): each tensor the
 * two outcomes hold, element by element within twice the reference's
 * error bound (model.h, struct tps_model_bounds), exactly where that
 * bound is 0, within the tolerance where there is none; the figures of
 * each (model.h, struct tps_comparison); whether an outcome is finite.
 * Nothing here runs, writes or prints.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"
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

void tps_run_output_name(const struct tps_model *model, char *buf,
			 size_t size)
{
	struct tps_module *m = model->modules, *last = NULL;
	struct tps_module *end = model->modules + model->spec->n_modules;
	for (; m < end; m = tps_module_next(m)) {
		last = m;
	}
	snprintf(buf, size, "%s.out", last ? last->spec->name : "output");
}

/*
 * Whether b's bound e says nothing of it (run.h): 2 max e > useful max
 * |b|, reordering could then have changed every element completely, and
 * the tolerance (atol + rtol max |b|) would be the stricter test.
 * First-order bounds are worst cases over every sign, so they grow by
 * about the row sums of |W| through each layer while the values do not:
 * past a few layers of a deep model they reach that. Then c->none says
 * so, and the tolerance decides.
 */
static bool too_loose(const struct tps_tensor *b, const struct tps_bound *e,
		      double useful, double atol, double rtol,
		      struct tps_compare_tensor *c)
{
	struct tps_c_locale l;
	double most = 0.0, scale = 0.0;
	for (int64_t i = 0; i < tps_tensor_numel(b); i++) {
		most = fmax(most, 2.0 * (double)e->e.data[i]);
		scale = fmax(scale, fabs((double)b->data[i]));
	}
	/* A bound within what the tolerance would allow is the stricter
	 * test, and a sound one: it decides (a tensor of zeros with a bound
	 * of 1e-14, say). */
	if (most <= useful * scale || most <= atol + rtol * scale) {
		return false;
	}
	/* In the C locale: the reason goes into the trace. */
	tps_c_locale_enter(&l);
	snprintf(c->none, sizeof c->none,
		 "bound %.2g > max |value| %.2g, says nothing", most, scale);
	tps_c_locale_leave(&l);
	return true;
}

/*
 * Compares a (the simulation's) with b (the reference's), whose bound is
 * e, into *c: by the bound where e is one (exactly where it is all
 * zeros), by the tolerance where there is none.
 */
static void compare_tensor(const struct tps_tensor *a,
			   const struct tps_tensor *b,
			   const struct tps_bound *e,
			   const struct tps_run_tolerance *tol,
			   const struct tps_run_element_sink *elements,
			   struct tps_compare_tensor *c)
{
	int64_t n = tps_tensor_numel(b);
	float diff = 0.0f, scale = 0.0f;
	c->shape = b->shape;
	c->at = -1;
	if (tps_bound_is_none(e)) {
		c->rule = TPS_COMPARE_TOLERANCE;
		snprintf(c->none, sizeof c->none, "%s", e->none);
	} else if (too_loose(b, e, tol->useful, tol->atol, tol->rtol, c)) {
		c->rule = TPS_COMPARE_TOLERANCE;
	} else {
		c->rule = tps_bound_is_zero(e) ? TPS_COMPARE_EXACT
					       : TPS_COMPARE_BOUND;
	}
	if (!tps_shape_equal(&a->shape, &b->shape)) {
		c->shapes_differ = true;
		c->max_abs_diff = INFINITY;
		c->match = false;
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		float d = fabsf(a->data[i] - b->data[i]);
		double dd = fabs((double)a->data[i] - (double)b->data[i]);
		scale = fabsf(b->data[i]) > scale ? fabsf(b->data[i]) : scale;
		if (c->rule == TPS_COMPARE_TOLERANCE && dd > c->at_diff) {
			c->at = i;
			c->at_diff = dd;
		}
		diff = d > diff ? d : diff;
		if (c->rule != TPS_COMPARE_TOLERANCE) {
			double bound = 2.0 * (double)e->e.data[i];
			double allow = c->rule == TPS_COMPARE_EXACT
					       ? 0.0
					       : bound + tol->slack_atol +
							 tol->slack_rtol *
								 fabs(b->data[i]);
			double ratio = dd == 0.0    ? 0.0
				       : bound > 0.0 ? dd / bound
						     : INFINITY;
			c->max_bound = bound > c->max_bound ? bound
							    : c->max_bound;
			if (elements) {
				elements->element(elements->ctx, c, i,
						  a->data[i], b->data[i],
						  bound);
			}
			if (dd > allow) {
				c->outside++;
			}
			/* The worst ratio; of equal ones (infinite, where
			 * the bound is 0), the largest difference. */
			if (dd > 0.0 &&
			    (c->at < 0 || ratio > c->ratio ||
			     (ratio == c->ratio && dd > c->at_diff))) {
				c->ratio = ratio;
				c->at = i;
				c->at_diff = dd;
				c->at_bound = bound;
			}
		}
	}
	c->max_abs_diff = diff;
	if (c->rule == TPS_COMPARE_TOLERANCE) {
		c->max_bound = tol->atol + tol->rtol * (double)scale;
		c->at_bound = c->max_bound;
		c->ratio = c->max_bound > 0.0 ? (double)diff / c->max_bound
			   : diff > 0.0	      ? INFINITY
					      : 0.0;
		c->match = (double)diff <= c->max_bound;
		c->outside = c->match ? 0 : 1;
	} else {
		c->match = c->outside == 0;
	}
}

/* Whether tensor i decides the verdict before tensor j (-1: none). */
static bool worse(const struct tps_comparison *cmp, int i, int j)
{
	const struct tps_compare_tensor *a = &cmp->t[i], *b;
	if (j < 0) {
		return true;
	}
	b = &cmp->t[j];
	if (a->match != b->match) {
		return !a->match;
	}
	if (!a->match) {
		/* A shape that differs, then a bounded mismatch, then the
		 * worst ratio. */
		if (a->shapes_differ != b->shapes_differ) {
			return a->shapes_differ;
		}
		if ((a->rule == TPS_COMPARE_TOLERANCE) !=
		    (b->rule == TPS_COMPARE_TOLERANCE)) {
			return b->rule == TPS_COMPARE_TOLERANCE;
		}
		return a->ratio > b->ratio;
	}
	return a->max_abs_diff > b->max_abs_diff;
}

enum tps_status tps_run_compare_outcomes(const struct tps_model *model,
					 const struct tps_model_outcome *a,
					 const struct tps_model_outcome *b,
					 const struct tps_run_tolerance *tol,
					 struct tps_comparison *out,
					 struct tps_error *err)
{
	return tps_run_compare_outcomes_each(model, a, b, tol, NULL, out, err);
}

enum tps_status tps_run_compare_outcomes_each(
	const struct tps_model *model, const struct tps_model_outcome *a,
	const struct tps_model_outcome *b, const struct tps_run_tolerance *tol,
	const struct tps_run_element_sink *elements, struct tps_comparison *out,
	struct tps_error *err)
{
	const struct tps_model_bounds *x = &b->bounds;
	struct tps_comparison c = {0};
	int k = 0;

	/* Two outcomes of one model hold the same tensors. */
	assert(a->steps == b->steps && a->n_grads == b->n_grads &&
	       a->n_params == b->n_params);
	c.n = 1 + b->steps + b->n_grads + b->n_params;
	c.t = calloc((size_t)c.n, sizeof *c.t);
	if (!c.t) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	c.t[k].section = "output";
	tps_run_output_name(model, c.t[k].name, sizeof c.t[k].name);
	compare_tensor(&a->output, &b->output, &x->output, tol, elements,
		       &c.t[k++]);
	for (int i = 0; i < b->steps; i++) {
		int64_t one = 1;
		struct tps_shape s = tps_shape_make(1, &one);
		struct tps_tensor la = {.shape = s,
					.data = &a->loss[i],
					.storage = TPS_STORAGE_VIEW};
		struct tps_tensor lb = {.shape = s,
					.data = &b->loss[i],
					.storage = TPS_STORAGE_VIEW};
		c.t[k].section = "loss";
		c.t[k].index = i;
		snprintf(c.t[k].name, sizeof c.t[k].name, "loss");
		compare_tensor(&la, &lb, &x->loss[i], tol, elements, &c.t[k++]);
	}
	for (int i = 0; i < b->n_grads; i++) {
		c.t[k].section = "grads";
		c.t[k].index = i;
		snprintf(c.t[k].name, sizeof c.t[k].name, "%s.grad",
			 i < model->n_params ? model->params[i].name
					     : "input");
		compare_tensor(&a->grads[i], &b->grads[i], &x->grads[i], tol,
			       elements, &c.t[k++]);
	}
	for (int i = 0; i < b->n_params; i++) {
		c.t[k].section = "params_after";
		c.t[k].index = i;
		snprintf(c.t[k].name, sizeof c.t[k].name, "%s",
			 model->params[i].name);
		compare_tensor(&a->params_after[i], &b->params_after[i],
			       &x->params_after[i], tol, elements, &c.t[k++]);
	}
	c.match = true;
	c.worst = -1;
	for (int i = 0; i < c.n; i++) {
		const struct tps_compare_tensor *t = &c.t[i];
		c.match = c.match && t->match;
		c.max_abs_diff = t->max_abs_diff > c.max_abs_diff
					 ? t->max_abs_diff
					 : c.max_abs_diff;
		c.exact += t->rule == TPS_COMPARE_EXACT ? 1 : 0;
		if (t->rule != TPS_COMPARE_TOLERANCE) {
			c.bounded++;
			c.max_bound = t->max_bound > c.max_bound ? t->max_bound
								 : c.max_bound;
		}
		if (worse(&c, i, c.worst)) {
			c.worst = i;
		}
	}
	*out = c;
	return TPS_OK;
}

void tps_run_comparison_free(struct tps_comparison *c)
{
	if (!c) {
		return;
	}
	free(c->t);
	memset(c, 0, sizeof *c);
}

void tps_run_element_name(const struct tps_compare_tensor *t, int64_t at,
			  char *buf, size_t size)
{
	int64_t idx[TPS_MAX_DIMS];
	size_t used;
	if (!strcmp(t->section, "loss")) {
		snprintf(buf, size, "the loss of step %d", t->index);
		return;
	}
	snprintf(buf, size, "%s", t->name);
	used = strlen(buf);
	if (at < 0) {
		return;
	}
	for (int d = t->shape.ndim - 1; d >= 0; d--) {
		int64_t n = t->shape.dim[d] ? t->shape.dim[d] : 1;
		idx[d] = at % n;
		at /= n;
	}
	for (int d = 0; d < t->shape.ndim && used < size; d++) {
		int w = snprintf(buf + used, size - used, "[%lld]",
				 (long long)idx[d]);
		used += w > 0 ? (size_t)w : 0;
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
