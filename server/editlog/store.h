/*
 * store.h - the write-ahead log of edit batches: the only module that
 * touches disk.
 *
 * A store is one directory (--data-dir) holding one append-only file,
 * edits.log, locked with flock() so that two servers cannot share it.
 * Records are opaque byte strings: the store frames them (magic, length,
 * XXH3-64 checksum), appends them with group commit and hands them back in
 * order at start-up. What a record means is the caller's business (the
 * server logs common/batch.h's records); the store never looks inside.
 * The file format and the recovery procedure are in docs/edit-log.md.
 *
 * Durability guarantee: when an append's done callback runs with status 0,
 * the record, and every record appended before it, has been written and
 * fdatasync()'d; it survives kill -9 and power loss (given a disk that
 * honours flushes). Nothing is acknowledged before that. A record whose
 * callback got an error, or never ran because the process died, may or may
 * not be in the log after a restart.
 *
 * Life cycle, all on the loop thread:
 *
 *	store_open(dir, loop, NULL, &s, err, sizeof(err));
 *	store_replay(s, apply_cb, world, &rs);   // before any append
 *	store_append(s, rec, len, done_cb, req); // many, concurrently
 *	store_close(s);                          // commits what is queued
 *
 * Group commit: appends queue in memory; at the end of each loop
 * iteration (a uv_check_t) one writer thread takes everything queued and
 * writes it with one pwrite() and one fdatasync(), then the loop thread
 * calls each callback of that commit. So one commit covers every append of
 * a loop iteration, and appends that arrive while a commit is in flight
 * all go into the next one. After a failed write or fsync the store is
 * failed (see store_append) and the server answers 503 until the writer's
 * probe, retried with backoff, finds that writes succeed again (a disk
 * that was full has room again); then appends resume by themselves.
 */
#ifndef STORE_H
#define STORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct store;
struct uv_loop_s;

/* Name of the log inside the data directory. */
#define STORE_LOG_NAME "edits.log"

/* File header: magic "TWAL" (0x4c415754 as a little-endian u32), version. */
#define STORE_FILE_MAGIC   0x4c415754u
#define STORE_FILE_VERSION 1
#define STORE_FILE_HEADER  32   /* bytes; records start here */

/* Record header: magic/version word "WR01", u32 length, u64 checksum. */
#define STORE_REC_MAGIC  0x31305257u
#define STORE_REC_HEADER 16

/* Largest payload of one record (a full edit batch is about 11 KiB). */
#define STORE_RECORD_MAX (1u << 20)

/* Default bound on bytes queued for the next commit (16 MiB). */
#define STORE_QUEUE_DEFAULT ((size_t)16 << 20)

struct store_options {
	/*
	 * Bound on the framed bytes waiting for the next commit; beyond it
	 * store_append() returns ERR_BUSY at once. 0 means
	 * STORE_QUEUE_DEFAULT. It must be at least one largest record
	 * (STORE_REC_HEADER + STORE_RECORD_MAX) or it is raised to that.
	 */
	size_t max_queued_bytes;
};

/* Counters and gauges for /metrics (store_stats()). */
struct store_stats {
	uint64_t records;      /* records in the log: replayed + committed */
	uint64_t bytes;        /* size of the log file, headers included */
	uint64_t commits;      /* group commits, i.e. fdatasync() calls */
	uint64_t appends;      /* appends accepted since open */
	uint64_t rejected;     /* appends refused with ERR_BUSY (queue full) */
	uint64_t last_batch;   /* records covered by the last commit */
	uint64_t max_batch;    /* most records one commit has covered */
	size_t queued_bytes;   /* framed bytes waiting for the next commit */
	uint64_t failures;     /* commits that failed (write or fdatasync) */
	uint64_t recoveries;   /* probes that ended such a failure */
	int failed;            /* 0, or ERR_IO while a failed commit is
				  unrecovered (the writer probes) */
	int broken;            /* failed for good: a live compaction's rename
				  happened but its fsync failed; no probe can
				  tell what the directory holds (restart) */
	int os_error;          /* the errno behind failed (ENOSPC...), or 0 */
};

/* What store_replay() found. */
struct store_replay_stats {
	uint64_t records;      /* records handed to the callback */
	uint64_t bytes;        /* payload bytes handed to the callback */
	uint64_t end;          /* offset of the end of the last good record */
	uint64_t torn_offset;  /* where a dropped torn tail began, else 0 */
	uint64_t torn_bytes;   /* bytes dropped from the tail (and saved in
				  edits.log.torn-OFFSET), else 0 */
	uint64_t bad_offset;   /* ERR_CORRUPT: offset of the bad record */
	/*
	 * A line for the operator, "" when there is nothing to say: the
	 * warning "dropped torn tail record at offset N (M bytes, ...)"
	 * naming the file the bytes were saved in, or the reason replay
	 * failed, naming the offset and the recovery command.
	 */
	char message[512];
};

/*
 * Called by store_replay() with each record's payload (valid only during
 * the call), in log order. Return 0 to go on, or a negative ERR_* to stop:
 * store_replay() then returns that code.
 */
typedef int (*store_replay_fn)(void *arg, const uint8_t *payload, size_t len);

/*
 * Called on the loop thread once per accepted append: status 0 when the
 * record is durable, or a negative ERR_* (ERR_IO) when it may not be.
 */
typedef void (*store_done_fn)(void *arg, int status);

/*
 * Open the store in dir: create dir (mode 0750) and dir/edits.log when
 * missing (writing and fsyncing the file header and the directory), take
 * an exclusive flock() on the log and check its file header. loop is the
 * libuv loop whose thread will call store_append() and receive the done
 * callbacks; NULL opens the store for replay only (appends then fail with
 * ERR_INVAL). opts may be NULL for the defaults. On success *out is a new
 * store (store_close()). On failure returns ERR_INVAL (bad argument),
 * ERR_BUSY (another process holds the directory), ERR_IO (a system call
 * failed), ERR_MAGIC (edits.log is "not an edit log": a wrong magic, or a
 * short file that is neither a header prefix nor zeros), ERR_CORRUPT (also
 * "not an edit log": a damaged file header, its checksum wrong),
 * ERR_VERSION (a valid header of a newer format or unknown flags) or
 * ERR_NOMEM, with a message naming the path and what to do in err (errlen
 * bytes). A file no longer than a header that holds a header prefix or
 * only zeros is a creation cut short by a crash and is written again.
 */
int store_open(const char *dir, struct uv_loop_s *loop,
	       const struct store_options *opts, struct store **out, char *err,
	       size_t errlen);

/*
 * Read every record in order and pass each payload to cb(arg, ...). Reads
 * in large blocks (1,000,000 small records take well under a second).
 * Must run before the first append, and otherwise only while no append is
 * outstanding (else ERR_BUSY). st may be NULL.
 *
 * A torn write - a record cut short at the end of the file, as a crash in
 * the middle of a commit leaves it - is dropped: the file ends inside the
 * record's header or before its stated length (and the bytes there are
 * not a complete record with a damaged length field), or everything from
 * the record on is zero (a file system may extend a file by a crash
 * without writing its new blocks), and no valid record starts anywhere
 * after it. It can hold an acknowledged edit only if the disk lost a
 * write it had completed, since an append is acknowledged only after its
 * fdatasync(). Its bytes are first copied to
 * dir/edits.log.torn-OFFSET (.torn-OFFSET.N if that exists; fsync'd with
 * the directory), then the file is truncated to the end of the last good
 * record and fsync'd; st->torn_offset and st->torn_bytes say what was
 * cut, and st->message warns, naming the saved file ("warning: PATH:
 * dropped torn tail record at offset N (M bytes, WHY): the tail is not a
 * complete record, so it was kept aside in FILE; it was acknowledged only
 * if the disk lost a write it had completed ..."); the return value is
 * still 0.
 *
 * Any other bad record - a full-length record with a bad checksum, magic
 * or length, the last one included, or bytes after the last record that
 * are no record cut short - may hold acknowledged edits: returns
 * ERR_CORRUPT, leaves the file untouched, sets st->bad_offset and names in
 * st->message the offset and the recovery command (terrain-server
 * repair-log --data-dir DIR --truncate-at OFFSET, store_truncate()). A
 * record of a newer record version gives ERR_VERSION. ERR_IO on a read,
 * save or truncate error. On any error cb may have seen a prefix of the
 * log: discard what it built.
 * Appends are allowed only after a replay that returned 0.
 */
int store_replay(struct store *s, store_replay_fn cb, void *arg,
		 struct store_replay_stats *st);

/*
 * Queue a copy of payload (1..STORE_RECORD_MAX bytes) for the next group
 * commit and return at once. Loop thread only. On 0, done(arg, status)
 * will be called exactly once on the loop thread: with 0 only after the
 * record and everything before it has been fdatasync()'d, or with ERR_IO.
 * On a negative return done is never called:
 *   ERR_INVAL  bad argument, no loop, or store_replay() has not succeeded
 *   ERR_BUSY   the queue is full (max_queued_bytes): retry later (503)
 *   ERR_IO     the store has failed (below); restart the server
 *
 * If a write or fdatasync() fails, every append of that commit and every
 * append queued behind it gets ERR_IO, none of them acknowledged, and the
 * store refuses later appends with ERR_IO (stats.failed) until it has
 * recovered. Retrying the failed commit is not safe: after a failed fsync
 * Linux may already have marked the dirty pages clean and dropped them,
 * so a second fsync can succeed without the data being on disk, and a
 * short write would leave a partial record in the middle of later ones.
 * So the commit is not retried: the writer probes with backoff (100 ms,
 * doubling to 5 s), cutting the file back to its last acknowledged record
 * and writing, syncing and cutting a block of zeros the failed commit's
 * size. Once a probe succeeds the file holds exactly the acknowledged
 * records, stats.failed is 0 again and appends are taken as before (the
 * failed ones are the clients' to send again; they got 503). A crash
 * before that replays what really is on disk: a partial record there is
 * a torn tail; complete records of the failed commit may be replayed, as
 * for any append whose callback got an error. Set SIGXFSZ to SIG_IGN (the
 * server does) so that a file-size limit makes the write fail with EFBIG
 * instead of killing the process.
 */
int store_append(struct store *s, const void *payload, size_t len,
		 store_done_fn done, void *arg);

/* Counters for /metrics into *out. Any thread; cheap (takes a mutex). */
void store_stats(struct store *s, struct store_stats *out);

/*
 * Close the store, on the loop thread. Blocks until the writer has
 * committed everything already accepted (the commit in flight and the
 * queued ones), then runs the remaining done callbacks from inside this
 * call, so every accepted append has had its callback when it returns.
 * Closes the file, which releases the lock, and frees the store. A small
 * libuv handle is freed by the loop later, so run the loop once more
 * before uv_loop_close(). NULL does nothing. Do not call it from a done
 * callback.
 */
void store_close(struct store *s);

/*
 * Recovery after ERR_CORRUPT, for a human who has decided to lose what
 * follows: cut dir/edits.log at offset, keeping every record before it.
 * offset must be the end of a valid record (or STORE_FILE_HEADER), as
 * reported in store_replay_stats.bad_offset. The bytes cut are first
 * saved to dir/edits.log.cut-OFFSET (fsync'd) so that nothing is
 * destroyed. Takes the directory lock, so it fails with ERR_BUSY while a
 * server runs. The CLI is `terrain-server repair-log --data-dir DIR
 * --truncate-at OFFSET`. Returns 0 or ERR_INVAL (offset is not a record
 * boundary or is past the end), ERR_BUSY, ERR_IO, ERR_MAGIC,
 * ERR_VERSION, ERR_CORRUPT, with a message in err. *kept (may be NULL)
 * gets the number of records kept.
 */
int store_truncate(const char *dir, uint64_t offset, uint64_t *kept, char *err,
		   size_t errlen);

/* ---- snapshots and compaction (store_snap.c) ------------------------------ */

/* Name of the snapshot inside the data directory (server/worlds/snapshots.h). */
#define STORE_SNAP_NAME "snapshot"

struct store_snap;

/*
 * Write a snapshot: begin (DIR/snapshot.tmp), write its bytes in pieces,
 * then commit (a checksum trailer, fsync, rename over DIR/snapshot, fsync
 * of the directory; *bytes gets the file size) or abort (remove the
 * temporary file). Any one thread at a time. begin: 0, ERR_NOMEM or
 * ERR_IO; write and commit: 0 or ERR_IO (errno says why; the writer is
 * freed by commit either way).
 */
int store_snap_begin(const char *dir, struct store_snap **out);
int store_snap_write(struct store_snap *w, const void *p, size_t n);
int store_snap_commit(struct store_snap *w, uint64_t *bytes);
void store_snap_abort(struct store_snap *w);

/* Read DIR/snapshot whole and check its trailer: *out (free() it) holds
 * the *len bytes written. ERR_NOTFOUND when there is none, ERR_CORRUPT
 * (damaged or cut), ERR_IO, ERR_NOMEM; err says which file and why. */
int store_snap_read(const char *dir, uint8_t **out, size_t *len, char *err, size_t errlen);

/* Records compacted away from the front of the log (0: it holds the
 * whole history). */
uint64_t store_base(const struct store *s);

/*
 * Rewrite the log keeping only the records for which keep(arg, payload,
 * len) returns 1 (0 drops it, a negative ERR_* stops and changes
 * nothing), in order, adding the dropped ones to the header's base. After
 * a replay that returned 0 and before any append. Crash-safe: the old log
 * stays whole until the new one is fsync'd and renamed over it. 0 with
 * *dropped set, or ERR_INVAL, ERR_IO, ERR_NOMEM with a message in err.
 */
int store_compact(struct store *s, store_replay_fn keep, void *arg, uint64_t *dropped,
		  char *err, size_t errlen);

/*
 * Compact while serving: drop the first n records of the log (a snapshot
 * the caller wrote and fsync'd holds them) and return at once. A worker
 * copies the rest into a new file while appends go on; the writer thread
 * takes it between two commits (the next commit waits for the last few
 * committed bytes to be copied, the rename and an fsync of the
 * directory). A crash leaves the whole old log or the whole new one.
 * done(arg, status, dropped, why) comes on the loop thread: 0 with the
 * records dropped, or an ERR_* (why says what) with the log unchanged,
 * except ERR_IO after the rename, which fails the store as a failed
 * fsync does. 0, or ERR_INVAL (no loop, not replayed, closing, one is
 * running, n is 0 or more than the log holds), ERR_NOMEM, the store's
 * failure. store_close() waits for a running one (its done never comes).
 */
typedef void (*store_compacted_fn)(void *arg, int status, uint64_t dropped, const char *why);
int store_compact_live(struct store *s, uint64_t n, store_compacted_fn done, void *arg);

#endif
