/*
 * hclient_conn.c - the connection slots of the HTTP client pool (hclient.h;
 * the overview is in hclient.c): connecting with a timeout, writing
 * pipelined requests, parsing responses with llhttp and delivering them
 * (zstd bodies decoded), streaming bodies, and closing a slot after a
 * failure, charging its requests and backing off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>
#include <zstd.h>

#include "err.h"
#include "hclient_int.h"
#include "llhttp.h"
#include "util.h"

#define MAX_DELAY_MS 10000 /* backoff ceiling */

struct wreq {
	uv_write_t req;
	struct slot *s;
	char data[];
};

static void on_timer(uv_timer_t *t);

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
	uv_close((uv_handle_t *)&s->tcp, hclient__on_tcp_closed);
}

/* Close a healthy connection (server asked, or idle EOF). */
static void slot_close(struct slot *s)
{
	if (s->state != S_OPEN)
		return;
	s->failed = 0;
	uv_timer_stop(&s->timer);
	set_state(s, S_CLOSING);
	uv_close((uv_handle_t *)&s->tcp, hclient__on_tcp_closed);
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
	while ((r = hclient__q_pop(&s->inflight)) != NULL) {
		hclient__resp_reset(r);
		r->attempts++;
		hclient__q_push(r->once || r->attempts >= c->o.attempts ? &dead : &retry,
				r);
	}
	c->st.resent += retry.n;
	hclient__q_prepend(&c->pending, &retry);
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
	hclient__fail_all(c, &dead, why);
	if (!c->closing && all_down(c)) {
		revive(c);
		hclient__fail_all(c, &c->pending, why);
	}
}

void hclient__on_tcp_closed(uv_handle_t *h)
{
	struct slot *s = h->data;
	struct hclient *c = s->c;

	s->tcp_live = 0;
	if (c->closing) {
		hclient__handle_closed(h);
		return;
	}
	if (s->failed) {
		after_failure(s);
	} else {
		/* closed in good order: what is left was never answered; it
		 * goes again, unless it may not be written twice */
		struct queue again = { 0 }, dead = { 0 };
		struct hreq *r;

		while ((r = hclient__q_pop(&s->inflight)) != NULL) {
			hclient__resp_reset(r);
			hclient__q_push(r->once ? &dead : &again, r);
		}
		hclient__q_prepend(&c->pending, &again);
		s->state = S_IDLE;
		hclient__fail_all(c, &dead, "connection closed before the answer");
	}
	if (!c->closing)
		hclient__dispatch(c);
}

static void on_timer(uv_timer_t *t)
{
	struct slot *s = container_of(t, struct slot, timer);
	char ms[32];

	if (s->state == S_BACKOFF) {
		s->state = S_IDLE;
		hclient__dispatch(s->c);
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
void hclient__flush(struct slot *s, size_t k)
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
	hclient__resp_reset(s->inflight.head);
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
		hclient__resp_reset(r);
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
	struct hreq *r = hclient__q_pop(&s->inflight);
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
	hclient__dispatch(c);
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
	hclient__dispatch(s->c);
}

void hclient__start_connect(struct slot *s)
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

