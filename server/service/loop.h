/*
 * loop.h - the event loop: listening socket, signals, graceful shutdown,
 * and the size of the worker pool.
 *
 * One libuv loop does all socket I/O. The listener hands each connection
 * to http.c; generation runs on libuv's worker pool (uv_queue_work, see
 * tiles.c), sized here from --workers before the loop starts. SIGTERM or
 * SIGINT stops accepting, lets http.c drain the connections (requests in
 * flight finish, answered with Connection: close) and ends the loop; after
 * drain_ms the remaining connections are cut. A second signal cuts at once.
 * SIGHUP reopens the access log (http_server_reopen_log(), for logrotate).
 */
#ifndef LOOP_H
#define LOOP_H

#include <stddef.h>
#include <stdint.h>

struct loop;
struct http_server;
struct uv_loop_s;

/* The loop's options (loop_options: --bind, --port, --workers) and the
 * rest of its configuration. */
struct loop_config {
	const char *bind;   /* IPv4 or IPv6 address ("127.0.0.1") */
	unsigned port;      /* 0 picks a free port (8080) */
	unsigned workers;   /* worker threads; 0: the number of cores */
	int backlog;        /* listen(2) backlog (4096; the kernel caps it) */
	uint64_t drain_ms;  /* graceful shutdown limit (10000) */
};

struct option;
/* The module's option table (options.h); returns its length. */
size_t loop_options(const struct option **out);

/*
 * Create the loop, size the worker pool and bind the listening socket
 * (not yet listening). Returns 0, or ERR_INVAL / ERR_IO / ERR_NOMEM with
 * a message in err (errlen bytes). Free with loop_destroy().
 */
int loop_create(const struct loop_config *cfg, struct loop **out, char *err,
		size_t errlen);

/* The size of the worker pool (loop_config.workers, or the cores). */
unsigned loop_workers(const struct loop *l);

/* The libuv loop, for the modules that queue work or own handles. */
struct uv_loop_s *loop_uv(struct loop *l);

/*
 * Listen, print "listening on ADDR:PORT" on stderr, and run until a signal
 * has drained s. Returns 0 after a complete drain, 1 when the drain limit
 * cut connections (worker threads may still be busy: exit without freeing
 * what they use), or a negative ERR_* when listening failed.
 */
int loop_run(struct loop *l, struct http_server *s);

/* Close the loop; only after loop_run() returned 0. NULL does nothing. */
void loop_destroy(struct loop *l);

/* Call fn(arg) when a drain starts (the first SIGTERM or SIGINT), so that
 * background work (bakes) stops queueing more. */
void loop_on_drain(struct loop *l, void (*fn)(void *arg), void *arg);

#endif
