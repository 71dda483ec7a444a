/*
 * objects.h - the body of GET /v1/worlds/{seed}/objects/{cx}/{cz}: the
 * trees and rocks of one chunk (scatter.h), as JSON or in the binary
 * form, both specified in docs/objects.md.
 *
 * Placement is common/scatter.c's; this module only runs it for a chunk
 * and writes the answer. Pure apart from malloc: any thread may call it
 * (tiles.c runs it on the worker pool). Caching, content coding and
 * validators are tiles.c's.
 */
#ifndef OBJECTS_H
#define OBJECTS_H

#include <stddef.h>
#include <stdint.h>

struct edit;
struct preset;
struct bake_layer;
struct region_source;

#define OBJECTS_JSON_TYPE   "application/json"
#define OBJECTS_BINARY_TYPE "application/vnd.terrain.objects"
#define OBJECTS_MAGIC       "TROB"
#define OBJECTS_VERSION     1
#define OBJECTS_HEADER      16  /* then SCATTER_WIRE_SIZE bytes per object */

enum objects_form {
	OBJECTS_JSON,
	OBJECTS_BINARY,
};

/*
 * The objects of chunk (cx, cz) of world (p, seed) with the edits of bl
 * applied (scatter_chunk_baked(); NULL: none; rs as for tiles, may be NULL),
 * in form: JSON {"cx","cz","edit_seq","objects":[...]} with x and z in
 * metres to the millimetre, y to the micrometre, rotation in radians and
 * scale as a factor; or the 16-byte header ("TROB", u16 version 1, u16 0,
 * u32 count, u32 0) and scatter_encode() records. On success *out is a
 * new malloc'd buffer of *len bytes (caller frees). Returns 0, ERR_INVAL
 * or ERR_NOMEM.
 */
int objects_encode(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
		   const struct region_source *rs, const struct bake_layer *bl,
		   uint64_t edit_seq, enum objects_form form, uint8_t **out,
		   size_t *len);

#endif
