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

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cjson/cJSON.h>
#include <llhttp.h>
#include <uv.h>
#include <xxhash.h>

#include "batch.h"
#include "catalog.h"
#include "edit.h"
#include "edits_read.h"
#include "journal.h"
#include "err.h"
#include "http.h"
#include "idem.h"
#include "le.h"
#include "metrics.h"
#include "preset.h"
#include "revert.h"
#include "request.h"
#include "routes.h"
#include "snapshots.h"
#include "selfcheck.h"
#include "sse.h"
#include "tile.h"
#include "util.h"
#include "world.h"

#define READ (REQ_M(HTTP_GET) | REQ_M(HTTP_HEAD))
#define HASHES_SIDE 64    /* GET hashes: largest rectangle side, chunks */
#define CLIENTS 4096      /* rate buckets kept; the oldest go first */
/* What a page may read of an edit's answer (CORS) */
#define EXPOSE "Access-Control-Expose-Headers: Retry-After, Idempotent-Replayed\r\n"

/* One client's budgets (token buckets, refilled by time). */
struct bucket {
	uint8_t addr[16];                /* peer address, IPv4-mapped */
	uint64_t at_ms;                  /* last refill */
	double edits, area;              /* budget left: edits, square metres */
	int used;
};

struct edits {
	const struct catalog *cat;
	struct req_env *env;
	struct world_map *worlds;
	struct sse *sse;
	struct journal *log;
	char *token;                     /* NULL: loopback clients only */
	char *cors_origins;              /* comma-separated, or NULL */
	char *allowed_hosts;             /* comma-separated, or NULL */
	char *presets_json;
	size_t presets_len;
	char presets_etag[20];           /* strong, XXH3-64 of the body */
	long long presets_mtime;         /* Last-Modified */
	char presets_head[160];          /* their header lines */
	struct uv_loop_s *loop;
	struct edits_limits lim;
	struct bucket *buckets;          /* CLIENTS, open addressing on addr */
	uint64_t late_said_ms;           /* when a late edit was last logged */
	uint64_t time_hw;                /* the latest time a record was stamped with */
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
	if (b->time_ms > e->time_hw)
		e->time_hw = b->time_ms;
	if (live) {
		sse_publish(e->sse, w);
		snapshots_applied(e->snaps, b->count);
	}
	if (e->on_change) {
		struct world_batch wb;

		world_batch(w, world_batches(w) - 1, &wb);
		e->on_change(e->change_arg, catalog_find(e->cat, b->gen, b->gen_len),
			     b->seed, wb.chunks, wb.nchunks, b->revert ? b->first_seq : 0);
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

/* The host part of a Host value (for listing), into the arena. */
static int host_listed(const struct edits *e, const char *host)
{
	const char *colon = host[0] == '[' ? strstr(host, "]:") : strchr(host, ':');
	size_t n = colon ? (size_t)(colon - host) + (host[0] == '[') : strlen(host);

	return listed(e->allowed_hosts, host, strlen(host)) ||
	       listed(e->allowed_hosts, host, n);
}

/* Whether a browser page at the request's Origin may edit: no Origin (not
 * a browser's cross-site request), the server's own origin (the viewer),
 * or one of --cors-origins. */
static int origin_allowed(const struct edits *e, const struct http_req *r)
{
	const char *origin = r->header[HTTP_H_ORIGIN], *host = r->header[HTTP_H_HOST];

	if (!origin)
		return 1;
	if (host && !strncasecmp(origin, "http://", 7) && !strcasecmp(origin + 7, host))
		return 1;
	return listed(e->cors_origins, origin, strlen(origin));
}

/* Arena copy of a formatted detail. */
static const char *detail(struct edit_req *x, const char *fmt, const char *arg)
{
	char *msg = http_req_alloc(x->q.http, 320);

	if (!msg)
		return "edits refused";
	snprintf(msg, 320, fmt, arg);
	return msg;
}

/*
 * Who may edit (docs/edits.md): a browser page only from an allowed
 * origin; then the bearer token when one is set; else only loopback
 * clients that name a loopback host (or an --allowed-hosts one: DNS
 * rebinding) and come straight, not through a proxy.
 */
static int authorise(struct edit_req *x)
{
	struct http_req *r = x->q.http;
	const char *host = r->header[HTTP_H_HOST];
	struct sockaddr_storage ss;

	if (!origin_allowed(x->e, r)) {
		x->q.detail = detail(x, "origin: %.200s may not edit; edits from a web page "
				     "need the server's own origin or one of --cors-origins",
				     r->header[HTTP_H_ORIGIN]);
		return 403;
	}
	if (x->e->token) {
		if (http_bearer_matches(r->header[HTTP_H_AUTHORIZATION], x->e->token))
			return 0;
		x->q.detail = r->header[HTTP_H_AUTHORIZATION] ?
			      "authorization: wrong bearer token" :
			      "authorization: bearer token required";
		return 401;
	}
	if (r->proxy) {
		x->q.detail = detail(x, "%s: edits through a proxy need --edit-token: "
				     "behind a proxy every client looks local", r->proxy);
		return 403;
	}
	if (host && !host_is_loopback(host) && !host_listed(x->e, host)) {
		x->q.detail = detail(x, "host: %.200s is not a loopback name; without "
				     "--edit-token edits need a loopback Host or one of "
				     "--allowed-hosts", host);
		return 403;
	}
	if (http_req_peer(r, &ss) == 0 && http_peer_is_loopback((const struct sockaddr *)&ss))
		return 0;
	x->q.detail = "edits are open to loopback clients only (no edit token is set)";
	return 403;
}

/* The methods a preflight allows the request's origin: no POST for an
 * origin that may not edit. */
static uint64_t cors_methods(struct req *q, uint64_t methods)
{
	struct edit_req *x = edit_req_of(q);

	return origin_allowed(x->e, q->http) ? methods : methods & ~REQ_M(HTTP_POST);
}

/* Reverts are for moderators and admins: today the edit token's holder
 * (admin) and, without a token, loopback clients (local). */
static int may_revert(struct edit_req *x)
{
	(void)x;
	return 0;
}

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

/* Who sent r, as the keys' scope: one credential today (docs/edits.md). */
static const char *sender(const struct edits *e)
{
	return e->token ? "admin" : "local";
}

/*
 * Read the request's Idempotency-Key into x: its hash with the world and
 * the sender (a key is theirs alone), and the batch's digest. 0 (also
 * when there is none) or 400.
 */
static int read_key(struct edit_req *x, const char *gen, uint64_t seed)
{
	const char *v = x->q.http->header[HTTP_H_IDEMPOTENCY_KEY], *who = sender(x->e);
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

/* The peer's address as 16 bytes (IPv4 mapped into IPv6). */
static void peer_key(const struct http_req *r, uint8_t key[16])
{
	struct sockaddr_storage ss;

	memset(key, 0, 16);
	if (http_req_peer(r, &ss) != 0)
		return;
	if (ss.ss_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	}
}

/* The bucket of key, refilled to now; a full table gives up its stalest. */
static struct bucket *bucket_of(struct edits *e, const uint8_t key[16], uint64_t now)
{
	size_t i = (size_t)XXH3_64bits(key, 16) % CLIENTS, k, stale = i;
	struct bucket *b;
	double dt;

	for (k = 0; k < 16; k++) { /* a short probe: this is a cache of budgets */
		b = &e->buckets[(i + k) % CLIENTS];
		if (b->used && !memcmp(b->addr, key, 16))
			break;
		if (!b->used || b->at_ms < e->buckets[stale].at_ms)
			stale = (i + k) % CLIENTS;
		b = NULL;
	}
	if (!b) {
		b = &e->buckets[stale];
		*b = (struct bucket){ .at_ms = now, .edits = e->lim.edit_burst,
				      .area = e->lim.area_burst_m2, .used = 1 };
		memcpy(b->addr, key, 16);
	}
	dt = (double)(now - b->at_ms) / 1000.0;
	b->at_ms = now;
	b->edits += dt * e->lim.edits_per_s;
	if (b->edits > e->lim.edit_burst)
		b->edits = e->lim.edit_burst;
	b->area += dt * e->lim.area_m2_per_s;
	if (b->area > e->lim.area_burst_m2)
		b->area = e->lim.area_burst_m2;
	return b;
}

/* Ground area the batch's brushes cover, square metres (pi r^2 each). */
static double batch_area(const struct edit *v, size_t n)
{
	double a = 0;
	size_t k;

	for (k = 0; k < n; k++)
		a += 3.14159265358979 * ((double)v[k].radius_mm / 1000.0) *
		     ((double)v[k].radius_mm / 1000.0);
	return a;
}

/*
 * Each client (peer address) may post edits_per_s edits and area_m2_per_s
 * square metres of brushes a second, in bursts of up to the burst sizes;
 * past them 429 with Retry-After. A batch larger than a burst can never
 * pass: 422. Limits of 0 are off.
 */
static int rate_limit(struct edit_req *x)
{
	struct edits *e = x->e;
	const struct edits_limits *l = &e->lim;
	double area = batch_area(x->edits, x->nedits);
	uint8_t key[16];
	struct bucket *b;

	if (l->edits_per_s <= 0 && l->area_m2_per_s <= 0)
		return 0;
	if ((l->edits_per_s > 0 && (double)x->nedits > l->edit_burst) ||
	    (l->area_m2_per_s > 0 && area > l->area_burst_m2)) {
		x->q.detail = "edits: the batch is larger than one client may send at once "
			      "(--edit-rate, --edit-area)";
		return 422;
	}
	peer_key(x->q.http, key);
	b = bucket_of(e, key, uv_now(e->loop));
	if ((l->edits_per_s > 0 && b->edits < (double)x->nedits) ||
	    (l->area_m2_per_s > 0 && b->area < area)) {
		x->q.detail = "edits: too many edits from this client, retry later "
			      "(--edit-rate, --edit-area)";
		return 429;
	}
	if (l->edits_per_s > 0)
		b->edits -= (double)x->nedits;
	if (l->area_m2_per_s > 0)
		b->area -= area;
	return 0;
}

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
 * 503 for an edit that reached this node more than --edit-deadline after
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
static int late(struct edit_req *x)
{
	struct edits *e = x->e;
	uint64_t start = request_start_ms(x->q.http->header[HTTP_H_X_REQUEST_START]);
	uint64_t now_ms, waited, mono = uv_now(e->loop);
	struct timespec ts;
	char *msg;

	if (!e->lim.deadline_ms || !start || clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0;
	now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (now_ms <= start || (waited = now_ms - start) <= e->lim.deadline_ms)
		return 0;
	if (!e->late_said_ms || mono - e->late_said_ms >= 60000) {
		e->late_said_ms = mono;
		fprintf(stderr, "terrain-server: refused an edit that arrived %.1f s after its "
			"front received it (--edit-deadline %.1f s; the next ones this minute "
			"are not logged)\n", (double)waited / 1000.0,
			(double)e->lim.deadline_ms / 1000.0);
	}
	msg = http_req_alloc(x->q.http, 160);
	if (msg)
		snprintf(msg, 160, "edit arrived %.1f s after the front received it "
			 "(--edit-deadline %.1f s): not applied, retry",
			 (double)waited / 1000.0, (double)e->lim.deadline_ms / 1000.0);
	x->q.detail = msg ? msg : "edit arrived after --edit-deadline: not applied, retry";
	return 503;
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
	struct batch b;
	size_t k;
	char *msg;
	int rc, fresh;

	if ((rc = authorise(x)) != 0 || (rc = read_key(x, gen, seed)) != 0)
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
		body_digest(e->wire, x->nedits * BATCH_EDIT, x->body);
		if ((rc = known(x, pi, seed)) != 1) {
			free(x->edits);
			return rc;
		}
	}
	if ((rc = late(x)) != 0 || (rc = journal_available(e->log)) != 0) {
		free(x->edits);
		if (rc < 0)
			x->q.detail = rc == ERR_AGAIN ? "edit log unreachable, not applied: retry "
				      "later" : refused(e);
		return 503;
	}
	if ((rc = rate_limit(x)) != 0 || (rc = outside(x, catalog_at(e->cat, (size_t)pi))) != 0) {
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
			    .author = sender(e), .author_len = strlen(sender(e)) };
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
	uint64_t from = now > e->lim.history_s * 1000ull ? now - e->lim.history_s * 1000ull : 0;
	size_t lo = 0, hi = world_batches(w);
	struct world_batch b;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		world_batch(w, mid, &b);
		if (b.time_ms < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == world_batches(w))
		return world_seq(w) + 1;
	world_batch(w, lo, &b);
	return b.first_seq > world_floor(w) ? b.first_seq : world_floor(w);
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
			 "(%u s) after its snapshot", x->e->lim.history_s);
		return 422;
	}
	world_batch(w, world_batch_of(w, r->floor), &b);
	if (r->op == REVERT_REVERT) {
		if (((r->has & REVERT_HAS_SEQ_TO) && r->seq_to < r->floor) ||
		    ((r->has & REVERT_HAS_UNTIL) && (uint64_t)r->until_ms < b.time_ms)) {
			snprintf(msg, 320, "beyond history: the oldest edit a revert reaches is %llu, "
				 "taken at %llu ms (--history %u s, and nothing before the "
				 "world's snapshot)", (ull)r->floor, (ull)b.time_ms,
				 x->e->lim.history_s);
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
			 (ull)b.revert->floor, (ull)r->floor, x->e->lim.history_s);
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

	if ((rc = authorise(x)) != 0 || (rc = may_revert(x)) != 0 ||
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
	x->world = world_map_find(e->worlds, pi, seed);
	if ((rc = revert_check(x, x->world, &rv)) != 0)
		return rc;
	revert_encode(&rv, wire);
	if (x->keyed) {
		body_digest(wire, sizeof(wire), x->body);
		if ((rc = known(x, pi, seed)) != 1)
			return rc;
	}
	if ((rc = late(x)) != 0 || (rc = journal_available(e->log)) != 0) {
		if (rc < 0)
			x->q.detail = rc == ERR_AGAIN ? "edit log unreachable, not applied: retry "
				      "later" : refused(e);
		return 503;
	}
	if ((rc = world_reserve_revert(x->world, &x->first)) != 0)
		return rc;
	x->edits = NULL;
	x->nedits = 1;
	who = sender(e);
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
	uint64_t hash, seq = world_state(x->e, pi, seed, &hash);

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

static const struct route routes[] = {
	{ "world", { "v1", "worlds", NULL }, 3, READ, 0, sizeof(struct edit_req), h_world, NULL },
	{ "edits", { "v1", "worlds", NULL, "edits" }, 4, READ | REQ_M(HTTP_POST),
	  REQ_COUNT_REJECTS, sizeof(struct edit_req), h_edits, cors_methods },
	{ "hashes", { "v1", "worlds", NULL, "hashes" }, 4, READ, 0, sizeof(struct edit_req),
	  h_hashes, NULL },
	{ "reverts", { "v1", "worlds", NULL, "reverts" }, 4, REQ_M(HTTP_POST), REQ_COUNT_REJECTS,
	  sizeof(struct edit_req), h_reverts, cors_methods },
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
	if ((cfg->token && cfg->token[0] && !(e->token = strdup(cfg->token))) ||
	    (cfg->cors_origins && cfg->cors_origins[0] &&
	     !(e->cors_origins = strdup(cfg->cors_origins))) ||
	    (cfg->allowed_hosts && cfg->allowed_hosts[0] &&
	     !(e->allowed_hosts = strdup(cfg->allowed_hosts))))
		rc = ERR_NOMEM;
	else if (!(e->buckets = calloc(CLIENTS, sizeof(*e->buckets))))
		rc = ERR_NOMEM;
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
	free(e->token);
	free(e->cors_origins);
	free(e->allowed_hosts);
	free(e->buckets);
	free(e->flying);
	idem_destroy(e->keys);
	free(e);
}

struct world_map *edits_world_map(struct edits *e)
{
	return e->worlds;
}
