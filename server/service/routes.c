/*
 * routes.c - the routing core: one table of method + path, made of the
 * routes each resource declares (tiles.h, edits.h) and the service routes
 * below (health, metrics, the API description, the viewer's files);
 * dispatch; CORS preflight;
 * and the one mapping from ERR_* codes to HTTP statuses (see routes.h).
 *
 * The core knows no resource's fields: it matches the path, allocates the
 * route's own state (struct req first) from the request's arena, and calls
 * the handler, which answers or returns a status or ERR_* for req_fail().
 */
#include "routes.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <llhttp.h>
#include <uv.h>

#include "api/metrics.h"
#include "api/request.h"
#include "edits/edits.h"
#include "err.h"
#include "http/http.h"
#include "procstat.h"
#include "static.h"
#include "tiles/cache.h"
#include "tiles/maps.h"
#include "tiles/regions.h"
#include "tiles/tiles.h"
#include "util.h"
#include "worlds/bakes.h"
#include "worlds/catalog.h"
#include "worlds/snapshots.h"

#define READ (REQ_M(HTTP_GET) | REQ_M(HTTP_HEAD))
#define ALLOWED_HEADERS "If-None-Match, If-Modified-Since, Content-Type, Authorization, " \
	"Last-Event-ID, Idempotency-Key"
#define MAX_ROUTES (METRICS_MAX_ROUTES - 2)
#define OPENAPI_FILE "openapi.json"


/* A route of the table with the module that serves it. */
struct slot {
	const struct route *r;
	void *module;
};

struct routes {
	struct req_env env;
	struct tiles *tiles;
	struct edits *edits;
	struct snapshots *snaps;
	struct static_files *files;
	const struct catalog *cat;
	const struct http_server *server;
	struct slot table[MAX_ROUTES];
	size_t nroutes;
	unsigned label_none, label_error;
	const char *labels[MAX_ROUTES + 2];
};

/* ---- service routes --------------------------------------------------------- */

/* The state of edits as JSON for /healthz and /readyz: {"status":"ok"}, or
 * degraded with the reason; *for_good: the edit log failed for good (a
 * restart mends it), not a failure it retries. Returns the body's length. */
static int edits_state(const struct edits *e, char *body, size_t size, int *for_good)
{
	int failed = edits_available(e);

	*for_good = failed && edits_failed(e);
	if (!failed)
		return snprintf(body, size, "{\"status\":\"ok\"}");
	if (failed == ERR_AGAIN)
		return snprintf(body, size, "{\"status\":\"degraded\",\"reads\":\"ok\","
				"\"edits\":\"unavailable\",\"detail\":\"edit log out of reach; "
				"reconnecting\"}");
	if (!*for_good)
		return snprintf(body, size, "{\"status\":\"degraded\",\"reads\":\"ok\","
				"\"edits\":\"unavailable\",\"detail\":\"edit log write failed: %s; "
				"retrying until a write succeeds\"}", edits_unavailable_why(e));
	return snprintf(body, size, "{\"status\":\"degraded\",\"reads\":\"ok\","
			"\"edits\":\"unavailable\",\"detail\":\"edit log failed: %s; "
			"restart the server\"}", edits_unavailable_why(e));
}

static void respond_state(struct req *q, int status, const char *body, int n)
{
	req_respond_copy(q, status, "application/json", status == 200 ?
			 "Cache-Control: no-store\r\n" :
			 "Cache-Control: no-store\r\nRetry-After: 1\r\n", body, (size_t)n);
}

/* /healthz, liveness: 200 while the node serves reads, edits down for a
 * while included (out of reach, or a failed write being retried: the body
 * says so); 503 only once the edit log failed for good, which a restart
 * mends. Keep a node in rotation by this. */
static int h_health(struct req *q)
{
	struct routes *rt = q->module;
	char body[256];
	int for_good, n = edits_state(rt->edits, body, sizeof(body), &for_good);

	respond_state(q, for_good ? 503 : 200, body, n);
	return 0;
}

/* /readyz, readiness for edits: 200 while edits can be taken, 503 while
 * the edit log is out of reach, a failed write is being retried, or it
 * failed for good (reads still work). */
static int h_ready(struct req *q)
{
	struct routes *rt = q->module;
	char body[256];
	int for_good, n = edits_state(rt->edits, body, sizeof(body), &for_good);

	respond_state(q, for_good || edits_available(rt->edits) ? 503 : 200, body, n);
	return 0;
}

static int h_metrics(struct req *q)
{
	struct routes *rt = q->module;
	struct cache_stats cs;
	struct http_stats hs = { 0 };
	struct metrics_edit_stats es;
	struct regions_stats rs;
	struct bakes_stats bs;
	struct procstat ps;
	struct metrics_sources src = { &cs, &hs, &rs, &bs, &es, &ps, rt->cat };
	char *text;
	size_t len;
	int rc;

	tiles_stats(rt->tiles, &cs, &rs, &bs);
	if (rt->server)
		http_server_stats(rt->server, &hs);
	edits_stats(rt->edits, &es);
	if (procstat_read(&ps) != 0)
		src.process = NULL;
	rc = metrics_render(rt->env.metrics, &src, &text, &len);
	if (rc)
		return rc;
	req_respond_copy(q, 200, "text/plain; version=0.0.4; charset=utf-8",
			 "Cache-Control: no-store\r\n", text, len);
	free(text);
	return 0;
}

/* Answer with an embedded file, or 304 by its validators. */
static int send_file(struct req *q, const struct static_file *f)
{
	if (!f) {
		q->detail = "no such file";
		return 404;
	}
	if (req_not_modified(q, f->etag, f->mtime))
		req_send(q, 304, f->head_304, f->head_304_len, NULL, 0, NULL, NULL);
	else
		req_send(q, 200, f->head, f->head_len, f->data, f->len, NULL, NULL);
	return 0;
}

/* GET / and GET /assets/NAME: the viewer's files (static.h). */
static int h_static(struct req *q)
{
	struct routes *rt = q->module;

	return send_file(q, static_find(rt->files, q->http->path, q->http->path_len));
}

/* GET /v1/openapi.json: this API's OpenAPI 3.1 description, compiled in
 * from server/assets/openapi.json (tests/http/openapi.sh checks it against
 * the route table and the real answers). */
static int h_openapi(struct req *q)
{
	struct routes *rt = q->module;

	return send_file(q, static_get(rt->files, OPENAPI_FILE, sizeof(OPENAPI_FILE) - 1));
}

static const struct route service_routes[] = {
	{ "openapi", { "v1", "openapi.json" }, 2, READ, 0, sizeof(struct req), h_openapi, NULL },
	{ "healthz", { "healthz" }, 1, READ, REQ_MONITOR, sizeof(struct req), h_health, NULL },
	{ "readyz", { "readyz" }, 1, READ, REQ_MONITOR, sizeof(struct req), h_ready, NULL },
	{ "metrics", { "metrics" }, 1, READ, REQ_UNCHARGED | REQ_MONITOR, sizeof(struct req),
	  h_metrics, NULL },
	{ "viewer", { "" }, 1, READ, 0, sizeof(struct req), h_static, NULL },
	{ "assets", { "assets", NULL }, 2, READ, 0, sizeof(struct req), h_static, NULL },
};

/* ---- dispatch ----------------------------------------------------------------- */

/* Whether literal lit equals segment seg (n bytes, no NUL in them). */
static int seg_is(const char *lit, const char *seg, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lit[i] != seg[i])   /* stops at lit's NUL too */
			return 0;
	return lit[n] == '\0';
}

static const struct slot *match(const struct routes *rt, const struct req *q,
				unsigned *label)
{
	size_t i;
	int s;

	for (i = 0; i < rt->nroutes; i++) {
		const struct route *r = rt->table[i].r;

		if (r->nseg != q->nseg)
			continue;
		for (s = 0; s < r->nseg; s++)
			if (r->seg[s] && !seg_is(r->seg[s], q->seg[s], q->seglen[s]))
				break;
		if (s == r->nseg) {
			*label = (unsigned)i;
			return &rt->table[i];
		}
	}
	return NULL;
}

static void preflight(struct req *q)
{
	char headers[512];
	uint64_t methods = q->route->cors_methods ?
			   q->route->cors_methods(q, q->route->methods) : q->route->methods;
	const char *allow = req_allow_list(q, methods);

	snprintf(headers, sizeof(headers),
		 "Allow: %s\r\nAccess-Control-Allow-Methods: %s\r\n"
		 "Access-Control-Allow-Headers: " ALLOWED_HEADERS "\r\n"
		 "Access-Control-Max-Age: 86400\r\n", allow, allow);
	req_respond_copy(q, 204, NULL, headers, NULL, 0);
}

/*
 * The state of a request: the path parsed and matched on the stack, then
 * the route's own state (struct req first; a bare struct req when nothing
 * matched) from the arena, which outlives the answer. *rc gets the parse
 * result (the path is parsed only when parse is set). NULL when the arena is out of memory.
 */
static struct req *route_state(struct routes *rt, struct http_req *http, int parse,
			       int *rc)
{
	struct req q = { .env = &rt->env, .http = http, .label = rt->label_none }, *x;
	const struct slot *s = NULL;
	size_t size = sizeof(q);

	*rc = parse ? req_split_path(&q) : 0;
	if (*rc == 0 && (s = match(rt, &q, &q.label)) != NULL) {
		q.route = s->r;
		q.module = s->module;
		q.count_rejects = (s->r->flags & REQ_COUNT_REJECTS) && http->method == HTTP_POST;
		size = s->r->size;
	}
	if (!(x = http_req_alloc(http, size)))
		return NULL;
	memset(x, 0, size);
	*x = q;
	http->user = x; /* for on_done() */
	return x;
}

static void on_request(void *ctx, struct http_req *http)
{
	struct routes *rt = ctx;
	int rc;
	struct req *q = route_state(rt, http, 1, &rc);

	if (!q) {
		req_respond_oom(&rt->env, http, rt->label_none);
		return;
	}
	if (rc == 0) {
		if (http->reserve && !(q->route && (q->route->flags & REQ_MONITOR))) {
			q->detail = "too many connections (this one is kept for monitors:"
				    " /healthz, /readyz and /metrics only)";
			rc = 503;
		} else if (!q->route) {
			q->detail = "no such route";
			rc = 404;
		} else if (http->method == HTTP_OPTIONS) {
			preflight(q);
		} else if (http->method < 0 || !(q->route->methods & REQ_M(http->method))) {
			q->detail = "method not allowed on this route";
			rc = 405;
		} else {
			rc = q->route->handler(q);
		}
	}
	if (rc)
		req_fail(q, rc);
}

/* A protocol error (400, 408, 413, 414, 431) before any handler ran. */
static void on_error(void *ctx, struct http_req *http, int status, const char *detail)
{
	struct routes *rt = ctx;
	int rc;
	struct req *q = route_state(rt, http, http->method == HTTP_POST && http->path, &rc);

	if (!q) {
		req_respond_oom(&rt->env, http, rt->label_error);
		return;
	}
	q->route = NULL; /* no Allow line, no route state used */
	q->label = rt->label_error;
	req_respond_error(q, status, detail);
}

/* A response went out whole: its duration, by the label of its route. */
static void on_done(void *ctx, struct http_req *http, int status, uint64_t ns)
{
	struct routes *rt = ctx;
	const struct req *q = http->user;

	(void)status;
	metrics_request_done(rt->env.metrics, q ? q->label : rt->label_none, ns);
}

void route_handler(struct routes *rt, struct http_handler *h)
{
	h->ctx = rt;
	h->request = on_request;
	h->error = on_error;
	h->done = on_done;
}

void route_set_server(struct routes *rt, const struct http_server *s)
{
	rt->server = s;
}

/* ---- the table, printed -------------------------------------------------------- */

static void print_routes(FILE *f, const struct route *r, size_t n)
{
	size_t i;
	int m, s;

	for (i = 0; i < n; i++) {
		for (m = 0; m < 64; m++)
			if (r[i].methods & REQ_M(m))
				fprintf(f, "%s,", llhttp_method_name((llhttp_method_t)m));
		fputs("OPTIONS ", f);
		for (s = 0; s < r[i].nseg; s++)
			fprintf(f, "/%s", r[i].seg[s] ? r[i].seg[s] : "*");
		fprintf(f, " %s\n", r[i].label);
	}
}

/* The resources, in table order: their routes and the module that serves
 * them (a struct routes member); the service routes come after them. */
static const struct {
	size_t (*routes)(const struct route **out);
	size_t module;
} resources[] = {
	{ tiles_routes, offsetof(struct routes, tiles) },
	{ maps_routes, offsetof(struct routes, tiles) },
	{ edits_routes, offsetof(struct routes, edits) },
};

void route_print_table(FILE *f)
{
	const struct route *r;
	size_t i, n;

	for (i = 0; i < ARRAY_LEN(resources); i++) {
		n = resources[i].routes(&r);
		print_routes(f, r, n);
	}
	print_routes(f, service_routes, ARRAY_LEN(service_routes));
}

/* ---- life cycle --------------------------------------------------------------- */

/* Append n routes of module to the table. */
static int add_routes(struct routes *rt, const struct route *r, size_t n, void *module)
{
	size_t i;

	if (rt->nroutes + n > MAX_ROUTES)
		return ERR_INVAL;
	for (i = 0; i < n; i++) {
		rt->table[rt->nroutes] = (struct slot){ &r[i], module };
		rt->labels[rt->nroutes++] = r[i].label;
	}
	return 0;
}

static int build_table(struct routes *rt)
{
	const struct route *r;
	size_t i, n;
	int rc;

	for (i = 0; i < ARRAY_LEN(resources); i++) {
		void *module;

		n = resources[i].routes(&r);
		memcpy(&module, (const char *)rt + resources[i].module, sizeof(module));
		if ((rc = add_routes(rt, r, n, module)) != 0)
			return rc;
	}
	if ((rc = add_routes(rt, service_routes, ARRAY_LEN(service_routes), rt)) != 0)
		return rc;
	rt->label_none = (unsigned)rt->nroutes;
	rt->label_error = (unsigned)rt->nroutes + 1;
	rt->labels[rt->label_none] = "none";
	rt->labels[rt->label_error] = "error";
	return 0;
}

int route_create(struct uv_loop_s *loop, const struct catalog *cat,
		 const struct route_config *cfg, struct routes **out, char *err,
		 size_t errlen)
{
	struct tiles_config tc;
	struct edits_config ec;
	struct metrics *m = NULL;
	struct routes *rt;
	int rc;

	snprintf(err, errlen, "out of memory");
	if (!loop || !cat || !cfg || !out) {
		snprintf(err, errlen, "bad arguments");
		return ERR_INVAL;
	}
	if (!(rt = calloc(1, sizeof(*rt))))
		return ERR_NOMEM;
	rt->cat = cat;
	tc = (struct tiles_config){ cfg->cache_bytes, cfg->region_bytes, cfg->max_age,
				    cfg->max_generations, cfg->bake_after };
	ec = (struct edits_config){ cfg->edit_log, cfg->edit_log_password,
				    cfg->edit_log_sentinel_password, cfg->data_dir, cfg->edit_token,
				    cfg->cors_origins, cfg->allowed_hosts, cfg->token_secret,
				    cfg->token_secret_len, cfg->token_public_key,
				    cfg->token_public_key_len,
				    { cfg->edit_rate, 5 * cfg->edit_rate, cfg->edit_area_km2 * 1e6,
				      5 * cfg->edit_area_km2 * 1e6, cfg->edit_deadline_ms,
				      cfg->key_window_s, cfg->key_max, cfg->history_s } };
	/* the modules first: the table and its labels are theirs */
	if ((rc = edits_create(loop, cat, &rt->env, &ec, &rt->edits, err, errlen)) == 0 &&
	    (rc = tiles_create(loop, cat, edits_worlds(rt->edits), &rt->env, &tc,
			       &rt->tiles)) == 0) {
		edits_on_change(rt->edits, tiles_changed, rt->tiles);
		if ((rc = snapshots_create(loop, cfg->data_dir, cat, edits_world_map(rt->edits),
					   tiles_bakes(rt->tiles),
					   tiles_region_source(rt->tiles), cfg->snapshot_every,
					   &rt->snaps)) == 0)
			edits_use_snapshots(rt->edits, rt->snaps, cfg->compact_log);
		if (rc == 0 && (rc = build_table(rt)) == 0 &&
		    (rc = metrics_create(rt->labels, rt->nroutes + 2, &m)) == 0)
			rc = static_create(NULL, REQ_CORS, &rt->files);
	}
	if (rc) {
		metrics_destroy(m);
		route_destroy(rt);
		return rc;
	}
	req_env_init(&rt->env, m, cfg->response_bytes);
	*out = rt;
	return 0;
}

int route_replay(struct routes *rt, char *msg, size_t msglen, char *warn, size_t warnlen)
{
	int rc = edits_replay(rt->edits, msg, msglen, warn, warnlen);

	if (rc == 0 && rt->tiles)
		bakes_warm(tiles_bakes(rt->tiles)); /* the first tiles after a restart */
	return rc;
}

void route_stop(void *arg)
{
	struct routes *rt = arg;

	snapshots_stop(rt->snaps);
	tiles_stop(rt->tiles);
}

void route_close_log(struct routes *rt)
{
	if (rt)
		edits_close_log(rt->edits);
}

void route_destroy(struct routes *rt)
{
	if (!rt)
		return;
	snapshots_destroy(rt->snaps);
	tiles_destroy(rt->tiles);
	static_destroy(rt->files);
	edits_destroy(rt->edits);
	metrics_destroy(rt->env.metrics);
	free(rt);
}
