/*
 * test_request.c - content negotiation of server/request.c: which coding
 * an Accept-Encoding list gets (req_coding()), whether zstd is acceptable
 * at all (req_accepts_zstd(), which bundles use), and If-None-Match
 * matching per coding's tag.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../server/request.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_coding_picks_the_clients_preferred_coding),
		cmocka_unit_test(test_req_accepts_zstd_for_bundles_ignores_gzip),
		cmocka_unit_test(test_req_etag_matches_each_codings_tag_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
