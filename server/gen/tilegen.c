/*
 * tilegen.c - generate, encode and compress one tile (see tilegen.h).
 */
#include "tilegen.h"

#include <stdlib.h>
#include <string.h>

#include <uv.h>
#define ZLIB_CONST   /* next_in is const */
#include <zlib.h>
#include <zstd.h>

#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"
#include "tilemake.h"
#include "zparams.h"

/* The layer names of ?layers= and their PIPELINE_LAYER_* bits. */
static const struct {
	const char *name;
	unsigned bit;
} layer_names[] = {
	{ "height", 0 },
	{ "material", PIPELINE_LAYER_MATERIAL },
};

/* ---- workspaces -------------------------------------------------------------- */

struct tilegen_work {
	struct tilegen_work *next;       /* in the pool's list */
	struct tilemake m;               /* generation, requantisation, encoding
					    (common/tilemake.h: the library's
					    path); m.enc is the encoded tile,
					    or an inflated body */
	uint8_t *out;                    /* zstd or gzip output */
	size_t out_cap;
	ZSTD_CCtx *zc;
	ZSTD_DCtx *zd;
	z_stream gz;
	int gz_ready;                    /* gz is initialised */
};

int tilegen_work_create(struct tilegen_work **out)
{
	struct tilegen_work *w;

	if (!out)
		return ERR_INVAL;
	if (!(w = calloc(1, sizeof(*w))))
		return ERR_NOMEM;
	if (tilemake_init(&w->m)) {
		free(w);
		return ERR_NOMEM;
	}
	*out = w;
	return 0;
}

void tilegen_work_destroy(struct tilegen_work *w)
{
	if (!w)
		return;
	tilemake_release(&w->m);
	free(w->out);
	ZSTD_freeCCtx(w->zc);
	ZSTD_freeDCtx(w->zd);
	if (w->gz_ready)
		deflateEnd(&w->gz);
	free(w);
}

size_t tilegen_work_bytes(const struct tilegen_work *w)
{
	if (!w)
		return 0;
	return sizeof(*w) + tilemake_bytes(&w->m) + w->out_cap + (w->zc ? ZSTD_sizeof_CCtx(w->zc) : 0) + (w->zd ? ZSTD_sizeof_DCtx(w->zd) : 0) +
	       (w->gz_ready ? (size_t)256 << 10 : 0);   /* deflate's window, hash, buffers */
}

/* *buf holding at least n bytes (contents not kept). 0 or ERR_NOMEM. */
static int reserve(uint8_t **buf, size_t *cap, size_t n)
{
	if (*cap >= n)
		return 0;
	free(*buf);
	*buf = malloc(n ? n : 1);
	*cap = *buf ? n : 0;
	return *buf ? 0 : ERR_NOMEM;
}

int tilegen_encode_work(struct tilegen_work *w, const struct preset *p, uint64_t seed,
			int lod, int32_t cx, int32_t cz, const struct region_source *rs,
			const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
			const uint8_t **out, size_t *len)
{
	return tilegen_encode_work_at(w, p, seed, lod, cx, cz, rs, bl, edit_seq, layers, 0,
				      TILE_FORM_CURRENT, out, len);
}

int tilegen_encode_work_at(struct tilegen_work *w, const struct preset *p, uint64_t seed,
			   int lod, int32_t cx, int32_t cz, const struct region_source *rs,
			   const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
			   uint32_t quantum_um, enum tile_form form, const uint8_t **out,
			   size_t *len)
{
	if (!w)
		return ERR_INVAL;
	return tilemake_encode(&w->m, p, seed, lod, cx, cz, rs, bl, edit_seq, layers,
			       quantum_um, form, out, len);
}

int tilegen_compress_work(struct tilegen_work *w, const uint8_t *raw, size_t len,
			  const uint8_t **out, size_t *zlen)
{
	size_t n;

	if (!w || (!raw && len) || !out || !zlen)
		return ERR_INVAL;
	if (!w->zc) {
		if (!(w->zc = ZSTD_createCCtx()))
			return ERR_NOMEM;
		if (tile_zstd_params(w->zc)) {
			ZSTD_freeCCtx(w->zc);
			w->zc = NULL;
			return ERR_ZSTD;
		}
	}
	if (reserve(&w->out, &w->out_cap, ZSTD_compressBound(len)))
		return ERR_NOMEM;
	n = ZSTD_compress2(w->zc, w->out, w->out_cap, raw, len);
	if (ZSTD_isError(n))
		return ERR_ZSTD;
	*out = w->out;
	*zlen = n;
	return 0;
}

int tilegen_gzip_work(struct tilegen_work *w, const uint8_t *raw, size_t len,
		      enum tilegen_gzip_kind kind, const uint8_t **out, size_t *glen)
{
	int strategy = kind == TILEGEN_GZIP_TILE ? Z_RLE : Z_DEFAULT_STRATEGY;

	if (!w || (!raw && len) || !out || !glen || len > UINT32_MAX / 2)
		return ERR_INVAL;
	if (!w->gz_ready) {
		/* 15 + 16: a gzip wrapper; memory level 8, zlib's default */
		if (deflateInit2(&w->gz, 6, Z_DEFLATED, 15 + 16, 8, strategy) != Z_OK)
			return ERR_NOMEM;
		w->gz_ready = 1;
	} else if (deflateReset(&w->gz) != Z_OK || deflateParams(&w->gz, 6, strategy) != Z_OK) {
		return ERR_ZLIB;
	}
	if (reserve(&w->out, &w->out_cap, deflateBound(&w->gz, (uLong)len)))
		return ERR_NOMEM;
	w->gz.next_in = raw;
	w->gz.avail_in = (uInt)len;
	w->gz.next_out = w->out;
	w->gz.avail_out = (uInt)(w->out_cap > UINT32_MAX ? UINT32_MAX : w->out_cap);
	if (deflate(&w->gz, Z_FINISH) != Z_STREAM_END)
		return ERR_ZLIB;
	*out = w->out;
	*glen = (size_t)w->gz.total_out;
	return 0;
}

int tilegen_decompress_work(struct tilegen_work *w, const uint8_t *z, size_t zlen,
			    uint8_t *out, size_t len)
{
	size_t n;

	if (!w || !z || (!out && len))
		return ERR_INVAL;
	if (!w->zd && !(w->zd = ZSTD_createDCtx()))
		return ERR_NOMEM;
	n = ZSTD_decompressDCtx(w->zd, out, len, z, zlen);
	return ZSTD_isError(n) || n != len ? ERR_ZSTD : 0;
}

int tilegen_inflate_work(struct tilegen_work *w, const uint8_t *z, size_t zlen, size_t len,
			 const uint8_t **out)
{
	int rc;

	if (!w || !out)
		return ERR_INVAL;
	if ((rc = tilemake_reserve_enc(&w->m, len)) != 0 ||
	    (rc = tilegen_decompress_work(w, z, zlen, w->m.enc, len)) != 0)
		return rc;
	*out = w->m.enc;
	return 0;
}

struct tilegen_pool {
	uv_mutex_t mu;
	struct tilegen_work *idle;       /* given back, most recent first */
	size_t n_idle, made;
};

int tilegen_pool_create(struct tilegen_pool **out)
{
	struct tilegen_pool *pool = calloc(1, sizeof(*pool));

	if (!pool || uv_mutex_init(&pool->mu)) {
		free(pool);
		return ERR_NOMEM;
	}
	*out = pool;
	return 0;
}

void tilegen_pool_destroy(struct tilegen_pool *pool)
{
	struct tilegen_work *w;

	if (!pool)
		return;
	while ((w = pool->idle)) {
		pool->idle = w->next;
		tilegen_work_destroy(w);
	}
	uv_mutex_destroy(&pool->mu);
	free(pool);
}

struct tilegen_work *tilegen_pool_take(struct tilegen_pool *pool)
{
	struct tilegen_work *w;

	uv_mutex_lock(&pool->mu);
	if ((w = pool->idle)) {
		pool->idle = w->next;
		pool->n_idle--;
	}
	uv_mutex_unlock(&pool->mu);
	if (w || tilegen_work_create(&w))
		return w;
	uv_mutex_lock(&pool->mu);
	pool->made++;
	uv_mutex_unlock(&pool->mu);
	return w;
}

void tilegen_pool_put(struct tilegen_pool *pool, struct tilegen_work *w)
{
	if (!w)
		return;
	if (tilegen_work_bytes(w) > TILEGEN_WORK_KEEP) {
		tilegen_work_destroy(w);
		return;
	}
	uv_mutex_lock(&pool->mu);
	w->next = pool->idle;
	pool->idle = w;
	pool->n_idle++;
	uv_mutex_unlock(&pool->mu);
}

void tilegen_pool_stats(struct tilegen_pool *pool, size_t *idle, size_t *made)
{
	uv_mutex_lock(&pool->mu);
	*idle = pool->n_idle;
	*made = pool->made;
	uv_mutex_unlock(&pool->mu);
}

/* ---- one-off calls -------------------------------------------------------------- */

int tilegen_encode(const struct preset *p, uint64_t seed, int lod,
		   int32_t cx, int32_t cz, const struct region_source *rs,
		   const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
		   uint8_t **out, size_t *len)
{
	struct tilegen_work *w;
	const uint8_t *enc;
	int rc;

	if (!p || !out || !len)
		return ERR_INVAL;
	if (tilegen_work_create(&w))
		return ERR_NOMEM;
	rc = tilegen_encode_work(w, p, seed, lod, cx, cz, rs, bl, edit_seq, layers, &enc, len);
	if (!rc && !(*out = malloc(*len)))
		rc = ERR_NOMEM;
	if (!rc)
		memcpy(*out, enc, *len);
	tilegen_work_destroy(w);
	return rc;
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
