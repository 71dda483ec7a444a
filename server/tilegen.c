/*
 * tilegen.c - generate, encode and compress one tile (see tilegen.h).
 */
#include "tilegen.h"

#include <stdlib.h>
#include <zstd.h>

#include "edit.h"
#include "err.h"
#include "preset.h"
#include "tile.h"

int tilegen_encode(const struct preset *p, uint64_t seed, int lod,
		   int32_t cx, int32_t cz, const struct edit *edits, size_t n,
		   uint64_t edit_seq, uint8_t **out, size_t *len)
{
	struct tile t = { 0 };
	uint8_t *buf;
	size_t cap;
	int rc;

	if (!p || !out || !len || (n && !edits))
		return ERR_INVAL;
	rc = pipeline_generate(p, seed, lod, cx, cz, &t);
	if (rc)
		return rc;
	edit_apply(&t, edits, n);
	t.edit_seq = edit_seq;
	cap = tile_encode_bound(&t);
	buf = malloc(cap);
	if (!buf) {
		tile_release(&t);
		return ERR_NOMEM;
	}
	rc = tile_encode(&t, buf, cap, len);
	tile_release(&t);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	return 0;
}

int tilegen_compress(const uint8_t *raw, size_t len, int level,
		     uint8_t **out, size_t *zlen)
{
	size_t cap = ZSTD_compressBound(len), n;
	uint8_t *z = malloc(cap), *fit;

	if (!z)
		return ERR_NOMEM;
	n = ZSTD_compress(z, cap, raw, len, level);
	if (ZSTD_isError(n)) {
		free(z);
		return ERR_ZSTD;
	}
	fit = realloc(z, n ? n : 1); /* give back the bound's slack */
	*out = fit ? fit : z;
	*zlen = n;
	return 0;
}

int tilegen_decompress(const uint8_t *z, size_t zlen, size_t len,
		       uint8_t **out)
{
	uint8_t *raw = malloc(len ? len : 1);
	size_t n;

	if (!raw)
		return ERR_NOMEM;
	n = ZSTD_decompress(raw, len, z, zlen);
	if (ZSTD_isError(n) || n != len) {
		free(raw);
		return ERR_ZSTD;
	}
	*out = raw;
	return 0;
}

/* Decimal digits only, at most 20 of them, into *v. */
static int parse_digits(const char *s, size_t len, uint64_t *v)
{
	size_t i;

	if (len == 0 || len > 20)
		return len ? ERR_RANGE : ERR_INVAL;
	*v = 0;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return ERR_INVAL;
		if (*v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return ERR_RANGE;
		*v = *v * 10 + (uint64_t)(s[i] - '0');
	}
	return 0;
}

static int all_digits(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return len > 0;
}

int tilegen_parse_i32(const char *s, size_t len, int32_t *out)
{
	int neg = len > 0 && s[0] == '-';
	uint64_t v;
	int rc;

	if (!s || !out || !all_digits(s + neg, len - (size_t)neg))
		return ERR_INVAL;
	rc = parse_digits(s + neg, len - (size_t)neg, &v);
	if (rc)
		return rc;
	if (v > (uint64_t)INT32_MAX + (uint64_t)neg)
		return ERR_RANGE;
	*out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
	return 0;
}

int tilegen_parse_lod(const struct preset *p, const char *s, size_t len,
		      int *out)
{
	uint64_t v;
	int rc;

	if (!p || !s || !out || !all_digits(s, len))
		return ERR_INVAL;
	rc = parse_digits(s, len, &v);
	if (rc)
		return rc;
	if (v > (uint64_t)preset_max_lod(p))
		return ERR_RANGE;
	*out = (int)v;
	return 0;
}
