/*
 * routes.c - the router: one table of method + path, made of the routes
 * of the sources it is given (routes.h); dispatch; CORS preflight.
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

#include <llhttp.h>

#include "api/metrics.h"
#include "api/request.h"
#include "err.h"
#include "http/http.h"
#include "util.h"

#define ALLOWED_HEADERS "If-None-Match, If-Modified-Since, Content-Type, Authorization, " \
	"Last-Event-ID, Idempotency-Key"
#define MAX_ROUTES (METRICS_MAX_ROUTES - 2)


/* A route of the table with the module that serves it. */
struct slot {
	const struct route *r;
	void *module;
};

struct routes {
	struct req_env *env;
	struct slot table[MAX_ROUTES];
	size_t nroutes;
	unsigned label_none, label_error;
	const char *labels[MAX_ROUTES + 2];
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
	struct req q = { .env = rt->env, .http = http, .label = rt->label_none }, *x;
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
		req_respond_oom(rt->env, http, rt->label_none);
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
		req_respond_oom(rt->env, http, rt->label_error);
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
	metrics_request_done(rt->env->metrics, q ? q->label : rt->label_none, ns);
}

void routes_handler(struct routes *rt, struct http_handler *h)
{
	h->ctx = rt;
	h->request = on_request;
	h->error = on_error;
	h->done = on_done;
}

/* ---- the table ---------------------------------------------------------------- */

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

void routes_print(FILE *f, const struct route_source *src, size_t n)
{
	const struct route *r;
	size_t i;

	for (i = 0; i < n; i++)
		print_routes(f, r, src[i].routes(&r));
}

int routes_create(struct req_env *env, const struct route_source *src, size_t n,
		  struct routes **out)
{
	struct routes *rt;
	size_t i, j, k;

	if (!env || !out)
		return ERR_INVAL;
	if (!(rt = calloc(1, sizeof(*rt))))
		return ERR_NOMEM;
	rt->env = env;
	for (i = 0; i < n; i++) {
		const struct route *r;

		k = src[i].routes(&r);
		if (rt->nroutes + k > MAX_ROUTES) {
			free(rt);
			return ERR_INVAL;
		}
		for (j = 0; j < k; j++) {
			rt->table[rt->nroutes] = (struct slot){ &r[j], src[i].module };
			rt->labels[rt->nroutes++] = r[j].label;
		}
	}
	rt->label_none = (unsigned)rt->nroutes;
	rt->label_error = (unsigned)rt->nroutes + 1;
	rt->labels[rt->label_none] = "none";
	rt->labels[rt->label_error] = "error";
	*out = rt;
	return 0;
}

const char *const *routes_labels(const struct routes *rt, size_t *n)
{
	*n = rt->nroutes + 2;
	return rt->labels;
}

void routes_destroy(struct routes *rt)
{
	free(rt);
}
