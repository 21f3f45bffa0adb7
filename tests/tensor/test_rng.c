/*
 * rng: xoshiro256** seeded by splitmix64, named streams, FNV-1a 64.
 *
 * The golden values come from the published algorithms (Vigna's xoshiro256**
 * and splitmix64, the FNV-1a 64 test vectors), computed apart from tpsim;
 * a platform or build that changed a bit of the stream would change every
 * uniform and normal parameter in every trace.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "testutil.h"
#include "rng.h"

#include <xxhash.h>

START_TEST(seed_zero_gives_the_reference_stream)
{
	/* splitmix64 from 0 fills the state; then xoshiro256**. */
	static const uint64_t want[3] = {0x99ec5f36cb75f2b4ULL,
					 0xbf6e1f784956452aULL,
					 0x1a5f849d4933e6e0ULL};
	struct tps_rng rng;
	tps_rng_seed(&rng, 0);
	for (int i = 0; i < 3; i++) {
		uint64_t got = tps_rng_next(&rng);
		ck_assert_msg(
			got == want[i], "output %d: %016llx, want %016llx", i,
			(unsigned long long)got, (unsigned long long)want[i]);
	}
}
END_TEST

START_TEST(named_stream_is_seed_xor_fnv_of_the_name)
{
	/* seed 7 ^ FNV-1a("input"): the input's stream under seed 7. */
	struct tps_rng a, b;
	tps_rng_seed_named(&a, 7, "input");
	ck_assert(tps_rng_next(&a) == 0x85641cbf94435a14ULL);
	ck_assert(tps_rng_next(&a) == 0xce391abc9afed95dULL);
	/* Another name, another stream; the same name, the same stream. */
	tps_rng_seed_named(&a, 7, "fc1.weight");
	tps_rng_seed_named(&b, 7, "fc1.bias");
	ck_assert(tps_rng_next(&a) != tps_rng_next(&b));
	tps_rng_seed_named(&a, 7, "fc1.weight");
	tps_rng_seed_named(&b, 7, "fc1.weight");
	for (int i = 0; i < 100; i++) {
		ck_assert(tps_rng_next(&a) == tps_rng_next(&b));
	}
}
END_TEST

START_TEST(fnv1a64_matches_the_published_vectors)
{
	ck_assert(tps_fnv1a64("", 0, TPS_FNV1A64_INIT) ==
		  0xcbf29ce484222325ULL);
	ck_assert(tps_fnv1a64("a", 1, TPS_FNV1A64_INIT) ==
		  0xaf63dc4c8601ec8cULL);
	ck_assert(tps_fnv1a64("foobar", 6, TPS_FNV1A64_INIT) ==
		  0x85944171f73967e8ULL);
	/* Hashing in two pieces continues the same hash. */
	ck_assert(tps_fnv1a64("bar", 3,
			      tps_fnv1a64("foo", 3, TPS_FNV1A64_INIT)) ==
		  0x85944171f73967e8ULL);
}
END_TEST

START_TEST(unit_has_24_bits_in_zero_to_one)
{
	struct tps_rng rng;
	tps_rng_seed(&rng, 0);
	/* The first output's top 24 bits: 0x99ec5f / 2^24. */
	ck_assert(tps_rng_unit(&rng) == (float)0x99ec5f / 16777216.0f);
	for (int i = 0; i < 100000; i++) {
		float u = tps_rng_unit(&rng);
		float scaled = u * 16777216.0f;
		ck_assert(u >= 0.0f && u < 1.0f);
		ck_assert(scaled == floorf(scaled));
	}
}
END_TEST

START_TEST(uniform_and_normal_stay_in_their_ranges)
{
	/* U(-a, a) never reaches a; N(0, 1) has mean ~0 and variance ~1. */
	struct tps_rng rng;
	double sum = 0.0, sq = 0.0;
	const int n = 200000;
	tps_rng_seed(&rng, 42);
	for (int i = 0; i < n; i++) {
		float u = tps_rng_uniform(&rng, 0.5f);
		ck_assert(u >= -0.5f && u < 0.5f);
	}
	for (int i = 0; i < n; i++) {
		float v = tps_rng_normal(&rng, 1.0f);
		ck_assert(isfinite(v));
		sum += v;
		sq += (double)v * v;
	}
	printf("normal: mean %g, variance %g over %d draws\n", sum / n,
	       sq / n - (sum / n) * (sum / n), n);
	ck_assert(fabs(sum / n) < 0.01);
	ck_assert(fabs(sq / n - 1.0) < 0.02);
	/* sigma scales the draw: the same stream with sigma 2 doubles it. */
	{
		struct tps_rng a, b;
		tps_rng_seed(&a, 5);
		tps_rng_seed(&b, 5);
		ck_assert(tps_rng_normal(&a, 2.0f) ==
			  2.0f * tps_rng_normal(&b, 1.0f));
	}
}
END_TEST

START_TEST(counter_is_xxh3_of_the_little_endian_counter)
{
	/* (a, b, c) = (1, 2, 0x01020304) as 24 bytes, each word
	 * little-endian, hashed by XXH3-64 with the seed: written out by
	 * hand here, so that the encoding is checked, not re-derived. */
	static const unsigned char bytes[24] = {1, 0, 0, 0, 0, 0, 0, 0,
						2, 0, 0, 0, 0, 0, 0, 0,
						4, 3, 2, 1, 0, 0, 0, 0};
	uint64_t want = XXH3_64bits_withSeed(bytes, sizeof bytes, 7);
	ck_assert(tps_rng_counter(7, 1, 2, 0x01020304) == want);
	ck_assert(tps_rng_counter_unit(7, 1, 2, 0x01020304) ==
		  (float)(want >> 40) / 16777216.0f);
	/* Each argument matters, and the same counter gives the same bits. */
	ck_assert(tps_rng_counter(8, 1, 2, 0x01020304) != want);
	ck_assert(tps_rng_counter(7, 0, 2, 0x01020304) != want);
	ck_assert(tps_rng_counter(7, 1, 3, 0x01020304) != want);
	ck_assert(tps_rng_counter(7, 1, 2, 0x01020305) != want);
	ck_assert(tps_rng_counter(7, 1, 2, 0x01020304) == want);
}
END_TEST

START_TEST(counter_units_are_uniform)
{
	/* 2^17 counters: a quarter below 0.25 within 1% (the binomial's
	 * sd is 0.12%), every value in [0, 1) with 24 bits. */
	int64_t below = 0, n = 1 << 17;
	for (int64_t i = 0; i < n; i++) {
		float u = tps_rng_counter_unit(42, 3, 0, (uint64_t)i);
		ck_assert(u >= 0.0f && u < 1.0f);
		ck_assert(u * 16777216.0f == floorf(u * 16777216.0f));
		below += u < 0.25f;
	}
	printf("counter units: %g below 0.25\n", (double)below / (double)n);
	ck_assert(fabs((double)below / (double)n - 0.25) < 0.01);
}
END_TEST

static Suite *rng_suite(void)
{
	Suite *s = suite_create("rng");
	TCase *stream = tcase_create("stream");
	TCase *dist = tcase_create("distributions");
	tcase_add_test(stream, seed_zero_gives_the_reference_stream);
	tcase_add_test(stream, named_stream_is_seed_xor_fnv_of_the_name);
	tcase_add_test(stream, fnv1a64_matches_the_published_vectors);
	tcase_add_test(dist, unit_has_24_bits_in_zero_to_one);
	tcase_add_test(dist, uniform_and_normal_stay_in_their_ranges);
	tcase_add_test(stream, counter_is_xxh3_of_the_little_endian_counter);
	tcase_add_test(dist, counter_units_are_uniform);
	suite_add_tcase(s, stream);
	suite_add_tcase(s, dist);
	return s;
}

int main(void)
{
	return tu_run_suite(rng_suite());
}
