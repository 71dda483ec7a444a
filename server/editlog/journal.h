/*
 * journal.h - the edit log as an interface: the ordered, durable record of
 * every accepted edit batch, behind which a backend keeps the bytes.
 *
 * Every committed batch reaches the world through one path, the follow
 * callback, whoever appended it: at start-up (replay) and after each
 * append. The world is changed only there, so a node that appends and a
 * node that only follows hold the same world. A backend is a short table
 * of operations (struct journal_ops, at the end); the file log
 * (journal_file.c over store.c) is the first and default one, the shared
 * log in Redis (journal_redis.c) the second: there other nodes append
 * too, and the backend hands every record it reads from the log, its own
 * included, to journal_deliver() in log order.
 *
 * Records are common/batch.h's canonical batches. An append names the
 * sequence number it expects its batch to start at; a shared backend
 * decides where the batch goes (the log's order is the order): follow
 * sees it with the sequence numbers it was logged under, and done says
 * which. A backend may also refuse it with ERR_CONFLICT.
 *
 * A batch may carry an idempotency key (common/batch.h). A shared backend
 * logs a keyed batch only when its log does not hold the key yet, deciding
 * in the log's own order (two nodes racing with one key: the first
 * counts); the file backend logs what it is given (its one writer, this
 * node, decides before appending).
 *
 * Errors of an append, and what the caller does:
 *   ERR_BUSY, ERR_AGAIN  transient (a full queue, the log out of reach):
 *                        the batch was not logged and never will be;
 *                        answer 503 with Retry-After
 *   ERR_UNKNOWN          sent, and not confirmed in time (no answer, a
 *                        connection lost mid-command, a replica that did
 *                        not confirm): the batch may be in the log, and then
 *                        is followed like any other. A retry with the same
 *                        key finds out which
 *   ERR_EXISTS           a shared log already held the batch's key: not
 *                        logged again; first_seq is where the batch that
 *                        holds it went, followed before this done
 *   ERR_CONFLICT         the expected sequence is taken: nothing logged
 *   ERR_IO (or other)    the log failed: this append and every one
 *                        pending are not logged; journal_available()
 *                        says so while the backend stays failed (the
 *                        file log probes and recovers by itself once a
 *                        write succeeds, e.g. a full disk with room
 *                        again). journal_failed(): a batch this node
 *                        could not follow, which only a restart ends
 *
 * Loop thread only.
 *
 *	journal_open(&(struct journal_config){ "file", dir }, NULL, loop, follow, world,
 *		     &l, err, sizeof(err));
 *	journal_replay(l, &rs);                  // follow(0) per batch
 *	journal_append(l, &batch, done, req);    // follow(LIVE | OWN), then done
 *	journal_close(l);
 */
#ifndef JOURNAL_H
#define JOURNAL_H

#include <stddef.h>
#include <stdint.h>

struct batch;
struct journal;
struct uv_loop_s;

/* How a batch reaches follow: flags of journal_follow_fn. */
#define JOURNAL_LIVE 1   /* after journal_replay() (0: during it) */
#define JOURNAL_OWN  2   /* this node's own append, whose done comes next */

/*
 * Called with each committed batch in log order (b valid only during the
 * call); flags are JOURNAL_LIVE and JOURNAL_OWN. Return 0, or ERR_NOTFOUND
 * to skip a batch this node cannot apply (a generator it has not loaded;
 * replay only), or another ERR_* to stop the replay (the log is then
 * unusable) or, live, to fail the log.
 */
typedef int (*journal_follow_fn)(void *arg, const struct batch *b, int flags);

/*
 * Called once per accepted append: status 0 once the batch is durable and
 * has been followed, else an ERR_* as above. first_seq is where the batch
 * went when follow has seen it (always when status is 0; also possible
 * with a transient error: logged and applied, but not confirmed), else 0.
 */
typedef void (*journal_done_fn)(void *arg, int status, uint64_t first_seq);

struct journal_stats {
	const char *backend;     /* "file" or "redis" */
	uint64_t records;        /* batches in the log (a shared log: as last
				    seen, this node's head) */
	uint64_t bytes;          /* size of the log (0 when not known) */
	uint64_t commits;        /* durable writes (fdatasync calls, groups) */
	uint64_t last_commit;    /* batches covered by the last commit */
	uint64_t followed;       /* batches followed since open, replay too */
	uint64_t reconnects;     /* connections to a shared log made again */
	uint64_t rtt_us;         /* last round trip to a shared log, us */
	uint64_t restores;       /* a shared log: restores from its snapshot
				    after falling behind its trim */
	uint64_t shared;         /* a shared log: snapshots of this node's it
				    took */
	int down;                /* 0, or ERR_AGAIN while the log is out of
				    reach (edits get 503; it retries) */
	int failed;              /* 0, or the ERR_* that failed the log */
	int broken;              /* failed is for good (a restart mends it),
				    not a failure the backend retries */
	int os_error;            /* the errno behind failed (ENOSPC...), or 0 */
};

struct journal_replay_stats {
	uint64_t records;        /* batches followed */
	uint64_t skipped;        /* of those, skipped (ERR_NOTFOUND) */
	int warning;             /* message is a warning (replay succeeded) */
	char message[512];       /* for the operator: a warning, or why */
};

/*
 * Passwords of a shared log given apart from its spec, so that they stay
 * out of process listings (journal_config_load() reads them from the
 * environment or a file; docs/cluster.md "Credentials"). NULL: not given.
 * A password given both here and in the spec is refused.
 */
struct journal_auth {
	const char *password;           /* the data nodes' (the spec's USER, or
					   Redis's default user) */
	const char *sentinel_password;  /* the Sentinels' (sentinel://) */
};

/*
 * The log's options (journal_options, read by main.c and --help), and the
 * passwords journal_config_load() reads.
 */
struct journal_config {
	const char *spec;      /* --edit-log: "file" (or NULL) is the write-ahead
				  log of store.h in data_dir;
				  "redis://[USER[:PASSWORD]@]HOST:PORT[/DB][?OPTIONS]"
				  or "sentinel://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT...]
				  /MASTER[/DB][?OPTIONS]" the shared log of
				  journal_redis.c (docs/cluster.md) */
	const char *data_dir;  /* --data-dir: the file log's folder (and the
				  snapshots') */
	const char *password_file;          /* --redis-password-file */
	const char *sentinel_password_file; /* --sentinel-password-file */
	char *password;          /* journal_config_load(): from the environment */
	char *sentinel_password; /* or the files, or NULL */
};

struct option;
/* The module's option table (options.h); returns its length. */
size_t journal_options(const struct option **out);

/* Read the passwords: TERRAIN_REDIS_PASSWORD or --redis-password-file's
 * first line, TERRAIN_SENTINEL_PASSWORD or --sentinel-password-file's (both
 * ways for one password: refused). 0, or ERR_* with err saying why. */
int journal_config_load(struct journal_config *c, char *err, size_t errlen);

/* Free what journal_config_load() read. */
void journal_config_free(struct journal_config *c);

/*
 * Open the log cfg names (passwords given apart from the spec are added).
 * identity (may be NULL for the file log) is what every node of a shared
 * log must agree on: the first node records it there, a node with another
 * one is refused. follow(arg, ...) receives every batch. On failure returns
 * ERR_* with the reason in err.
 */
int journal_open(const struct journal_config *cfg, const char *identity,
		 struct uv_loop_s *loop, journal_follow_fn follow, void *arg,
		 struct journal **out, char *err, size_t errlen);

/* Follow every batch in the log, before the first append. Returns 0 or
 * the ERR_* that stopped it, with st->message saying why. */
int journal_replay(struct journal *l, struct journal_replay_stats *st);

/*
 * Log b (b->first_seq: the sequence it expects to start at) and return at
 * once. On 0, done(arg, status) is called exactly once, after the batch
 * went through follow when status is 0. On a negative return (ERR_BUSY,
 * ERR_AGAIN, ERR_IO, ERR_INVAL) done is never called.
 */
int journal_append(struct journal *l, const struct batch *b, journal_done_fn done,
		   void *arg);

/* 0, or the ERR_* that failed the log for good: a committed batch this
 * node could not follow (its world is behind the log until a restart), or
 * a backend failure no retry mends (journal_stats.broken). */
int journal_failed(const struct journal *l);

/* 0 when appends can be tried now; else ERR_AGAIN while a shared log is
 * out of reach (retried by itself), or what journal_failed() says. */
int journal_available(const struct journal *l);

void journal_stats(const struct journal *l, struct journal_stats *st);

/*
 * Compaction below a snapshot (snapshots.h), after the replay and before
 * the first append: drop every batch for which keep(arg, b) returns 0
 * (1 keeps it; a negative ERR_* stops, changing nothing). 0 with *dropped
 * set; ERR_INVAL when the backend cannot compact; else an ERR_* with err
 * saying why.
 */
typedef int (*journal_keep_fn)(void *arg, const struct batch *b);
int journal_compact(struct journal *l, journal_keep_fn keep, void *arg, uint64_t *dropped,
		    char *err, size_t errlen);

/* Batches compacted away from the front of the log: 0 while it holds the
 * whole history. */
uint64_t journal_base(const struct journal *l);

/*
 * A shared log keeps the newest snapshot (snapshots.h) where every node
 * reads it, so that a node starting late or afresh catches up from it plus
 * the log, not from the whole log, and trims the log below the snapshot
 * before it. get, before the replay (blocking): the bytes of the shared
 * snapshot in *buf (free() it), ERR_NOTFOUND when there is none or the
 * backend keeps none, else an ERR_* with err. put (returns at once; buf,
 * malloc'd, becomes the log's): offer the bytes of a snapshot holding
 * `edits` edits, cut at position pos (journal_position()); the log keeps
 * it only when it holds more than the one it has.
 */
int journal_snapshot_get(struct journal *l, uint8_t **buf, size_t *len, char *err,
			 size_t errlen);
void journal_snapshot_put(struct journal *l, uint8_t *buf, size_t len, uint64_t edits,
			  const char *pos);
int journal_shares_snapshots(const struct journal *l);

/*
 * Where the log is: the position after the last batch followed, as text
 * (a shared log's entry id; the file log's count of records from its
 * very first, those compacted away included), for a snapshot cut now
 * (snapshots.h keeps it in the file). Inside follow, the batch being
 * followed counts as followed.
 */
void journal_position(const struct journal *l, char *pos, size_t cap);

/*
 * While serving: drop from the log every batch before pos (a position of
 * journal_position(), the cut of a snapshot written and fsync'd), in the
 * background, appends going on; done(arg, status, dropped, why) on the
 * loop thread when it ended. 0, or ERR_INVAL when the backend cannot (a
 * shared log trims itself), pos holds nothing to drop, or one is running.
 */
typedef void (*journal_compacted_fn)(void *arg, int status, uint64_t dropped, const char *why);
int journal_compact_to(struct journal *l, const char *pos, journal_compacted_fn done, void *arg);

/*
 * Before the replay: the worlds were restored from a snapshot cut at pos
 * ("" or NULL: not said). A shared log then reads on from there, having
 * checked that it still holds pos; 1 when the backend does so (the
 * batches before pos are then never seen, not even to be skipped), else 0.
 */
int journal_start_at(struct journal *l, const char *pos);

/*
 * A shared log trims what lies below its snapshots: a node away longer
 * than that (stopped, cut off) finds that the log no longer holds what
 * follows its worlds. The backend then ends every append in flight
 * (ERR_AGAIN), refuses new ones, fetches the shared snapshot and calls
 * restore(arg, buf, len, msg, msglen), which must make every world the
 * snapshot's (snapshots_restore()): 0, or an ERR_* that fails the log
 * with msg. Then it reads on from the snapshot's position.
 */
typedef int (*journal_restore_fn)(void *arg, const uint8_t *buf, size_t len, char *msg,
				  size_t msglen);
void journal_on_restore(struct journal *l, journal_restore_fn fn, void *arg);

/* How long a shared log keeps a batch's key (idempotency), ms. */
void journal_key_window(struct journal *l, uint64_t ms);

/* Close: every accepted append has had its done callback on return.
 * NULL does nothing. */
void journal_close(struct journal *l);

/* ---- for backends --------------------------------------------------------- */

/* Called by a backend's replay with each record, in order. */
typedef int (*journal_record_fn)(void *arg, const uint8_t *rec, size_t len);

struct journal_ops {
	const char *name;
	/* Hand every record to cb in order; message set as in the stats. */
	int (*replay)(void *be, journal_record_fn cb, void *arg,
		      struct journal_replay_stats *st);
	/* Make rec (a copy is the backend's to keep) durable, then call
	 * done(arg, status) on the loop thread; errors as journal_append.
	 * A shared backend delivers the record (journal_deliver() with own
	 * = arg) before a done of 0. */
	int (*append)(void *be, const uint8_t *rec, size_t len, uint64_t first_seq,
		      void (*done)(void *arg, int status), void *arg);
	void (*stats)(void *be, struct journal_stats *st);
	void (*close)(void *be);
	/* Optional (NULL: cannot compact): as journal_compact() over records. */
	int (*compact)(void *be, journal_record_fn keep, void *arg, uint64_t *dropped,
		       char *err, size_t errlen);
	uint64_t (*base)(void *be);
	/* Optional (NULL: snapshots stay local): the shared snapshot, as
	 * journal_snapshot_get() and journal_snapshot_put(). */
	int (*snapshot_get)(void *be, uint8_t **buf, size_t *len, char *err, size_t errlen);
	void (*snapshot_put)(void *be, uint8_t *buf, size_t len, uint64_t edits,
			     const char *pos);
	/* Optional (NULL: no positions of its own, journal.c counts records):
	 * journal_position(), journal_start_at(). */
	void (*position)(void *be, char *pos, size_t cap);
	int (*start_at)(void *be, const char *pos);
	/* Optional (NULL: cannot): drop the first n records while serving, as
	 * journal_compact_to() (the file backend: store_compact_live()). */
	int (*compact_live)(void *be, uint64_t n, journal_compacted_fn done, void *arg);
	/* Optional (NULL: the backend keeps no keys): journal_key_window(). */
	void (*key_window)(void *be, uint64_t ms);
};

/*
 * A shared backend hands each record it reads from the log after the
 * replay here, in log order, whoever appended it: own is the arg of this
 * node's append that logged it, else NULL. Follows it; returns 0, or the
 * ERR_* that failed the log (the backend then stops reading).
 */
int journal_deliver(struct journal *l, const uint8_t *rec, size_t len, void *own);

/* A shared backend found the key of its append own in the log: first is
 * where the batch holding it went; the append's done follows, with
 * ERR_EXISTS, once that batch was delivered. */
void journal_existing(void *own, uint64_t first);

/* A shared backend behind its trimmed log hands the shared snapshot here
 * (journal_on_restore()): 0 once the worlds are its, else the ERR_* that
 * failed the log (msg says why). */
int journal_restore(struct journal *l, const uint8_t *buf, size_t len, char *msg,
		    size_t msglen);

/* The file backend (journal_file.c). */
int journal_file_open(const char *dir, struct uv_loop_s *loop,
		      const struct journal_ops **ops, void **be, char *err,
		      size_t errlen);

/* The Redis backend (journal_redis.c): spec and auth as journal_open();
 * l is where it delivers records. */
int journal_redis_open(const char *spec, const struct journal_auth *auth,
		       const char *identity, struct uv_loop_s *loop, struct journal *l,
		       const struct journal_ops **ops, void **be, char *err, size_t errlen);

#endif
