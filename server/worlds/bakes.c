/*
 * bakes.c - chunk bakes in an open-addressing table, a FIFO of the chunks
 * to bake, and the bake job (see bakes.h).
 *
 * A bake job, one at a time so that tiles keep the other workers: on the
 * loop thread it copies the chunk's current delta frame and the edits
 * since; on a worker it generates the chunk's LOD-0 heights, adds the
 * delta, applies the edits, and compresses the new delta; back on the
 * loop it replaces the bake, keeping the new delta hot too. Edits that
 * arrived meanwhile stay pending and queue the chunk again. A decode job
 * (bakes_warm()) only decodes a frame into a hot delta. While the warm-up
 * after a restart lasts, two jobs run at a time.
 *
 * The hot list is doubly linked through the records, most recently used
 * first; past BAKES_HOT_BYTES the oldest hot deltas are dropped (a job
 * holding a reference keeps its copy alive).
 */
#include "bakes.h"

#include <stdlib.h>
#include <string.h>

#include <uv.h>
#include <xxhash.h>
#include <zstd.h>

#include "bake.h"
#include "catalog.h"
#include "edit.h"
#include "err.h"
#include "gen/tilegen.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"
#include "util.h"
#include "world.h"

struct key {
	int64_t gen;
	uint64_t seed;
	int32_t cx, cz;
};

struct slot {
	struct key k;
	struct bake_rec *r;     /* NULL: empty */
};

enum { JOB_BAKE, JOB_DECODE };

#define WARM_JOBS 2             /* jobs at a time while the warm-up lasts */
#define WARM_FLAG 2             /* r->job + WARM_FLAG: queued by bakes_warm() */

struct bakes {
	uv_loop_t *loop;
	const struct catalog *cat;
	const struct world_map *worlds;
	const struct region_source *rs;
	unsigned after;         /* bake at this many unbaked edits; 0: never */
	unsigned running;       /* jobs on the pool */
	size_t warming;         /* warm-up jobs queued or running */
	struct bake_rec *hot_new, *hot_old; /* the hot list's ends */
	size_t hot_n, hot_bytes;
	int closing;            /* destroy once it is back */
	int stopped;            /* draining: no more jobs */
	struct slot *slots;
	size_t nslots, n;       /* a power of two; records */
	struct key *queue;      /* ring */
	size_t qcap, qhead, qlen;
	size_t bytes;
	uint64_t baked;
};

static size_t hash(const struct key *k)
{
	return (size_t)XXH3_64bits(k, sizeof(*k));
}

int bakes_create(struct uv_loop_s *loop, const struct catalog *cat,
		 const struct world_map *worlds, const struct region_source *rs,
		 unsigned after, struct bakes **out)
{
	struct bakes *b = calloc(1, sizeof(*b));

	if (!b)
		return ERR_NOMEM;
	b->loop = loop;
	b->cat = cat;
	b->worlds = worlds;
	b->rs = rs;
	b->after = after;
	*out = b;
	return 0;
}

static void free_all(struct bakes *b)
{
	size_t i;

	for (i = 0; i < b->nslots; i++)
		if (b->slots[i].r) {
			bakes_blob_unref(b->slots[i].r->frame);
			bakes_blob_unref(b->slots[i].r->base);
			bakes_delta_unref(b->slots[i].r->hot);
			free(b->slots[i].r);
		}
	free(b->slots);
	free(b->queue);
	free(b);
}

void bakes_stop(void *arg)
{
	struct bakes *b = arg;

	b->stopped = 1;
	b->qlen = 0;
	b->warming = 0;
}

void bakes_destroy(struct bakes *b)
{
	if (!b)
		return;
	if (b->running)
		b->closing = 1; /* the job's completion frees it */
	else
		free_all(b);
}

static struct slot *find(const struct bakes *b, const struct key *k)
{
	size_t mask = b->nslots - 1, i = hash(k) & mask;

	for (;; i = (i + 1) & mask)
		if (!b->slots[i].r || !memcmp(&b->slots[i].k, k, sizeof(*k)))
			return &b->slots[i];
}

static int grow(struct bakes *b)
{
	size_t n = b->nslots ? b->nslots * 2 : 64, i;
	struct slot *old = b->slots, *s;
	size_t nold = b->nslots;

	if (!(s = calloc(n, sizeof(*s))))
		return ERR_NOMEM;
	b->slots = s;
	b->nslots = n;
	for (i = 0; i < nold; i++)
		if (old[i].r)
			*find(b, &old[i].k) = old[i];
	free(old);
	return 0;
}

struct bake_rec *bakes_get(struct bakes *b, int gen, uint64_t seed, int32_t cx, int32_t cz,
			   int create)
{
	struct key k;
	struct slot *s;

	k = (struct key){ gen, seed, cx, cz }; /* 24 bytes, no padding to hash */
	if (!b->nslots) {
		if (!create || grow(b))
			return NULL;
	}
	s = find(b, &k);
	if (s->r || !create)
		return s->r;
	if (2 * (b->n + 1) > b->nslots) {
		if (grow(b))
			return NULL;
		s = find(b, &k);
	}
	if (!(s->r = calloc(1, sizeof(*s->r))))
		return NULL;
	s->k = k;
	b->n++;
	return s->r;
}

struct bake_blob *bakes_blob_new(const uint8_t *data, size_t len)
{
	struct bake_blob *f = malloc(sizeof(*f) + len);

	if (f) {
		f->refs = 1;
		f->len = len;
		memcpy(f->data, data, len);
	}
	return f;
}

struct bake_blob *bakes_blob_ref(struct bake_blob *f)
{
	if (f)
		f->refs++;
	return f;
}

void bakes_blob_unref(struct bake_blob *f)
{
	if (f && !--f->refs)
		free(f);
}

struct bake_delta *bakes_delta_new(size_t n)
{
	struct bake_delta *d = malloc(sizeof(*d) + n * sizeof(d->d[0]));

	if (d) {
		d->refs = 1;
		d->n = n;
	}
	return d;
}

struct bake_delta *bakes_delta_ref(struct bake_delta *d)
{
	if (d)
		d->refs++;
	return d;
}

void bakes_delta_unref(struct bake_delta *d)
{
	if (d && !--d->refs)
		free(d);
}

/* ---- the hot list ------------------------------------------------------------ */

static void hot_unlink(struct bakes *b, struct bake_rec *r)
{
	if (r->newer)
		r->newer->older = r->older;
	else
		b->hot_new = r->older;
	if (r->older)
		r->older->newer = r->newer;
	else
		b->hot_old = r->newer;
	r->newer = r->older = NULL;
}

static void hot_front(struct bakes *b, struct bake_rec *r)
{
	r->older = b->hot_new;
	r->newer = NULL;
	if (b->hot_new)
		b->hot_new->newer = r;
	else
		b->hot_old = r;
	b->hot_new = r;
}

/* Drop r's hot delta. */
static void hot_drop(struct bakes *b, struct bake_rec *r)
{
	if (!r->hot)
		return;
	hot_unlink(b, r);
	b->hot_n--;
	b->hot_bytes -= r->hot->n * sizeof(r->hot->d[0]);
	bakes_delta_unref(r->hot);
	r->hot = NULL;
}

/* Keep d (the reference is taken) as r's hot delta, the most recent one,
 * then drop the oldest others while over the budget. */
static void hot_put(struct bakes *b, struct bake_rec *r, struct bake_delta *d)
{
	hot_drop(b, r);
	r->hot = d;
	hot_front(b, r);
	b->hot_n++;
	b->hot_bytes += d->n * sizeof(d->d[0]);
	while (b->hot_bytes > BAKES_HOT_BYTES && b->hot_old != r)
		hot_drop(b, b->hot_old);
}

/* r was used: the most recent. */
static void hot_touch(struct bakes *b, struct bake_rec *r)
{
	if (r->hot && b->hot_new != r) {
		hot_unlink(b, r);
		hot_front(b, r);
	}
}

void bakes_set(struct bakes *b, struct bake_rec *r, uint64_t version, uint64_t pos,
	       size_t folded, struct bake_blob *frame)
{
	hot_drop(b, r); /* of the frame before */
	b->bytes += frame->len - r->len;
	bakes_blob_unref(r->frame);
	r->frame = frame;
	r->blob = frame->data;
	r->len = frame->len;
	r->version = version;
	r->pos = pos;
	r->folded = folded;
	b->baked++;
}

void bakes_set_base(struct bake_rec *r, struct bake_blob *frame, size_t folded)
{
	bakes_blob_unref(r->base);
	r->base = bakes_blob_ref(frame);
	r->base_folded = folded;
}

static int bakes_push(struct bakes *b, int gen, uint64_t seed, int32_t cx, int32_t cz)
{
	if (b->qlen == b->qcap) {
		size_t n = b->qcap ? b->qcap * 2 : 64, i;
		struct key *q = malloc(n * sizeof(*q));

		if (!q)
			return ERR_NOMEM;
		for (i = 0; i < b->qlen; i++)
			q[i] = b->queue[(b->qhead + i) % b->qcap];
		free(b->queue);
		b->queue = q;
		b->qcap = n;
		b->qhead = 0;
	}
	b->queue[(b->qhead + b->qlen++) % b->qcap] = (struct key){ gen, seed, cx, cz };
	return 0;
}

static int bakes_pop(struct bakes *b, int *gen, uint64_t *seed, int32_t *cx, int32_t *cz)
{
	const struct key *k;

	if (!b->qlen)
		return ERR_NOTFOUND;
	k = &b->queue[b->qhead];
	*gen = (int)k->gen;
	*seed = k->seed;
	*cx = k->cx;
	*cz = k->cz;
	b->qhead = (b->qhead + 1) % b->qcap;
	b->qlen--;
	return 0;
}

int bakes_copy(struct bakes *b, const struct world *w, int gen, uint64_t seed, int32_t cx,
	       int32_t cz, uint8_t **blob, size_t *len, struct edit **edits, size_t *n)
{
	const struct bake_rec *r = bakes_get(b, gen, seed, cx, cz, 0);
	uint64_t pos = r && r->blob ? r->pos : 0;

	*blob = NULL;
	*len = 0;
	if (world_chunk_edits_from(w, cx, cz, &pos, edits, n))
		return ERR_NOMEM;
	if (r && r->blob) {
		if (!(*blob = malloc(r->len))) {
			free(*edits);
			*edits = NULL;
			return ERR_NOMEM;
		}
		memcpy(*blob, r->blob, r->len);
		*len = r->len;
	}
	return 0;
}

int bakes_copy_hot(struct bakes *b, const struct world *w, int gen, uint64_t seed, int32_t cx,
		   int32_t cz, struct bake_delta **hot, uint8_t **blob, size_t *len,
		   uint64_t *version, struct edit **edits, size_t *n)
{
	struct bake_rec *r = bakes_get(b, gen, seed, cx, cz, 0);
	uint64_t pos;

	*hot = NULL;
	*version = r && r->blob ? r->version : 0;
	if (!r || !r->hot)
		return bakes_copy(b, w, gen, seed, cx, cz, blob, len, edits, n);
	*blob = NULL;
	*len = 0;
	pos = r->pos;
	if (world_chunk_edits_from(w, cx, cz, &pos, edits, n))
		return ERR_NOMEM;
	*hot = bakes_delta_ref(r->hot);
	hot_touch(b, r);
	return 0;
}

void bakes_offer_hot(struct bakes *b, int gen, uint64_t seed, int32_t cx, int32_t cz,
		     uint64_t version, struct bake_delta *d)
{
	struct bake_rec *r = b->closing ? NULL : bakes_get(b, gen, seed, cx, cz, 0);

	if (r && r->blob && r->version == version && !r->hot)
		hot_put(b, r, d);
	else
		bakes_delta_unref(d);
}

void bakes_stats(const struct bakes *b, struct bakes_stats *out)
{
	*out = (struct bakes_stats){ b->n, b->bytes, b->qlen, b->baked, b->hot_n, b->hot_bytes };
}

/* ---- the bake job ------------------------------------------------------------ */

/* A caller of bakes_await(). */
struct awaiter {
	struct awaiter *next;
	void (*done)(void *arg);
	void *arg;
};

struct bakes__job {
	uv_work_t work;
	struct bakes *b;
	struct awaiter *awaiters;  /* called when the job has ended */
	const struct preset *p;
	int kind;                  /* JOB_BAKE, JOB_DECODE */
	int warm;                  /* queued by bakes_warm() */
	int gen;
	uint64_t seed;
	int32_t cx, cz;
	struct bake_blob *old;     /* the delta frame baked so far (a reference) */
	struct edit *edits;        /* the edits since */
	size_t n;
	uint64_t version, pos;     /* what the new bake will fold in */
	size_t folded;
	uint8_t *blob;             /* the new delta frame */
	size_t len;
	struct bake_delta *keep;   /* the new delta (or the old one decoded) */
	int err;
};

int bakes_pack(const int32_t *delta, int chunk_log2, uint8_t **blob, size_t *len)
{
	struct tile t;
	uint8_t *enc = NULL;
	size_t n = 0;
	int rc = tile_init(&t, chunk_log2, 0);

	if (rc)
		return rc;
	t.quantum_um = TILE_DEFAULT_QUANTUM_UM; /* the header's; deltas are in quanta */
	memcpy(t.h, delta, (size_t)t.side * t.side * sizeof(*t.h));
	if (!(enc = malloc(tile_encode_bound(&t))))
		rc = ERR_NOMEM;
	else if (!(rc = tile_encode(&t, enc, tile_encode_bound(&t), &n)))
		rc = tilegen_compress(enc, n, blob, len);
	free(enc);
	tile_release(&t);
	return rc;
}

int bakes_unpack(const uint8_t *blob, size_t len, int chunk_log2, int32_t *delta)
{
	unsigned long long n = ZSTD_getFrameContentSize(blob, len);
	size_t side = bake_side(chunk_log2);
	uint8_t *enc;
	struct tile t;
	int rc;

	if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN ||
	    n > 2 * TILE_HEADER_SIZE + 8 * side * side)
		return ERR_CORRUPT;
	if (!(enc = malloc((size_t)n)))
		return ERR_NOMEM;
	if (!(rc = tilegen_decompress_to(blob, len, enc, (size_t)n)) &&
	    !(rc = tile_decode(enc, (size_t)n, &t))) {
		if (t.side == side && t.lod == 0)
			memcpy(delta, t.h, side * side * sizeof(*delta));
		else
			rc = ERR_CORRUPT;
		tile_release(&t);
	}
	free(enc);
	return rc;
}

int bakes_fold(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
	       const struct region_source *rs, const uint8_t *old, size_t old_len,
	       const struct edit *e, size_t n, uint8_t **blob, size_t *len)
{
	return bakes_fold_keep(p, seed, cx, cz, rs, old, old_len, e, n, blob, len, NULL);
}

int bakes_fold_keep(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
		    const struct region_source *rs, const uint8_t *old, size_t old_len,
		    const struct edit *e, size_t n, uint8_t **blob, size_t *len, int32_t *keep)
{
	int log2 = preset_chunk_log2(p);
	size_t side = bake_side(log2), count = side * side;
	int32_t *base = malloc(count * sizeof(*base)), *h = malloc(count * sizeof(*h));
	int64_t size = INT64_C(1) << log2;
	int64_t x0 = (int64_t)cx * size, z0 = (int64_t)cz * size;
	int rc = base && h ? 0 : ERR_NOMEM;

	if (!rc)
		rc = pipeline_heights(p, seed, 0, x0, z0, (uint32_t)side, (uint32_t)side, rs, base);
	if (!rc && old) {
		rc = bakes_unpack(old, old_len, log2, h);
		if (!rc)
			bake_add(h, base, count); /* h was the delta: now base + delta */
	} else if (!rc) {
		memcpy(h, base, count * sizeof(*h));
	}
	if (!rc) {
		edit_apply_block(h, x0, z0, 0, (uint32_t)side, (uint32_t)side,
				 preset_quantum_um(p), e, n);
		rc = bake_delta(h, base, count, h);
	}
	if (!rc && keep)
		memcpy(keep, h, count * sizeof(*h));
	if (!rc)
		rc = bakes_pack(h, log2, blob, len);
	free(base);
	free(h);
	return rc;
}

static void job_work(uv_work_t *w)
{
	struct bakes__job *j = container_of(w, struct bakes__job, work);
	int log2 = preset_chunk_log2(j->p);
	size_t side = bake_side(log2);

	if (!(j->keep = bakes_delta_new(side * side)))
		j->err = ERR_NOMEM;
	else if (j->kind == JOB_DECODE)
		j->err = bakes_unpack(j->old->data, j->old->len, log2, j->keep->d);
	else
		j->err = bakes_fold_keep(j->p, j->seed, j->cx, j->cz, j->b->rs,
					 j->old ? j->old->data : NULL, j->old ? j->old->len : 0,
					 j->edits, j->n, &j->blob, &j->len, j->keep->d);
}

static void job_done(uv_work_t *w, int status);

/* The world of (gen, seed), edited, or NULL. */
static const struct world *world_of(const struct bakes *b, int gen, uint64_t seed)
{
	return world_map_find(b->worlds, gen, seed);
}

/* Queue chunk (cx, cz) when enough of its edits are not baked yet. */
static void maybe_queue(struct bakes *b, int gen, uint64_t seed, int32_t cx, int32_t cz)
{
	const struct world *w = world_of(b, gen, seed);
	struct world_chunk ch;
	struct bake_rec *r;

	if (!w || !b->after || b->stopped)
		return;
	world_chunk(w, cx, cz, &ch);
	if (ch.nedits < b->after)
		return;
	r = bakes_get(b, gen, seed, cx, cz, 1);
	if (!r || r->queued || r->failed || ch.nedits - r->folded < b->after)
		return;
	if (bakes_push(b, gen, seed, cx, cz) == 0) {
		r->queued = 1;
		r->job = JOB_BAKE;
	}
}

/* A warm-up job is done (or will not run). */
static void warm_done(struct bakes *b, int warm)
{
	if (warm && b->warming)
		b->warming--;
}

/* Start the next queued bake unless one is running. */
static void start_next(struct bakes *b)
{
	struct bake_rec *r;
	struct world_chunk ch;
	const struct world *w;
	struct bakes__job *j;
	int gen;
	uint64_t seed;
	int32_t cx, cz;

	while (b->running < (b->warming ? WARM_JOBS : 1) && !b->stopped &&
	       bakes_pop(b, &gen, &seed, &cx, &cz) == 0) {
		int warm;

		r = bakes_get(b, gen, seed, cx, cz, 0);
		w = world_of(b, gen, seed);
		if (!r)
			continue;
		warm = r->job >= WARM_FLAG;
		r->job = (uint8_t)(r->job % WARM_FLAG);
		if (!w || (r->job == JOB_DECODE && (!r->frame || r->hot)) ||
		    !(j = calloc(1, sizeof(*j)))) {
			r->queued = 0;
			warm_done(b, warm);
			continue;
		}
		world_chunk(w, cx, cz, &ch);
		*j = (struct bakes__job){ .b = b, .p = catalog_at(b->cat, (size_t)gen), .kind = r->job,
				   .warm = warm, .gen = gen, .seed = seed, .cx = cx, .cz = cz,
				   .version = r->job == JOB_DECODE ? r->version : ch.version,
				   .folded = ch.nedits, .pos = r->blob ? r->pos : 0 };
		j->old = bakes_blob_ref(r->frame); /* before the worker may run */
		if ((j->kind == JOB_BAKE &&
		     world_chunk_edits_from(w, cx, cz, &j->pos, &j->edits, &j->n)) ||
		    uv_queue_work(b->loop, &j->work, job_work, job_done) < 0) {
			bakes_blob_unref(j->old);
			free(j->edits);
			free(j);
			r->queued = 0;
			warm_done(b, warm);
			return;
		}
		r->queued = 2;
		r->running = j;
		b->running++;
	}
}

/* ---- the warm-up after a restart ------------------------------------------- */

struct warm {
	struct key k;
	struct bake_rec *r;
	size_t nedits, bytes;
};

/* Most edits first; ties by key, so the order does not depend on the
 * table's layout. */
static int warm_cmp(const void *pa, const void *pb)
{
	const struct warm *a = pa, *b = pb;

	if (a->nedits != b->nedits)
		return a->nedits < b->nedits ? 1 : -1;
	return memcmp(&a->k, &b->k, sizeof(a->k));
}

/* Queue r (key k) as a warm-up job of kind, or mark its queued job one. */
static void warm_queue(struct bakes *b, const struct key *k, struct bake_rec *r, int kind)
{
	if (r->queued == 2)
		return; /* running: its end queues what is left */
	if (r->queued) {
		if (r->job < WARM_FLAG) {
			r->job = (uint8_t)(r->job + WARM_FLAG);
			b->warming++;
		}
		return;
	}
	if (bakes_push(b, (int)k->gen, k->seed, k->cx, k->cz) == 0) {
		r->queued = 1;
		r->job = (uint8_t)(kind + WARM_FLAG);
		b->warming++;
	}
}

void bakes_warm(struct bakes *b)
{
	struct warm *v;
	size_t i, n = 0, bytes = 0;

	if (b->stopped || !b->n || !(v = malloc(b->n * sizeof(*v))))
		return;
	for (i = 0; i < b->nslots; i++) {
		struct bake_rec *r = b->slots[i].r;
		const struct world *w;
		struct world_chunk ch;
		size_t side;

		if (!r || r->failed || r->hot ||
		    !(w = world_of(b, (int)b->slots[i].k.gen, b->slots[i].k.seed)))
			continue;
		world_chunk(w, b->slots[i].k.cx, b->slots[i].k.cz, &ch);
		if (!r->frame && ch.nedits == 0)
			continue;
		side = bake_side(preset_chunk_log2(catalog_at(b->cat, (size_t)b->slots[i].k.gen)));
		v[n++] = (struct warm){ b->slots[i].k, r, ch.nedits, side * side * sizeof(int32_t) };
	}
	qsort(v, n, sizeof(*v), warm_cmp);
	for (i = 0; i < n && bytes + v[i].bytes <= BAKES_HOT_BYTES; i++) {
		const struct world *w = world_of(b, (int)v[i].k.gen, v[i].k.seed);
		struct world_chunk ch;

		world_chunk(w, v[i].k.cx, v[i].k.cz, &ch);
		warm_queue(b, &v[i].k, v[i].r,
			   ch.nedits > v[i].r->folded || !v[i].r->frame ? JOB_BAKE : JOB_DECODE);
		bytes += v[i].bytes;
	}
	free(v);
	start_next(b);
}

int bakes_await(struct bakes *b, int gen, uint64_t seed, int32_t cx, int32_t cz, size_t min,
		void (*done)(void *arg), void *arg)
{
	struct bake_rec *r = b->closing ? NULL : bakes_get(b, gen, seed, cx, cz, 0);
	struct awaiter *a;

	if (!r || !r->running || r->running->kind != JOB_BAKE || r->running->n < min ||
	    !(a = malloc(sizeof(*a))))
		return 0;
	*a = (struct awaiter){ r->running->awaiters, done, arg };
	r->running->awaiters = a;
	return 1;
}

void bakes_changed(struct bakes *b, int gen, uint64_t seed, const int32_t *chunks, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++)
		maybe_queue(b, gen, seed, chunks[2 * k], chunks[2 * k + 1]);
	start_next(b);
}

void bakes_reset(struct bakes *b, int gen, uint64_t seed, const int32_t *chunks, size_t n,
		 uint64_t seq)
{
	size_t k;

	for (k = 0; k < n; k++) {
		struct bake_rec *r = bakes_get(b, gen, seed, chunks[2 * k], chunks[2 * k + 1], 0);

		if (!r)
			continue;
		hot_drop(b, r);
		b->bytes -= r->len;
		bakes_blob_unref(r->frame);
		r->frame = r->base ? bakes_blob_ref(r->base) : NULL;
		r->blob = r->frame ? r->frame->data : NULL;
		r->len = r->frame ? r->frame->len : 0;
		b->bytes += r->len;
		r->version = seq - 1; /* a running job's result (older) is not taken */
		r->pos = 0;
		r->folded = r->base_folded;
		r->failed = 0;
	}
	bakes_changed(b, gen, seed, chunks, n);
}

static void job_done(uv_work_t *w, int status)
{
	struct bakes__job *j = container_of(w, struct bakes__job, work);
	struct bakes *b = j->b;
	struct bake_rec *r = b->closing ? NULL : bakes_get(b, j->gen, j->seed, j->cx, j->cz, 0);

	b->running--;
	warm_done(b, j->warm);
	if (r) {
		r->queued = 0;
		r->running = NULL;
		struct bake_blob *f;

		if (status == 0 && j->err == 0 && j->kind == JOB_DECODE) {
			if (r->frame == j->old && !r->hot) {
				hot_put(b, r, j->keep);
				j->keep = NULL;
			}
		} else if (status == 0 && j->err == 0 && j->version > r->version &&
			   (f = bakes_blob_new(j->blob, j->len))) {
			bakes_set(b, r, j->version, j->pos, j->folded, f);
			hot_put(b, r, j->keep);
			j->keep = NULL;
		} else if (j->err == ERR_RANGE) {
			r->failed = 1; /* heights beyond int32 apart: keep replaying */
		}
		maybe_queue(b, j->gen, j->seed, j->cx, j->cz); /* edits since */
	}
	bakes_delta_unref(j->keep);
	bakes_blob_unref(j->old);
	while (j->awaiters) {
		struct awaiter *a = j->awaiters;

		j->awaiters = a->next;
		if (!b->closing)
			a->done(a->arg);
		free(a);
	}
	free(j->edits);
	free(j->blob);
	free(j);
	if (b->closing)
		free_all(b);
	else
		start_next(b);
}
