/*
 * The normalised config the trace records as "config": every setting of the
 * run spec, defaults filled in, keys in a fixed order, plan entries in
 * object form and resolved per module (patterns expanded). It parses back
 * to itself. Keys, in this order:
 *
 *   tpsim, vars (when given, as resolved), mesh, tp_dim, dp_dim (when any:
 *   a string for one dim, an array for several), strict_tp_innermost,
 *   model, plan, input (shape, then values or init and seed, loaded_on,
 *   and requires_grad in training), init, params (when given), uneven,
 *   sampler, mode, then in training only: steps, loss, target (mse only:
 *   init, seed), optimizer (type and every field of that type), dp_grad,
 *   zero (when given: stage, and its stage's option);
 *   sequence_parallel_save (when not "shard"), recompute (when not
 *   "none"), pipeline (when given: dim, microbatches, schedule,
 *   virtual_stages for interleaved_1f1b, and stages, the ranges as
 *   resolved);
 *   then inject (when given), links (every mesh dim, in mesh order),
 *   device, trace, tolerance (when given, with the keys given: the
 *   defaults add no slack to the error bounds, docs/config.md), dtype
 *   (every role, when any is not float32).
 */
#include "config_internal.h"
#include "module_type.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>

/* Adds to a tree under construction and remembers a failed allocation, so
 * the builder below reads as the document it writes and checks once. */
struct builder {
	bool oom;
};

/* Adds item to parent (an object when key is not NULL, else an array);
 * returns item, or NULL (and item freed) when either allocation failed. */
static cJSON *put(struct builder *b, cJSON *parent, const char *key,
		  cJSON *item)
{
	bool added = false;
	if (item && parent) {
		added = key ? cJSON_AddItemToObject(parent, key, item)
			    : cJSON_AddItemToArray(parent, item);
	}
	if (!added) {
		cJSON_Delete(item);
		b->oom = true;
		return NULL;
	}
	return item;
}

static cJSON *put_object(struct builder *b, cJSON *parent, const char *key)
{
	return put(b, parent, key, cJSON_CreateObject());
}

static cJSON *put_array(struct builder *b, cJSON *parent, const char *key)
{
	return put(b, parent, key, cJSON_CreateArray());
}

static void put_string(struct builder *b, cJSON *parent, const char *key,
		       const char *s)
{
	put(b, parent, key, cJSON_CreateString(s));
}

static void put_number(struct builder *b, cJSON *parent, const char *key,
		       double d)
{
	put(b, parent, key, cJSON_CreateNumber(d));
}

static void put_bool(struct builder *b, cJSON *parent, const char *key, bool v)
{
	put(b, parent, key, cJSON_CreateBool(v));
}

/* A layout as the plan writes it: "shard(-1)" keeps its sign. */
static void put_layout(struct builder *b, cJSON *parent, const char *key,
		       struct tps_placement p)
{
	char buf[32];
	if (p.kind == TPS_PLACEMENT_SHARD && p.dim < 0) {
		snprintf(buf, sizeof buf, "shard(%d)", p.dim);
	} else {
		tps_placement_format(p, buf, sizeof buf);
	}
	put_string(b, parent, key, buf);
}

static void put_mesh(struct builder *b, cJSON *n, const struct tps_mesh *mesh)
{
	cJSON *o = put_object(b, n, "mesh");
	cJSON *a = put_array(b, o, "shape");
	for (int i = 0; i < mesh->ndim; i++) {
		put_number(b, a, NULL, mesh->shape[i]);
	}
	a = put_array(b, o, "dim_names");
	for (int i = 0; i < mesh->ndim; i++) {
		put_string(b, a, NULL, mesh->dim_names[i]);
	}
}

static void put_modules(struct builder *b, cJSON *a,
			const struct tps_module_spec *begin,
			const struct tps_module_spec *end);

/* The first key of type t that holds modules. */
static const struct tps_module_key *first_modules_key(enum tps_module_type t)
{
	const struct tps_module_key *keys = tps_module_types[t].keys;
	for (int k = 0; k < TPS_MODULE_MAX_KEYS && keys[k].name; k++) {
		if (keys[k].kind == TPS_KEY_MODULES) {
			return &keys[k];
		}
	}
	return NULL;
}

/* Whether m's `key` is on: a positive number or size not 0, a true bool
 * (what a key that `needs` it asks of it). */
static bool key_is_on(const struct tps_module_spec *m,
		      const struct tps_module_key *key)
{
	const char *field = (const char *)m + key->offset;
	switch (key->kind) {
	case TPS_KEY_SIZE: return *(const int64_t *)(const void *)field != 0;
	case TPS_KEY_POSITIVE:
	case TPS_KEY_UNIT:
		return *(const double *)(const void *)field != 0.0;
	case TPS_KEY_BOOL: return *(const bool *)(const void *)field;
	case TPS_KEY_CHOICE:
	case TPS_KEY_MODULE_NAME:
	case TPS_KEY_MODULES: break;
	}
	return true;
}

/* Module m's value of `key`, a key of its type. */
static void put_module_key(struct builder *b, cJSON *e,
			   const struct tps_module_spec *m,
			   const struct tps_module_key *key)
{
	const char *field = (const char *)m + key->offset;
	switch (key->kind) {
	case TPS_KEY_SIZE:
		/* Absent, and off (no vocabulary padding): left out. */
		if (key->off_when_absent &&
		    *(const int64_t *)(const void *)field == 0) {
			break;
		}
		/* Left out when it is the key it defaults to (num_kv_heads
		 * equal to num_heads: plain multi-head attention). */
		if (key->same_as &&
		    *(const int64_t *)(const void *)field ==
			    *(const int64_t *)(const void *)((const char *)m +
							    tps_module_key_named(
								    m->type,
								    key->same_as)
								    ->offset)) {
			break;
		}
		/* A padded head's out_features as the config gave it, the
		 * real vocabulary (make_vocab_size_divisible_by pads it). */
		if (m->padded_vocab && m->type == TPS_MODULE_LINEAR &&
		    key->offset == offsetof(struct tps_module_spec,
					    out_features)) {
			put_number(b, e, key->name, (double)m->real_vocab);
			break;
		}
		put_number(b, e, key->name,
			   (double)*(const int64_t *)(const void *)field);
		break;
	case TPS_KEY_POSITIVE:
	case TPS_KEY_UNIT:
		/* Absent, and off (rope_theta): left out. */
		if (key->off_when_absent &&
		    *(const double *)(const void *)field == 0.0) {
			break;
		}
		put_number(b, e, key->name,
			   *(const double *)(const void *)field);
		break;
	case TPS_KEY_CHOICE:
		/* Left out with the key it needs (rope_style: rope_theta). */
		if (key->needs &&
		    !key_is_on(m, tps_module_key_named(m->type, key->needs))) {
			break;
		}
		put_string(b, e, key->name,
			   key->choices[*(const int *)(const void *)field]);
		break;
	case TPS_KEY_BOOL:
		put_bool(b, e, key->name, *(const bool *)(const void *)field);
		break;
	case TPS_KEY_MODULE_NAME:
		/* Left out when absent (an untied linear). */
		if (field[0]) {
			put_string(b, e, key->name, field);
		}
		break;
	case TPS_KEY_MODULES:
		/* One body: every descendant. Two (gated): the first
		 * n_first_body, then the rest. */
		if (m->n_first_body == 0) {
			put_modules(b, put_array(b, e, key->name), m + 1,
				    m + 1 + m->n_descendants);
		} else if (key == first_modules_key(m->type)) {
			put_modules(b, put_array(b, e, key->name), m + 1,
				    m + 1 + m->n_first_body);
		} else {
			put_modules(b, put_array(b, e, key->name),
				    m + 1 + m->n_first_body,
				    m + 1 + m->n_descendants);
		}
		break;
	}
}

/* Modules [begin, end) of the pre-order list into array a: the top-level
 * ones, each with every key of its type (module_type.h), in its order, a
 * composite's body nested. */
static void put_modules(struct builder *b, cJSON *a,
			const struct tps_module_spec *begin,
			const struct tps_module_spec *end)
{
	for (const struct tps_module_spec *m = begin; m < end;
	     m += 1 + m->n_descendants) {
		const struct tps_module_type_desc *d =
			&tps_module_types[m->type];
		cJSON *e = put_object(b, a, NULL);
		put_string(b, e, "name", m->name);
		put_string(b, e, "type", d->name);
		for (int k = 0; k < TPS_MODULE_MAX_KEYS && d->keys[k].name;
		     k++) {
			put_module_key(b, e, m, &d->keys[k]);
		}
	}
}

static void put_model(struct builder *b, cJSON *n,
		      const struct tps_model_spec *s)
{
	put_modules(b, put_array(b, n, "model"), s->modules,
		    s->modules + s->n_modules);
}

static void put_plan(struct builder *b, cJSON *n,
		     const struct tps_model_spec *s)
{
	cJSON *p = put_object(b, n, "plan");
	for (int i = 0; i < s->n_modules; i++) {
		const struct tps_module_spec *m = &s->modules[i];
		cJSON *e;
		if (!m->planned) {
			continue;
		}
		e = put_object(b, p, m->name);
		put_string(b, e, "style", tps_style_names[m->style]);
		if (m->style == TPS_STYLE_PREPARE_INPUT) {
			put_layout(b, e, "input", m->input);
			put_layout(b, e, "desired_input", m->desired_input);
		} else if (m->style == TPS_STYLE_PREPARE_OUTPUT) {
			put_layout(b, e, "output", m->output);
			put_layout(b, e, "desired_output", m->desired_output);
		} else if (m->style != TPS_STYLE_REPLICATE) {
			put_layout(b, e, "input", m->input);
			put_layout(b, e, "output", m->output);
		}
		if (m->style == TPS_STYLE_ROWWISE) {
			put_string(b, e, "bias",
				   tps_bias_mode_names[m->bias_mode]);
		}
	}
}

static void put_input(struct builder *b, cJSON *n,
		      const struct tps_model_spec *s, const cJSON *values)
{
	cJSON *o = put_object(b, n, "input");
	cJSON *a = put_array(b, o, "shape");
	for (int i = 0; i < s->input_shape.ndim; i++) {
		put_number(b, a, NULL, (double)s->input_shape.dim[i]);
	}
	if (s->input_explicit) {
		/* As given: checked, and keeping their digits. */
		put(b, o, "values", tps_json_duplicate(values));
	} else {
		put_string(b, o, "init",
			   tps_init_method_names[s->input_init.method]);
		put_number(b, o, "seed", (double)s->input_init.seed);
	}
	put_string(b, o, "loaded_on", tps_input_source_names[s->input_source]);
	if (s->mode == TPS_MODE_TRAINING) {
		put_bool(b, o, "requires_grad", s->input_requires_grad);
	}
}

/* One dp dim as a string, several as an array in mesh order. */
static void put_dp_dim(struct builder *b, cJSON *n,
		       const struct tps_model_spec *s)
{
	cJSON *a;
	if (!s->dp_mask) {
		return;
	}
	if ((s->dp_mask & (s->dp_mask - 1)) == 0) {
		put_string(b, n, "dp_dim",
			   s->mesh.dim_names[__builtin_ctz(s->dp_mask)]);
		return;
	}
	a = put_array(b, n, "dp_dim");
	for (int i = 0; i < s->mesh.ndim; i++) {
		if (s->dp_mask & (1u << i)) {
			put_string(b, a, NULL, s->mesh.dim_names[i]);
		}
	}
}

/* Every field of the optimizer's type, and only those. */
static void put_optimizer(struct builder *b, cJSON *n,
			  const struct tps_optimizer_spec *o)
{
	cJSON *e = put_object(b, n, "optimizer"), *a;
	put_string(b, e, "type", tps_optimizer_type_names[o->type]);
	put_number(b, e, "lr", o->lr);
	switch (o->type) {
	case TPS_OPTIMIZER_SGD:
		put_number(b, e, "momentum", o->momentum);
		put_number(b, e, "dampening", o->dampening);
		put_number(b, e, "weight_decay", o->weight_decay);
		put_bool(b, e, "nesterov", o->nesterov);
		break;
	case TPS_OPTIMIZER_ADAMW:
		a = put_array(b, e, "betas");
		put_number(b, a, NULL, o->beta1);
		put_number(b, a, NULL, o->beta2);
		put_number(b, e, "eps", o->eps);
		put_number(b, e, "weight_decay", o->weight_decay);
		break;
	}
}

/* The pipeline's keys, the stages as ranges whether given or split. */
static void put_pipeline(struct builder *b, cJSON *n,
			 const struct tps_model_spec *s)
{
	const struct tps_pipeline_spec *pp = &s->pipeline;
	cJSON *o = put_object(b, n, "pipeline"), *a;
	put_string(b, o, "dim", s->mesh.dim_names[pp->dim]);
	put_number(b, o, "microbatches", pp->microbatches);
	put_string(b, o, "schedule", tps_pp_schedule_names[pp->schedule]);
	if (pp->schedule == TPS_PP_INTERLEAVED_1F1B) {
		put_number(b, o, "virtual_stages", pp->virtual_stages);
	}
	a = put_array(b, o, "stages");
	for (int k = 0; k < pp->p * pp->virtual_stages; k++) {
		cJSON *r = put_array(b, a, NULL);
		put_number(b, r, NULL, pp->ranges[k].first);
		put_number(b, r, NULL, pp->ranges[k].last);
	}
}

static void put_training(struct builder *b, cJSON *n,
			 const struct tps_model_spec *s, const cJSON *values)
{
	cJSON *o;
	put_number(b, n, "steps", s->steps);
	put_string(b, n, "loss", tps_loss_names[s->loss]);
	if (s->loss == TPS_LOSS_CROSS_ENTROPY) {
		put_bool(b, n, "loss_parallel", s->loss_parallel);
	}
	if (s->loss != TPS_LOSS_SUM) {
		o = put_object(b, n, "target");
		if (s->target_explicit) {
			put(b, o, "values", tps_json_duplicate(values));
		} else {
			put_string(
				b, o, "init",
				tps_init_method_names[s->target_init.method]);
			put_number(b, o, "seed", (double)s->target_init.seed);
		}
	}
	put_optimizer(b, n, &s->optimizer);
	put_string(b, n, "dp_grad", tps_dp_grad_names[s->dp_grad]);
	if (s->zero.stage) {
		cJSON *z = put_object(b, n, "zero");
		put_number(b, z, "stage", s->zero.stage);
		if (s->zero.stage == 3) {
			put_bool(b, z, "reshard_after_forward",
				 s->zero.reshard_after_forward);
		}
		if (s->zero.stage == 1) {
			put_bool(b, z, "distributed_optimizer",
				 s->zero.distributed_optimizer);
		}
	}
	/* Only when not the default, so that the traces of configs that
	 * leave it out keep their bytes. */
	if (s->sp_save != TPS_SP_SAVE_SHARD) {
		put_string(b, n, "sequence_parallel_save",
			   tps_sp_save_names[s->sp_save]);
	}
	if (s->recompute != TPS_RECOMPUTE_NONE) {
		put_string(b, n, "recompute",
			   tps_recompute_names[s->recompute]);
	}
	if (s->pipeline.enabled) {
		put_pipeline(b, n, s);
	}
}

static void put_cost(struct builder *b, cJSON *n, const struct tps_mesh *mesh,
		     const struct tps_cost_spec *cost)
{
	cJSON *o = put_object(b, n, "links"), *e;
	for (int i = 0; i < mesh->ndim; i++) {
		e = put_object(b, o, mesh->dim_names[i]);
		put_number(b, e, "GBps", cost->links[i].gbps);
		put_number(b, e, "latency_us", cost->links[i].latency_us);
	}
	o = put_object(b, n, "device");
	put_number(b, o, "TFLOPS", cost->tflops);
}

cJSON *cfg_normalize(const cJSON *root, cJSON *spare,
		     const struct tps_run_spec *run)
{
	const struct tps_model_spec *s = &run->model;
	struct builder b = {false};
	cJSON *n = cJSON_CreateObject(), *o;
	const cJSON *params = cfg_get(root, "params");

	if (!n) {
		return NULL;
	}
	put_number(&b, n, "tpsim", 1);
	if (cfg_get(root, "vars")) {
		o = put_object(&b, n, "vars");
		for (int i = 0; i < run->n_vars; i++) {
			put_number(&b, o, run->vars[i].name,
				   run->vars[i].value);
		}
	}
	put_mesh(&b, n, &s->mesh);
	put_string(&b, n, "tp_dim", s->mesh.dim_names[s->tp_dim]);
	put_dp_dim(&b, n, s);
	put_bool(&b, n, "strict_tp_innermost", s->strict_tp_innermost);
	put_model(&b, n, s);
	put_plan(&b, n, s);
	put_input(&b, n, s, cfg_get(cfg_get(root, "input"), "values"));
	o = put_object(&b, n, "init");
	put_string(&b, o, "method",
		   tps_init_method_names[s->param_init.method]);
	put_number(&b, o, "seed", (double)s->param_init.seed);
	if (params) {
		/* As given: the values are checked, and keep their digits.
		 * Explicit values can be a million numbers (packed, when
		 * read from a config's text): a tree about to be deleted
		 * gives them up rather than have them copied. */
		assert(!spare || spare == root);
		put(&b, n, "params",
		    spare ? cJSON_DetachItemFromObjectCaseSensitive(spare,
								    "params")
			  : tps_json_duplicate(params));
	}
	put_string(&b, n, "uneven", tps_uneven_names[s->uneven]);
	put_string(&b, n, "sampler", tps_sampler_names[s->sampler]);
	put_string(&b, n, "mode", tps_mode_names[s->mode]);
	if (s->mode == TPS_MODE_TRAINING) {
		put_training(&b, n, s,
			     cfg_get(cfg_get(root, "target"), "values"));
	}
	if (s->inject) {
		o = put_array(&b, n, "inject");
		for (int m = 0; tps_mistake_names[m]; m++) {
			if (s->inject & TPS_MISTAKE_BIT(m)) {
				put_string(&b, o, NULL, tps_mistake_names[m]);
			}
		}
	}
	if (run->compute == TPS_COMPUTE_SYMBOLIC) {
		put_string(&b, n, "compute", tps_compute_names[run->compute]);
	}
	put_cost(&b, n, &s->mesh, &run->cost);
	o = put_object(&b, n, "trace");
	put_string(&b, o, "values", tps_trace_values_names[run->values]);
	/* Only what the config gave: the defaults mean "no slack" to the
	 * bounds, which a written 1e-5 would not. */
	if (run->atol_given || run->rtol_given) {
		o = put_object(&b, n, "tolerance");
		if (run->atol_given) {
			put_number(&b, o, "atol", run->atol);
		}
		if (run->rtol_given) {
			put_number(&b, o, "rtol", run->rtol);
		}
	}
	if (!tps_dtypes_all_f32(&s->dtypes)) {
		/* Every role, when any is not float32: a float32 run's
		 * config stays as it was before dtypes. */
		o = put_object(&b, n, "dtype");
		for (int r = 0; r < TPS_DTYPE_ROLE_COUNT; r++) {
			put_string(&b, o, tps_dtype_role_names[r],
				   tps_dtype_names[s->dtypes.of[r]]);
		}
	}
	if (b.oom) {
		cJSON_Delete(n);
		return NULL;
	}
	return n;
}
