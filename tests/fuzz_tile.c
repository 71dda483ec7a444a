/*
 * fuzz_tile.c - libFuzzer target for the tile decoder (make fuzz).
 *
 * Every input is decoded twice: as given, which mostly exercises the header
 * checks and the checksum, and with its checksum field recomputed, so that
 * random payloads reach the filter and the canonical-form checks. Whatever
 * decodes must re-encode to exactly the same bytes (the format is
 * canonical), and the header-only decoder must agree with the full one.
 * Any violation aborts, which libFuzzer reports as a crash.
 *
 *   make fuzz && build-fuzz/fuzz_tile -max_total_time=60
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_tile: %s\n", what);
	abort();
}

/* Decode buf; on success check the re-encoding and the header decoder. */
static void check(const uint8_t *buf, size_t len)
{
	struct tile t, hdr;
	uint8_t *out;
	size_t cap, n = 0;
	int rc = tile_decode(buf, len, &t);

	if (rc) {
		if (rc > 0 || t.h)
			fail("failed decode left a result");
		return;
	}
	if (tile_decode_header(buf, len, &hdr) || hdr.side != t.side ||
	    hdr.cx != t.cx || hdr.cz != t.cz || hdr.seed != t.seed)
		fail("header decoder disagrees");
	cap = tile_encode_bound(&t);
	out = malloc(cap);
	if (!out)
		fail("out of memory");
	if (tile_encode(&t, out, cap, &n) || n != len || memcmp(out, buf, n))
		fail("decoded tile does not re-encode to the same bytes");
	if (tile_checksum(out) != tile_checksum(buf))
		fail("checksum differs");
	free(out);
	tile_release(&t);
}

/* The input with a valid checksum (bytes 56..63) for its other bytes. */
static void check_resealed(const uint8_t *data, size_t size)
{
	uint8_t *b;
	XXH3_state_t *st;
	uint64_t sum;

	if (size < TILE_HEADER_SIZE)
		return;
	b = malloc(size);
	st = XXH3_createState();
	if (!b || !st)
		fail("out of memory");
	memcpy(b, data, size);
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, b, 56);
	XXH3_64bits_update(st, b + TILE_HEADER_SIZE, size - TILE_HEADER_SIZE);
	sum = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	for (int k = 0; k < 8; k++)
		b[56 + k] = (uint8_t)(sum >> (8 * k));
	check(b, size);
	free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check(data, size);
	check_resealed(data, size);
	return 0;
}
