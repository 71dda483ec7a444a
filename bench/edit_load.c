/*
 * edit_load.c - the edit load generator of bench/edits.sh.
 *
 *   edit_load PORT CLIENTS BATCHES EDITS_PER_BATCH WORLD [SPAN_M]
 *
 * CLIENTS kept-alive connections to 127.0.0.1:PORT, driven by one thread
 * with epoll the way redis-benchmark drives Redis, so that the two servers
 * are loaded alike: each connection posts a batch of EDITS_PER_BATCH raise
 * brushes and waits for the answer before sending the next, so every edit
 * counted was acknowledged (in the fsync'd log). BATCHES batches in all.
 * Brushes fall in a SPAN_M square centred on the origin (100000). With
 * EDIT_LOAD_KEYS=1 in the environment each batch carries an
 * Idempotency-Key of its own (docs/edits.md). Prints "edits N ok N
 * seconds S".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 256

struct conn {
	int fd;
	unsigned long long rng;
	size_t have;
	char buf[1 << 16];
};

static int per_batch;
static int span = 100000;   /* brushes in a SPAN x SPAN metre square */
static const char *world;
static long ok_batches, ok_edits;
static int keyed;            /* EDIT_LOAD_KEYS=1 */
static unsigned long long keys;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void send_batch(struct conn *c)
{
	static char body[65536], req[65536 + 256];
	size_t len = 0, n;

	len += (size_t)sprintf(body, "{\"edits\":[");
	for (int k = 0; k < per_batch; k++) {
		unsigned long long x = c->rng;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		c->rng = x;
		len += (size_t)sprintf(body + len, "%s{\"op\":\"raise\",\"x\":%d.5,\"z\":%d,"
				       "\"radius\":%d,\"strength\":0.25}", k ? "," : "",
				       (int)(x % (unsigned)span) - span / 2,
				       (int)((x >> 20) % (unsigned)span) - span / 2,
				       1 + (int)((x >> 40) % 8));
	}
	len += (size_t)sprintf(body + len, "]}");
	n = (size_t)sprintf(req, "POST /v1/worlds/%s/edits HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			    "Content-Type: application/json\r\nContent-Length: %zu\r\n", world, len);
	if (keyed)
		n += (size_t)sprintf(req + n, "Idempotency-Key: \"%d-%llu-%llu\"\r\n",
				     (int)getpid(), c->rng, ++keys);
	n += (size_t)sprintf(req + n, "\r\n");
	memcpy(req + n, body, len);
	if (send(c->fd, req, n + len, 0) != (ssize_t)(n + len))
		die("send");
}

/* Read what is there; returns 1 when a whole response has been consumed. */
static int on_readable(struct conn *c)
{
	for (;;) {
		ssize_t got = recv(c->fd, c->buf + c->have, sizeof(c->buf) - 1 - c->have,
				   MSG_DONTWAIT);
		char *end, *cl;
		size_t need;

		if (got == 0 || (got < 0 && c->have == 0)) {
			if (got < 0)
				return 0;
			fprintf(stderr, "edit_load: connection closed\n");
			exit(1);
		}
		if (got > 0)
			c->have += (size_t)got;
		c->buf[c->have] = '\0';
		end = strstr(c->buf, "\r\n\r\n");
		if (!end)
			return 0;
		cl = strcasestr(c->buf, "content-length: ");
		need = (size_t)(end + 4 - c->buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
		if (c->have < need) {
			if (got < 0)
				return 0;
			continue;
		}
		if (atoi(c->buf + 9) == 200) {
			ok_batches++;
			ok_edits += per_batch;
		}
		memmove(c->buf, c->buf + need, c->have - need);
		c->have -= need;
		return 1;
	}
}

int main(int argc, char **argv)
{
	static struct conn conns[MAX_CLIENTS];
	struct epoll_event evs[MAX_CLIENTS];
	struct sockaddr_in a = { 0 };
	struct timespec t0, t1;
	long batches, sent = 0, done = 0;
	int clients, ep;

	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: edit_load PORT CLIENTS BATCHES EDITS_PER_BATCH WORLD"
			" [SPAN_M]\n");
		return 2;
	}
	if (argc == 7 && (span = atoi(argv[6])) < 2)
		span = 2;
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	clients = atoi(argv[2]);
	batches = atol(argv[3]);
	per_batch = atoi(argv[4]);
	world = argv[5];
	keyed = getenv("EDIT_LOAD_KEYS") && !strcmp(getenv("EDIT_LOAD_KEYS"), "1");
	if (clients < 1 || clients > MAX_CLIENTS || per_batch < 1 || per_batch > 256)
		return 2;
	if ((ep = epoll_create1(0)) < 0)
		die("epoll_create1");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < clients; i++) {
		struct conn *c = &conns[i];
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
		int one = 1;

		c->fd = socket(AF_INET, SOCK_STREAM, 0);
		c->rng = (unsigned long long)(i + 1) * 2654435761u + 1;
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(c->fd, (struct sockaddr *)&a, sizeof(a)))
			die("connect");
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev))
			die("epoll_ctl");
		if (sent < batches) {
			send_batch(c);
			sent++;
		}
	}
	while (done < batches) {
		int n = epoll_wait(ep, evs, MAX_CLIENTS, 10000);

		if (n <= 0)
			die("epoll_wait (no answer in 10 s)");
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;

			if (!on_readable(c))
				continue;
			done++;
			if (sent < batches) {
				send_batch(c);
				sent++;
			}
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("edits %ld ok %ld seconds %.3f\n", ok_edits, ok_batches,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
