/*
 * test_client_view.c - tests of a player's view (client-sample/view.c)
 * against a tile server scripted in the same libuv loop: tiles made with
 * common/tile.c from a height function of world coordinates (so seams and
 * LOD nesting hold), optional bundles for the batch endpoint, ETags and
 * 304s, and injected faults (a bumped edge sample, a wrong header, a
 * flipped byte).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "../client-sample/api.h"
#include "../client-sample/hclient.h"
#include "../client-sample/view.h"
#include "err.h"
#include "tile.h"
#include "util.h"

#define SEED 77
#define FP 0x1234abcdull

enum fault { F_NONE, F_SEAM, F_HEADER, F_CORRUPT };

struct tsrv {
	uv_tcp_t server;
	int port;
	int batch;             /* serve bundles, else 404 to batches */
	enum fault fault;
	int32_t bad_cx, bad_cz; /* the chunk that gets the fault */
	unsigned singles, batches, bundled, not_modified, conditional;
};

struct sconn {
	uv_tcp_t tcp;
	struct tsrv *s;
	int closing;
	size_t len;
	char buf[65536];
};

struct wbuf {
	uv_write_t req;
	char data[];
};

/* ---- tiles ---- */

/* Height in quanta at world (x, z): any function of the point will do. */
static int32_t height(int64_t x, int64_t z)
{
	return (int32_t)((x * 37 + z * 23 + (x * z) % 1009) % 40000) - 5000;
}

static uint8_t *make_tile(const struct tsrv *s, int lod, int32_t cx,
			  int32_t cz, size_t *len)
{
	struct tile t;
	int bad = s->fault != F_NONE && cx == s->bad_cx && cz == s->bad_cz;
	uint8_t *buf;

	assert_int_equal(tile_init(&t, 8, lod), 0);
	t.fingerprint = FP;
	t.seed = SEED;
	t.cx = cx;
	t.cz = cz;
	t.lod = (uint8_t)lod;
	t.quantum_um = 10000;
	for (uint32_t j = 0; j < t.side; j++)
		for (uint32_t i = 0; i < t.side; i++)
			t.h[j * t.side + i] =
				height((int64_t)cx * 256 + ((int64_t)i << lod),
				       (int64_t)cz * 256 + ((int64_t)j << lod));
	if (bad && s->fault == F_SEAM)
		t.h[(t.side / 2) * t.side] += 3; /* west edge, middle */
	if (bad && s->fault == F_HEADER)
		t.cx++;
	buf = malloc(tile_encode_bound(&t));
	assert_int_equal(tile_encode(&t, buf, tile_encode_bound(&t), len), 0);
	if (bad && s->fault == F_CORRUPT)
		buf[100] ^= 0x10;
	tile_release(&t);
	return buf;
}

/* ---- the scripted server ---- */

static void sconn_closed(uv_handle_t *h)
{
	free(h->data);
}

static void written(uv_write_t *w, int status)
{
	(void)status;
	free(container_of(w, struct wbuf, req));
}

static void reply(struct sconn *c, int status, const char *extra,
		  const void *body, size_t n)
{
	char head[256];
	int hn = snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\n"
			  "Content-Length: %zu\r\nCache-Control: max-age=60\r\n"
			  "X-Cache: hit\r\n%s\r\n", status, n, extra);
	struct wbuf *w = malloc(sizeof(*w) + (size_t)hn + n);
	uv_buf_t b = uv_buf_init(w->data, (unsigned)((size_t)hn + n));

	memcpy(w->data, head, (size_t)hn);
	if (n)
		memcpy(w->data + hn, body, n);
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, written))
		free(w);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (uint8_t)(v >> (8 * k));
}

static void serve_batch(struct sconn *c, int lod, int32_t cx0, int32_t cz0,
			int32_t cx1, int32_t cz1)
{
	size_t n = (size_t)(cx1 - cx0 + 1) * (size_t)(cz1 - cz0 + 1), k = 0;
	size_t cap = API_BUNDLE_HEADER + n * API_BUNDLE_ENTRY, len = cap;
	uint8_t *b = calloc(1, cap);

	c->s->batches++;
	memcpy(b, API_BUNDLE_MAGIC, 4);
	b[4] = API_BUNDLE_VERSION;
	put32(b + 8, (uint32_t)n);
	for (int32_t cz = cz0; cz <= cz1; cz++) {
		for (int32_t cx = cx0; cx <= cx1; cx++, k++) {
			size_t tl;
			uint8_t *t = make_tile(c->s, lod, cx, cz, &tl);
			uint8_t *e;

			b = realloc(b, len + tl);
			e = b + API_BUNDLE_HEADER + k * API_BUNDLE_ENTRY;
			put32(e, (uint32_t)cx);
			put32(e + 4, (uint32_t)cz);
			put32(e + 8, (uint32_t)len);
			put32(e + 12, (uint32_t)tl);
			memcpy(b + len, t, tl);
			len += tl;
			c->s->bundled++;
			free(t);
		}
	}
	reply(c, 200, "", b, len);
	free(b);
}

static void serve_one(struct sconn *c, const char *head)
{
	char target[256] = "", etag[40], extra[80];
	const char *inm = strstr(head, "If-None-Match: ");
	int lod, cx, cz, cx1, cz1;
	uint8_t *t;
	size_t tl;

	sscanf(head, "GET %255s ", target);
	if (sscanf(target, "/v1/worlds/77/chunks/%d?cx0=%d&cz0=%d&cx1=%d&cz1=%d",
		   &lod, &cx, &cz, &cx1, &cz1) == 5) {
		if (c->s->batch)
			serve_batch(c, lod, cx, cz, cx1, cz1);
		else
			reply(c, 404, "", "{\"error\":\"not_found\"}", 21);
		return;
	}
	if (sscanf(target, "/v1/worlds/77/chunks/%d/%d/%d", &lod, &cx, &cz) != 3) {
		reply(c, 400, "", "", 0);
		return;
	}
	c->s->singles++;
	t = make_tile(c->s, lod, cx, cz, &tl);
	snprintf(etag, sizeof(etag), "\"%016" PRIx64 "\"", tile_checksum(t));
	snprintf(extra, sizeof(extra), "ETag: %s\r\n", etag);
	if (inm) {
		c->s->conditional++;
		if (strncmp(inm + 15, etag, strlen(etag)) == 0) {
			c->s->not_modified++;
			reply(c, 304, extra, NULL, 0);
			free(t);
			return;
		}
	}
	reply(c, 200, extra, t, tl);
	free(t);
}

static void sconn_alloc(uv_handle_t *h, size_t want, uv_buf_t *b)
{
	struct sconn *c = h->data;

	(void)want;
	*b = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - c->len - 1));
}

static void sconn_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct sconn *c = st->data;
	char *end;

	(void)b;
	if (n < 0) {
		c->closing = 1;
		uv_close((uv_handle_t *)&c->tcp, sconn_closed);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = 0;
	while ((end = strstr(c->buf, "\r\n\r\n")) != NULL) {
		size_t used = (size_t)(end + 4 - c->buf);

		*end = 0;
		serve_one(c, c->buf);
		memmove(c->buf, c->buf + used, c->len - used + 1);
		c->len -= used;
	}
}

static void on_conn(uv_stream_t *server, int status)
{
	struct sconn *c = calloc(1, sizeof(*c));

	assert_int_equal(status, 0);
	c->s = server->data;
	uv_tcp_init(server->loop, &c->tcp);
	c->tcp.data = c;
	assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
	uv_read_start((uv_stream_t *)&c->tcp, sconn_alloc, sconn_read);
}

static void tsrv_start(uv_loop_t *loop, struct tsrv *s)
{
	struct sockaddr_in a;
	struct sockaddr_storage got;
	int len = sizeof(got);

	uv_ip4_addr("127.0.0.1", 0, &a);
	uv_tcp_init(loop, &s->server);
	s->server.data = s;
	assert_int_equal(uv_tcp_bind(&s->server, (const struct sockaddr *)&a, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&s->server, 64, on_conn), 0);
	uv_tcp_getsockname(&s->server, (struct sockaddr *)&got, &len);
	s->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
}

static void close_rest(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h) && h->type == UV_TCP)
		uv_close(h, sconn_closed);
}

/* ---- the client side ---- */

struct env {
	uv_loop_t loop;
	struct tsrv srv;
	struct hclient *hc;
	struct view *v;
	struct view_params p;
	unsigned errors;
	char first_error[512];
};

static void on_error(void *arg, struct view *v, const char *msg)
{
	struct env *e = arg;

	(void)v;
	if (!e->errors++)
		snprintf(e->first_error, sizeof(e->first_error), "%s", msg);
}

static struct env *env_new(int batch, enum fault f, int keep)
{
	struct env *e = calloc(1, sizeof(*e));
	struct view_hooks hooks = { .arg = e, .error = on_error };
	const char *detail;
	char url[64];

	uv_loop_init(&e->loop);
	e->srv.batch = batch;
	e->srv.fault = f;
	e->srv.bad_cx = 1;
	e->srv.bad_cz = 0;
	tsrv_start(&e->loop, &e->srv);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", e->srv.port);
	assert_int_equal(hclient_create(&e->loop, url, NULL, &e->hc, &detail), 0);
	e->p = (struct view_params){
		.ring = { .chunk_log2 = 8, .max_lod = 8, .d0 = 256, .lmax = 6,
			  .radius = 1024 },
		.seed = "77", .seed_value = SEED, .fingerprint = FP,
		.batch_lod = 2, .keep_heights = keep, .revalidate_ms = 10000,
	};
	assert_int_equal(view_create(e->hc, &e->p, &hooks, &e->v), 0);
	return e;
}

/* Update the view and run until every answer is in. */
static long step(struct env *e, double x, double z, uint64_t now)
{
	long sent = view_update(e->v, x, z, now);

	assert_true(sent >= 0);
	while (view_outstanding(e->v))
		assert_true(uv_run(&e->loop, UV_RUN_ONCE) ||
			    !view_outstanding(e->v));
	return sent;
}

static void env_free(struct env *e)
{
	hclient_close(e->hc);
	view_destroy(e->v);
	uv_close((uv_handle_t *)&e->srv.server, NULL);
	uv_run(&e->loop, UV_RUN_NOWAIT);
	uv_walk(&e->loop, close_rest, NULL);
	uv_run(&e->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&e->loop), 0);
	free(e);
}

/* ---- tests ---- */

static void test_view_loads_every_chunk_at_its_lod(void **state)
{
	struct env *e = env_new(0, F_NONE, 1);
	size_t counts[9], missing, cap = 81;
	size_t want[9] = { 0 };
	struct ring_chunk list[81];
	long n = ring_list(&e->p.ring, 128, 128, list, cap);
	double h;

	(void)state;
	assert_int_equal(n, 81);
	for (long k = 0; k < n; k++)
		want[list[k].lod]++;
	step(e, 128, 128, 0);
	assert_int_equal(e->errors, 0);
	missing = view_loaded(e->v, counts, 9);
	assert_int_equal(missing, 0);
	for (int l = 0; l < 9; l++)
		assert_int_equal(counts[l], want[l]);
	assert_int_equal(view_stats(e->v)->tiles, 81);
	assert_int_equal(view_stats(e->v)->seams, 144);
	assert_int_equal(view_finest_lod(e->v), 0);
	/* heights of a LOD 0 chunk come back exactly */
	assert_int_equal(view_height(e->v, 300, 17, &h), 0);
	assert_true(h == (double)height(300, 17) * 10000 / 1e6);
	assert_int_equal(view_height(e->v, 1e7, 0, &h), ERR_NOTFOUND);
	env_free(e);
}

static void test_view_falls_back_to_single_tiles_on_404(void **state)
{
	struct env *e = env_new(0, F_NONE, 0);
	const struct view_stats *st = view_stats(e->v);
	size_t counts[9];

	(void)state;
	step(e, 128, 128, 0);
	assert_int_equal(e->errors, 0);
	assert_true(st->batches >= 1);
	assert_true(st->batch_fallbacks >= 1);
	assert_int_equal(view_loaded(e->v, counts, 9), 0);
	/* once known, far rings go straight to single tiles */
	e->srv.batches = 0;
	step(e, 128 + 1024, 128, 1);
	assert_int_equal(e->errors, 0);
	assert_int_equal(e->srv.batches, 0);
	assert_int_equal(view_loaded(e->v, counts, 9), 0);
	env_free(e);
}

static void test_view_uses_bundles_for_far_rings(void **state)
{
	struct env *e = env_new(1, F_NONE, 1);
	const struct view_stats *st = view_stats(e->v);
	size_t counts[9];

	(void)state;
	step(e, 128, 128, 0);
	assert_int_equal(e->errors, 0);
	assert_true(e->srv.batches >= 2);
	assert_int_equal(st->batch_fallbacks, 0);
	assert_int_equal(view_loaded(e->v, counts, 9), 0);
	assert_int_equal(st->tiles, 81);
	assert_true(e->srv.bundled > 0);
	assert_int_equal(e->srv.singles + e->srv.bundled, 81);
	env_free(e);
}

static void test_view_fetches_only_what_changes(void **state)
{
	struct env *e = env_new(0, F_NONE, 0);
	const struct view_stats *st = view_stats(e->v);
	uint64_t before;

	(void)state;
	step(e, 128, 128, 0);
	before = st->requests;
	assert_int_equal(step(e, 128, 128, 1000), 0); /* nothing changed */
	/* one chunk east: a new column, and some LODs change */
	assert_true(step(e, 128 + 256, 128, 2000) > 0);
	assert_true(st->requests - before < 40);
	assert_int_equal(st->revalidations, 0);
	assert_true(st->dropped > 0);
	/* past the 10 s lifetime everything is revalidated: 304 keeps it */
	before = st->tiles;
	step(e, 128 + 256, 128, 20000);
	assert_int_equal(e->errors, 0);
	assert_int_equal(st->revalidations, 81);
	assert_int_equal(e->srv.not_modified, 81);
	assert_int_equal(st->not_modified, 81);
	assert_int_equal(st->tiles, before);
	env_free(e);
}

static void test_view_reports_a_seam_mismatch_naming_both_chunks(void **state)
{
	(void)state;
	for (int keep = 0; keep <= 1; keep++) {
		struct env *e = env_new(0, F_SEAM, keep);

		step(e, 128, 128, 0);
		assert_int_equal(e->errors, 1);
		assert_non_null(strstr(e->first_error, "seam mismatch"));
		assert_non_null(strstr(e->first_error, "chunk 0/0/0"));
		assert_non_null(strstr(e->first_error, "chunk 0/1/0"));
		if (keep)
			assert_non_null(strstr(e->first_error, "x=256 z=128"));
		env_free(e);
	}
}

static void test_view_rejects_wrong_and_corrupt_tiles(void **state)
{
	struct env *e = env_new(0, F_HEADER, 0);
	size_t counts[9];

	(void)state;
	step(e, 128, 128, 0);
	assert_int_equal(e->errors, 1);
	assert_non_null(strstr(e->first_error, "chunk 0/1/0 (lod/cx/cz): wrong tile"));
	assert_int_equal(view_loaded(e->v, counts, 9), 1);
	env_free(e);

	e = env_new(1, F_CORRUPT, 0);
	step(e, 128, 128, 0);
	assert_int_equal(e->errors, 1);
	assert_string_equal(e->first_error, "chunk 0/1/0 (lod/cx/cz): corrupt "
			    "tile: checksum mismatch");
	env_free(e);
}

/* The far rings' precisions: the default list keeps LOD 0 exact (no
 * ?precision=), its last name covers every coarser LOD, --exact (all 0)
 * asks for none, and a bad list is refused. */
static void test_view_precisions_keep_lod0_exact_and_repeat_the_last(void **state)
{
	struct view_params p = { 0 };
	uint32_t bad[VIEW_LODS];
	int lod;

	(void)state;
	for (lod = 0; lod < VIEW_LODS; lod++)
		assert_int_equal(view_precision_um(&p, lod), 0);
	assert_int_equal(view_parse_precisions(VIEW_PRECISIONS, p.precision_um), 0);
	assert_int_equal(view_precision_um(&p, 0), 0);
	assert_int_equal(view_precision_um(&p, 1), 100000);
	assert_int_equal(view_precision_um(&p, 2), 500000);
	for (lod = 3; lod < VIEW_LODS; lod++)
		assert_int_equal(view_precision_um(&p, lod), 1000000);
	assert_int_equal(view_precision_um(&p, -1), 0);
	assert_int_equal(view_precision_um(&p, VIEW_LODS), 0);
	assert_int_equal(view_parse_precisions("5cm", p.precision_um), 0);
	assert_int_equal(view_precision_um(&p, 0), 50000);
	assert_int_equal(view_precision_um(&p, 12), 50000);
	assert_int_equal(view_parse_precisions("1cm,3cm", bad), ERR_INVAL);
	assert_int_equal(view_parse_precisions("", bad), ERR_INVAL);
	assert_int_equal(view_parse_precisions("1cm,", bad), ERR_INVAL);
	assert_int_equal(view_parse_precisions("1cm,1cm,1cm,1cm,1cm,1cm,1cm,1cm,1cm,1cm,1cm,1cm,"
					       "1cm,1cm", bad), ERR_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_view_loads_every_chunk_at_its_lod),
		cmocka_unit_test(test_view_precisions_keep_lod0_exact_and_repeat_the_last),
		cmocka_unit_test(test_view_falls_back_to_single_tiles_on_404),
		cmocka_unit_test(test_view_uses_bundles_for_far_rings),
		cmocka_unit_test(test_view_fetches_only_what_changes),
		cmocka_unit_test(test_view_reports_a_seam_mismatch_naming_both_chunks),
		cmocka_unit_test(test_view_rejects_wrong_and_corrupt_tiles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
