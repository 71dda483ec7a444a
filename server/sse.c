/*
 * sse.c - event streams of edit batches (see sse.h).
 *
 * Each subscriber has a cursor into its world's batch records: the index
 * of the next batch to send. Replaying (after Last-Event-ID) moves the
 * cursor while little waits on the socket and again each time a write
 * finishes; once it reaches the end the subscriber is live and publish
 * writes each new batch at once. An event is formatted once per batch for
 * all live subscribers and freed when the last write of it finishes.
 */
#include "sse.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "err.h"
#include "http.h"
#include "util.h"
#include "world.h"



struct sub {
	struct sub *prev, *next;   /* the world's subscribers */
	struct sub *aprev, *anext; /* all subscribers */
	struct sse *sse;
	struct world *w;
	struct http_stream *stream;
	size_t cursor;             /* next batch to send */
	unsigned open : 1;         /* the stream takes writes */
	unsigned live : 1;         /* cursor is at the end: publish writes */
	unsigned dropped : 1;      /* being closed */
};

struct sse {
	uv_timer_t timer;          /* keep-alive; frees the sse when closed */
	struct sub *all;
	size_t max_unsent;
	struct sse_stats st;
};

/* A formatted event, shared by the writes that send it. */
struct event {
	unsigned refs;
	size_t len;
	char data[];
};

static const char keepalive[] = ": keep-alive\n\n";

size_t sse_batch_json_bound(const struct world_batch *b)
{
	return 160 + 26 * b->nchunks;
}

size_t sse_batch_json(const struct world_batch *b, uint64_t seq, char *out)
{
	size_t n, i;

	n = (size_t)sprintf(out, "{\"first_seq\":%llu,\"last_seq\":%llu,",
			    (ull)b->first_seq, (ull)b->last_seq);
	if (seq)
		n += (size_t)sprintf(out + n, "\"seq\":%llu,", (ull)seq);
	n += (size_t)sprintf(out + n, "\"world_hash\":\"%016llx\",\"chunks\":[",
			     (ull)b->hash);
	for (i = 0; i < b->nchunks; i++)
		n += (size_t)sprintf(out + n, "%s[%d,%d]", i ? "," : "",
				     (int)b->chunks[2 * i], (int)b->chunks[2 * i + 1]);
	n += (size_t)sprintf(out + n, "]}");
	return n;
}

/* The event of batch i of w, with one reference. */
static struct event *event_new(const struct world *w, size_t i)
{
	struct world_batch b;
	struct event *e;
	size_t n;

	world_batch(w, i, &b);
	e = malloc(sizeof(*e) + 64 + sse_batch_json_bound(&b));
	if (!e)
		return NULL;
	n = (size_t)sprintf(e->data, "id: %llu\nevent: edits\ndata: ", (ull)b.last_seq);
	n += sse_batch_json(&b, 0, e->data + n);
	memcpy(e->data + n, "\n\n", 2);
	e->len = n + 2;
	e->refs = 1;
	return e;
}

static void event_release(void *arg)
{
	struct event *e = arg;

	if (--e->refs == 0)
		free(e);
}

/* Close u's stream; on_closed() frees u later. */
static void drop(struct sub *u)
{
	if (u->dropped)
		return;
	u->dropped = 1;
	u->sse->st.dropped++;
	http_stream_close(u->stream);
}

/* Write event e to u (taking a reference); 0 or ERR_IO. */
static int send_event(struct sub *u, struct event *e)
{
	e->refs++;
	if (http_stream_write(u->stream, e->data, e->len, event_release, e) == 0)
		return 0;
	e->refs--;
	u->dropped = 1; /* the stream is closing */
	return ERR_IO;
}

/* Replay: send batches while little waits on the socket. */
static void pump(struct sub *u)
{
	size_t n = world_batches(u->w);

	while (u->open && !u->live && !u->dropped) {
		struct event *e;
		int rc;

		if (u->cursor >= n) {
			u->cursor = n;
			u->live = 1;
			break;
		}
		if (http_stream_queued(u->stream) >= SSE_REPLAY_WINDOW)
			break;
		if (!(e = event_new(u->w, u->cursor))) {
			drop(u);
			break;
		}
		u->cursor++;
		rc = send_event(u, e);
		event_release(e);
		if (rc)
			break;
	}
}

void sse_publish(struct sse *s, struct world *w)
{
	struct sub *u, *next;
	struct event *e = NULL;
	size_t last = world_batches(w) - 1;

	s->st.events++;
	for (u = *world_user(w); u; u = next) {
		next = u->next;
		if (!u->open || u->dropped)
			continue;
		if (!u->live) {
			pump(u);
			continue;
		}
		assert(u->cursor == last);
		if (!e && !(e = event_new(w, last))) {
			drop(u);
			continue;
		}
		if (http_stream_queued(u->stream) + e->len > s->max_unsent) {
			drop(u);
			continue;
		}
		u->cursor++;
		send_event(u, e);
	}
	if (e)
		event_release(e);
}

void sse_drop_world(struct sse *s, struct world *w)
{
	struct sub *u;

	(void)s;
	for (u = *world_user(w); u; u = u->next)
		if (!u->dropped) {
			u->dropped = 1;
			http_stream_close(u->stream);
		}
}

static void on_writable(void *arg)
{
	struct sub *u = arg;

	u->open = 1;
	pump(u);
}

static void unlink_sub(struct sub *u)
{
	struct sse *s = u->sse;

	if (u->prev)
		u->prev->next = u->next;
	else
		*world_user(u->w) = u->next;
	if (u->next)
		u->next->prev = u->prev;
	if (u->aprev)
		u->aprev->anext = u->anext;
	else
		s->all = u->anext;
	if (u->anext)
		u->anext->aprev = u->aprev;
	s->st.subscribers--;
}

static void on_closed(void *arg)
{
	struct sub *u = arg;

	unlink_sub(u);
	free(u);
}

int sse_subscribe(struct sse *s, struct http_req *r,
		  const struct http_response *head, struct world *w,
		  int resume, uint64_t since)
{
	struct sub *u = calloc(1, sizeof(*u));
	struct http_stream_cb cb = { on_writable, on_closed, u };
	int rc;

	if (!u)
		return ERR_NOMEM;
	u->sse = s;
	u->w = w;
	u->cursor = resume ? world_batch_after(w, since) : world_batches(w);
	u->next = *world_user(w);
	if (u->next)
		u->next->prev = u;
	*world_user(w) = u;
	u->anext = s->all;
	if (u->anext)
		u->anext->aprev = u;
	s->all = u;
	s->st.subscribers++;
	rc = http_stream_open(r, head, &cb, &u->stream);
	if (rc) {
		unlink_sub(u);
		free(u);
	}
	return rc;
}

static void on_keepalive(uv_timer_t *t)
{
	struct sse *s = t->data;
	struct sub *u, *next;

	for (u = s->all; u; u = next) {
		next = u->anext;
		if (!u->open || u->dropped)
			continue;
		if (http_stream_queued(u->stream) + sizeof(keepalive) - 1 > s->max_unsent)
			drop(u);
		else if (http_stream_write(u->stream, keepalive, sizeof(keepalive) - 1,
					   NULL, NULL))
			u->dropped = 1;
	}
}

int sse_create(struct uv_loop_s *loop, uint64_t keepalive_ms,
	       size_t max_unsent, struct sse **out)
{
	struct sse *s;

	if (!loop || !out)
		return ERR_INVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ERR_NOMEM;
	s->max_unsent = max_unsent ? max_unsent : SSE_MAX_UNSENT;
	keepalive_ms = keepalive_ms ? keepalive_ms : SSE_KEEPALIVE_MS;
	uv_timer_init(loop, &s->timer);
	s->timer.data = s;
	uv_timer_start(&s->timer, on_keepalive, keepalive_ms, keepalive_ms);
	uv_unref((uv_handle_t *)&s->timer);
	*out = s;
	return 0;
}

static void free_sse(uv_handle_t *h)
{
	free(h->data);
}

void sse_destroy(struct sse *s)
{
	if (!s)
		return;
	assert(!s->all);
	uv_close((uv_handle_t *)&s->timer, free_sse);
}

void sse_stats(const struct sse *s, struct sse_stats *st)
{
	*st = s->st;
}
