/*
 * view_int.h - what a player's view's two files share: view.c (the
 * window of chunks, their tiles verified and kept, requests and answers,
 * updates, queries) and view_local.c (local mode: /hashes, and tiles made
 * here where no edit reaches). The view's structs and the functions each
 * file calls in the other (view__*). Not part of the client's API:
 * callers use view.h.
 */
#ifndef VIEW_INT_H
#define VIEW_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"
#include "tile.h"
#include "view.h"

struct api_chunk_hash;
struct hclient;
struct hclient_resp;
struct terrain_work;

struct entry {
	int32_t cx, cz;
	uint8_t used;      /* holds (cx, cz) */
	int8_t want;       /* LOD wanted at the last update */
	int8_t lod;        /* LOD of the tile held, -1 none */
	int8_t inflight;   /* LOD last requested and not answered, -1 none */
	uint32_t mark;     /* update that last wanted it */
	uint64_t fresh_until;
	uint64_t edge[4];  /* XXH3 of each edge's samples (EDGE_*) */
	char etag[40];
	struct tile t;     /* heights, with keep_heights */
	uint64_t reads;    /* local mode: the edit version the held or asked
			      tile reads (its own, or the 3 x 3 largest for
			      materials); UINT64_MAX: none yet */
};

struct view {
	struct hclient *hc;
	struct view_params p;
	struct view_hooks h;
	struct view_stats st;
	uint32_t w;            /* window side */
	struct entry *e;       /* w * w */
	struct ring_chunk *list, *far; /* w * w each */
	size_t outstanding;
	uint32_t mark;
	uint64_t now;
	int batch_off;         /* the server has no batch endpoint */
	/* local mode */
	size_t nlist;          /* chunks of the last update's list */
	struct terrain_work *work;
	uint8_t *gen;          /* an encoded tile made here */
	size_t gen_cap;
	struct api_chunk_hash *edited; /* the last /hashes answers: chunks with
				   edits in known, sorted by cz, cx */
	size_t nedited, edited_cap;
	struct ring_rect known, asking; /* what edited covers; what is asked */
	int have_known, hashes_waiting;
	uint64_t known_until;
};

/* What a request was for. */
struct vreq {
	struct view *v;
	int32_t cx0, cz0, cx1, cz1; /* one chunk, or a batch's rectangle */
	uint8_t lod;
	uint8_t batch;
	uint8_t reval;
};


/* ---- view.c ---- */

/* The entry of (cx, cz) if the window holds it, else NULL. */
struct entry *view__find(const struct view *v, int64_t cx, int64_t cz);

/* Count an error and hand its text to the error hook. */
void view__report(struct view *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Verify and keep one tile body for chunk lod/cx/cz. */
void view__accept_tile(struct view *v, int32_t cx, int32_t cz, int lod,
		       const uint8_t *buf, size_t len, const char *etag,
		       long max_age);

/* GET one tile of e at its wanted LOD (conditional when reval): 1 when
 * sent, 0 when not, a negative ERR_* when it cannot be asked. */
long view__single(struct view *v, struct entry *e, int reval);

/* Common bookkeeping of an answer to q; 1 when the caller should go on. */
int view__answered(struct view *v, struct vreq *q, struct hclient_resp *r,
		   const char *what);

/* ---- view_local.c ---- */

/* Chunk (cx, cz)'s edit version as the last /hashes said (0: no edits). */
uint64_t view__local_version(const struct view *v, int64_t cx, int64_t cz);

/* view_update() in local mode, after the entries are claimed. */
long view__local_update(struct view *v);

#endif
