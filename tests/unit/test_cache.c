/*
 * test_cache.c - unit tests for server/base/cache.c: the byte bound, LRU order,
 * counters, reference counts, expiry by a time parameter and single flight.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/cache.h"
#include "err.h"

/* Values are malloc'd ints holding their id; freeing one counts it. */
static int freed;
static int last_freed;

static void free_value(void *arg, void *v)
{
	assert_ptr_equal(arg, &freed);
	freed++;
	last_freed = *(int *)v;
	free(v);
}

static void *val(int id)
{
	int *v = malloc(sizeof(*v));

	assert_non_null(v);
	*v = id;
	return v;
}

static int id_of(struct cache_entry *e)
{
	return *(int *)cache_value(e);
}

static struct cache *new_cache(size_t capacity, uint64_t ttl)
{
	struct cache *c = NULL;

	freed = 0;
	last_freed = -1;
	assert_int_equal(cache_create(capacity, ttl, free_value, &freed, &c), 0);
	return c;
}

/* Room for exactly n entries of a 4-byte key and bytes-byte values. */
static size_t room_for(size_t n, size_t bytes)
{
	return 64 * sizeof(void *) + n * cache_entry_cost(4, bytes);
}

static void put(struct cache *c, const char *key, int id, size_t bytes,
		uint64_t now)
{
	assert_int_equal(cache_put(c, key, 4, val(id), bytes, now, NULL), 0);
}

/* 1 when key is cached (touching it, as a get does). */
static int has(struct cache *c, const char *key, uint64_t now)
{
	struct cache_entry *e = cache_get(c, key, 4, now);

	cache_release(c, e);
	return e != NULL;
}

static void test_cache_get_returns_what_put_stored(void **state)
{
	struct cache *c = new_cache(room_for(4, 100), 0);
	struct cache_entry *e;
	struct cache_stats st;

	(void)state;
	put(c, "aaaa", 1, 100, 0);
	e = cache_get(c, "aaaa", 4, 0);
	assert_non_null(e);
	assert_int_equal(id_of(e), 1);
	cache_release(c, e);
	assert_null(cache_get(c, "bbbb", 4, 0));
	cache_stats(c, &st);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.bytes, room_for(1, 100));
	cache_destroy(c);
	assert_int_equal(freed, 1);
}

static void test_cache_evicts_least_recent(void **state)
{
	struct cache *c = new_cache(room_for(3, 100), 0);

	(void)state;
	put(c, "aaaa", 1, 100, 0);
	put(c, "bbbb", 2, 100, 0);
	put(c, "cccc", 3, 100, 0);
	assert_true(has(c, "aaaa", 0)); /* a is now the most recent */
	put(c, "dddd", 4, 100, 0);      /* evicts b, the least recent */
	assert_int_equal(last_freed, 2);
	assert_false(has(c, "bbbb", 0));
	assert_true(has(c, "aaaa", 0));
	assert_true(has(c, "cccc", 0));
	assert_true(has(c, "dddd", 0));
	put(c, "eeee", 5, 100, 0);      /* now a is the least recent */
	assert_int_equal(last_freed, 1);
	cache_destroy(c);
}

static void test_cache_counts_evictions(void **state)
{
	struct cache *c = new_cache(room_for(2, 100), 0);
	struct cache_stats st;
	char key[4] = "k00";
	int i;

	(void)state;
	for (i = 0; i < 10; i++) {
		key[3] = (char)('0' + i);
		put(c, key, i, 100, 0);
	}
	cache_stats(c, &st);
	assert_int_equal(st.evictions, 8);
	assert_int_equal(st.entries, 2);
	assert_int_equal(freed, 8);
	/* One value as large as two: evicts both old ones. */
	put(c, "wide", 99, 100 + cache_entry_cost(4, 100), 0);
	cache_stats(c, &st);
	assert_int_equal(st.evictions, 10);
	assert_int_equal(st.entries, 1);
	assert_true(st.bytes <= st.capacity);
	cache_destroy(c);
}

static void test_cache_holds_byte_bound_under_random_workload(void **state)
{
	const size_t cap = 64 * 1024;
	struct cache *c = new_cache(cap, 0);
	struct cache_entry *held[16] = { 0 };
	struct cache_stats st;
	uint64_t x = 0x9e3779b97f4a7c15u;
	size_t puts = 0, replaced = 0;
	int i;

	(void)state;
	for (i = 0; i < 200000; i++) {
		char key[4];
		unsigned r, k;
		size_t bytes;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		r = (unsigned)(x >> 32);
		k = r % 512;
		memcpy(key, &k, 4);
		bytes = (r >> 9) % 4096;
		if (r & 0x100) {
			struct cache_entry *e = cache_get(c, key, 4, (uint64_t)i);

			if (e && !held[k % 16])
				held[k % 16] = e; /* keep a reference a while */
			else
				cache_release(c, e);
		} else {
			if (has(c, key, (uint64_t)i))
				replaced++;
			put(c, key, (int)k, bytes, (uint64_t)i);
			puts++;
		}
		if (i % 97 == 0) {
			cache_release(c, held[k % 16]);
			held[k % 16] = NULL;
		}
		cache_stats(c, &st);
		assert_true(st.bytes <= cap);
	}
	for (i = 0; i < 16; i++)
		cache_release(c, held[i]);
	cache_stats(c, &st);
	assert_true(st.evictions > 1000);
	assert_int_equal(st.entries, puts - replaced - st.evictions);
	assert_int_equal((size_t)freed, puts - st.entries);
	cache_destroy(c);
	assert_int_equal((size_t)freed, puts);
}

static void test_cache_entry_outlives_eviction_while_referenced(void **state)
{
	struct cache *c = new_cache(room_for(1, 100), 0);
	struct cache_entry *e;

	(void)state;
	assert_int_equal(cache_put(c, "aaaa", 4, val(1), 100, 0, &e), 0);
	put(c, "bbbb", 2, 100, 0); /* evicts a, but we still hold it */
	assert_false(has(c, "aaaa", 0));
	assert_int_equal(freed, 0);
	assert_int_equal(id_of(e), 1);
	cache_release(c, e);
	assert_int_equal(freed, 1);
	assert_int_equal(last_freed, 1);
	cache_destroy(c);
}

static void test_cache_expires_entries_by_time(void **state)
{
	struct cache *c = new_cache(room_for(4, 10), 1000);
	struct cache_stats st;

	(void)state;
	put(c, "aaaa", 1, 10, 5000);
	assert_true(has(c, "aaaa", 5999));
	assert_false(has(c, "aaaa", 6000));
	cache_stats(c, &st);
	assert_int_equal(st.expired, 1);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, room_for(0, 0));
	cache_destroy(c);
}

static void test_cache_keeps_oversized_value_out(void **state)
{
	struct cache *c = new_cache(room_for(2, 100), 0);
	struct cache_entry *e;
	struct cache_stats st;

	(void)state;
	put(c, "aaaa", 1, 100, 0);
	assert_int_equal(cache_put(c, "huge", 4, val(2), 1 << 20, 0, &e), 0);
	assert_int_equal(id_of(e), 2);
	assert_true(has(c, "aaaa", 0)); /* nothing evicted for it */
	assert_false(has(c, "huge", 0));
	cache_release(c, e);
	cache_stats(c, &st);
	assert_int_equal(st.uncacheable, 1);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(freed, 1);
	cache_destroy(c);
}

struct waiter {
	struct cache_waiter w;
	struct cache *c;
	int calls, err, id;
};

static void waiter_done(struct cache_waiter *w, struct cache_entry *e, int err)
{
	struct waiter *wt = (struct waiter *)w;

	wt->calls++;
	wt->err = err;
	wt->id = e ? id_of(e) : -1;
	cache_release(wt->c, e);
}

static void test_cache_fetch_shares_one_flight(void **state)
{
	struct cache *c = new_cache(room_for(4, 100), 0);
	struct waiter w[3];
	struct cache_entry *e, *flight;
	struct cache_stats st;
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		w[i] = (struct waiter){ .w.done = waiter_done, .c = c };
	assert_int_equal(cache_fetch(c, "tile", 4, 0, &w[0].w, &flight), CACHE_MISS);
	assert_int_equal(cache_fetch(c, "tile", 4, 0, &w[1].w, &e), CACHE_WAIT);
	assert_null(e);
	assert_int_equal(cache_fetch(c, "tile", 4, 0, &w[2].w, &e), CACHE_WAIT);
	assert_null(cache_get(c, "tile", 4, 0)); /* pending is not ready */
	assert_int_equal(cache_put(c, "tile", 4, val(9), 1, 0, NULL), ERR_BUSY);
	cache_complete(c, flight, val(7), 100, 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(w[i].calls, 1);
		assert_int_equal(w[i].err, 0);
		assert_int_equal(w[i].id, 7);
	}
	assert_int_equal(cache_fetch(c, "tile", 4, 0, &w[0].w, &e), CACHE_HIT);
	assert_int_equal(id_of(e), 7);
	cache_release(c, e);
	cache_stats(c, &st);
	assert_int_equal(st.misses, 4); /* three fetches and one get */
	assert_int_equal(st.waits, 2);
	assert_int_equal(st.hits, 1);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.entries, 1);
	cache_destroy(c);
	assert_int_equal(freed, 2); /* 9 refused by the busy put, 7 */
}

static void test_cache_abort_wakes_waiters_with_error(void **state)
{
	struct cache *c = new_cache(room_for(4, 100), 0);
	struct waiter w[2];
	struct cache_entry *flight, *e;
	struct cache_stats st;

	(void)state;
	w[0] = (struct waiter){ .w.done = waiter_done, .c = c };
	w[1] = w[0];
	assert_int_equal(cache_fetch(c, "tile", 4, 0, &w[0].w, &flight), CACHE_MISS);
	assert_int_equal(cache_fetch(c, "tile", 4, 0, &w[1].w, &e), CACHE_WAIT);
	cache_abort(c, flight, ERR_NOMEM);
	assert_int_equal(w[0].calls, 1);
	assert_int_equal(w[0].err, ERR_NOMEM);
	assert_int_equal(w[1].err, ERR_NOMEM);
	cache_stats(c, &st);
	assert_int_equal(st.pending, 0);
	/* The next fetch starts a new flight. */
	assert_int_equal(cache_fetch(c, "tile", 4, 0, &w[0].w, &flight), CACHE_MISS);
	cache_complete(c, flight, val(3), 10, 0);
	assert_int_equal(w[0].id, 3);
	cache_destroy(c);
}

static void test_cache_rejects_bad_keys(void **state)
{
	struct cache *c = new_cache(room_for(4, 100), 0);
	char big[CACHE_KEY_MAX + 1] = { 0 };

	(void)state;
	assert_int_equal(cache_put(c, big, sizeof(big), val(1), 1, 0, NULL), ERR_INVAL);
	assert_int_equal(cache_put(c, big, 0, val(2), 1, 0, NULL), ERR_INVAL);
	assert_int_equal(freed, 2);
	assert_int_equal(cache_remove(c, "none", 4), ERR_NOTFOUND);
	cache_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_get_returns_what_put_stored),
		cmocka_unit_test(test_cache_evicts_least_recent),
		cmocka_unit_test(test_cache_counts_evictions),
		cmocka_unit_test(test_cache_holds_byte_bound_under_random_workload),
		cmocka_unit_test(test_cache_entry_outlives_eviction_while_referenced),
		cmocka_unit_test(test_cache_expires_entries_by_time),
		cmocka_unit_test(test_cache_keeps_oversized_value_out),
		cmocka_unit_test(test_cache_fetch_shares_one_flight),
		cmocka_unit_test(test_cache_abort_wakes_waiters_with_error),
		cmocka_unit_test(test_cache_rejects_bad_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
