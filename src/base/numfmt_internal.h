/*
 * numfmt internals, for the library's own files, the numfmt tests and
 * tools/numfmt_exhaustive.c; not part of the public API.
 *
 * tps_format_float (src/base/numfmt_float.c) is Schubfach on exact integers.
 * tps_format_float_exact (src/base/numfmt.c) is the formatter it replaced, kept
 * as the oracle that defines the output: the fewest significant digits p
 * (binary search over p) whose correctly rounded snprintf("%.{p-1}e") reads
 * back with strtof to the same float, written in plain notation when the
 * decimal exponent is in [-5, 9), else as "d.ddde-7". It is 10 to 30
 * times slower. The two must agree byte for byte on every finite float32:
 * the tests sample that, tools/numfmt_exhaustive.c checks all 2^32
 * patterns.
 */
#ifndef TPSIM_NUMFMT_INTERNAL_H
#define TPSIM_NUMFMT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* As tps_format_float, the slow way. buf holds TPS_NUMFMT_MAX bytes. */
size_t tps_format_float_exact(float value, char *buf);
/* As tps_format_double, by the binary search alone (tps_format_double
 * first tries one 15-digit conversion). */
size_t tps_format_double_exact(double value, char *buf);

/*
 * Schubfach's integer helpers, exposed so that the tests can check them
 * against their definitions with exact arithmetic over every float32
 * exponent (q in [-149, 104], k in [-46, 31]).
 */
/* floor(log10(2^q)) */
int tps_numfmt_flog10_pow2(int q);
/* floor(log10(3/4 * 2^q)) */
int tps_numfmt_flog10_three_quarters_pow2(int q);
/* floor(log2(10^e)) */
int tps_numfmt_flog2_pow10(int e);
/* g(k) = floor(10^-k * 2^(62 - floor(log2(10^-k)))) + 1, in (2^62, 2^63]:
 * the 63 leading bits of 10^-k plus one, an overestimate:
 * (g - 1) 2^r <= 10^-k < g 2^r with r = floor(log2(10^-k)) - 62. */
uint64_t tps_numfmt_pow10_g(int k);

#define TPS_NUMFMT_K_MIN (-46)
#define TPS_NUMFMT_K_MAX 31

#endif
