/*
 * export.c - terrain-client export (export.h).
 *
 *   export --server URL --seed S [--gen G] [--lod L]
 *          --cx0 A --cz0 B --cx1 C --cz1 D [--quiet] -o BASE
 *
 * Fetches every tile of the inclusive chunk rectangle A..C x B..D at LOD L
 * from the server (single-tile requests over the client's connections),
 * verifies each (checksum by the decoder, then chunk, LOD, fingerprint and
 * quantum against the request and the world info), and stitches them
 * into one mosaic: tiles share their border samples, so (C - A + 1)
 * chunks of 2^(chunk_log2 - L) steps make (C - A + 1) * 2^(chunk_log2 - L)
 * + 1 samples across, each shared edge written once (and checked equal).
 * Row r of every output is world z = z0 + r * spacing (z increasing: north
 * up, as fetch's map), column c is x = x0 + c * spacing.
 *
 * Writes BASE.png (16-bit grey), BASE.r16 (the same u16, little-endian,
 * row-major, no header), BASE.json (the sidecar: height = offset_m +
 * value * scale_m, the rectangle, spacing, seed, generator, LOD, edit
 * sequence) and BASE.tif (Float32 metres GeoTIFF, geotiff.h). The 16-bit
 * scale is the tile quantum when the mosaic's range fits 65535 quanta (the
 * import is exact), else the smallest multiple k of the quantum that fits,
 * values rounded to the nearest (half up; error at most k/2 quanta,
 * "exact": false in the sidecar). docs/export.md has the engine steps.
 * On a terminal, stderr shows the tiles and the PNG's rows as they go
 * (progress.h; not with --quiet).
 */
#include "export.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "err.h"
#include "geotiff.h"
#include "hclient.h"
#include "png.h"
#include "progress.h"
#include "tile.h"

#define MAX_CHUNKS 4096   /* tiles in one export */
#define MAX_SIDE   16385  /* samples per side of the mosaic */

struct slot {
	struct export *x;
	int32_t cx, cz;
	int done, status;
	char detail[160];
	uint8_t *body;
	size_t len;
};

struct export {
	struct cli_session s;
	const struct cli_opts *o;
	struct slot *slots;
	size_t n, answered;
	uint32_t nx, nz;          /* chunks across, down */
	uint32_t step;            /* samples per chunk side, less one */
	uint32_t w, h;            /* mosaic size in samples */
	int32_t *hq;              /* w * h heights in quanta */
	uint32_t quantum_um;
	uint64_t max_tile_seq;    /* the largest tile edit_seq */
	struct progress pr;       /* on stderr, when it is a terminal */
	char stage[1100];         /* the progress stage's name */
};

static void on_tile(void *arg, struct hclient_resp *r)
{
	struct slot *sl = arg;

	sl->done = 1;
	sl->status = r->status;
	if (r->err)
		snprintf(sl->detail, sizeof(sl->detail), "%s",
			 r->detail ? r->detail : err_str(r->err));
	else
		sl->body = hclient_resp_detach(r, &sl->len);
	sl->x->answered++;
}

static int request_all(struct export *x)
{
	char target[320], what[400];
	int rc;

	for (size_t k = 0; k < x->n; k++) {
		struct slot *sl = &x->slots[k];

		api_tile_path(target, sizeof(target), x->o->seed, x->o->gen,
			      (int)x->o->lod, sl->cx, sl->cz);
		if ((rc = hclient_get(x->s.hc, target, NULL, on_tile, sl))) {
			snprintf(what, sizeof(what), "GET %s", target);
			return cli_fail(what, err_str(rc));
		}
	}
	progress_stage(&x->pr, "tiles", (double)x->n);
	while (x->answered < x->n) {
		if (!uv_run(&x->s.loop, UV_RUN_ONCE) && x->answered < x->n)
			break;
		progress_set(&x->pr, (double)x->answered, NULL);
	}
	progress_end(&x->pr);
	return x->answered == x->n ? 0 :
	       cli_fail("export", "some tiles did not arrive");
}

/* Check one answer and copy its tile into the mosaic. */
static int place(struct export *x, struct slot *sl)
{
	char what[64], msg[300];
	struct tile t;
	int rc;

	snprintf(what, sizeof(what), "tile %" PRId32 ",%" PRId32, sl->cx,
		 sl->cz);
	if (sl->detail[0])
		return cli_fail(what, sl->detail);
	if (sl->status != 200) {
		char text[200];

		api_error_text(sl->body, sl->len, text, sizeof(text));
		snprintf(msg, sizeof(msg), "HTTP %d: %s", sl->status, text);
		return cli_fail(what, msg);
	}
	if ((rc = tile_decode(sl->body, sl->len, &t)))
		return cli_fail(what, err_str(rc));
	rc = t.cx != sl->cx || t.cz != sl->cz || t.lod != x->o->lod ||
	     t.fingerprint != x->s.wi.fingerprint || t.side != x->step + 1 ||
	     (x->quantum_um && t.quantum_um != x->quantum_um);
	if (rc) {
		tile_release(&t);
		return cli_fail(what, "header does not match the request or "
				"the world info (chunk, lod, fingerprint, side, "
				"quantum)");
	}
	x->quantum_um = t.quantum_um;
	x->max_tile_seq = t.edit_seq > x->max_tile_seq ? t.edit_seq :
			  x->max_tile_seq;
	{
		size_t ox = (size_t)(sl->cx - x->o->cx0) * x->step;
		size_t oz = (size_t)(sl->cz - x->o->cz0) * x->step;

		for (uint32_t j = 0; j <= x->step && !rc; j++)
			for (uint32_t i = 0; i <= x->step; i++) {
				int32_t *m = &x->hq[(oz + j) * x->w + ox + i];
				int32_t v = t.h[(size_t)j * t.side + i];
				/* an edge a neighbour placed already */
				int shared = (i == 0 && sl->cx > x->o->cx0) ||
					     (j == 0 && sl->cz > x->o->cz0);

				if (shared && *m != v) {
					rc = 1;
					break;
				}
				*m = v;
			}
	}
	tile_release(&t);
	return rc ? cli_fail(what, "seam mismatch with a neighbour") : 0;
}

/* Exact decimal metres of um micrometres: 6 decimals, trailing zeros
 * (and a bare point) dropped. */
static void metres_um(int64_t um, char *out, size_t cap)
{
	uint64_t a = um < 0 ? (uint64_t)0 - (uint64_t)um : (uint64_t)um;
	int n = snprintf(out, cap, "%s%" PRIu64 ".%06" PRIu64, um < 0 ? "-" : "",
			 a / 1000000, a % 1000000);

	if (n <= 0 || (size_t)n >= cap)
		return;
	while (out[n - 1] == '0')
		out[--n] = '\0';
	if (out[n - 1] == '.')
		out[--n] = '\0';
}

/* Exact decimal metres of q quanta (|q| * quantum fits int64). */
static void metres(int64_t q, uint32_t quantum_um, char *out, size_t cap)
{
	metres_um(q * (int64_t)quantum_um, out, cap);
}

struct scale16 {
	int32_t lo, hi;     /* mosaic min, max in quanta */
	uint32_t k;         /* quanta per 16-bit unit */
};

static void choose_scale(const struct export *x, struct scale16 *sc)
{
	size_t n = (size_t)x->w * x->h;
	uint64_t range;

	sc->lo = sc->hi = x->hq[0];
	for (size_t k = 1; k < n; k++) {
		sc->lo = x->hq[k] < sc->lo ? x->hq[k] : sc->lo;
		sc->hi = x->hq[k] > sc->hi ? x->hq[k] : sc->hi;
	}
	range = (uint64_t)((int64_t)sc->hi - sc->lo);
	sc->k = range <= 65535 ? 1 : (uint32_t)((range + 65534) / 65535);
}

static int write_sidecar(const struct export *x, const struct scale16 *sc,
			 const char *path)
{
	const struct cli_opts *o = x->o;
	int64_t spacing = (int64_t)1 << o->lod;
	int64_t cs = (int64_t)1 << x->s.wi.chunk_log2;
	char off[40], scl[40], lo[40], hi[40], q[40], err[40];
	FILE *f = fopen(path, "w");

	if (!f)
		return ERR_IO;
	metres(sc->lo, x->quantum_um, off, sizeof(off));
	metres(sc->k, x->quantum_um, scl, sizeof(scl));
	metres(sc->lo, x->quantum_um, lo, sizeof(lo));
	metres(sc->hi, x->quantum_um, hi, sizeof(hi));
	metres(1, x->quantum_um, q, sizeof(q));
	/* rounding half up to k quanta: at most floor(k / 2) quanta off */
	metres(sc->k / 2, x->quantum_um, err, sizeof(err));
	fprintf(f, "{\n  \"format\": \"terrain-export-1\",\n"
		"  \"seed\": \"%s\",\n  \"generator\": \"%s\",\n"
		"  \"fingerprint\": \"%016" PRIx64 "\",\n"
		"  \"lod\": %ld,\n  \"edit_seq\": %" PRIu64 ",\n"
		"  \"max_tile_edit_seq\": %" PRIu64 ",\n"
		"  \"chunks\": {\"cx0\": %ld, \"cz0\": %ld, \"cx1\": %ld, "
		"\"cz1\": %ld, \"chunk_size_m\": %" PRId64 "},\n"
		"  \"world_rect_m\": {\"x0\": %" PRId64 ", \"z0\": %" PRId64
		", \"x1\": %" PRId64 ", \"z1\": %" PRId64 "},\n"
		"  \"width\": %" PRIu32 ",\n  \"height\": %" PRIu32 ",\n"
		"  \"sample_spacing_m\": %" PRId64 ",\n"
		"  \"rows\": \"row 0 is z0, z increasing down the image (north "
		"up); column 0 is x0\",\n"
		"  \"metres_per_unit\": %s,\n  \"offset_m\": %s,\n"
		"  \"height_formula\": \"height_m = offset_m + value * "
		"metres_per_unit\",\n"
		"  \"exact\": %s,\n  \"max_rounding_error_m\": %s,\n"
		"  \"quantum_m\": %s,\n"
		"  \"min_height_m\": %s,\n  \"max_height_m\": %s,\n"
		"  \"value_max\": %" PRId64 ",\n"
		"  \"files\": {\"png\": \"16-bit greyscale\", \"r16\": "
		"\"u16 little-endian, row-major, no header\", \"tif\": "
		"\"Float32 metres, pixel-is-point, local CRS in metres, "
		"Y = -z\"}\n}\n",
		o->seed, o->gen ? o->gen : "default", x->s.wi.fingerprint,
		o->lod, x->s.wi.edit_seq, x->max_tile_seq, o->cx0, o->cz0,
		o->cx1, o->cz1, cs, o->cx0 * cs, o->cz0 * cs, (o->cx1 + 1) * cs,
		(o->cz1 + 1) * cs, x->w, x->h, spacing, scl, off,
		sc->k == 1 ? "true" : "false", err, q, lo, hi,
		((int64_t)sc->hi - sc->lo + sc->k / 2) / sc->k);
	return fclose(f) ? ERR_IO : 0;
}

/* Write the 16-bit values as PNG and RAW (little-endian u16). */
static int write_u16(struct export *x, const struct scale16 *sc,
		     const char *png, const char *raw)
{
	size_t n = (size_t)x->w * x->h;
	uint16_t *v = malloc(n * sizeof(*v));
	uint8_t *le = malloc(n * 2);
	FILE *f;
	int rc = 0;

	if (!v || !le) {
		free(v);
		free(le);
		return ERR_NOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		uint64_t d = (uint64_t)((int64_t)x->hq[k] - sc->lo);

		v[k] = (uint16_t)((d + sc->k / 2) / sc->k);
		le[2 * k] = (uint8_t)(v[k] & 0xff);
		le[2 * k + 1] = (uint8_t)(v[k] >> 8);
	}
	snprintf(x->stage, sizeof(x->stage), "writing %s, rows", png);
	progress_stage(&x->pr, x->stage, x->h);
	rc = png_write_gray16(png, v, x->w, x->h, &x->pr);
	progress_end(&x->pr);
	if (!rc) {
		f = fopen(raw, "wb");
		if (!f || fwrite(le, 1, n * 2, f) != n * 2)
			rc = ERR_IO;
		if (f && fclose(f))
			rc = ERR_IO;
	}
	free(v);
	free(le);
	return rc;
}

static int write_tif(const struct export *x, const char *path)
{
	size_t n = (size_t)x->w * x->h;
	float *m = malloc(n * sizeof(*m));
	int64_t cs = (int64_t)1 << x->s.wi.chunk_log2;
	char cit[200];
	struct geotiff_desc d = {
		.width = x->w, .height = x->h,
		.x0 = (double)(x->o->cx0 * cs), .y0 = -(double)(x->o->cz0 * cs),
		.spacing = (double)((int64_t)1 << x->o->lod), .citation = cit,
	};
	int rc;

	if (!m)
		return ERR_NOMEM;
	/* nearest float to the exact height: quanta times the quantum in
	 * metres, in double (exact to far below a quantum), then rounded once */
	for (size_t k = 0; k < n; k++)
		m[k] = (float)((double)x->hq[k] * x->quantum_um / 1e6);
	snprintf(cit, sizeof(cit), "terrain world %s (%s), local metres, "
		 "X = x, Y = -z", x->o->seed, x->o->gen ? x->o->gen : "default");
	rc = geotiff_write(path, &d, m);
	free(m);
	return rc;
}

/* BASE + ext into buf; 0 or ERR_TOOBIG. */
static int name(char *buf, size_t cap, const char *base, const char *ext)
{
	return (size_t)snprintf(buf, cap, "%s%s", base, ext) < cap ? 0 :
	       ERR_TOOBIG;
}

static int write_all(struct export *x)
{
	static const char *const ext[] = { ".png", ".r16", ".json", ".tif" };
	char path[4][1024];
	struct scale16 sc;
	int rc, k;

	for (k = 0; k < 4; k++)
		if (name(path[k], sizeof(path[k]), x->o->out, ext[k]))
			return cli_fail(x->o->out, "-o: name too long");
	choose_scale(x, &sc);
	if ((rc = write_u16(x, &sc, path[0], path[1])))
		return cli_fail(path[0], err_str(rc)); /* or path[1] */
	if ((rc = write_sidecar(x, &sc, path[2])))
		return cli_fail(path[2], err_str(rc));
	if ((rc = write_tif(x, path[3])))
		return cli_fail(path[3], err_str(rc));
	printf("export: %" PRIu32 " x %" PRIu32 " samples, %u x %u chunks at "
	       "lod %ld, %lld m spacing\n", x->w, x->h, x->nx, x->nz,
	       x->o->lod, 1ll << x->o->lod);
	printf("export: 16-bit scale %u quanta per unit (%s)\n", sc.k,
	       sc.k == 1 ? "exact" : "rounded to the nearest unit");
	for (k = 0; k < 4; k++)
		printf("export: wrote %s\n", path[k]);
	return 0;
}

static int run(struct export *x)
{
	const struct cli_opts *o = x->o;
	int rc = 0;

	if (o->lod > x->s.wi.max_lod || o->lod > x->s.wi.chunk_log2)
		return cli_fail("--lod", "above the world's max_lod");
	x->step = 1u << (x->s.wi.chunk_log2 - o->lod);
	if ((uint64_t)x->nx * x->step + 1 > MAX_SIDE ||
	    (uint64_t)x->nz * x->step + 1 > MAX_SIDE)
		return cli_fail("export", "mosaic over 16385 samples per side: "
				"fewer chunks or a coarser --lod");
	x->w = x->nx * x->step + 1;
	x->h = x->nz * x->step + 1;
	x->hq = malloc((size_t)x->w * x->h * sizeof(*x->hq));
	if (!x->hq)
		return cli_fail("export", err_str(ERR_NOMEM));
	if ((rc = request_all(x)))
		return rc;
	/* row order, z then x: the shared top and left edges are placed */
	for (size_t k = 0; k < x->n && !rc; k++)
		rc = place(x, &x->slots[k]);
	return rc ? rc : write_all(x);
}

int export_main(int argc, char **argv)
{
	struct export x = { 0 };
	struct cli_opts o;
	int rc;

	cli_defaults(&o);
	o.lod = 0;
	if ((rc = cli_parse(argc, argv,
			    "--server --seed --gen --lod --cx0 --cz0 --cx1 --cz1 "
			    "--connections --timeout-ms --quiet -o",
			    "--server --seed --cx0 --cz0 --cx1 --cz1 -o", &o)))
		return rc;
	if (o.cx1 < o.cx0 || o.cz1 < o.cz0)
		return cli_fail("export", "--cx1/--cz1 must not be below "
				"--cx0/--cz0");
	if ((o.cx1 - o.cx0 + 1) * (o.cz1 - o.cz0 + 1) > MAX_CHUNKS)
		return cli_fail("export", "at most 4096 chunks");
	x.o = &o;
	progress_init(&x.pr, "export", progress_wanted(o.quiet));
	x.nx = (uint32_t)(o.cx1 - o.cx0 + 1);
	x.nz = (uint32_t)(o.cz1 - o.cz0 + 1);
	x.n = (size_t)x.nx * x.nz;
	x.slots = calloc(x.n, sizeof(*x.slots));
	if (!x.slots)
		return cli_fail("export", err_str(ERR_NOMEM));
	for (size_t k = 0; k < x.n; k++)
		x.slots[k] = (struct slot){ .x = &x,
			.cx = (int32_t)(o.cx0 + (long)(k % x.nx)),
			.cz = (int32_t)(o.cz0 + (long)(k / x.nx)) };
	if ((rc = cli_open(&x.s, &o, o.seed)) == 0) {
		rc = run(&x);
		cli_close(&x.s); /* cancels what is still outstanding */
	}
	for (size_t k = 0; k < x.n; k++)
		free(x.slots[k].body);
	free(x.slots);
	free(x.hq);
	return rc;
}
