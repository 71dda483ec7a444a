/*
 * hclient.h - an HTTP client for one server, on libuv and libcurl.
 *
 * Requests go to one scheme://host:port (http or https) through libcurl's
 * multi interface, driven by the caller's libuv loop (its sockets polled
 * with uv_poll, its timer a uv_timer: hclient_loop.c). libcurl keeps a
 * bounded pool of connections: `connections` of them; over HTTP/1.1 each
 * carries one request at a time (keep-alive, no pipelining), over HTTP/2
 * (offered by a TLS server through ALPN) up to `pipeline` streams each.
 * Requests wait in submission order for room. TLS verifies the server's
 * certificate and name, against cacert when given, else the system's CA
 * store; there is no way to turn that off. Proxies come from the
 * environment as libcurl reads it (http_proxy, https_proxy, all_proxy,
 * no_proxy; docs/client.md). Every request but a stream asks for
 * `Accept-Encoding: zstd` and zstd bodies are decoded here with libzstd
 * (not by libcurl) before the callback sees them.
 *
 * Failures: a request whose transfer fails (cannot connect, the connection
 * drops, a bad answer, no byte for timeout_ms once it was sent) is tried
 * again after an exponential backoff (backoff_ms, doubling per try), up to
 * `attempts` tries; once connections have failed to open attempts times per
 * connection in a row, the requests still queued fail with the last error.
 * TLS verification failures are not retried. HTTP error statuses are
 * answers, not failures: they reach the callback as they are.
 *
 * Beyond GET: hclient_request() sends any method with extra headers and a
 * body (POST), can forbid re-sending (`once`: a request that may not be
 * repeated fails instead when its transfer fails after it was written,
 * libcurl's own re-send on a dead reused connection included), and can
 * stream: a 2xx body reaches on_data in pieces as they arrive, for
 * responses that may never end (Server-Sent Events). A streaming request
 * asks for no content coding, is never re-sent, may wait idle_ms between
 * bytes, and over HTTP/1.1 holds its connection while it lasts.
 *
 * Everything runs on the loop's thread. What to request and what a body
 * means is the caller's business (view.c).
 */
#ifndef HCLIENT_H
#define HCLIENT_H

#include <stddef.h>
#include <stdint.h>

struct uv_loop_s;
struct hclient;

/* Options; hclient_opts_default() gives the typical values shown. */
struct hclient_opts {
	unsigned connections; /* connection pool bound (4), 1..256 */
	unsigned pipeline;    /* HTTP/2 streams per connection (8), 1..64 */
	uint64_t timeout_ms;  /* connect, or no byte once sent (10000) */
	unsigned attempts;    /* tries per request (4) */
	uint64_t backoff_ms;  /* first reconnect delay, doubling (50) */
	size_t max_body;      /* largest body, coded or decoded (64 MiB) */
	const char *cacert;   /* PEM file of CAs for https (NULL: the
				 system's store); copied */
};

void hclient_opts_default(struct hclient_opts *o);

enum hclient_xcache { HCLIENT_XCACHE_NONE, HCLIENT_XCACHE_HIT,
		      HCLIENT_XCACHE_MISS };

/*
 * What a callback gets. On a transport failure err is ERR_IO (detail says
 * what: "connect: Connection refused", "timeout: no response in 10000 ms",
 * "tls: ..." naming the verification error, "cancelled") and status is 0. With a status, err may still be ERR_ZSTD or
 * ERR_TOOBIG when the body could not be decoded or was too large.
 */
struct hclient_resp {
	int err;              /* 0 or a negative ERR_* */
	const char *detail;   /* for err: static or client-owned text */
	int status;           /* HTTP status, 0 without an answer */
	const char *etag;     /* ETag header value, or NULL */
	int xcache;           /* enum hclient_xcache, from X-Cache */
	long max_age;         /* Cache-Control max-age in s, -1 when absent */
	long retry_after;     /* Retry-After in s (delta-seconds), -1 when
				 absent or a date */
	int replayed;         /* Idempotent-Replayed: true (a stored answer) */
	int zstd;             /* the body came zstd-coded (now decoded) */
	uint8_t *body;        /* decoded body; see hclient_resp_detach() */
	size_t body_len;
	size_t wire_len;      /* bytes of this response, head and (coded)
				 body, as HTTP/1.1 would carry them */
	uint64_t latency_ns;  /* from hclient_get() to this callback */
	uint64_t queued_ns;   /* of which waiting for a connection (connect
				 and TLS included), before the (last) write
				 of the request */
	unsigned attempts;    /* tries it took (1 when nothing failed) */
};

/*
 * Called exactly once per accepted request, on the loop thread, never from
 * inside hclient_get(). r and its strings are valid during the call only;
 * the callback may submit new requests or close the client.
 */
typedef void (*hclient_cb)(void *arg, struct hclient_resp *r);

/* Totals since creation. */
struct hclient_stats {
	uint64_t requests;    /* accepted by hclient_get() */
	uint64_t responses;   /* answered with a status */
	uint64_t failed;      /* ended with a transport error (cancels too) */
	uint64_t resent;      /* re-sent after a failed transfer */
	uint64_t connects;    /* connections opened */
	uint64_t drops;       /* transfers that failed (then re-sent or not) */
	uint64_t bytes_tx;    /* request bytes written (heads and bodies) */
	uint64_t bytes_rx;    /* response bytes read (heads and coded bodies) */
	uint64_t bytes_decoded; /* bodies after content decoding */
	int http_version;     /* of the last answer: 10, 11, 20; 0 before */
};

/*
 * Make a client for url ("http[s]://HOST[:PORT][/PREFIX]"; HOST a name, an
 * IPv4 address or [IPv6]; PORT defaults to 80 or 443). o may be NULL for
 * the defaults. Connections open on demand; HOST is resolved by libcurl
 * when it connects (a request then fails with "resolve: ..."), or by the
 * proxy. Returns 0 and *out, ERR_INVAL for a bad url or option (*detail
 * says which), ERR_IO when libcurl cannot start, or ERR_NOMEM. Free with
 * hclient_close().
 */
int hclient_create(struct uv_loop_s *loop, const char *url,
		   const struct hclient_opts *o, struct hclient **out,
		   const char **detail);

/*
 * Queue "GET PREFIX target" (target starts with '/'; no spaces, CR or LF),
 * with If-None-Match: if_none_match unless that is NULL. cb(arg, resp)
 * runs later, exactly once. Returns 0, ERR_INVAL for a bad target or a
 * closing client (cb will not run), ERR_NOMEM.
 */
int hclient_get(struct hclient *c, const char *target,
		const char *if_none_match, hclient_cb cb, void *arg);

/*
 * Pieces of a streaming 2xx body, in order, on the loop thread: first once
 * with data NULL and n 0 when the head has come (status is known), then
 * once per piece read. data is valid during the call only. The callback
 * may submit requests or close the client (the request's own callback then
 * runs with "cancelled"). When the stream ends, cb runs with the status
 * and an empty body; when it fails, cb gets ERR_IO as for any request.
 * A non-2xx answer is not streamed: it reaches cb whole.
 */
typedef void (*hclient_data_cb)(void *arg, int status, const uint8_t *data,
				size_t n);

struct hclient_req {
	const char *method;        /* NULL: GET; a token of A-Z (not HEAD) */
	const char *target;        /* starts with '/'; no spaces, CR or LF */
	const char *if_none_match; /* If-None-Match value, or NULL */
	const char *headers;       /* more header lines, each "Name: value\r\n",
				      or NULL */
	const void *body;          /* sent with Content-Length (any method
				      but GET sends one, 0 when no body) */
	size_t body_len;
	int once;                  /* never write it twice (not idempotent):
				      fail when its connection fails after
				      the write, or closes before the answer */
	hclient_data_cb on_data;   /* non-NULL: stream the body (see above) */
	uint64_t idle_ms;          /* stream: longest silence once the head
				      has come; 0: timeout_ms */
};

/*
 * Queue the request q (copied: its strings and body need not outlive the
 * call). cb(arg, resp) runs later, exactly once. Returns 0, ERR_INVAL for
 * a bad method, target or header text or a closing client (cb will not
 * run), ERR_NOMEM. hclient_get() is this with method GET.
 */
int hclient_request(struct hclient *c, const struct hclient_req *q,
		    hclient_cb cb, void *arg);

/* Take the body out of r: the caller frees it; r->body becomes NULL. */
uint8_t *hclient_resp_detach(struct hclient_resp *r, size_t *len);

/* Requests queued or in flight. */
size_t hclient_outstanding(const struct hclient *c);

void hclient_stats(const struct hclient *c, struct hclient_stats *st);

/* "host:port" as given in the url, for messages. */
const char *hclient_authority(const struct hclient *c);

/* libcurl's version line ("libcurl/7.88.1 GnuTLS/3.7.9 ... nghttp2/1.52.0"):
 * static text. */
const char *hclient_version(void);

/*
 * Cancel every outstanding request (their callbacks run now, with ERR_IO
 * "cancelled"), close the connections and free c once libuv has closed
 * its handles: run the loop until it returns. NULL does nothing.
 */
void hclient_close(struct hclient *c);

#endif
