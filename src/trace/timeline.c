/*
 * Timelines: a trace's step events laid out in time per rank (the model
 * is at the top of timeline.h), and their Chrome Trace Event Format.
 */
#include "timeline.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "costs.h"
#include "dtensor.h"
#include "pipeline_schedule.h"
#include "jsonio.h"
#include "arith.h"
#include "numfmt.h"
#include "trace.h"
#include "tps_version.h"

/* The forward matmul flops of one module, per rank: its backward dW and
 * dX cost the same (nn_linear.c). */
struct module_flops {
	const char *module; /* borrowed from the trace */
	int64_t *per_rank;  /* world_size entries */
};

struct builder {
	const cJSON *trace;
	const char *name; /* the trace's file name */
	struct tps_error *err;
	struct tps_json_path p;
	struct tps_timeline tl;
	size_t cap_slices;
	FILE *out;	/* not NULL: slices are written here, not kept */
	int64_t *clock; /* per rank, ns */
	int *group_of;	/* per rank: its group in the current collective */
	int64_t *flops; /* per rank: the current compute event's */
	struct module_flops *mods;
	int n_mods, cap_mods;
	/*
	 * A pipeline's trace (tl.pp_dim >= 0): each rank's stage; its
	 * operations, found before the layout (find_ops), each in keys and
	 * indexed by (step, stage, slot start) in op_at; each step's start
	 * (base) and last slot's end. Per event: the stage it runs on (-1:
	 * every rank), and for one with a slot its window [t0, t1).
	 */
	int *stage_of;
	struct op_key {
		int step, stage, chunk, microbatch;
		int64_t start, end;
		int n, used; /* its events; laid out so far */
	} * keys;
	int n_keys;
	int *op_at;
	int n_steps_seen;
	int64_t slots; /* op_at's slot starts: the largest end + 1 */
	int64_t *base, *step_end;
	int cur_step;
	bool flushed; /* the step's operations are over: its clocks past */
	int only_stage;
	bool slotted;
	int64_t t0, t1;
};

/* Whether rank r runs the current event. */
static bool runs(const struct builder *b, int r)
{
	return b->only_stage < 0 || b->stage_of[r] == b->only_stage;
}

/* "t.json: /events/3/groups: <what>" at the builder's path. */
static enum tps_status fail(struct builder *b, enum tps_status code,
			    const char *what)
{
	return tps_error_set_at(b->err, code, b->name, b->p.text, "%s", what);
}

static enum tps_status no_memory(struct builder *b)
{
	return tps_error_set(b->err, TPS_ERR_NOMEM, "out of memory");
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

static const cJSON *member(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static enum tps_status read_mesh(struct builder *b)
{
	const cJSON *m = member(b->trace, "mesh");
	const cJSON *shape = member(m, "shape");
	const cJSON *names = member(m, "dim_names");
	int sizes[TPS_MAX_MESH_DIMS];
	const char *name_of[TPS_MAX_MESH_DIMS];
	int n = cJSON_GetArraySize(shape);
	enum tps_status st;

	tps_json_path_init(&b->p);
	tps_json_path_push_key(&b->p, "mesh");
	tps_json_path_push_key(&b->p, "shape");
	if (!cJSON_IsArray(shape) || n < 1 || n > TPS_MAX_MESH_DIMS) {
		return fail(b, TPS_ERR_INPUT, "expected 1 to 4 mesh sizes");
	}
	for (int i = 0; i < n; i++) {
		int64_t v;
		if (!whole_in(cJSON_GetArrayItem(shape, i), 1, TPS_MAX_WORLD,
			      &v)) {
			tps_json_path_push_index(&b->p, (size_t)i);
			return fail(b, TPS_ERR_INPUT,
				    "expected a mesh size from 1 to 4096");
		}
		sizes[i] = (int)v;
	}
	tps_json_path_init(&b->p);
	tps_json_path_push_key(&b->p, "mesh");
	tps_json_path_push_key(&b->p, "dim_names");
	if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) != n) {
		return fail(b, TPS_ERR_INPUT, "expected one name per mesh dim");
	}
	for (int i = 0; i < n; i++) {
		const cJSON *v = cJSON_GetArrayItem(names, i);
		name_of[i] = cJSON_IsString(v) ? v->valuestring : "";
	}
	st = tps_mesh_init(&b->tl.mesh, n, sizes, name_of, b->err);
	if (st != TPS_OK) {
		char esc[256];
		tps_error_prefix(
			b->err, "%s: /mesh",
			tps_json_escape_for_message(b->name, esc, sizeof esc));
	}
	return st;
}

/* A finite number > 0 (or >= 0 when zero_ok) at key of o; the path ends
 * at o. */
static enum tps_status read_rate(struct builder *b, const cJSON *o,
				 const char *key, bool zero_ok, double *out)
{
	const cJSON *v = member(o, key);
	tps_json_path_push_key(&b->p, key);
	if (!v) {
		return fail(b, TPS_ERR_INPUT,
			    "missing (the timeline times events with the "
			    "config's links and device)");
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < 0 || (!zero_ok && v->valuedouble == 0)) {
		return fail(b, TPS_ERR_INPUT,
			    zero_ok ? "expected a number >= 0"
				    : "expected a number > 0");
	}
	*out = v->valuedouble;
	return TPS_OK;
}

/* /config/links/<dim>/{GBps,latency_us} for every mesh dim, and
 * /config/device/TFLOPS: the normalised config always has them. */
static enum tps_status read_cost(struct builder *b)
{
	const cJSON *config = member(b->trace, "config");
	const cJSON *links = member(config, "links");
	const cJSON *device = member(config, "device");
	enum tps_status st = TPS_OK;

	for (int i = 0; st == TPS_OK && i < b->tl.mesh.ndim; i++) {
		const char *dim = b->tl.mesh.dim_names[i];
		const cJSON *link = member(links, dim);
		tps_json_path_init(&b->p);
		tps_json_path_push_key(&b->p, "config");
		tps_json_path_push_key(&b->p, "links");
		tps_json_path_push_key(&b->p, dim);
		if (!cJSON_IsObject(link)) {
			return fail(b, TPS_ERR_INPUT,
				    link ? "expected an object"
					 : "missing (the timeline times "
					   "collectives with the config's "
					   "links)");
		}
		size_t at = b->p.len;
		st = read_rate(b, link, "GBps", false,
			       &b->tl.cost.links[i].gbps);
		tps_json_path_pop(&b->p, at);
		if (st == TPS_OK) {
			st = read_rate(b, link, "latency_us", true,
				       &b->tl.cost.links[i].latency_us);
		}
	}
	if (st != TPS_OK) {
		return st;
	}
	tps_json_path_init(&b->p);
	tps_json_path_push_key(&b->p, "config");
	tps_json_path_push_key(&b->p, "device");
	if (!cJSON_IsObject(device)) {
		return fail(b, TPS_ERR_INPUT,
			    device ? "expected an object"
				   : "missing (the timeline times compute "
				     "with the config's device)");
	}
	return read_rate(b, device, "TFLOPS", false, &b->tl.cost.tflops);
}

/* The mesh dims a group named as tps_mesh_mask_name names it spans
 * ("tp", "dp_cp"); 0 when no set of dims has that name. */
static unsigned mask_of(const struct tps_mesh *mesh, const char *name)
{
	for (unsigned mask = 1; mask < (1u << mesh->ndim); mask++) {
		char buf[TPS_MAX_MESH_DIMS * TPS_MESH_NAME_MAX];
		if (strcmp(tps_mesh_mask_name(mesh, mask, buf, sizeof buf),
			   name) == 0) {
			return mask;
		}
	}
	return 0;
}

/* o's shape (at shape_key: an event's "global_shape", a parameter's
 * "shape") and "placements" (one per mesh dim, valid for the shape); the
 * path ends at o. */
static enum tps_status read_layout(struct builder *b, const cJSON *o,
				   const char *shape_key,
				   struct tps_shape *shape,
				   struct tps_placement *placements)
{
	const cJSON *dims = member(o, shape_key);
	const cJSON *ps = member(o, "placements");
	size_t at = b->p.len;
	struct tps_error why = {0};
	int n = cJSON_GetArraySize(dims);

	tps_json_path_push_key(&b->p, shape_key);
	if (!cJSON_IsArray(dims) || n > TPS_MAX_DIMS) {
		return fail(b, TPS_ERR_INPUT, "expected 0 to 4 sizes");
	}
	shape->ndim = n;
	for (int d = 0; d < n; d++) {
		/* Symbolic traces hold tensors over 2^31 elements. */
		if (!whole_in(cJSON_GetArrayItem(dims, d), 0, 9e15,
			      &shape->dim[d])) {
			tps_json_path_push_index(&b->p, (size_t)d);
			return fail(b, TPS_ERR_INPUT,
				    "expected a size from 0 to 9e15");
		}
	}
	tps_json_path_pop(&b->p, at);
	tps_json_path_push_key(&b->p, "placements");
	if (!cJSON_IsArray(ps) || cJSON_GetArraySize(ps) != b->tl.mesh.ndim) {
		char what[96];
		snprintf(what, sizeof what,
			 "expected one placement per mesh dim (%d)",
			 b->tl.mesh.ndim);
		return fail(b, TPS_ERR_INPUT, what);
	}
	for (int i = 0; i < b->tl.mesh.ndim; i++) {
		const cJSON *s = cJSON_GetArrayItem(ps, i);
		if (!cJSON_IsString(s) ||
		    !tps_placement_parse(s->valuestring, n, &placements[i])) {
			tps_json_path_push_index(&b->p, (size_t)i);
			return fail(b, TPS_ERR_INPUT,
				    "expected " TPS_PLACEMENT_FORMS);
		}
	}
	/* tps_dtensor_local_region asserts on blocks that do not divide. */
	if (tps_dtensor_check_placements(&b->tl.mesh, shape, placements,
					 &why) != TPS_OK) {
		return fail(b, TPS_ERR_INPUT, why.message);
	}
	tps_json_path_pop(&b->p, at);
	return TPS_OK;
}

/* The number of elements rank holds of a tensor laid out so, in *n;
 * fails at the event's global_shape (b->p is the event's path) when it
 * passes int64_t: the trace's sizes go up to 9e15 each. */
static enum tps_status local_numel(struct builder *b,
				   const struct tps_shape *shape,
				   const struct tps_placement *placements,
				   int rank, int64_t *n)
{
	int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
	char what[160], buf[128];
	tps_dtensor_local_region(&b->tl.mesh, shape, placements, rank, offset,
				 length);
	*n = 1;
	for (int d = 0; d < shape->ndim; d++) {
		if (__builtin_mul_overflow(*n, length[d], n)) {
			tps_json_path_push_key(&b->p, "global_shape");
			snprintf(what, sizeof what,
				 "rank %d's block of %s has more than 2^63 "
				 "elements",
				 rank,
				 tps_shape_format(shape, buf, sizeof buf));
			return fail(b, TPS_ERR_LIMIT, what);
		}
	}
	return TPS_OK;
}

static struct module_flops *find_module(struct builder *b, const char *module)
{
	for (int i = 0; i < b->n_mods; i++) {
		if (strcmp(b->mods[i].module, module) == 0) {
			return &b->mods[i];
		}
	}
	return NULL;
}

/*
 * A forward matmul's flops on each rank into b->flops and the module's
 * record: Y_r = X_r W_r^T with W_r (out_r, k_r) costs 2 numel(Y_r) k_r
 * (nn_linear.c's count). The path is the event's.
 */
static enum tps_status forward_matmul_flops(struct builder *b, const cJSON *ev,
					    const char *module)
{
	const struct tps_mesh *mesh = &b->tl.mesh;
	struct tps_json_path at = b->p;
	char key[TPS_NAME_MAX + 16];
	const cJSON *w;
	struct tps_shape y_shape, w_shape;
	struct tps_placement y_pl[TPS_MAX_MESH_DIMS], w_pl[TPS_MAX_MESH_DIMS];
	struct module_flops *mod;
	enum tps_status st = read_layout(b, ev, "global_shape", &y_shape, y_pl);

	if (st != TPS_OK) {
		return st;
	}
	snprintf(key, sizeof key, "%s.weight", module);
	w = member(member(b->trace, "params"), key);
	tps_json_path_init(&b->p);
	tps_json_path_push_key(&b->p, "params");
	tps_json_path_push_key(&b->p, key);
	if (!cJSON_IsObject(w)) {
		return fail(b, TPS_ERR_INPUT,
			    "missing (a matmul's flops need its module's "
			    "weight)");
	}
	st = read_layout(b, w, "shape", &w_shape, w_pl);
	if (st != TPS_OK) {
		return st;
	}
	if (w_shape.ndim != 2) {
		tps_json_path_push_key(&b->p, "shape");
		return fail(b, TPS_ERR_INPUT,
			    "expected a weight's (out_features, "
			    "in_features)");
	}
	mod = find_module(b, module);
	if (!mod) {
		if (b->n_mods == b->cap_mods) {
			int cap = b->cap_mods ? 2 * b->cap_mods : 16;
			struct module_flops *grown =
				realloc(b->mods, (size_t)cap * sizeof *grown);
			if (!grown) {
				return no_memory(b);
			}
			b->mods = grown;
			b->cap_mods = cap;
		}
		mod = &b->mods[b->n_mods];
		mod->module = module;
		mod->per_rank =
			calloc((size_t)mesh->world_size, sizeof *mod->per_rank);
		if (!mod->per_rank) {
			return no_memory(b);
		}
		b->n_mods++;
	}
	b->p = at;
	for (int r = 0; r < mesh->world_size; r++) {
		int64_t offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS], numel;
		tps_dtensor_local_region(mesh, &w_shape, w_pl, r, offset,
					 length);
		st = local_numel(b, &y_shape, y_pl, r, &numel);
		if (st != TPS_OK) {
			return st;
		}
		if (__builtin_mul_overflow(numel, length[1], &b->flops[r]) ||
		    __builtin_mul_overflow(b->flops[r], 2, &b->flops[r])) {
			char what[TPS_NAME_MAX + 160];
			tps_json_path_push_key(&b->p, "global_shape");
			snprintf(what, sizeof what,
				 "rank %d's matmul flops, 2 x %" PRId64
				 " elements x %" PRId64
				 " (its shard of /params/%s's in_features), "
				 "pass 2^63",
				 r, numel, length[1], key);
			return fail(b, TPS_ERR_LIMIT, what);
		}
		mod->per_rank[r] = b->flops[r];
	}
	return TPS_OK;
}

/* Whole nanoseconds of seconds, at least the least slice. */
static enum tps_status to_ns(struct builder *b, double seconds, int64_t *ns)
{
	double v = seconds * 1e9;
	if (!isfinite(v) || v > 1e18) {
		return fail(b, TPS_ERR_LIMIT,
			    "the event would last over 10^9 seconds");
	}
	*ns = (int64_t)llround(v);
	if (*ns < TPS_TIMELINE_MIN_NS) {
		*ns = TPS_TIMELINE_MIN_NS;
	}
	return TPS_OK;
}

/* Rank r's clock to start + dur, failing at the event's path when that
 * passes int64_t nanoseconds (each event lasts up to 10^18 ns). */
static enum tps_status advance_clock(struct builder *b, int r, int64_t start,
				     int64_t dur)
{
	char what[96];
	if (__builtin_add_overflow(start, dur, &b->clock[r])) {
		snprintf(what, sizeof what,
			 "rank %d's clock passes 2^63 ns (292 years) at this "
			 "event",
			 r);
		return fail(b, TPS_ERR_LIMIT, what);
	}
	return TPS_OK;
}

static void write_slice(FILE *out, const struct tps_timeline *tl,
			const struct tps_timeline_slice *s);

static enum tps_status add_slice(struct builder *b,
				 const struct tps_timeline_slice *s)
{
	if (b->out) {
		fputs(",\n", b->out); /* after the metadata: a step has one */
		write_slice(b->out, &b->tl, s);
		b->tl.n_slices++;
		return TPS_OK;
	}
	if (b->tl.n_slices == b->cap_slices) {
		size_t cap = b->cap_slices ? 2 * b->cap_slices : 1024;
		struct tps_timeline_slice *grown =
			realloc(b->tl.slices, cap * sizeof *grown);
		if (!grown) {
			return no_memory(b);
		}
		b->tl.slices = grown;
		b->cap_slices = cap;
	}
	b->tl.slices[b->tl.n_slices++] = *s;
	return TPS_OK;
}

/* A compute or layout event: every rank, on its own clock. */
static enum tps_status lay_local(struct builder *b, int index, const cJSON *ev,
				 const char *phase, const char *op,
				 const char *module)
{
	struct tps_timeline_event *e = &b->tl.events[index];
	struct tps_json_path at = b->p;
	enum tps_status st = TPS_OK;

	memset(b->flops, 0, (size_t)b->tl.mesh.world_size * sizeof *b->flops);
	if (e->kind == TPS_EVENT_COMPUTE && strcmp(op, "matmul") == 0) {
		if (strcmp(phase, "forward") == 0) {
			st = forward_matmul_flops(b, ev, module);
			b->p = at; /* it reads /params */
		} else {
			const struct module_flops *mod = find_module(b, module);
			if (!mod) {
				tps_json_path_push_key(&b->p, "op");
				return fail(b, TPS_ERR_INPUT,
					    "a backward matmul with no "
					    "forward matmul of its module "
					    "before it (it costs what the "
					    "forward did)");
			}
			memcpy(b->flops, mod->per_rank,
			       (size_t)b->tl.mesh.world_size *
				       sizeof *b->flops);
		}
	}
	for (int r = 0; st == TPS_OK && r < b->tl.mesh.world_size; r++) {
		struct tps_timeline_slice s = {
			index, r, -1, b->clock[r], 0, b->flops[r], 0, 0};
		if (!runs(b, r)) {
			continue;
		}
		st = to_ns(b, (double)s.flops / (b->tl.cost.tflops * 1e12),
			   &s.dur_ns);
		if (st == TPS_OK && b->slotted) {
			s.ts_ns = b->t0;
			s.dur_ns = b->t1 - b->t0;
		}
		if (st == TPS_OK) {
			st = advance_clock(b, r, s.ts_ns, s.dur_ns);
		}
		if (st == TPS_OK) {
			st = add_slice(b, &s);
		}
	}
	return st;
}

/*
 * Elements in and out per rank of a collective, as PyTorch's profiler
 * records the buffers DTensor hands to NCCL: all_gather in c, out n c;
 * reduce_scatter in n c, out c (c: the padded shard, bytes_per_rank /
 * 4 (n - 1)); all_to_all n c both ways (c: the largest block); broadcast
 * the buffer; all_reduce the rank's tensor both ways.
 */
static void nelems(const char *op, int n, int64_t bytes, int64_t local,
		   int64_t *in, int64_t *out)
{
	int64_t c = n > 1 ? bytes / 4 / (n - 1) : 0;
	if (strcmp(op, "all_gather") == 0) {
		*in = c;
		*out = c * n;
	} else if (strcmp(op, "reduce_scatter") == 0) {
		*in = c * n;
		*out = c;
	} else if (strcmp(op, "all_to_all") == 0) {
		*in = *out = c * n;
	} else if (strcmp(op, "broadcast") == 0) {
		*in = *out = bytes / 4;
	} else {
		*in = *out = local;
	}
}

/* A collective: each group starts when its last member arrives. */
static enum tps_status lay_collective(struct builder *b, int index,
				      const cJSON *ev, const char *op)
{
	const struct tps_mesh *mesh = &b->tl.mesh;
	const cJSON *dim = member(ev, "mesh_dim");
	const cJSON *groups = member(ev, "groups");
	const cJSON *g;
	struct tps_shape shape;
	struct tps_placement pl[TPS_MAX_MESH_DIMS];
	struct tps_link_spec link;
	int64_t bytes, local, *start, *dur;
	size_t at = b->p.len, groups_at;
	unsigned mask;
	int n_groups = cJSON_GetArraySize(groups), gi = 0;
	enum tps_status st;

	tps_json_path_push_key(&b->p, "mesh_dim");
	if (!cJSON_IsString(dim) || !(mask = mask_of(mesh, dim->valuestring))) {
		return fail(b, TPS_ERR_INPUT,
			    "expected a mesh dim's name, or dims' joined by "
			    "'_'");
	}
	tps_json_path_pop(&b->p, at);
	tps_json_path_push_key(&b->p, "bytes_per_rank");
	if (!whole_in(member(ev, "bytes_per_rank"), 0, 9e15, &bytes)) {
		return fail(b, TPS_ERR_INPUT, "expected a whole number from 0");
	}
	tps_json_path_pop(&b->p, at);
	st = read_layout(b, ev, "global_shape", &shape, pl);
	if (st != TPS_OK) {
		return st;
	}
	tps_json_path_push_key(&b->p, "groups");
	groups_at = b->p.len;
	if (!cJSON_IsArray(groups) || n_groups < 1 ||
	    n_groups > mesh->world_size) {
		return fail(b, TPS_ERR_INPUT, "expected groups of ranks");
	}
	for (int r = 0; r < mesh->world_size; r++) {
		b->group_of[r] = -1;
	}
	start = calloc((size_t)n_groups, sizeof *start);
	dur = calloc((size_t)n_groups, sizeof *dur);
	if (!start || !dur) {
		free(start);
		free(dur);
		return no_memory(b);
	}
	link = tps_cost_link_of(&b->tl.cost, mesh, mask);
	cJSON_ArrayForEach(g, groups)
	{
		const cJSON *m;
		int n = cJSON_GetArraySize(g), mi = 0;
		tps_json_path_push_index(&b->p, (size_t)gi);
		if (!cJSON_IsArray(g) || n < 1) {
			st = fail(b, TPS_ERR_INPUT,
				  "expected a group: an array of ranks");
			goto out;
		}
		cJSON_ArrayForEach(m, g)
		{
			int64_t r;
			if (!whole_in(m, 0, mesh->world_size - 1, &r) ||
			    b->group_of[r] >= 0) {
				char what[96];
				tps_json_path_push_index(&b->p, (size_t)mi);
				snprintf(what, sizeof what,
					 "expected a rank from 0 to %d in no "
					 "other group",
					 mesh->world_size - 1);
				st = fail(b, TPS_ERR_INPUT, what);
				goto out;
			}
			b->group_of[r] = gi;
			if (runs(b, (int)r)) {
				start[gi] = b->clock[r] > start[gi]
						    ? b->clock[r]
						    : start[gi];
			}
			mi++;
		}
		st = to_ns(b, tps_cost_collective_seconds(op, n, bytes, link),
			   &dur[gi]);
		if (st != TPS_OK) {
			goto out;
		}
		if (n > b->tl.events[index].group_size) {
			b->tl.events[index].group_size = n;
		}
		tps_json_path_pop(&b->p, groups_at);
		gi++;
	}
	for (int r = 0; r < mesh->world_size; r++) {
		int grp = b->group_of[r];
		struct tps_timeline_slice s = {index, r, grp, 0, 0, 0, 0, 0};
		if (grp < 0 || !runs(b, r)) {
			continue;
		}
		s.ts_ns = b->slotted ? b->t0 : start[grp];
		s.dur_ns = b->slotted ? b->t1 - b->t0 : dur[grp];
		tps_json_path_pop(&b->p, at);
		st = local_numel(b, &shape, pl, r, &local);
		if (st == TPS_OK) {
			nelems(op,
			       cJSON_GetArraySize(
				       cJSON_GetArrayItem(groups, grp)),
			       bytes, local, &s.in_nelems, &s.out_nelems);
			st = advance_clock(b, r, s.ts_ns, s.dur_ns);
		}
		if (st == TPS_OK) {
			st = add_slice(b, &s);
		}
		if (st != TPS_OK) {
			goto out;
		}
	}
out:
	free(start);
	free(dur);
	return st;
}

/* A string member of ev shorter than max bytes, or NULL after failing. */
static const char *read_name(struct builder *b, const cJSON *ev,
			     const char *key, size_t max)
{
	const cJSON *v = member(ev, key);
	size_t at = b->p.len;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= max) {
		char what[96];
		tps_json_path_push_key(&b->p, key);
		snprintf(what, sizeof what,
			 "expected a string of under %zu bytes", max);
		fail(b, TPS_ERR_INPUT, what);
		tps_json_path_pop(&b->p, at);
		return NULL;
	}
	return v->valuestring;
}

/* ---- a pipeline's trace ------------------------------------------------ */

/* /config/pipeline/dim: the pp dim, each rank's stage along it. A trace
 * without "pipeline" has none (tl.pp_dim -1). */
static enum tps_status read_pipeline(struct builder *b)
{
	const cJSON *pl = member(member(b->trace, "config"), "pipeline");
	const cJSON *dim = member(pl, "dim");
	int coord[TPS_MAX_MESH_DIMS], d;
	b->tl.pp_dim = -1;
	b->only_stage = -1;
	if (!pl) {
		return TPS_OK;
	}
	d = cJSON_IsString(dim)
		    ? tps_mesh_dim_index(&b->tl.mesh, dim->valuestring)
		    : -1;
	if (d < 0) {
		tps_json_path_init(&b->p);
		tps_json_path_push_key(&b->p, "config");
		tps_json_path_push_key(&b->p, "pipeline");
		tps_json_path_push_key(&b->p, "dim");
		return fail(b, TPS_ERR_INPUT, "expected a mesh dim's name");
	}
	b->stage_of =
		calloc((size_t)b->tl.mesh.world_size, sizeof *b->stage_of);
	if (!b->stage_of) {
		return no_memory(b);
	}
	for (int r = 0; r < b->tl.mesh.world_size; r++) {
		tps_mesh_coord_of(&b->tl.mesh, r, coord);
		b->stage_of[r] = coord[d];
	}
	b->tl.pp_dim = d;
	b->tl.pp = b->tl.mesh.shape[d];
	return TPS_OK;
}

/* ev's "stage" (-1 when it has none) and "slot" [*a, *b) (0, 0: none),
 * failing at the key that is wrong. */
static enum tps_status read_staging(struct builder *b, const cJSON *ev,
				    int *stage, int64_t *a, int64_t *e)
{
	const cJSON *v = member(ev, "stage"), *slot = member(ev, "slot");
	size_t at = b->p.len;
	int64_t x;
	*stage = -1;
	*a = *e = 0;
	if (v) {
		tps_json_path_push_key(&b->p, "stage");
		if (!whole_in(v, 0, b->tl.pp - 1, &x)) {
			return fail(b, TPS_ERR_INPUT,
				    "expected a stage, a whole number from 0 "
				    "below the pp dim's size");
		}
		tps_json_path_pop(&b->p, at);
		*stage = (int)x;
	}
	if (slot) {
		tps_json_path_push_key(&b->p, "slot");
		if (!v || !cJSON_IsArray(slot) ||
		    cJSON_GetArraySize(slot) != 2 ||
		    !whole_in(cJSON_GetArrayItem(slot, 0), 0,
			      TPS_PP_MAX_OPS_HALF * 4.0, a) ||
		    !whole_in(cJSON_GetArrayItem(slot, 1), 1,
			      TPS_PP_MAX_OPS_HALF * 4.0, e) ||
		    *e <= *a) {
			return fail(b, TPS_ERR_INPUT,
				    "expected [start, end], slots with start "
				    "< end, on an event with a stage");
		}
		tps_json_path_pop(&b->p, at);
	}
	return TPS_OK;
}

/* The microbatch or chunk of an event with a slot (0 when it has none:
 * the trace reader checked them). */
static int int_member(const cJSON *ev, const char *key)
{
	const cJSON *v = member(ev, key);
	return cJSON_IsNumber(v) ? (int)v->valuedouble : 0;
}

/* Before the layout: every operation of the schedule the events name by
 * their slots (the events of one operation share its window), each
 * step's last slot's end. */
static enum tps_status find_ops(struct builder *b, const cJSON *events)
{
	const cJSON *ev;
	size_t i = 0, cells;
	int max_step = -1;
	int64_t max_end = 0;

	/* The extent, then the index. */
	for (int pass = 0; pass < 2; pass++) {
		i = 0;
		cJSON_ArrayForEach(ev, events)
		{
			const cJSON *step = member(ev, "step");
			int stage;
			int64_t a, e, st64 = 0;
			enum tps_status st;
			tps_json_path_init(&b->p);
			tps_json_path_push_key(&b->p, "events");
			tps_json_path_push_index(&b->p, i++);
			if (!cJSON_IsObject(ev) || !step ||
			    !whole_in(step, 0, 1e6, &st64)) {
				continue; /* lay_event says what is wrong */
			}
			st = read_staging(b, ev, &stage, &a, &e);
			if (st != TPS_OK) {
				return st;
			}
			if (e == 0) {
				continue;
			}
			if (pass == 0) {
				max_step = (int)st64 > max_step ? (int)st64
								: max_step;
				max_end = e > max_end ? e : max_end;
			} else {
				size_t at = ((size_t)st64 * (size_t)b->tl.pp +
					     (size_t)stage) *
						    (size_t)b->slots +
					    (size_t)a;
				struct op_key *k;
				if (b->op_at[at] < 0) {
					k = &b->keys[b->n_keys];
					*k = (struct op_key){
						(int)st64,
						stage,
						int_member(ev, "chunk"),
						int_member(ev, "microbatch"),
						a,
						e,
						0,
						0};
					b->op_at[at] = b->n_keys++;
				}
				k = &b->keys[b->op_at[at]];
				k->n++;
				if (e > b->step_end[st64]) {
					b->step_end[st64] = e;
				}
			}
		}
		if (pass == 1 || max_step < 0) {
			break;
		}
		b->n_steps_seen = max_step + 1;
		b->slots = max_end + 1;
		cells = (size_t)b->n_steps_seen * (size_t)b->tl.pp *
			(size_t)b->slots;
		if (cells > ((size_t)1 << 28) / sizeof *b->op_at) {
			tps_json_path_init(&b->p);
			tps_json_path_push_key(&b->p, "events");
			return fail(b, TPS_ERR_LIMIT,
				    "the pipeline's steps x stages x slots "
				    "pass what the timeline lays out (2^26)");
		}
		b->op_at = malloc(cells * sizeof *b->op_at);
		b->keys = calloc(i + 1, sizeof *b->keys);
		b->step_end =
			calloc((size_t)b->n_steps_seen, sizeof *b->step_end);
		b->base = calloc((size_t)b->n_steps_seen, sizeof *b->base);
		if (!b->op_at || !b->keys || !b->step_end || !b->base) {
			return no_memory(b);
		}
		memset(b->op_at, 0xff, cells * sizeof *b->op_at);
	}
	return TPS_OK;
}

/*
 * A pipeline trace's event, before it is laid out: the stage whose ranks
 * run it, and for one with a slot its share of the operation's window.
 * At a new step, the step starts when every rank is done with the last;
 * at its first event without a slot (the optimizer's), every rank's
 * clock moves past the step's last operation.
 */
static enum tps_status place_staged(struct builder *b, const cJSON *ev,
				    int step)
{
	int stage;
	int64_t a, e;
	enum tps_status st = read_staging(b, ev, &stage, &a, &e);
	if (st != TPS_OK) {
		return st;
	}
	if (step != b->cur_step) {
		int64_t t = 0;
		for (int r = 0; r < b->tl.mesh.world_size; r++) {
			t = b->clock[r] > t ? b->clock[r] : t;
		}
		b->cur_step = step;
		b->flushed = false;
		if (step < b->n_steps_seen) {
			b->base[step] = t;
		}
	}
	b->only_stage = stage;
	b->slotted = e > 0;
	if (b->slotted) {
		struct op_key *k =
			&b->keys[b->op_at[((size_t)step * (size_t)b->tl.pp +
					   (size_t)stage) *
						  (size_t)b->slots +
					  (size_t)a]];
		int64_t w = (e - a) * TPS_TIMELINE_SLOT_NS;
		int64_t t = b->base[step] + a * TPS_TIMELINE_SLOT_NS;
		b->t0 = t + w * k->used / k->n;
		b->t1 = t + w * (k->used + 1) / k->n;
		k->used++;
	} else if (!b->flushed && step < b->n_steps_seen) {
		int64_t end = b->base[step] +
			      b->step_end[step] * TPS_TIMELINE_SLOT_NS;
		for (int r = 0; r < b->tl.mesh.world_size; r++) {
			b->clock[r] = b->clock[r] > end ? b->clock[r] : end;
		}
		b->flushed = true;
	}
	return TPS_OK;
}

/* Each operation, on each rank of its stage. */
static enum tps_status make_ops(struct builder *b)
{
	size_t n = 0;
	for (int k = 0; k < b->n_keys; k++) {
		for (int r = 0; r < b->tl.mesh.world_size; r++) {
			n += b->stage_of[r] == b->keys[k].stage;
		}
	}
	b->tl.ops = calloc(n ? n : 1, sizeof *b->tl.ops);
	if (!b->tl.ops) {
		return no_memory(b);
	}
	for (int k = 0; k < b->n_keys; k++) {
		const struct op_key *o = &b->keys[k];
		for (int r = 0; r < b->tl.mesh.world_size; r++) {
			if (b->stage_of[r] != o->stage) {
				continue;
			}
			b->tl.ops[b->tl.n_ops++] = (struct tps_timeline_op){
				o->step,
				r,
				o->stage,
				o->chunk,
				o->microbatch,
				o->end - o->start == TPS_PP_BACKWARD_SLOTS,
				b->base[o->step] +
					o->start * TPS_TIMELINE_SLOT_NS,
				(o->end - o->start) * TPS_TIMELINE_SLOT_NS};
		}
	}
	return TPS_OK;
}

void tps_timeline_bubble(const struct tps_timeline *tl, int step, int rank,
			 int64_t *busy, int64_t *idle)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN, mine = 0;
	for (size_t i = 0; i < tl->n_ops; i++) {
		const struct tps_timeline_op *o = &tl->ops[i];
		if (o->step != step) {
			continue;
		}
		lo = o->ts_ns < lo ? o->ts_ns : lo;
		hi = o->ts_ns + o->dur_ns > hi ? o->ts_ns + o->dur_ns : hi;
		mine += o->rank == rank ? o->dur_ns : 0;
	}
	*busy = mine;
	*idle = hi > lo ? hi - lo - mine : 0;
}

/* One event of the trace; setup events (no "step") are skipped. */
static enum tps_status lay_event(struct builder *b, const cJSON *ev)
{
	struct tps_timeline_event *e = &b->tl.events[b->tl.n_events];
	const cJSON *step = member(ev, "step");
	const char *kind, *phase, *module, *op;
	size_t at = b->p.len;
	int64_t v;
	enum tps_status st;

	if (!cJSON_IsObject(ev)) {
		return fail(b, TPS_ERR_INPUT, "expected an event object");
	}
	if (!step) {
		return TPS_OK;
	}
	tps_json_path_push_key(&b->p, "step");
	if (!whole_in(step, 0, 1e6, &v)) {
		return fail(b, TPS_ERR_INPUT,
			    "expected a whole number from 0 to 10^6");
	}
	tps_json_path_pop(&b->p, at);
	e->step = (int)v;
	tps_json_path_push_key(&b->p, "seq");
	if (!whole_in(member(ev, "seq"), 0, 9e15, &v)) {
		return fail(b, TPS_ERR_INPUT, "expected a whole number from 0");
	}
	tps_json_path_pop(&b->p, at);
	if (!(kind = read_name(b, ev, "kind", 32)) ||
	    !(phase = read_name(b, ev, "phase", 32)) ||
	    !(module = read_name(b, ev, "module", TPS_NAME_MAX)) ||
	    !(op = read_name(b, ev, "op", 64)) ||
	    !read_name(b, ev, "tensor", TPS_NAME_MAX + 16)) {
		return TPS_ERR_INPUT;
	}
	e->json = ev;
	e->group_size = 0;
	if (strcmp(kind, "compute") == 0) {
		e->kind = TPS_EVENT_COMPUTE;
	} else if (strcmp(kind, "collective") == 0) {
		e->kind = TPS_EVENT_COLLECTIVE;
	} else if (strcmp(kind, "layout") == 0) {
		e->kind = TPS_EVENT_LAYOUT;
	} else {
		tps_json_path_push_key(&b->p, "kind");
		return fail(b, TPS_ERR_INPUT,
			    "expected compute, collective or layout");
	}
	st = b->tl.pp_dim >= 0 ? place_staged(b, ev, e->step) : TPS_OK;
	if (st != TPS_OK) {
		return st;
	}
	st = e->kind == TPS_EVENT_COLLECTIVE
		     ? lay_collective(b, b->tl.n_events, ev, op)
		     : lay_local(b, b->tl.n_events, ev, phase, op, module);
	if (st == TPS_OK) {
		b->tl.n_events++;
		if (e->step + 1 > b->tl.n_steps) {
			b->tl.n_steps = e->step + 1;
		}
	}
	return st;
}

static void write_head(FILE *out, const struct tps_timeline *tl);
static void write_tail(FILE *out, const struct tps_timeline *tl);

/* The highest "step" + 1 over the events: what lay_event makes n_steps
 * when every event lays out. */
static int count_steps(const cJSON *events)
{
	const cJSON *ev;
	int n = 0;
	cJSON_ArrayForEach(ev, events)
	{
		int64_t v;
		if (cJSON_IsObject(ev) &&
		    whole_in(member(ev, "step"), 0, 1e6, &v) && v >= n) {
			n = (int)v + 1;
		}
	}
	return n;
}

/*
 * Lays out b->trace into b->tl. With b->out, writes it there too: each
 * slice as it is laid out, after metadata that needs n_steps first
 * (count_steps); a pipeline's trace keeps its slices and is written at
 * the end, as its operations, written before them, are known only then.
 */
static enum tps_status build(struct builder *b)
{
	const cJSON *events = member(b->trace, "events"), *ev;
	FILE *out = b->out;
	size_t world, i = 0;
	enum tps_status st;

	b->out = NULL;
	b->cur_step = -1;
	st = read_mesh(b);
	if (st == TPS_OK) {
		st = read_cost(b);
	}
	if (st == TPS_OK) {
		st = read_pipeline(b);
	}
	if (st == TPS_OK && b->tl.pp_dim >= 0 && cJSON_IsArray(events)) {
		st = find_ops(b, events);
	}
	if (st == TPS_OK && !cJSON_IsArray(events)) {
		tps_json_path_init(&b->p);
		tps_json_path_push_key(&b->p, "events");
		st = fail(b, TPS_ERR_INPUT, "expected an array of events");
	}
	if (st != TPS_OK) {
		return st;
	}
	world = (size_t)b->tl.mesh.world_size;
	b->tl.events = calloc((size_t)cJSON_GetArraySize(events) + 1,
			      sizeof *b->tl.events);
	b->clock = calloc(world, sizeof *b->clock);
	b->group_of = calloc(world, sizeof *b->group_of);
	b->flops = calloc(world, sizeof *b->flops);
	if (!b->tl.events || !b->clock || !b->group_of || !b->flops) {
		return no_memory(b);
	}
	if (out && b->tl.pp_dim < 0) {
		b->out = out;
		b->tl.n_steps = count_steps(events);
		write_head(out, &b->tl);
	}
	cJSON_ArrayForEach(ev, events)
	{
		tps_json_path_init(&b->p);
		tps_json_path_push_key(&b->p, "events");
		tps_json_path_push_index(&b->p, i++);
		st = lay_event(b, ev);
		if (st != TPS_OK) {
			return st;
		}
	}
	if (b->tl.pp_dim >= 0) {
		st = make_ops(b);
	}
	if (st == TPS_OK && out) {
		if (b->out) {
			write_tail(out, &b->tl);
		} else {
			tps_timeline_write_json(out, &b->tl);
		}
	}
	return st;
}

/* Frees the builder's scratch: all but b->tl. */
static void builder_free(struct builder *b)
{
	free(b->stage_of);
	free(b->op_at);
	free(b->keys);
	free(b->step_end);
	free(b->base);
	free(b->clock);
	free(b->group_of);
	free(b->flops);
	for (int m = 0; m < b->n_mods; m++) {
		free(b->mods[m].per_rank);
	}
	free(b->mods);
}

/* Lays trace out, writing its slices to out as they come (out NULL:
 * keeping them, in *tl). On error *tl is untouched. */
static enum tps_status lay_out(struct tps_timeline *tl, FILE *out,
			       const cJSON *trace, const char *trace_name,
			       struct tps_error *err)
{
	struct builder b = {0};
	enum tps_status st;

	b.trace = trace;
	b.name = trace_name;
	b.err = err;
	b.out = out;
	st = build(&b);
	builder_free(&b);
	if (st != TPS_OK || !tl) {
		tps_timeline_free(&b.tl);
		return st;
	}
	*tl = b.tl;
	return TPS_OK;
}

enum tps_status tps_timeline_build(struct tps_timeline *tl, const cJSON *trace,
				   const char *trace_name,
				   struct tps_error *err)
{
	return lay_out(tl, NULL, trace, trace_name, err);
}

enum tps_status tps_timeline_stream_json(FILE *out, const cJSON *trace,
					 const char *trace_name,
					 struct tps_error *err)
{
	return lay_out(NULL, out, trace, trace_name, err);
}

void tps_timeline_free(struct tps_timeline *tl)
{
	if (!tl) {
		return;
	}
	free(tl->events);
	free(tl->slices);
	free(tl->ops);
	memset(tl, 0, sizeof *tl);
}

/* PyTorch's ProcessGroupNCCL names (its RECORD_PARAM_COMMS_DATA calls):
 * docs/timeline.md. */
const char *tps_timeline_collective_name(const char *op)
{
	static const char *const names[][2] = {
		{"all_reduce", "allreduce"},
		{"all_gather", "all_gather"},
		{"reduce_scatter", "reduce_scatter"},
		{"all_to_all", "all_to_all"},
		{"broadcast", "broadcast"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(op, names[i][0]) == 0) {
			return names[i][1];
		}
	}
	return op;
}

/* Microseconds, the format's unit, from whole ns: "12.345". */
static void write_us(FILE *out, int64_t ns)
{
	fprintf(out, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

static void write_metadata(FILE *out, const struct tps_timeline *tl)
{
	const struct tps_mesh *mesh = &tl->mesh;
	for (int s = 0; s < tl->n_steps; s++) {
		fprintf(out,
			"%s{\"name\":\"process_name\",\"ph\":\"M\","
			"\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"step "
			"%d\"}}",
			s ? ",\n" : "", s + 1, s);
		fprintf(out,
			",\n{\"name\":\"process_sort_index\",\"ph\":\"M\","
			"\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}",
			s + 1, s + 1);
		for (int r = 0; r < mesh->world_size; r++) {
			char name[TPS_MAX_MESH_DIMS * (TPS_MESH_NAME_MAX + 16) +
				  32];
			int coord[TPS_MAX_MESH_DIMS];
			size_t len;
			tps_mesh_coord_of(mesh, r, coord);
			len = (size_t)snprintf(name, sizeof name, "rank %d (",
					       r);
			for (int d = 0; d < mesh->ndim; d++) {
				len += (size_t)snprintf(
					name + len, sizeof name - len,
					"%s%s=%d", d ? ", " : "",
					mesh->dim_names[d], coord[d]);
			}
			snprintf(name + len, sizeof name - len, ")");
			fprintf(out,
				",\n{\"name\":\"thread_name\",\"ph\":\"M\","
				"\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
				s + 1, r);
			tps_json_write_string(out, name);
			fprintf(out,
				"}},\n{\"name\":\"thread_sort_index\","
				"\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":"
				"{\"sort_index\":%d}}",
				s + 1, r, r);
		}
	}
}

/* ,"key":<the event's value>, when the event has one. */
static void copy_member(FILE *out, const cJSON *ev, const char *key)
{
	const cJSON *v = member(ev, key);
	if (v) {
		fprintf(out, ",\"%s\":", key);
		tps_json_write_value(out, v);
	}
}

static void write_slice(FILE *out, const struct tps_timeline *tl,
			const struct tps_timeline_slice *s)
{
	const struct tps_timeline_event *e = &tl->events[s->event];
	const cJSON *ev = e->json;
	const char *module = member(ev, "module")->valuestring;
	const char *op = member(ev, "op")->valuestring;
	char name[TPS_NAME_MAX + 72];

	snprintf(name, sizeof name, "%s %s", module, op);
	fputs("{\"name\":", out);
	tps_json_write_string(out, name);
	fputs(",\"cat\":", out);
	tps_json_write_string(out, member(ev, "phase")->valuestring);
	fprintf(out, ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", e->step + 1,
		s->rank);
	write_us(out, s->ts_ns);
	fputs(",\"dur\":", out);
	write_us(out, s->dur_ns);
	fputs(",\"args\":{", out);
	fprintf(out, "\"seq\":%" PRId64 ",\"kind\":\"%s\"",
		(int64_t)member(ev, "seq")->valuedouble,
		tps_event_kind_names[e->kind]);
	copy_member(out, ev, "module");
	copy_member(out, ev, "op");
	copy_member(out, ev, "tensor");
	copy_member(out, ev, "mesh_dim");
	copy_member(out, ev, "placements");
	copy_member(out, ev, "global_shape");
	if (e->kind == TPS_EVENT_COMPUTE) {
		fprintf(out, ",\"flops\":%" PRId64, s->flops);
	}
	if (e->kind == TPS_EVENT_COLLECTIVE) {
		const cJSON *group =
			cJSON_GetArrayItem(member(ev, "groups"), s->group);
		const cJSON *m;
		bool first = true;
		copy_member(out, ev, "bytes_per_rank");
		fputs(",\"Collective name\":", out);
		tps_json_write_string(out, tps_timeline_collective_name(op));
		fprintf(out,
			",\"Group size\":%d,\"In msg nelems\":%" PRId64
			",\"Out msg nelems\":%" PRId64
			",\"dtype\":\"Float\",\"Process Group Ranks\":\"[",
			cJSON_GetArraySize(group), s->in_nelems, s->out_nelems);
		cJSON_ArrayForEach(m, group)
		{
			fprintf(out, "%s%d", first ? "" : ", ",
				(int)m->valuedouble);
			first = false;
		}
		fputs("]\"", out);
	}
	copy_member(out, ev, "mistake");
	copy_member(out, ev, "note");
	copy_member(out, ev, "recompute");
	fputs("}}", out);
}

/* A pipeline's operation: a slice around its events. */
static void write_op(FILE *out, const struct tps_timeline_op *o)
{
	fprintf(out,
		"{\"name\":\"%s mb %d chunk %d\",\"cat\":\"pipeline\","
		"\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":",
		o->backward ? "backward" : "forward", o->microbatch, o->chunk,
		o->step + 1, o->rank);
	write_us(out, o->ts_ns);
	fputs(",\"dur\":", out);
	write_us(out, o->dur_ns);
	fprintf(out,
		",\"args\":{\"stage\":%d,\"chunk\":%d,\"microbatch\":%d,"
		"\"slots\":%" PRId64 "}}",
		o->stage, o->chunk, o->microbatch,
		o->dur_ns / TPS_TIMELINE_SLOT_NS);
}

/* ,"pipeline":{...}: the pp dim, the slot, and each stage's bubble in
 * step 0, measured on its first rank. */
static void write_pipeline(FILE *out, const struct tps_timeline *tl)
{
	fputs(",\"pipeline\":{\"dim\":", out);
	tps_json_write_string(out, tl->mesh.dim_names[tl->pp_dim]);
	fprintf(out,
		",\"slot_ns\":%d,\"time_model\":\"the schedule's unit slots: "
		"a forward of one microbatch on one chunk 1 slot, its "
		"backward 2; each operation's events share its window "
		"evenly; the optimizer's events follow on the alpha-beta "
		"model\",\"bubble_step_0\":[",
		TPS_TIMELINE_SLOT_NS);
	for (int s = 0; s < tl->pp; s++) {
		int r = 0;
		int64_t busy, idle;
		int coord[TPS_MAX_MESH_DIMS];
		for (r = 0; r < tl->mesh.world_size; r++) {
			tps_mesh_coord_of(&tl->mesh, r, coord);
			if (coord[tl->pp_dim] == s) {
				break;
			}
		}
		tps_timeline_bubble(tl, 0, r, &busy, &idle);
		fprintf(out,
			"%s{\"stage\":%d,\"rank\":%d,\"busy_slots\":%" PRId64
			",\"idle_slots\":%" PRId64 "}",
			s ? "," : "", s, r, busy / TPS_TIMELINE_SLOT_NS,
			idle / TPS_TIMELINE_SLOT_NS);
	}
	fputs("]}", out);
}

/* {"traceEvents":[ up to the slices: the metadata, a pipeline's
 * operations. */
static void write_head(FILE *out, const struct tps_timeline *tl)
{
	fputs("{\"traceEvents\":[\n", out);
	write_metadata(out, tl);
	for (size_t i = 0; i < tl->n_ops; i++) {
		fputs(",\n", out);
		write_op(out, &tl->ops[i]);
	}
}

/* After the slices: the end of traceEvents, and the rest. */
static void write_tail(FILE *out, const struct tps_timeline *tl)
{
	char num[TPS_NUMFMT_MAX];
	fputs("\n],\n", out);
	fputs("\"displayTimeUnit\":\"ns\",\n", out);
	fputs("\"otherData\":{\"generator\":\"tpsim " TPS_VERSION "\"", out);
	fputs(",\"time_model\":\"alpha-beta, per-rank clocks: a compute "
	      "event takes its flops / device FLOP/s (at least 1 ns), a "
	      "collective starts when its group's last rank arrives and "
	      "takes ring steps * latency + bytes per rank / bandwidth; "
	      "nothing overlaps\"",
	      out);
	if (tl->pp_dim >= 0) {
		write_pipeline(out, tl);
	}
	fputs(",\"links\":{", out);
	for (int d = 0; d < tl->mesh.ndim; d++) {
		fputs(d ? "," : "", out);
		tps_json_write_string(out, tl->mesh.dim_names[d]);
		tps_format_double(tl->cost.links[d].gbps, num);
		fprintf(out, ":{\"GBps\":%s", num);
		tps_format_double(tl->cost.links[d].latency_us, num);
		fprintf(out, ",\"latency_us\":%s}", num);
	}
	tps_format_double(tl->cost.tflops, num);
	fprintf(out, "},\"device\":{\"TFLOPS\":%s}}\n}\n", num);
}

void tps_timeline_write_json(FILE *out, const struct tps_timeline *tl)
{
	write_head(out, tl);
	for (size_t i = 0; i < tl->n_slices; i++) {
		fputs(",\n", out); /* after the metadata: a step has slices */
		write_slice(out, tl, &tl->slices[i]);
	}
	write_tail(out, tl);
}
