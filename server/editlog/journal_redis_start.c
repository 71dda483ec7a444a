/*
 * journal_redis_start.c - the shared edit log's spec and start-up
 * (journal_redis_int.h): the spec and its credentials parsed; then,
 * blocking, before the server listens: find the primary (asking the
 * Sentinels for sentinel://), warn about its persistence settings, check
 * the identity, fetch the shared snapshot, and read the whole stream in
 * pages. The live connection to the primary is journal_redis_primary.c's;
 * the appends and the tail are journal_redis.c's.
 */
#include "journal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <xxhash.h>

#include "err.h"
#include "journal_redis_int.h"

static int is(const redisReply *r, int type)
{
	return r && r->type == type;
}

/* ---- the spec ----------------------------------------------------------------- */

static int parse_addr(const char *s, size_t n, struct addr *a)
{
	const char *colon = memchr(s, ':', n);
	char port[8], *end;
	long p;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(a->host) ||
	    n - (size_t)(colon - s) - 1 >= sizeof(port))
		return ERR_INVAL;
	memcpy(a->host, s, (size_t)(colon - s));
	a->host[colon - s] = '\0';
	memcpy(port, colon + 1, n - (size_t)(colon - s) - 1);
	port[n - (size_t)(colon - s) - 1] = '\0';
	p = strtol(port, &end, 10);
	if (!port[0] || *end || p < 1 || p > 65535)
		return ERR_INVAL;
	a->port = (int)p;
	return 0;
}

/* A decimal option value of ?name=V[&...] in q, else def. */
static int option(const char *q, const char *name, long max, long def, long *out)
{
	size_t n = strlen(name);
	char *end;

	*out = def;
	for (; q && *q; q = strchr(q, '&') ? strchr(q, '&') + 1 : NULL) {
		if (strncmp(q, name, n) || q[n] != '=')
			continue;
		*out = strtol(q + n + 1, &end, 10);
		return (*end && *end != '&') || end == q + n + 1 || *out < 0 || *out > max ?
		       ERR_INVAL : 0;
	}
	return 0;
}

/* Option name has the value want (q: a query string). */
static int has_value(const char *q, const char *name, const char *want)
{
	size_t n = strlen(name), w = strlen(want);

	for (; q && *q; q = strchr(q, '&') ? strchr(q, '&') + 1 : NULL)
		if (!strncmp(q, name, n) && q[n] == '=' && !strncmp(q + n + 1, want, w) &&
		    (q[n + 1 + w] == '\0' || q[n + 1 + w] == '&'))
			return 1;
	return 0;
}

static int hex(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The n bytes at s percent-decoded into out (cap bytes, NUL-terminated).
 * ERR_INVAL for a bad escape, a NUL or no room. */
static int pct_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t k, o = 0;

	for (k = 0; k < n; k++) {
		int c = (unsigned char)s[k];

		if (c == '%') {
			if (k + 2 >= n || hex(s[k + 1]) < 0 || hex(s[k + 2]) < 0)
				return ERR_INVAL;
			c = hex(s[k + 1]) * 16 + hex(s[k + 2]);
			k += 2;
		}
		if (!c || o + 1 >= cap)
			return ERR_INVAL;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* A text option ?name=V[&...] of q, percent-decoded into out: 1 when
 * given, 0 when not, ERR_INVAL when bad. */
static int text_option(const char *q, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);

	for (; q && *q; q = strchr(q, '&') ? strchr(q, '&') + 1 : NULL) {
		const char *v = q + n + 1, *amp;

		if (strncmp(q, name, n) || q[n] != '=')
			continue;
		amp = strchr(v, '&');
		return pct_decode(v, amp ? (size_t)(amp - v) : strlen(v), out, cap) ? ERR_INVAL : 1;
	}
	return 0;
}

/* USER[:PASSWORD] (n bytes at s) into cr. */
static int parse_userinfo(const char *s, size_t n, struct cred *cr)
{
	const char *colon = memchr(s, ':', n);
	size_t nu = colon ? (size_t)(colon - s) : n;

	if (pct_decode(s, nu, cr->user, sizeof(cr->user)))
		return ERR_INVAL;
	if (colon) {
		if (pct_decode(colon + 1, n - nu - 1, cr->pass, sizeof(cr->pass)))
			return ERR_INVAL;
		cr->has_pass = 1;
	}
	return 0;
}

/* A password given apart from the spec (journal_auth) into cr; refused
 * when the spec gave one too. */
static int add_password(struct cred *cr, const char *pass, const char *what, char *err,
			size_t errlen)
{
	if (!pass)
		return 0;
	if (cr->has_pass) {
		snprintf(err, errlen, "edit log: the %s password is given twice, in the spec "
			 "and apart from it (environment or file): give it once", what);
		return ERR_INVAL;
	}
	if (strlen(pass) >= sizeof(cr->pass) || !pass[0]) {
		snprintf(err, errlen, "edit log: the %s password given apart from the spec is "
			 "%s", what, pass[0] ? "longer than 255 bytes" : "empty");
		return ERR_INVAL;
	}
	snprintf(cr->pass, sizeof(cr->pass), "%s", pass);
	cr->has_pass = 1;
	return 0;
}

/* The spec as messages name it: its credentials as USER:***@. */
static void redacted_name(struct rlog *g, const char *spec, const char *rest, size_t end)
{
	const char *scheme = g->sentinel ? "sentinel://" : "redis://";
	const char *at = g->data.has_pass ? ":***@" : "@";

	if (rest == spec + strlen(scheme)) /* no USER@ in the spec */
		snprintf(g->name, sizeof(g->name), "%.*s", (int)end, spec);
	else
		snprintf(g->name, sizeof(g->name), "%s%s%s%.*s", scheme, g->data.user,
			 g->data.user[0] || g->data.has_pass ? at : "",
			 (int)(end - (size_t)(rest - spec)), rest);
}

/* The options: timeout, replicas, and for sentinel:// the Sentinels'
 * credentials. */
static int parse_options(struct rlog *g, const char *q)
{
	long v;
	int rc;

	if (option(q, "timeout", 60000, 3000, &v) || v < 10)
		return ERR_INVAL;
	g->timeout_ms = (unsigned)v;
	g->replicas_all = has_value(q, "replicas", "all");
	if (g->replicas_all)
		v = 1; /* at least the one the tail reads */
	else if (option(q, "replicas", 16, 1, &v))
		return ERR_INVAL;
	g->replicas = (int)v;
	if ((rc = text_option(q, "sentinel_user", g->sent_cred.user,
			      sizeof(g->sent_cred.user))) < 0 ||
	    (rc && !g->sentinel))
		return ERR_INVAL;
	if ((rc = text_option(q, "sentinel_password", g->sent_cred.pass,
			      sizeof(g->sent_cred.pass))) < 0 || (rc && !g->sentinel))
		return ERR_INVAL;
	g->sent_cred.has_pass = rc;
	return 0;
}

/* Credentials that cannot work: a user without a password. */
static int check_creds(const struct rlog *g, char *err, size_t errlen)
{
	if (g->data.user[0] && !g->data.has_pass) {
		snprintf(err, errlen, "edit log %s: user %s has no password (give it in the spec, "
			 "in TERRAIN_REDIS_PASSWORD or in --redis-password-file)", g->name,
			 g->data.user);
		return ERR_INVAL;
	}
	if (g->sent_cred.user[0] && !g->sent_cred.has_pass) {
		snprintf(err, errlen, "edit log %s: Sentinel user %s has no password (give it as "
			 "?sentinel_password=, in TERRAIN_SENTINEL_PASSWORD or in "
			 "--sentinel-password-file)", g->name, g->sent_cred.user);
		return ERR_INVAL;
	}
	return 0;
}

/*
 * redis://[USER[:PASSWORD]@]HOST:PORT[/DB][?timeout=MS&replicas=N|all] or
 * sentinel://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/MASTER[/DB][?...
 * &sentinel_user=U&sentinel_password=P]. USER and PASSWORD are the data
 * nodes' (percent-encoded: %40 for @, %3A for :, %2F for /).
 */
int journal_redis__parse_spec(struct rlog *g, const char *spec, const struct journal_auth *auth,
			      char *err, size_t errlen)
{
	const char *p = strchr(spec, '/') + 2, *q = strchr(spec, '?'), *slash, *comma, *at;
	size_t end = q ? (size_t)(q - spec) : strlen(spec), k;
	long v;
	int rc;

	g->sentinel = spec[0] == 's';
	for (at = NULL, k = (size_t)(p - spec); k < end && spec[k] != '/'; k++)
		if (spec[k] == '@')
			at = spec + k;
	if (at && parse_userinfo(p, (size_t)(at - p), &g->data))
		goto bad;
	if (at)
		p = at + 1;
	redacted_name(g, spec, p, end);
	slash = memchr(p, '/', end - (size_t)(p - spec));
	for (; p < (slash ? slash : spec + end); p = comma + 1) {
		comma = memchr(p, ',', (size_t)((slash ? slash : spec + end) - p));
		if (!comma)
			comma = slash ? slash : spec + end;
		if (g->nhosts == MAX_HOSTS || parse_addr(p, (size_t)(comma - p),
							 &g->hosts[g->nhosts++]))
			goto bad;
	}
	if (!g->nhosts || (!g->sentinel && g->nhosts > 1))
		goto bad;
	p = slash ? slash + 1 : spec + end;
	if (g->sentinel) {
		slash = memchr(p, '/', (size_t)(spec + end - p));
		v = (slash ? slash : spec + end) - p;
		if (v < 1 || (size_t)v >= sizeof(g->master_name))
			goto bad;
		snprintf(g->master_name, sizeof(g->master_name), "%.*s", (int)v, p);
		p = slash ? slash + 1 : spec + end;
	}
	if (p < spec + end) {
		char *e;

		g->db = (int)strtol(p, &e, 10);
		if (e != spec + end || g->db < 0 || g->db > 15)
			goto bad;
	}
	if (parse_options(g, q ? q + 1 : NULL))
		goto bad;
	if ((rc = add_password(&g->data, auth ? auth->password : NULL, "Redis", err, errlen)) ||
	    (rc = add_password(&g->sent_cred, auth ? auth->sentinel_password : NULL, "Sentinel",
			       err, errlen)))
		return rc;
	if (g->sent_cred.has_pass && !g->sentinel) {
		snprintf(err, errlen, "edit log %s: a Sentinel password, but no sentinel:// spec",
			 g->name);
		return ERR_INVAL;
	}
	return check_creds(g, err, errlen);
bad:
	snprintf(err, errlen, "edit log: bad spec \"%s\" (redis://[USER[:PASSWORD]@]HOST:PORT[/DB]"
		 " or sentinel://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]/MASTER[/DB], options "
		 "?timeout=MS&replicas=N|all, for sentinel:// also &sentinel_user=U&sentinel_password=P;"
		 " docs/cluster.md)", g->name[0] ? g->name : "(not shown: it has a password)");
	return ERR_INVAL;
}

/* ---- start-up: blocking, before the server listens --------------------------- */

int journal_redis__auth_error(const char *reply)
{
	return !strncmp(reply, "WRONGPASS", 9) || !strncmp(reply, "NOAUTH", 6) ||
	       !strncmp(reply, "NOPERM", 6) || strstr(reply, "without any password configured");
}

/* What to do about an answer of auth_error() of a data node (or of a
 * Sentinel), for the operator. */
static const char *auth_hint(const char *reply, int sentinel)
{
	if (!strncmp(reply, "NOPERM", 6))
		return "; the user lacks a permission the node needs (docs/cluster.md, "
		       "\"Credentials\": the ACL rules)";
	if (!strncmp(reply, "NOAUTH", 6))
		return sentinel ? "; the Sentinel wants a password: ?sentinel_password= in the "
				  "spec, TERRAIN_SENTINEL_PASSWORD or --sentinel-password-file "
				  "(docs/cluster.md)" :
		       "; it wants a password: USER:PASSWORD@ in the spec, "
		       "TERRAIN_REDIS_PASSWORD or --redis-password-file (docs/cluster.md)";
	return "; check the user and password (docs/cluster.md, \"Credentials\")";
}

/* AUTH [user] password on a new context, when cr has one: 0, or -1 with
 * err set (g->fatal for wrong credentials). */
static int sync_auth(struct rlog *g, redisContext *c, const struct cred *cr, const char *who,
		     char *err, size_t errlen)
{
	const char *argv[3] = { "AUTH", cr->user, cr->pass };
	size_t lens[3] = { 4, strlen(cr->user), strlen(cr->pass) };
	int user = cr->user[0] != '\0';
	redisReply *r;

	if (!cr->has_pass)
		return 0;
	r = redisCommandArgv(c, 2 + user, user ? argv : (const char *[]){ "AUTH", cr->pass },
			     user ? lens : (size_t[]){ 4, lens[2] });
	if (is(r, REDIS_REPLY_STATUS)) {
		freeReplyObject(r);
		return 0;
	}
	if (is(r, REDIS_REPLY_ERROR) && journal_redis__auth_error(r->str))
		g->fatal = 1;
	snprintf(err, errlen, "%s: AUTH%s%s: %s%s", who, user ? " as " : "", cr->user,
		 r ? r->str : c->errstr,
		 is(r, REDIS_REPLY_ERROR) ? auth_hint(r->str, cr == &g->sent_cred) : "");
	freeReplyObject(r);
	return -1;
}

static redisContext *sync_open(const struct rlog *g, const struct addr *a, char *err,
			       size_t errlen)
{
	struct timeval tv = { g->timeout_ms / 1000, (g->timeout_ms % 1000) * 1000 };
	redisContext *c = redisConnectWithTimeout(a->host, a->port, tv);

	if (!c || c->err) {
		snprintf(err, errlen, "%s:%d: %s", a->host, a->port, c ? c->errstr : "out of memory");
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	return c;
}

static redisContext *sync_connect(struct rlog *g, const struct addr *a, char *err,
				  size_t errlen)
{
	redisContext *c = sync_open(g, a, err, errlen);
	char who[300];
	redisReply *r;

	if (!c)
		return NULL;
	snprintf(who, sizeof(who), "%s:%d", a->host, a->port);
	if (sync_auth(g, c, &g->data, who, err, errlen)) {
		redisFree(c);
		return NULL;
	}
	r = redisCommand(c, "SELECT %d", g->db);
	if (!is(r, REDIS_REPLY_STATUS)) {
		if (is(r, REDIS_REPLY_ERROR) && journal_redis__auth_error(r->str))
			g->fatal = 1;
		snprintf(err, errlen, "%s:%d: SELECT %d: %s%s", a->host, a->port, g->db,
			 r ? r->str : c->errstr, is(r, REDIS_REPLY_ERROR) ? auth_hint(r->str, 0) : "");
		freeReplyObject(r);
		redisFree(c);
		return NULL;
	}
	freeReplyObject(r);
	return c;
}

/* A command's reply, or NULL with the error (or error reply) in err;
 * g->fatal set for an error reply no wait mends (g may be NULL: not);
 * sentinel: c is a Sentinel's. */
static redisReply *sync_cmd_of(struct rlog *g, int sentinel, redisContext *c, char *err,
			       size_t errlen, const char *fmt, va_list ap)
{
	redisReply *r = redisvCommand(c, fmt, ap);

	if (!r || r->type == REDIS_REPLY_ERROR) {
		if (g && r && journal_redis__auth_error(r->str))
			g->fatal = 1;
		snprintf(err, errlen, "%s%s", r ? r->str : c->errstr,
			 g && r && journal_redis__auth_error(r->str) ? auth_hint(r->str, sentinel) :
			 "");
		freeReplyObject(r);
		return NULL;
	}
	return r;
}

static redisReply *sync_cmd(redisContext *c, char *err, size_t errlen, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = sync_cmd_of(NULL, 0, c, err, errlen, fmt, ap);
	va_end(ap);
	return r;
}

/* sync_cmd() of a command the node cannot do without: a refusal of
 * permission is fatal. sentinel: c is a Sentinel's. */
static redisReply *sync_need(struct rlog *g, int sentinel, redisContext *c, char *err,
			     size_t errlen, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = sync_cmd_of(g, sentinel, c, err, errlen, fmt, ap);
	va_end(ap);
	return r;
}

/* Ask Sentinel k for the primary into g->master: 0, or -1 with err. */
static int sync_ask_sentinel(struct rlog *g, size_t k, char *err, size_t errlen)
{
	const struct addr *a = &g->hosts[k];
	redisContext *s = sync_open(g, a, err, errlen);
	char who[300];
	redisReply *r;
	int rc = -1;

	if (!s) {
		snprintf(who, sizeof(who), "sentinel %s", err);
		snprintf(err, errlen, "%s", who);
		return -1;
	}
	snprintf(who, sizeof(who), "sentinel %s:%d", a->host, a->port);
	if (sync_auth(g, s, &g->sent_cred, who, err, errlen)) {
		redisFree(s);
		return -1;
	}
	r = sync_need(g, 1, s, err, errlen, "SENTINEL get-master-addr-by-name %s", g->master_name);
	if (is(r, REDIS_REPLY_ARRAY) && r->elements == 2 && is(r->element[0], REDIS_REPLY_STRING) &&
	    is(r->element[1], REDIS_REPLY_STRING)) {
		snprintf(g->master.host, sizeof(g->master.host), "%s", r->element[0]->str);
		g->master.port = atoi(r->element[1]->str);
		rc = 0;
	} else if (r) {
		snprintf(err, errlen, "%s: no master named %s", who, g->master_name);
	} else {
		char why[256];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s: %s", who, why);
	}
	freeReplyObject(r);
	redisFree(s);
	return rc;
}

/* The primary: asked of each Sentinel in turn, or the one host. */
static redisContext *sync_master(struct rlog *g, char *err, size_t errlen)
{
	redisContext *c;
	redisReply *r;
	size_t k;

	if (!g->sentinel) {
		g->master = g->hosts[0];
	} else {
		for (k = 0; k < g->nhosts && sync_ask_sentinel(g, k, err, errlen); k++)
			;
		if (k == g->nhosts)
			return NULL;
	}
	if (!(c = sync_connect(g, &g->master, err, errlen)))
		return NULL;
	r = sync_need(g, 0, c, err, errlen, "ROLE");
	if (!r || !journal_redis__role_master(g, r)) {
		if (r)
			snprintf(err, errlen, "%s:%d is not a primary", g->master.host,
				 g->master.port);
		else
			snprintf(err + strlen(err), errlen - strlen(err), " (ROLE on %s:%d)",
				 g->master.host, g->master.port);
		freeReplyObject(r);
		redisFree(c);
		return NULL;
	}
	freeReplyObject(r);
	return c;
}

/* Warn when a CONFIG value is not the one docs/cluster.md requires. */
static void want_config(redisContext *c, const struct addr *a, const char *key,
			const char *want, const char *why)
{
	char err[160];
	redisReply *r = sync_cmd(c, err, sizeof(err), "CONFIG GET %s", key);

	if (!is(r, REDIS_REPLY_ARRAY) || r->elements != 2)
		fprintf(stderr, "terrain-server: warning: edit log: %s:%d: cannot read %s (%s); "
			"it must be %s: %s\n", a->host, a->port, key, r ? "no such setting" : err,
			want, why);
	else if (strcmp(r->element[1]->str, want))
		fprintf(stderr, "terrain-server: warning: edit log: %s:%d: %s is %s, not %s: %s\n",
			a->host, a->port, key, r->element[1]->str, want, why);
	freeReplyObject(r);
}

/* The first node records the identity; the others must have the same. */
static int check_identity(struct rlog *g, redisContext *c, char *msg, size_t cap)
{
	const char *mine = g->identity, *theirs, *a, *b;
	redisReply *r = sync_need(g, 0, c, msg, cap, "SET %s %s NX", KEY_IDENTITY, mine), *got;
	int rc = 0;

	if (!r)
		return ERR_IO;
	freeReplyObject(r);
	if (!(got = sync_need(g, 0, c, msg, cap, "GET %s", KEY_IDENTITY)) ||
	    !is(got, REDIS_REPLY_STRING)) {
		freeReplyObject(got);
		return ERR_IO;
	}
	theirs = got->str;
	for (a = mine, b = theirs; *a || *b;) { /* the first line that differs */
		size_t na = strcspn(a, "\n"), nb = strcspn(b, "\n");

		if (na != nb || memcmp(a, b, na))
			break;
		a += na + (a[na] == '\n');
		b += nb + (b[nb] == '\n');
	}
	if (*a || *b) {
		snprintf(msg, cap, "edit log %.200s: this node would serve another world than the "
			 "one its first node recorded: here \"%.*s\", in the log \"%.*s\" (the "
			 "golden line names the build's self-check tiles, the others each "
			 "generator's fingerprint); start every node with the same build and "
			 "--presets, or use another log", g->name, (int)strcspn(a, "\n"),
			 *a ? a : "(nothing more)", (int)strcspn(b, "\n"), *b ? b : "(nothing more)");
		rc = ERR_INVAL;
	}
	freeReplyObject(got);
	return rc;
}

/* Every entry of the stream of c, in pages, through cb. */
/* The check of journal_redis__check_cmd() for a read from id, on c:
 * 1 held, 0 not (behind the trim), -1 no answer (msg). */
static int sync_check(struct rlog *g, redisContext *c, const char *id, char *msg, size_t cap)
{
	const char *argv[4];
	size_t lens[4];
	int n = journal_redis__check_cmd(id, 1, argv, lens), ok;
	redisReply *r = redisCommandArgv(c, n, argv, lens);

	if (!r || is(r, REDIS_REPLY_ERROR)) {
		if (r && journal_redis__auth_error(r->str))
			g->fatal = 1;
		snprintf(msg, cap, "%s", r ? r->str : c->errstr);
		freeReplyObject(r);
		return -1;
	}
	ok = journal_redis__check_ok(id, 1, r);
	freeReplyObject(r);
	return ok;
}

/*
 * Every entry of the stream of c after last_id ("0-0": all), in pages,
 * through cb. Behind each page the check that the log still holds where
 * the page began (as the tail does): when it does not, the log was
 * trimmed past this node's snapshot (one newer was shared meanwhile):
 * the page is dropped and *behind set; the live tail then restores.
 */
static int read_all(struct rlog *g, redisContext *c, journal_record_fn cb, void *arg,
		    int *behind, char *msg, size_t cap)
{
	char start[64], from[48];
	redisReply *r;
	size_t k, n;
	int rc = 0, held;

	*behind = 0;
	do {
		snprintf(from, sizeof(from), "%s", g->last_id);
		snprintf(start, sizeof(start), strcmp(from, "0-0") ? "(%s" : "-", from);
		if (!(r = sync_need(g, 0, c, msg, cap, "XRANGE %s %s + COUNT " STR(PAGE), KEY_LOG,
				      start)))
			return ERR_IO;
		if ((held = sync_check(g, c, from, msg, cap)) <= 0) {
			freeReplyObject(r);
			*behind = held == 0;
			return held == 0 ? 0 : ERR_IO;
		}
		n = is(r, REDIS_REPLY_ARRAY) ? r->elements : 0;
		for (k = 0; k < n && !rc; k++) {
			const redisReply *rec, *tag;
			const char *id;

			if ((rc = journal_redis__entry_fields(r->element[k], &id, &rec, &tag)) != 0) {
				snprintf(msg, cap, "edit log %.200s: entry after %s is not a batch",
					 g->name, g->last_id);
				break;
			}
			rc = cb(arg, (const uint8_t *)rec->str, rec->len);
			snprintf(g->last_id, sizeof(g->last_id), "%s", id);
			g->entries++;
		}
		freeReplyObject(r);
	} while (!rc && n == PAGE);
	return rc;
}

/* The chunks of the snapshot m names, into buf: 0, ERR_AGAIN (one is
 * gone: a newer snapshot replaced it), ERR_IO with err. */
static int sync_chunks(redisContext *c, const struct snap_meta *m, uint8_t *buf, char *err,
		       size_t errlen)
{
	size_t asked = 0, got = 0;
	int rc = 0;

	while (got < m->chunks) {
		redisReply *r;
		size_t off = got * m->csize, want = m->bytes - off < m->csize ?
						    m->bytes - off : m->csize;

		for (; asked < m->chunks && asked - got < 4 * SNAP_WINDOW; asked++) {
			char field[24];

			snprintf(field, sizeof(field), "%zu", asked);
			redisAppendCommandArgv(c, 3, (const char *[]){ "HGET", m->key, field },
					       (size_t[]){ 4, strlen(m->key), strlen(field) });
		}
		if (redisGetReply(c, (void **)&r) != REDIS_OK) {
			snprintf(err, errlen, "%s", c->errstr);
			return ERR_IO;
		}
		if (!rc && (!is(r, REDIS_REPLY_STRING) || r->len != want))
			rc = ERR_AGAIN; /* read the answers still due, then retry */
		if (!rc)
			memcpy(buf + off, r->str, want);
		freeReplyObject(r);
		got++;
	}
	return rc;
}

int journal_redis__snapshot_get(void *be, uint8_t **buf, size_t *len, char *err,
				size_t errlen)
{
	struct rlog *g = be;
	redisContext *m = sync_master(g, err, errlen);
	size_t lens[META_ARGC], k;
	struct snap_meta meta;
	redisReply *r;
	uint8_t *b = NULL;
	int rc = ERR_IO, tries;

	if (!m)
		return ERR_IO;
	for (k = 0; k < META_ARGC; k++)
		lens[k] = strlen(journal_redis__meta_argv[k]);
	for (tries = 0; tries < 5; tries++) {
		if ((r = sync_need(g, 0, m, err, errlen, "HGET %s trim", KEY_META)))
			g->trimmed = is(r, REDIS_REPLY_STRING);
		freeReplyObject(r);
		r = redisCommandArgv(m, META_ARGC, (const char **)journal_redis__meta_argv, lens);
		rc = r && !is(r, REDIS_REPLY_ERROR) ? journal_redis__meta(r, &meta) : ERR_IO;
		if (rc == ERR_IO)
			snprintf(err, errlen, "%s", r ? r->str : m->errstr);
		else if (rc == ERR_CORRUPT)
			snprintf(err, errlen, "%s: not a snapshot's description", KEY_META);
		freeReplyObject(r);
		if (rc)
			break;
		free(b);
		if (!(b = malloc(meta.bytes))) {
			rc = ERR_NOMEM;
			snprintf(err, errlen, "out of memory");
			break;
		}
		if ((rc = sync_chunks(m, &meta, b, err, errlen)) == ERR_AGAIN)
			continue;
		if (!rc && XXH3_64bits(b, meta.bytes) != meta.sum) {
			snprintf(err, errlen, "%s: checksum mismatch", meta.key);
			rc = ERR_CORRUPT;
		}
		break;
	}
	if (rc == ERR_AGAIN)
		snprintf(err, errlen, "it kept changing while read");
	redisFree(m);
	if (rc) {
		free(b);
		return rc == ERR_AGAIN ? ERR_IO : rc;
	}
	*buf = b;
	*len = meta.bytes;
	return 0;
}

int journal_redis__replay(void *be, journal_record_fn cb, void *arg,
		     struct journal_replay_stats *st)
{
	struct rlog *g = be;
	char *msg = st->message;
	size_t cap = sizeof(st->message);
	redisContext *m = NULL, *src;
	const struct addr *at;
	int rc, i, behind = 0;

	for (i = 0; !(m = sync_master(g, msg, cap)) && !g->fatal && i < START_WAIT_S; i++) {
		if (i == 0)
			fprintf(stderr, "terrain-server: edit log %s: %s; waiting up to %d s\n",
				g->name, msg, START_WAIT_S);
		sleep(1);
	}
	if (!m) {
		snprintf(msg + strlen(msg), cap - strlen(msg), " (edit log %s)", g->name);
		return ERR_IO;
	}
	want_config(m, &g->master, "appendonly", "yes", "acknowledged edits would live "
		    "in memory only");
	want_config(m, &g->master, "appendfsync", "always", "an acknowledged edit may be "
		    "lost with the primary's machine");
	if ((rc = check_identity(g, m, msg, cap)) != 0) {
		redisFree(m);
		return rc;
	}
	/* read what the tail will read: a replica's copy */
	if (!(at = journal_redis__tail_target(g))) {
		fprintf(stderr, "terrain-server: warning: edit log %s: no replica online; "
			"replaying from the primary, and edits wait for a replica\n", g->name);
		at = &g->master;
	}
	src = journal_redis__same_addr(at, &g->master) ? m : sync_connect(g, at, msg, cap);
	if (src && src != m)
		want_config(src, at, "replica-serve-stale-data", "no", "a replica cut off "
			    "from its primary would hand nodes what the new primary may lack");
	rc = src ? read_all(g, src, cb, arg, &behind, msg, cap) : ERR_IO;
	if (src && src != m)
		redisFree(src);
	redisFree(m);
	if (rc == 0)
		journal_redis__start_live(g);
	if (rc == 0 && behind)
		journal_redis__fell_behind(g);
	else if (rc == ERR_IO)
		snprintf(msg + strlen(msg), cap - strlen(msg), " (edit log %s)", g->name);
	return rc;
}
