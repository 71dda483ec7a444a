/*
 * regions.c - a thread-safe LRU of eroded region maps with single flight
 * (see regions.h).
 *
 * The cache holds a few hundred regions at most (a region of 352^2 floats
 * is about 0.5 MB), so entries live in one list in LRU order and a lookup
 * walks it; the walk costs microseconds against milliseconds of tile work.
 * One mutex guards everything; a region is computed outside it, and the
 * workers that want the same region meanwhile sleep on a condition
 * variable until it is ready.
 */
#include "regions.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "err.h"
#include "pipeline.h"
#include "preset.h"

struct entry {
	struct entry *prev, *next;   /* LRU list, most recent first */
	const struct preset *p;
	uint64_t seed;
	int64_t rx, rz;
	float *map;                  /* NULL while computing */
	size_t bytes;
	int refs;
	int failed;
};

struct regions {
	struct region_source src;
	pthread_mutex_t lock;
	pthread_cond_t ready;
	struct entry *head, *tail;
	struct regions_stats st;
};

static void unlink_entry(struct regions *r, struct entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		r->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		r->tail = e->prev;
	e->prev = e->next = NULL;
}

static void push_front(struct regions *r, struct entry *e)
{
	e->prev = NULL;
	e->next = r->head;
	if (r->head)
		r->head->prev = e;
	r->head = e;
	if (!r->tail)
		r->tail = e;
}

static void drop(struct regions *r, struct entry *e)
{
	unlink_entry(r, e);
	r->st.entries--;
	r->st.bytes -= e->bytes;
	free(e->map);
	free(e);
}

/* Evict unheld ready regions from the old end until under the bound. */
static void evict(struct regions *r)
{
	struct entry *e = r->tail, *prev;

	for (; e && r->st.bytes > r->st.capacity; e = prev) {
		prev = e->prev;
		if (e->refs == 0 && e->map) {
			drop(r, e);
			r->st.evictions++;
		}
	}
}

static struct entry *find(struct regions *r, const struct preset *p, uint64_t seed,
			  int64_t rx, int64_t rz)
{
	struct entry *e;

	for (e = r->head; e; e = e->next)
		if (e->p == p && e->seed == seed && e->rx == rx && e->rz == rz && !e->failed)
			return e;
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Compute e's map outside the lock; 0 or ERR_NOMEM. */
static int compute(struct regions *r, struct entry *e)
{
	size_t side = pipeline_region_side(e->p);
	float *map = malloc(side * side * sizeof(float));
	double t0 = now_ms();
	int rc = map ? pipeline_region(e->p, e->seed, e->rx, e->rz, map) : ERR_NOMEM;

	pthread_mutex_lock(&r->lock);
	r->st.compute_ms += now_ms() - t0;
	if (rc) {
		free(map);
		e->failed = 1;
		r->st.failures++;
	} else {
		e->map = map;
		e->bytes += side * side * sizeof(float);
		r->st.bytes += side * side * sizeof(float);
	}
	pthread_cond_broadcast(&r->ready);
	return rc;   /* still locked */
}

static const float *acquire(void *ctx, const struct preset *p, uint64_t seed,
			    int64_t rx, int64_t rz)
{
	struct regions *r = ctx;
	struct entry *e;
	const float *map = NULL;

	pthread_mutex_lock(&r->lock);
	e = find(r, p, seed, rx, rz);
	if (e && e->map) {
		r->st.hits++;
	} else if (e) {
		r->st.waits++;
		e->refs++;
		while (!e->map && !e->failed)
			pthread_cond_wait(&r->ready, &r->lock);
		e->refs--;
		if (e->failed) {
			if (e->refs == 0)
				drop(r, e);
			pthread_mutex_unlock(&r->lock);
			return NULL;
		}
	} else {
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&r->lock);
			return NULL;
		}
		*e = (struct entry){ NULL, NULL, p, seed, rx, rz, NULL, sizeof(*e), 1, 0 };
		push_front(r, e);
		r->st.entries++;
		r->st.bytes += e->bytes;
		r->st.misses++;
		pthread_mutex_unlock(&r->lock);
		if (compute(r, e)) {   /* returns locked */
			if (--e->refs == 0)
				drop(r, e);
			pthread_mutex_unlock(&r->lock);
			return NULL;
		}
		e->refs--;
	}
	e->refs++;
	unlink_entry(r, e);
	push_front(r, e);
	map = e->map;
	evict(r);
	pthread_mutex_unlock(&r->lock);
	return map;
}

static void release(void *ctx, const float *map)
{
	struct regions *r = ctx;
	struct entry *e;

	pthread_mutex_lock(&r->lock);
	for (e = r->head; e; e = e->next)
		if (e->map == map) {
			e->refs--;
			break;
		}
	evict(r);
	pthread_mutex_unlock(&r->lock);
}

int regions_create(size_t capacity, struct regions **out)
{
	struct regions *r = calloc(1, sizeof(*r));

	if (!r)
		return ERR_NOMEM;
	if (pthread_mutex_init(&r->lock, NULL)) {
		free(r);
		return ERR_NOMEM;
	}
	if (pthread_cond_init(&r->ready, NULL)) {
		pthread_mutex_destroy(&r->lock);
		free(r);
		return ERR_NOMEM;
	}
	r->src = (struct region_source){ acquire, release, r };
	r->st.capacity = capacity;
	*out = r;
	return 0;
}

void regions_destroy(struct regions *r)
{
	if (!r)
		return;
	while (r->head)
		drop(r, r->head);
	pthread_cond_destroy(&r->ready);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

const struct region_source *regions_source(struct regions *r)
{
	return &r->src;
}

void regions_stats(struct regions *r, struct regions_stats *out)
{
	pthread_mutex_lock(&r->lock);
	*out = r->st;
	pthread_mutex_unlock(&r->lock);
}
