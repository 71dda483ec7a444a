/*
 * edit_lag.c - how soon an edit posted to one node shows on another, for
 * bench/cluster.sh.
 *
 *   edit_lag POST_PORT EVENTS_PORT WORLD N
 *
 * Opens the event stream of WORLD on 127.0.0.1:EVENTS_PORT, then N times:
 * posts one one-edit batch to 127.0.0.1:POST_PORT (kept alive), and waits
 * for its answer and for the stream's event of its batch (id >= its
 * last_seq). Prints the percentiles of the time from sending the POST to
 * the answer ("ack") and to the event on the other node ("visible").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int dial(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("edit_lag: connect");
		exit(1);
	}
	return fd;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void print(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("%s_ms p50 %.2f p99 %.2f max %.2f\n", what, 1e3 * v[n / 2], 1e3 * v[n * 99 / 100],
	       1e3 * v[n - 1]);
}

int main(int argc, char **argv)
{
	static char pbuf[1 << 16], sbuf[1 << 20];
	size_t phave = 0, shave = 0;
	unsigned long long seen = 0;   /* the stream's last id, and when it came */
	double seen_at = 0, *ack, *vis;
	const char *world;
	int pfd, sfd, n, i;
	char req[512];

	if (argc != 5 || (n = atoi(argv[4])) < 1) {
		fprintf(stderr, "usage: edit_lag POST_PORT EVENTS_PORT WORLD N\n");
		return 2;
	}
	world = argv[3];
	ack = calloc((size_t)n, sizeof(*ack));
	vis = calloc((size_t)n, sizeof(*vis));
	pfd = dial(atoi(argv[1]));
	sfd = dial(atoi(argv[2]));
	snprintf(req, sizeof(req), "GET /v1/worlds/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Accept: text/event-stream\r\n\r\n", world);
	if (send(sfd, req, strlen(req), 0) < 0)
		return perror("edit_lag: send"), 1;
	usleep(200000); /* the stream is open before the first edit */
	for (i = 0; i < n; i++) {
		static const char body[] = "{\"edits\":[{\"op\":\"raise\",\"x\":10,\"z\":20,"
					   "\"radius\":3,\"strength\":0.1}]}";
		unsigned long long last = 0;
		double t0 = now();
		int len = snprintf(req, sizeof(req), "POST /v1/worlds/%s/edits HTTP/1.1\r\n"
				   "Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
				   "Content-Length: %zu\r\n\r\n%s", world, sizeof(body) - 1, body);

		if (send(pfd, req, (size_t)len, 0) != len)
			return perror("edit_lag: send"), 1;
		ack[i] = vis[i] = 0;
		while (!ack[i] || !vis[i]) {
			struct pollfd p[2] = { { pfd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
			char *e, *l;
			ssize_t got;

			if (poll(p, 2, 10000) <= 0) {
				fprintf(stderr, "edit_lag: nothing in 10 s\n");
				return 1;
			}
			if (p[0].revents && (got = recv(pfd, pbuf + phave, sizeof(pbuf) - 1 - phave, 0)) > 0) {
				phave += (size_t)got;
				pbuf[phave] = '\0';
				if ((e = strstr(pbuf, "\r\n\r\n")) && (l = strstr(e, "\"last_seq\":")) &&
				    strchr(l, '}')) {
					if (atoi(pbuf + 9) != 200) {
						fprintf(stderr, "edit_lag: status %d\n", atoi(pbuf + 9));
						return 1;
					}
					last = strtoull(l + 11, NULL, 10);
					ack[i] = now() - t0;
					phave = 0;
				}
			}
			if (p[1].revents && (got = recv(sfd, sbuf + shave, sizeof(sbuf) - 1 - shave, 0)) > 0) {
				shave += (size_t)got;
				sbuf[shave] = '\0';
				for (l = sbuf; (l = strstr(l, "\nid: ")); l++)
					if (strtoull(l + 5, NULL, 10) > seen) {
						seen = strtoull(l + 5, NULL, 10);
						seen_at = now();
					}
				if ((l = strrchr(sbuf, '\n'))) { /* keep a partial line */
					shave = strlen(l);
					memmove(sbuf, l, shave + 1);
				}
			}
			if (ack[i] && !vis[i] && seen >= last)
				vis[i] = seen_at - t0;
		}
	}
	print("ack", ack, n);
	print("visible", vis, n);
	return 0;
}
