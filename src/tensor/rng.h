/*
 * Seeded, explicit pseudo-random numbers: no global state, no rand().
 *
 * The generator is xoshiro256** seeded through splitmix64, so a given seed
 * gives the same stream on every platform and build. Streams for different
 * purposes (each parameter, the input, the target) are derived from a base
 * seed and a name with tps_rng_seed_named, so adding a module to a model does
 * not change the values of the others.
 */
#ifndef TPSIM_RNG_H
#define TPSIM_RNG_H

#include <stddef.h>
#include <stdint.h>

struct tps_rng {
	uint64_t s[4];
};

void tps_rng_seed(struct tps_rng *rng, uint64_t seed);
/* Seeds from seed and the FNV-1a 64 hash of name. */
void tps_rng_seed_named(struct tps_rng *rng, uint64_t seed, const char *name);
uint64_t tps_rng_next(struct tps_rng *rng);
/* Uniform in [0, 1) with 24 random bits (every value exact in float32). */
float tps_rng_unit(struct tps_rng *rng);
/* U(-a, a): (2u - 1) a, computed in double and rounded once. */
float tps_rng_uniform(struct tps_rng *rng, float a);
/* out[0..n) = n calls of tps_rng_uniform in order, the same values; one
 * call, so the generator inlines (a parameter's 16 million draws). */
void tps_rng_uniform_fill(struct tps_rng *rng, float a, float *out, int64_t n);
/* N(0, sigma^2) by Box-Muller (one value per call, in double). */
float tps_rng_normal(struct tps_rng *rng, float sigma);

/*
 * A counter-based generator (Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", the idea behind Philox, which PyTorch's CUDA dropout
 * uses): the number for a counter (a, b, c) under a seed is XXH3-64 of
 * the counter's 24 bytes (each little-endian) with that seed, a pure
 * function of its arguments: no state, so any rank can draw the number
 * of any element in any order and get the same bits. Dropout draws its
 * masks from it (nn_dropout.c, docs/transformer.md).
 */
uint64_t tps_rng_counter(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);
/* tps_rng_counter's top 24 bits as a uniform in [0, 1): k / 2^24, exact
 * in float32 (as tps_rng_unit). */
float tps_rng_counter_unit(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);

/* FNV-1a 64 over bytes; also used for the trace's value hashes. */
uint64_t tps_fnv1a64(const void *data, size_t len, uint64_t hash);
#define TPS_FNV1A64_INIT 0xcbf29ce484222325ULL

#endif
