/*
 * tpsim plot: the loss per step of training traces as one SVG
 * (docs/diff.md), a polyline per trace, and around the reference's loss
 * the band that reordering the sums allows: the reference loss of the
 * first trace of each storage dtype, plus and minus twice the error bound
 * of the loss from the bound pass of that trace's config (run.h,
 * tps_run_bound_pass; a correct run's loss is within 2 e of the
 * reference's). Two panels: the loss, and its difference from the first
 * trace's reference loss, where the band is visible at any scale.
 *
 * The SVG is the same bytes for the same traces and labels: coordinates
 * are whole tenths of a pixel and tick labels are made from integers, no
 * locale, no clock.
 */
#ifndef TPSIM_RUN_PLOT_H
#define TPSIM_RUN_PLOT_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "error.h"

#define TPS_PLOT_MAX_TRACES 16
#define TPS_PLOT_LABEL_MAX  96

struct tps_plot_curve {
	char label[TPS_PLOT_LABEL_MAX];
	int steps;
	double *loss; /* the trace's result.loss, per step */
	int band;     /* the band of its dtype */
	int outside;  /* the first step outside its band, -1: none */
};

struct tps_plot_band {
	/* "float32", "bfloat16", "bfloat16 (master_params float32)" */
	char dtype[128];
	int curve; /* the trace it is made from (the group's first) */
	int steps;
	double *center; /* its reference loss per step */
	double *half;	/* 2 e of the loss; -1 where it has no bound */
	char none[160]; /* why some step has no bound, or "" */
};

struct tps_plot {
	int n_curves;
	struct tps_plot_curve curves[TPS_PLOT_MAX_TRACES];
	int n_bands;
	struct tps_plot_band bands[TPS_PLOT_MAX_TRACES];
};

/*
 * Reads the losses of n traces (each as tps_trace_read loads and validates
 * it; names for messages) and runs the bound pass of the first of each
 * dtype on `threads` threads (0: the cores). labels: NULL, or one per
 * trace (NULL entries: the trace's own, tps_diff_trace_label's brief
 * one). TPS_ERR_INPUT at its pointer for a trace that is not a training
 * run's (/config/mode) or has no loss (/result/loss: a run an injected
 * mistake stopped), or is symbolic; TPS_ERR_USAGE for more than
 * TPS_PLOT_MAX_TRACES; the bound pass's errors. On error *p is untouched.
 */
enum tps_status tps_plot_build(struct tps_plot *p, const cJSON *const *traces,
			       const char *const *names,
			       const char *const *labels, int n, int threads,
			       struct tps_error *err);

void tps_plot_write_svg(FILE *out, const struct tps_plot *p);

void tps_plot_free(struct tps_plot *p);

#endif
