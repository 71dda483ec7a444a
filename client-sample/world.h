/*
 * world.h - the server's URLs and JSON, as the client needs them.
 *
 * Request targets for world info, single tiles and batches (the seed and
 * generator names travel as given, after a charset check), the fields of
 * GET /v1/worlds/{seed} that a client sizes its work by, and the text of
 * an error body ({"error": "...", "detail": "..."}). Pure code: formatting
 * and parsing only; hclient.c sends, view.c decides what to send.
 */
#ifndef WORLD_H
#define WORLD_H

#include <stddef.h>
#include <stdint.h>

struct world_info {
	uint64_t fingerprint; /* generator fingerprint, as in tile headers */
	int chunk_log2;       /* chunk side 2^chunk_log2 m */
	int max_lod;          /* largest LOD the generator serves */
	uint32_t quantum_um;  /* height step */
	uint64_t edit_seq;    /* edits applied so far */
};

/* 1 when s is a usable seed or generator name in a path: 1..64 characters
 * of [A-Za-z0-9_-]. */
int world_name_ok(const char *s);

/*
 * Request targets, written to buf (cap bytes) with "?gen=" only when gen
 * is not NULL. Return 0, or ERR_TOOBIG when buf is short.
 *   world_info_path:  /v1/worlds/{seed}
 *   world_tile_path:  /v1/worlds/{seed}/chunks/{lod}/{cx}/{cz}
 *   world_batch_path: /v1/worlds/{seed}/chunks/{lod}?cx0=&cz0=&cx1=&cz1=
 */
int world_info_path(char *buf, size_t cap, const char *seed, const char *gen);
int world_tile_path(char *buf, size_t cap, const char *seed, const char *gen,
		    int lod, int32_t cx, int32_t cz);
int world_batch_path(char *buf, size_t cap, const char *seed,
		     const char *gen, int lod, int32_t cx0, int32_t cz0,
		     int32_t cx1, int32_t cz1);

/*
 * Parse a world info body (JSON, len bytes) into wi. Returns 0, or
 * ERR_PARSE when it is not JSON or lacks a field, ERR_RANGE when
 * chunk_size is not a power of two in 16..4096 or max_lod is out of range.
 */
int world_parse(const char *json, size_t len, struct world_info *wi);

/* "error: detail" from an error body, or its first printable bytes when
 * it is not such JSON; always NUL-terminated in out (cap >= 1). */
void world_error_text(const uint8_t *body, size_t len, char *out, size_t cap);

#endif
