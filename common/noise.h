/*
 * noise.h - 2D lattice noise: improved Perlin, Simplex, value, cellular.
 *
 * Every function is a pure function of (seed, position). Positions arrive
 * on the noise lattice as an integer cell plus a 32-bit fraction, computed
 * by the caller in integer arithmetic (fbm.h does it), so a sample two
 * billion chunks from the origin is as exact as one beside it: there are no
 * Far Lands. Corner values come from an integer hash of (cell x, cell z,
 * seed) that uses all 64 bits of the cell, never a permutation table, so the
 * noise does not repeat.
 *
 * Arithmetic is float32 in a fixed order with no libm calls; built with
 * -ffp-contract=off it gives the same bits on every IEEE machine, scalar or
 * vectorised. The row functions exist so loops vectorise; they give exactly
 * the values of the point functions.
 */
#ifndef NOISE_H
#define NOISE_H

#include <stddef.h>
#include <stdint.h>

/*
 * A row of n lattice positions relative to base cells, so a row is mostly
 * 32-bit work: sample i lies in cell (bx + kx[i], bz + kz[i]) at fraction
 * (fx[i], fz[i]) / 2^32 within it. xlo..xhi must bound every kx[i] and
 * zlo..zhi every kz[i] (they pick the 32-bit fast path). x_up: 1 when the
 * caller knows kx never decreases along the row (an unwarped row), 0 when
 * it does not know.
 */
struct lat_row {
	int64_t bx, bz;
	const int32_t *kx, *kz;
	const uint32_t *fx, *fz;
	int32_t xlo, xhi, zlo, zhi;
	size_t n;
	int x_up;
};

/*
 * The x axis of unwarped Perlin rows, prepared once by noise_perlin_axis()
 * and shared by every row at the same x positions (all rows of a tile):
 * the runs of samples within one cell, each sample's fraction and fade,
 * and the run's two lattice columns. A row then hashes each column with
 * its two cell rows in one vector loop and interpolates along the runs.
 * Its arrays live in one caller-owned block of PERLIN_AXIS_WORDS(cap)
 * 32-bit words, laid out by noise_perlin_axis_bind().
 */
#define PERLIN_AXIS_LANES 16
#define PERLIN_AXIS_WORDS(cap) (15 * (size_t)(cap) + 1 + 8 * PERLIN_AXIS_LANES)

struct perlin_axis {
	uint32_t xb;          /* folded base column */
	size_t n, nrun, cap;  /* samples; runs (sample run[k] .. run[k + 1] - 1) */
	uint32_t *run;
	int32_t *cell;        /* cell offset of run k from the row's base */
	float *x, *x1, *u;    /* fraction in the cell, fraction - 1, fade */
	uint32_t *col;        /* folded columns of run k: col[2k], col[2k + 1] */
	float *g;             /* workspace: the columns' gradients of one row */
};

/* Lay a's arrays out in block (PERLIN_AXIS_WORDS(cap) words, aligned for
 * floats), for rows of up to cap samples. */
void noise_perlin_axis_bind(struct perlin_axis *a, uint32_t *block, size_t cap);

/*
 * Fill a (bound for at least r->n samples) from the x half of r (bx, kx,
 * fx, xlo, xhi, n), whose cells must never decrease (r->x_up). Returns 1,
 * or 0 when the row crosses a 2^32 block of cells (then use noise_row()).
 */
int noise_perlin_axis(struct perlin_axis *a, const struct lat_row *r);

/*
 * noise_row(NOISE_PERLIN, seed, r, out) for the row whose x half a holds and
 * whose every sample lies in cell row bz at fraction fz: the same bits.
 * out needs PERLIN_AXIS_LANES floats of slack past a->n (their values are
 * not kept). Returns 1, or 0 (out untouched) when the cell row crosses a
 * 2^32 block. Uses a's workspace, so one row at a time per axis.
 */
int noise_perlin_row_axis(uint64_t seed, struct perlin_axis *a, int64_t bz, uint32_t fz,
			  float *out);

/*
 * The same row added into acc: acc[i] = acc[i] + amp * value(i), for i <
 * a->n, the two operations in that order (an fBm octave). acc needs the
 * same slack as out above; its slack is left as it was.
 */
int noise_perlin_add_axis(uint64_t seed, struct perlin_axis *a, int64_t bz, uint32_t fz,
			  float amp, float *acc);

enum noise_kind {
	NOISE_PERLIN,         /* improved Perlin gradient noise */
	NOISE_SIMPLEX,        /* 2D Simplex */
	NOISE_VALUE,          /* value noise, smoothstep 3t^2 - 2t^3 */
	NOISE_VALUE_QUINTIC,  /* value noise, quintic 6t^5 - 15t^4 + 10t^3 */
	NOISE_WORLEY_F1,      /* cellular: distance to the nearest point */
	NOISE_WORLEY_F2F1,    /* cellular: second minus first distance */
	NOISE_KIND_COUNT
};

/* "perlin", "simplex", "value", "value_quintic", "worley_f1",
 * "worley_f2f1"; NULL for an unknown kind. */
const char *noise_kind_name(enum noise_kind k);

/* The kind named s, or -1. */
int noise_kind_parse(const char *s);

/*
 * Improved Perlin noise: 8 gradients (+-1, +-1/2), (+-1/2, +-1) picked by
 * hash, quintic fade. Range [-1, 1] (scaled by sqrt 2 / |g|, the bound for
 * gradients of length |g|); exactly 0 at every lattice point; mean 0.
 */
float noise_perlin(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf);

/*
 * noise_perlin() with its analytic partial derivatives along x and z, in
 * units of the noise per lattice cell, written to *ddx and *ddz. The value
 * is bit-identical to noise_perlin()'s.
 */
float noise_perlin_d(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
		     float *ddx, float *ddz);

/* noise_perlin_d() over a row: values to out, derivatives to ddx, ddz. */
void noise_perlin_row_d(uint64_t seed, const struct lat_row *r, float *out, float *ddx,
			float *ddz);

/*
 * 2D Simplex noise on the skewed triangle lattice: three corners, radial
 * falloff (0.5 - d^2)^4. The skew is computed in 128-bit fixed point, so it
 * stays exact far away. Range [-1, 1]; 0 at lattice points; mean 0.
 */
float noise_simplex(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf);

/*
 * Value noise: a hashed value in [-1, 1) per lattice point, blended with
 * smoothstep (quintic = 0) or the quintic fade (quintic = 1). Range [-1, 1].
 */
float noise_value(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
		  int quintic);

/*
 * Cellular (Worley) noise: one jittered feature point per cell, searched
 * over the 3x3 neighbouring cells. Writes the nearest distance F1 (in
 * [0, sqrt 2]) and the second F2 (F2 >= F1) in lattice units.
 */
void noise_worley(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
		  float *f1, float *f2);

/*
 * Evaluate noise kind k at every position of r into out[0..r->n), scaled to
 * [-1, 1]: Perlin, Simplex and value as above; Worley F1 as
 * F1 * sqrt 2 - 1; Worley F2-F1 as 2 * min(F2 - F1, 1) - 1.
 */
void noise_row(enum noise_kind k, uint64_t seed, const struct lat_row *r, float *out);

#endif
