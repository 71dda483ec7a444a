/*
 * bundle.c - the bundle header and index (see bundle.h).
 */
#include "bundle.h"

#include <string.h>

#include "err.h"
#include "le.h"

int bundle_layout(struct bundle_entry *e, size_t n, size_t *total)
{
	uint64_t off = BUNDLE_HEADER + (uint64_t)n * BUNDLE_ENTRY;
	size_t k;

	if (!e || !total || n == 0 || n > BUNDLE_MAX_COUNT)
		return ERR_INVAL;
	for (k = 0; k < n; k++) {
		if (off + e[k].length > UINT32_MAX)
			return ERR_TOOBIG;
		e[k].offset = (uint32_t)off;
		off += e[k].length;
	}
	*total = (size_t)off;
	return 0;
}


void bundle_write_index(const struct bundle_entry *e, size_t n, uint8_t *out)
{
	size_t k;

	memset(out, 0, BUNDLE_HEADER);
	memcpy(out, BUNDLE_MAGIC, 4);
	out[4] = BUNDLE_VERSION;
	le_put32(out + 8, (uint32_t)n);
	for (k = 0; k < n; k++) {
		uint8_t *p = out + BUNDLE_HEADER + k * BUNDLE_ENTRY;

		le_put32(p, (uint32_t)e[k].cx);
		le_put32(p + 4, (uint32_t)e[k].cz);
		le_put32(p + 8, e[k].offset);
		le_put32(p + 12, e[k].length);
	}
}
