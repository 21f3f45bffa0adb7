#include "tpsim/config.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpsim/jsonio.h"
#include "tpsim/numfmt.h"

/* Parsing state: the file name, the pointer of the value being read. */
struct cfg {
	const char *file;
	struct tps_json_path path;
	/* Never NULL: the caller's error, or `own` when the caller passed
	 * none, so helpers may read the message back (c->err->message). */
	struct tps_error *err;
	struct tps_error own;
};

/* Fails with "<file>: <pointer>: <message>". */
static enum tps_status fail(struct cfg *c, enum tps_status st, const char *fmt,
			    ...) __attribute__((format(printf, 3, 4)));
static enum tps_status fail(struct cfg *c, enum tps_status st, const char *fmt,
			    ...)
{
	char msg[TPS_ERROR_MESSAGE_MAX];
	char file[256], ptr[TPS_JSON_PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* Keys may hold control characters; the line must stay one line. */
	return tps_error_set(
		c->err, st, "%s: %s: %s",
		tps_json_escape_for_message(c->file, file, sizeof file),
		tps_json_escape_for_message(tps_json_path_str(&c->path), ptr,
					    sizeof ptr),
		msg);
}

/* Pushes a key or index on the pointer; pop with the returned length. */
static size_t push_key(struct cfg *c, const char *key)
{
	size_t saved = c->path.len;
	tps_json_path_push_key(&c->path, key);
	return saved;
}

static size_t push_index(struct cfg *c, size_t i)
{
	size_t saved = c->path.len;
	tps_json_path_push_index(&c->path, i);
	return saved;
}

static void pop(struct cfg *c, size_t saved)
{
	tps_json_path_pop(&c->path, saved);
}

/* "string \"abc\"", "array", "2.5" for "got ..." parts of messages. */
static const char *describe(const cJSON *v, char *buf, size_t size)
{
	char esc[64];
	if (cJSON_IsString(v)) {
		snprintf(buf, size, "string \"%s\"",
			 tps_json_escape_for_message(v->valuestring, esc,
						     sizeof esc));
	} else if (cJSON_IsNumber(v)) {
		char num[TPS_NUMFMT_MAX];
		if (isfinite(v->valuedouble)) {
			tps_format_double(v->valuedouble, num);
		} else {
			snprintf(num, sizeof num, "a number out of range");
		}
		snprintf(buf, size, "%s", num);
	} else if (cJSON_IsBool(v)) {
		snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
	} else if (cJSON_IsArray(v)) {
		snprintf(buf, size, "an array");
	} else if (cJSON_IsObject(v)) {
		snprintf(buf, size, "an object");
	} else {
		snprintf(buf, size, "null");
	}
	return buf;
}

static enum tps_status expect_type(struct cfg *c, const cJSON *v,
				   int (*is)(const cJSON *), const char *what)
{
	char got[96];
	if (is(v)) {
		return TPS_OK;
	}
	return fail(c, TPS_ERR_INPUT, "expected %s, got %s", what,
		    describe(v, got, sizeof got));
}

static int is_object(const cJSON *v)
{
	return cJSON_IsObject(v);
}
static int is_array(const cJSON *v)
{
	return cJSON_IsArray(v);
}
static int is_string(const cJSON *v)
{
	return cJSON_IsString(v);
}
static int is_bool(const cJSON *v)
{
	return cJSON_IsBool(v);
}
static int is_number(const cJSON *v)
{
	return cJSON_IsNumber(v);
}

/* Every key of obj must be in allowed (NULL-terminated). */
static enum tps_status check_keys(struct cfg *c, const cJSON *obj,
				  const char *const *allowed)
{
	const cJSON *item;
	cJSON_ArrayForEach(item, obj)
	{
		char list[512] = "";
		size_t used = 0;
		bool ok = false;
		for (const char *const *a = allowed; *a; a++) {
			int n;
			if (strcmp(item->string, *a) == 0) {
				ok = true;
			}
			n = snprintf(list + used, sizeof list - used, "%s%s",
				     a == allowed ? "" : ", ", *a);
			if (n > 0 && (size_t)n < sizeof list - used) {
				used += (size_t)n;
			}
		}
		if (!ok) {
			char esc[96];
			size_t saved = push_key(c, item->string);
			enum tps_status st =
				fail(c, TPS_ERR_INPUT,
				     "unknown key \"%s\" (expected one of: %s)",
				     tps_json_escape_for_message(
					     item->string, esc, sizeof esc),
				     list);
			pop(c, saved);
			return st;
		}
	}
	return TPS_OK;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static enum tps_status require(struct cfg *c, const cJSON *obj, const char *key,
			       const cJSON **out)
{
	*out = get(obj, key);
	if (*out) {
		return TPS_OK;
	}
	size_t saved = push_key(c, key);
	enum tps_status st = fail(c, TPS_ERR_INPUT, "missing");
	pop(c, saved);
	return st;
}

/* An integral number in [lo, hi]; 2.0 is 2. */
static enum tps_status read_int(struct cfg *c, const cJSON *v, int64_t lo,
				int64_t hi, int64_t *out)
{
	double d;
	char got[96];
	enum tps_status st = expect_type(c, v, is_number, "an integer");
	if (st != TPS_OK) {
		return st;
	}
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d)) {
		return fail(c, TPS_ERR_INPUT, "expected an integer, got %s",
			    describe(v, got, sizeof got));
	}
	if (d < (double)lo || d > (double)hi) {
		return fail(c, TPS_ERR_INPUT,
			    "out of range (expected %lld to %lld, got %s)",
			    (long long)lo, (long long)hi,
			    describe(v, got, sizeof got));
	}
	*out = (int64_t)d;
	return TPS_OK;
}

static enum tps_status read_nonneg_number(struct cfg *c, const cJSON *v,
					  double *out)
{
	char got[96];
	enum tps_status st = expect_type(c, v, is_number, "a number");
	if (st != TPS_OK) {
		return st;
	}
	if (!isfinite(v->valuedouble) || v->valuedouble < 0) {
		return fail(c, TPS_ERR_INPUT,
			    "expected a finite number >= 0, got %s",
			    describe(v, got, sizeof got));
	}
	*out = v->valuedouble;
	return TPS_OK;
}

/* A string among choices (NULL-terminated); *index gets its position. */
static enum tps_status read_choice(struct cfg *c, const cJSON *v,
				   const char *what, const char *const *choices,
				   int *index)
{
	char list[256] = "", esc[96];
	size_t used = 0;
	enum tps_status st = expect_type(c, v, is_string, "a string");
	if (st != TPS_OK) {
		return st;
	}
	for (int i = 0; choices[i]; i++) {
		int n;
		if (strcmp(v->valuestring, choices[i]) == 0) {
			*index = i;
			return TPS_OK;
		}
		n = snprintf(list + used, sizeof list - used, "%s%s",
			     i ? ", " : "", choices[i]);
		if (n > 0 && (size_t)n < sizeof list - used) {
			used += (size_t)n;
		}
	}
	return fail(
		c, TPS_ERR_INPUT, "unknown %s \"%s\" (expected one of %s)",
		what,
		tps_json_escape_for_message(v->valuestring, esc, sizeof esc),
		list);
}

/* Reads an optional choice at obj[key]; keeps *index when absent. */
static enum tps_status opt_choice(struct cfg *c, const cJSON *obj,
				  const char *key, const char *what,
				  const char *const *choices, int *index)
{
	const cJSON *v = get(obj, key);
	enum tps_status st = TPS_OK;
	if (v) {
		size_t saved = push_key(c, key);
		st = read_choice(c, v, what, choices, index);
		pop(c, saved);
	}
	return st;
}

static enum tps_status opt_int(struct cfg *c, const cJSON *obj, const char *key,
			       int64_t lo, int64_t hi, int64_t *out)
{
	const cJSON *v = get(obj, key);
	enum tps_status st = TPS_OK;
	if (v) {
		size_t saved = push_key(c, key);
		st = read_int(c, v, lo, hi, out);
		pop(c, saved);
	}
	return st;
}

/* An array of 1..max_dims sizes, each an integer in [1, hi], read at the
 * current pointer; `what` names the owner in the dim-count message. */
static enum tps_status read_sizes(struct cfg *c, const cJSON *v,
				  const char *what, int max_dims, int64_t hi,
				  int64_t *dims, int *ndim)
{
	enum tps_status st = expect_type(c, v, is_array, "an array of sizes");
	int n = st == TPS_OK ? cJSON_GetArraySize(v) : 0;
	if (st == TPS_OK && (n < 1 || n > max_dims)) {
		return fail(c, TPS_ERR_LIMIT,
			    "%s has %d dims (expected 1 to "
			    "%d)",
			    what, n, max_dims);
	}
	for (int i = 0; i < n && st == TPS_OK; i++) {
		size_t saved = push_index(c, (size_t)i);
		st = read_int(c, cJSON_GetArrayItem(v, i), 1, hi, &dims[i]);
		pop(c, saved);
	}
	*ndim = n;
	return st;
}

/* ---- mesh ---------------------------------------------------------- */

static enum tps_status parse_mesh(struct cfg *c, const cJSON *root,
				  struct tps_model_spec *spec)
{
	static const char *const keys[] = {"shape", "dim_names", NULL};
	const cJSON *mesh, *shape, *names, *item;
	int sizes[TPS_MAX_MESH_DIMS];
	int64_t dims[TPS_MAX_MESH_DIMS];
	const char *name_ptrs[TPS_MAX_MESH_DIMS];
	int ndim = 0;
	enum tps_status st = require(c, root, "mesh", &mesh);
	size_t saved = push_key(c, "mesh"), s2;
	int64_t world = 1;

	if (st == TPS_OK) {
		st = expect_type(c, mesh, is_object, "an object");
	}
	if (st == TPS_OK) {
		st = check_keys(c, mesh, keys);
	}
	if (st == TPS_OK) {
		st = require(c, mesh, "shape", &shape);
	}
	if (st == TPS_OK) {
		st = require(c, mesh, "dim_names", &names);
	}
	if (st != TPS_OK) {
		goto out;
	}
	s2 = push_key(c, "shape");
	st = read_sizes(c, shape, "mesh", TPS_MAX_MESH_DIMS, INT32_MAX, dims,
			&ndim);
	for (int i = 0; i < ndim && st == TPS_OK; i++) {
		world *= dims[i]; /* <= 4096 * 2^31: no overflow */
		sizes[i] = (int)dims[i];
		if (world > TPS_MAX_WORLD) {
			size_t s3 = push_index(c, (size_t)i);
			st = fail(c, TPS_ERR_LIMIT,
				  "world size %s%lld exceeds "
				  "%d",
				  i < ndim - 1 ? "of at least " : "",
				  (long long)world, TPS_MAX_WORLD);
			pop(c, s3);
		}
	}
	pop(c, s2);
	if (st != TPS_OK) {
		goto out;
	}
	s2 = push_key(c, "dim_names");
	st = expect_type(c, names, is_array, "an array of names");
	if (st == TPS_OK && cJSON_GetArraySize(names) != ndim) {
		st = fail(c, TPS_ERR_INPUT,
			  "expected %d names, one per entry "
			  "of /mesh/shape, got %d",
			  ndim, cJSON_GetArraySize(names));
	}
	for (int i = 0; i < ndim && st == TPS_OK; i++) {
		size_t s3 = push_index(c, (size_t)i);
		item = cJSON_GetArrayItem(names, i);
		st = expect_type(c, item, is_string, "a string");
		if (st == TPS_OK) {
			size_t len = strlen(item->valuestring);
			if (len == 0 || len >= TPS_MESH_NAME_MAX) {
				st = fail(c, TPS_ERR_INPUT,
					  "expected a name "
					  "of 1 to %d bytes, got %zu",
					  TPS_MESH_NAME_MAX - 1, len);
			}
			for (int j = 0; j < i && st == TPS_OK; j++) {
				char esc[96];
				if (strcmp(name_ptrs[j], item->valuestring) ==
				    0) {
					st = fail(c, TPS_ERR_INPUT,
						  "duplicate dim name \"%s\" "
						  "(also /mesh/dim_names/%d)",
						  tps_json_escape_for_message(
							  name_ptrs[j], esc,
							  sizeof esc),
						  j);
				}
			}
			name_ptrs[i] = item->valuestring;
		}
		pop(c, s3);
	}
	if (st == TPS_OK) {
		st = tps_mesh_init(&spec->mesh, ndim, sizes, name_ptrs, c->err);
		if (st != TPS_OK) {
			st = fail(c, st, "%s", c->err->message);
		}
	}
	pop(c, s2);
out:
	pop(c, saved);
	return st;
}

static enum tps_status read_dim_name(struct cfg *c, const cJSON *root,
				     const char *key,
				     const struct tps_mesh *mesh, int *out)
{
	const cJSON *v = get(root, key);
	size_t saved;
	enum tps_status st;
	char esc[96];
	if (!v) {
		return TPS_OK;
	}
	saved = push_key(c, key);
	st = expect_type(c, v, is_string, "a mesh dim name");
	if (st == TPS_OK) {
		*out = tps_mesh_dim_index(mesh, v->valuestring);
		if (*out < 0) {
			st = fail(c, TPS_ERR_INPUT,
				  "no mesh dim is named "
				  "\"%s\"",
				  tps_json_escape_for_message(v->valuestring,
							      esc, sizeof esc));
		}
	}
	pop(c, saved);
	return st;
}

/* ---- model --------------------------------------------------------- */

/* Module types DESIGN.md names that later versions will add. */
static const char *const later_types[] = {"layernorm", "embedding", "attention",
					  "residual",  "dropout",   NULL};

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

static enum tps_status parse_module(struct cfg *c, const cJSON *m, int index,
				    struct tps_model_spec *spec)
{
	static const char *const linear_keys[] = {
		"name", "type", "in_features", "out_features", "bias", NULL};
	static const char *const act_keys[] = {"name", "type", NULL};
	struct tps_module_spec *ms = &spec->modules[index];
	const cJSON *name, *type, *v;
	int t = 0;
	size_t saved;
	enum tps_status st = expect_type(c, m, is_object, "a module object");

	if (st == TPS_OK) {
		st = require(c, m, "name", &name);
	}
	if (st == TPS_OK) {
		saved = push_key(c, "name");
		st = expect_type(c, name, is_string, "a string");
		if (st == TPS_OK && !valid_module_name(name->valuestring)) {
			char esc[96];
			st = fail(c, TPS_ERR_INPUT,
				  "invalid module name \"%s\" "
				  "(expected dot-separated parts of letters, "
				  "digits, '_' and '-', under %d bytes)",
				  tps_json_escape_for_message(name->valuestring,
							      esc, sizeof esc),
				  TPS_NAME_MAX);
		}
		for (int j = 0; j < index && st == TPS_OK; j++) {
			if (strcmp(spec->modules[j].name, name->valuestring) ==
			    0) {
				st = fail(c, TPS_ERR_INPUT,
					  "duplicate module "
					  "name \"%s\" (also /model/%d/name)",
					  name->valuestring, j);
			}
		}
		pop(c, saved);
	}
	if (st == TPS_OK) {
		st = require(c, m, "type", &type);
	}
	if (st == TPS_OK) {
		saved = push_key(c, "type");
		st = expect_type(c, type, is_string, "a string");
		for (int i = 0; st == TPS_OK && later_types[i]; i++) {
			if (strcmp(type->valuestring, later_types[i]) == 0) {
				st = fail(c, TPS_ERR_UNSUPPORTED,
					  "module type \"%s\" is not "
					  "supported by tpsim 0.1 (expected "
					  "linear, relu or gelu)",
					  later_types[i]);
			}
		}
		if (st == TPS_OK) {
			st = read_choice(c, type, "module type", tps_module_type_names,
					 &t);
		}
		pop(c, saved);
	}
	if (st != TPS_OK) {
		return st;
	}
	snprintf(ms->name, sizeof ms->name, "%s", name->valuestring);
	ms->type = (enum tps_module_type)t;
	ms->style = TPS_STYLE_REPLICATE;
	ms->planned = false;
	ms->input = tps_placement_replicate();
	ms->output = tps_placement_replicate();
	snprintf(ms->plan_pointer, sizeof ms->plan_pointer, "/model/%d", index);
	if (ms->type != TPS_MODULE_LINEAR) {
		return check_keys(c, m, act_keys);
	}
	st = check_keys(c, m, linear_keys);
	if (st == TPS_OK) {
		st = require(c, m, "in_features", &v);
	}
	if (st == TPS_OK) {
		st = opt_int(c, m, "in_features", 1, TPS_MAX_ELEMENTS,
			     &ms->in_features);
	}
	if (st == TPS_OK) {
		st = require(c, m, "out_features", &v);
	}
	if (st == TPS_OK) {
		st = opt_int(c, m, "out_features", 1, TPS_MAX_ELEMENTS,
			     &ms->out_features);
	}
	ms->bias = true; /* as nn.Linear */
	v = get(m, "bias");
	if (st == TPS_OK && v) {
		saved = push_key(c, "bias");
		st = expect_type(c, v, is_bool, "true or false");
		ms->bias = cJSON_IsTrue(v);
		pop(c, saved);
	}
	if (st == TPS_OK) {
		int64_t numel;
		if (__builtin_mul_overflow(ms->in_features, ms->out_features,
					   &numel) ||
		    numel > TPS_MAX_ELEMENTS) {
			saved = push_key(c, "out_features");
			st = fail(c, TPS_ERR_LIMIT,
				  "the weight (%lld, %lld) "
				  "has more than 2^31 elements",
				  (long long)ms->out_features,
				  (long long)ms->in_features);
			pop(c, saved);
		}
	}
	return st;
}

static enum tps_status parse_model(struct cfg *c, const cJSON *root,
				   struct tps_model_spec *spec)
{
	const cJSON *model;
	int n;
	enum tps_status st = require(c, root, "model", &model);
	size_t saved = push_key(c, "model");
	int64_t width = -1; /* the features flowing out of the last linear */
	int width_from = -1;

	if (st == TPS_OK) {
		st = expect_type(c, model, is_array, "an array of modules");
	}
	n = st == TPS_OK ? cJSON_GetArraySize(model) : 0;
	if (st == TPS_OK && n == 0) {
		st = fail(c, TPS_ERR_INPUT, "expected at least one module");
	}
	if (st == TPS_OK && n > 4096) {
		st = fail(c, TPS_ERR_LIMIT, "%d modules (at most 4096)", n);
	}
	if (st == TPS_OK) {
		spec->modules = calloc((size_t)n, sizeof *spec->modules);
		if (!spec->modules) {
			st = tps_error_set(c->err, TPS_ERR_NOMEM,
					   "out of memory");
		}
	}
	for (int i = 0; i < n && st == TPS_OK; i++) {
		size_t s2 = push_index(c, (size_t)i);
		const struct tps_module_spec *ms = &spec->modules[i];
		st = parse_module(c, cJSON_GetArrayItem(model, i), i, spec);
		spec->n_modules = i + 1;
		if (st == TPS_OK && ms->type == TPS_MODULE_LINEAR) {
			if (width >= 0 && ms->in_features != width) {
				size_t s3 = push_key(c, "in_features");
				st = fail(c, TPS_ERR_INPUT,
					  "expected %lld, the "
					  "out_features of /model/%d, got %lld",
					  (long long)width, width_from,
					  (long long)ms->in_features);
				pop(c, s3);
			}
			width = ms->out_features;
			width_from = i;
		}
		pop(c, s2);
	}
	pop(c, saved);
	return st;
}

/* ---- plan ---------------------------------------------------------- */

/*
 * fnmatch-like '*' within one path component. Greedy, backtracking only to
 * the last '*' (enough when '*' is the only wildcard): O(plen * slen), where
 * plain recursion is exponential in the number of stars.
 */
static bool glob_part(const char *pat, size_t plen, const char *s, size_t slen)
{
	size_t p = 0, i = 0, star = SIZE_MAX, mark = 0;
	while (i < slen) {
		if (p < plen && pat[p] == '*') {
			star = p++;
			mark = i;
		} else if (p < plen && pat[p] == s[i]) {
			p++;
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

/* "replicate", "shard(d)" with d an integer (negative from the end). */
static enum tps_status read_layout(struct cfg *c, const cJSON *v, int ndim,
				   struct tps_placement *out)
{
	char got[96];
	enum tps_status st =
		expect_type(c, v, is_string, "\"replicate\" or \"shard(d)\"");
	const char *s;
	if (st != TPS_OK) {
		return st;
	}
	s = v->valuestring;
	if (strcmp(s, "replicate") == 0) {
		*out = tps_placement_replicate();
		return TPS_OK;
	}
	/* strtol alone would also take "shard( 1)" and "shard(+1)". */
	if (strncmp(s, "shard(", 6) == 0 &&
	    (s[6] == '-' || (s[6] >= '0' && s[6] <= '9'))) {
		char *end;
		long d = strtol(s + 6, &end, 10);
		if (end != s + 6 && strcmp(end, ")") == 0 && d > -100 &&
		    d < 100) {
			if (tps_dim_normalize((int)d, ndim) < 0) {
				return fail(c, TPS_ERR_INPUT,
					    "shard(%ld) is "
					    "out of range for the %d-dim "
					    "activations",
					    d, ndim);
			}
			*out = tps_placement_shard((int)d);
			return TPS_OK;
		}
	}
	return fail(c, TPS_ERR_INPUT,
		    "expected \"replicate\" or "
		    "\"shard(d)\", got %s",
		    describe(v, got, sizeof got));
}

static const char *const later_styles[] = {"sequence", "vocab", NULL};

/* Applies one plan entry (key -> value) to module ms. */
static enum tps_status apply_plan_entry(struct cfg *c, const cJSON *entry,
					struct tps_module_spec *ms, int ndim)
{
	static const char *const keys[] = {"style", "input", "output", "bias",
					   NULL};
	const cJSON *style = entry, *v;
	int s = 0, b = 0;
	size_t saved;
	enum tps_status st = TPS_OK;
	bool object = cJSON_IsObject(entry);

	if (object) {
		st = check_keys(c, entry, keys);
		if (st == TPS_OK) {
			st = require(c, entry, "style", &style);
		}
		if (st != TPS_OK) {
			return st;
		}
	} else if (!cJSON_IsString(entry)) {
		return expect_type(c, entry, is_string,
				   "a style string or "
				   "an object with \"style\"");
	}
	saved = object ? push_key(c, "style") : c->path.len;
	for (int i = 0; cJSON_IsString(style) && later_styles[i]; i++) {
		if (strcmp(style->valuestring, later_styles[i]) == 0) {
			st = fail(c, TPS_ERR_UNSUPPORTED,
				  "style \"%s\" is not "
				  "supported by tpsim 0.1 (expected colwise, "
				  "rowwise or replicate)",
				  later_styles[i]);
		}
	}
	if (st == TPS_OK) {
		st = read_choice(c, style, "style", tps_style_names, &s);
	}
	if (st == TPS_OK && s != 2 && ms->type != TPS_MODULE_LINEAR) {
		st = fail(c, TPS_ERR_INPUT,
			  "%s cannot apply to %s module "
			  "\"%s\" (it has no weight to shard)",
			  tps_style_names[s], tps_module_type_names[ms->type],
			  ms->name);
	}
	pop(c, saved);
	if (st != TPS_OK) {
		return st;
	}
	ms->style = (enum tps_style)s;
	ms->planned = true;
	ms->input =
		s == 1 ? tps_placement_shard(-1) : tps_placement_replicate();
	ms->output =
		s == 0 ? tps_placement_shard(-1) : tps_placement_replicate();
	ms->bias_mode = TPS_BIAS_AFTER_REDUCE;
	if (!object) {
		return TPS_OK;
	}
	if (s == 2) {
		static const char *const rkeys[] = {"style", NULL};
		return check_keys(c, entry, rkeys);
	}
	if ((v = get(entry, "input"))) {
		saved = push_key(c, "input");
		st = read_layout(c, v, ndim, &ms->input);
		pop(c, saved);
	}
	if (st == TPS_OK && (v = get(entry, "output"))) {
		saved = push_key(c, "output");
		st = read_layout(c, v, ndim, &ms->output);
		pop(c, saved);
	}
	if (st == TPS_OK && (v = get(entry, "bias"))) {
		saved = push_key(c, "bias");
		if (s != 1) {
			st = fail(c, TPS_ERR_INPUT,
				  "a bias mode applies to "
				  "rowwise only (colwise adds its bias shard "
				  "locally)");
		} else {
			st = read_choice(c, v, "bias mode", tps_bias_mode_names, &b);
			ms->bias_mode = (enum tps_bias_mode)b;
		}
		pop(c, saved);
	}
	return st;
}

static enum tps_status parse_plan(struct cfg *c, const cJSON *root,
				  struct tps_model_spec *spec)
{
	const cJSON *plan = get(root, "plan"), *entry;
	size_t saved;
	enum tps_status st = TPS_OK;
	int *matched_by; /* per module: the index of its plan entry, or -1 */
	int k = 0;

	if (!plan) {
		return TPS_OK;
	}
	saved = push_key(c, "plan");
	st = expect_type(c, plan, is_object, "an object");
	matched_by = calloc((size_t)spec->n_modules, sizeof *matched_by);
	if (st == TPS_OK && !matched_by) {
		st = tps_error_set(c->err, TPS_ERR_NOMEM, "out of memory");
	}
	for (int i = 0; st == TPS_OK && i < spec->n_modules; i++) {
		matched_by[i] = -1;
	}
	cJSON_ArrayForEach(entry, plan)
	{
		size_t s2;
		int hits = 0;
		if (st != TPS_OK) {
			break;
		}
		s2 = push_key(c, entry->string);
		for (int i = 0; i < spec->n_modules && st == TPS_OK; i++) {
			struct tps_module_spec *ms = &spec->modules[i];
			if (!plan_matches(entry->string, ms->name)) {
				continue;
			}
			hits++;
			if (matched_by[i] >= 0) {
				st = fail(
					c, TPS_ERR_INPUT,
					"module \"%s\" is "
					"already planned by /plan/%s",
					ms->name,
					cJSON_GetArrayItem(plan, matched_by[i])
						->string);
				break;
			}
			matched_by[i] = k;
			st = apply_plan_entry(c, entry, ms,
					      spec->input_shape.ndim);
			snprintf(ms->plan_pointer, sizeof ms->plan_pointer,
				 "%s", tps_json_path_str(&c->path));
		}
		if (st == TPS_OK && hits == 0) {
			char esc[96];
			st = fail(c, TPS_ERR_INPUT,
				  "\"%s\" matches no module "
				  "of /model",
				  tps_json_escape_for_message(entry->string,
							      esc, sizeof esc));
		}
		pop(c, s2);
		k++;
	}
	free(matched_by);
	pop(c, saved);
	return st;
}

/* ---- input, init, params ------------------------------------------- */


/* {"init": method, "seed": n} inside obj (input/target) or the "init"
 * object itself (params). */
static enum tps_status parse_init_fields(struct cfg *c, const cJSON *obj,
					 const char *method_key,
					 struct tps_init_spec *init)
{
	int m = (int)init->method;
	int64_t seed = (int64_t)init->seed;
	enum tps_status st =
		opt_choice(c, obj, method_key, "init method", tps_init_method_names,
			   &m);
	if (st == TPS_OK) {
		st = opt_int(c, obj, "seed", 0, (int64_t)1 << 53, &seed);
	}
	init->method = (enum tps_init_method)m;
	init->seed = (uint64_t)seed;
	return st;
}

static enum tps_status parse_input(struct cfg *c, const cJSON *root,
				   struct tps_model_spec *spec)
{
	static const char *const keys[] = {"shape", "init", "seed",
					   "requires_grad", NULL};
	const cJSON *input, *shape, *rg;
	enum tps_status st = require(c, root, "input", &input);
	size_t saved = push_key(c, "input"), s2;
	int ndim = 0;
	int64_t dims[TPS_MAX_DIMS] = {0}, numel;

	if (st == TPS_OK) {
		st = expect_type(c, input, is_object, "an object");
	}
	if (st == TPS_OK) {
		st = check_keys(c, input, keys);
	}
	if (st == TPS_OK) {
		st = require(c, input, "shape", &shape);
	}
	if (st != TPS_OK) {
		goto out;
	}
	s2 = push_key(c, "shape");
	st = read_sizes(c, shape, "the input", TPS_MAX_DIMS, TPS_MAX_ELEMENTS,
			dims, &ndim);
	if (st == TPS_OK) {
		spec->input_shape = tps_shape_make(ndim, dims);
		st = tps_shape_numel(&spec->input_shape, &numel, c->err);
		if (st != TPS_OK) {
			st = fail(c, st, "%s", c->err->message);
		}
	}
	pop(c, s2);
	if (st == TPS_OK) {
		spec->input_init.method = TPS_INIT_UNIFORM;
		spec->input_init.seed = 0;
		st = parse_init_fields(c, input, "init", &spec->input_init);
	}
	if (st == TPS_OK && (rg = get(input, "requires_grad"))) {
		s2 = push_key(c, "requires_grad");
		st = expect_type(c, rg, is_bool, "true or false");
		pop(c, s2);
	}
out:
	pop(c, saved);
	return st;
}

/* The first linear's in_features must be the input's last dim. */
static enum tps_status check_input_width(struct cfg *c,
					 const struct tps_model_spec *spec)
{
	const struct tps_shape *s = &spec->input_shape;
	for (int i = 0; i < spec->n_modules; i++) {
		const struct tps_module_spec *m = &spec->modules[i];
		if (m->type != TPS_MODULE_LINEAR) {
			continue;
		}
		if (m->in_features != s->dim[s->ndim - 1]) {
			size_t saved = push_key(c, "input");
			size_t s2 = push_key(c, "shape");
			size_t s3 = push_index(c, (size_t)(s->ndim - 1));
			enum tps_status st = fail(
				c, TPS_ERR_INPUT,
				"expected %lld, the in_features of /model/%d, "
				"got %lld",
				(long long)m->in_features, i,
				(long long)s->dim[s->ndim - 1]);
			pop(c, s3);
			pop(c, s2);
			pop(c, saved);
			return st;
		}
		break;
	}
	return TPS_OK;
}

/* Reads nested arrays of numbers of exactly `shape` into data (row-major);
 * with data NULL, only checks them. */
static enum tps_status read_values(struct cfg *c, const cJSON *v,
				   const struct tps_shape *shape, int d,
				   float *data, int64_t *pos)
{
	enum tps_status st;
	char got[96];
	if (d == shape->ndim) {
		st = expect_type(c, v, is_number, "a number");
		if (st == TPS_OK && (!isfinite(v->valuedouble) ||
				     fabs(v->valuedouble) > FLT_MAX)) {
			st = fail(c, TPS_ERR_INPUT,
				  "expected a finite float32 "
				  "value, got %s",
				  describe(v, got, sizeof got));
		}
		if (st == TPS_OK && data) {
			data[(*pos)++] = (float)v->valuedouble;
		}
		return st;
	}
	st = expect_type(c, v, is_array, "an array");
	if (st == TPS_OK && cJSON_GetArraySize(v) != shape->dim[d]) {
		st = fail(c, TPS_ERR_INPUT,
			  "expected %lld elements (dim %d of "
			  "the parameter's shape), got %d",
			  (long long)shape->dim[d], d, cJSON_GetArraySize(v));
	}
	for (int i = 0; st == TPS_OK && i < shape->dim[d]; i++) {
		size_t saved = push_index(c, (size_t)i);
		st = read_values(c, cJSON_GetArrayItem(v, i), shape, d + 1,
				 data, pos);
		pop(c, saved);
	}
	return st;
}

static enum tps_status parse_params(struct cfg *c, const cJSON *root,
				    struct tps_model_spec *spec)
{
	const cJSON *params = get(root, "params"), *entry;
	size_t saved;
	enum tps_status st;
	int n;

	if (!params) {
		return TPS_OK;
	}
	saved = push_key(c, "params");
	st = expect_type(c, params, is_object, "an object");
	n = st == TPS_OK ? cJSON_GetArraySize(params) : 0;
	if (st == TPS_OK && n > 0) {
		spec->overrides = calloc((size_t)n, sizeof *spec->overrides);
		if (!spec->overrides) {
			st = tps_error_set(c->err, TPS_ERR_NOMEM,
					   "out of memory");
		}
	}
	cJSON_ArrayForEach(entry, params)
	{
		struct tps_param_override *o;
		const struct tps_module_spec *owner = NULL;
		int64_t dims[2];
		struct tps_shape shape;
		int64_t pos = 0;
		size_t s2;
		if (st != TPS_OK) {
			break;
		}
		s2 = push_key(c, entry->string);
		for (int i = 0; i < spec->n_modules && !owner; i++) {
			const struct tps_module_spec *m = &spec->modules[i];
			char w[TPS_NAME_MAX + 8], b[TPS_NAME_MAX + 8];
			if (m->type != TPS_MODULE_LINEAR) {
				continue;
			}
			snprintf(w, sizeof w, "%s.weight", m->name);
			snprintf(b, sizeof b, "%s.bias", m->name);
			if (strcmp(entry->string, w) == 0) {
				owner = m;
				dims[0] = m->out_features;
				dims[1] = m->in_features;
				shape = tps_shape_make(2, dims);
			} else if (m->bias && strcmp(entry->string, b) == 0) {
				owner = m;
				dims[0] = m->out_features;
				shape = tps_shape_make(1, dims);
			}
		}
		if (!owner) {
			char esc[96];
			st = fail(c, TPS_ERR_INPUT,
				  "no parameter \"%s\" in the "
				  "model (expected <linear module>.weight or "
				  ".bias)",
				  tps_json_escape_for_message(entry->string,
							      esc, sizeof esc));
		}
		if (st == TPS_OK) {
			/* The shape first: a wrong entry for a big parameter
			 * is refused before allocating it. */
			st = read_values(c, entry, &shape, 0, NULL, &pos);
		}
		if (st == TPS_OK) {
			o = &spec->overrides[spec->n_overrides];
			st = tps_tensor_init(&o->value, &shape, c->err);
			if (st == TPS_OK) {
				spec->n_overrides++;
				snprintf(o->name, sizeof o->name, "%s",
					 entry->string);
				st = read_values(c, entry, &shape, 0,
						 o->value.data, &pos);
			}
		}
		pop(c, s2);
	}
	pop(c, saved);
	return st;
}

/* ---- the whole config ---------------------------------------------- */


static enum tps_status parse_misc(struct cfg *c, const cJSON *root,
				  struct tps_run_spec *run)
{
	static const char *const trace_keys[] = {"values", NULL};
	static const char *const tol_keys[] = {"atol", "rtol", NULL};
	static const char *const init_keys[] = {"method", "seed", NULL};
	static const char *const target_keys[] = {"init", "seed", NULL};
	static const char *const opt_keys[] = {"type", "lr", NULL};
	static const char *const opt_types[] = {"sgd", NULL};
	struct tps_model_spec *spec = &run->model;
	int uneven = 0, sampler = 0, mode = 0, values = 0, loss = 0, ot = 0;
	const cJSON *v;
	size_t saved;
	enum tps_status st;
	int64_t steps = 1;

	spec->param_init.method = TPS_INIT_UNIFORM;
	spec->param_init.seed = 0;
	st = opt_choice(c, root, "uneven", "uneven policy", tps_uneven_names,
			&uneven);
	spec->uneven = (enum tps_uneven)uneven;
	if (st == TPS_OK) {
		st = opt_choice(c, root, "sampler", "sampler", tps_sampler_names,
				&sampler);
	}
	if (st == TPS_OK && sampler == 1) {
		saved = push_key(c, "sampler");
		st = fail(c, TPS_ERR_UNSUPPORTED,
			  "the distributed sampler is "
			  "not supported by tpsim 0.1 (expected chunk)");
		pop(c, saved);
	}
	if (st == TPS_OK) {
		st = opt_choice(c, root, "mode", "mode", tps_mode_names, &mode);
	}
	if (st == TPS_OK && mode == 1) {
		saved = push_key(c, "mode");
		st = fail(c, TPS_ERR_UNSUPPORTED,
			  "training is not supported "
			  "by tpsim 0.1, which simulates inference only "
			  "(expected inference)");
		pop(c, saved);
	}
	if (st == TPS_OK && (v = get(root, "init"))) {
		saved = push_key(c, "init");
		st = expect_type(c, v, is_object, "an object");
		if (st == TPS_OK) {
			st = check_keys(c, v, init_keys);
		}
		if (st == TPS_OK) {
			st = parse_init_fields(c, v, "method",
					       &spec->param_init);
		}
		pop(c, saved);
	}
	if (st == TPS_OK && (v = get(root, "trace"))) {
		saved = push_key(c, "trace");
		st = expect_type(c, v, is_object, "an object");
		if (st == TPS_OK) {
			st = check_keys(c, v, trace_keys);
		}
		if (st == TPS_OK) {
			st = opt_choice(c, v, "values", "values mode",
					tps_trace_values_names, &values);
		}
		pop(c, saved);
	}
	run->values = (enum tps_trace_values)values;
	run->atol = 1e-5;
	run->rtol = 1e-5;
	if (st == TPS_OK && (v = get(root, "tolerance"))) {
		const cJSON *t;
		saved = push_key(c, "tolerance");
		st = expect_type(c, v, is_object, "an object");
		if (st == TPS_OK) {
			st = check_keys(c, v, tol_keys);
		}
		if (st == TPS_OK && (t = get(v, "atol"))) {
			size_t s2 = push_key(c, "atol");
			st = read_nonneg_number(c, t, &run->atol);
			pop(c, s2);
		}
		if (st == TPS_OK && (t = get(v, "rtol"))) {
			size_t s2 = push_key(c, "rtol");
			st = read_nonneg_number(c, t, &run->rtol);
			pop(c, s2);
		}
		pop(c, saved);
	}
	/* Training settings are validated now so that configs written for
	 * later versions fail here only on "mode". */
	if (st == TPS_OK) {
		st = opt_choice(c, root, "loss", "loss", tps_loss_names, &loss);
	}
	if (st == TPS_OK && (v = get(root, "target"))) {
		struct tps_init_spec ti = {TPS_INIT_ZEROS, 0};
		saved = push_key(c, "target");
		st = expect_type(c, v, is_object, "an object");
		if (st == TPS_OK) {
			st = check_keys(c, v, target_keys);
		}
		if (st == TPS_OK) {
			st = parse_init_fields(c, v, "init", &ti);
		}
		pop(c, saved);
	}
	if (st == TPS_OK && (v = get(root, "optimizer"))) {
		const cJSON *lr;
		saved = push_key(c, "optimizer");
		st = expect_type(c, v, is_object, "an object");
		if (st == TPS_OK) {
			st = check_keys(c, v, opt_keys);
		}
		if (st == TPS_OK) {
			st = opt_choice(c, v, "type", "optimizer", opt_types,
					&ot);
		}
		if (st == TPS_OK && (lr = get(v, "lr"))) {
			double x;
			size_t s2 = push_key(c, "lr");
			st = read_nonneg_number(c, lr, &x);
			pop(c, s2);
		}
		pop(c, saved);
	}
	if (st == TPS_OK) {
		st = opt_int(c, root, "steps", 1, 1000000, &steps);
	}
	return st;
}

static cJSON *layout_json(struct tps_placement p)
{
	char buf[32];
	if (p.kind == TPS_PLACEMENT_SHARD && p.dim < 0) {
		snprintf(buf, sizeof buf, "shard(%d)", p.dim);
		return cJSON_CreateString(buf);
	}
	return cJSON_CreateString(tps_placement_format(p, buf, sizeof buf));
}

/* The normalised config: every setting, defaults filled in. */
static cJSON *normalize(const cJSON *root, const struct tps_run_spec *run)
{
	const struct tps_model_spec *s = &run->model;
	cJSON *n = cJSON_CreateObject(), *o, *a, *p;
	const cJSON *v;

	cJSON_AddNumberToObject(n, "tpsim", 1);
	o = cJSON_AddObjectToObject(n, "mesh");
	cJSON_AddItemToObject(
		o, "shape", cJSON_CreateIntArray(s->mesh.shape, s->mesh.ndim));
	a = cJSON_AddArrayToObject(o, "dim_names");
	for (int i = 0; i < s->mesh.ndim; i++) {
		cJSON_AddItemToArray(a,
				     cJSON_CreateString(s->mesh.dim_names[i]));
	}
	cJSON_AddStringToObject(n, "tp_dim", s->mesh.dim_names[s->tp_dim]);
	if (s->dp_mask) {
		cJSON_AddStringToObject(
			n, "dp_dim",
			s->mesh.dim_names[__builtin_ctz(s->dp_mask)]);
	}
	a = cJSON_AddArrayToObject(n, "model");
	p = cJSON_CreateObject();
	for (int i = 0; i < s->n_modules; i++) {
		const struct tps_module_spec *m = &s->modules[i];
		cJSON *e = cJSON_CreateObject(), *pe;
		cJSON_AddStringToObject(e, "name", m->name);
		cJSON_AddStringToObject(e, "type",
					tps_module_type_names[m->type]);
		if (m->type == TPS_MODULE_LINEAR) {
			cJSON_AddNumberToObject(e, "in_features",
						(double)m->in_features);
			cJSON_AddNumberToObject(e, "out_features",
						(double)m->out_features);
			cJSON_AddBoolToObject(e, "bias", m->bias);
		}
		cJSON_AddItemToArray(a, e);
		if (!m->planned) {
			continue;
		}
		/* The plan, resolved per module: patterns expanded. */
		pe = cJSON_CreateObject();
		cJSON_AddStringToObject(pe, "style", tps_style_names[m->style]);
		if (m->style != TPS_STYLE_REPLICATE) {
			cJSON_AddItemToObject(pe, "input",
					      layout_json(m->input));
			cJSON_AddItemToObject(pe, "output",
					      layout_json(m->output));
		}
		if (m->style == TPS_STYLE_ROWWISE) {
			cJSON_AddStringToObject(
				pe, "bias", tps_bias_mode_names[m->bias_mode]);
		}
		cJSON_AddItemToObject(p, m->name, pe);
	}
	cJSON_AddItemToObject(n, "plan", p);
	o = cJSON_AddObjectToObject(n, "input");
	a = cJSON_AddArrayToObject(o, "shape");
	for (int i = 0; i < s->input_shape.ndim; i++) {
		cJSON_AddItemToArray(
			a, cJSON_CreateNumber((double)s->input_shape.dim[i]));
	}
	cJSON_AddStringToObject(o, "init", tps_init_method_names[s->input_init.method]);
	cJSON_AddNumberToObject(o, "seed", (double)s->input_init.seed);
	o = cJSON_AddObjectToObject(n, "init");
	cJSON_AddStringToObject(o, "method", tps_init_method_names[s->param_init.method]);
	cJSON_AddNumberToObject(o, "seed", (double)s->param_init.seed);
	if ((v = get(root, "params"))) {
		cJSON_AddItemToObject(n, "params", cJSON_Duplicate(v, true));
	}
	cJSON_AddStringToObject(n, "uneven", tps_uneven_names[s->uneven]);
	cJSON_AddStringToObject(n, "sampler", "chunk");
	cJSON_AddStringToObject(n, "mode", "inference");
	o = cJSON_AddObjectToObject(n, "trace");
	cJSON_AddStringToObject(o, "values", tps_trace_values_names[run->values]);
	o = cJSON_AddObjectToObject(n, "tolerance");
	cJSON_AddNumberToObject(o, "atol", run->atol);
	cJSON_AddNumberToObject(o, "rtol", run->rtol);
	return n;
}

enum tps_status tps_config_parse(const cJSON *root, const char *file,
				 struct tps_run_spec *spec,
				 struct tps_error *err)
{
	static const char *const keys[] = {
		"tpsim",   "mesh",  "tp_dim",	 "dp_dim", "model",
		"plan",	   "input", "init",	 "params", "uneven",
		"sampler", "mode",  "loss",	 "target", "optimizer",
		"steps",   "trace", "tolerance", NULL};
	struct tps_run_spec run = {0};
	struct cfg c = {0};
	const cJSON *version;
	int64_t v = 0;
	int dp_dim = -1;
	enum tps_status st;

	c.file = file;
	c.err = err ? err : &c.own;
	tps_json_path_init(&c.path);
	st = expect_type(&c, root, is_object, "a config object");
	if (st == TPS_OK) {
		st = require(&c, root, "tpsim", &version);
	}
	if (st == TPS_OK) {
		size_t saved = push_key(&c, "tpsim");
		st = read_int(&c, version, INT32_MIN, INT32_MAX, &v);
		if (st == TPS_OK && v != 1) {
			st = fail(&c, TPS_ERR_INPUT,
				  "unsupported config "
				  "version %lld (expected 1)",
				  (long long)v);
		}
		pop(&c, saved);
	}
	if (st == TPS_OK) {
		st = check_keys(&c, root, keys);
	}
	if (st == TPS_OK) {
		st = parse_mesh(&c, root, &run.model);
	}
	if (st == TPS_OK) {
		run.model.tp_dim = run.model.mesh.ndim - 1;
		st = read_dim_name(&c, root, "tp_dim", &run.model.mesh,
				   &run.model.tp_dim);
	}
	if (st == TPS_OK) {
		st = read_dim_name(&c, root, "dp_dim", &run.model.mesh,
				   &dp_dim);
	}
	run.model.dp_mask = dp_dim >= 0 ? 1u << dp_dim : 0u;
	if (st == TPS_OK && dp_dim == run.model.tp_dim) {
		size_t saved = push_key(&c, "dp_dim");
		st = fail(&c, TPS_ERR_INPUT,
			  "the dp dim must differ from "
			  "the tp dim \"%s\" (/tp_dim, by default the last "
			  "mesh dim)",
			  run.model.mesh.dim_names[run.model.tp_dim]);
		pop(&c, saved);
	}
	if (st == TPS_OK) {
		st = parse_model(&c, root, &run.model);
	}
	if (st == TPS_OK) {
		st = parse_input(&c, root, &run.model);
	}
	if (st == TPS_OK) {
		st = check_input_width(&c, &run.model);
	}
	if (st == TPS_OK) {
		st = parse_plan(&c, root, &run.model);
	}
	if (st == TPS_OK) {
		st = parse_params(&c, root, &run.model);
	}
	if (st == TPS_OK) {
		st = parse_misc(&c, root, &run);
	}
	if (st == TPS_OK) {
		run.normalized = normalize(root, &run);
		if (!run.normalized) {
			st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		}
	}
	if (st != TPS_OK) {
		tps_run_spec_free(&run);
		return st;
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
