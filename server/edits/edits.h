/*
 * edits.h - the worlds and their edits: the world map, the edit log
 * (journal.h) and the event streams (sse.h) are this module's, and so are
 * their routes:
 *
 *   GET|HEAD /v1/worlds/{seed}            world info
 *   POST     /v1/worlds/{seed}/edits      append a batch
 *   GET|HEAD /v1/worlds/{seed}/edits      the log after a sequence
 *   GET|HEAD /v1/worlds/{seed}/hashes     chunk versions and hashes
 *   GET      /v1/worlds/{seed}/events     server-sent events
 *   GET|HEAD /v1/presets                  the generators
 *
 * routes.h documents their HTTP semantics, docs/edits.md the model. A
 * world changes only when the edit log hands it a committed batch; tiles
 * read the map (edits_worlds()). Loop thread only.
 */
#ifndef EDITS_H
#define EDITS_H

#include <stddef.h>
#include <stdint.h>

/* The largest request body of any route (POST edits, POST reverts): the
 * HTTP layer's limit. */
#define EDITS_MAX_BODY (64 * 1024)

struct catalog;
struct edits;
struct metrics_edit_stats;
struct req_env;
struct route;
struct uv_loop_s;
struct world_map;

/*
 * The module's options (edits_options, read by main.c and --help) and what
 * edits_config_load() reads from the files they name. The edit log's own
 * options are the journal's (journal.h).
 */
struct edits_config {
	const char *token;           /* --edit-token, or what edits_config_load()
					read from --edit-token-file; NULL or "":
					loopback clients only, or players' tokens */
	const char *token_file;      /* --edit-token-file */
	const char *token_secret_file;     /* --token-secret-file */
	const char *token_public_key_file; /* --token-public-key-file */
	const char *cors_origins;    /* web origins that may edit besides the
					server's own, comma-separated */
	const char *allowed_hosts;   /* Host names besides loopback ones that
					tokenless edits may name */
	unsigned rate;               /* --edit-rate, edits/s per author (0: off;
					bursts of 5 s) */
	unsigned area_km2;           /* --edit-area, km^2/s per author (0: off;
					bursts of 5 s) */
	unsigned deadline_ms;        /* --edit-deadline: an edit that arrives
					later than this after the front received
					it (X-Request-Start) gets 503 and is not
					applied; 0: off */
	unsigned key_window_s;       /* --idempotency-window: how long a batch's
					Idempotency-Key is remembered, by the
					log's clock (0: 86400) */
	unsigned key_max;            /* --idempotency-keys: the most keys
					remembered (idem.h; 0: 1000000) */
	unsigned history_s;          /* --history: how far back, by the log's
					clock, a revert reaches */
	/* edits_config_load(): the key files' bytes, or NULL */
	char *token_read;            /* --edit-token-file's first line (token
					points at it) */
	uint8_t *token_secret;
	size_t token_secret_len;
	char *token_public_key;
	size_t token_public_key_len;
};

struct option;
/* The module's option table (options.h); returns its length. */
size_t edits_options(const struct option **out);

/* Read the files c names (the edit token, the token keys) and check that
 * the keys can verify tokens; the edit token and its file together are
 * refused. 0, or ERR_* with err saying why (a bad argument). */
int edits_config_load(struct edits_config *c, char *err, size_t errlen);

/* Free what edits_config_load() read (the secret wiped first). */
void edits_config_free(struct edits_config *c);

/*
 * Create the module and open its edit log (not yet replayed). On failure
 * returns ERR_* with the reason in err (for the operator).
 */
struct journal_config;
int edits_create(struct uv_loop_s *loop, const struct catalog *cat, struct req_env *env,
		 const struct edits_config *cfg, const struct journal_config *log,
		 struct edits **out, char *err, size_t errlen);

/*
 * Rebuild every world from the edit log, before serving. Batches of
 * generators not in the catalog are skipped (they stay in the log). On 0
 * msg says what was replayed and skipped, and warn (or "") what the log
 * repaired, e.g. a dropped torn tail; otherwise msg says why (with the
 * recovery command for a corrupt log).
 */
int edits_replay(struct edits *e, char *msg, size_t msglen, char *warn, size_t warnlen);

/* Restore worlds from the snapshots of s before the replay, and with
 * compact, compact the log below the snapshot after it; s is not owned. */
struct snapshots;
void edits_use_snapshots(struct edits *e, struct snapshots *s, int compact);

/* The world map, writable: for the snapshots. */
struct world_map *edits_world_map(struct edits *e);

/* The routes of this resource (static); their module is the struct edits. */
size_t edits_routes(const struct route **out);

/* Called after every batch is applied (replay and live) with the chunks
 * it touched (n (cx, cz) pairs), the world's generator index and seed;
 * revert is the sequence number of a revert or undo that changed which
 * edits of those chunks count (bakes_reset()), else 0. */
typedef void (*edits_change_fn)(void *arg, int gen, uint64_t seed, const int32_t *chunks,
				size_t n, uint64_t revert);

/* Set the one change callback (NULL: none). */
void edits_on_change(struct edits *e, edits_change_fn fn, void *arg);

/* The world map, for the readers of edit versions. */
const struct world_map *edits_worlds(const struct edits *e);

/* 0, or the ERR_* that failed the edit log for good (edits get 503 until
 * a restart). A file log whose write failed is not failed for good: it
 * probes, and edits resume once a write succeeds (store.h). */
int edits_failed(const struct edits *e);

/* 0 while edits can be taken; ERR_AGAIN while a shared edit log is out of
 * reach (edits get 503, it reconnects by itself), ERR_IO while the log
 * is failed (for good, or until a write succeeds: edits_failed()). */
int edits_available(const struct edits *e);

/* Why edits are unavailable, for people: the operating system's words when
 * a write failed ("No space left on device", as the log on stderr says),
 * else err_str() of edits_available(); "" when they are available. */
const char *edits_unavailable_why(const struct edits *e);

/* Edit log, event stream and world figures for /metrics. */
void edits_stats(const struct edits *e, struct metrics_edit_stats *es);

/* Close the edit log once every edit has been answered: every accepted
 * append has had its answer when it returns. */
void edits_close_log(struct edits *e);

/* Free e (closing the log if still open). NULL does nothing. */
void edits_destroy(struct edits *e);

#endif
