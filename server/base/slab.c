/*
 * slab.c - size-class blocks in runs of huge-page-backed memory (see
 * slab.h).
 *
 * The reservation is one PROT_NONE mapping aligned to SLAB_HUGE, cut
 * into runs of SLAB_RUN bytes. Runs are handed out from the front; when
 * the front enters a new SLAB_HUGE stretch, that stretch is made readable
 * and writable and marked for huge pages, so memory is committed 2 MiB at
 * a time, never all at once. A run serves one class while it holds a
 * block: it keeps its freed blocks on a list threaded through their first
 * bytes and carves the rest in order. A class lists its runs with room;
 * a run whose last block is freed goes back to a pool of empty runs that
 * any class takes before the front moves, so memory that one kind of
 * value left serves the next.
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
/* Blocks up to SMALL_MAX: 512, then 8 classes per doubling (classes 0 to
 * 32); larger ones: a run's bytes split in m, m = 31 down to 8 (classes
 * 33 to 56), so that a run holds them with nothing left over. */
#define SMALL_MAX ((size_t)8192)
#define SMALL_CLASSES 33
#define NCLASSES (SMALL_CLASSES + 24)
#define NIL UINT32_MAX

struct free_block {
	struct free_block *next;
};

struct run {
	struct free_block *free;         /* freed blocks */
	uint32_t next, prev;             /* in its class's list, or the empty pool */
	uint16_t live;                   /* blocks handed out */
	uint16_t carved;                 /* blocks carved so far */
	uint8_t cls;
	uint8_t listed;                  /* in its class's list */
};

struct slab {
	pthread_mutex_t mu;
	uint8_t *map;                    /* the mapping as made */
	size_t map_len;
	uint8_t *base;                   /* its first SLAB_HUGE boundary */
	uint32_t nruns;                  /* runs the reservation holds */
	uint32_t front;                  /* runs ever handed out */
	uint32_t empty;                  /* the pool of empty runs */
	struct run *runs;
	uint32_t partial[NCLASSES];      /* per class: its runs with room */
	size_t in_use, runs_used, fallbacks;
};

/* The size of a block of class k. */
static size_t class_size(unsigned k)
{
	unsigned e = 9 + (k - 1) / 8;

	if (k >= SMALL_CLASSES)
		return (SLAB_RUN / (31 - (k - SMALL_CLASSES))) & ~(size_t)63;
	return k ? (size_t)(9 + (k - 1) % 8) << (e - 3) : MIN_BLOCK;
}

/* The class of a block of n bytes (n <= SLAB_MAX_BLOCK): the smallest
 * that holds it. */
static unsigned class_of(size_t n)
{
	size_t m = n - 1;
	unsigned e;

	if (n <= MIN_BLOCK)
		return 0;
	if (n <= SMALL_MAX) {
		e = 63u - (unsigned)__builtin_clzll((unsigned long long)m);   /* 2^e <= m */
		return (e - 9) * 8 + (unsigned)((m >> (e - 3)) & 7) + 1;
	}
	for (m = SLAB_RUN / n; ((SLAB_RUN / m) & ~(size_t)63) < n; m--)
		;
	return SMALL_CLASSES + (unsigned)(31 - m);
}

static uint8_t *run_addr(const struct slab *s, uint32_t r)
{
	return s->base + (size_t)r * SLAB_RUN;
}

int slab_create(size_t max_bytes, struct slab **out)
{
	struct slab *s;
	size_t huge = max_bytes / SLAB_HUGE;
	unsigned k;
	void *m;

	if (!out)
		return ERR_INVAL;
	if (!(s = calloc(1, sizeof(*s))))
		return ERR_NOMEM;
	if (pthread_mutex_init(&s->mu, NULL)) {
		free(s);
		return ERR_NOMEM;
	}
	for (k = 0; k < NCLASSES; k++)
		s->partial[k] = NIL;
	s->empty = NIL;
	if (huge > (NIL - 1) / (SLAB_HUGE / SLAB_RUN))
		huge = (NIL - 1) / (SLAB_HUGE / SLAB_RUN);
	if (huge && (s->runs = calloc(huge * (SLAB_HUGE / SLAB_RUN), sizeof(*s->runs))) != NULL) {
		/* one stretch more, to align the first to SLAB_HUGE */
		s->map_len = (huge + 1) * SLAB_HUGE;
		m = mmap(NULL, s->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			 -1, 0);
		if (m != MAP_FAILED) {
			s->map = m;
			s->base = (uint8_t *)(((uintptr_t)m + SLAB_HUGE - 1) & ~(uintptr_t)(SLAB_HUGE - 1));
			s->nruns = (uint32_t)(huge * (SLAB_HUGE / SLAB_RUN));
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
		UNPOISON(s->base, (size_t)s->front * SLAB_RUN);
		munmap(s->map, s->map_len);
	}
	pthread_mutex_destroy(&s->mu);
	free(s->runs);
	free(s);
}

static void list_push(struct slab *s, uint32_t *head, uint32_t r)
{
	s->runs[r].prev = NIL;
	s->runs[r].next = *head;
	if (*head != NIL)
		s->runs[*head].prev = r;
	*head = r;
}

static void list_unlink(struct slab *s, uint32_t *head, uint32_t r)
{
	struct run *u = &s->runs[r];

	if (u->prev != NIL)
		s->runs[u->prev].next = u->next;
	else
		*head = u->next;
	if (u->next != NIL)
		s->runs[u->next].prev = u->prev;
}

/* An empty run for class k, listed in its class (s->mu held): from the
 * pool, else the next at the front. NIL when none is left. */
static uint32_t take_run(struct slab *s, unsigned k)
{
	uint32_t r = s->empty;
	uint8_t *p;

	if (r != NIL) {
		s->empty = s->runs[r].next;
	} else if (s->front < s->nruns) {
		r = s->front;
		p = run_addr(s, r);
		if ((size_t)r % (SLAB_HUGE / SLAB_RUN) == 0) {
			if (mprotect(p, SLAB_HUGE, PROT_READ | PROT_WRITE))
				return NIL;
#ifdef MADV_HUGEPAGE
			(void)madvise(p, SLAB_HUGE, MADV_HUGEPAGE);   /* a hint: 4 KiB pages without it */
#endif
		}
		s->front++;
	} else {
		return NIL;
	}
	POISON(run_addr(s, r), SLAB_RUN);
	s->runs[r] = (struct run){ .cls = (uint8_t)k, .listed = 1 };
	list_push(s, &s->partial[k], r);
	s->runs_used++;
	return r;
}

/* A block of class k (s->mu held), or NULL. */
static void *block(struct slab *s, unsigned k)
{
	size_t cs = class_size(k);
	uint32_t r = s->partial[k] != NIL ? s->partial[k] : take_run(s, k);
	struct run *u;
	void *p;

	if (r == NIL)
		return NULL;
	u = &s->runs[r];
	if (u->free) {
		p = u->free;
		u->free = u->free->next;
	} else {
		p = run_addr(s, r) + (size_t)u->carved++ * cs;
	}
	u->live++;
	if (!u->free && (size_t)(u->carved + 1) * cs > SLAB_RUN) {   /* full */
		list_unlink(s, &s->partial[k], r);
		u->listed = 0;
	}
	s->in_use += cs;
	return p;
}

void *slab_alloc(struct slab *s, size_t n, size_t *size)
{
	unsigned k;
	void *p = NULL;

	if (!s || !size)
		return NULL;
	if (n <= SLAB_MAX_BLOCK && s->nruns) {
		k = class_of(n);
		pthread_mutex_lock(&s->mu);
		p = block(s, k);
		pthread_mutex_unlock(&s->mu);
		if (p) {
			UNPOISON(p, n ? n : 1);
			*size = class_size(k);
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
	struct run *u;
	uint32_t r;
	size_t cs;

	if (!p)
		return;
	if (!s || !s->map || b < s->base || b >= s->base + (size_t)s->nruns * SLAB_RUN) {
		free(p);
		return;
	}
	r = (uint32_t)((size_t)(b - s->base) / SLAB_RUN);
	pthread_mutex_lock(&s->mu);
	u = &s->runs[r];
	cs = class_size(u->cls);
	POISON(b, cs);
	UNPOISON(b, sizeof(*f));
	f->next = u->free;
	u->free = f;
	s->in_use -= cs;
	if (--u->live == 0) {                /* empty: to the pool, for any class */
		if (u->listed)
			list_unlink(s, &s->partial[u->cls], r);
		u->listed = 0;
		u->next = s->empty;
		s->empty = r;
		s->runs_used--;
	} else if (!u->listed) {             /* was full: has room again */
		list_push(s, &s->partial[u->cls], r);
		u->listed = 1;
	}
	pthread_mutex_unlock(&s->mu);
}

void slab_stats(struct slab *s, struct slab_stats *st)
{
	pthread_mutex_lock(&s->mu);
	*st = (struct slab_stats){ .runs = s->runs_used, .max_runs = s->nruns,
				   .committed = ((size_t)s->front * SLAB_RUN + SLAB_HUGE - 1) /
						SLAB_HUGE * SLAB_HUGE,
				   .in_use = s->in_use, .fallbacks = s->fallbacks };
	pthread_mutex_unlock(&s->mu);
}
