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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <llhttp.h>
#include <uv.h>
#include <xxhash.h>

#include "access.h"
#include "batch.h"
#include "catalog.h"
#include "edit.h"
#include "journal.h"
#include "err.h"
#include "http.h"
#include "idem.h"
#include "le.h"
#include "metrics.h"
#include "preset.h"
#include "request.h"
#include "routes.h"
#include "snapshots.h"
#include "selfcheck.h"
#include "sse.h"
#include "tile.h"
#include "util.h"
#include "world.h"

#define READ (REQ_M(HTTP_GET) | REQ_M(HTTP_HEAD))
#define EDITS_PAGE 1000   /* GET edits: default and largest limit */
#define HASHES_SIDE 64    /* GET hashes: largest rectangle side, chunks */
/* What a page may read of an edit's answer (CORS) */
#define EXPOSE "Access-Control-Expose-Headers: Retry-After, Idempotent-Replayed\r\n"

struct edits {
	const struct catalog *cat;
	struct req_env *env;
	struct world_map *worlds;
	struct sse *sse;
	struct journal *log;
	struct access *access;           /* who may write, how much (access.h) */
	char *presets_json;
	size_t presets_len;
	char presets_etag[20];           /* strong, XXH3-64 of the body */
	long long presets_mtime;         /* Last-Modified */
	char presets_head[160];          /* their header lines */
	struct uv_loop_s *loop;
	struct edits_limits lim;
	edits_change_fn on_change;       /* chunks a batch touched, or NULL */
	void *change_arg;
	struct idem *keys;               /* what keyed batches did (idem.h) */
	struct edit_req **flying;        /* keyed POSTs in the log's hands */
	size_t nflying, capflying;
	uint64_t appending;              /* POSTs in the log's hands */
	struct snapshots *snaps;         /* NULL: none */
	int compact;                     /* compact the log below the snapshot */
	int started_at;                  /* the log read on from the snapshot's
					    position (journal_start_at()) */
	uint64_t covered;                /* replay: batches the snapshot holds */
	uint64_t confirmed;              /* of those, ending at a world's base */
	uint64_t skipped;                /* replay: batches of absent generators */
	char skip_note[256];
	char follow_err[256];
	uint8_t wire[EDIT_BATCH_MAX * EDIT_WIRE_SIZE];
};

/* The state of a request of this module (struct req first). */
struct edit_req {
	struct req q;
	struct edits *e;
	struct world *world;
	struct access_who who;           /* who sent it (access_identify()) */
	struct edit *edits;              /* a POST's parsed batch, malloc'd */
	size_t nedits;
	uint64_t first;                  /* its reserved first seq */
	int keyed;                       /* it has an Idempotency-Key: */
	uint8_t key[BATCH_KEY];          /* its hash with the world and sender */
	uint8_t body[16];                /* XXH3-128 of the canonical edits */
};

static struct edit_req *edit_req_of(struct req *q)
{
	struct edit_req *x = container_of(q, struct edit_req, q);

	x->e = q->module;
	return x;
}

/* ---- the follow path ---------------------------------------------------------- */

/* XXH3-128 of n canonical edits, as 16 bytes. */
static void body_digest(const uint8_t *edits, size_t n, uint8_t out[16])
{
	XXH128_hash_t h = XXH3_128bits(edits, n * BATCH_EDIT);

	le_put64(out, h.low64);
	le_put64(out + 8, h.high64);
}

/* A keyed batch was applied to w: remember what it did. */
static void remember(struct edits *e, const struct batch *b, const struct world *w)
{
	struct idem_entry k = { .first_seq = b->first_seq, .hash = world_hash(w),
				.time_ms = b->time_ms, .count = b->count };

	memcpy(k.key, b->key, BATCH_KEY);
	body_digest(b->edits, b->count, k.body);
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
	    (w = world_map_find(e->worlds, gen, b->seed)) && b->first_seq <= world_base(w)) {
		if (b->first_seq + b->count - 1 > world_base(w)) {
			snprintf(e->follow_err, sizeof(e->follow_err), "edit log: a batch of"
				 " world %llu straddles its snapshot (edits %llu..%llu, snapshot"
				 " at %llu): move DIR/snapshot aside to replay the log alone",
				 (ull)b->seed, (ull)b->first_seq,
				 (ull)(b->first_seq + b->count - 1), (ull)world_base(w));
			return ERR_CORRUPT;
		}
		e->covered++;
		e->confirmed += b->first_seq + b->count - 1 == world_base(w);
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
	if (live) {
		sse_publish(e->sse, w);
		snapshots_applied(e->snaps, b->count);
	}
	if (e->on_change) {
		struct world_batch wb;

		world_batch(w, world_batches(w) - 1, &wb);
		e->on_change(e->change_arg, catalog_find(e->cat, b->gen, b->gen_len),
			     b->seed, wb.chunks, wb.nchunks);
	}
	return 0;
}

/* Compaction keeps what the snapshot does not hold. */
static int not_covered(void *arg, const struct batch *b)
{
	struct edits *e = arg;
	int gen = catalog_find(e->cat, b->gen, b->gen_len);
	const struct world *w = gen >= 0 ? world_map_find(e->worlds, gen, b->seed) : NULL;

	return !w || b->first_seq + b->count - 1 > world_base(w);
}

/* A shared log's snapshot replaces the local one when it holds more. */
static void take_shared(struct edits *e)
{
	uint8_t *buf;
	size_t len;
	char err[300];
	int rc = journal_snapshot_get(e->log, &buf, &len, err, sizeof(err));

	if (rc == ERR_NOTFOUND)
		return;
	if (rc) {
		fprintf(stderr, "terrain-server: warning: the shared snapshot cannot be read"
			" (%s); starting from the local one, if any\n", err);
		return;
	}
	rc = snapshots_offer(e->snaps, buf, len);
	free(buf);
	if (rc < 0)
		fprintf(stderr, "terrain-server: warning: the shared snapshot was not taken"
			" (%s)\n", err_str(rc));
	else if (rc)
		fprintf(stderr, "terrain-server: took the shared snapshot (%zu bytes)\n", len);
}

/* Each snapshot written here is offered to a shared log. */
static void share(void *arg, uint8_t *buf, size_t len, uint64_t edits, const char *pos)
{
	struct edits *e = arg;

	journal_snapshot_put(e->log, buf, len, edits, pos);
}

static void compacted(void *arg, int status, uint64_t dropped, const char *why)
{
	(void)arg;
	if (status)
		fprintf(stderr, "terrain-server: edit log: not compacted below the snapshot (%s);"
			" the next snapshot tries again\n", why);
	else
		fprintf(stderr, "terrain-server: edit log: compacted below the snapshot: %llu"
			" batches dropped\n", (ull)dropped);
}

/* --compact-log 1 with the file log: each snapshot written (and fsync'd)
 * lets the log drop what it holds, while serving. Not when the log holds
 * batches this server skipped (generators it lacks): they are in no
 * snapshot. */
static void compact_below(void *arg, uint8_t *buf, size_t len, uint64_t edits, const char *pos)
{
	struct edits *e = arg;
	int rc;

	(void)len;
	(void)edits;
	free(buf);
	if (e->skipped)
		return;
	rc = journal_compact_to(e->log, pos, compacted, e);
	if (rc && rc != ERR_INVAL)
		fprintf(stderr, "terrain-server: edit log: not compacted below the snapshot (%s)\n",
			err_str(rc));
}

/* Where the log is, for a snapshot cut now. */
static void position(void *arg, char *pos, size_t cap)
{
	struct edits *e = arg;

	journal_position(e->log, pos, cap);
}

/* A node behind a trimmed shared log: every world becomes the shared
 * snapshot's; event streams end (their clients resume from it and get 410
 * for what lies before it). */
static int restore(void *arg, const uint8_t *buf, size_t len, char *msg, size_t msglen)
{
	struct edits *e = arg;
	struct snapshots_loaded ld;
	uint64_t t0 = uv_hrtime();
	size_t i;
	int rc;

	for (i = 0; i < world_map_count(e->worlds); i++)
		sse_drop_world(e->sse, world_map_at(e->worlds, i, NULL));
	if ((rc = snapshots_restore(e->snaps, buf, len, &ld, msg, msglen)) != 0)
		return rc;
	fprintf(stderr, "terrain-server: restored %llu edits of %llu worlds, %llu chunks from the"
		" shared snapshot in %.2f s\n", (ull)ld.edits, (ull)ld.worlds, (ull)ld.chunks,
		(double)(uv_hrtime() - t0) / 1e9);
	return 0;
}

/* Restore the snapshot, if any: 0, or why the server cannot start. */
static int load_snapshot(struct edits *e, struct snapshots_loaded *ld, char *msg,
			 size_t msglen, char *warn, size_t warnlen)
{
	char why[300];
	int rc;

	if (!e->snaps)
		return 0;
	if (journal_shares_snapshots(e->log))
		take_shared(e);
	rc = snapshots_load(e->snaps, ld, why, sizeof(why));
	if (rc == 0 && ld->found)
		e->started_at = journal_start_at(e->log, ld->pos);
	if (rc == 0 && !ld->found && journal_base(e->log)) {
		snprintf(msg, msglen, "edit log: %llu batches were compacted away below a"
			 " snapshot, and there is no DIR/snapshot: restore it from a backup",
			 (ull)journal_base(e->log));
		return ERR_NOTFOUND;
	}
	if (rc == 0 || (!ld->touched && journal_base(e->log) == 0)) {
		if (rc)
			snprintf(warn, warnlen, "warning: snapshot not used (%s); replaying the"
				 " whole log", why);
		return 0;
	}
	snprintf(msg, msglen, "snapshot: %s; the log is compacted below it, so this server"
		 " cannot start without it: start the build that wrote it, or restore"
		 " DIR/snapshot from a backup", why);
	return rc;
}

int edits_replay(struct edits *e, char *msg, size_t msglen, char *warn, size_t warnlen)
{
	struct journal_replay_stats st;
	struct snapshots_loaded ld = { 0 };
	uint64_t n = 0, dropped = 0;
	size_t i;
	int rc, len;

	warn[0] = '\0';
	if ((rc = load_snapshot(e, &ld, msg, msglen, warn, warnlen)) != 0)
		return rc;
	rc = journal_replay(e->log, &st);
	if (rc) {
		snprintf(msg, msglen, "%s", e->follow_err[0] ? e->follow_err : st.message);
		return rc;
	}
	if (st.warning)
		snprintf(warn, warnlen, "%s", st.message);
	if (ld.found && journal_base(e->log) == 0 && !e->started_at && e->confirmed < ld.worlds) {
		snprintf(msg, msglen, "edit log: the snapshot holds edits that the log does not"
			 " (was the log cut by repair-log?): move DIR/snapshot aside to replay"
			 " the log alone");
		return ERR_CORRUPT;
	}
	if (e->compact && ld.found && e->covered &&
	    (rc = journal_compact(e->log, not_covered, e, &dropped, msg, msglen)) != 0)
		return rc;
	for (i = 0; i < world_map_count(e->worlds); i++)
		n += world_seq(world_map_at(e->worlds, i, NULL));
	len = snprintf(msg, msglen, "replayed %llu edits in %llu batches of %zu worlds",
		       (ull)n, (ull)(st.records - st.skipped), world_map_count(e->worlds));
	if (ld.found && len >= 0 && (size_t)len < msglen)
		len += snprintf(msg + len, msglen - (size_t)len, " (%llu edits from a snapshot"
				" of %llu chunks, %llu batches of the log skipped%s)",
				(ull)ld.edits, (ull)ld.chunks, (ull)e->covered,
				dropped ? " and compacted away" : "");
	if (st.skipped && len >= 0 && (size_t)len < msglen)
		snprintf(msg + len, msglen - (size_t)len,
			 "; skipped %llu batches (kept in the log): %s", (ull)st.skipped,
			 e->skip_note);
	return 0;
}

void edits_use_snapshots(struct edits *e, struct snapshots *s, int compact)
{
	snapshots_keep_keys(s, e->keys);
	e->snaps = s;
	e->compact = compact;
	if (journal_shares_snapshots(e->log)) {
		snapshots_on_written(s, share, position, 1, e);
		journal_on_restore(e->log, restore, e);
	} else if (compact) {
		snapshots_on_written(s, compact_below, position, 0, e);
	}
}

/* ---- world info and presets --------------------------------------------------- */

/* The sequence number and hash of world (pi, seed), edited or not. */
static uint64_t world_state(const struct edits *e, int pi, uint64_t seed, uint64_t *hash)
{
	const struct world *w = world_map_find(e->worlds, pi, seed);

	*hash = w ? world_hash(w) :
		edit_hash_start(preset_fingerprint(catalog_at(e->cat, (size_t)pi)), seed);
	return w ? world_seq(w) : 0;
}

/* name with everything but unreserved characters percent-encoded. */
static void url_encode(char *out, size_t cap, const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *name && n + 4 < cap; name++) {
		unsigned char c = (unsigned char)*name;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c)) {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = '\0';
}

/* The fields a world and a preset listing share. */
static void add_preset_fields(cJSON *o, const struct preset *p)
{
	cJSON *h;
	char fp[17];

	req_hex64(fp, preset_fingerprint(p));
	cJSON_AddStringToObject(o, "fingerprint", fp);
	cJSON_AddNumberToObject(o, "algorithm_version", PRESET_ALGO_VERSION);
	cJSON_AddNumberToObject(o, "chunk_size", 1 << preset_chunk_log2(p));
	cJSON_AddNumberToObject(o, "min_lod", 0);
	cJSON_AddNumberToObject(o, "max_lod", preset_max_lod(p));
	cJSON_AddNumberToObject(o, "quantum_um", preset_quantum_um(p));
	h = cJSON_AddObjectToObject(o, "height");
	if (h) {
		cJSON_AddNumberToObject(h, "min", preset_min_height(p));
		cJSON_AddNumberToObject(h, "max", preset_max_height(p));
	}
	cJSON_AddNumberToObject(o, "sea_level", preset_sea_level(p));
}

/* World info's "links": where a client given the world's URL finds the
 * rest, relative to this server as "tiles" are: the TileJSON document of
 * each map style (maps.c) and the OpenAPI description. gen is URL-encoded. */
static void add_links(cJSON *o, const char *seed, const char *gen)
{
	static const char *const styles[] = { "terrarium", "shaded" };
	cJSON *l = cJSON_AddObjectToObject(o, "links"), *maps;
	char url[400];
	size_t i;

	if (!l || !(maps = cJSON_AddObjectToObject(l, "maps")))
		return;
	for (i = 0; i < ARRAY_LEN(styles); i++) {
		snprintf(url, sizeof(url), "/v1/worlds/%s/maps/%s?gen=%s", seed, styles[i], gen);
		cJSON_AddStringToObject(maps, styles[i], url);
	}
	cJSON_AddStringToObject(l, "openapi", "/v1/openapi.json");
}

static int h_world(struct req *q)
{
	struct edit_req *x = edit_req_of(q);
	const struct preset *p;
	const struct world *w;
	char seed_s[24], hash[17], gen[256], url[400];
	cJSON *o, *tiles;
	uint64_t seed, seq, h;
	int rc, pi;

	if ((rc = req_world(q, x->e->cat, &seed, &pi)) != 0)
		return rc;
	p = catalog_at(x->e->cat, (size_t)pi);
	snprintf(seed_s, sizeof(seed_s), "%llu", (ull)seed);
	seq = world_state(x->e, pi, seed, &h);
	req_hex64(hash, h);
	url_encode(gen, sizeof(gen), preset_name(p));
	snprintf(url, sizeof(url), "/v1/worlds/%s/chunks/{lod}/{cx}/{cz}?gen=%s",
		 seed_s, gen);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "seed", seed_s);
	cJSON_AddStringToObject(o, "generator", preset_name(p));
	cJSON_AddStringToObject(o, "description", preset_description(p) ? preset_description(p) : "");
	add_preset_fields(o, p);
	cJSON_AddNumberToObject(o, "tile_format_version", TILE_VERSION);
	cJSON_AddStringToObject(o, "content_type", ROUTE_TILE_TYPE);
	tiles = cJSON_AddArrayToObject(o, "tiles");
	if (tiles)
		cJSON_AddItemToArray(tiles, cJSON_CreateString(url));
	req_json_u64(o, "edit_seq", seq);
	cJSON_AddStringToObject(o, "world_hash", hash);
	w = world_map_find(x->e->worlds, pi, seed);
	req_json_u64(o, "base", w ? world_base(w) : 0);
	/* the golden tiles this binary checked at start: a client that
	 * generates tiles itself compares its own (local mode) */
	req_hex64(hash, selfcheck_digest());
	cJSON_AddStringToObject(o, "selfcheck", hash);
	add_links(o, seed_s, gen);
	req_respond_json(q, 200, o, "Cache-Control: no-cache\r\n");
	return 0;
}

/* GET presets: the body built once, with its ETag and Last-Modified (the
 * newest preset source's mtime, catalog.h) for 304s. */
static int h_presets(struct req *q)
{
	struct edit_req *x = edit_req_of(q);
	struct edits *e = x->e;

	if (req_not_modified(q, e->presets_etag, e->presets_mtime))
		req_respond_copy(q, 304, NULL, e->presets_head, NULL, 0);
	else
		req_respond_copy(q, 200, "application/json", e->presets_head,
				 e->presets_json, e->presets_len);
	return 0;
}

/* The /v1/presets body, built once. */
static int presets_body(struct edits *e)
{
	cJSON *o = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(o, "presets");
	char date[30];
	size_t i;

	if (!o || !list) {
		cJSON_Delete(o);
		return ERR_NOMEM;
	}
	for (i = 0; i < catalog_count(e->cat); i++) {
		const struct preset *p = catalog_at(e->cat, i);
		cJSON *it = cJSON_CreateObject();
		const char *d = preset_description(p);

		if (!it)
			break;
		cJSON_AddItemToArray(list, it);
		cJSON_AddStringToObject(it, "name", preset_name(p));
		cJSON_AddStringToObject(it, "description", d ? d : "");
		add_preset_fields(it, p);
		cJSON_AddItemToObject(it, "params", cJSON_Parse(preset_canonical(p)));
	}
	e->presets_json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!e->presets_json)
		return ERR_NOMEM;
	e->presets_len = strlen(e->presets_json);
	snprintf(e->presets_etag, sizeof(e->presets_etag), "\"%016llx\"",
		 (ull)XXH3_64bits(e->presets_json, e->presets_len));
	e->presets_mtime = catalog_mtime(e->cat) < (long long)time(NULL) ?
			   catalog_mtime(e->cat) : (long long)time(NULL);
	req_http_date(date, e->presets_mtime);
	snprintf(e->presets_head, sizeof(e->presets_head),
		 "Cache-Control: no-cache\r\nETag: %s\r\nLast-Modified: %s\r\n",
		 e->presets_etag, date);
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
		free(x->edits);
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
	free(x->edits);
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
		body_digest(e->wire, x->nedits, x->body);
		if ((rc = known(x, pi, seed)) != 1) {
			free(x->edits);
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
			    .time_ms = now_ms(), .key = x->keyed ? x->key : NULL };
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

/* GET edits?since=SEQ&limit=N: the log after SEQ, at most N edits. */
static int get_edits(struct edit_req *x, int pi, uint64_t seed)
{
	const struct world *w = world_map_find(x->e->worlds, pi, seed);
	uint64_t since = 0, limit = EDITS_PAGE, seq, hash, s;
	char hex[17];
	cJSON *o, *arr;
	int rc;

	if ((rc = req_query_u64(&x->q, "since", &since, NULL,
				"since: not a decimal sequence number")) ||
	    (rc = req_query_u64(&x->q, "limit", &limit, NULL, "limit: not a decimal count")))
		return rc;
	if (limit == 0) {
		x->q.detail = "limit: must be at least 1";
		return ERR_INVAL;
	}
	if (limit > EDITS_PAGE)
		limit = EDITS_PAGE;
	if (w && since < world_base(w)) {
		x->q.detail = "since: the edits up to this world's snapshot are folded into"
			      " it (see base in GET /v1/worlds/SEED); fetch tiles afresh and"
			      " read on from there";
		return 410;
	}
	seq = world_state(x->e, pi, seed, &hash);
	req_hex64(hex, hash);
	o = cJSON_CreateObject();
	req_json_u64(o, "since", since);
	req_json_u64(o, "seq", seq);
	cJSON_AddStringToObject(o, "world_hash", hex);
	arr = cJSON_AddArrayToObject(o, "edits");
	/* Counted from since up, never past seq: since may be 2^64 - 1, and
	 * since + 1 must not wrap to 0 (that read edit 0 of a NULL world). */
	for (s = since; arr && s < seq && s - since < limit; s++)
		if (edit_to_json(world_edit(w, s + 1), s + 1, arr)) {
			cJSON_Delete(o);
			return ERR_NOMEM;
		}
	if (s < seq)
		req_json_u64(o, "next", s);
	req_respond_json(&x->q, 200, o, "Cache-Control: no-store\r\n");
	return 0;
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

/* GET hashes?cx0=&cz0=&cx1=&cz1=: edit versions and hashes of a rectangle. */
static int h_hashes(struct req *q)
{
	static const char bad[] = "cx0, cz0, cx1, cz1: required, decimal int32";
	struct edit_req *x = edit_req_of(q);
	int32_t cx0, cz0, cx1, cz1;
	const struct world *w;
	uint64_t seed, seq, hash;
	int64_t cx, cz;
	char hex[17];
	cJSON *o, *arr;
	int rc, pi;

	if ((rc = req_world(q, x->e->cat, &seed, &pi)) != 0 ||
	    (rc = req_query_i32(q, "cx0", &cx0, bad)) || (rc = req_query_i32(q, "cz0", &cz0, bad)) ||
	    (rc = req_query_i32(q, "cx1", &cx1, bad)) || (rc = req_query_i32(q, "cz1", &cz1, bad)))
		return rc;
	if (cx1 < cx0 || cz1 < cz0 || (int64_t)cx1 - cx0 >= HASHES_SIDE ||
	    (int64_t)cz1 - cz0 >= HASHES_SIDE) {
		q->detail = "rectangle: need cx0 <= cx1, cz0 <= cz1, at most 64 x 64 chunks";
		return ERR_INVAL;
	}
	w = world_map_find(x->e->worlds, pi, seed);
	seq = world_state(x->e, pi, seed, &hash);
	req_hex64(hex, hash);
	o = cJSON_CreateObject();
	req_json_u64(o, "seq", seq);
	cJSON_AddStringToObject(o, "world_hash", hex);
	arr = cJSON_AddArrayToObject(o, "chunks");
	for (cz = cz0; w && arr && cz <= cz1; cz++)
		for (cx = cx0; cx <= cx1; cx++) {
			struct world_chunk ch;
			cJSON *c;

			world_chunk(w, (int32_t)cx, (int32_t)cz, &ch);
			if (!ch.version)
				continue;
			if (!(c = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, c)) {
				cJSON_Delete(c);
				cJSON_Delete(o);
				return ERR_NOMEM;
			}
			req_hex64(hex, ch.hash);
			cJSON_AddNumberToObject(c, "cx", (double)cx);
			cJSON_AddNumberToObject(c, "cz", (double)cz);
			req_json_u64(c, "version", ch.version);
			cJSON_AddStringToObject(c, "hash", hex);
		}
	req_respond_json(q, 200, o, "Cache-Control: no-store\r\n");
	return 0;
}

static const char sse_head[] =
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	"Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n" REQ_CORS;

/* GET events: a stream of the world's batches (sse.h). */
static int h_events(struct req *q)
{
	struct edit_req *x = edit_req_of(q);
	struct http_response head = { 200, { sse_head, sizeof(sse_head) - 1 },
				      { NULL, 0 }, NULL, NULL, NULL };
	const char *id = q->http->header[HTTP_H_LAST_EVENT_ID];
	const char *bad = "last-event-id: not a decimal sequence number";
	struct edits *e = x->e;
	unsigned label = q->label;
	struct metrics *m = q->env->metrics;
	uint64_t seed, since = 0;
	int rc, pi, resume = id != NULL;

	if ((rc = req_world(q, e->cat, &seed, &pi)) != 0)
		return rc;
	if (id && req_parse_u64(id, strlen(id), &since)) {
		q->detail = bad;
		return ERR_INVAL;
	}
	if (!id && (rc = req_query_u64(q, "last_event_id", &since, &resume, bad)) != 0)
		return rc;
	/* a world without edits is not created: the stream waits for it */
	x->world = world_map_find(e->worlds, pi, seed);
	if (resume && x->world && since < world_base(x->world)) {
		q->detail = "last-event-id: the events up to this world's snapshot are folded"
			    " into it (see base in GET /v1/worlds/SEED); fetch tiles afresh"
			    " and subscribe without it";
		return 410;
	}
	/* x lives in the request's arena, which may go with the head */
	rc = sse_subscribe(e->sse, q->http, &head, pi, seed, x->world, resume, since);
	if (rc != 0) {
		q->detail = "cannot open the event stream";
		return ERR_BUSY;
	}
	metrics_request(m, label, 200);
	return 0;
}

/* ---- the module ------------------------------------------------------------------ */

/* The methods a preflight allows the request's origin (access.h). */
static uint64_t cors_methods(struct req *q, uint64_t methods)
{
	return access_cors_methods(edit_req_of(q)->e->access, q, methods);
}

static const struct route routes[] = {
	{ "world", { "v1", "worlds", NULL }, 3, READ, 0, sizeof(struct edit_req), h_world, NULL },
	{ "edits", { "v1", "worlds", NULL, "edits" }, 4, READ | REQ_M(HTTP_POST),
	  REQ_COUNT_REJECTS, sizeof(struct edit_req), h_edits, cors_methods },
	{ "hashes", { "v1", "worlds", NULL, "hashes" }, 4, READ, 0, sizeof(struct edit_req),
	  h_hashes, NULL },
	{ "events", { "v1", "worlds", NULL, "events" }, 4, REQ_M(HTTP_GET), 0,
	  sizeof(struct edit_req), h_events, NULL },
	{ "presets", { "v1", "presets" }, 2, READ, 0, sizeof(struct edit_req), h_presets, NULL },
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
		 const struct edits_config *cfg, struct edits **out, char *err,
		 size_t errlen)
{
	struct edits *e;
	char *id = NULL;
	int rc;

	if (!loop || !cat || !env || !cfg || !out)
		return ERR_INVAL;
	if (!(e = calloc(1, sizeof(*e))))
		return ERR_NOMEM;
	e->cat = cat;
	e->env = env;
	e->loop = loop;
	e->lim = cfg->limits;
	snprintf(err, errlen, "out of memory");
	if ((rc = access_create(loop, &(struct access_config){
			cfg->token, cfg->cors_origins, cfg->allowed_hosts, cfg->token_secret,
			cfg->token_secret_len, cfg->token_public_key, cfg->token_public_key_len,
			{ cfg->limits.edits_per_s, cfg->limits.edit_burst,
			  cfg->limits.area_m2_per_s, cfg->limits.area_burst_m2,
			  cfg->limits.deadline_ms } }, &e->access, err, errlen)) != 0)
		;
	else if ((rc = idem_create(cfg->limits.key_max ? cfg->limits.key_max : 1000000,
				   (uint64_t)(cfg->limits.key_window_s ? cfg->limits.key_window_s :
					      86400) * 1000, &e->keys)) != 0 ||
		 (rc = world_map_create(cat, &e->worlds)) != 0 ||
		 (rc = sse_create(loop, 0, 0, &e->sse)) != 0 || (rc = presets_body(e)) != 0)
		;
	else if ((rc = identity(cat, &id)) == 0)
		rc = journal_open(cfg->log, &(struct journal_auth){ cfg->log_password,
								 cfg->log_sentinel_password },
				  cfg->data_dir, id, loop, follow, e, &e->log, err, errlen);
	if (rc == 0)
		journal_key_window(e->log, (uint64_t)(cfg->limits.key_window_s ?
						      cfg->limits.key_window_s : 86400) * 1000);
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
