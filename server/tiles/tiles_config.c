/*
 * tiles_config.c - the tiles module's options (tiles.h: struct tiles_config).
 */
#include "base/options.h"
#include "tiles.h"
#include "util.h"

#define ROW(...) OPTION(struct tiles_config, __VA_ARGS__)

static const struct option options[] = {
	ROW("cache-mb", "TERRAIN_CACHE_MB", "MB", "256", OPTION_MIB, cache_bytes, 0, 1 << 20,
	    "tile cache bound in MiB, overhead included"),
	ROW("region-cache-mb", "TERRAIN_REGION_CACHE_MB", "MB", "256", OPTION_MIB, region_bytes, 0,
	    1 << 20, "eroded region cache bound in MiB (eroded presets)"),
	ROW("max-age", "TERRAIN_MAX_AGE", "SECONDS", "60", OPTION_UINT, max_age, 0, 365 * 86400,
	    "Cache-Control max-age of tiles; edits show after at most this"),
	ROW("bake-after", "TERRAIN_BAKE_AFTER", "N", "8", OPTION_UINT, bake_after, 0, 1 << 20,
	    "fold a chunk's edits into a stored height delta once N of them are not; "
	    "a cold tile then costs about the same whatever the chunk's history (0: never)"),
};
size_t tiles_options(const struct option **out)
{
	*out = options;
	return ARRAY_LEN(options);
}
