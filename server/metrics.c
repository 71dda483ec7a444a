/*
 * metrics.c - counters and their Prometheus text (see metrics.h).
 */
#include "metrics.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "err.h"
#include "http.h"
#include "regions.h"

static const int statuses[] = {
#define XX(code, text) code,
	HTTP_REASON_MAP(XX)
#undef XX
	0 /* any other status */
};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))

/* Generation latency buckets, seconds (le). */
static const double buckets[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5
};
#define NBUCKET (sizeof(buckets) / sizeof(buckets[0]))

struct metrics {
	const char *const *labels;
	size_t nroutes;
	uint64_t requests[METRICS_MAX_ROUTES][NSTATUS];
	uint64_t gen_in_flight, gen_total, gen_errors;
	uint64_t gen_bucket[NBUCKET + 1]; /* last: +Inf */
	double gen_sum;
	uint64_t made, made_capacity;
	uint64_t edits, batches;
	uint64_t edit_rejects[NSTATUS];
};

int metrics_create(const char *const *labels, size_t n, struct metrics **out)
{
	struct metrics *m;

	if (!labels || n > METRICS_MAX_ROUTES || !out)
		return ERR_INVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return ERR_NOMEM;
	m->labels = labels;
	m->nroutes = n;
	*out = m;
	return 0;
}

void metrics_destroy(struct metrics *m)
{
	free(m);
}

static size_t status_index(int status);

void metrics_request(struct metrics *m, unsigned route, int status)
{
	if (route < m->nroutes)
		m->requests[route][status_index(status)]++;
}

void metrics_generation_start(struct metrics *m)
{
	m->gen_in_flight++;
}

void metrics_generation_end(struct metrics *m, double seconds, int err)
{
	size_t i;

	m->gen_in_flight--;
	m->gen_total++;
	if (err)
		m->gen_errors++;
	for (i = 0; i < NBUCKET && seconds > buckets[i]; i++)
		;
	m->gen_bucket[i]++;
	m->gen_sum += seconds;
}

void metrics_made(struct metrics *m, size_t bytes, size_t capacity)
{
	m->made = bytes;
	m->made_capacity = capacity;
}

/* Index of status in statuses (the last: any other). */
static size_t status_index(int status)
{
	size_t i;

	for (i = 0; i < NSTATUS - 1 && statuses[i] != status; i++)
		;
	return i;
}

void metrics_edits_accepted(struct metrics *m, size_t n)
{
	m->edits += n;
	m->batches++;
}

void metrics_edit_rejected(struct metrics *m, int status)
{
	m->edit_rejects[status_index(status)]++;
}

struct out {
	char *p;
	size_t len, cap;
	int failed;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	if (o->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->failed = 1;
			return;
		}
		if ((size_t)n < o->cap - o->len)
			break;
		p = realloc(o->p, o->cap * 2 + (size_t)n);
		if (!p) {
			o->failed = 1;
			return;
		}
		o->p = p;
		o->cap = o->cap * 2 + (size_t)n;
	}
	o->len += (size_t)n;
}

static void family(struct out *o, const char *name, const char *type,
		   const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(struct out *o, const char *name, const char *type,
		   const char *help, uint64_t v)
{
	family(o, name, type, help);
	put(o, "%s %llu\n", name, (unsigned long long)v);
}

static void render_requests(struct out *o, const struct metrics *m)
{
	size_t r, i;

	family(o, "terrain_requests_total", "counter",
	       "HTTP responses by route and status.");
	for (r = 0; r < m->nroutes; r++)
		for (i = 0; i < NSTATUS; i++)
			if (m->requests[r][i]) {
				char st[8] = "other";

				if (statuses[i])
					snprintf(st, sizeof(st), "%d", statuses[i]);
				put(o, "terrain_requests_total{route=\"%s\",status=\"%s\"} %llu\n",
				    m->labels[r], st, (unsigned long long)m->requests[r][i]);
			}
}

static void render_histogram(struct out *o, const struct metrics *m)
{
	uint64_t cum = 0;
	size_t i;

	family(o, "terrain_generation_seconds", "histogram",
	       "Time to generate, encode and compress one tile or object list.");
	for (i = 0; i < NBUCKET; i++) {
		cum += m->gen_bucket[i];
		put(o, "terrain_generation_seconds_bucket{le=\"%g\"} %llu\n",
		    buckets[i], (unsigned long long)cum);
	}
	cum += m->gen_bucket[NBUCKET];
	put(o, "terrain_generation_seconds_bucket{le=\"+Inf\"} %llu\n",
	    (unsigned long long)cum);
	put(o, "terrain_generation_seconds_sum %.6f\n", m->gen_sum);
	put(o, "terrain_generation_seconds_count %llu\n", (unsigned long long)cum);
}

static void render_edits(struct out *o, const struct metrics *m,
			 const struct metrics_edit_stats *es)
{
	size_t i;

	scalar(o, "terrain_edits_total", "counter",
	       "Edits accepted (durable and applied).", m->edits);
	scalar(o, "terrain_edit_batches_total", "counter",
	       "Edit batches accepted.", m->batches);
	family(o, "terrain_edit_rejects_total", "counter",
	       "Edit requests refused, by status.");
	for (i = 0; i < NSTATUS; i++)
		if (m->edit_rejects[i]) {
			char st[8] = "other";

			if (statuses[i])
				snprintf(st, sizeof(st), "%d", statuses[i]);
			put(o, "terrain_edit_rejects_total{status=\"%s\"} %llu\n", st,
			    (unsigned long long)m->edit_rejects[i]);
		}
	scalar(o, "terrain_wal_commits_total", "counter",
	       "Group commits of the edit log (one fdatasync each).", es->wal_commits);
	scalar(o, "terrain_wal_last_commit_records", "gauge",
	       "Edit batches covered by the last group commit.", es->wal_last_batch);
	scalar(o, "terrain_wal_records", "gauge",
	       "Records in the edit log.", es->wal_records);
	scalar(o, "terrain_wal_bytes", "gauge",
	       "Size of the edit log in bytes.", es->wal_bytes);
	scalar(o, "terrain_wal_failed", "gauge",
	       "1 once the edit log failed: edits get 503 until a restart.",
	       (uint64_t)(es->wal_failed != 0));
	scalar(o, "terrain_sse_subscribers", "gauge",
	       "Event streams open.", es->sse_subscribers);
	scalar(o, "terrain_sse_events_total", "counter",
	       "Edit batches published to event streams.", es->sse_events);
	scalar(o, "terrain_sse_dropped_total", "counter",
	       "Event streams dropped for reading too slowly.", es->sse_dropped);
	scalar(o, "terrain_worlds", "gauge",
	       "Worlds with edit state in memory.", es->worlds);
}

static void render_regions(struct out *o, const struct regions_stats *rs)
{
	scalar(o, "terrain_region_cache_hits_total", "counter",
	       "Eroded region lookups that found the region ready.", rs->hits);
	scalar(o, "terrain_region_cache_misses_total", "counter",
	       "Eroded region lookups that computed the region.", rs->misses);
	scalar(o, "terrain_region_cache_waits_total", "counter",
	       "Eroded region lookups that waited for another's computation.", rs->waits);
	scalar(o, "terrain_region_cache_evictions_total", "counter",
	       "Eroded regions evicted to keep the cache within its byte bound.",
	       rs->evictions);
	scalar(o, "terrain_region_cache_failures_total", "counter",
	       "Eroded region computations that failed.", rs->failures);
	scalar(o, "terrain_region_cache_entries", "gauge",
	       "Eroded regions in the cache.", rs->entries);
	scalar(o, "terrain_region_cache_bytes", "gauge",
	       "Bytes held by the region cache.", rs->bytes);
	scalar(o, "terrain_region_cache_capacity_bytes", "gauge",
	       "The region cache's byte bound.", rs->capacity);
	family(o, "terrain_region_compute_seconds_total", "counter",
	       "Time spent computing eroded regions.");
	put(o, "terrain_region_compute_seconds_total %.6f\n", rs->compute_ms / 1000.0);
}

int metrics_render(const struct metrics *m, const struct cache_stats *cs,
		   const struct http_stats *hs, const struct regions_stats *rs,
		   const struct metrics_edit_stats *es, char **out, size_t *len)
{
	struct out o = { malloc(4096), 0, 4096, 0 };

	if (!o.p)
		return ERR_NOMEM;
	render_requests(&o, m);
	scalar(&o, "terrain_response_bytes_total", "counter",
	       "Response bytes written to clients.", hs->bytes_sent);
	scalar(&o, "terrain_connections_open", "gauge",
	       "Open client connections.", hs->connections_open);
	scalar(&o, "terrain_connections_total", "counter",
	       "Client connections accepted.", hs->connections_total);
	scalar(&o, "terrain_connections_rejected_total", "counter",
	       "Connections answered 503 at the connection limit.", hs->rejected);
	scalar(&o, "terrain_protocol_errors_total", "counter",
	       "Requests refused by the HTTP layer (malformed, too large, timed out).",
	       hs->protocol_errors);
	scalar(&o, "terrain_cache_hits_total", "counter",
	       "Tile and object lookups answered from the cache.", cs->hits);
	scalar(&o, "terrain_cache_misses_total", "counter",
	       "Tile and object lookups not in the cache (coalesced ones included).", cs->misses);
	scalar(&o, "terrain_cache_coalesced_total", "counter",
	       "Misses that waited for a generation already running.", cs->waits);
	scalar(&o, "terrain_cache_evictions_total", "counter",
	       "Tiles evicted to keep the cache within its byte bound.", cs->evictions);
	scalar(&o, "terrain_cache_entries", "gauge",
	       "Tiles in the cache.", cs->entries);
	scalar(&o, "terrain_cache_bytes", "gauge",
	       "Bytes held by the cache, overhead included.", cs->bytes);
	scalar(&o, "terrain_cache_capacity_bytes", "gauge",
	       "The cache's byte bound.", cs->capacity);
	render_regions(&o, rs);
	scalar(&o, "terrain_generations_in_flight", "gauge",
	       "Generations (tiles, object lists) running or queued.", m->gen_in_flight);
	scalar(&o, "terrain_generations_total", "counter",
	       "Generations (tiles, object lists) finished.", m->gen_total);
	scalar(&o, "terrain_generation_errors_total", "counter",
	       "Generations that failed.", m->gen_errors);
	scalar(&o, "terrain_made_bytes", "gauge",
	       "Bodies made for single requests (identity tiles, bundles, large JSON), not yet sent.",
	       m->made);
	scalar(&o, "terrain_made_capacity_bytes", "gauge",
	       "Their bound (--response-mb); past it such requests get 503.",
	       m->made_capacity);
	render_histogram(&o, m);
	render_edits(&o, m, es);
	if (o.failed) {
		free(o.p);
		return ERR_NOMEM;
	}
	*out = o.p;
	*len = o.len;
	return 0;
}
