/*
 * cache.c - byte-bounded LRU with refcounted entries and single flight
 * (see cache.h).
 *
 * An entry is one allocation: bookkeeping plus the key. It sits in a
 * chained hash table while cached (pending or ready) and, once ready, in a
 * doubly linked LRU list with the most recent entry at the head. Only ready
 * entries are charged against the bound; a pending entry is at most one per
 * running flight.
 */
#include "cache.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"

#define INITIAL_BUCKETS 64

enum { PENDING, READY };

struct cache_entry {
	/* What a hit reads or writes first, together: its hash, its chain,
	 * its value and its LRU links share the first 40 bytes. */
	uint64_t hash;
	struct cache_entry *hnext;             /* hash chain */
	void *value;
	struct list lru;                       /* in c->lru, ready entries only */
	unsigned refs;
	unsigned char state;
	unsigned char cached;                  /* in the table */
	unsigned char klen;
	uint64_t created;
	size_t bytes;                          /* declared value bytes */
	struct list waiters;                   /* pending entries only */
	unsigned char key[];
};

struct cache {
	struct cache_entry **buckets;
	size_t nbuckets;
	size_t count;                          /* entries in the table */
	struct list lru;                       /* first is most recent */
	size_t used, capacity;
	uint64_t ttl;
	cache_free_fn free_value;
	void *free_arg;
	struct cache_stats st;
};

size_t cache_entry_cost(size_t klen, size_t bytes)
{
	return sizeof(struct cache_entry) + klen + bytes;
}

int cache_create(size_t capacity, uint64_t ttl, cache_free_fn free_value,
		 void *free_arg, struct cache **out)
{
	struct cache *c;

	if (!out)
		return ERR_INVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return ERR_NOMEM;
	c->buckets = calloc(INITIAL_BUCKETS, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return ERR_NOMEM;
	}
	list_init(&c->lru);
	c->nbuckets = INITIAL_BUCKETS;
	c->used = c->nbuckets * sizeof(*c->buckets);
	c->capacity = capacity;
	c->ttl = ttl;
	c->free_value = free_value;
	c->free_arg = free_arg;
	*out = c;
	return 0;
}

static void entry_free(struct cache *c, struct cache_entry *e)
{
	if (e->value && c->free_value)
		c->free_value(c->free_arg, e->value);
	free(e);
}

void cache_release(struct cache *c, struct cache_entry *e)
{
	if (!e)
		return;
	assert(e->refs > 0);
	if (--e->refs == 0)
		entry_free(c, e);
}

void cache_destroy(struct cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nbuckets; i++) {
		struct cache_entry *e = c->buckets[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			assert(e->state == READY && e->refs == 1);
			entry_free(c, e);
		}
	}
	free(c->buckets);
	free(c);
}

static struct cache_entry **slot_of(struct cache *c, uint64_t hash,
				    const void *key, size_t klen)
{
	struct cache_entry **p = &c->buckets[hash & (c->nbuckets - 1)];

	for (; *p; p = &(*p)->hnext)
		if ((*p)->hash == hash && (*p)->klen == klen &&
		    memcmp((*p)->key, key, klen) == 0)
			break;
	return p;
}

/* Take e out of the table (and the LRU and the charge), dropping the
 * table's reference. */
static void detach(struct cache *c, struct cache_entry *e)
{
	struct cache_entry **p = slot_of(c, e->hash, e->key, e->klen);

	assert(*p == e);
	*p = e->hnext;
	e->hnext = NULL;
	e->cached = 0;
	c->count--;
	if (e->state == READY) {
		list_remove(&e->lru);
		c->used -= cache_entry_cost(e->klen, e->bytes);
		c->st.entries--;
	} else {
		c->st.pending--;
	}
	cache_release(c, e);
}

static void evict_to_bound(struct cache *c)
{
	while (c->used > c->capacity && !list_empty(&c->lru)) {
		c->st.evictions++;
		detach(c, list_entry(list_last(&c->lru), struct cache_entry, lru));
	}
}

static void grow(struct cache *c)
{
	size_t n = c->nbuckets * 2, i;
	struct cache_entry **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* keep the longer chains; still correct */
	for (i = 0; i < c->nbuckets; i++) {
		struct cache_entry *e = c->buckets[i], *next;

		for (; e; e = next) {
			next = e->hnext;
			e->hnext = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->used += (n - c->nbuckets) * sizeof(*b);
	c->nbuckets = n;
	evict_to_bound(c);
}

/* A new table entry for key (one reference: the table's). */
static struct cache_entry *entry_new(struct cache *c, uint64_t hash,
				     const void *key, size_t klen)
{
	struct cache_entry *e = calloc(1, sizeof(*e) + klen);

	if (!e)
		return NULL;
	memcpy(e->key, key, klen);
	e->klen = (unsigned char)klen;
	e->hash = hash;
	e->refs = 1;
	e->cached = 1;
	e->state = PENDING;
	list_init(&e->waiters);
	if (c->count + 1 > c->nbuckets)
		grow(c);
	e->hnext = c->buckets[hash & (c->nbuckets - 1)];
	c->buckets[hash & (c->nbuckets - 1)] = e;
	c->count++;
	c->st.pending++;
	return e;
}

/* Make a pending entry ready with value: charge it, or detach it when it
 * could never fit. Evicts down to the bound. */
static void make_ready(struct cache *c, struct cache_entry *e, void *value,
		       size_t bytes, uint64_t now)
{
	size_t cost = cache_entry_cost(e->klen, bytes);

	assert(e->state == PENDING && e->cached);
	e->value = value;
	e->bytes = bytes;
	e->created = now;
	if (cost > c->capacity ||
	    c->capacity - cost < c->nbuckets * sizeof(*c->buckets)) {
		c->st.uncacheable++;
		detach(c, e); /* still pending: uncharged */
		e->state = READY;
		return;
	}
	e->state = READY;
	c->st.pending--;
	c->st.entries++;
	c->used += cost;
	list_insert_head(&c->lru, &e->lru);
	evict_to_bound(c);
}

/* The live table entry for key, dropping it first if its TTL ran out. */
static struct cache_entry *find(struct cache *c, uint64_t hash,
				const void *key, size_t klen, uint64_t now)
{
	struct cache_entry *e = *slot_of(c, hash, key, klen);

	if (e && e->state == READY && c->ttl && now - e->created >= c->ttl) {
		c->st.expired++;
		detach(c, e);
		e = NULL;
	}
	return e;
}

static int key_ok(const struct cache *c, const void *key, size_t klen)
{
	return c && key && klen > 0 && klen <= CACHE_KEY_MAX;
}

static struct cache_entry *hit(struct cache *c, struct cache_entry *e)
{
	c->st.hits++;
	/* The caller reads the value next: start that miss now, under the
	 * list updates, rather than after them. */
	__builtin_prefetch(e->value);
	list_remove(&e->lru);
	list_insert_head(&c->lru, &e->lru);
	e->refs++;
	return e;
}

struct cache_entry *cache_get(struct cache *c, const void *key, size_t klen,
			      uint64_t now)
{
	struct cache_entry *e;

	if (!key_ok(c, key, klen))
		return NULL;
	e = find(c, XXH3_64bits(key, klen), key, klen, now);
	if (e && e->state == READY)
		return hit(c, e);
	c->st.misses++;
	return NULL;
}

int cache_put(struct cache *c, const void *key, size_t klen, void *value,
	      size_t bytes, uint64_t now, struct cache_entry **out)
{
	struct cache_entry *e;
	uint64_t hash;

	if (!key_ok(c, key, klen)) {
		if (c && value && c->free_value)
			c->free_value(c->free_arg, value);
		return ERR_INVAL;
	}
	hash = XXH3_64bits(key, klen);
	e = find(c, hash, key, klen, now);
	if (e && e->state == PENDING) {
		if (c->free_value)
			c->free_value(c->free_arg, value);
		return ERR_BUSY;
	}
	if (e)
		detach(c, e);
	e = entry_new(c, hash, key, klen);
	if (!e) {
		if (c->free_value)
			c->free_value(c->free_arg, value);
		return ERR_NOMEM;
	}
	e->refs++; /* survive make_ready even if uncacheable */
	make_ready(c, e, value, bytes, now);
	if (out)
		*out = e;
	else
		cache_release(c, e);
	return 0;
}

int cache_fetch(struct cache *c, const void *key, size_t klen, uint64_t now,
		struct cache_waiter *w, struct cache_entry **out)
{
	struct cache_entry *e;
	uint64_t hash;

	if (!key_ok(c, key, klen) || !w || !w->done || !out)
		return ERR_INVAL;
	hash = XXH3_64bits(key, klen);
	e = find(c, hash, key, klen, now);
	if (e && e->state == READY) {
		*out = hit(c, e);
		return CACHE_HIT;
	}
	c->st.misses++;
	if (e) {
		c->st.waits++;
		list_insert_tail(&e->waiters, &w->node);
		*out = NULL;
		return CACHE_WAIT;
	}
	e = entry_new(c, hash, key, klen);
	if (!e)
		return ERR_NOMEM;
	e->refs++; /* the flight's reference, dropped by complete/abort */
	list_insert_tail(&e->waiters, &w->node);
	*out = e;
	return CACHE_MISS;
}

/* Take the first waiter off waiters, which is not empty. */
static struct cache_waiter *next_waiter(struct list *waiters)
{
	struct cache_waiter *w = list_entry(list_first(waiters), struct cache_waiter, node);

	list_remove(&w->node);
	return w;
}

void cache_complete(struct cache *c, struct cache_entry *e, void *value,
		    size_t bytes, uint64_t now)
{
	struct list waiters;

	list_move(&e->waiters, &waiters);
	make_ready(c, e, value, bytes, now);
	while (!list_empty(&waiters)) {
		struct cache_waiter *w = next_waiter(&waiters);

		e->refs++;
		w->done(w, e, 0);
	}
	cache_release(c, e);
}

void cache_abort(struct cache *c, struct cache_entry *e, int err)
{
	struct list waiters;

	assert(e->state == PENDING && err < 0);
	list_move(&e->waiters, &waiters);
	if (e->cached)
		detach(c, e);
	while (!list_empty(&waiters)) {
		struct cache_waiter *w = next_waiter(&waiters);

		w->done(w, NULL, err);
	}
	cache_release(c, e);
}

int cache_remove(struct cache *c, const void *key, size_t klen)
{
	struct cache_entry *e;

	if (!key_ok(c, key, klen))
		return ERR_INVAL;
	e = *slot_of(c, XXH3_64bits(key, klen), key, klen);
	if (!e || e->state != READY)
		return ERR_NOTFOUND;
	detach(c, e);
	return 0;
}

void *cache_value(const struct cache_entry *e)
{
	return e->value;
}

void cache_stats(const struct cache *c, struct cache_stats *st)
{
	*st = c->st;
	st->bytes = c->used;
	st->capacity = c->capacity;
}
