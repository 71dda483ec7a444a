/*
 * slab.c - size-class blocks in huge-page-backed pages (see slab.h).
 *
 * The reservation is one PROT_NONE mapping aligned to SLAB_PAGE; a page
 * is made readable and writable (and marked for huge pages) when a class
 * takes it, so memory is committed page by page, never all at once. A
 * class carves blocks from its newest page and keeps freed blocks on a
 * list threaded through their first bytes.
 */
#include "slab.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "err.h"

#if defined(__SANITIZE_ADDRESS__)
#define SLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_ASAN 1
#endif
#endif
#ifdef SLAB_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define MIN_BLOCK ((size_t)512)
/* 512, then 8 classes per doubling up to SLAB_MAX_BLOCK (2^19): 1 + 10 * 8 */
#define NCLASSES 81

struct free_block {
	struct free_block *next;
};

struct slab_class {
	struct free_block *free;         /* freed blocks, most recent first */
	uint8_t *next, *end;             /* the rest of the newest page */
};

struct slab {
	pthread_mutex_t mu;
	uint8_t *map;                    /* the mapping as made */
	size_t map_len;
	uint8_t *base;                   /* its first whole page */
	size_t max_pages, pages;
	uint8_t *page_class;             /* per page given: its class */
	struct slab_class cls[NCLASSES];
	size_t in_use, fallbacks;
};

/* The class of a block of n bytes (n <= SLAB_MAX_BLOCK), and its size. */
static unsigned class_of(size_t n)
{
	size_t m = n - 1;
	unsigned e;

	if (n <= MIN_BLOCK)
		return 0;
	e = 63u - (unsigned)__builtin_clzll((unsigned long long)m);   /* 2^e <= m */
	return (e - 9) * 8 + (unsigned)((m >> (e - 3)) & 7) + 1;
}

static size_t class_size(unsigned k)
{
	unsigned e = 9 + (k - 1) / 8;

	return k ? (size_t)(9 + (k - 1) % 8) << (e - 3) : MIN_BLOCK;
}

int slab_create(size_t max_bytes, struct slab **out)
{
	struct slab *s;
	size_t pages = max_bytes / SLAB_PAGE;
	void *m;

	if (!out)
		return ERR_INVAL;
	if (!(s = calloc(1, sizeof(*s))))
		return ERR_NOMEM;
	if (pthread_mutex_init(&s->mu, NULL)) {
		free(s);
		return ERR_NOMEM;
	}
	if (pages && (s->page_class = malloc(pages)) != NULL) {
		/* one page more, to align the first to SLAB_PAGE */
		s->map_len = (pages + 1) * SLAB_PAGE;
		m = mmap(NULL, s->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			 -1, 0);
		if (m != MAP_FAILED) {
			s->map = m;
			s->base = (uint8_t *)(((uintptr_t)m + SLAB_PAGE - 1) & ~(uintptr_t)(SLAB_PAGE - 1));
			s->max_pages = pages;
		}
	}
	*out = s;
	return 0;
}

void slab_destroy(struct slab *s)
{
	if (!s)
		return;
	if (s->map) {
		UNPOISON(s->base, s->pages * SLAB_PAGE);
		munmap(s->map, s->map_len);
	}
	pthread_mutex_destroy(&s->mu);
	free(s->page_class);
	free(s);
}

/* Give class k a new page (s->mu held). Returns 0, or -1 when none is left. */
static int take_page(struct slab *s, unsigned k)
{
	uint8_t *p;

	if (s->pages == s->max_pages)
		return -1;
	p = s->base + s->pages * SLAB_PAGE;
	if (mprotect(p, SLAB_PAGE, PROT_READ | PROT_WRITE))
		return -1;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, SLAB_PAGE, MADV_HUGEPAGE);   /* a hint: 4 KiB pages without it */
#endif
	POISON(p, SLAB_PAGE);
	s->page_class[s->pages++] = (uint8_t)k;
	s->cls[k].next = p;
	s->cls[k].end = p + SLAB_PAGE;
	return 0;
}

void *slab_alloc(struct slab *s, size_t n, size_t *size)
{
	unsigned k;
	size_t cs;
	struct slab_class *c;
	void *p = NULL;

	if (!s || !size)
		return NULL;
	if (n <= SLAB_MAX_BLOCK && s->max_pages) {
		k = class_of(n);
		cs = class_size(k);
		c = &s->cls[k];
		pthread_mutex_lock(&s->mu);
		if (c->free) {
			p = c->free;
			c->free = c->free->next;
		} else if ((size_t)(c->end - c->next) >= cs || take_page(s, k) == 0) {
			p = c->next;
			c->next += cs;
		}
		if (p)
			s->in_use += cs;
		pthread_mutex_unlock(&s->mu);
		if (p) {
			UNPOISON(p, n);
			*size = cs;
			return p;
		}
	}
	if (!(p = malloc(n ? n : 1)))
		return NULL;
	pthread_mutex_lock(&s->mu);
	s->fallbacks++;
	pthread_mutex_unlock(&s->mu);
	*size = n;
	return p;
}

void slab_free(struct slab *s, void *p)
{
	uint8_t *b = p;
	struct free_block *f = p;
	size_t page;
	unsigned k;

	if (!p)
		return;
	if (!s || !s->map || b < s->base || b >= s->base + s->max_pages * SLAB_PAGE) {
		free(p);
		return;
	}
	page = (size_t)(b - s->base) / SLAB_PAGE;
	pthread_mutex_lock(&s->mu);
	k = s->page_class[page];
	POISON(b, class_size(k));
	UNPOISON(b, sizeof(*f));
	f->next = s->cls[k].free;
	s->cls[k].free = f;
	s->in_use -= class_size(k);
	pthread_mutex_unlock(&s->mu);
}

void slab_stats(struct slab *s, struct slab_stats *st)
{
	pthread_mutex_lock(&s->mu);
	*st = (struct slab_stats){ .pages = s->pages, .max_pages = s->max_pages,
				   .in_use = s->in_use, .fallbacks = s->fallbacks };
	pthread_mutex_unlock(&s->mu);
}
