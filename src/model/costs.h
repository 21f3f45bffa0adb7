/*
 * What a step costs: the collectives and bytes per rank of one inference
 * step and one training step of a spec, side by side, and a step time
 * from an alpha-beta model. Behind `tpsim comm` (seed 003's exercise).
 *
 * Nothing is estimated from formulas: the engine runs both steps on meta
 * tensors (tensor.h), so the counts are the events a real run emits, at
 * any size, in no time.
 *
 * The time model (stated, not measured):
 *   a collective over a group of n ranks, sending B bytes per rank (the
 *   trace's ring figure) over a link of bandwidth W and latency a, takes
 *   steps * a + B / W, with steps = 2 (n - 1) for all_reduce and n - 1 for
 *   the others; a group over several mesh dims uses the slowest of them
 *   a compute event of F flops (the busiest rank's) takes F / device FLOP/s
 *   a step is the sum of all of it: nothing overlaps
 */
#ifndef TPSIM_COSTS_H
#define TPSIM_COSTS_H

#include <stdint.h>

#include "model.h"
#include "nn_event.h"
#include "spec.h"

enum tps_cost_mode {
	TPS_COST_INFERENCE,
	TPS_COST_TRAINING,
};
#define TPS_COST_MODES 2

/* One count per mode. */
struct tps_cost_figures {
	int64_t count;
	int64_t bytes_per_rank;
	double seconds;
};

/* The collectives of one phase, op, module and group. */
struct tps_cost_row {
	enum tps_phase phase;
	char op[32];
	char module[TPS_NAME_MAX];
	char mesh_dim[TPS_MAX_MESH_DIMS *
		      TPS_MESH_NAME_MAX]; /* "tp", "dp_cp" */
	unsigned mask;
	int stage; /* the pipeline stage whose ranks send it; -1 without */
	struct tps_cost_figures mode[TPS_COST_MODES];
};

#define TPS_COST_WARNING_MAX 768

struct tps_cost_report {
	struct tps_cost_row *rows; /* in first-seen order, inference first */
	int n_rows, cap_rows;
	struct tps_cost_figures total[TPS_COST_MODES];
	int64_t flops[TPS_COST_MODES]; /* per step, summed over events */
	double compute_seconds[TPS_COST_MODES];
	/* What each rank holds after the training step (model.h): the
	 * figures a symbolic run of the spec, trained one step, reports. */
	struct tps_model_footprint footprint;
	/* tps_cost_plan_warning's sentence for the spec's own mode; "" when
	 * the plan wastes no redistribution. */
	char warning[TPS_COST_WARNING_MAX];
};

/*
 * Runs one inference step and one training step of spec on meta tensors
 * and fills *out (free with tps_cost_report_free). An inference spec is
 * trained with its own settings where it has them and otherwise mse, sgd
 * and dp_grad global. On error *out is untouched.
 */
enum tps_status tps_cost_estimate(const struct tps_model_spec *spec,
				  const struct tps_cost_spec *cost,
				  struct tps_cost_report *out,
				  struct tps_error *err);

void tps_cost_report_free(struct tps_cost_report *r);

/*
 * Redistributions that the plan makes and the next one undoes, in the
 * forward pass of one step of spec (its own mode, on meta tensors): two
 * redistributions in a row of one activation along one mesh dim, A's
 * placement P0 -> P1 then B's P1 -> P2, where nothing is computed
 * between them but on A's own tensor (a bias added after a reduction),
 * and one step P0 -> P2 would do (dtensor.h's table: one collective or
 * split, or nothing when P2 is P0). A sequence-parallel residual whose
 * input is replicated is the common case: its body's reduce_scatter is
 * gathered straight back (docs/transformer.md). Writes one sentence into
 * warning (TPS_COST_WARNING_MAX bytes) naming both modules of the first
 * such pair and how many pairs there are, or "" when there is none. An
 * injected mistake ("inject") is left out: the warning is the plan's.
 * Errors are the meta run's (out of memory); warning is then "".
 */
enum tps_status tps_cost_plan_warning(const struct tps_model_spec *spec,
				      char *warning, struct tps_error *err);

/* Ring steps of a collective op over n ranks (see the top of this file). */
int64_t tps_cost_ring_steps(const char *op, int n);

/* The link of a group along the mesh dims in mask: the slowest of them
 * (the least GB/s, the most latency). */
struct tps_link_spec tps_cost_link_of(const struct tps_cost_spec *cost,
				      const struct tps_mesh *mesh,
				      unsigned mask);

/* Seconds a collective op over n ranks takes, each sending bytes_per_rank
 * over link: ring steps * latency + bytes_per_rank / bandwidth. */
double tps_cost_collective_seconds(const char *op, int n,
				   int64_t bytes_per_rank,
				   struct tps_link_spec link);

#endif
