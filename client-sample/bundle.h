/*
 * bundle.h - many tiles in one body: the batch endpoint's bundle.
 *
 * GET /v1/worlds/{seed}/chunks/{lod}?cx0=&cz0=&cx1=&cz1= answers a bundle:
 * an index of (cx, cz, offset, length) followed by the tile bodies. Until
 * docs/tile-format.md specifies it, this client reads the layout below
 * (all little-endian) and treats anything else as "not a bundle it knows",
 * so view.c can fall back to single tiles:
 *
 *   offset  size  field
 *   0       4     magic "TRBN"
 *   4       2     version, 1
 *   6       2     reserved, 0
 *   8       4     count n, 1..4096
 *   12      4     reserved, 0
 *   16      16n   n entries: int32 cx, int32 cz, uint32 offset, uint32 length
 *   ...           tile bodies; offset counts from the bundle's first byte
 *
 * Each body is a complete encoded tile (tile.h). Pure code: no I/O.
 */
#ifndef BUNDLE_H
#define BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#define BUNDLE_MAGIC      "TRBN"
#define BUNDLE_VERSION    1
#define BUNDLE_HEADER     16
#define BUNDLE_ENTRY      16
#define BUNDLE_MAX_TILES  4096

struct bundle_entry {
	int32_t cx, cz;
	const uint8_t *tile; /* points into the bundle */
	size_t len;
};

/*
 * Parse the index of b (n bytes) into out (cap entries) and *count.
 * Returns 0; ERR_MAGIC or ERR_VERSION for a body that is not a version-1
 * bundle (a caller may fall back); ERR_TRUNC, ERR_CORRUPT (a body outside
 * the bundle or overlapping the index) or ERR_TOOBIG (more than cap) for a
 * broken one.
 */
int bundle_parse(const uint8_t *b, size_t n, struct bundle_entry *out,
		 size_t cap, size_t *count);

#endif
