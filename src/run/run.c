/*
 * One `tpsim run` (run.h), start to end: the config loaded, the run's
 * budgets checked (run_budget.c), the model built and run on every rank
 * into the trace, through the one output writer (outfile.h), and the
 * reference run and compared (run_compare.c), its warnings
 * (run_warnings.c) and an injected mistake's diagnosis (run_diagnose.c)
 * written into the trace; the time and memory each phase took. The
 * summary the CLI prints is filled here.
 */
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backend.h"
#include "jsonio.h"
#include "memory.h"
#include "numfmt.h"
#include "optim.h"
#include "outfile.h"
#include "pool.h"
#include "trace.h"
#include "run_internal.h"

static void describe_mesh(const struct tps_mesh *m, char *buf, size_t size)
{
	size_t used = 0;
	for (int i = 0; i < m->ndim && used < size; i++) {
		int n = snprintf(buf + used, size - used, "%s%s=%d",
				 i ? " x " : "", m->dim_names[i], m->shape[i]);
		used += n > 0 ? (size_t)n : 0;
	}
}
/* The process's peak resident set, from getrusage (Linux: KiB). */
static int64_t peak_rss_bytes(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0) {
		return 0;
	}
	return (int64_t)ru.ru_maxrss * 1024;
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The trace's sink, timed: the seconds spent writing events are taken
 * out of the phase that emitted them. */
struct timed_sink {
	struct tps_event_sink inner;
	double *seconds;
	const struct tps_mesh *mesh;
};

/* Under a backend (backend.h) process 0 writes the trace: it needs every
 * rank's values of each event. */
static bool writer_needs(const void *ctx, const struct tps_mesh *mesh, int p,
			 int r)
{
	(void)ctx;
	(void)mesh;
	(void)r;
	return p == 0;
}

static enum tps_status timed_emit(void *ctx, const struct tps_event *ev,
				  struct tps_error *err)
{
	struct timed_sink *ts = ctx;
	double t0 = now_seconds();
	enum tps_status st = TPS_OK;
	struct tps_tensor *locals = ev->value ? ev->value->locals : NULL;
	if (locals && ts->mesh->backend) {
		/* The event's values, one event at a time: fetched to
		 * process 0, written, and dropped again. */
		st = tps_backend_fetch(ts->mesh, locals, writer_needs, NULL,
				       TPS_TRAFFIC_TRACE, err);
	}
	if (st == TPS_OK && tps_mesh_is_writer(ts->mesh)) {
		st = tps_event_emit(ts->inner, ev, err);
	}
	if (locals) {
		tps_backend_drop(ts->mesh, locals);
	}
	*ts->seconds += now_seconds() - t0;
	return st;
}

/* A process other than 0 under a backend, while process 0 writes the
 * trace's parameters without keeping them whole: the same exchanges, in
 * the same order, this process's shards among them. */
static enum tps_status share_params(const struct tps_model *model,
				    struct tps_error *err)
{
	enum tps_status st = TPS_OK;
	for (int i = 0; st == TPS_OK && i < model->n_params; i++) {
		struct tps_tensor whole = {0};
		st = tps_dtensor_full_tensor_on_writer(&model->params[i].value,
						       &whole, err);
		tps_tensor_free(&whole);
	}
	return st;
}

/* Adds the seconds since *t0 to *total and restarts *t0. */
static void lap(double *t0, double *total)
{
	double t = now_seconds();
	*total += t - *t0;
	*t0 = t;
}
enum tps_status tps_run_meta_inputs(const struct tps_model_spec *ms,
				    bool with_target, struct tps_tensor *input,
				    struct tps_tensor *target,
				    struct tps_error *err)
{
	struct tps_shape oshape = tps_model_output_shape(ms);
	enum tps_status st = tps_tensor_init_meta(input, &ms->input_shape, err);
	if (ms->loss == TPS_LOSS_CROSS_ENTROPY) {
		oshape.ndim--; /* a class id per row */
	}
	if (st == TPS_OK && with_target) {
		st = tps_tensor_init_meta(target, &oshape, err);
	}
	return st;
}

/* The simulation proper, writing into an open trace. */
static enum tps_status simulate(struct tps_run_spec *spec,
				struct tps_trace *trace, bool keep_losses,
				const struct tps_run_element_sink *elements,
				struct tps_run_summary *summary,
				struct tps_error *err)
{
	struct tps_run_stats *stats = &summary->stats;
	double t0 = now_seconds(), events_s = 0.0;
	const struct tps_model_spec *ms = &spec->model;
	struct timed_sink timed = {tps_trace_sink(trace), &events_s, &ms->mesh};
	struct tps_event_sink sink = {timed_emit, &timed};
	/* Process 0 of a backend, or the one process: it writes the trace
	 * and runs the reference. */
	bool writer = tps_mesh_is_writer(&ms->mesh);
	struct tps_model model = {0};
	struct tps_tensor input = {0}, target = {0};
	struct tps_model_outcome sim = {0}, ref = {0};
	bool symbolic = spec->compute == TPS_COMPUTE_SYMBOLIC;
	bool with_reference = !symbolic && !spec->no_reference;
	struct tps_trace_result result = {.model = &model,
					  .sim = &sim,
					  .ref = with_reference ? &ref : NULL,
					  .symbolic = symbolic};
	const char *warnings[TPS_RUN_MAX_WARNINGS];
	bool with_target =
		ms->mode == TPS_MODE_TRAINING && ms->loss != TPS_LOSS_SUM;
	enum tps_status st = TPS_OK;
	cJSON *echoed;

	if (writer) {
		st = tps_trace_begin(trace, spec->normalized, err);
	}
	/* The config's explicit values are echoed, and spec->model holds
	 * them as tensors: their doubles, as many as the model's floats, go
	 * before the model is made, and their pages (and the config text's)
	 * with them rather than stay resident under the model's. */
	echoed = cJSON_DetachItemFromObjectCaseSensitive(spec->normalized,
							 "params");
	if (echoed) {
		cJSON_Delete(echoed);
		tps_memory_release_free();
	}
	lap(&t0, &stats->trace_s);
	if (st == TPS_OK) {
		st = symbolic ? tps_model_init_meta(&model, ms, err)
			      : tps_model_init(&model, ms, err);
	}
	if (st != TPS_OK) {
		return st;
	}
	st = tps_run_collect_warnings(spec, &model, summary, err);
	if (st != TPS_OK) {
		tps_model_free(&model);
		return st;
	}
	for (int i = 0; i < summary->n_warnings; i++) {
		warnings[i] = summary->warnings[i];
	}
	if (symbolic) {
		st = tps_run_meta_inputs(ms, with_target, &input, &target, err);
	} else {
		st = tps_model_make_input(ms, &input, err);
	}
	if (st == TPS_OK && !symbolic && with_target) {
		st = tps_model_make_target(ms, &target, err);
	}
	lap(&t0, &stats->init_s);
	if (st == TPS_OK && writer) {
		st = tps_trace_write_warnings(trace, warnings,
					      summary->n_warnings, err);
	}
	if (st == TPS_OK && writer) {
		st = tps_trace_write_params(trace, &model, err);
	} else if (st == TPS_OK && !model.meta &&
		   !ms->mesh.backend->writer_keeps_params) {
		/* Process 0 makes each parameter whole from the shards,
		 * ours among them (tps_trace_write_params). */
		st = share_params(&model, err);
	}
	if (st == TPS_OK && writer) {
		st = tps_trace_write_inputs(trace, &spec->model, &input,
					    with_target ? &target : NULL, err);
	}
	if (st == TPS_OK && writer) {
		st = tps_trace_begin_events(trace, err);
	}
	lap(&t0, &stats->trace_s);
	if (st == TPS_OK) {
		st = tps_model_emit_setup(&model, sink, err);
	}
	lap(&t0, &stats->trace_s);
	events_s = 0.0;
	if (st == TPS_OK) {
		st = tps_model_run(&model, &input, with_target ? &target : NULL,
				   sink, &sim, err);
	}
	if (st == TPS_ERR_SHAPE && ms->inject) {
		/* A mistake that breaks the shapes stops the simulation: the
		 * symptom is recorded, the trace completed without output. */
		snprintf(summary->stopped, sizeof summary->stopped, "%s",
			 err->message);
		result.stopped = summary->stopped;
		st = TPS_OK;
	}
	lap(&t0, &stats->tp_s);
	stats->tp_s -= events_s;
	stats->trace_s += events_s;
	if (st == TPS_OK && writer) {
		st = tps_trace_end_events(trace, err);
	}
	lap(&t0, &stats->trace_s);
	if (st == TPS_OK && symbolic) {
		/* No values: nothing to compare, no reference to run. */
		result.match = true;
		st = tps_trace_write_result(trace, &result, err);
		if (st == TPS_OK) {
			summary->symbolic = true;
			summary->dtypes = ms->dtypes;
			summary->optimizer_states =
				ms->mode == TPS_MODE_TRAINING
					? tps_optim_state_count(&ms->optimizer)
					: 0;
			summary->gathers = ms->mode == TPS_MODE_TRAINING &&
					   ms->zero.stage == 3;
			st = tps_model_footprint(&model, &summary->footprint,
						 err);
			for (int p = 0; p < TPS_PHASE_COUNT; p++) {
				summary->phase_bytes[p] = tps_trace_phase_bytes(
					trace, (enum tps_phase)p);
			}
		}
		goto finish;
	}
	if (st == TPS_OK && !writer) {
		/* The trace and the comparison are process 0's. */
		goto finish;
	}
	if (st == TPS_OK && !with_reference) {
		/* "--no-reference": the trace says so; nothing is compared. */
		if (!result.stopped && !tps_run_outcome_finite(&sim)) {
			st = tps_error_set(err, TPS_ERR_NUMERIC,
					   "the simulation's results hold a "
					   "NaN or Inf");
		}
		if (st == TPS_OK) {
			result.match = true;
			summary->no_reference = true;
			st = tps_trace_write_result(trace, &result, err);
		}
		goto finish;
	}
	if (st == TPS_OK) {
		st = tps_model_run_reference(&model, &input,
					     with_target ? &target : NULL,
					     (struct tps_bound_sink){0}, &ref,
					     err);
	}
	lap(&t0, &stats->reference_s);
	if (st == TPS_OK && !tps_run_outcome_finite(&ref)) {
		st = tps_error_set(err, TPS_ERR_NUMERIC,
				   "the reference model's results hold a NaN "
				   "or Inf");
	}
	if (st == TPS_OK && !result.stopped && !tps_run_outcome_finite(&sim)) {
		st = tps_error_set(err, TPS_ERR_NUMERIC,
				   "the simulation's results hold a NaN or "
				   "Inf");
	}
	if (st == TPS_OK) {
		if (result.stopped) {
			result.max_abs_diff = INFINITY;
		} else {
			struct tps_run_tolerance tol = {
				spec->atol, spec->rtol,
				spec->atol_given ? spec->atol : 0.0,
				spec->rtol_given ? spec->rtol : 0.0,
				TPS_RUN_USEFUL_BOUND};
			struct tps_comparison *c = &summary->comparison;
			st = tps_run_compare_outcomes_each(
				&model, &sim, &ref, &tol, elements, c, err);
			if (st == TPS_OK) {
				tps_run_describe_comparison(
					c, summary->words,
					sizeof summary->words);
				result.comparison = c;
				result.verdict = summary->words;
			}
			result.max_abs_diff = c->max_abs_diff;
			result.match = c->match;
			summary->exact = c->exact;
			summary->bounded = c->bounded;
			summary->compared = c->n;
		}
	}
	if (st == TPS_OK) {
		/* A mistake the run carried out is never a match, whatever
		 * the numbers say (a tolerance can hide it). */
		if (trace->first_mistake) {
			summary->mistake_hidden = result.match;
			result.match = false;
			snprintf(summary->mistake, sizeof summary->mistake,
				 "%s", trace->first_mistake);
		}
		if (ms->inject) {
			tps_run_diagnose(&model, &input, &sim, &ref,
					 result.max_abs_diff, result.stopped,
					 summary->diagnosis,
					 sizeof summary->diagnosis);
			result.diagnosis = summary->diagnosis;
		}
		st = tps_trace_write_result(trace, &result, err);
	}
finish:
	if (st == TPS_OK && writer) {
		st = tps_trace_finish(trace, err);
	}
	/* The last exchange: a process that failed since stops the others. */
	st = tps_backend_finish(ms->mesh.backend, st, err);
	lap(&t0, &stats->trace_s);
	if (st == TPS_OK) {
		summary->events = trace->next_seq;
		summary->collectives = trace->collectives;
		summary->bytes_per_rank = tps_trace_bytes_per_rank(trace);
		summary->max_abs_diff = result.max_abs_diff;
		summary->match = result.match;
		summary->steps = sim.steps;
		if (sim.steps > 0 && !result.stopped && !symbolic) {
			summary->loss = sim.loss[sim.steps - 1];
			if (keep_losses) {
				summary->losses = sim.loss;
				sim.loss = NULL;
			}
		}
		if (ref.steps > 0 && !result.stopped) {
			/* Process 0's, without --no-reference. */
			summary->reference_loss = ref.loss[ref.steps - 1];
			if (keep_losses) {
				summary->reference_losses = ref.loss;
				ref.loss = NULL;
			}
		}
	}
	tps_model_outcome_free(&sim);
	tps_model_outcome_free(&ref);
	tps_tensor_free(&input);
	tps_tensor_free(&target);
	tps_model_free(&model);
	return st;
}

/* The config of a run: its text when given, else its file. */
static enum tps_status load_config(const struct tps_run_options *opts,
				   struct tps_run_spec *spec,
				   struct tps_error *err)
{
	cJSON *root = NULL;
	enum tps_status st;

	if (!opts->config_text) {
		return tps_config_load_with(opts->config_path, opts->overrides,
					    opts->n_overrides, spec, err);
	}
	st = tps_json_parse_strict_packed(opts->config_path, opts->config_text,
					  opts->config_len, TPS_CONFIG_PACK_KEY,
					  &root, err);
	if (st == TPS_OK) {
		st = tps_config_parse_with(root, opts->config_path,
					   opts->overrides, opts->n_overrides,
					   spec, err);
	}
	cJSON_Delete(root);
	return st;
}

void tps_run_summary_free(struct tps_run_summary *summary)
{
	if (!summary) {
		return;
	}
	free(summary->losses);
	free(summary->reference_losses);
	summary->losses = NULL;
	summary->reference_losses = NULL;
	tps_run_comparison_free(&summary->comparison);
}

enum tps_status tps_run(const struct tps_run_options *opts, FILE *stream,
			struct tps_run_summary *summary, struct tps_error *err)
{
	struct tps_run_spec spec = {0};
	struct tps_run_summary s = {0};
	struct tps_trace trace;
	struct tps_outfile out = {0};
	struct tps_pool *pool = NULL;
	/* This run's tensor bytes, charged by its thread and its pool's
	 * (memory.h): concurrent runs count their own. */
	struct tps_memory_account memory, *caller_memory;
	char esc[256];
	int64_t live;
	int steps;
	bool guarded;
	double start = now_seconds();
	enum tps_status st;

	tps_memory_account_init(&memory);
	caller_memory = tps_memory_account_bind(&memory);
	st = load_config(opts, &spec, err);
	if (st != TPS_OK) {
		goto out;
	}
	s.stats.init_s = now_seconds() - start;
	tps_json_escape_for_message(opts->config_path, esc, sizeof esc);
	if (opts->symbolic) {
		st = tps_config_make_symbolic(&spec, err);
		if (st != TPS_OK) {
			tps_error_prefix(err, "%s", esc);
			goto out;
		}
	}
	if (st == TPS_OK && opts->backend) {
		/* Process 0 keeps the parameters whole for the reference. */
		opts->backend->writer_keeps_params = !opts->no_reference;
		st = tps_backend_place(opts->backend,
				       spec.model.mesh.world_size, err);
		if (st != TPS_OK) {
			tps_error_prefix(err, "%s", esc);
			goto out;
		}
	}
	st = tps_run_check_sizes(&spec, esc, opts->max_memory, err);
	if (st != TPS_OK) {
		goto out;
	}
	/* A symbolic run of one or two steps costs what its estimate
	 * would: it is written under the budget instead (guarded). */
	steps = spec.model.mode == TPS_MODE_TRAINING ? spec.model.steps : 1;
	guarded = spec.compute == TPS_COMPUTE_SYMBOLIC && steps <= 2;
	if (!guarded) {
		double t0 = now_seconds();
		st = tps_run_estimate(&spec, &s.estimate, err);
		s.stats.init_s += now_seconds() - t0;
		if (st == TPS_OK && s.estimate.trace_bytes > opts->max_trace) {
			st = tps_run_trace_over_budget(&spec, &s.estimate,
						       opts->max_trace, err);
		}
		if (st != TPS_OK) {
			tps_error_prefix(err, "%s", esc);
			goto out;
		}
	}
	s.stats.threads =
		opts->threads > 0 ? opts->threads : tps_pool_default_threads();
	if (spec.compute == TPS_COMPUTE_SYMBOLIC) {
		/* Meta ranks do no arithmetic: handing hundreds of empty
		 * items to threads costs more than it saves. */
		s.stats.threads = 1;
	}
	st = tps_pool_new(&pool, s.stats.threads, err);
	if (st != TPS_OK) {
		goto out;
	}
	spec.model.mesh.pool = pool;
	spec.no_reference = opts->no_reference;
	if (opts->backend && spec.compute == TPS_COMPUTE_SYMBOLIC &&
	    opts->backend->process != 0) {
		/* A symbolic run holds no values: process 0 runs it alone
		 * (docs/mpi.md). */
		goto out;
	}
	if (spec.compute != TPS_COMPUTE_SYMBOLIC) {
		spec.model.mesh.backend = opts->backend;
	}
	if (tps_mesh_is_writer(&spec.model.mesh)) {
		st = tps_outfile_open(
			&out, opts->output_path, stream, "trace",
			&opts->config_path,
			!opts->config_text || opts->config_read_from_path ? 1
									  : 0,
			opts->pending, err);
	}
	if (st != TPS_OK) {
		/* The others still reach this process's first exchange. */
		tps_backend_agree(&spec.model.mesh, st, err);
		goto out;
	}
	tps_trace_init(&trace, out.f, spec.values, &spec.model.mesh);
	if (guarded) {
		tps_trace_set_budget(&trace, opts->max_trace, false);
	}
	st = simulate(&spec, &trace, opts->keep_losses, opts->elements, &s,
		      err);
	s.stats.trace_bytes = out.f ? ftell(out.f) : 0;
	if (st == TPS_OK && guarded) {
		/* Its estimate is what it wrote and counted. */
		s.estimate.trace_bytes = tps_trace_size(&trace);
		s.estimate.events = trace.next_seq;
		s.estimate.steps = steps;
		s.estimate.flops = trace.flops;
		if (s.estimate.trace_bytes > opts->max_trace) {
			st = tps_run_trace_over_budget(&spec, &s.estimate,
						       opts->max_trace, err);
		}
	}
	tps_trace_free(&trace);
	if (st == TPS_ERR_IO) {
		/* Only writing the trace fails so (a full disk, a file-size
		 * limit): name the file it went to. */
		char name[256];
		tps_error_prefix(err, "%s",
				 tps_outfile_name(&out, name, sizeof name));
	} else if (st != TPS_OK) {
		/* Model messages about the plan start with the config's JSON
		 * Pointer; every run message names the config file. */
		tps_error_prefix(err, "%s", esc);
	}
	if (st == TPS_OK && out.f) {
		/* Publishing (a rename, or a copy to stdout or a device) is
		 * trace writing too. */
		double t0 = now_seconds();
		st = tps_outfile_commit(&out, err);
		lap(&t0, &s.stats.trace_s);
	} else if (out.f) {
		tps_outfile_discard(&out);
	}
	if (st == TPS_OK) {
		describe_mesh(&spec.model.mesh, s.mesh, sizeof s.mesh);
		s.world_size = spec.model.mesh.world_size;
		s.n_modules = spec.model.n_modules;
		s.stats.total_s = now_seconds() - start;
		tps_memory_account_read(&memory, &live,
					&s.stats.tensor_peak_bytes);
		s.stats.peak_rss_bytes = peak_rss_bytes();
		if (!opts->keep_comparison) {
			/* Its counts and words stay; the tensors go. */
			free(s.comparison.t);
			s.comparison.t = NULL;
			s.comparison.n = 0;
		}
		*summary = s;
	}
out:
	if (st != TPS_OK) {
		tps_run_summary_free(&s);
	}
	tps_pool_free(pool);
	tps_run_spec_free(&spec);
	tps_memory_account_bind(caller_memory);
	return st;
}
