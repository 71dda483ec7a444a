/*
 * test_request.c - the pure parts of server/api/request.c: content negotiation
 * (which coding an Accept-Encoding list gets, req_coding(); whether zstd is
 * acceptable at all, req_accepts_zstd(), which bundles use; If-None-Match
 * per coding's tag), and what versioned URLs (?v=SEQ) rest on: which answer
 * a version gets, and the query of the redirect to the current one.
 * tests/tiles/tile_versions.sh and tests/http/http_codings.sh check the answers
 * themselves against the real server. And the validators: HTTP-dates in
 * their three forms, and the order in which If-None-Match and
 * If-Modified-Since decide a 304 (RFC 9110 13.2.2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include <llhttp.h>

#include "api/request.h"
#include "err.h"
#include "http/http.h"

/* ---- req_version_match ------------------------------------------------------- */

static void test_version_current_only_when_equal(void **state)
{
	(void)state;
	assert_int_equal(req_version_match(0, 0, 0), REQ_V_CURRENT);
	assert_int_equal(req_version_match(7, 7, 7), REQ_V_CURRENT);
	assert_int_equal(req_version_match(7, 7, 1000), REQ_V_CURRENT);
	assert_int_equal(req_version_match(UINT64_MAX, UINT64_MAX, UINT64_MAX), REQ_V_CURRENT);
}

static void test_version_older_moves(void **state)
{
	(void)state;
	/* the chunk changed since v: the current one is elsewhere */
	assert_int_equal(req_version_match(0, 5, 9), REQ_V_MOVED);
	assert_int_equal(req_version_match(4, 5, 5), REQ_V_MOVED);
}

static void test_version_later_unchanged_moves(void **state)
{
	(void)state;
	/* v is a world sequence number at which the chunk was already at 5:
	 * the same bytes, one canonical URL */
	assert_int_equal(req_version_match(6, 5, 9), REQ_V_MOVED);
	assert_int_equal(req_version_match(9, 5, 9), REQ_V_MOVED);
	assert_int_equal(req_version_match(3, 0, 3), REQ_V_MOVED);
}

static void test_version_beyond_the_world_is_ahead(void **state)
{
	(void)state;
	assert_int_equal(req_version_match(10, 5, 9), REQ_V_AHEAD);
	assert_int_equal(req_version_match(1, 0, 0), REQ_V_AHEAD);
	assert_int_equal(req_version_match(UINT64_MAX, 0, UINT64_MAX - 1), REQ_V_AHEAD);
}

/* ---- req_query_set ----------------------------------------------------------- */

/* query (NUL-terminated or NULL) with name=value, into a big buffer. */
static const char *set(const char *query, const char *name, const char *value)
{
	static char out[256];
	long n = req_query_set(query, query ? strlen(query) : 0, name, value, out,
			       sizeof(out));

	assert_true(n >= 0);
	assert_int_equal((size_t)n, strlen(out));
	return out;
}

static void test_query_set_appends_when_absent(void **state)
{
	(void)state;
	assert_string_equal(set(NULL, "v", "7"), "v=7");
	assert_string_equal(set("", "v", "7"), "v=7");
	assert_string_equal(set("gen=alpine", "v", "7"), "gen=alpine&v=7");
	assert_string_equal(set("gen=alpine&layers=height,material", "v", "12"),
			    "gen=alpine&layers=height,material&v=12");
}

static void test_query_set_replaces_in_place(void **state)
{
	(void)state;
	assert_string_equal(set("v=3", "v", "7"), "v=7");
	assert_string_equal(set("v=3&gen=mesa", "v", "7"), "v=7&gen=mesa");
	assert_string_equal(set("gen=mesa&v=3&layers=height", "v", "70"),
			    "gen=mesa&v=70&layers=height");
	assert_string_equal(set("gen=mesa&v=", "v", "0"), "gen=mesa&v=0");
	assert_string_equal(set("gen=mesa&v", "v", "0"), "gen=mesa&v=0");
}

static void test_query_set_drops_repeats(void **state)
{
	(void)state;
	assert_string_equal(set("v=1&gen=mesa&v=2&v=3", "v", "9"), "v=9&gen=mesa");
}

static void test_query_set_leaves_similar_names(void **state)
{
	(void)state;
	/* "vv", "v2" and "xv" are other parameters */
	assert_string_equal(set("vv=1&v2=2&xv=3", "v", "4"), "vv=1&v2=2&xv=3&v=4");
	assert_string_equal(set("cx0=-1&cz0=2&cx1=3&cz1=4", "v", "5"),
			    "cx0=-1&cz0=2&cx1=3&cz1=4&v=5");
	/* escapes are kept as they came */
	assert_string_equal(set("gen=my%2Dpreset&v=1", "v", "2"), "gen=my%2Dpreset&v=2");
}

static void test_query_set_refuses_what_does_not_fit(void **state)
{
	char out[10];

	(void)state;
	/* "gen=x&v=1" is 9 bytes: it fits 10 with its NUL, not 9 */
	assert_int_equal(req_query_set("gen=x", 5, "v", "1", out, 10), 9);
	assert_string_equal(out, "gen=x&v=1");
	assert_true(req_query_set("gen=x", 5, "v", "1", out, 9) < 0);
	assert_true(req_query_set("v=1", 3, "v", "123456789", out, sizeof(out)) < 0);
	assert_true(req_query_set(NULL, 0, "v", "1", out, 0) < 0);
	assert_int_equal(req_query_set(NULL, 0, "v", "1", out, 4), 3);
	assert_true(req_query_set(NULL, 0, "v", "1", out, 3) < 0);
}

#define ID REQ_CODING_IDENTITY
#define ZSTD REQ_CODING_ZSTD
#define GZIP REQ_CODING_GZIP

static const struct {
	const char *ae;
	int want;
} cases[] = {
	{ NULL, ID },
	{ "", ID },
	{ "identity", ID },
	{ "zstd", ZSTD },
	{ "gzip", GZIP },
	{ "x-gzip", GZIP },
	{ "GZIP", GZIP },
	{ "deflate", ID },                          /* not served */
	{ "br", ID },
	/* what clients send */
	{ "deflate, gzip, br, zstd", ZSTD },          /* curl --compressed */
	{ "gzip, deflate, br, zstd", ZSTD },          /* browsers */
	{ "gzip, deflate", GZIP },                    /* python requests, Go, Godot */
	{ "gzip;q=1.0, identity; q=0.5, *;q=0", GZIP },
	{ "gzip", GZIP },                             /* wget --compression=gzip */
	{ "identity", ID },                           /* urllib's default */
	/* q-values */
	{ "gzip, zstd;q=0.5", GZIP },
	{ "gzip;q=0.5, zstd", ZSTD },
	{ "gzip;q=0.8, zstd;q=0.8", ZSTD },            /* a tie goes to zstd */
	{ "zstd;q=0, gzip", GZIP },
	{ "zstd;q=0, gzip;q=0", ID },
	{ "gzip;q=0, x-gzip", GZIP },
	{ "gzip;q=0", ID },
	{ "br;q=1.0, zstd;q=0.8, gzip", GZIP },
	{ "br;q=1.0, zstd;q=0.8, gzip;q=0.5", ZSTD },
	/* "*" stands for what is not named */
	{ "*", ZSTD },
	{ "br, *;q=0.1", ZSTD },
	{ "*;q=0.5, zstd;q=0", GZIP },
	{ "*;q=0.5, zstd;q=0, gzip;q=0", ID },
	{ "*;q=0", ID },
	/* identity named above the coding wins; forbidding it does not 406 */
	{ "identity;q=1, gzip;q=0.5", ID },
	{ "identity;q=0.5, gzip", GZIP },
	{ "identity;q=0.5, gzip;q=0.5", GZIP },
	{ "identity;q=0", ID },
	{ "identity;q=0, zstd", ZSTD },
	/* spacing, case and bad parameters */
	{ "  gzip  ;  q=0.9 , zstd ; q=0.3", GZIP },
	{ "Zstd;Q=0.9,GZip;q=0.1", ZSTD },
	{ "gzip;q=2", ID },                          /* an invalid q is not a mention */
	{ "gzip;q=abc", ID },
	{ "gzipx, zstdx", ID },
	{ ",,gzip,,", GZIP },
};

static void test_req_coding_picks_the_clients_preferred_coding(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (req_coding(cases[i].ae) != cases[i].want)
			fail_msg("Accept-Encoding \"%s\": coding %d, want %d",
				 cases[i].ae ? cases[i].ae : "(none)", req_coding(cases[i].ae),
				 cases[i].want);
}

static void test_req_accepts_zstd_for_bundles_ignores_gzip(void **state)
{
	(void)state;
	assert_true(req_accepts_zstd("gzip, zstd;q=0.5"));
	assert_true(req_accepts_zstd("zstd"));
	assert_false(req_accepts_zstd("gzip"));
	assert_false(req_accepts_zstd("zstd;q=0"));
	assert_false(req_accepts_zstd(NULL));
}

static void test_req_etag_matches_each_codings_tag_only(void **state)
{
	(void)state;
	assert_true(req_etag_matches("\"0123456789abcdef-g\"", "\"0123456789abcdef-g\""));
	assert_false(req_etag_matches("\"0123456789abcdef-g\"", "\"0123456789abcdef-z\""));
	assert_false(req_etag_matches("\"0123456789abcdef-g\"", "\"0123456789abcdef\""));
	assert_true(req_etag_matches("\"0123456789abcdef\", W/\"0123456789abcdef-g\"",
				     "\"0123456789abcdef-g\""));
}

/* RFC 9110 section 13.1.2: "*" or a comma-separated list; anything else is
 * not a valid field and matches nothing (issue 34: "e""e" answered 304). */
static void test_req_etag_matches_only_a_well_formed_list(void **state)
{
	(void)state;
	assert_true(req_etag_matches("\"e\"", "\"e\""));
	assert_true(req_etag_matches(" \"x\" ,\t\"e\" ", "\"e\""));
	assert_true(req_etag_matches("\"e\", \"x\"", "\"e\""));
	assert_true(req_etag_matches(",,\"e\",", "\"e\""));   /* empty elements */
	assert_true(req_etag_matches("*", "\"e\""));
	assert_true(req_etag_matches(" * ", "\"e\""));
	assert_false(req_etag_matches("\"e\"\"e\"", "\"e\""));
	assert_false(req_etag_matches("\"e\" \"e\"", "\"e\""));
	assert_false(req_etag_matches("\"e\" junk", "\"e\""));
	assert_false(req_etag_matches("\"e\", junk", "\"e\""));
	assert_false(req_etag_matches("\"e", "\"e\""));
	assert_false(req_etag_matches("*, \"e\"", "\"e\""));
	assert_false(req_etag_matches("**", "\"e\""));
	assert_false(req_etag_matches("", "\"e\""));
}

/* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example. */
#define EXAMPLE 784111777LL

static void test_request_prints_every_u64_exactly_in_json(void **state)
{
	static const struct {
		uint64_t v;
		const char *text;
	} nums[] = {
		{ 0, "{\"n\":0}" },
		{ UINT64_C(9007199254740993), "{\"n\":9007199254740993}" },      /* 2^53 + 1 */
		{ UINT64_C(18446744073709551614), "{\"n\":18446744073709551614}" },
		{ UINT64_MAX, "{\"n\":18446744073709551615}" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		cJSON *o = cJSON_CreateObject();
		char *s;

		assert_non_null(o);
		assert_non_null(req_json_u64(o, "n", nums[i].v));
		s = cJSON_PrintUnformatted(o);
		assert_string_equal(s, nums[i].text);
		cJSON_free(s);
		cJSON_Delete(o);
	}
}

static void test_request_parses_the_three_http_date_forms(void **state)
{
	static const char *const forms[] = {
		"Sun, 06 Nov 1994 08:49:37 GMT",  /* IMF-fixdate */
		"Sunday, 06-Nov-94 08:49:37 GMT", /* RFC 850 */
		"Sun Nov  6 08:49:37 1994",       /* asctime */
		"sun, 06 nov 1994 08:49:37 GMT",  /* names in any case */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		long long t = 0;

		assert_int_equal(req_parse_http_date(forms[i], &t), 0);
		assert_int_equal(t, EXAMPLE);
	}
}

static void test_request_refuses_what_is_not_an_http_date(void **state)
{
	static const char *const bad[] = {
		"", "yesterday", "784111777", "Sun, 06 Nov 1994 08:49:37 UTC",
		"Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 08:49:37 GMTx", "Sun, 06 Xyz 1994 08:49:37 GMT",
		"Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 00 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
		"Sun, 06 Nov 1969 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
	};
	size_t i;
	long long t = 42;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(req_parse_http_date(bad[i], &t), ERR_INVAL);
	assert_int_equal(req_parse_http_date(NULL, &t), ERR_INVAL);
	assert_int_equal(t, 42);
}

static void test_request_formats_imf_fixdates_that_parse_back(void **state)
{
	/* the epoch, the example, a leap day, a century that is no leap year,
	 * past 2038 */
	static const long long times[] = { 0, EXAMPLE, 951782400LL, 4107456000LL,
					   4102444799LL, 253402300799LL };
	char s[30];
	size_t i;

	(void)state;
	req_http_date(s, EXAMPLE);
	assert_string_equal(s, "Sun, 06 Nov 1994 08:49:37 GMT");
	req_http_date(s, 951782400LL);
	assert_string_equal(s, "Tue, 29 Feb 2000 00:00:00 GMT");
	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		long long t = -1;

		req_http_date(s, times[i]);
		assert_int_equal(strlen(s), 29);
		assert_int_equal(req_parse_http_date(s, &t), 0);
		assert_int_equal(t, times[i]);
	}
}

/* A request with these conditional headers (NULL: absent). */
static int not_modified(int method, const char *inm, const char *ims, const char *etag,
			long long last_modified)
{
	struct http_req h;
	struct req q;

	memset(&h, 0, sizeof(h));
	memset(&q, 0, sizeof(q));
	h.method = method;
	h.header[HTTP_H_IF_NONE_MATCH] = inm;
	h.header[HTTP_H_IF_MODIFIED_SINCE] = ims;
	q.http = &h;
	return req_not_modified(&q, etag, last_modified);
}

static void test_request_lets_if_none_match_decide_before_the_date(void **state)
{
	const char *now = "Sun, 06 Nov 1994 08:49:37 GMT";
	const char *before = "Sun, 06 Nov 1994 08:49:36 GMT";
	const char *etag = "\"00000000000000aa\"";

	(void)state;
	/* the date alone */
	assert_true(not_modified(HTTP_GET, NULL, now, etag, EXAMPLE));
	assert_true(not_modified(HTTP_HEAD, NULL, "Mon, 07 Nov 1994 00:00:00 GMT", etag, EXAMPLE));
	assert_false(not_modified(HTTP_GET, NULL, before, etag, EXAMPLE));
	assert_false(not_modified(HTTP_GET, NULL, "not a date", etag, EXAMPLE));
	assert_false(not_modified(HTTP_POST, NULL, now, etag, EXAMPLE));
	assert_false(not_modified(HTTP_GET, NULL, now, etag, 0)); /* no Last-Modified */
	assert_false(not_modified(HTTP_GET, NULL, NULL, etag, EXAMPLE));
	/* If-None-Match wins both ways */
	assert_false(not_modified(HTTP_GET, "\"00000000000000bb\"", now, etag, EXAMPLE));
	assert_true(not_modified(HTTP_GET, etag, before, etag, EXAMPLE));
	assert_true(not_modified(HTTP_GET, "*", NULL, etag, 0));
	assert_false(not_modified(HTTP_GET, "*", now, NULL, EXAMPLE)); /* no ETag to match */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_current_only_when_equal),
		cmocka_unit_test(test_version_older_moves),
		cmocka_unit_test(test_version_later_unchanged_moves),
		cmocka_unit_test(test_version_beyond_the_world_is_ahead),
		cmocka_unit_test(test_query_set_appends_when_absent),
		cmocka_unit_test(test_query_set_replaces_in_place),
		cmocka_unit_test(test_query_set_drops_repeats),
		cmocka_unit_test(test_query_set_leaves_similar_names),
		cmocka_unit_test(test_query_set_refuses_what_does_not_fit),
		cmocka_unit_test(test_req_coding_picks_the_clients_preferred_coding),
		cmocka_unit_test(test_req_accepts_zstd_for_bundles_ignores_gzip),
		cmocka_unit_test(test_req_etag_matches_each_codings_tag_only),
		cmocka_unit_test(test_req_etag_matches_only_a_well_formed_list),
		cmocka_unit_test(test_request_parses_the_three_http_date_forms),
		cmocka_unit_test(test_request_refuses_what_is_not_an_http_date),
		cmocka_unit_test(test_request_formats_imf_fixdates_that_parse_back),
		cmocka_unit_test(test_request_lets_if_none_match_decide_before_the_date),
		cmocka_unit_test(test_request_prints_every_u64_exactly_in_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
