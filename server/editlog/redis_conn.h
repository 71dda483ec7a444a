/*
 * redis_conn.h - one asynchronous Redis connection on the server's libuv
 * loop: hiredis 0.14's async API on an event adapter of redis_conn.c's
 * (as hiredis's adapters/libuv.h, but writing once per turn of the loop
 * instead of asking for POLLOUT per command), with what that API lacks.
 *
 * Every command has a deadline: replies come in order, so one uv_timer
 * watches the oldest command in flight, and past its deadline the
 * connection is dropped. A stopped or stuck server never holds a request
 * or the loop. A lost connection answers every command in flight with no
 * reply (NULL), then tells the owner (down), who reconnects after a
 * backoff (redis_conn_retry(): 50 ms, doubling to 1 s). The owner decides
 * what to connect to and what to send: journal_redis.c is the one owner.
 * Host names are looked up on a thread of the connection's own, so a DNS
 * that does not answer never holds the loop (see redis_conn.c).
 * The handles are unreferenced, so they never keep the loop running on
 * their own. Loop thread only.
 *
 *	redis_conn_init(&c, loop, "tail", on_down, owner);
 *	redis_conn_open(&c, "127.0.0.1", 6379);     // then a command at once:
 *	redis_conn_command(&c, 1000, on_reply, arg, argc, argv, lens);
 *	redis_conn_release(&c);
 */
#ifndef REDIS_CONN_H
#define REDIS_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "base/list.h"

struct redisAsyncContext;
struct redisReply;
struct redis_conn;
struct redis_cmd;
struct redis_resolver;
struct uv_async_s;
struct uv_loop_s;
struct uv_timer_s;

/* The answer to a command: r (valid during the call) may be an error
 * reply; NULL when none will come (lost, timed out or released). */
typedef void (*redis_reply_fn)(struct redis_conn *c, struct redisReply *r, void *arg);

/* The connection is gone (why: for messages), after every command in
 * flight had its NULL answer; not called by redis_conn_release(). */
typedef void (*redis_down_fn)(struct redis_conn *c, const char *why);

struct redis_conn {
	void *owner;                   /* the owner's, never read here */
	char host[256];                /* last opened */
	int port;
	uint64_t reconnects;           /* opens after the first */
	/* private */
	struct uv_loop_s *loop;
	struct redisAsyncContext *ac;  /* NULL while down */
	struct uv_timer_s *deadline;   /* the oldest command's */
	struct uv_timer_s *later;      /* down, then the retry */
	struct redis_resolver *resolver; /* host names, on its own thread */
	struct uv_async_s *resolved;   /* its answers, on the loop */
	struct list cmds;              /* in flight, oldest first */
	redis_down_fn down;
	void (*retry)(struct redis_conn *c);
	const char *name;
	char why[160];
	unsigned backoff_ms;
	int down_pending, opens, closing;
};

/* Set up c (the caller's storage) on loop; name ("master", "tail") is
 * static, for messages. 0 or ERR_NOMEM. */
int redis_conn_init(struct redis_conn *c, struct uv_loop_s *loop, const char *name,
		    redis_down_fn down, void *owner);

/*
 * Start connecting to host:port (c must be down). Send the first command
 * at once: hiredis connects on the first write, and its deadline bounds
 * the connect. A failure comes through down, never here.
 */
void redis_conn_open(struct redis_conn *c, const char *host, int port);

/* Whether c is connected or connecting (not down). */
int redis_conn_up(const struct redis_conn *c);

/*
 * Send argv (argc strings of lens bytes) with a deadline of timeout_ms.
 * On 0 fn(c, reply, arg) is called exactly once; ERR_AGAIN (down) or
 * ERR_NOMEM: never.
 */
int redis_conn_command(struct redis_conn *c, unsigned timeout_ms, redis_reply_fn fn,
		       void *arg, int argc, const char **argv, const size_t *lens);

/* Close the connection now: commands in flight get NULL, then down. */
void redis_conn_drop(struct redis_conn *c, const char *why);

/* Call fn(c) after the backoff, which then doubles (up to 1 s). */
void redis_conn_retry(struct redis_conn *c, void (*fn)(struct redis_conn *c));

/* The connection works: the next retry waits the least again. */
void redis_conn_ok(struct redis_conn *c);

/* A retry is waiting out its backoff: make it now (a reason to expect
 * success came up). Else nothing. */
void redis_conn_kick(struct redis_conn *c);

/* Close for good: commands in flight get NULL (no down); the handles
 * close on the loop's next run. */
void redis_conn_release(struct redis_conn *c);

#endif
