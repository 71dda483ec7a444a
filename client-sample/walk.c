/*
 * walk.c - terrain-client walk (walk.h).
 *
 *   walk --server URL --seed S [--gen G] --path x0,z0:x1,z1:...
 *        --speed M_PER_S [--radius R] [--step-ms T] [--revalidate S]
 *
 * Simulated time: step k is at t = k * T ms, the player at distance
 * speed * t along the polyline (the last step at its end). Each step
 * calls view_update() and waits for every answer before the next, so its
 * latency is the wall time from the first request to the last answer.
 * Only what changed is fetched; tiles older than their lifetime (the
 * server's max-age, or --revalidate seconds of simulated time) are
 * revalidated with If-None-Match.
 */
#include "walk.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "err.h"
#include "hclient.h"
#include "terrain.h"
#include "view.h"

#define MAX_POINTS 1024
#define MAX_STEPS 1000000
#define SHOW_ERRORS 10

struct point {
	double x, z;
};

struct walk {
	struct cli_session s;
	struct view *v;
	unsigned shown;
};

static void on_error(void *arg, struct view *v, const char *msg)
{
	struct walk *w = arg;

	(void)v;
	if (w->shown++ < SHOW_ERRORS)
		fprintf(stderr, CLI_PROG ": walk: %s\n", msg);
}

/* Parse "x0,z0:x1,z1:..." into pts (MAX_POINTS); returns the count or 0. */
static size_t parse_path(const char *s, struct point *pts)
{
	size_t n = 0;
	char *end;

	while (*s && n < MAX_POINTS) {
		pts[n].x = strtod(s, &end);
		if (end == s || *end != ',' || !isfinite(pts[n].x))
			return 0;
		s = end + 1;
		pts[n].z = strtod(s, &end);
		if (end == s || (*end && *end != ':') || !isfinite(pts[n].z))
			return 0;
		n++;
		s = *end ? end + 1 : end;
	}
	return *s ? 0 : n;
}

/* The point d metres along pts[0..n-1]. */
static struct point along(const struct point *pts, size_t n, double d)
{
	for (size_t k = 0; k + 1 < n; k++) {
		double dx = pts[k + 1].x - pts[k].x, dz = pts[k + 1].z - pts[k].z;
		double len = sqrt(dx * dx + dz * dz);

		if (d <= len && len > 0)
			return (struct point){ pts[k].x + dx * d / len,
					       pts[k].z + dz * d / len };
		d -= len;
	}
	return pts[n - 1];
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void print_step(unsigned k, uint64_t t_ms, struct point p,
		       const struct view_stats *a, const struct view_stats *b,
		       uint64_t ns)
{
	uint64_t req = b->requests - a->requests;
	uint64_t reval = b->revalidations - a->revalidations;

	printf("step %u t=%.1fs (%.0f, %.0f): %" PRIu64 " requests (%" PRIu64
	       " new, %" PRIu64 " revalidated, %" PRIu64 " not modified), %"
	       PRIu64 " tiles, %" PRIu64 " dropped, %.1f KB wire, %.1f ms\n",
	       k, (double)t_ms / 1000, p.x, p.z, req, req - reval, reval,
	       b->not_modified - a->not_modified, b->tiles - a->tiles,
	       b->dropped - a->dropped,
	       (double)(b->bytes_wire - a->bytes_wire) / 1024, cli_ms(ns));
}

static void print_totals(unsigned steps, const struct view_stats *st,
			 uint64_t *lat, uint64_t ns)
{
	qsort(lat, steps, sizeof(*lat), cmp_u64);
	printf("walk: %u steps, %" PRIu64 " requests (%" PRIu64 " answered 200, %"
	       PRIu64 " 304), %" PRIu64 " tiles, %" PRIu64 " errors\n", steps,
	       st->requests, st->ok, st->not_modified, st->tiles, st->errors);
	printf("walk: %" PRIu64 " bytes on the wire, %" PRIu64 " bytes decoded, "
	       "%" PRIu64 " seams checked, %.3f s\n", st->bytes_wire,
	       st->bytes_decoded, st->seams, (double)ns / 1e9);
	if (st->generated || st->hashes)
		printf("walk: local mode: %" PRIu64 " tiles generated here, %" PRIu64
		       " fetched, %" PRIu64 " GET /hashes\n", st->generated,
		       st->tiles - st->generated, st->hashes);
	printf("walk: step latency p50 %.1f ms, p90 %.1f ms, max %.1f ms\n",
	       cli_ms(cli_percentile(lat, steps, 50)),
	       cli_ms(cli_percentile(lat, steps, 90)),
	       cli_ms(cli_percentile(lat, steps, 100)));
}

static int run(struct walk *w, const struct cli_opts *o,
	       const struct point *pts, size_t n)
{
	const struct view_stats *st = view_stats(w->v);
	double len = 0;
	uint64_t *lat, t_start = uv_hrtime();
	unsigned k;

	for (size_t i = 0; i + 1 < n; i++)
		len += hypot(pts[i + 1].x - pts[i].x, pts[i + 1].z - pts[i].z);
	if (len / o->speed * 1000 / (double)o->step_ms > MAX_STEPS)
		return cli_fail("walk", "too many steps: raise --speed or --step-ms");
	if (!(lat = malloc(((size_t)(len / o->speed * 1000 / (double)o->step_ms) +
			    2) * sizeof(*lat))))
		return cli_fail("walk", err_str(ERR_NOMEM));
	for (k = 0;; k++) {
		uint64_t t_ms = (uint64_t)k * (uint64_t)o->step_ms;
		double d = fmin(o->speed * (double)t_ms / 1000, len);
		struct point p = along(pts, n, d);
		struct view_stats before = *st;
		uint64_t t0 = uv_hrtime();

		if (view_update(w->v, p.x, p.z, t_ms) < 0) {
			free(lat);
			return cli_fail("walk", "position out of range");
		}
		while (view_outstanding(w->v))
			if (!uv_run(&w->s.loop, UV_RUN_ONCE))
				break;
		lat[k] = uv_hrtime() - t0;
		if (!o->quiet)
			print_step(k, t_ms, p, &before, st, lat[k]);
		if (st->errors > before.errors &&
		    st->ok + st->not_modified == before.ok + before.not_modified) {
			fprintf(stderr, CLI_PROG ": walk: stopping: no request "
				"of step %u was answered\n", k);
			break;
		}
		if (d >= len)
			break;
	}
	print_totals(k + 1, st, lat, uv_hrtime() - t_start);
	free(lat);
	if (st->errors)
		fprintf(stderr, CLI_PROG ": walk: %" PRIu64 " errors\n",
			st->errors);
	return st->errors ? EXIT_FAILURE : 0;
}

int walk_main(int argc, char **argv)
{
	struct walk w = { 0 };
	struct point *pts = malloc(MAX_POINTS * sizeof(*pts));
	struct view_hooks hooks = { .arg = &w, .error = on_error };
	struct terrain_world *world = NULL;
	struct view_params p;
	struct cli_opts o;
	size_t n;
	int rc;

	if (!pts)
		return cli_fail("walk", err_str(ERR_NOMEM));
	cli_defaults(&o);
	rc = cli_parse(argc, argv,
		       "--server --seed --gen --path --speed --radius --step-ms "
		       "--d0 --lmax --connections --pipeline --batch-lod "
		       "--revalidate --timeout-ms --quiet --exact --precisions --format --local",
		       "--server --seed --path --speed", &o);
	if (!rc && !(n = parse_path(o.path, pts))) {
		fprintf(stderr, CLI_PROG " walk: bad --path, expected "
			"x0,z0:x1,z1:... (up to %d points)\n", MAX_POINTS);
		rc = CLI_EXIT_USAGE;
	}
	if (!rc && !(rc = cli_open(&w.s, &o, o.seed))) {
		rc = cli_view_params(&o, &w.s, o.seed, &p);
		if (!rc && o.local && !(rc = cli_local_world(&o, &w.s, p.seed_value, &world)))
			p.local = world;
		if (!rc && (rc = view_create(w.s.hc, &p, &hooks, &w.v)) != 0)
			rc = cli_fail("walk", err_str(rc));
		if (!rc)
			rc = run(&w, &o, pts, n);
		cli_close(&w.s);
		view_destroy(w.v);
		terrain_world_destroy(world);
	}
	free(pts);
	return rc;
}
