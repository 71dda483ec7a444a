/*
 * revert.c - revert filters: JSON, canonical bytes, matching (see revert.h).
 */
#include "revert.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "edit.h"
#include "err.h"
#include "jsonv.h"
#include "le.h"

#define MAX_INT 9007199254740992.0 /* 2^53: integers a JSON number holds exactly */

int revert_author_ok(const char *s, size_t n)
{
	size_t i;

	if (n < 1 || n > REVERT_AUTHOR_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '@' || c == '-'))
			return 0;
	}
	return 1;
}

/* A whole number in [1, 2^53] (or [0, 2^53] with zero_ok) at key. */
static int whole(const cJSON *v, int zero_ok, uint64_t *out)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
	    v->valuedouble < (zero_ok ? 0 : 1) || v->valuedouble > MAX_INT)
		return -1;
	*out = (uint64_t)v->valuedouble;
	return 0;
}

static int area(const cJSON *v, struct revert *r)
{
	double lim = (double)EDIT_MAX_COORD_MM / 1e3, m[4];
	int k;

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 4)
		return -1;
	for (k = 0; k < 4; k++) {
		const cJSON *c = cJSON_GetArrayItem(v, k);

		if (!cJSON_IsNumber(c) || !(fabs(c->valuedouble) <= lim))
			return -1;
		m[k] = c->valuedouble;
	}
	if (m[0] > m[2] || m[1] > m[3])
		return -1;
	r->x0_mm = (int64_t)llround(m[0] * 1e3);
	r->z0_mm = (int64_t)llround(m[1] * 1e3);
	r->x1_mm = (int64_t)llround(m[2] * 1e3);
	r->z1_mm = (int64_t)llround(m[3] * 1e3);
	return 0;
}

/* One member of a filter; -1 with *why on a bad value, 1 for an unknown key. */
static int member(const cJSON *it, struct revert *r, const char **why)
{
	const char *k = it->string;
	uint64_t u;

	if (!strcmp(k, "author")) {
		size_t n = cJSON_IsString(it) ? strlen(it->valuestring) : 0;

		*why = "author: must be 1..64 of A-Z a-z 0-9 _ . @ -";
		if (!revert_author_ok(it->valuestring ? it->valuestring : "", n))
			return -1;
		memcpy(r->author, it->valuestring, n);
		r->author_len = (uint8_t)n;
		r->has |= REVERT_HAS_AUTHOR;
	} else if (!strcmp(k, "since_time") || !strcmp(k, "until_time")) {
		int since = k[0] == 's';

		*why = since ? "since_time: must be milliseconds since 1970 (a whole number)" :
			       "until_time: must be milliseconds since 1970 (a whole number)";
		if (whole(it, 1, &u))
			return -1;
		*(since ? &r->since_ms : &r->until_ms) = (int64_t)u;
		r->has |= since ? REVERT_HAS_SINCE : REVERT_HAS_UNTIL;
	} else if (!strcmp(k, "area")) {
		*why = "area: must be [x0, z0, x1, z1] in metres with x0 <= x1 and z0 <= z1";
		if (area(it, r))
			return -1;
		r->has |= REVERT_HAS_AREA;
	} else if (!strcmp(k, "seq_from") || !strcmp(k, "seq_to")) {
		int from = k[4] == 'f';

		*why = from ? "seq_from: must be a sequence number (1 or more)" :
			      "seq_to: must be a sequence number (1 or more)";
		if (whole(it, 0, &u) || !u)
			return -1;
		*(from ? &r->seq_from : &r->seq_to) = u;
		r->has |= from ? REVERT_HAS_SEQ_FROM : REVERT_HAS_SEQ_TO;
	} else if (!strcmp(k, "floor") || !strcmp(k, "history_ms")) {
		int fl = k[0] == 'f';

		*why = fl ? "floor: must be a sequence number (1 or more)" :
			    "history_ms: must be a whole number of milliseconds";
		if (whole(it, 1, &u) || (fl && !u))
			return -1;
		*(fl ? &r->floor : &r->history_ms) = u;
	} else if (!strcmp(k, "undo")) {
		*why = "undo: must be the sequence number of a revert";
		if (whole(it, 0, &u) || !u)
			return -1;
		r->op = REVERT_UNDO;
		r->undo = u;
	} else {
		return 1;
	}
	return 0;
}

int revert_parse(const char *json, size_t len, struct revert *r, char *err, size_t errlen)
{
	const cJSON *it;
	const char *why = NULL;
	cJSON *root;
	size_t at;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (memchr(json, '\0', len) || jsonv_check(json, len, &at, &why)) {
		snprintf(err, errlen, "body: invalid JSON%s%s", why ? ": " : "", why ? why : "");
		return ERR_PARSE;
	}
	if (!(root = cJSON_ParseWithLength(json, len)))
		return ERR_NOMEM;
	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "body: must be an object (a filter, or {\"undo\": SEQ})");
		rc = ERR_PARSE;
	}
	for (it = rc ? NULL : root->child; it; it = it->next) {
		int m = cJSON_GetObjectItemCaseSensitive(root, it->string) != it ? 2 :
			member(it, r, &why);

		if (m) {
			snprintf(err, errlen, m == 2 ? "%.64s: twice" : m == 1 ?
				 "%.64s: unknown field (author, since_time, until_time, area,"
				 " seq_from, seq_to, undo)" : "%s", m == -1 ? why : it->string);
			rc = m == -1 ? ERR_RANGE : ERR_PARSE;
			break;
		}
	}
	if (!rc && r->op == REVERT_UNDO && r->has) {
		snprintf(err, errlen, "undo: takes no filter");
		rc = ERR_PARSE;
	} else if (!rc && r->op == REVERT_REVERT && !r->has) {
		snprintf(err, errlen, "body: a revert needs at least one of author, since_time,"
			 " until_time, area, seq_from, seq_to (or undo)");
		rc = ERR_PARSE;
	} else if (!rc && (r->has & REVERT_HAS_SINCE) && (r->has & REVERT_HAS_UNTIL) &&
		   r->since_ms > r->until_ms) {
		snprintf(err, errlen, "since_time: after until_time");
		rc = ERR_RANGE;
	} else if (!rc && (r->has & REVERT_HAS_SEQ_FROM) && (r->has & REVERT_HAS_SEQ_TO) &&
		   r->seq_from > r->seq_to) {
		snprintf(err, errlen, "seq_from: after seq_to");
		rc = ERR_RANGE;
	}
	cJSON_Delete(root);
	return rc;
}

void revert_encode(const struct revert *r, uint8_t out[REVERT_WIRE])
{
	memset(out, 0, REVERT_WIRE);
	out[0] = r->op;
	out[1] = r->has;
	out[2] = r->author_len;
	memcpy(out + 3, r->author, r->author_len);
	le_put64(out + 67, r->since_ms);
	le_put64(out + 75, r->until_ms);
	le_put64(out + 83, r->x0_mm);
	le_put64(out + 91, r->z0_mm);
	le_put64(out + 99, r->x1_mm);
	le_put64(out + 107, r->z1_mm);
	le_put64(out + 115, (int64_t)r->seq_from);
	le_put64(out + 123, (int64_t)r->seq_to);
	le_put64(out + 131, (int64_t)r->undo);
	le_put64(out + 139, (int64_t)r->floor);
	le_put64(out + 147, (int64_t)r->history_ms);
	/* bytes 155..162: room for a later field, zero */
}

int revert_decode(const uint8_t *in, size_t len, struct revert *r)
{
	size_t k;

	if (len != REVERT_WIRE)
		return ERR_CORRUPT;
	memset(r, 0, sizeof(*r));
	r->op = in[0];
	r->has = in[1];
	r->author_len = in[2];
	if (r->author_len > REVERT_AUTHOR_MAX)
		return ERR_CORRUPT;
	memcpy(r->author, in + 3, r->author_len);
	r->since_ms = le_get64(in + 67);
	r->until_ms = le_get64(in + 75);
	r->x0_mm = le_get64(in + 83);
	r->z0_mm = le_get64(in + 91);
	r->x1_mm = le_get64(in + 99);
	r->z1_mm = le_get64(in + 107);
	r->seq_from = (uint64_t)le_get64(in + 115);
	r->seq_to = (uint64_t)le_get64(in + 123);
	r->undo = (uint64_t)le_get64(in + 131);
	r->floor = (uint64_t)le_get64(in + 139);
	r->history_ms = (uint64_t)le_get64(in + 147);
	for (k = 155; k < REVERT_WIRE; k++)
		if (in[k])
			return ERR_CORRUPT;
	if (r->op > REVERT_UNDO || (r->has & ~REVERT_HAS_ALL) || !r->floor ||
	    (r->op == REVERT_REVERT && !r->has) || (r->op == REVERT_UNDO && (r->has || !r->undo)) ||
	    (r->has & REVERT_HAS_AUTHOR) != (r->author_len ? REVERT_HAS_AUTHOR : 0) ||
	    (r->author_len && !revert_author_ok(r->author, r->author_len)) ||
	    r->x0_mm > r->x1_mm || r->z0_mm > r->z1_mm)
		return ERR_CORRUPT;
	return 0;
}

int revert_matches(const struct revert *r, uint64_t self, uint64_t seq, const struct edit *e,
		   const char *author, size_t n, uint64_t time_ms)
{
	uint8_t h = r->has;

	return r->op == REVERT_REVERT && seq >= r->floor && seq < self &&
	       (!(h & REVERT_HAS_SEQ_FROM) || seq >= r->seq_from) &&
	       (!(h & REVERT_HAS_SEQ_TO) || seq <= r->seq_to) &&
	       (!(h & REVERT_HAS_AUTHOR) || (n == r->author_len && !memcmp(author, r->author, n))) &&
	       (!(h & REVERT_HAS_SINCE) || (int64_t)time_ms >= r->since_ms) &&
	       (!(h & REVERT_HAS_UNTIL) || (int64_t)time_ms <= r->until_ms) &&
	       (!(h & REVERT_HAS_AREA) || (e->x_mm >= r->x0_mm && e->x_mm <= r->x1_mm &&
					   e->z_mm >= r->z0_mm && e->z_mm <= r->z1_mm));
}

static int add_u64(cJSON *o, const char *key, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	return cJSON_AddRawToObject(o, key, num) ? 0 : ERR_NOMEM;
}

int revert_to_json(const struct revert *r, void *obj)
{
	cJSON *o = obj, *f, *a;
	char author[REVERT_AUTHOR_MAX + 1];

	if (r->op == REVERT_UNDO)
		return add_u64(o, "undo", r->undo) || add_u64(o, "floor", r->floor) ||
		       (r->history_ms && add_u64(o, "history_ms", r->history_ms)) ? ERR_NOMEM : 0;
	if (!(f = cJSON_AddObjectToObject(o, "revert")))
		return ERR_NOMEM;
	if (r->has & REVERT_HAS_AUTHOR) {
		memcpy(author, r->author, r->author_len);
		author[r->author_len] = '\0';
		cJSON_AddStringToObject(f, "author", author);
	}
	if (r->has & REVERT_HAS_SINCE)
		add_u64(f, "since_time", (uint64_t)r->since_ms);
	if (r->has & REVERT_HAS_UNTIL)
		add_u64(f, "until_time", (uint64_t)r->until_ms);
	if (r->has & REVERT_HAS_AREA) {
		const double m[4] = { (double)r->x0_mm / 1e3, (double)r->z0_mm / 1e3,
				      (double)r->x1_mm / 1e3, (double)r->z1_mm / 1e3 };

		a = cJSON_CreateDoubleArray(m, 4);
		if (!a || !cJSON_AddItemToObject(f, "area", a))
			return ERR_NOMEM;
	}
	if (r->has & REVERT_HAS_SEQ_FROM)
		add_u64(f, "seq_from", r->seq_from);
	if (r->has & REVERT_HAS_SEQ_TO)
		add_u64(f, "seq_to", r->seq_to);
	if (r->history_ms && add_u64(f, "history_ms", r->history_ms))
		return ERR_NOMEM;
	return add_u64(f, "floor", r->floor);
}
