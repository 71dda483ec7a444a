/*
 * preset.h - generator presets and the generation pipeline.
 *
 * A preset is a declarative generator (JSON, docs/presets.md): a tree of
 * noise sources (fBm, ridged, billow over Perlin, Simplex, value or cellular
 * noise), domain warps, mixes, blends and terraces, mapped to [min, max]
 * metres and quantised. A world is (preset, seed); the tile of chunk (cx, cz)
 * at a LOD is a pure function of them. Parsing validates everything; a
 * parsed preset is immutable and can be shared by any number of threads.
 */
#ifndef PRESET_H
#define PRESET_H

#include <stddef.h>
#include <stdint.h>

struct edit;
struct preset;
struct tile;

/* Algorithm version; part of every fingerprint. Bump when output changes. */
#define PRESET_ALGO_VERSION 1

/*
 * Parse a preset from JSON text (len bytes). name overrides the JSON's own
 * "name" when not NULL. On success *out owns a new preset (preset_destroy).
 * On failure returns ERR_PARSE / ERR_INVAL / ERR_RANGE / ERR_NOMEM and, when
 * err is not NULL, writes a message naming the offending field into it.
 */
int preset_parse(const char *name, const char *json, size_t len,
		 struct preset **out, char *err, size_t errlen);

/* Free a preset. preset_destroy(NULL) does nothing. */
void preset_destroy(struct preset *p);

/* Parse every built-in preset (presets/ compiled in, sorted by name) into
 * a new array of *n presets. Free with preset_destroy_all(). */
int preset_load_builtin(struct preset ***out, size_t *n);
void preset_destroy_all(struct preset **v, size_t n);

const char *preset_name(const struct preset *p);
const char *preset_description(const struct preset *p);

/* Hash (XXH3-64) of PRESET_ALGO_VERSION and the canonical parameters. */
uint64_t preset_fingerprint(const struct preset *p);

/* Canonical JSON of the parameters (what the fingerprint hashes). Owned by
 * the preset. */
const char *preset_canonical(const struct preset *p);

int preset_chunk_log2(const struct preset *p);   /* 8: 256 m chunks */
int preset_max_lod(const struct preset *p);      /* chunk_log2 */
uint32_t preset_quantum_um(const struct preset *p);
double preset_min_height(const struct preset *p); /* metres */
double preset_max_height(const struct preset *p);
double preset_sea_level(const struct preset *p);

/*
 * Generate the tile of chunk (cx, cz) at lod for the world (p, seed) into
 * out, which this function initialises (tile_init); the caller releases it.
 * Returns 0, ERR_INVAL for a lod out of range, or ERR_NOMEM.
 * Thread-safe: it touches nothing but its arguments.
 */
int pipeline_generate(const struct preset *p, uint64_t seed, int lod,
		      int32_t cx, int32_t cz, struct tile *out);

/*
 * Hydraulic erosion (presets with "hydraulic", docs/presets.md). The world
 * is cut into square regions along borders at k * region + chunk / 2; each
 * region is generated at 1 m with a band and an apron around it and eroded
 * by droplets seeded per world cell, and a sample's height is the blend of
 * the eroded regions whose band it lies in, with weights that depend only
 * on its position. Regions are expensive (tens of ms) and shared by the
 * chunks they cover, so callers keep them in a cache: a region_source.
 */
int preset_is_eroded(const struct preset *p);

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

#endif
