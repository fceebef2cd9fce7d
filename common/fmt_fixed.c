/*
 * fmt_fixed.c: plain numbers without printf (fmt_u64, fmt_fixed; see fmt.h),
 * for headers, logs and small JSON fields.
 */
#include "fmt.h"

#include <stdio.h>
#include <string.h>

size_t fmt_u64(char *out, unsigned long long v)
{
	char digits[FMT_U64_MAX];
	size_t n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	for (size_t i = 0; i < n; i++)
		out[i] = digits[n - 1 - i];
	return n;
}

/* "%.*f" through the C library: the rare cases fmt_fixed leaves to it. */
static size_t fixed_slow(char *out, double x, int decimals)
{
	char tmp[FMT_FIXED_MAX + 1];
	int n = snprintf(tmp, sizeof tmp, "%.*f", decimals, x);

	if (n < 0)
		return 0;
	if ((size_t)n > FMT_FIXED_MAX)
		n = FMT_FIXED_MAX;
	memcpy(out, tmp, (size_t)n);
	return (size_t)n;
}

/*
 * m = |x| 10^d is rounded once when multiplied, by at most half an ulp, and
 * ulp(m) <= m 2^-52; so when m's fraction is further than m 2^-52 from 1/2,
 * the exact |x| 10^d rounds to the same integer as m does. Otherwise (a tie
 * or too close to tell) snprintf decides.
 */
size_t fmt_fixed(char *out, double x, int decimals)
{
	static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9 };
	static const unsigned long long scale[] = { 1, 10, 100, 1000, 10000, 100000, 1000000,
						    10000000, 100000000, 1000000000 };
	double ax = x < 0 ? -x : x, m, f;
	unsigned long long n, whole, frac;
	size_t len = 0;

	if (decimals < 0 || decimals > 9 || !(ax < 0x1p52))
		return fixed_slow(out, x, decimals);
	m = ax * pow10[decimals];
	if (!(m < 0x1p52))
		return fixed_slow(out, x, decimals);
	n = (unsigned long long)m; /* floor: m >= 0 */
	f = m - (double)n;         /* exact */
	if (f - 0.5 <= m * 0x1p-52 && 0.5 - f <= m * 0x1p-52)
		return fixed_slow(out, x, decimals);
	n += f > 0.5;
	whole = n / scale[decimals];
	frac = n % scale[decimals];
	if (x < 0 || (x == 0 && 1 / x < 0))
		out[len++] = '-';
	len += fmt_u64(out + len, whole);
	if (decimals > 0) {
		out[len++] = '.';
		for (int i = decimals - 1; i >= 0; i--) {
			out[len + (size_t)i] = (char)('0' + frac % 10);
			frac /= 10;
		}
		len += (size_t)decimals;
	}
	return len;
}
