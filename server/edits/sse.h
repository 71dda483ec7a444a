/*
 * sse.h - Server-Sent Events: each accepted edit batch of a world, pushed
 * to the clients that follow the world (GET /v1/worlds/{seed}/events).
 *
 * One event per batch, in sequence order:
 *
 *	id: <last_seq>
 *	event: edits
 *	data: {"first_seq":N,"last_seq":M,"world_hash":"<16 hex>","chunks":[[cx,cz],...]}
 *
 * A subscriber that resumes (Last-Event-ID) first gets every later batch
 * from the world's batch records (world.h), written while less than
 * SSE_REPLAY_WINDOW bytes wait on its socket, then goes live. A live
 * subscriber gets each new batch as it is published, unless the bytes
 * waiting on its socket would pass max_unsent: then it is dropped (its
 * connection closed), so a slow reader costs at most that much memory. A
 * comment line ": keep-alive" goes to every subscriber every keepalive_ms.
 *
 * A stream on a world the map does not hold (no edit yet) creates none: it
 * waits, keyed by (preset index, seed), and the world's first published
 * batch takes it on (replaying from there). A stream costs its own record
 * (about 100 bytes, and a slot of the waiting table), all freed when it
 * closes, so opening streams on many seeds leaves nothing behind.
 *
 * The HTTP mechanics are http.c's streams; routes.c parses the request and
 * builds the response head. Loop thread only.
 */
#ifndef SSE_H
#define SSE_H

#include <stddef.h>
#include <stdint.h>

struct http_req;
struct http_response;
struct sse;
struct uv_loop_s;
struct world;
struct world_batch;

#define SSE_KEEPALIVE_MS  15000
#define SSE_MAX_UNSENT    ((size_t)1 << 20)  /* 1 MiB */
#define SSE_REPLAY_WINDOW ((size_t)64 << 10) /* 64 KiB */

struct sse_stats {
	uint64_t subscribers;  /* streams open now */
	uint64_t events;       /* batches published */
	uint64_t dropped;      /* subscribers dropped as too slow */
};

/*
 * Create the subscriber registry on loop with its keep-alive timer (which
 * does not keep the loop alive). keepalive_ms 0 and max_unsent 0 take the
 * defaults above. Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int sse_create(struct uv_loop_s *loop, uint64_t keepalive_ms,
	       size_t max_unsent, struct sse **out);

/* Free s once every stream has closed (the server drained); the memory
 * goes when the loop runs again. NULL does nothing. */
void sse_destroy(struct sse *s);

/*
 * Answer r with an event stream of the world (preset index gen, seed) under
 * head (a response head with Content-Type: text/event-stream and no
 * Content-Length). w is that world, or NULL when the map has none yet (the
 * stream then waits for it; nothing is created). With resume, the batches
 * after sequence number since come first; without, only new ones. Returns
 * 0, or ERR_IO / ERR_NOMEM when the stream could not open (the caller
 * still answers r).
 */
int sse_subscribe(struct sse *s, struct http_req *r,
		  const struct http_response *head, int gen, uint64_t seed,
		  struct world *w, int resume, uint64_t since);

/* Send w's latest batch (just applied) to its subscribers, first taking
 * on the streams that waited for w (world_gen(), world_seed()). */
void sse_publish(struct sse *s, struct world *w);

/* End every stream of w (its history is about to be replaced: a node
 * restoring from a newer snapshot); clients resume with Last-Event-ID. */
void sse_drop_world(struct sse *s, struct world *w);

void sse_stats(const struct sse *s, struct sse_stats *st);

/*
 * The JSON object of batch b, {"first_seq":..,"last_seq":..,[ "seq":..,]
 * "world_hash":"..","chunks":[[cx,cz],...]}, with "seq" (the world's
 * sequence number) when seq is not 0, into out (room for
 * sse_batch_json_bound(b) bytes, NUL-terminated). Returns its length.
 */
size_t sse_batch_json(const struct world_batch *b, uint64_t seq, char *out);
size_t sse_batch_json_bound(const struct world_batch *b);

#endif
