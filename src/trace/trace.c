#define _GNU_SOURCE /* fopencookie */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* For XXH3_state_t on the stack (no allocation that could fail). */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "arith.h"
#include "jsonio.h"
#include "numfmt.h"
#include "optim.h"
#include "pool.h"
#include "rng.h"
#include "tps_version.h"

static const char *const tally_sections[] = {"by_op", "by_phase", "by_module",
					     "by_mesh_dim"};

void tps_trace_init(struct tps_trace *t, FILE *out,
		    enum tps_trace_values values, const struct tps_mesh *mesh)
{
	memset(t, 0, sizeof *t);
	t->out = out;
	t->values = values;
	t->mesh = mesh;
	t->first_event = true;
}

void tps_trace_init_estimate(struct tps_trace *t, FILE *out,
			     enum tps_trace_values values,
			     const struct tps_mesh *mesh, bool as_values)
{
	tps_trace_init(t, out, values, mesh);
	t->estimate = true;
	t->as_values = as_values;
}

static ssize_t count_bytes(void *cookie, const char *buf, size_t size)
{
	int64_t *n = cookie;
	(void)buf;
	*n = tps_sat_add(*n, (int64_t)size);
	return (ssize_t)size;
}

FILE *tps_trace_counter_open(int64_t *count)
{
	cookie_io_functions_t io = {NULL, count_bytes, NULL, NULL};
	return fopencookie(count, "w", io);
}

void tps_trace_set_budget(struct tps_trace *t, int64_t budget, bool values)
{
	t->budget = budget;
	t->as_values = values;
}

/* After an event: past the budget, the rest goes to a counter. Without
 * memory for it, the trace goes on being written (tps_trace_size tells). */
static void check_budget(struct tps_trace *t)
{
	long at;
	if (t->budget <= 0 || t->counter || t->estimate) {
		return;
	}
	at = ftell(t->out);
	if (at < 0 || (int64_t)at <= t->budget) {
		return;
	}
	t->counter = tps_trace_counter_open(&t->counted);
	if (t->counter) {
		fflush(t->out);
		t->counted_from = (int64_t)at;
		t->out = t->counter;
		t->estimate = true;
	}
}

int64_t tps_trace_size(struct tps_trace *t)
{
	long at;
	fflush(t->out);
	if (t->counter) {
		return tps_sat_add(tps_sat_add(t->counted_from, t->counted),
				   t->bound_bytes);
	}
	at = ftell(t->out);
	return at < 0 ? 0 : tps_sat_add((int64_t)at, t->bound_bytes);
}

int64_t tps_trace_values_bound(enum tps_trace_values values,
			       const struct tps_shape *shape)
{
	const int64_t f = TPS_NUMFMT_FLOAT_LEN_MAX;
	int64_t n = 1, arrays = 0, level = 1;
	for (int d = 0; d < shape->ndim; d++) {
		n = tps_sat_mul(n, shape->dim[d]);
	}
	switch (values) {
	case TPS_TRACE_VALUES_NONE: return 0;
	case TPS_TRACE_VALUES_SUMMARY:
		/* ,"min":F,"max":F,"mean":F (not when empty) ,"hash":"16" */
		return (n > 0 ? 7 + 7 + 8 + 3 * f : 0) + 9 + 16 + 1;
	case TPS_TRACE_VALUES_FULL: break;
	}
	if (n == 0) {
		return 10 + 2; /* ,"values":[] */
	}
	if (shape->ndim == 0) {
		return 10 + f;
	}
	/* Level d holds d0 x ... x d(d-1) arrays, each a pair of brackets;
	 * the commas between values and between arrays are n - 1 in all. */
	for (int d = 0; d < shape->ndim; d++) {
		arrays = tps_sat_add(arrays, level);
		level = tps_sat_mul(level, shape->dim[d]);
	}
	return tps_sat_add(tps_sat_add(10, tps_sat_mul(2, arrays)),
			   tps_sat_add(tps_sat_mul(n, f), n - 1));
}

void tps_trace_free(struct tps_trace *t)
{
	if (!t) {
		return;
	}
	if (t->counter) {
		fclose(t->counter);
		t->counter = NULL;
	}
	free(t->tallies);
	t->tallies = NULL;
	free(t->stage_bytes);
	t->stage_bytes = NULL;
	t->n_tallies = t->cap_tallies = 0;
	for (size_t i = 0; i < sizeof t->groups_json / sizeof t->groups_json[0];
	     i++) {
		free(t->groups_json[i]);
		t->groups_json[i] = NULL;
	}
}

static void write_float(FILE *out, float v)
{
	char buf[TPS_NUMFMT_MAX];
	tps_format_float(v, buf);
	fputs(buf, out);
}

/* A value of dtype d: the shortest decimal that reads back to it in d
 * (tps_format_float's for float32). */
static void write_value(FILE *out, float v, enum tps_dtype d)
{
	char buf[TPS_NUMFMT_MAX];
	tps_format_dtype(v, d, buf);
	fputs(buf, out);
}

static void write_shape(FILE *out, const struct tps_shape *s)
{
	fputc('[', out);
	for (int i = 0; i < s->ndim; i++) {
		fprintf(out, "%s%" PRId64, i ? "," : "", s->dim[i]);
	}
	fputc(']', out);
}

/*
 * Values are formatted into a block of memory and written a block at a
 * time: one fwrite per 64 KiB instead of one locked stdio call per
 * character, and memory that does not grow with the trace.
 */
struct value_writer {
	FILE *out;
	enum tps_dtype dtype; /* the values' */
	size_t used;
	char block[65536];
};

static void writer_flush(struct value_writer *w)
{
	fwrite(w->block, 1, w->used, w->out);
	w->used = 0;
}

/* Appends one character. */
static void writer_put(struct value_writer *w, char c)
{
	if (w->used == sizeof w->block) {
		writer_flush(w);
	}
	w->block[w->used++] = c;
}

/* Nested arrays of t's values from offset *pos, for dims d.. */
static void write_nested(struct value_writer *w, const struct tps_tensor *t,
			 int d, int64_t *pos)
{
	int64_t n = t->shape.dim[d];
	writer_put(w, '[');
	if (d == t->shape.ndim - 1) {
		const float *v = t->data + tps_tensor_offset(t, *pos);
		for (int64_t i = 0; i < n; i++) {
			if (w->used + TPS_NUMFMT_MAX + 1 > sizeof w->block) {
				writer_flush(w);
			}
			if (i) {
				w->block[w->used++] = ',';
			}
			w->used += tps_format_dtype(v[i], w->dtype,
						    w->block + w->used);
		}
		*pos += n;
	} else {
		for (int64_t i = 0; i < n; i++) {
			if (i) {
				writer_put(w, ',');
			}
			write_nested(w, t, d + 1, pos);
		}
	}
	writer_put(w, ']');
}

/* XXH3-64 (seed 0) of the tensor's float32 values as little-endian
 * bytes, on any host: a little-endian host hashes them in place, another
 * converts them a block at a time. */
static uint64_t hash_values(const struct tps_tensor *v)
{
	const uint32_t one = 1;
	int64_t n = v->data ? tps_tensor_numel(v) : 0;
	int64_t len = tps_tensor_run_length(v);
	unsigned char first;
	XXH3_state_t state;

	memcpy(&first, &one, 1);
	if ((first == 1 && len == n) || n == 0) {
		return XXH3_64bits(v->data, (size_t)n * sizeof(float));
	}
	XXH3_64bits_reset(&state);
	if (first == 1) {
		/* A strided view's rows, in order: the same hash. */
		for (int64_t i = 0; i < n; i += len) {
			XXH3_64bits_update(&state,
					   v->data + tps_tensor_offset(v, i),
					   (size_t)len * sizeof(float));
		}
		return XXH3_64bits_digest(&state);
	}
	for (int64_t i = 0; i < n; i += 1024) {
		unsigned char le[4096];
		int64_t m = n - i < 1024 ? n - i : 1024;
		for (int64_t k = 0; k < m; k++) {
			uint32_t bits;
			memcpy(&bits, &v->data[tps_tensor_offset(v, i + k)], 4);
			for (int b = 0; b < 4; b++) {
				le[4 * k + b] =
					(unsigned char)(bits >> (8 * b));
			}
		}
		XXH3_64bits_update(&state, le, (size_t)m * 4);
	}
	return XXH3_64bits_digest(&state);
}

/* What the trace says about one tensor besides its values: whether all are
 * finite (else the first bad element), and the summary keys. */
struct tensor_facts {
	int64_t first_bad; /* -1: every value is finite */
	float min, max, mean;
	uint64_t hash;
};

static void find_facts(const struct tps_tensor *v, bool summary,
		       struct tensor_facts *f)
{
	int64_t n = v->data ? tps_tensor_numel(v) : 0;
	memset(f, 0, sizeof *f);
	f->first_bad = -1;
	if (!summary) {
		/* Sets first_bad only when it finds one. */
		tps_tensor_all_finite(v, &f->first_bad);
		return;
	}
	if (n > 0) {
		float lo = v->data[0], hi = v->data[0];
		/* The sum in ascending element order: the mean is part of
		 * the trace's bytes. Run by run (a strided view's rows). */
		double sum = 0.0;
		int64_t len = tps_tensor_run_length(v);
		for (int64_t i0 = 0; i0 < n; i0 += len) {
			const float *row = v->data + tps_tensor_offset(v, i0);
			for (int64_t j = 0; j < len; j++) {
				lo = row[j] < lo ? row[j] : lo;
				hi = row[j] > hi ? row[j] : hi;
				sum += row[j];
			}
		}
		/* Finite floats cannot overflow a double sum (2^31 x 2^128 <
		 * 2^1024): the sum is finite exactly when every value is. */
		if (!isfinite(sum)) {
			tps_tensor_all_finite(v, &f->first_bad);
			return;
		}
		f->min = lo;
		f->max = hi;
		f->mean = (float)(sum / (double)n);
	}
	f->hash = hash_values(v);
}

/* ,"values":... or the summary keys (facts: find_facts's), after a
 * "shape" key: v holds values of dtype d (the mean is no value of it: a
 * float32). */
static void write_values(struct tps_trace *t, const struct tps_tensor *v,
			 enum tps_dtype d, const struct tensor_facts *facts)
{
	int64_t n;
	if (t->estimate) {
		if (t->as_values) {
			t->bound_bytes = tps_sat_add(
				t->bound_bytes,
				tps_trace_values_bound(t->values, &v->shape));
		}
		return;
	}
	n = tps_tensor_numel(v);
	if (t->values == TPS_TRACE_VALUES_NONE) {
		return;
	}
	if (t->values == TPS_TRACE_VALUES_FULL) {
		fputs(",\"values\":", t->out);
		if (n == 0) {
			fputs("[]", t->out);
		} else if (v->shape.ndim == 0) {
			write_value(t->out, v->data[0], d);
		} else {
			struct value_writer w;
			int64_t pos = 0;
			w.out = t->out;
			w.dtype = d;
			w.used = 0;
			write_nested(&w, v, 0, &pos);
			writer_flush(&w);
		}
		return;
	}
	if (n > 0) {
		fputs(",\"min\":", t->out);
		write_value(t->out, facts->min, d);
		fputs(",\"max\":", t->out);
		write_value(t->out, facts->max, d);
		fputs(",\"mean\":", t->out);
		write_float(t->out, facts->mean);
	}
	fprintf(t->out, ",\"hash\":\"%016" PRIx64 "\"", facts->hash);
}

/* write_values for a tensor on its own (a parameter, an input). */
static void write_values_of(struct tps_trace *t, const struct tps_tensor *v,
			    enum tps_dtype d)
{
	struct tensor_facts f;
	if (t->estimate) {
		write_values(t, v, d, NULL);
		return;
	}
	find_facts(v, t->values == TPS_TRACE_VALUES_SUMMARY, &f);
	write_values(t, v, d, &f);
}

/* {"shape":[..],"values":..}, values of dtype d */
static void write_tensor_object(struct tps_trace *t, const struct tps_tensor *v,
				enum tps_dtype d)
{
	fputs("{\"shape\":", t->out);
	write_shape(t->out, &v->shape);
	write_values_of(t, v, d);
	fputc('}', t->out);
}

void tps_trace_write_group(FILE *out, const struct tps_mesh *m, unsigned mask,
			   int g)
{
	int ranks[TPS_MAX_WORLD];
	int n = tps_mesh_group_size(m, mask);
	tps_mesh_group_members(m, mask, g, ranks);
	fputc('[', out);
	for (int i = 0; i < n; i++) {
		fprintf(out, "%s%d", i ? "," : "", ranks[i]);
	}
	fputc(']', out);
}

static void write_groups(FILE *out, const struct tps_mesh *m, unsigned mask)
{
	fputc('[', out);
	for (int g = 0; g < tps_mesh_group_count(m, mask); g++) {
		if (g) {
			fputc(',', out);
		}
		tps_trace_write_group(out, m, mask, g);
	}
	fputc(']', out);
}

/* write_groups, formatted once per mask (a 512-rank mesh lists 512 ranks
 * in every collective event's groups). Without memory for the text, the
 * groups are written directly. */
static void write_groups_cached(struct tps_trace *t, unsigned mask)
{
	char **text = &t->groups_json[mask];
	if (!*text) {
		size_t len = 0;
		FILE *mem = open_memstream(text, &len);
		if (mem) {
			write_groups(mem, t->mesh, mask);
		}
		if (!mem || fclose(mem) != 0) {
			free(*text);
			*text = NULL;
			write_groups(t->out, t->mesh, mask);
			return;
		}
	}
	fputs(*text, t->out);
}

void tps_trace_write_mesh_fields(FILE *out, const struct tps_mesh *m)
{
	fputs("\"shape\":[", out);
	for (int i = 0; i < m->ndim; i++) {
		fprintf(out, "%s%d", i ? "," : "", m->shape[i]);
	}
	fputs("],\"dim_names\":[", out);
	for (int i = 0; i < m->ndim; i++) {
		if (i) {
			fputc(',', out);
		}
		tps_json_write_string(out, m->dim_names[i]);
	}
	fprintf(out, "],\"world_size\":%d,\"groups\":{", m->world_size);
	for (int i = 0; i < m->ndim; i++) {
		if (i) {
			fputc(',', out);
		}
		tps_json_write_string(out, m->dim_names[i]);
		fputc(':', out);
		write_groups(out, m, 1u << i);
	}
	fputc('}', out);
}

static void write_placements(FILE *out, const struct tps_dtensor *dt)
{
	char buf[32];
	fputc('[', out);
	for (int i = 0; i < dt->mesh->ndim; i++) {
		if (i) {
			fputc(',', out);
		}
		tps_json_write_string(out,
				       tps_placement_format(dt->placements[i],
							    buf, sizeof buf));
	}
	fputc(']', out);
}

enum tps_status tps_trace_begin(struct tps_trace *t, const cJSON *config,
				struct tps_error *err)
{
	const struct tps_mesh *m = t->mesh;
	FILE *out = t->out;
	fputs("{\"format\":\"tpsim.trace\",\"version\":1,\n", out);
	fputs("\"generator\":\"tpsim " TPS_VERSION "\",\n", out);
	fputs("\"config\":", out);
	tps_json_write_value(out, config);
	fputs(",\n\"mesh\":{", out);
	tps_trace_write_mesh_fields(out, m);
	fputs("},\n", out);
	(void)err;
	return TPS_OK;
}

enum tps_status tps_trace_write_warnings(struct tps_trace *t,
					 const char *const *warnings, int n,
					 struct tps_error *err)
{
	if (n == 0) {
		return TPS_OK;
	}
	fputs("\"warnings\":[", t->out);
	for (int i = 0; i < n; i++) {
		if (i) {
			fputc(',', t->out);
		}
		tps_json_write_string(t->out, warnings[i]);
	}
	fputs("],\n", t->out);
	(void)err;
	return TPS_OK;
}

enum tps_status tps_trace_write_params(struct tps_trace *t,
				       const struct tps_model *model,
				       struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	fputs("\"params\":{", t->out);
	for (int i = 0; st == TPS_OK && i < model->n_params; i++) {
		const struct tps_param *p = &model->params[i];
		struct tps_tensor whole = {0};
		const struct tps_tensor *v = &p->global;
		if (!model->meta && p->global.meta) {
			/* Not kept whole here (tps_model_keeps_params): made
			 * again from the ranks' shards, one at a time, as
			 * every other process does with us (backend.h). */
			st = tps_dtensor_full_tensor_on_writer(&p->value,
							       &whole, err);
			v = &whole;
		}
		if (st != TPS_OK) {
			break;
		}
		fputs(i ? ",\n" : "\n", t->out);
		tps_json_write_string(t->out, p->name);
		fputs(":{\"shape\":", t->out);
		write_shape(t->out, &p->global.shape);
		fputs(",\"placements\":", t->out);
		write_placements(t->out, &p->value);
		write_values_of(t, v, model->spec->dtypes.of[TPS_ROLE_PARAMS]);
		fputc('}', t->out);
		tps_tensor_free(&whole);
	}
	fputs("},\n", t->out);
	return st;
}

enum tps_status tps_trace_write_inputs(struct tps_trace *t,
				       const struct tps_model_spec *spec,
				       const struct tps_tensor *input,
				       const struct tps_tensor *target,
				       struct tps_error *err)
{
	fputs("\"inputs\":{\"input\":", t->out);
	write_tensor_object(t, input, tps_model_input_dtype(spec));
	if (target) {
		fputs(",\"target\":", t->out);
		write_tensor_object(t, target, tps_model_target_dtype(spec));
	}
	fputs("},\n", t->out);
	(void)err;
	return TPS_OK;
}

enum tps_status tps_trace_begin_events(struct tps_trace *t,
				       struct tps_error *err)
{
	fputs("\"events\":[", t->out);
	(void)err;
	return TPS_OK;
}

static enum tps_status tally(struct tps_trace *t, int section, const char *key,
			     int64_t bytes, struct tps_error *err)
{
	struct tps_trace_tally *e = NULL;
	for (size_t i = 0; i < t->n_tallies; i++) {
		if (t->tallies[i].section == section &&
		    strcmp(t->tallies[i].key, key) == 0) {
			e = &t->tallies[i];
		}
	}
	if (!e) {
		if (t->n_tallies == t->cap_tallies) {
			size_t cap = t->cap_tallies ? 2 * t->cap_tallies : 16;
			struct tps_trace_tally *grown =
				realloc(t->tallies, cap * sizeof *grown);
			if (!grown) {
				return tps_error_set(err, TPS_ERR_NOMEM,
						     "out of memory");
			}
			t->tallies = grown;
			t->cap_tallies = cap;
		}
		e = &t->tallies[t->n_tallies++];
		memset(e, 0, sizeof *e);
		e->section = section;
		snprintf(e->key, sizeof e->key, "%s", key);
	}
	e->count++;
	e->bytes_per_rank += bytes;
	return TPS_OK;
}

/* Every rank's facts about an event's tensor, found concurrently on the
 * mesh's pool: each rank's scan is independent and writes only its slot. */
struct facts_job {
	const struct tps_dtensor *v;
	bool summary;
	struct tensor_facts *facts;
};

static void find_rank_facts(void *opaque, int64_t r)
{
	struct facts_job *job = opaque;
	find_facts(&job->v->locals[r], job->summary, &job->facts[r]);
}

/* A NaN or Inf stops the run, naming the first rank and element. */
static enum tps_status check_finite(const struct tps_trace *t,
				    const struct tps_event *ev,
				    const struct tensor_facts *facts,
				    struct tps_error *err)
{
	for (int r = 0; r < t->mesh->world_size; r++) {
		int64_t bad = facts[r].first_bad;
		const struct tps_tensor *v = &ev->value->locals[r];
		if (bad >= 0) {
			return tps_error_set(
				err, TPS_ERR_NUMERIC,
				"%s in %s on rank %d (element %lld) at event "
				"seq %lld (%s %s %s)",
				isnan(v->data[tps_tensor_offset(v, bad)])
					? "NaN"
					: "Inf",
				ev->tensor, r, (long long)bad,
				(long long)t->next_seq,
				tps_phase_names[ev->phase], ev->module, ev->op);
		}
	}
	return TPS_OK;
}

static enum tps_status emit_event(void *ctx, const struct tps_event *ev,
				  struct tps_error *err)
{
	struct tps_trace *t = ctx;
	FILE *out = t->out;
	const struct tps_dtensor *v = ev->value;
	bool collective = ev->kind == TPS_EVENT_COLLECTIVE;
	char group_name[TPS_MAX_MESH_DIMS * TPS_MESH_NAME_MAX];
	struct facts_job job = {v, t->values == TPS_TRACE_VALUES_SUMMARY, NULL};
	/* A meta tensor (a symbolic run) has no values to check or write,
	 * and its ranks' shapes are those its placements give them: the
	 * event lists no ranks (docs/trace.md). Estimating a values run,
	 * they are listed, their values counted (write_values). */
	bool meta = v->locals[0].meta;
	bool listed = !meta || (t->estimate && t->as_values);
	enum tps_status st;

	if (ferror(out)) {
		/* A write failed (a full disk, a file-size limit): stop at
		 * the next event rather than simulate the rest for nothing.
		 * The flush retries what is buffered, for a fresh errno. */
		errno = 0;
		fflush(out);
		return tps_error_set(err, TPS_ERR_IO, "writing the trace: %s",
				     strerror(errno ? errno : EIO));
	}
	if (!meta) {
		job.facts =
			malloc((size_t)t->mesh->world_size * sizeof *job.facts);
		if (!job.facts) {
			return tps_error_set(err, TPS_ERR_NOMEM,
					     "out of memory");
		}
		tps_pool_for(t->mesh->pool, t->mesh->world_size,
			     find_rank_facts, &job);
		st = check_finite(t, ev, job.facts, err);
		if (st != TPS_OK) {
			free(job.facts);
			return st;
		}
	}
	fputs(t->first_event ? "\n" : ",\n", out);
	t->first_event = false;
	fprintf(out, "{\"seq\":%" PRId64, t->next_seq++);
	if (ev->step >= 0) {
		fprintf(out, ",\"step\":%d", ev->step);
	}
	fputs(",\"phase\":", out);
	tps_json_write_string(out, tps_phase_names[ev->phase]);
	fputs(",\"module\":", out);
	tps_json_write_string(out, ev->module);
	fputs(",\"kind\":", out);
	tps_json_write_string(out, tps_event_kind_names[ev->kind]);
	fputs(",\"op\":", out);
	tps_json_write_string(out, ev->op);
	fputs(",\"tensor\":", out);
	tps_json_write_string(out, ev->tensor);
	if (ev->dtype != TPS_DTYPE_F32) {
		fputs(",\"dtype\":", out);
		tps_json_write_string(out, tps_dtype_names[ev->dtype]);
	}
	tps_mesh_mask_name(t->mesh, ev->mask, group_name, sizeof group_name);
	if (ev->mask) {
		fputs(",\"mesh_dim\":", out);
		tps_json_write_string(out, group_name);
		fputs(",\"groups\":", out);
		write_groups_cached(t, ev->mask);
	}
	fputs(",\"placements\":", out);
	write_placements(out, v);
	fputs(",\"global_shape\":", out);
	write_shape(out, &v->global);
	if (collective) {
		fprintf(out, ",\"bytes_per_rank\":%" PRId64,
			ev->bytes_per_rank);
	}
	if (listed) {
		fputs(",\"ranks\":[", out);
		for (int r = 0; r < t->mesh->world_size; r++) {
			fprintf(out, "%s{\"rank\":%d,\"shape\":", r ? "," : "",
				r);
			write_shape(out, &v->locals[r].shape);
			write_values(t, &v->locals[r], ev->dtype,
				     job.facts ? &job.facts[r] : NULL);
			fputc('}', out);
		}
		fputc(']', out);
	}
	if (ev->note) {
		fputs(",\"note\":", out);
		tps_json_write_string(out, ev->note);
	}
	if (ev->recompute) {
		fputs(",\"recompute\":true", out);
	}
	if (ev->stage) {
		const struct tps_event_stage *g = ev->stage;
		fprintf(out, ",\"stage\":%d,\"chunk\":%d", g->stage, g->chunk);
		if (g->microbatch >= 0) {
			fprintf(out, ",\"microbatch\":%d", g->microbatch);
		}
		if (g->peer >= 0) {
			fprintf(out, ",\"peer\":%d", g->peer);
		}
		if (g->slot_end > 0) {
			fprintf(out, ",\"slot\":[%" PRId64 ",%" PRId64 "]",
				g->slot_start, g->slot_end);
		}
	}
	if (ev->mistake) {
		fputs(",\"mistake\":", out);
		tps_json_write_string(out, ev->mistake);
		if (!t->first_mistake) {
			t->first_mistake = ev->mistake;
			t->first_mistake_seq = t->next_seq - 1;
		}
	}
	fputc('}', out);
	free(job.facts);
	t->flops = tps_sat_add(t->flops,
			       tps_sat_mul(ev->flops, t->mesh->world_size));
	check_budget(t);
	if (!collective) {
		return TPS_OK;
	}
	/* The tallies are parts of the total: one check covers them all. */
	if (__builtin_add_overflow(t->bytes_per_rank, ev->bytes_per_rank,
				   &t->bytes_per_rank)) {
		return tps_error_set(err, TPS_ERR_LIMIT,
				     "the run's collectives pass 2^63 bytes "
				     "per rank at event seq %lld (%s %s %s), "
				     "past what the trace's comm counts hold",
				     (long long)(t->next_seq - 1),
				     tps_phase_names[ev->phase], ev->module,
				     ev->op);
	}
	t->collectives++;
	if (ev->stage && !t->stage_bytes) {
		t->stage_bytes =
			calloc((size_t)t->mesh->world_size * TPS_PHASE_COUNT,
			       sizeof *t->stage_bytes);
		if (!t->stage_bytes) {
			return tps_error_set(err, TPS_ERR_NOMEM,
					     "out of memory");
		}
	}
	if (ev->stage) {
		/* Under the total's: no overflow. */
		t->stage_bytes[ev->stage->stage * TPS_PHASE_COUNT +
			       ev->phase] += ev->bytes_per_rank;
	}
	st = tally(t, 0, ev->op, ev->bytes_per_rank, err);
	if (st == TPS_OK) {
		st = tally(t, 1, tps_phase_names[ev->phase], ev->bytes_per_rank,
			   err);
	}
	if (st == TPS_OK) {
		st = tally(t, 2, ev->module, ev->bytes_per_rank, err);
	}
	if (st == TPS_OK) {
		st = tally(t, 3, group_name, ev->bytes_per_rank, err);
	}
	return st;
}

struct tps_event_sink tps_trace_sink(struct tps_trace *t)
{
	struct tps_event_sink sink = {emit_event, t};
	return sink;
}

enum tps_status tps_trace_end_events(struct tps_trace *t, struct tps_error *err)
{
	fputs("],\n", t->out);
	(void)err;
	return TPS_OK;
}

/* A number of the result: estimating, counted at its longest. */
static void put_float(struct tps_trace *t, float v)
{
	if (t->estimate) {
		t->bound_bytes =
			tps_sat_add(t->bound_bytes, TPS_NUMFMT_FLOAT_LEN_MAX);
		return;
	}
	write_float(t->out, v);
}

/* "key":[l0,l1,...] of a run's losses. */
static void write_losses(struct tps_trace *t, const char *key,
			 const struct tps_model_outcome *o)
{
	fprintf(t->out, ",\"%s\":[", key);
	for (int i = 0; i < o->steps; i++) {
		if (i) {
			fputc(',', t->out);
		}
		put_float(t, o->loss[i]);
	}
	fputc(']', t->out);
}

/* "key":{"name":{tensor},...}, names from the model's parameters, values
 * of dtype d. */
static void write_named(struct tps_trace *t, const char *key,
			const struct tps_model *model,
			const struct tps_tensor *tensors, int n,
			enum tps_dtype d)
{
	fprintf(t->out, ",\"%s\":{", key);
	for (int i = 0; i < n; i++) {
		if (i) {
			fputc(',', t->out);
		}
		tps_json_write_string(t->out, i < model->n_params
						       ? model->params[i].name
						       : "input");
		fputc(':', t->out);
		write_tensor_object(t, &tensors[i], d);
	}
	fputc('}', t->out);
}

/* Writes the members of c's tensors of one section ("loss": an array of
 * the steps', the others an object by name), each by `one`. */
static void write_section(struct tps_trace *t,
			  const struct tps_comparison *c, const char *section,
			  void (*one)(struct tps_trace *t,
				      const struct tps_compare_tensor *x))
{
	bool array = strcmp(section, "loss") == 0, first = true;
	FILE *out = t->out;
	fprintf(out, ",\"%s\":%c", section, array ? '[' : '{');
	for (int i = 0; i < c->n; i++) {
		const struct tps_compare_tensor *x = &c->t[i];
		if (strcmp(x->section, section) != 0) {
			continue;
		}
		fputs(first ? "" : ",", out);
		first = false;
		if (!array) {
			/* The outcome's names: the input's gradient is
			 * "input". */
			size_t n = strlen(x->name);
			bool grad = strcmp(section, "grads") == 0;
			char name[sizeof x->name];
			snprintf(name, sizeof name, "%.*s",
				 (int)(grad ? n - 5 : n), x->name);
			tps_json_write_string(out, name);
			fputc(':', out);
		}
		one(t, x);
	}
	fputc(array ? ']' : '}', out);
}

/* Writes c's sections, each tensor by `one`, laid out as the result's
 * tensors: "output", and in training "loss" (per step), "grads" and
 * "params_after" (by name). */
static void write_sections(struct tps_trace *t,
			   const struct tps_comparison *c, bool training,
			   void (*one)(struct tps_trace *t,
				       const struct tps_compare_tensor *x))
{
	fputs("\"output\":", t->out);
	one(t, &c->t[0]);
	if (training) {
		write_section(t, c, "loss", one);
		write_section(t, c, "grads", one);
		write_section(t, c, "params_after", one);
	}
}

static void comparison_one(struct tps_trace *t,
			   const struct tps_compare_tensor *x)
{
	fprintf(t->out, "\"%s\"", tps_compare_rule_names[x->rule]);
}

/* A double as the trace writes floats (a bound, a ratio: their float
 * value, rounded up so that it stays a bound). */
static void put_up(struct tps_trace *t, double v)
{
	put_float(t, tps_bound_up(v));
}

/* One tensor's figures (docs/trace.md, result.bounds). */
static void bounds_one(struct tps_trace *t,
		       const struct tps_compare_tensor *x)
{
	FILE *out = t->out;
	fprintf(out, "{\"rule\":\"%s\"", tps_compare_rule_names[x->rule]);
	if (x->rule == TPS_COMPARE_TOLERANCE) {
		fputs(",\"bound\":\"none\",\"reason\":", out);
		tps_json_write_string(out, x->none);
	}
	if (x->shapes_differ) {
		fputs(",\"shapes_differ\":true}", out);
		return;
	}
	fputs(",\"max_abs_diff\":", out);
	put_float(t, x->max_abs_diff);
	fputs(x->rule == TPS_COMPARE_TOLERANCE ? ",\"tolerance\":"
					       : ",\"max_bound\":",
	      out);
	put_up(t, x->max_bound);
	if (x->at >= 0) {
		int64_t idx[TPS_MAX_DIMS], at = x->at;
		for (int d = x->shape.ndim - 1; d >= 0; d--) {
			int64_t n = x->shape.dim[d] ? x->shape.dim[d] : 1;
			idx[d] = at % n;
			at /= n;
		}
		/* A ratio past the float range (a difference of 1e34 over a
		 * tolerance of 1e-5) is written as an infinite one is: not
		 * at all. */
		if (isfinite(tps_bound_up(x->ratio))) {
			fputs(",\"ratio\":", out);
			put_up(t, x->ratio);
		}
		fputs(",\"at\":[", out);
		for (int d = 0; d < x->shape.ndim; d++) {
			fprintf(out, "%s%" PRId64, d ? "," : "", idx[d]);
		}
		fputs("],\"diff_at\":", out);
		put_float(t, (float)x->at_diff);
		if (x->rule != TPS_COMPARE_TOLERANCE) {
			fputs(",\"bound_at\":", out);
			put_up(t, x->at_bound);
		}
	}
	fprintf(out, ",\"outside\":%" PRId64 "}", x->outside);
}

/* "comparison": how each compared tensor was compared ("exact", "bound"
 * or "tolerance"), and "bounds": the figures of each, laid out as the
 * result's keys are. */
static void write_comparison(struct tps_trace *t,
			     const struct tps_comparison *c, bool training)
{
	fputs(",\"comparison\":{", t->out);
	write_sections(t, c, training, comparison_one);
	fputs("},\"bounds\":{", t->out);
	write_sections(t, c, training, bounds_one);
	fputc('}', t->out);
}

/* "key":{"bytes":B,"rank":R} with "min_bytes", "min_rank" when the
 * ranks differ. */
static void write_figure(FILE *out, const char *key,
			 const struct tps_model_figure *f)
{
	fprintf(out, ",\"%s\":{\"bytes\":%" PRId64 ",\"rank\":%d", key, f->max,
		f->max_rank);
	if (f->min != f->max) {
		fprintf(out, ",\"min_bytes\":%" PRId64 ",\"min_rank\":%d",
			f->min, f->min_rank);
	}
	fputc('}', out);
}

int64_t tps_trace_bytes_per_rank(const struct tps_trace *t)
{
	int64_t most = 0;
	if (!t->stage_bytes) {
		return t->bytes_per_rank;
	}
	for (int s = 0; s < t->mesh->world_size; s++) {
		int64_t b = 0;
		for (int p = 0; p < TPS_PHASE_COUNT; p++) {
			b += t->stage_bytes[s * TPS_PHASE_COUNT + p];
		}
		most = b > most ? b : most;
	}
	return most;
}

int64_t tps_trace_phase_bytes(const struct tps_trace *t, enum tps_phase phase)
{
	if (t->stage_bytes) {
		int64_t most = 0;
		for (int s = 0; s < t->mesh->world_size; s++) {
			int64_t b = t->stage_bytes[s * TPS_PHASE_COUNT + phase];
			most = b > most ? b : most;
		}
		return most;
	}
	for (size_t i = 0; i < t->n_tallies; i++) {
		if (t->tallies[i].section == 1 &&
		    strcmp(t->tallies[i].key, tps_phase_names[phase]) == 0) {
			return t->tallies[i].bytes_per_rank;
		}
	}
	return 0;
}

/* "key":B for one rank's figure. */
static void write_held(FILE *out, const char *key, int64_t bytes, bool first)
{
	fprintf(out, "%s\"%s\":%" PRId64, first ? "" : ",", key, bytes);
}

/* "symbolic": what each rank holds and sends (docs/trace.md). */
static enum tps_status write_symbolic(const struct tps_trace *t,
				      const struct tps_model *model,
				      struct tps_error *err)
{
	static const enum tps_dtype_role roles[] = {
		TPS_ROLE_PARAMS, TPS_ROLE_MASTER_PARAMS, TPS_ROLE_ACTIVATIONS,
		TPS_ROLE_GRADS, TPS_ROLE_OPTIMIZER_STATE};
	FILE *out = t->out;
	const struct tps_model_spec *spec = model->spec;
	int world = spec->mesh.world_size;
	struct tps_model_footprint fp;
	struct tps_model_held *per = calloc((size_t)world, sizeof *per);
	bool first = true;
	enum tps_status st =
		per ? tps_model_footprint(model, &fp, err)
		    : tps_error_set(err, TPS_ERR_NOMEM, "out of memory");

	if (st != TPS_OK) {
		free(per);
		return st;
	}
	tps_model_held_by_rank(model, per);
	/* The bytes an element of each role takes (the reduce dtype's
	 * running sums are not held). */
	fputs(",\"symbolic\":{\"bytes_per_element\":{", out);
	for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
		write_held(out, tps_dtype_role_names[roles[i]],
			   tps_dtype_size(spec->dtypes.of[roles[i]]), i == 0);
	}
	fputc('}', out);
	fprintf(out, ",\"optimizer_states\":%d",
		spec->mode == TPS_MODE_TRAINING
			? tps_optim_state_count(&spec->optimizer)
			: 0);
	write_figure(out, "param_bytes", &fp.params);
	if (spec->mode == TPS_MODE_TRAINING && spec->zero.stage == 3) {
		write_figure(out, "gathered_param_bytes", &fp.gathered);
	}
	write_figure(out, "grad_bytes", &fp.grads);
	write_figure(out, "master_param_bytes", &fp.master);
	write_figure(out, "optimizer_state_bytes", &fp.optimizer_state);
	write_figure(out, "saved_activation_bytes", &fp.saved);
	write_figure(out, "output_bytes", &fp.output);
	write_figure(out, "peak_activation_bytes", &fp.activations);
	write_figure(out, "total_bytes", &fp.total);
	/* Each top-level module with its descendants. */
	fputs(",\"saved_activation_bytes_by_module\":{", out);
	for (int i = 0; i < spec->n_modules;) {
		int next = i + 1 + spec->modules[i].n_descendants;
		int64_t bytes = 0;
		for (int k = i; k < next; k++) {
			bytes += model->module_saved_bytes[k];
		}
		fputs(first ? "" : ",", out);
		first = false;
		tps_json_write_string(out, spec->modules[i].name);
		fprintf(out, ":%" PRId64, bytes);
		i = next;
	}
	fputs("},\"comm_bytes_per_rank\":{", out);
	for (int p = TPS_PHASE_FORWARD; p < TPS_PHASE_COUNT; p++) {
		fprintf(out, "%s\"%s\":%" PRId64,
			p == TPS_PHASE_FORWARD ? "" : ",", tps_phase_names[p],
			tps_trace_phase_bytes(t, (enum tps_phase)p));
	}
	/* Every rank's figures, in rank order. */
	fputs("},\"per_rank\":[", out);
	for (int r = 0; r < world; r++) {
		const struct tps_model_held *h = &per[r];
		fputs(r ? ",{" : "{", out);
		write_held(out, "param_bytes", h->params, true);
		if (spec->mode == TPS_MODE_TRAINING && spec->zero.stage == 3) {
			write_held(out, "gathered_param_bytes", h->gathered,
				   false);
		}
		write_held(out, "grad_bytes", h->grads, false);
		write_held(out, "master_param_bytes", h->master, false);
		write_held(out, "optimizer_state_bytes", h->optimizer_state,
			   false);
		write_held(out, "saved_activation_bytes", h->saved, false);
		write_held(out, "output_bytes", h->output, false);
		write_held(out, "peak_activation_bytes", h->activations, false);
		write_held(out, "total_bytes", h->total, false);
		fputc('}', out);
	}
	fputs("]}", out);
	free(per);
	return TPS_OK;
}

/* What rank r (on stage s) holds of the parameters of its stage. */
static int64_t stage_param_bytes(const struct tps_model *model, int s, int r)
{
	int64_t b = 0;
	/* In the params dtype, as result.symbolic's param_bytes. */
	int size = tps_dtype_size(model->spec->dtypes.of[TPS_ROLE_PARAMS]);
	for (int i = 0; i < model->n_params; i++) {
		const struct tps_param *p = &model->params[i];
		int k = tps_model_param_virtual_stage(model, p);
		if (k % model->spec->pipeline.p == s && p->value.locals) {
			b += tps_tensor_numel(&p->value.locals[r]) * size;
		}
	}
	return b;
}

/*
 * ,"pipeline":{...}: the schedule, and per stage (the largest over its
 * ranks, with the lowest rank that holds it): the microbatches (chunk
 * forwards, with v > 1) in flight at its peak, what one microbatch
 * leaves saved on it, and its activations at the peak of the schedule
 * (tps_model_pipeline_peak, plus one microbatch's output on the last
 * stage); the schedule's busy and idle slots (docs/pipeline.md).
 */
static void write_pipeline(const struct tps_trace *t,
			   const struct tps_model *model)
{
	const struct tps_model_spec *spec = model->spec;
	const struct tps_pipeline_spec *pp = &spec->pipeline;
	int world = spec->mesh.world_size;
	FILE *out = t->out;
	fprintf(out,
		",\"pipeline\":{\"schedule\":\"%s\",\"stages\":%d,"
		"\"microbatches\":%d,\"virtual_stages\":%d,\"by_stage\":[",
		tps_pp_schedule_name(pp->schedule), pp->p, pp->microbatches,
		pp->virtual_stages);
	for (int s = 0; s < pp->p; s++) {
		int64_t peak = -1, per_mb = 0;
		int rank = 0, in_flight = 0;
		for (int r = 0; r < world; r++) {
			int n;
			int64_t b, mb = 0;
			if (tps_model_rank_stage(model, r) != s) {
				continue;
			}
			b = tps_model_pipeline_peak(model, r, &n) +
			    model->output_bytes[r];
			for (int c = 0; c < pp->virtual_stages; c++) {
				mb += model->mb_saved[(size_t)(c * pp->p + s) *
							      (size_t)world +
						      (size_t)r];
			}
			if (b > peak) {
				peak = b;
				rank = r;
				in_flight = n;
				per_mb = mb;
			}
		}
		fprintf(out,
			"%s{\"stage\":%d,\"rank\":%d,\"busy_slots\":%" PRId64
			",\"idle_slots\":%" PRId64 ",\"peak_in_flight\":%d,"
			"\"saved_bytes_per_microbatch\":%" PRId64
			",\"peak_activation_bytes\":%" PRId64,
			s ? "," : "", s, rank, model->plan.stages[s].busy,
			model->plan.stages[s].idle, in_flight, per_mb, peak);
		fprintf(out, ",\"param_bytes\":%" PRId64,
			stage_param_bytes(model, s, rank));
		fputs(",\"comm_bytes_per_rank\":{", out);
		for (int ph = TPS_PHASE_FORWARD; ph < TPS_PHASE_COUNT; ph++) {
			fprintf(out, "%s\"%s\":%" PRId64,
				ph == TPS_PHASE_FORWARD ? "" : ",",
				tps_phase_names[ph],
				t->stage_bytes
					? t->stage_bytes[s * TPS_PHASE_COUNT +
							 ph]
					: 0);
		}
		fputs("}}", out);
	}
	fputs("]}", out);
}

enum tps_status tps_trace_write_result(struct tps_trace *t,
				       const struct tps_trace_result *r,
				       struct tps_error *err)
{
	const struct tps_dtypes *dt = &r->model->spec->dtypes;
	/* The output in the activations dtype, its own values' (the input's
	 * gradient, "input" among the grads, is a gradient too). */
	enum tps_dtype act = dt->of[TPS_ROLE_ACTIVATIONS];
	if (r->symbolic) {
		/* Shapes only, and no reference to compare with. */
		enum tps_status st;
		fputs("\"result\":{\"output\":", t->out);
		write_tensor_object(t, &r->sim->output, act);
		st = write_symbolic(t, r->model, err);
		if (r->model->n_virtual > 0) {
			write_pipeline(t, r->model);
		}
		fputs("},\n", t->out);
		return st;
	}
	if (!r->ref && !r->stopped) {
		/* "--no-reference": the simulation's results alone, no
		 * match, and the trace says why. */
		fputs("\"result\":{\"output\":", t->out);
		write_tensor_object(t, &r->sim->output, act);
		fputs(",\"reference\":\"skipped\"", t->out);
		if (r->sim->steps > 0) {
			write_losses(t, "loss", r->sim);
			write_named(t, "grads", r->model, r->sim->grads,
				    r->sim->n_grads, dt->of[TPS_ROLE_GRADS]);
			write_named(t, "params_after", r->model,
				    r->sim->params_after, r->sim->n_params,
				    dt->of[TPS_ROLE_PARAMS]);
		}
		if (r->model->n_virtual > 0) {
			write_pipeline(t, r->model);
		}
		fputs("},\n", t->out);
		return TPS_OK;
	}
	if (r->stopped) {
		/* The mistaken simulation never produced an output. */
		fputs("\"result\":{\"stopped\":", t->out);
		tps_json_write_string(t->out, r->stopped);
	} else {
		fputs("\"result\":{\"output\":", t->out);
		write_tensor_object(t, &r->sim->output, act);
	}
	fputs(",\"reference_output\":", t->out);
	write_tensor_object(t, &r->ref->output, act);
	if (r->stopped) {
		fputs(",\"match\":false", t->out);
	} else if (r->sim->steps > 0) {
		write_losses(t, "loss", r->sim);
		write_losses(t, "reference_loss", r->ref);
		write_named(t, "grads", r->model, r->sim->grads,
			    r->sim->n_grads, dt->of[TPS_ROLE_GRADS]);
		write_named(t, "reference_grads", r->model, r->ref->grads,
			    r->ref->n_grads, dt->of[TPS_ROLE_GRADS]);
		write_named(t, "params_after", r->model, r->sim->params_after,
			    r->sim->n_params, dt->of[TPS_ROLE_PARAMS]);
		write_named(t, "reference_params_after", r->model,
			    r->ref->params_after, r->ref->n_params,
			    dt->of[TPS_ROLE_PARAMS]);
	}
	if (!r->stopped) {
		/* Absent when the shapes differ (an injected mistake's). */
		if (isfinite(r->max_abs_diff)) {
			fputs(",\"max_abs_diff\":", t->out);
			put_float(t, r->max_abs_diff);
		}
		fprintf(t->out, ",\"match\":%s", r->match ? "true" : "false");
		/* Absent when nothing was compared. */
		if (r->comparison) {
			write_comparison(t, r->comparison, r->sim->steps > 0);
		}
		if (r->verdict) {
			fputs(",\"verdict\":", t->out);
			tps_json_write_string(t->out, r->verdict);
		}
	}
	if (t->first_mistake) {
		/* Where an injected mistake first made a value, and what the
		 * run concluded from the symptom. */
		fprintf(t->out, ",\"diverged_at\":{\"seq\":%" PRId64 ",",
			t->first_mistake_seq);
		fputs("\"mistake\":", t->out);
		tps_json_write_string(t->out, t->first_mistake);
		fputc('}', t->out);
	}
	if (r->diagnosis) {
		fputs(",\"diagnosis\":", t->out);
		tps_json_write_string(t->out, r->diagnosis);
	}
	if (r->model->n_virtual > 0 && !r->stopped) {
		write_pipeline(t, r->model);
	}
	fputs("},\n", t->out);
	(void)err;
	return TPS_OK;
}

enum tps_status tps_trace_finish(struct tps_trace *t, struct tps_error *err)
{
	FILE *out = t->out;
	fprintf(out,
		"\"comm\":{\"collectives\":%" PRId64
		",\"bytes_per_rank\":%" PRId64,
		t->collectives, tps_trace_bytes_per_rank(t));
	for (int s = 0; s < 4; s++) {
		bool first = true;
		fprintf(out, ",\"%s\":{", tally_sections[s]);
		for (size_t i = 0; i < t->n_tallies; i++) {
			const struct tps_trace_tally *e = &t->tallies[i];
			if (e->section != s) {
				continue;
			}
			if (!first) {
				fputc(',', out);
			}
			first = false;
			tps_json_write_string(out, e->key);
			fprintf(out,
				":{\"count\":%" PRId64
				",\"bytes_per_rank\":%" PRId64 "}",
				e->count, e->bytes_per_rank);
		}
		fputc('}', out);
	}
	fputs("}}\n", out);
	if (fflush(out) != 0 || ferror(out)) {
		return tps_error_set(err, TPS_ERR_IO, "writing the trace: %s",
				     strerror(errno));
	}
	return TPS_OK;
}

void tps_trace_describe_comparison(int exact, int bounded, int compared,
				   char *buf, size_t size)
{
	if (exact == compared) {
		snprintf(buf, size, "exact comparison");
	} else if (bounded == compared) {
		snprintf(buf, size, "error-bound comparison");
	} else if (bounded == 0) {
		snprintf(buf, size, "tolerance comparison");
	} else {
		snprintf(buf, size,
			 "error bounds for %d of %d tensors (%d exact), "
			 "tolerance for the rest",
			 bounded, compared, exact);
	}
}
