/*
 * test_clones.c - every x86-64 clone of the noise kernels gives the same
 * bits: common/noise.c and fbm.c built once more per instruction set
 * (baseline, AVX2, x86-64-v4) without target_clones, their names suffixed
 * by bench/variant.h (Makefile, CLONE_OBJ), against the library's dispatch
 * (the best clone this CPU runs). Every noise kind and fBm mode, unwarped
 * and warped, near the origin and 2^38 m away, and fbm_row_d()'s values
 * and gradients. The same for the tile codec (common/tilecode.c,
 * tilecode_enc.c and tilecode_dec.c, their CLONES_INT loops): every copy
 * writes the library's bytes and decodes them to the same heights, both
 * filters, 2 and 8 rANS states, the 32-bit and the 64-bit arithmetic. A clone this CPU cannot run is skipped, and
 * so is the whole test off x86-64.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fbm.h"
#include "noise.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"
#include "tilecode.h"

#define SIDE 257

#ifdef HAVE_CLONES
#define CLONE_DECL(sfx)                                                             \
	void fbm_init_##sfx(struct fbm *f, const struct fbm_params *p, uint64_t seed,   \
			    uint32_t salt);                                             \
	void fbm_row_##sfx(const struct fbm *f, int64_t x0, int64_t step, int64_t z,    \
			   const float *dx, const float *dz, size_t n, float *out,      \
			   struct fbm_scratch *s);                                      \
	void fbm_row_d_##sfx(const struct fbm *f, int64_t x0, int64_t step, int64_t z,  \
			     const float *dx, const float *dz, size_t n, float *out,    \
			     float *gx, float *gz, struct fbm_scratch *s);
CLONE_DECL(base)
CLONE_DECL(v3)
CLONE_DECL(v4)

struct clone {
	const char *name;
	void (*init)(struct fbm *, const struct fbm_params *, uint64_t, uint32_t);
	void (*row)(const struct fbm *, int64_t, int64_t, int64_t, const float *,
		    const float *, size_t, float *, struct fbm_scratch *);
	void (*row_d)(const struct fbm *, int64_t, int64_t, int64_t, const float *,
		      const float *, size_t, float *, float *, float *, struct fbm_scratch *);
};

static const struct clone clones[] = {
	{ "baseline", fbm_init_base, fbm_row_base, fbm_row_d_base },
	{ "avx2", fbm_init_v3, fbm_row_v3, fbm_row_d_v3 },
	{ "x86-64-v4", fbm_init_v4, fbm_row_v4, fbm_row_d_v4 },
};

static int runs(size_t c)
{
	__builtin_cpu_init();
	if (c == 1)
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	return c == 0 || (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
			  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"));
}

/* Rows of kind k, mode m through clone c and through the library. */
static void compare(size_t c, int k, int m)
{
	static const int64_t origins[] = { -128, INT64_C(1) << 38 };
	struct fbm_params p = { (enum noise_kind)k, (enum fbm_mode)m, 6, 1024.0, 0.5, 2.0, 2.0 };
	float dx[SIDE], dz[SIDE], a[SIDE], b[SIDE];
	struct fbm fa, fb;
	struct fbm_scratch sa, sb;
	size_t o;
	int r, i;

	for (i = 0; i < SIDE; i++) {
		dx[i] = (float)((i * 37) % 200 - 100) * 0.7f;
		dz[i] = (float)((i * 53) % 190 - 95) * 0.7f;
	}
	assert_int_equal(fbm_scratch_init(&sa, SIDE), 0);
	assert_int_equal(fbm_scratch_init(&sb, SIDE), 0);
	fbm_init(&fa, &p, 0x9e3779b97f4a7c15ull, 3);
	clones[c].init(&fb, &p, 0x9e3779b97f4a7c15ull, 3);
	for (o = 0; o < sizeof(origins) / sizeof(origins[0]); o++)
		for (r = 0; r < 64; r++) {
			const float *wx = r & 1 ? dx : NULL, *wz = r & 1 ? dz : NULL;
			int64_t z = origins[o] + 5 * r;

			fbm_row(&fa, origins[o], 1 + r % 3, z, wx, wz, SIDE, a, &sa);
			clones[c].row(&fb, origins[o], 1 + r % 3, z, wx, wz, SIDE, b, &sb);
			if (memcmp(a, b, sizeof(a))) {
				fprintf(stderr, "%s clone: kind %d mode %d, row %d from %lld\n",
					clones[c].name, k, m, r, (long long)origins[o]);
				fail();
			}
		}
	fbm_scratch_release(&sa);
	fbm_scratch_release(&sb);
}

static void test_every_clone_gives_the_librarys_bits(void **state)
{
	size_t c;
	int k, m, ran = 0;

	(void)state;
	for (c = 0; c < sizeof(clones) / sizeof(clones[0]); c++) {
		if (!runs(c)) {
			fprintf(stderr, "(this CPU does not run the %s clone)\n", clones[c].name);
			continue;
		}
		for (k = 0; k < NOISE_KIND_COUNT; k++)
			for (m = 0; m < FBM_MODE_COUNT; m++)
				compare(c, k, m);
		ran++;
	}
	assert_true(ran >= 1);
}

static void test_every_clone_gives_the_librarys_gradients(void **state)
{
	struct fbm_params p = { NOISE_PERLIN, FBM_PLAIN, 6, 1024.0, 0.5, 2.0, 2.0 };
	float a[3][SIDE], b[3][SIDE];
	struct fbm fa, fb;
	struct fbm_scratch sa, sb;
	size_t c;
	int r;

	(void)state;
	assert_int_equal(fbm_scratch_init(&sa, SIDE), 0);
	assert_int_equal(fbm_scratch_init(&sb, SIDE), 0);
	fbm_init(&fa, &p, 42, 0);
	for (c = 0; c < sizeof(clones) / sizeof(clones[0]); c++) {
		if (!runs(c))
			continue;
		clones[c].init(&fb, &p, 42, 0);
		for (r = 0; r < 32; r++) {
			fbm_row_d(&fa, -300, 2, 7 * r, NULL, NULL, SIDE, a[0], a[1], a[2], &sa);
			clones[c].row_d(&fb, -300, 2, 7 * r, NULL, NULL, SIDE, b[0], b[1], b[2], &sb);
			assert_memory_equal(a, b, sizeof(a));
		}
	}
	fbm_scratch_release(&sa);
	fbm_scratch_release(&sb);
}

#define TILECODE_DECL(sfx)                                                           \
	int tilecode_encode_##sfx(const int32_t *h, uint32_t w, unsigned states,        \
				  void *scratch, uint8_t *out, size_t cap, size_t *len, \
				  unsigned *filter);                                     \
	int tilecode_decode_##sfx(const uint8_t *in, size_t len, uint32_t w,            \
				  unsigned states, unsigned filter, uint32_t offset,     \
				  int32_t *h);
TILECODE_DECL(base)
TILECODE_DECL(v3)
TILECODE_DECL(v4)

static const struct {
	int (*enc)(const int32_t *, uint32_t, unsigned, void *, uint8_t *, size_t, size_t *,
		   unsigned *);
	int (*dec)(const uint8_t *, size_t, uint32_t, unsigned, unsigned, uint32_t, int32_t *);
} codecs[] = {
	{ tilecode_encode_base, tilecode_decode_base },
	{ tilecode_encode_v3, tilecode_decode_v3 },
	{ tilecode_encode_v4, tilecode_decode_v4 },
};

/* Clone c against the library on t, with states (TILECODE_WIDE or'ed
 * in or not). */
static void compare_codec(size_t c, const struct tile *t, unsigned states)
{
	size_t n = (size_t)t->side * t->side, cap = tilecode_bound(t->side), la, lb;
	uint8_t *a = malloc(cap), *b = malloc(cap);
	void *z = malloc(tilecode_scratch_size(t->side));
	int32_t *h = malloc(n * 4);
	unsigned fa, fb;

	assert_true(a && b && z && h);
	assert_int_equal(tilecode_encode(t->h, t->side, states, z, a, cap, &la, &fa), 0);
	assert_int_equal(codecs[c].enc(t->h, t->side, states, z, b, cap, &lb, &fb), 0);
	if (la != lb || fa != fb || memcmp(a, b, la))
		fail_msg("%s: tilecode_encode (states %#x) differs from the library's", clones[c].name,
			 states);
	assert_int_equal(codecs[c].dec(a, la, t->side, states, fa, (uint32_t)t->h[0], h), 0);
	if (memcmp(h, t->h, n * 4))
		fail_msg("%s: tilecode_decode (states %#x) gives other heights", clones[c].name, states);
	free(a);
	free(b);
	free(z);
	free(h);
}

static void test_every_codec_clone_writes_the_librarys_bytes(void **state)
{
	struct preset **pv = NULL;
	size_t np = 0, seen[4] = { 0 };
	static const unsigned st[] = { 2, 8, 2 | TILECODE_WIDE, 8 | TILECODE_WIDE,
				       8 | TILECODE_TANS, 8 | TILECODE_TANS | TILECODE_WIDE };

	(void)state;
	assert_int_equal(preset_load_builtin(&pv, &np), 0);
	for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
		if (!runs(c)) {
			print_message("%s: skipped (this CPU cannot run it)\n", clones[c].name);
			continue;
		}
		for (size_t p = 0; p < np; p++) {
			for (int lod = 0; lod <= 2; lod += 2) {
				struct tile t;

				assert_int_equal(pipeline_generate(pv[p], 5, lod, (int32_t)p, -3, &t), 0);
				for (size_t s = 0; s < sizeof(st) / sizeof(st[0]); s++)
					compare_codec(c, &t, st[s]);
				tile_release(&t);
			}
		}
		seen[c] = 1;
	}
	preset_destroy_all(pv, np);
	assert_true(seen[0]);   /* the baseline runs everywhere */
}
#else
static void test_every_clone_gives_the_librarys_bits(void **state)
{
	(void)state;
	skip(); /* not x86-64: one build, no clones */
}

static void test_every_codec_clone_writes_the_librarys_bytes(void **state)
{
	(void)state;
	skip();
}

static void test_every_clone_gives_the_librarys_gradients(void **state)
{
	(void)state;
	skip();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_clone_gives_the_librarys_bits),
		cmocka_unit_test(test_every_clone_gives_the_librarys_gradients),
		cmocka_unit_test(test_every_codec_clone_writes_the_librarys_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
