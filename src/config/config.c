/*
 * The config's top level (docs/design.md section 4): the version, the mesh and
 * its dims, the input, the other top-level settings, and the entry points.
 * Model, plan and params are read in config_model.c, the normalised config
 * written in config_normalize.c, with the helpers of config_field.c.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "config_internal.h"
#include "jsonio.h"
#include "module_type.h"

/* ---- mesh ------------------------------------------------------------- */

struct mesh_ctx {
	struct tps_mesh *mesh; /* out */
	int ndim;
	int sizes[TPS_MAX_MESH_DIMS];
	const char *names[TPS_MAX_MESH_DIMS];
};

/* /mesh/dim_names/<index>: a name of 1..63 bytes no earlier dim has. */
static void mesh_dim_name(struct cfg *c, const cJSON *item, int index,
			  void *ctx)
{
	struct mesh_ctx *m = ctx;
	size_t len;
	if (!cfg_expect(c, item, cJSON_IsString, "a string")) {
		return;
	}
	len = strlen(item->valuestring);
	if (len == 0 || len >= TPS_MESH_NAME_MAX) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "expected a name of 1 to %d bytes, got %zu",
			 TPS_MESH_NAME_MAX - 1, len);
	}
	for (int j = 0; j < index && cfg_ok(c); j++) {
		char esc[96];
		if (strcmp(m->names[j], item->valuestring) == 0) {
			cfg_fail(c, TPS_ERR_INPUT,
				 "duplicate dim name \"%s\" (also "
				 "/mesh/dim_names/%d)",
				 tps_json_escape_for_message(m->names[j], esc,
							     sizeof esc),
				 j);
		}
	}
	m->names[index] = item->valuestring;
}

/* /mesh/dim_names: one name per dim of /mesh/shape; the mesh is built
 * from them, and what it refuses is reported here too. */
static void mesh_dim_names(struct cfg *c, const cJSON *names, void *ctx)
{
	struct mesh_ctx *m = ctx;
	struct tps_error sub;

	if (cfg_expect(c, names, cJSON_IsArray, "an array of names") &&
	    cJSON_GetArraySize(names) != m->ndim) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "expected %d names, one per entry of /mesh/shape, "
			 "got %d",
			 m->ndim, cJSON_GetArraySize(names));
	}
	cfg_each_item(c, names, mesh_dim_name, m);
	if (cfg_ok(c)) {
		cfg_fail_from(c,
			      tps_mesh_init(m->mesh, m->ndim, m->sizes,
					    m->names, &sub),
			      &sub);
	}
}

/* The body of /mesh. */
static void mesh_body(struct cfg *c, const cJSON *mesh, void *ctx)
{
	struct mesh_ctx m = {.mesh = ctx};
	int64_t dims[TPS_MAX_MESH_DIMS];
	int64_t world = 1;

	/* Both must be there before either is read. */
	cfg_require(c, mesh, "shape");
	cfg_require(c, mesh, "dim_names");
	cfg_sizes(c, mesh, "shape", CFG_REQUIRED, "mesh", TPS_MAX_MESH_DIMS,
		  INT32_MAX, dims, &m.ndim);
	for (int i = 0; i < m.ndim && cfg_ok(c); i++) {
		world *= dims[i]; /* <= 4096 * 2^31: no overflow */
		m.sizes[i] = (int)dims[i];
		if (world > TPS_MAX_WORLD) {
			cfg_fail_at_item(c, "shape", (size_t)i, TPS_ERR_LIMIT,
					 "world size %s%lld exceeds %d",
					 i < m.ndim - 1 ? "of at least " : "",
					 (long long)world, TPS_MAX_WORLD);
		}
	}
	cfg_value(c, mesh, "dim_names", CFG_REQUIRED, mesh_dim_names, &m);
}

/* The index of the mesh dim v names, or -1 after failing. */
static int dim_index(struct cfg *c, const cJSON *v, const struct tps_mesh *mesh,
		     const char *what)
{
	char esc[96];
	int i;
	if (!cfg_expect(c, v, cJSON_IsString, what)) {
		return -1;
	}
	i = tps_mesh_dim_index(mesh, v->valuestring);
	if (i < 0) {
		cfg_fail(c, TPS_ERR_INPUT, "no mesh dim is named \"%s\"",
			 tps_json_escape_for_message(v->valuestring, esc,
						     sizeof esc));
	}
	return i;
}

static void tp_dim(struct cfg *c, const cJSON *v, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	spec->tp_dim = dim_index(c, v, &spec->mesh, "a mesh dim name");
}

/* A dp dim may not be the tp dim: the batch and the weights would be split
 * over the same ranks. */
static void check_not_tp(struct cfg *c, const struct tps_model_spec *spec,
			 int dim)
{
	char esc[96];
	if (cfg_ok(c) && dim == spec->tp_dim) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "the dp dim must differ from the tp dim \"%s\" "
			 "(/tp_dim, by default the last mesh dim)",
			 tps_json_escape_for_message(
				 spec->mesh.dim_names[spec->tp_dim], esc,
				 sizeof esc));
	}
}

struct dp_ctx {
	struct tps_model_spec *spec;
	int index_of[TPS_MAX_MESH_DIMS]; /* per mesh dim: its /dp_dim index */
	int last;			 /* the mesh dim of the last item */
};

/* /dp_dim/<index>: several dims are flattened, as PyTorch's
 * mesh["dp", "cp"]._flatten(), which wants them in mesh order. */
static void dp_dim_item(struct cfg *c, const cJSON *item, int index, void *ctx)
{
	struct dp_ctx *x = ctx;
	struct tps_model_spec *spec = x->spec;
	const struct tps_mesh *mesh = &spec->mesh;
	int d = dim_index(c, item, mesh, "a mesh dim name");
	char esc[96], esc2[96];

	if (!cfg_ok(c)) {
		return;
	}
	if (spec->dp_mask & (1u << d)) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "duplicate dim \"%s\" (also /dp_dim/%d)",
			 tps_json_escape_for_message(item->valuestring, esc,
						     sizeof esc),
			 x->index_of[d]);
	} else if (d < x->last) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "\"%s\" (mesh dim %d) comes after \"%s\" (mesh dim "
			 "%d): name the dp dims in mesh order "
			 "(/mesh/dim_names), "
			 "as DeviceMesh slicing requires",
			 tps_json_escape_for_message(item->valuestring, esc,
						     sizeof esc),
			 d,
			 tps_json_escape_for_message(mesh->dim_names[x->last],
						     esc2, sizeof esc2),
			 x->last);
	}
	check_not_tp(c, spec, d);
	spec->dp_mask |= 1u << d;
	x->index_of[d] = index;
	x->last = d;
}

/* /dp_dim: a mesh dim name, or an array of them. */
static void dp_dim(struct cfg *c, const cJSON *v, void *ctx)
{
	struct dp_ctx x = {.spec = ctx, .last = -1};
	int d;

	if (cJSON_IsArray(v)) {
		if (cJSON_GetArraySize(v) == 0) {
			cfg_fail(c, TPS_ERR_INPUT,
				 "expected at least one mesh dim name");
		}
		cfg_each_item(c, v, dp_dim_item, &x);
		return;
	}
	d = dim_index(c, v, &x.spec->mesh,
		      "a mesh dim name or an array of them");
	check_not_tp(c, x.spec, d);
	if (cfg_ok(c)) {
		x.spec->dp_mask = 1u << d;
	}
}

static void parse_dims(struct cfg *c, const cJSON *root,
		       struct tps_model_spec *spec)
{
	int tp;

	spec->tp_dim = spec->mesh.ndim - 1;
	spec->dp_mask = 0;
	cfg_value(c, root, "tp_dim", CFG_OPTIONAL, tp_dim, spec);
	cfg_value(c, root, "dp_dim", CFG_OPTIONAL, dp_dim, spec);
	cfg_bool(c, root, "strict_tp_innermost", &spec->strict_tp_innermost);
	tp = spec->tp_dim;
	if (cfg_ok(c) && spec->strict_tp_innermost &&
	    tp != spec->mesh.ndim - 1) {
		/* PyTorch's words (torch.distributed.tensor.parallel). */
		cfg_fail_at(c, "tp_dim", TPS_ERR_INPUT,
			    "Found TP device_mesh on the %d dimension of its "
			    "parent mesh. Currently we only support intranode "
			    "TP and TP needs to be the innermost dimension on "
			    "its parent mesh. (strict_tp_innermost)",
			    tp);
	}
}

/* ---- input ------------------------------------------------------------ */

/* Token ids (a model that starts with an embedding): from init "tokens",
 * or explicit integers in [0, vocabulary); they take no gradient. */
static void check_input_tokens(struct cfg *c, const cJSON *input,
			       const struct tps_model_spec *spec)
{
	int64_t vocab = spec->modules[0].num_embeddings;
	const struct tps_tensor *v = &spec->input_values;
	if (spec->input_requires_grad) {
		cfg_fail_at(c, "requires_grad", TPS_ERR_INPUT,
			    "token ids take no gradient (/model/0 is an "
			    "embedding)");
	} else if (!spec->input_explicit &&
		   spec->input_init.method != TPS_INIT_TOKENS) {
		cfg_fail_at(c, "init", TPS_ERR_INPUT,
			    "the input of an embedding is token ids: \"init\": "
			    "\"tokens\", or explicit \"values\"");
	}
	for (int64_t i = 0;
	     cfg_ok(c) && spec->input_explicit && i < tps_tensor_numel(v);
	     i++) {
		float id = v->data[i];
		if (id != floorf(id) || id < 0 || id >= (float)vocab) {
			char got[TPS_NUMFMT_MAX];
			cfg_fail_at(c, "values", TPS_ERR_INPUT,
				    "token id %s (value %lld in row-major "
				    "order) is not an integer in [0, %lld), "
				    "the vocabulary of /model/0",
				    cfg_format_number(id, got), (long long)i,
				    (long long)vocab);
		}
	}
}

/* The input width of the first module that has one (a linear's
 * in_features, a layernorm's dim) must be the input's last dim; reported at
 * the input, the later field, naming that module's key. */
static void check_input_width(struct cfg *c, const cJSON *input,
			      const struct tps_model_spec *spec)
{
	const struct tps_shape *s = &spec->input_shape;
	/* Values without a shape: their rows are what is too wide. */
	bool rows = !cfg_get(input, "shape");
	if (tps_model_takes_tokens(spec)) {
		check_input_tokens(c, input, spec);
		return;
	}
	if (spec->input_init.method == TPS_INIT_TOKENS) {
		cfg_fail_at(c, "init", TPS_ERR_INPUT,
			    "\"tokens\" draws token ids, for a model that "
			    "starts with an embedding");
		return;
	}
	for (int i = 0; i < spec->n_modules && cfg_ok(c); i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		/* The plan is read after the input: still the module's own
		 * pointer ("/model/0/body/1"). */
		const char *at = m->plan_pointer;
		const struct tps_module_type_desc *d =
			&tps_module_types[m->type];
		/* A type that makes the width is first, and reads ids. */
		const char *key = d->in_key ? d->in_key : d->out_key;
		if (!tps_module_has_width(m)) {
			continue;
		}
		if (m->in_features != s->dim[s->ndim - 1] && rows) {
			cfg_fail_at(c, "values", TPS_ERR_INPUT,
				    "expected rows of %lld values, the %s of "
				    "%s, got %lld",
				    (long long)m->in_features, key, at,
				    (long long)s->dim[s->ndim - 1]);
		} else if (m->in_features != s->dim[s->ndim - 1]) {
			cfg_fail_at_item(
				c, "shape", (size_t)(s->ndim - 1),
				TPS_ERR_INPUT,
				"expected %lld, the %s of %s, got %lld",
				(long long)m->in_features, key, at,
				(long long)s->dim[s->ndim - 1]);
		}
		break;
	}
}

/* The dims the modules and dp need the input to have; reported at the
 * input, the later field. */
static void check_input_dims(struct cfg *c, const cJSON *input,
			     const struct tps_model_spec *spec)
{
	const char *key = cfg_get(input, "shape") ? "shape" : "values";
	int ndim = spec->input_shape.ndim;
	if (tps_model_takes_tokens(spec) && ndim >= TPS_MAX_DIMS) {
		cfg_fail_at(c, key, TPS_ERR_INPUT,
			    "token ids have at most %d dims: the embedding "
			    "/model/0 adds one (embedding_dim) and a tensor "
			    "has at most %d, got %d",
			    TPS_MAX_DIMS - 1, TPS_MAX_DIMS, ndim);
	} else if (spec->dp_mask && tps_model_activation_ndim(spec) < 2) {
		cfg_fail_at(c, key, TPS_ERR_INPUT,
			    "/dp_dim splits the batch, dim 0 of the "
			    "activations, and these have 1 dim (expected at "
			    "least 2: batch, features)");
	}
}

/* No module's output over the element limit of a meta tensor, which no
 * run can hold (a values run's tighter limit is the run's to check,
 * tps_model_spec_output_over): reported at the key of the module's
 * width, naming the input its rows come from. */
static void check_output_sizes(struct cfg *c, const struct tps_model_spec *spec)
{
	struct tps_shape shape;
	char buf[128];
	int i = tps_model_spec_output_over(spec, TPS_MAX_META_ELEMENTS, &shape);
	if (i >= 0) {
		cfg_fail_at_pointer(c, spec->modules[i].width_pointer,
				    TPS_ERR_LIMIT,
				    "the output of %s, %s, has more than 2^48 "
				    "elements, the most a tensor may have even "
				    "without values (its rows come from "
				    "/input/shape)",
				    spec->modules[i].name,
				    tps_shape_format(&shape, buf, sizeof buf));
	}
}

/* The shape of nested arrays, read along their first items, for
 * "input": {"values": ...} without "shape"; the values are then checked
 * against it item by item. */
static void infer_shape(struct cfg *c, const cJSON *values, int64_t *dims,
			int *ndim)
{
	const cJSON *v = values;
	*ndim = 0;
	while (cJSON_IsArray(v)) {
		int n = cJSON_GetArraySize(v);
		if (*ndim == TPS_MAX_DIMS) {
			cfg_fail_at(c, "values", TPS_ERR_LIMIT,
				    "the input's values nest more than %d "
				    "deep (a tensor has at most %d dims)",
				    TPS_MAX_DIMS, TPS_MAX_DIMS);
			return;
		}
		if (n == 0) {
			cfg_fail_at(c, "values", TPS_ERR_INPUT,
				    "an empty array leaves the input's shape "
				    "unknown (give \"shape\")");
			return;
		}
		dims[(*ndim)++] = n;
		v = cJSON_GetArrayItem(v, 0);
	}
	if (*ndim == 0) {
		cfg_fail_at(c, "values", TPS_ERR_INPUT,
			    "expected nested arrays of numbers, the input "
			    "batch (at least 1 dim)");
	}
}

static void read_input_values(struct cfg *c, const cJSON *v, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	cfg_read_tensor(c, v, &spec->input_shape, "the input's",
			&spec->input_values);
	spec->input_explicit = cfg_ok(c);
}

/* The body of /input. */
static void input_body(struct cfg *c, const cJSON *input, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	int64_t dims[TPS_MAX_DIMS] = {0}, numel;
	struct tps_error sub;
	int ndim = 0;
	int source = TPS_INPUT_EVERY_RANK;
	const cJSON *values = cfg_get(input, "values");

	if (values && !cfg_get(input, "shape")) {
		infer_shape(c, values, dims, &ndim);
		if (cfg_ok(c)) {
			spec->input_shape = tps_shape_make(ndim, dims);
		}
	} else if (cfg_sizes(c, input, "shape", CFG_REQUIRED, "the input",
			     TPS_MAX_DIMS, TPS_MAX_ELEMENTS, dims, &ndim)) {
		spec->input_shape = tps_shape_make(ndim, dims);
		if (tps_shape_numel(&spec->input_shape, &numel, &sub) !=
		    TPS_OK) {
			cfg_fail_at(c, "shape", sub.status, "%s", sub.message);
		}
	}
	spec->input_init.method = tps_model_takes_tokens(spec)
					  ? TPS_INIT_TOKENS
					  : TPS_INIT_UNIFORM;
	spec->input_init.seed = 0;
	cfg_init_method(c, input, "init", &spec->input_init);
	if (cfg_ok(c) && spec->input_init.method == TPS_INIT_TORCH) {
		cfg_fail_at(c, "init", TPS_ERR_INPUT,
			    "\"torch\" gives each parameter its PyTorch "
			    "default, for /init/method; the input is no "
			    "module's (expected arange, ones, zeros, uniform "
			    "or normal)");
	}
	if (values && cfg_ok(c)) {
		const char *other = cfg_get(input, "init")   ? "init"
				    : cfg_get(input, "seed") ? "seed"
							     : NULL;
		if (other) {
			cfg_fail_at(c, "values", TPS_ERR_INPUT,
				    "explicit values and /input/%s both "
				    "given (expected one: the values, or an "
				    "init method)",
				    other);
		} else {
			cfg_value(c, input, "values", CFG_OPTIONAL,
				  read_input_values, spec);
		}
	}
	spec->input_requires_grad = false;
	cfg_training_only(c, input, "requires_grad", spec->mode);
	cfg_bool(c, input, "requires_grad", &spec->input_requires_grad);
	cfg_choice(c, input, "loaded_on", "input source",
		   tps_input_source_names, &source);
	spec->input_source = (enum tps_input_source)source;
	if (cfg_ok(c)) {
		check_input_dims(c, input, spec);
	}
	if (cfg_ok(c)) {
		check_input_width(c, input, spec);
	}
	if (cfg_ok(c)) {
		check_output_sizes(c, spec);
	}
}

/* ---- the other top-level settings ------------------------------------- */

static void init_body(struct cfg *c, const cJSON *init, void *ctx)
{
	const struct tps_init_spec *spec = ctx;
	cfg_init_method(c, init, "method", ctx);
	if (cfg_ok(c) && spec->method == TPS_INIT_TOKENS) {
		cfg_fail_at(c, "method", TPS_ERR_INPUT,
			    "\"tokens\" draws token ids, for inputs and "
			    "targets, not parameters");
	}
}

static void trace_body(struct cfg *c, const cJSON *trace, void *ctx)
{
	int *values = ctx;
	cfg_choice(c, trace, "values", "values mode", tps_trace_values_names,
		   values);
}

static void tolerance_body(struct cfg *c, const cJSON *tol, void *ctx)
{
	struct tps_run_spec *run = ctx;
	cfg_number(c, tol, "atol", CFG_OPTIONAL, CFG_NONNEG, &run->atol);
	cfg_number(c, tol, "rtol", CFG_OPTIONAL, CFG_NONNEG, &run->rtol);
}

/* ---- "dtype": one for every role, or one per role --------------------- */

static void dtype_body(struct cfg *c, const cJSON *v, void *ctx)
{
	static const char *const keys[] = {
		"default", "params",	      "master_params", "activations",
		"grads",   "optimizer_state", "reduce",	       NULL};
	struct tps_dtypes *d = ctx;
	int def = TPS_DTYPE_F32, master;

	if (cJSON_IsString(v)) {
		if (cfg_read_choice(c, v, "dtype", tps_dtype_names, &def)) {
			for (int r = 0; r < TPS_DTYPE_ROLE_COUNT; r++) {
				d->of[r] = (enum tps_dtype)def;
			}
		}
		return;
	}
	if (!cfg_expect(c, v, cJSON_IsObject,
			"a dtype (float32, bfloat16 or float16) or an object "
			"of dtypes by role") ||
	    !cfg_check_keys(c, v, keys)) {
		return;
	}
	cfg_choice(c, v, "default", "dtype", tps_dtype_names, &def);
	for (int r = 0; r < TPS_DTYPE_ROLE_COUNT; r++) {
		int x = def;
		if (r == TPS_ROLE_MASTER_PARAMS) {
			continue;
		}
		cfg_choice(c, v, tps_dtype_role_names[r], "dtype",
			   tps_dtype_names, &x);
		d->of[r] = (enum tps_dtype)x;
	}
	/* No master copy unless asked for: the params' own dtype. */
	master = d->of[TPS_ROLE_PARAMS];
	cfg_choice(c, v, "master_params", "dtype", tps_dtype_names, &master);
	if (cfg_ok(c) && master != (int)d->of[TPS_ROLE_PARAMS] &&
	    master != TPS_DTYPE_F32) {
		cfg_fail_at(c, "master_params", TPS_ERR_INPUT,
			    "expected float32 or the params' dtype %s (a "
			    "master copy is kept wider than the parameters), "
			    "got %s",
			    tps_dtype_names[d->of[TPS_ROLE_PARAMS]],
			    tps_dtype_names[master]);
	}
	d->of[TPS_ROLE_MASTER_PARAMS] = (enum tps_dtype)master;
}

/* uneven, sampler, init, compute, trace, tolerance, dtype. */
static void parse_misc(struct cfg *c, const cJSON *root,
		       struct tps_run_spec *run)
{
	static const char *const trace_keys[] = {"values", NULL};
	static const char *const tol_keys[] = {"atol", "rtol", NULL};
	static const char *const init_keys[] = {"method", "seed", NULL};
	struct tps_model_spec *spec = &run->model;
	int uneven = TPS_UNEVEN_CHUNK, sampler = TPS_SAMPLER_CHUNK;
	int values = TPS_TRACE_VALUES_FULL, compute = TPS_COMPUTE_VALUES;

	spec->param_init.method = TPS_INIT_UNIFORM;
	spec->param_init.seed = 0;
	cfg_choice(c, root, "uneven", "uneven policy", tps_uneven_names,
		   &uneven);
	spec->uneven = (enum tps_uneven)uneven;
	cfg_choice(c, root, "sampler", "sampler", tps_sampler_names, &sampler);
	spec->sampler = (enum tps_sampler)sampler;
	cfg_check_sampler(c, spec);
	cfg_object(c, root, "init", CFG_OPTIONAL, init_keys, init_body,
		   &spec->param_init);

	cfg_choice(c, root, "compute", "compute mode", tps_compute_names,
		   &compute);
	run->compute = (enum tps_compute)compute;
	if (run->compute == TPS_COMPUTE_SYMBOLIC) {
		values = TPS_TRACE_VALUES_NONE;
		if (spec->inject) {
			cfg_fail_at(c, "compute", TPS_ERR_INPUT,
				    "a symbolic run has no values, and /inject "
				    "diagnoses a mistake from them");
		}
	}
	cfg_object(c, root, "trace", CFG_OPTIONAL, trace_keys, trace_body,
		   &values);
	run->values = (enum tps_trace_values)values;
	run->values_given = cfg_get(cfg_get(root, "trace"), "values") != NULL;
	run->values_ignored = TPS_TRACE_VALUES_NONE;
	if (run->compute == TPS_COMPUTE_SYMBOLIC) {
		/* No values to write: "full" and "summary" become none, with
		 * a warning, as under --symbolic (tps_config_make_symbolic). */
		run->values_ignored = run->values;
		run->values = TPS_TRACE_VALUES_NONE;
	}
	cfg_value(c, root, "dtype", CFG_OPTIONAL, dtype_body, &spec->dtypes);
	/* The fallback's defaults (docs/config.md): 1e-5 each in float32;
	 * a run with a bfloat16 or float16 role takes the relative
	 * tolerance torch.testing.assert_close takes for that dtype
	 * (1.6e-2, 1e-3), since its roundings are 2^16 or 2^13 times
	 * float32's. */
	switch (tps_dtypes_exact_bits(&spec->dtypes)) {
	case 8:
		run->rtol = 1.6e-2;
		break;
	case 11:
		run->rtol = 1e-3;
		break;
	default:
		run->rtol = 1e-5;
		break;
	}
	run->atol = 1e-5;
	cfg_object(c, root, "tolerance", CFG_OPTIONAL, tol_keys, tolerance_body,
		   run);
	run->atol_given = cfg_get(cfg_get(root, "tolerance"), "atol") != NULL;
	run->rtol_given = cfg_get(cfg_get(root, "tolerance"), "rtol") != NULL;
}

/* ---- "inject": the classic mistakes, switched on --------------------- */

static void inject_item(struct cfg *c, const cJSON *item, int index, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	int m = 0;
	(void)index;
	if (!cfg_read_choice(c, item, "mistake", tps_mistake_names, &m)) {
		return;
	}
	static const char *const needs[] = {
		"a rowwise linear with a bias",
		"a rowwise linear whose output is replicated (by its "
		"all_reduce)",
		"a colwise linear whose output is replicated (by its "
		"all_gather)",
		"a colwise or rowwise linear",
		"a colwise or rowwise linear",
		"a dropout with p > 0",
	};
	bool training = spec->mode == TPS_MODE_TRAINING;
	if (tps_mistake_in_backward((enum tps_mistake)m) != training) {
		cfg_fail(c, TPS_ERR_UNSUPPORTED,
			 "%s is injected in %s only (this config %s)",
			 tps_mistake_names[m],
			 training ? "inference" : "training",
			 training ? "trains" : "runs inference");
	} else if (spec->inject) {
		cfg_fail(c, TPS_ERR_UNSUPPORTED,
			 "one mistake at a time, so that its symptom is its "
			 "own");
	} else if (tps_mistake_site(spec, (enum tps_mistake)m) < 0) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "%s needs %s, on a tp group of 2 or more ranks (this "
			 "model has none)",
			 tps_mistake_names[m], needs[m]);
	} else {
		spec->inject |= TPS_MISTAKE_BIT(m);
	}
}

static void inject_body(struct cfg *c, const cJSON *inject, void *ctx)
{
	if (cfg_expect(c, inject, cJSON_IsArray, "an array of mistakes")) {
		cfg_each_item(c, inject, inject_item, ctx);
	}
}

/* ---- the whole config ------------------------------------------------- */

/* Everything but "vars", which is read (and applied to root) before. */
static void parse_root(struct cfg *c, const cJSON *root,
		       struct tps_run_spec *run)
{
	static const char *const keys[] = {
		"tpsim",     "vars",	      "mesh",
		"tp_dim",    "dp_dim",	      "strict_tp_innermost",
		"model",     "plan",	      "input",
		"init",	     "params",	      "uneven",
		"sampler",   "mode",	      "steps",
		"loss",	     "loss_parallel", "target",
		"optimizer", "dp_grad",	      "links",
		"device",    "trace",	      "tolerance",
		"inject",    "compute",	      "dtype",
		"zero", "sequence_parallel_save", "recompute", "pipeline", NULL};
	static const char *const mesh_keys[] = {"shape", "dim_names", NULL};
	static const char *const input_keys[] = {
		"shape",	 "values",    "init", "seed",
		"requires_grad", "loaded_on", NULL};
	int64_t version = 0;
	int mode = TPS_MODE_INFERENCE;

	if (cfg_int(c, root, "tpsim", CFG_REQUIRED, INT32_MIN, INT32_MAX,
		    &version) &&
	    version != 1) {
		cfg_fail_at(c, "tpsim", TPS_ERR_INPUT,
			    "unsupported config version %lld (expected 1)",
			    (long long)version);
	}
	cfg_check_keys(c, root, keys);
	cfg_object(c, root, "mesh", CFG_REQUIRED, mesh_keys, mesh_body,
		   &run->model);
	if (cfg_ok(c)) {
		parse_dims(c, root, &run->model);
	}
	/* The mode first: it says which keys the others may have. */
	cfg_choice(c, root, "mode", "mode", tps_mode_names, &mode);
	run->model.mode = (enum tps_mode)mode;
	cfg_parse_model(c, root, &run->model);
	cfg_object(c, root, "input", CFG_REQUIRED, input_keys, input_body,
		   &run->model);
	cfg_parse_plan(c, root, &run->model);
	run->model.inject = 0;
	cfg_value(c, root, "inject", CFG_OPTIONAL, inject_body, &run->model);
	cfg_parse_params(c, root, &run->model);
	parse_misc(c, root, run);
	if (cfg_ok(c)) {
		cfg_parse_training(c, root, &run->model);
		if (run->compute != TPS_COMPUTE_SYMBOLIC) {
			cfg_check_pipeline_dropout(c, &run->model);
		}
		cfg_parse_cost(c, root, &run->model.mesh, &run->cost);
	}
}

/* A trace or a fixture given as a config is named as such, at the key
 * that tells, rather than as "/tpsim: missing". */
static void refuse_other_kinds(struct cfg *c, const cJSON *root)
{
	struct tps_json_path where;
	enum tps_file_kind kind = tps_json_file_kind(root, &where);
	if (kind == TPS_FILE_TRACE || kind == TPS_FILE_FIXTURE) {
		cfg_fail_at_pointer(c, where.text, TPS_ERR_INPUT,
				    "expected a tpsim config (\"tpsim\": 1), "
				    "got a tpsim %s: tpsim run takes a config "
				    "and writes its trace",
				    kind == TPS_FILE_TRACE ? "trace"
							   : "fixture");
	}
}

/* tps_config_parse_with; `spare` is NULL, or root itself when the caller
 * deletes root afterwards, so that the normalised config may take from it
 * what it would otherwise copy. */
static enum tps_status parse_config(const cJSON *root, cJSON *spare,
				    const char *file,
				    const struct tps_config_var *overrides,
				    int n_overrides, struct tps_run_spec *spec,
				    struct tps_error *err)
{
	struct tps_run_spec run = {0};
	const cJSON *config = NULL;
	cJSON *copy = NULL;
	struct cfg c;

	cfg_init(&c, file, err);
	if (cfg_expect(&c, root, cJSON_IsObject, "a config object")) {
		refuse_other_kinds(&c, root);
	}
	if (cfg_ok(&c)) {
		cfg_parse_vars(&c, root, overrides, n_overrides, &run);
		config = cfg_substitute(&c, root, &run, &copy);
	}
	if (cfg_ok(&c)) {
		parse_root(&c, config, &run);
	}
	if (cfg_ok(&c)) {
		/* The substituted copy, when there is one, is deleted below. */
		run.normalized =
			cfg_normalize(config, copy ? copy : spare, &run);
		if (!run.normalized) {
			cfg_nomem(&c);
		}
	}
	cJSON_Delete(copy);
	if (!cfg_ok(&c)) {
		tps_run_spec_free(&run);
		return c.st;
	}
	*spec = run;
	return TPS_OK;
}

enum tps_status tps_config_parse_with(const cJSON *root, const char *file,
				      const struct tps_config_var *overrides,
				      int n_overrides,
				      struct tps_run_spec *spec,
				      struct tps_error *err)
{
	return parse_config(root, NULL, file, overrides, n_overrides, spec,
			    err);
}

enum tps_status tps_config_parse(const cJSON *root, const char *file,
				 struct tps_run_spec *spec,
				 struct tps_error *err)
{
	return tps_config_parse_with(root, file, NULL, 0, spec, err);
}

enum tps_status tps_config_load_with(const char *path,
				     const struct tps_config_var *overrides,
				     int n_overrides, struct tps_run_spec *spec,
				     struct tps_error *err)
{
	cJSON *root = NULL;
	enum tps_status st =
		tps_json_load_packed(path, TPS_JSON_MAX_INPUT_BYTES,
				     TPS_CONFIG_PACK_KEY, &root, err);
	if (st == TPS_OK) {
		st = parse_config(root, root, path, overrides, n_overrides,
				  spec, err);
	}
	cJSON_Delete(root);
	return st;
}

enum tps_status tps_config_load(const char *path, struct tps_run_spec *spec,
				struct tps_error *err)
{
	return tps_config_load_with(path, NULL, 0, spec, err);
}

enum tps_status tps_config_make_symbolic(struct tps_run_spec *spec,
					 struct tps_error *err)
{
	cJSON *n = spec->normalized, *item, *tail, *compute, *values;
	bool added = false;
	if (spec->compute == TPS_COMPUTE_SYMBOLIC) {
		return TPS_OK;
	}
	if (spec->model.inject) {
		return tps_error_set(err, TPS_ERR_INPUT,
				     "--symbolic: a symbolic run has no "
				     "values, and /inject diagnoses a mistake "
				     "from them");
	}
	/* "compute" goes where the normaliser puts it: before "links". The
	 * keys from "links" on are moved aside and put back after it
	 * (cJSON_InsertItemInArray refuses objects in some cJSON builds). */
	tail = cJSON_CreateArray();
	compute = cJSON_CreateString(tps_compute_names[TPS_COMPUTE_SYMBOLIC]);
	values = cJSON_CreateString(
		tps_trace_values_names[TPS_TRACE_VALUES_NONE]);
	if (!tail || !compute || !values) {
		goto nomem;
	}
	for (item = cJSON_GetObjectItemCaseSensitive(n, "links"); item;) {
		cJSON *next = item->next;
		cJSON_AddItemToArray(tail, cJSON_DetachItemViaPointer(n, item));
		item = next;
	}
	added = cJSON_AddItemToObject(n, "compute", compute);
	while (tail->child) {
		cJSON_AddItemToArray(
			n, cJSON_DetachItemViaPointer(tail, tail->child));
	}
	if (!added) {
		goto nomem;
	}
	cJSON_Delete(tail);
	cJSON_ReplaceItemInObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(n, "trace"), "values", values);
	spec->compute = TPS_COMPUTE_SYMBOLIC;
	/* The config's rule: values it asked for are not written. */
	spec->values_ignored =
		spec->values_given ? spec->values : TPS_TRACE_VALUES_NONE;
	spec->values = TPS_TRACE_VALUES_NONE;
	return TPS_OK;
nomem:
	cJSON_Delete(tail);
	cJSON_Delete(values);
	if (!added) {
		cJSON_Delete(compute);
	}
	return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
}

void tps_run_spec_free(struct tps_run_spec *spec)
{
	if (!spec) {
		return;
	}
	tps_model_spec_free(&spec->model);
	cJSON_Delete(spec->normalized);
	spec->normalized = NULL;
}
