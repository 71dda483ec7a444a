/*
 * material.c - material per sample from height, slope and moisture (see
 * material.h and docs/tile-format.md for the table).
 *
 * Weights are products of smooth steps (the cubic 3t^2 - 2t^3), all in
 * double precision in a fixed order; moisture is a 3-octave simplex fBm
 * with its own salt, so it does not follow the height noise.
 */
#include "material.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "err.h"
#include "fbm.h"
#include "node.h"
#include "preset.h"

static const struct {
	const char *name;
	uint32_t rgb;
} table[MATERIAL_COUNT] = {
#define XX(id, name, text, rgb) [id] = { text, rgb },
	MATERIAL_MAP(XX)
#undef XX
};

const char *material_name(int id)
{
	return id >= 0 && id < MATERIAL_COUNT ? table[id].name : NULL;
}

uint32_t material_rgb(int id)
{
	return id >= 0 && id < MATERIAL_COUNT ? table[id].rgb : 0x808080;
}

/* 0 below a - soft / 2, 1 above a + soft / 2, a smoothstep between. */
static double up(double x, double a, double soft)
{
	double t = (x - a) / soft + 0.5;

	t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
	return t * t * (3.0 - 2.0 * t);
}

static double down(double x, double b, double soft)
{
	return 1.0 - up(x, b, soft);
}

/*
 * The dominant material: hr metres above sea level, rel = hr relative to
 * the highest land, slope in metres per metre, moisture in [-1, 1].
 */
static uint8_t classify(double hr, double rel, double slope, double moist)
{
	double w[MATERIAL_COUNT];
	double rock_slope = up(slope, 1.1, 0.4), high = up(rel, 0.6, 0.15) * 0.8;
	uint8_t best = 0;
	int k;

	w[MATERIAL_WATER] = hr < 0.0 ? 10.0 : 0.0;
	w[MATERIAL_SAND] = down(hr, 4.0, 3.0) * down(slope, 0.8, 0.4);
	w[MATERIAL_GRASS] = down(rel, 0.5, 0.1) * down(slope, 1.0, 0.3) *
			    down(moist, 0.2, 0.3);
	w[MATERIAL_FOREST] = down(rel, 0.6, 0.1) * down(slope, 1.2, 0.3) *
			     up(moist, -0.1, 0.3) * up(hr, 5.0, 2.0);
	w[MATERIAL_ROCK] = rock_slope > high ? rock_slope : high;
	w[MATERIAL_SNOW] = 1.2 * up(rel, 0.72, 0.08) * down(slope, 1.5, 0.4);
	for (k = 1; k < MATERIAL_COUNT; k++)
		if (w[k] > w[best])
			best = (uint8_t)k;
	return best;
}

int material_classify(const struct preset *p, uint64_t seed, int lod, int64_t x0,
		      int64_t z0, uint32_t w, uint32_t h, const int32_t *bordered,
		      uint8_t *out)
{
	const struct fbm_params mp = { NOISE_SIMPLEX, FBM_PLAIN, 3, 1500.0, 0.5, 2.0, 2.0 };
	double q, step, land;
	struct fbm_scratch s;
	struct fbm f;
	float *moist;
	uint32_t i, j, bw = w + 2;

	if (!p || !bordered || !out || w < 1 || h < 1 || lod < 0 || lod > p->chunk_log2)
		return ERR_INVAL;
	q = p->quantum_um / 1e6;
	step = (double)(INT64_C(1) << lod);
	land = p->hmax - p->sea_level;
	moist = malloc(w * sizeof(*moist));
	if (!moist || fbm_scratch_init(&s, w)) {
		free(moist);
		return ERR_NOMEM;
	}
	fbm_init(&f, &mp, seed, 0x4d4f4953U);   /* "MOIS" */
	for (j = 0; j < h; j++) {
		const int32_t *r = bordered + (size_t)(j + 1) * bw + 1;

		fbm_row(&f, x0, (int64_t)1 << lod, z0 + (int64_t)j * ((int64_t)1 << lod),
			NULL, NULL, w, moist, &s);
		for (i = 0; i < w; i++) {
			const int32_t *c = r + i;   /* neighbours at c[-1], c[+-bw] */
			double dx = (double)(c[1] - c[-1]) * q / (2.0 * step);
			double dz = (double)(c[bw] - c[-(ptrdiff_t)bw]) * q / (2.0 * step);
			double hr = (double)c[0] * q - p->sea_level;

			out[(size_t)j * w + i] = classify(hr, land > 0.0 ? hr / land : 0.0,
							 sqrt(dx * dx + dz * dz),
							 (double)moist[i]);
		}
	}
	fbm_scratch_release(&s);
	free(moist);
	return 0;
}
