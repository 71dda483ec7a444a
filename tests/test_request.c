/*
 * test_request.c - unit tests for server/request.c's validators: HTTP-dates
 * in their three forms, and the order in which If-None-Match and
 * If-Modified-Since decide a 304 (RFC 9110 13.2.2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <llhttp.h>

#include "../server/http.h"
#include "../server/request.h"
#include "err.h"

/* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example. */
#define EXAMPLE 784111777LL

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
		cmocka_unit_test(test_request_parses_the_three_http_date_forms),
		cmocka_unit_test(test_request_refuses_what_is_not_an_http_date),
		cmocka_unit_test(test_request_formats_imf_fixdates_that_parse_back),
		cmocka_unit_test(test_request_lets_if_none_match_decide_before_the_date),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
