/*
 * view.h - one player's terrain: the chunks around it, fetched and checked.
 *
 * A view keeps the chunks that ring.h says a player at (x, z) needs, each
 * at its LOD. view_update() moves the player: chunks that left the square
 * are dropped, new chunks and chunks whose LOD changed are requested
 * (nearest first; far ones at LOD >= batch_lod through one function that
 * uses the batch endpoint and falls back to single tiles when the server
 * answers 404), and held tiles older than their freshness lifetime are
 * revalidated with If-None-Match (304 keeps them).
 *
 * Every tile that arrives is verified: tile_decode() checks the checksum,
 * the header must carry the requested seed, cx, cz, LOD, chunk size and
 * generator fingerprint, and every edge shared with a loaded neighbour of
 * the same LOD must be equal (compared sample by sample when heights are
 * kept, else by a 64-bit XXH3 hash of each edge). With heights kept, edges
 * between neighbours of different LODs are checked on the coarser samples
 * too (LOD nesting). Failures go to the error hook with a message naming
 * the chunk as lod/cx/cz.
 *
 * Storage is a toroidal window of ring_span()^2 entries, so memory stays
 * fixed while the player walks. Runs on the loop thread of its hclient.
 */
#ifndef VIEW_H
#define VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

struct hclient;
struct hclient_resp;
struct terrain_world;
struct view;

#define VIEW_LODS 13     /* LOD 0..12: chunks up to 4096 m */

struct view_params {
	struct ring_params ring;
	const char *seed;       /* as it goes in URLs: decimal or text */
	uint64_t seed_value;    /* what tile headers must say (seed.h) */
	const char *gen;        /* generator name; NULL: the server default */
	uint64_t fingerprint;   /* generator fingerprint tiles must carry */
	int batch_lod;          /* batch chunks at LOD >= this; -1: never */
	int keep_heights;       /* keep decoded tiles (view_height) */
	int materials;          /* ask for layers=height,material; with
				   keep_heights, view_materials() reads them */
	long revalidate_ms;     /* tile lifetime; -1: the response's max-age */
	/* the ?precision= of each LOD in micrometres (tile_precision_um());
	 * 0 or 10000: the canonical heights, no ?precision= (all zero: every
	 * ring exact, terrain-client --exact) */
	uint32_t precision_um[VIEW_LODS];
	int format;             /* 1, 3 or 5: ask for the lz21 form (?format=1),
				   versions 3 and 4 or 5 and 6 (?format=3, 5),
				   as decoders written before versions 3, 5
				   and 7 would */
	/* local mode (--local): chunks no edit reaches are generated here by
	 * this world (libterrain, terrain.h; not owned), the server asked only
	 * for GET /hashes of the square (again after revalidate_ms, or 60 s)
	 * and for the tiles of edited chunks, whose edit_seq must be the
	 * version /hashes gave. NULL: every tile from the server. */
	const struct terrain_world *local;
};

/* The client's default precisions of LOD 0, 1, 2, ... (docs/client.md),
 * the last for every coarser LOD: LOD 0 exact. */
#define VIEW_PRECISIONS "1cm,10cm,50cm,1m"

/*
 * Parse a comma list of precision names (tile_precision_um()) for LOD 0,
 * 1, ... into out[VIEW_LODS], the last repeated to the coarsest LOD.
 * Returns 0 or ERR_INVAL (an unknown name, an empty list, more than
 * VIEW_LODS names).
 */
int view_parse_precisions(const char *list, uint32_t out[]);

/* The quantum in micrometres a view asks for at LOD lod: 0 for the
 * canonical heights (no ?precision=). */
uint32_t view_precision_um(const struct view_params *p, int lod);

struct view_hooks {
	void *arg;
	/* an error: transport, status, corrupt tile, seam; msg is lowercase,
	 * no trailing newline, valid during the call */
	void (*error)(void *arg, struct view *v, const char *msg);
	/* every answered request, for latency and cache statistics */
	void (*response)(void *arg, struct view *v,
			 const struct hclient_resp *r);
};

struct view_stats {
	uint64_t requests;      /* sent: singles + batches */
	uint64_t batches;       /* batch requests among them */
	uint64_t revalidations; /* conditional requests among them */
	uint64_t ok;            /* answered 200 */
	uint64_t not_modified;  /* answered 304 */
	uint64_t tiles;         /* tiles decoded and verified */
	uint64_t stale;         /* verified, but no longer wanted */
	uint64_t errors;
	uint64_t cancelled;     /* ended by hclient_close() */
	uint64_t hits, misses;  /* X-Cache of answered requests */
	uint64_t bytes_wire;    /* response bytes on the wire */
	uint64_t bytes_decoded; /* tile bytes after content decoding */
	uint64_t seams;         /* shared edges compared */
	uint64_t dropped;       /* loaded chunks unloaded */
	uint64_t batch_fallbacks; /* batches answered by single tiles */
	uint64_t material_tiles; /* verified tiles with a material layer */
	uint64_t generated;     /* local mode: tiles made here, not fetched */
	uint64_t hashes;        /* local mode: GET /hashes answered */
};

/*
 * Make a view that requests through hc (not owned). p's strings must
 * outlive the view; h may be NULL. Returns 0, ERR_INVAL (bad params),
 * ERR_NOMEM. Free with view_destroy() once view_outstanding() is 0.
 */
int view_create(struct hclient *hc, const struct view_params *p,
		const struct view_hooks *h, struct view **out);

void view_destroy(struct view *v);

/*
 * Put the player at (x, z) at time now_ms (any clock, for freshness) and
 * send what that needs. Returns the number of requests sent, or a negative
 * ERR_RANGE (coordinates leave int32 chunks) / ERR_NOMEM.
 */
long view_update(struct view *v, double x, double z, uint64_t now_ms);

/* Requests sent and not yet answered. */
size_t view_outstanding(const struct view *v);

const struct view_stats *view_stats(const struct view *v);

/*
 * Count loaded chunks by LOD into counts[0..n-1] (zeroed first). Returns
 * how many wanted chunks do not hold a tile of their wanted LOD yet.
 */
size_t view_loaded(const struct view *v, size_t *counts, size_t n);

/* Smallest LOD among loaded tiles, or -1 when none is loaded. */
int view_finest_lod(const struct view *v);

/*
 * Height in metres at world (x, z), bilinear in the loaded tile of the
 * chunk holding the point. Needs keep_heights. Returns 0, or ERR_NOTFOUND
 * when that chunk holds no tile.
 */
int view_height(const struct view *v, double x, double z, double *h_m);

/*
 * Material ids (material.h; any byte, a later table may add ids) of the
 * four samples around world (x, z) in the loaded tile of its chunk -
 * the samples view_height() interpolates - and their bilinear weights
 * (summing to 1), so a caller can blend the materials' colours smoothly
 * across upsampled coarse tiles. Needs keep_heights and materials.
 * Returns 0, or ERR_NOTFOUND when that chunk holds no tile or its tile
 * has no material layer (a server without layers: colour by height).
 */
int view_materials(const struct view *v, double x, double z, uint8_t id[4],
		   double w[4]);

#endif
