/*
 * tiles.c - the tile and object routes (see tiles.h): the request, its
 * parameters and ?v=, the answer from a cached value (304, the frame as
 * the body, a redirect to the current version), and the module itself.
 *
 * A request looks its value up in the cache by key (world, chunk, LOD,
 * kind, layers, the chunk's edit version and the content coding); a miss
 * starts one flight, and every request waiting for that key is answered
 * from the finished entry. An entry holds its coding's prebuilt response
 * head and body, so every hit, whatever the coding, is one write of
 * stored bytes (docs/codings.md). The values, their keys and the jobs
 * that make them are tiles_jobs.c's; the batch route is tiles_batch.c's.
 * The world map is read, never changed: edits are edits.c's.
 */
#include "tiles.h"
#include "tiles_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llhttp.h>
#include <uv.h>

#include "api/request.h"
#include "base/cache.h"
#include "base/slab.h"
#include "bundle.h"
#include "err.h"
#include "gen/regions.h"
#include "gen/tilegen.h"
#include "http/http.h"
#include "objects.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"
#include "util.h"
#include "worlds/bakes.h"
#include "worlds/catalog.h"
#include "worlds/world.h"

#define READ (REQ_M(HTTP_GET) | REQ_M(HTTP_HEAD))

/* The Content-Type of a zstd frame sent as the body (?encoding=zstd). */
#define FRAME_TYPE "application/zstd"

struct tile_req *tiles__req_of(struct req *q)
{
	struct tile_req *x = container_of(q, struct tile_req, q);

	x->t = q->module;
	return x;
}

static void release_entry(void *arg)
{
	struct tile_req *x = arg;

	cache_release(x->t->cache, x->entry);
}

/* Answer 304 for etag. An immutable X-Cache line (tiles__xcache()) brings
 * its own Cache-Control, which the head then leaves out: one line only. */
int tiles__not_modified(struct tile_req *x, const char *etag, const char *vary)
{
	char *head = http_req_alloc(x->q.http, 512), cc[80] = "";
	int n;

	if (!head)
		return ERR_NOMEM;
	if (!x->q.xcache || !strstr(x->q.xcache, "Cache-Control"))
		snprintf(cc, sizeof(cc), "Cache-Control: %s\r\n",
			 x->immutable ? TILES_IMMUTABLE : x->t->cache_control);
	n = snprintf(head, 512, "%sETag: %s\r\n%s%s%s%s" REQ_CORS REQ_EXPOSE,
		     http_status_line(304), etag, cc, vary ? "Vary: " : "",
		     vary ? vary : "", vary ? "\r\n" : "");
	req_send(&x->q, 304, head, (size_t)n, NULL, 0, NULL, NULL);
	return 0;
}

/*
 * Start the loads of a stored response that the kernel is about to copy
 * into the socket: the head, and the first line of each 4 KiB page of the
 * body. The hardware prefetcher follows the copy within a page but does
 * not cross into the next one, and with tens of megabytes of tiles cached
 * each page is also a TLB miss; issued here, those misses overlap with the
 * rest of the request and the entry into writev instead of stalling the
 * copy one page at a time (2-4% of a cache hit's CPU; docs/design.md).
 * Addresses are computed as integers: the page steps may pass the end.
 */
static void prefetch_response(const struct http_buf *head,
			      const struct http_buf *body)
{
	uintptr_t p = (uintptr_t)head->base, end = p + head->len;

	for (p &= ~(uintptr_t)63; p < end; p += 64)
		__builtin_prefetch((const void *)p);
	p = (uintptr_t)body->base;
	end = p + body->len;
	if (p == end)
		return;
	__builtin_prefetch((const void *)p);
	for (p = (p | 4095) + 1; p < end; p += 4096)
		__builtin_prefetch((const void *)p);
}

/* The head of a zstd frame sent as the body (?encoding=zstd), from the
 * arena: the tile's (or objects') media type is what the frame holds. */
static int frame_head(struct tile_req *x, const struct tile_value *v, struct http_buf *out)
{
	char *head = http_req_alloc(x->q.http, 512);
	int n;

	if (!head)
		return ERR_NOMEM;
	n = tiles__format_head(head, 512, x->t, FRAME_TYPE, tiles__vary(x->key.kind, 1),
			       v->body.len, v->etag, NULL);
	if (n < 0 || n >= 512)
		return ERR_NOMEM;
	*out = (struct http_buf){ head, (size_t)n };
	return 0;
}

/* Answer from a ready entry (the reference passes to the response). */
static int tile_send(struct tile_req *x, struct cache_entry *e)
{
	const struct tile_value *v = cache_value(e);
	const char *vary = tiles__vary(x->key.kind, x->frame);
	struct http_buf head = v->head;
	/* an immutable answer leaves out the head's last line, Cache-Control,
	 * and sends its own with X-Cache (tiles__xcache()) */
	size_t cut = x->immutable ? x->t->cc_len : 0;
	int rc;

	x->entry = e;
	if (req_etag_matches(x->q.http->header[HTTP_H_IF_NONE_MATCH], v->etag)) {
		cache_release(x->t->cache, e);
		return tiles__not_modified(x, v->etag, vary);
	}
	if (x->frame && (rc = frame_head(x, v, &head)) != 0) {
		cache_release(x->t->cache, e);
		return rc;
	}
	prefetch_response(&head, &v->body);
	req_send(&x->q, 200, head.base, head.len - cut, v->body.base, v->body.len, release_entry, x);
	return 0;
}

/* The detail of a failed generation. */
const char *tiles__gen_detail(int err)
{
	return err == ERR_BUSY ? "too many tiles being generated, retry later" :
	       "tile generation failed";
}

/* Single flight finished: answer from e, or with err. */
static void tile_ready(struct cache_waiter *w, struct cache_entry *e, int err)
{
	struct tile_req *x = container_of(w, struct tile_req, w);
	int rc = err;

	if (err)
		x->q.detail = tiles__gen_detail(err);
	else
		rc = tile_send(x, e);
	if (rc)
		req_respond_error(&x->q, rc < 0 ? req_status(rc) : rc, x->q.detail);
}

int tiles__format_head(char *buf, size_t cap, const struct tiles *t,
		       const char *type, const char *vary, size_t len,
		       const char *etag, const char *encoding)
{
	return snprintf(buf, cap,
			"%sContent-Type: %s\r\n"
			"Content-Length: %zu\r\n%s%s%s"
			"ETag: %s\r\n%s%s%s" REQ_CORS REQ_EXPOSE "Cache-Control: %s\r\n",
			http_status_line(200), type, len,
			encoding ? "Content-Encoding: " : "", encoding ? encoding : "",
			encoding ? "\r\n" : "", etag,
			vary ? "Vary: " : "", vary ? vary : "", vary ? "\r\n" : "",
			t->cache_control);
}

const char *tiles__xcache(const struct tile_req *x, int hit)
{
#define IMMUTABLE_LINE "Cache-Control: " TILES_IMMUTABLE "\r\n"
	static const char *const lines[2][2] = {
		{ "X-Cache: miss\r\n", "X-Cache: hit\r\n" },
		{ "X-Cache: miss\r\n" IMMUTABLE_LINE, "X-Cache: hit\r\n" IMMUTABLE_LINE },
	};
#undef IMMUTABLE_LINE

	return lines[x->immutable != 0][hit != 0];
}

/* s[0..n) for a header, NUL-terminated into out (3 * n + 1 bytes): bytes
 * outside visible ASCII (controls, space, DEL, from 0x80 up), which a URI
 * cannot hold and a header line must not, are percent-encoded. */
static void uri_escape(const char *s, size_t n, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch > 0x20 && ch < 0x7f) {
			*out++ = (char)ch;
		} else {
			*out++ = '%';
			*out++ = hex[ch >> 4];
			*out++ = hex[ch & 15];
		}
	}
	*out = '\0';
}

/* Answer 302 to x's URL with ?v=version: its path and query as they came,
 * v set, percent-encoded where a byte could not stand in a Location. */
static int redirect(struct tile_req *x, uint64_t version)
{
	const struct http_req *r = x->q.http;
	size_t cap = r->path_len + r->query_len + 32, ecap;
	char num[24], *loc = http_req_alloc(x->q.http, cap), *head, *body, *esc;
	long n;
	int hn, bn;

	if (!loc)
		return ERR_NOMEM;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)version);
	memcpy(loc, r->path, r->path_len);
	loc[r->path_len] = '?';
	n = req_query_set(r->query, r->query_len, "v", num, loc + r->path_len + 1,
			  cap - r->path_len - 1);
	if (n < 0)
		return ERR_NOMEM;
	ecap = 3 * (r->path_len + 1 + (size_t)n) + 1;
	if (!(esc = http_req_alloc(x->q.http, ecap)) ||
	    !(head = http_req_alloc(x->q.http, ecap + 320)))
		return ERR_NOMEM;
	uri_escape(loc, r->path_len + 1 + (size_t)n, esc);
	if (!(body = http_req_alloc(x->q.http, 48)))
		return ERR_NOMEM;
	bn = snprintf(body, 48, "{\"version\":%s}", num);
	hn = snprintf(head, ecap + 320,
		      "%sContent-Type: application/json\r\nContent-Length: %d\r\n"
		      "Location: %s\r\nCache-Control: no-cache\r\n" REQ_CORS REQ_EXPOSE,
		      http_status_line(302), bn, esc);
	x->q.xcache = NULL;
	req_send(&x->q, 302, head, (size_t)hn, body, (size_t)bn, NULL, NULL);
	return 0;
}

int tiles__check_version(struct tile_req *x, uint64_t version, int *answered)
{
	uint64_t v = 0, seq = x->world ? world_seq(x->world) : 0;
	char *msg;
	int present, rc;

	*answered = 0;
	x->immutable = 0;
	rc = req_query_u64(&x->q, "v", &v, &present, "v: not a decimal edit version");
	if (rc || !present)
		return rc;
	switch (req_version_match(v, version, seq)) {
	case REQ_V_CURRENT:
		x->immutable = 1;
		return 0;
	case REQ_V_MOVED:
		if ((rc = redirect(x, version)) == 0)
			*answered = 1;
		return rc;
	case REQ_V_AHEAD:
		break;
	}
	if (!(msg = http_req_alloc(x->q.http, 160)))
		return ERR_NOMEM;
	snprintf(msg, 160, "v: %llu is beyond this world's last edit sequence number "
		 "here, %llu", (unsigned long long)v, (unsigned long long)seq);
	x->q.detail = msg;
	return ERR_NOTFOUND;
}

void tiles__etag(uint64_t sum, int coding, char out[24])
{
	snprintf(out, 24, "\"%016llx%s\"", (unsigned long long)sum,
		 coding == REQ_CODING_ZSTD ? "-z" : coding == REQ_CODING_GZIP ? "-g" : "");
}

/* Answer x with the value of x->key: from the cache, after the flight
 * already running, or after generating it. */
static int serve_value(struct tile_req *x, const struct preset *p)
{
	struct cache_entry *e;
	int rc;

	x->key.coding = (uint8_t)(x->frame ? REQ_CODING_ZSTD : x->coding);
	x->w.done = tile_ready;
	rc = cache_fetch(x->t->cache, &x->key, sizeof(x->key),
			 uv_now(x->t->loop), &x->w, &e);
	x->q.xcache = tiles__xcache(x, rc == CACHE_HIT);
	if (rc == CACHE_HIT)
		return tile_send(x, e);
	if (rc == CACHE_MISS && x->key.coding == REQ_CODING_ZSTD)
		tiles__generate(x->t, &x->key, p, x->world, e);
	else if (rc == CACHE_MISS)
		tiles__derive(x->t, &x->key, p, x->world, e);
	return rc < 0 ? rc : 0;
}

int tiles__parse_coding(struct tile_req *x)
{
	size_t len = 0;
	int rc;
	const char *s = req_query(&x->q, "encoding", &len, &rc);

	if (rc)
		return rc;
	x->frame = s != NULL;
	x->coding = req_coding(x->q.http->header[HTTP_H_ACCEPT_ENCODING]);
	if (s && (len != 4 || memcmp(s, "zstd", 4))) {
		x->q.detail = "encoding: only zstd (the zstd frame as the body, application/zstd)";
		return ERR_INVAL;
	}
	return 0;
}

/* Path segment i as an int32 coordinate; detail names it. */
static int parse_coord(struct tile_req *x, int i, const char *name, int32_t *v)
{
	int rc = req_parse_i32(x->q.seg[i], x->q.seglen[i], v);

	if (rc)
		x->q.detail = !strcmp(name, "cx") ? "cx: not a decimal int32" :
			    "cz: not a decimal int32";
	return rc;
}

/* The LOD (segment 4) for preset p. */
int tiles__parse_lod(struct tile_req *x, const struct preset *p, int *lod)
{
	int rc = tilegen_parse_lod(p, x->q.seg[4], x->q.seglen[4], lod);

	if (rc)
		x->q.detail = "lod: not a decimal in 0..max_lod of the generator";
	return rc;
}

/* ?layers= (default "height") into PIPELINE_LAYER_* bits. */
int tiles__parse_layers(struct tile_req *x, unsigned *layers)
{
	size_t len = 0;
	int rc;
	const char *s = req_query(&x->q, "layers", &len, &rc);
	char *msg;

	*layers = 0;
	if (rc || !s || tilegen_parse_layers(s, len, layers) == 0)
		return rc;
	if (!(msg = http_req_alloc(x->q.http, 160)))
		return ERR_NOMEM;
	snprintf(msg, 160, "layers: unknown layer list \"%.64s\"; use height or "
		 "height,material", s);
	x->q.detail = msg;
	return ERR_INVAL;
}

uint32_t tiles__quantum_of(const struct tile_key *key, const struct preset *p)
{
	return key->precision ? (uint32_t)key->precision * 10000u : preset_quantum_um(p);
}

/* The ?format= values and the form each serves. */
static const struct {
	char name;
	enum tile_form form;
} formats[] = {
	{ '7', TILE_FORM_CURRENT },     /* versions 7 and 8 (1 and 2 for small tiles) */
	{ '5', TILE_FORM_BEFORE7 },     /* versions 5 and 6: 8 rANS states (1 and 2 for
					   small tiles, as servers before version 7) */
	{ '3', TILE_FORM_BEFORE5 },     /* versions 3 and 4: 2 rANS states (1 and 2 for
					   small tiles, as servers before version 5) */
	{ '1', TILE_FORM_LZ21 },        /* versions 1 and 2: lz21 byte planes */
};

int tiles__parse_format(struct tile_req *x, struct tile_key *key)
{
	size_t len = 0, k;
	int rc;
	const char *s = req_query(&x->q, "format", &len, &rc);
	char *msg;

	key->format = TILE_FORM_CURRENT;
	if (rc || !s)
		return rc;
	for (k = 0; len == 1 && k < sizeof(formats) / sizeof(formats[0]); k++) {
		if (s[0] == formats[k].name) {
			key->format = formats[k].form;
			return 0;
		}
	}
	if (!(msg = http_req_alloc(x->q.http, 240)))
		return ERR_NOMEM;
	snprintf(msg, 240, "format: unknown tile format \"%.16s\"; use 7 (the current, "
		 "the default), 5 or 3 (versions 5 and 6 or 3 and 4, for decoders written "
		 "before version 7 or 5) or 1 (the lz21 form of versions 1 and 2)", s);
	x->q.detail = msg;
	return ERR_INVAL;
}

int tiles__parse_precision(struct tile_req *x, const struct preset *p, struct tile_key *key)
{
	size_t len = 0;
	int rc;
	const char *s = req_query(&x->q, "precision", &len, &rc);
	uint32_t um, base = preset_quantum_um(p);
	char *msg;

	key->precision = 0;
	if (rc || !s)
		return rc;
	um = tile_precision_um(s, len);
	if (um && um >= base && um % base == 0) {
		if (um != base)
			key->precision = (uint8_t)(um / 10000u);
		return 0;
	}
	if (!(msg = http_req_alloc(x->q.http, 200)))
		return ERR_NOMEM;
	if (um)
		snprintf(msg, 200, "precision: %.8s is not a whole multiple of this "
			 "generator's quantum, %u um", s, (unsigned)base);
	else
		snprintf(msg, 200, "precision: unknown precision \"%.32s\"; use 1cm, 5cm, "
			 "10cm, 50cm or 1m", s);
	x->q.detail = msg;
	return ERR_INVAL;
}

static int h_tile(struct req *q)
{
	struct tile_req *x = tiles__req_of(q);
	const struct preset *p;
	uint64_t seed;
	int32_t cx, cz;
	unsigned layers;
	int rc, pi, lod, answered;

	if ((rc = req_world(&x->q, x->t->cat, &seed, &pi)) != 0)
		return rc;
	p = catalog_at(x->t->cat, (size_t)pi);
	if ((rc = tiles__parse_lod(x, p, &lod)) != 0 || (rc = parse_coord(x, 5, "cx", &cx)) != 0 ||
	    (rc = parse_coord(x, 6, "cz", &cz)) != 0 || (rc = tiles__parse_layers(x, &layers)) != 0 ||
	    (rc = tiles__parse_coding(x)) != 0)
		return rc;
	x->world = world_map_find(x->t->worlds, pi, seed);
	x->key = tiles__key_of(x->world, seed, pi, cx, cz, lod, KIND_TILE, layers);
	if ((rc = tiles__parse_precision(x, p, &x->key)) != 0 ||
	    (rc = tiles__parse_format(x, &x->key)) != 0)
		return rc;
	if ((rc = tiles__check_version(x, x->key.version, &answered)) != 0 || answered)
		return rc;
	return serve_value(x, p);
}

/* GET objects/{cx}/{cz}: the chunk's objects, JSON or binary by Accept. */
static int h_objects(struct req *q)
{
	struct tile_req *x = tiles__req_of(q);
	uint64_t seed;
	int32_t cx, cz;
	int rc, pi, kind, answered;

	if ((rc = req_world(&x->q, x->t->cat, &seed, &pi)) != 0 || (rc = parse_coord(x, 4, "cx", &cx)) != 0 ||
	    (rc = parse_coord(x, 5, "cz", &cz)) != 0 || (rc = tiles__parse_coding(x)) != 0)
		return rc;
	kind = req_prefers(x->q.http->header[HTTP_H_ACCEPT], OBJECTS_BINARY_TYPE, OBJECTS_JSON_TYPE) ? KIND_OBJECTS_BINARY :
	       KIND_OBJECTS_JSON;
	x->world = world_map_find(x->t->worlds, pi, seed);
	x->key = tiles__key_of(x->world, seed, pi, cx, cz, 0, kind, 0);
	if ((rc = tiles__check_version(x, x->key.version, &answered)) != 0 || answered)
		return rc;
	return serve_value(x, catalog_at(x->t->cat, (size_t)pi));
}

/* ---- the module ------------------------------------------------------------- */

static const struct route routes[] = {
	{ "tile", { "v1", "worlds", NULL, "chunks", NULL, NULL, NULL }, 7, READ, 0,
	  sizeof(struct tile_req), h_tile, NULL },
	{ "batch", { "v1", "worlds", NULL, "chunks", NULL }, 5, READ, 0,
	  sizeof(struct tile_req), tiles__h_batch, NULL },
	{ "objects", { "v1", "worlds", NULL, "objects", NULL, NULL }, 6, READ, 0,
	  sizeof(struct tile_req), h_objects, NULL },
};

size_t tiles_routes(const struct route **out)
{
	*out = routes;
	return ARRAY_LEN(routes);
}

static void free_value(void *slab, void *v)
{
	slab_free(slab, v);
}

int tiles_create(struct uv_loop_s *loop, const struct catalog *cat,
		 const struct world_map *worlds, struct req_env *env,
		 const struct tiles_config *cfg, struct tiles **out)
{
	struct tiles *t;
	int rc;

	if (!loop || !cat || !worlds || !env || !cfg || !out)
		return ERR_INVAL;
	if (!(t = calloc(1, sizeof(*t))))
		return ERR_NOMEM;
	*t = (struct tiles){ .loop = loop, .cat = cat, .worlds = worlds, .env = env,
			     .max_generations = cfg->max_generations ?
						cfg->max_generations : 1024 };
	if (cfg->max_age)
		snprintf(t->cache_control, sizeof(t->cache_control), "public, max-age=%u",
			 cfg->max_age);
	else
		snprintf(t->cache_control, sizeof(t->cache_control), "no-cache");
	t->cc_len = strlen("Cache-Control: \r\n") + strlen(t->cache_control);
	if ((rc = slab_create(cfg->cache_bytes, &t->slab)) != 0 ||
	    (rc = cache_create(cfg->cache_bytes, 0, free_value, t->slab, &t->cache)) != 0 ||
	    (rc = tilegen_pool_create(&t->pool)) != 0 ||
	    (rc = regions_create(cfg->region_bytes, &t->regions)) != 0 ||
	    (rc = bakes_create(loop, cat, worlds, regions_source(t->regions),
				 cfg->bake_after, &t->bakes)) != 0) {
		tiles_destroy(t);
		return rc;
	}
	*out = t;
	return 0;
}

void tiles_stop(struct tiles *t)
{
	bakes_stop(t->bakes);
}

void tiles_changed(void *arg, int gen, uint64_t seed, const int32_t *chunks, size_t n,
		   uint64_t revert)
{
	struct tiles *t = arg;

	if (revert)
		bakes_reset(t->bakes, gen, seed, chunks, n, revert);
	else
		bakes_changed(t->bakes, gen, seed, chunks, n);
}

void tiles_stats(const struct tiles *t, struct cache_stats *cs, struct regions_stats *rs,
		 struct bakes_stats *bs)
{
	bakes_stats(t->bakes, bs);
	cache_stats(t->cache, cs);
	regions_stats(t->regions, rs);
}

void tiles_destroy(struct tiles *t)
{
	if (!t)
		return;
	bakes_destroy(t->bakes);
	cache_destroy(t->cache);
	slab_destroy(t->slab);
	regions_destroy(t->regions);
	tilegen_pool_destroy(t->pool);
	free(t);
}

struct bakes *tiles_bakes(struct tiles *t)
{
	return t->bakes;
}

const struct region_source *tiles_region_source(const struct tiles *t)
{
	return regions_source(t->regions);
}
