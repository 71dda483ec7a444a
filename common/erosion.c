/*
 * erosion.c - droplet hydraulic erosion and terrain measures (erosion.h).
 *
 * A droplet's position is map-local fixed point: int64 metres * 2^24. The
 * integer part picks the 2 x 2 samples around it, the fraction becomes an
 * exact float in [0, 1), and a move adds the direction converted to Q24 by
 * truncation. So a droplet's path depends on the heights it meets and on
 * its offset within the map, never on how large x0 is, and no position is
 * ever rounded differently on another machine.
 *
 * Seeding: droplet k of cell (cx, cz) starts at a hash of (seed, cx, cz, k)
 * (splitmix64's finaliser, chained), spread over the cell's square with a
 * 32 x 32-bit multiply, so the start is an exact Q24 world position.
 *
 * Erosion uses a cone brush of integer offsets whose weights are computed
 * once per call (on the stack, from sqrtf, which IEEE rounds exactly), so
 * the per-step work is adds and multiplies in a fixed order.
 */
#include "erosion.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fbm.h"

#define FRAC_BITS 24
#define ONE ((int64_t)1 << FRAC_BITS)
#define FRAC_MASK (ONE - 1)
#define MAX_ABS_ORIGIN ((int64_t)1 << 62)
#define BRUSH_MAX ((2 * EROSION_MAX_RADIUS + 1) * (2 * EROSION_MAX_RADIUS + 1))
#define DIR_EPS 1e-12f
#define GOLDEN 0x9e3779b97f4a7c15ULL

/* Unit vectors at multiples of 22.5 degrees, for droplets on a flat. */
static const float rand_dir[16][2] = {
	{ 1.0f, 0.0f }, { 0.92387953f, 0.38268343f },
	{ 0.70710678f, 0.70710678f }, { 0.38268343f, 0.92387953f },
	{ 0.0f, 1.0f }, { -0.38268343f, 0.92387953f },
	{ -0.70710678f, 0.70710678f }, { -0.92387953f, 0.38268343f },
	{ -1.0f, 0.0f }, { -0.92387953f, -0.38268343f },
	{ -0.70710678f, -0.70710678f }, { -0.38268343f, -0.92387953f },
	{ 0.0f, -1.0f }, { 0.38268343f, -0.92387953f },
	{ 0.70710678f, -0.70710678f }, { 0.92387953f, -0.38268343f },
};

struct brush {
	int n;
	int dx[BRUSH_MAX], dz[BRUSH_MAX];
	float w[BRUSH_MAX];
};

struct map {
	float *hm;
	int w, h;
	const struct erosion_params *p;
	const struct brush *brush;
	struct erosion_stats *st;
};

struct droplet {
	int64_t px, pz;      /* map-local position, Q24 */
	float dx, dz, speed, water, sed;
	uint64_t hash;
};

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && a < 0) ? q - 1 : q;
}

static uint64_t drop_hash(uint64_t seed, int64_t cx, int64_t cz, int k)
{
	uint64_t h = fbm_mix64(seed ^ 0x65726f73696f6e31ULL);   /* "erosion1" */

	h = fbm_mix64(h ^ (uint64_t)cx);
	h = fbm_mix64((h + GOLDEN) ^ (uint64_t)cz);
	return fbm_mix64(h + (uint64_t)k * GOLDEN);
}

/* Offset of a start within its cell, Q24 metres in [0, cell * 2^24). */
static int64_t cell_offset(uint32_t r, int cell)
{
	return (int64_t)(((uint64_t)r * ((uint64_t)cell << FRAC_BITS)) >> 32);
}

/* Start of droplet k of cell (cx, cz) as Q24 offsets within the cell. */
static uint64_t drop_start(uint64_t seed, int64_t cx, int64_t cz, int k,
			   int cell, int64_t *ox, int64_t *oz)
{
	uint64_t r = drop_hash(seed, cx, cz, k);

	*ox = cell_offset((uint32_t)r, cell);
	*oz = cell_offset((uint32_t)(r >> 32), cell);
	return r;
}

/* Seeding cells whose square lies within world [o + 1, o + n - 2]. */
static void cell_range(int64_t o, int n, int cell, int64_t *lo, int64_t *hi)
{
	*lo = -floor_div(-(o + 1), cell);
	*hi = floor_div(o + n - 2, cell) - 1;
}

struct erosion_params erosion_params_default(void)
{
	struct erosion_params p = {
		.inertia = 0.05f, .capacity = 4.0f, .min_slope = 0.01f,
		.deposit = 0.3f, .erode = 0.3f, .evaporation = 0.05f,
		.gravity = 4.0f, .init_speed = 1.0f, .init_water = 1.0f,
		.max_steps = 64, .cell = 4, .droplets_per_cell = 1, .radius = 2,
	};

	return p;
}

static int in(float v, float lo, float hi)
{
	return v >= lo && v <= hi;   /* false for NaN */
}

int erosion_params_check(const struct erosion_params *p, const char **why)
{
	const char *m = NULL;

	if (!in(p->inertia, 0, 1))
		m = "inertia: must be 0..1";
	else if (!in(p->capacity, 0, 1000))
		m = "capacity: must be 0..1000";
	else if (!in(p->min_slope, 0, 10))
		m = "min_slope: must be 0..10";
	else if (!in(p->deposit, 0, 1))
		m = "deposit: must be 0..1";
	else if (!in(p->erode, 0, 1))
		m = "erode: must be 0..1";
	else if (!in(p->evaporation, 0, 1))
		m = "evaporation: must be 0..1";
	else if (!in(p->gravity, 0, 1000))
		m = "gravity: must be 0..1000";
	else if (!in(p->init_speed, 0, 1000))
		m = "init_speed: must be 0..1000";
	else if (!in(p->init_water, 0, 1000))
		m = "init_water: must be 0..1000";
	else if (p->max_steps < 1 || p->max_steps > EROSION_MAX_STEPS)
		m = "max_steps: must be 1..1024";
	else if (p->cell < 1 || p->cell > EROSION_MAX_CELL)
		m = "cell: must be 1..256";
	else if (p->droplets_per_cell < 1 ||
		 p->droplets_per_cell > EROSION_MAX_DROPLETS_PER_CELL)
		m = "droplets_per_cell: must be 1..64";
	else if (p->radius < 0 || p->radius > EROSION_MAX_RADIUS)
		m = "radius: must be 0..8";
	if (why)
		*why = m;
	return m ? ERR_RANGE : 0;
}

static int check_args(int w, int h, int64_t x0, int64_t z0,
		      const struct erosion_params *p)
{
	if (!p || w < 3 || h < 3 || w > EROSION_MAX_SIDE || h > EROSION_MAX_SIDE)
		return ERR_INVAL;
	if (erosion_params_check(p, NULL))
		return ERR_RANGE;
	if (x0 <= -MAX_ABS_ORIGIN || x0 >= MAX_ABS_ORIGIN ||
	    z0 <= -MAX_ABS_ORIGIN || z0 >= MAX_ABS_ORIGIN)
		return ERR_RANGE;
	return 0;
}

int erosion_drop_list(int w, int h, int64_t x0, int64_t z0, uint64_t seed,
		      const struct erosion_params *p, struct erosion_drop *out,
		      size_t cap, size_t *n)
{
	int64_t xlo, xhi, zlo, zhi, cx, cz;
	size_t count = 0;
	int err = check_args(w, h, x0, z0, p), k;

	if (!err && (!n || (cap && !out)))
		err = ERR_INVAL;
	if (err)
		return err;
	cell_range(x0, w, p->cell, &xlo, &xhi);
	cell_range(z0, h, p->cell, &zlo, &zhi);
	for (cz = zlo; cz <= zhi; cz++)
		for (cx = xlo; cx <= xhi; cx++)
			for (k = 0; k < p->droplets_per_cell; k++, count++) {
				struct erosion_drop *d;
				int64_t ox, oz;

				if (count >= cap)
					continue;
				drop_start(seed, cx, cz, k, p->cell, &ox, &oz);
				d = out + count;
				d->x = cx * p->cell + (ox >> FRAC_BITS);
				d->z = cz * p->cell + (oz >> FRAC_BITS);
				d->fx = (uint32_t)(ox & FRAC_MASK);
				d->fz = (uint32_t)(oz & FRAC_MASK);
				d->cx = cx;
				d->cz = cz;
				d->k = k;
			}
	*n = count;
	return 0;
}

/* Cone of radius r around a sample: weight r - distance, normalised. */
static void brush_init(struct brush *b, int r)
{
	float sum = 0.0f;
	int dx, dz, i;

	b->n = 0;
	for (dz = -r; dz <= r; dz++)
		for (dx = -r; dx <= r; dx++) {
			float d = sqrtf((float)(dx * dx + dz * dz));

			if (d >= (float)r)
				continue;
			b->dx[b->n] = dx;
			b->dz[b->n] = dz;
			b->w[b->n] = (float)r - d;
			sum += b->w[b->n];
			b->n++;
		}
	for (i = 0; i < b->n; i++)
		b->w[i] = b->w[i] / sum;
}

static float frac(int64_t p)
{
	return (float)(p & FRAC_MASK) * 0x1p-24f;
}

/* Bilinear height at Q24 position (px, pz); gradient when gx is not NULL. */
static float sample(const struct map *m, int64_t px, int64_t pz,
		    float *gx, float *gz)
{
	const float *c = m->hm + (size_t)(pz >> FRAC_BITS) * (size_t)m->w +
			 (size_t)(px >> FRAC_BITS);
	float fx = frac(px), fz = frac(pz);
	float nw = c[0], ne = c[1], sw = c[m->w], se = c[m->w + 1], top, bot;

	if (gx) {
		*gx = (ne - nw) * (1.0f - fz) + (se - sw) * fz;
		*gz = (sw - nw) * (1.0f - fx) + (se - ne) * fx;
	}
	top = nw + (ne - nw) * fx;   /* lerps: exact where the corners agree */
	bot = sw + (se - sw) * fx;
	return top + (bot - top) * fz;
}

/* Add v to sample (i, j) unless it lies on the map's border; what it added. */
static float add_at(struct map *m, int64_t i, int64_t j, float v)
{
	if (i < 1 || j < 1 || i >= m->w - 1 || j >= m->h - 1)
		return 0.0f;
	m->hm[(size_t)j * (size_t)m->w + (size_t)i] += v;
	return v;
}

/* Add amount (signed) at (px, pz), split bilinearly over the 4 samples
 * around it; returns what it added (border samples take nothing). */
static float bilinear_add(struct map *m, int64_t px, int64_t pz, float amount)
{
	int64_t i = px >> FRAC_BITS, j = pz >> FRAC_BITS;
	float fx = frac(px), fz = frac(pz), sum;

	sum = add_at(m, i, j, amount * (1.0f - fx) * (1.0f - fz));
	sum += add_at(m, i + 1, j, amount * fx * (1.0f - fz));
	sum += add_at(m, i, j + 1, amount * (1.0f - fx) * fz);
	sum += add_at(m, i + 1, j + 1, amount * fx * fz);
	return sum;
}

/* Remove amount with the brush around the nearest sample; what it took. */
static float brush_erode(struct map *m, int64_t px, int64_t pz, float amount)
{
	const struct brush *b = m->brush;
	int64_t ci = (px + ONE / 2) >> FRAC_BITS, cj = (pz + ONE / 2) >> FRAC_BITS;
	float taken = 0.0f;
	int k;

	if (b->n == 0)
		return -bilinear_add(m, px, pz, -amount);
	for (k = 0; k < b->n; k++)
		taken -= add_at(m, ci + b->dx[k], cj + b->dz[k], -(amount * b->w[k]));
	return taken;
}

/* New direction from inertia and gradient; a hashed one on a flat. */
static void steer(const struct erosion_params *p, struct droplet *d,
		  float gx, float gz, int step)
{
	float dx = d->dx * p->inertia - gx * (1.0f - p->inertia);
	float dz = d->dz * p->inertia - gz * (1.0f - p->inertia);
	float len = sqrtf(dx * dx + dz * dz);

	if (len > DIR_EPS) {
		d->dx = dx / len;
		d->dz = dz / len;
	} else {
		uint64_t r = fbm_mix64(d->hash + (uint64_t)(step + 1) * GOLDEN);

		d->dx = rand_dir[r & 15][0];
		d->dz = rand_dir[r & 15][1];
	}
}

/* Exchange sediment with the ground for a move from (px, pz) down dh. */
static void transport(struct map *m, struct droplet *d, int64_t px,
		      int64_t pz, float dh)
{
	const struct erosion_params *p = m->p;
	float slope = -dh > p->min_slope ? -dh : p->min_slope;
	float cap = slope * d->speed * d->water * p->capacity;

	if (d->sed > cap || dh > 0.0f) {
		float amt = dh > 0.0f ? (dh < d->sed ? dh : d->sed)
				      : (d->sed - cap) * p->deposit;

		amt = bilinear_add(m, px, pz, amt);
		d->sed -= amt;
		m->st->deposited += amt;
	} else {
		float amt = (cap - d->sed) * p->erode;
		float taken;

		amt = amt < -dh ? amt : -dh;
		taken = brush_erode(m, px, pz, amt);
		d->sed += taken;
		m->st->eroded += taken;
	}
}

/* Run one droplet to its end. */
static void run_droplet(struct map *m, struct droplet *d)
{
	const struct erosion_params *p = m->p;
	int64_t xmax = (int64_t)(m->w - 1) << FRAC_BITS;
	int64_t zmax = (int64_t)(m->h - 1) << FRAC_BITS;
	float put;
	int step;

	for (step = 0; step < p->max_steps; step++) {
		float gx, gz, h0, dh, v2;
		int64_t nx, nz;

		h0 = sample(m, d->px, d->pz, &gx, &gz);
		steer(p, d, gx, gz, step);
		nx = d->px + (int64_t)(d->dx * 0x1p24f);
		nz = d->pz + (int64_t)(d->dz * 0x1p24f);
		m->st->steps++;
		if (nx < 0 || nz < 0 || nx >= xmax || nz >= zmax) {
			m->st->exited++;
			m->st->carried_out += d->sed;
			return;
		}
		dh = sample(m, nx, nz, NULL, NULL) - h0;
		transport(m, d, d->px, d->pz, dh);
		v2 = d->speed * d->speed - dh * p->gravity;
		d->speed = sqrtf(v2 > 0.0f ? v2 : 0.0f);
		d->water = d->water * (1.0f - p->evaporation);
		d->px = nx;
		d->pz = nz;
	}
	put = bilinear_add(m, d->px, d->pz, d->sed);
	m->st->deposited += put;
	m->st->settled += put;
	m->st->carried_out += d->sed - put;
}

/* Every height finite and within +-limit metres. */
static int heights_ok(const float *hm, size_t n, float limit)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(fabsf(hm[i]) <= limit))
			return 0;
	return 1;
}

int erosion_droplets(float *hm, int w, int h, int64_t x0, int64_t z0,
		     uint64_t seed, const struct erosion_params *p,
		     struct erosion_stats *stats)
{
	struct erosion_stats st = { 0 };
	struct brush brush;
	struct map m = { hm, w, h, p, &brush, &st };
	int64_t xlo, xhi, zlo, zhi, cx, cz;
	int err = check_args(w, h, x0, z0, p), k;

	if (!err && !hm)
		err = ERR_INVAL;
	if (!err && !heights_ok(hm, (size_t)w * (size_t)h, EROSION_MAX_ABS_HEIGHT))
		err = ERR_RANGE;
	if (err)
		return err;
	brush_init(&brush, p->radius);
	cell_range(x0, w, p->cell, &xlo, &xhi);
	cell_range(z0, h, p->cell, &zlo, &zhi);
	for (cz = zlo; cz <= zhi; cz++)
		for (cx = xlo; cx <= xhi; cx++)
			for (k = 0; k < p->droplets_per_cell; k++) {
				struct droplet d = {
					.speed = p->init_speed, .water = p->init_water,
				};
				int64_t ox, oz;

				d.hash = drop_start(seed, cx, cz, k, p->cell, &ox, &oz);
				d.px = ((cx * p->cell - x0) << FRAC_BITS) + ox;
				d.pz = ((cz * p->cell - z0) << FRAC_BITS) + oz;
				st.droplets++;
				run_droplet(&m, &d);
			}
	if (stats)
		*stats = st;
	return 0;
}

/* Index of the steepest strictly lower of the 8 neighbours of (i, j), or -1. */
static int64_t receiver(const float *hm, int w, int h, int i, int j)
{
	static const int off[8][2] = {
		{ 0, -1 }, { 1, -1 }, { 1, 0 }, { 1, 1 },
		{ 0, 1 }, { -1, 1 }, { -1, 0 }, { -1, -1 },
	};
	float c = hm[(size_t)j * (size_t)w + (size_t)i], best = 0.0f;
	int64_t to = -1;
	int k;

	for (k = 0; k < 8; k++) {
		int ni = i + off[k][0], nj = j + off[k][1];
		float s;

		if (ni < 0 || nj < 0 || ni >= w || nj >= h)
			continue;
		s = c - hm[(size_t)nj * (size_t)w + (size_t)ni];
		if (k & 1)
			s = s * 0.70710678f;   /* diagonal: drop / sqrt 2 */
		if (s > best) {
			best = s;
			to = (int64_t)nj * w + ni;
		}
	}
	return to;
}

/* A key that orders heights from high to low as unsigned integers. */
static uint32_t desc_key(float v)
{
	uint32_t u;

	v = v + 0.0f;   /* -0 becomes +0: equal heights, equal keys */
	memcpy(&u, &v, sizeof(u));
	u = (u & 0x80000000U) ? ~u : u | 0x80000000U;   /* ascending */
	return ~u;
}

/*
 * Sort sample indices 0..n-1 by desc_key, ties by index: a stable LSD
 * radix sort (11, 11, 10 bits) from index order. idx, tmp and key (n
 * each) are scratch; the result ends in idx.
 */
static void sort_desc(const float *hm, size_t n, uint32_t *idx, uint32_t *tmp,
		      uint32_t *key)
{
	static const int shift[3] = { 0, 11, 22 };
	uint32_t *const out = idx;
	size_t cnt[2048], i;
	int pass;

	for (i = 0; i < n; i++) {
		key[i] = desc_key(hm[i]);
		idx[i] = (uint32_t)i;
	}
	for (pass = 0; pass < 3; pass++) {
		size_t sum = 0, c;
		uint32_t *t;

		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[(key[idx[i]] >> shift[pass]) & 2047]++;
		for (i = 0; i < 2048; i++) {
			c = cnt[i];
			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			tmp[cnt[(key[idx[i]] >> shift[pass]) & 2047]++] = idx[i];
		t = idx;
		idx = tmp;
		tmp = t;
	}
	if (idx != out)   /* an odd number of passes ends in the scratch */
		memcpy(out, idx, n * sizeof(*idx));
}

int erosion_channel_share(const float *hm, int w, int h, uint32_t threshold,
			  double *share)
{
	uint32_t *buf, *idx, *area;
	size_t n, i, hits = 0;

	if (!hm || !share || w < 1 || h < 1 || threshold == 0)
		return ERR_INVAL;
	n = (size_t)w * (size_t)h;
	if (n > ((size_t)1 << 31) || !heights_ok(hm, n, FLT_MAX))
		return ERR_RANGE;
	buf = malloc(3 * n * sizeof(*buf));
	if (!buf)
		return ERR_NOMEM;
	idx = buf;
	area = buf + 2 * n;
	sort_desc(hm, n, idx, buf + n, area);
	for (i = 0; i < n; i++)
		area[i] = 1;
	for (i = 0; i < n; i++) {
		uint32_t s = idx[i];
		int64_t to = receiver(hm, w, h, (int)(s % (uint32_t)w),
				      (int)(s / (uint32_t)w));

		if (to >= 0)
			area[to] += area[s];
		hits += area[s] >= threshold;
	}
	*share = (double)hits / (double)n;
	free(buf);
	return 0;
}

int erosion_hypsometric(const float *hm, size_t n, double *out)
{
	double sum = 0.0;
	float lo, hi;
	size_t i;

	if (!hm || !out || n == 0)
		return ERR_INVAL;
	if (!heights_ok(hm, n, FLT_MAX))
		return ERR_RANGE;
	lo = hi = hm[0];
	for (i = 0; i < n; i++) {
		sum += hm[i];
		lo = hm[i] < lo ? hm[i] : lo;
		hi = hm[i] > hi ? hm[i] : hi;
	}
	if (!(hi > lo))
		return ERR_RANGE;
	*out = (sum / (double)n - lo) / ((double)hi - lo);
	return 0;
}
