/*
 * The reference: the same model on one device, on the global parameters
 * (each parameter's `global`), with the run's loss defined as the
 * simulation defines it (model.h). It shares the modules' arithmetic but
 * none of the placements, redistributions or collectives.
 *
 * It is also the bound pass (docs/numerics.md): every tensor it computes
 * carries its error bound (bound.h), through each module's rules
 * (bound_forward, bound_backward), the loss's (tps_loss_bound), the dp
 * average's rounding and the optimizer's (tps_optim_bound_step). The
 * values are the bytes the reference's ops make without bounds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "model.h"
#include "module_type.h"
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

/*
 * The weights the simulation gives the same rows (model_step.c's
 * scale_of): each dp rank's loss is scaled so that the dp average of the
 * gradients is the run's; dp_grad global: dp / (the global batch's
 * elements (mse), rows (cross_entropy) or 1 (sum)); ddp: 1 / (the rank's
 * own). dp times row_scales', computed as the simulation computes them.
 */
static double *sim_row_scales(const struct tps_model *model,
			      const struct tps_tensor *y,
			      struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	bool mse = spec->loss == TPS_LOSS_MSE;
	bool ce = spec->loss == TPS_LOSS_CROSS_ENTROPY;
	int64_t n = y->shape.dim[y->shape.ndim - 1];
	int64_t rows = n ? tps_tensor_numel(y) / n : 0;
	int64_t batch = y->shape.dim[0];
	int64_t inner = batch ? rows / batch : 0;
	double dp = model->dp;
	double *scale = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *scale);
	int64_t p = 0;

	if (!scale) {
		tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (spec->dp_grad == TPS_DP_GRAD_GLOBAL) {
		double global = mse  ? (double)tps_tensor_numel(y)
				: ce ? (double)rows
				     : 1.0;
		for (int64_t i = 0; i < rows; i++) {
			scale[i] = dp / global;
		}
		return scale;
	}
	for (int r = 0; r < model->dp; r++) {
		int64_t own_rows = model->dp_counts[r] * inner;
		double mine = mse  ? (double)(own_rows * n)
			      : ce ? (double)own_rows
				   : 1.0;
		for (int64_t k = 0; k < model->dp_counts[r]; k++, p++) {
			int64_t sample = model->sample_order[p];
			for (int64_t j = 0; j < inner; j++) {
				scale[sample * inner + j] = 1.0 / mine;
			}
		}
	}
	return scale;
}

/* Whether n is a power of two (1 included). */
static bool power_of_two(int n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

/* (1 + a)(1 + b) - 1: a rounding of relative error a, then one of b. */
static double chain(double a, double b)
{
	return a + b + a * b;
}

/* The bound context of the model's run at a step and phase (nn.h). */
static struct tps_bound_ctx bound_context(const struct tps_model *model,
					  struct tps_bound_sink sink, int step,
					  enum tps_phase phase)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_dtypes *dt = &spec->dtypes;
	double u = tps_dtype_unit_roundoff(TPS_DTYPE_F32);
	int tp = spec->mesh.shape[spec->tp_dim];
	struct tps_bound_ctx bc = {spec->mesh.pool,
				   u,
				   u,
				   u,
				   0.0,
				   ldexp(1.0, tps_dtypes_exact_bits(dt)),
				   *dt,
				   tp,
				   (double)model->dp,
				   step,
				   phase,
				   sink};
	if (!tps_dtypes_all_f32(dt)) {
		double us = fmax(
			tps_dtype_unit_roundoff(dt->of[TPS_ROLE_ACTIVATIONS]),
			tps_dtype_unit_roundoff(dt->of[TPS_ROLE_GRADS]));
		double ur = chain(tps_dtype_unit_roundoff(
					  dt->of[TPS_ROLE_REDUCE]),
				  u);
		double narrow = 0.0;
		us = chain(us, u);
		for (int i = 0; i < 3; i++) {
			narrow = chain(narrow, us);
		}
		for (int i = 0; i < tp + model->dp; i++) {
			narrow = chain(narrow, ur);
		}
		bc.narrow = (double)tps_bound_up(narrow);
	}
	return bc;
}

/* The forward on one device, each module's output with its bound; with
 * save, each module keeps its input and the input's bound. */
static enum tps_status forward(struct tps_model *model,
			       const struct tps_bound_ctx *bc,
			       const struct tps_tensor *input, bool save,
			       struct tps_tensor *output,
			       struct tps_bound *eoutput,
			       struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_bound ex = {0};
	/* The input is given: exact. */
	enum tps_status st = tps_bound_zero(&ex, &input->shape, err);
	if (st == TPS_OK) {
		st = tps_nn_bound_forward_seq(
			model->modules, model->modules + spec->n_modules, bc,
			save, input, &ex, output, eoutput, err);
	}
	tps_bound_free(&ex);
	if (st == TPS_OK) {
		st = tps_bound_emit(bc, "output", output, eoutput, err);
	}
	return st;
}

/*
 * The dp average (sum, then / dp) rounds once more where dp is not a
 * power of two and the sum was not exact: g is within e of its center,
 * and its quotient within u |g| of g (an exact sum of integers is dp
 * times an integer: its quotient is exact).
 */
static void dp_average_bound(const struct tps_model *model,
			     const struct tps_tensor *g, struct tps_bound *e)
{
	enum tps_dtype gd = model->spec->dtypes.of[TPS_ROLE_GRADS];
	double u = tps_dtype_unit_roundoff(TPS_DTYPE_F32);
	int64_t n = tps_tensor_numel(g);
	if (model->dp == 1 || tps_bound_is_none(e) ||
	    (power_of_two(model->dp) && gd == TPS_DTYPE_F32)) {
		return;
	}
	if (gd != TPS_DTYPE_F32) {
		/* The quotient (or the reduce dtype's sum) stored again in
		 * the grads dtype. */
		u = chain(u, tps_dtype_unit_roundoff(gd));
	}
	for (int64_t i = 0; i < n; i++) {
		double v = e->e.data[i];
		if (v > 0.0) {
			e->e.data[i] = tps_bound_up(
				v + u * (fabs(g->data[i]) / (1.0 - u) +
					 2.0 * v));
		}
	}
}

/* The unit roundoff of an update's stores: the parameter's (or its
 * master copy's) and the state's dtypes, each after float32 arithmetic. */
static double update_roundoff(const struct tps_dtypes *dt, bool master)
{
	double u = tps_dtype_unit_roundoff(TPS_DTYPE_F32);
	enum tps_dtype pd = dt->of[master ? TPS_ROLE_MASTER_PARAMS
					  : TPS_ROLE_PARAMS];
	enum tps_dtype sd = dt->of[TPS_ROLE_OPTIMIZER_STATE];
	double w = fmax(tps_dtype_unit_roundoff(pd),
			tps_dtype_unit_roundoff(sd));
	return pd == TPS_DTYPE_F32 && sd == TPS_DTYPE_F32 ? u : chain(w, u);
}

/* The parameter rounded from its master copy m (bound em) to dtype d:
 * its bound, em plus the rounding where em > 0 (bound.h: where em = 0
 * every evaluation rounds the same float). */
static void master_rounding_bound(const struct tps_tensor *m,
				  const struct tps_bound *em,
				  enum tps_dtype d, struct tps_bound *ep)
{
	double u = tps_dtype_unit_roundoff(d);
	for (int64_t i = 0; i < tps_tensor_numel(m); i++) {
		double v = em->e.data[i];
		ep->e.data[i] =
			v > 0.0 ? tps_bound_up(v + u * (fabs(m->data[i]) +
							 2.0 * v))
				: 0.0f;
	}
}

/* One parameter's tps_optim_bound_step, in chunks of elements on the
 * pool: each element's bound depends on that element alone. */
struct bound_step_job {
	const struct tps_optimizer_spec *opt;
	int64_t t, n;
	const float *p, *grad, *egrad;
	const float *state[2];
	float *ep, *estate[2];
	double u;
	enum tps_dtype state_dtype;
};

#define BOUND_STEP_CHUNK ((int64_t)1 << 16)

static void bound_step_chunk(void *opaque, int64_t item)
{
	const struct bound_step_job *j = opaque;
	int64_t i0 = item * BOUND_STEP_CHUNK;
	int64_t len =
		j->n - i0 < BOUND_STEP_CHUNK ? j->n - i0 : BOUND_STEP_CHUNK;
	const float *state[2];
	float *estate[2];
	for (int k = 0; k < 2; k++) {
		state[k] = j->state[k] ? j->state[k] + i0 : NULL;
		estate[k] = j->estate[k] ? j->estate[k] + i0 : NULL;
	}
	tps_optim_bound_step(j->opt, j->t, j->p + i0, j->grad + i0, state, len,
			     j->u, j->state_dtype, j->ep + i0, j->egrad + i0,
			     estate);
}

/* The bounds of one update, then the update; each parameter's bound
 * after it is reported as "<param>" (optimizer phase). */
static enum tps_status optimizer(struct tps_model *model,
				 const struct tps_bound_ctx *bc, int step,
				 struct tps_error *err)
{
	const struct tps_optimizer_spec *opt = &model->spec->optimizer;
	const struct tps_dtypes *dt = &model->spec->dtypes;
	bool master = dt->of[TPS_ROLE_MASTER_PARAMS] != dt->of[TPS_ROLE_PARAMS];
	double u = update_roundoff(dt, master);
	int states = tps_optim_state_count(opt);
	char name[TPS_NAME_MAX + 16];
	enum tps_status st = TPS_OK;
	for (int i = 0; i < model->n_params && st == TPS_OK; i++) {
		struct tps_param *p = &model->params[i];
		int64_t n = tps_tensor_numel(&p->global);
		float *state[2] = {NULL, NULL}, *estate[2] = {NULL, NULL};
		/* The values the update works on: the master copy (made at
		 * the first step from the parameter, as the ranks make
		 * theirs), or the parameter. */
		struct tps_tensor *work = master ? &p->ref_master : &p->global;
		struct tps_bound *ework =
			master ? &p->ref_master_bound : &p->ref_bound;
		const struct tps_bound *inputs[4] = {
			ework, &p->ref_grad_bound,
			states > 0 ? &p->ref_state_bound[0] : NULL,
			states > 1 ? &p->ref_state_bound[1] : NULL};
		const struct tps_bound *none;
		dp_average_bound(model, &p->ref_grad, &p->ref_grad_bound);
		if (model->dp > 1) {
			snprintf(name, sizeof name, "%s.grad", p->name);
			st = tps_bound_emit(bc, name, &p->ref_grad,
					    &p->ref_grad_bound, err);
		}
		if (st == TPS_OK && master && !p->ref_master.data) {
			st = tps_tensor_copy(&p->ref_master, &p->global, err);
			if (st == TPS_OK) {
				st = tps_bound_copy(&p->ref_master_bound,
						    &p->ref_bound, err);
			}
		}
		for (int k = 0; k < states && st == TPS_OK; k++) {
			if (!p->ref_state[k].data && n > 0) {
				st = tps_tensor_init(&p->ref_state[k],
						     &p->global.shape, err);
			}
			if (st == TPS_OK && step == 0) {
				tps_bound_free(&p->ref_state_bound[k]);
				st = tps_bound_zero(&p->ref_state_bound[k],
						    &p->global.shape, err);
			}
			state[k] = p->ref_state[k].data;
		}
		if (st != TPS_OK) {
			break;
		}
		none = tps_bound_first_none(inputs, 4);
		if (none) {
			struct tps_bound why = {0};
			tps_bound_none_like(&why, none);
			tps_bound_none_like(ework, &why);
			for (int k = 0; k < states; k++) {
				tps_bound_none_like(&p->ref_state_bound[k],
						    &why);
			}
		} else {
			for (int k = 0; k < states; k++) {
				estate[k] = p->ref_state_bound[k].e.data;
			}
			struct bound_step_job job = {
				opt,
				step + 1,
				n,
				work->data,
				p->ref_grad.data,
				p->ref_grad_bound.e.data,
				{state[0], state[1]},
				ework->e.data,
				{estate[0], estate[1]},
				u,
				dt->of[TPS_ROLE_OPTIMIZER_STATE]};
			tps_pool_for(bc->pool,
				     (n + BOUND_STEP_CHUNK - 1) /
					     BOUND_STEP_CHUNK,
				     bound_step_chunk, &job);
			/* The state's bound outgrowing float32 takes the
			 * parameter's with it. */
			for (int k = 0; k < states; k++) {
				snprintf(name, sizeof name, "%s's state",
					 p->name);
				if (!tps_bound_settle(&p->ref_state_bound[k],
						      name)) {
					tps_bound_none_like(
						ework, &p->ref_state_bound[k]);
				}
			}
			tps_bound_settle(ework, p->name);
		}
		tps_model_update(opt, step + 1, dt, &p->global,
				 master ? &p->ref_master : NULL,
				 p->ref_grad.data, state);
		if (master && tps_bound_is_none(ework)) {
			tps_bound_none_like(&p->ref_bound, ework);
		} else if (master) {
			tps_bound_free(&p->ref_bound);
			st = tps_bound_copy(&p->ref_bound, ework, err);
			if (st == TPS_OK) {
				master_rounding_bound(&p->ref_master, ework,
						      dt->of[TPS_ROLE_PARAMS],
						      &p->ref_bound);
			}
		}
		if (st != TPS_OK) {
			break;
		}
		st = tps_bound_emit(bc, p->name, &p->global, &p->ref_bound,
				    err);
	}
	return st;
}

/* The last step's gradients and parameters after it, with their bounds
 * (the input's gradient: the simulation's is the assembled one times
 * (float)(1 / dp), two more roundings unless dp is a power of two). */
static enum tps_status collect_training(const struct tps_model *model,
					struct tps_tensor *dinput,
					struct tps_bound *edinput,
					struct tps_model_outcome *out,
					struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	int n = model->n_params;
	enum tps_dtype gd = model->spec->dtypes.of[TPS_ROLE_GRADS];
	double u = chain(tps_dtype_unit_roundoff(TPS_DTYPE_F32),
			 gd == TPS_DTYPE_F32 ? 0.0
					     : tps_dtype_unit_roundoff(gd));
	for (int i = 0; i < n && st == TPS_OK; i++) {
		const struct tps_param *p = &model->params[i];
		st = tps_tensor_copy(&out->grads[i], &p->ref_grad, err);
		if (st == TPS_OK) {
			st = tps_bound_copy(&out->bounds.grads[i],
					    &p->ref_grad_bound, err);
		}
		if (st == TPS_OK) {
			st = tps_tensor_copy(&out->params_after[i], &p->global,
					     err);
		}
		if (st == TPS_OK) {
			st = tps_bound_copy(&out->bounds.params_after[i],
					    &p->ref_bound, err);
		}
	}
	if (st == TPS_OK && model->spec->input_requires_grad) {
		if (model->dp > 1 &&
		    (!power_of_two(model->dp) || gd != TPS_DTYPE_F32) &&
		    !tps_bound_is_none(edinput)) {
			for (int64_t k = 0; k < tps_tensor_numel(dinput); k++) {
				double e = edinput->e.data[k];
				edinput->e.data[k] = tps_bound_up(
					e + (2.0 * u + u * u) *
						    (fabs(dinput->data[k]) +
						     2.0 * e));
			}
		}
		tps_tensor_move(&out->grads[n], dinput);
		tps_bound_move(&out->bounds.grads[n], edinput);
	}
	return st;
}

/* A step's loss, its gradient and backward, with their bounds: the loss
 * (run_loss, and its bound *eloss), each parameter's ref_grad and bound,
 * and the input's gradient when it requires one. */
static enum tps_status loss_and_backward(struct tps_model *model,
					 struct tps_bound_ctx *bc,
					 const struct tps_tensor *y,
					 const struct tps_bound *ey,
					 const struct tps_tensor *target,
					 float *run_loss,
					 struct tps_bound *eloss,
					 struct tps_tensor *dinput,
					 struct tps_bound *edinput,
					 struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_tensor dy = {0}, loss = {0};
	struct tps_bound edy = {0};
	double *scale = row_scales(model, y, err);
	double *sim_scale = scale ? sim_row_scales(model, y, err) : NULL;
	struct tps_shape scalar = tps_shape_make(0, NULL);
	enum tps_status st = sim_scale ? TPS_OK : TPS_ERR_NOMEM;
	double value = 0.0;
	if (st == TPS_OK) {
		value = tps_loss_value(spec->loss, y, target, scale,
				       spec->classes);
		*run_loss = (float)value;
		st = tps_loss_grad(spec->loss, y, target, scale, spec->classes,
				   &dy, err);
	}
	if (st == TPS_OK) {
		st = tps_loss_bound(spec->loss, y, ey, target, scale,
				    sim_scale, model->dp, value, &dy,
				    bc->u_grad, spec->classes,
				    spec->loss_parallel
					    ? spec->mesh.shape[spec->tp_dim]
					    : 1,
				    spec->dtypes.of[TPS_ROLE_REDUCE], eloss,
				    &edy, err);
	}
	if (st == TPS_OK) {
		tps_bound_settle(eloss, "loss");
		tps_bound_settle(&edy, "output.grad");
	}
	if (st == TPS_OK) {
		/* Stored as the ranks store their output.grad. */
		tps_nn_bound_store(&dy, &edy, spec->dtypes.of[TPS_ROLE_GRADS]);
	}
	free(scale);
	free(sim_scale);
	if (st == TPS_OK) {
		st = tps_tensor_init(&loss, &scalar, err);
	}
	if (st == TPS_OK) {
		loss.data[0] = *run_loss;
		st = tps_bound_emit(bc, "loss", &loss, eloss, err);
	}
	bc->phase = TPS_PHASE_BACKWARD;
	if (st == TPS_OK) {
		st = tps_bound_emit(bc, "output.grad", &dy, &edy, err);
	}
	if (st == TPS_OK) {
		tps_tensor_free(dinput);
		tps_bound_free(edinput);
		st = tps_nn_bound_backward_seq(
			model->modules, model->modules + spec->n_modules, bc,
			&dy, &edy, spec->input_requires_grad ? dinput : NULL,
			edinput, err);
	}
	tps_tensor_free(&loss);
	tps_tensor_free(&dy);
	tps_bound_free(&edy);
	return st;
}

enum tps_status tps_model_run_reference(struct tps_model *model,
					const struct tps_tensor *input,
					const struct tps_tensor *target,
					struct tps_bound_sink bounds,
					struct tps_model_outcome *out,
					struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	bool training = spec->mode == TPS_MODE_TRAINING;
	int steps = training ? spec->steps : 1;
	struct tps_model_outcome o = {0};
	struct tps_tensor dinput = {0};
	struct tps_bound edinput = {0};
	enum tps_status st = tps_model_outcome_init(&o, model, err);

	/* The parameters are given: exact. Without training they stay so,
	 * and their bounds are read-only zeros that hold no memory. */
	for (int i = 0; st == TPS_OK && i < model->n_params; i++) {
		struct tps_param *p = &model->params[i];
		tps_bound_free(&p->ref_bound);
		st = training ? tps_bound_zero(&p->ref_bound, &p->global.shape,
					       err)
			      : tps_bound_zero_view(&p->ref_bound,
						    &p->global.shape, err);
	}
	for (int step = 0; step < steps && st == TPS_OK; step++) {
		struct tps_bound_ctx bc =
			bound_context(model, bounds, step, TPS_PHASE_FORWARD);
		struct tps_tensor y = {0};
		struct tps_bound ey = {0};
		st = forward(model, &bc, input, training, &y, &ey, err);
		if (st == TPS_OK && training) {
			st = loss_and_backward(model, &bc, &y, &ey, target,
					       &o.loss[step], &o.bounds.loss[step],
					       &dinput, &edinput, err);
		}
		if (st == TPS_OK && training) {
			bc.phase = TPS_PHASE_OPTIMIZER;
			st = optimizer(model, &bc, step, err);
		}
		if (st == TPS_OK && step == steps - 1) {
			tps_tensor_move(&o.output, &y);
			tps_bound_move(&o.bounds.output, &ey);
		}
		tps_tensor_free(&y);
		tps_bound_free(&ey);
	}
	if (st == TPS_OK && training) {
		st = collect_training(model, &dinput, &edinput, &o, err);
	}
	tps_tensor_free(&dinput);
	tps_bound_free(&edinput);
	if (st != TPS_OK) {
		tps_model_outcome_free(&o);
		return st;
	}
	*out = o;
	return TPS_OK;
}

size_t tps_model_bound_reason_max(const struct tps_model_spec *spec)
{
	/* Any bound may outgrow float32 (bound.h): "<tensor>: its error
	 * bound grew past 1e30", the tensor a module's "<name>.in.grad" or
	 * a parameter's "<param>'s state", its name at most the module's
	 * and a suffix. */
	size_t most = strlen("output.grad: its error bound grew past 1e30");
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		const char *type = tps_module_types[m->type].name;
		size_t n = strlen(m->name) + 48;
		most = n > most ? n : most;
		n = 0;
		if (!tps_module_ops_of(m->type)->bound_forward) {
			/* nn_seq.c's "<name>: <type> has no error-bound
			 * rule" */
			n = strlen(m->name) + strlen(type) + 26;
		} else if (m->type == TPS_MODULE_EMBEDDING && i > 0) {
			/* "<name>: its token ids have an error bound" */
			n = strlen(m->name) + 34;
		}
		most = n > most ? n : most;
	}
	/* run_compare.c's "bound 1.2e+34 > max |value| 1.2e+34, says
	 * nothing" is shorter than the first. */
	return most < TPS_BOUND_REASON_MAX ? most : TPS_BOUND_REASON_MAX - 1;
}

enum tps_status tps_model_reference_forward(struct tps_model *model,
					    const struct tps_tensor *input,
					    struct tps_tensor *output,
					    struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	return tps_nn_reference_forward_seq(
		model->modules, model->modules + spec->n_modules,
		spec->mesh.pool, false, input, output, err);
}
