/*
 * A run's verdict in one line, from its summary: what `tpsim run` prints
 * on stderr after "tpsim: CONFIG: ", and what the public API's result
 * hands back (tpsim_result_verdict).
 */
#include "run.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "numfmt.h"
#include "trace.h"

/* printf into buf at *used, in the C locale (a bound's %.1e must not
 * become "8,4e-06" in a program that set a decimal comma). */
static void put(char *buf, size_t size, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	struct tps_c_locale l;
	va_list ap;
	int n;
	if (*used >= size) {
		return;
	}
	tps_c_locale_enter(&l);
	va_start(ap, fmt);
	n = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	tps_c_locale_leave(&l);
	*used += n > 0 ? (size_t)n : 0;
}

/* The digits a difference is told with: an integer in full ("differs by
 * 113", a bug's typical difference where no sum rounds), else 2. */
static int digits(double v)
{
	return v == trunc(v) && fabs(v) < 1e7 ? 7 : 2;
}

void tps_run_describe_comparison(const struct tps_comparison *c, char *buf,
				 size_t size)
{
	const struct tps_compare_tensor *w = c->worst >= 0 ? &c->t[c->worst]
							   : NULL;
	char element[TPS_NAME_MAX + 64];
	size_t used = 0;
	int unbounded = c->n - c->bounded;
	const char *reason = NULL;

	buf[0] = '\0';
	for (int i = 0; i < c->n && !reason; i++) {
		if (c->t[i].rule == TPS_COMPARE_TOLERANCE) {
			reason = c->t[i].none;
		}
	}
	if (w && w->shapes_differ) {
		put(buf, size, &used,
		    "%s has another shape than the reference's: not rounding",
		    w->name);
		return;
	}
	if (!c->match && w) {
		tps_run_element_name(w, w->at, element, sizeof element);
		switch (w->at_bound == 0.0 && w->rule == TPS_COMPARE_BOUND
				? TPS_COMPARE_EXACT
				: w->rule) {
		case TPS_COMPARE_EXACT:
			put(buf, size, &used,
			    "differs by %.*g at %s, where no sum rounds (bound "
			    "0): not rounding",
			    digits(w->at_diff), w->at_diff, element);
			return;
		case TPS_COMPARE_BOUND:
			put(buf, size, &used,
			    "differs by %.*g at %s; reordering can explain at "
			    "most %.1e: not rounding",
			    digits(w->at_diff), w->at_diff, element,
			    w->at_bound);
			return;
		case TPS_COMPARE_TOLERANCE:
			put(buf, size, &used,
			    "differs by %.*g at %s, beyond the tolerance %.1e "
			    "(no error bound: %s)",
			    digits(w->at_diff), w->at_diff, element,
			    w->max_bound, w->none);
			return;
		}
	}
	if (c->bounded == 0) {
		put(buf, size, &used,
		    "differs from the reference by at most %.2g, within the "
		    "tolerance (no error bound: %s)",
		    (double)c->max_abs_diff, reason ? reason : "");
		return;
	}
	if (c->exact == c->n) {
		put(buf, size, &used,
		    "matches the reference bit for bit, as it must: no sum "
		    "rounds (bound 0)");
	} else if (c->max_abs_diff == 0.0f) {
		put(buf, size, &used,
		    "matches the reference bit for bit (reordering the sums "
		    "could explain up to %.1e)",
		    c->max_bound);
	} else {
		put(buf, size, &used,
		    "differs from the reference by at most %.2g, within what "
		    "reordering the sums can explain (bound %.1e)",
		    (double)c->max_abs_diff, c->max_bound);
	}
	if (unbounded > 0) {
		put(buf, size, &used,
		    "; %d tensor%s without an error bound (%s) within the "
		    "tolerance",
		    unbounded, unbounded == 1 ? "" : "s", reason ? reason : "");
	}
}

void tps_run_write_verdict(FILE *out, const struct tps_run_summary *s)
{
	char sent[TPS_NUMFMT_MAX];

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
		if (s->no_reference) {
			fprintf(out, "%d training step%s, loss %s, ", s->steps,
				s->steps == 1 ? "" : "s", loss);
		} else {
			fprintf(out,
				"%d training step%s, loss %s (reference "
				"%s), ",
				s->steps, s->steps == 1 ? "" : "s", loss, ref);
		}
	}
	fprintf(out, "%lld event%s, %lld collective%s (%s/rank), ",
		(long long)s->events, s->events == 1 ? "" : "s",
		(long long)s->collectives, s->collectives == 1 ? "" : "s",
		sent);
	if (s->no_reference) {
		fputs("no reference (--no-reference): nothing compared", out);
		return;
	}
	if (s->stopped[0]) {
		fprintf(out, "STOPPED by a shape error: %s", s->stopped);
		return;
	}
	fputs(s->words, out);
	if (s->mistake_hidden) {
		fprintf(out,
			", but the run carried out the injected mistake %s, "
			"so it does not match",
			s->mistake);
	}
}
