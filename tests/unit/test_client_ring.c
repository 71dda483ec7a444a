/*
 * test_client_ring.c - tests of the client's pure parts: the LOD rule and
 * chunk sets (client-sample/ring.c), and the server API as the client sees
 * it: URLs, JSON and bundle indexes (client-sample/api.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../client-sample/api.h"
#include "../client-sample/ring.h"
#include "err.h"

static const struct ring_params defaults = {
	.chunk_log2 = 8, .max_lod = 8, .d0 = 256, .lmax = 6, .radius = 1024,
};

/* ---- ring ---- */

static void test_ring_lod_follows_floor_log2_of_distance(void **state)
{
	const struct ring_params *p = &defaults;

	(void)state;
	assert_int_equal(ring_lod(p, 0), 0);
	assert_int_equal(ring_lod(p, 255.9), 0);
	assert_int_equal(ring_lod(p, 256), 0);   /* log2(1) = 0 */
	assert_int_equal(ring_lod(p, 511.9), 0);
	assert_int_equal(ring_lod(p, 512), 1);
	assert_int_equal(ring_lod(p, 1023.9), 1);
	assert_int_equal(ring_lod(p, 1024), 2);
	assert_int_equal(ring_lod(p, 256.0 * 64), 6);
	assert_int_equal(ring_lod(p, 1e12), 6); /* Lmax */
}

static void test_ring_lod_is_capped_by_the_generator(void **state)
{
	struct ring_params p = defaults;

	(void)state;
	p.max_lod = 3;
	assert_int_equal(ring_lod(&p, 1e9), 3);
	p.max_lod = 8;
	p.lmax = 0;
	assert_int_equal(ring_lod(&p, 1e9), 0);
}

static void test_ring_rect_is_half_open(void **state)
{
	struct ring_rect r;

	(void)state;
	assert_int_equal(ring_rect_of(&defaults, 0, 0, 512, 256, &r), 0);
	assert_int_equal(r.cx0, 0);
	assert_int_equal(r.cx1, 1);   /* chunk 2 starts at 512: not needed */
	assert_int_equal(r.cz1, 0);
	assert_int_equal(ring_rect_of(&defaults, -1, -257, 1, -255, &r), 0);
	assert_int_equal(r.cx0, -1);
	assert_int_equal(r.cx1, 0);
	assert_int_equal(r.cz0, -2);
	assert_int_equal(r.cz1, -1);
}

static void test_ring_rect_rejects_coordinates_beyond_int32(void **state)
{
	struct ring_rect r;
	double far = 256.0 * 2147483648.0;

	(void)state;
	assert_int_equal(ring_rect_of(&defaults, far, 0, far + 10, 10, &r),
			 ERR_RANGE);
	assert_int_equal(ring_rect_of(&defaults, far - 512, 0, far - 1, 10, &r),
			 0);
	assert_int_equal(r.cx1, INT32_MAX);
}

static void test_ring_list_is_sorted_by_ring_then_distance(void **state)
{
	size_t cap = (size_t)ring_span(&defaults) * ring_span(&defaults);
	struct ring_chunk *list = calloc(cap, sizeof(*list));
	long n = ring_list(&defaults, 100, -50, list, cap);

	(void)state;
	/* [-924, 1124) x [-1074, 974): cx -4..4, cz -5..3 */
	assert_int_equal(n, 81);
	assert_int_equal(list[0].cx, 0);
	assert_int_equal(list[0].cz, -1);
	assert_int_equal(list[0].ring, 0);
	assert_int_equal(list[0].lod, 0);
	for (long k = 1; k < n; k++) {
		assert_true(list[k].ring >= list[k - 1].ring);
		if (list[k].ring == list[k - 1].ring)
			assert_true(list[k].d >= list[k - 1].d);
	}
	assert_int_equal(list[n - 1].ring, 4);
	free(list);
}

static void test_ring_span_bounds_every_square(void **state)
{
	struct ring_params p = defaults;
	size_t cap;
	struct ring_chunk *list;

	(void)state;
	p.radius = 300;
	cap = (size_t)ring_span(&p) * ring_span(&p);
	list = calloc(cap, sizeof(*list));
	for (double x = -300; x < 300; x += 7.5)
		assert_true(ring_list(&p, x, x * 0.7, list, cap) > 0);
	assert_int_equal(ring_list(&p, 0, 0, list, 3), ERR_RANGE);
	free(list);
}

static void test_ring_check_rejects_bad_params(void **state)
{
	struct ring_params p = defaults;

	(void)state;
	assert_int_equal(ring_check(&p), 0);
	p.d0 = 0;
	assert_int_equal(ring_check(&p), ERR_INVAL);
	p = defaults;
	p.chunk_log2 = 3;
	assert_int_equal(ring_check(&p), ERR_INVAL);
	p = defaults;
	p.max_lod = 9;
	assert_int_equal(ring_check(&p), ERR_INVAL);
}

/* ---- bundle ---- */

static void put32(uint8_t *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (uint8_t)(v >> (8 * k));
}

/* A bundle of two "tiles" (any bytes) for (3, -1) and (4, -1). */
static size_t make_bundle(uint8_t *b)
{
	memset(b, 0, 64);
	memcpy(b, API_BUNDLE_MAGIC, 4);
	b[4] = API_BUNDLE_VERSION;
	put32(b + 8, 2);
	put32(b + 16, 3);
	put32(b + 20, (uint32_t)-1);
	put32(b + 24, 48);
	put32(b + 28, 5);
	put32(b + 32, 4);
	put32(b + 36, (uint32_t)-1);
	put32(b + 40, 53);
	put32(b + 44, 7);
	memcpy(b + 48, "aaaaabbbbbbb", 12);
	return 60;
}

static void test_bundle_parse_reads_the_index(void **state)
{
	uint8_t b[64];
	struct api_bundle_entry e[4];
	size_t n = make_bundle(b), count = 0;

	(void)state;
	assert_int_equal(api_bundle_parse(b, n, e, 4, &count), 0);
	assert_int_equal(count, 2);
	assert_int_equal(e[0].cx, 3);
	assert_int_equal(e[0].cz, -1);
	assert_int_equal(e[0].len, 5);
	assert_memory_equal(e[0].tile, "aaaaa", 5);
	assert_int_equal(e[1].cx, 4);
	assert_memory_equal(e[1].tile, "bbbbbbb", 7);
}

static void test_bundle_parse_tells_foreign_bodies_from_broken_ones(void **state)
{
	uint8_t b[64];
	struct api_bundle_entry e[4];
	size_t n = make_bundle(b), count;

	(void)state;
	assert_int_equal(api_bundle_parse((const uint8_t *)"TRRN....", 8, e, 4,
				      &count), ERR_MAGIC);
	b[4] = 2;
	assert_int_equal(api_bundle_parse(b, n, e, 4, &count), ERR_VERSION);
	b[4] = 1;
	assert_int_equal(api_bundle_parse(b, n - 1, e, 4, &count), ERR_CORRUPT);
	assert_int_equal(api_bundle_parse(b, 40, e, 4, &count), ERR_TRUNC);
	assert_int_equal(api_bundle_parse(b, n, e, 1, &count), ERR_TOOBIG);
	put32(b + 24, 20); /* a body inside the index */
	assert_int_equal(api_bundle_parse(b, n, e, 4, &count), ERR_CORRUPT);
	put32(b + 24, 48);
	put32(b + 28, 0xffffffffu); /* length past the end, no wrap */
	assert_int_equal(api_bundle_parse(b, n, e, 4, &count), ERR_CORRUPT);
}

/* ---- world ---- */

static void test_world_paths_carry_seed_gen_and_coordinates(void **state)
{
	char buf[200];

	(void)state;
	assert_int_equal(api_tile_path(buf, sizeof(buf), "42", NULL, 3,
					 -7, 2147483647), 0);
	assert_string_equal(buf, "/v1/worlds/42/chunks/3/-7/2147483647");
	assert_int_equal(api_tile_path(buf, sizeof(buf), "my-world", "alpine",
					 0, 0, -1), 0);
	assert_string_equal(buf, "/v1/worlds/my-world/chunks/0/0/-1?gen=alpine");
	assert_int_equal(api_batch_path(buf, sizeof(buf), "42", "mesa", 2,
					  -3, 4, 5, 4), 0);
	assert_string_equal(buf, "/v1/worlds/42/chunks/2?cx0=-3&cz0=4&cx1=5"
			    "&cz1=4&gen=mesa");
	assert_int_equal(api_info_path(buf, 12, "123456789", NULL),
			 ERR_TOOBIG);
}

static void test_world_name_ok_allows_the_seed_charset_only(void **state)
{
	(void)state;
	assert_true(api_name_ok("my-world_2"));
	assert_true(api_name_ok("18446744073709551615"));
	assert_false(api_name_ok(""));
	assert_false(api_name_ok("a b"));
	assert_false(api_name_ok("a/../b"));
	assert_false(api_name_ok("x?gen=y"));
}

static void test_world_parse_reads_the_info_fields(void **state)
{
	const char *j = "{\"seed\":\"42\",\"fingerprint\":\"11560ef66eacfe9f\","
			"\"chunk_size\":256,\"max_lod\":8,\"quantum_um\":10000,"
			"\"edit_seq\":3}";
	struct api_world wi;

	(void)state;
	assert_int_equal(api_world_parse(j, strlen(j), &wi), 0);
	assert_int_equal(wi.chunk_log2, 8);
	assert_int_equal(wi.max_lod, 8);
	assert_true(wi.fingerprint == 0x11560ef66eacfe9full);
	assert_int_equal(wi.quantum_um, 10000);
	assert_int_equal(wi.edit_seq, 3);
	assert_int_equal(api_world_parse("{\"chunk_size\":256}", 18, &wi), ERR_PARSE);
	assert_int_equal(api_world_parse("nope", 4, &wi), ERR_PARSE);
	j = "{\"fingerprint\":\"1\",\"chunk_size\":300,\"max_lod\":2}";
	assert_int_equal(api_world_parse(j, strlen(j), &wi), ERR_RANGE);
}

static void test_world_error_text_reads_error_and_detail(void **state)
{
	const char *j = "{\"error\":\"not found\",\"detail\":\"unknown generator\"}";
	char out[64];

	(void)state;
	api_error_text((const uint8_t *)j, strlen(j), out, sizeof(out));
	assert_string_equal(out, "not found: unknown generator");
	api_error_text((const uint8_t *)"oops\n\x01!", 7, out, sizeof(out));
	assert_string_equal(out, "oops!");
	api_error_text(NULL, 0, out, sizeof(out));
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_lod_follows_floor_log2_of_distance),
		cmocka_unit_test(test_ring_lod_is_capped_by_the_generator),
		cmocka_unit_test(test_ring_rect_is_half_open),
		cmocka_unit_test(test_ring_rect_rejects_coordinates_beyond_int32),
		cmocka_unit_test(test_ring_list_is_sorted_by_ring_then_distance),
		cmocka_unit_test(test_ring_span_bounds_every_square),
		cmocka_unit_test(test_ring_check_rejects_bad_params),
		cmocka_unit_test(test_bundle_parse_reads_the_index),
		cmocka_unit_test(test_bundle_parse_tells_foreign_bodies_from_broken_ones),
		cmocka_unit_test(test_world_paths_carry_seed_gen_and_coordinates),
		cmocka_unit_test(test_world_name_ok_allows_the_seed_charset_only),
		cmocka_unit_test(test_world_parse_reads_the_info_fields),
		cmocka_unit_test(test_world_error_text_reads_error_and_detail),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
