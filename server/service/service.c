/*
 * service.c - the modules wired together (service.h), and the service's
 * own routes: /healthz, /readyz, /metrics, /v1/openapi.json and the
 * viewer's files.
 */
#include "service.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llhttp.h>
#include <uv.h>

#include "api/metrics.h"
#include "base/cache.h"
#include "base/options.h"
#include "base/procstat.h"
#include "err.h"
#include "gen/regions.h"
#include "routes.h"
#include "static.h"
#include "tiles/maps.h"
#include "util.h"
#include "worlds/bakes.h"

#define READ (REQ_M(HTTP_GET) | REQ_M(HTTP_HEAD))
#define OPENAPI_FILE "openapi.json"

struct service {
	struct req_env env;
	struct tiles *tiles;
	struct edits *edits;
	struct snapshots *snaps;
	struct static_files *files;
	struct routes *router;
	const struct catalog *cat;
	const struct http_server *server;
};

/* ---- configuration ------------------------------------------------------------ */

void service_config_init(struct service_config *c)
{
	memset(c, 0, sizeof(*c));
	c->loop.backlog = 4096;
	c->loop.drain_ms = 10000;
	http_limits_default(&c->http);
	c->http.node_name = NULL; /* the host's name unless given */
	c->http.max_body = EDITS_MAX_BODY;
	c->tiles.max_generations = 1024;
}

static void add(struct option_group *g, const char *module,
		size_t (*table)(const struct option **out), void *conf)
{
	g->module = module;
	g->n = table(&g->opts);
	g->conf = conf;
}

void service_options(struct service_config *c, struct option_group *g)
{
	size_t i = 0;

	add(&g[i++], "listening (service/loop.c)", loop_options, &c->loop);
	add(&g[i++], "connections (http/)", http_options, &c->http);
	add(&g[i++], "answers (api/request.c)", req_options, &c->api);
	add(&g[i++], "generators (worlds/catalog.c)", catalog_options, &c->presets);
	add(&g[i++], "tiles (tiles/)", tiles_options, &c->tiles);
	add(&g[i++], "the edit log (editlog/journal.c)", journal_options, &c->log);
	add(&g[i++], "snapshots (worlds/snapshots.c)", snapshots_options, &c->snapshots);
	add(&g[i++], "edits (edits/)", edits_options, &c->edits);
}

int service_config_load(struct service_config *c, char *err, size_t errlen)
{
	int rc = journal_config_load(&c->log, err, errlen);

	if (rc == 0)
		rc = edits_config_load(&c->edits, err, errlen);
	http_limits_resolve(&c->http);
	return rc;
}

void service_config_free(struct service_config *c)
{
	journal_config_free(&c->log);
	edits_config_free(&c->edits);
}

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
	struct service *svc = q->module;
	char body[256];
	int for_good, n = edits_state(svc->edits, body, sizeof(body), &for_good);

	respond_state(q, for_good ? 503 : 200, body, n);
	return 0;
}

/* /readyz, readiness for edits: 200 while edits can be taken, 503 while
 * the edit log is out of reach, a failed write is being retried, or it
 * failed for good (reads still work). */
static int h_ready(struct req *q)
{
	struct service *svc = q->module;
	char body[256];
	int for_good, n = edits_state(svc->edits, body, sizeof(body), &for_good);

	respond_state(q, for_good || edits_available(svc->edits) ? 503 : 200, body, n);
	return 0;
}

static int h_metrics(struct req *q)
{
	struct service *svc = q->module;
	struct cache_stats cs;
	struct http_stats hs = { 0 };
	struct metrics_edit_stats es;
	struct regions_stats rs;
	struct bakes_stats bs;
	struct procstat ps;
	struct metrics_sources src = { &cs, &hs, &rs, &bs, &es, &ps, svc->cat };
	char *text;
	size_t len;
	int rc;

	tiles_stats(svc->tiles, &cs, &rs, &bs);
	if (svc->server)
		http_server_stats(svc->server, &hs);
	edits_stats(svc->edits, &es);
	if (procstat_read(&ps) != 0)
		src.process = NULL;
	rc = metrics_render(svc->env.metrics, &src, &text, &len);
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
	struct service *svc = q->module;

	return send_file(q, static_find(svc->files, q->http->path, q->http->path_len));
}

/* GET /v1/openapi.json: this API's OpenAPI 3.1 description, compiled in
 * from server/assets/openapi.json (tests/http/openapi.sh checks it against
 * the route table and the real answers). */
static int h_openapi(struct req *q)
{
	struct service *svc = q->module;

	return send_file(q, static_get(svc->files, OPENAPI_FILE, sizeof(OPENAPI_FILE) - 1));
}

static const struct route routes_of_service[] = {
	{ "openapi", { "v1", "openapi.json" }, 2, READ, 0, sizeof(struct req), h_openapi, NULL },
	{ "healthz", { "healthz" }, 1, READ, REQ_MONITOR, sizeof(struct req), h_health, NULL },
	{ "readyz", { "readyz" }, 1, READ, REQ_MONITOR, sizeof(struct req), h_ready, NULL },
	{ "metrics", { "metrics" }, 1, READ, REQ_UNCHARGED | REQ_MONITOR, sizeof(struct req),
	  h_metrics, NULL },
	{ "viewer", { "" }, 1, READ, 0, sizeof(struct req), h_static, NULL },
	{ "assets", { "assets", NULL }, 2, READ, 0, sizeof(struct req), h_static, NULL },
};


static size_t service_routes(const struct route **out)
{
	*out = routes_of_service;
	return ARRAY_LEN(routes_of_service);
}

/* ---- the modules -------------------------------------------------------------- */

/* The route sources in table order: the resources, then the service's own
 * routes. s NULL: for printing (no modules). */
static size_t sources(struct service *s, struct route_source *src)
{
	size_t n = 0;

	src[n++] = (struct route_source){ tiles_routes, s ? s->tiles : NULL };
	src[n++] = (struct route_source){ maps_routes, s ? s->tiles : NULL };
	src[n++] = (struct route_source){ edits_routes, s ? s->edits : NULL };
	src[n++] = (struct route_source){ service_routes, s };
	return n;
}

void service_print_routes(FILE *f)
{
	struct route_source src[4];

	routes_print(f, src, sources(NULL, src));
}

int service_create(struct uv_loop_s *loop, const struct catalog *cat,
		   const struct service_config *cfg, struct service **out, char *err,
		   size_t errlen)
{
	struct route_source src[4];
	const char *const *labels;
	struct metrics *m = NULL;
	struct service *s;
	size_t nlabels;
	int rc;

	snprintf(err, errlen, "out of memory");
	if (!loop || !cat || !cfg || !out) {
		snprintf(err, errlen, "bad arguments");
		return ERR_INVAL;
	}
	if (!(s = calloc(1, sizeof(*s))))
		return ERR_NOMEM;
	s->cat = cat;
	/* the modules first: the table and its labels are theirs */
	if ((rc = edits_create(loop, cat, &s->env, &cfg->edits, &cfg->log, &s->edits, err,
			       errlen)) == 0 &&
	    (rc = tiles_create(loop, cat, edits_worlds(s->edits), &s->env, &cfg->tiles,
			       &s->tiles)) == 0) {
		edits_on_change(s->edits, tiles_changed, s->tiles);
		if ((rc = snapshots_create(loop, cfg->log.data_dir, cat, edits_world_map(s->edits),
					   tiles_bakes(s->tiles), tiles_region_source(s->tiles),
					   &cfg->snapshots, &s->snaps)) == 0)
			edits_use_snapshots(s->edits, s->snaps, (int)cfg->snapshots.compact_log);
		if (rc == 0 &&
		    (rc = routes_create(&s->env, src, sources(s, src), &s->router)) == 0) {
			labels = routes_labels(s->router, &nlabels);
			if ((rc = metrics_create(labels, nlabels, &m)) == 0)
				rc = static_create(NULL, REQ_CORS, &s->files);
		}
	}
	if (rc) {
		metrics_destroy(m);
		service_destroy(s);
		return rc;
	}
	req_env_init(&s->env, m, cfg->api.response_bytes);
	*out = s;
	return 0;
}

int service_replay(struct service *s, char *msg, size_t msglen, char *warn, size_t warnlen)
{
	int rc = edits_replay(s->edits, msg, msglen, warn, warnlen);

	if (rc == 0 && s->tiles)
		bakes_warm(tiles_bakes(s->tiles)); /* the first tiles after a restart */
	return rc;
}

void service_handler(struct service *s, struct http_handler *h)
{
	routes_handler(s->router, h);
}

void service_set_server(struct service *s, const struct http_server *hs)
{
	s->server = hs;
}

void service_stop(void *arg)
{
	struct service *s = arg;

	snapshots_stop(s->snaps);
	tiles_stop(s->tiles);
}

void service_close_log(struct service *s)
{
	if (s)
		edits_close_log(s->edits);
}

void service_destroy(struct service *s)
{
	if (!s)
		return;
	snapshots_destroy(s->snaps);
	tiles_destroy(s->tiles);
	static_destroy(s->files);
	edits_destroy(s->edits);
	metrics_destroy(s->env.metrics);
	routes_destroy(s->router);
	free(s);
}
