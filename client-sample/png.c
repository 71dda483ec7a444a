/*
 * png.c - shaded-relief previews of heightmaps (png.h).
 *
 * Colour by height from two small tables (under water, on land), or by
 * material id from the tile format's table, times a Lambertian hillshade;
 * written with libpng, whose errors longjmp back to encode() and whose
 * row callback drives a progress line (progress.h). Height data (16-bit
 * grey) carry no colour-space chunk; pictures an sRGB one. Reading
 * (png_stat) uses libpng's simplified API.
 */
#include "png.h"  /* ours: found first, next to this file */

#include <math.h>
#include <png.h>    /* libpng's; needs no -Iclient-sample on the command line */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "material.h"
#include "progress.h"

struct stop {
	double m;          /* height in metres */
	uint8_t rgb[3];
};

/* Below sea level (0 m), deepest first. */
static const struct stop water[] = {
	{ -1000, { 5, 20, 70 } },
	{ -200, { 10, 40, 110 } },
	{ -30, { 30, 90, 170 } },
	{ 0, { 80, 150, 210 } },
};

/* Land, lowest first. */
static const struct stop land[] = {
	{ 0, { 214, 200, 150 } },    /* sand */
	{ 6, { 200, 190, 130 } },
	{ 30, { 110, 165, 75 } },    /* grass */
	{ 250, { 55, 115, 50 } },    /* forest green */
	{ 700, { 70, 100, 55 } },
	{ 1100, { 125, 118, 108 } }, /* rock grey */
	{ 1600, { 160, 155, 150 } },
	{ 2000, { 250, 250, 252 } }, /* snow white */
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static uint8_t mix(uint8_t a, uint8_t b, double t)
{
	return (uint8_t)(a + (b - a) * t + 0.5);
}

static void ramp(const struct stop *s, size_t n, double m, uint8_t rgb[3])
{
	size_t k = 1;
	double t;

	if (m <= s[0].m) {
		memcpy(rgb, s[0].rgb, 3);
		return;
	}
	while (k < n && m > s[k].m)
		k++;
	if (k == n) {
		memcpy(rgb, s[n - 1].rgb, 3);
		return;
	}
	t = (m - s[k - 1].m) / (s[k].m - s[k - 1].m);
	for (int c = 0; c < 3; c++)
		rgb[c] = mix(s[k - 1].rgb[c], s[k].rgb[c], t);
}

void png_ramp(double h_m, uint8_t rgb[3])
{
	if (h_m < 0)
		ramp(water, COUNT(water), h_m, rgb);
	else
		ramp(land, COUNT(land), h_m, rgb);
}

void png_material(int id, double h_m, uint8_t rgb[3])
{
	static const uint8_t deep[3] = { 12, 34, 72 };
	uint32_t c = material_rgb(id);
	double t;

	rgb[0] = (uint8_t)(c >> 16);
	rgb[1] = (uint8_t)(c >> 8);
	rgb[2] = (uint8_t)c;
	if (id != MATERIAL_WATER || !(h_m < 0))
		return;
	t = 1 - exp(h_m / 80); /* 0 at the surface, 0.5 at 55 m down */
	for (int k = 0; k < 3; k++)
		rgb[k] = mix(rgb[k], deep[k], t);
}

/* Slope along one axis at index i of n samples step apart (stride). */
static double slope(const double *p, uint32_t i, uint32_t n, size_t stride,
		    double spacing)
{
	if (n < 2)
		return 0;
	if (i == 0)
		return (p[stride] - p[0]) / spacing;
	if (i == n - 1)
		return (p[0] - p[-(ptrdiff_t)stride]) / spacing;
	return (p[stride] - p[-(ptrdiff_t)stride]) / (2 * spacing);
}

/*
 * Brightness of a surface with slopes dx (along x, east) and dz (along z,
 * south), relative to flat ground: light from the north-west (-x, -z),
 * 45 degrees up, so the light vector is (-1/2, -1/2, 1/sqrt 2). Steep
 * ground is lit as if gentler (the slope divided by 1 + 0.5 * slope, as
 * the viewer does), so cliffs keep their colour instead of going black.
 */
static double hillshade(double dx, double dz)
{
	const double up = 0.70710678118654752;
	double k = 1 / (1 + 0.5 * sqrt(dx * dx + dz * dz)), lit;

	dx *= k;
	dz *= k;
	lit = (0.5 * dx + 0.5 * dz + up) / sqrt(1 + dx * dx + dz * dz);

	return (lit > 0 ? lit : 0) / up;
}

void png_shade(const double *h_m, uint32_t w, uint32_t hgt, double spacing_m,
	       uint8_t *rgb)
{
	for (size_t k = 0; k < (size_t)w * hgt; k++)
		png_ramp(h_m[k], rgb + 3 * k);
	png_shade_colours(h_m, w, hgt, spacing_m, rgb);
}

void png_shade_colours(const double *h_m, uint32_t w, uint32_t hgt,
		       double spacing_m, uint8_t *rgb)
{
	for (uint32_t r = 0; r < hgt; r++) {
		for (uint32_t c = 0; c < w; c++) {
			size_t k = (size_t)r * w + c;
			double dx = slope(h_m + k, c, w, 1, spacing_m);
			double dz = slope(h_m + k, r, hgt, w, spacing_m);
			double b = hillshade(dx, dz);
			uint8_t *px = rgb + 3 * k;

			/* 1 on flat ground, 0.45 in full shadow, at most 1.275 */
			b = b < 1.5 ? b : 1.5;
			b = h_m[k] < 0 ? 0.85 + 0.15 * b : 0.45 + 0.55 * b;
			for (int ch = 0; ch < 3; ch++) {
				double v = px[ch] * b;

				px[ch] = (uint8_t)(v > 255 ? 255 : v + 0.5);
			}
		}
	}
}

/* Where a PNG goes, and its progress (or NULL). */
struct sink {
	FILE *f;
	struct progress *pr;
	int err;
};

static void sink_write(png_structp png, png_bytep data, png_size_t n)
{
	struct sink *s = png_get_io_ptr(png);

	if (fwrite(data, 1, n, s->f) != n) {
		s->err = 1;
		png_error(png, "write failed");
	}
}

static void sink_flush(png_structp png)
{
	struct sink *s = png_get_io_ptr(png);

	if (fflush(s->f))
		s->err = 1;
}

static void sink_rows(png_structp png, png_uint_32 row, int pass)
{
	struct sink *s = png_get_io_ptr(png);

	(void)pass;
	if (s->pr)
		progress_set(s->pr, row, NULL);
}

/* What a PNG is: size, pixel layout, compression, and the chunks. */
struct layout {
	uint32_t w, h;
	int depth, colour;   /* 8 and RGB, or 16 and grey */
	int filters, level;  /* png_set_filter() mask, zlib level */
	int srgb;            /* an sRGB chunk (pictures); none for data */
};

/* Write rows (h rows of stride bytes, 16-bit samples in host order) as
 * l says into s; libpng's errors come back here by longjmp. */
static int encode(png_structp png, png_infop info, const struct layout *l,
		  const uint8_t *rows, size_t stride, struct sink *s)
{
	static const uint16_t one = 1;
	uint32_t j;

	if (setjmp(png_jmpbuf(png)))
		return ERR_IO;
	png_set_write_fn(png, s, sink_write, sink_flush);
	png_set_write_status_fn(png, sink_rows);
	png_set_filter(png, PNG_FILTER_TYPE_BASE, l->filters);
	png_set_compression_level(png, l->level);
	png_set_IHDR(png, info, l->w, l->h, l->depth, l->colour, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (l->srgb)
		png_set_sRGB(png, info, PNG_sRGB_INTENT_PERCEPTUAL);
	png_write_info(png, info);
	if (l->depth == 16 && *(const uint8_t *)&one)
		png_set_swap(png); /* PNG is big-endian, this host little */
	for (j = 0; j < l->h; j++)
		png_write_row(png, (png_const_bytep)(rows + (size_t)j * stride));
	png_write_end(png, info);
	return 0;
}

/* Write a PNG to path ("-": standard output). */
static int write_png(const char *path, const struct layout *l, const void *rows, size_t stride,
		     struct progress *pr)
{
	struct sink s = { NULL, pr, 0 };
	png_structp png;
	png_infop info = NULL;
	int rc, std = strcmp(path, "-") == 0;

	if (!(s.f = std ? stdout : fopen(path, "wb")))
		return ERR_IO;
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	if (png)
		info = png_create_info_struct(png);
	rc = png && info ? encode(png, info, l, rows, stride, &s) : ERR_NOMEM;
	png_destroy_write_struct(&png, &info);
	if (fflush(s.f) || s.err)
		rc = rc ? rc : ERR_IO;
	if (!std && fclose(s.f))
		rc = rc ? rc : ERR_IO;
	return rc;
}

int png_write_rgb(const char *path, const uint8_t *rgb, uint32_t w,
		  uint32_t hgt, struct progress *pr)
{
	/* zlib speed over size, no filters: maps are big */
	struct layout l = { w, hgt, 8, PNG_COLOR_TYPE_RGB, PNG_FILTER_NONE, 3, 1 };

	if (!path || !rgb || !w || !hgt)
		return ERR_INVAL;
	return write_png(path, &l, rgb, (size_t)w * 3, pr);
}

int png_write_gray16(const char *path, const uint16_t *v, uint32_t w,
		     uint32_t hgt, struct progress *pr)
{
	struct layout l = { w, hgt, 16, PNG_COLOR_TYPE_GRAY, PNG_ALL_FILTERS, 6, 0 };

	if (!path || !v || !w || !hgt)
		return ERR_INVAL;
	return write_png(path, &l, v, (size_t)w * 2, pr);
}

int png_write_heights(const char *path, const double *h_m, uint32_t w,
		      uint32_t hgt, double spacing_m)
{
	uint8_t *rgb;
	int rc;

	if (!h_m || !w || !hgt || !(spacing_m > 0))
		return ERR_INVAL;
	rgb = malloc((size_t)w * hgt * 3);
	if (!rgb)
		return ERR_NOMEM;
	png_shade(h_m, w, hgt, spacing_m, rgb);
	rc = png_write_rgb(path, rgb, w, hgt, NULL);
	free(rgb);
	return rc;
}

int png_stat(const char *path, uint32_t *w, uint32_t *hgt, size_t *colours)
{
	png_image img;
	uint8_t *rgb, *seen;
	size_t n, count = 0;
	int ok;

	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&img, path))
		return ERR_IO;
	img.format = PNG_FORMAT_RGB;
	n = (size_t)img.width * img.height;
	rgb = malloc(n * 3);
	seen = calloc(1u << 21, 1); /* one bit per 24-bit colour */
	if (!rgb || !seen) {
		png_image_free(&img);
		free(rgb);
		free(seen);
		return ERR_NOMEM;
	}
	ok = png_image_finish_read(&img, NULL, rgb, 0, NULL);
	for (size_t k = 0; ok && k < n; k++) {
		uint32_t c = (uint32_t)rgb[3 * k] << 16 |
			     (uint32_t)rgb[3 * k + 1] << 8 | rgb[3 * k + 2];

		if (!(seen[c >> 3] & (1u << (c & 7)))) {
			seen[c >> 3] |= (uint8_t)(1u << (c & 7));
			count++;
		}
	}
	*w = img.width;
	*hgt = img.height;
	*colours = count;
	png_image_free(&img);
	free(rgb);
	free(seen);
	return ok ? 0 : ERR_IO;
}
