/*
 * main.c - terrain-server: configuration from argv and the environment,
 * then one of the subcommands.
 *
 *   terrain-server [serve] [options]        serve HTTP (loop.c, routes.c)
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
#include "base/files.h"
#include "buildinfo.h"
#include "editlog/store.h"
#include "edits/edits.h"
#include "edits/token.h"
#include "err.h"
#include "http/http.h"
#include "loop.h"
#include "preset.h"
#include "routes.h"
#include "seed.h"
#include "selfcheck.h"
#include "tiles/tilegen.h"
#include "worlds/catalog.h"

/* descriptors kept for the listener, logs, libuv and the monitors'
 * connections past --max-connections */
#define FD_RESERVE (64 + HTTP_RESERVE_CONNS)

struct config {
	const char *bind;
	unsigned port;
	const char *node_name;
	unsigned cache_mb;
	unsigned region_cache_mb;
	unsigned response_mb;
	unsigned workers;
	const char *presets;
	const char *data_dir;
	const char *edit_log;
	const char *redis_password_file;
	const char *sentinel_password_file;
	char *redis_password;            /* from the environment or the file */
	char *sentinel_password;
	unsigned max_connections;
	double idle_timeout;
	double header_timeout;
	const char *access_log;
	unsigned max_age;
	const char *edit_token;
	const char *token_secret_file;
	const char *token_public_key_file;
	char *token_secret;              /* the files' contents */
	size_t token_secret_len;
	char *token_public_key;
	size_t token_public_key_len;
	unsigned bake_after;
	unsigned snapshot_every;
	unsigned compact_log;
	unsigned edit_rate;
	unsigned edit_area;
	unsigned edit_deadline;
	unsigned key_window;
	unsigned key_max;
	unsigned history;
	const char *cors_origins;
	const char *allowed_hosts;
};

enum opt_type { T_STR, T_UINT, T_SECS };

struct option {
	const char *name, *env, *arg, *def, *help;
	enum opt_type type;
	size_t offset;
	unsigned max;
};

#define OPT(name, env, arg, def, type, field, max, help) \
	{ name, env, arg, def, help, type, offsetof(struct config, field), max }

static const struct option options[] = {
	OPT("bind", "TERRAIN_BIND", "ADDR", "127.0.0.1", T_STR, bind, 0,
	    "address to listen on (0.0.0.0 or :: for all)"),
	OPT("port", "TERRAIN_PORT", "N", "8080", T_UINT, port, 65535,
	    "TCP port; 0 picks a free one (printed on stderr)"),
	OPT("node-name", "TERRAIN_NODE_NAME", "NAME", "hostname", T_STR, node_name, 0,
	    "sent as X-Terrain-Node on every response: which node of a cluster answered "
	    "([A-Za-z0-9._-], at most 64; empty: not sent)"),
	OPT("cache-mb", "TERRAIN_CACHE_MB", "MB", "256", T_UINT, cache_mb, 1 << 20,
	    "tile cache bound in MiB, overhead included"),
	OPT("region-cache-mb", "TERRAIN_REGION_CACHE_MB", "MB", "256", T_UINT,
	    region_cache_mb, 1 << 20, "eroded region cache bound in MiB (eroded presets)"),
	OPT("response-mb", "TERRAIN_RESPONSE_MB", "MB", "64", T_UINT, response_mb, 1 << 20,
	    "MiB of bodies made for single requests (bundles, large "
	    "JSON) that may wait to be sent; past it, or past a quarter of it on one "
	    "connection beyond that connection's first, such requests get 503 (at least 1)"),
	OPT("workers", "TERRAIN_WORKERS", "N", "cores", T_UINT, workers, 1024,
	    "generation threads"),
	OPT("presets", "TERRAIN_PRESETS", "DIR", "", T_STR, presets, 0,
	    "extra generator presets: every DIR/NAME.json becomes ?gen=NAME"),
	OPT("data-dir", "TERRAIN_DATA_DIR", "DIR", "./data", T_STR, data_dir, 0,
	    "directory of the edit log (created when missing; one server each)"),
	OPT("edit-log", "TERRAIN_EDIT_LOG", "SPEC", "file", T_STR, edit_log, 0,
	    "where edits are logged: file (DATA_DIR/edits.log), or a log shared by "
	    "nodes: redis://[USER@]HOST:PORT[/DB] or sentinel://[USER@]HOST:PORT[,...]/MASTER[/DB], "
	    "options ?timeout=MS&replicas=N|all (docs/cluster.md)"),
	OPT("redis-password-file", "TERRAIN_REDIS_PASSWORD_FILE", "FILE", "", T_STR,
	    redis_password_file, 0, "the shared edit log's Redis password, the file's first "
	    "line (or environment TERRAIN_REDIS_PASSWORD; either keeps it out of process "
	    "listings: docs/cluster.md)"),
	OPT("sentinel-password-file", "TERRAIN_SENTINEL_PASSWORD_FILE", "FILE", "", T_STR,
	    sentinel_password_file, 0, "the Sentinels' password for sentinel://, the "
	    "file's first line (or environment TERRAIN_SENTINEL_PASSWORD)"),
	OPT("edit-token", "TERRAIN_EDIT_TOKEN", "TOKEN", "", T_STR, edit_token, 0,
	    "edits need Authorization: Bearer TOKEN (author admin); unset: loopback "
	    "clients only, or players' tokens"),
	OPT("token-secret-file", "TERRAIN_TOKEN_SECRET_FILE", "FILE", "", T_STR,
	    token_secret_file, 0, "players' tokens (JWT, HS256): the key, the file's first "
	    "line as bytes (32 or more; docs/edits.md)"),
	OPT("token-public-key-file", "TERRAIN_TOKEN_PUBLIC_KEY_FILE", "FILE", "", T_STR,
	    token_public_key_file, 0, "players' tokens signed ES256/384/512 or RS256/384/512: "
	    "the PEM public key (nodes then cannot mint)"),
	OPT("bake-after", "TERRAIN_BAKE_AFTER", "N", "8", T_UINT, bake_after, 1 << 20,
	    "fold a chunk's edits into a stored height delta once N of them are not; "
	    "a cold tile then costs about the same whatever the chunk's history (0: never)"),
	OPT("snapshot-every", "TERRAIN_SNAPSHOT_EVERY", "N", "100000", T_UINT, snapshot_every,
	    1u << 31, "write DIR/snapshot (every chunk's edits baked, each world's hash) in "
	    "the background after N applied edits; start-up reads it plus the log after "
	    "it (0: never)"),
	OPT("compact-log", "TERRAIN_COMPACT_LOG", "0|1", "0", T_UINT, compact_log, 1,
	    "drop from the file log the batches the snapshot holds, at start and after "
	    "each snapshot while serving (the history before it is then only in the "
	    "snapshot: docs/edit-log.md)"),
	OPT("edit-rate", "TERRAIN_EDIT_RATE", "N", "1000", T_UINT, edit_rate, 1 << 30,
	    "edits a second one author (a token's sub, admin; tokenless: an address) may "
	    "post, in bursts of 5 s; past it 429 with Retry-After (0: no limit)"),
	OPT("edit-area", "TERRAIN_EDIT_AREA", "KM2", "200", T_UINT, edit_area, 1 << 30,
	    "square kilometres of brushes a second one author may post, in bursts of "
	    "5 s (a 4096 m brush is 53 km2); past it 429 (0: no limit)"),
	OPT("edit-deadline", "TERRAIN_EDIT_DEADLINE", "MS", "5000", T_UINT, edit_deadline,
	    1u << 31, "refuse (503, not applied) an edit that reaches this node more than "
	    "MS after its front received it (the front's X-Request-Start: t=SECONDS): its "
	    "client has likely given up; edits without the header are not judged (0: off)"),
	OPT("idempotency-window", "TERRAIN_IDEMPOTENCY_WINDOW", "SECONDS", "86400", T_UINT,
	    key_window, 1u << 31, "how long a batch's Idempotency-Key is remembered (by "
	    "the edit log's clock): a retry with the key within it gets the first answer "
	    "and applies nothing; a shared log keeps its keys in Redis as long"),
	OPT("history", "TERRAIN_HISTORY", "SECONDS", "604800", T_UINT, history, 1u << 31,
	    "how far back a revert reaches, by the edit log's clock (POST .../reverts; "
	    "older edits are kept only folded into the snapshot)"),
	OPT("idempotency-keys", "TERRAIN_IDEMPOTENCY_KEYS", "N", "1000000", T_UINT, key_max,
	    1u << 30, "the most Idempotency-Keys remembered (about 72 bytes each, 144 at "
	    "most); past it the oldest are forgotten before their window ends"),
	OPT("cors-origins", "TERRAIN_CORS_ORIGINS", "LIST", "", T_STR, cors_origins, 0,
	    "web origins (https://game.example,...) whose pages may POST edits, besides "
	    "the server's own; other pages get 403"),
	OPT("allowed-hosts", "TERRAIN_ALLOWED_HOSTS", "LIST", "", T_STR, allowed_hosts, 0,
	    "Host names besides loopback ones that edits may name when no token is set"),
	OPT("max-connections", "TERRAIN_MAX_CONNECTIONS", "N", "10000", T_UINT,
	    max_connections, 1 << 24,
	    "open connections (counted from their first bytes); beyond it clients "
	    "get 503, but 16 more answer /healthz, /readyz and /metrics (capped by "
	    "RLIMIT_NOFILE)"),
	OPT("idle-timeout", "TERRAIN_IDLE_TIMEOUT", "SECONDS", "60", T_SECS,
	    idle_timeout, 0, "close keep-alive connections idle this long; 0: never"),
	OPT("header-timeout", "TERRAIN_HEADER_TIMEOUT", "SECONDS", "10", T_SECS,
	    header_timeout, 0, "a request must arrive whole within this; else 408"),
	OPT("access-log", "TERRAIN_ACCESS_LOG", "FILE", "", T_STR, access_log, 0,
	    "append one line per response to FILE (- for stdout); default off"),
	OPT("max-age", "TERRAIN_MAX_AGE", "SECONDS", "60", T_UINT, max_age,
	    365 * 86400, "Cache-Control max-age of tiles; edits show after at most this"),
};
#define NOPTIONS (sizeof(options) / sizeof(options[0]))

static void usage(FILE *f)
{
	size_t i;

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
		"serve options (flag, environment variable, default):\n");
	for (i = 0; i < NOPTIONS; i++) {
		const struct option *o = &options[i];
		char flag[48];

		snprintf(flag, sizeof(flag), "--%s %s", o->name, o->arg);
		fprintf(f, "  %-26s %s\n  %-26s env %s, default %s\n", flag, o->help,
			"", o->env, o->def[0] ? o->def : "none");
	}
	fprintf(f, "  %-26s %s\n\n", "--help", "this text");
	fprintf(f,
		"generate writes one uncompressed tile body (docs/tile-format.md) of the\n"
		"unedited world, byte-identical to the identity body of\n"
		"GET /v1/worlds/S/chunks/L/X/Z?gen=NAME&layers=LIST while that chunk has\n"
		"no edits, to FILE or stdout. NAME defaults to \"default\", LIST to\n"
		"\"height\" (format version 5, 1 for the smallest tiles; \"height,material\"\n"
		"adds the material layer: 6, or 2).\n\n"
		"repair-log cuts DIR/edits.log at OFFSET (the end of the last good record,\n"
		"as the refusal to start reported), saving the bytes cut beside it; see\n"
		"docs/edits.md. Never while a server runs on DIR.\n\n"
		"token prints a player's token (JWT) signed with the secret (HS256) or the\n"
		"private key (ES256, RS256): see docs/edits.md, \"Players and tokens\".\n");
}

static int set_option(struct config *c, const struct option *o, const char *v,
		      const char *source)
{
	char *field = (char *)c + o->offset, *end;
	unsigned long long u;
	double d;

	switch (o->type) {
	case T_STR:
		*(const char **)(void *)field = v;
		return 0;
	case T_UINT:
		errno = 0;
		u = strtoull(v, &end, 10);
		if (!*v || *end || errno || v[0] == '-' || u > o->max)
			break;
		*(unsigned *)(void *)field = (unsigned)u;
		return 0;
	case T_SECS:
		errno = 0;
		d = strtod(v, &end);
		if (!*v || *end || errno || !(d >= 0 && d <= 1e6))
			break;
		*(double *)(void *)field = d;
		return 0;
	}
	fprintf(stderr, "terrain-server: %s: bad value \"%s\" for --%s\n", source, v,
		o->name);
	return -1;
}

static const struct option *find_option(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NOPTIONS; i++)
		if (strlen(options[i].name) == len && !strncmp(options[i].name, name, len))
			return &options[i];
	return NULL;
}

/* The host's name as a node name: its first label's valid bytes, at most
 * HTTP_NODE_NAME_MAX; "" when there is none. */
static const char *host_name(void)
{
	static char name[256];
	size_t n;

	if (gethostname(name, sizeof(name) - 1) < 0)
		name[0] = '\0';
	name[sizeof(name) - 1] = '\0';
	n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-");
	name[n < HTTP_NODE_NAME_MAX ? n : HTTP_NODE_NAME_MAX] = '\0';
	return name;
}

/* Defaults, then the environment, then argv. Returns 0, 1 for --help, or
 * -1 after printing an error. */
static int configure(struct config *c, int argc, char **argv)
{
	size_t i;
	int a;

	for (i = 0; i < NOPTIONS; i++) {
		const char *def = options[i].def;

		if (!strcmp(def, "cores") || !strcmp(def, "hostname"))
			def = NULL;
		if (def && set_option(c, &options[i], def, "default") < 0)
			return -1;
	}
	c->workers = uv_available_parallelism();
	for (i = 0; i < NOPTIONS; i++) {
		const char *v = getenv(options[i].env);

		if (v && set_option(c, &options[i], v, options[i].env) < 0)
			return -1;
	}
	for (a = 0; a < argc; a++) {
		const char *arg = argv[a], *eq, *v;
		const struct option *o;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
			return 1;
		if (strncmp(arg, "--", 2) != 0) {
			fprintf(stderr, "terrain-server: unexpected argument \"%s\"\n", arg);
			return -1;
		}
		eq = strchr(arg, '=');
		o = find_option(arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
		if (!o) {
			fprintf(stderr, "terrain-server: unknown option %s (see --help)\n", arg);
			return -1;
		}
		v = eq ? eq + 1 : (a + 1 < argc ? argv[++a] : NULL);
		if (!v) {
			fprintf(stderr, "terrain-server: --%s needs a value\n", o->name);
			return -1;
		}
		if (set_option(c, o, v, "argument") < 0)
			return -1;
	}
	if (c->workers == 0) {
		fprintf(stderr, "terrain-server: --workers must be at least 1\n");
		return -1;
	}
	if (!c->node_name)
		c->node_name = host_name();
	else if (c->node_name[0] && !http_node_name_valid(c->node_name)) {
		fprintf(stderr, "terrain-server: --node-name \"%s\": want 1..%d of "
			"[A-Za-z0-9._-] (empty: none)\n", c->node_name, HTTP_NODE_NAME_MAX);
		return -1;
	}
	return 0;
}

/*
 * A password of the shared edit log: environment variable env, or the
 * first line of file (flag names it); NULL when neither. Both: refused.
 * 0, or -1 after printing why.
 */
static int read_password(const char *env, const char *file, const char *flag, char **out)
{
	const char *v = getenv(env);
	size_t len;
	char *buf;

	*out = NULL;
	if (v && v[0] && file && file[0]) {
		fprintf(stderr, "terrain-server: both %s and --%s are set: give the password "
			"once\n", env, flag);
		return -1;
	}
	if (v && v[0])
		return (*out = strdup(v)) ? 0 : -1;
	if (!file || !file[0])
		return 0;
	if (files_read(file, 4096, &buf, &len) != 0) {
		fprintf(stderr, "terrain-server: --%s %s: %s\n", flag, file, strerror(errno));
		return -1;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!buf[0]) {
		fprintf(stderr, "terrain-server: --%s %s: the first line is empty\n", flag, file);
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}

/* Whether the token keys read can verify tokens (token.h): a bad
 * argument (status 2) when not, as a bad option value is. */
static int check_token_keys(const struct config *c)
{
	struct token_keys *k = NULL;
	char err[600];

	if (!c->token_secret && !c->token_public_key)
		return 0;
	if (token_keys_create((const uint8_t *)c->token_secret, c->token_secret_len,
			      c->token_public_key, c->token_public_key_len, &k, err,
			      sizeof(err)) != 0) {
		fprintf(stderr, "terrain-server: %s\n", err);
		return -1;
	}
	token_keys_destroy(k);
	return 0;
}

/* The players' token keys (--token-secret-file: the first line, as
 * --redis-password-file; --token-public-key-file: the PEM file). 0, or -1
 * after printing why. */
static int read_token_keys(struct config *c)
{
	char err[600];

	if (c->token_secret_file && c->token_secret_file[0] &&
	    token_read_secret("token-secret-file", c->token_secret_file, &c->token_secret,
			      &c->token_secret_len, err, sizeof(err)) != 0) {
		fprintf(stderr, "terrain-server: %s\n", err);
		return -1;
	}
	if (c->token_public_key_file && c->token_public_key_file[0] &&
	    files_read(c->token_public_key_file, 65536, &c->token_public_key,
			    &c->token_public_key_len) != 0) {
		fprintf(stderr, "terrain-server: --token-public-key-file %s: %s\n",
			c->token_public_key_file, strerror(errno));
		return -1;
	}
	return check_token_keys(c);
}

/* Raise the descriptor limit to its hard maximum and keep max_connections
 * within it. */
static void fit_descriptors(struct config *c)
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
	    (rlim_t)c->max_connections + FD_RESERVE > rl.rlim_cur) {
		unsigned fit = rl.rlim_cur > 2 * FD_RESERVE ?
			       (unsigned)(rl.rlim_cur - FD_RESERVE) : FD_RESERVE;

		fprintf(stderr, "terrain-server: RLIMIT_NOFILE %llu: --max-connections %u lowered to %u\n",
			(unsigned long long)rl.rlim_cur, c->max_connections, fit);
		c->max_connections = fit;
	}
}

static FILE *open_log(const char *path)
{
	if (!path || !*path)
		return NULL;
	return files_open_append(path);
}

static void limits_of(const struct config *c, FILE *log, struct http_limits *l)
{
	http_limits_default(l);
	l->max_connections = c->max_connections;
	l->idle_timeout_ms = (uint64_t)(c->idle_timeout * 1000 + 0.5);
	l->header_timeout_ms = (uint64_t)(c->header_timeout * 1000 + 0.5);
	l->access_log = log;
	l->access_log_path = log && log != stdout ? c->access_log : NULL;
	l->node_name = c->node_name;
	l->max_body = EDITS_MAX_BODY;
}

static int replay(struct routes *rt)
{
	uint64_t t0 = uv_hrtime();
	char msg[512], warn[512];

	if (route_replay(rt, msg, sizeof(msg), warn, sizeof(warn)) < 0) {
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
static void warn_open_edits(const struct config *c)
{
	if ((c->edit_token && c->edit_token[0]) || c->token_secret || c->token_public_key)
		return;
	if (!bind_is_loopback(c->bind))
		fprintf(stderr, "terrain-server: warning: listening on %s with no --edit-token: "
			"edits are still refused to non-loopback clients, but a reverse proxy "
			"on this machine makes every client loopback; set --edit-token "
			"(docs/edits.md)\n", c->bind);
}

/* Everything after the drain; main returns its status. */
static int serve_with(struct config *c, struct catalog *cat, FILE *log)
{
	struct loop_config lc = { c->bind, (int)c->port, 4096, c->workers, 10000 };
	struct route_config rc = { .cache_bytes = (size_t)c->cache_mb << 20,
				   .region_bytes = (size_t)c->region_cache_mb << 20,
				   .response_bytes = (size_t)(c->response_mb ? c->response_mb : 1) << 20,
				   .max_age = c->max_age,
				   .max_generations = 1024,
				   .bake_after = c->bake_after,
				   .snapshot_every = c->snapshot_every,
				   .compact_log = (int)c->compact_log,
				   .edit_rate = c->edit_rate,
				   .edit_area_km2 = c->edit_area,
				   .edit_deadline_ms = c->edit_deadline,
				   .key_window_s = c->key_window,
				   .key_max = c->key_max,
				   .history_s = c->history,
				   .edit_log = c->edit_log,
				   .edit_log_password = c->redis_password,
				   .edit_log_sentinel_password = c->sentinel_password,
				   .data_dir = c->data_dir,
				   .edit_token = c->edit_token,
				   .token_secret = (const uint8_t *)c->token_secret,
				   .token_secret_len = c->token_secret_len,
				   .token_public_key = c->token_public_key,
				   .token_public_key_len = c->token_public_key_len,
				   .cors_origins = c->cors_origins,
				   .allowed_hosts = c->allowed_hosts };
	struct http_server *hs = NULL;
	struct http_handler h;
	struct http_limits lim;
	struct routes *rt = NULL;
	struct loop *lp = NULL;
	char err[512];
	int rv;

	if (loop_create(&lc, &lp, err, sizeof(err)) < 0) {
		fprintf(stderr, "terrain-server: %s\n", err);
		return 1;
	}
	limits_of(c, log, &lim);
	warn_open_edits(c);
	if (route_create(loop_uv(lp), cat, &rc, &rt, err, sizeof(err)) < 0) {
		fprintf(stderr, "terrain-server: %s\n", err);
		goto fail;
	}
	if (replay(rt) < 0)
		goto fail;
	route_handler(rt, &h);
	if (http_server_create(loop_uv(lp), &lim, &h, &hs) < 0) {
		fprintf(stderr, "terrain-server: out of memory\n");
		goto fail;
	}
	route_set_server(rt, hs);
	loop_on_drain(lp, route_stop, rt);
	fprintf(stderr, "terrain-server: %zu presets, %u workers, cache %u MiB, "
		"region cache %u MiB, max %u connections\n", catalog_count(cat),
		c->workers, c->cache_mb, c->region_cache_mb, c->max_connections);
	rv = loop_run(lp, hs);
	if (rv == 1) {
		/* Cut at the drain limit: workers may still use the presets. */
		fflush(NULL);
		_exit(0);
	}
	http_server_destroy(hs);
	route_close_log(rt); /* every edit was answered: nothing is queued */
	route_destroy(rt);
	loop_destroy(lp);
	if (rv == 0)
		fprintf(stderr, "terrain-server: stopped\n");
	return rv == 0 ? 0 : 1;
fail:
	route_destroy(rt);
	loop_destroy(lp);
	return 1;
}

/* Serve with a configuration read: the presets, the access log, then
 * serve_with(). */
static int serve_configured(struct config *c)
{
	struct catalog *cat;
	char err[512];
	FILE *log;
	int rv;

	if (selfcheck_run(err, sizeof(err)) != 0) { /* a binary of another world */
		fprintf(stderr, "terrain-server: %s\n", err);
		return 1;
	}
	if (catalog_load(c->presets[0] ? c->presets : NULL, &cat, err, sizeof(err)) < 0) {
		fprintf(stderr, "terrain-server: %s\n", err);
		return 2;
	}
	log = open_log(c->access_log);
	if (c->access_log[0] && !log) {
		fprintf(stderr, "terrain-server: --access-log %s: %s\n", c->access_log,
			strerror(errno));
		catalog_destroy(cat);
		return 2;
	}
	rv = serve_with(c, cat, log);
	if (log && log != stdout)
		fclose(log);
	catalog_destroy(cat);
	return rv;
}

static int serve(int argc, char **argv)
{
	struct config c = { 0 };
	int rv;

	rv = configure(&c, argc, argv);
	if (rv) {
		if (rv > 0)
			usage(stdout);
		return rv > 0 ? 0 : 2;
	}
	fit_descriptors(&c);
	if (read_password("TERRAIN_REDIS_PASSWORD", c.redis_password_file, "redis-password-file",
			  &c.redis_password) == 0 &&
	    read_password("TERRAIN_SENTINEL_PASSWORD", c.sentinel_password_file,
			  "sentinel-password-file", &c.sentinel_password) == 0 &&
	    read_token_keys(&c) == 0)
		rv = serve_configured(&c);
	else
		rv = 2;
	free(c.redis_password);
	free(c.sentinel_password);
	if (c.token_secret)
		memset(c.token_secret, 0, c.token_secret_len);
	free(c.token_secret);
	free(c.token_public_key);
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
		usage(stdout);
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
		route_print_table(stdout);
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
