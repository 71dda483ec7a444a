/*
 * scatter.h - where trees and rocks stand: deterministic object placement.
 *
 * Candidates come from a jittered grid: every world cell of SCATTER_CELL
 * metres holds one candidate at a hashed position inside it. A candidate
 * belongs to the chunk that contains its cell (cells tile chunks exactly),
 * so no object is placed twice or lost at a seam, and a query over any
 * cell-aligned rectangle returns exactly the union of its chunks' objects.
 * A candidate becomes an object by the material and slope of the ground
 * under it (after edits) and a density noise; its y is the ground height
 * there, so edits that move the ground move the objects with it. Pure code.
 */
#ifndef SCATTER_H
#define SCATTER_H

#include <stddef.h>
#include <stdint.h>

struct edit;
struct preset;
struct bake_layer;
struct region_source;

#define SCATTER_CELL 8   /* metres per candidate cell */

#define SCATTER_TYPE_MAP(XX)              \
	XX(0, CONIFER,   "conifer")       \
	XX(1, BROADLEAF, "broadleaf")     \
	XX(2, BUSH,      "bush")          \
	XX(3, ROCK,      "rock")

enum scatter_type {
#define XX(id, name, text) SCATTER_##name = (id),
	SCATTER_TYPE_MAP(XX)
#undef XX
	SCATTER_TYPE_COUNT
};

struct scatter_object {
	uint8_t type;         /* enum scatter_type */
	int64_t x_mm, z_mm;   /* world position, millimetres */
	int64_t y_um;         /* ground height there, micrometres (bilinear) */
	uint16_t rotation;    /* about the vertical axis, 65536 = a full turn */
	uint16_t scale;       /* thousandths: 700 .. 1300 */
};

/* "conifer", ...; NULL for an unknown type. */
const char *scatter_type_name(int type);

/*
 * The objects of the rectangle of world cells [x0, x0 + w) x [z0, z0 + h)
 * metres (x0, z0, w, h multiples of SCATTER_CELL) of world (p, seed) with
 * the n edits applied, in row order of their cells. *out is a new array
 * of *count objects (free()). Returns 0, ERR_INVAL (not cell-aligned, or
 * more than 4096 m on a side) or ERR_NOMEM.
 */
int scatter_area(const struct preset *p, uint64_t seed, int64_t x0, int64_t z0,
		 int64_t w, int64_t h, const struct region_source *rs,
		 const struct edit *edits, size_t n, struct scatter_object **out,
		 size_t *count);

/* The objects of chunk (cx, cz): scatter_area() over the chunk's square. */
int scatter_chunk(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
		  const struct region_source *rs, const struct edit *edits, size_t n,
		  struct scatter_object **out, size_t *count);

/* scatter_chunk() with the edits as a baked layer (bake.h): the same
 * objects as with every edit of the layer applied in order. */
int scatter_chunk_baked(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
			const struct region_source *rs, const struct bake_layer *bl,
			struct scatter_object **out, size_t *count);

/* Little-endian binary form: 32 bytes per object (docs/objects.md). */
#define SCATTER_WIRE_SIZE 32
void scatter_encode(const struct scatter_object *o, uint8_t out[SCATTER_WIRE_SIZE]);

#endif
