/*
 * test_client_hclient.c - tests of the HTTP client pool
 * (client-sample/hclient.c, on libcurl) against a scripted server in the
 * same libuv loop on 127.0.0.1: many answers over a bounded pool matched
 * to their requests, answers split
 * into single bytes, zstd and chunked bodies, 304, dropped connections
 * re-sent with backoff, "Connection: close", timeouts, a server that is
 * down, and cancellation. Every test ends with uv_loop_close() == 0, so a
 * handle left open fails it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <zstd.h>

#include "../client-sample/hclient.h"
#include "err.h"
#include "util.h"

enum mode {
	M_ECHO,        /* 200, body = the request target */
	M_SPLIT,       /* the same, one byte per write */
	M_ZSTD,        /* the same, zstd-coded */
	M_CHUNKED,     /* the same, chunked transfer coding */
	M_304,         /* 304 with an ETag, no body */
	M_DROP_FIRST,  /* the first connection closes on its first read */
	M_HALF_FIRST,  /* the first connection sends half an answer, closes */
	M_CLOSE_EACH,  /* answer one request per connection, then close */
	M_SILENT,      /* read, never answer */
};

struct fake {
	uv_tcp_t server;
	enum mode mode;
	int port;
	unsigned conns;    /* connections accepted */
	unsigned answered;
};

struct fconn {
	uv_tcp_t tcp;
	uv_shutdown_t shut;
	struct fake *f;
	unsigned index;    /* 0 for the first connection */
	int closing;
	int draining;      /* answered its last request: wait for EOF */
	size_t len;
	char buf[16384];
};

struct wbuf {
	uv_write_t req;
	char data[];
};

/* ---- the scripted server ---- */

static void fconn_closed(uv_handle_t *h)
{
	free(h->data);
}

static void fconn_close(struct fconn *c)
{
	if (!c->closing) {
		c->closing = 1;
		uv_close((uv_handle_t *)&c->tcp, fconn_closed);
	}
}

static void written(uv_write_t *w, int status)
{
	(void)status;
	free(container_of(w, struct wbuf, req));
}

static void send_bytes(struct fconn *c, const void *p, size_t n)
{
	struct wbuf *w = malloc(sizeof(*w) + n);
	uv_buf_t b = uv_buf_init(w->data, (unsigned)n);

	memcpy(w->data, p, n);
	if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, written))
		free(w);
}

static void answer(struct fconn *c, const char *target)
{
	char head[512], body[256];
	size_t blen = strlen(target);
	int n;

	switch (c->f->mode) {
	case M_ZSTD:
		blen = ZSTD_compress(body, sizeof(body), target, strlen(target), 3);
		n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\n"
			     "Content-Length: %zu\r\nContent-Encoding: zstd\r\n"
			     "X-Cache: miss\r\n\r\n", blen);
		send_bytes(c, head, (size_t)n);
		send_bytes(c, body, blen);
		break;
	case M_CHUNKED:
		n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\n"
			     "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n"
			     "0\r\n\r\n", (unsigned)blen, target);
		send_bytes(c, head, (size_t)n);
		break;
	case M_304:
		n = snprintf(head, sizeof(head), "HTTP/1.1 304 Not Modified\r\n"
			     "ETag: \"v1\"\r\nCache-Control: max-age=9\r\n\r\n");
		send_bytes(c, head, (size_t)n);
		break;
	case M_HALF_FIRST:
		if (c->index == 0) {
			n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\n"
				     "Content-Length: 100\r\n\r\npartial");
			send_bytes(c, head, (size_t)n);
			fconn_close(c);
			return;
		}
		/* fall through */
	default:
		n = snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\n"
			     "Content-Length: %zu\r\nETag: \"e-%s\"\r\n"
			     "X-Cache: hit\r\nCache-Control: public, max-age=7\r\n"
			     "%s\r\n%s", blen, target + 1,
			     c->f->mode == M_CLOSE_EACH ? "Connection: close\r\n" :
			     "", target);
		if (c->f->mode == M_SPLIT)
			for (int k = 0; k < n; k++)
				send_bytes(c, head + k, 1);
		else
			send_bytes(c, head, (size_t)n);
	}
	c->f->answered++;
	if (c->f->mode == M_CLOSE_EACH) {
		/* close the way servers should: FIN first, then wait for EOF,
		 * so unread requests do not turn the close into a reset */
		c->draining = 1;
		uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, NULL);
	}
}

static char *find_blank_line(char *p, size_t n)
{
	for (size_t k = 0; k + 4 <= n; k++)
		if (memcmp(p + k, "\r\n\r\n", 4) == 0)
			return p + k;
	return NULL;
}

/* Answer every complete request head in c->buf. */
static void serve(struct fconn *c)
{
	char *end;

	while (!c->closing && !c->draining &&
	       (end = find_blank_line(c->buf, c->len)) != NULL) {
		size_t used = (size_t)(end + 4 - c->buf);
		char target[128] = "";

		sscanf(c->buf, "GET %127s ", target);
		answer(c, target);
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
	if (c->f->mode == M_SILENT || c->draining) {
		c->len = 0;
		return;
	}
	if (c->f->mode == M_DROP_FIRST && c->index == 0) {
		fconn_close(c);
		return;
	}
	serve(c);
}

static void on_conn(uv_stream_t *server, int status)
{
	struct fake *f = server->data;
	struct fconn *c = calloc(1, sizeof(*c));

	assert_int_equal(status, 0);
	c->f = f;
	c->index = f->conns++;
	uv_tcp_init(server->loop, &c->tcp);
	c->tcp.data = c;
	assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
	uv_read_start((uv_stream_t *)&c->tcp, fconn_alloc, fconn_read);
}

static void fake_start(uv_loop_t *loop, struct fake *f, enum mode m)
{
	struct sockaddr_in a;
	struct sockaddr_storage got;
	int len = sizeof(got);

	memset(f, 0, sizeof(*f));
	f->mode = m;
	uv_ip4_addr("127.0.0.1", 0, &a);
	uv_tcp_init(loop, &f->server);
	f->server.data = f;
	assert_int_equal(uv_tcp_bind(&f->server, (const struct sockaddr *)&a, 0), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&f->server, 64, on_conn), 0);
	uv_tcp_getsockname(&f->server, (struct sockaddr *)&got, &len);
	f->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
}

/* Close the server side's connections still open (the client's handles
 * are all closing by now). */
static void close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h) && h->type == UV_TCP)
		fconn_close(h->data);
}

/* ---- the client side ---- */

#define MAXREQ 64

struct result {
	int done;
	int err;
	int status;
	char detail[96];
	char body[128];
	size_t body_len;
	char etag[32];
	int xcache;
	long max_age;
	int zstd;
	unsigned attempts;
	size_t wire;
};

struct run {
	struct result r[MAXREQ];
	unsigned n, done;
};

static struct run *g_run;

static void on_resp(void *arg, struct hclient_resp *r)
{
	struct result *res = arg;

	res->done = 1;
	res->err = r->err;
	res->status = r->status;
	snprintf(res->detail, sizeof(res->detail), "%s",
		 r->detail ? r->detail : "");
	res->body_len = r->body_len;
	if (r->body_len && r->body_len < sizeof(res->body)) {
		memcpy(res->body, r->body, r->body_len);
		res->body[r->body_len] = 0;
	}
	snprintf(res->etag, sizeof(res->etag), "%s", r->etag ? r->etag : "");
	res->xcache = r->xcache;
	res->max_age = r->max_age;
	res->zstd = r->zstd;
	res->attempts = r->attempts;
	res->wire = r->wire_len;
	g_run->done++;
}

static struct hclient *client(uv_loop_t *loop, int port,
			      const struct hclient_opts *o)
{
	char url[64];
	struct hclient *c;
	const char *detail;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	assert_int_equal(hclient_create(loop, url, o, &c, &detail), 0);
	return c;
}

/* Send n requests "/r/K" and run until all are answered. */
static void exchange(uv_loop_t *loop, struct hclient *c, struct run *run,
		     unsigned n)
{
	char target[32];

	g_run = run;
	memset(run, 0, sizeof(*run));
	run->n = n;
	for (unsigned k = 0; k < n; k++) {
		snprintf(target, sizeof(target), "/r/%u", k);
		assert_int_equal(hclient_get(c, target, NULL, on_resp, &run->r[k]),
				 0);
	}
	while (run->done < n)
		assert_true(uv_run(loop, UV_RUN_ONCE) || run->done == n);
}

/* Close the client and the fake server; the loop must end clean. */
static void finish(uv_loop_t *loop, struct hclient *c, struct fake *f)
{
	hclient_close(c);
	if (f)
		uv_close((uv_handle_t *)&f->server, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
	/* server-side connections still open: close them too */
	uv_walk(loop, close_walk, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(loop), 0);
}

static void check_echo(const struct run *run, unsigned n)
{
	char want[32];

	for (unsigned k = 0; k < n; k++) {
		snprintf(want, sizeof(want), "/r/%u", k);
		assert_int_equal(run->r[k].err, 0);
		assert_int_equal(run->r[k].status, 200);
		assert_string_equal(run->r[k].body, want);
	}
}

/* ---- tests ---- */

static struct run run_storage;

static void test_hclient_matches_answers_over_a_bounded_pool(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient_opts o;
	struct hclient *c;
	struct hclient_stats st;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&loop, &f, M_ECHO);
	hclient_opts_default(&o);
	o.connections = 2;
	o.pipeline = 8;
	c = client(&loop, f.port, &o);
	exchange(&loop, c, &run_storage, 40);
	check_echo(&run_storage, 40);
	assert_string_equal(run_storage.r[5].etag, "\"e-r/5\"");
	assert_int_equal(run_storage.r[5].xcache, HCLIENT_XCACHE_HIT);
	assert_int_equal(run_storage.r[5].max_age, 7);
	assert_int_equal(run_storage.r[5].attempts, 1);
	assert_true(run_storage.r[5].wire > 100);
	hclient_stats(c, &st);
	assert_int_equal(st.requests, 40);
	assert_int_equal(st.responses, 40);
	assert_true(st.connects >= 1 && st.connects <= 2);
	assert_true(f.conns <= 2);
	finish(&loop, c, &f);
}

static void test_hclient_reassembles_answers_split_into_bytes(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&loop, &f, M_SPLIT);
	c = client(&loop, f.port, NULL);
	exchange(&loop, c, &run_storage, 12);
	check_echo(&run_storage, 12);
	finish(&loop, c, &f);
}

static void test_hclient_decodes_zstd_and_chunked_bodies(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&loop, &f, M_ZSTD);
	c = client(&loop, f.port, NULL);
	exchange(&loop, c, &run_storage, 6);
	check_echo(&run_storage, 6);
	assert_true(run_storage.r[0].zstd);
	assert_int_equal(run_storage.r[0].xcache, HCLIENT_XCACHE_MISS);
	finish(&loop, c, &f);

	uv_loop_init(&loop);
	fake_start(&loop, &f, M_CHUNKED);
	c = client(&loop, f.port, NULL);
	exchange(&loop, c, &run_storage, 6);
	check_echo(&run_storage, 6);
	finish(&loop, c, &f);
}

static void test_hclient_passes_304_without_body(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&loop, &f, M_304);
	c = client(&loop, f.port, NULL);
	exchange(&loop, c, &run_storage, 5);
	for (unsigned k = 0; k < 5; k++) {
		assert_int_equal(run_storage.r[k].status, 304);
		assert_int_equal(run_storage.r[k].body_len, 0);
		assert_string_equal(run_storage.r[k].etag, "\"v1\"");
		assert_int_equal(run_storage.r[k].max_age, 9);
	}
	finish(&loop, c, &f);
}

static void test_hclient_resends_requests_of_a_dropped_connection(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient_opts o;
	struct hclient *c;
	struct hclient_stats st;

	(void)state;
	for (int m = M_DROP_FIRST; m <= M_HALF_FIRST; m++) {
		uv_loop_init(&loop);
		fake_start(&loop, &f, (enum mode)m);
		hclient_opts_default(&o);
		o.connections = 1;
		o.backoff_ms = 5;
		c = client(&loop, f.port, &o);
		exchange(&loop, c, &run_storage, 10);
		check_echo(&run_storage, 10);
		assert_int_equal(run_storage.r[0].attempts, 2);
		hclient_stats(c, &st);
		assert_int_equal(st.drops, 1);
		assert_true(st.resent >= 1);
		assert_int_equal(f.conns, 2);
		finish(&loop, c, &f);
	}
}

static void test_hclient_reopens_after_connection_close(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient_opts o;
	struct hclient *c;
	struct hclient_stats st;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&loop, &f, M_CLOSE_EACH);
	hclient_opts_default(&o);
	o.connections = 2;
	c = client(&loop, f.port, &o);
	exchange(&loop, c, &run_storage, 8);
	check_echo(&run_storage, 8);
	for (unsigned k = 0; k < 8; k++)
		assert_int_equal(run_storage.r[k].attempts, 1); /* not charged */
	hclient_stats(c, &st);
	assert_int_equal(st.drops, 0);
	assert_int_equal(f.conns, 8);
	finish(&loop, c, &f);
}

static void test_hclient_times_out_a_silent_server(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient_opts o;
	struct hclient *c;

	(void)state;
	uv_loop_init(&loop);
	fake_start(&loop, &f, M_SILENT);
	hclient_opts_default(&o);
	o.connections = 1;
	o.timeout_ms = 50;
	o.attempts = 2;
	o.backoff_ms = 1;
	c = client(&loop, f.port, &o);
	exchange(&loop, c, &run_storage, 3);
	for (unsigned k = 0; k < 3; k++) {
		assert_int_equal(run_storage.r[k].err, ERR_IO);
		assert_int_equal(run_storage.r[k].status, 0);
		assert_non_null(strstr(run_storage.r[k].detail, "timeout"));
	}
	assert_int_equal(run_storage.r[0].attempts, 2);
	finish(&loop, c, &f);
}

static void test_hclient_reports_a_server_that_is_down(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient_opts o;
	struct hclient *c;
	int port;
	uint64_t t0;

	(void)state;
	/* a port that was just free: listen, note it, close */
	uv_loop_init(&loop);
	fake_start(&loop, &f, M_ECHO);
	port = f.port;
	uv_close((uv_handle_t *)&f.server, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	hclient_opts_default(&o);
	o.connections = 3;
	o.backoff_ms = 5;
	c = client(&loop, port, &o);
	t0 = uv_hrtime();
	exchange(&loop, c, &run_storage, 4);
	for (unsigned k = 0; k < 4; k++) {
		assert_int_equal(run_storage.r[k].err, ERR_IO);
		assert_non_null(strstr(run_storage.r[k].detail, "connect"));
	}
	assert_true(uv_hrtime() - t0 < 5000000000ull);
	finish(&loop, c, NULL);
}

static void test_hclient_close_cancels_outstanding_requests(void **state)
{
	uv_loop_t loop;
	struct fake f;
	struct hclient *c;
	char target[16];

	(void)state;
	uv_loop_init(&loop);
	fake_start(&loop, &f, M_SILENT);
	c = client(&loop, f.port, NULL);
	g_run = &run_storage;
	memset(&run_storage, 0, sizeof(run_storage));
	for (unsigned k = 0; k < 20; k++) {
		snprintf(target, sizeof(target), "/r/%u", k);
		assert_int_equal(hclient_get(c, target, NULL, on_resp,
					     &run_storage.r[k]), 0);
	}
	for (int k = 0; k < 5; k++)
		uv_run(&loop, UV_RUN_NOWAIT);
	assert_int_equal(hclient_outstanding(c), 20);
	hclient_close(c);
	assert_int_equal(run_storage.done, 20);
	for (unsigned k = 0; k < 20; k++)
		assert_string_equal(run_storage.r[k].detail, "cancelled");
	uv_close((uv_handle_t *)&f.server, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	uv_walk(&loop, close_walk, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_hclient_rejects_bad_urls_and_targets(void **state)
{
	uv_loop_t loop;
	struct hclient *c;
	const char *detail;
	static const char *bad[] = { "ftp://x", "http://", "https://", "http://h:0",
				     "http://h:70000", "http://h:80x",
				     "http://[::1", "http://h/a b" };

	(void)state;
	uv_loop_init(&loop);
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
		assert_int_equal(hclient_create(&loop, bad[k], NULL, &c, &detail),
				 ERR_INVAL);
	assert_int_equal(hclient_create(&loop, "http://127.0.0.1:9/pre/", NULL,
					&c, &detail), 0);
	assert_string_equal(hclient_authority(c), "127.0.0.1:9");
	hclient_close(c);
	assert_int_equal(hclient_create(&loop, "https://[::1]/pre", NULL,
					&c, &detail), 0);
	assert_string_equal(hclient_authority(c), "[::1]");
	hclient_close(c);
	assert_int_equal(hclient_create(&loop, "https://example.invalid:8443",
					NULL, &c, &detail), 0);
	assert_int_equal(hclient_get(c, "no-slash", NULL, on_resp, NULL),
			 ERR_INVAL);
	assert_int_equal(hclient_get(c, "/a\r\nX: y", NULL, on_resp, NULL),
			 ERR_INVAL);
	assert_int_equal(hclient_get(c, "/a", "\"x\"\r\n", on_resp, NULL),
			 ERR_INVAL);
	assert_int_equal(hclient_outstanding(c), 0);
	hclient_close(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hclient_matches_answers_over_a_bounded_pool),
		cmocka_unit_test(test_hclient_reassembles_answers_split_into_bytes),
		cmocka_unit_test(test_hclient_decodes_zstd_and_chunked_bodies),
		cmocka_unit_test(test_hclient_passes_304_without_body),
		cmocka_unit_test(test_hclient_resends_requests_of_a_dropped_connection),
		cmocka_unit_test(test_hclient_reopens_after_connection_close),
		cmocka_unit_test(test_hclient_times_out_a_silent_server),
		cmocka_unit_test(test_hclient_reports_a_server_that_is_down),
		cmocka_unit_test(test_hclient_close_cancels_outstanding_requests),
		cmocka_unit_test(test_hclient_rejects_bad_urls_and_targets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
