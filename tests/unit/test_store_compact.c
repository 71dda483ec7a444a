/*
 * test_store_compact.c - unit tests for server/editlog/store_compact.c: a log
 * compacted while appends go on drops exactly its first n records, keeps
 * every record appended before, during and after it in order (a reopen
 * replays them behind the new base), counts them, and refuses what it
 * cannot do. Each test works in a fresh directory under $TMPDIR (default
 * /tmp) that it removes at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "editlog/store.h"
#include "err.h"

#define PAYLOAD 40

struct fixture {
	char dir[256];
	uv_loop_t loop;
};

/* Appends that chain: each done appends the next until total. */
struct feed {
	struct store *s;
	uint64_t next, total, ok, errors;
	int compacted, status;
	uint64_t dropped;
	uint64_t during;        /* acknowledged while the compaction ran */
};

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "%s/test_store_compact.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(uv_loop_init(&f->loop), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[300];
	int rc;

	uv_run(&f->loop, UV_RUN_DEFAULT);
	rc = uv_loop_close(&f->loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return rc;
}

static void payload(uint64_t i, char p[PAYLOAD])
{
	memset(p, ' ', PAYLOAD);
	snprintf(p, PAYLOAD, "rec %llu", (unsigned long long)i);
}

static void append_next(struct feed *d);

static void appended(void *arg, int status)
{
	struct feed *d = arg;

	if (status) {
		d->errors++;
		return;
	}
	d->ok++;
	if (d->compacted == 1)
		d->during++;
	append_next(d);
}

static void append_next(struct feed *d)
{
	char p[PAYLOAD];

	if (d->next > d->total)
		return;
	payload(d->next++, p);
	assert_int_equal(store_append(d->s, p, PAYLOAD, appended, d), 0);
}

static void compacted(void *arg, int status, uint64_t dropped, const char *why)
{
	struct feed *d = arg;

	(void)why;
	d->compacted = 2;
	d->status = status;
	d->dropped = dropped;
}

/* Records must come numbered from `next` on. */
struct seen {
	uint64_t next, n;
	int bad;
};

static int seen_cb(void *arg, const uint8_t *p, size_t len)
{
	struct seen *v = arg;
	unsigned long long i = 0;

	if (len != PAYLOAD || sscanf((const char *)p, "rec %llu", &i) != 1 || i != v->next)
		v->bad = 1;
	v->next = i + 1;
	v->n++;
	return 0;
}

static struct store *open_replayed(struct fixture *f, struct seen *v)
{
	struct store *s;
	char err[256];

	assert_int_equal(store_open(f->dir, &f->loop, NULL, &s, err, sizeof(err)), 0);
	assert_int_equal(store_replay(s, seen_cb, v, NULL), 0);
	return s;
}

static void test_store_compact_live_drops_the_first_records_while_appends_go_on(void **state)
{
	struct fixture *f = *state;
	struct seen v = { 1, 0, 0 };
	struct feed d = { 0 };
	struct store_stats st;
	struct store *s = open_replayed(f, &v);

	/* 2000 records, then the first 1200 go while 2000 more arrive */
	d.s = s;
	d.next = 1;
	d.total = 2000;
	append_next(&d);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(d.ok, 2000);
	d.total = 4000;
	append_next(&d);
	assert_int_equal(store_compact_live(s, 1200, compacted, &d), 0);
	d.compacted = 1;
	assert_int_equal(store_compact_live(s, 10, compacted, &d), ERR_INVAL); /* one at a time */
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(d.compacted, 2);
	assert_int_equal(d.status, 0);
	assert_int_equal(d.dropped, 1200);
	assert_int_equal(d.ok, 4000);
	assert_int_equal(d.errors, 0);
	print_message("  %llu appends acknowledged while the compaction ran\n",
		      (unsigned long long)d.during);
	assert_int_equal(store_base(s), 1200);
	store_stats(s, &st);
	assert_int_equal(st.records, 2800);
	assert_int_equal(st.bytes, STORE_FILE_HEADER + 2800 * (STORE_REC_HEADER + PAYLOAD));
	/* appends after it go to the new file */
	d.total = 4100;
	append_next(&d);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	store_close(s);

	v = (struct seen){ 1201, 0, 0 };
	s = open_replayed(f, &v);
	assert_false(v.bad);
	assert_int_equal(v.n, 2900);
	assert_int_equal(v.next, 4101);
	assert_int_equal(store_base(s), 1200);
	store_close(s);
}

static void test_store_compact_live_refuses_what_it_cannot_drop(void **state)
{
	struct fixture *f = *state;
	struct seen v = { 1, 0, 0 };
	struct feed d = { 0 };
	struct store *s = open_replayed(f, &v);
	struct store *ro;
	char err[256];

	d.s = s;
	d.next = 1;
	d.total = 10;
	append_next(&d);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(store_compact_live(s, 0, compacted, &d), ERR_INVAL);
	assert_int_equal(store_compact_live(s, 11, compacted, &d), ERR_INVAL);
	assert_int_equal(store_compact_live(s, 10, compacted, &d), 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(d.status, 0);
	assert_int_equal(d.dropped, 10);
	store_close(s);
	/* a store open for replay only cannot */
	assert_int_equal(store_open(f->dir, NULL, NULL, &ro, err, sizeof(err)), 0);
	assert_int_equal(store_replay(ro, seen_cb, &(struct seen){ 11, 0, 0 }, NULL), 0);
	assert_int_equal(store_compact_live(ro, 1, compacted, &d), ERR_INVAL);
	store_close(ro);
}

static void test_store_open_removes_a_compaction_cut_short(void **state)
{
	struct fixture *f = *state;
	struct seen v = { 1, 0, 0 };
	struct store *s;
	char path[300];
	struct stat st;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s.compact", f->dir, STORE_LOG_NAME);
	s = open_replayed(f, &v);
	store_close(s);
	assert_non_null(fp = fopen(path, "w"));
	fputs("half a compaction", fp);
	fclose(fp);
	s = open_replayed(f, &v);
	assert_int_equal(stat(path, &st), -1);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_store_compact_live_drops_the_first_records_while_appends_go_on),
		T(test_store_compact_live_refuses_what_it_cannot_drop),
		T(test_store_open_removes_a_compaction_cut_short),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
