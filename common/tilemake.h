/*
 * tilemake.h - a tile as served: generated, requantised, encoded, in one
 * set of buffers kept from tile to tile.
 *
 * The one path from (preset, seed, chunk, LOD, edits, layers, precision,
 * format) to the heights and bytes of a tile: the server's tile route
 * (server/gen/tilegen.c) and the library's terrain_generate() and
 * terrain_generate_encoded() (terrain.h) both call it, so the library
 * gives the server's bytes by construction. Pure code: malloc only; one
 * user at a time per struct tilemake.
 */
#ifndef TILEMAKE_H
#define TILEMAKE_H

#include <stddef.h>
#include <stdint.h>

#include "tile.h"

struct bake_layer;
struct pipeline_work;
struct preset;
struct region_source;

/* Buffers of one user; the fields are private (tilegen.c borrows enc). */
struct tilemake {
	struct pipeline_work *pw;   /* rows, heights, materials */
	int32_t *qh;                /* requantised heights (?precision=) */
	uint8_t *enc;               /* the encoded tile */
	void *scratch;              /* tile_encode_form_in()'s */
	struct tile coarse;         /* the requantised tile's header (h is qh) */
	size_t qh_cap, enc_cap, scratch_cap;  /* bytes */
};

/* Set up m with no buffers yet. Returns 0 or ERR_NOMEM; pair with
 * tilemake_release(). */
int tilemake_init(struct tilemake *m);

/* Free m's buffers and zero it (safe on a zeroed or released one). */
void tilemake_release(struct tilemake *m);

/* About how many bytes m holds. */
size_t tilemake_bytes(const struct tilemake *m);

/*
 * The tile of chunk (cx, cz) at lod of world (p, seed) as pipeline_tile()
 * makes it (regions from rs, may be NULL; the edits of bl, NULL: none;
 * edit_seq in the header; PIPELINE_LAYER_* layers), its heights then
 * requantised to quantum_um when that is not 0 nor the preset's own
 * (tile_requantize(): a whole multiple of it, else ERR_INVAL). *out is
 * m's, valid until m's next use; never tile_release() it. Returns 0,
 * ERR_INVAL or ERR_NOMEM.
 */
int tilemake_tile(struct tilemake *m, const struct preset *p, uint64_t seed, int lod,
		  int32_t cx, int32_t cz, const struct region_source *rs,
		  const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
		  uint32_t quantum_um, const struct tile **out);

/*
 * tilemake_tile(), encoded in form (tile.h) into m->enc: *out and *len
 * are the bytes the server sends, valid until m's next use. Same errors.
 */
int tilemake_encode(struct tilemake *m, const struct preset *p, uint64_t seed, int lod,
		    int32_t cx, int32_t cz, const struct region_source *rs,
		    const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
		    uint32_t quantum_um, enum tile_form form, const uint8_t **out,
		    size_t *len);

/* m->enc with room for n bytes, contents not kept (for a caller that
 * fills it itself: tilegen.c's inflated bodies). 0 or ERR_NOMEM. */
int tilemake_reserve_enc(struct tilemake *m, size_t n);

#endif
