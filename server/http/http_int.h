/*
 * http_int.h - what the files of the http module share and nothing outside
 * it may use: the connection, request, stream and server structs, the
 * module's limits, and the few http__ functions one file calls in another.
 * The public API and its contract are in http.h.
 *
 * The module's files:
 *   http.c        connection lifetime: accept, reading and kept input, the
 *                 one timer per connection, graceful close, drain; the server
 *   http_parse.c  requests: llhttp callbacks, limits, the request structs and
 *                 their arena, handing complete requests to the handler,
 *                 protocol errors
 *   http_write.c  responses: ordering, the header tail, uv_try_write/uv_write,
 *                 corking, streams, the access log
 *   http_log.c    the access log's JSON lines, reopening it on SIGHUP
 *   http_util.c   helpers that need no connection: limits' defaults, status
 *                 lines, peer checks, bearer tokens
 * Functions called on every request stay static in the file of their callers
 * so that the compiler can inline them; only calls made once per request or
 * per read cross files (see docs/design.md, the cache hit path).
 *
 * Everything runs on the loop thread.
 */
#ifndef HTTP_INT_H
#define HTTP_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <llhttp.h>
#include <uv.h>

#include "base/list.h"
#include "http.h"
#include "util.h"

#ifndef HTTP_READ_BUF
#define HTTP_READ_BUF (64 * 1024) /* allows unit tests to override */
#endif
#define LINGER_MS 2000     /* how long a closing connection drains input */
#define CHUNK_EXT_MAX 4096 /* chunk extension bytes per chunk line; 400 */
#define DRAIN_GRACE_MS 250 /* how long an idle connection may still send */
#define REJECT_MAX 64      /* connections answered 503 at the same time */
#define EXTRA_MAX 96       /* http_response.extra */
#define NODE_LINE_MAX (HTTP_NODE_NAME_MAX + 20) /* "X-Terrain-Node: NAME\r\n" */
#define TAIL_MAX (EXTRA_MAX + NODE_LINE_MAX + 96)
#define FIELD_MAX 32       /* longest kept header name */
#define REQ_POOL 64        /* freed request structs kept for reuse */
#define FIRST_READS 16     /* connections read as accepted, per loop turn */

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

/* One request of a connection, from its first byte until its answer is
 * written: the parser's state, the kept text, the arena and the response.
 * Handlers see only pub (http.h). */
struct conn_req {
	struct http_req pub;
	struct list node;                 /* in its connection's queue, or in
					     the server's free ones */
	struct conn *conn;
	enum req_state state;
	unsigned keepalive : 1;
	unsigned stream_head : 1;         /* the head of c->stream */
	unsigned url_done : 1;
	unsigned method_done : 1;
	uint8_t http_minor;
	uint64_t start;                   /* loop time of the first byte */
	uint64_t start_ns;                /* uv_hrtime() at the first byte */
	struct text text;                 /* target, then kept header values */
	size_t url_len;
	size_t auth_end;                  /* absolute-form: where the path starts */
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

/* The socket of a connection made by http_server_feed(). */
struct memconn {
	uv_idle_t idle;                   /* reads its input while active */
	struct http_feed f;               /* f.data: data[] below */
	struct sockaddr_storage peer;
	size_t off;                       /* input read so far */
	unsigned shut : 1;                /* shutdown() ran: no more writes */
	char data[];
};

struct conn {
	uv_tcp_t tcp;                     /* handles' data point to the conn;
					     never opened for a memconn */
	uv_timer_t timer;
	uv_shutdown_t shut;
	llhttp_t parser;
	struct http_server *srv;
	struct list node;                 /* in the server's list */
	struct list reqs;                 /* its requests in arrival order */
	struct conn_req *cur;             /* the one being parsed */
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
	struct sockaddr_storage peer_addr; /* http_req_peer()'s, once has_peer */
	struct http_stream *stream;       /* the open stream, if any */
	struct memconn *mem;              /* NULL: a TCP socket */
	size_t held;                      /* the handler's, http_req_held() */
	unsigned fresh : 1;               /* no request begun yet */
	unsigned in_req : 1;              /* a request is partly received */
	unsigned head_timer : 1;          /* the deadline is the header timeout */
	unsigned linger : 1;              /* input may follow: close gracefully */
	unsigned corked : 1;              /* TCP_CORK from the listener: uncork() */
	unsigned reading : 1;
	unsigned parsing : 1;             /* inside http__conn_parse() */
	unsigned eof : 1;                 /* the client sent all it will */
	unsigned stopped : 1;             /* parse no more requests */
	unsigned closing : 1;
	unsigned lingering : 1;
	unsigned rejected : 1;
	unsigned reserve : 1;             /* a monitor slot past max_connections */
	unsigned ext_paused : 1;          /* paused after a chunk extension value */
	unsigned has_peer : 1;            /* peer_addr holds the socket's peer */
	size_t chunk_ext;                 /* extension bytes of this chunk line */
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
	struct list conns;                /* every connection, newest first */
	unsigned nconns, nrejected;
	struct http_stats st;
	char *rbuf;                       /* the shared read buffer */
	uint64_t first_reads_at;          /* read_first(): the loop turn's time */
	unsigned first_reads;             /* and its reads in that turn */
	struct list free_reqs;            /* freed request structs, last first */
	unsigned nfree_reqs;
	time_t date_sec;
	char date[48];
	char node_line[NODE_LINE_MAX];    /* "X-Terrain-Node: ...\r\n" or "" */
	int draining;
	int nodelay;                      /* 1: accepted sockets inherit TCP_NODELAY */
	int cork;                         /* 1: and TCP_CORK; 0: not known yet */
	void (*drain_done)(void *arg);
	void *drain_arg;
};

/* The request of node, in a connection's queue or the free ones. */
static inline struct conn_req *http__req_of(struct list *node)
{
	return list_entry(node, struct conn_req, node);
}

/* ---- http.c: connection lifetime ---- */

/* Close c now; requests in the handler's hands and writes in flight are
 * freed when they come back. Does nothing when c is already closing. */
void http__conn_close(struct conn *c);

/* ---- http_write.c: the one interim answer ---- */

/* Write "HTTP/1.1 100 Continue" on c now, when nothing is queued before
 * it; best effort (a client that hears nothing sends its body anyway).
 * Returns -1 when only part of it went out: c must then close unanswered. */
int http__conn_continue(struct conn *c);

/* Free c once it is closing with no handle, write or request left. */
void http__conn_maybe_free(struct conn *c);

/* Close gracefully: our FIN after the last write, then drop input until
 * the client closes or LINGER_MS passes. */
void http__conn_finish(struct conn *c);

/* Pick the timeout for c's state (header, idle, drain grace, none). */
void http__conn_arm(struct conn *c);

/* Set c's deadline ms from now (0: none); the timer restarts lazily. */
void http__conn_deadline(struct conn *c, uint64_t ms);

/* Stop reading c (a no-op when not reading). */
void http__conn_stop_reading(struct conn *c);

/* Parse input kept while the pipeline was full, then read again. */
void http__conn_parse_left(struct conn *c);

/* Write nb buffers to c's memconn whole: their total length, or a negative
 * UV_* error (a failed write, or after shutdown). */
int http__mem_write(struct conn *c, const uv_buf_t *bufs, unsigned nb);

/* ---- http_parse.c: requests ---- */

/* Parse up to len bytes of c's input, handing complete requests to the
 * handler; returns how many were used (fewer when the pipeline is full). */
size_t http__conn_parse(struct conn *c, const char *data, size_t len);

/* Answer a protocol error with status on c (the request being parsed, or a
 * new one) through the handler's error(); c reads no further. */
void http__conn_error(struct conn *c, int status, const char *detail);

/* Unlink r from its connection, release its response and free it (to the
 * server's pool of request structs). */
void http__req_free(struct conn_req *r);

/* Fill *st with the module's llhttp callbacks. */
void http__parser_settings(llhttp_settings_t *st);

/* ---- http_log.c: the access log ---- */

/* Write r's line to s's access log (not NULL); body is the body bytes sent,
 * ns the time from r's first byte to its response written. */
void http__log_access(struct http_server *s, struct conn_req *r, size_t body, uint64_t ns);

#endif
