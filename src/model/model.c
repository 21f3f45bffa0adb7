#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith.h"
#include "backend.h"
#include "model_internal.h"
#include "optim.h"
#include "pool.h"
#include "rng.h"

/* Element i of a tensor the init method fills, the stream at i. */
static float draw(struct tps_init_spec init, float a, struct tps_rng *rng,
		  int64_t i)
{
	switch (init.method) {
	case TPS_INIT_ARANGE: return (float)(i + 1);
	case TPS_INIT_ONES: return 1.0f;
	case TPS_INIT_ZEROS: return 0.0f;
	/* A tensor of no module: nn.Linear's, U(-a, a). */
	case TPS_INIT_TORCH:
	case TPS_INIT_UNIFORM: return tps_rng_uniform(rng, a);
	case TPS_INIT_NORMAL: return tps_rng_normal(rng, a);
	case TPS_INIT_TOKENS:
		/* An integer id in [0, a): the high 32 bits scaled. */
		return (float)(((tps_rng_next(rng) >> 32) * (uint64_t)a) >> 32);
	}
	return 0.0f;
}

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
	if (init.method == TPS_INIT_UNIFORM || init.method == TPS_INIT_TORCH) {
		/* draw()'s values, the generator inlined. */
		tps_rng_uniform_fill(&rng, a, v.data, n);
	} else {
		for (int64_t i = 0; i < n; i++) {
			v.data[i] = draw(init, a, &rng, i);
		}
	}
	*t = v;
	return TPS_OK;
}

/*
 * The region [offset, offset + length) of what tps_model_init_tensor makes
 * of `shape`, without the whole: every element is drawn in the same order
 * from the same stream, and those in the region are kept (row-major, so
 * in the region's own order). Under a backend (backend.h) a process makes
 * its ranks' shards so, and never holds a parameter whole.
 */
static enum tps_status init_region(struct tps_tensor *t,
				   const struct tps_shape *shape,
				   struct tps_init_spec init, float a,
				   const char *stream, const int64_t *offset,
				   const int64_t *length, struct tps_error *err)
{
	struct tps_shape rshape = tps_shape_make(shape->ndim, length);
	int64_t idx[TPS_MAX_DIMS] = {0}, n = 1, kept = 0;
	struct tps_tensor v;
	struct tps_rng rng;
	enum tps_status st = tps_tensor_init(&v, &rshape, err);
	if (st != TPS_OK) {
		return st;
	}
	for (int d = 0; d < shape->ndim; d++) {
		n *= shape->dim[d];
	}
	tps_rng_seed_named(&rng, init.seed, stream);
	for (int64_t i = 0; i < n; i++) {
		float x = draw(init, a, &rng, i);
		bool inside = true;
		for (int d = 0; d < shape->ndim; d++) {
			inside = inside && idx[d] >= offset[d] &&
				 idx[d] < offset[d] + length[d];
		}
		if (inside) {
			v.data[kept++] = x;
		}
		for (int d = shape->ndim - 1; d >= 0; d--) {
			if (++idx[d] < shape->dim[d]) {
				break;
			}
			idx[d] = 0;
		}
	}
	*t = v;
	return TPS_OK;
}

/* One parameter's shards on the ranks this process holds, made by
 * init_region (the others: meta). */
struct region_job {
	const struct tps_model_spec *spec;
	const struct tps_param_spec *ps;
	struct tps_init_spec init;
	float a;
	const char *name;
	const struct tps_placement *placements;
};

static enum tps_status region_rank(void *opaque, int r, struct tps_tensor *out,
				   struct tps_error *err)
{
	const struct region_job *job = opaque;
	const struct tps_mesh *mesh = &job->spec->mesh;
	int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
	enum tps_status st;
	tps_dtensor_local_region(mesh, &job->ps->shape, job->placements, r,
				 offset, length);
	if (!tps_mesh_holds(mesh, r)) {
		struct tps_shape shape =
			tps_shape_make(job->ps->shape.ndim, length);
		return tps_tensor_init_meta(out, &shape, err);
	}
	st = init_region(out, &job->ps->shape, job->init, job->a, job->name,
			 offset, length, err);
	if (st == TPS_OK && out->data) {
		tps_dtype_round_array(out->data, tps_tensor_numel(out),
				      job->spec->dtypes.of[TPS_ROLE_PARAMS]);
	}
	return st;
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

/*
 * A vocab-parallel embedding's vocabulary in "divisible" mode. When tp
 * does not divide it, the message adds the sizes a padded one would
 * have: the least multiple of tp at or above it, and Megatron's
 * (_vocab_size_with_padding: a multiple of make_vocab_size_divisible_by
 * x tp, 128 by default), which the embedding's
 * make_vocab_size_divisible_by key makes tpsim do.
 */
static enum tps_status check_vocab_divisible(const struct tps_model_spec *spec,
					     const struct tps_module_spec *m,
					     struct tps_error *err)
{
	int64_t tp = spec->mesh.shape[spec->tp_dim];
	/* Padded (make_vocab_size_divisible_by), it divides by design. */
	int64_t v = m->padded_vocab ? m->padded_vocab : m->num_embeddings;
	int64_t mega = 128 * tp;
	if (check_divisible(spec, m, "num_embeddings", v, NULL) == TPS_OK) {
		return TPS_OK;
	}
	return tps_error_set(
		err, TPS_ERR_INPUT,
		"%s: %s %s: num_embeddings %lld not divisible by %s=%d "
		"(uneven: divisible): a vocabulary padded to %lld would divide "
		"(Megatron's make_vocab_size_divisible_by 128 pads it to %lld, "
		"a multiple of 128 x tp; set \"make_vocab_size_divisible_by\" "
		"on %s to pad it)",
		m->plan_pointer, tps_style_names[m->style], m->name,
		(long long)v, spec->mesh.dim_names[spec->tp_dim], (int)tp,
		(long long)((v + tp - 1) / tp * tp),
		(long long)((v + mega - 1) / mega * mega), m->name);
}

/* Every size the plan splits over tp must divide in "divisible" mode. */
static enum tps_status check_plan_divisible(const struct tps_model_spec *spec,
					    struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	for (int i = 0; i < spec->n_modules && st == TPS_OK; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		const struct tps_placement *io[2] = {&m->input, &m->output};
		int nd = tps_model_activation_ndim(spec);
		/* An attention's linears split whole heads. */
		int64_t block = m->shard_block > 1 ? m->shard_block : 1;
		if (m->style == TPS_STYLE_COLWISE) {
			st = check_divisible(
				spec, m, block > 1 ? "heads" : "out_features",
				m->out_features / block, err);
		} else if (m->style == TPS_STYLE_ROWWISE) {
			st = check_divisible(
				spec, m, block > 1 ? "heads" : "in_features",
				m->in_features / block, err);
		} else if (m->style == TPS_STYLE_VOCAB) {
			st = check_vocab_divisible(spec, m, err);
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

/*
 * The dp split of the batch: how many rows each dp rank holds (one chunk
 * over the flattened dp group; a chunk of a chunk with chunk_of_chunks:
 * tps_dp_split_range) and, for DistributedSampler, which rows: flattened
 * dp rank r takes r, r + dp, r + 2 dp, ... (shuffle=False; the config
 * ensures dp divides the batch).
 */
static enum tps_status plan_dp_split(const struct tps_model_spec *spec,
				     struct tps_model *m, struct tps_error *err)
{
	const struct tps_mesh *mesh = &spec->mesh;
	int64_t n = spec->input_shape.dim[0];
	m->dp = tps_mesh_group_size(mesh, spec->dp_mask);
	m->dp_counts = calloc((size_t)m->dp, sizeof *m->dp_counts);
	/* A meta model moves no rows: it needs no order of them (2^31 rows
	 * would be 16 GiB of it). */
	m->sample_order = calloc((size_t)(n > 0 && !m->meta ? n : 1),
				 sizeof *m->sample_order);
	if (!m->dp_counts || !m->sample_order) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int r = 0; r < m->dp; r++) {
		int64_t start;
		tps_dp_split_range(spec, r, &start, &m->dp_counts[r]);
	}
	if (spec->sampler == TPS_SAMPLER_DISTRIBUTED && n % m->dp != 0) {
		return tps_error_set(
			err, TPS_ERR_INPUT,
			"DistributedSampler needs the batch (%lld) "
			"divisible by the dp size (%d)",
			(long long)n, m->dp);
	}
	for (int64_t p = 0; !m->meta && p < n; p++) {
		int64_t per = n / m->dp;
		m->sample_order[p] = spec->sampler == TPS_SAMPLER_DISTRIBUTED
					     ? (p % per) * m->dp + p / per
					     : p;
	}
	return TPS_OK;
}

/*
 * The init of one parameter: "torch" is its PyTorch default; "uniform"
 * and "normal" draw only what PyTorch draws, and keep PyTorch's constant
 * starts (a layer norm's ones and zeros), as a U(-1/sqrt(dim), ...) gain
 * matches no PyTorch model. "arange", "ones" and "zeros" fill every
 * parameter, as their names say.
 */
static struct tps_init_spec param_init(struct tps_init_spec init,
				       const struct tps_param_spec *ps)
{
	bool constant =
		ps->torch == TPS_INIT_ONES || ps->torch == TPS_INIT_ZEROS;
	if (init.method == TPS_INIT_TORCH ||
	    (constant && (init.method == TPS_INIT_UNIFORM ||
			  init.method == TPS_INIT_NORMAL))) {
		init.method = ps->torch;
	}
	return init;
}

/* Whether the ranks' parameters are views of the global ones (shards,
 * strided or not, and replicas; tps_dtensor_distribute_shared): when
 * nothing writes them, in an inference run, and the process holds every
 * rank. */
static bool shares_params(const struct tps_model_spec *spec)
{
	return spec->mode != TPS_MODE_TRAINING && !spec->mesh.backend;
}

/* Makes one parameter's global value and distributes it: shard or
 * replicate on tp as the module says, replicate on every other mesh dim. */

static enum tps_status make_param(const struct tps_model_spec *spec, bool meta,
				  struct tps_param *p, const char *module,
				  const struct tps_param_spec *ps,
				  struct tps_error *err)
{
	struct tps_placement placements[TPS_MAX_MESH_DIMS];
	const struct tps_param_override *o;
	enum tps_status st;

	snprintf(p->name, sizeof p->name, "%s.%s", module, ps->suffix);
	p->module = module;
	o = find_override(spec, p->name);
	for (int i = 0; i < spec->mesh.ndim; i++) {
		placements[i] = tps_placement_replicate();
	}
	placements[spec->tp_dim] = ps->tp;
	if (!meta && !o && !tps_model_keeps_params(spec) &&
	    ps->tp.kind != TPS_PLACEMENT_PARTIAL) {
		/* This process's shards alone (backend.h); the whole is
		 * only a shape here. */
		struct region_job job = {
			spec,
			ps,
			param_init(spec->param_init, ps),
			ps->fan_in > 0 ? (float)(1.0 / sqrt((double)ps->fan_in))
				       : 0.0f,
			p->name,
			placements};
		st = tps_tensor_init_meta(&p->global, &ps->shape, err);
		if (st == TPS_OK) {
			st = tps_dtensor_check_placements(
				&spec->mesh, &ps->shape, placements, err);
		}
		if (st == TPS_OK) {
			st = tps_dtensor_map(&p->value, &spec->mesh, &ps->shape,
					     placements, region_rank, &job,
					     err);
		}
		return st;
	}
	if (meta) {
		st = tps_tensor_init_meta(&p->global, &ps->shape, err);
	} else if (o) {
		st = tps_tensor_copy(&p->global, &o->value, err);
	} else {
		/* nn.Linear's bound: a = 1/sqrt(fan_in), for W and b. */
		float a = ps->fan_in > 0
				  ? (float)(1.0 / sqrt((double)ps->fan_in))
				  : 0.0f;
		st = tps_model_init_tensor(&p->global, &ps->shape,
					   param_init(spec->param_init, ps), a,
					   p->name, err);
	}
	if (st == TPS_OK && p->global.data) {
		/* Stored in the params dtype, the reference's as the ranks'. */
		tps_dtype_round_array(p->global.data,
				      tps_tensor_numel(&p->global),
				      spec->dtypes.of[TPS_ROLE_PARAMS]);
	}
	if (st == TPS_OK && shares_params(spec)) {
		st = tps_dtensor_distribute_shared(&p->value, &spec->mesh,
						   &p->global, placements, err);
	} else if (st == TPS_OK) {
		st = tps_dtensor_distribute(&p->value, &spec->mesh, &p->global,
					    placements, err);
	}
	if (st == TPS_OK && !meta && !tps_model_keeps_params(spec)) {
		/* An override's whole came from the config: this process
		 * keeps its ranks' shards alone (backend.h). */
		struct tps_shape shape = p->global.shape;
		tps_tensor_free(&p->global);
		st = tps_tensor_init_meta(&p->global, &shape, err);
	}
	return st;
}

struct make_params_job {
	struct tps_model *model;
	bool meta;
	struct tps_param_spec *param_specs; /* one per model param */
};

static enum tps_status make_param_item(void *opaque, int64_t i,
				       struct tps_error *err)
{
	struct make_params_job *job = opaque;
	struct tps_param *p = &job->model->params[i];
	return make_param(job->model->spec, job->meta, p, p->module,
			  &job->param_specs[i], err);
}

/*
 * Tied embeddings: module i (a linear with "tie", which has no parameter
 * of its own) takes the embedding's weight as its own, one parameter
 * used twice. The config checked the embedding is earlier, of the
 * linear's (out, in) shape, and held in the same layout.
 */
static void tie_module(struct tps_model *m, int i)
{
	struct tps_module *mod = &m->modules[i];
	for (int j = 0; j < i; j++) {
		struct tps_module *e = &m->modules[j];
		if (strcmp(e->spec->name, mod->spec->tie) == 0) {
			mod->params = e->params;
			mod->n_params = e->n_params;
			e->tied = true;
		}
	}
}

/* The virtual stages' modules and the schedule's slots (model.h). */
static enum tps_status init_pipeline(struct tps_model *m, struct tps_error *err)
{
	const struct tps_pipeline_spec *pp = &m->spec->pipeline;
	int n = m->spec->n_modules, k = 0, top = 0;
	size_t slots = (size_t)pp->p * (size_t)pp->virtual_stages *
		       (size_t)pp->microbatches;
	enum tps_status st;

	m->n_virtual = pp->p * pp->virtual_stages;
	m->stage_begin =
		calloc((size_t)m->n_virtual + 1, sizeof *m->stage_begin);
	m->virtual_of = calloc((size_t)n, sizeof *m->virtual_of);
	m->fwd_slots = calloc(slots, sizeof *m->fwd_slots);
	m->mb_saved =
		calloc((size_t)m->n_virtual * (size_t)m->spec->mesh.world_size,
		       sizeof *m->mb_saved);
	m->bwd_slots = calloc(slots, sizeof *m->bwd_slots);
	if (!m->stage_begin || !m->virtual_of || !m->fwd_slots ||
	    !m->bwd_slots || !m->mb_saved) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	/* Top-level module `top` is spec module i; the ranges cover them in
	 * order (config_pipeline.c). */
	for (int i = 0; i < n; i += 1 + m->spec->modules[i].n_descendants) {
		if (top == pp->ranges[k].first) {
			m->stage_begin[k] = &m->modules[i];
		}
		for (int j = i; j <= i + m->spec->modules[i].n_descendants;
		     j++) {
			m->virtual_of[j] = k;
		}
		if (top == pp->ranges[k].last) {
			k++;
		}
		top++;
	}
	m->stage_begin[m->n_virtual] = m->modules + n;
	/* Each parameter's: its first module's (a tied head's parameters
	 * are its embedding's, which comes first). */
	m->param_virtual = malloc((size_t)(m->n_params ? m->n_params : 1) *
				  sizeof *m->param_virtual);
	if (!m->param_virtual) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int i = n - 1; i >= 0; i--) {
		const struct tps_module *mod = &m->modules[i];
		for (int j = 0; j < mod->n_params; j++) {
			m->param_virtual[mod->params + j - m->params] =
				m->virtual_of[i];
		}
	}
	st = tps_pp_plan_init(&m->plan, pp->schedule, pp->p, pp->microbatches,
			      pp->virtual_stages, err);
	for (int s = 0; st == TPS_OK && s < pp->p; s++) {
		const struct tps_pp_stage *g = &m->plan.stages[s];
		for (int i = 0; i < g->n_ops; i++) {
			const struct tps_pp_op *op = &g->ops[i];
			size_t at = ((size_t)op->chunk * (size_t)pp->p +
				     (size_t)s) *
					    (size_t)pp->microbatches +
				    (size_t)op->microbatch;
			struct tps_pp_slot *slot = op->kind == TPS_PP_FORWARD
							   ? &m->fwd_slots[at]
							   : &m->bwd_slots[at];
			slot->start = op->start;
			slot->end = op->end;
		}
	}
	return st;
}

static enum tps_status init_model(struct tps_model *model,
				  const struct tps_model_spec *spec, bool meta,
				  struct tps_error *err)
{
	struct tps_model m = {0};
	struct make_params_job job = {0};
	enum tps_status st = check_plan_divisible(spec, err);
	if (st != TPS_OK) {
		return st;
	}
	m.spec = spec;
	m.meta = meta;
	st = plan_dp_split(spec, &m, err);
	if (st != TPS_OK) {
		goto out;
	}
	m.saved_bytes =
		calloc((size_t)spec->mesh.world_size, sizeof *m.saved_bytes);
	m.output_bytes =
		calloc((size_t)spec->mesh.world_size, sizeof *m.output_bytes);
	m.module_saved_bytes =
		calloc((size_t)spec->n_modules, sizeof *m.module_saved_bytes);
	m.gathered_bytes =
		calloc((size_t)spec->mesh.world_size, sizeof *m.gathered_bytes);
	m.gathered_peak_bytes = calloc((size_t)spec->mesh.world_size,
				       sizeof *m.gathered_peak_bytes);
	m.modules = calloc((size_t)spec->n_modules, sizeof *m.modules);
	m.params = calloc((size_t)spec->n_modules * TPS_MODULE_MAX_PARAMS,
			  sizeof *m.params);
	if (!m.modules || !m.params || !m.saved_bytes || !m.output_bytes ||
	    !m.module_saved_bytes || !m.gathered_bytes ||
	    !m.gathered_peak_bytes) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	job.param_specs =
		calloc((size_t)spec->n_modules * TPS_MODULE_MAX_PARAMS,
		       sizeof *job.param_specs);
	if (!job.param_specs) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < spec->n_modules; i++) {
		struct tps_module *mod = &m.modules[i];
		mod->spec = &spec->modules[i];
		mod->ops = tps_module_ops_of(mod->spec->type);
		mod->training = spec->mode == TPS_MODE_TRAINING;
		mod->dtypes = &spec->dtypes;
		mod->params = &m.params[m.n_params];
		mod->dropout.seed = spec->param_init.seed;
		mod->n_params = mod->ops->parameters(
			mod->spec, spec->tp_dim, &job.param_specs[m.n_params]);
		for (int k = 0; k < mod->n_params; k++) {
			m.params[m.n_params++].module = mod->spec->name;
		}
		if (mod->spec->tie[0]) {
			tie_module(&m, i);
		}
	}
	/* Each parameter has its own random stream: they are made
	 * concurrently, each writing only its own struct. */
	job.model = &m;
	job.meta = meta;
	st = tps_pool_try(spec->mesh.pool, m.n_params, make_param_item, &job,
			  err);
	if (st == TPS_OK) {
		st = tps_model_fsdp_shard(&m, err);
	}
	if (st == TPS_OK && spec->pipeline.enabled) {
		st = init_pipeline(&m, err);
	}
out:
	free(job.param_specs);
	if (st != TPS_OK) {
		tps_model_free(&m);
		return st;
	}
	*model = m;
	return TPS_OK;
}

bool tps_model_keeps_params(const struct tps_model_spec *spec)
{
	const struct tps_backend *b = spec->mesh.backend;
	return !b || (b->process == 0 && b->writer_keeps_params);
}

/* Whether a forward of spec's model in training draws dropout masks. */
static bool draws_masks(const struct tps_model_spec *spec)
{
	for (int i = 0; i < spec->n_modules; i++) {
		if (spec->modules[i].type == TPS_MODULE_DROPOUT &&
		    spec->modules[i].p > 0.0) {
			return spec->mode == TPS_MODE_TRAINING;
		}
	}
	return false;
}

enum tps_status tps_model_init(struct tps_model *model,
			       const struct tps_model_spec *spec,
			       struct tps_error *err)
{
	struct tps_model m;
	enum tps_status st = init_model(&m, spec, false, err);
	if (st == TPS_OK && draws_masks(spec)) {
		st = tps_model_plan_dropout(&m, err);
		if (st != TPS_OK) {
			tps_model_free(&m);
		}
	}
	if (st == TPS_OK) {
		*model = m;
	}
	return st;
}

enum tps_status tps_model_init_meta(struct tps_model *model,
				    const struct tps_model_spec *spec,
				    struct tps_error *err)
{
	return init_model(model, spec, true, err);
}

void tps_model_free(struct tps_model *model)
{
	if (!model) {
		return;
	}
	free(model->stage_begin);
	free(model->virtual_of);
	free(model->param_virtual);
	free(model->mb_saved);
	free(model->fwd_slots);
	free(model->bwd_slots);
	tps_pp_plan_free(&model->plan);
	for (int i = 0; i < model->n_params; i++) {
		struct tps_param *p = &model->params[i];
		tps_tensor_free(&p->global);
		tps_dtensor_free(&p->value);
		tps_dtensor_free(&p->grad);
		tps_tensor_free(&p->ref_grad);
		tps_bound_free(&p->ref_bound);
		tps_bound_free(&p->ref_grad_bound);
		tps_bound_free(&p->ref_master_bound);
		tps_dtensor_free(&p->master);
		tps_dtensor_free(&p->fsdp_shard);
		tps_tensor_free(&p->ref_master);
		for (int k = 0; k < 2; k++) {
			tps_dtensor_free(&p->state[k]);
			tps_tensor_free(&p->ref_state[k]);
			tps_bound_free(&p->ref_state_bound[k]);
		}
	}
	for (int i = 0; model->modules && i < model->spec->n_modules; i++) {
		tps_module_free_saved(&model->modules[i]);
	}
	free(model->params);
	free(model->modules);
	free(model->dp_counts);
	free(model->sample_order);
	free(model->saved_bytes);
	free(model->output_bytes);
	free(model->module_saved_bytes);
	free(model->gathered_bytes);
	free(model->gathered_peak_bytes);
	memset(model, 0, sizeof *model);
}

void tps_model_update(const struct tps_optimizer_spec *opt, int64_t t,
		      const struct tps_dtypes *dt, struct tps_tensor *p,
		      struct tps_tensor *master, const float *grad,
		      float *const *state)
{
	int64_t n = tps_tensor_numel(p);
	enum tps_dtype pd = dt->of[TPS_ROLE_PARAMS];
	enum tps_dtype sd = dt->of[TPS_ROLE_OPTIMIZER_STATE];
	if (!master) {
		tps_optim_step(opt, t, p->data, grad, state, n, pd, sd);
		return;
	}
	tps_optim_step(opt, t, master->data, grad, state, n,
		       dt->of[TPS_ROLE_MASTER_PARAMS], sd);
	for (int64_t i = 0; i < n; i++) {
		p->data[i] = tps_dtype_round(master->data[i], pd);
	}
}

enum tps_status tps_model_emit_setup(const struct tps_model *model,
				     struct tps_event_sink sink,
				     struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	for (int i = 0; i < model->n_params && st == TPS_OK; i++) {
		const struct tps_param *p = &model->params[i];
		struct tps_event ev = {0};
		int k;
		ev.step = -1;
		ev.phase = TPS_PHASE_SETUP;
		ev.module = p->module;
		ev.kind = TPS_EVENT_LAYOUT;
		ev.op = "distribute";
		ev.tensor = p->name;
		ev.value = &p->value;
		ev.dtype = model->spec->dtypes.of[TPS_ROLE_PARAMS];
		/* Under a pipeline, on its stage's ranks. */
		k = tps_model_param_virtual_stage(model, p);
		if (k >= 0) {
			struct tps_event_stage g = {k % model->spec->pipeline.p,
						    k / model->spec->pipeline.p,
						    -1,
						    -1,
						    0,
						    0};
			ev.stage = &g;
			st = tps_event_emit(sink, &ev, err);
			continue;
		}
		st = tps_event_emit(sink, &ev, err);
	}
	return st;
}

struct tps_shape tps_model_output_shape(const struct tps_model_spec *spec)
{
	return tps_model_spec_output_shape(spec);
}

enum tps_dtype tps_model_input_dtype(const struct tps_model_spec *spec)
{
	return tps_model_takes_tokens(spec)
		       ? TPS_DTYPE_F32
		       : spec->dtypes.of[TPS_ROLE_ACTIVATIONS];
}

enum tps_dtype tps_model_target_dtype(const struct tps_model_spec *spec)
{
	return spec->loss == TPS_LOSS_CROSS_ENTROPY
		       ? TPS_DTYPE_F32
		       : spec->dtypes.of[TPS_ROLE_ACTIVATIONS];
}

/* An input or a target, as the ranks' data loaders hand it over. */
static void round_stored(struct tps_tensor *t, enum tps_dtype d)
{
	if (t->data) {
		tps_dtype_round_array(t->data, tps_tensor_numel(t), d);
	}
}

enum tps_status tps_model_make_input(const struct tps_model_spec *spec,
				     struct tps_tensor *input,
				     struct tps_error *err)
{
	/* Token ids range over the embedding's vocabulary. */
	bool tokens = tps_model_takes_tokens(spec);
	float a = tokens ? (float)spec->modules[0].num_embeddings : 1.0f;
	enum tps_status st =
		spec->input_explicit
			? tps_tensor_copy(input, &spec->input_values, err)
			: tps_model_init_tensor(input, &spec->input_shape,
						spec->input_init, a, "input",
						err);
	if (st == TPS_OK) {
		round_stored(input, tps_model_input_dtype(spec));
	}
	return st;
}

enum tps_status tps_model_make_target(const struct tps_model_spec *spec,
				      struct tps_tensor *target,
				      struct tps_error *err)
{
	struct tps_shape shape = tps_model_output_shape(spec);
	/* cross_entropy: a class id per row, in [0, classes). */
	bool ids = spec->loss == TPS_LOSS_CROSS_ENTROPY;
	float a = 1.0f;
	enum tps_status st;
	if (ids) {
		/* The real classes: never a padded vocabulary's padding. */
		a = (float)tps_model_spec_classes(spec);
		shape.ndim--;
	}
	st = spec->target_explicit
		     ? tps_tensor_copy(target, &spec->target_values, err)
		     : tps_model_init_tensor(target, &shape, spec->target_init,
					     a, "target", err);
	if (st == TPS_OK) {
		round_stored(target, tps_model_target_dtype(spec));
	}
	return st;
}

const char *const tps_compare_rule_names[] = {"exact", "bound", "tolerance",
						NULL};

enum tps_status tps_model_outcome_init(struct tps_model_outcome *out,
				       const struct tps_model *model,
				       struct tps_error *err)
{
	const struct tps_model_spec *spec = model->spec;
	struct tps_model_outcome o = {0};
	int n = model->n_params;
	if (spec->mode != TPS_MODE_TRAINING) {
		*out = o;
		return TPS_OK;
	}
	o.steps = spec->steps;
	o.n_grads = n + (spec->input_requires_grad ? 1 : 0);
	o.n_params = n;
	/* At least one element each, so that nothing is calloc(0). */
	o.loss = calloc((size_t)o.steps, sizeof *o.loss);
	o.grads = calloc((size_t)(o.n_grads ? o.n_grads : 1), sizeof *o.grads);
	o.params_after = calloc((size_t)(n ? n : 1), sizeof *o.params_after);
	o.bounds.loss = calloc((size_t)o.steps, sizeof *o.bounds.loss);
	o.bounds.grads = calloc((size_t)(o.n_grads ? o.n_grads : 1),
				sizeof *o.bounds.grads);
	o.bounds.params_after =
		calloc((size_t)(n ? n : 1), sizeof *o.bounds.params_after);
	if (!o.loss || !o.grads || !o.params_after || !o.bounds.loss ||
	    !o.bounds.grads || !o.bounds.params_after) {
		tps_model_outcome_free(&o);
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	*out = o;
	return TPS_OK;
}

void tps_model_outcome_free(struct tps_model_outcome *out)
{
	if (!out) {
		return;
	}
	tps_tensor_free(&out->output);
	free(out->loss);
	/* An outcome whose arrays were not all made has NULL ones. */
	for (int i = 0; out->grads && i < out->n_grads; i++) {
		tps_tensor_free(&out->grads[i]);
	}
	free(out->grads);
	for (int i = 0; out->params_after && i < out->n_params; i++) {
		tps_tensor_free(&out->params_after[i]);
	}
	free(out->params_after);
	tps_bound_free(&out->bounds.output);
	for (int i = 0; out->bounds.loss && i < out->steps; i++) {
		tps_bound_free(&out->bounds.loss[i]);
	}
	for (int i = 0; out->bounds.grads && i < out->n_grads; i++) {
		tps_bound_free(&out->bounds.grads[i]);
	}
	for (int i = 0; out->bounds.params_after && i < out->n_params; i++) {
		tps_bound_free(&out->bounds.params_after[i]);
	}
	free(out->bounds.loss);
	free(out->bounds.grads);
	free(out->bounds.params_after);
	memset(out, 0, sizeof *out);
}

/* Bytes of rank r's part of a dtensor (0 when it holds none), at size
 * bytes an element. */
static int64_t local_bytes(const struct tps_dtensor *t, int r, int size)
{
	return t->locals ? tps_tensor_numel(&t->locals[r]) * size : 0;
}

static void figure_add(struct tps_model_figure *f, int r, int64_t bytes)
{
	if (r == 0 || bytes > f->max) {
		f->max = bytes;
		f->max_rank = r;
	}
	if (r == 0 || bytes < f->min) {
		f->min = bytes;
		f->min_rank = r;
	}
}

void tps_model_held_by_rank(const struct tps_model *model,
			    struct tps_model_held *per)
{
	const struct tps_dtypes *dt = &model->spec->dtypes;
	int world = model->spec->mesh.world_size;
	int param = tps_dtype_size(dt->of[TPS_ROLE_PARAMS]);
	int grad = tps_dtype_size(dt->of[TPS_ROLE_GRADS]);
	int master = tps_dtype_size(dt->of[TPS_ROLE_MASTER_PARAMS]);
	int state = tps_dtype_size(dt->of[TPS_ROLE_OPTIMIZER_STATE]);
	for (int r = 0; r < world; r++) {
		per[r] = (struct tps_model_held){0};
	}
	for (int i = 0; i < model->n_params; i++) {
		const struct tps_param *p = &model->params[i];
		/* Megatron's distributed optimizer reduce_scatters into a
		 * full-size gradient buffer: the rank holds the whole
		 * tp-local gradient's bytes, not only its shard's. */
		const struct tps_dtensor *g =
			model->spec->zero.distributed_optimizer &&
					model->dp > 1 && p->grad.locals
				? &p->value
				: &p->grad;
		/* Under a pipeline, only the ranks of its stage hold it (the
		 * other coordinates of the pp dim compute it too:
		 * model_pipeline.c). */
		int k = tps_model_param_virtual_stage(model, p);
		for (int r = 0; r < world; r++) {
			if (k >= 0 && tps_model_rank_stage(model, r) !=
					      k % model->spec->pipeline.p) {
				continue;
			}
			per[r].params += local_bytes(&p->value, r, param);
			per[r].grads += local_bytes(g, r, grad);
			per[r].master += local_bytes(&p->master, r, master);
			per[r].optimizer_state +=
				local_bytes(&p->state[0], r, state) +
				local_bytes(&p->state[1], r, state);
		}
	}
	for (int r = 0; r < world; r++) {
		struct tps_model_held *h = &per[r];
		h->optimizer_state += h->master;
		h->saved = model->saved_bytes[r];
		h->output = model->output_bytes[r];
		h->activations = h->saved + h->output;
		h->gathered = model->gathered_peak_bytes[r];
		h->total = h->params + h->grads + h->optimizer_state +
			   h->activations + h->gathered;
	}
}

enum tps_status tps_model_footprint(const struct tps_model *model,
				    struct tps_model_footprint *out,
				    struct tps_error *err)
{
	int world = model->spec->mesh.world_size;
	struct tps_model_held *per = calloc((size_t)world, sizeof *per);
	if (!per) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	tps_model_held_by_rank(model, per);
	memset(out, 0, sizeof *out);
	for (int r = 0; r < world; r++) {
		figure_add(&out->params, r, per[r].params);
		figure_add(&out->grads, r, per[r].grads);
		figure_add(&out->master, r, per[r].master);
		figure_add(&out->optimizer_state, r, per[r].optimizer_state);
		figure_add(&out->saved, r, per[r].saved);
		figure_add(&out->output, r, per[r].output);
		figure_add(&out->activations, r, per[r].activations);
		figure_add(&out->gathered, r, per[r].gathered);
		figure_add(&out->total, r, per[r].total);
	}
	free(per);
	return TPS_OK;
}

/* tps_model_estimate_bytes, and its largest part in *largest when not
 * NULL. */
static int64_t estimate(const struct tps_model_spec *spec,
			struct tps_memory_part *largest)
{
	bool training = spec->mode == TPS_MODE_TRAINING;
	struct tps_memory_context mc = {
		spec->mesh.world_size, spec->mesh.shape[spec->tp_dim], training,
		training ? tps_optim_state_count(&spec->optimizer) : 0};
	struct tps_memory_part top = {0, "/input/shape", NULL};
	const char *widest_key = "/input/shape";
	int64_t activation, activations;
	int64_t rows = 1, widest, total = 0;

	for (int d = 0; d + 1 < spec->input_shape.ndim; d++) {
		rows = tps_sat_mul(rows, spec->input_shape.dim[d]);
	}
	widest = spec->input_shape.ndim
			 ? spec->input_shape.dim[spec->input_shape.ndim - 1]
			 : 1;
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		int64_t bytes =
			tps_module_ops_of(m->type)->memory_estimate(m, &mc);
		total = tps_sat_add(total, bytes);
		if (bytes > top.bytes) {
			top = (struct tps_memory_part){bytes, m->width_pointer,
						       m->name};
		}
		if (tps_module_has_width(m) && m->out_features > widest) {
			widest = m->out_features;
			widest_key = m->width_pointer;
		}
	}
	/* About four live activations per rank (input, output, collective
	 * scratch) and the reference's two; training saves one input per
	 * module on every rank and in the reference. */
	activation = tps_sat_mul(tps_sat_mul(rows, widest), 4);
	activations = tps_sat_mul(activation, 4 * mc.world + 2);
	if (training) {
		activations = tps_sat_add(
			activations,
			tps_sat_mul(tps_sat_mul(activation, spec->n_modules),
				    mc.world + 1));
	}
	/* Each attention keeps its softmax probabilities, b s^2 per head,
	 * unless selective recompute runs its core again: H heads over
	 * each tp group, for each dp copy, and one while it runs. */
	for (int i = 0;
	     training && spec->recompute != TPS_RECOMPUTE_SELECTIVE &&
	     spec->input_shape.ndim >= 2 && i < spec->n_modules;
	     i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		int64_t seq = spec->input_shape.dim[spec->input_shape.ndim - 2];
		if (m->type == TPS_MODULE_ATTENTION) {
			activations = tps_sat_add(
				activations,
				tps_sat_mul(
					tps_sat_mul(tps_sat_mul(rows, seq),
						    m->num_heads),
					tps_sat_mul(4, mc.world / mc.tp + 1)));
		}
	}
	total = tps_sat_add(total, activations);
	if (activations >= top.bytes) {
		top = (struct tps_memory_part){activations, widest_key, NULL};
	}
	if (largest) {
		*largest = top;
	}
	return total;
}

int64_t tps_model_estimate_bytes(const struct tps_model_spec *spec)
{
	return estimate(spec, NULL);
}

int64_t tps_model_estimate_largest(const struct tps_model_spec *spec,
				   struct tps_memory_part *largest)
{
	return estimate(spec, largest);
}
