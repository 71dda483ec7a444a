/*
 * cold_bench.c - section 10's in-process anchor: what a cold tile costs
 * without a server, on the very tiles that bench/cold.sh then asks a
 * server for.
 *
 * Usage: cold_bench SEED CX0 CZ0 N [WIDTH [PASSES]]: LOD-0 `default` tiles
 * i = 0 .. N-1 at (CX0 + i / WIDTH, CZ0 + i % WIDTH), WIDTH 20. Each pass
 * makes every tile once, generate + encode + zstd (zparams.h), two ways,
 * interleaved pass by pass:
 *   - one-off: pipeline_generate() allocating its tile, tile_encode() and
 *     ZSTD_compress2() into buffers and a context kept by the bench, as
 *     section 2 (preset_bench.c) times it: the "in process" figure;
 *   - workspace: tilegen_encode_work() and tilegen_compress_work() in one
 *     kept struct tilegen_work, what a server worker does per cold tile.
 * Prints TSV (bench.h): per way the median, min and max over PASSES (5)
 * of this thread's CPU time per tile, the minor page faults per tile and
 * the zstd bytes per tile (which bench/cold.sh compares with the server's
 * bodies: the same bytes, so the same work).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <zstd.h>

#include "bench.h"
#include "err.h"
#include "gen/tilegen.h"
#include "gen/zparams.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"

struct run {
	const struct preset *p;
	uint64_t seed;
	int32_t cx0, cz0;
	unsigned n, width;
	uint8_t *enc, *z;
	size_t enc_cap, z_cap;
	ZSTD_CCtx *cctx;
	struct tilegen_work *w;
	double zbytes;                   /* zstd bytes made in the current pass */
};

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void one_off(struct run *r, int32_t cx, int32_t cz)
{
	struct tile t;
	size_t len;
	int rc = pipeline_generate(r->p, r->seed, 0, cx, cz, &t);

	if (!rc)
		rc = tile_encode(&t, r->enc, r->enc_cap, &len);
	if (rc)
		bench_die("one-off tile", rc);
	len = ZSTD_compress2(r->cctx, r->z, r->z_cap, r->enc, len);
	if (ZSTD_isError(len))
		bench_die(ZSTD_getErrorName(len), ERR_ZSTD);
	r->zbytes += (double)len;
	tile_release(&t);
}

static void workspace(struct run *r, int32_t cx, int32_t cz)
{
	const uint8_t *raw, *z;
	size_t len, zlen;
	int rc = tilegen_encode_work(r->w, r->p, r->seed, 0, cx, cz, NULL, NULL, 0, 0, &raw, &len);

	if (!rc)
		rc = tilegen_compress_work(r->w, raw, len, &z, &zlen);
	if (rc)
		bench_die("workspace tile", rc);
	r->zbytes += (double)zlen;
}

/* One pass over the tiles one way: CPU seconds, minor faults and zstd
 * bytes. */
static void pass(struct run *r, void (*fn)(struct run *, int32_t, int32_t), double *sec,
		 long *faults, double *zbytes)
{
	long f0 = minor_faults();
	double t0 = bench_now();
	unsigned i;

	r->zbytes = 0;
	for (i = 0; i < r->n; i++)
		fn(r, r->cx0 + (int32_t)(i / r->width), r->cz0 + (int32_t)(i % r->width));
	*sec = bench_now() - t0;
	*faults = minor_faults() - f0;
	*zbytes = r->zbytes;
	bench_keep(r->zbytes);
}

int main(int argc, char **argv)
{
	static const char *const names[2] = { "in process, one-off calls (as section 2)",
					      "in process, kept workspace (a server worker)" };
	void (*ways[2])(struct run *, int32_t, int32_t) = { one_off, workspace };
	struct preset **v;
	struct run r = { 0 };
	struct tile probe;
	size_t np, i;
	unsigned passes = 5, k, way;
	double *sec[2];
	long faults[2] = { 0, 0 };
	double zbytes[2] = { 0, 0 };

	if (argc < 5) {
		fprintf(stderr, "usage: cold_bench SEED CX0 CZ0 N [WIDTH [PASSES]]\n");
		return 2;
	}
	r.seed = strtoull(argv[1], NULL, 10);
	r.cx0 = (int32_t)strtol(argv[2], NULL, 10);
	r.cz0 = (int32_t)strtol(argv[3], NULL, 10);
	r.n = (unsigned)strtoul(argv[4], NULL, 10);
	r.width = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 10) : 20;
	passes = argc > 6 ? (unsigned)strtoul(argv[6], NULL, 10) : 5;
	if (!r.n || !r.width || !passes)
		bench_die("N, WIDTH and PASSES must be positive", ERR_INVAL);
	if (preset_load_builtin(&v, &np))
		bench_die("preset_load_builtin", ERR_NOMEM);
	for (i = 0; i < np; i++)
		if (!strcmp(preset_name(v[i]), "default"))
			r.p = v[i];
	if (!r.p || tile_init(&probe, preset_chunk_log2(r.p), 0))
		bench_die("no default preset", ERR_NOTFOUND);
	r.enc_cap = tile_encode_bound(&probe);
	r.z_cap = ZSTD_compressBound(r.enc_cap);
	tile_release(&probe);
	r.enc = malloc(r.enc_cap);
	r.z = malloc(r.z_cap);
	r.cctx = ZSTD_createCCtx();
	sec[0] = calloc(passes, sizeof(double));
	sec[1] = calloc(passes, sizeof(double));
	if (!r.enc || !r.z || !r.cctx || !sec[0] || !sec[1] || tilegen_work_create(&r.w))
		bench_die("out of memory", ERR_NOMEM);
	if (tile_zstd_params(r.cctx))
		bench_die("tile_zstd_params", ERR_ZSTD);
	one_off(&r, r.cx0 - 1, r.cz0);   /* warm-up, off the list */
	workspace(&r, r.cx0 - 1, r.cz0);
	for (k = 0; k < passes; k++)
		for (way = 0; way < 2; way++) {
			long f;

			pass(&r, ways[(way + k) % 2], &sec[(way + k) % 2][k], &f,
			     &zbytes[(way + k) % 2]);
			faults[(way + k) % 2] += f;
		}
	printf("way\tms per tile\tmin\tmax\tminor faults per tile\tzstd bytes per tile\n");
	for (way = 0; way < 2; way++) {
		double mn = sec[way][0], mx = sec[way][0];

		for (k = 0; k < passes; k++) {
			mn = sec[way][k] < mn ? sec[way][k] : mn;
			mx = sec[way][k] > mx ? sec[way][k] : mx;
		}
		printf("%s\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f\n", names[way],
		       bench_median(sec[way], passes) * 1e3 / r.n, mn * 1e3 / r.n, mx * 1e3 / r.n,
		       (double)faults[way] / ((double)passes * r.n), zbytes[way] / r.n);
	}
	printf("note: %u LOD-0 default tiles of seed %llu at (%d + i / %u, %d + i %% %u), every"
	       " tile once a pass, %u passes, the two ways interleaved; this thread's CPU time\n",
	       r.n, (unsigned long long)r.seed, r.cx0, r.width, r.cz0, r.width, passes);
	tilegen_work_destroy(r.w);
	ZSTD_freeCCtx(r.cctx);
	free(r.enc);
	free(r.z);
	free(sec[0]);
	free(sec[1]);
	preset_destroy_all(v, np);
	return 0;
}
