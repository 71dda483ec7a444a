/*
 * metrics.h - the server's counters, rendered in the Prometheus text
 * exposition format (version 0.0.4) for GET /metrics.
 *
 * Request counts are kept per route label and status, request durations
 * as a histogram per route label; generation counts, a latency histogram
 * and the edit counters come from service/service.c; the connection, cache, region
 * cache, log and event figures are read from their modules (struct
 * http_stats, struct cache_stats, struct regions_stats, struct
 * metrics_edit_stats), the process_* figures from /proc (procstat.h) and
 * the generators from the catalog at render time, with the build's
 * figures (buildinfo.h). docs/operations.md lists every family. Loop
 * thread only: plain counters, no locks.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stddef.h>
#include <stdint.h>

struct metrics;
struct bakes_stats;
struct cache_stats;
struct catalog;
struct http_stats;
struct procstat;
struct regions_stats;

/* Gauges and counters of other modules, gathered by service/service.c. */
struct metrics_edit_stats {
	uint64_t wal_commits;     /* group commits (fdatasync calls) */
	uint64_t wal_last_batch;  /* records in the last commit */
	uint64_t wal_records;     /* records in the log */
	uint64_t wal_bytes;       /* size of the log */
	uint64_t wal_failed;      /* 1 once the log has failed */
	uint64_t sse_subscribers; /* event streams open */
	uint64_t sse_events;      /* batches published */
	uint64_t sse_dropped;     /* streams dropped as too slow */
	uint64_t worlds;          /* worlds with edit state in memory */
	uint64_t wal_base;        /* batches compacted away below a snapshot */
	uint64_t snap_written;    /* snapshots written since start */
	uint64_t snap_failed;     /* snapshots that failed */
	uint64_t snap_edits;      /* edits the latest snapshot holds */
	uint64_t snap_bytes;      /* its size */
	uint64_t snap_ms;         /* time the last write took */
	uint64_t snap_load_ms;    /* time loading it at start took */
	const char *log_backend;  /* "file" or "redis" */
	uint64_t log_up;          /* 1 while edits can be logged */
	uint64_t log_applied;     /* log records this node has applied */
	uint64_t log_head;        /* records in the log, as last seen */
	uint64_t log_lag;         /* head - applied */
	uint64_t log_reconnects;  /* connections to a shared log made again */
	uint64_t log_rtt_us;      /* last round trip to a shared log */
	uint64_t log_restores;    /* restores from a shared log's snapshot */
	uint64_t log_shared;      /* snapshots of this node's a shared log took */
	uint64_t keys;            /* idempotency keys remembered */
	uint64_t keys_bytes;      /* their memory */
	uint64_t appending;       /* edit POSTs waiting for the log */
};

/* Most route labels a metrics object accepts. */
#define METRICS_MAX_ROUTES 32

/*
 * Create counters for n route labels (static strings such as "tile",
 * n <= METRICS_MAX_ROUTES); routes are then named by their index.
 * Returns 0, ERR_INVAL or ERR_NOMEM. Free with metrics_destroy().
 */
int metrics_create(const char *const *labels, size_t n, struct metrics **out);
void metrics_destroy(struct metrics *m);

/* Count one response of route (an index into labels) with status. */
void metrics_request(struct metrics *m, unsigned route, int status);

/* A response of route went out whole, ns nanoseconds after its request's
 * first byte (the terrain_request_duration_seconds histogram). */
void metrics_request_done(struct metrics *m, unsigned route, uint64_t ns);

/* A generation (a tile or a chunk's objects) started / ended after
 * seconds (err: 0 or an ERR_* code). */
void metrics_generation_start(struct metrics *m);
void metrics_generation_end(struct metrics *m, double seconds, int err);

/* Bytes of bodies made for single requests and not yet sent, against
 * their bound (--response-mb). */
void metrics_made(struct metrics *m, size_t bytes, size_t capacity);

/* A batch of n edits was accepted (durable and applied). */
void metrics_edits_accepted(struct metrics *m, size_t n);

/* An edit request was refused with status (400, 401, 403, 413, 422, 503...). */
void metrics_edit_rejected(struct metrics *m, int status);
/* A keyed batch retried, answered with its first outcome. */
void metrics_edits_replayed(struct metrics *m);

/* What one render reads besides the counters (gathered by service/service.c). */
struct metrics_sources {
	const struct cache_stats *cache;
	const struct http_stats *http;
	const struct regions_stats *regions;
	const struct bakes_stats *bakes;
	const struct metrics_edit_stats *edits;
	const struct procstat *process;  /* NULL: no process_* samples */
	const struct catalog *catalog;   /* terrain_generator_info; NULL: none */
};

/*
 * Render everything as Prometheus text into a new malloc'd buffer: *out
 * (NUL-terminated, caller frees) of *len bytes. Every source but process
 * and catalog must be set. Returns 0 or ERR_NOMEM.
 */
int metrics_render(const struct metrics *m, const struct metrics_sources *src,
		   char **out, size_t *len);

#endif
