/*
 * png.h - shaded-relief previews of heightmaps, written as PNG (libpng).
 *
 * Works on plain arrays of heights in metres, not on tiles, so that callers
 * can stitch many tiles into one image before shading. Row r of the image
 * is world z increasing downwards (north up), column c is x increasing to
 * the right. Decoding tiles and choosing what to draw is left to the
 * caller (client-sample/main.c).
 *
 * The include guard is not PNG_H: that one belongs to libpng's <png.h>.
 */
#ifndef CLIENT_PNG_H
#define CLIENT_PNG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Colour of a height in metres: water blues below 0 m (darker with depth),
 * then sand, grass, forest green, rock grey and snow white, blended
 * linearly between stops. Writes rgb[0..2].
 */
void png_ramp(double h_m, uint8_t rgb[3]);

/*
 * Map colour of material id (material.h) for ground at h_m metres: the
 * table's colour (docs/tile-format.md), grey for an id the table does not
 * know. Water darkens with depth below 0 m (the presets' sea level), from
 * the table's blue at the surface towards a deep navy. Writes rgb[0..2].
 */
void png_material(int id, double h_m, uint8_t rgb[3]);

/*
 * Shade w x hgt heights (h_m[r * w + c], metres, samples spacing_m metres
 * apart) into rgb (3 * w * hgt bytes, caller-owned): the colour ramp times
 * a hillshade lit from the north-west, 45 degrees up, with slopes from
 * central differences (one-sided on the border). Flat land keeps its ramp
 * colour; water is shaded only faintly.
 */
void png_shade(const double *h_m, uint32_t w, uint32_t hgt, double spacing_m,
	       uint8_t *rgb);

/*
 * The same hillshade on colours the caller chose (png_material(), blended,
 * or png_ramp()): rgb holds w x hgt base colours on entry and the shaded
 * image on return. Ground below 0 m is shaded only faintly, as water.
 */
void png_shade_colours(const double *h_m, uint32_t w, uint32_t hgt,
		       double spacing_m, uint8_t *rgb);

struct progress;

/*
 * Write rgb (w x hgt, 3 bytes per pixel, row-major) as an 8-bit RGB PNG
 * with an sRGB chunk to path ("-" for standard output), counting rows
 * written on pr (progress.h; NULL: none). Returns 0, ERR_INVAL for an
 * empty image, ERR_NOMEM or ERR_IO (errno may tell more).
 */
int png_write_rgb(const char *path, const uint8_t *rgb, uint32_t w,
		  uint32_t hgt, struct progress *pr);

/*
 * Write v (w x hgt unsigned 16-bit values, row-major, host order) as a
 * 16-bit greyscale PNG to path, the values unchanged, and no gAMA, sRGB,
 * cHRM or iCCP chunk: readers that honour one (Godot converts by gAMA)
 * would change the values. Rows written are counted on pr (or NULL).
 * Returns 0, ERR_INVAL, ERR_NOMEM or ERR_IO.
 */
int png_write_gray16(const char *path, const uint16_t *v, uint32_t w,
		     uint32_t hgt, struct progress *pr);

/*
 * png_shade() then png_write_rgb(). Returns 0, ERR_INVAL, ERR_NOMEM or
 * ERR_IO. For example, one tile:
 *
 *   png_write_heights("t.png", h_m, t.side, t.side, 1 << t.lod);
 */
int png_write_heights(const char *path, const double *h_m, uint32_t w,
		      uint32_t hgt, double spacing_m);

/*
 * Read the PNG at path and report its size and how many distinct RGB
 * colours its pixels use (alpha ignored). Returns 0, ERR_IO (unreadable
 * or not a PNG) or ERR_NOMEM.
 */
int png_stat(const char *path, uint32_t *w, uint32_t *hgt, size_t *colours);

#endif
