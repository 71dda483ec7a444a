/*
 * test_batch.c - the canonical record of an edit batch (common/batch.c):
 * it round-trips, and truncated, mis-versioned or out-of-range records are
 * refused; version 2 carries the log's time and an idempotency key, and a
 * batch with neither is written as version 1, byte for byte as before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "batch.h"
#include "edit.h"
#include "err.h"

static void test_batch_round_trips_and_rejects_bad_framing(void **state)
{
	uint8_t edits[2 * EDIT_WIRE_SIZE], buf[BATCH_MAX];
	struct edit e = { EDIT_RAISE, EDIT_SMOOTH, -5000, 7000, 3000, 250000, 0 };
	struct batch b = { .gen = "default", .gen_len = 7, .seed = 42, .first_seq = 100, .count = 2, .edits = edits }, d;
	size_t n;

	(void)state;
	edit_encode(&e, edits);
	edit_encode(&e, edits + EDIT_WIRE_SIZE);
	assert_int_equal(batch_encode(&b, buf, sizeof(buf), &n), 0);
	assert_int_equal(n, batch_size(&b));
	assert_int_equal(n, 2 + 7 + 20 + 2 * EDIT_WIRE_SIZE);
	assert_int_equal(batch_decode(buf, n, &d), 0);
	assert_int_equal(d.gen_len, 7);
	assert_memory_equal(d.gen, "default", 7);
	assert_int_equal(d.seed, 42);
	assert_int_equal(d.first_seq, 100);
	assert_int_equal(d.count, 2);
	assert_memory_equal(d.edits, edits, sizeof(edits));

	assert_int_equal(batch_decode(buf, n - 1, &d), ERR_CORRUPT);
	assert_int_equal(batch_decode(buf, 5, &d), ERR_CORRUPT);
	buf[0] = 9;
	assert_int_equal(batch_decode(buf, n, &d), ERR_VERSION);
	assert_int_equal(batch_encode(&b, buf, n - 1, &n), ERR_TOOBIG);
	b.count = 0;
	assert_int_equal(batch_encode(&b, buf, sizeof(buf), &n), ERR_INVAL);
}

static void test_batch_version_2_carries_time_and_key(void **state)
{
	uint8_t edits[EDIT_WIRE_SIZE], buf[BATCH_MAX], v1[BATCH_MAX], key[BATCH_KEY];
	struct edit e = { EDIT_LOWER, EDIT_SMOOTH, 100, -200, 3000, 50000, 0 };
	struct batch b = { .gen = "alpine", .gen_len = 6, .seed = 7, .first_seq = 3, .count = 1, .edits = edits }, d;
	size_t n, n1, k;

	(void)state;
	edit_encode(&e, edits);
	assert_int_equal(batch_encode(&b, v1, sizeof(v1), &n1), 0);
	assert_int_equal(v1[0], 1);
	for (k = 0; k < BATCH_KEY; k++)
		key[k] = (uint8_t)(0xa0 + k);
	b.time_ms = 1796000000123ull;
	assert_int_equal(batch_encode(&b, buf, sizeof(buf), &n), 0);
	assert_int_equal(buf[0], 2);
	assert_int_equal(n, n1 + 9);
	assert_memory_equal(buf + 1, v1 + 1, n1 - 1); /* the same up to the edits */
	assert_int_equal(batch_decode(buf, n, &d), 0);
	assert_int_equal(d.time_ms, 1796000000123ull);
	assert_null(d.key);
	b.key = key;
	assert_int_equal(batch_encode(&b, buf, sizeof(buf), &n), 0);
	assert_int_equal(n, n1 + 9 + BATCH_KEY);
	assert_int_equal(n, batch_size(&b));
	assert_int_equal(batch_decode(buf, n, &d), 0);
	assert_int_equal(d.first_seq, 3);
	assert_int_equal(d.time_ms, 1796000000123ull);
	assert_non_null(d.key);
	assert_memory_equal(d.key, key, BATCH_KEY);
	assert_int_equal(batch_decode(buf, n - 1, &d), ERR_CORRUPT);
	buf[n1 + 8] = 2; /* an unknown flag */
	assert_int_equal(batch_decode(buf, n, &d), ERR_CORRUPT);
	buf[n1 + 8] = 0; /* no key, yet its bytes follow */
	assert_int_equal(batch_decode(buf, n, &d), ERR_CORRUPT);
	b.key = NULL, b.time_ms = 0; /* the library's records: version 1 */
	assert_int_equal(batch_encode(&b, buf, sizeof(buf), &n), 0);
	assert_int_equal(n, n1);
	assert_memory_equal(buf, v1, n1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_round_trips_and_rejects_bad_framing),
		cmocka_unit_test(test_batch_version_2_carries_time_and_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
