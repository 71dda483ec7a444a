/*
 * png.c - shaded-relief previews of heightmaps (png.h).
 *
 * Colour by height from two small tables (under water, on land), or by
 * material id from the tile format's table, times a Lambertian hillshade;
 * written with libpng's simplified API, which reports errors by return
 * value instead of longjmp.
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

int png_write_rgb(const char *path, const uint8_t *rgb, uint32_t w,
		  uint32_t hgt)
{
	png_image img;
	int ok;

	if (!path || !rgb || !w || !hgt)
		return ERR_INVAL;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	img.width = w;
	img.height = hgt;
	img.format = PNG_FORMAT_RGB;
	img.flags = PNG_IMAGE_FLAG_FAST; /* zlib speed over size: maps are big */
	if (strcmp(path, "-") == 0)
		ok = png_image_write_to_stdio(&img, stdout, 0, rgb, 0, NULL) &&
		     fflush(stdout) == 0;
	else
		ok = png_image_write_to_file(&img, path, 0, rgb, 0, NULL);
	png_image_free(&img);
	return ok ? 0 : ERR_IO;
}

int png_write_gray16(const char *path, const uint16_t *v, uint32_t w,
		     uint32_t hgt)
{
	png_image img;
	int ok;

	if (!path || !v || !w || !hgt)
		return ERR_INVAL;
	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	img.width = w;
	img.height = hgt;
	img.format = PNG_FORMAT_LINEAR_Y; /* 16-bit grey, values as given */
	ok = png_image_write_to_file(&img, path, 0, v, 0, NULL);
	png_image_free(&img);
	return ok ? 0 : ERR_IO;
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
	rc = png_write_rgb(path, rgb, w, hgt);
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
