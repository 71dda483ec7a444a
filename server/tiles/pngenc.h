/*
 * pngenc.h - 8-bit RGB PNG images in memory (libpng), for the web map
 * tiles (maps.h). Pure apart from malloc: any thread may call it (the
 * server runs it on the worker pool).
 *
 * The include guard is not PNG_H: that one belongs to libpng's <png.h>.
 */
#ifndef PNGENC_H
#define PNGENC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Not a zlib level: every row filtered with PNG's Up filter, then zlib's
 * Huffman coding only (Z_HUFFMAN_ONLY: no string matching). Terrain pixels
 * are noisy (the low byte of a Terrarium height is nearly random), so
 * matching finds little: this is 2.5 times as fast as level 1 with
 * libpng's adaptive filters, and its Terrarium tiles are 4% smaller
 * (docs/maps.md, "Sizes and costs"; make bench, section 13).
 */
#define PNGENC_HUFFMAN (-1)

/* How the map tiles are compressed: Terrarium tiles as PNGENC_HUFFMAN;
 * shaded ones, whose smooth colours string matching does find, at zlib
 * level 1 with adaptive filters (Huffman only would make them 17% larger
 * for 14% less time). */
#define PNGENC_LEVEL PNGENC_HUFFMAN
#define PNGENC_LEVEL_SHADED 1

/*
 * Encode rgb (w x h pixels, 3 bytes each, row-major) as an 8-bit RGB PNG
 * with zlib level (0..9) and libpng's adaptive filters, or as
 * PNGENC_HUFFMAN says, into a new malloc'd *out of *len bytes (caller
 * frees). The PNG has no colour-space chunk (no gAMA, sRGB or cHRM: the
 * bytes are data, as Terrarium readers take them). The same input gives
 * the same bytes for one libpng and zlib. Returns 0, ERR_INVAL or
 * ERR_NOMEM.
 */
int pngenc_rgb(const uint8_t *rgb, uint32_t w, uint32_t h, int level, uint8_t **out,
	       size_t *len);

#endif
