/*
 * tiles_int.h - what the files of the tiles module share (tiles.c: the
 * tile and object routes and the module; tiles_jobs.c: the cached values,
 * their keys and the jobs that make them; tiles_batch.c: bundles of
 * tiles; maps.c: web maps). Not for other modules: their interface is
 * tiles.h.
 */
#ifndef TILES_INT_H
#define TILES_INT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "api/request.h"
#include "base/cache.h"
#include "http/http.h"

struct catalog;
struct preset;
struct slab;
struct world;
struct world_map;

struct tiles {
	uv_loop_t *loop;
	const struct catalog *cat;
	const struct world_map *worlds;
	struct req_env *env;
	struct cache *cache;
	struct slab *slab;               /* the cached values' memory (slab.h) */
	struct regions *regions;         /* eroded regions, shared by workers */
	struct bakes *bakes;             /* chunks' baked edit deltas */
	struct tilegen_pool *pool;       /* the workers' buffers (tilegen.h) */
	int baking;                      /* a bake job is running */
	unsigned generating;             /* generations queued or running */
	unsigned max_generations;
	char cache_control[48];          /* of unversioned answers (--max-age) */
	size_t cc_len;                   /* its header line, which ends every
					    prebuilt head */
};

/* The Cache-Control of an answer to a URL naming the current version
 * (?v=SEQ): its bytes can never change. */
#define TILES_IMMUTABLE "public, max-age=31536000, immutable"

/* What a cached value is: a tile or a chunk's objects in one form. */
enum value_kind {
	KIND_TILE,
	KIND_OBJECTS_JSON,
	KIND_OBJECTS_BINARY,
};

/* The cache key of a tile or of a chunk's objects in one content coding.
 * version is the chunk's edit version for a tile of heights, so an edit
 * makes stale exactly the tiles of the chunks it touched, at every LOD;
 * for a tile with the material layer and for objects, which also read
 * samples just beyond the chunk, it is the largest edit version of the
 * chunk and its 8 neighbours (world_around_version()). coding is an enum
 * req_coding: the zstd value is the base that generation makes; the gzip
 * and identity values are made from it when first asked for, and cached
 * beside it (docs/codings.md). precision is ?precision= in whole
 * centimetres (tile_precision_um() / 10000), 0 for the canonical heights
 * (no ?precision=, or the preset's own quantum), so each precision is a
 * value of its own and the canonical one is shared. format is ?format=:
 * TILE_FORM_CURRENT (0; versions 7 and 8), TILE_FORM_BEFORE7 (versions 5
 * and 6), TILE_FORM_BEFORE5 (versions 3 and 4) or TILE_FORM_LZ21 (versions
 * 1 and 2), the forms that decoders written before versions 7, 5 and 3
 * read (small tiles are versions 1 and 2 in all four). */
struct tile_key {
	uint64_t seed;
	uint64_t version;
	int32_t cx, cz;
	uint16_t preset;
	uint8_t precision;               /* cm; 0: canonical */
	uint8_t format;                  /* enum tile_form */
	uint8_t lod;                     /* 0 for objects */
	uint8_t coding;                  /* enum req_coding */
	uint8_t kind;                    /* enum value_kind */
	uint8_t layers;                  /* PIPELINE_LAYER_* bits of a tile */
};
_Static_assert(sizeof(struct tile_key) == 32, "tile_key has no padding");

/* A cached value: one coding of a tile or objects, its prebuilt 200 head
 * and its body in one allocation (data holds the bytes they point to). */
struct tile_value {
	uint64_t sum;                    /* content hash of the identity body */
	size_t raw_len;                  /* the identity body's length */
	struct http_buf head, body;      /* this coding's */
	char etag[24];                   /* this coding's strong tag */
	char data[];
};

/* The state of a tile, objects or batch request (struct req first). */
struct tile_req {
	struct req q;
	struct tiles *t;
	struct tile_key key;
	int coding;                      /* enum req_coding of the answer */
	int frame;                       /* ?encoding=zstd: the frame as the body */
	struct cache_waiter w;
	struct cache_entry *entry;
	int err;
	struct world *world;
	int immutable;                   /* ?v= named the current version */
};

/* q's tile request state (its module set). */
struct tile_req *tiles__req_of(struct req *q);

/* The detail of a failed generation. */
const char *tiles__gen_detail(int err);

/* The head of a 200 answer of type and vary (NULL: none) with len bytes,
 * etag and Content-Encoding encoding (NULL: none); its last line is
 * Cache-Control (t->cc_len bytes), which an immutable answer replaces. */
int tiles__format_head(char *buf, size_t cap, const struct tiles *t, const char *type,
		       const char *vary, size_t len, const char *etag, const char *encoding);

/* The X-Cache line of x's answer (hit or miss), with the immutable
 * Cache-Control line when x named the current version. */
const char *tiles__xcache(const struct tile_req *x, int hit);

/*
 * ?v=SEQ of x against version, the edit version of what x reads (x->world
 * set): 0 to go on, with x->immutable set when v is that version (or when
 * there is no v: x->immutable 0); 0 with *answered set when a 302 to the
 * current ?v= went out (v older, or a later sequence number at which
 * nothing x reads changed); else an error with x->q.detail: ERR_INVAL for
 * a bad v, ERR_NOTFOUND (404) for a v beyond the world's last sequence
 * number, ERR_NOMEM.
 */
int tiles__check_version(struct tile_req *x, uint64_t version, int *answered);

/* The strong tag of content hash sum in coding (enum req_coding):
 * "<hex>", "<hex>-z" (zstd, and the frame as the body), "<hex>-g". */
void tiles__etag(uint64_t sum, int coding, char out[24]);

/* Answer 304 for etag, with Vary: vary (NULL: none). */
int tiles__not_modified(struct tile_req *x, const char *etag, const char *vary);

/* ?encoding= (x->frame) and Accept-Encoding (x->coding) of x: the coding
 * to answer in. ERR_INVAL with detail for an ?encoding= other than zstd. */
int tiles__parse_coding(struct tile_req *x);

/* The Vary of a value of kind (enum value_kind), or of its zstd frame
 * sent as the body when frame is set (NULL: none). This and the
 * declarations down to tiles__key_of() are tiles_jobs.c's. */
const char *tiles__vary(int kind, int frame);

/* Queue the generation of key's value for the flight (w may be NULL). */
void tiles__generate(struct tiles *t, const struct tile_key *key, const struct preset *p,
		     const struct world *w, struct cache_entry *flight);

/* Make key's value in a coding other than zstd for the flight, from its
 * zstd base (fetched, or generated first from p and w's edits). */
void tiles__derive(struct tiles *t, const struct tile_key *key, const struct preset *p,
		   const struct world *w, struct cache_entry *flight);

/*
 * Loop thread: a generation job (a tile's, objects' or a map tile's) of
 * ns nanoseconds ended with err, status its uv_after_work_cb status (< 0,
 * cancelled: ERR_BUSY). Counts it, then completes the flight with value
 * (bytes; the cache owns it then) or fails it. Returns the error the
 * flight got, 0 when it completed.
 */
int tiles__job_done(struct tiles *t, struct cache_entry *flight, int status, int err,
		    void *value, size_t bytes, uint64_t ns);

/* The key of chunk (cx, cz) of world (pi, seed) with edit state w. */
struct tile_key tiles__key_of(const struct world *w, uint64_t seed, int pi, int32_t cx,
			      int32_t cz, int lod, int kind, unsigned layers);

/* The quantum in micrometres of key's heights for preset p. */
uint32_t tiles__quantum_of(const struct tile_key *key, const struct preset *p);

/* ?precision= of x for preset p into key->precision (0 when absent or the
 * preset's own quantum): ERR_INVAL with detail for an unknown name or one
 * finer than (or not a multiple of) the preset's quantum. */
/* ?format= of x into key->format: absent or 7, the current form (versions
 * 7 and 8); 5, versions 5 and 6; 3, versions 3 and 4; 1, the lz21 form
 * (versions 1 and 2).
 * Returns 0, ERR_INVAL with a detail, or ERR_NOMEM. */
int tiles__parse_format(struct tile_req *x, struct tile_key *key);

int tiles__parse_precision(struct tile_req *x, const struct preset *p,
			   struct tile_key *key);

/* The LOD (segment 4) for preset p, and ?layers=. */
int tiles__parse_lod(struct tile_req *x, const struct preset *p, int *lod);
int tiles__parse_layers(struct tile_req *x, unsigned *layers);

/* GET chunks/{lod}?cx0=&cz0=&cx1=&cz1= (tiles_batch.c). */
int tiles__h_batch(struct req *q);

#endif
