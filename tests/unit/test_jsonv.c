/*
 * test_jsonv.c - strict JSON validation: what RFC 8259 allows passes, and
 * every leniency of cJSON's is refused at the right offset.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "jsonv.h"

struct bad {
	const char *json;
	size_t len;   /* 0: strlen */
	size_t at;
	const char *why;
};

static int check(const char *json, size_t len, size_t *at, const char **why)
{
	return jsonv_check(json, len ? len : strlen(json), at, why);
}

static void test_jsonv_accepts_every_form_of_the_rfc(void **state)
{
	static const char *const good[] = {
		"{}", "[]", " \t\r\n{ \"a\" : [ 1 , -0 , 0.5 , -1.25e+3 , 2E-2 , 1e9 ] }\r\n",
		"\"\"", "0", "-0", "true", "false", "null", "[[[[]]]]",
		"{\"edits\":[{\"op\":\"raise\",\"x\":1.5,\"z\":-2,\"radius\":10,\"strength\":2}]}",
		"\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00\"",
		"\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf\"",
		"{\"a\":{\"b\":{\"c\":null}},\"d\":[true,false]}",
	};
	size_t i, at = 99;
	const char *why = "x";
	cJSON *o;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (check(good[i], 0, &at, &why))
			fail_msg("case %zu refused at %zu: %s", i, at, why);
		assert_null(why);
		/* and cJSON reads whatever passes */
		o = cJSON_ParseWithLength(good[i], strlen(good[i]));
		assert_non_null(o);
		cJSON_Delete(o);
	}
}

static void test_jsonv_refuses_trailing_bytes_after_one_value(void **state)
{
	static const struct bad bad[] = {
		{ "{\"edits\":[]} garbage", 0, 13, "bytes after the JSON value" },
		{ "{\"edits\":[]}{\"edits\":[]}", 0, 12, "bytes after the JSON value" },
		{ "{}\n\n}", 0, 4, "bytes after" },
		{ "{} \x0b", 0, 3, "bytes after" },  /* VT is not JSON white space */
		{ "1 2", 0, 2, "bytes after" },
		{ "{}\0", 3, 2, "bytes after" },
		{ "\x0c{}", 0, 0, "unexpected byte" }, /* nor is form feed */
	};
	size_t i, at;
	const char *why;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = check(bad[i].json, bad[i].len, &at, &why);

		if (rc != ERR_PARSE || at != bad[i].at || !strstr(why, bad[i].why))
			fail_msg("case %zu: rc %d at %zu \"%s\"; want at %zu \"%s\"", i, rc, at,
				 why ? why : "", bad[i].at, bad[i].why);
	}
}

static void test_jsonv_refuses_a_byte_order_mark(void **state)
{
	size_t at;
	const char *why;

	(void)state;
	assert_int_equal(check("\xef\xbb\xbf{}", 0, &at, &why), ERR_PARSE);
	assert_int_equal(at, 0);
	assert_non_null(strstr(why, "byte order mark"));
	/* cJSON alone would skip it */
	{
		cJSON *o = cJSON_ParseWithLength("\xef\xbb\xbf{}", 5);

		assert_non_null(o);
		cJSON_Delete(o);
	}
	/* inside a string it is an ordinary character */
	assert_int_equal(check("\"\xef\xbb\xbf\"", 0, &at, &why), 0);
}

static void test_jsonv_refuses_invalid_utf8_where_cjson_copies_it(void **state)
{
	static const struct bad bad[] = {
		{ "{\"n\xc3\":1}", 0, 3, "invalid UTF-8" },        /* cut two-byte form */
		{ "\"\x80\"", 0, 1, "invalid UTF-8" },             /* stray continuation */
		{ "\"\xc0\xaf\"", 0, 1, "invalid UTF-8" },         /* overlong '/' */
		{ "\"\xe0\x80\xaf\"", 0, 1, "invalid UTF-8" },     /* overlong, 3 bytes */
		{ "\"\xed\xa0\x80\"", 0, 1, "invalid UTF-8" },     /* a surrogate */
		{ "\"\xf4\x90\x80\x80\"", 0, 1, "invalid UTF-8" }, /* above U+10FFFF */
		{ "\"\xf5\x80\x80\x80\"", 0, 1, "invalid UTF-8" },
		{ "\"\xff\"", 0, 1, "invalid UTF-8" },
		{ "\"ab\xe2\x82\"", 0, 3, "invalid UTF-8" },       /* cut by the quote */
		{ "\"\xe2\x82", 0, 1, "invalid UTF-8" },           /* cut by the end */
		{ "\xc3\xa9", 0, 0, "unexpected byte" },           /* outside a string */
	};
	size_t i, at;
	const char *why;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = check(bad[i].json, bad[i].len, &at, &why);

		if (rc != ERR_PARSE || at != bad[i].at || !strstr(why, bad[i].why))
			fail_msg("case %zu: rc %d at %zu \"%s\"; want at %zu \"%s\"", i, rc, at,
				 why ? why : "", bad[i].at, bad[i].why);
	}
}

static void test_jsonv_refuses_what_cjson_lets_through(void **state)
{
	static const struct bad bad[] = {
		{ "01", 0, 1, "leading zero" },
		{ "[-01]", 0, 3, "leading zero" },
		{ "1.", 0, 2, "after the decimal point" },
		{ "-.5", 0, 1, "without digits" },
		{ "1e", 0, 2, "exponent" },
		{ "1e+", 0, 3, "exponent" },
		{ "+1", 0, 0, "unexpected byte" },
		{ "\"a\tb\"", 0, 2, "control character" },
		{ "\"a\nb\"", 0, 2, "control character" },
		{ "\"\\x41\"", 0, 2, "unknown escape" },
		{ "\"\\u12G4\"", 0, 5, "four hex digits" },
		{ "\"\\ud800\"", 0, 1, "unpaired high surrogate" },
		{ "\"\\udc00\"", 0, 1, "unpaired low surrogate" },
		{ "\"\\ud800\\u0041\"", 0, 7, "not followed by a low one" },
		{ "[1,]", 0, 3, "unexpected byte" },
		{ "{\"a\":1,}", 0, 7, "object key must be a string" },
		{ "{\"a\" 1}", 0, 5, "':' expected" },
		{ "{'a':1}", 0, 1, "object key must be a string" },
		{ "[1 2]", 0, 3, "',' or ']' expected" },
		{ "tru", 0, 0, "unexpected byte" },
		{ "nul", 0, 0, "unexpected byte" },
		{ "NaN", 0, 0, "unexpected byte" },
		{ "", 0, 0, "unexpected end" },
		{ "  ", 0, 2, "unexpected end" },
		{ "{\"a\":", 0, 5, "unexpected end" },
		{ "[1", 0, 2, "unexpected end" },
		{ "\"abc", 0, 4, "unterminated string" },
		{ "/* c */ {}", 0, 0, "unexpected byte" },
	};
	size_t i, at;
	const char *why;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = check(bad[i].json, bad[i].len, &at, &why);

		if (rc != ERR_PARSE || at != bad[i].at || !strstr(why, bad[i].why))
			fail_msg("case %zu (%s): rc %d at %zu \"%s\"; want at %zu \"%s\"", i,
				 bad[i].json, rc, at, why ? why : "", bad[i].at, bad[i].why);
	}
}

static void test_jsonv_bounds_the_depth(void **state)
{
	char deep[2 * JSONV_MAX_DEPTH + 4];
	size_t at, n = JSONV_MAX_DEPTH;
	const char *why;

	(void)state;
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	assert_int_equal(jsonv_check(deep, 2 * n, &at, &why), 0);
	memset(deep, '[', n + 1);
	memset(deep + n + 1, ']', n + 1);
	assert_int_equal(jsonv_check(deep, 2 * n + 2, &at, &why), ERR_PARSE);
	assert_int_equal(at, n);
	assert_non_null(strstr(why, "nested too deep"));
}

static void test_jsonv_utf8_char_gives_lengths_and_refusals(void **state)
{
	(void)state;
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"a", 1), 1);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"\xc3\xa9", 2), 2);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"\xc3\xa9", 1), 0);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"\xe2\x82\xac", 3), 3);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"\xef\xbf\xbf", 3), 3);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"\xf0\x90\x80\x80", 4), 4);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"\xf0\x8f\xbf\xbf", 4), 0);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"\xc1\xbf", 2), 0);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"\xe2\x28\xa1", 3), 0);
	assert_int_equal(jsonv_utf8_char((const unsigned char *)"", 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jsonv_accepts_every_form_of_the_rfc),
		cmocka_unit_test(test_jsonv_refuses_trailing_bytes_after_one_value),
		cmocka_unit_test(test_jsonv_refuses_a_byte_order_mark),
		cmocka_unit_test(test_jsonv_refuses_invalid_utf8_where_cjson_copies_it),
		cmocka_unit_test(test_jsonv_refuses_what_cjson_lets_through),
		cmocka_unit_test(test_jsonv_bounds_the_depth),
		cmocka_unit_test(test_jsonv_utf8_char_gives_lengths_and_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
