/*
 * test_noise.c - noise ranges, statistics, lattice zeros, continuity, far
 * lattices, and that the vectorised row paths equal the point functions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "noise.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static float point(enum noise_kind k, uint64_t seed, int64_t x, uint32_t fx,
		   int64_t z, uint32_t fz)
{
	float a, b;

	switch (k) {
	case NOISE_PERLIN:        return noise_perlin(seed, x, fx, z, fz);
	case NOISE_SIMPLEX:       return noise_simplex(seed, x, fx, z, fz);
	case NOISE_VALUE:         return noise_value(seed, x, fx, z, fz, 0);
	case NOISE_VALUE_QUINTIC: return noise_value(seed, x, fx, z, fz, 1);
	default:
		noise_worley(seed, x, fx, z, fz, &a, &b);
		if (k == NOISE_WORLEY_F1)
			return a * 1.41421356f - 1.0f;
		return 2.0f * (b - a < 1.0f ? b - a : 1.0f) - 1.0f;
	}
}

static void test_noise_stays_in_range_with_mean_near_zero(void **state)
{
	int k, i;

	(void)state;
	for (k = 0; k < NOISE_KIND_COUNT; k++) {
		double sum = 0, lo = 1, hi = -1;

		for (i = 0; i < 200000; i++) {
			uint64_t r = rnd();
			float v = point((enum noise_kind)k, 7, (int64_t)(r % 100000) - 50000,
					(uint32_t)rnd(), (int64_t)(r >> 40) - 8000000, (uint32_t)r);

			assert_true(v >= -1.0f && v <= 1.0f);
			sum += v;
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
		if (k <= NOISE_VALUE_QUINTIC) {
			assert_true(fabs(sum / i) < 0.02);
			/* the range is used, not squashed */
			assert_true(hi - lo > 1.2);
		}
	}
}

static void test_gradient_noise_is_zero_at_lattice_points(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 10000; i++) {
		int64_t x = (int64_t)(rnd() >> 20) - (INT64_C(1) << 43);
		int64_t z = (int64_t)(rnd() >> 20) - (INT64_C(1) << 43);

		assert_true(noise_perlin(rnd(), x, 0, z, 0) == 0.0f);
		/* simplex vertices in unskewed space: x + z = 0 */
		assert_true(noise_simplex(rnd(), x, 0, -x, 0) == 0.0f);
	}
}

static void test_noise_is_continuous_across_cells(void **state)
{
	/* A step of 2^-16 cell moves any kind by at most a small bound. */
	int k, i;

	(void)state;
	for (k = 0; k <= NOISE_VALUE_QUINTIC; k++) {
		for (i = 0; i < 100000; i++) {
			int64_t x = (int64_t)(rnd() % 2000) - 1000, z = (int64_t)(rnd() % 2000);
			uint32_t fx = (uint32_t)rnd(), fz = (uint32_t)rnd();
			uint32_t gx = fx + 65536;
			int64_t x2 = gx < fx ? x + 1 : x;   /* carry into the next cell */
			float a = point((enum noise_kind)k, 3, x, fx, z, fz);
			float b = point((enum noise_kind)k, 3, x2, gx, z, fz);

			assert_true(fabsf(a - b) < 1e-3f);
		}
	}
}

static void test_noise_depends_on_seed(void **state)
{
	int differ = 0, i;

	(void)state;
	for (i = 0; i < 100; i++)
		differ += noise_perlin(1, i, 0x80000000U, 5, 0x40000000U) !=
			  noise_perlin(2, i, 0x80000000U, 5, 0x40000000U);
	assert_true(differ > 90);
}

static void test_noise_does_not_repeat_every_2_to_32_cells(void **state)
{
	/* A permutation table would repeat; the 64-bit fold must not. */
	int same = 0, i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		int64_t x = (int64_t)(rnd() % 100000);
		uint32_t fx = (uint32_t)rnd(), fz = (uint32_t)rnd();
		float a = noise_perlin(9, x, fx, 17, fz);
		float b = noise_perlin(9, x + (INT64_C(1) << 32), fx, 17, fz);
		float c = noise_perlin(9, x + 256, fx, 17, fz);

		same += (a == b) + (a == c);
	}
	assert_true(same < 10);
}

/*
 * Rows through noise_row() must equal the point functions, including rows
 * that straddle a 2^32-cell boundary (the 32-bit fast path must step
 * aside). Shapes: ROW_FINE, 3 samples a cell; ROW_WARPED, cells jittered
 * per sample; ROW_COARSE, 40 samples a cell (Perlin interpolates whole
 * blocks of 8 with one cell's gradients); ROW_RUNS, runs of cells that
 * step back along x and change z row, so some blocks straddle two cells;
 * ROW_BACK, in one z row, 40-sample cells with a one-sample dip into the
 * cell before now and then (inside a block whose ends agree).
 */
enum row_shape { ROW_FINE, ROW_WARPED, ROW_COARSE, ROW_RUNS, ROW_BACK };

static void check_row(enum noise_kind k, int64_t bx, int64_t bz, enum row_shape shape)
{
	int warped = shape == ROW_WARPED;
	enum { N = 300 };
	int32_t kx[N], kz[N];
	uint32_t fx[N], fz[N];
	float out[N];
	/* the monotone shapes say so, as an unwarped fBm row does */
	struct lat_row r = { bx, bz, kx, kz, fx, fz, 0, 0, 0, 0, N,
			     shape == ROW_FINE || shape == ROW_COARSE };
	int i;

	for (i = 0; i < N; i++) {
		kx[i] = i / 3 - 20 + (warped ? (int32_t)(rnd() % 5) - 2 : 0);
		kz[i] = warped ? (int32_t)(rnd() % 7) - 3 : 0;
		if (shape == ROW_COARSE)
			kx[i] = i / 40 - 2;
		if (shape == ROW_RUNS) {
			kx[i] = i / 40 - (i / 100 % 2) * 3;
			kz[i] = i / 61 % 3 - 1;
		}
		if (shape == ROW_BACK)
			kx[i] = i / 40 - (i % 50 == 3);
		fx[i] = (uint32_t)rnd();
		fz[i] = warped ? (uint32_t)rnd() : 0x12345678U;
		r.xlo = i == 0 || kx[i] < r.xlo ? kx[i] : r.xlo;
		r.xhi = i == 0 || kx[i] > r.xhi ? kx[i] : r.xhi;
		r.zlo = i == 0 || kz[i] < r.zlo ? kz[i] : r.zlo;
		r.zhi = i == 0 || kz[i] > r.zhi ? kz[i] : r.zhi;
	}
	noise_row(k, 1234, &r, out);
	for (i = 0; i < N; i++) {
		float p = point(k, 1234, bx + kx[i], fx[i], bz + kz[i], fz[i]);

		assert_memory_equal(&out[i], &p, sizeof(p));
	}
}

static void test_noise_row_equals_point_functions(void **state)
{
	static const int64_t bases[] = {
		0, -1, 5, (INT64_C(1) << 32) - 30, -(INT64_C(1) << 32) + 10,
		(INT64_C(1) << 41) - 7, -(INT64_C(1) << 41), 123456789012,
	};
	size_t b;
	int k;

	(void)state;
	for (k = 0; k < NOISE_KIND_COUNT; k++)
		for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
			check_row((enum noise_kind)k, bases[b], -bases[b] / 3, ROW_FINE);
			check_row((enum noise_kind)k, bases[b], bases[b] + 40, ROW_WARPED);
			check_row((enum noise_kind)k, bases[b], 7 - bases[b], ROW_COARSE);
			check_row((enum noise_kind)k, bases[b], bases[b] / 5, ROW_RUNS);
			check_row((enum noise_kind)k, bases[b], 3 - bases[b], ROW_BACK);
		}
}

static void test_perlin_derivatives_match_finite_differences(void **state)
{
	int i, checked = 0;

	(void)state;
	for (i = 0; i < 20000; i++) {
		int64_t x = (int64_t)(rnd() % 1000) - 500, z = (int64_t)(rnd() % 1000);
		uint32_t fx = (uint32_t)rnd() | 0x10000000U, fz = (uint32_t)rnd() | 0x10000000U;
		uint32_t e = 1U << 20;   /* 2^-12 cell */
		float dx, dz, v = noise_perlin_d(77, x, fx, z, fz, &dx, &dz);
		float vx = noise_perlin(77, x, fx + e, z, fz), vz = noise_perlin(77, x, fx, z, fz + e);

		if (fx > 0xf0000000U || fz > 0xf0000000U)
			continue;   /* keep x + e inside the cell */
		assert_true(v == noise_perlin(77, x, fx, z, fz));
		/* curvature (< 40 per cell^2) and float rounding bound the error */
		assert_true(fabsf((vx - v) * 4096.0f - dx) < 0.01f + 0.01f * fabsf(dx));
		assert_true(fabsf((vz - v) * 4096.0f - dz) < 0.01f + 0.01f * fabsf(dz));
		checked++;
	}
	assert_true(checked > 10000);
}

static void test_worley_distances_are_ordered_and_bounded(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 100000; i++) {
		float f1, f2;

		noise_worley(5, (int64_t)(rnd() % 1000), (uint32_t)rnd(),
			     -(int64_t)(rnd() % 1000), (uint32_t)rnd(), &f1, &f2);
		assert_true(f1 >= 0.0f && f1 <= 1.41422f);
		assert_true(f2 >= f1);
	}
}

static void test_noise_kind_names_round_trip(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < NOISE_KIND_COUNT; k++)
		assert_int_equal(noise_kind_parse(noise_kind_name((enum noise_kind)k)), k);
	assert_int_equal(noise_kind_parse("gabor"), -1);
	assert_null(noise_kind_name(NOISE_KIND_COUNT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noise_stays_in_range_with_mean_near_zero),
		cmocka_unit_test(test_gradient_noise_is_zero_at_lattice_points),
		cmocka_unit_test(test_noise_is_continuous_across_cells),
		cmocka_unit_test(test_noise_depends_on_seed),
		cmocka_unit_test(test_noise_does_not_repeat_every_2_to_32_cells),
		cmocka_unit_test(test_noise_row_equals_point_functions),
		cmocka_unit_test(test_perlin_derivatives_match_finite_differences),
		cmocka_unit_test(test_worley_distances_are_ordered_and_bounded),
		cmocka_unit_test(test_noise_kind_names_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
