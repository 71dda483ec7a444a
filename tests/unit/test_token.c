/*
 * test_token.c - players' tokens (server/edits/token.c): the claims one by one
 * (exp required, the clock skew at each bound, nbf, iat, sub's alphabet
 * and length, worlds as numbers, decimal and text seeds, area rectangles
 * in mm, role, rate, names given twice), and verification: a minted
 * HS256 token round-trips, and malformed, alg none, another alg family,
 * a tampered payload and another secret are refused with their causes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "edits/token.h"
#include "err.h"
#include "seed.h"

#define NOW 1700000000.0
#define SECRET "0123456789abcdef0123456789abcdef"

static struct token_claims t;
static char why[200];

/* Claims json checked at NOW: 0 or ERR_INVAL with why. */
static int claims(const char *json)
{
	return token_check_claims(json, strlen(json), NOW, &t, why, sizeof(why));
}

static void refused(const char *json, const char *cause)
{
	assert_int_equal(claims(json), ERR_INVAL);
	if (!strstr(why, cause))
		fail_msg("%s: got \"%s\", want \"%s\"", json, why, cause);
}

static void test_token_claims_need_exp_and_allow_the_skew(void **state)
{
	(void)state;
	assert_int_equal(claims("{\"sub\":\"alice\",\"exp\":1700000001}"), 0);
	assert_string_equal(t.sub, "alice");
	assert_int_equal(t.role, TOKEN_PLAYER);
	assert_true(t.all_worlds);
	assert_int_equal(t.nareas, 0);
	refused("{\"sub\":\"alice\"}", "exp: required");
	refused("{\"sub\":\"alice\",\"exp\":\"tomorrow\"}", "exp: must be a NumericDate");
	/* expired 60 s ago: within the skew; 61 s: expired */
	assert_int_equal(claims("{\"sub\":\"a\",\"exp\":1699999940}"), 0);
	refused("{\"sub\":\"a\",\"exp\":1699999939}", "token expired");
	assert_int_equal(claims("{\"sub\":\"a\",\"exp\":1800000000,\"nbf\":1700000060}"), 0);
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"nbf\":1700000061}", "token not yet valid");
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"iat\":1700003600}", "iat in the future");
}

static void test_token_claims_check_sub(void **state)
{
	char json[200];

	(void)state;
	assert_int_equal(claims("{\"sub\":\"a.b_c-d@e.example\",\"exp\":1800000000}"), 0);
	refused("{\"exp\":1800000000}", "sub: required");
	refused("{\"sub\":\"\",\"exp\":1800000000}", "sub:");
	refused("{\"sub\":\"two words\",\"exp\":1800000000}", "sub:");
	refused("{\"sub\":42,\"exp\":1800000000}", "sub:");
	snprintf(json, sizeof(json), "{\"sub\":\"%065d\",\"exp\":1800000000}", 0);
	refused(json, "sub:");
	snprintf(json, sizeof(json), "{\"sub\":\"%064d\",\"exp\":1800000000}", 0);
	assert_int_equal(claims(json), 0);
}

static void test_token_claims_read_worlds(void **state)
{
	uint64_t named;

	(void)state;
	assert_int_equal(seed_parse("my-world", 8, &named), 0);
	assert_int_equal(claims("{\"sub\":\"a\",\"exp\":1800000000,"
				"\"worlds\":[42,\"43\",\"my-world\",\"18446744073709551615\"]}"), 0);
	assert_false(t.all_worlds);
	assert_int_equal(t.nworlds, 4);
	assert_true(t.worlds[0] == 42 && t.worlds[1] == 43 && t.worlds[2] == named &&
		    t.worlds[3] == UINT64_MAX);
	assert_int_equal(claims("{\"sub\":\"a\",\"exp\":1800000000,\"worlds\":[]}"), 0);
	assert_false(t.all_worlds);
	assert_int_equal(t.nworlds, 0);
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"worlds\":[1.5]}", "worlds[0]");
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"worlds\":[1e17]}", "as strings");
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"worlds\":[\"no spaces\"]}", "worlds[0]");
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"worlds\":42}", "worlds: must be an array");
}

static void test_token_claims_read_area_in_mm(void **state)
{
	(void)state;
	assert_int_equal(claims("{\"sub\":\"a\",\"exp\":1800000000,"
				"\"area\":[[-100,-50.5,100,0.0004],[0,0,0,0]]}"), 0);
	assert_int_equal(t.nareas, 2);
	assert_true(t.areas[0][0] == -100000 && t.areas[0][1] == -50500 &&
		    t.areas[0][2] == 100000 && t.areas[0][3] == 0);
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"area\":[[1,0,0,1]]}", "x0 <= x1");
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"area\":[[0,0,1]]}", "area[0]");
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"area\":[[0,0,1,\"2\"]]}", "area[0]");
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"area\":[[0,0,1,1e300]]}", "within the world");
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"area\":[]}", "non-empty");
}

static void test_token_claims_read_role_and_rate(void **state)
{
	(void)state;
	assert_int_equal(claims("{\"sub\":\"m\",\"exp\":1800000000,\"role\":\"moderator\","
				"\"rate\":2.5}"), 0);
	assert_int_equal(t.role, TOKEN_MODERATOR);
	assert_true(t.rate == 2.5);
	assert_int_equal(claims("{\"sub\":\"m\",\"exp\":1800000000,\"role\":\"admin\"}"), 0);
	assert_int_equal(t.role, TOKEN_ADMIN);
	refused("{\"sub\":\"m\",\"exp\":1800000000,\"role\":\"king\"}", "role:");
	refused("{\"sub\":\"m\",\"exp\":1800000000,\"rate\":0}", "rate:");
	refused("{\"sub\":\"m\",\"exp\":1800000000,\"rate\":\"fast\"}", "rate:");
}

static void test_token_claims_refuse_names_twice(void **state)
{
	(void)state;
	refused("{\"sub\":\"a\",\"exp\":1800000000,\"sub\":\"admin\"}", "malformed");
	refused("[1]", "malformed");
	refused("{\"sub\":\"a\",\"exp\":1800000000} x", "malformed");
}

static struct token_keys *hs_keys(const char *secret)
{
	struct token_keys *k = NULL;
	char err[200];

	assert_int_equal(token_keys_create((const uint8_t *)secret, strlen(secret), NULL, 0, &k,
					   err, sizeof(err)), 0);
	return k;
}

static char *mint(const char *secret, const char *sub, double now, double ttl)
{
	struct token_mint m = { .secret = (const uint8_t *)secret, .secret_len = strlen(secret),
				.sub = sub, .now = now, .ttl = ttl };
	char err[200], *tok = NULL;

	assert_int_equal(token_mint(&m, &tok, err, sizeof(err)), 0);
	return tok;
}

static int verify(const struct token_keys *k, const char *tok)
{
	return token_verify(k, tok, strlen(tok), NOW, &t, why, sizeof(why));
}

static void verify_refuses(const struct token_keys *k, const char *tok, const char *cause)
{
	assert_int_equal(verify(k, tok), ERR_INVAL);
	if (!strstr(why, cause))
		fail_msg("%s: got \"%s\", want \"%s\"", tok, why, cause);
}

static void test_token_verify_round_trips_and_refuses(void **state)
{
	struct token_keys *k = hs_keys(SECRET), *other = hs_keys(SECRET "x");
	char *tok = mint(SECRET, "alice", NOW, 600), *dot, bad[1024];
	char err[200];
	struct token_keys *shortk = NULL;

	(void)state;
	assert_int_equal(verify(k, tok), 0);
	assert_string_equal(t.sub, "alice");
	assert_true(t.exp == NOW + 600 && t.iat == NOW);
	verify_refuses(other, tok, "bad signature");
	/* the payload changed under the same signature */
	snprintf(bad, sizeof(bad), "%s", tok);
	dot = strchr(bad, '.') + 1;
	dot[2] = dot[2] == 'A' ? 'B' : 'A';
	verify_refuses(k, bad, "bad signature");
	/* no signature */
	snprintf(bad, sizeof(bad), "%s", tok);
	strrchr(bad, '.')[1] = '\0';
	verify_refuses(k, bad, "bad signature");
	/* alg none, by hand: {"alg":"none","typ":"JWT"} */
	snprintf(bad, sizeof(bad), "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.%s", strchr(tok, '.') + 1);
	*strrchr(bad, '.') = '\0';
	strcat(bad, ".");
	verify_refuses(k, bad, "alg none is not accepted");
	/* {"alg":"ES256","typ":"JWT"}: not the configured family */
	snprintf(bad, sizeof(bad), "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.%s", strchr(tok, '.') + 1);
	verify_refuses(k, bad, "alg ES256 is not accepted (this server verifies HS256");
	verify_refuses(k, "abc.def", "malformed");
	verify_refuses(k, "a b.c.d", "malformed");
	verify_refuses(k, "e30.e30.e30.e30", "malformed");
	verify_refuses(k, "!!!.e30.abc", "malformed");
	free(tok);
	tok = mint(SECRET, "late", NOW - 7200, 3600);
	verify_refuses(k, tok, "token expired");
	free(tok);
	assert_int_equal(token_keys_create((const uint8_t *)"short", 5, NULL, 0, &shortk, err,
					   sizeof(err)), ERR_INVAL);
	assert_non_null(strstr(err, "at least 32"));
	assert_int_equal(token_keys_create(NULL, 0, "not a key", 9, &shortk, err, sizeof(err)),
			 ERR_INVAL);
	assert_non_null(strstr(err, "not a PEM public key"));
	token_keys_destroy(k);
	token_keys_destroy(other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_claims_need_exp_and_allow_the_skew),
		cmocka_unit_test(test_token_claims_check_sub),
		cmocka_unit_test(test_token_claims_read_worlds),
		cmocka_unit_test(test_token_claims_read_area_in_mm),
		cmocka_unit_test(test_token_claims_read_role_and_rate),
		cmocka_unit_test(test_token_claims_refuse_names_twice),
		cmocka_unit_test(test_token_verify_round_trips_and_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
