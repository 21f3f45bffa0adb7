/*
 * Locale-independent number formatting for the trace.
 *
 * tps_format_float writes the shortest decimal (at most 9 significant digits)
 * that reads back, with strtof, to exactly the same float32: 0.1f -> "0.1",
 * 1.0f -> "1", 16777216.0f -> "16777216", 1e-45f -> "1e-45".
 * tps_format_double does the same for doubles (at most 17 digits).
 * The value must be finite (asserted): the trace never holds NaN or Inf.
 * The output is valid JSON; a decimal comma from a foreign LC_NUMERIC is
 * turned back into a point.
 */
#ifndef TPSIM_NUMFMT_H
#define TPSIM_NUMFMT_H

#include <stddef.h>

#define TPS_NUMFMT_MAX 32

/* buf must hold TPS_NUMFMT_MAX bytes. Returns the length written. */
size_t tps_format_float(float value, char *buf);
size_t tps_format_double(double value, char *buf);

#endif
