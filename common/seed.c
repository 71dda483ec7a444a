/*
 * seed.c - parse decimal and text seeds (see seed.h).
 */
#include "seed.h"

#include <xxhash.h>

#include "err.h"

static int is_text_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int seed_parse(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 1;
	size_t i;

	if (!s || !out || len == 0 || len > SEED_TEXT_MAX)
		return ERR_INVAL;
	for (i = 0; i < len; i++) {
		if (!is_text_char(s[i]))
			return ERR_INVAL;
		if (s[i] < '0' || s[i] > '9')
			digits = 0;
	}
	if (!digits) {
		*out = XXH3_64bits(s, len);
		return 0;
	}
	for (i = 0; i < len; i++) {
		uint64_t d = (uint64_t)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return ERR_RANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}
