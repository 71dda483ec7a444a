/*
 * tilegen.h - one tile's bytes, as served: generate, encode, compress.
 *
 * The identity body of GET /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz} and
 * the output of `terrain-server generate` both come from tilegen_encode()
 * (pipeline_tile() of pipeline.h), so they are byte-identical by
 * construction while the chunk has no edits (generate always writes the
 * unedited world), whatever region source each passes; the zstd body is
 * tilegen_compress() of it. Also parses the request arguments that the
 * command line and the URL share. Pure apart from malloc: any thread may
 * call it (routes.c runs it on the worker pool).
 */
#ifndef TILEGEN_H
#define TILEGEN_H

#include <stddef.h>
#include <stdint.h>

struct edit;
struct preset;
struct bake_layer;
struct region_source;

/*
 * pipeline_tile() of chunk (cx, cz) at lod of world (p, seed): eroded
 * regions from rs (NULL: computed for this tile alone), the edits of bl
 * (baked deltas and the edits after them, bake.h; NULL: none), edit_seq
 * in the header, and the layers asked for (PIPELINE_LAYER_*
 * bits: 0 gives a version-1 tile of heights), then encoded (tile.h). With
 * no edits this is the unedited world, what `terrain-server generate`
 * writes. On success *out is a new malloc'd buffer of *len bytes (caller
 * frees). Returns 0, ERR_INVAL (lod out of range) or ERR_NOMEM.
 */
int tilegen_encode(const struct preset *p, uint64_t seed, int lod,
		   int32_t cx, int32_t cz, const struct region_source *rs,
		   const struct bake_layer *bl, uint64_t edit_seq,
		   unsigned layers, uint8_t **out, size_t *len);

/* Compress raw (len bytes) as one zstd frame with its content size, with
 * the parameters of zparams.h, into a new malloc'd *out of *zlen bytes.
 * Returns 0, ERR_ZSTD or ERR_NOMEM. */
int tilegen_compress(const uint8_t *raw, size_t len, uint8_t **out, size_t *zlen);

/* Decompress a frame that must hold exactly len bytes into a new malloc'd
 * *out. Returns 0, ERR_ZSTD (corrupt or wrong size) or ERR_NOMEM. */
int tilegen_decompress(const uint8_t *z, size_t zlen, size_t len,
		       uint8_t **out);

/* Decompress a frame that must hold exactly len bytes into out (len
 * bytes). Returns 0 or ERR_ZSTD (corrupt or wrong size). */
int tilegen_decompress_to(const uint8_t *z, size_t zlen, uint8_t *out, size_t len);

/* Parse s (len bytes): an optional '-' and decimal digits fitting int32.
 * Returns 0, ERR_INVAL (not a number) or ERR_RANGE. */
int tilegen_parse_i32(const char *s, size_t len, int32_t *out);

/*
 * Parse a layer list (?layers=, --layers): comma-separated names, "height"
 * (always present, the default) and "material", in any order, into
 * PIPELINE_LAYER_* bits: "height" gives 0, "height,material" gives
 * PIPELINE_LAYER_MATERIAL. Returns 0, or ERR_INVAL for an empty list or
 * name or an unknown name.
 */
int tilegen_parse_layers(const char *s, size_t len, unsigned *out);

/* Parse a LOD for preset p: decimal digits in 0..preset_max_lod(p).
 * Returns 0, ERR_INVAL or ERR_RANGE. */
int tilegen_parse_lod(const struct preset *p, const char *s, size_t len,
		      int *out);

#endif
