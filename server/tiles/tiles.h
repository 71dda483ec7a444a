/*
 * tiles.h - the tile, object-list and batch resources: their routes, the
 * cache of encoded answers and the generation jobs on the worker pool.
 *
 *   GET|HEAD /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz}   one tile
 *   GET|HEAD /v1/worlds/{seed}/chunks/{lod}?cx0=..      a bundle of tiles
 *   GET|HEAD /v1/worlds/{seed}/objects/{cx}/{cz}        a chunk's objects
 *
 * routes.h documents the HTTP semantics. Values are keyed by the chunk's
 * edit version read from the world map (edits.h owns it; this module only
 * reads it), so an applied edit makes exactly the touched chunks' values
 * stale. Loop thread only, apart from the jobs it queues.
 */
#ifndef TILES_H
#define TILES_H

#include <stddef.h>
#include <stdint.h>

#define TILES_BATCH_MAX 64 /* tiles per batch request */

struct bakes;
struct bakes_stats;
struct region_source;
struct cache_stats;
struct catalog;
struct regions_stats;
struct req_env;
struct route;
struct tiles;
struct uv_loop_s;
struct world_map;

/* The module's options (tiles_options) and the rest of its configuration. */
struct tiles_config {
	size_t cache_bytes;       /* encoded-value cache bound (--cache-mb) */
	size_t region_bytes;      /* eroded region cache bound (--region-cache-mb) */
	unsigned max_age;         /* Cache-Control max-age, seconds; 0: no-cache
				     (--max-age) */
	unsigned bake_after;      /* bake a chunk at this many unbaked edits
				     (--bake-after; 0: never) */
	unsigned max_generations; /* queued or running; more get 503 (0: 1024) */
};

struct option;
/* The module's option table (options.h); returns its length. */
size_t tiles_options(const struct option **out);

/*
 * Create the resource over cat's presets and the worlds (both outlive it),
 * answering through env. Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int tiles_create(struct uv_loop_s *loop, const struct catalog *cat,
		 const struct world_map *worlds, struct req_env *env,
		 const struct tiles_config *cfg, struct tiles **out);

/* The routes of this resource (static); each handler's module is the
 * struct tiles. Returns their count. */
size_t tiles_routes(const struct route **out);

/* A batch of world (gen, seed) changed these chunks (n (cx, cz) pairs):
 * bake the ones whose unbaked edits piled up (bakes.h). arg is the
 * struct tiles; the signature is edits_on_change()'s. */
void tiles_changed(void *arg, int gen, uint64_t seed, const int32_t *chunks, size_t n,
		   uint64_t revert);

/* The server drains: start no more background work (bakes). */
void tiles_stop(struct tiles *t);

/* Cache, region-cache and bake figures for /metrics. */
void tiles_stats(const struct tiles *t, struct cache_stats *cs, struct regions_stats *rs,
		 struct bakes_stats *bs);

/* The bakes and the eroded-region source of t, for the snapshots. */
struct bakes *tiles_bakes(struct tiles *t);
const struct region_source *tiles_region_source(const struct tiles *t);

/* Free t once every request and job has finished. NULL does nothing. */
void tiles_destroy(struct tiles *t);

#endif
