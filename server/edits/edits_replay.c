/*
 * edits_replay.c - the edits module at start-up and around snapshots
 * (edits.h): a snapshot restored, then the log replayed through the
 * follow path (edits.c) from where it ends; a shared log's snapshots
 * taken and offered; the file log compacted below each snapshot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "edit.h"
#include "editlog/journal.h"
#include "edits.h"
#include "edits_int.h"
#include "err.h"
#include "sse.h"
#include "worlds/catalog.h"
#include "worlds/snapshots.h"
#include "worlds/world.h"

/* Compaction keeps what the snapshot does not hold. */
static int not_covered(void *arg, const struct batch *b)
{
	struct edits *e = arg;
	int gen = catalog_find(e->cat, b->gen, b->gen_len);
	const struct world *w = gen >= 0 ? world_map_find(e->worlds, gen, b->seed) : NULL;

	return !w || b->first_seq + b->count - 1 > world_snapshot(w);
}

/* A shared log's snapshot replaces the local one when it holds more. */
static void take_shared(struct edits *e)
{
	uint8_t *buf;
	size_t len;
	char err[300];
	int rc = journal_snapshot_get(e->log, &buf, &len, err, sizeof(err));

	if (rc == ERR_NOTFOUND)
		return;
	if (rc) {
		fprintf(stderr, "terrain-server: warning: the shared snapshot cannot be read"
			" (%s); starting from the local one, if any\n", err);
		return;
	}
	rc = snapshots_offer(e->snaps, buf, len);
	free(buf);
	if (rc < 0)
		fprintf(stderr, "terrain-server: warning: the shared snapshot was not taken"
			" (%s)\n", err_str(rc));
	else if (rc)
		fprintf(stderr, "terrain-server: took the shared snapshot (%zu bytes)\n", len);
}

/* Each snapshot written here is offered to a shared log. */
static void share(void *arg, uint8_t *buf, size_t len, uint64_t edits, const char *pos)
{
	struct edits *e = arg;

	journal_snapshot_put(e->log, buf, len, edits, pos);
}

static void compacted(void *arg, int status, uint64_t dropped, const char *why)
{
	(void)arg;
	if (status)
		fprintf(stderr, "terrain-server: edit log: not compacted below the snapshot (%s);"
			" the next snapshot tries again\n", why);
	else
		fprintf(stderr, "terrain-server: edit log: compacted below the snapshot: %llu"
			" batches dropped\n", (ull)dropped);
}

/* --compact-log 1 with the file log: each snapshot written (and fsync'd)
 * lets the log drop what it holds, while serving. Not when the log holds
 * batches this server skipped (generators it lacks): they are in no
 * snapshot. */
static void compact_below(void *arg, uint8_t *buf, size_t len, uint64_t edits, const char *pos)
{
	struct edits *e = arg;
	int rc;

	(void)len;
	(void)edits;
	free(buf);
	if (e->skipped)
		return;
	rc = journal_compact_to(e->log, pos, compacted, e);
	if (rc && rc != ERR_INVAL)
		fprintf(stderr, "terrain-server: edit log: not compacted below the snapshot (%s)\n",
			err_str(rc));
}

/* Where the log is, for a snapshot cut now. */
static void position(void *arg, char *pos, size_t cap)
{
	struct edits *e = arg;

	journal_position(e->log, pos, cap);
}

/* A node behind a trimmed shared log: every world becomes the shared
 * snapshot's; event streams end (their clients resume from it and get 410
 * for what lies before it). */
static int restore(void *arg, const uint8_t *buf, size_t len, char *msg, size_t msglen)
{
	struct edits *e = arg;
	struct snapshots_loaded ld;
	uint64_t t0 = uv_hrtime();
	size_t i;
	int rc;

	for (i = 0; i < world_map_count(e->worlds); i++)
		sse_drop_world(e->sse, world_map_at(e->worlds, i, NULL));
	if ((rc = snapshots_restore(e->snaps, buf, len, &ld, msg, msglen)) != 0)
		return rc;
	fprintf(stderr, "terrain-server: restored %llu edits of %llu worlds, %llu chunks from the"
		" shared snapshot in %.2f s\n", (ull)ld.edits, (ull)ld.worlds, (ull)ld.chunks,
		(double)(uv_hrtime() - t0) / 1e9);
	return 0;
}

/* Restore the snapshot, if any: 0, or why the server cannot start. */
static int load_snapshot(struct edits *e, struct snapshots_loaded *ld, char *msg,
			 size_t msglen, char *warn, size_t warnlen)
{
	char why[300];
	int rc;

	if (!e->snaps)
		return 0;
	if (journal_shares_snapshots(e->log))
		take_shared(e);
	rc = snapshots_load(e->snaps, ld, why, sizeof(why));
	if (rc == 0 && ld->found)
		e->started_at = journal_start_at(e->log, ld->pos);
	if (rc == 0 && !ld->found && journal_base(e->log)) {
		snprintf(msg, msglen, "edit log: %llu batches were compacted away below a"
			 " snapshot, and there is no DIR/snapshot: restore it from a backup",
			 (ull)journal_base(e->log));
		return ERR_NOTFOUND;
	}
	if (rc == 0 || (!ld->touched && journal_base(e->log) == 0)) {
		if (rc)
			snprintf(warn, warnlen, "warning: snapshot not used (%s); replaying the"
				 " whole log", why);
		return 0;
	}
	snprintf(msg, msglen, "snapshot: %s; the log is compacted below it, so this server"
		 " cannot start without it: start the build that wrote it, or restore"
		 " DIR/snapshot from a backup", why);
	return rc;
}

int edits_replay(struct edits *e, char *msg, size_t msglen, char *warn, size_t warnlen)
{
	struct journal_replay_stats st;
	struct snapshots_loaded ld = { 0 };
	uint64_t n = 0, dropped = 0;
	size_t i;
	int rc, len;

	warn[0] = '\0';
	if ((rc = load_snapshot(e, &ld, msg, msglen, warn, warnlen)) != 0)
		return rc;
	rc = journal_replay(e->log, &st);
	if (rc) {
		snprintf(msg, msglen, "%s", e->follow_err[0] ? e->follow_err : st.message);
		return rc;
	}
	if (st.warning)
		snprintf(warn, warnlen, "%s", st.message);
	if (ld.found && journal_base(e->log) == 0 && !e->started_at && e->confirmed < ld.worlds) {
		snprintf(msg, msglen, "edit log: the snapshot holds edits that the log does not"
			 " (was the log cut by repair-log?): move DIR/snapshot aside to replay"
			 " the log alone");
		return ERR_CORRUPT;
	}
	if (e->compact && ld.found && e->covered &&
	    (rc = journal_compact(e->log, not_covered, e, &dropped, msg, msglen)) != 0)
		return rc;
	for (i = 0; i < world_map_count(e->worlds); i++)
		n += world_seq(world_map_at(e->worlds, i, NULL));
	len = snprintf(msg, msglen, "replayed %llu edits in %llu batches of %zu worlds",
		       (ull)n, (ull)(st.records - st.skipped), world_map_count(e->worlds));
	if (ld.found && len >= 0 && (size_t)len < msglen)
		len += snprintf(msg + len, msglen - (size_t)len, " (%llu edits from a snapshot"
				" of %llu chunks, %llu batches of the log skipped%s)",
				(ull)ld.edits, (ull)ld.chunks, (ull)e->covered,
				dropped ? " and compacted away" : "");
	if (st.skipped && len >= 0 && (size_t)len < msglen)
		snprintf(msg + len, msglen - (size_t)len,
			 "; skipped %llu batches (kept in the log): %s", (ull)st.skipped,
			 e->skip_note);
	return 0;
}

void edits_use_snapshots(struct edits *e, struct snapshots *s, int compact)
{
	snapshots_keep_keys(s, e->keys);
	snapshots_keep_history(s, (uint64_t)e->history_s * 1000);
	e->snaps = s;
	e->compact = compact;
	if (journal_shares_snapshots(e->log)) {
		snapshots_on_written(s, share, position, 1, e);
		journal_on_restore(e->log, restore, e);
	} else if (compact) {
		snapshots_on_written(s, compact_below, position, 0, e);
	}
}
