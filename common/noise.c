/*
 * noise.c - 2D lattice noise (see noise.h for ranges and guarantees).
 *
 * Hashing: a cell coordinate (int64) folds to 32 bits with both halves
 * (no wrap at 2^32 cells), then corner hash = mix(fold(x) ^ mix(fold(z) + s))
 * with s the folded seed. mix() is a 32-bit avalanche (xor-shift-multiply),
 * cheap and vectorisable. Fractions are turned into floats from their top 24
 * bits, which is exact: fx = (xf >> 8) * 2^-24 lies in [0, 1).
 */
#include "noise.h"

#include <math.h>
#include <string.h>

#include "simd.h"

__extension__ typedef __int128 i128;

static inline uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static inline uint32_t fold(uint64_t v)
{
	return (uint32_t)v + (uint32_t)(v >> 32) * 0x9e3779b9U;
}

static inline uint32_t fold_seed(uint64_t seed)
{
	return mix((uint32_t)seed ^ mix((uint32_t)(seed >> 32) + 0x632be5abU));
}

static inline float frac24(uint32_t f)
{
	return (float)(f >> 8) * 0x1p-24f;
}

/* Quintic fade 6t^5 - 15t^4 + 10t^3. */
static inline float fade5(float t)
{
	return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f);
}

/* Smoothstep 3t^2 - 2t^3. */
static inline float fade3(float t)
{
	return t * t * (3.0f - 2.0f * t);
}

static inline float lerp(float a, float b, float t)
{
	return a + t * (b - a);
}

/*
 * Gradient dot product for the 8 gradients (+-1, +-1/2) and (+-1/2, +-1),
 * picked by the hash's top three bits: selects and sign flips only, so the
 * loops that call it vectorise. All eight have length sqrt(5)/2.
 */
static inline float grad(uint32_t h, float x, float z)
{
	float u = (h & 0x80000000U) ? x : z;
	float v = (h & 0x80000000U) ? z : x;

	u = (h & 0x40000000U) ? -u : u;
	v = (h & 0x20000000U) ? -v : v;
	return u + 0.5f * v;
}

static inline uint32_t row_hash(uint32_t s, int64_t z)
{
	return mix(fold((uint64_t)z) + s);
}

static inline uint32_t corner(uint32_t ax, uint32_t hz)
{
	return mix(ax ^ hz);
}

/* sqrt 2 (the 2D bound for unit gradients) / |g| = 2 sqrt(2/5). */
#define PERLIN_SCALE 1.26491106f

static inline float perlin(uint32_t s, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf)
{
	float fx = frac24(xf), fz = frac24(zf);
	uint32_t ax0 = fold((uint64_t)xi), ax1 = fold((uint64_t)xi + 1);
	uint32_t hz0 = row_hash(s, zi), hz1 = mix(fold((uint64_t)zi + 1) + s);
	float n00 = grad(corner(ax0, hz0), fx, fz);
	float n10 = grad(corner(ax1, hz0), fx - 1.0f, fz);
	float n01 = grad(corner(ax0, hz1), fx, fz - 1.0f);
	float n11 = grad(corner(ax1, hz1), fx - 1.0f, fz - 1.0f);
	float u = fade5(fx), v = fade5(fz);

	return lerp(lerp(n00, n10, u), lerp(n01, n11, u), v) * PERLIN_SCALE;
}

float noise_perlin(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf)
{
	return perlin(fold_seed(seed), xi, xf, zi, zf);
}

/* Q32 (sqrt(3) - 1) / 2, the 2D simplex skew factor. */
#define SKEW_Q32 1572067139
#define UNSKEW 0.211324865f /* (3 - sqrt(3)) / 6 */
#define SIMPLEX_SCALE 88.5f  /* measured bound 1/88.9 for |g| = sqrt(5)/2 */

/* Floor division by 2^32; gcc and clang shift signed values arithmetically
 * (C11 6.5.7p5 leaves it to the implementation). */
static inline i128 floor_q32(i128 v)
{
	return v >> 32;
}

static inline float simplex_corner(uint32_t h, float dx, float dz)
{
	float t = 0.5f - dx * dx - dz * dz;

	if (t <= 0.0f)
		return 0.0f;
	t *= t;
	return t * t * grad(h, dx, dz);
}

static inline float simplex(uint32_t s, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf)
{
	const i128 one = (i128)1 << 32;
	i128 x = (i128)xi * one + xf, z = (i128)zi * one + zf;
	i128 k = floor_q32((x + z) * SKEW_Q32);
	i128 xs = x + k, zs = z + k;
	int64_t ci = (int64_t)floor_q32(xs), cj = (int64_t)floor_q32(zs);
	uint32_t fxs = (uint32_t)xs, fzs = (uint32_t)zs;
	float sx = frac24(fxs), sz = frac24(fzs);
	float t = (sx + sz) * UNSKEW;
	float x0 = sx - t, z0 = sz - t;
	int i1 = fxs > fzs;
	float x1 = x0 - (float)i1 + UNSKEW, z1 = z0 - (float)(1 - i1) + UNSKEW;
	float x2 = x0 - 1.0f + 2.0f * UNSKEW, z2 = z0 - 1.0f + 2.0f * UNSKEW;
	uint32_t hz0 = row_hash(s, cj), hz1 = row_hash(s, (int64_t)((uint64_t)cj + 1));
	uint32_t ax0 = fold((uint64_t)ci), ax1 = fold((uint64_t)ci + 1);
	float n = simplex_corner(corner(ax0, hz0), x0, z0);

	n += simplex_corner(corner(i1 ? ax1 : ax0, i1 ? hz0 : hz1), x1, z1);
	n += simplex_corner(corner(ax1, hz1), x2, z2);
	return n * SIMPLEX_SCALE;
}

float noise_simplex(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf)
{
	return simplex(fold_seed(seed), xi, xf, zi, zf);
}

/* A hashed value in [-1, 1): the top 24 bits, exactly. */
static inline float hval(uint32_t h)
{
	return (float)(h >> 8) * 0x1p-23f - 1.0f;
}

static inline float value(uint32_t s, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
			  int quintic)
{
	float fx = frac24(xf), fz = frac24(zf);
	uint32_t ax0 = fold((uint64_t)xi), ax1 = fold((uint64_t)xi + 1);
	uint32_t hz0 = row_hash(s, zi), hz1 = mix(fold((uint64_t)zi + 1) + s);
	float u = quintic ? fade5(fx) : fade3(fx);
	float v = quintic ? fade5(fz) : fade3(fz);
	float a = lerp(hval(corner(ax0, hz0)), hval(corner(ax1, hz0)), u);
	float b = lerp(hval(corner(ax0, hz1)), hval(corner(ax1, hz1)), u);

	return lerp(a, b, v);
}

float noise_value(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
		  int quintic)
{
	return value(fold_seed(seed), xi, xf, zi, zf, quintic);
}

static inline void worley(uint32_t s, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
			  float *f1, float *f2)
{
	float fx = frac24(xf), fz = frac24(zf);
	float d1 = 8.0f, d2 = 8.0f;
	int dx, dz;

	for (dz = -1; dz <= 1; dz++) {
		uint32_t hz = row_hash(s, (int64_t)((uint64_t)zi + (uint64_t)(int64_t)dz));

		for (dx = -1; dx <= 1; dx++) {
			uint32_t h = corner(fold((uint64_t)xi + (uint64_t)(int64_t)dx), hz);
			float px = (float)dx + (float)(h & 0xffff) * 0x1p-16f - fx;
			float pz = (float)dz + (float)(h >> 16) * 0x1p-16f - fz;
			float d = px * px + pz * pz;

			if (d < d1) {
				d2 = d1;
				d1 = d;
			} else if (d < d2) {
				d2 = d;
			}
		}
	}
	*f1 = sqrtf(d1);
	*f2 = sqrtf(d2);
}

void noise_worley(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
		  float *f1, float *f2)
{
	worley(fold_seed(seed), xi, xf, zi, zf, f1, f2);
}

/*
 * Fast rows: when every cell of the row (and its +1 neighbour) has the same
 * upper 32 bits, fold(base + k) = fold(base) + k, and the whole row is
 * 32-bit integer and float work that the compiler vectorises. Values are
 * bit-identical to the point functions.
 */
/* The same for a row at one z cell (no warp): the z hashes are hoisted. */
CLONES
static void perlin_fast_z(uint32_t s, uint32_t xb, uint32_t zb, const struct lat_row *r,
			  float *out)
{
	const int32_t *kx = r->kx;
	const uint32_t *fx = r->fx, *fz = r->fz;
	uint32_t az = zb + (uint32_t)r->zlo;
	uint32_t hz0 = mix(az + s), hz1 = mix(az + 1 + s);
	size_t i, n = r->n;

	for (i = 0; i < n; i++) {
		uint32_t ax0 = xb + (uint32_t)kx[i], ax1 = ax0 + 1;
		float x = frac24(fx[i]), z = frac24(fz[i]);
		float n00 = grad(mix(ax0 ^ hz0), x, z);
		float n10 = grad(mix(ax1 ^ hz0), x - 1.0f, z);
		float n01 = grad(mix(ax0 ^ hz1), x, z - 1.0f);
		float n11 = grad(mix(ax1 ^ hz1), x - 1.0f, z - 1.0f);
		float u = fade5(x), v = fade5(z);

		out[i] = lerp(lerp(n00, n10, u), lerp(n01, n11, u), v) * PERLIN_SCALE;
	}
}

CLONES
static void perlin_fast(uint32_t s, uint32_t xb, uint32_t zb, const struct lat_row *r,
			float *out)
{
	const int32_t *kx = r->kx, *kz = r->kz;
	const uint32_t *fx = r->fx, *fz = r->fz;
	size_t i, n = r->n;

	for (i = 0; i < n; i++) {
		uint32_t ax0 = xb + (uint32_t)kx[i], ax1 = ax0 + 1;
		uint32_t az = zb + (uint32_t)kz[i];
		uint32_t hz0 = mix(az + s), hz1 = mix(az + 1 + s);
		float x = frac24(fx[i]), z = frac24(fz[i]);
		float n00 = grad(mix(ax0 ^ hz0), x, z);
		float n10 = grad(mix(ax1 ^ hz0), x - 1.0f, z);
		float n01 = grad(mix(ax0 ^ hz1), x, z - 1.0f);
		float n11 = grad(mix(ax1 ^ hz1), x - 1.0f, z - 1.0f);
		float u = fade5(x), v = fade5(z);

		out[i] = lerp(lerp(n00, n10, u), lerp(n01, n11, u), v) * PERLIN_SCALE;
	}
}

static inline void value_fast(uint32_t s, uint32_t xb, uint32_t zb,
			      const struct lat_row *r, float *out, const int quintic)
{
	const int32_t *kx = r->kx, *kz = r->kz;
	const uint32_t *fx = r->fx, *fz = r->fz;
	size_t i, n = r->n;

	for (i = 0; i < n; i++) {
		uint32_t ax0 = xb + (uint32_t)kx[i], ax1 = ax0 + 1;
		uint32_t az = zb + (uint32_t)kz[i];
		uint32_t hz0 = mix(az + s), hz1 = mix(az + 1 + s);
		float x = frac24(fx[i]), z = frac24(fz[i]);
		float u = quintic ? fade5(x) : fade3(x);
		float v = quintic ? fade5(z) : fade3(z);
		float a = lerp(hval(mix(ax0 ^ hz0)), hval(mix(ax1 ^ hz0)), u);
		float b = lerp(hval(mix(ax0 ^ hz1)), hval(mix(ax1 ^ hz1)), u);

		out[i] = lerp(a, b, v);
	}
}

/* One clone per fade, so the loops carry no branch. */
CLONES
static void value3_fast(uint32_t s, uint32_t xb, uint32_t zb, const struct lat_row *r,
			float *out)
{
	value_fast(s, xb, zb, r, out, 0);
}

CLONES
static void value5_fast(uint32_t s, uint32_t xb, uint32_t zb, const struct lat_row *r,
			float *out)
{
	value_fast(s, xb, zb, r, out, 1);
}

/* The fold of every cell base + k, k in [lo, hi + 1], when they share their
 * upper 32 bits: the fold of base + 0 with that upper half, else 0 in *ok. */
static uint32_t fold_base(int64_t base, int32_t lo, int32_t hi, int *ok)
{
	uint64_t a = (uint64_t)base + (uint64_t)(int64_t)lo;
	uint64_t b = (uint64_t)base + (uint64_t)(int64_t)hi + 1;

	*ok &= (a >> 32) == (b >> 32);
	return (uint32_t)base + (uint32_t)(a >> 32) * 0x9e3779b9U;
}

static void point_row(enum noise_kind k, uint32_t s, const struct lat_row *r, float *out)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		int64_t x = (int64_t)((uint64_t)r->bx + (uint64_t)(int64_t)r->kx[i]);
		int64_t z = (int64_t)((uint64_t)r->bz + (uint64_t)(int64_t)r->kz[i]);
		float a, b;

		switch (k) {
		case NOISE_PERLIN:
			out[i] = perlin(s, x, r->fx[i], z, r->fz[i]);
			break;
		case NOISE_SIMPLEX:
			out[i] = simplex(s, x, r->fx[i], z, r->fz[i]);
			break;
		case NOISE_VALUE:
		case NOISE_VALUE_QUINTIC:
			out[i] = value(s, x, r->fx[i], z, r->fz[i], k == NOISE_VALUE_QUINTIC);
			break;
		case NOISE_WORLEY_F1:
			worley(s, x, r->fx[i], z, r->fz[i], &a, &b);
			out[i] = a * 1.41421356f - 1.0f;
			break;
		case NOISE_WORLEY_F2F1:
			worley(s, x, r->fx[i], z, r->fz[i], &a, &b);
			out[i] = 2.0f * (b - a < 1.0f ? b - a : 1.0f) - 1.0f;
			break;
		default:
			out[i] = 0.0f;
			break;
		}
	}
}

void noise_row(enum noise_kind k, uint64_t seed, const struct lat_row *r, float *out)
{
	uint32_t s = fold_seed(seed), xb, zb;
	int ok = 1;

	if (k != NOISE_PERLIN && k != NOISE_VALUE && k != NOISE_VALUE_QUINTIC) {
		point_row(k, s, r, out);
		return;
	}
	xb = fold_base(r->bx, r->xlo, r->xhi, &ok);
	zb = fold_base(r->bz, r->zlo, r->zhi, &ok);
	if (!ok)
		point_row(k, s, r, out);
	else if (k == NOISE_PERLIN && r->zlo == r->zhi)
		perlin_fast_z(s, xb, zb, r, out);
	else if (k == NOISE_PERLIN)
		perlin_fast(s, xb, zb, r, out);
	else if (k == NOISE_VALUE_QUINTIC)
		value5_fast(s, xb, zb, r, out);
	else
		value3_fast(s, xb, zb, r, out);
}

static const char *const kind_names[NOISE_KIND_COUNT] = {
	[NOISE_PERLIN] = "perlin",
	[NOISE_SIMPLEX] = "simplex",
	[NOISE_VALUE] = "value",
	[NOISE_VALUE_QUINTIC] = "value_quintic",
	[NOISE_WORLEY_F1] = "worley_f1",
	[NOISE_WORLEY_F2F1] = "worley_f2f1",
};

const char *noise_kind_name(enum noise_kind k)
{
	return (unsigned)k < NOISE_KIND_COUNT ? kind_names[k] : NULL;
}

int noise_kind_parse(const char *s)
{
	int k;

	for (k = 0; k < NOISE_KIND_COUNT; k++)
		if (strcmp(s, kind_names[k]) == 0)
			return k;
	return -1;
}
