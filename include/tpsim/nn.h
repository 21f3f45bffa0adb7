/*
 * Modules and parallel styles, and the events they emit.
 *
 * A module runs on every simulated rank at once: its input is a DTensor, its
 * parameters are DTensors, and each local computation, local split and
 * collective it performs is reported as one event to an event sink (the
 * trace implements the sink; see trace.h).
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

/* A linear layer's parameters as the ranks hold them. */
struct tps_linear {
	const char *name; /* module path, e.g. "block.fc1" */
	enum tps_style style;
	enum tps_bias_mode bias_mode;
	/* Declared tp layouts; a shard dim may be negative (from the end). */
	struct tps_placement input;
	struct tps_placement output;
	struct tps_dtensor weight; /* (out, in) */
	struct tps_dtensor bias;   /* (out); locals empty when has_bias is 0 */
	bool has_bias;
};

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

/* y = linear(x) under the layer's style; x is consumed (redistributed in
 * place) and y is new. On error y is untouched. */
enum tps_status tps_nn_linear_forward(const struct tps_nn_context *ctx,
				      const struct tps_linear *layer,
				      struct tps_dtensor *x,
				      struct tps_dtensor *y,
				      struct tps_error *err);

/* y = relu(x) or gelu(x), element-wise on the locals. */
enum tps_status tps_nn_activation_forward(const struct tps_nn_context *ctx,
					  enum tps_module_type type,
					  const char *name,
					  struct tps_dtensor *x,
					  struct tps_dtensor *y,
					  struct tps_error *err);

#endif
