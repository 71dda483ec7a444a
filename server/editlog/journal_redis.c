/*
 * journal_redis.c - the shared edit log in Redis: one stream that every
 * node appends to and every node reads, so that N nodes serve one world
 * (docs/cluster.md; the interface is journal.h, what this module's files
 * share journal_redis_int.h).
 *
 * Keys (in database DB of the spec):
 *   terrain:log       a stream; one entry per batch: r (its record,
 *                     common/batch.h), s (its first sequence number,
 *                     written into r by readers), o (who appended it)
 *   terrain:heads     a hash: world ("gen:seed") -> its last sequence
 *   terrain:identity  what every node must agree on (journal_open())
 *   terrain:snapshot:meta, terrain:snapshot:NODE:N
 *                     the shared snapshot (journal_redis_snap.c)
 *
 * An append runs one Lua script (EVALSHA) that gives the batch the next
 * sequence numbers of its world, logs it with the first of them and moves
 * the head: Redis runs scripts one at a time, so the order is global and
 * no two nodes can take one sequence. Appends made in one turn of the
 * loop go together in one call (group commit). The tail (XREAD BLOCK on
 * its own connection) reads from an online replica, checked with a ROLE
 * behind every read, so that a node applies only what a replica has, and
 * with a check that the log was not trimmed past where it read (else the
 * node restores from the shared snapshot); it delivers every entry, its
 * own included, to journal_deliver() in stream order. An append is done
 * when the script answered (with appendfsync always, after the primary's
 * fsync) and the tail has read it back from the replica and followed it:
 * that read is the replica's confirmation. With ?replicas=N above 1, a
 * WAIT N for each group must confirm it too; with ?replicas=all, a WAIT
 * for every replica the primary listed at the last heartbeat (settling for
 * one when the others do not answer in time); with 0 the tail reads from
 * the primary. This file holds the appends, the tail and the backend's
 * operations; journal_redis_primary.c the spec, the start-up and the
 * connection to the primary; journal_redis_snap.c the shared snapshot;
 * redis_conn.c the connections themselves.
 */
#include "journal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "batch.h"
#include "err.h"
#include "journal_redis_int.h"
#include "util.h"

static int is(const redisReply *r, int type)
{
	return r && r->type == type;
}

static void flush(struct rlog *g);
static void tail_connect(struct redis_conn *c);
static void on_tail_role(struct redis_conn *c, redisReply *r, void *arg);

/* ---- appends ------------------------------------------------------------------- */

static void on_expiry(uv_timer_t *t);

/* How an append ends that will not be confirmed: not sent, it certainly
 * is not logged (ERR_AGAIN); sent, it may be (ERR_UNKNOWN). */
static int lost(const struct rappend *a)
{
	return a->group ? ERR_UNKNOWN : ERR_AGAIN;
}

/* Stream entry ids "MS-SEQ" in order: <0, 0, >0. */
static int id_cmp(const char *a, const char *b)
{
	unsigned long long am = strtoull(a, NULL, 10), bm = strtoull(b, NULL, 10);
	const char *ad = strchr(a, '-'), *bd = strchr(b, '-');
	unsigned long long as = ad ? strtoull(ad + 1, NULL, 10) : 0;
	unsigned long long bs = bd ? strtoull(bd + 1, NULL, 10) : 0;

	return am != bm ? (am < bm ? -1 : 1) : as != bs ? (as < bs ? -1 : 1) : 0;
}

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
		finish(g->head, lost(g->head));
	arm_expiry(g);
}

void journal_redis__fail_all(struct rlog *g)
{
	journal_redis__fail_unsent(g);
	while (g->head)
		finish(g->head, lost(g->head));
}

void journal_redis__fail_unsent(struct rlog *g)
{
	g->waiting = 0;
	while (g->unsent)
		finish(g->unsent, ERR_AGAIN);
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
	size_t k;

	(void)first_seq; /* the script gives the next ones */
	if (g->stopped)
		return ERR_IO;
	if (!g->cmd_ready || !g->tail_ready || g->behind)
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
	snprintf(a->origin, sizeof(a->origin), "%s:%llu", g->node, (ull)a->tag);
	snprintf(a->count, sizeof(a->count), "%u", (unsigned)b.count);
	for (k = 0; b.key && k < BATCH_KEY; k++)
		snprintf(a->key + 2 * k, 3, "%02x", b.key[k]);
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

/* One script call: the appends it logs, in order. */
struct rcall {
	size_t n;
	int wait;                        /* a WAIT confirms them, not the tail */
	struct rappend *a[];             /* n of them, at most CALL_MAX */
};

/* Appends whose key the log held end once the tail followed the entry
 * that holds it: its outcome is then this node's to tell. */
static void settle_exists(struct rlog *g)
{
	struct rappend *a, *next;

	for (a = g->head; a && a != g->unsent; a = next) {
		next = a->next;
		if (a->exists && !a->in_cmd && id_cmp(a->held_by, g->last_id) <= 0)
			finish(a, ERR_EXISTS);
	}
}

/* An error reply from a script that certainly did not run. */
static int not_run(const char *err)
{
	static const char *const codes[] = { "NOSCRIPT", "READONLY", "NOAUTH", "NOPERM",
					      "LOADING", "MASTERDOWN", "BUSY ", "WRONGPASS" };
	size_t k;

	for (k = 0; k < ARRAY_LEN(codes); k++)
		if (!strncmp(err, codes[k], strlen(codes[k])))
			return 1;
	return 0;
}

/* Reply pair k of a script call: the batch logged (its first_seq and
 * entry id), or its key held by an entry ("FIRST ID"). */
static void script_result(struct rappend *a, const redisReply *first, const redisReply *id,
			  int wait)
{
	unsigned long long f;

	if (is(first, REDIS_REPLY_INTEGER) && first->integer == 0 && is(id, REDIS_REPLY_STRING) &&
	    sscanf(id->str, "%llu %47s", &f, a->held_by) == 2) {
		a->exists = 1;
		journal_existing(a->arg, f);
		return;
	}
	a->logged = 1;
	/* one replica: reading it back from a replica is the confirmation;
	 * more: WAIT decides */
	a->acked = !wait;
	if (a->acked && a->followed)
		finish(a, 0);
}

static void on_script(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rcall *call = arg;
	struct rlog *g = c->owner;
	int ok = is(r, REDIS_REPLY_ARRAY) && r->elements == 2 * call->n;
	int fail = is(r, REDIS_REPLY_ERROR) && not_run(r->str) ? ERR_AGAIN : ERR_UNKNOWN;
	size_t k;

	if (is(r, REDIS_REPLY_ERROR)) {
		fprintf(stderr, "terrain-server: edit log %s: append refused: %s\n", g->name,
			r->str);
		redis_conn_drop(c, r->str); /* reconnect, reload the script */
	}
	for (k = 0; k < call->n; k++) {
		struct rappend *a = call->a[k];

		a->in_cmd = 0;
		if (a->orphan)
			free(a);
		else if (!ok)
			finish(a, fail);
		else
			script_result(a, r->element[2 * k], r->element[2 * k + 1], call->wait);
	}
	free(call);
	settle_exists(g);
}

/* WAIT for group grp: enough replicas have every batch of it, or not. */
static void on_wait(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	uint64_t grp = (uint64_t)(uintptr_t)arg;
	int got = is(r, REDIS_REPLY_INTEGER) ? (int)r->integer : -1;
	/* replicas=all settles for what the tail confirms (it reads from a
	 * replica) when the others are slow to answer (a paused replica stays
	 * listed until the primary times it out): no error without a fault */
	int ok = got >= g->wait_want || (g->replicas_all && r);
	struct rappend *a, *next;

	g->waiting = 0;
	if (g->replicas_all && ok && got < g->wait_want && !g->wait_said)
		fprintf(stderr, "terrain-server: edit log %s: %d of %d replicas confirmed within "
			"%u ms; edits are acknowledged on fewer replicas while one is slow\n",
			g->name, got, g->wait_want, g->timeout_ms / 2);
	for (a = g->head; a && a != g->unsent; a = next) {
		next = a->next;
		if (a->group != grp || !a->logged)
			continue;
		a->acked = ok;
		if (!ok)
			finish(a, ERR_UNKNOWN); /* on the primary, not confirmed */
		else if (a->followed)
			finish(a, 0);
	}
	if (r && !ok && !g->closing && !g->wait_said)
		fprintf(stderr, "terrain-server: edit log %s: %d of %d replicas confirmed within "
			"%u ms; edits get 504 (outcome unknown) until they do\n", g->name, got,
			g->wait_want, g->timeout_ms / 2);
	else if (ok && g->wait_said && got >= g->wait_want)
		fprintf(stderr, "terrain-server: edit log %s: %s confirms again\n", g->name,
			g->replicas_all ? "every replica" : "a replica");
	if (r)
		g->wait_said = !ok || got < g->wait_want;
	if (g->beat_due)
		journal_redis__send_beat(g);
	flush(g);
}

/* Log up to CALL_MAX appends from *from on with one script call; *from
 * becomes the first one left. 0, or ERR_AGAIN or ERR_NOMEM (nothing
 * sent). */
static int send_call(struct rlog *g, struct rappend **from, int wait)
{
	const char **argv = g->argv;
	size_t *lens = g->lens, n = 0, k = 6;
	struct rcall *call;
	char ttl[24];
	struct rappend *a;
	int rc = ERR_NOMEM;

	for (a = *from; a && n < CALL_MAX; a = a->next)
		n++;
	call = malloc(sizeof(*call) + n * sizeof(call->a[0]));
	n = 0;
	if (call) {
		snprintf(ttl, sizeof(ttl), "%llu", (ull)g->key_ttl_ms);
		argv[0] = "EVALSHA", argv[1] = g->sha, argv[2] = "2", argv[3] = KEY_LOG;
		argv[4] = KEY_HEADS, argv[5] = ttl;
		for (k = 0; k < 6; k++)
			lens[k] = strlen(argv[k]);
		for (a = *from; a && n < CALL_MAX; a = a->next, k += 5) {
			call->a[n++] = a;
			argv[k] = a->world, lens[k] = strlen(a->world);
			argv[k + 1] = (const char *)a->rec, lens[k + 1] = a->len;
			argv[k + 2] = a->origin, lens[k + 2] = strlen(a->origin);
			argv[k + 3] = a->count, lens[k + 3] = strlen(a->count);
			argv[k + 4] = a->key, lens[k + 4] = strlen(a->key);
		}
		call->n = n;
		call->wait = wait;
		rc = redis_conn_command(&g->cmd, g->timeout_ms, on_script, call, (int)k, argv, lens);
	}
	if (rc) {
		free(call);
		return rc;
	}
	for (k = 0; k < n; k++) {
		call->a[k]->in_cmd = 1;
		call->a[k]->group = g->group;
	}
	*from = call->a[n - 1]->next;
	return 0;
}

/*
 * Send every append not yet sent in one script call (or a few), then,
 * when more than one replica must confirm, one WAIT for them all. Each
 * turn of this loop sends its own group at once, even while earlier ones
 * are in flight: Redis reads every command that waits when its turn
 * begins, so a group sent early joins the primary's next fsync, where one
 * held back for the answer to the last (tried: one group in flight) comes
 * a round trip late and waits for the fsync after it.
 */
static void flush(struct rlog *g)
{
	struct rappend *a;
	uint64_t n = 0;
	char ms[16], want[16];
	const char *argv[3] = { "WAIT", want, ms };

	if (g->waiting || !g->unsent || !g->cmd_ready || g->closing)
		return;
	/* replicas=all: every replica the primary listed at the last beat,
	 * so that whichever a failover promotes holds what was acknowledged */
	g->wait_want = g->replicas_all && g->nreplica > 1 ? (int)g->nreplica : g->replicas;
	g->group++;
	for (a = g->unsent, g->unsent = NULL; a;) {
		struct rappend *first = a;

		if (send_call(g, &a, g->wait_want > 1)) { /* down: nothing more goes */
			g->unsent = first;
			journal_redis__fail_unsent(g);
			break;
		}
		for (; first != a; first = first->next)
			n++;
	}
	if (!n)
		return;
	g->commits++;
	g->last_commit = n;
	if (g->wait_want <= 1)
		return;
	snprintf(want, sizeof(want), "%d", g->wait_want);
	snprintf(ms, sizeof(ms), "%u", g->timeout_ms / 2);
	if (redis_conn_command(&g->cmd, g->timeout_ms + g->timeout_ms / 2, on_wait,
			       (void *)(uintptr_t)g->group, 3, argv,
			       (size_t[]){ 4, strlen(want), strlen(ms) }) == 0)
		g->waiting = 1;
}

/* ---- the tail ------------------------------------------------------------------ */

/* This node's append that tag (len bytes) names, if it is still waiting. */
static struct rappend *own(struct rlog *g, const char *tag, size_t len)
{
	struct rappend *a;
	uint64_t n;

	if (len < 18 || memcmp(tag, g->node, 16) || tag[16] != ':')
		return NULL;
	n = strtoull(tag + 17, NULL, 10);
	for (a = g->head; a && a != g->unsent; a = a->next)
		if (a->tag == n)
			return a;
	return NULL;
}

static void drop_held(struct rlog *g)
{
	while (g->nheld)
		free(g->held[--g->nheld].rec);
}

/* Copy the entries of an XREAD answer: hiredis frees it on return, and
 * they wait for the ROLE answer behind it. */
static int hold(struct rlog *g, redisReply *v)
{
	size_t k;

	for (k = 0; k < v->elements; k++) {
		const redisReply *rec, *tag;
		struct held *h;
		const char *id;

		if (journal_redis__entry_fields(v->element[k], &id, &rec, &tag)) {
			fprintf(stderr, "terrain-server: edit log %s: entry after %s is not a "
				"batch\n", g->name, g->last_id);
			return ERR_CORRUPT;
		}
		if (g->nheld == g->capheld) {
			size_t cap = g->capheld ? 2 * g->capheld : 64;
			struct held *m = realloc(g->held, cap * sizeof(*m));

			if (!m)
				return ERR_NOMEM;
			g->held = m;
			g->capheld = cap;
		}
		h = &g->held[g->nheld];
		if (!(h->rec = malloc(rec->len ? rec->len : 1)))
			return ERR_NOMEM;
		memcpy(h->rec, rec->str, rec->len);
		h->len = rec->len;
		snprintf(h->id, sizeof(h->id), "%s", id);
		snprintf(h->tag, sizeof(h->tag), "%s", tag ? tag->str : "");
		g->nheld++;
	}
	return 0;
}

/* Follow the held entries, in order. */
static void deliver_held(struct rlog *g)
{
	size_t k;

	for (k = 0; k < g->nheld && !g->stopped; k++) {
		struct held *h = &g->held[k];
		struct rappend *a = own(g, h->tag, strlen(h->tag));
		int rc;

		/* first: a snapshot cut while it is followed holds it */
		snprintf(g->last_id, sizeof(g->last_id), "%s", h->id);
		rc = journal_deliver(g->l, h->rec, h->len, a ? a->arg : NULL);
		g->entries++;
		if (rc)
			g->stopped = 1;
		if (a) {
			a->followed = 1;
			if (rc || a->acked)
				finish(a, rc);
		}
	}
	drop_held(g);
	settle_exists(g);
}

static void on_xread(struct redis_conn *c, redisReply *r, void *arg);

static void on_tail_check(struct redis_conn *c, redisReply *r, void *arg);

/*
 * XREAD BLOCK from last_id, then the check that the log still holds
 * last_id (journal_redis__check_cmd()), then ROLE. The check runs once
 * XREAD has answered: a log that still holds last_id then was not trimmed
 * past it when XREAD read, so what XREAD returned follows last_id with
 * nothing missing; else this node fell behind the trim. ROLE, last: a
 * replica that answers it as a connected replica was one when it read the
 * entries, and they came from the primary, not from writes of its own
 * after a promotion that a failover may yet lose. Nothing while a read is
 * in flight, the tail is down or the node is behind.
 */
void journal_redis__tail_read(struct rlog *g)
{
	const char *argv[] = { "XREAD", "COUNT", STR(PAGE), "BLOCK", STR(BLOCK_MS), "STREAMS",
			       KEY_LOG, g->last_id };
	const char *role[] = { "ROLE" }, *check[4];
	size_t lens[ARRAY_LEN(argv)], clens[4], k;
	int nc;

	if (g->tail_reading || g->behind || g->stopped || g->closing || !redis_conn_up(&g->tail))
		return;
	snprintf(g->read_from, sizeof(g->read_from), "%s", g->last_id);
	g->read_full = g->check_full;
	nc = journal_redis__check_cmd(g->read_from, g->read_full, check, clens);
	for (k = 0; k < ARRAY_LEN(argv); k++)
		lens[k] = strlen(argv[k]);
	g->check_ok = 0;
	if (!redis_conn_command(&g->tail, BLOCK_MS + g->timeout_ms, on_xread, g,
				(int)ARRAY_LEN(argv), argv, lens) &&
	    !redis_conn_command(&g->tail, BLOCK_MS + g->timeout_ms, on_tail_check, g, nc, check,
				clens) &&
	    !redis_conn_command(&g->tail, BLOCK_MS + g->timeout_ms, on_tail_role, g, 1, role,
				(size_t[]){ 4 }))
		g->tail_reading = 1; /* when down, its retry reads again */
}

static void on_tail_check(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;

	(void)c;
	g->check_ok = journal_redis__check_ok(g->read_from, g->read_full, r);
}

static void on_xread(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;
	int rc = 0;

	if (!r || g->closing)
		return;
	if (is(r, REDIS_REPLY_ERROR)) {
		redis_conn_drop(c, r->str);
		return;
	}
	if (is(r, REDIS_REPLY_ARRAY) && r->elements == 1 && is(r->element[0], REDIS_REPLY_ARRAY) &&
	    r->element[0]->elements == 2 && is(r->element[0]->element[1], REDIS_REPLY_ARRAY))
		rc = hold(g, r->element[0]->element[1]);
	if (rc == ERR_CORRUPT)
		g->stopped = 1;
	if (rc) {
		drop_held(g);
		redis_conn_drop(c, "cannot read the stream");
	}
}

/* ROLE ["slave", host, port, "connected", offset]. */
static int connected_replica(const redisReply *r)
{
	return is(r, REDIS_REPLY_ARRAY) && r->elements >= 4 &&
	       is(r->element[0], REDIS_REPLY_STRING) && !strcmp(r->element[0]->str, "slave") &&
	       is(r->element[3], REDIS_REPLY_STRING) && !strcmp(r->element[3]->str, "connected");
}

static void on_tail_role(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = arg;
	const struct addr *want;

	g->tail_reading = 0;
	if (!r || g->closing) {
		drop_held(g);
		return;
	}
	if (g->replicas > 0 && !connected_replica(r)) {
		drop_held(g); /* read again from a replica */
		redis_conn_drop(c, "no longer a connected replica");
		return;
	}
	if (!g->check_ok) {
		drop_held(g);
		if (g->restored_at[0] && !strcmp(g->read_from, g->restored_at)) {
			/* the log lacks the position of its own snapshot */
			fprintf(stderr, "terrain-server: edit log %s: the log does not hold entry %s,"
				" where its shared snapshot was cut (a failover lost it?); edits"
				" are refused until a restart\n", g->name, g->read_from);
			g->stopped = 1;
			return;
		}
		journal_redis__fell_behind(g);
		return;
	}
	g->restored_at[0] = '\0';
	g->check_full = 0;
	deliver_held(g);
	if (g->stopped)
		return;
	want = journal_redis__tail_target(g);
	if (!want || !journal_redis__same_addr(want, &g->tail_at)) {
		redis_conn_ok(c);
		redis_conn_drop(c, want ? "moving to another replica" : "no replica online");
		return;
	}
	journal_redis__tail_read(g);
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
	const struct addr *a = journal_redis__tail_target(g);
	const char *len[] = { "XLEN", KEY_LOG };

	if (!a) {
		redis_conn_retry(c, tail_connect);
		return;
	}
	g->tail_at = *a;
	g->check_full = 1; /* a new connection: maybe after a failover */
	redis_conn_open(c, a->host, a->port);
	journal_redis__hello(c, &g->data, g->db, on_tail_hello);
	redis_conn_command(c, g->timeout_ms, on_tail_hello, "XLEN", 2, len,
			   (size_t[]){ 4, strlen(KEY_LOG) });
	journal_redis__tail_read(g);
}

static void tail_down(struct redis_conn *c, const char *why)
{
	struct rlog *g = c->owner;

	if (!g->tail_said)
		fprintf(stderr, "terrain-server: edit log %s: reading from %s:%d: %s; edits get "
			"503 until it is back\n", g->name, g->tail_at.host, g->tail_at.port, why);
	g->tail_said = 1;
	g->tail_ready = 0;
	g->tail_reading = 0;
	g->tail_next++; /* another replica, when there are more */
	if (!g->stopped)
		redis_conn_retry(c, tail_connect);
}

/* ---- the backend --------------------------------------------------------------- */

void journal_redis__start_live(struct rlog *g)
{
	uv_timer_start(g->beat, journal_redis__beat, BEAT_MS, BEAT_MS);
	journal_redis__connect(&g->cmd);
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
	st->restores = g->restores;
	st->shared = g->puts;
	st->down = g->cmd_ready && g->tail_ready && !g->behind ? 0 : ERR_AGAIN;
	st->failed = g->stopped ? ERR_IO : 0;
	st->broken = g->stopped; /* a stopped log is never retried */
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
		finish(g->head, lost(g->head));
	redis_conn_release(&g->cmd);
	redis_conn_release(&g->tail);
	redis_conn_release(&g->sent);
	redis_conn_release(&g->snapc);
	journal_redis__snap_release(g);
	if (g->snap_timer)
		uv_close((uv_handle_t *)g->snap_timer, free_handle);
	if (g->put_timer)
		uv_close((uv_handle_t *)g->put_timer, free_handle);
	if (g->flush)
		uv_close((uv_handle_t *)g->flush, free_handle);
	if (g->expiry)
		uv_close((uv_handle_t *)g->expiry, free_handle);
	if (g->beat)
		uv_close((uv_handle_t *)g->beat, free_handle);
	drop_held(g);
	free(g->held);
	free(g->identity);
	free(g);
}

static void rl_key_window(void *be, uint64_t ms)
{
	((struct rlog *)be)->key_ttl_ms = ms ? ms : 1;
}

static void rl_position(void *be, char *pos, size_t cap)
{
	struct rlog *g = be;

	snprintf(pos, cap, "%s", strcmp(g->last_id, "0-0") ? g->last_id : "");
}

static int rl_start_at(void *be, const char *pos)
{
	struct rlog *g = be;

	if (strlen(pos) >= sizeof(g->last_id))
		return 0;
	snprintf(g->last_id, sizeof(g->last_id), "%s", pos);
	g->started_at = 1;
	return 1;
}

/* Batches gone from the front of the log: not counted here, but not 0
 * once it was trimmed. */
static uint64_t rl_base(void *be)
{
	return ((struct rlog *)be)->trimmed ? 1 : 0;
}

static const struct journal_ops redis_ops = {
	"redis", journal_redis__replay, rl_append, rl_stats, rl_close, NULL, rl_base,
	journal_redis__snapshot_get, journal_redis__snapshot_put, rl_position, rl_start_at,
	NULL, rl_key_window,
};

int journal_redis_open(const char *spec, const struct journal_auth *auth,
		       const char *identity, struct uv_loop_s *loop, struct journal *l,
		       const struct journal_ops **ops, void **be, char *err, size_t errlen)
{
	struct rlog *g = calloc(1, sizeof(*g));
	uint64_t id = uv_hrtime() ^ ((uint64_t)getpid() << 40);
	int rc;

	snprintf(err, errlen, "edit log: out of memory");
	if (!g)
		return ERR_NOMEM;
	g->key_ttl_ms = 86400000; /* journal_key_window() */
	if ((rc = journal_redis__parse_spec(g, spec, auth, err, errlen)) != 0) {
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
	g->snap_timer = malloc(sizeof(*g->snap_timer));
	g->put_timer = malloc(sizeof(*g->put_timer));
	rc = !g->identity || !g->flush || !g->expiry || !g->beat || !g->snap_timer ||
	     !g->put_timer ? ERR_NOMEM :
	     redis_conn_init(&g->cmd, loop, "primary", journal_redis__primary_down, g) ||
	     redis_conn_init(&g->tail, loop, "tail", tail_down, g) ||
	     redis_conn_init(&g->sent, loop, "sentinel", journal_redis__sentinel_down, g) ||
	     redis_conn_init(&g->snapc, loop, "snapshot", journal_redis__snapc_down, g) ?
	     ERR_NOMEM : 0;
	if (rc) {
		free(g->flush);
		free(g->expiry);
		free(g->beat);
		free(g->snap_timer);
		free(g->put_timer);
		g->flush = NULL;
		g->expiry = g->beat = g->snap_timer = g->put_timer = NULL;
		rl_close(g);
		return rc;
	}
	uv_check_init(loop, g->flush);
	uv_timer_init(loop, g->expiry);
	uv_timer_init(loop, g->beat);
	uv_timer_init(loop, g->snap_timer);
	uv_timer_init(loop, g->put_timer);
	uv_unref((uv_handle_t *)g->flush);
	uv_unref((uv_handle_t *)g->expiry);
	uv_unref((uv_handle_t *)g->beat);
	uv_unref((uv_handle_t *)g->snap_timer);
	uv_unref((uv_handle_t *)g->put_timer);
	g->flush->data = g->expiry->data = g->beat->data = g->snap_timer->data = g;
	g->put_timer->data = g;
	*ops = &redis_ops;
	*be = g;
	return 0;
}
