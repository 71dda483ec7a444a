/*
 * test_seed.c - decimal and text seeds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "seed.h"

static int parse(const char *s, uint64_t *v)
{
	return seed_parse(s, strlen(s), v);
}

static void test_seed_parses_decimal_up_to_u64_max(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse("0", &v), 0);
	assert_true(v == 0);
	assert_int_equal(parse("42", &v), 0);
	assert_true(v == 42);
	assert_int_equal(parse("0042", &v), 0);
	assert_true(v == 42);
	assert_int_equal(parse("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
}

static void test_seed_rejects_decimal_above_u64_max(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse("18446744073709551616", &v), ERR_RANGE);
	assert_int_equal(parse("99999999999999999999", &v), ERR_RANGE);
	assert_int_equal(parse("184467440737095516150", &v), ERR_RANGE);
}

static void test_seed_hashes_text_with_xxh3(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse("my-world_1", &v), 0);
	assert_true(v == XXH3_64bits("my-world_1", 10));
	assert_int_equal(parse("A", &v), 0);
	assert_true(v == XXH3_64bits("A", 1));
	assert_int_equal(parse("1e5", &v), 0);   /* not all digits: text */
	assert_true(v == XXH3_64bits("1e5", 3));
}

static void test_seed_rejects_bad_text(void **state)
{
	char long_seed[66];
	uint64_t v;

	(void)state;
	memset(long_seed, 'a', 65);
	long_seed[65] = '\0';
	assert_int_equal(parse("", &v), ERR_INVAL);
	assert_int_equal(parse(long_seed, &v), ERR_INVAL);
	long_seed[64] = '\0';
	assert_int_equal(parse(long_seed, &v), 0);
	assert_int_equal(parse("a b", &v), ERR_INVAL);
	assert_int_equal(parse("a/b", &v), ERR_INVAL);
	assert_int_equal(parse("-1.5", &v), ERR_INVAL);
	assert_int_equal(seed_parse("ab\0c", 4, &v), ERR_INVAL);
	assert_int_equal(seed_parse(NULL, 3, &v), ERR_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_parses_decimal_up_to_u64_max),
		cmocka_unit_test(test_seed_rejects_decimal_above_u64_max),
		cmocka_unit_test(test_seed_hashes_text_with_xxh3),
		cmocka_unit_test(test_seed_rejects_bad_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
