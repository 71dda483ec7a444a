/*
 * test_material.c - the material layer: plausible classes, agreement on
 * shared edges, heights unchanged by the layer, edits moving materials.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edit.h"
#include "err.h"
#include "material.h"
#include "pipeline.h"
#include "preset.h"
#include "preset_fixture.h"
#include "tile.h"

static void mat_tile(const char *name, uint64_t seed, int lod, int32_t cx, int32_t cz,
		     const struct edit *e, size_t n, struct tile *t)
{
	assert_int_equal(pipeline_tile(preset_fixture_find(name), seed, lod, cx, cz, NULL, e, n, n,
				       PIPELINE_LAYER_MATERIAL, t), 0);
	assert_non_null(t->material);
}

static void test_materials_are_known_ids_and_varied(void **state)
{
	size_t seen[MATERIAL_COUNT] = { 0 }, k;
	int32_t cx;

	(void)state;
	for (cx = -6; cx < 6; cx++) {
		struct tile t;

		mat_tile("islands", 3, 3, cx, 2 * cx, NULL, 0, &t);
		for (k = 0; k < (size_t)t.side * t.side; k++) {
			assert_true(t.material[k] < MATERIAL_COUNT);
			seen[t.material[k]]++;
			/* below sea level is water, and water is below sea level */
			assert_int_equal(t.h[k] < 0, t.material[k] == MATERIAL_WATER);
		}
		tile_release(&t);
	}
	assert_true(seen[MATERIAL_WATER] > 0);
	assert_true(seen[MATERIAL_GRASS] + seen[MATERIAL_FOREST] > 0);
	assert_true(seen[MATERIAL_SAND] > 0);
}

static void test_high_ground_has_rock_or_snow(void **state)
{
	size_t k, cold = 0;
	struct tile t;

	(void)state;
	mat_tile("alpine", 1, 4, 10, 10, NULL, 0, &t);
	for (k = 0; k < (size_t)t.side * t.side; k++)
		cold += t.material[k] == MATERIAL_ROCK || t.material[k] == MATERIAL_SNOW;
	assert_true(cold > 0);
	tile_release(&t);
}

static void test_neighbours_agree_on_edge_materials(void **state)
{
	size_t p;
	int lod;

	(void)state;
	for (p = 0; p < n_presets; p++) {
		if (preset_is_eroded(presets[p]))
			continue;   /* eroded tiles: covered by test_pipeline's region cache */
		for (lod = 0; lod <= 6; lod += 3) {
			struct tile a, e, s;
			uint32_t j, n;

			mat_tile(preset_name(presets[p]), 9, lod, -1, 4, NULL, 0, &a);
			mat_tile(preset_name(presets[p]), 9, lod, 0, 4, NULL, 0, &e);
			mat_tile(preset_name(presets[p]), 9, lod, -1, 5, NULL, 0, &s);
			n = a.side;
			for (j = 0; j < n; j++) {
				assert_int_equal(a.material[j * n + n - 1], e.material[j * n]);
				assert_int_equal(a.material[(n - 1) * n + j], s.material[j]);
			}
			tile_release(&a);
			tile_release(&e);
			tile_release(&s);
		}
	}
}

static void test_the_layer_leaves_heights_alone(void **state)
{
	struct edit e = { EDIT_RAISE, EDIT_SMOOTH, 100000, 120000, 60000, 20000000, 0 };
	struct tile a, b;

	(void)state;
	mat_tile("default", 2, 1, 0, 0, &e, 1, &a);
	assert_int_equal(pipeline_tile(preset_fixture_find("default"), 2, 1, 0, 0, NULL, &e, 1, 1, 0, &b), 0);
	assert_null(b.material);
	assert_memory_equal(a.h, b.h, (size_t)a.side * a.side * sizeof(int32_t));
	assert_int_equal(a.edit_seq, 1);
	tile_release(&a);
	tile_release(&b);
}

static void test_edits_move_materials(void **state)
{
	/* sink a 100 m disc below sea level: the middle becomes water */
	struct edit e = { EDIT_SET, EDIT_SMOOTH, 128000, 128000, 100000, 0, -50000000 };
	struct tile a, b;

	(void)state;
	mat_tile("alpine", 2, 2, 0, 0, NULL, 0, &a);
	mat_tile("alpine", 2, 2, 0, 0, &e, 1, &b);
	assert_int_not_equal(a.material[32 * a.side + 32], MATERIAL_WATER);
	assert_int_equal(b.material[32 * b.side + 32], MATERIAL_WATER);
	tile_release(&a);
	tile_release(&b);
}

/* Bad arguments are refused before any of them is used: a NULL preset, or
 * a LOD that would make a negative or oversized shift. */
static void test_classify_refuses_bad_arguments(void **state)
{
	const struct preset *p = preset_fixture_find("islands");
	int32_t bordered[3 * 3] = { 0 };
	uint8_t out[1];

	(void)state;
	assert_int_equal(material_classify(NULL, 1, 0, 0, 0, 1, 1, bordered, out), ERR_INVAL);
	assert_int_equal(material_classify(p, 1, 0, 0, 0, 1, 1, NULL, out), ERR_INVAL);
	assert_int_equal(material_classify(p, 1, 0, 0, 0, 1, 1, bordered, NULL), ERR_INVAL);
	assert_int_equal(material_classify(p, 1, 0, 0, 0, 0, 1, bordered, out), ERR_INVAL);
	assert_int_equal(material_classify(p, 1, -1, 0, 0, 1, 1, bordered, out), ERR_INVAL);
	assert_int_equal(material_classify(p, 1, 64, 0, 0, 1, 1, bordered, out), ERR_INVAL);
	assert_int_equal(material_classify(p, 1, 0, 0, 0, 1, 1, bordered, out), 0);
	assert_true(out[0] < MATERIAL_COUNT);
}

static void test_material_table_names_every_id(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < MATERIAL_COUNT; k++)
		assert_non_null(material_name(k));
	assert_null(material_name(MATERIAL_COUNT));
	assert_int_equal(material_rgb(MATERIAL_SNOW), 0xf2f4f7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_materials_are_known_ids_and_varied),
		cmocka_unit_test(test_high_ground_has_rock_or_snow),
		cmocka_unit_test(test_neighbours_agree_on_edge_materials),
		cmocka_unit_test(test_the_layer_leaves_heights_alone),
		cmocka_unit_test(test_edits_move_materials),
		cmocka_unit_test(test_classify_refuses_bad_arguments),
		cmocka_unit_test(test_material_table_names_every_id),
	};

	return cmocka_run_group_tests(tests, preset_fixture_setup, preset_fixture_teardown);
}
