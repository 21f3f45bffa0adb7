#include "tpsim/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpsim/rng.h"

enum tps_status tps_model_init_tensor(struct tps_tensor *t,
				      const struct tps_shape *shape,
				      struct tps_init_spec init, float a,
				      const char *stream, struct tps_error *err)
{
	struct tps_tensor v;
	struct tps_rng rng;
	int64_t n;
	enum tps_status st = tps_tensor_init(&v, shape, err);
	if (st != TPS_OK) {
		return st;
	}
	n = tps_tensor_numel(&v);
	tps_rng_seed_named(&rng, init.seed, stream);
	for (int64_t i = 0; i < n; i++) {
		switch (init.method) {
		case TPS_INIT_ARANGE: v.data[i] = (float)(i + 1); break;
		case TPS_INIT_ONES: v.data[i] = 1.0f; break;
		case TPS_INIT_ZEROS: break;
		case TPS_INIT_UNIFORM:
			v.data[i] = tps_rng_uniform(&rng, a);
			break;
		case TPS_INIT_NORMAL:
			v.data[i] = tps_rng_normal(&rng, a);
			break;
		}
	}
	*t = v;
	return TPS_OK;
}

static enum tps_status check_divisible(const struct tps_model_spec *spec,
				       const struct tps_module_spec *m,
				       const char *what, int64_t size,
				       struct tps_error *err)
{
	int tp = spec->mesh.shape[spec->tp_dim];
	if (spec->uneven != TPS_UNEVEN_DIVISIBLE || size % tp == 0) {
		return TPS_OK;
	}
	return tps_error_set(
		err, TPS_ERR_INPUT,
		"%s: %s %s: %s %lld not divisible by %s=%d (uneven: "
		"divisible)",
		m->plan_pointer, tps_style_names[m->style], m->name, what,
		(long long)size, spec->mesh.dim_names[spec->tp_dim], tp);
}

/* Every size the plan splits over tp must divide in "divisible" mode. */
static enum tps_status check_plan_divisible(const struct tps_model_spec *spec,
					    struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	for (int i = 0; i < spec->n_modules && st == TPS_OK; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		const struct tps_placement *io[2] = {&m->input, &m->output};
		int nd = spec->input_shape.ndim;
		if (m->style == TPS_STYLE_COLWISE) {
			st = check_divisible(spec, m, "out_features",
					     m->out_features, err);
		} else if (m->style == TPS_STYLE_ROWWISE) {
			st = check_divisible(spec, m, "in_features",
					     m->in_features, err);
		}
		/* Sequence-parallel layouts split an activation dim other
		 * than the last, whose size is the input's. */
		for (int k = 0; k < 2 && st == TPS_OK; k++) {
			int d = tps_dim_normalize(io[k]->dim, nd);
			char what[32];
			if (io[k]->kind != TPS_PLACEMENT_SHARD || d < 0 ||
			    d == nd - 1) {
				continue;
			}
			snprintf(what, sizeof what, "activation dim %d", d);
			st = check_divisible(spec, m, what,
					     spec->input_shape.dim[d], err);
		}
	}
	return st;
}

static const struct tps_param_override *
find_override(const struct tps_model_spec *spec, const char *name)
{
	for (int i = 0; i < spec->n_overrides; i++) {
		if (strcmp(spec->overrides[i].name, name) == 0) {
			return &spec->overrides[i];
		}
	}
	return NULL;
}

/* Makes one parameter's global value and distributes it: shard or
 * replicate on tp as the module says, replicate on every other mesh dim. */
static enum tps_status make_param(const struct tps_model_spec *spec,
				  struct tps_param *p, const char *module,
				  const struct tps_param_spec *ps,
				  struct tps_error *err)
{
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	const struct tps_param_override *o;
	enum tps_status st;

	snprintf(p->name, sizeof p->name, "%s.%s", module, ps->suffix);
	o = find_override(spec, p->name);
	if (o) {
		st = tps_tensor_copy(&p->init, &o->value, err);
	} else {
		/* nn.Linear's bound: a = 1/sqrt(fan_in), for W and b. */
		float a = ps->fan_in > 0
				  ? (float)(1.0 / sqrt((double)ps->fan_in))
				  : 0.0f;
		st = tps_model_init_tensor(&p->init, &ps->shape,
					   spec->param_init, a, p->name, err);
	}
	for (int i = 0; i < spec->mesh.ndim; i++) {
		placements[i] = tps_placement_replicate();
	}
	placements[spec->tp_dim] = ps->tp;
	if (st == TPS_OK) {
		st = tps_dtensor_distribute(&p->value, &spec->mesh, &p->init,
					    placements, err);
	}
	return st;
}

enum tps_status tps_model_init(struct tps_model *model,
			       const struct tps_model_spec *spec,
			       struct tps_error *err)
{
	struct tps_model m = {0};
	enum tps_status st = check_plan_divisible(spec, err);
	if (st != TPS_OK) {
		return st;
	}
	m.spec = spec;
	m.modules = calloc((size_t)spec->n_modules, sizeof *m.modules);
	m.params = calloc((size_t)spec->n_modules * TPS_MODULE_MAX_PARAMS,
			  sizeof *m.params);
	if (!m.modules || !m.params) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < spec->n_modules && st == TPS_OK; i++) {
		struct tps_module *mod = &m.modules[i];
		struct tps_param_spec ps[TPS_MODULE_MAX_PARAMS];
		int n;
		mod->spec = &spec->modules[i];
		mod->ops = tps_module_ops_of(mod->spec->type);
		mod->params = &m.params[m.n_params];
		n = mod->ops->parameters(mod->spec, spec->tp_dim, ps);
		for (int k = 0; k < n && st == TPS_OK; k++) {
			st = make_param(spec, &m.params[m.n_params++],
					mod->spec->name, &ps[k], err);
			mod->n_params++;
		}
	}
out:
	if (st != TPS_OK) {
		tps_model_free(&m);
		return st;
	}
	*model = m;
	return TPS_OK;
}

void tps_model_free(struct tps_model *model)
{
	if (!model) {
		return;
	}
	for (int i = 0; i < model->n_params; i++) {
		tps_tensor_free(&model->params[i].init);
		tps_dtensor_free(&model->params[i].value);
	}
	free(model->params);
	free(model->modules);
	memset(model, 0, sizeof *model);
}

enum tps_status tps_model_emit_setup(const struct tps_model *model,
				     struct tps_event_sink sink,
				     struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	for (int i = 0; i < model->n_params && st == TPS_OK; i++) {
		const struct tps_param *p = &model->params[i];
		char module[TPS_NAME_MAX + 8];
		struct tps_event ev = {0};
		char *dot;
		snprintf(module, sizeof module, "%s", p->name);
		dot = strrchr(module, '.');
		if (dot) {
			*dot = '\0';
		}
		ev.step = -1;
		ev.phase = TPS_PHASE_SETUP;
		ev.module = module;
		ev.kind = TPS_EVENT_LAYOUT;
		ev.op = "distribute";
		ev.tensor = p->name;
		ev.value = &p->value;
		st = tps_event_emit(sink, &ev, err);
	}
	return st;
}

enum tps_status tps_model_make_input(const struct tps_model_spec *spec,
				     struct tps_tensor *input,
				     struct tps_error *err)
{
	return tps_model_init_tensor(input, &spec->input_shape,
				     spec->input_init, 1.0f, "input", err);
}

/* The input on every rank: replicated, then split over dp by the sampler. */
static enum tps_status distribute_input(const struct tps_nn_context *ctx,
					const struct tps_model_spec *spec,
					const struct tps_tensor *input,
					struct tps_dtensor *x,
					struct tps_error *err)
{
	struct tps_placement p[TPS_MAX_MESH_DIMS];
	enum tps_status st;
	for (int i = 0; i < spec->mesh.ndim; i++) {
		p[i] = tps_placement_replicate();
	}
	st = tps_dtensor_distribute(x, &spec->mesh, input, p, err);
	if (st != TPS_OK || !spec->dp_mask) {
		return st;
	}
	for (int i = 0; i < spec->mesh.ndim; i++) {
		if (spec->dp_mask & (1u << i)) {
			p[i] = tps_placement_shard(0);
		}
	}
	st = tps_nn_redistribute(ctx, x, p, "input", "input",
				 "each dp rank takes its chunk of the batch",
				 err);
	if (st != TPS_OK) {
		tps_dtensor_free(x);
	}
	return st;
}

enum tps_status tps_model_forward(const struct tps_model *model,
				  const struct tps_tensor *input,
				  struct tps_event_sink sink, int step,
				  struct tps_tensor *output,
				  struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_nn_context ctx = {&spec->mesh, spec->tp_dim, sink, step,
				     TPS_PHASE_FORWARD};
	struct tps_dtensor x = {0};
	enum tps_status st = distribute_input(&ctx, spec, input, &x, err);

	for (int i = 0; i < spec->n_modules && st == TPS_OK; i++) {
		struct tps_module *m = &model->modules[i];
		struct tps_dtensor y = {0};
		st = m->ops->forward(&ctx, m, &x, &y, err);
		if (st == TPS_OK) {
			tps_dtensor_free(&x);
			x = y;
		}
	}
	if (st == TPS_OK) {
		st = tps_nn_to_layout(&ctx, &x, tps_placement_replicate(),
				      "output", "output",
				      "the model output "
				      "is materialised in full",
				      err);
	}
	if (st == TPS_OK) {
		st = tps_dtensor_full_tensor(&x, output, err);
	}
	tps_dtensor_free(&x);
	return st;
}

enum tps_status tps_model_reference_forward(const struct tps_model *model,
					    const struct tps_tensor *input,
					    struct tps_tensor *output,
					    struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_tensor x = {0}, y = {0};
	enum tps_status st = tps_tensor_copy(&x, input, err);

	for (int i = 0; i < spec->n_modules && st == TPS_OK; i++) {
		const struct tps_module *m = &model->modules[i];
		st = m->ops->reference_forward(m, &x, &y, err);
		if (st == TPS_OK) {
			tps_tensor_move(&x, &y);
		}
	}
	if (st == TPS_OK) {
		*output = x;
	} else {
		tps_tensor_free(&x);
	}
	return st;
}

int64_t tps_model_estimate_bytes(const struct tps_model_spec *spec)
{
	struct tps_memory_context mc = {spec->mesh.world_size,
					spec->mesh.shape[spec->tp_dim]};
	int64_t rows = 1, widest, total = 0;

	for (int d = 0; d + 1 < spec->input_shape.ndim; d++) {
		rows = tps_sat_mul(rows, spec->input_shape.dim[d]);
	}
	widest = spec->input_shape.ndim
			 ? spec->input_shape.dim[spec->input_shape.ndim - 1]
			 : 1;
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		total = tps_sat_add(
			total,
			tps_module_ops_of(m->type)->memory_estimate(m, &mc));
		if (m->type == TPS_MODULE_LINEAR && m->out_features > widest) {
			widest = m->out_features;
		}
	}
	/* About four live activations per rank (input, output, collective
	 * scratch) and the reference's two. */
	return tps_sat_add(total,
			   tps_sat_mul(tps_sat_mul(tps_sat_mul(rows, widest),
						   4 * mc.world + 2),
				       4));
}
