/*
 * test_batch.c - the canonical record of an edit batch (common/batch.c):
 * it round-trips, and truncated, mis-versioned or out-of-range records are
 * refused.
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
	struct batch b = { "default", 7, 42, 100, 2, edits }, d;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_round_trips_and_rejects_bad_framing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
