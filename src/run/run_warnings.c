/*
 * The warnings a run earns (run.h, run_internal.h): what a config asks
 * for that works but is likely not meant (TP off the innermost mesh dim,
 * a mesh dim that does nothing, dp ranks with unequal parts of the batch,
 * a symbolic run's unwritten values, a redistribution that the next one
 * undoes), as the sentences the trace's "warnings" and stderr hold.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "costs.h"
#include "jsonio.h"
#include "run_internal.h"

/* Whether a mesh dim's name reads as data parallelism ("dp",
 * "dp_shard", "data", "batch", any case): then the warning about an
 * unused dim says that dp_dim would split the batch over it. */
static bool looks_data_parallel(const char *name)
{
	static const char *const words[] = {"dp", "data", "batch"};
	for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
		size_t n = strlen(words[w]);
		for (const char *c = name; *c; c++) {
			if (strncasecmp(c, words[w], n) == 0) {
				return true;
			}
		}
	}
	return false;
}

/* Appends a warning, if there is room (there always is: see run.h). */
static void add_warning(struct tps_run_summary *summary, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_warning(struct tps_run_summary *summary, const char *fmt, ...)
{
	va_list ap;
	if (summary->n_warnings == TPS_RUN_MAX_WARNINGS) {
		return;
	}
	va_start(ap, fmt);
	vsnprintf(summary->warnings[summary->n_warnings++],
		  sizeof summary->warnings[0], fmt, ap);
	va_end(ap);
}

void tps_run_warnings(const struct tps_model_spec *spec,
		      const int64_t *dp_counts, int dp,
		      struct tps_run_summary *summary)
{
	const struct tps_mesh *mesh = &spec->mesh;
	bool mean_loss =
		spec->mode == TPS_MODE_TRAINING && spec->loss != TPS_LOSS_SUM;
	int64_t most = 0, least = 0;
	char esc[TPS_NAME_MAX * 4];

	summary->n_warnings = 0;
	if (spec->tp_dim != mesh->ndim - 1) {
		add_warning(summary,
			    "TP runs over mesh dim \"%s\" (dim %d of %d), not "
			    "the innermost: on a cluster the innermost dim is "
			    "the one inside a node, so every TP collective "
			    "here would cross the slower links between nodes. "
			    "PyTorch refuses this (TP needs to be the "
			    "innermost dimension on its parent mesh); "
			    "\"strict_tp_innermost\": true makes it an error "
			    "here too",
			    mesh->dim_names[spec->tp_dim], spec->tp_dim,
			    mesh->ndim);
	}
	/* A dim of size 1 holds one rank: it repeats nothing. */
	for (int i = 0; i < mesh->ndim; i++) {
		char hint[TPS_NAME_MAX * 4 + 96] = "";
		if (i == spec->tp_dim || (spec->dp_mask & (1u << i)) ||
		    mesh->shape[i] == 1 ||
		    (spec->pipeline.enabled && i == spec->pipeline.dim)) {
			continue;
		}
		tps_json_escape_for_message(mesh->dim_names[i], esc,
					    sizeof esc);
		if (looks_data_parallel(mesh->dim_names[i])) {
			snprintf(hint, sizeof hint,
				 "; naming it in \"dp_dim\" would split the "
				 "batch over it%s%s%s",
				 spec->dp_mask ? " too" : " (\"dp_dim\": \"",
				 spec->dp_mask ? "" : esc,
				 spec->dp_mask ? "" : "\")");
		}
		add_warning(summary,
			    "mesh dim \"%s\" (size %d) is neither tp_dim nor "
			    "dp_dim, so it does nothing: its %d ranks repeat "
			    "each other, each holding the same parameters and "
			    "computing %s%s",
			    esc, mesh->shape[i], mesh->shape[i],
			    spec->dp_mask ? "the same part of the batch"
					  : "the whole batch",
			    hint);
	}
	for (int r = 0; r < dp; r++) {
		most = r == 0 || dp_counts[r] > most ? dp_counts[r] : most;
		least = r == 0 || dp_counts[r] < least ? dp_counts[r] : least;
	}
	if (mean_loss && dp > 1 && most != least) {
		if (spec->dp_grad == TPS_DP_GRAD_GLOBAL) {
			add_warning(
				summary,
				"the dp ranks hold unequal parts of the batch "
				"(%lld to %lld samples): DDP's plain average "
				"of their local means would weight samples "
				"unequally; with dp_grad global each rank's "
				"loss is scaled by its share, so the step is "
				"the global-batch gradient",
				(long long)most, (long long)least);
		} else {
			add_warning(
				summary,
				"the dp ranks hold unequal parts of the batch "
				"(%lld to %lld samples): with dp_grad ddp the "
				"step is the plain average of the ranks' "
				"local means, as DDP's, so a sample on a rank "
				"with fewer weighs more than one on a rank "
				"with more, and the step is not the gradient "
				"of the global-batch mean (dp_grad global "
				"scales each rank's loss by its share)",
				(long long)most, (long long)least);
		}
	}
}

/* A symbolic run whose /trace/values asked for values: one rule, whether
 * the config or --symbolic made it symbolic (config.h). */
static void values_warning(const struct tps_run_spec *spec,
			   struct tps_run_summary *summary)
{
	if (spec->values_ignored == TPS_TRACE_VALUES_NONE) {
		return;
	}
	add_warning(summary,
		    "/trace/values: \"%s\" is not written: a symbolic run has "
		    "no values, so the trace holds shapes and placements only "
		    "(\"values\": \"none\")",
		    tps_trace_values_names[spec->values_ignored]);
}

enum tps_status tps_run_collect_warnings(const struct tps_run_spec *spec,
					 const struct tps_model *model,
					 struct tps_run_summary *summary,
					 struct tps_error *err)
{
	char plan_warning[TPS_COST_WARNING_MAX];
	enum tps_status st;

	tps_run_warnings(&spec->model, model->dp_counts, model->dp, summary);
	values_warning(spec, summary);
	/* Redistributions that the next one undoes: a meta pass of one
	 * step, since the warnings head the trace. */
	st = tps_cost_plan_warning(&spec->model, plan_warning, err);
	if (st == TPS_OK && plan_warning[0]) {
		add_warning(summary, "%s", plan_warning);
	}
	return st;
}
