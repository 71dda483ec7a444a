/*
 * tiles_batch.c - batch fetch: the tiles of a rectangle as one bundle
 * (bundle.h), each taken from and put into the tile cache with the same
 * single flight as a single tile; the bundle is assembled and compressed
 * on a worker (see routes.h for the HTTP semantics). A bundle travels as
 * zstd or identity (a gzip-only client gets identity: bundles are made
 * per request, and deflating megabytes per request is what the cached
 * codings of single tiles avoid), or as the zstd frame itself with
 * ?encoding=zstd.
 */
#include <stdlib.h>
#include <string.h>

#include <uv.h>
#include <xxhash.h>

#include "api/request.h"
#include "base/cache.h"
#include "bundle.h"
#include "err.h"
#include "gen/tilegen.h"
#include "http/http.h"
#include "tiles.h"
#include "tiles_int.h"
#include "util.h"
#include "worlds/catalog.h"
#include "worlds/world.h"

/* One tile of a batch. */
struct member {
	struct cache_waiter w;
	struct bundle_job *b;
	struct tile_key key;
	struct cache_entry *e;           /* referenced once ready */
};

/* A batch request, in its arena: its tiles are fetched like single tiles
 * (single flight, generated in parallel on the workers); once all are
 * ready, a worker assembles the bundle and compresses it when accepted. */
struct bundle_job {
	struct tile_req *x;
	uv_work_t work;
	size_t n, pending;               /* members; fetches not settled */
	size_t hits;
	int err;
	int zstd;                        /* the body is a zstd frame */
	struct bundle_entry *ent;        /* the index, laid out */
	size_t len;                      /* the bundle's size */
	uint8_t *body;                   /* the response body, malloc'd */
	size_t body_len;
	char etag[24];
	struct member m[];
};

static void batch_release(struct bundle_job *b)
{
	size_t k;

	for (k = 0; k < b->n; k++)
		cache_release(b->x->t->cache, b->m[k].e);
}

static void release_body(void *arg)
{
	struct bundle_job *b = arg;

	req_made_give(&b->x->q, b->len);
	free(b->body);
}

/* Worker: the identity bundle, then its zstd frame when accepted. */
static void bundle_work(uv_work_t *w)
{
	struct bundle_job *b = container_of(w, struct bundle_job, work);
	struct tilegen_work *wk = tilegen_pool_take(b->x->t->pool);
	uint8_t *raw = malloc(b->len);
	size_t k;
	int rc = raw && wk ? 0 : ERR_NOMEM;

	if (raw)
		bundle_write_index(b->ent, b->n, raw);
	for (k = 0; !rc && k < b->n; k++) {
		const struct tile_value *v = cache_value(b->m[k].e);

		rc = tilegen_decompress_work(wk, v->body.base, v->body.len,
					     raw + b->ent[k].offset, v->raw_len);
	}
	tilegen_pool_put(b->x->t->pool, wk);
	if (!rc && b->zstd) {
		rc = tilegen_compress(raw, b->len, &b->body,
				      &b->body_len);
	} else if (!rc) {
		b->body = raw;
		b->body_len = b->len;
		raw = NULL;
	}
	free(raw);
	b->x->err = rc;
}

static void bundle_done(uv_work_t *w, int status)
{
	struct bundle_job *b = container_of(w, struct bundle_job, work);
	struct tile_req *x = b->x;
	char *head;
	int n;

	batch_release(b);
	if (status < 0 || x->err) {
		req_made_give(&x->q, b->len);
		free(b->body);
		req_respond_error(&x->q, 500, "bundle assembly failed");
		return;
	}
	if (!(head = http_req_alloc(x->q.http, 512))) {
		req_made_give(&x->q, b->len);
		free(b->body);
		req_respond_oom(x->q.env, x->q.http, x->q.label);
		return;
	}
	n = x->frame ? tiles__format_head(head, 512, x->t, "application/zstd", NULL, b->body_len,
					  b->etag, NULL) :
	    tiles__format_head(head, 512, x->t, BUNDLE_TYPE, "Accept-Encoding", b->body_len,
			       b->etag, b->zstd ? "zstd" : NULL);
	if (n > 0 && n < 512 && x->immutable) { /* its last line becomes the immutable one */
		n -= (int)x->t->cc_len;
		n += snprintf(head + n, 512 - (size_t)n, "Cache-Control: " TILES_IMMUTABLE "\r\n");
	}
	req_send(&x->q, 200, head, (size_t)n, b->body, b->body_len, release_body, b);
}

/* Every member is ready or failed: answer 304, or assemble the bundle. */
static void batch_ready(struct bundle_job *b)
{
	struct tile_req *x = b->x;
	uint8_t sums[8 * TILES_BATCH_MAX];
	size_t k;
	int rc;

	/* the head is made here, immutable Cache-Control included */
	x->q.xcache = b->hits == b->n ? "X-Cache: hit\r\n" : "X-Cache: miss\r\n";
	if (b->err) {
		batch_release(b);
		req_respond_error(&x->q, req_status(b->err), tiles__gen_detail(b->err));
		return;
	}
	for (k = 0; k < b->n; k++) {
		const struct tile_value *v = cache_value(b->m[k].e);
		int i;

		b->ent[k] = (struct bundle_entry){ b->m[k].key.cx, b->m[k].key.cz, 0,
						   (uint32_t)v->raw_len };
		for (i = 0; i < 8; i++)
			sums[8 * k + (size_t)i] = (uint8_t)(v->sum >> (8 * i));
	}
	tiles__etag(XXH3_64bits(sums, 8 * b->n), b->zstd ? REQ_CODING_ZSTD : REQ_CODING_IDENTITY,
		    b->etag);
	if (req_etag_matches(x->q.http->header[HTTP_H_IF_NONE_MATCH], b->etag)) {
		batch_release(b);
		if ((rc = tiles__not_modified(x, b->etag, x->frame ? NULL : "Accept-Encoding")) != 0)
			req_respond_oom(x->q.env, x->q.http, x->q.label);
		return;
	}
	x->q.detail = "cannot assemble the bundle";
	rc = bundle_layout(b->ent, b->n, &b->len);
	if (!rc && (rc = req_made_take(&x->q, b->len)) == 0 &&
	    uv_queue_work(x->t->loop, &b->work, bundle_work, bundle_done) < 0) {
		req_made_give(&x->q, b->len);
		rc = ERR_BUSY;
	}
	if (rc) {
		batch_release(b);
		req_respond_error(&x->q, req_status(rc), x->q.detail);
	}
}

/* One fetch of the batch has settled (err: why it failed). */
static void batch_settle(struct bundle_job *b, int err)
{
	if (err && !b->err)
		b->err = err;
	if (--b->pending == 0)
		batch_ready(b);
}

static void member_ready(struct cache_waiter *w, struct cache_entry *e, int err)
{
	struct member *m = container_of(w, struct member, w);

	m->e = e;
	batch_settle(m->b, err);
}

static void member_fetch(struct bundle_job *b, struct member *m, const struct preset *p)
{
	struct tiles *t = b->x->t;
	struct cache_entry *e;
	int rc;

	m->b = b;
	m->w.done = member_ready;
	b->pending++;
	rc = cache_fetch(t->cache, &m->key, sizeof(m->key), uv_now(t->loop), &m->w, &e);
	if (rc == CACHE_HIT) {
		m->e = e;
		b->hits++;
		batch_settle(b, 0);
	} else if (rc == CACHE_MISS) {
		tiles__generate(t, &m->key, p, b->x->world, e);
	} else if (rc < 0) {
		batch_settle(b, rc);
	}
}

/* The rectangle ?cx0=&cz0=&cx1=&cz1= of a batch, at most TILES_BATCH_MAX
 * tiles; *n is its tile count. */
static int parse_rect(struct tile_req *x, int32_t r[4], size_t *n)
{
	static const char *const names[4] = { "cx0", "cz0", "cx1", "cz1" };
	int64_t w, h;
	int i, rc;

	for (i = 0; i < 4; i++)
		if ((rc = req_query_i32(&x->q, names[i], &r[i],
					 "cx0, cz0, cx1, cz1: required, decimal int32")) != 0)
			return rc;
	w = (int64_t)r[2] - r[0] + 1;
	h = (int64_t)r[3] - r[1] + 1;
	if (w < 1 || h < 1 || w > TILES_BATCH_MAX || h > TILES_BATCH_MAX ||
	    w * h > TILES_BATCH_MAX) {
		x->q.detail = w < 1 || h < 1 ? "rectangle: need cx0 <= cx1 and cz0 <= cz1" :
			    "rectangle: at most 64 tiles (cx0..cx1 x cz0..cz1, inclusive)";
		return ERR_INVAL;
	}
	*n = (size_t)(w * h);
	return 0;
}

/* GET chunks/{lod}?cx0=&cz0=&cx1=&cz1=: a bundle of the rectangle's tiles. */
int tiles__h_batch(struct req *q)
{
	struct tile_req *x = tiles__req_of(q);
	const struct preset *p;
	struct bundle_job *b;
	uint64_t seed;
	int32_t r[4];
	int64_t cx, cz;
	unsigned layers;
	struct tile_key pk;
	uint64_t version = 0;
	size_t n, k = 0;
	int rc, pi, lod, answered;

	if ((rc = req_world(&x->q, x->t->cat, &seed, &pi)) != 0)
		return rc;
	p = catalog_at(x->t->cat, (size_t)pi);
	if ((rc = tiles__parse_lod(x, p, &lod)) != 0 || (rc = tiles__parse_layers(x, &layers)) != 0 ||
	    (rc = parse_rect(x, r, &n)) != 0 || (rc = tiles__parse_coding(x)) != 0 ||
	    (rc = tiles__parse_precision(x, p, &pk)) != 0 || (rc = tiles__parse_format(x, &pk)) != 0)
		return rc;
	b = http_req_alloc(x->q.http, sizeof(*b) + n * sizeof(b->m[0]));
	if (!b)
		return ERR_NOMEM;
	memset(b, 0, sizeof(*b) + n * sizeof(b->m[0]));
	if (!(b->ent = http_req_alloc(x->q.http, n * sizeof(*b->ent))))
		return ERR_NOMEM;
	b->x = x;
	b->n = n;
	b->pending = 1; /* held until every fetch is started */
	b->zstd = x->frame || req_accepts_zstd(x->q.http->header[HTTP_H_ACCEPT_ENCODING]);
	x->world = world_map_find(x->t->worlds, pi, seed);
	for (cz = r[1]; cz <= r[3]; cz++)
		for (cx = r[0]; cx <= r[2]; cx++, k++) {
			b->m[k].key = tiles__key_of(x->world, seed, pi, (int32_t)cx, (int32_t)cz, lod,
					     KIND_TILE, layers);
			b->m[k].key.precision = pk.precision;
			b->m[k].key.format = pk.format;
			if (b->m[k].key.version > version)
				version = b->m[k].key.version;
		}
	/* a bundle's version: the largest of its members' */
	if ((rc = tiles__check_version(x, version, &answered)) != 0 || answered)
		return rc;
	for (k = 0; k < n; k++)
		member_fetch(b, &b->m[k], p);
	batch_settle(b, 0);
	return 0;
}
