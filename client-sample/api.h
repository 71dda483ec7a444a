/*
 * api.h - the server's HTTP API as this client sees it.
 *
 * Request targets for world info, single tiles and batches (the seed and
 * generator names travel as given, after a charset check), the fields of
 * GET /v1/worlds/{seed} that a client sizes its work by, the text of an
 * error body ({"error": "...", "detail": "..."}), and the index of a
 * bundle, the body of the batch endpoint
 * GET /v1/worlds/{seed}/chunks/{lod}?cx0=&cz0=&cx1=&cz1=: an index of
 * (cx, cz, offset, length) followed by the tile bodies. Until
 * docs/tile-format.md specifies bundles, this client reads the layout
 * below (all little-endian) and treats anything else as "not a bundle it
 * knows", so view.c can fall back to single tiles:
 *
 *   offset  size  field
 *   0       4     magic "TRBN"
 *   4       2     version, 1
 *   6       2     reserved, 0
 *   8       4     count n, 1..4096
 *   12      4     reserved, 0
 *   16      16n   n entries: int32 cx, int32 cz, uint32 offset, uint32 length
 *   ...           tile bodies; offset counts from the bundle's first byte
 *
 * Each body is a complete encoded tile (tile.h). Pure code: formatting and
 * parsing only; hclient.c sends, view.c decides what to send. (The prefix
 * is api_, not world_ or bundle_, which belong to the server and the
 * format's future home in common/.)
 */
#ifndef CLIENT_API_H
#define CLIENT_API_H

#include <stddef.h>
#include <stdint.h>

struct api_world {
	uint64_t fingerprint; /* generator fingerprint, as in tile headers */
	int chunk_log2;       /* chunk side 2^chunk_log2 m */
	int max_lod;          /* largest LOD the generator serves */
	uint32_t quantum_um;  /* height step */
	uint64_t edit_seq;    /* edits applied so far */
	uint64_t world_hash;  /* world hash at edit_seq (docs/edits.md) */
	int has_world_hash;   /* the server said one */
	uint64_t selfcheck;   /* digest of the golden tiles it checked at start */
	int has_selfcheck;    /* the server said one (local mode needs it) */
};

/* One chunk of a GET /v1/worlds/{seed}/hashes answer: a chunk with edits. */
struct api_chunk_hash {
	int32_t cx, cz;
	uint64_t version;     /* seq of the last edit touching it */
	uint64_t hash;        /* chain over its edits */
};

/*
 * A batch of edits as the server reports it: the answer of
 * POST /v1/worlds/{seed}/edits and the data of an "edits" event:
 * {"first_seq", "last_seq", ["seq",] "world_hash", "chunks": [[cx, cz]...]},
 * and "replay": true when a POST's Idempotency-Key had been answered before.
 */
struct api_batch {
	uint64_t first_seq, last_seq;
	uint64_t seq;         /* the world's last seq ("seq", else last_seq) */
	uint64_t world_hash;  /* after last_seq */
	int32_t *chunks;      /* pairs cx, cz (malloc'd; api_batch_free()) */
	size_t nchunks;
	int replay;           /* "replay": true: the stored first answer */
};

/* 1 when s is a usable seed or generator name in a path: 1..64 characters
 * of [A-Za-z0-9_-]. */
int api_name_ok(const char *s);

/*
 * Request targets, written to buf (cap bytes) with "?gen=" only when gen
 * is not NULL. Return 0, or ERR_TOOBIG when buf is short.
 *   api_info_path:  /v1/worlds/{seed}
 *   api_tile_path:  /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz}
 *   api_batch_path: /v1/worlds/{seed}/chunks/{lod}?cx0=&cz0=&cx1=&cz1=
 */
int api_info_path(char *buf, size_t cap, const char *seed, const char *gen);
int api_tile_path(char *buf, size_t cap, const char *seed, const char *gen,
		  int lod, int32_t cx, int32_t cz);
int api_batch_path(char *buf, size_t cap, const char *seed,
		   const char *gen, int lod, int32_t cx0, int32_t cz0,
		   int32_t cx1, int32_t cz1);

/*
 * Append the layers query parameter to a target made by api_tile_path()
 * or api_batch_path(): "?layers=LIST" when buf has no query yet, else
 * "&layers=LIST" (LIST as the server takes it, "height,material"). Returns
 * 0, or ERR_TOOBIG (buf unchanged) when buf is short.
 */
int api_add_layers(char *buf, size_t cap, const char *layers);

/*
 *   api_edits_path: /v1/worlds/{seed}/edits (POST)
 *   api_log_path:   /v1/worlds/{seed}/edits?since=SEQ&limit=N
 *   api_events_path: /v1/worlds/{seed}/events
 */
int api_edits_path(char *buf, size_t cap, const char *seed, const char *gen);
int api_log_path(char *buf, size_t cap, const char *seed, const char *gen,
		 uint64_t since, unsigned limit);
int api_events_path(char *buf, size_t cap, const char *seed,
		    const char *gen);

/*   api_hashes_path: /v1/worlds/{seed}/hashes?cx0=&cz0=&cx1=&cz1= */
int api_hashes_path(char *buf, size_t cap, const char *seed, const char *gen,
		    int32_t cx0, int32_t cz0, int32_t cx1, int32_t cz1);

/*
 * Parse a hashes answer {"seq", "world_hash", "chunks": [{"cx", "cz",
 * "version", "hash"}...]} into a new array *out (free(); NULL when empty)
 * of *n chunks, and *seq. Versions are in [1, seq]. Returns 0, ERR_PARSE
 * or ERR_NOMEM.
 */
int api_hashes_parse(const char *json, size_t len, struct api_chunk_hash **out,
		     size_t *n, uint64_t *seq);

/*
 * Parse a batch (JSON, len bytes) into b. Sequence numbers are integers in
 * [1, 2^53], first_seq <= last_seq, world_hash 16 hex digits, chunks pairs
 * of int32. Returns 0, ERR_PARSE, or ERR_NOMEM; b holds nothing to free
 * on failure.
 */
int api_batch_parse(const char *json, size_t len, struct api_batch *b);

void api_batch_free(struct api_batch *b);

/*
 * Parse a world info body (JSON, len bytes) into wi. Returns 0, or
 * ERR_PARSE when it is not JSON or lacks a field, ERR_RANGE when
 * chunk_size is not a power of two in 16..4096 or max_lod is out of range.
 */
int api_world_parse(const char *json, size_t len, struct api_world *wi);

/* "error: detail" from an error body, or its first printable bytes when
 * it is not such JSON; always NUL-terminated in out (cap >= 1). */
void api_error_text(const uint8_t *body, size_t len, char *out, size_t cap);

#define API_BUNDLE_MAGIC      "TRBN"
#define API_BUNDLE_VERSION    1
#define API_BUNDLE_HEADER     16
#define API_BUNDLE_ENTRY      16
#define API_BUNDLE_MAX_TILES  4096

struct api_bundle_entry {
	int32_t cx, cz;
	const uint8_t *tile; /* points into the bundle */
	size_t len;
};

/*
 * Parse the index of b (n bytes) into out (cap entries) and *count.
 * Returns 0; ERR_MAGIC or ERR_VERSION for a body that is not a version-1
 * bundle (a caller may fall back); ERR_TRUNC, ERR_CORRUPT (a body outside
 * the bundle or overlapping the index) or ERR_TOOBIG (more than cap) for a
 * broken one.
 */
int api_bundle_parse(const uint8_t *b, size_t n, struct api_bundle_entry *out,
		 size_t cap, size_t *count);

#endif
