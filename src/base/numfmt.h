/*
 * Locale-independent number formatting for the trace.
 *
 * tps_format_float writes the shortest decimal (at most 9 significant digits)
 * that reads back, with strtof, to exactly the same float32: 0.1f -> "0.1",
 * 1.0f -> "1", 16777216.0f -> "16777216", 1e-45f -> "1e-45".
 * tps_format_double does the same for doubles (at most 17 digits).
 * The value must be finite (asserted): the trace never holds NaN or Inf.
 * The output is valid JSON and the same bytes whatever locale the process
 * runs in: tps_format_double's snprintf and strtod run in the C locale
 * (tps_c_locale_enter), so a program that embeds tpsim and sets a
 * decimal comma (LC_NUMERIC) gets the digits every other program gets.
 */
#ifndef TPSIM_NUMFMT_H
#define TPSIM_NUMFMT_H

#include <locale.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

#define TPS_NUMFMT_MAX 32
/* The longest text tps_format_float writes: "-0.0000" and 9 digits (the
 * exponent form, "-1.17549435e-38", is 15). The trace size estimate
 * (run.h) counts on it. */
#define TPS_NUMFMT_FLOAT_LEN_MAX 16

/* buf must hold TPS_NUMFMT_MAX bytes. Returns the length written. */
size_t tps_format_float(float value, char *buf);
size_t tps_format_double(double value, char *buf);
/* A value of dtype d (dtype.h) as the shortest decimal that reads back to
 * it, read as a double and rounded once to d: bfloat16 0.10009765625 is
 * "0.1", 33024 is "33000". Float32 is tps_format_float. */
size_t tps_format_dtype(float value, enum tps_dtype d, char *buf);

/*
 * A size for people, the one form tpsim prints sizes in (tables, summaries,
 * explain; the trace and --json keep exact integers): under 1024 the exact
 * count, "0 bytes", "1 byte", "768 bytes"; from 1024 on, binary units with
 * three significant digits, trailing zeros dropped: "1 KiB", "1.5 KiB",
 * "7.08 MiB", "896 MiB", "81.6 GiB". A figure that rounds to 1024 of a
 * unit is written in the next one (1048575 bytes: "1 MiB"). Rounding is
 * half up, in integers: no locale, no floating point. Negative counts are
 * written as bytes. buf must hold TPS_NUMFMT_MAX bytes; returns the length.
 */
size_t tps_format_bytes(int64_t bytes, char *buf);

/* tps_format_bytes with `digits` (1 to 15) significant digits instead of
 * three, for a message that must tell two sizes apart ("8.01 GiB" over
 * "8 GiB"): 12616957952 bytes at 6 digits is "11.7505 GiB". */
size_t tps_format_bytes_digits(int64_t bytes, int digits, char *buf);

/* tps_format_bytes and, from 1024 on, the exact count after it:
 * "81.6 GiB (87623270400 bytes)"; "768 bytes". buf must hold
 * TPS_NUMFMT_BYTES_MAX bytes; returns the length. */
#define TPS_NUMFMT_BYTES_MAX 64
size_t tps_format_bytes_exact(int64_t bytes, char *buf);

/*
 * snprintf and strtod take their decimal point from LC_NUMERIC, which is
 * the process's: a program that embeds tpsim may have set one that writes
 * 0.5 as "0,5" and reads "0.5" as 0. Between enter and leave the calling
 * thread is in the C locale; uselocale is per thread, so no other thread
 * sees it. On glibc the whole C locale is a static object: no allocation,
 * no failure (elsewhere a failed newlocale leaves the locale as it was).
 */
struct tps_c_locale {
	locale_t c, saved;
};
void tps_c_locale_enter(struct tps_c_locale *l);
void tps_c_locale_leave(struct tps_c_locale *l);

#endif
