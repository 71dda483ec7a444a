/*
 * sse.c - event streams of edit batches (see sse.h).
 *
 * Each subscriber has a cursor into its world's batch records: the index
 * of the next batch to send. Replaying (after Last-Event-ID) moves the
 * cursor while little waits on the socket and again each time a write
 * finishes; once it reaches the end the subscriber is live and publish
 * writes each new batch at once. An event is formatted once per batch for
 * all live subscribers and freed when the last write of it finishes.
 *
 * A stream on a world the map does not hold yet (no edit, no reservation)
 * creates none: its subscriber waits in a small chained hash table keyed
 * by (preset index, seed), and the world's first published batch adopts
 * every subscriber waiting for it before sending (sse_publish()). So a
 * stream costs its own struct and nothing that outlives it, and no world
 * needs removing when it closes (world.h says why worlds are not removed
 * while anything may hold one).
 */
#include "sse.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>
#include <xxhash.h>

#include "base/list.h"
#include "err.h"
#include "http/http.h"
#include "revert.h"
#include "util.h"
#include "worlds/world.h"



#define MIN_WAIT_SLOTS 16

struct sub {
	struct sub *prev, *next;   /* the world's subscribers, or those of
				      its wait slot while waiting */
	struct list anode;         /* in all subscribers (sse.all) */
	struct sse *sse;
	struct world *w;           /* NULL while waiting */
	int gen;                   /* the world's preset index and seed */
	uint64_t seed;
	uint64_t since;            /* with resume: batches after it first */
	struct http_stream *stream;
	size_t cursor;             /* next batch to send */
	unsigned open : 1;         /* the stream takes writes */
	unsigned live : 1;         /* cursor is at the end: publish writes */
	unsigned dropped : 1;      /* being closed */
	unsigned resume : 1;
};

struct sse {
	uv_timer_t timer;          /* keep-alive; frees the sse when closed */
	struct list all;           /* every subscriber, newest first */
	void **wait;               /* subscribers of worlds not yet made
				      (struct sub *), by wait_slot(); chained
				      through next */
	size_t nwait, nwait_slots; /* slots: 0 or a power of two */
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
	return 260 + b->author_len + 26 * b->nchunks;
}

size_t sse_batch_json(const struct world_batch *b, uint64_t seq, char *out)
{
	size_t n, i;

	n = (size_t)sprintf(out, "{\"first_seq\":%llu,\"last_seq\":%llu,",
			    (ull)b->first_seq, (ull)b->last_seq);
	if (seq)
		n += (size_t)sprintf(out + n, "\"seq\":%llu,", (ull)seq);
	if (b->author_len) /* [A-Za-z0-9_.@-]: nothing to escape */
		n += (size_t)sprintf(out + n, "\"author\":\"%.*s\",\"time\":%llu,",
				     (int)b->author_len, b->author, (ull)b->time_ms);
	if (b->revert && b->revert->op == REVERT_UNDO)
		n += (size_t)sprintf(out + n, "\"undo\":%llu,", (ull)b->revert->undo);
	else if (b->revert)
		n += (size_t)sprintf(out + n, "\"revert\":true,\"count\":%llu,",
				     (ull)b->reverted);
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

/* ---- subscribers waiting for their world --------------------------------------- */

static size_t wait_slot(const struct sse *s, int gen, uint64_t seed)
{
	uint64_t k[2] = { (uint64_t)gen, seed };

	return (size_t)XXH3_64bits(k, sizeof(k)) & (s->nwait_slots - 1);
}

/* Push u on the list *head (a world's, or a wait slot's chain). */
static void push(void **head, struct sub *u)
{
	u->prev = NULL;
	u->next = *head;
	if (u->next)
		u->next->prev = u;
	*head = u;
}

static void wait_push(struct sse *s, struct sub *u)
{
	push(&s->wait[wait_slot(s, u->gen, u->seed)], u);
	s->nwait++;
}

/* Take u off its world's list, or off its wait chain. */
static void unlink_world(struct sub *u)
{
	struct sse *s = u->sse;

	if (u->prev)
		u->prev->next = u->next;
	else if (u->w)
		*world_user(u->w) = u->next;
	else
		s->wait[wait_slot(s, u->gen, u->seed)] = u->next;
	if (u->next)
		u->next->prev = u->prev;
	if (!u->w)
		s->nwait--;
}

/* Room for one more waiting subscriber: the table grows to keep chains
 * short (at most one subscriber a slot on average) and keeps its peak
 * size, 8 bytes a slot, fewer than 2 slots a connection the server allows
 * at the peak. 0 or ERR_NOMEM. */
static int wait_room(struct sse *s)
{
	size_t n = s->nwait_slots ? s->nwait_slots : MIN_WAIT_SLOTS, k;
	void **old = s->wait;
	struct sub *u, *next;
	size_t nold = s->nwait_slots;

	while (n < s->nwait + 1)
		n *= 2;
	if (n == s->nwait_slots)
		return 0;
	if (!(s->wait = calloc(n, sizeof(*s->wait)))) {
		s->wait = old;
		return ERR_NOMEM;
	}
	s->nwait_slots = n;
	for (k = 0; k < nold; k++)
		for (u = old[k]; u; u = next) {
			next = u->next;
			push(&s->wait[wait_slot(s, u->gen, u->seed)], u);
		}
	free(old);
	return 0;
}

/* Move the subscribers waiting for w (just given its first batches) to
 * it, each to replay what it has not seen. One that waited with less
 * history than w's snapshot holds (w came from a shared snapshot) is
 * closed: its client resumes and learns of the snapshot (410). */
static void adopt(struct sse *s, struct world *w)
{
	struct sub *u, *next;
	int gen = world_gen(w);

	if (!s->nwait || gen < 0)
		return;
	for (u = s->wait[wait_slot(s, gen, world_seed(w))]; u; u = next) {
		next = u->next;
		if (u->gen != gen || u->seed != world_seed(w))
			continue;
		unlink_world(u);
		u->w = w;
		push(world_user(w), u);
		u->cursor = world_batch_after(w, u->resume ? u->since : 0);
		if (world_base(w) > (u->resume ? u->since : 0) && !u->dropped) {
			u->dropped = 1;
			http_stream_close(u->stream);
		}
	}
}

/* ---- publishing ----------------------------------------------------------------- */

void sse_publish(struct sse *s, struct world *w)
{
	struct sub *u, *next;
	struct event *e = NULL;
	size_t last = world_batches(w) - 1;

	s->st.events++;
	adopt(s, w);
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
	if (u->w) /* else the world's first batch pumps it */
		pump(u);
}

static void unlink_sub(struct sub *u)
{
	struct sse *s = u->sse;

	unlink_world(u);
	list_remove(&u->anode);
	s->st.subscribers--;
}

static void on_closed(void *arg)
{
	struct sub *u = arg;

	unlink_sub(u);
	free(u);
}

int sse_subscribe(struct sse *s, struct http_req *r,
		  const struct http_response *head, int gen, uint64_t seed,
		  struct world *w, int resume, uint64_t since)
{
	struct sub *u = calloc(1, sizeof(*u));
	struct http_stream_cb cb = { on_writable, on_closed, u };
	int rc;

	if (!u)
		return ERR_NOMEM;
	if (!w && wait_room(s)) {
		free(u);
		return ERR_NOMEM;
	}
	*u = (struct sub){ .sse = s, .w = w, .gen = gen, .seed = seed, .since = since,
			   .resume = resume != 0 };
	if (w) {
		u->cursor = resume ? world_batch_after(w, since) : world_batches(w);
		push(world_user(w), u);
	} else {
		wait_push(s, u);
	}
	list_insert_head(&s->all, &u->anode);
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
	struct list *it, *next;

	list_foreach_safe(it, next, &s->all) {
		struct sub *u = list_entry(it, struct sub, anode);

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
	list_init(&s->all);
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
	struct sse *s = h->data;

	free(s->wait);
	free(s);
}

void sse_destroy(struct sse *s)
{
	if (!s)
		return;
	assert(list_empty(&s->all));
	uv_close((uv_handle_t *)&s->timer, free_sse);
}

void sse_stats(const struct sse *s, struct sse_stats *st)
{
	*st = s->st;
}
