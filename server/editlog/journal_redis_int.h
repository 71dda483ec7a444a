/*
 * journal_redis_int.h - what the files of the shared edit log in Redis
 * share: journal_redis.c (appends, the tail, the backend's operations),
 * journal_redis_start.c (the spec and credentials, the start-up),
 * journal_redis_primary.c (the connection to the primary, the replies
 * the files read) and journal_redis_snap.c (the shared snapshot, the
 * trim, the restore of a node behind it). Not an interface: journal.h is.
 */
#ifndef JOURNAL_REDIS_INT_H
#define JOURNAL_REDIS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "journal.h"
#include "redis_conn.h"

struct redisReply;
struct rsnap_get;
struct rsnap_put;
struct uv_check_s;
struct uv_timer_s;

#define KEY_LOG      "terrain:log"
#define KEY_HEADS    "terrain:heads"
#define KEY_IDENTITY "terrain:identity"
#define KEY_META     "terrain:snapshot:meta"   /* the shared snapshot: what and where */
#define KEY_SNAP_PFX "terrain:snapshot:"       /* + node:n: its chunks (a hash) */
#define KEY_SNAP_LOCK "terrain:snapshot:lock"  /* the node sending one now */
/* Bytes per chunk of a shared snapshot: with Redis's string header and
 * the trailing CRLF of its query buffer, jemalloc's 256 KiB size class
 * (a chunk of 256 KiB, as builds before wrote and meta without csize
 * means, takes the 320 KiB class: a snapshot cost Redis 5/4 of itself). */
#define SNAP_CHUNK    ((256u << 10) - 64)
#define SNAP_CHUNK_V1 (256u << 10)
#define SNAP_WINDOW  4              /* chunks asked for at once when fetching */
#define SNAP_TTL_S   600            /* a snapshot being sent, left by a crash */
#define MAX_HOSTS    8
#define MAX_REPLICAS 8
#define PAGE         4096           /* entries per XRANGE / XREAD */
#define BLOCK_MS     1000           /* XREAD BLOCK */
#define STR(x)       STR_(x)
#define STR_(x)      #x
#define BEAT_MS      500            /* heartbeat: ROLE, XLEN */
#define START_WAIT_S 30             /* start-up: wait for Redis this long */
#define MAX_QUEUED   (16u << 20)    /* bytes of appends not yet done */
#define CALL_MAX     256            /* appends per script call */
#define KEY_PFX      "terrain:key:"  /* + world ":" + key: a batch's idempotency key */

struct addr {
	char host[256];
	int port;
};

/* Who a connection logs in as: AUTH [user] password, when pass is set. */
struct cred {
	char user[128];                  /* "": Redis's default user */
	char pass[256];                  /* "" with has_pass 0: no AUTH */
	int has_pass;
};

/* One append, from journal_append() to its done. */
struct rappend {
	struct rappend *prev, *next;     /* the log's list, in order */
	struct rlog *g;
	void (*done)(void *arg, int status);
	void *arg;
	uint64_t tag, deadline, group;   /* group: 0 until sent */
	int in_cmd;                      /* its script's reply is due */
	int logged, acked, followed, orphan;
	int exists;                      /* the log held its key: */
	char held_by[48];                /* the entry that holds it */
	char world[300];                 /* the script's arguments */
	char origin[40], count[8];
	char key[2 * 16 + 1];            /* its key in hex; "": none */
	size_t len;
	uint8_t rec[];
};

/* An entry the tail read, held until ROLE says a replica read it. */
struct held {
	char id[48];
	char tag[48];                    /* "" when none */
	size_t len;
	uint8_t *rec;
};

struct rlog {
	struct uv_loop_s *loop;
	struct journal *l;
	char name[512];                  /* the spec without options, USER:***@ */
	int sentinel;                    /* hosts are Sentinels */
	struct addr hosts[MAX_HOSTS];
	size_t nhosts, next_host, tail_next;
	char master_name[128];
	struct cred data, sent_cred;     /* the data nodes', the Sentinels' */
	int fatal;                       /* start-up: an answer no wait mends
					    (credentials, permissions) */
	int db, replicas;                /* WAIT replicas; 0: none */
	int replicas_all;                /* ?replicas=all: WAIT for every
					    replica the primary lists */
	int wait_want;                   /* what the WAIT in flight asks */
	unsigned timeout_ms;
	uint64_t key_ttl_ms;             /* how long the log keeps a key */
	char *identity;
	char node[17];                   /* this process, in origin tags */
	char sha[48];

	struct redis_conn cmd, tail, sent;   /* primary, tail, a Sentinel */
	struct redis_conn snapc;             /* the primary, for snapshots */
	struct addr master, tail_at;
	struct addr replica[MAX_REPLICAS];   /* online, from ROLE */
	size_t nreplica;
	int cmd_ready, tail_ready, waiting, beat_due, stopped;
	int cmd_said, tail_said, wait_said;  /* an outage was reported */
	int closing;
	char last_id[48];                /* last entry followed */
	char read_from[48];              /* last_id of the read in flight */
	int tail_reading;                /* a read is in flight on the tail */
	int check_ok;                    /* its check: the log still holds it */
	int check_full, read_full;       /* the next read's check is full (a new
					    connection); the one in flight's */
	int behind;                      /* the log was trimmed past last_id:
					    restoring from the shared snapshot */
	char restored_at[48];            /* the snapshot's position restored from,
					    until a read from it succeeds */
	int started_at;                  /* the replay read on from a snapshot's
					    position (journal_start_at()) */
	int trimmed;                     /* the log has been trimmed (start-up) */
	char snap_sha[48];               /* the snapshot commit script, snapc */
	struct rsnap_put *put, *put_next;    /* being sent, waiting to be */
	struct rsnap_get *get;               /* being fetched (behind) */
	struct uv_timer_s *snap_timer;       /* the next try of a fetch */
	struct uv_timer_s *put_timer;        /* the next try of a snapshot sent */
	uint64_t puts, put_seq, restores;
	struct held *held;               /* read, waiting for the tail's ROLE */
	size_t nheld, capheld;

	struct rappend *head, *end, *unsent;
	size_t queued;                   /* bytes */
	uint64_t tags, group, commits, last_commit, entries, log_len, rtt_us;
	uint64_t beat_sent;              /* uv_hrtime() of the heartbeat's ROLE */
	struct uv_check_s *flush;
	struct uv_timer_s *expiry, *beat;
	/* send_call()'s arguments, here rather than two 10 KB allocations per
	 * call (each made glibc consolidate its fast bins: 1-2% of a node) */
	const char *argv[6 + 5 * CALL_MAX];
	size_t lens[6 + 5 * CALL_MAX];
};

/* ---- journal_redis_start.c ------------------------------------------------------ */

/* Parse spec (journal.h) and auth (may be NULL) into g; ERR_INVAL with
 * the reason in err. */
int journal_redis__parse_spec(struct rlog *g, const char *spec, const struct journal_auth *auth,
			      char *err, size_t errlen);

/* An error reply that waiting does not mend: wrong or missing
 * credentials, a command the user may not run. */
int journal_redis__auth_error(const char *reply);

/* The backend's replay (journal_ops): blocking; starts the live
 * connections when it succeeds. */
int journal_redis__replay(void *be, journal_record_fn cb, void *arg,
			  struct journal_replay_stats *st);

/* The shared snapshot (journal_ops): get blocks, before the replay. */
int journal_redis__snapshot_get(void *be, uint8_t **buf, size_t *len, char *err,
				size_t errlen);

/* ---- journal_redis_primary.c ---------------------------------------------------- */

/* Send AUTH (when cr has a password) on c, fn answered with arg "AUTH";
 * then SELECT db unless db < 0, answered with "SELECT". First on a new
 * connection. */
void journal_redis__hello(struct redis_conn *c, const struct cred *cr, int db,
			  redis_reply_fn fn);

/* Connect to the primary (asking a Sentinel first for sentinel://); a
 * redis_conn retry function. */
void journal_redis__connect(struct redis_conn *c);

/* The down callbacks of the primary's and the Sentinel's connections. */
void journal_redis__primary_down(struct redis_conn *c, const char *why);
void journal_redis__sentinel_down(struct redis_conn *c, const char *why);

/* The heartbeat timer's callback, and one heartbeat now. */
void journal_redis__beat(struct uv_timer_s *t);
void journal_redis__send_beat(struct rlog *g);

/* Entry [id, [field, value, ...]] of a stream: its id, r (its first
 * sequence number written in from s) and o (NULL when missing). 0 or
 * ERR_CORRUPT. */
int journal_redis__entry_fields(struct redisReply *e, const char **id,
				const struct redisReply **rec, const struct redisReply **tag);

/* ROLE: whether the server is a primary; its online replicas into g. */
int journal_redis__role_master(struct rlog *g, const struct redisReply *r);

int journal_redis__same_addr(const struct addr *a, const struct addr *b);

/* Where the tail reads, or NULL while nowhere (see the definition). */
const struct addr *journal_redis__tail_target(const struct rlog *g);

/* ---- the shared snapshot (journal_redis_snap.c) ------------------------------- */

/* What terrain:snapshot:meta says of the shared snapshot. */
struct snap_meta {
	uint64_t edits, bytes, sum;      /* sum: XXH3-64 of the bytes */
	size_t chunks;                   /* fields 0..chunks-1 of key */
	size_t csize;                    /* bytes in each but the last */
	char id[48];                     /* the log's position at its cut */
	char key[160];                   /* the hash of its chunks */
};

/* The HMGET of meta that journal_redis__meta() reads. */
extern const char *const journal_redis__meta_argv[];
#define META_ARGC 9

/* Parse that HMGET's answer: 0, ERR_NOTFOUND (no shared snapshot) or
 * ERR_CORRUPT. */
int journal_redis__meta(const struct redisReply *r, struct snap_meta *m);

/*
 * The check behind every read of the log from id (exclusive): with full,
 * that the log still holds id (XRANGE id id: nothing after it was trimmed
 * or lost in a failover); else that it was not trimmed past id (HGET meta
 * trim, compared: a third of the cost, enough once a full check passed on
 * the connection, since only a failover, which breaks it, loses entries);
 * for "0-0" that it was never trimmed. argv/lens get its argc words (at
 * most 4); check_ok says whether the answer r passes.
 */
int journal_redis__check_cmd(const char *id, int full, const char **argv, size_t *lens);
int journal_redis__check_ok(const char *id, int full, const struct redisReply *r);

/* The backend's snapshot_put (journal_ops). */
void journal_redis__snapshot_put(void *be, uint8_t *buf, size_t len, uint64_t edits,
				 const char *pos);

/* The tail found the log trimmed past last_id: end the appends in
 * flight, fetch the shared snapshot, restore, read on. */
void journal_redis__fell_behind(struct rlog *g);

/* The snapshot connection's down callback; free what transfers hold. */
void journal_redis__snapc_down(struct redis_conn *c, const char *why);
void journal_redis__snap_release(struct rlog *g);

/* ---- journal_redis.c ------------------------------------------------------------- */

/* Read the log on the tail from last_id, when it can (see the file). */
void journal_redis__tail_read(struct rlog *g);

/* End every append (ERR_AGAIN): a restore is coming. */
void journal_redis__fail_all(struct rlog *g);

/* Start the live connections and the heartbeat (after the replay). */
void journal_redis__start_live(struct rlog *g);

/* The primary is gone: appends not yet sent fail now (ERR_AGAIN). */
void journal_redis__fail_unsent(struct rlog *g);

#endif
