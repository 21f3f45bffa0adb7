/*
 * The config's top level (DESIGN.md section 4): the version, the mesh and
 * its dims, the input, the other top-level settings, and the entry points.
 * Model, plan and params are read in config_model.c, the normalised config
 * written in config_normalize.c, with the helpers of config_field.c.
 */
#include "tpsim/config.h"

#include <stdint.h>
#include <string.h>

#include "config_internal.h"
#include "tpsim/jsonio.h"

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

struct dim_ctx {
	const struct tps_mesh *mesh;
	int *out; /* the dim's index */
};

/* A mesh dim name; *out gets its index. */
static void read_dim_name(struct cfg *c, const cJSON *v, void *ctx)
{
	const struct dim_ctx *x = ctx;
	char esc[96];
	if (!cfg_expect(c, v, cJSON_IsString, "a mesh dim name")) {
		return;
	}
	*x->out = tps_mesh_dim_index(x->mesh, v->valuestring);
	if (*x->out < 0) {
		cfg_fail(c, TPS_ERR_INPUT, "no mesh dim is named \"%s\"",
			 tps_json_escape_for_message(v->valuestring, esc,
						     sizeof esc));
	}
}

static void parse_dims(struct cfg *c, const cJSON *root,
		       struct tps_model_spec *spec)
{
	int dp_dim = -1;
	struct dim_ctx tp = {&spec->mesh, &spec->tp_dim};
	struct dim_ctx dp = {&spec->mesh, &dp_dim};

	spec->tp_dim = spec->mesh.ndim - 1;
	cfg_value(c, root, "tp_dim", CFG_OPTIONAL, read_dim_name, &tp);
	cfg_value(c, root, "dp_dim", CFG_OPTIONAL, read_dim_name, &dp);
	if (cfg_ok(c) && dp_dim >= 0 && dp_dim == spec->tp_dim) {
		cfg_fail_at(c, "dp_dim", TPS_ERR_INPUT,
			    "the dp dim must differ from the tp dim \"%s\" "
			    "(/tp_dim, by default the last mesh dim)",
			    spec->mesh.dim_names[spec->tp_dim]);
	}
	spec->dp_mask = dp_dim >= 0 ? 1u << dp_dim : 0u;
}
/* ---- input ------------------------------------------------------------ */

/* {"<method_key>": method, "seed": n} inside obj: the input's and the
 * target's own keys, or the "init" object of the parameters. */
static void read_init(struct cfg *c, const cJSON *obj, const char *method_key,
		      struct tps_init_spec *init)
{
	int method = (int)init->method;
	int64_t seed = (int64_t)init->seed;
	cfg_choice(c, obj, method_key, "init method", tps_init_method_names,
		   &method);
	cfg_int(c, obj, "seed", CFG_OPTIONAL, 0, (int64_t)1 << 53, &seed);
	init->method = (enum tps_init_method)method;
	init->seed = (uint64_t)seed;
}

/* The first linear's in_features must be the input's last dim; reported
 * at the input, the later field. */
static void check_input_width(struct cfg *c, const struct tps_model_spec *spec)
{
	const struct tps_shape *s = &spec->input_shape;
	for (int i = 0; i < spec->n_modules && cfg_ok(c); i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		if (m->type != TPS_MODULE_LINEAR) {
			continue;
		}
		if (m->in_features != s->dim[s->ndim - 1]) {
			cfg_fail_at_item(c, "shape", (size_t)(s->ndim - 1),
					 TPS_ERR_INPUT,
					 "expected %lld, the in_features of "
					 "/model/%d, got %lld",
					 (long long)m->in_features, i,
					 (long long)s->dim[s->ndim - 1]);
		}
		break;
	}
}

/* The body of /input. */
static void input_body(struct cfg *c, const cJSON *input, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	int64_t dims[TPS_MAX_DIMS] = {0}, numel;
	struct tps_error sub;
	int ndim = 0;
	bool requires_grad = false;

	if (cfg_sizes(c, input, "shape", CFG_REQUIRED, "the input",
		      TPS_MAX_DIMS, TPS_MAX_ELEMENTS, dims, &ndim)) {
		spec->input_shape = tps_shape_make(ndim, dims);
		if (tps_shape_numel(&spec->input_shape, &numel, &sub) !=
		    TPS_OK) {
			cfg_fail_at(c, "shape", sub.status, "%s", sub.message);
		}
	}
	spec->input_init.method = TPS_INIT_UNIFORM;
	spec->input_init.seed = 0;
	read_init(c, input, "init", &spec->input_init);
	/* Validated for the training release; inference has no use for it. */
	cfg_bool(c, input, "requires_grad", &requires_grad);
	if (cfg_ok(c)) {
		check_input_width(c, spec);
	}
}

/* ---- the other top-level settings ------------------------------------- */

static void init_body(struct cfg *c, const cJSON *init, void *ctx)
{
	read_init(c, init, "method", ctx);
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

static void target_body(struct cfg *c, const cJSON *target, void *ctx)
{
	struct tps_init_spec ti = {TPS_INIT_ZEROS, 0};
	read_init(c, target, "init", &ti);
}

static void optimizer_body(struct cfg *c, const cJSON *opt, void *ctx)
{
	int type = TPS_OPTIMIZER_SGD;
	double lr;
	cfg_choice(c, opt, "type", "optimizer", tps_optimizer_type_names,
		   &type);
	cfg_number(c, opt, "lr", CFG_OPTIONAL, CFG_NONNEG, &lr);
}

/* uneven, sampler, mode, init, trace, tolerance, and the training keys,
 * which are only validated. */
static void parse_misc(struct cfg *c, const cJSON *root,
		       struct tps_run_spec *run)
{
	static const char *const trace_keys[] = {"values", NULL};
	static const char *const tol_keys[] = {"atol", "rtol", NULL};
	static const char *const init_keys[] = {"method", "seed", NULL};
	static const char *const target_keys[] = {"init", "seed", NULL};
	static const char *const opt_keys[] = {"type", "lr", NULL};
	struct tps_model_spec *spec = &run->model;
	int uneven = TPS_UNEVEN_CHUNK, sampler = TPS_SAMPLER_CHUNK;
	int mode = TPS_MODE_INFERENCE, values = TPS_TRACE_VALUES_FULL;
	int loss = TPS_LOSS_MSE;
	int64_t steps = 1;

	spec->param_init.method = TPS_INIT_UNIFORM;
	spec->param_init.seed = 0;
	cfg_choice(c, root, "uneven", "uneven policy", tps_uneven_names,
		   &uneven);
	spec->uneven = (enum tps_uneven)uneven;
	if (cfg_choice(c, root, "sampler", "sampler", tps_sampler_names,
		       &sampler) &&
	    sampler == TPS_SAMPLER_DISTRIBUTED) {
		cfg_fail_at(c, "sampler", TPS_ERR_UNSUPPORTED,
			    "the distributed sampler is not supported by "
			    "tpsim 0.1 (expected chunk)");
	}
	if (cfg_choice(c, root, "mode", "mode", tps_mode_names, &mode) &&
	    mode == TPS_MODE_TRAINING) {
		cfg_fail_at(c, "mode", TPS_ERR_UNSUPPORTED,
			    "training is not supported by tpsim 0.1, which "
			    "simulates inference only (expected inference)");
	}
	cfg_object(c, root, "init", CFG_OPTIONAL, init_keys, init_body,
		   &spec->param_init);
	cfg_object(c, root, "trace", CFG_OPTIONAL, trace_keys, trace_body,
		   &values);
	run->values = (enum tps_trace_values)values;
	run->atol = 1e-5;
	run->rtol = 1e-5;
	cfg_object(c, root, "tolerance", CFG_OPTIONAL, tol_keys, tolerance_body,
		   run);
	/* Training settings are validated now so that configs written for
	 * later versions fail here only on "mode". */
	cfg_choice(c, root, "loss", "loss", tps_loss_names, &loss);
	cfg_object(c, root, "target", CFG_OPTIONAL, target_keys, target_body,
		   NULL);
	cfg_object(c, root, "optimizer", CFG_OPTIONAL, opt_keys, optimizer_body,
		   NULL);
	cfg_int(c, root, "steps", CFG_OPTIONAL, 1, 1000000, &steps);
}

/* ---- the whole config ------------------------------------------------- */

static void parse_root(struct cfg *c, const cJSON *root,
		       struct tps_run_spec *run)
{
	static const char *const keys[] = {
		"tpsim",   "mesh",  "tp_dim",	 "dp_dim", "model",
		"plan",	   "input", "init",	 "params", "uneven",
		"sampler", "mode",  "loss",	 "target", "optimizer",
		"steps",   "trace", "tolerance", NULL};
	static const char *const mesh_keys[] = {"shape", "dim_names", NULL};
	static const char *const input_keys[] = {"shape", "init", "seed",
						 "requires_grad", NULL};
	int64_t version = 0;

	if (!cfg_expect(c, root, cJSON_IsObject, "a config object")) {
		return;
	}
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
	cfg_parse_model(c, root, &run->model);
	cfg_object(c, root, "input", CFG_REQUIRED, input_keys, input_body,
		   &run->model);
	cfg_parse_plan(c, root, &run->model);
	cfg_parse_params(c, root, &run->model);
	parse_misc(c, root, run);
}

enum tps_status tps_config_parse(const cJSON *root, const char *file,
				 struct tps_run_spec *spec,
				 struct tps_error *err)
{
	struct tps_run_spec run = {0};
	struct cfg c;

	cfg_init(&c, file, err);
	parse_root(&c, root, &run);
	if (cfg_ok(&c)) {
		run.normalized = cfg_normalize(root, &run);
		if (!run.normalized) {
			cfg_nomem(&c);
		}
	}
	if (!cfg_ok(&c)) {
		tps_run_spec_free(&run);
		return c.st;
	}
	*spec = run;
	return TPS_OK;
}

enum tps_status tps_config_load(const char *path, struct tps_run_spec *spec,
				struct tps_error *err)
{
	cJSON *root = NULL;
	enum tps_status st =
		tps_json_load(path, TPS_JSON_MAX_INPUT_BYTES, &root, err);
	if (st == TPS_OK) {
		st = tps_config_parse(root, path, spec, err);
	}
	cJSON_Delete(root);
	return st;
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
