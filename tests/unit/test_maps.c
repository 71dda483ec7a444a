/*
 * test_maps.c - the web map routes end to end over HTTP (server/tiles/maps.c).
 *
 * Starts $BUILD/terrain-server serve on a free loopback port as a child
 * process and checks: the TileJSON documents (fields MapLibre reads, an
 * absolute template from Host or Forwarded, the origin kept, ETag and
 * 304); Terrarium pixels, decoded with libpng, equal the heights of the
 * binary tiles (decoded with tile.h) within 1/512 m at zoom 17, 14 and 9,
 * across a tile seam too; the HTTP manners of tiles (ETag, 304,
 * Cache-Control, CORS, X-Cache, HEAD, OPTIONS, JSON errors); map tiles
 * follow an edit at every zoom where it shows, and only the tiles it
 * touches change; an origin moves the window onto the same cached tiles.
 * No wall-clock asserts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <png.h>
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

#include "../client-sample/api.h"
#include "tile.h"

#include "harness.h"

#define IO_TIMEOUT_S 120
#define HALF_STEP (1.0 / 512 + 1e-9)

static struct harness_server srv;

/* ---- the server process ------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	alarm(600);
	return harness_start(&srv, "--workers", "2", "--edit-rate", "0", "--edit-area", "0", NULL);
}

static int teardown(void **state)
{
	(void)state;
	return harness_end(&srv) == 0 ? 0 : -1;
}

/* ---- requests --------------------------------------------------------------------- */

/* Send raw (a whole request with Connection: close) and read the answer. */
static void exchange(const char *raw, struct harness_resp *rp)
{
	harness_exchange(srv.port, raw, rp);
}

/* method path with extra header lines (each ending in \r\n). */
static void request(const char *method, const char *path, const char *headers,
		    struct harness_resp *rp)
{
	char raw[4096];

	snprintf(raw, sizeof(raw), "%s %s HTTP/1.1\r\nHost: t\r\n%sConnection: close\r\n\r\n",
		 method, path, headers);
	exchange(raw, rp);
}

static void get(const char *path, const char *headers, struct harness_resp *rp)
{
	request("GET", path, headers, rp);
}

static void get_ok(const char *path, struct harness_resp *rp)
{
	get(path, "", rp);
	if (rp->status != 200)
		fprintf(stderr, "GET %s: %d %s\n", path, rp->status, (char *)rp->body);
	assert_int_equal(rp->status, 200);
}

static void post_edit(const char *seed, const char *json)
{
	char raw[2048];
	struct harness_resp rp;

	snprintf(raw, sizeof(raw), "POST /v1/worlds/%s/edits HTTP/1.1\r\nHost: localhost\r\n"
		 "Content-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n%s", seed, strlen(json), json);
	exchange(raw, &rp);
	if (rp.status != 200)
		fprintf(stderr, "POST edits: %d %s\n", rp.status, (char *)rp.body);
	assert_int_equal(rp.status, 200);
	free(rp.body);
}

/* PNG png (len bytes) holds only IHDR, IDAT and IEND chunks, each whole:
 * no gAMA, sRGB, cHRM or iCCP that would make a reader convert the
 * values (Godot converts by gAMA; heights are data, not colours). */
static void assert_plain_png(const uint8_t *png, size_t len)
{
	static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	size_t at = 8;
	int idat = 0, end = 0;

	assert_true(len > 8 && !memcmp(png, sig, 8));
	while (at + 12 <= len && !end) {
		uint32_t n = (uint32_t)png[at] << 24 | (uint32_t)png[at + 1] << 16 |
			     (uint32_t)png[at + 2] << 8 | png[at + 3];
		const uint8_t *type = png + at + 4;

		if (!memcmp(type, "IDAT", 4))
			idat++;
		else if (!memcmp(type, "IEND", 4))
			end = 1;
		else if (memcmp(type, "IHDR", 4))
			fail_msg("chunk %.4s in a map tile", (const char *)type);
		assert_true(n <= len - at - 12);
		at += 12 + (size_t)n;
	}
	assert_true(end && idat > 0 && at == len);
}

/* The heights (metres, 256 x 256) of a Terrarium map tile, decoded with
 * libpng; its ETag into etag. */
static double *get_terrarium(const char *path, char *etag, size_t cap)
{
	png_image img = { .version = PNG_IMAGE_VERSION };
	struct harness_resp rp;
	uint8_t *px;
	double *h;
	size_t k;
	char type[64];

	get_ok(path, &rp);
	assert_string_equal(harness_header(&rp, "Content-Type", type, sizeof(type)), "image/png");
	if (etag)
		assert_non_null(harness_header(&rp, "ETag", etag, cap));
	assert_plain_png((const uint8_t *)rp.body, rp.body_len);
	assert_true(png_image_begin_read_from_memory(&img, rp.body, rp.body_len));
	assert_int_equal(img.width, 256);
	assert_int_equal(img.height, 256);
	assert_int_equal(img.format & PNG_FORMAT_FLAG_COLOR, PNG_FORMAT_FLAG_COLOR);
	img.format = PNG_FORMAT_RGB;
	assert_non_null(px = malloc(PNG_IMAGE_SIZE(img)));
	assert_true(png_image_finish_read(&img, NULL, px, 0, NULL));
	assert_non_null(h = malloc(256 * 256 * sizeof(*h)));
	for (k = 0; k < 256 * 256; k++)
		h[k] = px[3 * k] * 256.0 + px[3 * k + 1] + px[3 * k + 2] / 256.0 - 32768.0;
	free(px);
	free(rp.body);
	return h;
}

static void get_tile(const char *path, struct tile *t)
{
	struct harness_resp rp;

	get_ok(path, &rp);
	assert_int_equal(tile_decode((const uint8_t *)rp.body, rp.body_len, t), 0);
	free(rp.body);
}

static cJSON *get_json(const char *path, const char *headers, int status)
{
	struct harness_resp rp;
	cJSON *o;

	get(path, headers, &rp);
	if (rp.status != status)
		fprintf(stderr, "GET %s: %d %s\n", path, rp.status, (char *)rp.body);
	assert_int_equal(rp.status, status);
	assert_non_null(o = cJSON_Parse((char *)rp.body));
	free(rp.body);
	return o;
}

static const char *jstr(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static double jnum(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

/* ---- TileJSON ------------------------------------------------------------------------ */

static void test_maps_tilejson_describes_the_pyramid(void **state)
{
	cJSON *o, *e;
	struct harness_resp rp;
	char etag[64], v[256], hdr[128];

	(void)state;
	o = get_json("/v1/worlds/42/maps/terrarium", "", 200);
	assert_string_equal(jstr(o, "tilejson"), "3.0.0");
	assert_string_equal(jstr(o, "scheme"), "xyz");
	assert_string_equal(jstr(o, "encoding"), "terrarium");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "tiles"), 0)->valuestring,
			    "http://t/v1/worlds/42/maps/terrarium/{z}/{x}/{y}.png?gen=default");
	assert_true(jnum(o, "minzoom") == 9 && jnum(o, "maxzoom") == 17 &&
		    jnum(o, "tileSize") == 256);
	/* required by TileJSON 3.0.0's schema; raster tiles have no layers */
	e = cJSON_GetObjectItem(o, "vector_layers");
	assert_true(cJSON_IsArray(e) && cJSON_GetArraySize(e) == 0);
	assert_string_equal(jstr(cJSON_GetObjectItem(o, "terrain"), "fingerprint"),
			    "7542dc91da703f72");
	cJSON_Delete(o);
	/* .json names the same; shaded has no encoding; eroded stops at 15 */
	o = get_json("/v1/worlds/my-world/maps/shaded.json?gen=eroded&origin=3,-4", "", 200);
	assert_null(cJSON_GetObjectItem(o, "encoding"));
	assert_true(jnum(o, "minzoom") == 15);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "tiles"), 0)->valuestring,
			    "http://t/v1/worlds/my-world/maps/shaded/{z}/{x}/{y}.png?gen=eroded"
			    "&origin=3,-4");
	e = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "terrain"), "origin_m");
	assert_true(cJSON_GetArrayItem(e, 0)->valuedouble == 768 &&
		    cJSON_GetArrayItem(e, 1)->valuedouble == -1024);
	cJSON_Delete(o);
	/* behind a proxy: Forwarded names the scheme and host */
	o = get_json("/v1/worlds/42/maps/terrarium",
		     "Forwarded: for=10.0.0.1;proto=https;host=\"maps.example:8443\"\r\n", 200);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "tiles"), 0)->valuestring,
			    "https://maps.example:8443/v1/worlds/42/maps/terrarium/{z}/{x}/{y}.png"
			    "?gen=default");
	cJSON_Delete(o);
	/* validators and CORS */
	get("/v1/worlds/42/maps/terrarium", "", &rp);
	assert_non_null(harness_header(&rp, "ETag", etag, sizeof(etag)));
	assert_string_equal(harness_header(&rp, "Access-Control-Allow-Origin", v, sizeof(v)), "*");
	assert_string_equal(harness_header(&rp, "Content-Type", v, sizeof(v)), "application/json");
	free(rp.body);
	snprintf(hdr, sizeof(hdr), "If-None-Match: %s\r\n", etag);
	get("/v1/worlds/42/maps/terrarium", hdr, &rp);
	assert_int_equal(rp.status, 304);
	free(rp.body);
	/* errors are JSON */
	o = get_json("/v1/worlds/42/maps/contours", "", 400);
	assert_string_equal(jstr(o, "error"), "bad_request");
	cJSON_Delete(o);
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium?gen=nope", "", 404));
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium?origin=1", "", 400));
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium", "Forwarded: host=\"a b\"\r\n", 400));
}

/* ---- pixels against the binary tiles ------------------------------------------------------ */

/* Compare map pixels (mx, mz) .. with chunk tile t's samples: sample
 * (i, j) of t is pixel (px + i, pz + j) for i, j in 0..n-1 within the
 * tile. Returns the samples compared. */
static size_t compare(const double *map, int px, int pz, const struct tile *t, uint32_t n)
{
	size_t c = 0;
	uint32_t i, j;

	for (j = 0; j < n; j++)
		for (i = 0; i < n; i++) {
			int x = px + (int)i, z = pz + (int)j;
			double want = tile_height_m(t, i, j), got;

			if (x < 0 || z < 0 || x >= 256 || z >= 256)
				continue;
			got = map[z * 256 + x];
			if (fabs(got - want) > HALF_STEP)
				fail_msg("pixel (%d, %d): %.6f m, tile (%d, %d) sample (%u, %u): %.6f m",
					 x, z, got, t->cx, t->cz, i, j, want);
			c++;
		}
	return c;
}

static void test_maps_terrarium_pixels_equal_the_binary_tiles(void **state)
{
	struct api_bundle_entry ent[64];
	struct harness_resp rp;
	struct tile t;
	double *m, *east;
	size_t n, k, c = 0;
	uint32_t j;

	(void)state;
	/* zoom 17: chunk (3, -2) at LOD 0, and its east neighbour across the seam */
	m = get_terrarium("/v1/worlds/42/maps/terrarium/17/65539/65534.png", NULL, 0);
	east = get_terrarium("/v1/worlds/42/maps/terrarium/17/65540/65534.png", NULL, 0);
	get_tile("/v1/worlds/42/chunks/0/3/-2", &t);
	assert_int_equal(compare(m, 0, 0, &t, 256), 256 * 256);
	for (j = 0; j < 256; j++) /* the tile's sample 256 is the next map tile's pixel 0 */
		assert_true(fabs(east[j * 256] - tile_height_m(&t, 256, j)) <= HALF_STEP);
	tile_release(&t);
	free(m);
	free(east);
	/* zoom 14: 8 x 8 chunks at LOD 3, one bundle of their tiles */
	m = get_terrarium("/v1/worlds/42/maps/terrarium/14/8192/8191.png", NULL, 0);
	get_ok("/v1/worlds/42/chunks/3?cx0=0&cz0=-8&cx1=7&cz1=-1", &rp);
	assert_int_equal(api_bundle_parse((const uint8_t *)rp.body, rp.body_len, ent, 64, &n), 0);
	assert_int_equal(n, 64);
	for (k = 0; k < n; k++) {
		assert_int_equal(tile_decode(ent[k].tile, ent[k].len, &t), 0);
		c += compare(m, 32 * t.cx, 32 * (t.cz + 8), &t, 32);
		tile_release(&t);
	}
	assert_int_equal(c, 256 * 256);
	free(rp.body);
	free(m);
	/* zoom 9, 256 m per pixel: the first 8 x 8 chunks' corner samples */
	m = get_terrarium("/v1/worlds/42/maps/terrarium/9/255/256.png?gen=alpine", NULL, 0);
	get_ok("/v1/worlds/42/chunks/8?cx0=-256&cz0=0&cx1=-249&cz1=7&gen=alpine", &rp);
	assert_int_equal(api_bundle_parse((const uint8_t *)rp.body, rp.body_len, ent, 64, &n), 0);
	for (k = 0, c = 0; k < n; k++) {
		assert_int_equal(tile_decode(ent[k].tile, ent[k].len, &t), 0);
		c += compare(m, t.cx + 256, t.cz, &t, 1);
		tile_release(&t);
	}
	assert_int_equal(c, 64);
	free(rp.body);
	free(m);
}

/* ---- HTTP manners ----------------------------------------------------------------------- */

static void test_maps_tiles_have_the_http_manners_of_tiles(void **state)
{
	const char *path = "/v1/worlds/manners/maps/shaded/16/32768/32767.png";
	struct harness_resp rp, again;
	char etag[64], v[256], hdr[128], len[32];
	png_image img = { .version = PNG_IMAGE_VERSION };
	cJSON *o;

	(void)state;
	get_ok(path, &rp);
	assert_non_null(harness_header(&rp, "ETag", etag, sizeof(etag)));
	assert_true(etag[0] == '"' && strlen(etag) == 18); /* strong, 16 hex digits */
	assert_string_equal(harness_header(&rp, "Cache-Control", v, sizeof(v)), "public, max-age=60");
	assert_string_equal(harness_header(&rp, "Access-Control-Allow-Origin", v, sizeof(v)), "*");
	assert_string_equal(harness_header(&rp, "X-Cache", v, sizeof(v)), "miss");
	assert_non_null(harness_header(&rp, "Content-Length", len, sizeof(len)));
	assert_plain_png((const uint8_t *)rp.body, rp.body_len);
	assert_true(png_image_begin_read_from_memory(&img, rp.body, rp.body_len));
	assert_true(img.width == 256 && img.height == 256);
	png_image_free(&img);
	get_ok(path, &again);
	assert_string_equal(harness_header(&again, "X-Cache", v, sizeof(v)), "hit");
	assert_int_equal(again.body_len, rp.body_len);
	assert_memory_equal(again.body, rp.body, rp.body_len);
	free(again.body);
	free(rp.body);
	snprintf(hdr, sizeof(hdr), "If-None-Match: W/\"0000000000000000\", %s\r\n", etag);
	get(path, hdr, &rp);
	assert_int_equal(rp.status, 304);
	assert_int_equal(rp.body_len, 0);
	assert_string_equal(harness_header(&rp, "ETag", v, sizeof(v)), etag);
	free(rp.body);
	request("HEAD", path, "", &rp);
	assert_int_equal(rp.status, 200);
	assert_string_equal(harness_header(&rp, "Content-Length", v, sizeof(v)), len);
	assert_int_equal(rp.body_len, 0);
	free(rp.body);
	request("OPTIONS", path, "Origin: https://game.example\r\n", &rp);
	assert_int_equal(rp.status, 204);
	assert_non_null(strstr(rp.head, "GET, HEAD, OPTIONS"));
	free(rp.body);
	request("POST", path, "Content-Length: 0\r\n", &rp);
	assert_int_equal(rp.status, 405);
	free(rp.body);
	/* errors are JSON */
	o = get_json("/v1/worlds/42/maps/terrarium/8/128/128.png", "", 404); /* below minzoom */
	assert_string_equal(jstr(o, "error"), "not_found");
	cJSON_Delete(o);
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium/18/0/0.png", "", 404));
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium/10/1024/0.png", "", 404));
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium/14/8192/8192.png?gen=eroded", "",
			      404));
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium/12/-1/0.png", "", 400));
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium/12/0/0.jpg", "", 400));
	cJSON_Delete(get_json("/v1/worlds/42/maps/relief/12/0/0.png", "", 400));
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium/12/0/0.png?origin=a,b", "", 400));
	cJSON_Delete(get_json("/v1/worlds/42/maps/terrarium/12/0/0.png?gen=nope", "", 404));
	cJSON_Delete(get_json("/v1/worlds/4%2B2/maps/terrarium/12/0/0.png", "", 400));
}

/* ---- edits ------------------------------------------------------------------------------ */

static void test_maps_tiles_follow_an_edit(void **state)
{
	/* chunk (10, 10); the edit raises its centre (2688, 2688) by 5 m */
	const char *z17 = "/v1/worlds/edited/maps/terrarium/17/65546/65546.png";
	const char *z12 = "/v1/worlds/edited/maps/terrarium/12/2048/2048.png";
	const char *away = "/v1/worlds/edited/maps/terrarium/17/65556/65546.png";
	const char *shaded = "/v1/worlds/edited/maps/shaded/17/65546/65546.png";
	char e17[64], e12[64], ea[64], es[64], f17[64], f12[64], fa[64], v[64];
	double *b17, *b12, *a17, *a12, *x;
	struct harness_resp rp;
	struct tile t;

	(void)state;
	b17 = get_terrarium(z17, e17, sizeof(e17));
	b12 = get_terrarium(z12, e12, sizeof(e12));
	x = get_terrarium(away, ea, sizeof(ea));
	free(x);
	get_ok(shaded, &rp);
	harness_header(&rp, "ETag", es, sizeof(es));
	free(rp.body);
	post_edit("edited", "{\"edits\":[{\"op\":\"raise\",\"x\":2688,\"z\":2688,"
		  "\"radius\":30,\"strength\":5}]}");
	a17 = get_terrarium(z17, f17, sizeof(f17));
	a12 = get_terrarium(z12, f12, sizeof(f12));
	x = get_terrarium(away, fa, sizeof(fa));
	free(x);
	assert_string_not_equal(e17, f17);
	assert_string_not_equal(e12, f12);
	assert_string_equal(ea, fa);    /* a tile the edit does not touch */
	/* the centre sample rose by 5 m at both zooms (pixel 128 at zoom 17;
	 * at zoom 12, 32 m per pixel, the chunk starts at pixel 80) */
	assert_true(fabs(a17[128 * 256 + 128] - b17[128 * 256 + 128] - 5.0) <= 2 * HALF_STEP);
	assert_true(fabs(a12[84 * 256 + 84] - b12[84 * 256 + 84] - 5.0) <= 2 * HALF_STEP);
	/* and equals the edited binary tile everywhere */
	get_tile("/v1/worlds/edited/chunks/0/10/10", &t);
	assert_true(t.edit_seq > 0);
	assert_int_equal(compare(a17, 0, 0, &t, 256), 256 * 256);
	tile_release(&t);
	get_tile("/v1/worlds/edited/chunks/5/10/10", &t);
	assert_int_equal(compare(a12, 80, 80, &t, 8), 64);
	tile_release(&t);
	get_ok(shaded, &rp);
	assert_string_not_equal(harness_header(&rp, "ETag", v, sizeof(v)), es);
	free(rp.body);
	free(b17);
	free(b12);
	free(a17);
	free(a12);
}

/* A chunk whose edits are baked (--bake-after 8: the server's default)
 * draws from its delta: the map tile still equals the binary tile. */
static void test_maps_tiles_of_a_baked_chunk_equal_the_binary_tiles(void **state)
{
	const char *z17 = "/v1/worlds/baked/maps/terrarium/17/65566/65566.png";
	char body[4096], etag[64];
	size_t n = 0;
	struct harness_resp rp;
	struct tile t;
	double *px;
	int i, k;

	(void)state;
	n += (size_t)snprintf(body + n, sizeof(body) - n, "{\"edits\":[");
	for (k = 0; k < 12; k++)
		n += (size_t)snprintf(body + n, sizeof(body) - n,
				      "%s{\"op\":\"raise\",\"x\":%d,\"z\":%d,\"radius\":40,"
				      "\"strength\":2}", k ? "," : "", 7700 + 17 * k, 7720 + 13 * k);
	snprintf(body + n, sizeof(body) - n, "]}");
	post_edit("baked", body);
	for (i = 0; i < 300; i++) { /* until the bake is made */
		get_ok("/metrics", &rp);
		k = strstr((char *)rp.body, "\nterrain_bakes_total 0\n") == NULL;
		free(rp.body);
		if (k)
			break;
		usleep(20000);
	}
	assert_true(k);
	px = get_terrarium(z17, etag, sizeof(etag));
	get_tile("/v1/worlds/baked/chunks/0/30/30", &t);
	assert_true(t.edit_seq > 0);
	assert_int_equal(compare(px, 0, 0, &t, 256), 256 * 256);
	tile_release(&t);
	free(px);
}

static void test_maps_an_origin_moves_the_window(void **state)
{
	char e1[64], e2[64], v[64];
	double *a, *b;
	struct harness_resp rp;

	(void)state;
	a = get_terrarium("/v1/worlds/42/maps/terrarium/15/16385/16383.png", e1, sizeof(e1));
	/* origin chunk (4, -8): the window moves 1024 m east and 2048 m north, one
	 * and two tiles of zoom 15: the same tile, from the same cache entry */
	get_ok("/v1/worlds/42/maps/terrarium/15/16384/16385.png?origin=4,-8", &rp);
	assert_string_equal(harness_header(&rp, "X-Cache", v, sizeof(v)), "hit");
	free(rp.body);
	b = get_terrarium("/v1/worlds/42/maps/terrarium/15/16384/16385.png?origin=4,-8", e2,
			  sizeof(e2));
	assert_string_equal(e1, e2);
	assert_memory_equal(a, b, 256 * 256 * sizeof(double));
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_tilejson_describes_the_pyramid),
		cmocka_unit_test(test_maps_terrarium_pixels_equal_the_binary_tiles),
		cmocka_unit_test(test_maps_tiles_have_the_http_manners_of_tiles),
		cmocka_unit_test(test_maps_tiles_follow_an_edit),
		cmocka_unit_test(test_maps_tiles_of_a_baked_chunk_equal_the_binary_tiles),
		cmocka_unit_test(test_maps_an_origin_moves_the_window),
	};

	signal(SIGPIPE, SIG_IGN);
	harness_io_timeout_s = IO_TIMEOUT_S;
	return cmocka_run_group_tests(tests, setup, teardown);
}
