/*
 * A run's verdict in one line, from its summary: what `tpsim run` prints
 * on stderr after "tpsim: CONFIG: ", and what the public API's result
 * hands back (tpsim_result_verdict).
 */
#include "run.h"

#include <math.h>
#include <stdio.h>

#include "numfmt.h"
#include "trace.h"

void tps_run_write_verdict(FILE *out, const struct tps_run_summary *s)
{
	char diff[TPS_NUMFMT_MAX], sent[TPS_NUMFMT_MAX];

	fprintf(out, "mesh %s (world %d), %d module%s, ", s->mesh,
		s->world_size, s->n_modules, s->n_modules == 1 ? "" : "s");
	tps_format_bytes(s->bytes_per_rank, sent);
	if (s->symbolic) {
		if (s->steps > 0) {
			fprintf(out, "%d training step%s, ", s->steps,
				s->steps == 1 ? "" : "s");
		}
		fprintf(out,
			"%lld event%s, %lld collective%s (%s/rank); "
			"symbolic: no values, no reference",
			(long long)s->events, s->events == 1 ? "" : "s",
			(long long)s->collectives,
			s->collectives == 1 ? "" : "s", sent);
		return;
	}
	if (s->steps > 0) {
		char loss[TPS_NUMFMT_MAX], ref[TPS_NUMFMT_MAX];
		tps_format_float(s->loss, loss);
		tps_format_float(s->reference_loss, ref);
		fprintf(out, "%d training step%s, loss %s (reference %s), ",
			s->steps, s->steps == 1 ? "" : "s", loss, ref);
	}
	fprintf(out, "%lld event%s, %lld collective%s (%s/rank), ",
		(long long)s->events, s->events == 1 ? "" : "s",
		(long long)s->collectives, s->collectives == 1 ? "" : "s",
		sent);
	if (s->stopped[0]) {
		fprintf(out, "STOPPED by a shape error: %s", s->stopped);
		return;
	}
	if (isfinite(s->max_abs_diff)) {
		char how[96];
		tps_format_float(s->max_abs_diff, diff);
		tps_trace_describe_comparison(s->exact, s->compared, how,
					      sizeof how);
		fprintf(out, "max_abs_diff %s (%s): ", diff, how);
	} else {
		/* Shapes that differ were not compared at all. */
		fputs("max_abs_diff none (the shapes differ): ", out);
	}
	fputs(s->match ? "matches the reference" : "DIFFERS from the reference",
	      out);
	if (s->mistake_hidden) {
		fprintf(out,
			", by the injected mistake %s, which the run carried "
			"out (its numbers are within the tolerance)",
			s->mistake);
	}
}
