/*
 * A trace read back as the tensors it recorded: its mesh, and an event's
 * global value assembled from its ranks' blocks the way the run assembles
 * its outcome (dtensor.h, tps_dtensor_full_tensor: shards placed at their
 * regions, partial sums added in ascending rank order, one replica read).
 * For `tpsim diff` and `tpsim plot` (run_diff.h), and the sharding
 * pictures' mesh (picture.c). The trace was validated by tps_trace_read,
 * so shapes and placements hold; what a valid trace may still lack
 * (values) is an error at its pointer.
 */
#include "trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtensor.h"
#include "dtype.h"
#include "jsonio.h"

static const cJSON *member(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* "t.json: <pointer>: <what>" */
static enum tps_status bad_input(struct tps_error *err, const char *trace_name,
				 const struct tps_json_path *p,
				 const char *what)
{
	return tps_error_set_at(err, TPS_ERR_INPUT, trace_name, p->text, "%s",
				what);
}

/* A whole number in [lo, hi], as the trace writes sizes. */
static bool whole_in(const cJSON *v, double lo, double hi, int64_t *out)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
	    v->valuedouble > hi) {
		return false;
	}
	*out = (int64_t)v->valuedouble;
	return true;
}

enum tps_status tps_trace_read_mesh(struct tps_mesh *mesh, const cJSON *trace,
				    const char *trace_name,
				    struct tps_error *err)
{
	const cJSON *m = member(trace, "mesh");
	const cJSON *shape = member(m, "shape");
	const cJSON *names = member(m, "dim_names");
	int sizes[TPS_MAX_MESH_DIMS];
	const char *name_of[TPS_MAX_MESH_DIMS];
	int n = cJSON_GetArraySize(shape);
	struct tps_json_path p;
	enum tps_status st;

	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "mesh");
	tps_json_path_push_key(&p, "shape");
	if (!cJSON_IsArray(shape) || n < 1 || n > TPS_MAX_MESH_DIMS) {
		return bad_input(err, trace_name, &p,
				 "expected 1 to 4 mesh sizes");
	}
	for (int i = 0; i < n; i++) {
		int64_t v;
		if (!whole_in(cJSON_GetArrayItem(shape, i), 1, TPS_MAX_WORLD,
			      &v)) {
			tps_json_path_push_index(&p, (size_t)i);
			return bad_input(err, trace_name, &p,
					 "expected a mesh size from 1 to "
					 "4096");
		}
		sizes[i] = (int)v;
	}
	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "mesh");
	tps_json_path_push_key(&p, "dim_names");
	if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) != n) {
		return bad_input(err, trace_name, &p,
				 "expected one name per mesh dim");
	}
	for (int i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetArrayItem(names, i);
		name_of[i] = cJSON_IsString(v) ? v->valuestring : "";
	}
	st = tps_mesh_init(mesh, n, sizes, name_of, err);
	if (st != TPS_OK) {
		char esc[256];
		tps_error_prefix(err, "%s: /mesh",
				 tps_json_escape_for_message(trace_name, esc,
							     sizeof esc));
	}
	return st;
}

/* Copies nested arrays of numbers (validated: in the shape) into data,
 * row-major, each read as a value of the event's dtype: a bfloat16's
 * shortest decimal reads back to that bfloat16, not always as a float32
 * to the same value. Returns the next free slot. */
static float *copy_values(const cJSON *v, enum tps_dtype dtype, float *data)
{
	const cJSON *c;
	if (cJSON_IsNumber(v)) {
		*data = tps_dtype_round_double(v->valuedouble, dtype);
		return data + 1;
	}
	cJSON_ArrayForEach(c, v)
	{
		data = copy_values(c, dtype, data);
	}
	return data;
}

/* An event's "dtype" (the trace reader checked it), or float32. */
static enum tps_dtype event_dtype(const cJSON *ev)
{
	const cJSON *d = member(ev, "dtype");
	for (int i = 0; cJSON_IsString(d) && tps_dtype_names[i]; i++) {
		if (strcmp(d->valuestring, tps_dtype_names[i]) == 0) {
			return (enum tps_dtype)i;
		}
	}
	return TPS_DTYPE_F32;
}

/*
 * The rows of a batch-major global tensor that DistributedSampler split
 * over dp are in the sampler's order (dp rank r holds samples r, r + dp,
 * ...; model_step.c): puts them back in sample order.
 */
static enum tps_status unstride_rows(struct tps_tensor *t, int dp,
				     struct tps_error *err)
{
	int64_t rows = t->shape.dim[0], row_len, per;
	float *copy;
	if (dp <= 1 || rows % dp != 0 || !t->data) {
		return TPS_OK;
	}
	row_len = tps_tensor_numel(t) / rows;
	per = rows / dp;
	copy = malloc((size_t)tps_tensor_numel(t) * sizeof *copy);
	if (!copy) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	/* Position r * per + k holds sample r + k * dp. */
	for (int64_t r = 0; r < dp; r++) {
		for (int64_t k = 0; k < per; k++) {
			memcpy(copy + (r + k * dp) * row_len,
			       t->data + (r * per + k) * row_len,
			       (size_t)row_len * sizeof *copy);
		}
	}
	memcpy(t->data, copy, (size_t)tps_tensor_numel(t) * sizeof *copy);
	free(copy);
	return TPS_OK;
}

/* The size of the dp group that shards dim 0 in the sampler's order: the
 * product of the mesh dims other than tp_dim whose placement is shard(0)
 * (flat or not), 1 when the config's sampler is not "distributed". */
static int sampler_dp(const cJSON *trace, const struct tps_mesh *mesh,
		      const struct tps_placement *pl)
{
	const cJSON *config = member(trace, "config");
	const cJSON *sampler = member(config, "sampler");
	const cJSON *tp = member(config, "tp_dim");
	int dp = 1;
	if (!cJSON_IsString(sampler) ||
	    strcmp(sampler->valuestring, "distributed") != 0) {
		return 1;
	}
	for (int i = 0; i < mesh->ndim; i++) {
		if (pl[i].kind == TPS_PLACEMENT_SHARD && pl[i].dim == 0 &&
		    !(cJSON_IsString(tp) &&
		      strcmp(tp->valuestring, mesh->dim_names[i]) == 0)) {
			dp *= mesh->shape[i];
		}
	}
	return dp;
}

enum tps_status tps_trace_event_global(const cJSON *trace,
				       const char *trace_name,
				       const struct tps_mesh *mesh, int index,
				       struct tps_tensor *out,
				       struct tps_error *err)
{
	const cJSON *ev = cJSON_GetArrayItem(member(trace, "events"), index);
	const cJSON *shape = member(ev, "global_shape");
	const cJSON *placements = member(ev, "placements");
	const cJSON *ranks = member(ev, "ranks"), *rank;
	struct tps_placement pl[TPS_MAX_MESH_DIMS];
	struct tps_tensor *locals = NULL;
	struct tps_dtensor dt = {0};
	struct tps_shape global = {0};
	struct tps_json_path p;
	enum tps_dtype dtype = event_dtype(ev);
	enum tps_status st = TPS_OK;
	int r = 0;

	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "events");
	tps_json_path_push_index(&p, (size_t)index);
	/* Validated: a shape of at most 4 sizes, a placement per mesh dim
	 * valid for it, every rank in order with its block's shape. */
	global.ndim = cJSON_GetArraySize(shape);
	for (int d = 0; d < global.ndim; d++) {
		global.dim[d] =
			(int64_t)cJSON_GetArrayItem(shape, d)->valuedouble;
	}
	for (int i = 0; i < mesh->ndim; i++) {
		const cJSON *s = cJSON_GetArrayItem(placements, i);
		if (!cJSON_IsString(s) ||
		    !tps_placement_parse(s->valuestring, global.ndim, &pl[i])) {
			tps_json_path_push_key(&p, "placements");
			return bad_input(err, trace_name, &p,
					 "expected one placement per mesh "
					 "dim");
		}
	}
	if (cJSON_GetArraySize(ranks) != mesh->world_size) {
		tps_json_path_push_key(&p, "ranks");
		return bad_input(err, trace_name, &p,
				 "expected every rank's values (a symbolic "
				 "trace has none)");
	}
	locals = calloc((size_t)mesh->world_size, sizeof *locals);
	if (!locals) {
		return tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
	}
	cJSON_ArrayForEach(rank, ranks)
	{
		int64_t offset[TPS_MAX_DIMS];
		struct tps_shape local = global;
		const cJSON *values = member(rank, "values");
		tps_dtensor_local_region(mesh, &global, pl, r, offset,
					 local.dim);
		st = tps_tensor_init(&locals[r], &local, err);
		if (st != TPS_OK) {
			break;
		}
		if (!values && tps_tensor_numel(&locals[r]) > 0) {
			tps_json_path_push_key(&p, "ranks");
			tps_json_path_push_index(&p, (size_t)r);
			st = bad_input(err, trace_name, &p,
				       "expected \"values\" (a trace written "
				       "with \"trace\": {\"values\": "
				       "\"full\"}), got none");
			r++;
			break;
		}
		if (locals[r].data) {
			copy_values(values, dtype, locals[r].data);
		}
		r++;
	}
	if (st != TPS_OK) {
		for (int i = 0; i < r; i++) {
			tps_tensor_free(&locals[i]);
		}
		free(locals);
		return st;
	}
	tps_dtensor_wrap(&dt, mesh, &global, pl, locals);
	st = tps_dtensor_full_tensor(&dt, out, err);
	if (st == TPS_OK && global.ndim > 0) {
		st = unstride_rows(out, sampler_dp(trace, mesh, pl), err);
		if (st != TPS_OK) {
			tps_tensor_free(out);
		}
	}
	tps_dtensor_free(&dt);
	return st;
}
