/*
 * What `tpsim comm` prints: for each config at each combination of its
 * variables (a point), the collectives and bytes per rank of one
 * inference step and one training step side by side, by phase, op, module
 * and mesh dim, and a step time from the alpha-beta model (costs.h); a
 * sweep table of the points; or all of it as JSON (docs/comm.md). The
 * engine runs on meta tensors, so hidden 8192 costs no more than 8.
 */
#ifndef TPSIM_RUN_COMM_H
#define TPSIM_RUN_COMM_H

#include <stdio.h>

#include "config.h"
#include "costs.h"

/*
 * The ZeRO settings `tpsim comm --zero` compares side by side, each the
 * config with its "zero" key replaced (docs/zero.md, docs/comm.md): plain
 * DDP, stage 1, Megatron's distributed optimizer, stage 2, stage 3 (FSDP,
 * reshard_after_forward).
 */
enum tps_comm_zero {
	TPS_COMM_ZERO_DDP,
	TPS_COMM_ZERO_STAGE1,
	TPS_COMM_ZERO_DISTRIBUTED_OPTIMIZER,
	TPS_COMM_ZERO_STAGE2,
	TPS_COMM_ZERO_STAGE3,
};
#define TPS_COMM_ZERO_COUNT 5

struct tps_comm_zero_setting {
	const char *name;  /* as --zero and --json write it: "ddp", "1", ... */
	const char *label; /* a column's heading: "DDP", "stage 1", ... */
	struct tps_zero_spec zero;
};
extern const struct tps_comm_zero_setting
	tps_comm_zero_settings[TPS_COMM_ZERO_COUNT];

/* At most this many points side by side (TPS_COMM_COLUMNS). */
#define TPS_COMM_MAX_COLUMNS 12

/* One config at one combination of variables, and what it costs. */
struct tps_comm_point {
	const char *config; /* its name; not owned */
	struct tps_config_var vars[TPS_CONFIG_MAX_VARS];
	int n_vars;
	/* The --zero setting it was counted at (an enum tps_comm_zero), or
	 * -1: the config's own "zero". */
	int zero;
	/* Its ZeRO stage gathers parameters (3, FSDP): the footprint's
	 * gathered figure is theirs. */
	bool gathers;
	struct tps_mesh mesh;
	int tp_dim;
	unsigned dp_mask;
	struct tps_cost_spec cost;
	struct tps_cost_report report;
};

/*
 * Counts a parsed config into *p, named `config` (not copied: it must
 * outlive p), its zero -1. On error (the plan's, out of memory) the
 * message starts with config, and *p holds nothing to free.
 */
enum tps_status tps_comm_point_make(const struct tps_run_spec *spec,
				    const char *config,
				    struct tps_comm_point *p,
				    struct tps_error *err);

/* Frees each point's report, then the array (calloc'd); NULL is a no-op. */
void tps_comm_points_free(struct tps_comm_point *points, int n);

enum tps_comm_format {
	TPS_COMM_TABLES,  /* each point's table, then the sweep's (n > 1) */
	TPS_COMM_SUMMARY, /* --summary: the sweep's table alone */
	TPS_COMM_JSON,	  /* --json: "tpsim.comm" version 1 */
	/* --columns (and --zero): one training step of every point side by
	 * side, a column each (at most TPS_COMM_MAX_COLUMNS): the bytes
	 * sent per rank by phase and op, and the bytes held per rank. */
	TPS_COMM_COLUMNS,
};

/* Writes the n points in format. Fails only for want of memory
 * (TPS_ERR_NOMEM); write errors are the caller's to detect on out. */
enum tps_status tps_comm_write(FILE *out, const struct tps_comm_point *points,
			       int n, enum tps_comm_format format,
			       struct tps_error *err);

/* One point's table; the sweep's table; the JSON (tps_comm_write's
 * parts). */
enum tps_status tps_comm_write_point(FILE *out, const struct tps_comm_point *p);
enum tps_status
tps_comm_write_sweep(FILE *out, const struct tps_comm_point *points, int n);
enum tps_status
tps_comm_write_columns(FILE *out, const struct tps_comm_point *points, int n);
void tps_comm_write_json(FILE *out, const struct tps_comm_point *points, int n);

#endif
