/*
 * slab.h - memory for cached values: blocks in size classes, carved from
 * runs of one reservation that asks the kernel for huge pages (madvise
 * MADV_HUGEPAGE), each block recycled when freed.
 *
 * A cold tile's value (its prebuilt head and body, about 20 KB at LOD 0)
 * is the one allocation of a generation that outlives it. From malloc, a
 * cache that is still growing puts every value in pages never touched
 * before: five page faults on the worker and, on the virtual machine of
 * docs/benchmarks.md (2026-12-07), about as much again when the kernel
 * first reads those pages to copy them into a socket. A huge page holds
 * about a hundred such values for one fault, and a hit's copy misses the
 * TLB once instead of once per 4 KiB. Where the kernel gives no huge
 * pages (transparent_hugepage "never"), blocks are still recycled.
 *
 * Size classes: 512 bytes, then 8 per doubling up to 8 KiB, then the
 * sizes that split a run evenly (SLAB_RUN / 31 down to SLAB_RUN / 8 =
 * SLAB_MAX_BLOCK): at most 12.5% over the size asked for (8% around 20
 * KB, a LOD-0 tile's value), and no run's end left over. A run of
 * SLAB_RUN bytes serves one class while it holds a block; once its last
 * block is freed it serves whichever class needs a run next. The
 * reservation takes no memory until runs reach into it, SLAB_HUGE bytes
 * at a time, and it is max_bytes long: when it is all in use, a value
 * comes from malloc, as does one above SLAB_MAX_BLOCK. slab_free() tells
 * the two apart by address. Knows nothing of what the blocks hold. Any
 * thread (one mutex). Under AddressSanitizer a block is poisoned while
 * free.
 *
 *	struct slab *s;
 *	slab_create(256u << 20, &s);
 *	v = slab_alloc(s, len, &charged);   // charge `charged` bytes to the cache
 *	slab_free(s, v);
 */
#ifndef SLAB_H
#define SLAB_H

#include <stddef.h>

struct slab;

/* The largest block a class holds; larger ones come from malloc. */
#define SLAB_MAX_BLOCK ((size_t)32 << 10)

/* Bytes of a run, which serves one class at a time. */
#define SLAB_RUN ((size_t)256 << 10)

/* Bytes committed at a time: a huge page of x86-64 and arm64 (4 KiB base
 * pages). */
#define SLAB_HUGE ((size_t)2 << 20)

/* Counters of a slab. */
struct slab_stats {
	size_t runs;         /* runs serving a class (holding a block) */
	size_t max_runs;     /* the reservation, in runs */
	size_t committed;    /* bytes the runs reached into, whole SLAB_HUGE */
	size_t in_use;       /* bytes of blocks handed out, by class size */
	size_t fallbacks;    /* blocks that came from malloc (too large, or no run left) */
};

/*
 * Create a slab of at most max_bytes (rounded down to whole SLAB_HUGE; 0,
 * or a reservation the kernel refuses: every block from malloc). Returns
 * 0, ERR_INVAL (out NULL) or ERR_NOMEM.
 */
int slab_create(size_t max_bytes, struct slab **out);

/* Unmap the reservation and free s; every block must have been freed (or
 * be dead). NULL does nothing. */
void slab_destroy(struct slab *s);

/*
 * A block of at least n bytes (aligned to 64 bytes in the reservation, to
 * malloc's alignment otherwise); *size is the bytes it takes: its class's
 * size, or n from malloc. NULL when out of memory. Free it with
 * slab_free().
 */
void *slab_alloc(struct slab *s, size_t n, size_t *size);

/* Give back a block of slab_alloc() on s; NULL does nothing. */
void slab_free(struct slab *s, void *p);

/* Counters of s. */
void slab_stats(struct slab *s, struct slab_stats *st);

#endif
