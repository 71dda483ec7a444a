/*
 * maptile.h - web map tiles of a world: the zoom pyramid over the chunk
 * grid, and the pixels of a 256 x 256 map tile (Terrarium elevation for
 * MapLibre's raster-dem sources, a hillshaded, material-coloured picture
 * for plain raster layers).
 *
 * The pyramid (docs/maps.md): zoom MAPTILE_MAX_ZOOM (17) has one pixel
 * per metre, a LOD-0 sample; zoom 17 - d one pixel per 2^d metres, a
 * LOD-d sample. Pixel (i, j) of tile (z, x, y) is the sample at world
 *
 *	X = ox + (x * 256 + i) * 2^d - 2^24,  Z = oz + (y * 256 + j) * 2^d - 2^24
 *
 * so the 2^z x 2^z tiles of a zoom cover the 2^25 m square centred on
 * (ox, oz) (the origin, 0 by default), x east and z south as in every
 * picture this project draws. Tiles share no samples: pixel 255 of a tile
 * and pixel 0 of its east neighbour are consecutive lattice samples, so
 * a 257-sample chunk tile gives samples 0..255 and its sample 256 is the
 * neighbour's pixel 0; no sample is repeated or skipped, so no seam.
 *
 * Heights come from pipeline_heights() and the chunks' edits (bake.h),
 * the path of the binary tiles, so a map pixel is exactly the sample of
 * the binary tile at the same place, edits included. Pure code: no I/O,
 * no clocks, no globals. PNG encoding is the server's (server/tiles/pngenc.h).
 */
#ifndef MAPTILE_H
#define MAPTILE_H

#include <stddef.h>
#include <stdint.h>

struct bake_chunk;
struct preset;
struct region_source;

#define MAPTILE_SIZE 256          /* pixels per side */
#define MAPTILE_MAX_ZOOM 17       /* 1 m per pixel */
#define MAPTILE_HALF (INT64_C(1) << 24) /* metres from the window's edge to
					   its centre: 2^17 tiles * 256 / 2 */
#define MAPTILE_MAX_DEPTH 8       /* zoom 9: 256 m per pixel */
#define MAPTILE_ERODED_DEPTH 2    /* eroded presets stop at zoom 15 */

/* Terrarium: metres = (R * 256 + G + B / 256) - 32768. */
#define MAPTILE_TERRARIUM_OFFSET 32768

/* The smallest zoom of preset p's pyramid: 17 - its depth, the largest
 * LOD a map tile uses (its max LOD, at most 8; 2 for eroded presets,
 * whose regions cost a tile's area in erosion). */
int maptile_min_zoom(const struct preset *p);

/* Where a map tile's pixels are. */
struct maptile_block {
	int lod;          /* 17 - z: pixels are LOD-lod samples */
	int64_t x0, z0;   /* world position of pixel (0, 0)'s sample */
};

/*
 * The block of tile (z, x, y) of preset p's pyramid centred on world
 * (ox, oz) (metres, multiples of the chunk size). Returns 0, or ERR_RANGE
 * for z outside maptile_min_zoom(p)..17, x or y not below 2^z, or a tile
 * whose samples (with one more on each side, for shading) leave the
 * int32 chunk grid.
 */
int maptile_block(const struct preset *p, int z, uint32_t x, uint32_t y, int64_t ox,
		  int64_t oz, struct maptile_block *out);

/*
 * The heights (quanta) of the w x h block of the LOD-lod lattice at world
 * (x0, z0) of world (p, seed): pipeline_heights() with regions from rs
 * (NULL: computed here), over chunk-sized pieces for eroded presets (a
 * piece needs at most 3 x 3 regions). Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int maptile_heights(const struct preset *p, uint64_t seed, int lod, int64_t x0,
		    int64_t z0, uint32_t w, uint32_t h, const struct region_source *rs,
		    int32_t *out);

/*
 * Apply chunk c's baked delta and later edits (bake.h) to the samples of
 * the w x hgt block blk (LOD lod, at world (x0, z0)) that lie in c's
 * half-open square [cx * C, cx * C + C) x [cz * C, cz * C + C), C =
 * 2^chunk_log2. Every sample lies in exactly one such square, and every
 * edit that reaches a sample touches that square's chunk (docs/edits.md,
 * coverage), so one call per chunk with edits applies each edit once:
 * the same heights as bake_apply() with all of them. Returns 0 or ERR_NOMEM.
 */
int maptile_apply_chunk(const struct bake_chunk *c, int chunk_log2, int32_t *blk,
			int64_t x0, int64_t z0, int lod, uint32_t w, uint32_t hgt,
			uint32_t quantum_um);

/*
 * Terrarium pixels of n heights q (quanta of quantum_um micrometres):
 * round(metres * 256) + 32768 * 256 as 24 bits, R the high byte, clamped
 * to 0 .. 2^24 - 1 (-32768 m .. 32767.996 m). Integer arithmetic, ties
 * upwards: the decoded value is within 1/512 m of the height. 3n bytes.
 */
void maptile_terrarium(const int32_t *q, size_t n, uint32_t quantum_um, uint8_t *rgb);

/* The metres of a Terrarium pixel. */
double maptile_terrarium_metres(const uint8_t rgb[3]);

/*
 * The shaded picture of a w x h block of world (p, seed) on the LOD-lod
 * lattice at world (x0, z0): each pixel its material's colour
 * (material.h; water darker with depth) times a hillshade lit from the
 * north-west, 45 degrees up, with slopes from central differences.
 * bordered holds (w + 2) x (h + 2) heights (quanta): the block with one
 * more sample on every side, so tiles agree at their edges. 3wh bytes
 * into rgb. Deterministic (no libm; sqrt is exact in IEEE 754).
 * Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int maptile_shade(const struct preset *p, uint64_t seed, int lod, int64_t x0, int64_t z0,
		  uint32_t w, uint32_t h, const int32_t *bordered, uint8_t *rgb);

#endif
