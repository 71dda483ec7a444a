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

/* zlib level of the map tiles: the fastest. Terrain pixels are noisy (the
 * low byte of a Terrarium height is nearly random), so higher levels take
 * two to six times as long for a few per cent (docs/maps.md, "Sizes"). */
#define PNGENC_LEVEL 1

/*
 * Encode rgb (w x h pixels, 3 bytes each, row-major) as an 8-bit RGB PNG
 * with zlib level (0..9) and libpng's adaptive filters into a new malloc'd
 * *out of *len bytes (caller frees). The same input gives the same bytes
 * for one libpng and zlib. Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int pngenc_rgb(const uint8_t *rgb, uint32_t w, uint32_t h, int level, uint8_t **out,
	       size_t *len);

#endif
