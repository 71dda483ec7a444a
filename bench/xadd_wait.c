/*
 * xadd_wait.c - the second anchor of bench/cluster.sh: Redis's own rate
 * of confirmed appends.
 *
 *   xadd_wait PORT CLIENTS SECONDS R O
 *
 * CLIENTS threads, one hiredis connection each to 127.0.0.1:PORT, each
 * sending XADD bench:wait * r R o O then WAIT 1 1000 (pipelined) and
 * waiting for both answers before the next: what an edit of the cluster
 * costs Redis alone (the append and the replica's confirmation), without
 * the script, the tail or HTTP. Prints "ops N seconds S ops_per_s X".
 */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int port;
static double seconds;
static const char *r_val, *o_val;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *client(void *arg)
{
	redisContext *c = redisConnect("127.0.0.1", port);
	long *ops = arg;
	double end = now() + seconds;
	redisReply *r;

	if (!c || c->err) {
		fprintf(stderr, "xadd_wait: cannot connect\n");
		exit(1);
	}
	while (now() < end) {
		redisAppendCommand(c, "XADD bench:wait * r %s o %s", r_val, o_val);
		redisAppendCommand(c, "WAIT 1 1000");
		if (redisGetReply(c, (void **)&r) != REDIS_OK)
			exit(1);
		freeReplyObject(r);
		if (redisGetReply(c, (void **)&r) != REDIS_OK)
			exit(1);
		if (r->type == REDIS_REPLY_INTEGER && r->integer >= 1)
			++*ops;
		freeReplyObject(r);
	}
	redisFree(c);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[256];
	long ops[256] = { 0 }, total = 0;
	double t0;
	int n, i;

	if (argc != 6 || (n = atoi(argv[2])) < 1 || n > 256) {
		fprintf(stderr, "usage: xadd_wait PORT CLIENTS SECONDS R O\n");
		return 2;
	}
	port = atoi(argv[1]);
	seconds = atof(argv[3]);
	r_val = argv[4];
	o_val = argv[5];
	t0 = now();
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, client, &ops[i]);
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		total += ops[i];
	}
	printf("ops %ld seconds %.3f ops_per_s %.0f\n", total, now() - t0,
	       (double)total / (now() - t0));
	return 0;
}
