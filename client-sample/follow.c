/*
 * follow.c - terrain-client follow (follow.h).
 *
 *   follow --server URL --seed S [--gen G] [--duration SEC] [--lod L]
 *          [--connections N] [--timeout-ms T]
 *
 * Keeps a copy of the world's edit log (editlog.h) and subscribes to its
 * event stream (GET /v1/worlds/{seed}/events, text/event-stream read by
 * evstream.h through a streaming hclient request). Start-up: the world
 * info, then the log from seq 0 (pages of GET .../edits?since=N, following
 * "next"), whose world hash must equal the server's (the page's, and the
 * world info's at its edit_seq); then the stream, with Last-Event-ID set to
 * the last seq held, so no batch is missed between the two.
 *
 * Each "edits" event is checked in order, one at a time:
 *   1. the batch follows the previous one (first_seq = last seen + 1) and
 *      its id is its last_seq;
 *   2. the log is brought up to date (GET .../edits?since=N): the world
 *      hash recomputed over the log must equal the server's at its seq and
 *      the event's at last_seq, and the chunks the event lists must be the
 *      chunks the batch's edits touch (edit_chunks());
 *   3. every chunk listed is fetched again at --lod (0): checksum, header
 *      (seed, cx, cz, lod, generator fingerprint) and edit_seq, which must
 *      equal the chunk's version in the log (the seq of the last edit
 *      touching it; a tile newer than the log makes the log catch up
 *      first);
 * then one line: "seq A..B world_hash H ok, refetched N chunks".
 *
 * With --local (local mode, docs/client.md) nothing is refetched: the log's
 * edits are applied here (libterrain's edit log, terrain.h), and for each
 * batch the chunks it touched get GET /hashes, whose versions and chunk
 * hashes must be the ones the local log computes, and are generated here
 * at --lod with their edits, the tile's edit_seq being that version: "seq
 * A..B world_hash H ok, N chunks made here, hashes equal". The world must
 * pass cli_local_world()'s identity check first.
 *
 * A stream that ends or fails is opened again after a backoff (100 ms,
 * doubling to 5 s; the first answer resets it) with Last-Event-ID = the
 * last batch received, so the server replays what came meanwhile; after 12
 * failures in a row follow gives up. Exit: 0 at --duration (after the
 * batch being checked) or on SIGINT / SIGTERM; 1 on any mismatch, corrupt
 * tile, error status or a server gone for good, with a message.
 */
#include "follow.h"

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "batch.h"
#include "cli.h"
#include "editlog.h"
#include "err.h"
#include "evstream.h"
#include "hclient.h"
#include "revert.h"
#include "edit.h"
#include "seed.h"
#include "terrain.h"
#include "tile.h"

#define CMD "follow"
#define LOG_PAGE 256          /* edits per GET .../edits page */
#define STREAM_IDLE_MS 45000  /* three missed keep-alives (15 s each) */
#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 5000
#define RETRY_GIVE_UP 12      /* stream failures in a row */
#define ATTEMPTS 8            /* hclient tries per request (~6 s backoff) */

struct follow;

struct tilecheck {
	struct follow *f;
	int32_t cx, cz;
	uint64_t edit_seq;    /* from the tile's header */
};

struct pending {
	struct pending *next;
	struct api_batch b;
	struct tilecheck *t;  /* one per chunk of b */
	size_t waiting;       /* tiles not yet answered */
};

struct follow {
	struct cli_session s;
	const struct cli_opts *o;
	uint64_t seed;
	struct editlog log;
	struct evstream ev;
	void (*then)(struct follow *f); /* after the log is up to date */
	/* the stream */
	int open;             /* its 2xx head came */
	int ever_open;
	uint64_t resume;      /* last_seq of the last batch received */
	unsigned fails;       /* stream failures in a row */
	uv_timer_t retry, deadline;
	uv_signal_t sigint, sigterm;
	int handles;          /* the four above are initialised */
	/* batches: received, then checked one at a time */
	struct pending *head, *tail, *cur;
	int stopping;         /* --duration reached */
	int done, rc;
	/* totals */
	uint64_t batches, edits, tiles, reconnects;
	/* local mode */
	struct terrain_world *world;
	struct terrain_edits *edits_here;  /* f->log's edits, applied here */
	struct terrain_work *work;
	int32_t *heights;                  /* a generated tile */
	size_t heights_cap;
	size_t hashes_waiting;
};

static void process_next(struct follow *f);
static void subscribe(struct follow *f);

static void finish(struct follow *f, int rc)
{
	if (f->done)
		return;
	f->done = 1;
	f->rc = rc;
}

static void fatal(struct follow *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fatal(struct follow *f, const char *fmt, ...)
{
	va_list ap;

	if (f->done)
		return;
	fprintf(stderr, CLI_PROG " " CMD ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	finish(f, EXIT_FAILURE);
}

/* "cannot reach the server (...)", "HTTP 404: ...", or the decode error. */
static void resp_error(const struct hclient_resp *r, char *out, size_t cap)
{
	char text[300];

	if (!r->status) {
		snprintf(out, cap, "cannot reach the server (%s)",
			 r->detail ? r->detail : err_str(r->err));
	} else if (r->status != 200 && r->status != 304) {
		api_error_text(r->body, r->body_len, text, sizeof(text));
		snprintf(out, cap, "HTTP %d%s%s", r->status, text[0] ? ": " : "",
			 text);
	} else {
		snprintf(out, cap, "%s", r->detail ? r->detail : err_str(r->err));
	}
}

/* ---- the log ---- */

/* Local mode: apply the log's entries that the local log lacks, as the
 * canonical records the server keeps: old entries (no author) as
 * version-1 records, a run of edits by one author at one time as a
 * version-3 record, a revert or undo as its own version-3 record (so the
 * reverts match by author and time as on the server); its world hash must
 * be the log's. */
static int local_catch_up(struct follow *f)
{
	static uint8_t wire[TERRAIN_BATCH_MAX * TERRAIN_EDIT_SIZE], rec[BATCH_MAX];
	const char *gen = terrain_world_name(f->world);
	uint64_t at = terrain_edits_seq(f->edits_here);
	int rc;

	while (at < f->log.n) {
		const struct editlog_entry *x = &f->log.x[at];
		uint8_t rw[REVERT_WIRE];
		struct batch b = { gen, strlen(gen), f->seed, at + 1, 1, NULL, x->time_ms,
				   NULL, x->author, x->author_len, NULL };
		size_t n = 1, len;

		if (x->kind == 1) {
			revert_encode(x->r, rw);
			b.revert = rw;
		} else {
			/* a run of edits of one kind: no author, or one author at one time */
			while (at + n < f->log.n && n < TERRAIN_BATCH_MAX &&
			       f->log.x[at + n].kind == 0 &&
			       f->log.x[at + n].author_len == x->author_len &&
			       f->log.x[at + n].time_ms == x->time_ms &&
			       !memcmp(f->log.x[at + n].author, x->author, x->author_len))
				n++;
			for (size_t k = 0; k < n; k++)
				edit_encode(&f->log.e[at + k], wire + k * TERRAIN_EDIT_SIZE);
			b.count = (uint32_t)n;
			b.edits = wire;
		}
		rc = batch_encode(&b, rec, sizeof(rec), &len);
		if (!rc)
			rc = terrain_edits_apply_record(f->edits_here, rec, len);
		if (rc) {
			fatal(f, "applying %s %" PRIu64 "..%" PRIu64 " here: %s",
			      x->kind ? "the revert" : "edits", at + 1, at + n, terrain_strerror(rc));
			return -1;
		}
		at += n;
	}
	if (terrain_edits_world_hash(f->edits_here) != editlog_hash(&f->log, at)) {
		fatal(f, "the local edit log's world hash %016" PRIx64 " is not the log's %016"
		      PRIx64 " at seq %" PRIu64, terrain_edits_world_hash(f->edits_here),
		      editlog_hash(&f->log, at), at);
		return -1;
	}
	return 0;
}

static void request_page(struct follow *f);

static void on_page(void *arg, struct hclient_resp *r)
{
	struct follow *f = arg;
	struct editlog_page pg;
	char msg[400];
	uint64_t mine;
	int rc;

	if (f->done)
		return;
	if (r->err || r->status != 200) {
		resp_error(r, msg, sizeof(msg));
		fatal(f, "edit log after seq %zu: %s", f->log.n, msg);
		return;
	}
	rc = editlog_add_page(&f->log, (const char *)r->body, r->body_len,
			      &pg, msg, sizeof(msg));
	if (rc) {
		fatal(f, "edit log after seq %zu: %s", f->log.n,
		      rc == ERR_NOMEM ? err_str(rc) : msg);
		return;
	}
	if (pg.has_next) {
		request_page(f);
		return;
	}
	if (f->edits_here && local_catch_up(f))
		return;
	mine = editlog_hash(&f->log, pg.seq);
	if (mine != pg.world_hash) {
		fatal(f, "world hash mismatch at seq %" PRIu64 ": the server says "
		      "%016" PRIx64 ", the log gives %016" PRIx64, pg.seq,
		      pg.world_hash, mine);
		return;
	}
	f->then(f);
}

static void request_page(struct follow *f)
{
	char target[512];
	int rc;

	if (api_log_path(target, sizeof(target), f->o->seed, f->o->gen,
			 f->log.n, LOG_PAGE) ||
	    (rc = hclient_get(f->s.hc, target, NULL, on_page, f)) != 0)
		fatal(f, "GET edit log: cannot send the request");
}

/* Bring the log up to the server's last seq, check the hash, then then(). */
static void sync_log(struct follow *f, void (*then)(struct follow *f))
{
	f->then = then;
	request_page(f);
}

/* ---- checking a batch ---- */

static void batch_free(struct pending *b)
{
	if (!b)
		return;
	api_batch_free(&b->b);
	free(b->t);
	free(b);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* n pairs cx, cz as sorted keys in a new array. */
static uint64_t *sorted_keys(const int32_t *xz, size_t n)
{
	uint64_t *k = malloc((n ? n : 1) * sizeof(*k));

	if (!k)
		return NULL;
	for (size_t i = 0; i < n; i++)
		k[i] = (uint64_t)(uint32_t)xz[2 * i] << 32 |
		       (uint32_t)xz[2 * i + 1];
	qsort(k, n, sizeof(*k), cmp_u64);
	return k;
}

/* The event's chunks must be the set the batch's edits touch, each once. */
static int check_chunks(struct follow *f, const struct api_batch *b)
{
	uint64_t *mine = NULL, *theirs = NULL;
	int32_t *xz = NULL;
	size_t n = 0, k;
	int rc = -1;

	if (editlog_batch_chunks(&f->log, b->first_seq, b->last_seq, &xz, &n) ||
	    !(mine = sorted_keys(xz, n)) ||
	    !(theirs = sorted_keys(b->chunks, b->nchunks))) {
		fatal(f, "%s", err_str(ERR_NOMEM));
		goto out;
	}
	for (k = 0; k < n && k < b->nchunks && mine[k] == theirs[k]; k++)
		;
	if (k < n || k < b->nchunks) {
		uint64_t c = k < b->nchunks ? theirs[k] : mine[k];

		fatal(f, "seq %" PRIu64 "..%" PRIu64 ": the event lists %zu "
		      "chunks, the log's edits touch %zu; they differ at chunk "
		      "%" PRId32 ",%" PRId32, b->first_seq, b->last_seq,
		      b->nchunks, n, (int32_t)(uint32_t)(c >> 32),
		      (int32_t)(uint32_t)c);
		goto out;
	}
	rc = 0;
out:
	free(xz);
	free(mine);
	free(theirs);
	return rc;
}

static void batch_ok(struct follow *f)
{
	struct pending *c = f->cur;

	if (f->world)
		printf("seq %" PRIu64 "..%" PRIu64 " world_hash %016" PRIx64
		       " ok, %zu chunks made here, hashes equal\n", c->b.first_seq,
		       c->b.last_seq, c->b.world_hash, c->b.nchunks);
	else
		printf("seq %" PRIu64 "..%" PRIu64 " world_hash %016" PRIx64
		       " ok, refetched %zu chunks\n", c->b.first_seq, c->b.last_seq,
		       c->b.world_hash, c->b.nchunks);
	fflush(stdout);
	f->batches++;
	f->edits += c->b.last_seq - c->b.first_seq + 1;
	f->tiles += c->b.nchunks;
	f->cur = NULL;
	batch_free(c);
	if (f->stopping)
		finish(f, 0);
	else
		process_next(f);
}

/* Every tile answered and the log covers them: compare the versions. */
static void verify_tiles(struct follow *f)
{
	struct pending *c = f->cur;

	for (size_t k = 0; k < c->b.nchunks; k++) {
		const struct tilecheck *t = &c->t[k];
		uint64_t v = editlog_version(&f->log, t->cx, t->cz);

		if (t->edit_seq != v) {
			fatal(f, "chunk %ld/%" PRId32 "/%" PRId32 " (lod/cx/cz): "
			      "tile edit_seq %" PRIu64 ", but the log's last edit "
			      "touching it is seq %" PRIu64, f->o->lod, t->cx,
			      t->cz, t->edit_seq, v);
			return;
		}
	}
	batch_ok(f);
}

static void on_tile(void *arg, struct hclient_resp *r)
{
	struct tilecheck *tc = arg;
	struct follow *f = tc->f;
	const struct api_world *wi = &f->s.wi;
	struct pending *c = f->cur;
	char msg[400];
	struct tile t;
	uint64_t newest = 0;
	int rc;

	if (f->done)
		return;
	if (r->err || r->status != 200) {
		resp_error(r, msg, sizeof(msg));
		fatal(f, "chunk %ld/%" PRId32 "/%" PRId32 " (lod/cx/cz): %s",
		      f->o->lod, tc->cx, tc->cz, msg);
		return;
	}
	if ((rc = tile_decode(r->body, r->body_len, &t)) != 0) {
		fatal(f, "chunk %ld/%" PRId32 "/%" PRId32 " (lod/cx/cz): corrupt "
		      "tile: %s", f->o->lod, tc->cx, tc->cz, err_str(rc));
		return;
	}
	if (t.seed != f->seed || t.cx != tc->cx || t.cz != tc->cz ||
	    t.lod != f->o->lod || t.fingerprint != wi->fingerprint ||
	    t.chunk_log2 != wi->chunk_log2) {
		fatal(f, "chunk %ld/%" PRId32 "/%" PRId32 " (lod/cx/cz): the tile's "
		      "header says seed %" PRIu64 " chunk %u/%" PRId32 "/%" PRId32
		      " fingerprint %016" PRIx64, f->o->lod, tc->cx, tc->cz,
		      t.seed, (unsigned)t.lod, t.cx, t.cz, t.fingerprint);
		tile_release(&t);
		return;
	}
	tc->edit_seq = t.edit_seq;
	tile_release(&t);
	if (--c->waiting)
		return;
	for (size_t k = 0; k < c->b.nchunks; k++)
		newest = c->t[k].edit_seq > newest ? c->t[k].edit_seq : newest;
	/* a tile made after an edit the log has not seen: catch up first */
	if (newest > f->log.n)
		sync_log(f, verify_tiles);
	else
		verify_tiles(f);
}

static void local_check(struct follow *f);

static void fetch_tiles(struct follow *f)
{
	struct pending *c = f->cur;
	char target[256];

	if (!c->b.nchunks) {
		batch_ok(f);
		return;
	}
	if (f->world) {
		local_check(f);
		return;
	}
	if (!(c->t = calloc(c->b.nchunks, sizeof(*c->t)))) {
		fatal(f, "%s", err_str(ERR_NOMEM));
		return;
	}
	c->waiting = c->b.nchunks;
	for (size_t k = 0; k < c->b.nchunks; k++) {
		struct tilecheck *t = &c->t[k];

		*t = (struct tilecheck){ f, c->b.chunks[2 * k],
					 c->b.chunks[2 * k + 1], 0 };
		if (api_tile_path(target, sizeof(target), f->o->seed, f->o->gen,
				  (int)f->o->lod, t->cx, t->cz) ||
		    hclient_get(f->s.hc, target, NULL, on_tile, t)) {
			fatal(f, "GET tile: cannot send the request");
			return;
		}
	}
}


/* ---- local mode: the batch's chunks made here, their hashes compared ---- */

#define HASHES_SIDE 64   /* chunks per side of one GET /hashes */

struct hashq {
	struct follow *f;
	int32_t cx0, cz0, cx1, cz1;
};

/* Chunk (cx, cz) at --lod with the local log's edits: its edit_seq must be
 * the local version (what /hashes said). */
static int local_make(struct follow *f, int32_t cx, int32_t cz, uint64_t version)
{
	struct terrain_tile_request rq = { sizeof(rq), (int32_t)f->o->lod, cx, cz, 0, 0, 0, 0 };
	struct terrain_tile_info info = { .size = sizeof(info) };
	uint32_t side = terrain_tile_side(f->world, (int32_t)f->o->lod);
	size_t n = (size_t)side * side;
	int rc;

	if (n > f->heights_cap) {
		int32_t *h = realloc(f->heights, n * sizeof(*h));

		if (!h) {
			fatal(f, "%s", err_str(ERR_NOMEM));
			return -1;
		}
		f->heights = h;
		f->heights_cap = n;
	}
	rc = terrain_generate(f->world, f->edits_here, f->work, &rq, f->heights, n, NULL, 0, &info);
	if (rc || info.edit_seq != version) {
		fatal(f, "chunk %ld/%" PRId32 "/%" PRId32 " (lod/cx/cz): made here: %s, edit_seq %"
		      PRIu64 " for version %" PRIu64, f->o->lod, cx, cz,
		      rc ? terrain_strerror(rc) : "ok", info.edit_seq, version);
		return -1;
	}
	return 0;
}

/* One /hashes answer: every chunk of the batch inside its rectangle must
 * have the local version and hash, and be made here. */
static void on_hashes(void *arg, struct hclient_resp *r)
{
	struct hashq *q = arg;
	struct follow *f = q->f;
	struct pending *c = f->cur;
	struct api_chunk_hash *v = NULL;
	size_t n = 0;
	uint64_t seq;
	char msg[400];

	if (f->done) {
		free(q);
		return;
	}
	if (r->err || r->status != 200) {
		resp_error(r, msg, sizeof(msg));
		fatal(f, "GET hashes: %s", msg);
	} else if (api_hashes_parse((const char *)r->body, r->body_len, &v, &n, &seq)) {
		fatal(f, "GET hashes: not the answer expected");
	}
	for (size_t k = 0; !f->done && k < c->b.nchunks; k++) {
		int32_t cx = c->b.chunks[2 * k], cz = c->b.chunks[2 * k + 1];
		uint64_t mine_v, mine_h, theirs_v = 0, theirs_h = 0;

		if (cx < q->cx0 || cx > q->cx1 || cz < q->cz0 || cz > q->cz1)
			continue;
		for (size_t j = 0; j < n; j++)
			if (v[j].cx == cx && v[j].cz == cz) {
				theirs_v = v[j].version;
				theirs_h = v[j].hash;
			}
		terrain_edits_chunk(f->edits_here, cx, cz, &mine_v, &mine_h);
		/* the server may already hold later edits: compare up to ours */
		if (theirs_v <= terrain_edits_seq(f->edits_here) &&
		    (theirs_v != mine_v || theirs_h != mine_h)) {
			fatal(f, "chunk %" PRId32 ",%" PRId32 ": GET /hashes says version %" PRIu64
			      " hash %016" PRIx64 ", the log applied here %" PRIu64 " %016" PRIx64,
			      cx, cz, theirs_v, theirs_h, mine_v, mine_h);
			break;
		}
		if (local_make(f, cx, cz, mine_v))
			break;
	}
	free(v);
	free(q);
	if (--f->hashes_waiting == 0 && !f->done)
		batch_ok(f);
}

/* GET /hashes of the batch's chunks' bounding rectangle, in pieces. */
static void local_check(struct follow *f)
{
	struct pending *c = f->cur;
	int64_t x0 = INT32_MAX, z0 = INT32_MAX, x1 = INT32_MIN, z1 = INT32_MIN;
	char target[256];

	if (local_catch_up(f))
		return;
	for (size_t k = 0; k < c->b.nchunks; k++) {
		int32_t cx = c->b.chunks[2 * k], cz = c->b.chunks[2 * k + 1];

		x0 = cx < x0 ? cx : x0;
		z0 = cz < z0 ? cz : z0;
		x1 = cx > x1 ? cx : x1;
		z1 = cz > z1 ? cz : z1;
	}
	f->hashes_waiting = 1; /* until every piece is sent */
	for (int64_t z = z0; z <= z1; z += HASHES_SIDE)
		for (int64_t x = x0; x <= x1; x += HASHES_SIDE) {
			struct hashq *q = malloc(sizeof(*q));

			if (!q) {
				fatal(f, "%s", err_str(ERR_NOMEM));
				return;
			}
			*q = (struct hashq){ f, (int32_t)x, (int32_t)z,
					     (int32_t)(x + HASHES_SIDE - 1 < x1 ? x + HASHES_SIDE - 1 : x1),
					     (int32_t)(z + HASHES_SIDE - 1 < z1 ? z + HASHES_SIDE - 1 : z1) };
			if (api_hashes_path(target, sizeof(target), f->o->seed, f->o->gen, q->cx0,
					    q->cz0, q->cx1, q->cz1) ||
			    hclient_get(f->s.hc, target, NULL, on_hashes, q)) {
				free(q);
				fatal(f, "GET hashes: cannot send the request");
				return;
			}
			f->hashes_waiting++;
		}
	if (--f->hashes_waiting == 0)
		batch_ok(f);
}

/* The log is up to date: check the event against it. */
static void batch_synced(struct follow *f)
{
	const struct api_batch *b = &f->cur->b;
	uint64_t mine;

	if (b->last_seq > f->log.n) {
		fatal(f, "seq %" PRIu64 "..%" PRIu64 ": the server's log ends at "
		      "seq %zu, before the event's batch", b->first_seq,
		      b->last_seq, f->log.n);
		return;
	}
	mine = editlog_hash(&f->log, b->last_seq);
	if (mine != b->world_hash) {
		fatal(f, "seq %" PRIu64 "..%" PRIu64 ": world hash mismatch: the "
		      "event says %016" PRIx64 ", the log gives %016" PRIx64,
		      b->first_seq, b->last_seq, b->world_hash, mine);
		return;
	}
	if (check_chunks(f, b))
		return;
	fetch_tiles(f);
}

static void process_next(struct follow *f)
{
	if (f->done || f->cur || !f->head)
		return;
	f->cur = f->head;
	f->head = f->head->next;
	if (!f->head)
		f->tail = NULL;
	sync_log(f, batch_synced);
}

/* ---- the event stream ---- */

static int on_event(void *arg, const char *type, const char *id,
		    const char *data, size_t len)
{
	struct follow *f = arg;
	struct pending *b;
	char *end;
	unsigned long long idv;

	if (f->done)
		return 1;
	if (strcmp(type, "edits") != 0)
		return 0; /* not ours: ignore, as EventSource does */
	if (!(b = calloc(1, sizeof(*b)))) {
		fatal(f, "%s", err_str(ERR_NOMEM));
		return 1;
	}
	if (api_batch_parse(data, len, &b->b)) {
		fatal(f, "event stream: not the edits event expected: %.200s",
		      data);
		free(b);
		return 1;
	}
	idv = strtoull(id, &end, 10);
	if (!id[0] || *end || idv != b->b.last_seq) {
		fatal(f, "event stream: event id '%s' for the batch ending at seq "
		      "%" PRIu64, id, b->b.last_seq);
		batch_free(b);
		return 1;
	}
	if (b->b.first_seq != f->resume + 1) {
		fatal(f, "event stream: batch seq %" PRIu64 "..%" PRIu64
		      " after seq %" PRIu64 ": %s", b->b.first_seq,
		      b->b.last_seq, f->resume, b->b.first_seq > f->resume ?
		      "a batch is missing" : "a batch came twice");
		batch_free(b);
		return 1;
	}
	f->resume = b->b.last_seq;
	if (f->tail)
		f->tail->next = b;
	else
		f->head = b;
	f->tail = b;
	process_next(f);
	return 0;
}

static void on_stream_data(void *arg, int status, const uint8_t *data,
			   size_t n)
{
	struct follow *f = arg;
	int rc;

	(void)status;
	if (f->done)
		return;
	if (!data) { /* the head: the stream is open */
		f->open = 1;
		f->fails = 0;
		if (!f->ever_open) {
			printf("follow: world %s%s%s at seq %" PRIu64 ", world_hash "
			       "%016" PRIx64 "; following its edits\n",
			       f->o->seed, f->o->gen ? " gen " : "",
			       f->o->gen ? f->o->gen : "", f->resume,
			       editlog_hash(&f->log, f->resume));
			fflush(stdout);
		} else {
			fprintf(stderr, CLI_PROG " " CMD ": event stream resumed "
				"after seq %" PRIu64 "\n", f->resume);
		}
		f->ever_open = 1;
		return;
	}
	rc = evstream_feed(&f->ev, (const char *)data, n, on_event, f);
	if (rc < 0)
		fatal(f, "event stream: %s", err_str(rc));
}

static void on_retry(uv_timer_t *t)
{
	struct follow *f = t->data;

	if (!f->done)
		subscribe(f);
}

static void on_stream_end(void *arg, struct hclient_resp *r)
{
	struct follow *f = arg;
	char why[400];
	uint64_t delay;
	int fatal_status = r->status >= 400 && r->status < 500 &&
			   r->status != 408 && r->status != 429;

	if (f->done)
		return;
	f->open = 0;
	if (r->status >= 200 && r->status < 300 && !r->err)
		snprintf(why, sizeof(why), "closed by the server");
	else
		resp_error(r, why, sizeof(why));
	if (fatal_status) {
		fatal(f, "event stream: %s", why);
		return;
	}
	if (++f->fails > RETRY_GIVE_UP) {
		fatal(f, "event stream: giving up after %u attempts: %s",
		      RETRY_GIVE_UP, why);
		return;
	}
	delay = (uint64_t)RETRY_FIRST_MS << (f->fails - 1);
	delay = delay > RETRY_MAX_MS ? RETRY_MAX_MS : delay;
	f->reconnects++;
	fprintf(stderr, CLI_PROG " " CMD ": event stream: %s; reconnecting in "
		"%" PRIu64 " ms (Last-Event-ID: %" PRIu64 ")\n", why, delay,
		f->resume);
	uv_timer_start(&f->retry, on_retry, delay, 0);
}

static void subscribe(struct follow *f)
{
	char target[256], headers[128];
	struct hclient_req q;

	evstream_reset(&f->ev); /* a partial event of the last stream is lost */
	snprintf(headers, sizeof(headers), "Accept: text/event-stream\r\n"
		 "Last-Event-ID: %" PRIu64 "\r\n", f->resume);
	q = (struct hclient_req){ .target = target, .headers = headers,
				  .on_data = on_stream_data,
				  .idle_ms = STREAM_IDLE_MS };
	if (api_events_path(target, sizeof(target), f->o->seed, f->o->gen) ||
	    hclient_request(f->s.hc, &q, on_stream_end, f))
		fatal(f, "GET events: cannot send the request");
}

/* The log as the server had it at start-up: check the world info too. */
static void started(struct follow *f)
{
	const struct api_world *wi = &f->s.wi;
	uint64_t mine = editlog_hash(&f->log, wi->edit_seq);

	if (wi->has_world_hash && wi->edit_seq <= f->log.n &&
	    mine != wi->world_hash) {
		fatal(f, "world hash mismatch at seq %" PRIu64 ": the world info "
		      "says %016" PRIx64 ", the log gives %016" PRIx64,
		      wi->edit_seq, wi->world_hash, mine);
		return;
	}
	f->resume = f->log.n; /* a batch boundary: logs grow batch by batch */
	subscribe(f);
}

/* ---- set-up ---- */

static void on_deadline(uv_timer_t *t)
{
	struct follow *f = t->data;

	f->stopping = 1;
	if (!f->cur)
		finish(f, 0);
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)signum;
	finish(h->data, 0);
}

static int start_handles(struct follow *f)
{
	uv_loop_t *loop = &f->s.loop;

	uv_timer_init(loop, &f->retry);
	uv_timer_init(loop, &f->deadline);
	uv_signal_init(loop, &f->sigint);
	uv_signal_init(loop, &f->sigterm);
	f->retry.data = f->deadline.data = f;
	f->sigint.data = f->sigterm.data = f;
	f->handles = 1;
	if (f->o->duration > 0)
		uv_timer_start(&f->deadline, on_deadline,
			       (uint64_t)(f->o->duration * 1000 + 0.5), 0);
	if (uv_signal_start(&f->sigint, on_signal, SIGINT) ||
	    uv_signal_start(&f->sigterm, on_signal, SIGTERM))
		return cli_fail("signals", "cannot watch SIGINT and SIGTERM");
	return 0;
}

static void stop_handles(struct follow *f)
{
	sigset_t set;

	if (!f->handles)
		return;
	/* closing the last handle of a signal restores its default action:
	 * a second SIGINT (timeout(1) sends one to the child and one to its
	 * group) would kill us on the way out. Blocked, it waits for exit. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	uv_close((uv_handle_t *)&f->retry, NULL);
	uv_close((uv_handle_t *)&f->deadline, NULL);
	uv_close((uv_handle_t *)&f->sigint, NULL);
	uv_close((uv_handle_t *)&f->sigterm, NULL);
	f->handles = 0;
}

int follow_main(int argc, char **argv)
{
	struct follow f = { 0 };
	struct cli_opts o;
	struct pending *b;
	int rc;

	cli_defaults(&o);
	o.duration = 0; /* until interrupted */
	if ((rc = cli_parse(argc, argv,
			    "--server --seed --gen --duration --lod "
			    "--connections --timeout-ms --local", "--server --seed", &o)))
		return rc;
	/* one more connection for the stream, which holds one of its own */
	o.connections = o.connections < 256 ? o.connections + 1 : 256;
	o.attempts = ATTEMPTS;
	f.o = &o;
	if (cli_open(&f.s, &o, o.seed))
		return EXIT_FAILURE;
	if (o.lod > f.s.wi.max_lod) {
		fprintf(stderr, CLI_PROG " " CMD ": --lod: at most %d for this "
			"generator\n", f.s.wi.max_lod);
		cli_close(&f.s);
		return CLI_EXIT_USAGE;
	}
	seed_parse(o.seed, strlen(o.seed), &f.seed); /* checked by cli_open */
	if (o.local && (cli_local_world(&o, &f.s, f.seed, &f.world) ||
			terrain_edits_create(f.world, &f.edits_here) ||
			terrain_work_create(&f.work))) {
		terrain_edits_destroy(f.edits_here);
		terrain_world_destroy(f.world);
		cli_close(&f.s);
		return EXIT_FAILURE;
	}
	editlog_init(&f.log, f.s.wi.fingerprint, f.seed, f.s.wi.chunk_log2);
	evstream_init(&f.ev);
	if (start_handles(&f))
		finish(&f, EXIT_FAILURE);
	else
		sync_log(&f, started);
	if (cli_run_until(&f.s, &f.done))
		fatal(&f, "the event loop stopped");
	stop_handles(&f);
	cli_close(&f.s); /* cancels what is outstanding: callbacks see done */
	if (f.ever_open || f.batches)
		printf("follow: %" PRIu64 " batches (%" PRIu64 " edits) checked, %"
		       PRIu64 " chunks %s, %" PRIu64 " reconnects\n",
		       f.batches, f.edits, f.tiles, f.world ? "made here" : "refetched",
		       f.reconnects);
	batch_free(f.cur);
	while ((b = f.head) != NULL) {
		f.head = b->next;
		batch_free(b);
	}
	evstream_free(&f.ev);
	editlog_free(&f.log);
	terrain_work_destroy(f.work);
	terrain_edits_destroy(f.edits_here);
	terrain_world_destroy(f.world);
	free(f.heights);
	return f.rc;
}
