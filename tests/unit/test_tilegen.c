/*
 * test_tilegen.c - the bytes a tile job makes (server/gen/tilegen.c): a
 * workspace kept from tile to tile gives the bytes of the one-off calls,
 * whatever came before it; gzip bodies are one deterministic member that
 * zlib inflates back; the pool hands back the workspace it was given, frees
 * one that grew too large, and serves two threads at once; at a coarser
 * ?precision= every sample of the golden tiles and of their east, south
 * and next-LOD neighbours is the canonical one rounded half away from zero,
 * so seams and LOD nesting hold at each precision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "err.h"
#include "gen/tilegen.h"
#include "pipeline.h"
#include "preset.h"
#include "preset_fixture.h"
#include "tile.h"

/* Tiles of several shapes, so that a kept workspace changes size and
 * preset between them. */
static const struct shape {
	const char *preset;
	int lod;
	int32_t cx, cz;
	unsigned layers;
} shapes[] = {
	{ "default", 0, 3, -2, 0 },
	{ "alpine", 2, -7, 11, PIPELINE_LAYER_MATERIAL },
	{ "default", 8, 0, 0, 0 },
	{ "mesa", 0, 1000000, -1000000, PIPELINE_LAYER_MATERIAL },
	{ "default", 0, 4, -2, 0 },
	{ "islands", 4, INT32_MIN, INT32_MAX, 0 },
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* The one-off bytes of shape k: the identity body and its zstd frame. */
static void one_off(size_t k, uint8_t **raw, size_t *len, uint8_t **z, size_t *zlen)
{
	const struct shape *s = &shapes[k];

	assert_int_equal(tilegen_encode(preset_fixture_find(s->preset), 42, s->lod, s->cx, s->cz, NULL, NULL, 0,
					s->layers, raw, len), 0);
	assert_int_equal(tilegen_compress(*raw, *len, z, zlen), 0);
}

/* raw inflated from a gzip member of glen bytes at g. */
static void assert_gunzips_to(const uint8_t *g, size_t glen, const uint8_t *raw, size_t len)
{
	uint8_t *out = malloc(len + 1);
	z_stream s = { 0 };

	assert_non_null(out);
	assert_true(glen > 18);
	assert_int_equal(g[0], 0x1f);
	assert_int_equal(g[1], 0x8b);
	assert_int_equal(g[2], 8);                          /* deflate */
	assert_int_equal(g[4] | g[5] | g[6] | g[7], 0);     /* no mtime */
	assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
	s.next_in = (Bytef *)(uintptr_t)g;
	s.avail_in = (uInt)glen;
	s.next_out = out;
	s.avail_out = (uInt)len + 1;
	assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
	assert_int_equal(s.total_out, len);
	assert_int_equal(s.avail_in, 0);                    /* one member, nothing after */
	assert_memory_equal(out, raw, len);
	inflateEnd(&s);
	free(out);
}

static void test_tilegen_kept_workspace_gives_the_one_off_bytes(void **state)
{
	struct tilegen_work *w;
	size_t k, round;

	(void)state;
	assert_int_equal(tilegen_work_create(&w), 0);
	for (round = 0; round < 2; round++)
		for (k = 0; k < N_SHAPES; k++) {
			const struct shape *s = &shapes[k];
			const uint8_t *enc, *z, *back;
			uint8_t *raw, *z1, *copy;
			size_t len, zlen, elen, zl;

			one_off(k, &raw, &len, &z1, &zlen);
			assert_int_equal(tilegen_encode_work(w, preset_fixture_find(s->preset), 42, s->lod, s->cx,
							     s->cz, NULL, NULL, 0, s->layers, &enc,
							     &elen), 0);
			assert_int_equal(elen, len);
			assert_memory_equal(enc, raw, len);
			assert_int_equal(tilegen_compress_work(w, enc, elen, &z, &zl), 0);
			assert_int_equal(zl, zlen);
			assert_memory_equal(z, z1, zlen);
			/* a frame decoded into the encoded-tile buffer, then compressed again */
			copy = malloc(zl);
			assert_non_null(copy);
			memcpy(copy, z, zl);
			assert_int_equal(tilegen_inflate_work(w, copy, zl, len, &back), 0);
			assert_memory_equal(back, raw, len);
			assert_int_equal(tilegen_inflate_work(w, copy, zl, len - 1, &back), ERR_ZSTD);
			free(copy);
			free(raw);
			free(z1);
		}
	assert_true(tilegen_work_bytes(w) > 0 && tilegen_work_bytes(w) <= TILEGEN_WORK_KEEP);
	tilegen_work_destroy(w);
	tilegen_work_destroy(NULL);
}

static void test_tilegen_gzip_is_one_member_zlib_inflates(void **state)
{
	static const char json[] = "{\"objects\":[{\"kind\":\"tree\",\"x\":1.5,\"z\":2.5},"
				   "{\"kind\":\"tree\",\"x\":1.5,\"z\":2.5},"
				   "{\"kind\":\"rock\",\"x\":7.25,\"z\":-3.0}]}";
	struct tilegen_work *w;
	const uint8_t *g;
	uint8_t *raw, *z, *first;
	size_t len, zlen, glen, glen1;

	(void)state;
	one_off(0, &raw, &len, &z, &zlen);
	assert_int_equal(tilegen_work_create(&w), 0);
	assert_int_equal(tilegen_gzip_work(w, raw, len, TILEGEN_GZIP_TILE, &g, &glen), 0);
	assert_gunzips_to(g, glen, raw, len);
	/* the size is printed, not asserted: it is a property of zlib */
	print_message("default LOD-0 tile: identity %zu B, zstd %zu B, gzip (Z_RLE) %zu B\n",
		      len, zlen, glen);
	glen1 = glen;
	first = malloc(glen);
	assert_non_null(first);
	memcpy(first, g, glen);
	/* text in between changes the strategy; the tile's member is the same again */
	assert_int_equal(tilegen_gzip_work(w, (const uint8_t *)json, sizeof(json) - 1,
					   TILEGEN_GZIP_TEXT, &g, &glen), 0);
	assert_gunzips_to(g, glen, (const uint8_t *)json, sizeof(json) - 1);
	assert_int_equal(tilegen_gzip_work(w, raw, len, TILEGEN_GZIP_TILE, &g, &glen), 0);
	assert_int_equal(glen, glen1);
	assert_memory_equal(g, first, glen);
	assert_int_equal(tilegen_gzip_work(w, NULL, 0, TILEGEN_GZIP_TEXT, &g, &glen), 0);
	assert_gunzips_to(g, glen, (const uint8_t *)"", 0);
	free(first);
	free(raw);
	free(z);
	tilegen_work_destroy(w);
}

static void test_tilegen_pool_reuses_and_frees_large_workspaces(void **state)
{
	struct tilegen_pool *pool;
	struct tilegen_work *a, *b;
	size_t idle, made, big = (size_t)TILEGEN_WORK_KEEP + 1;
	uint8_t *zeros = calloc(1, big), *z;
	const uint8_t *back;
	size_t zlen;

	(void)state;
	assert_non_null(zeros);
	assert_int_equal(tilegen_compress(zeros, big, &z, &zlen), 0);
	assert_int_equal(tilegen_pool_create(&pool), 0);
	a = tilegen_pool_take(pool);
	b = tilegen_pool_take(pool);
	assert_true(a && b && a != b);
	tilegen_pool_put(pool, a);
	tilegen_pool_stats(pool, &idle, &made);
	assert_int_equal(idle, 1);
	assert_int_equal(made, 2);
	assert_ptr_equal(tilegen_pool_take(pool), a);       /* the one given back */
	/* b grows past the bound: given back, it is freed, not kept */
	assert_int_equal(tilegen_inflate_work(b, z, zlen, big, &back), 0);
	assert_true(tilegen_work_bytes(b) > TILEGEN_WORK_KEEP);
	tilegen_pool_put(pool, b);
	tilegen_pool_put(pool, a);
	tilegen_pool_put(pool, NULL);
	tilegen_pool_stats(pool, &idle, &made);
	assert_int_equal(idle, 1);
	tilegen_pool_destroy(pool);
	tilegen_pool_destroy(NULL);
	free(zeros);
	free(z);
}

/* Two threads taking workspaces from one pool, tile after tile. */
struct worker {
	struct tilegen_pool *pool;
	size_t first;
	int failed;
};

static void *work_thread(void *arg)
{
	struct worker *wk = arg;
	size_t i;

	for (i = 0; i < 2 * N_SHAPES; i++) {
		size_t k = (wk->first + i) % N_SHAPES;
		const struct shape *s = &shapes[k];
		struct tilegen_work *w = tilegen_pool_take(wk->pool);
		const uint8_t *enc, *z;
		uint8_t *raw;
		size_t len, elen, zl;

		if (!w || tilegen_encode(preset_fixture_find(s->preset), 42, s->lod, s->cx, s->cz, NULL, NULL, 0,
					 s->layers, &raw, &len)) {
			wk->failed = 1;
			tilegen_pool_put(wk->pool, w);
			return NULL;
		}
		if (tilegen_encode_work(w, preset_fixture_find(s->preset), 42, s->lod, s->cx, s->cz, NULL, NULL,
					0, s->layers, &enc, &elen) || elen != len ||
		    memcmp(enc, raw, len) || tilegen_compress_work(w, enc, elen, &z, &zl))
			wk->failed = 1;
		free(raw);
		tilegen_pool_put(wk->pool, w);
	}
	return NULL;
}

static void test_tilegen_pool_serves_two_threads(void **state)
{
	struct worker wk[2];
	pthread_t th[2];
	struct tilegen_pool *pool;
	size_t idle, made;
	int i;

	(void)state;
	assert_int_equal(tilegen_pool_create(&pool), 0);
	for (i = 0; i < 2; i++) {
		wk[i] = (struct worker){ pool, (size_t)i * 3, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, work_thread, &wk[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_false(wk[i].failed);
	}
	tilegen_pool_stats(pool, &idle, &made);
	assert_int_equal(idle, made);
	assert_true(made >= 1 && made <= 2);
	tilegen_pool_destroy(pool);
}

/* ---- precision ---- */

struct golden {
	const char *preset;
	uint64_t seed;
	int lod;
	int32_t cx, cz;
	uint64_t hash;
};

static const struct golden golden[] = {
#include "golden_tiles.inc"
};

/* The reference rounding, written apart from tile_requantize(): the
 * nearest multiple of f to c in quanta of f, ties away from zero. */
static int32_t nearest(int32_t c, int64_t f)
{
	int64_t q = (int64_t)c / f, r = (int64_t)c % f;

	if (2 * (r < 0 ? -r : r) >= f)
		q += c < 0 ? -1 : 1;
	return (int32_t)q;
}

/* Decode the tile of (g's preset and seed, lod, cx, cz) at quantum um
 * (0: canonical) made by w into t. */
static void make_at(struct tilegen_work *w, const struct golden *g, int lod, int32_t cx,
		    int32_t cz, uint32_t um, struct tile *t)
{
	const uint8_t *raw;
	size_t len;

	assert_int_equal(tilegen_encode_work_at(w, preset_fixture_find(g->preset), g->seed, lod, cx, cz, NULL,
						NULL, 0, 0, um, TILE_FORM_CURRENT, &raw, &len), 0);
	assert_int_equal(tile_decode(raw, len, t), 0);
}

static void test_tile_requantize_rounds_half_away_from_zero(void **state)
{
	int32_t in[] = { 0, 4, 5, 14, 15, -4, -5, -15, -16, INT32_MAX, INT32_MIN }, out[11];
	int32_t want[] = { 0, 0, 1, 1, 2, 0, -1, -2, -2, 214748365, -214748365 };
	size_t k;

	(void)state;
	assert_int_equal(tile_requantize(in, 11, 10000, 100000, out), 0);
	for (k = 0; k < 11; k++)
		assert_int_equal(out[k], want[k]);
	assert_int_equal(tile_requantize(in, 11, 10000, 10000, out), 0);
	assert_memory_equal(in, out, sizeof(in));
	assert_int_equal(tile_requantize(in, 11, 10000, 15000, out), ERR_INVAL);
	assert_int_equal(tile_requantize(in, 11, 0, 10000, out), ERR_INVAL);
	assert_int_equal(tile_precision_um("10cm", 4), 100000);
	assert_int_equal(tile_precision_um("1m", 2), 1000000);
	assert_int_equal(tile_precision_um("1mm", 3), 0);
	assert_int_equal(tile_precision_um("10cmx", 4), 100000); /* len bytes only */
	assert_int_equal(tile_precision_um("", 0), 0);
}

/* Every sample of a at quantum um is the canonical c's rounding. */
static void assert_rounds(const struct tile *a, const struct tile *c, uint32_t um)
{
	size_t k, n = (size_t)c->side * c->side;

	assert_int_equal(a->quantum_um, um);
	assert_int_equal(a->side, c->side);
	for (k = 0; k < n; k++)
		if (a->h[k] != nearest(c->h[k], um / c->quantum_um))
			fail_msg("sample %zu: %d, want round(%d / %u)", k, a->h[k], c->h[k],
				 um / c->quantum_um);
}

static void test_tilegen_precision_keeps_seams_and_nesting(void **state)
{
	static const uint32_t ums[] = { 50000, 100000, 500000, 1000000 };
	struct tilegen_work *w;
	size_t i, u;
	uint32_t k;

	(void)state;
	assert_int_equal(tilegen_work_create(&w), 0);
	for (i = 0; i < sizeof(golden) / sizeof(golden[0]); i++) {
		const struct golden *g = &golden[i];
		int chunk_log2 = preset_chunk_log2(preset_fixture_find(g->preset));
		/* the east and south neighbours stay in int32 */
		int32_t ex = g->cx == INT32_MAX ? g->cx - 1 : g->cx;
		int32_t ez = g->cz == INT32_MAX ? g->cz - 1 : g->cz;

		if (g->lod >= chunk_log2)
			continue;
		for (u = 0; u < sizeof(ums) / sizeof(ums[0]); u++) {
			struct tile c, a, e, s, up;

			make_at(w, g, g->lod, ex, ez, 0, &c);
			make_at(w, g, g->lod, ex, ez, ums[u], &a);
			assert_rounds(&a, &c, ums[u]);
			make_at(w, g, g->lod, ex + 1, ez, ums[u], &e);
			make_at(w, g, g->lod, ex, ez + 1, ums[u], &s);
			make_at(w, g, g->lod + 1, ex, ez, ums[u], &up);
			for (k = 0; k < a.side; k++) {
				/* east edge = the east neighbour's west edge; south likewise */
				assert_int_equal(a.h[k * a.side + a.side - 1], e.h[k * e.side]);
				assert_int_equal(a.h[(a.side - 1) * a.side + k], s.h[k]);
			}
			for (k = 0; k < up.side * up.side; k++)
				assert_int_equal(up.h[k], a.h[(k / up.side) * 2 * a.side +
							      (k % up.side) * 2]);
			tile_release(&c);
			tile_release(&a);
			tile_release(&e);
			tile_release(&s);
			tile_release(&up);
		}
	}
	tilegen_work_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tilegen_kept_workspace_gives_the_one_off_bytes),
		cmocka_unit_test(test_tilegen_gzip_is_one_member_zlib_inflates),
		cmocka_unit_test(test_tilegen_pool_reuses_and_frees_large_workspaces),
		cmocka_unit_test(test_tilegen_pool_serves_two_threads),
		cmocka_unit_test(test_tile_requantize_rounds_half_away_from_zero),
		cmocka_unit_test(test_tilegen_precision_keeps_seams_and_nesting),
	};

	return cmocka_run_group_tests(tests, preset_fixture_setup, preset_fixture_teardown);
}
