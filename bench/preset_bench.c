/*
 * preset_bench.c - section 2: what one tile costs, per built-in preset.
 *
 * Single-threaded, cycling over bench_chunk()'s chunks (seed 42): ms per
 * LOD-0 tile for pipeline_generate() alone, then generate + tile_encode(),
 * then generate + encode + zstd with the server's parameters (zparams.h:
 * level 1, minimum match 7; one context reused); ns per sample for generate alone and
 * for the whole chain; and the whole chain at LOD 2 (65 x 65) and LOD 4
 * (17 x 17). Each figure includes allocating and freeing the tile, as the
 * server does. On a busy machine a chain can time below its first link, so
 * encode and zstd are also timed alone (on the 16 chunks' tiles, made
 * beforehand): those two columns say what each step adds.
 *
 * Output: tab-separated rows (bench.h). The `default` preset's
 * generate + encode + zstd figure is the one the 2 ms target is about.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zstd.h>

#include "bench.h"
#include "err.h"
#include "gen/zparams.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"

#define SEED 42u

enum stage { GENERATE = 1, ENCODE = 2, COMPRESS = 3 };

struct job {
	const struct preset *p;
	int lod;
	enum stage last;
	uint8_t *enc, *z;
	size_t enc_cap, z_cap;
	ZSTD_CCtx *cctx;
	unsigned tile;
	struct tile *tiles;     /* BENCH_CHUNKS LOD-0 tiles, for the steps alone */
	uint8_t *bodies;        /* their encodings, enc_cap bytes apart */
	size_t lens[BENCH_CHUNKS];
};

static void one_tile(void *arg)
{
	struct job *j = arg;
	struct tile t;
	int32_t cx, cz;
	size_t len = 0;
	int rc;

	bench_chunk(j->tile++, &cx, &cz);
	rc = pipeline_generate(j->p, SEED, j->lod, cx, cz, &t);
	if (rc)
		bench_die("pipeline_generate", rc);
	if (j->last >= ENCODE) {
		rc = tile_encode(&t, j->enc, j->enc_cap, &len);
		if (rc)
			bench_die("tile_encode", rc);
	}
	if (j->last >= COMPRESS) {
		len = ZSTD_compress2(j->cctx, j->z, j->z_cap, j->enc, len);
		if (ZSTD_isError(len))
			bench_die(ZSTD_getErrorName(len), ERR_ZSTD);
	}
	bench_keep((double)len + t.h[0]);
	tile_release(&t);
}

static void encode_alone(void *arg)
{
	struct job *j = arg;
	size_t len;
	int rc;

	rc = tile_encode(&j->tiles[j->tile++ % BENCH_CHUNKS], j->enc, j->enc_cap, &len);
	if (rc)
		bench_die("tile_encode", rc);
	bench_keep((double)len);
}

static void zstd_alone(void *arg)
{
	struct job *j = arg;
	unsigned k = j->tile++ % BENCH_CHUNKS;
	size_t len;

	len = ZSTD_compress2(j->cctx, j->z, j->z_cap, j->bodies + k * j->enc_cap,
			     j->lens[k]);
	if (ZSTD_isError(len))
		bench_die(ZSTD_getErrorName(len), ERR_ZSTD);
	bench_keep((double)len);
}

/* The LOD-0 tiles of the bench chunks and their encodings, for the steps
 * timed alone. */
static void make_tiles(struct job *j)
{
	unsigned k;
	int32_t cx, cz;
	int rc;

	for (k = 0; k < BENCH_CHUNKS; k++) {
		bench_chunk(k, &cx, &cz);
		rc = pipeline_generate(j->p, SEED, 0, cx, cz, &j->tiles[k]);
		if (!rc)
			rc = tile_encode(&j->tiles[k], j->bodies + k * j->enc_cap, j->enc_cap,
					 &j->lens[k]);
		if (rc)
			bench_die("generating the tiles", rc);
	}
}

static void free_tiles(struct job *j)
{
	unsigned k;

	for (k = 0; k < BENCH_CHUNKS; k++)
		tile_release(&j->tiles[k]);
}

/* The seven figures of one preset, measured together (bench.h). */
static void bench_preset(struct job *proto)
{
	static const struct { int lod; enum stage last; } chain[5] = {
		{ 0, GENERATE }, { 0, ENCODE }, { 0, COMPRESS }, { 2, COMPRESS }, { 4, COMPRESS },
	};
	struct job j[7];
	struct bench_fig f[7];
	double ms[7], per = 1e6 / (257.0 * 257.0);
	int k;

	make_tiles(proto);
	for (k = 0; k < 7; k++) {
		j[k] = *proto;
		if (k < 5) {
			j[k].lod = chain[k].lod;
			j[k].last = chain[k].last;
		}
		f[k] = (struct bench_fig){ k < 5 ? one_tile : k == 5 ? encode_alone : zstd_alone,
					   &j[k] };
	}
	bench_times(f, 7, ms);
	for (k = 0; k < 7; k++)
		ms[k] *= 1e3;
	printf("%s\t%.3f\t%.1f\t%.3f\t%.3f\t%.1f\t%.3f\t%.3f\t%.3f\t%.4f\t%.2f\n",
	       preset_name(proto->p), ms[0], ms[0] * per, ms[1], ms[2], ms[2] * per, ms[5], ms[6],
	       ms[3], ms[4], bench_loadavg());
	fflush(stdout);
	free_tiles(proto);
}

/*
 * `default` evaluates its tree on a 2 m grid and splines the LOD-0
 * samples between (presets/default.json, docs/presets.md). Its twin with
 * the grid removed, "default-exact", evaluates every sample: returned
 * here so its row shows what the grid saves.
 */
static struct preset *exact_twin(const struct preset *p)
{
	cJSON *root = cJSON_Parse(preset_canonical(p)), *tree;
	struct preset *q = NULL;
	char why[256], *json;

	tree = cJSON_GetObjectItemCaseSensitive(root, "root");
	if (!tree || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(tree, "grid")))
		bench_die("exact_twin: no root grid in the canonical default", ERR_PARSE);
	cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(tree, "grid"), 1);
	cJSON_DeleteItemFromObjectCaseSensitive(root, "algorithm");   /* not a preset key */
	cJSON_AddStringToObject(root, "name", "default-exact");
	json = cJSON_PrintUnformatted(root);
	if (!json || preset_parse("default-exact", json, strlen(json), &q, why, sizeof(why)))
		bench_die("exact_twin: preset_parse", ERR_PARSE);
	cJSON_free(json);
	cJSON_Delete(root);
	return q;
}

/* What the grid changes: heights of the bench chunks' LOD-0 tiles. */
static void grid_error(const struct preset *a, const struct preset *b)
{
	double sum = 0, max = 0, m = preset_quantum_um(a) * 1e-6;
	size_t n = 0, i, over = 0;
	unsigned k;
	int32_t cx, cz;

	for (k = 0; k < BENCH_CHUNKS; k++) {
		struct tile x, y;

		bench_chunk(k, &cx, &cz);
		if (pipeline_generate(a, SEED, 0, cx, cz, &x) ||
		    pipeline_generate(b, SEED, 0, cx, cz, &y))
			bench_die("grid_error: pipeline_generate", ERR_NOMEM);
		for (i = 0; i < (size_t)x.side * x.side; i++, n++) {
			double d = fabs((double)x.h[i] - (double)y.h[i]) * m;

			sum += d * d;
			max = d > max ? d : max;
			over += d >= 0.25;
		}
		tile_release(&x);
		tile_release(&y);
	}
	printf("note: default (2 m grid) against default-exact, %u LOD-0 tiles: "
	       "height difference rms %.3f m, max %.2f m, %.2f%% of samples >= 0.25 m\n",
	       BENCH_CHUNKS, sqrt(sum / (double)n), max, 100.0 * (double)over / (double)n);
}

int main(void)
{
	struct preset **v;
	struct job j = { 0 };
	struct tile probe;
	size_t n, i;
	int rc;

	rc = preset_load_builtin(&v, &n);
	if (rc)
		bench_die("preset_load_builtin", rc);
	rc = tile_init(&probe, 8, 0);
	if (rc)
		bench_die("tile_init", rc);
	j.enc_cap = tile_encode_bound(&probe);
	j.z_cap = ZSTD_compressBound(j.enc_cap);
	tile_release(&probe);
	j.enc = malloc(j.enc_cap);
	j.z = malloc(j.z_cap);
	j.cctx = ZSTD_createCCtx();
	if (j.cctx && tile_zstd_params(j.cctx))
		bench_die("tile_zstd_params", ERR_ZSTD);
	j.tiles = calloc(BENCH_CHUNKS, sizeof(*j.tiles));
	j.bodies = malloc(BENCH_CHUNKS * j.enc_cap);
	if (!j.enc || !j.z || !j.cctx || !j.tiles || !j.bodies)
		bench_die("out of memory", ERR_NOMEM);

	printf("preset\tgenerate ms\tgenerate ns/sample\t+ encode ms\t"
	       "+ encode + zstd ms\t+ encode + zstd ns/sample\t"
	       "encode alone ms\tzstd alone ms\tLOD 2: all ms\tLOD 4: all ms\tload\n");
	for (i = 0; i < n; i++) {
		if (preset_chunk_log2(v[i]) != 8) {
			printf("note: %s: chunk is %d m, not 256 m; skipped\n", preset_name(v[i]),
			       1 << preset_chunk_log2(v[i]));
			continue;
		}
		j.p = v[i];
		bench_preset(&j);
		if (!strcmp(preset_name(v[i]), "default")) {
			struct preset *exact = exact_twin(v[i]);

			j.p = exact;
			bench_preset(&j);
			grid_error(v[i], exact);
			preset_destroy(exact);
		}
	}
	printf("note: LOD-0 tile = 257 x 257 samples; \"all\" = generate + encode + zstd; "
	       "target: default generate + encode + zstd < 2 ms on one core\n");
	printf("note: a row's figures are timed together, their batches interleaved (median of "
	       "%d); load: the 1-minute load average when they ended\n", BENCH_BATCHES);

	ZSTD_freeCCtx(j.cctx);
	free(j.enc);
	free(j.z);
	free(j.tiles);
	free(j.bodies);
	preset_destroy_all(v, n);
	return 0;
}
