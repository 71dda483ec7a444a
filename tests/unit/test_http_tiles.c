/*
 * test_http_tiles.c - tile layers, objects, batches and eroded tiles,
 * end to end over HTTP.
 *
 * Starts $BUILD/terrain-server serve on a free loopback port as a child
 * process (killed when the tests end, or when this process dies) and
 * checks what the server sends against the decoders: a material-layer
 * tile is version 2 with the heights of the plain tile; the JSON and
 * binary object lists agree, repeat, never overlap between chunks and
 * follow edits; every member of a bundle is the single tile byte for
 * byte, the zstd bundle beats the single tiles (the sizes are printed),
 * a cold batch generates each tile once; an eroded tile is the same from
 * a cold server and from one that generated its neighbours first. No
 * wall-clock asserts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <zstd.h>

#include "../client-sample/api.h"
#include "material.h"
#include "scatter.h"
#include "service/routes.h"
#include "tile.h"
#include "tiles/bundle.h"
#include "tiles/objects.h"

#include "harness.h"

#define IO_TIMEOUT_S 120 /* generous: eroded tiles in the ASan build are slow */

static struct harness_server main_srv, second_srv;

/* ---- requests and responses ------------------------------------------------------ */

/* Read one whole answer (Connection: close); a Content-Length it gives is
 * its length. */
static void read_resp(int fd, struct harness_resp *rp)
{
	char cl[32];

	harness_read_all(fd, rp);
	if (harness_header(rp, "Content-Length", cl, sizeof(cl)))
		assert_int_equal(strtoul(cl, NULL, 10), rp->body_len);
}

/* Send GET path with extra header lines ("" or lines ending in \r\n). */
static int send_get(const struct harness_server *s, const char *path, const char *headers)
{
	char raw[4096];
	int fd = harness_connect(s->port, 0);

	snprintf(raw, sizeof(raw), "GET %s HTTP/1.1\r\nHost: t\r\n%sConnection: close\r\n\r\n",
		 path, headers);
	harness_send_str(fd, raw);
	return fd;
}

static void get_on(const struct harness_server *s, const char *path, const char *headers,
		   struct harness_resp *rp)
{
	int fd = send_get(s, path, headers);

	read_resp(fd, rp);
	close(fd);
}

static void get(const char *path, const char *headers, struct harness_resp *rp)
{
	get_on(&main_srv, path, headers, rp);
}

/* GET that must answer 200. */
static void get_ok(const char *path, const char *headers, struct harness_resp *rp)
{
	get(path, headers, rp);
	if (rp->status != 200)
		fprintf(stderr, "GET %s: %d %s\n", path, rp->status, (char *)rp->body);
	assert_int_equal(rp->status, 200);
}

static double metric_on(const struct harness_server *s, const char *name)
{
	struct harness_resp rp;
	char pat[128];
	const char *p;
	double v;

	get_on(s, "/metrics", "", &rp);
	assert_int_equal(rp.status, 200);
	snprintf(pat, sizeof(pat), "\n%s ", name);
	p = strstr((char *)rp.body, pat);
	assert_non_null(p);
	v = strtod(p + strlen(pat), NULL);
	free(rp.body);
	return v;
}

/* The zstd tag of identity tag id "<hex>": "<hex>-z". */
static void ztag(const char *id, char *out, size_t cap)
{
	assert_true(strlen(id) >= 2);
	snprintf(out, cap, "%.*s-z\"", (int)strlen(id) - 1, id);
}

static double generations(void)
{
	return metric_on(&main_srv, "terrain_generations_total");
}

/* ---- tiles with layers ------------------------------------------------------------- */

static void test_http_tiles_material_layer_is_v2_with_the_same_heights(void **state)
{
#define BASE "/v1/worlds/layers/chunks/1/3/-2"
	struct tile plain, layered;
	struct harness_resp a, b;
	char ea[64], eb[64];
	size_t n;

	(void)state;
	get_ok(BASE, "", &a);
	get_ok("/v1/worlds/layers/chunks/1/3/-2?layers=height,material", "", &b);
	assert_int_equal(a.body[4], TILE_VERSION);
	assert_int_equal(b.body[4], TILE_VERSION_LAYERS);
	assert_int_equal(tile_decode((const uint8_t *)a.body, a.body_len, &plain), 0);
	assert_int_equal(tile_decode((const uint8_t *)b.body, b.body_len, &layered), 0);
	assert_null(plain.material);
	assert_non_null(layered.material);
	n = (size_t)plain.side * plain.side;
	assert_int_equal(layered.side, plain.side);
	assert_memory_equal(layered.h, plain.h, n * sizeof(*plain.h));
	for (size_t k = 0; k < n; k++)
		assert_true(layered.material[k] < 6);
	assert_string_not_equal(harness_header(&a, "ETag", ea, sizeof(ea)),
				harness_header(&b, "ETag", eb, sizeof(eb)));
	tile_release(&plain);
	tile_release(&layered);
	free(a.body);
	free(b.body);

	/* the layer list is the cache key: "height" is the plain tile */
	get_ok("/v1/worlds/layers/chunks/1/3/-2?layers=height", "", &a);
	assert_string_equal(harness_header(&a, "ETag", eb, sizeof(eb)), ea);
	free(a.body);
	get(BASE "?layers=height,bogus", "", &a);
#undef BASE
	assert_int_equal(a.status, 400);
	assert_non_null(strstr((char *)a.body, "height,bogus"));
	free(a.body);
	get("/v1/worlds/layers/chunks/2?cx0=0&cz0=0&cx1=1&cz1=0&layers=rivers", "", &a);
	assert_int_equal(a.status, 400);
	assert_non_null(strstr((char *)a.body, "rivers"));
	free(a.body);
}

static void post_edit(const char *seed, const char *json);

static void get_tile(const char *path, struct tile *t, char *etag, size_t cap)
{
	struct harness_resp rp;

	get_ok(path, "", &rp);
	assert_int_equal(tile_decode((const uint8_t *)rp.body, rp.body_len, t), 0);
	harness_header(&rp, "ETag", etag, cap);
	free(rp.body);
}

static void test_http_tiles_materials_follow_an_edit_just_beside_the_chunk(void **state)
{
	const char *east = "/v1/worlds/seam/chunks/0/0/0?layers=height,material";
	const char *west = "/v1/worlds/seam/chunks/0/-1/0?layers=height,material";
	struct tile before, a, b;
	char e0[64], e1[64], ew[64], edit[256];
	uint32_t j, s, z = 0;

	(void)state;
	get_tile(east, &before, e0, sizeof(e0));
	/* a sample on the seam that is grass, forest or sand: a cliff beside
	 * it must make it rock */
	for (j = 8; j + 8 < before.side && !z; j++)
		if (before.material[j * before.side] >= MATERIAL_SAND &&
		    before.material[j * before.side] <= MATERIAL_FOREST)
			z = j;
	assert_true(z > 0);
	/* set to -2000 m, radius 1 m, 1.6 m west of chunk 0's square: it moves
	 * sample x = -1 of chunk -1 (0.6 m away), not chunk 0, whose samples
	 * at x = 0 take their slope from x = -1 */
	snprintf(edit, sizeof(edit), "{\"edits\":[{\"op\":\"set\",\"x\":-1.6,\"z\":%u,"
		 "\"radius\":1,\"height\":-2000,\"falloff\":\"linear\"}]}", z);
	post_edit("seam", edit);
	get_tile(east, &a, e1, sizeof(e1));
	get_tile(west, &b, ew, sizeof(ew));
	s = a.side;
	assert_int_equal(a.edit_seq, 0); /* chunk 0 itself has no edit */
	assert_int_equal(b.edit_seq, 1);
	assert_memory_equal(a.h, before.h, (size_t)s * s * sizeof(*a.h));
	for (j = 0; j < s; j++) {
		assert_int_equal(a.h[j * s], b.h[j * s + s - 1]);
		assert_int_equal(a.material[j * s], b.material[j * s + s - 1]);
	}
	printf("seam at x = 0, z = %u: material %d before the edit, %d after\n", z,
	       before.material[z * s], a.material[z * s]);
	assert_int_equal(a.material[z * s], MATERIAL_ROCK);
	assert_int_not_equal(a.material[z * s], before.material[z * s]);
	assert_string_not_equal(e0, e1); /* not the stale tile from the cache */
	tile_release(&before);
	tile_release(&a);
	tile_release(&b);
}

/* ---- objects ------------------------------------------------------------------------ */

struct obj {
	int type;
	int64_t x_mm, z_mm, y_um;
	double rotation;      /* radians */
	int scale;            /* thousandths */
};

static int64_t le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return (int64_t)v; /* 8 bytes: two's complement */
}

static size_t parse_binary(const struct harness_resp *rp, struct obj **out)
{
	const uint8_t *b = (const uint8_t *)rp->body;
	size_t n, k;

	assert_true(rp->body_len >= OBJECTS_HEADER);
	assert_memory_equal(b, OBJECTS_MAGIC, 4);
	assert_int_equal(le(b + 4, 2), OBJECTS_VERSION);
	assert_int_equal(le(b + 6, 2), 0);
	assert_int_equal(le(b + 12, 4), 0);
	n = (size_t)le(b + 8, 4);
	assert_int_equal(rp->body_len, OBJECTS_HEADER + n * SCATTER_WIRE_SIZE);
	*out = calloc(n + 1, sizeof(**out));
	for (k = 0; k < n; k++) {
		const uint8_t *r = b + OBJECTS_HEADER + k * SCATTER_WIRE_SIZE;

		(*out)[k] = (struct obj){ r[0], le(r + 8, 8), le(r + 16, 8), le(r + 24, 8),
					  (double)le(r + 2, 2) * (6.283185307179586 / 65536.0),
					  (int)le(r + 4, 2) };
	}
	return n;
}

static int64_t scaled(const cJSON *o, const char *name, double unit)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	assert_true(cJSON_IsNumber(v));
	return (int64_t)floor(v->valuedouble * unit + 0.5);
}

static size_t parse_json(const struct harness_resp *rp, int32_t cx, int32_t cz, struct obj **out)
{
	cJSON *root = cJSON_ParseWithLength((const char *)rp->body, rp->body_len), *o;
	const cJSON *arr;
	size_t n, k = 0;

	assert_non_null(root);
	assert_int_equal(cJSON_GetObjectItem(root, "cx")->valueint, cx);
	assert_int_equal(cJSON_GetObjectItem(root, "cz")->valueint, cz);
	arr = cJSON_GetObjectItem(root, "objects");
	assert_true(cJSON_IsArray(arr));
	n = (size_t)cJSON_GetArraySize(arr);
	*out = calloc(n + 1, sizeof(**out));
	cJSON_ArrayForEach(o, arr) {
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(o, "type"));
		int t;

		for (t = 0; t < SCATTER_TYPE_COUNT && strcmp(scatter_type_name(t), type); t++)
			;
		assert_true(t < SCATTER_TYPE_COUNT);
		(*out)[k++] = (struct obj){ t, scaled(o, "x", 1e3), scaled(o, "z", 1e3),
					    scaled(o, "y", 1e6),
					    cJSON_GetObjectItem(o, "rotation")->valuedouble,
					    (int)scaled(o, "scale", 1e3) };
	}
	cJSON_Delete(root);
	return n;
}

static void objects_path(char *buf, size_t cap, const char *seed, int32_t cx, int32_t cz)
{
	snprintf(buf, cap, "/v1/worlds/%s/objects/%d/%d", seed, (int)cx, (int)cz);
}

#define BINARY "Accept: " OBJECTS_BINARY_TYPE "\r\n"

static void test_http_tiles_objects_json_and_binary_agree_and_repeat(void **state)
{
	struct harness_resp j, b, again;
	struct obj *oj, *ob;
	char path[128], ct[64], e1[64], e2[64], ez[72];
	size_t n, k, got;
	uint8_t *raw;

	(void)state;
	objects_path(path, sizeof(path), "42", 2, -1);
	get_ok(path, "", &j);
	get_ok(path, BINARY, &b);
	assert_string_equal(harness_header(&j, "Content-Type", ct, sizeof(ct)), OBJECTS_JSON_TYPE);
	assert_string_equal(harness_header(&b, "Content-Type", ct, sizeof(ct)), OBJECTS_BINARY_TYPE);
	assert_non_null(strstr(j.head, "Vary: Accept, Accept-Encoding"));
	n = parse_json(&j, 2, -1, &oj);
	assert_int_equal(parse_binary(&b, &ob), n);
	assert_true(n > 10);
	printf("objects of chunk 2/-1: %zu, %zu bytes JSON, %zu bytes binary\n", n,
	       j.body_len, b.body_len);
	for (k = 0; k < n; k++) {
		assert_int_equal(oj[k].type, ob[k].type);
		assert_int_equal(oj[k].x_mm, ob[k].x_mm);
		assert_int_equal(oj[k].z_mm, ob[k].z_mm);
		assert_int_equal(oj[k].y_um, ob[k].y_um);
		assert_int_equal(oj[k].scale, ob[k].scale);
		assert_true(fabs(oj[k].rotation - ob[k].rotation) <= 0.00005 + 1e-9);
		assert_true(ob[k].y_um >= 0); /* default sea level: 0 m */
	}
	/* the same answer twice, and the zstd form decodes to it */
	get_ok(path, BINARY, &again);
	assert_int_equal(again.body_len, b.body_len);
	assert_memory_equal(again.body, b.body, b.body_len);
	assert_string_equal(harness_header(&again, "ETag", e1, sizeof(e1)),
			    harness_header(&b, "ETag", e2, sizeof(e2)));
	free(again.body);
	get_ok(path, "Accept-Encoding: zstd\r\n", &again);
	raw = malloc(j.body_len + 1);
	got = ZSTD_decompress(raw, j.body_len + 1, again.body, again.body_len);
	assert_int_equal(got, j.body_len);
	assert_memory_equal(raw, j.body, j.body_len);
	ztag(harness_header(&j, "ETag", e2, sizeof(e2)), ez, sizeof(ez));
	assert_string_equal(harness_header(&again, "ETag", e1, sizeof(e1)), ez);
	free(raw);
	free(again.body);
	free(oj);
	free(ob);
	free(j.body);
	free(b.body);
}

static int cmp_pos(const void *a, const void *b)
{
	const struct obj *p = a, *q = b;

	if (p->x_mm != q->x_mm)
		return p->x_mm < q->x_mm ? -1 : 1;
	return p->z_mm < q->z_mm ? -1 : p->z_mm > q->z_mm;
}

static void test_http_tiles_objects_of_a_2x2_block_have_no_duplicates(void **state)
{
	struct obj all[4 * 1024], *o;
	size_t total = 0, n, k;
	char path[128];

	(void)state;
	for (int32_t cz = -1; cz <= 0; cz++)
		for (int32_t cx = 4; cx <= 5; cx++) {
			struct harness_resp rp;

			objects_path(path, sizeof(path), "42", cx, cz);
			get_ok(path, BINARY, &rp);
			n = parse_binary(&rp, &o);
			for (k = 0; k < n; k++) { /* each inside its own chunk */
				assert_true(o[k].x_mm >= cx * 256000LL &&
					    o[k].x_mm < (cx + 1) * 256000LL);
				assert_true(o[k].z_mm >= cz * 256000LL &&
					    o[k].z_mm < (cz + 1) * 256000LL);
			}
			assert_true(total + n <= sizeof(all) / sizeof(all[0]));
			memcpy(all + total, o, n * sizeof(*o));
			total += n;
			free(o);
			free(rp.body);
		}
	qsort(all, total, sizeof(all[0]), cmp_pos);
	for (k = 1; k < total; k++)
		assert_true(cmp_pos(&all[k - 1], &all[k]) != 0);
	printf("2x2 chunks: %zu objects, no duplicates\n", total);
}

static void post_edit(const char *seed, const char *json)
{
	char raw[2048];
	struct harness_resp rp;
	int fd = harness_connect(main_srv.port, 0);

	snprintf(raw, sizeof(raw), "POST /v1/worlds/%s/edits HTTP/1.1\r\nHost: localhost\r\n"
		 "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n%s", seed, strlen(json), json);
	harness_send_str(fd, raw);
	read_resp(fd, &rp);
	close(fd);
	if (rp.status != 200)
		fprintf(stderr, "POST edits: %d %s\n", rp.status, (char *)rp.body);
	assert_int_equal(rp.status, 200);
	free(rp.body);
}

/* Objects of o (n) within r mm of (x, z). */
static size_t near(const struct obj *o, size_t n, int64_t x, int64_t z, int64_t r)
{
	size_t k, c = 0;

	for (k = 0; k < n; k++) {
		double dx = (double)(o[k].x_mm - x), dz = (double)(o[k].z_mm - z);

		c += dx * dx + dz * dz < (double)r * (double)r;
	}
	return c;
}

static void test_http_tiles_sinking_the_ground_removes_objects_and_changes_the_etag(void **state)
{
	char path[128], json[512], e0[64], e1[64], eb0[64], eb1[64];
	struct harness_resp before, after, bb, ba;
	struct obj *o0, *o1;
	size_t n0, n1;
	int64_t x, z;

	(void)state;
	objects_path(path, sizeof(path), "sink", 0, 0);
	get_ok(path, "", &before);
	get_ok(path, BINARY, &bb);
	n0 = parse_json(&before, 0, 0, &o0);
	assert_true(n0 > 0);
	x = o0[n0 / 2].x_mm;
	z = o0[n0 / 2].z_mm;
	assert_true(near(o0, n0, x, z, 20000) > 0);
	/* set, linear: within 20 m of the centre w >= 0.5, so the ground ends
	 * at least halfway to -2000 m: under the sea */
	snprintf(json, sizeof(json), "{\"edits\":[{\"op\":\"set\",\"x\":%.3f,\"z\":%.3f,"
		 "\"radius\":40,\"height\":-2000,\"falloff\":\"linear\"}]}",
		 (double)x / 1000, (double)z / 1000);
	post_edit("sink", json);
	get_ok(path, "", &after);
	get_ok(path, BINARY, &ba);
	n1 = parse_json(&after, 0, 0, &o1);
	printf("sinking 40 m at (%.3f, %.3f): %zu objects within 20 m before, %zu after;"
	       " %zu -> %zu in the chunk\n", (double)x / 1000, (double)z / 1000,
	       near(o0, n0, x, z, 20000), near(o1, n1, x, z, 20000), n0, n1);
	assert_int_equal(near(o1, n1, x, z, 20000), 0);
	assert_true(n1 < n0);
	assert_non_null(strstr((char *)after.body, "\"edit_seq\":1,"));
	assert_string_not_equal(harness_header(&before, "ETag", e0, sizeof(e0)),
				harness_header(&after, "ETag", e1, sizeof(e1)));
	assert_string_not_equal(harness_header(&bb, "ETag", eb0, sizeof(eb0)),
				harness_header(&ba, "ETag", eb1, sizeof(eb1)));
	free(o0);
	free(o1);
	free(before.body);
	free(after.body);
	free(bb.body);
	free(ba.body);
}

/* ---- batches ------------------------------------------------------------------------ */

static void batch_path(char *buf, size_t cap, const char *seed, int lod, int cx0, int cz0,
		       int cx1, int cz1, const char *extra)
{
	snprintf(buf, cap, "/v1/worlds/%s/chunks/%d?cx0=%d&cz0=%d&cx1=%d&cz1=%d%s", seed,
		 lod, cx0, cz0, cx1, cz1, extra);
}

/* Check that bundle rp holds exactly the single tiles of the rectangle,
 * byte for byte, in row order; returns the sum of the single tiles' zstd
 * sizes. */
static size_t check_members(const struct harness_resp *rp, const char *seed, int lod, int cx0,
			    int cz0, int cx1, int cz1, const char *query)
{
	struct api_bundle_entry ent[64];
	size_t n, k = 0, zsum = 0;
	char path[256];

	assert_int_equal(api_bundle_parse((const uint8_t *)rp->body, rp->body_len, ent, 64, &n), 0);
	assert_int_equal(n, (size_t)((cx1 - cx0 + 1) * (cz1 - cz0 + 1)));
	for (int cz = cz0; cz <= cz1; cz++)
		for (int cx = cx0; cx <= cx1; cx++, k++) {
			struct harness_resp one, z;

			assert_int_equal(ent[k].cx, cx);
			assert_int_equal(ent[k].cz, cz);
			snprintf(path, sizeof(path), "/v1/worlds/%s/chunks/%d/%d/%d%s", seed, lod,
				 cx, cz, query);
			get_ok(path, "", &one);
			assert_int_equal(ent[k].len, one.body_len);
			assert_memory_equal(ent[k].tile, one.body, one.body_len);
			get_ok(path, "Accept-Encoding: zstd\r\n", &z);
			zsum += z.body_len;
			free(one.body);
			free(z.body);
		}
	return zsum;
}

/* The identity bundle of path and its zstd form, checked to agree. */
static void get_bundle(const char *path, struct harness_resp *id, struct harness_resp *z)
{
	char ct[64], ce[32], e1[64], e2[64], ez[72];
	uint8_t *raw;
	size_t got;

	get_ok(path, "", id);
	get_ok(path, "Accept-Encoding: zstd\r\n", z);
	assert_string_equal(harness_header(id, "Content-Type", ct, sizeof(ct)), BUNDLE_TYPE);
	assert_null(harness_header(id, "Content-Encoding", ce, sizeof(ce)));
	assert_string_equal(harness_header(z, "Content-Encoding", ce, sizeof(ce)), "zstd");
	raw = malloc(id->body_len + 1);
	got = ZSTD_decompress(raw, id->body_len + 1, z->body, z->body_len);
	assert_int_equal(got, id->body_len);
	assert_memory_equal(raw, id->body, id->body_len);
	free(raw);
	assert_int_equal(strlen(harness_header(id, "ETag", e1, sizeof(e1))), 18);
	ztag(e1, ez, sizeof(ez));
	assert_string_equal(harness_header(z, "ETag", e2, sizeof(e2)), ez);
}

static void test_http_tiles_batch_members_equal_single_tiles_and_compress_better(void **state)
{
	static const struct {
		int lod, cx0, cz0, cx1, cz1;
		const char *query;
	} cases[] = {
		{ 2, -4, 3, 3, 10, "" },            /* 8 x 8 = 64 tiles */
		{ 4, 0, 0, 7, 7, "" },
		{ 6, 0, 0, 7, 7, "" },
		{ 3, -1, -1, 1, 0, "&layers=height,material" },
	};
	char path[256], q[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct harness_resp id, z;
		size_t zsum;

		batch_path(path, sizeof(path), "bundles", cases[i].lod, cases[i].cx0,
			   cases[i].cz0, cases[i].cx1, cases[i].cz1, cases[i].query);
		get_bundle(path, &id, &z);
		snprintf(q, sizeof(q), "%s%s", cases[i].query[0] ? "?" : "",
			 cases[i].query[0] ? cases[i].query + 1 : "");
		zsum = check_members(&id, "bundles", cases[i].lod, cases[i].cx0, cases[i].cz0,
				     cases[i].cx1, cases[i].cz1, q);
		printf("batch lod %d, %d x %d tiles%s%s: identity %zu bytes; zstd bundle %zu"
		       " bytes vs %zu bytes of single zstd tiles: %.1f%% smaller\n", cases[i].lod,
		       cases[i].cx1 - cases[i].cx0 + 1, cases[i].cz1 - cases[i].cz0 + 1,
		       q[0] ? ", " : "", q[0] ? q + 1 : "", id.body_len, z.body_len, zsum,
		       100.0 * (1.0 - (double)z.body_len / (double)zsum));
		/* coded LOD-2 tiles leave zstd nothing to find, so one frame
		 * saves at most the frames' overhead there; the small tiles
		 * of far LODs still share their headers and tables */
		if (cases[i].lod <= 2)
			assert_true(z.body_len <= zsum + zsum / 100);
		else
			assert_true(z.body_len < zsum);
		free(id.body);
		free(z.body);
	}
}

static void test_http_tiles_batch_rejects_bad_rectangles(void **state)
{
	static const char *const bad[] = {
		"/v1/worlds/42/chunks/2?cx0=0&cz0=0&cx1=12&cz1=4",   /* 65 tiles */
		"/v1/worlds/42/chunks/2?cx0=0&cz0=0&cx1=64&cz1=0",   /* 65 in a row */
		"/v1/worlds/42/chunks/2?cx0=-2147483648&cz0=0&cx1=2147483647&cz1=0",
		"/v1/worlds/42/chunks/2?cx0=3&cz0=0&cx1=2&cz1=0",    /* empty */
		"/v1/worlds/42/chunks/2?cx0=0&cz0=0&cx1=1",          /* cz1 missing */
		"/v1/worlds/42/chunks/2?cx0=0&cz0=0&cx1=1&cz1=x",
		"/v1/worlds/42/chunks/9?cx0=0&cz0=0&cx1=1&cz1=1",    /* lod */
	};
	struct harness_resp rp;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		get(bad[i], "", &rp);
		assert_int_equal(rp.status, 400);
		assert_non_null(strstr((char *)rp.body, "\"detail\":"));
		if (i < 3)
			assert_non_null(strstr((char *)rp.body, "at most 64 tiles"));
		free(rp.body);
	}
	get("/v1/worlds/42/chunks/2?cx0=0&cz0=0&cx1=7&cz1=7&gen=nope", "", &rp);
	assert_int_equal(rp.status, 404);
	free(rp.body);
}

static void test_http_tiles_a_cold_batch_generates_each_tile_once(void **state)
{
	const char *path = "/v1/worlds/cold-batch/chunks/1?cx0=10&cz0=20&cx1=13&cz1=23";
	double g0 = generations();
	struct harness_resp rp;
	int fd[7], i;
	char etag0[64] = "", etag[64];

	(void)state;
	/* three batches and four single tiles of the rectangle at once */
	for (i = 0; i < 3; i++)
		fd[i] = send_get(&main_srv, path, "Accept-Encoding: zstd\r\n");
	fd[3] = send_get(&main_srv, "/v1/worlds/cold-batch/chunks/1/10/20", "");
	fd[4] = send_get(&main_srv, "/v1/worlds/cold-batch/chunks/1/13/23", "");
	fd[5] = send_get(&main_srv, "/v1/worlds/cold-batch/chunks/1/11/22", "");
	fd[6] = send_get(&main_srv, "/v1/worlds/cold-batch/chunks/1/12/21", "");
	for (i = 0; i < 7; i++) {
		read_resp(fd[i], &rp);
		close(fd[i]);
		assert_int_equal(rp.status, 200);
		if (i < 3) {
			harness_header(&rp, "ETag", etag, sizeof(etag));
			if (!i)
				strcpy(etag0, etag);
			assert_string_equal(etag, etag0);
		}
		free(rp.body);
	}
	printf("cold batch of 16 tiles, asked 3 times and 4 tiles alone: %g generations\n",
	       generations() - g0);
	assert_true(generations() - g0 == 16.0);
}

static void test_http_tiles_a_batch_mixes_cached_and_uncached_tiles(void **state)
{
	char path[256], xc[16], etag[64], e2[64], inm[96];
	struct harness_resp a, b, c, id, z;
	double g0;

	(void)state;
	get_ok("/v1/worlds/mixed/chunks/2/0/0", "", &a);
	get_ok("/v1/worlds/mixed/chunks/2/3/1", "", &b);
	get_ok("/v1/worlds/mixed/chunks/2/1/0?layers=height,material", "", &c);
	free(a.body);
	free(b.body);
	free(c.body);
	g0 = generations();
	batch_path(path, sizeof(path), "mixed", 2, 0, 0, 3, 1, ""); /* 8 tiles */
	get_ok(path, "", &a);
	assert_string_equal(harness_header(&a, "X-Cache", xc, sizeof(xc)), "miss");
	assert_true(generations() - g0 == 6.0); /* 2 of the 8 were cached */
	check_members(&a, "mixed", 2, 0, 0, 3, 1, "");
	g0 = generations();
	get_bundle(path, &id, &z);
	assert_true(generations() - g0 == 0.0);
	assert_string_equal(harness_header(&id, "X-Cache", xc, sizeof(xc)), "hit");
	assert_int_equal(id.body_len, a.body_len);
	assert_memory_equal(id.body, a.body, a.body_len);
	harness_header(&id, "ETag", etag, sizeof(etag));
	assert_string_equal(harness_header(&a, "ETag", e2, sizeof(e2)), etag);
	snprintf(inm, sizeof(inm), "If-None-Match: %s\r\n", etag);
	get(path, inm, &b);
	assert_int_equal(b.status, 304);
	assert_int_equal(b.body_len, 0);
	free(a.body);
	free(b.body);
	free(id.body);
	free(z.body);
}

/* ---- eroded tiles -------------------------------------------------------------------- */

static void test_http_tiles_eroded_tile_is_the_same_cold_and_after_its_neighbours(void **state)
{
	const char *path = "/v1/worlds/7/chunks/0/2/-3?gen=eroded";
	char p[128];
	struct harness_resp cold, warm;
	double hits;

	(void)state;
	get_ok(path, "", &cold); /* server A: nothing eroded cached yet */
	assert_int_equal(harness_start(&second_srv, "--workers", "2", NULL), 0);
	for (int dz = -1; dz <= 1; dz++)
		for (int dx = -1; dx <= 1; dx++) {
			struct harness_resp rp;

			if (!dx && !dz)
				continue;
			snprintf(p, sizeof(p), "/v1/worlds/7/chunks/0/%d/%d?gen=eroded", 2 + dx,
				 -3 + dz);
			get_on(&second_srv, p, "", &rp);
			assert_int_equal(rp.status, 200);
			free(rp.body);
		}
	hits = metric_on(&second_srv, "terrain_region_cache_hits_total");
	get_on(&second_srv, path, "", &warm);
	assert_int_equal(warm.status, 200);
	printf("eroded 0/2/-3: %zu bytes cold on A; on B after 8 neighbours: %g region"
	       " misses, %g hits before it, %g after\n", cold.body_len,
	       metric_on(&second_srv, "terrain_region_cache_misses_total"), hits,
	       metric_on(&second_srv, "terrain_region_cache_hits_total"));
	assert_true(metric_on(&second_srv, "terrain_region_cache_hits_total") > hits);
	assert_int_equal(warm.body_len, cold.body_len);
	assert_memory_equal(warm.body, cold.body, cold.body_len);
	free(cold.body);
	free(warm.body);
	assert_int_equal(harness_end(&second_srv), 0);
}

/*
 * Cache hits go out with one writev() straight from the cached bytes. A
 * client with a tiny receive window pipelines 200 requests for a LOD-0
 * tile (6.6 MB of answers, more than the largest loopback send buffer, 4
 * MiB by default) and reads only later, so the socket fills mid-body and
 * the rest of the answers go through the queued-write path while the
 * entry must stay alive: every body must arrive whole and in order.
 */
static void test_http_tiles_pipelined_hits_survive_a_full_socket(void **state)
{
	const char *path = "/v1/worlds/fullsocket/chunks/0/2/-3";
	const int n = 200;
	struct harness_resp want;
	size_t cap = 1 << 24, len = 0, off = 0;
	uint8_t *buf = malloc(cap);
	char req[256];
	int fd, i;

	(void)state;
	assert_non_null(buf);
	get_ok(path, "Accept-Encoding: zstd\r\n", &want);
	fd = harness_connect(main_srv.port, 4096);
	for (i = 0; i < n; i++) {
		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\nAccept-Encoding: zstd\r\n"
			 "%s\r\n", path, i == n - 1 ? "Connection: close\r\n" : "");
		harness_send_str(fd, req);
	}
	harness_sleep_ms(300); /* let the server fill the socket and queue the rest */
	for (;;) {
		ssize_t got = recv(fd, buf + len, cap - len, 0);

		assert_true(got >= 0);
		if (got == 0)
			break;
		len += (size_t)got;
		assert_true(len < cap);
	}
	close(fd);
	for (i = 0; i < n; i++) {
		const char *end, *cl;
		size_t body;

		buf[len] = '\0';
		assert_true(off < len);
		assert_int_equal(memcmp(buf + off, "HTTP/1.1 200 ", 13), 0);
		end = strstr((char *)buf + off, "\r\n\r\n");
		cl = strstr((char *)buf + off, "\r\nContent-Length: ");
		assert_non_null(end);
		assert_non_null(cl);
		assert_true(cl < end);
		body = strtoul(cl + 18, NULL, 10);
		assert_int_equal(body, want.body_len);
		off = (size_t)(end + 4 - (char *)buf);
		assert_true(off + body <= len);
		assert_memory_equal(buf + off, want.body, body);
		off += body;
	}
	assert_int_equal(off, len);
	free(want.body);
	free(buf);
}

static int setup(void **state)
{
	(void)state;
	alarm(900);
	return harness_start(&main_srv, "--workers", "4", NULL);
}

static int teardown(void **state)
{
	(void)state;
	harness_end(&second_srv); /* when a test failed before stopping it */
	return harness_end(&main_srv) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_tiles_material_layer_is_v2_with_the_same_heights),
		cmocka_unit_test(test_http_tiles_materials_follow_an_edit_just_beside_the_chunk),
		cmocka_unit_test(test_http_tiles_objects_json_and_binary_agree_and_repeat),
		cmocka_unit_test(test_http_tiles_objects_of_a_2x2_block_have_no_duplicates),
		cmocka_unit_test(test_http_tiles_sinking_the_ground_removes_objects_and_changes_the_etag),
		cmocka_unit_test(test_http_tiles_batch_members_equal_single_tiles_and_compress_better),
		cmocka_unit_test(test_http_tiles_batch_rejects_bad_rectangles),
		cmocka_unit_test(test_http_tiles_a_cold_batch_generates_each_tile_once),
		cmocka_unit_test(test_http_tiles_a_batch_mixes_cached_and_uncached_tiles),
		cmocka_unit_test(test_http_tiles_eroded_tile_is_the_same_cold_and_after_its_neighbours),
		cmocka_unit_test(test_http_tiles_pipelined_hits_survive_a_full_socket),
	};

	signal(SIGPIPE, SIG_IGN);
	harness_io_timeout_s = IO_TIMEOUT_S;
	return cmocka_run_group_tests(tests, setup, teardown);
}
