/*
 * edits_info.c - the edits module's read-only routes (edits.h): world
 * info, the generator presets, chunk hashes and event streams. They read
 * the world map; only edits.c's follow path changes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <llhttp.h>
#include <xxhash.h>

#include "api/metrics.h"
#include "api/request.h"
#include "edit.h"
#include "edits.h"
#include "edits_int.h"
#include "err.h"
#include "http/http.h"
#include "preset.h"
#include "selfcheck.h"
#include "sse.h"
#include "tile.h"
#include "worlds/catalog.h"
#include "worlds/world.h"

#define HASHES_SIDE 64    /* GET hashes: largest rectangle side, chunks */

/* ---- world info and presets --------------------------------------------------- */

/* The sequence number and hash of world (pi, seed), edited or not. */
uint64_t edits__world_state(const struct edits *e, int pi, uint64_t seed, uint64_t *hash)
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

int edits__h_world(struct req *q)
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
	seq = edits__world_state(x->e, pi, seed, &h);
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
	cJSON_AddStringToObject(o, "content_type", TILE_MEDIA_TYPE);
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
int edits__h_presets(struct req *q)
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
int edits__presets_body(struct edits *e)
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

/* ---- chunk hashes and events ------------------------------------------------- */

/* GET hashes?cx0=&cz0=&cx1=&cz1=: edit versions and hashes of a rectangle. */
int edits__h_hashes(struct req *q)
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
	seq = edits__world_state(x->e, pi, seed, &hash);
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
int edits__h_events(struct req *q)
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
