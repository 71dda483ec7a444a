/*
 * mklog.c - write an edit log of N edits straight through the store, as
 * N / 256 POSTs of 256 would have: bench/snapshots.sh uses it to time
 * start-up on 10^6 and 10^7 edits without minutes of HTTP first.
 *
 *	mklog DATA_DIR EDITS SPAN_M [WORLD]
 *
 * Edits are raise brushes of radius 1-8 m at uniformly random points of
 * the SPAN_M x SPAN_M square centred on the origin (xorshift, fixed seed),
 * in batches of 256 on world WORLD ("replay") of the default generator.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "batch.h"
#include "edit.h"
#include "err.h"
#include "seed.h"
#include "store.h"

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

int main(int argc, char **argv)
{
	static uint8_t wire[EDIT_BATCH_MAX * EDIT_WIRE_SIZE], rec[BATCH_MAX];
	const char *world = argc > 4 ? argv[4] : "replay";
	unsigned long long n, span, x = 0x9e3779b97f4a7c15ull, seq = 1;
	uv_loop_t loop;
	struct store *s;
	uint64_t seed;
	char err[512];
	size_t len;

	if (argc < 4) {
		fprintf(stderr, "usage: mklog DATA_DIR EDITS SPAN_M [WORLD]\n");
		return 2;
	}
	n = strtoull(argv[2], NULL, 10);
	span = strtoull(argv[3], NULL, 10);
	if (!span || seed_parse(world, strlen(world), &seed) || uv_loop_init(&loop) ||
	    store_open(argv[1], &loop, NULL, &s, err, sizeof(err)) ||
	    store_replay(s, skip, NULL, NULL)) {
		fprintf(stderr, "mklog: cannot open %s\n", argv[1]);
		return 1;
	}
	while (seq <= n) {
		unsigned count = n - seq + 1 < EDIT_BATCH_MAX ? (unsigned)(n - seq + 1) :
							       EDIT_BATCH_MAX;
		struct batch b = { .gen = "default", .gen_len = 7, .seed = seed, .first_seq = seq, .count = count, .edits = wire };
		unsigned k;
		int rc;

		for (k = 0; k < count; k++) {
			struct edit e;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			e = (struct edit){ EDIT_RAISE, EDIT_SMOOTH,
					   (int64_t)(x % (span * 1000)) - (int64_t)span * 500,
					   (int64_t)((x >> 24) % (span * 1000)) - (int64_t)span * 500,
					   1000 + (int64_t)((x >> 48) % 7000), 250000, 0 };
			edit_encode(&e, wire + (size_t)k * EDIT_WIRE_SIZE);
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
	}
	store_close(s);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	return 0;
}
