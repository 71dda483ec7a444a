/*
 * test_world.c - the edit state of worlds (server/worlds/world.c): the chunk
 * index across corners and signs, versions, chunk hashes and the world
 * hash against a recomputation from the log, reservations, the bounds on
 * chunks, batch records, the map of worlds and the removal of empty ones,
 * replay of logged batches and other writers' batches between this node's
 * reserved ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "edit.h"
#include "err.h"
#include "preset.h"
#include "worlds/catalog.h"
#include "worlds/world.h"

#define FP 0x1234567890abcdefULL
#define SEED 42

/* A raise at (x, z) metres with radius r metres. */
static struct edit raise_at(double x, double z, double r)
{
	struct edit e = { EDIT_RAISE, EDIT_SMOOTH, (int64_t)(x * 1000), (int64_t)(z * 1000),
			  (int64_t)(r * 1000), 2000000, 0 };

	return e;
}

static struct world *new_world(int chunk_log2)
{
	struct world *w = NULL;

	assert_int_equal(world_create(FP, SEED, chunk_log2, &w), 0);
	return w;
}

static uint64_t version(const struct world *w, int32_t cx, int32_t cz)
{
	struct world_chunk c;

	world_chunk(w, cx, cz, &c);
	return c.version;
}

static void apply(struct world *w, const struct edit *e, size_t n,
		  struct world_batch *b)
{
	assert_int_equal(world_apply(w, world_seq(w) + 1, e, n, b), 0);
}

static void test_world_edit_on_a_corner_touches_four_chunks(void **state)
{
	struct world *w = new_world(8);
	struct edit e = raise_at(256, 256, 10);
	struct world_batch b;
	static const int32_t want[] = { 0, 0, 1, 0, 0, 1, 1, 1 };
	int32_t cx, cz;

	(void)state;
	apply(w, &e, 1, &b);
	assert_int_equal(b.first_seq, 1);
	assert_int_equal(b.last_seq, 1);
	assert_int_equal(b.nchunks, 4);
	assert_memory_equal(b.chunks, want, sizeof(want));
	for (cz = -2; cz <= 3; cz++)
		for (cx = -2; cx <= 3; cx++)
			assert_int_equal(version(w, cx, cz),
					 (cx == 0 || cx == 1) && (cz == 0 || cz == 1));
	assert_int_equal(world_chunks(w), 4);
	world_destroy(w);
}

static void test_world_indexes_negative_coordinates_and_far_chunks(void **state)
{
	struct world *w = new_world(8);
	struct edit e[3] = { raise_at(-1, -1, 0.5), raise_at(-256, 0.5, 0.25),
			     raise_at(-549755813887.0, 549755813887.0, 1) };
	struct world_batch b;

	(void)state;
	apply(w, e, 3, &b);
	assert_int_equal(version(w, -1, -1), 1);
	assert_int_equal(version(w, 0, 0), 0);
	assert_int_equal(version(w, -1, 0), 2); /* on the x border: both sides */
	assert_int_equal(version(w, -2, 0), 2);
	assert_int_equal(version(w, -2147483648, 2147483647), 3);
	assert_int_equal(b.nchunks, 4);
	world_destroy(w);
}

static void test_world_chunk_version_is_its_last_touching_seq(void **state)
{
	struct world *w = new_world(8);
	struct edit a = raise_at(100, 100, 20), c = raise_at(5000, 5000, 20);
	struct edit two[2] = { raise_at(120, 100, 20), raise_at(356, 100, 300) };

	(void)state;
	apply(w, &a, 1, NULL);                   /* seq 1: (0,0) */
	apply(w, &c, 1, NULL);                   /* seq 2: (19,19) */
	apply(w, two, 2, NULL);                  /* seq 3: (0,0); 4: a wide one */
	assert_int_equal(world_seq(w), 4);
	assert_int_equal(version(w, 0, 0), 4);
	assert_int_equal(version(w, 19, 19), 2);
	assert_int_equal(version(w, 2, 0), 4);
	assert_int_equal(version(w, 3, 3), 0);
	world_destroy(w);
}

/* A fixed pseudo-random batch of edits around the origin. */
static void random_edits(struct edit *e, size_t n, uint64_t *x)
{
	size_t k;

	for (k = 0; k < n; k++) {
		*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
		e[k] = raise_at((double)(int64_t)(*x % 2000000) / 1000.0 - 1000.0,
				(double)(int64_t)((*x >> 21) % 2000000) / 1000.0 - 1000.0,
				1.0 + (double)((*x >> 42) % 300000) / 1000.0);
		e[k].op = (uint8_t)((*x >> 60) % 2);
		e[k].falloff = (uint8_t)((*x >> 62) % 2);
	}
}

static void test_world_hashes_equal_a_recomputation_from_the_log(void **state)
{
	struct world *w = new_world(8);
	uint64_t x = 88172645463325252ULL, h;
	struct edit e[37];
	int32_t cx, cz;
	size_t i, k, n;
	uint64_t s;

	(void)state;
	for (i = 0; i < 20; i++) {
		n = 1 + i % 37;
		random_edits(e, n, &x);
		apply(w, e, n, NULL);
	}
	h = edit_hash_start(FP, SEED);
	for (s = 1; s <= world_seq(w); s++)
		h = edit_hash_next(h, s, world_edit(w, s));
	assert_int_equal(world_hash(w), h);
	assert_null(world_edit(w, world_seq(w) + 1));
	assert_null(world_edit(w, 0));
	for (cz = -6; cz <= 5; cz++)
		for (cx = -6; cx <= 5; cx++) {
			struct world_chunk c;
			struct edit *v;
			uint64_t hc = 0, last = 0, cnt = 0;

			for (s = 1; s <= world_seq(w); s++)
				if (edit_touches(world_edit(w, s), 8, cx, cz)) {
					hc = edit_hash_next(hc, s, world_edit(w, s));
					last = s;
					cnt++;
				}
			world_chunk(w, cx, cz, &c);
			assert_int_equal(c.hash, hc);
			assert_int_equal(c.version, last);
			assert_int_equal(c.nedits, cnt);
			assert_int_equal(world_chunk_edits(w, cx, cz, &v, &n), 0);
			assert_int_equal(n, cnt);
			for (k = 0, s = 1; s <= world_seq(w); s++)
				if (edit_touches(world_edit(w, s), 8, cx, cz))
					assert_memory_equal(&v[k++], world_edit(w, s), sizeof(*v));
			free(v);
		}
	world_destroy(w);
}

static void test_world_hash_chain_starts_from_fingerprint_and_seed(void **state)
{
	struct world *w = new_world(8);
	struct edit e = raise_at(1, 2, 3);
	uint64_t h0 = edit_hash_start(FP, SEED);

	(void)state;
	assert_int_equal(world_hash(w), h0);
	assert_int_equal(world_seq(w), 0);
	apply(w, &e, 1, NULL);
	assert_int_equal(world_hash(w), edit_hash_next(h0, 1, &e));
	world_destroy(w);
}

static void test_world_reservations_apply_in_order_and_cancel(void **state)
{
	struct world *w = new_world(8);
	struct edit a[2] = { raise_at(1, 1, 1), raise_at(2, 2, 1) }, c = raise_at(3, 3, 1);
	uint64_t f1, f2, f3;
	struct world_batch b;

	(void)state;
	assert_int_equal(world_reserve(w, a, 2, &f1), 0);
	assert_int_equal(world_reserve(w, &c, 1, &f2), 0);
	assert_int_equal(f1, 1);
	assert_int_equal(f2, 3);
	assert_int_equal(world_apply(w, f2, &c, 1, NULL), ERR_INVAL); /* out of order */
	assert_int_equal(world_apply(w, f1, a, 2, NULL), 0);
	world_cancel(w, &c, 1, f2);
	assert_int_equal(world_reserve(w, &c, 1, &f3), 0);
	assert_int_equal(f3, 3);
	assert_int_equal(world_apply(w, f3, &c, 1, &b), 0);
	assert_int_equal(b.first_seq, 3);
	assert_int_equal(world_seq(w), 3);
	assert_int_equal(world_reserve(w, &c, 1, &f3), 0);
	world_cancel_all(w);
	assert_int_equal(world_reserve(w, &c, 1, &f3), 0);
	assert_int_equal(f3, 4);
	world_destroy(w);
}

static void test_world_bounds_the_chunks_of_an_edit_and_a_batch(void **state)
{
	struct world *small = new_world(4), *w = new_world(8);
	struct edit big = raise_at(0, 0, 4096), *many;
	size_t bad = 99, k;
	uint64_t first;

	(void)state;
	assert_int_equal(world_check(w, &big, 1, &bad), 0);
	assert_int_equal(world_check(small, &big, 1, &bad), ERR_TOOBIG);
	assert_int_equal(bad, 0);
	assert_int_equal(world_reserve(small, &big, 1, &first), ERR_TOOBIG);
	assert_int_equal(world_apply(small, 1, &big, 1, NULL), ERR_TOOBIG);
	assert_int_equal(world_seq(small), 0);
	many = calloc(EDIT_BATCH_MAX, sizeof(*many));
	assert_non_null(many);
	for (k = 0; k < EDIT_BATCH_MAX; k++)
		many[k] = big;
	assert_int_equal(world_check(w, many, EDIT_BATCH_MAX, &bad), ERR_TOOBIG);
	assert_int_equal(bad, EDIT_BATCH_MAX);
	assert_int_equal(world_check(w, many, 16, &bad), 0);
	free(many);
	world_destroy(small);
	world_destroy(w);
}

static void test_world_finds_the_batches_after_a_seq(void **state)
{
	struct world *w = new_world(8);
	struct edit e[3] = { raise_at(1, 1, 1), raise_at(2, 2, 1), raise_at(3, 3, 1) };
	struct world_batch b;

	(void)state;
	assert_int_equal(world_batch_after(w, 0), 0);
	apply(w, e, 3, NULL);     /* 1..3 */
	apply(w, e, 1, NULL);     /* 4 */
	apply(w, e, 2, NULL);     /* 5..6 */
	assert_int_equal(world_batches(w), 3);
	assert_int_equal(world_batch_after(w, 0), 0);
	assert_int_equal(world_batch_after(w, 2), 0);
	assert_int_equal(world_batch_after(w, 3), 1);
	assert_int_equal(world_batch_after(w, 4), 2);
	assert_int_equal(world_batch_after(w, 6), 3);
	assert_int_equal(world_batch_after(w, 1000), 3);
	world_batch(w, 2, &b);
	assert_int_equal(b.first_seq, 5);
	assert_int_equal(b.last_seq, 6);
	assert_int_equal(b.hash, world_hash(w));
	world_destroy(w);
}

/* The logged payload of one batch of world (gen, seed). */
static size_t payload(const char *gen, uint64_t seed, uint64_t first,
		      const struct edit *e, size_t n, uint8_t *out)
{
	uint8_t wire[4 * EDIT_WIRE_SIZE];
	struct batch b = { .gen = gen, .gen_len = strlen(gen), .seed = seed, .first_seq = first, .count = (uint32_t)n, .edits = wire };
	size_t k, len;

	for (k = 0; k < n; k++)
		edit_encode(&e[k], wire + k * EDIT_WIRE_SIZE);
	assert_int_equal(batch_encode(&b, out, BATCH_MAX, &len), 0);
	return len;
}

static void test_world_map_replays_logged_batches_in_order(void **state)
{
	struct edit e[2] = { raise_at(10, 10, 5), raise_at(-10, 300, 5) };
	static uint8_t buf[BATCH_MAX];
	struct world_map *m;
	struct catalog *cat;
	struct world *w, *w2;
	char err[256];
	int gen, g2;
	size_t len;

	(void)state;
	assert_int_equal(catalog_load(NULL, &cat, err, sizeof(err)), 0);
	assert_int_equal(world_map_create(cat, &m), 0);
	gen = catalog_find(cat, "default", 7);
	assert_true(gen >= 0);
	assert_null(world_map_find(m, gen, 7));
	len = payload("default", 7, 1, e, 2, buf);
	assert_int_equal(world_map_replay(m, buf, len, err, sizeof(err)), 0);
	len = payload("default", 7, 3, e, 1, buf);
	assert_int_equal(world_map_replay(m, buf, len, err, sizeof(err)), 0);
	w = world_map_find(m, gen, 7);
	assert_non_null(w);
	assert_int_equal(world_seq(w), 3);
	assert_int_equal(version(w, -1, 1), 2);
	assert_int_equal(world_hash(w),
			 edit_hash_next(edit_hash_next(edit_hash_next(
				 edit_hash_start(preset_fingerprint(catalog_at(cat, (size_t)gen)), 7),
				 1, &e[0]), 2, &e[1]), 3, &e[0]));
	/* a gap, a repeat, an unknown generator, garbage */
	len = payload("default", 7, 5, e, 1, buf);
	assert_int_equal(world_map_replay(m, buf, len, err, sizeof(err)), ERR_CORRUPT);
	assert_non_null(strstr(err, "follows seq 3"));
	len = payload("default", 7, 3, e, 1, buf);
	assert_int_equal(world_map_replay(m, buf, len, err, sizeof(err)), ERR_CORRUPT);
	len = payload("no-such-gen", 7, 1, e, 1, buf);
	assert_int_equal(world_map_replay(m, buf, len, err, sizeof(err)), ERR_NOTFOUND);
	assert_non_null(strstr(err, "no-such-gen"));
	assert_int_equal(world_map_replay(m, (const uint8_t *)"junk", 4, err, sizeof(err)),
			 ERR_CORRUPT);
	/* worlds are told apart by generator and seed */
	g2 = catalog_find(cat, "alpine", 6);
	assert_true(g2 >= 0);
	assert_int_equal(world_map_get(m, g2, 7, &w2), 0);
	assert_ptr_not_equal(w, w2);
	assert_int_equal(world_map_count(m), 2);
	assert_ptr_equal(world_map_find(m, gen, 7), w);
	world_map_destroy(m);
	catalog_destroy(cat);
}

/* Records of batch version 1 (logs before issue 35) and version 2 (a time
 * and an idempotency key) replay to the same world and world hash. */
static void test_world_map_replays_both_record_versions_alike(void **state)
{
	struct edit e[2] = { raise_at(10, 10, 5), raise_at(-10, 300, 5) };
	static uint8_t v1[BATCH_MAX], v2[BATCH_MAX];
	uint8_t wire[2 * EDIT_WIRE_SIZE], key[BATCH_KEY] = { 1, 2, 3 };
	struct batch b = { .gen = "default", .gen_len = 7, .seed = 9, .first_seq = 1, .count = 2,
			   .edits = wire };
	struct world_map *m1, *m2;
	struct catalog *cat;
	char err[256];
	size_t n1, n2;
	int gen;

	(void)state;
	assert_int_equal(catalog_load(NULL, &cat, err, sizeof(err)), 0);
	assert_int_equal(world_map_create(cat, &m1), 0);
	assert_int_equal(world_map_create(cat, &m2), 0);
	edit_encode(&e[0], wire);
	edit_encode(&e[1], wire + EDIT_WIRE_SIZE);
	assert_int_equal(batch_encode(&b, v1, BATCH_MAX, &n1), 0);
	b.time_ms = 1796000000000ull;
	b.key = key;
	assert_int_equal(batch_encode(&b, v2, BATCH_MAX, &n2), 0);
	assert_int_equal(v1[0], 1);
	assert_int_equal(v2[0], 2);
	assert_int_equal(world_map_replay(m1, v1, n1, err, sizeof(err)), 0);
	assert_int_equal(world_map_replay(m2, v2, n2, err, sizeof(err)), 0);
	gen = catalog_find(cat, "default", 7);
	assert_int_equal(world_seq(world_map_find(m1, gen, 9)), 2);
	assert_int_equal(world_hash(world_map_find(m1, gen, 9)),
			 world_hash(world_map_find(m2, gen, 9)));
	world_map_destroy(m1);
	world_map_destroy(m2);
	catalog_destroy(cat);
}

static void test_world_map_holds_many_worlds(void **state)
{
	struct world_map *m;
	struct catalog *cat;
	struct world *w;
	char err[256];
	uint64_t s;

	(void)state;
	assert_int_equal(catalog_load(NULL, &cat, err, sizeof(err)), 0);
	assert_int_equal(world_map_create(cat, &m), 0);
	for (s = 0; s < 1000; s++)
		assert_int_equal(world_map_get(m, (int)(s % catalog_count(cat)), s * 7919, &w), 0);
	assert_int_equal(world_map_count(m), 1000);
	for (s = 0; s < 1000; s++) {
		w = world_map_find(m, (int)(s % catalog_count(cat)), s * 7919);
		assert_non_null(w);
		assert_int_equal(world_seed(w), s * 7919);
	}
	assert_null(world_map_find(m, 0, 1));
	assert_int_equal(world_map_get(m, -1, 1, &w), ERR_INVAL);
	world_map_destroy(m);
	catalog_destroy(cat);
}

/* Seed of world k of the removal tests. */
static uint64_t seed_of(size_t k)
{
	return (uint64_t)k * 0x9e3779b97f4a7c15ULL;
}

/* Every world k < n is in m exactly when !gone[k]; the map's count and
 * its dense array agree. */
static void assert_map_holds(const struct world_map *m, int ngen, const unsigned char *gone,
			     size_t n)
{
	size_t k, in = 0;

	for (k = 0; k < n; k++) {
		struct world *w = world_map_find(m, (int)(k % (size_t)ngen), seed_of(k));

		if (gone[k]) {
			assert_null(w);
			continue;
		}
		assert_non_null(w);
		assert_int_equal(world_seed(w), seed_of(k));
		assert_int_equal(world_gen(w), (int)(k % (size_t)ngen));
		in++;
	}
	assert_int_equal(world_map_count(m), in);
	for (k = 0; k < world_map_count(m); k++) {
		int gen;
		struct world *w = world_map_at(m, k, &gen);

		assert_ptr_equal(world_map_find(m, gen, world_seed(w)), w);
	}
}

/* Fill a map with n empty worlds, remove them in one of four orders
 * (insertion, reverse, a stride prime to n, every other one), checking
 * the rest as it goes, then put them all back. */
static void remove_in_order(const struct catalog *cat, size_t n, int order)
{
	static unsigned char gone[3000];
	size_t k, ngen = catalog_count(cat), step = n == 31 ? 7 : 1237;
	size_t count = order == 3 ? n / 2 : n - 1;
	struct world_map *m;
	struct world *w;

	assert_true(n <= sizeof(gone));
	assert_int_equal(world_map_create(cat, &m), 0);
	memset(gone, 0, sizeof(gone));
	for (k = 0; k < n; k++)
		assert_int_equal(world_map_get(m, (int)(k % ngen), seed_of(k), &w), 0);
	assert_int_equal(world_map_count(m), n);
	for (k = 0; k < count; k++) {
		size_t i = order == 0 ? k : order == 1 ? n - 1 - k :
			   order == 2 ? (k * step) % n : 2 * k;

		assert_int_equal(world_map_remove(m, (int)(i % ngen), seed_of(i)), 0);
		gone[i] = 1;
		assert_int_equal(world_map_remove(m, (int)(i % ngen), seed_of(i)), ERR_NOTFOUND);
		if (n < 100 || k % 97 == 0)
			assert_map_holds(m, (int)ngen, gone, n);
	}
	assert_map_holds(m, (int)ngen, gone, n);
	for (k = 0; k < n; k++) { /* each comes back once, empty */
		assert_int_equal(world_map_get(m, (int)(k % ngen), seed_of(k), &w), 0);
		assert_int_equal(world_seq(w), 0);
		gone[k] = 0;
	}
	assert_map_holds(m, (int)ngen, gone, n);
	world_map_destroy(m);
}

static void test_world_map_removes_empty_worlds_in_any_order(void **state)
{
	struct catalog *cat;
	char err[256];
	int order;

	(void)state;
	assert_int_equal(catalog_load(NULL, &cat, err, sizeof(err)), 0);
	/* 31 worlds fill the smallest table (64 slots) to nearly half: long
	 * clusters, some wrapping around its end; 3000 grow it to 8192 */
	for (order = 0; order < 4; order++) {
		remove_in_order(cat, 31, order);
		remove_in_order(cat, 3000, order);
	}
	catalog_destroy(cat);
}

static void test_world_map_keeps_worlds_that_are_not_empty(void **state)
{
	struct edit e = raise_at(10, 10, 5);
	struct world_map *m;
	struct catalog *cat;
	struct world *w, *v;
	uint64_t first;
	char err[256];
	int x;

	(void)state;
	assert_int_equal(catalog_load(NULL, &cat, err, sizeof(err)), 0);
	assert_int_equal(world_map_create(cat, &m), 0);
	assert_int_equal(world_map_remove(m, 0, 1), ERR_NOTFOUND);
	/* reserved: busy; cancelled: empty again, removable */
	assert_int_equal(world_map_get(m, 0, 1, &w), 0);
	assert_true(world_empty(w));
	assert_int_equal(world_reserve(w, &e, 1, &first), 0);
	assert_false(world_empty(w));
	assert_int_equal(world_map_remove(m, 0, 1), ERR_BUSY);
	world_cancel(w, &e, 1, first);
	assert_true(world_empty(w));
	/* a subscriber (world_user()) keeps it */
	*world_user(w) = &x;
	assert_int_equal(world_map_remove(m, 0, 1), ERR_BUSY);
	*world_user(w) = NULL;
	/* an applied edit keeps it for good */
	assert_int_equal(world_map_get(m, 0, 2, &v), 0);
	assert_int_equal(world_apply(v, 1, &e, 1, NULL), 0);
	assert_int_equal(world_map_remove(m, 0, 2), ERR_BUSY);
	/* a world restored from a snapshot too */
	assert_int_equal(world_map_get(m, 0, 3, &v), 0);
	assert_int_equal(world_restore(v, 5, 77), 0);
	assert_int_equal(world_map_remove(m, 0, 3), ERR_BUSY);
	assert_int_equal(world_map_remove(m, 0, 1), 0);
	assert_null(world_map_find(m, 0, 1));
	assert_non_null(world_map_find(m, 0, 2));
	assert_non_null(world_map_find(m, 0, 3));
	assert_int_equal(world_map_count(m), 2);
	world_map_destroy(m);
	catalog_destroy(cat);
}

static void test_world_restored_from_a_snapshot_goes_on_as_the_replayed_one(void **state)
{
	struct edit e[6] = { raise_at(10, 10, 5), raise_at(300, 10, 40), raise_at(-5, -5, 30),
			     raise_at(12, 12, 3), raise_at(600, 600, 10), raise_at(11, 9, 2) };
	struct world *whole = new_world(8), *w = new_world(8);
	struct world_chunk a, b;
	struct edit *got;
	size_t i, n;
	int32_t cx, cz;

	(void)state;
	apply(whole, e, 3, NULL); /* the history the snapshot folds in */
	assert_int_equal(world_restore(w, world_seq(whole), world_hash(whole)), 0);
	for (i = 0; i < world_chunks(whole); i++) {
		world_chunk_at(whole, i, &cx, &cz, &a);
		assert_int_equal(world_restore_chunk(w, cx, cz, &a), 0);
	}
	assert_int_equal(world_restore_chunk(w, cx, cz, &a), ERR_INVAL); /* twice */
	assert_int_equal(world_base(w), 3);
	assert_int_equal(world_seq(w), 3);
	assert_null(world_edit(w, 3));
	assert_int_equal(world_batches(w), 0);

	apply(whole, e + 3, 3, NULL);
	apply(w, e + 3, 3, NULL);
	assert_int_equal(world_seq(w), 6);
	assert_int_equal(world_hash(w), world_hash(whole));
	assert_int_equal(world_chunks(w), world_chunks(whole));
	for (i = 0; i < world_chunks(whole); i++) {
		world_chunk_at(whole, i, &cx, &cz, &a);
		world_chunk(w, cx, cz, &b);
		assert_int_equal(b.version, a.version);
		assert_int_equal(b.hash, a.hash);
		assert_int_equal(b.nedits, a.nedits);
	}
	/* only the edits after the snapshot are kept, in order */
	assert_non_null(world_edit(w, 4));
	assert_memory_equal(world_edit(w, 4), &e[3], sizeof(e[3]));
	assert_int_equal(world_chunk_edits(w, 0, 0, &got, &n), 0);
	assert_int_equal(n, 2); /* e[3] and e[5]; e[0] and e[2] are folded */
	assert_memory_equal(&got[0], &e[3], sizeof(e[3]));
	assert_memory_equal(&got[1], &e[5], sizeof(e[5]));
	free(got);
	assert_int_equal(world_around_edits(w, 0, 0, &got, &n), 0);
	assert_int_equal(n, 2);
	free(got);
	assert_int_equal(world_batch_after(w, 0), 0);
	/* a restore needs an empty world */
	assert_int_equal(world_restore(w, 9, 0), ERR_INVAL);
	world_destroy(whole);
	world_destroy(w);
}

/* A shared log: other nodes' batches land between this node's reserved
 * ones, which the log may renumber; a reservation it refused is released
 * in any order. */
static void test_world_map_follows_other_writers_between_its_own_reservations(void **state)
{
	struct edit a[2] = { raise_at(1, 1, 1), raise_at(2, 2, 1) }, c = raise_at(3, 3, 1);
	struct edit theirs[3] = { raise_at(9, 9, 1), raise_at(8, 8, 1), raise_at(7, 7, 1) };
	static uint8_t buf[BATCH_MAX];
	struct world_map *m;
	struct catalog *cat;
	struct world *w;
	struct batch b;
	uint64_t f1, f2, f3, h;
	char err[256];
	int gen;

	(void)state;
	assert_int_equal(catalog_load(NULL, &cat, err, sizeof(err)), 0);
	assert_int_equal(world_map_create(cat, &m), 0);
	gen = catalog_find(cat, "default", 7);
	assert_int_equal(world_map_get(m, gen, 7, &w), 0);
	assert_int_equal(world_reserve(w, a, 2, &f1), 0);
	assert_int_equal(world_reserve(w, &c, 1, &f2), 0);
	assert_int_equal(f2, 3);
	/* another node's 1..3, then this node's c as 4 */
	assert_int_equal(batch_decode(buf, payload("default", 7, 1, theirs, 3, buf), &b), 0);
	assert_int_equal(world_map_follow(m, &b, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(batch_decode(buf, payload("default", 7, 4, &c, 1, buf), &b), 0);
	assert_int_equal(world_map_follow(m, &b, 1, NULL, err, sizeof(err)), 0);
	assert_int_equal(world_seq(w), 4);
	h = edit_hash_start(preset_fingerprint(catalog_at(cat, (size_t)gen)), 7);
	h = edit_hash_next(edit_hash_next(edit_hash_next(h, 1, &theirs[0]), 2, &theirs[1]),
			   3, &theirs[2]);
	assert_int_equal(world_hash(w), edit_hash_next(h, 4, &c));
	/* a was refused: its room goes back; later reservations go on */
	world_release(w, a, 2, f1);
	assert_int_equal(world_reserve(w, &c, 1, &f3), 0);
	assert_int_equal(f3, 5);
	world_release(w, &c, 1, f3);
	assert_int_equal(world_reserve(w, &c, 1, &f3), 0);
	assert_int_equal(f3, 5); /* the latest one gives its numbers back */
	assert_int_equal(batch_decode(buf, payload("default", 7, 5, &c, 1, buf), &b), 0);
	assert_int_equal(world_map_follow(m, &b, 1, NULL, err, sizeof(err)), 0);
	assert_int_equal(world_seq(w), 5);
	world_map_destroy(m);
	catalog_destroy(cat);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_world_edit_on_a_corner_touches_four_chunks),
		cmocka_unit_test(test_world_indexes_negative_coordinates_and_far_chunks),
		cmocka_unit_test(test_world_chunk_version_is_its_last_touching_seq),
		cmocka_unit_test(test_world_hashes_equal_a_recomputation_from_the_log),
		cmocka_unit_test(test_world_hash_chain_starts_from_fingerprint_and_seed),
		cmocka_unit_test(test_world_reservations_apply_in_order_and_cancel),
		cmocka_unit_test(test_world_bounds_the_chunks_of_an_edit_and_a_batch),
		cmocka_unit_test(test_world_finds_the_batches_after_a_seq),
		cmocka_unit_test(test_world_map_replays_logged_batches_in_order),
		cmocka_unit_test(test_world_map_replays_both_record_versions_alike),
		cmocka_unit_test(test_world_map_follows_other_writers_between_its_own_reservations),
		cmocka_unit_test(test_world_map_holds_many_worlds),
		cmocka_unit_test(test_world_map_removes_empty_worlds_in_any_order),
		cmocka_unit_test(test_world_map_keeps_worlds_that_are_not_empty),
		cmocka_unit_test(test_world_restored_from_a_snapshot_goes_on_as_the_replayed_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
