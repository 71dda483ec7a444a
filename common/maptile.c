/*
 * maptile.c - the web map pyramid and the pixels of its tiles (see
 * maptile.h).
 */
#include "maptile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "err.h"
#include "material.h"
#include "pipeline.h"
#include "preset.h"

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ---- the pyramid ------------------------------------------------------------- */

int maptile_min_zoom(const struct preset *p)
{
	int depth = preset_max_lod(p);

	if (depth > MAPTILE_MAX_DEPTH)
		depth = MAPTILE_MAX_DEPTH;
	if (preset_is_eroded(p) && depth > MAPTILE_ERODED_DEPTH)
		depth = MAPTILE_ERODED_DEPTH;
	return MAPTILE_MAX_ZOOM - depth;
}

/* Whether the samples x0 - step .. x0 + 256 * step lie in the squares of
 * the int32 chunk grid (of 2^chunk_log2 metres; the last one's east edge
 * included). */
static int in_grid(int64_t x0, int64_t step, int chunk_log2)
{
	int64_t c = INT64_C(1) << chunk_log2;

	return floor_div(x0 - step, c) >= INT32_MIN &&
	       x0 + MAPTILE_SIZE * step <= ((int64_t)INT32_MAX + 1) * c;
}

int maptile_block(const struct preset *p, int z, uint32_t x, uint32_t y, int64_t ox,
		  int64_t oz, struct maptile_block *out)
{
	int64_t step;

	if (!p || !out || z < maptile_min_zoom(p) || z > MAPTILE_MAX_ZOOM ||
	    (uint64_t)x >= (UINT64_C(1) << z) || (uint64_t)y >= (UINT64_C(1) << z))
		return ERR_RANGE;
	out->lod = MAPTILE_MAX_ZOOM - z;
	step = INT64_C(1) << out->lod;
	out->x0 = ox + (int64_t)x * MAPTILE_SIZE * step - MAPTILE_HALF;
	out->z0 = oz + (int64_t)y * MAPTILE_SIZE * step - MAPTILE_HALF;
	if (!in_grid(out->x0, step, preset_chunk_log2(p)) ||
	    !in_grid(out->z0, step, preset_chunk_log2(p)))
		return ERR_RANGE;
	return 0;
}

/* ---- heights ------------------------------------------------------------------ */

/* The first and one-past-last index i (of n) whose position x0 + i * step
 * lies in [lo, hi]. */
static void index_range(int64_t x0, int64_t step, uint32_t n, int64_t lo, int64_t hi,
			uint32_t *i0, uint32_t *i1)
{
	int64_t a = lo <= x0 ? 0 : (lo - x0 + step - 1) / step;
	int64_t b = hi < x0 ? -1 : (hi - x0) / step;

	if (b > (int64_t)n - 1)
		b = (int64_t)n - 1;
	*i0 = (uint32_t)(a > b ? 0 : a);
	*i1 = (uint32_t)(a > b ? 0 : b + 1);
}

/* Copy the sw x sh sub-block at (i0, j0) of the w-wide block from (to 0)
 * or into (to 1) sub. */
static void sub_copy(int32_t *blk, uint32_t w, uint32_t i0, uint32_t j0, uint32_t sw,
		     uint32_t sh, int32_t *sub, int to)
{
	uint32_t j;

	for (j = 0; j < sh; j++) {
		int32_t *row = blk + (size_t)(j0 + j) * w + i0;

		if (to)
			memcpy(row, sub + (size_t)j * sw, sw * sizeof(*sub));
		else
			memcpy(sub + (size_t)j * sw, row, sw * sizeof(*sub));
	}
}

int maptile_heights(const struct preset *p, uint64_t seed, int lod, int64_t x0,
		    int64_t z0, uint32_t w, uint32_t h, const struct region_source *rs,
		    int32_t *out)
{
	int64_t step = INT64_C(1) << lod, c, gx, gz;
	int32_t *sub;
	int rc = 0;

	if (!p || !out || lod < 0 || lod > preset_chunk_log2(p) || w < 1 || h < 1)
		return ERR_INVAL;
	if (!preset_is_eroded(p))
		return pipeline_heights(p, seed, lod, x0, z0, w, h, rs, out);
	/* eroded: chunk-sized pieces, each within the 3 x 3 regions that
	 * pipeline_heights() takes at once */
	c = INT64_C(1) << preset_chunk_log2(p);
	if (!(sub = malloc(((size_t)c / (size_t)step) * ((size_t)c / (size_t)step) *
			   sizeof(*sub))))
		return ERR_NOMEM;
	for (gz = floor_div(z0, c); !rc && gz <= floor_div(z0 + (int64_t)(h - 1) * step, c); gz++)
		for (gx = floor_div(x0, c); !rc && gx <= floor_div(x0 + (int64_t)(w - 1) * step, c);
		     gx++) {
			uint32_t i0, i1, j0, j1;

			index_range(x0, step, w, gx * c, gx * c + c - 1, &i0, &i1);
			index_range(z0, step, h, gz * c, gz * c + c - 1, &j0, &j1);
			rc = pipeline_heights(p, seed, lod, x0 + (int64_t)i0 * step,
					      z0 + (int64_t)j0 * step, i1 - i0, j1 - j0, rs, sub);
			if (!rc)
				sub_copy(out, w, i0, j0, i1 - i0, j1 - j0, sub, 1);
		}
	free(sub);
	return rc;
}

int maptile_apply_chunk(const struct bake_chunk *c, int chunk_log2, int32_t *blk,
			int64_t x0, int64_t z0, int lod, uint32_t w, uint32_t hgt,
			uint32_t quantum_um)
{
	int64_t size = INT64_C(1) << chunk_log2, step = INT64_C(1) << lod;
	int64_t bx = (int64_t)c->cx * size, bz = (int64_t)c->cz * size;
	struct bake_layer l = { chunk_log2, c, 1 };
	uint32_t i0, i1, j0, j1, sw, sh;
	int32_t *sub;
	int rc;

	index_range(x0, step, w, bx, bx + size - 1, &i0, &i1);
	index_range(z0, step, hgt, bz, bz + size - 1, &j0, &j1);
	if (i0 >= i1 || j0 >= j1)
		return 0;
	sw = i1 - i0;
	sh = j1 - j0;
	if (!(sub = malloc((size_t)sw * sh * sizeof(*sub))))
		return ERR_NOMEM;
	sub_copy(blk, w, i0, j0, sw, sh, sub, 0);
	rc = bake_apply(&l, sub, x0 + (int64_t)i0 * step, z0 + (int64_t)j0 * step, lod, sw, sh,
			quantum_um);
	if (!rc)
		sub_copy(blk, w, i0, j0, sw, sh, sub, 1);
	free(sub);
	return rc;
}

/* ---- Terrarium ---------------------------------------------------------------- */

void maptile_terrarium(const int32_t *q, size_t n, uint32_t quantum_um, uint8_t *rgb)
{
	const int64_t den = 2000000; /* 2 * 10^6: round half up of num / 10^6 */
	size_t k;

	for (k = 0; k < n; k++) {
		/* |q * quantum_um * 256| < 2^31 * 2^20 * 2^8 = 2^59 */
		int64_t num = (int64_t)q[k] * (int64_t)quantum_um * 256;
		int64_t v = floor_div(2 * num + 1000000, den) +
			    (int64_t)MAPTILE_TERRARIUM_OFFSET * 256;

		if (v < 0)
			v = 0;
		if (v > 0xffffff)
			v = 0xffffff;
		rgb[3 * k] = (uint8_t)(v >> 16);
		rgb[3 * k + 1] = (uint8_t)(v >> 8);
		rgb[3 * k + 2] = (uint8_t)v;
	}
}

double maptile_terrarium_metres(const uint8_t rgb[3])
{
	return (double)rgb[0] * 256.0 + (double)rgb[1] + (double)rgb[2] / 256.0 -
	       MAPTILE_TERRARIUM_OFFSET;
}

/* ---- the shaded picture -------------------------------------------------------- */

#define DEEP_RGB 0x0b2545       /* deep water */
#define DEEP_M 150.0            /* depth at which water is darkest */
#define FLAT_LIGHT 0.70710678118654752 /* the light on flat ground: sin 45 */

/* Channel k (16: red, 8: green, 0: blue) of rgb. */
static double chan(uint32_t rgb, int k)
{
	return (double)((rgb >> k) & 0xff);
}

static uint8_t to_byte(double v)
{
	return v <= 0.0 ? 0 : v >= 255.0 ? 255 : (uint8_t)(v + 0.5);
}

/* The light on ground with slopes dx, dz (rise per metre east, south),
 * relative to flat ground: the cosine between its normal (-dx, 1, -dz)
 * and the light from the north-west, 45 degrees up ((-1/2, sqrt(1/2),
 * -1/2)), over sin 45; 0 in shadow. Steep ground is lit as if gentler
 * (the presets' median slopes are 0.8 to 2.9), so cliffs keep their
 * colour, as in the viewer (server/assets/shade.js). */
static double light(double dx, double dz, double ex)
{
	double s = sqrt(dx * dx + dz * dz), k = ex / (1.0 + 0.3 * s), ax = dx * k, az = dz * k;
	double v = (0.5 * ax + FLAT_LIGHT + 0.5 * az) / sqrt(1.0 + ax * ax + az * az);

	return v > 0.0 ? v / FLAT_LIGHT : 0.0;
}

int maptile_shade(const struct preset *p, uint64_t seed, int lod, int64_t x0, int64_t z0,
		  uint32_t w, uint32_t h, const int32_t *bordered, uint8_t *rgb)
{
	double qm, sea, ex, inv;
	uint8_t *ids;
	uint32_t i, j, bw = w + 2;
	int rc;

	if (!p || !bordered || !rgb || w < 1 || h < 1)
		return ERR_INVAL;
	if (!(ids = malloc((size_t)w * h)))
		return ERR_NOMEM;
	rc = material_classify(p, seed, lod, x0, z0, w, h, bordered, ids);
	if (rc) {
		free(ids);
		return rc;
	}
	qm = preset_quantum_um(p) / 1e6;
	sea = preset_sea_level(p);
	/* relief flattens as pixels grow: a little exaggerated at coarse LODs */
	ex = 0.9 + 0.08 * lod;
	inv = qm / (2.0 * (double)(INT64_C(1) << lod));
	for (j = 0; j < h; j++)
		for (i = 0; i < w; i++) {
			const int32_t *c = bordered + (size_t)(j + 1) * bw + (i + 1);
			double dx = ((double)c[1] - (double)c[-1]) * inv;
			double dz = ((double)c[bw] - (double)c[-(ptrdiff_t)bw]) * inv;
			double f = light(dx, dz, ex), hm = c[0] * qm, t = 0.0;
			int id = ids[(size_t)j * w + i], k;
			uint32_t base = material_rgb(id);
			uint8_t *out = rgb + 3 * ((size_t)j * w + i);

			if (id == MATERIAL_WATER) {
				t = (sea - hm) / DEEP_M;
				t = t < 0.0 ? 0.0 : t > 1.0 ? 0.8 : 0.8 * t;
				f = 0.86 + 0.14 * (f < 1.3 ? f : 1.3);
			} else {
				f = 0.45 + 0.6 * (f < 1.45 ? f : 1.45);
			}
			for (k = 0; k < 3; k++) {
				int sh = 16 - 8 * k;
				double v = chan(base, sh) + t * (chan(DEEP_RGB, sh) - chan(base, sh));

				out[k] = to_byte(v * f);
			}
		}
	free(ids);
	return 0;
}
