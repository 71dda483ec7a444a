/*
 * edit.h - player edits: brushes applied to generated heights.
 *
 * An edit is a circular brush at a world position: raise or lower the
 * ground by a strength, flatten it towards a height, or set it to a height,
 * weighted by a falloff of the distance from the centre. Edits are stored
 * in integer units (millimetres and micrometres), so their canonical bytes,
 * the world hash chained over them and their effect on a sample are exact
 * and the same on every machine. An edit is a pointwise function of the
 * generated height and the sample's world position, so it applies the same
 * at every LOD: tiles still nest and neighbours still share their edges.
 * Pure code: the log, its index and its storage live in server/.
 */
#ifndef EDIT_H
#define EDIT_H

#include <stddef.h>
#include <stdint.h>

struct tile;

enum edit_op {
	EDIT_RAISE,    /* h += strength * w */
	EDIT_LOWER,    /* h -= strength * w */
	EDIT_FLATTEN,  /* h += strength * w * (height - h), strength in [0, 1] */
	EDIT_SET,      /* h += w * (height - h) */
	EDIT_OP_COUNT
};

enum edit_falloff {
	EDIT_LINEAR,   /* w = 1 - t, t = distance / radius */
	EDIT_SMOOTH,   /* w = 1 - (3t^2 - 2t^3) */
	EDIT_FALLOFF_COUNT
};

#define EDIT_MAX_RADIUS_MM   4096000      /* 4096 m */
#define EDIT_MAX_STRENGTH_UM 10000000000LL /* 10 km: raise, lower */
#define EDIT_MAX_HEIGHT_UM   100000000000LL /* +-100 km: flatten, set */
#define EDIT_MAX_COORD_MM    (INT64_C(1) << 52) /* |x|, |z| in mm: 4.5e12 m */
#define EDIT_WIRE_SIZE       42           /* canonical bytes of one edit */
#define EDIT_BATCH_MAX       256

struct edit {
	uint8_t op;           /* enum edit_op */
	uint8_t falloff;      /* enum edit_falloff */
	int64_t x_mm, z_mm;   /* centre, world millimetres */
	int64_t radius_mm;    /* 1 .. EDIT_MAX_RADIUS_MM */
	int64_t strength;     /* raise, lower: micrometres; flatten: millionths
				 (0 .. 1000000); set: 0 */
	int64_t height_um;    /* flatten, set: target height; others: 0 */
};

/*
 * Parse a batch {"edits": [ {...}, ... ]} (1..EDIT_BATCH_MAX edits, docs/
 * edits.md) into a new array *out of *n edits (free() it). Validates every
 * edit before returning any: on error nothing is returned, the code is
 * ERR_PARSE (bad JSON or shape: anything but one strict RFC 8259 value
 * with only white space around it, jsonv_check(): trailing bytes, a byte
 * order mark, invalid UTF-8; also a NUL byte or a \u0000 escape anywhere
 * in the body, which cJSON would read as the end of a string, and a key
 * twice in one object), ERR_INVAL (x or z beyond EDIT_MAX_COORD_MM: a bad
 * coordinate) or ERR_RANGE (another value out of range), and err names
 * the field, e.g. "edits[3].radius: must be in (0, 4096]".
 *
 * The parser does not know the world's chunk size. A world of
 * 2^chunk_log2 m chunks with int32 cx, cz ends at +-2^(31 + chunk_log2) m
 * (2^39 m for 256 m chunks, inside EDIT_MAX_COORD_MM); a caller that knows
 * it should refuse an edit for which edit_chunks() finds no chunk.
 */
int edit_parse_batch(const char *json, size_t len, struct edit **out, size_t *n,
		     char *err, size_t errlen);

/* Append the JSON object of e (metres, as parsed; seq as a raw item of
 * exact decimal digits, printed as they are) to a cJSON array; returns 0
 * or ERR_NOMEM. `arr` is a cJSON *, opaque here. */
int edit_to_json(const struct edit *e, uint64_t seq, void *arr);

/* Canonical little-endian bytes: op, falloff, then x_mm, z_mm, radius_mm,
 * strength, height_um as int64. The world hash and the log use them. */
void edit_encode(const struct edit *e, uint8_t out[EDIT_WIRE_SIZE]);

/* Inverse of edit_encode(); validates ranges. Returns 0 or ERR_CORRUPT. */
int edit_decode(const uint8_t *in, size_t len, struct edit *e);

/* Check one edit's fields. Returns 0 or ERR_RANGE with a static reason. */
int edit_check(const struct edit *e, const char **why);

/* The world hash before any edit: XXH3-64 of (fingerprint, seed). */
uint64_t edit_hash_start(uint64_t fingerprint, uint64_t seed);

/* One link of a hash chain: XXH3-64 of (prev, seq, canonical bytes of e),
 * all little-endian. The world hash is the chain over the whole log; a
 * chunk's edit hash the chain over the edits that touch it, from 0. */
uint64_t edit_hash_next(uint64_t prev, uint64_t seq, const struct edit *e);

/*
 * The chunks (2^chunk_log2 m on a side) whose closed square the brush disc
 * reaches (distance from the centre to the square < radius), written to
 * cx[], cz[] (room for cap) in row order; *n is the count. Returns 0, or
 * ERR_TOOBIG when more than cap chunks are touched (*n is then the count).
 */
int edit_chunks(const struct edit *e, int chunk_log2, int32_t *cx, int32_t *cz,
		size_t cap, size_t *n);

/* 1 if the brush reaches chunk (cx, cz), else 0. */
int edit_touches(const struct edit *e, int chunk_log2, int32_t cx, int32_t cz);

/*
 * Apply n edits in order to every sample of t (geometry from t's fields),
 * rounding each result to the quantum. Samples outside a brush are left
 * untouched; results are clamped to int32.
 */
void edit_apply(struct tile *t, const struct edit *edits, size_t n);

/*
 * The same for any block of a LOD lattice (pipeline_heights()): sample
 * (i, j) of the w x hgt block h is at world (x0 + i * 2^lod, z0 + j * 2^lod)
 * metres. edit_apply() is this on a tile's block.
 */
void edit_apply_block(int32_t *h, int64_t x0, int64_t z0, int lod, uint32_t w,
		      uint32_t hgt, uint32_t quantum_um, const struct edit *edits, size_t n);

const char *edit_op_name(enum edit_op op);
const char *edit_falloff_name(enum edit_falloff f);

#endif
