/*
 * The error bounds hold (issue 17, item 3; docs/numerics.md): random
 * configs from a fixed seed, each run as `tpsim run` runs it (tps_run,
 * the trace to /dev/null), every element compared by a bound handed to
 * this test (run.h, struct tps_run_element_sink) and held to
 *
 *   |sim_i - ref_i| <= 2 e_i
 *
 * with no tolerance in the config (so no slack). A failure prints the
 * config, the tensor, the element, both values, d and 2e: it is a bound
 * rule that does not hold, to be reported, not loosened here.
 *
 * The same run measures how tight the bounds are: |d| / (2 e) over the
 * elements with e > 0, per kind of tensor (the output, the losses, the
 * gradients, the parameters after the last update) and overall, printed
 * as a table. docs/numerics.md's "How tight the bounds are" holds that
 * table between generated-block markers: tools/docs_sync.py runs this
 * program with TPSIM_BOUNDS_MARKDOWN=1 (the table alone on stdout, no
 * Check output) and the `bounds_docs` test fails when the page's table
 * differs from what this test measures.
 *
 * TPSIM_BOUNDS_CONFIGS=N runs the first N configs only (the sanitizer
 * build: the figures then differ from the page's, and nothing compares
 * them); the default, and the least the normal build runs, is
 * BOUNDS_CONFIGS.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "rng.h"
#include "run.h"
#include "testutil.h"

#define BOUNDS_CONFIGS 500
#define BOUNDS_SEED    17
/* Violations printed in full (every one is counted). */
#define MAX_SHOWN 20

/* Set in the Markdown mode, which runs outside Check. */
static bool markdown;

/* Fails the test (the Markdown mode: exits 2) unless ok. */
static void need(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void need(bool ok, const char *fmt, ...)
{
	char msg[8192];
	va_list ap;
	if (ok) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (markdown) {
		fprintf(stderr, "test_bounds_property: %s\n", msg);
		exit(2);
	}
	ck_abort_msg("%s", msg);
}

/* ---- the statistics ---------------------------------------------------- */

enum kind { KIND_OUTPUT, KIND_LOSS, KIND_GRAD, KIND_PARAM, KIND_COUNT };
static const char *const kind_names[KIND_COUNT] = {
	"activations (the output)", "losses", "gradients",
	"parameters after the update"};
static_assert(sizeof kind_names / sizeof kind_names[0] == KIND_COUNT,
	      "a name per kind");

struct ratios {
	double *v; /* |d| / (2 e) of each element with e > 0 */
	size_t n, cap;
	int64_t tensors, unbounded; /* tensors compared; without a bound */
	int64_t elements;	    /* compared by a bound (e = 0 included) */
	int64_t exact;		    /* of them, with e = 0 */
	int64_t zero_diff;	    /* with e > 0 and d = 0 */
};

/* Why tensors have no bound: each reason without the tensor's name
 * before its first ": ", and how often. */
#define MAX_REASONS 32
struct reason {
	char text[TPS_BOUND_REASON_MAX];
	int64_t count;
	int first;			/* the first config that gave it */
	char tensor[TPS_NAME_MAX + 16]; /* and its tensor there */
};

struct stats {
	struct ratios kind[KIND_COUNT];
	struct reason reasons[MAX_REASONS];
	int n_reasons;
	int configs, training, violations, shown;
	int overflowed; /* configs skipped: a NaN or Inf in the run */
	/* The config being run, for the messages. */
	int index;
	const char *text;
	bool shown_config;
	bool verbose; /* print each tensor's comparison */
};

static enum kind kind_of(const char *section)
{
	if (!strcmp(section, "loss")) {
		return KIND_LOSS;
	}
	if (!strcmp(section, "grads")) {
		return KIND_GRAD;
	}
	if (!strcmp(section, "params_after")) {
		return KIND_PARAM;
	}
	return KIND_OUTPUT;
}

static void count_reason(struct stats *s, const char *none, const char *tensor)
{
	const char *p = strstr(none, ": ");
	p = p ? p + 2 : none;
	for (int i = 0; i < s->n_reasons; i++) {
		if (!strcmp(s->reasons[i].text, p)) {
			s->reasons[i].count++;
			return;
		}
	}
	if (s->n_reasons < MAX_REASONS) {
		struct reason *r = &s->reasons[s->n_reasons++];
		snprintf(r->text, sizeof r->text, "%s", p);
		snprintf(r->tensor, sizeof r->tensor, "%s", tensor);
		r->first = s->index;
		r->count = 1;
	}
}

static void push(struct ratios *r, double v)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 4096;
		double *p = realloc(r->v, cap * sizeof *p);
		need(p != NULL, "out of memory");
		r->v = p;
		r->cap = cap;
	}
	r->v[r->n++] = v;
}

static void on_element(void *ctx, const struct tps_compare_tensor *t,
		       int64_t at, float sim, float ref, double bound)
{
	struct stats *s = ctx;
	struct ratios *r = &s->kind[kind_of(t->section)];
	double d = fabs((double)sim - (double)ref);
	r->elements++;
	if (bound == 0.0) {
		r->exact++;
	} else {
		push(r, d / bound);
		r->zero_diff += d == 0.0 ? 1 : 0;
	}
	if (d <= bound) {
		return;
	}
	s->violations++;
	if (s->shown >= MAX_SHOWN) {
		return;
	}
	s->shown++;
	if (!s->shown_config) {
		printf("config %d:\n%s\n", s->index, s->text);
		s->shown_config = true;
	}
	{
		char name[TPS_NAME_MAX + 64];
		tps_run_element_name(t, at, name, sizeof name);
		printf("BOUND EXCEEDED: config %d, %s (%s): sim %.9g, ref "
		       "%.9g, |d| %.9g > 2e %.9g (e %.9g, ratio %.4g)\n",
		       s->index, name, t->section, (double)sim, (double)ref, d,
		       bound, bound / 2.0, bound > 0.0 ? d / bound : INFINITY);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The nearest-rank q-quantile of n sorted values (n > 0). */
static double quantile(const double *v, size_t n, double q)
{
	size_t k = (size_t)ceil(q * (double)n);
	return v[k ? k - 1 : 0];
}

/* One row of the table: kind, tensors, without a bound, elements by a
 * bound, of them with bound 0, with e > 0, of those d = 0; then of
 * |d| / (2 e) over e > 0 the median, the median where d > 0, the 99th
 * percentile and the max. */
static void print_row(FILE *f, const char *what, struct ratios *r)
{
	size_t nz;
	fprintf(f,
		"| %s | %" PRId64 " | %" PRId64 " | %" PRId64 " | %" PRId64
		" | %zu | ",
		what, r->tensors, r->unbounded, r->elements, r->exact, r->n);
	if (r->n == 0) {
		fprintf(f, "- | - | - | - | - |\n");
		return;
	}
	/* Sorted, the ratios of d = 0 come first. */
	qsort(r->v, r->n, sizeof *r->v, cmp_double);
	nz = r->n - (size_t)r->zero_diff;
	fprintf(f, "%.1f%% | %.2g | ",
		100.0 * (double)r->zero_diff / (double)r->n,
		quantile(r->v, r->n, 0.5));
	if (nz) {
		fprintf(f, "%.2g | ", quantile(r->v + r->zero_diff, nz, 0.5));
	} else {
		fprintf(f, "- | ");
	}
	fprintf(f, "%.2g | %.2g |\n", quantile(r->v, r->n, 0.99),
		r->v[r->n - 1]);
}

static void print_table(FILE *f, struct stats *s)
{
	struct ratios all = {0};
	fprintf(f,
		"%d configs, %d of them training (seed %d; %d more were "
		"skipped: their runs overflowed float32). The ratios are "
		"|sim - ref| / (2 e) over the elements with a bound e > 0:\n\n",
		s->configs, s->training, BOUNDS_SEED, s->overflowed);
	fprintf(f, "| tensors | compared | no bound | elements by a bound | "
		   "bound 0 | e > 0 | d = 0 (of e > 0) | median | median "
		   "where d > 0 | 99th percentile | max |\n");
	fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		   "\n");
	for (int k = 0; k < KIND_COUNT; k++) {
		struct ratios *r = &s->kind[k];
		all.tensors += r->tensors;
		all.unbounded += r->unbounded;
		all.elements += r->elements;
		all.exact += r->exact;
		all.zero_diff += r->zero_diff;
		for (size_t i = 0; i < r->n; i++) {
			push(&all, r->v[i]);
		}
		print_row(f, kind_names[k], r);
	}
	print_row(f, "all", &all);
	free(all.v);
	fprintf(f, "\nTensors without a bound, by reason (the first config "
		   "and tensor that gave it):\n\n");
	if (!s->n_reasons) {
		fprintf(f, "- none\n");
	}
	for (int i = 0; i < s->n_reasons; i++) {
		const struct reason *r = &s->reasons[i];
		fprintf(f, "- %" PRId64 ": %s (config %d, `%s`)\n", r->count,
			r->text, r->first, r->tensor);
	}
}

static void stats_free(struct stats *s)
{
	for (int k = 0; k < KIND_COUNT; k++) {
		free(s->kind[k].v);
	}
}

/* ---- the configs -------------------------------------------------------- */

static int pick(struct tps_rng *r, int n)
{
	return (int)(tps_rng_next(r) % (uint64_t)n);
}

static bool chance(struct tps_rng *r, int percent)
{
	return pick(r, 100) < percent;
}

static cJSON *int_array(int n, const int *v)
{
	cJSON *a = cJSON_CreateIntArray(v, n);
	need(a != NULL, "out of memory");
	return a;
}

/* What the generator knows of the activation between modules. */
struct gen {
	struct tps_rng *rng;
	cJSON *model, *plan;
	int width; /* the activation's last dim */
	int ndim;  /* the activation's dims */
	int tp;
	int n; /* modules named so far */
	bool has_linear;
};

static void add_name(struct gen *g, cJSON *m, const char *prefix)
{
	char name[32];
	snprintf(name, sizeof name, "%s%d", prefix, g->n++);
	cJSON_AddStringToObject(m, "name", name);
}

static int feature(struct tps_rng *r)
{
	/* 1 to 9, the small ones (fewer than the ranks: empty shards)
	 * often. */
	return 1 + pick(r, 9);
}

/* A linear's plan entry: a style, or NULL for none (replicated). */
static cJSON *linear_style(struct gen *g)
{
	static const char *const biases[] = {"after_reduce", "partial_split",
					     "rank0"};
	cJSON *o;
	switch (pick(g->rng, 9)) {
	case 0: return NULL;
	case 1: return cJSON_CreateString("replicate");
	case 2: return cJSON_CreateString("colwise");
	case 3:
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "style", "colwise");
		cJSON_AddStringToObject(o, "output", "replicate");
		return o;
	case 4: return cJSON_CreateString("rowwise");
	case 5:
	case 6:
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "style", "rowwise");
		cJSON_AddStringToObject(o, "bias", biases[pick(g->rng, 3)]);
		return o;
	default:
		/* Sequence parallel, on (batch, seq, features). */
		o = cJSON_CreateObject();
		if (g->ndim != 3) {
			cJSON_AddStringToObject(o, "style", "colwise");
			return o;
		}
		if (chance(g->rng, 50)) {
			cJSON_AddStringToObject(o, "style", "colwise");
			cJSON_AddStringToObject(o, "input", "shard(1)");
		} else {
			cJSON_AddStringToObject(o, "style", "rowwise");
			cJSON_AddStringToObject(o, "output", "shard(1)");
			cJSON_AddStringToObject(o, "bias",
						biases[pick(g->rng, 3)]);
		}
		return o;
	}
}

/* A linear to out features; bias -1: at random, else 0 or 1. */
static void add_linear_bias(struct gen *g, cJSON *list, int out, int bias)
{
	cJSON *m = cJSON_CreateObject(), *style;
	char name[32];
	add_name(g, m, "fc");
	snprintf(name, sizeof name, "%s",
		 cJSON_GetObjectItem(m, "name")->valuestring);
	cJSON_AddStringToObject(m, "type", "linear");
	cJSON_AddNumberToObject(m, "in_features", g->width);
	cJSON_AddNumberToObject(m, "out_features", out);
	cJSON_AddBoolToObject(m, "bias",
			      bias < 0 ? chance(g->rng, 75) : bias != 0);
	cJSON_AddItemToArray(list, m);
	style = linear_style(g);
	if (style) {
		cJSON_AddItemToObject(g->plan, name, style);
	}
	g->width = out;
	g->has_linear = true;
}

static void add_linear(struct gen *g, cJSON *list, int out)
{
	add_linear_bias(g, list, out, -1);
}

static void add_act(struct gen *g, cJSON *list)
{
	cJSON *m = cJSON_CreateObject();
	add_name(g, m, "act");
	cJSON_AddStringToObject(m, "type",
				chance(g->rng, 50) ? "relu" : "gelu");
	cJSON_AddItemToArray(list, m);
}

/* y = x + body(x): a linear to a hidden width, an activation, back. */
static void add_residual(struct gen *g, cJSON *list)
{
	cJSON *m = cJSON_CreateObject(), *body = cJSON_CreateArray();
	int w = g->width;
	add_name(g, m, "res");
	cJSON_AddStringToObject(m, "type", "residual");
	if (chance(g->rng, 30)) {
		add_linear(g, body, w);
	} else {
		add_linear(g, body, feature(g->rng));
		add_act(g, body);
		add_linear(g, body, w);
	}
	cJSON_AddItemToObject(m, "body", body);
	cJSON_AddItemToArray(list, m);
}

static const char *param_init(struct tps_rng *r)
{
	static const char *const m[] = {"uniform", "uniform", "normal",
					"torch",   "arange",  "ones"};
	return m[pick(r, 6)];
}

static const char *data_init(struct tps_rng *r)
{
	static const char *const m[] = {"uniform", "uniform", "normal",
					"arange", "ones"};
	return m[pick(r, 5)];
}

static bool integral_init(const char *m)
{
	return !strcmp(m, "arange") || !strcmp(m, "ones");
}

/* Rows of `in` floats whose exact sum is 0: values drawn from U(-1, 1)
 * and their negations (a 0 when in is odd), shuffled, so that a float
 * sum rounds to a few ulps either side of 0, or to 0, depending on its
 * order. (batch, in), or (batch, seq, in) when seq > 0. */
static cJSON *cancelling_rows(struct tps_rng *r, int batch, int seq, int in)
{
	cJSON *outer = cJSON_CreateArray();
	for (int b = 0; b < batch; b++) {
		cJSON *mid = seq > 0 ? cJSON_CreateArray() : outer;
		for (int t = 0; t < (seq > 0 ? seq : 1); t++) {
			float v[16] = {0};
			cJSON *row;
			for (int k = 0; k + 1 < in; k += 2) {
				v[k] = tps_rng_uniform(r, 1.0f);
				v[k + 1] = -v[k];
			}
			for (int k = in - 1; k > 0; k--) {
				int o = pick(r, k + 1);
				float x = v[k];
				v[k] = v[o];
				v[o] = x;
			}
			row = cJSON_CreateFloatArray(v, in);
			need(row != NULL, "out of memory");
			cJSON_AddItemToArray(mid, row);
		}
		if (seq > 0) {
			cJSON_AddItemToArray(outer, mid);
		}
	}
	return outer;
}

/* The batch a chunk split gives dp rank r. */
static int chunk_part(int batch, int dp, int r)
{
	int c = (batch + dp - 1) / dp, left = batch - r * c;
	return left < 0 ? 0 : left < c ? left : c;
}

static cJSON *make_optimizer(struct tps_rng *r, bool integral)
{
	cJSON *o = cJSON_CreateObject();
	if (chance(r, 30)) {
		cJSON_AddStringToObject(o, "type", "adamw");
		cJSON_AddNumberToObject(o, "lr", chance(r, 50) ? 1e-3 : 1e-2);
		if (chance(r, 40)) {
			double b[2] = {0.8, 0.99};
			cJSON_AddItemToObject(o, "betas",
					      cJSON_CreateDoubleArray(b, 2));
		}
		if (chance(r, 30)) {
			cJSON_AddNumberToObject(o, "eps", 1e-6);
		}
		if (chance(r, 30)) {
			cJSON_AddNumberToObject(o, "weight_decay", 0);
		}
		return o;
	}
	cJSON_AddStringToObject(o, "type", "sgd");
	if (integral) {
		/* Integer runs grow fast: a power of two keeps the step
		 * exact where the gradient is. */
		cJSON_AddNumberToObject(o, "lr",
					chance(r, 50) ? 0.0009765625 : 1e-4);
	} else {
		static const double lrs[] = {0.1, 0.05, 0.5, 0.01};
		cJSON_AddNumberToObject(o, "lr", lrs[pick(r, 4)]);
	}
	switch (pick(r, 4)) {
	case 0: break;
	case 1: cJSON_AddNumberToObject(o, "momentum", 0.9); break;
	case 2:
		cJSON_AddNumberToObject(o, "momentum", 0.5);
		cJSON_AddBoolToObject(o, "nesterov", true);
		break;
	default:
		cJSON_AddNumberToObject(o, "momentum", 0.9);
		cJSON_AddNumberToObject(o, "dampening", 0.1);
		break;
	}
	if (chance(r, 40)) {
		cJSON_AddNumberToObject(o, "weight_decay", 0.01);
	}
	return o;
}

/*
 * Config number i, as JSON text (the caller frees): the same text for
 * the same i on every run and build.
 */
static char *make_config(int i)
{
	struct tps_rng rng;
	cJSON *c = cJSON_CreateObject(), *mesh = cJSON_CreateObject();
	cJSON *input = cJSON_CreateObject(), *init = cJSON_CreateObject();
	struct gen g = {.rng = &rng,
			.model = cJSON_CreateArray(),
			.plan = cJSON_CreateObject()};
	int dp = 1, batch, seq, in;
	int shape[3];
	/* integral: integer parameters; big: arange data (values grow
	 * fast, so training takes small steps); cancel: rows that sum to
	 * nearly 0 into a first linear of ones, whose rounding then decides
	 * the sign of what follows (relu's mask, gelu near 0) */
	bool training, embedding, cancel, integral, big = false;
	const char *pinit;
	char *text;

	tps_rng_seed(&rng, (uint64_t)BOUNDS_SEED * 1000003u + (uint64_t)i);
	g.tp = 1 + pick(&rng, 8);
	cJSON_AddNumberToObject(c, "tpsim", 1);
	switch (pick(&rng, 6)) {
	case 0:
	case 1: {
		int s[2];
		const char *n[2] = {"dp", "tp"};
		dp = 2 + pick(&rng, 2);
		s[0] = dp;
		s[1] = g.tp;
		cJSON_AddItemToObject(mesh, "shape", int_array(2, s));
		cJSON_AddItemToObject(mesh, "dim_names",
				      cJSON_CreateStringArray(n, 2));
		cJSON_AddItemToObject(c, "mesh", mesh);
		cJSON_AddStringToObject(c, "dp_dim", "dp");
		break;
	}
	case 2: {
		/* dp over two flattened dims. */
		int s[3] = {2, 2, g.tp > 4 ? 4 : g.tp};
		const char *n[3] = {"dp", "cp", "tp"};
		const char *d[2] = {"dp", "cp"};
		g.tp = s[2];
		dp = 4;
		cJSON_AddItemToObject(mesh, "shape", int_array(3, s));
		cJSON_AddItemToObject(mesh, "dim_names",
				      cJSON_CreateStringArray(n, 3));
		cJSON_AddItemToObject(c, "mesh", mesh);
		cJSON_AddItemToObject(c, "dp_dim",
				      cJSON_CreateStringArray(d, 2));
		break;
	}
	default: {
		const char *n[1] = {"tp"};
		cJSON_AddItemToObject(mesh, "shape", int_array(1, &g.tp));
		cJSON_AddItemToObject(mesh, "dim_names",
				      cJSON_CreateStringArray(n, 1));
		cJSON_AddItemToObject(c, "mesh", mesh);
		break;
	}
	}
	training = chance(&rng, 65);
	embedding = chance(&rng, 15);
	cancel = !embedding && chance(&rng, 15);
	pinit = cancel ? "ones" : param_init(&rng);
	integral = integral_init(pinit);
	batch = 1 + pick(&rng, 5);
	seq = 1 + pick(&rng, 4);
	g.ndim = chance(&rng, 35) || embedding ? 3 : 2;

	if (embedding) {
		cJSON *m = cJSON_CreateObject(), *style;
		int vocab = 1 + pick(&rng, 12);
		add_name(&g, m, "emb");
		cJSON_AddStringToObject(m, "type", "embedding");
		cJSON_AddNumberToObject(m, "num_embeddings", vocab);
		g.width = feature(&rng);
		cJSON_AddNumberToObject(m, "embedding_dim", g.width);
		cJSON_AddItemToArray(g.model, m);
		if (chance(&rng, 60)) {
			style = cJSON_CreateString("vocab");
			if (chance(&rng, 30)) {
				cJSON_Delete(style);
				style = cJSON_CreateObject();
				cJSON_AddStringToObject(style, "style",
							"vocab");
				cJSON_AddStringToObject(style, "output",
							"shard(1)");
			}
			cJSON_AddItemToObject(g.plan, "emb0", style);
		}
		shape[0] = batch;
		shape[1] = seq;
		cJSON_AddItemToObject(input, "shape", int_array(2, shape));
		cJSON_AddStringToObject(input, "init", "tokens");
		cJSON_AddNumberToObject(input, "seed", pick(&rng, 1000));
	} else if (cancel) {
		g.width = in = 3 + pick(&rng, 7);
		cJSON_AddItemToObject(input, "values",
				      cancelling_rows(&rng, batch,
						      g.ndim == 3 ? seq : 0,
						      in));
	} else {
		g.width = in = feature(&rng);
		shape[0] = batch;
		shape[1] = g.ndim == 3 ? seq : in;
		shape[2] = in;
		cJSON_AddItemToObject(input, "shape", int_array(g.ndim, shape));
		const char *di =
			integral ? (chance(&rng, 50) ? "arange" : "ones")
				 : data_init(&rng);
		big = !strcmp(di, "arange");
		cJSON_AddStringToObject(input, "init", di);
		if (!integral_init(di)) {
			cJSON_AddNumberToObject(input, "seed",
						pick(&rng, 1000));
		}
	}
	{
		/* 1 to 4 modules after any embedding, at least one
		 * linear, the last a linear most often. */
		int n = 1 + pick(&rng, integral ? 2 : 4);
		if (cancel) {
			add_linear_bias(&g, g.model, feature(&rng), 0);
			add_act(&g, g.model);
			n = pick(&rng, 3);
		}
		for (int k = 0; k < n; k++) {
			int what = pick(&rng, 6);
			if (k == n - 1 && !g.has_linear) {
				what = 0;
			}
			if (what <= 2) {
				add_linear(&g, g.model, feature(&rng));
			} else if (what <= 4) {
				add_act(&g, g.model);
			} else {
				add_residual(&g, g.model);
			}
		}
	}
	cJSON_AddItemToObject(c, "model", g.model);
	cJSON_AddItemToObject(c, "plan", g.plan);
	if (training && !embedding && chance(&rng, 25)) {
		cJSON_AddBoolToObject(input, "requires_grad", true);
	}
	cJSON_AddItemToObject(c, "input", input);
	cJSON_AddStringToObject(init, "method", pinit);
	cJSON_AddNumberToObject(init, "seed", pick(&rng, 1000));
	cJSON_AddItemToObject(c, "init", init);
	if (dp > 1 && batch % dp == 0 && chance(&rng, 30)) {
		cJSON_AddStringToObject(c, "sampler", "distributed");
	}
	if (training) {
		bool sum = chance(&rng, 40);
		bool every = true;
		cJSON_AddStringToObject(c, "mode", "training");
		cJSON_AddNumberToObject(c, "steps", 1 + pick(&rng, 3));
		cJSON_AddStringToObject(c, "loss", sum ? "sum" : "mse");
		if (!sum) {
			cJSON *t = cJSON_CreateObject();
			const char *ti = integral ? "arange" : data_init(&rng);
			big = big || !strcmp(ti, "arange");
			if (chance(&rng, 30)) {
				ti = "zeros";
			}
			cJSON_AddStringToObject(t, "init", ti);
			cJSON_AddNumberToObject(t, "seed", pick(&rng, 1000));
			cJSON_AddItemToObject(c, "target", t);
		}
		cJSON_AddItemToObject(c, "optimizer",
				      make_optimizer(&rng, integral || big));
		for (int r = 0; r < dp; r++) {
			every = every && chunk_part(batch, dp, r) > 0;
		}
		if (dp > 1 && (sum || every) && chance(&rng, 30)) {
			cJSON_AddStringToObject(c, "dp_grad", "ddp");
		}
	}
	{
		static const char *const v[] = {"none", "summary", "full"};
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "values", v[pick(&rng, 3)]);
		cJSON_AddItemToObject(c, "trace", t);
	}
	text = cJSON_Print(c);
	need(text != NULL, "out of memory");
	cJSON_Delete(c);
	return text;
}

/* ---- what the configs cover -------------------------------------------- */

/* Every feature the configs must cover, read back from each config's
 * JSON (not from the generator's choices): the full run fails unless
 * each is met at least once. */
static const char *const features[] = {"tp=1",
				       "tp=2",
				       "tp=3",
				       "tp=4",
				       "tp=5",
				       "tp=6",
				       "tp=7",
				       "tp=8",
				       "dp x tp",
				       "dp over two dims",
				       "linear",
				       "linear without bias",
				       "relu",
				       "gelu",
				       "residual",
				       "embedding",
				       "unplanned linear",
				       "replicate",
				       "colwise",
				       "colwise output=replicate",
				       "colwise input=shard(1)",
				       "rowwise bias=after_reduce",
				       "rowwise bias=partial_split",
				       "rowwise bias=rank0",
				       "rowwise output=shard(1)",
				       "vocab",
				       "vocab output=shard(1)",
				       "uneven colwise",
				       "uneven rowwise",
				       "uneven vocab",
				       "empty shard",
				       "init uniform",
				       "init normal",
				       "init torch",
				       "init arange",
				       "init ones",
				       "input uniform",
				       "input normal",
				       "input arange",
				       "input ones",
				       "input tokens",
				       "input values",
				       "3-d input",
				       "inference",
				       "training",
				       "steps=3",
				       "loss mse",
				       "loss sum",
				       "sgd",
				       "sgd momentum",
				       "sgd nesterov",
				       "sgd dampening",
				       "sgd weight_decay",
				       "adamw",
				       "dp_grad ddp",
				       "sampler distributed",
				       "input requires_grad"};
#define N_FEATURES ((int)(sizeof features / sizeof features[0]))
static int64_t covered[N_FEATURES];

static void cover(const char *what)
{
	for (int i = 0; i < N_FEATURES; i++) {
		if (!strcmp(features[i], what)) {
			covered[i]++;
			return;
		}
	}
	need(false, "cover(\"%s\"): not in the list of features", what);
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valueint : 0;
}

/* A planned module's style, its feature, and whether the dim it splits
 * over tp is uneven (or leaves a rank empty). */
static void cover_style(const cJSON *m, const cJSON *style, int tp)
{
	const char *st = cJSON_IsString(style) ? style->valuestring
					       : str(style, "style");
	const char *in = str(style, "input"), *out = str(style, "output");
	const char *bias = str(style, "bias");
	char key[64];
	int split = 0;
	if (!strcmp(st, "rowwise")) {
		snprintf(key, sizeof key, "rowwise %s",
			 out ? "output=shard(1)" : "");
		if (!out) {
			snprintf(key, sizeof key, "rowwise bias=%s",
				 bias ? bias : "after_reduce");
		}
		split = num(m, "in_features");
	} else if (!strcmp(st, "colwise")) {
		snprintf(key, sizeof key, "colwise%s%s",
			 in    ? " input="
			 : out ? " output="
			       : "",
			 in    ? in
			 : out ? out
			       : "");
		split = num(m, "out_features");
	} else if (!strcmp(st, "vocab")) {
		snprintf(key, sizeof key, "vocab%s%s", out ? " output=" : "",
			 out ? out : "");
		split = num(m, "num_embeddings");
	} else {
		snprintf(key, sizeof key, "%s", st);
	}
	cover(key);
	if (split && tp > 1 && split % tp) {
		snprintf(key, sizeof key, "uneven %s", st);
		cover(key);
	}
	if (split && tp > 1 && split < tp) {
		cover("empty shard");
	}
}

static void cover_modules(const cJSON *list, const cJSON *plan, int tp)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, list)
	{
		const char *type = str(m, "type");
		const cJSON *style =
			cJSON_GetObjectItemCaseSensitive(plan, str(m, "name"));
		cover(type);
		if (!strcmp(type, "residual")) {
			cover_modules(cJSON_GetObjectItem(m, "body"), plan, tp);
		}
		if (!strcmp(type, "linear") &&
		    cJSON_IsFalse(cJSON_GetObjectItem(m, "bias"))) {
			cover("linear without bias");
		}
		if (style) {
			cover_style(m, style, tp);
		} else if (!strcmp(type, "linear")) {
			cover("unplanned linear");
		}
	}
}

/* Counts what config `text` covers. */
static void cover_config(const char *text)
{
	cJSON *c = cJSON_Parse(text);
	const cJSON *mesh, *shape, *input, *opt;
	char key[64];
	int tp, ndims;
	need(c != NULL, "a config does not parse back");
	mesh = cJSON_GetObjectItem(c, "mesh");
	shape = cJSON_GetObjectItem(mesh, "shape");
	ndims = cJSON_GetArraySize(shape);
	tp = cJSON_GetArrayItem(shape, ndims - 1)->valueint;
	snprintf(key, sizeof key, "tp=%d", tp);
	cover(key);
	if (ndims == 2) {
		cover("dp x tp");
	} else if (ndims == 3) {
		cover("dp over two dims");
	}
	cover_modules(cJSON_GetObjectItem(c, "model"),
		      cJSON_GetObjectItem(c, "plan"), tp);
	snprintf(key, sizeof key, "init %s",
		 str(cJSON_GetObjectItem(c, "init"), "method"));
	cover(key);
	input = cJSON_GetObjectItem(c, "input");
	snprintf(key, sizeof key, "input %s",
		 str(input, "init") ? str(input, "init") : "values");
	cover(key);
	if (cJSON_IsTrue(cJSON_GetObjectItem(input, "requires_grad"))) {
		cover("input requires_grad");
	}
	if (cJSON_GetArraySize(cJSON_GetObjectItem(input, "shape")) == 3 ||
	    cJSON_IsArray(cJSON_GetArrayItem(
		    cJSON_GetArrayItem(cJSON_GetObjectItem(input, "values"), 0),
		    0))) {
		cover("3-d input");
	}
	if (str(c, "sampler")) {
		cover("sampler distributed");
	}
	if (!str(c, "mode")) {
		cover("inference");
		cJSON_Delete(c);
		return;
	}
	cover("training");
	if (num(c, "steps") == 3) {
		cover("steps=3");
	}
	snprintf(key, sizeof key, "loss %s", str(c, "loss"));
	cover(key);
	if (str(c, "dp_grad")) {
		cover("dp_grad ddp");
	}
	opt = cJSON_GetObjectItem(c, "optimizer");
	cover(str(opt, "type"));
	if (!strcmp(str(opt, "type"), "sgd")) {
		static const char *const keys[] = {"momentum", "nesterov",
						   "dampening", "weight_decay"};
		for (int i = 0; i < 4; i++) {
			if (cJSON_GetObjectItem(opt, keys[i])) {
				snprintf(key, sizeof key, "sgd %s", keys[i]);
				cover(key);
			}
		}
	}
	cJSON_Delete(c);
}

/* ---- the runs ------------------------------------------------------------ */

static int configs_to_run(void)
{
	const char *v = getenv("TPSIM_BOUNDS_CONFIGS");
	char *end;
	long n;
	if (!v || !*v) {
		return BOUNDS_CONFIGS;
	}
	errno = 0;
	n = strtol(v, &end, 10);
	need(!errno && !*end && n >= 1 && n <= 100000,
	     "TPSIM_BOUNDS_CONFIGS=%s: expected a count 1-100000", v);
	return (int)n;
}

/* Runs config i, its elements into s. */
static void run_one(struct stats *s, int i)
{
	char *text = make_config(i);
	struct tps_run_element_sink sink = {on_element, s};
	struct tps_run_options opts = {
		.config_path = "bounds_property.json",
		.config_text = text,
		.config_len = strlen(text),
		.output_path = "/dev/null",
		.max_memory = TPS_DEFAULT_MAX_MEMORY,
		.max_trace = TPS_DEFAULT_MAX_TRACE,
		.threads = 1,
		.elements = &sink,
	};
	struct tps_run_summary sum = {0};
	struct tps_error err = {0};
	enum tps_status st;

	s->index = i;
	s->text = text;
	cover_config(text);
	s->shown_config = false;
	st = tps_run(&opts, NULL, &sum, &err);
	if (st == TPS_ERR_NUMERIC) {
		/* A run that overflows float32 compares nothing: the next
		 * config takes its place, and the count says how many. */
		s->overflowed++;
		free(text);
		return;
	}
	need(st == TPS_OK, "config %d:\n%s\nfailed: %s", i, text, err.message);
	s->configs++;
	s->training += sum.steps > 0 ? 1 : 0;
	for (int k = 0; k < sum.comparison.n; k++) {
		const struct tps_compare_tensor *t = &sum.comparison.t[k];
		struct ratios *r = &s->kind[kind_of(t->section)];
		r->tensors++;
		if (s->verbose) {
			printf("%-24s %-9s max |d| %.3g, max 2e %.3g, worst "
			       "ratio %.3g%s%s\n",
			       t->name, tps_compare_rule_names[t->rule],
			       (double)t->max_abs_diff, t->max_bound, t->ratio,
			       t->none[0] ? ": " : "", t->none);
		}
		if (t->rule == TPS_COMPARE_TOLERANCE) {
			r->unbounded++;
			/* No bound needs its reason. */
			need(t->none[0],
			     "config %d: %s has no bound and no "
			     "reason",
			     i, t->name);
			count_reason(s, t->none, t->name);
		}
	}
	tps_run_summary_free(&sum);
	free(text);
}

/* Runs configs 0, 1, ... until n of them compared. */
static void run_all(struct stats *s, int n)
{
	for (int i = 0; s->configs < n; i++) {
		run_one(s, i);
		need(s->overflowed <= n / 20 + 1,
		     "%d of %d configs overflowed float32: the generator "
		     "makes too many",
		     s->overflowed, i + 1);
	}
}

START_TEST(no_difference_exceeds_its_bound)
{
	struct stats s = {0};
	int n = configs_to_run();
	run_all(&s, n);
	print_table(stdout, &s);
	ck_assert_msg(s.violations == 0,
		      "%d elements beyond twice their bound (the first %d "
		      "printed above, with their configs)",
		      s.violations, s.shown);
	ck_assert_int_eq(s.configs, n);
	printf("\nWhat the configs cover (occurrences):\n");
	for (int i = 0; i < N_FEATURES; i++) {
		printf("  %6" PRId64 "  %s\n", covered[i], features[i]);
	}
	for (int i = 0; n >= BOUNDS_CONFIGS && i < N_FEATURES; i++) {
		ck_assert_msg(covered[i] > 0, "no config covers %s",
			      features[i]);
	}
	stats_free(&s);
}
END_TEST

static Suite *bounds_property_suite(void)
{
	Suite *s = suite_create("bounds_property");
	TCase *tc = tcase_create("bounds");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, no_difference_exceeds_its_bound);
	suite_add_tcase(s, tc);
	return s;
}

/* TPSIM_BOUNDS_SHOW=i: config i and how each of its tensors compared,
 * for a look at one config the table or a failure names. */
static int show_one(const char *v)
{
	char *end, *text;
	long i;
	struct stats s = {0};
	errno = 0;
	i = strtol(v, &end, 10);
	markdown = true; /* outside Check */
	need(!errno && !*end && i >= 0 && i < 1000000,
	     "TPSIM_BOUNDS_SHOW=%s: expected a config number", v);
	text = make_config((int)i);
	printf("config %ld:\n%s\n", i, text);
	free(text);
	s.verbose = true;
	run_one(&s, (int)i);
	stats_free(&s);
	return s.violations ? 1 : 0;
}

int main(void)
{
	if (getenv("TPSIM_BOUNDS_SHOW")) {
		return show_one(getenv("TPSIM_BOUNDS_SHOW"));
	}
	if (getenv("TPSIM_BOUNDS_MARKDOWN")) {
		/* The table alone, for docs/numerics.md (tools/docs_sync.py,
		 * "bounds-property"): every config, checked as the test
		 * checks them. */
		struct stats s = {0};
		markdown = true;
		run_all(&s, BOUNDS_CONFIGS);
		if (s.violations) {
			fprintf(stderr,
				"%d elements beyond twice their bound: run "
				"the bounds_property test\n",
				s.violations);
			stats_free(&s);
			return 1;
		}
		print_table(stdout, &s);
		stats_free(&s);
		return 0;
	}
	return tu_run_suite(bounds_property_suite());
}
