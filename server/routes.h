/*
 * routes.h - the HTTP API of the terrain server.
 *
 * One static table maps method + path to a handler; this is also the only
 * place where ERR_* codes become HTTP statuses, and where error bodies are
 * made: JSON {"error": "<token>", "detail": "<text>"}. The HTTP mechanics
 * (parsing, ordering, limits) are http.c's; generation is tilegen.c's, run
 * on the libuv worker pool; tiles are kept in cache.c.
 *
 * API (every response has Access-Control-Allow-Origin: *):
 *
 *   GET|HEAD /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz}[?gen=NAME]
 *	One tile, Content-Type application/vnd.terrain.tile (a vendor type
 *	in the style of IANA's vnd. tree; the format is docs/tile-format.md).
 *	The identity body is byte-identical to `terrain-server generate`.
 *	Content-Encoding: zstd when Accept-Encoding allows it: q-values are
 *	honoured, "zstd;q=0" forbids it, "*" counts for zstd, and an explicit
 *	identity q above zstd's wins; otherwise identity. Vary:
 *	Accept-Encoding. X-Cache: hit or miss.
 *	ETag: the strong tag "<16 hex of the tile checksum>" for identity and
 *	"<16 hex>-z" for zstd: the two representations have different bytes,
 *	so they must not share a strong validator. If-None-Match (a list,
 *	weak W/ forms compare weakly as RFC 9110 says, or *) gives 304.
 *	Cache-Control: public, max-age=N (--max-age, 60 s by default; 0 sends
 *	no-cache). A tile is a pure function of the world state, so the
 *	trade-off is only about edits: a CDN or client may serve a tile up to
 *	max-age seconds after an edit changed it. Larger values offload more
 *	to CDNs; revalidation is cheap (304 by ETag) either way.
 *   GET|HEAD /v1/worlds/{seed}[?gen=NAME]
 *	World info in the spirit of TileJSON: generator name, description and
 *	fingerprint (16 hex digits), algorithm and tile format versions,
 *	chunk size, LOD range, heights, a tiles URL template, edit_seq (0
 *	until edits exist) and world_hash: 16 hex digits of XXH3-64 over the
 *	16 bytes fingerprint (u64 LE) then seed (u64 LE); the hash of an
 *	unedited world, which the edit log will chain from.
 *   GET|HEAD /v1/presets      every generator preset with its parameters
 *   GET|HEAD /healthz         {"status":"ok"} while serving
 *   GET|HEAD /metrics         Prometheus text (metrics.h)
 *   OPTIONS on any route      CORS preflight: 204 with Allow-Methods/Headers
 *
 * Errors: 400 bad seed, lod, cx or cz, bad percent-encoding or NUL in the
 * path; 404 unknown route or generator; 405 with Allow; 408, 413, 414,
 * 431 from the HTTP layer; 503 with Retry-After when overloaded (at the
 * connection limit, or max_generations tiles already being generated).
 *
 * Tiles are cached in their zstd form with both prebuilt response heads, so
 * a zstd hit is one write of stored bytes. An identity GET decompresses the
 * cached frame on the worker pool (about 0.2 ms for a LOD 0 tile, against
 * 5-10 ms to generate it) rather than keeping the identity body too, which
 * is about 5 times the zstd one and would cut the tiles cached by 6.
 */
#ifndef ROUTES_H
#define ROUTES_H

#include <stddef.h>

struct routes;
struct catalog;
struct http_handler;
struct http_server;
struct uv_loop_s;

#define ROUTE_TILE_TYPE "application/vnd.terrain.tile"

struct route_config {
	size_t cache_bytes;  /* tile cache bound (--cache-mb; 256 MiB) */
	unsigned max_age;    /* tile Cache-Control max-age, seconds (60) */
	int zstd_level;      /* TILEGEN_ZSTD_LEVEL */
	unsigned max_generations; /* queued or running; more get 503 (1024) */
};

/*
 * Create the API over the presets of cat (which must outlive it), queueing
 * generation on loop's worker pool. Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int route_create(struct uv_loop_s *loop, const struct catalog *cat,
		 const struct route_config *cfg, struct routes **out);

/* The server whose connection figures /metrics reports (may be NULL). */
void route_set_server(struct routes *rt, const struct http_server *s);

/* Fill h with the callbacks that answer requests through rt. */
void route_handler(struct routes *rt, struct http_handler *h);

/* Free rt once every request has been answered and every generation has
 * finished. NULL does nothing. */
void route_destroy(struct routes *rt);

#endif
