/*
 * test_scatter.c - object placement: chunks add up to one big query with
 * nothing twice or missing, runs repeat, nothing in water or too steep,
 * edits carry objects with the ground.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edit.h"
#include "pipeline.h"
#include "preset.h"
#include "preset_fixture.h"
#include "scatter.h"
#include "tile.h"

static int by_position(const void *a, const void *b)
{
	const struct scatter_object *x = a, *y = b;

	if (x->z_mm != y->z_mm)
		return x->z_mm < y->z_mm ? -1 : 1;
	if (x->x_mm != y->x_mm)
		return x->x_mm < y->x_mm ? -1 : 1;
	return 0;
}

static void test_chunks_add_up_to_one_big_query(void **state)
{
	struct scatter_object *all, *big;
	size_t n_all = 0, n_big, k, cap = 16 * 1024;
	int32_t cx, cz;

	(void)state;
	all = malloc(cap * sizeof(*all));
	assert_non_null(all);
	for (cz = -2; cz < 2; cz++)
		for (cx = -2; cx < 2; cx++) {
			struct scatter_object *v;
			size_t n;

			assert_int_equal(scatter_chunk(preset_fixture_find("default"), 17, cx, cz, NULL, NULL, 0,
						       &v, &n), 0);
			assert_true(n_all + n <= cap);
			for (k = 0; k < n; k++) {
				/* each object lies in the chunk that returned it */
				assert_true(v[k].x_mm >= (int64_t)cx * 256000 &&
					    v[k].x_mm < (int64_t)(cx + 1) * 256000);
				assert_true(v[k].z_mm >= (int64_t)cz * 256000 &&
					    v[k].z_mm < (int64_t)(cz + 1) * 256000);
			}
			memcpy(all + n_all, v, n * sizeof(*v));
			n_all += n;
			free(v);
		}
	assert_int_equal(scatter_area(preset_fixture_find("default"), 17, -512, -512, 1024, 1024, NULL, NULL,
				      0, &big, &n_big), 0);
	assert_true(n_big > 100);
	assert_int_equal(n_all, n_big);
	qsort(all, n_all, sizeof(*all), by_position);
	qsort(big, n_big, sizeof(*big), by_position);
	for (k = 0; k < n_all; k++) {
		assert_int_equal(all[k].x_mm, big[k].x_mm);
		assert_int_equal(all[k].z_mm, big[k].z_mm);
		assert_int_equal(all[k].y_um, big[k].y_um);
		assert_int_equal(all[k].type, big[k].type);
		assert_int_equal(all[k].rotation, big[k].rotation);
		assert_int_equal(all[k].scale, big[k].scale);
		if (k)
			assert_true(by_position(&all[k - 1], &all[k]) < 0);   /* no twins */
	}
	free(all);
	free(big);
}

static void test_same_objects_every_run(void **state)
{
	struct scatter_object *a, *b;
	size_t na, nb;

	(void)state;
	assert_int_equal(scatter_chunk(preset_fixture_find("islands"), 4, 3, -7, NULL, NULL, 0, &a, &na), 0);
	assert_int_equal(scatter_chunk(preset_fixture_find("islands"), 4, 3, -7, NULL, NULL, 0, &b, &nb), 0);
	assert_int_equal(na, nb);
	assert_true(na > 0);
	for (size_t k = 0; k < na; k++) {
		uint8_t wa[SCATTER_WIRE_SIZE], wb[SCATTER_WIRE_SIZE];

		scatter_encode(&a[k], wa);
		scatter_encode(&b[k], wb);
		assert_memory_equal(wa, wb, sizeof(wa));
	}
	free(a);
	free(b);
}

static void test_nothing_in_water_or_too_steep(void **state)
{
	static const double steepest[SCATTER_TYPE_COUNT] = { 1.0, 0.7, 1.1, 2.0 };
	const char *names[] = { "islands", "alpine" };
	size_t i, k, total = 0;
	int32_t c;

	(void)state;
	for (i = 0; i < 2; i++)
		for (c = -3; c < 3; c++) {
			struct scatter_object *v;
			struct tile t;
			size_t n;

			assert_int_equal(scatter_chunk(preset_fixture_find(names[i]), 8, c, c, NULL, NULL, 0, &v,
						       &n), 0);
			assert_int_equal(pipeline_generate(preset_fixture_find(names[i]), 8, 0, c, c, &t), 0);
			for (k = 0; k < n; k++) {
				/* the sample at or below the object: floor division */
				int64_t x = (v[k].x_mm - (int64_t)c * 256000) / 1000;
				int64_t z = (v[k].z_mm - (int64_t)c * 256000) / 1000;
				double h00 = tile_height_m(&t, (uint32_t)x, (uint32_t)z);
				double h10 = tile_height_m(&t, (uint32_t)x + 1, (uint32_t)z);
				double h01 = tile_height_m(&t, (uint32_t)x, (uint32_t)z + 1);
				double h11 = tile_height_m(&t, (uint32_t)x + 1, (uint32_t)z + 1);
				double sx = (h10 - h00 + h11 - h01) / 2, sz = (h01 - h00 + h11 - h10) / 2;

				assert_true(v[k].type < SCATTER_TYPE_COUNT);
				assert_true((double)v[k].y_um / 1e6 >= preset_sea_level(preset_fixture_find(names[i])));
				assert_true(sqrt(sx * sx + sz * sz) <= steepest[v[k].type] + 1e-9);
				assert_true(v[k].scale >= 700 && v[k].scale <= 1300);
			}
			total += n;
			tile_release(&t);
			free(v);
		}
	assert_true(total > 50);
}

static void test_edits_move_objects_with_the_ground(void **state)
{
	struct edit e = { EDIT_RAISE, EDIT_LINEAR, 128000, 128000, 4000000, 3000000, 0 };
	struct scatter_object *a, *b;
	size_t na, nb, k, moved = 0;

	(void)state;
	/* a 4 km brush raising by at most 3 m keeps slopes and materials close:
	 * compare the objects found at the same places */
	assert_int_equal(scatter_chunk(preset_fixture_find("default"), 2, 0, 0, NULL, NULL, 0, &a, &na), 0);
	assert_int_equal(scatter_chunk(preset_fixture_find("default"), 2, 0, 0, NULL, &e, 1, &b, &nb), 0);
	for (k = 0; k < na && k < nb; k++)
		if (a[k].x_mm == b[k].x_mm && a[k].z_mm == b[k].z_mm) {
			assert_true(b[k].y_um > a[k].y_um);
			moved++;
		}
	assert_true(moved > 10);
	free(a);
	free(b);
}

static void test_scatter_rejects_unaligned_areas(void **state)
{
	struct scatter_object *v;
	size_t n;

	(void)state;
	assert_int_equal(scatter_area(preset_fixture_find("default"), 1, 4, 0, 64, 64, NULL, NULL, 0, &v, &n),
			 -1);
	assert_int_equal(scatter_area(preset_fixture_find("default"), 1, 0, 0, 8192, 64, NULL, NULL, 0, &v, &n),
			 -1);
	assert_null(scatter_type_name(SCATTER_TYPE_COUNT));
	assert_string_equal(scatter_type_name(SCATTER_ROCK), "rock");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunks_add_up_to_one_big_query),
		cmocka_unit_test(test_same_objects_every_run),
		cmocka_unit_test(test_nothing_in_water_or_too_steep),
		cmocka_unit_test(test_edits_move_objects_with_the_ground),
		cmocka_unit_test(test_scatter_rejects_unaligned_areas),
	};

	return cmocka_run_group_tests(tests, preset_fixture_setup, preset_fixture_teardown);
}
