/*
 * edits_read.c - GET /v1/worlds/{seed}/edits (see edits_read.h).
 *
 * In log order: the entries after ?since= (edits and reverts), those of
 * ?author= and within ?since_time= .. ?until_time= only, at most ?limit=;
 * "next" is where the next page starts. A page scans at most SCAN_MAX
 * entries, so a rare author costs a bounded page with "next" rather than
 * the whole log. By point (?x=&z=): the edits whose brush covers it,
 * newest first, before ?before= ("next" is the next page's before).
 */
#include "edits_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/request.h"
#include "edit.h"
#include "err.h"
#include "revert.h"
#include "util.h"
#include "worlds/world.h"

#define PAGE 1000          /* default and largest limit */
#define SCAN_MAX 100000    /* entries one page looks at */

struct lookup {
	uint64_t since, limit, before, t0, t1;
	const char *author;    /* NULL: any */
	size_t alen;
	int point;
	int64_t x_mm, z_mm;
};

/* A coordinate in metres (?x=, ?z=) into millimetres. */
static int query_metres(struct req *q, const char *name, int64_t *mm, int *present)
{
	char buf[40], *end;
	size_t len;
	int rc;
	const char *s = req_query(q, name, &len, &rc);
	double v;

	*present = s != NULL;
	if (rc || !s)
		return rc;
	if (len == 0 || len >= sizeof(buf))
		goto bad;
	memcpy(buf, s, len);
	buf[len] = '\0';
	v = strtod(buf, &end);
	if (*end || !isfinite(v) || fabs(v) > (double)EDIT_MAX_COORD_MM / 1e3)
		goto bad;
	*mm = (int64_t)llround(v * 1e3);
	return 0;
bad:
	q->detail = name[0] == 'x' ? "x: not a coordinate in metres" :
				     "z: not a coordinate in metres";
	return ERR_INVAL;
}

static int parse(struct req *q, struct lookup *l)
{
	int rc, hx, hz, h0, h1;

	*l = (struct lookup){ .limit = PAGE, .before = UINT64_MAX, .t1 = UINT64_MAX };
	if ((rc = req_query_u64(q, "since", &l->since, NULL,
				"since: not a decimal sequence number")) ||
	    (rc = req_query_u64(q, "limit", &l->limit, NULL, "limit: not a decimal count")) ||
	    (rc = req_query_u64(q, "before", &l->before, NULL,
				"before: not a decimal sequence number")) ||
	    (rc = req_query_u64(q, "since_time", &l->t0, &h0,
				"since_time: not milliseconds since 1970")) ||
	    (rc = req_query_u64(q, "until_time", &l->t1, &h1,
				"until_time: not milliseconds since 1970")) ||
	    (rc = query_metres(q, "x", &l->x_mm, &hx)) || (rc = query_metres(q, "z", &l->z_mm, &hz)))
		return rc;
	l->author = req_query(q, "author", &l->alen, &rc);
	if (rc)
		return rc;
	if (l->author && !revert_author_ok(l->author, l->alen)) {
		q->detail = "author: must be 1..64 of A-Z a-z 0-9 _ . @ -";
		return ERR_INVAL;
	}
	if (hx != hz) {
		q->detail = "x, z: a point needs both";
		return ERR_INVAL;
	}
	if (l->limit == 0) {
		q->detail = "limit: must be at least 1";
		return ERR_INVAL;
	}
	l->point = hx;
	if (l->limit > PAGE)
		l->limit = PAGE;
	return 0;
}

/* Whether batch b passes the author and time filters. */
static int passes(const struct lookup *l, const struct world_batch *b)
{
	return (!l->author || (b->author_len == l->alen && !memcmp(b->author, l->author, l->alen))) &&
	       b->time_ms >= l->t0 && b->time_ms <= l->t1;
}

/* The fields every entry has beside its own: author and time when said. */
static void add_who(cJSON *o, const struct world_batch *b)
{
	char name[REVERT_AUTHOR_MAX + 1];

	if (!b->author_len)
		return;
	memcpy(name, b->author, b->author_len);
	name[b->author_len] = '\0';
	cJSON_AddStringToObject(o, "author", name);
	req_json_u64(o, "time", b->time_ms);
}

/* Edit seq of batch b, or b's revert, as one more item of arr. */
static int add_entry(cJSON *arr, const struct world *w, const struct world_batch *b, uint64_t seq)
{
	cJSON *o;

	if (b->revert) {
		if (!(o = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			return ERR_NOMEM;
		}
		req_json_u64(o, "seq", seq);
		if (revert_to_json(b->revert, o))
			return ERR_NOMEM;
		if (b->revert->op == REVERT_REVERT) {
			req_json_u64(o, "count", b->reverted);
			if (b->undone)
				cJSON_AddTrueToObject(o, "undone");
		}
	} else {
		if (edit_to_json(world_edit(w, seq), seq, arr))
			return ERR_NOMEM;
		o = arr->child->prev; /* the item just added */
		if (world_edit_out(w, seq))
			cJSON_AddTrueToObject(o, "reverted");
	}
	add_who(o, b);
	return 0;
}

/* In log order after l->since; *next is where a next page starts (0: none). */
static int scan(const struct world *w, const struct lookup *l, cJSON *arr, uint64_t *next)
{
	size_t i = world_batch_after(w, l->since), nb = world_batches(w);
	uint64_t taken = 0, looked = 0, s = l->since;
	struct world_batch b;
	int rc;

	for (; i < nb; i++) {
		world_batch(w, i, &b);
		for (s = b.first_seq > l->since + 1 ? b.first_seq : l->since + 1; s <= b.last_seq; s++) {
			if (taken == l->limit || looked == SCAN_MAX) {
				*next = s - 1;
				return 0;
			}
			looked++;
			if (passes(l, &b) && (rc = add_entry(arr, w, &b, s)) != 0)
				return rc;
			taken += passes(l, &b);
		}
	}
	*next = 0;
	return 0;
}

/* By point, newest first. */
static int by_point(const struct world *w, const struct lookup *l, cJSON *arr, uint64_t *next)
{
	uint64_t seqs[PAGE + 1];
	size_t n = world_point_edits(w, l->x_mm, l->z_mm, l->before, seqs, (size_t)l->limit + 1);
	size_t k, shown = n > l->limit ? (size_t)l->limit : n;
	struct world_batch b;
	int rc;

	for (k = 0; k < shown; k++) {
		world_batch(w, world_batch_of(w, seqs[k]), &b);
		if (passes(l, &b) && (rc = add_entry(arr, w, &b, seqs[k])) != 0)
			return rc;
	}
	*next = n > l->limit ? seqs[shown - 1] : 0;
	return 0;
}

int edits_read(struct req *q, const struct world *w, uint64_t seq, uint64_t hash)
{
	struct lookup l;
	uint64_t next = 0;
	char hex[17];
	cJSON *o, *arr;
	int rc;

	if ((rc = parse(q, &l)) != 0)
		return rc;
	if (w && l.since < world_base(w) && !l.point) {
		q->detail = "since: the edits up to this world's snapshot are folded into"
			    " it (see base in GET /v1/worlds/SEED); fetch tiles afresh and"
			    " read on from there";
		return 410;
	}
	req_hex64(hex, hash);
	if (!(o = cJSON_CreateObject()))
		return ERR_NOMEM;
	if (!l.point)
		req_json_u64(o, "since", l.since);
	req_json_u64(o, "seq", seq);
	cJSON_AddStringToObject(o, "world_hash", hex);
	arr = cJSON_AddArrayToObject(o, "edits");
	rc = !arr ? ERR_NOMEM : !w ? 0 : l.point ? by_point(w, &l, arr, &next) :
	     scan(w, &l, arr, &next);
	if (rc) {
		cJSON_Delete(o);
		return rc;
	}
	if (next)
		req_json_u64(o, "next", next);
	req_respond_json(q, 200, o, "Cache-Control: no-store\r\n");
	return 0;
}
