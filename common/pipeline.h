/*
 * pipeline.h - the generator pipeline: (preset, seed, lod, chunk) to
 * heights, then a tile. noise -> fBm and warping -> terraces -> erosion
 * (eroded regions, shared through a region_source) -> edits -> optional
 * material layer. Pure and deterministic: no I/O, no clocks, no globals;
 * any thread. docs/design.md explains the stages, docs/presets.md their
 * parameters.
 */
#ifndef PIPELINE_H
#define PIPELINE_H

#include <stddef.h>
#include <stdint.h>

struct bake_layer;
struct edit;
struct preset;
struct tile;

/*
 * Generate the tile of chunk (cx, cz) at lod for the world (p, seed) into
 * out, which this function initialises (tile_init); the caller releases it.
 * Returns 0, ERR_INVAL for a lod out of range, or ERR_NOMEM.
 * Thread-safe: it touches nothing but its arguments.
 */
int pipeline_generate(const struct preset *p, uint64_t seed, int lod,
		      int32_t cx, int32_t cz, struct tile *out);

/* Samples per side of one region map: region + band + 2 * apron. */
size_t pipeline_region_side(const struct preset *p);

/* World position of sample (0, 0) of region (rx, rz)'s map. */
void pipeline_region_origin(const struct preset *p, int64_t rx, int64_t rz,
			    int64_t *x0, int64_t *z0);

/*
 * Generate and erode region (rx, rz) of world (p, seed) into out
 * (side * side floats, metres, row-major in z). A pure function of its
 * arguments. Returns 0, ERR_INVAL (p is not eroded) or ERR_NOMEM.
 */
int pipeline_region(const struct preset *p, uint64_t seed, int64_t rx, int64_t rz,
		    float *out);

/* Where eroded tiles get their regions: acquire returns the map of region
 * (rx, rz) (as pipeline_region() makes it) or NULL when out of memory, and
 * keeps it valid until release. Both may be called from several threads. */
struct region_source {
	const float *(*acquire)(void *ctx, const struct preset *p, uint64_t seed,
				int64_t rx, int64_t rz);
	void (*release)(void *ctx, const float *map);
	void *ctx;
};

/*
 * Heights (quanta) of any w x h block of the world's LOD-lod lattice:
 * sample (i, j) at world x = x0 + i * 2^lod, z = z0 + j * 2^lod metres
 * (x0, z0 multiples of 2^lod), row-major into out. A tile is the block of
 * its chunk; a block one sample wider on each side gives the neighbours
 * that slopes need. Exactly the values pipeline_generate() gives at the
 * same positions. rs as below. Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int pipeline_heights(const struct preset *p, uint64_t seed, int lod, int64_t x0,
		     int64_t z0, uint32_t w, uint32_t h, const struct region_source *rs,
		     int32_t *out);

/*
 * pipeline_generate() taking eroded regions from rs (NULL: compute the
 * 1 to 4 regions a tile needs, uncached). Identical output either way.
 */
int pipeline_generate_with(const struct preset *p, uint64_t seed, int lod,
			   int32_t cx, int32_t cz, const struct region_source *rs,
			   struct tile *out);

/* Layers a served tile may carry besides heights (pipeline_tile()). */
#define PIPELINE_LAYER_MATERIAL 1u

/*
 * A tile as the server sends it: generated (regions from rs, may be NULL),
 * the n_edits edits applied in order (those touching the chunk; others are
 * skipped cheaply), edit_seq recorded in the header, and with
 * PIPELINE_LAYER_MATERIAL in layers a material layer computed from the
 * edited heights (so edits move materials too). Heights are the same with
 * and without the layer. Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int pipeline_tile(const struct preset *p, uint64_t seed, int lod, int32_t cx, int32_t cz,
		  const struct region_source *rs, const struct edit *edits, size_t n_edits,
		  uint64_t edit_seq, unsigned layers, struct tile *out);

/*
 * pipeline_tile() with the edits as a baked layer (bake.h): each chunk's
 * baked delta and the edits after it. Byte-identical to pipeline_tile()
 * with all the layer's edits in order.
 */
int pipeline_tile_baked(const struct preset *p, uint64_t seed, int lod, int32_t cx,
			int32_t cz, const struct region_source *rs, const struct bake_layer *bl,
			uint64_t edit_seq, unsigned layers, struct tile *out);

/*
 * A workspace for making tile after tile without allocating: the
 * evaluation rows of the preset's nodes and the tile's arrays, kept from
 * one call to the next and grown when a tile needs more (any preset, LOD
 * or layers). One user at a time (a worker thread keeps one); it holds no
 * state that changes a tile: the same bytes as pipeline_tile().
 *
 *	struct pipeline_work *w;  const struct tile *t;
 *	pipeline_work_create(&w);
 *	pipeline_tile_work(w, p, seed, 0, cx, cz, NULL, NULL, 0, NULL, 0, 0, &t);
 *	... encode t ...;  pipeline_work_destroy(w);
 */
struct pipeline_work;

/* A new empty workspace into *out. Returns 0, ERR_INVAL or ERR_NOMEM. */
int pipeline_work_create(struct pipeline_work **out);

/* Free w and everything it holds; NULL does nothing. */
void pipeline_work_destroy(struct pipeline_work *w);

/* About how many bytes w holds (to decide whether to keep it). */
size_t pipeline_work_bytes(const struct pipeline_work *w);

/* pipeline_heights() with w's evaluation context, kept from call to call
 * (no allocation once warm; the library's many small blocks): the same
 * values. */
int pipeline_heights_work(struct pipeline_work *w, const struct preset *p, uint64_t seed,
			  int lod, int64_t x0, int64_t z0, uint32_t wd, uint32_t h,
			  const struct region_source *rs, int32_t *out);

/*
 * pipeline_tile() (edits, n_edits) or pipeline_tile_baked() (bl, when not
 * NULL) into w: *out is w's tile, its heights and materials w's arrays,
 * valid until w's next use; never tile_release() it. Returns 0, ERR_INVAL
 * or ERR_NOMEM.
 */
int pipeline_tile_work(struct pipeline_work *w, const struct preset *p, uint64_t seed,
		       int lod, int32_t cx, int32_t cz, const struct region_source *rs,
		       const struct edit *edits, size_t n_edits, const struct bake_layer *bl,
		       uint64_t edit_seq, unsigned layers, const struct tile **out);

#endif
