/*
 * metrics.h - the server's counters, rendered in the Prometheus text
 * exposition format (version 0.0.4) for GET /metrics.
 *
 * Request counts are kept per route label and status; generation counts
 * and a latency histogram come from routes.c; the connection and cache
 * figures are read from their modules (struct http_stats, struct
 * cache_stats) at render time. Loop thread only: plain counters, no locks.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stddef.h>

struct metrics;
struct cache_stats;
struct http_stats;

/* Most route labels a metrics object accepts. */
#define METRICS_MAX_ROUTES 16

/*
 * Create counters for n route labels (static strings such as "tile",
 * n <= METRICS_MAX_ROUTES); routes are then named by their index.
 * Returns 0, ERR_INVAL or ERR_NOMEM. Free with metrics_destroy().
 */
int metrics_create(const char *const *labels, size_t n, struct metrics **out);
void metrics_destroy(struct metrics *m);

/* Count one response of route (an index into labels) with status. */
void metrics_request(struct metrics *m, unsigned route, int status);

/* A generation started / ended after seconds (ok: 0 or an ERR_* code). */
void metrics_generation_start(struct metrics *m);
void metrics_generation_end(struct metrics *m, double seconds, int err);

/*
 * Render everything as Prometheus text into a new malloc'd buffer: *out
 * (NUL-terminated, caller frees) of *len bytes. Returns 0 or ERR_NOMEM.
 */
int metrics_render(const struct metrics *m, const struct cache_stats *cs,
		   const struct http_stats *hs, char **out, size_t *len);

#endif
