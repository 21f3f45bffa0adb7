/*
 * The snprintf/strtof formatter: tps_format_double, and the float32 oracle
 * tps_format_float_exact that src/base/numfmt_float.c must match byte for byte.
 */
#include "numfmt.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "numfmt_internal.h"

void tps_c_locale_enter(struct tps_c_locale *l)
{
	l->c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	l->saved = l->c ? uselocale(l->c) : (locale_t)0;
}

void tps_c_locale_leave(struct tps_c_locale *l)
{
	if (l->c) {
		uselocale(l->saved);
		freelocale(l->c);
		l->c = (locale_t)0;
	}
}

/* Only where newlocale failed (not glibc) can a foreign LC_NUMERIC still
 * print "0,5"; JSON needs "0.5". */
static void fix_decimal_point(char *buf)
{
	for (char *p = buf; *p; p++) {
		if (*p == ',') {
			*p = '.';
		}
	}
}

/* How a trace's decimal is read back: as a double (strtod, correctly
 * rounded), then rounded once to the dtype; TPS_DTYPE_COUNT means a
 * double itself. */
static bool reads_back(const char *text, double value, int dtype)
{
	double d = strtod(text, NULL);
	if (dtype == TPS_DTYPE_F32) {
		return strtof(text, NULL) == (float)value;
	}
	if (dtype == TPS_DTYPE_COUNT) {
		return d == value;
	}
	return tps_dtype_round_double(d, (enum tps_dtype)dtype) ==
	       (float)value;
}

/* The p significant digits of "-1.2345e+03" (sign dropped) into digits. */
static int mantissa_digits(const char *sci, const char *e, char *digits)
{
	int n = 0;
	for (const char *c = sci; c < e; c++) {
		if (*c >= '0' && *c <= '9') {
			digits[n++] = *c;
		}
	}
	digits[n] = '\0';
	return n;
}

/* Plain notation of digits d1 d2 ... dp x 10^(exponent - p + 1). */
static size_t write_plain(const char *sci, const char *e, long exponent,
			  char *buf)
{
	char digits[TPS_NUMFMT_MAX];
	int p = mantissa_digits(sci, e, digits);
	size_t n = 0;
	if (sci[0] == '-') {
		buf[n++] = '-';
	}
	if (exponent < 0) {
		buf[n++] = '0';
		buf[n++] = '.';
		for (long z = 0; z < -exponent - 1; z++) {
			buf[n++] = '0';
		}
		for (int i = 0; i < p; i++) {
			buf[n++] = digits[i];
		}
	} else {
		for (long i = 0; i <= exponent || i < p; i++) {
			if (i == exponent + 1) {
				buf[n++] = '.';
			}
			buf[n++] = i < p ? digits[i] : '0';
		}
	}
	buf[n] = '\0';
	return n;
}

/* "1.5e+20" -> "1.5e20", "1e-45". */
static size_t write_exponent(const char *sci, const char *e, long exponent,
			     char *buf)
{
	size_t m = (size_t)(e - sci);
	int n;
	memcpy(buf, sci, m);
	n = snprintf(buf + m, TPS_NUMFMT_MAX - m, "e%d", (int)exponent);
	return m + (size_t)(n > 0 ? n : 0);
}

/*
 * The shortest round trip: the fewest significant digits p (1..max_digits)
 * whose "%.{p-1}e" form reads back to value. It is then written in plain
 * notation when the decimal exponent is in [-5, max_plain) ("30", "0.001"),
 * else in exponent notation ("1e-45", "3.4028235e38"); both carry the same
 * p digits.
 */
/*
 * For a normal double, the p of format_shortest when it is at most 15, in
 * one conversion; 0 when more digits are needed. DBL_DIG is 15: every
 * decimal of at most 15 significant digits survives decimal -> double ->
 * 15-digit decimal. So if some decimal of p <= 15 digits reads back to
 * value, "%.14e" of value is that decimal padded with zeros, and dropping
 * the zeros gives the shortest. If the 15-digit form itself does not read
 * back, the answer is 16 or 17 digits.
 */
static int double_digits_up_to_15(double value)
{
	char sci[TPS_NUMFMT_MAX];
	const char *e;
	int digits = 0, last_nonzero = 0;

	snprintf(sci, sizeof sci, "%.14e", value);
	fix_decimal_point(sci);
	if (!reads_back(sci, value, TPS_DTYPE_COUNT)) {
		return 0;
	}
	e = strchr(sci, 'e');
	for (const char *c = sci; c < e; c++) {
		if (*c >= '0' && *c <= '9') {
			digits++;
			last_nonzero = *c != '0' ? digits : last_nonzero;
		}
	}
	return last_nonzero;
}

static size_t format_shortest_c(double value, int max_digits, int max_plain,
				int dtype, bool search_only, char *buf)
{
	char sci[TPS_NUMFMT_MAX];
	const char *e;
	long exponent;
	int p;

	assert(isfinite(value));
	if (value == 0.0) {
		/* Keep the sign of -0, which reads back as -0. */
		return (size_t)snprintf(buf, TPS_NUMFMT_MAX, "%s",
					signbit(value) ? "-0" : "0");
	}
	/* Below 2^p (p significand bits: 2^24 for a float, 2^53 for a
	 * double, 2^8 for bfloat16) every integer is its own value and its
	 * plain digits are the shortest: one call, for the most common values
	 * in teaching traces (arange). Larger integers may need fewer digits
	 * (123456792f is "123456790") and take the search. */
	if (value == floor(value) &&
	    fabs(value) < (dtype == TPS_DTYPE_COUNT
				   ? 9007199254740992.0
				   : 1.0 / tps_dtype_unit_roundoff(
						   (enum tps_dtype)dtype))) {
		return (size_t)snprintf(buf, TPS_NUMFMT_MAX, "%.0f", value);
	}
	/* If p digits read back, so do p + 1 (conversions round correctly):
	 * binary search for the smallest p. */
	{
		int lo = 1, hi = max_digits;
		if (dtype == TPS_DTYPE_COUNT && !search_only &&
		    fabs(value) >= DBL_MIN) {
			int p15 = double_digits_up_to_15(value);
			lo = p15 ? p15 : 16;
			hi = p15 ? p15 : hi;
		}
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			snprintf(sci, sizeof sci, "%.*e", mid - 1, value);
			fix_decimal_point(sci);
			if (reads_back(sci, value, dtype)) {
				hi = mid;
			} else {
				lo = mid + 1;
			}
		}
		p = lo;
	}
	snprintf(sci, sizeof sci, "%.*e", p - 1, value);
	fix_decimal_point(sci);
	e = strchr(sci, 'e');
	exponent = strtol(e + 1, NULL, 10);
	return exponent >= -5 && exponent < max_plain
		       ? write_plain(sci, e, exponent, buf)
		       : write_exponent(sci, e, exponent, buf);
}

/* format_shortest_c in the C locale, whatever the process's (numfmt.h). */
static size_t format_shortest(double value, int max_digits, int max_plain,
			      int dtype, bool search_only, char *buf)
{
	struct tps_c_locale l;
	size_t n;
	tps_c_locale_enter(&l);
	n = format_shortest_c(value, max_digits, max_plain, dtype,
			      search_only, buf);
	tps_c_locale_leave(&l);
	return n;
}

size_t tps_format_float_exact(float value, char *buf)
{
	return format_shortest((double)value, 9, 9, TPS_DTYPE_F32, true, buf);
}

size_t tps_format_dtype(float value, enum tps_dtype d, char *buf)
{
	if (d == TPS_DTYPE_F32) {
		return tps_format_float(value, buf);
	}
	return format_shortest((double)value, 9, 9, (int)d, true, buf);
}

size_t tps_format_double(double value, char *buf)
{
	return format_shortest(value, 17, 17, TPS_DTYPE_COUNT, false, buf);
}

size_t tps_format_double_exact(double value, char *buf)
{
	return format_shortest(value, 17, 17, TPS_DTYPE_COUNT, true, buf);
}
