/*
 * batch.h - one batch of edits of one world, as the edit log records it.
 *
 * Every edit log backend (server/journal.h) stores the same canonical
 * record, so that a file log and a shared log hold the same bytes and
 * replay to the same world. Pure helpers over bytes: no I/O, no state.
 * Layout (little-endian): u8 version, u8 gen_len, gen (gen_len bytes),
 * u64 seed, u64 first_seq, u32 count, then count canonical edits of
 * EDIT_WIRE_SIZE (42) bytes each (edit_encode()). Version 1 ends there;
 * version 2 adds u64 time_ms (when the log took it, ms since 1970) and
 * u8 flags, bit 0 saying that BATCH_KEY bytes follow: the batch's
 * idempotency key (a hash of who sent it and their Idempotency-Key,
 * docs/edits.md). batch_encode() writes version 1 for a batch with
 * neither, so that the library's records stay as they were.
 *
 *	uint8_t buf[BATCH_MAX];
 *	struct batch b = { "default", 7, seed, seq, n, wire };
 *	batch_encode(&b, buf, sizeof(buf), &len);
 */
#ifndef BATCH_H
#define BATCH_H

#include <stddef.h>
#include <stdint.h>

#define BATCH_VERSION 2    /* the newest written */
#define BATCH_EDIT    42   /* EDIT_WIRE_SIZE */
#define BATCH_KEY     16   /* bytes of an idempotency key */
#define BATCH_MAX     (2 + 255 + 20 + 256 * BATCH_EDIT + 9 + BATCH_KEY)

struct batch {
	const char *gen;       /* generator preset name, not NUL-terminated */
	size_t gen_len;        /* 1..255 */
	uint64_t seed;
	uint64_t first_seq;    /* sequence number of the first edit */
	uint32_t count;        /* edits, 1..EDIT_BATCH_MAX (256) */
	const uint8_t *edits;  /* count * BATCH_EDIT canonical bytes */
	uint64_t time_ms;      /* when the log took it; 0: not said (version 1) */
	const uint8_t *key;    /* BATCH_KEY bytes, or NULL: none */
};

/* Bytes batch_encode() writes for b. */
size_t batch_size(const struct batch *b);

/*
 * Serialise b into out (cap bytes); *len gets the size. Returns 0, or
 * ERR_INVAL (a field out of range) or ERR_TOOBIG (cap too small).
 */
int batch_encode(const struct batch *b, uint8_t *out, size_t cap, size_t *len);

/*
 * Parse a record of version 1 or 2. b->gen, b->edits and b->key point
 * into p (valid as long as p).
 * Checks the framing only; decode each edit with edit_decode(). Returns 0,
 * ERR_VERSION or ERR_CORRUPT.
 */
int batch_decode(const uint8_t *p, size_t len, struct batch *b);

#endif
