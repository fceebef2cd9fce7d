/*
 * half.c: float16 rounding and distance (see half.h).
 */
#include "half.h"

#include <math.h>
#include <string.h>

uint16_t half_from_float(float x)
{
	uint32_t bits, sign, absx, biased, mant, half, rem, halfway, shift;

	memcpy(&bits, &x, sizeof(bits));
	sign = (bits >> 16) & 0x8000u;
	absx = bits & 0x7fffffffu;
	if (absx > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u);
	if (absx >= 0x477ff000u)
		return (uint16_t)(sign | 0x7c00u);
	biased = absx >> 23;
	if (biased >= 127 - 14) {
		/* normal: keep 10 of the 23 mantissa bits, round on the 13 dropped */
		half = ((biased - 127 + 15) << 10) | ((absx >> 13) & 0x3ffu);
		rem = absx & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
			half++; /* a carry into the exponent is the right answer */
		return (uint16_t)(sign | half);
	}
	/*
	 * subnormal result, in units of 2^-24: x = mant * 2^(biased - 150), so
	 * x / 2^-24 = mant >> (126 - biased); below 2^-25 everything rounds to 0.
	 */
	if (biased == 0)
		return (uint16_t)sign;
	shift = 126 - biased;
	if (shift > 24)
		return (uint16_t)sign;
	mant = (absx & 0x7fffffu) | 0x800000u;
	half = mant >> shift;
	rem = mant & ((1u << shift) - 1);
	halfway = 1u << (shift - 1);
	if (rem > halfway || (rem == halfway && (half & 1u)))
		half++;
	return (uint16_t)(sign | half);
}

float half_to_float(uint16_t h)
{
	uint32_t exponent = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;
	float mag;

	if (exponent == 0)
		mag = ldexpf((float)mant, -24);
	else if (exponent == 31)
		mag = mant ? NAN : INFINITY;
	else
		mag = ldexpf((float)(mant | 0x400u), (int)exponent - 25);
	return (h & 0x8000u) ? -mag : mag;
}

long half_ulps(uint16_t a, uint16_t b)
{
	long oa = (a & 0x8000u) ? -(long)(a & 0x7fffu) : (long)a;
	long ob = (b & 0x8000u) ? -(long)(b & 0x7fffu) : (long)b;

	return oa > ob ? oa - ob : ob - oa;
}
