/*
 * api.c - request targets, the server's JSON and bundle indexes (api.h).
 */
#include "api.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "le.h"

int api_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n < 1 || n > 64)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_-") == n;
}

static int put(size_t cap, int n)
{
	return n < 0 || (size_t)n >= cap ? ERR_TOOBIG : 0;
}

int api_info_path(char *buf, size_t cap, const char *seed, const char *gen)
{
	return put(cap, snprintf(buf, cap, "/v1/worlds/%s%s%s", seed,
				      gen ? "?gen=" : "", gen ? gen : ""));
}

int api_tile_path(char *buf, size_t cap, const char *seed, const char *gen,
		  int lod, int32_t cx, int32_t cz)
{
	return put(cap,
		   snprintf(buf, cap,
			    "/v1/worlds/%s/chunks/%d/%" PRId32 "/%" PRId32 "%s%s",
			    seed, lod, cx, cz, gen ? "?gen=" : "",
			    gen ? gen : ""));
}

int api_batch_path(char *buf, size_t cap, const char *seed,
		   const char *gen, int lod, int32_t cx0, int32_t cz0,
		   int32_t cx1, int32_t cz1)
{
	return put(cap,
		   snprintf(buf, cap,
			    "/v1/worlds/%s/chunks/%d?cx0=%" PRId32 "&cz0=%" PRId32
			    "&cx1=%" PRId32 "&cz1=%" PRId32 "%s%s",
			    seed, lod, cx0, cz0, cx1, cz1, gen ? "&gen=" : "",
			    gen ? gen : ""));
}

int api_add_layers(char *buf, size_t cap, const char *layers)
{
	size_t n = strlen(buf);
	int rc;

	if (n >= cap)
		return ERR_TOOBIG;
	rc = put(cap - n, snprintf(buf + n, cap - n, "%slayers=%s",
				   strchr(buf, '?') ? "&" : "?", layers));
	if (rc)
		buf[n] = 0;
	return rc;
}

int api_edits_path(char *buf, size_t cap, const char *seed, const char *gen)
{
	return put(cap, snprintf(buf, cap, "/v1/worlds/%s/edits%s%s", seed,
				      gen ? "?gen=" : "", gen ? gen : ""));
}

int api_log_path(char *buf, size_t cap, const char *seed, const char *gen,
		 uint64_t since, unsigned limit)
{
	return put(cap, snprintf(buf, cap,
				 "/v1/worlds/%s/edits?since=%" PRIu64
				 "&limit=%u%s%s", seed, since, limit,
				 gen ? "&gen=" : "", gen ? gen : ""));
}

int api_events_path(char *buf, size_t cap, const char *seed,
		    const char *gen)
{
	return put(cap, snprintf(buf, cap, "/v1/worlds/%s/events%s%s", seed,
				      gen ? "?gen=" : "", gen ? gen : ""));
}

int api_hashes_path(char *buf, size_t cap, const char *seed, const char *gen,
		    int32_t cx0, int32_t cz0, int32_t cx1, int32_t cz1)
{
	return put(cap, snprintf(buf, cap,
				 "/v1/worlds/%s/hashes?cx0=%" PRId32 "&cz0=%" PRId32
				 "&cx1=%" PRId32 "&cz1=%" PRId32 "%s%s", seed, cx0, cz0,
				 cx1, cz1, gen ? "&gen=" : "", gen ? gen : ""));
}

static int get_num(const cJSON *o, const char *name, double *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsNumber(it))
		return ERR_PARSE;
	*v = it->valuedouble;
	return 0;
}

static int get_hex(const cJSON *o, const char *name, uint64_t *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	char *end;

	if (!cJSON_IsString(it) || !it->valuestring[0])
		return ERR_PARSE;
	*v = strtoull(it->valuestring, &end, 16);
	return *end ? ERR_PARSE : 0;
}

int api_world_parse(const char *json, size_t len, struct api_world *wi)
{
	cJSON *o = cJSON_ParseWithLength(json, len);
	double size, max_lod, q = 10000, seq = 0;
	int rc = ERR_PARSE, log2 = 0;

	if (!o)
		return ERR_PARSE;
	if (get_hex(o, "fingerprint", &wi->fingerprint) ||
	    get_num(o, "chunk_size", &size) || get_num(o, "max_lod", &max_lod))
		goto out;
	get_num(o, "quantum_um", &q);
	get_num(o, "edit_seq", &seq);
	wi->has_world_hash = get_hex(o, "world_hash", &wi->world_hash) == 0;
	wi->has_selfcheck = get_hex(o, "selfcheck", &wi->selfcheck) == 0;
	while (log2 < 13 && (double)(1u << log2) < size)
		log2++;
	rc = ERR_RANGE;
	if (log2 < 4 || log2 > 12 || (double)(1u << log2) != size ||
	    !(max_lod >= 0 && max_lod <= log2) || !(q >= 1 && q < 1e9) ||
	    !(seq >= 0 && seq <= 9007199254740992.0)) /* 2^53: exact as a double */
		goto out;
	wi->chunk_log2 = log2;
	wi->max_lod = (int)max_lod;
	wi->quantum_um = (uint32_t)q;
	wi->edit_seq = (uint64_t)seq;
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

/* An integer in [lo, 2^53]. */
static int get_seq(const cJSON *o, const char *name, uint64_t lo,
		   uint64_t *v)
{
	double d;

	if (get_num(o, name, &d) || !(d >= (double)lo) ||
	    !(d <= 9007199254740992.0) || d != floor(d))
		return ERR_PARSE;
	*v = (uint64_t)d;
	return 0;
}

static int get_i32(const cJSON *it, int32_t *v)
{
	double d = cJSON_IsNumber(it) ? it->valuedouble : 0.5;

	if (!(d >= INT32_MIN && d <= INT32_MAX) || d != floor(d))
		return ERR_PARSE;
	*v = (int32_t)d;
	return 0;
}

int api_batch_parse(const char *json, size_t len, struct api_batch *b)
{
	cJSON *o = cJSON_ParseWithLength(json, len);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "chunks"), *c;
	const cJSON *hash = cJSON_GetObjectItemCaseSensitive(o, "world_hash");
	size_t n = 0;
	int rc = ERR_PARSE;

	memset(b, 0, sizeof(*b));
	if (!cJSON_IsObject(o) || !cJSON_IsArray(arr) ||
	    get_seq(o, "first_seq", 1, &b->first_seq) ||
	    get_seq(o, "last_seq", b->first_seq, &b->last_seq) ||
	    !cJSON_IsString(hash) || strlen(hash->valuestring) != 16 ||
	    strspn(hash->valuestring, "0123456789abcdef") != 16)
		goto out;
	b->world_hash = strtoull(hash->valuestring, NULL, 16);
	b->seq = b->last_seq;
	if (cJSON_GetObjectItemCaseSensitive(o, "seq") &&
	    get_seq(o, "seq", b->last_seq, &b->seq))
		goto out;
	n = (size_t)cJSON_GetArraySize(arr);
	if (n && !(b->chunks = malloc(2 * n * sizeof(*b->chunks)))) {
		rc = ERR_NOMEM;
		goto out;
	}
	b->replay = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "replay"));
	b->nchunks = 0;
	cJSON_ArrayForEach(c, arr) {
		int32_t *p = b->chunks + 2 * b->nchunks;

		if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != 2 ||
		    get_i32(cJSON_GetArrayItem(c, 0), p) ||
		    get_i32(cJSON_GetArrayItem(c, 1), p + 1))
			goto out;
		b->nchunks++;
	}
	rc = 0;
out:
	if (rc)
		api_batch_free(b);
	cJSON_Delete(o);
	return rc;
}

void api_batch_free(struct api_batch *b)
{
	free(b->chunks);
	memset(b, 0, sizeof(*b));
}

static void printable(const uint8_t *b, size_t len, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t k = 0; k < len && n + 1 < cap; k++)
		if (b[k] >= 0x20 && b[k] < 0x7f)
			out[n++] = (char)b[k];
	out[n] = 0;
}

void api_error_text(const uint8_t *body, size_t len, char *out, size_t cap)
{
	cJSON *o = body && len ? cJSON_ParseWithLength((const char *)body, len)
			       : NULL;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "detail");

	if (cJSON_IsString(e) && cJSON_IsString(d) && d->valuestring[0])
		snprintf(out, cap, "%s: %s", e->valuestring, d->valuestring);
	else if (cJSON_IsString(e))
		snprintf(out, cap, "%s", e->valuestring);
	else
		printable(body, body ? (len < 160 ? len : 160) : 0, out, cap);
	cJSON_Delete(o);
}

/* ---- bundles ---- */

int api_bundle_parse(const uint8_t *b, size_t n, struct api_bundle_entry *out,
		 size_t cap, size_t *count)
{
	size_t k, m, index_end;

	if (n < 4 || memcmp(b, API_BUNDLE_MAGIC, 4) != 0)
		return ERR_MAGIC;
	if (n < API_BUNDLE_HEADER)
		return ERR_TRUNC;
	if (le_get16(b + 4) != API_BUNDLE_VERSION)
		return ERR_VERSION;
	m = le_get32(b + 8);
	if (m == 0 || m > API_BUNDLE_MAX_TILES)
		return ERR_CORRUPT;
	if (m > cap)
		return ERR_TOOBIG;
	index_end = API_BUNDLE_HEADER + m * API_BUNDLE_ENTRY;
	if (n < index_end)
		return ERR_TRUNC;
	for (k = 0; k < m; k++) {
		const uint8_t *e = b + API_BUNDLE_HEADER + k * API_BUNDLE_ENTRY;
		size_t off = le_get32(e + 8), len = le_get32(e + 12);

		if (off < index_end || off > n || len > n - off)
			return ERR_CORRUPT;
		out[k].cx = (int32_t)le_get32(e);
		out[k].cz = (int32_t)le_get32(e + 4);
		out[k].tile = b + off;
		out[k].len = len;
	}
	*count = m;
	return 0;
}

int api_hashes_parse(const char *json, size_t len, struct api_chunk_hash **out,
		     size_t *n, uint64_t *seq)
{
	cJSON *o = cJSON_ParseWithLength(json, len);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "chunks"), *c;
	struct api_chunk_hash *v = NULL;
	size_t k = 0;
	int rc = ERR_PARSE;

	*out = NULL;
	*n = 0;
	if (!cJSON_IsObject(o) || !cJSON_IsArray(arr) || get_seq(o, "seq", 0, seq))
		goto out;
	if (cJSON_GetArraySize(arr) &&
	    !(v = calloc((size_t)cJSON_GetArraySize(arr), sizeof(*v)))) {
		rc = ERR_NOMEM;
		goto out;
	}
	cJSON_ArrayForEach(c, arr) {
		if (get_i32(cJSON_GetObjectItemCaseSensitive(c, "cx"), &v[k].cx) ||
		    get_i32(cJSON_GetObjectItemCaseSensitive(c, "cz"), &v[k].cz) ||
		    get_seq(c, "version", 1, &v[k].version) || v[k].version > *seq ||
		    get_hex(c, "hash", &v[k].hash))
			goto out;
		k++;
	}
	*out = v;
	*n = k;
	v = NULL;
	rc = 0;
out:
	free(v);
	cJSON_Delete(o);
	return rc;
}
