/*
 * What layernorm (nn_layernorm.c) and rmsnorm (nn_rmsnorm.c) share: the
 * driver around their row kernels. Both normalize rows of the last dim
 * with a replicated weight (and layernorm's bias), replicated or
 * sequence parallel; they differ in the row kernels, the names and
 * equations of their events and whether there is a bias. A module
 * describes itself in a struct tps_norm_kind and hands its ops to the
 * tps_norm_* functions below (docs/design.md, the module interface).
 */
#ifndef TPSIM_NN_NORM_H
#define TPSIM_NN_NORM_H

#include "nn.h"
#include "nn_bounds.h"

/* The parameters' indices: the weight, then the bias if there is one. */
enum { TPS_NORM_WEIGHT, TPS_NORM_BIAS };

/* One row of n values: y from x, w and b (NULL: no bias). */
typedef void tps_norm_row_forward(const float *x, const float *w,
				  const float *b, float *y, int64_t n,
				  double eps);

/* One row's backward: dx (NULL: not wanted) from dy and x, and dy's
 * part of dw and db (NULL: no bias) added in. */
typedef void tps_norm_row_backward(const float *x, const float *dy,
				   const float *w, float *dx, float *dw,
				   float *db, int64_t n, double eps);

struct tps_norm_kind {
	/* the type's name: the forward event's op and the shape error's */
	const char *name;
	/* why a replicated one gathers its input */
	const char *replicate_why;
	/* the forward event's equation, sequence and replicated */
	const char *forward_sequence, *forward_replicate;
	/* the weight gradient's op ("layernorm_dw") */
	const char *dw_op;
	/* the input gradient's op and equation */
	const char *backward_op, *backward_eq;
	/* it may have a bias (spec->bias says whether it does) */
	bool bias;
	/* the bound rules' rms (nn_bounds.h) */
	bool rms;
	tps_norm_row_forward *row_forward;
	tps_norm_row_backward *row_backward;
};

enum tps_status tps_norm_forward(const struct tps_norm_kind *k,
				 const struct tps_nn_context *ctx,
				 struct tps_module *m, struct tps_dtensor *x,
				 struct tps_dtensor *y, struct tps_error *err);

enum tps_status tps_norm_backward(const struct tps_norm_kind *k,
				  const struct tps_nn_context *ctx,
				  struct tps_module *m, struct tps_dtensor *dy,
				  struct tps_dtensor *dx,
				  struct tps_error *err);

enum tps_status tps_norm_reference_forward(const struct tps_norm_kind *k,
					   struct tps_module *m,
					   const struct tps_tensor *x,
					   struct tps_tensor *y,
					   struct tps_error *err);

enum tps_status tps_norm_reference_backward(const struct tps_norm_kind *k,
					    struct tps_module *m,
					    const struct tps_tensor *dy,
					    struct tps_tensor *dx,
					    struct tps_error *err);

enum tps_status
tps_norm_bound_forward(const struct tps_norm_kind *k, struct tps_module *m,
		       const struct tps_bound_ctx *bc,
		       const struct tps_tensor *x, const struct tps_bound *ex,
		       struct tps_tensor *y, struct tps_bound *ey,
		       struct tps_error *err);

enum tps_status
tps_norm_bound_backward(const struct tps_norm_kind *k, struct tps_module *m,
			const struct tps_bound_ctx *bc,
			const struct tps_tensor *dy,
			const struct tps_bound *edy, struct tps_tensor *dx,
			struct tps_bound *edx, struct tps_error *err);

#endif
