/*
 * libnoise.h - section 1 anchor: libnoise's Perlin module, behind a C
 * interface so noise_bench.c times it in its own process, interleaved with
 * ours and the other anchors. Built only when the Makefile finds libnoise
 * (libnoise-dev) and $(CXX): then noise_bench.c gets -DHAVE_LIBNOISE.
 */
#ifndef LIBNOISE_ANCHOR_H
#define LIBNOISE_ANCHOR_H

#ifdef __cplusplus
extern "C" {
#endif

struct libnoise;

/*
 * noise::module::Perlin with 6 octaves, frequency 1/wavelength per metre,
 * persistence 0.5, lacunarity 2, seed seed; best = 0 its default quality
 * (cubic s-curve), 1 QUALITY_BEST (quintic, like improved Perlin). NULL when
 * out of memory.
 */
struct libnoise *libnoise_create(int best, double wavelength, int seed);
void libnoise_destroy(struct libnoise *l);

/* One row of side samples, 1 m apart, from world (x0, 0, z) into out:
 * libnoise evaluates 3D noise in double, point by point. */
void libnoise_row(const struct libnoise *l, double *out, double x0, double z, int side);

#ifdef __cplusplus
}
#endif

#endif
