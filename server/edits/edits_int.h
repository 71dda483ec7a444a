/*
 * edits_int.h - what the files of the edits module share (edits.h is its
 * interface): the module's state, a request's state, and the handlers
 * and helpers one file gives another. edits.c holds the follow path, the
 * POST and GET of edits and the module; edits_read.c world info, presets,
 * chunk hashes and event streams; edits_replay.c the start-up replay and
 * the snapshots' hooks.
 */
#ifndef EDITS_INT_H
#define EDITS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "access.h"
#include "api/request.h"
#include "batch.h"
#include "edit.h"
#include "edits.h"
#include "util.h"

struct catalog;
struct idem;
struct journal;
struct snapshots;
struct sse;
struct uv_loop_s;
struct world;
struct world_map;

struct edits {
	const struct catalog *cat;
	struct req_env *env;
	struct world_map *worlds;
	struct sse *sse;
	struct journal *log;
	struct access *access;           /* who may write, how much (access.h) */
	char *presets_json;
	size_t presets_len;
	char presets_etag[20];           /* strong, XXH3-64 of the body */
	long long presets_mtime;         /* Last-Modified */
	char presets_head[160];          /* their header lines */
	struct uv_loop_s *loop;
	unsigned history_s;         /* --history (edits.h) */
	uint64_t time_hw;                /* the latest time a record was stamped with */
	edits_change_fn on_change;       /* chunks a batch touched, or NULL */
	void *change_arg;
	struct idem *keys;               /* what keyed batches did (idem.h) */
	struct edit_req **flying;        /* keyed POSTs in the log's hands */
	size_t nflying, capflying;
	uint64_t appending;              /* POSTs in the log's hands */
	struct snapshots *snaps;         /* NULL: none */
	int compact;                     /* compact the log below the snapshot */
	int started_at;                  /* the log read on from the snapshot's
					    position (journal_start_at()) */
	uint64_t covered;                /* replay: batches the snapshot holds */
	uint64_t confirmed;              /* of those, ending at a world's base */
	uint64_t skipped;                /* replay: batches of absent generators */
	char skip_note[256];
	char follow_err[256];
	uint8_t wire[EDIT_BATCH_MAX * EDIT_WIRE_SIZE];
};

/* The state of a request of this module (struct req first). */
struct edit_req {
	struct req q;
	struct edits *e;
	struct world *world;
	struct access_who who;           /* who sent it (access_identify()) */
	struct edit *edits;              /* a POST's parsed batch, malloc'd */
	size_t nedits;
	uint64_t first;                  /* its reserved first seq */
	int keyed;                       /* it has an Idempotency-Key: */
	uint8_t key[BATCH_KEY];          /* its hash with the world and sender */
	uint8_t body[16];                /* XXH3-128 of the canonical edits */
};

static inline struct edit_req *edit_req_of(struct req *q)
{
	struct edit_req *x = container_of(q, struct edit_req, q);

	x->e = q->module;
	return x;
}

/* The sequence number and hash of world (pi, seed), edited or not. */
uint64_t edits__world_state(const struct edits *e, int pi, uint64_t seed, uint64_t *hash);

/* The /v1/presets body, built once: 0 or ERR_NOMEM. */
int edits__presets_body(struct edits *e);

/* The read-only routes' handlers (edits_info.c). */
int edits__h_world(struct req *q);
int edits__h_presets(struct req *q);
int edits__h_hashes(struct req *q);
int edits__h_events(struct req *q);

#endif
