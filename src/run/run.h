/*
 * One `tpsim run`: config -> model -> trace, checked against the reference.
 *
 * The trace goes through the one output writer (outfile.h): to a temporary
 * file first, renamed onto the output path (or copied to the given stream)
 * only when the whole run succeeded, so a failed run never leaves a partial
 * trace and an existing output file is only replaced on success. An output
 * that is the config file itself is refused.
 */
#ifndef TPSIM_RUN_H
#define TPSIM_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "model.h"
#include "outfile.h"

/* Default trace budget of a run (`--max-trace`): tpsim's own readers
 * (explain, check, view, ...) take traces of at most 1 GiB. */
#define TPS_DEFAULT_MAX_TRACE ((int64_t)1 << 30)

/*
 * Each element a comparison compares by a bound (rule exact or bound, not
 * tolerance), in order: t is the tensor (its section, index, name, shape
 * and rule; its figures are not final yet), at the element's row-major
 * index, sim and ref its two values and bound its 2 e_i, so that a
 * correct simulation has |sim - ref| <= bound (docs/numerics.md).
 * tests/run/test_bounds_property.c collects them; nothing in tpsim does.
 */
struct tps_run_element_sink {
	void (*element)(void *ctx, const struct tps_compare_tensor *t,
			int64_t at, float sim, float ref, double bound);
	void *ctx;
};

struct tps_run_options {
	/* The config's file ("-" is stdin), or with config_text its name in
	 * messages. */
	const char *config_path;
	/* NULL, or the config's text (config_len bytes), parsed instead of
	 * reading config_path: the public API keeps a parsed config's text
	 * and runs it as often as it is asked. config_read_from_path: the
	 * text was read from config_path, which the output may then not
	 * be, as without config_text. */
	const char *config_text;
	size_t config_len;
	bool config_read_from_path;
	const char *output_path; /* NULL: write to `stream` */
	int64_t max_memory;	 /* bytes; refuse larger runs */
	/* bytes; refuse runs whose trace is estimated larger
	 * (tps_run_estimate) */
	int64_t max_trace;
	/* Config variables set from outside ("--set"); see config.h. */
	const struct tps_config_var *overrides;
	int n_overrides;
	/* Threads the ranks and the reference run on; 0: the machine's
	 * cores. The trace is the same bytes for every count. */
	int threads;
	/* "--symbolic": run as if the config said "compute": "symbolic". */
	bool symbolic;
	/* NULL, or where the name of the temporary trace is published while
	 * it exists, for a signal handler to remove (outfile.h). */
	struct tps_outfile_pending *pending;
	/* Keep every step's loss in the summary (losses, reference_losses),
	 * which tps_run_summary_free then frees. */
	bool keep_losses;
	/* Keep each compared tensor's figures in the summary (comparison:
	 * the public API's per-tensor results), which tps_run_summary_free
	 * then frees. Otherwise the summary owns nothing of them (its
	 * words and counts are kept). */
	bool keep_comparison;
	/* NULL, or where each compared element of a bounded tensor goes as
	 * the comparison meets it (the property test's way to every |d_i|
	 * and 2 e_i; see struct tps_run_element_sink). */
	const struct tps_run_element_sink *elements;
	/* "--no-reference": run no single-device reference and compare
	 * nothing; the trace's result says "reference": "skipped". */
	bool no_reference;
	/* NULL, or where the ranks live (backend.h: `--backend mpi`). */
	struct tps_backend *backend;
};

/* Where a run's time and memory went (`tpsim run --stats`). Seconds are
 * wall-clock; the trace's writing is taken out of the phase it happened
 * in. */
struct tps_run_stats {
	int threads;
	double init_s;	    /* config, parameters, their distribution, input */
	double tp_s;	    /* the simulated ranks' steps */
	double reference_s; /* the single-device reference */
	double trace_s;	    /* formatting and writing the trace */
	double total_s;
	int64_t trace_bytes;
	int64_t tensor_peak_bytes; /* the most tensor values held at once */
	int64_t peak_rss_bytes;	   /* the process's (getrusage), 0 unknown */
};

/* TP off the innermost dim, up to 3 idle mesh dims, unequal dp parts, a
 * symbolic run's unwritten values, a redistribution the next undoes: 7. */
#define TPS_RUN_MAX_WARNINGS 8

/*
 * What a run will write and compute, found before it starts: the engine
 * runs its setup and first two steps on meta tensors into the trace
 * writer, counting bytes instead of writing them (tps_trace_init_estimate),
 * and every later step is taken to be the second one.
 */
struct tps_run_estimate {
	/* An upper bound of the trace's size. The text around the values is
	 * counted exactly, but for the digits of later seqs, steps and comm
	 * counts, each taken at its most; each value is counted at its
	 * longest, TPS_NUMFMT_FLOAT_LEN_MAX bytes (docs/trace.md, "How large
	 * a trace is"). */
	int64_t trace_bytes;
	int64_t events; /* exactly */
	int steps;	/* training: steps; inference, or a run an injected
			 * mistake stops: 1 */
	/* The simulated ranks' arithmetic, at most: each compute event's
	 * flops on its busiest rank times the world size, over every step
	 * (the reference does the model's arithmetic once more, on one
	 * device). */
	int64_t flops;
};

/* The estimate of a parsed spec's run (after tps_config_make_symbolic, if
 * any). On error (those the run itself would report: the plan's, the dp
 * split's) *out is untouched. */
enum tps_status tps_run_estimate(const struct tps_run_spec *spec,
				 struct tps_run_estimate *out,
				 struct tps_error *err);

/* What the one-line summary says. */
struct tps_run_summary {
	char mesh[128]; /* "(2, 2) dp x tp" */
	int world_size;
	int n_modules;
	int64_t events;
	int64_t collectives;
	int64_t bytes_per_rank;
	float max_abs_diff;
	bool match;
	/* The tensors compared (output; in training also every loss,
	 * gradient and parameter after), how many of them exactly (their
	 * error bound is 0) and how many by a bound (exact ones included);
	 * the rest within the tolerance. */
	int compared, exact, bounded;
	/* Each compared tensor's figures (owned; none when the run was
	 * symbolic or stopped), and what they say in words
	 * (tps_run_describe_comparison; "" when nothing was compared). */
	struct tps_comparison comparison;
	char words[1024];
	/* The injected mistake the run carried out ("" if none): then match
	 * is false; mistake_hidden when the numbers alone were within the
	 * tolerance. */
	char mistake[64];
	bool mistake_hidden;
	/* Training: the steps run and the last step's loss, both ways. */
	int steps;
	float loss, reference_loss;
	/* With opts->keep_losses, a values run's loss at each of the steps,
	 * both ways (owned; NULL otherwise, and when a shape error stopped
	 * the simulation). */
	float *losses, *reference_losses;
	/* What the trace's "warnings" hold, for stderr too. */
	int n_warnings;
	char warnings[TPS_RUN_MAX_WARNINGS][1024];
	/* With "inject": what the mistake did, read from its symptom, and
	 * the shape error it stopped the simulation at ("" if none). */
	char diagnosis[1024];
	char stopped[TPS_ERROR_MESSAGE_MAX];
	/* A symbolic run: no values and no reference (match is true); what
	 * each rank holds, and the collective bytes per rank by phase. */
	bool symbolic;
	/* "--no-reference": nothing was compared (match is true). */
	bool no_reference;
	int optimizer_states;
	/* ZeRO stage 3 (FSDP) gathers parameters: footprint.gathered is
	 * theirs. */
	bool gathers;
	struct tps_dtypes dtypes; /* what the figures count each role in */
	struct tps_model_footprint footprint;
	int64_t phase_bytes[TPS_PHASE_COUNT];
	struct tps_run_stats stats;
	struct tps_run_estimate estimate; /* made before the run */
};

/*
 * Runs the config, unless its tensors need more than opts->max_memory or
 * its trace would take more than opts->max_trace (TPS_ERR_LIMIT, saying
 * both figures). On TPS_OK the trace is complete and *summary filled;
 * summary->match tells whether TP agreed with the reference (a symbolic
 * run has none to agree with: match is true). On error
 * nothing was written (the temporary file is removed).
 */
enum tps_status tps_run(const struct tps_run_options *opts, FILE *stream,
			struct tps_run_summary *summary, struct tps_error *err);

/* The run's verdict, one line without its newline: "mesh tp=2 (world 2),
 * 1 module, 6 events, 1 collective (16 bytes/rank): differs from the
 * reference by at most 3.1e-06, within what reordering the sums can
 * explain (bound 8.4e-06)" (run_verdict.c). */
void tps_run_write_verdict(FILE *out, const struct tps_run_summary *s);

/*
 * The comparison in words (run_verdict.c), the end of the verdict and the
 * trace's result.verdict: "differs from the reference by at most 3.1e-06,
 * within what reordering the sums can explain (bound 8.4e-06)", "differs
 * by 2 at fc.out[0][1]; reordering can explain at most 8.5e-01: not
 * rounding", "matches the reference bit for bit, as it must: no sum
 * rounds (bound 0)"; where tensors have no bound, what the tolerance
 * said of them.
 */
void tps_run_describe_comparison(const struct tps_comparison *c, char *buf,
				 size_t size);

/* Frees what a summary owns (the losses kept with keep_losses, the
 * comparison); NULL and a summary without them are no-ops. */
void tps_run_summary_free(struct tps_run_summary *summary);

/*
 * The warnings a spec earns, at most TPS_RUN_MAX_WARNINGS, into
 * summary->warnings: TP off the innermost mesh dim; each mesh dim of size 2
 * or more that is neither tp_dim nor a dp dim nor the pipeline's dim (its ranks
 * repeat each other's work; a name like "dp" gets the hint that dp_dim would
 * split the batch); with a mean loss, dp ranks holding unequal parts of the
 * batch (dp_grad global: what DDP would weight differently; ddp: that the step
 * is not the global-batch gradient).
 */
void tps_run_warnings(const struct tps_model_spec *spec,
		      const int64_t *dp_counts, int dp,
		      struct tps_run_summary *summary);

/*
 * max |a - b| over all elements (shapes must be equal, else *match is false
 * and *max_abs_diff is +inf), and whether it is within atol + rtol * max|b|.
 */
void tps_run_compare(const struct tps_tensor *a, const struct tps_tensor *b,
		     double atol, double rtol, float *max_abs_diff,
		     bool *match);

/* What a run's tolerance says (docs/config.md): the fallback's atol and
 * rtol (the config's, 1e-5 each by default), and the slack it adds to
 * the bounds (the config's where it gives them, else 0). `useful`: a
 * bound decides a tensor only while twice its largest element stays
 * within useful times the tensor's largest |value| (docs/numerics.md,
 * "When a bound says nothing"); past it, the tolerance decides.
 * TPS_RUN_USEFUL_BOUND: 1, a bound as large as every value. */
struct tps_run_tolerance {
	double atol, rtol;
	double slack_atol, slack_rtol;
	double useful;
};
#define TPS_RUN_USEFUL_BOUND 1.0

/*
 * Compares two outcomes of one run (the simulation's a, the reference's
 * b, with its bounds): the output, and in training every step's loss,
 * every gradient and every parameter after the last step, each by its
 * rule (model.h, enum tps_compare_rule), into *out (free with
 * tps_run_comparison_free). On error (memory) *out is untouched.
 */
enum tps_status tps_run_compare_outcomes(const struct tps_model *model,
					 const struct tps_model_outcome *a,
					 const struct tps_model_outcome *b,
					 const struct tps_run_tolerance *tol,
					 struct tps_comparison *out,
					 struct tps_error *err);
/* The same, handing each element compared by a bound to elements (NULL:
 * none, as tps_run_compare_outcomes). */
enum tps_status tps_run_compare_outcomes_each(
	const struct tps_model *model, const struct tps_model_outcome *a,
	const struct tps_model_outcome *b, const struct tps_run_tolerance *tol,
	const struct tps_run_element_sink *elements, struct tps_comparison *out,
	struct tps_error *err);
void tps_run_comparison_free(struct tps_comparison *c);

/* An element of a compared tensor by its name and index: "fc2.out[0][1]",
 * "fc1.weight[3][0]"; a loss by its name alone; at < 0: the tensor. */
void tps_run_element_name(const struct tps_compare_tensor *t, int64_t at,
			  char *buf, size_t size);

/*
 * A finished run's error bounds, for the verbs that read traces (tpsim
 * diff, tpsim plot; run_bounds.c): traces do not carry per-element bounds,
 * so they are made again from the trace's embedded normalised config.
 *
 * tps_run_trace_spec: the spec of the trace's "config" (tps_config_parse;
 * its errors at the trace's pointers, "/config/..."). A symbolic trace
 * (/config/compute) is TPS_ERR_INPUT: it holds no value and its run had
 * no reference; with need_values, so is one without every value
 * (/config/trace/values "summary" or "none").
 * Free with tps_run_spec_free; on error *spec is untouched.
 *
 * tps_run_bound_pass: the spec's reference run alone, with its bounds
 * (tps_model_run_reference; no simulation, nothing written) on `threads`
 * threads (0: the cores; the bounds are the same for any count), every
 * bound reported to sink as the trace's events name the tensor, and
 * besides the bound pass's own: each parameter's initial value (phase
 * setup, step -1) and the input and target at each step's forward, given
 * by the config, with bound 0. *dp (NULL: not wanted) gets the run's dp
 * group size: a dp run's backward values and its per-rank losses are dp
 * times the reference's until the dp average (nn.h, struct
 * tps_bound_ctx's grad_scale). spec's mesh has no pool afterwards.
 */
enum tps_status tps_run_trace_spec(const cJSON *trace, const char *trace_name,
				   bool need_values, struct tps_run_spec *spec,
				   struct tps_error *err);
enum tps_status tps_run_bound_pass(struct tps_run_spec *spec, int threads,
				   struct tps_bound_sink sink, int *dp,
				   struct tps_error *err);

#endif
