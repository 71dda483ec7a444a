/*
 * fuzz_edit.c - libFuzzer target for the edit JSON parser (make fuzz):
 * edit_parse_batch() and the strict validator in front of it (jsonv.c).
 *
 * Each input is a request body. Whatever it is, the parser must return 0
 * or a negative ERR_* with a NUL-terminated message and nothing allocated
 * on failure. Beyond not crashing:
 *   - what jsonv_check() accepts, cJSON must parse, and to the same end:
 *     the validator is the stricter of the two, never the other way round;
 *   - a batch that parses holds 1..EDIT_BATCH_MAX edits that each pass
 *     edit_check(), and goes through the log's JSON (edit_to_json(), as
 *     GET /edits prints it, less "seq") back to exactly the same edits, so
 *     a client that re-posts what it read posts the same world;
 *   - the input with bytes appended after it (a second value, garbage) is
 *     refused.
 * Any violation aborts, which libFuzzer reports as a crash.
 *
 *   make fuzz && build-fuzz/fuzz_edit -dict=tests/fuzz_edit.dict tests/fuzz_edit
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "edit.h"
#include "jsonv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

_Noreturn static void fail(const char *what)
{
	fprintf(stderr, "fuzz_edit: %s\n", what);
	abort();
}

static void check_validator(const char *s, size_t n)
{
	const char *why, *end = NULL;
	size_t at;
	cJSON *o;

	if (jsonv_check(s, n, &at, &why)) {
		if (!why || at > n)
			fail("refusal without a reason or beyond the input");
		return;
	}
	if (why)
		fail("acceptance with a reason");
	o = cJSON_ParseWithLengthOpts(s, n, &end, 0);
	if (!o)
		fail("jsonv accepted what cJSON cannot parse");
	for (; end < s + n; end++)
		if (!strchr(" \t\r\n", *end) || !*end)
			fail("cJSON stopped before the end of what jsonv accepted");
	cJSON_Delete(o);
}

/* v[0..n) printed as the log prints them, then parsed again. */
static void check_round_trip(const struct edit *v, size_t n)
{
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "edits"), *it;
	struct edit *w;
	char *text, err[256];
	size_t i, m;

	if (!root || !arr)
		fail("out of memory");
	for (i = 0; i < n; i++)
		if (edit_to_json(&v[i], i + 1, arr))
			fail("edit_to_json");
	cJSON_ArrayForEach(it, arr)
		cJSON_DeleteItemFromObjectCaseSensitive(it, "seq");
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!text)
		fail("out of memory");
	if (edit_parse_batch(text, strlen(text), &w, &m, err, sizeof(err))) {
		fprintf(stderr, "fuzz_edit: %s\n%s\n", err, text);
		fail("the log's JSON of a parsed batch does not parse");
	}
	if (m != n)
		fail("round trip changed the count");
	for (i = 0; i < n; i++) {
		uint8_t a[EDIT_WIRE_SIZE], b[EDIT_WIRE_SIZE];

		edit_encode(&v[i], a);
		edit_encode(&w[i], b);
		if (memcmp(a, b, sizeof(a))) {
			fprintf(stderr, "fuzz_edit: edit %zu\n%s\n", i, text);
			fail("round trip through the log's JSON changed an edit");
		}
	}
	free(w);
	cJSON_free(text);
}

/* The input followed by more bytes must be refused. */
static void check_trailing(const char *s, size_t n)
{
	static const char *const tails[] = { "x", "{}", "]", "\v" };
	struct edit *v;
	size_t i, m;
	char *b = malloc(n + 3);

	if (!b)
		fail("out of memory");
	for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		size_t k = strlen(tails[i]);

		memcpy(b, s, n);
		memcpy(b + n, tails[i], k);
		if (edit_parse_batch(b, n + k, &v, &m, NULL, 0) == 0)
			fail("a batch with bytes after it parsed");
	}
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct edit *v = (struct edit *)&v;
	char err[128];
	size_t i, n = 12345;
	int rc;

	check_validator(s, size);
	memset(err, 'x', sizeof(err));
	rc = edit_parse_batch(s, size, &v, &n, err, sizeof(err));
	if (!memchr(err, '\0', sizeof(err)))
		fail("message not terminated");
	if (rc) {
		if (rc > 0 || v || n || !err[0])
			fail("a failed parse left a result or no message");
		return 0;
	}
	if (n < 1 || n > EDIT_BATCH_MAX)
		fail("batch size out of range");
	for (i = 0; i < n; i++) {
		const char *why;

		if (edit_check(&v[i], &why))
			fail("a parsed edit fails edit_check");
	}
	check_round_trip(v, n);
	check_trailing(s, size);
	free(v);
	return 0;
}
