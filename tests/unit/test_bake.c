/*
 * test_bake.c - baked deltas give the same bytes as replaying the edits:
 * for random edit histories over a 3 x 3 block of chunks, every chunk
 * baked at a random point of its history, tiles at several LODs (heights,
 * and with the material layer, which reads beyond the chunk) and a
 * chunk's objects equal those made with every edit applied in order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "edit.h"
#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "preset_fixture.h"
#include "scatter.h"
#include "tile.h"

#define NEDITS 120
#define SIDE 257

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A random edit near the 3 x 3 block of chunks around (cx, cz). */
static struct edit random_edit(int32_t cx, int32_t cz)
{
	struct edit e = { 0 };

	e.op = (uint8_t)(next() % EDIT_OP_COUNT);
	e.falloff = (uint8_t)(next() % EDIT_FALLOFF_COUNT);
	e.x_mm = ((int64_t)cx * 256 - 256 + (int64_t)(next() % 768)) * 1000 +
		 (int64_t)(next() % 1000);
	e.z_mm = ((int64_t)cz * 256 - 256 + (int64_t)(next() % 768)) * 1000;
	e.radius_mm = 1000 + (int64_t)(next() % 120000);
	if (e.op == EDIT_RAISE || e.op == EDIT_LOWER)
		e.strength = (int64_t)(next() % 20000000);
	else if (e.op == EDIT_FLATTEN)
		e.strength = (int64_t)(next() % 1000001);
	if (e.op == EDIT_FLATTEN || e.op == EDIT_SET)
		e.height_um = (int64_t)(next() % 400000000) - 100000000;
	return e;
}

/* The edits of hist (n) that touch chunk (cx, cz), from index lo to hi. */
static size_t touching(const struct edit *hist, size_t lo, size_t hi, int32_t cx, int32_t cz,
		       struct edit *out)
{
	size_t k, m = 0;

	for (k = lo; k < hi; k++)
		if (edit_touches(&hist[k], 8, cx, cz))
			out[m++] = hist[k];
	return m;
}

struct baked {
	struct bake_chunk c[16];
	int32_t *delta[16];
	struct edit *pend[16];
	size_t n;
};

/* Bake every chunk of [cx0, cx1] x [cz0, cz1] at a random point of hist. */
static void bake_all(const struct preset *p, uint64_t seed, const struct edit *hist, size_t n,
		     int32_t cx0, int32_t cz0, int32_t cx1, int32_t cz1, struct baked *b)
{
	struct edit *list = malloc(n * sizeof(*list));
	int32_t *base = malloc(SIDE * SIDE * sizeof(*base));
	int32_t cx, cz;

	assert_non_null(list);
	assert_non_null(base);
	b->n = 0;
	for (cz = cz0; cz <= cz1; cz++)
		for (cx = cx0; cx <= cx1; cx++) {
			size_t v = (size_t)(next() % (n + 1)), k = b->n++, m;
			int32_t *edited = malloc(SIDE * SIDE * sizeof(*edited));

			assert_non_null(edited);
			b->delta[k] = malloc(SIDE * SIDE * sizeof(int32_t));
			b->pend[k] = malloc((n + 1) * sizeof(struct edit));
			assert_int_equal(pipeline_heights(p, seed, 0, (int64_t)cx * 256,
							  (int64_t)cz * 256, SIDE, SIDE, NULL,
							  base), 0);
			memcpy(edited, base, SIDE * SIDE * sizeof(*edited));
			m = touching(hist, 0, v, cx, cz, list);
			edit_apply_block(edited, (int64_t)cx * 256, (int64_t)cz * 256, 0, SIDE, SIDE,
					 preset_quantum_um(p), list, m);
			assert_int_equal(bake_delta(edited, base, SIDE * SIDE, b->delta[k]), 0);
			free(edited);
			m = touching(hist, v, n, cx, cz, b->pend[k]);
			/* a quarter of the chunks stay unbaked: all edits pending */
			if (next() % 4 == 0) {
				free(b->delta[k]);
				b->delta[k] = NULL;
				m = touching(hist, 0, n, cx, cz, b->pend[k]);
			}
			b->c[k] = (struct bake_chunk){ cx, cz, b->delta[k], b->pend[k], m };
		}
	free(list);
	free(base);
}

static void baked_free(struct baked *b)
{
	size_t k;

	for (k = 0; k < b->n; k++) {
		free(b->delta[k]);
		free(b->pend[k]);
	}
}

static void check_preset(const char *name)
{
	const struct preset *p = preset_fixture_find(name);
	const uint64_t seed = 77;
	const int32_t cx = -3, cz = 5;
	struct edit hist[NEDITS], around[NEDITS];
	struct baked b;
	struct bake_layer layer;
	size_t k, m;
	int lod, layers;

	for (k = 0; k < NEDITS; k++)
		hist[k] = random_edit(cx, cz);
	bake_all(p, seed, hist, NEDITS, cx - 1, cz - 1, cx + 1, cz + 1, &b);
	layer = (struct bake_layer){ 8, b.c, b.n };
	{
		size_t nonzero = 0, pending = 0, j;

		for (k = 0; k < b.n; k++) {
			pending += b.c[k].n;
			for (j = 0; b.delta[k] && j < SIDE * SIDE; j++)
				nonzero += b.delta[k][j] != 0;
		}
		assert_true(nonzero > 1000); /* the deltas hold edits */
		assert_true(pending > 10);   /* and edits follow them */
	}
	m = 0;
	for (k = 0; k < NEDITS; k++) {
		int32_t x, z;
		int hit = 0;

		for (z = cz - 1; z <= cz + 1; z++)
			for (x = cx - 1; x <= cx + 1; x++)
				hit |= edit_touches(&hist[k], 8, x, z);
		if (hit)
			around[m++] = hist[k];
	}
	for (layers = 0; layers <= 1; layers++)
		for (lod = 0; lod <= 8; lod += 2) {
			struct tile want, got;

			assert_int_equal(pipeline_tile(p, seed, lod, cx, cz, NULL, around, m, 9,
						       layers ? PIPELINE_LAYER_MATERIAL : 0, &want), 0);
			assert_int_equal(pipeline_tile_baked(p, seed, lod, cx, cz, NULL, &layer, 9,
							     layers ? PIPELINE_LAYER_MATERIAL : 0,
							     &got), 0);
			assert_memory_equal(want.h, got.h, (size_t)want.side * want.side * 4);
			if (layers)
				assert_memory_equal(want.material, got.material,
						    (size_t)want.side * want.side);
			tile_release(&want);
			tile_release(&got);
		}
	{
		struct scatter_object *v1, *v2;
		size_t n1, n2;

		assert_int_equal(scatter_chunk(p, seed, cx, cz, NULL, around, m, &v1, &n1), 0);
		assert_int_equal(scatter_chunk_baked(p, seed, cx, cz, NULL, &layer, &v2, &n2), 0);
		assert_int_equal(n1, n2);
		for (k = 0; k < n1; k++) {
			uint8_t a[SCATTER_WIRE_SIZE], c[SCATTER_WIRE_SIZE];

			scatter_encode(&v1[k], a);
			scatter_encode(&v2[k], c);
			assert_memory_equal(a, c, sizeof(a));
		}
		free(v1);
		free(v2);
	}
	baked_free(&b);
}

static void test_bake_default_tiles_and_objects_equal_replaying_every_edit(void **state)
{
	(void)state;
	check_preset("default");
	check_preset("default");
}

static void test_bake_mesa_terraces_equal_replaying_every_edit(void **state)
{
	(void)state;
	check_preset("mesa");
}

static void test_bake_delta_refuses_differences_beyond_int32(void **state)
{
	int32_t edited[2] = { INT32_MAX, 5 }, base[2] = { -10, 2 }, d[2];

	(void)state;
	assert_int_equal(bake_delta(edited, base, 2, d), ERR_RANGE);
	base[0] = 10;
	assert_int_equal(bake_delta(edited, base, 2, d), 0);
	bake_add(base, d, 2);
	assert_memory_equal(base, edited, sizeof(edited));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bake_default_tiles_and_objects_equal_replaying_every_edit),
		cmocka_unit_test(test_bake_mesa_terraces_equal_replaying_every_edit),
		cmocka_unit_test(test_bake_delta_refuses_differences_beyond_int32),
	};

	return cmocka_run_group_tests(tests, preset_fixture_setup, preset_fixture_teardown);
}
