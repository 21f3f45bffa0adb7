/*
 * Pipeline schedules: the order of each stage's forwards and backwards,
 * and the timeline they make (docs/pipeline.md).
 *
 * Given p stages, m microbatches, v model chunks per stage and a schedule,
 * tps_pp_plan_init lists, for each stage, its operations in Megatron's
 * order (forward or backward, microbatch, chunk) and times them in unit
 * slots: a chunk's forward takes TPS_PP_FORWARD_SLOTS, its backward
 * TPS_PP_BACKWARD_SLOTS (t_b = 2 t_f, as Narayanan et al. 2021 assume).
 * An operation starts when its stage is free and its dependency has ended
 * (the previous virtual stage's forward of the same microbatch; the next
 * virtual stage's backward, or on the last virtual stage its own forward).
 *
 *	struct tps_pp_plan plan;
 *	if (tps_pp_plan_init(&plan, TPS_PP_1F1B, 4, 8, 1, &err) != TPS_OK)
 *		return err.status;
 *	// plan.stages[s].idle / plan.stages[s].busy == (4 - 1) / 8
 *	tps_pp_plan_free(&plan);
 *
 * Pure: no tensors, no mesh, no process-wide state.
 */
#ifndef TPSIM_PIPELINE_SCHEDULE_H
#define TPSIM_PIPELINE_SCHEDULE_H

#include <stdint.h>

#include "error.h"

enum tps_pp_schedule {
	TPS_PP_GPIPE,		 /* all forwards, then all backwards */
	TPS_PP_1F1B,		 /* PipeDream-Flush: warm-up, 1F1B, cool-down */
	TPS_PP_INTERLEAVED_1F1B, /* Megatron's, with v chunks per stage */
	TPS_PP_SCHEDULE_COUNT
};

enum tps_pp_op_kind {
	TPS_PP_FORWARD,
	TPS_PP_BACKWARD,
};

#define TPS_PP_FORWARD_SLOTS  1
#define TPS_PP_BACKWARD_SLOTS 2
/* Limits on the input, so that every count below fits and the plan stays
 * small: p at most a mesh's world, m v at most 65536 chunk microbatches,
 * p m v at most 2^22 (two operations each). */
#define TPS_PP_MAX_STAGES	      4096
#define TPS_PP_MAX_CHUNK_MICROBATCHES 65536
#define TPS_PP_MAX_OPS_HALF	      (1 << 22)

struct tps_pp_op {
	enum tps_pp_op_kind kind;
	int microbatch; /* 0 .. m - 1 */
	int chunk;	/* 0 .. v - 1; virtual stage chunk * p + stage */
	int64_t start;	/* slots from the step's start */
	int64_t end;	/* start + its slots */
};

struct tps_pp_stage {
	struct tps_pp_op *ops; /* 2 m v operations, in the stage's order */
	int n_ops;
	int64_t busy; /* slots spent in operations: 3 m v */
	int64_t idle; /* the plan's span less busy */
	/* The peak, over the stage's order, of forwards run less backwards
	 * run: microbatches in flight when v = 1, chunk forwards (each 1/v of
	 * the stage's activations) otherwise. */
	int peak_in_flight;
};

struct tps_pp_plan {
	enum tps_pp_schedule schedule;
	int p, m, v;
	int64_t span;		     /* the last operation's end, any stage */
	struct tps_pp_stage *stages; /* p of them; the plan owns them */
};

/* Fills plan for the schedule on p stages, m microbatches and v chunks per
 * stage. Refuses (TPS_ERR_INPUT, a message naming the value, what was
 * expected and what was got) p < 1, m < 1, v < 1, v > 1 with gpipe or
 * 1f1b, v < 2 with interleaved_1f1b, and m not a multiple of p with
 * interleaved_1f1b (Megatron's rule); TPS_ERR_LIMIT past the limits above;
 * TPS_ERR_NOMEM. On error plan is untouched. The caller frees it with
 * tps_pp_plan_free. schedule must be a member of the enum (an assert). */
enum tps_status tps_pp_plan_init(struct tps_pp_plan *plan,
				 enum tps_pp_schedule schedule, int p, int m,
				 int v, struct tps_error *err);

/* Frees what plan owns; tps_pp_plan_free(NULL) is a no-op. */
void tps_pp_plan_free(struct tps_pp_plan *plan);

/* The schedule's name in docs/pipeline.md ("gpipe", "1f1b",
 * "interleaved_1f1b"): tps_pp_schedule_names[schedule], the one name table
 * of the enum (NULL-terminated, as spec.h's tables, so that the config
 * reads the names through it). */
extern const char *const tps_pp_schedule_names[];
const char *tps_pp_schedule_name(enum tps_pp_schedule schedule);

#endif
