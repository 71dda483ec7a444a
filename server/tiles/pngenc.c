/*
 * pngenc.c - RGB PNG images in memory with libpng (see pngenc.h).
 *
 * libpng reports errors by longjmp() to the setjmp() in encode(); the
 * buffer being written lives in a struct outside it, so nothing that
 * changes after setjmp() is read after the jump but through that struct.
 */
#include "pngenc.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "err.h"

struct membuf {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

static void write_cb(png_structp png, png_bytep data, png_size_t n)
{
	struct membuf *m = png_get_io_ptr(png);
	size_t cap = m->cap ? m->cap : 4096;
	uint8_t *np;

	if (m->oom)
		return;
	while (cap - m->len < n)
		cap *= 2;
	if (cap != m->cap) {
		if (!(np = realloc(m->p, cap))) {
			m->oom = 1;
			png_error(png, "out of memory");
		}
		m->p = np;
		m->cap = cap;
	}
	memcpy(m->p + m->len, data, n);
	m->len += n;
}

static void flush_cb(png_structp png)
{
	(void)png;
}

/* Errors end in the longjmp; warnings are dropped. */
static void warn_cb(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

static int encode(png_structp png, png_infop info, const uint8_t *rgb, uint32_t w,
		  uint32_t h, int level, struct membuf *m)
{
	uint32_t j;

	if (setjmp(png_jmpbuf(png)))
		return m->oom ? ERR_NOMEM : ERR_INVAL;
	png_set_write_fn(png, m, write_cb, flush_cb);
	if (level == PNGENC_HUFFMAN) {
		png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
		png_set_compression_strategy(png, Z_HUFFMAN_ONLY);
	}
	png_set_compression_level(png, level == PNGENC_HUFFMAN ? 1 : level);
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (j = 0; j < h; j++)
		png_write_row(png, (png_const_bytep)(rgb + (size_t)j * w * 3));
	png_write_end(png, info);
	return 0;
}

int pngenc_rgb(const uint8_t *rgb, uint32_t w, uint32_t h, int level, uint8_t **out,
	       size_t *len)
{
	struct membuf m = { NULL, 0, 0, 0 };
	png_structp png;
	png_infop info;
	int rc;

	if (!rgb || !out || !len || w < 1 || h < 1 || w > 65536 || h > 65536 ||
	    (level != PNGENC_HUFFMAN && (level < 0 || level > 9)))
		return ERR_INVAL;
	if (!(png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, warn_cb)))
		return ERR_NOMEM;
	if (!(info = png_create_info_struct(png))) {
		png_destroy_write_struct(&png, NULL);
		return ERR_NOMEM;
	}
	rc = encode(png, info, rgb, w, h, level, &m);
	png_destroy_write_struct(&png, &info);
	if (rc) {
		free(m.p);
		return rc;
	}
	*out = m.p;
	*len = m.len;
	return 0;
}
