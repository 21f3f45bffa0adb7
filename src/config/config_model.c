/* "model", "plan" and "params" of the config (docs/design.md section 4). */
#include "config_internal.h"
#include "module_type.h"
#include "nn.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Style names people bring from PyTorch's API or from write-ups about TP:
 * PyTorch's own class names, which tpsim spells in lower case, and names
 * that exist in no PyTorch at all. Each gets what to write instead.
 */
struct misnomer {
	const char *name;
	const char *advice;
};

static const struct misnomer style_misnomers[] = {
	{"ColwiseParallel", "PyTorch's ColwiseParallel is \"colwise\" here"},
	{"RowwiseParallel", "PyTorch's RowwiseParallel is \"rowwise\" here"},
	{"SequenceParallel", "PyTorch's SequenceParallel is \"sequence\" here"},
	{"ColwiseParallel(dim=1)",
	 "ColwiseParallel takes no dim; sharding a linear's input features "
	 "(the weight's dim 1) is RowwiseParallel, \"rowwise\""},
	{"RowwiseParallel(dim=0)",
	 "RowwiseParallel takes no dim; sharding a linear's output features "
	 "(the weight's dim 0) is ColwiseParallel, \"colwise\""},
	{"ShardingParallel",
	 "PyTorch has no ShardingParallel; a sharded linear is \"colwise\" "
	 "(ColwiseParallel) or \"rowwise\" (RowwiseParallel)"},
	{"PipelineParallel",
	 "PipelineParallel is not a tensor-parallel style: pipeline "
	 "parallelism puts whole layers on different ranks "
	 "(torch.distributed.pipelining); tpsim shards layers with "
	 "\"colwise\", \"rowwise\" or \"replicate\""},
	{"tp.einsum",
	 "PyTorch has no tp.einsum; a tensor-parallel matmul is a linear "
	 "layer planned \"colwise\" or \"rowwise\""},
	{"DataParallel",
	 "data parallelism is not a plan style: give the mesh a dp dim and "
	 "\"dp_dim\""},
};

/* The advice for a name from the table above, or NULL. */
static const char *misnomer_advice(const char *name)
{
	for (size_t i = 0;
	     i < sizeof style_misnomers / sizeof style_misnomers[0]; i++) {
		if (strcmp(name, style_misnomers[i].name) == 0) {
			return style_misnomers[i].advice;
		}
	}
	return NULL;
}

/* ---- the types a config may write ------------------------------------- */

struct model_ctx;
static void expand_block(struct cfg *c, const cJSON *m, struct model_ctx *x);
static void expand_swiglu(struct cfg *c, const cJSON *m, struct model_ctx *x);
static int block_count(const cJSON *m);
static int swiglu_count(const cJSON *m);

static const char *const block_keys[] = {
	"name",	      "type",	    "dim",	   "num_heads",
	"num_kv_heads", "hidden",	    "causal",	   "bias",
	"eps",	      "norm",	    "mlp",	   "rope_theta",
	"rope_style",   NULL};
static const char *const swiglu_keys[] = {"name",   "type", "dim",
					  "hidden", "bias", NULL};
/* transformer_block's "norm" and "mlp": the first is the default. */
static const char *const block_norms[] = {"layernorm", "rmsnorm", NULL};
static const char *const block_mlps[] = {"gelu", "swiglu", NULL};

/*
 * A config's "type" is a module type (module_type.h, whose descriptors say
 * what each one's object holds) or a shorthand: a config-level expansion
 * into several modules of those types (transformer_block, see
 * expand_block), which nothing past the config sees. Messages list the
 * types, then the shorthands. A repeat ({"repeat": N, ...}) is the other
 * expansion; it has no "type".
 */
static const struct shorthand {
	const char *name;
	/* The modules it makes, from its object (a bad one is reported
	 * when it is expanded: counted as the default then). */
	int (*count)(const cJSON *m);
	void (*expand)(struct cfg *c, const cJSON *m, struct model_ctx *x);
	const char *const *keys; /* what its config object may hold */
} shorthands[] = {
	{"transformer_block", block_count, expand_block, block_keys},
	{"swiglu_mlp", swiglu_count, expand_swiglu, swiglu_keys},
};
#define N_SHORTHANDS (sizeof shorthands / sizeof shorthands[0])

size_t cfg_module_type_count(void)
{
	return TPS_MODULE_TYPE_COUNT + N_SHORTHANDS;
}

const char *cfg_module_type_name(size_t i, int *type)
{
	*type = i < TPS_MODULE_TYPE_COUNT ? (int)i : -1;
	if (i < TPS_MODULE_TYPE_COUNT) {
		return tps_module_types[i].name;
	}
	return i < cfg_module_type_count()
		       ? shorthands[i - TPS_MODULE_TYPE_COUNT].name
		       : NULL;
}

const char *const *cfg_shorthand_keys(size_t i)
{
	return i >= TPS_MODULE_TYPE_COUNT && i < cfg_module_type_count()
		       ? shorthands[i - TPS_MODULE_TYPE_COUNT].keys
		       : NULL;
}

/* The "type" string of a module object, or NULL (no object, no string:
 * reported when the module is read). */
static const char *type_of_object(const cJSON *m)
{
	const cJSON *type = cJSON_IsObject(m) ? cfg_get(m, "type") : NULL;
	return cJSON_IsString(type) ? type->valuestring : NULL;
}

/* The shorthand a module object's "type" names, or NULL. */
static const struct shorthand *shorthand_of_object(const cJSON *m)
{
	const char *type = type_of_object(m);
	for (size_t i = 0; type && i < N_SHORTHANDS; i++) {
		if (strcmp(shorthands[i].name, type) == 0) {
			return &shorthands[i];
		}
	}
	return NULL;
}

/* Every type and shorthand, "linear, relu, ..." with `last` before the
 * final one. Returns buf. */
static const char *kind_list(const char *last, char *buf, size_t size)
{
	const char *names[TPS_MODULE_TYPE_COUNT + N_SHORTHANDS + 1];
	int type;
	for (size_t i = 0; i <= cfg_module_type_count(); i++) {
		names[i] = cfg_module_type_name(i, &type);
	}
	return cfg_join(names, last, buf, size);
}

/* The keys of type d that hold its descendants, in its order, into
 * keys[0..n) (a residual's "body"; a gated's "gate" and "up"); returns
 * n, at most 2. */
static int modules_keys(const struct tps_module_type_desc *d,
			const struct tps_module_key *keys[2])
{
	int n = 0;
	for (int k = 0; k < TPS_MODULE_MAX_KEYS && d->keys[k].name; k++) {
		if (d->keys[k].kind == TPS_KEY_MODULES && n < 2) {
			keys[n++] = &d->keys[k];
		}
	}
	return n;
}

/* The key a module's input width is read from, for messages. */
static const char *width_in_key(const struct tps_module_type_desc *d)
{
	return d->in_key ? d->in_key : d->out_key;
}

/* ---- model ------------------------------------------------------------ */

static bool valid_module_name(const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len >= TPS_NAME_MAX || name[0] == '.' ||
	    name[len - 1] == '.' || strstr(name, "..")) {
		return false;
	}
	for (const char *p = name; *p; p++) {
		if (!(*p == '_' || *p == '.' || *p == '-' ||
		      (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z'))) {
			return false;
		}
	}
	return true;
}

/* ms->width_pointer: `key` of the module or shorthand being read. */
static void set_width_key(struct cfg *c, struct tps_module_spec *ms,
			  const char *key)
{
	snprintf(ms->width_pointer, sizeof ms->width_pointer, "%s/%s",
		 cfg_pointer(c), key);
}

/* A module name (TPS_KEY_MODULE_NAME) into the char[TPS_NAME_MAX] at
 * ctx; whether it names the right module is check_tie's. */
static void read_module_name_key(struct cfg *c, const cJSON *v, void *ctx)
{
	char *out = ctx;
	char esc[96];
	if (!cfg_expect(c, v, cJSON_IsString, "a module name")) {
		return;
	}
	if (!valid_module_name(v->valuestring)) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "invalid module name \"%s\" (expected dot-separated "
			 "parts of letters, digits, '_' and '-', under %d "
			 "bytes)",
			 tps_json_escape_for_message(v->valuestring, esc,
						     sizeof esc),
			 TPS_NAME_MAX);
		return;
	}
	snprintf(out, TPS_NAME_MAX, "%s", v->valuestring);
}

/* Key `key` of object m given without key `needs` (rope_style without
 * rope_theta) is an error at `key`. */
static void check_needs(struct cfg *c, const cJSON *m, const char *key,
			const char *needs)
{
	if (cfg_ok(c) && cfg_get(m, key) && !cfg_get(m, needs)) {
		cfg_fail_at(c, key, TPS_ERR_INPUT,
			    "%s without %s (expected %s too: without it there "
			    "is nothing for %s to set)",
			    key, needs, needs, key);
	}
}

/* Module m's keys as its type's descriptor lists them, into the fields
 * it names, in its order (the first bad key is the one reported); an
 * absent optional key gets its fallback. Descendants (TPS_KEY_MODULES)
 * are read after the module, by model_item. */
static void read_module_keys(struct cfg *c, const cJSON *m,
			     const struct tps_module_type_desc *d,
			     struct tps_module_spec *ms)
{
	for (int k = 0; k < TPS_MODULE_MAX_KEYS && d->keys[k].name; k++) {
		const struct tps_module_key *key = &d->keys[k];
		char *field = (char *)ms + key->offset;
		enum cfg_need need =
			key->required ? CFG_REQUIRED : CFG_OPTIONAL;
		switch (key->kind) {
		case TPS_KEY_SIZE:
			*(int64_t *)(void *)field = (int64_t)key->fallback;
			if (key->same_as) {
				need = CFG_OPTIONAL;
				*(int64_t *)(void *)field = *(
					const int64_t *)(const void *)((
					const char *)ms + tps_module_key_named(
					ms->type, key->same_as)->offset);
			}
			cfg_int(c, m, key->name, need, key->min, key->max,
				(int64_t *)(void *)field);
			break;
		case TPS_KEY_POSITIVE:
			*(double *)(void *)field = key->fallback;
			cfg_number(c, m, key->name, need, CFG_POSITIVE,
				   (double *)(void *)field);
			break;
		case TPS_KEY_UNIT:
			*(double *)(void *)field = key->fallback;
			cfg_number(c, m, key->name, need, CFG_UNIT,
				   (double *)(void *)field);
			break;
		case TPS_KEY_BOOL:
			*(bool *)(void *)field = key->fallback != 0;
			cfg_bool(c, m, key->name, (bool *)(void *)field);
			break;
		case TPS_KEY_MODULE_NAME:
			((char *)field)[0] = '\0';
			cfg_value(c, m, key->name, CFG_OPTIONAL,
				  read_module_name_key, field);
			break;
		case TPS_KEY_CHOICE:
			*(int *)(void *)field = (int)key->fallback;
			cfg_choice(c, m, key->name, key->name, key->choices,
				   (int *)(void *)field);
			break;
		case TPS_KEY_MODULES: break;
		}
		if (key->needs) {
			check_needs(c, m, key->name, key->needs);
		}
	}
}

/* Each parameter the module will have within the element limit; reported
 * at the key of its output width (a weight's rows or columns), or at the
 * module. */
static void check_param_sizes(struct cfg *c,
			      const struct tps_module_type_desc *d,
			      const struct tps_module_spec *ms, int tp_dim)
{
	struct tps_param_spec ps[TPS_MODULE_MAX_PARAMS];
	int n = cfg_ok(c) ? d->ops->parameters(ms, tp_dim, ps) : 0;
	for (int k = 0; k < n && cfg_ok(c); k++) {
		char shape[96];
		int64_t numel = 1;
		bool over = false;
		for (int i = 0; i < ps[k].shape.ndim; i++) {
			over = over ||
			       __builtin_mul_overflow(numel, ps[k].shape.dim[i],
						      &numel);
		}
		if (!over && numel <= TPS_MAX_ELEMENTS) {
			continue;
		}
		tps_shape_format(&ps[k].shape, shape, sizeof shape);
		if (d->out_key) {
			cfg_fail_at(c, d->out_key, TPS_ERR_LIMIT,
				    "the %s %s has more than 2^31 elements",
				    ps[k].suffix, shape);
		} else {
			cfg_fail(c, TPS_ERR_LIMIT,
				 "the %s %s has more than 2^31 elements",
				 ps[k].suffix, shape);
		}
	}
}

/* What the keys of module m say besides their values: the width a type
 * that needs it gives back, where its width comes from, its parameters'
 * sizes and the type's own rules (its ops' check). */
static void finish_module_keys(struct cfg *c,
			       const struct tps_module_type_desc *d,
			       struct tps_module_spec *ms, int tp_dim)
{
	const char *key = NULL;
	struct tps_error sub;
	if (!cfg_ok(c)) {
		return;
	}
	if (d->width == TPS_WIDTH_NEEDS) {
		ms->out_features = ms->in_features;
	}
	if (d->out_key) {
		set_width_key(c, ms, d->out_key);
	}
	check_param_sizes(c, d, ms, tp_dim);
	if (!cfg_ok(c) || !d->ops->check ||
	    d->ops->check(ms, &key, &sub) == TPS_OK) {
		return;
	}
	if (key) {
		cfg_fail_at(c, key, sub.status, "%s", sub.message);
	} else {
		cfg_fail(c, sub.status, "%s", sub.message);
	}
}

struct model_ctx {
	struct tps_model_spec *spec;
	int next;	/* the flat index the next module takes */
	int last_width; /* the last module that set the width, or -1 */
	/* Inside a repeat: prepended to every module name read
	 * ("layers.3."), and, for a repeated "module", that module's whole
	 * name ("layers.3"; NULL once it is taken, and outside a repeat). */
	char prefix[TPS_NAME_MAX];
	const char *own_name;
	char own[TPS_NAME_MAX];
	/* The innermost repeat's "name", for messages about the names it
	 * makes ("/model/1/name"). */
	char repeat_pointer[TPS_POINTER_MAX];
};

/* What reading one module needs besides the module itself. */
struct module_ctx {
	struct model_ctx *model;
	int index; /* this module's */
	int type;  /* out: its enum tps_module_type */
	char name[TPS_NAME_MAX]; /* out: its whole name (prefix + "name") */
};

/* Whether `name` (a whole name: prefix and all) is valid and new; the
 * failure is reported at the current pointer. */
static void check_module_name(struct cfg *c, const struct module_ctx *x,
			      const char *name)
{
	char esc[96];
	if (!valid_module_name(name)) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "invalid module name \"%s\" (expected dot-separated "
			 "parts of letters, digits, '_' and '-', under %d "
			 "bytes)",
			 tps_json_escape_for_message(name, esc, sizeof esc),
			 TPS_NAME_MAX);
	}
	for (int j = 0; j < x->index && cfg_ok(c); j++) {
		if (strcmp(x->model->spec->modules[j].name, name) == 0) {
			/* A valid name needs no escaping. */
			cfg_fail(c, TPS_ERR_INPUT,
				 "duplicate module name \"%s\" (also that "
				 "of the module at %s)",
				 name, x->model->spec->modules[j].plan_pointer);
		}
	}
}

/* /model/<index>/name: valid with the prefix, and not one an earlier
 * module has. */
static void read_module_name(struct cfg *c, const cJSON *name, void *ctx)
{
	struct module_ctx *x = ctx;
	char esc[96];
	int n;
	if (!cfg_expect(c, name, cJSON_IsString, "a string")) {
		return;
	}
	n = snprintf(x->name, sizeof x->name, "%s%s", x->model->prefix,
		     name->valuestring);
	if (n < 0 || (size_t)n >= sizeof x->name) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "invalid module name \"%s%s\" (expected dot-separated "
			 "parts of letters, digits, '_' and '-', under %d "
			 "bytes)",
			 x->model->prefix,
			 tps_json_escape_for_message(name->valuestring, esc,
						     sizeof esc),
			 TPS_NAME_MAX);
		return;
	}
	check_module_name(c, x, x->name);
}

/* The whole name of the module m: "name" after the prefix, or, for a
 * repeated "module", the name its repetition gives it (then m may not
 * have one). Into x->name. */
static void module_name(struct cfg *c, const cJSON *m, struct module_ctx *x)
{
	struct model_ctx *mx = x->model;
	if (!mx->own_name) {
		cfg_value(c, m, "name", CFG_REQUIRED, read_module_name, x);
		return;
	}
	if (cfg_get(m, "name")) {
		cfg_fail_at(c, "name", TPS_ERR_INPUT,
			    "a repeated module is named by its repetition, "
			    "\"%s\" (the name of %s and the index): leave "
			    "\"name\" out, or repeat a list, \"modules\"",
			    mx->own_name, mx->repeat_pointer);
		return;
	}
	snprintf(x->name, sizeof x->name, "%s", mx->own_name);
	mx->own_name = NULL;
	if (cfg_ok(c) && !valid_module_name(x->name)) {
		cfg_fail_at_pointer(c, mx->repeat_pointer, TPS_ERR_INPUT,
				    "the repetitions' names (\"%s\") are over "
				    "%d bytes",
				    x->name, TPS_NAME_MAX - 1);
		return;
	}
	for (int j = 0; j < x->index && cfg_ok(c); j++) {
		if (strcmp(mx->spec->modules[j].name, x->name) == 0) {
			cfg_fail_at_pointer(
				c, mx->repeat_pointer, TPS_ERR_INPUT,
				"a repetition is named \"%s\", the name of "
				"the module at %s",
				x->name, mx->spec->modules[j].plan_pointer);
		}
	}
}

/* /model/.../type: a module type (shorthands are expanded before a module
 * is read). */
static void read_module_type(struct cfg *c, const cJSON *type, void *ctx)
{
	struct module_ctx *x = ctx;
	char list[256], esc[96];
	if (!cfg_expect(c, type, cJSON_IsString, "a string")) {
		return;
	}
	x->type = tps_module_type_named(type->valuestring);
	if (x->type >= 0) {
		return;
	}
	cfg_fail(c, TPS_ERR_INPUT,
		 "unknown module type \"%s\" (expected one of %s)",
		 tps_json_escape_for_message(type->valuestring, esc,
					     sizeof esc),
		 kind_list(", ", list, sizeof list));
}

/* obj's keys are "name", "type" and those of type d. */
static bool check_module_keys(struct cfg *c, const cJSON *obj,
			      const struct tps_module_type_desc *d)
{
	const char *allowed[2 + TPS_MODULE_MAX_KEYS + 1] = {"name", "type"};
	for (int k = 0; k < TPS_MODULE_MAX_KEYS && d->keys[k].name; k++) {
		allowed[2 + k] = d->keys[k].name;
	}
	return cfg_check_keys(c, obj, allowed);
}

/*
 * A linear's "tie" (tied embeddings): it names an embedding earlier in
 * the model, not tied already, whose weight (num_embeddings,
 * embedding_dim) is the linear's (out_features, in_features); the linear
 * has no bias (the embedding has none to share). Reported at
 * /model/<index>/tie, naming the embedding's place.
 */
static void check_tie(struct cfg *c, const struct tps_model_spec *spec,
		      int index)
{
	const struct tps_module_spec *ms = &spec->modules[index];
	const struct tps_module_spec *e = NULL;
	for (int j = 0; j < index; j++) {
		if (strcmp(spec->modules[j].name, ms->tie) == 0) {
			e = &spec->modules[j];
		}
	}
	if (!e) {
		cfg_fail_at(c, "tie", TPS_ERR_INPUT,
			    "no module \"%s\" before \"%s\" (expected the "
			    "name of an embedding earlier in the model)",
			    ms->tie, ms->name);
		return;
	}
	if (e->type != TPS_MODULE_EMBEDDING) {
		cfg_fail_at(c, "tie", TPS_ERR_INPUT,
			    "\"%s\" (%s) is a %s: a linear ties its weight "
			    "to an embedding's",
			    e->name, e->plan_pointer,
			    tps_module_types[e->type].name);
		return;
	}
	for (int j = 0; j < index; j++) {
		if (strcmp(spec->modules[j].tie, ms->tie) == 0) {
			cfg_fail_at(c, "tie", TPS_ERR_INPUT,
				    "the embedding \"%s\" is tied already, "
				    "to \"%s\" (%s): one head per embedding",
				    e->name, spec->modules[j].name,
				    spec->modules[j].plan_pointer);
			return;
		}
	}
	if (ms->out_features != e->num_embeddings ||
	    ms->in_features != e->out_features) {
		cfg_fail_at(
			c, "tie", TPS_ERR_INPUT,
			"the weight of \"%s\" (%s) is (num_embeddings "
			"%lld, embedding_dim %lld): a linear tied to it "
			"needs out_features %lld and in_features %lld, "
			"got %lld and %lld",
			e->name, e->plan_pointer, (long long)e->num_embeddings,
			(long long)e->out_features,
			(long long)e->num_embeddings,
			(long long)e->out_features, (long long)ms->out_features,
			(long long)ms->in_features);
		return;
	}
	if (ms->bias) {
		cfg_fail_at(c, "tie", TPS_ERR_INPUT,
			    "a linear tied to \"%s\" has no bias (the "
			    "embedding has none to share; a linear's bias "
			    "defaults to true): add \"bias\": false",
			    e->name);
	}
}

/*
 * A tied head's vocabulary is its embedding's, padded as the embedding
 * says: its own make_vocab_size_divisible_by, when given, must be the
 * embedding's (absent, it follows the embedding's through the tie).
 */
static void check_tied_padding(struct cfg *c,
			       const struct tps_model_spec *spec,
			       const struct tps_module_spec *ms)
{
	const struct tps_module_spec *e = NULL;
	for (int j = 0; ms->tie[0] && j < spec->n_modules; j++) {
		if (strcmp(spec->modules[j].name, ms->tie) == 0) {
			e = &spec->modules[j];
		}
	}
	if (!e || e->vocab_divisor == ms->vocab_divisor) {
		return;
	}
	if (e->vocab_divisor == 0) {
		cfg_fail_at(c, "make_vocab_size_divisible_by", TPS_ERR_INPUT,
			    "\"%s\" is tied to \"%s\" (%s), whose "
			    "vocabulary is not padded: a tied weight is "
			    "padded as its embedding says (give "
			    "make_vocab_size_divisible_by to \"%s\")",
			    ms->name, e->name, e->plan_pointer, e->name);
		return;
	}
	cfg_fail_at(c, "make_vocab_size_divisible_by", TPS_ERR_INPUT,
		    "expected %lld, the make_vocab_size_divisible_by of "
		    "\"%s\" (%s), the embedding \"%s\" is tied to, got "
		    "%lld",
		    (long long)e->vocab_divisor, e->name, e->vocab_pointer,
		    ms->name, (long long)ms->vocab_divisor);
}

/* Reads one module at /model/<index>: name and type first, since the type
 * says which other keys it may have. */
static void parse_module(struct cfg *c, const cJSON *m, int index,
			 struct model_ctx *mx)
{
	struct tps_model_spec *spec = mx->spec;
	struct tps_module_spec *ms = &spec->modules[index];
	struct module_ctx x = {mx, index, 0, ""};
	const struct tps_module_type_desc *d;

	/* Counted before it is read, so that a failure frees what it holds. */
	spec->n_modules = index + 1;
	if (!cfg_expect(c, m, cJSON_IsObject, "a module object")) {
		return;
	}
	module_name(c, m, &x);
	cfg_value(c, m, "type", CFG_REQUIRED, read_module_type, &x);
	if (!cfg_ok(c)) {
		return;
	}
	snprintf(ms->name, sizeof ms->name, "%s", x.name);
	ms->type = (enum tps_module_type)x.type;
	ms->style = TPS_STYLE_REPLICATE;
	ms->planned = false;
	ms->input = tps_placement_replicate();
	ms->output = tps_placement_replicate();
	snprintf(ms->plan_pointer, sizeof ms->plan_pointer, "%s",
		 cfg_pointer(c));
	d = &tps_module_types[ms->type];
	if (check_module_keys(c, m, d)) {
		read_module_keys(c, m, d, ms);
		finish_module_keys(c, d, ms, spec->tp_dim);
	}
	if (cfg_ok(c) && ms->tie[0]) {
		check_tie(c, spec, index);
	}
	if (cfg_ok(c) && ms->vocab_divisor > 0) {
		snprintf(ms->vocab_pointer, sizeof ms->vocab_pointer,
			 "%s/make_vocab_size_divisible_by", cfg_pointer(c));
		check_tied_padding(c, spec, ms);
	}
}

/* A repeat's count as written, if it is one: an integer in [1, max]; 0
 * otherwise (reported when the repeat is read). */
static int64_t repeat_count(const cJSON *m)
{
	const cJSON *n = cfg_get(m, "repeat");
	if (!cJSON_IsNumber(n) || !(n->valuedouble >= 1) ||
	    n->valuedouble > TPS_MAX_MODULES ||
	    n->valuedouble != floor(n->valuedouble)) {
		return 0;
	}
	return (int64_t)n->valuedouble;
}

static bool is_repeat(const cJSON *m)
{
	return cJSON_IsObject(m) && cfg_get(m, "repeat") != NULL;
}

/* The modules a /model item stands for, itself and its descendants (its
 * body, a shorthand's parts, every repetition); a malformed item counts 1
 * and is reported when it is read. Saturates past TPS_MAX_MODULES. */
static int count_modules(const cJSON *m)
{
	const struct shorthand *sh = shorthand_of_object(m);
	const char *name = type_of_object(m);
	int type = name ? tps_module_type_named(name) : -1;
	const struct tps_module_key *keys[2];
	int n_keys =
		type >= 0 ? modules_keys(&tps_module_types[type], keys) : 0;
	const cJSON *item;
	int64_t n = 1;
	if (is_repeat(m)) {
		const cJSON *one = cfg_get(m, "module");
		const cJSON *list = cfg_get(m, "modules");
		int64_t each = 0, count = repeat_count(m);
		if (count == 0) {
			return 1;
		}
		if (one) {
			each = count_modules(one);
		}
		const cJSON *items = cJSON_IsArray(list) ? list : NULL;
		cJSON_ArrayForEach(item, items)
		{
			each += count_modules(item);
			if (each > TPS_MAX_MODULES) {
				break;
			}
		}
		n = count * (each > 0 ? each : 1);
		return n > TPS_MAX_MODULES ? TPS_MAX_MODULES + 1 : (int)n;
	}
	if (sh) {
		return sh->count(m);
	}
	if (type >= 0) {
		n += tps_module_part_count((enum tps_module_type)type);
	}
	for (int k = 0; k < n_keys && n <= TPS_MAX_MODULES; k++) {
		const cJSON *body = cfg_get(m, keys[k]->name);
		if (!cJSON_IsArray(body)) {
			continue;
		}
		cJSON_ArrayForEach(item, body)
		{
			n += count_modules(item);
			if (n > TPS_MAX_MODULES) {
				break;
			}
		}
	}
	return n > TPS_MAX_MODULES ? TPS_MAX_MODULES + 1 : (int)n;
}

static void model_item(struct cfg *c, const cJSON *m, int index, void *ctx);
static void read_repeat(struct cfg *c, const cJSON *m, struct model_ctx *x);

/* The parts of the module at `at` (an attention's linears q, k, v, o),
 * after it in the list: "<name>.<part>", each of its type's part_type and
 * as wide as it, with its bias; replicated until the plan says otherwise. */
static void add_parts(struct cfg *c, struct model_ctx *x, int at)
{
	struct tps_module_spec *whole = &x->spec->modules[at];
	const struct tps_module_type_desc *d = &tps_module_types[whole->type];
	const char *part_type = tps_module_types[d->part_type].name;
	int n = tps_module_part_count(whole->type);
	size_t len = strlen(whole->name);
	for (int k = 0; k < n && cfg_ok(c); k++) {
		int i = x->next++;
		struct tps_module_spec *ms = &x->spec->modules[i];
		size_t plen = strlen(d->parts[k]);
		x->spec->n_modules = i + 1;
		if (len + 1 + plen >= sizeof ms->name) {
			cfg_fail_at(c, "name", TPS_ERR_INPUT,
				    "the name is too long for its %ss' names "
				    "(\"<name>.%s\", ...)",
				    part_type, d->parts[0]);
			return;
		}
		/* "<name>.<part>": fits, checked above. */
		memcpy(ms->name, whole->name, len);
		ms->name[len] = '.';
		memcpy(ms->name + len + 1, d->parts[k], plen + 1);
		for (int j = 0; j < i; j++) {
			if (strcmp(x->spec->modules[j].name, ms->name) == 0) {
				cfg_fail_at(c, "name", TPS_ERR_INPUT,
					    "its %s \"%s\" has the name of %s",
					    part_type, ms->name,
					    x->spec->modules[j].plan_pointer);
				return;
			}
		}
		ms->type = d->part_type;
		ms->in_features = ms->out_features = whole->in_features;
		memcpy(ms->width_pointer, whole->width_pointer,
		       sizeof ms->width_pointer);
		ms->bias = whole->bias;
		ms->style = TPS_STYLE_REPLICATE;
		ms->input = ms->output = tps_placement_replicate();
		snprintf(ms->plan_pointer, sizeof ms->plan_pointer, "%s",
			 whole->plan_pointer);
	}
	whole->n_descendants = x->next - at - 1;
}

/* ms's input width (its `key`) against the width the module before it in
 * the data flow gives. */
static void check_width(struct cfg *c, const struct model_ctx *x,
			const struct tps_module_spec *ms, const char *key)
{
	const struct tps_module_spec *prev;
	const char *what;
	if (x->last_width < 0) {
		return;
	}
	prev = &x->spec->modules[x->last_width];
	/* The key prev's width comes from (it has one: it set the width). */
	what = tps_module_types[prev->type].out_key;
	if (ms->in_features != prev->out_features &&
	    strcmp(prev->plan_pointer, ms->plan_pointer) == 0) {
		/* Two repetitions of one repeated module. */
		cfg_fail_at(c, key, TPS_ERR_INPUT,
			    "expected %lld, the %s of %s, the repetition "
			    "before (%s), got %lld: a repeated module must "
			    "keep the width",
			    (long long)prev->out_features, what, prev->name,
			    prev->plan_pointer, (long long)ms->in_features);
	} else if (ms->in_features != prev->out_features) {
		cfg_fail_at(c, key, TPS_ERR_INPUT,
			    "expected %lld, the %s of %s, got %lld",
			    (long long)prev->out_features, what,
			    prev->plan_pointer, (long long)ms->in_features);
	}
}

/* /model/.../body of a residual: a non-empty list of modules that keeps
 * the width, since x + body(x) adds them. */
static void read_body(struct cfg *c, const cJSON *body, void *ctx)
{
	struct model_ctx *x = ctx;
	int width_in = x->last_width, first = x->next;
	const struct tps_module_spec *in, *out;
	if (!cfg_expect(c, body, cJSON_IsArray, "an array of modules")) {
		return;
	}
	if (cJSON_GetArraySize(body) == 0) {
		cfg_fail(c, TPS_ERR_INPUT, "expected at least one module");
		return;
	}
	cfg_each_item(c, body, model_item, x);
	if (!cfg_ok(c) || x->last_width == width_in) {
		return;
	}
	out = &x->spec->modules[x->last_width];
	if (width_in >= 0) {
		in = &x->spec->modules[width_in];
		if (in->out_features != out->out_features) {
			cfg_fail(c, TPS_ERR_INPUT,
				 "the body ends with width %lld (%s), but x + "
				 "body(x) needs the input's, %lld (%s)",
				 (long long)out->out_features,
				 out->plan_pointer, (long long)in->out_features,
				 in->plan_pointer);
		}
		return;
	}
	/* No module before the residual sets the width: its input is the
	 * model's, as wide as the body's first module with a width takes
	 * (/input is checked against that module). */
	in = &x->spec->modules[first];
	while (!tps_module_has_width(in)) {
		in++;
	}
	if (in->in_features != out->out_features) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "the body ends with width %lld (%s), but x + body(x) "
			 "needs the input's, %lld (the %s of %s)",
			 (long long)out->out_features, out->plan_pointer,
			 (long long)in->in_features,
			 width_in_key(&tps_module_types[in->type]),
			 in->plan_pointer);
	}
}

/* One body of a gated, /model/.../gate or /up: a non-empty list of
 * modules. */
static void read_branch(struct cfg *c, const cJSON *body, void *ctx)
{
	if (!cfg_expect(c, body, cJSON_IsArray, "an array of modules")) {
		return;
	}
	if (cJSON_GetArraySize(body) == 0) {
		cfg_fail(c, TPS_ERR_INPUT, "expected at least one module");
		return;
	}
	cfg_each_item(c, body, model_item, ctx);
}

/* The width a body ends with: the output width of `last`, the last
 * module that set it, in the body or before the gated (-1 when none
 * has: unknown). */
static int64_t branch_width(const struct model_ctx *x, int last)
{
	return last >= 0 ? x->spec->modules[last].out_features : -1;
}

/* A gated's two bodies, `keys` of the module at `at`: both read the
 * gated's input, so each is checked against the width before the
 * gated, and gate(x) * up(x) needs them to end with one width. */
static void read_branches(struct cfg *c, const cJSON *m, struct model_ctx *x,
			  int at, const struct tps_module_key *const keys[2])
{
	int width_in = x->last_width, gate_last, up_last;
	int64_t wg, wu;
	cfg_value(c, m, keys[0]->name, CFG_REQUIRED, read_branch, x);
	if (!cfg_ok(c)) {
		return;
	}
	x->spec->modules[at].n_first_body = x->next - at - 1;
	gate_last = x->last_width;
	x->last_width = width_in;
	cfg_value(c, m, keys[1]->name, CFG_REQUIRED, read_branch, x);
	if (!cfg_ok(c)) {
		return;
	}
	up_last = x->last_width;
	wg = branch_width(x, gate_last);
	wu = branch_width(x, up_last);
	if (wg >= 0 && wu >= 0 && wg != wu) {
		cfg_fail_at(c, keys[1]->name, TPS_ERR_INPUT,
			    "the %s body ends with width %lld (%s), but "
			    "%s(x) * %s(x) needs the %s body's, %lld (%s)",
			    keys[1]->name, (long long)wu,
			    up_last >= 0
				    ? x->spec->modules[up_last].plan_pointer
				    : "the input",
			    keys[0]->name, keys[1]->name, keys[0]->name,
			    (long long)wg,
			    gate_last >= 0
				    ? x->spec->modules[gate_last].plan_pointer
				    : "the input");
		return;
	}
	x->last_width = up_last != width_in ? up_last : gate_last;
}

/* A module made by a shorthand (transformer_block): named `prefix` +
 * `suffix`, replicated until planned, its pointer the shorthand's. */
static struct tps_module_spec *new_module(struct cfg *c, struct model_ctx *x,
					  const char *prefix,
					  const char *suffix,
					  enum tps_module_type type)
{
	int i = x->next++;
	struct tps_module_spec *ms = &x->spec->modules[i];
	x->spec->n_modules = i + 1;
	if (strlen(prefix) + strlen(suffix) >= sizeof ms->name) {
		cfg_fail_at(c, "name", TPS_ERR_INPUT,
			    "the name is too long for its modules' names "
			    "(\"<name>%s\")",
			    suffix);
		return ms;
	}
	/* Both fit: checked above. */
	memcpy(ms->name, prefix, strlen(prefix));
	memcpy(ms->name + strlen(prefix), suffix, strlen(suffix) + 1);
	for (int j = 0; j < i && cfg_ok(c); j++) {
		if (strcmp(x->spec->modules[j].name, ms->name) == 0) {
			cfg_fail_at(c, "name", TPS_ERR_INPUT,
				    "its module \"%s\" has the name of %s",
				    ms->name, x->spec->modules[j].plan_pointer);
		}
	}
	ms->type = type;
	ms->style = TPS_STYLE_REPLICATE;
	ms->input = ms->output = tps_placement_replicate();
	snprintf(ms->plan_pointer, sizeof ms->plan_pointer, "%s",
		 cfg_pointer(c));
	return ms;
}

/* swiglu_mlp's modules: 5. */
static int swiglu_count(const cJSON *m)
{
	(void)m;
	return 5;
}

/* transformer_block's: 12, two more with "mlp": "swiglu" (its gated,
 * and w3). */
static int block_count(const cJSON *m)
{
	const cJSON *mlp = cfg_get(m, "mlp");
	return 12 + 2 * (cJSON_IsString(mlp) &&
			 strcmp(mlp->valuestring, "swiglu") == 0);
}

/*
 * LLaMA's feed-forward, w2(silu(w1 x) * w3 x), named under `prefix`:
 *
 *   <prefix>.swiglu (gated): gate [<prefix>.w1, <prefix>.act (silu)],
 *                            up   [<prefix>.w3]
 *   <prefix>.w2
 *
 * w1 and w3 (dim -> hidden), w2 (hidden -> dim), with bias or none;
 * `hidden_key` is the key hidden's width is read from, for messages.
 * Replicated until planned: w1 and w3 colwise, w2 rowwise is Megatron's
 * and torchtitan's plan.
 */
static void add_swiglu(struct cfg *c, struct model_ctx *x, const char *prefix,
		       int64_t dim, int64_t hidden, bool bias,
		       const char *hidden_key)
{
	struct tps_module_spec *g, *l;
	g = new_module(c, x, prefix, ".swiglu", TPS_MODULE_GATED);
	g->n_first_body = 2;
	g->n_descendants = 3;
	l = new_module(c, x, prefix, ".w1", TPS_MODULE_LINEAR);
	l->in_features = dim;
	l->out_features = hidden;
	set_width_key(c, l, hidden_key);
	l->bias = bias;
	check_width(c, x, l, "dim");
	new_module(c, x, prefix, ".act", TPS_MODULE_SILU);
	l = new_module(c, x, prefix, ".w3", TPS_MODULE_LINEAR);
	l->in_features = dim;
	l->out_features = hidden;
	set_width_key(c, l, hidden_key);
	l->bias = bias;
	l = new_module(c, x, prefix, ".w2", TPS_MODULE_LINEAR);
	l->in_features = hidden;
	l->out_features = dim;
	set_width_key(c, l, "dim");
	l->bias = bias;
	x->last_width = x->next - 1;
}

/*
 * {"type": "swiglu_mlp", "name": N, "dim": E, "hidden": F, "bias":
 * false}: LLaMA's feed-forward (add_swiglu), N.w1, N.act, N.w3 in
 * N.swiglu, then N.w2, so that plans read like torchtitan's
 * ("layers.*.feed_forward.w1").
 */
static void expand_swiglu(struct cfg *c, const cJSON *m, struct model_ctx *x)
{
	struct module_ctx mx = {x, x->next, 0, ""};
	int64_t dim = 0, hidden = 0;
	bool bias = false;

	if (!cfg_check_keys(c, m, swiglu_keys)) {
		return;
	}
	module_name(c, m, &mx);
	cfg_int(c, m, "dim", CFG_REQUIRED, 1, 1 << 20, &dim);
	cfg_int(c, m, "hidden", CFG_REQUIRED, 1, 1 << 22, &hidden);
	cfg_bool(c, m, "bias", &bias);
	if (!cfg_ok(c)) {
		return;
	}
	add_swiglu(c, x, mx.name, dim, hidden, bias, "hidden");
}

/*
 * {"type": "transformer_block", "name": N, "dim": E, "num_heads": H,
 * "num_kv_heads": K (H), "hidden": F (4 E), "causal": true, "bias": true,
 * "eps": 1e-5, "norm": "layernorm", "mlp": "gelu", "rope_theta": none,
 * "rope_style": "rotate_half"}: a pre-norm
 * GPT block, with the conventional names
 *
 *   N.attn_residual = x + attn(ln1(x)):  N.ln1, N.attn (N.attn.q, .k, .v, .o)
 *   N.mlp_residual  = x + mlp(ln2(x)):   N.ln2, N.mlp.fc1, N.mlp.act (gelu),
 *                                        N.mlp.fc2
 *
 * so that plans read like torchtitan's ("layers.*.attn.[qkv]"). A LLaMA
 * block: "norm": "rmsnorm" (ln1 and ln2 rmsnorms, no bias, eps as given)
 * and "mlp": "swiglu" (N.mlp is add_swiglu's: N.mlp.swiglu with N.mlp.w1,
 * N.mlp.act (silu), N.mlp.w3, then N.mlp.w2; hidden is w1's and w3's).
 */
static void expand_block(struct cfg *c, const cJSON *m, struct model_ctx *x)
{
	struct module_ctx mx = {x, x->next, 0, ""};
	int64_t dim = 0, heads = 0, kv_heads = 0, hidden = 0;
	bool causal = true, bias = true;
	double eps = 1e-5, rope_theta = 0.0;
	int norm = 0, mlp = 0, rope_style = TPS_ROPE_ROTATE_HALF;
	enum tps_module_type norm_type;
	const char *name;
	struct tps_module_spec *r, *ln, *a, *l;

	if (!cfg_check_keys(c, m, block_keys)) {
		return;
	}
	module_name(c, m, &mx);
	cfg_int(c, m, "dim", CFG_REQUIRED, 1, 1 << 20, &dim);
	cfg_int(c, m, "num_heads", CFG_REQUIRED, 1, 1 << 20, &heads);
	kv_heads = heads;
	cfg_int(c, m, "num_kv_heads", CFG_OPTIONAL, 1, 1 << 20, &kv_heads);
	hidden = 4 * dim;
	cfg_int(c, m, "hidden", CFG_OPTIONAL, 1, 1 << 22, &hidden);
	cfg_bool(c, m, "causal", &causal);
	cfg_bool(c, m, "bias", &bias);
	cfg_number(c, m, "eps", CFG_OPTIONAL, CFG_POSITIVE, &eps);
	cfg_choice(c, m, "norm", "norm", block_norms, &norm);
	cfg_choice(c, m, "mlp", "mlp", block_mlps, &mlp);
	norm_type = norm == 1 ? TPS_MODULE_RMSNORM : TPS_MODULE_LAYERNORM;
	cfg_number(c, m, "rope_theta", CFG_OPTIONAL, CFG_POSITIVE, &rope_theta);
	cfg_choice(c, m, "rope_style", "rope_style", tps_rope_style_names,
		   &rope_style);
	check_needs(c, m, "rope_style", "rope_theta");
	if (cfg_ok(c) && dim % heads != 0) {
		cfg_fail_at(
			c, "num_heads", TPS_ERR_INPUT,
			"dim %lld is not a multiple of num_heads %lld (each "
			"head takes dim / num_heads features)",
			(long long)dim, (long long)heads);
	}
	if (cfg_ok(c) && heads % kv_heads != 0) {
		cfg_fail_at(c, "num_kv_heads", TPS_ERR_INPUT,
			    "num_heads %lld is not a multiple of num_kv_heads "
			    "%lld (each kv head serves num_heads / "
			    "num_kv_heads query heads)",
			    (long long)heads, (long long)kv_heads);
	}
	if (!cfg_ok(c)) {
		return;
	}
	name = mx.name;
	/* x + attn(ln1(x)) */
	r = new_module(c, x, name, ".attn_residual", TPS_MODULE_RESIDUAL);
	r->n_descendants = 6;
	ln = new_module(c, x, name, ".ln1", norm_type);
	ln->in_features = ln->out_features = dim;
	set_width_key(c, ln, "dim");
	ln->eps = eps;
	ln->bias = norm_type == TPS_MODULE_LAYERNORM && bias;
	check_width(c, x, ln, "dim");
	a = new_module(c, x, name, ".attn", TPS_MODULE_ATTENTION);
	a->in_features = a->out_features = dim;
	set_width_key(c, a, "dim");
	a->num_heads = heads;
	a->num_kv_heads = kv_heads;
	a->causal = causal;
	a->bias = bias;
	a->rope_theta = rope_theta;
	a->rope_style = rope_style;
	if (cfg_ok(c)) {
		/* The attention's own rules (an even head_dim for RoPE). */
		const char *key = NULL;
		struct tps_error sub;
		if (tps_attention_ops.check(a, &key, &sub) != TPS_OK) {
			cfg_fail_at(c, key ? key : "num_heads", sub.status,
				    "%s", sub.message);
		}
	}
	if (cfg_ok(c)) {
		add_parts(c, x, x->next - 1);
	}
	/* x + mlp(ln2(x)) */
	r = new_module(c, x, name, ".mlp_residual", TPS_MODULE_RESIDUAL);
	r->n_descendants = mlp == 1 ? 6 : 4;
	ln = new_module(c, x, name, ".ln2", norm_type);
	ln->in_features = ln->out_features = dim;
	set_width_key(c, ln, "dim");
	ln->eps = eps;
	ln->bias = norm_type == TPS_MODULE_LAYERNORM && bias;
	if (mlp == 1) {
		char prefix[TPS_NAME_MAX];
		int n = snprintf(prefix, sizeof prefix, "%s.mlp", name);
		if (n < 0 || (size_t)n >= sizeof prefix) {
			cfg_fail_at(c, "name", TPS_ERR_INPUT,
				    "the name is too long for its modules' "
				    "names (\"<name>.mlp.swiglu\")");
			return;
		}
		add_swiglu(c, x, prefix, dim, hidden, bias,
			   cfg_get(m, "hidden") ? "hidden" : "dim");
		return;
	}
	l = new_module(c, x, name, ".mlp.fc1", TPS_MODULE_LINEAR);
	l->in_features = dim;
	l->out_features = hidden;
	/* hidden, or 4 dim when it is not given */
	set_width_key(c, l, cfg_get(m, "hidden") ? "hidden" : "dim");
	l->bias = bias;
	new_module(c, x, name, ".mlp.act", TPS_MODULE_GELU);
	l = new_module(c, x, name, ".mlp.fc2", TPS_MODULE_LINEAR);
	l->in_features = hidden;
	l->out_features = dim;
	set_width_key(c, l, "dim");
	l->bias = bias;
	x->last_width = x->next - 1;
}

/* ---- repeat ----------------------------------------------------------- */

struct repeat_ctx {
	struct model_ctx *x;
	char name[TPS_NAME_MAX]; /* the prefix and "name": "layers" */
};

/* A repeat's "name": with the prefix, a valid module name. */
static void read_repeat_name(struct cfg *c, const cJSON *name, void *ctx)
{
	struct repeat_ctx *r = ctx;
	char esc[96];
	int n;
	if (!cfg_expect(c, name, cJSON_IsString, "a string")) {
		return;
	}
	n = snprintf(r->name, sizeof r->name, "%s%s", r->x->prefix,
		     name->valuestring);
	if (n < 0 || (size_t)n >= sizeof r->name ||
	    !valid_module_name(r->name)) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "invalid name \"%s\" (expected dot-separated parts "
			 "of letters, digits, '_' and '-', under %d bytes with "
			 "the repetitions' \".<index>\")",
			 tps_json_escape_for_message(name->valuestring, esc,
						     sizeof esc),
			 TPS_NAME_MAX - 8);
	}
}

/* The repeated "module", at /model/<k>/module: one module, named by
 * x->own_name. */
static void repeated_module(struct cfg *c, const cJSON *m, void *ctx)
{
	if (is_repeat(m)) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "a repeat's \"module\" is one module; to repeat a "
			 "repeat, put it in a list, \"modules\"");
		return;
	}
	model_item(c, m, 0, ctx);
}

/* The repeated "modules", at /model/<k>/modules: a non-empty list. */
static void repeated_list(struct cfg *c, const cJSON *list, void *ctx)
{
	if (!cfg_expect(c, list, cJSON_IsArray, "an array of modules")) {
		return;
	}
	if (cJSON_GetArraySize(list) == 0) {
		cfg_fail(c, TPS_ERR_INPUT, "expected at least one module");
		return;
	}
	cfg_each_item(c, list, model_item, ctx);
}

/*
 * {"repeat": N, "name": P, "module": M}: N copies of the module M, named
 * P.0 ... P.<N-1> (M has no name of its own; a residual's body or a
 * transformer_block's parts are named under it, P.<i>.fc1). Or
 * {"repeat": N, "name": P, "modules": [M, ...]}: N copies of the list,
 * each module named P.<i>.<its name>. N may be a variable ("$layers").
 * Every copy is read at the same pointer, so an error in one is reported
 * at /model/<k>/module/...; the copies are what the rest of tpsim sees,
 * and the normalised config lists them.
 */
static void read_repeat(struct cfg *c, const cJSON *m, struct model_ctx *x)
{
	static const char *const keys[] = {"repeat", "name", "module",
					   "modules", NULL};
	struct repeat_ctx r = {x, ""};
	char prefix[TPS_NAME_MAX], pointer[TPS_POINTER_MAX];
	const cJSON *one = cfg_get(m, "module");
	const cJSON *list = cfg_get(m, "modules");
	int64_t count = 0;

	if (x->own_name) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "a repeat's \"module\" is one module; to repeat a "
			 "repeat, put it in a list, \"modules\"");
		return;
	}
	if (!cfg_check_keys(c, m, keys)) {
		return;
	}
	cfg_int(c, m, "repeat", CFG_REQUIRED, 1, TPS_MAX_MODULES, &count);
	cfg_value(c, m, "name", CFG_REQUIRED, read_repeat_name, &r);
	if (cfg_ok(c) && one && list) {
		cfg_fail_at(c, "modules", TPS_ERR_INPUT,
			    "\"module\" and \"modules\" both given (expected "
			    "one: a module, or a list of modules)");
	} else if (cfg_ok(c) && !one && !list) {
		cfg_fail_at(c, "module", TPS_ERR_INPUT,
			    "missing (a repeat needs \"module\", or a list, "
			    "\"modules\")");
	}
	if (!cfg_ok(c)) {
		return;
	}
	memcpy(prefix, x->prefix, sizeof prefix);
	memcpy(pointer, x->repeat_pointer, sizeof pointer);
	snprintf(x->repeat_pointer, sizeof x->repeat_pointer, "%s/name",
		 cfg_pointer(c));
	for (int64_t i = 0; i < count && cfg_ok(c); i++) {
		int n = snprintf(x->own, sizeof x->own, "%s.%lld", r.name,
				 (long long)i);
		int k = snprintf(x->prefix, sizeof x->prefix, "%s.%lld.",
				 r.name, (long long)i);
		if (n < 0 || k < 0 || (size_t)k >= sizeof x->prefix) {
			cfg_fail_at_pointer(c, x->repeat_pointer,
					    TPS_ERR_INPUT,
					    "the repetitions' names "
					    "(\"%s.%lld\") are over %d bytes",
					    r.name, (long long)i,
					    TPS_NAME_MAX - 2);
			break;
		}
		if (one) {
			x->own_name = x->own;
			cfg_value(c, m, "module", CFG_REQUIRED,
				  repeated_module, x);
			x->own_name = NULL;
		} else {
			cfg_value(c, m, "modules", CFG_REQUIRED, repeated_list,
				  x);
		}
	}
	memcpy(x->prefix, prefix, sizeof prefix);
	memcpy(x->repeat_pointer, pointer, sizeof pointer);
}

/* One module at its pointer (/model/<i>, or inside a body): the module,
 * then its input width against the width of the module before it in the
 * data flow (element-wise modules keep the width). A cross-field error,
 * reported at the later module. */
static void model_item(struct cfg *c, const cJSON *m, int index, void *ctx)
{
	struct model_ctx *x = ctx;
	const struct shorthand *sh = shorthand_of_object(m);
	const struct tps_module_type_desc *d;
	const struct tps_module_key *bodies[2];
	int i, n_bodies;
	struct tps_module_spec *ms;
	(void)index;
	if (is_repeat(m)) {
		read_repeat(c, m, x);
		return;
	}
	if (sh) {
		sh->expand(c, m, x);
		return;
	}
	i = x->next++;
	ms = &x->spec->modules[i];
	parse_module(c, m, i, x);
	if (!cfg_ok(c)) {
		return;
	}
	d = &tps_module_types[ms->type];
	if (d->width == TPS_WIDTH_MAKES && i != 0) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "%s %s reads the model's input token ids: it must be "
			 "the first module",
			 strchr("aeiou", d->name[0]) ? "an" : "a", d->name);
		return;
	}
	if (d->in_key) {
		check_width(c, x, ms, d->in_key);
	}
	add_parts(c, x, i);
	n_bodies = modules_keys(d, bodies);
	if (n_bodies == 1) {
		cfg_value(c, m, bodies[0]->name, CFG_REQUIRED, read_body, x);
	} else if (n_bodies == 2) {
		read_branches(c, m, x, i, bodies);
	}
	if (n_bodies > 0) {
		ms = &x->spec->modules[i];
		ms->n_descendants = x->next - i - 1;
	}
	if (d->width != TPS_WIDTH_KEEPS) {
		x->last_width = i;
	}
}

/* The model counts over TPS_MAX_MODULES: reported at the repeat that
 * takes it over, if one does, else at /model. */
static void too_many_modules(struct cfg *c, const cJSON *model)
{
	const cJSON *item;
	int n = 0, index = 0;
	cJSON_ArrayForEach(item, model)
	{
		int k = count_modules(item);
		n += k;
		if (n > TPS_MAX_MODULES && is_repeat(item)) {
			char at[TPS_POINTER_MAX];
			snprintf(at, sizeof at, "%s/%d/repeat", cfg_pointer(c),
				 index);
			cfg_fail_at_pointer(
				c, at, TPS_ERR_LIMIT,
				"%lld repetitions take the model over %d "
				"modules, counting residual bodies and the "
				"parts of attention and transformer_block",
				(long long)repeat_count(item),
				TPS_MAX_MODULES);
			return;
		}
		if (n > TPS_MAX_MODULES) {
			break;
		}
		index++;
	}
	cfg_fail(c, TPS_ERR_LIMIT,
		 "over %d modules, counting residual bodies, the parts of "
		 "attention and transformer_block, and repetitions",
		 TPS_MAX_MODULES);
}

static void read_model(struct cfg *c, const cJSON *model, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	struct model_ctx x = {spec, 0, -1, "", NULL, "", ""};
	const cJSON *item;
	int n = 0;
	if (!cfg_expect(c, model, cJSON_IsArray, "an array of modules")) {
		return;
	}
	cJSON_ArrayForEach(item, model)
	{
		n += count_modules(item);
		if (n > TPS_MAX_MODULES) {
			break;
		}
	}
	if (n == 0) {
		cfg_fail(c, TPS_ERR_INPUT, "expected at least one module");
	} else if (n > TPS_MAX_MODULES) {
		too_many_modules(c, model);
	}
	if (!cfg_ok(c)) {
		return;
	}
	spec->modules = calloc((size_t)n, sizeof *spec->modules);
	if (!spec->modules) {
		cfg_nomem(c);
		return;
	}
	cfg_each_item(c, model, model_item, &x);
}

/* Whether name is prefix + suffix, with a prefix of plen characters. */
static bool has_parts(const char *name, const char *prefix, size_t plen,
		      const char *suffix)
{
	return strncmp(name, prefix, plen) == 0 &&
	       strcmp(name + plen, suffix) == 0;
}

/*
 * The transformer blocks among the top-level modules (block_span, what
 * "recompute": "full" runs again): a residual "<p>.attn_residual" and the
 * top-level module after it, a residual "<p>.mlp_residual". That is what
 * a transformer_block expands into and what the normalised config lists,
 * so that it parses back to the same blocks.
 */
static void mark_blocks(struct tps_model_spec *spec)
{
	static const char attn[] = ".attn_residual";
	struct tps_module_spec *end = spec->modules + spec->n_modules;
	for (struct tps_module_spec *m = spec->modules; m < end;
	     m += 1 + m->n_descendants) {
		struct tps_module_spec *next = m + 1 + m->n_descendants;
		size_t n = strlen(m->name), k = sizeof attn - 1;
		m->block_span = 0;
		if (next < end && m->type == TPS_MODULE_RESIDUAL &&
		    next->type == TPS_MODULE_RESIDUAL && n > k &&
		    strcmp(m->name + n - k, attn) == 0 &&
		    has_parts(next->name, m->name, n - k, ".mlp_residual")) {
			m->block_span = 2;
		}
	}
}

void cfg_parse_model(struct cfg *c, const cJSON *root,
		     struct tps_model_spec *spec)
{
	cfg_value(c, root, "model", CFG_REQUIRED, read_model, spec);
	if (cfg_ok(c)) {
		mark_blocks(spec);
	}
}

/* ---- plan ------------------------------------------------------------- */

/*
 * Whether pat[p] (a literal, '?', or a class "[qkv]" / "[a-c]") matches c;
 * *next gets the position after it. A '[' without its ']' is a literal.
 */
static bool glob_one(const char *pat, size_t plen, size_t p, char c,
		     size_t *next)
{
	if (pat[p] == '[') {
		size_t q = p + 1;
		bool hit = false;
		while (q < plen && pat[q] != ']') {
			if (q + 2 < plen && pat[q + 1] == '-' &&
			    pat[q + 2] != ']') {
				hit = hit || (c >= pat[q] && c <= pat[q + 2]);
				q += 3;
			} else {
				hit = hit || c == pat[q];
				q++;
			}
		}
		if (q < plen) {
			*next = q + 1;
			return hit;
		}
	}
	*next = p + 1;
	return pat[p] == '?' || pat[p] == c;
}

/*
 * fnmatch-like matching within one path component: '*' (any run), '?'
 * (one character) and classes ("[qkv]", "[0-3]"). Greedy, backtracking only
 * to the last '*': O(plen * slen), where plain recursion is exponential in
 * the number of stars.
 */
static bool glob_part(const char *pat, size_t plen, const char *s, size_t slen)
{
	size_t p = 0, i = 0, star = SIZE_MAX, mark = 0, next;
	while (i < slen) {
		if (p < plen && pat[p] == '*') {
			star = p++;
			mark = i;
		} else if (p < plen && glob_one(pat, plen, p, s[i], &next)) {
			p = next;
			i++;
		} else if (star != SIZE_MAX) {
			p = star + 1;
			i = ++mark;
		} else {
			return false;
		}
	}
	while (p < plen && pat[p] == '*') {
		p++;
	}
	return p == plen;
}

/* A plan key matches a module path component by component. */
static bool plan_matches(const char *pattern, const char *name)
{
	for (;;) {
		const char *pe = strchr(pattern, '.');
		const char *ne = strchr(name, '.');
		size_t pl = pe ? (size_t)(pe - pattern) : strlen(pattern);
		size_t nl = ne ? (size_t)(ne - name) : strlen(name);
		if (!glob_part(pattern, pl, name, nl)) {
			return false;
		}
		if (!pe || !ne) {
			return !pe && !ne;
		}
		pattern = pe + 1;
		name = ne + 1;
	}
}

struct layout_ctx {
	int ndim;	  /* of the tensor the layout splits */
	const char *what; /* that tensor: "activations", "token ids" */
	struct tps_placement *out;
};

/* "replicate", or "shard(d)" with d an integer (negative from the end). */
static void read_layout(struct cfg *c, const cJSON *v, void *ctx)
{
	const struct layout_ctx *x = ctx;
	const char *s;
	char got[96];

	if (!cfg_expect(c, v, cJSON_IsString,
			"\"replicate\" or \"shard(d)\"")) {
		return;
	}
	s = v->valuestring;
	if (strcmp(s, "replicate") == 0) {
		*x->out = tps_placement_replicate();
		return;
	}
	/* strtol alone would also take "shard( 1)" and "shard(+1)". */
	if (strncmp(s, "shard(", 6) == 0 &&
	    (s[6] == '-' || (s[6] >= '0' && s[6] <= '9'))) {
		char *end;
		long d = strtol(s + 6, &end, 10);
		if (end != s + 6 && strcmp(end, ")") == 0 && d > -100 &&
		    d < 100) {
			if (tps_dim_normalize((int)d, x->ndim) < 0) {
				cfg_fail(c, TPS_ERR_INPUT,
					 "shard(%ld) is out of range for the "
					 "%d-dim %s",
					 d, x->ndim, x->what);
			}
			*x->out = tps_placement_shard((int)d);
			return;
		}
	}
	cfg_fail(c, TPS_ERR_INPUT,
		 "expected \"replicate\" or \"shard(d)\", got %s",
		 cfg_describe(v, got, sizeof got));
}

struct style_ctx {
	const struct tps_module_spec *ms; /* the module it is for */
	int style;			  /* out: its enum tps_style */
};

/* The style of a plan entry, a string, read at its own pointer. */
static void read_style(struct cfg *c, const cJSON *style, void *ctx)
{
	struct style_ctx *x = ctx;
	const struct tps_module_type_desc *d = &tps_module_types[x->ms->type];
	const char *advice = cJSON_IsString(style)
				     ? misnomer_advice(style->valuestring)
				     : NULL;
	char esc[96];
	if (advice) {
		cfg_fail(c, TPS_ERR_INPUT, "unknown style \"%s\": %s",
			 tps_json_escape_for_message(style->valuestring, esc,
						     sizeof esc),
			 advice);
	}
	if (cfg_read_choice(c, style, "style", tps_style_names, &x->style) &&
	    !(d->styles & TPS_STYLE_BIT(x->style))) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "%s cannot apply to %s module \"%s\" (%s)",
			 tps_style_names[x->style], d->name, x->ms->name,
			 d->why_not);
	}
}

/* A sequence-parallel layernorm's input and output: one shard, of a dim
 * other than the normalized last one. */
static void check_sequence_layout(struct cfg *c, const cJSON *entry,
				  const struct tps_module_spec *ms, int ndim)
{
	const struct tps_placement *io[2] = {&ms->input, &ms->output};
	static const char *const keys[2] = {"input", "output"};
	for (int k = 0; k < 2 && cfg_ok(c) && ms->style == TPS_STYLE_SEQUENCE;
	     k++) {
		int d = tps_dim_normalize(io[k]->dim, ndim);
		bool given = cJSON_IsObject(entry) && cfg_get(entry, keys[k]);
		if (io[k]->kind == TPS_PLACEMENT_SHARD && d >= 0 &&
		    d != ndim - 1) {
			continue;
		}
		if (given) {
			cfg_fail_at(c, keys[k], TPS_ERR_INPUT,
				    "sequence parallel shards a dim other than "
				    "the normalized last one");
		} else {
			cfg_fail(c, TPS_ERR_INPUT,
				 "sequence parallel shards the sequence, dim "
				 "1 of (batch, seq, features); this input has "
				 "%d dims",
				 ndim);
		}
	}
}

/* Applies one plan entry (a style string or object) to module ms. */
static void apply_plan_entry(struct cfg *c, const cJSON *entry,
			     struct tps_module_spec *ms, int ndim)
{
	static const char *const keys[] = {
		"style",	 "input",	   "output", "bias",
		"desired_input", "desired_output", NULL};
	static const char *const replicate_keys[] = {"style", NULL};
	static const char *const prepare_keys[2][4] = {
		{"style", "input", "desired_input", NULL},
		{"style", "output", "desired_output", NULL}};
	struct style_ctx sx = {ms, 0};
	/* An embedding's input is the token ids, a dim fewer. */
	bool ids = tps_module_types[ms->type].width == TPS_WIDTH_MAKES;
	struct layout_ctx input = {ids ? ndim - 1 : ndim,
				   ids ? "token ids" : "activations",
				   &ms->input};
	struct layout_ctx output = {ndim, "activations", &ms->output};
	bool object = cJSON_IsObject(entry);
	int b = 0;

	if (object) {
		cfg_check_keys(c, entry, keys);
		cfg_value(c, entry, "style", CFG_REQUIRED, read_style, &sx);
	} else if (cfg_expect(c, entry, cJSON_IsString,
			      "a style string or an object with "
			      "\"style\"")) {
		read_style(c, entry, &sx);
	}
	if (!cfg_ok(c)) {
		return;
	}
	ms->style = (enum tps_style)sx.style;
	ms->planned = true;
	ms->input = ms->style == TPS_STYLE_ROWWISE ? tps_placement_shard(-1)
		    : ms->style == TPS_STYLE_SEQUENCE
			    ? tps_placement_shard(1)
			    : tps_placement_replicate();
	ms->output = ms->style == TPS_STYLE_COLWISE ? tps_placement_shard(-1)
		     : ms->style == TPS_STYLE_SEQUENCE
			     ? tps_placement_shard(1)
			     : tps_placement_replicate();
	ms->bias_mode = TPS_BIAS_AFTER_REDUCE;
	if (ms->style == TPS_STYLE_PREPARE_INPUT ||
	    ms->style == TPS_STYLE_PREPARE_OUTPUT) {
		/* PrepareModuleInput(input_layouts, desired_input_layouts)
		 * and PrepareModuleOutput: both layouts, nothing else. */
		bool in = ms->style == TPS_STYLE_PREPARE_INPUT;
		struct layout_ctx desired = {ndim, "activations",
					     in ? &ms->desired_input
						: &ms->desired_output};
		if (!object) {
			cfg_fail(c, TPS_ERR_INPUT,
				 "%s needs its layouts: {\"style\": \"%s\", "
				 "\"%s\": L, \"desired_%s\": L}",
				 tps_style_names[ms->style],
				 tps_style_names[ms->style],
				 in ? "input" : "output",
				 in ? "input" : "output");
			return;
		}
		cfg_check_keys(c, entry, prepare_keys[in ? 0 : 1]);
		cfg_value(c, entry, in ? "input" : "output", CFG_REQUIRED,
			  read_layout, in ? &input : &output);
		cfg_value(c, entry, in ? "desired_input" : "desired_output",
			  CFG_REQUIRED, read_layout, &desired);
		return;
	}
	if (!object) {
		check_sequence_layout(c, entry, ms, ndim);
		return;
	}
	if (ms->style == TPS_STYLE_REPLICATE) {
		cfg_check_keys(c, entry, replicate_keys);
		return;
	}
	if (cfg_get(entry, "desired_input") ||
	    cfg_get(entry, "desired_output")) {
		cfg_fail_at(c,
			    cfg_get(entry, "desired_input") ? "desired_input"
							    : "desired_output",
			    TPS_ERR_INPUT,
			    "desired layouts belong to prepare_input and "
			    "prepare_output");
		return;
	}
	cfg_value(c, entry, "input", CFG_OPTIONAL, read_layout, &input);
	if (cfg_ok(c) && ms->style == TPS_STYLE_VOCAB &&
	    ms->input.kind != TPS_PLACEMENT_REPLICATE) {
		/* Nothing would split the ids: refused, not ignored. The
		 * layout read above is "shard(<digits>)": no escaping. */
		cfg_fail_at(c, "input", TPS_ERR_INPUT,
			    "a vocab embedding looks up the token ids on "
			    "every rank, replicated: its input is "
			    "\"replicate\" (got %s)",
			    cfg_get(entry, "input")->valuestring);
	}
	cfg_value(c, entry, "output", CFG_OPTIONAL, read_layout, &output);
	check_sequence_layout(c, entry, ms, ndim);
	if (cfg_ok(c) && cfg_get(entry, "bias") &&
	    ms->style != TPS_STYLE_ROWWISE) {
		cfg_fail_at(c, "bias", TPS_ERR_INPUT,
			    "a bias mode applies to rowwise only (colwise "
			    "adds its bias shard locally)");
	}
	if (cfg_choice(c, entry, "bias", "bias mode", tps_bias_mode_names,
		       &b)) {
		ms->bias_mode = (enum tps_bias_mode)b;
	}
}

struct plan_ctx {
	struct tps_model_spec *spec;
	const cJSON *plan;
	int *matched_by; /* per module: the index of its plan entry, or -1 */
	int k;		 /* the index of the entry being read */
};

/* One plan entry, at /plan/<key>: applied to every module it matches. */
static void plan_entry(struct cfg *c, const cJSON *entry, void *ctx)
{
	struct plan_ctx *p = ctx;
	struct tps_model_spec *spec = p->spec;
	int hits = 0;

	for (int i = 0; i < spec->n_modules && cfg_ok(c); i++) {
		struct tps_module_spec *ms = &spec->modules[i];
		if (!plan_matches(entry->string, ms->name)) {
			continue;
		}
		hits++;
		if (p->matched_by[i] >= 0) {
			/* The earlier key matched a module, so it holds only
			 * name characters and '*': nothing to escape. */
			cfg_fail(c, TPS_ERR_INPUT,
				 "module \"%s\" is already planned by "
				 "/plan/%s",
				 ms->name,
				 cJSON_GetArrayItem(p->plan, p->matched_by[i])
					 ->string);
			break;
		}
		p->matched_by[i] = p->k;
		apply_plan_entry(c, entry, ms, tps_model_activation_ndim(spec));
		snprintf(ms->plan_pointer, sizeof ms->plan_pointer, "%s",
			 cfg_pointer(c));
	}
	if (cfg_ok(c) && hits == 0) {
		char esc[96];
		cfg_fail(c, TPS_ERR_INPUT, "\"%s\" matches no module of /model",
			 tps_json_escape_for_message(entry->string, esc,
						     sizeof esc));
	}
	p->k++;
}

static void read_plan(struct cfg *c, const cJSON *plan, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	struct plan_ctx p = {spec, plan, NULL, 0};
	if (!cfg_expect(c, plan, cJSON_IsObject, "an object")) {
		return;
	}
	p.matched_by = malloc((size_t)spec->n_modules * sizeof *p.matched_by);
	if (!p.matched_by) {
		cfg_nomem(c);
		return;
	}
	for (int i = 0; i < spec->n_modules; i++) {
		p.matched_by[i] = -1;
	}
	cfg_each_member(c, plan, plan_entry, &p);
	free(p.matched_by);
}

/*
 * An attention's linears as the plan left them: q, k, v colwise and o
 * rowwise (whole heads on each rank: their shards in blocks of head_dim),
 * or all four replicated. q, k and v take the attention's input as it
 * gathered it (replicate) and give o the heads (shard(-1)).
 *
 * Grouped-query attention (num_kv_heads kv heads, each serving a group of
 * g = num_heads / num_kv_heads query heads): k and v give num_kv_heads *
 * head_dim features; tp splits the kv heads, each with its group, so q's
 * and o's blocks are whole groups (g head_dim features) and k's and v's
 * single kv heads: rank r holds the same kv heads' blocks in all four.
 * More tp ranks than kv heads is refused, as torchtitan does, rather than
 * replicating kv heads as Megatron and vLLM do (docs/transformer.md).
 */
static void finish_attention(struct cfg *c, struct tps_model_spec *spec,
			     struct tps_module_spec *attn)
{
	struct tps_module_spec *q = attn + 1, *o = attn + 4;
	int ndim = tps_model_activation_ndim(spec);
	bool split = q->style == TPS_STYLE_COLWISE;
	int64_t d = attn->in_features / attn->num_heads;
	int64_t group = attn->num_heads / attn->num_kv_heads;
	int tp = spec->mesh.shape[spec->tp_dim];
	/* k and v: the kv heads' features. */
	for (int k = 1; k <= 2; k++) {
		attn[1 + k].out_features = attn->num_kv_heads * d;
	}
	if (ndim < 3) {
		cfg_fail_at_pointer(c, attn->plan_pointer, TPS_ERR_INPUT,
				    "attention needs (batch, seq, embed) "
				    "activations; the model's are %d-dim",
				    ndim);
		return;
	}
	for (int k = 0; k < 4 && cfg_ok(c); k++) {
		struct tps_module_spec *l = attn + 1 + k;
		enum tps_style want = k == 3 ? (split ? TPS_STYLE_ROWWISE
						      : TPS_STYLE_REPLICATE)
					     : q->style;
		bool q_ok = q->style == TPS_STYLE_COLWISE ||
			    q->style == TPS_STYLE_REPLICATE;
		if (!q_ok || l->style != want) {
			cfg_fail_at_pointer(
				c, l->plan_pointer, TPS_ERR_INPUT,
				"attention \"%s\" splits its heads with q, k, "
				"v colwise and o rowwise, or replicates all "
				"four (%s is %s)",
				attn->name, l->name, tps_style_names[l->style]);
			return;
		}
		if (split && k < 3 &&
		    (l->input.kind != TPS_PLACEMENT_REPLICATE ||
		     l->output.kind != TPS_PLACEMENT_SHARD ||
		     tps_dim_normalize(l->output.dim, ndim) != ndim - 1)) {
			cfg_fail_at_pointer(
				c, l->plan_pointer, TPS_ERR_INPUT,
				"%s takes the attention's gathered input "
				"(replicate) and gives it its heads "
				"(shard(-1))",
				l->name);
			return;
		}
		if (split && k == 3 &&
		    (o->input.kind != TPS_PLACEMENT_SHARD ||
		     tps_dim_normalize(o->input.dim, ndim) != ndim - 1)) {
			cfg_fail_at_pointer(
				c, l->plan_pointer, TPS_ERR_INPUT,
				"%s takes the heads as the attention "
				"leaves them (shard(-1))",
				l->name);
			return;
		}
		/* Whole heads: shards in blocks of head_dim features (of
		 * a group of them for q and o). */
		int64_t block = k == 1 || k == 2 ? d : group * d;
		l->shard_block = split ? block : 0;
		if (split && k < 3) {
			l->output = tps_placement_shard_blocks(-1, block);
		} else if (split) {
			l->input = tps_placement_shard_blocks(-1, block);
		}
	}
	if (cfg_ok(c) && split && tp > attn->num_kv_heads &&
	    attn->num_kv_heads < attn->num_heads) {
		cfg_fail_at_pointer(
			c, q->plan_pointer, TPS_ERR_INPUT,
			"attention \"%s\" has %lld kv heads for %d tp ranks: "
			"tp splits whole kv heads, so tp must be at most "
			"num_kv_heads (torchtitan's rule; tpsim does not "
			"replicate kv heads over tp / num_kv_heads ranks as "
			"Megatron and vLLM do)",
			attn->name, (long long)attn->num_kv_heads, tp);
	}
}

/*
 * A tied head and its embedding hold one weight, so one layout of it:
 * a vocab-parallel embedding (rows of the vocabulary, shard(0)) with a
 * colwise head (its output features, the same rows, shard(0)), or both
 * replicated. Any other pair is refused at the head's plan, naming both.
 */
static void finish_tie(struct cfg *c, const struct tps_model_spec *spec,
		       const struct tps_module_spec *head)
{
	const struct tps_module_spec *e = NULL;
	bool same;
	for (int j = 0; j < spec->n_modules && !e; j++) {
		if (strcmp(spec->modules[j].name, head->tie) == 0) {
			e = &spec->modules[j];
		}
	}
	if (!e) {
		return; /* check_tie reported it */
	}
	same = (e->style == TPS_STYLE_VOCAB &&
		head->style == TPS_STYLE_COLWISE) ||
	       (e->style == TPS_STYLE_REPLICATE &&
		head->style == TPS_STYLE_REPLICATE);
	if (!same) {
		cfg_fail_at_pointer(
			c, head->plan_pointer, TPS_ERR_INPUT,
			"\"%s\" is tied to \"%s\" and holds its weight, "
			"but \"%s\" is %s (%s) and \"%s\" %s (%s): a tied "
			"weight has one layout (expected \"%s\" vocab with "
			"\"%s\" colwise, or both replicated)",
			head->name, e->name, head->name,
			tps_style_names[head->style], head->plan_pointer,
			e->name, tps_style_names[e->style], e->plan_pointer,
			e->name, head->name);
	}
}

/*
 * Vocabulary padding, Megatron's _vocab_size_with_padding: with d the
 * module's make_vocab_size_divisible_by, the padded vocabulary is
 *   V_pad = ceil(V / (d tp)) d tp
 * (50257 at d 128, tp 8: 51200). An embedding's weight gets V_pad rows
 * (its ids stay below V); a head's out_features becomes V_pad, and a
 * tied head's follows its embedding's. A padded head feeds the loss, so
 * it is the model's last module; spec->classes is then V.
 */
static void pad_vocabulary(struct cfg *c, struct tps_model_spec *spec)
{
	int64_t tp = spec->mesh.shape[spec->tp_dim];
	int last = -1;
	for (int i = 0; i < spec->n_modules;
	     i += 1 + spec->modules[i].n_descendants) {
		last = i;
	}
	for (int i = 0; i < spec->n_modules && cfg_ok(c); i++) {
		struct tps_module_spec *ms = &spec->modules[i];
		bool embedding = ms->type == TPS_MODULE_EMBEDDING;
		int64_t v = embedding ? ms->num_embeddings : ms->out_features;
		int64_t width = embedding ? ms->out_features : ms->in_features;
		int64_t mult = ms->vocab_divisor * tp, padded, numel;
		/* A tied head follows its embedding (below). */
		if (ms->vocab_divisor == 0 || ms->tie[0]) {
			continue;
		}
		padded = (v + mult - 1) / mult * mult;
		if (__builtin_mul_overflow(padded, width, &numel) ||
		    numel > TPS_MAX_ELEMENTS) {
			cfg_fail_at_pointer(
				c, ms->vocab_pointer, TPS_ERR_LIMIT,
				"the vocabulary %lld padded to a multiple of "
				"%lld x %s=%lld is %lld: its weight (%lld, "
				"%lld) has more than 2^31 elements",
				(long long)v, (long long)ms->vocab_divisor,
				spec->mesh.dim_names[spec->tp_dim],
				(long long)tp, (long long)padded,
				(long long)padded, (long long)width);
			return;
		}
		ms->real_vocab = v;
		ms->padded_vocab = padded;
		if (!embedding && i != last) {
			cfg_fail_at_pointer(
				c, ms->vocab_pointer, TPS_ERR_INPUT,
				"a padded vocabulary is the logits' classes: "
				"\"%s\" must be the model's last module, "
				"whose output feeds the loss",
				ms->name);
			return;
		}
		if (!embedding) {
			ms->out_features = padded;
			spec->classes = v;
		}
		for (int j = i + 1; embedding && j < spec->n_modules; j++) {
			struct tps_module_spec *head = &spec->modules[j];
			if (strcmp(head->tie, ms->name) != 0) {
				continue;
			}
			if (j != last) {
				cfg_fail_at_pointer(
					c, ms->vocab_pointer, TPS_ERR_INPUT,
					"\"%s\" is tied to \"%s\" and gets "
					"its padded vocabulary, the logits' "
					"classes: \"%s\" must be the model's "
					"last module, whose output feeds the "
					"loss",
					head->name, ms->name, head->name);
				return;
			}
			head->real_vocab = v;
			head->padded_vocab = padded;
			head->out_features = padded;
			spec->classes = v;
		}
	}
}

void cfg_parse_plan(struct cfg *c, const cJSON *root,
		    struct tps_model_spec *spec)
{
	cfg_value(c, root, "plan", CFG_OPTIONAL, read_plan, spec);
	for (int i = 0; i < spec->n_modules && cfg_ok(c); i++) {
		if (spec->modules[i].type == TPS_MODULE_ATTENTION) {
			finish_attention(c, spec, &spec->modules[i]);
		}
		if (spec->modules[i].tie[0]) {
			finish_tie(c, spec, &spec->modules[i]);
		}
	}
	if (cfg_ok(c)) {
		pad_vocabulary(c, spec);
	}
}

/* ---- params ----------------------------------------------------------- */

/* Nested arrays of numbers of exactly `shape`, read row-major into data;
 * with data NULL, only checked. */
struct values_ctx {
	const struct tps_shape *shape;
	int d; /* the dim being read */
	float *data;
	int64_t pos;
	const char *owner; /* "the parameter's", in the size message */
};

static void read_values(struct cfg *c, const cJSON *v, void *ctx);

static void read_values_item(struct cfg *c, const cJSON *item, int index,
			     void *ctx)
{
	struct values_ctx *x = ctx;
	x->d++;
	read_values(c, item, x);
	x->d--;
}

static bool is_float32(double d)
{
	return isfinite(d) && fabs(d) <= FLT_MAX;
}

static bool is_float32_value(const cJSON *v)
{
	return cJSON_IsNumber(v) && is_float32(v->valuedouble);
}

/*
 * The innermost dim, where nearly all the values are: when every element
 * of the array `row` (packed or not) is a float32 value, reads them all
 * (into data, if any) and returns true, without building each element's
 * pointer. Else returns false having read nothing: the caller reads the
 * row element by element, which reports the first bad one at its own
 * pointer.
 */
static bool read_good_row(const cJSON *row, struct values_ctx *x)
{
	const cJSON *item;
	if (tps_json_is_packed(row)) {
		const double *d = tps_json_packed_values(row);
		int n = tps_json_array_size(row);
		for (int i = 0; i < n; i++) {
			if (!is_float32(d[i])) {
				return false;
			}
		}
		for (int i = 0; x->data && i < n; i++) {
			x->data[x->pos++] = (float)d[i];
		}
		return true;
	}
	cJSON_ArrayForEach(item, row)
	{
		if (!is_float32_value(item)) {
			return false;
		}
	}
	if (x->data) {
		cJSON_ArrayForEach(item, row)
		{
			x->data[x->pos++] = (float)item->valuedouble;
		}
	}
	return true;
}

static void read_values(struct cfg *c, const cJSON *v, void *ctx)
{
	struct values_ctx *x = ctx;
	char got[96];
	if (x->d == x->shape->ndim) {
		if (!cfg_expect(c, v, cJSON_IsNumber, "a number")) {
			return;
		}
		if (!is_float32_value(v)) {
			cfg_fail(c, TPS_ERR_INPUT,
				 "expected a finite float32 value, got %s",
				 cfg_describe(v, got, sizeof got));
		} else if (x->data) {
			x->data[x->pos++] = (float)v->valuedouble;
		}
		return;
	}
	if (cfg_expect(c, v, cJSON_IsArray, "an array") &&
	    tps_json_array_size(v) != x->shape->dim[x->d]) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "expected %lld elements (dim %d of %s shape), got %d",
			 (long long)x->shape->dim[x->d], x->d, x->owner,
			 tps_json_array_size(v));
	}
	if (cfg_ok(c) && x->d + 1 == x->shape->ndim && read_good_row(v, x)) {
		return;
	}
	cfg_each_item(c, v, read_values_item, x);
}

/* The linear module owning parameter `name` ("fc1.weight", "fc1.bias")
 * and the parameter's shape, or NULL. */
/* The module whose parameter is called `name` ("fc1.weight"), asking each
 * module type what parameters it has; *shape gets the parameter's. */
static const struct tps_module_spec *
param_owner(const struct tps_model_spec *spec, const char *name,
	    struct tps_shape *shape)
{
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		struct tps_param_spec ps[TPS_MODULE_MAX_PARAMS];
		int n = tps_module_ops_of(m->type)->parameters(m, spec->tp_dim,
							       ps);
		size_t len = strlen(m->name);
		if (strncmp(name, m->name, len) != 0 || name[len] != '.') {
			continue;
		}
		for (int k = 0; k < n; k++) {
			if (strcmp(name + len + 1, ps[k].suffix) == 0) {
				*shape = ps[k].shape;
				return m;
			}
		}
	}
	return NULL;
}

/* One entry of "params", at /params/<name>. */
static void param_entry(struct cfg *c, const cJSON *entry, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	struct tps_param_override *o = &spec->overrides[spec->n_overrides];
	struct tps_shape shape;
	char esc[96];

	if (!param_owner(spec, entry->string, &shape)) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "no parameter \"%s\" in the model (expected "
			 "<module>.weight or .bias of a module that has it)",
			 tps_json_escape_for_message(entry->string, esc,
						     sizeof esc));
		return;
	}
	cfg_read_tensor(c, entry, &shape, "the parameter's", &o->value);
	if (!cfg_ok(c)) {
		return;
	}
	spec->n_overrides++;
	snprintf(o->name, sizeof o->name, "%s", entry->string);
}

void cfg_read_tensor(struct cfg *c, const cJSON *v,
		     const struct tps_shape *shape, const char *owner,
		     struct tps_tensor *out)
{
	struct values_ctx x = {shape, 0, NULL, 0, owner};
	struct tps_error sub;
	enum tps_status st;

	/* The shape first: a wrong value for a big tensor is refused before
	 * allocating it. */
	read_values(c, v, &x);
	if (!cfg_ok(c)) {
		return;
	}
	st = tps_tensor_init(out, shape, &sub);
	cfg_adopt(c, st, &sub);
	if (!cfg_ok(c)) {
		return;
	}
	x.data = out->data;
	read_values(c, v, &x);
}

static void read_params(struct cfg *c, const cJSON *params, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	int n;
	if (!cfg_expect(c, params, cJSON_IsObject, "an object")) {
		return;
	}
	n = cJSON_GetArraySize(params);
	if (n > 0) {
		spec->overrides = calloc((size_t)n, sizeof *spec->overrides);
		if (!spec->overrides) {
			cfg_nomem(c);
			return;
		}
	}
	cfg_each_member(c, params, param_entry, spec);
}

void cfg_parse_params(struct cfg *c, const cJSON *root,
		      struct tps_model_spec *spec)
{
	cfg_value(c, root, "params", CFG_OPTIONAL, read_params, spec);
}
