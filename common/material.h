/*
 * material.h - what the ground is made of: one material per sample.
 *
 * Each material has a weight that is a product of smooth bands over the
 * sample's height above sea level, its slope and a moisture noise, the way
 * terrain texturing blends layers; the dominant weight wins (ties go to
 * the lower id). Slope comes from the neighbouring samples, so the caller
 * passes the heights with a one-sample border (pipeline_heights() of the
 * block one sample wider than the tile, edits applied): neighbouring tiles
 * see the same neighbours and agree on their shared edges. Pure code.
 */
#ifndef MATERIAL_H
#define MATERIAL_H

#include <stddef.h>
#include <stdint.h>

struct preset;

/* id, name, RGB of a map colour; the table is part of the tile format. */
#define MATERIAL_MAP(XX)                          \
	XX(0, WATER,  "water",  0x2a5d8f)         \
	XX(1, SAND,   "sand",   0xd8c78e)         \
	XX(2, GRASS,  "grass",  0x6f9e4a)         \
	XX(3, FOREST, "forest", 0x3b6a35)         \
	XX(4, ROCK,   "rock",   0x8a8580)         \
	XX(5, SNOW,   "snow",   0xf2f4f7)

enum material_id {
#define XX(id, name, text, rgb) MATERIAL_##name = (id),
	MATERIAL_MAP(XX)
#undef XX
	MATERIAL_COUNT
};

/* "water", ...; NULL for an unknown id. */
const char *material_name(int id);

/* 0xRRGGBB map colour of id (grey for an unknown id). */
uint32_t material_rgb(int id);

/*
 * Classify the w x h samples of a block of the world (p, seed) on the
 * LOD-lod lattice whose sample (i, j) is at world (x0 + i * 2^lod,
 * z0 + j * 2^lod). bordered holds (w + 2) x (h + 2) heights in quanta: the
 * block with one more sample on every side. Writes w * h ids to out.
 * Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int material_classify(const struct preset *p, uint64_t seed, int lod, int64_t x0,
		      int64_t z0, uint32_t w, uint32_t h, const int32_t *bordered,
		      uint8_t *out);

#endif
