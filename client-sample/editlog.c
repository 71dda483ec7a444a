/*
 * editlog.c - a client's copy of a world's edit log (editlog.h).
 */
#include "editlog.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "edit.h"
#include "err.h"
#include "revert.h"

#define MAX_EDIT_CHUNKS 4096 /* the server refuses edits touching more */

/* ---- chunk map ---- */

static uint64_t key_of(int32_t cx, int32_t cz)
{
	return (uint64_t)(uint32_t)cx << 32 | (uint32_t)cz;
}

static size_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	k ^= k >> 33;
	return (size_t)k;
}

/* The slot of key k: where it is, or the empty slot where it would go. */
static size_t map_slot(const struct editlog_map *m, uint64_t k)
{
	size_t i = mix(k) & (m->cap - 1);

	while (m->vals[i] && m->keys[i] != k)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint64_t map_get(const struct editlog_map *m, uint64_t k)
{
	return m->cap ? m->vals[map_slot(m, k)] : 0;
}

/* Room for `more` new keys at a load of at most one half. */
static int map_reserve(struct editlog_map *m, size_t more)
{
	struct editlog_map g;
	size_t cap = m->cap ? m->cap : 64;

	while (cap / 2 < m->used + more)
		cap *= 2;
	if (cap == m->cap)
		return 0;
	g.keys = malloc(cap * sizeof(*g.keys));
	g.vals = calloc(cap, sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		free(g.keys);
		free(g.vals);
		return ERR_NOMEM;
	}
	g.cap = cap;
	g.used = m->used;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->vals[i]) {
			size_t j = map_slot(&g, m->keys[i]);

			g.keys[j] = m->keys[i];
			g.vals[j] = m->vals[i];
		}
	}
	free(m->keys);
	free(m->vals);
	*m = g;
	return 0;
}

/* Set k to v (non-zero); room must be reserved. Returns 1 for a new key. */
static int map_put(struct editlog_map *m, uint64_t k, uint64_t v)
{
	size_t i = map_slot(m, k);
	int fresh = !m->vals[i];

	m->keys[i] = k;
	m->vals[i] = v;
	m->used += (size_t)fresh;
	return fresh;
}

static void map_free(struct editlog_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ---- the log ---- */

void editlog_init(struct editlog *l, uint64_t fingerprint, uint64_t seed,
		  int chunk_log2)
{
	memset(l, 0, sizeof(*l));
	l->h0 = edit_hash_start(fingerprint, seed);
	l->chunk_log2 = chunk_log2;
}

static void entry_free(struct editlog_entry *x)
{
	free(x->r);
	free(x->chg);
	x->r = NULL;
	x->chg = NULL;
}

void editlog_free(struct editlog *l)
{
	for (size_t k = 0; k < l->n; k++)
		entry_free(&l->x[k]);
	free(l->e);
	free(l->h);
	free(l->x);
	map_free(&l->version);
	memset(l, 0, sizeof(*l));
}

uint64_t editlog_hash(const struct editlog *l, uint64_t seq)
{
	return seq == 0 || seq > l->n ? l->h0 : l->h[seq - 1];
}

uint64_t editlog_version(const struct editlog *l, int32_t cx, int32_t cz)
{
	return map_get(&l->version, key_of(cx, cz));
}

/* Room for n more entries. */
static int grow(struct editlog *l, size_t n)
{
	size_t cap = l->cap ? l->cap : 256;
	struct editlog_entry *nx;
	struct edit *ne;
	uint64_t *nh;

	if (l->n + n <= l->cap)
		return 0;
	while (cap < l->n + n)
		cap *= 2;
	if (!(ne = realloc(l->e, cap * sizeof(*ne))))
		return ERR_NOMEM;
	l->e = ne;
	if (!(nh = realloc(l->h, cap * sizeof(*nh))))
		return ERR_NOMEM;
	l->h = nh;
	if (!(nx = realloc(l->x, cap * sizeof(*nx))))
		return ERR_NOMEM;
	l->x = nx;
	l->cap = cap;
	return 0;
}

/* Chunks of e get version seq. Room must be reserved. */
static void touch(struct editlog *l, const struct edit *e, uint64_t seq)
{
	int32_t xs[MAX_EDIT_CHUNKS], zs[MAX_EDIT_CHUNKS];
	size_t nc;

	edit_chunks(e, l->chunk_log2, xs, zs, MAX_EDIT_CHUNKS, &nc);
	for (size_t j = 0; j < nc && j < MAX_EDIT_CHUNKS; j++)
		map_put(&l->version, key_of(xs[j], zs[j]), seq);
}

/* Edit e with x (author, time) as l->n + 1; room reserved. */
static void add_edit(struct editlog *l, const struct edit *e,
		     const struct editlog_entry *x)
{
	uint64_t seq = l->n + 1, prev = editlog_hash(l, l->n);
	uint8_t wire[EDIT_WIRE_SIZE];

	l->e[l->n] = *e;
	l->x[l->n] = *x;
	l->x[l->n].kind = 0;
	l->x[l->n].out = 0;
	if (x->author_len) {
		edit_encode(e, wire);
		l->h[l->n] = batch_link(prev, seq, x->time_ms, x->author,
					x->author_len, 0, wire);
	} else {
		l->h[l->n] = edit_hash_next(prev, seq, e);
	}
	touch(l, e, seq);
	l->n++;
}

/*
 * Count (delta 1) or uncount (-1) the edits that filter f, at sequence
 * number self, takes out, as server/worlds/world_revert.c does; the edits that
 * start or stop counting go to d->chg and their chunks get version seq.
 */
static int walk(struct editlog *l, const struct revert *f, uint64_t self,
		uint64_t lo, int delta, uint64_t seq, struct editlog_entry *d)
{
	size_t cap = 0;

	for (uint64_t s = lo ? lo : 1; s < self && s <= l->n; s++) {
		struct editlog_entry *x = &l->x[s - 1];
		size_t nc;
		int was;

		if (x->kind != 0 ||
		    !revert_matches(f, self, s, &l->e[s - 1], x->author,
				    x->author_len, x->time_ms))
			continue;
		was = x->out != 0;
		x->out = (uint32_t)((int64_t)x->out + delta);
		if (was == (x->out != 0))
			continue;
		if (d->nchg == cap) {
			uint64_t *c;

			cap = cap ? 2 * cap : 16;
			if (!(c = realloc(d->chg, cap * sizeof(*c))))
				return ERR_NOMEM;
			d->chg = c;
		}
		d->chg[d->nchg++] = s;
		edit_chunks(&l->e[s - 1], l->chunk_log2, NULL, NULL, 0, &nc);
		if (map_reserve(&l->version, nc))
			return ERR_NOMEM;
		touch(l, &l->e[s - 1], seq);
	}
	return 0;
}

/* The first sequence number the log took at or after time_ms - span_ms
 * (span 0: 1): where a revert reaches (common/revert.h), by bisection
 * over the entries' times, which never go back. */
static uint64_t reach(const struct editlog *l, uint64_t time_ms, uint64_t span_ms)
{
	size_t lo = 0, hi = l->n;

	if (!span_ms || time_ms < span_ms)
		return 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->x[mid].time_ms < time_ms - span_ms)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint64_t)lo + 1;
}

/* Revert or undo x (x->r set, taken over) as l->n + 1; room reserved. */
static int add_revert(struct editlog *l, struct editlog_entry *x)
{
	uint64_t seq = l->n + 1, prev = editlog_hash(l, l->n);
	uint64_t lo = reach(l, x->time_ms, x->r->history_ms);
	uint8_t wire[REVERT_WIRE];
	struct editlog_entry *d = &l->x[l->n];
	int rc = 0;

	revert_encode(x->r, wire);
	memset(&l->e[l->n], 0, sizeof(l->e[l->n]));
	*d = *x;
	d->kind = 1;
	d->chg = NULL;
	d->nchg = 0;
	d->undone = 0;
	l->h[l->n] = batch_link(prev, seq, x->time_ms, x->author, x->author_len,
				1, wire);
	l->n++;
	if (lo < x->r->floor)
		lo = x->r->floor;
	if (x->r->op == REVERT_UNDO) {
		uint64_t t = x->r->undo;
		struct editlog_entry *tx = t >= 1 && t < seq ? &l->x[t - 1] : NULL;

		/* a revert not undone yet; else it changes no edit */
		if (tx && tx->kind == 1 && tx->r->op == REVERT_REVERT &&
		    !tx->undone) {
			rc = walk(l, tx->r, t, lo > tx->r->floor ? lo : tx->r->floor, -1,
				  seq, d);
			tx->undone = 1;
		}
	} else {
		rc = walk(l, x->r, seq, lo, 1, seq, d);
	}
	return rc;
}

int editlog_append(struct editlog *l, const struct edit *e, size_t n)
{
	const struct editlog_entry old = { 0 };
	size_t total = 0, nc, k;

	/* check and size everything first: a failure appends nothing */
	for (k = 0; k < n; k++) {
		if (edit_chunks(&e[k], l->chunk_log2, NULL, NULL, 0, &nc) &&
		    nc > MAX_EDIT_CHUNKS)
			return ERR_TOOBIG;
		total += nc;
	}
	if (grow(l, n) || map_reserve(&l->version, total))
		return ERR_NOMEM;
	for (k = 0; k < n; k++)
		add_edit(l, &e[k], &old);
	return 0;
}

/* The chunks of entry s: an edit's, or those a revert changed. */
static void entry_chunks(const struct editlog *l, uint64_t s, size_t j,
			 int32_t *xs, int32_t *zs, size_t *nc)
{
	const struct editlog_entry *x = &l->x[s - 1];

	if (x->kind == 0)
		edit_chunks(&l->e[s - 1], l->chunk_log2, xs, zs,
			    xs ? MAX_EDIT_CHUNKS : 0, nc);
	else
		edit_chunks(&l->e[x->chg[j] - 1], l->chunk_log2, xs, zs,
			    xs ? MAX_EDIT_CHUNKS : 0, nc);
}

/* Edits of entry s whose chunks count: 1 for an edit, nchg for a revert. */
static size_t entry_parts(const struct editlog *l, uint64_t s)
{
	return l->x[s - 1].kind == 0 ? 1 : l->x[s - 1].nchg;
}

int editlog_batch_chunks(const struct editlog *l, uint64_t first,
			 uint64_t last, int32_t **xz, size_t *n)
{
	int32_t xs[MAX_EDIT_CHUNKS], zs[MAX_EDIT_CHUNKS];
	struct editlog_map seen = { 0 };
	size_t total = 0, nc, k = 0, j, p;
	int32_t *out;

	*xz = NULL;
	*n = 0;
	if (first < 1 || first > last || last > l->n)
		return ERR_INVAL;
	for (uint64_t s = first; s <= last; s++)
		for (p = 0; p < entry_parts(l, s); p++) {
			entry_chunks(l, s, p, NULL, NULL, &nc);
			total += nc;
		}
	if (map_reserve(&seen, total) ||
	    !(out = malloc((total ? total : 1) * 2 * sizeof(*out)))) {
		map_free(&seen);
		return ERR_NOMEM;
	}
	for (uint64_t s = first; s <= last; s++)
		for (p = 0; p < entry_parts(l, s); p++) {
			entry_chunks(l, s, p, xs, zs, &nc);
			for (j = 0; j < nc && j < MAX_EDIT_CHUNKS; j++) {
				if (!map_put(&seen, key_of(xs[j], zs[j]), 1))
					continue;
				out[2 * k] = xs[j];
				out[2 * k + 1] = zs[j];
				k++;
			}
		}
	map_free(&seen);
	*xz = out;
	*n = k;
	return 0;
}

/* ---- pages ---- */

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* A JSON number that is an integer in [0, 2^53]. */
static int get_seq(const cJSON *o, const char *name, uint64_t *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	double d;

	if (!cJSON_IsNumber(it))
		return ERR_PARSE;
	d = it->valuedouble;
	if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d))
		return ERR_PARSE;
	*v = (uint64_t)d;
	return 0;
}

/* 16 lowercase hex digits. */
static int get_hash(const cJSON *o, const char *name, uint64_t *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	const char *s = cJSON_IsString(it) ? it->valuestring : NULL;

	if (!s || strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16)
		return ERR_PARSE;
	*v = strtoull(s, NULL, 16);
	return 0;
}

/*
 * Parse the edits of arr (each already without "seq") in groups of at
 * most EDIT_BATCH_MAX through edit_parse_batch(), into e (room for
 * count). Items leave arr as they are parsed.
 */
static int parse_edits(cJSON *arr, size_t count, struct edit *e,
		       const size_t *pos, char *err, size_t errlen)
{
	size_t done = 0;

	while (done < count) {
		size_t m = count - done < EDIT_BATCH_MAX ? count - done :
			   EDIT_BATCH_MAX, got;
		cJSON *root = cJSON_CreateObject();
		cJSON *group = root ? cJSON_AddArrayToObject(root, "edits") : NULL;
		struct edit *v = NULL;
		char *text = NULL, msg[200];
		int rc = ERR_NOMEM;

		/* {"edits": [the next m items]}: a batch as the server took it */
		for (size_t k = 0; group && k < m; k++)
			cJSON_AddItemToArray(group, cJSON_DetachItemFromArray(arr, 0));
		if (group)
			text = cJSON_PrintUnformatted(root);
		if (text)
			rc = edit_parse_batch(text, strlen(text), &v, &got, msg,
					      sizeof(msg));
		free(text);
		cJSON_Delete(root);
		if (rc == ERR_NOMEM || (!rc && got != m)) {
			free(v);
			return ERR_NOMEM;
		}
		if (rc) {
			/* msg says "edits[K].field": K counts from the group */
			unsigned long k = 0;
			char *dot = NULL;

			if (sscanf(msg, "edits[%lu]", &k) == 1)
				dot = strchr(msg, ']');
			if (dot && done + k < count)
				return fail(err, errlen, rc, "edits[%zu]%s",
					    pos[done + k], dot + 1);
			return fail(err, errlen, rc, "%s", msg);
		}
		memcpy(e + done, v, m * sizeof(*v));
		free(v);
		done += m;
	}
	return 0;
}

/*
 * Take author, time and reverted out of item k (without "seq") into x;
 * a revert or undo entry is parsed whole into x->r (new) and x->kind 1.
 */
static int parse_entry(cJSON *it, size_t k, struct editlog_entry *x,
		       char *err, size_t errlen)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(it, "author");
	cJSON *rv = cJSON_GetObjectItemCaseSensitive(it, "revert");
	const cJSON *v;
	char msg[200], *text;
	uint64_t u;
	int rc;

	memset(x, 0, sizeof(*x));
	if (a) {
		if (!cJSON_IsString(a) ||
		    !revert_author_ok(a->valuestring, strlen(a->valuestring)))
			return fail(err, errlen, ERR_PARSE, "edits[%zu].author: "
				    "not 1..64 of A-Z a-z 0-9 _ . @ -", k);
		x->author_len = (uint8_t)strlen(a->valuestring);
		memcpy(x->author, a->valuestring, x->author_len);
		if (get_seq(it, "time", &x->time_ms))
			return fail(err, errlen, ERR_PARSE, "edits[%zu].time: "
				    "missing or not milliseconds", k);
		cJSON_DeleteItemFromObjectCaseSensitive(it, "author");
		cJSON_DeleteItemFromObjectCaseSensitive(it, "time");
	} else if (cJSON_GetObjectItemCaseSensitive(it, "time")) {
		return fail(err, errlen, ERR_PARSE, "edits[%zu].time: without "
			    "an author", k);
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(it, "reverted")) != NULL) {
		if (!cJSON_IsTrue(v))
			return fail(err, errlen, ERR_PARSE, "edits[%zu].reverted: "
				    "not true", k);
		cJSON_DeleteItemFromObjectCaseSensitive(it, "reverted");
	}
	if (!rv && !cJSON_GetObjectItemCaseSensitive(it, "undo"))
		return 0; /* an edit */
	if (!x->author_len)
		return fail(err, errlen, ERR_PARSE, "edits[%zu]: a revert "
			    "without an author", k);
	if (!(x->r = calloc(1, sizeof(*x->r))))
		return ERR_NOMEM;
	x->kind = 1;
	if (rv) {
		if (!cJSON_IsObject(rv) || get_seq(rv, "floor", &u) || !u)
			return fail(err, errlen, ERR_PARSE, "edits[%zu].revert."
				    "floor: missing or not a sequence number", k);
		cJSON_DeleteItemFromObjectCaseSensitive(rv, "floor");
		if (!(text = cJSON_PrintUnformatted(rv)))
			return ERR_NOMEM;
		rc = revert_parse(text, strlen(text), x->r, msg, sizeof(msg));
		free(text);
		if (rc)
			return fail(err, errlen, rc, "edits[%zu].revert.%s", k, msg);
		x->r->floor = u;
		cJSON_DeleteItemFromObjectCaseSensitive(it, "revert");
		if (cJSON_GetObjectItemCaseSensitive(it, "count")) {
			if (get_seq(it, "count", &u))
				return fail(err, errlen, ERR_PARSE, "edits[%zu]."
					    "count: not a count", k);
			cJSON_DeleteItemFromObjectCaseSensitive(it, "count");
		}
		if ((v = cJSON_GetObjectItemCaseSensitive(it, "undone")) != NULL) {
			if (!cJSON_IsTrue(v))
				return fail(err, errlen, ERR_PARSE, "edits[%zu]."
					    "undone: not true", k);
			cJSON_DeleteItemFromObjectCaseSensitive(it, "undone");
		}
	} else {
		x->r->op = REVERT_UNDO;
		if (get_seq(it, "undo", &x->r->undo) || !x->r->undo)
			return fail(err, errlen, ERR_PARSE, "edits[%zu].undo: "
				    "not a sequence number", k);
		if (get_seq(it, "floor", &x->r->floor) || !x->r->floor)
			return fail(err, errlen, ERR_PARSE, "edits[%zu].floor: "
				    "missing or not a sequence number", k);
		if (cJSON_GetObjectItemCaseSensitive(it, "history_ms") &&
		    get_seq(it, "history_ms", &x->r->history_ms))
			return fail(err, errlen, ERR_PARSE, "edits[%zu].history_ms: "
				    "not a whole number", k);
		cJSON_DeleteItemFromObjectCaseSensitive(it, "undo");
		cJSON_DeleteItemFromObjectCaseSensitive(it, "floor");
		cJSON_DeleteItemFromObjectCaseSensitive(it, "history_ms");
	}
	if (it->child)
		return fail(err, errlen, ERR_PARSE, "edits[%zu].%.60s: unknown "
			    "field", k, it->child->string ? it->child->string : "?");
	return 0;
}

int editlog_add_page(struct editlog *l, const char *json, size_t len,
		     struct editlog_page *pg, char *err, size_t errlen)
{
	cJSON *root = cJSON_ParseWithLength(json, len), *arr, *it, *only = NULL;
	struct editlog_entry *x = NULL;
	struct edit *e = NULL;
	size_t count = 0, k = 0, j, nedits = 0, total = 0, *pos = NULL;
	int rc;

	memset(pg, 0, sizeof(*pg));
	if (err && errlen)
		err[0] = 0;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return fail(err, errlen, ERR_PARSE, "not a JSON object");
	}
	arr = cJSON_GetObjectItemCaseSensitive(root, "edits");
	rc = ERR_PARSE;
	if (get_seq(root, "since", &pg->since)) {
		fail(err, errlen, rc, "since: missing or not a sequence number");
		goto out;
	}
	if (get_seq(root, "seq", &pg->seq)) {
		fail(err, errlen, rc, "seq: missing or not a sequence number");
		goto out;
	}
	if (get_hash(root, "world_hash", &pg->world_hash)) {
		fail(err, errlen, rc, "world_hash: missing or not 16 hex digits");
		goto out;
	}
	if (!cJSON_IsArray(arr)) {
		fail(err, errlen, rc, "edits: missing or not an array");
		goto out;
	}
	if (cJSON_GetObjectItemCaseSensitive(root, "next")) {
		if (get_seq(root, "next", &pg->next)) {
			fail(err, errlen, rc, "next: not a sequence number");
			goto out;
		}
		pg->has_next = 1;
	}
	rc = ERR_RANGE;
	if (pg->since != l->n) {
		fail(err, errlen, rc, "since: %llu, asked %llu",
		     (unsigned long long)pg->since, (unsigned long long)l->n);
		goto out;
	}
	if (pg->seq < l->n) {
		fail(err, errlen, rc, "the server's log ends at seq %llu, before "
		     "ours (%llu)", (unsigned long long)pg->seq,
		     (unsigned long long)l->n);
		goto out;
	}
	count = (size_t)cJSON_GetArraySize(arr);
	pg->count = count;
	cJSON_ArrayForEach(it, arr) {
		uint64_t seq;

		if (!cJSON_IsObject(it) || get_seq(it, "seq", &seq)) {
			fail(err, errlen, ERR_PARSE,
			     "edits[%zu].seq: missing or not a sequence number", k);
			rc = ERR_PARSE;
			goto out;
		}
		if (seq != l->n + k + 1) {
			fail(err, errlen, rc, "edits[%zu].seq: %llu, expected %llu",
			     k, (unsigned long long)seq,
			     (unsigned long long)(l->n + k + 1));
			goto out;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(it, "seq");
		k++;
	}
	if (l->n + count > pg->seq) {
		fail(err, errlen, rc, "edits: past seq %llu",
		     (unsigned long long)pg->seq);
		goto out;
	}
	if (pg->has_next ? pg->next != l->n + count || !count :
	    l->n + count != pg->seq) {
		fail(err, errlen, rc, "the page ends at seq %llu, but says seq "
		     "%llu%s", (unsigned long long)(l->n + count),
		     (unsigned long long)(pg->has_next ? pg->next : pg->seq),
		     pg->has_next ? " in next" : "");
		goto out;
	}
	rc = ERR_NOMEM;
	if (count && (!(e = malloc(count * sizeof(*e))) ||
		      !(x = calloc(count, sizeof(*x))) ||
		      !(pos = malloc(count * sizeof(*pos))) ||
		      !(only = cJSON_CreateArray())))
		goto out;
	/* author, time, reverts out; the edits alone into only, in order */
	for (k = 0; k < count; k++) {
		it = cJSON_GetArrayItem(arr, (int)(k - nedits));
		if ((rc = parse_entry(it, k, &x[k], err, errlen)) != 0)
			goto out;
		if (x[k].kind == 0) {
			pos[nedits++] = k;
			cJSON_AddItemToArray(only, cJSON_DetachItemFromArray(
				arr, (int)(k - nedits + 1)));
		}
	}
	if (nedits && (rc = parse_edits(only, nedits, e, pos, err, errlen)) != 0)
		goto out;
	for (k = 0; k < nedits; k++) {
		size_t nc;

		if (edit_chunks(&e[k], l->chunk_log2, NULL, NULL, 0, &nc) &&
		    nc > MAX_EDIT_CHUNKS) {
			rc = fail(err, errlen, ERR_TOOBIG, "edits[%zu]: touches "
				  "more than %d chunks", pos[k], MAX_EDIT_CHUNKS);
			goto out;
		}
		total += nc;
	}
	if ((rc = grow(l, count)) != 0 ||
	    (rc = map_reserve(&l->version, total)) != 0)
		goto out;
	/* from here the entries go in (a revert may still run out of memory) */
	for (k = 0, j = 0; k < count; k++) {
		if (x[k].kind == 0) {
			add_edit(l, &e[j++], &x[k]);
			continue;
		}
		rc = add_revert(l, &x[k]);
		x[k].r = NULL; /* the log's now */
		if (rc)
			goto out;
	}
	rc = 0;
out:
	for (k = 0; x && k < count; k++)
		entry_free(&x[k]);
	free(x);
	free(pos);
	free(e);
	cJSON_Delete(only);
	cJSON_Delete(root);
	return rc;
}
