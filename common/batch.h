/*
 * batch.h - one batch of edits of one world, as the edit log records it.
 *
 * Every edit log backend (server/editlog/journal.h) stores the same canonical
 * record, so that a file log and a shared log hold the same bytes and
 * replay to the same world. Pure helpers over bytes: no I/O, no state.
 * Layout (little-endian): u8 version, u8 gen_len, gen (gen_len bytes),
 * u64 seed, u64 first_seq, u32 count, then count canonical edits of
 * EDIT_WIRE_SIZE (42) bytes each (edit_encode()). Version 1 ends there;
 * version 2 adds u64 time_ms (when the log took it, ms since 1970) and
 * u8 flags, bit 0 saying that BATCH_KEY bytes follow: the batch's
 * idempotency key (a hash of who sent it and their Idempotency-Key,
 * docs/edits.md). Version 3 (the server's since issue 36) moves time_ms
 * and flags before the body and adds the author: u8 version, u8 gen_len,
 * gen, u64 seed, u64 first_seq, u32 count, u64 time_ms, u8 flags (bit 0:
 * a key follows, bit 1: the body is a revert), u8 author_len (1..64),
 * author, [BATCH_KEY bytes of key], then count canonical edits, or for a
 * revert (count 1) its REVERT_WIRE bytes (revert.h). batch_encode()
 * writes version 3 for a batch with an author, else version 2 for one
 * with a time or a key, else version 1, so that the library's records
 * stay as they were.
 *
 *	uint8_t buf[BATCH_MAX];
 *	struct batch b = { "default", 7, seed, seq, n, wire };
 *	batch_encode(&b, buf, sizeof(buf), &len);
 */
#ifndef BATCH_H
#define BATCH_H

#include <stddef.h>
#include <stdint.h>

#define BATCH_VERSION 3    /* the newest written */
#define BATCH_EDIT    42   /* EDIT_WIRE_SIZE */
#define BATCH_KEY     16   /* bytes of an idempotency key */
#define BATCH_MAX     (2 + 255 + 20 + 256 * BATCH_EDIT + 10 + 64 + BATCH_KEY)

struct batch {
	const char *gen;       /* generator preset name, not NUL-terminated */
	size_t gen_len;        /* 1..255 */
	uint64_t seed;
	uint64_t first_seq;    /* sequence number of the first edit */
	uint32_t count;        /* edits, 1..EDIT_BATCH_MAX (256) */
	const uint8_t *edits;  /* count * BATCH_EDIT canonical bytes */
	uint64_t time_ms;      /* when the log took it; 0: not said (version 1) */
	const uint8_t *key;    /* BATCH_KEY bytes, or NULL: none */
	const char *author;    /* version 3: who sent it, author_len bytes */
	size_t author_len;     /* 1..64 of [A-Za-z0-9_.@-]; 0: none (version 1, 2) */
	const uint8_t *revert; /* version 3: REVERT_WIRE bytes, count 1 and
				  edits NULL; NULL: a batch of edits */
};

/* Bytes batch_encode() writes for b. */
size_t batch_size(const struct batch *b);

/*
 * Serialise b into out (cap bytes); *len gets the size. Returns 0, or
 * ERR_INVAL (a field out of range) or ERR_TOOBIG (cap too small).
 */
int batch_encode(const struct batch *b, uint8_t *out, size_t cap, size_t *len);

/*
 * Parse a record of version 1, 2 or 3. b->gen, b->edits and b->key point
 * into p (valid as long as p).
 * Checks the framing only; decode each edit with edit_decode(). Returns 0,
 * ERR_VERSION or ERR_CORRUPT.
 */
int batch_decode(const uint8_t *p, size_t len, struct batch *b);

/*
 * The world hash after a version-3 record: one link per entry, as for
 * versions 1 and 2, but over who and when too, so that a client reading
 * the log as JSON (seq, time, author, the edit) can chain it entry by
 * entry: XXH3-64 of (u64 prev, u64 seq, u64 time_ms, u8 author_len,
 * author, u8 kind (0: an edit, 1: a revert), the entry's canonical bytes:
 * EDIT_WIRE_SIZE of an edit, REVERT_WIRE of a revert), little-endian.
 * Versions 1 and 2 chain edit_hash_next() (edit.h).
 */
uint64_t batch_link(uint64_t prev, uint64_t seq, uint64_t time_ms, const char *author,
		    size_t author_len, int revert, const uint8_t *body);
uint64_t batch_hash(uint64_t prev, const struct batch *b);

/* Offset of time_ms in a version-3 record (gen_len from byte 1), so that
 * a log that stamps the time may write it in: 2 + gen_len + 20. */
#define BATCH_V3_TIME_OFF(gen_len) (2 + (size_t)(gen_len) + 20)

#endif
