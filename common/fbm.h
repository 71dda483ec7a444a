/*
 * fbm.h - fractal sums of noise octaves, a row of samples at a time.
 *
 * fbm_init() derives, for one world seed, each octave's fixed-point
 * frequency, lattice phase offset and noise seed; fbm_row() evaluates the
 * sum along a row of world positions x = x0 + i * step at one z, optionally
 * displaced by a domain warp. World positions are integers (metres), the
 * lattice position is computed exactly in 128-bit fixed point, and the
 * result is normalised by the theoretical amplitude sum, so a sample does
 * not depend on which tile asked for it.
 */
#ifndef FBM_H
#define FBM_H

#include <stddef.h>
#include <stdint.h>

#include "noise.h"

#define FBM_MAX_OCTAVES 16

enum fbm_mode {
	FBM_PLAIN,   /* sum of amp * n */
	FBM_RIDGED,  /* Musgrave ridged multifractal: (1 - |n|)^2 with feedback */
	FBM_BILLOW,  /* sum of amp * (2|n| - 1) */
	FBM_MODE_COUNT
};

/* Parameters as a preset states them. Typical: perlin, plain, 6 octaves,
 * wavelength 1024 m, gain 0.5, lacunarity 2.0 (1.9..2.1 keeps octave
 * lattices from lining up), sharpness 2.0 (ridged only). */
struct fbm_params {
	enum noise_kind noise;
	enum fbm_mode mode;
	int octaves;        /* 1..16 */
	double wavelength;  /* metres per cycle of the first octave */
	double gain;        /* amplitude ratio between octaves (persistence) */
	double lacunarity;  /* frequency ratio between octaves */
	double sharpness;   /* ridged: weight of an octave's ridge on the next */
};

/* One fBm bound to a world seed. Plain data; fbm_init() fills it. */
struct fbm {
	enum noise_kind noise;
	enum fbm_mode mode;
	int octaves;
	float sharpness;
	float norm;                        /* 1 / sum of amplitudes */
	float amp[FBM_MAX_OCTAVES];
	uint64_t freq[FBM_MAX_OCTAVES];    /* lattice cells per metre, Q32 */
	double freqd[FBM_MAX_OCTAVES];     /* the same as a double, for warps */
	int64_t offx[FBM_MAX_OCTAVES];     /* phase offsets, Q32 lattice units */
	int64_t offz[FBM_MAX_OCTAVES];
	uint64_t seed[FBM_MAX_OCTAVES];
};

/* Scratch space for fbm_row() over up to n samples; the caller owns it. */
struct fbm_scratch {
	int32_t *kx, *kz;
	uint32_t *fx, *fz;
	float *noise, *acc, *weight; /* noise and acc: PERLIN_AXIS_LANES of slack */
	float *dnx, *dnz;       /* derivative scratch (fbm_row_d) */
	struct fbm_axes *axes;  /* unwarped Perlin x axes, kept between rows
				   (allocated on first use) */
	size_t cap;
};

/* Allocate scratch for rows of up to n samples. Returns 0 or ERR_NOMEM. */
int fbm_scratch_init(struct fbm_scratch *s, size_t n);
void fbm_scratch_release(struct fbm_scratch *s);

/*
 * Check p: ranges as in docs/presets.md. Returns 0 or ERR_RANGE and a
 * static message naming the field in *why.
 */
int fbm_params_check(const struct fbm_params *p, const char **why);

/* Bind p to a world: octave o gets seed and phase from (seed, salt, o). */
void fbm_init(struct fbm *f, const struct fbm_params *p, uint64_t seed, uint32_t salt);

/*
 * Evaluate f at n samples: world x = x0 + i * step metres, z metres, each
 * displaced by (dx[i], dz[i]) metres when dx, dz are not NULL (|d| < 1e5).
 * Writes values in [-1, 1] to out. n <= s->cap.
 */
void fbm_row(const struct fbm *f, int64_t x0, int64_t step, int64_t z,
	     const float *dx, const float *dz, size_t n, float *out,
	     struct fbm_scratch *s);

/*
 * fbm_row() for a plain-mode Perlin fBm, with the gradient of the result
 * along world x and z (value units per metre) in gx, gz. Under a warp the
 * gradient is taken at the displaced position (the warp's own stretching
 * is not included). out is bit-identical to fbm_row()'s.
 */
void fbm_row_d(const struct fbm *f, int64_t x0, int64_t step, int64_t z,
	       const float *dx, const float *dz, size_t n, float *out,
	       float *gx, float *gz, struct fbm_scratch *s);

/* A 64-bit mixer (splitmix64's finaliser); exposed for deriving seeds. */
uint64_t fbm_mix64(uint64_t x);

#endif
