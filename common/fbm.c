/*
 * fbm.c - octave sums over lattice noise (see fbm.h).
 *
 * Lattice position of world metre X for an octave of frequency q (Q32 cells
 * per metre) and phase offset o (Q32): P = X * q + o, a 128-bit product
 * computed once per row; along the row it grows by step * q, which fits in
 * 64 bits, so the inner loops are plain integer adds and shifts.
 */
#include "fbm.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "simd.h"

__extension__ typedef __int128 i128;

#define Q32 4294967296.0
#define MAX_FREQ 4.0        /* cycles per metre: wavelengths down to 25 cm */
#define BIAS (INT64_C(1) << 62)

uint64_t fbm_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/*
 * The x axes of unwarped Perlin rows, per octave: every row of a tile has
 * the same x positions, so an octave's cells, fractions and fades along x
 * are worked out once and each row only hashes its cells and interpolates.
 * AXES entries, keyed by everything the axis depends on, replaced round
 * robin; enough for the unwarped Perlin octaves a preset interleaves.
 */
#define AXES 32

struct axis_entry {
	int64_t x0, step, off;
	uint64_t q;
	size_t n, cap;
	int used, ok;
	struct perlin_axis a;
};

struct fbm_axes {
	unsigned next, hint;
	struct axis_entry e[AXES];
};

static void axes_free(struct fbm_axes *ax)
{
	int k;

	if (!ax)
		return;
	for (k = 0; k < AXES; k++)
		free(ax->e[k].a.run);   /* one block per entry */
	free(ax);
}

int fbm_scratch_init(struct fbm_scratch *s, size_t n)
{
	s->axes = NULL;
	s->cap = n;
	s->kx = malloc(n * sizeof(*s->kx));
	s->kz = malloc(n * sizeof(*s->kz));
	s->fx = malloc(n * sizeof(*s->fx));
	s->fz = malloc(n * sizeof(*s->fz));
	s->noise = malloc((n + PERLIN_AXIS_LANES) * sizeof(*s->noise));
	s->acc = malloc((n + PERLIN_AXIS_LANES) * sizeof(*s->acc));
	s->weight = malloc(n * sizeof(*s->weight));
	s->dnx = malloc(n * sizeof(*s->dnx));
	s->dnz = malloc(n * sizeof(*s->dnz));
	if (!s->kx || !s->kz || !s->fx || !s->fz || !s->noise || !s->acc || !s->weight ||
	    !s->dnx || !s->dnz) {
		fbm_scratch_release(s);
		return ERR_NOMEM;
	}
	return 0;
}

void fbm_scratch_release(struct fbm_scratch *s)
{
	axes_free(s->axes);
	free(s->kx);
	free(s->kz);
	free(s->fx);
	free(s->fz);
	free(s->noise);
	free(s->acc);
	free(s->weight);
	free(s->dnx);
	free(s->dnz);
	*s = (struct fbm_scratch){ 0 };
}

int fbm_params_check(const struct fbm_params *p, const char **why)
{
	double top = 1.0 / p->wavelength;
	int o;

	*why = NULL;
	if ((unsigned)p->noise >= NOISE_KIND_COUNT)
		*why = "noise: unknown kind";
	else if ((unsigned)p->mode >= FBM_MODE_COUNT)
		*why = "mode: unknown mode";
	else if (p->octaves < 1 || p->octaves > FBM_MAX_OCTAVES)
		*why = "octaves: must be 1..16";
	else if (!(p->wavelength >= 1.0 && p->wavelength <= 1e6))
		*why = "wavelength: must be 1..1e6 metres";
	else if (!(p->gain > 0.0 && p->gain <= 1.5))
		*why = "gain: must be in (0, 1.5]";
	else if (!(p->lacunarity >= 1.1 && p->lacunarity <= 4.0))
		*why = "lacunarity: must be 1.1..4";
	else if (!(p->sharpness >= 0.0 && p->sharpness <= 8.0))
		*why = "sharpness: must be 0..8";
	if (*why)
		return ERR_RANGE;
	for (o = 1; o < p->octaves; o++)
		top *= p->lacunarity;
	if (top > MAX_FREQ) {
		*why = "octaves: the last octave is finer than 25 cm";
		return ERR_RANGE;
	}
	return 0;
}

static int64_t phase(uint64_t h)
{
	/* Up to +-2^19 cells plus a fraction: octaves do not share a zero. */
	return (int64_t)(h >> 13) - (INT64_C(1) << 50);
}

void fbm_init(struct fbm *f, const struct fbm_params *p, uint64_t seed, uint32_t salt)
{
	double freq = 1.0 / p->wavelength, amp = 1.0, sum = 0.0;
	uint64_t base = fbm_mix64(seed ^ fbm_mix64(0x7e77a1a5ULL + salt));
	int o;

	f->noise = p->noise;
	f->mode = p->mode;
	f->octaves = p->octaves;
	f->sharpness = (float)p->sharpness;
	for (o = 0; o < p->octaves; o++) {
		uint64_t h = fbm_mix64(base + (uint64_t)o * 0x9e3779b97f4a7c15ULL);

		f->amp[o] = (float)amp;
		f->freq[o] = (uint64_t)(freq * Q32 + 0.5);
		f->freqd[o] = (double)f->freq[o];
		f->seed[o] = h;
		f->offx[o] = phase(fbm_mix64(h ^ 0x1111));
		f->offz[o] = phase(fbm_mix64(h ^ 0x2222));
		sum += (double)f->amp[o];
		amp *= p->gain;
		freq *= p->lacunarity;
	}
	f->norm = (float)(1.0 / sum);
}

/* floor(v / 2^32) for |v| < 2^61, without a signed shift. */
static inline int32_t cell_of(int64_t v)
{
	return (int32_t)((int64_t)((uint64_t)(v + BIAS) >> 32) - (BIAS >> 32));
}

/*
 * Round w (|w| < 2^51) to the nearest integer, ties to even, by adding
 * 1.5 * 2^52: the sum's low mantissa bits are then the integer. Plain
 * double arithmetic and a bit copy, so it vectorises (a cast to int64 does
 * not before AVX-512) and means the same on every IEEE machine.
 */
static inline int64_t round_q32(double w)
{
	double t = w + 6755399441055744.0;
	int64_t bits;

	memcpy(&bits, &t, sizeof(bits));
	return bits - INT64_C(0x4338000000000000);
}

/*
 * Lattice coordinates along one axis: P(i) = w * q + off + i * dq + warp(i)
 * in Q32. The 128-bit base is split once into a cell (*base) and a
 * fraction; per sample the offset from it stays below 2^61, so the cell
 * offset fits 32 bits. *lo and *hi bound the cell offsets.
 */
CLONES
static void axis(int64_t w, uint64_t q, int64_t off, int64_t dq, const float *d,
		 double qd, size_t n, int64_t *base, int32_t *k, uint32_t *f,
		 int32_t *lo, int32_t *hi)
{
	i128 p = (i128)w * (i128)q + off;
	int64_t bf = (int64_t)(uint32_t)p;
	int32_t a = INT32_MAX, b = INT32_MIN;
	size_t i;

	*base = (int64_t)(p >> 32);   /* arithmetic shift on gcc and clang */
	if (d) {
		/* the progression as an induction variable (vector adds, where
		 * i * dq would be an emulated 64-bit multiply), the bounds as
		 * reductions of the same loop */
		int64_t at = bf;

		for (i = 0; i < n; i++) {
			int64_t v = at + round_q32((double)d[i] * qd);
			int32_t c = cell_of(v);

			k[i] = c;
			f[i] = (uint32_t)v;
			a = c < a ? c : a;
			b = c > b ? c : b;
			at += dq;
		}
	} else if (dq == 0) {
		/* one position (the z axis of an unwarped row) */
		a = b = cell_of(bf);
		for (i = 0; i < n; i++) {
			k[i] = a;
			f[i] = (uint32_t)bf;
		}
	} else {
		int64_t at = bf;

		for (i = 0; i < n; i++) {
			k[i] = cell_of(at);
			f[i] = (uint32_t)at;
			at += dq;
		}
		a = k[0];          /* dq >= 0: cells never decrease */
		b = k[n - 1];
	}
	*lo = a;
	*hi = b;
}

CLONES
static void accumulate(const struct fbm *f, int o, const float *nz, size_t n,
		       float *out, float *weight)
{
	float a = f->amp[o];
	size_t i;

	switch (f->mode) {
	case FBM_RIDGED:
		for (i = 0; i < n; i++) {
			float r = 1.0f - (nz[i] < 0.0f ? -nz[i] : nz[i]);
			float w;

			r *= r;
			r *= weight[i];
			w = r * f->sharpness;
			weight[i] = w > 1.0f ? 1.0f : w;
			out[i] += a * r;
		}
		break;
	case FBM_BILLOW:
		for (i = 0; i < n; i++)
			out[i] += a * (2.0f * (nz[i] < 0.0f ? -nz[i] : nz[i]) - 1.0f);
		break;
	default:
		for (i = 0; i < n; i++)
			out[i] += a * nz[i];
		break;
	}
}

/* The kept x axis of octave o of f along x0 + i * step, n samples; NULL
 * when out of memory or when the axis cannot take the 32-bit path. */
static struct perlin_axis *axis_of(const struct fbm *f, int o, int64_t x0, int64_t step,
					 size_t n, struct fbm_scratch *s)
{
	struct fbm_axes *ax = s->axes;
	struct axis_entry *e;
	struct lat_row r = { 0, 0, s->kx, s->kz, s->fx, s->fz, 0, 0, 0, 0, n, 1 };
	uint64_t q = f->freq[o];
	int k;

	if (!ax && !(ax = s->axes = calloc(1, sizeof(*ax))))
		return NULL;
	/* rows ask for the octaves in turn: start after the last one found */
	for (k = 0; k < AXES; k++) {
		e = &ax->e[(ax->hint + k) % AXES];
		if (e->used && e->x0 == x0 && e->step == step && e->n == n && e->q == q &&
		    e->off == f->offx[o]) {
			ax->hint = (ax->hint + k + 1) % AXES;
			return e->ok ? &e->a : NULL;
		}
	}
	e = &ax->e[ax->next];
	ax->next = (ax->next + 1) % AXES;
	e->used = 0;
	if (e->cap < n) {
		uint32_t *block = malloc(PERLIN_AXIS_WORDS(n) * sizeof(uint32_t));

		if (!block)
			return NULL;
		free(e->a.run);
		noise_perlin_axis_bind(&e->a, block, n);
		e->cap = n;
	}
	axis(x0, q, f->offx[o], step * (int64_t)q, NULL, 0.0, n, &r.bx, s->kx, s->fx,
	     &r.xlo, &r.xhi);
	e->ok = noise_perlin_axis(&e->a, &r);
	e->x0 = x0;
	e->step = step;
	e->n = n;
	e->q = q;
	e->off = f->offx[o];
	e->used = 1;
	return e->ok ? &e->a : NULL;
}

/* Octave o of an unwarped Perlin row: its noise into s->noise (acc NULL),
 * or amp * noise added into acc, through the octave's kept x axis. 1, or
 * 0 when the general path must run. */
static int perlin_unwarped(const struct fbm *f, int o, int64_t x0, int64_t step, int64_t z,
			   size_t n, float *acc, struct fbm_scratch *s)
{
	struct perlin_axis *a = axis_of(f, o, x0, step, n, s);
	i128 p = (i128)z * (i128)f->freq[o] + f->offz[o];
	int64_t bz = (int64_t)(p >> 32);

	if (!a)
		return 0;
	if (acc)
		return noise_perlin_add_axis(f->seed[o], a, bz, (uint32_t)p, f->amp[o], acc);
	return noise_perlin_row_axis(f->seed[o], a, bz, (uint32_t)p, s->noise);
}

/* Octave o's noise along the row into s->noise. */
static void octave(const struct fbm *f, int o, int64_t x0, int64_t step, int64_t z,
		   const float *dx, const float *dz, size_t n, struct fbm_scratch *s)
{
	struct lat_row r = { 0, 0, s->kx, s->kz, s->fx, s->fz, 0, 0, 0, 0, n, !dx };
	uint64_t q = f->freq[o];

	if (!dx && !dz && f->noise == NOISE_PERLIN && step >= 0 &&
	    perlin_unwarped(f, o, x0, step, z, n, NULL, s))
		return;
	axis(x0, q, f->offx[o], step * (int64_t)q, dx, f->freqd[o], n,
	     &r.bx, s->kx, s->fx, &r.xlo, &r.xhi);
	axis(z, q, f->offz[o], 0, dz, f->freqd[o], n,
	     &r.bz, s->kz, s->fz, &r.zlo, &r.zhi);
	noise_row(f->noise, f->seed[o], &r, s->noise);
}

CLONES
static void start(float *acc, float *weight, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		acc[i] = 0.0f;
		weight[i] = 1.0f;
	}
}

CLONES
static void finish(const struct fbm *f, const float *acc, size_t n, float *out)
{
	size_t i;

	if (f->mode == FBM_RIDGED) {
		for (i = 0; i < n; i++)
			out[i] = acc[i] * f->norm * 2.0f - 1.0f;
	} else {
		for (i = 0; i < n; i++)
			out[i] = acc[i] * f->norm;
	}
}

void fbm_row(const struct fbm *f, int64_t x0, int64_t step, int64_t z,
	     const float *dx, const float *dz, size_t n, float *out,
	     struct fbm_scratch *s)
{
	/* a plain unwarped Perlin fBm adds each octave straight into s->acc,
	 * which has the slack the row kernels write into */
	int fused = !dx && !dz && f->noise == NOISE_PERLIN && f->mode == FBM_PLAIN && step >= 0;
	float *acc = fused ? s->acc : out;
	int o;

	if (n == 0)
		return;
	start(acc, s->weight, n);
	for (o = 0; o < f->octaves; o++) {
		if (fused && perlin_unwarped(f, o, x0, step, z, n, acc, s))
			continue;
		octave(f, o, x0, step, z, dx, dz, n, s);
		accumulate(f, o, s->noise, n, acc, s->weight);
	}
	finish(f, acc, n, out);
}

void fbm_row_d(const struct fbm *f, int64_t x0, int64_t step, int64_t z,
	       const float *dx, const float *dz, size_t n, float *out,
	       float *gx, float *gz, struct fbm_scratch *s)
{
	struct lat_row r = { 0, 0, s->kx, s->kz, s->fx, s->fz, 0, 0, 0, 0, n, !dx };
	size_t i;
	int o;

	if (n == 0)
		return;
	for (i = 0; i < n; i++)
		out[i] = gx[i] = gz[i] = 0.0f;
	for (o = 0; o < f->octaves; o++) {
		uint64_t q = f->freq[o];
		float a = f->amp[o], af = a * (float)(f->freqd[o] * (1.0 / Q32));

		axis(x0, q, f->offx[o], step * (int64_t)q, dx, f->freqd[o], n,
		     &r.bx, s->kx, s->fx, &r.xlo, &r.xhi);
		axis(z, q, f->offz[o], 0, dz, f->freqd[o], n,
		     &r.bz, s->kz, s->fz, &r.zlo, &r.zhi);
		noise_perlin_row_d(f->seed[o], &r, s->noise, s->dnx, s->dnz);
		for (i = 0; i < n; i++) {
			out[i] += a * s->noise[i];
			gx[i] += af * s->dnx[i];
			gz[i] += af * s->dnz[i];
		}
	}
	for (i = 0; i < n; i++) {
		out[i] *= f->norm;
		gx[i] *= f->norm;
		gz[i] *= f->norm;
	}
}
