/*
 * test_idem.c - the remembered idempotency keys (server/worlds/idem.c): a key is
 * found with what its batch did; entries leave oldest first past the
 * window (by the batches' own times) or the most; a key logged again
 * replaces its entry; the index survives many removals (backward shift)
 * and growth, checked against a plain array of what should be there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "le.h"
#include "worlds/idem.h"

/* Entry n: a key whose probe start collides every 4 keys (low bits). */
static struct idem_entry entry(uint64_t n, uint64_t ms)
{
	struct idem_entry e = { .first_seq = n, .count = 1, .hash = ~n, .time_ms = ms };

	le_put64(e.key, (n % 4) * 1024);  /* same start for n = 0, 4, 8, ... */
	le_put64(e.key + 8, n);
	le_put64(e.body, n * 3);
	return e;
}

static void test_idem_finds_and_forgets_by_time(void **state)
{
	struct idem *t;
	struct idem_entry e;
	uint64_t n;

	(void)state;
	assert_int_equal(idem_create(1000, 10000, &t), 0);
	for (n = 1; n <= 100; n++) {
		e = entry(n, n * 1000);
		assert_int_equal(idem_add(t, &e), 0);
	}
	/* window 10 s, newest 100 s: 90..100 stay */
	assert_int_equal(idem_count(t), 11);
	assert_null(idem_find(t, entry(89, 0).key));
	for (n = 90; n <= 100; n++) {
		const struct idem_entry *f = idem_find(t, entry(n, 0).key);

		assert_non_null(f);
		assert_int_equal(f->first_seq, n);
		assert_int_equal(f->hash, ~n);
	}
	assert_int_equal(idem_at(t, 0)->first_seq, 90);
	idem_clear(t);
	assert_int_equal(idem_count(t), 0);
	assert_null(idem_find(t, entry(100, 0).key));
	idem_destroy(t);
}

static void test_idem_keeps_at_most_max_and_replaces(void **state)
{
	struct idem *t;
	struct idem_entry e;
	uint64_t n;

	(void)state;
	assert_int_equal(idem_create(50, UINT64_MAX / 2, &t), 0);
	for (n = 1; n <= 5000; n++) {
		e = entry(n, 7);
		assert_int_equal(idem_add(t, &e), 0);
		assert_true(idem_count(t) <= 50);
	}
	for (n = 1; n <= 5000; n++)
		assert_int_equal(idem_find(t, entry(n, 0).key) != NULL, n > 4950);
	/* a key again: its entry is replaced, and moves to the newest end */
	e = entry(4960, 7);
	e.first_seq = 9999;
	assert_int_equal(idem_add(t, &e), 0);
	assert_int_equal(idem_count(t), 50);
	assert_int_equal(idem_find(t, e.key)->first_seq, 9999);
	assert_int_equal(idem_at(t, 49)->first_seq, 9999);
	assert_int_equal(idem_at(t, 0)->first_seq, 4951);
	for (n = 4951; n <= 5000; n++)
		assert_non_null(idem_find(t, entry(n, 0).key));
	assert_true(idem_bytes(t) >= 50 * sizeof(struct idem_entry));
	idem_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idem_finds_and_forgets_by_time),
		cmocka_unit_test(test_idem_keeps_at_most_max_and_replaces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
