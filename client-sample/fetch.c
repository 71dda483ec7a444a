/*
 * fetch.c - terrain-client fetch (fetch.h).
 *
 *   fetch --server URL --seed S [--gen G] --x X --z Z --radius R
 *         [--d0 M] [--lmax L] [--connections N] [--batch-lod B] [--quiet] -o map.png
 *
 * One view (view.h) at (X, Z) with heights kept: every chunk of the square
 * [X - R, X + R) x [Z - R, Z + R) at its LOD, nearest ring first, every
 * tile and seam verified; the first error stops the fetch. The image
 * samples that square every `spacing` metres, spacing = 2^(finest LOD
 * loaded) (1 m when the player's chunk is at LOD 0), so it is
 * width = height = floor(2R / spacing) pixels; coarser tiles are upsampled
 * bilinearly, so the image has no seams. Pixel (c, r) is world
 * (X - R + c * spacing, Z - R + r * spacing): north (z decreasing) up.
 * Tiles come with their material layer (layers=height,material): pixels
 * take the materials' map colours, blended bilinearly between samples,
 * times the hillshade; a tile without the layer is coloured by height.
 * On a terminal, stderr shows the tiles, the rows drawn and the PNG's
 * rows written as they go (progress.h; not with --quiet).
 */
#include "fetch.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "err.h"
#include "hclient.h"
#include "png.h"
#include "terrain.h"
#include "progress.h"
#include "tile.h"
#include "view.h"

#define MAX_SIDE 16384 /* pixels per side of the image */

struct fetch {
	struct cli_session s;
	struct view *v;
	int done;            /* all answered, or an error */
	char error[512];     /* the first error */
	struct progress pr;  /* on stderr, when it is a terminal */
	char stage[1100];    /* the progress stage's name */
};

static void on_error(void *arg, struct view *v, const char *msg)
{
	struct fetch *f = arg;

	(void)v;
	if (!f->error[0])
		snprintf(f->error, sizeof(f->error), "%s", msg);
	f->done = 1;
}

/* Rings in the square: the largest Chebyshev ring plus one. */
static unsigned count_rings(const struct view_params *p, double x, double z)
{
	size_t cap = (size_t)ring_span(&p->ring) * ring_span(&p->ring);
	struct ring_chunk *list = malloc(cap * sizeof(*list));
	long n = list ? ring_list(&p->ring, x, z, list, cap) : -1;
	unsigned rings = 0;

	for (long k = 0; k < n; k++)
		rings = list[k].ring + 1 > rings ? list[k].ring + 1 : rings;
	free(list);
	return rings;
}

/* Base colour of the pixel at world (x, z), height h: the materials of
 * the four samples around it blended bilinearly, or the height ramp when
 * its tile has no material layer. */
static void colour(const struct view *v, double x, double z, double h,
		   uint8_t rgb[3])
{
	uint8_t id[4], c[3];
	double w[4], sum[3] = { 0, 0, 0 };

	if (view_materials(v, x, z, id, w)) {
		png_ramp(h, rgb);
		return;
	}
	for (int k = 0; k < 4; k++) {
		png_material(id[k], h, c);
		for (int ch = 0; ch < 3; ch++)
			sum[ch] += w[k] * c[ch];
	}
	for (int ch = 0; ch < 3; ch++)
		rgb[ch] = (uint8_t)(sum[ch] + 0.5);
}

/* Sample the view into a w x w image and write it. */
static int draw(struct fetch *f, const struct cli_opts *o, double spacing,
		uint32_t w)
{
	double *hm = malloc((size_t)w * w * sizeof(*hm));
	uint8_t *rgb = malloc((size_t)w * w * 3);
	double x0 = o->x - o->radius, z0 = o->z - o->radius;
	char msg[128];
	int rc = 0;

	if (!hm || !rgb) {
		free(hm);
		free(rgb);
		return cli_fail(o->out, err_str(ERR_NOMEM));
	}
	progress_stage(&f->pr, "drawing, rows", w);
	for (uint32_t r = 0; r < w && !rc; r++) {
		for (uint32_t c = 0; c < w && !rc; c++) {
			double x = x0 + c * spacing, z = z0 + r * spacing;
			size_t k = (size_t)r * w + c;

			if (!(rc = view_height(f->v, x, z, &hm[k])))
				colour(f->v, x, z, hm[k], rgb + 3 * k);
		}
		progress_set(&f->pr, r + 1, NULL);
	}
	if (rc) {
		free(hm);
		free(rgb);
		return cli_fail(o->out, "a pixel has no tile (internal error)");
	}
	png_shade_colours(hm, w, w, spacing, rgb);
	snprintf(f->stage, sizeof(f->stage), "writing %s, rows", o->out);
	progress_stage(&f->pr, f->stage, w);
	rc = png_write_rgb(o->out, rgb, w, w, &f->pr);
	progress_end(&f->pr);
	free(hm);
	free(rgb);
	if (rc) {
		snprintf(msg, sizeof(msg), "cannot write the PNG: %s",
			 err_str(rc));
		return cli_fail(o->out, msg);
	}
	return 0;
}

static void report(struct fetch *f, const struct cli_opts *o,
		   const struct view_params *p, uint64_t ns, uint64_t draw_ns,
		   uint32_t w, double spacing)
{
	const struct view_stats *st = view_stats(f->v);
	struct hclient_stats hs;
	size_t counts[TILE_MAX_CHUNK_LOG2 + 1], total = 0;
	char lods[256];
	int n = 0;

	hclient_stats(f->s.hc, &hs);
	view_loaded(f->v, counts, TILE_MAX_CHUNK_LOG2 + 1);
	lods[0] = 0;
	for (int l = 0; l <= TILE_MAX_CHUNK_LOG2; l++) {
		if (!counts[l])
			continue;
		total += counts[l];
		n += snprintf(lods + n, sizeof(lods) - (size_t)n, "%slod %d: %zu",
			      n ? ", " : "", l, counts[l]);
	}
	printf("fetch: %zu chunks (%s) in %u rings around (%g, %g), radius %g m\n",
	       total, lods, count_rings(p, o->x, o->z), o->x, o->z, o->radius);
	printf("fetch: %" PRIu64 " tiles verified, %" PRIu64 " seams checked, "
	       "%" PRIu64 " requests (%" PRIu64 " batches, %" PRIu64
	       " fell back to single tiles)\n", st->tiles, st->seams,
	       st->requests, st->batches, st->batch_fallbacks);
	printf("fetch: %" PRIu64 " bytes on the wire, %" PRIu64
	       " bytes decoded, %.3f s\n", hs.bytes_rx, st->bytes_decoded,
	       (double)ns / 1e9);
	printf("fetch: %s, %" PRIu64 " connections opened, %" PRIu64
	       " requests re-sent\n", cli_protocol(hs.http_version), hs.connects,
	       hs.resent);
	printf("fetch: coloured by material on %" PRIu64 " of %" PRIu64
	       " tiles (the rest by height)\n", st->material_tiles, st->tiles);
	if (p->local)
		printf("fetch: local mode: %" PRIu64 " tiles generated here, %" PRIu64
		       " fetched (edited chunks), %" PRIu64 " GET /hashes\n", st->generated,
		       st->tiles - st->generated, st->hashes);
	printf("fetch: wrote %s: %" PRIu32 " x %" PRIu32 " px, %g m per px "
	       "(width = 2R / spacing), %.3f s\n", o->out, w, w, spacing,
	       (double)draw_ns / 1e9);
}

static int run(struct fetch *f, const struct cli_opts *o,
	       const struct view_params *p)
{
	struct view_hooks hooks = { .arg = f, .error = on_error };
	uint64_t t0 = uv_hrtime(), t1;
	double spacing, side;
	long sent;
	int rc;

	if ((rc = view_create(f->s.hc, p, &hooks, &f->v)))
		return cli_fail("fetch", err_str(rc));
	sent = view_update(f->v, o->x, o->z, 0);
	if (sent < 0)
		return cli_fail("fetch", sent == ERR_RANGE ?
				"position out of range" : err_str((int)sent));
	f->done = view_outstanding(f->v) == 0;
	{
		size_t counts[TILE_MAX_CHUNK_LOG2 + 1];

		progress_stage(&f->pr, "tiles", (double)view_loaded(f->v, counts, TILE_MAX_CHUNK_LOG2 + 1));
	}
	while (!f->done) {
		if (!uv_run(&f->s.loop, UV_RUN_ONCE) && !f->done)
			break;
		if (view_outstanding(f->v) == 0)
			f->done = 1;
		progress_set(&f->pr, (double)view_stats(f->v)->tiles, NULL);
	}
	progress_end(&f->pr);
	if (f->error[0])
		return cli_fail("fetch", f->error);
	{
		size_t counts[TILE_MAX_CHUNK_LOG2 + 1];

		if (view_loaded(f->v, counts, TILE_MAX_CHUNK_LOG2 + 1))
			return cli_fail("fetch", "some chunks did not arrive");
	}
	t1 = uv_hrtime();
	spacing = (double)(1u << view_finest_lod(f->v));
	side = floor(2 * o->radius / spacing);
	if (side < 2 || side > MAX_SIDE)
		return cli_fail(o->out, "image too large: lower --radius or "
				"raise --d0 (at most 16384 px per side)");
	if ((rc = draw(f, o, spacing, (uint32_t)side)))
		return rc;
	report(f, o, p, t1 - t0, uv_hrtime() - t1, (uint32_t)side, spacing);
	return 0;
}

int fetch_main(int argc, char **argv)
{
	struct fetch f = { 0 };
	struct terrain_world *world = NULL;
	struct view_params p;
	struct cli_opts o;
	int rc;

	cli_defaults(&o);
	if ((rc = cli_parse(argc, argv,
			    "--server --seed --gen --x --z --radius --d0 --lmax "
			    "--connections --pipeline --batch-lod --timeout-ms --exact --precisions --format --local "
			    "--quiet -o",
			    "--server --seed --radius -o", &o)))
		return rc;
	progress_init(&f.pr, "fetch", progress_wanted(o.quiet));
	if ((rc = cli_open(&f.s, &o, o.seed)))
		return rc;
	rc = cli_view_params(&o, &f.s, o.seed, &p);
	if (!rc && o.local && !(rc = cli_local_world(&o, &f.s, p.seed_value, &world)))
		p.local = world;
	if (!rc) {
		p.keep_heights = 1;
		p.materials = 1; /* colour by the material layer */
		rc = run(&f, &o, &p);
	}
	cli_close(&f.s); /* cancels what is still outstanding */
	view_destroy(f.v);
	terrain_world_destroy(world);
	return rc;
}
