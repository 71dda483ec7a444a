/*
 * test_metrics.c - unit tests for server/api/metrics.c and server/base/procstat.c:
 * the per-route duration histograms (bucket edges, cumulative counts, sums),
 * the families left out without their source, the build and generator
 * info, and the process figures read from /proc/self.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "api/metrics.h"
#include "base/buildinfo.h"
#include "base/cache.h"
#include "base/procstat.h"
#include "gen/regions.h"
#include "http/http.h"
#include "preset.h"
#include "worlds/bakes.h"
#include "worlds/catalog.h"

static const char *const labels[] = { "tile", "presets" };

/* Render m with zeroed module figures, process and catalog as given. */
static char *render(const struct metrics *m, const struct procstat *ps,
		    const struct catalog *cat)
{
	struct cache_stats cs;
	struct http_stats hs;
	struct regions_stats rs;
	struct bakes_stats bs;
	struct metrics_edit_stats es;
	struct metrics_sources src = { &cs, &hs, &rs, &bs, &es, ps, cat };
	char *text = NULL;
	size_t len = 0;

	memset(&cs, 0, sizeof(cs));
	memset(&hs, 0, sizeof(hs));
	memset(&rs, 0, sizeof(rs));
	memset(&bs, 0, sizeof(bs));
	memset(&es, 0, sizeof(es));
	assert_int_equal(metrics_render(m, &src, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	return text;
}

/* Whether text has the line (whole). */
static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
		p += n;
	}
	return 0;
}

static void test_metrics_counts_durations_in_cumulative_buckets(void **state)
{
	struct metrics *m;
	char *text;

	(void)state;
	assert_int_equal(metrics_create(labels, 2, &m), 0);
	metrics_request_done(m, 0, 50000);       /* 50 us */
	metrics_request_done(m, 0, 100000);      /* on an edge: le is <= */
	metrics_request_done(m, 0, 3000000);     /* 3 ms */
	metrics_request_done(m, 0, 20000000000); /* 20 s: +Inf only */
	metrics_request_done(m, 5, 1000);        /* no such route: ignored */
	text = render(m, NULL, NULL);
	assert_true(has_line(text, "terrain_request_duration_seconds_bucket{route=\"tile\",le=\"0.0001\"} 2"));
	assert_true(has_line(text, "terrain_request_duration_seconds_bucket{route=\"tile\",le=\"0.0025\"} 2"));
	assert_true(has_line(text, "terrain_request_duration_seconds_bucket{route=\"tile\",le=\"0.005\"} 3"));
	assert_true(has_line(text, "terrain_request_duration_seconds_bucket{route=\"tile\",le=\"10\"} 3"));
	assert_true(has_line(text, "terrain_request_duration_seconds_bucket{route=\"tile\",le=\"+Inf\"} 4"));
	assert_true(has_line(text, "terrain_request_duration_seconds_count{route=\"tile\"} 4"));
	assert_true(has_line(text, "terrain_request_duration_seconds_sum{route=\"tile\"} 20.003150000"));
	/* a route without traffic has its series, all zero */
	assert_true(has_line(text, "terrain_request_duration_seconds_bucket{route=\"presets\",le=\"+Inf\"} 0"));
	assert_true(has_line(text, "terrain_request_duration_seconds_sum{route=\"presets\"} 0.000000000"));
	assert_true(has_line(text, "# TYPE terrain_request_duration_seconds histogram"));
	free(text);
	metrics_destroy(m);
}

static void test_metrics_leaves_out_process_figures_without_proc(void **state)
{
	struct procstat ps = { 1.5, 4096, 8192, 7, 1024, 1700000000.25 };
	struct metrics *m;
	char *text;

	(void)state;
	assert_int_equal(metrics_create(labels, 2, &m), 0);
	text = render(m, NULL, NULL);
	assert_null(strstr(text, "process_"));
	free(text);
	text = render(m, &ps, NULL);
	assert_true(has_line(text, "process_cpu_seconds_total 1.500000"));
	assert_true(has_line(text, "process_resident_memory_bytes 4096"));
	assert_true(has_line(text, "process_virtual_memory_bytes 8192"));
	assert_true(has_line(text, "process_open_fds 7"));
	assert_true(has_line(text, "process_max_fds 1024"));
	assert_true(has_line(text, "process_start_time_seconds 1700000000.250000"));
	assert_true(has_line(text, "# TYPE process_cpu_seconds_total counter"));
	free(text);
	metrics_destroy(m);
}

static void test_metrics_names_the_build_and_every_generator(void **state)
{
	const struct buildinfo *b = buildinfo_get();
	struct catalog *cat;
	struct metrics *m;
	char err[256], line[512], *text;
	size_t i;

	(void)state;
	assert_int_equal(catalog_load(NULL, &cat, err, sizeof(err)), 0);
	assert_int_equal(metrics_create(labels, 2, &m), 0);
	text = render(m, NULL, cat);
	snprintf(line, sizeof(line), "terrain_build_info{version=\"%s\",commit=\"%s\","
		 "compiler=\"%s\",arch=\"%s\",simd=\"%s\",tile_format_versions=\"%s\","
		 "algorithm_version=\"%d\"} 1", b->version, b->commit, b->compiler, b->arch,
		 b->simd, b->tile_formats, b->algorithm_version);
	assert_true(has_line(text, line));
	assert_string_equal(b->tile_formats, "7,8");
	assert_true(catalog_count(cat) > 1);
	for (i = 0; i < catalog_count(cat); i++) {
		const struct preset *p = catalog_at(cat, i);

		snprintf(line, sizeof(line), "terrain_generator_info{generator=\"%s\","
			 "fingerprint=\"%016llx\",chunk_size=\"%d\",max_lod=\"%d\"} 1",
			 preset_name(p), (unsigned long long)preset_fingerprint(p),
			 1 << preset_chunk_log2(p), preset_max_lod(p));
		assert_true(has_line(text, line));
	}
	free(text);
	metrics_destroy(m);
	catalog_destroy(cat);
}

static void test_procstat_reads_this_process(void **state)
{
	struct procstat a, b;
	FILE *f;
	void *big;

	(void)state;
	assert_int_equal(procstat_read(&a), 0);
	assert_true(a.resident_bytes > 0 && a.resident_bytes < a.virtual_bytes);
	assert_true(a.max_fds >= 3);
	assert_true(a.start_time > 0 && a.start_time <= (double)time(NULL) + 1);
	/* one more descriptor is one more open fd */
	f = fopen("/proc/self/stat", "r");
	assert_non_null(f);
	assert_int_equal(procstat_read(&b), 0);
	assert_int_equal(b.open_fds, a.open_fds + 1);
	fclose(f);
	/* 64 MiB touched is resident */
	big = malloc((size_t)64 << 20);
	assert_non_null(big);
	memset(big, 1, (size_t)64 << 20);
	assert_int_equal(procstat_read(&b), 0);
	assert_true(b.resident_bytes >= a.resident_bytes + ((uint64_t)60 << 20));
	assert_true(b.cpu_seconds >= a.cpu_seconds);
	assert_true(b.start_time == a.start_time);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_counts_durations_in_cumulative_buckets),
		cmocka_unit_test(test_metrics_leaves_out_process_figures_without_proc),
		cmocka_unit_test(test_metrics_names_the_build_and_every_generator),
		cmocka_unit_test(test_procstat_reads_this_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
