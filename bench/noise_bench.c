/*
 * noise_bench.c - section 1: ns per sample of a 6-octave fBm.
 *
 * For each noise kind of noise.h: a plain fBm of 6 octaves, wavelength
 * 1024 m, gain 0.5, lacunarity 2, evaluated as the generator does: per tile
 * one fbm_init(), then fbm_row() over 257 rows of 257 samples (a LOD-0
 * tile), cycling over bench_chunk()'s chunks. One more Perlin row runs at
 * the far corner of the world (cx = 2^31 - 8.., cz = -2^31 ..) to show that
 * far terrain costs the same. The anchor is stb_perlin's
 * stb_perlin_fbm_noise3() with the same octaves, gain, lacunarity and
 * wavelength over the same grid (3D noise at y = 0; it has no seed).
 *
 * With -DHAVE_VARIANTS (the Makefile, on x86-64) the Perlin fBm also runs from
 * copies of noise.c and fbm.c built for one instruction set each (see
 * variant.h): the baseline x86-64 clone, AVX2 and x86-64-v4 (AVX-512), so
 * each clone is timed by name whatever the loader would pick; before
 * timing, every noise kind's tile from each copy must equal the library's
 * bit for bit, or the bench stops.
 *
 * The other anchors, each built only when it is there (the Makefile), are
 * timed in the same interleaved batches:
 * - -DHAVE_FASTNOISE2: FastNoise2's FractalFBm of Perlin (fastnoise2.h) at
 *   the best SIMD level this CPU runs (FastSIMD's own detection), and again
 *   capped at AVX2 when the best is above it; each row names its level.
 * - -DHAVE_FASTNOISELITE: FastNoiseLite's C header (FastNoiseLite.h, its own
 *   translation unit), fnlGetNoise2D() of a Perlin fBm with the same
 *   octaves, gain, lacunarity, frequency and seed, point by point (scalar).
 * - -DHAVE_LIBNOISE: libnoise's Perlin module (libnoise.h) at its default
 *   quality and at QUALITY_BEST, 3D noise in double, point by point.
 *
 * Output: "name<TAB>ns per sample<TAB>load" rows (bench.h), the load being
 * the 1-minute load average when the batches ended; run.sh adds the ratio
 * "stb time / this": higher is faster than stb_perlin.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STB_PERLIN_IMPLEMENTATION
#include <stb/stb_perlin.h>

#include "bench.h"
#include "err.h"
#include "fbm.h"
#include "noise.h"

#ifdef HAVE_FASTNOISE2
#include "fastnoise2.h"
#endif
#ifdef HAVE_FASTNOISELITE
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"  /* fnlCreateState(); */
#include "FastNoiseLite.h"  /* declarations only: FNL_IMPL is its own object */
#pragma GCC diagnostic pop
#endif
#ifdef HAVE_LIBNOISE
#include "libnoise.h"
#endif

#define SIDE 257
#define SEED 42u
#define WAVELENGTH 1024.0

/* One build of the fBm: the library's (clones picked at load) or a copy. */
struct impl {
	const char *name;
	void (*init)(struct fbm *f, const struct fbm_params *p, uint64_t seed, uint32_t salt);
	void (*row)(const struct fbm *f, int64_t x0, int64_t step, int64_t z,
		    const float *dx, const float *dz, size_t n, float *out,
		    struct fbm_scratch *s);
};

#define IMPL(name, sfx) { name, fbm_init##sfx, fbm_row##sfx }

#ifdef HAVE_VARIANTS
#define VARIANT_DECL(sfx)                                                         \
	void fbm_init##sfx(struct fbm *f, const struct fbm_params *p, uint64_t seed,  \
			   uint32_t salt);                                            \
	void fbm_row##sfx(const struct fbm *f, int64_t x0, int64_t step, int64_t z,   \
			  const float *dx, const float *dz, size_t n, float *out,     \
			  struct fbm_scratch *s);
VARIANT_DECL(_base)
VARIANT_DECL(_v3)
VARIANT_DECL(_v4)

static const struct impl variants[] = {
	IMPL("ours: perlin, baseline x86-64 clone", _base),
	IMPL("ours: perlin, AVX2 clone", _v3),
	IMPL("ours: perlin, x86-64-v4 (AVX-512) clone", _v4),
};
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))

/* Whether this CPU runs variant v (the v3 copy needs AVX2 and FMA, the v4
 * copy AVX-512), as tests/unit/test_clones.c asks. */
static int variant_runs(size_t v)
{
	__builtin_cpu_init();
	if (v == 1)
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	return v == 0 || (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
			  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"));
}
#else
#define NVARIANTS 0
#endif

struct job {
	const struct impl *impl;
	struct fbm f;
	struct fbm_params p;
	struct fbm_scratch s;
	float *out;           /* one row, as the generator's node buffer */
	int64_t dx, dz;       /* added to bench_chunk()'s coordinates */
	unsigned tile;
#ifdef HAVE_FASTNOISE2
	struct fn2 *fn2;
	float *grid;          /* FastNoise2 fills the whole tile at once */
#endif
#ifdef HAVE_FASTNOISELITE
	fnl_state fnl;
#endif
#ifdef HAVE_LIBNOISE
	struct libnoise *ln;
	double *dout;         /* one row of libnoise's doubles */
#endif
};

static void chunk_origin(struct job *j, int64_t *x0, int64_t *z0)
{
	int32_t cx, cz;

	bench_chunk(j->tile++, &cx, &cz);
	*x0 = ((int64_t)cx + j->dx) * 256;
	*z0 = ((int64_t)cz + j->dz) * 256;
}

static void tile_ours(void *arg)
{
	struct job *j = arg;
	int64_t x0, z0;
	int r;

	chunk_origin(j, &x0, &z0);
	j->impl->init(&j->f, &j->p, SEED, 0);
	for (r = 0; r < SIDE; r++)
		j->impl->row(&j->f, x0, 1, z0 + r, NULL, NULL, SIDE, j->out, &j->s);
	bench_keep(j->out[SIDE / 2]);
}

#ifdef HAVE_FASTNOISE2
static void tile_fn2(void *arg)
{
	struct job *j = arg;
	int64_t x0, z0;

	chunk_origin(j, &x0, &z0);
	fn2_tile(j->fn2, j->grid, (float)x0, (float)z0, SIDE, (int)SEED);
	bench_keep(j->grid[SIDE * SIDE / 2]);
}
#endif

#ifdef HAVE_FASTNOISELITE
static void tile_fnl(void *arg)
{
	struct job *j = arg;
	int64_t x0, z0;
	int r, i;

	chunk_origin(j, &x0, &z0);
	for (r = 0; r < SIDE; r++)
		for (i = 0; i < SIDE; i++)
			j->out[i] = fnlGetNoise2D(&j->fnl, (float)(x0 + i), (float)(z0 + r));
	bench_keep(j->out[SIDE / 2]);
}
#endif

#ifdef HAVE_LIBNOISE
static void tile_libnoise(void *arg)
{
	struct job *j = arg;
	int64_t x0, z0;
	int r;

	chunk_origin(j, &x0, &z0);
	for (r = 0; r < SIDE; r++)
		libnoise_row(j->ln, j->dout, (double)x0, (double)(z0 + r), SIDE);
	bench_keep(j->dout[SIDE / 2]);
}
#endif

static void tile_stb(void *arg)
{
	struct job *j = arg;
	const float k = (float)(1.0 / WAVELENGTH);
	int64_t x0, z0;
	int r, i;

	chunk_origin(j, &x0, &z0);
	for (r = 0; r < SIDE; r++) {
		float z = (float)(z0 + r) * k;

		for (i = 0; i < SIDE; i++)
			j->out[i] = stb_perlin_fbm_noise3((float)(x0 + i) * k, 0.0f, z,
							  2.0f, 0.5f, 6);
	}
	bench_keep(j->out[SIDE / 2]);
}

/* Set up j for kind k (NOISE_KIND_COUNT: stb_perlin) at chunk offset d. */
static void job_init(struct job *j, int k, int64_t dx, int64_t dz)
{
	static const struct impl library = IMPL("library", );

	*j = (struct job){ .impl = &library, .dx = dx, .dz = dz };
	j->p = (struct fbm_params){ .noise = k < NOISE_KIND_COUNT ? (enum noise_kind)k : NOISE_PERLIN,
				    .mode = FBM_PLAIN, .octaves = 6, .wavelength = WAVELENGTH,
				    .gain = 0.5, .lacunarity = 2.0, .sharpness = 2.0 };
	j->out = malloc(SIDE * sizeof(*j->out));
	if (!j->out || fbm_scratch_init(&j->s, SIDE))
		bench_die("out of memory", ERR_NOMEM);
}

#ifdef HAVE_VARIANTS
/*
 * Stop unless variant v gives the library's bits for every kind over a
 * tile, once unwarped and once displaced by a fixed warp of +-70 m.
 */
static void variant_check(size_t v)
{
	float dx[SIDE], dz[SIDE], a[SIDE], b[SIDE];
	struct job ja, jb;
	int k, r, i;

	for (i = 0; i < SIDE; i++) {
		dx[i] = (float)((i * 37) % 200 - 100) * 0.7f;
		dz[i] = (float)((i * 53) % 190 - 95) * 0.7f;
	}
	for (k = 0; k < NOISE_KIND_COUNT; k++) {
		job_init(&ja, k, 0, 0);
		job_init(&jb, k, 0, 0);
		jb.impl = &variants[v];
		ja.impl->init(&ja.f, &ja.p, SEED, 0);
		jb.impl->init(&jb.f, &jb.p, SEED, 0);
		for (r = 0; r < 2 * SIDE; r++) {
			const float *wx = r < SIDE ? NULL : dx, *wz = r < SIDE ? NULL : dz;

			ja.impl->row(&ja.f, -128, 1, r % SIDE - 128, wx, wz, SIDE, a, &ja.s);
			jb.impl->row(&jb.f, -128, 1, r % SIDE - 128, wx, wz, SIDE, b, &jb.s);
			if (memcmp(a, b, sizeof(a)) != 0) {
				fprintf(stderr, "noise_bench: %s differs from the library: %s, row %d\n",
					variants[v].name, noise_kind_name((enum noise_kind)k), r);
				exit(1);
			}
		}
		fbm_scratch_release(&ja.s);
		fbm_scratch_release(&jb.s);
		free(ja.out);
		free(jb.out);
	}
}
#endif

#ifdef HAVE_FASTNOISE2
/* FastNoise2 at the CPU's best level, then capped at AVX2 (fastnoise2.h):
 * the jobs from j[*n] on, their names into name. */
static void add_fastnoise2(struct job *j, struct bench_fig *f, const char **name, size_t *n)
{
	static char label[2][96];
	const char *best = NULL;
	int capped;

	for (capped = 0; capped < 2; capped++) {
		struct fn2 *fn = fn2_create(capped, (float)WAVELENGTH);

		if (!fn) {
			if (!capped)
				printf("note: FastNoise2 anchor skipped: FastNoise2 could not be set up\n");
			else if (best)
				printf("note: FastNoise2 capped at AVX2: not timed, this CPU's best level is %s\n",
				       best);
			continue;
		}
		job_init(&j[*n], NOISE_PERLIN, 0, 0);
		j[*n].fn2 = fn;
		j[*n].grid = malloc(SIDE * SIDE * sizeof(*j[*n].grid));
		if (!j[*n].grid)
			bench_die("out of memory", ERR_NOMEM);
		snprintf(label[capped], sizeof(label[capped]),
			 "anchor: FastNoise2 %s FractalFBm(Perlin), %s (%s)", FASTNOISE2_COMMIT,
			 fn2_level(fn), capped ? "capped" : "this CPU's best");
		if (!capped)
			best = fn2_level(fn);
		f[*n] = (struct bench_fig){ tile_fn2, &j[*n] };
		name[(*n)++] = label[capped];
	}
}
#endif

#ifdef HAVE_FASTNOISELITE
/* FastNoiseLite's Perlin fBm with section 1's parameters, as job j[*n]. */
static void add_fastnoiselite(struct job *j, struct bench_fig *f, const char **name, size_t *n)
{
	static char label[96];

	job_init(&j[*n], NOISE_PERLIN, 0, 0);
	j[*n].fnl = fnlCreateState();
	j[*n].fnl.seed = (int)SEED;
	j[*n].fnl.frequency = (float)(1.0 / WAVELENGTH);
	j[*n].fnl.noise_type = FNL_NOISE_PERLIN;
	j[*n].fnl.fractal_type = FNL_FRACTAL_FBM;
	j[*n].fnl.octaves = 6;
	j[*n].fnl.lacunarity = 2.0f;
	j[*n].fnl.gain = 0.5f;
	snprintf(label, sizeof(label), "anchor: FastNoiseLite %s fnlGetNoise2D fBm(Perlin), scalar",
		 FASTNOISELITE_VERSION);
	f[*n] = (struct bench_fig){ tile_fnl, &j[*n] };
	name[(*n)++] = label;
}
#endif

#ifdef HAVE_LIBNOISE
/* libnoise's Perlin at its default quality and at QUALITY_BEST. */
static void add_libnoise(struct job *j, struct bench_fig *f, const char **name, size_t *n)
{
	static const char *const label[2] = { "anchor: libnoise Perlin (default quality)",
					      "anchor: libnoise Perlin (QUALITY_BEST)" };
	int best;

	for (best = 0; best < 2; best++) {
		job_init(&j[*n], NOISE_PERLIN, 0, 0);
		j[*n].ln = libnoise_create(best, WAVELENGTH, (int)SEED);
		j[*n].dout = malloc(SIDE * sizeof(*j[*n].dout));
		if (!j[*n].ln || !j[*n].dout)
			bench_die("out of memory", ERR_NOMEM);
		f[*n] = (struct bench_fig){ tile_libnoise, &j[*n] };
		name[(*n)++] = label[best];
	}
}
#endif

int main(void)
{
	enum { FAR = NOISE_KIND_COUNT, STB, NFIXED, NMAX = NFIXED + 3 + 2 + 1 + 2 };
	struct job j[NMAX];
	struct bench_fig f[NMAX];
	const char *name[NMAX];
	double sec[NMAX], load;
	size_t n = NFIXED, k;

	for (k = 0; k < NOISE_KIND_COUNT; k++) {
		job_init(&j[k], (int)k, 0, 0);
		f[k] = (struct bench_fig){ tile_ours, &j[k] };
		name[k] = noise_kind_name((enum noise_kind)k);
	}
	/* chunks 2^31 - 8208 .. 2^31 - 17 by -2^31 .. -2^31 + 8191 */
	job_init(&j[FAR], NOISE_PERLIN, INT32_MAX - 4096 - 16, INT32_MIN + 4096);
	f[FAR] = (struct bench_fig){ tile_ours, &j[FAR] };
	job_init(&j[STB], NOISE_KIND_COUNT, 0, 0);
	f[STB] = (struct bench_fig){ tile_stb, &j[STB] };
#ifdef HAVE_VARIANTS
	for (k = 0; k < NVARIANTS; k++) {
		if (!variant_runs(k))
			continue;
		variant_check(k);
		job_init(&j[n], NOISE_PERLIN, 0, 0);
		j[n].impl = &variants[k];
		f[n] = (struct bench_fig){ tile_ours, &j[n] };
		name[n++] = variants[k].name;
	}
#endif
#ifdef HAVE_FASTNOISE2
	add_fastnoise2(j, f, name, &n);
#endif
#ifdef HAVE_FASTNOISELITE
	add_fastnoiselite(j, f, name, &n);
#endif
#ifdef HAVE_LIBNOISE
	add_libnoise(j, f, name, &n);
#else
	printf("note: libnoise anchor skipped: libnoise-dev or g++ missing (scripts/deps.sh bench)\n");
#endif

	bench_times(f, n, sec);
	load = bench_loadavg();

	printf("fBm, 6 octaves, over a LOD-0 tile\tns/sample\tload\n");
	for (k = 0; k < NOISE_KIND_COUNT; k++)
		printf("ours: %s\t%.2f\t%.2f\n", name[k], sec[k] * 1e9 / (SIDE * SIDE), load);
	printf("ours: perlin, far corner (cx ~ +2^31, cz ~ -2^31)\t%.2f\t%.2f\n",
	       sec[FAR] * 1e9 / (SIDE * SIDE), load);
	for (k = NFIXED; k < n; k++)
		printf("%s\t%.2f\t%.2f\n", name[k], sec[k] * 1e9 / (SIDE * SIDE), load);
	printf("anchor: stb_perlin_fbm_noise3\t%.2f\t%.2f\n", sec[STB] * 1e9 / (SIDE * SIDE), load);

	for (k = 0; k < n; k++) {
#ifdef HAVE_FASTNOISE2
		fn2_destroy(j[k].fn2);
		free(j[k].grid);
#endif
#ifdef HAVE_LIBNOISE
		libnoise_destroy(j[k].ln);
		free(j[k].dout);
#endif
		fbm_scratch_release(&j[k].s);
		free(j[k].out);
	}
	return 0;
}
