/*
 * swarm.c - terrain-client swarm (swarm.h).
 *
 *   swarm --server URL --players N --duration S [--connections C]
 *         [--seed-base B] [--worlds K] [--radius R] [--speed MAX]
 *         [--step-ms T] [--gen G] [--quiet]
 *
 * N players share one libuv loop and one pool of C connections. Player i
 * lives in world B + (i mod K) (K distinct seeds, so players of a world
 * share tiles the way a game's players do), spawns at a random point
 * within 2 km of that world's origin and walks a straight line at a random
 * heading and a speed in [MAX/10, MAX] m/s. Every T ms of real time each
 * player moves and its view (view.h) fetches what changed. After S
 * seconds no new requests start; answers still due are awaited for up to
 * DRAIN_MS, then cancelled. Figures: requests/s, tiles/s, MB/s on the
 * wire, the X-Cache hit share and latency percentiles from submission
 * (including the wait for a free connection) to the complete answer.
 * Randomness is splitmix64 seeded with B, so runs repeat. On a terminal,
 * stderr shows the seconds walked and the answers so far (progress.h; not
 * with --quiet).
 */
#include "swarm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "err.h"
#include "hclient.h"
#include "progress.h"
#include "view.h"

#define DRAIN_MS 3000
#define SPAWN_M 2048.0
#define SHOW_ERRORS 10

struct player {
	struct view *v;
	char seed[24];
	double x, z, vx, vz;
};

struct swarm {
	struct cli_session s;
	const struct cli_opts *o;
	struct player *pl;
	size_t n;
	uv_timer_t tick;
	uint64_t start, stop_at, drain_until, end; /* uv_now() ms */
	int draining, done;
	uint64_t *lat, *wire; /* latency from submission; from the write */
	size_t nlat, cap;
	uint64_t responses, hits, misses, errors;
	unsigned shown;
	struct progress pr;   /* on stderr, when it is a terminal */
};

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double uniform(uint64_t *s)
{
	return (double)(splitmix(s) >> 11) / 9007199254740992.0;
}

static void on_error(void *arg, struct view *v, const char *msg)
{
	struct swarm *w = arg;

	(void)v;
	w->errors++;
	if (w->shown++ < SHOW_ERRORS) {
		if (w->pr.drawn)
			fputs("\n", stderr); /* below the progress line */
		w->pr.drawn = 0;
		fprintf(stderr, CLI_PROG ": swarm: %s\n", msg);
	}
}

/* The progress line: seconds of walking, answers and their rate. */
static void show(struct swarm *w, uint64_t now)
{
	double secs = (double)(now - w->start) / 1000;
	char note[96];

	snprintf(note, sizeof(note), "%" PRIu64 " answers (%.0f/s), %" PRIu64 " errors",
		 w->responses, secs > 0 ? (double)w->responses / secs : 0, w->errors);
	progress_set(&w->pr, secs < w->o->duration ? secs : w->o->duration, note);
}

static void on_response(void *arg, struct view *v,
			const struct hclient_resp *r)
{
	struct swarm *w = arg;

	(void)v;
	w->responses++;
	w->hits += r->xcache == HCLIENT_XCACHE_HIT;
	w->misses += r->xcache == HCLIENT_XCACHE_MISS;
	if (w->nlat == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 4096;
		uint64_t *nl = realloc(w->lat, cap * sizeof(*nl));
		uint64_t *nw = nl ? realloc(w->wire, cap * sizeof(*nw)) : NULL;

		if (nl)
			w->lat = nl;
		if (!nw)
			return;
		w->wire = nw;
		w->cap = cap;
	}
	w->lat[w->nlat] = r->latency_ns;
	w->wire[w->nlat++] = r->latency_ns - r->queued_ns;
}

static size_t outstanding(const struct swarm *w)
{
	size_t n = 0;

	for (size_t k = 0; k < w->n; k++)
		n += view_outstanding(w->pl[k].v);
	return n;
}

static void stop(struct swarm *w)
{
	w->done = 1;
	w->end = uv_now(&w->s.loop);
	uv_timer_stop(&w->tick);
}

static void on_tick(uv_timer_t *t)
{
	struct swarm *w = t->data;
	uint64_t now = uv_now(&w->s.loop);
	double dt = (double)w->o->step_ms / 1000;

	if (w->draining) {
		if (!outstanding(w) || now >= w->drain_until)
			stop(w);
		return;
	}
	show(w, now);
	if (now >= w->stop_at) {
		progress_end(&w->pr);
		w->draining = 1;
		w->drain_until = now + DRAIN_MS;
		if (!outstanding(w))
			stop(w);
		return;
	}
	for (size_t k = 0; k < w->n; k++) {
		struct player *p = &w->pl[k];

		p->x += p->vx * dt;
		p->z += p->vz * dt;
		if (view_update(p->v, p->x, p->z, now - w->start) < 0)
			on_error(w, p->v, "player position out of range");
	}
}

static int spawn(struct swarm *w, const struct view_params *base)
{
	uint64_t rng = w->o->seed_base;
	struct view_hooks hooks = { .arg = w, .error = on_error,
				    .response = on_response };

	for (size_t k = 0; k < w->n; k++) {
		struct player *p = &w->pl[k];
		struct view_params vp = *base;
		double a = uniform(&rng) * 6.283185307179586;
		double speed = w->o->speed * (0.1 + 0.9 * uniform(&rng));
		uint64_t seed = w->o->seed_base + k % (uint64_t)w->o->worlds;

		snprintf(p->seed, sizeof(p->seed), "%" PRIu64, seed);
		vp.seed = p->seed;
		vp.seed_value = seed;
		p->x = (2 * uniform(&rng) - 1) * SPAWN_M;
		p->z = (2 * uniform(&rng) - 1) * SPAWN_M;
		p->vx = speed * cos(a);
		p->vz = speed * sin(a);
		if (view_create(w->s.hc, &vp, &hooks, &p->v))
			return cli_fail("swarm", err_str(ERR_NOMEM));
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int report(struct swarm *w)
{
	struct view_stats sum = { 0 };
	struct hclient_stats hs;
	double secs = (double)(w->end - w->start) / 1000;
	uint64_t answered = w->hits + w->misses;

	hclient_stats(w->s.hc, &hs);
	for (size_t k = 0; k < w->n; k++) {
		const struct view_stats *st = view_stats(w->pl[k].v);

		sum.requests += st->requests;
		sum.tiles += st->tiles;
		sum.bytes_decoded += st->bytes_decoded;
	}
	qsort(w->lat, w->nlat, sizeof(*w->lat), cmp_u64);
	qsort(w->wire, w->nlat, sizeof(*w->wire), cmp_u64);
	/* HTTP/1.1 carries one request per connection at a time; HTTP/2
	 * up to --pipeline streams on each */
	printf("swarm: %zu players in %ld worlds, %.1f s (%.1f s of walking), "
	       "%ld connections x %ld %s, %s\n", w->n, w->o->worlds, secs,
	       w->o->duration, w->o->connections,
	       hs.http_version >= 20 ? w->o->pipeline : 1,
	       hs.http_version >= 20 ? "streams" : "request", cli_protocol(hs.http_version));
	printf("swarm: %" PRIu64 " requests, %" PRIu64 " answered (%.1f/s), %"
	       PRIu64 " tiles (%.1f/s), %.2f MB on the wire (%.2f MB/s), "
	       "%.2f MB decoded\n", sum.requests, w->responses,
	       (double)w->responses / secs, sum.tiles, (double)sum.tiles / secs,
	       (double)hs.bytes_rx / 1e6, (double)hs.bytes_rx / 1e6 / secs,
	       (double)sum.bytes_decoded / 1e6);
	printf("swarm: cache hits %.1f%% (X-Cache: %" PRIu64 " hit, %" PRIu64
	       " miss)\n", answered ? 100.0 * (double)w->hits / (double)answered : 0,
	       w->hits, w->misses);
	printf("swarm: latency p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, "
	       "max %.1f ms\n", cli_ms(cli_percentile(w->lat, w->nlat, 50)),
	       cli_ms(cli_percentile(w->lat, w->nlat, 90)),
	       cli_ms(cli_percentile(w->lat, w->nlat, 99)),
	       cli_ms(cli_percentile(w->lat, w->nlat, 100)));
	printf("swarm: from the write (no wait for a connection) p50 %.1f ms, "
	       "p90 %.1f ms, p99 %.1f ms, max %.1f ms\n",
	       cli_ms(cli_percentile(w->wire, w->nlat, 50)),
	       cli_ms(cli_percentile(w->wire, w->nlat, 90)),
	       cli_ms(cli_percentile(w->wire, w->nlat, 99)),
	       cli_ms(cli_percentile(w->wire, w->nlat, 100)));
	printf("swarm: %" PRIu64 " errors, %zu requests unfinished at the end, "
	       "%" PRIu64 " re-sent after a dropped connection\n", w->errors,
	       outstanding(w), hs.resent);
	return w->errors ? EXIT_FAILURE : 0;
}

static int run(struct swarm *w)
{
	struct view_params base;
	int rc;

	if ((rc = cli_view_params(w->o, &w->s, w->o->seed, &base)))
		return rc;
	if (!(w->pl = calloc(w->n, sizeof(*w->pl))))
		return cli_fail("swarm", err_str(ERR_NOMEM));
	if ((rc = spawn(w, &base)))
		return rc;
	uv_timer_init(&w->s.loop, &w->tick);
	w->tick.data = w;
	w->start = uv_now(&w->s.loop);
	w->stop_at = w->start + (uint64_t)(w->o->duration * 1000);
	progress_stage_fmt(&w->pr, "s of walking", w->o->duration, 1, 0);
	on_tick(&w->tick);
	uv_timer_start(&w->tick, on_tick, (uint64_t)w->o->step_ms,
		       (uint64_t)w->o->step_ms);
	cli_run_until(&w->s, &w->done);
	if (!w->done)
		stop(w);
	progress_end(&w->pr);
	rc = report(w);
	uv_close((uv_handle_t *)&w->tick, NULL);
	return rc;
}

int swarm_main(int argc, char **argv)
{
	struct swarm w = { 0 };
	struct cli_opts o;
	char seed[24];
	int rc;

	cli_defaults(&o);
	o.radius = 512;
	o.connections = 16;
	o.step_ms = 250;
	o.speed = 40;
	if ((rc = cli_parse(argc, argv,
			    "--server --players --duration --connections "
			    "--pipeline --seed-base --worlds --radius --speed "
			    "--step-ms --d0 --lmax --batch-lod --revalidate --gen "
			    "--timeout-ms --quiet", "--server --players --duration", &o)))
		return rc;
	snprintf(seed, sizeof(seed), "%" PRIu64, o.seed_base);
	o.seed = seed;
	w.o = &o;
	w.n = (size_t)o.players;
	progress_init(&w.pr, "swarm", progress_wanted(o.quiet));
	if ((rc = cli_open(&w.s, &o, seed)))
		return rc;
	rc = run(&w);
	cli_close(&w.s);
	for (size_t k = 0; w.pl && k < w.n; k++)
		view_destroy(w.pl[k].v);
	free(w.pl);
	free(w.lat);
	free(w.wire);
	return rc;
}
