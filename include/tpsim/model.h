/*
 * A model: a sequence of named modules, a parallelization plan applied to
 * them, the run of one forward step on every simulated rank, and the
 * single-device reference model on the same global parameters.
 *
 * The spec (spec.h) is what a validated config (config.h) produces; the
 * model never sees JSON. Messages about a module's plan start with the
 * JSON Pointer the spec carries for it, so the CLI can name the config file
 * and the place.
 *
 * Parameter values are made once, as global tensors, and then distributed:
 * a run's result does not depend on the world size. Each parameter draws from
 * its own random stream (seed + its name), so adding a module does not change
 * the others.
 */
#ifndef TPSIM_MODEL_H
#define TPSIM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "tpsim/nn.h"
#include "tpsim/spec.h"

struct tps_model {
	const struct tps_model_spec *spec; /* not owned; must outlive model */
	struct tps_module *modules;	   /* n_modules, in spec order */
	struct tps_param *params;	   /* every module's, in module order */
	int n_params;
};

/* Fills t (of the given shape) by an init method; `a` is the bound of
 * uniform and the standard deviation of normal; `stream` names the random
 * stream (parameter name, "input"). */
enum tps_status tps_model_init_tensor(struct tps_tensor *t,
				      const struct tps_shape *shape,
				      struct tps_init_spec init, float a,
				      const char *stream,
				      struct tps_error *err);

/*
 * Makes the global parameters and distributes them by the plan. With
 * uneven "divisible", a sharded size not divisible by the tp size is an
 * error naming the module, the dim, its size and tp.
 * On error *model is untouched.
 */
enum tps_status tps_model_init(struct tps_model *model,
			       const struct tps_model_spec *spec,
			       struct tps_error *err);
void tps_model_free(struct tps_model *model);

/* Emits one setup event per parameter, in module order. */
enum tps_status tps_model_emit_setup(const struct tps_model *model,
				     struct tps_event_sink sink,
				     struct tps_error *err);

/* The global model input, from spec->input_init with a = 1. */
enum tps_status tps_model_make_input(const struct tps_model_spec *spec,
				     struct tps_tensor *input,
				     struct tps_error *err);

/*
 * One forward step on every rank: the input is split over dp (if any),
 * each module runs under its style, and the output is materialised in full
 * over tp (events with module "output"). *output receives the assembled
 * global output (inspection, not a collective).
 */
enum tps_status tps_model_forward(const struct tps_model *model,
				  const struct tps_tensor *input,
				  struct tps_event_sink sink, int step,
				  struct tps_tensor *output,
				  struct tps_error *err);

/* The same model on one device, on the same global parameters. */
enum tps_status tps_model_reference_forward(const struct tps_model *model,
					    const struct tps_tensor *input,
					    struct tps_tensor *output,
					    struct tps_error *err);

/* A rough upper bound of the bytes a run's tensors take, used to refuse a
 * run over the memory budget before allocating. Saturates at INT64_MAX. */
int64_t tps_model_estimate_bytes(const struct tps_model_spec *spec);

#endif
