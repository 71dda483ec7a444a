/*
 * snapshots.c - cutting, writing and loading snapshots (snapshots.h).
 *
 * A cut, on the loop thread, records each world's sequence number and
 * hash and, per chunk with edits, its state, a reference to its bake and
 * a copy of the edits since that bake: after it the worlds may change
 * freely. The records of the batches within --history are encoded on the
 * loop too, HIST_SLICE a turn, so that appends go on between the slices
 * (batches are only ever added, and a record never changes). Worker jobs
 * of SLICE chunks each then fold what is not baked yet
 * (bakes_fold()) and write the entries; the last one commits the file.
 * Back on the loop the new deltas also replace older bakes, so a snapshot
 * leaves every chunk baked.
 *
 * File (little-endian), before the store's trailer:
 *   u32 magic "TSNP", u32 version 3, u64 worlds, u64 chunks, u64 edits,
 *   64 bytes: where the cut is in the log, a NUL-padded text (a shared
 *   log's entry id; "" when the log has none; version 1 lacks the field)
 *   per world: u8 gen_len, gen, u64 fingerprint, seed, seq, hash, chunks
 *     per chunk: i32 cx, cz, u64 version, hash, edits, u32 len, len bytes
 *       of the zstd frame of its LOD-0 delta
 *   version 4: u64 records, then per record u32 len, len bytes: the
 *     batches after each world's cut, as the log has them (batch.h)
 *   version 3: u64 keys, then per remembered idempotency key (idem.h),
 *     oldest first: 16 bytes key, 16 bytes body digest, u64 first_seq,
 *     hash, time_ms, u32 count
 *
 * A world's seq and hash, and its chunks, are as they were at its cut:
 * the last batch the log took more than --history before its newest one
 * (world_cut()); the batches after it are kept one by one as records and
 * replayed on restore, so that a revert still reaches them on a node
 * restored from this snapshot (revert.h).
 */
#include "snapshots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "bakes.h"
#include "batch.h"
#include "catalog.h"
#include "edit.h"
#include "editlog/store.h"
#include "base/options.h"
#include "err.h"
#include "idem.h"
#include "le.h"
#include "preset.h"
#include "util.h"
#include "world.h"

#define SNAP_MAGIC   0x504e5354u /* "TSNP" */
#define SNAP_VERSION 4
#define SNAP_HEAD    (32 + SNAPSHOTS_POS)   /* version 1: 32 */
#define SNAP_KEY     60                     /* bytes of a remembered key */
#define SLICE        32          /* chunks per worker job */
#ifndef HIST_SLICE
#define HIST_SLICE   256         /* records encoded per turn of the loop */
#endif

struct cut_world {
	int gen;
	const struct preset *p;
	uint64_t seed, seq, hash;
	size_t first, n;         /* its chunks: [first, first + n) */
	size_t map_i;            /* its index in the world map */
	size_t hfrom, hto;       /* its batches kept as records: [hfrom, hto) */
};

struct cut_chunk {
	size_t world;
	int32_t cx, cz;
	struct world_chunk st;
	struct bake_blob *old;   /* its bake at the cut (a reference) */
	uint64_t pos;            /* world position after st's edits */
	struct edit *edits;      /* the edits since old */
	size_t n;
	int past;                /* st is before the world's last edits: the
				    delta is not a bake of now */
	uint8_t *blob;           /* the delta folded by the job, or NULL */
	size_t len;
};

struct job {
	uv_work_t work;
	struct snapshots *s;
	struct cut_world *worlds;
	size_t nworlds, wnext;
	struct cut_chunk *chunks;
	size_t nchunks, next;
	uint64_t edits, bytes, t0;
	uint64_t cut_us, cut_cpu_us; /* the cut's time on the loop, its CPU */
	struct store_snap *w;
	uint8_t *shared;         /* the file's bytes for on_written, or NULL */
	size_t shared_len;
	char pos[SNAPSHOTS_POS]; /* the log's position at the cut */
	uint8_t *keys;           /* the remembered keys at the cut, encoded */
	size_t nkeys;
	uint8_t *hist;           /* the records after the worlds' cuts */
	size_t hist_len, hist_cap, nhist;
	size_t hworld, hnext;    /* the next record to encode: world, batch */
	uint64_t restores;       /* s->restores at the cut */
	uint64_t slice_us, slice_cpu_us; /* the longest slice of records on
				    the loop, and the most CPU one took */
	int err;
};

struct snapshots {
	uv_loop_t *loop;
	char *dir;
	const struct catalog *cat;
	struct world_map *worlds;
	struct bakes *bakes;
	const struct region_source *rs;
	struct idem *keys;       /* NULL: none kept */
	uint64_t history_ms;     /* --history: edits kept one by one */
	uint64_t every, since;
	uint64_t bytes, since_bytes; /* --snapshot-bytes, and since the last */
	uint64_t interval_ms, last_ms; /* --snapshot-interval; the last start */
	snapshots_written_fn on_written;
	snapshots_position_fn position;
	void *written_arg;
	int want_bytes;          /* on_written takes the file's bytes */
	struct job *job;         /* the snapshot being written, or NULL */
	int stopped, closing;
	uint64_t restores;       /* snapshots_restore() calls: worlds replaced */
	struct snapshots_stats st;
};

static const struct option options[] = {
	OPTION(struct snapshots_config, "snapshot-every", "TERRAIN_SNAPSHOT_EVERY", "N", "100000",
	       OPTION_UINT, every, 0, 1u << 31, "write DIR/snapshot (every chunk's edits baked, "
	       "each world's hash) in the background after N applied edits; start-up reads it "
	       "plus the log after it (0: never)"),
	OPTION(struct snapshots_config, "compact-log", "TERRAIN_COMPACT_LOG", "0|1", "0",
	       OPTION_UINT, compact_log, 0, 1, "drop from the file log the batches the snapshot "
	       "holds, at start and after each snapshot while serving (the history before it "
	       "is then only in the snapshot: docs/edit-log.md)"),
	OPTION(struct snapshots_config, "snapshot-bytes", "TERRAIN_SNAPSHOT_BYTES", "BYTES",
	       "2097152", OPTION_UINT, bytes, 0, 0xffffffffu, "also write one after this many "
	       "bytes of the log's records (a one-edit batch: about 90), whichever comes "
	       "first; whatever starts one, after a snapshot of P bytes above twice this the "
	       "next waits for P/2 bytes of records, so that snapshot work stays linear in the "
	       "log; with a Redis log this bounds the stream (docs/cluster.md; 0: no size "
	       "trigger, and always that wait)"),
	OPTION(struct snapshots_config, "snapshot-interval", "TERRAIN_SNAPSHOT_INTERVAL",
	       "SECONDS", "300", OPTION_MS, interval_ms, 0, 0, "also write one at the first "
	       "edit applied this long after the last one started (0: no limit)"),
};
size_t snapshots_options(const struct option **out)
{
	*out = options;
	return ARRAY_LEN(options);
}

int snapshots_create(struct uv_loop_s *loop, const char *data_dir, const struct catalog *cat,
		     struct world_map *worlds, struct bakes *bakes,
		     const struct region_source *rs, const struct snapshots_config *cfg,
		     struct snapshots **out)
{
	struct snapshots *s = calloc(1, sizeof(*s));

	if (!s || !(s->dir = strdup(data_dir))) {
		free(s);
		return ERR_NOMEM;
	}
	s->loop = loop;
	s->cat = cat;
	s->worlds = worlds;
	s->bakes = bakes;
	s->rs = rs;
	s->every = cfg->every;
	s->bytes = cfg->bytes;
	s->interval_ms = cfg->interval_ms;
	s->last_ms = uv_now(loop);
	*out = s;
	return 0;
}

/* ---- writing ----------------------------------------------------------------- */

static void job_free(struct job *j)
{
	size_t k;

	for (k = 0; k < j->nchunks; k++) {
		bakes_blob_unref(j->chunks[k].old);
		free(j->chunks[k].edits);
		free(j->chunks[k].blob);
	}
	free(j->chunks);
	free(j->worlds);
	free(j->keys);
	free(j->hist);
	free(j->shared);
	store_snap_abort(j->w);
	free(j);
}

/*
 * The log bytes a snapshot must wait for whatever fired: half the last
 * one's size P once that is above twice --snapshot-bytes (always, with
 * --snapshot-bytes 0), else none. Writing (and sharing) a snapshot costs
 * about P, so each costs at most twice the log bytes since the one before
 * it, or 2 --snapshot-bytes: the work stays linear in the log's bytes
 * while P grows with --history's content.
 */
static uint64_t floor_bytes(const struct snapshots *s)
{
	return s->st.bytes / 2 > s->bytes ? s->st.bytes / 2 : 0;
}

/* This thread's CPU time in microseconds (the loop's, to tell the cut's
 * own work from the time other processes took the core). */
static uint64_t cpu_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A snapshot is due: edits since the last one, at least floor_bytes() of
 * their records, and enough edits, bytes or time since the last one
 * started (--snapshot-*). */
static int due(const struct snapshots *s)
{
	return s->every && s->since && s->since_bytes >= floor_bytes(s) &&
	       (s->since >= s->every || (s->bytes && s->since_bytes >= s->bytes) ||
		(s->interval_ms && uv_now(s->loop) - s->last_ms >= s->interval_ms));
}

/* Record the remembered keys as they are now, encoded. */
static int cut_keys(struct snapshots *s, struct job *j)
{
	size_t i;

	j->nkeys = idem_count(s->keys);
	if (!(j->keys = malloc(j->nkeys ? j->nkeys * SNAP_KEY : 1)))
		return ERR_NOMEM;
	for (i = 0; i < j->nkeys; i++) {
		const struct idem_entry *e = idem_at(s->keys, i);
		uint8_t *q = j->keys + i * SNAP_KEY;

		memcpy(q, e->key, 16);
		memcpy(q + 16, e->body, 16);
		le_put64(q + 32, e->first_seq);
		le_put64(q + 40, e->hash);
		le_put64(q + 48, e->time_ms);
		le_put32(q + 56, e->count);
	}
	return 0;
}

/* Records still to encode (hist_slice()). */
static int hist_pending(const struct job *j)
{
	return j->hworld < j->nworlds;
}

/*
 * Encode up to HIST_SLICE of the records the cut keeps, on the loop, one
 * slice per turn (the worlds change between turns, but a batch's record
 * never does, and the batches only grow): a cut of 10^6 edits within
 * --history would otherwise hold the loop, and the appends behind it, for
 * tens of records a microsecond. ERR_BUSY when a restore replaced the
 * worlds meanwhile.
 */
static int hist_slice(struct snapshots *s, struct job *j)
{
	uint64_t t0 = uv_hrtime(), c0 = cpu_us();
	size_t k, len;

	if (j->restores != s->restores)
		return ERR_BUSY;
	for (k = 0; k < HIST_SLICE && hist_pending(j); k++) {
		const struct cut_world *cw = &j->worlds[j->hworld];
		const struct world *w = world_map_at(s->worlds, cw->map_i, NULL);

		if (j->hnext < cw->hfrom)
			j->hnext = cw->hfrom;
		if (j->hnext >= cw->hto) {
			j->hworld++, j->hnext = 0;
			continue;
		}
		if (j->hist_cap - j->hist_len < 4 + BATCH_MAX) {
			size_t cap = 2 * j->hist_cap + 4 + BATCH_MAX;
			uint8_t *h = realloc(j->hist, cap);

			if (!h)
				return ERR_NOMEM;
			j->hist = h;
			j->hist_cap = cap;
		}
		if (world_record(w, j->hnext, preset_name(cw->p), j->hist + j->hist_len + 4,
				 BATCH_MAX, &len))
			return ERR_NOMEM;
		le_put32(j->hist + j->hist_len, (uint32_t)len);
		j->hist_len += 4 + len;
		j->nhist++;
		j->hnext++;
	}
	if (uv_hrtime() - t0 > j->slice_us * 1000)
		j->slice_us = (uv_hrtime() - t0) / 1000;
	if (cpu_us() - c0 > j->slice_cpu_us)
		j->slice_cpu_us = cpu_us() - c0;
	return 0;
}

/* Chunk k of world w at its cut seq into c: as it is now (its bake and
 * the edits since), or before the world's last batches (from the bake's
 * base, the snapshot's delta or none, and the edits up to seq that count
 * now); 0, or 1 when it came to be after seq. */
static int cut_chunk(struct snapshots *s, const struct cut_world *cw, const struct world *w,
		     size_t k, struct cut_chunk *c)
{
	const struct bake_rec *r;

	int rc;

	world_chunk_at(w, k, &c->cx, &c->cz, &c->st);
	r = bakes_get(s->bakes, cw->gen, cw->seed, c->cx, c->cz, 0);
	if (c->st.version > cw->seq) {
		c->past = 1;
		if ((rc = world_chunk_upto(w, c->cx, c->cz, cw->seq, &c->st, &c->edits,
					   &c->n)) != 1)
			return rc < 0 ? rc : 1;
		if (r && r->base)
			c->old = bakes_blob_ref(r->base);
		return 0;
	}
	if (r && r->frame) {
		c->old = bakes_blob_ref(r->frame);
		c->pos = r->pos;
	}
	if ((!r || r->version < c->st.version) &&
	    world_chunk_edits_from(w, c->cx, c->cz, &c->pos, &c->edits, &c->n))
		return ERR_NOMEM;
	return 0;
}

/* Record the worlds and their chunks as they are now. */
static int cut(struct snapshots *s, struct job *j)
{
	size_t i, k, nw = world_map_count(s->worlds), nc = 0;
	int rc;

	if (cut_keys(s, j))
		return ERR_NOMEM;
	for (i = 0; i < nw; i++)
		nc += world_chunks(world_map_at(s->worlds, i, NULL));
	if (!(j->worlds = calloc(nw ? nw : 1, sizeof(*j->worlds))) ||
	    !(j->chunks = calloc(nc ? nc : 1, sizeof(*j->chunks))))
		return ERR_NOMEM;
	for (i = 0; i < nw; i++) {
		int gen;
		const struct world *w = world_map_at(s->worlds, i, &gen);
		struct cut_world *cw = &j->worlds[j->nworlds];
		uint64_t at = world_cut(w, s->history_ms);

		if (!world_seq(w))
			continue;
		*cw = (struct cut_world){ gen, catalog_at(s->cat, (size_t)gen), world_seed(w),
					  at, world_hash_at(w, at), j->nchunks, 0, i,
					  world_batch_after(w, at), world_batches(w) };
		for (k = 0; k < world_chunks(w); k++) {
			struct cut_chunk *c = &j->chunks[j->nchunks];

			c->world = j->nworlds;
			if ((rc = cut_chunk(s, cw, w, k, c)) < 0)
				return rc;
			if (rc == 0)
				j->nchunks++, cw->n++;
			else
				memset(c, 0, sizeof(*c));
		}
		j->edits += world_seq(w);
		j->nworlds++;
	}
	return 0;
}

static int put(struct job *j, const void *p, size_t n)
{
	return store_snap_write(j->w, p, n);
}

static int put_world(struct job *j, const struct cut_world *cw)
{
	const char *name = preset_name(cw->p);
	size_t len = strlen(name);
	uint8_t h[1 + 255 + 40], *q = h;

	*q++ = (uint8_t)len;
	memcpy(q, name, len);
	q += len;
	le_put64(q, preset_fingerprint(cw->p));
	le_put64(q + 8, cw->seed);
	le_put64(q + 16, cw->seq);
	le_put64(q + 24, cw->hash);
	le_put64(q + 32, cw->n);
	return put(j, h, (size_t)(q + 40 - h));
}

static int put_chunk(struct job *j, const struct cut_chunk *c)
{
	const uint8_t *blob = c->blob ? c->blob : c->old->data;
	size_t len = c->blob ? c->len : c->old->len;
	uint8_t h[36];

	le_put32(h, (uint32_t)c->cx);
	le_put32(h + 4, (uint32_t)c->cz);
	le_put64(h + 8, c->st.version);
	le_put64(h + 16, c->st.hash);
	le_put64(h + 24, c->st.nedits);
	le_put32(h + 32, (uint32_t)len);
	return put(j, h, sizeof(h)) || put(j, blob, len) ? ERR_IO : 0;
}

/* Worker: the next slice of chunks; the last one commits the file. */
static void job_work(uv_work_t *w)
{
	struct job *j = container_of(w, struct job, work);
	size_t k;
	int rc = 0;

	if (hist_pending(j))
		return; /* the loop encodes the records first (job_done()) */
	if (j->next == 0) {
		uint8_t h[SNAP_HEAD] = { 0 };

		le_put32(h, SNAP_MAGIC);
		le_put32(h + 4, SNAP_VERSION);
		le_put64(h + 8, j->nworlds);
		le_put64(h + 16, j->nchunks);
		le_put64(h + 24, j->edits);
		memcpy(h + 32, j->pos, strnlen(j->pos, SNAPSHOTS_POS - 1));
		rc = put(j, h, sizeof(h));
	}
	for (k = 0; !rc && k < SLICE && j->next < j->nchunks; k++, j->next++) {
		struct cut_chunk *c = &j->chunks[j->next];
		const struct cut_world *cw = &j->worlds[c->world];

		while (!rc && j->wnext < j->nworlds && j->worlds[j->wnext].first == j->next)
			rc = put_world(j, &j->worlds[j->wnext++]);
		if (!rc && (c->n || !c->old))
			rc = bakes_fold(cw->p, cw->seed, c->cx, c->cz, j->s->rs,
					c->old ? c->old->data : NULL, c->old ? c->old->len : 0,
					c->edits, c->n, &c->blob, &c->len);
		if (!rc)
			rc = put_chunk(j, c);
		free(c->edits);
		c->edits = NULL;
	}
	while (!rc && j->next == j->nchunks && j->wnext < j->nworlds)
		rc = put_world(j, &j->worlds[j->wnext++]);
	if (!rc && j->next == j->nchunks) {
		char msg[300];
		uint8_t n[8];

		le_put64(n, j->nhist);
		if ((rc = put(j, n, 8)) == 0 && j->hist_len)
			rc = put(j, j->hist, j->hist_len);
		le_put64(n, j->nkeys);
		if (rc == 0 && (rc = put(j, n, 8)) == 0)
			rc = put(j, j->keys, j->nkeys * SNAP_KEY);
		if (rc) {
			j->err = rc;
			return;
		}

		rc = store_snap_commit(j->w, &j->bytes);
		j->w = NULL;
		/* read back here, not on the loop: a shared log takes the bytes */
		if (!rc && j->s->on_written && j->s->want_bytes &&
		    store_snap_read(j->s->dir, &j->shared, &j->shared_len, msg, sizeof(msg)))
			fprintf(stderr, "terrain-server: snapshot not shared: %s\n", msg);
	}
	j->err = rc;
}

/* Loop: hand the deltas folded by the job to the bakes they are newer than. */
static void adopt(struct snapshots *s, struct job *j)
{
	size_t k;

	for (k = 0; k < j->nchunks; k++) {
		struct cut_chunk *c = &j->chunks[k];
		const struct cut_world *cw = &j->worlds[c->world];
		struct bake_rec *r;
		struct bake_blob *f;

		if (!c->blob || c->past)
			continue;
		r = bakes_get(s->bakes, cw->gen, cw->seed, c->cx, c->cz, 1);
		if (r && r->version < c->st.version && (f = bakes_blob_new(c->blob, c->len)))
			bakes_set(s->bakes, r, c->st.version, c->pos, c->st.nedits, f);
	}
}

static void job_done(uv_work_t *w, int status)
{
	struct job *j = container_of(w, struct job, work);
	struct snapshots *s = j->s;

	if (!s->closing && !s->stopped && status == 0 && !j->err && hist_pending(j) &&
	    (j->err = hist_slice(s, j)) == 0 &&
	    uv_queue_work(s->loop, &j->work, job_work, job_done) == 0)
		return; /* records, then (once they are all) the chunks */
	if (!s->closing && !s->stopped && status == 0 && !j->err && j->next < j->nchunks &&
	    uv_queue_work(s->loop, &j->work, job_work, job_done) == 0)
		return; /* the next slice */
	if (s->closing) {
		job_free(j);
		free(s->dir);
		free(s);
		return;
	}
	s->job = NULL;
	if (status || j->err || j->next < j->nchunks || hist_pending(j)) {
		s->st.failed++;
		if (j->err)
			fprintf(stderr, "terrain-server: snapshot failed (%s); the last one"
				" stays, the log holds every edit\n", err_str(j->err));
	} else {
		adopt(s, j);
		s->st.written++;
		s->st.edits = j->edits;
		s->st.chunks = j->nchunks;
		s->st.bytes = j->bytes;
		s->st.ms = (uv_hrtime() - j->t0) / 1000000;
		fprintf(stderr, "terrain-server: snapshot of %llu edits in %zu worlds, %zu chunks,"
			" %llu bytes, in %llu ms (on the loop: the cut %.1f ms, %.1f ms of CPU; %zu records"
			" in slices of at most %.1f ms, %.1f ms of CPU)\n", (ull)j->edits, j->nworlds,
			j->nchunks, (ull)j->bytes, (ull)s->st.ms, (double)j->cut_us / 1e3,
			(double)j->cut_cpu_us / 1e3, j->nhist, (double)j->slice_us / 1e3,
			(double)j->slice_cpu_us / 1e3);
		if (s->on_written && (j->shared || !s->want_bytes)) {
			uint8_t *buf = j->shared;

			j->shared = NULL; /* the callback's now */
			s->on_written(s->written_arg, buf, j->shared_len, j->edits, j->pos);
		}
	}
	job_free(j);
	if (due(s) && !s->stopped)
		snapshots_applied(s, 0, 0); /* one fell due while this one was written */
}

int snapshots_start(struct snapshots *s)
{
	struct job *j;
	int rc;

	if (s->job)
		return ERR_BUSY;
	if (s->stopped)
		return ERR_INVAL;
	s->since = s->since_bytes = 0; /* the next try: after as many more */
	s->last_ms = uv_now(s->loop);
	if (!(j = calloc(1, sizeof(*j))))
		return ERR_NOMEM;
	j->s = s;
	j->t0 = uv_hrtime();
	j->restores = s->restores;
	if (s->position)
		s->position(s->written_arg, j->pos, sizeof(j->pos));
	j->cut_cpu_us = cpu_us();
	rc = cut(s, j);
	j->cut_cpu_us = cpu_us() - j->cut_cpu_us;
	j->cut_us = (uv_hrtime() - j->t0) / 1000;
	if (rc != 0 || (rc = store_snap_begin(s->dir, &j->w)) != 0 ||
	    (rc = uv_queue_work(s->loop, &j->work, job_work, job_done) ? ERR_NOMEM : 0)) {
		job_free(j);
		s->st.failed++;
		return rc;
	}
	s->job = j;
	return 0;
}

void snapshots_applied(struct snapshots *s, uint64_t n, uint64_t bytes)
{
	if (!s || !s->every)
		return;
	s->since += n;
	s->since_bytes += bytes;
	if (due(s) && !s->job && !s->stopped) {
		int rc = snapshots_start(s);

		if (rc)
			fprintf(stderr, "terrain-server: snapshot not started (%s in %s); the log"
				" holds every edit\n", err_str(rc), s->dir);
	}
}

void snapshots_stop(void *arg)
{
	struct snapshots *s = arg;

	s->stopped = 1;
}

void snapshots_destroy(struct snapshots *s)
{
	if (!s)
		return;
	if (s->job) {
		s->closing = 1; /* the job's completion frees both */
		return;
	}
	free(s->dir);
	free(s);
}

void snapshots_stats(const struct snapshots *s, struct snapshots_stats *out)
{
	*out = s->st;
	out->running = s->job != NULL;
}

/* ---- loading ----------------------------------------------------------------- */

struct rd {
	const uint8_t *p, *end;
};

static const uint8_t *take(struct rd *r, size_t n)
{
	const uint8_t *p = r->p;

	if ((size_t)(r->end - r->p) < n)
		return NULL;
	r->p += n;
	return p;
}

/* The header's length by its version (1 to 3), else 0. */
static size_t head_len(const uint8_t *buf, size_t len)
{
	uint32_t v = len >= 32 && le_get32(buf) == SNAP_MAGIC ? le_get32(buf + 4) : 0;

	return v == 1 ? 32 : v >= 2 && v <= SNAP_VERSION && len >= SNAP_HEAD ? SNAP_HEAD : 0;
}

/* Version 3's remembered keys, after the worlds: checked, and with
 * restore made the table's (the keys of the cut, and no others). */
static int pass_keys(struct snapshots *s, struct rd *r, int restore, char *msg, size_t msglen)
{
	const uint8_t *h = take(r, 8), *q;
	uint64_t n = h ? le_get64(h) : 0, i;

	if (!h || n > (uint64_t)(r->end - r->p) / SNAP_KEY ||
	    !(q = take(r, (size_t)n * SNAP_KEY))) {
		snprintf(msg, msglen, "cut short in its idempotency keys");
		return ERR_CORRUPT;
	}
	if (!restore || !s->keys)
		return 0;
	idem_clear(s->keys);
	for (i = 0; i < n; i++, q += SNAP_KEY) {
		struct idem_entry e = { .first_seq = le_get64(q + 32), .hash = le_get64(q + 40),
					.time_ms = le_get64(q + 48), .count = le_get32(q + 56) };

		memcpy(e.key, q, 16);
		memcpy(e.body, q + 16, 16);
		if (idem_add(s->keys, &e)) {
			snprintf(msg, msglen, "out of memory for its idempotency keys");
			return ERR_NOMEM;
		}
	}
	return 0;
}

/* Version 4's records after the worlds' cuts: checked, and with restore
 * replayed into the worlds restored at their cuts. */
static int pass_history(struct snapshots *s, struct rd *r, int restore, char *msg,
			size_t msglen)
{
	const uint8_t *h = take(r, 8), *q, *rec;
	uint64_t n = h ? le_get64(h) : 0, i;
	char why[200];
	struct batch b;

	if (!h || n > (uint64_t)(r->end - r->p) / 4) {
		snprintf(msg, msglen, "cut short in its records");
		return ERR_CORRUPT;
	}
	for (i = 0; i < n; i++) {
		if (!(q = take(r, 4)) || !(rec = take(r, le_get32(q))) ||
		    batch_decode(rec, le_get32(q), &b)) {
			snprintf(msg, msglen, "record %llu of its history cut short or malformed",
				 (ull)i);
			return ERR_CORRUPT;
		}
		if (restore && world_map_replay(s->worlds, rec, le_get32(q), why, sizeof(why))) {
			snprintf(msg, msglen, "record %llu of its history: %s", (ull)i, why);
			return ERR_CORRUPT;
		}
	}
	return 0;
}

/* One pass over the file: check it (restore 0), restore it into empty
 * worlds (1) or into worlds made empty first (2: world_rebase()). */
static int pass(struct snapshots *s, const uint8_t *buf, size_t len, int restore,
		struct snapshots_loaded *ld, char *msg, size_t msglen)
{
	struct rd r = { buf, buf + len };
	const uint8_t *h = take(&r, 32);
	uint64_t nworlds, i, k;
	int rc;

	if (!h || le_get32(h) != SNAP_MAGIC) {
		snprintf(msg, msglen, "not a snapshot (bad magic)");
		return ERR_CORRUPT;
	}
	if (!head_len(buf, len)) {
		snprintf(msg, msglen, "snapshot format version %u, this server reads 1 to %d",
			 le_get32(h + 4), SNAP_VERSION);
		return ERR_VERSION;
	}
	nworlds = le_get64(h + 8);
	*ld = (struct snapshots_loaded){ 1, 0, nworlds, le_get64(h + 16), le_get64(h + 24), len,
					 "" };
	if (head_len(buf, len) == SNAP_HEAD) {
		const char *pos = (const char *)take(&r, SNAPSHOTS_POS);

		snprintf(ld->pos, sizeof(ld->pos), "%.*s", (int)strnlen(pos, SNAPSHOTS_POS - 1), pos);
	}
	for (i = 0; i < nworlds; i++) {
		const uint8_t *g = take(&r, 1), *name, *wh;
		uint64_t seed, seq, hash, nchunks;
		struct world *w = NULL;
		int gen;

		if (!g || !(name = take(&r, *g)) || !(wh = take(&r, 40))) {
			snprintf(msg, msglen, "cut short in world %llu", (ull)i);
			return ERR_CORRUPT;
		}
		seed = le_get64(wh + 8);
		seq = le_get64(wh + 16);
		hash = le_get64(wh + 24);
		nchunks = le_get64(wh + 32);
		gen = catalog_find(s->cat, (const char *)name, *g);
		if (gen < 0 || preset_fingerprint(catalog_at(s->cat, (size_t)gen)) !=
				       le_get64(wh)) {
			snprintf(msg, msglen, "world %llu of generator \"%.*s\" (fingerprint"
				 " %016llx) %s", (ull)seed, (int)*g, (const char *)name,
				 (ull)le_get64(wh), gen < 0 ? "is not in this server's presets" :
				 "was made by a generator that differs from this server's");
			return ERR_NOTFOUND;
		}
		if (restore && !world_map_get(s->worlds, gen, seed, &w) && restore == 2) {
			world_cancel_all(w);
			world_rebase(w);
		}
		if (restore && (!w || world_restore(w, seq, hash))) {
			snprintf(msg, msglen, "cannot restore world %llu", (ull)seed);
			return ERR_NOMEM;
		}
		for (k = 0; k < nchunks; k++) {
			const uint8_t *ch = take(&r, 36), *blob;
			struct world_chunk st;
			struct bake_rec *b;
			struct bake_blob *f;
			int32_t cx, cz;

			if (!ch || !(blob = take(&r, le_get32(ch + 32))) || !le_get32(ch + 32)) {
				snprintf(msg, msglen, "cut short in world %llu", (ull)seed);
				return ERR_CORRUPT;
			}
			cx = (int32_t)le_get32(ch);
			cz = (int32_t)le_get32(ch + 4);
			st = (struct world_chunk){ le_get64(ch + 8), le_get64(ch + 16),
						   (size_t)le_get64(ch + 24) };
			if (!st.version || (st.version > seq && le_get32(h + 4) < 4) || st.nedits > seq) {
				snprintf(msg, msglen, "world %llu chunk (%d, %d): bad state",
					 (ull)seed, cx, cz);
				return ERR_CORRUPT;
			}
			if (!restore)
				continue;
			if (world_restore_chunk(w, cx, cz, &st) ||
			    !(b = bakes_get(s->bakes, gen, seed, cx, cz, 1)) ||
			    !(f = bakes_blob_new(blob, le_get32(ch + 32)))) {
				snprintf(msg, msglen, "world %llu chunk (%d, %d): cannot restore"
					 " (a repeated chunk, or out of memory)", (ull)seed, cx, cz);
				return ERR_CORRUPT;
			}
			bakes_set(s->bakes, b, st.version > seq ? seq : st.version, 0, st.nedits, f);
			bakes_set_base(b, f, st.nedits);
		}
	}
	if (le_get32(h + 4) >= 4 && (rc = pass_history(s, &r, restore, msg, msglen)) != 0)
		return rc;
	for (i = 0; restore && i < world_map_count(s->worlds); i++)
		world_mark_snapshot(world_map_at(s->worlds, i, NULL));
	if (le_get32(h + 4) >= 3 && (rc = pass_keys(s, &r, restore, msg, msglen)) != 0)
		return rc;
	if (r.p != r.end) {
		snprintf(msg, msglen, "%zu bytes after the last world", (size_t)(r.end - r.p));
		return ERR_CORRUPT;
	}
	return 0;
}

int snapshots_load(struct snapshots *s, struct snapshots_loaded *ld, char *msg, size_t msglen)
{
	uint64_t t0 = uv_hrtime();
	uint8_t *buf;
	size_t len;
	int rc;

	memset(ld, 0, sizeof(*ld));
	msg[0] = '\0';
	if (world_map_count(s->worlds))
		return ERR_INVAL;
	rc = store_snap_read(s->dir, &buf, &len, msg, msglen);
	if (rc == ERR_NOTFOUND) {
		msg[0] = '\0';
		return 0;
	}
	if (rc)
		return rc;
	if ((rc = pass(s, buf, len, 0, ld, msg, msglen)) == 0) {
		rc = pass(s, buf, len, 1, ld, msg, msglen);
		ld->touched = 1;
	}
	free(buf);
	if (rc) {
		ld->found = 0;
		return rc;
	}
	s->st.edits = ld->edits;
	s->st.chunks = ld->chunks;
	s->st.bytes = ld->bytes;
	s->st.load_ms = (uv_hrtime() - t0) / 1000000;
	return 0;
}

void snapshots_keep_history(struct snapshots *s, uint64_t history_ms)
{
	s->history_ms = history_ms;
}

void snapshots_keep_keys(struct snapshots *s, struct idem *keys)
{
	s->keys = keys;
}

void snapshots_on_written(struct snapshots *s, snapshots_written_fn fn,
			  snapshots_position_fn position, int want_bytes, void *arg)
{
	s->want_bytes = want_bytes;
	s->on_written = fn;
	s->position = position;
	s->written_arg = arg;
}

/* The edits a snapshot's bytes hold, or 0 when they are not a snapshot. */
static uint64_t held(const uint8_t *buf, size_t len)
{
	return head_len(buf, len) ? le_get64(buf + 24) : 0;
}

int snapshots_restore(struct snapshots *s, const uint8_t *buf, size_t len,
		      struct snapshots_loaded *ld, char *msg, size_t msglen)
{
	uint64_t t0 = uv_hrtime();
	int rc;

	msg[0] = '\0';
	if ((rc = pass(s, buf, len, 0, ld, msg, msglen)) != 0)
		return rc;
	ld->touched = 1;
	s->restores++; /* a snapshot's records still to encode are no longer there */
	if ((rc = pass(s, buf, len, 2, ld, msg, msglen)) != 0)
		return rc;
	s->since = s->since_bytes = 0;
	s->st.edits = ld->edits;
	s->st.chunks = ld->chunks;
	s->st.bytes = ld->bytes;
	s->st.load_ms = (uv_hrtime() - t0) / 1000000;
	/* a snapshot being written would race this one for snapshot.tmp (its
	 * older file may then replace this one: a restart takes the shared
	 * one again, which holds more) */
	if (!s->job && snapshots_offer(s, buf, len) < 0)
		fprintf(stderr, "terrain-server: warning: the restored snapshot was not kept in %s;"
			" a restart takes it again from the shared log\n", s->dir);
	return 0;
}

int snapshots_offer(struct snapshots *s, const uint8_t *buf, size_t len)
{
	struct store_snap *w;
	uint8_t *mine = NULL;
	size_t n = 0;
	char err[300];
	int rc;

	if (!held(buf, len))
		return ERR_CORRUPT;
	if (store_snap_read(s->dir, &mine, &n, err, sizeof(err)) == 0 &&
	    held(mine, n) >= held(buf, len)) {
		free(mine);
		return 0;
	}
	free(mine);
	if ((rc = store_snap_begin(s->dir, &w)) != 0)
		return rc;
	if ((rc = store_snap_write(w, buf, len)) != 0) {
		store_snap_abort(w);
		return rc;
	}
	return store_snap_commit(w, NULL) ? ERR_IO : 1;
}
