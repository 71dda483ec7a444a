/*
 * edits.c - the worlds and their edits: world info, the generator
 * presets, POST and GET of edits, chunk hashes, event streams, and the
 * start-up replay (see edits.h).
 *
 * The world map is changed in one place only, follow(): the edit log's
 * callback for every committed batch, at start-up and after each append.
 * A POST reserves its sequence numbers, appends, and answers once its own
 * batch has come back through that path.
 *
 * A POST with an Idempotency-Key carries the key into its record; follow()
 * remembers what each keyed batch did (idem.h), so a retry is answered
 * with the first outcome. Whether a key is new is decided where the log
 * is ordered: here, against the remembered keys and the keyed POSTs in
 * flight, for the file log that only this node appends to; in the append
 * script itself for a shared log (journal_redis.c), where two nodes may
 * race with one key and the log keeps only the first.
 */
#include "edits.h"
#include "edits_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <llhttp.h>
#include <uv.h>
#include <xxhash.h>

#include "access.h"
#include "api/metrics.h"
#include "api/request.h"
#include "batch.h"
#include "edit.h"
#include "editlog/journal.h"
#include "edits_read.h"
#include "err.h"
#include "http/http.h"
#include "le.h"
#include "preset.h"
#include "revert.h"
#include "selfcheck.h"
#include "sse.h"
#include "util.h"
#include "worlds/catalog.h"
#include "worlds/idem.h"
#include "worlds/snapshots.h"
#include "worlds/world.h"

#define READ (REQ_M(HTTP_GET) | REQ_M(HTTP_HEAD))
/* What a page may read of an edit's answer (CORS) */
#define EXPOSE "Access-Control-Expose-Headers: Retry-After, Idempotent-Replayed\r\n"

/* ---- the follow path ---------------------------------------------------------- */

/* XXH3-128 of a batch's body (len bytes: its canonical edits, or a
 * revert's), as 16 bytes. */
static void body_digest(const uint8_t *body, size_t len, uint8_t out[16])
{
	XXH128_hash_t h = XXH3_128bits(body, len);

	le_put64(out, h.low64);
	le_put64(out + 8, h.high64);
}

/* A keyed batch was applied to w: remember what it did. */
static void remember(struct edits *e, const struct batch *b, const struct world *w)
{
	struct idem_entry k = { .first_seq = b->first_seq, .hash = world_hash(w),
				.time_ms = b->time_ms, .count = b->count };

	memcpy(k.key, b->key, BATCH_KEY);
	if (b->revert)
		body_digest(b->revert, REVERT_WIRE, k.body);
	else
		body_digest(b->edits, b->count * BATCH_EDIT, k.body);
	if (idem_add(e->keys, &k))
		fprintf(stderr, "terrain-server: out of memory: an idempotency key of world %llu "
			"is not remembered (a retry of edit %llu would apply it again)\n",
			(ull)b->seed, (ull)b->first_seq);
}

/* Every committed batch, whoever appended it: the one place a world changes. */
static int follow(void *arg, const struct batch *b, int flags)
{
	struct edits *e = arg;
	struct world *w;
	char msg[200];
	int live = flags & JOURNAL_LIVE;
	int rc, gen;

	if (!live && (gen = catalog_find(e->cat, b->gen, b->gen_len)) >= 0 &&
	    (w = world_map_find(e->worlds, gen, b->seed)) && b->first_seq <= world_snapshot(w)) {
		if (b->first_seq + b->count - 1 > world_snapshot(w)) {
			snprintf(e->follow_err, sizeof(e->follow_err), "edit log: a batch of"
				 " world %llu straddles its snapshot (edits %llu..%llu, snapshot"
				 " at %llu): move DIR/snapshot aside to replay the log alone",
				 (ull)b->seed, (ull)b->first_seq,
				 (ull)(b->first_seq + b->count - 1), (ull)world_snapshot(w));
			return ERR_CORRUPT;
		}
		e->covered++;
		e->confirmed += b->first_seq + b->count - 1 == world_snapshot(w);
		return 0; /* folded into the snapshot */
	}
	rc = world_map_follow(e->worlds, b, flags & JOURNAL_OWN, &w, msg, sizeof(msg));

	if (rc == ERR_NOTFOUND && !live) {
		if (!e->skipped++)
			snprintf(e->skip_note, sizeof(e->skip_note), "%s", msg);
		return rc;
	}
	if (rc) {
		snprintf(e->follow_err, sizeof(e->follow_err), "edit log: %s", msg);
		if (live)
			fprintf(stderr, "terrain-server: %s\n", e->follow_err);
		return rc;
	}
	if (b->key)
		remember(e, b, w);
	if (b->time_ms > e->time_hw)
		e->time_hw = b->time_ms;
	if (live) {
		sse_publish(e->sse, w);
		snapshots_applied(e->snaps, b->count, batch_size(b));
	}
	if (e->on_change) {
		struct world_batch wb;

		world_batch(w, world_batches(w) - 1, &wb);
		e->on_change(e->change_arg, catalog_find(e->cat, b->gen, b->gen_len),
			     b->seed, wb.chunks, wb.nchunks, b->revert ? b->first_seq : 0);
	}
	return 0;
}

/* ---- edits ---------------------------------------------------------------------- */

/* Whether an append error passes (journal.h): 503, retry later. */
static int transient(int rc)
{
	return rc == ERR_BUSY || rc == ERR_AGAIN || rc == ERR_CONFLICT;
}

/* Why edits get 503 while the log is failed: for good (a batch this node
 * could not follow), or until a write succeeds again (the store probes). */
static const char *refused(const struct edits *e)
{
	return edits_failed(e) ?
	       "edit log unavailable; edits are refused until a restart" :
	       "edit log write failed (a full disk?); the server retries, and edits "
	       "resume once a write succeeds: retry later";
}

/* ---- Idempotency-Key ------------------------------------------------------------ */

#define KEY_LEN_MAX 255

/*
 * The Idempotency-Key value v (draft-ietf-httpapi-idempotency-key-header):
 * a structured-field string ("..." with \" and \\ escapes) or, as many
 * clients send it, bare; 1..255 printable ASCII characters (bare: no
 * space, quote or backslash). Into out (KEY_LEN_MAX bytes): its length,
 * or -1 when it is malformed.
 */
static int key_value(const char *v, char *out)
{
	int quoted = *v == '"', n = 0;

	for (v += quoted; *v && !(quoted && *v == '"'); v++) {
		if (quoted && *v == '\\' && (v[1] == '"' || v[1] == '\\'))
			v++;
		else if (*v < 0x20 || *v > 0x7e || *v == '\\' ||
			 (!quoted && (*v == ' ' || *v == '"')))
			return -1;
		if (n == KEY_LEN_MAX)
			return -1;
		out[n++] = *v;
	}
	return n && (!quoted || (v[0] == '"' && !v[1])) ? n : -1;
}

/* Who sent x, as the keys' scope: its author (docs/edits.md): a
 * player's sub, "admin" (the edit token) or "local". */
static const char *sender(const struct edit_req *x)
{
	return x->who.sub;
}

/*
 * Read the request's Idempotency-Key into x: its hash with the world and
 * the sender (a key is theirs alone), and the batch's digest. 0 (also
 * when there is none) or 400.
 */
static int read_key(struct edit_req *x, const char *gen, uint64_t seed)
{
	const char *v = x->q.http->header[HTTP_H_IDEMPOTENCY_KEY], *who = sender(x);
	uint8_t buf[256 + 8 + 8 + KEY_LEN_MAX], *p = buf;
	char key[KEY_LEN_MAX];
	XXH128_hash_t h;
	int n;

	if (!v)
		return 0;
	if ((n = key_value(v, key)) < 0) {
		x->q.detail = "idempotency-key: expected a quoted string of 1..255 printable "
			      "ASCII characters (draft-ietf-httpapi-idempotency-key-header)";
		return 400;
	}
	/* gen NUL seed sender NUL key: the layout docs/edit-log.md gives */
	memcpy(p, gen, strlen(gen) + 1);
	p += strlen(gen) + 1;
	le_put64(p, seed);
	p += 8;
	memcpy(p, who, strlen(who) + 1);
	p += strlen(who) + 1;
	memcpy(p, key, (size_t)n);
	h = XXH3_128bits(buf, (size_t)(p + n - buf));
	le_put64(x->key, h.low64);
	le_put64(x->key + 8, h.high64);
	x->keyed = 1;
	return 0;
}

/* The keyed POST in flight here with x's key, or NULL. */
static struct edit_req *flying(const struct edits *e, const uint8_t key[BATCH_KEY])
{
	size_t k;

	for (k = 0; k < e->nflying; k++)
		if (!memcmp(e->flying[k]->key, key, BATCH_KEY))
			return e->flying[k];
	return NULL;
}

static int fly(struct edits *e, struct edit_req *x)
{
	if (e->nflying == e->capflying) {
		size_t cap = e->capflying ? 2 * e->capflying : 16;
		struct edit_req **m = realloc(e->flying, cap * sizeof(*m));

		if (!m)
			return ERR_NOMEM;
		e->flying = m;
		e->capflying = cap;
	}
	e->flying[e->nflying++] = x;
	return 0;
}

static void land(struct edits *e, struct edit_req *x)
{
	size_t k;

	for (k = 0; k < e->nflying; k++)
		if (e->flying[k] == x) {
			e->flying[k] = e->flying[--e->nflying];
			return;
		}
}

/*
 * Answer 200 with batch first..first+count-1 of x's world: from the
 * world's record of it, or, once a snapshot folded it away, with its
 * chunks found again from x's edits (the same edits: the digests matched)
 * and hash, the world hash after it. replay marks a retry's answer.
 */
static void respond_batch(struct edit_req *x, uint64_t first, uint64_t count, uint64_t hash,
			  int replay)
{
	struct world *w = x->world, *tmp = NULL;
	const struct preset *p = catalog_at(x->e->cat, (size_t)world_gen(w));
	struct world_batch b = { 0 };
	size_t i = first > world_base(w) ? world_batch_after(w, first - 1) : world_batches(w);
	char *body;
	size_t len;

	if (i < world_batches(w))
		world_batch(w, i, &b);
	if (b.first_seq != first) {
		if (world_create(preset_fingerprint(p), world_seed(w), preset_chunk_log2(p), &tmp) ||
		    world_apply(tmp, 1, x->edits, x->nedits, &b))
			b.nchunks = 0;
		b.first_seq = first;
		b.last_seq = first + count - 1;
		b.hash = hash;
	}
	if (!(body = malloc(sse_batch_json_bound(&b) + 16))) {
		world_destroy(tmp);
		req_respond_oom(x->q.env, x->q.http, x->q.label);
		return;
	}
	len = sse_batch_json(&b, world_seq(w), body);
	world_destroy(tmp);
	if (replay)
		len += (size_t)sprintf(body + len - 1, ",\"replay\":true}") - 1;
	req_respond_copy(&x->q, 200, "application/json", replay ?
			 "Cache-Control: no-store\r\nIdempotent-Replayed: true\r\n" EXPOSE :
			 "Cache-Control: no-store\r\n" EXPOSE, body, len);
	free(body);
}

/* A retry of the keyed batch k: its first answer, or 422 when the key
 * came with other edits. 0 once answered. */
static int replay(struct edit_req *x, const struct idem_entry *k)
{
	char *msg;

	if (memcmp(k->body, x->body, sizeof(x->body))) {
		if ((msg = http_req_alloc(x->q.http, 200)))
			snprintf(msg, 200, "idempotency-key: already used for other edits (edits "
				 "%llu..%llu of this world); a new batch needs a new key",
				 (ull)k->first_seq, (ull)(k->first_seq + k->count - 1));
		x->q.detail = msg ? msg : "idempotency-key: already used for other edits";
		return 422;
	}
	metrics_edits_replayed(x->q.env->metrics);
	respond_batch(x, k->first_seq, k->count, k->hash, 1);
	return 0;
}

/* ---- answers -------------------------------------------------------------------- */

/* The log has the batch and follow() applied it, or it failed: answer.
 * first: where follow() saw it, 0 when it did not (for ERR_EXISTS: where
 * the log's first batch of this key went). */
static void edits_logged(void *arg, int status, uint64_t first)
{
	struct edit_req *x = arg;
	struct edit *v = x->edits; /* x may go with its answer: freed after it */
	const struct idem_entry *k;
	int rc;

	x->e->appending--;
	if (x->keyed)
		land(x->e, x);
	if (status == ERR_EXISTS) { /* a shared log had the key: the first counts */
		world_release(x->world, x->edits, x->nedits, x->first);
		if ((k = idem_find(x->e->keys, x->key)) && (rc = replay(x, k)) != 0)
			req_respond_error(&x->q, rc, x->q.detail);
		else if (!k)
			req_respond_error(&x->q, 504, "outcome unknown: the edit log holds "
					  "this Idempotency-Key, but this node no longer remembers "
					  "what it did (--idempotency-keys)");
		free(v);
		return;
	}
	if (status) {
		if (status != ERR_UNKNOWN && !transient(status))
			world_cancel_all(x->world); /* later reservations fail with the log too */
		else if (!first)          /* applied as reserved, or never will be */
			world_release(x->world, x->edits, x->nedits, x->first);
		free(x->edits);
		if (status == ERR_UNKNOWN)
			req_respond_error(&x->q, 504, x->keyed ?
					  "outcome unknown: the edit log did not confirm in time; the "
					  "batch may or may not be applied: retry with the same "
					  "Idempotency-Key" :
					  "outcome unknown: the edit log did not confirm in time; the "
					  "batch may or may not be applied (send an Idempotency-Key "
					  "so that a retry cannot apply it twice)");
		else
			req_respond_error(&x->q, 503, transient(status) ?
					  "edit log unavailable, not applied: retry later" :
					  refused(x->e));
		return;
	}
	metrics_edits_accepted(x->q.env->metrics, x->nedits);
	x->first = first;
	respond_batch(x, first, x->nedits, world_hash(x->world), 0);
	free(v);
}

/* Why world_reserve() found the batch too big, into the arena. */
static const char *too_big(struct edit_req *x)
{
	char *msg = http_req_alloc(x->q.http, 128);
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

/* 400 for an edit that touches no chunk of the world (beyond the int32
 * chunk grid of this generator's chunk size). */
static int outside(struct edit_req *x, const struct preset *p)
{
	size_t k, n;

	for (k = 0; k < x->nedits; k++) {
		edit_chunks(&x->edits[k], preset_chunk_log2(p), NULL, NULL, 0, &n);
		if (n == 0) {
			char *msg = http_req_alloc(x->q.http, 160);

			if (msg)
				snprintf(msg, 160, "edits[%zu]: outside the world (chunks of %d m, "
					 "cx and cz int32)", k, 1 << preset_chunk_log2(p));
			x->q.detail = msg ? msg : "edits: outside the world";
			return 400;
		}
	}
	return 0;
}

/* Current time, ms since 1970: when the log takes a batch. */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A keyed batch already known (a retry) or in flight: answered or refused
 * here (its status, or 0 once answered); else 1 to go on. */
/* The time a record is stamped with: this node's clock, never going back
 * (a shared log stamps its own: journal_redis_primary.c). */
static uint64_t log_time(struct edits *e)
{
	uint64_t t = now_ms();

	if (t > e->time_hw)
		e->time_hw = t;
	return e->time_hw;
}

static int known(struct edit_req *x, int pi, uint64_t seed)
{
	const struct idem_entry *k = idem_find(x->e->keys, x->key);

	if (k && (x->world = world_map_find(x->e->worlds, pi, seed)) != NULL)
		return replay(x, k);
	if (flying(x->e, x->key)) {
		x->q.detail = "idempotency-key: a request with this key is in flight; retry "
			      "after it is answered";
		return 409;
	}
	return 1;
}

/* Reserve, log and (in edits_logged) answer a batch; see routes.h. */
static int post_edits(struct edit_req *x, int pi, uint64_t seed)
{
	struct edits *e = x->e;
	struct http_req *r = x->q.http;
	const char *gen = preset_name(catalog_at(e->cat, (size_t)pi));
	struct access_ask ask;
	struct batch b;
	size_t k;
	char *msg;
	int rc, fresh;

	if ((rc = access_identify(e->access, &x->q, &x->who)) != 0 ||
	    (rc = read_key(x, gen, seed)) != 0)
		return rc;
	if (!req_type_is(r->header[HTTP_H_CONTENT_TYPE], "application/json")) {
		x->q.detail = "content-type: must be application/json";
		return 415;
	}
	if (!(msg = http_req_alloc(r, 256)))
		return ERR_NOMEM;
	rc = edit_parse_batch(r->body ? r->body : "", r->body_len, &x->edits, &x->nedits,
			      msg, 256);
	if (rc) {
		x->q.detail = msg;
		return rc == ERR_RANGE ? 422 : rc;
	}
	for (k = 0; k < x->nedits; k++)
		edit_encode(&x->edits[k], e->wire + k * EDIT_WIRE_SIZE);
	if (x->keyed) {
		struct edit *v = x->edits; /* x goes with a replay's answer */

		body_digest(e->wire, x->nedits * BATCH_EDIT, x->body);
		if ((rc = known(x, pi, seed)) != 1) {
			free(v);
			return rc;
		}
	}
	if ((rc = journal_available(e->log)) != 0) {
		free(x->edits);
		x->q.detail = rc == ERR_AGAIN ? "edit log unreachable, not applied: retry later" :
			      refused(e);
		return 503;
	}
	ask = (struct access_ask){ seed, ACCESS_PLAYER, x->edits, x->nedits };
	if ((rc = access_admit(e->access, &x->q, &x->who, &ask)) != 0 ||
	    (rc = outside(x, catalog_at(e->cat, (size_t)pi))) != 0) {
		free(x->edits);
		return rc;
	}
	/* a world made here and refused before the call returns is removed:
	 * nothing else has seen it (world.h) */
	fresh = !world_map_find(e->worlds, pi, seed);
	if ((rc = world_map_get(e->worlds, pi, seed, &x->world)) != 0 ||
	    (rc = world_reserve(x->world, x->edits, x->nedits, &x->first)) != 0) {
		if (rc == ERR_TOOBIG)
			x->q.detail = too_big(x);
		free(x->edits);
		if (fresh)
			world_map_remove(e->worlds, pi, seed);
		return rc == ERR_TOOBIG ? 422 : rc;
	}
	b = (struct batch){ .gen = gen, .gen_len = strlen(gen), .seed = seed,
			    .first_seq = x->first, .count = (uint32_t)x->nedits, .edits = e->wire,
			    .time_ms = log_time(e), .key = x->keyed ? x->key : NULL,
			    .author = sender(x), .author_len = strlen(sender(x)) };
	if ((rc = x->keyed ? fly(e, x) : 0) != 0 ||
	    (rc = journal_append(e->log, &b, edits_logged, x)) != 0) {
		if (x->keyed && rc != ERR_NOMEM)
			land(e, x);
		world_cancel(x->world, x->edits, x->nedits, x->first);
		free(x->edits);
		if (fresh)
			world_map_remove(e->worlds, pi, seed);
		x->q.detail = rc == ERR_BUSY ? "edit log queue full, not applied: retry later" :
			      transient(rc) ? "edit log unavailable, not applied: retry later" :
			      rc == ERR_NOMEM ? "out of memory, not applied: retry later" : refused(e);
		return 503;
	}
	e->appending++;
	return 0;
}

/* ---- reverts -------------------------------------------------------------------- */

/*
 * The oldest sequence number a revert of w may reach now: after the
 * world's snapshot (the edits before it are only folded) and within
 * --history by the log's clock. The batches' times never go back, so the
 * first batch inside the window is found by bisection.
 */
static uint64_t revert_floor(const struct edits *e, const struct world *w)
{
	uint64_t now = e->time_hw > now_ms() ? e->time_hw : now_ms();
	uint64_t from = now > e->history_s * 1000ull ? now - e->history_s * 1000ull : 0;
	uint64_t first = world_reach(w, from);

	return first > world_floor(w) ? first : world_floor(w);
}

/* Check r against w before it is logged: 0, or an HTTP status with detail. */
static int revert_check(struct edit_req *x, const struct world *w, struct revert *r)
{
	char *msg = http_req_alloc(x->q.http, 320);
	struct world_batch b;
	size_t i;

	if (!msg)
		return ERR_NOMEM;
	x->q.detail = msg;
	if (!w || !world_seq(w)) {
		snprintf(msg, 320, "nothing to revert: this world has no edits");
		return 422;
	}
	r->floor = revert_floor(x->e, w);
	if (r->floor > world_seq(w)) {
		snprintf(msg, 320, "nothing to revert: no edit of this world is within --history "
			 "(%u s) after its snapshot", x->e->history_s);
		return 422;
	}
	world_batch(w, world_batch_of(w, r->floor), &b);
	if (r->op == REVERT_REVERT) {
		if (((r->has & REVERT_HAS_SEQ_TO) && r->seq_to < r->floor) ||
		    ((r->has & REVERT_HAS_UNTIL) && (uint64_t)r->until_ms < b.time_ms)) {
			snprintf(msg, 320, "beyond history: the oldest edit a revert reaches is %llu, "
				 "taken at %llu ms (--history %u s, and nothing before the "
				 "world's snapshot)", (ull)r->floor, (ull)b.time_ms,
				 x->e->history_s);
			return 422;
		}
		return 0;
	}
	i = world_batch_of(w, r->undo);
	if (i < world_batches(w))
		world_batch(w, i, &b);
	if (i == world_batches(w) || !b.revert || b.revert->op != REVERT_REVERT) {
		snprintf(msg, 320, "undo: %llu is not a revert of this world that lies after its "
			 "snapshot", (ull)r->undo);
		return 422;
	}
	if (b.undone) {
		snprintf(msg, 320, "undo: revert %llu is undone already", (ull)r->undo);
		return 409;
	}
	if (b.revert->floor < r->floor) {
		snprintf(msg, 320, "beyond history: revert %llu reaches edit %llu, and the oldest "
			 "edit an undo may bring back now is %llu (--history %u s)", (ull)r->undo,
			 (ull)b.revert->floor, (ull)r->floor, x->e->history_s);
		return 422;
	}
	x->q.detail = NULL;
	return 0;
}

/* POST reverts: a revert or an undo (revert.h), one record of the log;
 * answered as a batch of edits is (edits_logged()). */
static int post_reverts(struct edit_req *x, int pi, uint64_t seed)
{
	struct edits *e = x->e;
	struct http_req *r = x->q.http;
	const char *gen = preset_name(catalog_at(e->cat, (size_t)pi)), *who;
	uint8_t wire[REVERT_WIRE];
	struct revert rv;
	struct batch b;
	char *msg;
	int rc;

	struct access_ask ask = { seed, ACCESS_MODERATOR, NULL, 0 };

	if ((rc = access_check(e->access, &x->q, &ask, &x->who)) != 0 ||
	    (rc = read_key(x, gen, seed)) != 0)
		return rc;
	if (!req_type_is(r->header[HTTP_H_CONTENT_TYPE], "application/json")) {
		x->q.detail = "content-type: must be application/json";
		return 415;
	}
	if (!(msg = http_req_alloc(r, 256)))
		return ERR_NOMEM;
	if ((rc = revert_parse(r->body ? r->body : "", r->body_len, &rv, msg, 256)) != 0) {
		x->q.detail = msg;
		return rc == ERR_RANGE ? 422 : rc;
	}
	if (rv.floor || rv.history_ms) {
		x->q.detail = "floor, history_ms: the server sets them (--history)";
		return 400;
	}
	rv.history_ms = (uint64_t)e->history_s * 1000;
	x->world = world_map_find(e->worlds, pi, seed);
	if ((rc = revert_check(x, x->world, &rv)) != 0)
		return rc;
	revert_encode(&rv, wire);
	if (x->keyed) {
		body_digest(wire, sizeof(wire), x->body);
		if ((rc = known(x, pi, seed)) != 1)
			return rc;
	}
	if ((rc = journal_available(e->log)) != 0) {
		x->q.detail = rc == ERR_AGAIN ? "edit log unreachable, not applied: retry later" :
			      refused(e);
		return 503;
	}
	if ((rc = world_reserve_revert(x->world, &x->first)) != 0)
		return rc;
	x->edits = NULL;
	x->nedits = 1;
	who = sender(x);
	b = (struct batch){ .gen = gen, .gen_len = strlen(gen), .seed = seed,
			    .first_seq = x->first, .count = 1, .revert = wire,
			    .time_ms = log_time(e), .key = x->keyed ? x->key : NULL,
			    .author = who, .author_len = strlen(who) };
	if ((rc = x->keyed ? fly(e, x) : 0) != 0 ||
	    (rc = journal_append(e->log, &b, edits_logged, x)) != 0) {
		if (x->keyed && rc != ERR_NOMEM)
			land(e, x);
		world_cancel(x->world, NULL, 1, x->first);
		x->q.detail = rc == ERR_BUSY ? "edit log queue full, not applied: retry later" :
			      transient(rc) ? "edit log unavailable, not applied: retry later" :
			      rc == ERR_NOMEM ? "out of memory, not applied: retry later" : refused(e);
		return 503;
	}
	e->appending++;
	return 0;
}

static int h_reverts(struct req *q)
{
	struct edit_req *x = edit_req_of(q);
	uint64_t seed;
	int rc, pi;

	if ((rc = req_world(q, x->e->cat, &seed, &pi)) != 0)
		return rc;
	return post_reverts(x, pi, seed);
}

/* GET edits: the log in order, or looked up (edits_read.h). */
static int get_edits(struct edit_req *x, int pi, uint64_t seed)
{
	uint64_t hash, seq = edits__world_state(x->e, pi, seed, &hash);

	return edits_read(&x->q, world_map_find(x->e->worlds, pi, seed), seq, hash);
}

static int h_edits(struct req *q)
{
	struct edit_req *x = edit_req_of(q);
	uint64_t seed;
	int rc, pi;

	if ((rc = req_world(q, x->e->cat, &seed, &pi)) != 0)
		return rc;
	if (q->http->method == HTTP_POST)
		return post_edits(x, pi, seed);
	return get_edits(x, pi, seed);
}

/* ---- the module ------------------------------------------------------------------ */

/* The methods a preflight allows the request's origin (access.h). */
static uint64_t cors_methods(struct req *q, uint64_t methods)
{
	return access_cors_methods(edit_req_of(q)->e->access, q, methods);
}

static const struct route routes[] = {
	{ "world", { "v1", "worlds", NULL }, 3, READ, 0, sizeof(struct edit_req), edits__h_world, NULL },
	{ "edits", { "v1", "worlds", NULL, "edits" }, 4, READ | REQ_M(HTTP_POST),
	  REQ_COUNT_REJECTS, sizeof(struct edit_req), h_edits, cors_methods },
	{ "hashes", { "v1", "worlds", NULL, "hashes" }, 4, READ, 0, sizeof(struct edit_req),
	  edits__h_hashes, NULL },
	{ "reverts", { "v1", "worlds", NULL, "reverts" }, 4, REQ_M(HTTP_POST), REQ_COUNT_REJECTS,
	  sizeof(struct edit_req), h_reverts, cors_methods },
	{ "events", { "v1", "worlds", NULL, "events" }, 4, REQ_M(HTTP_GET), 0,
	  sizeof(struct edit_req), edits__h_events, NULL },
	{ "presets", { "v1", "presets" }, 2, READ, 0, sizeof(struct edit_req), edits__h_presets, NULL },
};

size_t edits_routes(const struct route **out)
{
	*out = routes;
	return ARRAY_LEN(routes);
}

/*
 * What every node of a shared edit log must agree on, one line each: the
 * golden tiles' digest (selfcheck.h), then every generator's name and
 * fingerprint, in the catalog's (name) order. Into a new string *out.
 */
static int identity(const struct catalog *cat, char **out)
{
	size_t i, n = catalog_count(cat), cap = 64, len;
	char hex[17], *s;

	for (i = 0; i < n; i++)
		cap += strlen(preset_name(catalog_at(cat, i))) + 20;
	if (!(s = malloc(cap)))
		return ERR_NOMEM;
	req_hex64(hex, selfcheck_digest());
	len = (size_t)snprintf(s, cap, "golden %s\n", hex);
	for (i = 0; i < n; i++) {
		const struct preset *p = catalog_at(cat, i);

		req_hex64(hex, preset_fingerprint(p));
		len += (size_t)snprintf(s + len, cap - len, "%s %s\n", preset_name(p), hex);
	}
	*out = s;
	return 0;
}

int edits_create(struct uv_loop_s *loop, const struct catalog *cat, struct req_env *env,
		 const struct edits_config *cfg, const struct journal_config *log,
		 struct edits **out, char *err, size_t errlen)
{
	uint64_t window_ms = (uint64_t)(cfg && cfg->key_window_s ? cfg->key_window_s : 86400) * 1000;
	struct edits *e;
	char *id = NULL;
	int rc;

	if (!loop || !cat || !env || !cfg || !log || !out)
		return ERR_INVAL;
	if (!(e = calloc(1, sizeof(*e))))
		return ERR_NOMEM;
	e->cat = cat;
	e->env = env;
	e->loop = loop;
	e->history_s = cfg->history_s;
	snprintf(err, errlen, "out of memory");
	if ((rc = access_create(loop, &(struct access_config){
			cfg->token, cfg->cors_origins, cfg->allowed_hosts, cfg->token_secret,
			cfg->token_secret_len, cfg->token_public_key, cfg->token_public_key_len,
			{ cfg->rate, 5.0 * cfg->rate, cfg->area_km2 * 1e6, 5 * cfg->area_km2 * 1e6,
			  cfg->deadline_ms } }, &e->access, err, errlen)) != 0)
		;
	else if ((rc = idem_create(cfg->key_max ? cfg->key_max : 1000000, window_ms,
				   &e->keys)) != 0 ||
		 (rc = world_map_create(cat, &e->worlds)) != 0 ||
		 (rc = sse_create(loop, 0, 0, &e->sse)) != 0 || (rc = edits__presets_body(e)) != 0)
		;
	else if ((rc = identity(cat, &id)) == 0)
		rc = journal_open(log, id, loop, follow, e, &e->log, err, errlen);
	if (rc == 0)
		journal_key_window(e->log, window_ms);
	free(id);
	if (rc) {
		edits_destroy(e);
		return rc;
	}
	*out = e;
	return 0;
}

void edits_on_change(struct edits *e, edits_change_fn fn, void *arg)
{
	e->on_change = fn;
	e->change_arg = arg;
}

const struct world_map *edits_worlds(const struct edits *e)
{
	return e->worlds;
}

int edits_failed(const struct edits *e)
{
	/* the file log's failed write passes once a write succeeds; a
	 * backend's failure for good is journal_stats.broken */
	return journal_failed(e->log);
}

int edits_available(const struct edits *e)
{
	return journal_available(e->log);
}

const char *edits_unavailable_why(const struct edits *e)
{
	struct journal_stats st;
	int rc = journal_available(e->log);

	if (!rc)
		return "";
	memset(&st, 0, sizeof(st));
	journal_stats(e->log, &st);
	return st.failed && st.os_error ? strerror(st.os_error) : err_str(rc);
}

void edits_stats(const struct edits *e, struct metrics_edit_stats *es)
{
	struct snapshots_stats sn = { 0 };
	struct journal_stats ls;
	struct sse_stats ss;
	uint64_t head;

	journal_stats(e->log, &ls);
	sse_stats(e->sse, &ss);
	if (e->snaps)
		snapshots_stats(e->snaps, &sn);
	head = ls.records > ls.followed ? ls.records : ls.followed;
	*es = (struct metrics_edit_stats){ ls.commits, ls.last_commit, ls.records, ls.bytes,
					   edits_failed(e) != 0, ss.subscribers, ss.events,
					   ss.dropped, world_map_count(e->worlds),
					   e->log ? journal_base(e->log) : 0, sn.written,
					   sn.failed, sn.edits, sn.bytes, sn.ms, sn.load_ms,
					   ls.backend, !ls.down && !ls.failed, ls.followed, head,
					   head - ls.followed, ls.reconnects, ls.rtt_us, ls.restores,
					   ls.shared, idem_count(e->keys), idem_bytes(e->keys),
					   e->appending };
}

void edits_close_log(struct edits *e)
{
	if (!e)
		return;
	journal_close(e->log);
	e->log = NULL;
}

void edits_destroy(struct edits *e)
{
	if (!e)
		return;
	journal_close(e->log);
	sse_destroy(e->sse);
	world_map_destroy(e->worlds);
	cJSON_free(e->presets_json);
	access_destroy(e->access);
	free(e->flying);
	idem_destroy(e->keys);
	free(e);
}

struct world_map *edits_world_map(struct edits *e)
{
	return e->worlds;
}
