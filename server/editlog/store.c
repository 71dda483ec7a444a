/*
 * store.c - the write-ahead log: file format, replay and recovery, and
 * group commit on a writer thread (see store.h, docs/edit-log.md).
 *
 * Threads: the loop thread calls everything public; one writer thread per
 * store does the write and the fdatasync(). They share the queue under
 * s->mu: the loop thread frames records into s->queue, and at the end of
 * the loop iteration (a uv_check_t) kicks the writer, so that one commit
 * covers every append of an iteration, as Redis fsyncs in beforeSleep().
 * The writer swaps the queue with its own buffer, writes it at s->end
 * with one pwrite() and one fdatasync(), moves the commit's waiters to
 * s->done and wakes the loop with a uv_async_t, whose callback runs them.
 * Appends made while a commit is in flight are kicked too and wait for it
 * to end. Replay and repair are plain blocking reads on the calling
 * thread, done before serving.
 */
#include "store.h"
#include "store_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>
#include <xxhash.h>

#include "err.h"
#include "le.h"


/* ---- small helpers ---- */





__attribute__((format(printf, 4, 5)))
int store__fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

char *store__join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Returns 0 or an errno. */
int store__pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* Bytes read (short only at the end of the file), or -1 with errno. */
ssize_t store__pread_all(int fd, uint8_t *p, size_t n, uint64_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, p + got, n - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* Returns 0 or an errno. */
int store__fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return errno;
	if (fsync(fd))
		rc = errno;
	close(fd);
	return rc;
}

/* mkdir -p with mode 0750, fsyncing the parent of each directory made. */
int store__make_dirs(const char *dir, char *err, size_t errlen)
{
	size_t n = strlen(dir);
	char *p = malloc(n + 1);
	int rc = 0;

	if (!p)
		return ERR_NOMEM;
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n && !rc; i++) {
		struct stat st;
		char *slash;

		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0750) == 0) {
			slash = strrchr(p, '/');
			if (slash == p)
				rc = store__fsync_dir("/");
			else if (slash) {
				*slash = '\0';
				rc = store__fsync_dir(p);
				*slash = '/';
			} else
				rc = store__fsync_dir(".");
			if (rc)
				rc = store__fail(err, errlen, ERR_IO, "fsync parent of %s: %s", p,
					  strerror(rc));
		} else if (errno != EEXIST)
			rc = store__fail(err, errlen, ERR_IO, "mkdir %s: %s", p, strerror(errno));
		else if (stat(p, &st) || !S_ISDIR(st.st_mode))
			rc = store__fail(err, errlen, ERR_IO, "%s: not a directory", p);
		p[i] = i < n ? '/' : '\0';
	}
	free(p);
	return rc;
}

/* ---- file format ---- */

/*
 * File header, 32 bytes: u32 magic "TWAL", u32 version, u64 base (records
 * compacted away below a snapshot, store_compact(); 0 in a log that holds
 * its whole history), u64 flags (0), u64 XXH3-64 of the 24 bytes before it.
 */
void store__file_header_base(uint8_t h[STORE_FILE_HEADER], uint64_t base)
{
	memset(h, 0, STORE_FILE_HEADER);
	le_put32(h, STORE_FILE_MAGIC);
	le_put32(h + 4, STORE_FILE_VERSION);
	le_put64(h + 8, base);
	le_put64(h + 24, XXH3_64bits(h, 24));
}

void store__file_header(uint8_t h[STORE_FILE_HEADER])
{
	store__file_header_base(h, 0);
}

/*
 * What to do about a file that is not an edit log, appended to the refusal.
 * A version 1 header is the same 32 bytes in every log, so a damaged one
 * can be written again (docs/edit-log.md, "A damaged file header").
 */
#define NOT_A_LOG_HINT \
	"; if it is an edit log with a damaged header, see docs/edit-log.md" \
	" (\"A damaged file header\"); otherwise move it aside to start with an" \
	" empty log"

/*
 * Magic, then the checksum, then the version: every format version keeps
 * the magic at 0, the version at 4 and the XXH3 of bytes 0..23 at 24, so a
 * damaged header is told apart from a newer one (docs/edit-log.md).
 */
int store__check_file_header(const uint8_t h[STORE_FILE_HEADER], const char *path,
			     char *err, size_t errlen)
{
	if (le_get32(h) != STORE_FILE_MAGIC)
		return store__fail(err, errlen, ERR_MAGIC,
			    "%s: not an edit log (bad magic 0x%08x)" NOT_A_LOG_HINT, path,
			    le_get32(h));
	if (le_get64(h + 24) != XXH3_64bits(h, 24))
		return store__fail(err, errlen, ERR_CORRUPT,
			    "%s: not an edit log (file header checksum mismatch)"
			    NOT_A_LOG_HINT, path);
	if (le_get32(h + 4) != STORE_FILE_VERSION)
		return store__fail(err, errlen, ERR_VERSION,
			    "%s: log format version %u, this server reads version %d"
			    " (written by a newer server?)", path, le_get32(h + 4),
			    STORE_FILE_VERSION);
	if (le_get64(h + 16) != 0)
		return store__fail(err, errlen, ERR_VERSION, "%s: unknown header flags 0x%llx",
			    path, (ull)le_get64(h + 16));
	return 0;
}

/* Read and check the header of the log open on fd. */
int store__read_file_header(int fd, const char *path, char *err, size_t errlen)
{
	uint8_t h[STORE_FILE_HEADER];
	ssize_t n = store__pread_all(fd, h, sizeof(h), 0);

	if (n < 0)
		return store__fail(err, errlen, ERR_IO, "read %s: %s", path, strerror(errno));
	if (n < STORE_FILE_HEADER)
		return store__fail(err, errlen, ERR_MAGIC,
			    "%s: not an edit log (%zd bytes, shorter than a header)"
			    NOT_A_LOG_HINT, path, n);
	return store__check_file_header(h, path, err, errlen);
}

/* 1 if the n bytes at p are all zero. */
int store__zeros(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/*
 * Write the header of a new log, or check an existing one. A file shorter
 * than a header that holds a prefix of one, or only zeros (as a file system
 * may leave a file extended by a crash), is a creation cut short: nothing
 * can have been acknowledged, so the header is written again.
 */
int store__prepare_header(struct store *s, char *err, size_t errlen)
{
	uint8_t want[STORE_FILE_HEADER], have[STORE_FILE_HEADER];
	struct stat st;
	ssize_t n;
	int rc;

	if (fstat(s->fd, &st))
		return store__fail(err, errlen, ERR_IO, "stat %s: %s", s->path, strerror(errno));
	if (st.st_size > STORE_FILE_HEADER) {
		if ((rc = store__read_file_header(s->fd, s->path, err, errlen)))
			return rc;
		n = store__pread_all(s->fd, have, sizeof(have), 0);
		s->base = n == STORE_FILE_HEADER ? le_get64(have + 8) : 0;
		return 0;
	}
	store__file_header(want);
	n = store__pread_all(s->fd, have, (size_t)st.st_size, 0);
	if (n < 0)
		return store__fail(err, errlen, ERR_IO, "read %s: %s", s->path, strerror(errno));
	if (n == STORE_FILE_HEADER && !store__zeros(have, (size_t)n)) {
		if ((rc = store__check_file_header(have, s->path, err, errlen)))
			return rc;
		s->base = le_get64(have + 8);
		return 0;
	}
	if (memcmp(have, want, (size_t)n) && !store__zeros(have, (size_t)n))
		return store__fail(err, errlen, ERR_MAGIC,
			    "%s: not an edit log (%zd bytes, shorter than a header)"
			    NOT_A_LOG_HINT, s->path, n);
	if ((rc = store__pwrite_all(s->fd, want, sizeof(want), 0)) ||
	    (fsync(s->fd) && (rc = errno)) || (rc = store__fsync_dir(s->dir)))
		return store__fail(err, errlen, ERR_IO, "create %s: %s", s->path, strerror(rc));
	return 0;
}

/*
 * Record, 16-byte header then payload: u32 "WR01", u64 checksum, u32
 * length. The checksum is XXH3-64 (seed 0) of everything after it up to
 * the end of the record: the 4 length bytes and the payload.
 */
uint64_t store__rec_sum(const uint8_t *len_and_payload, uint32_t len)
{
	return XXH3_64bits(len_and_payload, 4 + (size_t)len);
}

/* ---- group commit ---- */

/* After a failed commit, the writer probes (recover()): first after
 * PROBE_FIRST_MS, the wait doubling to PROBE_MAX_MS, each probe writing
 * the failed commit's size in zeros, at least PROBE_MIN. */
#ifndef PROBE_FIRST_MS
#define PROBE_FIRST_MS 100   /* allows unit tests to override */
#endif
#define PROBE_MAX_MS 5000
#define PROBE_MIN ((size_t)64 << 10)


static void push(struct wlist *l, struct waiter *w)
{
	w->next = NULL;
	if (l->tail)
		l->tail->next = w;
	else
		l->head = w;
	l->tail = w;
	l->n++;
}

/* Append all of src (statuses set to status) to dst and empty src. */
static void move_all(struct wlist *dst, struct wlist *src, int status)
{
	for (struct waiter *w = src->head; w; w = w->next)
		w->status = status;
	if (!src->head)
		return;
	if (dst->tail)
		dst->tail->next = src->head;
	else
		dst->head = src->head;
	dst->tail = src->tail;
	dst->n += src->n;
	*src = (struct wlist){ 0 };
}

/*
 * One group commit, called by the writer with mu held and returning with
 * it held: take the queue, write it with one pwrite() and one
 * fdatasync() outside the lock, then hand its waiters to the loop.
 */
static void commit(struct store *s)
{
	struct buf b = s->queue;
	const char *what = "write";
	uint64_t off = s->end;
	int rc;

	s->queue = s->flight;
	s->flight = b;
	s->flying = s->queued;
	s->queued = (struct wlist){ 0 };
	s->stats.queued_bytes = 0;
	s->kicked = 0;
	uv_mutex_unlock(&s->mu);

	rc = store__pwrite_all(s->fd, s->flight.p, s->flight.len, off);
	if (!rc && fdatasync(s->fd)) {
		rc = errno;
		what = "fdatasync";
	}

	uv_mutex_lock(&s->mu);
	if (!rc) {
		s->end += s->flight.len;
		s->stats.bytes = s->end;
		s->stats.records += s->flying.n;
		s->stats.commits++;
		s->stats.last_batch = s->flying.n;
		if (s->flying.n > s->stats.max_batch)
			s->stats.max_batch = s->flying.n;
		move_all(&s->done, &s->flying, 0);
	} else {
		fprintf(stderr, "store: %s %s at offset %llu: %s; edits get 503 until a"
			" write succeeds again (probing with backoff)\n", what, s->path,
			(ull)off, strerror(rc));
		s->stats.failed = ERR_IO;
		s->stats.os_error = rc;
		s->stats.failures++;
		s->failed_at = uv_hrtime();
		s->probe_wait_ms = PROBE_FIRST_MS;
		s->probe_at = s->failed_at + PROBE_FIRST_MS * 1000000;
		s->probe_len = s->flight.len > PROBE_MIN ? s->flight.len : PROBE_MIN;
		s->probes = 0;
		move_all(&s->done, &s->flying, ERR_IO);
		move_all(&s->done, &s->queued, ERR_IO);
		s->queue.len = 0;
	}
	s->flight.len = 0;
}

/* ---- recovery after a failed commit ---- */

/*
 * A failed commit was answered ERR_IO, with everything queued behind it:
 * none of it was acknowledged, and every acknowledged record lies before
 * s->end, fdatasync'd by an earlier commit. The file may hold part of the
 * failed commit after s->end, or all of it unsynced. The writer probes,
 * with backoff: cut the file back to s->end, write and fdatasync
 * probe_len zeros there (the failed commit's size, at least PROBE_MIN: room
 * for it to be retried), cut them again and fsync. When every step
 * succeeds the file is exactly its acknowledged records, on disk, and
 * appends resume at s->end. Why nothing acknowledged is at risk although
 * a failed fdatasync may have dropped dirty pages: the pages it could drop
 * hold only the failed commit's bytes beyond s->end and, in the first
 * page, acknowledged bytes whose earlier version on disk is already
 * complete; the cut rewrites that page from memory. A crash during a
 * probe leaves a zero or partial tail, which replay drops as torn.
 */
/* One probe at off; 0 or an errno, *what the step that failed. */
static int probe(int fd, uint64_t off, size_t len, const char **what)
{
	static const uint8_t zeros[4096];
	size_t done;
	int rc = 0;

	*what = "truncate";
	if (ftruncate(fd, (off_t)off))
		return errno;
	*what = "write";
	for (done = 0; !rc && done < len; done += sizeof(zeros))
		rc = store__pwrite_all(fd, zeros, sizeof(zeros), off + done);
	if (!rc && fdatasync(fd)) {
		rc = errno;
		*what = "fdatasync";
	}
	if (ftruncate(fd, (off_t)off) && !rc) {
		rc = errno;
		*what = "truncate";
	}
	if (!rc && fsync(fd)) {
		rc = errno;
		*what = "fsync";
	}
	return rc;
}

/* Wait for the next probe and run it; mu held on entry and on return. */
static void recover(struct store *s)
{
	uint64_t now = uv_hrtime(), off = s->end;
	size_t len = s->probe_len;
	const char *what;
	int rc;

	if (now < s->probe_at) {
		uv_cond_timedwait(&s->wake, &s->mu, s->probe_at - now);
		return;
	}
	uv_mutex_unlock(&s->mu);
	rc = probe(s->fd, off, len, &what);
	uv_mutex_lock(&s->mu);
	if (rc == 0) {
		fprintf(stderr, "store: %s: writes succeed again (%u failed probes, %.1f s"
			" after the failure); accepting edits at offset %llu\n", s->path,
			s->probes, (double)(uv_hrtime() - s->failed_at) / 1e9, (ull)off);
		s->stats.failed = 0;
		s->stats.os_error = 0;
		s->stats.recoveries++;
		return;
	}
	if (s->probes++ == 0)
		fprintf(stderr, "store: %s: probe %s at offset %llu: %s; still refusing edits,"
			" probing every %d s at most\n", s->path, what, (ull)off, strerror(rc),
			PROBE_MAX_MS / 1000);
	s->probe_wait_ms = s->probe_wait_ms * 2 < PROBE_MAX_MS ? s->probe_wait_ms * 2 :
			   PROBE_MAX_MS;
	s->probe_at = uv_hrtime() + s->probe_wait_ms * 1000000;
}

/*
 * Group commit delay, as PostgreSQL's commit_delay: when fewer appends wait
 * than the last commit covered, the clients that commit just answered are
 * probably about to send their next edit; wait up to COMMIT_DELAY_NS for
 * them, so that one fsync covers everyone instead of alternating halves.
 * A lone client never waits (its queue is never below the last batch).
 */
#ifndef COMMIT_DELAY_NS
#define COMMIT_DELAY_NS 1000000   /* 1 ms */
#endif

static void linger(struct store *s)
{
	uint64_t deadline = uv_hrtime() + COMMIT_DELAY_NS;

	while (!s->stop && s->queued.n < s->stats.last_batch) {
		uint64_t now = uv_hrtime();

		if (now >= deadline ||
		    uv_cond_timedwait(&s->wake, &s->mu, deadline - now) == UV_ETIMEDOUT)
			break;
	}
}

static void writer_main(void *arg)
{
	struct store *s = arg;

	uv_mutex_lock(&s->mu);
	for (;;) {
		while (!(s->kicked && s->queue.len) && !s->stop && !s->swap &&
		       !(s->stats.failed && !s->stats.broken))
			uv_cond_wait(&s->wake, &s->mu);
		if (s->swap) { /* a live compaction's new file, between commits */
			if (s->stop || s->stats.failed)
				store__swap_cancel(s);
			else
				store__swap(s);
			if (s->stats.failed) {
				move_all(&s->done, &s->queued, ERR_IO);
				s->queue.len = 0;
				uv_async_send(&s->hub->async);
			}
			continue;
		}
		if (s->stats.failed && !s->stats.broken && !s->stop) {
			recover(s); /* nothing is queued while failed */
			continue;
		}
		if (!s->queue.len)
			break;
		linger(s);
		commit(s);
		uv_async_send(&s->hub->async);
	}
	uv_mutex_unlock(&s->mu);
}

/* Run the callbacks of finished appends, on the loop thread. */
static void deliver(struct store *s)
{
	struct waiter *w, *next;

	uv_mutex_lock(&s->mu);
	w = s->done.head;
	s->done = (struct wlist){ 0 };
	uv_mutex_unlock(&s->mu);
	for (; w; w = next) {
		next = w->next;
		assert(s->outstanding > 0);
		s->outstanding--;
		w->done(w->arg, w->status);
		free(w);
	}
	/* The handle keeps the loop alive only while callbacks are owed. */
	if (!s->outstanding)
		uv_unref((uv_handle_t *)&s->hub->async);
}

/* Let the writer commit what this loop iteration queued. */
static void kick(struct store *s)
{
	if (!s->kick_due)
		return;
	s->kick_due = 0;
	uv_idle_stop(&s->hub->idle);
	uv_mutex_lock(&s->mu);
	s->kicked = 1;
	uv_cond_signal(&s->wake);
	uv_mutex_unlock(&s->mu);
}

static void on_async(uv_async_t *h)
{
	struct hub *hub = h->data;

	if (hub->s)
		deliver(hub->s);
}

/* Appends made in poll callbacks: kicked right after the poll. */
static void on_check(uv_check_t *h)
{
	struct hub *hub = h->data;

	if (hub->s)
		kick(hub->s);
}

/* Appends made before the poll (timers, outside the loop): kicked here. */
static void on_idle(uv_idle_t *h)
{
	struct hub *hub = h->data;

	if (hub->s)
		kick(hub->s);
}

static void hub_closed(uv_handle_t *h)
{
	struct hub *hub = h->data;

	if (--hub->open == 0)
		free(hub);
}

static void hub_close(struct hub *hub)
{
	hub->s = NULL;
	uv_close((uv_handle_t *)&hub->async, hub_closed);
	uv_close((uv_handle_t *)&hub->check, hub_closed);
	uv_close((uv_handle_t *)&hub->idle, hub_closed);
}

/* Room for n more bytes in the queue, whose size max bounds. */
static int reserve(struct buf *b, size_t n, size_t max)
{
	size_t cap;
	uint8_t *p;

	if (b->len + n <= b->cap)
		return 0;
	cap = b->cap * 2 < max ? b->cap * 2 : max;
	if (cap < b->len + n)
		cap = b->len + n;
	if (cap < 65536)
		cap = 65536;
	if (!(p = realloc(b->p, cap)))
		return ERR_NOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

int store_append(struct store *s, const void *payload, size_t len,
		 store_done_fn done, void *arg)
{
	size_t need = STORE_REC_HEADER + len;
	struct waiter *w;
	uint8_t *h;
	int rc = 0;

	if (!s || !payload || len == 0 || len > STORE_RECORD_MAX || !done ||
	    !s->hub || !s->replayed || s->closing)
		return ERR_INVAL;
	if (!(w = malloc(sizeof(*w))))
		return ERR_NOMEM;
	w->done = done;
	w->arg = arg;
	w->status = 0;
	uv_mutex_lock(&s->mu);
	if (s->stats.failed)
		rc = s->stats.failed;
	else if (s->queue.len + need > s->max_queued) {
		s->stats.rejected++;
		rc = ERR_BUSY;
	} else if (!(rc = reserve(&s->queue, need, s->max_queued))) {
		h = s->queue.p + s->queue.len;
		le_put32(h, STORE_REC_MAGIC);
		le_put32(h + 12, (uint32_t)len);
		memcpy(h + STORE_REC_HEADER, payload, len);
		le_put64(h + 4, store__rec_sum(h + 12, (uint32_t)len));
		s->queue.len += need;
		s->stats.queued_bytes = s->queue.len;
		s->stats.appends++;
		push(&s->queued, w);
		/* a burst: let the writer start before the iteration ends */
		if (s->queue.len >= s->max_queued / 4) {
			s->kicked = 1;
			uv_cond_signal(&s->wake);
		}
	}
	uv_mutex_unlock(&s->mu);
	if (rc) {
		free(w);
		return rc;
	}
	s->outstanding++;
	uv_ref((uv_handle_t *)&s->hub->async);
	if (!s->kick_due) {
		s->kick_due = 1;
		uv_idle_start(&s->hub->idle, on_idle);
	}
	return 0;
}

void store_stats(struct store *s, struct store_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	uv_mutex_lock(&s->mu);
	*out = s->stats;
	uv_mutex_unlock(&s->mu);
}

/* ---- open and close ---- */

/* Open dir/edits.log, creating it if missing. */
static int open_log(struct store *s, char *err, size_t errlen)
{
	for (int tries = 0; tries < 3; tries++) {
		s->fd = open(s->path, O_RDWR | O_CLOEXEC);
		if (s->fd >= 0 || errno != ENOENT)
			break;
		s->fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (s->fd >= 0 || errno != EEXIST)
			break;
	}
	if (s->fd < 0)
		return store__fail(err, errlen, ERR_IO, "open %s: %s", s->path, strerror(errno));
	if (flock(s->fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK)
		return store__fail(err, errlen, ERR_BUSY,
			    "%s: data directory in use by another process (%s is locked);"
			    " is another terrain-server running with --data-dir %s?",
			    s->dir, s->path, s->dir);
	return store__fail(err, errlen, ERR_IO, "flock %s: %s", s->path, strerror(errno));
}

/*
 * Start the writer thread and the loop's handles. None of them keeps the
 * loop alive except the async while callbacks are owed.
 */
static int start_writer(struct store *s, uv_loop_t *loop, char *err, size_t errlen)
{
	struct hub *hub;
	int rc;

	if (!(hub = calloc(1, sizeof(*hub))))
		return ERR_NOMEM;
	if ((rc = uv_async_init(loop, &hub->async, on_async)) < 0) {
		free(hub);
		return store__fail(err, errlen, ERR_IO, "libuv: %s", uv_strerror(rc));
	}
	s->hub = hub;
	hub->s = s;
	hub->open = 3;
	hub->async.data = hub->check.data = hub->idle.data = hub;
	uv_check_init(loop, &hub->check);
	uv_idle_init(loop, &hub->idle);
	uv_check_start(&hub->check, on_check);
	uv_unref((uv_handle_t *)&hub->async);
	uv_unref((uv_handle_t *)&hub->check);
	uv_unref((uv_handle_t *)&hub->idle);
	if ((rc = uv_thread_create(&s->writer, writer_main, s)) < 0)
		return store__fail(err, errlen, ERR_IO, "store writer thread: %s",
			    uv_strerror(rc));
	s->has_writer = 1;
	return 0;
}

/* Remove DIR/edits.log.compact: a compaction that a crash cut short
 * before its rename (the log is whole without it). Under the lock. */
static void drop_leftover(struct store *s)
{
	char *tmp = store__join(s->dir, STORE_LOG_NAME ".compact");

	if (tmp && unlink(tmp) == 0)
		store__fsync_dir(s->dir);
	free(tmp);
}

int store_open(const char *dir, struct uv_loop_s *loop,
	       const struct store_options *opts, struct store **out, char *err,
	       size_t errlen)
{
	struct store *s;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!dir || !*dir || !out)
		return store__fail(err, errlen, ERR_INVAL, "store: invalid arguments");
	*out = NULL;
	if (!(s = calloc(1, sizeof(*s))))
		return ERR_NOMEM;
	s->fd = -1;
	s->max_queued = opts && opts->max_queued_bytes ? opts->max_queued_bytes :
		STORE_QUEUE_DEFAULT;
	if (s->max_queued < STORE_REC_HEADER + STORE_RECORD_MAX)
		s->max_queued = STORE_REC_HEADER + STORE_RECORD_MAX;
	s->end = STORE_FILE_HEADER;
	s->stats.bytes = STORE_FILE_HEADER;
	if (!(s->dir = strdup(dir)) || !(s->path = store__join(dir, STORE_LOG_NAME)))
		rc = ERR_NOMEM;
	else if (uv_mutex_init(&s->mu) < 0)
		rc = ERR_NOMEM;
	else if (uv_cond_init(&s->wake) < 0) {
		uv_mutex_destroy(&s->mu);
		rc = ERR_NOMEM;
	} else if (uv_cond_init(&s->swapped) < 0) {
		uv_cond_destroy(&s->wake);
		uv_mutex_destroy(&s->mu);
		rc = ERR_NOMEM;
	} else {
		s->has_sync = 1;
		if (!(rc = store__make_dirs(dir, err, errlen)) && !(rc = open_log(s, err, errlen)) &&
		    !(rc = store__prepare_header(s, err, errlen)) && loop)
			rc = start_writer(s, loop, err, errlen);
		if (!rc)
			drop_leftover(s); /* a compaction's, cut short by a crash */
	}
	if (rc) {
		if (rc == ERR_NOMEM)
			store__fail(err, errlen, rc, "store: out of memory");
		store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	s->closing = 1;
	if (s->has_writer) {
		uv_mutex_lock(&s->mu);
		s->stop = 1;
		uv_cond_signal(&s->wake);
		uv_mutex_unlock(&s->mu);
		uv_thread_join(&s->writer);
		store__compact_close(s);
		deliver(s);
	}
	assert(!s->outstanding);
	if (s->hub)
		hub_close(s->hub);
	if (s->fd >= 0)
		close(s->fd); /* releases the flock */
	if (s->has_sync) {
		uv_cond_destroy(&s->swapped);
		uv_cond_destroy(&s->wake);
		uv_mutex_destroy(&s->mu);
	}
	free(s->queue.p);
	free(s->flight.p);
	free(s->path);
	free(s->dir);
	free(s);
}

