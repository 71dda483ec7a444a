/*
 * tilegen.c - generate, encode and compress one tile (see tilegen.h).
 */
#include "tilegen.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"
#include "zparams.h"

/* The layer names of ?layers= and their PIPELINE_LAYER_* bits. */
static const struct {
	const char *name;
	unsigned bit;
} layer_names[] = {
	{ "height", 0 },
	{ "material", PIPELINE_LAYER_MATERIAL },
};

int tilegen_encode(const struct preset *p, uint64_t seed, int lod,
		   int32_t cx, int32_t cz, const struct region_source *rs,
		   const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
		   uint8_t **out, size_t *len)
{
	struct tile t = { 0 };
	uint8_t *buf;
	size_t cap;
	int rc;

	if (!p || !out || !len)
		return ERR_INVAL;
	rc = bl ? pipeline_tile_baked(p, seed, lod, cx, cz, rs, bl, edit_seq, layers, &t) :
	     pipeline_tile(p, seed, lod, cx, cz, rs, NULL, 0, edit_seq, layers, &t);
	if (rc)
		return rc;
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

int tilegen_compress(const uint8_t *raw, size_t len, uint8_t **out, size_t *zlen)
{
	size_t cap = ZSTD_compressBound(len), n;
	ZSTD_CCtx *c = ZSTD_createCCtx();
	uint8_t *z = malloc(cap), *fit;

	if (!z || !c) {
		free(z);
		ZSTD_freeCCtx(c);
		return ERR_NOMEM;
	}
	n = tile_zstd_params(c);
	if (!n)
		n = ZSTD_compress2(c, z, cap, raw, len);
	ZSTD_freeCCtx(c);
	if (ZSTD_isError(n)) {
		free(z);
		return ERR_ZSTD;
	}
	fit = realloc(z, n ? n : 1); /* give back the bound's slack */
	*out = fit ? fit : z;
	*zlen = n;
	return 0;
}

int tilegen_decompress_to(const uint8_t *z, size_t zlen, uint8_t *out, size_t len)
{
	size_t n = ZSTD_decompress(out, len, z, zlen);

	return ZSTD_isError(n) || n != len ? ERR_ZSTD : 0;
}

int tilegen_decompress(const uint8_t *z, size_t zlen, size_t len,
		       uint8_t **out)
{
	uint8_t *raw = malloc(len ? len : 1);

	if (!raw)
		return ERR_NOMEM;
	if (tilegen_decompress_to(z, zlen, raw, len)) {
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

int tilegen_parse_layers(const char *s, size_t len, unsigned *out)
{
	const char *end = s + len;
	unsigned bits = 0;
	size_t i;

	if (!s || !out || len == 0)
		return ERR_INVAL;
	for (;;) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		size_t n = (size_t)((comma ? comma : end) - s);

		for (i = 0; i < sizeof(layer_names) / sizeof(layer_names[0]); i++)
			if (strlen(layer_names[i].name) == n && !memcmp(layer_names[i].name, s, n))
				break;
		if (i == sizeof(layer_names) / sizeof(layer_names[0]))
			return ERR_INVAL;
		bits |= layer_names[i].bit;
		if (!comma)
			break;
		s = comma + 1;
	}
	*out = bits;
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
