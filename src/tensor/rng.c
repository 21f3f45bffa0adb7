#include "rng.h"

#include <math.h>
#include <string.h>
#include <xxhash.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

void tps_rng_seed(struct tps_rng *rng, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		rng->s[i] = splitmix64(&seed);
	}
}

uint64_t tps_fnv1a64(const void *data, size_t len, uint64_t hash)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		hash ^= p[i];
		hash *= 0x100000001b3ULL;
	}
	return hash;
}

void tps_rng_seed_named(struct tps_rng *rng, uint64_t seed, const char *name)
{
	tps_rng_seed(rng,
		     seed ^ tps_fnv1a64(name, strlen(name), TPS_FNV1A64_INIT));
}

uint64_t tps_rng_counter(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
	const uint64_t words[3] = {a, b, c};
	unsigned char bytes[24];
	for (int w = 0; w < 3; w++) {
		for (int i = 0; i < 8; i++) {
			bytes[8 * w + i] = (unsigned char)(words[w] >> (8 * i));
		}
	}
	return XXH3_64bits_withSeed(bytes, sizeof bytes, seed);
}

float tps_rng_counter_unit(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
	return (float)(tps_rng_counter(seed, a, b, c) >> 40) *
	       (1.0f / 16777216.0f);
}

uint64_t tps_rng_next(struct tps_rng *rng)
{
	uint64_t *s = rng->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

float tps_rng_unit(struct tps_rng *rng)
{
	return (float)(tps_rng_next(rng) >> 40) * (1.0f / 16777216.0f);
}

float tps_rng_uniform(struct tps_rng *rng, float a)
{
	double u = tps_rng_unit(rng);
	return (float)((2.0 * u - 1.0) * (double)a);
}

void tps_rng_uniform_fill(struct tps_rng *rng, float a, float *out, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		out[i] = tps_rng_uniform(rng, a);
	}
}

float tps_rng_normal(struct tps_rng *rng, float sigma)
{
	/* 1 - u is in (0, 1], so the log is finite. */
	double u1 = 1.0 - (double)tps_rng_unit(rng);
	double u2 = tps_rng_unit(rng);
	double r = sqrt(-2.0 * log(u1));
	return (float)(r * cos(6.283185307179586 * u2) * (double)sigma);
}
