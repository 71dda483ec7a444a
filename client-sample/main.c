/*
 * main.c - terrain-client: command-line tools for terrain tiles.
 *
 *   terrain-client decode [--heights] FILE   header as "key: value" lines,
 *                                            or the heights in metres;
 *                                            a bundle: its members, or
 *                                            one (--tile CX,CZ)
 *   terrain-client export ...                heightmaps for engines and
 *                                            GIS (export.c)
 *   terrain-client png FILE -o OUT.png       shaded relief preview
 *   terrain-client pngstat FILE              PNG size and distinct colours
 *   terrain-client fetch|walk|swarm ...      HTTP clients of the server
 *                                            (fetch.c, walk.c, swarm.c)
 *   terrain-client edit|follow ...           post an edit, follow a world's
 *                                            edits (editcmd.c, follow.c)
 *
 * FILE "-" is standard input. Subcommands live in one table (commands[]
 * below); each is a function taking its own argv, returning an exit code:
 * 0 success, 1 failure (bad tile, I/O), 2 usage error. Decoding is
 * common/tile.c's; drawing is png.c's; this file only parses arguments,
 * reads files and prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "editcmd.h"
#include "export.h"
#include "err.h"
#include "fetch.h"
#include "hclient.h"
#include "follow.h"
#include "le.h"
#include "png.h"
#include "swarm.h"
#include "tile.h"
#include "version.h" /* made by tools/version.sh into $(BUILD)/gen */
#include "walk.h"

#define PROG "terrain-client"

/* The largest valid tile: side 4097, 4 planes (docs/tile-format.md). */
#define MAX_TILE_BYTES (TILE_HEADER_SIZE + 4 * (size_t)4097 * 4097)
/* A bundle's offsets are u32: it is smaller than 4 GiB; take 1 GiB. */
#define MAX_BUNDLE_BYTES ((size_t)1 << 30)

enum { EXIT_USAGE = 2 };

struct command {
	const char *name;
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
	const char *args;                  /* synopsis after the name */
	const char *help;                  /* one line */
};

/* "terrain-client: what: detail" on stderr; returns EXIT_FAILURE. */
static int fail(const char *what, const char *detail)
{
	fprintf(stderr, PROG ": %s: %s\n", what, detail);
	return EXIT_FAILURE;
}

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, PROG ": %s%s%s (see " PROG " --help)\n", msg,
		arg ? " " : "", arg ? arg : "");
	return EXIT_USAGE;
}

/* ---- input ---- */

/*
 * Read all of f into a new buffer (*buf, *len; caller frees). Returns 0,
 * ERR_TOOBIG past max bytes, ERR_NOMEM or ERR_IO (errno set).
 */
static int read_stream(FILE *f, size_t max, uint8_t **buf, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *b = NULL, *nb;

	for (;;) {
		nb = realloc(b, cap);
		if (!nb) {
			free(b);
			return ERR_NOMEM;
		}
		b = nb;
		n += fread(b + n, 1, cap - n, f);
		if (n < cap || n > max)
			break;
		cap *= 2;
	}
	if (n > max || ferror(f)) {
		free(b);
		return n > max ? ERR_TOOBIG : ERR_IO;
	}
	*buf = b;
	*len = n;
	return 0;
}

/*
 * Read all of path ("-": stdin), at most max bytes, into *buf (caller
 * frees). On failure prints "terrain-client: PATH: reason" and returns
 * EXIT_FAILURE.
 */
static int load_file(const char *path, size_t max, uint8_t **buf,
		     size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	int rc;
	char msg[256];

	if (!f) {
		snprintf(msg, sizeof(msg), "%s: %s", err_str(ERR_IO),
			 strerror(errno));
		return fail(path, msg);
	}
	errno = 0;
	rc = read_stream(f, max, buf, len);
	if (f != stdin)
		fclose(f);
	if (rc == ERR_IO && errno) {
		snprintf(msg, sizeof(msg), "%s: %s", err_str(rc),
			 strerror(errno));
		return fail(path, msg);
	}
	return rc ? fail(path, err_str(rc)) : 0;
}

/*
 * Read and decode the tile in path ("-": stdin) into t, keeping the raw
 * bytes in *raw (caller frees) when raw is not NULL. On failure prints
 * "terrain-client: PATH: reason" and returns EXIT_FAILURE.
 */
static int load_tile(const char *path, struct tile *t, uint8_t **raw,
		     size_t *raw_len)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc;

	if (load_file(path, MAX_TILE_BYTES, &buf, &len))
		return EXIT_FAILURE;
	if ((rc = tile_decode(buf, len, t)) != 0) {
		free(buf);
		return fail(path, err_str(rc));
	}
	if (raw) {
		*raw = buf;
		*raw_len = len;
	} else {
		free(buf);
	}
	return 0;
}

/* ---- exact decimal heights ---- */

/* Decimals of metres that multiples of quantum_um need: 10000 um -> 2. */
static unsigned decimals_for(uint32_t quantum_um)
{
	unsigned d = 6;

	while (d > 0 && quantum_um % 10 == 0) {
		quantum_um /= 10;
		d--;
	}
	return d;
}

/*
 * Format h quanta of quantum_um micrometres as metres with exactly dec
 * decimals (no rounding: dec comes from decimals_for()). out holds at
 * least 32 bytes. Returns the length.
 */
static int format_m(int32_t h, uint32_t quantum_um, unsigned dec, char *out)
{
	static const uint32_t pow10[] = { 1, 10, 100, 1000, 10000, 100000,
					  1000000 };
	int64_t um = (int64_t)h * quantum_um; /* |um| < 2^63: no overflow */
	uint64_t a = um < 0 ? (uint64_t)0 - (uint64_t)um : (uint64_t)um;
	uint64_t whole = a / 1000000, frac = a % 1000000 / pow10[6 - dec];

	if (dec == 0)
		return sprintf(out, "%s%" PRIu64, um < 0 ? "-" : "", whole);
	return sprintf(out, "%s%" PRIu64 ".%0*" PRIu64, um < 0 ? "-" : "",
		       whole, (int)dec, frac);
}

/* ---- decode ---- */

static void print_header(const struct tile *t, const uint8_t *raw,
			 size_t len)
{
	unsigned dec = decimals_for(t->quantum_um);
	size_t n = (size_t)t->side * t->side;
	int32_t lo = t->h[0], hi = t->h[0];
	char q[32], a[32], b[32];

	for (size_t k = 1; k < n; k++) {
		lo = t->h[k] < lo ? t->h[k] : lo;
		hi = t->h[k] > hi ? t->h[k] : hi;
	}
	format_m(1, t->quantum_um, dec, q);
	format_m(lo, t->quantum_um, dec, a);
	format_m(hi, t->quantum_um, dec, b);
	printf("magic: %.4s\n", (const char *)raw);
	printf("version: %u\n", (unsigned)le_get16(raw + 4));
	printf("fingerprint: %016" PRIx64 "\n", t->fingerprint);
	printf("seed: %" PRIu64 "\n", t->seed);
	printf("cx: %" PRId32 "\ncz: %" PRId32 "\n", t->cx, t->cz);
	printf("lod: %u\n", t->lod);
	printf("chunk_size: %lu\n", 1ul << t->chunk_log2);
	printf("side: %" PRIu32 "\n", t->side);
	printf("quantum_m: %s\n", q);
	printf("offset: %" PRId32 "\n", (int32_t)le_get32(raw + 44));
	printf("edit_seq: %" PRIu64 "\n", t->edit_seq);
	printf("checksum: %016" PRIx64 "\n", tile_checksum(raw));
	printf("min_height_m: %s\nmax_height_m: %s\n", a, b);
	printf("filter: %u\nplanes: %u\nbytes: %zu\n", raw[34], raw[35], len);
}

/* One line per row (z increasing), samples x increasing, one space apart. */
static int print_heights(const struct tile *t)
{
	unsigned dec = decimals_for(t->quantum_um);
	char *line = malloc((size_t)t->side * 32 + 2);

	if (!line)
		return fail("heights", err_str(ERR_NOMEM));
	for (uint32_t j = 0; j < t->side; j++) {
		size_t n = 0;

		for (uint32_t i = 0; i < t->side; i++) {
			if (i)
				line[n++] = ' ';
			n += (size_t)format_m(t->h[(size_t)j * t->side + i],
					      t->quantum_um, dec, line + n);
		}
		line[n++] = '\n';
		fwrite(line, 1, n, stdout);
	}
	free(line);
	return 0;
}

/* Print the tile's header or heights; 0 or EXIT_FAILURE. */
static int print_tile(const struct tile *t, const uint8_t *raw, size_t len,
		      int heights)
{
	if (heights)
		return print_heights(t);
	print_header(t, raw, len);
	return 0;
}

/* ---- bundles ---- */

/*
 * One line per member of a bundle, in index order: cx cz lod side bytes
 * edit_seq checksum ok (ok: "yes", or the reason the member does not
 * decode, with "-" in the fields it could not give). Returns 0, or
 * EXIT_FAILURE when a member is broken (all are still listed).
 */
static int list_bundle(const uint8_t *b, size_t len,
		       const struct api_bundle_entry *e, size_t n)
{
	int rc = 0;

	printf("bundle: %zu tiles, version %u, %zu bytes\n", n,
	       (unsigned)le_get16(b + 4), len);
	printf("cx cz lod side bytes edit_seq checksum ok\n");
	for (size_t k = 0; k < n; k++) {
		struct tile t;
		int d = tile_decode(e[k].tile, e[k].len, &t);

		if (d) {
			printf("%" PRId32 " %" PRId32 " - - %zu - - %s\n", e[k].cx,
			       e[k].cz, e[k].len, err_str(d));
			rc = EXIT_FAILURE;
			continue;
		}
		printf("%" PRId32 " %" PRId32 " %u %" PRIu32 " %zu %" PRIu64
		       " %016" PRIx64 " %s\n", e[k].cx, e[k].cz, t.lod, t.side,
		       e[k].len, t.edit_seq, tile_checksum(e[k].tile),
		       t.cx == e[k].cx && t.cz == e[k].cz ? "yes" :
		       "no: tile header names another chunk");
		if (t.cx != e[k].cx || t.cz != e[k].cz)
			rc = EXIT_FAILURE;
		tile_release(&t);
	}
	if (rc)
		fprintf(stderr, PROG ": bundle: a member does not decode\n");
	return rc;
}

/*
 * decode on a bundle (docs/tile-format.md, "Bundles"; parsed by api.c):
 * list its members, or decode member (cx, cz) exactly as a single tile
 * when want is not NULL.
 */
static int decode_bundle(const char *path, const uint8_t *b, size_t len,
			 const int32_t *want, int heights)
{
	struct api_bundle_entry *e = malloc(API_BUNDLE_MAX_TILES * sizeof(*e));
	size_t n = 0;
	char msg[128];
	struct tile t;
	int rc;

	if (!e)
		return fail(path, err_str(ERR_NOMEM));
	if ((rc = api_bundle_parse(b, len, e, API_BUNDLE_MAX_TILES, &n))) {
		free(e);
		snprintf(msg, sizeof(msg), "bundle: %s%s", err_str(rc),
			 rc == ERR_CORRUPT ? " (a tile lies outside the bundle, "
			 "or the count is 0: truncated?)" : "");
		return fail(path, msg);
	}
	if (!want) {
		rc = list_bundle(b, len, e, n);
		free(e);
		return rc;
	}
	for (size_t k = 0; k < n; k++) {
		if (e[k].cx != want[0] || e[k].cz != want[1])
			continue;
		if ((rc = tile_decode(e[k].tile, e[k].len, &t))) {
			snprintf(msg, sizeof(msg), "tile %" PRId32 ",%" PRId32
				 ": %s", want[0], want[1], err_str(rc));
			free(e);
			return fail(path, msg);
		}
		rc = print_tile(&t, e[k].tile, e[k].len, heights);
		tile_release(&t);
		free(e);
		return rc;
	}
	free(e);
	snprintf(msg, sizeof(msg), "bundle has no tile %" PRId32 ",%" PRId32,
		 want[0], want[1]);
	return fail(path, msg);
}

/* "CX,CZ" as two int32. Returns 1 when it parses. */
static int parse_cxcz(const char *s, int32_t out[2])
{
	char *end;
	long long v[2];

	for (int k = 0; k < 2; k++) {
		errno = 0;
		v[k] = strtoll(s, &end, 10);
		if (end == s || errno || v[k] < INT32_MIN || v[k] > INT32_MAX ||
		    *end != (k ? '\0' : ','))
			return 0;
		out[k] = (int32_t)v[k];
		s = end + 1;
	}
	return 1;
}

static int cmd_decode(int argc, char **argv)
{
	const char *path = NULL;
	int heights = 0, has_tile = 0, rc;
	int32_t want[2];
	struct tile t;
	uint8_t *raw;
	size_t len;

	for (int k = 1; k < argc; k++) {
		if (strcmp(argv[k], "--heights") == 0)
			heights = 1;
		else if (strcmp(argv[k], "--tile") == 0 && k + 1 < argc) {
			if (!parse_cxcz(argv[++k], want))
				return usage_error("decode: bad --tile, expected "
						   "CX,CZ:", argv[k]);
			has_tile = 1;
		} else if (argv[k][0] == '-' && argv[k][1])
			return usage_error("decode: unknown option", argv[k]);
		else if (!path)
			path = argv[k];
		else
			return usage_error("decode: extra argument", argv[k]);
	}
	if (!path)
		return usage_error("decode: missing FILE", NULL);
	if (load_file(path, MAX_BUNDLE_BYTES, &raw, &len))
		return EXIT_FAILURE;
	if (len >= 4 && memcmp(raw, API_BUNDLE_MAGIC, 4) == 0) {
		if (heights && !has_tile) {
			free(raw);
			return usage_error("decode: --heights on a bundle needs "
					   "--tile CX,CZ", NULL);
		}
		rc = decode_bundle(path, raw, len, has_tile ? want : NULL,
				   heights);
	} else if (has_tile) {
		rc = fail(path, "--tile: not a bundle");
	} else if ((rc = tile_decode(raw, len, &t)) != 0) {
		rc = fail(path, err_str(rc));
	} else {
		rc = print_tile(&t, raw, len, heights);
		tile_release(&t);
	}
	free(raw);
	if (!rc && (fflush(stdout) || ferror(stdout)))
		rc = fail("stdout", strerror(errno));
	return rc;
}

/* ---- png ---- */

static int cmd_png(int argc, char **argv)
{
	const char *path = NULL, *out = NULL;
	struct tile t;
	double *hm;
	size_t n;
	int rc;

	for (int k = 1; k < argc; k++) {
		if (strcmp(argv[k], "-o") == 0 && k + 1 < argc)
			out = argv[++k];
		else if (argv[k][0] == '-' && argv[k][1])
			return usage_error("png: unknown option", argv[k]);
		else if (!path)
			path = argv[k];
		else
			return usage_error("png: extra argument", argv[k]);
	}
	if (!path || !out)
		return usage_error("png: usage: png FILE -o OUT.png", NULL);
	if (load_tile(path, &t, NULL, NULL))
		return EXIT_FAILURE;
	n = (size_t)t.side * t.side;
	hm = malloc(n * sizeof(*hm));
	if (!hm) {
		tile_release(&t);
		return fail(path, err_str(ERR_NOMEM));
	}
	for (size_t k = 0; k < n; k++)
		hm[k] = tile_height_m(&t, (uint32_t)(k % t.side),
				      (uint32_t)(k / t.side));
	errno = 0;
	rc = png_write_heights(out, hm, t.side, t.side,
			       (double)(1u << t.lod));
	free(hm);
	tile_release(&t);
	if (rc) {
		char msg[256];

		snprintf(msg, sizeof(msg), "%s%s%s", err_str(rc),
			 errno ? ": " : "", errno ? strerror(errno) : "");
		return fail(out, msg);
	}
	return 0;
}

/* ---- pngstat ---- */

static int cmd_pngstat(int argc, char **argv)
{
	uint32_t w, h;
	size_t colours;
	int rc;

	if (argc != 2 || (argv[1][0] == '-' && argv[1][1]))
		return usage_error("pngstat: usage: pngstat FILE", NULL);
	if ((rc = png_stat(argv[1], &w, &h, &colours)) != 0)
		return fail(argv[1], rc == ERR_IO ? "not a readable PNG" :
			    err_str(rc));
	printf("width: %" PRIu32 "\nheight: %" PRIu32 "\ncolours: %zu\n", w, h,
	       colours);
	return 0;
}

/* ---- dispatch ---- */

static const struct command commands[] = {
	{ "decode", cmd_decode, "[--heights] [--tile CX,CZ] FILE",
	  "print the header as key: value lines; --heights: the heights\n"
	  "      in metres, one row per line (z increasing). FILE may be a\n"
	  "      bundle (batch answer): list its tiles (cx cz lod side bytes\n"
	  "      edit_seq checksum ok), or decode member CX,CZ (--tile)" },
	{ "png", cmd_png, "FILE -o OUT.png",
	  "write a shaded relief preview (north up; OUT - is stdout)" },
	{ "pngstat", cmd_pngstat, "FILE",
	  "print a PNG's width, height and number of distinct colours" },
	{ "fetch", fetch_main,
	  "--server URL --seed S [--gen G] [--x X] [--z Z] --radius R\n"
	  "      [--d0 M] [--lmax L] [--connections N] [--pipeline K]\n"
	  "      [--batch-lod B] [--timeout-ms T] [--exact] [--precisions LIST]\n"
	  "      [--format 1|3|5] [--local] [--quiet] -o MAP.png",
	  "load the chunks of the square of side 2R around (X, Z), ring by\n"
	  "      ring, each at LOD min(floor(log2(d / d0)), Lmax) (0 when\n"
	  "      d < d0; d0 256, Lmax 6); verify checksums, headers and seams;\n"
	  "      write one hillshaded PNG, width = 2R / spacing of the finest\n"
	  "      LOD (1 m); chunks at LOD >= B (2; -1 never) go in batches;\n"
	  "      LOD n at the nth of --precisions (1cm,10cm,50cm,1m; the last for\n"
	  "      every coarser LOD; --exact: all 1 cm);\n"
	  "      --format 1: tiles in the form of versions 1 and 2 (?format=1),\n"
	  "      3: versions 3 and 4, 5: versions 5 and 6 (?format=3, 5);\n"
	  "      --local: generate the chunks no edit reaches here, after checking\n"
	  "      the server's fingerprint and golden tiles (docs/client.md);\n"
	  "      progress on stderr when it is a terminal (--quiet: none)" },
	{ "walk", walk_main,
	  "--server URL --seed S [--gen G] --path X0,Z0:X1,Z1:...\n"
	  "      --speed M_PER_S [--radius R] [--step-ms T] [--revalidate SEC]\n"
	  "      [--d0 M] [--lmax L] [--connections N] [--exact] [--precisions LIST]\n"
	  "      [--format 1|3|5] [--local] [--quiet]",
	  "walk a player along the path in simulated steps of T ms (500),\n"
	  "      keeping the chunks within R (1024 m) loaded: fetch what\n"
	  "      changes, revalidate older tiles with If-None-Match (after the\n"
	  "      server's max-age, or SEC); report each step and totals;\n"
	  "      far rings at coarser precision as fetch (--precisions;\n"
	  "      --exact: off);\n"
	  "      --format, --local as fetch" },
	{ "swarm", swarm_main,
	  "--server URL --players N --duration SEC [--connections C]\n"
	  "      [--seed-base B] [--worlds K] [--radius R] [--speed MAX]\n"
	  "      [--step-ms T] [--gen G] [--quiet]",
	  "N players in K worlds (seeds B.., 10) walking at once over C\n"
	  "      connections (16), R 512 m; report requests/s, tiles/s, MB/s,\n"
	  "      X-Cache hit share and latency percentiles; progress on\n"
	  "      stderr when it is a terminal (--quiet: none)" },
	{ "edit", editcmd_main,
	  "--server URL --seed S [--gen G] --op raise|lower|flatten|set\n"
	  "      --x X --z Z --radius R [--strength V] [--height H]\n"
	  "      [--falloff linear|smooth] [--token T] [--timeout-ms T]\n"
	  "      [--attempts N] [--idempotency-key KEY]",
	  "post one brush edit (raise, lower: --strength m; flatten:\n"
	  "      --strength 0..1 and --height m; set: --height m); print\n"
	  "      first_seq, last_seq, world_hash, the touched chunks and the\n"
	  "      attempts it took (replay: true for a stored answer). The\n"
	  "      token may come from TERRAIN_EDIT_TOKEN instead. Applied once:\n"
	  "      one Idempotency-Key (fresh, or KEY) on every attempt; 503,\n"
	  "      429, 409, 502, 504, timeouts (T ms each, 10000) and lost\n"
	  "      connections are retried after Retry-After or a backoff, up\n"
	  "      to N attempts (8); giving up prints the key when the outcome\n"
	  "      is unknown (docs/client.md)" },
	{ "export", export_main,
	  "--server URL --seed S [--gen G] [--lod L] --cx0 A --cz0 B\n"
	  "      --cx1 C --cz1 D [--connections N] [--timeout-ms T] [--quiet]\n"
	  "      -o BASE",
	  "fetch chunks A..C x B..D at LOD L (0) and write one stitched\n"
	  "      heightmap as BASE.png (16-bit grey), BASE.r16 (u16 LE),\n"
	  "      BASE.json (scale, offset, spacing, rectangle) and BASE.tif\n"
	  "      (Float32 m GeoTIFF); docs/export.md; progress on stderr\n"
	  "      when it is a terminal (--quiet: none)" },
	{ "follow", follow_main,
	  "--server URL --seed S [--gen G] [--duration SEC] [--lod L]\n"
	  "      [--connections N] [--timeout-ms T] [--local]",
	  "follow the world's edit events: keep a copy of the edit log,\n"
	  "      check the world hash against the event's and the server's,\n"
	  "      refetch the changed chunks at LOD L (0) and check their\n"
	  "      edit_seq; one line per batch; resume with Last-Event-ID after\n"
	  "      a drop; run SEC seconds (default: until SIGINT); --local:\n"
	  "      apply the log's edits here and generate the changed chunks,\n"
	  "      checked against GET /hashes, instead of refetching them" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: " PROG " COMMAND [ARGS]\n       " PROG " --version\n\n");
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		fprintf(out, "  " PROG " %s %s\n      %s\n", commands[k].name,
			commands[k].args, commands[k].help);
	fprintf(out, "\nFILE - reads standard input. URL is http://HOST[:PORT] or "
		"https://HOST[:PORT]\n(certificate checked against --cacert FILE, "
		"else CURL_CA_BUNDLE, SSL_CERT_FILE,\nelse the system's CAs; proxies "
		"from http_proxy, https_proxy, no_proxy).\n" PROG " --version: "
		"its version and libcurl's. Exit status: 0 ok,\n1 failure (bad "
		"tile, server down, bad status, corrupt tile, seam mismatch),\n"
		"2 usage error.\n");
}

static int is_help(const char *arg)
{
	return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf(PROG " %s\ncommit %s\n%s\n", BUILD_VERSION, BUILD_COMMIT, hclient_version());
		return 0;
	}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (strcmp(argv[1], commands[k].name) != 0)
			continue;
		if (argc > 2 && is_help(argv[2])) {
			printf("usage: " PROG " %s %s\n  %s\n", commands[k].name,
			       commands[k].args, commands[k].help);
			return 0;
		}
		return commands[k].run(argc - 1, argv + 1);
	}
	fprintf(stderr, PROG ": unknown command '%s' (see " PROG " --help)\n",
		argv[1]);
	return EXIT_USAGE;
}
