/*
 * terrain_int.h - what the library's two files (terrain.c: worlds, tiles,
 * heights; terrain_edits.c: the edit log) share. Not installed: the public
 * header is terrain.h.
 */
#ifndef TERRAIN_INT_H
#define TERRAIN_INT_H

#include <stddef.h>
#include <stdint.h>

struct bake_chunk;
struct preset;
struct terrain_edits;

struct terrain_world {
	struct preset *p;     /* owned, immutable */
	uint64_t seed;
};

/*
 * The chunks with edits among cx0..cx1 x cz0..cz1 (inclusive, int64 so
 * that the caller may pass one beyond the int32 grid: those are skipped),
 * in row order (z, then x), as bake chunks with no delta: a new array
 * *out of *n (free(); NULL when *n is 0). e may be NULL (none). Returns 0
 * or ERR_NOMEM.
 */
int terrain__layer(const struct terrain_edits *e, int64_t cx0, int64_t cz0, int64_t cx1,
		   int64_t cz1, struct bake_chunk **out, size_t *n);

/* The edit version of chunk (cx, cz): 0 without e or edits. */
uint64_t terrain__version(const struct terrain_edits *e, int32_t cx, int32_t cz);

#endif
