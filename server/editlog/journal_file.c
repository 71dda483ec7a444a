/*
 * journal_file.c - the file backend of the edit log: the write-ahead log
 * of store.h (one flock'd file in the data directory, group commit,
 * fdatasync before an append is done). One node writes it, so the
 * sequence an append expects is always the next one and it never
 * conflicts; a failed write or fsync fails it (ERR_IO) until the store's
 * probe finds that writes succeed again (store.h, store_append).
 */
#include "journal.h"

#include <stdio.h>

#include "err.h"
#include "store.h"

static int file_replay(void *be, journal_record_fn cb, void *arg,
		       struct journal_replay_stats *st)
{
	struct store_replay_stats rs;
	int rc = store_replay(be, cb, arg, &rs);

	snprintf(st->message, sizeof(st->message), "%s", rs.message);
	st->warning = rc == 0 && rs.message[0] != '\0';
	return rc;
}

static int file_append(void *be, const uint8_t *rec, size_t len, uint64_t first_seq,
		       void (*done)(void *arg, int status), void *arg)
{
	(void)first_seq;
	return store_append(be, rec, len, done, arg);
}

static void file_stats(void *be, struct journal_stats *st)
{
	struct store_stats ss;

	store_stats(be, &ss);
	st->records = ss.records;
	st->bytes = ss.bytes;
	st->commits = ss.commits;
	st->last_commit = ss.last_batch;
	st->failed = ss.failed;
	st->broken = ss.broken;
	st->os_error = ss.os_error;
}

static void file_close(void *be)
{
	store_close(be);
}

static int file_compact(void *be, journal_record_fn keep, void *arg, uint64_t *dropped,
			char *err, size_t errlen)
{
	return store_compact(be, keep, arg, dropped, err, errlen);
}

static uint64_t file_base(void *be)
{
	return store_base(be);
}

static int file_compact_live(void *be, uint64_t n, journal_compacted_fn done, void *arg)
{
	return store_compact_live(be, n, done, arg);
}

static const struct journal_ops file_ops = {
	"file", file_replay, file_append, file_stats, file_close, file_compact, file_base,
	NULL, NULL, NULL, NULL, file_compact_live, NULL,
};

int journal_file_open(const char *dir, struct uv_loop_s *loop,
		      const struct journal_ops **ops, void **be, char *err,
		      size_t errlen)
{
	struct store *s;
	int rc = store_open(dir, loop, NULL, &s, err, errlen);

	if (rc)
		return rc;
	*ops = &file_ops;
	*be = s;
	return 0;
}
