/*
 * test_tile.c - tests of the tile format (common/tile.c,
 * docs/tile-format.md): round trips, every rejection the document lists,
 * random corruption, a naive reference of the filter, and golden bytes
 * that pin the format.
 *
 * TILE_MEASURE=1 build/tests/test_tile also prints the figures quoted in
 * docs/tile-format.md ("Measurements"): payload and zstd sizes for several
 * predictors on fBm terrain, and encode/decode speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>
#include <zstd.h>

#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"
#include "tilecode.h"

/* Iterations of the corruption test; a test may override it. */
#ifndef MUTATIONS
#define MUTATIONS 10000
#endif

/* splitmix64: a deterministic PRNG, so failures reproduce. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- fBm terrain: smooth test data, not the real generator ---- */

static double fade(double t)
{
	return t * t * t * (t * (t * 6 - 15) + 10);
}

/* Gradient of lattice point (ix, iz): one of 8 directions. */
static double grad_dot(uint64_t seed, int64_t ix, int64_t iz, double dx,
		       double dz)
{
	static const double g[8][2] = {
		{ 1, 0 }, { -1, 0 }, { 0, 1 }, { 0, -1 },
		{ 0.7071, 0.7071 }, { -0.7071, 0.7071 },
		{ 0.7071, -0.7071 }, { -0.7071, -0.7071 },
	};
	uint64_t s = seed ^ (uint64_t)ix * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)iz * 0xc2b2ae3d27d4eb4full;
	unsigned k = (unsigned)(rnd(&s) & 7);

	return g[k][0] * dx + g[k][1] * dz;
}

static double lerp(double a, double b, double t)
{
	return a + (b - a) * t;
}

static double gnoise(uint64_t seed, double x, double z)
{
	double fx = floor(x), fz = floor(z), dx = x - fx, dz = z - fz;
	int64_t ix = (int64_t)fx, iz = (int64_t)fz;
	double a = grad_dot(seed, ix, iz, dx, dz);
	double b = grad_dot(seed, ix + 1, iz, dx - 1, dz);
	double c = grad_dot(seed, ix, iz + 1, dx, dz - 1);
	double d = grad_dot(seed, ix + 1, iz + 1, dx - 1, dz - 1);
	double u = fade(dx), v = fade(dz);

	return lerp(lerp(a, b, u), lerp(c, d, u), v);
}

struct fbm {
	int octaves;       /* typical 6..10 */
	double wavelength; /* metres of the first octave, typical 1024 */
	double amplitude;  /* metres of the first octave, typical 400 */
};

static double fbm_at(const struct fbm *f, uint64_t seed, double x, double z)
{
	double sum = 0, amp = f->amplitude, freq = 1 / f->wavelength;

	for (int o = 0; o < f->octaves; o++) {
		sum += amp * gnoise(seed + (uint64_t)o, x * freq, z * freq);
		amp *= 0.5;
		freq *= 2;
	}
	return sum;
}

/* Fill t (already tile_init'ed) with fBm heights quantised to 1 cm. */
static void fill_fbm(struct tile *t, const struct fbm *f, uint64_t seed)
{
	double step = (double)(1u << t->lod);
	double chunk = (double)(1u << t->chunk_log2);

	t->quantum_um = TILE_DEFAULT_QUANTUM_UM;
	for (uint32_t j = 0; j < t->side; j++) {
		for (uint32_t i = 0; i < t->side; i++) {
			double x = t->cx * chunk + i * step;
			double z = t->cz * chunk + j * step;
			double m = fbm_at(f, seed, x, z) + 100;

			t->h[j * t->side + i] = (int32_t)floor(m * 100 + 0.5);
		}
	}
}

static const struct fbm smooth_fbm = { 6, 1024, 400 };
static const struct fbm rough_fbm = { 10, 2048, 400 };

/* ---- helpers ---- */

static void fill_random(struct tile *t, uint64_t *s)
{
	for (size_t k = 0; k < (size_t)t->side * t->side; k++)
		t->h[k] = (int32_t)(uint32_t)rnd(s);
}

static void set_meta(struct tile *t, uint64_t *s)
{
	t->fingerprint = rnd(s);
	t->seed = rnd(s);
	t->cx = (int32_t)(uint32_t)rnd(s);
	t->cz = (int32_t)(uint32_t)rnd(s);
	t->quantum_um = TILE_DEFAULT_QUANTUM_UM;
	t->edit_seq = rnd(s);
}

/*
 * The form encode() writes: 0, tile_encode()'s (format version 7 or 8,
 * tANS); 1, tile_encode_lz21()'s (version 1 or 2, which decoders still
 * read); 2, TILE_FORM_CODED (versions 3 and 4: the coded form with 2 rANS
 * states); 3, TILE_FORM_CODED8 (versions 5 and 6, 8 rANS states). Tests
 * of the older forms run with setup_lz21(), setup_coded2() and
 * setup_coded8(); tests of all are listed four times.
 */
static int legacy;
#define LZ21 (legacy == 1)

static int setup_lz21(void **state)
{
	(void)state;
	legacy = 1;
	return 0;
}

static int setup_coded2(void **state)
{
	(void)state;
	legacy = 2;
	return 0;
}

static int setup_coded8(void **state)
{
	(void)state;
	legacy = 3;
	return 0;
}

/* The version encode() writes (layers: with a material layer). */
static unsigned form_version(int layers)
{
	unsigned v = legacy == 1 ? TILE_VERSION_LZ21 : legacy == 2 ? TILE_VERSION_CODED2 :
		     legacy == 3 ? TILE_VERSION_CODED8 : TILE_VERSION;

	return v + (layers ? 1 : 0);
}

static int teardown_form(void **state)
{
	(void)state;
	legacy = 0;
	return 0;
}

/* Encode t into a new buffer (caller frees); fails the test on error. */
static uint8_t *encode(const struct tile *t, size_t *len)
{
	size_t cap = tile_encode_bound(t);
	uint8_t *buf = malloc(cap);

	assert_non_null(buf);
	if (legacy >= 2) {
		void *z = malloc(tile_encode_scratch_size(t));

		assert_non_null(z);
		assert_int_equal(tile_encode_form_in(t, legacy == 2 ? TILE_FORM_CODED : TILE_FORM_CODED8,
						     z, buf, cap, len), 0);
		free(z);
	} else {
		assert_int_equal((legacy ? tile_encode_lz21 : tile_encode)(t, buf, cap, len), 0);
	}
	assert_true(*len <= cap);
	return buf;
}

static void assert_tiles_equal(const struct tile *a, const struct tile *b)
{
	assert_int_equal(a->fingerprint, b->fingerprint);
	assert_int_equal(a->seed, b->seed);
	assert_int_equal(a->cx, b->cx);
	assert_int_equal(a->cz, b->cz);
	assert_int_equal(a->lod, b->lod);
	assert_int_equal(a->chunk_log2, b->chunk_log2);
	assert_int_equal(a->side, b->side);
	assert_int_equal(a->quantum_um, b->quantum_um);
	assert_int_equal(a->edit_seq, b->edit_seq);
	assert_memory_equal(a->h, b->h, (size_t)a->side * a->side * 4);
	assert_int_equal(a->material == NULL, b->material == NULL);
	if (a->material)
		assert_memory_equal(a->material, b->material, (size_t)a->side * a->side);
}

/* Encode, decode, compare, and check the re-encoding is identical. */
static void round_trip(const struct tile *t)
{
	size_t len, len2;
	uint8_t *buf = encode(t, &len), *buf2;
	struct tile d;

	assert_int_equal(tile_decode(buf, len, &d), 0);
	assert_tiles_equal(t, &d);
	buf2 = encode(&d, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(buf, buf2, len);
	tile_release(&d);
	free(buf);
	free(buf2);
}

/* Recompute the checksum field after a deliberate change. */
static void reseal(uint8_t *buf, size_t len)
{
	XXH3_state_t *st = XXH3_createState();
	uint64_t sum;

	assert_non_null(st);
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, buf, 56);
	XXH3_64bits_update(st, buf + 64, len - 64);
	sum = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	for (int b = 0; b < 8; b++)
		buf[56 + b] = (uint8_t)(sum >> (8 * b));
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (unsigned k = 0; k < 4; k++)
		p[k] = (uint8_t)(v >> 8 * k);
}

static int is_zeroed(const struct tile *t)
{
	static const struct tile zero;

	return memcmp(t, &zero, sizeof(zero)) == 0;
}

/* Decode len bytes of buf, expect error rc, and a zeroed tile. */
static void expect_reject(const uint8_t *buf, size_t len, int rc)
{
	struct tile d;

	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(tile_decode(buf, len, &d), rc);
	assert_true(is_zeroed(&d));
}

/* A small rough tile (chunk_log2 6, lod 0: side 65) to corrupt, in the
 * current form: 2 planes in the old one. */
static uint8_t *sample_encoding(size_t *len)
{
	struct tile t;
	uint8_t *buf;

	assert_int_equal(tile_init(&t, 6, 0), 0);
	t.cx = 3;
	t.cz = -7;
	fill_fbm(&t, &rough_fbm, 99);
	t.h[100] += 5000; /* a spike, so that the payload has two planes */
	t.fingerprint = 0x1122334455667788ull;
	t.seed = 42;
	buf = encode(&t, len);
	assert_int_equal(buf[35], LZ21 ? 2 : 0);
	assert_int_equal(buf[4], form_version(0));
	tile_release(&t);
	return buf;
}

/* Set header byte off to v, reseal, expect rc. */
static void expect_field_reject(size_t off, uint8_t v, int rc)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);

	buf[off] = v;
	reseal(buf, len);
	expect_reject(buf, len, rc);
	free(buf);
}

/* ---- reference filter: the document's formulas, written naively ---- */

/*
 * Residuals with predictor order ox along x and oy along z (0..2), each
 * clamped near the edges as in docs/tile-format.md; ox = 2, oy = 1 is
 * filter 1.
 */
static void ref_residuals(const int32_t *h, uint32_t w, int ox, int oy,
			  uint32_t *r)
{
	size_t n = (size_t)w * w;
	uint32_t *e = malloc(n * 4);

	assert_non_null(e);
	for (uint32_t j = 0; j < w; j++) {
		for (uint32_t i = 0; i < w; i++) {
			uint32_t d0 = (uint32_t)h[j * w + i] - (uint32_t)h[0];
			uint32_t d1 = j >= 1 ? (uint32_t)h[(j - 1) * w + i] -
				      (uint32_t)h[0] : 0;
			uint32_t d2 = j >= 2 ? (uint32_t)h[(j - 2) * w + i] -
				      (uint32_t)h[0] : 0;
			int o = (int)j < oy ? (int)j : oy;

			e[j * w + i] = o == 0 ? d0 : o == 1 ? d0 - d1 :
				       d0 - 2 * d1 + d2;
		}
	}
	for (uint32_t j = 0; j < w; j++) {
		for (uint32_t i = 0; i < w; i++) {
			const uint32_t *row = e + (size_t)j * w;
			int o = (int)i < ox ? (int)i : ox;

			r[j * w + i] = o == 0 ? row[i] :
				       o == 1 ? row[i] - row[i - 1] :
				       row[i] - 2 * row[i - 1] + row[i - 2];
		}
	}
	free(e);
}

/* Zigzag and split into planes as the document says; returns bytes. */
static size_t ref_payload(const uint32_t *r, size_t n, uint8_t *out)
{
	uint32_t max = 0;
	unsigned planes;

	for (size_t k = 0; k < n; k++) {
		int64_t s = (int32_t)r[k];
		uint32_t z = (uint32_t)(s >= 0 ? 2 * s : -2 * s - 1);

		max = z > max ? z : max;
	}
	planes = max < 256 ? 1 : max < 65536 ? 2 : max < (1u << 24) ? 3 : 4;
	for (unsigned p = 0; p < planes; p++) {
		for (size_t k = 0; k < n; k++) {
			int64_t s = (int32_t)r[k];
			uint32_t z = (uint32_t)(s >= 0 ? 2 * s : -2 * s - 1);

			out[p * n + k] = (uint8_t)(z >> (8 * (planes - 1 - p)));
		}
	}
	return planes * n;
}

/* ---- tests: shapes ---- */

static void test_tile_init_sets_side_for_each_lod(void **state)
{
	struct tile t;

	(void)state;
	for (int lod = 0; lod <= 8; lod++) {
		assert_int_equal(tile_init(&t, 8, lod), 0);
		assert_int_equal(t.side, (256u >> lod) + 1);
		assert_int_equal(t.lod, lod);
		assert_int_equal(t.chunk_log2, 8);
		assert_int_equal(t.h[(size_t)t.side * t.side - 1], 0);
		tile_release(&t);
		assert_true(is_zeroed(&t));
	}
	tile_release(&t);
	tile_release(NULL);
}

static void test_tile_init_rejects_bad_shapes(void **state)
{
	struct tile t;

	(void)state;
	assert_int_equal(tile_init(&t, 3, 0), ERR_INVAL);
	assert_int_equal(tile_init(&t, 13, 0), ERR_INVAL);
	assert_int_equal(tile_init(&t, 8, 9), ERR_INVAL);
	assert_int_equal(tile_init(&t, 8, -1), ERR_INVAL);
	assert_null(t.h);
	assert_int_equal(tile_init(NULL, 8, 0), ERR_INVAL);
}

static void test_tile_height_m_scales_by_quantum(void **state)
{
	struct tile t;

	(void)state;
	assert_int_equal(tile_init(&t, 4, 4), 0);
	t.quantum_um = 10000;
	t.h[3] = -12345;
	assert_true(tile_height_m(&t, 1, 1) == -123.45);
	t.quantum_um = 1000000;
	assert_true(tile_height_m(&t, 1, 1) == -12345.0);
	tile_release(&t);
}

/* ---- tests: round trips ---- */

static void test_tile_round_trips_random_heights_at_every_lod(void **state)
{
	uint64_t s = 1;

	(void)state;
	for (int lod = 0; lod <= 8; lod++) {
		struct tile t;

		assert_int_equal(tile_init(&t, 8, lod), 0);
		set_meta(&t, &s);
		t.lod = (uint8_t)lod;
		fill_random(&t, &s);
		round_trip(&t);
		tile_release(&t);
	}
}

static void test_tile_round_trips_smooth_terrain_at_several_lods(void **state)
{
	(void)state;
	for (int lod = 0; lod <= 8; lod += 2) {
		struct tile t;

		assert_int_equal(tile_init(&t, 8, lod), 0);
		t.cx = -5;
		t.cz = 11;
		fill_fbm(&t, lod & 2 ? &smooth_fbm : &rough_fbm, 7);
		round_trip(&t);
		tile_release(&t);
	}
}

static void test_tile_round_trips_every_chunk_size(void **state)
{
	uint64_t s = 2;

	(void)state;
	for (int c = TILE_MIN_CHUNK_LOG2; c <= TILE_MAX_CHUNK_LOG2; c++) {
		struct tile t;
		int lod = c > 10 ? c - 6 : c / 2;

		assert_int_equal(tile_init(&t, c, lod), 0);
		set_meta(&t, &s);
		fill_fbm(&t, &smooth_fbm, 3);
		t.h[t.side + 1] += (int32_t)(rnd(&s) % 1000);
		round_trip(&t);
		tile_release(&t);

		assert_int_equal(tile_init(&t, c, c), 0);
		set_meta(&t, &s);
		fill_random(&t, &s);
		round_trip(&t);
		tile_release(&t);
	}
}

static void test_tile_round_trips_extreme_values(void **state)
{
	static const int32_t ext[] = { INT32_MIN, INT32_MAX, 0, -1, 1,
				       INT32_MIN + 1, INT32_MAX - 1 };
	uint64_t s = 3;
	struct tile t;

	(void)state;
	assert_int_equal(tile_init(&t, 5, 0), 0);
	for (int pass = 0; pass < 4; pass++) {
		t.cx = pass & 1 ? INT32_MIN : INT32_MAX;
		t.cz = pass & 2 ? INT32_MIN : INT32_MAX;
		t.fingerprint = t.seed = t.edit_seq = UINT64_MAX;
		t.quantum_um = pass & 1 ? 1 : UINT32_MAX;
		for (size_t k = 0; k < (size_t)t.side * t.side; k++)
			t.h[k] = pass == 0 ? INT32_MIN : pass == 1 ? INT32_MAX :
				 ext[rnd(&s) % 7];
		round_trip(&t);
	}
	for (size_t k = 0; k < (size_t)t.side * t.side; k++)
		t.h[k] = (k ^ (k / t.side)) & 1 ? INT32_MIN : INT32_MAX;
	round_trip(&t);
	tile_release(&t);
}

static void test_tile_encode_uses_fewest_planes(void **state)
{
	static const struct {
		int32_t step;
		unsigned planes;
	} cases[] = {
		{ 0, 1 }, { 63, 1 }, { 64, 2 }, { 16383, 2 }, { 16384, 3 },
		{ 4194303, 3 }, { 4194304, 4 },
	};
	struct tile t;

	(void)state;
	assert_int_equal(tile_init(&t, 4, 2), 0);
	t.quantum_um = 10000;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t len;
		uint8_t *buf;

		/*
		 * A bump of +step at (2, 2): the largest residual is +2 step
		 * at (3, 3) (weight 2 of the stencil), so zigzag 4 step.
		 */
		memset(t.h, 0, (size_t)t.side * t.side * 4);
		t.h[2 * t.side + 2] = cases[c].step;
		buf = encode(&t, &len);
		assert_int_equal(buf[35], cases[c].planes);
		assert_int_equal(len, 64 + cases[c].planes * 25);
		round_trip(&t);
		free(buf);
	}
	tile_release(&t);
}

static void test_tile_payload_matches_reference_filter(void **state)
{
	uint64_t s = 4;

	(void)state;
	for (int pass = 0; pass < 6; pass++) {
		struct tile t;
		size_t len, n;
		uint8_t *buf, *ref;
		uint32_t *r;

		assert_int_equal(tile_init(&t, 6, pass % 3), 0);
		set_meta(&t, &s);
		if (pass < 3)
			fill_fbm(&t, &rough_fbm, (uint64_t)pass);
		else
			fill_random(&t, &s);
		n = (size_t)t.side * t.side;
		r = malloc(n * 4);
		ref = malloc(n * 4);
		assert_true(r && ref);
		ref_residuals(t.h, t.side, 2, 1, r);
		buf = encode(&t, &len);
		assert_int_equal(len - 64, ref_payload(r, n, ref));
		assert_memory_equal(buf + 64, ref, len - 64);
		free(r);
		free(ref);
		free(buf);
		tile_release(&t);
	}
}

/* ---- tests: encode arguments ---- */

static void test_tile_encode_rejects_inconsistent_tile(void **state)
{
	struct tile t;
	uint8_t buf[64 + 4 * 25];
	size_t len = 0;

	(void)state;
	assert_int_equal(tile_init(&t, 4, 2), 0);
	t.quantum_um = 10000;
	assert_int_equal(tile_encode(&t, buf, sizeof(buf), &len), 0);
	t.quantum_um = 0;
	assert_int_equal(tile_encode(&t, buf, sizeof(buf), &len), ERR_INVAL);
	t.quantum_um = 10000;
	t.side = 4;
	assert_int_equal(tile_encode(&t, buf, sizeof(buf), &len), ERR_INVAL);
	t.side = 5;
	t.lod = 5;
	assert_int_equal(tile_encode(&t, buf, sizeof(buf), &len), ERR_INVAL);
	t.lod = 2;
	t.chunk_log2 = 3;
	assert_int_equal(tile_encode(&t, buf, sizeof(buf), &len), ERR_INVAL);
	t.chunk_log2 = 4;
	assert_int_equal(tile_encode(&t, NULL, sizeof(buf), &len), ERR_INVAL);
	assert_int_equal(tile_encode(&t, buf, sizeof(buf), NULL), ERR_INVAL);
	assert_int_equal(tile_encode(NULL, buf, sizeof(buf), &len), ERR_INVAL);
	tile_release(&t);
	t.side = 5;
	t.chunk_log2 = 4;
	t.lod = 2;
	t.quantum_um = 1;
	assert_int_equal(tile_encode(&t, buf, sizeof(buf), &len), ERR_INVAL);
}

static void test_tile_encode_rejects_short_buffer(void **state)
{
	struct tile t;
	size_t len, len2 = 12345;
	uint8_t *buf;

	(void)state;
	assert_int_equal(tile_init(&t, 6, 0), 0);
	fill_fbm(&t, &smooth_fbm, 1);
	buf = encode(&t, &len);
	assert_int_equal(tile_encode(&t, buf, len - 1, &len2), ERR_TOOBIG);
	assert_int_equal(len2, 12345);
	assert_int_equal(tile_encode(&t, buf, len, &len2), 0);
	assert_int_equal(len2, len);
	free(buf);
	tile_release(&t);
}

/* ---- tests: decoder rejections, in the document's order ---- */

static void test_tile_decode_rejects_truncated_header(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);

	(void)state;
	for (size_t cut = 0; cut < 64; cut++)
		expect_reject(buf, cut, ERR_TRUNC);
	free(buf);
}

static void test_tile_decode_rejects_truncated_payload(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);

	(void)state;
	expect_reject(buf, 64, ERR_TRUNC);
	expect_reject(buf, len / 2, ERR_TRUNC);
	expect_reject(buf, len - 1, ERR_TRUNC);
	free(buf);
}

static void test_tile_decode_rejects_trailing_bytes(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);
	uint8_t *big = calloc(len + 16, 1);

	(void)state;
	assert_non_null(big);
	memcpy(big, buf, len);
	expect_reject(big, len + 1, ERR_TOOBIG);
	expect_reject(big, len + 16, ERR_TOOBIG);
	free(big);
	free(buf);
}

static void test_tile_decode_rejects_wrong_magic(void **state)
{
	(void)state;
	expect_field_reject(0, 'X', ERR_MAGIC);
	expect_field_reject(3, 'n', ERR_MAGIC);
}

static void test_tile_decode_rejects_unknown_version(void **state)
{
	(void)state;
	expect_field_reject(4, 9, ERR_VERSION);
	expect_field_reject(4, 0, ERR_VERSION);
	expect_field_reject(5, 1, ERR_VERSION);
	/* a heights-only body relabelled as the layered version lacks its
	 * layer section; relabelled as the other kind, its filter is wrong */
	expect_field_reject(4, (uint8_t)form_version(1), ERR_TRUNC);
	expect_field_reject(4, LZ21 ? TILE_VERSION : TILE_VERSION_LZ21, ERR_CORRUPT);
	/* coded by one coder and read by another: 2 rANS states, 8, tANS */
	if (!LZ21) {
		expect_field_reject(4, legacy == 2 ? TILE_VERSION : TILE_VERSION_CODED2,
				    ERR_CORRUPT);
		expect_field_reject(4, legacy == 3 ? TILE_VERSION : TILE_VERSION_CODED8,
				    ERR_CORRUPT);
	}
}

/* A LOD-2 tile of smooth terrain with a material layer. */
static uint8_t *material_encoding(struct tile *t, size_t *len)
{
	assert_int_equal(tile_init(t, 8, 2), 0);
	fill_fbm(t, &smooth_fbm, 5);
	t->quantum_um = TILE_DEFAULT_QUANTUM_UM;
	assert_int_equal(tile_add_material(t), 0);
	for (size_t k = 0; k < (size_t)t->side * t->side; k++)
		t->material[k] = (uint8_t)(k % 7 == 0 ? 4 : 2);
	return encode(t, len);
}

static void test_tile_material_layer_round_trips_in_layered_version(void **state)
{
	size_t len, n;
	struct tile t, d;
	uint8_t *buf;

	(void)state;
	buf = material_encoding(&t, &len);
	n = (size_t)t.side * t.side;
	assert_int_equal(buf[4], form_version(1));
	if (LZ21)
		assert_int_equal(len, 64 + (size_t)buf[35] * n + 4 + 8 + n);
	else /* the coded heights' length, then the layer section */
		assert_int_equal(len, 64 + 4 + le32(buf + 64) + 4 + 8 + n);
	assert_int_equal(tile_decode(buf, len, &d), 0);
	assert_tiles_equal(&t, &d);
	assert_non_null(d.material);
	assert_memory_equal(d.material, t.material, n);
	round_trip(&t);
	tile_release(&d);
	/* the same heights without the layer are a version 1 tile */
	free(t.material);
	t.material = NULL;
	free(buf);
	buf = encode(&t, &len);
	assert_int_equal(buf[4], form_version(0));
	assert_int_equal(tile_decode(buf, len, &d), 0);
	assert_null(d.material);
	tile_release(&d);
	tile_release(&t);
	free(buf);
}

static void test_tile_rejects_unknown_or_broken_layers(void **state)
{
	size_t len, n, at;
	struct tile t;
	uint8_t *buf;

	(void)state;
	buf = material_encoding(&t, &len);
	n = (size_t)t.side * t.side;
	at = len - n - 8 - 4;
	buf[at + 4] = 9;                  /* a layer id from the future */
	reseal(buf, len);
	expect_reject(buf, len, ERR_VERSION);
	buf[at + 4] = TILE_LAYER_MATERIAL;
	buf[at] = 2;                      /* two layers announced, one present */
	reseal(buf, len);
	expect_reject(buf, len, ERR_CORRUPT);
	buf[at] = 1;
	buf[at + 8] = (uint8_t)(n - 1);   /* wrong layer length */
	reseal(buf, len);
	expect_reject(buf, len, ERR_CORRUPT);
	buf[at + 8] = (uint8_t)n;
	reseal(buf, len);
	expect_reject(buf, len - 1, ERR_TRUNC);
	expect_reject(buf, at + 5, ERR_TRUNC);
	free(buf);
	tile_release(&t);
}

static void test_tile_decode_rejects_bad_header_length(void **state)
{
	(void)state;
	expect_field_reject(6, 63, ERR_CORRUPT);
	expect_field_reject(6, 128, ERR_CORRUPT);
	expect_field_reject(7, 1, ERR_CORRUPT);
}

static void test_tile_decode_rejects_unknown_filter(void **state)
{
	(void)state;
	expect_field_reject(34, 0, ERR_CORRUPT);
	expect_field_reject(34, LZ21 ? 2 : 1, ERR_CORRUPT);
	expect_field_reject(34, 4, ERR_CORRUPT);
	expect_field_reject(34, 255, ERR_CORRUPT);
}

static void test_tile_decode_rejects_planes_out_of_range(void **state)
{
	(void)state;
	/* versions 3 to 6 have no planes: the byte is 0 */
	expect_field_reject(35, LZ21 ? 0 : 1, ERR_CORRUPT);
	expect_field_reject(35, 5, ERR_CORRUPT);
	expect_field_reject(35, 255, ERR_CORRUPT);
}

static void test_tile_decode_rejects_chunk_log2_out_of_range(void **state)
{
	(void)state;
	expect_field_reject(33, TILE_MIN_CHUNK_LOG2 - 1, ERR_CORRUPT);
	expect_field_reject(33, 0, ERR_CORRUPT);
	expect_field_reject(33, TILE_MAX_CHUNK_LOG2 + 1, ERR_TOOBIG);
	expect_field_reject(33, 255, ERR_TOOBIG);
}

static void test_tile_decode_rejects_lod_above_chunk_log2(void **state)
{
	(void)state;
	expect_field_reject(32, 7, ERR_CORRUPT);
	expect_field_reject(32, 255, ERR_CORRUPT);
}

static void test_tile_decode_rejects_side_mismatch(void **state)
{
	(void)state;
	expect_field_reject(36, 64, ERR_CORRUPT);
	expect_field_reject(36, 66, ERR_CORRUPT);
	expect_field_reject(39, 1, ERR_CORRUPT);
	/* lod 1 with side still 65 */
	expect_field_reject(32, 1, ERR_CORRUPT);
}

static void test_tile_decode_rejects_zero_quantum(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);

	(void)state;
	memset(buf + 40, 0, 4);
	reseal(buf, len);
	expect_reject(buf, len, ERR_CORRUPT);
	free(buf);
}

static void test_tile_decode_rejects_checksum_mismatch(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);
	/* (versions 3 to 6: bytes 64..67 are the coded length, checked
	 * against the input length first) */
	static const size_t at[] = { 8, 16, 24, 28, 40, 44, 48, 55, 56, 63,
				     64, 68, 200 };

	(void)state;
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		if (!LZ21 && at[k] == 64)
			continue;
		buf[at[k]] ^= 0x10;
		expect_reject(buf, len, ERR_CHECKSUM);
		buf[at[k]] ^= 0x10;
	}
	if (!LZ21) {    /* 16 bytes more (cut short) or less (trailing bytes) */
		buf[64] ^= 0x10;
		expect_reject(buf, len, buf[64] & 0x10 ? ERR_TRUNC : ERR_TOOBIG);
		buf[64] ^= 0x10;
	}
	buf[len - 1] ^= 1;
	expect_reject(buf, len, ERR_CHECKSUM);
	free(buf);
}

static void test_tile_decode_rejects_nonzero_first_residual(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);
	size_t n = 65 * 65;

	(void)state;
	buf[64 + n] = 2; /* low plane, sample (0, 0): residual +1 */
	reseal(buf, len);
	expect_reject(buf, len, ERR_CORRUPT);
	buf[64 + n] = 0;
	buf[64] = 1; /* high plane */
	reseal(buf, len);
	expect_reject(buf, len, ERR_CORRUPT);
	free(buf);
}

static void test_tile_decode_rejects_surplus_planes(void **state)
{
	struct tile t;
	size_t len, n;
	uint8_t *buf, *wide;

	(void)state;
	assert_int_equal(tile_init(&t, 4, 0), 0);
	t.quantum_um = 10000;
	t.h[20] = 5; /* one plane is enough */
	buf = encode(&t, &len);
	n = (size_t)t.side * t.side;
	assert_int_equal(buf[35], 1);
	wide = calloc(64 + 2 * n, 1);
	assert_non_null(wide);
	memcpy(wide, buf, 64);
	memcpy(wide + 64 + n, buf + 64, n); /* all-zero high plane */
	wide[35] = 2;
	reseal(wide, 64 + 2 * n);
	expect_reject(wide, 64 + 2 * n, ERR_CORRUPT);
	free(wide);
	free(buf);
	tile_release(&t);
}

static void test_tile_decode_rejects_null_arguments(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);
	struct tile t;

	(void)state;
	assert_int_equal(tile_decode(buf, len, NULL), ERR_INVAL);
	assert_int_equal(tile_decode(NULL, len, &t), ERR_INVAL);
	assert_true(is_zeroed(&t));
	assert_int_equal(tile_decode_header(buf, len, NULL), ERR_INVAL);
	free(buf);
}

/* ---- tests: header-only decoding, checksum ---- */

static void test_tile_decode_header_reads_fields_without_payload(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);
	struct tile t;

	(void)state;
	assert_int_equal(tile_decode_header(buf, 64, &t), 0);
	assert_null(t.h);
	assert_int_equal(t.side, 65);
	assert_int_equal(t.cx, 3);
	assert_int_equal(t.cz, -7);
	assert_int_equal(t.seed, 42);
	assert_int_equal(t.fingerprint, 0x1122334455667788ull);
	assert_int_equal(t.quantum_um, 10000);
	assert_int_equal(tile_decode_header(buf, 63, &t), ERR_TRUNC);
	assert_true(is_zeroed(&t));
	buf[0] = 0;
	assert_int_equal(tile_decode_header(buf, len, &t), ERR_MAGIC);
	free(buf);
}

static void test_tile_checksum_covers_all_but_itself(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len);
	uint8_t *copy = malloc(len);
	uint64_t sum;

	(void)state;
	assert_non_null(copy);
	memcpy(copy, buf, len);
	memcpy(&sum, buf + 56, 8); /* compared byte by byte below */
	reseal(copy, len);
	assert_memory_equal(copy, buf, len);
	sum = tile_checksum(buf);
	for (int b = 0; b < 8; b++)
		assert_int_equal(buf[56 + b], (uint8_t)(sum >> (8 * b)));
	free(copy);
	free(buf);
}

/* ---- tests: random corruption ---- */

static uint8_t *mutate(const uint8_t *src, size_t len, uint64_t *s,
		       size_t *out_len)
{
	size_t cap = len + 64, n = len;
	uint8_t *b = malloc(cap);
	unsigned kind = (unsigned)(rnd(s) % 6);

	assert_non_null(b);
	memcpy(b, src, len);
	switch (kind) {
	case 0: /* truncate anywhere */
		n = (size_t)(rnd(s) % len);
		break;
	case 1: /* append garbage */
		n = len + 1 + (size_t)(rnd(s) % 63);
		for (size_t k = len; k < n; k++)
			b[k] = (uint8_t)rnd(s);
		break;
	case 2: /* flip 1..4 bits anywhere: the checksum catches these */
	case 3: /* the same, but resealed so the payload checks run */
		for (unsigned f = 1 + (unsigned)(rnd(s) % 4); f; f--) {
			size_t at = (size_t)(rnd(s) % len);

			b[at] ^= (uint8_t)(1u << (rnd(s) % 8));
		}
		break;
	case 4: /* a random header byte, resealed */
		b[rnd(s) % 56] = (uint8_t)rnd(s);
		break;
	default: /* a run of random payload bytes, resealed */
		for (size_t at = 64 + (size_t)(rnd(s) % (len - 64)), k = 0;
		     at < len && k < 32; at++, k++)
			b[at] = (uint8_t)rnd(s);
		break;
	}
	if (kind >= 3 && n >= 64)
		reseal(b, n);
	*out_len = n;
	return b;
}

static void check_mutant(const uint8_t *b, size_t n, unsigned *ok)
{
	struct tile t;
	int rc = tile_decode(b, n, &t);

	if (rc) {
		assert_true(rc < 0);
		assert_true(is_zeroed(&t));
		return;
	}
	/* Accepted input must be canonical: re-encoding gives it back. */
	{
		size_t len2;
		uint8_t *b2 = encode(&t, &len2);

		assert_int_equal(len2, n);
		assert_memory_equal(b2, b, n);
		free(b2);
	}
	tile_release(&t);
	(*ok)++;
}

static void test_tile_decode_survives_random_corruption(void **state)
{
	uint64_t s = 0x5eed;
	uint8_t *base[3];
	size_t blen[3];
	unsigned ok = 0;
	struct tile t;

	(void)state;
	base[0] = sample_encoding(&blen[0]);
	assert_int_equal(tile_init(&t, 4, 1), 0);
	set_meta(&t, &s);
	fill_random(&t, &s);
	base[1] = encode(&t, &blen[1]);
	tile_release(&t);
	assert_int_equal(tile_init(&t, 5, 0), 0);
	fill_fbm(&t, &smooth_fbm, 5);
	base[2] = encode(&t, &blen[2]);
	tile_release(&t);

	for (int m = 0; m < MUTATIONS; m++) {
		unsigned which = (unsigned)(rnd(&s) % 3);
		size_t n;
		uint8_t *b = mutate(base[which], blen[which], &s, &n);

		check_mutant(b, n, &ok);
		free(b);
	}
	/* Resealed payload changes mostly decode: the fuzzing went deep. */
	print_message("%u of %d mutants decoded (and re-encoded exactly)\n",
		      ok, MUTATIONS);
	assert_true(ok > MUTATIONS / 20);
	for (int k = 0; k < 3; k++)
		free(base[k]);
}

/* ---- tests: the coded form (versions 3 and 4) ---- */

/*
 * Generated tiles of every built-in preset at several LODs round-trip,
 * re-encode to the same bytes, and decode alike from the old form; across
 * the presets both filters are chosen (default's splined grid suits filter
 * 2, alpine's crests filter 3), and the coded body is smaller than the old
 * one's byte planes; tiles of side below TILE_CODED_MIN_SIDE (LOD 4 and 8
 * here) are written in the old form.
 */
static void test_tile_round_trips_generated_tiles_of_every_preset(void **state)
{
	static const int lods[] = { 0, 1, 3, 4, 8 };
	struct preset **pv = NULL;
	size_t np = 0;
	unsigned seen[4] = { 0 };

	(void)state;
	assert_int_equal(preset_load_builtin(&pv, &np), 0);
	assert_true(np > 0);
	for (size_t p = 0; p < np; p++) {
		for (size_t l = 0; l < sizeof(lods) / sizeof(lods[0]); l++) {
			for (int k = 0; k < 2; k++) {
				struct tile t, d;
				size_t len, len1;
				uint8_t *buf, *old;

				if (lods[l] > preset_chunk_log2(pv[p]))
					continue;
				assert_int_equal(pipeline_generate(pv[p], 77, lods[l], 31 * k - 9,
								   5 - 17 * k, &t), 0);
				round_trip(&t);
				buf = encode(&t, &len);
				if (t.side < TILE_CODED_MIN_SIDE) {
					/* small tiles keep the old form */
					assert_int_equal(buf[4], TILE_VERSION_LZ21);
					assert_int_equal(buf[34], 1);
				} else {
					assert_int_equal(buf[4], TILE_VERSION);
					assert_true(buf[34] == 2 || buf[34] == 3);
				}
				if (lods[l] == 0)
					seen[buf[34]]++;
				legacy = 1;
				old = encode(&t, &len1);
				legacy = 0;
				if (t.side >= 65)
					assert_true(len < len1);
				assert_int_equal(tile_decode(old, len1, &d), 0);
				assert_tiles_equal(&t, &d);
				tile_release(&d);
				free(old);
				free(buf);
				tile_release(&t);
			}
		}
	}
	assert_true(seen[2] > 0);
	assert_true(seen[3] > 0);
	preset_destroy_all(pv, np);
}

/* Heights chosen to hurt: constant, steps of the full int32 range, lone
 * spikes on corners and edges, stripes; every chunk size and LOD. */
static void test_tile_round_trips_adversarial_heights(void **state)
{
	uint64_t s = 99;

	(void)state;
	for (int clog2 = TILE_MIN_CHUNK_LOG2; clog2 <= 9; clog2++) {
		for (int lod = 0; lod <= clog2; lod += 1 + (clog2 - lod) / 3) {
			struct tile t;
			size_t n, w;

			assert_int_equal(tile_init(&t, clog2, lod), 0);
			set_meta(&t, &s);
			w = t.side;
			n = w * w;
			for (int kind = 0; kind < 7; kind++) {
				for (size_t k = 0; k < n; k++) {
					size_t i = k % w, j = k / w;

					switch (kind) {
					case 0: t.h[k] = -123456; break;
					case 1: t.h[k] = i < w / 2 ? INT32_MIN : INT32_MAX; break;
					case 2: t.h[k] = j > w / 3 ? INT32_MAX : INT32_MIN + 1; break;
					case 3: t.h[k] = (i == 0 || j == 0 || i == w - 1 || j == w - 1) &&
								 (i + j) % 3 == 0 ? INT32_MAX : 0; break;
					case 4: t.h[k] = (int32_t)((uint32_t)((i * 7919u) ^ (j * 104729u)) << (k % 31)); break;
					case 5: t.h[k] = (int32_t)(rnd(&s) >> 32); break;
					default: t.h[k] = (int32_t)(((i / 4 + j / 4) & 1) * 1000000) - 500000; break;
					}
				}
				round_trip(&t);
			}
			tile_release(&t);
		}
	}
}

/* A coded tile relabelled with the other filter, or with its lengths
 * bent, is rejected, never misread. */
static void test_tile_decode_rejects_inconsistent_coded_payload(void **state)
{
	size_t len, coded;
	uint8_t *buf = sample_encoding(&len), *big;

	(void)state;
	assert_int_equal(len, 64 + 4 + le32(buf + 64));
	coded = len - 68;
	buf[34] ^= 1;                          /* filter 2 <-> 3 */
	reseal(buf, len);
	expect_reject(buf, len, ERR_CORRUPT);
	buf[34] ^= 1;
	for (unsigned b = 0; b < 4; b++) {     /* the bit stream's length */
		buf[68 + b] ^= 1;
		reseal(buf, len);
		expect_reject(buf, len, ERR_CORRUPT);
		buf[68 + b] ^= 1;
	}
	/* two more bytes inside the coded length: one more rANS unit */
	big = calloc(len + 2, 1);
	assert_non_null(big);
	memcpy(big, buf, len);
	big[64] = (uint8_t)(coded + 2);
	big[65] = (uint8_t)((coded + 2) >> 8);
	reseal(big, len + 2);
	expect_reject(big, len + 2, ERR_CORRUPT);
	/* and one byte: an odd number of rANS bytes */
	big[64] = (uint8_t)(coded + 1);
	big[65] = (uint8_t)((coded + 1) >> 8);
	reseal(big, len + 1);
	expect_reject(big, len + 1, ERR_CORRUPT);
	/* a coded length beyond any tile of this side */
	memcpy(big, buf, len);
	big[67] = 0x40;
	reseal(big, len);
	expect_reject(big, len, ERR_CORRUPT);
	free(big);
	reseal(buf, len);
	expect_reject(buf, len - 1, ERR_TRUNC);
	free(buf);
}

/*
 * Versions 7 and 8: a tANS stream with its end mark moved, cleared or
 * followed by another byte, or a bit changed among the final states, is
 * rejected: each would otherwise be a second coding of some heights.
 */
static void test_tile_decode_rejects_noncanonical_tans_stream(void **state)
{
	size_t len;
	uint8_t *buf = sample_encoding(&len), *big;
	unsigned last, mark;

	(void)state;
	assert_int_equal(buf[4], TILE_VERSION);
	last = buf[len - 1];
	assert_int_not_equal(last, 0);
	mark = 31u - (unsigned)__builtin_clz(last);
	buf[len - 1] = 0;                       /* no end mark */
	reseal(buf, len);
	expect_reject(buf, len, ERR_CORRUPT);
	if (mark < 7) {                         /* a zero bit above the states */
		buf[len - 1] = (uint8_t)((last & ~(1u << mark)) | 2u << mark);
		reseal(buf, len);
		expect_reject(buf, len, ERR_CORRUPT);
	}
	for (unsigned b = 1; b <= 8 && b <= 8 * (len - 70); b++) {
		unsigned at = 8 * (unsigned)(len - 1) + mark - b;   /* in x[0] or x[1] */

		buf[len - 1] = (uint8_t)last;
		buf[at / 8] ^= (uint8_t)(1u << at % 8);
		reseal(buf, len);
		expect_reject(buf, len, ERR_CORRUPT);
		buf[at / 8] ^= (uint8_t)(1u << at % 8);
	}
	buf[len - 1] = (uint8_t)last;
	/* one more byte holding a new end mark: the old one becomes data */
	big = malloc(len + 1);
	assert_non_null(big);
	memcpy(big, buf, len);
	big[len] = 1;
	put_le32(big + 64, le32(buf + 64) + 1);
	reseal(big, len + 1);
	expect_reject(big, len + 1, ERR_CORRUPT);
	/* a zero byte anywhere in the coded part, the stream's start (left
	 * unread) included */
	for (size_t at = 68; at < len; at++) {
		memcpy(big, buf, at);
		big[at] = 0;
		memcpy(big + at + 1, buf + at, len - at);
		put_le32(big + 64, le32(buf + 64) + 1);
		reseal(big, len + 1);
		expect_reject(big, len + 1, ERR_CORRUPT);
	}
	free(big);
	reseal(buf, len);                       /* untouched, it decodes */
	{
		struct tile d;

		assert_int_equal(tile_decode(buf, len, &d), 0);
		tile_release(&d);
	}
	free(buf);
}

/* ---- tests: golden bytes ---- */

/*
 * The worked example of docs/tile-format.md, byte for byte. If this test
 * fails, either the code or the document is wrong; fix whichever it is.
 */
static const uint8_t worked_example[] = {
	0x54, 0x52, 0x52, 0x4e, 0x01, 0x00, 0x40, 0x00, /* magic version hlen */
	0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, /* fingerprint */
	0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seed */
	0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, /* cx cz */
	0x03, 0x04, 0x01, 0x01, 0x03, 0x00, 0x00, 0x00, /* lod..side */
	0x10, 0x27, 0x00, 0x00, 0x64, 0x00, 0x00, 0x00, /* quantum offset */
	0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* edit_seq */
	0xd4, 0xf7, 0xc4, 0x1f, 0xb7, 0x68, 0xa2, 0xb9, /* checksum */
	0x00, 0x06, 0x08, 0x03, 0x01, 0x06, 0x0f, 0x0a, /* payload: z */
	0x12,
};

static void test_tile_encodes_the_documented_example(void **state)
{
	static const int32_t h[9] = { 100, 103, 110, 98, 100, 109, 90, 97,
				      120 };
	struct tile t;
	size_t len;
	uint8_t *buf;

	(void)state;
	assert_int_equal(tile_init(&t, 4, 3), 0);
	memcpy(t.h, h, sizeof(h));
	t.fingerprint = 0x0123456789abcdefull;
	t.seed = 42;
	t.cx = -1;
	t.cz = 2;
	t.quantum_um = 10000;
	t.edit_seq = 7;
	buf = encode(&t, &len);
	assert_int_equal(len, sizeof(worked_example));
	assert_memory_equal(buf, worked_example, len);
	free(buf);
	tile_release(&t);
}

/*
 * Golden hash: XXH3-64 of the complete encoding of a fixed, integer-only
 * synthetic tile (side 257, three planes, every header field set). It
 * guards the format: any change to the header layout, the filter, the
 * plane order or the checksum changes it. Do not update the constant to
 * make the test pass unless the format version changes too.
 */
#define GOLDEN_TILE_XXH3 0x84992814d9a08e8full

static void fill_golden(struct tile *t)
{
	for (uint32_t j = 0; j < t->side; j++)
		for (uint32_t i = 0; i < t->side; i++)
			t->h[j * t->side + i] = (int32_t)(
				(int64_t)i * i * 7 - (int64_t)j * j * 5 +
				(int64_t)i * j * 3 + 1000000 +
				(int64_t)((i * 2654435761u ^ j * 40503u) % 20011u));
}

static void test_tile_golden_encoding_is_unchanged(void **state)
{
	struct tile t;
	size_t len;
	uint8_t *buf;
	uint64_t h;

	(void)state;
	assert_int_equal(tile_init(&t, 8, 0), 0);
	t.fingerprint = 0xfeedfacecafebeefull;
	t.seed = 1234567;
	t.cx = -123456;
	t.cz = 654321;
	t.quantum_um = 10000;
	t.edit_seq = 99;
	fill_golden(&t);
	buf = encode(&t, &len);
	h = XXH3_64bits(buf, len);
	print_message("golden: len %zu planes %u xxh3 0x%016llx\n", len,
		      buf[35], (unsigned long long)h);
	assert_int_equal(h, GOLDEN_TILE_XXH3);
	free(buf);
	tile_release(&t);
}

/*
 * Pinned coded bytes: XXH3-64 over the coded encodings (TILE_FORM_CODED,
 * versions 3 and 4; TILE_FORM_CODED8, versions 5 and 6) of a spread of
 * generated tiles per built-in preset (LODs 0, 1, 3 and the coarsest, six
 * scattered chunks each) and of adversarial heights at every chunk size.
 * The hashes were taken from the first encoder of each version, before
 * any speed work: an optimisation that changes one byte fails here. Do not
 * update them unless the format version changes too.
 */
struct pin {
	const char *name;
	uint64_t h;
};

static const struct pin pinned_presets[] = {
	{ "alpine", 0x1e01dbb96421f306ull },
	{ "canyons", 0x25832b9f4d9f82a3ull },
	{ "default", 0x1405ea3cfeea24eeull },
	{ "eroded", 0xdea35c172f227702ull },
	{ "islands", 0x0f497fcf5d9e216bull },
	{ "mesa", 0x5ec888b47fe72cefull },
	{ NULL, 0 },
};
#define PINNED_ADVERSARIAL 0xe2d328509b3ae558ull

static const struct pin pinned8_presets[] = {
	{ "alpine", 0xfdc8ba6075ff2cc5ull },
	{ "canyons", 0x40f11c4555c62694ull },
	{ "default", 0x35eace0e12662a69ull },
	{ "eroded", 0xe3fb2c44a9912418ull },
	{ "islands", 0xa57d0659270d1ea3ull },
	{ "mesa", 0x4e939f272309ec06ull },
	{ NULL, 0 },
};
#define PINNED8_ADVERSARIAL 0x4f2eb8fd25b49169ull

static const struct pin pinned7_presets[] = {
	{ "alpine", 0x8f334b871d75a5c4ull },
	{ "canyons", 0xb5b069c1692557b5ull },
	{ "default", 0x7d3d89b238659f02ull },
	{ "eroded", 0xeb6a39af91c0fa42ull },
	{ "islands", 0x37367b5b4324e65bull },
	{ "mesa", 0x6ae22127195cb895ull },
	{ NULL, 0 },
};
#define PINNED7_ADVERSARIAL 0x458e827d8d69648cull

/* The coded form whatever the side (tile_encode() writes small tiles as
 * version 1), decoded back to t's heights. */
static void hash_encoding(XXH3_state_t *st, const struct tile *t, enum tile_form form)
{
	size_t len, cap = tile_encode_bound(t);
	uint8_t *buf = malloc(cap);
	void *z = malloc(tile_encode_scratch_size(t));
	unsigned v = form == TILE_FORM_CODED ? TILE_VERSION_CODED2 :
		     form == TILE_FORM_CODED8 ? TILE_VERSION_CODED8 : TILE_VERSION;
	struct tile d;

	assert_non_null(buf);
	assert_non_null(z);
	assert_int_equal(tile_encode_form_in(t, form, z, buf, cap, &len), 0);
	assert_true(buf[4] == v || buf[4] == v + 1);
	assert_int_equal(tile_decode(buf, len, &d), 0);
	assert_tiles_equal(t, &d);
	tile_release(&d);
	XXH3_64bits_update(st, &len, sizeof(len));
	XXH3_64bits_update(st, buf, len);
	free(z);
	free(buf);
}

/* The adversarial heights of kind (0..7) for sample k of side w. */
static int32_t adversarial(int kind, size_t k, size_t w, uint64_t *s)
{
	size_t i = k % w, j = k / w;

	switch (kind) {
	case 0: return -123456;
	case 1: return i < w / 2 ? INT32_MIN : INT32_MAX;
	case 2: return j > w / 3 ? INT32_MAX : INT32_MIN + 1;
	case 3: return (i + j) % 3 == 0 ? INT32_MAX : 0;
	case 4: return (int32_t)((uint32_t)((i * 7919u) ^ (j * 104729u)) << (k % 31));
	case 5: return (int32_t)(rnd(s) >> 32);
	case 6: return (int32_t)(rnd(s) >> 52) + (int32_t)(i * 1000 + j * 37);
	default: return (int32_t)(((i / 4 + j / 4) & 1) * 1000000) - 500000;
	}
}

static void check_pinned(enum tile_form form, const struct pin *pins, uint64_t pinned_adv)
{
	static const int32_t chunks[][2] = {
		{ 0, 0 }, { 1, -1 }, { -37, 12 }, { 250, 3 }, { -4096, -777 }, { 9001, 123456 },
	};
	struct preset **pv = NULL;
	size_t np = 0, checked = 0, npins = 0;
	XXH3_state_t *st = XXH3_createState();
	uint64_t s = 7, h;
	int bad = 0;

	assert_non_null(st);
	assert_int_equal(preset_load_builtin(&pv, &np), 0);
	for (size_t p = 0; p < np; p++) {
		int lods[] = { 0, 1, 3, preset_chunk_log2(pv[p]) };

		XXH3_64bits_reset(st);
		for (size_t l = 0; l < 4; l++) {
			for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
				struct tile t;

				if (lods[l] > preset_chunk_log2(pv[p]))
					continue;
				assert_int_equal(pipeline_generate(pv[p], 42, lods[l], chunks[c][0],
								   chunks[c][1], &t), 0);
				hash_encoding(st, &t, form);
				tile_release(&t);
			}
		}
		h = XXH3_64bits_digest(st);
		print_message("pinned (form %d): { \"%s\", 0x%016llxull },\n", (int)form,
			      preset_name(pv[p]), (unsigned long long)h);
		for (size_t q = 0; pins[q].name; q++) {
			if (strcmp(pins[q].name, preset_name(pv[p])))
				continue;
			checked++;
			bad |= h != pins[q].h;
		}
	}
	preset_destroy_all(pv, np);

	XXH3_64bits_reset(st);
	for (int clog2 = TILE_MIN_CHUNK_LOG2; clog2 <= 9; clog2++) {
		for (int lod = 0; lod <= clog2; lod += 1 + (clog2 - lod) / 3) {
			struct tile t;
			size_t n;

			assert_int_equal(tile_init(&t, clog2, lod), 0);
			set_meta(&t, &s);
			n = (size_t)t.side * t.side;
			for (int kind = 0; kind < 8; kind++) {
				for (size_t k = 0; k < n; k++)
					t.h[k] = adversarial(kind, k, t.side, &s);
				hash_encoding(st, &t, form);
			}
			tile_release(&t);
		}
	}
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	print_message("pinned (form %d): adversarial 0x%016llxull\n", (int)form,
		      (unsigned long long)h);
	while (pins[npins].name)
		npins++;
	assert_int_equal(checked, npins);
	assert_false(bad);
	assert_int_equal(h, pinned_adv);
}

/*
 * The codec computes predictions in 32 bits when every height is within
 * 2^25 of h[0] and in 64 bits otherwise (tilecode.c): forced to the 64-bit
 * loops (TILECODE_WIDE), both directions must give the same bytes and
 * heights, with 2 and 8 states, on generated tiles of every preset and on
 * heights at the edges of the 32-bit range.
 */
static void expect_same_narrow_wide(const struct tile *t, unsigned states)
{
	size_t n = (size_t)t->side * t->side, cap = tilecode_bound(t->side), la, lb;
	uint8_t *a = malloc(cap), *b = malloc(cap);
	void *z = malloc(tilecode_scratch_size(t->side));
	int32_t *ha = malloc(n * 4), *hb = malloc(n * 4);
	unsigned fa, fb;

	assert_true(a && b && z && ha && hb);
	assert_int_equal(tilecode_encode(t->h, t->side, states, z, a, cap, &la, &fa), 0);
	assert_int_equal(tilecode_encode(t->h, t->side, states | TILECODE_WIDE, z, b, cap, &lb, &fb),
			 0);
	assert_int_equal(la, lb);
	assert_int_equal(fa, fb);
	assert_memory_equal(a, b, la);
	assert_int_equal(tilecode_decode(a, la, t->side, states, fa, (uint32_t)t->h[0], ha), 0);
	assert_int_equal(tilecode_decode(a, la, t->side, states | TILECODE_WIDE, fa,
					 (uint32_t)t->h[0], hb), 0);
	assert_memory_equal(ha, t->h, n * 4);
	assert_memory_equal(hb, t->h, n * 4);
	free(a);
	free(b);
	free(z);
	free(ha);
	free(hb);
}

static void test_tile_coded_narrow_and_wide_arithmetic_agree(void **state)
{
	static const int32_t bases[] = { 0, 1234567, -(INT32_C(1) << 30), INT32_MAX - (1 << 25),
					 INT32_MIN + (1 << 25), INT32_MAX - (1 << 25) + 1 };
	struct preset **pv = NULL;
	size_t np = 0;
	uint64_t s = 99;

	(void)state;
	assert_int_equal(preset_load_builtin(&pv, &np), 0);
	for (size_t p = 0; p < np; p++) {
		for (int lod = 0; lod <= 3; lod++) {
			struct tile t;

			assert_int_equal(pipeline_generate(pv[p], 7, lod, (int32_t)p - 3, lod * 5, &t), 0);
			expect_same_narrow_wide(&t, 2);
			expect_same_narrow_wide(&t, 8);
			expect_same_narrow_wide(&t, 8 | TILECODE_TANS);
			tile_release(&t);
		}
	}
	preset_destroy_all(pv, np);
	/* rough heights spread to just inside and just outside 2^25 of h[0],
	 * about bases near the ends of the range the narrow test allows */
	for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		for (int64_t spread = (INT64_C(1) << 25) - 1; spread <= (INT64_C(1) << 25) + 1; spread++) {
			struct tile t;
			size_t n;

			assert_int_equal(tile_init(&t, 6, 0), 0);
			n = (size_t)t.side * t.side;
			for (size_t k = 0; k < n; k++) {
				int64_t v = bases[b] + (int64_t)(rnd(&s) % (uint64_t)(2 * spread + 1)) - spread;

				t.h[k] = (int32_t)(v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v);
			}
			t.h[0] = bases[b];
			t.h[n - 1] = (int32_t)(bases[b] + spread > INT32_MAX ? INT32_MAX : bases[b] + spread);
			expect_same_narrow_wide(&t, 2);
			expect_same_narrow_wide(&t, 8);
			expect_same_narrow_wide(&t, 8 | TILECODE_TANS);
			tile_release(&t);
		}
	}
}

static void test_tile_coded_bytes_are_pinned(void **state)
{
	(void)state;
	check_pinned(TILE_FORM_CODED, pinned_presets, PINNED_ADVERSARIAL);
}

static void test_tile_coded8_bytes_are_pinned(void **state)
{
	(void)state;
	check_pinned(TILE_FORM_CODED8, pinned8_presets, PINNED8_ADVERSARIAL);
}

static void test_tile_tans_bytes_are_pinned(void **state)
{
	(void)state;
	check_pinned(TILE_FORM_TANS, pinned7_presets, PINNED7_ADVERSARIAL);
}

/* ---- measurements (TILE_MEASURE=1): not a pass/fail test ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t zstd_size(const uint8_t *p, size_t n, int level)
{
	size_t cap = ZSTD_compressBound(n), r;
	void *dst = malloc(cap);

	assert_non_null(dst);
	r = ZSTD_compress(dst, cap, p, n, level);
	assert_false(ZSTD_isError(r));
	free(dst);
	return r;
}

/* A source of test tiles: fBm here, or a built-in generator preset. */
struct source {
	const char *name;
	const struct fbm *f;
	const struct preset *p;
};

static void make_tile(const struct source *src, int lod, int k,
		      struct tile *t)
{
	int32_t cx = k * 37 - 100, cz = k * 11 + 5;

	if (src->p) {
		assert_int_equal(pipeline_generate(src->p, 2024, lod, cx, cz, t),
				 0);
		return;
	}
	assert_int_equal(tile_init(t, 8, lod), 0);
	t->cx = cx;
	t->cz = cz;
	fill_fbm(t, src->f, 2024);
}

/* Payload and zstd sizes for predictor orders (ox, oy) over tiles. */
static void measure_predictors(const struct source *src, int lod)
{
	static const int orders[][2] = { { 0, 0 }, { 1, 1 }, { 2, 1 },
					 { 1, 2 }, { 2, 2 } };
	static const char *names[] = { "none", "lz11 (gradient a+b-c)",
				       "lz21 (filter 1)", "lz12", "lz22" };
	const int tiles = 8;

	for (size_t o = 0; o < 5; o++) {
		double raw = 0, z3 = 0, z19 = 0;

		for (int k = 0; k < tiles; k++) {
			struct tile t;
			size_t n, len;
			uint32_t *r;
			uint8_t *pl;

			make_tile(src, lod, k, &t);
			n = (size_t)t.side * t.side;
			r = malloc(n * 4);
			pl = malloc(n * 4);
			assert_true(r && pl);
			ref_residuals(t.h, t.side, orders[o][0], orders[o][1], r);
			len = ref_payload(r, n, pl);
			raw += (double)len;
			z3 += (double)zstd_size(pl, len, 3);
			z19 += (double)zstd_size(pl, len, 19);
			free(r);
			free(pl);
			tile_release(&t);
		}
		print_message("| %s | %d | %s | %.0f | %.0f | %.0f |\n",
			      src->name, lod,
			      names[o], raw / tiles, z3 / tiles, z19 / tiles);
	}
}

static void measure_speed(void)
{
	struct tile t, d;
	size_t len;
	uint8_t *buf;
	int reps = 2000;
	double t0, enc, dec;

	assert_int_equal(tile_init(&t, 8, 0), 0);
	fill_fbm(&t, &rough_fbm, 11);
	buf = encode(&t, &len);
	t0 = now_s();
	for (int k = 0; k < reps; k++)
		assert_int_equal(tile_encode(&t, buf, len, &len), 0);
	enc = now_s() - t0;
	t0 = now_s();
	for (int k = 0; k < reps; k++) {
		assert_int_equal(tile_decode(buf, len, &d), 0);
		tile_release(&d);
	}
	dec = now_s() - t0;
	print_message("257x257 rough tile, %zu bytes: encode %.1f us (%.0f MB/s "
		      "of int32 input), decode %.1f us (%.0f MB/s of int32 "
		      "output)\n", len, enc / reps * 1e6,
		      reps * 257.0 * 257 * 4 / enc / 1e6, dec / reps * 1e6,
		      reps * 257.0 * 257 * 4 / dec / 1e6);
	free(buf);
	tile_release(&t);
}

static void test_tile_measure_filters(void **state)
{
	struct preset **pv = NULL;
	size_t np = 0;
	struct source src[8] = {
		{ "smooth fBm", &smooth_fbm, NULL },
		{ "rough fBm", &rough_fbm, NULL },
	};
	size_t ns = 2;

	(void)state;
	if (!getenv("TILE_MEASURE"))
		skip();
	if (preset_load_builtin(&pv, &np) == 0)
		for (size_t k = 0; k < np && ns < 8; k++)
			src[ns++] = (struct source){ preset_name(pv[k]), NULL,
						     pv[k] };
	print_message("| terrain | lod | predictor | payload | zstd -3 | "
		      "zstd -19 |\n");
	for (size_t k = 0; k < ns; k++)
		for (int lod = 0; lod <= 4; lod += 2)
			measure_predictors(&src[k], lod);
	preset_destroy_all(pv, np);
	measure_speed();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tile_init_sets_side_for_each_lod),
		cmocka_unit_test(test_tile_init_rejects_bad_shapes),
		cmocka_unit_test(test_tile_height_m_scales_by_quantum),
		cmocka_unit_test(test_tile_round_trips_random_heights_at_every_lod),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_random_heights_at_every_lod, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_random_heights_at_every_lod, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_random_heights_at_every_lod, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_round_trips_smooth_terrain_at_several_lods),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_smooth_terrain_at_several_lods, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_smooth_terrain_at_several_lods, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_smooth_terrain_at_several_lods, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_round_trips_every_chunk_size),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_every_chunk_size, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_every_chunk_size, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_every_chunk_size, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_round_trips_extreme_values),
		cmocka_unit_test(test_tile_coded_narrow_and_wide_arithmetic_agree),
		cmocka_unit_test(test_tile_coded_bytes_are_pinned),
		cmocka_unit_test(test_tile_coded8_bytes_are_pinned),
		cmocka_unit_test(test_tile_tans_bytes_are_pinned),
		cmocka_unit_test(test_tile_decode_rejects_noncanonical_tans_stream),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_extreme_values, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_extreme_values, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_round_trips_extreme_values, setup_coded8, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_encode_uses_fewest_planes, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_payload_matches_reference_filter, setup_lz21, teardown_form),
		cmocka_unit_test(test_tile_encode_rejects_inconsistent_tile),
		cmocka_unit_test(test_tile_encode_rejects_short_buffer),
		cmocka_unit_test(test_tile_decode_rejects_truncated_header),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_truncated_header, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_truncated_header, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_truncated_header, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_truncated_payload),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_truncated_payload, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_truncated_payload, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_truncated_payload, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_trailing_bytes),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_trailing_bytes, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_trailing_bytes, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_trailing_bytes, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_wrong_magic),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_wrong_magic, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_wrong_magic, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_wrong_magic, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_unknown_version),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_unknown_version, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_unknown_version, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_unknown_version, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_material_layer_round_trips_in_layered_version),
		cmocka_unit_test_setup_teardown(test_tile_material_layer_round_trips_in_layered_version, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_material_layer_round_trips_in_layered_version, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_material_layer_round_trips_in_layered_version, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_rejects_unknown_or_broken_layers),
		cmocka_unit_test_setup_teardown(test_tile_rejects_unknown_or_broken_layers, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_rejects_unknown_or_broken_layers, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_rejects_unknown_or_broken_layers, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_bad_header_length),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_bad_header_length, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_bad_header_length, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_bad_header_length, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_unknown_filter),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_unknown_filter, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_unknown_filter, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_unknown_filter, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_planes_out_of_range),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_planes_out_of_range, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_planes_out_of_range, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_planes_out_of_range, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_chunk_log2_out_of_range),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_chunk_log2_out_of_range, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_chunk_log2_out_of_range, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_chunk_log2_out_of_range, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_lod_above_chunk_log2),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_lod_above_chunk_log2, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_lod_above_chunk_log2, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_lod_above_chunk_log2, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_side_mismatch),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_side_mismatch, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_side_mismatch, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_side_mismatch, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_zero_quantum),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_zero_quantum, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_zero_quantum, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_zero_quantum, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_checksum_mismatch),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_checksum_mismatch, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_checksum_mismatch, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_checksum_mismatch, setup_coded8, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_nonzero_first_residual, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_surplus_planes, setup_lz21, teardown_form),
		cmocka_unit_test(test_tile_decode_rejects_null_arguments),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_null_arguments, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_null_arguments, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_rejects_null_arguments, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_header_reads_fields_without_payload),
		cmocka_unit_test_setup_teardown(test_tile_decode_header_reads_fields_without_payload, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_header_reads_fields_without_payload, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_header_reads_fields_without_payload, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_checksum_covers_all_but_itself),
		cmocka_unit_test_setup_teardown(test_tile_checksum_covers_all_but_itself, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_checksum_covers_all_but_itself, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_checksum_covers_all_but_itself, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_decode_survives_random_corruption),
		cmocka_unit_test_setup_teardown(test_tile_decode_survives_random_corruption, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_survives_random_corruption, setup_coded2, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_decode_survives_random_corruption, setup_coded8, teardown_form),
		cmocka_unit_test(test_tile_round_trips_generated_tiles_of_every_preset),
		cmocka_unit_test(test_tile_round_trips_adversarial_heights),
		cmocka_unit_test(test_tile_decode_rejects_inconsistent_coded_payload),
		cmocka_unit_test_setup_teardown(test_tile_encodes_the_documented_example, setup_lz21, teardown_form),
		cmocka_unit_test_setup_teardown(test_tile_golden_encoding_is_unchanged, setup_lz21, teardown_form),
		cmocka_unit_test(test_tile_measure_filters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
