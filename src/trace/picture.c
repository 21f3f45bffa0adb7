/*
 * Sharding pictures, the geometry: which ranks hold which block of one
 * event's tensor, from the trace's mesh and the event's placements and
 * global shape (the chunk rule of dtensor.h, not re-derived here).
 */
#include "picture.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "trace.h"

/* "t.json: /events/3/placements/0: <what>" */
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

static enum tps_status read_event(struct tps_picture *pic, const cJSON *ev,
				  const char *trace_name, int index,
				  struct tps_error *err)
{
	const cJSON *tensor = cJSON_GetObjectItemCaseSensitive(ev, "tensor");
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(ev, "seq");
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(ev, "op");
	const cJSON *shape =
		cJSON_GetObjectItemCaseSensitive(ev, "global_shape");
	const cJSON *placements =
		cJSON_GetObjectItemCaseSensitive(ev, "placements");
	struct tps_json_path p;
	struct tps_error why = {0};
	size_t at;
	int64_t v;
	int n;

	tps_json_path_init(&p);
	tps_json_path_push_key(&p, "events");
	tps_json_path_push_index(&p, (size_t)index);
	at = p.len;
	if (!cJSON_IsObject(ev)) {
		return bad_input(err, trace_name, &p,
				 "expected an event object");
	}
	tps_json_path_push_key(&p, "tensor");
	if (!cJSON_IsString(tensor) ||
	    strlen(tensor->valuestring) >= sizeof pic->tensor) {
		return bad_input(err, trace_name, &p,
				 "expected the name of a tensor");
	}
	snprintf(pic->tensor, sizeof pic->tensor, "%s", tensor->valuestring);
	tps_json_path_pop(&p, at);
	tps_json_path_push_key(&p, "seq");
	if (!whole_in(seq, 0, 1e15, &v)) {
		return bad_input(err, trace_name, &p,
				 "expected a whole number from 0");
	}
	pic->seq = (long long)v;
	snprintf(pic->op, sizeof pic->op, "%s",
		 cJSON_IsString(op) ? op->valuestring : "?");
	tps_json_path_pop(&p, at);
	tps_json_path_push_key(&p, "global_shape");
	n = cJSON_GetArraySize(shape);
	if (!cJSON_IsArray(shape) || n > TPS_MAX_DIMS) {
		return bad_input(err, trace_name, &p,
				 "expected 0 to 4 sizes (the event's global "
				 "shape)");
	}
	pic->global.ndim = n;
	for (int d = 0; d < n; d++) {
		if (!whole_in(cJSON_GetArrayItem(shape, d), 0,
			      (double)TPS_MAX_ELEMENTS, &pic->global.dim[d])) {
			tps_json_path_push_index(&p, (size_t)d);
			return bad_input(err, trace_name, &p,
					 "expected a size from 0 to 2^31");
		}
	}
	tps_json_path_pop(&p, at);
	tps_json_path_push_key(&p, "placements");
	if (!cJSON_IsArray(placements) ||
	    cJSON_GetArraySize(placements) != pic->mesh.ndim) {
		char what[128];
		snprintf(what, sizeof what,
			 "expected one placement per mesh dim (%d)",
			 pic->mesh.ndim);
		return bad_input(err, trace_name, &p, what);
	}
	for (int i = 0; i < pic->mesh.ndim; i++) {
		const cJSON *s = cJSON_GetArrayItem(placements, i);
		if (!cJSON_IsString(s) ||
		    !tps_placement_parse(s->valuestring, n,
					 &pic->placements[i])) {
			tps_json_path_push_index(&p, (size_t)i);
			return bad_input(err, trace_name, &p,
					 "expected " TPS_PLACEMENT_FORMS);
		}
	}
	/* Blocks that do not divide what they chunk have no regions. */
	if (tps_dtensor_check_placements(&pic->mesh, &pic->global,
					 pic->placements, &why) != TPS_OK) {
		return bad_input(err, trace_name, &p, why.message);
	}
	return TPS_OK;
}

/* DistributedSampler's rows are strided over dp (model.c): a dp shard of
 * dim 0 holds consecutive positions of the sampler's order, not
 * consecutive samples. */
static bool rows_in_sampler_order(const struct tps_picture *pic,
				  const cJSON *trace)
{
	const cJSON *config = cJSON_GetObjectItemCaseSensitive(trace, "config");
	const cJSON *sampler =
		cJSON_GetObjectItemCaseSensitive(config, "sampler");
	const cJSON *tp = cJSON_GetObjectItemCaseSensitive(config, "tp_dim");
	if (!cJSON_IsString(sampler) ||
	    strcmp(sampler->valuestring, "distributed") != 0) {
		return false;
	}
	for (int i = 0; i < pic->mesh.ndim; i++) {
		if (pic->placements[i].kind == TPS_PLACEMENT_SHARD &&
		    pic->placements[i].dim == 0 &&
		    !(cJSON_IsString(tp) &&
		      strcmp(tp->valuestring, pic->mesh.dim_names[i]) == 0)) {
			return true;
		}
	}
	return false;
}

static int lead_dims(const struct tps_shape *s)
{
	return s->ndim > 2 ? s->ndim - 2 : 0;
}

static int compare_panels(const struct tps_picture_panel *a,
			  const struct tps_picture_panel *b, int lead)
{
	for (int d = 0; d < lead; d++) {
		if (a->offset[d] != b->offset[d]) {
			return a->offset[d] < b->offset[d] ? -1 : 1;
		}
	}
	return 0;
}

/* Each non-empty block's panel: the distinct leading-dims ranges, in
 * ascending order. The ranges of one dim partition it (chunks of chunks),
 * so equal offsets mean equal ranges. */
static void assign_panels(struct tps_picture *pic)
{
	int lead = lead_dims(&pic->global);
	pic->n_panels = 0;
	for (int b = 0; b < pic->n_blocks; b++) {
		struct tps_picture_block *blk = &pic->blocks[b];
		struct tps_picture_panel cand = {{0}, {0}};
		int at = 0;
		blk->panel = -1;
		if (blk->empty) {
			continue;
		}
		for (int d = 0; d < lead; d++) {
			cand.offset[d] = blk->offset[d];
			cand.length[d] = blk->length[d];
		}
		while (at < pic->n_panels &&
		       compare_panels(&pic->panels[at], &cand, lead) < 0) {
			at++;
		}
		if (at < pic->n_panels &&
		    compare_panels(&pic->panels[at], &cand, lead) == 0) {
			continue;
		}
		memmove(&pic->panels[at + 1], &pic->panels[at],
			(size_t)(pic->n_panels - at) * sizeof *pic->panels);
		pic->panels[at] = cand;
		pic->n_panels++;
	}
	for (int b = 0; b < pic->n_blocks; b++) {
		struct tps_picture_block *blk = &pic->blocks[b];
		struct tps_picture_panel key = {{0}, {0}};
		if (blk->empty) {
			continue;
		}
		for (int d = 0; d < lead; d++) {
			key.offset[d] = blk->offset[d];
		}
		for (int q = 0; q < pic->n_panels; q++) {
			if (compare_panels(&pic->panels[q], &key, lead) == 0) {
				blk->panel = q;
			}
		}
	}
}

/*
 * Blocks: rank r belongs to the block of its coordinates on the shard
 * mesh dims (key = those coordinates in mixed radix). Blocks are numbered
 * in order of their first rank, and their ranks listed ascending.
 */
static enum tps_status make_blocks(struct tps_picture *pic,
				   struct tps_error *err)
{
	const struct tps_mesh *m = &pic->mesh;
	int *block_of_key = malloc((size_t)m->world_size * sizeof(int));
	int *block_of_rank = malloc((size_t)m->world_size * sizeof(int));
	int *fill = NULL;
	enum tps_status st = TPS_OK;

	pic->blocks = calloc((size_t)m->world_size, sizeof *pic->blocks);
	pic->panels = calloc((size_t)m->world_size, sizeof *pic->panels);
	pic->ranks = malloc((size_t)m->world_size * sizeof(int));
	fill = calloc((size_t)m->world_size, sizeof(int));
	if (!block_of_key || !block_of_rank || !pic->blocks || !pic->panels ||
	    !pic->ranks || !fill) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < m->world_size; k++) {
		block_of_key[k] = -1;
	}
	for (int r = 0; r < m->world_size; r++) {
		int coord[TPS_MAX_MESH_DIMS], key = 0;
		tps_mesh_coord_of(m, r, coord);
		for (int i = 0; i < m->ndim; i++) {
			if (pic->placements[i].kind == TPS_PLACEMENT_SHARD) {
				key = key * m->shape[i] + coord[i];
			}
		}
		if (block_of_key[key] < 0) {
			struct tps_picture_block *blk =
				&pic->blocks[pic->n_blocks];
			block_of_key[key] = pic->n_blocks++;
			tps_dtensor_local_region(m, &pic->global,
						 pic->placements, r,
						 blk->offset, blk->length);
			for (int i = 0; i < m->ndim; i++) {
				blk->coord[i] =
					pic->placements[i].kind ==
							TPS_PLACEMENT_SHARD
						? coord[i]
						: -1;
			}
			for (int d = 0; d < pic->global.ndim; d++) {
				blk->empty = blk->empty || blk->length[d] == 0;
			}
		}
		block_of_rank[r] = block_of_key[key];
		pic->blocks[block_of_rank[r]].n_ranks++;
	}
	for (int b = 1; b < pic->n_blocks; b++) {
		pic->blocks[b].first =
			pic->blocks[b - 1].first + pic->blocks[b - 1].n_ranks;
	}
	for (int r = 0; r < m->world_size; r++) {
		int b = block_of_rank[r];
		pic->ranks[pic->blocks[b].first + fill[b]++] = r;
	}
	assign_panels(pic);
out:
	free(block_of_key);
	free(block_of_rank);
	free(fill);
	return st;
}

/* Every rank's shape in the event must be its block's: a trace whose
 * shapes disagree with its placements cannot be pictured honestly. */
static enum tps_status check_rank_shapes(const struct tps_picture *pic,
					 const cJSON *ev,
					 const char *trace_name, int index,
					 struct tps_error *err)
{
	const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(ev, "ranks");
	const cJSON *entry;
	size_t j = 0;
	cJSON_ArrayForEach(entry, ranks)
	{
		const cJSON *rank =
			cJSON_GetObjectItemCaseSensitive(entry, "rank");
		const cJSON *shape =
			cJSON_GetObjectItemCaseSensitive(entry, "shape");
		int64_t r, offset[TPS_MAX_DIMS], length[TPS_MAX_DIMS];
		bool same;
		struct tps_json_path p;
		char want[128], what[512];
		struct tps_shape expected;

		tps_json_path_init(&p);
		tps_json_path_push_key(&p, "events");
		tps_json_path_push_index(&p, (size_t)index);
		tps_json_path_push_key(&p, "ranks");
		tps_json_path_push_index(&p, j++);
		if (!whole_in(rank, 0, pic->mesh.world_size - 1, &r)) {
			tps_json_path_push_key(&p, "rank");
			return bad_input(err, trace_name, &p,
					 "expected a rank of the mesh");
		}
		tps_dtensor_local_region(&pic->mesh, &pic->global,
					 pic->placements, (int)r, offset,
					 length);
		expected = tps_shape_make(pic->global.ndim, length);
		same = cJSON_IsArray(shape) &&
		       cJSON_GetArraySize(shape) == pic->global.ndim;
		for (int d = 0; same && d < pic->global.ndim; d++) {
			const cJSON *v = cJSON_GetArrayItem(shape, d);
			same = cJSON_IsNumber(v) &&
			       v->valuedouble == (double)length[d];
		}
		if (!same) {
			char *got = cJSON_PrintUnformatted(shape);
			tps_json_path_push_key(&p, "shape");
			snprintf(what, sizeof what,
				 "expected %s, the block the placements give "
				 "rank %lld, got %.64s",
				 tps_shape_format(&expected, want, sizeof want),
				 (long long)r, got ? got : "?");
			free(got);
			return bad_input(err, trace_name, &p, what);
		}
	}
	return TPS_OK;
}

enum tps_status tps_picture_from_event(struct tps_picture *pic,
				       const cJSON *trace,
				       const char *trace_name, int event_index,
				       struct tps_error *err)
{
	struct tps_picture p = {0};
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(trace, "events");
	const cJSON *ev = cJSON_GetArrayItem(events, event_index);
	enum tps_status st =
		tps_trace_read_mesh(&p.mesh, trace, trace_name, err);

	if (st == TPS_OK) {
		st = read_event(&p, ev, trace_name, event_index, err);
	}
	if (st == TPS_OK) {
		st = check_rank_shapes(&p, ev, trace_name, event_index, err);
	}
	if (st == TPS_OK) {
		p.sampler_order = rows_in_sampler_order(&p, trace);
		st = make_blocks(&p, err);
	}
	if (st != TPS_OK) {
		tps_picture_free(&p);
		return st;
	}
	*pic = p;
	return TPS_OK;
}

void tps_picture_free(struct tps_picture *pic)
{
	if (!pic) {
		return;
	}
	free(pic->blocks);
	free(pic->panels);
	free(pic->ranks);
	pic->blocks = NULL;
	pic->panels = NULL;
	pic->ranks = NULL;
	pic->n_blocks = 0;
	pic->n_panels = 0;
}

int tps_picture_first_event(const cJSON *trace, const char *tensor)
{
	const cJSON *ev;
	int i = 0;
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "events"))
	{
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(ev, "tensor");
		if (cJSON_IsString(t) && strcmp(t->valuestring, tensor) == 0) {
			return i;
		}
		i++;
	}
	return -1;
}

int tps_picture_event_of_seq(const cJSON *trace, long long seq)
{
	const cJSON *ev;
	int i = 0;
	cJSON_ArrayForEach(ev,
			   cJSON_GetObjectItemCaseSensitive(trace, "events"))
	{
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(ev, "seq");
		if (cJSON_IsNumber(s) && s->valuedouble == (double)seq) {
			return i;
		}
		i++;
	}
	return -1;
}

enum tps_status tps_picture_select(const cJSON *trace, const char *trace_name,
				   const char *tensor, long long seq,
				   int *event_index, struct tps_error *err)
{
	char esc[256], got[256];
	const cJSON *t;
	int index;

	tps_json_escape_for_message(tensor, esc, sizeof esc);
	if (seq < 0) {
		index = tps_picture_first_event(trace, tensor);
		if (index < 0) {
			return tps_error_set_at(
				err, TPS_ERR_INPUT, trace_name, "/events",
				"no event produces the tensor \"%s\"", esc);
		}
		*event_index = index;
		return TPS_OK;
	}
	index = tps_picture_event_of_seq(trace, seq);
	if (index < 0) {
		return tps_error_set_at(err, TPS_ERR_INPUT, trace_name,
					"/events",
					"no event has seq %lld (--event)", seq);
	}
	t = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(trace, "events"),
			index),
		"tensor");
	if (!cJSON_IsString(t) || strcmp(t->valuestring, tensor) != 0) {
		char pointer[64];
		snprintf(pointer, sizeof pointer, "/events/%d/tensor", index);
		return tps_error_set_at(
			err, TPS_ERR_INPUT, trace_name, pointer,
			"event %lld produces \"%s\", not \"%s\" (--tensor)",
			seq,
			cJSON_IsString(t)
				? tps_json_escape_for_message(t->valuestring,
							      got, sizeof got)
				: "no tensor",
			esc);
	}
	*event_index = index;
	return TPS_OK;
}
