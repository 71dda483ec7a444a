/*
 * wasm_native.c - section 16's native anchors (bench/wasm.sh): what the
 * WebAssembly build is measured against, in the same run.
 *
 * Single-threaded, on bench_chunk()'s 16 chunks of `default` (seed 42):
 * ms per LOD-0 tile of generation alone (pipeline_tile_work(): the heights
 * of a tile, as terrain.wasm's tw_generate makes them without encoding)
 * and of tile_decode() of the same tiles' encodings. bench/wasm.sh builds
 * this twice: against the build's libcommon.a (the SIMD clones, as
 * loaded) and against common/ compiled with -DTERRAIN_NO_CLONES (the
 * baseline x86-64 code: "native scalar"). With --chunks it prints the
 * chunk list (cx cz per line) for the JavaScript side, and with --tiles
 * DIR writes the 16 encoded tiles there as tile-K.bin (version 7, what
 * tile_encode() writes), tile-K.v5.bin (version 5) and tile-K.v3.bin.
 *
 * Output: one tab-separated row (bench.h) after a header.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"

#define SEED 42u

struct job {
	const struct preset *p;
	struct pipeline_work *w;
	uint8_t *body[BENCH_CHUNKS];
	size_t len[BENCH_CHUNKS];
	unsigned k;
};

static void gen_one(void *arg)
{
	struct job *j = arg;
	const struct tile *t;
	int32_t cx, cz;
	int rc;

	bench_chunk(j->k++, &cx, &cz);
	rc = pipeline_tile_work(j->w, j->p, SEED, 0, cx, cz, NULL, NULL, 0, NULL, 0, 0, &t);
	if (rc)
		bench_die("pipeline_tile_work", rc);
	bench_keep(t->h[t->side * t->side - 1]);
}

static void decode_one(void *arg)
{
	struct job *j = arg;
	unsigned k = j->k++ % BENCH_CHUNKS;
	struct tile t;
	int rc = tile_decode(j->body[k], j->len[k], &t);

	if (rc)
		bench_die("tile_decode", rc);
	bench_keep(t.h[t.side * t.side - 1]);
	tile_release(&t);
}

static void write_tile(const char *dir, unsigned k, const char *suffix, const uint8_t *b,
		       size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/tile-%u%s.bin", dir, k, suffix);
	if (!(f = fopen(path, "wb")) || fwrite(b, 1, len, f) != len || fclose(f))
		bench_die(path, ERR_IO);
}

/* t in form (as servers before format version 7 or 5 sent it: versions 5
 * and 3 at LOD 0) to dir/tile-k.suffix.bin: the latter for the JavaScript
 * decoder of that time (bench/wasm.sh). */
static void write_form(const char *dir, unsigned k, const struct tile *t, enum tile_form form,
		       const char *suffix)
{
	void *scratch = malloc(tile_encode_scratch_size(t));
	uint8_t *b = malloc(tile_encode_bound(t));
	size_t len;
	int rc;

	if (!scratch || !b)
		bench_die("malloc", ERR_NOMEM);
	if ((rc = tile_encode_form_in(t, form, scratch, b, tile_encode_bound(t), &len)))
		bench_die("tile_encode_form_in", rc);
	write_tile(dir, k, suffix, b, len);
	free(b);
	free(scratch);
}

/* The 16 tiles' encodings into j, and into dir when not NULL (and their
 * version-5 and version-3 encodings, tile-K.v5.bin and tile-K.v3.bin). */
static void encode_all(struct job *j, const char *dir)
{
	for (unsigned k = 0; k < BENCH_CHUNKS; k++) {
		struct tile t;
		int32_t cx, cz;
		int rc;

		bench_chunk(k, &cx, &cz);
		if ((rc = pipeline_generate(j->p, SEED, 0, cx, cz, &t)))
			bench_die("pipeline_generate", rc);
		j->body[k] = malloc(tile_encode_bound(&t));
		if (!j->body[k])
			bench_die("malloc", ERR_NOMEM);
		if ((rc = tile_encode(&t, j->body[k], tile_encode_bound(&t), &j->len[k])))
			bench_die("tile_encode", rc);
		if (dir) {
			write_tile(dir, k, "", j->body[k], j->len[k]);
			write_form(dir, k, &t, TILE_FORM_BEFORE7, ".v5");
			write_form(dir, k, &t, TILE_FORM_BEFORE5, ".v3");
		}
		tile_release(&t);
	}
}

int main(int argc, char **argv)
{
	struct preset **v;
	struct job j = { 0 };
	struct bench_fig f[2];
	double sec[2];
	size_t n, i;
	int rc;

	if (argc > 1 && !strcmp(argv[1], "--chunks")) {
		for (unsigned k = 0; k < BENCH_CHUNKS; k++) {
			int32_t cx, cz;

			bench_chunk(k, &cx, &cz);
			printf("%d %d\n", (int)cx, (int)cz);
		}
		return 0;
	}
	if ((rc = preset_load_builtin(&v, &n)))
		bench_die("presets", rc);
	for (i = 0; i < n && strcmp(preset_name(v[i]), "default"); i++)
		;
	if (i == n)
		bench_die("no default preset", ERR_NOTFOUND);
	j.p = v[i];
	if ((rc = pipeline_work_create(&j.w)))
		bench_die("pipeline_work_create", rc);
	encode_all(&j, argc > 2 && !strcmp(argv[1], "--tiles") ? argv[2] : NULL);
	f[0] = (struct bench_fig){ gen_one, &j };
	f[1] = (struct bench_fig){ decode_one, &j };
	bench_times(f, 2, sec);
	printf("generate ms\ttile_decode ms\n%.3f\t%.3f\n", sec[0] * 1e3, sec[1] * 1e3);
	for (unsigned k = 0; k < BENCH_CHUNKS; k++)
		free(j.body[k]);
	pipeline_work_destroy(j.w);
	preset_destroy_all(v, n);
	return 0;
}
