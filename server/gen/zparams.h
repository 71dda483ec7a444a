/*
 * zparams.h - the zstd parameters of every body the server compresses,
 * shared with the benchmarks so that they measure what is served.
 *
 * Level 1 with a minimum match of 7 bytes. Tile payloads are byte planes
 * of predictor residuals: the low planes are close to noise, where higher
 * levels spend their time on short spurious matches that cost more bits
 * than the literals they replace. Measured on the built-in presets' LOD-0
 * tiles (bench section 3): level 1 + minMatch 7 is 5-6% smaller than
 * level 3 and compresses in half the time (about 0.25 ms per tile).
 */
#ifndef ZPARAMS_H
#define ZPARAMS_H

#include <zstd.h>

#define TILE_ZSTD_LEVEL 1
#define TILE_ZSTD_MIN_MATCH 7

/* Set c to these parameters. Returns 0 or a zstd error code. */
static inline size_t tile_zstd_params(ZSTD_CCtx *c)
{
	size_t rc = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, TILE_ZSTD_LEVEL);

	if (!ZSTD_isError(rc))
		rc = ZSTD_CCtx_setParameter(c, ZSTD_c_minMatch, TILE_ZSTD_MIN_MATCH);
	if (!ZSTD_isError(rc))
		rc = ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
	return ZSTD_isError(rc) ? rc : 0;
}

#endif
