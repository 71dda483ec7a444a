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

/* Per-client budgets for edits (token buckets; a rate of 0 is off). */
struct edits_limits {
	double edits_per_s;      /* --edit-rate (default 1000) */
	double edit_burst;       /* edits at once (default 5 s of the rate) */
	double area_m2_per_s;    /* --edit-area km^2/s as m^2/s (default 200 km^2) */
	double area_burst_m2;    /* at once (default 5 s of the rate) */
	unsigned deadline_ms;    /* --edit-deadline (default 5000): an edit that
				    arrives later than this after the front
				    received it (X-Request-Start) gets 503 and
				    is not applied; 0: off */
	unsigned key_window_s;   /* --idempotency-window (default 86400): how
				    long a batch's Idempotency-Key is
				    remembered, by the log's clock */
	unsigned key_max;        /* --idempotency-keys (default 1000000): the
				    most keys remembered (idem.h) */
	unsigned history_s;      /* --history (default 604800): how far back,
				    by the log's clock, a revert reaches */
};

struct edits_config {
	const char *log;        /* edit log backend: "file" (or NULL), or a
				   redis:// or sentinel:// URL (journal.h) */
	const char *log_password;          /* the shared log's passwords given apart */
	const char *log_sentinel_password; /* from it (journal_auth), or NULL */
	const char *data_dir;   /* where the file log lives */
	const char *token;      /* bearer token for edits; NULL or "":
				   loopback clients only (copied) */
	const char *cors_origins;  /* web origins that may edit besides the
				      server's own, comma-separated (copied) */
	const char *allowed_hosts; /* Host names besides loopback ones that
				      tokenless edits may name (copied) */
	const uint8_t *token_secret;   /* players' tokens: HS256 key (copied), */
	size_t token_secret_len;
	const char *token_public_key;  /* and/or PEM public key (copied); NULL */
	size_t token_public_key_len;   /* both: none (access.h) */
	struct edits_limits limits;
};

/*
 * Create the module and open its edit log (not yet replayed). On failure
 * returns ERR_* with the reason in err (for the operator).
 */
int edits_create(struct uv_loop_s *loop, const struct catalog *cat, struct req_env *env,
		 const struct edits_config *cfg, struct edits **out, char *err,
		 size_t errlen);

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
