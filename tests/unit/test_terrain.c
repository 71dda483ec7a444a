/*
 * test_terrain.c - the public API of the library (common/terrain.h),
 * called as a user calls it: every golden tile through terrain_generate();
 * encoded tiles byte for byte the server's (server/gen/tilegen.c) at every
 * precision, layer and format, edited too (against pipeline_tile() with the
 * whole edit list, and the server's world.c for the hashes); decoding every
 * version back, rejecting damage and short buffers; blocks and points
 * equal to tile samples; edit records from JSON, applied all or nothing,
 * with the server's world and chunk hashes; size-first structs from older
 * and newer callers; one world shared by threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "edit.h"
#include "err.h"
#include "gen/tilegen.h"
#include "pipeline.h"
#include "preset.h"
#include "selfcheck.h"
#include "terrain.h"
#include "tile.h"
#include "worlds/catalog.h"
#include "worlds/world.h"

static const struct selfcheck_tile golden[] = {
#include "golden_tiles.inc"
};
#define N_GOLDEN (sizeof(golden) / sizeof(golden[0]))

#define MAX_SIDE 257
#define MAX_N (MAX_SIDE * MAX_SIDE)

static int32_t heights[MAX_N], heights2[MAX_N];
static uint8_t mats[MAX_N], mats2[MAX_N];

static struct terrain_world *open_world(const char *name, uint64_t seed)
{
	struct terrain_world *w = NULL;

	assert_int_equal(terrain_world_create(name, seed, &w), 0);
	assert_non_null(w);
	return w;
}

static struct terrain_tile_request request(int lod, int32_t cx, int32_t cz)
{
	struct terrain_tile_request rq = { sizeof(rq), lod, cx, cz, 0, 0, 0, 0 };

	return rq;
}

/* The server's preset of the same name (as its catalog parses it). */
static struct preset *server_preset(const char *name)
{
	struct preset **v, *p = NULL;
	size_t n, i;

	assert_int_equal(preset_load_builtin(&v, &n), 0);
	for (i = 0; i < n; i++)
		if (!strcmp(preset_name(v[i]), name)) {
			p = v[i];
			v[i] = NULL;
		}
	preset_destroy_all(v, n);
	assert_non_null(p);
	return p;
}

static void test_every_golden_tile_through_the_api(void **state)
{
	struct terrain_work *k;
	size_t i;

	(void)state;
	assert_int_equal(terrain_work_create(&k), 0);
	for (i = 0; i < N_GOLDEN; i++) {
		const struct selfcheck_tile *g = &golden[i];
		struct terrain_world *w = open_world(g->preset, g->seed);
		struct terrain_tile_request rq = request(g->lod, g->cx, g->cz);
		struct terrain_tile_info info = { .size = sizeof(info) };
		uint32_t side = terrain_tile_side(w, g->lod);

		/* the eroded rows through the work's region cache, the rest without */
		assert_int_equal(terrain_generate(w, NULL, i % 2 ? k : NULL, &rq, heights, MAX_N,
						  NULL, 0, &info), 0);
		assert_int_equal(info.side, side);
		assert_int_equal(info.cx, g->cx);
		assert_int_equal(info.lod, g->lod);
		if (terrain_heights_hash(heights, (size_t)side * side) != g->hash)
			fail_msg("%s seed %llu lod %d (%d, %d): %016llx, golden %016llx", g->preset,
				 (unsigned long long)g->seed, g->lod, g->cx, g->cz,
				 (unsigned long long)terrain_heights_hash(heights, (size_t)side * side),
				 (unsigned long long)g->hash);
		terrain_world_destroy(w);
	}
	terrain_work_destroy(k);
}

static void test_presets_seeds_and_errors_are_named(void **state)
{
	struct terrain_world *w = (void *)1;
	uint64_t seed;
	char msg[256];
	size_t i;

	(void)state;
	assert_true(terrain_preset_count() >= 6);
	for (i = 1; i < terrain_preset_count(); i++)
		assert_true(strcmp(terrain_preset_name(i - 1), terrain_preset_name(i)) < 0);
	assert_null(terrain_preset_name(terrain_preset_count()));
	assert_int_equal(terrain_world_create("no-such-preset", 0, &w), TERRAIN_ERR_NOTFOUND);
	assert_null(w);
	assert_int_equal(terrain_seed_parse("42", 2, &seed), 0);
	assert_int_equal(seed, 42);
	assert_int_equal(terrain_seed_parse("my-world", 8, &seed), 0);
	assert_int_equal(seed, terrain_xxh3("my-world", 8));
	assert_int_equal(terrain_seed_parse("18446744073709551616", 20, &seed), TERRAIN_ERR_RANGE);
	assert_int_equal(terrain_seed_parse("a b", 3, &seed), TERRAIN_ERR_INVAL);
	assert_string_equal(terrain_strerror(TERRAIN_ERR_CHECKSUM), "checksum mismatch");
	assert_string_equal(terrain_strerror(0), "ok");
	assert_int_equal(terrain_version() >> 16, TERRAIN_VERSION_MAJOR);
	assert_int_equal(terrain_world_create_json("{\"name\": \"x\", \"bogus\": 1}", 26, 0, &w, msg,
						   sizeof(msg)) < 0, 1);
	assert_true(strlen(msg) > 0);
	assert_int_equal(terrain_selfcheck(msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_int_equal(terrain_selfcheck_digest(), selfcheck_digest());
}

/* A world from JSON text is the built-in world of the same text. */
static void test_a_json_world_is_the_builtin_world(void **state)
{
	struct terrain_world *a = open_world("mesa", 7), *b;
	struct terrain_world_info ia = { .size = sizeof(ia) }, ib = { .size = sizeof(ib) };
	struct terrain_tile_request rq = request(3, -1, -1);
	char msg[256];
	FILE *f = fopen("presets/mesa.json", "rb");
	char json[65536];
	size_t len;

	(void)state;
	assert_non_null(f);
	len = fread(json, 1, sizeof(json), f);
	fclose(f);
	assert_int_equal(terrain_world_create_json(json, len, 7, &b, msg, sizeof(msg)), 0);
	assert_int_equal(terrain_world_info(a, &ia), 0);
	assert_int_equal(terrain_world_info(b, &ib), 0);
	assert_int_equal(ia.fingerprint, ib.fingerprint);
	assert_int_equal(ia.chunk_log2, 8);
	assert_int_equal(ia.max_lod, 8);
	assert_int_equal(ia.quantum_um, 10000);
	assert_string_equal(terrain_world_name(b), "mesa");
	assert_string_equal(terrain_world_canonical(a), terrain_world_canonical(b));
	assert_int_equal(terrain_generate(b, NULL, NULL, &rq, heights, MAX_N, NULL, 0, NULL), 0);
	assert_int_equal(terrain_heights_hash(heights, 33 * 33), 0x745a7da78415cf00ULL);
	terrain_world_destroy(a);
	terrain_world_destroy(b);
}

/* Requests in every shape the server serves. */
static const struct shape {
	const char *preset;
	uint64_t seed;
	int lod;
	int32_t cx, cz;
	uint32_t quantum_um, layers, format;
} shapes[] = {
	{ "default", 42, 0, 0, 0, 0, 0, 0 },
	{ "default", 42, 0, 3, -2, 100000, 0, 0 },
	{ "default", 42, 1, -3, 2, 0, TERRAIN_LAYER_MATERIAL, 5 },
	{ "default", 42, 1, -3, 2, 0, TERRAIN_LAYER_MATERIAL, 7 },
	{ "alpine", 7, 0, 2, -1, 0, 0, 5 },
	{ "default", 42, 0, 1, 1, 0, 0, 3 },
	{ "islands", 5, 6, 1, 1, 0, 0, 3 },
	{ "alpine", 7, 2, -7, 11, 0, TERRAIN_LAYER_MATERIAL, 3 },
	{ "mesa", 0, 1, INT32_MIN, INT32_MAX, 1000000, TERRAIN_LAYER_MATERIAL, 1 },
	{ "islands", 5, 5, 1, 1, 50000, 0, 1 },
	{ "canyons", 9, 8, INT32_MAX, INT32_MIN, 0, 0, 0 },
	{ "eroded", 42, 2, 0, 0, 0, TERRAIN_LAYER_MATERIAL, 0 },
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

static uint8_t enc[1 << 20], enc2[1 << 20];

/* The server's form of a ?format= value (server/tiles/tiles.c's table). */
static enum tile_form server_form(uint32_t format)
{
	return format == 1 ? TILE_FORM_LZ21 : format == 3 ? TILE_FORM_BEFORE5 :
	       format == 5 ? TILE_FORM_BEFORE7 : TILE_FORM_CURRENT;
}

static void test_encoded_tiles_are_the_servers_bytes(void **state)
{
	struct tilegen_work *tw;
	struct terrain_work *k;
	size_t i;

	(void)state;
	assert_int_equal(tilegen_work_create(&tw), 0);
	assert_int_equal(terrain_work_create(&k), 0);
	for (i = 0; i < N_SHAPES; i++) {
		const struct shape *s = &shapes[i];
		struct terrain_world *w = open_world(s->preset, s->seed);
		struct preset *p = server_preset(s->preset);
		struct terrain_tile_request rq = { sizeof(rq), s->lod, s->cx, s->cz, s->quantum_um,
						   s->layers, s->format, 0 };
		const uint8_t *srv;
		size_t len, slen;

		assert_int_equal(tilegen_encode_work_at(tw, p, s->seed, s->lod, s->cx, s->cz, NULL,
							NULL, 0, s->layers, s->quantum_um,
							server_form(s->format),
							&srv, &slen), 0);
		assert_true(terrain_tile_bound(w, &rq) >= slen);
		assert_int_equal(terrain_generate_encoded(w, NULL, k, &rq, enc, sizeof(enc), &len), 0);
		assert_int_equal(len, slen);
		assert_memory_equal(enc, srv, len);
		/* one byte short */
		assert_int_equal(terrain_generate_encoded(w, NULL, k, &rq, enc2, len - 1, &len),
				 TERRAIN_ERR_TOOBIG);
		preset_destroy(p);
		terrain_world_destroy(w);
	}
	terrain_work_destroy(k);
	tilegen_work_destroy(tw);
}

static void test_decode_gives_back_every_version(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_SHAPES; i++) {
		const struct shape *s = &shapes[i];
		struct terrain_world *w = open_world(s->preset, s->seed);
		struct terrain_tile_request rq = { sizeof(rq), s->lod, s->cx, s->cz, s->quantum_um,
						   s->layers, s->format, 0 };
		struct terrain_tile_info a = { .size = sizeof(a) }, b = { .size = sizeof(b) }, h = { .size = sizeof(h) };
		uint32_t n = terrain_tile_side(w, s->lod) * terrain_tile_side(w, s->lod);
		size_t len, len2;

		assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, MAX_N, mats, MAX_N, &a),
				 0);
		assert_int_equal(terrain_generate_encoded(w, NULL, NULL, &rq, enc, sizeof(enc), &len),
				 0);
		assert_int_equal(terrain_decode_info(enc, len, &h), 0);
		assert_int_equal(terrain_decode(enc, len, &b, heights2, MAX_N, mats2, MAX_N), 0);
		assert_int_equal(h.checksum, b.checksum);
		assert_int_equal(b.version, (s->format == 1 || n < 33 * 33 ? 1 :
					     s->format == 3		  ? 3 :
					     s->format == 5		  ? 5 :
									    7) +
						    (s->layers ? 1 : 0));
		assert_int_equal(b.layers, s->layers);
		assert_int_equal(b.quantum_um, s->quantum_um ? s->quantum_um : 10000);
		assert_int_equal(b.fingerprint, a.fingerprint);
		assert_int_equal(b.side, a.side);
		assert_memory_equal(heights, heights2, n * sizeof(int32_t));
		if (s->layers)
			assert_memory_equal(mats, mats2, n);
		/* encoding the decoded tile gives the same bytes */
		assert_int_equal(terrain_encode(&b, heights2, s->layers ? mats2 : NULL, s->format,
						enc2, sizeof(enc2), &len2), 0);
		assert_int_equal(len2, len);
		assert_memory_equal(enc2, enc, len);
		terrain_world_destroy(w);
	}
}

static void test_decode_rejects_damage_and_short_buffers(void **state)
{
	struct terrain_world *w = open_world("default", 1);
	struct terrain_tile_request rq = request(1, 0, 0);
	struct terrain_tile_info info = { .size = sizeof(info) };
	size_t len, n = 129 * 129;

	(void)state;
	assert_int_equal(terrain_generate_encoded(w, NULL, NULL, &rq, enc, sizeof(enc), &len), 0);
	assert_int_equal(terrain_decode(enc, len - 1, &info, heights, MAX_N, NULL, 0),
			 TERRAIN_ERR_TRUNC);
	assert_int_equal(terrain_decode(enc, 10, &info, heights, MAX_N, NULL, 0), TERRAIN_ERR_TRUNC);
	assert_int_equal(terrain_decode(enc, len, &info, heights, n - 1, NULL, 0), TERRAIN_ERR_TOOBIG);
	enc[len / 2] ^= 0x40;
	assert_int_equal(terrain_decode(enc, len, &info, heights, MAX_N, NULL, 0) < 0, 1);
	enc[len / 2] ^= 0x40;
	enc[0] ^= 1;
	assert_int_equal(terrain_decode(enc, len, &info, heights, MAX_N, NULL, 0), TERRAIN_ERR_MAGIC);
	enc[0] ^= 1;
	assert_int_equal(terrain_decode(enc, len, &info, heights, MAX_N, NULL, 0), 0);
	/* a generation buffer one short, and materials asked without a buffer */
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, n - 1, NULL, 0, NULL),
			 TERRAIN_ERR_TOOBIG);
	rq.layers = TERRAIN_LAYER_MATERIAL;
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, n, NULL, 0, NULL),
			 TERRAIN_ERR_INVAL);
	rq.layers = 0;
	rq.quantum_um = 15000; /* not a multiple of 1 cm */
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, n, NULL, 0, NULL),
			 TERRAIN_ERR_INVAL);
	rq.quantum_um = 0;
	rq.lod = 9;
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, MAX_N, NULL, 0, NULL),
			 TERRAIN_ERR_INVAL);
	terrain_world_destroy(w);
}

/* Older callers pass shorter structs, newer ones longer: both work. */
static void test_size_first_structs_old_and_new_callers(void **state)
{
	struct terrain_world *w = open_world("default", 3);
	struct {
		struct terrain_tile_info info;
		uint64_t later_field;   /* what a newer header might add */
	} big;
	struct {
		struct terrain_tile_request rq;
		uint64_t later_field;
	} newer;
	struct terrain_tile_request rq = request(4, 1, 2);
	struct terrain_world_info wi = { .size = 8 };   /* too small for 1.0 */

	(void)state;
	memset(&big, 0xab, sizeof(big));
	big.info.size = sizeof(big);
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, MAX_N, NULL, 0, &big.info),
			 0);
	assert_int_equal(big.info.side, 17);
	assert_int_equal(big.info.cz, 2);
	assert_int_equal(big.later_field, 0xababababababababULL); /* not written */
	memset(&newer, 0, sizeof(newer));
	newer.rq = rq;
	newer.rq.size = sizeof(newer);
	assert_int_equal(terrain_generate(w, NULL, NULL, &newer.rq, heights2, MAX_N, NULL, 0, NULL),
			 0);
	assert_memory_equal(heights, heights2, 17 * 17 * sizeof(int32_t));
	assert_int_equal(terrain_world_info(w, &wi), TERRAIN_ERR_INVAL);
	rq.size = 16;
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, MAX_N, NULL, 0, NULL),
			 TERRAIN_ERR_INVAL);
	rq.size = sizeof(rq);
	rq.reserved = 1;
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, MAX_N, NULL, 0, NULL),
			 TERRAIN_ERR_INVAL);
	terrain_world_destroy(w);
}

static void test_blocks_and_points_are_tile_samples(void **state)
{
	struct terrain_world *w = open_world("alpine", 11);
	struct terrain_tile_request rq = request(2, -1, 0);
	int32_t blk[70 * 3];
	double xz[8], m[4];
	size_t i, j;

	(void)state;
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, MAX_N, NULL, 0, NULL), 0);
	/* a block straddling chunks -1 and 0, rows 10..12 of the LOD-2 lattice */
	assert_int_equal(terrain_heights(w, NULL, NULL, 2, -256 + 4 * 5, 40, 70, 3, blk, 70 * 3), 0);
	for (j = 0; j < 3; j++)
		for (i = 0; i < 60; i++)   /* tile (-1, 0) holds x < 0 plus x = 0 */
			assert_int_equal(blk[j * 70 + i], heights[(10 + j) * 65 + 5 + i]);
	assert_int_equal(terrain_heights(w, NULL, NULL, 2, 1, 0, 2, 2, blk, 4), TERRAIN_ERR_INVAL);
	assert_int_equal(terrain_heights(w, NULL, NULL, 2, 0, 0, 2, 2, blk, 3), TERRAIN_ERR_TOOBIG);
	/* points: lattice points are exact samples, midpoints the mean */
	rq = request(0, 0, 0);
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights, MAX_N, NULL, 0, NULL), 0);
	xz[0] = 3;
	xz[1] = 5;
	xz[2] = 3.5;
	xz[3] = 5;
	xz[4] = 3.5;
	xz[5] = 5.5;
	xz[6] = 1e300;
	xz[7] = 0;
	assert_int_equal(terrain_sample(w, NULL, NULL, xz, 3, m), 0);
	assert_true(m[0] == (double)heights[5 * 257 + 3] / 100);
	assert_true(m[1] == (double)heights[5 * 257 + 3] / 100 +
				    0.5 * ((double)heights[5 * 257 + 4] / 100 -
					   (double)heights[5 * 257 + 3] / 100));
	assert_true(m[2] > -10000 && m[2] < 10000);
	assert_int_equal(terrain_sample(w, NULL, NULL, xz, 4, m), TERRAIN_ERR_INVAL);
	/* far-apart points (one 2 x 2 block each) and close ones (one block
	 * for all) give the same values */
	xz[4] = 1e6 + 0.25;
	xz[5] = -3e6 - 0.75;
	assert_int_equal(terrain_sample(w, NULL, NULL, xz, 3, m), 0);
	assert_int_equal(terrain_sample(w, NULL, NULL, xz + 4, 1, m + 3), 0);
	assert_true(m[2] == m[3]);
	assert_int_equal(terrain_sample(w, NULL, NULL, xz + 2, 1, m + 3), 0);
	assert_true(m[1] == m[3]);
	terrain_world_destroy(w);
}

/* ---- edits ---- */

static const char *batch1 =
	"{\"edits\": [{\"op\": \"raise\", \"x\": 256, \"z\": 256, \"radius\": 10, \"strength\": 3},"
	" {\"op\": \"flatten\", \"x\": 130.5, \"z\": -20, \"radius\": 90, \"strength\": 0.5,"
	"  \"height\": 50, \"falloff\": \"linear\"}]}";
static const char *batch2 =
	"{\"edits\": [{\"op\": \"lower\", \"x\": -5, \"z\": 7, \"radius\": 3, \"strength\": 1},"
	" {\"op\": \"set\", \"x\": 300, \"z\": 200, \"radius\": 40, \"height\": -12.25}]}";

static size_t record(const struct terrain_world *w, uint64_t first, const char *json,
		     uint8_t *out)
{
	char msg[256];
	size_t len;

	assert_int_equal(terrain_edits_record(w, first, json, strlen(json), out, 11029, &len, msg,
					      sizeof(msg)), 0);
	return len;
}

/* The canonical edits of a record (after its 22 + gen_len byte head). */
static void edits_of(const uint8_t *rec, struct edit *e, size_t *n)
{
	size_t k, head = 2 + rec[1] + 20;

	*n = (size_t)rec[head - 4] | (size_t)rec[head - 3] << 8;
	for (k = 0; k < *n; k++)
		assert_int_equal(edit_decode(rec + head + k * 42, 42, &e[k]), 0);
}

static void test_edits_give_the_servers_hashes_and_tiles(void **state)
{
	struct terrain_world *w = open_world("default", 42);
	struct terrain_world_info wi = { .size = sizeof(wi) };
	struct preset *p = server_preset("default");
	struct terrain_edits *ed;
	struct world *sw;
	struct edit e[4];
	uint8_t r1[11029], r2[11029];
	size_t n1, n2, len, slen;
	int32_t cx, cz;

	(void)state;
	assert_int_equal(terrain_world_info(w, &wi), 0);
	assert_int_equal(terrain_edits_create(w, &ed), 0);
	assert_int_equal(terrain_edits_world_hash(ed), terrain_hash_start(wi.fingerprint, 42));
	assert_int_equal(world_create(wi.fingerprint, 42, 8, &sw), 0);
	record(w, 1, batch1, r1);
	record(w, 3, batch2, r2);
	edits_of(r1, e, &n1);
	edits_of(r2, e + n1, &n2);
	assert_int_equal(n1 + n2, 4);
	assert_int_equal(terrain_edits_apply_record(ed, r2, sizeof(r2)), TERRAIN_ERR_CORRUPT);
	len = 2 + r2[1] + 20 + 2 * 42;
	assert_int_equal(terrain_edits_apply_record(ed, r2, len), TERRAIN_ERR_CONFLICT); /* seq 3 first */
	assert_int_equal(terrain_edits_apply_record(ed, r1, 2 + r1[1] + 20 + 2 * 42), 0);
	assert_int_equal(terrain_edits_apply_record(ed, r2, len), 0);
	assert_int_equal(world_apply(sw, 1, e, 2, NULL), 0);
	assert_int_equal(world_apply(sw, 3, e + 2, 2, NULL), 0);
	assert_int_equal(terrain_edits_seq(ed), 4);
	assert_int_equal(terrain_edits_world_hash(ed), world_hash(sw));
	for (cz = -2; cz <= 2; cz++)
		for (cx = -2; cx <= 2; cx++) {
			struct world_chunk ch;
			uint64_t v, h;

			world_chunk(sw, cx, cz, &ch);
			assert_int_equal(terrain_edits_chunk(ed, cx, cz, &v, &h), 0);
			assert_int_equal(v, ch.version);
			assert_int_equal(h, ch.hash);
		}
	/* tiles with edits: the server's bytes are pipeline_tile() with the
	 * whole list (baked or not, tests/unit/test_bake.c) */
	for (cz = -1; cz <= 1; cz++)
		for (cx = -1; cx <= 1; cx++) {
			struct terrain_tile_request rq = { sizeof(rq), (cx + 1) % 3, cx, cz, 0,
							   cz == 0 ? TERRAIN_LAYER_MATERIAL : 0, 0, 0 };
			struct world_chunk ch;
			struct tile t;

			world_chunk(sw, cx, cz, &ch);
			assert_int_equal(pipeline_tile(p, 42, rq.lod, cx, cz, NULL, e, 4, ch.version,
						       rq.layers, &t), 0);
			assert_int_equal(tile_encode(&t, enc2, sizeof(enc2), &slen), 0);
			tile_release(&t);
			assert_int_equal(terrain_generate_encoded(w, ed, NULL, &rq, enc, sizeof(enc),
								  &len), 0);
			assert_int_equal(len, slen);
			assert_memory_equal(enc, enc2, len);
		}
	world_destroy(sw);
	terrain_edits_destroy(ed);
	preset_destroy(p);
	terrain_world_destroy(w);
}

static int try_record(const struct terrain_world *w, const char *json, uint8_t *out,
		      char msg[256])
{
	size_t len;

	return terrain_edits_record(w, 1, json, strlen(json), out, 11029, &len, msg, 256);
}

static void test_edit_records_are_checked_whole(void **state)
{
	struct terrain_world *w = open_world("default", 42), *other = open_world("default", 43);
	struct terrain_edits *ed;
	uint8_t r[11029], bad[11029];
	char msg[256];
	size_t len, blen;
	uint64_t h0, v, h;

	(void)state;
	assert_int_equal(terrain_edits_create(w, &ed), 0);
	h0 = terrain_edits_world_hash(ed);
	assert_int_equal(try_record(w, "{\"edits\": [{\"op\": \"raise\"}]}", r, msg),
			 TERRAIN_ERR_PARSE);
	assert_non_null(strstr(msg, "edits[0]"));
	assert_int_equal(try_record(w, "{\"edits\": [{\"op\": \"raise\", \"x\": 0, \"z\": 0, "
				    "\"radius\": 5000, \"strength\": 1}]}", r, msg),
			 TERRAIN_ERR_RANGE);
	assert_non_null(strstr(msg, "radius"));
	assert_int_equal(try_record(w, "{\"edits\": [{\"op\": \"raise\", \"x\": 1e12, \"z\": 0, "
				    "\"radius\": 5, \"strength\": 1}]}", r, msg),
			 TERRAIN_ERR_RANGE);
	assert_non_null(strstr(msg, "outside the world"));
	len = record(w, 1, batch1, r);
	assert_int_equal(terrain_edits_record(w, 1, batch1, strlen(batch1), r, len - 1, &blen, NULL,
					      0), TERRAIN_ERR_TOOBIG);
	/* another world's record; a damaged edit in the second place */
	blen = record(other, 1, batch1, bad);
	assert_int_equal(terrain_edits_apply_record(ed, bad, blen), TERRAIN_ERR_CONFLICT);
	memcpy(bad, r, len);
	bad[len - 42] = 9; /* op 9 */
	assert_int_equal(terrain_edits_apply_record(ed, bad, len), TERRAIN_ERR_CORRUPT);
	bad[0] = 4; /* a record version it does not know (1, 2 and 3 it reads) */
	assert_int_equal(terrain_edits_apply_record(ed, bad, len), TERRAIN_ERR_VERSION);
	assert_int_equal(terrain_edits_seq(ed), 0);
	assert_int_equal(terrain_edits_world_hash(ed), h0);
	assert_int_equal(terrain_edits_chunk(ed, 0, 0, &v, &h), 0);
	assert_int_equal(v, 0);
	assert_int_equal(h, 0);
	assert_int_equal(terrain_edits_apply_record(ed, r, len), 0);
	assert_int_equal(terrain_edits_apply_record(ed, r, len), TERRAIN_ERR_CONFLICT); /* again */
	assert_int_equal(terrain_edits_seq(ed), 2);
	/* the chain by hand */
	assert_int_equal(terrain_hash_next(h0, 1, r + len - 84, &h), 0);
	assert_int_equal(terrain_hash_next(h, 2, r + len - 42, &h), 0);
	assert_int_equal(h, terrain_edits_world_hash(ed));
	assert_int_equal(terrain_hash_next(h0, 1, bad + len - 42, &h), TERRAIN_ERR_CORRUPT);
	/* raw canonical edits continue the log */
	assert_int_equal(terrain_edits_apply(ed, 2, r + len - 84, 2), TERRAIN_ERR_CONFLICT);
	assert_int_equal(terrain_edits_apply(ed, 3, r + len - 84, 2), 0);
	assert_int_equal(terrain_edits_seq(ed), 4);
	terrain_edits_destroy(ed);
	terrain_world_destroy(w);
	terrain_world_destroy(other);
}

static void test_edited_blocks_and_points_match_edited_tiles(void **state)
{
	struct terrain_world *w = open_world("islands", 2);
	struct terrain_tile_request rq = request(0, 0, 0);
	struct terrain_edits *ed;
	uint8_t r[11029];
	int32_t blk[257];
	double xz[2] = { 256, 256 }, m;
	size_t len;
	int i;

	(void)state;
	assert_int_equal(terrain_edits_create(w, &ed), 0);
	len = record(w, 1, batch1, r);
	assert_int_equal(terrain_edits_apply_record(ed, r, len), 0);
	assert_int_equal(terrain_generate(w, ed, NULL, &rq, heights, MAX_N, NULL, 0, NULL), 0);
	assert_int_equal(terrain_generate(w, NULL, NULL, &rq, heights2, MAX_N, NULL, 0, NULL), 0);
	assert_true(heights[256 * 257 + 256] != heights2[256 * 257 + 256]); /* raised */
	/* row 256 of the edited tile from a block over chunks (0,1) and (1,1) too */
	assert_int_equal(terrain_heights(w, ed, NULL, 0, 0, 256, 257, 1, blk, 257), 0);
	for (i = 0; i < 257; i++)
		assert_int_equal(blk[i], heights[256 * 257 + i]);
	assert_int_equal(terrain_sample(w, ed, NULL, xz, 1, &m), 0);
	assert_true(m == (double)heights[256 * 257 + 256] / 100);
	terrain_edits_destroy(ed);
	terrain_world_destroy(w);
}

/* ---- reverts ---- */

/* A version-3 record of the edits of a JSON batch, by author at time_ms. */
static size_t record3(const struct terrain_world *w, uint64_t first, const char *json,
		      const char *author, uint64_t time_ms, uint8_t *out)
{
	uint8_t v1[11029];
	size_t n = record(w, first, json, v1), head = 2 + v1[1] + 20, len;
	struct batch b;

	assert_int_equal(batch_decode(v1, n, &b), 0);
	b.time_ms = time_ms;
	b.author = author;
	b.author_len = strlen(author);
	assert_int_equal(batch_encode(&b, out, 11029, &len), 0);
	assert_int_equal(out[0], 3);
	(void)head;
	return len;
}

static size_t revert_rec(const struct terrain_world *w, uint64_t seq, const char *json,
			 uint8_t *out)
{
	char msg[256];
	size_t len;

	assert_int_equal(terrain_edits_revert_record(w, seq, json, strlen(json), "mod",
						     5000 + seq, 1, out, 514, &len, msg,
						     sizeof(msg)), 0);
	assert_int_equal(out[0], 3);
	return len;
}

#define RV_SIDE 9 /* chunks -4..4 each way */

struct snap {
	uint64_t version[RV_SIDE * RV_SIDE], hash[RV_SIDE * RV_SIDE];
	int32_t h[2][257 * 257]; /* tiles (0, 0) and (1, 1) at LOD 0 */
};

/* The library's and the server's chunks are equal; their state into *s. */
static void same_as_server(const struct terrain_world *w, const struct terrain_edits *ed,
			   struct world *sw, struct snap *s)
{
	struct terrain_tile_request rq = request(0, 0, 0);
	int32_t cx, cz;
	int k;

	assert_int_equal(terrain_edits_seq(ed), world_seq(sw));
	assert_int_equal(terrain_edits_world_hash(ed), world_hash(sw));
	for (cz = -4; cz <= 4; cz++)
		for (cx = -4; cx <= 4; cx++) {
			size_t i = (size_t)(cz + 4) * RV_SIDE + (size_t)(cx + 4);
			struct world_chunk ch;

			world_chunk(sw, cx, cz, &ch);
			assert_int_equal(terrain_edits_chunk(ed, cx, cz, &s->version[i], &s->hash[i]), 0);
			assert_int_equal(s->version[i], ch.version);
			assert_int_equal(s->hash[i], ch.hash);
		}
	for (k = 0; k < 2; k++) {
		rq.cx = rq.cz = k;
		assert_int_equal(terrain_generate(w, ed, NULL, &rq, s->h[k], 257 * 257, NULL, 0,
						  NULL), 0);
	}
}

static const char *alice1 =
	"{\"edits\": [{\"op\": \"raise\", \"x\": 100, \"z\": 100, \"radius\": 50, \"strength\": 3},"
	" {\"op\": \"flatten\", \"x\": 256, \"z\": 256, \"radius\": 40, \"strength\": 0.5,"
	"  \"height\": 50}]}";
static const char *mallory =
	"{\"edits\": [{\"op\": \"lower\", \"x\": 120, \"z\": 90, \"radius\": 60, \"strength\": 4},"
	" {\"op\": \"set\", \"x\": 250, \"z\": 260, \"radius\": 30, \"height\": -12.25}]}";
static const char *alice2 =
	"{\"edits\": [{\"op\": \"raise\", \"x\": 300, \"z\": 50, \"radius\": 20, \"strength\": 1}]}";

/* after's chunks against chains worked out here: alice's edits 1, 2 (ra)
 * and 5 (rb, both records by "alice") count, mallory's 3 and 4 no longer;
 * a chunk whose hash changed has the revert's version 6, the others keep
 * theirs. */
static void check_chains(const struct terrain_world *w, const uint8_t *ra, const uint8_t *rb,
			 const struct snap *before, const struct snap *after)
{
	struct terrain_world_info wi = { .size = sizeof(wi) };
	const uint8_t *wire[3] = { ra + 2 + ra[1] + 30 + 5, ra + 2 + ra[1] + 30 + 5 + 42,
				   rb + 2 + rb[1] + 30 + 5 };
	const uint64_t seqs[3] = { 1, 2, 5 };
	int32_t xs[64], zs[64], cx, cz;
	int changed = 0;

	assert_int_equal(terrain_world_info(w, &wi), 0);
	for (cz = -4; cz <= 4; cz++)
		for (cx = -4; cx <= 4; cx++) {
			size_t i = (size_t)(cz + 4) * RV_SIDE + (size_t)(cx + 4), k, j, nc;
			uint64_t h = 0;

			for (k = 0; k < 3; k++) {
				struct edit v;

				assert_int_equal(edit_decode(wire[k], 42, &v), 0);
				edit_chunks(&v, wi.chunk_log2, xs, zs, 64, &nc);
				for (j = 0; j < nc; j++)
					if (xs[j] == cx && zs[j] == cz)
						assert_int_equal(terrain_hash_next(h, seqs[k], wire[k],
										   &h), 0);
			}
			assert_int_equal(after->hash[i], h);
			if (before->hash[i] != after->hash[i]) {
				assert_int_equal(after->version[i], 6);
				changed++;
			} else {
				assert_int_equal(after->version[i], before->version[i]);
			}
		}
	assert_true(changed > 0);
}

static void test_a_revert_and_its_undo_give_the_servers_hashes_and_heights(void **state)
{
	struct terrain_world *w = open_world("default", 42);
	struct terrain_edits *ed, *clean;
	struct world_map *m;
	struct catalog *cat;
	struct world *sw;
	static struct snap before, after, undone, without, later;
	uint8_t rec[11029], ra[11029], rb[11029];
	char err[256];
	size_t len, na, nb, i;
	int gen;

	(void)state;
	assert_int_equal(catalog_load(NULL, &cat, err, sizeof(err)), 0);
	assert_int_equal(world_map_create(cat, &m), 0);
	gen = catalog_find(cat, "default", 7);
	assert_int_equal(world_map_get(m, gen, 42, &sw), 0);
	assert_int_equal(terrain_edits_create(w, &ed), 0);
#define BOTH(r, n)                                                                        \
	do {                                                                              \
		assert_int_equal(terrain_edits_apply_record(ed, r, n), 0);                \
		assert_int_equal(world_map_replay(m, r, n, err, sizeof(err)), 0);         \
	} while (0)
	na = record3(w, 1, alice1, "alice", 1000, ra);
	BOTH(ra, na);
	len = record3(w, 3, mallory, "mallory", 2000, rec);
	BOTH(rec, len);
	nb = record3(w, 5, alice2, "alice", 3000, rb);
	BOTH(rb, nb);
	same_as_server(w, ed, sw, &before);
	/* a damaged revert changes nothing */
	len = revert_rec(w, 6, "{\"author\": \"mallory\"}", rec);
	rec[len - 1] = 1; /* a reserved byte */
	assert_int_equal(terrain_edits_apply_record(ed, rec, len), TERRAIN_ERR_CORRUPT);
	assert_int_equal(terrain_edits_seq(ed), 5);
	/* mallory's edits out: heights are those of alice's alone */
	len = revert_rec(w, 6, "{\"author\": \"mallory\"}", rec);
	BOTH(rec, len);
	same_as_server(w, ed, sw, &after);
	assert_int_equal(terrain_edits_seq(ed), 6);
	assert_int_equal(terrain_edits_create(w, &clean), 0);
	assert_int_equal(terrain_edits_apply_record(clean, ra, na), 0);
	assert_int_equal(terrain_edits_apply(clean, 3, rb + nb - 42, 1), 0);
	memset(&without, 0, sizeof(without));
	for (i = 0; i < 2; i++) {
		struct terrain_tile_request rq = request(0, (int32_t)i, (int32_t)i);

		assert_int_equal(terrain_generate(w, clean, NULL, &rq, without.h[i], 257 * 257,
						  NULL, 0, NULL), 0);
		assert_memory_equal(after.h[i], without.h[i], sizeof(without.h[i]));
		assert_memory_not_equal(after.h[i], before.h[i], sizeof(before.h[i]));
	}
	/* each chunk's hash: the chain over alice's edits touching it, with their
	 * own seqs; version 6 where mallory's edits were, else as before */
	check_chains(w, ra, rb, &before, &after);
	/* the undo: the hashes and heights before the revert, version 7 */
	len = revert_rec(w, 7, "{\"undo\": 6}", rec);
	BOTH(rec, len);
	same_as_server(w, ed, sw, &undone);
	assert_memory_equal(undone.hash, before.hash, sizeof(before.hash));
	assert_memory_equal(undone.h, before.h, sizeof(before.h));
	assert_int_equal(undone.version[4 * RV_SIDE + 4], 7);
	/* undoing it again, or undoing an edit, changes no chunk */
	len = revert_rec(w, 8, "{\"undo\": 6}", rec);
	BOTH(rec, len);
	len = revert_rec(w, 9, "{\"undo\": 3}", rec);
	BOTH(rec, len);
	same_as_server(w, ed, sw, &later);
	assert_memory_equal(later.version, undone.version, sizeof(undone.version));
	assert_memory_equal(later.hash, undone.hash, sizeof(undone.hash));
	/* filters by area, time and seq, an edit after them, and two reverts
	 * over one edit: out while either counts */
	len = revert_rec(w, 10, "{\"area\": [0, 0, 200, 200], \"until_time\": 2500}", rec);
	BOTH(rec, len);
	len = revert_rec(w, 11, "{\"seq_from\": 3, \"seq_to\": 4}", rec);
	BOTH(rec, len);
	len = record3(w, 12, alice2, "alice", 6000, rec);
	BOTH(rec, len);
	len = revert_rec(w, 13, "{\"undo\": 10}", rec);
	BOTH(rec, len);
	len = revert_rec(w, 14, "{\"since_time\": 2000, \"author\": \"alice\"}", rec);
	BOTH(rec, len);
	same_as_server(w, ed, sw, &later);
	/* what the server would refuse */
	assert_int_equal(terrain_edits_revert_record(w, 15, "{}", 2, "mod", 1, 1, rec, 514, &len,
						     err, sizeof(err)), TERRAIN_ERR_PARSE);
	assert_non_null(strstr(err, "at least one"));
	assert_int_equal(terrain_edits_revert_record(w, 15, "{\"undo\": 1}", 11, "a b", 1, 1, rec,
						     514, &len, err, sizeof(err)), TERRAIN_ERR_INVAL);
	assert_non_null(strstr(err, "author"));
	assert_int_equal(terrain_edits_revert_record(w, 15, "{\"undo\": 1}", 11, "mod", 1, 1, rec,
						     100, &len, err, sizeof(err)), TERRAIN_ERR_TOOBIG);
	terrain_edits_destroy(clean);
	terrain_edits_destroy(ed);
	world_map_destroy(m);
	catalog_destroy(cat);
	terrain_world_destroy(w);
#undef BOTH
}

/* ---- threads ---- */

struct job {
	const struct terrain_world *w;
	int32_t cx;
	uint64_t hash[8];
};

static void *run(void *arg)
{
	struct job *j = arg;
	struct terrain_work *k;
	int32_t *h = malloc(MAX_N * sizeof(*h));
	int i;

	if (!h || terrain_work_create(&k))
		return NULL;
	for (i = 0; i < 8; i++) {
		struct terrain_tile_request rq = request(i % 3, j->cx + i, -i);

		j->hash[i] = terrain_generate(j->w, NULL, k, &rq, h, MAX_N, NULL, 0, NULL) ? 0 :
			     terrain_heights_hash(h, (size_t)terrain_tile_side(j->w, i % 3) *
							     terrain_tile_side(j->w, i % 3));
	}
	terrain_work_destroy(k);
	free(h);
	return NULL;
}

static void test_one_world_shared_by_threads(void **state)
{
	struct terrain_world *w = open_world("canyons", 99);
	struct job a = { w, 10, { 0 } }, b = { w, 10, { 0 } }, c = { w, 10, { 0 } };
	pthread_t ta, tb;

	(void)state;
	assert_int_equal(pthread_create(&ta, NULL, run, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, run, &b), 0);
	run(&c);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_memory_equal(a.hash, c.hash, sizeof(a.hash));
	assert_memory_equal(b.hash, c.hash, sizeof(b.hash));
	assert_true(c.hash[0] != 0 && c.hash[0] != c.hash[1]);
	terrain_world_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_golden_tile_through_the_api),
		cmocka_unit_test(test_presets_seeds_and_errors_are_named),
		cmocka_unit_test(test_a_json_world_is_the_builtin_world),
		cmocka_unit_test(test_encoded_tiles_are_the_servers_bytes),
		cmocka_unit_test(test_decode_gives_back_every_version),
		cmocka_unit_test(test_decode_rejects_damage_and_short_buffers),
		cmocka_unit_test(test_size_first_structs_old_and_new_callers),
		cmocka_unit_test(test_blocks_and_points_are_tile_samples),
		cmocka_unit_test(test_edits_give_the_servers_hashes_and_tiles),
		cmocka_unit_test(test_edit_records_are_checked_whole),
		cmocka_unit_test(test_edited_blocks_and_points_match_edited_tiles),
		cmocka_unit_test(test_a_revert_and_its_undo_give_the_servers_hashes_and_heights),
		cmocka_unit_test(test_one_world_shared_by_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
