/*
 * terrain.h - the terrain core as a library: the one public header of
 * libterrain (libterrain.so.1, libterrain.a, pkg-config `terrain`).
 *
 * A world is (generator preset, seed) plus an ordered log of edits. This
 * library makes its heights in the caller's process, bit for bit the
 * heights the server sends: the same code (the server links it), on every
 * compiler, optimisation level and CPU the project checks. What it offers:
 *
 *   - worlds: a built-in preset by name or a preset's JSON text, and a seed
 *     (a u64, or the text form of a URL, terrain_seed_parse());
 *   - tiles: the heights (and materials) of any chunk at any LOD and
 *     precision into the caller's buffers, or encoded exactly as the
 *     server's tile route encodes them (every format version it serves);
 *   - heights of any block of the lattice, and of any world position;
 *   - encoding and decoding of tiles (docs/tile-format.md);
 *   - edits: batches in their canonical record form (the edit log's, and
 *     what terrain_edits_record() makes from JSON), applied in order, with
 *     the chunk and world hashes the server publishes, so that a client can
 *     check that it holds the server's world (docs/edits.md).
 *
 * Conventions
 *
 *   Functions that can fail return 0 or a negative TERRAIN_ERR_* code;
 *   terrain_strerror() names it. Results come back through out-parameters.
 *   Objects are opaque: x_create() allocates, x_destroy() frees (NULL does
 *   nothing). Sizes of arrays are counts of elements, not bytes.
 *
 *   Structs that cross the interface start with `uint32_t size`, which the
 *   caller sets to sizeof() the struct it was compiled with. The library
 *   reads and writes only that many bytes, so a program built against an
 *   older header keeps working with a newer library (fields are only ever
 *   appended, and a zero field means what the older version did), and a
 *   newer program is refused by an older library with TERRAIN_ERR_INVAL
 *   instead of being misread. Every field has a fixed width and an offset
 *   given in its comment: the layout is the same in C, in every binding and
 *   in WebAssembly. No struct holds a pointer.
 *
 * Threads
 *
 *   There is no global state. A struct terrain_world never changes after
 *   terrain_world_create*(): any number of threads may use one at once. A
 *   struct terrain_edits may be read (generation, sampling, hash queries)
 *   by any number of threads at once, but terrain_edits_apply*() needs it
 *   alone: the caller holds a lock around applies (a read-write lock fits).
 *   A struct terrain_work is one thread's at a time; pass NULL to let a call
 *   allocate its own (the same results, slower for many calls).
 *
 * Versions: TERRAIN_VERSION_* below, terrain_version() at run time;
 * docs/library.md has the ABI policy and examples in C, Python, C#, Go and
 * JavaScript.
 *
 *	struct terrain_world *w;
 *	struct terrain_tile_request rq = { .size = sizeof(rq), .lod = 0, .cx = 0, .cz = 0 };
 *	int32_t h[257 * 257];
 *	if (terrain_world_create("default", 42, &w) == 0 &&
 *	    terrain_generate(w, NULL, NULL, &rq, h, 257 * 257, NULL, 0, NULL) == 0)
 *		printf("%d cm\n", h[0]);
 *	terrain_world_destroy(w);
 */
#ifndef TERRAIN_H
#define TERRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Public symbols; the library is built with -fvisibility=hidden. */
#ifndef TERRAIN_API
#if defined(__GNUC__) || defined(__clang__)
#define TERRAIN_API __attribute__((visibility("default")))
#else
#define TERRAIN_API
#endif
#endif

/* ---- versions -------------------------------------------------------------- */

/*
 * Major: the soname (libterrain.so.1); it changes only when a function or
 * struct already published changes meaning or layout. Minor: functions,
 * constants or trailing struct fields added. Patch: fixes. The world itself
 * (the heights of a given preset and seed) is versioned apart, by each
 * preset's fingerprint (terrain_world_info).
 */
#define TERRAIN_VERSION_MAJOR 1
#define TERRAIN_VERSION_MINOR 2
#define TERRAIN_VERSION_PATCH 0
#define TERRAIN_VERSION                                                        \
	((TERRAIN_VERSION_MAJOR << 16) | (TERRAIN_VERSION_MINOR << 8) | TERRAIN_VERSION_PATCH)

/* TERRAIN_VERSION of the library running (compare its major, >> 16, with
 * the header's). */
TERRAIN_API uint32_t terrain_version(void);

/* "1.0.0": static text. */
TERRAIN_API const char *terrain_version_string(void);

/* ---- errors ---------------------------------------------------------------- */

#define TERRAIN_OK             0
#define TERRAIN_ERR_INVAL     -1   /* invalid argument */
#define TERRAIN_ERR_NOMEM     -2   /* out of memory */
#define TERRAIN_ERR_RANGE     -3   /* value out of range */
#define TERRAIN_ERR_TRUNC     -4   /* truncated input */
#define TERRAIN_ERR_MAGIC     -5   /* bad magic */
#define TERRAIN_ERR_VERSION   -6   /* unsupported format version */
#define TERRAIN_ERR_CORRUPT   -7   /* corrupt data */
#define TERRAIN_ERR_CHECKSUM  -8   /* checksum mismatch */
#define TERRAIN_ERR_TOOBIG    -9   /* input too large, or an output buffer too small */
#define TERRAIN_ERR_NOTFOUND -10   /* not found (an unknown preset) */
#define TERRAIN_ERR_PARSE    -11   /* parse error (JSON) */
#define TERRAIN_ERR_CONFLICT -16   /* does not fit the state (an edit record of
				      another world, or out of sequence) */

/* Static text for a code ("ok" for 0, "unknown error" for others). */
TERRAIN_API const char *terrain_strerror(int code);

/* ---- presets and seeds ----------------------------------------------------- */

/* Built-in generator presets (docs/presets.md), sorted by name: how many,
 * and the name of the i-th (static text; NULL past the end). */
TERRAIN_API size_t terrain_preset_count(void);
TERRAIN_API const char *terrain_preset_name(size_t i);

/*
 * A seed as the HTTP API writes it (len bytes, no NUL needed): decimal
 * digits for a u64, or 1..64 characters of [A-Za-z0-9_-], not all
 * digits, hashed to 64 bits (XXH3-64, docs/design.md). "42" is 42.
 * Returns 0, TERRAIN_ERR_RANGE (digits above 2^64 - 1) or
 * TERRAIN_ERR_INVAL.
 */
TERRAIN_API int terrain_seed_parse(const char *text, size_t len, uint64_t *seed);

/* ---- worlds ---------------------------------------------------------------- */

struct terrain_world;

/*
 * The world of built-in preset `preset` (NUL-terminated; NULL: "default")
 * and seed. Returns 0 and a new world in *out, TERRAIN_ERR_NOTFOUND (no
 * such preset), TERRAIN_ERR_INVAL or TERRAIN_ERR_NOMEM.
 */
TERRAIN_API int terrain_world_create(const char *preset, uint64_t seed,
				     struct terrain_world **out);

/*
 * The world of a preset given as JSON text (len bytes; docs/presets.md),
 * as the server's --presets file holds it, and seed. On failure returns
 * TERRAIN_ERR_PARSE, _INVAL, _RANGE or _NOMEM and, when msg is not NULL,
 * writes a NUL-terminated message naming the offending field into it
 * (msglen bytes, 256 is plenty).
 */
TERRAIN_API int terrain_world_create_json(const char *json, size_t len, uint64_t seed,
					  struct terrain_world **out, char *msg,
					  size_t msglen);

/* Free w. NULL does nothing. Edits and works made for it must go first. */
TERRAIN_API void terrain_world_destroy(struct terrain_world *w);

struct terrain_world_info {
	uint32_t size;          /*  0: in: sizeof(struct terrain_world_info) */
	uint32_t algo_version;  /*  4: the generator algorithm's version */
	uint64_t fingerprint;   /*  8: hash of the algorithm version and every
				       parameter: what tile headers carry */
	uint64_t seed;          /* 16 */
	int32_t chunk_log2;     /* 24: chunks are 2^chunk_log2 m (8: 256 m) */
	int32_t max_lod;        /* 28: LODs 0..max_lod (= chunk_log2) */
	uint32_t quantum_um;    /* 32: canonical height step (10000 = 1 cm) */
	int32_t eroded;         /* 36: 1 for hydraulically eroded presets, whose
				       tiles cost tens of ms (docs/presets.md) */
	double min_height_m;    /* 40: the preset's range, metres */
	double max_height_m;    /* 48 */
	double sea_level_m;     /* 56 */
};                              /* 64 bytes */

/* Fill *info (info->size set by the caller). Returns 0 or
 * TERRAIN_ERR_INVAL. */
TERRAIN_API int terrain_world_info(const struct terrain_world *w,
				   struct terrain_world_info *info);

/* The preset's name, and its canonical JSON (what the fingerprint hashes):
 * text owned by w. */
TERRAIN_API const char *terrain_world_name(const struct terrain_world *w);
TERRAIN_API const char *terrain_world_canonical(const struct terrain_world *w);

/* Samples per side of a tile at lod: 2^(chunk_log2 - lod) + 1 (257 at
 * LOD 0 of 256 m chunks). 0 for a lod out of range. */
TERRAIN_API uint32_t terrain_tile_side(const struct terrain_world *w, int32_t lod);

/* ---- workspaces ------------------------------------------------------------ */

/*
 * A workspace: the buffers of generation and encoding kept from one call
 * to the next (nothing allocated per tile once warm), and the eroded
 * regions of the last tiles (presets with "hydraulic": neighbouring tiles
 * share them). It holds nothing that changes a result. One thread at a
 * time; any world. Returns 0, TERRAIN_ERR_INVAL or TERRAIN_ERR_NOMEM.
 */
struct terrain_work;
TERRAIN_API int terrain_work_create(struct terrain_work **out);
TERRAIN_API void terrain_work_destroy(struct terrain_work *work);

/* ---- edits ----------------------------------------------------------------- */

struct terrain_edits;

/* The canonical bytes of one edit (docs/edits.md): op, falloff, then
 * x_mm, z_mm, radius_mm, strength, height_um as little-endian int64. */
#define TERRAIN_EDIT_SIZE 42
/* Most edits in one batch (the server's POST limit). */
#define TERRAIN_BATCH_MAX 256

/*
 * An empty edit log of world w: sequence 0, world hash
 * terrain_hash_start(fingerprint, seed). It keeps a pointer to w. Returns
 * 0, TERRAIN_ERR_INVAL or TERRAIN_ERR_NOMEM.
 */
TERRAIN_API int terrain_edits_create(const struct terrain_world *w,
				     struct terrain_edits **out);
TERRAIN_API void terrain_edits_destroy(struct terrain_edits *e);

/*
 * Apply one batch record of the edit log (the canonical record every log
 * backend stores, docs/edit-log.md: u8 version 1, 2 or 3, u8 gen_len,
 * gen, u64 seed, u64 first_seq, u32 count, then in version 3 the log's
 * time, flags and the author, then count canonical edits, and in version 2
 * the log's time and an optional idempotency key, which do not change the
 * world). A version-3 record may be a revert or an undo (docs/edits.md,
 * "Reverts"): from it on, the earlier edits its filter matches no longer
 * count (an undo makes a revert's count again), exactly as the server
 * decides, so chunk versions and hashes, the world hash and every height
 * stay the server's. Its generator
 * name and seed must be the world's and first_seq the log's next sequence
 * number. All or nothing: returns 0, TERRAIN_ERR_VERSION or
 * TERRAIN_ERR_CORRUPT (a bad record, edit or revert), TERRAIN_ERR_CONFLICT
 * (another world, or out of sequence), TERRAIN_ERR_RANGE (an edit beyond
 * the world's chunk grid, or touching more than 4096 chunks, as the
 * server refuses), TERRAIN_ERR_NOMEM. The log keeps every edit for the
 * reverts to come: about 100 bytes an edit.
 */
TERRAIN_API int terrain_edits_apply_record(struct terrain_edits *e, const uint8_t *rec,
					   size_t len);

/* Apply count canonical edits (count * TERRAIN_EDIT_SIZE bytes) as
 * sequence numbers first_seq, first_seq + 1, ...: first_seq must be the
 * next one. Same errors as terrain_edits_apply_record(). */
TERRAIN_API int terrain_edits_apply(struct terrain_edits *e, uint64_t first_seq,
				    const uint8_t *edits, size_t count);

/*
 * Make the canonical record of a batch of edits given as the JSON of
 * POST /v1/worlds/{seed}/edits ({"edits": [{"op": "raise", ...}]}, len
 * bytes), for world w, numbered from first_seq, into out (cap bytes; 22 +
 * gen_len + 42 per edit, at most 11,029); *len gets its size. The parser
 * is the server's, so the integers are the server's. On failure returns
 * TERRAIN_ERR_PARSE, _RANGE, _INVAL or _TOOBIG (cap short) and writes a
 * message naming the field into msg (when not NULL), e.g.
 * "edits[3].radius: must be in (0, 4096]".
 */
TERRAIN_API int terrain_edits_record(const struct terrain_world *w, uint64_t first_seq,
				     const char *json, size_t json_len, uint8_t *out,
				     size_t cap, size_t *len, char *msg, size_t msglen);

/*
 * The same as the server writes it since record version 3 (since 1.1):
 * sent by author (1..64 of [A-Za-z0-9_.@-], NUL-terminated; NULL: as
 * terrain_edits_record()) at the log's time_ms, which the server's answer
 * and GET .../edits give ("author", "time"). The world hash after it is
 * then the server's; the heights and chunk hashes are the same either way.
 * At most 11,103 bytes.
 */
TERRAIN_API int terrain_edits_record_by(const struct terrain_world *w, uint64_t first_seq,
					const char *json, size_t json_len, const char *author,
					uint64_t time_ms, uint8_t *out, size_t cap, size_t *len,
					char *msg, size_t msglen);

/*
 * Make the canonical record of a revert or an undo (since 1.1) given as
 * the JSON of POST /v1/worlds/{seed}/reverts (a filter {"author": ...,
 * "since_time": MS, "until_time": MS, "area": [x0, z0, x1, z1],
 * "seq_from": N, "seq_to": N}, any of them, or {"undo": SEQ}; len bytes),
 * for world w, at sequence number seq, sent by author (1..64 of
 * [A-Za-z0-9_.@-], NUL-terminated) at the log's time_ms, reaching back
 * to edit floor (0: the JSON's "floor", else 1), into out (cap bytes; 514
 * is always enough); *len gets its size. GET .../edits lists a revert as
 * {"seq", "revert": {filter, "floor", "history_ms"}, "author", "time"} and
 * an undo as {"seq", "undo", "floor", "history_ms"?, ...}: the "revert"
 * object (or the undo's fields) as JSON with those values gives the
 * server's record byte for byte, so the world hash after it is the
 * server's too. On failure returns TERRAIN_ERR_PARSE,
 * _RANGE, _INVAL or _TOOBIG and writes a message naming the field into
 * msg (when not NULL).
 *
 *	const char *f = "{\"author\": \"mallory\"}";
 *	terrain_edits_revert_record(w, 9, f, strlen(f), "mod", t, 1,
 *				    rec, sizeof(rec), &n, msg, sizeof(msg));
 *	terrain_edits_apply_record(e, rec, n);
 */
TERRAIN_API int terrain_edits_revert_record(const struct terrain_world *w, uint64_t seq,
					    const char *json, size_t json_len,
					    const char *author, uint64_t time_ms, uint64_t floor,
					    uint8_t *out, size_t cap, size_t *len, char *msg,
					    size_t msglen);

/* The last applied sequence number (0: none) and the world hash after it
 * (what GET /v1/worlds/{seed} shows as edit_seq and world_hash). */
TERRAIN_API uint64_t terrain_edits_seq(const struct terrain_edits *e);
TERRAIN_API uint64_t terrain_edits_world_hash(const struct terrain_edits *e);

/*
 * Chunk (cx, cz)'s edit version (the sequence number of the last edit
 * touching it, or of the last revert or undo that changed which of its
 * edits count) and chunk hash (the chain from 0 over its edits that
 * count, each with its own sequence number), what
 * GET /v1/worlds/{seed}/hashes lists; both 0 for a chunk no edit touches.
 * Returns 0 or TERRAIN_ERR_INVAL.
 */
TERRAIN_API int terrain_edits_chunk(const struct terrain_edits *e, int32_t cx, int32_t cz,
				    uint64_t *version, uint64_t *hash);

/* The world hash before any edit: XXH3-64 of fingerprint || seed. */
TERRAIN_API uint64_t terrain_hash_start(uint64_t fingerprint, uint64_t seed);

/* One link of a chain: XXH3-64 of prev || seq || the canonical edit, into
 * *out. Returns 0, or TERRAIN_ERR_CORRUPT for bytes that are not a valid
 * canonical edit. */
TERRAIN_API int terrain_hash_next(uint64_t prev, uint64_t seq,
				  const uint8_t edit[TERRAIN_EDIT_SIZE], uint64_t *out);

/* ---- tiles ----------------------------------------------------------------- */

/* Layers a tile may carry besides heights. */
#define TERRAIN_LAYER_MATERIAL 1u   /* one material id per sample */

/* Encodings, numbered as the tile route's ?format=. Tiles of side below
 * 33 (LOD 4 and coarser at the default chunk size) are versions 1/2 in
 * each. */
#define TERRAIN_FORMAT_CURRENT 7    /* versions 7/8 (tANS): what the server
				       sends by default */
#define TERRAIN_FORMAT_CODED8  5    /* versions 5/6 (8 rANS states, ?format=5) */
#define TERRAIN_FORMAT_CODED2  3    /* versions 3/4 (2 rANS states, ?format=3) */
#define TERRAIN_FORMAT_LZ21    1    /* versions 1/2 (?format=1) */

/* Material ids: "water", "sand", "grass", "forest", "rock", "snow" for
 * 0..5 (docs/tile-format.md); NULL for an id the library does not know. */
TERRAIN_API const char *terrain_material_name(int32_t id);

/* Which tile. */
struct terrain_tile_request {
	uint32_t size;        /*  0: in: sizeof(struct terrain_tile_request) */
	int32_t lod;          /*  4: 0..max_lod */
	int32_t cx, cz;       /*  8, 12: any int32 */
	uint32_t quantum_um;  /* 16: 0 or the world's: canonical heights; a
				     whole multiple of it: coarser heights, as
				     ?precision= (terrain_precision_um()) */
	uint32_t layers;      /* 20: TERRAIN_LAYER_* bits */
	uint32_t format;      /* 24: for encoding: TERRAIN_FORMAT_*; 0 means
				     TERRAIN_FORMAT_CURRENT */
	uint32_t reserved;    /* 28: 0 */
};                            /* 32 bytes */

/* A tile's header: what terrain_generate() made or terrain_decode() read. */
struct terrain_tile_info {
	uint32_t size;        /*  0: in: sizeof(struct terrain_tile_info) */
	uint32_t version;     /*  4: decoded: format version 1..8; else 0 */
	uint64_t fingerprint; /*  8 */
	uint64_t seed;        /* 16 */
	int32_t cx, cz;       /* 24, 28 */
	int32_t lod;          /* 32 */
	int32_t chunk_log2;   /* 36 */
	uint32_t side;        /* 40: samples per side; side * side heights */
	uint32_t quantum_um;  /* 44: metres = height * quantum_um / 1e6 */
	uint64_t edit_seq;    /* 48: the chunk's edit version, 0: unedited */
	uint64_t checksum;    /* 56: decoded: the header's (the ETag); else 0 */
	uint32_t layers;      /* 64: TERRAIN_LAYER_* the tile carries */
	uint32_t filter;      /* 68: decoded: the header's filter id; else 0 */
};                            /* 72 bytes */

/* "1cm" 10000, "5cm", "10cm", "50cm", "1m" 1000000 (len bytes): the
 * quanta of ?precision=; 0 for another name. */
TERRAIN_API uint32_t terrain_precision_um(const char *name, size_t len);

/*
 * The tile rq of world w with the edits of e (NULL: the unedited world),
 * as the server makes it: side * side heights (rows of z, x along a row,
 * in quanta of rq's precision) into heights (room for heights_len), and
 * with TERRAIN_LAYER_MATERIAL side * side material ids into materials
 * (room for materials_len; ignored without the layer). info (may be NULL)
 * gets the header fields. work may be NULL. Returns 0, TERRAIN_ERR_INVAL
 * (a bad lod, a quantum that is not a multiple of the world's, a bad
 * request), TERRAIN_ERR_TOOBIG (a buffer too small) or TERRAIN_ERR_NOMEM.
 */
TERRAIN_API int terrain_generate(const struct terrain_world *w,
				 const struct terrain_edits *e, struct terrain_work *work,
				 const struct terrain_tile_request *rq, int32_t *heights,
				 size_t heights_len, uint8_t *materials, size_t materials_len,
				 struct terrain_tile_info *info);

/* The most bytes terrain_generate_encoded() writes for rq (0 for a bad
 * request): enough for any heights. */
TERRAIN_API size_t terrain_tile_bound(const struct terrain_world *w,
				      const struct terrain_tile_request *rq);

/*
 * terrain_generate(), then encoded in rq->format: byte for byte the
 * identity body of the server's GET /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz}
 * ?gen=&layers=&precision=&format= for the same world and edits (the
 * server's own code path). Into out (cap bytes, terrain_tile_bound() is
 * enough); *len gets the size. Same errors as terrain_generate().
 */
TERRAIN_API int terrain_generate_encoded(const struct terrain_world *w,
					 const struct terrain_edits *e,
					 struct terrain_work *work,
					 const struct terrain_tile_request *rq, uint8_t *out,
					 size_t cap, size_t *len);

/* The most bytes terrain_encode() writes for a tile of side samples with
 * the layers given. */
TERRAIN_API size_t terrain_encode_bound(uint32_t side, uint32_t layers);

/*
 * Encode the tile described by info (fingerprint, seed, cx, cz, lod,
 * chunk_log2, side, quantum_um, edit_seq, layers: the rest is ignored)
 * with side * side heights, and materials when info->layers has
 * TERRAIN_LAYER_MATERIAL (else NULL), in format (TERRAIN_FORMAT_*) into
 * out (cap bytes); *len gets the size. The encoding is canonical: the same
 * tile always gives the same bytes. Returns 0, TERRAIN_ERR_INVAL (fields
 * inconsistent) or TERRAIN_ERR_TOOBIG (cap short).
 */
TERRAIN_API int terrain_encode(const struct terrain_tile_info *info, const int32_t *heights,
			       const uint8_t *materials, uint32_t format, uint8_t *out,
			       size_t cap, size_t *len);

/*
 * Read and check the header of an encoded tile (buf, len bytes: the whole
 * tile, any version 1..8) into *info, without decoding its heights or
 * checking its checksum. Returns 0 or the errors of terrain_decode().
 */
TERRAIN_API int terrain_decode_info(const uint8_t *buf, size_t len,
				    struct terrain_tile_info *info);

/*
 * Decode a tile (any format version 1..8: every version the server sends)
 * into *info, its heights (room for heights_len) and, when materials is
 * not NULL and the tile has the layer, its materials (room for
 * materials_len). Rejects anything truncated, oversized or corrupt with an
 * error, never a crash: TERRAIN_ERR_TRUNC, _MAGIC, _VERSION, _CORRUPT,
 * _CHECKSUM, _TOOBIG (trailing bytes, or a buffer too small for side *
 * side), _INVAL, _NOMEM.
 */
TERRAIN_API int terrain_decode(const uint8_t *buf, size_t len, struct terrain_tile_info *info,
			       int32_t *heights, size_t heights_len, uint8_t *materials,
			       size_t materials_len);

/* ---- heights anywhere ------------------------------------------------------ */

/*
 * The nx x nz block of world w's LOD-lod lattice whose sample (i, j) is at
 * world x = x0 + i * 2^lod, z = z0 + j * 2^lod metres (x0, z0 multiples of
 * 2^lod; nx, nz in 1..4096), with e's edits (NULL: none), canonical
 * heights in quanta, row-major in z, into out (room for out_len): exactly
 * the samples of the tiles at the same places. Returns 0,
 * TERRAIN_ERR_INVAL, TERRAIN_ERR_TOOBIG (out_len short) or
 * TERRAIN_ERR_NOMEM.
 */
TERRAIN_API int terrain_heights(const struct terrain_world *w, const struct terrain_edits *e,
				struct terrain_work *work, int32_t lod, int64_t x0, int64_t z0,
				uint32_t nx, uint32_t nz, int32_t *out, size_t out_len);

/*
 * Heights in metres at n world positions xz[2k], xz[2k + 1] (x, z in
 * metres, on the world's int32 chunk grid), with e's edits (NULL: none), into
 * metres[k]: the bilinear interpolation of the four LOD-0 samples around
 * the point, h00 + fx (h10 - h00) + fz ((h01 + fx (h11 - h01)) - (h00 + fx
 * (h10 - h00))) in doubles in that order, so the same on every machine; a
 * point on the lattice gives its sample exactly. Pass points in batches:
 * close points (their box at most 16 samples a point) come from one block,
 * about 0.1 us each; a lone point costs a 2 x 2 block, tens of us.
 * Returns 0, TERRAIN_ERR_INVAL (a position not finite or out of range)
 * or TERRAIN_ERR_NOMEM.
 */
TERRAIN_API int terrain_sample(const struct terrain_world *w, const struct terrain_edits *e,
			       struct terrain_work *work, const double *xz, size_t n,
			       double *metres);

/* ---- checks ---------------------------------------------------------------- */

/* XXH3-64 (seed 0) of len bytes: the tile checksum's and chain's hash. */
TERRAIN_API uint64_t terrain_xxh3(const void *buf, size_t len);

/* XXH3-64 of n heights as little-endian int32: the hash of the golden
 * tiles (common/golden_tiles.inc) and of the server's self-check. */
TERRAIN_API uint64_t terrain_heights_hash(const int32_t *heights, size_t n);

/*
 * Generate the server's start-up self-check tiles (a few golden tiles of
 * the built-in presets, LOD 0 to 8, the int32 corners) and compare their
 * height hashes: 0 when this build of the library makes the world it was
 * built to make, else TERRAIN_ERR_CORRUPT (or the error that stopped it)
 * with a message naming the tile and both hashes in msg (may be NULL).
 * About 10 ms.
 */
TERRAIN_API int terrain_selfcheck(char *msg, size_t msglen);

/* XXH3-64 of the self-check tiles' expected hashes: two builds with the
 * same digest check the same tiles (a shared edit log records it). */
TERRAIN_API uint64_t terrain_selfcheck_digest(void);

#ifdef __cplusplus
}
#endif

#endif
