/*
 * mklog.c - write an edit log of N edits straight through the store, as
 * POSTs of the same batches would have: bench/snapshots.sh uses it to time
 * start-up on 10^6 and 10^7 edits without minutes of HTTP first, and
 * bench/reverts.sh to build a world of players and one griefer.
 *
 *	mklog [-b PER_BATCH] [-v 1|2|3] [-p PLAYERS] [-g EDITS,SPAN_M,X_M,Z_M]
 *	      DATA_DIR EDITS SPAN_M [WORLD]
 *
 * Edits are raise brushes of radius 1-8 m at uniformly random points of
 * the SPAN_M x SPAN_M square centred on the origin (xorshift, fixed seed),
 * in batches of PER_BATCH (default 256) on world WORLD ("replay") of the
 * default generator. -v: the record version (common/batch.h): 1 (the
 * default: no time, no author), 2 (with the log's time), 3 (time and
 * author); the times run evenly over the hour before now, so that every
 * batch lies within the server's --history. Version 3 names each batch's
 * author "plyrNNNN" (8 characters), the players taking turns (-p, 1000).
 * -g (version 3): EDITS of the EDITS are by "griefer": lower brushes of
 * radius 2-12 m and 0.5-3 m deep at random points of the SPAN_M square
 * centred on (X_M, Z_M), in batches of PER_BATCH interleaved evenly with
 * the players' through the log. Prints nothing; exits 0 once all is
 * durable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "batch.h"
#include "edit.h"
#include "editlog/store.h"
#include "err.h"
#include "seed.h"

static void done(void *arg, int status)
{
	if (status) {
		fprintf(stderr, "mklog: append failed: %s\n", err_str(status));
		exit(1);
	}
	(void)arg;
}

static int skip(void *arg, const uint8_t *p, size_t len)
{
	(void)arg, (void)p, (void)len;
	return 0;
}

static unsigned long long next(unsigned long long *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

static void usage(void)
{
	fprintf(stderr, "usage: mklog [-b PER_BATCH] [-v 1|2|3] [-p PLAYERS] "
			"[-g EDITS,SPAN_M,X_M,Z_M] DATA_DIR EDITS SPAN_M [WORLD]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static uint8_t wire[EDIT_BATCH_MAX * EDIT_WIRE_SIZE], rec[BATCH_MAX];
	unsigned long long n, span, x = 0x9e3779b97f4a7c15ull, gx = 0x2545f4914f6cdd1dull;
	unsigned long long seq = 1, g = 0, gspan = 0, gdone = 0, k = 0;
	unsigned long long batches, gbatches, players = 1000, per = EDIT_BATCH_MAX;
	long long gcx = 0, gcz = 0;
	unsigned version = 1;
	const char *world;
	uv_loop_t loop;
	struct store *s;
	uint64_t seed, t0;
	struct timespec ts;
	char err[512];
	size_t len;
	int opt;

	while ((opt = getopt(argc, argv, "b:v:p:g:")) != -1) {
		switch (opt) {
		case 'b': per = strtoull(optarg, NULL, 10); break;
		case 'v': version = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'p': players = strtoull(optarg, NULL, 10); break;
		case 'g':
			if (sscanf(optarg, "%llu,%llu,%lld,%lld", &g, &gspan, &gcx, &gcz) != 4)
				usage();
			break;
		default: usage();
		}
	}
	if (argc - optind < 3)
		usage();
	world = argc - optind > 3 ? argv[optind + 3] : "replay";
	n = strtoull(argv[optind + 1], NULL, 10);
	span = strtoull(argv[optind + 2], NULL, 10);
	if (!per || per > EDIT_BATCH_MAX || version < 1 || version > 3 || !players ||
	    players > 10000 || g > n || (g && (version != 3 || !gspan))) {
		fprintf(stderr, "mklog: -b 1..256, -v 1..3, -p 1..10000, -g (version 3) at most EDITS\n");
		return 2;
	}
	if (!span || seed_parse(world, strlen(world), &seed) || uv_loop_init(&loop) ||
	    store_open(argv[optind], &loop, NULL, &s, err, sizeof(err)) ||
	    store_replay(s, skip, NULL, NULL)) {
		fprintf(stderr, "mklog: cannot open %s\n", argv[optind]);
		return 1;
	}
	gbatches = (g + per - 1) / per;
	batches = gbatches + (n - g + per - 1) / per;
	clock_gettime(CLOCK_REALTIME, &ts);
	t0 = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 - 3600000;
	for (k = 0; seq <= n; k++) {
		/* the griefer's turn when its share of the batches so far is due */
		int grief = gdone < g && ((gdone / per + 1) * batches <= (k + 1) * gbatches ||
					  seq - 1 - gdone >= n - g);
		unsigned long long left = grief ? g - gdone : (n - g) - (seq - 1 - gdone);
		unsigned count = left < per ? (unsigned)left : (unsigned)per;
		char author[16];
		struct batch b = { .gen = "default", .gen_len = 7, .seed = seed, .first_seq = seq,
				   .count = count, .edits = wire };
		unsigned i;
		int rc;

		if (version >= 2)
			b.time_ms = t0 + k * 3600000 / batches;
		if (version == 3) {
			if (grief)
				snprintf(author, sizeof(author), "griefer");
			else
				snprintf(author, sizeof(author), "plyr%04llu", k % players);
			b.author = author;
			b.author_len = strlen(author);
		}
		for (i = 0; i < count; i++) {
			struct edit e;

			if (grief) {
				unsigned long long r = next(&gx);

				e = (struct edit){ EDIT_LOWER, EDIT_SMOOTH,
						   gcx * 1000 + (int64_t)(r % (gspan * 1000)) - (int64_t)gspan * 500,
						   gcz * 1000 + (int64_t)((r >> 24) % (gspan * 1000)) -
							   (int64_t)gspan * 500,
						   2000 + (int64_t)((r >> 48) % 10000),
						   500000 + (int64_t)((r >> 40) % 2500000), 0 };
			} else {
				next(&x);
				e = (struct edit){ EDIT_RAISE, EDIT_SMOOTH,
						   (int64_t)(x % (span * 1000)) - (int64_t)span * 500,
						   (int64_t)((x >> 24) % (span * 1000)) - (int64_t)span * 500,
						   1000 + (int64_t)((x >> 48) % 7000), 250000, 0 };
			}
			edit_encode(&e, wire + (size_t)i * EDIT_WIRE_SIZE);
		}
		if (batch_encode(&b, rec, sizeof(rec), &len))
			return 1;
		while ((rc = store_append(s, rec, len, done, NULL)) == ERR_BUSY)
			uv_run(&loop, UV_RUN_ONCE);
		if (rc) {
			fprintf(stderr, "mklog: append: %s\n", err_str(rc));
			return 1;
		}
		seq += count;
		if (grief)
			gdone += count;
	}
	store_close(s);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return 0;
}
