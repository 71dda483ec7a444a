/*
 * journal.c - the edit log above its backends (see journal.h): decodes
 * each committed record once and hands it to the one follow path, keeps
 * each append's record until its backend has committed it, and tells
 * failures that pass from failures that fail the log. The file backend's
 * records are followed here once committed; a shared backend delivers
 * every record it reads (journal_deliver()), its own ones before their
 * done.
 */
#include "journal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"
#include "base/options.h"
#include "batch.h"
#include "err.h"
#include "util.h"

struct journal {
	const struct journal_ops *ops;
	void *be;
	journal_follow_fn follow;
	void *arg;
	int failed;
	int replayed;
	uint64_t followed;
	journal_restore_fn restore;
	void *restore_arg;
	uint64_t base0;          /* journal_base() when the replay began */
	uint64_t seen;           /* records handed to follow since open */
	int in_follow;           /* follow is running */
};

/* One append waiting for its backend. */
struct pending {
	struct journal *l;
	journal_done_fn done;
	void *arg;
	uint64_t first;          /* where it was followed; 0: not yet */
	size_t len;
	uint8_t rec[];
};

/* Whether spec names a backend of journal_redis.c. */
static int is_redis(const char *spec)
{
	return !strncmp(spec, "redis://", 8) || !strncmp(spec, "sentinel://", 11);
}

static const struct option options[] = {
	OPTION(struct journal_config, "data-dir", "TERRAIN_DATA_DIR", "DIR", "./data", OPTION_STR,
	       data_dir, 0, 0, "directory of the edit log (created when missing; one server each)"),
	OPTION(struct journal_config, "edit-log", "TERRAIN_EDIT_LOG", "SPEC", "file", OPTION_STR,
	       spec, 0, 0, "where edits are logged: file (DATA_DIR/edits.log), or a log shared by "
	       "nodes: redis://[USER@]HOST:PORT[/DB] or sentinel://[USER@]HOST:PORT[,...]/MASTER[/DB], "
	       "options ?timeout=MS&replicas=N|all (docs/cluster.md)"),
	OPTION(struct journal_config, "redis-password-file", "TERRAIN_REDIS_PASSWORD_FILE", "FILE",
	       "", OPTION_STR, password_file, 0, 0, "the shared edit log's Redis password, the "
	       "file's first line (or environment TERRAIN_REDIS_PASSWORD; either keeps it out of "
	       "process listings: docs/cluster.md)"),
	OPTION(struct journal_config, "sentinel-password-file", "TERRAIN_SENTINEL_PASSWORD_FILE",
	       "FILE", "", OPTION_STR, sentinel_password_file, 0, 0, "the Sentinels' password for "
	       "sentinel://, the file's first line (or environment TERRAIN_SENTINEL_PASSWORD)"),
};
size_t journal_options(const struct option **out)
{
	*out = options;
	return ARRAY_LEN(options);
}

/*
 * A password of the shared edit log: environment variable env, or the
 * first line of file (flag names it); NULL when neither. Both: refused.
 */
static int read_password(const char *env, const char *file, const char *flag, char **out,
			 char *err, size_t errlen)
{
	const char *v = getenv(env);
	size_t len;
	char *buf;

	*out = NULL;
	if (v && v[0] && file && file[0]) {
		snprintf(err, errlen, "both %s and --%s are set: give the password once", env,
			 flag);
		return ERR_INVAL;
	}
	if (v && v[0])
		return (*out = strdup(v)) ? 0 : ERR_NOMEM;
	if (!file || !file[0])
		return 0;
	if (files_read(file, 4096, &buf, &len) != 0) {
		snprintf(err, errlen, "--%s %s: %s", flag, file, strerror(errno));
		return ERR_INVAL;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	if (!buf[0]) {
		snprintf(err, errlen, "--%s %s: the first line is empty", flag, file);
		free(buf);
		return ERR_INVAL;
	}
	*out = buf;
	return 0;
}

int journal_config_load(struct journal_config *c, char *err, size_t errlen)
{
	int rc = read_password("TERRAIN_REDIS_PASSWORD", c->password_file, "redis-password-file",
			       &c->password, err, errlen);

	if (rc == 0)
		rc = read_password("TERRAIN_SENTINEL_PASSWORD", c->sentinel_password_file,
				   "sentinel-password-file", &c->sentinel_password, err, errlen);
	return rc;
}

void journal_config_free(struct journal_config *c)
{
	free(c->password);
	free(c->sentinel_password);
	c->password = c->sentinel_password = NULL;
}

int journal_open(const struct journal_config *cfg, const char *identity,
		 struct uv_loop_s *loop, journal_follow_fn follow, void *arg,
		 struct journal **out, char *err, size_t errlen)
{
	const char *spec = cfg ? cfg->spec : NULL;
	struct journal *l;
	int rc;

	if (!cfg || !follow || !out) {
		snprintf(err, errlen, "edit log: bad arguments");
		return ERR_INVAL;
	}
	if (spec && strcmp(spec, "file") && !is_redis(spec)) {
		snprintf(err, errlen, "edit log: unknown backend \"%s\" (use file, "
			 "redis://HOST:PORT or sentinel://HOST:PORT,.../MASTER)", spec);
		return ERR_INVAL;
	}
	if (!(l = calloc(1, sizeof(*l)))) {
		snprintf(err, errlen, "edit log: out of memory");
		return ERR_NOMEM;
	}
	l->follow = follow;
	l->arg = arg;
	if (spec && is_redis(spec))
		rc = journal_redis_open(spec, &(struct journal_auth){ cfg->password,
								       cfg->sentinel_password },
					identity ? identity : "", loop, l, &l->ops, &l->be, err,
					errlen);
	else
		rc = journal_file_open(cfg->data_dir, loop, &l->ops, &l->be, err, errlen);
	if (rc) {
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

/* Decode rec and follow it; *first (may be NULL) gets its first seq. */
static int follow_record(struct journal *l, const uint8_t *rec, size_t len, int flags,
			 uint64_t *first)
{
	struct batch b;
	int rc;

	if (batch_decode(rec, len, &b))
		return ERR_CORRUPT;
	l->in_follow = 1;
	rc = l->follow(l->arg, &b, flags);
	l->in_follow = 0;
	l->seen++;
	if (rc == 0) {
		l->followed++;
		if (first)
			*first = b.first_seq;
	}
	return rc;
}

/* A logged batch that this node cannot apply: its world is behind the
 * log from here on, so edits stop until a restart replays it. */
static int fail_follow(struct journal *l, int rc)
{
	fprintf(stderr, "terrain-server: a logged batch could not be applied (%s);"
		" edits are refused until a restart replays it\n", err_str(rc));
	if (!l->failed)
		l->failed = ERR_IO;
	return ERR_IO;
}

struct replay {
	struct journal *l;
	struct journal_replay_stats *st;
};

static int replay_record(void *arg, const uint8_t *rec, size_t len)
{
	struct replay *r = arg;
	int rc = follow_record(r->l, rec, len, 0, NULL);

	r->st->records++;
	if (rc == ERR_NOTFOUND) {
		r->st->skipped++;
		return 0;
	}
	return rc;
}

int journal_replay(struct journal *l, struct journal_replay_stats *st)
{
	struct replay r = { l, st };
	int rc;

	memset(st, 0, sizeof(*st));
	if (l->replayed)
		return ERR_INVAL;
	l->base0 = journal_base(l);
	rc = l->ops->replay(l->be, replay_record, &r, st);
	if (rc == 0)
		l->replayed = 1;
	else if (!st->message[0])
		snprintf(st->message, sizeof(st->message), "%s", err_str(rc));
	return rc;
}

static void committed(void *arg, int status)
{
	struct pending *p = arg;
	struct journal *l = p->l;

	if (status == 0 && !p->first &&
	    (status = follow_record(l, p->rec, p->len, JOURNAL_LIVE | JOURNAL_OWN,
				    &p->first)) != 0)
		status = fail_follow(l, status);
	/* a backend's own failure is its backend's to end (file: the store's
	 * probe; journal_available() reads it live), so it is not latched */
	p->done(p->arg, status, p->first);
	free(p);
}

void journal_existing(void *own, uint64_t first)
{
	struct pending *p = own;

	p->first = first;
}

void journal_key_window(struct journal *l, uint64_t ms)
{
	if (l && l->ops->key_window)
		l->ops->key_window(l->be, ms);
}

int journal_deliver(struct journal *l, const uint8_t *rec, size_t len, void *own)
{
	struct pending *p = own;
	int rc;

	if (l->failed)
		return l->failed;
	rc = follow_record(l, rec, len, JOURNAL_LIVE | (p ? JOURNAL_OWN : 0),
			   p ? &p->first : NULL);
	return rc ? fail_follow(l, rc) : 0;
}

int journal_append(struct journal *l, const struct batch *b, journal_done_fn done,
		   void *arg)
{
	struct pending *p;
	size_t len;
	int rc;

	if (!l || !b || !done || !l->replayed)
		return ERR_INVAL;
	if (l->failed)
		return ERR_IO;
	if (!(p = malloc(sizeof(*p) + batch_size(b))))
		return ERR_BUSY;
	if ((rc = batch_encode(b, p->rec, batch_size(b), &len)) != 0) {
		free(p);
		return rc;
	}
	*p = (struct pending){ l, done, arg, 0, len };
	rc = l->ops->append(l->be, p->rec, len, b->first_seq, committed, p);
	if (rc)
		free(p);
	return rc;
}

int journal_failed(const struct journal *l)
{
	struct journal_stats st;

	if (!l || l->failed)
		return l ? l->failed : ERR_INVAL;
	memset(&st, 0, sizeof(st));
	l->ops->stats(l->be, &st);
	return st.broken ? st.failed : 0;
}

int journal_available(const struct journal *l)
{
	struct journal_stats st;

	if (!l || l->failed)
		return l ? l->failed : ERR_INVAL;
	memset(&st, 0, sizeof(st));
	l->ops->stats(l->be, &st);
	return st.failed ? st.failed : st.down;
}

void journal_stats(const struct journal *l, struct journal_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!l)
		return;
	l->ops->stats(l->be, st);
	st->backend = l->ops->name;
	st->followed = l->followed;
	if (l->failed)
		st->failed = l->failed;
}

struct keep {
	journal_keep_fn fn;
	void *arg;
};

static int keep_record(void *arg, const uint8_t *rec, size_t len)
{
	struct keep *k = arg;
	struct batch b;

	return batch_decode(rec, len, &b) ? ERR_CORRUPT : k->fn(k->arg, &b);
}

int journal_compact(struct journal *l, journal_keep_fn keep, void *arg, uint64_t *dropped,
		    char *err, size_t errlen)
{
	struct keep k = { keep, arg };

	if (!l->ops->compact) {
		snprintf(err, errlen, "edit log: the %s backend cannot compact", l->ops->name);
		return ERR_INVAL;
	}
	return l->ops->compact(l->be, keep_record, &k, dropped, err, errlen);
}

uint64_t journal_base(const struct journal *l)
{
	return l->ops->base ? l->ops->base(l->be) : 0;
}

int journal_snapshot_get(struct journal *l, uint8_t **buf, size_t *len, char *err,
			 size_t errlen)
{
	if (!l->ops->snapshot_get)
		return ERR_NOTFOUND;
	return l->ops->snapshot_get(l->be, buf, len, err, errlen);
}

void journal_snapshot_put(struct journal *l, uint8_t *buf, size_t len, uint64_t edits,
			  const char *pos)
{
	if (l->ops->snapshot_put)
		l->ops->snapshot_put(l->be, buf, len, edits, pos ? pos : "");
	else
		free(buf);
}

void journal_position(const struct journal *l, char *pos, size_t cap)
{
	if (cap)
		pos[0] = '\0';
	if (l->ops->position)
		l->ops->position(l->be, pos, cap);
	else
		snprintf(pos, cap, "%llu", (unsigned long long)(l->base0 + l->seen + l->in_follow));
}

int journal_compact_to(struct journal *l, const char *pos, journal_compacted_fn done, void *arg)
{
	unsigned long long at;
	uint64_t base = journal_base(l);
	char *end;

	if (!l->ops->compact_live || !pos || !pos[0] || pos[0] == '-' || l->failed)
		return ERR_INVAL;
	at = strtoull(pos, &end, 10);
	if (*end || at <= base)
		return ERR_INVAL;
	return l->ops->compact_live(l->be, at - base, done, arg);
}

int journal_start_at(struct journal *l, const char *pos)
{
	return l->ops->start_at && pos && pos[0] ? l->ops->start_at(l->be, pos) : 0;
}

void journal_on_restore(struct journal *l, journal_restore_fn fn, void *arg)
{
	l->restore = fn;
	l->restore_arg = arg;
}

int journal_restore(struct journal *l, const uint8_t *buf, size_t len, char *msg,
		    size_t msglen)
{
	int rc;

	if (l->failed)
		return l->failed;
	if (!l->restore) {
		snprintf(msg, msglen, "this node cannot restore from a snapshot");
		rc = ERR_INVAL;
	} else {
		rc = l->restore(l->restore_arg, buf, len, msg, msglen);
	}
	if (rc && !l->failed) {
		fprintf(stderr, "terrain-server: the shared snapshot could not be restored (%s);"
			" edits are refused until a restart\n", msg);
		l->failed = ERR_IO;
	}
	return rc;
}

int journal_shares_snapshots(const struct journal *l)
{
	return l->ops->snapshot_put != NULL;
}

void journal_close(struct journal *l)
{
	if (!l)
		return;
	l->ops->close(l->be);
	free(l);
}
