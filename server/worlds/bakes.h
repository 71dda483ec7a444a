/*
 * bakes.h - the baked edit deltas of the chunks a server holds (bake.h),
 * and the queue of chunks waiting for a bake.
 *
 * A bake is derived data: the chunk's edits up to some version folded
 * into one zstd-compressed LOD-0 delta, so that a cold tile costs one
 * generation and one delta plus the few edits since, whatever the
 * chunk's history. The edit log stays the truth; losing every bake
 * changes no byte served, only the time it takes. Loop thread only.
 *
 * Hot deltas: decoding a delta frame costs about half a cold tile, so the
 * deltas used last are also kept decoded (struct bake_delta), up to
 * BAKES_HOT_BYTES, least recently used dropped first. A bake keeps the
 * delta it computed; a tile that had to decode a frame gives it back
 * (bakes_offer_hot()). After a restart, bakes_warm() decodes the deltas of
 * the most edited chunks, folding in the edits their bake does not hold
 * yet, on two workers at a time, so that the first tile of such a chunk
 * neither decodes a frame nor applies its history.
 */
#ifndef BAKES_H
#define BAKES_H

#include <stddef.h>
#include <stdint.h>

struct bakes;
struct catalog;
struct region_source;
struct uv_loop_s;
struct world_map;

/* The default of --bake-after: a chunk is baked once this many of its
 * edits are not yet in its bake, so a cold tile applies about this many
 * edits at most beyond its delta. */
#define BAKES_AFTER 8

/* Bytes of decoded deltas kept (allows tests to override): 64 MiB, some
 * 250 chunks of 256 m. */
#ifndef BAKES_HOT_BYTES
#define BAKES_HOT_BYTES ((size_t)64 << 20)
#endif

/* A decoded delta of n LOD-0 quanta, shared by reference like a frame
 * (refs on the loop thread; workers read d while they hold one). */
struct bake_delta {
	unsigned refs;
	size_t n;
	int32_t d[];
};

/* A zstd frame of a delta, shared by reference (loop thread only; a
 * worker may read data while it holds a reference taken for it). */
struct bake_blob {
	unsigned refs;
	size_t len;
	uint8_t data[];
};

struct bakes__job;

/* One chunk's bake. */
struct bake_rec {
	uint64_t version;   /* chunk version folded in; 0: nothing baked */
	uint64_t pos;       /* world_chunk_edits_from() position after it */
	size_t folded;      /* edits folded in */
	struct bake_blob *frame; /* the delta (a reference), NULL: none */
	const uint8_t *blob;     /* frame->data, NULL: none */
	size_t len;
	int queued;         /* waiting in the queue or being baked */
	int failed;         /* a delta overflowed int32: stays unbaked */
	struct bake_blob *base; /* the delta at the world's snapshot, which a
				   revert goes back to (a reference), or NULL */
	size_t base_folded; /* edits folded into base */
	/* private to bakes.c */
	struct bake_delta *hot;  /* the frame decoded, NULL: not kept */
	struct bake_rec *newer, *older; /* the hot list, most recent first */
	uint8_t job;        /* what the queued job does: JOB_BAKE, JOB_DECODE */
	struct bakes__job *running; /* its job while on the pool, else NULL */
};

struct bakes_stats {
	size_t chunks;      /* chunks with a bake */
	size_t bytes;       /* compressed deltas */
	size_t queued;      /* chunks waiting */
	uint64_t baked;     /* bakes made since start */
	size_t hot;         /* deltas kept decoded */
	size_t hot_bytes;   /* their bytes */
};

/* Bakes of the worlds of map (generators of cat), baked on loop's worker
 * pool one chunk at a time once after edits are unbaked (0: never),
 * eroded regions from rs. 0 or ERR_NOMEM. */
int bakes_create(struct uv_loop_s *loop, const struct catalog *cat,
		 const struct world_map *worlds, const struct region_source *rs,
		 unsigned after, struct bakes **out);
/* Start no more bakes (the server drains); the one running finishes.
 * arg is the struct bakes. */
void bakes_stop(void *arg);

/* Free b once its bake job (if any) has finished. NULL does nothing. */
void bakes_destroy(struct bakes *b);

/*
 * A batch of world (gen, seed) touched these chunks (n (cx, cz) pairs):
 * queue the ones with `after` edits or more beyond their bake, and
 * start baking if idle. Out of memory only delays bakes.
 */
void bakes_changed(struct bakes *b, int gen, uint64_t seed, const int32_t *chunks, size_t n);

/*
 * A revert (sequence number seq) changed which edits of these chunks
 * count: each bake goes back to its base (the snapshot's delta, or none)
 * with every edit after it pending, and a bake job already running for
 * it is not taken (its version is below seq). Then as bakes_changed().
 */
void bakes_reset(struct bakes *b, int gen, uint64_t seed, const int32_t *chunks, size_t n,
		 uint64_t seq);

/* Keep frame as r's base (snapshots.c, on restore). */
void bakes_set_base(struct bake_rec *r, struct bake_blob *frame, size_t folded);

/* The record of chunk (cx, cz) of world (gen, seed); with create, a new
 * empty one when there is none (NULL only when out of memory). */
struct bake_rec *bakes_get(struct bakes *b, int gen, uint64_t seed, int32_t cx, int32_t cz,
			   int create);

/*
 * Loop thread: what chunk (cx, cz) of world w (gen, seed) adds to a job
 * that generates it: a copy of its bake's delta frame in *blob (free();
 * NULL when it has none) of *len bytes, and a copy of the edits since
 * that bake (world_chunk_edits_from()). 0 or ERR_NOMEM (nothing to free).
 */
struct edit;
struct world;
int bakes_copy(struct bakes *b, const struct world *w, int gen, uint64_t seed, int32_t cx,
	       int32_t cz, uint8_t **blob, size_t *len, struct edit **edits, size_t *n);

/*
 * Loop thread: as bakes_copy(), but a bake kept decoded comes as *hot, a
 * reference (bakes_delta_unref() it; *blob is then NULL), so the job
 * neither copies nor decodes the frame. *version is the chunk version of
 * the bake (0: none), for bakes_offer_hot(). 0 or ERR_NOMEM.
 */
int bakes_copy_hot(struct bakes *b, const struct world *w, int gen, uint64_t seed, int32_t cx,
		   int32_t cz, struct bake_delta **hot, uint8_t **blob, size_t *len,
		   uint64_t *version, struct edit **edits, size_t *n);

/* Loop thread: a job decoded the frame of chunk (cx, cz)'s bake of
 * version: keep it hot if that is still the bake (the reference is
 * taken either way). */
void bakes_offer_hot(struct bakes *b, int gen, uint64_t seed, int32_t cx, int32_t cz,
		     uint64_t version, struct bake_delta *d);

/*
 * Right after the replay (or a snapshot's restore): queue the chunks with
 * the most edits, as many as BAKES_HOT_BYTES of decoded deltas hold, to
 * be baked (when their bake lacks some of their edits, however few) or
 * decoded, two at a time on the worker pool until that queue is done.
 */
void bakes_warm(struct bakes *b);

/*
 * Loop thread: when a bake of chunk (cx, cz) of world (gen, seed) is on
 * the pool folding at least min edits, call done(arg) once it has ended
 * (whatever its outcome) and return 1; else return 0 (done is not
 * called). A tile that would apply that many edits itself waits for the
 * bake instead of doing its work twice (right after a restart, every tile
 * of a chunk whose history no bake holds would).
 */
int bakes_await(struct bakes *b, int gen, uint64_t seed, int32_t cx, int32_t cz, size_t min,
		void (*done)(void *arg), void *arg);

/* A new delta of n quanta (refs 1, d uninitialised), or NULL; a
 * reference more; one less (the last frees it; NULL does nothing). */
struct bake_delta *bakes_delta_new(size_t n);
struct bake_delta *bakes_delta_ref(struct bake_delta *d);
void bakes_delta_unref(struct bake_delta *d);

/* Replace r's delta with frame (the reference is taken) folding edits up
 * to version, of which there are folded, ending at world position pos. */
void bakes_set(struct bakes *b, struct bake_rec *r, uint64_t version, uint64_t pos,
	       size_t folded, struct bake_blob *frame);

/* A new frame holding a copy of data (refs 1), or NULL; a reference more;
 * one less (the last frees it; NULL does nothing). */
struct bake_blob *bakes_blob_new(const uint8_t *data, size_t len);
struct bake_blob *bakes_blob_ref(struct bake_blob *f);
void bakes_blob_unref(struct bake_blob *f);

/*
 * Any thread. A delta frame is the chunk's (2^chunk_log2 + 1)^2 delta
 * quanta encoded as a LOD-0 tile (docs/tile-format.md: its predictor
 * suits smooth brush deltas; 1.6x smaller than raw int32 under zstd on
 * bench/mklog.c's worlds), then zstd. pack: a new frame *blob (free() it)
 * of *len bytes; unpack: decode blob into delta. 0, ERR_NOMEM, ERR_ZSTD,
 * ERR_CORRUPT (not such a frame).
 */
int bakes_pack(const int32_t *delta, int chunk_log2, uint8_t **blob, size_t *len);
int bakes_unpack(const uint8_t *blob, size_t len, int chunk_log2, int32_t *delta);

/*
 * Any thread: the delta of chunk (cx, cz) of world (p, seed) with edits
 * e[0..n) folded onto the delta frame old (old_len bytes; NULL: none),
 * as a new zstd frame *blob (free() it) of *len bytes. 0, ERR_RANGE (a
 * difference beyond int32), ERR_NOMEM or ERR_ZSTD.
 */
struct edit;
struct preset;
int bakes_fold(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
	       const struct region_source *rs, const uint8_t *old, size_t old_len,
	       const struct edit *e, size_t n, uint8_t **blob, size_t *len);

/* bakes_fold(), the new delta also copied into keep (its side^2 quanta;
 * NULL: not). */
int bakes_fold_keep(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
		    const struct region_source *rs, const uint8_t *old, size_t old_len,
		    const struct edit *e, size_t n, uint8_t **blob, size_t *len, int32_t *keep);

void bakes_stats(const struct bakes *b, struct bakes_stats *out);

#endif
