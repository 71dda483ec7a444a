/*
 * bundle.c - read a bundle's index (bundle.h).
 */
#include "bundle.h"

#include <string.h>

#include "err.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int bundle_parse(const uint8_t *b, size_t n, struct bundle_entry *out,
		 size_t cap, size_t *count)
{
	size_t k, m, index_end;

	if (n < 4 || memcmp(b, BUNDLE_MAGIC, 4) != 0)
		return ERR_MAGIC;
	if (n < BUNDLE_HEADER)
		return ERR_TRUNC;
	if ((b[4] | b[5] << 8) != BUNDLE_VERSION)
		return ERR_VERSION;
	m = le32(b + 8);
	if (m == 0 || m > BUNDLE_MAX_TILES)
		return ERR_CORRUPT;
	if (m > cap)
		return ERR_TOOBIG;
	index_end = BUNDLE_HEADER + m * BUNDLE_ENTRY;
	if (n < index_end)
		return ERR_TRUNC;
	for (k = 0; k < m; k++) {
		const uint8_t *e = b + BUNDLE_HEADER + k * BUNDLE_ENTRY;
		size_t off = le32(e + 8), len = le32(e + 12);

		if (off < index_end || off > n || len > n - off)
			return ERR_CORRUPT;
		out[k].cx = (int32_t)le32(e);
		out[k].cz = (int32_t)le32(e + 4);
		out[k].tile = b + off;
		out[k].len = len;
	}
	*count = m;
	return 0;
}
