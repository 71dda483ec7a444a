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
 *
 * This file holds the requests (queues, completion, dispatch, the API,
 * set-up and teardown); hclient_conn.c the connection slots (connect,
 * write, read and parse, deliver, timeouts, failure and backoff);
 * hclient_int.h what they share.
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
#include "hclient_int.h"

void hclient_opts_default(struct hclient_opts *o)
{
	*o = (struct hclient_opts){ .connections = 4, .pipeline = 8,
				    .timeout_ms = 10000, .attempts = 4,
				    .backoff_ms = 50, .max_body = 64u << 20 };
}

/* ---- queues ---- */

void hclient__q_push(struct queue *q, struct hreq *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->n++;
}

struct hreq *hclient__q_pop(struct queue *q)
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
void hclient__q_prepend(struct queue *dst, struct queue *src)
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

void hclient__resp_reset(struct hreq *r)
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
	hclient__resp_reset(r);
	free(r);
}

/* Fail every request of q (emptied first, so callbacks see a clean state). */
void hclient__fail_all(struct hclient *c, struct queue *q, const char *detail)
{
	struct queue todo = *q;
	char why[128];
	struct hreq *r;

	*q = (struct queue){ 0 };
	snprintf(why, sizeof(why), "%s", detail);
	while ((r = hclient__q_pop(&todo)) != NULL)
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
void hclient__dispatch(struct hclient *c)
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
					hclient__start_connect(idle);
				break;
			}
			hclient__q_push(&best->inflight, hclient__q_pop(&c->pending));
			added[best - c->slots]++;
			continue;
		}
		best = least_busy(c);
		free_conn = best && best->inflight.n == 0;

		if (!free_conn &&
		    (size_t)c->nconnecting * c->o.pipeline < c->pending.n &&
		    (idle = idle_slot(c)) != NULL) {
			hclient__start_connect(idle);
			continue;
		}
		if (!best || (!free_conn && c->nconnecting))
			break;
		hclient__q_push(&best->inflight, hclient__q_pop(&c->pending));
		added[best - c->slots]++;
	}
	for (unsigned k = 0; k < n; k++)
		if (added[k])
			hclient__flush(&c->slots[k], added[k]);
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
	hclient__q_push(&c->pending, r);
	c->st.requests++;
	hclient__dispatch(c);
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

void hclient__handle_closed(uv_handle_t *h)
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
	hclient__q_prepend(&all, &c->pending);
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
	hclient__fail_all(c, &all, "cancelled");
	c->handles = 1; /* held while closing, dropped below */
	for (unsigned k = 0; k < c->o.connections; k++) {
		struct slot *s = &c->slots[k];

		s->state = S_CLOSING; /* no slot_close()/slot_fail() from now */
		uv_timer_stop(&s->timer);
		c->handles++;
		uv_close((uv_handle_t *)&s->timer, hclient__handle_closed);
		if (s->tcp_live) {
			c->handles++;
			if (!uv_is_closing((uv_handle_t *)&s->tcp))
				uv_close((uv_handle_t *)&s->tcp, hclient__on_tcp_closed);
		}
	}
	if (--c->handles == 0)
		destroy(c);
}
