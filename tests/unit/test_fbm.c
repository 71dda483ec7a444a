/*
 * test_fbm.c - fbm_row()'s unwarped Perlin rows, which keep each octave's x
 * axis in the scratch between rows, give the bits of the general path (the
 * same row with a warp of zero), whatever the mode, octaves, lacunarity,
 * step and position, when rows of many fBms share one scratch, and where a
 * row crosses a 2^32 block of lattice cells.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fbm.h"

#define N 257

__extension__ typedef __int128 i128;

static const float zeros[4 * N];

/* fbm_row() unwarped into out, and through the warped path into ref. */
static void both(const struct fbm *f, int64_t x0, int64_t step, int64_t z, size_t n,
		 struct fbm_scratch *s, float *out, float *ref)
{
	fbm_row(f, x0, step, z, NULL, NULL, n, out, s);
	fbm_row(f, x0, step, z, zeros, zeros, n, ref, s);
}

static void assert_rows_equal(const float *a, const float *b, size_t n)
{
	assert_memory_equal(a, b, n * sizeof(float));
}

static void test_unwarped_rows_equal_the_general_path(void **state)
{
	static const enum fbm_mode modes[] = { FBM_PLAIN, FBM_RIDGED, FBM_BILLOW };
	static const int64_t steps[] = { 1, 2, 4, 8, 16, 64, 256 };
	static const int64_t far[] = { 0, -3, INT64_C(1) << 38, -(INT64_C(1) << 39) + 512 };
	struct fbm_scratch s;
	float out[N], ref[N];
	size_t m, k, c;
	int64_t z;

	(void)state;
	assert_int_equal(fbm_scratch_init(&s, N), 0);
	for (m = 0; m < 3; m++) {
		struct fbm_params p = { NOISE_PERLIN, modes[m], 9, 700.0, 0.55, 2.03, 2.0 };
		struct fbm f;

		fbm_init(&f, &p, 42 + m, (uint32_t)m);
		for (k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
			for (c = 0; c < sizeof(far) / sizeof(far[0]); c++) {
				size_t n = (size_t)(256 / steps[k]) + 1;

				for (z = 0; z < 9; z++) {
					both(&f, far[c], steps[k], far[c] / 2 + z * steps[k], n, &s,
					     out, ref);
					assert_rows_equal(out, ref, n);
				}
			}
		}
	}
	fbm_scratch_release(&s);
}

/* More fBms than the scratch keeps axes for, rows interleaved, row lengths
 * changing: every row still equals the general path. */
static void test_many_fbms_share_one_scratch(void **state)
{
	enum { FBMS = 11 };
	struct fbm f[FBMS];
	struct fbm_scratch s;
	float out[N], ref[N];
	int i, r;

	(void)state;
	for (i = 0; i < FBMS; i++) {
		struct fbm_params p = { NOISE_PERLIN, FBM_PLAIN, 1 + i, 64.0 * (i + 1), 0.5,
					1.9 + 0.02 * i, 2.0 };

		fbm_init(&f[i], &p, 7, (uint32_t)i);
	}
	assert_int_equal(fbm_scratch_init(&s, N), 0);
	for (r = 0; r < 40; r++) {
		for (i = 0; i < FBMS; i++) {
			size_t n = (r & 1) ? N : 65;

			both(&f[i], -1000 + 17 * i, 1 + (r & 2), r, n, &s, out, ref);
			assert_rows_equal(out, ref, n);
		}
	}
	fbm_scratch_release(&s);
}

/* A row placed across a multiple of 2^32 cells of the first octave takes
 * the 64-bit fold; it must still equal the general path, and so must the
 * rows around it. */
static void test_rows_across_a_block_of_cells(void **state)
{
	struct fbm_params p = { NOISE_PERLIN, FBM_PLAIN, 3, 1.0, 0.5, 2.0, 2.0 };
	struct fbm f;
	struct fbm_scratch s;
	float out[N], ref[N];
	int64_t cross, d;

	(void)state;
	fbm_init(&f, &p, 99, 0);
	/* x * q + off = 2^64 (one block of 2^32 cells of 2^32) */
	cross = (int64_t)((((i128)1 << 64) - f.offx[0]) / (i128)f.freq[0]);
	assert_int_equal(fbm_scratch_init(&s, N), 0);
	for (d = -300; d <= 44; d += 43) {
		both(&f, cross + d, 1, 5, N, &s, out, ref);
		assert_rows_equal(out, ref, N);
	}
	fbm_scratch_release(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwarped_rows_equal_the_general_path),
		cmocka_unit_test(test_many_fbms_share_one_scratch),
		cmocka_unit_test(test_rows_across_a_block_of_cells),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
