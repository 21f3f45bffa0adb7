/*
 * "pipeline" (docs/pipeline.md): pipeline parallelism over a mesh dim, in
 * training. Its keys, their defaults, and the rules across them and the
 * rest of the config: the pp dim is neither the tp dim nor a dp dim; each
 * dp rank's part of the batch is a multiple of the microbatches;
 * virtual_stages only with interleaved_1f1b, whose microbatches are a
 * multiple of the stages (Megatron's rule); every virtual stage holds at
 * least one top-level module, the ranges in order and covering the model;
 * a tied weight within one stage; under "recompute": "full", no
 * transformer_block cut between two stages.
 *
 * Without "stages", the split is even by parameter count (the rule is
 * split_even's, and docs/pipeline.md states it).
 */
#include "config_internal.h"
#include "nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The units a split may not cut: each top-level module, but under
 * "recompute": "full" a transformer_block's block_span top-level modules
 * together (the chunk run again in backward). unit_of[i] is top-level
 * module i's unit; first_of[u] the unit's first top-level module. */
struct units {
	int n_top, n_units;
	int *top;      /* n_top: the spec index of each top-level module */
	int *unit_of;  /* n_top */
	int *first_of; /* n_units + 1: first_of[n_units] = n_top */
	/* Parameter elements per unit (a tied linear counts none: its
	 * weight is its embedding's). */
	int64_t *params;
};

static void units_free(struct units *u)
{
	free(u->top);
	free(u->unit_of);
	free(u->first_of);
	free(u->params);
}

/* Parameter elements of spec module i and its descendants. */
static int64_t module_params(const struct tps_model_spec *spec, int i)
{
	int64_t n = 0;
	for (int j = i; j <= i + spec->modules[i].n_descendants; j++) {
		struct tps_param_spec ps[TPS_MODULE_MAX_PARAMS];
		const struct tps_module_spec *m = &spec->modules[j];
		int k = tps_module_ops_of(m->type)->parameters(m, spec->tp_dim,
							       ps);
		for (int q = 0; q < k; q++) {
			int64_t e = 1;
			for (int d = 0; d < ps[q].shape.ndim; d++) {
				e = tps_sat_mul(e, ps[q].shape.dim[d]);
			}
			n = tps_sat_add(n, e);
		}
	}
	return n;
}

static bool units_init(struct cfg *c, const struct tps_model_spec *spec,
		       struct units *u)
{
	bool full = spec->recompute == TPS_RECOMPUTE_FULL;
	int n = 0;
	memset(u, 0, sizeof *u);
	for (int i = 0; i < spec->n_modules;
	     i += 1 + spec->modules[i].n_descendants) {
		n++;
	}
	u->top = malloc((size_t)n * sizeof *u->top);
	u->unit_of = malloc((size_t)n * sizeof *u->unit_of);
	u->first_of = malloc((size_t)(n + 1) * sizeof *u->first_of);
	u->params = calloc((size_t)n, sizeof *u->params);
	if (!u->top || !u->unit_of || !u->first_of || !u->params) {
		units_free(u);
		cfg_nomem(c);
		return false;
	}
	u->n_top = n;
	n = 0;
	for (int i = 0; i < spec->n_modules;
	     i += 1 + spec->modules[i].n_descendants) {
		u->top[n++] = i;
	}
	for (int t = 0; t < u->n_top;) {
		const struct tps_module_spec *m = &spec->modules[u->top[t]];
		int span = full && m->block_span > 0 ? m->block_span : 1;
		u->first_of[u->n_units] = t;
		for (int k = 0; k < span && t < u->n_top; k++, t++) {
			u->unit_of[t] = u->n_units;
			u->params[u->n_units] =
				tps_sat_add(u->params[u->n_units],
					    module_params(spec, u->top[t]));
		}
		u->n_units++;
	}
	u->first_of[u->n_units] = u->n_top;
	return true;
}

/*
 * The default split of the units into K = p v virtual stages, even by
 * parameter count, as DeepSpeed's PipelineModule(partition_method=
 * "parameters") balances it (the linear partition problem): the split
 * whose heaviest virtual stage holds the fewest parameters, B. Among
 * those, the one that fills each virtual stage in turn: stage k takes
 * units while its parameters stay within B and one unit is left for each
 * later stage. greedy() is that fill for a bound b: whether it places
 * every unit, ranges set when r is not NULL.
 */
static bool greedy(const struct units *u, int K, int64_t b,
		   struct tps_pp_range *r)
{
	int j = 0;
	for (int k = 0; k < K; k++) {
		int first = j;
		int64_t sum = 0;
		/* Every stage takes at least one unit, the last all left. */
		while (j < u->n_units && (j == first || k == K - 1 ||
					  (sum + u->params[j] <= b &&
					   u->n_units - j > K - k - 1))) {
			sum += u->params[j++];
		}
		if (sum > b) {
			return false;
		}
		if (r) {
			r[k].first = u->first_of[first];
			r[k].last = u->first_of[j] - 1;
		}
	}
	return true;
}

static void split_even(const struct units *u, int K, struct tps_pp_range *r)
{
	int64_t lo = 0, hi = 0;
	for (int i = 0; i < u->n_units; i++) {
		lo = u->params[i] > lo ? u->params[i] : lo;
		hi = tps_sat_add(hi, u->params[i]);
	}
	/* The least b that greedy places every unit under: it places them
	 * under the total, and every b below the largest unit fails. */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (greedy(u, K, mid, NULL)) {
			hi = mid;
		} else {
			lo = mid + 1;
		}
	}
	greedy(u, K, lo, r);
}

/* ---- the keys --------------------------------------------------------- */

struct pp_ctx {
	struct tps_model_spec *spec;
	const struct units *u;
	struct tps_pp_range *ranges; /* p v */
	int n;			     /* p v */
	int next; /* the top-level module the next range must start at */
	int k;	  /* the range being read */
};

static void pp_dim(struct cfg *c, const cJSON *v, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	char esc[96];
	int d;
	if (!cfg_expect(c, v, cJSON_IsString, "a mesh dim name")) {
		return;
	}
	d = tps_mesh_dim_index(&spec->mesh, v->valuestring);
	tps_json_escape_for_message(v->valuestring, esc, sizeof esc);
	if (d < 0) {
		cfg_fail(c, TPS_ERR_INPUT, "no mesh dim is named \"%s\"", esc);
	} else if (d == spec->tp_dim) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "\"%s\" is the tp dim (/tp_dim, by default the last "
			 "mesh dim): expected a dim of its own, the stages "
			 "over it",
			 esc);
	} else if (spec->dp_mask & (1u << d)) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "\"%s\" is a dp dim (/dp_dim): expected a dim of its "
			 "own, the stages over it",
			 esc);
	} else {
		spec->pipeline.dim = d;
		spec->pipeline.p = spec->mesh.shape[d];
	}
}

/* The transformer_block a range ending at top-level module `last` would
 * cut under "recompute": "full" (its first module's spec index), or -1. */
static int cut_block(const struct pp_ctx *x, int last)
{
	const struct units *u = x->u;
	if (last + 1 >= u->n_top || u->unit_of[last] != u->unit_of[last + 1]) {
		return -1;
	}
	return u->top[u->first_of[u->unit_of[last]]];
}

/* "modules 3 to 5" or "module 3". */
static const char *module_span(int a, int b, char *buf, size_t size)
{
	if (a == b) {
		snprintf(buf, size, "module %d", a);
	} else {
		snprintf(buf, size, "modules %d to %d", a, b);
	}
	return buf;
}

/* /pipeline/stages/<k>/<i>: first (i 0) or last (i 1). */
static void bound_item(struct cfg *c, const cJSON *e, int i, void *ctx)
{
	struct pp_ctx *x = ctx;
	const struct units *u = x->u;
	struct tps_pp_range *r = &x->ranges[x->k];
	char span[64];
	int64_t v;
	int block;
	if (!cfg_read_int(c, e, 0, TPS_MAX_MODULES - 1, &v)) {
		return;
	}
	if (v >= u->n_top) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "expected a top-level module index, 0 to %d (the "
			 "model has %d), got %lld",
			 u->n_top - 1, u->n_top, (long long)v);
		return;
	}
	if (i == 0) {
		r->first = (int)v;
		if (v > x->next && x->k == 0) {
			cfg_fail(c, TPS_ERR_INPUT,
				 "expected 0, the model's first top-level "
				 "module, got %lld: %s would be in no stage",
				 (long long)v,
				 module_span(0, (int)v - 1, span, sizeof span));
		} else if (v > x->next) {
			cfg_fail(c, TPS_ERR_INPUT,
				 "expected %d, the module after the last of "
				 "/pipeline/stages/%d, got %lld: %s would be "
				 "in no stage",
				 x->next, x->k - 1, (long long)v,
				 module_span(x->next, (int)v - 1, span,
					     sizeof span));
		} else if (v < x->next) {
			cfg_fail(c, TPS_ERR_INPUT,
				 "expected %d, the module after the last of "
				 "/pipeline/stages/%d, got %lld: %s would be "
				 "in two stages (the ranges overlap)",
				 x->next, x->k - 1, (long long)v,
				 module_span((int)v, x->next - 1, span,
					     sizeof span));
		}
		return;
	}
	r->last = (int)v;
	if (v < r->first) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "last %lld is before first %d: virtual stage %d "
			 "would have no modules (expected last >= first)",
			 (long long)v, r->first, x->k);
		return;
	}
	if (x->k == x->n - 1 && v != u->n_top - 1) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "expected %d, the model's last top-level module, got "
			 "%lld: %s would be in no stage",
			 u->n_top - 1, (long long)v,
			 module_span((int)v + 1, u->n_top - 1, span,
				     sizeof span));
		return;
	}
	block = cut_block(x, (int)v);
	if (block >= 0) {
		char esc[TPS_NAME_MAX + 32];
		cfg_fail(
			c, TPS_ERR_INPUT,
			"the range ends inside the transformer_block that "
			"starts at %s (\"recompute\": \"full\" runs a block "
			"again as one chunk, on one stage): expected a range "
			"that ends at a block's end",
			tps_json_escape_for_message(
				x->spec->modules[block].name, esc, sizeof esc));
		return;
	}
	x->next = (int)v + 1;
}

/* /pipeline/stages/<k>: [first, last], top-level module indices. */
static void stage_item(struct cfg *c, const cJSON *item, int index, void *ctx)
{
	struct pp_ctx *x = ctx;
	if (!cfg_expect(c, item, cJSON_IsArray,
			"[first, last], top-level module indices")) {
		return;
	}
	if (cJSON_GetArraySize(item) != 2) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "expected [first, last], 2 top-level module indices, "
			 "got %d numbers",
			 cJSON_GetArraySize(item));
		return;
	}
	x->k = index;
	cfg_each_item(c, item, bound_item, x);
}

static void stages_body(struct cfg *c, const cJSON *v, void *ctx)
{
	struct pp_ctx *x = ctx;
	const struct tps_pipeline_spec *pp = &x->spec->pipeline;
	if (!cfg_expect(c, v, cJSON_IsArray,
			"an array of [first, last] ranges")) {
		return;
	}
	if (cJSON_GetArraySize(v) != x->n) {
		cfg_fail(c, TPS_ERR_INPUT,
			 "expected %d ranges, one per virtual stage (%d stages "
			 "x %d virtual_stages), got %d",
			 x->n, pp->p, pp->virtual_stages,
			 cJSON_GetArraySize(v));
		return;
	}
	x->next = 0;
	cfg_each_item(c, v, stage_item, x);
}

/* The batch's rows on each dp rank, cut in m microbatches of equal rows
 * (Megatron's global batch = micro batch x microbatches x dp). Then the
 * sampler splits a microbatch of batch / m rows into each dp rank's
 * rows / m (model_pipeline.c's microbatches): the chunk rule gives
 * ceil(n / k)-row chunks, and when each is a multiple of m, ceil(n / (m
 * k)) is ceil(n / k) / m; a chunk of chunks applies that dim by dim;
 * DistributedSampler's parts are equal. */
static void check_microbatches(struct cfg *c, const struct tps_model_spec *spec)
{
	int m = spec->pipeline.microbatches;
	int dp = tps_mesh_group_size(&spec->mesh, spec->dp_mask);
	int64_t batch = spec->input_shape.dim[0];
	for (int r = 0; r < dp && cfg_ok(c); r++) {
		int64_t start, rows;
		tps_dp_split_range(spec, r, &start, &rows);
		if (rows % m == 0 && rows > 0) {
			continue;
		}
		if (dp == 1) {
			cfg_fail_at(c, "microbatches", TPS_ERR_INPUT,
				    "the batch of %lld rows (/input/shape/0) "
				    "is not a multiple of %d microbatches "
				    "(expected equal microbatches of at least "
				    "one row)",
				    (long long)batch, m);
		} else {
			cfg_fail_at(c, "microbatches", TPS_ERR_INPUT,
				    "dp rank %d's part of the batch is %lld "
				    "rows (of %lld, %s sampler), not a "
				    "multiple of %d microbatches (expected "
				    "every dp rank's part cut in equal "
				    "microbatches of at least one row)",
				    r, (long long)rows, (long long)batch,
				    tps_sampler_names[spec->sampler], m);
		}
	}
}

/* The range (virtual stage) holding top-level module t. */
static int range_of(const struct tps_pipeline_spec *pp,
		    const struct tps_pp_range *ranges, int t)
{
	int k = 0;
	while (k < pp->p * pp->virtual_stages - 1 && ranges[k].last < t) {
		k++;
	}
	return k;
}

/* The top-level module holding spec module j. */
static int top_of(const struct units *u, int j)
{
	int t = 0;
	while (t + 1 < u->n_top && u->top[t + 1] <= j) {
		t++;
	}
	return t;
}

/* A tied weight is one parameter of two modules: on two stages Megatron
 * all-reduces its gradient between them (the embedding group), which
 * tpsim does not model. */
static void check_tie(struct cfg *c, const struct tps_model_spec *spec,
		      const struct units *u, const struct tps_pp_range *ranges,
		      const char *key)
{
	const struct tps_pipeline_spec *pp = &spec->pipeline;
	for (int j = 0; j < spec->n_modules && cfg_ok(c); j++) {
		const struct tps_module_spec *m = &spec->modules[j];
		int e = 0, a, b;
		if (!m->tie[0]) {
			continue;
		}
		while (e < j && strcmp(spec->modules[e].name, m->tie) != 0) {
			e++;
		}
		a = range_of(pp, ranges, top_of(u, e));
		b = range_of(pp, ranges, top_of(u, j));
		if (a != b) {
			cfg_fail_at(c, key, TPS_ERR_INPUT,
				    "%s ties its weight to %s's, but they "
				    "are on virtual stages %d and %d "
				    "(Megatron then all-reduces the tied "
				    "gradient between the two stages, which "
				    "tpsim does not model): expected both in "
				    "one range, or no tie",
				    m->name, m->tie, b, a);
		}
	}
}

static void pipeline_body(struct cfg *c, const cJSON *pl, void *ctx)
{
	struct tps_model_spec *spec = ctx;
	struct tps_pipeline_spec *pp = &spec->pipeline;
	int schedule = TPS_PP_1F1B;
	int64_t m = 1, v = 1;
	bool interleaved;
	struct units u = {0};
	struct pp_ctx x = {spec, &u, NULL, 0, 0, 0};
	const char *where;

	cfg_value(c, pl, "dim", CFG_REQUIRED, pp_dim, spec);
	cfg_int(c, pl, "microbatches", CFG_REQUIRED, 1,
		TPS_PP_MAX_CHUNK_MICROBATCHES, &m);
	cfg_choice(c, pl, "schedule", "schedule", tps_pp_schedule_names,
		   &schedule);
	interleaved = schedule == TPS_PP_INTERLEAVED_1F1B;
	if (cfg_ok(c) && !interleaved && cfg_get(pl, "virtual_stages")) {
		cfg_fail_at(c, "virtual_stages", TPS_ERR_INPUT,
			    "virtual_stages (model chunks per stage) is "
			    "interleaved_1f1b's: schedule %s runs one chunk "
			    "per stage",
			    tps_pp_schedule_names[schedule]);
	}
	if (interleaved) {
		cfg_int(c, pl, "virtual_stages", CFG_REQUIRED, 2,
			TPS_PP_MAX_CHUNK_MICROBATCHES, &v);
	}
	if (!cfg_ok(c)) {
		return;
	}
	pp->microbatches = (int)m;
	pp->schedule = (enum tps_pp_schedule)schedule;
	pp->virtual_stages = (int)v;
	where = interleaved ? "virtual_stages" : "dim";
	if (m * v > TPS_PP_MAX_CHUNK_MICROBATCHES) {
		cfg_fail_at(c, "virtual_stages", TPS_ERR_LIMIT,
			    "microbatches x virtual_stages is %lld, past the "
			    "limit %d",
			    (long long)(m * v), TPS_PP_MAX_CHUNK_MICROBATCHES);
		return;
	}
	if ((int64_t)pp->p * m * v > TPS_PP_MAX_OPS_HALF) {
		cfg_fail_at(c, "microbatches", TPS_ERR_LIMIT,
			    "stages x microbatches x virtual_stages is %lld, "
			    "past the limit %d",
			    (long long)(pp->p * m * v), TPS_PP_MAX_OPS_HALF);
		return;
	}
	if (interleaved && m % pp->p != 0) {
		cfg_fail_at(c, "microbatches", TPS_ERR_INPUT,
			    "%lld microbatches, not a multiple of the %d "
			    "stages: interleaved_1f1b runs them in groups of "
			    "p (expected a multiple, as Megatron requires)",
			    (long long)m, pp->p);
		return;
	}
	check_microbatches(c, spec);
	if (!cfg_ok(c) || !units_init(c, spec, &u)) {
		return;
	}
	x.n = pp->p * pp->virtual_stages;
	if (x.n > u.n_units) {
		cfg_fail_at(c, where, TPS_ERR_INPUT,
			    "%d virtual stages (%d stages x %d "
			    "virtual_stages) for a model of %d top-level "
			    "modules%s: expected at most one stage per "
			    "module, no stage without modules",
			    x.n, pp->p, pp->virtual_stages, u.n_units,
			    u.n_units < u.n_top ? " (under \"recompute\": "
						  "\"full\", a "
						  "transformer_block counts "
						  "as one)"
						: "");
		units_free(&u);
		return;
	}
	x.ranges = calloc((size_t)x.n, sizeof *x.ranges);
	if (!x.ranges) {
		cfg_nomem(c);
	} else if (cfg_get(pl, "stages")) {
		cfg_value(c, pl, "stages", CFG_OPTIONAL, stages_body, &x);
		where = "stages";
	} else {
		split_even(&u, x.n, x.ranges);
	}
	if (cfg_ok(c)) {
		check_tie(c, spec, &u, x.ranges, where);
	}
	units_free(&u);
	if (!cfg_ok(c)) {
		free(x.ranges);
		return;
	}
	pp->ranges = x.ranges;
	pp->enabled = true;
}

void cfg_check_pipeline_dropout(struct cfg *c,
				const struct tps_model_spec *spec)
{
	int m = spec->pipeline.microbatches;
	if (!spec->pipeline.enabled) {
		return;
	}
	for (int i = 0; i < spec->n_modules && cfg_ok(c) && m > 1; i++) {
		const struct tps_module_spec *d = &spec->modules[i];
		if (d->type == TPS_MODULE_DROPOUT && d->p > 0) {
			cfg_fail_at_pointer(
				c, "/pipeline/microbatches",
				TPS_ERR_UNSUPPORTED,
				"dropout %s draws each element's mask from "
				"its place in the batch, which tpsim does "
				"not carry into %d microbatches: expected 1 "
				"microbatch, no dropout, or \"compute\": "
				"\"symbolic\" (which draws no mask)",
				d->name, m);
		}
	}
}

void cfg_parse_pipeline(struct cfg *c, const cJSON *root,
			struct tps_model_spec *spec)
{
	static const char *const keys[] = {"dim",      "microbatches",
					   "schedule", "virtual_stages",
					   "stages",   NULL};
	free(spec->pipeline.ranges);
	memset(&spec->pipeline, 0, sizeof spec->pipeline);
	cfg_object(c, root, "pipeline", CFG_OPTIONAL, keys, pipeline_body,
		   spec);
}
