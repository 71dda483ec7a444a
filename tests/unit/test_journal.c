/*
 * test_journal.c - the edit log interface over its file backend: every
 * committed batch reaches the follow callback once, in order, live after
 * an append and at replay after a restart; done comes after follow; a
 * batch that cannot be followed fails the log; bad specs (Redis ones too)
 * and appends before replay are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "editlog/journal.h"
#include "editlog/journal_redis_int.h"
#include <hiredis/hiredis.h>
#include "batch.h"
#include "edit.h"
#include "err.h"

/* The options of a log of spec in dir. */
#define LOG(spec, dir) (&(struct journal_config){ (spec), (dir), NULL, NULL, NULL, NULL })

struct fixture {
	char dir[256];
	uv_loop_t loop;
};

/* What follow saw, and what it answers. */
struct follower {
	uint64_t seen[64];
	int live[64];
	size_t n;
	int answer;          /* returned for seq == fail_at */
	uint64_t fail_at;
	int done_before_follow;
};

struct append {
	struct follower *f;
	uint64_t first;
	int status, called;
};

static int follow(void *arg, const struct batch *b, int flags)
{
	struct follower *f = arg;

	if (f->fail_at && b->first_seq == f->fail_at)
		return f->answer;
	f->seen[f->n] = b->first_seq;
	f->live[f->n++] = flags;
	return 0;
}

static void done(void *arg, int status, uint64_t first)
{
	struct append *a = arg;
	size_t k;
	int found = 0;

	for (k = 0; k < a->f->n; k++)
		found |= a->f->seen[k] == a->first;
	if (status == 0 && !found)
		a->f->done_before_follow = 1;
	if (status == 0 && first != a->first)
		a->f->done_before_follow = 1; /* not where follow saw it */
	a->status = status;
	a->called++;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/test-journal.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	uv_loop_init(&f->loop);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[300];

	uv_run(&f->loop, UV_RUN_DEFAULT);
	uv_loop_close(&f->loop);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* A one-edit batch of world default/42 starting at first. */
static struct batch one(uint64_t first, uint8_t wire[EDIT_WIRE_SIZE])
{
	struct edit e = { EDIT_RAISE, EDIT_SMOOTH, (int64_t)first * 1000, 0, 3000, 250000, 0 };

	edit_encode(&e, wire);
	return (struct batch){ .gen = "default", .gen_len = 7, .seed = 42, .first_seq = first, .count = 1, .edits = wire };
}

static struct journal *open_replayed(struct fixture *fx, struct follower *f)
{
	struct journal_replay_stats st;
	struct journal *l;
	char err[256];

	assert_int_equal(journal_open(LOG("file", fx->dir), NULL, &fx->loop, follow, f, &l, err,
				      sizeof(err)), 0);
	assert_int_equal(journal_replay(l, &st), 0);
	return l;
}

static void test_journal_follows_each_append_before_its_done_and_replays_them(void **state)
{
	struct fixture *fx = *state;
	struct follower f = { 0 }, g = { 0 };
	struct append a[3];
	uint8_t wire[EDIT_WIRE_SIZE];
	struct journal_stats js;
	struct journal *l = open_replayed(fx, &f);
	int i;

	for (i = 0; i < 3; i++) {
		struct batch b = one((uint64_t)i + 1, wire);

		a[i] = (struct append){ &f, (uint64_t)i + 1, -1, 0 };
		assert_int_equal(journal_append(l, &b, done, &a[i]), 0);
	}
	assert_int_equal(f.n, 0); /* nothing is followed before it is durable */
	uv_run(&fx->loop, UV_RUN_DEFAULT);
	for (i = 0; i < 3; i++) {
		assert_int_equal(a[i].called, 1);
		assert_int_equal(a[i].status, 0);
		assert_int_equal(f.seen[i], (uint64_t)i + 1);
		assert_int_equal(f.live[i], JOURNAL_LIVE | JOURNAL_OWN);
	}
	assert_false(f.done_before_follow);
	journal_stats(l, &js);
	assert_string_equal(js.backend, "file");
	assert_int_equal(js.records, 3);
	assert_int_equal(js.followed, 3);
	journal_close(l);

	l = open_replayed(fx, &g);
	assert_int_equal(g.n, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(g.seen[i], (uint64_t)i + 1);
		assert_int_equal(g.live[i], 0);
	}
	journal_close(l);
}

static void test_journal_replay_skips_what_follow_cannot_apply(void **state)
{
	struct fixture *fx = *state;
	struct follower f = { 0 }, g = { .answer = ERR_NOTFOUND, .fail_at = 2 };
	struct journal_replay_stats st;
	uint8_t wire[EDIT_WIRE_SIZE];
	struct append a[3];
	struct journal *l = open_replayed(fx, &f);
	char err[256];
	int i;

	for (i = 0; i < 3; i++) {
		struct batch b = one((uint64_t)i + 1, wire);

		a[i] = (struct append){ &f, (uint64_t)i + 1, -1, 0 };
		assert_int_equal(journal_append(l, &b, done, &a[i]), 0);
	}
	uv_run(&fx->loop, UV_RUN_DEFAULT);
	journal_close(l);

	assert_int_equal(journal_open(LOG(NULL, fx->dir), NULL, &fx->loop, follow, &g, &l, err,
				      sizeof(err)), 0);
	assert_int_equal(journal_replay(l, &st), 0);
	assert_int_equal(st.records, 3);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(g.n, 2);
	journal_close(l);

	g = (struct follower){ .answer = ERR_CORRUPT, .fail_at = 2 };
	assert_int_equal(journal_open(LOG(NULL, fx->dir), NULL, &fx->loop, follow, &g, &l, err,
				      sizeof(err)), 0);
	assert_int_equal(journal_replay(l, &st), ERR_CORRUPT);
	assert_int_equal(g.n, 1);
	journal_close(l);
}

static void test_journal_a_batch_that_cannot_be_followed_fails_the_log(void **state)
{
	struct fixture *fx = *state;
	struct follower f = { .answer = ERR_CORRUPT, .fail_at = 1 };
	uint8_t wire[EDIT_WIRE_SIZE];
	struct append a = { &f, 1, -1, 0 };
	struct batch b = one(1, wire);
	struct journal *l = open_replayed(fx, &f);

	assert_int_equal(journal_append(l, &b, done, &a), 0);
	uv_run(&fx->loop, UV_RUN_DEFAULT);
	assert_int_equal(a.called, 1);
	assert_int_equal(a.status, ERR_IO);
	assert_int_equal(journal_failed(l), ERR_IO);
	b = one(2, wire);
	assert_int_equal(journal_append(l, &b, done, &a), ERR_IO);
	journal_close(l);
}

static void test_journal_refuses_unknown_backends_and_appends_before_replay(void **state)
{
	struct fixture *fx = *state;
	struct follower f = { 0 };
	uint8_t wire[EDIT_WIRE_SIZE];
	struct append a = { &f, 1, -1, 0 };
	struct batch b = one(1, wire);
	struct journal *l;
	char err[256];

	assert_int_equal(journal_open(LOG("tape", fx->dir), NULL, &fx->loop, follow, &f, &l, err,
				      sizeof(err)), ERR_INVAL);
	assert_non_null(strstr(err, "unknown backend"));
	assert_int_equal(journal_open(LOG("redis://nohost", fx->dir), "", &fx->loop, follow, &f,
				      &l, err, sizeof(err)), ERR_INVAL);
	assert_non_null(strstr(err, "bad spec"));
	assert_int_equal(journal_open(LOG("sentinel://127.0.0.1:1/", fx->dir), "", &fx->loop, follow,
				      &f, &l, err, sizeof(err)), ERR_INVAL);
	assert_int_equal(journal_open(LOG("redis://127.0.0.1:6379/0?timeout=0", fx->dir), "",
				      &fx->loop, follow, &f, &l, err, sizeof(err)), ERR_INVAL);
	assert_int_equal(journal_open(LOG("file", fx->dir), NULL, &fx->loop, follow, &f, &l, err,
				      sizeof(err)), 0);
	assert_int_equal(journal_append(l, &b, done, &a), ERR_INVAL);
	assert_int_equal(a.called, 0);
	journal_close(l);
}

/* Parse spec with passwords given apart (pass, spass: may be NULL). */
static int parse(struct rlog *g, const char *spec, const char *pass, const char *spass,
		 char *err, size_t errlen)
{
	struct journal_auth auth = { pass, spass };

	memset(g, 0, sizeof(*g));
	err[0] = '\0';
	return journal_redis__parse_spec(g, spec, &auth, err, errlen);
}

static void test_journal_redis_spec_takes_credentials_and_hides_the_password(void **state)
{
	struct rlog *g = calloc(1, sizeof(*g));
	char err[600];

	(void)state;
	assert_int_equal(parse(g, "redis://terrain:p%40ss%3Aw%2Fd@127.0.0.1:6379/2?timeout=500",
			       NULL, NULL, err, sizeof(err)), 0);
	assert_string_equal(g->data.user, "terrain");
	assert_string_equal(g->data.pass, "p@ss:w/d");
	assert_int_equal(g->data.has_pass, 1);
	assert_int_equal(g->db, 2);
	assert_int_equal(g->timeout_ms, 500);
	assert_string_equal(g->hosts[0].host, "127.0.0.1");
	assert_string_equal(g->name, "redis://terrain:***@127.0.0.1:6379/2");

	assert_int_equal(parse(g, "redis://:secret@h:1", NULL, NULL, err, sizeof(err)), 0);
	assert_string_equal(g->data.user, "");
	assert_string_equal(g->data.pass, "secret");
	assert_null(strstr(g->name, "secret"));

	/* the password apart from the spec: for USER, or the default user */
	assert_int_equal(parse(g, "redis://terrain@h:1", "fromenv", NULL, err, sizeof(err)), 0);
	assert_string_equal(g->data.pass, "fromenv");
	assert_string_equal(g->name, "redis://terrain@h:1");
	assert_int_equal(parse(g, "redis://h:1", "fromenv", NULL, err, sizeof(err)), 0);
	assert_string_equal(g->data.user, "");
	assert_string_equal(g->data.pass, "fromenv");
	assert_int_equal(g->data.has_pass, 1);
	assert_int_equal(parse(g, "redis://h:1", NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(g->data.has_pass, 0);

	/* given twice, or a user without one: refused, the password unsaid */
	assert_int_equal(parse(g, "redis://u:secret@h:1", "other", NULL, err, sizeof(err)),
			 ERR_INVAL);
	assert_non_null(strstr(err, "given twice"));
	assert_null(strstr(err, "secret"));
	assert_int_equal(parse(g, "redis://u@h:1", NULL, NULL, err, sizeof(err)), ERR_INVAL);
	assert_non_null(strstr(err, "has no password"));
	assert_int_equal(parse(g, "redis://u:secret@h:0", NULL, NULL, err, sizeof(err)),
			 ERR_INVAL);
	assert_non_null(strstr(err, "bad spec"));
	assert_null(strstr(err, "secret"));
	assert_int_equal(parse(g, "redis://u:se%zzcret@h:1", NULL, NULL, err, sizeof(err)),
			 ERR_INVAL);
	assert_null(strstr(err, "cret"));

	/* Sentinels: their own credentials, as options or apart */
	assert_int_equal(parse(g, "sentinel://app:pw@h:1,h:2/m/3?sentinel_user=sen&"
			       "sentinel_password=s%26p&replicas=1", NULL, NULL, err, sizeof(err)), 0);
	assert_string_equal(g->data.user, "app");
	assert_string_equal(g->data.pass, "pw");
	assert_string_equal(g->sent_cred.user, "sen");
	assert_string_equal(g->sent_cred.pass, "s&p");
	assert_string_equal(g->master_name, "m");
	assert_int_equal(g->db, 3);
	assert_int_equal(g->nhosts, 2);
	assert_string_equal(g->name, "sentinel://app:***@h:1,h:2/m/3");
	assert_int_equal(parse(g, "sentinel://h:1/m", "d", "s", err, sizeof(err)), 0);
	assert_string_equal(g->data.pass, "d");
	assert_string_equal(g->sent_cred.pass, "s");
	assert_string_equal(g->sent_cred.user, "");
	assert_int_equal(parse(g, "sentinel://h:1/m?sentinel_user=sen", NULL, NULL, err,
			       sizeof(err)), ERR_INVAL);
	assert_non_null(strstr(err, "Sentinel user sen has no password"));
	assert_int_equal(parse(g, "redis://h:1?sentinel_user=x", NULL, NULL, err, sizeof(err)),
			 ERR_INVAL);
	assert_int_equal(parse(g, "redis://h:1", NULL, "s", err, sizeof(err)), ERR_INVAL);

	/* replicas: a count, or all (at least the one the tail reads) */
	assert_int_equal(parse(g, "redis://h:1?replicas=3", NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(g->replicas, 3);
	assert_int_equal(g->replicas_all, 0);
	assert_int_equal(parse(g, "redis://h:1?timeout=50&replicas=all", NULL, NULL, err,
			       sizeof(err)), 0);
	assert_int_equal(g->replicas, 1);
	assert_int_equal(g->replicas_all, 1);
	assert_int_equal(g->timeout_ms, 50);
	assert_int_equal(parse(g, "redis://h:1?replicas=alls", NULL, NULL, err, sizeof(err)),
			 ERR_INVAL);
	assert_int_equal(parse(g, "redis://h:1?replicas=", NULL, NULL, err, sizeof(err)),
			 ERR_INVAL);
	free(g);
}

/* A string reply of n bytes at p (a copy: entry_fields() writes to it). */
static redisReply *str_reply(const void *p, size_t n)
{
	redisReply *r = calloc(1, sizeof(*r));

	r->type = REDIS_REPLY_STRING;
	r->str = malloc(n + 1);
	memcpy(r->str, p, n);
	r->str[n] = '\0';
	r->len = n;
	return r;
}

static redisReply *arr_reply(size_t n)
{
	redisReply *r = calloc(1, sizeof(*r));

	r->type = REDIS_REPLY_ARRAY;
	r->elements = n;
	r->element = calloc(n, sizeof(*r->element));
	return r;
}

static void test_journal_redis_entries_carry_their_sequence_apart_from_the_record(void **state)
{
	uint8_t wire[EDIT_WIRE_SIZE], rec[256];
	struct batch b = one(7, wire), got;
	const redisReply *r, *tag;
	redisReply *e, *f;
	const char *id;
	size_t len;

	(void)state;
	assert_int_equal(batch_encode(&b, rec, sizeof(rec), &len), 0);
	/* [id, [r, REC, s, 42, o, TAG]]: the record says 7, the log 42 */
	e = arr_reply(2);
	e->element[0] = str_reply("1-0", 3);
	e->element[1] = f = arr_reply(6);
	f->element[0] = str_reply("r", 1), f->element[1] = str_reply(rec, len);
	f->element[2] = str_reply("s", 1), f->element[3] = str_reply("42", 2);
	f->element[4] = str_reply("o", 1), f->element[5] = str_reply("node:1", 6);
	assert_int_equal(journal_redis__entry_fields(e, &id, &r, &tag), 0);
	assert_string_equal(id, "1-0");
	assert_string_equal(tag->str, "node:1");
	assert_int_equal(batch_decode((const uint8_t *)r->str, r->len, &got), 0);
	assert_int_equal(got.first_seq, 42);
	assert_int_equal(got.count, 1);
	/* a bad number, or a record too short to hold one, is refused */
	freeReplyObject(f->element[3]);
	f->element[3] = str_reply("4x", 2);
	assert_int_equal(journal_redis__entry_fields(e, &id, &r, &tag), ERR_CORRUPT);
	freeReplyObject(f->element[3]);
	f->element[3] = str_reply("42", 2);
	freeReplyObject(f->element[1]);
	f->element[1] = str_reply(rec, 12);
	assert_int_equal(journal_redis__entry_fields(e, &id, &r, &tag), ERR_CORRUPT);
	/* an entry without s keeps the record's own */
	freeReplyObject(f->element[1]);
	f->element[1] = str_reply(rec, len);
	freeReplyObject(f->element[2]);
	f->element[2] = str_reply("x", 1);
	assert_int_equal(journal_redis__entry_fields(e, &id, &r, &tag), 0);
	assert_int_equal(batch_decode((const uint8_t *)r->str, r->len, &got), 0);
	assert_int_equal(got.first_seq, 7);
	freeReplyObject(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		cmocka_unit_test(test_journal_redis_spec_takes_credentials_and_hides_the_password),
		cmocka_unit_test(test_journal_redis_entries_carry_their_sequence_apart_from_the_record),
		T(test_journal_follows_each_append_before_its_done_and_replays_them),
		T(test_journal_replay_skips_what_follow_cannot_apply),
		T(test_journal_a_batch_that_cannot_be_followed_fails_the_log),
		T(test_journal_refuses_unknown_backends_and_appends_before_replay),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
