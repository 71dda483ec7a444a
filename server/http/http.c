/*
 * http.c - HTTP/1.1 connections: accept, reading, the kept input of a full
 * pipeline, timeouts, graceful close and drain, and the server that holds
 * them (see http.h; the module's files are listed in http_int.h). Parsing
 * and the request structs belong to http_parse.c, responses and streams to
 * http_write.c.
 *
 * A connection keeps its requests in a queue in arrival order (see
 * http_parse.c and http_write.c). Parsing pauses (reading stops) while the
 * queue is full, and stops for good after a request that ends the
 * connection ("Connection: close", HTTP/1.0, a protocol error, draining).
 * The connection closes once the queue is empty: at once when all input
 * was read, else (as nginx's lingering close) with a shutdown of our side
 * and a short linger that reads and drops what the client still sends, so
 * that our last response is not lost to a reset. Idle, header and linger
 * timeouts share one timer per connection, restarted only when its
 * deadline moves earlier.
 *
 * Reads land in one buffer shared by all connections (everything runs on
 * the loop thread and is parsed at once). A connection accepted with its
 * first bytes already in is read at once (read_first()).
 *
 * A connection made by http_server_feed() has a memconn instead of a
 * socket: its tcp handle is initialised but never opened, an idle handle
 * delivers its input to on_read() while it is reading, and writes go to
 * the feed's callback. Only the functions of the "sockets" section below
 * (and http_req_peer()) tell the two apart; everything else is one path.
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void on_timer(uv_timer_t *t);
static void on_shutdown(uv_shutdown_t *sr, int status);
static void on_handle_close(uv_handle_t *h);

/* ---- sockets: the only place a memconn differs ---------------------------- */

/* Input of a memconn, read_size bytes per read as segments would come,
 * each in a buffer of its own that is freed after the read (so that a
 * pointer kept into it is a use after free for ASan), then EOF. */
static void mem_on_idle(uv_idle_t *h)
{
	struct conn *c = h->data;
	struct memconn *m = c->mem;
	size_t step = m->f.read_size && m->f.read_size < HTTP_READ_BUF ?
		      m->f.read_size : HTTP_READ_BUF;

	while (c->reading && !c->closing && m->off < m->f.len) {
		size_t n = m->f.len - m->off < step ? m->f.len - m->off : step;
		uv_buf_t buf = uv_buf_init(malloc(n), (unsigned)n);

		if (!buf.base) {
			http__conn_close(c);
			return;
		}
		memcpy(buf.base, m->data + m->off, n);
		m->off += n;
		on_read((uv_stream_t *)&c->tcp, (ssize_t)n, &buf);
		free(buf.base);
	}
	if (c->reading && !c->closing) {
		uv_buf_t none = uv_buf_init(NULL, 0);

		on_read((uv_stream_t *)&c->tcp, UV_EOF, &none);
	}
}

static int conn_read_start(struct conn *c)
{
	if (c->mem)
		return uv_idle_start(&c->mem->idle, mem_on_idle);
	return uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void conn_read_stop(struct conn *c)
{
	if (c->mem)
		uv_idle_stop(&c->mem->idle);
	else
		uv_read_stop((uv_stream_t *)&c->tcp);
}

/* Our FIN after the writes queued so far: 0, or < 0 when it cannot be
 * sent. A memconn's writes are all done, so its shutdown is too. */
static int conn_shutdown(struct conn *c)
{
	struct memconn *m = c->mem;

	if (m) {
		m->shut = 1;
		if (m->f.shutdown)
			m->f.shutdown(m->f.arg);
		return 0;
	}
	c->shut.data = c;
	if (uv_shutdown(&c->shut, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
		return -1;
	c->ops++;
	return 0;
}

static void conn_close_handles(struct conn *c)
{
	uv_close((uv_handle_t *)&c->tcp, on_handle_close);
	uv_close((uv_handle_t *)&c->timer, on_handle_close);
	if (c->mem)
		uv_close((uv_handle_t *)&c->mem->idle, on_handle_close);
}

int http__mem_write(struct conn *c, const uv_buf_t *bufs, unsigned nb)
{
	struct memconn *m = c->mem;
	size_t n = 0;
	unsigned i;

	if (m->shut)
		return UV_EPIPE;
	for (i = 0; i < nb; i++) {
		if (bufs[i].len && m->f.write(m->f.arg, bufs[i].base, bufs[i].len) < 0)
			return UV_ECONNRESET;
		n += bufs[i].len;
	}
	return (int)n;
}

/* ---- connection lifetime ----------------------------------------------- */

void http__conn_maybe_free(struct conn *c)
{
	struct http_server *s = c->srv;
	struct memconn *m = c->mem;

	if (!c->closing || c->ops || c->nreqs)
		return;
	list_remove(&c->node);
	if (c->rejected)
		s->nrejected--;
	else
		s->nconns--;
	if (c->stream) {
		struct http_stream *st = c->stream;

		c->stream = NULL;
		st->cb.closed(st->cb.arg);
		free(st);
	}
	free(c->left);
	free(c);
	if (m) {
		m->f.closed(m->f.arg);
		free(m);
	}
	if (s->draining && s->nconns + s->nrejected == 0 && s->drain_done) {
		void (*done)(void *) = s->drain_done;

		s->drain_done = NULL;
		done(s->drain_arg);
	}
}

static void on_handle_close(uv_handle_t *h)
{
	struct conn *c = h->data;

	c->ops--;
	http__conn_maybe_free(c);
}

/* Close now. Requests in the handler's hands, and writes in flight, are
 * freed when they come back. */
void http__conn_close(struct conn *c)
{
	struct list *it, *next;

	if (c->closing)
		return;
	c->closing = 1;
	list_foreach_safe(it, next, &c->reqs) {
		struct conn_req *r = http__req_of(it);

		if (r->state == R_PARSING || r->state == R_READY)
			http__req_free(r);
	}
	conn_close_handles(c);
}

static void on_shutdown(uv_shutdown_t *sr, int status)
{
	struct conn *c = sr->data;

	c->ops--;
	if (status < 0)
		http__conn_close(c);
	http__conn_maybe_free(c);
}


/*
 * Set the deadline ms from now (0: none). Timers are restarted lazily: only
 * when the deadline moves before the timer's due time; a timer that fires
 * early re-arms itself for the rest.
 */
void http__conn_deadline(struct conn *c, uint64_t ms)
{
	c->deadline = ms ? uv_now(c->srv->loop) + ms : 0;
	if (!ms || (uv_is_active((uv_handle_t *)&c->timer) && c->due <= c->deadline))
		return;
	c->due = c->deadline;
	uv_timer_start(&c->timer, on_timer, ms, 0);
}

/* Close gracefully: our FIN after the last write, then drop input until
 * the client closes or LINGER_MS passes. */
void http__conn_finish(struct conn *c)
{
	if (c->closing || c->lingering)
		return;
	c->lingering = 1;
	if (conn_shutdown(c) < 0) {
		http__conn_close(c);
		return;
	}
	if (c->eof) {
		http__conn_close(c); /* all input read: closing cannot reset */
		return;
	}
	if (!c->reading && conn_read_start(c) == 0)
		c->reading = 1;
	http__conn_deadline(c, LINGER_MS);
}

void http__conn_stop_reading(struct conn *c)
{
	if (c->reading) {
		conn_read_stop(c);
		c->reading = 0;
	}
}

/* Continue with input kept while the pipeline was full. */
void http__conn_parse_left(struct conn *c)
{
	size_t n;

	if (!c->left || c->nreqs >= c->srv->lim.max_pipeline)
		return;
	n = http__conn_parse(c, c->left, c->left_len);
	if (n < c->left_len && c->left) {
		memmove(c->left, c->left + n, c->left_len - n);
		c->left_len -= n;
		return;
	}
	free(c->left);
	c->left = NULL;
	if (c->eof)
		c->stopped = 1;
	if (!c->stopped && !c->closing && !c->reading && conn_read_start(c) == 0)
		c->reading = 1;
}

/* The client closed its side (or the socket failed): answer the requests
 * already complete, including any kept while paused, then close. */
static void conn_on_eof(struct conn *c)
{
	http__conn_stop_reading(c);
	c->eof = 1;
	if (c->lingering || c->stream) {
		http__conn_close(c); /* a stream's client went away */
		return;
	}
	if (c->cur) {
		http__req_free(c->cur); /* a partial request cannot complete */
		c->in_req = 0;
	}
	if (!c->left)
		c->stopped = 1;
	if (list_empty(&c->reqs))
		http__conn_close(c);
	else
		http__conn_arm(c);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *c = h->data;

	(void)hint;
	buf->base = c->srv->rbuf;
	buf->len = HTTP_READ_BUF;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = st->data;
	size_t n;

	if (nread < 0) {
		conn_on_eof(c);
		return;
	}
	if (nread == 0 || c->lingering || c->closing)
		return;
	if (c->stopped) {
		c->linger = 1; /* dropped input: do not reset the last answer */
		return;
	}
	n = http__conn_parse(c, buf->base, (size_t)nread);
	if (n < (size_t)nread && !c->stopped && !c->closing) {
		c->left = malloc((size_t)nread - n);
		if (!c->left) {
			http__conn_close(c);
			return;
		}
		memcpy(c->left, buf->base + n, (size_t)nread - n);
		c->left_len = (size_t)nread - n;
		http__conn_stop_reading(c);
	}
	http__conn_arm(c);
}

/* ---- timers ----------------------------------------------------------------- */

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	uint64_t now = uv_now(c->srv->loop);

	if (!c->deadline)
		return;
	if (now < c->deadline) {
		c->due = c->deadline;
		uv_timer_start(t, on_timer, c->deadline - now, 0);
		return;
	}
	c->deadline = 0;
	if (c->lingering || c->fresh || !c->in_req)
		http__conn_close(c);
	else
		http__conn_error(c, 408, "request not received in time");
}

/* Pick the timer for the connection's state: the header timeout while a
 * request is being received (or none has begun), the idle timeout while
 * idle or writing, the linger while closing, none while the handler works. */
void http__conn_arm(struct conn *c)
{
	const struct http_limits *l = &c->srv->lim;

	if (c->closing || c->lingering)
		return; /* http__conn_finish() set the linger */
	if (c->stream && list_empty(&c->reqs)) { /* a stalled stream write times out */
		http__conn_deadline(c, c->stream->queued ? l->idle_timeout_ms : 0);
		return;
	}
	if (c->srv->draining && !c->in_req && list_empty(&c->reqs)) {
		c->head_timer = 0;
		http__conn_deadline(c, DRAIN_GRACE_MS);
		return;
	}
	if (c->fresh || c->in_req) {
		if (!c->head_timer)
			http__conn_deadline(c, l->header_timeout_ms);
		c->head_timer = 1;
		return;
	}
	c->head_timer = 0;
	http__conn_deadline(c, list_empty(&c->reqs) ||
			    http__req_of(list_first(&c->reqs))->state == R_WRITING ?
			 l->idle_timeout_ms : 0);
}

/* ---- server ---------------------------------------------------------------------- */

int http_server_create(struct uv_loop_s *loop, const struct http_limits *l,
		       const struct http_handler *h, struct http_server **out)
{
	struct http_server *s;

	if (!loop || !l || !h || !h->request || !h->error || !out ||
	    l->max_pipeline == 0 || (l->node_name && l->node_name[0] &&
				     !http_node_name_valid(l->node_name)))
		return ERR_INVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ERR_NOMEM;
	list_init(&s->conns);
	list_init(&s->free_reqs);
	s->rbuf = malloc(HTTP_READ_BUF);
	if (!s->rbuf) {
		free(s);
		return ERR_NOMEM;
	}
	s->loop = loop;
	s->lim = *l;
	s->h = *h;
	if (l->node_name && l->node_name[0])
		snprintf(s->node_line, sizeof(s->node_line), "X-Terrain-Node: %s\r\n",
			 l->node_name);
	http__parser_settings(&s->settings);
	*out = s;
	return 0;
}

static void peer_name(struct conn *c)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	if (c->mem)
		ss = c->mem->peer;
	else if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) < 0)
		return;
	if (ss.ss_family == AF_INET6)
		uv_ip6_name((struct sockaddr_in6 *)&ss, c->peer, sizeof(c->peer));
	else
		uv_ip4_name((struct sockaddr_in *)&ss, c->peer, sizeof(c->peer));
}

/*
 * TCP_NODELAY on c. A listener with it set (loop.c sets it) passes it to
 * the sockets it accepts on Linux: the first connection checks, and later
 * ones skip the system call when it held.
 */
static void no_delay(struct http_server *s, struct conn *c)
{
	uv_os_fd_t fd;
	int on = 0;
	socklen_t len = sizeof(on);

	if (s->nodelay == 1)
		return;
	if (s->nodelay == 0 && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 &&
	    getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len) == 0 && on) {
		s->nodelay = 1;
		return;
	}
	s->nodelay = -1;
	uv_tcp_nodelay(&c->tcp, 1);
}

/* Whether c is corked (see loop.c): the first connection asks, and later
 * ones take its answer. */
static void cork_check(struct http_server *s, struct conn *c)
{
	uv_os_fd_t fd;
	int on = 0;
	socklen_t len = sizeof(on);

	if (s->cork == 0 && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 &&
	    getsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, &len) == 0)
		s->cork = on ? 1 : -1;
	c->corked = s->cork == 1;
}

/*
 * The listener hands over a connection once its first bytes are in
 * (TCP_DEFER_ACCEPT, loop.c), so they can be read at once instead of after
 * the socket has been added to epoll and reported readable. A request that
 * is answered from the cache with Connection: close is then done before
 * its socket ever reaches epoll. Only bytes are taken here; EOF and errors
 * are left for libuv's own read to report, once.
 *
 * libuv accepts until the backlog is empty, and a client that reconnects
 * as soon as it is answered keeps it from ever being empty: answering every
 * connection in place would keep the loop from its other sockets and its
 * timers. So at most FIRST_READS connections are read here for each value
 * of uv_now(), which libuv sets once per turn of the loop (turns shorter
 * than a millisecond share one); the others wait for epoll as before.
 */
static void read_first(struct conn *c)
{
	struct http_server *s = c->srv;
	uv_os_fd_t fd;
	uv_buf_t buf;
	ssize_t n;

	if (s->first_reads_at != uv_now(s->loop)) {
		s->first_reads_at = uv_now(s->loop);
		s->first_reads = 0;
	}
	if (s->first_reads == FIRST_READS ||
	    uv_fileno((uv_handle_t *)&c->tcp, &fd) < 0)
		return;
	s->first_reads++;
	on_alloc((uv_handle_t *)&c->tcp, 0, &buf);
	do
		n = read(fd, buf.base, buf.len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		on_read((uv_stream_t *)&c->tcp, n, &buf);
}

/* A new connection on s, linked and counted, its handles initialised. */
static struct conn *conn_new(struct http_server *s)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->srv = s;
	c->tcp.data = c->timer.data = c;
	uv_tcp_init(s->loop, &c->tcp);
	uv_timer_init(s->loop, &c->timer);
	c->ops = 2;
	list_init(&c->reqs);
	list_insert_head(&s->conns, &c->node);
	llhttp_init(&c->parser, HTTP_REQUEST, &s->settings);
	c->parser.data = c;
	c->fresh = 1;
	c->rejected = s->nconns >= s->lim.max_connections + HTTP_RESERVE_CONNS;
	c->reserve = !c->rejected && s->nconns >= s->lim.max_connections;
	if (c->rejected)
		s->nrejected++;
	else
		s->nconns++;
	return c;
}

/* Serve c, connected (ok): or close it when it failed, the server drains
 * or too many are being refused; answer 503 past max_connections. */
static void conn_open(struct conn *c, int ok)
{
	struct http_server *s = c->srv;

	if (!ok || s->draining || (c->rejected && s->nrejected > REJECT_MAX)) {
		http__conn_close(c);
		return;
	}
	s->st.connections_total++;
	if (!c->mem) {
		no_delay(s, c);
		cork_check(s, c);
	}
	if (s->lim.access_log)
		peer_name(c);
	if (c->rejected) {
		s->st.rejected++;
		http__conn_error(c, 503, "too many connections");
		return;
	}
	if (conn_read_start(c) < 0) {
		http__conn_close(c);
		return;
	}
	c->reading = 1;
	if (!c->mem)
		read_first(c);
	http__conn_arm(c);
}

int http_server_accept(struct http_server *s, struct uv_stream_s *listener)
{
	struct conn *c = conn_new(s);

	if (!c)
		return ERR_NOMEM;
	conn_open(c, uv_accept(listener, (uv_stream_t *)&c->tcp) == 0);
	return 0;
}

int http_server_feed(struct http_server *s, const struct http_feed *f)
{
	struct memconn *m;
	struct conn *c;

	if (!s || !f || (!f->data && f->len) || !f->write || !f->closed ||
	    (f->peer && f->peer->sa_family != AF_INET && f->peer->sa_family != AF_INET6) ||
	    f->len > SIZE_MAX - sizeof(*m))
		return ERR_INVAL;
	m = calloc(1, sizeof(*m) + f->len);
	if (!m || !(c = conn_new(s))) {
		free(m);
		return ERR_NOMEM;
	}
	m->f = *f;
	if (f->len)
		memcpy(m->data, f->data, f->len);
	m->f.data = m->data;
	if (f->peer) {
		memcpy(&m->peer, f->peer, f->peer->sa_family == AF_INET ?
		       sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&m->peer;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	}
	uv_idle_init(s->loop, &m->idle);
	m->idle.data = c;
	c->mem = m;
	c->ops++;
	conn_open(c, 1);
	return 0;
}

/* Requests already sent still get answers (with Connection: close, see
 * on_message_complete); an idle connection closes after DRAIN_GRACE_MS, so
 * that a request racing the drain is answered rather than reset. */
static void drain_conn(struct conn *c)
{
	c->linger = 1;
	if (c->stream) {
		c->stream->ending = 1; /* conn_after_write() ends it once open */
		if (c->stream->open && !c->closing)
			http__conn_finish(c);
		return;
	}
	http__conn_arm(c);
}

void http_server_drain(struct http_server *s, void (*done)(void *arg), void *arg)
{
	struct list *it, *next;

	s->draining = 1;
	s->drain_done = done;
	s->drain_arg = arg;
	list_foreach_safe(it, next, &s->conns)
		drain_conn(list_entry(it, struct conn, node));
	if (s->nconns + s->nrejected == 0 && s->drain_done) {
		s->drain_done = NULL;
		done(arg);
	}
}

void http_server_close_all(struct http_server *s)
{
	struct list *it, *next;

	list_foreach_safe(it, next, &s->conns)
		http__conn_close(list_entry(it, struct conn, node));
}

void http_server_stats(const struct http_server *s, struct http_stats *st)
{
	*st = s->st;
	st->connections_open = s->nconns;
}

void http_server_destroy(struct http_server *s)
{
	if (!s)
		return;
	assert(list_empty(&s->conns));
	while (!list_empty(&s->free_reqs)) {
		struct conn_req *r = http__req_of(list_first(&s->free_reqs));

		list_remove(&r->node);
		free(r);
	}
	free(s->rbuf);
	free(s);
}
