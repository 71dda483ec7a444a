/*
 * cluster_load.c - edit load against several nodes of one world, for
 * tests/cluster/cluster.sh and bench/cluster.sh.
 *
 *   cluster_load [-p] [-h] [-l] [-k] [-n BATCHES] [-t SECONDS] [-w MS] [-r METRES] [-e EDITS] [-a ACKS] PORTS CLIENTS WORLD
 *
 * CLIENTS clients (one epoll thread, as bench/edit_load.c) each post one
 * one-edit batch (-e: EDITS edits, 1 to 64; the ACKS lines and the
 * client's brush are then the first edit's) at a time to 127.0.0.1 at a node of PORTS (comma-
 * separated) picked at random for every batch (-p: client i always posts
 * to node i mod the number of nodes), with kept-alive connections, and
 * wait for the answer (and then MS more, -w). Brushes fall within METRES
 * of the origin on both axes (-r; 50000). A node that is down, closes or does not answer in
 * 5 s costs that batch (counted as an error) and the client goes on. Stops
 * after BATCHES batches, after SECONDS, or on SIGTERM/SIGINT, waiting for
 * the answers in flight. ACKS gets one line per acknowledged (200) batch:
 * "first_seq x_mm z_mm radius_mm", what the log must hold at first_seq,
 * and with -h the world hash after the batch as a fifth column.
 * Prints "sent N ok N unavailable N other N errors N seconds S" and, with
 * -l, the latency percentiles of the acknowledged batches. -k: each batch
 * carries an Idempotency-Key of its own (docs/edits.md).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 256
#define MAX_NODES 16
#define TIMEOUT_S 5.0

struct client {
	int fds[MAX_NODES];     /* kept-alive, one per node; -1: none */
	int fd, node, busy;     /* the one of the batch in flight */
	unsigned long long rng;
	long long x_mm, z_mm, r_mm;
	double sent_at, ready_at;   /* the batch's; when to send the next */
	size_t have;
	char buf[8192];
};

static int ports[MAX_NODES], nports, pin;
static double pause_s;
static long long range_m = 50000;   /* brushes within +-range_m of the origin */
static int per_batch = 1;           /* -e: edits per batch */
static const char *world;
static volatile sig_atomic_t stop;
static long sent, ok, unavailable, other, errors;
static FILE *acks;
static int hashes;      /* -h: acks carry the world hash after the batch */
static int keyed;       /* -k: an Idempotency-Key per batch */
static double *lat;
static size_t nlat, caplat;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A batch lost (node down, closed, no answer): try again a little later. */
static void failed(struct client *c)
{
	errors++;
	c->ready_at = now() + (pause_s > 0.02 ? pause_s : 0.02);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static unsigned long long next(struct client *c)
{
	unsigned long long x = c->rng;

	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	return c->rng = x;
}

/* Close c's connection to node (the one in flight, if it is that). */
static void drop(int ep, struct client *c, int node)
{
	if (c->fds[node] >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, c->fds[node], NULL);
		close(c->fds[node]);
	}
	c->fds[node] = -1;
	if (c->node == node) {
		c->fd = -1;
		c->busy = 0;
		c->have = 0;
	}
}

/* c's connection to node, opened when missing; 0 or -1. */
static int connect_to(int ep, struct client *c, int idx, int node)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)ports[node]),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = (uint64_t)idx * MAX_NODES + (uint64_t)node };
	int one = 1;

	c->node = node;
	if ((c->fd = c->fds[node]) >= 0)
		return 0;
	c->fd = c->fds[node] = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev)) {
		drop(ep, c, node);
		return -1;
	}
	return 0;
}

static void send_batch(int ep, struct client *c, int idx)
{
	static unsigned long long keys;
	char body[64 * 112 + 16], req[sizeof(body) + 384], key[96] = "";
	unsigned long long x = next(c);
	int node = pin ? idx % nports : (int)(x % (unsigned)nports), n, len;

	sent++;
	if (connect_to(ep, c, idx, node)) {
		failed(c);
		return;
	}
	c->x_mm = ((long long)((x >> 8) % (2 * range_m)) - range_m) * 1000 + 500;
	c->z_mm = ((long long)((x >> 28) % (2 * range_m)) - range_m) * 1000;
	c->r_mm = (1 + (long long)((x >> 48) % 8)) * 1000;
	len = snprintf(body, sizeof(body), "{\"edits\":[");
	for (int k = 0; k < per_batch; k++) {
		long long xm = c->x_mm, zm = c->z_mm, rm = c->r_mm;

		if (k) { /* the others: brushes of their own */
			unsigned long long y = next(c);

			xm = ((long long)((y >> 8) % (2 * range_m)) - range_m) * 1000 + 500;
			zm = ((long long)((y >> 28) % (2 * range_m)) - range_m) * 1000;
			rm = (1 + (long long)((y >> 48) % 8)) * 1000;
		}
		len += snprintf(body + len, sizeof(body) - (size_t)len,
				"%s{\"op\":\"raise\",\"x\":%.1f,\"z\":%lld,\"radius\":%lld,"
				"\"strength\":0.25}", k ? "," : "", (double)xm / 1000, zm / 1000,
				rm / 1000);
	}
	len += snprintf(body + len, sizeof(body) - (size_t)len, "]}");
	if (keyed)
		snprintf(key, sizeof(key), "Idempotency-Key: \"%d-%llu-%llu\"\r\n", (int)getpid(),
			 x, ++keys);
	n = snprintf(req, sizeof(req), "POST /v1/worlds/%s/edits HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		     "Content-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s",
		     world, len, key, body);
	if (send(c->fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
		drop(ep, c, node);
		failed(c);
		return;
	}
	c->busy = 1;
	c->sent_at = now();
}

/* One whole answer in c->buf: count it. */
static void answered(struct client *c)
{
	int status = atoi(c->buf + 9);
	const char *f = strstr(c->buf, "\"first_seq\":");

	if (status == 200 && f) {
		const char *h = strstr(c->buf, "\"world_hash\":\"");

		ok++;
		if (acks && hashes)
			fprintf(acks, "%lld %lld %lld %lld %.16s\n", atoll(f + 12), c->x_mm, c->z_mm,
				c->r_mm, h ? h + 14 : "-");
		else if (acks)
			fprintf(acks, "%lld %lld %lld %lld\n", atoll(f + 12), c->x_mm, c->z_mm,
				c->r_mm);
		if (nlat == caplat) {
			caplat = caplat ? 2 * caplat : 4096;
			lat = realloc(lat, caplat * sizeof(*lat));
		}
		if (lat)
			lat[nlat++] = now() - c->sent_at;
	} else if (status == 503) {
		unavailable++;
	} else {
		other++;
	}
}

/* Read what is there on c's connection to node. */
static void on_readable(int ep, struct client *c, int node)
{
	ssize_t got;
	char *end, *cl;
	size_t need;

	if (!c->busy || c->node != node) { /* an idle one: closed by the node */
		drop(ep, c, node);
		return;
	}
	got = recv(c->fd, c->buf + c->have, sizeof(c->buf) - 1 - c->have, MSG_DONTWAIT);
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got <= 0) {
		drop(ep, c, node);
		failed(c);
		return;
	}
	c->have += (size_t)got;
	c->buf[c->have] = '\0';
	if (!(end = strstr(c->buf, "\r\n\r\n")))
		return;
	cl = strcasestr(c->buf, "content-length: ");
	need = (size_t)(end + 4 - c->buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
	if (c->have < need)
		return;
	answered(c);
	c->busy = 0;
	c->ready_at = now() + pause_s;
	c->have = 0;
	if (strcasestr(c->buf, "connection: close"))
		drop(ep, c, node);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static struct client cs[MAX_CLIENTS];
	struct epoll_event evs[MAX_CLIENTS];
	long batches = -1;
	double seconds = -1, t0;
	int clients, ep, opt, busy, show_lat = 0;
	char *p;

	while ((opt = getopt(argc, argv, "phlkn:t:w:a:r:e:")) != -1) {
		if (opt == 'k')
			keyed = 1;
		else if (opt == 'h')
			hashes = 1;
		else if (opt == 'r')
			range_m = atol(optarg) > 0 ? atol(optarg) : 1;
		else if (opt == 'p')
			pin = 1;
		else if (opt == 'e')
			per_batch = atoi(optarg) >= 1 && atoi(optarg) <= 64 ? atoi(optarg) : 1;
		else if (opt == 'l')
			show_lat = 1;
		else if (opt == 'n')
			batches = atol(optarg);
		else if (opt == 't')
			seconds = atof(optarg);
		else if (opt == 'w')
			pause_s = atof(optarg) / 1e3;
		else if (opt == 'a' && !(acks = fopen(optarg, "w")))
			return perror(optarg), 1;
		else if (opt != 'a')
			return 2;
	}
	if (argc - optind != 3) {
		fprintf(stderr, "usage: cluster_load [-p] [-h] [-l] [-k] [-n BATCHES] [-t SECONDS] [-w MS] "
			"[-r METRES] [-e EDITS] [-a ACKS] PORTS CLIENTS WORLD\n");
		return 2;
	}
	for (p = argv[optind]; *p && nports < MAX_NODES; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
		ports[nports++] = atoi(p);
	clients = atoi(argv[optind + 1]);
	world = argv[optind + 2];
	if (!nports || clients < 1 || clients > MAX_CLIENTS || (ep = epoll_create1(0)) < 0)
		return 2;
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	t0 = now();
	for (int i = 0; i < clients; i++) {
		cs[i].fd = -1;
		for (int k = 0; k < MAX_NODES; k++)
			cs[i].fds[k] = -1;
		cs[i].rng = (unsigned long long)(i + 1) * 2654435761u + (unsigned long long)getpid();
	}
	for (;;) {
		int n, idle;

		if ((batches >= 0 && sent >= batches) || (seconds >= 0 && now() - t0 >= seconds))
			stop = 1;
		busy = 0;
		for (int i = 0; i < clients; i++) {
			if (!cs[i].busy && !stop && (batches < 0 || sent < batches) &&
			    now() >= cs[i].ready_at)
				send_batch(ep, &cs[i], i);
			if (cs[i].busy && now() - cs[i].sent_at > TIMEOUT_S) {
				drop(ep, &cs[i], cs[i].node);
				failed(&cs[i]);
			}
			busy += cs[i].busy;
		}
		if (stop && !busy)
			break;
		n = epoll_wait(ep, evs, MAX_CLIENTS, pause_s > 0 ? 1 : 50);
		idle = n <= 0;
		for (int i = 0; i < n; i++)
			on_readable(ep, &cs[evs[i].data.u64 / MAX_NODES],
				    (int)(evs[i].data.u64 % MAX_NODES));
		if (idle && !busy)
			usleep(10000); /* every node down: do not spin */
	}
	printf("sent %ld ok %ld unavailable %ld other %ld errors %ld seconds %.3f\n", sent, ok,
	       unavailable, other, errors, now() - t0);
	if (show_lat && nlat) {
		qsort(lat, nlat, sizeof(*lat), cmp);
		printf("latency_ms p50 %.2f p99 %.2f p999 %.2f max %.2f\n", 1e3 * lat[nlat / 2],
		       1e3 * lat[nlat * 99 / 100], 1e3 * lat[nlat * 999 / 1000], 1e3 * lat[nlat - 1]);
	}
	if (acks)
		fclose(acks);
	free(lat);
	return 0;
}
