/*
 * world.h - the edit state of the worlds a server holds in memory.
 *
 * A world is (generator preset, seed) plus its ordered edit log. For each
 * world this module keeps the log (edit n at index n - 1), the world hash
 * chained over it (edit_hash_start() / edit_hash_next()), the edit hash
 * table that maps each chunk to the edits touching it with the chunk's
 * edit version (its last touching sequence number) and chunk edit hash
 * (the same chain from 0 over its edits only), and one record per accepted
 * batch (sequence range, world hash after it, touched chunks) from which
 * the event stream replays. Chunk lookups are O(1) on average (open
 * addressing). docs/edits.md defines coverage and the hashes.
 *
 * Sequence numbers are reserved before a batch is logged and applied once
 * the log says it is durable, in reservation order (world_reserve(),
 * world_apply()). Memory for a reserved batch is allocated at reservation,
 * so applying it cannot fail: a durable batch is never lost to ENOMEM.
 *
 * The map of worlds holds a world from its first reservation, applied
 * batch or snapshot on; a read never creates one (an event stream on a
 * world the map lacks waits in sse.c, keyed by preset and seed, and
 * creates nothing). A world's pointer may be kept across loop turns by
 * tile and map requests, generations deferred behind a bake (tiles.c),
 * edit requests in flight and event streams, so a world stays as long as
 * the map unless it is empty (world_empty()) and was never handed out:
 * a POST whose reservation or log append fails within the call that
 * created the world removes it (world_map_remove()).
 *
 * Pure data: no I/O, no clocks, no globals; loop thread only. The log is
 * journal.h's, the HTTP API edits.c's, event streams sse.c's.
 */
#ifndef WORLD_H
#define WORLD_H

#include <stddef.h>
#include <stdint.h>

struct batch;
struct revert;
struct edit;
struct catalog;
struct world;
struct world_map;

/* Most chunks one edit may touch: 4096 m brushes touch about 850 chunks
 * of 256 m; presets with small chunks reach it sooner (422 beyond). */
#define WORLD_MAX_EDIT_CHUNKS 4096
/* Most chunk touches of one batch, counting repeats (422 beyond); bounds
 * the answer and the event of a batch to a few hundred kilobytes. */
#define WORLD_MAX_BATCH_CHUNKS 16384

/* One accepted batch. Pointers stay valid until the world changes. */
struct world_batch {
	uint64_t first_seq, last_seq;
	uint64_t hash;            /* world hash after the batch */
	const int32_t *chunks;    /* nchunks (cx, cz) pairs, distinct, in the
				     order the batch first touched them (a
				     revert: the chunks whose edits it changed) */
	size_t nchunks;
	uint64_t time_ms;         /* when the log took it; 0: not said (old record) */
	const char *author;       /* who sent it, author_len bytes (not NUL-ended) */
	size_t author_len;        /* 0: not said (a record before version 3) */
	const struct revert *revert; /* a revert or an undo (revert.h); NULL: edits */
	uint64_t reverted;        /* a revert: the edits its filter matched */
	int undone;               /* a revert an undo has cancelled since */
};

/* The edit state of one chunk; all 0 for a chunk no edit touches. */
struct world_chunk {
	uint64_t version;         /* sequence number of its last edit */
	uint64_t hash;            /* chain from 0 over its edits */
	size_t nedits;            /* edits touching it */
};

/*
 * Create an empty world of a generator (fingerprint, chunks of
 * 2^chunk_log2 m) and seed. Returns 0, ERR_INVAL or ERR_NOMEM; free with
 * world_destroy() (NULL does nothing).
 */
int world_create(uint64_t fingerprint, uint64_t seed, int chunk_log2,
		 struct world **out);
void world_destroy(struct world *w);

uint64_t world_seed(const struct world *w);
uint64_t world_seq(const struct world *w);     /* last applied, 0: none */
uint64_t world_hash(const struct world *w);    /* after world_seq() */

/* Room for the caller (sse.c keeps its subscribers here); never read. */
void **world_user(struct world *w);

/* The preset index of w in its map (world_map_get()), -1 outside one. */
int world_gen(const struct world *w);

/*
 * Whether w is as world_create() made it: no edit ever applied, restored
 * from a snapshot or reserved (seq 0, base 0), no batch, no chunk, and
 * nothing in world_user(). Capacity it grew does not count.
 */
int world_empty(const struct world *w);

/*
 * Check that n edits fit the bounds above. Returns 0, or ERR_TOOBIG with
 * *bad the index of the first edit over WORLD_MAX_EDIT_CHUNKS, or n when
 * the batch as a whole is over WORLD_MAX_BATCH_CHUNKS.
 */
int world_check(const struct world *w, const struct edit *e, size_t n,
		size_t *bad);

/*
 * Reserve the next n sequence numbers for a checked batch, *first being
 * the first, and the memory to apply it. Returns 0, ERR_TOOBIG (fails
 * world_check) or ERR_NOMEM. Every reservation ends with world_apply() of
 * the same edits or with a cancel.
 */
int world_reserve(struct world *w, const struct edit *e, size_t n,
		  uint64_t *first);

/* Undo the latest reservation (first, n), which nothing follows. */
void world_cancel(struct world *w, const struct edit *e, size_t n,
		  uint64_t first);

/* Drop every reservation not yet applied (the log failed: none will be). */
void world_cancel_all(struct world *w);

/*
 * Give back the room of one reservation (first, n) in any order: its
 * batch will not be applied as reserved (a shared log refused it, or
 * took it without confirming: it then comes back through
 * world_map_follow() as any other node's batch). The sequence numbers
 * return only when it was the latest reservation. Nothing after
 * world_cancel_all().
 */
void world_release(struct world *w, const struct edit *e, size_t n, uint64_t first);

/*
 * Apply n edits as sequence numbers first..first+n-1, recording one batch.
 * first must be world_seq() + 1. A reserved batch cannot fail; an
 * unreserved one (replay) may return ERR_NOMEM or ERR_TOOBIG, changing
 * nothing. ERR_INVAL when first is out of order. On 0, *out (may be NULL)
 * describes the batch.
 */
int world_apply(struct world *w, uint64_t first, const struct edit *e,
		size_t n, struct world_batch *out);

/* The edit with sequence number seq (1..world_seq()), else NULL (also for
 * a revert's sequence number). */
const struct edit *world_edit(const struct world *w, uint64_t seq);

/* Whether edit seq (world_edit()) is taken out by a revert: it no longer
 * counts in any chunk. */
int world_edit_out(const struct world *w, uint64_t seq);

/*
 * Reverts (revert.h): reserve one sequence number for a revert or undo,
 * as world_reserve() does for edits; it ends with world_map_follow() of
 * its record or world_cancel()/world_release() with e NULL and n 1.
 */
int world_reserve_revert(struct world *w, uint64_t *first);

/* The batch index of sequence number seq (world_batches() when none:
 * before the base or after the last). */
size_t world_batch_of(const struct world *w, uint64_t seq);

/*
 * The edits whose brush covers the point (x_mm, z_mm) (distance below the
 * radius), reverted ones included, with sequence numbers below before:
 * the newest cap of them, newest first, into seqs. Returns how many. Only
 * edits after the snapshot (world_base()) are kept one by one.
 */
size_t world_point_edits(const struct world *w, int64_t x_mm, int64_t z_mm, uint64_t before,
			 uint64_t *seqs, size_t cap);

/*
 * History (world_history.c), for a snapshot that folds only the edits
 * older than --history: world_cut() is the last sequence number of the
 * last batch the log took more than history_ms before its newest (all of
 * them with history_ms 0; world_base() when none); world_hash_at() the
 * world hash after seq (a batch's end, or the base); world_chunk_upto()
 * the state of chunk (cx, cz) after upto with the edits up to it that
 * count now, into *st and a new array *edits (free() it) of *n: 1, 0 when
 * the chunk came to be after upto, or ERR_NOMEM. st's version is the
 * chunk's latest, even above upto (a revert after upto may have changed
 * it through edits folded at upto: world_restore_chunk() takes upto until
 * world_mark_snapshot() gives it back). world_record() encodes batch i (world_batch()) as a
 * record of generator gen, as the log had it (batch.h) less its key.
 */
uint64_t world_cut(const struct world *w, uint64_t history_ms);

/* After a snapshot's restore: world_snapshot() is then the last sequence
 * number it holds, the base or after it (its records); else the base. */
void world_mark_snapshot(struct world *w);
uint64_t world_snapshot(const struct world *w);
uint64_t world_hash_at(const struct world *w, uint64_t seq);
int world_chunk_upto(const struct world *w, int32_t cx, int32_t cz, uint64_t upto,
		     struct world_chunk *st, struct edit **edits, size_t *n);
int world_record(const struct world *w, size_t i, const char *gen, uint8_t *out, size_t cap,
		 size_t *len);

/* The first sequence number of the first batch the log took at or after
 * from_ms (world_seq() + 1 when none), by bisection: the batches' times
 * never go back. */
uint64_t world_reach(const struct world *w, uint64_t from_ms);

/* The oldest sequence number a revert of w may reach: 1 + world_base(). */
uint64_t world_floor(const struct world *w);

/* The edit state of chunk (cx, cz). */
void world_chunk(const struct world *w, int32_t cx, int32_t cz,
		 struct world_chunk *out);

/*
 * Copy the edits touching chunk (cx, cz), in sequence order, into a new
 * array *out (free() it; NULL when none) of *n. Returns 0 or ERR_NOMEM.
 */
int world_chunk_edits(const struct world *w, int32_t cx, int32_t cz,
		      struct edit **out, size_t *n);

/*
 * The edits touching chunk (cx, cz) after position *pos (0: from the
 * first), in sequence order, copied into a new array *out (free() it;
 * NULL when none) of *n; *pos becomes the position after the last one, so
 * that a later call returns only the edits applied since. A position is
 * opaque and belongs to its chunk. Returns 0 or ERR_NOMEM.
 */
int world_chunk_edits_from(const struct world *w, int32_t cx, int32_t cz, uint64_t *pos,
			   struct edit **out, size_t *n);

/*
 * The edits that chunk (cx, cz)'s material layer and objects depend on:
 * those touching the chunk or one of its 8 neighbours, each once, in
 * sequence order, copied into a new array *out (free() it; NULL when
 * none) of *n. Those read the heights up to one LOD step (at most a
 * chunk) beyond the chunk's square, which lie in the neighbours' squares,
 * so no other edit changes them. Returns 0 or ERR_NOMEM.
 */
int world_around_edits(const struct world *w, int32_t cx, int32_t cz,
		       struct edit **out, size_t *n);

/* The largest edit version of chunk (cx, cz) and its 8 neighbours: the
 * version of what world_around_edits() returns (0: no edit). */
uint64_t world_around_version(const struct world *w, int32_t cx, int32_t cz);

/*
 * The chunks with edits in the inclusive rectangle cx0..cx1 x cz0..cz1:
 * returns how many, sets *version to the largest edit version among them
 * (0: none), and writes up to cap of their (cx, cz) pairs to out (may be
 * NULL), in no particular order. Scans the rectangle or the world's list
 * of edited chunks, whichever is shorter, so a large rectangle (a zoomed
 * out map tile, maps.h) costs no more than the world's edited chunks.
 */
size_t world_rect_chunks(const struct world *w, int32_t cx0, int32_t cz0, int32_t cx1,
			 int32_t cz1, uint64_t *version, int32_t *out, size_t cap);

/* Batches recorded so far, and batch i of them (i < world_batches()). */
size_t world_batches(const struct world *w);
void world_batch(const struct world *w, size_t i, struct world_batch *out);

/* Index of the first batch whose edits come after seq (world_batches()
 * when none does). O(log batches). */
size_t world_batch_after(const struct world *w, uint64_t seq);

/* Distinct chunks with edits, for metrics. */
size_t world_chunks(const struct world *w);

/* Chunk i (< world_chunks()) with its position, in first-touch order. */
void world_chunk_at(const struct world *w, size_t i, int32_t *cx, int32_t *cz,
		    struct world_chunk *out);

/*
 * Snapshots (snapshots.h). A world restored from a snapshot starts at
 * sequence number seq with world hash hash, its history before that
 * folded into baked deltas that the caller keeps: world_base() is seq,
 * world_edit() and world_batch*() know only what was applied after it,
 * and the edits returned per chunk are those after it (the chunk's
 * version, hash and edit count still count every edit). world_restore()
 * takes an empty world; world_restore_chunk() then records each chunk's
 * state at seq, before anything is applied (a version above seq, which a
 * snapshot that keeps records after seq may give, counts as seq until
 * world_mark_snapshot()). 0, ERR_INVAL or ERR_NOMEM.
 */
uint64_t world_base(const struct world *w);
int world_restore(struct world *w, uint64_t seq, uint64_t hash);

/* Empty w again (as world_create() made it; its world_user() stays), to
 * restore it from a newer snapshot: a node that fell behind a trimmed
 * shared log. Every reservation must be over (world_cancel_all()). */
void world_rebase(struct world *w);
int world_restore_chunk(struct world *w, int32_t cx, int32_t cz,
			const struct world_chunk *st);

/*
 * The worlds of a catalog's generators, by (preset index, seed): an open-
 * addressing table (linear probing, at most half full) over a dense array
 * of entries. Worlds are created by world_map_get() and live as long as
 * the map unless world_map_remove() takes an empty one away.
 */
int world_map_create(const struct catalog *cat, struct world_map **out);
void world_map_destroy(struct world_map *m);

/* The world of (preset index gen, seed), or NULL when it has none yet. */
struct world *world_map_find(const struct world_map *m, int gen,
			     uint64_t seed);

/* The same, creating an empty world when missing. 0, ERR_INVAL, ERR_NOMEM. */
int world_map_get(struct world_map *m, int gen, uint64_t seed,
		  struct world **out);

/*
 * Remove and destroy the empty world (world_empty()) of (gen, seed). The
 * caller must know that nothing holds its pointer (the opening comment
 * says when that is). Deletes from the table by backward shift (no
 * tombstones); the last entry of the dense array takes the removed one's
 * world_map_at() index. Returns 0,
 * ERR_NOTFOUND when the map has no such world, or ERR_BUSY when it is not
 * empty (nothing removed: edits are never dropped here).
 */
int world_map_remove(struct world_map *m, int gen, uint64_t seed);

size_t world_map_count(const struct world_map *m);

/* The i-th world (i < world_map_count()) and its preset index; a world
 * keeps its index until a world_map_remove() (new ones go at the end). */
struct world *world_map_at(const struct world_map *m, size_t i, int *gen);

/*
 * Apply one committed batch of the edit log to its world (created when
 * new), whoever appended it: the one way edits reach a world (journal.h's
 * follow path). reserved: the batch is this node's own, reserved with
 * world_reserve(), and uses the room reserved for it (a shared log may
 * have given it other sequence numbers); else it finds its own room.
 * *out (may be NULL) gets the world. Returns 0; ERR_NOTFOUND when its
 * generator is not in the catalog (err names it); ERR_CORRUPT for a bad
 * edit or a sequence number out of order; ERR_TOOBIG or ERR_NOMEM. err
 * (errlen bytes) says what and where.
 */
int world_map_follow(struct world_map *m, const struct batch *b, int reserved,
		     struct world **out, char *err, size_t errlen);

/* world_map_follow() of an encoded record (batch.h); ERR_CORRUPT when it
 * does not decode. */
int world_map_replay(struct world_map *m, const uint8_t *payload, size_t len,
		     char *err, size_t errlen);

#endif
