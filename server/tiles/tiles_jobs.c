/*
 * tiles_jobs.c - the cached values of the tiles module and the jobs that
 * make them (tiles_int.h): a value's key, its prebuilt head and body in
 * one allocation, the generation job (the edits it applies, copied on the
 * loop thread; a bake it waits for), the short job that makes a gzip or
 * identity value from the zstd one, and the end of a generation that
 * maps.c's jobs share. The routes that look values up are tiles.c's,
 * tiles_batch.c's and maps.c's.
 *
 * The zstd value is generated, encoded and compressed on the worker pool;
 * a gzip or identity value is made from the zstd one (fetched, or
 * generated first) by a short job, once, and cached beside it
 * (docs/codings.md).
 */
#include "tiles_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>
#include <xxhash.h>

#include "api/metrics.h"
#include "api/request.h"
#include "bake.h"
#include "base/cache.h"
#include "base/slab.h"
#include "err.h"
#include "gen/regions.h"
#include "gen/tilegen.h"
#include "objects.h"
#include "preset.h"
#include "tile.h"
#include "util.h"
#include "worlds/bakes.h"
#include "worlds/catalog.h"
#include "worlds/world.h"

/* Content-Type and Vary of each kind, the Vary of its frame answer
 * (?encoding=zstd, which Accept-Encoding does not change) and what its
 * gzip body holds. */
static const struct {
	const char *type, *vary, *frame_vary;
	enum tilegen_gzip_kind gzip;
} kinds[] = {
	[KIND_TILE] = { TILE_MEDIA_TYPE, "Accept-Encoding", NULL, TILEGEN_GZIP_TILE },
	[KIND_OBJECTS_JSON] = { OBJECTS_JSON_TYPE, "Accept, Accept-Encoding", "Accept",
				TILEGEN_GZIP_TEXT },
	[KIND_OBJECTS_BINARY] = { OBJECTS_BINARY_TYPE, "Accept, Accept-Encoding", "Accept",
				  TILEGEN_GZIP_TEXT },
};

/* The Content-Encoding of each coding (enum req_coding). */
static const char *const encodings[] = {
	[REQ_CODING_IDENTITY] = NULL,
	[REQ_CODING_ZSTD] = "zstd",
	[REQ_CODING_GZIP] = "gzip",
};

const char *tiles__vary(int kind, int frame)
{
	return frame ? kinds[kind].frame_vary : kinds[kind].vary;
}

/* Chunk-size deltas decompressed for a job. */
#define BAKE_MAX_CHUNKS 9

/* The edits a job applies, copied on the loop thread: per chunk (the
 * tile's own, or the 3 x 3 around it, needs_around()), its baked delta
 * (decoded and shared when the bakes keep it hot, else a copy of its zstd
 * frame, which the worker decodes and the bakes may keep afterwards) and
 * the edits since. */
struct job_edits {
	int chunk_log2;
	size_t n;
	struct chunk_edits {
		int32_t cx, cz;
		struct bake_delta *hot;     /* a reference, or NULL */
		uint8_t *blob;              /* else the frame, or NULL */
		size_t blob_len;
		uint64_t version;           /* of the bake */
		struct bake_delta *decoded; /* the worker's decoding of blob */
		struct edit *edits;
		size_t nedits;
	} c[BAKE_MAX_CHUNKS];
};

/* A generation on the worker pool; the loop thread owns it otherwise. */
struct gen_job {
	uv_work_t work;
	struct tiles *t;
	struct cache_entry *flight;
	const struct preset *p;
	const struct region_source *rs;
	struct tile_key key;
	uint64_t edit_seq;               /* the chunk's own edit version */
	struct job_edits ed;             /* private copies of the edits */
	struct tile_value *value;
	size_t bytes;
	int err;
	uint64_t ns;
};

/*
 * The cached value of key (its kind and coding) for a body of blen bytes
 * of content hash sum, whose identity is len bytes, in one block of the
 * slab (t->slab) of *bytes: the head, then the body, copied from body or,
 * when body is NULL, left for the caller to fill (*dst).
 */
static int value_build(const struct tiles *t, const struct tile_key *key, uint64_t sum,
		       size_t len, const uint8_t *body, size_t blen, struct tile_value **out,
		       uint8_t **dst, size_t *bytes)
{
	char head[512], etag[24];
	struct tile_value *v;
	int n;

	tiles__etag(sum, key->coding, etag);
	n = tiles__format_head(head, sizeof(head), t, kinds[key->kind].type,
			       kinds[key->kind].vary, blen, etag, encodings[key->coding]);
	if (n < 0 || (size_t)n >= sizeof(head))
		return ERR_INVAL;
	v = slab_alloc(t->slab, sizeof(*v) + (size_t)n + blen, bytes);
	if (!v)
		return ERR_NOMEM;
	v->sum = sum;
	v->raw_len = len;
	memcpy(v->etag, etag, sizeof(etag));
	memcpy(v->data, head, (size_t)n);
	if (body)
		memcpy(v->data + n, body, blen);
	v->head = (struct http_buf){ v->data, (size_t)n };
	v->body = (struct http_buf){ v->data + n, blen };
	if (dst)
		*dst = (uint8_t *)v->data + n;
	*out = v;
	return 0;
}

/* ---- the edits a job applies ----------------------------------------------- */

static void job_edits_free(struct job_edits *ed)
{
	size_t k;

	for (k = 0; k < ed->n; k++) {
		bakes_delta_unref(ed->c[k].hot);
		bakes_delta_unref(ed->c[k].decoded);
		free(ed->c[k].blob);
		free(ed->c[k].edits);
	}
	ed->n = 0;
}

/* Loop thread, after a job that went well: the deltas it decoded go to
 * the bakes, which keep them hot for the next tiles of those chunks. */
static void job_edits_offer(struct tiles *t, const struct tile_key *key, struct job_edits *ed)
{
	size_t k;

	for (k = 0; k < ed->n; k++)
		if (ed->c[k].decoded) {
			bakes_offer_hot(t->bakes, (int)key->preset, key->seed, ed->c[k].cx,
					ed->c[k].cz, ed->c[k].version, ed->c[k].decoded);
			ed->c[k].decoded = NULL;
		}
}

/*
 * Copy, on the loop thread, what chunk (cx, cz) of world w (gen, seed)
 * contributes: its bake's delta (a copy of the frame) and the edits since.
 */
static int copy_chunk(struct tiles *t, const struct world *w, int gen, uint64_t seed,
		      int32_t cx, int32_t cz, struct job_edits *ed)
{
	struct chunk_edits *c = &ed->c[ed->n];

	*c = (struct chunk_edits){ .cx = cx, .cz = cz };
	if (bakes_copy_hot(t->bakes, w, gen, seed, cx, cz, &c->hot, &c->blob, &c->blob_len,
			   &c->version, &c->edits, &c->nedits))
		return ERR_NOMEM;
	ed->n++;
	return 0;
}

/* The chunks whose edits key's value reads: its own, or the 3 x 3 around
 * it when it reads beyond the chunk (needs_around()). */
static int copy_edits(struct tiles *t, const struct world *w, const struct tile_key *key,
		      int around, struct job_edits *ed)
{
	int64_t x, z, r = around ? 1 : 0;
	int rc = 0;

	ed->chunk_log2 = preset_chunk_log2(catalog_at(t->cat, key->preset));
	for (z = (int64_t)key->cz - r; !rc && z <= (int64_t)key->cz + r; z++)
		for (x = (int64_t)key->cx - r; !rc && x <= (int64_t)key->cx + r; x++) {
			struct world_chunk ch;

			if (x < INT32_MIN || x > INT32_MAX || z < INT32_MIN || z > INT32_MAX)
				continue;
			world_chunk(w, (int32_t)x, (int32_t)z, &ch);
			if (ch.nedits)
				rc = copy_chunk(t, w, (int)key->preset, key->seed, (int32_t)x,
						(int32_t)z, ed);
		}
	if (rc)
		job_edits_free(ed);
	return rc;
}

/* Worker: the layer of ed, a hot delta as it is, a frame decoded into
 * ed's chunk (decoded, kept for job_edits_offer()). */
static int layer_open(struct job_edits *ed, struct bake_chunk *bc, struct bake_layer *bl)
{
	size_t side = bake_side(ed->chunk_log2), k;
	int rc = 0;

	for (k = 0; k < ed->n; k++) {
		struct chunk_edits *c = &ed->c[k];
		const int32_t *delta = c->hot ? c->hot->d : NULL;

		if (!rc && !delta && c->blob) {
			if (!(c->decoded = bakes_delta_new(side * side)))
				rc = ERR_NOMEM;
			else
				rc = bakes_unpack(c->blob, c->blob_len, ed->chunk_log2,
						  c->decoded->d);
			delta = c->decoded ? c->decoded->d : NULL;
		}
		bc[k] = (struct bake_chunk){ c->cx, c->cz, delta, c->edits, c->nedits };
	}
	*bl = (struct bake_layer){ ed->chunk_log2, bc, ed->n };
	return rc;
}

/* ---- generation ------------------------------------------------------------- */

/* The identity body of j's key, a tile (into wk) or the chunk's objects
 * (*heap: malloc'd, to free). */
static int gen_body(struct gen_job *j, struct tilegen_work *wk, const uint8_t **raw,
		    size_t *len, uint8_t **heap)
{
	const struct tile_key *k = &j->key;
	struct bake_chunk bc[BAKE_MAX_CHUNKS];
	struct bake_layer layer, *bl = j->ed.n ? &layer : NULL;
	int rc = bl ? layer_open(&j->ed, bc, &layer) : 0;

	*heap = NULL;
	if (!rc && k->kind == KIND_TILE)
		rc = tilegen_encode_work_at(wk, j->p, k->seed, k->lod, k->cx, k->cz, j->rs, bl,
					    j->edit_seq, k->layers, tiles__quantum_of(k, j->p),
					    (enum tile_form)k->format, raw, len);
	else if (!rc && (rc = objects_encode(j->p, k->seed, k->cx, k->cz, j->rs, bl,
					    j->edit_seq, k->kind == KIND_OBJECTS_BINARY ?
					    OBJECTS_BINARY : OBJECTS_JSON, heap, len)) == 0)
		*raw = *heap;
	return rc;
}

/* Worker thread: generate, encode, compress in a workspace of the pool,
 * then build the value: the one allocation that outlives the job. */
static void gen_work(uv_work_t *w)
{
	struct gen_job *j = container_of(w, struct gen_job, work);
	struct tilegen_work *wk = tilegen_pool_take(j->t->pool);
	uint64_t t0 = uv_hrtime(), sum;
	const uint8_t *raw = NULL, *z = NULL;
	uint8_t *heap = NULL;
	size_t len, zlen;

	j->err = wk ? gen_body(j, wk, &raw, &len, &heap) : ERR_NOMEM;
	if (!j->err)
		j->err = tilegen_compress_work(wk, raw, len, &z, &zlen);
	if (!j->err) {
		sum = j->key.kind == KIND_TILE ? tile_checksum(raw) : XXH3_64bits(raw, len);
		j->err = value_build(j->t, &j->key, sum, len, z, zlen, &j->value, NULL,
				     &j->bytes);
	}
	free(heap);
	tilegen_pool_put(j->t->pool, wk);
	j->ns = uv_hrtime() - t0;
}

int tiles__job_done(struct tiles *t, struct cache_entry *flight, int status, int err,
		    void *value, size_t bytes, uint64_t ns)
{
	if (status < 0 && !err)
		err = ERR_BUSY;
	t->generating--;
	metrics_generation_end(t->env->metrics, (double)ns / 1e9, err);
	if (err)
		cache_abort(t->cache, flight, err);
	else
		cache_complete(t->cache, flight, value, bytes, uv_now(t->loop));
	return err;
}

static void gen_done(uv_work_t *w, int status)
{
	struct gen_job *j = container_of(w, struct gen_job, work);

	if (!tiles__job_done(j->t, j->flight, status, j->err, j->value, j->bytes, j->ns))
		job_edits_offer(j->t, &j->key, &j->ed);
	job_edits_free(&j->ed);
	free(j);
}

/* Whether key's value reads the heights beyond its chunk (materials need
 * each sample's neighbours), so that its neighbours' edits matter too. */
static int needs_around(const struct tile_key *key)
{
	return key->kind != KIND_TILE || key->layers != 0;
}

/* A tile waits for a bake on the pool that folds this many edits or more
 * rather than apply them itself (bakes_await()). */
#define AWAIT_EDITS 64

/* A generation waiting for a bake. */
struct deferred {
	struct tiles *t;
	struct tile_key key;
	const struct preset *p;
	const struct world *w;
	struct cache_entry *flight;
};

static void deferred_go(void *arg)
{
	struct deferred *d = arg;

	tiles__generate(d->t, &d->key, d->p, d->w, d->flight);
	free(d);
}

/* Whether a chunk key's value reads has a bake on the pool folding edits
 * that the generation would otherwise apply itself: it then waits for it
 * (returns 1), and runs once the bake has ended. */
static int await_bake(struct tiles *t, const struct tile_key *key, const struct preset *p,
		      const struct world *w, struct cache_entry *flight)
{
	int64_t r = needs_around(key) ? 1 : 0, x, z;
	struct deferred *d = NULL;

	for (z = (int64_t)key->cz - r; z <= (int64_t)key->cz + r; z++)
		for (x = (int64_t)key->cx - r; x <= (int64_t)key->cx + r; x++) {
			if (x < INT32_MIN || x > INT32_MAX || z < INT32_MIN || z > INT32_MAX)
				continue;
			if (!d && !(d = malloc(sizeof(*d))))
				return 0;
			*d = (struct deferred){ t, *key, p, w, flight };
			if (bakes_await(t->bakes, (int)key->preset, key->seed, (int32_t)x, (int32_t)z,
					AWAIT_EDITS, deferred_go, d))
				return 1;
		}
	free(d);
	return 0;
}

/* Queue the generation of key's value (world w's edits, w may be NULL)
 * for the flight; a full queue fails it with ERR_BUSY (503), which bounds
 * the memory waiting requests hold. A bake on the pool that folds many of
 * the edits it would apply is waited for first (await_bake()). */
void tiles__generate(struct tiles *t, const struct tile_key *key,
		     const struct preset *p, const struct world *w,
		     struct cache_entry *flight)
{
	struct world_chunk ch;
	struct gen_job *j;

	if (w && await_bake(t, key, p, w, flight))
		return;
	if (t->generating >= t->max_generations) {
		cache_abort(t->cache, flight, ERR_BUSY);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		cache_abort(t->cache, flight, ERR_NOMEM);
		return;
	}
	*j = (struct gen_job){ .t = t, .flight = flight, .p = p,
			       .rs = regions_source(t->regions), .key = *key };
	if (w) {
		world_chunk(w, key->cx, key->cz, &ch);
		j->edit_seq = ch.version;
		if (copy_edits(t, w, key, needs_around(key), &j->ed)) {
			free(j);
			cache_abort(t->cache, flight, ERR_NOMEM);
			return;
		}
	}
	if (uv_queue_work(t->loop, &j->work, gen_work, gen_done) < 0) {
		job_edits_free(&j->ed);
		free(j);
		cache_abort(t->cache, flight, ERR_BUSY);
		return;
	}
	t->generating++;
	metrics_generation_start(t->env->metrics);
}

/* ---- other codings ---------------------------------------------------------- */

/* A gzip or identity value made from its zstd base on the worker pool;
 * the loop thread owns it otherwise. */
struct derive_job {
	uv_work_t work;
	struct tiles *t;
	struct cache_waiter w;           /* on the base */
	struct cache_entry *flight, *base;
	struct tile_key key;             /* the value's */
	struct tile_value *value;
	size_t bytes;
	int err;
};

/* j's value from its base: the frame decompressed straight into the
 * value for identity, or into wk and deflated for gzip. */
static int derive_value(struct derive_job *j, struct tilegen_work *wk)
{
	const struct tile_value *b = cache_value(j->base);
	const uint8_t *raw, *g;
	uint8_t *dst;
	size_t glen;
	int rc;

	if (j->key.coding == REQ_CODING_IDENTITY) {
		rc = value_build(j->t, &j->key, b->sum, b->raw_len, NULL, b->raw_len, &j->value,
				 &dst, &j->bytes);
		return rc ? rc : tilegen_decompress_work(wk, b->body.base, b->body.len, dst,
							 b->raw_len);
	}
	if ((rc = tilegen_inflate_work(wk, b->body.base, b->body.len, b->raw_len, &raw)) != 0 ||
	    (rc = tilegen_gzip_work(wk, raw, b->raw_len, kinds[j->key.kind].gzip, &g, &glen)) != 0)
		return rc;
	return value_build(j->t, &j->key, b->sum, b->raw_len, g, glen, &j->value, NULL,
			   &j->bytes);
}

/* Worker thread: make j's value in a workspace of the pool. */
static void derive_work(uv_work_t *w)
{
	struct derive_job *j = container_of(w, struct derive_job, work);
	struct tilegen_work *wk = tilegen_pool_take(j->t->pool);

	j->err = wk ? derive_value(j, wk) : ERR_NOMEM;
	tilegen_pool_put(j->t->pool, wk);
}

static void derive_done(uv_work_t *w, int status)
{
	struct derive_job *j = container_of(w, struct derive_job, work);
	struct tiles *t = j->t;

	if (status < 0 && !j->err)
		j->err = ERR_BUSY;
	t->generating--;
	cache_release(t->cache, j->base);
	if (j->err) {
		slab_free(t->slab, j->value);
		cache_abort(t->cache, j->flight, j->err);
	} else {
		cache_complete(t->cache, j->flight, j->value, j->bytes, uv_now(t->loop));
	}
	free(j);
}

/* The base is ready (or failed): queue the job that makes the coding. */
static void base_ready(struct cache_waiter *w, struct cache_entry *e, int err)
{
	struct derive_job *j = container_of(w, struct derive_job, w);
	struct tiles *t = j->t;

	j->base = e;
	if (!err && t->generating >= t->max_generations)
		err = ERR_BUSY;
	if (!err && uv_queue_work(t->loop, &j->work, derive_work, derive_done) < 0)
		err = ERR_BUSY;
	if (err) {
		cache_release(t->cache, e);
		cache_abort(t->cache, j->flight, err);
		free(j);
		return;
	}
	t->generating++;
}

/* Make key's value (a coding other than zstd) for the flight from its
 * zstd base: from the cache, after the base's flight, or after generating
 * it (world w's edits, p). The job counts against max_generations. */
void tiles__derive(struct tiles *t, const struct tile_key *key, const struct preset *p,
		   const struct world *w, struct cache_entry *flight)
{
	struct derive_job *j = calloc(1, sizeof(*j));
	struct tile_key base;
	struct cache_entry *e;
	int rc;

	if (!j) {
		cache_abort(t->cache, flight, ERR_NOMEM);
		return;
	}
	*j = (struct derive_job){ .t = t, .flight = flight, .key = *key };
	j->w.done = base_ready;
	base = *key;
	base.coding = REQ_CODING_ZSTD;
	rc = cache_fetch(t->cache, &base, sizeof(base), uv_now(t->loop), &j->w, &e);
	if (rc == CACHE_HIT) {
		base_ready(&j->w, e, 0);
	} else if (rc == CACHE_MISS) {
		tiles__generate(t, &base, p, w, e);
	} else if (rc < 0) {
		cache_abort(t->cache, flight, rc);
		free(j);
	}
}

/* The key of a value of chunk (cx, cz) of world (pi, seed), whose edit
 * state is w (NULL: unedited). */
struct tile_key tiles__key_of(const struct world *w, uint64_t seed, int pi,
			      int32_t cx, int32_t cz, int lod, int kind,
			      unsigned layers)
{
	struct tile_key k = { .seed = seed, .cx = cx, .cz = cz, .preset = (uint16_t)pi,
			      .lod = (uint8_t)lod, .coding = REQ_CODING_ZSTD,
			      .kind = (uint8_t)kind, .layers = (uint8_t)layers };
	struct world_chunk ch;

	if (w && needs_around(&k)) {
		k.version = world_around_version(w, cx, cz);
	} else if (w) {
		world_chunk(w, cx, cz, &ch);
		k.version = ch.version;
	}
	return k;
}
