/*
 * hclient_int.h - what the HTTP client's two files share: hclient.c (the
 * requests: queues, completion, dispatch, the API, set-up and teardown)
 * and hclient_conn.c (the connection slots: connect, write, parse and
 * deliver responses, timeouts, failure and backoff). The client's structs
 * and the functions each file calls in the other (hclient__*). Not part of
 * the client's API: callers use hclient.h.
 */
#ifndef HCLIENT_INT_H
#define HCLIENT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include <zstd.h>

#include "hclient.h"
#include "llhttp.h"

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

/* ---- hclient.c ---- */

/* Append r to q. */
void hclient__q_push(struct queue *q, struct hreq *r);

/* The head of q, removed; NULL when q is empty. */
struct hreq *hclient__q_pop(struct queue *q);

/* Move all of src to the front of dst, in order. */
void hclient__q_prepend(struct queue *dst, struct queue *src);

/* Forget r's response so far (its body freed), before r goes again. */
void hclient__resp_reset(struct hreq *r);

/* Fail every request of q (emptied first) with detail. */
void hclient__fail_all(struct hclient *c, struct queue *q, const char *detail);

/* Hand queued requests to connections. */
void hclient__dispatch(struct hclient *c);

/* Close callback of every handle once the client is closing: the last
 * one frees the client. */
void hclient__handle_closed(uv_handle_t *h);

/* ---- hclient_conn.c ---- */

/* Open slot s's connection (s idle). */
void hclient__start_connect(struct slot *s);

/* Write the last k requests of s->inflight as one buffer. */
void hclient__flush(struct slot *s, size_t k);

/* Close callback of a slot's TCP handle: requeues or fails what it held. */
void hclient__on_tcp_closed(uv_handle_t *h);

#endif
