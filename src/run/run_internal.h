/* What the run layer's files share: run.c (the orchestration),
 * run_compare.c, run_diagnose.c, run_warnings.c, run_budget.c and
 * run_estimate.c. Not installed. */
#ifndef TPSIM_RUN_INTERNAL_H
#define TPSIM_RUN_INTERNAL_H

#include "run.h"

/* The warnings a run of spec on model earns (tps_run_warnings, a
 * symbolic run's ignored /trace/values, and the plan's undone
 * redistributions: tps_cost_plan_warning), into summary->warnings. Fails
 * only as the plan's meta pass can (out of memory). */
enum tps_status tps_run_collect_warnings(const struct tps_run_spec *spec,
					 const struct tps_model *model,
					 struct tps_run_summary *summary,
					 struct tps_error *err);

/* A symbolic run's input and target: meta tensors of their shapes (the
 * target only with with_target). On error both are untouched or freed by
 * the caller's tps_tensor_free. */
enum tps_status tps_run_meta_inputs(const struct tps_model_spec *ms,
				    bool with_target, struct tps_tensor *input,
				    struct tps_tensor *target,
				    struct tps_error *err);

/* The name of the model's compared output (run_compare.c): its last
 * top-level module's, "<name>.out". */
void tps_run_output_name(const struct tps_model *model, char *buf,
			 size_t size);

/* Whether every tensor and loss of an outcome is finite (run_compare.c). */
bool tps_run_outcome_finite(const struct tps_model_outcome *o);

/*
 * What an injected mistake (model->spec->inject) did, read from its
 * symptom, into buf (run_diagnose.c): sim and ref are the outcomes of the
 * simulation and of the reference from `input`; max_abs_diff their
 * comparison's (+inf: none, the shapes differ); stopped NULL, or the
 * shape error the simulation stopped at (sim then holds no output). A
 * symptom that fits the mistake exactly is named so ("larger than the
 * reference by exactly (tp - 1) x bias"); otherwise the sentence says
 * what the mistake does and the difference seen. Cannot fail.
 */
void tps_run_diagnose(const struct tps_model *model,
		      const struct tps_tensor *input,
		      const struct tps_model_outcome *sim,
		      const struct tps_model_outcome *ref, float max_abs_diff,
		      const char *stopped, char *buf, size_t size);

/*
 * The sizes a values run refuses before allocating (run_budget.c), each
 * naming the config key it grows with (file: the config's name, escaped):
 * an output over 2^31 elements, then the memory budget max_memory. A
 * symbolic run's tensors take no bytes: TPS_OK. TPS_ERR_LIMIT otherwise.
 */
enum tps_status tps_run_check_sizes(const struct tps_run_spec *spec,
				    const char *file, int64_t max_memory,
				    struct tps_error *err);

/* The trace-budget refusal (run_budget.c): TPS_ERR_LIMIT, saying the
 * estimate e, the budget, and what would make the trace smaller. */
enum tps_status tps_run_trace_over_budget(const struct tps_run_spec *spec,
					  const struct tps_run_estimate *e,
					  int64_t budget,
					  struct tps_error *err);

#endif
