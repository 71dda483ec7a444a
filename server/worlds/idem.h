/*
 * idem.h - the idempotency keys a server remembers: for each keyed batch
 * the edit log holds, what it did, so that a retry with the same key gets
 * the first outcome instead of a second application (docs/edits.md,
 * "Retries and Idempotency-Key").
 *
 * A key is BATCH_KEY bytes that already name the world and the credential
 * (edits.c hashes them with the client's Idempotency-Key), so one table
 * serves every world. Entries are added in log order, as the edit log
 * hands batches to the worlds, and leave oldest first: when they are older
 * than the window by the log's own clock (the newest batch time seen, not
 * this machine's), or when the table holds its most. Every node follows
 * the same log, so every node remembers the same keys; snapshots carry
 * the table past compaction and trimming.
 *
 * Memory: sizeof(struct idem_entry) (64 bytes) plus 8 bytes of index per
 * entry, in arrays that double as they fill (at most 144 bytes a key).
 * Pure data: no I/O, no clocks; loop thread only.
 *
 *	idem_create(1000000, 86400000, &t);
 *	idem_add(t, &(struct idem_entry){ key, body, first, count, hash, ms });
 *	const struct idem_entry *e = idem_find(t, key);
 */
#ifndef IDEM_H
#define IDEM_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"

/* What a keyed batch did. */
struct idem_entry {
	uint8_t key[BATCH_KEY];
	uint8_t body[16];        /* XXH3-128 of its canonical edits */
	uint64_t first_seq;
	uint64_t hash;           /* the world hash after it */
	uint64_t time_ms;        /* when the log took it */
	uint32_t count;          /* edits */
	uint32_t pad;
};

struct idem;

/* A table of at most max keys (at least 1), each kept window_ms after its
 * batch. 0 or ERR_NOMEM. */
int idem_create(size_t max, uint64_t window_ms, struct idem **out);
void idem_destroy(struct idem *t);

/* The entry of key, or NULL. Valid until the table changes. */
const struct idem_entry *idem_find(const struct idem *t, const uint8_t key[BATCH_KEY]);

/* Remember e (replacing an entry of its key), then forget what is past
 * the window or the most. 0 or ERR_NOMEM (nothing changed). */
int idem_add(struct idem *t, const struct idem_entry *e);

/* Forget every key. */
void idem_clear(struct idem *t);

/* Entries held, and entry i of them (i < idem_count()), oldest first. */
size_t idem_count(const struct idem *t);
const struct idem_entry *idem_at(const struct idem *t, size_t i);

/* Bytes the table holds (for /metrics). */
size_t idem_bytes(const struct idem *t);

#endif
