/*
 * tile.h - the heightmap tile and its binary format.
 *
 * A tile is one chunk of one world at one level of detail: side x side
 * heights on an integer grid (quanta), sample (i, j) at world
 * x = cx * chunk + i * 2^lod, z = cz * chunk + j * 2^lod. The encoded form
 * (docs/tile-format.md) is a 64-byte little-endian header followed by the
 * heights, entropy-coded (versions 7 and 8 by tANS; the older 5 and 6 by
 * rANS with 8 states, 3 and 4 with 2; common/tilecode.c) or, in the older
 * versions 1 and 2, filtered into byte planes; tile_decode() reads them
 * all. It is what the server sends (zstd is applied by HTTP as
 * Content-Encoding, not here). Pure code: no I/O, no globals.
 */
#ifndef TILE_H
#define TILE_H

#include <stddef.h>
#include <stdint.h>

#define TILE_MEDIA_TYPE "application/vnd.terrain.tile" /* docs/tile-format.md */
#define TILE_MAGIC          0x4e525254u /* "TRRN" as bytes in a file */
#define TILE_VERSION_LZ21        1      /* heights as lz21 byte planes */
#define TILE_VERSION_LZ21_LAYERS 2      /* the same + a layer section */
#define TILE_VERSION_CODED2        3    /* entropy-coded heights, 2 rANS states */
#define TILE_VERSION_CODED2_LAYERS 4    /* the same + a layer section */
#define TILE_VERSION_CODED8        5    /* entropy-coded heights, 8 rANS states */
#define TILE_VERSION_CODED8_LAYERS 6    /* the same + a layer section */
#define TILE_VERSION        7           /* entropy-coded heights, tANS
					   (tile_encode) */
#define TILE_VERSION_LAYERS 8           /* the same + a layer section */
#define TILE_CODED_MIN_SIDE 33          /* tile_encode() writes smaller tiles
					   (LOD >= 4 of 256 m chunks) as
					   versions 1 and 2: there the coded
					   form's tables cost more than they save */
#define TILE_LAYER_MATERIAL 1           /* one material id per sample */
#define TILE_HEADER_SIZE    64
#define TILE_MAX_LOD        8           /* with the default 256 m chunk */
#define TILE_MIN_CHUNK_LOG2 4           /* 16 m */
#define TILE_MAX_CHUNK_LOG2 12          /* 4096 m */
#define TILE_DEFAULT_QUANTUM_UM 10000   /* 1 cm */

struct tile {
	uint64_t fingerprint; /* generator fingerprint (preset.h) */
	uint64_t seed;        /* world seed */
	int32_t cx, cz;       /* chunk coordinates, any int32 */
	uint8_t lod;          /* 0..chunk_log2; samples every 2^lod metres */
	uint8_t chunk_log2;   /* chunk side is 2^chunk_log2 metres (8: 256 m) */
	uint32_t side;        /* samples per side: 2^(chunk_log2 - lod) + 1 */
	uint32_t quantum_um;  /* height step in micrometres (10000 = 1 cm) */
	uint64_t edit_seq;    /* last edit sequence touching this chunk, 0: none */
	int32_t *h;           /* side * side heights in quanta, h[j * side + i] */
	uint8_t *material;    /* side * side material ids (material.h), or NULL;
				 when set, the tile encodes as format version 4
				 (2 for tile_encode_lz21()) */
};

/*
 * Set up t for (chunk_log2, lod): fills side and allocates t->h zeroed.
 * Other fields are zeroed too. Returns 0, ERR_INVAL for a bad pair, or
 * ERR_NOMEM. Pair with tile_release().
 */
int tile_init(struct tile *t, int chunk_log2, int lod);

/* Allocate t->material (side * side zero bytes) for a material layer.
 * Returns 0 or ERR_NOMEM. */
int tile_add_material(struct tile *t);

/* Free t->h and t->material and zero t. Safe on a zeroed or already
 * released tile. */
void tile_release(struct tile *t);

/* Height of sample (i, j) in metres. */
double tile_height_m(const struct tile *t, uint32_t i, uint32_t j);

/* The largest encoded size of a tile with t's side: a buffer this large
 * always holds tile_encode()'s output. */
size_t tile_encode_bound(const struct tile *t);

/*
 * Encode t into out (cap bytes): format version 5 (6 with a material
 * layer), or 1 (2) for a tile of side below TILE_CODED_MIN_SIDE. On
 * success stores the byte count in *len
 * and returns 0; ERR_INVAL for an inconsistent tile, ERR_TOOBIG when cap is
 * short, ERR_NOMEM. Encoding is a pure function of t's fields and heights.
 */
int tile_encode(const struct tile *t, uint8_t *out, size_t cap, size_t *len);

/* Bytes of scratch that tile_encode_in() needs for a tile with t's side
 * (0 for NULL). */
size_t tile_encode_scratch_size(const struct tile *t);

/*
 * tile_encode() with the caller's scratch (tile_encode_scratch_size(t)
 * bytes, aligned for uint32_t), so that a caller encoding tile after tile
 * allocates nothing: the same bytes and errors. The scratch holds no
 * state between calls.
 */
int tile_encode_in(const struct tile *t, void *scratch, uint8_t *out, size_t cap,
		   size_t *len);

/*
 * Encode t in the first form, format version 1 (2 with a material
 * layer): filter 1 byte planes, the same header. tile_encode() no longer
 * emits it (except for small tiles); the server does on ?format=1, for
 * decoders written before version 3. Same errors.
 */
int tile_encode_lz21(const struct tile *t, uint8_t *out, size_t cap, size_t *len);

/* The encodings a tile has. */
enum tile_form {
	TILE_FORM_CURRENT,   /* what tile_encode writes: TANS, or LZ21 below
				TILE_CODED_MIN_SIDE */
	TILE_FORM_LZ21,      /* versions 1 and 2 (tile_encode_lz21) */
	TILE_FORM_CODED,     /* versions 3 and 4 (2 rANS states) whatever the side */
	TILE_FORM_CODED8,    /* versions 5 and 6 (8 rANS states) whatever the side */
	TILE_FORM_BEFORE5,   /* what tile_encode wrote before version 5: CODED,
				or LZ21 below TILE_CODED_MIN_SIDE (?format=3) */
	TILE_FORM_TANS,      /* versions 7 and 8 (tANS) whatever the side */
	TILE_FORM_BEFORE7,   /* what tile_encode wrote before version 7: CODED8,
				or LZ21 below TILE_CODED_MIN_SIDE (?format=5) */
};

/* tile_encode_in() or, for TILE_FORM_LZ21, tile_encode_lz21() with the
 * caller's scratch (tile_encode_scratch_size(t) serves both); the bound
 * is tile_encode_bound(t) for both. */
int tile_encode_form_in(const struct tile *t, enum tile_form form, void *scratch,
			uint8_t *out, size_t cap, size_t *len);

/*
 * Decode buf (len bytes) of any format version (1 to 6) into t,
 * allocating t->h (free with tile_release).
 * Rejects with an error, never a crash: ERR_TRUNC (short), ERR_MAGIC,
 * ERR_VERSION, ERR_TOOBIG (trailing bytes or oversized dimensions),
 * ERR_CORRUPT (inconsistent fields), ERR_CHECKSUM. On error t is zeroed.
 */
int tile_decode(const uint8_t *buf, size_t len, struct tile *t);

/*
 * Parse and validate only the header of buf into t (t->h stays NULL).
 * Checks everything tile_decode() does except the checksum and payload.
 */
int tile_decode_header(const uint8_t *buf, size_t len, struct tile *t);

/* ---- precision (?precision=, docs/tile-format.md "Precision") ---- */

/*
 * The quantum in micrometres of a precision name: "1cm" 10000, "5cm"
 * 50000, "10cm" 100000, "50cm" 500000, "1m" 1000000 (name is len bytes,
 * not NUL-terminated). Returns 0 for an unknown name.
 */
uint32_t tile_precision_um(const char *name, size_t len);

/*
 * Requantise n heights src, in quanta of from_um, to quanta of to_um (a
 * whole multiple f of from_um): dst[k] = src[k] / f rounded half away from
 * zero, in integer arithmetic, so a sample is a pure function of its
 * canonical value and LOD nesting and seams hold at every precision. dst
 * may be src. Returns 0, or ERR_INVAL when to_um is not a multiple of
 * from_um (or either is 0).
 *
 *	tile_requantize(t->h, n, t->quantum_um, 100000, t->h); // 10 cm
 *	t->quantum_um = 100000;
 */
int tile_requantize(const int32_t *src, size_t n, uint32_t from_um, uint32_t to_um,
		    int32_t *dst);

/* The stored checksum of an encoded tile (header bytes 56..63), a content
 * hash usable as an ETag. buf must hold at least TILE_HEADER_SIZE bytes. */
uint64_t tile_checksum(const uint8_t *buf);

#endif
