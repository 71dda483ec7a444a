/*
 * hclient.c - HTTP/1.1 client pool on libuv and llhttp (hclient.h).
 *
 * Each connection slot owns a TCP handle (re-initialised per connection),
 * a timer (connect and progress timeouts, then reconnect backoff), an
 * llhttp response parser and the FIFO of requests written on it. A slot
 * moves IDLE -> CONNECTING -> OPEN -> CLOSING -> IDLE, or after a failure
 * CLOSING -> BACKOFF -> IDLE, or DOWN once it has failed `attempts` times
 * in a row. Requests are re-queued only in the TCP close callback, so no
 * user callback ever runs inside hclient_get().
 *
 * on_message_complete pauses the parser, so each response is delivered
 * with the exact number of wire bytes it took, and parsing resumes after
 * the callback has run.
 *
 * A streaming request (on_data) is "exclusive": dispatch hands it only to
 * an open connection with nothing in flight and puts nothing beside it.
 * Its body pieces collect in r->body during llhttp_execute() and go to
 * on_data after each call returns (stream_flush()), never from inside the
 * parser, so on_data may close the client.
 */
#include "hclient.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>
#include <zstd.h>

#include "err.h"
#include "llhttp.h"
#include "util.h"

#define MAX_DELAY_MS 10000 /* backoff ceiling */

struct hreq {
	struct hreq *next;
	hclient_cb cb;
	hclient_data_cb on_data; /* streaming request, or NULL */
	void *arg;
	uint64_t idle_ms;   /* stream: silence allowed once the head came */
	unsigned once : 1;  /* never written twice */
	unsigned streaming : 1;    /* a 2xx head came: body goes to on_data */
	unsigned head_pending : 1; /* on_data not yet told of the head */
	uint64_t t0;        /* uv_hrtime() at submission */
	uint64_t t_sent;    /* uv_hrtime() when last handed to a connection */
	unsigned attempts;  /* failed tries so far */
	/* the response while it is parsed */
	int status;
	int zstd;           /* 1 zstd, -1 an unsupported coding */
	int xcache;
	long max_age;
	long retry_after;   /* Retry-After in s, -1 when absent */
	int replayed;       /* Idempotent-Replayed: true */
	int has_etag;
	char etag[96];
	uint8_t *body;
	size_t body_len, body_cap;
	size_t text_len;
	char text[];        /* the request as written */
};

struct queue {
	struct hreq *head, *tail;
	size_t n;
};

enum slot_state { S_IDLE, S_CONNECTING, S_OPEN, S_CLOSING, S_BACKOFF, S_DOWN };

struct slot {
	struct hclient *c;
	uv_tcp_t tcp;
	uv_timer_t timer;
	uv_connect_t conn_req;
	llhttp_t parser;
	enum slot_state state;
	int tcp_live;       /* tcp initialised and not yet closed */
	int failed;         /* closing after a failure (why says which) */
	unsigned fails;     /* consecutive failures */
	struct queue inflight; /* written, awaiting responses, in order */
	size_t msg_wire;    /* wire bytes of the response being parsed */
	size_t hint;        /* its Content-Length, 0 when unknown */
	char why[128];
	char hfield[32];
	size_t hfield_len;
	char hval[192];
	size_t hval_len;
	char rbuf[64 * 1024];
};

struct hclient {
	uv_loop_t *loop;
	struct hclient_opts o;
	struct sockaddr_storage addr;
	char authority[280];
	char prefix[256];
	struct queue pending;
	struct slot *slots;
	unsigned nconnecting;
	unsigned handles;   /* libuv handles still to close, once closing */
	int closing;
	ZSTD_DCtx *dctx;
	struct hclient_stats st;
};

struct wreq {
	uv_write_t req;
	struct slot *s;
	char data[];
};

static void on_timer(uv_timer_t *t);
static void handle_closed(uv_handle_t *h);
static void dispatch(struct hclient *c);
static void on_tcp_closed(uv_handle_t *h);

void hclient_opts_default(struct hclient_opts *o)
{
	*o = (struct hclient_opts){ .connections = 4, .pipeline = 8,
				    .timeout_ms = 10000, .attempts = 4,
				    .backoff_ms = 50, .max_body = 64u << 20 };
}

/* ---- queues ---- */

static void q_push(struct queue *q, struct hreq *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->n++;
}

static struct hreq *q_pop(struct queue *q)
{
	struct hreq *r = q->head;

	if (r) {
		q->head = r->next;
		if (!q->head)
			q->tail = NULL;
		q->n--;
		r->next = NULL;
	}
	return r;
}

/* Move all of src to the front of dst, in order. */
static void q_prepend(struct queue *dst, struct queue *src)
{
	if (!src->n)
		return;
	src->tail->next = dst->head;
	if (!dst->tail)
		dst->tail = src->tail;
	dst->head = src->head;
	dst->n += src->n;
	*src = (struct queue){ 0 };
}

/* ---- completion ---- */

static void resp_reset(struct hreq *r)
{
	free(r->body);
	r->body = NULL;
	r->body_len = r->body_cap = 0;
	r->status = r->zstd = r->has_etag = 0;
	r->streaming = r->head_pending = 0;
	r->xcache = HCLIENT_XCACHE_NONE;
	r->max_age = r->retry_after = -1;
	r->replayed = 0;
}

/* End r with a transport error: its callback, then free it. */
static void fail_req(struct hclient *c, struct hreq *r, const char *detail)
{
	struct hclient_resp resp = {
		.err = ERR_IO, .detail = detail, .max_age = -1, .retry_after = -1,
		.latency_ns = uv_hrtime() - r->t0, .attempts = r->attempts,
	};

	c->st.failed++;
	r->cb(r->arg, &resp);
	resp_reset(r);
	free(r);
}

/* Fail every request of q (emptied first, so callbacks see a clean state). */
static void fail_all(struct hclient *c, struct queue *q, const char *detail)
{
	struct queue todo = *q;
	char why[128];
	struct hreq *r;

	*q = (struct queue){ 0 };
	snprintf(why, sizeof(why), "%s", detail);
	while ((r = q_pop(&todo)) != NULL)
		fail_req(c, r, why);
}

uint8_t *hclient_resp_detach(struct hclient_resp *r, size_t *len)
{
	uint8_t *b = r->body;

	*len = r->body_len;
	r->body = NULL;
	r->body_len = 0;
	return b;
}

/* ---- zstd ---- */

/* Decode the zstd frames in src into a new buffer (*out, *out_len). */
static int unzstd(struct hclient *c, const uint8_t *src, size_t n,
		  uint8_t **out, size_t *out_len, const char **detail)
{
	unsigned long long sz = ZSTD_getFrameContentSize(src, n);
	size_t max = c->o.max_body, cap, len = 0;
	ZSTD_inBuffer in = { src, n, 0 };
	uint8_t *buf, *nb;

	if (sz == ZSTD_CONTENTSIZE_ERROR) {
		*detail = "zstd: not a zstd frame";
		return ERR_ZSTD;
	}
	if (sz != ZSTD_CONTENTSIZE_UNKNOWN && sz > max) {
		*detail = "zstd: decoded body too large";
		return ERR_TOOBIG;
	}
	cap = sz != ZSTD_CONTENTSIZE_UNKNOWN ? (size_t)sz + 1 : 4 * n + 4096;
	cap = cap > max ? max : cap;
	if (!c->dctx && !(c->dctx = ZSTD_createDCtx()))
		return ERR_NOMEM;
	ZSTD_DCtx_reset(c->dctx, ZSTD_reset_session_only);
	if (!(buf = malloc(cap)))
		return ERR_NOMEM;
	for (;;) {
		ZSTD_outBuffer ob = { buf, cap, len };
		size_t ret = ZSTD_decompressStream(c->dctx, &ob, &in);

		len = ob.pos;
		if (ZSTD_isError(ret)) {
			*detail = "zstd: corrupt frame";
			free(buf);
			return ERR_ZSTD;
		}
		if (ret == 0 && in.pos == in.size)
			break;
		if (ob.pos == ob.size) {
			if (cap >= max) {
				*detail = "zstd: decoded body too large";
				free(buf);
				return ERR_TOOBIG;
			}
			cap = cap > max / 2 ? max : cap * 2;
			if (!(nb = realloc(buf, cap))) {
				free(buf);
				return ERR_NOMEM;
			}
			buf = nb;
		} else if (in.pos == in.size) {
			*detail = "zstd: truncated frame";
			free(buf);
			return ERR_ZSTD;
		}
	}
	*out = buf;
	*out_len = len;
	return 0;
}

/* ---- slots ---- */

static void set_state(struct slot *s, enum slot_state st)
{
	if (s->state == S_CONNECTING)
		s->c->nconnecting--;
	if (st == S_CONNECTING)
		s->c->nconnecting++;
	s->state = st;
}

/* Close s's connection after a failure; requeueing happens once closed. */
static void slot_fail(struct slot *s, const char *fmt, const char *arg)
{
	if (s->state != S_CONNECTING && s->state != S_OPEN)
		return;
	snprintf(s->why, sizeof(s->why), fmt, arg);
	s->failed = 1;
	uv_timer_stop(&s->timer);
	set_state(s, S_CLOSING);
	uv_close((uv_handle_t *)&s->tcp, on_tcp_closed);
}

/* Close a healthy connection (server asked, or idle EOF). */
static void slot_close(struct slot *s)
{
	if (s->state != S_OPEN)
		return;
	s->failed = 0;
	uv_timer_stop(&s->timer);
	set_state(s, S_CLOSING);
	uv_close((uv_handle_t *)&s->tcp, on_tcp_closed);
}

/* The silence allowed now: a stream whose head has come may wait its
 * idle_ms; everything else timeout_ms. */
static uint64_t slot_timeout(const struct slot *s)
{
	const struct hreq *r = s->inflight.head;

	if (s->state == S_OPEN && r && r->streaming && r->idle_ms)
		return r->idle_ms;
	return s->c->o.timeout_ms;
}

static void arm_timeout(struct slot *s)
{
	if (s->state == S_CONNECTING || s->inflight.n)
		uv_timer_start(&s->timer, on_timer, slot_timeout(s), 0);
	else
		uv_timer_stop(&s->timer);
}

static void revive(struct hclient *c)
{
	for (unsigned k = 0; k < c->o.connections; k++) {
		if (c->slots[k].state == S_DOWN) {
			c->slots[k].state = S_IDLE;
			c->slots[k].fails = 0;
		}
	}
}

static int all_down(const struct hclient *c)
{
	for (unsigned k = 0; k < c->o.connections; k++)
		if (c->slots[k].state != S_DOWN)
			return 0;
	return 1;
}

/* After a failed connection: charge its requests, back off, maybe give up. */
static void after_failure(struct slot *s)
{
	struct hclient *c = s->c;
	struct queue retry = { 0 }, dead = { 0 };
	uint64_t delay;
	struct hreq *r;
	char why[128];

	memcpy(why, s->why, sizeof(why));
	c->st.drops++;
	while ((r = q_pop(&s->inflight)) != NULL) {
		resp_reset(r);
		r->attempts++;
		q_push(r->once || r->attempts >= c->o.attempts ? &dead : &retry,
		       r);
	}
	c->st.resent += retry.n;
	q_prepend(&c->pending, &retry);
	s->fails++;
	if (s->fails >= c->o.attempts) {
		s->state = S_DOWN;
	} else {
		unsigned sh = s->fails - 1 < 16 ? s->fails - 1 : 16;

		delay = c->o.backoff_ms << sh;
		delay = delay > MAX_DELAY_MS ? MAX_DELAY_MS : delay;
		s->state = S_BACKOFF;
		uv_timer_start(&s->timer, on_timer, delay, 0);
	}
	fail_all(c, &dead, why);
	if (!c->closing && all_down(c)) {
		revive(c);
		fail_all(c, &c->pending, why);
	}
}

static void on_tcp_closed(uv_handle_t *h)
{
	struct slot *s = h->data;
	struct hclient *c = s->c;

	s->tcp_live = 0;
	if (c->closing) {
		handle_closed(h);
		return;
	}
	if (s->failed) {
		after_failure(s);
	} else {
		/* closed in good order: what is left was never answered; it
		 * goes again, unless it may not be written twice */
		struct queue again = { 0 }, dead = { 0 };
		struct hreq *r;

		while ((r = q_pop(&s->inflight)) != NULL) {
			resp_reset(r);
			q_push(r->once ? &dead : &again, r);
		}
		q_prepend(&c->pending, &again);
		s->state = S_IDLE;
		fail_all(c, &dead, "connection closed before the answer");
	}
	if (!c->closing)
		dispatch(c);
}

static void on_timer(uv_timer_t *t)
{
	struct slot *s = container_of(t, struct slot, timer);
	char ms[32];

	if (s->state == S_BACKOFF) {
		s->state = S_IDLE;
		dispatch(s->c);
		return;
	}
	snprintf(ms, sizeof(ms), "%llu", (unsigned long long)slot_timeout(s));
	slot_fail(s, s->state == S_CONNECTING ? "connect: timeout after %s ms" :
		  "timeout: no response in %s ms", ms);
}

/* ---- writing ---- */

static void on_written(uv_write_t *w, int status)
{
	struct wreq *wr = container_of(w, struct wreq, req);

	if (status < 0 && status != UV_ECANCELED)
		slot_fail(wr->s, "write: %s", uv_strerror(status));
	free(wr);
}

/* Write the last k requests of s->inflight as one buffer. */
static void flush(struct slot *s, size_t k)
{
	struct hreq *r = s->inflight.head;
	size_t skip = s->inflight.n - k, len = 0;
	struct wreq *wr;
	uv_buf_t buf;
	int rc;

	for (size_t i = 0; i < skip; i++)
		r = r->next;
	for (struct hreq *q = r; q; q = q->next)
		len += q->text_len;
	if (!(wr = malloc(sizeof(*wr) + len))) {
		slot_fail(s, "write: %s", "out of memory");
		return;
	}
	wr->s = s;
	len = 0;
	for (uint64_t now = uv_hrtime(); r; r = r->next) {
		memcpy(wr->data + len, r->text, r->text_len);
		len += r->text_len;
		r->t_sent = now;
	}
	buf = uv_buf_init(wr->data, (unsigned)len);
	s->c->st.bytes_tx += len;
	rc = uv_write(&wr->req, (uv_stream_t *)&s->tcp, &buf, 1, on_written);
	if (rc < 0) {
		free(wr);
		slot_fail(s, "write: %s", uv_strerror(rc));
		return;
	}
	/* the clock runs from the oldest unanswered request: more writes
	 * behind it do not extend it, only bytes read do */
	if (!uv_is_active((uv_handle_t *)&s->timer))
		arm_timeout(s);
}

/* ---- reading ---- */

static struct hreq *current(llhttp_t *p)
{
	struct slot *s = p->data;

	return s->inflight.head;
}

static int on_message_begin(llhttp_t *p)
{
	struct slot *s = p->data;

	s->hfield_len = s->hval_len = 0;
	if (!s->inflight.head) {
		llhttp_set_error_reason(p, "response without a request");
		return HPE_USER;
	}
	resp_reset(s->inflight.head);
	return 0;
}

static void append(char *dst, size_t cap, size_t *len, const char *at,
		   size_t n)
{
	size_t room = cap - 1 - *len;

	n = n < room ? n : room;
	memcpy(dst + *len, at, n);
	*len += n;
	dst[*len] = 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
	struct slot *s = p->data;

	append(s->hfield, sizeof(s->hfield), &s->hfield_len, at, n);
	return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
	struct slot *s = p->data;

	append(s->hval, sizeof(s->hval), &s->hval_len, at, n);
	return 0;
}

static long parse_max_age(const char *v)
{
	for (; *v; v++) {
		if (strncasecmp(v, "max-age=", 8) == 0) {
			char *end;
			long n = strtol(v + 8, &end, 10);

			return end == v + 8 || n < 0 ? -1 : n;
		}
	}
	return -1;
}

/* Retry-After as delta-seconds (an HTTP date counts as absent: -1). */
static long parse_delta(const char *v)
{
	char *end;
	long n;

	if (*v < '0' || *v > '9')
		return -1;
	n = strtol(v, &end, 10);
	return *end || n < 0 ? -1 : n;
}

static int on_header_value_complete(llhttp_t *p)
{
	struct slot *s = p->data;
	struct hreq *r = current(p);
	const char *f = s->hfield, *v = s->hval;

	if (strcasecmp(f, "etag") == 0 && s->hval_len < sizeof(r->etag)) {
		memcpy(r->etag, v, s->hval_len + 1);
		r->has_etag = 1;
	} else if (strcasecmp(f, "content-encoding") == 0) {
		r->zstd = strcasecmp(v, "zstd") == 0 ? 1 :
			  strcasecmp(v, "identity") == 0 ? 0 : -1;
	} else if (strcasecmp(f, "x-cache") == 0) {
		r->xcache = strncasecmp(v, "hit", 3) == 0 ? HCLIENT_XCACHE_HIT :
			    strncasecmp(v, "miss", 4) == 0 ? HCLIENT_XCACHE_MISS :
			    HCLIENT_XCACHE_NONE;
	} else if (strcasecmp(f, "cache-control") == 0) {
		r->max_age = parse_max_age(v);
	} else if (strcasecmp(f, "retry-after") == 0) {
		r->retry_after = parse_delta(v);
	} else if (strcasecmp(f, "idempotent-replayed") == 0) {
		r->replayed = strcasecmp(v, "true") == 0;
	}
	s->hfield_len = s->hval_len = 0;
	s->hfield[0] = s->hval[0] = 0;
	return 0;
}

static int on_headers_complete(llhttp_t *p)
{
	struct slot *s = p->data;
	struct hreq *r = current(p);

	r->status = p->status_code;
	s->hint = 0;
	if (r->on_data && r->status >= 200 && r->status < 300) {
		if (r->zstd) {
			llhttp_set_error_reason(p, "content-coded stream");
			return HPE_USER;
		}
		r->streaming = r->head_pending = 1;
		return 0; /* pieces are flushed as they come: no bound here */
	}
	if (p->flags & F_CONTENT_LENGTH) {
		if (p->content_length > s->c->o.max_body) {
			llhttp_set_error_reason(p, "body too large");
			return HPE_USER;
		}
		s->hint = (size_t)p->content_length;
	}
	return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
	struct slot *s = p->data;
	struct hreq *r = current(p);
	size_t max = s->c->o.max_body;

	if (n > max - r->body_len) {
		llhttp_set_error_reason(p, "body too large");
		return HPE_USER;
	}
	if (r->body_len + n > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap :
			     s->hint ? s->hint : 16384;
		uint8_t *nb;

		while (cap < r->body_len + n)
			cap = cap > max / 2 ? max : cap * 2;
		if (!(nb = realloc(r->body, cap))) {
			llhttp_set_error_reason(p, "out of memory");
			return HPE_USER;
		}
		r->body = nb;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, at, n);
	r->body_len += n;
	return 0;
}

static int on_message_complete(llhttp_t *p)
{
	struct hreq *r = current(p);

	if (r->status < 200) { /* interim (1xx): the real answer follows */
		resp_reset(r);
		return 0;
	}
	return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
	.on_message_begin = on_message_begin,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_header_value_complete = on_header_value_complete,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

/* Hand the head request its complete response. */
static void deliver(struct slot *s)
{
	struct hclient *c = s->c;
	struct hreq *r = q_pop(&s->inflight);
	int keep = llhttp_should_keep_alive(&s->parser);
	struct hclient_resp resp = {
		.status = r->status, .etag = r->has_etag ? r->etag : NULL,
		.xcache = r->xcache, .max_age = r->max_age,
		.retry_after = r->retry_after, .replayed = r->replayed,
		.body = r->body, .body_len = r->body_len,
		.wire_len = s->msg_wire, .attempts = r->attempts + 1,
	};

	r->body = NULL;
	s->msg_wire = 0;
	s->fails = 0;
	revive(c);
	c->st.responses++;
	if (r->zstd < 0) {
		resp.err = ERR_CORRUPT;
		resp.detail = "http: unsupported content-encoding";
	} else if (r->zstd && resp.body_len) {
		uint8_t *out = NULL;
		size_t len = 0;

		resp.zstd = 1;
		resp.err = unzstd(c, resp.body, resp.body_len, &out, &len,
				  &resp.detail);
		free(resp.body);
		resp.body = out;
		resp.body_len = len;
	}
	c->st.bytes_decoded += resp.body_len;
	resp.latency_ns = uv_hrtime() - r->t0;
	resp.queued_ns = r->t_sent - r->t0;
	r->cb(r->arg, &resp);
	free(resp.body);
	free(r);
	if (!keep)
		slot_close(s);
}

static void on_alloc(uv_handle_t *h, size_t want, uv_buf_t *buf)
{
	struct slot *s = h->data;

	(void)want;
	*buf = uv_buf_init(s->rbuf, sizeof(s->rbuf));
}

static void on_eof(struct slot *s)
{
	llhttp_errno_t e = HPE_OK;

	if (s->inflight.n && llhttp_message_needs_eof(&s->parser))
		e = llhttp_finish(&s->parser);
	if (e == HPE_PAUSED) {
		deliver(s);
		if (s->c->closing || s->state != S_OPEN)
			return;
	}
	if (s->inflight.n)
		slot_fail(s, "%s", "connection closed by the server");
	else
		slot_close(s);
}

/*
 * Hand a streaming request its head and the body bytes parsed so far.
 * Returns 0 when on_data closed the client or this connection (r may be
 * gone then), 1 to go on.
 */
static int stream_flush(struct slot *s)
{
	struct hclient *c = s->c;
	struct hreq *r = s->inflight.head;
	uint8_t *b;
	size_t n, cap;

	if (!r || !r->streaming)
		return 1;
	if (r->head_pending) {
		r->head_pending = 0;
		r->on_data(r->arg, r->status, NULL, 0);
		if (c->closing || s->state != S_OPEN)
			return 0;
	}
	if (!r->body_len)
		return 1;
	/* the buffer leaves r during the call: closing frees r, not it */
	b = r->body;
	n = r->body_len;
	cap = r->body_cap;
	r->body = NULL;
	r->body_len = r->body_cap = 0;
	c->st.bytes_decoded += n;
	r->on_data(r->arg, r->status, b, n);
	if (c->closing || s->state != S_OPEN) {
		free(b);
		return 0;
	}
	r->body = b; /* keep it for the next pieces */
	r->body_cap = cap;
	return 1;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct slot *s = st->data;
	struct hclient *c = s->c;
	const char *at = buf->base;
	size_t left;

	if (nread == UV_EOF) {
		on_eof(s);
		return;
	}
	if (nread < 0) {
		slot_fail(s, "read: %s", uv_strerror((int)nread));
		return;
	}
	left = (size_t)nread;
	c->st.bytes_rx += left;
	while (left) {
		llhttp_errno_t e = llhttp_execute(&s->parser, at, left);
		const char *pos;

		if (e == HPE_OK) {
			s->msg_wire += left;
			if (!stream_flush(s))
				return;
			break;
		}
		if (e != HPE_PAUSED) {
			slot_fail(s, "http: bad response: %s",
				  llhttp_get_error_reason(&s->parser));
			return;
		}
		pos = llhttp_get_error_pos(&s->parser);
		s->msg_wire += (size_t)(pos - at);
		left -= (size_t)(pos - at);
		at = pos;
		llhttp_resume(&s->parser);
		if (!stream_flush(s))
			return;
		deliver(s);
		if (c->closing || s->state != S_OPEN)
			return;
	}
	arm_timeout(s);
	dispatch(c);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct slot *s = container_of(req, struct slot, conn_req);
	int rc;

	if (s->state != S_CONNECTING)
		return; /* closed meanwhile: timeout or hclient_close() */
	if (status < 0) {
		slot_fail(s, "connect: %s", uv_strerror(status));
		return;
	}
	set_state(s, S_OPEN);
	s->c->st.connects++;
	llhttp_init(&s->parser, HTTP_RESPONSE, &settings);
	s->parser.data = s;
	s->msg_wire = 0;
	if ((rc = uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read)) < 0) {
		slot_fail(s, "read: %s", uv_strerror(rc));
		return;
	}
	arm_timeout(s);
	dispatch(s->c);
}

static void start_connect(struct slot *s)
{
	struct hclient *c = s->c;
	int rc;

	if ((rc = uv_tcp_init(c->loop, &s->tcp)) < 0) {
		snprintf(s->why, sizeof(s->why), "socket: %s", uv_strerror(rc));
		s->state = S_DOWN;
		return;
	}
	s->tcp.data = s;
	s->tcp_live = 1;
	s->failed = 0;
	set_state(s, S_CONNECTING);
	uv_tcp_nodelay(&s->tcp, 1);
	rc = uv_tcp_connect(&s->conn_req, &s->tcp,
			    (const struct sockaddr *)&c->addr, on_connect);
	if (rc < 0)
		slot_fail(s, "connect: %s", uv_strerror(rc));
	else
		arm_timeout(s);
}

/* ---- dispatch ---- */

/* s carries a streaming request: nothing else goes on it. */
static int exclusive(const struct slot *s)
{
	return s->inflight.head && s->inflight.head->on_data;
}

static struct slot *least_busy(struct hclient *c)
{
	struct slot *best = NULL;

	for (unsigned k = 0; k < c->o.connections; k++) {
		struct slot *s = &c->slots[k];

		if (s->state != S_OPEN || s->inflight.n >= c->o.pipeline ||
		    exclusive(s))
			continue;
		if (!best || s->inflight.n < best->inflight.n)
			best = s;
	}
	return best;
}

static struct slot *idle_slot(struct hclient *c)
{
	for (unsigned k = 0; k < c->o.connections; k++)
		if (c->slots[k].state == S_IDLE)
			return &c->slots[k];
	return NULL;
}

static struct slot *free_slot(struct hclient *c)
{
	for (unsigned k = 0; k < c->o.connections; k++)
		if (c->slots[k].state == S_OPEN && !c->slots[k].inflight.n)
			return &c->slots[k];
	return NULL;
}

/*
 * Hand queued requests to connections: an idle open connection first; when
 * all are busy, open another while the queue exceeds what the connections
 * being opened will take; else pipeline on the least busy one. A streaming
 * request at the head of the queue waits for an open connection with
 * nothing in flight (opening one when none is being opened); the requests
 * behind it wait with it, so the order of submission holds.
 */
static void dispatch(struct hclient *c)
{
	size_t *added;
	unsigned n = c->o.connections;

	if (c->closing || !c->pending.n)
		return;
	added = calloc(n, sizeof(*added));
	if (!added)
		return; /* retried at the next event */
	while (c->pending.n) {
		struct slot *best, *idle;
		int free_conn;

		if (c->pending.head->on_data) {
			if (!(best = free_slot(c))) {
				if (!c->nconnecting && (idle = idle_slot(c)))
					start_connect(idle);
				break;
			}
			q_push(&best->inflight, q_pop(&c->pending));
			added[best - c->slots]++;
			continue;
		}
		best = least_busy(c);
		free_conn = best && best->inflight.n == 0;

		if (!free_conn &&
		    (size_t)c->nconnecting * c->o.pipeline < c->pending.n &&
		    (idle = idle_slot(c)) != NULL) {
			start_connect(idle);
			continue;
		}
		if (!best || (!free_conn && c->nconnecting))
			break;
		q_push(&best->inflight, q_pop(&c->pending));
		added[best - c->slots]++;
	}
	for (unsigned k = 0; k < n; k++)
		if (added[k])
			flush(&c->slots[k], added[k]);
	free(added);
}

/* A method: 1..16 of A-Z, not HEAD (whose answer has no body to parse). */
static int method_ok(const char *m)
{
	size_t n = strlen(m);

	return n >= 1 && n <= 16 && strspn(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == n &&
	       strcmp(m, "HEAD") != 0;
}

/* Extra header lines: "Name: value\r\n" each, no other CR or LF. */
static int headers_ok(const char *h)
{
	while (*h) {
		size_t n = strcspn(h, "\r\n");

		if (n == 0 || !memchr(h, ':', n) || h[n] != '\r' || h[n + 1] != '\n')
			return 0;
		h += n + 2;
	}
	return 1;
}

int hclient_request(struct hclient *c, const struct hclient_req *q,
		    hclient_cb cb, void *arg)
{
	const char *method = q && q->method ? q->method : "GET";
	const char *inm = q ? q->if_none_match : NULL;
	const char *extra = q && q->headers ? q->headers : "";
	int get = strcmp(method, "GET") == 0, n;
	char clen[48] = "";
	size_t cap;
	struct hreq *r;

	if (!c || !q || !q->target || q->target[0] != '/' || !cb ||
	    c->closing || strpbrk(q->target, " \r\n\t") || !method_ok(method) ||
	    (inm && strpbrk(inm, "\r\n")) || !headers_ok(extra) ||
	    (q->body_len && !q->body))
		return ERR_INVAL;
	if (!get || q->body_len)
		snprintf(clen, sizeof(clen), "Content-Length: %zu\r\n",
			 q->body_len);
	cap = strlen(method) + strlen(c->prefix) + strlen(q->target) +
	      strlen(c->authority) + strlen(extra) + strlen(clen) + 160 +
	      (inm ? strlen(inm) : 0);
	if (q->body_len > c->o.max_body || !(r = calloc(1, sizeof(*r) + cap +
							  q->body_len)))
		return q->body_len > c->o.max_body ? ERR_INVAL : ERR_NOMEM;
	/* streams ask for no coding: they are read piece by piece */
	n = snprintf(r->text, cap,
		     "%s %s%s HTTP/1.1\r\nHost: %s\r\n"
		     "%sUser-Agent: terrain-client\r\n%s%s%s%s%s\r\n",
		     method, c->prefix, q->target, c->authority,
		     q->on_data ? "" : "Accept-Encoding: zstd\r\n",
		     inm ? "If-None-Match: " : "", inm ? inm : "",
		     inm ? "\r\n" : "", extra, clen);
	if (n < 0 || (size_t)n >= cap) {
		free(r);
		return ERR_INVAL;
	}
	if (q->body_len)
		memcpy(r->text + n, q->body, q->body_len);
	r->text_len = (size_t)n + q->body_len;
	r->cb = cb;
	r->on_data = q->on_data;
	r->arg = arg;
	r->once = q->once || q->on_data;
	r->idle_ms = q->idle_ms;
	r->t0 = uv_hrtime();
	r->max_age = r->retry_after = -1;
	q_push(&c->pending, r);
	c->st.requests++;
	dispatch(c);
	return 0;
}

int hclient_get(struct hclient *c, const char *target,
		const char *if_none_match, hclient_cb cb, void *arg)
{
	struct hclient_req q = { .target = target,
				 .if_none_match = if_none_match };

	return hclient_request(c, &q, cb, arg);
}

/* ---- set-up and teardown ---- */

/* Split url into host, port and prefix. */
static int parse_url(struct hclient *c, const char *url, char *host,
		     size_t host_cap, int *port, const char **detail)
{
	const char *p, *h, *he, *slash;
	long v = 80;
	char *end;

	*detail = "url: expected http://HOST[:PORT][/PREFIX]";
	if (strncmp(url, "http://", 7) != 0)
		return ERR_INVAL;
	h = url + 7;
	if (*h == '[') {
		if (!(he = strchr(h, ']')))
			return ERR_INVAL;
		p = he + 1;
		h++;
	} else {
		he = h + strcspn(h, ":/");
		p = he;
	}
	if (he == h || (size_t)(he - h) >= host_cap)
		return ERR_INVAL;
	memcpy(host, h, (size_t)(he - h));
	host[he - h] = 0;
	if (*p == ':') {
		v = strtol(p + 1, &end, 10);
		if (end == p + 1 || v < 1 || v > 65535 || (*end && *end != '/'))
			return ERR_INVAL;
		p = end;
	}
	if (*p && *p != '/')
		return ERR_INVAL;
	*port = (int)v;
	slash = p;
	if (strlen(slash) >= sizeof(c->prefix) || strpbrk(slash, " \r\n\t?#"))
		return ERR_INVAL;
	snprintf(c->prefix, sizeof(c->prefix), "%s", slash);
	while (c->prefix[0] && c->prefix[strlen(c->prefix) - 1] == '/')
		c->prefix[strlen(c->prefix) - 1] = 0;
	snprintf(c->authority, sizeof(c->authority), "%.*s",
		 (int)(p - (url + 7)), url + 7);
	return 0;
}

static int resolve(struct hclient *c, const char *host, int port)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)&c->addr;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&c->addr;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	uv_getaddrinfo_t req;

	if (uv_ip4_addr(host, port, a4) == 0 || uv_ip6_addr(host, port, a6) == 0)
		return 0;
	if (uv_getaddrinfo(c->loop, &req, NULL, host, NULL, &hints) < 0)
		return ERR_IO;
	if (!req.addrinfo || req.addrinfo->ai_addrlen > sizeof(c->addr)) {
		uv_freeaddrinfo(req.addrinfo);
		return ERR_IO;
	}
	memcpy(&c->addr, req.addrinfo->ai_addr, req.addrinfo->ai_addrlen);
	if (c->addr.ss_family == AF_INET)
		a4->sin_port = htons((uint16_t)port);
	else
		a6->sin6_port = htons((uint16_t)port);
	uv_freeaddrinfo(req.addrinfo);
	return 0;
}

static int check_opts(const struct hclient_opts *o, const char **detail)
{
	if (o->connections < 1 || o->connections > 256)
		*detail = "connections: expected 1..256";
	else if (o->pipeline < 1 || o->pipeline > 64)
		*detail = "pipeline: expected 1..64";
	else if (o->attempts < 1 || o->timeout_ms < 1 || o->max_body < 1)
		*detail = "attempts, timeout and max_body must be positive";
	else
		return 0;
	return ERR_INVAL;
}

int hclient_create(struct uv_loop_s *loop, const char *url,
		   const struct hclient_opts *o, struct hclient **out,
		   const char **detail)
{
	struct hclient *c;
	char host[256];
	int port, rc;

	*detail = NULL;
	if (!loop || !url || !out)
		return ERR_INVAL;
	if (!(c = calloc(1, sizeof(*c))))
		return ERR_NOMEM;
	c->loop = loop;
	if (o)
		c->o = *o;
	else
		hclient_opts_default(&c->o);
	if ((rc = check_opts(&c->o, detail)) != 0 ||
	    (rc = parse_url(c, url, host, sizeof(host), &port, detail)) != 0)
		goto fail;
	if ((rc = resolve(c, host, port)) != 0) {
		*detail = "cannot resolve the server's host name";
		goto fail;
	}
	if (!(c->slots = calloc(c->o.connections, sizeof(*c->slots)))) {
		rc = ERR_NOMEM;
		goto fail;
	}
	for (unsigned k = 0; k < c->o.connections; k++) {
		c->slots[k].c = c;
		uv_timer_init(loop, &c->slots[k].timer);
		c->slots[k].timer.data = &c->slots[k];
	}
	*out = c;
	return 0;
fail:
	free(c);
	return rc;
}

size_t hclient_outstanding(const struct hclient *c)
{
	size_t n = c->pending.n;

	for (unsigned k = 0; k < c->o.connections; k++)
		n += c->slots[k].inflight.n;
	return n;
}

void hclient_stats(const struct hclient *c, struct hclient_stats *st)
{
	*st = c->st;
}

const char *hclient_authority(const struct hclient *c)
{
	return c->authority;
}

static void destroy(struct hclient *c)
{
	ZSTD_freeDCtx(c->dctx);
	free(c->slots);
	free(c);
}

static void handle_closed(uv_handle_t *h)
{
	struct slot *s = h->data;
	struct hclient *c = s->c;

	if (--c->handles == 0)
		destroy(c);
}

void hclient_close(struct hclient *c)
{
	struct queue all = { 0 };

	if (!c || c->closing)
		return;
	c->closing = 1;
	q_prepend(&all, &c->pending);
	for (unsigned k = 0; k < c->o.connections; k++) {
		struct queue *q = &c->slots[k].inflight;

		if (q->n) {
			/* append q to all, keeping submission order per slot */
			if (all.tail)
				all.tail->next = q->head;
			else
				all.head = q->head;
			all.tail = q->tail;
			all.n += q->n;
			*q = (struct queue){ 0 };
		}
	}
	fail_all(c, &all, "cancelled");
	c->handles = 1; /* held while closing, dropped below */
	for (unsigned k = 0; k < c->o.connections; k++) {
		struct slot *s = &c->slots[k];

		s->state = S_CLOSING; /* no slot_close()/slot_fail() from now */
		uv_timer_stop(&s->timer);
		c->handles++;
		uv_close((uv_handle_t *)&s->timer, handle_closed);
		if (s->tcp_live) {
			c->handles++;
			if (!uv_is_closing((uv_handle_t *)&s->tcp))
				uv_close((uv_handle_t *)&s->tcp, on_tcp_closed);
		}
	}
	if (--c->handles == 0)
		destroy(c);
}
