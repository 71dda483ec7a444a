/*
 * terrain.c - the public C API of the core (terrain.h): worlds, tiles,
 * heights anywhere, encoding and decoding, checks. A thin layer over the
 * core's modules, the ones the server links: tiles come from tilemake.h
 * (the server's tile path), decoding is tile_decode(), edits are
 * terrain_edits.c's log applied as bake layers. Pure: malloc only, no
 * globals (the built-in presets are constant data).
 */
#include "terrain.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "bake.h"
#include "edit.h"
#include "embed.h"
#include "err.h"
#include "maptile.h"
#include "material.h"
#include "pipeline.h"
#include "preset.h"
#include "seed.h"
#include "selfcheck.h"
#include "terrain_int.h"
#include "tile.h"
#include "tilemake.h"

/* The public codes are the core's. */
static_assert(TERRAIN_ERR_INVAL == ERR_INVAL && TERRAIN_ERR_NOMEM == ERR_NOMEM &&
	      TERRAIN_ERR_RANGE == ERR_RANGE && TERRAIN_ERR_TRUNC == ERR_TRUNC &&
	      TERRAIN_ERR_MAGIC == ERR_MAGIC && TERRAIN_ERR_VERSION == ERR_VERSION &&
	      TERRAIN_ERR_CORRUPT == ERR_CORRUPT && TERRAIN_ERR_CHECKSUM == ERR_CHECKSUM &&
	      TERRAIN_ERR_TOOBIG == ERR_TOOBIG && TERRAIN_ERR_NOTFOUND == ERR_NOTFOUND &&
	      TERRAIN_ERR_PARSE == ERR_PARSE && TERRAIN_ERR_CONFLICT == ERR_CONFLICT,
	      "terrain.h error codes differ from err.h");
static_assert(TERRAIN_LAYER_MATERIAL == PIPELINE_LAYER_MATERIAL, "layer bits differ");
static_assert(TERRAIN_EDIT_SIZE == EDIT_WIRE_SIZE && TERRAIN_BATCH_MAX == EDIT_BATCH_MAX,
	      "edit sizes differ");

/* The 1.0 sizes of the size-first structs: the least a caller may pass. */
#define WORLD_INFO_V1   64
#define TILE_REQUEST_V1 32
#define TILE_INFO_V1    72
static_assert(sizeof(struct terrain_world_info) == WORLD_INFO_V1, "layout");
static_assert(sizeof(struct terrain_tile_request) == TILE_REQUEST_V1, "layout");
static_assert(sizeof(struct terrain_tile_info) == TILE_INFO_V1, "layout");

#define STR2(x) #x
#define STR(x) STR2(x)

/* ---- versions, errors, presets, seeds -------------------------------------- */

uint32_t terrain_version(void)
{
	return TERRAIN_VERSION;
}

const char *terrain_version_string(void)
{
	return STR(TERRAIN_VERSION_MAJOR) "." STR(TERRAIN_VERSION_MINOR) "." STR(
		TERRAIN_VERSION_PATCH);
}

const char *terrain_strerror(int code)
{
	return err_str(code);
}

size_t terrain_preset_count(void)
{
	size_t n = 0;

	while (builtin_presets[n].name)
		n++;
	return n;
}

const char *terrain_preset_name(size_t i)
{
	return i < terrain_preset_count() ? builtin_presets[i].name : NULL;
}

int terrain_seed_parse(const char *text, size_t len, uint64_t *seed)
{
	if (!text || !seed)
		return TERRAIN_ERR_INVAL;
	return seed_parse(text, len, seed);
}

/* ---- worlds ---------------------------------------------------------------- */

static int world_of(struct preset *p, uint64_t seed, struct terrain_world **out)
{
	struct terrain_world *w = malloc(sizeof(*w));

	if (!w) {
		preset_destroy(p);
		return TERRAIN_ERR_NOMEM;
	}
	*w = (struct terrain_world){ p, seed };
	*out = w;
	return 0;
}

int terrain_world_create(const char *preset, uint64_t seed, struct terrain_world **out)
{
	const struct embedded_file *f;
	struct preset *p;
	int rc;

	if (!out)
		return TERRAIN_ERR_INVAL;
	*out = NULL;
	if (!preset)
		preset = "default";
	for (f = builtin_presets; f->name && strcmp(f->name, preset); f++)
		;
	if (!f->name)
		return TERRAIN_ERR_NOTFOUND;
	/* as preset_load_builtin() parses it, so the same fingerprint */
	if ((rc = preset_parse(f->name, f->data, f->len, &p, NULL, 0)) != 0)
		return rc;
	return world_of(p, seed, out);
}

int terrain_world_create_json(const char *json, size_t len, uint64_t seed,
			      struct terrain_world **out, char *msg, size_t msglen)
{
	struct preset *p;
	int rc;

	if (msg && msglen)
		msg[0] = '\0';
	if (!json || !out)
		return TERRAIN_ERR_INVAL;
	*out = NULL;
	if ((rc = preset_parse(NULL, json, len, &p, msg, msglen)) != 0)
		return rc;
	return world_of(p, seed, out);
}

void terrain_world_destroy(struct terrain_world *w)
{
	if (!w)
		return;
	preset_destroy(w->p);
	free(w);
}

/*
 * The caller's struct of *size bytes, seen as ours: a copy in *mine of the
 * first min(size, ours) bytes, the rest zero. ERR_INVAL below v1.
 */
static int read_in(const void *theirs, size_t ours, size_t v1, void *mine)
{
	uint32_t size;

	if (!theirs)
		return TERRAIN_ERR_INVAL;
	memcpy(&size, theirs, sizeof(size));
	if (size < v1)
		return TERRAIN_ERR_INVAL;
	memset(mine, 0, ours);
	memcpy(mine, theirs, size < ours ? size : ours);
	return 0;
}

/* Copy ours back into the caller's struct, no more than its size. */
static void write_out(void *theirs, const void *mine, size_t ours)
{
	uint32_t size;

	memcpy(&size, theirs, sizeof(size));
	memcpy((char *)theirs + sizeof(size), (const char *)mine + sizeof(size),
	       (size < ours ? size : ours) - sizeof(size));
}

int terrain_world_info(const struct terrain_world *w, struct terrain_world_info *info)
{
	struct terrain_world_info v;

	if (!w || read_in(info, sizeof(v), WORLD_INFO_V1, &v))
		return TERRAIN_ERR_INVAL;
	v.algo_version = PRESET_ALGO_VERSION;
	v.fingerprint = preset_fingerprint(w->p);
	v.seed = w->seed;
	v.chunk_log2 = preset_chunk_log2(w->p);
	v.max_lod = preset_max_lod(w->p);
	v.quantum_um = preset_quantum_um(w->p);
	v.eroded = preset_is_eroded(w->p);
	v.min_height_m = preset_min_height(w->p);
	v.max_height_m = preset_max_height(w->p);
	v.sea_level_m = preset_sea_level(w->p);
	write_out(info, &v, sizeof(v));
	return 0;
}

const char *terrain_world_name(const struct terrain_world *w)
{
	return w ? preset_name(w->p) : NULL;
}

const char *terrain_world_canonical(const struct terrain_world *w)
{
	return w ? preset_canonical(w->p) : NULL;
}

uint32_t terrain_tile_side(const struct terrain_world *w, int32_t lod)
{
	if (!w || lod < 0 || lod > preset_max_lod(w->p))
		return 0;
	return (UINT32_C(1) << (preset_chunk_log2(w->p) - lod)) + 1;
}

/* ---- workspaces: buffers and a small cache of eroded regions --------------- */

#ifndef WORK_REGIONS
#define WORK_REGIONS 16   /* 0.5 MB each at most (region 256 m + band + aprons) */
#endif

struct region_slot {
	uint64_t fingerprint, seed;
	int64_t rx, rz;
	float *map;           /* NULL: empty */
	unsigned refs;
	uint64_t used;        /* work->clock at the last acquire */
};

struct terrain_work {
	struct tilemake m;
	struct region_slot slot[WORK_REGIONS];
	uint64_t clock;
	struct region_source rs;
	int32_t *blk;         /* terrain_heights()' block, terrain_sample()'s 2 x 2 */
	size_t blk_cap;       /* samples */
};

static struct region_slot *victim(struct terrain_work *k)
{
	struct region_slot *v = NULL;
	size_t i;

	for (i = 0; i < WORK_REGIONS; i++) {
		struct region_slot *s = &k->slot[i];

		if (!s->map)
			return s;
		if (!s->refs && (!v || s->used < v->used))
			v = s;
	}
	return v;
}

static const float *region_acquire(void *ctx, const struct preset *p, uint64_t seed,
				   int64_t rx, int64_t rz)
{
	struct terrain_work *k = ctx;
	uint64_t fp = preset_fingerprint(p);
	struct region_slot *s;
	size_t side, i;
	float *map;

	for (i = 0; i < WORK_REGIONS; i++) {
		s = &k->slot[i];
		if (s->map && s->fingerprint == fp && s->seed == seed && s->rx == rx &&
		    s->rz == rz) {
			s->refs++;
			s->used = ++k->clock;
			return s->map;
		}
	}
	side = pipeline_region_side(p);
	if (!(map = malloc(side * side * sizeof(*map))))
		return NULL;
	if (pipeline_region(p, seed, rx, rz, map)) {
		free(map);
		return NULL;
	}
	if ((s = victim(k)) != NULL) { /* else every slot is in use: uncached */
		free(s->map);
		*s = (struct region_slot){ fp, seed, rx, rz, map, 1, ++k->clock };
	}
	return map;
}

static void region_release(void *ctx, const float *map)
{
	struct terrain_work *k = ctx;
	size_t i;

	for (i = 0; i < WORK_REGIONS; i++)
		if (k->slot[i].map == map) {
			k->slot[i].refs--;
			return;
		}
	free((void *)map);
}

int terrain_work_create(struct terrain_work **out)
{
	struct terrain_work *k;

	if (!out)
		return TERRAIN_ERR_INVAL;
	if (!(k = calloc(1, sizeof(*k))))
		return TERRAIN_ERR_NOMEM;
	if (tilemake_init(&k->m)) {
		free(k);
		return TERRAIN_ERR_NOMEM;
	}
	k->rs = (struct region_source){ region_acquire, region_release, k };
	*out = k;
	return 0;
}

void terrain_work_destroy(struct terrain_work *k)
{
	size_t i;

	if (!k)
		return;
	tilemake_release(&k->m);
	for (i = 0; i < WORK_REGIONS; i++)
		free(k->slot[i].map);
	free(k->blk);
	free(k);
}

/* The caller's work, or a new one in *own (to destroy after the call). */
static struct terrain_work *work_or_own(struct terrain_work *work, struct terrain_work **own)
{
	*own = NULL;
	if (work)
		return work;
	return terrain_work_create(own) ? NULL : *own;
}

static int32_t *blk_reserve(struct terrain_work *k, size_t n)
{
	if (k->blk_cap < n) {
		free(k->blk);
		k->blk_cap = 0;
		if (!(k->blk = malloc(n * sizeof(*k->blk))))
			return NULL;
		k->blk_cap = n;
	}
	return k->blk;
}

/* ---- tiles ----------------------------------------------------------------- */

const char *terrain_material_name(int32_t id)
{
	return material_name(id);
}

uint32_t terrain_precision_um(const char *name, size_t len)
{
	return name ? tile_precision_um(name, len) : 0;
}


/* The tile form of a TERRAIN_FORMAT_* (0: the current): 0, or
 * TERRAIN_ERR_INVAL for a format the library does not know. */
static int form_of(uint32_t format, enum tile_form *form)
{
	static const struct {
		uint32_t format;
		enum tile_form form;
	} forms[] = {
		{ 0, TILE_FORM_CURRENT },
		{ TERRAIN_FORMAT_CURRENT, TILE_FORM_CURRENT },
		{ TERRAIN_FORMAT_CODED8, TILE_FORM_BEFORE7 },
		{ TERRAIN_FORMAT_CODED2, TILE_FORM_BEFORE5 },
		{ TERRAIN_FORMAT_LZ21, TILE_FORM_LZ21 },
	};
	size_t k;

	for (k = 0; k < sizeof(forms) / sizeof(forms[0]); k++)
		if (forms[k].format == format) {
			if (form)
				*form = forms[k].form;
			return 0;
		}
	return TERRAIN_ERR_INVAL;
}
/* The request, checked against w: *rq holds our copy. */
static int request_of(const struct terrain_world *w, const struct terrain_tile_request *in,
		      struct terrain_tile_request *rq)
{
	uint32_t q;

	if (!w || read_in(in, sizeof(*rq), TILE_REQUEST_V1, rq))
		return TERRAIN_ERR_INVAL;
	q = preset_quantum_um(w->p);
	if (!terrain_tile_side(w, rq->lod) || (rq->layers & ~TERRAIN_LAYER_MATERIAL) ||
	    (rq->quantum_um && rq->quantum_um % q) || rq->reserved)
		return TERRAIN_ERR_INVAL;
	if (rq->format == 0)
		rq->format = TERRAIN_FORMAT_CURRENT;
	return form_of(rq->format, NULL);
}

/*
 * The tile of rq (checked) into k's buffers, with e's edits as the server
 * gathers them: the chunk's own, or the 3 x 3 chunks' for the material
 * layer, whose slopes read beyond the chunk (server/tiles/tiles.c).
 */
static int make_tile(const struct terrain_world *w, const struct terrain_edits *e,
		     struct terrain_work *k, const struct terrain_tile_request *rq,
		     int encode, const struct tile **t, const uint8_t **enc, size_t *len)
{
	int64_t r = (rq->layers & TERRAIN_LAYER_MATERIAL) ? 1 : 0;
	const struct region_source *rs = preset_is_eroded(w->p) ? &k->rs : NULL;
	struct bake_layer layer = { preset_chunk_log2(w->p), NULL, 0 };
	struct bake_chunk *bc;
	uint64_t version = terrain__version(e, rq->cx, rq->cz);
	enum tile_form form;
	int rc = form_of(rq->format, &form);

	if (!rc)
		rc = terrain__layer(e, (int64_t)rq->cx - r, (int64_t)rq->cz - r,
				    (int64_t)rq->cx + r, (int64_t)rq->cz + r, &bc, &layer.nchunks);
	if (rc)
		return rc;
	layer.chunks = bc;
	if (encode)
		rc = tilemake_encode(&k->m, w->p, w->seed, rq->lod, rq->cx, rq->cz, rs,
				     layer.nchunks ? &layer : NULL, version, rq->layers,
				     rq->quantum_um, form, enc, len);
	else
		rc = tilemake_tile(&k->m, w->p, w->seed, rq->lod, rq->cx, rq->cz, rs,
				   layer.nchunks ? &layer : NULL, version, rq->layers,
				   rq->quantum_um, t);
	free(bc);
	return rc;
}

/* The public header of t (version and filter 0: not decoded). */
static void info_of(const struct tile *t, struct terrain_tile_info *v)
{
	v->version = 0;
	v->fingerprint = t->fingerprint;
	v->seed = t->seed;
	v->cx = t->cx;
	v->cz = t->cz;
	v->lod = t->lod;
	v->chunk_log2 = t->chunk_log2;
	v->side = t->side;
	v->quantum_um = t->quantum_um;
	v->edit_seq = t->edit_seq;
	v->checksum = 0;
	v->layers = t->material ? TERRAIN_LAYER_MATERIAL : 0;
	v->filter = 0;
}

/* Copy t's heights, and its materials when materials is not NULL, to the
 * caller's buffers. */
static int copy_out(const struct tile *t, int32_t *heights, size_t heights_len,
		    uint8_t *materials, size_t materials_len)
{
	size_t n = (size_t)t->side * t->side;

	if (heights_len < n || (materials && t->material && materials_len < n))
		return TERRAIN_ERR_TOOBIG;
	memcpy(heights, t->h, n * sizeof(*heights));
	if (materials && t->material)
		memcpy(materials, t->material, n);
	return 0;
}

int terrain_generate(const struct terrain_world *w, const struct terrain_edits *e,
		     struct terrain_work *work, const struct terrain_tile_request *rq,
		     int32_t *heights, size_t heights_len, uint8_t *materials,
		     size_t materials_len, struct terrain_tile_info *info)
{
	struct terrain_tile_request r;
	struct terrain_tile_info v;
	struct terrain_work *own, *k;
	const struct tile *t;
	int rc = request_of(w, rq, &r);

	if (rc)
		return rc;
	if (info && read_in(info, sizeof(v), TILE_INFO_V1, &v))
		return TERRAIN_ERR_INVAL;
	if (!heights || ((r.layers & TERRAIN_LAYER_MATERIAL) && !materials))
		return TERRAIN_ERR_INVAL;
	if (!(k = work_or_own(work, &own)))
		return TERRAIN_ERR_NOMEM;
	rc = make_tile(w, e, k, &r, 0, &t, NULL, NULL);
	if (!rc)
		rc = copy_out(t, heights, heights_len, materials, materials_len);
	if (!rc && info) {
		info_of(t, &v);
		write_out(info, &v, sizeof(v));
	}
	terrain_work_destroy(own);
	return rc;
}

size_t terrain_encode_bound(uint32_t side, uint32_t layers)
{
	struct tile t = { 0 };
	uint8_t one = 0;

	if (side < 2)
		return 0;
	t.side = side;
	t.material = (layers & TERRAIN_LAYER_MATERIAL) ? &one : NULL;
	return tile_encode_bound(&t);
}

size_t terrain_tile_bound(const struct terrain_world *w, const struct terrain_tile_request *rq)
{
	struct terrain_tile_request r;

	if (request_of(w, rq, &r))
		return 0;
	return terrain_encode_bound(terrain_tile_side(w, r.lod), r.layers);
}

int terrain_generate_encoded(const struct terrain_world *w, const struct terrain_edits *e,
			     struct terrain_work *work, const struct terrain_tile_request *rq,
			     uint8_t *out, size_t cap, size_t *len)
{
	struct terrain_tile_request r;
	struct terrain_work *own, *k;
	const uint8_t *enc;
	size_t n;
	int rc = request_of(w, rq, &r);

	if (rc)
		return rc;
	if (!out || !len)
		return TERRAIN_ERR_INVAL;
	if (!(k = work_or_own(work, &own)))
		return TERRAIN_ERR_NOMEM;
	rc = make_tile(w, e, k, &r, 1, NULL, &enc, &n);
	if (!rc && n > cap)
		rc = TERRAIN_ERR_TOOBIG;
	if (!rc) {
		memcpy(out, enc, n);
		*len = n;
	}
	terrain_work_destroy(own);
	return rc;
}

int terrain_encode(const struct terrain_tile_info *info, const int32_t *heights,
		   const uint8_t *materials, uint32_t format, uint8_t *out, size_t cap,
		   size_t *len)
{
	struct terrain_tile_info v;
	struct tile t = { 0 };
	enum tile_form form;
	void *scratch;
	int rc;

	if (read_in(info, sizeof(v), TILE_INFO_V1, &v) || !heights || !out || !len ||
	    (v.layers & ~TERRAIN_LAYER_MATERIAL) ||
	    !(v.layers & TERRAIN_LAYER_MATERIAL) != !materials ||
	    form_of(format, &form) ||
	    v.lod < 0 || v.lod > 255 || v.chunk_log2 < 0 || v.chunk_log2 > 255)
		return TERRAIN_ERR_INVAL;
	t = (struct tile){ v.fingerprint, v.seed, v.cx, v.cz, (uint8_t)v.lod,
			   (uint8_t)v.chunk_log2, v.side, v.quantum_um, v.edit_seq,
			   (int32_t *)(uintptr_t)heights, (uint8_t *)(uintptr_t)materials };
	if (!(scratch = malloc(tile_encode_scratch_size(&t) + 1)))
		return TERRAIN_ERR_NOMEM;
	rc = tile_encode_form_in(&t, form, scratch, out, cap, len);
	free(scratch);
	return rc;
}

/* The decoded header fields the struct tile does not keep. */
static void header_extra(const uint8_t *buf, struct terrain_tile_info *v)
{
	v->version = (uint32_t)buf[4] | (uint32_t)buf[5] << 8;
	v->filter = buf[34];
	v->checksum = tile_checksum(buf);
	/* every version with a layer section is even (tile.h) */
	v->layers = v->version % 2 == 0 ? TERRAIN_LAYER_MATERIAL : 0;
}

int terrain_decode_info(const uint8_t *buf, size_t len, struct terrain_tile_info *info)
{
	struct terrain_tile_info v;
	struct tile t;
	int rc;

	if (!buf || read_in(info, sizeof(v), TILE_INFO_V1, &v))
		return TERRAIN_ERR_INVAL;
	if ((rc = tile_decode_header(buf, len, &t)) != 0)
		return rc;
	info_of(&t, &v);
	header_extra(buf, &v);
	write_out(info, &v, sizeof(v));
	return 0;
}

int terrain_decode(const uint8_t *buf, size_t len, struct terrain_tile_info *info,
		   int32_t *heights, size_t heights_len, uint8_t *materials,
		   size_t materials_len)
{
	struct terrain_tile_info v;
	struct tile t;
	int rc;

	if (!buf || !heights || read_in(info, sizeof(v), TILE_INFO_V1, &v))
		return TERRAIN_ERR_INVAL;
	if ((rc = tile_decode(buf, len, &t)) != 0)
		return rc;
	rc = copy_out(&t, heights, heights_len, materials, materials_len);
	if (!rc) {
		info_of(&t, &v);
		header_extra(buf, &v);
		write_out(info, &v, sizeof(v));
	}
	tile_release(&t);
	return rc;
}

/* ---- heights anywhere ------------------------------------------------------ */

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The block into out (checked arguments), with k's regions and e's edits
 * from the chunks whose closed squares hold its samples. */
static int block(const struct terrain_world *w, const struct terrain_edits *e,
		 struct terrain_work *k, int lod, int64_t x0, int64_t z0, uint32_t nx,
		 uint32_t nz, int32_t *out)
{
	int log2 = preset_chunk_log2(w->p);
	int64_t size = INT64_C(1) << log2, step = INT64_C(1) << lod;
	struct bake_layer layer = { log2, NULL, 0 };
	struct bake_chunk *bc;
	/* eroded presets in chunk-sized pieces (maptile.h: a few regions each) */
	int rc = preset_is_eroded(w->p) ?
			 maptile_heights(w->p, w->seed, lod, x0, z0, nx, nz, &k->rs, out) :
			 pipeline_heights_work(k->m.pw, w->p, w->seed, lod, x0, z0, nx, nz, NULL, out);

	if (rc || !e)
		return rc;
	/* a sample on a chunk border is in two chunks' closed squares: any
	 * of them gives the same height (bake.h), the one below is listed */
	rc = terrain__layer(e, floor_div(x0, size) - 1, floor_div(z0, size) - 1,
			    floor_div(x0 + (int64_t)(nx - 1) * step, size),
			    floor_div(z0 + (int64_t)(nz - 1) * step, size), &bc, &layer.nchunks);
	layer.chunks = bc;
	if (!rc && layer.nchunks)
		rc = bake_apply(&layer, out, x0, z0, lod, nx, nz, preset_quantum_um(w->p));
	free(bc);
	return rc;
}

/* Is x (metres, a sample position) on the world's int32 chunk grid? */
static int on_grid(const struct terrain_world *w, int64_t x)
{
	int64_t c = floor_div(x, INT64_C(1) << preset_chunk_log2(w->p));

	return c >= INT32_MIN && c <= INT32_MAX;
}

int terrain_heights(const struct terrain_world *w, const struct terrain_edits *e,
		    struct terrain_work *work, int32_t lod, int64_t x0, int64_t z0,
		    uint32_t nx, uint32_t nz, int32_t *out, size_t out_len)
{
	struct terrain_work *own, *k;
	int64_t step;
	int rc;

	if (!w || !out || lod < 0 || lod > preset_max_lod(w->p) || nx < 1 || nz < 1 ||
	    nx > 4096 || nz > 4096)
		return TERRAIN_ERR_INVAL;
	step = INT64_C(1) << lod;
	if ((x0 & (step - 1)) || (z0 & (step - 1)) || !on_grid(w, x0) || !on_grid(w, z0) ||
	    !on_grid(w, x0 + (int64_t)(nx - 1) * step) || !on_grid(w, z0 + (int64_t)(nz - 1) * step))
		return TERRAIN_ERR_INVAL;
	if (out_len < (size_t)nx * nz)
		return TERRAIN_ERR_TOOBIG;
	if (!(k = work_or_own(work, &own)))
		return TERRAIN_ERR_NOMEM;
	rc = block(w, e, k, lod, x0, z0, nx, nz, out);
	terrain_work_destroy(own);
	return rc;
}

/* The lattice cell of a point: its corner (ix, iz) and fractions. */
struct cell {
	int64_t ix, iz;
	double fx, fz;
};

static int cell_of(const struct terrain_world *w, double x, double z, struct cell *c)
{
	if (!isfinite(x) || !isfinite(z) || fabs(x) > 0x1p52 || fabs(z) > 0x1p52)
		return TERRAIN_ERR_INVAL;
	c->ix = (int64_t)floor(x);
	c->iz = (int64_t)floor(z);
	if (!on_grid(w, c->ix) || !on_grid(w, c->iz) || !on_grid(w, c->ix + 1) ||
	    !on_grid(w, c->iz + 1))
		return TERRAIN_ERR_INVAL;
	c->fx = x - (double)c->ix;
	c->fz = z - (double)c->iz;
	return 0;
}

/* The bilinear rule of terrain.h over the cell's corners h[0], h[1] (row
 * iz) and h[stride], h[stride + 1] (row iz + 1), in quanta of q um. */
static double bilinear(const int32_t *h, size_t stride, double q, const struct cell *c)
{
	double h00 = (double)((int64_t)h[0] * (int64_t)q) / 1e6;
	double h10 = (double)((int64_t)h[1] * (int64_t)q) / 1e6;
	double h01 = (double)((int64_t)h[stride] * (int64_t)q) / 1e6;
	double h11 = (double)((int64_t)h[stride + 1] * (int64_t)q) / 1e6;

	return (h00 + c->fx * (h10 - h00)) +
	       c->fz * ((h01 + c->fx * (h11 - h01)) - (h00 + c->fx * (h10 - h00)));
}

/*
 * Points close together (their cells' box holds at most 16 samples a point,
 * and 2^20 in all: the usual query around a player) from one block; others
 * one 2 x 2 block each. The same values either way: blocks are exact.
 */
static int sample_points(const struct terrain_world *w, const struct terrain_edits *e,
			 struct terrain_work *k, const double *xz, size_t n, double *metres)
{
	double q = (double)preset_quantum_um(w->p);
	int64_t x0 = INT64_MAX, z0 = INT64_MAX, x1 = INT64_MIN, z1 = INT64_MIN;
	uint64_t bw, bh;
	struct cell c;
	size_t i;
	int32_t *h;
	int rc;

	for (i = 0; i < n; i++) {
		if ((rc = cell_of(w, xz[2 * i], xz[2 * i + 1], &c)) != 0)
			return rc;
		x0 = c.ix < x0 ? c.ix : x0;
		z0 = c.iz < z0 ? c.iz : z0;
		x1 = c.ix + 1 > x1 ? c.ix + 1 : x1;
		z1 = c.iz + 1 > z1 ? c.iz + 1 : z1;
	}
	bw = (uint64_t)(x1 - x0) + 1;
	bh = (uint64_t)(z1 - z0) + 1;
	if (bw <= 4096 && bh <= 4096 && bw * bh <= (UINT64_C(1) << 20) &&
	    bw * bh <= 16 * (uint64_t)n + 64) {
		if (!(h = blk_reserve(k, (size_t)(bw * bh))))
			return TERRAIN_ERR_NOMEM;
		if ((rc = block(w, e, k, 0, x0, z0, (uint32_t)bw, (uint32_t)bh, h)) != 0)
			return rc;
		for (i = 0; i < n; i++) {
			cell_of(w, xz[2 * i], xz[2 * i + 1], &c);
			metres[i] = bilinear(h + (size_t)(c.iz - z0) * bw + (size_t)(c.ix - x0),
					     (size_t)bw, q, &c);
		}
		return 0;
	}
	if (!(h = blk_reserve(k, 4)))
		return TERRAIN_ERR_NOMEM;
	for (i = 0; i < n; i++) {
		cell_of(w, xz[2 * i], xz[2 * i + 1], &c);
		if ((rc = block(w, e, k, 0, c.ix, c.iz, 2, 2, h)) != 0)
			return rc;
		metres[i] = bilinear(h, 2, q, &c);
	}
	return 0;
}

int terrain_sample(const struct terrain_world *w, const struct terrain_edits *e,
		   struct terrain_work *work, const double *xz, size_t n, double *metres)
{
	struct terrain_work *own, *k;
	int rc;

	if (!w || (n && (!xz || !metres)))
		return TERRAIN_ERR_INVAL;
	if (!n)
		return 0;
	if (!(k = work_or_own(work, &own)))
		return TERRAIN_ERR_NOMEM;
	rc = sample_points(w, e, k, xz, n, metres);
	terrain_work_destroy(own);
	return rc;
}

/* ---- checks ---------------------------------------------------------------- */

uint64_t terrain_xxh3(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

uint64_t terrain_heights_hash(const int32_t *heights, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return heights || !n ? XXH3_64bits(heights, n * sizeof(*heights)) : 0;
#else
	XXH3_state_t *st = XXH3_createState();
	uint8_t buf[1024];
	size_t i, k = 0;
	uint64_t h;

	if (!st || !heights)
		return 0;
	XXH3_64bits_reset(st);
	for (i = 0; i < n; i++) {
		uint32_t v = (uint32_t)heights[i];

		buf[k++] = (uint8_t)v;
		buf[k++] = (uint8_t)(v >> 8);
		buf[k++] = (uint8_t)(v >> 16);
		buf[k++] = (uint8_t)(v >> 24);
		if (k == sizeof(buf)) {
			XXH3_64bits_update(st, buf, k);
			k = 0;
		}
	}
	XXH3_64bits_update(st, buf, k);
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
#endif
}

int terrain_selfcheck(char *msg, size_t msglen)
{
	char tmp[512];
	int rc = selfcheck_run(tmp, sizeof(tmp));

	if (msg && msglen) {
		size_t n = rc ? strlen(tmp) : 0;

		if (n >= msglen)
			n = msglen - 1;
		memcpy(msg, tmp, n);
		msg[n] = '\0';
	}
	return rc;
}

uint64_t terrain_selfcheck_digest(void)
{
	return selfcheck_digest();
}
