/*
 * What a run refuses before it starts (run_internal.h): a values tensor
 * over 2^31 elements, a run over its memory budget (--max-memory), a
 * trace over its budget (--max-trace); each message names the config key
 * the size grows with, the need and the budget in figures that do not
 * read the same, and what would make the run smaller.
 */
#include <stdio.h>
#include <string.h>

#include "numfmt.h"
#include "run_internal.h"

/* need and budget for a refusal, in binary units with as many digits as it
 * takes for them not to read the same ("8.01 GiB" over "8 GiB"). */
static void format_over(int64_t need, int64_t budget, char *a, char *b,
			size_t size)
{
	for (int digits = 3; digits <= 15; digits++) {
		tps_format_bytes_digits(need, digits, a);
		tps_format_bytes_digits(budget, digits, b);
		if (strcmp(a, b) != 0) {
			return;
		}
	}
}

/* The values modes that write less than this one, for a message. */
static const char *smaller_values(enum tps_trace_values values)
{
	switch (values) {
	case TPS_TRACE_VALUES_FULL:
		return "trace values \"summary\" or \"none\", ";
	case TPS_TRACE_VALUES_SUMMARY: return "trace values \"none\", ";
	case TPS_TRACE_VALUES_NONE: break;
	}
	return "";
}

/* The trace-budget refusal, with what would make the trace smaller. */
enum tps_status tps_run_trace_over_budget(const struct tps_run_spec *spec,
					  const struct tps_run_estimate *e,
					  int64_t budget, struct tps_error *err)
{
	const char *values = smaller_values(spec->values);
	const char *steps = e->steps > 1 ? "fewer steps, " : "";
	char a[64], b[64];
	format_over(e->trace_bytes, budget, a, b, sizeof a);
	return tps_error_set(
		err, TPS_ERR_LIMIT,
		"the trace would take up to %s (%lld events over %d step%s), "
		"over the trace budget of %s (--max-trace); %s%s%s",
		a, (long long)e->events, e->steps, e->steps == 1 ? "" : "s", b,
		values, steps,
		values[0] || steps[0] ? "or a larger --max-trace"
				      : "a larger --max-trace allows it");
}

/*
 * The sizes a values run refuses before allocating, each naming the
 * config key it grows with (`file` is the config's name, escaped): an
 * output over 2^31 elements (a symbolic run's meta tensors take up to
 * 2^48, which the config checks), then the memory budget.
 */
enum tps_status tps_run_check_sizes(const struct tps_run_spec *spec,
				    const char *file, int64_t max_memory,
				    struct tps_error *err)
{
	const struct tps_model_spec *ms = &spec->model;
	struct tps_memory_part part;
	struct tps_shape shape;
	char buf[128], what[TPS_NAME_MAX + 64], a[64], b[64];
	char largest[TPS_NUMFMT_MAX];
	int64_t need;
	int i;

	/* A symbolic run's tensors are meta: they take no bytes. */
	if (spec->compute == TPS_COMPUTE_SYMBOLIC) {
		return TPS_OK;
	}
	i = tps_model_spec_output_over(ms, TPS_MAX_ELEMENTS, &shape);
	if (i >= 0) {
		return tps_error_set(
			err, TPS_ERR_LIMIT,
			"%s: %s: the output of %s, %s, has more than 2^31 "
			"elements, the most a tensor with values may have (its "
			"rows come from /input/shape; a symbolic run, "
			"--symbolic, takes up to 2^48)",
			file, ms->modules[i].width_pointer, ms->modules[i].name,
			tps_shape_format(&shape, buf, sizeof buf));
	}
	need = tps_model_estimate_largest(ms, &part);
	if (need <= max_memory) {
		return TPS_OK;
	}
	if (part.module) {
		snprintf(what, sizeof what,
			 "%s's parameters, every rank's copy or shard%s",
			 part.module,
			 ms->mode == TPS_MODE_TRAINING
				 ? ", their gradients and optimizer state"
				 : "");
	} else {
		snprintf(what, sizeof what,
			 "the activations, the input's rows (/input/shape) by "
			 "the widest output");
	}
	format_over(need, max_memory, a, b, sizeof a);
	tps_format_bytes(part.bytes, largest);
	return tps_error_set(
		err, TPS_ERR_LIMIT,
		"%s: %s: the run needs about %s, over the memory budget of %s "
		"(--max-memory); the largest part, about %s, is %s; without "
		"values, tpsim run --symbolic reports what each rank holds "
		"and tpsim comm what it sends, at any size",
		file, part.pointer, a, b, largest, what);
}
