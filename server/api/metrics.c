/*
 * metrics.c - counters and their Prometheus text (see metrics.h).
 */
#include "metrics.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buildinfo.h"
#include "base/cache.h"
#include "base/procstat.h"
#include "err.h"
#include "gen/regions.h"
#include "http/http.h"
#include "preset.h"
#include "worlds/bakes.h"
#include "worlds/catalog.h"

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

/* Request duration buckets, nanoseconds (le in seconds: 0.0001 .. 10): a
 * cache hit takes tens of microseconds, a cold LOD 0 tile some
 * milliseconds, an eroded region or a large bundle up to seconds. */
static const uint64_t dur_buckets[] = {
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
	50000000, 100000000, 250000000, 500000000, 1000000000, 2500000000u,
	5000000000u, 10000000000u
};
#define NDUR (sizeof(dur_buckets) / sizeof(dur_buckets[0]))

struct metrics {
	const char *const *labels;
	size_t nroutes;
	uint64_t requests[METRICS_MAX_ROUTES][NSTATUS];
	uint64_t dur_bucket[METRICS_MAX_ROUTES][NDUR + 1]; /* last: +Inf */
	uint64_t dur_sum_ns[METRICS_MAX_ROUTES];
	uint64_t gen_in_flight, gen_total, gen_errors;
	uint64_t gen_bucket[NBUCKET + 1]; /* last: +Inf */
	double gen_sum;
	uint64_t made, made_capacity;
	uint64_t edits, batches, replayed;
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

void metrics_request_done(struct metrics *m, unsigned route, uint64_t ns)
{
	size_t i;

	if (route >= m->nroutes)
		return;
	for (i = 0; i < NDUR && ns > dur_buckets[i]; i++)
		;
	m->dur_bucket[route][i]++;
	m->dur_sum_ns[route] += ns;
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

void metrics_edits_replayed(struct metrics *m)
{
	m->replayed++;
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

/* What one /metrics render reads. */
struct sources {
	const struct metrics *m;
	const struct metrics_sources *src;
};

enum source { SELF, HTTP, CACHE, REGIONS, BAKES, EDITS, PROC };

/* How a scalar field reads: a count, a double, or milliseconds shown in
 * seconds (Prometheus's base unit). */
enum kind { COUNT, REAL, MS };

/*
 * One metric family: a scalar read from a field of one source (a uint64_t
 * or size_t at off, or a double), or rendered by its own function. A
 * family whose source is absent (PROC without /proc) is left out.
 */
struct family_def {
	const char *name, *type, *help;
	enum source src;
	size_t off, size;
	enum kind kind;
	void (*render)(struct out *o, const struct family_def *f, const struct sources *s);
};

#define FIELD(src, type, field) src, offsetof(type, field), sizeof(((type *)0)->field), COUNT, NULL
#define FIELD_REAL(src, type, field) src, offsetof(type, field), sizeof(double), REAL, NULL
#define FIELD_MS(src, type, field) src, offsetof(type, field), sizeof(uint64_t), MS, NULL
#define CUSTOM(fn) SELF, 0, 0, COUNT, fn

/* A Prometheus label value: '\', '"' and newlines escaped. */
static void put_label(struct out *o, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			put(o, "\\%c", *v);
		else if (*v == '\n')
			put(o, "\\n");
		else
			put(o, "%c", *v);
	}
}

static void render_requests(struct out *o, const struct family_def *f,
			    const struct sources *s)
{
	const struct metrics *m = s->m;
	size_t r, i;

	for (r = 0; r < m->nroutes; r++)
		for (i = 0; i < NSTATUS; i++)
			if (m->requests[r][i]) {
				char st[8] = "other";

				if (statuses[i])
					snprintf(st, sizeof(st), "%d", statuses[i]);
				put(o, "%s{route=\"%s\",status=\"%s\"} %llu\n", f->name,
				    m->labels[r], st, (unsigned long long)m->requests[r][i]);
			}
}

static void render_durations(struct out *o, const struct family_def *f,
			     const struct sources *s)
{
	const struct metrics *m = s->m;
	size_t r, i;

	for (r = 0; r < m->nroutes; r++) {
		uint64_t cum = 0;

		for (i = 0; i < NDUR; i++) {
			cum += m->dur_bucket[r][i];
			put(o, "%s_bucket{route=\"%s\",le=\"%g\"} %llu\n", f->name, m->labels[r],
			    (double)dur_buckets[i] / 1e9, (unsigned long long)cum);
		}
		cum += m->dur_bucket[r][NDUR];
		put(o, "%s_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", f->name, m->labels[r],
		    (unsigned long long)cum);
		put(o, "%s_sum{route=\"%s\"} %.9f\n", f->name, m->labels[r],
		    (double)m->dur_sum_ns[r] / 1e9);
		put(o, "%s_count{route=\"%s\"} %llu\n", f->name, m->labels[r],
		    (unsigned long long)cum);
	}
}

static void render_histogram(struct out *o, const struct family_def *f,
			     const struct sources *s)
{
	const struct metrics *m = s->m;
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i < NBUCKET; i++) {
		cum += m->gen_bucket[i];
		put(o, "%s_bucket{le=\"%g\"} %llu\n", f->name, buckets[i],
		    (unsigned long long)cum);
	}
	cum += m->gen_bucket[NBUCKET];
	put(o, "%s_bucket{le=\"+Inf\"} %llu\n", f->name, (unsigned long long)cum);
	put(o, "%s_sum %.6f\n", f->name, m->gen_sum);
	put(o, "%s_count %llu\n", f->name, (unsigned long long)cum);
}

static void render_rejects(struct out *o, const struct family_def *f,
			   const struct sources *s)
{
	size_t i;

	for (i = 0; i < NSTATUS; i++)
		if (s->m->edit_rejects[i]) {
			char st[8] = "other";

			if (statuses[i])
				snprintf(st, sizeof(st), "%d", statuses[i]);
			put(o, "%s{status=\"%s\"} %llu\n", f->name, st,
			    (unsigned long long)s->m->edit_rejects[i]);
		}
}

static void render_compute(struct out *o, const struct family_def *f,
			   const struct sources *s)
{
	put(o, "%s %.6f\n", f->name, s->src->regions->compute_ms / 1000.0);
}

static void render_build(struct out *o, const struct family_def *f, const struct sources *s)
{
	const struct buildinfo *b = buildinfo_get();
	const char *const kv[][2] = {
		{ "version", b->version }, { "commit", b->commit },
		{ "compiler", b->compiler }, { "arch", b->arch }, { "simd", b->simd },
		{ "tile_format_versions", b->tile_formats },
	};
	size_t i;

	(void)s;
	put(o, "%s{", f->name);
	for (i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		put(o, "%s=\"", kv[i][0]);
		put_label(o, kv[i][1]);
		put(o, "\",");
	}
	put(o, "algorithm_version=\"%d\"} 1\n", b->algorithm_version);
}

static void render_generators(struct out *o, const struct family_def *f,
			      const struct sources *s)
{
	const struct catalog *cat = s->src->catalog;
	size_t i, n = cat ? catalog_count(cat) : 0;

	for (i = 0; i < n; i++) {
		const struct preset *p = catalog_at(cat, i);

		put(o, "%s{generator=\"", f->name);
		put_label(o, preset_name(p));
		put(o, "\",fingerprint=\"%016llx\",chunk_size=\"%d\",max_lod=\"%d\"} 1\n",
		    (unsigned long long)preset_fingerprint(p), 1 << preset_chunk_log2(p),
		    preset_max_lod(p));
	}
}

static void render_log_info(struct out *o, const struct family_def *f,
			    const struct sources *s)
{
	put(o, "%s{backend=\"%s\"} 1\n", f->name,
	    s->src->edits->log_backend ? s->src->edits->log_backend : "none");
}

static void render_log_rtt(struct out *o, const struct family_def *f,
			   const struct sources *s)
{
	put(o, "%s %.6f\n", f->name, (double)s->src->edits->log_rtt_us / 1e6);
}

/* Every family, in the order /metrics lists them. */
static const struct family_def families[] = {
	{ "terrain_requests_total", "counter", "HTTP responses by route and status.",
	  CUSTOM(render_requests) },
	{ "terrain_request_duration_seconds", "histogram",
	  "Time from a request's first byte to its response written, by route.",
	  CUSTOM(render_durations) },
	{ "terrain_response_bytes_total", "counter", "Response bytes written to clients.",
	  FIELD(HTTP, struct http_stats, bytes_sent) },
	{ "terrain_connections_open", "gauge", "Open client connections.",
	  FIELD(HTTP, struct http_stats, connections_open) },
	{ "terrain_connections_total", "counter", "Client connections accepted.",
	  FIELD(HTTP, struct http_stats, connections_total) },
	{ "terrain_connections_rejected_total", "counter",
	  "Connections answered 503 at the connection limit.",
	  FIELD(HTTP, struct http_stats, rejected) },
	{ "terrain_protocol_errors_total", "counter",
	  "Requests refused by the HTTP layer (malformed, too large, timed out).",
	  FIELD(HTTP, struct http_stats, protocol_errors) },
	{ "terrain_cache_hits_total", "counter",
	  "Tile and object lookups answered from the cache.",
	  FIELD(CACHE, struct cache_stats, hits) },
	{ "terrain_cache_misses_total", "counter",
	  "Tile and object lookups not in the cache (coalesced ones included).",
	  FIELD(CACHE, struct cache_stats, misses) },
	{ "terrain_cache_coalesced_total", "counter",
	  "Misses that waited for a generation already running.",
	  FIELD(CACHE, struct cache_stats, waits) },
	{ "terrain_cache_evictions_total", "counter",
	  "Tiles evicted to keep the cache within its byte bound.",
	  FIELD(CACHE, struct cache_stats, evictions) },
	{ "terrain_cache_entries", "gauge", "Tiles in the cache.",
	  FIELD(CACHE, struct cache_stats, entries) },
	{ "terrain_cache_bytes", "gauge", "Bytes held by the cache, overhead included.",
	  FIELD(CACHE, struct cache_stats, bytes) },
	{ "terrain_cache_capacity_bytes", "gauge", "The cache's byte bound.",
	  FIELD(CACHE, struct cache_stats, capacity) },
	{ "terrain_region_cache_hits_total", "counter",
	  "Eroded region lookups that found the region ready.",
	  FIELD(REGIONS, struct regions_stats, hits) },
	{ "terrain_region_cache_misses_total", "counter",
	  "Eroded region lookups that computed the region.",
	  FIELD(REGIONS, struct regions_stats, misses) },
	{ "terrain_region_cache_waits_total", "counter",
	  "Eroded region lookups that waited for another's computation.",
	  FIELD(REGIONS, struct regions_stats, waits) },
	{ "terrain_region_cache_evictions_total", "counter",
	  "Eroded regions evicted to keep the cache within its byte bound.",
	  FIELD(REGIONS, struct regions_stats, evictions) },
	{ "terrain_region_cache_failures_total", "counter",
	  "Eroded region computations that failed.",
	  FIELD(REGIONS, struct regions_stats, failures) },
	{ "terrain_region_cache_entries", "gauge", "Eroded regions in the cache.",
	  FIELD(REGIONS, struct regions_stats, entries) },
	{ "terrain_region_cache_bytes", "gauge", "Bytes held by the region cache.",
	  FIELD(REGIONS, struct regions_stats, bytes) },
	{ "terrain_region_cache_capacity_bytes", "gauge", "The region cache's byte bound.",
	  FIELD(REGIONS, struct regions_stats, capacity) },
	{ "terrain_region_compute_seconds_total", "counter",
	  "Time spent computing eroded regions.", CUSTOM(render_compute) },
	{ "terrain_generations_in_flight", "gauge",
	  "Generations (tiles, object lists) running or queued.",
	  FIELD(SELF, struct metrics, gen_in_flight) },
	{ "terrain_generations_total", "counter",
	  "Generations (tiles, object lists) finished.",
	  FIELD(SELF, struct metrics, gen_total) },
	{ "terrain_generation_errors_total", "counter", "Generations that failed.",
	  FIELD(SELF, struct metrics, gen_errors) },
	{ "terrain_made_bytes", "gauge",
	  "Bodies made for single requests (bundles, large JSON), not yet sent.",
	  FIELD(SELF, struct metrics, made) },
	{ "terrain_made_capacity_bytes", "gauge",
	  "Their bound (--response-mb); past it such requests get 503.",
	  FIELD(SELF, struct metrics, made_capacity) },
	{ "terrain_generation_seconds", "histogram",
	  "Time to generate, encode and compress one tile or object list.",
	  CUSTOM(render_histogram) },
	{ "terrain_edits_total", "counter", "Edits accepted (durable and applied).",
	  FIELD(SELF, struct metrics, edits) },
	{ "terrain_edit_batches_total", "counter", "Edit batches accepted.",
	  FIELD(SELF, struct metrics, batches) },
	{ "terrain_edit_replays_total", "counter",
	  "Edit batches retried with a known Idempotency-Key, answered with the first outcome.",
	  FIELD(SELF, struct metrics, replayed) },
	{ "terrain_idempotency_keys", "gauge",
	  "Idempotency keys this node remembers (--idempotency-window, --idempotency-keys).",
	  FIELD(EDITS, struct metrics_edit_stats, keys) },
	{ "terrain_idempotency_keys_bytes", "gauge", "Memory the remembered keys take.",
	  FIELD(EDITS, struct metrics_edit_stats, keys_bytes) },
	{ "terrain_edit_appends_in_flight", "gauge",
	  "Edit requests waiting for the edit log to confirm their batch.",
	  FIELD(EDITS, struct metrics_edit_stats, appending) },
	{ "terrain_edit_rejects_total", "counter", "Edit requests refused, by status.",
	  CUSTOM(render_rejects) },
	{ "terrain_wal_commits_total", "counter",
	  "Group commits of the edit log (one fdatasync each).",
	  FIELD(EDITS, struct metrics_edit_stats, wal_commits) },
	{ "terrain_wal_last_commit_records", "gauge",
	  "Edit batches covered by the last group commit.",
	  FIELD(EDITS, struct metrics_edit_stats, wal_last_batch) },
	{ "terrain_wal_records", "gauge", "Records in the edit log.",
	  FIELD(EDITS, struct metrics_edit_stats, wal_records) },
	{ "terrain_wal_bytes", "gauge", "Size of the edit log in bytes.",
	  FIELD(EDITS, struct metrics_edit_stats, wal_bytes) },
	{ "terrain_wal_failed", "gauge",
	  "1 once the edit log failed: edits get 503 until a restart.",
	  FIELD(EDITS, struct metrics_edit_stats, wal_failed) },
	{ "terrain_edit_log_info", "gauge", "The edit log backend (label backend).",
	  CUSTOM(render_log_info) },
	{ "terrain_edit_log_up", "gauge",
	  "1 while edits can be logged; 0 while the log is out of reach or failed.",
	  FIELD(EDITS, struct metrics_edit_stats, log_up) },
	{ "terrain_edit_log_applied_records", "gauge",
	  "Log records (batches) this node has applied, replay included.",
	  FIELD(EDITS, struct metrics_edit_stats, log_applied) },
	{ "terrain_edit_log_head_records", "gauge",
	  "Records in the edit log, as this node last saw its head.",
	  FIELD(EDITS, struct metrics_edit_stats, log_head) },
	{ "terrain_edit_log_lag_records", "gauge",
	  "Records in the log this node has not applied yet.",
	  FIELD(EDITS, struct metrics_edit_stats, log_lag) },
	{ "terrain_edit_log_reconnects_total", "counter",
	  "Connections to a shared edit log made again after a loss.",
	  FIELD(EDITS, struct metrics_edit_stats, log_reconnects) },
	{ "terrain_edit_log_rtt_seconds", "gauge",
	  "Last round trip to a shared edit log (its heartbeat).",
	  CUSTOM(render_log_rtt) },
	{ "terrain_edit_log_restores_total", "counter",
	  "Restores from a shared log's snapshot after falling behind its trim.",
	  FIELD(EDITS, struct metrics_edit_stats, log_restores) },
	{ "terrain_edit_log_snapshots_shared_total", "counter",
	  "Snapshots of this node's that a shared log took (trimming the log below it).",
	  FIELD(EDITS, struct metrics_edit_stats, log_shared) },
	{ "terrain_sse_subscribers", "gauge", "Event streams open.",
	  FIELD(EDITS, struct metrics_edit_stats, sse_subscribers) },
	{ "terrain_sse_events_total", "counter", "Edit batches published to event streams.",
	  FIELD(EDITS, struct metrics_edit_stats, sse_events) },
	{ "terrain_sse_dropped_total", "counter",
	  "Event streams dropped for reading too slowly.",
	  FIELD(EDITS, struct metrics_edit_stats, sse_dropped) },
	{ "terrain_worlds", "gauge", "Worlds with edit state in memory.",
	  FIELD(EDITS, struct metrics_edit_stats, worlds) },
	{ "terrain_wal_compacted_batches", "gauge",
	  "Batches compacted away from the front of the log below a snapshot.",
	  FIELD(EDITS, struct metrics_edit_stats, wal_base) },
	{ "terrain_snapshots_written_total", "counter", "Snapshots written since start.",
	  FIELD(EDITS, struct metrics_edit_stats, snap_written) },
	{ "terrain_snapshots_failed_total", "counter",
	  "Snapshots that failed (the previous one stays).",
	  FIELD(EDITS, struct metrics_edit_stats, snap_failed) },
	{ "terrain_snapshot_edits", "gauge", "Edits the latest snapshot holds.",
	  FIELD(EDITS, struct metrics_edit_stats, snap_edits) },
	{ "terrain_snapshot_bytes", "gauge", "Size of the latest snapshot file.",
	  FIELD(EDITS, struct metrics_edit_stats, snap_bytes) },
	{ "terrain_snapshot_write_seconds", "gauge",
	  "Time the last snapshot took to write.",
	  FIELD_MS(EDITS, struct metrics_edit_stats, snap_ms) },
	{ "terrain_snapshot_load_seconds", "gauge",
	  "Time loading the snapshot took at start.",
	  FIELD_MS(EDITS, struct metrics_edit_stats, snap_load_ms) },
	{ "terrain_bakes_total", "counter",
	  "Chunk bakes made: edits folded into a chunk's height delta.",
	  FIELD(BAKES, struct bakes_stats, baked) },
	{ "terrain_baked_chunks", "gauge", "Chunks with a baked delta.",
	  FIELD(BAKES, struct bakes_stats, chunks) },
	{ "terrain_baked_bytes", "gauge", "Bytes of the compressed baked deltas.",
	  FIELD(BAKES, struct bakes_stats, bytes) },
	{ "terrain_bake_queue", "gauge", "Chunks waiting for a bake.",
	  FIELD(BAKES, struct bakes_stats, queued) },
	{ "terrain_bake_hot_chunks", "gauge",
	  "Chunks whose baked delta is kept decoded for their next tiles.",
	  FIELD(BAKES, struct bakes_stats, hot) },
	{ "terrain_bake_hot_bytes", "gauge", "Bytes of the deltas kept decoded.",
	  FIELD(BAKES, struct bakes_stats, hot_bytes) },
	{ "terrain_build_info", "gauge",
	  "Always 1: the version, commit, compiler and formats of this binary.",
	  CUSTOM(render_build) },
	{ "terrain_generator_info", "gauge",
	  "Always 1: each generator preset served, with its fingerprint.",
	  CUSTOM(render_generators) },
	{ "process_cpu_seconds_total", "counter",
	  "Total user and system CPU time spent in seconds.",
	  FIELD_REAL(PROC, struct procstat, cpu_seconds) },
	{ "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
	  FIELD(PROC, struct procstat, resident_bytes) },
	{ "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
	  FIELD(PROC, struct procstat, virtual_bytes) },
	{ "process_open_fds", "gauge", "Number of open file descriptors.",
	  FIELD(PROC, struct procstat, open_fds) },
	{ "process_max_fds", "gauge", "Maximum number of open file descriptors.",
	  FIELD(PROC, struct procstat, max_fds) },
	{ "process_start_time_seconds", "gauge",
	  "Start time of the process since unix epoch in seconds.",
	  FIELD_REAL(PROC, struct procstat, start_time) },
};

/* The source of family f, or NULL when it is absent. */
static const void *base_of(const struct family_def *f, const struct sources *s)
{
	const struct metrics_sources *x = s->src;
	const void *const base[] = {
		[SELF] = s->m, [HTTP] = x->http, [CACHE] = x->cache, [REGIONS] = x->regions,
		[BAKES] = x->bakes, [EDITS] = x->edits, [PROC] = x->process
	};

	return base[f->src];
}

/* Print a scalar family's sample: its field, as uint64_t or size_t, a
 * double, or milliseconds as seconds. */
static void put_field(struct out *o, const struct family_def *f, const void *base)
{
	const char *p = (const char *)base + f->off;
	uint64_t u;
	size_t z;
	double d;

	if (f->kind == REAL) {
		memcpy(&d, p, sizeof(d));
		put(o, "%s %.6f\n", f->name, d);
	} else if (f->kind == MS) {
		memcpy(&u, p, sizeof(u));
		put(o, "%s %.3f\n", f->name, (double)u / 1000.0);
	} else if (f->size == sizeof(u)) {
		memcpy(&u, p, sizeof(u));
		put(o, "%s %llu\n", f->name, (unsigned long long)u);
	} else {
		memcpy(&z, p, sizeof(z));
		put(o, "%s %llu\n", f->name, (unsigned long long)z);
	}
}

int metrics_render(const struct metrics *m, const struct metrics_sources *src,
		   char **out, size_t *len)
{
	const struct sources s = { m, src };
	struct out o = { malloc(4096), 0, 4096, 0 };
	size_t i;

	if (!o.p)
		return ERR_NOMEM;
	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		const struct family_def *f = &families[i];
		const void *base = base_of(f, &s);

		if (!base)
			continue;
		put(&o, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
		if (f->render)
			f->render(&o, f, &s);
		else
			put_field(&o, f, base);
	}
	if (o.failed) {
		free(o.p);
		return ERR_NOMEM;
	}
	*out = o.p;
	*len = o.len;
	return 0;
}
