/* What run.c and run_estimate.c share. Not installed. */
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

#endif
