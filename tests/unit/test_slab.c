/*
 * test_slab.c - server/base/slab.c: blocks of size classes (at most 12.5%
 * over the size asked for, 64-byte aligned), a freed block serving the
 * next one of its class, malloc past the largest class and once every run
 * is in use, an emptied run serving another class, blocks that never
 * overlap, and two threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/slab.h"
#include "err.h"

static struct slab *new_slab(size_t bytes)
{
	struct slab *s = NULL;

	assert_int_equal(slab_create(bytes, &s), 0);
	assert_non_null(s);
	return s;
}

static void test_slab_rounds_up_to_a_class_of_at_most_one_eighth_more(void **state)
{
	static const size_t sizes[] = { 1, 100, 512, 513, 576, 577, 1000, 1024, 1025, 19738,
					20000, 30000, SLAB_MAX_BLOCK - 1, SLAB_MAX_BLOCK };
	struct slab *s = new_slab(64 * SLAB_HUGE);
	struct slab_stats st;
	size_t k, got;

	(void)state;
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint8_t *p = slab_alloc(s, sizes[k], &got);

		assert_non_null(p);
		assert_true(got >= sizes[k]);
		assert_true(got <= 512 || got * 8 <= sizes[k] * 9);
		assert_int_equal(got % 64, 0);
		assert_int_equal((uintptr_t)p % 64, 0);
		memset(p, 0xa5, sizes[k]);
		slab_free(s, p);
	}
	slab_stats(s, &st);
	assert_int_equal(st.fallbacks, 0);
	assert_int_equal(st.in_use, 0);
	slab_destroy(s);
}

static void test_slab_reuses_a_freed_block_of_its_class(void **state)
{
	struct slab *s = new_slab(8 * SLAB_HUGE);
	struct slab_stats st;
	size_t a, b;
	void *p = slab_alloc(s, 20000, &a), *q;

	(void)state;
	assert_non_null(p);
	slab_free(s, p);
	q = slab_alloc(s, 19900, &b);   /* the same class */
	assert_ptr_equal(p, q);
	assert_int_equal(a, b);
	slab_stats(s, &st);
	assert_int_equal(st.runs, 1);
	assert_int_equal(st.committed, SLAB_HUGE);
	assert_int_equal(st.in_use, b);
	slab_free(s, q);
	slab_destroy(s);
}

static void test_slab_takes_larger_blocks_from_malloc(void **state)
{
	struct slab *s = new_slab(8 * SLAB_HUGE);
	struct slab_stats st;
	size_t got;
	uint8_t *p = slab_alloc(s, SLAB_MAX_BLOCK + 1, &got);

	(void)state;
	assert_non_null(p);
	assert_int_equal(got, SLAB_MAX_BLOCK + 1);
	p[SLAB_MAX_BLOCK] = 1;
	slab_stats(s, &st);
	assert_int_equal(st.fallbacks, 1);
	assert_int_equal(st.runs, 0);
	assert_int_equal(st.committed, 0);
	slab_free(s, p);
	slab_destroy(s);
}

/* One SLAB_HUGE of runs, each taken by a class of its own: the next class
 * finds none and gets malloc's, while a class with a run still carves. */
static void test_slab_takes_blocks_from_malloc_once_every_run_is_in_use(void **state)
{
	enum { RUNS = SLAB_HUGE / SLAB_RUN };
	struct slab *s = new_slab(SLAB_HUGE + SLAB_HUGE / 2);
	struct slab_stats st;
	void *p[RUNS], *c, *d;
	size_t got, k;

	(void)state;
	for (k = 0; k < RUNS; k++)
		assert_non_null(p[k] = slab_alloc(s, 1000 + 1000 * k, &got));
	c = slab_alloc(s, 30000, &got);
	assert_non_null(c);
	assert_int_equal(got, 30000);
	slab_stats(s, &st);
	assert_int_equal(st.runs, RUNS);
	assert_int_equal(st.max_runs, RUNS);
	assert_int_equal(st.fallbacks, 1);
	slab_free(s, c);   /* malloc's: freed by free() */
	d = slab_alloc(s, 1000, &got);   /* a class with a run still carves */
	assert_non_null(d);
	assert_int_equal(got, 1024);
	slab_free(s, d);
	for (k = 0; k < RUNS; k++)
		slab_free(s, p[k]);
	slab_destroy(s);
}

/* Every run full of one class, then all freed: another class's blocks
 * come from the same runs, without malloc and without more memory. */
static void test_slab_gives_an_emptied_run_to_another_class(void **state)
{
	enum { RUNS = SLAB_HUGE / SLAB_RUN, N = RUNS * (SLAB_RUN / 20160) };
	struct slab *s = new_slab(SLAB_HUGE);
	struct slab_stats st;
	void *p[N];
	size_t got, k;

	(void)state;
	for (k = 0; k < N; k++) {
		assert_non_null(p[k] = slab_alloc(s, 20000, &got));
		assert_int_equal(got, 20160);   /* SLAB_RUN / 13 */
	}
	slab_stats(s, &st);
	assert_int_equal(st.runs, RUNS);
	assert_int_equal(st.fallbacks, 0);
	for (k = 0; k < N; k++)
		slab_free(s, p[k]);
	slab_stats(s, &st);
	assert_int_equal(st.runs, 0);
	assert_int_equal(st.in_use, 0);
	for (k = 0; k < RUNS * (SLAB_RUN / 4096); k++) {
		assert_non_null(p[k % N] = slab_alloc(s, 4000, &got));
		assert_int_equal(got, 4096);
		memset(p[k % N], 7, 4000);
	}
	slab_stats(s, &st);
	assert_int_equal(st.runs, RUNS);
	assert_int_equal(st.committed, SLAB_HUGE);
	assert_int_equal(st.fallbacks, 0);
	slab_destroy(s);   /* the 4 KiB blocks die with it */
}

static void test_slab_of_no_memory_takes_every_block_from_malloc(void **state)
{
	struct slab *s = new_slab(0);
	struct slab_stats st;
	size_t got;
	void *p = slab_alloc(s, 100, &got);

	(void)state;
	assert_non_null(p);
	assert_int_equal(got, 100);
	slab_free(s, p);
	slab_free(s, NULL);
	slab_stats(s, &st);
	assert_int_equal(st.max_runs, 0);
	assert_int_equal(st.fallbacks, 1);
	slab_destroy(s);
	slab_destroy(NULL);
	assert_int_equal(slab_create(0, NULL), ERR_INVAL);
}

/* Blocks of random sizes, each filled with its own byte, some freed and
 * made again: every block still holds its byte at the end. */
static void test_slab_blocks_never_overlap(void **state)
{
	enum { N = 2000 };
	struct slab *s = new_slab(32 * SLAB_HUGE);
	uint8_t *p[N];
	size_t len[N], got, k, i;
	unsigned r = 12345;

	(void)state;
	for (k = 0; k < 3 * N; k++) {
		r = r * 1103515245u + 12345u;
		i = k < N ? k : (r >> 4) % N;   /* N blocks, then 2 N remade */
		if (k >= N)
			slab_free(s, p[i]);
		r = r * 1103515245u + 12345u;
		len[i] = 1 + (r >> 8) % 70000;
		assert_non_null(p[i] = slab_alloc(s, len[i], &got));
		memset(p[i], (int)(i & 255), len[i]);
	}
	for (i = 0; i < N; i++) {
		for (k = 0; k < len[i]; k += 97)
			assert_int_equal(p[i][k], i & 255);
		slab_free(s, p[i]);
	}
	slab_destroy(s);
}

static void *churn(void *arg)
{
	struct slab *s = arg;
	void *held[64] = { 0 };
	size_t got, k;

	for (k = 0; k < 20000; k++) {
		size_t i = (k * 7) % 64;

		slab_free(s, held[i]);
		held[i] = slab_alloc(s, 512 + (k * 131) % 40000, &got);
		if (!held[i])
			return (void *)1;
		memset(held[i], 1, 512);
	}
	for (k = 0; k < 64; k++)
		slab_free(s, held[k]);
	return NULL;
}

static void test_slab_serves_two_threads_at_once(void **state)
{
	struct slab *s = new_slab(16 * SLAB_HUGE);
	struct slab_stats st;
	pthread_t t;
	void *r1, *r2;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, churn, s), 0);
	r1 = churn(s);
	assert_int_equal(pthread_join(t, &r2), 0);
	assert_null(r1);
	assert_null(r2);
	slab_stats(s, &st);
	assert_int_equal(st.in_use, 0);
	slab_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slab_rounds_up_to_a_class_of_at_most_one_eighth_more),
		cmocka_unit_test(test_slab_reuses_a_freed_block_of_its_class),
		cmocka_unit_test(test_slab_takes_larger_blocks_from_malloc),
		cmocka_unit_test(test_slab_takes_blocks_from_malloc_once_every_run_is_in_use),
		cmocka_unit_test(test_slab_gives_an_emptied_run_to_another_class),
		cmocka_unit_test(test_slab_of_no_memory_takes_every_block_from_malloc),
		cmocka_unit_test(test_slab_blocks_never_overlap),
		cmocka_unit_test(test_slab_serves_two_threads_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
