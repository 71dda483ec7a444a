/*
 * test_edit.c - brush arithmetic, chunk coverage, hash chains, canonical
 * bytes and batch parsing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edit.h"
#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"

/* A flat LOD-lod tile of chunk (cx, cz) at height h quanta (1 cm). */
static void flat(struct tile *t, int lod, int32_t cx, int32_t cz, int32_t h)
{
	size_t i;

	assert_int_equal(tile_init(t, 8, lod), 0);
	t->cx = cx;
	t->cz = cz;
	t->quantum_um = 10000;
	for (i = 0; i < (size_t)t->side * t->side; i++)
		t->h[i] = h;
}

static struct edit brush(enum edit_op op, double x, double z, double r, int64_t strength,
			 double height)
{
	struct edit e = { (uint8_t)op, EDIT_LINEAR, (int64_t)(x * 1000), (int64_t)(z * 1000),
			  (int64_t)(r * 1000), strength, (int64_t)(height * 1e6) };
	return e;
}

static int32_t at(const struct tile *t, uint32_t i, uint32_t j)
{
	return t->h[j * t->side + i];
}

static void test_raise_moves_the_centre_by_its_strength(void **state)
{
	struct edit e = brush(EDIT_RAISE, 10, 20, 8, 2500000, 0);   /* 2.5 m */
	struct tile t;

	(void)state;
	flat(&t, 0, 0, 0, 10000);
	edit_apply(&t, &e, 1);
	assert_int_equal(at(&t, 10, 20), 10250);
	assert_int_equal(at(&t, 14, 20), 10125);   /* linear: half way, half */
	assert_int_equal(at(&t, 18, 20), 10000);   /* at the radius: nothing */
	assert_int_equal(at(&t, 30, 30), 10000);
	e.op = EDIT_LOWER;
	edit_apply(&t, &e, 1);
	assert_int_equal(at(&t, 10, 20), 10000);
	tile_release(&t);
}

static void test_smooth_falloff_is_half_at_half_radius(void **state)
{
	struct edit e = brush(EDIT_RAISE, 0, 0, 8, 1000000, 0);
	struct tile t;

	(void)state;
	e.falloff = EDIT_SMOOTH;
	flat(&t, 0, 0, 0, 0);
	edit_apply(&t, &e, 1);
	assert_int_equal(at(&t, 0, 0), 100);
	assert_int_equal(at(&t, 4, 0), 50);
	assert_int_equal(at(&t, 2, 0), 84);   /* 1 - (3/16 - 2/64) = 0.84375 */
	tile_release(&t);
}

static void test_flatten_and_set_move_towards_the_height(void **state)
{
	struct edit f = brush(EDIT_FLATTEN, 100, 100, 50, 500000, 30.0);
	struct edit s = brush(EDIT_SET, 100, 100, 50, 0, -5.0);
	struct tile t;

	(void)state;
	flat(&t, 0, 0, 0, 1000);                 /* 10 m */
	edit_apply(&t, &f, 1);
	assert_int_equal(at(&t, 100, 100), 2000); /* half way to 30 m */
	edit_apply(&t, &s, 1);
	assert_int_equal(at(&t, 100, 100), -500);
	/* w = 0.5: flatten took 10 m to 15 m, set takes 15 m half way to -5 m */
	assert_int_equal(at(&t, 125, 100), 500);
	tile_release(&t);
}

static void test_edits_apply_the_same_at_every_lod(void **state)
{
	struct edit e[3] = {
		brush(EDIT_RAISE, 64.5, 63.25, 40, 3000000, 0),
		brush(EDIT_FLATTEN, 80, 40, 70, 700000, 12.5),
		brush(EDIT_LOWER, 0, 0, 100, 1234567, 0),
	};
	struct preset **v;
	size_t n;
	int lod;

	(void)state;
	assert_int_equal(preset_load_builtin(&v, &n), 0);
	for (lod = 0; lod < 8; lod++) {
		struct tile fine, coarse;
		uint32_t i, j;

		assert_int_equal(pipeline_generate(v[0], 3, lod, 0, 0, &fine), 0);
		assert_int_equal(pipeline_generate(v[0], 3, lod + 1, 0, 0, &coarse), 0);
		edit_apply(&fine, e, 3);
		edit_apply(&coarse, e, 3);
		for (j = 0; j < coarse.side; j++)
			for (i = 0; i < coarse.side; i++)
				assert_int_equal(at(&coarse, i, j), at(&fine, 2 * i, 2 * j));
		tile_release(&fine);
		tile_release(&coarse);
	}
	preset_destroy_all(v, n);
}

static void test_neighbours_share_edges_after_edits(void **state)
{
	struct edit e = brush(EDIT_RAISE, 256, 256, 30, 5000000, 0);   /* corner */
	struct tile t[4];
	uint32_t k;
	int q;

	(void)state;
	for (q = 0; q < 4; q++) {
		flat(&t[q], 2, q & 1, q >> 1, 777);
		edit_apply(&t[q], &e, 1);
	}
	for (k = 0; k < t[0].side; k++) {
		assert_int_equal(at(&t[0], 64, k), at(&t[1], 0, k));
		assert_int_equal(at(&t[0], k, 64), at(&t[2], k, 0));
		assert_int_equal(at(&t[3], 0, k), at(&t[2], 64, k));
	}
	assert_int_equal(at(&t[3], 0, 0), 777 + 500);
	for (q = 0; q < 4; q++)
		tile_release(&t[q]);
}

static void test_a_brush_on_a_corner_touches_four_chunks(void **state)
{
	struct edit e = brush(EDIT_RAISE, 0, 0, 10, 1000000, 0);
	int32_t cx[16], cz[16];
	size_t n;

	(void)state;
	assert_int_equal(edit_chunks(&e, 8, cx, cz, 16, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(cx[0], -1);
	assert_int_equal(cz[0], -1);
	assert_int_equal(cx[3], 0);
	assert_int_equal(cz[3], 0);
	assert_true(edit_touches(&e, 8, -1, 0));
	assert_false(edit_touches(&e, 8, 1, 0));
	assert_false(edit_touches(&e, 8, 0, -2));
}

static void test_coverage_handles_negative_far_and_huge_brushes(void **state)
{
	struct edit e = brush(EDIT_RAISE, -1000.5, -3000, 1, 1, 0);
	struct edit far = brush(EDIT_RAISE, 2147483647.0 * 256 + 100, 0, 50, 1, 0);
	struct edit huge = brush(EDIT_RAISE, 128, 128, 4096, 1, 0);
	int32_t cx[2048], cz[2048];
	size_t n;

	(void)state;
	assert_int_equal(edit_chunks(&e, 8, cx, cz, 2048, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(cx[0], -4);   /* -1000.5 m is in chunk -4 */
	assert_int_equal(cz[0], -12);  /* -3072 .. -2816 m */
	assert_int_equal(edit_chunks(&far, 8, cx, cz, 2048, &n), 0);
	assert_int_equal(n, 2);        /* clipped at INT32_MAX, z -1 and 0 */
	assert_int_equal(cx[0], INT32_MAX);
	assert_int_equal(edit_chunks(&huge, 8, cx, cz, 2048, &n), 0);
	assert_true(n > 800 && n < 1089);   /* ~ pi * 16^2 chunks */
	assert_int_equal(edit_chunks(&huge, 8, cx, cz, 10, &n), ERR_TOOBIG);
}

static void test_a_brush_ending_on_a_border_does_not_touch_the_next_chunk(void **state)
{
	struct edit e = brush(EDIT_RAISE, 246, 100, 10, 1000000, 0);   /* reaches x = 256 */
	int32_t cx[8], cz[8];
	size_t n;

	(void)state;
	assert_int_equal(edit_chunks(&e, 8, cx, cz, 8, &n), 0);
	assert_int_equal(n, 1);
}

static void test_world_hash_chains_in_order(void **state)
{
	struct edit a = brush(EDIT_RAISE, 1, 2, 3, 4, 0), b = brush(EDIT_LOWER, 5, 6, 7, 8, 0);
	uint64_t h0 = edit_hash_start(0x1234, 42);
	uint64_t ab = edit_hash_next(edit_hash_next(h0, 1, &a), 2, &b);
	uint64_t ba = edit_hash_next(edit_hash_next(h0, 1, &b), 2, &a);

	(void)state;
	assert_true(h0 != edit_hash_start(0x1234, 43));
	assert_true(h0 != edit_hash_start(0x1235, 42));
	assert_true(ab != ba);
	assert_true(ab == edit_hash_next(edit_hash_next(h0, 1, &a), 2, &b));
	assert_true(edit_hash_next(h0, 1, &a) != edit_hash_next(h0, 2, &a));
}

static void test_canonical_bytes_round_trip_and_reject_garbage(void **state)
{
	struct edit e = brush(EDIT_FLATTEN, -12345.678, 9876.5, 12.25, 250000, -3.5), d;
	uint8_t b[EDIT_WIRE_SIZE];

	(void)state;
	e.falloff = EDIT_SMOOTH;
	edit_encode(&e, b);
	assert_int_equal(edit_decode(b, sizeof(b), &d), 0);
	assert_int_equal(d.op, e.op);
	assert_int_equal(d.falloff, e.falloff);
	assert_int_equal(d.x_mm, e.x_mm);
	assert_int_equal(d.z_mm, e.z_mm);
	assert_int_equal(d.radius_mm, e.radius_mm);
	assert_int_equal(d.strength, e.strength);
	assert_int_equal(d.height_um, e.height_um);
	assert_int_equal(b[0], EDIT_FLATTEN);
	assert_int_equal(b[2], (uint8_t)((uint64_t)e.x_mm & 0xff));
	assert_int_equal(edit_decode(b, sizeof(b) - 1, &d), ERR_CORRUPT);
	b[0] = 9;
	assert_int_equal(edit_decode(b, sizeof(b), &d), ERR_CORRUPT);
	edit_encode(&e, b);
	memset(b + 18, 0xff, 8);   /* radius -1 */
	assert_int_equal(edit_decode(b, sizeof(b), &d), ERR_CORRUPT);
}

static void test_batch_parses_every_op(void **state)
{
	const char *j = "{\"edits\": ["
		"{\"op\":\"raise\",\"x\":1.5,\"z\":-2,\"radius\":10,\"strength\":2},"
		"{\"op\":\"lower\",\"x\":0,\"z\":0,\"radius\":4096,\"strength\":0.01,\"falloff\":\"linear\"},"
		"{\"op\":\"flatten\",\"x\":3,\"z\":4,\"radius\":0.5,\"strength\":1,\"height\":-7.25},"
		"{\"op\":\"set\",\"x\":3,\"z\":4,\"radius\":5,\"height\":100}]}";
	struct edit *v;
	size_t n;

	(void)state;
	assert_int_equal(edit_parse_batch(j, strlen(j), &v, &n, NULL, 0), 0);
	assert_int_equal(n, 4);
	assert_int_equal(v[0].x_mm, 1500);
	assert_int_equal(v[0].z_mm, -2000);
	assert_int_equal(v[0].strength, 2000000);
	assert_int_equal(v[0].falloff, EDIT_SMOOTH);
	assert_int_equal(v[1].falloff, EDIT_LINEAR);
	assert_int_equal(v[1].radius_mm, 4096000);
	assert_int_equal(v[2].height_um, -7250000);
	assert_int_equal(v[2].strength, 1000000);
	assert_int_equal(v[3].op, EDIT_SET);
	free(v);
}

struct bad {
	const char *json;
	int rc;
	const char *msg;
};

static void test_bad_batches_are_rejected_whole_naming_the_field(void **state)
{
	static const struct bad bad[] = {
		{ "{\"edits\": [", ERR_PARSE, "invalid JSON" },
		{ "[]", ERR_PARSE, "edits: must be an array" },
		{ "{\"edits\": []}", ERR_RANGE, "1..256" },
		{ "{\"edits\": [{\"op\":\"dig\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1}]}",
		  ERR_PARSE, "edits[0].op" },
		{ "{\"edits\": [{\"op\":\"raise\",\"z\":0,\"radius\":1,\"strength\":1}]}",
		  ERR_PARSE, "edits[0].x: missing" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1},"
		  "{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":0,\"strength\":1}]}",
		  ERR_RANGE, "edits[1].radius" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":4096.5,\"strength\":1}]}",
		  ERR_RANGE, "edits[0].radius" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1e9}]}",
		  ERR_RANGE, "edits[0].strength" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":1e999,\"z\":0,\"radius\":1,\"strength\":1}]}",
		  ERR_PARSE, "edits[0].x: must be a finite number" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":NaN,\"z\":0,\"radius\":1,\"strength\":1}]}",
		  ERR_PARSE, "invalid JSON" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":\"1\",\"z\":0,\"radius\":1,\"strength\":1}]}",
		  ERR_PARSE, "edits[0].x" },
		{ "{\"edits\": [{\"op\":\"flatten\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":2,"
		  "\"height\":1}]}", ERR_RANGE, "edits[0].strength" },
		{ "{\"edits\": [{\"op\":\"flatten\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1}]}",
		  ERR_PARSE, "edits[0].height: missing" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1,"
		  "\"height\":3}]}", ERR_PARSE, "edits[0].height: not used by raise" },
		{ "{\"edits\": [{\"op\":\"set\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1,"
		  "\"height\":3}]}", ERR_PARSE, "edits[0].strength: not used by set" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1,"
		  "\"colour\":3}]}", ERR_PARSE, "edits[0].colour: unknown field" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1,"
		  "\"falloff\":\"cubic\"}]}", ERR_PARSE, "edits[0].falloff" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1}],"
		  "\"more\":1}", ERR_PARSE, "only \"edits\"" },
		/* strict JSON: a NUL is not the end of a string, keys are unique */
		{ "{\"edits\": [{\"op\":\"raise\\u0000x\",\"x\":0,\"z\":0,\"radius\":1,"
		  "\"strength\":1}]}", ERR_PARSE, "\\u0000 (NUL) in a string at offset 23" },
		{ "{\"edits\": [{\"op\\u0000\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,"
		  "\"strength\":1}]}", ERR_PARSE, "NUL" },
		{ "{\"edits\": [{\"op\":\"raise\\\\\\u0000\",\"x\":0,\"z\":0,\"radius\":1,"
		  "\"strength\":1}]}", ERR_PARSE, "NUL" },
		/* an escaped backslash then "u0000" is text, not a NUL */
		{ "{\"edits\": [{\"op\":\"raise\\\\u0000\",\"x\":0,\"z\":0,\"radius\":1,"
		  "\"strength\":1}]}", ERR_PARSE, "edits[0].op: unknown value" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"x\":5,\"z\":0,\"radius\":1,"
		  "\"strength\":1}]}", ERR_PARSE, "edits[0].x: duplicate field" },
		{ "{\"edits\": [{\"op\":\"lower\",\"op\":\"raise\",\"x\":0,\"z\":0,"
		  "\"radius\":1,\"strength\":1}]}", ERR_PARSE, "edits[0].op: duplicate field" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1}],"
		  "\"edits\": []}", ERR_PARSE, "edits: duplicate field" },
		/* one strict JSON value and nothing after it (jsonv_check) */
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1}]}"
		  " garbage", ERR_PARSE, "invalid JSON at offset 64: bytes after the JSON value" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1}]}"
		  "{\"edits\":[]}", ERR_PARSE, "at offset 63: bytes after the JSON value" },
		{ "\xef\xbb\xbf{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,"
		  "\"strength\":1}]}", ERR_PARSE, "at offset 0: a UTF-8 byte order mark" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":1,\"strength\":1,"
		  "\"n\xc3\":1}]}", ERR_PARSE, "at offset 63: invalid UTF-8 in a string" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":01,\"z\":0,\"radius\":1,"
		  "\"strength\":1}]}", ERR_PARSE, "at offset 30: number with a leading zero" },
		/* beyond every chunk: a bad coordinate (400), not a range (422) */
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":5e12,\"z\":0,\"radius\":1,"
		  "\"strength\":1}]}", ERR_INVAL, "edits[0].x: outside the world" },
		{ "{\"edits\": [{\"op\":\"raise\",\"x\":0,\"z\":-4503599627371,\"radius\":1,"
		  "\"strength\":1}]}", ERR_INVAL, "edits[0].z: outside the world (|z| <= 4503599627370 m)" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct edit *v = (struct edit *)&v;
		char err[200];
		size_t n = 99;
		int rc = edit_parse_batch(bad[i].json, strlen(bad[i].json), &v, &n, err,
					  sizeof(err));

		if (rc != bad[i].rc || !strstr(err, bad[i].msg))
			fail_msg("case %zu: rc %d \"%s\"; want %d \"%s\"", i, rc, err, bad[i].rc,
				 bad[i].msg);
		assert_null(v);
		assert_int_equal(n, 0);
	}
}

static void test_a_raw_nul_byte_in_the_body_is_rejected(void **state)
{
	static const char j[] = "{\"edits\": [{\"op\":\"raise\0x\",\"x\":0,\"z\":0,"
		"\"radius\":1,\"strength\":1}]}";
	struct edit *v;
	char err[100];
	size_t n;

	(void)state;
	assert_int_equal(edit_parse_batch(j, sizeof(j) - 1, &v, &n, err, sizeof(err)),
			 ERR_PARSE);
	assert_non_null(strstr(err, "NUL byte at offset 23"));
	assert_null(v);
}

static void test_the_edge_of_the_coordinate_range_is_accepted(void **state)
{
	static const char j[] = "{\"edits\": [{\"op\":\"raise\",\"x\":-4503599627370,"
		"\"z\":4503599627370,\"radius\":1,\"strength\":1}]}";
	struct edit *v;
	char err[100];
	size_t n;

	(void)state;
	assert_int_equal(edit_parse_batch(j, sizeof(j) - 1, &v, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
	assert_true(v[0].x_mm == INT64_C(-4503599627370000));
	free(v);
}

static void test_batch_of_257_edits_is_too_many(void **state)
{
	size_t cap = 300 * 80, len = 0, n;
	char *j = malloc(cap);
	struct edit *v;
	char err[100];
	int i;

	(void)state;
	assert_non_null(j);
	len += (size_t)snprintf(j + len, cap - len, "{\"edits\":[");
	for (i = 0; i < 257; i++)
		len += (size_t)snprintf(j + len, cap - len, "%s{\"op\":\"raise\",\"x\":%d,\"z\":0,"
					"\"radius\":1,\"strength\":1}", i ? "," : "", i);
	len += (size_t)snprintf(j + len, cap - len, "]}");
	assert_int_equal(edit_parse_batch(j, len, &v, &n, err, sizeof(err)), ERR_RANGE);
	free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raise_moves_the_centre_by_its_strength),
		cmocka_unit_test(test_smooth_falloff_is_half_at_half_radius),
		cmocka_unit_test(test_flatten_and_set_move_towards_the_height),
		cmocka_unit_test(test_edits_apply_the_same_at_every_lod),
		cmocka_unit_test(test_neighbours_share_edges_after_edits),
		cmocka_unit_test(test_a_brush_on_a_corner_touches_four_chunks),
		cmocka_unit_test(test_coverage_handles_negative_far_and_huge_brushes),
		cmocka_unit_test(test_a_brush_ending_on_a_border_does_not_touch_the_next_chunk),
		cmocka_unit_test(test_world_hash_chains_in_order),
		cmocka_unit_test(test_canonical_bytes_round_trip_and_reject_garbage),
		cmocka_unit_test(test_batch_parses_every_op),
		cmocka_unit_test(test_bad_batches_are_rejected_whole_naming_the_field),
		cmocka_unit_test(test_a_raw_nul_byte_in_the_body_is_rejected),
		cmocka_unit_test(test_the_edge_of_the_coordinate_range_is_accepted),
		cmocka_unit_test(test_batch_of_257_edits_is_too_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
