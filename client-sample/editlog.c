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

#include "edit.h"
#include "err.h"

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

void editlog_free(struct editlog *l)
{
	free(l->e);
	free(l->h);
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

int editlog_append(struct editlog *l, const struct edit *e, size_t n)
{
	int32_t xs[MAX_EDIT_CHUNKS], zs[MAX_EDIT_CHUNKS];
	size_t total = 0, nc, k, j;

	/* check and size everything first: a failure appends nothing */
	for (k = 0; k < n; k++) {
		if (edit_chunks(&e[k], l->chunk_log2, NULL, NULL, 0, &nc) &&
		    nc > MAX_EDIT_CHUNKS)
			return ERR_TOOBIG;
		total += nc;
	}
	if (l->n + n > l->cap) {
		size_t cap = l->cap ? l->cap : 256;
		struct edit *ne;
		uint64_t *nh;

		while (cap < l->n + n)
			cap *= 2;
		if (!(ne = realloc(l->e, cap * sizeof(*ne))))
			return ERR_NOMEM;
		l->e = ne;
		if (!(nh = realloc(l->h, cap * sizeof(*nh))))
			return ERR_NOMEM;
		l->h = nh;
		l->cap = cap;
	}
	if (map_reserve(&l->version, total))
		return ERR_NOMEM;
	for (k = 0; k < n; k++) {
		uint64_t seq = l->n + 1;

		l->e[l->n] = e[k];
		l->h[l->n] = edit_hash_next(editlog_hash(l, l->n), seq, &e[k]);
		edit_chunks(&e[k], l->chunk_log2, xs, zs, MAX_EDIT_CHUNKS, &nc);
		for (j = 0; j < nc; j++)
			map_put(&l->version, key_of(xs[j], zs[j]), seq);
		l->n++;
	}
	return 0;
}

int editlog_batch_chunks(const struct editlog *l, uint64_t first,
			 uint64_t last, int32_t **xz, size_t *n)
{
	int32_t xs[MAX_EDIT_CHUNKS], zs[MAX_EDIT_CHUNKS];
	struct editlog_map seen = { 0 };
	size_t total = 0, nc, k = 0, j;
	int32_t *out;

	*xz = NULL;
	*n = 0;
	if (first < 1 || first > last || last > l->n)
		return ERR_INVAL;
	for (uint64_t s = first; s <= last; s++) {
		edit_chunks(&l->e[s - 1], l->chunk_log2, NULL, NULL, 0, &nc);
		total += nc;
	}
	if (map_reserve(&seen, total) ||
	    !(out = malloc((total ? total : 1) * 2 * sizeof(*out)))) {
		map_free(&seen);
		return ERR_NOMEM;
	}
	for (uint64_t s = first; s <= last; s++) {
		edit_chunks(&l->e[s - 1], l->chunk_log2, xs, zs, MAX_EDIT_CHUNKS,
			    &nc);
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
static int parse_edits(cJSON *arr, size_t count, struct edit *e, char *err,
		       size_t errlen)
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
			if (dot)
				return fail(err, errlen, rc, "edits[%lu]%s",
					    (unsigned long)done + k, dot + 1);
			return fail(err, errlen, rc, "%s", msg);
		}
		memcpy(e + done, v, m * sizeof(*v));
		free(v);
		done += m;
	}
	return 0;
}

int editlog_add_page(struct editlog *l, const char *json, size_t len,
		     struct editlog_page *pg, char *err, size_t errlen)
{
	cJSON *root = cJSON_ParseWithLength(json, len), *arr, *it;
	struct edit *e = NULL;
	size_t count, k = 0;
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
	if (count && !(e = malloc(count * sizeof(*e)))) {
		rc = ERR_NOMEM;
		goto out;
	}
	if (count && (rc = parse_edits(arr, count, e, err, errlen)) != 0)
		goto out;
	if ((rc = editlog_append(l, e, count)) == ERR_TOOBIG)
		fail(err, errlen, rc, "an edit touches more than %d chunks",
		     MAX_EDIT_CHUNKS);
out:
	free(e);
	cJSON_Delete(root);
	return rc;
}
