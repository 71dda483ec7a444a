/*
 * tilegen.h - one tile's bytes, as served: generate, encode, compress.
 *
 * The identity body of GET /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz} and
 * the output of `terrain-server generate` both come from tilegen_encode()
 * (pipeline_tile() of pipeline.h), so they are byte-identical by
 * construction while the chunk has no edits (generate always writes the
 * unedited world), whatever region source each passes; the zstd body is
 * tilegen_compress() of it, the gzip body tilegen_gzip_work() of it. Also
 * parses the request arguments that the command line and the URL share.
 *
 * A worker keeps its buffers from one tile to the next in a struct
 * tilegen_work (the pipeline's rows and heights, the encoded tile, one
 * output buffer, the zstd and zlib contexts), taken from and given back to
 * a struct tilegen_pool, so a cold tile maps and faults no new memory:
 * only its final bodies are copied out, sized exactly. The *_work()
 * functions give the same bytes as the allocating ones. Pure apart from
 * malloc and the pool's mutex: any thread may call it (tiles.c runs it on
 * the worker pool).
 */
#ifndef TILEGEN_H
#define TILEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "tile.h"

struct edit;
struct preset;
struct bake_layer;
struct region_source;

/*
 * pipeline_tile() of chunk (cx, cz) at lod of world (p, seed): eroded
 * regions from rs (NULL: computed for this tile alone), the edits of bl
 * (baked deltas and the edits after them, bake.h; NULL: none), edit_seq
 * in the header, and the layers asked for (PIPELINE_LAYER_*
 * bits: 0 gives a tile of heights alone, format version 7, 8 with
 * materials; 1 and 2 for small tiles), then encoded (tile.h). With
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

/* ---- workspaces ---- */

struct tilegen_work;
struct tilegen_pool;

/* The largest workspace a pool keeps: one that grew past it (a preset
 * with 4096 m chunks) is freed when given back. */
#ifndef TILEGEN_WORK_KEEP
#define TILEGEN_WORK_KEEP (4u << 20)
#endif

/* A new empty workspace (buffers come as tiles need them). Returns 0,
 * ERR_INVAL or ERR_NOMEM. */
int tilegen_work_create(struct tilegen_work **out);

/* Free w and its buffers; NULL does nothing. */
void tilegen_work_destroy(struct tilegen_work *w);

/* About how many bytes w holds. */
size_t tilegen_work_bytes(const struct tilegen_work *w);

/*
 * tilegen_encode() into w: *out is w's encoded-tile buffer, valid until
 * the next tilegen_encode_work() or tilegen_inflate_work() on w.
 */
int tilegen_encode_work(struct tilegen_work *w, const struct preset *p, uint64_t seed,
			int lod, int32_t cx, int32_t cz, const struct region_source *rs,
			const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
			const uint8_t **out, size_t *len);

/*
 * tilegen_encode_work() at a coarser precision (?precision=): the heights
 * requantised from the preset's quantum to quantum_um, a whole multiple of
 * it (tile_requantize(); 0 or the preset's own: the canonical tile). The
 * header's quantum_um says which. form picks the encoding (tile.h:
 * TILE_FORM_LZ21 for ?format=1). ERR_INVAL for a quantum that is not a
 * multiple.
 */
int tilegen_encode_work_at(struct tilegen_work *w, const struct preset *p, uint64_t seed,
			   int lod, int32_t cx, int32_t cz, const struct region_source *rs,
			   const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
			   uint32_t quantum_um, enum tile_form form, const uint8_t **out,
			   size_t *len);

/*
 * tilegen_compress() with w's zstd context, into w's output buffer: *out
 * is valid until the next *_work() call on w other than
 * tilegen_inflate_work(). raw may be w's encoded tile.
 */
int tilegen_compress_work(struct tilegen_work *w, const uint8_t *raw, size_t len,
			  const uint8_t **out, size_t *zlen);

/* What a gzip body holds, which picks the deflate strategy. */
enum tilegen_gzip_kind {
	TILEGEN_GZIP_TILE,   /* byte planes of residuals: runs and Huffman codes (Z_RLE) */
	TILEGEN_GZIP_TEXT,   /* JSON and other bodies: the default strategy */
};

/*
 * raw (len bytes, below 2 GiB) as one gzip member (RFC 1952: no name,
 * mtime 0), level 6, with the strategy of kind: a pure function of raw
 * and zlib's version. Into w's output buffer, valid as
 * tilegen_compress_work()'s. Returns 0, ERR_INVAL, ERR_ZLIB or ERR_NOMEM.
 */
int tilegen_gzip_work(struct tilegen_work *w, const uint8_t *raw, size_t len,
		      enum tilegen_gzip_kind kind, const uint8_t **out, size_t *glen);

/*
 * Decompress a zstd frame that must hold exactly len bytes with w's
 * context into w's encoded-tile buffer (*out, valid as
 * tilegen_encode_work()'s). Returns 0, ERR_ZSTD or ERR_NOMEM.
 */
int tilegen_inflate_work(struct tilegen_work *w, const uint8_t *z, size_t zlen, size_t len,
			 const uint8_t **out);

/* tilegen_decompress_to() with w's context (out is the caller's). */
int tilegen_decompress_work(struct tilegen_work *w, const uint8_t *z, size_t zlen,
			    uint8_t *out, size_t len);

/* A pool of workspaces shared by the worker threads. Returns 0 or
 * ERR_NOMEM. */
int tilegen_pool_create(struct tilegen_pool **out);

/* Free the pool and the workspaces it holds (none may be taken); NULL
 * does nothing. */
void tilegen_pool_destroy(struct tilegen_pool *pool);

/* A workspace for one job, the most recently given back one or a new one;
 * NULL when out of memory. Any thread. Give it back with
 * tilegen_pool_put(). */
struct tilegen_work *tilegen_pool_take(struct tilegen_pool *pool);

/* Give w back (NULL does nothing); one past TILEGEN_WORK_KEEP is freed. */
void tilegen_pool_put(struct tilegen_pool *pool, struct tilegen_work *w);

/* Workspaces the pool holds now and has made in all. */
void tilegen_pool_stats(struct tilegen_pool *pool, size_t *idle, size_t *made);

/* ---- arguments ---- */


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
