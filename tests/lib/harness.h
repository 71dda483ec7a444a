/*
 * harness.h - the real server for the cmocka suites that talk HTTP to it
 * (test_http.c, test_http_tiles.c, test_world_http.c, test_maps.c):
 * start $BUILD/terrain-server serve on a free loopback port with the
 * options a test gives, send requests over raw sockets, read the answers,
 * stop it. Linked into every test binary from BUILD/tests/libharness.a
 * (only those that call it pull it in).
 *
 * The server is a child process, as libuv's test runner starts its
 * helpers: killed by PR_SET_PDEATHSIG when the test binary dies, its
 * stderr in DIR/stderr, its data directory DIR a fresh one under /tmp.
 * Every socket gets harness_io_timeout_s as its receive and send timeout,
 * so a server that stops answering fails a test instead of hanging it.
 * Failures inside (a connection refused, a malformed answer) fail the
 * running test through cmocka's asserts.
 *
 *	struct harness_server s;
 *	assert_int_equal(harness_start(&s, "--workers", "2", NULL), 0);
 *	harness_exchange(s.port, "GET /healthz HTTP/1.1\r\nHost: t\r\n"
 *			 "Connection: close\r\n\r\n", &rp);
 *	assert_int_equal(harness_end(&s), 0);
 */
#ifndef TESTS_HARNESS_H
#define TESTS_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

/* Seconds each socket waits to read or write (default 60); a suite sets
 * it in main() for its slowest answers (eroded tiles under ASan: 120). */
extern int harness_io_timeout_s;

struct harness_server {
	pid_t pid;      /* 0 once stopped */
	int port;
	char dir[64];   /* its --data-dir */
	char log[96];   /* its stderr: dir/stderr */
};

/*
 * Start the server on a new data directory with the extra options given
 * (NULL-terminated), after "serve --bind 127.0.0.1 --port 0 --data-dir
 * DIR". Returns 0 once it listens (s->port set), the exit status when it
 * ended first with one, or -1 (could not start, or not listening within
 * 60 s; its log is printed).
 */
int harness_start(struct harness_server *s, ...);

/* The same on s->dir again (after harness_kill9 or harness_stop): the
 * log is started afresh, the data kept. */
int harness_restart(struct harness_server *s, ...);

/* SIGTERM and wait (SIGKILL after 60 s). Returns the exit status, or -1
 * (killed, or not running). Keeps s->dir. */
int harness_stop(struct harness_server *s);

/* SIGKILL and reap: a crash, for recovery tests. */
void harness_kill9(struct harness_server *s);

/* Remove s->dir and all in it (the log too). */
void harness_clean(struct harness_server *s);

/* harness_stop, then harness_clean; the exit status. */
int harness_end(struct harness_server *s);

/* Whether a line of the server's stderr contains text. */
int harness_log_has(const struct harness_server *s, const char *text);

/* A connection to 127.0.0.1:port (asserts it connects); rcvbuf > 0 sets
 * its receive buffer first, so that it bounds the TCP window. */
int harness_connect(int port, int rcvbuf);

/* Send all of buf (asserts). */
void harness_send(int fd, const void *buf, size_t len);
void harness_send_str(int fd, const char *s);

/* One answer: its status, its head (status line and headers, "\r\n"
 * each, up to the empty line) and its body, NUL-terminated after
 * body_len bytes (free it; NULL when there is none). */
struct harness_resp {
	int status;
	char head[8192];
	char *body;
	size_t body_len;
};

/* The value of header name (any case) into out, or NULL without one. */
const char *harness_header(const struct harness_resp *rp, const char *name, char *out,
			   size_t cap);

/* Read fd to its end (an answer to "Connection: close"): the whole
 * answer, whatever its framing. */
void harness_read_all(int fd, struct harness_resp *rp);

/* Send raw (a whole request, "Connection: close") on a new connection to
 * port and read the answer to the end. */
void harness_exchange(int port, const char *raw, struct harness_resp *rp);

/* Buffered input of one connection, for answers one after another on a
 * kept-alive connection and for event streams. */
struct harness_reader {
	int fd;
	char *buf;
	size_t len, off, cap;
	int eof;        /* the peer closed (or the read timed out) */
};

void harness_reader_init(struct harness_reader *r, int fd);
void harness_reader_release(struct harness_reader *r);

/* At least n unread bytes at r->buf + r->off; 0, or -1 at EOF/timeout. */
int harness_fill(struct harness_reader *r, size_t n);

/* One line, without its "\r\n" or "\n", into out; 0, or -1 at EOF. */
int harness_read_line(struct harness_reader *r, char *out, size_t cap);

/* One answer by its Content-Length (none: no body); no_body for an
 * answer to HEAD. 0, or -1 at EOF before it was whole. */
int harness_read_resp(struct harness_reader *r, struct harness_resp *rp, int no_body);

/* raw on a new connection to port, its answer by Content-Length (no body
 * read for HEAD). 0, or -1 at EOF first. */
int harness_request(int port, const char *raw, struct harness_resp *rp);

/*
 * Metric name (labels included) of the server on port into *v, from GET
 * /metrics: 0, or -1 while the server answers 503 (at its connection
 * limit). An unlabelled name must be there; a labelled one not printed
 * yet reads 0.
 */
int harness_metric(int port, const char *name, double *v);

/* nanosleep for ms milliseconds. */
void harness_sleep_ms(long ms);

#endif
