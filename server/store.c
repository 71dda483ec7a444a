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

/* Replay reads this much at a time (allows unit tests to override). */
#ifndef READ_BUF_SIZE
#define READ_BUF_SIZE ((size_t)4 << 20)
#endif
_Static_assert(READ_BUF_SIZE >= STORE_REC_HEADER + STORE_RECORD_MAX, "read buffer");

/* The "WR" half of the record word; the upper half is the version "01". */
#define REC_MAGIC_MASK 0xffffu

typedef unsigned long long ull; /* for printf */

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
};

/* ---- small helpers ---- */





__attribute__((format(printf, 4, 5)))
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* Returns 0 or an errno. */
static int pwrite_all(int fd, const uint8_t *p, size_t n, uint64_t off)
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
static ssize_t pread_all(int fd, uint8_t *p, size_t n, uint64_t off)
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
static int fsync_dir(const char *dir)
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
static int make_dirs(const char *dir, char *err, size_t errlen)
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
				rc = fsync_dir("/");
			else if (slash) {
				*slash = '\0';
				rc = fsync_dir(p);
				*slash = '/';
			} else
				rc = fsync_dir(".");
			if (rc)
				rc = fail(err, errlen, ERR_IO, "fsync parent of %s: %s", p,
					  strerror(rc));
		} else if (errno != EEXIST)
			rc = fail(err, errlen, ERR_IO, "mkdir %s: %s", p, strerror(errno));
		else if (stat(p, &st) || !S_ISDIR(st.st_mode))
			rc = fail(err, errlen, ERR_IO, "%s: not a directory", p);
		p[i] = i < n ? '/' : '\0';
	}
	free(p);
	return rc;
}

/* ---- file format ---- */

/*
 * File header, 32 bytes: u32 magic "TWAL", u32 version, u64 base (0; kept
 * for compaction: what a snapshot would fold in), u64 flags (0), u64
 * XXH3-64 of the 24 bytes before it.
 */
static void file_header(uint8_t h[STORE_FILE_HEADER])
{
	memset(h, 0, STORE_FILE_HEADER);
	le_put32(h, STORE_FILE_MAGIC);
	le_put32(h + 4, STORE_FILE_VERSION);
	le_put64(h + 24, XXH3_64bits(h, 24));
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
static int check_file_header(const uint8_t h[STORE_FILE_HEADER], const char *path,
			     char *err, size_t errlen)
{
	if (le_get32(h) != STORE_FILE_MAGIC)
		return fail(err, errlen, ERR_MAGIC,
			    "%s: not an edit log (bad magic 0x%08x)" NOT_A_LOG_HINT, path,
			    le_get32(h));
	if (le_get64(h + 24) != XXH3_64bits(h, 24))
		return fail(err, errlen, ERR_CORRUPT,
			    "%s: not an edit log (file header checksum mismatch)"
			    NOT_A_LOG_HINT, path);
	if (le_get32(h + 4) != STORE_FILE_VERSION)
		return fail(err, errlen, ERR_VERSION,
			    "%s: log format version %u, this server reads version %d"
			    " (written by a newer server?)", path, le_get32(h + 4),
			    STORE_FILE_VERSION);
	if (le_get64(h + 16) != 0)
		return fail(err, errlen, ERR_VERSION, "%s: unknown header flags 0x%llx",
			    path, (ull)le_get64(h + 16));
	return 0;
}

/* Read and check the header of the log open on fd. */
static int read_file_header(int fd, const char *path, char *err, size_t errlen)
{
	uint8_t h[STORE_FILE_HEADER];
	ssize_t n = pread_all(fd, h, sizeof(h), 0);

	if (n < 0)
		return fail(err, errlen, ERR_IO, "read %s: %s", path, strerror(errno));
	if (n < STORE_FILE_HEADER)
		return fail(err, errlen, ERR_MAGIC,
			    "%s: not an edit log (%zd bytes, shorter than a header)"
			    NOT_A_LOG_HINT, path, n);
	return check_file_header(h, path, err, errlen);
}

/* 1 if the n bytes at p are all zero. */
static int zeros(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/*
 * Write the header of a new log, or check an existing one. A file shorter
 * than a header that holds a prefix of one, or only zeros (as a file system
 * may leave a file extended by a crash), is a creation cut short: nothing
 * can have been acknowledged, so the header is written again.
 */
static int prepare_header(struct store *s, char *err, size_t errlen)
{
	uint8_t want[STORE_FILE_HEADER], have[STORE_FILE_HEADER];
	struct stat st;
	ssize_t n;
	int rc;

	if (fstat(s->fd, &st))
		return fail(err, errlen, ERR_IO, "stat %s: %s", s->path, strerror(errno));
	if (st.st_size > STORE_FILE_HEADER)
		return read_file_header(s->fd, s->path, err, errlen);
	file_header(want);
	n = pread_all(s->fd, have, (size_t)st.st_size, 0);
	if (n < 0)
		return fail(err, errlen, ERR_IO, "read %s: %s", s->path, strerror(errno));
	if (n == STORE_FILE_HEADER && !zeros(have, (size_t)n))
		return check_file_header(have, s->path, err, errlen);
	if (memcmp(have, want, (size_t)n) && !zeros(have, (size_t)n))
		return fail(err, errlen, ERR_MAGIC,
			    "%s: not an edit log (%zd bytes, shorter than a header)"
			    NOT_A_LOG_HINT, s->path, n);
	if ((rc = pwrite_all(s->fd, want, sizeof(want), 0)) ||
	    (fsync(s->fd) && (rc = errno)) || (rc = fsync_dir(s->dir)))
		return fail(err, errlen, ERR_IO, "create %s: %s", s->path, strerror(rc));
	return 0;
}

/*
 * Record, 16-byte header then payload: u32 "WR01", u64 checksum, u32
 * length. The checksum is XXH3-64 (seed 0) of everything after it up to
 * the end of the record: the 4 length bytes and the payload.
 */
static uint64_t rec_sum(const uint8_t *len_and_payload, uint32_t len)
{
	return XXH3_64bits(len_and_payload, 4 + (size_t)len);
}

/* A window on the log for sequential reading in large blocks. */
struct reader {
	int fd;
	uint8_t *buf;
	size_t cap;
	uint64_t base;  /* file offset of buf[0] */
	size_t len;     /* valid bytes in buf */
	uint64_t size;  /* file size */
	int err;        /* errno of a failed read, else 0 */
};

/*
 * Make at least n (<= cap) bytes at off available; *avail (may be NULL)
 * gets how many are. NULL past the end of the file or on a read error
 * (r->err). The pointer is valid until the next call.
 */
static const uint8_t *rd_get(struct reader *r, uint64_t off, size_t n, size_t *avail)
{
	assert(n <= r->cap);
	if (off > r->size || n > r->size - off)
		return NULL;
	if (off < r->base || off + n > r->base + r->len) {
		size_t want = r->size - off < r->cap ? (size_t)(r->size - off) : r->cap;
		ssize_t got = pread_all(r->fd, r->buf, want, off);

		r->base = off;
		r->len = got < 0 ? 0 : (size_t)got;
		if (got < 0 || (size_t)got < n) {
			r->err = got < 0 ? errno : EIO; /* shorter than fstat said */
			return NULL;
		}
	}
	if (avail)
		*avail = (size_t)(r->base + r->len - off);
	return r->buf + (off - r->base);
}

enum { REC_IO = -1, REC_OK, REC_SHORT, REC_BAD, REC_NEWER };

/*
 * Check the record at off: REC_OK (*payload, *len set), REC_SHORT (it
 * runs past the end of the file), REC_BAD (magic, length or checksum),
 * REC_NEWER (our magic with another version) or REC_IO. *why says what.
 */
static int rec_check(struct reader *r, uint64_t off, const uint8_t **payload,
		     uint32_t *len, const char **why)
{
	const uint8_t *h = rd_get(r, off, STORE_REC_HEADER, NULL);
	uint32_t word, n;
	uint64_t sum;

	*why = "short record header";
	if (!h)
		return r->err ? REC_IO : REC_SHORT;
	word = le_get32(h);
	sum = le_get64(h + 4);
	n = le_get32(h + 12);
	*why = "bad record magic";
	if (word != STORE_REC_MAGIC)
		return (word & REC_MAGIC_MASK) == (STORE_REC_MAGIC & REC_MAGIC_MASK) ?
			REC_NEWER : REC_BAD;
	*why = "bad record length";
	if (n == 0 || n > STORE_RECORD_MAX)
		return REC_BAD;
	*why = "record runs past the end of the file";
	if (!(h = rd_get(r, off, STORE_REC_HEADER + (size_t)n, NULL)))
		return r->err ? REC_IO : REC_SHORT;
	*why = "checksum mismatch";
	if (rec_sum(h + 12, n) != sum)
		return REC_BAD;
	*payload = h + STORE_REC_HEADER;
	*len = n;
	return REC_OK;
}

/*
 * Look for a valid record starting anywhere in [from, end of file), byte by
 * byte. Returns 1 (*at set), 0 (none: what follows a bad record is a torn
 * tail) or -1 (read error, r->err).
 */
static int find_valid(struct reader *r, uint64_t from, uint64_t *at)
{
	uint8_t m[4];
	uint64_t p = from;

	le_put32(m, STORE_REC_MAGIC);
	while (p + STORE_REC_HEADER <= r->size) {
		const uint8_t *b, *hit;
		const uint8_t *payload;
		const char *why;
		uint32_t len;
		size_t avail;
		int k;

		if (!(b = rd_get(r, p, 4, &avail)))
			return -1;
		for (hit = b; (hit = memchr(hit, m[0], avail - 3 - (size_t)(hit - b)));
		     hit++)
			if (!memcmp(hit, m, 4))
				break;
		if (!hit) {
			p += avail - 3;
			continue;
		}
		p += (uint64_t)(hit - b);
		k = rec_check(r, p, &payload, &len, &why);
		if (k == REC_IO)
			return -1;
		if (k == REC_OK) {
			*at = p;
			return 1;
		}
		p++;
	}
	return 0;
}

/* ---- group commit ---- */

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

	rc = pwrite_all(s->fd, s->flight.p, s->flight.len, off);
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
		fprintf(stderr, "store: %s %s at offset %llu: %s; refusing edits until"
			" restart\n", what, s->path, (ull)off, strerror(rc));
		s->stats.failed = ERR_IO;
		move_all(&s->done, &s->flying, ERR_IO);
		move_all(&s->done, &s->queued, ERR_IO);
		s->queue.len = 0;
	}
	s->flight.len = 0;
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
		while (!(s->kicked && s->queue.len) && !s->stop)
			uv_cond_wait(&s->wake, &s->mu);
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
		le_put64(h + 4, rec_sum(h + 12, (uint32_t)len));
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
		return fail(err, errlen, ERR_IO, "open %s: %s", s->path, strerror(errno));
	if (flock(s->fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK)
		return fail(err, errlen, ERR_BUSY,
			    "%s: data directory in use by another process (%s is locked);"
			    " is another terrain-server running with --data-dir %s?",
			    s->dir, s->path, s->dir);
	return fail(err, errlen, ERR_IO, "flock %s: %s", s->path, strerror(errno));
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
		return fail(err, errlen, ERR_IO, "libuv: %s", uv_strerror(rc));
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
		return fail(err, errlen, ERR_IO, "store writer thread: %s",
			    uv_strerror(rc));
	s->has_writer = 1;
	return 0;
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
		return fail(err, errlen, ERR_INVAL, "store: invalid arguments");
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
	if (!(s->dir = strdup(dir)) || !(s->path = join(dir, STORE_LOG_NAME)))
		rc = ERR_NOMEM;
	else if (uv_mutex_init(&s->mu) < 0)
		rc = ERR_NOMEM;
	else if (uv_cond_init(&s->wake) < 0) {
		uv_mutex_destroy(&s->mu);
		rc = ERR_NOMEM;
	} else {
		s->has_sync = 1;
		if (!(rc = make_dirs(dir, err, errlen)) && !(rc = open_log(s, err, errlen)) &&
		    !(rc = prepare_header(s, err, errlen)) && loop)
			rc = start_writer(s, loop, err, errlen);
	}
	if (rc) {
		if (rc == ERR_NOMEM)
			fail(err, errlen, rc, "store: out of memory");
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
		deliver(s);
	}
	assert(!s->outstanding);
	if (s->hub)
		hub_close(s->hub);
	if (s->fd >= 0)
		close(s->fd); /* releases the flock */
	if (s->has_sync) {
		uv_cond_destroy(&s->wake);
		uv_mutex_destroy(&s->mu);
	}
	free(s->queue.p);
	free(s->flight.p);
	free(s->path);
	free(s->dir);
	free(s);
}

/* ---- replay ---- */

static int reader_init(struct reader *r, int fd, const char *path, char *msg,
		       size_t msglen)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	if (fstat(fd, &st))
		return fail(msg, msglen, ERR_IO, "stat %s: %s", path, strerror(errno));
	r->size = (uint64_t)st.st_size;
	r->cap = READ_BUF_SIZE;
	if (!(r->buf = malloc(r->cap)))
		return fail(msg, msglen, ERR_NOMEM, "store: out of memory");
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return 0;
}

/* 1 if every byte of [off, end of file) is zero, 0 if not, -1 (r->err). */
static int zero_tail(struct reader *r, uint64_t off)
{
	while (off < r->size) {
		size_t avail;
		const uint8_t *p = rd_get(r, off, 1, &avail);

		if (!p)
			return -1;
		if (!zeros(p, avail))
			return 0;
		off += avail;
	}
	return 1;
}

/*
 * Is the bad record at off (kind, *why from rec_check) a torn write, that
 * is, a record cut short at the end of the file? Yes (1) when the file ends
 * inside its header and what is there begins like a record header, or
 * when it ends before the record's stated length, unless the bytes that
 * are there form a complete record whose length field alone is damaged;
 * or when everything from off on is zero, as a file system may leave a
 * file extended by a crash. 0 otherwise (*why may be updated), -1 on a
 * read error.
 */
static int is_torn(struct reader *r, uint64_t off, int kind, const char **why)
{
	static const uint8_t magic[4] = { 'W', 'R', '0', '1' };
	uint64_t left = r->size - off;
	const uint8_t *h;
	uint8_t *tmp;
	uint64_t sum;
	int z;

	if ((z = zero_tail(r, off)) != 0) {
		if (z > 0)
			*why = "zero-filled tail";
		return z;
	}
	if (kind != REC_SHORT)
		return 0;
	if (left < STORE_REC_HEADER) {
		if (!(h = rd_get(r, off, (size_t)left, NULL)))
			return -1;
		return memcmp(h, magic, left < 4 ? (size_t)left : 4) == 0;
	}
	left -= STORE_REC_HEADER;
	if (left == 0 || left > STORE_RECORD_MAX)
		return 1;
	/* a complete record with a damaged length field is not torn */
	if (!(h = rd_get(r, off, STORE_REC_HEADER + (size_t)left, NULL)))
		return -1;
	if (!(tmp = malloc(4 + (size_t)left)))
		return -1;
	le_put32(tmp, (uint32_t)left);
	memcpy(tmp + 4, h + STORE_REC_HEADER, (size_t)left);
	sum = le_get64(h + 4);
	z = rec_sum(tmp, (uint32_t)left) == sum;
	free(tmp);
	if (z)
		*why = "a complete record with a damaged length";
	return !z;
}

static int save_cut(int fd, uint64_t off, uint64_t size, const char *cut,
		    const char *dir, char *err, size_t errlen);

/*
 * Copy [off, end) of the log to a new file beside it, DIR/edits.log.KIND-
 * OFF (or .KIND-OFF.N when that exists), fsync'd; its path into *saved
 * (malloc'd).
 */
static int save_aside(struct store *s, const char *kind, uint64_t off, uint64_t end,
		      char **saved, char *msg, size_t ml)
{
	struct stat st;
	char name[96];
	int rc;

	for (int i = 0; i < 1000; i++) {
		if (i)
			snprintf(name, sizeof(name), STORE_LOG_NAME ".%s-%llu.%d", kind,
				 (ull)off, i);
		else
			snprintf(name, sizeof(name), STORE_LOG_NAME ".%s-%llu", kind, (ull)off);
		if (!(*saved = join(s->dir, name)))
			return fail(msg, ml, ERR_NOMEM, "store: out of memory");
		if (lstat(*saved, &st) && errno == ENOENT)
			break;
		free(*saved);
		*saved = NULL;
	}
	if (!*saved)
		return fail(msg, ml, ERR_IO, "%s: too many saved %s files", s->path, kind);
	if ((rc = save_cut(s->fd, off, end, *saved, s->dir, msg, ml))) {
		free(*saved);
		*saved = NULL;
	}
	return rc;
}

/* Save the torn tail at st->end beside the log, then cut it off. */
static int drop_torn(struct store *s, struct reader *r, const char *why,
		     struct store_replay_stats *st)
{
	char *msg = st->message, *saved = NULL;
	size_t ml = sizeof(st->message);
	uint64_t off = st->end;
	int rc;

	if ((rc = save_aside(s, "torn", off, r->size, &saved, msg, ml)))
		return rc;
	if (ftruncate(s->fd, (off_t)off) || fsync(s->fd)) {
		rc = fail(msg, ml, ERR_IO, "truncate %s: %s", s->path, strerror(errno));
		free(saved);
		return rc;
	}
	st->torn_offset = off;
	st->torn_bytes = r->size - off;
	fail(msg, ml, 0, "warning: %s: dropped torn tail record at offset %llu (%llu"
	     " bytes, %s): a write cut short by a crash, so never acknowledged;"
	     " the bytes are saved in %s", s->path, (ull)off, (ull)st->torn_bytes, why,
	     saved);
	free(saved);
	return 0;
}

/*
 * The first record at st->end is bad: drop it as a torn write (is_torn(),
 * with no valid record after it), or refuse with ERR_CORRUPT.
 */
static int bad_record(struct store *s, struct reader *r, int kind, const char *why,
		      struct store_replay_stats *st)
{
	char *msg = st->message, after[96];
	size_t ml = sizeof(st->message);
	uint64_t off = st->end, next;
	int k, torn = 0;

	if (kind == REC_IO)
		return fail(msg, ml, ERR_IO, "read %s: %s", s->path, strerror(r->err));
	if (kind == REC_NEWER) {
		st->bad_offset = off;
		return fail(msg, ml, ERR_VERSION,
			    "%s: record at offset %llu has an unknown format version"
			    " (written by a newer server?); refusing to replay", s->path,
			    (ull)off);
	}
	if ((k = find_valid(r, off + 1, &next)) < 0 ||
	    (!k && (torn = is_torn(r, off, kind, &why)) < 0))
		return fail(msg, ml, ERR_IO, "read %s: %s", s->path,
			    r->err ? strerror(r->err) : "out of memory");
	if (!k && torn)
		return drop_torn(s, r, why, st);
	st->bad_offset = off;
	if (k)
		snprintf(after, sizeof(after), "followed by a valid record at offset %llu",
			 (ull)next);
	else
		snprintf(after, sizeof(after), "the last record, not a torn write");
	return fail(msg, ml, ERR_CORRUPT,
		    "%s: corrupt record at offset %llu (%s, %llu bytes before the end),"
		    " %s; refusing to replay. To keep the %llu records before it and cut"
		    " the rest (saved as " STORE_LOG_NAME ".cut-%llu), see"
		    " docs/edit-log.md and run: terrain-server repair-log --data-dir %s"
		    " --truncate-at %llu",
		    s->path, (ull)off, why, (ull)(r->size - off), after, (ull)st->records,
		    (ull)off, s->dir, (ull)off);
}

/* Hand every record to cb; st->end ends at the last good one. */
static int scan(struct store *s, struct reader *r, store_replay_fn cb, void *arg,
		struct store_replay_stats *st)
{
	const uint8_t *payload;
	const char *why = "";
	uint32_t len;
	int k = REC_OK, rc;

	st->end = STORE_FILE_HEADER;
	while (st->end < r->size &&
	       (k = rec_check(r, st->end, &payload, &len, &why)) == REC_OK) {
		if ((rc = cb(arg, payload, len)))
			return fail(st->message, sizeof(st->message), rc,
				    "%s: replay stopped at the record at offset %llu: %s",
				    s->path, (ull)st->end, err_str(rc));
		st->records++;
		st->bytes += len;
		st->end += STORE_REC_HEADER + (uint64_t)len;
	}
	if (st->end == r->size)
		return 0;
	return bad_record(s, r, k, why, st);
}

int store_replay(struct store *s, store_replay_fn cb, void *arg,
		 struct store_replay_stats *st)
{
	struct store_replay_stats local;
	struct reader r;
	int rc;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	if (!s || !cb || s->closing)
		return fail(st->message, sizeof(st->message), ERR_INVAL,
			    "store: invalid arguments");
	if (s->outstanding)
		return fail(st->message, sizeof(st->message), ERR_BUSY,
			    "store: replay while appends are outstanding");
	uv_mutex_lock(&s->mu);
	rc = s->stats.failed;
	uv_mutex_unlock(&s->mu);
	if (rc)
		return fail(st->message, sizeof(st->message), rc,
			    "%s: the store has failed; restart", s->path);
	s->replayed = 0;
	if ((rc = reader_init(&r, s->fd, s->path, st->message, sizeof(st->message))))
		return rc;
	rc = scan(s, &r, cb, arg, st);
	free(r.buf);
	if (rc)
		return rc;
	uv_mutex_lock(&s->mu);
	s->end = st->end;
	s->stats.records = st->records;
	s->stats.bytes = st->end;
	uv_mutex_unlock(&s->mu);
	s->replayed = 1;
	return 0;
}

/* ---- repair ---- */

/* Copy [off, size) of fd into a new file cut (fsync'd). */
static int save_cut(int fd, uint64_t off, uint64_t size, const char *cut,
		    const char *dir, char *err, size_t errlen)
{
	uint8_t *buf = malloc(1 << 20);
	int out, rc = 0;

	if (!buf)
		return fail(err, errlen, ERR_NOMEM, "store: out of memory");
	out = open(cut, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (out < 0) {
		free(buf);
		return fail(err, errlen, ERR_IO, "create %s: %s", cut, strerror(errno));
	}
	for (uint64_t p = off; p < size && !rc;) {
		size_t n = size - p < (1 << 20) ? (size_t)(size - p) : (1 << 20);
		ssize_t got = pread_all(fd, buf, n, p);

		if (got <= 0)
			rc = got < 0 ? errno : EIO;
		else
			rc = pwrite_all(out, buf, (size_t)got, p - off);
		p += got > 0 ? (uint64_t)got : 0;
	}
	if (!rc && fsync(out))
		rc = errno;
	close(out);
	free(buf);
	if (!rc)
		rc = fsync_dir(dir);
	if (rc)
		return fail(err, errlen, ERR_IO, "write %s: %s", cut, strerror(rc));
	return 0;
}

/* Walk the records before offset; they must be valid and end exactly there. */
static int check_prefix(struct reader *r, uint64_t offset, uint64_t *kept,
			const char *path, char *err, size_t errlen)
{
	const uint8_t *payload;
	const char *why;
	uint64_t off = STORE_FILE_HEADER;
	uint32_t len;
	int k;

	*kept = 0;
	while (off < offset) {
		if ((k = rec_check(r, off, &payload, &len, &why)) == REC_IO)
			return fail(err, errlen, ERR_IO, "read %s: %s", path, strerror(r->err));
		if (k != REC_OK)
			return fail(err, errlen, ERR_INVAL,
				    "%s: the record at offset %llu, before %llu, is bad (%s);"
				    " truncate at %llu instead", path, (ull)off, (ull)offset,
				    why, (ull)off);
		if (off + STORE_REC_HEADER + len > offset)
			return fail(err, errlen, ERR_INVAL,
				    "%s: offset %llu is inside the record at %llu..%llu",
				    path, (ull)offset, (ull)off,
				    (ull)(off + STORE_REC_HEADER + len));
		off += STORE_REC_HEADER + (uint64_t)len;
		(*kept)++;
	}
	return 0;
}

/* store_truncate() once the log is open and locked. */
static int cut_log(const char *dir, const char *path, int fd, uint64_t offset,
		   uint64_t *kept, char *err, size_t errlen)
{
	struct reader r;
	char *cut = NULL;
	char name[64];
	int rc;

	if ((rc = read_file_header(fd, path, err, errlen)) ||
	    (rc = reader_init(&r, fd, path, err, errlen)))
		return rc;
	if (offset < STORE_FILE_HEADER || offset > r.size)
		rc = fail(err, errlen, ERR_INVAL, "%s: offset %llu is outside %d..%llu",
			  path, (ull)offset, STORE_FILE_HEADER, (ull)r.size);
	else
		rc = check_prefix(&r, offset, kept, path, err, errlen);
	free(r.buf);
	if (rc)
		return rc;
	if (offset == r.size)
		return fail(err, errlen, 0, "%s: nothing after offset %llu; %llu records",
			    path, (ull)offset, (ull)*kept);
	snprintf(name, sizeof(name), STORE_LOG_NAME ".cut-%llu", (ull)offset);
	if (!(cut = join(dir, name)))
		return fail(err, errlen, ERR_NOMEM, "store: out of memory");
	if (!(rc = save_cut(fd, offset, r.size, cut, dir, err, errlen))) {
		if (ftruncate(fd, (off_t)offset) || fsync(fd))
			rc = fail(err, errlen, ERR_IO, "truncate %s: %s", path,
				  strerror(errno));
		else
			fail(err, errlen, 0, "%s: cut %llu bytes at offset %llu (saved to %s);"
			     " %llu records kept", path, (ull)(r.size - offset), (ull)offset,
			     cut, (ull)*kept);
	}
	free(cut);
	return rc;
}

int store_truncate(const char *dir, uint64_t offset, uint64_t *kept, char *err,
		   size_t errlen)
{
	uint64_t n = 0;
	char *path;
	int fd, rc;

	if (err && errlen)
		err[0] = '\0';
	if (!dir || !*dir)
		return fail(err, errlen, ERR_INVAL, "store: invalid arguments");
	if (!(path = join(dir, STORE_LOG_NAME)))
		return fail(err, errlen, ERR_NOMEM, "store: out of memory");
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		rc = fail(err, errlen, errno == ENOENT ? ERR_NOTFOUND : ERR_IO,
			  "open %s: %s", path, strerror(errno));
	else if (flock(fd, LOCK_EX | LOCK_NB))
		rc = fail(err, errlen, errno == EWOULDBLOCK ? ERR_BUSY : ERR_IO,
			  "%s: locked (%s); stop the server using --data-dir %s first",
			  path, strerror(errno), dir);
	else
		rc = cut_log(dir, path, fd, offset, &n, err, errlen);
	if (fd >= 0)
		close(fd);
	free(path);
	if (kept)
		*kept = n;
	return rc;
}

/* ---- other files ---- */

int store_read_file(const char *path, size_t max, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;
	int rc = 0;

	if (!f)
		return ERR_IO;
	if (!(buf = malloc(max + 2))) {
		fclose(f);
		return ERR_NOMEM;
	}
	n = fread(buf, 1, max + 1, f);
	if (ferror(f))
		rc = ERR_IO;
	else if (n > max)
		rc = ERR_TOOBIG;
	fclose(f);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

int store_write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = path ? fopen(path, "wb") : stdout;
	int ok;

	if (!f)
		return ERR_IO;
	ok = fwrite(buf, 1, len, f) == len;
	ok = (path ? fclose(f) : fflush(f)) == 0 && ok;
	return ok ? 0 : ERR_IO;
}

FILE *store_open_append(const char *path)
{
	FILE *f;

	if (!strcmp(path, "-"))
		return stderr;
	f = fopen(path, "a");
	if (f)
		setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

int store_reopen_append(FILE *f, const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);

	if (fd < 0)
		return ERR_IO;
	fflush(f);
	if (dup2(fd, fileno(f)) < 0) {
		close(fd);
		return ERR_IO;
	}
	close(fd);
	return 0;
}
