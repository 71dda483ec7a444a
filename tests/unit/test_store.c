/*
 * test_store.c - unit tests for server/editlog/store.c: round trips, group commit,
 * torn tails, corruption in the middle and its repair, the directory lock,
 * file header checks, a failing disk and its recovery, the queue bound and
 * the replay speed
 * of 1,000,000 records. Each test works in a fresh directory under $TMPDIR
 * (default /tmp) that it removes at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>
#include <xxhash.h>

#include "batch.h"
#include "edit.h"
#include "editlog/store.h"
#include "err.h"

/* Test records: "rec NNNNNNNNNN" padded to PAYLOAD bytes. */
#define PAYLOAD 32
#define REC     (STORE_REC_HEADER + PAYLOAD)
#define AT(i)   ((uint64_t)STORE_FILE_HEADER + (uint64_t)(i) * REC)

struct fixture {
	char dir[1024];
	char log[1100];
	uv_loop_t loop;
};

/* What a replay saw: records must be numbered first, first + 1, ... */
struct seen {
	uint64_t n;
	uint64_t first;
	int bad;            /* a record out of order or of the wrong size */
	uint64_t last;      /* number of the last record */
};

/* Completion bookkeeping for a run of appends. */
struct acks {
	struct store *s;
	uint64_t calls;     /* callbacks run */
	uint64_t ok;        /* ... with status 0 */
	uint64_t errors;    /* ... with an error */
	int early;          /* a 0 arrived before its record was committed */
	int order;          /* an ok arrived after an error */
	int *per;           /* calls per record, when tracked */
	/* chain mode: each callback appends another record until total */
	uint64_t next, total;
};

struct ack {
	struct acks *a;
	uint64_t i;
};

static void rm_rf(const char *path)
{
	struct dirent *e;
	struct stat st;
	DIR *d;

	if (lstat(path, &st))
		return;
	if (S_ISDIR(st.st_mode) && (d = opendir(path))) {
		while ((e = readdir(d))) {
			char sub[PATH_MAX];

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			rm_rf(sub);
		}
		closedir(d);
		rmdir(path);
	} else
		unlink(path);
}

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/test_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir) || uv_loop_init(&f->loop)) {
		free(f);
		return -1;
	}
	snprintf(f->log, sizeof(f->log), "%s/%s", f->dir, STORE_LOG_NAME);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int rc;

	uv_run(&f->loop, UV_RUN_DEFAULT); /* frees closed handles */
	rc = uv_loop_close(&f->loop);
	rm_rf(f->dir);
	free(f);
	return rc;
}

static void payload(uint8_t p[PAYLOAD], uint64_t i)
{
	memset(p, '.', PAYLOAD);
	snprintf((char *)p, PAYLOAD, "rec %010llu", (unsigned long long)i);
}

static int count_cb(void *arg, const uint8_t *p, size_t len)
{
	struct seen *v = arg;
	uint8_t want[PAYLOAD];
	unsigned long long i;

	if (len != PAYLOAD || sscanf((const char *)p, "rec %llu", &i) != 1) {
		v->bad = 1;
		return 0;
	}
	payload(want, i);
	if (memcmp(p, want, PAYLOAD) || (v->n && i != v->last + 1) ||
	    (!v->n && i != v->first))
		v->bad = 1;
	v->last = i;
	v->n++;
	return 0;
}

static void done_cb(void *arg, int status)
{
	struct ack *k = arg;
	struct acks *a = k->a;
	struct store_stats st;

	a->calls++;
	if (a->per)
		a->per[k->i]++;
	if (status == 0) {
		/* committed records counted before any callback of the commit */
		store_stats(a->s, &st);
		if (st.records < k->i + 1)
			a->early = 1;
		if (a->errors)
			a->order = 1;
		a->ok++;
	} else
		a->errors++;
	if (a->total && a->next < a->total) {
		uint8_t p[PAYLOAD];

		k->i = a->next++;
		payload(p, k->i);
		assert_int_equal(store_append(a->s, p, PAYLOAD, done_cb, k), 0);
		return;
	}
	free(k);
}

/* Append records first .. first + n - 1; each gets a done_cb. */
static void append_n(struct acks *a, uint64_t first, uint64_t n)
{
	uint8_t p[PAYLOAD];

	for (uint64_t i = first; i < first + n; i++) {
		struct ack *k = malloc(sizeof(*k));

		assert_non_null(k);
		k->a = a;
		k->i = i;
		payload(p, i);
		assert_int_equal(store_append(a->s, p, PAYLOAD, done_cb, k), 0);
	}
}

/* Open and replay; the replay must succeed and see n records from 0. */
static struct store *open_replayed(struct fixture *f, uint64_t n,
				   struct store_replay_stats *rs)
{
	struct store_replay_stats local;
	struct seen v = { 0 };
	struct store *s = NULL;
	char err[256];

	if (!rs)
		rs = &local;
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, count_cb, &v, rs), 0);
	assert_false(v.bad);
	assert_int_equal(v.n, n);
	assert_int_equal(rs->records, n);
	return s;
}

/* Open, replay, append n records, wait for them, close. */
static void write_log(struct fixture *f, uint64_t n)
{
	struct acks a = { 0 };

	a.s = open_replayed(f, 0, NULL);
	append_n(&a, 0, n);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.ok, n);
	store_close(a.s);
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *p;

	assert_non_null(fp);
	*n = (size_t)file_size(path);
	p = malloc(*n + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, *n, fp), *n);
	fclose(fp);
	return p;
}

static void poke(const char *path, uint64_t off, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, bytes, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void flip(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= 0x20;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
	close(fd);
}

static double now_s(void)
{
	return (double)uv_hrtime() / 1e9;
}

static void test_store_appends_then_replays_every_record_in_order(void **state)
{
	struct fixture *f = *state;
	struct store_replay_stats rs;
	struct store_stats st;
	struct acks a = { 0 };
	struct store *s;

	a.s = open_replayed(f, 0, &rs);
	assert_int_equal(rs.end, STORE_FILE_HEADER);
	assert_string_equal(rs.message, "");
	append_n(&a, 0, 10);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.calls, 10);
	assert_int_equal(a.ok, 10);
	assert_false(a.early);
	store_stats(a.s, &st);
	assert_int_equal(st.records, 10);
	assert_int_equal(st.bytes, AT(10));
	assert_true(st.commits >= 1 && st.commits <= 10);
	assert_int_equal(st.appends, 10);
	assert_int_equal(st.failed, 0);
	store_close(a.s);
	assert_int_equal(file_size(f->log), AT(10));

	s = open_replayed(f, 10, &rs);
	assert_int_equal(rs.end, AT(10));
	assert_int_equal(rs.bytes, 10 * PAYLOAD);
	assert_int_equal(rs.torn_bytes, 0);
	store_close(s);
}

static void test_store_concurrent_appends_share_commits(void **state)
{
	struct fixture *f = *state;
	enum { N = 1000 };
	struct store_stats st;
	struct acks a = { 0 };
	struct store *s;

	a.per = calloc(N, sizeof(int));
	a.s = open_replayed(f, 0, NULL);
	append_n(&a, 0, N);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	for (int i = 0; i < N; i++)
		assert_int_equal(a.per[i], 1);
	assert_int_equal(a.ok, N);
	assert_false(a.early);
	store_stats(a.s, &st);
	print_message("group commit: %d appends in %llu commits (largest %llu)\n", N,
		      (unsigned long long)st.commits, (unsigned long long)st.max_batch);
	assert_true(st.commits < N);
	assert_true(st.max_batch > 1);
	assert_int_equal(st.records, N);
	store_close(a.s);
	free(a.per);

	s = open_replayed(f, N, NULL);
	store_close(s);
}

static void test_store_appends_during_a_commit_wait_for_the_next(void **state)
{
	struct fixture *f = *state;
	enum { CLIENTS = 16, TOTAL = 3000 };
	struct store_stats st;
	struct acks a = { 0 };
	struct store *s;
	double t;

	/* 16 clients, each appending its next record when the last is durable */
	a.per = calloc(TOTAL, sizeof(int));
	a.s = open_replayed(f, 0, NULL);
	a.total = TOTAL;
	a.next = CLIENTS;
	t = now_s();
	append_n(&a, 0, CLIENTS);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	t = now_s() - t;
	assert_int_equal(a.calls, TOTAL);
	assert_int_equal(a.ok, TOTAL);
	assert_false(a.early);
	for (int i = 0; i < TOTAL; i++)
		assert_int_equal(a.per[i], 1);
	store_stats(a.s, &st);
	print_message("16 clients: %d durable appends in %.3f s = %.0f/s, %llu fdatasyncs"
		      " (%.1f records each)\n", TOTAL, t, TOTAL / t,
		      (unsigned long long)st.commits, (double)TOTAL / (double)st.commits);
	assert_true(st.commits < TOTAL);
	store_close(a.s);
	free(a.per);

	s = open_replayed(f, TOTAL, NULL);
	store_close(s);
}

/* The .torn- file beside the log holds exactly want[0..n). */
static void assert_saved(struct fixture *f, const char *kind, uint64_t off,
			 const uint8_t *want, size_t n, const char *message)
{
	char path[1200];
	uint8_t *got;
	size_t len;

	snprintf(path, sizeof(path), "%s.%s-%llu", f->log, kind, (unsigned long long)off);
	got = slurp(path, &len);
	assert_int_equal(len, n);
	assert_memory_equal(got, want, n);
	free(got);
	if (message)
		assert_non_null(strstr(message, path));
}

/* Replay of the damaged log must refuse with ERR_CORRUPT at bad, file untouched. */
static void assert_refused(struct fixture *f, uint64_t bad, const char *why)
{
	struct store_replay_stats rs;
	struct seen v = { 0 };
	struct store *s;
	uint8_t *before, *after;
	size_t n0, n1;
	char err[256], want[1300];

	before = slurp(f->log, &n0);
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, count_cb, &v, &rs), ERR_CORRUPT);
	assert_int_equal(rs.bad_offset, bad);
	assert_int_equal(rs.torn_bytes, 0);
	snprintf(want, sizeof(want), "corrupt record at offset %llu (%s",
		 (unsigned long long)bad, why);
	if (!strstr(rs.message, want))
		print_message("got: %s\nwant: %s\n", rs.message, want);
	assert_non_null(strstr(rs.message, want));
	snprintf(want, sizeof(want), "terrain-server repair-log --data-dir %s --truncate-at %llu",
		 f->dir, (unsigned long long)bad);
	assert_non_null(strstr(rs.message, want));
	assert_int_equal(store_append(s, "x", 1, done_cb, NULL), ERR_INVAL);
	store_close(s);
	after = slurp(f->log, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	free(before);
	free(after);
}

static void test_store_replay_drops_a_record_cut_mid_write(void **state)
{
	struct fixture *f = *state;
	struct store_replay_stats rs;
	struct acks a = { 0 };
	uint8_t *whole;
	size_t n;
	char want[1300];
	struct store *s;

	write_log(f, 5);
	whole = slurp(f->log, &n);
	/* a crash in the middle of the last record's payload */
	assert_int_equal(truncate(f->log, (off_t)(AT(4) + 20)), 0);
	s = open_replayed(f, 4, &rs);
	assert_int_equal(rs.torn_offset, AT(4));
	assert_int_equal(rs.torn_bytes, 20);
	assert_int_equal(rs.end, AT(4));
	snprintf(want, sizeof(want), "dropped torn tail record at offset %llu (20 bytes",
		 (unsigned long long)AT(4));
	assert_non_null(strstr(rs.message, want));
	assert_non_null(strstr(rs.message, "runs past the end"));
	print_message("%s\n", rs.message);
	assert_int_equal(file_size(f->log), AT(4));
	/* the dropped bytes are kept beside the log */
	assert_saved(f, "torn", AT(4), whole + AT(4), 20, rs.message);

	/* later appends go right after the last good record */
	a.s = s;
	append_n(&a, 4, 2);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.ok, 2);
	store_close(s);
	assert_int_equal(file_size(f->log), AT(6));
	s = open_replayed(f, 6, &rs);
	assert_int_equal(rs.torn_bytes, 0);
	store_close(s);

	/* a crash inside the last record's header */
	free(whole);
	whole = slurp(f->log, &n);
	assert_int_equal(truncate(f->log, (off_t)(AT(5) + 7)), 0);
	s = open_replayed(f, 5, &rs);
	assert_int_equal(rs.torn_offset, AT(5));
	assert_int_equal(rs.torn_bytes, 7);
	assert_non_null(strstr(rs.message, "short record header"));
	assert_saved(f, "torn", AT(5), whole + AT(5), 7, rs.message);

	/* torn again at an offset already saved: a second file, the first kept */
	a = (struct acks){ .s = s };
	append_n(&a, 5, 1);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.ok, 1);
	store_close(s);
	assert_int_equal(truncate(f->log, (off_t)(AT(5) + 3)), 0);
	s = open_replayed(f, 5, &rs);
	assert_int_equal(rs.torn_bytes, 3);
	assert_non_null(strstr(rs.message, ".torn-"));
	snprintf(want, sizeof(want), "%s.torn-%llu.1", f->log, (unsigned long long)AT(5));
	assert_non_null(strstr(rs.message, want));
	assert_int_equal(file_size(want), 3);
	assert_saved(f, "torn", AT(5), whole + AT(5), 7, NULL);
	store_close(s);
	free(whole);
}

static void test_store_replay_drops_a_zero_filled_tail(void **state)
{
	struct fixture *f = *state;
	struct store_replay_stats rs;
	uint8_t zero[5000] = { 0 };
	struct store *s;

	write_log(f, 3);
	/* a file extended by a crash, its new blocks never written */
	poke(f->log, AT(3), zero, sizeof(zero));
	s = open_replayed(f, 3, &rs);
	assert_int_equal(rs.torn_offset, AT(3));
	assert_int_equal(rs.torn_bytes, sizeof(zero));
	assert_non_null(strstr(rs.message, "zero-filled tail"));
	assert_int_equal(file_size(f->log), AT(3));
	assert_saved(f, "torn", AT(3), zero, sizeof(zero), rs.message);
	store_close(s);
	s = open_replayed(f, 3, &rs);
	assert_int_equal(rs.torn_bytes, 0);
	store_close(s);

	/* a single zero byte, too short for a record header */
	poke(f->log, AT(3), zero, 1);
	s = open_replayed(f, 3, &rs);
	assert_int_equal(rs.torn_bytes, 1);
	store_close(s);
}

static void test_store_replay_refuses_a_damaged_last_record(void **state)
{
	struct fixture *f = *state;
	static const struct {
		uint64_t at;          /* byte of the last record flipped */
		const char *why;
	} flips[] = {
		{ STORE_REC_HEADER + 5, "checksum mismatch" },  /* payload */
		{ PAYLOAD + STORE_REC_HEADER - 1, "checksum mismatch" }, /* its last byte */
		{ 6, "checksum mismatch" },                      /* checksum */
		{ 1, "bad record magic" },                       /* magic */
		{ 13, "a complete record with a damaged length" }, /* length: larger */
	};
	uint8_t junk[100], hdr[STORE_REC_HEADER] = { 'W', 'R', '0', '1', 0 };
	uint8_t b;

	write_log(f, 3);
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
		flip(f->log, AT(2) + flips[i].at);
		assert_refused(f, AT(2), flips[i].why);
		flip(f->log, AT(2) + flips[i].at);
	}
	/* a length shorter than the record */
	b = PAYLOAD / 2;
	poke(f->log, AT(2) + 12, &b, 1);
	assert_refused(f, AT(2), "checksum mismatch");
	b = PAYLOAD;
	poke(f->log, AT(2) + 12, &b, 1);
	/* a length beyond the record limit */
	b = 0x7f;
	poke(f->log, AT(2) + 15, &b, 1);
	assert_refused(f, AT(2), "bad record length");
	b = 0;
	poke(f->log, AT(2) + 15, &b, 1);

	/* bytes after the last record that are no record cut short */
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	poke(f->log, AT(3), junk, sizeof(junk));
	assert_refused(f, AT(3), "bad record magic");
	assert_int_equal(truncate(f->log, (off_t)AT(3) + 3), 0);
	assert_refused(f, AT(3), "short record header");
	/* a record header of zero length, then zeros */
	memset(junk, 0, sizeof(junk));
	poke(f->log, AT(3), junk, sizeof(junk));
	poke(f->log, AT(3), hdr, 4);
	assert_refused(f, AT(3), "bad record length");

	/* but a good-looking header whose length runs past the end is torn */
	assert_int_equal(truncate(f->log, (off_t)AT(3)), 0);
	hdr[12] = 200;
	poke(f->log, AT(3), hdr, sizeof(hdr));
	poke(f->log, AT(3) + sizeof(hdr), junk, 50);
	{
		struct store_replay_stats rs;
		struct store *s = open_replayed(f, 3, &rs);

		assert_int_equal(rs.torn_bytes, sizeof(hdr) + 50);
		assert_non_null(strstr(rs.message, "past the end"));
		store_close(s);
	}
	assert_int_equal(file_size(f->log), AT(3));
}

static void test_store_replay_refuses_a_flipped_byte_in_the_middle_record(void **state)
{
	struct fixture *f = *state;
	static const uint64_t where[] = {
		STORE_REC_HEADER + 9, /* payload */
		13,                   /* length: the next record is found anyway */
		1,                    /* magic */
		6,                    /* checksum */
	};
	struct store_replay_stats rs;
	struct seen v = { 0 };
	struct store *s;
	size_t n0, n1;
	uint8_t *before, *after;
	char err[256], want[64];

	write_log(f, 5);
	for (size_t w = 0; w < sizeof(where) / sizeof(where[0]); w++) {
		flip(f->log, AT(2) + where[w]);
		before = slurp(f->log, &n0);
		assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)),
				 0);
		memset(&v, 0, sizeof(v));
		assert_int_equal(store_replay(s, count_cb, &v, &rs), ERR_CORRUPT);
		assert_int_equal(rs.bad_offset, AT(2));
		snprintf(want, sizeof(want), "offset %llu", (unsigned long long)AT(2));
		assert_non_null(strstr(rs.message, want));
		assert_non_null(strstr(rs.message, "repair-log"));
		if (w == 0)
			print_message("%s\n", rs.message);
		/* the replay refused: no appends, file untouched */
		assert_int_equal(store_append(s, "x", 1, done_cb, NULL), ERR_INVAL);
		store_close(s);
		after = slurp(f->log, &n1);
		assert_int_equal(n0, n1);
		assert_memory_equal(before, after, n0);
		free(before);
		free(after);
		flip(f->log, AT(2) + where[w]); /* undo */
	}
	s = open_replayed(f, 5, NULL);
	store_close(s);
}

static void test_store_truncate_at_the_bad_record_keeps_the_records_before_it(
	void **state)
{
	struct fixture *f = *state;
	struct store_replay_stats rs;
	struct acks a = { 0 };
	struct seen v = { 0 };
	struct store *s;
	uint64_t kept = 0;
	char err[512], cut[1200];

	write_log(f, 5);
	flip(f->log, AT(2) + STORE_REC_HEADER);
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, count_cb, &v, &rs), ERR_CORRUPT);

	/* not while a server holds the directory */
	assert_int_equal(store_truncate(f->dir, rs.bad_offset, &kept, err, sizeof(err)),
			 ERR_BUSY);
	store_close(s);

	assert_int_equal(store_truncate(f->dir, rs.bad_offset, &kept, err, sizeof(err)),
			 0);
	print_message("%s\n", err);
	assert_int_equal(kept, 2);
	assert_int_equal(file_size(f->log), AT(2));
	snprintf(cut, sizeof(cut), "%s.cut-%llu", f->log, (unsigned long long)AT(2));
	assert_int_equal(file_size(cut), 3 * REC);

	a.s = open_replayed(f, 2, &rs);
	assert_int_equal(rs.torn_bytes, 0);
	append_n(&a, 2, 1);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.ok, 1);
	store_close(a.s);
	s = open_replayed(f, 3, NULL);
	store_close(s);
}

static void test_store_truncate_refuses_an_offset_that_is_not_a_record_boundary(
	void **state)
{
	struct fixture *f = *state;
	uint8_t *before, *after;
	size_t n0, n1;
	char err[512];

	write_log(f, 4);
	before = slurp(f->log, &n0);
	assert_int_equal(store_truncate(f->dir, AT(2) + 3, NULL, err, sizeof(err)),
			 ERR_INVAL);
	assert_non_null(strstr(err, "inside the record"));
	assert_int_equal(store_truncate(f->dir, AT(4) + 1, NULL, err, sizeof(err)),
			 ERR_INVAL);
	assert_int_equal(store_truncate(f->dir, 5, NULL, err, sizeof(err)), ERR_INVAL);
	/* a bad record before the offset: cut there instead */
	flip(f->log, AT(1) + STORE_REC_HEADER);
	assert_int_equal(store_truncate(f->dir, AT(3), NULL, err, sizeof(err)), ERR_INVAL);
	assert_non_null(strstr(err, "truncate at"));
	flip(f->log, AT(1) + STORE_REC_HEADER);
	after = slurp(f->log, &n1);
	assert_int_equal(n0, n1);
	assert_memory_equal(before, after, n0);
	free(before);
	free(after);
	/* the end of the log: nothing to cut */
	assert_int_equal(store_truncate(f->dir, AT(4), NULL, err, sizeof(err)), 0);
	assert_int_equal(file_size(f->log), AT(4));
	rm_rf(f->log);
	assert_int_equal(store_truncate(f->dir, AT(0), NULL, err, sizeof(err)),
			 ERR_NOTFOUND);
}

static void test_store_second_open_of_a_directory_fails_while_the_first_is_open(
	void **state)
{
	struct fixture *f = *state;
	struct store *s1 = NULL, *s2 = NULL;
	char err[512];

	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s1, err, sizeof(err)), 0);
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s2, err, sizeof(err)),
			 ERR_BUSY);
	assert_null(s2);
	print_message("%s\n", err);
	assert_non_null(strstr(err, "in use by another process"));
	assert_non_null(strstr(err, f->dir));
	store_close(s1);
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s2, err, sizeof(err)), 0);
	store_close(s2);
}

/* Open must fail with code and a message holding each of the NULL-ended texts. */
static void assert_open_fails(struct fixture *f, int code, ...)
{
	struct store *s = NULL;
	const char *want;
	char err[512];
	va_list ap;

	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), code);
	assert_null(s);
	va_start(ap, code);
	while ((want = va_arg(ap, const char *)))
		if (!strstr(err, want)) {
			print_message("got: %s\nwant: %s\n", err, want);
			fail();
		}
	va_end(ap);
}

static void test_store_open_refuses_a_file_header_that_is_not_a_log_header(
	void **state)
{
	struct fixture *f = *state;
	struct store_replay_stats rs;
	struct seen v = { 0 };
	struct store *s = NULL;
	uint8_t b, h[STORE_FILE_HEADER];
	char err[512];
	int fd;

	write_log(f, 2);
	flip(f->log, 0);
	assert_open_fails(f, ERR_MAGIC, "not an edit log (bad magic", "docs/edit-log.md",
			  "move it aside", NULL);
	flip(f->log, 0);

	/* a damaged version byte is damage, not a newer format (65281) */
	b = 0xff;
	poke(f->log, 5, &b, 1);
	assert_open_fails(f, ERR_CORRUPT, "not an edit log (file header checksum mismatch",
			  "damaged header", NULL);
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)),
			 ERR_CORRUPT);
	assert_null(strstr(err, "65281"));
	b = 0;
	poke(f->log, 5, &b, 1);

	flip(f->log, 9); /* reserved field: the header checksum catches it */
	assert_open_fails(f, ERR_CORRUPT, "not an edit log", NULL);
	flip(f->log, 9);

	/* a newer format keeps the checksum where it is: refused by version */
	fd = open(f->log, O_RDONLY);
	assert_int_equal(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	h[4] = 2;
	{
		uint64_t sum = XXH3_64bits(h, 24);

		for (int i = 0; i < 8; i++)
			h[24 + i] = (uint8_t)(sum >> (8 * i));
	}
	poke(f->log, 0, h, sizeof(h));
	assert_open_fails(f, ERR_VERSION, "log format version 2", "newer server", NULL);
	h[4] = 1;
	{
		uint64_t sum = XXH3_64bits(h, 24);

		for (int i = 0; i < 8; i++)
			h[24 + i] = (uint8_t)(sum >> (8 * i));
	}
	poke(f->log, 0, h, sizeof(h));

	/* a record of a newer format at the end is not mistaken for a torn tail */
	b = '2';
	poke(f->log, AT(1) + 3, &b, 1);
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, count_cb, &v, &rs), ERR_VERSION);
	assert_int_equal(rs.bad_offset, AT(1));
	store_close(s);
	assert_int_equal(file_size(f->log), AT(2));
}

static void test_store_open_creates_the_directory_and_a_fresh_log(void **state)
{
	struct fixture *f = *state;
	char dir[1100], log[1200], err[512];
	struct store *s = NULL;
	struct stat st;
	int fd;

	snprintf(dir, sizeof(dir), "%s/a/b/data", f->dir);
	assert_int_equal(store_open(dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0027, 0);
	snprintf(log, sizeof(log), "%s/%s", dir, STORE_LOG_NAME);
	assert_int_equal(file_size(log), STORE_FILE_HEADER);
	store_close(s);

	/* an empty file is a creation cut short by a crash */
	assert_int_equal(truncate(log, 0), 0);
	s = NULL;
	assert_int_equal(store_open(dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(file_size(log), STORE_FILE_HEADER);
	store_close(s);

	/* so is a header's worth of zeros, as a crash may leave it */
	fd = open(log, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, (char[STORE_FILE_HEADER]){ 0 }, STORE_FILE_HEADER),
			 STORE_FILE_HEADER);
	close(fd);
	assert_int_equal(store_open(dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	store_close(s);
	s = NULL;
	assert_int_equal(store_open(dir, NULL, NULL, &s, err, sizeof(err)), 0); /* valid now */
	store_close(s);

	/* a short file that is not a header prefix is someone else's */
	fd = open(log, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	assert_int_equal(store_open(dir, &f->loop, NULL, &s, err, sizeof(err)), ERR_MAGIC);
	assert_non_null(strstr(err, "not an edit log (5 bytes"));

	/* a data directory path that is a file */
	assert_int_equal(store_open(log, &f->loop, NULL, &s, err, sizeof(err)), ERR_IO);
	assert_non_null(strstr(err, "not a directory"));
}

static void test_store_append_is_refused_before_a_replay_and_without_a_loop(
	void **state)
{
	struct fixture *f = *state;
	struct store_replay_stats rs;
	struct seen v = { 0 };
	struct store *s;
	char err[256];

	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_append(s, "x", 1, done_cb, NULL), ERR_INVAL);
	assert_int_equal(store_replay(s, count_cb, &v, &rs), 0);
	assert_int_equal(store_append(s, "x", 0, done_cb, NULL), ERR_INVAL);
	assert_int_equal(store_append(s, "x", STORE_RECORD_MAX + 1, done_cb, NULL),
			 ERR_INVAL);
	assert_int_equal(store_append(s, "x", 1, NULL, NULL), ERR_INVAL);
	store_close(s);

	assert_int_equal(store_open(f->dir, NULL, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, count_cb, &v, &rs), 0);
	assert_int_equal(store_append(s, "x", 1, done_cb, NULL), ERR_INVAL);
	store_close(s);
}

/* Stops the replay at the second record. */
static int stop_cb(void *arg, const uint8_t *p, size_t len)
{
	int *n = arg;

	(void)p;
	(void)len;
	return ++*n == 2 ? ERR_RANGE : 0;
}

static void test_store_replay_stops_when_the_callback_fails(void **state)
{
	struct fixture *f = *state;
	struct store_replay_stats rs;
	struct store *s;
	char err[256];
	int n = 0;

	write_log(f, 3);
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, stop_cb, &n, &rs), ERR_RANGE);
	assert_int_equal(n, 2);
	assert_non_null(strstr(rs.message, "stopped"));
	assert_int_equal(store_append(s, "x", 1, done_cb, NULL), ERR_INVAL);
	store_close(s);
	assert_int_equal(file_size(f->log), AT(3));
}

static void test_store_append_beyond_the_queue_bound_is_busy(void **state)
{
	struct fixture *f = *state;
	struct store_options o = { 1 }; /* raised to one largest record */
	struct store_replay_stats rs;
	struct store_stats st;
	struct acks a = { 0 };
	struct seen v = { 0 };
	uint8_t *big = calloc(1, STORE_RECORD_MAX);
	uint64_t busy = 0, accepted = 0;
	char err[256];

	assert_non_null(big);
	assert_int_equal(store_open(f->dir, &f->loop, &o, &a.s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(a.s, count_cb, &v, &rs), 0);
	/* the queue holds one record; the writer is busy with another */
	for (int i = 0; i < 200 && busy < 3; i++) {
		struct ack *k = malloc(sizeof(*k));
		int rc;

		k->a = &a;
		k->i = 0;
		rc = store_append(a.s, big, STORE_RECORD_MAX, done_cb, k);
		if (rc == ERR_BUSY) {
			busy++;
			free(k);
		} else {
			assert_int_equal(rc, 0);
			accepted++;
		}
	}
	uv_run(&f->loop, UV_RUN_DEFAULT);
	store_stats(a.s, &st);
	print_message("queue bound: %llu accepted, %llu busy\n",
		      (unsigned long long)accepted, (unsigned long long)busy);
	assert_true(busy > 0);
	assert_int_equal(st.rejected, busy);
	assert_int_equal(a.ok, accepted);
	assert_int_equal(st.records, accepted);
	store_close(a.s);
	free(big);
}

/* Run the loop until the store's failure is over (its probe succeeded),
 * at most 20 s. */
static int wait_recovered(struct fixture *f, struct store *s)
{
	struct store_stats st;

	for (int i = 0; i < 2000; i++) {
		store_stats(s, &st);
		if (!st.failed)
			return 1;
		uv_run(&f->loop, UV_RUN_NOWAIT);
		usleep(10000);
	}
	return 0;
}

static void test_store_failed_write_fails_every_waiting_append_until_a_write_succeeds(
	void **state)
{
	struct fixture *f = *state;
	enum { N = 40 };
	struct store_replay_stats rs;
	struct store_stats st;
	struct acks a = { 0 };
	struct rlimit old, lim;
	struct seen v = { 0 };
	struct store *s;
	uint8_t p[PAYLOAD];
	uint64_t acked;
	char err[256];

	a.s = open_replayed(f, 0, NULL);
	append_n(&a, 0, 3);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.ok, 3);

	/* the file may not grow past 5 records: writes beyond get EFBIG */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = AT(5);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	append_n(&a, 3, N - 3);
	uv_run(&f->loop, UV_RUN_DEFAULT);

	assert_int_equal(a.calls, N);
	assert_true(a.errors > 0);
	assert_false(a.order);   /* successes, then only errors */
	assert_false(a.early);
	store_stats(a.s, &st);
	assert_int_equal(st.failed, ERR_IO);
	assert_int_equal(st.failures, 1);
	payload(p, N);
	assert_int_equal(store_append(a.s, p, PAYLOAD, done_cb, NULL), ERR_IO);
	acked = a.ok;
	print_message("failing disk: %llu acknowledged, %llu failed\n",
		      (unsigned long long)acked, (unsigned long long)a.errors);
	/* while the limit holds, the probes fail: still failed a second later */
	usleep(1000 * 1000);
	store_stats(a.s, &st);
	assert_int_equal(st.failed, ERR_IO);
	assert_int_equal(st.recoveries, 0);
	assert_int_equal(file_size(f->log), AT(acked)); /* the probe cut the tail */

	/* room again: the probe finds a write succeeds, appends resume at the
	 * end of the last acknowledged record */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_true(wait_recovered(f, a.s));
	store_stats(a.s, &st);
	assert_int_equal(st.recoveries, 1);
	a.calls = a.errors = 0;
	append_n(&a, acked, 5);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.errors, 0);
	assert_int_equal(a.ok, acked + 5);
	store_close(a.s);

	/* after a restart: exactly the acknowledged records, in order, and no
	 * torn tail (nothing of the failed commit is left) */
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, count_cb, &v, &rs), 0);
	assert_false(v.bad);
	assert_int_equal(v.n, acked + 5);
	assert_int_equal(rs.end, AT(acked + 5));
	assert_int_equal(rs.torn_bytes, 0);
	store_close(s);
}

static void test_store_close_commits_the_queued_appends(void **state)
{
	struct fixture *f = *state;
	struct acks a = { 0 };
	struct store *s;

	a.s = open_replayed(f, 0, NULL);
	append_n(&a, 0, 50);
	store_close(a.s); /* no loop run: callbacks come from close */
	assert_int_equal(a.calls, 50);
	assert_int_equal(a.ok, 50);
	s = open_replayed(f, 50, NULL);
	store_close(s);
}

/* Replay callback for the million: decode the batch and its edit. */
struct million {
	uint64_t n;
	int bad;
};

static int million_cb(void *arg, const uint8_t *p, size_t len)
{
	struct million *m = arg;
	struct batch b;
	struct edit e;

	if (batch_decode(p, len, &b) || b.first_seq != m->n + 1 ||
	    edit_decode(b.edits, EDIT_WIRE_SIZE, &e) || e.x_mm != (int64_t)m->n)
		m->bad = 1;
	m->n++;
	return 0;
}

/* keep records whose index is odd, or fail at fail_at */
static int keep_odd(void *arg, const uint8_t *p, size_t len)
{
	unsigned long long i = 0;

	(void)arg;
	assert_int_equal(len, PAYLOAD);
	assert_int_equal(sscanf((const char *)p, "rec %llu", &i), 1);
	return (int)(i & 1);
}

static int skip_all(void *arg, const uint8_t *p, size_t len)
{
	(void)arg, (void)p, (void)len;
	return 0;
}

static int keep_fail(void *arg, const uint8_t *p, size_t len)
{
	(void)arg, (void)p, (void)len;
	return ERR_NOMEM;
}

struct odd_seen {
	uint64_t n, next;
	int bad;
};

static int odd_cb(void *arg, const uint8_t *p, size_t len)
{
	struct odd_seen *v = arg;
	unsigned long long i = 0;

	if (len != PAYLOAD || sscanf((const char *)p, "rec %llu", &i) != 1 || i != v->next)
		v->bad = 1;
	v->next = i + 2;
	v->n++;
	return 0;
}

static void test_store_compact_keeps_what_the_caller_keeps_and_counts_the_rest(void **state)
{
	struct fixture *f = *state;
	struct odd_seen v = { 0, 1, 0 };
	struct store_stats st;
	struct acks a = { 0 };
	struct store *s = NULL;
	uint64_t dropped = 0;
	char err[256];

	write_log(f, 100);
	s = open_replayed(f, 100, NULL);
	assert_int_equal(store_base(s), 0);
	/* a failing keep changes nothing */
	assert_int_equal(store_compact(s, keep_fail, NULL, &dropped, err, sizeof(err)),
			 ERR_NOMEM);
	assert_int_equal(file_size(f->log), AT(100));
	assert_int_equal(store_compact(s, keep_odd, NULL, &dropped, err, sizeof(err)), 0);
	assert_int_equal(dropped, 50);
	assert_int_equal(store_base(s), 50);
	assert_int_equal(file_size(f->log), AT(50));
	store_stats(s, &st);
	assert_int_equal(st.records, 50);
	/* the new file is locked as the old one was */
	{
		struct store *t = NULL;

		assert_int_equal(store_open(f->dir, NULL, NULL, &t, err, sizeof(err)), ERR_BUSY);
	}
	/* appends go on at the end of the new file */
	a.s = s;
	append_n(&a, 101, 1);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.ok, 1);
	store_close(s);
	assert_int_equal(file_size(f->log), AT(51));

	/* a new open sees the base and the odd records, then record 101 */
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_base(s), 50);
	assert_int_equal(store_replay(s, odd_cb, &v, NULL), 0);
	assert_false(v.bad);
	assert_int_equal(v.n, 51);
	store_close(s);
}

static void test_store_compact_of_everything_leaves_a_header_with_the_base(void **state)
{
	struct fixture *f = *state;
	struct store *s;
	uint64_t dropped;
	char err[256];

	write_log(f, 10);
	s = open_replayed(f, 10, NULL);
	assert_int_equal(store_compact(s, keep_odd, NULL, &dropped, err, sizeof(err)), 0);
	store_close(s);
	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, skip_all, NULL, NULL), 0);
	assert_int_equal(store_compact(s, skip_all, NULL, &dropped, err, sizeof(err)), 0);
	assert_int_equal(dropped, 5);
	store_close(s);
	assert_int_equal(file_size(f->log), STORE_FILE_HEADER);
	s = open_replayed(f, 0, NULL);
	assert_int_equal(store_base(s), 10);
	store_close(s);
}

static void test_store_snapshot_is_written_whole_or_not_at_all(void **state)
{
	struct fixture *f = *state;
	struct store_snap *w;
	static uint8_t big[3 << 20];
	uint8_t *buf;
	char err[256], path[PATH_MAX];
	size_t len, i;
	uint64_t bytes;

	assert_int_equal(store_snap_read(f->dir, &buf, &len, err, sizeof(err)), ERR_NOTFOUND);
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + (i >> 11));
	assert_int_equal(store_snap_begin(f->dir, &w), 0);
	assert_int_equal(store_snap_write(w, "head", 4), 0);
	assert_int_equal(store_snap_write(w, big, sizeof(big)), 0); /* past the buffer */
	assert_int_equal(store_snap_commit(w, &bytes), 0);
	assert_int_equal(bytes, 4 + sizeof(big) + 12);
	assert_int_equal(store_snap_read(f->dir, &buf, &len, err, sizeof(err)), 0);
	assert_int_equal(len, 4 + sizeof(big));
	assert_memory_equal(buf, "head", 4);
	assert_memory_equal(buf + 4, big, sizeof(big));
	free(buf);

	/* an abandoned one leaves the last one in place */
	assert_int_equal(store_snap_begin(f->dir, &w), 0);
	assert_int_equal(store_snap_write(w, "other", 5), 0);
	store_snap_abort(w);
	snprintf(path, sizeof(path), "%s/%s.tmp", f->dir, STORE_SNAP_NAME);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(store_snap_read(f->dir, &buf, &len, err, sizeof(err)), 0);
	assert_int_equal(len, 4 + sizeof(big));
	free(buf);

	/* a flipped byte or a cut is found */
	snprintf(path, sizeof(path), "%s/%s", f->dir, STORE_SNAP_NAME);
	flip(path, 1000);
	assert_int_equal(store_snap_read(f->dir, &buf, &len, err, sizeof(err)), ERR_CORRUPT);
	assert_non_null(strstr(err, "checksum mismatch"));
	flip(path, 1000);
	assert_int_equal(store_snap_read(f->dir, &buf, &len, err, sizeof(err)), 0);
	free(buf);
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(store_snap_read(f->dir, &buf, &len, err, sizeof(err)), ERR_CORRUPT);
}

static void test_store_replays_a_million_records_in_seconds(void **state)
{
	struct fixture *f = *state;
	enum { N = 1000000, ROUND = 100000 };
	struct store_replay_stats rs;
	struct store_stats st;
	struct million m = { 0 };
	struct acks a = { 0 };
	struct store *s;
	uint8_t w[EDIT_WIRE_SIZE], buf[BATCH_MAX];
	struct batch b = { .gen = "default", .gen_len = 7, .seed = 42, .first_seq = 0, .count = 1, .edits = w };
	struct edit e = { EDIT_RAISE, EDIT_LINEAR, 0, 0, 1000, 1000, 0 };
	char err[256];
	double t;
	size_t n;

	a.s = open_replayed(f, 0, NULL);
	t = now_s();
	for (uint64_t i = 0; i < N; i += ROUND) {
		for (uint64_t j = i; j < i + ROUND; j++) {
			struct ack *k = malloc(sizeof(*k));

			e.x_mm = (int64_t)j;
			edit_encode(&e, w);
			b.first_seq = j + 1;
			assert_int_equal(batch_encode(&b, buf, sizeof(buf), &n), 0);
			assert_non_null(k);
			k->a = &a;
			k->i = 0;
			assert_int_equal(store_append(a.s, buf, n, done_cb, k), 0);
		}
		uv_run(&f->loop, UV_RUN_DEFAULT);
	}
	t = now_s() - t;
	assert_int_equal(a.ok, N);
	store_stats(a.s, &st);
	print_message("append: %d records (%.1f MB) in %.2f s, %llu commits\n", N,
		      (double)st.bytes / 1e6, t, (unsigned long long)st.commits);
	store_close(a.s);

	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	t = now_s();
	assert_int_equal(store_replay(s, million_cb, &m, &rs), 0);
	t = now_s() - t;
	assert_int_equal(m.n, N);
	assert_false(m.bad);
	assert_int_equal(rs.records, N);
	print_message("replay: %d records (%.1f MB) in %.3f s = %.0f records/s\n", N,
		      (double)rs.end / 1e6, t, N / t);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_store_appends_then_replays_every_record_in_order),
		T(test_store_concurrent_appends_share_commits),
		T(test_store_appends_during_a_commit_wait_for_the_next),
		T(test_store_replay_drops_a_record_cut_mid_write),
		T(test_store_replay_drops_a_zero_filled_tail),
		T(test_store_replay_refuses_a_damaged_last_record),
		T(test_store_replay_refuses_a_flipped_byte_in_the_middle_record),
		T(test_store_truncate_at_the_bad_record_keeps_the_records_before_it),
		T(test_store_truncate_refuses_an_offset_that_is_not_a_record_boundary),
		T(test_store_second_open_of_a_directory_fails_while_the_first_is_open),
		T(test_store_open_refuses_a_file_header_that_is_not_a_log_header),
		T(test_store_open_creates_the_directory_and_a_fresh_log),
		T(test_store_append_is_refused_before_a_replay_and_without_a_loop),
		T(test_store_replay_stops_when_the_callback_fails),
		T(test_store_append_beyond_the_queue_bound_is_busy),
		T(test_store_failed_write_fails_every_waiting_append_until_a_write_succeeds),
		T(test_store_close_commits_the_queued_appends),
		T(test_store_compact_keeps_what_the_caller_keeps_and_counts_the_rest),
		T(test_store_compact_of_everything_leaves_a_header_with_the_base),
		T(test_store_snapshot_is_written_whole_or_not_at_all),
		T(test_store_replays_a_million_records_in_seconds),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
