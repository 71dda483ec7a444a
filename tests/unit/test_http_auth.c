/*
 * test_http_auth.c - who may edit: the loopback check on crafted socket
 * addresses (test traffic itself only ever comes from 127.0.0.1) and the
 * bearer token comparison of server/http/http.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "http/http.h"

static int v4(const char *addr)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, addr, &a.sin_addr), 1);
	return http_peer_is_loopback((struct sockaddr *)&a);
}

static int v6(const char *addr)
{
	struct sockaddr_in6 a;

	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, addr, &a.sin6_addr), 1);
	return http_peer_is_loopback((struct sockaddr *)&a);
}

static void test_http_peer_loopback_is_127_slash_8(void **state)
{
	(void)state;
	assert_true(v4("127.0.0.1"));
	assert_true(v4("127.0.0.0"));
	assert_true(v4("127.255.255.255"));
	assert_true(v4("127.1.2.3"));
	assert_false(v4("128.0.0.1"));
	assert_false(v4("126.255.255.255"));
	assert_false(v4("10.0.0.1"));
	assert_false(v4("0.0.0.0"));
	assert_false(v4("255.255.255.255"));
	assert_false(v4("1.0.0.127"));
}

static void test_http_peer_loopback_in_ipv6_is_1_and_mapped_127(void **state)
{
	(void)state;
	assert_true(v6("::1"));
	assert_true(v6("::ffff:127.0.0.1"));
	assert_true(v6("::ffff:127.9.8.7"));
	assert_false(v6("::"));
	assert_false(v6("::2"));
	assert_false(v6("::ffff:10.0.0.1"));
	assert_false(v6("::ffff:128.0.0.1"));
	assert_false(v6("::127.0.0.1"));   /* IPv4-compatible, not mapped */
	assert_false(v6("fe80::1"));
	assert_false(v6("2001:db8::1"));
	assert_false(v6("1::1"));
}

static void test_http_peer_other_families_are_not_loopback(void **state)
{
	struct sockaddr_un u;

	(void)state;
	memset(&u, 0, sizeof(u));
	u.sun_family = AF_UNIX;
	assert_false(http_peer_is_loopback((struct sockaddr *)&u));
	assert_false(http_peer_is_loopback(NULL));
}

static void test_http_bearer_matches_only_the_exact_token(void **state)
{
	const char *t = "s3cret-Token_42";

	(void)state;
	assert_true(http_bearer_matches("Bearer s3cret-Token_42", t));
	assert_true(http_bearer_matches("bearer s3cret-Token_42", t));
	assert_true(http_bearer_matches("BEARER   s3cret-Token_42  ", t));
	assert_false(http_bearer_matches("Bearer s3cret-Token_4", t));
	assert_false(http_bearer_matches("Bearer s3cret-Token_421", t));
	assert_false(http_bearer_matches("Bearer S3cret-Token_42", t));
	assert_false(http_bearer_matches("Bearer ", t));
	assert_false(http_bearer_matches("Bearer", t));
	assert_false(http_bearer_matches("Bearers3cret-Token_42", t));
	assert_false(http_bearer_matches("Basic s3cret-Token_42", t));
	assert_false(http_bearer_matches("s3cret-Token_42", t));
	assert_false(http_bearer_matches("Bearer s3cret-Token_42, Bearer x", t));
	assert_false(http_bearer_matches(NULL, t));
	assert_false(http_bearer_matches("Bearer ", ""));
	assert_false(http_bearer_matches("Bearer x", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_peer_loopback_is_127_slash_8),
		cmocka_unit_test(test_http_peer_loopback_in_ipv6_is_1_and_mapped_127),
		cmocka_unit_test(test_http_peer_other_families_are_not_loopback),
		cmocka_unit_test(test_http_bearer_matches_only_the_exact_token),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
