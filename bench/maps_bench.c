/*
 * maps_bench.c - a cold web map tile (docs/maps.md): the heights of its
 * block, its pixels (Terrarium or shaded) and the PNG, at zoom 17, 13 and 9
 * of `default` and zoom 17 and 15 of `eroded` (regions computed for the
 * tile alone, as a cold server does), beside the anchor of the same run:
 * a cold LOD-0 binary tile of the same preset (pipeline_tile, encode,
 * zstd). Also the PNG's bytes, and its compression: the served ones
 * (Terrarium: Up filter, Huffman coding only, "huff"; shaded: zlib level
 * 1, adaptive filters) beside the other (level 1 is what Terrarium tiles
 * had until issue 28) and zlib's default 6.
 * In-process, one thread, CPU time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gen/tilegen.h"
#include "maptile.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"
#include "tiles/pngenc.h"

#define W MAPTILE_SIZE

struct job {
	const struct preset *p;
	int lod, shaded, level;
	int64_t x0, z0;
	size_t bytes;
};

static void map_tile(void *arg)
{
	struct job *j = arg;
	int64_t s = INT64_C(1) << j->lod, b = j->shaded;
	uint32_t w = W + 2 * (uint32_t)b;
	int32_t *h = malloc((size_t)w * w * sizeof(*h));
	uint8_t *rgb = malloc(3 * W * W), *png;

	if (!h || !rgb || maptile_heights(j->p, 42, j->lod, j->x0 - b * s, j->z0 - b * s, w, w, NULL, h))
		bench_die("maptile_heights", 1);
	if (j->shaded && maptile_shade(j->p, 42, j->lod, j->x0, j->z0, W, W, h, rgb))
		bench_die("maptile_shade", 1);
	if (!j->shaded)
		maptile_terrarium(h, W * W, preset_quantum_um(j->p), rgb);
	if (pngenc_rgb(rgb, W, W, j->level, &png, &j->bytes))
		bench_die("pngenc_rgb", 1);
	free(png);
	free(rgb);
	free(h);
}

static void binary_tile(void *arg)
{
	struct job *j = arg;
	uint8_t *raw, *z;
	size_t len, zlen;

	if (tilegen_encode(j->p, 42, 0, 1, 2, NULL, NULL, 0, 0, &raw, &len) ||
	    tilegen_compress(raw, len, &z, &zlen))
		bench_die("tilegen", 1);
	j->bytes = zlen;
	free(raw);
	free(z);
}

static const struct preset *find(struct preset **v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(preset_name(v[i]), name))
			return v[i];
	bench_die(name, 1);
	return NULL;
}

/* One row: the map tile at zoom z of p, style, level, beside the binary
 * tile of p, measured together. */
static void row(const struct preset *p, int z, int shaded, int level)
{
	struct job map = { p, MAPTILE_MAX_ZOOM - z, shaded, level, 0, 0, 0 }, bin = { p, 0, 0, 0, 0, 0, 0 };
	struct maptile_block b;
	struct bench_fig f[2] = { { map_tile, &map }, { binary_tile, &bin } };
	double sec[2];
	char zl[8];

	if (maptile_block(p, z, (1u << (z - 1)) + 1, (1u << (z - 1)) - 2, 0, 0, &b))
		bench_die("maptile_block", 1);
	map.x0 = b.x0;
	map.z0 = b.z0;
	bench_times(f, 2, sec);
	snprintf(zl, sizeof(zl), level == PNGENC_HUFFMAN ? "huff" : "%d", level);
	printf("%s\t%d\t%d\t%s\t%s\t%.2f\t%.1f\t%.2f\t%.2fx\n", preset_name(p), z, 1 << map.lod,
	       shaded ? "shaded" : "terrarium", zl, sec[0] * 1e3, map.bytes / 1024.0, sec[1] * 1e3,
	       sec[0] / sec[1]);
}

int main(void)
{
	struct preset **v;
	size_t n;
	const struct preset *d, *e;
	int z, s;

	if (preset_load_builtin(&v, &n))
		bench_die("presets", 1);
	d = find(v, n, "default");
	e = find(v, n, "eroded");
	printf("preset\tzoom\tm/px\tstyle\tzlib\tmap tile ms\tPNG KiB\tLOD-0 tile ms (anchor)\tratio\n");
	for (z = 17; z >= 9; z -= 4)
		for (s = 0; s < 2; s++)
			row(d, z, s, s ? PNGENC_LEVEL_SHADED : PNGENC_LEVEL);
	row(d, 17, 0, 1);
	row(d, 17, 1, PNGENC_HUFFMAN);
	row(d, 17, 0, 6);
	row(d, 17, 1, 6);
	row(e, 17, 1, PNGENC_LEVEL_SHADED);
	row(e, 15, 1, PNGENC_LEVEL_SHADED);
	printf("note: a map tile is 256 x 256 pixels, one sample each (its heights, with a one-sample "
	       "border when shaded); the anchor is a 257 x 257 LOD-0 tile of the same preset, encoded "
	       "and compressed as the server caches it\n");
	printf("note: eroded rows compute their regions for the tile alone (a cold server; the "
	       "server's region cache shares them between neighbours)\n");
	preset_destroy_all(v, n);
	return 0;
}
