/*
 * hclient.c - an HTTP client for one server on libcurl and libuv
 * (hclient.h).
 *
 * A request is a libcurl easy handle (made once, kept for its retries)
 * that moves between three queues: pending (waiting for room, in
 * submission order), active (in libcurl's multi handle) and waiting
 * (backing off before another try). Room is `connections` transfers over
 * HTTP/1.1 and `connections` x `pipeline` once the server has answered
 * over HTTP/2, so libcurl itself never queues much; its connection bounds
 * (CURLMOPT_MAX_HOST_CONNECTIONS, MAX_TOTAL_CONNECTIONS) and stream bound
 * (MAX_CONCURRENT_STREAMS) hold the same numbers.
 *
 * libcurl parses the answers; the fields callers read come from
 * curl_easy_header() once a transfer is done, its header callback marks
 * the end of a stream's head, its write callback collects the body (at
 * most max_body) and its pre-request callback marks the moment the
 * request is written:
 * the end of queued_ns, the start of the silence watchdog, and for a
 * `once` request the only write allowed (libcurl re-sends a request whose
 * reused connection turned out dead; the second pre-request call aborts
 * it). A finished transfer's body is zstd-decoded here, not by libcurl.
 *
 * Streams: the write callback collects a 2xx stream's pieces and
 * hclient__flush_streams() hands them to on_data after libcurl returns,
 * never from inside it, so on_data may close the client.
 *
 * This file holds the requests (queues, easy handles, callbacks,
 * completion, retries, the API, set-up and teardown); hclient_loop.c
 * libcurl's multi handle on the loop and the watchdog; hclient_int.h what
 * they share.
 */
#include "hclient.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>
#include <uv.h>
#include <zstd.h>

#include "err.h"
#include "util.h"
#include "hclient_int.h"

#define MAX_DELAY_MS 10000 /* backoff ceiling */

void hclient_opts_default(struct hclient_opts *o)
{
	*o = (struct hclient_opts){ .connections = 4, .pipeline = 8,
				    .timeout_ms = 10000, .attempts = 4,
				    .backoff_ms = 50, .max_body = 64u << 20 };
}

const char *hclient_version(void)
{
	return curl_version();
}

/* ---- queues ---- */

static void q_push(struct queue *q, struct hreq *r)
{
	r->next = NULL;
	r->prev = q->tail;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
	q->n++;
}

static void q_remove(struct queue *q, struct hreq *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		q->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		q->tail = r->prev;
	r->next = r->prev = NULL;
	q->n--;
}

static struct hreq *q_pop(struct queue *q)
{
	struct hreq *r = q->head;

	if (r)
		q_remove(q, r);
	return r;
}

/* Move all of src to the front of dst, in order. */
static void q_prepend(struct queue *dst, struct queue *src)
{
	if (!src->n)
		return;
	src->tail->next = dst->head;
	if (dst->head)
		dst->head->prev = src->tail;
	else
		dst->tail = src->tail;
	dst->head = src->head;
	dst->n += src->n;
	*src = (struct queue){ 0 };
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

/* ---- libcurl's callbacks: the answer as it comes ---- */

/* Forget r's response so far (its body freed). */
static void resp_reset(struct hreq *r)
{
	free(r->body);
	r->body = NULL;
	r->body_len = r->body_cap = 0;
	r->status = r->toobig = r->streaming = r->head_pending = 0;
}

/* The value of header field name in r's answer, or NULL. */
static const char *field(struct hreq *r, const char *name)
{
	struct curl_header *h;

	if (curl_easy_header(r->easy, name, 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
		return NULL;
	return h->value;
}

/* Content-Encoding: 0 none, 1 zstd, -1 another. */
static int coding(struct hreq *r)
{
	const char *v = field(r, "Content-Encoding");

	return !v || strcasecmp(v, "identity") == 0 ? 0 :
	       strcasecmp(v, "zstd") == 0 ? 1 : -1;
}

static long parse_max_age(const char *v)
{
	for (; v && *v; v++) {
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

	if (!v || *v < '0' || *v > '9')
		return -1;
	n = strtol(v, &end, 10);
	return *end || n < 0 ? -1 : n;
}

/* The figures of r's answer that callers read, into resp. */
static void read_head(struct hreq *r, struct hclient_resp *resp)
{
	const char *v = field(r, "ETag");
	long version = 0;

	if (v && strlen(v) < sizeof(r->etag)) {
		memcpy(r->etag, v, strlen(v) + 1);
		resp->etag = r->etag;
	}
	v = field(r, "X-Cache");
	resp->xcache = !v ? HCLIENT_XCACHE_NONE :
		       strncasecmp(v, "hit", 3) == 0 ? HCLIENT_XCACHE_HIT :
		       strncasecmp(v, "miss", 4) == 0 ? HCLIENT_XCACHE_MISS :
		       HCLIENT_XCACHE_NONE;
	resp->max_age = parse_max_age(field(r, "Cache-Control"));
	resp->retry_after = parse_delta(field(r, "Retry-After"));
	v = field(r, "Idempotent-Replayed");
	resp->replayed = v && strcasecmp(v, "true") == 0;
	curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &version);
	r->c->st.http_version = version == CURL_HTTP_VERSION_1_0 ? 10 :
				version == CURL_HTTP_VERSION_1_1 ? 11 :
				version == CURL_HTTP_VERSION_2_0 ? 20 :
				version == CURL_HTTP_VERSION_3 ? 30 : 0;
	r->c->multiplex = r->c->st.http_version >= 20;
}

/* A line of the head: bytes came. At the end of a 2xx head, a stream's
 * body starts to go to on_data. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct hreq *r = arg;
	long status = 0;

	hclient__watch(r);
	if (r->on_data && size * n <= 2 && (p[0] == '\r' || p[0] == '\n')) {
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			if (coding(r)) {
				snprintf(r->why, sizeof(r->why),
					 "http: content-coded stream");
				return 0;
			}
			r->status = (int)status;
			r->streaming = r->head_pending = 1;
			hclient__watch(r); /* now its idle_ms */
		}
	}
	return size * n;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct hreq *r = arg;
	size_t len = size * n, max = r->c->o.max_body;

	hclient__watch(r);
	if (!r->streaming && len > max - r->body_len) {
		r->toobig = 1;
		return 0;
	}
	if (r->body_len + len > r->body_cap) {
		curl_off_t hint = -1;
		size_t cap = r->body_cap;
		uint8_t *nb;

		if (!cap) {
			curl_easy_getinfo(r->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
					  &hint);
			cap = hint > 0 && (uint64_t)hint <= max ? (size_t)hint : 16384;
		}
		while (cap < r->body_len + len)
			cap *= 2;
		if (!(nb = realloc(r->body, cap))) {
			snprintf(r->why, sizeof(r->why), "out of memory");
			return 0;
		}
		r->body = nb;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, p, len);
	r->body_len += len;
	return len;
}

/* The connection is ready and the request about to be written. */
static int on_prereq(void *arg, char *remote_ip, char *local_ip,
		     int remote_port, int local_port)
{
	struct hreq *r = arg;

	(void)remote_ip;
	(void)local_ip;
	(void)remote_port;
	(void)local_port;
	if (r->once && r->sent) {
		snprintf(r->why, sizeof(r->why),
			 "connection closed before the answer");
		return CURL_PREREQFUNC_ABORT;
	}
	r->sent = 1;
	r->t_sent = uv_hrtime();
	resp_reset(r);
	hclient__watch(r);
	return CURL_PREREQFUNC_OK;
}

/* ---- completion ---- */

static void free_req(struct hreq *r)
{
	curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->headers);
	free(r->body);
	free(r);
}

/* Take r out of libcurl; count its figures. Returns its wire bytes. */
static size_t detach(struct hreq *r)
{
	struct hclient *c = r->c;
	curl_off_t down = 0, up = 0;
	long head = 0, req = 0, conns = 0;

	curl_multi_remove_handle(c->multi, r->easy);
	q_remove(&c->active, r);
	if (r->on_data)
		c->nstreams--;
	curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &conns);
	curl_easy_getinfo(r->easy, CURLINFO_HEADER_SIZE, &head);
	curl_easy_getinfo(r->easy, CURLINFO_REQUEST_SIZE, &req);
	curl_easy_getinfo(r->easy, CURLINFO_SIZE_DOWNLOAD_T, &down);
	curl_easy_getinfo(r->easy, CURLINFO_SIZE_UPLOAD_T, &up);
	c->st.connects += (uint64_t)conns;
	c->st.bytes_tx += (uint64_t)req + (uint64_t)up;
	c->st.bytes_rx += (uint64_t)head + (uint64_t)down;
	return (size_t)head + (size_t)down;
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
	free_req(r);
}

/* Fail every request of q (emptied first, so callbacks see a clean state). */
static void fail_all(struct hclient *c, struct queue *q, const char *detail)
{
	struct queue todo = *q;
	char why[sizeof(((struct hreq *)0)->why)];
	struct hreq *r;

	*q = (struct queue){ 0 };
	snprintf(why, sizeof(why), "%s", detail);
	while ((r = q_pop(&todo)) != NULL)
		fail_req(c, r, why);
}

/* Hand r's head and the body pieces so far to on_data. Returns 0 when
 * on_data closed the client (r is gone then), 1 to go on. */
static int flush_one(struct hreq *r)
{
	struct hclient *c = r->c;
	uint8_t *b;
	size_t n, cap;

	if (r->head_pending) {
		r->head_pending = 0;
		r->on_data(r->arg, r->status, NULL, 0);
		if (c->closing)
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
	if (c->closing) {
		free(b);
		return 0;
	}
	r->body = b; /* kept for the next pieces */
	r->body_cap = cap;
	return 1;
}

int hclient__flush_streams(struct hclient *c)
{
	struct hreq *r;

	if (!c->nstreams)
		return 1;
again:
	for (r = c->active.head; r; r = r->next) {
		if (r->streaming && (r->head_pending || r->body_len)) {
			if (!flush_one(r))
				return 0;
			goto again;
		}
	}
	return 1;
}

/* Hand r its complete answer (err: ERR_TOOBIG for a body cut short). */
static void deliver(struct hreq *r, int err, const char *detail)
{
	struct hclient *c = r->c;
	struct hclient_resp resp = { .err = err, .detail = detail,
				     .attempts = r->attempts + 1 };
	long status = 0;
	int zstd = coding(r);

	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	resp.status = (int)status;
	read_head(r, &resp);
	resp.wire_len = detach(r);
	if (!r->streaming) { /* a stream's pieces went to on_data */
		resp.body = r->body;
		resp.body_len = r->body_len;
		r->body = NULL;
	}
	c->fails = 0;
	c->st.responses++;
	if (!err && zstd < 0) {
		resp.err = ERR_CORRUPT;
		resp.detail = "http: unsupported content-encoding";
	} else if (!err && zstd && resp.body_len) {
		uint8_t *out = NULL;
		size_t len = 0;

		resp.zstd = 1;
		resp.err = unzstd(c, resp.body, resp.body_len, &out, &len,
				  &resp.detail);
		free(resp.body);
		resp.body = out;
		resp.body_len = len;
	}
	if (!r->on_data)
		c->st.bytes_decoded += resp.body_len;
	resp.latency_ns = uv_hrtime() - r->t0;
	resp.queued_ns = r->t_sent - r->t0;
	r->cb(r->arg, &resp);
	free(resp.body);
	free_req(r);
}

/* Put r back after its backoff: backoff_ms doubled per failed try. */
static void back_off(struct hclient *c, struct hreq *r)
{
	unsigned sh = r->attempts - 1 < 16 ? r->attempts - 1 : 16;
	uint64_t delay = c->o.backoff_ms << sh;

	delay = delay > MAX_DELAY_MS ? MAX_DELAY_MS : delay;
	r->due = uv_now(c->loop) + delay;
	q_push(&c->waiting, r);
	if (!uv_is_active((uv_handle_t *)&c->backoff) ||
	    uv_timer_get_due_in(&c->backoff) > delay)
		uv_timer_start(&c->backoff, hclient__on_backoff, delay, 0);
}

void hclient__on_backoff(uv_timer_t *t)
{
	struct hclient *c = t->data;
	struct queue due = { 0 };
	uint64_t now = uv_now(c->loop), next = UINT64_MAX;
	struct hreq *r, *nx;

	for (r = c->waiting.head; r; r = nx) {
		nx = r->next;
		if (r->due <= now) {
			q_remove(&c->waiting, r);
			q_push(&due, r);
		} else if (r->due < next) {
			next = r->due;
		}
	}
	q_prepend(&c->pending, &due);
	if (next != UINT64_MAX)
		uv_timer_start(t, hclient__on_backoff, next - now, 0);
	hclient__pump(c);
}

void hclient__failed(struct hreq *r, const char *detail, int retry)
{
	struct hclient *c = r->c;
	int opened = r->sent; /* else its connection did not open */
	char why[sizeof(r->why)];

	snprintf(why, sizeof(why), "%s", detail);
	detach(r);
	c->st.drops++;
	r->attempts++;
	if (!opened)
		c->fails++;
	if (!retry || r->on_data || (r->once && r->sent) ||
	    r->attempts >= c->o.attempts) {
		fail_req(c, r, why);
	} else {
		c->st.resent++;
		back_off(c, r);
	}
	/* every connection failed to open `attempts` times in a row: the
	 * server is down, say so to the requests still queued */
	if (!c->closing && !opened &&
	    c->fails >= c->o.attempts * c->o.connections) {
		c->fails = 0;
		fail_all(c, &c->waiting, why);
		if (!c->closing)
			fail_all(c, &c->pending, why);
	}
}

/* How a failed transfer is named, and whether another try may do better
 * (else "http", retried). */
static const struct cause {
	CURLcode rc;
	const char *what;
	int retry;
} causes[] = {
	{ CURLE_COULDNT_RESOLVE_HOST, "resolve", 1 },
	{ CURLE_COULDNT_RESOLVE_PROXY, "resolve", 1 },
	{ CURLE_PEER_FAILED_VERIFICATION, "tls", 0 },
	{ CURLE_SSL_CACERT_BADFILE, "tls", 0 },
	{ CURLE_SSL_CERTPROBLEM, "tls", 0 },
	{ CURLE_SSL_ISSUER_ERROR, "tls", 0 },
	{ CURLE_SSL_PINNEDPUBKEYNOTMATCH, "tls", 0 },
	{ CURLE_SSL_CONNECT_ERROR, "tls", 1 },
	{ CURLE_GOT_NOTHING, "connection closed by the server", 1 },
	{ CURLE_PARTIAL_FILE, "connection closed by the server", 1 },
	{ CURLE_RECV_ERROR, "read", 1 },
	{ CURLE_SEND_ERROR, "write", 1 },
	{ CURLE_UNSUPPORTED_PROTOCOL, "url", 0 },
	{ CURLE_URL_MALFORMAT, "url", 0 },
	{ CURLE_OUT_OF_MEMORY, "memory", 0 },
};

/* Name a failed transfer's cause in r->why. Returns 1 when another try
 * may do better. */
static int describe(struct hreq *r, CURLcode rc)
{
	const char *e = r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc);
	size_t k, n = sizeof(causes) / sizeof(causes[0]);
	long oserr = 0;

	if (r->why[0]) /* said by a callback */
		return 0;
	if (rc == CURLE_COULDNT_CONNECT) {
		curl_easy_getinfo(r->easy, CURLINFO_OS_ERRNO, &oserr);
		snprintf(r->why, sizeof(r->why), "connect: %s",
			 oserr ? strerror((int)oserr) : e);
		return 1;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) { /* only connects are bounded */
		snprintf(r->why, sizeof(r->why), "connect: timeout after %llu ms",
			 (unsigned long long)r->c->o.timeout_ms);
		return 1;
	}
	for (k = 0; k < n && causes[k].rc != rc; k++)
		;
	snprintf(r->why, sizeof(r->why), "%s: %s", k < n ? causes[k].what :
		 "http", e);
	return k < n ? causes[k].retry : 1;
}

void hclient__done(struct hreq *r, CURLcode rc)
{
	if (r->streaming && !flush_one(r))
		return; /* closed by on_data */
	if (rc == CURLE_OK) {
		deliver(r, 0, NULL);
	} else if (r->toobig) {
		deliver(r, ERR_TOOBIG, "http: body too large");
	} else {
		int retry = describe(r, rc);

		hclient__failed(r, r->why, retry);
	}
}

/* ---- the queue ---- */

void hclient__pump(struct hclient *c)
{
	size_t room = c->o.connections * (c->multiplex ? c->o.pipeline : 1);

	while (!c->closing && c->pending.n && c->active.n < room) {
		struct hreq *r = q_pop(&c->pending);

		r->sent = 0;
		r->errbuf[0] = r->why[0] = 0;
		resp_reset(r);
		if (curl_multi_add_handle(c->multi, r->easy) != CURLM_OK) {
			r->attempts++;
			back_off(c, r); /* not now: this may be inside a call */
			break;
		}
		q_push(&c->active, r);
		if (r->on_data)
			c->nstreams++;
	}
}

/* ---- requests ---- */

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

/* Append one header line (n bytes of p) to *l. Returns 0 or ERR_NOMEM. */
static int add_header(struct curl_slist **l, const char *p, size_t n)
{
	char line[1024];
	struct curl_slist *nl;

	if (n >= sizeof(line))
		return ERR_INVAL;
	memcpy(line, p, n);
	line[n] = 0;
	if (!(nl = curl_slist_append(*l, line)))
		return ERR_NOMEM;
	*l = nl;
	return 0;
}

/* r's header list: no Accept or Expect of libcurl's, zstd unless a
 * stream, If-None-Match, the caller's lines, and no Content-Type of
 * libcurl's for a body. */
static int make_headers(struct hreq *r, const struct hclient_req *q)
{
	const char *h = q->headers ? q->headers : "";
	char inm[160];
	int rc, typed = 0;

	if ((rc = add_header(&r->headers, "Accept:", 7)) ||
	    (rc = add_header(&r->headers, "Expect:", 7)))
		return rc;
	if (!q->on_data &&
	    (rc = add_header(&r->headers, "Accept-Encoding: zstd", 21)))
		return rc;
	if (q->if_none_match) {
		int n = snprintf(inm, sizeof(inm), "If-None-Match: %s",
				 q->if_none_match);

		if (n < 0 || (size_t)n >= sizeof(inm))
			return ERR_INVAL;
		if ((rc = add_header(&r->headers, inm, (size_t)n)))
			return rc;
	}
	while (*h) {
		size_t n = strcspn(h, "\r");

		typed |= n > 13 && strncasecmp(h, "content-type:", 13) == 0;
		if ((rc = add_header(&r->headers, h, n)))
			return rc;
		h += n + 2;
	}
	if (r->post && !typed)
		return add_header(&r->headers, "Content-Type:", 13);
	return 0;
}

/* r's easy handle, its options set once for every try. */
static int make_easy(struct hclient *c, struct hreq *r, size_t url_size)
{
	CURL *e = r->easy = curl_easy_init();
	CURLcode rc = CURLE_OK;

	if (!e)
		return ERR_NOMEM;
#define SET(opt, val) (rc = rc ? rc : curl_easy_setopt(e, opt, val))
	SET(CURLOPT_URL, &r->url[0]);
	SET(CURLOPT_PRIVATE, (void *)r);
	SET(CURLOPT_ERRORBUFFER, &r->errbuf[0]);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_PATH_AS_IS, 1L);
	SET(CURLOPT_HTTP_CONTENT_DECODING, 0L);
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	SET(CURLOPT_PIPEWAIT, (long)(strncmp(c->base, "https:", 6) == 0));
	SET(CURLOPT_USERAGENT, "terrain-client");
	SET(CURLOPT_HTTPHEADER, r->headers);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)c->o.timeout_ms);
	SET(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, (void *)r);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, (void *)r);
	SET(CURLOPT_PREREQFUNCTION, on_prereq);
	SET(CURLOPT_PREREQDATA, (void *)r);
	/* libcurl's own trace on stderr: connections, TLS, HTTP/2, headers */
	SET(CURLOPT_VERBOSE, (long)(getenv("TERRAIN_HTTP_VERBOSE") != NULL));
	if (c->cacert[0])
		SET(CURLOPT_CAINFO, c->cacert);
	if (r->post) {
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->post_len);
		SET(CURLOPT_POSTFIELDS, r->url + url_size);
		if (strcmp(r->method, "POST") != 0)
			SET(CURLOPT_CUSTOMREQUEST, r->method);
	}
#undef SET
	return rc == CURLE_OK ? 0 : rc == CURLE_OUT_OF_MEMORY ? ERR_NOMEM : ERR_INVAL;
}

int hclient_request(struct hclient *c, const struct hclient_req *q,
		    hclient_cb cb, void *arg)
{
	const char *method = q && q->method ? q->method : "GET";
	const char *inm = q ? q->if_none_match : NULL;
	size_t url_size;
	struct hreq *r;
	int rc;

	if (!c || !q || !q->target || q->target[0] != '/' || !cb ||
	    c->closing || strpbrk(q->target, " \r\n\t") || !method_ok(method) ||
	    (inm && strpbrk(inm, "\r\n")) ||
	    (q->headers && !headers_ok(q->headers)) ||
	    (q->body_len && !q->body) || q->body_len > c->o.max_body)
		return ERR_INVAL;
	url_size = strlen(c->base) + strlen(q->target) + 1;
	if (!(r = calloc(1, sizeof(*r) + url_size + q->body_len)))
		return ERR_NOMEM;
	r->c = c;
	snprintf(r->url, url_size, "%s%s", c->base, q->target);
	snprintf(r->method, sizeof(r->method), "%s", method);
	if (q->body_len)
		memcpy(r->url + url_size, q->body, q->body_len);
	r->post_len = q->body_len;
	r->post = strcmp(method, "GET") != 0 || q->body_len;
	r->on_data = q->on_data;
	if ((rc = make_headers(r, q)) || (rc = make_easy(c, r, url_size))) {
		free_req(r);
		return rc;
	}
	r->cb = cb;
	r->arg = arg;
	r->once = q->once || q->on_data;
	r->idle_ms = q->idle_ms;
	r->t0 = uv_hrtime();
	q_push(&c->pending, r);
	c->st.requests++;
	hclient__pump(c);
	return 0;
}

int hclient_get(struct hclient *c, const char *target,
		const char *if_none_match, hclient_cb cb, void *arg)
{
	struct hclient_req q = { .target = target,
				 .if_none_match = if_none_match };

	return hclient_request(c, &q, cb, arg);
}

uint8_t *hclient_resp_detach(struct hclient_resp *r, size_t *len)
{
	uint8_t *b = r->body;

	*len = r->body_len;
	r->body = NULL;
	r->body_len = 0;
	return b;
}

/* ---- set-up and teardown ---- */

/* Check url (http[s]://HOST[:PORT][/PREFIX]) and set c->authority and
 * c->base from it. libcurl resolves HOST when it connects (or the proxy). */
static int parse_url(struct hclient *c, const char *url, const char **detail)
{
	const char *h, *p;
	char *end, prefix[256];
	long v;
	int n;

	*detail = "url: expected http://HOST[:PORT][/PREFIX] or https://...";
	if (strncmp(url, "http://", 7) == 0)
		h = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		h = url + 8;
	else
		return ERR_INVAL;
	if (*h == '[')
		p = strchr(h, ']') ? strchr(h, ']') + 1 : NULL;
	else
		p = h + strcspn(h, ":/");
	if (!p || p == h || p - h >= 256)
		return ERR_INVAL;
	if (*p == ':') {
		v = strtol(p + 1, &end, 10);
		if (end == p + 1 || v < 1 || v > 65535 || (*end && *end != '/'))
			return ERR_INVAL;
		p = end;
	}
	if ((*p && *p != '/') || strlen(p) >= sizeof(prefix) ||
	    strpbrk(p, " \r\n\t?#"))
		return ERR_INVAL;
	snprintf(prefix, sizeof(prefix), "%s", p);
	while (prefix[0] && prefix[strlen(prefix) - 1] == '/')
		prefix[strlen(prefix) - 1] = 0;
	snprintf(c->authority, sizeof(c->authority), "%.*s", (int)(p - h), h);
	n = snprintf(c->base, sizeof(c->base), "%.*s%s%s", (int)(h - url), url,
		     c->authority, prefix);
	return n < 0 || (size_t)n >= sizeof(c->base) ? ERR_INVAL : 0;
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

/* libcurl's multi handle with the client's bounds, on the loop (c->multi
 * set: the timers are made too, and hclient__loop_close() undoes both). */
static int make_multi(struct hclient *c)
{
	long conns = (long)c->o.connections;
	int rc;

	if (!(c->multi = curl_multi_init()))
		return ERR_NOMEM;
	if ((rc = hclient__loop_init(c)) != 0)
		return rc;
	if (curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX) ||
	    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, conns) ||
	    curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, conns) ||
	    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, conns) ||
	    curl_multi_setopt(c->multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
			      (long)c->o.pipeline))
		return ERR_IO;
	return 0;
}

int hclient_create(struct uv_loop_s *loop, const char *url,
		   const struct hclient_opts *o, struct hclient **out,
		   const char **detail)
{
	struct hclient *c;
	int rc;

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
	    (rc = parse_url(c, url, detail)) != 0)
		goto fail;
	if (c->o.cacert) {
		if (strlen(c->o.cacert) >= sizeof(c->cacert)) {
			*detail = "cacert: path too long";
			rc = ERR_INVAL;
			goto fail;
		}
		snprintf(c->cacert, sizeof(c->cacert), "%s", c->o.cacert);
		c->o.cacert = NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		*detail = "libcurl: cannot start";
		rc = ERR_IO;
		goto fail;
	}
	if ((rc = make_multi(c)) != 0) {
		*detail = "libcurl: cannot start";
		if (!c->multi) {
			curl_global_cleanup();
			goto fail;
		}
		c->closing = 1;
		hclient__loop_close(c); /* frees c once the loop has run */
		return rc;
	}
	*out = c;
	return 0;
fail:
	free(c);
	return rc;
}

size_t hclient_outstanding(const struct hclient *c)
{
	return c->pending.n + c->waiting.n + c->active.n;
}

void hclient_stats(const struct hclient *c, struct hclient_stats *st)
{
	*st = c->st;
}

const char *hclient_authority(const struct hclient *c)
{
	return c->authority;
}

void hclient__destroy(struct hclient *c)
{
	ZSTD_freeDCtx(c->dctx);
	free(c);
	curl_global_cleanup();
}

void hclient_close(struct hclient *c)
{
	struct queue all = { 0 };
	struct hreq *r;

	if (!c || c->closing)
		return;
	c->closing = 1;
	while ((r = c->active.head) != NULL) {
		curl_multi_remove_handle(c->multi, r->easy);
		q_remove(&c->active, r);
		q_push(&all, r);
	}
	while ((r = q_pop(&c->waiting)) != NULL)
		q_push(&all, r);
	while ((r = q_pop(&c->pending)) != NULL)
		q_push(&all, r);
	c->nstreams = 0;
	fail_all(c, &all, "cancelled");
	hclient__loop_close(c);
}
