/*
 * The public API's traces (include/tpsim.h): a trace read by the one
 * reader (tps_trace_read's checks, trace_read.c), its events and tensors
 * as views into the validated tree, and the fixture check.
 *
 * struct tpsim_event and struct tpsim_tensor are never defined: a pointer
 * to one is the trace's cJSON node of the event, or of the tensor (an
 * object with "shape" and, in a full trace, "values"), which the reader
 * has checked, so the accessors read them without checking again.
 */
#include "api_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "fixture_check.h"
#include "jsonio.h"
#include "trace.h"

static const cJSON *node_of_event(const struct tpsim_event *e)
{
	return (const cJSON *)(const void *)e;
}

static const cJSON *node_of_tensor(const struct tpsim_tensor *t)
{
	return (const cJSON *)(const void *)t;
}

static const cJSON *member(const cJSON *obj, const char *key)
{
	return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/*
 * The dtype a tensor's values are stored in (docs/trace.md, "Dtypes"): a
 * bfloat16's shortest decimal reads back to that bfloat16, not always
 * as a float32 to the same value, so tpsim_tensor_values rounds each
 * number to it. A tensor view has no way back to its event, so the
 * trace marks each tensor object, once, in the object's valueint, which
 * cJSON leaves unused for objects (nothing else reads it): the event's
 * "dtype" for its ranks; the config's roles for the result's tensors
 * (outputs: activations; gradients: grads; parameters after: params).
 * Unmarked (0) is float32.
 */
static enum tps_dtype dtype_named(const cJSON *name)
{
	for (int i = 0; cJSON_IsString(name) && tps_dtype_names[i]; i++) {
		if (strcmp(name->valuestring, tps_dtype_names[i]) == 0) {
			return (enum tps_dtype)i;
		}
	}
	return TPS_DTYPE_F32;
}

static void mark_tensor(cJSON *tensor, enum tps_dtype d)
{
	if (cJSON_IsObject(tensor)) {
		tensor->valueint = (int)d;
	}
}

static void mark_dtypes(cJSON *tree)
{
	static const struct {
		const char *section, *role;
		bool named;
	} roles[] = {
		{"output", "activations", false},
		{"reference_output", "activations", false},
		{"grads", "grads", true},
		{"reference_grads", "grads", true},
		{"params_after", "params", true},
		{"reference_params_after", "params", true},
	};
	const cJSON *roles_of = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(tree, "config"), "dtype");
	cJSON *result = cJSON_GetObjectItemCaseSensitive(tree, "result");
	cJSON *ev, *t;

	cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(tree, "events"))
	{
		enum tps_dtype d = dtype_named(
			cJSON_GetObjectItemCaseSensitive(ev, "dtype"));
		cJSON_ArrayForEach(
			t, cJSON_GetObjectItemCaseSensitive(ev, "ranks"))
		{
			mark_tensor(t, d);
		}
	}
	for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
		cJSON *sec = cJSON_GetObjectItemCaseSensitive(result,
							      roles[i].section);
		enum tps_dtype d = dtype_named(cJSON_GetObjectItemCaseSensitive(
			roles_of, roles[i].role));
		if (!roles[i].named) {
			mark_tensor(sec, d);
			continue;
		}
		cJSON_ArrayForEach(t, sec)
		{
			/* The input's gradient is an activation's. */
			mark_tensor(
				t,
				strcmp(t->string, "input") == 0
					? dtype_named(
						  cJSON_GetObjectItemCaseSensitive(
							  roles_of,
							  "activations"))
					: d);
		}
	}
}

/* Takes text and tree (owned from here on) into a new trace. */
static enum tpsim_status make_trace(char *text, size_t len, cJSON *tree,
				    const char *name,
				    struct tpsim_trace **trace,
				    struct tpsim_error **error)
{
	struct tps_error err = {0};
	struct tpsim_trace *t = calloc(1, sizeof *t);

	if (!t || !(t->name = tps_api_strdup(name))) {
		free(t);
		free(text);
		cJSON_Delete(tree);
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	t->text = text;
	t->len = len;
	t->tree = tree;
	mark_dtypes(tree);
	*trace = t;
	return TPSIM_OK;
}

enum tpsim_status tpsim_trace_load(const char *path, struct tpsim_trace **trace,
				   struct tpsim_error **error)
{
	struct tps_error err = {0};
	cJSON *tree = NULL;
	char *text = NULL;
	size_t len = 0;

	if (!path || !trace) {
		return tps_api_misuse(error, "tpsim_trace_load",
				      !path ? "path" : "trace");
	}
	if (tps_trace_read(path, &tree, &text, &len, &err) != TPS_OK) {
		return tps_api_fail(error, &err);
	}
	return make_trace(text, len, tree, path, trace, error);
}

enum tpsim_status tpsim_trace_parse(const char *text, size_t len,
				    const char *name,
				    struct tpsim_trace **trace,
				    struct tpsim_error **error)
{
	struct tps_error err = {0};
	cJSON *tree = NULL;
	char *copy;

	if (!text || !name || !trace) {
		return tps_api_misuse(error, "tpsim_trace_parse",
				      !text   ? "text"
				      : !name ? "name"
					      : "trace");
	}
	if (len > TPS_JSON_MAX_TRACE_BYTES) {
		char esc[256];
		tps_error_set(
			&err, TPS_ERR_LIMIT,
			"%s: %zu bytes, over the limit of 1 GiB for a "
			"trace",
			tps_json_escape_for_message(name, esc, sizeof esc),
			len);
		return tps_api_fail(error, &err);
	}
	copy = malloc(len ? len : 1);
	if (!copy) {
		tps_error_set(&err, TPS_ERR_NOMEM, "out of memory");
		return tps_api_fail(error, &err);
	}
	memcpy(copy, text, len);
	if (tps_json_parse_strict(name, copy, len, &tree, &err) != TPS_OK ||
	    tps_trace_validate(tree, name, &err) != TPS_OK) {
		cJSON_Delete(tree);
		free(copy);
		return tps_api_fail(error, &err);
	}
	return make_trace(copy, len, tree, name, trace, error);
}

void tpsim_trace_free(struct tpsim_trace *trace)
{
	if (!trace) {
		return;
	}
	cJSON_Delete(trace->tree);
	free(trace->text);
	free(trace->name);
	free(trace);
}

const char *tpsim_trace_text(const struct tpsim_trace *trace, size_t *len)
{
	if (len) {
		*len = trace ? trace->len : 0;
	}
	return trace ? trace->text : NULL;
}

/* ---- events ----------------------------------------------------------- */

size_t tpsim_trace_event_count(const struct tpsim_trace *trace)
{
	return trace ? (size_t)cJSON_GetArraySize(member(trace->tree, "events"))
		     : 0;
}

const struct tpsim_event *tpsim_trace_event(const struct tpsim_trace *trace,
					    size_t i)
{
	const cJSON *ev;
	if (i >= tpsim_trace_event_count(trace) || i > (size_t)INT32_MAX) {
		return NULL;
	}
	ev = cJSON_GetArrayItem(member(trace->tree, "events"), (int)i);
	return (const struct tpsim_event *)(const void *)ev;
}

/* A whole number member (the reader checked it is one), or dflt. */
static int64_t whole(const cJSON *obj, const char *key, int64_t dflt)
{
	const cJSON *v = member(obj, key);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}

static const char *string(const cJSON *obj, const char *key)
{
	const cJSON *v = member(obj, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int64_t tpsim_event_seq(const struct tpsim_event *event)
{
	return whole(node_of_event(event), "seq", -1);
}

int64_t tpsim_event_step(const struct tpsim_event *event)
{
	return whole(node_of_event(event), "step", -1);
}

const char *tpsim_event_phase(const struct tpsim_event *event)
{
	return string(node_of_event(event), "phase");
}

const char *tpsim_event_module(const struct tpsim_event *event)
{
	return string(node_of_event(event), "module");
}

const char *tpsim_event_kind(const struct tpsim_event *event)
{
	return string(node_of_event(event), "kind");
}

const char *tpsim_event_op(const struct tpsim_event *event)
{
	return string(node_of_event(event), "op");
}

const char *tpsim_event_tensor(const struct tpsim_event *event)
{
	return string(node_of_event(event), "tensor");
}

const char *tpsim_event_mesh_dim(const struct tpsim_event *event)
{
	return string(node_of_event(event), "mesh_dim");
}

size_t tpsim_event_group_count(const struct tpsim_event *event)
{
	return (size_t)cJSON_GetArraySize(
		member(node_of_event(event), "groups"));
}

static const cJSON *group(const struct tpsim_event *event, size_t g)
{
	if (g >= tpsim_event_group_count(event)) {
		return NULL;
	}
	return cJSON_GetArrayItem(member(node_of_event(event), "groups"),
				  (int)g);
}

size_t tpsim_event_group_size(const struct tpsim_event *event, size_t g)
{
	return (size_t)cJSON_GetArraySize(group(event, g));
}

int tpsim_event_group_rank(const struct tpsim_event *event, size_t g, size_t k)
{
	const cJSON *v;
	if (k >= tpsim_event_group_size(event, g)) {
		return -1;
	}
	v = cJSON_GetArrayItem(group(event, g), (int)k);
	return cJSON_IsNumber(v) ? (int)v->valuedouble : -1;
}

size_t tpsim_event_placement_count(const struct tpsim_event *event)
{
	return (size_t)cJSON_GetArraySize(
		member(node_of_event(event), "placements"));
}

const char *tpsim_event_placement(const struct tpsim_event *event, size_t i)
{
	const cJSON *v;
	if (i >= tpsim_event_placement_count(event)) {
		return NULL;
	}
	v = cJSON_GetArrayItem(member(node_of_event(event), "placements"),
			       (int)i);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A "shape" array's dims into shape[]; returns how many. */
static size_t shape_of(const cJSON *dims, int64_t shape[TPSIM_MAX_DIMS])
{
	size_t n = 0;
	const cJSON *d;
	cJSON_ArrayForEach(d, dims)
	{
		if (n == TPSIM_MAX_DIMS) {
			break;
		}
		if (shape) {
			shape[n] =
				cJSON_IsNumber(d) ? (int64_t)d->valuedouble : 0;
		}
		n++;
	}
	return n;
}

size_t tpsim_event_global_shape(const struct tpsim_event *event,
				int64_t shape[TPSIM_MAX_DIMS])
{
	return shape_of(member(node_of_event(event), "global_shape"), shape);
}

int64_t tpsim_event_bytes_per_rank(const struct tpsim_event *event)
{
	return whole(node_of_event(event), "bytes_per_rank", 0);
}

size_t tpsim_event_rank_count(const struct tpsim_event *event)
{
	return (size_t)cJSON_GetArraySize(
		member(node_of_event(event), "ranks"));
}

const struct tpsim_tensor *tpsim_event_rank(const struct tpsim_event *event,
					    size_t r)
{
	const cJSON *t;
	if (r >= tpsim_event_rank_count(event)) {
		return NULL;
	}
	t = cJSON_GetArrayItem(member(node_of_event(event), "ranks"), (int)r);
	return (const struct tpsim_tensor *)(const void *)t;
}

/* ---- tensors ---------------------------------------------------------- */

size_t tpsim_tensor_shape(const struct tpsim_tensor *tensor,
			  int64_t shape[TPSIM_MAX_DIMS])
{
	return shape_of(member(node_of_tensor(tensor), "shape"), shape);
}

size_t tpsim_tensor_numel(const struct tpsim_tensor *tensor)
{
	int64_t shape[TPSIM_MAX_DIMS];
	size_t ndim = tpsim_tensor_shape(tensor, shape), n = 1;
	if (!tensor) {
		return 0;
	}
	for (size_t d = 0; d < ndim; d++) {
		/* The reader bounds a tensor at 2^48 elements. */
		n *= (size_t)shape[d];
	}
	return n;
}

int tpsim_tensor_has_values(const struct tpsim_tensor *tensor)
{
	/* A scalar's (a loss's, shape []) is a number. */
	const cJSON *v = member(node_of_tensor(tensor), "values");
	return cJSON_IsArray(v) || cJSON_IsNumber(v);
}

/* The numbers of nested arrays, in order, into out (the reader checked
 * that they fill the shape), each read as a value of dtype d. */
static size_t flatten(const cJSON *v, enum tps_dtype d, float *out, size_t at)
{
	const cJSON *c;
	if (cJSON_IsNumber(v)) {
		/* The trace writes each value as the shortest decimal that
		 * reads back to it in its dtype; the parser reads it to the
		 * nearest double, which rounds to the value (a test checks
		 * every event of a float32, a bfloat16 and a float16 trace). */
		out[at] = tps_dtype_round_double(v->valuedouble, d);
		return at + 1;
	}
	cJSON_ArrayForEach(c, v)
	{
		at = flatten(c, d, out, at);
	}
	return at;
}

enum tpsim_status tpsim_tensor_values(const struct tpsim_tensor *tensor,
				      float *values, size_t capacity, size_t *n,
				      struct tpsim_error **error)
{
	struct tps_error err = {0};
	size_t numel;

	if (!tensor || !n || (!values && capacity)) {
		return tps_api_misuse(error, "tpsim_tensor_values",
				      !tensor ? "tensor"
				      : !n    ? "n"
					      : "values");
	}
	numel = tpsim_tensor_numel(tensor);
	*n = numel;
	if (!tpsim_tensor_has_values(tensor)) {
		tps_error_set(&err, TPS_ERR_INPUT,
			      "the tensor has no values (a summary, none or "
			      "symbolic trace)");
		return tps_api_fail(error, &err);
	}
	if (capacity < numel) {
		tps_error_set(&err, TPS_ERR_USAGE,
			      "room for %zu values, the tensor has %zu",
			      capacity, numel);
		return tps_api_fail(error, &err);
	}
	flatten(member(node_of_tensor(tensor), "values"),
		(enum tps_dtype)node_of_tensor(tensor)->valueint, values, 0);
	return TPSIM_OK;
}

/* ---- the result's tensors --------------------------------------------- */

/* The result's section: an output (a tensor) or an object of them. */
static const cJSON *section_of(const struct tpsim_trace *trace,
			       const char *section, bool *named)
{
	static const char *const outputs[] = {"output", "reference_output"};
	static const char *const named_sections[] = {"grads", "reference_grads",
						     "params_after",
						     "reference_params_after"};
	if (!trace || !section) {
		return NULL;
	}
	for (size_t i = 0; i < 2; i++) {
		if (strcmp(section, outputs[i]) == 0) {
			*named = false;
			return member(member(trace->tree, "result"), section);
		}
	}
	for (size_t i = 0; i < 4; i++) {
		if (strcmp(section, named_sections[i]) == 0) {
			*named = true;
			return member(member(trace->tree, "result"), section);
		}
	}
	return NULL;
}

const struct tpsim_tensor *
tpsim_trace_result_tensor(const struct tpsim_trace *trace, const char *section,
			  const char *name)
{
	bool named = false;
	const cJSON *s = section_of(trace, section, &named);
	const cJSON *t = NULL;

	if (s && !named && !name) {
		t = s;
	} else if (s && named && name) {
		t = member(s, name);
	}
	return cJSON_IsObject(t) ? (const struct tpsim_tensor *)(const void *)t
				 : NULL;
}

size_t tpsim_trace_result_count(const struct tpsim_trace *trace,
				const char *section)
{
	bool named = false;
	const cJSON *s = section_of(trace, section, &named);
	return s && named ? (size_t)cJSON_GetArraySize(s) : 0;
}

const char *tpsim_trace_result_name(const struct tpsim_trace *trace,
				    const char *section, size_t i)
{
	bool named = false;
	const cJSON *s = section_of(trace, section, &named);
	const cJSON *t;
	if (!s || !named || i >= (size_t)cJSON_GetArraySize(s)) {
		return NULL;
	}
	t = cJSON_GetArrayItem(s, (int)i);
	return t ? t->string : NULL;
}

/* ---- check ------------------------------------------------------------ */

struct reporter {
	tpsim_mismatch_fn report;
	void *ctx;
};

static void report_mismatch(void *ctx, const struct tps_check_mismatch *m)
{
	struct reporter *r = ctx;
	struct tpsim_mismatch pm = {m->pointer,	     m->expected, m->got,
				    (int64_t)m->seq, m->what,	  m->line};
	r->report(r->ctx, &pm);
}

/* Checks trace against fixture (owned from here on). */
static enum tpsim_status check(const struct tpsim_trace *trace, cJSON *fixture,
			       const char *fixture_name,
			       tpsim_mismatch_fn report, void *ctx,
			       size_t *mismatches, struct tpsim_error **error)
{
	struct tps_error err = {0};
	struct reporter r = {report, ctx};
	enum tps_status st = tps_check_fixture(
		trace->tree, trace->name, fixture, fixture_name,
		report ? report_mismatch : NULL, &r, mismatches, &err);
	cJSON_Delete(fixture);
	return st == TPS_OK ? TPSIM_OK : tps_api_fail(error, &err);
}

enum tpsim_status tpsim_check(const struct tpsim_trace *trace,
			      const char *fixture_path,
			      tpsim_mismatch_fn report, void *ctx,
			      size_t *mismatches, struct tpsim_error **error)
{
	struct tps_error err = {0};
	cJSON *fixture = NULL;

	if (!trace || !fixture_path || !mismatches) {
		return tps_api_misuse(error, "tpsim_check",
				      !trace	      ? "trace"
				      : !fixture_path ? "fixture_path"
						      : "mismatches");
	}
	if (tps_json_load(fixture_path, TPS_JSON_MAX_INPUT_BYTES, &fixture,
			  &err) != TPS_OK) {
		return tps_api_fail(error, &err);
	}
	return check(trace, fixture, fixture_path, report, ctx, mismatches,
		     error);
}

enum tpsim_status tpsim_check_parse(const struct tpsim_trace *trace,
				    const char *text, size_t len,
				    const char *name, tpsim_mismatch_fn report,
				    void *ctx, size_t *mismatches,
				    struct tpsim_error **error)
{
	struct tps_error err = {0};
	cJSON *fixture = NULL;

	if (!trace || !text || !name || !mismatches) {
		return tps_api_misuse(error, "tpsim_check_parse",
				      !trace  ? "trace"
				      : !text ? "text"
				      : !name ? "name"
					      : "mismatches");
	}
	if (len > TPS_JSON_MAX_INPUT_BYTES) {
		char esc[256];
		tps_error_set(
			&err, TPS_ERR_LIMIT,
			"%s: %zu bytes, over the limit of 16 MiB for a "
			"fixture",
			tps_json_escape_for_message(name, esc, sizeof esc),
			len);
		return tps_api_fail(error, &err);
	}
	if (tps_json_parse_strict(name, text, len, &fixture, &err) != TPS_OK) {
		return tps_api_fail(error, &err);
	}
	return check(trace, fixture, name, report, ctx, mismatches, error);
}
