/*
 * cache.h - LRU cache of encoded responses, bounded in bytes, with single
 * flight for misses.
 *
 * Keys are short byte strings (a tile key is 24 bytes); values are opaque
 * pointers whose size the caller declares. The bound counts everything the
 * cache owns: each entry's bookkeeping, its key, its declared value bytes
 * and the bucket array. Lookup, insert and eviction are O(1) on average
 * (chained hash table plus an intrusive LRU list).
 *
 * Entries are reference counted. The table holds one reference while an
 * entry is cached; every successful fetch gives the caller one more, which
 * it must drop with cache_release() (SQLite's rule: one release per fetch).
 * An evicted entry stays alive, uncharged, until its last reference goes, so
 * a response being written from it is never freed under the write.
 *
 * Single flight: cache_fetch() on a missing key creates a pending entry and
 * queues the caller's waiter; later fetches of the same key queue behind it.
 * Whoever got CACHE_MISS produces the value and calls cache_complete() (or
 * cache_abort()), which wakes every waiter in arrival order.
 *
 * Time is a parameter (any monotonic unit, e.g. milliseconds), so tests
 * never sleep; it matters only when a TTL is set. Not thread-safe: use it
 * from one thread (the loop thread). What values mean, and how they are
 * produced, is the caller's business (routes.c).
 */
#ifndef CACHE_H
#define CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "list.h"

struct cache;
struct cache_entry;

/* Largest key, in bytes. */
#define CACHE_KEY_MAX 64

/* Frees a value when its entry dies; arg is cache_create()'s free_arg. */
typedef void (*cache_free_fn)(void *arg, void *value);

/* Counters and gauges for /metrics. */
struct cache_stats {
	uint64_t hits;       /* fetches/gets that found a ready entry */
	uint64_t misses;     /* fetches/gets that did not (including waits) */
	uint64_t waits;      /* misses that joined a flight already running */
	uint64_t evictions;  /* entries dropped to honour the byte bound */
	uint64_t expired;    /* entries dropped because their TTL ran out */
	uint64_t uncacheable; /* values too large to keep at all */
	size_t entries;      /* ready entries in the cache */
	size_t pending;      /* flights in progress */
	size_t bytes;        /* bytes charged, overhead included */
	size_t capacity;     /* the bound */
};

/* A queued interest in a pending entry. The caller owns the storage and
 * keeps it alive until done() has run. */
struct cache_waiter {
	struct list node;          /* private: in the entry's waiters */
	/*
	 * Called once: with a referenced ready entry and err 0, or with entry
	 * NULL and the negative ERR_* passed to cache_abort(). The waiter
	 * releases the entry with cache_release().
	 */
	void (*done)(struct cache_waiter *w, struct cache_entry *e, int err);
};

/* cache_fetch() outcomes. */
enum cache_result {
	CACHE_HIT = 0,  /* *out is a referenced ready entry; w is unused */
	CACHE_MISS = 1, /* w queued; caller must produce the value */
	CACHE_WAIT = 2, /* w queued behind a flight already running */
};

/*
 * Create a cache bounded to capacity bytes. ttl is the lifetime of an entry
 * in the caller's time unit, 0 for none. free_value frees values, called
 * with free_arg (free_value may be NULL). Returns 0 or ERR_INVAL / ERR_NOMEM.
 */
int cache_create(size_t capacity, uint64_t ttl, cache_free_fn free_value,
		 void *free_arg, struct cache **out);

/* Free the cache and the entries it holds. Every reference handed out must
 * have been released and no flight may be pending. NULL does nothing. */
void cache_destroy(struct cache *c);

/*
 * Look up a ready entry. Returns it referenced (release it), or NULL when
 * absent, pending or expired. Counts a hit or a miss; moves a hit to the
 * most recently used end.
 */
struct cache_entry *cache_get(struct cache *c, const void *key, size_t klen,
			      uint64_t now);

/*
 * Insert value (bytes as declared) under key at time now, replacing a ready
 * entry with the same key. Takes ownership of value, even on failure. When
 * out is not NULL, *out receives a reference to the new entry. A value too
 * large for the whole cache is not kept but still returned through out.
 * Returns 0, ERR_INVAL (bad key), ERR_BUSY (a flight for key is pending) or
 * ERR_NOMEM.
 */
int cache_put(struct cache *c, const void *key, size_t klen, void *value,
	      size_t bytes, uint64_t now, struct cache_entry **out);

/*
 * Look up key with single flight. On CACHE_HIT *out is a referenced entry.
 * On CACHE_MISS a pending entry was created, w is queued on it and *out is
 * that entry: the caller produces the value and must call cache_complete()
 * or cache_abort() on it exactly once. On CACHE_WAIT w is queued and *out
 * is NULL. Returns a cache_result, or ERR_INVAL / ERR_NOMEM (nothing queued).
 *
 *	switch (cache_fetch(c, key, sizeof(key), now, &req->w, &e)) {
 *	case CACHE_HIT:  respond(req, e); break;
 *	case CACHE_MISS: start_generation(e); break;   // req->w.done runs later
 *	}
 */
int cache_fetch(struct cache *c, const void *key, size_t klen, uint64_t now,
		struct cache_waiter *w, struct cache_entry **out);

/*
 * Give a pending entry its value (ownership passes, bytes as declared),
 * make it ready and most recent, evict down to the bound, then call every
 * waiter with its own reference.
 */
void cache_complete(struct cache *c, struct cache_entry *e, void *value,
		    size_t bytes, uint64_t now);

/* Fail a pending entry: remove it and call every waiter with err. */
void cache_abort(struct cache *c, struct cache_entry *e, int err);

/* Drop one reference; the entry dies with its last one. NULL does nothing. */
void cache_release(struct cache *c, struct cache_entry *e);

/* Remove a ready entry from the cache (references stay valid). Returns 0 or
 * ERR_NOTFOUND. */
int cache_remove(struct cache *c, const void *key, size_t klen);

/* The value of a ready entry, as stored. */
void *cache_value(const struct cache_entry *e);

/* Bytes charged for one entry with a klen-byte key and a value of bytes. */
size_t cache_entry_cost(size_t klen, size_t bytes);

void cache_stats(const struct cache *c, struct cache_stats *st);

#endif
