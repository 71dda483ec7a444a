/*
 * idem.c - the remembered idempotency keys (idem.h).
 *
 * Entries live in a ring in the order they came (the log's), so the
 * oldest leaves from its head. An open-addressing index with linear
 * probing maps a key to its place in the ring; a key is a hash already,
 * so its first 8 bytes are the probe's start. Removal shifts the probe
 * chain back (no tombstones), so lookups stay short however many keys
 * came and went.
 */
#include "idem.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "le.h"

#define MIN_RING 64

struct idem {
	struct idem_entry *ring; /* cap entries, a power of two */
	size_t cap, head, n;     /* the oldest at head; n in use */
	uint32_t *slots;         /* ring index + 1; 0: empty; 2 * cap of them */
	size_t max;
	uint64_t window_ms, newest_ms;
};

int idem_create(size_t max, uint64_t window_ms, struct idem **out)
{
	struct idem *t = calloc(1, sizeof(*t));

	if (!t)
		return ERR_NOMEM;
	t->max = max ? max : 1;
	t->window_ms = window_ms;
	*out = t;
	return 0;
}

void idem_destroy(struct idem *t)
{
	if (!t)
		return;
	free(t->ring);
	free(t->slots);
	free(t);
}

static size_t start(const struct idem *t, const uint8_t *key)
{
	return (size_t)le_get64(key) & (2 * t->cap - 1);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t slot_of(const struct idem *t, const uint8_t *key)
{
	size_t i = start(t, key), mask = 2 * t->cap - 1;

	while (t->slots[i] && memcmp(t->ring[t->slots[i] - 1].key, key, BATCH_KEY))
		i = (i + 1) & mask;
	return i;
}

const struct idem_entry *idem_find(const struct idem *t, const uint8_t key[BATCH_KEY])
{
	size_t i;

	if (!t || !t->n)
		return NULL;
	i = slot_of(t, key);
	return t->slots[i] ? &t->ring[t->slots[i] - 1] : NULL;
}

/* Empty slot i and move later members of its probe chain back. */
static void unslot(struct idem *t, size_t i)
{
	size_t mask = 2 * t->cap - 1, j = i;

	t->slots[i] = 0;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!t->slots[j])
			return;
		home = start(t, t->ring[t->slots[j] - 1].key);
		/* j may move to i when its home is not within (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slots[i] = t->slots[j];
			t->slots[j] = 0;
			i = j;
		}
	}
}

/* Forget the oldest entry. */
static void pop(struct idem *t)
{
	unslot(t, slot_of(t, t->ring[t->head].key));
	t->head = (t->head + 1) & (t->cap - 1);
	t->n--;
}

/* Double the ring (oldest first at 0) and rebuild the index. */
static int grow(struct idem *t)
{
	size_t cap = t->cap ? 2 * t->cap : MIN_RING, k;
	struct idem_entry *ring = malloc(cap * sizeof(*ring));
	uint32_t *slots = calloc(2 * cap, sizeof(*slots));

	if (!ring || !slots || cap > UINT32_MAX / 2) {
		free(ring);
		free(slots);
		return ERR_NOMEM;
	}
	for (k = 0; k < t->n; k++)
		ring[k] = t->ring[(t->head + k) & (t->cap - 1)];
	free(t->ring);
	free(t->slots);
	t->ring = ring;
	t->slots = slots;
	t->cap = cap;
	t->head = 0;
	for (k = 0; k < t->n; k++)
		t->slots[slot_of(t, ring[k].key)] = (uint32_t)k + 1;
	return 0;
}

/* Remove the entry in slot i (not necessarily the oldest): the ring keeps
 * its order by moving the older ones up by one. Rare: a key logged twice
 * (its first entry left the log's window before the table's). */
static void remove_at(struct idem *t, size_t i)
{
	size_t at = t->slots[i] - 1, mask = t->cap - 1;

	unslot(t, i);
	while (at != t->head) {
		size_t prev = (at - 1) & mask;

		t->ring[at] = t->ring[prev];
		t->slots[slot_of(t, t->ring[at].key)] = (uint32_t)at + 1;
		at = prev;
	}
	t->head = (t->head + 1) & mask;
	t->n--;
}

int idem_add(struct idem *t, const struct idem_entry *e)
{
	size_t i, at;

	if (t->n && t->slots[i = slot_of(t, e->key)])
		remove_at(t, i);
	if (t->n == t->max)
		pop(t);
	if (t->n == t->cap && grow(t))
		return ERR_NOMEM;
	at = (t->head + t->n) & (t->cap - 1);
	t->ring[at] = *e;
	t->slots[slot_of(t, e->key)] = (uint32_t)at + 1;
	t->n++;
	if (e->time_ms > t->newest_ms)
		t->newest_ms = e->time_ms;
	while (t->n > 1 && t->ring[t->head].time_ms + t->window_ms < t->newest_ms)
		pop(t);
	return 0;
}

void idem_clear(struct idem *t)
{
	if (t->slots)
		memset(t->slots, 0, 2 * t->cap * sizeof(*t->slots));
	t->n = t->head = 0;
	t->newest_ms = 0;
}

size_t idem_count(const struct idem *t)
{
	return t ? t->n : 0;
}

const struct idem_entry *idem_at(const struct idem *t, size_t i)
{
	return &t->ring[(t->head + i) & (t->cap - 1)];
}

size_t idem_bytes(const struct idem *t)
{
	return t ? t->cap * (sizeof(*t->ring) + 2 * sizeof(*t->slots)) : 0;
}
