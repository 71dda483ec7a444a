/*
 * scatter.c - trees and rocks on a jittered world grid (see scatter.h).
 *
 * The ground under a rectangle comes from one LOD-0 block of heights with
 * a border of two samples (pipeline_heights(), edits applied) and its
 * materials; a candidate reads the material of the sample at its floor
 * position, the bilinear height, and the slope of its cell's four samples.
 * Everything that decides is a hash of the candidate's world cell and the
 * seed, or a pure function of the ground, so any rectangle gives the same
 * objects for the cells it shares with another.
 */
#include "scatter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "edit.h"
#include "err.h"
#include "fbm.h"
#include "le.h"
#include "material.h"
#include "node.h"
#include "pipeline.h"
#include "preset.h"

#define BORDER 2   /* samples around the rectangle: neighbours of neighbours */

static const char *const type_names[SCATTER_TYPE_COUNT] = {
#define XX(id, name, text) [id] = text,
	SCATTER_TYPE_MAP(XX)
#undef XX
};

const char *scatter_type_name(int type)
{
	return type >= 0 && type < SCATTER_TYPE_COUNT ? type_names[type] : NULL;
}

/* Per material: chance that a candidate holds an object, the share of
 * each type among them, and the steepest slope (m/m) each type stands on. */
static const struct {
	double density;
	double share[SCATTER_TYPE_COUNT];
} by_material[MATERIAL_COUNT] = {
	[MATERIAL_WATER] = { 0.0, { 0, 0, 0, 0 } },
	[MATERIAL_SAND] = { 0.04, { 0, 0, 0.3, 0.7 } },
	[MATERIAL_GRASS] = { 0.12, { 0.1, 0.35, 0.45, 0.1 } },
	[MATERIAL_FOREST] = { 0.6, { 0.55, 0.35, 0.1, 0 } },
	[MATERIAL_ROCK] = { 0.08, { 0.1, 0, 0, 0.9 } },
	[MATERIAL_SNOW] = { 0.02, { 0.5, 0, 0, 0.5 } },
};

static const double max_slope[SCATTER_TYPE_COUNT] = {
	[SCATTER_CONIFER] = 1.0, [SCATTER_BROADLEAF] = 0.7,
	[SCATTER_BUSH] = 1.1, [SCATTER_ROCK] = 2.0,
};

static double unit(uint64_t h)   /* [0, 1) from the top 53 bits */
{
	return (double)(h >> 11) * 0x1p-53;
}

struct ground {
	const struct preset *p;
	int64_t bx, bz;      /* world position of block sample (0, 0) */
	uint32_t bw, bh;     /* block size, with the border */
	int32_t *h;          /* heights, quanta */
	uint8_t *mat;        /* materials of the block minus one sample */
	double q;            /* metres per quantum */
};

/* Make the ground of [x0, x0 + w] x [z0, z0 + h] plus the border. */
static int ground_make(struct ground *g, const struct preset *p, uint64_t seed,
		       int64_t x0, int64_t z0, int64_t w, int64_t h,
		       const struct region_source *rs, const struct edit *edits, size_t n,
		       const struct bake_layer *bl)
{
	int rc;

	g->p = p;
	g->bx = x0 - BORDER;
	g->bz = z0 - BORDER;
	g->bw = (uint32_t)(w + 1 + 2 * BORDER);
	g->bh = (uint32_t)(h + 1 + 2 * BORDER);
	g->q = preset_quantum_um(p) / 1e6;
	g->h = malloc((size_t)g->bw * g->bh * sizeof(*g->h));
	g->mat = malloc((size_t)(g->bw - 2) * (g->bh - 2));
	if (!g->h || !g->mat)
		return ERR_NOMEM;
	rc = pipeline_heights(p, seed, 0, g->bx, g->bz, g->bw, g->bh, rs, g->h);
	if (rc)
		return rc;
	if (bl)
		rc = bake_apply(bl, g->h, g->bx, g->bz, 0, g->bw, g->bh, preset_quantum_um(p));
	else
		edit_apply_block(g->h, g->bx, g->bz, 0, g->bw, g->bh, preset_quantum_um(p),
				 edits, n);
	if (rc)
		return rc;
	return material_classify(p, seed, 0, g->bx + 1, g->bz + 1, g->bw - 2, g->bh - 2,
				 g->h, g->mat);
}

static void ground_free(struct ground *g)
{
	free(g->h);
	free(g->mat);
}

static double ground_h(const struct ground *g, int64_t x, int64_t z)
{
	return (double)g->h[(size_t)(z - g->bz) * g->bw + (size_t)(x - g->bx)] * g->q;
}

/* The object of the candidate in cell (gx, gz), if any. */
static int candidate(const struct ground *g, uint64_t seed, const struct fbm *density,
		     struct fbm_scratch *s, int64_t gx, int64_t gz, struct scatter_object *o)
{
	uint64_t h = fbm_mix64(seed ^ fbm_mix64((uint64_t)gx * 0x9e3779b97f4a7c15ULL ^
						(uint64_t)gz * 0xc2b2ae3d27d4eb4fULL ^
						0x5ca77e2ULL));
	int64_t x_mm = gx * SCATTER_CELL * 1000 + (int64_t)(h % (SCATTER_CELL * 1000));
	int64_t z_mm = gz * SCATTER_CELL * 1000 + (int64_t)((h >> 20) % (SCATTER_CELL * 1000));
	int64_t x, z;
	double fx, fz, h00, h10, h01, h11, sx, sz, slope, y, pick, d;
	uint64_t h2 = fbm_mix64(h);
	int mat, t;
	float dens;

	/* the sample at or below the position: floor, negative positions too */
	x = x_mm >= 0 ? x_mm / 1000 : -((-x_mm + 999) / 1000);
	z = z_mm >= 0 ? z_mm / 1000 : -((-z_mm + 999) / 1000);
	fx = (double)(x_mm - x * 1000) / 1000.0;
	fz = (double)(z_mm - z * 1000) / 1000.0;
	h00 = ground_h(g, x, z);
	h10 = ground_h(g, x + 1, z);
	h01 = ground_h(g, x, z + 1);
	h11 = ground_h(g, x + 1, z + 1);
	sx = ((h10 - h00) + (h11 - h01)) * 0.5;
	sz = ((h01 - h00) + (h11 - h10)) * 0.5;
	slope = sqrt(sx * sx + sz * sz);
	y = (h00 + fx * (h10 - h00)) + fz * ((h01 + fx * (h11 - h01)) - (h00 + fx * (h10 - h00)));
	mat = g->mat[(size_t)(z - g->bz - 1) * (g->bw - 2) + (size_t)(x - g->bx - 1)];
	if (y < preset_sea_level(g->p) || mat == MATERIAL_WATER)
		return 0;
	fbm_row(density, x, 1, z, NULL, NULL, 1, &dens, s);
	d = by_material[mat].density * (0.5 + 0.5 * (double)dens) * 2.0;
	if (unit(h2) >= d)
		return 0;
	pick = unit(fbm_mix64(h2));
	for (t = 0; t < SCATTER_TYPE_COUNT; t++) {
		pick -= by_material[mat].share[t];
		if (pick < 0.0)
			break;
	}
	if (t == SCATTER_TYPE_COUNT || slope > max_slope[t])
		return 0;
	o->type = (uint8_t)t;
	o->x_mm = x_mm;
	o->z_mm = z_mm;
	o->y_um = (int64_t)floor(y * 1e6 + 0.5);
	o->rotation = (uint16_t)(h2 >> 48);
	o->scale = (uint16_t)(700 + (h2 >> 20) % 601);
	return 1;
}

/* scatter_area() with the edits as a list or as a baked layer. */
static int scatter_with(const struct preset *p, uint64_t seed, int64_t x0, int64_t z0,
			int64_t w, int64_t h, const struct region_source *rs,
			const struct edit *edits, size_t n, const struct bake_layer *bl,
			struct scatter_object **out, size_t *count)
{
	const struct fbm_params dp = { NOISE_VALUE_QUINTIC, FBM_PLAIN, 3, 400.0, 0.5, 2.0, 2.0 };
	struct ground g = { 0 };
	struct fbm_scratch s;
	struct scatter_object *v;
	struct fbm density;
	size_t k = 0;
	int64_t gx, gz;
	int rc;

	*out = NULL;
	*count = 0;
	if (!p || w <= 0 || h <= 0 || w > 4096 || h > 4096 || x0 % SCATTER_CELL ||
	    z0 % SCATTER_CELL || w % SCATTER_CELL || h % SCATTER_CELL)
		return ERR_INVAL;
	v = malloc((size_t)(w / SCATTER_CELL) * (size_t)(h / SCATTER_CELL) * sizeof(*v));
	if (!v || fbm_scratch_init(&s, 1)) {
		free(v);
		return ERR_NOMEM;
	}
	fbm_init(&density, &dp, seed, 0x5ca77e2U);
	rc = ground_make(&g, p, seed, x0, z0, w, h, rs, edits, n, bl);
	for (gz = z0 / SCATTER_CELL; !rc && gz < (z0 + h) / SCATTER_CELL; gz++)
		for (gx = x0 / SCATTER_CELL; gx < (x0 + w) / SCATTER_CELL; gx++)
			k += (size_t)candidate(&g, seed, &density, &s, gx, gz, &v[k]);
	ground_free(&g);
	fbm_scratch_release(&s);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*count = k;
	return 0;
}

int scatter_area(const struct preset *p, uint64_t seed, int64_t x0, int64_t z0,
		 int64_t w, int64_t h, const struct region_source *rs,
		 const struct edit *edits, size_t n, struct scatter_object **out,
		 size_t *count)
{
	return scatter_with(p, seed, x0, z0, w, h, rs, edits, n, NULL, out, count);
}

int scatter_chunk(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
		  const struct region_source *rs, const struct edit *edits, size_t n,
		  struct scatter_object **out, size_t *count)
{
	int64_t c = (int64_t)1 << preset_chunk_log2(p);

	return scatter_area(p, seed, (int64_t)cx * c, (int64_t)cz * c, c, c, rs, edits, n,
			    out, count);
}

int scatter_chunk_baked(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
			const struct region_source *rs, const struct bake_layer *bl,
			struct scatter_object **out, size_t *count)
{
	int64_t c = (int64_t)1 << preset_chunk_log2(p);

	return scatter_with(p, seed, (int64_t)cx * c, (int64_t)cz * c, c, c, rs, NULL, 0, bl,
			    out, count);
}

void scatter_encode(const struct scatter_object *o, uint8_t out[SCATTER_WIRE_SIZE])
{
	memset(out, 0, SCATTER_WIRE_SIZE);
	out[0] = o->type;
	le_put16(out + 2, o->rotation);
	le_put16(out + 4, o->scale);
	le_put64(out + 8, o->x_mm);
	le_put64(out + 16, o->z_mm);
	le_put64(out + 24, o->y_um);
}
