/*
 * loop.c - listener, signals and shutdown around one libuv loop
 * (see loop.h).
 */
#include "loop.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "base/options.h"
#include "base/sdnotify.h"
#include "err.h"
#include "http/http.h"
#include "util.h"

struct loop {
	uv_loop_t uv;
	uv_tcp_t listener;
	uv_signal_t sigterm, sigint, sighup;
	uv_timer_t deadline;
	struct http_server *server;
	uint64_t drain_ms;
	unsigned workers;
	int backlog;
	int draining;
	void (*on_drain)(void *arg);     /* told when the drain starts */
	void *drain_arg;
	int forced;
	char where[64];                  /* "127.0.0.1:8080", "[::1]:8080": for errors */
};

/*
 * Hand a connection to accept() only once its first bytes have arrived (or,
 * for a client that stays silent, a second or so later): the loop then
 * accepts and reads in one wake-up where it took two, which cuts the
 * server's CPU per `Connection: close` request by a sixth (docs/design.md).
 * A connection counts towards --max-connections from then on. Best effort:
 * a kernel without the option just accepts at once.
 */
static void defer_accept(uv_tcp_t *listener)
{
	uv_os_fd_t fd;
	int secs = 1;

	if (uv_fileno((uv_handle_t *)listener, &fd) == 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
}

/*
 * Cork the sockets the listener hands over (Linux passes TCP_CORK on, as it
 * does TCP_NODELAY). A connection's last answer then waits in its socket
 * until close() adds the FIN to it, and the two go out as one segment where
 * a write and a close send two: the server pays for one segment fewer per
 * `Connection: close` request. http.c uncorks a connection before any
 * other answer, once; a cork left on by mistake would cost 200 ms, the
 * kernel's ceiling, not a stall (docs/design.md).
 */
static void cork_accepted(uv_tcp_t *listener)
{
	uv_os_fd_t fd;
	int on = 1;

	if (uv_fileno((uv_handle_t *)listener, &fd) == 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
}

static const struct option options[] = {
	OPTION(struct loop_config, "bind", "TERRAIN_BIND", "ADDR", "127.0.0.1", OPTION_STR, bind,
	       0, 0, "address to listen on (0.0.0.0 or :: for all)"),
	OPTION(struct loop_config, "port", "TERRAIN_PORT", "N", "8080", OPTION_UINT, port, 0, 65535,
	       "TCP port; 0 picks a free one (printed on stderr)"),
	OPTION(struct loop_config, "workers", "TERRAIN_WORKERS", "N", "cores", OPTION_UINT, workers,
	       1, 1024, "generation threads"),
};
size_t loop_options(const struct option **out)
{
	*out = options;
	return ARRAY_LEN(options);
}

unsigned loop_workers(const struct loop *l)
{
	return l->workers;
}

int loop_create(const struct loop_config *cfg, struct loop **out, char *err,
		size_t errlen)
{
	struct sockaddr_storage addr;
	char n[16];
	struct loop *l;
	int rc;

	unsigned workers = cfg && cfg->workers ? cfg->workers : uv_available_parallelism();

	if (!cfg || !out || !cfg->bind || cfg->port > 65535) {
		snprintf(err, errlen, "loop: invalid configuration");
		return ERR_INVAL;
	}
	if (uv_ip4_addr(cfg->bind, cfg->port, (struct sockaddr_in *)&addr) &&
	    uv_ip6_addr(cfg->bind, cfg->port, (struct sockaddr_in6 *)&addr)) {
		snprintf(err, errlen, "--bind %s: not an IPv4 or IPv6 address", cfg->bind);
		return ERR_INVAL;
	}
	/* libuv reads this when its pool starts, at the first uv_queue_work. */
	snprintf(n, sizeof(n), "%u", workers);
	setenv("UV_THREADPOOL_SIZE", n, 1);
	l = calloc(1, sizeof(*l));
	if (!l)
		return ERR_NOMEM;
	l->workers = workers;
	snprintf(l->where, sizeof(l->where), strchr(cfg->bind, ':') ? "[%s]:%u" : "%s:%u",
		 cfg->bind, cfg->port);
	l->drain_ms = cfg->drain_ms;
	l->backlog = cfg->backlog;
	if ((rc = uv_loop_init(&l->uv)) < 0) {
		snprintf(err, errlen, "libuv: %s", uv_strerror(rc));
		free(l);
		return ERR_IO;
	}
	uv_tcp_init(&l->uv, &l->listener);
	rc = uv_tcp_bind(&l->listener, (struct sockaddr *)&addr, 0);
	if (rc < 0) {
		snprintf(err, errlen, "bind %s: %s", l->where, uv_strerror(rc));
		uv_close((uv_handle_t *)&l->listener, NULL);
		uv_run(&l->uv, UV_RUN_DEFAULT);
		uv_loop_close(&l->uv);
		free(l);
		return ERR_IO;
	}
	uv_tcp_nodelay(&l->listener, 1);   /* inherited by accepted sockets */
	defer_accept(&l->listener);
	cork_accepted(&l->listener);
	*out = l;
	return 0;
}

struct uv_loop_s *loop_uv(struct loop *l)
{
	return &l->uv;
}

static void on_connection(uv_stream_t *listener, int status)
{
	struct loop *l = listener->data;

	if (status < 0) {
		fprintf(stderr, "terrain-server: accept: %s\n", uv_strerror(status));
		return;
	}
	if (http_server_accept(l->server, listener) < 0)
		fprintf(stderr, "terrain-server: accept: out of memory\n");
}

/* Drained (or cut): close our own handles so that the loop can end. */
static void on_drained(void *arg)
{
	struct loop *l = arg;

	uv_close((uv_handle_t *)&l->sigterm, NULL);
	uv_close((uv_handle_t *)&l->sigint, NULL);
	uv_close((uv_handle_t *)&l->sighup, NULL);
	uv_close((uv_handle_t *)&l->deadline, NULL);
}

/* Tell systemd (Type=notify) the server's new state (sdnotify.h); a
 * failure is only reported: the server serves either way. */
static void notify(const char *state)
{
	if (sdnotify(state) < 0)
		fprintf(stderr, "terrain-server: NOTIFY_SOCKET %s: %s (sending %s)\n",
			getenv("NOTIFY_SOCKET"), strerror(errno), state);
}

static void on_deadline(uv_timer_t *t)
{
	struct loop *l = t->data;

	fprintf(stderr, "terrain-server: drain limit reached, closing connections\n");
	l->forced = 1;
	http_server_close_all(l->server);
	uv_stop(&l->uv);
}

static void on_signal(uv_signal_t *sig, int signum)
{
	struct loop *l = sig->data;

	if (l->draining) {
		on_deadline(&l->deadline);
		return;
	}
	fprintf(stderr, "terrain-server: %s, draining\n", strsignal(signum));
	l->draining = 1;
	notify("STOPPING=1");
	if (l->on_drain)
		l->on_drain(l->drain_arg);
	uv_close((uv_handle_t *)&l->listener, NULL);
	uv_timer_start(&l->deadline, on_deadline, l->drain_ms, 0);
	http_server_drain(l->server, on_drained, l);
}

/* SIGHUP: logrotate moved the access log; open it again at its path. */
static void on_hup(uv_signal_t *sig, int signum)
{
	struct loop *l = sig->data;

	(void)signum;
	if (http_server_reopen_log(l->server) < 0)
		fprintf(stderr, "terrain-server: reopening the access log: %s\n",
			strerror(errno));
}

/* The address listened on, with the port a --port 0 got: "HOST:PORT". */
static void bound_address(struct loop *l, char *out, size_t n)
{
	struct sockaddr_storage ss;
	char host[64] = "?";
	int len = sizeof(ss);

	if (uv_tcp_getsockname(&l->listener, (struct sockaddr *)&ss, &len) < 0) {
		snprintf(out, n, "%s", l->where);
	} else if (ss.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof(host));
		snprintf(out, n, "[%s]:%d", host, ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	} else {
		uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof(host));
		snprintf(out, n, "%s:%d", host, ntohs(((struct sockaddr_in *)&ss)->sin_port));
	}
}

int loop_run(struct loop *l, struct http_server *s)
{
	char where[80], state[128];
	int rc;

	l->server = s;
	l->listener.data = l->sigterm.data = l->sigint.data = l->sighup.data =
		l->deadline.data = l;
	rc = uv_listen((uv_stream_t *)&l->listener, l->backlog, on_connection);
	if (rc < 0) {
		fprintf(stderr, "terrain-server: listen %s: %s\n", l->where, uv_strerror(rc));
		return ERR_IO;
	}
	signal(SIGPIPE, SIG_IGN);
	/* past a file-size limit the edit log's write fails (EFBIG, 503) */
	signal(SIGXFSZ, SIG_IGN);
	uv_signal_init(&l->uv, &l->sigterm);
	uv_signal_init(&l->uv, &l->sigint);
	uv_signal_init(&l->uv, &l->sighup);
	uv_timer_init(&l->uv, &l->deadline);
	uv_signal_start(&l->sigterm, on_signal, SIGTERM);
	uv_signal_start(&l->sigint, on_signal, SIGINT);
	uv_signal_start(&l->sighup, on_hup, SIGHUP);
	bound_address(l, where, sizeof(where));
	fprintf(stderr, "terrain-server: listening on %s\n", where);
	/* the port is open: a Type=notify unit is started */
	snprintf(state, sizeof(state), "READY=1\nSTATUS=listening on %s", where);
	notify(state);
	uv_run(&l->uv, UV_RUN_DEFAULT);
	return l->forced;
}

void loop_on_drain(struct loop *l, void (*fn)(void *arg), void *arg)
{
	l->on_drain = fn;
	l->drain_arg = arg;
}

void loop_destroy(struct loop *l)
{
	if (!l)
		return;
	if (!l->draining)
		uv_close((uv_handle_t *)&l->listener, NULL);
	uv_run(&l->uv, UV_RUN_DEFAULT);
	uv_loop_close(&l->uv);
	free(l);
}
