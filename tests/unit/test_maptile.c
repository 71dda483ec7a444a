/*
 * test_maptile.c - the web map pyramid and its pixels: tile blocks centre
 * the window and stop at the pyramid's and the grid's edges; a map
 * tile's samples are exactly the binary tiles' samples 0..255 of the
 * chunks it covers, at every depth, eroded presets included; adjacent map
 * tiles are one seamless block (heights and shading); chunk-by-chunk
 * edits equal every edit applied in order; Terrarium pixels are within
 * 1/512 m of the heights.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "edit.h"
#include "err.h"
#include "maptile.h"
#include "pipeline.h"
#include "preset.h"
#include "preset_fixture.h"
#include "tile.h"

#define W MAPTILE_SIZE

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t fdiv(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ---- the pyramid ------------------------------------------------------------------ */

static void test_maptile_block_centres_the_window_on_the_origin(void **state)
{
	const struct preset *p = preset_fixture_find("default");
	struct maptile_block b;

	(void)state;
	assert_int_equal(maptile_min_zoom(p), 9);
	assert_int_equal(maptile_block(p, 17, 65536, 65536, 0, 0, &b), 0);
	assert_int_equal(b.lod, 0);
	assert_true(b.x0 == 0 && b.z0 == 0);
	assert_int_equal(maptile_block(p, 17, 65535, 65537, 0, 0, &b), 0);
	assert_true(b.x0 == -256 && b.z0 == 256);
	/* zoom 9: 256 m per pixel, the tile at the centre starts at the origin */
	assert_int_equal(maptile_block(p, 9, 256, 256, 0, 0, &b), 0);
	assert_int_equal(b.lod, 8);
	assert_true(b.x0 == 0 && b.z0 == 0);
	assert_int_equal(maptile_block(p, 9, 0, 511, 0, 0, &b), 0);
	assert_true(b.x0 == -MAPTILE_HALF && b.z0 == MAPTILE_HALF - 65536);
	/* an origin moves the window */
	assert_int_equal(maptile_block(p, 13, 4096, 4096, 3 * 256, -5 * 256, &b), 0);
	assert_true(b.lod == 4 && b.x0 == 768 && b.z0 == -1280);
}

static void test_maptile_block_refuses_tiles_outside_the_pyramid_and_grid(void **state)
{
	const struct preset *p = preset_fixture_find("default"), *e = preset_fixture_find("eroded");
	struct maptile_block b;
	int64_t far = (int64_t)INT32_MAX * 256;

	(void)state;
	assert_int_equal(maptile_block(p, 8, 0, 0, 0, 0, &b), ERR_RANGE);
	assert_int_equal(maptile_block(p, 18, 0, 0, 0, 0, &b), ERR_RANGE);
	assert_int_equal(maptile_block(p, 10, 1024, 0, 0, 0, &b), ERR_RANGE);
	assert_int_equal(maptile_block(p, 10, 0, 1024, 0, 0, &b), ERR_RANGE);
	/* eroded presets stop at zoom 15 */
	assert_int_equal(maptile_min_zoom(e), MAPTILE_MAX_ZOOM - MAPTILE_ERODED_DEPTH);
	assert_int_equal(maptile_block(e, 14, 8192, 8192, 0, 0, &b), ERR_RANGE);
	assert_int_equal(maptile_block(e, 15, 16384, 16384, 0, 0, &b), 0);
	/* the east edge of the int32 chunk grid: the last chunk is served,
	 * one beyond it is not; likewise in the west */
	assert_int_equal(maptile_block(p, 17, 65536 + 65535, 65536, far - 65535 * 256, 0, &b), 0);
	assert_true(b.x0 == far);
	assert_int_equal(maptile_block(p, 17, 65536 + 65535, 65536, far - 65534 * 256, 0, &b),
			 ERR_RANGE);
	assert_int_equal(maptile_block(p, 17, 65536, 65536, (int64_t)INT32_MIN * 256, 0, &b),
			 ERR_RANGE); /* the shading border would leave the grid */
	assert_int_equal(maptile_block(p, 17, 65537, 65536, (int64_t)INT32_MIN * 256, 0, &b), 0);
}

/* ---- heights ------------------------------------------------------------------------ */

/* The map block of a world at lod, x0, z0 (256 x 256) equals samples
 * 0..255 of the binary tiles of every chunk it covers. */
static void check_block_is_tiles(const struct preset *p, uint64_t seed, int lod, int64_t x0,
				 int64_t z0)
{
	int64_t c = INT64_C(1) << preset_chunk_log2(p), step = INT64_C(1) << lod, gx, gz;
	int32_t *blk = malloc(W * W * sizeof(*blk));
	size_t checked = 0;

	assert_non_null(blk);
	assert_int_equal(maptile_heights(p, seed, lod, x0, z0, W, W, NULL, blk), 0);
	for (gz = fdiv(z0, c); gz <= fdiv(z0 + (W - 1) * step, c); gz++)
		for (gx = fdiv(x0, c); gx <= fdiv(x0 + (W - 1) * step, c); gx++) {
			struct tile t;
			uint32_t i, j;

			assert_int_equal(pipeline_tile(p, seed, lod, (int32_t)gx, (int32_t)gz, NULL,
						       NULL, 0, 0, 0, &t), 0);
			for (j = 0; j + 1 < t.side; j++)
				for (i = 0; i + 1 < t.side; i++) {
					int64_t X = gx * c + i * step, Z = gz * c + j * step;
					int64_t mi = (X - x0) / step, mj = (Z - z0) / step;

					if (mi < 0 || mj < 0 || mi >= W || mj >= W)
						continue;
					assert_int_equal(blk[mj * W + mi], t.h[j * t.side + i]);
					checked++;
				}
			tile_release(&t);
		}
	assert_int_equal(checked, W * W); /* every pixel is some tile's sample */
	free(blk);
}

static void test_maptile_pixels_are_the_binary_tiles_samples(void **state)
{
	(void)state;
	check_block_is_tiles(preset_fixture_find("default"), 42, 0, 0, 0);
	check_block_is_tiles(preset_fixture_find("default"), 42, 0, -128 * 256, 77 * 256);
	check_block_is_tiles(preset_fixture_find("default"), 42, 3, -1024, 2048);
	check_block_is_tiles(preset_fixture_find("alpine"), 7, 8, -65536, 0);
	check_block_is_tiles(preset_fixture_find("mesa"), 9, 5, (int64_t)-3 * 8192, 8192);
	/* eroded: in chunk-sized pieces, at both of its depths */
	check_block_is_tiles(preset_fixture_find("eroded"), 42, 0, 256, -256);
	check_block_is_tiles(preset_fixture_find("eroded"), 42, 2, -512, 0);
}

static void test_maptile_adjacent_tiles_have_no_seam(void **state)
{
	const struct preset *p = preset_fixture_find("default");
	int32_t *a = malloc(W * W * sizeof(int32_t)), *b = malloc(W * W * sizeof(int32_t));
	int32_t *wide = malloc(2 * W * W * sizeof(int32_t));
	int32_t *ba = malloc((W + 2) * (W + 2) * sizeof(int32_t));
	int32_t *bb = malloc((W + 2) * (W + 2) * sizeof(int32_t));
	int32_t *bw = malloc((2 * W + 2) * (W + 2) * sizeof(int32_t));
	uint8_t *ra = malloc(3 * W * W), *rb = malloc(3 * W * W), *rw = malloc(6 * W * W);
	struct maptile_block ta, tb;
	int64_t s;
	int j;

	(void)state;
	assert_true(a && b && wide && ba && bb && bw && ra && rb && rw);
	/* tiles (x, y) and (x + 1, y) at zoom 14: one 512 x 256 block */
	assert_int_equal(maptile_block(p, 14, 8191, 8190, 0, 0, &ta), 0);
	assert_int_equal(maptile_block(p, 14, 8192, 8190, 0, 0, &tb), 0);
	s = INT64_C(1) << ta.lod;
	assert_true(tb.x0 == ta.x0 + W * s && tb.z0 == ta.z0);
	assert_int_equal(maptile_heights(p, 5, ta.lod, ta.x0, ta.z0, W, W, NULL, a), 0);
	assert_int_equal(maptile_heights(p, 5, tb.lod, tb.x0, tb.z0, W, W, NULL, b), 0);
	assert_int_equal(maptile_heights(p, 5, ta.lod, ta.x0, ta.z0, 2 * W, W, NULL, wide), 0);
	for (j = 0; j < W; j++) {
		assert_memory_equal(a + j * W, wide + j * 2 * W, W * sizeof(int32_t));
		assert_memory_equal(b + j * W, wide + j * 2 * W + W, W * sizeof(int32_t));
	}
	/* the shaded pictures too: slopes across the seam see the neighbour */
	assert_int_equal(maptile_heights(p, 5, ta.lod, ta.x0 - s, ta.z0 - s, W + 2, W + 2, NULL,
					 ba), 0);
	assert_int_equal(maptile_heights(p, 5, tb.lod, tb.x0 - s, tb.z0 - s, W + 2, W + 2, NULL,
					 bb), 0);
	assert_int_equal(maptile_heights(p, 5, ta.lod, ta.x0 - s, ta.z0 - s, 2 * W + 2, W + 2,
					 NULL, bw), 0);
	assert_int_equal(maptile_shade(p, 5, ta.lod, ta.x0, ta.z0, W, W, ba, ra), 0);
	assert_int_equal(maptile_shade(p, 5, tb.lod, tb.x0, tb.z0, W, W, bb, rb), 0);
	assert_int_equal(maptile_shade(p, 5, ta.lod, ta.x0, ta.z0, 2 * W, W, bw, rw), 0);
	for (j = 0; j < W; j++) {
		assert_memory_equal(ra + 3 * j * W, rw + 6 * j * W, 3 * W);
		assert_memory_equal(rb + 3 * j * W, rw + 6 * j * W + 3 * W, 3 * W);
	}
	free(a); free(b); free(wide); free(ba); free(bb); free(bw);
	free(ra); free(rb); free(rw);
}

/* ---- edits ---------------------------------------------------------------------------- */

/* A random edit near the chunks -1..2 x -1..2. */
static struct edit random_edit(void)
{
	struct edit e = { 0 };

	e.op = (uint8_t)(next() % EDIT_OP_COUNT);
	e.falloff = (uint8_t)(next() % EDIT_FALLOFF_COUNT);
	e.x_mm = (-300 + (int64_t)(next() % 1100)) * 1000 + (int64_t)(next() % 1000);
	e.z_mm = (-300 + (int64_t)(next() % 1100)) * 1000;
	e.radius_mm = 1000 + (int64_t)(next() % 150000);
	if (e.op == EDIT_RAISE || e.op == EDIT_LOWER)
		e.strength = (int64_t)(next() % 20000000);
	else if (e.op == EDIT_FLATTEN)
		e.strength = (int64_t)(next() % 1000001);
	if (e.op == EDIT_FLATTEN || e.op == EDIT_SET)
		e.height_um = (int64_t)(next() % 400000000) - 100000000;
	return e;
}

/* Blocks at lod of chunks -1..2 x -1..2 edited chunk by chunk (half of
 * them baked at a random point of their history) equal the unedited
 * block with every edit applied in order. */
static void check_chunkwise_edits(int lod, int64_t x0, int64_t z0, uint32_t w)
{
	enum { N = 60, S = 257 };
	const struct preset *p = preset_fixture_find("default");
	uint32_t qum = preset_quantum_um(p);
	struct edit hist[N], *pend[16];
	struct bake_chunk bc[16];
	int32_t *delta[16], *ref = malloc(w * w * sizeof(int32_t)), *got = malloc(w * w * sizeof(int32_t));
	int32_t *plain = malloc(w * w * sizeof(int32_t));
	int32_t *base = malloc(S * S * sizeof(int32_t)), *edited = malloc(S * S * sizeof(int32_t));
	int k, cx, cz, n = 0;
	size_t e, m;

	assert_true(ref && got && plain && base && edited);
	for (k = 0; k < N; k++)
		hist[k] = random_edit();
	for (cz = -1; cz <= 2; cz++)
		for (cx = -1; cx <= 2; cx++, n++) {
			size_t v = next() % 2 ? (size_t)(next() % (N + 1)) : 0;
			struct edit done[N];

			pend[n] = malloc(N * sizeof(struct edit));
			delta[n] = NULL;
			for (e = 0, m = 0; e < v; e++)
				if (edit_touches(&hist[e], 8, cx, cz))
					done[m++] = hist[e];
			if (v) {
				delta[n] = malloc(S * S * sizeof(int32_t));
				assert_int_equal(pipeline_heights(p, 3, 0, cx * 256, cz * 256, S, S, NULL,
								  base), 0);
				memcpy(edited, base, S * S * sizeof(int32_t));
				edit_apply_block(edited, cx * 256, cz * 256, 0, S, S, qum, done, m);
				assert_int_equal(bake_delta(edited, base, S * S, delta[n]), 0);
			}
			for (e = v, m = 0; e < N; e++)
				if (edit_touches(&hist[e], 8, cx, cz))
					pend[n][m++] = hist[e];
			bc[n] = (struct bake_chunk){ cx, cz, delta[n], pend[n], m };
		}
	assert_int_equal(maptile_heights(p, 3, lod, x0, z0, w, w, NULL, ref), 0);
	memcpy(got, ref, w * w * sizeof(int32_t));
	memcpy(plain, ref, w * w * sizeof(int32_t));
	edit_apply_block(ref, x0, z0, lod, w, w, qum, hist, N);
	/* in an order of its own: each sample belongs to one chunk */
	for (k = n - 1; k >= 0; k--)
		assert_int_equal(maptile_apply_chunk(&bc[k], 8, got, x0, z0, lod, w, w, qum), 0);
	assert_memory_equal(got, ref, w * w * sizeof(int32_t));
	assert_memory_not_equal(got, plain, w * w * sizeof(int32_t)); /* edits did something */
	for (k = 0; k < n; k++) {
		free(delta[k]);
		free(pend[k]);
	}
	free(ref); free(got); free(plain); free(base); free(edited);
}

static void test_maptile_chunkwise_edits_equal_every_edit_in_order(void **state)
{
	(void)state;
	/* a shaded tile's block (with its border) across 3 x 3 chunks at LOD 0,
	 * and all 4 x 4 chunks at LOD 1 and 2 */
	check_chunkwise_edits(0, -1, -1, 258);
	check_chunkwise_edits(1, -256, -256, 512);
	check_chunkwise_edits(2, -256, -256, 256);
}

/* ---- Terrarium -------------------------------------------------------------------------- */

static void test_maptile_terrarium_is_within_half_a_step(void **state)
{
	enum { N = 200000 };
	static const uint32_t quanta[] = { 10000, 1, 1000, 3906, 250000, 1000000 };
	int32_t *q = malloc(N * sizeof(*q));
	uint8_t *rgb = malloc(3 * N);
	size_t k, i;

	(void)state;
	assert_true(q && rgb);
	for (i = 0; i < sizeof(quanta) / sizeof(quanta[0]); i++) {
		double qm = quanta[i] / 1e6, lim = 32767.0 / qm;

		for (k = 0; k < N; k++) {
			double v = (double)(next() % 2000001) / 1e6 - 1.0; /* -1..1 */

			q[k] = (int32_t)(v * (lim < 2e9 ? lim : 2e9));
		}
		q[0] = 0;
		q[1] = (int32_t)fmax(-32768.0 / qm, -2e9);
		maptile_terrarium(q, N, quanta[i], rgb);
		for (k = 0; k < N; k++) {
			double h = q[k] * qm, d = maptile_terrarium_metres(rgb + 3 * k);

			if (fabs(d - h) > 1.0 / 512 + 1e-9)
				fail_msg("quantum %u um: %.6f m encodes as %.6f", quanta[i], h, d);
		}
	}
	/* exact values: 0 m, 4/256 m, -1 m and the clamps (heights in whole
	 * micrometres are never half-way between two steps) */
	q[0] = 0;
	q[1] = 1;             /* 1/64 m in quanta of 15625 um */
	q[2] = -100;
	q[3] = 2000000000;
	q[4] = -2000000000;
	maptile_terrarium(q, 2, 10000, rgb);
	assert_memory_equal(rgb, ((uint8_t[]){ 0x80, 0, 0 }), 3);
	assert_true(maptile_terrarium_metres(rgb) == 0.0);
	maptile_terrarium(q + 1, 1, 15625, rgb);
	assert_memory_equal(rgb, ((uint8_t[]){ 0x80, 0, 4 }), 3);
	maptile_terrarium(q + 2, 1, 10000, rgb);    /* -1 m */
	assert_true(maptile_terrarium_metres(rgb) == -1.0);
	maptile_terrarium(q + 3, 2, 10000, rgb);    /* +-20000 km: clamped */
	assert_memory_equal(rgb, ((uint8_t[]){ 0xff, 0xff, 0xff, 0, 0, 0 }), 6);
	free(q);
	free(rgb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maptile_block_centres_the_window_on_the_origin),
		cmocka_unit_test(test_maptile_block_refuses_tiles_outside_the_pyramid_and_grid),
		cmocka_unit_test(test_maptile_pixels_are_the_binary_tiles_samples),
		cmocka_unit_test(test_maptile_adjacent_tiles_have_no_seam),
		cmocka_unit_test(test_maptile_chunkwise_edits_equal_every_edit_in_order),
		cmocka_unit_test(test_maptile_terrarium_is_within_half_a_step),
	};

	return cmocka_run_group_tests(tests, preset_fixture_setup, preset_fixture_teardown);
}
