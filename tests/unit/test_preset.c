/*
 * test_preset.c - preset parsing, validation messages, canonical form and
 * fingerprints.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "preset.h"

#define BASE_ROOT "{\"type\": \"fbm\", \"octaves\": 4, \"wavelength\": 500}"

static int parse(const char *json, struct preset **p, char *err, size_t len)
{
	return preset_parse(NULL, json, strlen(json), p, err, len);
}

static void test_builtin_presets_load_with_distinct_fingerprints(void **state)
{
	static const char *const want[] = { "alpine", "default", "islands", "mesa" };
	struct preset **v;
	size_t n, i, j;

	(void)state;
	assert_int_equal(preset_load_builtin(&v, &n), 0);
	assert_true(n >= 4);
	for (i = 0; i < 4; i++) {
		for (j = 0; j < n; j++)
			if (strcmp(preset_name(v[j]), want[i]) == 0)
				break;
		assert_true(j < n);
		assert_true(strlen(preset_description(v[j])) > 10);
		assert_int_equal(preset_chunk_log2(v[j]), 8);
		assert_int_equal(preset_quantum_um(v[j]), 10000);
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			assert_true(preset_fingerprint(v[i]) != preset_fingerprint(v[j]));
	preset_destroy_all(v, n);
}

static void test_fingerprint_ignores_formatting_and_key_order(void **state)
{
	const char *a = "{\"name\":\"a\",\"height\":{\"min\":-10,\"max\":100},\"root\":"
			BASE_ROOT "}";
	const char *b = "{ \"root\" : {\"wavelength\":500.0,\"octaves\":4,\"type\":\"fbm\","
			"\"gain\":0.5},\n \"height\": {\"max\": 1e2, \"min\": -10},"
			" \"name\": \"b\", \"chunk_size\": 256}";
	struct preset *pa, *pb;

	(void)state;
	assert_int_equal(parse(a, &pa, NULL, 0), 0);
	assert_int_equal(parse(b, &pb, NULL, 0), 0);
	assert_true(preset_fingerprint(pa) == preset_fingerprint(pb));
	assert_string_equal(preset_canonical(pa), preset_canonical(pb));
	preset_destroy(pa);
	preset_destroy(pb);
}

static void test_fingerprint_changes_with_any_parameter(void **state)
{
	const char *a = "{\"name\":\"a\",\"height\":{\"min\":-10,\"max\":100},\"root\":"
			"{\"type\": \"fbm\", \"octaves\": 4, \"wavelength\": 500}}";
	const char *b = "{\"name\":\"a\",\"height\":{\"min\":-10,\"max\":100},\"root\":"
			"{\"type\": \"fbm\", \"octaves\": 4, \"wavelength\": 500.5}}";
	const char *c = "{\"name\":\"a\",\"height\":{\"min\":-10,\"max\":101},\"root\":"
			"{\"type\": \"fbm\", \"octaves\": 4, \"wavelength\": 500}}";
	struct preset *pa, *pb, *pc;

	(void)state;
	assert_int_equal(parse(a, &pa, NULL, 0), 0);
	assert_int_equal(parse(b, &pb, NULL, 0), 0);
	assert_int_equal(parse(c, &pc, NULL, 0), 0);
	assert_true(preset_fingerprint(pa) != preset_fingerprint(pb));
	assert_true(preset_fingerprint(pa) != preset_fingerprint(pc));
	preset_destroy(pa);
	preset_destroy(pb);
	preset_destroy(pc);
}

struct bad {
	const char *json;
	int rc;
	const char *msg;   /* substring of the error message */
};

static void test_bad_presets_are_rejected_naming_the_field(void **state)
{
	static const struct bad bad[] = {
		{ "{", ERR_PARSE, "invalid JSON" },
		{ "[]", ERR_PARSE, "JSON object" },
		{ "{\"height\":{\"min\":0,\"max\":1},\"root\":" BASE_ROOT "}", ERR_PARSE, "name" },
		{ "{\"name\":\"x\",\"root\":" BASE_ROOT "}", ERR_PARSE, "height" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1}}", ERR_PARSE, "root: missing" },
		{ "{\"name\":\"x y\",\"height\":{\"min\":0,\"max\":1},\"root\":" BASE_ROOT "}",
		  ERR_PARSE, "name" },
		{ "{\"name\":\"x\",\"colour\":1,\"height\":{\"min\":0,\"max\":1},\"root\":"
		  BASE_ROOT "}", ERR_PARSE, "colour: unknown key" },
		{ "{\"name\":\"x\",\"height\":{\"min\":5,\"max\":1},\"root\":" BASE_ROOT "}",
		  ERR_RANGE, "height.max" },
		{ "{\"name\":\"x\",\"chunk_size\":300,\"height\":{\"min\":0,\"max\":1},\"root\":"
		  BASE_ROOT "}", ERR_RANGE, "chunk_size" },
		{ "{\"name\":\"x\",\"quantum_m\":0,\"height\":{\"min\":0,\"max\":1},\"root\":"
		  BASE_ROOT "}", ERR_RANGE, "quantum_m" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"fbm\","
		  "\"octaves\":17}}", ERR_RANGE, "root.octaves" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"fbm\","
		  "\"noise\":\"gabor\"}}", ERR_PARSE, "root.noise" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"fbm\","
		  "\"octaves\":\"six\"}}", ERR_PARSE, "root.octaves: must be a number" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"fbm\","
		  "\"octaves\":16,\"wavelength\":100}}", ERR_RANGE, "finer than 25 cm" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"blob\"}}",
		  ERR_PARSE, "root: type" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"warp\","
		  "\"amplitude\":10,\"warp\":{},\"source\":{\"type\":\"fbm\",\"gain\":3}}}",
		  ERR_RANGE, "root.source: gain" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"mix\","
		  "\"inputs\":[]}}", ERR_PARSE, "root.inputs" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"mix\","
		  "\"inputs\":[{\"weight\":0,\"source\":" BASE_ROOT "}]}}", ERR_RANGE, "weights" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"terrace\","
		  "\"steps\":2.5,\"source\":" BASE_ROOT "}}", ERR_RANGE, "root.steps" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"blend\","
		  "\"lo\":0.5,\"hi\":0.1,\"a\":" BASE_ROOT ",\"b\":" BASE_ROOT ",\"control\":"
		  BASE_ROOT "}}", ERR_RANGE, "root.hi" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"warp\","
		  "\"amplitude\":10,\"warp\":{},\"source\":{\"type\":\"fbm\",\"grid\":8}}}",
		  ERR_RANGE, "root.source.grid: not allowed under a warp" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"fbm\","
		  "\"grid\":12}}", ERR_RANGE, "root.grid" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"gullies\","
		  "\"source\":{\"type\":\"fbm\",\"noise\":\"simplex\"}}}", ERR_RANGE,
		  "root.source: must be a plain Perlin fbm" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"gullies\","
		  "\"wavelength\":48,\"source\":" BASE_ROOT "}}", ERR_RANGE, "root.wavelength" },
		{ "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":{\"type\":\"warp\","
		  "\"amplitude\":10,\"warp\":{},\"source\":{\"type\":\"gullies\",\"source\":"
		  BASE_ROOT "}}}", ERR_RANGE, "not allowed under a warp" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct preset *p = (struct preset *)&p;
		char err[256];
		int rc = parse(bad[i].json, &p, err, sizeof(err));

		if (rc != bad[i].rc || !strstr(err, bad[i].msg))
			fail_msg("case %zu: rc %d, message \"%s\"; want %d, \"%s\"", i, rc, err,
				 bad[i].rc, bad[i].msg);
		assert_null(p);
	}
}

static void test_deep_nesting_is_rejected(void **state)
{
	char json[4096];
	struct preset *p;
	char err[256];
	int i, n = 0;

	(void)state;
	n += sprintf(json + n, "{\"name\":\"x\",\"height\":{\"min\":0,\"max\":1},\"root\":");
	for (i = 0; i < 40; i++)
		n += sprintf(json + n, "{\"type\":\"scale_bias\",\"source\":");
	n += sprintf(json + n, BASE_ROOT);
	for (i = 0; i < 41; i++)
		n += sprintf(json + n, "}");
	assert_int_equal(parse(json, &p, err, sizeof(err)), ERR_RANGE);
	assert_non_null(strstr(err, "nested deeper"));
}

static void test_name_argument_overrides_json_name(void **state)
{
	const char *j = "{\"name\":\"a\",\"height\":{\"min\":-10,\"max\":100},\"root\":"
			BASE_ROOT "}";
	struct preset *p;

	(void)state;
	assert_int_equal(preset_parse("other", j, strlen(j), &p, NULL, 0), 0);
	assert_string_equal(preset_name(p), "other");
	preset_destroy(p);
	preset_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_presets_load_with_distinct_fingerprints),
		cmocka_unit_test(test_fingerprint_ignores_formatting_and_key_order),
		cmocka_unit_test(test_fingerprint_changes_with_any_parameter),
		cmocka_unit_test(test_bad_presets_are_rejected_naming_the_field),
		cmocka_unit_test(test_deep_nesting_is_rejected),
		cmocka_unit_test(test_name_argument_overrides_json_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
