/*
 * fuzz_tile.c - libFuzzer target for the tile decoder (make fuzz).
 *
 * Every input is used four ways: decoded as given, which mostly exercises
 * the header checks and the checksum; decoded with its checksum field
 * recomputed; as the payload of a forged valid header (shape, form and
 * planes or filter from its first bytes: version 1 byte planes or version
 * 3 or 5 coded heights), so that even without a seed corpus random bytes
 * reach the filters and the canonical-form checks; and as heights to
 * encode and decode again. Whatever decodes must re-encode to exactly the
 * same bytes (the format is canonical), and the header-only decoder must
 * agree with the full one. Any violation aborts, which libFuzzer reports
 * as a crash.
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

_Noreturn static void fail(const char *what)
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
	/* in the form it came in: versions 1 and 2, 3 and 4, 5 and 6, 7 and 8 */
	{
		enum tile_form form = buf[4] <= 2 ? TILE_FORM_LZ21 :
				      buf[4] <= 4 ? TILE_FORM_CODED :
				      buf[4] <= 6 ? TILE_FORM_CODED8 : TILE_FORM_TANS;
		void *z = malloc(tile_encode_scratch_size(&t));

		if (!z)
			fail("out of memory");
		if (tile_encode_form_in(&t, form, z, out, cap, &n) || n != len || memcmp(out, buf, n))
			fail("decoded tile does not re-encode to the same bytes");
		free(z);
	}
	if (tile_checksum(out) != tile_checksum(buf))
		fail("checksum differs");
	free(out);
	tile_release(&t);
}

/* Store a valid checksum (bytes 56..63) for the other bytes of b. */
static void reseal(uint8_t *b, size_t size)
{
	XXH3_state_t *st = XXH3_createState();
	uint64_t sum;

	if (!st)
		fail("out of memory");
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, b, 56);
	XXH3_64bits_update(st, b + TILE_HEADER_SIZE, size - TILE_HEADER_SIZE);
	sum = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	for (int k = 0; k < 8; k++)
		b[56 + k] = (uint8_t)(sum >> (8 * k));
}

static void check_resealed(const uint8_t *data, size_t size)
{
	uint8_t *b;

	if (size < TILE_HEADER_SIZE)
		return;
	b = malloc(size);
	if (!b)
		fail("out of memory");
	memcpy(b, data, size);
	reseal(b, size);
	check(b, size);
	free(b);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (uint8_t)(v >> (8 * k));
}

/* A version 3 or 5 header (from data[1], and filter 2 or 3) over data[2..]
 * as the coded heights, resealed, then decoded. */
static void check_forged_coded(const uint8_t *data, size_t size, unsigned clog2,
			       unsigned lod, size_t side)
{
	static const uint8_t head[16] = { 'T', 'R', 'R', 'N', 3, 0, 64, 0 };
	size_t coded = size - 2, len = TILE_HEADER_SIZE + 4 + coded;
	uint8_t *b = calloc(len, 1);

	if (!b)
		fail("out of memory");
	memcpy(b, head, sizeof(head));
	b[4] = data[1] & 16 ? 5 : 3;
	b[32] = (uint8_t)lod;
	b[33] = (uint8_t)clog2;
	b[34] = (uint8_t)(2 + (data[1] >> 3 & 1));
	put32(b + 36, (uint32_t)side);
	put32(b + 40, 10000);
	put32(b + 44, (uint32_t)data[1] << 24 | data[0]);
	put32(b + TILE_HEADER_SIZE, (uint32_t)coded);
	memcpy(b + TILE_HEADER_SIZE + 4, data + 2, coded);
	reseal(b, len);
	check(b, len);
	free(b);
}

/*
 * A valid header for a small shape chosen by data[0] and data[1] (chunk
 * 16..64 m, any LOD, 1..4 planes), the rest of data as its payload (cut or
 * zero-padded to size), resealed, then decoded.
 */
static void check_forged(const uint8_t *data, size_t size)
{
	static const uint8_t head[16] = { 'T', 'R', 'R', 'N', 1, 0, 64, 0 };
	unsigned clog2, lod, planes;
	size_t side, len, have;
	uint8_t *b;

	if (size < 2)
		return;
	clog2 = 4 + data[0] % 3;
	lod = (data[0] / 3) % (clog2 + 1);
	planes = 1 + data[1] % 4;
	side = ((size_t)1 << (clog2 - lod)) + 1;
	if (data[1] & 4) {      /* versions 3 and 5: the rest as coded heights */
		check_forged_coded(data, size, (unsigned)clog2, (unsigned)lod, side);
		return;
	}
	len = TILE_HEADER_SIZE + planes * side * side;
	b = calloc(len, 1);
	if (!b)
		fail("out of memory");
	memcpy(b, head, sizeof(head));
	b[32] = (uint8_t)lod;
	b[33] = (uint8_t)clog2;
	b[34] = 1;
	b[35] = (uint8_t)planes;
	put32(b + 36, (uint32_t)side);
	put32(b + 40, 10000);
	put32(b + 44, (uint32_t)data[1] << 24 | data[0]);
	have = size - 2 < len - TILE_HEADER_SIZE ? size - 2 :
						     len - TILE_HEADER_SIZE;
	memcpy(b + TILE_HEADER_SIZE, data + 2, have);
	reseal(b, len);
	check(b, len);
	free(b);
}

/* The input as heights (4 bytes each) of a side-17 tile: round trip. */
static void check_round_trip(const uint8_t *data, size_t size)
{
	struct tile t, d;
	uint8_t *buf;
	size_t cap, len, n;

	if (tile_init(&t, 4, 0))
		fail("tile_init");
	n = (size_t)t.side * t.side;
	for (size_t k = 0; k < n && 4 * k + 3 < size; k++)
		t.h[k] = (int32_t)((uint32_t)data[4 * k] |
				   (uint32_t)data[4 * k + 1] << 8 |
				   (uint32_t)data[4 * k + 2] << 16 |
				   (uint32_t)data[4 * k + 3] << 24);
	t.quantum_um = 1;
	t.cx = size > 0 ? -(int32_t)data[0] : 0;
	cap = tile_encode_bound(&t);
	buf = malloc(cap);
	if (!buf || tile_encode(&t, buf, cap, &len))
		fail("encode");
	if (tile_decode(buf, len, &d) || d.side != t.side ||
	    memcmp(d.h, t.h, n * sizeof(*t.h)) || d.cx != t.cx)
		fail("round trip changed the tile");
	check(buf, len);
	free(buf);
	tile_release(&d);
	tile_release(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check(data, size);
	check_resealed(data, size);
	check_forged(data, size);
	check_round_trip(data, size);
	return 0;
}
