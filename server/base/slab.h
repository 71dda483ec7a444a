/*
 * slab.h - memory for cached values: blocks in size classes, carved from
 * 2 MiB pages of one reservation that asks the kernel for huge pages
 * (madvise MADV_HUGEPAGE), each block recycled in its class when freed.
 *
 * A cold tile's value (its prebuilt head and body, about 20 KB at LOD 0)
 * is the one allocation of a generation that outlives it. From malloc, a
 * cache that is still growing puts every value in pages never touched
 * before: five page faults on the worker and, on the virtual machine of
 * docs/benchmarks.md (2026-12-07), about as much again when the kernel
 * first reads those pages to copy them into a socket. A huge page
 * holds about a hundred such values for one fault, and a hit's copy
 * misses the TLB once instead of once per 4 KiB. Where the kernel gives no
 * huge pages (transparent_hugepage "never"), blocks are still recycled.
 *
 * Size classes: 512 bytes, then 8 per doubling up to SLAB_MAX_BLOCK (at
 * most 12.5% over the size asked for); a page serves one class for good.
 * The reservation takes no memory until a page is given to a class;
 * when every page has been given, a value that finds no free block of its
 * class comes from malloc, as does one above SLAB_MAX_BLOCK, so memory
 * stays within max_bytes of pages plus what malloc holds. slab_free()
 * tells the two apart by address. Knows nothing of what the blocks hold.
 * Any thread (one mutex). Under AddressSanitizer a free block is poisoned.
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
#define SLAB_MAX_BLOCK ((size_t)512 << 10)

/* Bytes of a slab page: a huge page of x86-64 and arm64 (4 KiB base pages). */
#define SLAB_PAGE ((size_t)2 << 20)

/* Counters of a slab. */
struct slab_stats {
	size_t pages;        /* pages given to classes */
	size_t max_pages;    /* the reservation, in pages */
	size_t in_use;       /* bytes of blocks handed out, by class size */
	size_t fallbacks;    /* blocks that came from malloc (too large, or no page left) */
};

/*
 * Create a slab of at most max_bytes of pages (rounded down to whole
 * pages; 0, or a reservation the kernel refuses: every block from
 * malloc). Returns 0, ERR_INVAL (out NULL) or ERR_NOMEM.
 */
int slab_create(size_t max_bytes, struct slab **out);

/* Unmap the pages and free s; every block must have been freed (or be
 * dead). NULL does nothing. */
void slab_destroy(struct slab *s);

/*
 * A block of at least n bytes (aligned to 64 bytes in a page, to malloc's
 * alignment otherwise); *size is the bytes it takes: its class's size, or
 * n from malloc. NULL when out of memory. Free it with slab_free().
 */
void *slab_alloc(struct slab *s, size_t n, size_t *size);

/* Give back a block of slab_alloc() on s; NULL does nothing. */
void slab_free(struct slab *s, void *p);

/* Counters of s. */
void slab_stats(struct slab *s, struct slab_stats *st);

#endif
