/*
 * access.c - the access chain of writing requests (see access.h): two
 * tables of checks, each of which passes (0) or answers (a status with
 * q->detail), run in order. Identity: Origin, credential. Admission:
 * role, world, area, deadline, budget.
 *
 * The budgets are token buckets in a small table keyed by the author (a
 * hash of its name) or, for tokenless loopback clients, by the peer
 * address: behind a proxy every request comes from the proxy, so only a
 * named author can have a budget of its own. JWT signatures and claims
 * are token.c's.
 */
#include "access.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <llhttp.h>
#include <uv.h>
#include <xxhash.h>

#include "api/request.h"
#include "edit.h"
#include "err.h"
#include "http/http.h"
#include "util.h"

#define CLIENTS 4096      /* budgets kept; the stalest go first */
#define DETAIL_MAX 320

/* One author's budgets (token buckets, refilled by time). */
struct bucket {
	uint8_t key[16];                 /* peer address (IPv4-mapped), or a
					    hash of the author's name */
	uint64_t at_ms;                  /* last refill */
	double edits, area;              /* budget left: edits, square metres */
	int used;
};

struct access {
	struct uv_loop_s *loop;
	char *token;                     /* --edit-token, or NULL */
	char *cors_origins;              /* comma-separated, or NULL */
	char *allowed_hosts;             /* comma-separated, or NULL */
	struct token_keys *keys;         /* JWT keys, or NULL */
	struct access_limits lim;
	struct bucket *buckets;          /* CLIENTS, open addressing on key */
	uint64_t late_said_ms;           /* when a late edit was last logged */
};

/* One request going through the chain. */
struct ctx {
	struct access *a;
	struct req *q;
	struct access_who *out;          /* identify: filled */
	const struct access_who *who;    /* admit */
	const struct access_ask *ask;
};

/* Arena copy of a formatted detail (a static fallback without memory). */
static const char *detail(struct req *q, const char *fmt, ...)
{
	char *msg = http_req_alloc(q->http, DETAIL_MAX);
	va_list ap;

	if (!msg)
		return "edits refused";
	va_start(ap, fmt);
	vsnprintf(msg, DETAIL_MAX, fmt, ap);
	va_end(ap);
	return msg;
}

/* ---- Origin and Host ------------------------------------------------------------ */

/* Whether the n bytes at s are an entry of the comma-separated list (any
 * case, spaces around entries ignored). */
static int listed(const char *list, const char *s, size_t n)
{
	while (list && *list) {
		const char *end = strchr(list, ','), *a = list, *b;

		if (!end)
			end = list + strlen(list);
		while (a < end && *a == ' ')
			a++;
		for (b = end; b > a && b[-1] == ' '; b--)
			;
		if ((size_t)(b - a) == n && !strncasecmp(a, s, n))
			return 1;
		list = *end ? end + 1 : end;
	}
	return 0;
}

/* Whether a Host header names this machine's loopback: localhost (or a
 * name under .localhost), 127.0.0.0/8 or [::1], with any port. */
static int host_is_loopback(const char *host)
{
	char h[256];
	size_t n = strlen(host);
	const char *colon;
	struct in_addr a4;

	if (n >= sizeof(h))
		return 0;
	if (host[0] == '[') {
		const char *close = strchr(host, ']');

		return close && (size_t)(close - host) == 4 && !strncmp(host, "[::1]", 5) &&
		       (close[1] == '\0' || close[1] == ':');
	}
	colon = strchr(host, ':');
	n = colon ? (size_t)(colon - host) : n;
	memcpy(h, host, n);
	h[n] = '\0';
	if (n && h[n - 1] == '.')
		h[--n] = '\0';
	if (!strcasecmp(h, "localhost") ||
	    (n > 10 && !strcasecmp(h + n - 10, ".localhost")))
		return 1;
	return inet_pton(AF_INET, h, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

/* Whether a Host value, with or without its port, is in --allowed-hosts. */
static int host_listed(const struct access *a, const char *host)
{
	const char *colon = host[0] == '[' ? strstr(host, "]:") : strchr(host, ':');
	size_t n = colon ? (size_t)(colon - host) + (host[0] == '[') : strlen(host);

	return listed(a->allowed_hosts, host, strlen(host)) ||
	       listed(a->allowed_hosts, host, n);
}

/* Whether a browser page at the request's Origin may write: no Origin
 * (not a browser's cross-site request), the server's own origin (the
 * viewer), or one of --cors-origins. */
static int origin_allowed(const struct access *a, const struct http_req *r)
{
	const char *origin = r->header[HTTP_H_ORIGIN], *host = r->header[HTTP_H_HOST];

	if (!origin)
		return 1;
	if (host && !strncasecmp(origin, "http://", 7) && !strcasecmp(origin + 7, host))
		return 1;
	return listed(a->cors_origins, origin, strlen(origin));
}

/* ---- identity ------------------------------------------------------------------- */

static int check_origin(struct ctx *c)
{
	struct http_req *r = c->q->http;

	if (origin_allowed(c->a, r))
		return 0;
	c->q->detail = detail(c->q, "origin: %.200s may not edit; edits from a web page "
			      "need the server's own origin or one of --cors-origins",
			      r->header[HTTP_H_ORIGIN]);
	return 403;
}

static void name(struct access_who *who, const char *sub, enum access_role role,
		 enum access_via via)
{
	snprintf(who->sub, sizeof(who->sub), "%s", sub);
	who->role = role;
	who->via = via;
}

/* The credential of "Bearer <credential>" (any case, blanks around) into
 * *n bytes at the result; NULL for another scheme. */
static const char *bearer_value(const char *h, size_t *n)
{
	while (*h == ' ' || *h == '\t')
		h++;
	if (strncasecmp(h, "bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
		return NULL;
	for (h += 6; *h == ' ' || *h == '\t'; h++)
		;
	*n = strlen(h);
	while (*n && (h[*n - 1] == ' ' || h[*n - 1] == '\t'))
		(*n)--;
	return h;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A credential is configured: the edit token, or a player's JWT. */
static int bearer(struct ctx *c)
{
	const char *h = c->q->http->header[HTTP_H_AUTHORIZATION], *v;
	struct token_claims *t;
	char why[200];
	size_t n;

	if (c->a->token && http_bearer_matches(h, c->a->token)) {
		name(c->out, "admin", ACCESS_ADMIN, ACCESS_VIA_EDIT_TOKEN);
		return 0;
	}
	if (!h) {
		c->q->detail = "authorization: bearer token required";
		return 401;
	}
	if (!(v = bearer_value(h, &n))) {
		c->q->detail = "authorization: expected Bearer and a token";
		return 401;
	}
	if (!c->a->keys || (c->a->token && !memchr(v, '.', n))) {
		c->q->detail = "authorization: wrong bearer token";
		return 401;
	}
	if (!(t = http_req_alloc(c->q->http, sizeof(*t))))
		return ERR_NOMEM;
	if (token_verify(c->a->keys, v, n, now_s(), t, why, sizeof(why))) {
		c->q->detail = detail(c->q, "authorization: %s", why);
		return 401;
	}
	name(c->out, t->sub, (enum access_role)t->role, ACCESS_VIA_JWT);
	c->out->token = t;
	return 0;
}

/*
 * Who may write (docs/edits.md): with a credential configured, whoever
 * presents one; else only loopback clients that name a loopback host (or
 * an --allowed-hosts one: DNS rebinding) and come straight, not through
 * a proxy.
 */
static int check_credential(struct ctx *c)
{
	struct http_req *r = c->q->http;
	const char *host = r->header[HTTP_H_HOST];
	struct sockaddr_storage ss;

	memset(c->out, 0, sizeof(*c->out));
	if (access_has_credentials(c->a))
		return bearer(c);
	if (r->proxy) {
		c->q->detail = detail(c->q, "%s: edits through a proxy need --edit-token or "
				      "player tokens: behind a proxy every client looks local",
				      r->proxy);
		return 403;
	}
	if (host && !host_is_loopback(host) && !host_listed(c->a, host)) {
		c->q->detail = detail(c->q, "host: %.200s is not a loopback name; without "
				      "--edit-token edits need a loopback Host or one of "
				      "--allowed-hosts", host);
		return 403;
	}
	if (http_req_peer(r, &ss) == 0 && http_peer_is_loopback((const struct sockaddr *)&ss)) {
		name(c->out, "local", ACCESS_ADMIN, ACCESS_VIA_LOOPBACK);
		return 0;
	}
	c->q->detail = "edits are open to loopback clients only (no edit token is set)";
	return 403;
}

/* ---- admission: role, world, area --------------------------------------------------- */

static const char *const role_names[] = { "player", "moderator", "admin" };

static int check_role(struct ctx *c)
{
	if (c->who->role >= c->ask->need)
		return 0;
	c->q->detail = detail(c->q, "authorization: this needs the role %s; %s is a %s",
			      role_names[c->ask->need], c->who->sub, role_names[c->who->role]);
	return 403;
}

static int check_world(struct ctx *c)
{
	const struct token_claims *t = c->who->token;
	size_t i;

	if (!t || t->all_worlds)
		return 0;
	for (i = 0; i < t->nworlds; i++)
		if (t->worlds[i] == c->ask->seed)
			return 0;
	c->q->detail = detail(c->q, "authorization: world %llu is not among the token's "
			      "worlds", (unsigned long long)c->ask->seed);
	return 403;
}

/* Whether e's bounding square lies whole inside rectangle r (mm). */
static int inside(const struct edit *e, const int64_t r[4])
{
	return e->x_mm - e->radius_mm >= r[0] && e->x_mm + e->radius_mm <= r[2] &&
	       e->z_mm - e->radius_mm >= r[1] && e->z_mm + e->radius_mm <= r[3];
}

static int check_area(struct ctx *c)
{
	const struct token_claims *t = c->who->token;
	size_t k, i;

	if (!t || !t->nareas)
		return 0;
	for (k = 0; k < c->ask->nedits; k++) {
		const struct edit *e = &c->ask->edits[k];

		for (i = 0; i < t->nareas && !inside(e, t->areas[i]); i++)
			;
		if (i == t->nareas) {
			c->q->detail = detail(c->q, "authorization: edits[%zu] (x %.3f, z %.3f, "
					      "radius %.3f m) is not inside the token's area",
					      k, (double)e->x_mm / 1000, (double)e->z_mm / 1000,
					      (double)e->radius_mm / 1000);
			return 403;
		}
	}
	return 0;
}

/* ---- admission: deadline ------------------------------------------------------------- */

/*
 * When the front received the request, in ms since the epoch, from its
 * X-Request-Start: "t=" and seconds with a fraction (nginx's $msec), or an
 * integer of seconds, milliseconds or microseconds told apart by size (as
 * Heroku's router and New Relic read it). 0: none, or not that form.
 */
static uint64_t request_start_ms(const char *v)
{
	uint64_t n = 0, frac = 0, scale = 1;
	int digits = 0;

	if (!v)
		return 0;
	if (v[0] == 't' && v[1] == '=')
		v += 2;
	for (; *v >= '0' && *v <= '9' && digits < 17; v++, digits++)
		n = n * 10 + (uint64_t)(*v - '0');
	if (!digits)
		return 0;
	if (*v == '.') {
		for (v++; *v >= '0' && *v <= '9'; v++) {
			if (scale < 1000) { /* milliseconds are enough */
				frac = frac * 10 + (uint64_t)(*v - '0');
				scale *= 10;
			}
		}
		return *v || n >= 100000000000u ? 0 : n * 1000 + frac * 1000 / scale;
	}
	if (*v)
		return 0;
	return n >= 100000000000000u ? n / 1000 :   /* microseconds */
	       n >= 100000000000u ? n : n * 1000;  /* milliseconds, seconds */
}

/*
 * 503 for a write that reached this node more than --edit-deadline after
 * its front received it (X-Request-Start). Such a request waited out a
 * partition or a paused node in a socket's buffers; its client has likely
 * given up, and applying it now would change the world long after it was
 * asked, unknown to the one who asked. Refused, an edit sent through a
 * front is settled within the deadline plus the log's timeout: in the log
 * by then or never. A stamp ahead of this node's clock counts as no wait
 * (the clocks of the front and the nodes must agree to well within the
 * deadline: NTP). A request without a stamp is not judged: its upload
 * time alone says nothing of a wait.
 */
static int check_deadline(struct ctx *c)
{
	struct access *a = c->a;
	uint64_t start = request_start_ms(c->q->http->header[HTTP_H_X_REQUEST_START]);
	uint64_t now_ms, waited, mono = uv_now(a->loop);
	struct timespec ts;

	if (!a->lim.deadline_ms || !start || clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0;
	now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (now_ms <= start || (waited = now_ms - start) <= a->lim.deadline_ms)
		return 0;
	if (!a->late_said_ms || mono - a->late_said_ms >= 60000) {
		a->late_said_ms = mono;
		fprintf(stderr, "terrain-server: refused an edit that arrived %.1f s after its "
			"front received it (--edit-deadline %.1f s; the next ones this minute "
			"are not logged)\n", (double)waited / 1000.0,
			(double)a->lim.deadline_ms / 1000.0);
	}
	c->q->detail = detail(c->q, "edit arrived %.1f s after the front received it "
			      "(--edit-deadline %.1f s): not applied, retry",
			      (double)waited / 1000.0, (double)a->lim.deadline_ms / 1000.0);
	return 503;
}

/* ---- admission: budgets ----------------------------------------------------------------- */

/* The key of who's budget: the peer address as 16 bytes (IPv4 mapped into
 * IPv6) for a tokenless loopback client, else a hash of its name. */
static void budget_key(const struct http_req *r, const struct access_who *who,
		       uint8_t key[16])
{
	struct sockaddr_storage ss;
	XXH128_hash_t h;

	memset(key, 0, 16);
	if (who->via != ACCESS_VIA_LOOPBACK) {
		h = XXH3_128bits_withSeed(who->sub, strlen(who->sub), 0x617574686f72 /* author */);
		memcpy(key, &h.low64, 8);
		memcpy(key + 8, &h.high64, 8);
		return;
	}
	if (http_req_peer(r, &ss) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	}
}

/* The bucket of key, refilled to now at rate (edits/s) up to burst; a full
 * table gives up its stalest. */
static struct bucket *bucket_of(struct access *a, const uint8_t key[16], uint64_t now,
				double rate, double burst)
{
	size_t i = (size_t)XXH3_64bits(key, 16) % CLIENTS, k, stale = i;
	struct bucket *b;
	double dt;

	for (k = 0; k < 16; k++) { /* a short probe: this is a cache of budgets */
		b = &a->buckets[(i + k) % CLIENTS];
		if (b->used && !memcmp(b->key, key, 16))
			break;
		if (!b->used || b->at_ms < a->buckets[stale].at_ms)
			stale = (i + k) % CLIENTS;
		b = NULL;
	}
	if (!b) {
		b = &a->buckets[stale];
		*b = (struct bucket){ .at_ms = now, .edits = burst,
				      .area = a->lim.area_burst_m2, .used = 1 };
		memcpy(b->key, key, 16);
	}
	dt = (double)(now - b->at_ms) / 1000.0;
	b->at_ms = now;
	b->edits += dt * rate;
	if (b->edits > burst)
		b->edits = burst;
	b->area += dt * a->lim.area_m2_per_s;
	if (b->area > a->lim.area_burst_m2)
		b->area = a->lim.area_burst_m2;
	return b;
}

/* Ground area the batch's brushes cover, square metres (pi r^2 each). */
static double batch_area(const struct edit *v, size_t n)
{
	double area = 0;
	size_t k;

	for (k = 0; k < n; k++)
		area += 3.14159265358979 * ((double)v[k].radius_mm / 1000.0) *
			((double)v[k].radius_mm / 1000.0);
	return area;
}

/* who's edit rate and burst: --edit-rate's, or the token's rate when it
 * is lower (or the only one): bursts of as many seconds either way. */
static void edit_budget(const struct access *a, const struct access_who *who, double *rate,
			double *burst)
{
	double r = a->lim.edits_per_s, t = who->token ? who->token->rate : 0;
	double secs = r > 0 ? a->lim.edit_burst / r : 5;

	*rate = r;
	*burst = a->lim.edit_burst;
	if (t > 0 && (r <= 0 || t < r)) {
		*rate = t;
		*burst = t * secs;
	}
}

/*
 * Each author (or tokenless loopback address) may post its rate of edits
 * and area_m2_per_s square metres of brushes a second, in bursts of up to
 * the burst sizes; past them 429 with Retry-After. A batch larger than a
 * burst can never pass: 422. Limits of 0 are off.
 */
static int check_budget(struct ctx *c)
{
	const struct access_limits *l = &c->a->lim;
	const struct access_ask *ask = c->ask;
	double area, rate, burst;
	uint8_t key[16];
	struct bucket *b;

	edit_budget(c->a, c->who, &rate, &burst);
	if (!ask->nedits || (rate <= 0 && l->area_m2_per_s <= 0))
		return 0;
	area = batch_area(ask->edits, ask->nedits);
	if ((rate > 0 && (double)ask->nedits > burst) ||
	    (l->area_m2_per_s > 0 && area > l->area_burst_m2)) {
		c->q->detail = detail(c->q, "edits: the batch is larger than one client may send "
				      "at once (%.0f edits, %.0f km2: --edit-rate%s, --edit-area)",
				      burst, l->area_burst_m2 / 1e6,
				      rate < l->edits_per_s || l->edits_per_s <= 0 ?
				      " lowered by the token's rate" : "");
		return 422;
	}
	budget_key(c->q->http, c->who, key);
	b = bucket_of(c->a, key, uv_now(c->a->loop), rate, burst);
	if ((rate > 0 && b->edits < (double)ask->nedits) ||
	    (l->area_m2_per_s > 0 && b->area < area)) {
		c->q->detail = detail(c->q, "edits: too many edits from %s, retry later "
				      "(--edit-rate%s, --edit-area)",
				      c->who->via == ACCESS_VIA_LOOPBACK ? "this client" : c->who->sub,
				      rate < l->edits_per_s || l->edits_per_s <= 0 ?
				      " lowered by the token's rate" : "");
		return 429;
	}
	if (rate > 0)
		b->edits -= (double)ask->nedits;
	if (l->area_m2_per_s > 0)
		b->area -= area;
	return 0;
}

/* ---- the chain ------------------------------------------------------------------------- */

typedef int (*check_fn)(struct ctx *c);

static const check_fn identity[] = { check_origin, check_credential };
static const check_fn admission[] = { check_role, check_world, check_area, check_deadline,
				      check_budget };

static int run(const check_fn *fn, size_t n, struct ctx *c)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++)
		if ((rc = fn[i](c)) != 0)
			return rc;
	return 0;
}

int access_identify(struct access *a, struct req *q, struct access_who *who)
{
	struct ctx c = { a, q, who, who, NULL };

	return run(identity, ARRAY_LEN(identity), &c);
}

int access_admit(struct access *a, struct req *q, const struct access_who *who,
		 const struct access_ask *ask)
{
	struct ctx c = { a, q, NULL, who, ask };

	return run(admission, ARRAY_LEN(admission), &c);
}

int access_check(struct access *a, struct req *q, const struct access_ask *ask,
		 struct access_who *who)
{
	int rc = access_identify(a, q, who);

	return rc ? rc : access_admit(a, q, who, ask);
}

uint64_t access_cors_methods(const struct access *a, const struct req *q, uint64_t methods)
{
	return origin_allowed(a, q->http) ? methods : methods & ~REQ_M(HTTP_POST);
}

int access_has_credentials(const struct access *a)
{
	return a->token || a->keys;
}

int access_create(struct uv_loop_s *loop, const struct access_config *cfg,
		  struct access **out, char *err, size_t errlen)
{
	struct access *a;
	int rc = ERR_NOMEM;

	if (!loop || !cfg || !out)
		return ERR_INVAL;
	if (!(a = calloc(1, sizeof(*a))))
		return ERR_NOMEM;
	a->loop = loop;
	a->lim = cfg->limits;
	snprintf(err, errlen, "out of memory");
	if ((cfg->edit_token && cfg->edit_token[0] && !(a->token = strdup(cfg->edit_token))) ||
	    (cfg->cors_origins && cfg->cors_origins[0] &&
	     !(a->cors_origins = strdup(cfg->cors_origins))) ||
	    (cfg->allowed_hosts && cfg->allowed_hosts[0] &&
	     !(a->allowed_hosts = strdup(cfg->allowed_hosts))) ||
	    !(a->buckets = calloc(CLIENTS, sizeof(*a->buckets))))
		goto fail;
	if ((cfg->token_secret || cfg->token_public_key) &&
	    (rc = token_keys_create(cfg->token_secret, cfg->token_secret_len,
				    cfg->token_public_key, cfg->token_public_key_len,
				    &a->keys, err, errlen)) != 0)
		goto fail;
	*out = a;
	return 0;
fail:
	access_destroy(a);
	return rc;
}

void access_destroy(struct access *a)
{
	if (!a)
		return;
	free(a->token);
	free(a->cors_origins);
	free(a->allowed_hosts);
	free(a->buckets);
	token_keys_destroy(a->keys);
	free(a);
}
