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
#include <stdint.h>

#define TPS_NUMFMT_MAX 32
/* The longest text tps_format_float writes: "-0.0000" and 9 digits (the
 * exponent form, "-1.17549435e-38", is 15). The trace size estimate
 * (run.h) counts on it. */
#define TPS_NUMFMT_FLOAT_LEN_MAX 16

/* buf must hold TPS_NUMFMT_MAX bytes. Returns the length written. */
size_t tps_format_float(float value, char *buf);
size_t tps_format_double(double value, char *buf);

/*
 * A byte count for people, in binary units with `digits` (1 to 15)
 * significant digits, trailing zeros dropped: 12616957952 -> "11.8 GiB",
 * 8 << 30 -> "8 GiB", 1536 -> "1.5 KiB", 100 -> "100 bytes"; at least
 * 1000 of a unit stays in it ("1000 GiB", not "1e+03"). Negative counts
 * are written as bytes. Truncated to size - 1 bytes; returns buf.
 */
const char *tps_format_size(int64_t bytes, int digits, char *buf, size_t size);

#endif
