/*
 * world_int.h - the representation of a world, shared by world.c (edits,
 * chunks, batches, the map) and world_revert.c (authors and reverts).
 * Not for other modules: world.h is the interface.
 */
#ifndef WORLD_INT_H
#define WORLD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "edit.h"
#include "revert.h"

#define NONE UINT32_MAX
#define MIN_SLOTS 64

/* One touch: edit index (seq - base - 1) in the log, next touch of the chunk. */
struct node {
	uint32_t edit;
	uint32_t next;
};

struct chunk {
	int32_t cx, cz;
	uint32_t head, tail;     /* its first and last node, NONE: none */
	uint32_t nedits;         /* edits that count, those folded included */
	uint32_t folded;         /* of those, folded into a snapshot: no nodes */
	uint64_t version, hash;
	uint64_t base_hash;      /* its hash at the snapshot (0: none) */
	uint64_t later;          /* restored at a cut before its version: that
				    version, given back once the snapshot's
				    records are replayed (0: none) */
};

struct applied {
	uint64_t first, last, hash;
	size_t off, n;           /* its pairs in bchunks: [off, off + n) */
	uint64_t time_ms;        /* when the log took it; 0: not said */
	uint32_t author;         /* index + 1 in the authors; 0: none */
	uint32_t revert;         /* index + 1 in the reverts; 0: edits */
};

struct wauthor {
	uint8_t len;
	char name[REVERT_AUTHOR_MAX];
};

struct wrevert {
	struct revert r;
	uint64_t seq;            /* its own sequence number */
	uint64_t count;          /* edits its filter matched when applied */
	int undone;              /* an undo cancelled it */
};

struct world {
	uint64_t fingerprint, seed;
	int chunk_log2;
	uint64_t seq, hash;      /* last applied, and the hash after it */
	uint64_t base;           /* edits folded into a snapshot: edit seq is
				    at index seq - base - 1 */
	uint64_t base_hash;      /* the world hash at base */
	uint64_t snap;           /* its seq once restored from a snapshot, with
				    the snapshot's records (0: none) */
	uint64_t reserved;       /* last reserved sequence number */
	size_t pend_edits, pend_touches, pend_batches; /* reserved, unapplied */
	struct edit *edits;      /* a revert's slot holds a zero edit */
	uint32_t *out;           /* per edit: reverts taking it out (0: counts) */
	size_t nedits, cap_edits, cap_out;
	struct applied *batches;
	size_t nbatches, cap_batches;
	int32_t *bchunks;        /* (cx, cz) pairs */
	size_t npairs, cap_bchunks;
	struct chunk *chunks;
	size_t nchunks, cap_chunks;
	struct node *nodes;
	size_t nnodes, cap_nodes;
	uint32_t *slots;         /* chunk index + 1, 0: empty */
	size_t nslots;           /* a power of two, or 0 */
	struct wauthor *authors; /* distinct authors of its batches */
	size_t nauthors, cap_authors;
	uint32_t *aslots;        /* author index + 1, 0: empty; open addressing */
	size_t naslots;
	struct wrevert *reverts;
	size_t nreverts, cap_reverts;
	void *user;
	int gen;                 /* preset index in its map, -1: none */
};

int world__grow(void *pv, size_t *cap, size_t need, size_t size);

struct batch;
struct world_batch;
/* world_apply() of a batch whose record says more (m: a version-3 record's
 * time and author; r: a revert, e NULL and n 1); reserved: it has a
 * reservation's room. */
int world__apply(struct world *w, uint64_t first, const struct edit *e, size_t n,
		 int reserved, struct world_batch *out, const struct batch *m,
		 const struct revert *r);
struct chunk *world__chunk(struct world *w, int32_t cx, int32_t cz);

/* world_revert.c: the author's index + 1 (interned), 0 on ENOMEM. */
uint32_t world__author(struct world *w, const char *name, size_t len);
void world__free_reverts(struct world *w);

/*
 * Apply revert r (its batch b, sequence number seq, with room for one
 * batch): take out or put back the edits it names, recompute the chunks
 * they touch (version seq), record them as b's chunks. 0 or ERR_NOMEM.
 */
int world__revert(struct world *w, struct applied *b, const struct revert *r, uint64_t seq);

#endif
