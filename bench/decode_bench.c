/*
 * decode_bench.c - section 4: decoding speed.
 *
 * For each built-in preset, the 16 LOD-0 tiles of bench_chunk()'s chunks
 * (seed 42) are encoded, and compressed with zstd level 3, beforehand. Then,
 * cycling over them: tile_decode() (which allocates the heights) plus
 * tile_release(), and ZSTD_decompressDCtx() (one context reused) followed
 * by the same; and that again for the older forms: versions 5 and 6
 * (TILE_FORM_CODED8, 8 rANS states) and version 1 (tile_encode_lz21()).
 * The anchor: zstd -d alone on version 1's frames (whose Huffman-coded
 * byte planes are the entropy coding of that form); not on the current
 * version's, whose entropy-coded bytes zstd only stores, so that figure
 * would time a copy. Speed is MB/s of decoded int32 heights (257 x 257 x 4
 * bytes per tile, MB = 10^6 B). Each decoded tile is checked once against
 * the generated one. The last columns time the encoding of the same
 * tiles in version 7, 5 and 1, each with a scratch kept from call to call
 * as the server's workers keep theirs (tile_encode_form_in()).
 *
 * decode_bench DIR also writes the 16 `default` tiles of version 7 (what
 * tile_encode() writes), version 5 (TILE_FORM_CODED8) and version 3 to
 * DIR/tile-K.v7, .v5 and .v3, for bench/js_decode.mjs.
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
	uint8_t *cbody[BENCH_CHUNKS], *czbody[BENCH_CHUNKS]; /* version 5 */
	size_t clen[BENCH_CHUNKS], czlen[BENCH_CHUNKS];
	void *scratch;        /* tile_encode_form_in()'s */
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

static void unzstd_decode_v5(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t n = ZSTD_decompressDCtx(j->dctx, j->buf, j->cap, j->czbody[k], j->czlen[k]);

	if (ZSTD_isError(n))
		bench_die(ZSTD_getErrorName(n), ERR_ZSTD);
	decode(j->buf, n);
}

/* zstd -d alone, of version 1's frame. */
static void unzstd_v1(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t n = ZSTD_decompressDCtx(j->dctx, j->buf, j->cap, j->ozbody[k], j->ozlen[k]);

	if (ZSTD_isError(n))
		bench_die(ZSTD_getErrorName(n), ERR_ZSTD);
	bench_keep(j->buf[n - 1]);
}

static void encode_v5(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t len;
	int rc = tile_encode_form_in(&j->src[k], TILE_FORM_CODED8, j->scratch, j->buf, j->cap, &len);

	if (rc)
		bench_die("tile_encode_form_in", rc);
	bench_keep(j->buf[len - 1]);
}

static void encode_only(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t len;
	int rc = tile_encode_in(&j->src[k], j->scratch, j->buf, j->cap, &len);

	if (rc)
		bench_die("tile_encode_in", rc);
	bench_keep(j->buf[len - 1]);
}

static void encode_v1(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t len;
	int rc = tile_encode_form_in(&j->src[k], TILE_FORM_LZ21, j->scratch, j->buf, j->cap, &len);

	if (rc)
		bench_die("tile_encode_form_in", rc);
	bench_keep(j->buf[len - 1]);
}

/* Write n bytes to dir/tile-k.ext. */
static void write_tile(const char *dir, unsigned k, const char *ext, const uint8_t *b, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/tile-%u.%s", dir, k, ext);
	if (!(f = fopen(path, "wb")) || fwrite(b, 1, n, f) != n || fclose(f))
		bench_die(path, ERR_IO);
}

/* Encode and compress the 16 tiles of p into j, checking a round trip. */
static void prepare(struct job *j, const struct preset *p, ZSTD_CCtx *cctx, const char *dir)
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
		if ((rc = tile_encode_form_in(&t, TILE_FORM_CODED8, j->scratch, j->cbody[k], j->cap,
					      &j->clen[k])) != 0)
			bench_die(preset_name(p), rc);
		j->czlen[k] = ZSTD_compressCCtx(cctx, j->czbody[k], ZSTD_compressBound(j->cap),
						j->cbody[k], j->clen[k], 3);
		if (dir) {
			size_t len3;

			write_tile(dir, k, "v7", j->body[k], j->len[k]);
			write_tile(dir, k, "v5", j->cbody[k], j->clen[k]);
			/* j->buf is free until the figures */
			if ((rc = tile_encode_form_in(&t, TILE_FORM_CODED, j->scratch, j->buf, j->cap,
						      &len3)) != 0)
				bench_die(preset_name(p), rc);
			write_tile(dir, k, "v3", j->buf, len3);
		}
		if (ZSTD_isError(j->czlen[k]))
			bench_die(ZSTD_getErrorName(j->czlen[k]), ERR_ZSTD);
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
	struct job jj[8];
	struct bench_fig f[8] = { { decode_only, NULL }, { unzstd_decode, NULL },
				  { unzstd_decode_v5, NULL }, { unzstd_decode_v1, NULL },
				  { unzstd_v1, NULL }, { encode_only, NULL }, { encode_v5, NULL },
				  { encode_v1, NULL } };
	double sec[8], bytes = 257.0 * 257.0 * 4.0;
	int nf = 8;

	for (int i = 0; i < nf; i++) {
		jj[i] = *j;
		f[i].arg = &jj[i];
	}
	bench_times(f, (size_t)nf, sec);
	printf("%s\t%.0f\t%.1f\t%.0f\t%.1f\t%.0f\t%.0f\t%.1f\t%.0f\t%.1f\t%.1f\t%.1f\t%.2f\n", name,
	       bytes / sec[0] / 1e6, sec[0] * 1e6, bytes / sec[1] / 1e6, sec[1] * 1e6,
	       bytes / sec[2] / 1e6, bytes / sec[3] / 1e6, sec[3] * 1e6, bytes / sec[4] / 1e6,
	       sec[5] * 1e6, sec[6] * 1e6, sec[7] * 1e6, bench_loadavg());
	fflush(stdout);
	for (unsigned k = 0; k < BENCH_CHUNKS; k++)
		tile_release(&j->src[k]);
}

int main(int argc, char **argv)
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
	j.scratch = malloc(tile_encode_scratch_size(&probe));
	tile_release(&probe);
	j.buf = malloc(j.cap);
	j.dctx = ZSTD_createDCtx();
	if (!j.buf || !j.dctx || !cctx || !j.scratch)
		bench_die("out of memory", ERR_NOMEM);
	for (k = 0; k < BENCH_CHUNKS; k++) {
		j.body[k] = malloc(j.cap);
		j.zbody[k] = malloc(ZSTD_compressBound(j.cap));
		j.obody[k] = malloc(j.cap);
		j.ozbody[k] = malloc(ZSTD_compressBound(j.cap));
		j.cbody[k] = malloc(j.cap);
		j.czbody[k] = malloc(ZSTD_compressBound(j.cap));
		if (!j.body[k] || !j.zbody[k] || !j.obody[k] || !j.ozbody[k] || !j.cbody[k] ||
		    !j.czbody[k])
			bench_die("out of memory", ERR_NOMEM);
	}

	printf("preset\ttile_decode MB/s\ttile_decode us/tile\tzstd -d + tile_decode MB/s\t"
	       "zstd -d + tile_decode us/tile\tv5: zstd -d + tile_decode MB/s\t"
	       "v1: zstd -d + tile_decode MB/s\tv1: zstd -d + tile_decode us/tile\t"
	       "zstd -d alone, v1 frame, MB/s\t"
	       "tile_encode us/tile\tv5: tile_encode us/tile\tv1: tile_encode us/tile\tload\n");
	for (i = 0; i < n; i++) {
		if (preset_chunk_log2(v[i]) != 8)
			continue;
		prepare(&j, v[i], cctx, argc > 1 && !strcmp(preset_name(v[i]), "default") ? argv[1] : NULL);
		report(preset_name(v[i]), &j);
	}
	printf("note: MB/s of decoded int32 heights (257 x 257 x 4 B per LOD-0 tile); tile_decode and "
	       "tile_encode: format version 7; v5: versions 5 and 6 (?format=5), v1: version 1 "
	       "(?format=1), the same tiles; zstd -d alone: the anchor, zstd's own decoder on the frame "
	       "of version 1 (Huffman-coded byte planes); not on this version's, whose coded bytes "
	       "zstd only stores; "
	       "targets (issues 30, 40): zstd -d + tile_decode >= 1500 MB/s for default and at least "
	       "version 1's, tile_encode <= 150 us and at most version 1's; generate + encode + "
	       "zstd < 0.6 ms (section 2)\n");
	printf("note: a row's figures are timed together, their batches interleaved (median of %d); "
	       "load: the 1-minute load average when they ended\n", BENCH_BATCHES);

	for (k = 0; k < BENCH_CHUNKS; k++) {
		free(j.body[k]);
		free(j.zbody[k]);
		free(j.obody[k]);
		free(j.ozbody[k]);
		free(j.cbody[k]);
		free(j.czbody[k]);
	}
	free(j.buf);
	free(j.scratch);
	ZSTD_freeDCtx(j.dctx);
	ZSTD_freeCCtx(cctx);
	preset_destroy_all(v, n);
	return 0;
}
