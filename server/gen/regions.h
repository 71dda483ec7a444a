/*
 * regions.h - the cache of eroded regions that eroded presets share.
 *
 * An eroded tile needs the 1 to 4 regions its chunk lies in (preset.h);
 * each costs tens of milliseconds and serves several neighbouring chunks
 * at every LOD, so regions are kept here: bounded in bytes, least recently
 * used first out, one computation per region however many workers ask at
 * once (the others wait for it). Thread-safe: worker threads call it from
 * pipeline_generate_with() through regions_source(). Only regions nobody
 * holds are evicted, so the bound can be passed by the regions in use
 * (at most 9 per generating worker) until they are released.
 */
#ifndef REGIONS_H
#define REGIONS_H

#include <stddef.h>
#include <stdint.h>

struct regions;
struct region_source;

struct regions_stats {
	uint64_t hits;        /* acquires that found a ready region */
	uint64_t misses;      /* acquires that computed one */
	uint64_t waits;       /* acquires that waited for another's computation */
	uint64_t evictions;
	uint64_t failures;    /* computations that failed (out of memory) */
	size_t entries;
	size_t bytes;         /* maps and bookkeeping */
	size_t capacity;
	double compute_ms;    /* total time spent computing regions */
};

/* Create a cache bounded to capacity bytes. Returns 0 or ERR_NOMEM. */
int regions_create(size_t capacity, struct regions **out);

/* Free every region. No region may be held. NULL does nothing. */
void regions_destroy(struct regions *r);

/* The source to hand to pipeline_generate_with(); owned by r. */
const struct region_source *regions_source(struct regions *r);

void regions_stats(struct regions *r, struct regions_stats *out);

#endif
