/*
 * http.c - HTTP/1.1 connections: llhttp callbacks, per-connection state,
 * keep-alive, pipelining, timeouts and limits (see http.h).
 *
 * A connection keeps its requests in a queue in arrival order. A request
 * joins the queue when its first byte is parsed, goes to the handler when
 * complete, and leaves when its response has been written; responses are
 * written from the head of the queue, so they go out in request order even
 * when a later one is ready first. Parsing pauses (reading stops) while the
 * queue is full, and stops for good after a request that ends the
 * connection ("Connection: close", HTTP/1.0, a protocol error, draining).
 * The connection closes once the queue is empty: at once when all input
 * was read, else (as nginx's lingering close) with a shutdown of our side
 * and a short linger that reads and drops what the client still sends, so
 * that our last response is not lost to a reset.
 *
 * A response that can be written whole goes out with uv_try_write() from
 * the handler's call (no write request, no poll for writability); the rest
 * is queued with uv_write(). Accepted sockets come corked (loop.c), so
 * that a last response leaves with the FIN of the close() that follows it;
 * any other response uncorks its connection first. Idle, header and
 * linger timeouts share one timer per connection, restarted only when its
 * deadline moves earlier.
 *
 * Reads land in one buffer shared by all connections (everything runs on
 * the loop thread and is parsed at once); the bytes a request keeps (its
 * target, the headers of HTTP_HEADER_MAP, its body) are copied out, into a
 * request struct taken from a server-wide stack of freed ones, so that the
 * next request reuses the struct still in cache from the last.
 *
 * A stream (http_stream_open()) is a response whose head is written like
 * any other and whose connection then stays with it: parsing stops, each
 * http_stream_write() goes out with uv_try_write() or its own uv_write(),
 * and the connection closes when the client does, a write fails or stalls
 * for the idle timeout, the owner closes it, or the server drains (after
 * what is queued has been sent). The owner hears of it in closed(), run
 * when the connection is freed.
 */
#include "http.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <llhttp.h>
#include <uv.h>

#include "err.h"

#ifndef HTTP_READ_BUF
#define HTTP_READ_BUF (64 * 1024) /* allows unit tests to override */
#endif
#define LINGER_MS 2000     /* how long a closing connection drains input */
#define DRAIN_GRACE_MS 250 /* how long an idle connection may still send */
#define REJECT_MAX 64      /* connections answered 503 at the same time */
#define EXTRA_MAX 64       /* http_response.extra */
#define TAIL_MAX (EXTRA_MAX + 96)
#define FIELD_MAX 32       /* longest kept header name */
#define REQ_POOL 64        /* freed request structs kept for reuse */
#define FIRST_READS 16     /* connections read as accepted, per loop turn */

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

enum req_state { R_PARSING, R_HANDLING, R_READY, R_WRITING };

#define INLINE_TEXT 512   /* target and kept headers, before any malloc */
#define INLINE_ARENA 1024 /* http_req_alloc(), before any malloc */

struct chunk {
	struct chunk *next;
	max_align_t data[];
};

struct text {
	char *p;
	size_t len, cap;
	int heap;                         /* p was malloc'd */
};

struct req {
	struct http_req pub;
	struct req *prev, *next;          /* the connection's queue */
	struct conn *conn;
	enum req_state state;
	unsigned keepalive : 1;
	unsigned stream_head : 1;         /* the head of c->stream */
	unsigned url_done : 1;
	unsigned method_done : 1;
	uint8_t http_minor;
	uint64_t start;                   /* loop time of the first byte */
	struct text text;                 /* target, then kept header values */
	size_t url_len;
	size_t hoff[HTTP_H_COUNT], hlen[HTTP_H_COUNT];
	unsigned char hset[HTTP_H_COUNT];
	struct text body;
	char *arena;                      /* free space of the arena */
	size_t arena_left;
	struct chunk *chunks;             /* its malloc'd blocks */
	struct http_response resp;
	size_t bytes;                     /* response bytes to write */
	uv_write_t wr;
	uv_buf_t bufs[3];
	char tail[TAIL_MAX];
	/* not zeroed by req_new() */
	char text_inline[INLINE_TEXT];
	_Alignas(max_align_t) char arena_inline[INLINE_ARENA];
};

struct conn {
	uv_tcp_t tcp;                     /* handles' data point to the conn */
	uv_timer_t timer;
	uv_shutdown_t shut;
	llhttp_t parser;
	struct http_server *srv;
	struct conn *prev, *next;         /* the server's list */
	struct req *head, *tail;          /* requests in arrival order */
	struct req *cur;                  /* the one being parsed */
	unsigned nreqs;
	unsigned wpending;                /* uv_write requests in flight */
	unsigned ops;                     /* open handles, pending shutdown */
	int err_status;                   /* set by a parser callback */
	const char *err_detail;
	char field[FIELD_MAX];
	size_t field_len;
	int field_id;                     /* kept header being read, or -1 */
	size_t header_bytes;
	unsigned nheaders;
	uint64_t deadline;                /* loop time of the timeout, 0: none */
	uint64_t due;                     /* when the timer fires */
	char *left;                       /* unparsed input while paused */
	size_t left_len;
	char peer[48];
	struct http_stream *stream;       /* the open stream, if any */
	size_t held;                      /* the handler's, http_req_held() */
	unsigned fresh : 1;               /* no request begun yet */
	unsigned in_req : 1;              /* a request is partly received */
	unsigned head_timer : 1;          /* the deadline is the header timeout */
	unsigned linger : 1;              /* input may follow: close gracefully */
	unsigned corked : 1;              /* TCP_CORK from the listener: uncork() */
	unsigned reading : 1;
	unsigned parsing : 1;             /* inside conn_parse() */
	unsigned eof : 1;                 /* the client sent all it will */
	unsigned stopped : 1;             /* parse no more requests */
	unsigned closing : 1;
	unsigned lingering : 1;
	unsigned rejected : 1;
};

struct http_stream {
	struct conn *conn;
	struct http_stream_cb cb;
	size_t queued;                    /* bytes in uv_write()s in flight */
	unsigned open : 1;                /* the head is out: writes allowed */
	unsigned ending : 1;              /* end once the head is out (drain) */
};

/* One stream write that did not go out at once. */
struct swrite {
	uv_write_t wr;
	struct conn *conn;
	size_t len;
	void (*release)(void *arg);
	void *arg;
};

struct http_server {
	uv_loop_t *loop;
	struct http_limits lim;
	struct http_handler h;
	llhttp_settings_t settings;
	struct conn *conns;
	unsigned nconns, nrejected;
	struct http_stats st;
	char *rbuf;                       /* the shared read buffer */
	uint64_t first_reads_at;          /* read_first(): the loop turn's time */
	unsigned first_reads;             /* and its reads in that turn */
	struct req *free_reqs;            /* freed request structs, last on top */
	unsigned nfree_reqs;
	time_t date_sec;
	char date[48];
	int draining;
	int nodelay;                      /* 1: accepted sockets inherit TCP_NODELAY */
	int cork;                         /* 1: and TCP_CORK; 0: not known yet */
	void (*drain_done)(void *arg);
	void *drain_arg;
};

static const struct {
	const char *name;
	size_t len;
} header_names[HTTP_H_COUNT] = {
#define XX(id, name) { name, sizeof(name) - 1 },
	HTTP_HEADER_MAP(XX)
#undef XX
};

void http_limits_default(struct http_limits *l)
{
	l->max_connections = 10000;
	l->idle_timeout_ms = 60000;
	l->header_timeout_ms = 10000;
	l->max_url = 4096;
	l->max_header_bytes = 16384;
	l->max_headers = 100;
	l->max_body = 1 << 20;
	l->max_pipeline = 32;
	l->access_log = NULL;
}

const char *http_status_line(int status)
{
	switch (status) {
#define XX(code, text) case code: return "HTTP/1.1 " #code " " text "\r\n";
	HTTP_REASON_MAP(XX)
#undef XX
	}
	return "HTTP/1.1 500 Internal Server Error\r\n";
}

/* ---- small buffers ---------------------------------------------------- */

/* Room for n more bytes in t. */
static int text_reserve(struct text *t, size_t n)
{
	size_t cap = t->cap ? t->cap : 256;
	char *p;

	if (t->len + n <= t->cap)
		return 0;
	while (cap < t->len + n)
		cap *= 2;
	p = t->heap ? realloc(t->p, cap) : malloc(cap);
	if (!p)
		return ERR_NOMEM;
	if (!t->heap && t->len)
		memcpy(p, t->p, t->len);
	t->p = p;
	t->cap = cap;
	t->heap = 1;
	return 0;
}

static int text_add(struct text *t, const char *s, size_t n)
{
	if (text_reserve(t, n) < 0)
		return ERR_NOMEM;
	memcpy(t->p + t->len, s, n);
	t->len += n;
	return 0;
}

/* Append a copy of t's own bytes [off, off + n). */
static int text_dup(struct text *t, size_t off, size_t n)
{
	if (text_reserve(t, n) < 0)
		return ERR_NOMEM;
	memcpy(t->p + t->len, t->p + off, n);
	t->len += n;
	return 0;
}

void *http_req_alloc(struct http_req *pub, size_t n)
{
	struct req *r = container_of(pub, struct req, pub);
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (n > r->arena_left) {
		size_t cap = n > 4096 ? n : 4096;
		struct chunk *ch = malloc(sizeof(*ch) + cap);

		if (!ch)
			return NULL;
		ch->next = r->chunks;
		r->chunks = ch;
		r->arena = (char *)ch->data;
		r->arena_left = cap;
	}
	p = r->arena;
	r->arena += n;
	r->arena_left -= n;
	return p;
}

size_t *http_req_held(struct http_req *pub)
{
	return &container_of(pub, struct req, pub)->conn->held;
}

uint64_t http_req_age_ms(const struct http_req *pub)
{
	const struct req *r = container_of(pub, const struct req, pub);

	return uv_now(r->conn->srv->loop) - r->start;
}

/* ---- requests ---------------------------------------------------------- */

/* A request struct is some 3 KiB, past malloc's per-thread cache. The
 * server keeps the ones freed last on a stack and hands out the top one,
 * still in cache from the request just answered (on any connection). */
static struct req *req_new(struct conn *c)
{
	struct http_server *s = c->srv;
	struct req *r = s->free_reqs;

	if (r) {
		s->free_reqs = r->next;
		s->nfree_reqs--;
	} else if (!(r = malloc(sizeof(*r)))) {
		return NULL;
	}
	memset(r, 0, offsetof(struct req, text_inline));
	r->text.p = r->text_inline;
	r->text.cap = sizeof(r->text_inline);
	r->arena = r->arena_inline;
	r->arena_left = sizeof(r->arena_inline);
	r->conn = c;
	r->start = uv_now(c->srv->loop);
	r->pub.method = -1;
	r->pub.method_name = "-";
	r->pub.path = "";
	r->prev = c->tail;
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	c->nreqs++;
	return r;
}

static void req_free(struct req *r)
{
	struct conn *c = r->conn;
	struct http_server *s = c->srv;
	struct chunk *ch, *next;

	if ((r->state == R_READY || r->state == R_WRITING) && r->resp.release)
		r->resp.release(r->resp.arg);
	if (r->prev)
		r->prev->next = r->next;
	else
		c->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		c->tail = r->prev;
	if (c->cur == r)
		c->cur = NULL;
	c->nreqs--;
	for (ch = r->chunks; ch; ch = next) {
		next = ch->next;
		free(ch);
	}
	if (r->text.heap)
		free(r->text.p);
	free(r->body.p);
	if (s->nfree_reqs < REQ_POOL) {
		r->next = s->free_reqs;
		s->free_reqs = r;
		s->nfree_reqs++;
	} else {
		free(r);
	}
}

/* Point the public fields into the finished text buffer. */
static void req_publish(struct req *r)
{
	char *url, *q;
	size_t i;

	if (r->method_done) {
		r->pub.method = llhttp_get_method(&r->conn->parser);
		r->pub.method_name = llhttp_method_name(r->pub.method);
	}
	r->http_minor = llhttp_get_http_minor(&r->conn->parser);
	if (r->url_done) {
		url = r->text.p;
		if (*url != '/' &&
		    (!strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8))) {
			char *slash = strchr(strstr(url, "://") + 3, '/');

			url = slash ? slash : (char *)"/";
		}
		q = strchr(url, '?');
		if (q) {
			*q = '\0';
			r->pub.query = q + 1;
			r->pub.query_len = strlen(q + 1);
		}
		r->pub.path = url;
		r->pub.path_len = strlen(url);
	}
	for (i = 0; i < HTTP_H_COUNT; i++)
		r->pub.header[i] = r->hset[i] ? r->text.p + r->hoff[i] : NULL;
	r->pub.body = r->body.len ? r->body.p : NULL;
	r->pub.body_len = r->body.len;
}

/* ---- connection lifetime ----------------------------------------------- */

static void conn_arm(struct conn *c);
static void conn_flush(struct conn *c);
static void conn_parse_left(struct conn *c);

static void conn_maybe_free(struct conn *c)
{
	struct http_server *s = c->srv;

	if (!c->closing || c->ops || c->nreqs)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->rejected)
		s->nrejected--;
	else
		s->nconns--;
	if (c->stream) {
		struct http_stream *st = c->stream;

		c->stream = NULL;
		st->cb.closed(st->cb.arg);
		free(st);
	}
	free(c->left);
	free(c);
	if (s->draining && s->nconns + s->nrejected == 0 && s->drain_done) {
		void (*done)(void *) = s->drain_done;

		s->drain_done = NULL;
		done(s->drain_arg);
	}
}

static void on_handle_close(uv_handle_t *h)
{
	struct conn *c = h->data;

	c->ops--;
	conn_maybe_free(c);
}

/* Close now. Requests in the handler's hands, and writes in flight, are
 * freed when they come back. */
static void conn_close(struct conn *c)
{
	struct req *r, *next;

	if (c->closing)
		return;
	c->closing = 1;
	for (r = c->head; r; r = next) {
		next = r->next;
		if (r->state == R_PARSING || r->state == R_READY)
			req_free(r);
	}
	uv_close((uv_handle_t *)&c->tcp, on_handle_close);
	uv_close((uv_handle_t *)&c->timer, on_handle_close);
}

static void on_shutdown(uv_shutdown_t *sr, int status)
{
	struct conn *c = sr->data;

	c->ops--;
	if (status < 0)
		conn_close(c);
	conn_maybe_free(c);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void on_timer(uv_timer_t *t);

/*
 * Set the deadline ms from now (0: none). Timers are restarted lazily: only
 * when the deadline moves before the timer's due time; a timer that fires
 * early re-arms itself for the rest.
 */
static void conn_deadline(struct conn *c, uint64_t ms)
{
	c->deadline = ms ? uv_now(c->srv->loop) + ms : 0;
	if (!ms || (uv_is_active((uv_handle_t *)&c->timer) && c->due <= c->deadline))
		return;
	c->due = c->deadline;
	uv_timer_start(&c->timer, on_timer, ms, 0);
}

/* Close gracefully: our FIN after the last write, then drop input until
 * the client closes or LINGER_MS passes. */
static void conn_finish(struct conn *c)
{
	if (c->closing || c->lingering)
		return;
	c->lingering = 1;
	c->shut.data = c;
	if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
		conn_close(c);
		return;
	}
	c->ops++;
	if (c->eof) {
		conn_close(c); /* all input read: closing cannot reset */
		return;
	}
	if (!c->reading && uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
		c->reading = 1;
	conn_deadline(c, LINGER_MS);
}

static void conn_stop_reading(struct conn *c)
{
	if (c->reading) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = 0;
	}
}

/* ---- protocol errors ---------------------------------------------------- */

static void conn_error(struct conn *c, int status, const char *detail)
{
	struct http_server *s = c->srv;
	struct req *r = c->cur;

	if (!c->rejected)
		s->st.protocol_errors++;
	c->stopped = 1;
	c->linger = 1;
	c->in_req = 0;
	c->fresh = 0;
	conn_stop_reading(c);
	if (!r && !(r = req_new(c))) {
		conn_close(c);
		return;
	}
	c->cur = NULL;
	req_publish(r);
	r->keepalive = 0;
	r->state = R_HANDLING;
	s->h.error(s->h.ctx, &r->pub, status, detail);
}

/* Record a limit or resource failure from a parser callback. */
static int fail(struct conn *c, int status, const char *detail)
{
	c->err_status = status;
	c->err_detail = detail;
	return HPE_USER;
}

/* ---- llhttp callbacks --------------------------------------------------- */

static int on_message_begin(llhttp_t *p)
{
	struct conn *c = p->data;

	c->cur = req_new(c);
	if (!c->cur)
		return fail(c, 503, "out of memory");
	c->fresh = 0;
	c->in_req = 1;
	c->header_bytes = 0;
	c->nheaders = 0;
	c->field_len = 0;
	c->field_id = -1;
	return 0;
}

static int on_method_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	c->cur->method_done = 1;
	return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct req *r = c->cur;

	if (r->url_len + n > c->srv->lim.max_url)
		return fail(c, 414, "request target too long");
	if (text_add(&r->text, at, n) < 0)
		return fail(c, 503, "out of memory");
	r->url_len += n;
	return 0;
}

static int on_url_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	if (text_add(&c->cur->text, "", 1) < 0)
		return fail(c, 503, "out of memory");
	c->cur->url_done = 1;
	return 0;
}

static int count_header_bytes(struct conn *c, size_t n)
{
	c->header_bytes += n;
	return c->header_bytes > c->srv->lim.max_header_bytes;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	if (count_header_bytes(c, n))
		return fail(c, 431, "request headers too large");
	if (c->field_len + n <= FIELD_MAX)
		memcpy(c->field + c->field_len, at, n);
	c->field_len += n;
	return 0;
}

static int find_header(const char *name, size_t len)
{
	int i;

	for (i = 0; i < HTTP_H_COUNT; i++)
		if (header_names[i].len == len &&
		    !strncasecmp(header_names[i].name, name, len))
			return i;
	return -1;
}

/* Start a kept header's value; a repeat copies the earlier value first so
 * that the joined value is contiguous. */
static int on_header_field_complete(llhttp_t *p)
{
	struct conn *c = p->data;
	struct req *r = c->cur;
	int id;

	if (++c->nheaders > c->srv->lim.max_headers)
		return fail(c, 431, "too many request headers");
	id = c->field_len <= FIELD_MAX ? find_header(c->field, c->field_len) : -1;
	c->field_len = 0;
	c->field_id = id;
	if (id < 0)
		return 0;
	if (r->hset[id]) {
		size_t off = r->text.len, len = r->hlen[id];

		if (text_dup(&r->text, r->hoff[id], len) < 0 ||
		    text_add(&r->text, ", ", 2) < 0)
			return fail(c, 503, "out of memory");
		r->hoff[id] = off;
		r->hlen[id] = len + 2;
	} else {
		r->hoff[id] = r->text.len;
		r->hlen[id] = 0;
	}
	return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct req *r = c->cur;

	if (count_header_bytes(c, n))
		return fail(c, 431, "request headers too large");
	if (c->field_id < 0)
		return 0;
	if (text_add(&r->text, at, n) < 0)
		return fail(c, 503, "out of memory");
	r->hlen[c->field_id] += n;
	return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	if (c->field_id < 0)
		return 0;
	if (text_add(&c->cur->text, "", 1) < 0)
		return fail(c, 503, "out of memory");
	c->cur->hset[c->field_id] = 1;
	c->field_id = -1;
	return 0;
}

static int on_headers_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	if ((p->flags & F_CONTENT_LENGTH) &&
	    p->content_length > c->srv->lim.max_body) {
		fail(c, 413, "request body too large");
		return -1;
	}
	return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct req *r = c->cur;

	if (r->body.len + n > c->srv->lim.max_body)
		return fail(c, 413, "request body too large");
	if (text_add(&r->body, at, n) < 0)
		return fail(c, 503, "out of memory");
	return 0;
}

/* Pause after each request, so that conn_parse() can hand it over and
 * respect the pipeline limit. */
static int on_message_complete(llhttp_t *p)
{
	struct conn *c = p->data;
	struct req *r = c->cur;

	r->keepalive = llhttp_should_keep_alive(p) && !llhttp_get_upgrade(p) &&
		       !c->srv->draining;
	req_publish(r);
	c->in_req = 0;
	return HPE_PAUSED;
}

/* ---- parsing -------------------------------------------------------------- */

/* Hand the request just completed to the handler. */
static void dispatch(struct conn *c)
{
	struct http_server *s = c->srv;
	struct req *r = c->cur;

	c->cur = NULL;
	if (!r->keepalive)
		c->stopped = 1;
	r->state = R_HANDLING;
	s->h.request(s->h.ctx, &r->pub);
}

/* Parse up to len bytes; returns how many were used. Stops early when the
 * pipeline is full (the caller keeps the rest) or parsing ends. */
static size_t parse_some(struct conn *c, const char *data, size_t len)
{
	size_t done = 0;

	while (done < len && !c->stopped && !c->closing) {
		llhttp_errno_t e;

		if (c->nreqs >= c->srv->lim.max_pipeline && !c->in_req)
			break;
		e = llhttp_execute(&c->parser, data + done, len - done);
		if (e == HPE_OK)
			return len;
		if (e == HPE_PAUSED) {
			done = (size_t)(llhttp_get_error_pos(&c->parser) - data);
			llhttp_resume(&c->parser);
			dispatch(c);
			continue;
		}
		if (c->err_status)
			conn_error(c, c->err_status, c->err_detail);
		else if (e == HPE_PAUSED_H2_UPGRADE)
			conn_error(c, 400, "http/2 is not supported");
		else
			conn_error(c, 400, "malformed request");
		return len;
	}
	if (c->stopped && done < len)
		c->linger = 1; /* input after the last request is dropped */
	return c->stopped || c->closing ? len : done;
}

static size_t conn_parse(struct conn *c, const char *data, size_t len)
{
	size_t n;

	c->parsing = 1; /* answers given meanwhile must not re-enter */
	n = parse_some(c, data, len);
	c->parsing = 0;
	return n;
}

/* Continue with input kept while the pipeline was full. */
static void conn_parse_left(struct conn *c)
{
	size_t n;

	if (!c->left || c->nreqs >= c->srv->lim.max_pipeline)
		return;
	n = conn_parse(c, c->left, c->left_len);
	if (n < c->left_len && c->left) {
		memmove(c->left, c->left + n, c->left_len - n);
		c->left_len -= n;
		return;
	}
	free(c->left);
	c->left = NULL;
	if (c->eof)
		c->stopped = 1;
	if (!c->stopped && !c->closing && !c->reading &&
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
		c->reading = 1;
}

/* The client closed its side (or the socket failed): answer the requests
 * already complete, including any kept while paused, then close. */
static void conn_on_eof(struct conn *c)
{
	conn_stop_reading(c);
	c->eof = 1;
	if (c->lingering || c->stream) {
		conn_close(c); /* a stream's client went away */
		return;
	}
	if (c->cur) {
		req_free(c->cur); /* a partial request cannot complete */
		c->in_req = 0;
	}
	if (!c->left)
		c->stopped = 1;
	if (!c->head)
		conn_close(c);
	else
		conn_arm(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *c = h->data;

	(void)hint;
	buf->base = c->srv->rbuf;
	buf->len = HTTP_READ_BUF;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = st->data;
	size_t n;

	if (nread < 0) {
		conn_on_eof(c);
		return;
	}
	if (nread == 0 || c->lingering || c->closing)
		return;
	if (c->stopped) {
		c->linger = 1; /* dropped input: do not reset the last answer */
		return;
	}
	n = conn_parse(c, buf->base, (size_t)nread);
	if (n < (size_t)nread && !c->stopped && !c->closing) {
		c->left = malloc((size_t)nread - n);
		if (!c->left) {
			conn_close(c);
			return;
		}
		memcpy(c->left, buf->base + n, (size_t)nread - n);
		c->left_len = (size_t)nread - n;
		conn_stop_reading(c);
	}
	conn_arm(c);
}

/* ---- timers ----------------------------------------------------------------- */

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	uint64_t now = uv_now(c->srv->loop);

	if (!c->deadline)
		return;
	if (now < c->deadline) {
		c->due = c->deadline;
		uv_timer_start(t, on_timer, c->deadline - now, 0);
		return;
	}
	c->deadline = 0;
	if (c->lingering || c->fresh || !c->in_req)
		conn_close(c);
	else
		conn_error(c, 408, "request not received in time");
}

/* Pick the timer for the connection's state: the header timeout while a
 * request is being received (or none has begun), the idle timeout while
 * idle or writing, the linger while closing, none while the handler works. */
static void conn_arm(struct conn *c)
{
	const struct http_limits *l = &c->srv->lim;

	if (c->closing || c->lingering)
		return; /* conn_finish() set the linger */
	if (c->stream && !c->head) { /* a stalled stream write times out */
		conn_deadline(c, c->stream->queued ? l->idle_timeout_ms : 0);
		return;
	}
	if (c->srv->draining && !c->in_req && !c->head) {
		c->head_timer = 0;
		conn_deadline(c, DRAIN_GRACE_MS);
		return;
	}
	if (c->fresh || c->in_req) {
		if (!c->head_timer)
			conn_deadline(c, l->header_timeout_ms);
		c->head_timer = 1;
		return;
	}
	c->head_timer = 0;
	conn_deadline(c, !c->head || c->head->state == R_WRITING ?
			 l->idle_timeout_ms : 0);
}

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

static void log_access(struct http_server *s, struct req *r, size_t bytes)
{
	struct conn *c = r->conn;
	char when[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%d/%b/%Y:%H:%M:%S +0000", &tm);
	fprintf(s->lim.access_log, "%s - - [%s] \"%s %s%s%s HTTP/1.%d\" %d %zu %.3f\n",
		c->peer[0] ? c->peer : "-", when, r->pub.method_name,
		r->pub.path, r->pub.query ? "?" : "",
		r->pub.query ? r->pub.query : "", r->http_minor,
		r->resp.status, bytes,
		(double)(uv_now(s->loop) - r->start) / 1000.0);
}

static int has_body(const struct req *r)
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

/* Count a response as sent (status 0) and free it. */
static void req_done(struct req *r, int status)
{
	struct conn *c = r->conn;
	struct http_server *s = c->srv;
	int stream_head = r->stream_head;

	if (status == 0) {
		s->st.bytes_sent += r->bytes;
		if (s->lim.access_log)
			log_access(s, r, r->bytes);
	}
	req_free(r);
	if (stream_head && status == 0 && c->stream && !c->closing)
		stream_ready(c);
}

/* Whether r is the connection's last answer: no request follows it. */
static int is_last(const struct conn *c, const struct req *r)
{
	return c->stopped && !r->next && !c->in_req;
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
		conn_maybe_free(c);
		return;
	}
	if (c->stream) { /* stays open after its head */
		if (c->stream->ending && c->stream->open)
			conn_finish(c);
		else
			conn_arm(c);
		return;
	}
	if (!c->head && c->stopped && !c->in_req) {
		if (must_linger(c))
			conn_finish(c);
		else
			conn_close(c); /* nothing unread: close() cannot reset */
		return;
	}
	if (!c->parsing)
		conn_parse_left(c);
	conn_arm(c);
}

static void on_write(uv_write_t *wr, int status)
{
	struct req *r = container_of(wr, struct req, wr);
	struct conn *c = r->conn;

	c->wpending--;
	req_done(r, status);
	if (status < 0)
		conn_close(c);
	conn_after_write(c);
}

static size_t put(char *dst, const char *s)
{
	size_t n = strlen(s);

	memcpy(dst, s, n);
	return n;
}

/* The tail: extra, Date, Connection when needed, the blank line. */
static size_t format_tail(struct conn *c, struct req *r)
{
	size_t n = 0;

	if (r->resp.extra)
		n += put(r->tail, r->resp.extra);
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
static int closes_after(const struct conn *c, const struct req *r)
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
static int write_req(struct conn *c, struct req *r)
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
		n = uv_try_write((uv_stream_t *)&c->tcp, r->bufs, nb);
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
	struct req *r = c->head, *next;

	for (; r; r = next) {
		next = r->next;
		if (r->state == R_WRITING)
			continue;
		if (r->state != R_READY)
			break;
		if (write_req(c, r) < 0) {
			conn_close(c);
			return;
		}
	}
}

void http_respond(struct http_req *pub, const struct http_response *resp)
{
	struct req *r = container_of(pub, struct req, pub);
	struct conn *c = r->conn;

	assert(r->state == R_HANDLING);
	assert(!resp->extra || strlen(resp->extra) <= EXTRA_MAX); /* cheap */
	r->resp = *resp;
	r->state = R_READY;
	if (c->closing) {
		req_free(r);
		conn_maybe_free(c);
		return;
	}
	conn_flush(c);
	conn_after_write(c);
}

/* ---- streams --------------------------------------------------------------------- */

int http_stream_open(struct http_req *pub, const struct http_response *resp,
		     const struct http_stream_cb *cb, struct http_stream **out)
{
	struct req *r = container_of(pub, struct req, pub);
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
		conn_close(c);
		conn_maybe_free(c);
		return;
	}
	if (!c->lingering)
		c->stream->cb.writable(c->stream->cb.arg);
	if (!c->closing)
		conn_arm(c);
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
		n = len ? uv_try_write((uv_stream_t *)&c->tcp, &b, 1) : 0;
		if (n == UV_EAGAIN)
			n = 0;
		if (n >= 0 && (size_t)n == len) {
			if (release)
				release(arg);
			return 0;
		}
		if (n < 0) {
			conn_close(c);
			return ERR_IO;
		}
	}
	sw = malloc(sizeof(*sw));
	if (!sw) {
		conn_close(c); /* part of buf may be out: the stream is broken */
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
		conn_close(c);
		return ERR_IO;
	}
	c->ops++;
	if (!s->queued)
		conn_deadline(c, c->srv->lim.idle_timeout_ms);
	s->queued += b.len;
	return 0;
}

size_t http_stream_queued(const struct http_stream *s)
{
	return s->queued;
}

void http_stream_close(struct http_stream *s)
{
	conn_close(s->conn);
}

/* ---- peers and credentials ----------------------------------------------------------- */

int http_req_peer(const struct http_req *pub, struct sockaddr_storage *out)
{
	const struct req *r = container_of(pub, const struct req, pub);
	int len = sizeof(*out);

	if (r->conn->closing ||
	    uv_tcp_getpeername(&r->conn->tcp, (struct sockaddr *)out, &len) < 0)
		return ERR_IO;
	return 0;
}

int http_peer_is_loopback(const struct sockaddr *sa)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		const uint8_t *a = in6->sin6_addr.s6_addr;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		       (!memcmp(a, mapped, sizeof(mapped)) && a[12] == 127);
	}
	return 0;
}

int http_bearer_matches(const char *h, const char *token)
{
	size_t i, n, m;
	unsigned diff;

	if (!h || !token || !*token)
		return 0;
	while (*h == ' ' || *h == '\t')
		h++;
	if (strncasecmp(h, "bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
		return 0;
	for (h += 6; *h == ' ' || *h == '\t'; h++)
		;
	n = strlen(h);
	while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	m = strlen(token);
	diff = n != m;
	for (i = 0; i < m; i++) /* no early exit: the time depends on m only */
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < n ? h[i] : 0);
	return diff == 0;
}

/* ---- server ---------------------------------------------------------------------- */

int http_server_create(struct uv_loop_s *loop, const struct http_limits *l,
		       const struct http_handler *h, struct http_server **out)
{
	struct http_server *s;

	if (!loop || !l || !h || !h->request || !h->error || !out ||
	    l->max_pipeline == 0)
		return ERR_INVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ERR_NOMEM;
	s->rbuf = malloc(HTTP_READ_BUF);
	if (!s->rbuf) {
		free(s);
		return ERR_NOMEM;
	}
	s->loop = loop;
	s->lim = *l;
	s->h = *h;
	llhttp_settings_init(&s->settings);
	s->settings.on_message_begin = on_message_begin;
	s->settings.on_method_complete = on_method_complete;
	s->settings.on_url = on_url;
	s->settings.on_url_complete = on_url_complete;
	s->settings.on_header_field = on_header_field;
	s->settings.on_header_field_complete = on_header_field_complete;
	s->settings.on_header_value = on_header_value;
	s->settings.on_header_value_complete = on_header_value_complete;
	s->settings.on_headers_complete = on_headers_complete;
	s->settings.on_body = on_body;
	s->settings.on_message_complete = on_message_complete;
	*out = s;
	return 0;
}

static void peer_name(struct conn *c)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) < 0)
		return;
	if (ss.ss_family == AF_INET6)
		uv_ip6_name((struct sockaddr_in6 *)&ss, c->peer, sizeof(c->peer));
	else
		uv_ip4_name((struct sockaddr_in *)&ss, c->peer, sizeof(c->peer));
}

/*
 * TCP_NODELAY on c. A listener with it set (loop.c sets it) passes it to
 * the sockets it accepts on Linux: the first connection checks, and later
 * ones skip the system call when it held.
 */
static void no_delay(struct http_server *s, struct conn *c)
{
	uv_os_fd_t fd;
	int on = 0;
	socklen_t len = sizeof(on);

	if (s->nodelay == 1)
		return;
	if (s->nodelay == 0 && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 &&
	    getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len) == 0 && on) {
		s->nodelay = 1;
		return;
	}
	s->nodelay = -1;
	uv_tcp_nodelay(&c->tcp, 1);
}

/* Whether c is corked (see loop.c): the first connection asks, and later
 * ones take its answer. */
static void cork_check(struct http_server *s, struct conn *c)
{
	uv_os_fd_t fd;
	int on = 0;
	socklen_t len = sizeof(on);

	if (s->cork == 0 && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 &&
	    getsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, &len) == 0)
		s->cork = on ? 1 : -1;
	c->corked = s->cork == 1;
}

/*
 * The listener hands over a connection once its first bytes are in
 * (TCP_DEFER_ACCEPT, loop.c), so they can be read at once instead of after
 * the socket has been added to epoll and reported readable. A request that
 * is answered from the cache with Connection: close is then done before
 * its socket ever reaches epoll. Only bytes are taken here; EOF and errors
 * are left for libuv's own read to report, once.
 *
 * libuv accepts until the backlog is empty, and a client that reconnects
 * as soon as it is answered keeps it from ever being empty: answering every
 * connection in place would keep the loop from its other sockets and its
 * timers. So at most FIRST_READS connections are read here for each value
 * of uv_now(), which libuv sets once per turn of the loop (turns shorter
 * than a millisecond share one); the others wait for epoll as before.
 */
static void read_first(struct conn *c)
{
	struct http_server *s = c->srv;
	uv_os_fd_t fd;
	uv_buf_t buf;
	ssize_t n;

	if (s->first_reads_at != uv_now(s->loop)) {
		s->first_reads_at = uv_now(s->loop);
		s->first_reads = 0;
	}
	if (s->first_reads == FIRST_READS ||
	    uv_fileno((uv_handle_t *)&c->tcp, &fd) < 0)
		return;
	s->first_reads++;
	on_alloc((uv_handle_t *)&c->tcp, 0, &buf);
	do
		n = read(fd, buf.base, buf.len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		on_read((uv_stream_t *)&c->tcp, n, &buf);
}

int http_server_accept(struct http_server *s, struct uv_stream_s *listener)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return ERR_NOMEM;
	c->srv = s;
	c->tcp.data = c->timer.data = c;
	uv_tcp_init(s->loop, &c->tcp);
	uv_timer_init(s->loop, &c->timer);
	c->ops = 2;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	llhttp_init(&c->parser, HTTP_REQUEST, &s->settings);
	c->parser.data = c;
	c->fresh = 1;
	c->rejected = s->nconns >= s->lim.max_connections;
	if (c->rejected)
		s->nrejected++;
	else
		s->nconns++;
	if (uv_accept(listener, (uv_stream_t *)&c->tcp) < 0 || s->draining ||
	    (c->rejected && s->nrejected > REJECT_MAX)) {
		conn_close(c);
		return 0;
	}
	s->st.connections_total++;
	no_delay(s, c);
	cork_check(s, c);
	if (s->lim.access_log)
		peer_name(c);
	if (c->rejected) {
		s->st.rejected++;
		conn_error(c, 503, "too many connections");
		return 0;
	}
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
		conn_close(c);
		return 0;
	}
	c->reading = 1;
	read_first(c);
	conn_arm(c);
	return 0;
}

/* Requests already sent still get answers (with Connection: close, see
 * on_message_complete); an idle connection closes after DRAIN_GRACE_MS, so
 * that a request racing the drain is answered rather than reset. */
static void drain_conn(struct conn *c)
{
	c->linger = 1;
	if (c->stream) {
		c->stream->ending = 1; /* conn_after_write() ends it once open */
		if (c->stream->open && !c->closing)
			conn_finish(c);
		return;
	}
	conn_arm(c);
}

void http_server_drain(struct http_server *s, void (*done)(void *arg), void *arg)
{
	struct conn *c, *next;

	s->draining = 1;
	s->drain_done = done;
	s->drain_arg = arg;
	for (c = s->conns; c; c = next) {
		next = c->next;
		drain_conn(c);
	}
	if (s->nconns + s->nrejected == 0 && s->drain_done) {
		s->drain_done = NULL;
		done(arg);
	}
}

void http_server_close_all(struct http_server *s)
{
	struct conn *c, *next;

	for (c = s->conns; c; c = next) {
		next = c->next;
		conn_close(c);
	}
}

void http_server_stats(const struct http_server *s, struct http_stats *st)
{
	*st = s->st;
	st->connections_open = s->nconns;
}

void http_server_destroy(struct http_server *s)
{
	if (!s)
		return;
	assert(!s->conns);
	while (s->free_reqs) {
		struct req *r = s->free_reqs;

		s->free_reqs = r->next;
		free(r);
	}
	free(s->rbuf);
	free(s);
}
