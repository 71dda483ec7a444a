/*
 * fastnoise2.h - section 1 anchor: FastNoise2's FractalFBm over Perlin,
 * behind a C interface so noise_bench.c times it in its own process,
 * interleaved with ours. FastNoise2 is not vendored: the Makefile builds it
 * from FASTNOISE2 (see there) and compiles fastnoise2.cpp only then, with
 * -DHAVE_FASTNOISE2.
 */
#ifndef FASTNOISE2_H
#define FASTNOISE2_H

#ifdef __cplusplus
extern "C" {
#endif

struct fn2;

/*
 * A 6-octave FractalFBm of Perlin (gain 0.5, lacunarity 2, feature scale
 * wavelength metres). capped = 0: at the best SIMD level this CPU runs, as
 * FastSIMD detects it (DetectCpuMaxFeatureSet(): cpuid and the OS's saved
 * registers); capped = 1: at AVX2, for a second row beside the best one.
 * FastSIMD runs a level it is given by name without asking the CPU, so
 * no level above the detected one is ever asked for. NULL on failure, and
 * for capped = 1 when the CPU's best level is AVX2 or below (nothing to
 * compare).
 */
struct fn2 *fn2_create(int capped, float wavelength);
void fn2_destroy(struct fn2 *f);

/* The SIMD level FastNoise2 runs at, e.g. "AVX512" or "AVX2". */
const char *fn2_level(const struct fn2 *f);

/* side x side samples, 1 m apart, from world (x0, z0) into out. */
void fn2_tile(const struct fn2 *f, float *out, float x0, float z0, int side, int seed);

#ifdef __cplusplus
}
#endif

#endif
