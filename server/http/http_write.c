/*
 * http_write.c - HTTP/1.1 responses: request order, the header tail (extra,
 * Date, Connection), writes, corking and streams (see http.h and
 * http_int.h). Each response written is logged by http_log.c; parsing is
 * http_parse.c's; closing and timeouts are http.c's, called from here once
 * a response is out.
 *
 * Responses are written from the head of the connection's queue, so they
 * go out in request order even when a later one is ready first. A response
 * that can be written whole goes out with uv_try_write() from the
 * handler's call (no write request, no poll for writability); the rest is
 * queued with uv_write(). Accepted sockets come corked (loop.c), so that a
 * last response leaves with the FIN of the close() that follows it; any
 * other response uncorks its connection first.
 *
 * A stream (http_stream_open()) is a response whose head is written like
 * any other and whose connection then stays with it: parsing stops, each
 * http_stream_write() goes out with uv_try_write() or its own uv_write(),
 * and the connection closes when the client does, a write fails or stalls
 * for the idle timeout, the owner closes it, or the server drains (after
 * what is queued has been sent). The owner hears of it in closed(), run
 * when the connection is freed (http.c).
 */
#include "http_int.h"

#include <assert.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"

/* ---- responses ---------------------------------------------------------------- */

static const char *date_line(struct http_server *s)
{
	time_t now = time(NULL);

	if (now != s->date_sec) {
		struct tm tm;

		gmtime_r(&now, &tm);
		strftime(s->date, sizeof(s->date),
			 "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
		s->date_sec = now;
	}
	return s->date;
}

static int has_body(const struct conn_req *r)
{
	int st = r->resp.status;

	return r->pub.method != HTTP_HEAD && st != 204 && st != 304 &&
	       r->resp.body.len > 0;
}

/* A stream's head is out: let its owner write. */
static void stream_ready(struct conn *c)
{
	struct http_stream *st = c->stream;

	st->open = 1;
	if (!st->ending)
		st->cb.writable(st->cb.arg);
}

/* Count a response as sent (status 0: log it, time it) and free it. */
static void req_done(struct conn_req *r, int status)
{
	struct conn *c = r->conn;
	struct http_server *s = c->srv;
	int stream_head = r->stream_head;

	if (status == 0) {
		uint64_t ns = uv_hrtime() - r->start_ns;

		s->st.bytes_sent += r->bytes;
		if (s->lim.access_log)
			http__log_access(s, r, has_body(r) ? r->resp.body.len : 0, ns);
		if (s->h.done)
			s->h.done(s->h.ctx, &r->pub, r->resp.status, ns);
	}
	http__req_free(r);
	if (stream_head && status == 0 && c->stream && !c->closing)
		stream_ready(c);
}

/* Whether r is the connection's last answer: no request follows it. */
static int is_last(const struct conn *c, const struct conn_req *r)
{
	return c->stopped && list_last(&c->reqs) == &r->node && !c->in_req;
}

/* Whether closing now could reset the last answer: input may still come. */
static int must_linger(const struct conn *c)
{
	return c->linger && !c->eof;
}

/* After responses went out: close a finished connection, or go on with
 * input kept while the pipeline was full, and re-arm the timer. */
static void conn_after_write(struct conn *c)
{
	if (c->closing) {
		http__conn_maybe_free(c);
		return;
	}
	if (c->stream) { /* stays open after its head */
		if (c->stream->ending && c->stream->open)
			http__conn_finish(c);
		else
			http__conn_arm(c);
		return;
	}
	if (list_empty(&c->reqs) && c->stopped && !c->in_req) {
		if (must_linger(c))
			http__conn_finish(c);
		else
			http__conn_close(c); /* nothing unread: close() cannot reset */
		return;
	}
	if (!c->parsing)
		http__conn_parse_left(c);
	http__conn_arm(c);
}

static void on_write(uv_write_t *wr, int status)
{
	struct conn_req *r = container_of(wr, struct conn_req, wr);
	struct conn *c = r->conn;

	c->wpending--;
	req_done(r, status);
	if (status < 0)
		http__conn_close(c);
	conn_after_write(c);
}

static size_t put(char *dst, const char *s)
{
	size_t n = strlen(s);

	memcpy(dst, s, n);
	return n;
}

/* The tail: extra, the node's name, Date, Connection when needed, the
 * blank line. */
static size_t format_tail(struct conn *c, struct conn_req *r)
{
	size_t n = 0;

	if (r->resp.extra)
		n += put(r->tail, r->resp.extra);
	n += put(r->tail + n, c->srv->node_line);
	n += put(r->tail + n, date_line(c->srv));
	if (is_last(c, r) || r->stream_head)
		n += put(r->tail + n, "Connection: close\r\n");
	else if (r->http_minor == 0)
		n += put(r->tail + n, "Connection: keep-alive\r\n");
	n += put(r->tail + n, "\r\n");
	assert(n < sizeof(r->tail));
	return n;
}

/* Whether the connection closes as soon as r has gone out whole (see
 * conn_after_write()): r is its last answer and no input is left to drain. */
static int closes_after(const struct conn *c, const struct conn_req *r)
{
	return is_last(c, r) && !c->stream && !must_linger(c);
}

/* Before an answer that is not followed by close(): corked, it would wait
 * for the kernel's 200 ms ceiling. */
static void uncork(struct conn *c)
{
	uv_os_fd_t fd;
	int off = 0;

	c->corked = 0;
	if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
}

/*
 * Write r: at once with uv_try_write() when nothing is queued before it
 * (the common case: no write request, no poll for writability), the rest
 * with uv_write(). Returns 1 when r went out whole (and is freed), 0 when
 * queued, -1 on error (r freed; the caller closes the connection).
 */
static int write_req(struct conn *c, struct conn_req *r)
{
	unsigned nb = has_body(r) ? 3 : 2, i = 0;
	size_t tail = format_tail(c, r);
	int n = 0;

	r->bufs[0] = uv_buf_init((char *)r->resp.head.base, (unsigned)r->resp.head.len);
	r->bufs[1] = uv_buf_init(r->tail, (unsigned)tail);
	r->bufs[2] = uv_buf_init((char *)r->resp.body.base, (unsigned)r->resp.body.len);
	r->bytes = r->bufs[0].len + r->bufs[1].len + (nb == 3 ? r->bufs[2].len : 0);
	r->state = R_WRITING;
	if (c->corked && !closes_after(c, r))
		uncork(c);
	if (!c->wpending) {
		n = c->mem ? http__mem_write(c, r->bufs, nb) :
			     uv_try_write((uv_stream_t *)&c->tcp, r->bufs, nb);
		if (n >= 0 && (size_t)n == r->bytes) {
			req_done(r, 0);
			return 1;
		}
		if (n < 0 && n != UV_EAGAIN)
			goto fail;
		for (n = n < 0 ? 0 : n; i < nb && (size_t)n >= r->bufs[i].len; i++)
			n -= (int)r->bufs[i].len;
		r->bufs[i].base += n;
		r->bufs[i].len -= (unsigned)n;
	}
	r->wr.data = r;
	if ((n = uv_write(&r->wr, (uv_stream_t *)&c->tcp, r->bufs + i, nb - i, on_write)) < 0)
		goto fail;
	c->wpending++;
	return 0;
fail:
	/* No on_write() will come for r (the peer reset, say): free it here, or
	 * the connection, waiting for its last request, is never freed. */
	req_done(r, n);
	return -1;
}

/* Write every ready response that is next in request order. */
static void conn_flush(struct conn *c)
{
	struct list *it, *next;

	list_foreach_safe(it, next, &c->reqs) {
		struct conn_req *r = http__req_of(it);

		if (r->state == R_WRITING)
			continue;
		if (r->state != R_READY)
			break;
		if (write_req(c, r) < 0) {
			http__conn_close(c);
			return;
		}
	}
}

void http_respond(struct http_req *pub, const struct http_response *resp)
{
	struct conn_req *r = container_of(pub, struct conn_req, pub);
	struct conn *c = r->conn;

	assert(r->state == R_HANDLING);
	assert(!resp->extra || strlen(resp->extra) <= EXTRA_MAX); /* cheap */
	r->resp = *resp;
	r->state = R_READY;
	if (c->closing) {
		http__req_free(r);
		http__conn_maybe_free(c);
		return;
	}
	conn_flush(c);
	conn_after_write(c);
}

/* ---- streams --------------------------------------------------------------------- */

int http_stream_open(struct http_req *pub, const struct http_response *resp,
		     const struct http_stream_cb *cb, struct http_stream **out)
{
	struct conn_req *r = container_of(pub, struct conn_req, pub);
	struct conn *c = r->conn;
	struct http_stream *s;

	assert(r->state == R_HANDLING && cb && cb->writable && cb->closed);
	if (c->closing || c->lingering || c->stream)
		return ERR_IO;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ERR_NOMEM;
	s->conn = c;
	s->cb = *cb;
	s->ending = c->srv->draining;
	c->stream = s;
	c->stopped = 1;
	r->stream_head = 1;
	*out = s;
	http_respond(pub, resp);
	return 0;
}

static void on_stream_write(uv_write_t *wr, int status)
{
	struct swrite *sw = container_of(wr, struct swrite, wr);
	struct conn *c = sw->conn;

	c->ops--;
	if (c->stream)
		c->stream->queued -= sw->len;
	if (sw->release)
		sw->release(sw->arg);
	free(sw);
	if (status < 0 || c->closing) {
		http__conn_close(c);
		http__conn_maybe_free(c);
		return;
	}
	if (!c->lingering)
		c->stream->cb.writable(c->stream->cb.arg);
	if (!c->closing)
		http__conn_arm(c);
}

int http_stream_write(struct http_stream *s, const void *buf, size_t len,
		      void (*release)(void *arg), void *arg)
{
	struct conn *c = s->conn;
	uv_buf_t b = uv_buf_init((char *)buf, (unsigned)len);
	struct swrite *sw;
	int n = 0;

	if (!s->open || c->closing || c->lingering)
		return ERR_IO;
	c->srv->st.bytes_sent += len;
	if (!s->queued) {
		n = !len ? 0 : c->mem ? http__mem_write(c, &b, 1) :
			   uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
		if (n == UV_EAGAIN)
			n = 0;
		if (n >= 0 && (size_t)n == len) {
			if (release)
				release(arg);
			return 0;
		}
		if (n < 0) {
			http__conn_close(c);
			return ERR_IO;
		}
	}
	sw = malloc(sizeof(*sw));
	if (!sw) {
		http__conn_close(c); /* part of buf may be out: the stream is broken */
		return ERR_IO;
	}
	b.base += n;
	b.len -= (unsigned)n;
	sw->conn = c;
	sw->len = b.len;
	sw->release = release;
	sw->arg = arg;
	if (uv_write(&sw->wr, (uv_stream_t *)&c->tcp, &b, 1, on_stream_write) < 0) {
		free(sw);
		http__conn_close(c);
		return ERR_IO;
	}
	c->ops++;
	if (!s->queued)
		http__conn_deadline(c, c->srv->lim.idle_timeout_ms);
	s->queued += b.len;
	return 0;
}

size_t http_stream_queued(const struct http_stream *s)
{
	return s->queued;
}

void http_stream_close(struct http_stream *s)
{
	http__conn_close(s->conn);
}


int http__conn_continue(struct conn *c)
{
	static const char line[] = "HTTP/1.1 100 Continue\r\n\r\n";
	uv_buf_t b = uv_buf_init((char *)line, sizeof(line) - 1);
	int n;

	if (c->wpending || c->stream)
		return 0;
	if (c->corked)
		uncork(c);
	n = c->mem ? http__mem_write(c, &b, 1) : uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
	return n > 0 && (size_t)n < b.len ? -1 : 0;
}
