/*
 * test_pipeline.c - the generated world: golden tile hashes, seams between
 * neighbours, LOD nesting, thread safety, far-from-origin exactness.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "preset_fixture.h"
#include "tile.h"

/*
 * A small region cache for eroded presets, so the seam and nesting tests
 * reuse regions across neighbours and LODs as the server does. Entries are
 * never evicted during a run (the tests touch a few dozen regions).
 */
#define REGIONS_MAX 256

static struct {
	pthread_mutex_t lock;
	int n;
	struct {
		const struct preset *p;
		uint64_t seed;
		int64_t rx, rz;
		float *map;
	} e[REGIONS_MAX];
} regions = { PTHREAD_MUTEX_INITIALIZER, 0, { { 0 } } };

static const float *region_acquire(void *ctx, const struct preset *p, uint64_t seed,
				   int64_t rx, int64_t rz)
{
	size_t side = pipeline_region_side(p);
	float *m = NULL;
	int k;

	(void)ctx;
	pthread_mutex_lock(&regions.lock);
	for (k = 0; k < regions.n && !m; k++)
		if (regions.e[k].p == p && regions.e[k].seed == seed &&
		    regions.e[k].rx == rx && regions.e[k].rz == rz)
			m = regions.e[k].map;
	pthread_mutex_unlock(&regions.lock);
	if (m)
		return m;
	m = malloc(side * side * sizeof(float));
	if (!m || pipeline_region(p, seed, rx, rz, m) != 0 || regions.n >= REGIONS_MAX) {
		free(m);
		return NULL;
	}
	pthread_mutex_lock(&regions.lock);
	regions.e[regions.n].p = p;
	regions.e[regions.n].seed = seed;
	regions.e[regions.n].rx = rx;
	regions.e[regions.n].rz = rz;
	regions.e[regions.n++].map = m;
	pthread_mutex_unlock(&regions.lock);
	return m;
}

static void region_release(void *ctx, const float *map)
{
	(void)ctx;
	(void)map;
}

static const struct region_source region_cache = { region_acquire, region_release, NULL };

static void gen(const char *name, uint64_t seed, int lod, int32_t cx, int32_t cz,
		struct tile *t)
{
	assert_int_equal(pipeline_generate_with(preset_fixture_find(name), seed, lod, cx, cz, &region_cache, t),
			 0);
}

/* XXH3 of the heights as little-endian int32: independent of the format. */
static uint64_t heights_hash(const struct tile *t)
{
	size_t n = (size_t)t->side * t->side, i;
	uint8_t *b = malloc(n * 4);
	uint64_t h;

	assert_non_null(b);
	for (i = 0; i < n; i++) {
		uint32_t v = (uint32_t)t->h[i];

		b[4 * i] = (uint8_t)v;
		b[4 * i + 1] = (uint8_t)(v >> 8);
		b[4 * i + 2] = (uint8_t)(v >> 16);
		b[4 * i + 3] = (uint8_t)(v >> 24);
	}
	h = XXH3_64bits(b, n * 4);
	free(b);
	return h;
}

struct golden {
	const char *preset;
	uint64_t seed;
	int lod;
	int32_t cx, cz;
	uint64_t hash;
};

/*
 * Golden hashes guard determinism: any change to noise, fBm, presets or
 * quantisation that moves one height by one quantum fails here. When a
 * change is intended, bump PRESET_ALGO_VERSION (fingerprints change too)
 * and regenerate with TERRAIN_PRINT_GOLDEN=1 build/tests/test_pipeline.
 */
static const struct golden golden[] = {
#include "golden_tiles.inc"
};

static void test_pipeline_matches_golden_hashes(void **state)
{
	int print = getenv("TERRAIN_PRINT_GOLDEN") != NULL;
	size_t i;

	(void)state;
	assert_true(sizeof(golden) / sizeof(golden[0]) >= 20);
	for (i = 0; i < sizeof(golden) / sizeof(golden[0]); i++) {
		const struct golden *g = &golden[i];
		struct tile t;
		uint64_t h;

		gen(g->preset, g->seed, g->lod, g->cx, g->cz, &t);
		h = heights_hash(&t);
		if (print)
			printf("\t{ \"%s\", %lluULL, %d, %ld, %ld, 0x%016llxULL },\n",
			       g->preset, (unsigned long long)g->seed, g->lod, (long)g->cx,
			       (long)g->cz, (unsigned long long)h);
		else if (h != g->hash)
			fail_msg("%s seed %llu lod %d (%ld, %ld): hash %016llx, want %016llx",
				 g->preset, (unsigned long long)g->seed, g->lod, (long)g->cx,
				 (long)g->cz, (unsigned long long)h, (unsigned long long)g->hash);
		tile_release(&t);
	}
}

/* Column i of a (x fixed) against column k of b, or rows when !cols. */
static void assert_edges_equal(const struct tile *a, uint32_t ia, const struct tile *b,
			       uint32_t ib, int cols)
{
	uint32_t j, n = a->side;

	for (j = 0; j < n; j++) {
		int32_t va = cols ? a->h[j * n + ia] : a->h[ia * n + j];
		int32_t vb = cols ? b->h[j * n + ib] : b->h[ib * n + j];

		if (va != vb)
			fail_msg("edge sample %u: %d != %d", j, va, vb);
	}
}

static void test_neighbours_share_edges_at_every_lod(void **state)
{
	static const int32_t at[][2] = {
		{ 0, 0 }, { -1, -1 }, { 37, -12 }, { INT32_MAX - 1, INT32_MAX - 1 },
		{ INT32_MIN, INT32_MIN }, { -1000000, 999999 },
	};
	size_t p, a;
	int lod;

	(void)state;
	for (p = 0; p < n_presets; p++)
		for (a = 0; a < sizeof(at) / sizeof(at[0]); a++)
			for (lod = 0; lod <= preset_max_lod(presets[p]); lod++) {
				const char *name = preset_name(presets[p]);
				struct tile t, e, s;

				gen(name, 11, lod, at[a][0], at[a][1], &t);
				gen(name, 11, lod, at[a][0] + 1, at[a][1], &e);
				gen(name, 11, lod, at[a][0], at[a][1] + 1, &s);
				assert_edges_equal(&t, t.side - 1, &e, 0, 1);
				assert_edges_equal(&t, t.side - 1, &s, 0, 0);
				tile_release(&t);
				tile_release(&e);
				tile_release(&s);
			}
}

static void test_each_lod_is_every_second_sample_of_the_one_below(void **state)
{
	static const int32_t at[][2] = { { 3, 4 }, { -70000, 12 }, { INT32_MIN, INT32_MAX } };
	size_t p, a;
	int lod;

	(void)state;
	for (p = 0; p < n_presets; p++)
		for (a = 0; a < sizeof(at) / sizeof(at[0]); a++)
			for (lod = 0; lod < preset_max_lod(presets[p]); lod++) {
				struct tile fine, coarse;
				uint32_t i, j;

				gen(preset_name(presets[p]), 5, lod, at[a][0], at[a][1], &fine);
				gen(preset_name(presets[p]), 5, lod + 1, at[a][0], at[a][1], &coarse);
				assert_int_equal(fine.side, 2 * coarse.side - 1);
				for (j = 0; j < coarse.side; j++)
					for (i = 0; i < coarse.side; i++)
						assert_int_equal(coarse.h[j * coarse.side + i],
								 fine.h[2 * j * fine.side + 2 * i]);
				tile_release(&fine);
				tile_release(&coarse);
			}
}

struct job {
	const struct preset *p;
	uint64_t hash;
};

static void *gen_thread(void *arg)
{
	struct job *j = arg;
	struct tile t;

	if (pipeline_generate(j->p, 99, 0, -3, 8, &t) == 0) {
		j->hash = heights_hash(&t);
		tile_release(&t);
	}
	return NULL;
}

static void test_same_tile_on_four_threads_is_identical(void **state)
{
	struct job jobs[4];
	pthread_t th[4];
	struct tile t;
	uint64_t want;
	int i;

	(void)state;
	gen("default", 99, 0, -3, 8, &t);
	want = heights_hash(&t);
	tile_release(&t);
	for (i = 0; i < 4; i++) {
		jobs[i] = (struct job){ preset_fixture_find("default"), 0 };
		assert_int_equal(pthread_create(&th[i], NULL, gen_thread, &jobs[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_true(jobs[i].hash == want);
	}
}

/* Mean |dh| between horizontal neighbours over a few LOD-0 tiles. */
static double roughness(const char *name, int32_t cx, int32_t cz)
{
	double sum = 0;
	long n = 0;
	int k;

	for (k = 0; k < 4; k++) {
		struct tile t;
		uint32_t i, j;

		gen(name, 21, 0, cx + k, cz - k, &t);
		for (j = 0; j < t.side; j++)
			for (i = 1; i < t.side; i++, n++)
				sum += abs(t.h[j * t.side + i] - t.h[j * t.side + i - 1]);
		tile_release(&t);
	}
	return sum / (double)n;
}

static void test_far_terrain_is_as_rough_as_near_terrain(void **state)
{
	size_t p;

	(void)state;
	for (p = 0; p < n_presets; p++) {
		const char *name = preset_name(presets[p]);
		double near = roughness(name, 0, 0);
		double far = roughness(name, INT32_MAX - 8, INT32_MIN + 8);
		double far2 = roughness(name, -2000000000, 2000000000);

		assert_true(near > 0.5);   /* not flat: over 5 mm per metre */
		assert_true(far > near / 3 && far < near * 3);
		assert_true(far2 > near / 3 && far2 < near * 3);
	}
}

static void test_heights_stay_within_the_preset_range(void **state)
{
	size_t p, i;

	(void)state;
	for (p = 0; p < n_presets; p++) {
		struct tile t;
		double lo = preset_min_height(presets[p]), hi = preset_max_height(presets[p]);

		gen(preset_name(presets[p]), 1, 2, 10, -10, &t);
		for (i = 0; i < (size_t)t.side * t.side; i++) {
			double m = tile_height_m(&t, (uint32_t)(i % t.side), (uint32_t)(i / t.side));

			assert_true(m >= lo - 0.01 && m <= hi + 0.01);
		}
		assert_true(t.fingerprint == preset_fingerprint(presets[p]));
		assert_int_equal(t.side, 65);
		tile_release(&t);
	}
}

static void test_generate_rejects_bad_lod(void **state)
{
	struct tile t;

	(void)state;
	assert_int_equal(pipeline_generate(preset_fixture_find("default"), 1, -1, 0, 0, &t), ERR_INVAL);
	assert_int_equal(pipeline_generate(preset_fixture_find("default"), 1, 9, 0, 0, &t), ERR_INVAL);
}

static void test_seeds_give_different_worlds(void **state)
{
	struct tile a, b;

	(void)state;
	gen("default", 1, 4, 0, 0, &a);
	gen("default", 2, 4, 0, 0, &b);
	assert_true(heights_hash(&a) != heights_hash(&b));
	tile_release(&a);
	tile_release(&b);
}

/* A block one sample wider than a tile holds the tile and its neighbours'
 * edge samples: the same values, whatever block asks. */
static void test_height_blocks_agree_with_tiles(void **state)
{
	size_t p;

	(void)state;
	for (p = 0; p < 2 * n_presets; p++) {
		const char *name = preset_name(presets[p / 2]);
		int lod = p % 2 ? 3 : 0;   /* LOD 0: rows start off every grid */
		struct tile t, w;
		uint32_t n, i, j;
		int32_t *blk;

		gen(name, 4, lod, 2, -3, &t);
		gen(name, 4, lod, 1, -3, &w);   /* west neighbour */
		n = t.side + 2;
		blk = malloc((size_t)n * n * sizeof(*blk));
		assert_non_null(blk);
		assert_int_equal(pipeline_heights(presets[p / 2], 4, lod, 2 * 256 - (1 << lod),
						  -3 * 256 - (1 << lod), n, n, &region_cache, blk),
				 0);
		for (j = 0; j < t.side; j++) {
			for (i = 0; i < t.side; i++)
				assert_int_equal(blk[(j + 1) * n + i + 1], t.h[j * t.side + i]);
			/* column 0 of the block is column side - 2 of the west tile */
			assert_int_equal(blk[(j + 1) * n], w.h[j * w.side + w.side - 2]);
		}
		if (lod)
			assert_int_equal(pipeline_heights(presets[p / 2], 4, lod, 3, 0, 4, 4, NULL,
							  blk), ERR_INVAL);   /* off the lattice */
		free(blk);
		tile_release(&t);
		tile_release(&w);
	}
}

static void test_eroded_tiles_do_not_depend_on_the_region_source(void **state)
{
	struct tile a, b;

	(void)state;
	assert_int_equal(pipeline_generate(preset_fixture_find("eroded"), 8, 0, -1, 2, &a), 0);
	gen("eroded", 8, 0, -1, 2, &b);
	assert_memory_equal(a.h, b.h, (size_t)a.side * a.side * sizeof(int32_t));
	tile_release(&a);
	tile_release(&b);
}

static void test_hydraulic_erosion_changes_the_terrain(void **state)
{
	const struct preset *eroded = preset_fixture_find("eroded");
	struct tile a, b;
	size_t i, n, changed = 0;

	(void)state;
	gen("default", 8, 0, 5, 5, &a);
	gen("eroded", 8, 0, 5, 5, &b);
	n = (size_t)a.side * a.side;
	for (i = 0; i < n; i++)
		changed += a.h[i] != b.h[i];
	/* same base world, most samples moved, fingerprints differ */
	assert_true(changed > n / 2);
	assert_true(preset_is_eroded(eroded) && !preset_is_eroded(preset_fixture_find("default")));
	assert_true(a.fingerprint != b.fingerprint);
	tile_release(&a);
	tile_release(&b);
}

/* One workspace kept over every golden tile, forwards then backwards, with
 * and without the material layer (so rows, grids, LODs, presets and block
 * widths change from one tile to the next): the same heights as a fresh
 * tile, the same materials, the same encoded bytes. */
static void test_a_kept_workspace_gives_the_same_tiles(void **state)
{
	size_t n = sizeof(golden) / sizeof(golden[0]), k;
	struct pipeline_work *w;

	(void)state;
	assert_int_equal(pipeline_work_create(&w), 0);
	for (k = 0; k < 2 * n; k++) {
		const struct golden *g = &golden[k < n ? k : 2 * n - 1 - k];
		unsigned layers = k % 3 == 1 ? PIPELINE_LAYER_MATERIAL : 0;
		const struct tile *t;
		struct tile f;
		size_t cap, la, lb;
		uint8_t *a, *b, *scratch;

		int rc;

		rc = pipeline_tile(preset_fixture_find(g->preset), g->seed, g->lod, g->cx, g->cz, &region_cache,
				   NULL, 0, 7, layers, &f);
		/* both fail alike (an eroded block at LOD 8 spans too many regions) */
		assert_int_equal(pipeline_tile_work(w, preset_fixture_find(g->preset), g->seed, g->lod, g->cx,
						    g->cz, &region_cache, NULL, 0, NULL, 7, layers,
						    &t), rc);
		if (rc)
			continue;
		assert_int_equal(heights_hash(t), g->hash);
		cap = tile_encode_bound(&f);
		a = malloc(cap);
		b = malloc(cap);
		scratch = malloc(tile_encode_scratch_size(t));
		assert_true(a && b && scratch);
		memset(scratch, 0xa5, tile_encode_scratch_size(t));
		assert_int_equal(tile_encode(&f, a, cap, &la), 0);
		assert_int_equal(tile_encode_in(t, scratch, b, cap, &lb), 0);
		assert_int_equal(la, lb);
		assert_memory_equal(a, b, la);
		assert_true(!layers == !t->material);
		free(a);
		free(b);
		free(scratch);
		tile_release(&f);
	}
	assert_true(pipeline_work_bytes(w) > 0);
	assert_int_equal(pipeline_tile_work(w, preset_fixture_find("default"), 0, 9, 0, 0, NULL, NULL, 0, NULL,
					    0, 0, &(const struct tile *){ NULL }), ERR_INVAL);
	pipeline_work_destroy(w);
	pipeline_work_destroy(NULL);
}

static int teardown(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < regions.n; k++)
		free(regions.e[k].map);
	return preset_fixture_teardown(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipeline_matches_golden_hashes),
		cmocka_unit_test(test_neighbours_share_edges_at_every_lod),
		cmocka_unit_test(test_each_lod_is_every_second_sample_of_the_one_below),
		cmocka_unit_test(test_same_tile_on_four_threads_is_identical),
		cmocka_unit_test(test_far_terrain_is_as_rough_as_near_terrain),
		cmocka_unit_test(test_heights_stay_within_the_preset_range),
		cmocka_unit_test(test_generate_rejects_bad_lod),
		cmocka_unit_test(test_seeds_give_different_worlds),
		cmocka_unit_test(test_height_blocks_agree_with_tiles),
		cmocka_unit_test(test_eroded_tiles_do_not_depend_on_the_region_source),
		cmocka_unit_test(test_hydraulic_erosion_changes_the_terrain),
		cmocka_unit_test(test_a_kept_workspace_gives_the_same_tiles),
	};

	return cmocka_run_group_tests(tests, preset_fixture_setup, teardown);
}
