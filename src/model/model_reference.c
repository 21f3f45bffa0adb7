/*
 * The reference: the same model on one device, on the global parameters
 * (each parameter's `global`), with the run's loss defined as the
 * simulation defines it (model.h). It shares the modules' arithmetic but
 * none of the placements, redistributions or collectives.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "optim.h"

/*
 * The weight of each row of the global output in the run's loss (a row is
 * the last dim; a sample has inner rows of its own):
 *   dp_grad global  mse 1/N (N: every element), sum 1
 *   dp_grad ddp     the mean over dp of each dp rank's own loss: mse
 *                   1/(dp N_r), sum 1/dp, for the rows of rank r's samples
 */
static double *row_scales(const struct tps_model *model,
			  const struct tps_tensor *y, struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	bool mse = spec->loss == TPS_LOSS_MSE;
	bool ce = spec->loss == TPS_LOSS_CROSS_ENTROPY;
	int64_t n = y->shape.dim[y->shape.ndim - 1];
	int64_t rows = n ? tps_tensor_numel(y) / n : 0;
	int64_t batch = y->shape.dim[0];
	int64_t inner = batch ? rows / batch : 0;
	double *scale = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *scale);
	int64_t p = 0;

	if (!scale) {
		tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (spec->dp_grad == TPS_DP_GRAD_GLOBAL) {
		for (int64_t i = 0; i < rows; i++) {
			scale[i] = mse	? 1.0 / (double)tps_tensor_numel(y)
				   : ce ? 1.0 / (double)rows
					: 1.0;
		}
		return scale;
	}
	/* Rank r holds the samples at positions p of the sampler's order. */
	for (int r = 0; r < model->dp; r++) {
		int64_t elements = model->dp_counts[r] * inner * n;
		int64_t own_rows = model->dp_counts[r] * inner;
		double s = mse	? 1.0 / ((double)model->dp * (double)elements)
			   : ce ? 1.0 / ((double)model->dp * (double)own_rows)
				: 1.0 / (double)model->dp;
		for (int64_t k = 0; k < model->dp_counts[r]; k++, p++) {
			int64_t sample = model->sample_order[p];
			for (int64_t j = 0; j < inner; j++) {
				scale[sample * inner + j] = s;
			}
		}
	}
	return scale;
}

/* The forward on one device; with save, each module keeps its input. */
static enum tps_status forward(struct tps_model *model,
			       const struct tps_tensor *input, bool save,
			       struct tps_tensor *output, struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	return tps_nn_reference_forward_seq(
		model->modules, model->modules + spec->n_modules,
		spec->mesh.pool, save, input, output, err);
}

/* Backward from dy: every parameter's ref_grad, and *dinput when the input
 * requires a gradient. */
static enum tps_status backward(struct tps_model *model,
				const struct tps_tensor *dy,
				struct tps_tensor *dinput,
				struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	return tps_nn_reference_backward_seq(
		model->modules, model->modules + spec->n_modules,
		spec->mesh.pool, dy, spec->input_requires_grad ? dinput : NULL,
		err);
}

static enum tps_status optimizer(struct tps_model *model, int step,
				 struct tps_error *err)
{
	const struct tps_optimizer_spec *opt = &model->spec->optimizer;
	const struct tps_dtypes *dt = &model->spec->dtypes;
	int states = tps_optim_state_count(opt);
	bool master = dt->of[TPS_ROLE_MASTER_PARAMS] != dt->of[TPS_ROLE_PARAMS];
	enum tps_status st = TPS_OK;
	for (int i = 0; i < model->n_params && st == TPS_OK; i++) {
		struct tps_param *p = &model->params[i];
		float *state[2] = {NULL, NULL};
		for (int k = 0; k < states && st == TPS_OK; k++) {
			if (!p->ref_state[k].data &&
			    tps_tensor_numel(&p->global) > 0) {
				st = tps_tensor_init(&p->ref_state[k],
						     &p->global.shape, err);
			}
			state[k] = p->ref_state[k].data;
		}
		/* The master copy, as the ranks make theirs. */
		if (st == TPS_OK && master && !p->ref_master.data) {
			st = tps_tensor_copy(&p->ref_master, &p->global, err);
		}
		if (st == TPS_OK) {
			tps_model_update(opt, step + 1, dt, &p->global,
					 master ? &p->ref_master : NULL,
					 p->ref_grad.data, state);
		}
	}
	return st;
}

static enum tps_status collect_training(const struct tps_model *model,
					struct tps_tensor *dinput,
					struct tps_model_outcome *out,
					struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	int n = model->n_params;
	for (int i = 0; i < n && st == TPS_OK; i++) {
		st = tps_tensor_copy(&out->grads[i], &model->params[i].ref_grad,
				     err);
		if (st == TPS_OK) {
			st = tps_tensor_copy(&out->params_after[i],
					     &model->params[i].global, err);
		}
	}
	if (st == TPS_OK && model->spec->input_requires_grad) {
		tps_tensor_move(&out->grads[n], dinput);
	}
	return st;
}

static enum tps_status train_step(struct tps_model *model,
				  const struct tps_tensor *y,
				  const struct tps_tensor *target, int step,
				  float *run_loss, struct tps_tensor *dinput,
				  struct tps_error *err)
{
	struct tps_tensor dy = {0};
	double *scale = row_scales(model, y, err);
	enum tps_status st = scale ? TPS_OK : TPS_ERR_NOMEM;
	if (st == TPS_OK) {
		*run_loss = (float)tps_loss_value(model->spec->loss, y, target,
						  scale);
		st = tps_loss_grad(model->spec->loss, y, target, scale, &dy,
				   err);
	}
	if (st == TPS_OK && dy.data) {
		/* Stored as the ranks store their output.grad. */
		tps_dtype_round_array(dy.data, tps_tensor_numel(&dy),
				      model->spec->dtypes.of[TPS_ROLE_GRADS]);
	}
	free(scale);
	if (st == TPS_OK) {
		tps_tensor_free(dinput);
		st = backward(model, &dy, dinput, err);
	}
	if (st == TPS_OK) {
		st = optimizer(model, step, err);
	}
	tps_tensor_free(&dy);
	return st;
}

enum tps_status tps_model_run_reference(struct tps_model *model,
					const struct tps_tensor *input,
					const struct tps_tensor *target,
					struct tps_model_outcome *out,
					struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	bool training = spec->mode == TPS_MODE_TRAINING;
	int steps = training ? spec->steps : 1;
	struct tps_model_outcome o = {0};
	struct tps_tensor dinput = {0};
	int n = model->n_params;
	/* Per parameter: the same on both sides so far; this step's
	 * gradient exact (model_exact.c). */
	bool *equal = malloc((size_t)(n > 0 ? n : 1) * sizeof *equal);
	bool *grad_ok = calloc((size_t)(n > 0 ? n : 1), sizeof *grad_ok);
	enum tps_status st =
		equal && grad_ok
			? tps_model_outcome_init(&o, model, err)
			: tps_error_set(err, TPS_ERR_NOMEM, "out of memory");

	for (int i = 0; equal && i < n; i++) {
		equal[i] = true;
	}
	for (int step = 0; step < steps && st == TPS_OK; step++) {
		struct tps_tensor y = {0};
		st = tps_model_exact_step(model, input, equal, step, &o.exact,
					  grad_ok, err);
		for (int i = 0; st == TPS_OK && training && i < n; i++) {
			equal[i] = equal[i] && grad_ok[i];
			if (step == steps - 1) {
				o.exact.grads[i] = grad_ok[i];
				o.exact.params_after[i] = equal[i];
			}
		}
		if (st == TPS_OK) {
			st = forward(model, input, training, &y, err);
		}
		if (st == TPS_OK && training) {
			st = train_step(model, &y, target, step, &o.loss[step],
					&dinput, err);
		}
		if (st == TPS_OK && step == steps - 1) {
			tps_tensor_move(&o.output, &y);
		}
		tps_tensor_free(&y);
	}
	if (st == TPS_OK && training) {
		st = collect_training(model, &dinput, &o, err);
	}
	free(equal);
	free(grad_ok);
	tps_tensor_free(&dinput);
	if (st != TPS_OK) {
		tps_model_outcome_free(&o);
		return st;
	}
	*out = o;
	return TPS_OK;
}

enum tps_status tps_model_reference_forward(struct tps_model *model,
					    const struct tps_tensor *input,
					    struct tps_tensor *output,
					    struct tps_error *err)
{
	return forward(model, input, false, output, err);
}
