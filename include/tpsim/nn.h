/*
 * Modules and parallel styles, and the events they emit.
 *
 * A module runs on every simulated rank at once: its input is a DTensor, its
 * parameters are DTensors, and each local computation, local split and
 * collective it performs is reported as one event to an event sink (the
 * trace implements the sink; see event.h).
 *
 * A module is an interface: an ops table (struct tps_module_ops) of its
 * parallel forward, its single-device reference, its parameters and its
 * memory estimate. Each family has its own file (nn_linear.c,
 * nn_elementwise.c); tps_module_ops_of picks the table by type with a
 * switch that has no default, so -Wswitch names a type left out.
 *
 * Styles (DESIGN.md section 2), for y = x W^T + b with W (out, in):
 *
 *   colwise (ColumnParallelLinear): W shard(0), b shard(0) on the tp dim.
 *     x replicate -> y_i = x W_i^T + b_i, y shard(-1). No communication;
 *     output "replicate" (gather_output) adds an all_gather.
 *     Input "shard(d)" (sequence parallel) all-gathers x first.
 *   rowwise (RowParallelLinear): W shard(1), b replicate.
 *     x shard(-1) (a replicated x is split locally) -> y_i = x_i W_i^T,
 *     partial; all_reduce gives y = sum_i y_i (output "shard(d)": a
 *     reduce_scatter). The bias is added once:
 *       after_reduce   y + b after the reduction (Megatron; the default)
 *       partial_split  every rank adds b / N before it (DTensor)
 *       rank0          local rank 0 adds b before it (nanotron)
 *   replicate / unplanned: W, b replicate; x is made replicate on tp first.
 *   relu, gelu: element-wise on each rank's local values, which is exact for
 *     replicate and shard(d) layouts, so they keep the layout (as PyTorch's
 *     local tensors do); a partial input is all-reduced first, since
 *     relu(a + b) != relu(a) + relu(b).
 *
 * Placements of activations on mesh dims other than tp (a dp batch shard, or
 * replicate) are carried through unchanged.
 */
#ifndef TPSIM_NN_H
#define TPSIM_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "tpsim/dtensor.h"
#include "tpsim/event.h"
#include "tpsim/spec.h"

/* Where a module runs: the mesh, which mesh dim is tp, the sink, the step. */
struct tps_nn_context {
	const struct tps_mesh *mesh;
	int tp_dim;
	struct tps_event_sink sink;
	int step;
	enum tps_phase phase;
};

/* A parameter: its initial global value and how the ranks hold it. */
struct tps_param {
	char name[TPS_NAME_MAX + 8]; /* "fc1.weight" */
	struct tps_tensor init;	     /* the global value at setup */
	struct tps_dtensor value;    /* every rank's shard or copy */
};

#define TPS_MODULE_MAX_PARAMS 2

/* What a module's parameter is, before it exists. */
struct tps_param_spec {
	const char *suffix; /* "weight": the parameter is "<module>.weight" */
	struct tps_shape shape;	 /* global */
	int64_t fan_in;		 /* nn.Linear's init bound 1/sqrt(fan_in) */
	struct tps_placement tp; /* on the tp dim; replicate on the others */
};

/* What the memory estimate of a module needs to know about the run. */
struct tps_memory_context {
	int64_t world, tp; /* world size, tp group size */
};

struct tps_module;

struct tps_module_ops {
	/* The parallel forward: x (redistributed in place as the style needs)
	 * -> *y, new. Emits one event per step. On error *y is untouched. */
	enum tps_status (*forward)(const struct tps_nn_context *ctx,
				   struct tps_module *m, struct tps_dtensor *x,
				   struct tps_dtensor *y,
				   struct tps_error *err);
	/* The single-device reference on the global parameters (each
	 * parameter's `init`): y = module(x). */
	enum tps_status (*reference_forward)(const struct tps_module *m,
					     const struct tps_tensor *x,
					     struct tps_tensor *y,
					     struct tps_error *err);
	/* Fills out[0..n) with the module's parameters (at most
	 * TPS_MODULE_MAX_PARAMS), weight first, and returns n. */
	int (*parameters)(const struct tps_module_spec *spec, int tp_dim,
			  struct tps_param_spec *out);
	/* Bytes the module's parameters take: the global value plus every
	 * rank's copy or shard. Saturates at INT64_MAX. */
	int64_t (*memory_estimate)(const struct tps_module_spec *spec,
				   const struct tps_memory_context *mc);
};

/* A module as it runs. */
struct tps_module {
	const struct tps_module_spec *spec; /* not owned */
	const struct tps_module_ops *ops;
	struct tps_param *params; /* n_params, in the model's array */
	int n_params;
};

/* The ops table of a module type. */
const struct tps_module_ops *tps_module_ops_of(enum tps_module_type type);

/*
 * Redistributes x to `target` (one placement per mesh dim), emitting one
 * event per step with the given module and tensor names.
 */
enum tps_status tps_nn_redistribute(const struct tps_nn_context *ctx,
				    struct tps_dtensor *x,
				    const struct tps_placement *target,
				    const char *module, const char *tensor,
				    const char *note, struct tps_error *err);

/*
 * Redistributes x so that its tp placement is `tp_target` (other mesh dims
 * unchanged), emitting one event per step with the given module and tensor
 * names. A tp_target shard dim may be negative (counted from the end).
 */
enum tps_status tps_nn_to_layout(const struct tps_nn_context *ctx,
				 struct tps_dtensor *x,
				 struct tps_placement tp_target,
				 const char *module, const char *tensor,
				 const char *note, struct tps_error *err);

/* Emits a compute event for `value` (every rank), with the step and phase
 * of ctx. flops: the most any one rank did (0 where not counted). */
enum tps_status tps_nn_emit_compute(const struct tps_nn_context *ctx,
				    const char *module, const char *op,
				    const char *tensor, const char *note,
				    const struct tps_dtensor *value,
				    int64_t flops, struct tps_error *err);

/* p with a negative shard dim counted from the end of an ndim tensor. */
struct tps_placement tps_nn_normalized(struct tps_placement p, int ndim);

/* a + b and a * b, saturating at INT64_MAX (memory estimates, flops). */
int64_t tps_sat_add(int64_t a, int64_t b);
int64_t tps_sat_mul(int64_t a, int64_t b);

/* The families' ops tables (nn_linear.c, nn_elementwise.c). */
extern const struct tps_module_ops tps_linear_ops;
extern const struct tps_module_ops tps_elementwise_ops;

#endif
