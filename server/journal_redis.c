/*
 * journal_redis.c - the shared edit log in Redis: one stream that every
 * node appends to and every node reads, so that N nodes serve one world
 * (docs/cluster.md; the interface is journal.h).
 *
 * Keys (in database DB of the spec):
 *   terrain:log       a stream; one entry per batch: r (the canonical
 *                     record, common/batch.h), o (who appended it)
 *   terrain:heads     a hash: world ("gen:seed") -> its last sequence
 *   terrain:identity  what every node must agree on (journal_open())
 *
 * An append runs one Lua script (EVALSHA) that gives the batch the next
 * sequence numbers of its world, writes them into the record, adds it to
 * the stream and moves the head: Redis runs scripts one at a time, so the
 * order is global and no two nodes can take one sequence. Appends made in
 * one turn of the loop go together, followed by one WAIT for a replica
 * (group commit). An append is done when WAIT confirmed it and this
 * node's tail has read it back and followed it: the tail (XREAD BLOCK on
 * its own connection) reads from an online replica when there is one, so
 * that a node applies only what a replica has, and delivers every entry,
 * its own included, to journal_deliver() in stream order.
 *
 * Start-up (the replay) is synchronous: find the primary (asking the
 * Sentinels for sentinel://), warn about its persistence settings, check
 * the identity, read the whole stream in pages. Then the live connections
 * (redis_conn.h) start on the loop: one to the primary for appends and a
 * heartbeat (ROLE, XLEN), the tail, and one to a Sentinel.
 */
#include "journal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "batch.h"
#include "err.h"
#include "redis_conn.h"
#include "util.h"

#define KEY_LOG      "terrain:log"
#define KEY_HEADS    "terrain:heads"
#define KEY_IDENTITY "terrain:identity"
#define MAX_HOSTS    8
#define MAX_REPLICAS 8
#define PAGE         4096           /* entries per XRANGE / XREAD */
#define BLOCK_MS     1000           /* XREAD BLOCK */
#define STR(x)       STR_(x)
#define STR_(x)      #x
#define BEAT_MS      1000           /* heartbeat: ROLE, XLEN */
#define START_WAIT_S 30             /* start-up: wait for Redis this long */
#define MAX_QUEUED   (16u << 20)    /* bytes of appends not yet done */

/* Give the batch its world's next sequence numbers and log it. KEYS: log,
 * heads; ARGV: world, record, origin, edits, offset of first_seq. */
static const char script[] =
	"local head = tonumber(redis.call('HGET', KEYS[2], ARGV[1])) or 0\n"
	"local v, b = head + 1, {}\n"
	"for i = 1, 8 do b[i] = string.char(v % 256); v = math.floor(v / 256) end\n"
	"local off = tonumber(ARGV[5])\n"
	"local rec = string.sub(ARGV[2], 1, off) .. table.concat(b) ..\n"
	"            string.sub(ARGV[2], off + 9)\n"
	"local id = redis.call('XADD', KEYS[1], '*', 'r', rec, 'o', ARGV[3])\n"
	"redis.call('HSET', KEYS[2], ARGV[1], head + tonumber(ARGV[4]))\n"
	"return {head + 1, id}\n";

struct addr {
	char host[256];
	int port;
};

/* One append, from journal_append() to its done. */
struct rappend {
	struct rappend *prev, *next;     /* the log's list, in order */
	struct rlog *g;
	void (*done)(void *arg, int status);
	void *arg;
	uint64_t tag, deadline, group;
	int in_cmd;                      /* its script's reply is due */
	int logged, acked, followed, orphan;
	char world[300];
	size_t len;
	uint8_t rec[];
};

struct rlog {
	struct uv_loop_s *loop;
	struct journal *l;
	char name[128];                  /* the spec without options */
	int sentinel;                    /* hosts are Sentinels */
	struct addr hosts[MAX_HOSTS];
	size_t nhosts, next_host, tail_next;
	char master_name[128];
	int db, replicas;                /* WAIT replicas; 0: none */
	unsigned timeout_ms;
	char *identity;
	char node[17];                   /* this process, in origin tags */
	char sha[48];

	struct redis_conn cmd, tail, sent;   /* primary, tail, a Sentinel */
	struct addr master, tail_at;
	struct addr replica[MAX_REPLICAS];   /* online, from ROLE */
	size_t nreplica;
	int cmd_ready, tail_ready, waiting, beat_due, stopped;
	int cmd_said, tail_said, wait_said;  /* an outage was reported */
	int closing;
	char last_id[48];                /* last entry followed */

	struct rappend *head, *end, *unsent;
	size_t queued;                   /* bytes */
	uint64_t tags, group, commits, last_commit, entries, log_len, rtt_us;
	uint64_t beat_sent;              /* uv_hrtime() of the heartbeat's ROLE */
	uv_check_t *flush;
	uv_timer_t *expiry, *beat;
};

static void cmd_connect(struct redis_conn *c);
static void tail_connect(struct redis_conn *c);
static void flush(struct rlog *g);

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

/*
 * redis://HOST:PORT[/DB][?timeout=MS&replicas=N] or
 * sentinel://HOST:PORT[,HOST:PORT...]/MASTER[/DB][?...].
 */
static int parse_spec(struct rlog *g, const char *spec, char *err, size_t errlen)
{
	const char *p = strchr(spec, '/') + 2, *q = strchr(spec, '?'), *slash, *comma;
	size_t end = q ? (size_t)(q - spec) : strlen(spec);
	long v;

	g->sentinel = spec[0] == 's';
	snprintf(g->name, sizeof(g->name), "%.*s", (int)end, spec);
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
	if (option(q ? q + 1 : NULL, "timeout", 60000, 1000, &v) || v < 10)
		goto bad;
	g->timeout_ms = (unsigned)v;
	if (option(q ? q + 1 : NULL, "replicas", 16, 1, &v))
		goto bad;
	g->replicas = (int)v;
	return 0;
bad:
	snprintf(err, errlen, "edit log: bad spec \"%s\" (redis://HOST:PORT[/DB] or "
		 "sentinel://HOST:PORT[,HOST:PORT...]/MASTER[/DB], options ?timeout=MS"
		 "&replicas=N)", spec);
	return ERR_INVAL;
}

/* ---- replies ------------------------------------------------------------------ */

static int is(const redisReply *r, int type)
{
	return r && r->type == type;
}

/* Entry [id, [field, value, ...]] of a stream: its id, r and o. */
static int entry_fields(const redisReply *e, const char **id, const redisReply **rec,
			const redisReply **tag)
{
	size_t k;

	*rec = *tag = NULL;
	if (!is(e, REDIS_REPLY_ARRAY) || e->elements != 2 ||
	    !is(e->element[0], REDIS_REPLY_STRING) || !is(e->element[1], REDIS_REPLY_ARRAY))
		return ERR_CORRUPT;
	*id = e->element[0]->str;
	for (k = 0; k + 1 < e->element[1]->elements; k += 2) {
		const redisReply *f = e->element[1]->element[k], *v = e->element[1]->element[k + 1];

		if (!is(f, REDIS_REPLY_STRING) || !is(v, REDIS_REPLY_STRING))
			return ERR_CORRUPT;
		if (!strcmp(f->str, "r"))
			*rec = v;
		else if (!strcmp(f->str, "o"))
			*tag = v;
	}
	return *rec ? 0 : ERR_CORRUPT;
}

/* ROLE: whether the server is a primary; its online replicas into g. */
static int role_master(struct rlog *g, const redisReply *r)
{
	const redisReply *v;
	size_t k;

	if (!is(r, REDIS_REPLY_ARRAY) || r->elements < 3 ||
	    !is(r->element[0], REDIS_REPLY_STRING) || strcmp(r->element[0]->str, "master"))
		return 0;
	v = r->element[2];
	g->nreplica = 0;
	for (k = 0; is(v, REDIS_REPLY_ARRAY) && k < v->elements && g->nreplica < MAX_REPLICAS;
	     k++) {
		const redisReply *s = v->element[k];
		struct addr *a = &g->replica[g->nreplica];

		if (!is(s, REDIS_REPLY_ARRAY) || s->elements < 2 ||
		    !is(s->element[0], REDIS_REPLY_STRING) || !is(s->element[1], REDIS_REPLY_STRING))
			continue;
		snprintf(a->host, sizeof(a->host), "%s", s->element[0]->str);
		a->port = atoi(s->element[1]->str);
		if (a->port > 0)
			g->nreplica++;
	}
	return 1;
}

static int same_addr(const struct addr *a, const struct addr *b)
{
	return a->port == b->port && !strcmp(a->host, b->host);
}

/*
 * Where the tail reads. When a replica must confirm appends: an online
 * replica only (the one it reads, while the primary lists it), so that a
 * node never applies what the primary alone has and a failover may lose;
 * none while no replica is online (appends cannot be confirmed then
 * anyway). Else the primary.
 */
static const struct addr *tail_target(const struct rlog *g)
{
	size_t k;

	if (g->replicas == 0)
		return g->master.port ? &g->master : NULL;
	for (k = 0; k < g->nreplica; k++)
		if (same_addr(&g->replica[k], &g->tail_at))
			return &g->replica[k];
	return g->nreplica ? &g->replica[g->tail_next % g->nreplica] : NULL;
}

/* ---- start-up: blocking, before the server listens --------------------------- */

static redisContext *sync_connect(const struct rlog *g, const struct addr *a, char *err,
				  size_t errlen)
{
	struct timeval tv = { g->timeout_ms / 1000, (g->timeout_ms % 1000) * 1000 };
	redisContext *c = redisConnectWithTimeout(a->host, a->port, tv);
	redisReply *r;

	if (!c || c->err) {
		snprintf(err, errlen, "%s:%d: %s", a->host, a->port, c ? c->errstr : "out of memory");
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	r = redisCommand(c, "SELECT %d", g->db);
	if (!is(r, REDIS_REPLY_STATUS)) {
		snprintf(err, errlen, "%s:%d: SELECT %d: %s", a->host, a->port, g->db,
			 r ? r->str : c->errstr);
		freeReplyObject(r);
		redisFree(c);
		return NULL;
	}
	freeReplyObject(r);
	return c;
}

/* A command's reply, or NULL with the error (or error reply) in err. */
static redisReply *sync_cmd(redisContext *c, char *err, size_t errlen, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (!r || r->type == REDIS_REPLY_ERROR) {
		snprintf(err, errlen, "%s", r ? r->str : c->errstr);
		freeReplyObject(r);
		return NULL;
	}
	return r;
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
		for (k = 0; k < g->nhosts; k++) {
			struct timeval tv = { g->timeout_ms / 1000, (g->timeout_ms % 1000) * 1000 };
			redisContext *s = redisConnectWithTimeout(g->hosts[k].host, g->hosts[k].port, tv);

			if (!s || s->err) {
				snprintf(err, errlen, "sentinel %s:%d: %s", g->hosts[k].host,
					 g->hosts[k].port, s ? s->errstr : "out of memory");
				redisFree(s);
				continue;
			}
			redisSetTimeout(s, tv);
			r = sync_cmd(s, err, errlen, "SENTINEL get-master-addr-by-name %s",
				     g->master_name);
			redisFree(s);
			if (is(r, REDIS_REPLY_ARRAY) && r->elements == 2 &&
			    is(r->element[0], REDIS_REPLY_STRING) &&
			    is(r->element[1], REDIS_REPLY_STRING)) {
				snprintf(g->master.host, sizeof(g->master.host), "%s", r->element[0]->str);
				g->master.port = atoi(r->element[1]->str);
				freeReplyObject(r);
				break;
			}
			if (r)
				snprintf(err, errlen, "sentinel %s:%d: no master named %s",
					 g->hosts[k].host, g->hosts[k].port, g->master_name);
			freeReplyObject(r);
		}
		if (k == g->nhosts)
			return NULL;
	}
	if (!(c = sync_connect(g, &g->master, err, errlen)))
		return NULL;
	r = sync_cmd(c, err, errlen, "ROLE");
	if (!r || !role_master(g, r)) {
		if (r)
			snprintf(err, errlen, "%s:%d is not a primary", g->master.host,
				 g->master.port);
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
	redisReply *r = sync_cmd(c, msg, cap, "SET %s %s NX", KEY_IDENTITY, mine), *got;
	int rc = 0;

	freeReplyObject(r);
	if (!(got = sync_cmd(c, msg, cap, "GET %s", KEY_IDENTITY)) ||
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
		snprintf(msg, cap, "edit log %s: this node would serve another world than the "
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
static int read_all(struct rlog *g, redisContext *c, journal_record_fn cb, void *arg,
		    char *msg, size_t cap)
{
	char start[64] = "-";
	redisReply *r;
	size_t k, n;
	int rc = 0;

	do {
		if (!(r = sync_cmd(c, msg, cap, "XRANGE %s %s + COUNT " STR(PAGE), KEY_LOG,
				     start)))
			return ERR_IO;
		n = is(r, REDIS_REPLY_ARRAY) ? r->elements : 0;
		for (k = 0; k < n && !rc; k++) {
			const redisReply *rec, *tag;
			const char *id;

			if ((rc = entry_fields(r->element[k], &id, &rec, &tag)) != 0) {
				snprintf(msg, cap, "edit log %s: entry after %s is not a batch",
					 g->name, g->last_id);
				break;
			}
			rc = cb(arg, (const uint8_t *)rec->str, rec->len);
			snprintf(g->last_id, sizeof(g->last_id), "%s", id);
			g->entries++;
		}
		snprintf(start, sizeof(start), "(%s", g->last_id);
		freeReplyObject(r);
	} while (!rc && n == PAGE);
	return rc;
}

static void start_live(struct rlog *g);

static int rl_replay(void *be, journal_record_fn cb, void *arg,
		     struct journal_replay_stats *st)
{
	struct rlog *g = be;
	char *msg = st->message;
	size_t cap = sizeof(st->message);
	redisContext *m = NULL, *src;
	const struct addr *at;
	int rc, i;

	for (i = 0; !(m = sync_master(g, msg, cap)) && i < START_WAIT_S; i++) {
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
	if (!(at = tail_target(g))) {
		fprintf(stderr, "terrain-server: warning: edit log %s: no replica online; "
			"replaying from the primary, and edits wait for a replica\n", g->name);
		at = &g->master;
	}
	src = same_addr(at, &g->master) ? m : sync_connect(g, at, msg, cap);
	if (src && src != m)
		want_config(src, at, "replica-serve-stale-data", "no", "a replica cut off "
			    "from its primary would hand nodes what the new primary may lack");
	rc = src ? read_all(g, src, cb, arg, msg, cap) : ERR_IO;
	if (src && src != m)
		redisFree(src);
	redisFree(m);
	if (rc == 0)
		start_live(g);
	else if (rc == ERR_IO)
		snprintf(msg + strlen(msg), cap - strlen(msg), " (edit log %s)", g->name);
	return rc;
}

/* ---- appends ------------------------------------------------------------------- */

static void on_expiry(uv_timer_t *t);

static void arm_expiry(struct rlog *g)
{
	uint64_t now = uv_now(g->loop);

	if (!g->head)
		uv_timer_stop(g->expiry);
	else
		uv_timer_start(g->expiry, on_expiry,
			       g->head->deadline > now ? g->head->deadline - now : 0, 0);
}

/* Answer a and take it off the list (freed once its script replied). */
static void finish(struct rappend *a, int status)
{
	struct rlog *g = a->g;

	if (g->unsent == a)
		g->unsent = a->next;
	if (a->prev)
		a->prev->next = a->next;
	else
		g->head = a->next;
	if (a->next)
		a->next->prev = a->prev;
	else
		g->end = a->prev;
	g->queued -= a->len;
	a->done(a->arg, status);
	if (a->in_cmd)
		a->orphan = 1;
	else
		free(a);
	if (!g->closing)
		arm_expiry(g);
}

static void on_expiry(uv_timer_t *t)
{
	struct rlog *g = t->data;

	while (g->head && g->head->deadline <= uv_now(g->loop))
		finish(g->head, ERR_AGAIN);
	arm_expiry(g);
}

static void on_flush(uv_check_t *h)
{
	uv_check_stop(h);
	flush(h->data);
}

static int rl_append(void *be, const uint8_t *rec, size_t len, uint64_t first_seq,
		     void (*done)(void *arg, int status), void *arg)
{
	struct rlog *g = be;
	struct rappend *a;
	struct batch b;

	(void)first_seq; /* the script gives the next ones */
	if (g->stopped)
		return ERR_IO;
	if (!g->cmd_ready || !g->tail_ready)
		return ERR_AGAIN;
	if (g->queued + len > MAX_QUEUED)
		return ERR_BUSY;
	if (batch_decode(rec, len, &b))
		return ERR_INVAL;
	if (!(a = malloc(sizeof(*a) + len)))
		return ERR_BUSY;
	*a = (struct rappend){ .prev = g->end, .g = g, .done = done, .arg = arg,
			       .tag = ++g->tags, .deadline = uv_now(g->loop) + g->timeout_ms,
			       .len = len };
	snprintf(a->world, sizeof(a->world), "%.*s:%llu", (int)b.gen_len, b.gen, (ull)b.seed);
	memcpy(a->rec, rec, len);
	if (g->end)
		g->end->next = a;
	else
		g->head = a;
	g->end = a;
	if (!g->unsent)
		g->unsent = a;
	g->queued += len;
	if (g->head == a)
		arm_expiry(g);
	uv_check_start(g->flush, on_flush);
	return 0;
}

static void on_script(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rappend *a = arg;
	struct rlog *g = a->g;

	a->in_cmd = 0;
	if (a->orphan) {
		free(a);
		return;
	}
	if (!is(r, REDIS_REPLY_ARRAY) || r->elements != 2) {
		if (is(r, REDIS_REPLY_ERROR)) {
			fprintf(stderr, "terrain-server: edit log %s: append refused: %s\n",
				g->name, r->str);
			redis_conn_drop(c, r->str); /* reconnect, reload the script */
		}
		finish(a, ERR_AGAIN);
		return;
	}
	a->logged = 1;
	if (g->replicas > 0)
		return; /* WAIT decides */
	a->acked = 1;
	if (a->followed)
		finish(a, 0);
}

static void send_beat(struct rlog *g);

/* WAIT for group grp: enough replicas have every batch of it, or not. */
static void on_wait(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	uint64_t grp = (uint64_t)(uintptr_t)arg;
	int ok = is(r, REDIS_REPLY_INTEGER) && r->integer >= g->replicas;
	struct rappend *a, *next;

	g->waiting = 0;
	for (a = g->head; a && a != g->unsent; a = next) {
		next = a->next;
		if (a->group != grp || !a->logged)
			continue;
		a->acked = ok;
		if (!ok)
			finish(a, ERR_AGAIN);
		else if (a->followed)
			finish(a, 0);
	}
	if (r && !ok && !g->closing && !g->wait_said)
		fprintf(stderr, "terrain-server: edit log %s: no replica confirmed within %u ms; "
			"edits get 503 until one does\n", g->name, g->timeout_ms / 2);
	else if (ok && g->wait_said)
		fprintf(stderr, "terrain-server: edit log %s: a replica confirms again\n",
			g->name);
	if (r)
		g->wait_said = !ok;
	if (g->beat_due)
		send_beat(g);
	flush(g);
}

static int send_append(struct rlog *g, struct rappend *a)
{
	struct batch b;
	char tag[48], n[16], off[16];
	const char *argv[10];
	size_t lens[10];
	int k, rc;

	batch_decode(a->rec, a->len, &b);
	snprintf(tag, sizeof(tag), "%s:%llu", g->node, (ull)a->tag);
	snprintf(n, sizeof(n), "%u", (unsigned)b.count);
	snprintf(off, sizeof(off), "%zu", 2 + b.gen_len + 8);
	argv[0] = "EVALSHA", argv[1] = g->sha, argv[2] = "2", argv[3] = KEY_LOG;
	argv[4] = KEY_HEADS, argv[5] = a->world, argv[6] = (const char *)a->rec;
	argv[7] = tag, argv[8] = n, argv[9] = off;
	for (k = 0; k < 10; k++)
		lens[k] = k == 6 ? a->len : strlen(argv[k]);
	rc = redis_conn_command(&g->cmd, g->timeout_ms, on_script, a, 10, argv, lens);
	a->in_cmd = rc == 0;
	a->group = g->group;
	return rc;
}

/* Send every append not yet sent, then one WAIT for them all. */
static void flush(struct rlog *g)
{
	struct rappend *a, *next;
	uint64_t n = 0;
	char ms[16], want[16];
	const char *argv[3] = { "WAIT", want, ms };

	if (g->waiting || !g->unsent || !g->cmd_ready || g->closing)
		return;
	g->group++;
	for (a = g->unsent, g->unsent = NULL; a; a = next) {
		next = a->next;
		if (send_append(g, a))
			finish(a, ERR_AGAIN);
		else
			n++;
	}
	if (!n)
		return;
	g->commits++;
	g->last_commit = n;
	if (g->replicas == 0)
		return;
	snprintf(want, sizeof(want), "%d", g->replicas);
	snprintf(ms, sizeof(ms), "%u", g->timeout_ms / 2);
	if (redis_conn_command(&g->cmd, g->timeout_ms + g->timeout_ms / 2, on_wait,
			       (void *)(uintptr_t)g->group, 3, argv,
			       (size_t[]){ 4, strlen(want), strlen(ms) }) == 0)
		g->waiting = 1;
}

/* ---- the tail ------------------------------------------------------------------ */

/* This node's append that tag names, if it is still waiting. */
static struct rappend *own(struct rlog *g, const redisReply *tag)
{
	struct rappend *a;
	uint64_t n;

	if (!tag || tag->len < 18 || memcmp(tag->str, g->node, 16) || tag->str[16] != ':')
		return NULL;
	n = strtoull(tag->str + 17, NULL, 10);
	for (a = g->head; a && a != g->unsent; a = a->next)
		if (a->tag == n)
			return a;
	return NULL;
}

/* Follow the entries of an XREAD answer, in order. */
static void follow_entries(struct rlog *g, const redisReply *v)
{
	size_t k;

	for (k = 0; k < v->elements && !g->stopped; k++) {
		const redisReply *rec, *tag;
		struct rappend *a;
		const char *id;
		int rc;

		if ((rc = entry_fields(v->element[k], &id, &rec, &tag)) != 0) {
			fprintf(stderr, "terrain-server: edit log %s: entry after %s is not a "
				"batch\n", g->name, g->last_id);
			g->stopped = 1;
			return;
		}
		a = own(g, tag);
		rc = journal_deliver(g->l, (const uint8_t *)rec->str, rec->len, a ? a->arg : NULL);
		snprintf(g->last_id, sizeof(g->last_id), "%s", id);
		g->entries++;
		if (rc)
			g->stopped = 1;
		if (a) {
			a->followed = 1;
			if (rc || a->acked)
				finish(a, rc);
		}
	}
}

static void on_xread(struct redis_conn *c, redisReply *r, void *arg);

static void tail_read(struct rlog *g)
{
	const char *argv[] = { "XREAD", "COUNT", STR(PAGE), "BLOCK", STR(BLOCK_MS), "STREAMS",
			       KEY_LOG, g->last_id };
	size_t lens[ARRAY_LEN(argv)], k;

	for (k = 0; k < ARRAY_LEN(argv); k++)
		lens[k] = strlen(argv[k]);
	redis_conn_command(&g->tail, BLOCK_MS + g->timeout_ms, on_xread, g,
			   (int)ARRAY_LEN(argv), argv, lens); /* down retries */
}

static void on_xread(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;
	const struct addr *want;

	if (!r || g->closing)
		return;
	if (is(r, REDIS_REPLY_ERROR)) {
		redis_conn_drop(c, r->str);
		return;
	}
	if (is(r, REDIS_REPLY_ARRAY) && r->elements == 1 && is(r->element[0], REDIS_REPLY_ARRAY) &&
	    r->element[0]->elements == 2 && is(r->element[0]->element[1], REDIS_REPLY_ARRAY))
		follow_entries(g, r->element[0]->element[1]);
	if (g->stopped)
		return;
	want = tail_target(g);
	if (!want || !same_addr(want, &g->tail_at)) {
		redis_conn_ok(c);
		redis_conn_drop(c, want ? "moving to another replica" : "no replica online");
		return;
	}
	tail_read(g);
}

/* The tail's handshake: SELECT, then XLEN: it can read the stream (a
 * replica cut off from its primary cannot). */
static void on_tail_hello(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;

	if (!r || g->closing)
		return;
	if (is(r, REDIS_REPLY_ERROR)) {
		redis_conn_drop(c, r->str);
		return;
	}
	if (strcmp(arg, "XLEN"))
		return;
	g->tail_ready = 1;
	redis_conn_ok(c);
	if (g->tail_said)
		fprintf(stderr, "terrain-server: edit log %s: reading from %s:%d again\n",
			g->name, g->tail_at.host, g->tail_at.port);
	g->tail_said = 0;
}

static void tail_connect(struct redis_conn *c)
{
	struct rlog *g = c->owner;
	const struct addr *a = tail_target(g);
	char db[8];
	const char *sel[] = { "SELECT", db }, *len[] = { "XLEN", KEY_LOG };

	if (!a) {
		redis_conn_retry(c, tail_connect);
		return;
	}
	g->tail_at = *a;
	snprintf(db, sizeof(db), "%d", g->db);
	redis_conn_open(c, a->host, a->port);
	redis_conn_command(c, g->timeout_ms, on_tail_hello, "SELECT", 2, sel,
			   (size_t[]){ 6, strlen(db) });
	redis_conn_command(c, g->timeout_ms, on_tail_hello, "XLEN", 2, len,
			   (size_t[]){ 4, strlen(KEY_LOG) });
	tail_read(g);
}

static void tail_down(struct redis_conn *c, const char *why)
{
	struct rlog *g = c->owner;

	if (!g->tail_said)
		fprintf(stderr, "terrain-server: edit log %s: reading from %s:%d: %s; edits get "
			"503 until it is back\n", g->name, g->tail_at.host, g->tail_at.port, why);
	g->tail_said = 1;
	g->tail_ready = 0;
	g->tail_next++; /* another replica, when there are more */
	if (!g->stopped)
		redis_conn_retry(c, tail_connect);
}

/* ---- the primary ------------------------------------------------------------- */

static void on_role(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;
	const struct addr *want;

	if (!r || g->closing)
		return;
	if (g->beat_sent)
		g->rtt_us = (uv_hrtime() - g->beat_sent) / 1000;
	g->beat_sent = 0;
	if (!role_master(g, r)) {
		redis_conn_drop(c, "no longer the primary");
		return;
	}
	want = tail_target(g);
	if (redis_conn_up(&g->tail) && (!want || !same_addr(want, &g->tail_at)))
		redis_conn_drop(&g->tail, want ? "moving to another replica" :
				"no replica online"); /* its retry finds the next one */
}

static void on_xlen(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;

	(void)c;
	if (is(r, REDIS_REPLY_INTEGER))
		g->log_len = (uint64_t)r->integer;
}

static void send_beat(struct rlog *g)
{
	const char *role[] = { "ROLE" }, *len[] = { "XLEN", KEY_LOG };

	g->beat_due = 0;
	g->beat_sent = uv_hrtime();
	redis_conn_command(&g->cmd, g->timeout_ms, on_role, g, 1, role, (size_t[]){ 4 });
	redis_conn_command(&g->cmd, g->timeout_ms, on_xlen, g, 2, len,
			   (size_t[]){ 4, strlen(KEY_LOG) });
}

static void on_beat(uv_timer_t *t)
{
	struct rlog *g = t->data;

	if (!g->cmd_ready)
		return;
	if (g->waiting) /* behind the WAIT it would time that too */
		g->beat_due = 1;
	else
		send_beat(g);
}

/* The handshake: SELECT, ROLE (a primary?), SCRIPT LOAD; then ready. */
static void on_hello(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	const char *step = arg;

	if (!r || g->closing)
		return;
	if (is(r, REDIS_REPLY_ERROR) || (!strcmp(step, "ROLE") && !role_master(g, r))) {
		redis_conn_drop(c, is(r, REDIS_REPLY_ERROR) ? r->str : "not a primary");
		return;
	}
	if (strcmp(step, "SCRIPT"))
		return;
	if (!is(r, REDIS_REPLY_STRING) || r->len >= sizeof(g->sha)) {
		redis_conn_drop(c, "bad SCRIPT LOAD reply");
		return;
	}
	memcpy(g->sha, r->str, r->len + 1);
	g->cmd_ready = 1;
	redis_conn_ok(c);
	if (g->cmd_said)
		fprintf(stderr, "terrain-server: edit log %s: primary %s:%d, edits again\n",
			g->name, g->master.host, g->master.port);
	g->cmd_said = 0;
}

static void open_master(struct rlog *g, const struct addr *a)
{
	char db[8];
	const char *sel[] = { "SELECT", db }, *role[] = { "ROLE" };
	const char *load[] = { "SCRIPT", "LOAD", script };

	g->master = *a;
	snprintf(db, sizeof(db), "%d", g->db);
	redis_conn_open(&g->cmd, a->host, a->port);
	redis_conn_command(&g->cmd, g->timeout_ms, on_hello, "SELECT", 2, sel,
			   (size_t[]){ 6, strlen(db) });
	redis_conn_command(&g->cmd, g->timeout_ms, on_hello, "ROLE", 1, role, (size_t[]){ 4 });
	redis_conn_command(&g->cmd, g->timeout_ms, on_hello, "SCRIPT", 3, load,
			   (size_t[]){ 6, 4, sizeof(script) - 1 });
}

static void on_sentinel(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;
	struct addr a;

	if (g->closing)
		return;
	if (!is(r, REDIS_REPLY_ARRAY) || r->elements != 2 ||
	    !is(r->element[0], REDIS_REPLY_STRING) || !is(r->element[1], REDIS_REPLY_STRING)) {
		g->next_host++;
		redis_conn_drop(c, "no answer"); /* ask the next one */
		redis_conn_retry(&g->cmd, cmd_connect);
		return;
	}
	snprintf(a.host, sizeof(a.host), "%s", r->element[0]->str);
	a.port = atoi(r->element[1]->str);
	open_master(g, &a);
}

static void cmd_connect(struct redis_conn *c)
{
	struct rlog *g = c->owner;
	const struct addr *s = &g->hosts[g->next_host % g->nhosts];
	const char *argv[] = { "SENTINEL", "get-master-addr-by-name", g->master_name };

	if (!g->sentinel) {
		open_master(g, &g->hosts[0]);
		return;
	}
	if (!redis_conn_up(&g->sent))
		redis_conn_open(&g->sent, s->host, s->port);
	if (redis_conn_command(&g->sent, g->timeout_ms, on_sentinel, g, 3, argv,
			       (size_t[]){ 8, 23, strlen(g->master_name) })) {
		g->next_host++;
		redis_conn_retry(c, cmd_connect);
	}
}

static void cmd_down(struct redis_conn *c, const char *why)
{
	struct rlog *g = c->owner;

	if (!g->cmd_said)
		fprintf(stderr, "terrain-server: edit log %s: primary %s:%d: %s; edits get 503 "
			"while it reconnects\n", g->name, g->master.host, g->master.port, why);
	g->cmd_said = 1;
	g->cmd_ready = 0;
	g->waiting = 0;
	while (g->unsent)
		finish(g->unsent, ERR_AGAIN);
	redis_conn_retry(c, cmd_connect);
}

static void sent_down(struct redis_conn *c, const char *why)
{
	(void)c;
	(void)why; /* the next question opens it again */
}

/* ---- the backend --------------------------------------------------------------- */

static void start_live(struct rlog *g)
{
	uv_timer_start(g->beat, on_beat, BEAT_MS, BEAT_MS);
	cmd_connect(&g->cmd);
	tail_connect(&g->tail);
}

static void rl_stats(void *be, struct journal_stats *st)
{
	struct rlog *g = be;

	st->records = g->log_len > g->entries ? g->log_len : g->entries;
	st->commits = g->commits;
	st->last_commit = g->last_commit;
	st->reconnects = g->cmd.reconnects + g->tail.reconnects;
	st->rtt_us = g->rtt_us;
	st->down = g->cmd_ready && g->tail_ready ? 0 : ERR_AGAIN;
	st->failed = g->stopped ? ERR_IO : 0;
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

static void rl_close(void *be)
{
	struct rlog *g = be;

	g->closing = 1;
	while (g->head)
		finish(g->head, ERR_AGAIN);
	redis_conn_release(&g->cmd);
	redis_conn_release(&g->tail);
	redis_conn_release(&g->sent);
	if (g->flush)
		uv_close((uv_handle_t *)g->flush, free_handle);
	if (g->expiry)
		uv_close((uv_handle_t *)g->expiry, free_handle);
	if (g->beat)
		uv_close((uv_handle_t *)g->beat, free_handle);
	free(g->identity);
	free(g);
}

static const struct journal_ops redis_ops = {
	"redis", rl_replay, rl_append, rl_stats, rl_close,
};

int journal_redis_open(const char *spec, const char *identity, struct uv_loop_s *loop,
		       struct journal *l, const struct journal_ops **ops, void **be,
		       char *err, size_t errlen)
{
	struct rlog *g = calloc(1, sizeof(*g));
	uint64_t id = uv_hrtime() ^ ((uint64_t)getpid() << 40);
	int rc;

	snprintf(err, errlen, "edit log: out of memory");
	if (!g)
		return ERR_NOMEM;
	if ((rc = parse_spec(g, spec, err, errlen)) != 0) {
		free(g);
		return rc;
	}
	g->loop = loop;
	g->l = l;
	snprintf(g->last_id, sizeof(g->last_id), "0-0");
	uv_random(NULL, NULL, &id, sizeof(id), 0, NULL); /* else time and pid */
	snprintf(g->node, sizeof(g->node), "%016llx", (ull)id);
	g->identity = strdup(identity);
	g->flush = malloc(sizeof(*g->flush));
	g->expiry = malloc(sizeof(*g->expiry));
	g->beat = malloc(sizeof(*g->beat));
	rc = !g->identity || !g->flush || !g->expiry || !g->beat ? ERR_NOMEM :
	     redis_conn_init(&g->cmd, loop, "primary", cmd_down, g) ||
	     redis_conn_init(&g->tail, loop, "tail", tail_down, g) ||
	     redis_conn_init(&g->sent, loop, "sentinel", sent_down, g) ? ERR_NOMEM : 0;
	if (rc) {
		free(g->flush);
		free(g->expiry);
		free(g->beat);
		g->flush = NULL;
		g->expiry = g->beat = NULL;
		rl_close(g);
		return rc;
	}
	uv_check_init(loop, g->flush);
	uv_timer_init(loop, g->expiry);
	uv_timer_init(loop, g->beat);
	uv_unref((uv_handle_t *)g->flush);
	uv_unref((uv_handle_t *)g->expiry);
	uv_unref((uv_handle_t *)g->beat);
	g->flush->data = g->expiry->data = g->beat->data = g;
	*ops = &redis_ops;
	*be = g;
	return 0;
}
