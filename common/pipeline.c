/*
 * pipeline.c - heights and tiles of a world from its preset (pipeline.h):
 * the rows of pipeline_eval.c quantised into height grids, eroded presets
 * through their regions (generated, eroded and cross-faded here, or shared
 * through a region_source), edits and the material layer for served tiles,
 * and workspaces that keep the buffers from one tile to the next.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "edit.h"
#include "err.h"
#include "material.h"
#include "node.h"
#include "pipeline.h"
#include "pipeline_int.h"
#include "preset.h"
#include "simd.h"
#include "tile.h"

/* Map a row of [-1, 1] values to quanta: round-half-up of metres / quantum. */
CLONES
static void quantise(const struct preset *p, const float *v, size_t n, int32_t *out)
{
	double half = 0.5 * (p->hmax - p->hmin), mid = p->hmin + half;
	double inv_q = 1e6 / p->quantum_um;
	size_t i;

	for (i = 0; i < n; i++) {
		double h = mid + half * (double)clamp1(v[i]);

		out[i] = (int32_t)floor(h * inv_q + 0.5);
	}
}

/* ---------------------------------------------------------------- regions */

size_t pipeline_region_side(const struct preset *p)
{
	return ((size_t)1 << p->region_log2) + (size_t)p->band + 2 * (size_t)p->apron;
}

void pipeline_region_origin(const struct preset *p, int64_t rx, int64_t rz,
			    int64_t *x0, int64_t *z0)
{
	int64_t r = INT64_C(1) << p->region_log2, shift = (INT64_C(1) << p->chunk_log2) / 2;
	int64_t pad = p->band / 2 + p->apron;

	*x0 = rx * r + shift - pad;
	*z0 = rz * r + shift - pad;
}

int pipeline_region(const struct preset *p, uint64_t seed, int64_t rx, int64_t rz,
		    float *out)
{
	size_t side = pipeline_region_side(p), i, j;
	double half = 0.5 * (p->hmax - p->hmin), mid = p->hmin + half;
	struct ctx *c = NULL;
	struct pos pos;
	int64_t x0, z0;

	if (!p->eroded || !out)
		return ERR_INVAL;
	if (!pipeline__ctx_prepare(&c, p, seed, side, side - 1))
		return ERR_NOMEM;
	pipeline_region_origin(p, rx, rz, &x0, &z0);
	pos = (struct pos){ x0, 1, 0, NULL, NULL, side };
	for (j = 0; j < side; j++) {
		const float *v;

		pos.z = z0 + (int64_t)j;
		v = pipeline__eval(c, p->root, &pos);
		for (i = 0; i < side; i++)
			out[j * side + i] = (float)(mid + half * (double)clamp1(v[i]));
	}
	pipeline__ctx_release(c);
	return erosion_droplets(out, (int)side, (int)side, x0, z0, seed, &p->ero, NULL);
}

/*
 * The regions whose band x lies in, with their blend weights: region k spans
 * the borders b_k = k * region + chunk / 2 to b_(k+1); within band / 2 of a
 * border the two regions cross-fade by a smoothstep of the position.
 * Returns 1 or 2.
 */
static int axis_regions(const struct preset *p, int64_t x, int64_t k[2], double w[2])
{
	int64_t r = INT64_C(1) << p->region_log2, shift = (INT64_C(1) << p->chunk_log2) / 2;
	int64_t hb = p->band / 2;
	int64_t k0 = floor_div(x - shift, r), lo = k0 * r + shift, hi = lo + r;
	double t, s;

	if (x >= lo + hb && x < hi - hb) {
		k[0] = k0;
		w[0] = 1.0;
		return 1;
	}
	t = x < lo + hb ? (double)(x - (lo - hb)) / (double)p->band
			: (double)(x - (hi - hb)) / (double)p->band;
	s = t * t * (3.0 - 2.0 * t);
	k[0] = x < lo + hb ? k0 - 1 : k0;
	k[1] = k[0] + 1;
	w[0] = 1.0 - s;
	w[1] = s;
	return 2;
}

#define MAX_REGIONS 9

struct region_set {
	int64_t kx0, kz0;
	int nx, nz;
	const float *map[MAX_REGIONS];
	int local;                 /* maps are ours to free */
};

static void regions_put(struct region_set *rs, const struct region_source *src)
{
	int k;

	for (k = 0; k < rs->nx * rs->nz; k++) {
		if (!rs->map[k])
			continue;
		if (rs->local)
			free((void *)rs->map[k]);
		else
			src->release(src->ctx, rs->map[k]);
	}
}

/* Acquire every region that samples in [x0, x1] x [z0, z1] need. */
static int regions_get(struct region_set *rs, const struct preset *p, uint64_t seed,
		       int64_t x0, int64_t z0, int64_t x1, int64_t z1,
		       const struct region_source *src)
{
	int64_t k[2], kx1, kz1;
	double w[2];
	int n, i;

	n = axis_regions(p, x0, k, w);
	rs->kx0 = k[0];
	n = axis_regions(p, x1, k, w);
	kx1 = k[n - 1];
	n = axis_regions(p, z0, k, w);
	rs->kz0 = k[0];
	n = axis_regions(p, z1, k, w);
	kz1 = k[n - 1];
	rs->nx = (int)(kx1 - rs->kx0 + 1);
	rs->nz = (int)(kz1 - rs->kz0 + 1);
	rs->local = src == NULL;
	if (rs->nx * rs->nz > MAX_REGIONS)
		return ERR_INVAL;
	for (i = 0; i < rs->nx * rs->nz; i++)
		rs->map[i] = NULL;
	for (i = 0; i < rs->nx * rs->nz; i++) {
		int64_t rx = rs->kx0 + i % rs->nx, rz = rs->kz0 + i / rs->nx;

		if (src) {
			rs->map[i] = src->acquire(src->ctx, p, seed, rx, rz);
		} else {
			size_t side = pipeline_region_side(p);
			float *m = malloc(side * side * sizeof(float));

			if (m && pipeline_region(p, seed, rx, rz, m)) {
				free(m);
				m = NULL;
			}
			rs->map[i] = m;
		}
		if (!rs->map[i]) {
			regions_put(rs, src);
			return ERR_NOMEM;
		}
	}
	return 0;
}

/* The eroded height at world (x, z), blended across region bands. */
static double eroded_at(const struct preset *p, const struct region_set *rs, int64_t x,
			int64_t z)
{
	size_t side = pipeline_region_side(p);
	int64_t kx[2], kz[2];
	double wx[2], wz[2], h = 0.0;
	int nx = axis_regions(p, x, kx, wx), nz = axis_regions(p, z, kz, wz), a, b;

	for (b = 0; b < nz; b++)
		for (a = 0; a < nx; a++) {
			int idx = (int)((kz[b] - rs->kz0) * rs->nx + (kx[a] - rs->kx0));
			int64_t ox, oz;

			pipeline_region_origin(p, kx[a], kz[b], &ox, &oz);
			h += wz[b] * wx[a] *
			     (double)rs->map[idx][(size_t)(z - oz) * side + (size_t)(x - ox)];
		}
	return h;
}

static int heights_eroded(const struct preset *p, uint64_t seed, int64_t x0, int64_t z0,
			  int64_t step, uint32_t w, uint32_t h,
			  const struct region_source *src, int32_t *out)
{
	double inv_q = 1e6 / p->quantum_um;
	struct region_set rs;
	uint32_t i, j;
	int rc;

	rc = regions_get(&rs, p, seed, x0, z0, x0 + (int64_t)(w - 1) * step,
			 z0 + (int64_t)(h - 1) * step, src);
	if (rc)
		return rc;
	for (j = 0; j < h; j++)
		for (i = 0; i < w; i++) {
			double v = eroded_at(p, &rs, x0 + (int64_t)i * step, z0 + (int64_t)j * step);

			v = v < p->hmin ? p->hmin : v > p->hmax ? p->hmax : v;
			out[(size_t)j * w + i] = (int32_t)floor(v * inv_q + 0.5);
		}
	regions_put(&rs, src);
	return 0;
}

/* ---------------------------------------------------------------- grids */

/* pipeline_heights() with the context kept in *slot (pipeline__ctx_prepare()). */
static int heights_in(struct ctx **slot, const struct preset *p, uint64_t seed, int lod,
		      int64_t x0, int64_t z0, uint32_t w, uint32_t h,
		      const struct region_source *rs, int32_t *out)
{
	int64_t step;
	struct ctx *c;
	struct pos pos;
	uint32_t j;

	if (!p || !out || lod < 0 || lod > p->chunk_log2 || w < 1 || h < 1 ||
	    w > 65536 || h > 65536)
		return ERR_INVAL;
	step = INT64_C(1) << lod;
	if ((x0 & (step - 1)) || (z0 & (step - 1)))
		return ERR_INVAL;
	if (p->eroded)
		return heights_eroded(p, seed, x0, z0, step, w, h, rs, out);
	c = pipeline__ctx_prepare(slot, p, seed, w, (size_t)(w - 1) * (size_t)step);
	if (!c)
		return ERR_NOMEM;
	pos = (struct pos){ x0, step, 0, NULL, NULL, w };
	for (j = 0; j < h; j++) {
		pos.z = z0 + (int64_t)j * step;
		quantise(p, pipeline__eval(c, p->root, &pos), w, out + (size_t)j * w);
	}
	return 0;
}

int pipeline_heights(const struct preset *p, uint64_t seed, int lod, int64_t x0,
		     int64_t z0, uint32_t w, uint32_t h, const struct region_source *rs,
		     int32_t *out)
{
	struct ctx *c = NULL;
	int rc = heights_in(&c, p, seed, lod, x0, z0, w, h, rs, out);

	pipeline__ctx_release(c);
	return rc;
}

int pipeline_generate_with(const struct preset *p, uint64_t seed, int lod,
			   int32_t cx, int32_t cz, const struct region_source *rs,
			   struct tile *out)
{
	int64_t chunk;
	int rc;

	if (!p || !out || lod < 0 || lod > p->chunk_log2)
		return ERR_INVAL;
	rc = tile_init(out, p->chunk_log2, lod);
	if (rc)
		return rc;
	out->fingerprint = p->fingerprint;
	out->seed = seed;
	out->cx = cx;
	out->cz = cz;
	out->quantum_um = p->quantum_um;
	chunk = INT64_C(1) << p->chunk_log2;
	rc = pipeline_heights(p, seed, lod, (int64_t)cx * chunk, (int64_t)cz * chunk,
			      out->side, out->side, rs, out->h);
	if (rc)
		tile_release(out);
	return rc;
}

int pipeline_generate(const struct preset *p, uint64_t seed, int lod,
		      int32_t cx, int32_t cz, struct tile *out)
{
	return pipeline_generate_with(p, seed, lod, cx, cz, NULL, out);
}

/* ---------------------------------------------------------------- served tiles */

/* Apply the edits (a list, or a baked layer when bl) to a block. */
static int apply_edits(const struct preset *p, int32_t *h, int64_t x0, int64_t z0, int lod,
		       uint32_t w, uint32_t hgt, const struct edit *edits, size_t n,
		       const struct bake_layer *bl)
{
	if (bl)
		return bake_apply(bl, h, x0, z0, lod, w, hgt, p->quantum_um);
	edit_apply_block(h, x0, z0, lod, w, hgt, p->quantum_um, edits, n);
	return 0;
}

/* The header fields of the tile of chunk (cx, cz) at lod of world (p, seed). */
static void tile_fields(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
			uint64_t edit_seq, struct tile *t)
{
	t->fingerprint = p->fingerprint;
	t->seed = seed;
	t->cx = cx;
	t->cz = cz;
	t->quantum_um = p->quantum_um;
	t->edit_seq = edit_seq;
}

/*
 * The heights (edited) and, with PIPELINE_LAYER_MATERIAL, the materials of
 * tile t, whose shape, h and material the caller set up: side * side
 * values each. blk holds (side + 2)^2 heights of scratch when there is a
 * material layer: materials need each sample's neighbours, so the block
 * one sample wider is generated and edited, and the tile is its interior.
 */
static int tile_fill(struct ctx **slot, const struct preset *p, uint64_t seed, int lod,
		     const struct region_source *rs, const struct edit *edits, size_t n_edits,
		     const struct bake_layer *bl, unsigned layers, struct tile *t, int32_t *blk)
{
	int64_t chunk = INT64_C(1) << p->chunk_log2, step = INT64_C(1) << lod;
	int64_t x0 = (int64_t)t->cx * chunk, z0 = (int64_t)t->cz * chunk;
	uint32_t side = t->side, n = side + 2, j;
	int rc;

	if (!(layers & PIPELINE_LAYER_MATERIAL)) {
		rc = heights_in(slot, p, seed, lod, x0, z0, side, side, rs, t->h);
		return rc ? rc : apply_edits(p, t->h, x0, z0, lod, side, side, edits, n_edits, bl);
	}
	rc = heights_in(slot, p, seed, lod, x0 - step, z0 - step, n, n, rs, blk);
	if (!rc)
		rc = apply_edits(p, blk, x0 - step, z0 - step, lod, n, n, edits, n_edits, bl);
	if (rc)
		return rc;
	for (j = 0; j < side; j++)
		memcpy(t->h + (size_t)j * side, blk + (size_t)(j + 1) * n + 1, side * sizeof(*blk));
	return material_classify(p, seed, lod, x0, z0, side, side, blk, t->material);
}

static int tile_with(const struct preset *p, uint64_t seed, int lod, int32_t cx, int32_t cz,
		     const struct region_source *rs, const struct edit *edits, size_t n_edits,
		     const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
		     struct tile *out)
{
	struct ctx *c = NULL;
	int32_t *blk = NULL;
	size_t n;
	int rc;

	if (!p || !out || lod < 0 || lod > p->chunk_log2)
		return ERR_INVAL;
	rc = tile_init(out, p->chunk_log2, lod);
	if (rc)
		return rc;
	tile_fields(p, seed, cx, cz, edit_seq, out);
	n = (size_t)out->side + 2;
	if ((layers & PIPELINE_LAYER_MATERIAL) &&
	    ((rc = tile_add_material(out)) != 0 || !(blk = malloc(n * n * sizeof(*blk)))))
		rc = ERR_NOMEM;
	if (!rc)
		rc = tile_fill(&c, p, seed, lod, rs, edits, n_edits, bl, layers, out, blk);
	pipeline__ctx_release(c);
	free(blk);
	if (rc)
		tile_release(out);
	return rc;
}

int pipeline_tile(const struct preset *p, uint64_t seed, int lod, int32_t cx, int32_t cz,
		  const struct region_source *rs, const struct edit *edits, size_t n_edits,
		  uint64_t edit_seq, unsigned layers, struct tile *out)
{
	return tile_with(p, seed, lod, cx, cz, rs, edits, n_edits, NULL, edit_seq, layers, out);
}

int pipeline_tile_baked(const struct preset *p, uint64_t seed, int lod, int32_t cx,
			int32_t cz, const struct region_source *rs, const struct bake_layer *bl,
			uint64_t edit_seq, unsigned layers, struct tile *out)
{
	return tile_with(p, seed, lod, cx, cz, rs, NULL, 0, bl, edit_seq, layers, out);
}

/* ---------------------------------------------------------------- workspaces */

struct pipeline_work {
	struct ctx *ctx;          /* the evaluation context, kept (pipeline__ctx_prepare()) */
	struct tile tile;         /* the last tile; its arrays are the ones below */
	int32_t *h, *blk;
	uint8_t *material;
	size_t h_cap, blk_cap, material_cap;   /* elements */
};

int pipeline_work_create(struct pipeline_work **out)
{
	if (!out)
		return ERR_INVAL;
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : ERR_NOMEM;
}

void pipeline_work_destroy(struct pipeline_work *w)
{
	if (!w)
		return;
	pipeline__ctx_release(w->ctx);
	free(w->h);
	free(w->blk);
	free(w->material);
	free(w);
}

/* *buf holding at least n elements of size each (*cap of them now);
 * 1 when out of memory (*buf is then freed). Contents are not kept. */
static int reserve(void **buf, size_t *cap, size_t n, size_t size)
{
	if (*cap >= n)
		return 0;
	free(*buf);
	*buf = malloc(n * size);
	*cap = *buf ? n : 0;
	return !*buf;
}

size_t pipeline_work_bytes(const struct pipeline_work *w)
{
	size_t b, k, nodes = 0;

	if (!w)
		return 0;
	b = sizeof(*w) + w->h_cap * sizeof(*w->h) + w->blk_cap * sizeof(*w->blk) +
	    w->material_cap;
	if (!w->ctx)
		return b;
	for (k = 0; k < NODE_MAX_COUNT; k++)
		nodes += !!w->ctx->row[k] + !!w->ctx->wx[k] + !!w->ctx->wz[k] +
			 (w->ctx->grid[k] ? 2 * GRID_ROWS : 0);
	return b + sizeof(*w->ctx) + (nodes + 9) * w->ctx->cap * sizeof(float) +
	       4 * w->ctx->gcells_per_octave * sizeof(float);
}

int pipeline_heights_work(struct pipeline_work *w, const struct preset *p, uint64_t seed,
			  int lod, int64_t x0, int64_t z0, uint32_t wd, uint32_t h,
			  const struct region_source *rs, int32_t *out)
{
	if (!w)
		return ERR_INVAL;
	return heights_in(&w->ctx, p, seed, lod, x0, z0, wd, h, rs, out);
}

int pipeline_tile_work(struct pipeline_work *w, const struct preset *p, uint64_t seed,
		       int lod, int32_t cx, int32_t cz, const struct region_source *rs,
		       const struct edit *edits, size_t n_edits, const struct bake_layer *bl,
		       uint64_t edit_seq, unsigned layers, const struct tile **out)
{
	struct tile *t;
	size_t side, n;
	int rc;

	if (!w || !p || !out || lod < 0 || lod > p->chunk_log2)
		return ERR_INVAL;
	*out = NULL;
	t = &w->tile;
	*t = (struct tile){ 0 };
	side = ((size_t)1 << (p->chunk_log2 - lod)) + 1;
	n = side + 2;
	if (reserve((void **)&w->h, &w->h_cap, side * side, sizeof(*w->h)))
		return ERR_NOMEM;
	if ((layers & PIPELINE_LAYER_MATERIAL) &&
	    (reserve((void **)&w->material, &w->material_cap, side * side, 1) ||
	     reserve((void **)&w->blk, &w->blk_cap, n * n, sizeof(*w->blk))))
		return ERR_NOMEM;
	t->lod = (uint8_t)lod;
	t->chunk_log2 = (uint8_t)p->chunk_log2;
	t->side = (uint32_t)side;
	t->h = w->h;
	t->material = (layers & PIPELINE_LAYER_MATERIAL) ? w->material : NULL;
	tile_fields(p, seed, cx, cz, edit_seq, t);
	rc = tile_fill(&w->ctx, p, seed, lod, rs, edits, n_edits, bl, layers, t, w->blk);
	if (!rc)
		*out = t;
	return rc;
}
