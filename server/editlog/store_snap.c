/*
 * store_snap.c - the snapshot file and log compaction (store.h).
 *
 * A snapshot is written to DIR/snapshot.tmp through a buffer, closed by a
 * trailer (u64 XXH3-64 of everything before it, u32 magic "TSNE"),
 * fsync'd, renamed over DIR/snapshot and the directory fsync'd: a crash
 * leaves the old snapshot or the new one, never a mixture. What is inside
 * is the caller's (server/worlds/snapshots.c).
 *
 * Compaction rewrites the log without the records the caller no longer
 * needs, into DIR/edits.log.compact, locked before it is renamed over the
 * log, so that no second server can take the new file between the rename
 * and the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "err.h"
#include "le.h"
#include "store.h"
#include "store_int.h"

#define SNAP_TRAILER_MAGIC 0x454e5354u /* "TSNE" */
#define SNAP_TRAILER 12
#define SNAP_BUF ((size_t)1 << 20)

struct store_snap {
	char *tmp, *path, *dir;
	int fd;
	int err;                 /* errno of the first failed write, else 0 */
	XXH3_state_t *sum;
	uint64_t bytes;
	size_t n;
	uint8_t buf[SNAP_BUF];
};

static void snap_free(struct store_snap *w)
{
	if (w->fd >= 0)
		close(w->fd);
	XXH3_freeState(w->sum);
	free(w->tmp);
	free(w->path);
	free(w->dir);
	free(w);
}

int store_snap_begin(const char *dir, struct store_snap **out)
{
	struct store_snap *w = malloc(sizeof(*w));

	if (!w)
		return ERR_NOMEM;
	w->fd = -1;
	w->err = 0;
	w->bytes = 0;
	w->n = 0;
	w->sum = XXH3_createState();
	w->tmp = store__join(dir, STORE_SNAP_NAME ".tmp");
	w->path = store__join(dir, STORE_SNAP_NAME);
	w->dir = strdup(dir);
	if (!w->sum || !w->tmp || !w->path || !w->dir || XXH3_64bits_reset(w->sum)) {
		snap_free(w);
		return ERR_NOMEM;
	}
	if (store__make_dirs(dir, NULL, 0) ||
	    (w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640)) < 0) {
		snap_free(w);
		return ERR_IO;
	}
	*out = w;
	return 0;
}

static void flush(struct store_snap *w)
{
	int rc;

	if (!w->err && w->n && (rc = store__pwrite_all(w->fd, w->buf, w->n, w->bytes - w->n)))
		w->err = rc;
	w->n = 0;
}

int store_snap_write(struct store_snap *w, const void *p, size_t n)
{
	const uint8_t *b = p;

	XXH3_64bits_update(w->sum, p, n);
	while (n && !w->err) {
		size_t k = SNAP_BUF - w->n < n ? SNAP_BUF - w->n : n;

		memcpy(w->buf + w->n, b, k);
		w->n += k;
		w->bytes += k;
		b += k;
		n -= k;
		if (w->n == SNAP_BUF)
			flush(w);
	}
	return w->err ? ERR_IO : 0;
}

void store_snap_abort(struct store_snap *w)
{
	if (!w)
		return;
	unlink(w->tmp);
	snap_free(w);
}

int store_snap_commit(struct store_snap *w, uint64_t *bytes)
{
	uint8_t t[SNAP_TRAILER];
	int rc;

	le_put64(t, XXH3_64bits_digest(w->sum));
	le_put32(t + 8, SNAP_TRAILER_MAGIC);
	if (w->n + sizeof(t) > SNAP_BUF)
		flush(w);
	memcpy(w->buf + w->n, t, sizeof(t));
	w->n += sizeof(t);
	w->bytes += sizeof(t);
	flush(w);
	if (!w->err && fsync(w->fd))
		w->err = errno;
	if (!w->err && rename(w->tmp, w->path))
		w->err = errno;
	if (!w->err && (rc = store__fsync_dir(w->dir)))
		w->err = rc;
	if (w->err) {
		errno = w->err;
		store_snap_abort(w);
		return ERR_IO;
	}
	if (bytes)
		*bytes = w->bytes;
	snap_free(w);
	return 0;
}

int store_snap_read(const char *dir, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	char *path = store__join(dir, STORE_SNAP_NAME);
	struct stat st;
	uint8_t *buf = NULL;
	size_t n = 0;
	int fd, rc = 0;

	if (!path)
		return store__fail(err, errlen, ERR_NOMEM, "snapshot: out of memory");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		rc = errno == ENOENT ?
			store__fail(err, errlen, ERR_NOTFOUND, "%s: no snapshot", path) :
			store__fail(err, errlen, ERR_IO, "open %s: %s", path, strerror(errno));
		free(path);
		return rc;
	}
	if (fstat(fd, &st))
		rc = store__fail(err, errlen, ERR_IO, "stat %s: %s", path, strerror(errno));
	else if (st.st_size < SNAP_TRAILER || (uint64_t)st.st_size > SIZE_MAX / 2)
		rc = store__fail(err, errlen, ERR_CORRUPT, "%s: %lld bytes, too short for a"
				 " snapshot", path, (long long)st.st_size);
	else if (!(buf = malloc(n = (size_t)st.st_size)))
		rc = store__fail(err, errlen, ERR_NOMEM, "snapshot: out of memory");
	else if (store__pread_all(fd, buf, n, 0) != (ssize_t)n)
		rc = store__fail(err, errlen, ERR_IO, "read %s: %s", path, strerror(errno));
	else if (le_get32(buf + n - 4) != SNAP_TRAILER_MAGIC ||
		 le_get64(buf + n - SNAP_TRAILER) != XXH3_64bits(buf, n - SNAP_TRAILER))
		rc = store__fail(err, errlen, ERR_CORRUPT, "%s: checksum mismatch (a damaged"
				 " or cut snapshot)", path);
	close(fd);
	free(path);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*len = n - SNAP_TRAILER;
	return 0;
}

/* ---- compaction ---- */

uint64_t store_base(const struct store *s)
{
	return s->base;
}

int store_compact(struct store *s, store_replay_fn keep, void *arg, uint64_t *dropped,
		  char *err, size_t errlen)
{
	char *tmp = store__join(s->dir, STORE_LOG_NAME ".compact");
	uint8_t h[STORE_FILE_HEADER];
	uint8_t *buf = NULL;
	size_t cap = READ_BUF_SIZE, n = 0;
	uint64_t in = STORE_FILE_HEADER, out = STORE_FILE_HEADER, kept = 0, gone = 0;
	int fd = -1, rc = 0;

	if (!s->replayed || s->outstanding || s->closing) {
		free(tmp);
		return store__fail(err, errlen, ERR_INVAL, "compact: only after a replay, before"
				   " any append");
	}
	if (!tmp || !(buf = malloc(cap))) {
		rc = store__fail(err, errlen, ERR_NOMEM, "compact: out of memory");
		goto out;
	}
	if ((fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0640)) < 0 ||
	    flock(fd, LOCK_EX | LOCK_NB)) {
		rc = store__fail(err, errlen, ERR_IO, "create %s: %s", tmp, strerror(errno));
		goto out;
	}
	/* Records are read one at a time: the log was checked by the replay. */
	while (!rc && in < s->end) {
		uint8_t rh[STORE_REC_HEADER];
		uint32_t len;
		int k;

		if (store__pread_all(s->fd, rh, sizeof(rh), in) != (ssize_t)sizeof(rh)) {
			rc = store__fail(err, errlen, ERR_IO, "read %s: %s", s->path,
					 strerror(errno));
			break;
		}
		len = le_get32(rh + 12);
		if (n + sizeof(rh) + len > cap) {
			if ((rc = store__pwrite_all(fd, buf, n, out - n)))
				rc = store__fail(err, errlen, ERR_IO, "write %s: %s", tmp,
						 strerror(rc));
			n = 0;
		}
		if (rc)
			break;
		memcpy(buf + n, rh, sizeof(rh));
		if (store__pread_all(s->fd, buf + n + sizeof(rh), len, in + sizeof(rh)) !=
		    (ssize_t)len) {
			rc = store__fail(err, errlen, ERR_IO, "read %s: %s", s->path,
					 strerror(errno));
			break;
		}
		in += sizeof(rh) + len;
		if ((k = keep(arg, buf + n + sizeof(rh), len)) < 0) {
			rc = store__fail(err, errlen, k, "compact: %s", err_str(k));
		} else if (k) {
			n += sizeof(rh) + len;
			out += sizeof(rh) + len;
			kept++;
		} else {
			gone++;
		}
	}
	store__file_header_base(h, s->base + gone);
	if (!rc && ((rc = store__pwrite_all(fd, buf, n, out - n)) ||
		    (rc = store__pwrite_all(fd, h, sizeof(h), 0)) || (fsync(fd) && (rc = errno)) ||
		    (rename(tmp, s->path) && (rc = errno)) || (rc = store__fsync_dir(s->dir))))
		rc = store__fail(err, errlen, ERR_IO, "compact %s: %s", s->path, strerror(rc));
	if (rc) {
		unlink(tmp);
		goto out;
	}
	close(s->fd); /* the old inode and its lock: the new one is locked */
	s->base += gone;
	uv_mutex_lock(&s->mu);
	s->fd = fd;
	fd = -1;
	s->end = out;
	s->stats.records = kept;
	s->stats.bytes = out;
	uv_mutex_unlock(&s->mu);
	if (dropped)
		*dropped = gone;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(tmp);
	return rc;
}
