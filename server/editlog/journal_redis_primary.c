/*
 * journal_redis_primary.c - the shared edit log's live connection to its
 * primary (journal_redis_int.h): the handshake (SELECT, ROLE, SCRIPT
 * LOAD of the append script), the heartbeat (ROLE: still the primary?
 * which replicas are online; XLEN: the head), the Sentinel question again
 * after every loss, and the replies that this and the other files read
 * (stream entries, ROLE, where the tail reads). The spec and the
 * start-up are journal_redis_start.c's; the appends and the tail
 * journal_redis.c's.
 */
#include "journal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "batch.h"
#include "err.h"
#include "journal_redis_int.h"


/*
 * Give each batch its world's next sequence numbers and log it with them
 * (field s; readers write it into the record: entry_fields()), unless its
 * idempotency key is taken: then log nothing and say where the batch that
 * holds the key went. Redis runs one script at a time, so the log's order
 * decides which of two batches with one key counts, and the key and the
 * entry reach the replicas together. One SET NX GET both records a new
 * key (its value: the batch's first_seq) and finds a taken one. KEYS: log,
 * heads; ARGV: the keys' lifetime in ms, then five per batch, in order:
 * world, record, origin, edits, key (hex; "" for none). Returns two values
 * per batch: first_seq and the entry id, or 0 and "FIRST ID": the first_seq
 * of the batch holding its key and the log's last entry, which follows it.
 * (Writing the number into the record here cost Lua 2.3 times as much per
 * batch; a GET and a SET per key cost 0.83 of the edits/s without keys.)
 */
static const char script[] =
	"local heads, out = {}, {}\n"
	"for i = 2, #ARGV, 5 do\n"
	"  local w, k = ARGV[i], ARGV[i + 4]\n"
	"  local head = heads[w] or tonumber(redis.call('HGET', KEYS[2], w)) or 0\n"
	"  local held = k ~= '' and redis.call('SET', '" KEY_PFX "' .. w .. ':' .. k, head + 1,\n"
	"                                      'NX', 'GET', 'PX', ARGV[1])\n"
	"  if held then\n"
	"    out[#out + 1] = 0\n"
	"    out[#out + 1] = held .. ' ' ..\n"
	"                    redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1][1]\n"
	"  else\n"
	"    out[#out + 1] = head + 1\n"
	"    out[#out + 1] = redis.call('XADD', KEYS[1], '*', 'r', ARGV[i + 1], 's', head + 1,\n"
	"                               'o', ARGV[i + 2])\n"
	"    heads[w] = head + tonumber(ARGV[i + 3])\n"
	"  end\n"
	"end\n"
	"for w, h in pairs(heads) do redis.call('HSET', KEYS[2], w, h) end\n"
	"return out\n";

static int is(const redisReply *r, int type)
{
	return r && r->type == type;
}

/* ---- replies ------------------------------------------------------------------ */

/*
 * Entry [id, [field, value, ...]] of a stream: its id, r and o. An entry
 * carries its first sequence number apart from the record (s: the script
 * need not rebuild the record to write it in); it is written into the
 * record here, in the reply's own bytes, so that the record is the
 * canonical one. An entry without s holds it in its record. So is the
 * time of a version-3 record: the entry id's milliseconds, Redis's clock
 * when the script ran, the same on every node and never going back.
 */
int journal_redis__entry_fields(redisReply *e, const char **id, const redisReply **rec,
				const redisReply **tag)
{
	const redisReply *seq = NULL;
	redisReply *r = NULL;
	size_t k;

	*rec = *tag = NULL;
	if (!is(e, REDIS_REPLY_ARRAY) || e->elements != 2 ||
	    !is(e->element[0], REDIS_REPLY_STRING) || !is(e->element[1], REDIS_REPLY_ARRAY))
		return ERR_CORRUPT;
	*id = e->element[0]->str;
	for (k = 0; k + 1 < e->element[1]->elements; k += 2) {
		redisReply *f = e->element[1]->element[k], *v = e->element[1]->element[k + 1];

		if (!is(f, REDIS_REPLY_STRING) || !is(v, REDIS_REPLY_STRING))
			return ERR_CORRUPT;
		if (!strcmp(f->str, "r"))
			r = v;
		else if (!strcmp(f->str, "o"))
			*tag = v;
		else if (!strcmp(f->str, "s"))
			seq = v;
	}
	if (!r)
		return ERR_CORRUPT;
	if (seq) {
		char *end;
		uint64_t first = strtoull(seq->str, &end, 10);
		size_t off = r->len >= 2 ? 2 + (uint8_t)r->str[1] + 8 : 0;

		if (*end || !first || !off || off + 8 > r->len)
			return ERR_CORRUPT;
		for (k = 0; k < 8; k++)
			r->str[off + k] = (char)(uint8_t)(first >> (8 * k));
	}
	if (r->len >= 2 && r->str[0] == 3) { /* a version-3 record: the log's time */
		uint64_t ms = strtoull(*id, NULL, 10);
		size_t off = BATCH_V3_TIME_OFF((uint8_t)r->str[1]);

		if (off + 8 > r->len)
			return ERR_CORRUPT;
		for (k = 0; k < 8; k++)
			r->str[off + k] = (char)(uint8_t)(ms >> (8 * k));
	}
	*rec = r;
	return 0;
}

/* ROLE: whether the server is a primary; its online replicas into g. */
int journal_redis__role_master(struct rlog *g, const redisReply *r)
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

int journal_redis__same_addr(const struct addr *a, const struct addr *b)
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
const struct addr *journal_redis__tail_target(const struct rlog *g)
{
	size_t k;

	if (g->replicas == 0)
		return g->master.port ? &g->master : NULL;
	for (k = 0; k < g->nreplica; k++)
		if (journal_redis__same_addr(&g->replica[k], &g->tail_at))
			return &g->replica[k];
	return g->nreplica ? &g->replica[g->tail_next % g->nreplica] : NULL;
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
	if (!journal_redis__role_master(g, r)) {
		redis_conn_drop(c, "no longer the primary");
		return;
	}
	want = journal_redis__tail_target(g);
	if (redis_conn_up(&g->tail) && (!want || !journal_redis__same_addr(want, &g->tail_at)))
		redis_conn_drop(&g->tail, want ? "moving to another replica" :
				"no replica online"); /* its retry finds the next one */
	else if (want && !redis_conn_up(&g->tail))
		redis_conn_kick(&g->tail); /* a replica to read from came up */
}

static void on_xlen(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;

	(void)c;
	if (is(r, REDIS_REPLY_INTEGER))
		g->log_len = (uint64_t)r->integer;
}

void journal_redis__send_beat(struct rlog *g)
{
	const char *role[] = { "ROLE" }, *len[] = { "XLEN", KEY_LOG };

	g->beat_due = 0;
	g->beat_sent = uv_hrtime();
	redis_conn_command(&g->cmd, g->timeout_ms, on_role, g, 1, role, (size_t[]){ 4 });
	redis_conn_command(&g->cmd, g->timeout_ms, on_xlen, g, 2, len,
			   (size_t[]){ 4, strlen(KEY_LOG) });
}

static void on_sentinel(struct redis_conn *c, redisReply *r, void *arg);

/* A Sentinel's answer of the heartbeat: it names another primary (a
 * failover this node's primary did not notice: it is still a primary,
 * without replicas, until Sentinel demotes it): go there. */
static void on_sentinel_beat(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;

	(void)c;
	if (g->closing || !g->cmd_ready || !is(r, REDIS_REPLY_ARRAY) || r->elements != 2 ||
	    !is(r->element[0], REDIS_REPLY_STRING) || !is(r->element[1], REDIS_REPLY_STRING))
		return;
	if (strcmp(r->element[0]->str, g->master.host) || atoi(r->element[1]->str) != g->master.port)
		redis_conn_drop(&g->cmd, "the Sentinels name another primary");
}

/* AUTH to a Sentinel: a refusal drops the connection (the question
 * behind it then goes to the next Sentinel), said once. */
static void on_sentinel_auth(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;

	(void)arg;
	if (!is(r, REDIS_REPLY_ERROR) || g->closing)
		return;
	if (!g->cmd_said)
		fprintf(stderr, "terrain-server: edit log %s: sentinel %s:%d: AUTH: %s\n", g->name,
			c->host, c->port, r->str);
	redis_conn_drop(c, r->str);
}

static void ask_sentinel(struct rlog *g, redis_reply_fn fn)
{
	const struct addr *s = &g->hosts[g->next_host % g->nhosts];
	const char *argv[] = { "SENTINEL", "get-master-addr-by-name", g->master_name };

	if (!redis_conn_up(&g->sent)) {
		redis_conn_open(&g->sent, s->host, s->port);
		journal_redis__hello(&g->sent, &g->sent_cred, -1, on_sentinel_auth);
	}
	if (redis_conn_command(&g->sent, g->timeout_ms, fn, g, 3, argv,
			       (size_t[]){ 8, 23, strlen(g->master_name) }) && fn == on_sentinel) {
		g->next_host++;
		redis_conn_retry(&g->cmd, journal_redis__connect);
	}
}

void journal_redis__beat(uv_timer_t *t)
{
	struct rlog *g = t->data;

	if (!g->cmd_ready)
		return;
	if (g->sentinel)
		ask_sentinel(g, on_sentinel_beat);
	if (g->waiting) /* behind the WAIT it would time that too */
		g->beat_due = 1;
	else
		journal_redis__send_beat(g);
}

/* The handshake: SELECT, ROLE (a primary?), SCRIPT LOAD; then ready. */
static void on_hello(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	const char *step = arg;

	if (!r || g->closing)
		return;
	if (is(r, REDIS_REPLY_ERROR) || (!strcmp(step, "ROLE") && !journal_redis__role_master(g, r))) {
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

void journal_redis__hello(struct redis_conn *c, const struct cred *cr, int db,
			  redis_reply_fn fn)
{
	const struct rlog *g = c->owner;
	char n[16];
	const char *sel[] = { "SELECT", n }, *auth[] = { "AUTH", cr->user, cr->pass };
	int user = cr->user[0] != '\0';

	if (cr->has_pass)
		redis_conn_command(c, g->timeout_ms, fn, "AUTH", 2 + user, user ? auth : (const char *[]){
					   "AUTH", cr->pass }, user ?
				   (size_t[]){ 4, strlen(cr->user), strlen(cr->pass) } :
				   (size_t[]){ 4, strlen(cr->pass) });
	if (db < 0)
		return;
	snprintf(n, sizeof(n), "%d", db);
	redis_conn_command(c, g->timeout_ms, fn, "SELECT", 2, sel, (size_t[]){ 6, strlen(n) });
}

static void open_master(struct rlog *g, const struct addr *a)
{
	const char *role[] = { "ROLE" };
	const char *load[] = { "SCRIPT", "LOAD", script };

	g->master = *a;
	redis_conn_open(&g->cmd, a->host, a->port);
	journal_redis__hello(&g->cmd, &g->data, g->db, on_hello);
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
		redis_conn_retry(&g->cmd, journal_redis__connect);
		return;
	}
	snprintf(a.host, sizeof(a.host), "%s", r->element[0]->str);
	a.port = atoi(r->element[1]->str);
	open_master(g, &a);
}

void journal_redis__connect(struct redis_conn *c)
{
	struct rlog *g = c->owner;

	if (g->sentinel)
		ask_sentinel(g, on_sentinel);
	else
		open_master(g, &g->hosts[0]);
}

void journal_redis__primary_down(struct redis_conn *c, const char *why)
{
	struct rlog *g = c->owner;

	if (!g->cmd_said)
		fprintf(stderr, "terrain-server: edit log %s: primary %s:%d: %s; edits get 503 "
			"while it reconnects\n", g->name, g->master.host, g->master.port, why);
	g->cmd_said = 1;
	g->cmd_ready = 0;
	g->next_host++; /* ask the next Sentinel: this one's answer may be stale */
	redis_conn_drop(&g->sent, "asking the next one");
	journal_redis__fail_unsent(g);
	redis_conn_retry(c, journal_redis__connect);
}

void journal_redis__sentinel_down(struct redis_conn *c, const char *why)
{
	(void)c;
	(void)why; /* the next question opens it again */
}
