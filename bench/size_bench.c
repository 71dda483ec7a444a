/*
 * size_bench.c - section 3: bytes per LOD-0 tile, ours beside 16-bit PNG.
 *
 * For each built-in preset, the 16 LOD-0 tiles of bench_chunk()'s chunks
 * (seed 42): the tile_encode() output, that body compressed by zstd as the
 * server sends it with Content-Encoding: zstd (zparams.h) and at level 19
 * for reference, the previous format (tile_encode_lz21(), format version
 * 1) under the server's zstd, and the
 * anchor: the same heights minus the tile's minimum as a 16-bit grayscale
 * PNG (one sample per quantum, 1 cm for every shipped preset) written by
 * libpng with its defaults, and again at maximum compression (zlib level 9,
 * memory level 9, every row filter tried). A tile whose range does not fit
 * 16 bits is stored at the smallest power-of-two multiple of the quantum
 * that fits (2 cm for a range up to 1310 m) and counted in a note: that PNG
 * is lossy, which flatters PNG.
 *
 * The other anchor, with -DHAVE_LERC (the Makefile, when liblerc-dev is
 * there): Esri's LERC (liblerc, the library the shared harness
 * ../shared/bench/compress links) lossless at the tile's quantum: the
 * int32 heights in quanta with maxZErr 0.5, which LERC stores exactly;
 * every blob is decoded and compared with the tile, or the bench stops.
 *
 * Every column is the median over the 16 tiles; the ratios are ratios of
 * medians (lower is better for us; the target is zstd / PNG16 <= 0.4).
 * The terrain columns (median tile range, rms slope of forward
 * differences) let the sizes be compared with other data sets. Sizes do
 * not depend on the machine, so one pass gives them; the last column is
 * the 1-minute load average when the preset's row was measured.
 */
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <zstd.h>
#ifdef HAVE_LERC
#include <Lerc_c_api.h>
#endif

#include "bench.h"
#include "err.h"
#include "gen/zparams.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"

#define SEED 42u

/* LERC's output buffer: more than 8 bytes a sample, as the harness gives it */
#define LERC_CAP (257u * 257u * 8u + 4096u)

enum col { ENC, ZS, Z19, OLD, PNG_DEF, PNG_MAX, LERC, RANGE_M, SLOPE, NCOL };

/* A growing byte buffer that libpng writes into. */
struct mem {
	uint8_t *p;
	size_t n, cap;
};

static void mem_write(png_structp png, png_bytep data, size_t len)
{
	struct mem *m = png_get_io_ptr(png);

	if (m->n + len > m->cap) {
		size_t cap = 2 * (m->n + len);
		uint8_t *p = realloc(m->p, cap);

		if (!p)
			png_error(png, "out of memory");
		m->p = p;
		m->cap = cap;
	}
	memcpy(m->p + m->n, data, len);
	m->n += len;
}

static void mem_flush(png_structp png)
{
	(void)png;
}

/*
 * Write side x side 16-bit samples v as a grayscale PNG into m; best
 * selects maximum compression. Returns the PNG's size, 0 on a libpng error.
 */
static size_t png16(const uint16_t *v, uint32_t side, int best, struct mem *m)
{
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	uint8_t *row = malloc(2 * (size_t)side);
	size_t size = 0;
	uint32_t i, j;

	m->n = 0;
	if (!png || !info || !row)
		goto out;
	if (setjmp(png_jmpbuf(png)))
		goto out;
	png_set_write_fn(png, m, mem_write, mem_flush);
	if (best) {
		png_set_compression_level(png, 9);
		png_set_compression_mem_level(png, 9);
		png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);
	}
	png_set_IHDR(png, info, side, side, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (j = 0; j < side; j++) {
		for (i = 0; i < side; i++) {                    /* PNG is big-endian */
			row[2 * i] = (uint8_t)(v[j * side + i] >> 8);
			row[2 * i + 1] = (uint8_t)v[j * side + i];
		}
		png_write_row(png, row);
	}
	png_write_end(png, NULL);
	size = m->n;
out:
	png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
	free(row);
	return size;
}

/* Heights minus their minimum, divided by the smallest power of two that
 * fits them in 16 bits. Returns that divisor (1: exact). */
static int32_t to_u16(const struct tile *t, uint16_t *v, double *range_m)
{
	size_t n = (size_t)t->side * t->side, k;
	int32_t lo = t->h[0], hi = t->h[0], step = 1;

	for (k = 1; k < n; k++) {
		lo = t->h[k] < lo ? t->h[k] : lo;
		hi = t->h[k] > hi ? t->h[k] : hi;
	}
	while ((int64_t)hi - lo > (int64_t)65535 * step)
		step *= 2;
	for (k = 0; k < n; k++)
		v[k] = (uint16_t)(((int64_t)t->h[k] - lo) / step);
	*range_m = ((double)hi - lo) * t->quantum_um * 1e-6;
	return step;
}

/* rms length of the forward-difference gradient, metres per metre. */
static double rms_slope(const struct tile *t)
{
	double q = t->quantum_um * 1e-6 / (double)(1u << t->lod), s = 0.0;
	uint32_t i, j, n = t->side;

	for (j = 0; j + 1 < n; j++)
		for (i = 0; i + 1 < n; i++) {
			double gx = (double)t->h[j * n + i + 1] - t->h[j * n + i];
			double gz = (double)t->h[(j + 1) * n + i] - t->h[j * n + i];

			s += gx * gx + gz * gz;
		}
	return sqrt(s / ((double)(n - 1) * (n - 1))) * q;
}

/* zstd at level, or with the server's parameters (zparams.h) for level 0. */
static size_t zstd(ZSTD_CCtx *c, uint8_t *dst, size_t cap, const uint8_t *src, size_t len,
		   int level)
{
	size_t z;

	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	z = level ? ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)
		  : tile_zstd_params(c);
	if (!ZSTD_isError(z))
		z = ZSTD_compress2(c, dst, cap, src, len);

	if (ZSTD_isError(z))
		bench_die(ZSTD_getErrorName(z), ERR_ZSTD);
	return z;
}

struct bufs {
	uint8_t *enc, *z;
	size_t enc_cap, z_cap;
	uint16_t *v;
	uint8_t *lerc;        /* LERC's blob, LERC_CAP bytes */
	int32_t *back;        /* LERC's decoded heights */
	struct mem png;
	ZSTD_CCtx *cctx;
};

#ifdef HAVE_LERC
/*
 * LERC's blob of t's heights (int32 quanta, maxZErr 0.5: lossless), into
 * b->lerc; returns its size after checking that it decodes to t's heights.
 */
static size_t lerc_size(const struct tile *t, struct bufs *b)
{
	const int side = (int)t->side;
	unsigned int n = 0;

	if (lerc_encode(t->h, 4 /* int */, 1, side, side, 1, 0, NULL, 0.5, b->lerc, LERC_CAP, &n) ||
	    lerc_decode(b->lerc, n, 0, NULL, 1, side, side, 1, 4, b->back))
		bench_die("lerc failed", ERR_NOMEM);
	if (memcmp(b->back, t->h, (size_t)side * side * sizeof(*t->h)))
		bench_die("lerc: decoded heights differ from the tile's", ERR_CORRUPT);
	return n;
}
#endif

/* Fill x[col][k] for the 16 tiles of p; returns how many needed step > 1. */
static int measure(const struct preset *p, struct bufs *b, double x[NCOL][BENCH_CHUNKS],
		   uint32_t *quantum)
{
	int wide = 0;
	unsigned k;

	for (k = 0; k < BENCH_CHUNKS; k++) {
		struct tile t;
		int32_t cx, cz;
		size_t len = 0;
		int rc;

		bench_chunk(k, &cx, &cz);
		rc = pipeline_generate(p, SEED, 0, cx, cz, &t);
		if (!rc)
			rc = tile_encode(&t, b->enc, b->enc_cap, &len);
		if (rc)
			bench_die(preset_name(p), rc);
		x[ENC][k] = (double)len;
		x[ZS][k] = (double)zstd(b->cctx, b->z, b->z_cap, b->enc, len, 0);
		x[Z19][k] = (double)zstd(b->cctx, b->z, b->z_cap, b->enc, len, 19);
		rc = tile_encode_lz21(&t, b->enc, b->enc_cap, &len);
		if (rc)
			bench_die(preset_name(p), rc);
		x[OLD][k] = (double)zstd(b->cctx, b->z, b->z_cap, b->enc, len, 0);
		wide += to_u16(&t, b->v, &x[RANGE_M][k]) > 1;
		x[PNG_DEF][k] = (double)png16(b->v, t.side, 0, &b->png);
		x[PNG_MAX][k] = (double)png16(b->v, t.side, 1, &b->png);
		if (!x[PNG_DEF][k] || !x[PNG_MAX][k])
			bench_die("libpng failed", ERR_NOMEM);
#ifdef HAVE_LERC
		x[LERC][k] = (double)lerc_size(&t, b);
#else
		x[LERC][k] = 0.0;
#endif
		x[SLOPE][k] = rms_slope(&t);
		*quantum = t.quantum_um;
		tile_release(&t);
	}
	return wide;
}

static void report(const struct preset *p, struct bufs *b)
{
	double x[NCOL][BENCH_CHUNKS], m[NCOL];
	uint32_t quantum = 0;
	int wide = measure(p, b, x, &quantum), c;

	char lerc[32], ratio[32];

	for (c = 0; c < NCOL; c++)
		m[c] = bench_median(x[c], BENCH_CHUNKS);
	snprintf(lerc, sizeof(lerc), m[LERC] > 0 ? "%.0f" : "n/a", m[LERC]);
	snprintf(ratio, sizeof(ratio), m[LERC] > 0 ? "%.3f" : "n/a", m[ZS] / m[LERC]);
	printf("%s\t%.0f\t%.2f\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.3f\t%.0f\t%.0f\t%s\t%d/%d%s\t%.3f\t"
	       "%.3f\t%.3f\t%s\t%.2f\n",
	       preset_name(p), m[RANGE_M], m[SLOPE], m[ENC], m[ZS],
	       m[ZS] * 8.0 / (257.0 * 257.0), m[Z19], m[OLD], m[ZS] / m[OLD], m[PNG_DEF],
	       m[PNG_MAX], lerc, wide, BENCH_CHUNKS, wide ? " *" : "", m[ZS] / m[PNG_DEF],
	       m[ZS] / m[PNG_MAX], m[OLD] / m[PNG_DEF], ratio, bench_loadavg());
	if (quantum != 10000)
		printf("note: %s: quantum is %.2f cm: its PNG holds one sample per quantum\n",
		       preset_name(p), quantum * 1e-4);
	fflush(stdout);
}

int main(void)
{
	struct preset **v;
	struct bufs b = { 0 };
	struct tile probe;
	size_t n, i;
	int rc;

	rc = preset_load_builtin(&v, &n);
	if (!rc)
		rc = tile_init(&probe, 8, 0);
	if (rc)
		bench_die("setting up", rc);
	b.enc_cap = tile_encode_bound(&probe);
	b.z_cap = ZSTD_compressBound(b.enc_cap);
	tile_release(&probe);
	b.enc = malloc(b.enc_cap);
	b.z = malloc(b.z_cap);
	b.v = malloc(257 * 257 * sizeof(*b.v));
	b.back = malloc(257 * 257 * sizeof(*b.back));
	b.lerc = malloc(LERC_CAP);
	b.cctx = ZSTD_createCCtx();
	if (!b.enc || !b.z || !b.v || !b.back || !b.lerc || !b.cctx)
		bench_die("out of memory", ERR_NOMEM);

	printf("preset\ttile range m\trms slope m/m\tencoded B\tzstd B\tzstd bits/sample\t"
	       "zstd19 B\tv1 lz21 zstd B\tzstd / v1\tPNG16 default B\tPNG16 max B\t"
	       "LERC lossless B\tPNG16 tiles at 2 cm\tzstd / PNG16 default\tzstd / PNG16 max\t"
	       "v1 / PNG16 default\tzstd / LERC\tload\n");
	for (i = 0; i < n; i++)
		if (preset_chunk_log2(v[i]) == 8)
			report(v[i], &b);
	printf("note: medians over %d LOD-0 tiles (257 x 257, 1 cm); target: zstd / PNG16 "
	       "<= 0.4\n", BENCH_CHUNKS);
	printf("note: v1 lz21: the same tiles in the previous format (version 1, filter 1 byte "
	       "planes) under the server's zstd\n");
	printf("note: * tiles spanning more than 65535 cm: their PNG16 uses a 2 cm step (lossy), "
	       "which flatters PNG\n");
#ifdef HAVE_LERC
	printf("note: LERC lossless: liblerc %d.%d lerc_encode of the tile's int32 heights in quanta "
	       "(1 cm), maxZErr 0.5, decoded and checked equal; the shared harness's lerc-1cm "
	       "(below) encodes float metres with maxZErr 0.005 m\n",
	       LERC_VERSION_MAJOR, LERC_VERSION_MINOR);
#else
	printf("note: LERC anchor skipped: liblerc-dev missing (scripts/deps.sh bench)\n");
#endif
	printf("note: sizes are the same on every machine and run, so one pass gives them; load: "
	       "the 1-minute load average when the row was measured\n");

	ZSTD_freeCCtx(b.cctx);
	free(b.png.p);
	free(b.enc);
	free(b.z);
	free(b.v);
	free(b.back);
	free(b.lerc);
	preset_destroy_all(v, n);
	return 0;
}
