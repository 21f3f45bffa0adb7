/*
 * The trace reader every verb that reads a trace shares (explain, picture,
 * timeline, view, check's trace): the file, strict JSON, the header, and
 * the whole trace checked against docs/trace.md once, so that no reader
 * prints or draws what a trace cannot hold. The rules are in trace.h.
 *
 * One pass over the tree, in document order; the first error is reported
 * at its JSON Pointer. Nothing is allocated but the reader itself: a
 * 53 MB trace costs a walk over its numbers, next to parsing them.
 */
#include "trace.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_check.h"
#include "dtensor.h"
#include "nn_event.h"
#include "jsonio.h"
#include "numfmt.h"

/* The largest whole number the readers take as a count (bytes, seqs). */
#define READ_WHOLE_MAX 9e15

struct reader {
	const char *name; /* the file, for messages */
	struct tps_json_path p;
	struct tps_error *err;
	struct tps_mesh mesh;
	/* Each set of mesh dims' name, as events' mesh_dim names it. */
	char mask_name[1u << TPS_MAX_MESH_DIMS]
		      [TPS_MAX_MESH_DIMS * TPS_MESH_NAME_MAX];
	/* Which group of the event being read holds each rank: the event's
	 * index + 1 when seen in this event (no clearing between events). */
	int seen_in[TPS_MAX_WORLD];
};

static enum tps_status bad(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "<file>: <pointer>: <what>", at the reader's path. */
static enum tps_status bad(struct reader *r, const char *fmt, ...)
{
	char body[TPS_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	return tps_error_set_at(r->err, TPS_ERR_INPUT, r->name, r->p.text, "%s",
				body);
}

/* A value as a message quotes it: a number as written, a string quoted
 * and escaped, else its kind. */
static const char *describe(const cJSON *v, char *buf, size_t size)
{
	char esc[96];
	if (!v) {
		snprintf(buf, size, "nothing");
	} else if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) {
		/* 1e999 reads as an infinity: say so, not assert. */
		snprintf(buf, size, "a number out of range");
	} else if (cJSON_IsNumber(v)) {
		char num[TPS_NUMFMT_MAX];
		tps_format_double(v->valuedouble, num);
		snprintf(buf, size, "%s", num);
	} else if (cJSON_IsString(v)) {
		snprintf(buf, size, "\"%s\"",
			 tps_json_escape_for_message(v->valuestring, esc,
						     sizeof esc));
	} else if (cJSON_IsBool(v)) {
		snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
	} else if (cJSON_IsArray(v)) {
		snprintf(buf, size, "an array of %d", cJSON_GetArraySize(v));
	} else {
		snprintf(buf, size, "an object");
	}
	return buf;
}

static const cJSON *member(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A whole number in [lo, hi]. */
static bool whole_in(const cJSON *v, double lo, double hi, int64_t *out)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
	    v->valuedouble > hi) {
		return false;
	}
	if (out) {
		*out = (int64_t)v->valuedouble;
	}
	return true;
}

/* Pushes key onto the path; returns the length to pop back to. */
static size_t push(struct reader *r, const char *key)
{
	size_t at = r->p.len;
	tps_json_path_push_key(&r->p, key);
	return at;
}

/* o[key] must be present and pass is(); what names it in the message. */
static enum tps_status need(struct reader *r, const cJSON *o, const char *key,
			    cJSON_bool (*is)(const cJSON *), const char *what)
{
	const cJSON *v = member(o, key);
	size_t at;
	char got[128];
	enum tps_status st = TPS_OK;
	if (v && is(v)) {
		return TPS_OK;
	}
	at = push(r, key);
	st = v ? bad(r, "expected %s, got %s", what,
		     describe(v, got, sizeof got))
	       : bad(r, "missing, expected %s", what);
	tps_json_path_pop(&r->p, at);
	return st;
}

/* An optional o[key] must pass is(). */
static enum tps_status may(struct reader *r, const cJSON *o, const char *key,
			   cJSON_bool (*is)(const cJSON *), const char *what)
{
	return member(o, key) ? need(r, o, key, is, what) : TPS_OK;
}

/* An optional o[key]: a whole number from 0. */
static enum tps_status may_count(struct reader *r, const cJSON *o,
				 const char *key)
{
	const cJSON *v = member(o, key);
	char got[128];
	enum tps_status st = TPS_OK;
	if (v && !whole_in(v, 0, READ_WHOLE_MAX, NULL)) {
		size_t at = push(r, key);
		st = bad(r, "expected a whole number from 0, got %s",
			 describe(v, got, sizeof got));
		tps_json_path_pop(&r->p, at);
	}
	return st;
}

/* ---- the mesh ---------------------------------------------------------- */

static enum tps_status read_mesh_groups(struct reader *r, const cJSON *groups)
{
	const struct tps_mesh *m = &r->mesh;
	int ranks[TPS_MAX_WORLD];
	size_t at = push(r, "groups");
	char got[128];
	if (!cJSON_IsObject(groups)) {
		return bad(r,
			   "expected an object of each mesh dim's groups, "
			   "got %s",
			   describe(groups, got, sizeof got));
	}
	for (int d = 0; d < m->ndim; d++) {
		unsigned mask = 1u << d;
		const cJSON *dim = member(groups, m->dim_names[d]);
		int n = tps_mesh_group_count(m, mask);
		int size = tps_mesh_group_size(m, mask);
		size_t dim_at = push(r, m->dim_names[d]), dim_len = r->p.len;
		if (!cJSON_IsArray(dim) || cJSON_GetArraySize(dim) != n) {
			return bad(r,
				   "expected the %d groups along mesh dim "
				   "\"%s\", got %s",
				   n, m->dim_names[d],
				   describe(dim, got, sizeof got));
		}
		for (int g = 0; g < n; g++) {
			const cJSON *group = cJSON_GetArrayItem(dim, g);
			tps_json_path_push_index(&r->p, (size_t)g);
			if (!cJSON_IsArray(group) ||
			    cJSON_GetArraySize(group) != size) {
				return bad(r,
					   "expected a group of %d ranks, got "
					   "%s",
					   size,
					   describe(group, got, sizeof got));
			}
			tps_mesh_group_members(m, mask, g, ranks);
			for (int i = 0; i < size; i++) {
				const cJSON *v = cJSON_GetArrayItem(group, i);
				int64_t rank;
				if (!whole_in(v, 0, TPS_MAX_WORLD, &rank) ||
				    rank != ranks[i]) {
					tps_json_path_push_index(&r->p,
								 (size_t)i);
					return bad(
						r,
						"expected %d (the ranks of "
						"each group along a mesh "
						"dim, as tpsim mesh lists "
						"them), got %s",
						ranks[i],
						describe(v, got, sizeof got));
				}
			}
			tps_json_path_pop(&r->p, dim_len);
		}
		tps_json_path_pop(&r->p, dim_at);
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

static enum tps_status read_mesh(struct reader *r, const cJSON *trace)
{
	const cJSON *m = member(trace, "mesh");
	const cJSON *shape = member(m, "shape");
	const cJSON *names = member(m, "dim_names");
	int sizes[TPS_MAX_MESH_DIMS];
	const char *name_of[TPS_MAX_MESH_DIMS];
	int n = cJSON_GetArraySize(shape);
	int64_t world;
	size_t at = push(r, "mesh"), key_at;
	char got[128];
	enum tps_status st;

	key_at = push(r, "shape");
	if (!cJSON_IsArray(shape) || n < 1 || n > TPS_MAX_MESH_DIMS) {
		return bad(r, "expected 1 to 4 mesh sizes, got %s",
			   describe(shape, got, sizeof got));
	}
	for (int i = 0; i < n; i++) {
		int64_t v;
		if (!whole_in(cJSON_GetArrayItem(shape, i), 1, TPS_MAX_WORLD,
			      &v)) {
			tps_json_path_push_index(&r->p, (size_t)i);
			return bad(r,
				   "expected a mesh size from 1 to 4096, "
				   "got %s",
				   describe(cJSON_GetArrayItem(shape, i), got,
					    sizeof got));
		}
		sizes[i] = (int)v;
	}
	tps_json_path_pop(&r->p, key_at);
	push(r, "dim_names");
	if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) != n) {
		return bad(r, "expected one name per mesh dim (%d), got %s", n,
			   describe(names, got, sizeof got));
	}
	for (int i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetArrayItem(names, i);
		if (!cJSON_IsString(v)) {
			tps_json_path_push_index(&r->p, (size_t)i);
			return bad(r, "expected a name, got %s",
				   describe(v, got, sizeof got));
		}
		name_of[i] = v->valuestring;
	}
	tps_json_path_pop(&r->p, key_at);
	st = tps_mesh_init(&r->mesh, n, sizes, name_of, r->err);
	if (st != TPS_OK) {
		/* "<file>: /mesh: <what tps_mesh_init says>" */
		char msg[TPS_ERROR_MESSAGE_MAX];
		snprintf(msg, sizeof msg, "%s", r->err->message);
		return bad(r, "%s", msg);
	}
	push(r, "world_size");
	world = r->mesh.world_size;
	if (!whole_in(member(m, "world_size"), world, world, NULL)) {
		return bad(r,
			   "expected %lld, the product of /mesh/shape, got "
			   "%s",
			   (long long)world,
			   describe(member(m, "world_size"), got, sizeof got));
	}
	tps_json_path_pop(&r->p, key_at);
	st = read_mesh_groups(r, member(m, "groups"));
	if (st != TPS_OK) {
		return st;
	}
	for (unsigned mask = 1; mask < (1u << n); mask++) {
		tps_mesh_mask_name(&r->mesh, mask, r->mask_name[mask],
				   sizeof r->mask_name[mask]);
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

/* ---- tensors ----------------------------------------------------------- */

/* o[key] as a shape: 0 to 4 whole sizes from 0, at most 2^48 elements
 * (a symbolic trace's meta tensors; a tensor with values has at most
 * 2^31, which its values show). */
static enum tps_status read_shape(struct reader *r, const cJSON *o,
				  const char *key, struct tps_shape *shape)
{
	const cJSON *dims = member(o, key);
	int n = cJSON_GetArraySize(dims);
	int64_t numel = 1;
	size_t at = push(r, key);
	char got[128];

	if (!cJSON_IsArray(dims) || n > TPS_MAX_DIMS) {
		return bad(r, "expected 0 to 4 sizes, got %s",
			   cJSON_IsArray(dims)
				   ? (snprintf(got, sizeof got, "%d", n), got)
				   : describe(dims, got, sizeof got));
	}
	shape->ndim = n;
	for (int d = 0; d < TPS_MAX_DIMS; d++) {
		shape->dim[d] = 0;
	}
	for (int d = 0; d < n; d++) {
		const cJSON *v = cJSON_GetArrayItem(dims, d);
		if (!whole_in(v, 0, (double)TPS_MAX_META_ELEMENTS,
			      &shape->dim[d])) {
			tps_json_path_push_index(&r->p, (size_t)d);
			return bad(r, "expected a size from 0 to 2^48, got %s",
				   describe(v, got, sizeof got));
		}
		if (__builtin_mul_overflow(numel, shape->dim[d], &numel) ||
		    numel > TPS_MAX_META_ELEMENTS) {
			return bad(r, "expected at most 2^48 elements");
		}
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

/* The noun of the arrays at depth d of a tensor of ndim dims. */
static const char *level_noun(int d, int ndim)
{
	return d == ndim - 1 ? "values" : d == ndim - 2 ? "rows" : "arrays";
}

static enum tps_status read_nested(struct reader *r, const cJSON *v,
				   const struct tps_shape *s, int d);

/* A packed array of numbers (jsonio.h) at depth d of shape s, its size
 * checked: the first element that read_nested would refuse, as a node of
 * its own, is refused with its message (a number where an array belongs
 * at the first element, else the first non-finite one). */
static enum tps_status read_packed(struct reader *r, const cJSON *v,
				   const struct tps_shape *s, int d)
{
	int64_t first = d + 1 == s->ndim ? -1 : 0;
	double value = 0.0;
	size_t at = r->p.len;
	enum tps_status st;
	cJSON item;

	if (first < 0 && tps_json_is_counted(v)) {
		first = tps_json_counted_first_bad(v, &value);
	} else if (first < 0) {
		const double *vals = tps_json_packed_values(v);
		for (int i = 0; first < 0 && i < tps_json_array_size(v); i++) {
			if (!isfinite(vals[i])) {
				first = i;
				value = vals[i];
			}
		}
	} else {
		value = tps_json_is_counted(v) ? tps_json_counted_first(v)
					       : tps_json_packed_values(v)[0];
	}
	if (first < 0) {
		return TPS_OK;
	}
	memset(&item, 0, sizeof item);
	item.type = cJSON_Number;
	item.valuedouble = value;
	tps_json_path_push_index(&r->p, (size_t)first);
	st = read_nested(r, &item, s, d + 1);
	tps_json_path_pop(&r->p, at);
	return st;
}

/* v, at depth d of a tensor of shape s (numel > 0): nested arrays in the
 * shape, finite numbers at the bottom. */
static enum tps_status read_nested(struct reader *r, const cJSON *v,
				   const struct tps_shape *s, int d)
{
	char got[128], shape[64];
	const cJSON *e;
	size_t at = r->p.len, i = 0;
	if (d == s->ndim) {
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
			return bad(r, "expected a number, got %s",
				   describe(v, got, sizeof got));
		}
		return TPS_OK;
	}
	if (!cJSON_IsArray(v) || tps_json_array_size(v) != s->dim[d]) {
		if (cJSON_IsArray(v)) {
			snprintf(got, sizeof got, "%d", tps_json_array_size(v));
		} else {
			describe(v, got, sizeof got);
		}
		return bad(r, "expected %lld %s (shape %s), got %s",
			   (long long)s->dim[d], level_noun(d, s->ndim),
			   tps_shape_format(s, shape, sizeof shape), got);
	}
	if (tps_json_is_packed(v)) {
		return read_packed(r, v, s, d);
	}
	cJSON_ArrayForEach(e, v)
	{
		enum tps_status st;
		if (d + 1 == s->ndim) {
			/* The innermost level inline: most of the nodes. */
			if (cJSON_IsNumber(e) && isfinite(e->valuedouble)) {
				i++;
				continue;
			}
		}
		tps_json_path_push_index(&r->p, i);
		st = read_nested(r, e, s, d + 1);
		if (st != TPS_OK) {
			return st;
		}
		tps_json_path_pop(&r->p, at);
		i++;
	}
	return TPS_OK;
}

/* Whether s is 16 lowercase hex digits (a summary's XXH3-64). */
static bool is_hash(const cJSON *s)
{
	if (!cJSON_IsString(s) || strlen(s->valuestring) != 16) {
		return false;
	}
	return strspn(s->valuestring, "0123456789abcdef") == 16;
}

static cJSON_bool is_finite_number(const cJSON *v)
{
	return cJSON_IsNumber(v) && isfinite(v->valuedouble);
}

/* A tensor's values, whichever values mode wrote them: "values" in its
 * shape (full), "min", "max", "mean" and "hash" (summary), or none. */
static enum tps_status read_values(struct reader *r, const cJSON *o,
				   const struct tps_shape *s)
{
	const cJSON *values = member(o, "values");
	static const char *const stats[] = {"min", "max", "mean"};
	char got[128], shape[64];
	size_t at;
	enum tps_status st = TPS_OK;

	if (values) {
		int64_t numel = 1;
		for (int d = 0; d < s->ndim; d++) {
			numel *= s->dim[d];
		}
		at = push(r, "values");
		if (numel == 0 && (!cJSON_IsArray(values) || values->child)) {
			st = bad(r,
				 "expected [] (the tensor of shape %s is "
				 "empty), got %s",
				 tps_shape_format(s, shape, sizeof shape),
				 describe(values, got, sizeof got));
		} else if (numel > 0) {
			st = read_nested(r, values, s, 0);
		}
		if (st == TPS_OK) {
			tps_json_path_pop(&r->p, at);
		}
		return st;
	}
	for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++) {
		st = may(r, o, stats[i], is_finite_number, "a number");
		if (st != TPS_OK) {
			return st;
		}
	}
	if (member(o, "hash") && !is_hash(member(o, "hash"))) {
		at = push(r, "hash");
		return bad(r, "expected 16 lowercase hex digits, got %s",
			   describe(member(o, "hash"), got, sizeof got));
	}
	return TPS_OK;
}

/* o's "placements": one per mesh dim, each valid for shape. */
static enum tps_status read_placements(struct reader *r, const cJSON *o,
				       const struct tps_shape *shape,
				       struct tps_placement *pl)
{
	const cJSON *ps = member(o, "placements");
	struct tps_error why = {0};
	size_t at = push(r, "placements");
	char got[128];

	if (!cJSON_IsArray(ps) || cJSON_GetArraySize(ps) != r->mesh.ndim) {
		if (cJSON_IsArray(ps)) {
			snprintf(got, sizeof got, "%d", cJSON_GetArraySize(ps));
		} else {
			describe(ps, got, sizeof got);
		}
		return bad(r,
			   "expected one placement per mesh dim (%d), got %s",
			   r->mesh.ndim, got);
	}
	for (int i = 0; i < r->mesh.ndim; i++) {
		const cJSON *s = cJSON_GetArrayItem(ps, i);
		if (!cJSON_IsString(s) ||
		    !tps_placement_parse(s->valuestring, shape->ndim, &pl[i])) {
			tps_json_path_push_index(&r->p, (size_t)i);
			return bad(r,
				   "expected " TPS_PLACEMENT_FORMS ", got %s",
				   describe(s, got, sizeof got));
		}
	}
	/* Blocks that do not divide what they chunk have no regions. */
	if (tps_dtensor_check_placements(&r->mesh, shape, pl, &why) != TPS_OK) {
		return bad(r, "%s", why.message);
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

/* A global tensor: "shape", its values and, for a parameter,
 * "placements". */
static enum tps_status read_tensor(struct reader *r, const cJSON *o,
				   bool placed)
{
	struct tps_shape shape;
	struct tps_placement pl[TPS_MAX_MESH_DIMS];
	char got[128];
	enum tps_status st;
	if (!cJSON_IsObject(o)) {
		return bad(r, "expected a tensor object, got %s",
			   describe(o, got, sizeof got));
	}
	st = read_shape(r, o, "shape", &shape);
	if (st == TPS_OK && placed) {
		st = read_placements(r, o, &shape, pl);
	}
	if (st == TPS_OK) {
		st = read_values(r, o, &shape);
	}
	return st;
}

/* o[key] (optional unless required): an object of named tensors. */
static enum tps_status read_tensors(struct reader *r, const cJSON *o,
				    const char *key, bool required, bool placed)
{
	const cJSON *all = member(o, key), *t;
	size_t at;
	enum tps_status st;
	if (!all && !required) {
		return TPS_OK;
	}
	st = need(r, o, key, cJSON_IsObject, "an object of tensors");
	if (st != TPS_OK) {
		return st;
	}
	at = push(r, key);
	cJSON_ArrayForEach(t, all)
	{
		size_t t_at = push(r, t->string);
		st = read_tensor(r, t, placed);
		if (st != TPS_OK) {
			return st;
		}
		tps_json_path_pop(&r->p, t_at);
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

/* ---- events ------------------------------------------------------------ */

/* An event's "groups": arrays of ranks of the mesh, each rank in at most
 * one group. */
static enum tps_status read_groups(struct reader *r, const cJSON *ev, int index)
{
	const cJSON *groups = member(ev, "groups"), *g;
	size_t at = push(r, "groups"), len = r->p.len;
	int gi = 0;
	char got[128];
	if (!cJSON_IsArray(groups) || !groups->child) {
		return bad(r, "expected groups of ranks, got %s",
			   describe(groups, got, sizeof got));
	}
	cJSON_ArrayForEach(g, groups)
	{
		const cJSON *m;
		int mi = 0;
		tps_json_path_push_index(&r->p, (size_t)gi);
		if (!cJSON_IsArray(g) || !g->child) {
			return bad(r,
				   "expected a group: an array of ranks, "
				   "got %s",
				   describe(g, got, sizeof got));
		}
		cJSON_ArrayForEach(m, g)
		{
			int64_t rank;
			if (!whole_in(m, 0, r->mesh.world_size - 1, &rank) ||
			    r->seen_in[rank] == index + 1) {
				tps_json_path_push_index(&r->p, (size_t)mi);
				return bad(r,
					   "expected a rank from 0 to %d in no "
					   "other group, got %s",
					   r->mesh.world_size - 1,
					   describe(m, got, sizeof got));
			}
			r->seen_in[rank] = index + 1;
			mi++;
		}
		tps_json_path_pop(&r->p, len);
		gi++;
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

/* "[shard(1), replicate]" of an event's placements, for messages. */
static const char *placements_text(const cJSON *ps, char *buf, size_t size)
{
	const cJSON *s;
	size_t used = 0;
	buf[0] = '\0';
	cJSON_ArrayForEach(s, ps)
	{
		int n = snprintf(buf + used, size - used, "%s%s",
				 used ? ", " : "[", s->valuestring);
		if (n < 0 || (size_t)n >= size - used) {
			break;
		}
		used += (size_t)n;
	}
	if (used + 2 <= size) {
		memcpy(buf + used, "]", 2);
	}
	return buf;
}

/* An event's "ranks": every rank of the mesh in rank order, each with the
 * shape its block of the global tensor has, and its values. */
static enum tps_status read_ranks(struct reader *r, const cJSON *ev,
				  const struct tps_shape *global,
				  const struct tps_placement *pl)
{
	const cJSON *ranks = member(ev, "ranks"), *e;
	size_t at = push(r, "ranks"), len = r->p.len;
	int world = r->mesh.world_size, j = 0;
	char got[128];

	if (!cJSON_IsArray(ranks) || cJSON_GetArraySize(ranks) != world) {
		if (cJSON_IsArray(ranks)) {
			snprintf(got, sizeof got, "%d",
				 cJSON_GetArraySize(ranks));
		} else {
			describe(ranks, got, sizeof got);
		}
		return bad(r,
			   "expected %d ranks (the mesh's world size), got %s",
			   world, got);
	}
	cJSON_ArrayForEach(e, ranks)
	{
		struct tps_shape want = *global, shape;
		int64_t offset[TPS_MAX_DIMS];
		enum tps_status st;
		tps_json_path_push_index(&r->p, (size_t)j);
		if (!cJSON_IsObject(e)) {
			return bad(r, "expected a rank object, got %s",
				   describe(e, got, sizeof got));
		}
		if (!whole_in(member(e, "rank"), j, j, NULL)) {
			push(r, "rank");
			return bad(
				r,
				"expected %d (every rank of the mesh, in "
				"rank order), got %s",
				j,
				describe(member(e, "rank"), got, sizeof got));
		}
		st = read_shape(r, e, "shape", &shape);
		if (st != TPS_OK) {
			return st;
		}
		tps_dtensor_local_region(&r->mesh, global, pl, j, offset,
					 want.dim);
		if (!tps_shape_equal(&shape, &want)) {
			char a[64], b[64], c[64], d[128];
			push(r, "shape");
			return bad(r,
				   "expected %s, the block of the global "
				   "shape %s that %s gives rank %d, got %s",
				   tps_shape_format(&want, a, sizeof a),
				   tps_shape_format(global, b, sizeof b),
				   placements_text(member(ev, "placements"), d,
						   sizeof d),
				   j, tps_shape_format(&shape, c, sizeof c));
		}
		st = read_values(r, e, &shape);
		if (st != TPS_OK) {
			return st;
		}
		tps_json_path_pop(&r->p, len);
		j++;
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

/* An event's "slot": [start, end], whole numbers, start < end (the
 * schedule's operation it is part of, docs/pipeline.md). */
static enum tps_status read_slot(struct reader *r, const cJSON *slot)
{
	int64_t a = 0, b = 0;
	char got[128];
	enum tps_status st = TPS_OK;
	size_t at = push(r, "slot");
	if (!cJSON_IsArray(slot) || cJSON_GetArraySize(slot) != 2 ||
	    !whole_in(cJSON_GetArrayItem(slot, 0), 0, READ_WHOLE_MAX, &a) ||
	    !whole_in(cJSON_GetArrayItem(slot, 1), 0, READ_WHOLE_MAX, &b) ||
	    b <= a) {
		st = bad(r,
			 "expected [start, end], whole numbers with start < "
			 "end, got %s",
			 describe(slot, got, sizeof got));
	}
	tps_json_path_pop(&r->p, at);
	return st;
}

static enum tps_status read_event(struct reader *r, const cJSON *ev, int index)
{
	struct tps_shape global;
	struct tps_placement pl[TPS_MAX_MESH_DIMS];
	const cJSON *v;
	char got[128];
	enum tps_status st;

	if (!cJSON_IsObject(ev)) {
		return bad(r, "expected an event object, got %s",
			   describe(ev, got, sizeof got));
	}
	v = member(ev, "seq");
	if (!whole_in(v, index, index, NULL)) {
		push(r, "seq");
		return bad(r,
			   "expected %d (events in order, each seq once), got "
			   "%s",
			   index, describe(v, got, sizeof got));
	}
	v = member(ev, "step");
	if (v && !whole_in(v, 0, READ_WHOLE_MAX, NULL)) {
		push(r, "step");
		return bad(r, "expected a step number from 0, got %s",
			   describe(v, got, sizeof got));
	}
	v = member(ev, "phase");
	if (!cJSON_IsString(v) ||
	    tps_name_index(tps_phase_names, v->valuestring) < 0) {
		push(r, "phase");
		return bad(r,
			   "expected setup, forward, backward or optimizer, "
			   "got %s",
			   describe(v, got, sizeof got));
	}
	v = member(ev, "kind");
	if (!cJSON_IsString(v) ||
	    tps_name_index(tps_event_kind_names, v->valuestring) < 0) {
		push(r, "kind");
		return bad(r, "expected compute, collective or layout, got %s",
			   describe(v, got, sizeof got));
	}
	st = need(r, ev, "module", cJSON_IsString, "a module's name");
	if (st == TPS_OK) {
		st = need(r, ev, "op", cJSON_IsString, "an op's name");
	}
	if (st == TPS_OK) {
		st = need(r, ev, "tensor", cJSON_IsString, "a tensor's name");
	}
	if (st != TPS_OK) {
		return st;
	}
	v = member(ev, "mesh_dim");
	if (v) {
		unsigned mask = 0;
		for (unsigned m = 1;
		     cJSON_IsString(v) && !mask && m < (1u << r->mesh.ndim);
		     m++) {
			mask = strcmp(r->mask_name[m], v->valuestring) == 0 ? m
									    : 0;
		}
		if (!mask) {
			push(r, "mesh_dim");
			return bad(r,
				   "expected a mesh dim's name, or dims' "
				   "joined by '_', got %s",
				   describe(v, got, sizeof got));
		}
	}
	if (v || member(ev, "groups")) {
		st = read_groups(r, ev, index);
		if (st != TPS_OK) {
			return st;
		}
	}
	st = read_shape(r, ev, "global_shape", &global);
	if (st == TPS_OK) {
		st = read_placements(r, ev, &global, pl);
	}
	if (st == TPS_OK) {
		st = may_count(r, ev, "bytes_per_rank");
	}
	if (st == TPS_OK && member(ev, "ranks")) {
		st = read_ranks(r, ev, &global, pl);
	}
	v = member(ev, "dtype");
	if (st == TPS_OK && v &&
	    (!cJSON_IsString(v) ||
	     tps_name_index(tps_dtype_names, v->valuestring) < 0)) {
		push(r, "dtype");
		return bad(r, "expected float32, bfloat16 or float16, got %s",
			   describe(v, got, sizeof got));
	}
	if (st == TPS_OK) {
		st = may(r, ev, "note", cJSON_IsString, "a sentence");
	}
	if (st == TPS_OK) {
		st = may(r, ev, "recompute", cJSON_IsTrue, "true");
	}
	if (st == TPS_OK) {
		st = may(r, ev, "mistake", cJSON_IsString, "a mistake's name");
	}
	/* A pipeline's (docs/pipeline.md): the stage whose ranks ran it,
	 * its model chunk, microbatch, the other stage of a send or recv,
	 * and the slots of the schedule's operation. */
	for (int i = 0; st == TPS_OK && i < 4; i++) {
		static const char *const keys[] = {"stage", "chunk",
						   "microbatch", "peer"};
		st = may_count(r, ev, keys[i]);
	}
	if (st == TPS_OK && member(ev, "slot")) {
		st = read_slot(r, member(ev, "slot"));
	}
	return st;
}

static enum tps_status read_events(struct reader *r, const cJSON *trace)
{
	const cJSON *events = member(trace, "events"), *ev;
	size_t at = push(r, "events"), len = r->p.len;
	int i = 0;
	cJSON_ArrayForEach(ev, events)
	{
		enum tps_status st;
		tps_json_path_push_index(&r->p, (size_t)i);
		st = read_event(r, ev, i);
		if (st != TPS_OK) {
			return st;
		}
		tps_json_path_pop(&r->p, len);
		i++;
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

/* ---- result and comm --------------------------------------------------- */

/* An array of finite numbers (a loss per step). */
static cJSON_bool is_numbers(const cJSON *v)
{
	const cJSON *e;
	if (!cJSON_IsArray(v)) {
		return 0;
	}
	cJSON_ArrayForEach(e, v)
	{
		if (!is_finite_number(e)) {
			return 0;
		}
	}
	return 1;
}

/* result.symbolic: per-rank figures {"bytes", "rank", ...}, counts, and
 * objects of them (by phase, by module), and "per_rank", an array of one
 * object of figures per rank of the mesh: whole numbers from 0, ranks of
 * the mesh. */
static enum tps_status read_figures(struct reader *r, const cJSON *o, int depth)
{
	const cJSON *v;
	char got[128];
	cJSON_ArrayForEach(v, o)
	{
		size_t at = push(r, v->string);
		bool rank = strcmp(v->string, "rank") == 0 ||
			    strcmp(v->string, "min_rank") == 0;
		if (depth == 0 && strcmp(v->string, "per_rank") == 0) {
			const cJSON *e;
			size_t i = 0;
			if (!cJSON_IsArray(v) ||
			    cJSON_GetArraySize(v) != r->mesh.world_size) {
				return bad(r,
					   "expected an object per rank (%d), "
					   "got %s",
					   r->mesh.world_size,
					   describe(v, got, sizeof got));
			}
			cJSON_ArrayForEach(e, v)
			{
				size_t e_at = r->p.len;
				enum tps_status st;
				tps_json_path_push_index(&r->p, i++);
				if (!cJSON_IsObject(e)) {
					return bad(
						r,
						"expected an object of "
						"figures, got %s",
						describe(e, got, sizeof got));
				}
				st = read_figures(r, e, depth + 1);
				if (st != TPS_OK) {
					return st;
				}
				tps_json_path_pop(&r->p, e_at);
			}
		} else if (cJSON_IsObject(v) && depth < 3) {
			enum tps_status st = read_figures(r, v, depth + 1);
			if (st != TPS_OK) {
				return st;
			}
		} else if (rank ? !whole_in(v, 0, r->mesh.world_size - 1, NULL)
				: !whole_in(v, 0, READ_WHOLE_MAX, NULL)) {
			return bad(r, "expected %s, got %s",
				   rank ? "a rank of the mesh"
					: "a whole number from 0",
				   describe(v, got, sizeof got));
		}
		tps_json_path_pop(&r->p, at);
	}
	return TPS_OK;
}

static enum tps_status read_result(struct reader *r, const cJSON *trace,
				   int n_events)
{
	static const char *const tensors[] = {"output", "reference_output"};
	static const char *const named[] = {"grads", "reference_grads",
					    "params_after",
					    "reference_params_after"};
	static const char *const losses[] = {"loss", "reference_loss"};
	const cJSON *res = member(trace, "result"), *d;
	size_t at = push(r, "result");
	char got[128];
	enum tps_status st = TPS_OK;

	for (size_t i = 0; st == TPS_OK && i < 2; i++) {
		if (member(res, tensors[i])) {
			size_t t_at = push(r, tensors[i]);
			st = read_tensor(r, member(res, tensors[i]), false);
			if (st == TPS_OK) {
				tps_json_path_pop(&r->p, t_at);
			}
		}
	}
	for (size_t i = 0; st == TPS_OK && i < 2; i++) {
		st = may(r, res, losses[i], is_numbers, "a number per step");
	}
	for (size_t i = 0; st == TPS_OK && i < 4; i++) {
		st = read_tensors(r, res, named[i], false, false);
	}
	if (st == TPS_OK) {
		st = may(r, res, "max_abs_diff", is_finite_number, "a number");
	}
	if (st == TPS_OK) {
		st = may(r, res, "match", cJSON_IsBool, "true or false");
	}
	if (st == TPS_OK) {
		st = may(r, res, "diagnosis", cJSON_IsString, "a sentence");
	}
	if (st == TPS_OK) {
		st = may(r, res, "stopped", cJSON_IsString, "a sentence");
	}
	if (st != TPS_OK) {
		return st;
	}
	d = member(res, "diverged_at");
	if (d) {
		size_t d_at = push(r, "diverged_at");
		if (!cJSON_IsObject(d)) {
			return bad(r, "expected {\"seq\", \"mistake\"}, got %s",
				   describe(d, got, sizeof got));
		}
		if (!whole_in(member(d, "seq"), 0, n_events - 1, NULL)) {
			push(r, "seq");
			return bad(r, "expected the seq of an event, got %s",
				   describe(member(d, "seq"), got, sizeof got));
		}
		st = need(r, d, "mistake", cJSON_IsString, "a mistake's name");
		if (st != TPS_OK) {
			return st;
		}
		tps_json_path_pop(&r->p, d_at);
	}
	d = member(res, "symbolic");
	if (d) {
		size_t d_at = push(r, "symbolic");
		if (!cJSON_IsObject(d)) {
			return bad(r, "expected an object, got %s",
				   describe(d, got, sizeof got));
		}
		st = read_figures(r, d, 0);
		if (st != TPS_OK) {
			return st;
		}
		tps_json_path_pop(&r->p, d_at);
	}
	tps_json_path_pop(&r->p, at);
	return TPS_OK;
}

static enum tps_status read_comm(struct reader *r, const cJSON *trace)
{
	static const char *const sections[] = {"by_op", "by_phase", "by_module",
					       "by_mesh_dim"};
	const cJSON *comm = member(trace, "comm");
	size_t at = push(r, "comm");
	enum tps_status st = TPS_OK;

	for (size_t i = 0; st == TPS_OK && i < 2; i++) {
		const char *key = i ? "bytes_per_rank" : "collectives";
		st = need(r, comm, key, cJSON_IsNumber,
			  "a whole number from 0");
		if (st == TPS_OK) {
			st = may_count(r, comm, key);
		}
	}
	for (size_t i = 0; st == TPS_OK && i < 4; i++) {
		const cJSON *tally;
		size_t s_at;
		st = need(r, comm, sections[i], cJSON_IsObject,
			  "an object of counts");
		if (st != TPS_OK) {
			break;
		}
		s_at = push(r, sections[i]);
		cJSON_ArrayForEach(tally, member(comm, sections[i]))
		{
			size_t t_at = push(r, tally->string);
			st = need(r, tally, "count", cJSON_IsNumber,
				  "a whole number from 0");
			if (st == TPS_OK) {
				st = may_count(r, tally, "count");
			}
			if (st == TPS_OK) {
				st = need(r, tally, "bytes_per_rank",
					  cJSON_IsNumber,
					  "a whole number from 0");
			}
			if (st == TPS_OK) {
				st = may_count(r, tally, "bytes_per_rank");
			}
			if (st != TPS_OK) {
				return st;
			}
			tps_json_path_pop(&r->p, t_at);
		}
		tps_json_path_pop(&r->p, s_at);
	}
	if (st == TPS_OK) {
		tps_json_path_pop(&r->p, at);
	}
	return st;
}

/* ---- the whole trace --------------------------------------------------- */

static cJSON_bool is_strings(const cJSON *v)
{
	const cJSON *e;
	if (!cJSON_IsArray(v)) {
		return 0;
	}
	cJSON_ArrayForEach(e, v)
	{
		if (!cJSON_IsString(e)) {
			return 0;
		}
	}
	return 1;
}

enum tps_status tps_trace_validate(const cJSON *trace, const char *name,
				   struct tps_error *err)
{
	struct reader *r;
	enum tps_status st = tps_check_is_trace(trace, name, err);
	if (st != TPS_OK) {
		return st;
	}
	r = calloc(1, sizeof *r);
	if (!r) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	r->name = name;
	r->err = err;
	tps_json_path_init(&r->p);
	st = need(r, trace, "generator", cJSON_IsString, "a string");
	if (st == TPS_OK) {
		st = need(r, trace, "config", cJSON_IsObject,
			  "the normalised config");
	}
	if (st == TPS_OK) {
		st = need(r, trace, "mesh", cJSON_IsObject, "the mesh");
	}
	if (st == TPS_OK) {
		st = read_mesh(r, trace);
	}
	if (st == TPS_OK) {
		st = may(r, trace, "warnings", is_strings,
			 "an array of sentences");
	}
	if (st == TPS_OK) {
		st = read_tensors(r, trace, "params", true, true);
	}
	if (st == TPS_OK) {
		st = read_tensors(r, trace, "inputs", true, false);
	}
	if (st == TPS_OK) {
		st = need(r, trace, "events", cJSON_IsArray,
			  "an array of events");
	}
	if (st == TPS_OK) {
		st = read_events(r, trace);
	}
	if (st == TPS_OK) {
		st = need(r, trace, "result", cJSON_IsObject, "an object");
	}
	if (st == TPS_OK) {
		st = read_result(r, trace,
				 cJSON_GetArraySize(member(trace, "events")));
	}
	if (st == TPS_OK) {
		st = need(r, trace, "comm", cJSON_IsObject, "an object");
	}
	if (st == TPS_OK) {
		st = read_comm(r, trace);
	}
	free(r);
	return st;
}

/* tps_trace_read, its "values" counted rather than kept when counted
 * (tps_trace_read_counted). */
static enum tps_status read_trace(const char *path, bool counted, cJSON **tree,
				  char **text, size_t *text_len,
				  struct tps_error *err)
{
	char *bytes = NULL;
	size_t len = 0;
	cJSON *root = NULL;
	enum tps_status st = tps_json_read_file(path, TPS_JSON_MAX_TRACE_BYTES,
						&bytes, &len, err);
	if (st == TPS_OK) {
		st = counted ? tps_json_parse_counted(path, bytes, len,
						      "values", &root, err)
			     : tps_json_parse_strict(path, bytes, len, &root,
						     err);
	}
	if (st == TPS_OK) {
		st = tps_trace_validate(root, path, err);
	}
	if (st != TPS_OK) {
		cJSON_Delete(root);
		free(bytes);
		return st;
	}
	*tree = root;
	if (text) {
		*text = bytes;
		*text_len = len;
	} else {
		free(bytes);
	}
	return TPS_OK;
}

enum tps_status tps_trace_read(const char *path, cJSON **tree, char **text,
			       size_t *text_len, struct tps_error *err)
{
	return read_trace(path, false, tree, text, text_len, err);
}

enum tps_status tps_trace_read_counted(const char *path, cJSON **tree,
				       char **text, size_t *text_len,
				       struct tps_error *err)
{
	return read_trace(path, true, tree, text, text_len, err);
}

enum tps_status tps_trace_read_arena(const char *path,
				     struct tps_json_arena **arena,
				     const cJSON **tree, struct tps_error *err)
{
	char *bytes = NULL;
	size_t len = 0;
	struct tps_json_arena *a = NULL;
	const cJSON *root = NULL;
	enum tps_status st = tps_json_read_file(path, TPS_JSON_MAX_TRACE_BYTES,
						&bytes, &len, err);
	if (st == TPS_OK) {
		st = tps_json_parse_arena(path, bytes, len, &a, &root, err);
	}
	free(bytes);
	if (st == TPS_OK) {
		st = tps_trace_validate(root, path, err);
	}
	if (st != TPS_OK) {
		tps_json_arena_free(a);
		return st;
	}
	*arena = a;
	*tree = root;
	return TPS_OK;
}
