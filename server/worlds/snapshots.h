/*
 * snapshots.h - the worlds' state at a cut, on disk: every chunk's edits
 * folded into its baked delta, with each world's sequence number and hash
 * chain head, so that start-up reads one snapshot plus the log after it
 * rather than the whole history, and the log before it may be compacted.
 *
 * A snapshot is derived data like a bake: a world restored from one
 * serves the same bytes as a world replayed from the whole log (the tests
 * compare the two), and the world hash chain goes on from the stored head,
 * so it stays verifiable from the snapshot. Snapshots are written in the
 * background every `every` applied edits, a slice of chunks per worker job
 * so that tiles keep the pool; the bytes go through the store
 * (store_snap_*), the format is in docs/edit-log.md. Loop thread only.
 * A snapshot starts after --snapshot-every applied edits, --snapshot-bytes
 * of their records or --snapshot-interval, whichever comes first.
 *
 *	snapshots_create(loop, dir, cat, worlds, bakes, rs, every, &s);
 *	snapshots_load(s, &ld, msg, sizeof(msg));   // before the log's replay
 *	snapshots_applied(s, n, bytes);             // after each live batch
 *	snapshots_stop(s); snapshots_destroy(s);
 */
#ifndef SNAPSHOTS_H
#define SNAPSHOTS_H

#include <stddef.h>
#include <stdint.h>

struct bakes;
struct catalog;
struct region_source;
struct snapshots;
struct uv_loop_s;
struct world_map;

/* The default of --snapshot-every: applied edits between snapshots. */
#define SNAPSHOTS_EVERY 100000

struct snapshots_stats {
	uint64_t written;       /* snapshots written since start */
	uint64_t failed;        /* snapshots that failed (the old one stays) */
	uint64_t edits;         /* edits the last snapshot (or the loaded one) covers */
	uint64_t chunks;        /* chunks in it */
	uint64_t bytes;         /* its file size */
	uint64_t ms;            /* how long the last one took to write */
	uint64_t load_ms;       /* how long loading it at start took */
	int running;            /* one is being written */
};

/* Room for the log's position a snapshot records (NUL included). */
#define SNAPSHOTS_POS 64

/* What snapshots_load() found. */
struct snapshots_loaded {
	int found;              /* a snapshot was loaded */
	int touched;            /* the world map was changed (even on failure) */
	uint64_t worlds, chunks, edits, bytes;
	char pos[SNAPSHOTS_POS]; /* where in the log it was cut ("": not said) */
};

/* The module's options (snapshots_options). */
struct snapshots_config {
	unsigned every;       /* --snapshot-every: applied edits between
				 snapshots (0: never, whatever the two below) */
	unsigned bytes;       /* --snapshot-bytes: log bytes (the batches'
				 records) applied since the last snapshot that
				 start one (0: no such limit) */
	uint64_t interval_ms; /* --snapshot-interval: one at the first edit
				 applied this long after the last one started
				 (0: no such limit) */
	unsigned compact_log; /* --compact-log: drop from the file log the
				 batches the snapshot holds */
};

struct option;
/* The module's option table (options.h); returns its length. */
size_t snapshots_options(const struct option **out);

/* Snapshots of worlds (generators of cat, bakes of bakes, eroded regions
 * from rs) in data_dir, by cfg's policy (cfg->every 0: never).
 * 0 or ERR_NOMEM. */
int snapshots_create(struct uv_loop_s *loop, const char *data_dir, const struct catalog *cat,
		     struct world_map *worlds, struct bakes *bakes,
		     const struct region_source *rs, const struct snapshots_config *cfg,
		     struct snapshots **out);

/*
 * Restore every world of the snapshot in data_dir (none: 0 with
 * ld->found 0) into the world map, which must be empty, and its deltas
 * into the bakes. ERR_NOTFOUND when a world's generator is missing or has
 * another fingerprint, ERR_CORRUPT for a damaged file, ERR_VERSION, with
 * msg saying what and where; the map is then untouched only for
 * ERR_NOTFOUND, ERR_CORRUPT and ERR_VERSION found before the first world
 * was restored (the caller refuses to start on any error it cannot
 * replay around).
 */
int snapshots_load(struct snapshots *s, struct snapshots_loaded *ld, char *msg, size_t msglen);

/* Fold into each snapshot only the edits older than history_ms (by the
 * log's time, against each world's newest batch), and keep the others one
 * by one, so that reverts reach them after a restore (--history). */
void snapshots_keep_history(struct snapshots *s, uint64_t history_ms);

/* Keep the remembered idempotency keys (idem.h) in each snapshot, and
 * make them the snapshot's when one is loaded or restored. */
struct idem;
void snapshots_keep_keys(struct snapshots *s, struct idem *keys);

/* n edits in a record of bytes bytes were applied live: start a
 * snapshot when enough edits or bytes have been since the last one, or
 * when it started --snapshot-interval ago. */
void snapshots_applied(struct snapshots *s, uint64_t n, uint64_t bytes);

/* Write one now unless one is running or nothing changed. 0, ERR_BUSY
 * (one is running), ERR_NOMEM. */
int snapshots_start(struct snapshots *s);

/* Start no more (the server drains); a running one goes on to its end
 * unless destroyed. arg is the struct snapshots. */
void snapshots_stop(void *arg);

/* Free s once its job (if any) is back; the unfinished file is dropped.
 * NULL does nothing. */
void snapshots_destroy(struct snapshots *s);

void snapshots_stats(const struct snapshots *s, struct snapshots_stats *out);

/*
 * Sharing (a shared edit log keeps the newest snapshot for every node):
 * offer makes buf (len bytes of a snapshot, as snapshots_on_written()
 * hands them out) the local snapshot when it holds more edits than the
 * local one (or there is none, or it is damaged); 1 when it did, 0 when
 * not, else an ERR_*. Before snapshots_load(). on_written: fn(arg, bytes,
 * len, edits, pos) on the loop after each snapshot written (and fsync'd)
 * here, pos being what position(arg, pos, SNAPSHOTS_POS) said at its cut
 * and the file records (position NULL: ""); with want_bytes, bytes
 * (malloc'd, fn's to free()) are the file's, read back on the worker,
 * else NULL.
 */
int snapshots_offer(struct snapshots *s, const uint8_t *buf, size_t len);
typedef void (*snapshots_written_fn)(void *arg, uint8_t *buf, size_t len,
				     uint64_t edits, const char *pos);
typedef void (*snapshots_position_fn)(void *arg, char *pos, size_t cap);
void snapshots_on_written(struct snapshots *s, snapshots_written_fn fn,
			  snapshots_position_fn position, int want_bytes, void *arg);

/*
 * While serving: make every world of the snapshot buf (len bytes) what it
 * holds, whatever the world held (world_rebase(): a node that fell behind
 * a trimmed shared log restarts from the shared snapshot), and keep it as
 * the local snapshot. The caller has ended every reservation. 0, or as
 * snapshots_load() with msg; ld says what was restored.
 */
int snapshots_restore(struct snapshots *s, const uint8_t *buf, size_t len,
		      struct snapshots_loaded *ld, char *msg, size_t msglen);

#endif
