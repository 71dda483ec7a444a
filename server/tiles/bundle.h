/*
 * bundle.h - the body of the batch endpoint: many tiles in one response.
 *
 * GET /v1/worlds/{seed}/chunks/{lod}?cx0=&cz0=&cx1=&cz1= answers a bundle
 * (docs/tile-format.md, "Bundles"), all little-endian:
 *
 *   offset  size  field
 *   0       4     magic "TRBN"
 *   4       2     version, 1
 *   6       2     reserved, 0
 *   8       4     count n, 1..BUNDLE_MAX_COUNT
 *   12      4     reserved, 0
 *   16      16n   n entries: i32 cx, i32 cz, u32 offset, u32 length
 *   ...           the tile bodies, in entry order, back to back; offset
 *                 counts from the bundle's first byte
 *
 * Each body is a complete encoded tile, exactly the identity body of the
 * single-tile endpoint. This module lays out and writes the header and
 * index; routes.c fills in the bodies. Pure code.
 */
#ifndef BUNDLE_H
#define BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#define BUNDLE_TYPE "application/vnd.terrain.bundle" /* its media type */
#define BUNDLE_MAGIC     "TRBN"
#define BUNDLE_VERSION   1
#define BUNDLE_HEADER    16
#define BUNDLE_ENTRY     16
#define BUNDLE_MAX_COUNT 4096  /* readers accept; the endpoint sends <= 64 */

struct bundle_entry {
	int32_t cx, cz;
	uint32_t offset;   /* set by bundle_layout() */
	uint32_t length;   /* the tile body's size, set by the caller */
};

/*
 * Place n tile bodies (1..BUNDLE_MAX_COUNT, lengths set) one after the
 * other behind the index: sets every offset, and *total to the bundle's
 * size. Returns 0, ERR_INVAL (bad n) or ERR_TOOBIG (offsets over 4 GiB).
 */
int bundle_layout(struct bundle_entry *e, size_t n, size_t *total);

/* Write the header and index of n laid-out entries into out, which holds
 * at least BUNDLE_HEADER + n * BUNDLE_ENTRY bytes. */
void bundle_write_index(const struct bundle_entry *e, size_t n, uint8_t *out);

#endif
