/*
 * journal_redis_snap.c - the shared edit log's snapshot in Redis
 * (journal_redis_int.h): sending each snapshot this node writes, the trim
 * of the log below it once it is shared, and the restore of a node that
 * fell behind that trim.
 *
 * Keys: terrain:snapshot:meta, a hash: edits, id (the log entry the
 * snapshot was cut at: it holds every batch up to it), bytes, sum
 * (XXH3-64, hex), chunks, key (the hash holding the bytes, fields "0",
 * "1", ... of SNAP_CHUNK bytes each), trim (the id the log was last
 * trimmed at) and csize (SNAP_CHUNK); terrain:snapshot:lock, the node
 * sending one now. Every node writes a snapshot at about the same batch
 * and one sent is enough: a node sends its own only after taking the
 * lock (claim_script: not when the shared one is as new or another node
 * holds it). A snapshot is sent
 * on a connection of its own (snapc), one chunk in flight at a time, each
 * followed by a WAIT 1 when a replica confirms appends, so that the
 * primary interleaves appends with it and none waits behind more than one
 * chunk's write, fsync and replication; the chunks go into a hash of this
 * node's (with a TTL, should the node die while sending), then one script
 * makes it the shared one when it holds more edits than the one there,
 * unlinks the old one, lets go of the lock and trims the log below the
 * new one's own id (XTRIM MINID): every batch up to that id is in it
 * (format 4 keeps the batches within --history as records, so reverts
 * still reach them), so the first shared snapshot already trims. Redis
 * then holds at most two snapshots (the shared one, the one being sent)
 * and the batches since the shared one. A node that had taken the one
 * before and not yet read past the new id falls behind and restores again
 * (below).
 *
 * A node whose tail finds the log no longer holds the entry it last
 * followed (journal_redis.c checks that behind every read) fetches the
 * shared snapshot the same way, chunk by chunk, and hands it to
 * journal_restore(); meanwhile edits get 503 and reads go on.
 */
#include "journal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <uv.h>
#include <xxhash.h>

#include "err.h"
#include "journal_redis_int.h"
#include "util.h"

/*
 * Make the sent snapshot the shared one and trim the log below its own id
 * (the entry it was cut at stays: a node restored from it checks that the
 * log still holds it); let go of the lock if it is this node's. KEYS:
 * meta, its chunks, the log, the lock; ARGV: edits, id, bytes, sum,
 * chunks, node, chunk size. 1: shared; 0: the log holds one of as many edits or more
 * (the sent one is deleted). Hashes go by UNLINK, so that Redis frees a
 * big one's chunks off its main thread rather than within the script
 * (which every append would wait behind).
 */
static const char commit_script[] =
	"if redis.call('GET', KEYS[4]) == ARGV[6] then redis.call('DEL', KEYS[4]) end\n"
	"local have = tonumber(redis.call('HGET', KEYS[1], 'edits') or '0')\n"
	"if tonumber(ARGV[1]) <= have then redis.call('UNLINK', KEYS[2]) return 0 end\n"
	"if redis.call('HLEN', KEYS[2]) ~= tonumber(ARGV[5]) then\n"
	"  redis.call('UNLINK', KEYS[2]) return redis.error_reply('ERR snapshot incomplete')\n"
	"end\n"
	"local old = redis.call('HGET', KEYS[1], 'key')\n"
	"redis.call('PERSIST', KEYS[2])\n"
	"redis.call('HSET', KEYS[1], 'edits', ARGV[1], 'id', ARGV[2], 'bytes', ARGV[3],\n"
	"           'sum', ARGV[4], 'chunks', ARGV[5], 'key', KEYS[2], 'trim', ARGV[2],\n"
	"           'csize', ARGV[7])\n"
	"if old and old ~= KEYS[2] then redis.call('UNLINK', old) end\n"
	"redis.call('XTRIM', KEYS[3], 'MINID', ARGV[2])\n"
	"return 1\n";

/*
 * Take the lock before sending a snapshot: every node writes one at about
 * the same batch, and one sent is enough, so that Redis holds at most two
 * (the shared one and the one being sent). KEYS: meta, the lock; ARGV:
 * edits, node, ms. 1: this node's for ms; 0: the log holds one of as many
 * edits or more; -1: another node is sending one.
 */
static const char claim_script[] =
	"local have = tonumber(redis.call('HGET', KEYS[1], 'edits') or '0')\n"
	"if tonumber(ARGV[1]) <= have then return 0 end\n"
	"local who = redis.call('GET', KEYS[2])\n"
	"if who and who ~= ARGV[2] then return -1 end\n"
	"redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])\n"
	"return 1\n";

/* One snapshot being sent. */
struct rsnap_put {
	uv_work_t work;                  /* its checksum, off the loop */
	struct rlog *g;                  /* NULL: the log closed while summing */
	int summing;
	uint8_t *buf;
	size_t len, next, chunks;
	size_t acked;                    /* chunks confirmed */
	int tries, fresh;                /* fresh: the next chunk begins a try */
	char err[128];                   /* the chunk's HSET failed (paced) */
	uint64_t edits, sum, t0;
	char pos[48], key[160];
};

/* The shared snapshot being fetched. */
struct rsnap_get {
	struct snap_meta m;
	uint8_t *buf;
	size_t asked, got;               /* chunks */
	int tries;                       /* the meta read anew (a newer one came) */
	uint64_t t0;
};

static int is(const redisReply *r, int type)
{
	return r && r->type == type;
}

/* ---- meta and checks ---------------------------------------------------------- */

const char *const journal_redis__meta_argv[] = { "HMGET", KEY_META, "edits", "id", "bytes",
						 "sum", "chunks", "key", "csize" };

int journal_redis__meta(const redisReply *r, struct snap_meta *m)
{
	const redisReply *const *e;

	memset(m, 0, sizeof(*m));
	if (!is(r, REDIS_REPLY_ARRAY) || r->elements != META_ARGC - 2)
		return ERR_CORRUPT;
	e = (const redisReply *const *)r->element;
	if (is(e[0], REDIS_REPLY_NIL))
		return ERR_NOTFOUND;
	for (size_t k = 0; k < r->elements - 1; k++)
		if (!is(e[k], REDIS_REPLY_STRING))
			return ERR_CORRUPT;
	m->edits = strtoull(e[0]->str, NULL, 10);
	m->bytes = strtoull(e[2]->str, NULL, 10);
	m->sum = strtoull(e[3]->str, NULL, 16);
	m->chunks = (size_t)strtoull(e[4]->str, NULL, 10);
	/* no csize: a build before's, of SNAP_CHUNK_V1; nor when a node of
	 * such a build shared the last one over this build's csize */
	m->csize = is(e[6], REDIS_REPLY_STRING) ? (size_t)strtoull(e[6]->str, NULL, 10) : 0;
	if (!m->csize || m->csize > SNAP_CHUNK_V1 || !m->bytes ||
	    m->chunks != (m->bytes + m->csize - 1) / m->csize)
		m->csize = SNAP_CHUNK_V1;
	if (e[1]->len >= sizeof(m->id) || e[5]->len >= sizeof(m->key) || !m->bytes ||
	    m->chunks != (m->bytes + m->csize - 1) / m->csize)
		return ERR_CORRUPT;
	memcpy(m->id, e[1]->str, e[1]->len + 1);
	memcpy(m->key, e[5]->str, e[5]->len + 1);
	return 0;
}

int journal_redis__check_cmd(const char *id, int full, const char **argv, size_t *lens)
{
	int n = 0;

	if (!full || !id[0] || !strcmp(id, "0-0")) {
		argv[n++] = "HGET", argv[n++] = KEY_META, argv[n++] = "trim";
	} else {
		argv[n++] = "XRANGE", argv[n++] = KEY_LOG, argv[n++] = id, argv[n++] = id;
	}
	for (int k = 0; k < n; k++)
		lens[k] = strlen(argv[k]);
	return n;
}

/* Stream ids a < b ("ms-seq"). */
static int id_before(const char *a, const char *b)
{
	char *e;
	unsigned long long am = strtoull(a, &e, 10), as = *e == '-' ? strtoull(e + 1, NULL, 10) : 0;
	unsigned long long bm = strtoull(b, &e, 10), bs = *e == '-' ? strtoull(e + 1, NULL, 10) : 0;

	return am < bm || (am == bm && as < bs);
}

int journal_redis__check_ok(const char *id, int full, const redisReply *r)
{
	if (!id[0] || !strcmp(id, "0-0"))
		return is(r, REDIS_REPLY_NIL);
	if (full)
		return is(r, REDIS_REPLY_ARRAY) && r->elements == 1;
	/* trimmed below trim: id is still there unless it lies below */
	return is(r, REDIS_REPLY_NIL) || (is(r, REDIS_REPLY_STRING) && !id_before(id, r->str));
}

/* ---- the connection ----------------------------------------------------------- */

static void on_snap_hello(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;

	if (!r || g->closing)
		return;
	if (is(r, REDIS_REPLY_ERROR)) {
		redis_conn_drop(c, r->str);
		return;
	}
	if (!strcmp(arg, "SCRIPT") && is(r, REDIS_REPLY_STRING) && r->len < sizeof(g->snap_sha))
		memcpy(g->snap_sha, r->str, r->len + 1);
}

/* snapc up, to the primary of now; 0, or ERR_AGAIN while there is none. */
static int snapc_open(struct rlog *g)
{
	const char *load[] = { "SCRIPT", "LOAD", commit_script };

	if (!g->cmd_ready)
		return ERR_AGAIN;
	if (redis_conn_up(&g->snapc) &&
	    (strcmp(g->snapc.host, g->master.host) || g->snapc.port != g->master.port))
		redis_conn_drop(&g->snapc, "the primary moved");
	if (redis_conn_up(&g->snapc))
		return 0;
	g->snap_sha[0] = '\0';
	redis_conn_open(&g->snapc, g->master.host, g->master.port);
	journal_redis__hello(&g->snapc, &g->data, g->db, on_snap_hello);
	redis_conn_command(&g->snapc, g->timeout_ms, on_snap_hello, "SCRIPT", 3, load,
			   (size_t[]){ 6, 4, sizeof(commit_script) - 1 });
	return redis_conn_up(&g->snapc) ? 0 : ERR_AGAIN;
}

void journal_redis__snapc_down(struct redis_conn *c, const char *why)
{
	(void)c;
	(void)why; /* the transfers in flight had their NULL answers; next use reopens */
}

/* ---- sending -------------------------------------------------------------------- */

static void put_next(struct rlog *g);
static void claim(struct rlog *g);
static void send_chunk(struct rlog *g);
static void commit(struct rlog *g);
static void put_end(struct rlog *g, const char *why);

/* How long the lock holds without a chunk sent: twice a chunk's timeout. */
static unsigned lock_ms(const struct rlog *g)
{
	return 20 * g->timeout_ms;
}

#define PUT_TRIES 20   /* tries of one snapshot, a second apart */

static void on_put_retry(uv_timer_t *t)
{
	struct rlog *g = t->data;

	if (!g->put || g->closing)
		return;
	g->put->fresh = 1;
	claim(g); /* the lock may have lapsed meanwhile */
}

/*
 * A chunk or the commit failed (why): the next snapshot, when one waits;
 * else this one again a second later, from the first chunk not confirmed
 * (all of them when the primary lost the ones sent: a failover).
 */
static void put_fail(struct rlog *g, const char *why, int from_scratch)
{
	struct rsnap_put *p = g->put;

	if (g->put_next || g->closing || ++p->tries > PUT_TRIES) {
		put_end(g, why);
		return;
	}
	if (p->tries == 1)
		fprintf(stderr, "terrain-server: edit log %s: sharing the snapshot: %s; trying"
			" again\n", g->name, why);
	p->next = p->acked = from_scratch ? 0 : p->acked;
	uv_timer_start(g->put_timer, on_put_retry, 1000, 0);
}

static void put_end(struct rlog *g, const char *why)
{
	struct rsnap_put *p = g->put;

	if (why)
		fprintf(stderr, "terrain-server: edit log %s: snapshot not shared (%s); the"
			" next one will be\n", g->name, why);
	g->put = NULL;
	free(p->buf);
	free(p);
	put_next(g);
}

static void on_commit(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	struct rsnap_put *p = arg;

	if (g->put != p)
		return;
	if (!r || is(r, REDIS_REPLY_ERROR)) {
		put_fail(g, r ? r->str : "no answer", r && strstr(r->str, "incomplete"));
		return;
	}
	if (is(r, REDIS_REPLY_INTEGER) && r->integer == 1) {
		g->puts++;
		fprintf(stderr, "terrain-server: edit log %s: snapshot shared (%llu edits, %zu"
			" bytes in %zu chunks, %.2f s), the log trimmed below it\n",
			g->name, (ull)p->edits, p->len, p->chunks,
			(double)(uv_hrtime() - p->t0) / 1e9);
	}
	put_end(g, NULL);
}

static void commit(struct rlog *g)
{
	struct rsnap_put *p = g->put;
	char edits[24], bytes[24], sum[24], chunks[24], csize[24];
	const char *argv[] = { "EVALSHA", g->snap_sha, "4", KEY_META, p->key, KEY_LOG,
			       KEY_SNAP_LOCK, edits, p->pos, bytes, sum, chunks, g->node, csize };
	size_t lens[ARRAY_LEN(argv)], k;

	snprintf(edits, sizeof(edits), "%llu", (ull)p->edits);
	snprintf(bytes, sizeof(bytes), "%zu", p->len);
	snprintf(sum, sizeof(sum), "%016llx", (ull)p->sum);
	snprintf(chunks, sizeof(chunks), "%zu", p->chunks);
	snprintf(csize, sizeof(csize), "%u", SNAP_CHUNK);
	for (k = 0; k < ARRAY_LEN(argv); k++)
		lens[k] = strlen(argv[k]);
	if (snapc_open(g) || !g->snap_sha[0] ||
	    redis_conn_command(&g->snapc, g->timeout_ms, on_commit, p, (int)ARRAY_LEN(argv), argv,
			       lens))
		put_fail(g, "the primary is out of reach", 0);
}

/* The chunk sent is confirmed (err NULL) or not: the next, or a retry. */
static void chunk_done(struct rlog *g, struct rsnap_put *p, const char *err)
{
	if (err) {
		put_fail(g, err, 0);
		return;
	}
	p->acked = p->next;
	if (p->next < p->chunks)
		send_chunk(g);
	else
		commit(g);
}

/* The chunk's HSET answered; paced, the WAIT behind it ends the chunk. */
static void on_chunk(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	struct rsnap_put *p = arg;
	const char *err = !r ? "the primary is out of reach" :
			  is(r, REDIS_REPLY_ERROR) ? r->str : NULL;

	if (g->put != p)
		return;
	if (g->replicas > 0) {
		if (err)
			snprintf(p->err, sizeof(p->err), "%s", err);
		return;
	}
	chunk_done(g, p, err);
}

/* The WAIT behind a chunk: a replica has it (or the WAIT timed out, which
 * paces only: the commit does not depend on it). */
static void on_chunk_wait(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	struct rsnap_put *p = arg;
	char err[sizeof(p->err)];

	if (g->put != p)
		return;
	snprintf(err, sizeof(err), "%s", p->err[0] ? p->err : r ? "" : "the primary is out of reach");
	p->err[0] = '\0';
	chunk_done(g, p, err[0] ? err : NULL);
}

static void on_expire(struct redis_conn *c, redisReply *r, void *arg)
{
	(void)c;
	(void)r;
	(void)arg; /* a failure shows in the chunk behind it */
}

static void on_claim(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	struct rsnap_put *p = arg;

	if (g->put != p)
		return;
	if (!is(r, REDIS_REPLY_INTEGER)) {
		put_fail(g, is(r, REDIS_REPLY_ERROR) ? r->str : "the primary is out of reach", 0);
		return;
	}
	if (r->integer != 1) {
		fprintf(stderr, "terrain-server: edit log %s: snapshot of %llu edits not shared: %s\n",
			g->name, (ull)p->edits, r->integer ? "another node is sending one" :
			"the log holds one as new");
		put_end(g, NULL);
	} else if (p->next < p->chunks) {
		p->err[0] = '\0'; /* what a try before this one left */
		send_chunk(g);
	} else {
		commit(g);
	}
}

/* The lock for this node (claim_script), then the chunks from p->next. */
static void claim(struct rlog *g)
{
	struct rsnap_put *p = g->put;
	char edits[24], ms[16];
	const char *argv[] = { "EVAL", claim_script, "2", KEY_META, KEY_SNAP_LOCK, edits, g->node,
			       ms };
	size_t lens[ARRAY_LEN(argv)], k;

	snprintf(edits, sizeof(edits), "%llu", (ull)p->edits);
	snprintf(ms, sizeof(ms), "%u", lock_ms(g));
	for (k = 0; k < ARRAY_LEN(argv); k++)
		lens[k] = strlen(argv[k]);
	if (snapc_open(g) || redis_conn_command(&g->snapc, g->timeout_ms, on_claim, p,
						(int)ARRAY_LEN(argv), argv, lens))
		put_fail(g, "the primary is out of reach", 0);
}

/*
 * The next chunk: HSET key i bytes (and EXPIRE after the first), the
 * lock held on. When appends are confirmed by a replica, a WAIT 1 behind
 * each chunk paces the transfer to what the replica has taken: an append
 * is confirmed only once the replica has everything before it, so
 * chunks sent ahead of the replica would each delay the appends behind
 * them by their transfer, write and fsync there.
 */
static void send_chunk(struct rlog *g)
{
	struct rsnap_put *p = g->put;
	size_t off = p->next * SNAP_CHUNK, n = p->len - off < SNAP_CHUNK ? p->len - off : SNAP_CHUNK;
	char field[24], ttl[16], ms[16], wait_ms[16];
	const char *argv[] = { "HSET", p->key, field, (const char *)p->buf + off };
	const char *exp[] = { "EXPIRE", p->key, ttl };
	const char *hold[] = { "PEXPIRE", KEY_SNAP_LOCK, ms };
	const char *wait[] = { "WAIT", "1", wait_ms };
	int rc;

	snprintf(field, sizeof(field), "%zu", p->next);
	snprintf(ttl, sizeof(ttl), "%d", SNAP_TTL_S);
	snprintf(ms, sizeof(ms), "%u", lock_ms(g));
	snprintf(wait_ms, sizeof(wait_ms), "%u", g->timeout_ms);
	/* a chunk crosses the wire in much less than ten timeouts */
	rc = snapc_open(g) ? ERR_AGAIN :
	     redis_conn_command(&g->snapc, 10 * g->timeout_ms, on_chunk, p, 4, argv,
				(size_t[]){ 4, strlen(p->key), strlen(field), n });
	if (rc) {
		put_fail(g, "the primary is out of reach", 0);
		return;
	}
	p->next++;
	redis_conn_command(&g->snapc, g->timeout_ms, on_expire, p, 3, hold,
			   (size_t[]){ 7, strlen(KEY_SNAP_LOCK), strlen(ms) });
	if (p->fresh) /* the first chunk of a try: the TTL anew */
		redis_conn_command(&g->snapc, g->timeout_ms, on_expire, p, 3, exp,
				   (size_t[]){ 6, strlen(p->key), strlen(ttl) });
	p->fresh = 0;
	if (g->replicas > 0 &&
	    redis_conn_command(&g->snapc, 10 * g->timeout_ms, on_chunk_wait, p, 3, wait,
			       (size_t[]){ 4, 1, strlen(wait_ms) })) {
		p->err[0] = '\0';
		put_fail(g, "the primary is out of reach", 0);
	}
}

static void sum_work(uv_work_t *w)
{
	struct rsnap_put *p = container_of(w, struct rsnap_put, work);

	p->sum = XXH3_64bits(p->buf, p->len);
}

static void sum_done(uv_work_t *w, int status)
{
	struct rsnap_put *p = container_of(w, struct rsnap_put, work);
	struct rlog *g = p->g;

	p->summing = 0;
	if (!g) { /* the log closed meanwhile */
		free(p->buf);
		free(p);
		return;
	}
	if (status) {
		put_end(g, "cancelled");
	} else {
		p->fresh = 1;
		claim(g);
	}
}

/* The next snapshot waiting: its checksum on a worker (a 120 MB one takes
 * tens of milliseconds), then its chunks. */
static void put_next(struct rlog *g)
{
	if (g->put || !g->put_next || g->closing)
		return;
	g->put = g->put_next;
	g->put_next = NULL;
	g->put->t0 = uv_hrtime();
	g->put->g = g;
	g->put->summing = 1;
	if (uv_queue_work(g->loop, &g->put->work, sum_work, sum_done)) {
		g->put->summing = 0;
		put_end(g, "out of memory");
	}
}

void journal_redis__snapshot_put(void *be, uint8_t *buf, size_t len, uint64_t edits,
				 const char *pos)
{
	struct rlog *g = be;
	struct rsnap_put *p;

	if (!len || !pos[0] || strlen(pos) >= sizeof(p->pos) || !(p = calloc(1, sizeof(*p)))) {
		fprintf(stderr, "terrain-server: edit log %s: snapshot not shared (%s)\n", g->name,
			pos[0] ? "out of memory" : "cut before the first entry");
		free(buf);
		return;
	}
	p->buf = buf;
	p->len = len;
	p->edits = edits;
	p->chunks = (len + SNAP_CHUNK - 1) / SNAP_CHUNK;
	snprintf(p->pos, sizeof(p->pos), "%s", pos);
	snprintf(p->key, sizeof(p->key), KEY_SNAP_PFX "%s:%llu", g->node, (ull)++g->put_seq);
	if (g->put_next) { /* a newer one replaces the one that waits */
		free(g->put_next->buf);
		free(g->put_next);
	}
	g->put_next = p;
	put_next(g);
}

/* ---- fetching, when behind ------------------------------------------------------ */

static void fetch(struct rlog *g);

static void get_free(struct rlog *g)
{
	if (g->get)
		free(g->get->buf);
	free(g->get);
	g->get = NULL;
}

static void on_retry(uv_timer_t *t)
{
	fetch(t->data);
}

/* This try failed (why): the next one after a second. */
static void get_retry(struct rlog *g, const char *why)
{
	if (why && g->get && g->get->tries++ == 0)
		fprintf(stderr, "terrain-server: edit log %s: the shared snapshot cannot be read"
			" yet (%s); trying again\n", g->name, why);
	if (g->get) {
		free(g->get->buf);
		g->get->buf = NULL;
	}
	if (!g->closing)
		uv_timer_start(g->snap_timer, on_retry, 1000, 0);
}

static void restored(struct rlog *g)
{
	struct rsnap_get *q = g->get;
	char msg[300];

	if (XXH3_64bits(q->buf, q->m.bytes) != q->m.sum) {
		get_retry(g, "checksum mismatch");
		return;
	}
	if (journal_restore(g->l, q->buf, q->m.bytes, msg, sizeof(msg))) {
		g->stopped = 1;
		get_free(g);
		return;
	}
	snprintf(g->last_id, sizeof(g->last_id), "%s", q->m.id);
	snprintf(g->restored_at, sizeof(g->restored_at), "%s", q->m.id);
	g->check_full = 1; /* that the log holds the snapshot's own entry */
	fprintf(stderr, "terrain-server: edit log %s: caught up from the shared snapshot (%llu"
		" edits, %llu bytes, fetched in %.2f s); reading on from %s, edits again\n",
		g->name, (ull)q->m.edits, (ull)q->m.bytes, (double)(uv_hrtime() - q->t0) / 1e9,
		q->m.id);
	get_free(g);
	g->behind = 0;
	g->restores++;
	journal_redis__tail_read(g);
}

static void ask_chunks(struct rlog *g);

static void on_fetch_chunk(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	struct rsnap_get *q = g->get;
	size_t i = (size_t)(uintptr_t)arg, cs = q ? q->m.csize : 0, off = i * cs;
	size_t want = q && q->buf ? (q->m.bytes - off < cs ? q->m.bytes - off : cs) : 0;

	if (!q || !q->buf || g->closing)
		return;
	if (!r) {
		get_retry(g, "the primary is out of reach");
		return;
	}
	if (!is(r, REDIS_REPLY_STRING) || r->len != want) {
		/* replaced by a newer one meanwhile: read the meta again */
		free(q->buf);
		q->buf = NULL;
		if (q->tries++ > 5)
			get_retry(g, "it keeps changing");
		else
			fetch(g);
		return;
	}
	memcpy(q->buf + off, r->str, want);
	if (++q->got == q->m.chunks)
		restored(g);
	else
		ask_chunks(g);
}

static void ask_chunks(struct rlog *g)
{
	struct rsnap_get *q = g->get;

	while (q->asked < q->m.chunks && q->asked - q->got < SNAP_WINDOW) {
		char field[24];
		const char *argv[] = { "HGET", q->m.key, field };

		snprintf(field, sizeof(field), "%zu", q->asked);
		if (redis_conn_command(&g->snapc, 10 * g->timeout_ms, on_fetch_chunk,
				       (void *)(uintptr_t)q->asked, 3, argv,
				       (size_t[]){ 4, strlen(q->m.key), strlen(field) })) {
			get_retry(g, "the primary is out of reach");
			return;
		}
		q->asked++;
	}
}

static void on_fetch_meta(struct redis_conn *c, redisReply *r, void *arg)
{
	struct rlog *g = c->owner;
	struct rsnap_get *q = g->get;
	int rc;

	(void)arg;
	if (!q || g->closing)
		return;
	if (!r || is(r, REDIS_REPLY_ERROR)) {
		get_retry(g, r ? r->str : "the primary is out of reach");
		return;
	}
	if ((rc = journal_redis__meta(r, &q->m)) != 0) {
		fprintf(stderr, "terrain-server: edit log %s: this node fell behind the log's"
			" trim and there is %s; edits are refused until a restart (move its data"
			" directory's snapshot aside if it is not this log's)\n", g->name,
			rc == ERR_NOTFOUND ? "no shared snapshot to restore from" :
			"no readable shared snapshot");
		g->stopped = 1;
		get_free(g);
		return;
	}
	if (!(q->buf = malloc(q->m.bytes))) {
		get_retry(g, "out of memory");
		return;
	}
	q->asked = q->got = 0;
	ask_chunks(g);
}

/* One try: the meta, then the chunks it names. */
static void fetch(struct rlog *g)
{
	size_t lens[META_ARGC];

	if (!g->get || g->closing)
		return;
	for (size_t k = 0; k < META_ARGC; k++)
		lens[k] = strlen(journal_redis__meta_argv[k]);
	if (snapc_open(g) ||
	    redis_conn_command(&g->snapc, g->timeout_ms, on_fetch_meta, NULL, META_ARGC,
			       (const char **)journal_redis__meta_argv, lens))
		get_retry(g, NULL);
}

void journal_redis__fell_behind(struct rlog *g)
{
	if (g->behind || g->stopped)
		return;
	g->behind = 1;
	fprintf(stderr, "terrain-server: edit log %s: the log no longer holds entry %s, the"
		" last this node followed (it was trimmed below a newer snapshot while the node"
		" was away): restoring from the shared snapshot; edits get 503 meanwhile\n",
		g->name, g->last_id);
	journal_redis__fail_all(g);
	if (!(g->get = calloc(1, sizeof(*g->get)))) {
		g->stopped = 1;
		return;
	}
	g->get->t0 = uv_hrtime();
	fetch(g);
}

void journal_redis__snap_release(struct rlog *g)
{
	if (g->put && g->put->summing) {
		uv_cancel((uv_req_t *)&g->put->work);
		g->put->g = NULL; /* sum_done() comes and frees it */
	} else if (g->put) {
		free(g->put->buf);
		free(g->put);
	}
	if (g->put_next) {
		free(g->put_next->buf);
		free(g->put_next);
	}
	g->put = g->put_next = NULL;
	get_free(g);
}
