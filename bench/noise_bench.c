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
 * Output: "name<TAB>ns per sample" rows (bench.h); run.sh adds the ratio
 * "stb time / this": higher is faster than stb_perlin.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define STB_PERLIN_IMPLEMENTATION
#include <stb/stb_perlin.h>

#include "bench.h"
#include "err.h"
#include "fbm.h"
#include "noise.h"

#define SIDE 257
#define SEED 42u
#define WAVELENGTH 1024.0

struct job {
	struct fbm f;
	struct fbm_params p;
	struct fbm_scratch s;
	float *out;           /* one row, as the generator's node buffer */
	int64_t dx, dz;       /* added to bench_chunk()'s coordinates */
	unsigned tile;
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
	fbm_init(&j->f, &j->p, SEED, 0);
	for (r = 0; r < SIDE; r++)
		fbm_row(&j->f, x0, 1, z0 + r, NULL, NULL, SIDE, j->out, &j->s);
	bench_keep(j->out[SIDE / 2]);
}

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
	*j = (struct job){ .dx = dx, .dz = dz };
	j->p = (struct fbm_params){ .noise = k < NOISE_KIND_COUNT ? (enum noise_kind)k : NOISE_PERLIN,
				    .mode = FBM_PLAIN, .octaves = 6, .wavelength = WAVELENGTH,
				    .gain = 0.5, .lacunarity = 2.0, .sharpness = 2.0 };
	j->out = malloc(SIDE * sizeof(*j->out));
	if (!j->out || fbm_scratch_init(&j->s, SIDE))
		bench_die("out of memory", ERR_NOMEM);
}

int main(void)
{
	enum { FAR = NOISE_KIND_COUNT, STB, NJOBS };
	struct job j[NJOBS];
	struct bench_fig f[NJOBS];
	double sec[NJOBS];
	int k;

	for (k = 0; k < NOISE_KIND_COUNT; k++) {
		job_init(&j[k], k, 0, 0);
		f[k] = (struct bench_fig){ tile_ours, &j[k] };
	}
	/* chunks 2^31 - 8208 .. 2^31 - 17 by -2^31 .. -2^31 + 8191 */
	job_init(&j[FAR], NOISE_PERLIN, INT32_MAX - 4096 - 16, INT32_MIN + 4096);
	f[FAR] = (struct bench_fig){ tile_ours, &j[FAR] };
	job_init(&j[STB], NOISE_KIND_COUNT, 0, 0);
	f[STB] = (struct bench_fig){ tile_stb, &j[STB] };

	bench_times(f, NJOBS, sec);

	printf("fBm, 6 octaves, over a LOD-0 tile\tns/sample\n");
	for (k = 0; k < NOISE_KIND_COUNT; k++)
		printf("ours: %s\t%.2f\n", noise_kind_name((enum noise_kind)k),
		       sec[k] * 1e9 / (SIDE * SIDE));
	printf("ours: perlin, far corner (cx ~ +2^31, cz ~ -2^31)\t%.2f\n",
	       sec[FAR] * 1e9 / (SIDE * SIDE));
	printf("anchor: stb_perlin_fbm_noise3\t%.2f\n", sec[STB] * 1e9 / (SIDE * SIDE));

	for (k = 0; k < NJOBS; k++) {
		fbm_scratch_release(&j[k].s);
		free(j[k].out);
	}
	return 0;
}
