/*
 * main.c - terrain-server: configuration from argv and the environment,
 * then one of the subcommands.
 *
 *   terrain-server [serve] [options]        serve HTTP (loop.c, service.c)
 *   terrain-server generate --seed S ...    write one unedited tile body
 *   terrain-server repair-log --data-dir DIR --truncate-at OFFSET
 *                                           cut a corrupt edit log (store.h)
 *   terrain-server token --secret-file F --sub NAME ...
 *                                           mint a player's token (token.h)
 *   terrain-server routes                   the HTTP route table (routes.h)
 *   terrain-server version                  version, commit, compiler (buildinfo.h)
 *
 * Every serve option has a flag and an environment variable; the flag
 * wins. `terrain-server --help` lists them with their defaults. Bad
 * arguments print a message on stderr and exit with status 2.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <uv.h>

#include "api/request.h"
#include "base/buildinfo.h"
#include "base/files.h"
#include "base/options.h"
#include "editlog/store.h"
#include "edits/edits.h"
#include "edits/token.h"
#include "err.h"
#include "gen/tilegen.h"
#include "http/http.h"
#include "loop.h"
#include "preset.h"
#include "seed.h"
#include "selfcheck.h"
#include "service.h"
#include "worlds/catalog.h"

/* descriptors kept for the listener, logs, libuv and the monitors'
 * connections past --max-connections */
#define FD_RESERVE (64 + HTTP_RESERVE_CONNS)

static void usage(FILE *f, const struct option_group *g, size_t ng)
{

	fprintf(f,
		"usage: terrain-server [serve] [options]\n"
		"       terrain-server generate --seed S --lod L --cx X --cz Z"
		" [--gen NAME] [--layers LIST]\n"
		"                               [--presets DIR] [-o FILE]\n"
		"       terrain-server repair-log --data-dir DIR --truncate-at OFFSET\n"
		"       terrain-server token (--secret-file F | --private-key-file F) --sub NAME\n"
		"                            [--world S]... [--area x0,z0,x1,z1]... [--role R]\n"
		"                            [--ttl SECONDS] [--rate N]\n"
		"       terrain-server routes | version\n\n"
		"serve options, by the module that owns them (flag, environment variable,\n"
		"default):\n");
	options_usage(f, g, ng);
	fprintf(f, "  %-26s %s\n\n", "--help", "this text");
	fprintf(f,
		"The data directory (edit log, snapshots) is --data-dir, else\n"
		"TERRAIN_DATA_DIR, else STATE_DIRECTORY (set by systemd for a unit with\n"
		"StateDirectory=terrain: /var/lib/terrain; the first folder when it lists\n"
		"several), else ./data.\n\n");
	fprintf(f,
		"generate writes one uncompressed tile body (docs/tile-format.md) of the\n"
		"unedited world, byte-identical to the identity body of\n"
		"GET /v1/worlds/S/chunks/L/X/Z?gen=NAME&layers=LIST while that chunk has\n"
		"no edits, to FILE or stdout. NAME defaults to \"default\", LIST to\n"
		"\"height\" (format version 7, 1 for the smallest tiles; \"height,material\"\n"
		"adds the material layer: 8, or 2).\n\n"
		"repair-log cuts DIR/edits.log at OFFSET (the end of the last good record,\n"
		"as the refusal to start reported), saving the bytes cut beside it; see\n"
		"docs/edits.md. Never while a server runs on DIR.\n\n"
		"token prints a player's token (JWT) signed with the secret (HS256) or the\n"
		"private key (ES256, RS256): see docs/edits.md, \"Players and tokens\".\n");
}

/* Raise the descriptor limit to its hard maximum and keep max_connections
 * within it. */
static void fit_descriptors(struct http_limits *l)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY &&
	    (rlim_t)l->max_connections + FD_RESERVE > rl.rlim_cur) {
		unsigned fit = rl.rlim_cur > 2 * FD_RESERVE ?
			       (unsigned)(rl.rlim_cur - FD_RESERVE) : FD_RESERVE;

		fprintf(stderr, "terrain-server: RLIMIT_NOFILE %llu: --max-connections %u lowered to %u\n",
			(unsigned long long)rl.rlim_cur, l->max_connections, fit);
		l->max_connections = fit;
	}
}

static int replay(struct service *svc)
{
	uint64_t t0 = uv_hrtime();
	char msg[512], warn[512];

	if (service_replay(svc, msg, sizeof(msg), warn, sizeof(warn)) < 0) {
		fprintf(stderr, "terrain-server: refusing to start: %s\n", msg);
		return -1;
	}
	if (warn[0])
		fprintf(stderr, "terrain-server: edit log: %s\n", warn);
	fprintf(stderr, "terrain-server: %s in %.2f s\n", msg,
		(double)(uv_hrtime() - t0) / 1e9);
	return 0;
}

/* Whether the bind address is loopback only. */
static int bind_is_loopback(const char *addr)
{
	return !strcmp(addr, "localhost") || !strcmp(addr, "::1") || !strncmp(addr, "127.", 4);
}

/* Without a token, edits are open to whoever looks local: say so when
 * that may be more than this machine's own users. */
static void warn_open_edits(const struct service_config *c)
{
	const struct edits_config *e = &c->edits;

	if ((e->token && e->token[0]) || e->token_secret || e->token_public_key)
		return;
	if (!bind_is_loopback(c->loop.bind))
		fprintf(stderr, "terrain-server: warning: listening on %s with no --edit-token: "
			"edits are still refused to non-loopback clients, but a reverse proxy "
			"on this machine makes every client loopback; set --edit-token "
			"(docs/edits.md)\n", c->loop.bind);
}

/* Everything after the drain; main returns its status. */
static int serve_with(const struct service_config *c, struct catalog *cat)
{
	struct http_server *hs = NULL;
	struct service *svc = NULL;
	struct http_handler h;
	struct loop *lp = NULL;
	char err[512];
	int rv;

	if ((rv = loop_create(&c->loop, &lp, err, sizeof(err))) < 0) {
		fprintf(stderr, "terrain-server: %s\n", err);
		return rv == ERR_INVAL ? 2 : 1; /* a --bind that is no address: usage */
	}
	warn_open_edits(c);
	if (service_create(loop_uv(lp), cat, c, &svc, err, sizeof(err)) < 0) {
		fprintf(stderr, "terrain-server: %s\n", err);
		goto fail;
	}
	if (replay(svc) < 0)
		goto fail;
	service_handler(svc, &h);
	if (http_server_create(loop_uv(lp), &c->http, &h, &hs) < 0) {
		fprintf(stderr, "terrain-server: out of memory\n");
		goto fail;
	}
	service_set_server(svc, hs);
	loop_on_drain(lp, service_stop, svc);
	fprintf(stderr, "terrain-server: %zu presets, %u workers, cache %zu MiB, "
		"region cache %zu MiB, max %u connections\n", catalog_count(cat),
		loop_workers(lp), c->tiles.cache_bytes >> 20, c->tiles.region_bytes >> 20,
		c->http.max_connections);
	rv = loop_run(lp, hs);
	if (rv == 1) {
		/* Cut at the drain limit: workers may still use the presets. */
		fflush(NULL);
		_exit(0);
	}
	http_server_destroy(hs);
	service_close_log(svc); /* every edit was answered: nothing is queued */
	service_destroy(svc);
	loop_destroy(lp);
	if (rv == 0)
		fprintf(stderr, "terrain-server: stopped\n");
	return rv == 0 ? 0 : 1;
fail:
	service_destroy(svc);
	loop_destroy(lp);
	return 1;
}

/* Serve with a configuration read: the presets, the access log, then
 * serve_with(). */
static int serve_configured(struct service_config *c)
{
	const char *path = c->http.access_log_file;
	struct catalog *cat;
	char err[512];
	FILE *log = NULL;
	int rv;

	if (selfcheck_run(err, sizeof(err)) != 0) { /* a binary of another world */
		fprintf(stderr, "terrain-server: %s\n", err);
		return 1;
	}
	if (catalog_load(c->presets.presets && c->presets.presets[0] ? c->presets.presets : NULL,
			 &cat, err, sizeof(err)) < 0) {
		fprintf(stderr, "terrain-server: %s\n", err);
		return 2;
	}
	if (path && path[0] && !(log = files_open_append(path))) {
		fprintf(stderr, "terrain-server: --access-log %s: %s\n", path, strerror(errno));
		catalog_destroy(cat);
		return 2;
	}
	c->http.access_log = log;
	c->http.access_log_path = log && log != stdout ? path : NULL;
	rv = serve_with(c, cat);
	if (log && log != stdout)
		fclose(log);
	catalog_destroy(cat);
	return rv;
}

/* --help of a command that has no configuration of its own. */
static void help(FILE *f)
{
	struct option_group groups[SERVICE_OPTION_GROUPS];
	struct service_config c;

	service_config_init(&c);
	service_options(&c, groups);
	usage(f, groups, SERVICE_OPTION_GROUPS);
}

/*
 * Under systemd, StateDirectory=terrain sets STATE_DIRECTORY=/var/lib/terrain
 * (colon-separated when the unit names several folders: the first is ours).
 * It stands in for TERRAIN_DATA_DIR when that is unset, so the flag and the
 * variable still win, and ./data stays the default without either.
 */
static void state_directory_default(void)
{
	const char *sd = getenv("STATE_DIRECTORY");
	char dir[4096];
	size_t n;

	if (!sd || !sd[0] || getenv("TERRAIN_DATA_DIR"))
		return;
	n = strcspn(sd, ":");
	if (n == 0 || n >= sizeof(dir))
		return;
	memcpy(dir, sd, n);
	dir[n] = 0;
	setenv("TERRAIN_DATA_DIR", dir, 0);
}

static int serve(int argc, char **argv)
{
	struct option_group groups[SERVICE_OPTION_GROUPS];
	struct service_config c;
	char err[600];
	int rv;

	state_directory_default();
	service_config_init(&c);
	service_options(&c, groups);
	rv = options_read("terrain-server", groups, SERVICE_OPTION_GROUPS, argc, argv);
	if (rv) {
		if (rv > 0)
			usage(stdout, groups, SERVICE_OPTION_GROUPS);
		return rv > 0 ? 0 : 2;
	}
	fit_descriptors(&c.http);
	if (service_config_load(&c, err, sizeof(err)) == 0) {
		rv = serve_configured(&c);
	} else {
		fprintf(stderr, "terrain-server: %s\n", err);
		rv = 2;
	}
	service_config_free(&c);
	return rv;
}

/* ---- generate ------------------------------------------------------------- */

struct gen_args {
	const char *seed, *lod, *cx, *cz, *gen, *layers, *presets, *out;
};

static int gen_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "terrain-server generate: %s%s\n", msg, arg ? arg : "");
	fprintf(stderr, "usage: terrain-server generate --seed S --lod L --cx X --cz Z"
		" [--gen NAME] [--layers LIST] [--presets DIR] [-o FILE]\n");
	return 2;
}

static int gen_parse(struct gen_args *g, int argc, char **argv)
{
	static const struct {
		const char *flag;
		size_t offset;
	} flags[] = {
		{ "--seed", offsetof(struct gen_args, seed) },
		{ "--lod", offsetof(struct gen_args, lod) },
		{ "--cx", offsetof(struct gen_args, cx) },
		{ "--cz", offsetof(struct gen_args, cz) },
		{ "--gen", offsetof(struct gen_args, gen) },
		{ "--layers", offsetof(struct gen_args, layers) },
		{ "--presets", offsetof(struct gen_args, presets) },
		{ "-o", offsetof(struct gen_args, out) },
		{ "--output", offsetof(struct gen_args, out) },
	};
	int a;
	size_t i;

	for (a = 0; a < argc; a++) {
		for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
			if (!strcmp(argv[a], flags[i].flag))
				break;
		if (i == sizeof(flags) / sizeof(flags[0]))
			return gen_usage("unknown argument ", argv[a]);
		if (a + 1 >= argc)
			return gen_usage("missing value for ", argv[a]);
		*(const char **)(void *)((char *)g + flags[i].offset) = argv[++a];
	}
	if (!g->seed || !g->lod || !g->cx || !g->cz)
		return gen_usage("--seed, --lod, --cx and --cz are required", NULL);
	return 0;
}

static int write_all(const char *path, const uint8_t *buf, size_t len)
{
	if (files_write(path, buf, len) == 0)
		return 0;
	fprintf(stderr, "terrain-server generate: %s: %s\n", path ? path : "stdout",
		errno ? strerror(errno) : "write failed");
	return 1;
}

/* Check every argument, then generate (the server's code path, with the
 * regions an eroded tile needs computed for it alone); 2 for bad
 * arguments. */
static int generate_with(const struct gen_args *g, const struct catalog *cat)
{
	const char *name = g->gen ? g->gen : "default";
	const struct preset *p;
	uint64_t seed;
	int32_t cx, cz;
	unsigned layers = 0;
	uint8_t *raw;
	size_t len;
	int lod, i, rc;

	if ((rc = seed_parse(g->seed, strlen(g->seed), &seed)) != 0)
		return gen_usage(rc == ERR_RANGE ? "seed above 2^64-1: " :
				 "bad seed (decimal, or [A-Za-z0-9_-]{1,64}): ", g->seed);
	if ((i = catalog_find(cat, name, strlen(name))) < 0)
		return gen_usage("unknown generator preset: ", name);
	p = catalog_at(cat, (size_t)i);
	if (tilegen_parse_lod(p, g->lod, strlen(g->lod), &lod))
		return gen_usage("lod out of range for this preset: ", g->lod);
	if (req_parse_i32(g->cx, strlen(g->cx), &cx))
		return gen_usage("cx is not an int32: ", g->cx);
	if (req_parse_i32(g->cz, strlen(g->cz), &cz))
		return gen_usage("cz is not an int32: ", g->cz);
	if (g->layers && tilegen_parse_layers(g->layers, strlen(g->layers), &layers))
		return gen_usage("unknown layer list (height or height,material): ", g->layers);
	rc = tilegen_encode(p, seed, lod, cx, cz, NULL, NULL, 0, layers, &raw, &len);
	if (rc) {
		fprintf(stderr, "terrain-server generate: %s\n", err_str(rc));
		return 1;
	}
	rc = write_all(g->out, raw, len);
	free(raw);
	return rc;
}

static int generate(int argc, char **argv)
{
	struct gen_args g = { 0 };
	struct catalog *cat;
	char err[512];
	int rc;

	if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
		help(stdout);
		return 0;
	}
	if ((rc = gen_parse(&g, argc, argv)) != 0)
		return rc;
	if (catalog_load(g.presets, &cat, err, sizeof(err)) < 0) {
		fprintf(stderr, "terrain-server generate: %s\n", err);
		return 2;
	}
	rc = generate_with(&g, cat);
	catalog_destroy(cat);
	return rc;
}

/* ---- repair-log -------------------------------------------------------------- */

static int repair_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "terrain-server repair-log: %s%s\n", msg, arg ? arg : "");
	fprintf(stderr, "usage: terrain-server repair-log --data-dir DIR --truncate-at OFFSET\n");
	return 2;
}

static int repair_log(int argc, char **argv)
{
	const char *dir = NULL, *at = NULL;
	unsigned long long off;
	uint64_t kept = 0;
	char err[512], *end;
	int a;

	for (a = 0; a < argc; a++) {
		const char **v = !strcmp(argv[a], "--data-dir") ? &dir :
				 !strcmp(argv[a], "--truncate-at") ? &at : NULL;

		if (!v)
			return repair_usage("unknown argument ", argv[a]);
		if (a + 1 >= argc)
			return repair_usage("missing value for ", argv[a]);
		*v = argv[++a];
	}
	if (!dir || !at)
		return repair_usage("--data-dir and --truncate-at are required", NULL);
	errno = 0;
	off = strtoull(at, &end, 10);
	if (!*at || *end || errno || at[0] == '-')
		return repair_usage("--truncate-at is not a byte offset: ", at);
	if (store_truncate(dir, off, &kept, err, sizeof(err)) < 0) {
		fprintf(stderr, "terrain-server repair-log: %s\n", err);
		return 1;
	}
	printf("terrain-server repair-log: kept %llu records; the bytes after offset %llu"
	       " are saved in %s/%s.cut-%llu\n", (unsigned long long)kept, off, dir,
	       STORE_LOG_NAME, off);
	return 0;
}

/* ---- routes, version ------------------------------------------------------------ */

static int version(void)
{
	const struct buildinfo *b = buildinfo_get();

	printf("terrain-server %s\ncommit %s\ncompiler %s\narch %s\nsimd %s\n"
	       "algorithm_version %d\ntile_format_versions %s\n", b->version, b->commit,
	       b->compiler, b->arch, b->simd, b->algorithm_version, b->tile_formats);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "routes")) {
		service_print_routes(stdout);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")))
		return version();
	if (argc > 1 && !strcmp(argv[1], "generate"))
		return generate(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "repair-log"))
		return repair_log(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "token"))
		return token_cmd(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return serve(argc - 2, argv + 2);
	if (argc > 1 && argv[1][0] != '-') {
		fprintf(stderr, "terrain-server: unknown command \"%s\" (see --help)\n",
			argv[1]);
		return 2;
	}
	return serve(argc - 1, argv + 1);
}
