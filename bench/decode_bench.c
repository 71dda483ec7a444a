/*
 * decode_bench.c - section 4: decoding speed.
 *
 * For each built-in preset, the 16 LOD-0 tiles of bench_chunk()'s chunks
 * (seed 42) are encoded, and compressed with zstd level 3, beforehand. Then,
 * cycling over them: tile_decode() (which allocates the heights) plus
 * tile_release(), and ZSTD_decompressDCtx() (one context reused) followed
 * by the same; and that again for the previous format (tile_encode_lz21(),
 * version 1) for comparison. Speed is MB/s of decoded int32 heights (257 x 257 x 4 bytes
 * per tile, MB = 10^6 B); the target for tile_decode is > 500 MB/s. Each
 * decoded tile is checked once against the generated one. The last two
 * columns time tile_encode() and tile_encode_lz21() of the same tiles
 * (the server encodes every cold tile).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "bench.h"
#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"

#define SEED 42u

struct job {
	uint8_t *body[BENCH_CHUNKS], *zbody[BENCH_CHUNKS];
	size_t len[BENCH_CHUNKS], zlen[BENCH_CHUNKS];
	uint8_t *obody[BENCH_CHUNKS], *ozbody[BENCH_CHUNKS]; /* version 1 */
	size_t olen[BENCH_CHUNKS], ozlen[BENCH_CHUNKS];
	struct tile src[BENCH_CHUNKS];  /* the generated tiles, for the encode figures */
	uint8_t *buf;         /* decompressed body */
	size_t cap;
	ZSTD_DCtx *dctx;
	unsigned tile;
};

static void decode(const uint8_t *body, size_t len)
{
	struct tile t;
	int rc = tile_decode(body, len, &t);

	if (rc)
		bench_die("tile_decode", rc);
	bench_keep(t.h[t.side * t.side - 1]);
	tile_release(&t);
}

static void decode_only(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;

	decode(j->body[k], j->len[k]);
}

static void unzstd_decode(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t n = ZSTD_decompressDCtx(j->dctx, j->buf, j->cap, j->zbody[k], j->zlen[k]);

	if (ZSTD_isError(n))
		bench_die(ZSTD_getErrorName(n), ERR_ZSTD);
	decode(j->buf, n);
}

static void unzstd_decode_v1(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t n = ZSTD_decompressDCtx(j->dctx, j->buf, j->cap, j->ozbody[k], j->ozlen[k]);

	if (ZSTD_isError(n))
		bench_die(ZSTD_getErrorName(n), ERR_ZSTD);
	decode(j->buf, n);
}

static void encode_only(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t len;
	int rc = tile_encode(&j->src[k], j->buf, j->cap, &len);

	if (rc)
		bench_die("tile_encode", rc);
	bench_keep(j->buf[len - 1]);
}

static void encode_v1(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t len;
	int rc = tile_encode_lz21(&j->src[k], j->buf, j->cap, &len);

	if (rc)
		bench_die("tile_encode_lz21", rc);
	bench_keep(j->buf[len - 1]);
}

/* Encode and compress the 16 tiles of p into j, checking a round trip. */
static void prepare(struct job *j, const struct preset *p, ZSTD_CCtx *cctx)
{
	unsigned k;

	for (k = 0; k < BENCH_CHUNKS; k++) {
		struct tile t, back;
		int32_t cx, cz;
		int rc;

		bench_chunk(k, &cx, &cz);
		rc = pipeline_generate(p, SEED, 0, cx, cz, &t);
		if (!rc)
			rc = tile_encode(&t, j->body[k], j->cap, &j->len[k]);
		if (!rc)
			rc = tile_decode(j->body[k], j->len[k], &back);
		if (rc)
			bench_die(preset_name(p), rc);
		if (back.side != t.side ||
		    memcmp(back.h, t.h, (size_t)t.side * t.side * sizeof(*t.h)))
			bench_die("decoded heights differ from the generated ones", ERR_CORRUPT);
		j->zlen[k] = ZSTD_compressCCtx(cctx, j->zbody[k], ZSTD_compressBound(j->cap),
					       j->body[k], j->len[k], 3);
		if (ZSTD_isError(j->zlen[k]))
			bench_die(ZSTD_getErrorName(j->zlen[k]), ERR_ZSTD);
		if ((rc = tile_encode_lz21(&t, j->obody[k], j->cap, &j->olen[k])) != 0)
			bench_die(preset_name(p), rc);
		j->ozlen[k] = ZSTD_compressCCtx(cctx, j->ozbody[k], ZSTD_compressBound(j->cap),
						j->obody[k], j->olen[k], 3);
		if (ZSTD_isError(j->ozlen[k]))
			bench_die(ZSTD_getErrorName(j->ozlen[k]), ERR_ZSTD);
		tile_release(&back);
		j->src[k] = t;  /* released after the figures */
	}
}

static void report(const char *name, struct job *j)
{
	struct job j2 = *j, j3 = *j, j4 = *j, j5 = *j;
	struct bench_fig f[5] = { { decode_only, j }, { unzstd_decode, &j2 },
				  { unzstd_decode_v1, &j3 }, { encode_only, &j4 },
				  { encode_v1, &j5 } };
	double sec[5], bytes = 257.0 * 257.0 * 4.0;

	bench_times(f, 5, sec);
	printf("%s\t%.0f\t%.1f\t%.0f\t%.1f\t%.0f\t%.1f\t%.1f\t%.1f\n", name,
	       bytes / sec[0] / 1e6, sec[0] * 1e6, bytes / sec[1] / 1e6, sec[1] * 1e6,
	       bytes / sec[2] / 1e6, sec[2] * 1e6, sec[3] * 1e6, sec[4] * 1e6);
	fflush(stdout);
	for (unsigned k = 0; k < BENCH_CHUNKS; k++)
		tile_release(&j->src[k]);
}

int main(void)
{
	struct preset **v;
	struct job j = { 0 };
	struct tile probe;
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	size_t n, i;
	unsigned k;
	int rc;

	rc = preset_load_builtin(&v, &n);
	if (!rc)
		rc = tile_init(&probe, 8, 0);
	if (rc)
		bench_die("setting up", rc);
	j.cap = tile_encode_bound(&probe);
	tile_release(&probe);
	j.buf = malloc(j.cap);
	j.dctx = ZSTD_createDCtx();
	if (!j.buf || !j.dctx || !cctx)
		bench_die("out of memory", ERR_NOMEM);
	for (k = 0; k < BENCH_CHUNKS; k++) {
		j.body[k] = malloc(j.cap);
		j.zbody[k] = malloc(ZSTD_compressBound(j.cap));
		j.obody[k] = malloc(j.cap);
		j.ozbody[k] = malloc(ZSTD_compressBound(j.cap));
		if (!j.body[k] || !j.zbody[k] || !j.obody[k] || !j.ozbody[k])
			bench_die("out of memory", ERR_NOMEM);
	}

	printf("preset\ttile_decode MB/s\ttile_decode us/tile\tzstd -d + tile_decode MB/s\t"
	       "zstd -d + tile_decode us/tile\tv1: zstd -d + tile_decode MB/s\t"
	       "v1: zstd -d + tile_decode us/tile\ttile_encode us/tile\tv1: tile_encode us/tile\n");
	for (i = 0; i < n; i++) {
		if (preset_chunk_log2(v[i]) != 8)
			continue;
		prepare(&j, v[i], cctx);
		report(preset_name(v[i]), &j);
	}
	printf("note: MB/s of decoded int32 heights (257 x 257 x 4 B per LOD-0 tile); "
	       "target: tile_decode > 500 MB/s, zstd -d + tile_decode >= 1000 MB/s (issue 20); v1: the same "
	       "tiles in the previous format; tile_encode: the same tiles encoded (target <= 250 us "
	       "for default)\n");

	for (k = 0; k < BENCH_CHUNKS; k++) {
		free(j.body[k]);
		free(j.zbody[k]);
		free(j.obody[k]);
		free(j.ozbody[k]);
	}
	free(j.buf);
	ZSTD_freeDCtx(j.dctx);
	ZSTD_freeCCtx(cctx);
	preset_destroy_all(v, n);
	return 0;
}
