/*
 * hclient_int.h - what the HTTP client's two files share: hclient.c (the
 * requests: queues, libcurl easy handles, headers and bodies, completion,
 * retries, the API, set-up and teardown) and hclient_loop.c (libcurl's
 * multi handle on the libuv loop: sockets, its timer, the progress
 * watchdog). The client's structs and the functions each file calls in the
 * other (hclient__*). Not part of the client's API: callers use hclient.h.
 */
#ifndef HCLIENT_INT_H
#define HCLIENT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <curl/curl.h>
#include <uv.h>
#include <zstd.h>

#include "hclient.h"

/* One request, from hclient_request() to its callback. */
struct hreq {
	struct hreq *next, *prev; /* in one of the client's queues */
	struct hclient *c;
	CURL *easy;          /* made on the first try, kept for the retries */
	struct curl_slist *headers;
	hclient_cb cb;
	hclient_data_cb on_data; /* streaming request, or NULL */
	void *arg;
	uint64_t idle_ms;    /* stream: silence allowed once the head came */
	unsigned once : 1;   /* never written twice */
	unsigned sent : 1;   /* written on this try (libcurl's pre-request) */
	unsigned streaming : 1;    /* a 2xx head came: body goes to on_data */
	unsigned head_pending : 1; /* on_data not yet told of the head */
	unsigned toobig : 1; /* the body passed max_body: the write stopped */
	uint64_t t0;         /* uv_hrtime() at submission */
	uint64_t t_sent;     /* uv_hrtime() at the (last) write */
	uint64_t due;        /* uv_now(): end of its backoff, or of the
				silence allowed while sent */
	unsigned attempts;   /* failed tries so far */
	/* the response while it comes */
	int status;          /* a stream's, once its head came */
	char etag[96];
	uint8_t *body;
	size_t body_len, body_cap;
	char why[CURL_ERROR_SIZE + 64];
	char errbuf[CURL_ERROR_SIZE];
	size_t post_len;     /* bytes of body after url */
	int post;            /* a body is sent (any method but a bare GET) */
	char method[17];
	char url[];          /* then the body */
};

struct queue {
	struct hreq *head, *tail;
	size_t n;
};

/* A socket libcurl asked to watch. */
struct hsock {
	struct hsock *next, *prev;
	uv_poll_t poll;
	struct hclient *c;
	curl_socket_t fd;
};

struct hclient {
	uv_loop_t *loop;
	struct hclient_opts o;
	CURLM *multi;
	uv_timer_t curl_timer; /* libcurl's timeout */
	uv_timer_t watchdog;   /* silence of sent requests */
	uv_timer_t backoff;    /* the end of the first backoff */
	uint64_t watch_due;    /* uv_now() the watchdog is set for */
	struct hsock *socks;   /* watched sockets */
	char cacert[4096];
	char base[512];        /* scheme://authority/prefix, no '/' at the end */
	char authority[280];
	struct queue pending;  /* waiting for room, in order */
	struct queue waiting;  /* backing off before a retry */
	struct queue active;   /* in libcurl */
	size_t nstreams;       /* active streaming requests */
	unsigned fails;        /* connection failures in a row */
	int multiplex;         /* the server answered over HTTP/2 */
	unsigned handles;      /* libuv handles still to close, once closing */
	int closing;
	ZSTD_DCtx *dctx;
	struct hclient_stats st;
};

/* ---- hclient.c ---- */

/* Hand queued requests to libcurl while there is room. */
void hclient__pump(struct hclient *c);

/* libcurl finished r's transfer with rc (r still active). */
void hclient__done(struct hreq *r, CURLcode rc);

/* The transfer of r failed (r still active): remove it from libcurl, then
 * retry or fail it with detail. */
void hclient__failed(struct hreq *r, const char *detail, int retry);

/* Move requests whose backoff has ended to the front of the queue. */
void hclient__on_backoff(uv_timer_t *t);

/* Free c and what it holds, once its handles are closed. */
void hclient__destroy(struct hclient *c);

/* Give streaming requests their pending pieces. Returns 0 when the client
 * closed meanwhile. */
int hclient__flush_streams(struct hclient *c);

/* ---- hclient_loop.c ---- */

/* Set libcurl's multi callbacks and the client's timers. Returns 0 or a
 * negative ERR_*. */
int hclient__loop_init(struct hclient *c);

/* Watch r's silence from now: it fails after its allowed silence. */
void hclient__watch(struct hreq *r);

/* Read libcurl's finished transfers, flush streams, pump the queue. */
void hclient__after_action(struct hclient *c);

/* Close the multi handle, the sockets and the timers (every request has
 * left libcurl); the last close callback frees c (hclient__destroy()). */
void hclient__loop_close(struct hclient *c);

#endif
