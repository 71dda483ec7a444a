/*
 * store_compact.c - compacting the log while it is appended to (store.h,
 * store_compact_live()).
 *
 * The first n records (a snapshot holds them) go; the rest is copied into
 * DIR/edits.log.compact behind a header whose base counts them, on a
 * worker of the loop's pool, while the writer thread goes on committing
 * to the old file. The worker copies up to the old file's end, fsyncs,
 * and copies again what was committed meanwhile until little is left;
 * then it hands the new file to the writer (s->swap, under s->mu) and
 * waits. The writer takes it between two commits, so no commit is in
 * flight: it copies the last committed bytes, fsyncs the new file, locks
 * it, renames it over edits.log and fsyncs the directory, and commits to
 * it from then on. Appends go on queueing in memory meanwhile; the next
 * commit simply waits for that last copy, a few milliseconds.
 *
 * A crash at any point leaves edits.log whole: the old file until the
 * rename (the new one is then a leftover edits.log.compact, removed at the
 * next open), the new one, complete and fsync'd, from the rename on; a
 * commit after the rename is acknowledged only once the directory's fsync
 * made the rename durable, since the writer does both before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <uv.h>

#include "err.h"
#include "le.h"
#include "store.h"
#include "store_int.h"

#define COPY_BUF   ((size_t)1 << 20)
#define CLOSE_GAP  ((uint64_t)256 << 10) /* hand over once less is left */
#define MAX_ROUNDS 8

struct store_compaction {
	uv_work_t work;
	struct store *s;                 /* NULL once the store closed */
	uint64_t drop;                   /* records to drop */
	uint64_t from;                   /* offset of the first record kept */
	uint64_t copied;                 /* old file's offset copied up to */
	char *tmp;
	int fd;
	int status;                      /* 0 or ERR_* */
	char err[256];
	store_compacted_fn done;
	void *arg;
	uint8_t *buf;
};

/* Copy [c->copied, end) of the old file to the new one. 0 or an errno. */
static int copy_to(struct store_compaction *c, int old, uint64_t end)
{
	while (c->copied < end) {
		size_t n = end - c->copied < COPY_BUF ? (size_t)(end - c->copied) : COPY_BUF;
		ssize_t got = store__pread_all(old, c->buf, n, c->copied);
		int rc;

		if (got != (ssize_t)n)
			return got < 0 ? errno : EIO;
		if ((rc = store__pwrite_all(c->fd, c->buf, n,
					    STORE_FILE_HEADER + c->copied - c->from)))
			return rc;
		c->copied += n;
	}
	return 0;
}

/* The offset after the first c->drop records of the old file, read in
 * blocks (their headers only: the replay checked them). */
static int skip_records(struct store_compaction *c, int fd, uint64_t end)
{
	uint64_t off = STORE_FILE_HEADER, at = 0, k;
	size_t have = 0;

	for (k = 0; k < c->drop; k++) {
		const uint8_t *h;

		if (off < at || off + STORE_REC_HEADER > at + have) {
			size_t n = end - off < COPY_BUF ? (size_t)(end - off) : COPY_BUF;
			ssize_t got = off < end ? store__pread_all(fd, c->buf, n, off) : 0;

			at = off;
			have = got > 0 ? (size_t)got : 0;
		}
		h = c->buf + (off - at);
		if (off + STORE_REC_HEADER > end || off + STORE_REC_HEADER > at + have ||
		    le_get32(h) != STORE_REC_MAGIC)
			return store__fail(c->err, sizeof(c->err), ERR_CORRUPT, "record %llu to drop"
					   " is not where it should be (offset %llu)", (ull)k,
					   (ull)off);
		off += STORE_REC_HEADER + le_get32(h + 12);
	}
	if (off > end)
		return store__fail(c->err, sizeof(c->err), ERR_CORRUPT, "fewer than %llu records",
				   (ull)c->drop);
	c->from = c->copied = off;
	return 0;
}

/* The old file, its end and base now, under mu; whether the store is
 * closing or failed (the compaction then ends). */
static int old_end(struct store *s, int *fd, uint64_t *end, uint64_t *base)
{
	int gone;

	uv_mutex_lock(&s->mu);
	*fd = s->fd;
	*end = s->end;
	*base = s->base;
	gone = s->stop || s->stats.failed;
	uv_mutex_unlock(&s->mu);
	return gone;
}

/* Worker: the new file, copied to near the old one's end. */
static int prepare(struct store_compaction *c)
{
	struct store *s = c->s;
	uint8_t h[STORE_FILE_HEADER];
	uint64_t end, base;
	int old, rc, round;

	old_end(s, &old, &end, &base);
	if ((rc = skip_records(c, old, end)) != 0)
		return rc;
	if ((c->fd = open(c->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0640)) < 0 ||
	    flock(c->fd, LOCK_EX | LOCK_NB))
		return store__fail(c->err, sizeof(c->err), ERR_IO, "create %s: %s", c->tmp,
				   strerror(errno));
	store__file_header_base(h, base + c->drop);
	if ((rc = store__pwrite_all(c->fd, h, sizeof(h), 0)))
		return store__fail(c->err, sizeof(c->err), ERR_IO, "write %s: %s", c->tmp,
				   strerror(rc));
	for (round = 0; round < MAX_ROUNDS; round++) {
		if ((rc = copy_to(c, old, end)) || (fsync(c->fd) && (rc = errno)))
			return store__fail(c->err, sizeof(c->err), ERR_IO, "copy to %s: %s", c->tmp,
					   strerror(rc));
		if (old_end(s, &old, &end, &base))
			return store__fail(c->err, sizeof(c->err), ERR_INVAL, "the store closed or"
					   " failed meanwhile");
		if (end - c->copied < CLOSE_GAP)
			break;
	}
	return 0;
}

static void work(uv_work_t *w)
{
	struct store_compaction *c = container_of(w, struct store_compaction, work);
	struct store *s = c->s;

	if ((c->status = prepare(c)) == 0) {
		uv_mutex_lock(&s->mu);
		if (s->stop || s->stats.failed) {
			c->status = ERR_INVAL;
			snprintf(c->err, sizeof(c->err), "the store closed or failed meanwhile");
		} else {
			s->swap = c;
			uv_cond_signal(&s->wake);
			while (s->swap == c)
				uv_cond_wait(&s->swapped, &s->mu);
		}
		uv_mutex_unlock(&s->mu);
	}
	if (c->fd >= 0 && c->status) { /* else the store's log now */
		close(c->fd);
		c->fd = -1;
		unlink(c->tmp);
	}
	uv_mutex_lock(&s->mu);
	s->compact_busy = 0;
	uv_cond_broadcast(&s->swapped);
	uv_mutex_unlock(&s->mu);
}

/* The writer's copy of the last bytes, fsync, rename and the fsync of
 * the directory, outside the lock: 0, or an errno with *what, *renamed
 * saying how far it got. */
static int finish_swap(struct store *s, struct store_compaction *c, const char **what,
		       int *renamed)
{
	int rc;

	*what = "copy to";
	if ((rc = copy_to(c, s->fd, s->end)) != 0)
		return rc;
	*what = "fsync";
	if (fsync(c->fd))
		return errno;
	*what = "rename";
	if (rename(c->tmp, s->path))
		return errno;
	*renamed = 1;
	*what = "fsync the directory of";
	return store__fsync_dir(s->dir);
}

/*
 * Writer, with mu held and no commit in flight: take the new file; returns
 * with mu held. A failure after the rename fails the store (the
 * directory's state is unknown); before it, only the compaction.
 */
void store__swap(struct store *s)
{
	struct store_compaction *c = s->swap;
	const char *what;
	int rc, renamed = 0;

	uv_mutex_unlock(&s->mu);
	rc = finish_swap(s, c, &what, &renamed);
	uv_mutex_lock(&s->mu);
	if (rc) {
		snprintf(c->err, sizeof(c->err), "%s %s: %s", what, renamed ? s->path : c->tmp,
			 strerror(rc));
		c->status = ERR_IO;
	}
	if (rc && renamed) {
		fprintf(stderr, "store: compaction: %s; refusing edits until restart\n", c->err);
		s->stats.failed = ERR_IO;
		s->stats.os_error = rc;
		s->stats.broken = 1;
		close(c->fd);
		c->fd = -1;
	} else if (!rc) {
		close(s->fd); /* the old inode and its lock: the new one is locked */
		s->fd = c->fd;
		c->fd = -1;
		s->end = STORE_FILE_HEADER + c->copied - c->from;
		s->base += c->drop;
		s->stats.records -= c->drop;
		s->stats.bytes = s->end;
	}
	s->swap = NULL;
	uv_cond_broadcast(&s->swapped);
}

/* Writer, mu held: the store closes; the compaction waiting ends. */
void store__swap_cancel(struct store *s)
{
	s->swap->status = ERR_INVAL;
	snprintf(s->swap->err, sizeof(s->swap->err), s->stop ? "the store closed" :
		 "a write failed meanwhile");
	s->swap = NULL;
	uv_cond_broadcast(&s->swapped);
}

static void after(uv_work_t *w, int status)
{
	struct store_compaction *c = container_of(w, struct store_compaction, work);

	if (c->s) {
		c->s->compaction = NULL;
		if (status && !c->status)
			c->status = ERR_INVAL;
		if (c->done)
			c->done(c->arg, c->status, c->status ? 0 : c->drop, c->err);
	}
	free(c->tmp);
	free(c->buf);
	free(c);
}

int store_compact_live(struct store *s, uint64_t drop, store_compacted_fn done, void *arg)
{
	struct store_compaction *c;
	int rc;

	if (!s || !s->hub || !s->replayed || s->closing || s->compaction)
		return ERR_INVAL;
	if (s->stats.failed)
		return s->stats.failed;
	uv_mutex_lock(&s->mu);
	rc = drop == 0 || drop > s->stats.records ? ERR_INVAL : 0;
	uv_mutex_unlock(&s->mu);
	if (rc)
		return rc;
	if (!(c = calloc(1, sizeof(*c))) || !(c->buf = malloc(COPY_BUF)) ||
	    !(c->tmp = store__join(s->dir, STORE_LOG_NAME ".compact"))) {
		if (c)
			free(c->buf);
		free(c);
		return ERR_NOMEM;
	}
	c->s = s;
	c->fd = -1;
	c->drop = drop;
	c->done = done;
	c->arg = arg;
	uv_mutex_lock(&s->mu);
	s->compact_busy = 1;
	uv_mutex_unlock(&s->mu);
	if (uv_queue_work(s->hub->async.loop, &c->work, work, after)) {
		s->compact_busy = 0;
		free(c->tmp);
		free(c->buf);
		free(c);
		return ERR_NOMEM;
	}
	s->compaction = c;
	return 0;
}

void store__compact_close(struct store *s)
{
	uv_mutex_lock(&s->mu);
	while (s->compact_busy)
		uv_cond_wait(&s->swapped, &s->mu);
	uv_mutex_unlock(&s->mu);
	if (s->compaction)
		s->compaction->s = NULL; /* its after() comes later: it only frees */
	s->compaction = NULL;
}
