/*
 * test_selfcheck.c - the start-up check of the world (common/selfcheck.h):
 * this build passes it, a wrong hash or an unknown preset fails it with a
 * message naming the tile and both hashes. The time of the check is
 * printed (not asserted: timings belong to benchmarks).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "selfcheck.h"

static void test_this_build_passes_the_start_up_check(void **state)
{
	struct timespec a, b;
	char msg[512] = "";
	int rc;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &a);
	rc = selfcheck_run(msg, sizeof(msg));
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (rc)
		fail_msg("%s", msg);
	print_message("selfcheck_run: %.2f ms\n",
		      (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
}

static void test_a_wrong_hash_names_the_tile_and_both_hashes(void **state)
{
	static const struct selfcheck_tile good = {
		"default", 0, 0, 0, 0, 0x473d0381e8c1c52fULL,
	};
	struct selfcheck_tile v[2] = { good, good };
	char msg[512] = "";

	(void)state;
	assert_int_equal(selfcheck_tiles(v, 2, msg, sizeof(msg)), 0);
	v[1].hash ^= 1;
	assert_int_equal(selfcheck_tiles(v, 2, msg, sizeof(msg)), ERR_CORRUPT);
	assert_non_null(strstr(msg, "tile default seed 0 lod 0 (0, 0)"));
	assert_non_null(strstr(msg, "473d0381e8c1c52f"));
	assert_non_null(strstr(msg, "473d0381e8c1c52e"));
	assert_non_null(strstr(msg, "flags"));
}

static void test_an_unknown_preset_or_lod_fails(void **state)
{
	struct selfcheck_tile v = { "no-such-preset", 0, 0, 0, 0, 0 };
	char msg[512] = "";

	(void)state;
	assert_int_equal(selfcheck_tiles(&v, 1, msg, sizeof(msg)), ERR_NOTFOUND);
	assert_non_null(strstr(msg, "no-such-preset"));
	v.preset = "default";
	v.lod = 99;
	assert_int_equal(selfcheck_tiles(&v, 1, msg, sizeof(msg)), ERR_INVAL);
	assert_non_null(strstr(msg, "lod 99"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_this_build_passes_the_start_up_check),
		cmocka_unit_test(test_a_wrong_hash_names_the_tile_and_both_hashes),
		cmocka_unit_test(test_an_unknown_preset_or_lod_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
