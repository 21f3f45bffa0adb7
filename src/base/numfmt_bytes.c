/*
 * Sizes for people (numfmt.h): "768 bytes", "1.5 KiB", "81.6 GiB". In
 * integers (u128 holds bytes * 10^14), so no locale and no
 * rounding of doubles can change a digit.
 */
#include "numfmt.h"

#include <stdio.h>

__extension__ typedef unsigned __int128 u128;

size_t tps_format_bytes_digits(int64_t bytes, int digits, char *buf)
{
	static const char *const units[] = {"KiB", "MiB", "GiB",
					    "TiB", "PiB", "EiB"};
	const int n_units = (int)(sizeof units / sizeof units[0]);
	u128 b = (u128)bytes;
	int u = 0;

	digits = digits < 1 ? 1 : digits > 15 ? 15 : digits;
	if (bytes < 1024) {
		return (size_t)snprintf(buf, TPS_NUMFMT_MAX, "%lld byte%s",
					(long long)bytes,
					bytes == 1 ? "" : "s");
	}
	for (;;) {
		u128 unit = (u128)1 << (10 * (u + 1));
		u128 whole = b / unit, scaled, pow10 = 1;
		int int_digits = whole < 10 ? 1 : whole < 100 ? 2 : whole < 1000 ? 3 : 4;
		int decimals = digits > int_digits ? digits - int_digits : 0;
		unsigned long long ip, frac;
		if (whole >= 1024 && u + 1 < n_units) {
			u++;
			continue;
		}
		for (int i = 0; i < decimals; i++) {
			pow10 *= 10;
		}
		/* `digits` significant digits (at least the whole part),
		 * rounded half up. */
		scaled = (b * pow10 + unit / 2) / unit;
		if (scaled / pow10 >= 1024 && u + 1 < n_units) {
			u++; /* 1023.6 KiB is "1 MiB", not "1024 KiB" */
			continue;
		}
		ip = (unsigned long long)(scaled / pow10);
		frac = (unsigned long long)(scaled % pow10);
		/* Trailing zeros dropped: 1.50 -> 1.5, 2.00 -> 2. */
		while (decimals > 0 && frac % 10 == 0) {
			frac /= 10;
			decimals--;
		}
		return (size_t)(decimals > 0
				       ? snprintf(buf, TPS_NUMFMT_MAX,
						  "%llu.%0*llu %s", ip,
						  decimals, frac, units[u])
				       : snprintf(buf, TPS_NUMFMT_MAX, "%llu %s",
						  ip, units[u]));
	}
}

size_t tps_format_bytes(int64_t bytes, char *buf)
{
	return tps_format_bytes_digits(bytes, 3, buf);
}

size_t tps_format_bytes_exact(int64_t bytes, char *buf)
{
	char human[TPS_NUMFMT_MAX];
	tps_format_bytes(bytes, human);
	if (bytes < 1024) {
		return (size_t)snprintf(buf, TPS_NUMFMT_BYTES_MAX, "%s", human);
	}
	return (size_t)snprintf(buf, TPS_NUMFMT_BYTES_MAX, "%s (%lld bytes)",
				human, (long long)bytes);
}
