/*
 * test_regions.c - the eroded-region cache: one computation per region
 * however many threads ask, maps equal to pipeline_region(), byte bound.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen/regions.h"
#include "pipeline.h"
#include "preset.h"
#include "preset_fixture.h"

static const struct preset *eroded(void)
{
	size_t i;

	for (i = 0; i < n_presets; i++)
		if (preset_is_eroded(presets[i]))
			return presets[i];
	fail_msg("no eroded preset");
	return NULL;
}

struct job {
	struct regions *r;
	const float *map;
};

static void *grab(void *arg)
{
	struct job *j = arg;
	const struct region_source *src = regions_source(j->r);

	j->map = src->acquire(src->ctx, eroded(), 5, 1, -2);
	return NULL;
}

static void test_concurrent_acquires_compute_a_region_once(void **state)
{
	struct regions *r;
	struct regions_stats st;
	struct job jobs[6];
	pthread_t th[6];
	size_t side = pipeline_region_side(eroded());
	float *want = malloc(side * side * sizeof(float));
	int i;

	(void)state;
	assert_non_null(want);
	assert_int_equal(pipeline_region(eroded(), 5, 1, -2, want), 0);
	assert_int_equal(regions_create((size_t)64 << 20, &r), 0);
	for (i = 0; i < 6; i++) {
		jobs[i].r = r;
		assert_int_equal(pthread_create(&th[i], NULL, grab, &jobs[i]), 0);
	}
	for (i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		assert_non_null(jobs[i].map);
		assert_ptr_equal(jobs[i].map, jobs[0].map);
	}
	assert_memory_equal(jobs[0].map, want, side * side * sizeof(float));
	regions_stats(r, &st);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.hits + st.waits, 5);
	for (i = 0; i < 6; i++)
		regions_source(r)->release(r, jobs[i].map);
	regions_destroy(r);
	free(want);
}

static void test_unheld_regions_are_evicted_to_the_bound(void **state)
{
	size_t side = pipeline_region_side(eroded()), one = side * side * sizeof(float);
	struct regions *r;
	struct regions_stats st;
	const struct region_source *src;
	int k;

	(void)state;
	assert_int_equal(regions_create(2 * one + 1000, &r), 0);
	src = regions_source(r);
	for (k = 0; k < 4; k++) {
		const float *m = src->acquire(src->ctx, eroded(), 9, k, 0);

		assert_non_null(m);
		src->release(src->ctx, m);
		regions_stats(r, &st);
		assert_true(st.bytes <= st.capacity);
	}
	regions_stats(r, &st);
	assert_int_equal(st.misses, 4);
	assert_int_equal(st.evictions, 2);
	assert_int_equal(st.entries, 2);
	/* the most recent two stay: no new computation */
	src->release(src->ctx, src->acquire(src->ctx, eroded(), 9, 3, 0));
	regions_stats(r, &st);
	assert_int_equal(st.misses, 4);
	regions_destroy(r);
}

static void test_held_regions_outlive_the_bound(void **state)
{
	struct regions *r;
	struct regions_stats st;
	const struct region_source *src;
	const float *a, *b;

	(void)state;
	assert_int_equal(regions_create(1, &r), 0);
	src = regions_source(r);
	a = src->acquire(src->ctx, eroded(), 1, 0, 0);
	b = src->acquire(src->ctx, eroded(), 1, 0, 1);
	assert_non_null(a);
	assert_non_null(b);
	regions_stats(r, &st);
	assert_int_equal(st.entries, 2);   /* both held: nothing evicted */
	src->release(src->ctx, a);
	src->release(src->ctx, b);
	regions_stats(r, &st);
	assert_int_equal(st.entries, 0);
	regions_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_acquires_compute_a_region_once),
		cmocka_unit_test(test_unheld_regions_are_evicted_to_the_bound),
		cmocka_unit_test(test_held_regions_outlive_the_bound),
	};

	return cmocka_run_group_tests(tests, preset_fixture_setup, preset_fixture_teardown);
}
