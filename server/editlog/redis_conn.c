/*
 * redis_conn.c - an asynchronous Redis connection with command deadlines
 * and reconnection backoff (see redis_conn.h).
 *
 * hiredis 0.14 answers every pending command with a NULL reply when a
 * context is freed, whoever frees it: hiredis itself after a read error
 * or a failed connect, or this file after a deadline. A NULL reply, a
 * failed connect and a disconnect all mean the same here: the context is
 * gone (hiredis frees it), and down follows on the loop's next turn, after
 * the last NULL answer.
 *
 * Host names are resolved on a thread of the connection's own, never on
 * the loop and never on libuv's pool (the tile workers'): in a container cut
 * off from its network a lookup hangs for 20 s. An open connects to the
 * address the last lookup of that name gave and asks for a fresh one
 * meanwhile; a name never resolved yet fails the open ("resolving NAME")
 * and the retry comes as soon as the answer does.
 */
#include "redis_conn.h"

#include <arpa/inet.h>
#include <assert.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/socket.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include "err.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000

/* One command in flight. */
struct redis_cmd {
	struct list node;          /* in c->cmds */
	struct redis_conn *c;
	redis_reply_fn fn;
	void *arg;
	uint64_t deadline;         /* uv_now() ms */
};

static void on_deadline(uv_timer_t *t);

/* The oldest command in flight on c, or NULL. */
static struct redis_cmd *oldest(const struct redis_conn *c)
{
	return list_empty(&c->cmds) ? NULL :
	       list_entry(list_first(&c->cmds), struct redis_cmd, node);
}

/* ---- the event adapter -------------------------------------------------------- */

/*
 * hiredis's own libuv adapter asks for POLLOUT on every command and drops
 * it once written: two epoll_ctl() calls per write, the largest count of
 * system calls a node made per edit (1.3 of about 3, strace). Here a
 * connected context writes from a uv_prepare callback instead, once per
 * turn of the loop, just before it polls: every command of the turn goes
 * in one write, and POLLOUT is asked for only when the socket is full (or
 * while connecting, which needs it).
 */
struct redis_ev {
	redisAsyncContext *ac;           /* NULL once hiredis cleaned up */
	uv_poll_t poll;
	uv_prepare_t prep;
	int events;                      /* polled: UV_READABLE, UV_WRITABLE */
	int flushing;                    /* inside the prepare's write */
	int open;                        /* handles not closed yet */
};

static void ev_poll(uv_poll_t *h, int status, int events)
{
	struct redis_ev *e = h->data;

	if (status != 0)
		return;
	if (e->ac && (events & UV_READABLE))
		redisAsyncHandleRead(e->ac);
	if (e->ac && (events & UV_WRITABLE))
		redisAsyncHandleWrite(e->ac);
}

static void ev_set(struct redis_ev *e, int events)
{
	if (events == e->events)
		return;
	e->events = events;
	if (events)
		uv_poll_start(&e->poll, events, ev_poll);
	else
		uv_poll_stop(&e->poll);
}

static void ev_flush(uv_prepare_t *h)
{
	struct redis_ev *e = h->data;

	uv_prepare_stop(h);
	if (!e->ac)
		return;
	e->flushing = 1;
	redisAsyncHandleWrite(e->ac); /* asks again for a write when not done */
	e->flushing = 0;
}

static void ev_add_read(void *p)
{
	struct redis_ev *e = p;

	ev_set(e, e->events | UV_READABLE);
}

static void ev_del_read(void *p)
{
	struct redis_ev *e = p;

	ev_set(e, e->events & ~UV_READABLE);
}

static void ev_add_write(void *p)
{
	struct redis_ev *e = p;

	if (!(e->ac->c.flags & REDIS_CONNECTED) || e->flushing)
		ev_set(e, e->events | UV_WRITABLE); /* connecting, or the socket is full */
	else
		uv_prepare_start(&e->prep, ev_flush);
}

static void ev_del_write(void *p)
{
	struct redis_ev *e = p;

	ev_set(e, e->events & ~UV_WRITABLE);
}

static void ev_closed(uv_handle_t *h)
{
	struct redis_ev *e = h->data;

	if (--e->open == 0)
		free(e);
}

static void ev_cleanup(void *p)
{
	struct redis_ev *e = p;

	e->ac = NULL;
	uv_close((uv_handle_t *)&e->poll, ev_closed);
	uv_close((uv_handle_t *)&e->prep, ev_closed);
}

/* Attach ac to loop, the handles not keeping it alive. 0 or -1. */
static int ev_attach(redisAsyncContext *ac, uv_loop_t *loop)
{
	struct redis_ev *e = calloc(1, sizeof(*e));

	if (!e || uv_poll_init(loop, &e->poll, ac->c.fd) != 0) {
		free(e);
		return -1;
	}
	uv_prepare_init(loop, &e->prep);
	uv_unref((uv_handle_t *)&e->poll);
	uv_unref((uv_handle_t *)&e->prep);
	e->poll.data = e->prep.data = e;
	e->ac = ac;
	e->open = 2;
	ac->ev.data = e;
	ac->ev.addRead = ev_add_read;
	ac->ev.delRead = ev_del_read;
	ac->ev.addWrite = ev_add_write;
	ac->ev.delWrite = ev_del_write;
	ac->ev.cleanup = ev_cleanup;
	return 0;
}

/* ---- the connection ----------------------------------------------------------- */

/* Watch the oldest command's deadline, if any. */
static void arm(struct redis_conn *c)
{
	uint64_t now = uv_now(c->loop);
	struct redis_cmd *k = oldest(c);

	if (c->closing)
		return;
	if (!k) {
		uv_timer_stop(c->deadline);
		return;
	}
	uv_timer_start(c->deadline, on_deadline, k->deadline > now ? k->deadline - now : 0, 0);
}

static void fire_down(uv_timer_t *t)
{
	struct redis_conn *c = t->data;

	c->down_pending = 0;
	c->down(c, c->why);
}

/* The context is gone or going: refuse commands, and tell the owner on
 * the next turn of the loop. */
static void lost(struct redis_conn *c, const char *why)
{
	c->ac = NULL;
	if (c->down_pending || c->closing)
		return;
	snprintf(c->why, sizeof(c->why), "%s", why && *why ? why : "connection lost");
	c->down_pending = 1;
	uv_timer_start(c->later, fire_down, 0, 0);
}

static void on_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	struct redis_cmd *k = priv;
	struct redis_conn *c = k->c;

	(void)ac;
	assert(list_first(&c->cmds) == &k->node); /* replies come in order */
	list_remove(&k->node);
	if (!reply)
		lost(c, NULL);
	else
		arm(c);
	k->fn(c, reply, k->arg);
	free(k);
}

static void on_deadline(uv_timer_t *t)
{
	struct redis_conn *c = t->data;
	struct redis_cmd *k = oldest(c);

	if (k && k->deadline <= uv_now(c->loop))
		redis_conn_drop(c, "no answer within the timeout");
	else
		arm(c);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct redis_conn *c = ac->data;

	if (status != REDIS_OK && c->ac == ac) /* hiredis frees it next */
		lost(c, ac->errstr);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct redis_conn *c = ac->data;

	(void)status;
	if (c->ac == ac)
		lost(c, ac->err ? ac->errstr : "connection closed");
}

#define RESOLVED_MAX 8        /* names remembered per connection */
#define RESOLVE_WAIT_MS 100   /* the most an open waits for a name never seen */

/* A name and its address ("" when the lookup failed, with why). */
struct resolved_name {
	char name[256];
	char addr[INET6_ADDRSTRLEN];
	char err[96];
};

/* The resolver's state, shared by the loop and its thread under lock; the
 * thread frees it once told to quit (it may be inside a hung lookup then). */
struct redis_resolver {
	pthread_mutex_t lock;
	pthread_cond_t wake, answered;
	uv_async_t *done;          /* the loop's, told of each answer */
	char want[256];            /* a name to look up; "" none */
	struct resolved_name names[RESOLVED_MAX];
	unsigned next;             /* the slot a new name takes */
	int quit;
};

static struct resolved_name *find_name(struct redis_resolver *r, const char *name)
{
	size_t i;

	for (i = 0; i < RESOLVED_MAX; i++)
		if (!strcmp(r->names[i].name, name))
			return &r->names[i];
	return NULL;
}

static void *resolver_main(void *arg)
{
	struct redis_resolver *r = arg;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	struct resolved_name got;
	int rc;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->want[0] && !r->quit)
			pthread_cond_wait(&r->wake, &r->lock);
		if (r->quit)
			break;
		memset(&got, 0, sizeof(got));
		memcpy(got.name, r->want, sizeof(got.name));
		pthread_mutex_unlock(&r->lock);
		if ((rc = getaddrinfo(got.name, NULL, &hints, &ai)) != 0) {
			snprintf(got.err, sizeof(got.err), "%s", gai_strerror(rc));
		} else {
			const void *a = ai->ai_family == AF_INET6 ?
					(const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr :
					(const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;

			if (!inet_ntop(ai->ai_family, a, got.addr, sizeof(got.addr)))
				snprintf(got.err, sizeof(got.err), "no address");
			freeaddrinfo(ai);
		}
		pthread_mutex_lock(&r->lock);
		{
			struct resolved_name *n = find_name(r, got.name);

			if (!n)
				n = &r->names[r->next++ % RESOLVED_MAX];
			*n = got;
		}
		if (!strcmp(r->want, got.name))
			r->want[0] = '\0';
		pthread_cond_broadcast(&r->answered);
		if (!r->quit)
			uv_async_send(r->done);
	}
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->wake);
	pthread_cond_destroy(&r->answered);
	free(r);
	return NULL;
}

/* An answer came: a retry waiting for it goes now. */
static void on_resolved(uv_async_t *a)
{
	redis_conn_kick(a->data);
}

static int resolver_start(struct redis_conn *c)
{
	struct redis_resolver *r = calloc(1, sizeof(*r));
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if (!r || !(c->resolved = malloc(sizeof(*c->resolved)))) {
		free(r);
		return ERR_NOMEM;
	}
	uv_async_init(c->loop, c->resolved, on_resolved);
	uv_unref((uv_handle_t *)c->resolved);
	c->resolved->data = c;
	r->done = c->resolved;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	pthread_cond_init(&r->answered, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, resolver_main, r);
	pthread_attr_destroy(&attr);
	if (rc) {
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->wake);
		pthread_cond_destroy(&r->answered);
		free(r);
		return ERR_NOMEM;
	}
	c->resolver = r;
	return 0;
}

/*
 * The address to connect to for host: host itself when it is numeric, else
 * the last answer for it, a fresh lookup asked for either way. A name never
 * looked up waits for its answer up to RESOLVE_WAIT_MS (a DNS that answers
 * does so well within). NULL, with why, when there is no address.
 */
static const char *address_of(struct redis_conn *c, const char *host, char *out, size_t len,
			      char *why, size_t whylen)
{
	struct redis_resolver *r = c->resolver;
	unsigned char bin[sizeof(struct in6_addr)];
	struct resolved_name *n;
	struct timespec until;

	if (inet_pton(AF_INET, host, bin) == 1 || inet_pton(AF_INET6, host, bin) == 1)
		return host;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += RESOLVE_WAIT_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&r->lock);
	if (!r->want[0]) {
		snprintf(r->want, sizeof(r->want), "%s", host);
		pthread_cond_signal(&r->wake);
	}
	while (!(n = find_name(r, host)) &&
	       pthread_cond_timedwait(&r->answered, &r->lock, &until) == 0)
		;
	out[0] = '\0';
	if (n && n->addr[0])
		snprintf(out, len, "%s", n->addr);
	else
		snprintf(why, whylen, "%s %s%s%s", n ? "cannot resolve" : "still resolving", host,
			 n ? ": " : "", n ? n->err : "");
	pthread_mutex_unlock(&r->lock);
	return out[0] ? out : NULL;
}

int redis_conn_init(struct redis_conn *c, struct uv_loop_s *loop, const char *name,
		    redis_down_fn down, void *owner)
{
	memset(c, 0, sizeof(*c));
	list_init(&c->cmds);
	c->deadline = malloc(sizeof(*c->deadline));
	c->later = malloc(sizeof(*c->later));
	if (!c->deadline || !c->later) {
		free(c->deadline);
		free(c->later);
		return ERR_NOMEM;
	}
	uv_timer_init(loop, c->deadline);
	uv_timer_init(loop, c->later);
	uv_unref((uv_handle_t *)c->deadline);
	uv_unref((uv_handle_t *)c->later);
	c->deadline->data = c->later->data = c;
	c->loop = loop;
	c->name = name;
	c->down = down;
	c->owner = owner;
	c->backoff_ms = BACKOFF_MIN_MS;
	if (resolver_start(c)) {
		redis_conn_release(c);
		return ERR_NOMEM;
	}
	return 0;
}

void redis_conn_open(struct redis_conn *c, const char *host, int port)
{
	char addr[INET6_ADDRSTRLEN], why[sizeof(c->why)];
	const char *at;
	redisAsyncContext *ac;

	assert(!c->ac);
	if (c->down_pending) { /* the old connection's down is moot now */
		uv_timer_stop(c->later);
		c->down_pending = 0;
	}
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	if (c->opens++)
		c->reconnects++;
	if (!(at = address_of(c, host, addr, sizeof(addr), why, sizeof(why)))) {
		lost(c, why);
		return;
	}
	ac = redisAsyncConnect(at, port);
	if (!ac || ac->err || ev_attach(ac, c->loop)) {
		lost(c, ac && ac->err ? ac->errstr : "cannot connect");
		if (ac)
			redisAsyncFree(ac);
		return;
	}
	ac->data = c;
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	c->ac = ac;
}

int redis_conn_up(const struct redis_conn *c)
{
	return c->ac != NULL;
}

int redis_conn_command(struct redis_conn *c, unsigned timeout_ms, redis_reply_fn fn,
		       void *arg, int argc, const char **argv, const size_t *lens)
{
	struct redis_cmd *k;

	if (!c->ac)
		return ERR_AGAIN;
	if (!(k = malloc(sizeof(*k))))
		return ERR_NOMEM;
	*k = (struct redis_cmd){ .c = c, .fn = fn, .arg = arg,
				.deadline = uv_now(c->loop) + timeout_ms };
	if (redisAsyncCommandArgv(c->ac, on_reply, k, argc, argv, lens) != REDIS_OK) {
		free(k);
		return ERR_AGAIN;
	}
	list_insert_tail(&c->cmds, &k->node);
	if (list_first(&c->cmds) == &k->node)
		arm(c);
	return 0;
}

/*
 * Give up on the context. With commands unanswered the socket is reset,
 * not closed: a close would leave what the kernel has not yet delivered
 * (an append, say) to be sent once a partition heals, seconds or minutes
 * after its caller was told it failed. A reset drops it: what Redis has
 * not received by now it never will.
 */
void redis_conn_drop(struct redis_conn *c, const char *why)
{
	redisAsyncContext *ac = c->ac;
	struct linger now = { 1, 0 };

	if (!ac)
		return;
	if (!list_empty(&c->cmds) && ac->c.fd >= 0)
		(void)setsockopt(ac->c.fd, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
	lost(c, why);
	redisAsyncFree(ac); /* inside a reply callback hiredis defers it */
}

static void fire_retry(uv_timer_t *t)
{
	struct redis_conn *c = t->data;

	c->retry(c);
}

void redis_conn_retry(struct redis_conn *c, void (*fn)(struct redis_conn *c))
{
	unsigned ms = c->backoff_ms;

	if (c->closing || c->down_pending) /* down comes first, and retries */
		return;
	c->retry = fn;
	c->backoff_ms = 2 * ms > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : 2 * ms;
	uv_timer_start(c->later, fire_retry, ms, 0);
}

void redis_conn_ok(struct redis_conn *c)
{
	c->backoff_ms = BACKOFF_MIN_MS;
}

void redis_conn_kick(struct redis_conn *c)
{
	if (!c->ac && !c->down_pending && !c->closing && c->retry &&
	    uv_is_active((uv_handle_t *)c->later))
		uv_timer_start(c->later, fire_retry, 0, 0);
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

void redis_conn_release(struct redis_conn *c)
{
	redisAsyncContext *ac = c->ac;

	if (!c->deadline)
		return;
	c->closing = 1;
	c->ac = NULL;
	if (ac)
		redisAsyncFree(ac);
	if (c->resolver) { /* its thread frees it, maybe after a hung lookup */
		pthread_mutex_lock(&c->resolver->lock);
		c->resolver->quit = 1;
		pthread_cond_signal(&c->resolver->wake);
		pthread_mutex_unlock(&c->resolver->lock);
		c->resolver = NULL;
	}
	if (c->resolved)
		uv_close((uv_handle_t *)c->resolved, free_handle);
	c->resolved = NULL;
	uv_close((uv_handle_t *)c->deadline, free_handle);
	uv_close((uv_handle_t *)c->later, free_handle);
	c->deadline = c->later = NULL;
}
