/*
 * store_int.h - what the files of the store share: store.c (file format,
 * group commit, open and close), store_replay.c (replay, torn tails,
 * repair), store_snap.c and store_compact.c. Not for
 * other modules: their interface is store.h.
 */
#ifndef STORE_INT_H
#define STORE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "store.h"
#include "util.h"

/* Replay reads this much at a time (allows unit tests to override). */
#ifndef READ_BUF_SIZE
#define READ_BUF_SIZE ((size_t)4 << 20)
#endif
_Static_assert(READ_BUF_SIZE >= STORE_REC_HEADER + STORE_RECORD_MAX, "read buffer");

/* The "WR" half of the record word; the upper half is the version "01". */
#define REC_MAGIC_MASK 0xffffu


struct buf {
	uint8_t *p;
	size_t len, cap;
};

/* One accepted append waiting for its callback. */
struct waiter {
	struct waiter *next;
	store_done_fn done;
	void *arg;
	int status;
};

struct wlist {
	struct waiter *head, *tail;
	uint64_t n;
};

/* The libuv handles of a store, freed together once all are closed. */
struct hub {
	uv_async_t async;        /* writer -> loop: commits have finished */
	uv_check_t check;        /* after poll: kick the iteration's appends */
	uv_idle_t idle;          /* active while a kick is due: poll won't block */
	struct store *s;         /* NULL once the store is closed */
	int open;                /* handles not yet closed */
};

struct store {
	char *dir;
	char *path;              /* dir/edits.log */
	int fd;
	struct hub *hub;         /* NULL: replay only */
	uv_thread_t writer;
	int has_writer;
	int has_sync;            /* mu and wake are initialised */
	size_t max_queued;
	uint64_t base;           /* records compacted away (file header) */
	/* loop thread only */
	int replayed;            /* the last replay returned 0 */
	int closing;             /* store_close() has begun */
	int kick_due;            /* appends queued since the last kick */
	uint64_t outstanding;    /* accepted appends whose callback has not run */
	/* writer thread only (swapped under mu) */
	struct buf flight;
	struct wlist flying;
	/* guarded by mu */
	uv_mutex_t mu;
	uv_cond_t wake;          /* the writer waits here for work or stop */
	struct buf queue;        /* framed records of the next commit */
	struct wlist queued;     /* their waiters, in order */
	struct wlist done;       /* finished waiters for the loop thread */
	uint64_t end;            /* file offset of the next commit */
	int kicked;              /* the writer may commit the queue */
	int stop;                /* the writer exits once the queue is empty */
	struct store_stats stats;
	/* live compaction (store_compact.c) */
	struct store_compaction *compaction; /* running (loop thread), or NULL */
	struct store_compaction *swap;   /* under mu: handed to the writer */
	int compact_busy;                /* under mu: its worker has not ended */
	uv_cond_t swapped;               /* the worker and store_close() wait here */
	/* after a failed commit (stats.failed): the writer probes */
	uint64_t probe_at;       /* uv_hrtime() of the next probe */
	uint64_t probe_wait_ms;  /* the backoff: doubles to PROBE_MAX_MS */
	uint64_t failed_at;      /* uv_hrtime() of the failure */
	size_t probe_len;        /* bytes a probe writes: the failed commit's */
	unsigned probes;         /* probes that failed since */
};


int store__fail(char *err, size_t errlen, int code, const char *fmt, ...);
char *store__join(const char *dir, const char *name);
int store__pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off);
ssize_t store__pread_all(int fd, uint8_t *p, size_t n, uint64_t off);
int store__fsync_dir(const char *dir);
int store__make_dirs(const char *dir, char *err, size_t errlen);
void store__file_header(uint8_t h[STORE_FILE_HEADER]);
void store__file_header_base(uint8_t h[STORE_FILE_HEADER], uint64_t base);
int store__check_file_header(const uint8_t h[STORE_FILE_HEADER], const char *path, char *err, size_t errlen);
int store__read_file_header(int fd, const char *path, char *err, size_t errlen);
int store__zeros(const uint8_t *p, size_t n);
int store__prepare_header(struct store *s, char *err, size_t errlen);
uint64_t store__rec_sum(const uint8_t *len_and_payload, uint32_t len);

/* store_compact.c: the writer takes a compacted file between commits (mu
 * held), or cancels it at close or after a failed write; store_close()
 * waits for the worker. */
void store__swap(struct store *s);
void store__swap_cancel(struct store *s);
void store__compact_close(struct store *s);

#endif
