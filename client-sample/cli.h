/*
 * cli.h - what the network commands (fetch, walk, swarm, edit, follow,
 * export)
 * share: one
 * option table, the libuv loop and HTTP client, the world info request,
 * the view parameters from options, and error messages.
 *
 * Messages go to stderr as "terrain-client: what: detail"; functions that
 * fail print their own message and return the exit code to use
 * (EXIT_FAILURE, or CLI_EXIT_USAGE for bad arguments).
 */
#ifndef CLI_H
#define CLI_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "api.h"

#define CLI_PROG "terrain-client"
#define CLI_EXIT_USAGE 2
#define CLI_MAX_SPAN 257 /* chunks across a player's square, at most */

struct hclient;
struct view_params;

/* Every option of every network command, with its typical default. */
struct cli_opts {
	const char *server;   /* --server http://127.0.0.1:8080 (or https://) */
	const char *cacert;   /* --cacert: CA file for https (any command
				 with --server); NULL: CURL_CA_BUNDLE,
				 SSL_CERT_FILE, else the system's */
	const char *seed;     /* --seed, decimal or text */
	const char *gen;      /* --gen, NULL: the server's default */
	const char *out;      /* -o PNG path */
	const char *path;     /* --path x0,z0:x1,z1:... */
	const char *op;       /* --op raise|lower|flatten|set (edit) */
	const char *falloff;  /* --falloff linear|smooth (edit), NULL: unsaid */
	const char *token;    /* --token (edit), NULL: none */
	const char *idem_key; /* --idempotency-key (edit), NULL: a fresh one */
	double x, z;          /* --x --z (0, 0) */
	double radius;        /* --radius in m (per command) */
	double radius_min;    /* smallest --radius accepted (1; edit: 0.001) */
	double strength;      /* --strength (edit), NAN: not given */
	double height;        /* --height (edit), NAN: not given */
	double d0;            /* --d0 (256) */
	double speed;         /* --speed m/s (walk 10; swarm: the fastest, 40) */
	double duration;      /* --duration s (5) */
	double revalidate;    /* --revalidate s; -1: the server's max-age */
	long lmax;            /* --lmax (6) */
	long connections;     /* --connections (4; swarm 16) */
	long pipeline;        /* --pipeline (8) */
	long players;         /* --players (10) */
	long worlds;          /* --worlds: distinct seeds in a swarm (10) */
	long step_ms;         /* --step-ms (walk 500; swarm 250) */
	long batch_lod;       /* --batch-lod: far rings from this LOD (2); -1 off */
	long timeout_ms;      /* --timeout-ms (10000) */
	long lod;             /* --lod (follow, export: 0) */
	long cx0, cz0;        /* --cx0 --cz0: export's first chunk (0, 0) */
	long cx1, cz1;        /* --cx1 --cz1: its last, inclusive (0, 0) */
	unsigned attempts;    /* no flag: hclient attempts, 0 its default */
	long edit_attempts;   /* --attempts: edit's tries of one batch (8) */
	uint64_t seed_base;   /* --seed-base (1) */
	int quiet;            /* --quiet: walk totals only; no progress line */
	int exact;            /* --exact: every ring at the canonical precision */
	long format;            /* --format: 1, 3 or 5 asks for that tile form (?format=); 0, 7: the current */
	const char *precisions; /* --precisions: per-LOD list (VIEW_PRECISIONS) */
	int local;            /* --local: generate unedited chunks here */
};

/*
 * Parse argv[1..argc-1] (argv[0] is the command) into o, which holds the
 * defaults. allowed and required are space-separated option names
 * ("--server --seed"). Returns 0, or CLI_EXIT_USAGE after a message.
 */
int cli_parse(int argc, char **argv, const char *allowed,
	      const char *required, struct cli_opts *o);

/* Defaults common to all commands (see struct cli_opts). */
void cli_defaults(struct cli_opts *o);

/* Print "terrain-client: what: detail"; returns EXIT_FAILURE. */
int cli_fail(const char *what, const char *detail);

struct cli_session {
	uv_loop_t loop;
	struct hclient *hc;
	struct api_world wi;  /* of the seed given to cli_open() */
	int open;
};

/*
 * Ignore SIGPIPE, start a loop and a client for o->server, and fetch the
 * world info of (seed, o->gen). Returns 0, or EXIT_FAILURE after saying
 * why (bad URL, server down, bad status, bad JSON); s is closed then.
 */
int cli_open(struct cli_session *s, const struct cli_opts *o,
	     const char *seed);

/*
 * cli_open() without the world info: ignore SIGPIPE, start a loop and a
 * client for o->server. Returns 0, or EXIT_FAILURE after saying why.
 */
int cli_connect(struct cli_session *s, const struct cli_opts *o);

/* Close the client, let the loop finish, close the loop. */
void cli_close(struct cli_session *s);

/*
 * Run the loop until *flag is non-zero or nothing is left to run.
 * Returns 0, or -1 when the loop ran dry first.
 */
int cli_run_until(struct cli_session *s, const int *flag);

/*
 * View parameters from o and the world info for seed (text as in URLs,
 * value its 64-bit form). Returns 0, or CLI_EXIT_USAGE after a message.
 */
int cli_view_params(const struct cli_opts *o, const struct cli_session *s,
		    const char *seed, struct view_params *p);

/*
 * Local mode's world: the built-in preset o->gen ("default" when NULL) and
 * seed value, made here by libterrain (terrain.h), once it is shown to be
 * the server's: the same generator fingerprint as s's world info, this
 * build's self-check passing, and its golden tiles' digest equal to the one
 * the server checked at start ("selfcheck" in the world info). Returns 0
 * and the world in *out (terrain_world_destroy()), or EXIT_FAILURE after
 * saying which differs.
 */
struct terrain_world;
int cli_local_world(const struct cli_opts *o, const struct cli_session *s, uint64_t seed,
		    struct terrain_world **out);

/* Nanoseconds as milliseconds. */
double cli_ms(uint64_t ns);

/* The HTTP version of hclient_stats' http_version (11: "HTTP/1.1", 20:
 * "HTTP/2"; "no answer" for 0): static text. */
const char *cli_protocol(int http_version);

/* p-th percentile (0..100) of n sorted values. */
uint64_t cli_percentile(const uint64_t *sorted, size_t n, double p);

#endif
