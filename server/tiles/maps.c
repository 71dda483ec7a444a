/*
 * maps.c - TileJSON documents and web map tiles (see maps.h; the pyramid
 * and the pixels are maptile.h's, the PNG pngenc.h's).
 *
 * A map tile request computes its block (maptile_block()), the chunks
 * whose half-open squares hold its samples and the largest edit version
 * among them (world_rect_chunks()), and looks the PNG up in the tile
 * cache under a key of its own length, so it never meets a tile's key.
 * A miss copies, on the loop thread, the baked delta and later edits of
 * each of those chunks that has edits, and a worker generates the heights
 * (maptile_heights()), applies the chunks one after the other
 * (maptile_apply_chunk(), one delta decompressed at a time), draws the
 * pixels and encodes the PNG. Every request waiting for the key is
 * answered from the entry, which holds the response head and body.
 */
#include "maps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <llhttp.h>
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
#include "http/http.h"
#include "maptile.h"
#include "pngenc.h"
#include "preset.h"
#include "tiles_int.h"
#include "util.h"
#include "worlds/bakes.h"
#include "worlds/catalog.h"
#include "worlds/world.h"

#define READ (REQ_M(HTTP_GET) | REQ_M(HTTP_HEAD))

/* Web Mercator's square at latitude +-85.0511...: the whole window. */
#define MERCATOR_LAT 85.051128779806589
/* Metres of Mercator ground at the equator per world metre: the earth's
 * circumference (2 pi 6378137 m) over the window's 2^25 m. */
#define MERCATOR_SCALE 1.1943285668550503

enum map_style {
	STYLE_TERRARIUM,
	STYLE_SHADED,
};

static const char *const style_names[] = {
	[STYLE_TERRARIUM] = "terrarium",
	[STYLE_SHADED] = "shaded",
};

/* The cache key of a map tile: 40 bytes, so never equal to a tile's. */
struct map_key {
	uint64_t seed;
	uint64_t version;                /* largest edit version of its chunks */
	int64_t x0, z0;                  /* world position of pixel (0, 0) */
	uint32_t preset;
	uint16_t lod;
	uint8_t style;                   /* enum map_style */
	uint8_t zero;
};
_Static_assert(sizeof(struct map_key) == 40, "map_key has no padding");
_Static_assert(sizeof(struct map_key) != sizeof(struct tile_key), "keys differ in length");

/* A cached map tile: the 200 head and the PNG, in one block of the slab. */
struct map_value {
	struct http_buf head, body;
	char etag[24];
	char data[];
};

/* A map request (struct req first). */
struct map_req {
	struct req q;
	struct tiles *t;
	struct map_key key;
	struct cache_waiter w;
	int32_t rect[4];                 /* chunks cx0, cz0, cx1, cz1 */
	struct world *world;
};

/* One chunk's edits, copied for a job. */
struct map_chunk {
	int32_t cx, cz;
	uint8_t *blob;                   /* zstd frame of its baked delta */
	size_t blob_len;
	struct edit *edits;              /* the edits after it */
	size_t nedits;
};

/* A map tile generation on the worker pool; the loop thread owns it
 * otherwise. */
struct map_job {
	uv_work_t work;
	struct tiles *t;
	struct cache_entry *flight;
	const struct preset *p;
	const struct region_source *rs;
	struct map_key key;
	struct map_chunk *chunks;
	size_t nchunks;
	struct map_value *value;
	size_t bytes;
	int err;
	uint64_t ns;
};

/* ---- answers ------------------------------------------------------------------ */

/* The 304 of a map resource with etag and cache_control. */
static int not_modified(struct req *q, const char *etag, const char *cache_control,
			const char *vary)
{
	char *head = http_req_alloc(q->http, 512);
	int n;

	if (!head)
		return ERR_NOMEM;
	n = snprintf(head, 512, "%sETag: %s\r\nCache-Control: %s\r\n%s%s%s" REQ_CORS REQ_EXPOSE,
		     http_status_line(304), etag, cache_control, vary ? "Vary: " : "",
		     vary ? vary : "", vary ? "\r\n" : "");
	req_send(q, 304, head, (size_t)n, NULL, 0, NULL, NULL);
	return 0;
}

struct sent {
	struct tiles *t;
	struct cache_entry *e;
};

static void release_sent(void *arg)
{
	struct sent *s = arg;

	cache_release(s->t->cache, s->e);
}

/* Answer from a ready entry (the reference passes to the response). */
static int map_send(struct map_req *x, struct cache_entry *e)
{
	const struct map_value *v = cache_value(e);
	struct sent *s;

	if (req_etag_matches(x->q.http->header[HTTP_H_IF_NONE_MATCH], v->etag)) {
		cache_release(x->t->cache, e);
		return not_modified(&x->q, v->etag, x->t->cache_control, NULL);
	}
	if (!(s = http_req_alloc(x->q.http, sizeof(*s)))) {
		cache_release(x->t->cache, e);
		return ERR_NOMEM;
	}
	*s = (struct sent){ x->t, e };
	req_send(&x->q, 200, v->head.base, v->head.len, v->body.base, v->body.len,
		 release_sent, s);
	return 0;
}

static void map_ready(struct cache_waiter *w, struct cache_entry *e, int err)
{
	struct map_req *x = container_of(w, struct map_req, w);
	int rc = err;

	if (err)
		x->q.detail = tiles__gen_detail(err);
	else
		rc = map_send(x, e);
	if (rc)
		req_respond_error(&x->q, req_status(rc), x->q.detail);
}

/* ---- the job -------------------------------------------------------------------- */

static void chunks_free(struct map_chunk *c, size_t n)
{
	size_t k;

	for (k = 0; c && k < n; k++) {
		free(c[k].blob);
		free(c[k].edits);
	}
	free(c);
}

/* Copy, on the loop thread, the baked delta and later edits of every
 * chunk with edits in x's rectangle into j. */
static int copy_chunks(struct map_req *x, struct map_job *j)
{
	uint64_t version;
	int32_t *cc;
	size_t n, k;
	int rc = 0;

	n = world_rect_chunks(x->world, x->rect[0], x->rect[1], x->rect[2], x->rect[3],
			      &version, NULL, 0);
	if (!n)
		return 0;
	if (!(cc = malloc(2 * n * sizeof(*cc))) ||
	    !(j->chunks = calloc(n, sizeof(*j->chunks)))) {
		free(cc);
		return ERR_NOMEM;
	}
	world_rect_chunks(x->world, x->rect[0], x->rect[1], x->rect[2], x->rect[3], &version,
			  cc, n);
	for (k = 0; !rc && k < n; k++) {
		struct map_chunk *c = &j->chunks[k];

		c->cx = cc[2 * k];
		c->cz = cc[2 * k + 1];
		j->nchunks = k + 1;
		rc = bakes_copy(x->t->bakes, x->world, (int)x->key.preset, x->key.seed, c->cx,
				c->cz, &c->blob, &c->blob_len, &c->edits, &c->nedits);
	}
	free(cc);
	return rc;
}

/* Worker: apply the job's chunks to blk, one delta at a time. */
static int apply_chunks(const struct map_job *j, int32_t *blk, int64_t x0, int64_t z0,
			uint32_t w)
{
	int chunk_log2 = preset_chunk_log2(j->p);
	size_t side = bake_side(chunk_log2), k;
	int32_t *delta = NULL;
	int rc = 0;

	for (k = 0; !rc && k < j->nchunks; k++) {
		const struct map_chunk *c = &j->chunks[k];
		struct bake_chunk bc = { c->cx, c->cz, NULL, c->edits, c->nedits };

		if (c->blob) {
			if (!delta && !(delta = malloc(side * side * sizeof(*delta)))) {
				rc = ERR_NOMEM;
				break;
			}
			rc = bakes_unpack(c->blob, c->blob_len, chunk_log2, delta);
			bc.delta = delta;
		}
		if (!rc)
			rc = maptile_apply_chunk(&bc, chunk_log2, blk, x0, z0, j->key.lod, w, w,
						 preset_quantum_um(j->p));
	}
	free(delta);
	return rc;
}

/* Worker: the pixels of j's tile into rgb (3 * 256 * 256 bytes). */
static int draw(const struct map_job *j, uint8_t *rgb)
{
	const struct map_key *k = &j->key;
	int64_t step = INT64_C(1) << k->lod;
	int b = k->style == STYLE_SHADED;     /* a border for the slopes */
	uint32_t w = MAPTILE_SIZE + 2 * (uint32_t)b;
	int64_t x0 = k->x0 - b * step, z0 = k->z0 - b * step;
	int32_t *blk = malloc((size_t)w * w * sizeof(*blk));
	int rc = blk ? 0 : ERR_NOMEM;

	if (!rc)
		rc = maptile_heights(j->p, k->seed, k->lod, x0, z0, w, w, j->rs, blk);
	if (!rc)
		rc = apply_chunks(j, blk, x0, z0, w);
	if (!rc && b)
		rc = maptile_shade(j->p, k->seed, k->lod, k->x0, k->z0, MAPTILE_SIZE,
				   MAPTILE_SIZE, blk, rgb);
	else if (!rc)
		maptile_terrarium(blk, (size_t)w * w, preset_quantum_um(j->p), rgb);
	free(blk);
	return rc;
}

/* The head of a 200 answer of type with len bytes, etag, cache_control
 * and the extra lines more (or ""). */
static int format_head(char *buf, size_t cap, const char *type, size_t len,
		       const char *etag, const char *cache_control, const char *more)
{
	return snprintf(buf, cap,
			"%sContent-Type: %s\r\nContent-Length: %zu\r\n"
			"ETag: %s\r\nCache-Control: %s\r\n%s" REQ_CORS REQ_EXPOSE,
			http_status_line(200), type, len, etag, cache_control, more);
}

/* Worker: the cached value of a PNG (taken). */
static int value_build(const struct tiles *t, uint8_t *png, size_t len,
		       struct map_value **out, size_t *bytes)
{
	char head[512], etag[24];
	struct map_value *v;
	int n;

	snprintf(etag, sizeof(etag), "\"%016llx\"", (ull)XXH3_64bits(png, len));
	n = format_head(head, sizeof(head), MAPS_PNG_TYPE, len, etag, t->cache_control, "");
	if (n < 0 || (size_t)n >= sizeof(head))
		return ERR_INVAL;
	if (!(v = slab_alloc(t->slab, sizeof(*v) + (size_t)n + len, bytes)))
		return ERR_NOMEM;
	memcpy(v->etag, etag, sizeof(etag));
	memcpy(v->data, head, (size_t)n);
	memcpy(v->data + n, png, len);
	v->head = (struct http_buf){ v->data, (size_t)n };
	v->body = (struct http_buf){ v->data + n, len };
	*out = v;
	return 0;
}

static void gen_work(uv_work_t *w)
{
	struct map_job *j = container_of(w, struct map_job, work);
	uint64_t t0 = uv_hrtime();
	uint8_t *rgb = malloc(3 * MAPTILE_SIZE * MAPTILE_SIZE), *png = NULL;
	size_t len = 0;

	j->err = rgb ? draw(j, rgb) : ERR_NOMEM;
	if (!j->err)
		j->err = pngenc_rgb(rgb, MAPTILE_SIZE, MAPTILE_SIZE,
				    j->key.style == STYLE_SHADED ? PNGENC_LEVEL_SHADED : PNGENC_LEVEL,
				    &png, &len);
	if (!j->err)
		j->err = value_build(j->t, png, len, &j->value, &j->bytes);
	free(rgb);
	free(png);
	j->ns = uv_hrtime() - t0;
}

static void gen_done(uv_work_t *w, int status)
{
	struct map_job *j = container_of(w, struct map_job, work);

	tiles__job_done(j->t, j->flight, status, j->err, j->value, j->bytes, j->ns);
	chunks_free(j->chunks, j->nchunks);
	free(j);
}

/* Queue the generation of x's tile for the flight; a full queue fails it
 * with ERR_BUSY (503), as for tiles. */
static void generate(struct map_req *x, const struct preset *p, struct cache_entry *flight)
{
	struct tiles *t = x->t;
	struct map_job *j;

	if (t->generating >= t->max_generations) {
		cache_abort(t->cache, flight, ERR_BUSY);
		return;
	}
	if (!(j = calloc(1, sizeof(*j)))) {
		cache_abort(t->cache, flight, ERR_NOMEM);
		return;
	}
	*j = (struct map_job){ .t = t, .flight = flight, .p = p,
			       .rs = regions_source(t->regions), .key = x->key };
	if (copy_chunks(x, j) || uv_queue_work(t->loop, &j->work, gen_work, gen_done) < 0) {
		chunks_free(j->chunks, j->nchunks);
		free(j);
		cache_abort(t->cache, flight, ERR_NOMEM);
		return;
	}
	t->generating++;
	metrics_generation_start(t->env->metrics);
}

/* ---- the request ----------------------------------------------------------------- */

/* Digits only, at most 10 of them, fitting uint32. */
static int parse_u32(const char *s, size_t len, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 10)
		return ERR_INVAL;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return ERR_INVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return ERR_INVAL;
	*out = (uint32_t)v;
	return 0;
}

/* Segment 4: the style, with or without suffix (".json", ".png" for
 * none: the caller says which). */
static int parse_style(struct map_req *x, const char *suffix, int *style)
{
	size_t n = x->q.seglen[4], sl = strlen(suffix), i;
	const char *s = x->q.seg[4];

	if (n > sl && !memcmp(s + n - sl, suffix, sl))
		n -= sl;
	for (i = 0; i < ARRAY_LEN(style_names); i++)
		if (strlen(style_names[i]) == n && !memcmp(style_names[i], s, n)) {
			*style = (int)i;
			return 0;
		}
	x->q.detail = "style: terrarium or shaded";
	return ERR_INVAL;
}

/* ?origin=CX,CZ (chunks; default 0,0) into *cx, *cz. */
static int parse_origin(struct map_req *x, int32_t *cx, int32_t *cz, int *present)
{
	size_t len = 0;
	int rc;
	const char *s = req_query(&x->q, "origin", &len, &rc), *comma;

	*cx = *cz = 0;
	*present = s != NULL;
	if (rc || !s)
		return rc;
	comma = memchr(s, ',', len);
	if (!comma || req_parse_i32(s, (size_t)(comma - s), cx) ||
	    req_parse_i32(comma + 1, len - (size_t)(comma - s) - 1, cz)) {
		x->q.detail = "origin: CX,CZ, two decimal int32 chunk coordinates";
		return ERR_INVAL;
	}
	return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* GET maps/{style}/{z}/{x}/{y}[.png]: one map tile. */
static int h_map_tile(struct req *q)
{
	struct map_req *x = container_of(q, struct map_req, q);
	struct maptile_block blk;
	const struct preset *p;
	struct cache_entry *e;
	uint64_t seed;
	uint32_t z, tx, ty;
	int32_t ocx, ocz;
	int64_t c, step, lo, hi;
	size_t ylen = q->seglen[7];
	int rc, pi, style, b, present;

	x->t = q->module;
	if ((rc = req_world(q, x->t->cat, &seed, &pi)) != 0 ||
	    (rc = parse_style(x, "", &style)) != 0 || (rc = parse_origin(x, &ocx, &ocz, &present)))
		return rc;
	p = catalog_at(x->t->cat, (size_t)pi);
	if (ylen > 4 && !memcmp(q->seg[7] + ylen - 4, ".png", 4))
		ylen -= 4;
	if (parse_u32(q->seg[5], q->seglen[5], &z) || parse_u32(q->seg[6], q->seglen[6], &tx) ||
	    parse_u32(q->seg[7], ylen, &ty)) {
		q->detail = "z, x, y: decimal tile coordinates";
		return ERR_INVAL;
	}
	c = INT64_C(1) << preset_chunk_log2(p);
	if (z > 64 || maptile_block(p, (int)z, tx, ty, (int64_t)ocx * c, (int64_t)ocz * c, &blk)) {
		q->detail = "no such tile: zoom outside the generator's pyramid (its TileJSON "
			    "names minzoom and maxzoom), x or y not below 2^z, or beyond the "
			    "world's int32 chunk grid";
		return 404;
	}
	x->key = (struct map_key){ seed, 0, blk.x0, blk.z0, (uint32_t)pi, (uint16_t)blk.lod,
				   (uint8_t)style, 0 };
	/* the chunks whose half-open squares hold the samples, border included */
	step = INT64_C(1) << blk.lod;
	b = style == STYLE_SHADED;
	lo = -b * step;
	hi = (MAPTILE_SIZE - 1 + b) * step;
	x->rect[0] = (int32_t)floor_div(blk.x0 + lo, c);
	x->rect[1] = (int32_t)floor_div(blk.z0 + lo, c);
	/* the grid's east edge belongs to no chunk's half-open square */
	x->rect[2] = (int32_t)(floor_div(blk.x0 + hi, c) > INT32_MAX ? INT32_MAX :
			       floor_div(blk.x0 + hi, c));
	x->rect[3] = (int32_t)(floor_div(blk.z0 + hi, c) > INT32_MAX ? INT32_MAX :
			       floor_div(blk.z0 + hi, c));
	x->world = world_map_find(x->t->worlds, pi, seed);
	world_rect_chunks(x->world, x->rect[0], x->rect[1], x->rect[2], x->rect[3],
			  &x->key.version, NULL, 0);
	x->w.done = map_ready;
	rc = cache_fetch(x->t->cache, &x->key, sizeof(x->key), uv_now(x->t->loop), &x->w, &e);
	q->xcache = rc == CACHE_HIT ? "X-Cache: hit\r\n" : "X-Cache: miss\r\n";
	if (rc == CACHE_HIT)
		return map_send(x, e);
	if (rc == CACHE_MISS)
		generate(x, p, e);
	return rc < 0 ? rc : 0;
}

/* ---- TileJSON ----------------------------------------------------------------------- */

/* Whether s (n bytes) is a plausible host[:port]: letters, digits and
 * . - : [ ] only, 1..255 of them. */
static int host_ok(const char *s, size_t n)
{
	size_t i;

	if (n < 1 || n > 255)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr(".-:[]", s[i])))
			return 0;
	return 1;
}

/* The value of parameter name= in the first element of a Forwarded
 * header (RFC 7239), quotes removed, into out; 0 when absent. */
static size_t forwarded_param(const char *fwd, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name), n;
	const char *p = fwd, *end;

	if (!fwd)
		return 0;
	end = strchr(fwd, ',');
	if (!end)
		end = fwd + strlen(fwd);
	while (p < end) {
		while (p < end && (*p == ' ' || *p == ';'))
			p++;
		if ((size_t)(end - p) > nl && !strncasecmp(p, name, nl) && p[nl] == '=') {
			const char *v = p + nl + 1, *ve;

			if (*v == '"')
				v++;
			for (ve = v; ve < end && *ve != ';' && *ve != '"'; ve++)
				;
			n = (size_t)(ve - v);
			if (n >= cap)
				return 0;
			memcpy(out, v, n);
			out[n] = '\0';
			return n;
		}
		while (p < end && *p != ';')
			p++;
	}
	return 0;
}

/* "http://host" or "https://host" of the request, into out. */
static int base_url(struct map_req *x, char *out, size_t cap)
{
	const char *fwd = x->q.http->header[HTTP_H_FORWARDED];
	const char *host = x->q.http->header[HTTP_H_HOST];
	char fhost[256], proto[16];
	size_t hl = host ? strlen(host) : 0;

	if (forwarded_param(fwd, "host", fhost, sizeof(fhost))) {
		host = fhost;
		hl = strlen(fhost);
	}
	if (!host || !host_ok(host, hl)) {
		x->q.detail = "host: a Host header (or Forwarded host=) of letters, digits, "
			      "'.', '-', ':' and brackets is needed to name the tiles";
		return ERR_INVAL;
	}
	if (!forwarded_param(fwd, "proto", proto, sizeof(proto)) || strcasecmp(proto, "https"))
		snprintf(proto, sizeof(proto), "http");
	else
		snprintf(proto, sizeof(proto), "https");
	snprintf(out, cap, "%s://%.*s", proto, (int)hl, host);
	return 0;
}

/* The "terrain" member: what a client needs beyond TileJSON. */
static cJSON *terrain_info(const struct preset *p, uint64_t seed, int style, int32_t ocx,
			   int32_t ocz)
{
	cJSON *o = cJSON_CreateObject(), *a;
	int64_t c = INT64_C(1) << preset_chunk_log2(p);
	char hex[17], dec[24];

	if (!o)
		return NULL;
	req_hex64(hex, preset_fingerprint(p));
	snprintf(dec, sizeof(dec), "%llu", (ull)seed);
	cJSON_AddStringToObject(o, "seed", dec);
	cJSON_AddStringToObject(o, "generator", preset_name(p));
	cJSON_AddStringToObject(o, "fingerprint", hex);
	cJSON_AddStringToObject(o, "style", style_names[style]);
	cJSON_AddNumberToObject(o, "chunk_size", (double)c);
	a = cJSON_AddArrayToObject(o, "origin_chunk");
	cJSON_AddItemToArray(a, cJSON_CreateNumber(ocx));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(ocz));
	a = cJSON_AddArrayToObject(o, "origin_m");
	cJSON_AddItemToArray(a, cJSON_CreateNumber((double)((int64_t)ocx * c)));
	cJSON_AddItemToArray(a, cJSON_CreateNumber((double)((int64_t)ocz * c)));
	cJSON_AddNumberToObject(o, "metres_per_pixel_at_maxzoom", 1);
	cJSON_AddNumberToObject(o, "mercator_m_per_m", MERCATOR_SCALE);
	cJSON_AddNumberToObject(o, "window_m", (double)(2 * MAPTILE_HALF));
	a = cJSON_AddArrayToObject(o, "heights_m");
	cJSON_AddItemToArray(a, cJSON_CreateNumber(preset_min_height(p)));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(preset_max_height(p)));
	if (style == STYLE_TERRARIUM)
		cJSON_AddNumberToObject(o, "terrarium_step_m", 1.0 / 256);
	cJSON_AddStringToObject(o, "docs", "docs/maps.md");
	return o;
}

/* The TileJSON document of x's world in style. */
static cJSON *tilejson(struct map_req *x, const struct preset *p, uint64_t seed, int style,
		       int32_t ocx, int32_t ocz, int origin, const char *base)
{
	cJSON *o = cJSON_CreateObject(), *a;
	int minz = maptile_min_zoom(p);
	char url[1024], name[256], org[40] = "";

	if (!o)
		return NULL;
	if (origin)
		snprintf(org, sizeof(org), "&origin=%d,%d", ocx, ocz);
	snprintf(url, sizeof(url), "%s/v1/worlds/%.*s/maps/%s/{z}/{x}/{y}.png?gen=%s%s", base,
		 (int)x->q.seglen[2], x->q.seg[2], style_names[style], preset_name(p), org);
	snprintf(name, sizeof(name), "%.*s %s %s", (int)x->q.seglen[2], x->q.seg[2],
		 preset_name(p), style_names[style]);
	cJSON_AddStringToObject(o, "tilejson", "3.0.0");
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "description", style == STYLE_TERRARIUM ?
		"Elevation in metres, Terrarium-encoded: (R * 256 + G + B / 256) - 32768" :
		"Hillshaded relief coloured by material");
	cJSON_AddStringToObject(o, "version", "1.0.0");
	cJSON_AddStringToObject(o, "attribution", "terrain chunk server");
	cJSON_AddStringToObject(o, "scheme", "xyz");
	a = cJSON_AddArrayToObject(o, "tiles");
	cJSON_AddItemToArray(a, cJSON_CreateString(url));
	/* raster tiles have no layers: the spec's text lets the key out, its
	 * JSON schema requires it; an empty array satisfies both */
	cJSON_AddArrayToObject(o, "vector_layers");
	cJSON_AddNumberToObject(o, "minzoom", minz);
	cJSON_AddNumberToObject(o, "maxzoom", MAPTILE_MAX_ZOOM);
	a = cJSON_AddArrayToObject(o, "bounds");
	cJSON_AddItemToArray(a, cJSON_CreateNumber(-180));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(-MERCATOR_LAT));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(180));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(MERCATOR_LAT));
	a = cJSON_AddArrayToObject(o, "center");
	cJSON_AddItemToArray(a, cJSON_CreateNumber(0));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(0));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(minz > 15 ? minz : 15));
	cJSON_AddStringToObject(o, "format", "png");
	cJSON_AddNumberToObject(o, "tileSize", MAPTILE_SIZE);
	if (style == STYLE_TERRARIUM)
		cJSON_AddStringToObject(o, "encoding", "terrarium");
	if (!(a = terrain_info(p, seed, style, ocx, ocz))) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddItemToObject(o, "terrain", a);
	return o;
}

/* GET maps/{style}[.json]: the TileJSON document. */
static int h_tilejson(struct req *q)
{
	struct map_req *x = container_of(q, struct map_req, q);
	const struct preset *p;
	char base[300], etag[24], head[512], *text;
	uint64_t seed;
	int32_t ocx, ocz;
	int rc, pi, style, present;
	cJSON *o;

	x->t = q->module;
	if ((rc = req_world(q, x->t->cat, &seed, &pi)) != 0 ||
	    (rc = parse_style(x, ".json", &style)) != 0 ||
	    (rc = parse_origin(x, &ocx, &ocz, &present)) != 0 ||
	    (rc = base_url(x, base, sizeof(base))) != 0)
		return rc;
	p = catalog_at(x->t->cat, (size_t)pi);
	o = tilejson(x, p, seed, style, ocx, ocz, present, base);
	text = o ? cJSON_PrintUnformatted(o) : NULL;
	cJSON_Delete(o);
	if (!text)
		return ERR_NOMEM;
	snprintf(etag, sizeof(etag), "\"%016llx\"", (ull)XXH3_64bits(text, strlen(text)));
	if (req_etag_matches(q->http->header[HTTP_H_IF_NONE_MATCH], etag)) {
		free(text);
		return not_modified(q, etag, "no-cache", "Host, Forwarded");
	}
	snprintf(head, sizeof(head), "ETag: %s\r\nCache-Control: no-cache\r\n"
		 "Vary: Host, Forwarded\r\n" REQ_EXPOSE, etag);
	req_respond_copy(q, 200, "application/json", head, text, strlen(text));
	free(text);
	return 0;
}

/* ---- the module ------------------------------------------------------------------- */

static const struct route routes[] = {
	{ "map_tilejson", { "v1", "worlds", NULL, "maps", NULL }, 5, READ, 0,
	  sizeof(struct map_req), h_tilejson, NULL },
	{ "map_tile", { "v1", "worlds", NULL, "maps", NULL, NULL, NULL, NULL }, 8, READ, 0,
	  sizeof(struct map_req), h_map_tile, NULL },
};

size_t maps_routes(const struct route **out)
{
	*out = routes;
	return ARRAY_LEN(routes);
}
