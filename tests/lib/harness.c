/*
 * harness.c - the real server for the HTTP suites (harness.h): a child
 * process on a loopback port, raw sockets to it, answers read by
 * Content-Length or to the end. Knows nothing of routes or tiles.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAX_ARGS 32
#define START_WAIT_MS 60000 /* replaying a log under ASan on a busy machine */
#define STOP_WAIT_MS 60000

int harness_io_timeout_s = 60;

void harness_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- the server process ------------------------------------------------------ */

/* The port the log announces, or 0. */
static int port_in_log(const char *log)
{
	FILE *f = fopen(log, "r");
	char line[512], *p;
	int port = 0;

	while (f && !port && fgets(line, sizeof(line), f))
		if ((p = strstr(line, "listening on 127.0.0.1:")) != NULL)
			port = atoi(p + strlen("listening on 127.0.0.1:"));
	if (f)
		fclose(f);
	return port;
}

static void print_log(const struct harness_server *s)
{
	char line[1024];
	FILE *f = fopen(s->log, "r");

	fprintf(stderr, "server log (%s):\n", s->log);
	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "  %s", line);
	if (f)
		fclose(f);
}

static int start(struct harness_server *s, va_list ap)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	const char *argv[MAX_ARGS + 1];
	char bin[512];
	int argc = 0, fd, ms, status;

	snprintf(bin, sizeof(bin), "%s/terrain-server", build);
	snprintf(s->log, sizeof(s->log), "%s/stderr", s->dir);
	fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	argv[argc++] = bin;
	argv[argc++] = "serve";
	argv[argc++] = "--bind";
	argv[argc++] = "127.0.0.1";
	argv[argc++] = "--port";
	argv[argc++] = "0";
	argv[argc++] = "--data-dir";
	argv[argc++] = s->dir;
	while (argc < MAX_ARGS && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	argv[argc] = NULL;
	s->port = 0;
	s->pid = fork();
	if (s->pid < 0) {
		close(fd);
		return -1;
	}
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 2);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(fd);
	for (ms = 0; ms < START_WAIT_MS; ms += 20) {
		if ((s->port = port_in_log(s->log)) > 0)
			return 0;
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			s->pid = 0;
			return WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : -1;
		}
		harness_sleep_ms(20);
	}
	print_log(s);
	return -1;
}

int harness_start(struct harness_server *s, ...)
{
	va_list ap;
	int rc;

	snprintf(s->dir, sizeof(s->dir), "/tmp/terrain-harness.XXXXXX");
	if (!mkdtemp(s->dir))
		return -1;
	va_start(ap, s);
	rc = start(s, ap);
	va_end(ap);
	return rc;
}

int harness_restart(struct harness_server *s, ...)
{
	va_list ap;
	int rc;

	va_start(ap, s);
	rc = start(s, ap);
	va_end(ap);
	return rc;
}

int harness_stop(struct harness_server *s)
{
	int status = -1, ms;

	if (s->pid <= 0)
		return -1;
	kill(s->pid, SIGTERM);
	for (ms = 0; waitpid(s->pid, &status, WNOHANG) != s->pid; ms += 20) {
		if (ms >= STOP_WAIT_MS) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
			s->pid = 0;
			return -1;
		}
		harness_sleep_ms(20);
	}
	s->pid = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void harness_kill9(struct harness_server *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

void harness_clean(struct harness_server *s)
{
	char cmd[128];

	if (!s->dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
	assert_int_equal(system(cmd), 0);
}

int harness_end(struct harness_server *s)
{
	int rc = harness_stop(s);

	harness_clean(s);
	return rc;
}

int harness_log_has(const struct harness_server *s, const char *text)
{
	char line[1024];
	FILE *f = fopen(s->log, "r");
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, text) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* ---- sockets ---------------------------------------------------------------------- */

int harness_connect(int port, int rcvbuf)
{
	struct sockaddr_in a = { 0 };
	struct timeval tv = { harness_io_timeout_s, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "connect to port %d: %s\n", port, strerror(errno));
		fail();
	}
	return fd;
}

void harness_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

void harness_send_str(int fd, const char *s)
{
	harness_send(fd, s, strlen(s));
}

/* ---- answers ---------------------------------------------------------------------- */

const char *harness_header(const struct harness_resp *rp, const char *name, char *out,
			   size_t cap)
{
	const char *p = strstr(rp->head, "\r\n");
	size_t n = strlen(name);

	while (p && p[2]) {
		p += 2;
		if (!strncasecmp(p, name, n) && p[n] == ':') {
			const char *v = p + n + 1, *e = strstr(v, "\r\n");

			while (*v == ' ')
				v++;
			snprintf(out, cap, "%.*s", (int)(e - v), v);
			return out;
		}
		p = strstr(p, "\r\n");
	}
	return NULL;
}

void harness_read_all(int fd, struct harness_resp *rp)
{
	size_t cap = 1 << 16, len = 0, hlen;
	char *buf = malloc(cap), *end;
	ssize_t n;

	assert_non_null(buf);
	memset(rp, 0, sizeof(*rp));
	for (;;) {
		if (len == cap) {
			buf = realloc(buf, cap *= 2);
			assert_non_null(buf);
		}
		n = recv(fd, buf + len, cap - len, 0);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf = realloc(buf, len + 1);
	assert_non_null(buf);
	buf[len] = '\0';
	end = strstr(buf, "\r\n\r\n");
	assert_non_null(end);
	hlen = (size_t)(end - buf) + 4;
	assert_true(hlen < sizeof(rp->head));
	memcpy(rp->head, buf, hlen);
	assert_int_equal(sscanf(rp->head, "HTTP/1.1 %d", &rp->status), 1);
	rp->body_len = len - hlen;
	rp->body = malloc(rp->body_len + 1);
	assert_non_null(rp->body);
	memcpy(rp->body, buf + hlen, rp->body_len + 1);
	free(buf);
}

void harness_exchange(int port, const char *raw, struct harness_resp *rp)
{
	int fd = harness_connect(port, 0);

	harness_send_str(fd, raw);
	harness_read_all(fd, rp);
	close(fd);
}

void harness_reader_init(struct harness_reader *r, int fd)
{
	*r = (struct harness_reader){ fd, malloc(1 << 16), 0, 0, 1 << 16, 0 };
	assert_non_null(r->buf);
}

void harness_reader_release(struct harness_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

int harness_fill(struct harness_reader *r, size_t n)
{
	while (r->len - r->off < n) {
		ssize_t got;

		if (r->off) {
			memmove(r->buf, r->buf + r->off, r->len - r->off);
			r->len -= r->off;
			r->off = 0;
		}
		if (r->cap - r->len < 4096 || r->cap < n + 1) {
			r->cap = r->cap * 2 + n;
			r->buf = realloc(r->buf, r->cap);
			assert_non_null(r->buf);
		}
		got = recv(r->fd, r->buf + r->len, r->cap - r->len - 1, 0);
		if (got <= 0) {
			r->eof = 1;
			return -1;
		}
		r->len += (size_t)got;
	}
	return 0;
}

int harness_read_line(struct harness_reader *r, char *out, size_t cap)
{
	char *nl;

	for (;;) {
		nl = r->len > r->off ? memchr(r->buf + r->off, '\n', r->len - r->off) : NULL;
		if (nl)
			break;
		if (harness_fill(r, r->len - r->off + 1) < 0)
			return -1;
	}
	*nl = '\0';
	if (nl > r->buf + r->off && nl[-1] == '\r')
		nl[-1] = '\0';
	snprintf(out, cap, "%s", r->buf + r->off);
	r->off = (size_t)(nl + 1 - r->buf);
	return 0;
}

static char *find_crlf2(char *p, size_t n)
{
	size_t i;

	for (i = 0; i + 4 <= n; i++)
		if (!memcmp(p + i, "\r\n\r\n", 4))
			return p + i;
	return NULL;
}

int harness_read_resp(struct harness_reader *r, struct harness_resp *rp, int no_body)
{
	char cl[32];
	char *end;
	size_t hlen;

	memset(rp, 0, sizeof(*rp));
	for (;;) {
		if (r->len > r->off) {
			end = find_crlf2(r->buf + r->off, r->len - r->off);
			if (end)
				break;
		}
		if (harness_fill(r, r->len - r->off + 1) < 0)
			return -1;
	}
	hlen = (size_t)(end - (r->buf + r->off)) + 4;
	assert_true(hlen < sizeof(rp->head));
	memcpy(rp->head, r->buf + r->off, hlen);
	rp->head[hlen] = '\0';
	r->off += hlen;
	assert_int_equal(sscanf(rp->head, "HTTP/1.1 %d", &rp->status), 1);
	if (no_body || rp->status == 204 || rp->status == 304 ||
	    !harness_header(rp, "Content-Length", cl, sizeof(cl)))
		return 0;
	rp->body_len = strtoul(cl, NULL, 10);
	if (harness_fill(r, rp->body_len) < 0)
		return -1;
	rp->body = malloc(rp->body_len + 1);
	assert_non_null(rp->body);
	memcpy(rp->body, r->buf + r->off, rp->body_len);
	rp->body[rp->body_len] = '\0';
	r->off += rp->body_len;
	return 0;
}

int harness_request(int port, const char *raw, struct harness_resp *rp)
{
	struct harness_reader r;
	int fd = harness_connect(port, 0), rc;

	harness_send_str(fd, raw);
	harness_reader_init(&r, fd);
	rc = harness_read_resp(&r, rp, !strncmp(raw, "HEAD ", 5));
	harness_reader_release(&r);
	close(fd);
	return rc;
}

int harness_metric(int port, const char *name, double *v)
{
	struct harness_resp rp;
	char pat[128];
	const char *p;

	assert_int_equal(harness_request(port, "GET /metrics HTTP/1.1\r\nHost: t\r\n"
					       "Connection: close\r\n\r\n", &rp), 0);
	if (rp.status == 503) {
		free(rp.body);
		return -1;
	}
	assert_int_equal(rp.status, 200);
	snprintf(pat, sizeof(pat), "\n%s ", name);
	p = strstr(rp.body, pat);
	if (!strchr(name, '{'))
		assert_non_null(p);
	*v = p ? strtod(p + strlen(pat), NULL) : 0;
	free(rp.body);
	return 0;
}
