/*
 * api.c - request targets, the server's JSON and bundle indexes (api.h).
 */
#include "api.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

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
	while (log2 < 13 && (double)(1u << log2) < size)
		log2++;
	rc = ERR_RANGE;
	if (log2 < 4 || log2 > 12 || (double)(1u << log2) != size ||
	    !(max_lod >= 0 && max_lod <= log2) || !(q >= 1 && q < 1e9) ||
	    !(seq >= 0))
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

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int api_bundle_parse(const uint8_t *b, size_t n, struct api_bundle_entry *out,
		 size_t cap, size_t *count)
{
	size_t k, m, index_end;

	if (n < 4 || memcmp(b, API_BUNDLE_MAGIC, 4) != 0)
		return ERR_MAGIC;
	if (n < API_BUNDLE_HEADER)
		return ERR_TRUNC;
	if ((b[4] | b[5] << 8) != API_BUNDLE_VERSION)
		return ERR_VERSION;
	m = le32(b + 8);
	if (m == 0 || m > API_BUNDLE_MAX_TILES)
		return ERR_CORRUPT;
	if (m > cap)
		return ERR_TOOBIG;
	index_end = API_BUNDLE_HEADER + m * API_BUNDLE_ENTRY;
	if (n < index_end)
		return ERR_TRUNC;
	for (k = 0; k < m; k++) {
		const uint8_t *e = b + API_BUNDLE_HEADER + k * API_BUNDLE_ENTRY;
		size_t off = le32(e + 8), len = le32(e + 12);

		if (off < index_end || off > n || len > n - off)
			return ERR_CORRUPT;
		out[k].cx = (int32_t)le32(e);
		out[k].cz = (int32_t)le32(e + 4);
		out[k].tile = b + off;
		out[k].len = len;
	}
	*count = m;
	return 0;
}
