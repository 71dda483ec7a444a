/*
 * http.h - HTTP/1.1 connections on libuv, parsed by llhttp.
 *
 * This module owns the accepted sockets: it parses requests (keep-alive and
 * pipelining), hands each complete request to a handler, and writes the
 * responses in request order however late they arrive. It enforces the
 * limits (request-target, header and body sizes, header count, pipelined
 * requests per connection, connection count), the header and idle timeouts,
 * and closes a connection after a protocol error (that connection only),
 * after "Connection: close", or when the server drains.
 *
 * A response may also stay open as a stream (http_stream_open(), for
 * Server-Sent Events): its head goes out in order like any response, then
 * the handler writes more bytes whenever it likes until either side ends
 * it; the connection carries nothing after it.
 *
 * It knows nothing about tiles or routes: the handler (routes.c) formats
 * every response, including the error bodies for the protocol errors found
 * here. Listening sockets, signals and the loop belong to loop.c.
 *
 * Everything runs on the loop thread.
 */
#ifndef HTTP_H
#define HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sockaddr;
struct sockaddr_storage;
struct uv_loop_s;
struct uv_stream_s;
struct http_server;
struct http_stream;

/* Request headers the server keeps (others are counted, then dropped).
 * The last two are kept only while there is an access log, for its lines. */
#define HTTP_HEADER_MAP(XX)                                  \
	XX(ACCEPT,          "accept")                        \
	XX(ACCEPT_ENCODING, "accept-encoding")               \
	XX(IF_NONE_MATCH,   "if-none-match")                 \
	XX(IF_MODIFIED_SINCE, "if-modified-since")           \
	XX(CONTENT_TYPE,    "content-type")                  \
	XX(AUTHORIZATION,   "authorization")                 \
	XX(LAST_EVENT_ID,   "last-event-id")                 \
	XX(HOST,            "host")                          \
	XX(ORIGIN,          "origin")                        \
	XX(FORWARDED,       "forwarded")                     \
	XX(X_FORWARDED_FOR, "x-forwarded-for")               \
	XX(X_REQUEST_START, "x-request-start")               \
	XX(IDEMPOTENCY_KEY, "idempotency-key")               \
	XX(EXPECT,          "expect")                        \
	XX(USER_AGENT,      "user-agent")                    \
	XX(REFERER,         "referer")

enum http_header_id {
#define XX(id, name) HTTP_H_##id,
	HTTP_HEADER_MAP(XX)
#undef XX
	HTTP_H_COUNT
};

/* The statuses this server sends, with their reason phrases. */
#define HTTP_REASON_MAP(XX)                                  \
	XX(200, "OK")                                        \
	XX(204, "No Content")                                \
	XX(302, "Found")                                     \
	XX(304, "Not Modified")                              \
	XX(400, "Bad Request")                               \
	XX(401, "Unauthorized")                              \
	XX(403, "Forbidden")                                 \
	XX(404, "Not Found")                                 \
	XX(405, "Method Not Allowed")                        \
	XX(408, "Request Timeout")                           \
	XX(409, "Conflict")                                  \
	XX(410, "Gone")                                      \
	XX(413, "Content Too Large")                         \
	XX(414, "URI Too Long")                              \
	XX(415, "Unsupported Media Type")                    \
	XX(417, "Expectation Failed")                        \
	XX(422, "Unprocessable Content")                     \
	XX(429, "Too Many Requests")                         \
	XX(431, "Request Header Fields Too Large")           \
	XX(500, "Internal Server Error")                     \
	XX(503, "Service Unavailable")                       \
	XX(504, "Gateway Timeout")                           \
	XX(505, "HTTP Version Not Supported")

/*
 * Limits and timeouts; http_limits_default() gives the typical values shown.
 */
struct http_limits {
	unsigned max_connections;   /* open connections; beyond: 503 (10000),
				       but for HTTP_RESERVE_CONNS more that
				       serve monitoring (http_req.reserve) */
	uint64_t idle_timeout_ms;   /* keep-alive idle, stalled writes (60000) */
	uint64_t header_timeout_ms; /* first byte to end of head; 408 (10000) */
	size_t max_url;             /* request-target bytes; 414 (4096) */
	size_t max_header_bytes;    /* names plus values; 431 (16384) */
	unsigned max_headers;       /* header lines; 431 (100) */
	size_t max_body;            /* request body bytes; 413 (1 MiB) */
	unsigned max_pipeline;      /* requests queued per connection (32) */
	/* One JSON line per response (http_log.c documents the fields), or
	 * NULL. The caller opens and closes it; access_log_path, when not
	 * NULL, is the file it was opened from, for http_server_reopen_log(). */
	FILE *access_log;
	const char *access_log_path;
	const char *access_log_file; /* --access-log: what the caller opens */
	/* Sent as "X-Terrain-Node: NAME" on every response, so that a proxy's
	 * client can see which node answered (--node-name); NULL or "": none.
	 * At most HTTP_NODE_NAME_MAX bytes of http_node_name_valid(). */
	const char *node_name;
};

#define HTTP_NODE_NAME_MAX 64

/* Connections past max_connections kept for monitors (/healthz, /metrics),
 * so that a saturated server can still be scraped. */
#define HTTP_RESERVE_CONNS 16

/* Whether s is a node name: 1..HTTP_NODE_NAME_MAX bytes of [A-Za-z0-9._-]. */
int http_node_name_valid(const char *s);

void http_limits_default(struct http_limits *l);

/* The options of struct http_limits (--node-name, --max-connections,
 * --idle-timeout, --header-timeout, --access-log). */
struct option;
/* The module's option table (options.h); returns its length. */
size_t http_options(const struct option **out);

/* What the options leave to the system: a node_name not given (NULL)
 * becomes the host's name (its first label, at most HTTP_NODE_NAME_MAX). */
void http_limits_resolve(struct http_limits *l);

/* A parsed request, valid until its response has been written. */
struct http_req {
	int method;               /* llhttp_method_t (HTTP_GET...), -1 unknown */
	const char *method_name;  /* "GET", or "-" when unknown */
	const char *path;         /* raw target up to '?', NUL-terminated */
	size_t path_len;
	const char *query;        /* raw text after '?', NULL when none */
	size_t query_len;
	const char *header[HTTP_H_COUNT]; /* kept headers, NULL when absent;
					     repeats joined with ", "; Host is
					     the target's authority for an
					     absolute-form target (RFC 9112
					     section 3.2.2) */
	const char *proxy;        /* the first header that only a proxy adds
				     (Forwarded, X-Forwarded-For, Via,
				     X-Real-IP, ...: http_parse.c), by name;
				     NULL when none came */
	const char *body;         /* request body (max_body), NULL when none */
	size_t body_len;
	int reserve;              /* came on one of the HTTP_RESERVE_CONNS
				     connections past max_connections: the
				     handler answers only monitoring (503
				     for the rest) */
	void *user;               /* free for the handler */
};

/* Called for each request in arrival order; both must answer the request,
 * now or later, with exactly one http_respond(). */
struct http_handler {
	void *ctx;
	void (*request)(void *ctx, struct http_req *r);
	/* A protocol error with its status (400, 408, 413, 414, 431, 503) and
	 * a static lowercase detail. The connection closes after the answer. */
	void (*error)(void *ctx, struct http_req *r, int status,
		      const char *detail);
	/* Optional (NULL: none): r's response went out whole with status, ns
	 * nanoseconds (uv_hrtime()) after r's first byte was parsed; for a
	 * stream, once its head is out. Runs once per response written (not
	 * for one cut short by a failed write), before r is freed. */
	void (*done)(void *ctx, struct http_req *r, int status, uint64_t ns);
};

struct http_buf {
	const void *base;
	size_t len;
};

/*
 * A response. head is the status line and header lines, each ending in
 * "\r\n", without the blank line: this module appends extra (static header
 * lines such as "X-Cache: hit\r\n", at most 96 bytes, or NULL), the
 * node's X-Terrain-Node line, Date,
 * Connection when needed, and the blank line. body is dropped for HEAD and
 * for 204 and 304. The bytes are written from where they are, without a
 * copy, and must stay valid until release(arg) runs; release is called
 * exactly once (also when the connection died first), and may be NULL.
 */
struct http_response {
	int status;
	struct http_buf head;
	struct http_buf body;
	const char *extra;
	void (*release)(void *arg);
	void *arg;
};

/* Answer r. Responses go out in request order. r must not be used after. */
void http_respond(struct http_req *r, const struct http_response *resp);

/* "HTTP/1.1 404 Not Found\r\n" for a status in HTTP_REASON_MAP, or the 500
 * line for another. */
const char *http_status_line(int status);

/* Memory that lives until r's response has been written (an arena); NULL
 * when out of memory. */
void *http_req_alloc(struct http_req *r, size_t n);

/* A count kept with r's connection for the handler's own accounting
 * (routes.c: bytes of the bodies it made for the connection's requests),
 * 0 when the connection opens. The connection, and so the count, outlives
 * every request on it and every release() of their responses. */
size_t *http_req_held(struct http_req *r);

/* Milliseconds since r's first byte arrived (loop time). */
uint64_t http_req_age_ms(const struct http_req *r);

/* The address of r's client into *out. Returns 0 or ERR_IO. */
int http_req_peer(const struct http_req *r, struct sockaddr_storage *out);

/* 1 if sa is a loopback address: IPv4 127.0.0.0/8, IPv6 ::1, or an
 * IPv4-mapped ::ffff:127.x.y.z; else 0 (also for other families). */
int http_peer_is_loopback(const struct sockaddr *sa);

/*
 * 1 if the Authorization header value authorization (may be NULL) is
 * "Bearer <token>" with exactly this token (the scheme in any case), else
 * 0. The comparison takes the same time wherever the tokens differ.
 */
int http_bearer_matches(const char *authorization, const char *token);

/* ---- streams ---- */

/* What a stream tells its owner; both run on the loop thread. */
struct http_stream_cb {
	/* The head is out, or a write finished: the stream takes writes. */
	void (*writable)(void *arg);
	/*
	 * The stream is over: the client went away, a write failed, the
	 * server drained or http_stream_close() was called. Runs once,
	 * never from inside an http_stream_* call; the stream is freed
	 * after it.
	 */
	void (*closed)(void *arg);
	void *arg;
};

/*
 * Answer r with a response that stays open. resp->head must have no
 * Content-Length (the body ends when the connection does); resp->body is
 * not sent; "Connection: close" is added, and the connection reads no
 * further requests. The head goes out after the responses before it; then
 * writable() runs and http_stream_write() may be called. On 0, *out is the
 * stream (set before any callback runs) and closed() will run once. On
 * ERR_IO (the connection is closing) or ERR_NOMEM nothing was sent and
 * the caller still answers r.
 */
int http_stream_open(struct http_req *r, const struct http_response *resp,
		     const struct http_stream_cb *cb, struct http_stream **out);

/*
 * Send len bytes of buf, in order after earlier writes, without a copy:
 * buf stays valid until release(arg) runs (exactly once, possibly before
 * this returns; release may be NULL). Only after writable() has run.
 * Returns 0, or ERR_IO when the stream is closing (release is not called).
 */
int http_stream_write(struct http_stream *s, const void *buf, size_t len,
		      void (*release)(void *arg), void *arg);

/* Bytes written to the stream that the socket has not taken yet. */
size_t http_stream_queued(const struct http_stream *s);

/* Close the connection now, dropping what is queued; closed() runs later. */
void http_stream_close(struct http_stream *s);

/* Counters for /metrics. */
struct http_stats {
	uint64_t connections_total;  /* accepted */
	uint64_t connections_open;
	uint64_t rejected;           /* answered 503 at the connection limit */
	uint64_t bytes_sent;         /* response bytes written */
	uint64_t protocol_errors;
};

/* Create a server on loop. Copies limits and handler. Returns 0, ERR_INVAL
 * or ERR_NOMEM. Free with http_server_destroy(). */
int http_server_create(struct uv_loop_s *loop, const struct http_limits *l,
		       const struct http_handler *h, struct http_server **out);

/* Accept one connection from listener (from its connection callback). */
int http_server_accept(struct http_server *s, struct uv_stream_s *listener);

/* ---- connections without a socket (tests and fuzzing) ---- */

/*
 * A client made of bytes: its input, where the server's output goes, and
 * the address it seems to come from. The callbacks run on the loop thread.
 */
struct http_feed {
	const void *data;           /* what the client sends (copied), then EOF */
	size_t len;
	size_t read_size;           /* bytes per read, as TCP segments would
				       split them (0, or above 64 KiB: 64 KiB) */
	const struct sockaddr *peer; /* the client's address (copied; AF_INET
					or AF_INET6); NULL: 127.0.0.1 */
	/* Bytes the server sends, in order; data is gone after the call.
	 * Returns 0, or a negative ERR_* to fail the write as a reset would. */
	int (*write)(void *arg, const void *data, size_t len);
	/* Optional (NULL: none): the server shut its side down, as TCP's FIN;
	 * write() is not called after it. */
	void (*shutdown)(void *arg);
	/* The connection is closed and freed; runs once, last. */
	void (*closed)(void *arg);
	void *arg;
};

/*
 * Open a connection on s that reads f's bytes instead of a socket: as
 * http_server_accept() does, with the same parsing, limits, pipelining,
 * timers, handler calls, response order, closing and access log; only
 * reading, writing, shutdown and the peer's address differ. The input is
 * read from the loop (none of it before this returns), read_size bytes
 * at a time, then EOF: a client that sent everything and half-closed.
 * Every write is taken whole, so writes never queue (uv_write() and the
 * stalled-write timeout are reached over TCP only). Run the loop until
 * closed() has run. Returns 0 (closed() will run), ERR_INVAL or
 * ERR_NOMEM.
 *
 *   struct http_feed f = { buf, n, 0, NULL, on_bytes, NULL, on_closed, &st };
 *   http_server_feed(s, &f); while (!st.closed) uv_run(loop, UV_RUN_ONCE);
 */
int http_server_feed(struct http_server *s, const struct http_feed *f);

/*
 * Drain: answer the requests already received or being received (those
 * parsed from now on with "Connection: close"), end streams once what
 * they queued is sent, close each connection once it is idle (after a 250 ms grace, so that a request racing the drain is
 * answered rather than reset), and call done(arg) when none is left.
 */
void http_server_drain(struct http_server *s, void (*done)(void *arg),
		       void *arg);

/* Close every connection now, cutting responses short. */
void http_server_close_all(struct http_server *s);

void http_server_stats(const struct http_server *s, struct http_stats *st);

/*
 * Reopen the access log at its path (after logrotate moved it; loop.c calls
 * this on SIGHUP): later lines go to the file now at access_log_path, and
 * the FILE * stays the caller's to close. Returns 0 (also when there is no
 * log or no path, as for stderr), or ERR_IO with the old file kept.
 */
int http_server_reopen_log(struct http_server *s);

/* Free the server once its connections are closed. NULL does nothing. */
void http_server_destroy(struct http_server *s);

#endif
