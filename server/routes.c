/*
 * routes.c - the route table, its handlers, and the one mapping from
 * ERR_* codes to HTTP statuses (see routes.h).
 *
 * A handler returns 0 when it has answered (or will answer later, from a
 * worker's completion), or an HTTP error status or negative ERR_* code with
 * x->detail set, which on_request() turns into the JSON error response.
 */
#include "routes.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <llhttp.h>
#include <uv.h>
#include <xxhash.h>

#include "bundle.h"
#include "cache.h"
#include "catalog.h"
#include "edit.h"
#include "err.h"
#include "http.h"
#include "metrics.h"
#include "objects.h"
#include "preset.h"
#include "regions.h"
#include "seed.h"
#include "sse.h"
#include "static.h"
#include "store.h"
#include "tile.h"
#include "tilegen.h"
#include "world.h"

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define MAX_SEGS 8
#define DEFAULT_GEN "default"
#define CORS "Access-Control-Allow-Origin: *\r\n"
#define EXPOSE "Access-Control-Expose-Headers: ETag, X-Cache\r\n"
#define ALLOWED_HEADERS "If-None-Match, Content-Type, Authorization, Last-Event-ID"
#define EDITS_PAGE 1000   /* GET edits: default and largest limit */
#define COPY_CHARGED 4096 /* copied bodies this large count in max_made */
#define CONN_SHARE 4      /* of max_made, one connection's at most */
#define HASHES_SIDE 64    /* GET hashes: largest rectangle side, chunks */
#define M(method) (UINT64_C(1) << (method))
#define READ (M(HTTP_GET) | M(HTTP_HEAD))

/* The one mapping from error codes to statuses. */
static const struct {
	int err, status;
} err_statuses[] = {
	{ ERR_INVAL, 400 },    { ERR_RANGE, 400 }, { ERR_PARSE, 400 },
	{ ERR_NOTFOUND, 404 }, { ERR_TOOBIG, 413 }, { ERR_BUSY, 503 },
	{ ERR_NOMEM, 503 },
};

/* The "error" token of each error status. */
#define ERROR_TOKEN_MAP(XX)                   \
	XX(400, "bad_request")                \
	XX(401, "unauthorized")               \
	XX(403, "forbidden")                  \
	XX(404, "not_found")                  \
	XX(405, "method_not_allowed")         \
	XX(408, "request_timeout")            \
	XX(409, "conflict")                   \
	XX(413, "content_too_large")          \
	XX(414, "uri_too_long")               \
	XX(415, "unsupported_media_type")     \
	XX(422, "unprocessable")              \
	XX(431, "header_fields_too_large")    \
	XX(503, "unavailable")

struct rctx;

struct route {
	const char *label;               /* metrics label */
	const char *seg[MAX_SEGS];       /* literal segments; NULL matches any */
	int nseg;
	uint64_t methods;                /* M(HTTP_...) bits, OPTIONS implied */
	int (*handler)(struct rctx *x);
};

static int h_tile(struct rctx *x);
static int h_world(struct rctx *x);
static int h_edits(struct rctx *x);
static int h_hashes(struct rctx *x);
static int h_events(struct rctx *x);
static int h_presets(struct rctx *x);
static int h_health(struct rctx *x);
static int h_metrics(struct rctx *x);
static int h_static(struct rctx *x);
static int h_batch(struct rctx *x);
static int h_objects(struct rctx *x);

static const struct route table[] = {
	{ "tile", { "v1", "worlds", NULL, "chunks", NULL, NULL, NULL }, 7, READ, h_tile },
	{ "world", { "v1", "worlds", NULL }, 3, READ, h_world },
	{ "edits", { "v1", "worlds", NULL, "edits" }, 4, READ | M(HTTP_POST), h_edits },
	{ "hashes", { "v1", "worlds", NULL, "hashes" }, 4, READ, h_hashes },
	{ "events", { "v1", "worlds", NULL, "events" }, 4, M(HTTP_GET), h_events },
	{ "presets", { "v1", "presets" }, 2, READ, h_presets },
	{ "healthz", { "healthz" }, 1, READ, h_health },
	{ "metrics", { "metrics" }, 1, READ, h_metrics },
	{ "viewer", { "" }, 1, READ, h_static },
	{ "assets", { "assets", NULL }, 2, READ, h_static },
	{ "batch", { "v1", "worlds", NULL, "chunks", NULL }, 5, READ, h_batch },
	{ "objects", { "v1", "worlds", NULL, "objects", NULL, NULL }, 6, READ, h_objects },
};
#define NROUTES (sizeof(table) / sizeof(table[0]))
#define LABEL_NONE NROUTES        /* no route matched */
#define LABEL_ERROR (NROUTES + 1) /* protocol errors */
#define ROUTE_EDITS 2             /* table index of the edits route */
#define ROUTE_METRICS 7           /* table index of /metrics */

struct routes {
	uv_loop_t *loop;
	const struct catalog *cat;
	struct cache *cache;
	struct regions *regions;         /* eroded regions, shared by workers */
	struct metrics *metrics;
	struct static_files *files;
	const struct http_server *server;
	unsigned generating;             /* generations queued or running */
	unsigned max_generations;
	size_t made, max_made;           /* bytes of bodies made per request */
	char cache_control[48];
	char *presets_json;
	size_t presets_len;
	const char *labels[NROUTES + 2];
	char oom_head[256];
	size_t oom_head_len;
	/* edits */
	struct world_map *worlds;
	struct sse *sse;
	struct store *store;             /* NULL: edits get 503 */
	int store_failed;                /* the log failed: 503 until restart */
	char *edit_token;                /* NULL: loopback clients only */
	uint8_t wire[EDIT_BATCH_MAX * EDIT_WIRE_SIZE];
	uint8_t record[STORE_BATCH_MAX];
};

/* What a cached value is: a tile or a chunk's objects in one form. */
enum value_kind {
	KIND_TILE,
	KIND_OBJECTS_JSON,
	KIND_OBJECTS_BINARY,
};

/* Content-Type and Vary of each kind. */
static const struct {
	const char *type, *vary;
} kinds[] = {
	[KIND_TILE] = { ROUTE_TILE_TYPE, "Accept-Encoding" },
	[KIND_OBJECTS_JSON] = { OBJECTS_JSON_TYPE, "Accept, Accept-Encoding" },
	[KIND_OBJECTS_BINARY] = { OBJECTS_BINARY_TYPE, "Accept, Accept-Encoding" },
};

/* The cache key of a tile or of a chunk's objects. version is the
 * chunk's edit version for a tile of heights, so an edit makes stale
 * exactly the tiles of the chunks it touched, at every LOD; for a tile
 * with the material layer and for objects, which also read samples just
 * beyond the chunk, it is the largest edit version of the chunk and its
 * 8 neighbours (world_around_version()). */
struct tile_key {
	uint64_t seed;
	uint64_t version;
	int32_t cx, cz;
	uint32_t preset;
	uint16_t lod;                    /* 0 for objects */
	uint8_t kind;                    /* enum value_kind */
	uint8_t layers;                  /* PIPELINE_LAYER_* bits of a tile */
};
_Static_assert(sizeof(struct tile_key) == 32, "tile_key has no padding");

/* A cached value: both prebuilt response heads and the zstd body, in one
 * allocation (data holds the bytes they point to). */
struct tile_value {
	uint64_t sum;                    /* content hash of the identity body */
	size_t raw_len;
	struct http_buf head_z, head_id, body_z;
	char etag_z[24], etag_id[24];
	char data[];
};

/* Per request, from the request's arena. */
struct rctx {
	struct routes *rt;
	struct http_req *req;
	unsigned route;                  /* label index */
	const char *detail;              /* for an error answer */
	const char *seg[MAX_SEGS];
	size_t seglen[MAX_SEGS];
	int nseg;
	/* tiles and objects */
	struct tile_key key;
	int zstd;
	const char *xcache;
	struct cache_waiter w;
	struct cache_entry *entry;
	uv_work_t work;
	uint8_t *raw;
	int err;
	struct world *world;
	/* edits */
	int edit_post;                   /* a POST of edits: count rejects */
	struct edit *edits;              /* parsed batch, malloc'd */
	size_t nedits;
	uint64_t first;                  /* its reserved first seq */
};

/* A generation on the worker pool; the loop thread owns it otherwise. */
struct gen_job {
	uv_work_t work;
	struct routes *rt;
	struct cache_entry *flight;
	const struct preset *p;
	const struct region_source *rs;
	struct tile_key key;
	uint64_t edit_seq;               /* the chunk's own edit version */
	struct edit *edits;              /* a private copy: those touching */
	size_t nedits;                   /* the chunk (or its neighbours,
					    needs_around()), in order */
	struct tile_value *value;
	size_t bytes;
	int err;
	uint64_t ns;
};

/* ---- answering ------------------------------------------------------------ */

static int err_to_status(int err)
{
	size_t i;

	for (i = 0; i < sizeof(err_statuses) / sizeof(err_statuses[0]); i++)
		if (err_statuses[i].err == err)
			return err_statuses[i].status;
	return 500;
}

static const char *error_token(int status)
{
	switch (status) {
#define XX(code, token) case code: return token;
	ERROR_TOKEN_MAP(XX)
#undef XX
	}
	return "internal_error";
}

static void send_response(struct rctx *x, int status, const void *head,
			  size_t hlen, const void *body, size_t blen,
			  void (*release)(void *), void *arg)
{
	struct http_response r = {
		status, { head, hlen }, { body, blen }, x->xcache, release, arg
	};

	metrics_request(x->rt->metrics, x->route, status);
	http_respond(x->req, &r);
}

static const char oom_body[] =
	"{\"error\":\"unavailable\",\"detail\":\"out of memory\"}";

/* A static 503 for when memory runs out (no allocation needed). */
static void respond_oom(struct routes *rt, struct http_req *req, unsigned label)
{
	struct http_response r = {
		503, { rt->oom_head, rt->oom_head_len }, { oom_body, sizeof(oom_body) - 1 },
		NULL, NULL, NULL
	};

	metrics_request(rt->metrics, label, 503);
	http_respond(req, &r);
}

/*
 * Bodies made for one request (an identity tile or object list, a bundle,
 * a JSON body of COPY_CHARGED bytes or more) live until they
 * are sent, which a client that does not read can put off. All of them
 * together may hold at most max_made bytes, and those of one connection at
 * most max_made / CONN_SHARE once it holds one, so that a client that
 * pipelines and does not read cannot leave the others none; its first body
 * is always allowed, so a body of any size the budget holds can be sent.
 * A request that would make more is answered 503 instead (with a small
 * body, which is never charged).
 */
static int made_take(struct rctx *x, size_t n)
{
	struct routes *rt = x->rt;
	size_t *held = http_req_held(x->req);

	if (n > rt->max_made - rt->made) {
		x->detail = "too many answers waiting for their clients to read them, retry later";
		return ERR_BUSY;
	}
	if (*held && *held + n > rt->max_made / CONN_SHARE) {
		x->detail = "too many answers waiting for this connection to read them, retry later";
		return ERR_BUSY;
	}
	rt->made += n;
	*held += n;
	metrics_made(rt->metrics, rt->made, rt->max_made);
	return 0;
}

static void made_give(struct rctx *x, size_t n)
{
	struct routes *rt = x->rt;
	size_t *held = http_req_held(x->req);

	assert(n <= rt->made && n <= *held);
	rt->made -= n;
	*held -= n;
	metrics_made(rt->metrics, rt->made, rt->max_made);
}

static void respond_error(struct rctx *x, int status, const char *detail);

/* A copied response: its bytes follow, and made is charged for them. */
struct copied {
	struct rctx *x;
	size_t made;
	max_align_t bytes[];
};

static void release_copy(void *arg)
{
	struct copied *c = arg;

	if (c->made)
		made_give(c->x, c->made);
	free(c);
}

/* Answer with a copy of body under a head built from status, type and
 * extra header lines. */
static void respond_copy(struct rctx *x, int status, const char *type,
			 const char *headers, const char *body, size_t blen)
{
	char head[1024], *buf;
	struct copied *c;
	int n;

	if (status == 204)
		n = snprintf(head, sizeof(head), "%s" CORS "%s",
			     http_status_line(status), headers ? headers : "");
	else
		n = snprintf(head, sizeof(head),
			     "%sContent-Type: %s\r\nContent-Length: %zu\r\n" CORS "%s",
			     http_status_line(status), type, blen,
			     headers ? headers : "");
	if (n < 0 || (size_t)n >= sizeof(head) ||
	    !(c = malloc(sizeof(*c) + (size_t)n + blen + 1))) {
		respond_oom(x->rt, x->req, x->route);
		return;
	}
	c->x = x;
	/* /metrics is never refused: it is how the budget is watched. */
	c->made = blen >= COPY_CHARGED && x->route != ROUTE_METRICS ? (size_t)n + blen : 0;
	if (c->made && made_take(x, c->made) != 0) {
		free(c);
		respond_error(x, 503, x->detail);
		return;
	}
	buf = (char *)c->bytes;
	memcpy(buf, head, (size_t)n);
	if (blen)
		memcpy(buf + n, body, blen);
	send_response(x, status, buf, (size_t)n, buf + n, blen, release_copy, c);
}

static void respond_json(struct rctx *x, int status, cJSON *o,
			 const char *headers)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	if (!s) {
		respond_oom(x->rt, x->req, x->route);
		return;
	}
	respond_copy(x, status, "application/json", headers, s, strlen(s));
	cJSON_free(s);
}

/* "GET, HEAD, OPTIONS" for a route's methods. */
static const char *allow_list(struct rctx *x, uint64_t methods)
{
	char *s = http_req_alloc(x->req, 256);
	size_t len = 0;
	int m;

	if (!s)
		return "GET, HEAD, OPTIONS";
	for (m = 0; m < 64; m++)
		if (methods & M(m))
			len += (size_t)snprintf(s + len, 256 - len, "%s, ",
					       llhttp_method_name((llhttp_method_t)m));
	snprintf(s + len, 256 - len, "OPTIONS");
	return s;
}

static void respond_error(struct rctx *x, int status, const char *detail)
{
	const struct route *r = x->route < NROUTES ? &table[x->route] : NULL;
	cJSON *o = cJSON_CreateObject();
	char headers[320] = "Cache-Control: no-store\r\n";

	if (status == 405 && r)
		snprintf(headers, sizeof(headers), "Cache-Control: no-store\r\nAllow: %s\r\n",
			 allow_list(x, r->methods));
	else if (status == 503)
		strcat(headers, "Retry-After: 1\r\n");
	else if (status == 401)
		strcat(headers, "WWW-Authenticate: Bearer realm=\"terrain edits\"\r\n");
	if (x->edit_post)
		metrics_edit_rejected(x->rt->metrics, status);
	if (o && (!cJSON_AddStringToObject(o, "error", error_token(status)) ||
		  !cJSON_AddStringToObject(o, "detail", detail ? detail : ""))) {
		cJSON_Delete(o);
		o = NULL;
	}
	x->xcache = NULL;
	respond_json(x, status, o, headers);
}

/* ---- parsing the request ---------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The byte at s, or the one an escape %XX there stands for, with the bytes
 * it takes in *used (s < end); -1 for a bad escape or a NUL. */
static int unescape(const char *s, const char *end, size_t *used)
{
	int hi, lo;

	if (*s != '%') {
		*used = 1;
		return *s ? (unsigned char)*s : -1;
	}
	if (end - s < 3 || (hi = hexval(s[1])) < 0 || (lo = hexval(s[2])) < 0)
		return -1;
	*used = 3;
	return hi * 16 + lo ? hi * 16 + lo : -1;
}

/* Percent-decode s (len bytes) into out (room for len + 1); rejects bad
 * escapes and NUL. Returns the decoded length or -1. */
static long decode(const char *s, size_t len, char *out)
{
	size_t i = 0, used, n = 0;

	while (i < len) {
		int c = unescape(s + i, s + len, &used);

		if (c < 0)
			return -1;
		out[n++] = (char)c;
		i += used;
	}
	out[n] = '\0';
	return (long)n;
}

/* Split and decode the path into x->seg, in one pass over its bytes. */
static int split_path(struct rctx *x)
{
	const char *p = x->req->path, *end = p + x->req->path_len;
	char *o;
	int n = 0;

	x->nseg = 0;
	if (*p != '/')
		return 0; /* "*" or garbage: matches nothing */
	o = http_req_alloc(x->req, x->req->path_len + 1);
	if (!o)
		return ERR_NOMEM;
	while (p < end) { /* at a '/' */
		char *seg = o;

		if (n == MAX_SEGS) {
			x->nseg = n + 1; /* too many: matches nothing */
			return 0;
		}
		for (p++; p < end && *p != '/'; ) {
			size_t used;
			int c = unescape(p, end, &used);

			if (c < 0) {
				x->detail = "bad percent-encoding or NUL in path";
				return ERR_INVAL;
			}
			*o++ = (char)c;
			p += used;
		}
		*o++ = '\0';
		x->seg[n] = seg;
		x->seglen[n++] = (size_t)(o - 1 - seg);
	}
	x->nseg = n;
	return 0;
}

/* The decoded value of query parameter name, or NULL (*rc set on error). */
static const char *query_param(struct rctx *x, const char *name, size_t *len,
			       int *rc)
{
	const char *q = x->req->query, *end;
	size_t nlen;

	*rc = 0;
	if (!q)
		return NULL;
	nlen = strlen(name);
	end = q + x->req->query_len;
	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *stop = amp ? amp : end;

		if ((size_t)(stop - q) > nlen && !memcmp(q, name, nlen) && q[nlen] == '=') {
			char *v = http_req_alloc(x->req, (size_t)(stop - q));
			long n;

			if (!v) {
				*rc = ERR_NOMEM;
				return NULL;
			}
			n = decode(q + nlen + 1, (size_t)(stop - q) - nlen - 1, v);
			if (n < 0) {
				x->detail = "bad percent-encoding or NUL in query";
				*rc = ERR_INVAL;
				return NULL;
			}
			*len = (size_t)n;
			return v;
		}
		q = stop + 1;
	}
	return NULL;
}

/* Whether literal lit equals segment seg (n bytes, no NUL in them). */
static int seg_is(const char *lit, const char *seg, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lit[i] != seg[i])   /* stops at lit's NUL too */
			return 0;
	return lit[n] == '\0';
}

static const struct route *match(struct rctx *x, unsigned *index)
{
	unsigned i;
	int s;

	for (i = 0; i < NROUTES; i++) {
		const struct route *r = &table[i];

		if (r->nseg != x->nseg)
			continue;
		for (s = 0; s < r->nseg; s++)
			if (r->seg[s] && !seg_is(r->seg[s], x->seg[s], x->seglen[s]))
				break;
		if (s == r->nseg) {
			*index = i;
			return r;
		}
	}
	return NULL;
}

/* Seed (segment 2) and generator (?gen=) of a world request. */
static int world_of(struct rctx *x, uint64_t *seed, int *preset)
{
	const char *gen;
	size_t glen = strlen(DEFAULT_GEN);
	int rc = seed_parse(x->seg[2], x->seglen[2], seed);

	if (rc) {
		x->detail = rc == ERR_RANGE ? "seed: decimal seed above 2^64-1" :
			    "seed: not a decimal or [A-Za-z0-9_-]{1,64} text seed";
		return rc;
	}
	gen = query_param(x, "gen", &glen, &rc);
	if (rc)
		return rc;
	*preset = catalog_find(x->rt->cat, gen ? gen : DEFAULT_GEN, glen);
	if (*preset < 0) {
		x->detail = "unknown generator";
		return ERR_NOTFOUND;
	}
	return 0;
}

/* ---- content negotiation and validators ------------------------------------- */

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A qvalue ("0", "0.5", "1.000") in thousandths, or -1. */
static int parse_q(const char *p, const char *end)
{
	int v, scale = 100;

	if (p == end || (*p != '0' && *p != '1'))
		return -1;
	v = (*p++ - '0') * 1000;
	if (p < end && *p == '.') {
		for (p++; p < end && *p >= '0' && *p <= '9' && scale; p++, scale /= 10)
			v += (*p - '0') * scale;
	}
	return p == end && v <= 1000 ? v : -1;
}

/* The q of one Accept-Encoding element's parameters (1000 without q). */
static int element_q(const char *p, const char *end)
{
	while (p < end) {
		const char *semi;

		p = skip_ows(p);
		if (p < end && *p == ';')
			p = skip_ows(p + 1);
		semi = memchr(p, ';', (size_t)(end - p));
		if (!semi)
			semi = end;
		if (semi - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
			const char *e = semi;

			while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			return parse_q(p + 2, e);
		}
		p = semi;
	}
	return 1000;
}

/*
 * The q (thousandths) that an Accept or Accept-Encoding list gives each of
 * the n names into q[] (any case; the last valid mention wins), or -1 for
 * a name not listed. One pass over the list for all the names.
 */
static void list_qs(const char *list, const char *const *names, int n, int *q)
{
	int k;

	for (k = 0; k < n; k++)
		q[k] = -1;
	while (*list) {
		const char *end = strchr(list, ','), *tok, *tend;
		int v = -2;

		if (!end)
			end = list + strlen(list);
		tok = skip_ows(list);
		for (tend = tok; tend < end && *tend != ';' && *tend != ' ' && *tend != '\t'; tend++)
			;
		for (k = 0; k < n; k++) {
			size_t len = strlen(names[k]);

			if ((size_t)(tend - tok) != len || strncasecmp(tok, names[k], len))
				continue;
			if (v == -2)
				v = element_q(tend, end);
			if (v >= 0)
				q[k] = v;
		}
		list = *end ? end + 1 : end;
	}
}

static int list_q(const char *list, const char *name)
{
	int q;

	list_qs(list, &name, 1, &q);
	return q;
}

/* Whether Accept-Encoding ae lets us send zstd (see routes.h). */
static int accepts_zstd(const char *ae)
{
	static const char *const names[3] = { "zstd", "*", "identity" };
	int q[3], qz, qstar, qid;

	if (!ae)
		return 0;
	list_qs(ae, names, 3, q);
	qz = q[0];
	qstar = q[1];
	qid = q[2];
	if (qz < 0)
		qz = qstar > 0 ? qstar : 0;
	return qz > 0 && (qid < 0 || qz >= qid);
}

/* Whether Accept asks for the binary objects form: named with a q above
 * 0 and not below JSON's (see routes.h). */
static int wants_binary(const char *accept)
{
	int qb;

	if (!accept)
		return 0;
	qb = list_q(accept, OBJECTS_BINARY_TYPE);
	return qb > 0 && qb >= list_q(accept, OBJECTS_JSON_TYPE);
}

/* Whether If-None-Match inm matches etag (weak comparison). */
static int etag_matches(const char *inm, const char *etag)
{
	const char *p = inm;
	size_t len;

	if (!p)
		return 0;
	len = strlen(etag);
	for (;;) {
		const char *q;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			return 0;
		if (*p == '*')
			return 1;
		if (p[0] == 'W' && p[1] == '/')
			p += 2;
		if (*p != '"' || !(q = strchr(p + 1, '"')))
			return 0;
		if ((size_t)(q - p + 1) == len && !memcmp(p, etag, len))
			return 1;
		p = q + 1;
	}
}

/* ---- tiles and objects ---------------------------------------------------------- */

static void release_entry(void *arg)
{
	struct rctx *x = arg;

	cache_release(x->rt->cache, x->entry);
}

static void release_raw(void *arg)
{
	struct rctx *x = arg;
	const struct tile_value *v = cache_value(x->entry);

	made_give(x, v->raw_len);
	free(x->raw);
	cache_release(x->rt->cache, x->entry);
}

/* Answer 304 for etag. */
static int not_modified(struct rctx *x, const char *etag, const char *vary)
{
	char *head = http_req_alloc(x->req, 512);
	int n;

	if (!head)
		return ERR_NOMEM;
	n = snprintf(head, 512, "%sETag: %s\r\nCache-Control: %s\r\n"
		     "Vary: %s\r\n" CORS EXPOSE,
		     http_status_line(304), etag, x->rt->cache_control, vary);
	send_response(x, 304, head, (size_t)n, NULL, 0, NULL, NULL);
	return 0;
}

static void inflate_work(uv_work_t *w)
{
	struct rctx *x = container_of(w, struct rctx, work);
	const struct tile_value *v = cache_value(x->entry);

	x->err = tilegen_decompress(v->body_z.base, v->body_z.len, v->raw_len,
				    &x->raw);
}

static void inflate_done(uv_work_t *w, int status)
{
	struct rctx *x = container_of(w, struct rctx, work);
	const struct tile_value *v = cache_value(x->entry);

	if (status < 0 || x->err) {
		made_give(x, v->raw_len);
		cache_release(x->rt->cache, x->entry);
		x->detail = "tile decompression failed";
		respond_error(x, 500, x->detail);
		return;
	}
	send_response(x, 200, v->head_id.base, v->head_id.len, x->raw,
		      v->raw_len, release_raw, x);
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

/* Answer from a ready entry (the reference passes to the response). */
static int tile_send(struct rctx *x, struct cache_entry *e)
{
	const struct tile_value *v = cache_value(e);
	const char *etag = x->zstd ? v->etag_z : v->etag_id;
	int rc;

	x->entry = e;
	if (etag_matches(x->req->header[HTTP_H_IF_NONE_MATCH], etag)) {
		cache_release(x->rt->cache, e);
		return not_modified(x, etag, kinds[x->key.kind].vary);
	}
	if (x->zstd) {
		prefetch_response(&v->head_z, &v->body_z);
		send_response(x, 200, v->head_z.base, v->head_z.len,
			      v->body_z.base, v->body_z.len, release_entry, x);
	} else if (x->req->method == HTTP_HEAD) {
		send_response(x, 200, v->head_id.base, v->head_id.len, NULL, 0,
			      release_entry, x);
	} else if ((rc = made_take(x, v->raw_len)) != 0) {
		cache_release(x->rt->cache, e);
		return rc;
	} else if ((rc = uv_queue_work(x->rt->loop, &x->work, inflate_work,
				       inflate_done)) < 0) {
		made_give(x, v->raw_len);
		cache_release(x->rt->cache, e);
		x->detail = "cannot queue work";
		return ERR_BUSY;
	}
	return 0;
}

/* The detail of a failed generation. */
static const char *gen_detail(int err)
{
	return err == ERR_BUSY ? "too many tiles being generated, retry later" :
	       "tile generation failed";
}

/* Single flight finished: answer from e, or with err. */
static void tile_ready(struct cache_waiter *w, struct cache_entry *e, int err)
{
	struct rctx *x = container_of(w, struct rctx, w);
	int rc = err;

	if (err)
		x->detail = gen_detail(err);
	else
		rc = tile_send(x, e);
	if (rc)
		respond_error(x, rc < 0 ? err_to_status(rc) : rc, x->detail);
}

static int format_head(char *buf, size_t cap, const struct routes *rt,
		       const char *type, const char *vary, size_t len,
		       const char *etag, int zstd)
{
	return snprintf(buf, cap,
			"%sContent-Type: %s\r\n"
			"Content-Length: %zu\r\n%s"
			"ETag: %s\r\nCache-Control: %s\r\n"
			"Vary: %s\r\n" CORS EXPOSE,
			http_status_line(200), type, len,
			zstd ? "Content-Encoding: zstd\r\n" : "", etag,
			rt->cache_control, vary);
}

/* The strong tags of content hash sum: "<hex>" and "<hex>-z". */
static void etags(uint64_t sum, char id[24], char z[24])
{
	snprintf(id, 24, "\"%016llx\"", (unsigned long long)sum);
	snprintf(z, 24, "\"%016llx-z\"", (unsigned long long)sum);
}

/* Build the cached value of a kind from its identity length, content hash
 * and zstd body. */
static int value_build(const struct routes *rt, int kind, uint64_t sum, size_t len,
		       const uint8_t *z, size_t zlen, struct tile_value **out,
		       size_t *bytes)
{
	char hz[512], hid[512], etag_z[24], etag_id[24];
	struct tile_value *v;
	int nz, nid;

	etags(sum, etag_id, etag_z);
	nz = format_head(hz, sizeof(hz), rt, kinds[kind].type, kinds[kind].vary, zlen,
			 etag_z, 1);
	nid = format_head(hid, sizeof(hid), rt, kinds[kind].type, kinds[kind].vary, len,
			  etag_id, 0);
	if (nz < 0 || nid < 0 || (size_t)nz >= sizeof(hz) || (size_t)nid >= sizeof(hid))
		return ERR_INVAL;
	*bytes = sizeof(*v) + (size_t)nz + (size_t)nid + zlen;
	v = malloc(*bytes);
	if (!v)
		return ERR_NOMEM;
	v->sum = sum;
	v->raw_len = len;
	memcpy(v->etag_z, etag_z, sizeof(etag_z));
	memcpy(v->etag_id, etag_id, sizeof(etag_id));
	memcpy(v->data, hz, (size_t)nz);
	memcpy(v->data + nz, hid, (size_t)nid);
	memcpy(v->data + nz + nid, z, zlen);
	v->head_z = (struct http_buf){ v->data, (size_t)nz };
	v->head_id = (struct http_buf){ v->data + nz, (size_t)nid };
	v->body_z = (struct http_buf){ v->data + nz + nid, zlen };
	*out = v;
	return 0;
}

/* The identity body of j's key: a tile, or the chunk's objects. */
static int gen_body(const struct gen_job *j, uint8_t **raw, size_t *len)
{
	const struct tile_key *k = &j->key;

	if (k->kind == KIND_TILE)
		return tilegen_encode(j->p, k->seed, k->lod, k->cx, k->cz, j->rs, j->edits,
				      j->nedits, j->edit_seq, k->layers, raw, len);
	return objects_encode(j->p, k->seed, k->cx, k->cz, j->rs, j->edits, j->nedits,
			      j->edit_seq, k->kind == KIND_OBJECTS_BINARY ?
			      OBJECTS_BINARY : OBJECTS_JSON, raw, len);
}

/* Worker thread: generate, encode, compress, build the value. */
static void gen_work(uv_work_t *w)
{
	struct gen_job *j = container_of(w, struct gen_job, work);
	uint64_t t0 = uv_hrtime(), sum;
	uint8_t *raw = NULL, *z = NULL;
	size_t len, zlen;

	j->err = gen_body(j, &raw, &len);
	if (!j->err)
		j->err = tilegen_compress(raw, len, &z, &zlen);
	if (!j->err) {
		sum = j->key.kind == KIND_TILE ? tile_checksum(raw) : XXH3_64bits(raw, len);
		j->err = value_build(j->rt, j->key.kind, sum, len, z, zlen, &j->value,
				     &j->bytes);
	}
	free(raw);
	free(z);
	j->ns = uv_hrtime() - t0;
}

static void gen_done(uv_work_t *w, int status)
{
	struct gen_job *j = container_of(w, struct gen_job, work);
	struct routes *rt = j->rt;

	if (status < 0 && !j->err)
		j->err = ERR_BUSY;
	rt->generating--;
	metrics_generation_end(rt->metrics, (double)j->ns / 1e9, j->err);
	if (j->err)
		cache_abort(rt->cache, j->flight, j->err);
	else
		cache_complete(rt->cache, j->flight, j->value, j->bytes,
			       uv_now(rt->loop));
	free(j->edits);
	free(j);
}

/* Whether key's value reads the heights beyond its chunk (materials need
 * each sample's neighbours), so that its neighbours' edits matter too. */
static int needs_around(const struct tile_key *key)
{
	return key->kind != KIND_TILE || key->layers != 0;
}

/* Copy the edits key's value depends on into j (w may be NULL). */
static int job_edits(struct gen_job *j, const struct world *w)
{
	const struct tile_key *k = &j->key;
	struct world_chunk ch;

	if (!w)
		return 0;
	world_chunk(w, k->cx, k->cz, &ch);
	j->edit_seq = ch.version;
	return needs_around(k) ? world_around_edits(w, k->cx, k->cz, &j->edits, &j->nedits) :
	       world_chunk_edits(w, k->cx, k->cz, &j->edits, &j->nedits);
}

/* Queue the generation of key's value (world w's edits, w may be NULL)
 * for the flight; a full queue fails it with ERR_BUSY (503), which bounds
 * the memory waiting requests hold. */
static void generate(struct routes *rt, const struct tile_key *key,
		     const struct preset *p, const struct world *w,
		     struct cache_entry *flight)
{
	struct gen_job *j;

	if (rt->generating >= rt->max_generations) {
		cache_abort(rt->cache, flight, ERR_BUSY);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		cache_abort(rt->cache, flight, ERR_NOMEM);
		return;
	}
	*j = (struct gen_job){ .rt = rt, .flight = flight, .p = p,
			       .rs = regions_source(rt->regions), .key = *key };
	if (job_edits(j, w)) {
		free(j);
		cache_abort(rt->cache, flight, ERR_NOMEM);
		return;
	}
	if (uv_queue_work(rt->loop, &j->work, gen_work, gen_done) < 0) {
		free(j->edits);
		free(j);
		cache_abort(rt->cache, flight, ERR_BUSY);
		return;
	}
	rt->generating++;
	metrics_generation_start(rt->metrics);
}

/* The key of a value of chunk (cx, cz) of world (pi, seed), whose edit
 * state is w (NULL: unedited). */
static struct tile_key key_of(const struct world *w, uint64_t seed, int pi,
			      int32_t cx, int32_t cz, int lod, int kind,
			      unsigned layers)
{
	struct tile_key k = { seed, 0, cx, cz, (uint32_t)pi, (uint16_t)lod, (uint8_t)kind,
			      (uint8_t)layers };
	struct world_chunk ch;

	if (w && needs_around(&k)) {
		k.version = world_around_version(w, cx, cz);
	} else if (w) {
		world_chunk(w, cx, cz, &ch);
		k.version = ch.version;
	}
	return k;
}

/* Answer x with the value of x->key: from the cache, after the flight
 * already running, or after generating it. */
static int serve_value(struct rctx *x, const struct preset *p)
{
	struct cache_entry *e;
	int rc;

	x->zstd = accepts_zstd(x->req->header[HTTP_H_ACCEPT_ENCODING]);
	x->w.done = tile_ready;
	rc = cache_fetch(x->rt->cache, &x->key, sizeof(x->key),
			 uv_now(x->rt->loop), &x->w, &e);
	x->xcache = rc == CACHE_HIT ? "X-Cache: hit\r\n" : "X-Cache: miss\r\n";
	if (rc == CACHE_HIT)
		return tile_send(x, e);
	if (rc == CACHE_MISS)
		generate(x->rt, &x->key, p, x->world, e);
	return rc < 0 ? rc : 0;
}

/* Path segment i as an int32 coordinate; detail names it. */
static int parse_coord(struct rctx *x, int i, const char *name, int32_t *v)
{
	int rc = tilegen_parse_i32(x->seg[i], x->seglen[i], v);

	if (rc)
		x->detail = !strcmp(name, "cx") ? "cx: not a decimal int32" :
			    "cz: not a decimal int32";
	return rc;
}

/* The LOD (segment 4) for preset p. */
static int parse_lod(struct rctx *x, const struct preset *p, int *lod)
{
	int rc = tilegen_parse_lod(p, x->seg[4], x->seglen[4], lod);

	if (rc)
		x->detail = "lod: not a decimal in 0..max_lod of the generator";
	return rc;
}

/* ?layers= (default "height") into PIPELINE_LAYER_* bits. */
static int parse_layers(struct rctx *x, unsigned *layers)
{
	size_t len = 0;
	int rc;
	const char *s = query_param(x, "layers", &len, &rc);
	char *msg;

	*layers = 0;
	if (rc || !s || tilegen_parse_layers(s, len, layers) == 0)
		return rc;
	if (!(msg = http_req_alloc(x->req, 160)))
		return ERR_NOMEM;
	snprintf(msg, 160, "layers: unknown layer list \"%.64s\"; use height or "
		 "height,material", s);
	x->detail = msg;
	return ERR_INVAL;
}

static int h_tile(struct rctx *x)
{
	const struct preset *p;
	uint64_t seed;
	int32_t cx, cz;
	unsigned layers;
	int rc, pi, lod;

	if ((rc = world_of(x, &seed, &pi)) != 0)
		return rc;
	p = catalog_at(x->rt->cat, (size_t)pi);
	if ((rc = parse_lod(x, p, &lod)) != 0 || (rc = parse_coord(x, 5, "cx", &cx)) != 0 ||
	    (rc = parse_coord(x, 6, "cz", &cz)) != 0 || (rc = parse_layers(x, &layers)) != 0)
		return rc;
	x->world = world_map_find(x->rt->worlds, pi, seed);
	x->key = key_of(x->world, seed, pi, cx, cz, lod, KIND_TILE, layers);
	return serve_value(x, p);
}

/* GET objects/{cx}/{cz}: the chunk's objects, JSON or binary by Accept. */
static int h_objects(struct rctx *x)
{
	uint64_t seed;
	int32_t cx, cz;
	int rc, pi, kind;

	if ((rc = world_of(x, &seed, &pi)) != 0 || (rc = parse_coord(x, 4, "cx", &cx)) != 0 ||
	    (rc = parse_coord(x, 5, "cz", &cz)) != 0)
		return rc;
	kind = wants_binary(x->req->header[HTTP_H_ACCEPT]) ? KIND_OBJECTS_BINARY :
	       KIND_OBJECTS_JSON;
	x->world = world_map_find(x->rt->worlds, pi, seed);
	x->key = key_of(x->world, seed, pi, cx, cz, 0, kind, 0);
	return serve_value(x, catalog_at(x->rt->cat, (size_t)pi));
}

/* ---- batches --------------------------------------------------------------------- */

static int query_i32(struct rctx *x, const char *name, int32_t *v);

/* One tile of a batch. */
struct member {
	struct cache_waiter w;
	struct batch *b;
	struct tile_key key;
	struct cache_entry *e;           /* referenced once ready */
};

/* A batch request, in its arena: its tiles are fetched like single tiles
 * (single flight, generated in parallel on the workers); once all are
 * ready, a worker assembles the bundle and compresses it when accepted. */
struct batch {
	struct rctx *x;
	uv_work_t work;
	size_t n, pending;               /* members; fetches not settled */
	size_t hits;
	int err;
	struct bundle_entry *ent;        /* the index, laid out */
	size_t len;                      /* the bundle's size */
	uint8_t *body;                   /* the response body, malloc'd */
	size_t body_len;
	char etag[24];
	struct member m[];
};

static void batch_release(struct batch *b)
{
	size_t k;

	for (k = 0; k < b->n; k++)
		cache_release(b->x->rt->cache, b->m[k].e);
}

static void release_body(void *arg)
{
	struct batch *b = arg;

	made_give(b->x, b->len);
	free(b->body);
}

/* Worker: the identity bundle, then its zstd frame when accepted. */
static void bundle_work(uv_work_t *w)
{
	struct batch *b = container_of(w, struct batch, work);
	uint8_t *raw = malloc(b->len);
	size_t k;
	int rc = raw ? 0 : ERR_NOMEM;

	if (raw)
		bundle_write_index(b->ent, b->n, raw);
	for (k = 0; !rc && k < b->n; k++) {
		const struct tile_value *v = cache_value(b->m[k].e);

		rc = tilegen_decompress_to(v->body_z.base, v->body_z.len,
					   raw + b->ent[k].offset, v->raw_len);
	}
	if (!rc && b->x->zstd) {
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
	struct batch *b = container_of(w, struct batch, work);
	struct rctx *x = b->x;
	char *head;
	int n;

	batch_release(b);
	if (status < 0 || x->err) {
		made_give(x, b->len);
		free(b->body);
		respond_error(x, 500, "bundle assembly failed");
		return;
	}
	if (!(head = http_req_alloc(x->req, 512))) {
		made_give(x, b->len);
		free(b->body);
		respond_oom(x->rt, x->req, x->route);
		return;
	}
	n = format_head(head, 512, x->rt, ROUTE_BUNDLE_TYPE, "Accept-Encoding",
			b->body_len, b->etag, x->zstd);
	send_response(x, 200, head, (size_t)n, b->body, b->body_len, release_body, b);
}

/* Every member is ready or failed: answer 304, or assemble the bundle. */
static void batch_ready(struct batch *b)
{
	struct rctx *x = b->x;
	uint8_t sums[8 * ROUTE_BATCH_MAX];
	char id[24], z[24];
	size_t k;
	int rc;

	x->xcache = b->hits == b->n ? "X-Cache: hit\r\n" : "X-Cache: miss\r\n";
	if (b->err) {
		batch_release(b);
		respond_error(x, err_to_status(b->err), gen_detail(b->err));
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
	etags(XXH3_64bits(sums, 8 * b->n), id, z);
	memcpy(b->etag, x->zstd ? z : id, sizeof(b->etag));
	if (etag_matches(x->req->header[HTTP_H_IF_NONE_MATCH], b->etag)) {
		batch_release(b);
		if ((rc = not_modified(x, b->etag, "Accept-Encoding")) != 0)
			respond_oom(x->rt, x->req, x->route);
		return;
	}
	x->detail = "cannot assemble the bundle";
	rc = bundle_layout(b->ent, b->n, &b->len);
	if (!rc && (rc = made_take(x, b->len)) == 0 &&
	    uv_queue_work(x->rt->loop, &b->work, bundle_work, bundle_done) < 0) {
		made_give(x, b->len);
		rc = ERR_BUSY;
	}
	if (rc) {
		batch_release(b);
		respond_error(x, err_to_status(rc), x->detail);
	}
}

/* One fetch of the batch has settled (err: why it failed). */
static void batch_settle(struct batch *b, int err)
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

static void member_fetch(struct batch *b, struct member *m, const struct preset *p)
{
	struct routes *rt = b->x->rt;
	struct cache_entry *e;
	int rc;

	m->b = b;
	m->w.done = member_ready;
	b->pending++;
	rc = cache_fetch(rt->cache, &m->key, sizeof(m->key), uv_now(rt->loop), &m->w, &e);
	if (rc == CACHE_HIT) {
		m->e = e;
		b->hits++;
		batch_settle(b, 0);
	} else if (rc == CACHE_MISS) {
		generate(rt, &m->key, p, b->x->world, e);
	} else if (rc < 0) {
		batch_settle(b, rc);
	}
}

/* The rectangle ?cx0=&cz0=&cx1=&cz1= of a batch, at most ROUTE_BATCH_MAX
 * tiles; *n is its tile count. */
static int parse_rect(struct rctx *x, int32_t r[4], size_t *n)
{
	static const char *const names[4] = { "cx0", "cz0", "cx1", "cz1" };
	int64_t w, h;
	int i, rc;

	for (i = 0; i < 4; i++)
		if ((rc = query_i32(x, names[i], &r[i])) != 0)
			return rc;
	w = (int64_t)r[2] - r[0] + 1;
	h = (int64_t)r[3] - r[1] + 1;
	if (w < 1 || h < 1 || w > ROUTE_BATCH_MAX || h > ROUTE_BATCH_MAX ||
	    w * h > ROUTE_BATCH_MAX) {
		x->detail = w < 1 || h < 1 ? "rectangle: need cx0 <= cx1 and cz0 <= cz1" :
			    "rectangle: at most 64 tiles (cx0..cx1 x cz0..cz1, inclusive)";
		return ERR_INVAL;
	}
	*n = (size_t)(w * h);
	return 0;
}

/* GET chunks/{lod}?cx0=&cz0=&cx1=&cz1=: a bundle of the rectangle's tiles. */
static int h_batch(struct rctx *x)
{
	const struct preset *p;
	struct batch *b;
	uint64_t seed;
	int32_t r[4];
	int64_t cx, cz;
	unsigned layers;
	size_t n, k = 0;
	int rc, pi, lod;

	if ((rc = world_of(x, &seed, &pi)) != 0)
		return rc;
	p = catalog_at(x->rt->cat, (size_t)pi);
	if ((rc = parse_lod(x, p, &lod)) != 0 || (rc = parse_layers(x, &layers)) != 0 ||
	    (rc = parse_rect(x, r, &n)) != 0)
		return rc;
	b = http_req_alloc(x->req, sizeof(*b) + n * sizeof(b->m[0]));
	if (!b)
		return ERR_NOMEM;
	memset(b, 0, sizeof(*b) + n * sizeof(b->m[0]));
	if (!(b->ent = http_req_alloc(x->req, n * sizeof(*b->ent))))
		return ERR_NOMEM;
	b->x = x;
	b->n = n;
	b->pending = 1; /* held until every fetch is started */
	x->zstd = accepts_zstd(x->req->header[HTTP_H_ACCEPT_ENCODING]);
	x->world = world_map_find(x->rt->worlds, pi, seed);
	for (cz = r[1]; cz <= r[3]; cz++)
		for (cx = r[0]; cx <= r[2]; cx++, k++) {
			b->m[k].key = key_of(x->world, seed, pi, (int32_t)cx, (int32_t)cz, lod,
					     KIND_TILE, layers);
			member_fetch(b, &b->m[k], p);
		}
	batch_settle(b, 0);
	return 0;
}

/* ---- the other handlers --------------------------------------------------------- */

static void hex64(char out[17], uint64_t v)
{
	snprintf(out, 17, "%016llx", (unsigned long long)v);
}

/* The sequence number and hash of world (pi, seed), edited or not. */
static uint64_t world_state(const struct routes *rt, int pi, uint64_t seed,
			    uint64_t *hash)
{
	const struct world *w = world_map_find(rt->worlds, pi, seed);

	*hash = w ? world_hash(w) :
		edit_hash_start(preset_fingerprint(catalog_at(rt->cat, (size_t)pi)), seed);
	return w ? world_seq(w) : 0;
}

/* name with everything but unreserved characters percent-encoded. */
static void url_encode(char *out, size_t cap, const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *name && n + 4 < cap; name++) {
		unsigned char c = (unsigned char)*name;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c)) {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = '\0';
}

/* The fields a world and a preset listing share. */
static void add_preset_fields(cJSON *o, const struct preset *p)
{
	cJSON *h;
	char fp[17];

	hex64(fp, preset_fingerprint(p));
	cJSON_AddStringToObject(o, "fingerprint", fp);
	cJSON_AddNumberToObject(o, "algorithm_version", PRESET_ALGO_VERSION);
	cJSON_AddNumberToObject(o, "chunk_size", 1 << preset_chunk_log2(p));
	cJSON_AddNumberToObject(o, "min_lod", 0);
	cJSON_AddNumberToObject(o, "max_lod", preset_max_lod(p));
	cJSON_AddNumberToObject(o, "quantum_um", preset_quantum_um(p));
	h = cJSON_AddObjectToObject(o, "height");
	if (h) {
		cJSON_AddNumberToObject(h, "min", preset_min_height(p));
		cJSON_AddNumberToObject(h, "max", preset_max_height(p));
	}
	cJSON_AddNumberToObject(o, "sea_level", preset_sea_level(p));
}

static int h_world(struct rctx *x)
{
	const struct preset *p;
	char seed_s[24], hash[17], gen[256], url[400];
	cJSON *o, *tiles;
	uint64_t seed, seq, h;
	int rc, pi;

	if ((rc = world_of(x, &seed, &pi)) != 0)
		return rc;
	p = catalog_at(x->rt->cat, (size_t)pi);
	snprintf(seed_s, sizeof(seed_s), "%llu", (unsigned long long)seed);
	seq = world_state(x->rt, pi, seed, &h);
	hex64(hash, h);
	url_encode(gen, sizeof(gen), preset_name(p));
	snprintf(url, sizeof(url), "/v1/worlds/%s/chunks/{lod}/{cx}/{cz}?gen=%s",
		 seed_s, gen);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "seed", seed_s);
	cJSON_AddStringToObject(o, "generator", preset_name(p));
	cJSON_AddStringToObject(o, "description", preset_description(p) ? preset_description(p) : "");
	add_preset_fields(o, p);
	cJSON_AddNumberToObject(o, "tile_format_version", TILE_VERSION);
	cJSON_AddStringToObject(o, "content_type", ROUTE_TILE_TYPE);
	tiles = cJSON_AddArrayToObject(o, "tiles");
	if (tiles)
		cJSON_AddItemToArray(tiles, cJSON_CreateString(url));
	cJSON_AddNumberToObject(o, "edit_seq", (double)seq);
	cJSON_AddStringToObject(o, "world_hash", hash);
	respond_json(x, 200, o, "Cache-Control: no-cache\r\n");
	return 0;
}

/* ---- edits ------------------------------------------------------------------------ */

/* Decimal digits fitting uint64 (at most 20). Returns 0 or ERR_INVAL. */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 20)
		return ERR_INVAL;
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return ERR_INVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* The uint64 query parameter name into *v (left alone when absent);
 * *present says whether it was there. */
static int query_u64(struct rctx *x, const char *name, uint64_t *v,
		     int *present, const char *detail)
{
	size_t len = 0;
	int rc;
	const char *s = query_param(x, name, &len, &rc);

	if (present)
		*present = s != NULL;
	if (rc || !s)
		return rc;
	if (parse_u64(s, len, v)) {
		x->detail = detail;
		return ERR_INVAL;
	}
	return 0;
}

/* Edits need the bearer token when one is set, else a loopback client. */
static int authorise(struct rctx *x)
{
	struct sockaddr_storage ss;

	if (x->rt->edit_token) {
		if (http_bearer_matches(x->req->header[HTTP_H_AUTHORIZATION],
					x->rt->edit_token))
			return 0;
		x->detail = x->req->header[HTTP_H_AUTHORIZATION] ?
			    "authorization: wrong bearer token" :
			    "authorization: bearer token required";
		return 401;
	}
	if (http_req_peer(x->req, &ss) == 0 &&
	    http_peer_is_loopback((const struct sockaddr *)&ss))
		return 0;
	x->detail = "edits are open to loopback clients only (no edit token is set)";
	return 403;
}

/* Whether Content-Type ct is application/json (parameters allowed). */
static int is_json(const char *ct)
{
	if (!ct)
		return 0;
	ct = skip_ows(ct);
	return !strncasecmp(ct, "application/json", 16) &&
	       (ct[16] == '\0' || ct[16] == ';' || ct[16] == ' ' || ct[16] == '\t');
}

/* The edit log has the batch, or failed: apply and answer. */
static void edits_logged(void *arg, int status)
{
	struct rctx *x = arg;
	struct routes *rt = x->rt;
	struct world_batch b;
	char *body;
	size_t len;
	int rc;

	if (status) {
		rt->store_failed = 1;
		world_cancel_all(x->world);
		free(x->edits);
		respond_error(x, 503, "edit log write failed; edits are refused until a restart");
		return;
	}
	rc = world_apply(x->world, x->first, x->edits, x->nedits, &b);
	free(x->edits);
	if (rc) { /* cannot happen: the batch was reserved */
		fprintf(stderr, "terrain-server: logged batch at seq %llu not applied: %s;"
			" restart to replay it\n", (unsigned long long)x->first, err_str(rc));
		rt->store_failed = 1;
		respond_error(x, 500, "logged but not applied; restart the server");
		return;
	}
	metrics_edits_accepted(rt->metrics, x->nedits);
	sse_publish(rt->sse, x->world);
	body = malloc(sse_batch_json_bound(&b));
	if (!body) {
		respond_oom(rt, x->req, x->route);
		return;
	}
	len = sse_batch_json(&b, world_seq(x->world), body);
	respond_copy(x, 200, "application/json", "Cache-Control: no-store\r\n", body, len);
	free(body);
}

/* Why world_reserve() found the batch too big, into the arena. */
static const char *too_big(struct rctx *x)
{
	char *msg = http_req_alloc(x->req, 128);
	size_t bad = 0;

	if (!msg)
		return "edits: touch too many chunks";
	world_check(x->world, x->edits, x->nedits, &bad);
	if (bad < x->nedits)
		snprintf(msg, 128, "edits[%zu]: touches more than %d chunks", bad,
			 WORLD_MAX_EDIT_CHUNKS);
	else
		snprintf(msg, 128, "edits: the batch touches more than %d chunks",
			 WORLD_MAX_BATCH_CHUNKS);
	return msg;
}

/* Reserve, log and (in edits_logged) apply a batch; see routes.h. */
static int post_edits(struct rctx *x, int pi, uint64_t seed)
{
	struct routes *rt = x->rt;
	const char *gen = preset_name(catalog_at(rt->cat, (size_t)pi));
	struct store_batch b;
	size_t len, k;
	char *msg;
	int rc;

	if ((rc = authorise(x)) != 0)
		return rc;
	if (!rt->store || rt->store_failed) {
		x->detail = "edit log unavailable; edits are refused until a restart";
		return 503;
	}
	if (!is_json(x->req->header[HTTP_H_CONTENT_TYPE])) {
		x->detail = "content-type: must be application/json";
		return 415;
	}
	if (!(msg = http_req_alloc(x->req, 256)))
		return ERR_NOMEM;
	rc = edit_parse_batch(x->req->body ? x->req->body : "", x->req->body_len,
			      &x->edits, &x->nedits, msg, 256);
	if (rc) {
		x->detail = msg;
		return rc == ERR_RANGE ? 422 : rc;
	}
	if ((rc = world_map_get(rt->worlds, pi, seed, &x->world)) != 0 ||
	    (rc = world_reserve(x->world, x->edits, x->nedits, &x->first)) != 0) {
		if (rc == ERR_TOOBIG)
			x->detail = too_big(x);
		free(x->edits);
		return rc == ERR_TOOBIG ? 422 : rc;
	}
	for (k = 0; k < x->nedits; k++)
		edit_encode(&x->edits[k], rt->wire + k * EDIT_WIRE_SIZE);
	b = (struct store_batch){ gen, strlen(gen), seed, x->first,
				  (uint32_t)x->nedits, rt->wire };
	rc = store_batch_encode(&b, rt->record, sizeof(rt->record), &len);
	if (!rc)
		rc = store_append(rt->store, rt->record, len, edits_logged, x);
	if (rc) {
		world_cancel(x->world, x->edits, x->nedits, x->first);
		free(x->edits);
		if (rc == ERR_IO)
			rt->store_failed = 1;
		x->detail = rc == ERR_BUSY ? "edit log queue full, retry later" :
			    "edit log unavailable; edits are refused until a restart";
		return 503;
	}
	return 0;
}

/* GET edits?since=SEQ&limit=N: the log after SEQ, at most N edits. */
static int get_edits(struct rctx *x, int pi, uint64_t seed)
{
	const struct world *w = world_map_find(x->rt->worlds, pi, seed);
	uint64_t since = 0, limit = EDITS_PAGE, seq, hash, s;
	char hex[17];
	cJSON *o, *arr;
	int rc;

	if ((rc = query_u64(x, "since", &since, NULL, "since: not a decimal sequence number")) ||
	    (rc = query_u64(x, "limit", &limit, NULL, "limit: not a decimal count")))
		return rc;
	if (limit == 0) {
		x->detail = "limit: must be at least 1";
		return ERR_INVAL;
	}
	if (limit > EDITS_PAGE)
		limit = EDITS_PAGE;
	seq = world_state(x->rt, pi, seed, &hash);
	hex64(hex, hash);
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "since", (double)since);
	cJSON_AddNumberToObject(o, "seq", (double)seq);
	cJSON_AddStringToObject(o, "world_hash", hex);
	arr = cJSON_AddArrayToObject(o, "edits");
	for (s = since + 1; arr && s <= seq && s - since <= limit; s++)
		if (edit_to_json(world_edit(w, s), s, arr)) {
			cJSON_Delete(o);
			return ERR_NOMEM;
		}
	if (s <= seq)
		cJSON_AddNumberToObject(o, "next", (double)(s - 1));
	respond_json(x, 200, o, "Cache-Control: no-store\r\n");
	return 0;
}

static int h_edits(struct rctx *x)
{
	uint64_t seed;
	int rc, pi;

	if ((rc = world_of(x, &seed, &pi)) != 0)
		return rc;
	if (x->req->method == HTTP_POST)
		return post_edits(x, pi, seed);
	return get_edits(x, pi, seed);
}

/* One int32 query parameter of the hashes rectangle. */
static int query_i32(struct rctx *x, const char *name, int32_t *v)
{
	size_t len = 0;
	int rc;
	const char *s = query_param(x, name, &len, &rc);

	if (rc)
		return rc;
	if (!s || tilegen_parse_i32(s, len, v)) {
		x->detail = "cx0, cz0, cx1, cz1: required, decimal int32";
		return ERR_INVAL;
	}
	return 0;
}

/* GET hashes?cx0=&cz0=&cx1=&cz1=: edit versions and hashes of a rectangle. */
static int h_hashes(struct rctx *x)
{
	int32_t cx0, cz0, cx1, cz1;
	const struct world *w;
	uint64_t seed, seq, hash;
	int64_t cx, cz;
	char hex[17];
	cJSON *o, *arr;
	int rc, pi;

	if ((rc = world_of(x, &seed, &pi)) != 0 || (rc = query_i32(x, "cx0", &cx0)) ||
	    (rc = query_i32(x, "cz0", &cz0)) || (rc = query_i32(x, "cx1", &cx1)) ||
	    (rc = query_i32(x, "cz1", &cz1)))
		return rc;
	if (cx1 < cx0 || cz1 < cz0 || (int64_t)cx1 - cx0 >= HASHES_SIDE ||
	    (int64_t)cz1 - cz0 >= HASHES_SIDE) {
		x->detail = "rectangle: need cx0 <= cx1, cz0 <= cz1, at most 64 x 64 chunks";
		return ERR_INVAL;
	}
	w = world_map_find(x->rt->worlds, pi, seed);
	seq = world_state(x->rt, pi, seed, &hash);
	hex64(hex, hash);
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "seq", (double)seq);
	cJSON_AddStringToObject(o, "world_hash", hex);
	arr = cJSON_AddArrayToObject(o, "chunks");
	for (cz = cz0; w && arr && cz <= cz1; cz++)
		for (cx = cx0; cx <= cx1; cx++) {
			struct world_chunk ch;
			cJSON *c;

			world_chunk(w, (int32_t)cx, (int32_t)cz, &ch);
			if (!ch.version)
				continue;
			if (!(c = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, c)) {
				cJSON_Delete(c);
				cJSON_Delete(o);
				return ERR_NOMEM;
			}
			hex64(hex, ch.hash);
			cJSON_AddNumberToObject(c, "cx", (double)cx);
			cJSON_AddNumberToObject(c, "cz", (double)cz);
			cJSON_AddNumberToObject(c, "version", (double)ch.version);
			cJSON_AddStringToObject(c, "hash", hex);
		}
	respond_json(x, 200, o, "Cache-Control: no-store\r\n");
	return 0;
}

static const char sse_head[] =
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	"Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n" CORS;

/* GET events: a stream of the world's batches (sse.h). */
static int h_events(struct rctx *x)
{
	struct http_response head = { 200, { sse_head, sizeof(sse_head) - 1 },
				      { NULL, 0 }, NULL, NULL, NULL };
	const char *id = x->req->header[HTTP_H_LAST_EVENT_ID];
	const char *bad = "last-event-id: not a decimal sequence number";
	struct routes *rt = x->rt;
	unsigned route = x->route;
	uint64_t seed, since = 0;
	int rc, pi, resume = id != NULL;

	if ((rc = world_of(x, &seed, &pi)) != 0)
		return rc;
	if (id && parse_u64(id, strlen(id), &since)) {
		x->detail = bad;
		return ERR_INVAL;
	}
	if (!id && (rc = query_u64(x, "last_event_id", &since, &resume, bad)) != 0)
		return rc;
	if ((rc = world_map_get(rt->worlds, pi, seed, &x->world)) != 0)
		return rc;
	/* x lives in the request's arena, which may go with the head */
	if ((rc = sse_subscribe(rt->sse, x->req, &head, x->world, resume, since)) != 0) {
		x->detail = "cannot open the event stream";
		return ERR_BUSY;
	}
	metrics_request(rt->metrics, route, 200);
	return 0;
}

static int h_presets(struct rctx *x)
{
	respond_copy(x, 200, "application/json", "Cache-Control: no-cache\r\n",
		     x->rt->presets_json, x->rt->presets_len);
	return 0;
}

static int h_health(struct rctx *x)
{
	static const char ok[] = "{\"status\":\"ok\"}";

	respond_copy(x, 200, "application/json", "Cache-Control: no-store\r\n",
		     ok, sizeof(ok) - 1);
	return 0;
}

static int h_metrics(struct rctx *x)
{
	struct cache_stats cs;
	struct http_stats hs = { 0 };
	struct metrics_edit_stats es;
	struct regions_stats rs;
	struct store_stats ss;
	struct sse_stats sst;
	char *text;
	size_t len;
	int rc;

	cache_stats(x->rt->cache, &cs);
	regions_stats(x->rt->regions, &rs);
	if (x->rt->server)
		http_server_stats(x->rt->server, &hs);
	store_stats(x->rt->store, &ss);
	sse_stats(x->rt->sse, &sst);
	es = (struct metrics_edit_stats){ ss.commits, ss.last_batch, ss.records, ss.bytes,
					  ss.failed || x->rt->store_failed, sst.subscribers,
					  sst.events, sst.dropped,
					  world_map_count(x->rt->worlds) };
	rc = metrics_render(x->rt->metrics, &cs, &hs, &rs, &es, &text, &len);
	if (rc)
		return rc;
	respond_copy(x, 200, "text/plain; version=0.0.4; charset=utf-8",
		     "Cache-Control: no-store\r\n", text, len);
	free(text);
	return 0;
}

/* GET / and GET /assets/NAME: the viewer's files (static.h). */
static int h_static(struct rctx *x)
{
	const struct static_file *f = static_find(x->rt->files, x->req->path,
						  x->req->path_len);

	if (!f) {
		x->detail = "no such file";
		return 404;
	}
	if (etag_matches(x->req->header[HTTP_H_IF_NONE_MATCH], f->etag))
		send_response(x, 304, f->head_304, f->head_304_len, NULL, 0, NULL, NULL);
	else
		send_response(x, 200, f->head, f->head_len, f->data, f->len, NULL, NULL);
	return 0;
}

static void preflight(struct rctx *x, const struct route *r)
{
	char headers[512];
	const char *allow = allow_list(x, r->methods);

	snprintf(headers, sizeof(headers),
		 "Allow: %s\r\nAccess-Control-Allow-Methods: %s\r\n"
		 "Access-Control-Allow-Headers: " ALLOWED_HEADERS "\r\n"
		 "Access-Control-Max-Age: 86400\r\n", allow, allow);
	respond_copy(x, 204, NULL, headers, NULL, 0);
}

/* ---- entry points ------------------------------------------------------------------ */

static void on_request(void *ctx, struct http_req *req)
{
	struct routes *rt = ctx;
	struct rctx *x = http_req_alloc(req, sizeof(*x));
	const struct route *r;
	int rc;

	if (!x) {
		respond_oom(rt, req, LABEL_NONE);
		return;
	}
	memset(x, 0, sizeof(*x));
	x->rt = rt;
	x->req = req;
	x->route = LABEL_NONE;
	rc = split_path(x);
	if (rc == 0) {
		r = match(x, &x->route);
		if (!r) {
			x->detail = "no such route";
			rc = 404;
		} else if (req->method == HTTP_OPTIONS) {
			preflight(x, r);
		} else if (req->method < 0 || !(r->methods & M(req->method))) {
			x->detail = "method not allowed on this route";
			rc = 405;
		} else {
			x->edit_post = x->route == ROUTE_EDITS && req->method == HTTP_POST;
			rc = r->handler(x);
		}
	}
	if (rc)
		respond_error(x, rc < 0 ? err_to_status(rc) : rc, x->detail);
}

static void on_error(void *ctx, struct http_req *req, int status,
		     const char *detail)
{
	struct routes *rt = ctx;
	struct rctx *x = http_req_alloc(req, sizeof(*x));

	if (!x) {
		respond_oom(rt, req, LABEL_ERROR);
		return;
	}
	memset(x, 0, sizeof(*x));
	x->rt = rt;
	x->req = req;
	if (req->method == HTTP_POST && split_path(x) == 0 && match(x, &x->route))
		x->edit_post = x->route == ROUTE_EDITS; /* e.g. 413 */
	x->route = LABEL_ERROR;
	respond_error(x, status, detail);
}

void route_handler(struct routes *rt, struct http_handler *h)
{
	h->ctx = rt;
	h->request = on_request;
	h->error = on_error;
}

void route_set_server(struct routes *rt, const struct http_server *s)
{
	rt->server = s;
}

/* The /v1/presets body, built once. */
static int presets_body(struct routes *rt)
{
	cJSON *o = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(o, "presets");
	size_t i;

	if (!o || !list) {
		cJSON_Delete(o);
		return ERR_NOMEM;
	}
	for (i = 0; i < catalog_count(rt->cat); i++) {
		const struct preset *p = catalog_at(rt->cat, i);
		cJSON *e = cJSON_CreateObject();
		const char *d = preset_description(p);

		if (!e)
			break;
		cJSON_AddItemToArray(list, e);
		cJSON_AddStringToObject(e, "name", preset_name(p));
		cJSON_AddStringToObject(e, "description", d ? d : "");
		add_preset_fields(e, p);
		cJSON_AddItemToObject(e, "params", cJSON_Parse(preset_canonical(p)));
	}
	rt->presets_json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!rt->presets_json)
		return ERR_NOMEM;
	rt->presets_len = strlen(rt->presets_json);
	return 0;
}

static void free_value(void *v)
{
	free(v);
}

int route_create(struct uv_loop_s *loop, const struct catalog *cat,
		 const struct route_config *cfg, struct routes **out)
{
	struct routes *rt;
	size_t i;
	int rc;

	if (!loop || !cat || !cfg || !out)
		return ERR_INVAL;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return ERR_NOMEM;
	rt->loop = loop;
	rt->cat = cat;
	rt->max_generations = cfg->max_generations ? cfg->max_generations : 1024;
	rt->max_made = cfg->response_bytes ? cfg->response_bytes : (size_t)64 << 20;
	if (cfg->max_age)
		snprintf(rt->cache_control, sizeof(rt->cache_control),
			 "public, max-age=%u", cfg->max_age);
	else
		snprintf(rt->cache_control, sizeof(rt->cache_control), "no-cache");
	rt->oom_head_len = (size_t)snprintf(rt->oom_head, sizeof(rt->oom_head),
		"%sContent-Type: application/json\r\nContent-Length: %zu\r\n"
		"Retry-After: 1\r\n" CORS, http_status_line(503), sizeof(oom_body) - 1);
	assert(!strcmp(table[ROUTE_EDITS].label, "edits") &&
	       !strcmp(table[ROUTE_METRICS].label, "metrics"));
	for (i = 0; i < NROUTES; i++)
		rt->labels[i] = table[i].label;
	rt->labels[LABEL_NONE] = "none";
	rt->labels[LABEL_ERROR] = "error";
	rt->store = cfg->store;
	if (cfg->edit_token && cfg->edit_token[0] && !(rt->edit_token = strdup(cfg->edit_token)))
		rc = ERR_NOMEM;
	else if ((rc = metrics_create(rt->labels, NROUTES + 2, &rt->metrics)) != 0 ||
		 (rc = cache_create(cfg->cache_bytes, 0, free_value, &rt->cache)) != 0 ||
		 (rc = regions_create(cfg->region_bytes, &rt->regions)) != 0 ||
		 (rc = world_map_create(cat, &rt->worlds)) != 0 ||
		 (rc = sse_create(loop, 0, 0, &rt->sse)) != 0 ||
		 (rc = static_create(NULL, CORS, &rt->files)) != 0)
		;
	else
		rc = presets_body(rt);
	if (!rc)
		metrics_made(rt->metrics, 0, rt->max_made);
	if (rc) {
		route_destroy(rt);
		return rc;
	}
	*out = rt;
	return 0;
}

void route_destroy(struct routes *rt)
{
	if (!rt)
		return;
	cache_destroy(rt->cache);
	regions_destroy(rt->regions);
	static_destroy(rt->files);
	metrics_destroy(rt->metrics);
	sse_destroy(rt->sse);
	world_map_destroy(rt->worlds);
	cJSON_free(rt->presets_json);
	free(rt->edit_token);
	free(rt);
}

struct replay {
	struct routes *rt;
	uint64_t skipped;       /* batches of generators not loaded */
	char skip_note[256];
	char err[256];
};

static int replay_one(void *arg, const uint8_t *payload, size_t len)
{
	struct replay *r = arg;
	char msg[200];
	int rc = world_map_replay(r->rt->worlds, payload, len, msg, sizeof(msg));

	if (rc == ERR_NOTFOUND) {
		if (!r->skipped++)
			snprintf(r->skip_note, sizeof(r->skip_note), "%s", msg);
		return 0;
	}
	if (rc)
		snprintf(r->err, sizeof(r->err), "edit log: %s", msg);
	return rc;
}

int route_replay(struct routes *rt, struct store_replay_stats *st, char *msg,
		 size_t msglen)
{
	struct replay r = { rt, 0, "", "" };
	uint64_t edits = 0;
	size_t i;
	int rc, n;

	if (!rt->store)
		return ERR_INVAL;
	rc = store_replay(rt->store, replay_one, &r, st);
	if (rc) {
		snprintf(msg, msglen, "%s", r.err[0] ? r.err : st->message[0] ?
			 st->message : err_str(rc));
		return rc;
	}
	for (i = 0; i < world_map_count(rt->worlds); i++)
		edits += world_seq(world_map_at(rt->worlds, i, NULL));
	n = snprintf(msg, msglen, "replayed %llu edits in %llu batches of %zu worlds",
		     (unsigned long long)edits, (unsigned long long)(st->records - r.skipped),
		     world_map_count(rt->worlds));
	if (r.skipped && n >= 0 && (size_t)n < msglen)
		snprintf(msg + n, msglen - (size_t)n, "; skipped %llu batches (kept in the log): %s",
			 (unsigned long long)r.skipped, r.skip_note);
	return 0;
}
