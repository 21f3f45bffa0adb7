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

/* One config at one combination of variables, and what it costs. */
struct tps_comm_point {
	const char *config; /* its name; not owned */
	struct tps_config_var vars[TPS_CONFIG_MAX_VARS];
	int n_vars;
	struct tps_mesh mesh;
	int tp_dim;
	unsigned dp_mask;
	struct tps_cost_spec cost;
	struct tps_cost_report report;
};

/*
 * Counts a parsed config into *p, named `config` (not copied: it must
 * outlive p). On error (the plan's, out of memory) the message starts
 * with config, and *p holds nothing to free.
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
void tps_comm_write_json(FILE *out, const struct tps_comm_point *points, int n);

#endif
