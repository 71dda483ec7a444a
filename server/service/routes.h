/*
 * routes.h - the HTTP API of the terrain server, and its router.
 *
 * One table maps method + path to a handler: the routes that each
 * resource declares (tiles.h: tiles, bundles, objects; maps.h: web maps;
 * edits.h: worlds, edits, hashes, events, presets) and the service routes
 * of service.c (health, metrics, the API description, the viewer), put
 * together by service.c. api/request.c is the only place where ERR_*
 * codes become HTTP statuses (req_status());
 * request.h makes the answers, error bodies included: JSON {"error":
 * "<token>", "detail": "<text>"}. The HTTP mechanics (parsing, ordering, limits) are http.c's;
 * generation is tilegen.c's (objects.c's for object lists), run on the
 * libuv worker pool with the eroded regions of regions.c; tiles are kept
 * in cache.c; bundle.c lays out batch bodies; the edit log is journal.h's.
 *
 * API (every response has Access-Control-Allow-Origin: * and, unless
 * --node-name is empty, X-Terrain-Node: the node's name, for clients behind
 * a proxy; docs/cluster-front.md):
 *
 *   GET|HEAD /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz}[?gen=NAME][&layers=L]
 *	One tile, Content-Type application/vnd.terrain.tile (a vendor type
 *	in the style of IANA's vnd. tree; the format is docs/tile-format.md),
 *	made by pipeline_tile() with the eroded regions of the shared region
 *	cache (--region-cache-mb), with every acknowledged edit touching the
 *	chunk applied and its edit version in the header. layers=height (the
 *	default) gives a version-7 tile (1 for a small tile);
 *	layers=height,material a version-8 tile with the material layer (the
 *	same heights; ?format= asks for older versions, tiles.c); another
 *	name is a 400 that quotes the list. The cache key holds the edit version and the
 *	layers, so an edit makes exactly the touched chunks' tiles stale, at
 *	every LOD. Materials take slopes from the samples one LOD step beyond
 *	the chunk, so a material tile is made with the edits of the chunk and
 *	its 8 neighbours and keyed by their largest edit version: an edit
 *	beside a chunk changes its border materials as it does the
 *	neighbour's, and they agree at the seam (the header's edit_seq stays
 *	the chunk's own). Until the chunk has edits, the identity body is
 *	byte-identical to `terrain-server generate [--layers L]`.
 *	Content-Encoding: zstd or gzip (x-gzip), whichever Accept-Encoding
 *	gives the higher q, zstd on a tie (req_coding(): "*" counts for a
 *	coding not named, "gzip;q=0" forbids gzip, an explicit identity q
 *	above both wins); otherwise identity. ?encoding=zstd sends the zstd
 *	frame itself as the body, Content-Type application/zstd, no
 *	Content-Encoding and no Vary, whatever Accept-Encoding says (for
 *	clients with their own decoder; docs/codings.md). Vary:
 *	Accept-Encoding. X-Cache: hit or miss. Range is ignored (200).
 *	ETag: the strong tag "<16 hex of the tile checksum>" for identity,
 *	"<16 hex>-z" for zstd (and the frame) and "<16 hex>-g" for gzip: the
 *	representations have different bytes, so they must not share a
 *	strong validator. If-None-Match (a list, weak W/ forms compare
 *	weakly as RFC 9110 says, or *) gives 304.
 *	Cache-Control: public, max-age=N (--max-age, 60 s by default; 0 sends
 *	no-cache). A tile is a pure function of the world state, so the
 *	trade-off is only about edits: a CDN or client may serve a tile up to
 *	max-age seconds after an edit changed it. Larger values offload more
 *	to CDNs; revalidation is cheap (304 by ETag) either way.
 *	?v=SEQ names the edit version the tile reads (the chunk's, or for
 *	the material layer the largest of the 3 x 3 around it, as the cache
 *	key): the current one answers as above with Cache-Control: public,
 *	max-age=31536000, immutable (those bytes can never change); another
 *	one the world has reached (older, or a later sequence number at
 *	which nothing the tile reads changed) a 302 to the URL with the
 *	current version and Cache-Control: no-cache; one beyond the world's
 *	last sequence number a 404 (no-store): this node has not applied it.
 *	A v that is not a decimal u64 is a 400. Objects and bundles take ?v=
 *	the same way (a bundle's version is its members' largest).
 *   GET|HEAD /v1/worlds/{seed}/chunks/{lod}?cx0=&cz0=&cx1=&cz1=[&gen=][&layers=]
 *	Batch fetch: the tiles of the inclusive rectangle (at most
 *	ROUTE_BATCH_MAX, else 400) as one bundle (bundle.h,
 *	application/vnd.terrain.bundle) in row order, z then x. Each member
 *	is the exact identity body of the single tile, taken from and put
 *	into the same cache with the same single flight (missing tiles are
 *	generated in parallel on the workers). The whole bundle is one zstd
 *	frame when Accept-Encoding allows zstd (or with ?encoding=zstd, as
 *	application/zstd), so tiles share context; identity otherwise, gzip
 *	clients included (bundles are made per request). ETag: XXH3-64 of
 *	the members' checksums in order, "-z" for zstd; If-None-Match gives
 *	304. Cache-Control and Vary as
 *	tiles; X-Cache: hit when every member was cached. Bundles themselves
 *	are not cached: a batch of cached tiles costs their decompression
 *	and, for zstd, one compression of the bundle on a worker.
 *   GET|HEAD /v1/worlds/{seed}/objects/{cx}/{cz}[?gen=NAME]
 *	The trees and rocks of a chunk (docs/objects.md): scatter_chunk()
 *	with the chunk's edits and the region cache, generated on the
 *	worker pool. JSON (application/json) by default; the binary form
 *	(application/vnd.terrain.objects) when Accept names it with a q
 *	above 0 and not below application/json's. Cached like tiles, in
 *	zstd form, under a key with the form and, as for material tiles, the
 *	largest edit version of the chunk and its neighbours;
 *	content coding, ETag (XXH3-64 of the identity body), 304,
 *	Cache-Control and CORS as tiles; Vary: Accept, Accept-Encoding.
 *   GET|HEAD /v1/worlds/{seed}[?gen=NAME]
 *	World info in the spirit of TileJSON: generator name, description and
 *	fingerprint (16 hex digits), algorithm and tile format versions,
 *	chunk size, LOD range, heights, a tiles URL template, edit_seq (the
 *	last sequence number, 0 until edits exist) and world_hash (16 hex
 *	digits, the chain of docs/edits.md).
 *   POST /v1/worlds/{seed}/edits[?gen=NAME]
 *	Append a batch {"edits":[...]} (1..256 edits, Content-Type
 *	application/json, body at most ROUTE_MAX_BODY). Authorised by the
 *	bearer token when one is set (401 with WWW-Authenticate otherwise),
 *	else only from loopback clients (403). Everything is validated
 *	first (400 bad JSON or shape, 422 a value out of range or more than
 *	WORLD_MAX_EDIT_CHUNKS chunks for an edit, WORLD_MAX_BATCH_CHUNKS for
 *	the batch; the detail names the field); then the batch gets the next
 *	sequence numbers, goes into the edit log as one record, and only
 *	once that is fdatasync()'d (the shared log: docs/edits.md) is it
 *	applied and answered: 200
 *	{"first_seq","last_seq","seq","world_hash","chunks":[[cx,cz],...]},
 *	and published to the event streams. 503 when the log queue is full,
 *	a shared log is out of reach (until it is back) or the log has
 *	failed (then until a restart).
 *   GET|HEAD /v1/worlds/{seed}/edits?since=SEQ[&limit=N][&gen=NAME]
 *	The log after SEQ (default 0) in order, at most N (default and
 *	largest 1000) edits: {"since","seq","world_hash","edits":[{"seq",
 *	"op",...}],"next"}, "next" (the last seq returned) only when the
 *	limit cut the list. seq and world_hash describe the whole log.
 *   GET|HEAD /v1/worlds/{seed}/hashes?cx0=&cz0=&cx1=&cz1=[&gen=NAME]
 *	Edit versions and chunk hashes of the chunks with edits in the
 *	inclusive rectangle (at most 64 x 64 chunks, else 400): {"seq",
 *	"world_hash","chunks":[{"cx","cz","version","hash"}]}; a chunk not
 *	listed has version 0 and hash 0.
 *   GET /v1/worlds/{seed}/events[?gen=NAME][&last_event_id=SEQ]
 *	Server-Sent Events of the accepted batches (sse.h); Last-Event-ID
 *	(header or parameter) resumes after that sequence number.
 *   GET|HEAD /v1/worlds/{seed}/maps/{style}[?gen=][&origin=CX,CZ]
 *   GET|HEAD /v1/worlds/{seed}/maps/{style}/{z}/{x}/{y}.png[?gen=][&origin=]
 *	Web maps (maps.h, docs/maps.md): a TileJSON 3.0.0 document and
 *	256 x 256 PNG tiles, style terrarium (elevation) or shaded (relief),
 *	made from the same heights and edits as the tiles, cached with them.
 *   GET|HEAD /v1/presets      every generator preset with its parameters
 *   GET|HEAD /healthz         {"status":"ok"} while serving; 503 "degraded"
 *	while edits cannot be taken (reads still work)
 *   GET|HEAD /metrics         Prometheus text (metrics.h)
 *   GET|HEAD /v1/openapi.json this API as OpenAPI 3.1 (server/assets/openapi.json,
 *	served like the viewer's files: ETag, Last-Modified, no-cache)
 *   GET|HEAD /                the map viewer page (index.html)
 *   GET|HEAD /assets/NAME     its files, compiled in from server/assets/
 *	(static.h): Content-Type by extension, strong ETag from XXH3-64 of
 *	the bytes (If-None-Match gives 304), Cache-Control: no-cache.
 *   OPTIONS on any route      CORS preflight: 204 with Allow-Methods/Headers
 *
 * Errors: 400 bad seed, lod, cx, cz, layers or rectangle, bad
 * percent-encoding or NUL in the path; 404 unknown route or generator; 405 with Allow; 408, 413, 414,
 * 431 from the HTTP layer; 503 with Retry-After when overloaded (at the
 * connection limit, or max_generations tiles already being generated).
 *
 * Tiles (and object lists) are cached per content coding, each value
 * with its prebuilt response head, so every hit is one write of stored
 * bytes. Generation makes the zstd value; the first gzip or identity
 * request of a tile makes that coding from it on the worker pool (gzip
 * with zlib's Z_RLE: as small as zstd on tiles, 0.7 ms) and caches it
 * beside it. An identity value is about 4 times the zstd one: it costs
 * cache space (within --cache-mb) instead of a worker job per request
 * (docs/codings.md has the figures).
 */
#ifndef ROUTES_H
#define ROUTES_H

#include <stddef.h>
#include <stdio.h>

struct http_handler;
struct req_env;
struct route;
struct routes;

/* A resource's routes and the module its handlers get as q->module. */
struct route_source {
	size_t (*routes)(const struct route **out);
	void *module;
};

/*
 * Make the table of the sources' routes, in order, answering through env
 * (which must outlive it). 0, ERR_INVAL past METRICS_MAX_ROUTES - 2
 * routes, or ERR_NOMEM.
 */
int routes_create(struct req_env *env, const struct route_source *src, size_t n,
		  struct routes **out);

/* The metrics labels of the table: one per route, then "none" and
 * "error"; *n gets their count. */
const char *const *routes_labels(const struct routes *rt, size_t *n);

/* Fill h with the callbacks that answer requests through rt. */
void routes_handler(struct routes *rt, struct http_handler *h);

/*
 * Print the sources' route table to f, one route a line: its methods, its
 * path and its metrics label, as in "GET,HEAD,OPTIONS /v1/presets
 * presets"; a path segment that takes any value prints as "*". For
 * `terrain-server routes`, which tests/http/openapi.sh checks the API
 * description against.
 */
void routes_print(FILE *f, const struct route_source *src, size_t n);

/* Free rt; NULL does nothing. */
void routes_destroy(struct routes *rt);

#endif
