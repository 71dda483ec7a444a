/*
 * test_client_stream.c - what terrain-client edit and follow stand on:
 *   - evstream.c: Server-Sent Events parsed from any split of the bytes,
 *     CRLF / CR / LF, comments, multi-line data, IDs kept across a reset,
 *     limits;
 *   - editlog.c: pages of GET .../edits (as the server prints them with
 *     edit_to_json()) give the same edits, world hashes and chunk versions
 *     as the edits parsed directly; "seq" is stripped, gaps and bad pages
 *     are refused with the log unchanged, pages over 256 edits parse;
 *   - api.c: batch answers and events;
 *   - hclient.c against a scripted server in the same loop: a streaming
 *     request gets its head and body pieces as they come and the end, has
 *     a connection of its own, times out by idle_ms, gets a non-2xx answer
 *     whole; a POST carries its headers and body and, marked once, is not
 *     re-sent when its connection drops; closing the client from inside
 *     on_data is safe. Every hclient test ends with uv_loop_close() == 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "../client-sample/api.h"
#include "../client-sample/editlog.h"
#include "../client-sample/evstream.h"
#include "../client-sample/hclient.h"
#include "edit.h"
#include "err.h"
#include "util.h"

/* ================================================================ evstream */

struct got {
	char text[4096]; /* "type|id|data;" per event */
	size_t len;
	int stop_after;  /* stop the feed after this many events (0: never) */
	int n;
};

static int on_ev(void *arg, const char *type, const char *id,
		 const char *data, size_t len)
{
	struct got *g = arg;

	assert_int_equal(strlen(data), len);
	g->len += (size_t)snprintf(g->text + g->len, sizeof(g->text) - g->len,
				   "%s|%s|%s;", type, id, data);
	g->n++;
	return g->stop_after && g->n >= g->stop_after ? 7 : 0;
}

static const char sample[] =
	": keep-alive\n\n"
	"id: 4\nevent: edits\n"
	"data: {\"first_seq\":3,\"last_seq\":4,\"chunks\":[[2,0],[0,0]]}\n\n"
	"data: first\r\ndata:second\r\n\r\n"
	"event: other\rdata\r\rid: 9\n: note\nevent: x\n\n"
	"id: 10\ndata: a: b\n\n";

static const char sample_want[] =
	"edits|4|{\"first_seq\":3,\"last_seq\":4,\"chunks\":[[2,0],[0,0]]};"
	"message|4|first\nsecond;"
	"other|4|;"
	"message|10|a: b;";

static void test_evstream_parses_any_split(void **state)
{
	size_t n = strlen(sample);

	(void)state;
	/* whole, then one byte at a time, then every two-piece split */
	for (size_t cut = 0; cut <= n; cut++) {
		struct evstream p;
		struct got g = { 0 };

		evstream_init(&p);
		assert_int_equal(evstream_feed(&p, sample, cut, on_ev, &g), 0);
		assert_int_equal(evstream_feed(&p, sample + cut, n - cut, on_ev,
					       &g), 0);
		assert_string_equal(g.text, sample_want);
		assert_int_equal(p.comments, 2);
		assert_int_equal(p.events, 4);
		assert_string_equal(p.last_id, "10");
		evstream_free(&p);
	}
	{
		struct evstream p;
		struct got g = { 0 };

		evstream_init(&p);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(evstream_feed(&p, sample + k, 1, on_ev,
						       &g), 0);
		assert_string_equal(g.text, sample_want);
		evstream_free(&p);
	}
}

static void test_evstream_reset_bom_retry_and_stop(void **state)
{
	struct evstream p;
	struct got g = { 0 };
	static const char bom[] = "\xEF\xBB\xBFretry: 250\nid: 7\ndata: x\n\n";

	(void)state;
	evstream_init(&p);
	assert_int_equal(evstream_feed(&p, bom, strlen(bom), on_ev, &g), 0);
	assert_string_equal(g.text, "message|7|x;");
	assert_int_equal(p.retry_ms, 250);
	/* a partial event is dropped by a reset; the last ID stays */
	assert_int_equal(evstream_feed(&p, "data: lost\n", 11, on_ev, &g), 0);
	evstream_reset(&p);
	assert_int_equal(evstream_feed(&p, "\n", 1, on_ev, &g), 0);
	assert_string_equal(g.text, "message|7|x;");
	assert_string_equal(p.last_id, "7");
	/* the callback stops the feed: its value comes back */
	g = (struct got){ .stop_after = 1 };
	assert_int_equal(evstream_feed(&p, "data: 1\n\ndata: 2\n\n", 18, on_ev,
				       &g), 7);
	assert_string_equal(g.text, "message|7|1;");
	evstream_free(&p);
}

static void test_evstream_refuses_oversized_lines(void **state)
{
	struct evstream p;
	struct got g = { 0 };
	size_t n = EVSTREAM_MAX_LINE + 10;
	char *big = malloc(n);
	char id[EVSTREAM_ID_MAX + 8];

	(void)state;
	memset(big, 'a', n);
	evstream_init(&p);
	assert_int_equal(evstream_feed(&p, big, n, on_ev, &g), ERR_TOOBIG);
	evstream_reset(&p);
	memset(id, '1', sizeof(id));
	memcpy(id, "id: ", 4);
	id[sizeof(id) - 1] = '\n';
	assert_int_equal(evstream_feed(&p, id, sizeof(id), on_ev, &g),
			 ERR_TOOBIG);
	assert_int_equal(g.n, 0);
	evstream_free(&p);
	free(big);
}

/* ================================================================ editlog */

#define FP   UINT64_C(0x1234abcd5678ef90)
#define SEED UINT64_C(42)

/* n edits of all kinds, some on chunk corners, some overlapping. */
static struct edit *make_edits(size_t n)
{
	struct edit *e = calloc(n, sizeof(*e));

	for (size_t k = 0; k < n; k++) {
		e[k].op = (uint8_t)(k % 4);
		e[k].falloff = (uint8_t)(k % 3 == 0 ? EDIT_LINEAR : EDIT_SMOOTH);
		e[k].x_mm = (int64_t)(k % 7) * 256000 - 512000 + (int64_t)k * 13;
		e[k].z_mm = (int64_t)(k % 5) * 256000 - (int64_t)k * 7001;
		e[k].radius_mm = 1000 + (int64_t)(k % 9) * 37333;
		if (e[k].op == EDIT_RAISE || e[k].op == EDIT_LOWER)
			e[k].strength = 1500000 + (int64_t)k * 3;
		if (e[k].op == EDIT_FLATTEN) {
			e[k].strength = 250000 + (int64_t)k;
			e[k].height_um = -3000000 + (int64_t)k * 10;
		}
		if (e[k].op == EDIT_SET)
			e[k].height_um = 12345678 - (int64_t)k;
	}
	return e;
}

static void edit_equal(const struct edit *a, const struct edit *b)
{
	assert_int_equal(a->op, b->op);
	assert_int_equal(a->falloff, b->falloff);
	assert_int_equal(a->x_mm, b->x_mm);
	assert_int_equal(a->z_mm, b->z_mm);
	assert_int_equal(a->radius_mm, b->radius_mm);
	assert_int_equal(a->strength, b->strength);
	assert_int_equal(a->height_um, b->height_um);
}

/* A page as the server prints it: edit_to_json() of seqs since+1.. */
static char *page_json(const struct edit *e, uint64_t since, size_t count,
		       uint64_t seq, uint64_t hash, int with_next)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	char hex[17], *text;

	cJSON_AddNumberToObject(o, "since", (double)since);
	cJSON_AddNumberToObject(o, "seq", (double)seq);
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)hash);
	cJSON_AddStringToObject(o, "world_hash", hex);
	arr = cJSON_AddArrayToObject(o, "edits");
	for (size_t k = 0; k < count; k++)
		assert_int_equal(edit_to_json(&e[since + k], since + k + 1, arr), 0);
	if (with_next)
		cJSON_AddNumberToObject(o, "next", (double)(since + count));
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return text;
}

static void test_editlog_pages_give_the_servers_hashes_and_versions(void **state)
{
	enum { N = 300 };
	struct edit *e = make_edits(N);
	uint64_t h[N + 1];
	struct editlog l;
	struct editlog_page pg;
	char err[200], *js;

	(void)state;
	h[0] = edit_hash_start(FP, SEED);
	for (size_t k = 0; k < N; k++)
		h[k + 1] = edit_hash_next(h[k], k + 1, &e[k]);
	editlog_init(&l, FP, SEED, 8);
	assert_int_equal(editlog_hash(&l, 0), h[0]);
	/* a page of 100 with next, then one of 200 (parsed in groups of 256) */
	js = page_json(e, 0, 100, N, h[N], 1);
	assert_int_equal(editlog_add_page(&l, js, strlen(js), &pg, err,
					  sizeof(err)), 0);
	free(js);
	assert_true(pg.has_next);
	assert_int_equal(pg.next, 100);
	assert_int_equal(pg.count, 100);
	js = page_json(e, 100, 200, N, h[N], 0);
	assert_int_equal(editlog_add_page(&l, js, strlen(js), &pg, err,
					  sizeof(err)), 0);
	free(js);
	assert_false(pg.has_next);
	assert_int_equal(pg.seq, N);
	assert_int_equal(pg.world_hash, h[N]);
	assert_int_equal(l.n, N);
	for (size_t k = 0; k <= N; k++)
		assert_int_equal(editlog_hash(&l, k), h[k]);
	for (size_t k = 0; k < N; k++)
		edit_equal(&l.e[k], &e[k]);
	/* versions: the last edit touching each chunk, by brute force */
	for (int32_t cz = -6; cz <= 6; cz++)
		for (int32_t cx = -6; cx <= 6; cx++) {
			uint64_t v = 0;

			for (size_t k = 0; k < N; k++)
				if (edit_touches(&e[k], 8, cx, cz))
					v = k + 1;
			assert_int_equal(editlog_version(&l, cx, cz), v);
		}
	editlog_free(&l);
	free(e);
}

static void test_editlog_batch_chunks_in_first_touch_order(void **state)
{
	struct edit e[2] = {
		{ .op = EDIT_RAISE, .falloff = EDIT_SMOOTH, .x_mm = 256000,
		  .z_mm = 256000, .radius_mm = 10000, .strength = 3000000 },
		{ .op = EDIT_RAISE, .falloff = EDIT_SMOOTH, .x_mm = 300000,
		  .z_mm = 100000, .radius_mm = 1000, .strength = 1000000 },
	};
	struct editlog l;
	int32_t *xz;
	size_t n;
	static const int32_t want[] = { 0, 0, 1, 0, 0, 1, 1, 1 };

	(void)state;
	editlog_init(&l, FP, SEED, 8);
	assert_int_equal(editlog_append(&l, e, 2), 0);
	assert_int_equal(editlog_batch_chunks(&l, 1, 2, &xz, &n), 0);
	assert_int_equal(n, 4); /* the second edit's chunk (1,0) is a repeat */
	assert_memory_equal(xz, want, sizeof(want));
	free(xz);
	assert_int_equal(editlog_version(&l, 1, 0), 2);
	assert_int_equal(editlog_version(&l, 0, 0), 1);
	assert_int_equal(editlog_version(&l, 2, 2), 0);
	assert_int_equal(editlog_batch_chunks(&l, 0, 1, &xz, &n), ERR_INVAL);
	assert_int_equal(editlog_batch_chunks(&l, 2, 3, &xz, &n), ERR_INVAL);
	editlog_free(&l);
}

static void expect_page_error(struct editlog *l, const char *js, int rc,
			      const char *msg)
{
	struct editlog_page pg;
	char err[200];
	size_t n = l->n;

	assert_int_equal(editlog_add_page(l, js, strlen(js), &pg, err,
					  sizeof(err)), rc);
	if (!strstr(err, msg))
		fail_msg("error '%s' lacks '%s'", err, msg);
	assert_int_equal(l->n, n);
}

static void test_editlog_refuses_bad_pages(void **state)
{
	struct editlog l;
	struct edit *e = make_edits(300);
	char *js, *p;

	(void)state;
	editlog_init(&l, FP, SEED, 8);
	expect_page_error(&l, "[]", ERR_PARSE, "not a JSON object");
	expect_page_error(&l, "{\"since\":0,\"seq\":0,\"edits\":[]}", ERR_PARSE,
			  "world_hash");
	expect_page_error(&l, "{\"since\":1,\"seq\":2,\"world_hash\":"
			  "\"0000000000000000\",\"edits\":[]}", ERR_RANGE,
			  "since: 1, asked 0");
	/* a gap in the sequence numbers */
	expect_page_error(&l, "{\"since\":0,\"seq\":2,\"world_hash\":"
			  "\"0000000000000000\",\"edits\":[{\"seq\":2,\"op\":"
			  "\"raise\",\"x\":1,\"z\":1,\"radius\":1,\"strength\":1}]}",
			  ERR_RANGE, "edits[0].seq: 2, expected 1");
	/* a page that stops short of seq without "next" */
	expect_page_error(&l, "{\"since\":0,\"seq\":5,\"world_hash\":"
			  "\"0000000000000000\",\"edits\":[{\"seq\":1,\"op\":"
			  "\"raise\",\"x\":1,\"z\":1,\"radius\":1,\"strength\":1}]}",
			  ERR_RANGE, "ends at seq 1");
	/* the server's log behind ours */
	{
		struct edit one = { .op = EDIT_RAISE, .falloff = EDIT_SMOOTH,
				    .radius_mm = 1000, .strength = 1000000 };

		assert_int_equal(editlog_append(&l, &one, 1), 0);
		expect_page_error(&l, "{\"since\":1,\"seq\":0,\"world_hash\":"
				  "\"0000000000000000\",\"edits\":[]}", ERR_RANGE,
				  "the server's log ends at seq 0, before ours (1)");
		editlog_free(&l);
		editlog_init(&l, FP, SEED, 8);
	}
	expect_page_error(&l, "{\"since\":0,\"seq\":0,\"world_hash\":"
			  "\"0000000000000000\",\"edits\":[{\"seq\":1,\"op\":"
			  "\"raise\",\"x\":1,\"z\":1,\"radius\":1,\"strength\":1}]}",
			  ERR_RANGE, "past seq 0");
	/* a bad edit far into a long page: its index counts from the page */
	e[280].radius_mm = 5000000;
	js = page_json(e, 0, 300, 300, 0, 0);
	expect_page_error(&l, js, ERR_RANGE, "edits[280].radius");
	free(js);
	/* an unknown field */
	e[280].radius_mm = 1000;
	js = page_json(e, 0, 3, 3, 0, 0);
	p = strstr(js, "\"op\"");
	memcpy(p, "\"oq\"", 4);
	expect_page_error(&l, js, ERR_PARSE, "edits[0].oq: unknown field");
	free(js);
	assert_int_equal(l.n, 0);
	editlog_free(&l);
	free(e);
}

/* ================================================================ api */

static void test_api_batch_parse(void **state)
{
	struct api_batch b;
	static const char good[] =
		"{\"first_seq\":3,\"last_seq\":4,\"seq\":9,\"world_hash\":"
		"\"1c0d00000000abcd\",\"chunks\":[[2,0],[-2147483648,2147483647]]}";
	static const char *bad[] = {
		"{\"first_seq\":0,\"last_seq\":4,\"world_hash\":\"1c0d00000000abcd\",\"chunks\":[]}",
		"{\"first_seq\":5,\"last_seq\":4,\"world_hash\":\"1c0d00000000abcd\",\"chunks\":[]}",
		"{\"first_seq\":1,\"last_seq\":4,\"world_hash\":\"1C0D00000000abcd\",\"chunks\":[]}",
		"{\"first_seq\":1,\"last_seq\":4,\"world_hash\":\"1c0d00000000abcd\",\"chunks\":[[1]]}",
		"{\"first_seq\":1,\"last_seq\":4,\"world_hash\":\"1c0d00000000abcd\",\"chunks\":[[1,2.5]]}",
		"{\"first_seq\":1,\"last_seq\":4,\"world_hash\":\"1c0d00000000abcd\",\"chunks\":[[1,2147483648]]}",
		"{\"first_seq\":1,\"last_seq\":4,\"world_hash\":\"1c0d00000000abcd\"}",
		"not json",
	};

	(void)state;
	assert_int_equal(api_batch_parse(good, strlen(good), &b), 0);
	assert_int_equal(b.first_seq, 3);
	assert_int_equal(b.last_seq, 4);
	assert_int_equal(b.seq, 9);
	assert_int_equal(b.world_hash, UINT64_C(0x1c0d00000000abcd));
	assert_int_equal(b.nchunks, 2);
	assert_int_equal(b.chunks[0], 2);
	assert_int_equal(b.chunks[2], INT32_MIN);
	assert_int_equal(b.chunks[3], INT32_MAX);
	api_batch_free(&b);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		assert_int_equal(api_batch_parse(bad[k], strlen(bad[k]), &b),
				 ERR_PARSE);
		assert_null(b.chunks);
	}
}

/* ================================================================ hclient */

/*
 * The scripted server answers by target:
 *   /events...   200 text/event-stream, no length: the three pieces of
 *                `stream_pieces` 5 ms apart, then (for /events-close) it
 *                closes, else it holds the stream open
 *   /silent      the stream's head only
 *   /missing     404 with a JSON body
 *   /drop        closes the connection on reading it
 *   anything else: 200, body "METHOD TARGET BODY"
 */
static const char *const stream_pieces[] = {
	"id: 1\nevent: ed", "its\ndata: {\"a\":1}\n\n: keep-alive\n",
	"\nid: 2\nevent: edits\ndata: {\"a\":2}\n\n",
};

struct fake {
	uv_tcp_t server;
	int port;
	unsigned conns;
	char heads[4096]; /* request heads received, in order */
	size_t heads_len;
};

struct fconn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct fake *f;
	int closing, handles;
	unsigned piece;
	int close_after;  /* close once the pieces are sent */
	int streaming;    /* ignore further requests */
	size_t len;
	char buf[16384];
};

struct wbuf {
	uv_write_t req;
	char data[];
};

static void fconn_closed(uv_handle_t *h)
{
	struct fconn *c = h->data;

	if (--c->handles == 0)
		free(c);
}

static void fconn_close(struct fconn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	uv_close((uv_handle_t *)&c->tcp, fconn_closed);
	uv_close((uv_handle_t *)&c->timer, fconn_closed);
}

static void written(uv_write_t *w, int status)
{
	(void)status;
	free(container_of(w, struct wbuf, req));
}

static void send_text(struct fconn *c, const char *p, size_t n)
{
	struct wbuf *w = malloc(sizeof(*w) + n);
	uv_buf_t b = uv_buf_init(w->data, (unsigned)n);

	memcpy(w->data, p, n);
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, written))
		free(w);
}

static void on_piece(uv_timer_t *t)
{
	struct fconn *c = t->data;

	if (c->closing)
		return;
	if (c->piece < 3) {
		const char *p = stream_pieces[c->piece++];

		send_text(c, p, strlen(p));
		uv_timer_start(&c->timer, on_piece, 5, 0);
	} else if (c->close_after) {
		fconn_close(c);
	}
}

static void answer(struct fconn *c, const char *head, const char *body,
		   size_t blen)
{
	char method[16] = "", target[128] = "", out[512];
	int n;

	sscanf(head, "%15s %127s", method, target);
	if (strncmp(target, "/events", 7) == 0 || strcmp(target, "/silent") == 0) {
		static const char h[] = "HTTP/1.1 200 OK\r\nContent-Type: "
					"text/event-stream\r\nCache-Control: "
					"no-store\r\n\r\n";

		send_text(c, h, sizeof(h) - 1);
		c->streaming = 1;
		c->close_after = strcmp(target, "/events-close") == 0;
		if (target[1] == 'e')
			uv_timer_start(&c->timer, on_piece, 5, 0);
		return;
	}
	if (strcmp(target, "/drop") == 0) {
		fconn_close(c);
		return;
	}
	if (strcmp(target, "/missing") == 0) {
		static const char js[] = "{\"error\":\"not found\",\"detail\":\"x\"}";

		n = snprintf(out, sizeof(out), "HTTP/1.1 404 Not Found\r\n"
			     "Content-Type: application/json\r\nContent-Length: "
			     "%zu\r\n\r\n%s", sizeof(js) - 1, js);
		send_text(c, out, (size_t)n);
		return;
	}
	n = snprintf(out, sizeof(out), "%s %s %.*s", method, target, (int)blen,
		     body);
	{
		char h[128];
		int hn = snprintf(h, sizeof(h), "HTTP/1.1 200 OK\r\n"
				  "Content-Length: %d\r\n\r\n", n);

		send_text(c, h, (size_t)hn);
		send_text(c, out, (size_t)n);
	}
}

static void serve(struct fconn *c)
{
	for (;;) {
		char *end = NULL, *cl;
		size_t head_len, blen = 0, used;

		for (size_t k = 0; k + 4 <= c->len; k++)
			if (memcmp(c->buf + k, "\r\n\r\n", 4) == 0) {
				end = c->buf + k;
				break;
			}
		if (!end || c->closing || c->streaming)
			return;
		head_len = (size_t)(end + 4 - c->buf);
		*end = 0;
		if ((cl = strstr(c->buf, "\r\nContent-Length:")) != NULL)
			blen = strtoul(cl + 17, NULL, 10);
		*end = '\r';
		if (c->len < head_len + blen)
			return;
		c->buf[head_len - 1] = 0;
		c->f->heads_len += (size_t)snprintf(
			c->f->heads + c->f->heads_len,
			sizeof(c->f->heads) - c->f->heads_len, "%s\n", c->buf);
		c->buf[head_len - 1] = '\n';
		answer(c, c->buf, c->buf + head_len, blen);
		used = head_len + blen;
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
	}
}

static void fconn_alloc(uv_handle_t *h, size_t want, uv_buf_t *b)
{
	struct fconn *c = h->data;

	(void)want;
	*b = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - c->len));
}

static void fconn_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct fconn *c = s->data;

	(void)b;
	if (n < 0) {
		fconn_close(c);
		return;
	}
	c->len += (size_t)n;
	serve(c);
}

static void on_conn(uv_stream_t *server, int status)
{
	struct fake *f = server->data;
	struct fconn *c = calloc(1, sizeof(*c));

	assert_int_equal(status, 0);
	c->f = f;
	c->handles = 2;
	f->conns++;
	uv_tcp_init(server->loop, &c->tcp);
	uv_timer_init(server->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
	uv_tcp_nodelay(&c->tcp, 1);
	uv_read_start((uv_stream_t *)&c->tcp, fconn_alloc, fconn_read);
}

static void fake_start(uv_loop_t *loop, struct fake *f)
{
	struct sockaddr_in a;
	struct sockaddr_storage got;
	int len = sizeof(got);

	memset(f, 0, sizeof(*f));
	uv_ip4_addr("127.0.0.1", 0, &a);
	uv_tcp_init(loop, &f->server);
	f->server.data = f;
	assert_int_equal(uv_tcp_bind(&f->server, (const struct sockaddr *)&a, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&f->server, 64, on_conn), 0);
	uv_tcp_getsockname(&f->server, (struct sockaddr *)&got, &len);
	f->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
}

static void close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h) && h->data && (h->type == UV_TCP ||
					     h->type == UV_TIMER))
		fconn_close(h->data);
}

static struct hclient *client(uv_loop_t *loop, const struct fake *f,
			      unsigned connections, uint64_t timeout_ms)
{
	struct hclient_opts o;
	struct hclient *c;
	const char *detail;
	char url[64];

	hclient_opts_default(&o);
	o.connections = connections;
	o.timeout_ms = timeout_ms;
	o.backoff_ms = 5;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", f->port);
	assert_int_equal(hclient_create(loop, url, &o, &c, &detail), 0);
	return c;
}

static void finish(uv_loop_t *loop, struct hclient *c, struct fake *f)
{
	if (c)
		hclient_close(c);
	uv_close((uv_handle_t *)&f->server, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	uv_walk(loop, close_walk, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(loop), 0);
}

/* What one request saw. */
struct seen {
	int done, heads, status, err;
	unsigned order;    /* when it ended, 1.. */
	char detail[96];
	char data[512];    /* streamed pieces, concatenated */
	size_t data_len;
	unsigned pieces;
	char body[256];
	struct hclient *close_on_data; /* close this client from on_data */
};

static unsigned g_ended;

static void on_data(void *arg, int status, const uint8_t *d, size_t n)
{
	struct seen *s = arg;

	if (!d) {
		assert_int_equal(n, 0);
		s->heads++;
		s->status = status;
		return;
	}
	assert_true(s->data_len + n < sizeof(s->data));
	memcpy(s->data + s->data_len, d, n);
	s->data_len += n;
	s->data[s->data_len] = 0;
	s->pieces++;
	if (s->close_on_data)
		hclient_close(s->close_on_data);
}

static void on_end(void *arg, struct hclient_resp *r)
{
	struct seen *s = arg;

	s->done = 1;
	s->order = ++g_ended;
	s->status = r->status;
	s->err = r->err;
	snprintf(s->detail, sizeof(s->detail), "%s", r->detail ? r->detail : "");
	snprintf(s->body, sizeof(s->body), "%.*s", (int)r->body_len,
		 r->body ? (const char *)r->body : "");
}

static void stream(struct hclient *c, const char *target, struct seen *s,
		   uint64_t idle_ms)
{
	struct hclient_req q = { .target = target, .on_data = on_data,
				 .headers = "Last-Event-ID: 41\r\n",
				 .idle_ms = idle_ms };

	assert_int_equal(hclient_request(c, &q, on_end, s), 0);
}

static void run_until(uv_loop_t *loop, const int *flag)
{
	while (!*flag)
		assert_true(uv_run(loop, UV_RUN_ONCE) || *flag);
}

static void test_hclient_streams_pieces_until_the_end(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;
	static struct seen s, g[3];
	char want[256] = "";

	(void)state;
	memset(&s, 0, sizeof(s));
	memset(g, 0, sizeof(g));
	g_ended = 0;
	uv_loop_init(&loop);
	fake_start(&loop, &f);
	/* one connection: GETs queued behind the stream wait for its end */
	c = client(&loop, &f, 1, 2000);
	stream(c, "/events-close", &s, 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(hclient_get(c, "/after", NULL, on_end, &g[k]), 0);
	run_until(&loop, &g[2].done);
	for (int k = 0; k < 3; k++)
		strcat(want, stream_pieces[k]);
	assert_int_equal(s.heads, 1);
	assert_int_equal(s.status, 200);
	assert_int_equal(s.err, 0);
	assert_string_equal(s.data, want);
	assert_true(s.pieces >= 2); /* as they came, 5 ms apart */
	assert_string_equal(s.body, "");
	assert_int_equal(s.order, 1);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(g[k].status, 200);
		assert_string_equal(g[k].body, "GET /after ");
		assert_int_equal(g[k].order, (unsigned)k + 2);
	}
	/* the stream asked for no coding and carried its header */
	assert_non_null(strstr(f.heads, "GET /events-close HTTP/1.1\r\n"));
	assert_non_null(strstr(f.heads, "Last-Event-ID: 41\r\n"));
	{
		const char *h = strstr(f.heads, "GET /events-close");
		const char *end = strstr(h, "\r\n\r\n");
		const char *ae = strstr(h, "Accept-Encoding");

		assert_true(!ae || ae > end); /* not in the stream's head */
		assert_non_null(strstr(strstr(f.heads, "GET /after"),
				       "Accept-Encoding: zstd\r\n"));
	}
	assert_int_equal(f.conns, 2); /* the stream's, then the GETs' */
	finish(&loop, c, &f);
}

static void test_hclient_stream_has_a_connection_of_its_own(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;
	static struct seen s, g[6];

	(void)state;
	memset(&s, 0, sizeof(s));
	memset(g, 0, sizeof(g));
	g_ended = 0;
	uv_loop_init(&loop);
	fake_start(&loop, &f);
	c = client(&loop, &f, 2, 2000);
	stream(c, "/events", &s, 0);
	for (int k = 0; k < 6; k++)
		assert_int_equal(hclient_get(c, "/beside", NULL, on_end, &g[k]), 0);
	run_until(&loop, &g[5].done);
	/* answered while the stream stays open on the other connection */
	for (int k = 0; k < 6; k++)
		assert_string_equal(g[k].body, "GET /beside ");
	assert_false(s.done);
	while (s.pieces < 2)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(s.heads, 1);
	hclient_close(c);
	assert_true(s.done);
	assert_string_equal(s.detail, "cancelled");
	finish(&loop, NULL, &f);
}

static void test_hclient_stream_idle_timeout_and_errors(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;
	static struct seen s, m;
	uint64_t t0;

	(void)state;
	memset(&s, 0, sizeof(s));
	memset(&m, 0, sizeof(m));
	uv_loop_init(&loop);
	fake_start(&loop, &f);
	c = client(&loop, &f, 2, 5000);
	/* a silent stream ends after idle_ms, not timeout_ms, and is not
	 * sent again */
	t0 = uv_hrtime();
	stream(c, "/silent", &s, 60);
	run_until(&loop, &s.done);
	assert_int_equal(s.heads, 1);
	assert_int_equal(s.err, ERR_IO);
	assert_non_null(strstr(s.detail, "timeout"));
	assert_true(uv_hrtime() - t0 < 3000000000ull);
	assert_int_equal(f.conns, 1);
	/* a non-2xx answer to a stream comes whole, not in pieces */
	stream(c, "/missing", &m, 0);
	run_until(&loop, &m.done);
	assert_int_equal(m.heads, 0);
	assert_int_equal(m.pieces, 0);
	assert_int_equal(m.status, 404);
	assert_non_null(strstr(m.body, "not found"));
	finish(&loop, c, &f);
}

static void test_hclient_close_from_on_data(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;
	static struct seen s;

	(void)state;
	memset(&s, 0, sizeof(s));
	uv_loop_init(&loop);
	fake_start(&loop, &f);
	c = client(&loop, &f, 1, 2000);
	s.close_on_data = c;
	stream(c, "/events", &s, 0);
	run_until(&loop, &s.done);
	assert_int_equal(s.pieces, 1);
	assert_string_equal(s.detail, "cancelled");
	finish(&loop, NULL, &f);
}

static void test_hclient_posts_once(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;
	static struct seen p, d, g;
	static const char body[] = "{\"edits\":[]}";
	struct hclient_req q = {
		.method = "POST", .target = "/v1/worlds/1/edits",
		.headers = "Content-Type: application/json\r\n"
			   "Authorization: Bearer t0k\r\n",
		.body = body, .body_len = sizeof(body) - 1, .once = 1 };

	(void)state;
	memset(&p, 0, sizeof(p));
	memset(&d, 0, sizeof(d));
	memset(&g, 0, sizeof(g));
	uv_loop_init(&loop);
	fake_start(&loop, &f);
	c = client(&loop, &f, 1, 2000);
	assert_int_equal(hclient_request(c, &q, on_end, &p), 0);
	run_until(&loop, &p.done);
	assert_int_equal(p.status, 200);
	assert_string_equal(p.body, "POST /v1/worlds/1/edits {\"edits\":[]}");
	assert_non_null(strstr(f.heads, "Content-Length: 12\r\n"));
	assert_non_null(strstr(f.heads, "Authorization: Bearer t0k\r\n"));
	assert_non_null(strstr(f.heads, "Content-Type: application/json\r\n"));
	/* a dropped connection: the POST fails at once, a GET is re-sent.
	 * The POST went on the kept connection; libcurl would send it again
	 * on a new one (a reused connection that died), which the client
	 * stops before the write: one POST /drop reached the server */
	q.target = "/drop";
	assert_int_equal(hclient_request(c, &q, on_end, &d), 0);
	run_until(&loop, &d.done);
	assert_int_equal(d.err, ERR_IO);
	assert_int_equal(d.status, 0);
	assert_non_null(strstr(d.detail, "closed"));
	{
		const char *h = strstr(f.heads, "POST /drop");

		assert_non_null(h);
		assert_null(strstr(h + 1, "POST /drop"));
	}
	assert_int_equal(hclient_get(c, "/drop", NULL, on_end, &g), 0);
	run_until(&loop, &g.done);
	assert_int_equal(g.err, ERR_IO);
	assert_true(f.conns >= 3); /* tried again on new connections */
	finish(&loop, c, &f);
}

static void test_hclient_request_rejects_bad_input(void **state)
{
	uv_loop_t loop;
	struct hclient *c;
	const char *detail;
	struct hclient_req q = { .target = "/a" };
	static struct seen s;

	(void)state;
	uv_loop_init(&loop);
	assert_int_equal(hclient_create(&loop, "http://127.0.0.1:9", NULL, &c,
					&detail), 0);
	q.method = "HEAD";
	assert_int_equal(hclient_request(c, &q, on_end, &s), ERR_INVAL);
	q.method = "get";
	assert_int_equal(hclient_request(c, &q, on_end, &s), ERR_INVAL);
	q.method = "POST";
	q.headers = "X-A: 1\r\nX-B: 2";
	assert_int_equal(hclient_request(c, &q, on_end, &s), ERR_INVAL);
	q.headers = "X-A: 1\r\n\r\nGET / HTTP/1.1\r\n";
	assert_int_equal(hclient_request(c, &q, on_end, &s), ERR_INVAL);
	q.headers = "no colon\r\n";
	assert_int_equal(hclient_request(c, &q, on_end, &s), ERR_INVAL);
	q.headers = NULL;
	q.body_len = 3;
	assert_int_equal(hclient_request(c, &q, on_end, &s), ERR_INVAL);
	assert_int_equal(hclient_request(c, NULL, on_end, &s), ERR_INVAL);
	assert_int_equal(hclient_outstanding(c), 0);
	hclient_close(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evstream_parses_any_split),
		cmocka_unit_test(test_evstream_reset_bom_retry_and_stop),
		cmocka_unit_test(test_evstream_refuses_oversized_lines),
		cmocka_unit_test(test_editlog_pages_give_the_servers_hashes_and_versions),
		cmocka_unit_test(test_editlog_batch_chunks_in_first_touch_order),
		cmocka_unit_test(test_editlog_refuses_bad_pages),
		cmocka_unit_test(test_api_batch_parse),
		cmocka_unit_test(test_hclient_streams_pieces_until_the_end),
		cmocka_unit_test(test_hclient_stream_has_a_connection_of_its_own),
		cmocka_unit_test(test_hclient_stream_idle_timeout_and_errors),
		cmocka_unit_test(test_hclient_close_from_on_data),
		cmocka_unit_test(test_hclient_posts_once),
		cmocka_unit_test(test_hclient_request_rejects_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
