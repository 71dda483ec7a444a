/*
 * store_replay.c - reading the write-ahead log back: the record reader,
 * replay with torn-tail handling (a torn write is saved aside, anything
 * else refuses to start), and repair-log (see store.h, docs/edit-log.md).
 */
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

#include <xxhash.h>

#include "err.h"
#include "le.h"
#include "store.h"
#include "store_int.h"

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
		ssize_t got = store__pread_all(r->fd, r->buf, want, off);

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
	if (store__rec_sum(h + 12, n) != sum)
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

/* ---- replay ---- */

static int reader_init(struct reader *r, int fd, const char *path, char *msg,
		       size_t msglen)
{
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	if (fstat(fd, &st))
		return store__fail(msg, msglen, ERR_IO, "stat %s: %s", path, strerror(errno));
	r->size = (uint64_t)st.st_size;
	r->cap = READ_BUF_SIZE;
	if (!(r->buf = malloc(r->cap)))
		return store__fail(msg, msglen, ERR_NOMEM, "store: out of memory");
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
		if (!store__zeros(p, avail))
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
	z = store__rec_sum(tmp, (uint32_t)left) == sum;
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
		if (!(*saved = store__join(s->dir, name)))
			return store__fail(msg, ml, ERR_NOMEM, "store: out of memory");
		if (lstat(*saved, &st) && errno == ENOENT)
			break;
		free(*saved);
		*saved = NULL;
	}
	if (!*saved)
		return store__fail(msg, ml, ERR_IO, "%s: too many saved %s files", s->path, kind);
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
		rc = store__fail(msg, ml, ERR_IO, "truncate %s: %s", s->path, strerror(errno));
		free(saved);
		return rc;
	}
	st->torn_offset = off;
	st->torn_bytes = r->size - off;
	store__fail(msg, ml, 0, "warning: %s: dropped torn tail record at offset %llu (%llu"
	     " bytes, %s): the tail is not a complete record, so it was kept aside in %s;"
	     " it was acknowledged only if the disk lost a write it had completed"
	     " (appends are answered after their fdatasync)", s->path, (ull)off,
	     (ull)st->torn_bytes, why, saved);
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
		return store__fail(msg, ml, ERR_IO, "read %s: %s", s->path, strerror(r->err));
	if (kind == REC_NEWER) {
		st->bad_offset = off;
		return store__fail(msg, ml, ERR_VERSION,
			    "%s: record at offset %llu has an unknown format version"
			    " (written by a newer server?); refusing to replay", s->path,
			    (ull)off);
	}
	if ((k = find_valid(r, off + 1, &next)) < 0 ||
	    (!k && (torn = is_torn(r, off, kind, &why)) < 0))
		return store__fail(msg, ml, ERR_IO, "read %s: %s", s->path,
			    r->err ? strerror(r->err) : "out of memory");
	if (!k && torn)
		return drop_torn(s, r, why, st);
	st->bad_offset = off;
	if (k)
		snprintf(after, sizeof(after), "followed by a valid record at offset %llu",
			 (ull)next);
	else
		snprintf(after, sizeof(after), "the last record, not a torn write");
	return store__fail(msg, ml, ERR_CORRUPT,
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
			return store__fail(st->message, sizeof(st->message), rc,
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
		return store__fail(st->message, sizeof(st->message), ERR_INVAL,
			    "store: invalid arguments");
	if (s->outstanding)
		return store__fail(st->message, sizeof(st->message), ERR_BUSY,
			    "store: replay while appends are outstanding");
	uv_mutex_lock(&s->mu);
	rc = s->stats.failed;
	uv_mutex_unlock(&s->mu);
	if (rc)
		return store__fail(st->message, sizeof(st->message), rc,
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
		return store__fail(err, errlen, ERR_NOMEM, "store: out of memory");
	out = open(cut, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (out < 0) {
		free(buf);
		return store__fail(err, errlen, ERR_IO, "create %s: %s", cut, strerror(errno));
	}
	for (uint64_t p = off; p < size && !rc;) {
		size_t n = size - p < (1 << 20) ? (size_t)(size - p) : (1 << 20);
		ssize_t got = store__pread_all(fd, buf, n, p);

		if (got <= 0)
			rc = got < 0 ? errno : EIO;
		else
			rc = store__pwrite_all(out, buf, (size_t)got, p - off);
		p += got > 0 ? (uint64_t)got : 0;
	}
	if (!rc && fsync(out))
		rc = errno;
	close(out);
	free(buf);
	if (!rc)
		rc = store__fsync_dir(dir);
	if (rc)
		return store__fail(err, errlen, ERR_IO, "write %s: %s", cut, strerror(rc));
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
			return store__fail(err, errlen, ERR_IO, "read %s: %s", path, strerror(r->err));
		if (k != REC_OK)
			return store__fail(err, errlen, ERR_INVAL,
				    "%s: the record at offset %llu, before %llu, is bad (%s);"
				    " truncate at %llu instead", path, (ull)off, (ull)offset,
				    why, (ull)off);
		if (off + STORE_REC_HEADER + len > offset)
			return store__fail(err, errlen, ERR_INVAL,
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

	if ((rc = store__read_file_header(fd, path, err, errlen)) ||
	    (rc = reader_init(&r, fd, path, err, errlen)))
		return rc;
	if (offset < STORE_FILE_HEADER || offset > r.size)
		rc = store__fail(err, errlen, ERR_INVAL, "%s: offset %llu is outside %d..%llu",
			  path, (ull)offset, STORE_FILE_HEADER, (ull)r.size);
	else
		rc = check_prefix(&r, offset, kept, path, err, errlen);
	free(r.buf);
	if (rc)
		return rc;
	if (offset == r.size)
		return store__fail(err, errlen, 0, "%s: nothing after offset %llu; %llu records",
			    path, (ull)offset, (ull)*kept);
	snprintf(name, sizeof(name), STORE_LOG_NAME ".cut-%llu", (ull)offset);
	if (!(cut = store__join(dir, name)))
		return store__fail(err, errlen, ERR_NOMEM, "store: out of memory");
	if (!(rc = save_cut(fd, offset, r.size, cut, dir, err, errlen))) {
		if (ftruncate(fd, (off_t)offset) || fsync(fd))
			rc = store__fail(err, errlen, ERR_IO, "truncate %s: %s", path,
				  strerror(errno));
		else
			store__fail(err, errlen, 0, "%s: cut %llu bytes at offset %llu (saved to %s);"
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
		return store__fail(err, errlen, ERR_INVAL, "store: invalid arguments");
	if (!(path = store__join(dir, STORE_LOG_NAME)))
		return store__fail(err, errlen, ERR_NOMEM, "store: out of memory");
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		rc = store__fail(err, errlen, errno == ENOENT ? ERR_NOTFOUND : ERR_IO,
			  "open %s: %s", path, strerror(errno));
	else if (flock(fd, LOCK_EX | LOCK_NB))
		rc = store__fail(err, errlen, errno == EWOULDBLOCK ? ERR_BUSY : ERR_IO,
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
