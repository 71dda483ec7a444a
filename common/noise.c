/*
 * noise.c - 2D lattice noise (see noise.h for ranges and guarantees).
 *
 * Hashing: a cell coordinate (int64) folds to 32 bits with both halves,
 * fold(c) = lo32(c) + hi32(c) * 0x9e3779b9, so the lattice never wraps;
 * then corner hash = mix(fold(x) ^ mix(fold(z) + s)) with s the folded
 * seed. mix() is a 32-bit xor-shift-multiply avalanche, cheap and
 * vectorisable. Fractions become floats from their top 24 bits, which is
 * exact: f = (f32 >> 8) * 2^-24 lies in [0, 1).
 *
 * Each noise is one "cell kernel" fed with folded corner coordinates. The
 * point functions fold 64-bit cells; the row functions notice when a row
 * stays within one 2^32 block of cells, where fold(base + k) is simply
 * fold(base) + k, and run the same kernel over 32-bit lanes. Both paths
 * give the same bits.
 */
#include "noise.h"

#include <math.h>
#include <string.h>

#include "simd.h"

__extension__ typedef __int128 i128;

#define FOLD_K 0x9e3779b9U
#define PERLIN_SCALE 1.26491106f   /* sqrt 2 / |g|, |g| = sqrt(5) / 2 */
#define SKEW_Q32 1572067139        /* (sqrt(3) - 1) / 2 in Q32 */
#define UNSKEW 0.211324865f        /* (3 - sqrt(3)) / 6 */
#define SIMPLEX_SCALE 88.5f        /* measured peak 1 / 88.9 for this |g| */
#define BLOCK 64                   /* samples per skewed block (stack) */

static inline uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static inline uint32_t fold(uint64_t c)
{
	return (uint32_t)c + (uint32_t)(c >> 32) * FOLD_K;
}

static inline uint32_t fold_seed(uint64_t seed)
{
	return mix((uint32_t)seed ^ mix((uint32_t)(seed >> 32) + 0x632be5abU));
}

static inline float frac24(uint32_t f)
{
	return (float)(f >> 8) * 0x1p-24f;
}

static inline float fade5(float t)   /* 6t^5 - 15t^4 + 10t^3 */
{
	return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f);
}

static inline float fade3(float t)   /* 3t^2 - 2t^3 */
{
	return t * t * (3.0f - 2.0f * t);
}

static inline float lerp(float a, float b, float t)
{
	return a + t * (b - a);
}

static inline uint32_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float bitsf(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/*
 * Dot product with one of the 8 gradients (+-1, +-1/2), (+-1/2, +-1),
 * picked by the hash's top three bits. Written as bit operations (select
 * by mask, negate by flipping the sign bit, as IEEE negation does), so
 * every loop that calls it vectorises without branches.
 */
static inline float grad(uint32_t h, float x, float z)
{
	uint32_t m = 0U - (h >> 31);
	uint32_t u = (fbits(x) & m) | (fbits(z) & ~m);
	uint32_t v = (fbits(z) & m) | (fbits(x) & ~m);

	u ^= (h << 1) & 0x80000000U;
	v ^= (h << 2) & 0x80000000U;
	return bitsf(u) + 0.5f * bitsf(v);
}

/* max(t, 0) for a finite t, by clearing negative values' bits. */
static inline float positive(float t)
{
	uint32_t u = fbits(t);

	return bitsf(u & ((u >> 31) - 1U));
}

/* A hashed value in [-1, 1): the top 24 bits, exactly. */
static inline float hval(uint32_t h)
{
	return (float)(h >> 8) * 0x1p-23f - 1.0f;
}

/*
 * Folded corners of a cell: x columns ax0, ax1 and the z rows already
 * hashed with the seed, hz0 = mix(fold(z) + s), hz1 = mix(fold(z + 1) + s).
 */
struct corners {
	uint32_t ax0, ax1, hz0, hz1;
};

static inline struct corners corners_of(uint32_t s, int64_t x, int64_t z)
{
	struct corners c = {
		fold((uint64_t)x), fold((uint64_t)x + 1),
		mix(fold((uint64_t)z) + s), mix(fold((uint64_t)z + 1) + s),
	};
	return c;
}

static inline float perlin_k(struct corners c, uint32_t fx, uint32_t fz)
{
	float x = frac24(fx), z = frac24(fz);
	float n00 = grad(mix(c.ax0 ^ c.hz0), x, z);
	float n10 = grad(mix(c.ax1 ^ c.hz0), x - 1.0f, z);
	float n01 = grad(mix(c.ax0 ^ c.hz1), x, z - 1.0f);
	float n11 = grad(mix(c.ax1 ^ c.hz1), x - 1.0f, z - 1.0f);
	float u = fade5(x), v = fade5(z);

	return lerp(lerp(n00, n10, u), lerp(n01, n11, u), v) * PERLIN_SCALE;
}

/* The gradient vector grad() dots with: (+-1, +-1/2) or (+-1/2, +-1). */
static inline void grad_vec(uint32_t h, float *gx, float *gz)
{
	uint32_t a = fbits(1.0f) | ((h << 1) & 0x80000000U);   /* +-1 */
	uint32_t b = fbits(0.5f) | ((h << 2) & 0x80000000U);   /* +-1/2 */
	uint32_t m = 0U - (h >> 31);

	*gx = bitsf((a & m) | (b & ~m));
	*gz = bitsf((b & m) | (a & ~m));
}

/* Perlin with its analytic derivatives in lattice units; the value is
 * computed exactly as perlin_k() computes it. */
static inline float perlin_dk(struct corners c, uint32_t fx, uint32_t fz,
			      float *ddx, float *ddz)
{
	float x = frac24(fx), z = frac24(fz);
	uint32_t h00 = mix(c.ax0 ^ c.hz0), h10 = mix(c.ax1 ^ c.hz0);
	uint32_t h01 = mix(c.ax0 ^ c.hz1), h11 = mix(c.ax1 ^ c.hz1);
	float n00 = grad(h00, x, z), n10 = grad(h10, x - 1.0f, z);
	float n01 = grad(h01, x, z - 1.0f), n11 = grad(h11, x - 1.0f, z - 1.0f);
	float u = fade5(x), v = fade5(z);
	float du = 30.0f * x * x * (x * (x - 2.0f) + 1.0f);
	float dv = 30.0f * z * z * (z * (z - 2.0f) + 1.0f);
	float g00x, g00z, g10x, g10z, g01x, g01z, g11x, g11z;
	float nx0 = lerp(n00, n10, u), nx1 = lerp(n01, n11, u);
	float ax0, ax1, az0, az1;

	grad_vec(h00, &g00x, &g00z);
	grad_vec(h10, &g10x, &g10z);
	grad_vec(h01, &g01x, &g01z);
	grad_vec(h11, &g11x, &g11z);
	ax0 = lerp(g00x, g10x, u) + du * (n10 - n00);
	ax1 = lerp(g01x, g11x, u) + du * (n11 - n01);
	az0 = lerp(g00z, g10z, u);
	az1 = lerp(g01z, g11z, u);
	*ddx = lerp(ax0, ax1, v) * PERLIN_SCALE;
	*ddz = (lerp(az0, az1, v) + dv * (nx1 - nx0)) * PERLIN_SCALE;
	return lerp(nx0, nx1, v) * PERLIN_SCALE;
}

static inline float value_k(struct corners c, uint32_t fx, uint32_t fz, const int quintic)
{
	float x = frac24(fx), z = frac24(fz);
	float u = quintic ? fade5(x) : fade3(x);
	float v = quintic ? fade5(z) : fade3(z);
	float a = lerp(hval(mix(c.ax0 ^ c.hz0)), hval(mix(c.ax1 ^ c.hz0)), u);
	float b = lerp(hval(mix(c.ax0 ^ c.hz1)), hval(mix(c.ax1 ^ c.hz1)), u);

	return lerp(a, b, v);
}

static inline float simplex_corner(uint32_t h, float dx, float dz)
{
	float t = 0.5f - dx * dx - dz * dz;

	t = positive(t);   /* 0 outside the radius */
	t *= t;
	return t * t * grad(h, dx, dz);
}

/* Simplex over a skewed cell (fractions fx, fz in skewed space). The
 * middle corner is (1, 0) below the diagonal and (0, 1) above it; picked
 * with masks so the loop has no branch. */
static inline float simplex_k(struct corners c, uint32_t fx, uint32_t fz)
{
	float sx = frac24(fx), sz = frac24(fz);
	float t = (sx + sz) * UNSKEW;
	float x0 = sx - t, z0 = sz - t;
	int32_t below = fx > fz;
	uint32_t m = (uint32_t)-below;
	float x1 = x0 - (float)below + UNSKEW;
	float z1 = z0 - (float)(1 - below) + UNSKEW;
	float x2 = x0 - 1.0f + 2.0f * UNSKEW, z2 = z0 - 1.0f + 2.0f * UNSKEW;
	uint32_t ax = (c.ax1 & m) | (c.ax0 & ~m), hz = (c.hz0 & m) | (c.hz1 & ~m);
	float n = simplex_corner(mix(c.ax0 ^ c.hz0), x0, z0);

	n += simplex_corner(mix(ax ^ hz), x1, z1);
	n += simplex_corner(mix(c.ax1 ^ c.hz1), x2, z2);
	return n * SIMPLEX_SCALE;
}

/* Floor division by 2^32; gcc and clang shift signed values arithmetically
 * (C11 6.5.7p5 leaves it to the implementation). */
static inline i128 floor_q32(i128 v)
{
	return v >> 32;
}

/* Skew (x, z) onto the simplex lattice, exactly, in 128-bit fixed point. */
static inline void skew(int64_t *xi, uint32_t *xf, int64_t *zi, uint32_t *zf)
{
	i128 x = (i128)*xi * ((i128)1 << 32) + *xf;
	i128 z = (i128)*zi * ((i128)1 << 32) + *zf;
	i128 k = floor_q32((x + z) * SKEW_Q32);

	x += k;
	z += k;
	*xi = (int64_t)floor_q32(x);
	*zi = (int64_t)floor_q32(z);
	*xf = (uint32_t)x;
	*zf = (uint32_t)z;
}

/*
 * Cellular kernel over the 3x3 cells around the sample: ax[d] and hz[d]
 * are the folded columns and seeded row hashes of cells -1, 0, +1. Each
 * cell's feature point is jittered by 16 + 16 hash bits. Distances are
 * non-negative floats, so they order like their bit patterns and the two
 * smallest are kept with integer min/max, branch-free.
 */
static inline void worley_k(const uint32_t ax[3], const uint32_t hz[3], uint32_t xf,
			    uint32_t zf, float *f1, float *f2)
{
	float fx = frac24(xf), fz = frac24(zf);
	uint32_t d1 = fbits(8.0f), d2 = d1;
	int dx, dz;

	for (dz = 0; dz < 3; dz++) {
		for (dx = 0; dx < 3; dx++) {
			uint32_t h = mix(ax[dx] ^ hz[dz]);
			float px = (float)(dx - 1) + (float)(int32_t)(h & 0xffff) * 0x1p-16f - fx;
			float pz = (float)(dz - 1) + (float)(int32_t)(h >> 16) * 0x1p-16f - fz;
			uint32_t d = fbits(px * px + pz * pz);
			uint32_t hi = d > d1 ? d : d1;

			d2 = hi < d2 ? hi : d2;
			d1 = d < d1 ? d : d1;
		}
	}
	*f1 = sqrtf(bitsf(d1));
	*f2 = sqrtf(bitsf(d2));
}

static inline void worley_point(uint32_t s, int64_t x, uint32_t xf, int64_t z, uint32_t zf,
				float *f1, float *f2)
{
	uint32_t ax[3], hz[3];
	int d;

	for (d = 0; d < 3; d++) {
		ax[d] = fold((uint64_t)x + (uint64_t)(int64_t)(d - 1));
		hz[d] = mix(fold((uint64_t)z + (uint64_t)(int64_t)(d - 1)) + s);
	}
	worley_k(ax, hz, xf, zf, f1, f2);
}

static inline float worley_scale(int f2f1, float a, float b)
{
	return f2f1 ? 2.0f * (b - a < 1.0f ? b - a : 1.0f) - 1.0f : a * 1.41421356f - 1.0f;
}

float noise_perlin(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf)
{
	return perlin_k(corners_of(fold_seed(seed), xi, zi), xf, zf);
}

float noise_perlin_d(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
		     float *ddx, float *ddz)
{
	return perlin_dk(corners_of(fold_seed(seed), xi, zi), xf, zf, ddx, ddz);
}

void noise_perlin_row_d(uint64_t seed, const struct lat_row *r, float *out, float *ddx,
			float *ddz)
{
	uint32_t s = fold_seed(seed);
	size_t i;

	for (i = 0; i < r->n; i++) {
		int64_t x = (int64_t)((uint64_t)r->bx + (uint64_t)(int64_t)r->kx[i]);
		int64_t z = (int64_t)((uint64_t)r->bz + (uint64_t)(int64_t)r->kz[i]);

		out[i] = perlin_dk(corners_of(s, x, z), r->fx[i], r->fz[i], &ddx[i], &ddz[i]);
	}
}

float noise_simplex(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf)
{
	skew(&xi, &xf, &zi, &zf);
	return simplex_k(corners_of(fold_seed(seed), xi, zi), xf, zf);
}

float noise_value(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
		  int quintic)
{
	struct corners c = corners_of(fold_seed(seed), xi, zi);

	return quintic ? value_k(c, xf, zf, 1) : value_k(c, xf, zf, 0);
}

void noise_worley(uint64_t seed, int64_t xi, uint32_t xf, int64_t zi, uint32_t zf,
		  float *f1, float *f2)
{
	worley_point(fold_seed(seed), xi, xf, zi, zf, f1, f2);
}

static float worley_scaled(enum noise_kind k, uint32_t s, int64_t x, uint32_t fx,
			   int64_t z, uint32_t fz)
{
	float a, b;

	worley_point(s, x, fx, z, fz, &a, &b);
	return worley_scale(k == NOISE_WORLEY_F2F1, a, b);
}

/* Any row, any kind, one sample at a time through the 64-bit fold. */
static void point_row(enum noise_kind k, uint32_t s, const struct lat_row *r, float *out)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		int64_t x = (int64_t)((uint64_t)r->bx + (uint64_t)(int64_t)r->kx[i]);
		int64_t z = (int64_t)((uint64_t)r->bz + (uint64_t)(int64_t)r->kz[i]);
		uint32_t fx = r->fx[i], fz = r->fz[i];

		switch (k) {
		case NOISE_PERLIN:
			out[i] = perlin_k(corners_of(s, x, z), fx, fz);
			break;
		case NOISE_SIMPLEX:
			skew(&x, &fx, &z, &fz);
			out[i] = simplex_k(corners_of(s, x, z), fx, fz);
			break;
		case NOISE_VALUE:
			out[i] = value_k(corners_of(s, x, z), fx, fz, 0);
			break;
		case NOISE_VALUE_QUINTIC:
			out[i] = value_k(corners_of(s, x, z), fx, fz, 1);
			break;
		default:
			out[i] = worley_scaled(k, s, x, fx, z, fz);
			break;
		}
	}
}

/*
 * The fold of cell base + 0 when every cell base + k, k in [lo, hi + 1],
 * shares the upper 32 bits of base + lo; clears *ok otherwise.
 */
static uint32_t fold_base(int64_t base, int32_t lo, int32_t hi, int *ok)
{
	uint64_t a = (uint64_t)base + (uint64_t)(int64_t)lo;
	uint64_t b = (uint64_t)base + (uint64_t)(int64_t)hi + 1;

	*ok &= (a >> 32) == (b >> 32);
	return (uint32_t)base + (uint32_t)(a >> 32) * FOLD_K;
}

/* Corners of cell (kx, kz) relative to folded bases xb, zb: 32-bit only. */
static inline struct corners corners_fast(uint32_t s, uint32_t xb, uint32_t zb,
					  int32_t kx, int32_t kz)
{
	uint32_t ax = xb + (uint32_t)kx, az = zb + (uint32_t)kz;
	struct corners c = { ax, ax + 1, mix(az + s), mix(az + 1 + s) };

	return c;
}

/* The vectorised loops: one clone per kernel so no loop carries a branch. */
#define FAST_ROW(name, expr)                                                    \
	CLONES static void name(uint32_t s, uint32_t xb, uint32_t zb,            \
				const int32_t *kx, const int32_t *kz,            \
				const uint32_t *fx, const uint32_t *fz,          \
				size_t n, float *out)                            \
	{                                                                        \
		size_t i;                                                        \
		for (i = 0; i < n; i++) {                                        \
			struct corners c = corners_fast(s, xb, zb, kx[i], kz[i]); \
			out[i] = (expr);                                         \
		}                                                                \
	}

FAST_ROW(value3_fast, value_k(c, fx[i], fz[i], 0))
FAST_ROW(value5_fast, value_k(c, fx[i], fz[i], 1))
FAST_ROW(simplex_fast, simplex_k(c, fx[i], fz[i]))

/* Cellular rows: the 3x3 neighbourhood in 32-bit lanes. */
static inline void worley_fast_k(uint32_t s, uint32_t xb, uint32_t zb, int32_t kx,
				 int32_t kz, uint32_t fx, uint32_t fz, float *f1, float *f2)
{
	uint32_t ax[3], hz[3];
	int d;

	for (d = 0; d < 3; d++) {
		ax[d] = xb + (uint32_t)kx + (uint32_t)(d - 1);
		hz[d] = mix(zb + (uint32_t)kz + (uint32_t)(d - 1) + s);
	}
	worley_k(ax, hz, fx, fz, f1, f2);
}

#define WORLEY_ROW(name, f2f1)                                                  \
	CLONES static void name(uint32_t s, uint32_t xb, uint32_t zb,            \
				const struct lat_row *r, float *out)             \
	{                                                                        \
		size_t i;                                                        \
		for (i = 0; i < r->n; i++) {                                     \
			float a, b;                                              \
			worley_fast_k(s, xb, zb, r->kx[i], r->kz[i], r->fx[i],   \
				      r->fz[i], &a, &b);                         \
			out[i] = worley_scale(f2f1, a, b);                       \
		}                                                                \
	}

WORLEY_ROW(worley1_fast, 0)
WORLEY_ROW(worley21_fast, 1)

/*
 * Perlin over a cell whose four gradients are known: grad(h, x, z) equals
 * gx * x + gz * z exactly (the products are exact, IEEE addition
 * commutes), so this gives perlin_k()'s bits without hashing.
 */
struct cell_grads {
	float x00, z00, x10, z10, x01, z01, x11, z11;
};

static inline struct cell_grads cell_grads(struct corners c)
{
	struct cell_grads g;

	grad_vec(mix(c.ax0 ^ c.hz0), &g.x00, &g.z00);
	grad_vec(mix(c.ax1 ^ c.hz0), &g.x10, &g.z10);
	grad_vec(mix(c.ax0 ^ c.hz1), &g.x01, &g.z01);
	grad_vec(mix(c.ax1 ^ c.hz1), &g.x11, &g.z11);
	return g;
}

static inline float perlin_g(const struct cell_grads *g, uint32_t fx, uint32_t fz)
{
	float x = frac24(fx), z = frac24(fz), x1 = x - 1.0f, z1 = z - 1.0f;
	float n00 = g->x00 * x + g->z00 * z, n10 = g->x10 * x1 + g->z10 * z;
	float n01 = g->x01 * x + g->z01 * z1, n11 = g->x11 * x1 + g->z11 * z1;
	float u = fade5(x), v = fade5(z);

	return lerp(lerp(n00, n10, u), lerp(n01, n11, u), v) * PERLIN_SCALE;
}

/*
 * Perlin along a row, BLK samples at a time. Where a block's samples all
 * lie in one cell (most blocks of the octaves coarser than a few samples)
 * the cell's gradients are hashed once and the block only interpolates;
 * other blocks hash each sample's corners. one_z: every sample is in cell
 * row r->zlo, whose hashes are hoisted.
 */
#define BLK 16

CLONE_INLINE void perlin_blocks(uint32_t s, uint32_t xb, uint32_t zb, const struct lat_row *r,
				float *out, const int one_z)
{
	const int32_t *kx = r->kx, *kz = r->kz;
	const uint32_t *fx = r->fx, *fz = r->fz;
	struct corners cz = corners_fast(s, xb, zb, 0, r->zlo);
	struct cell_grads g = { 0 };
	int32_t gx = 0, gz = 0;
	int have = 0, up = 1;
	size_t i, j;

	/* cells that never decrease along x (an unwarped row, or a warp
	 * gentler than the row's step) make a block one cell wide when its
	 * ends are */
	for (i = 1; one_z && !r->x_up && i < r->n; i++)
		up &= kx[i] >= kx[i - 1];
	for (i = 0; i + BLK <= r->n; i += BLK) {
		uint32_t diff = 0;

		if (up && one_z) {
			diff = (uint32_t)(kx[i + BLK - 1] ^ kx[i]);
		} else {
			for (j = 0; j < BLK; j++)
				diff |= (uint32_t)(kx[i + j] ^ kx[i]) |
					(one_z ? 0 : (uint32_t)(kz[i + j] ^ kz[i]));
		}
		if (!diff) {
			if (!have || kx[i] != gx || (!one_z && kz[i] != gz)) {
				gx = kx[i];
				gz = one_z ? r->zlo : kz[i];
				g = cell_grads(corners_fast(s, xb, zb, gx, gz));
				have = 1;
			}
			for (j = 0; j < BLK; j++)
				out[i + j] = perlin_g(&g, fx[i + j], fz[i + j]);
			continue;
		}
		for (j = 0; j < BLK; j++) {
			struct corners c = cz;

			if (one_z) {
				c.ax0 = xb + (uint32_t)kx[i + j];
				c.ax1 = c.ax0 + 1;
			} else {
				c = corners_fast(s, xb, zb, kx[i + j], kz[i + j]);
			}
			out[i + j] = perlin_k(c, fx[i + j], fz[i + j]);
		}
	}
	for (; i < r->n; i++)
		out[i] = perlin_k(corners_fast(s, xb, zb, kx[i], one_z ? r->zlo : kz[i]),
				  fx[i], fz[i]);
}

CLONES
static void perlin_row(uint32_t s, uint32_t xb, uint32_t zb, const struct lat_row *r,
		       float *out)
{
	perlin_blocks(s, xb, zb, r, out, 0);
}

CLONES
static void perlin_row_z(uint32_t s, uint32_t xb, uint32_t zb, const struct lat_row *r,
			 float *out)
{
	perlin_blocks(s, xb, zb, r, out, 1);
}

void noise_perlin_axis_bind(struct perlin_axis *a, uint32_t *block, size_t cap)
{
	const size_t L = PERLIN_AXIS_LANES;

	a->cap = cap;
	a->n = a->nrun = 0;
	a->run = block;                                         /* cap + 1 */
	a->cell = (int32_t *)(block + cap + 1);                 /* cap */
	a->x = (float *)(block + 2 * cap + 1);                  /* cap + L */
	a->u = (float *)(block + 3 * cap + 1 + L);              /* cap + L */
	a->x1 = (float *)(block + 4 * cap + 1 + 2 * L);         /* cap + L */
	a->col = block + 5 * cap + 1 + 3 * L;                   /* 2 cap + L */
	a->g = (float *)(block + 7 * cap + 1 + 4 * L);          /* 4 (2 cap + L) */
}

int noise_perlin_axis(struct perlin_axis *a, const struct lat_row *r)
{
	size_t i, k = 0;
	int ok = 1;

	a->xb = fold_base(r->bx, r->xlo, r->xhi, &ok);
	a->n = r->n;
	a->nrun = 0;
	if (!ok || r->n == 0 || r->n > a->cap)
		return 0;
	for (i = 0; i < r->n; i++) {
		if (i == 0 || r->kx[i] != a->cell[k - 1]) {
			a->run[k] = (uint32_t)i;
			a->cell[k] = r->kx[i];
			a->col[2 * k] = a->xb + (uint32_t)r->kx[i];
			a->col[2 * k + 1] = a->col[2 * k] + 1;
			k++;
		}
		a->x[i] = frac24(r->fx[i]);
		a->x1[i] = a->x[i] - 1.0f;
		a->u[i] = fade5(a->x[i]);
	}
	/* the slack that whole blocks read past the ends */
	for (; i < r->n + PERLIN_AXIS_LANES; i++)
		a->x[i] = a->x1[i] = a->u[i] = 0.0f;
	for (i = 2 * k; i < 2 * k + PERLIN_AXIS_LANES; i++)
		a->col[i] = 0;
	a->run[k] = (uint32_t)r->n;
	a->nrun = k;
	return 1;
}

/*
 * One run of samples in one cell of an unwarped row: perlin_g() with the z
 * terms of the four dot products (gz * z, the same products) hoisted. It
 * computes whole blocks of PERLIN_AXIS_LANES samples, so up to LANES - 1
 * past the run, into the slack the arrays have past the row (noise.h).
 * Without amp (amp == NULL) out takes each value, and the next run
 * overwrites what this one wrote past its end; with it, out[i] += *amp *
 * value for the run's samples only.
 */
CLONE_INLINE void perlin_run(const struct cell_grads *g, float z, const float *x,
			     const float *x1, const float *u, size_t n, const float *amp,
			     float *out)
{
	float z1 = z - 1.0f, v = fade5(z);
	float c00 = g->z00 * z, c10 = g->z10 * z, c01 = g->z01 * z1, c11 = g->z11 * z1;
	float gx00 = g->x00, gx10 = g->x10, gx01 = g->x01, gx11 = g->x11;
	size_t b, j;

#define PERLIN_RUN_VALUE(i)                                                              \
	(lerp(lerp(gx00 * x[i] + c00, gx10 * x1[i] + c10, u[i]),                         \
	      lerp(gx01 * x[i] + c01, gx11 * x1[i] + c11, u[i]), v) * PERLIN_SCALE)
	for (b = 0; b + PERLIN_AXIS_LANES <= n || (!amp && b < n); b += PERLIN_AXIS_LANES) {
		for (j = 0; j < PERLIN_AXIS_LANES; j++) {
			float r = PERLIN_RUN_VALUE(b + j);

			out[b + j] = amp ? out[b + j] + *amp * r : r;
		}
	}
	if (amp && b < n) {
		/* the last, partial block: only the run's own lanes change */
		for (j = 0; j < PERLIN_AXIS_LANES; j++) {
			float r = PERLIN_RUN_VALUE(b + j);

			out[b + j] = b + j < n ? out[b + j] + *amp * r : out[b + j];
		}
	}
#undef PERLIN_RUN_VALUE
}

/*
 * The gradients of every run's corners on this row, as cell_grads() would
 * hash them, in whole blocks: for column c of g's 2 * nrun (+ slack), the
 * x and z components at cell rows 0 and 1.
 */
CLONE_INLINE void column_grads(const uint32_t *col, size_t ncol, size_t stride,
			       uint32_t hz0, uint32_t hz1, float *g)
{
	size_t b, j;

	for (b = 0; b < ncol; b += PERLIN_AXIS_LANES) {
		for (j = 0; j < PERLIN_AXIS_LANES; j++) {
			size_t c = b + j;

			grad_vec(mix(col[c] ^ hz0), &g[c], &g[stride + c]);
			grad_vec(mix(col[c] ^ hz1), &g[2 * stride + c], &g[3 * stride + c]);
		}
	}
}

CLONE_INLINE void axis_row(uint32_t s, struct perlin_axis *a, uint32_t zb, float z,
			   const float *amp, float *out)
{
	size_t k, st = 2 * a->cap + PERLIN_AXIS_LANES;
	const float *gx0 = a->g, *gz0 = a->g + st, *gx1 = a->g + 2 * st, *gz1 = a->g + 3 * st;

	column_grads(a->col, 2 * a->nrun, st, mix(zb + s), mix(zb + 1 + s), a->g);
	for (k = 0; k < a->nrun; k++) {
		size_t i0 = a->run[k], i1 = a->run[k + 1];
		struct cell_grads g = {
			gx0[2 * k], gz0[2 * k], gx0[2 * k + 1], gz0[2 * k + 1],
			gx1[2 * k], gz1[2 * k], gx1[2 * k + 1], gz1[2 * k + 1],
		};

		perlin_run(&g, z, a->x + i0, a->x1 + i0, a->u + i0, i1 - i0, amp, out + i0);
	}
}

CLONES
static void perlin_axis_row(uint32_t s, struct perlin_axis *a, uint32_t zb, float z,
			    float *out)
{
	axis_row(s, a, zb, z, NULL, out);
}

CLONES
static void perlin_axis_add(uint32_t s, struct perlin_axis *a, uint32_t zb, float z,
			    float amp, float *acc)
{
	axis_row(s, a, zb, z, &amp, acc);
}

int noise_perlin_row_axis(uint64_t seed, struct perlin_axis *a, int64_t bz, uint32_t fz,
			  float *out)
{
	int ok = 1;
	uint32_t zb = fold_base(bz, 0, 0, &ok);

	if (!ok)
		return 0;
	perlin_axis_row(fold_seed(seed), a, zb, frac24(fz), out);
	return 1;
}

int noise_perlin_add_axis(uint64_t seed, struct perlin_axis *a, int64_t bz, uint32_t fz,
			  float amp, float *acc)
{
	int ok = 1;
	uint32_t zb = fold_base(bz, 0, 0, &ok);

	if (!ok)
		return 0;
	perlin_axis_add(fold_seed(seed), a, zb, frac24(fz), amp, acc);
	return 1;
}

/*
 * Skew a block of samples relative to the row's skewed base cells. With
 * (bx + bz) * SKEW = si * 2^32 + sf, sample i moves by t = sf + (kx + kz) *
 * SKEW + floor((fx + fz) * SKEW / 2^32), exactly the 128-bit skew.
 */
CLONES
static void skew_block(int64_t sf, const int32_t *kx, const int32_t *kz,
		       const uint32_t *fx, const uint32_t *fz, size_t n,
		       int32_t *ox, int32_t *oz, uint32_t *gx, uint32_t *gz)
{
	size_t i;

	for (i = 0; i < n; i++) {
		/* |kx + kz| < 2^30; each fraction product < 2^63, their sum < 2^64 */
		int64_t t = sf + (int64_t)(kx[i] + kz[i]) * SKEW_Q32 +
			    (int64_t)(((uint64_t)fx[i] * SKEW_Q32 +
				       (uint64_t)fz[i] * SKEW_Q32) >> 32);
		int64_t vx = (int64_t)fx[i] + t, vz = (int64_t)fz[i] + t;

		/* floor(v / 2^32) for |v| < 2^62, by a biased unsigned shift */
		ox[i] = kx[i] + (int32_t)((int64_t)(((uint64_t)vx + (1ULL << 62)) >> 32) -
					  (INT64_C(1) << 30));
		oz[i] = kz[i] + (int32_t)((int64_t)(((uint64_t)vz + (1ULL << 62)) >> 32) -
					  (INT64_C(1) << 30));
		gx[i] = (uint32_t)vx;
		gz[i] = (uint32_t)vz;
	}
}

static void bounds(const int32_t *k, size_t n, int32_t *lo, int32_t *hi)
{
	int32_t a = k[0], b = k[0];
	size_t i;

	for (i = 1; i < n; i++) {
		a = k[i] < a ? k[i] : a;
		b = k[i] > b ? k[i] : b;
	}
	*lo = a;
	*hi = b;
}

static void simplex_row(uint32_t s, const struct lat_row *r, float *out)
{
	i128 base = ((i128)r->bx + r->bz) * SKEW_Q32;
	int64_t si = (int64_t)floor_q32(base), sf = (int64_t)(uint32_t)base;
	int64_t bx = (int64_t)((uint64_t)r->bx + (uint64_t)si);
	int64_t bz = (int64_t)((uint64_t)r->bz + (uint64_t)si);
	int32_t ox[BLOCK], oz[BLOCK], xlo, xhi, zlo, zhi;
	uint32_t gx[BLOCK], gz[BLOCK];
	size_t at;

	for (at = 0; at < r->n; at += BLOCK) {
		size_t m = r->n - at < BLOCK ? r->n - at : BLOCK;
		struct lat_row sub = { r->bx, r->bz, r->kx + at, r->kz + at, r->fx + at,
				       r->fz + at, 0, 0, 0, 0, m, r->x_up };
		uint32_t xb, zb;
		int ok = 1;

		skew_block(sf, sub.kx, sub.kz, sub.fx, sub.fz, m, ox, oz, gx, gz);
		bounds(ox, m, &xlo, &xhi);
		bounds(oz, m, &zlo, &zhi);
		xb = fold_base(bx, xlo, xhi, &ok);
		zb = fold_base(bz, zlo, zhi, &ok);
		if (ok)
			simplex_fast(s, xb, zb, ox, oz, gx, gz, m, out + at);
		else
			point_row(NOISE_SIMPLEX, s, &sub, out + at);
	}
}

void noise_row(enum noise_kind k, uint64_t seed, const struct lat_row *r, float *out)
{
	uint32_t s = fold_seed(seed), xb, zb;
	int ok = 1;

	if (r->n == 0)
		return;
	if (k == NOISE_SIMPLEX) {
		simplex_row(s, r, out);
		return;
	}
	if (k == NOISE_WORLEY_F1 || k == NOISE_WORLEY_F2F1) {
		/* cells -1 .. +1 around each sample: widen the bounds */
		xb = fold_base(r->bx, r->xlo - 1, r->xhi + 1, &ok);
		zb = fold_base(r->bz, r->zlo - 1, r->zhi + 1, &ok);
	} else {
		xb = fold_base(r->bx, r->xlo, r->xhi, &ok);
		zb = fold_base(r->bz, r->zlo, r->zhi, &ok);
	}
	if (!ok)
		point_row(k, s, r, out);
	else if (k == NOISE_WORLEY_F1)
		worley1_fast(s, xb, zb, r, out);
	else if (k == NOISE_WORLEY_F2F1)
		worley21_fast(s, xb, zb, r, out);
	else if (k == NOISE_PERLIN && r->zlo == r->zhi)
		perlin_row_z(s, xb, zb, r, out);
	else if (k == NOISE_PERLIN)
		perlin_row(s, xb, zb, r, out);
	else if (k == NOISE_VALUE_QUINTIC)
		value5_fast(s, xb, zb, r->kx, r->kz, r->fx, r->fz, r->n, out);
	else
		value3_fast(s, xb, zb, r->kx, r->kz, r->fx, r->fz, r->n, out);
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
