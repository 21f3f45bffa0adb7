/*
 * tpsim diff (run_diff.h): two traces aligned by (step, phase, tensor),
 * each element's difference against both traces' error bounds.
 */
#include "run_diff.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"
#include "numfmt.h"
#include "run.h"
#include "spec.h"
#include "trace.h"

static const cJSON *member(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* ---- the keys ---------------------------------------------------------- */

/* An open-addressing table of row indices by (step, phase, tensor). */
struct key_table {
	int *slot;  /* row index + 1; 0 free */
	size_t cap; /* a power of two */
};

static uint64_t key_hash(int step, enum tps_phase phase, const char *tensor)
{
	/* FNV-1a over the step, the phase and the name. */
	uint64_t h = 1469598103934665603ull;
	unsigned char head[5] = {
		(unsigned char)step, (unsigned char)(step >> 8),
		(unsigned char)(step >> 16), (unsigned char)(step >> 24),
		(unsigned char)phase};
	for (size_t i = 0; i < sizeof head; i++) {
		h = (h ^ head[i]) * 1099511628211ull;
	}
	for (; *tensor; tensor++) {
		h = (h ^ (unsigned char)*tensor) * 1099511628211ull;
	}
	return h;
}

/* The slot of the key: its row's, or the free one it would take. */
static int *key_slot(const struct key_table *t, const struct tps_diff *d,
		     int step, enum tps_phase phase, const char *tensor)
{
	size_t i = (size_t)key_hash(step, phase, tensor) & (t->cap - 1);
	for (;; i = (i + 1) & (t->cap - 1)) {
		const struct tps_diff_row *r;
		if (!t->slot[i]) {
			return &t->slot[i];
		}
		r = &d->rows[t->slot[i] - 1];
		if (r->step == step && r->phase == phase &&
		    strcmp(r->tensor, tensor) == 0) {
			return &t->slot[i];
		}
	}
}

/* Every event's key: its step (-1 at setup), phase and tensor. */
static void event_key(const cJSON *ev, int *step, enum tps_phase *phase,
		      const char **tensor)
{
	const cJSON *s = member(ev, "step");
	*step = cJSON_IsNumber(s) ? (int)s->valuedouble : -1;
	*phase = (enum tps_phase)tps_name_index(
		tps_phase_names, member(ev, "phase")->valuestring);
	*tensor = member(ev, "tensor")->valuestring;
}

/* Adds each event of trace (side 0: A, 1: B) to the rows: a new row at a
 * key's first event, and the key's last event kept. */
static enum tps_status add_events(struct tps_diff *d, struct key_table *t,
				  const cJSON *trace, int side,
				  struct tps_error *err)
{
	const cJSON *ev;
	int index = 0;
	cJSON_ArrayForEach(ev, member(trace, "events"))
	{
		int step, *slot;
		enum tps_phase phase;
		const char *tensor;
		struct tps_diff_row *r;
		event_key(ev, &step, &phase, &tensor);
		if (step < -1 || step > 1000000000) {
			index++;
			continue; /* no bound pass counts so far */
		}
		slot = key_slot(t, d, step, phase, tensor);
		if (!*slot) {
			r = &d->rows[d->n_rows];
			memset(r, 0, sizeof *r);
			r->step = step;
			r->phase = phase;
			r->tensor = tensor;
			r->event_a = r->event_b = -1;
			r->at = -1;
			*slot = ++d->n_rows;
		}
		r = &d->rows[*slot - 1];
		if (side == 0) {
			r->event_a = index;
		} else {
			r->event_b = index;
		}
		index++;
	}
	(void)err;
	return TPS_OK;
}

/* ---- the bounds -------------------------------------------------------- */

struct bound_collector {
	struct tps_diff *d;
	const struct key_table *t;
	int side;
};

static enum tps_status collect_bound(void *ctx,
				     const struct tps_bound_event *ev,
				     struct tps_error *err)
{
	struct bound_collector *c = ctx;
	int *slot = key_slot(c->t, c->d, ev->step, ev->phase, ev->tensor);
	struct tps_diff_row *r;
	struct tps_bound *b;
	if (!*slot) {
		return TPS_OK; /* a tensor the traces do not record */
	}
	r = &c->d->rows[*slot - 1];
	if ((c->side == 0 ? r->event_a : r->event_b) < 0) {
		return TPS_OK;
	}
	b = c->side == 0 ? &r->bound_a : &r->bound_b;
	tps_bound_free(b);
	if (c->side == 0) {
		r->has_a = false;
	} else {
		r->has_b = false;
	}
	if (tps_bound_copy(b, ev->bound, err) != TPS_OK) {
		return err->status;
	}
	if (c->side == 0) {
		r->has_a = true;
	} else {
		r->has_b = true;
	}
	return TPS_OK;
}

/* ---- the same model ---------------------------------------------------- */

/* B's value at pointer differs from A's: the error naming both. */
static enum tps_status not_same_model(const char *name_a, const char *name_b,
				      const char *pointer, const cJSON *va,
				      const cJSON *vb, struct tps_error *err)
{
	char *ta = va ? cJSON_PrintUnformatted(va) : NULL;
	char *tb = vb ? cJSON_PrintUnformatted(vb) : NULL;
	char en[256];
	enum tps_status st;
	/* Compact JSON has no raw control characters: shown as it is, cut
	 * at 120 bytes. */
	tps_json_escape_for_message(name_a, en, sizeof en);
	st = tps_error_set_at(err, TPS_ERR_INPUT, name_b, pointer,
			      "expected %.120s as in %s, got %.120s: the "
			      "traces are of different models",
			      ta ? ta : "nothing", en, tb ? tb : "nothing");
	free(ta);
	free(tb);
	return st;
}

/* The members of module `index`'s objects oa and ob must be equal, and B
 * may have no other. */
static enum tps_status same_members(const char *name_a, const char *name_b,
				    size_t index, const cJSON *oa,
				    const cJSON *ob, struct tps_error *err)
{
	const cJSON *m;
	struct tps_json_path p;
	cJSON_ArrayForEach(m, oa)
	{
		const cJSON *other = member(ob, m->string);
		if (!other || !cJSON_Compare(m, other, true)) {
			tps_json_path_init(&p);
			tps_json_path_push_key(&p, "config");
			tps_json_path_push_key(&p, "model");
			tps_json_path_push_index(&p, index);
			tps_json_path_push_key(&p, m->string);
			return not_same_model(name_a, name_b, p.text, m, other,
					      err);
		}
	}
	cJSON_ArrayForEach(m, ob)
	{
		if (!member(oa, m->string)) {
			tps_json_path_init(&p);
			tps_json_path_push_key(&p, "config");
			tps_json_path_push_key(&p, "model");
			tps_json_path_push_index(&p, index);
			tps_json_path_push_key(&p, m->string);
			return not_same_model(name_a, name_b, p.text, NULL, m,
					      err);
		}
	}
	return TPS_OK;
}

/* The modules (every key of each), the parameters' names, order and
 * shapes, the input's shape, and in two training traces the loss. */
static enum tps_status check_same_model(const cJSON *a, const char *name_a,
					const cJSON *b, const char *name_b,
					struct tps_error *err)
{
	const cJSON *ma = member(member(a, "config"), "model");
	const cJSON *mb = member(member(b, "config"), "model");
	const cJSON *pa = member(a, "params"), *pb = member(b, "params");
	const cJSON *x, *y;
	const cJSON *la = member(member(a, "config"), "loss");
	const cJSON *lb = member(member(b, "config"), "loss");
	const cJSON *ia = member(member(member(a, "inputs"), "input"), "shape");
	const cJSON *ib = member(member(member(b, "inputs"), "input"), "shape");
	char p[TPS_ERROR_POINTER_MAX];
	int i = 0;
	enum tps_status st;

	for (x = ma ? ma->child : NULL, y = mb ? mb->child : NULL; x || y;
	     x = x ? x->next : NULL, y = y ? y->next : NULL, i++) {
		snprintf(p, sizeof p, "/config/model/%d", i);
		if (!x || !y || !cJSON_IsObject(x) || !cJSON_IsObject(y)) {
			return not_same_model(name_a, name_b, p, x, y, err);
		}
		st = same_members(name_a, name_b, (size_t)i, x, y, err);
		if (st != TPS_OK) {
			return st;
		}
	}
	i = 0;
	for (x = pa ? pa->child : NULL, y = pb ? pb->child : NULL; x || y;
	     x = x ? x->next : NULL, y = y ? y->next : NULL, i++) {
		if (!x || !y || strcmp(x->string, y->string) != 0) {
			const cJSON *nx =
				x ? cJSON_CreateString(x->string) : NULL;
			const cJSON *ny =
				y ? cJSON_CreateString(y->string) : NULL;
			snprintf(p, sizeof p, "/params");
			st = not_same_model(name_a, name_b, p, nx, ny, err);
			cJSON_Delete((cJSON *)nx);
			cJSON_Delete((cJSON *)ny);
			if (y) {
				/* Name the parameter B has there. */
				char esc[160];
				tps_error_prefix(
					err, "parameter %d (%s)", i,
					tps_json_escape_for_message(
						y->string, esc, sizeof esc));
			}
			return st;
		}
		if (!cJSON_Compare(member(x, "shape"), member(y, "shape"),
				   true)) {
			struct tps_json_path jp;
			tps_json_path_init(&jp);
			tps_json_path_push_key(&jp, "params");
			tps_json_path_push_key(&jp, y->string);
			tps_json_path_push_key(&jp, "shape");
			return not_same_model(name_a, name_b, jp.text,
					      member(x, "shape"),
					      member(y, "shape"), err);
		}
	}
	if (!cJSON_Compare(ia, ib, true)) {
		return not_same_model(name_a, name_b, "/inputs/input/shape", ia,
				      ib, err);
	}
	if (la && lb && !cJSON_Compare(la, lb, true)) {
		return not_same_model(name_a, name_b, "/config/loss", la, lb,
				      err);
	}
	return TPS_OK;
}

/* ---- labels ------------------------------------------------------------ */

/* printf into buf at *used, in the C locale. */
static void put(char *buf, size_t size, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	struct tps_c_locale l;
	va_list ap;
	int n;
	if (*used >= size) {
		return;
	}
	tps_c_locale_enter(&l);
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	tps_c_locale_leave(&l);
	*used += n > 0 ? (size_t)n : 0;
}

void tps_diff_dtype_label(const cJSON *trace, char *buf, size_t size)
{
	const cJSON *dtype = member(member(trace, "config"), "dtype");
	const cJSON *v;
	size_t used = 0;
	buf[0] = '\0';
	if (!dtype) {
		put(buf, size, &used, "float32");
		return;
	}
	/* The normalised config has "dtype" only when some role is not
	 * float32: one name, or an object by role. */
	if (cJSON_IsString(dtype)) {
		put(buf, size, &used, "%s", dtype->valuestring);
	} else if (cJSON_IsObject(dtype)) {
		/* By role: the dtype most roles have, then the others'
		 * ("bfloat16 (master_params float32)"). */
		const cJSON *most = NULL;
		int best = 0, k = 0;
		cJSON_ArrayForEach(v, dtype)
		{
			const cJSON *w;
			int n = 0;
			cJSON_ArrayForEach(w, dtype)
			{
				n += cJSON_IsString(v) && cJSON_IsString(w) &&
				     strcmp(v->valuestring, w->valuestring) ==
					     0;
			}
			if (n > best) {
				best = n;
				most = v;
			}
		}
		if (most) {
			put(buf, size, &used, "%s", most->valuestring);
		}
		cJSON_ArrayForEach(v, dtype)
		{
			if (most && cJSON_IsString(v) &&
			    strcmp(v->valuestring, most->valuestring) != 0) {
				put(buf, size, &used, "%s%s %s",
				    k++ ? ", " : " (", v->string,
				    v->valuestring);
			}
		}
		if (k) {
			put(buf, size, &used, ")");
		}
	}
}

void tps_diff_trace_label(const cJSON *trace, bool brief, char *buf,
			  size_t size)
{
	const cJSON *mesh = member(trace, "mesh");
	const cJSON *shape = member(mesh, "shape");
	const cJSON *names = member(mesh, "dim_names");
	const cJSON *config = member(trace, "config");
	char dtype_buf[256];
	const cJSON *inject = member(config, "inject");
	const cJSON *v;
	size_t used = 0;
	int shown = 0;

	buf[0] = '\0';
	if (!brief) {
		put(buf, size, &used, "mesh ");
	}
	for (int i = 0; i < cJSON_GetArraySize(shape); i++) {
		const cJSON *n = cJSON_GetArrayItem(names, i);
		int s = (int)cJSON_GetArrayItem(shape, i)->valuedouble;
		if (brief && s == 1) {
			continue;
		}
		put(buf, size, &used, "%s%s=%d", shown ? " x " : "",
		    cJSON_IsString(n) ? n->valuestring : "?", s);
		shown++;
	}
	if (!shown) {
		put(buf, size, &used, "1 device");
	}
	tps_diff_dtype_label(trace, dtype_buf, sizeof dtype_buf);
	if (strcmp(dtype_buf, "float32") != 0) {
		put(buf, size, &used, "%s%s", brief ? " " : ", ", dtype_buf);
	}
	if (cJSON_IsArray(inject) && inject->child) {
		int k = 0;
		put(buf, size, &used, "%s", brief ? " " : ", inject ");
		cJSON_ArrayForEach(v, inject)
		{
			if (cJSON_IsString(v)) {
				put(buf, size, &used, "%s%s", k++ ? "+" : "",
				    v->valuestring);
			}
		}
	}
	if (!brief) {
		const cJSON *mode = member(config, "mode");
		const cJSON *steps = member(config, "steps");
		if (cJSON_IsString(mode) &&
		    strcmp(mode->valuestring, "training") == 0 &&
		    cJSON_IsNumber(steps)) {
			int n = (int)steps->valuedouble;
			put(buf, size, &used, ", %d training step%s", n,
			    n == 1 ? "" : "s");
		} else {
			put(buf, size, &used, ", inference");
		}
	}
}

/* ---- comparing --------------------------------------------------------- */

/* Whether a dp run's trace holds dp times the reference's value: each dp
 * rank's loss is scaled so that the dp average of the gradients is the
 * global gradient (model_step.c), so every backward value, and the
 * per-rank losses summed, are dp times the reference's. */
static bool dp_scaled(const struct tps_diff_row *r)
{
	return r->phase == TPS_PHASE_BACKWARD ||
	       (r->phase == TPS_PHASE_FORWARD &&
		strcmp(r->tensor, "loss") == 0);
}

static bool usable(const struct tps_bound *b, bool has,
		   const struct tps_shape *shape)
{
	return has && !tps_bound_is_none(b) &&
	       tps_shape_equal(&b->e.shape, shape);
}

/* Why the row has no bound: a side's reason, or that no rule bounds the
 * tensor. */
static void no_bound_reason(struct tps_diff_row *r, const char *name_a,
			    const char *name_b)
{
	const struct tps_bound *b =
		r->has_a && tps_bound_is_none(&r->bound_a)   ? &r->bound_a
		: r->has_b && tps_bound_is_none(&r->bound_b) ? &r->bound_b
							     : NULL;
	if (b) {
		snprintf(r->none, sizeof r->none, "%s", b->none);
	} else {
		snprintf(r->none, sizeof r->none,
			 "the bound pass does not bound %s in %s", r->tensor,
			 !r->has_a ? name_a : name_b);
	}
}

static void compare_values(struct tps_diff *d, struct tps_diff_row *r,
			   const struct tps_tensor *a, int dp_a,
			   const struct tps_tensor *b, int dp_b)
{
	int64_t n = tps_tensor_numel(a);
	double sa = dp_scaled(r) ? (double)dp_a : 1.0;
	double sb = dp_scaled(r) ? (double)dp_b : 1.0;
	bool bounded = usable(&r->bound_a, r->has_a, &a->shape) &&
		       usable(&r->bound_b, r->has_b, &b->shape);
	double scale = 0.0, worst = -1.0;
	const float *ea = bounded ? r->bound_a.e.data : NULL;
	const float *eb = bounded ? r->bound_b.e.data : NULL;
	bool zero = true;

	r->max_diff = 0.0;
	r->max_bound = 0.0;
	r->ratio = 0.0;
	r->at = -1;
	for (int64_t i = 0; i < n; i++) {
		double va = (double)a->data[i] / sa;
		double vb = (double)b->data[i] / sb;
		double diff = fabs(va - vb);
		scale = fabs(va) > scale ? fabs(va) : scale;
		if (diff > r->max_diff) {
			r->max_diff = diff;
			if (!bounded) {
				r->at = i;
				r->at_diff = diff;
			}
		}
		if (bounded) {
			double e = (double)ea[i] + (double)eb[i];
			double ratio = diff == 0.0 ? 0.0
				       : e > 0.0   ? diff / e
						   : INFINITY;
			zero = zero && e == 0.0;
			r->max_bound = e > r->max_bound ? e : r->max_bound;
			/* The worst ratio; among equal ones (infinite where
			 * the bound is 0) the largest difference. */
			if (diff > 0.0 &&
			    (ratio > worst ||
			     (ratio == worst && diff > r->at_diff))) {
				worst = ratio;
				r->at = i;
				r->at_diff = diff;
				r->at_bound = e;
			}
		}
	}
	if (bounded) {
		r->rule = zero ? TPS_COMPARE_EXACT : TPS_COMPARE_BOUND;
		r->ratio = worst > 0.0 ? worst : 0.0;
		r->within = r->ratio <= 1.0;
		return;
	}
	r->rule = TPS_COMPARE_TOLERANCE;
	d->tolerance_rows++;
	r->max_bound = d->atol + d->rtol * scale;
	r->ratio = r->max_diff == 0.0	? 0.0
		   : r->max_bound > 0.0 ? r->max_diff / r->max_bound
					: INFINITY;
	r->at_bound = r->max_bound;
	r->within = r->max_diff <= r->max_bound;
}

struct side {
	const cJSON *trace;
	const char *name;
	struct tps_run_spec spec;
	struct tps_mesh mesh;
	int dp;
	bool spec_made;
};

static enum tps_status compare_row(struct tps_diff *d, struct tps_diff_row *r,
				   const struct side *A, const struct side *B,
				   struct tps_error *err)
{
	struct tps_tensor a = {0}, b = {0};
	enum tps_status st = tps_trace_event_global(A->trace, A->name, &A->mesh,
						    r->event_a, &a, err);
	if (st == TPS_OK) {
		st = tps_trace_event_global(B->trace, B->name, &B->mesh,
					    r->event_b, &b, err);
	}
	if (st == TPS_OK) {
		r->shape_a = a.shape;
		r->shape_b = b.shape;
		if (!tps_shape_equal(&a.shape, &b.shape)) {
			r->shapes_differ = true;
			r->within = false;
			r->max_diff = INFINITY;
			r->ratio = INFINITY;
			r->rule = TPS_COMPARE_EXACT;
		} else {
			if (!usable(&r->bound_a, r->has_a, &a.shape) ||
			    !usable(&r->bound_b, r->has_b, &b.shape)) {
				no_bound_reason(r, A->name, B->name);
			}
			compare_values(d, r, &a, A->dp, &b, B->dp);
		}
	}
	tps_tensor_free(&a);
	tps_tensor_free(&b);
	tps_bound_free(&r->bound_a);
	tps_bound_free(&r->bound_b);
	return st;
}

static void free_rows(struct tps_diff_row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		tps_bound_free(&rows[i].bound_a);
		tps_bound_free(&rows[i].bound_b);
	}
	free(rows);
}

static enum tps_status side_init(struct side *s, const cJSON *trace,
				 const char *name, struct tps_error *err)
{
	enum tps_status st;
	s->trace = trace;
	s->name = name;
	st = tps_run_trace_spec(trace, name, true, &s->spec, err);
	if (st != TPS_OK) {
		return st;
	}
	s->spec_made = true;
	return tps_trace_read_mesh(&s->mesh, trace, name, err);
}

enum tps_status tps_diff_build(struct tps_diff *d, const cJSON *a,
			       const char *name_a, const cJSON *b,
			       const char *name_b, int threads,
			       struct tps_error *err)
{
	struct tps_diff n = {0};
	struct side sides[2] = {{0}, {0}};
	struct key_table t = {0};
	int events = cJSON_GetArraySize(member(a, "events")) +
		     cJSON_GetArraySize(member(b, "events"));
	enum tps_status st = TPS_OK;

	n.name_a = name_a;
	n.name_b = name_b;
	n.first = n.worst = -1;
	for (int s = 0; s < 2 && st == TPS_OK; s++) {
		st = side_init(&sides[s], s ? b : a, s ? name_b : name_a, err);
	}
	if (st == TPS_OK) {
		st = check_same_model(a, name_a, b, name_b, err);
	}
	if (st != TPS_OK) {
		goto out;
	}
	n.atol = fmax(sides[0].spec.atol, sides[1].spec.atol);
	n.rtol = fmax(sides[0].spec.rtol, sides[1].spec.rtol);
	n.n_modules = cJSON_GetArraySize(member(member(a, "config"), "model"));
	n.n_params = cJSON_GetArraySize(member(a, "params"));
	tps_diff_trace_label(a, false, n.label_a, sizeof n.label_a);
	tps_diff_trace_label(b, false, n.label_b, sizeof n.label_b);
	for (t.cap = 16; t.cap < 2 * (size_t)events + 2; t.cap *= 2) {
	}
	t.slot = calloc(t.cap, sizeof *t.slot);
	n.rows = calloc((size_t)events + 1, sizeof *n.rows);
	if (!t.slot || !n.rows) {
		st = tps_error_set(err, TPS_ERR_NOMEM, "out of memory");
		goto out;
	}
	st = add_events(&n, &t, a, 0, err);
	if (st == TPS_OK) {
		st = add_events(&n, &t, b, 1, err);
	}
	for (int s = 0; s < 2 && st == TPS_OK; s++) {
		struct bound_collector c = {&n, &t, s};
		struct tps_bound_sink sink = {collect_bound, &c};
		st = tps_run_bound_pass(&sides[s].spec, threads, sink,
					&sides[s].dp, err);
		if (st != TPS_OK) {
			char esc[256];
			tps_error_prefix(
				err, "%s: the bound pass of its config",
				tps_json_escape_for_message(sides[s].name, esc,
							    sizeof esc));
		}
	}
	for (int i = 0; i < n.n_rows && st == TPS_OK; i++) {
		struct tps_diff_row *r = &n.rows[i];
		if (r->event_a < 0 || r->event_b < 0) {
			if (r->event_a < 0) {
				n.only_b++;
			} else {
				n.only_a++;
			}
			tps_bound_free(&r->bound_a);
			tps_bound_free(&r->bound_b);
			continue;
		}
		n.compared++;
		st = compare_row(&n, r, &sides[0], &sides[1], err);
		if (st != TPS_OK) {
			break;
		}
		if (!r->within && n.first < 0) {
			n.first = i;
		}
		if (r->within && r->rule != TPS_COMPARE_TOLERANCE &&
		    (n.worst < 0 || r->ratio > n.rows[n.worst].ratio)) {
			n.worst = i;
		}
	}
out:
	free(t.slot);
	for (int s = 0; s < 2; s++) {
		if (sides[s].spec_made) {
			tps_run_spec_free(&sides[s].spec);
		}
	}
	if (st != TPS_OK) {
		free_rows(n.rows, n.n_rows);
		return st;
	}
	*d = n;
	return TPS_OK;
}

void tps_diff_free(struct tps_diff *d)
{
	if (!d) {
		return;
	}
	free_rows(d->rows, d->n_rows);
	memset(d, 0, sizeof *d);
}

/* ---- writing ----------------------------------------------------------- */

void tps_diff_row_name(const struct tps_diff_row *r, char *buf, size_t size)
{
	if (r->step < 0) {
		snprintf(buf, size, "%s, %s", tps_phase_names[r->phase],
			 r->tensor);
	} else {
		snprintf(buf, size, "step %d, %s, %s", r->step,
			 tps_phase_names[r->phase], r->tensor);
	}
}

static const char *verdict_word(const struct tps_diff_row *r)
{
	if (r->shapes_differ) {
		return "other shape";
	}
	switch (r->rule) {
	case TPS_COMPARE_EXACT: return r->within ? "exact" : "NOT rounding";
	case TPS_COMPARE_BOUND: return r->within ? "rounding" : "NOT rounding";
	case TPS_COMPARE_TOLERANCE:
		return r->within ? "within tolerance" : "beyond tolerance";
	}
	return "?";
}

/* The row's figures as the table shows them: max |A - B|, the bound at
 * the worst element (the largest when nothing differs; the tolerance
 * for the tolerance rule), and the ratio. */
static void row_figures(const struct tps_diff_row *r, char *diff, char *bound,
			char *ratio, size_t size)
{
	size_t u = 0;
	double e = r->at >= 0 && r->rule != TPS_COMPARE_TOLERANCE
			   ? r->at_bound
			   : r->max_bound;
	diff[0] = bound[0] = ratio[0] = '\0';
	if (r->shapes_differ) {
		snprintf(diff, size, "-");
		snprintf(bound, size, "-");
		snprintf(ratio, size, "-");
		return;
	}
	put(diff, size, &u, r->max_diff == 0.0 ? "0" : "%.2g", r->max_diff);
	u = 0;
	if (r->rule == TPS_COMPARE_TOLERANCE) {
		put(bound, size, &u, "tol %.1e", e);
	} else {
		put(bound, size, &u, e == 0.0 ? "0" : "%.1e", e);
	}
	u = 0;
	if (isinf(r->ratio)) {
		put(ratio, size, &u, "inf");
	} else {
		put(ratio, size, &u, r->ratio == 0.0 ? "0" : "%.2g", r->ratio);
	}
}

static void md_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\`*_{}[]<>#|~", *s)) {
			fputc('\\', out);
		}
		fputc(*s, out);
	}
}

/* One line of aligned columns, two spaces apart, the last unpadded. */
static void put_row(FILE *out, const char *const *cells, const size_t *width,
		    int n)
{
	for (int c = 0; c < n - 1; c++) {
		fprintf(out, "%-*s  ", (int)width[c], cells[c]);
	}
	fprintf(out, "%s\n", cells[n - 1]);
}

/* The first divergence, or that there is none, in one sentence. */
static void conclusion(const struct tps_diff *d, char *buf, size_t size)
{
	size_t u = 0;
	char where[TPS_NAME_MAX + 64], element[TPS_NAME_MAX + 64];
	buf[0] = '\0';
	if (d->compared == 0) {
		put(buf, size, &u,
		    "nothing compared: the traces have no tensor in common");
		return;
	}
	if (d->first >= 0) {
		const struct tps_diff_row *r = &d->rows[d->first];
		struct tps_compare_tensor t = {.section = "diff",
					       .shape = r->shape_a};
		char sa[64], sb[64];
		snprintf(t.name, sizeof t.name, "%s", r->tensor);
		tps_diff_row_name(r, where, sizeof where);
		tps_run_element_name(&t, r->at, element, sizeof element);
		put(buf, size, &u, "first divergence: %s: ", where);
		if (r->shapes_differ) {
			put(buf, size, &u, "has shape %s in %s and %s in %s",
			    tps_shape_format(&r->shape_a, sa, sizeof sa),
			    d->name_a,
			    tps_shape_format(&r->shape_b, sb, sizeof sb),
			    d->name_b);
		} else if (r->rule == TPS_COMPARE_EXACT) {
			put(buf, size, &u,
			    "differs by %.2g at %s, where no sum rounds "
			    "(bound 0)",
			    r->at_diff, element);
		} else if (r->rule == TPS_COMPARE_BOUND) {
			put(buf, size, &u,
			    "differs by %.2g at %s; reordering can explain at "
			    "most %.1e",
			    r->at_diff, element, r->at_bound);
		} else {
			put(buf, size, &u,
			    "differs by %.2g at %s, beyond the tolerance %.1e "
			    "(no error bound: %s)",
			    r->at_diff, element, r->max_bound, r->none);
		}
		return;
	}
	if (d->worst >= 0 && d->rows[d->worst].ratio > 0.0) {
		const struct tps_diff_row *r = &d->rows[d->worst];
		double most = 0.0;
		for (int i = 0; i < d->n_rows; i++) {
			if (d->rows[i].event_a >= 0 &&
			    d->rows[i].event_b >= 0 &&
			    d->rows[i].rule != TPS_COMPARE_TOLERANCE &&
			    d->rows[i].max_diff > most) {
				most = d->rows[i].max_diff;
			}
		}
		tps_diff_row_name(r, where, sizeof where);
		put(buf, size, &u,
		    "no divergence: the traces differ by at most %.2g, within "
		    "what reordering the sums can explain (the closest: %s, "
		    "%.2g of its bound)",
		    most, where, r->ratio);
	} else {
		put(buf, size, &u,
		    "no divergence: every bounded value is the same in both "
		    "traces");
	}
	if (d->tolerance_rows) {
		put(buf, size, &u,
		    "; %d tensor%s without an error bound within the "
		    "tolerance",
		    d->tolerance_rows, d->tolerance_rows == 1 ? "" : "s");
	}
}

void tps_diff_write(FILE *out, const struct tps_diff *d,
		    enum tps_diff_format format, long step)
{
	static const char *const head[] = {"step",	"phase", "tensor",
					   "max |A-B|", "bound", "ratio",
					   "verdict"};
	enum { COLS = 7 };
	size_t width[COLS];
	char cells[COLS][TPS_NAME_MAX + 32];
	char sentence[TPS_ERROR_MESSAGE_MAX + TPS_BOUND_REASON_MAX];
	bool md = format == TPS_DIFF_MARKDOWN;
	int shown = 0;

	for (int c = 0; c < COLS; c++) {
		width[c] = strlen(head[c]);
	}
	/* Two passes: the widths, then the rows. */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			if (md) {
				fputs("- A: ", out);
				md_text(out, d->name_a);
				fputs(": ", out);
				md_text(out, d->label_a);
				fputs("\n- B: ", out);
				md_text(out, d->name_b);
				fputs(": ", out);
				md_text(out, d->label_b);
				fputs("\n", out);
			} else {
				fprintf(out, "A: %s: %s\nB: %s: %s\n",
					d->name_a, d->label_a, d->name_b,
					d->label_b);
			}
			fprintf(out,
				"%sthe same model (%d module%s, %d "
				"parameter%s); %d tensor%s in both traces, in "
				"execution order; the bound is e_A + e_B, "
				"what reordering the sums can explain\n",
				md ? "- " : "", d->n_modules,
				d->n_modules == 1 ? "" : "s", d->n_params,
				d->n_params == 1 ? "" : "s", d->compared,
				d->compared == 1 ? "" : "s");
			if (d->only_a || d->only_b) {
				fprintf(out,
					"%snot compared: %d tensor%s only in "
					"A, %d only in B\n",
					md ? "- " : "", d->only_a,
					d->only_a == 1 ? "" : "s", d->only_b);
			}
			fputc('\n', out);
			if (md) {
				fputs("| step | phase | tensor | max \\|A-B\\| "
				      "| bound | ratio | verdict |\n"
				      "|---:|---|---|---:|---:|---:|---|\n",
				      out);
			} else {
				put_row(out, head, width, COLS);
			}
		}
		for (int i = 0; i < d->n_rows; i++) {
			const struct tps_diff_row *r = &d->rows[i];
			if (r->event_a < 0 || r->event_b < 0 ||
			    (step >= 0 && r->step != step)) {
				continue;
			}
			if (r->step < 0) {
				snprintf(cells[0], sizeof cells[0], "-");
			} else {
				snprintf(cells[0], sizeof cells[0], "%d",
					 r->step);
			}
			snprintf(cells[1], sizeof cells[1], "%s",
				 tps_phase_names[r->phase]);
			snprintf(cells[2], sizeof cells[2], "%s", r->tensor);
			row_figures(r, cells[3], cells[4], cells[5],
				    sizeof cells[3]);
			snprintf(cells[6], sizeof cells[6], "%s",
				 verdict_word(r));
			if (pass == 0) {
				for (int c = 0; c < COLS; c++) {
					size_t w = strlen(cells[c]);
					width[c] = w > width[c] ? w : width[c];
				}
				continue;
			}
			shown++;
			if (md) {
				fprintf(out,
					"| %s | %s | `%s` | %s | %s | %s "
					"| %s%s%s |\n",
					cells[0], cells[1], cells[2], cells[3],
					cells[4], cells[5],
					r->within ? "" : "**", cells[6],
					r->within ? "" : "**");
			} else {
				const char *row[COLS];
				for (int c = 0; c < COLS; c++) {
					row[c] = cells[c];
				}
				put_row(out, row, width, COLS);
			}
		}
	}
	if (!shown) {
		fprintf(out, "%s(no tensor of step %ld)\n", md ? "\n" : "",
			step);
	}
	conclusion(d, sentence, sizeof sentence);
	if (md) {
		fputs("\n**", out);
		md_text(out, sentence);
		fputs("**\n", out);
	} else {
		fprintf(out, "\n%s\n", sentence);
	}
}
