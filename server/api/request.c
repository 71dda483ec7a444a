/*
 * request.c - answers, the made-body budget, path and query parsing,
 * content negotiation and validators (see request.h).
 */
#include "request.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <llhttp.h>

#include "base/options.h"
#include "err.h"
#include "http/http.h"
#include "jsonv.h"
#include "metrics.h"
#include "seed.h"
#include "util.h"
#include "worlds/catalog.h"

#define COPY_CHARGED 4096 /* copied bodies this large count in max_made */
#define CONN_SHARE 4      /* of max_made, one connection's at most */

/* The "error" token of each error status. */
#define ERROR_TOKEN_MAP(XX)                   \
	XX(400, "bad_request")                \
	XX(401, "unauthorized")               \
	XX(403, "forbidden")                  \
	XX(404, "not_found")                  \
	XX(405, "method_not_allowed")         \
	XX(408, "request_timeout")            \
	XX(409, "conflict")                   \
	XX(410, "gone")                       \
	XX(413, "content_too_large")          \
	XX(414, "uri_too_long")               \
	XX(415, "unsupported_media_type")     \
	XX(417, "expectation_failed")         \
	XX(422, "unprocessable")              \
	XX(429, "too_many_requests")          \
	XX(431, "header_fields_too_large")    \
	XX(503, "unavailable")                \
	XX(504, "outcome_unknown")            \
	XX(505, "http_version_not_supported")

static const char oom_body[] =
	"{\"error\":\"unavailable\",\"detail\":\"out of memory\"}";

static const struct option options[] = {
	OPTION(struct req_config, "response-mb", "TERRAIN_RESPONSE_MB", "MB", "64", OPTION_MIB,
	       response_bytes, 0, 1 << 20, "MiB of bodies made for single requests (bundles, large "
	       "JSON) that may wait to be sent; past it, or past a quarter of it on one "
	       "connection beyond that connection's first, such requests get 503 (at least 1)"),
};
size_t req_options(const struct option **out)
{
	*out = options;
	return ARRAY_LEN(options);
}

void req_env_init(struct req_env *env, struct metrics *m, size_t max_made)
{
	env->metrics = m;
	env->made = 0;
	env->max_made = max_made ? max_made : (size_t)1 << 20; /* at least 1 MiB */
	env->oom_head_len = (size_t)snprintf(env->oom_head, sizeof(env->oom_head),
		"%sContent-Type: application/json\r\nContent-Length: %zu\r\n"
		"Retry-After: 1\r\n" REQ_CORS, http_status_line(503), sizeof(oom_body) - 1);
	metrics_made(m, 0, env->max_made);
}

/* ---- answers ---------------------------------------------------------------- */

static const char *error_token(int status)
{
	switch (status) {
#define XX(code, token) case code: return token;
	ERROR_TOKEN_MAP(XX)
#undef XX
	}
	return "internal_error";
}

void req_send(struct req *q, int status, const void *head, size_t hlen,
	      const void *body, size_t blen, void (*release)(void *), void *arg)
{
	struct http_response r = {
		status, { head, hlen }, { body, blen }, q->xcache, release, arg
	};

	metrics_request(q->env->metrics, q->label, status);
	http_respond(q->http, &r);
}

void req_respond_oom(struct req_env *env, struct http_req *http, unsigned label)
{
	struct http_response r = {
		503, { env->oom_head, env->oom_head_len }, { oom_body, sizeof(oom_body) - 1 },
		NULL, NULL, NULL
	};

	metrics_request(env->metrics, label, 503);
	http_respond(http, &r);
}

/*
 * Bodies made for one request (a bundle, a JSON body of COPY_CHARGED
 * bytes or more) live until they are sent,
 * which a client that does not read can put off. All of them together may
 * hold at most max_made bytes, and those of one connection at most
 * max_made / CONN_SHARE once it holds one, so that a client that
 * pipelines and does not read cannot leave the others none; its first
 * body is always allowed, so a body of any size the budget holds can be
 * sent. A request that would make more is answered 503 instead (with a
 * small body, which is never charged).
 */
int req_made_take(struct req *q, size_t n)
{
	struct req_env *env = q->env;
	size_t *held = http_req_held(q->http);

	if (n > env->max_made - env->made) {
		q->detail = "too many answers waiting for their clients to read them, retry later";
		return ERR_BUSY;
	}
	if (*held && *held + n > env->max_made / CONN_SHARE) {
		q->detail = "too many answers waiting for this connection to read them, retry later";
		return ERR_BUSY;
	}
	env->made += n;
	*held += n;
	metrics_made(env->metrics, env->made, env->max_made);
	return 0;
}

void req_made_give(struct req *q, size_t n)
{
	struct req_env *env = q->env;
	size_t *held = http_req_held(q->http);

	assert(n <= env->made && n <= *held);
	env->made -= n;
	*held -= n;
	metrics_made(env->metrics, env->made, env->max_made);
}

/* A copied response: its bytes follow, and made is charged for them. */
struct copied {
	struct req *q;
	size_t made;
	max_align_t bytes[];
};

static void release_copy(void *arg)
{
	struct copied *c = arg;

	if (c->made)
		req_made_give(c->q, c->made);
	free(c);
}

void req_respond_copy(struct req *q, int status, const char *type,
		      const char *headers, const char *body, size_t blen)
{
	int uncharged = q->route && (q->route->flags & REQ_UNCHARGED);
	char head[1024], *buf;
	struct copied *c;
	int n;

	if (status == 204 || status == 304)
		n = snprintf(head, sizeof(head), "%s" REQ_CORS "%s",
			     http_status_line(status), headers ? headers : "");
	else
		n = snprintf(head, sizeof(head),
			     "%sContent-Type: %s\r\nContent-Length: %zu\r\n" REQ_CORS "%s",
			     http_status_line(status), type, blen, headers ? headers : "");
	if (n < 0 || (size_t)n >= sizeof(head) ||
	    !(c = malloc(sizeof(*c) + (size_t)n + blen + 1))) {
		req_respond_oom(q->env, q->http, q->label);
		return;
	}
	c->q = q;
	c->made = blen >= COPY_CHARGED && !uncharged ? (size_t)n + blen : 0;
	if (c->made && req_made_take(q, c->made) != 0) {
		free(c);
		req_respond_error(q, 503, q->detail);
		return;
	}
	buf = (char *)c->bytes;
	memcpy(buf, head, (size_t)n);
	if (blen)
		memcpy(buf + n, body, blen);
	req_send(q, status, buf, (size_t)n, buf + n, blen, release_copy, c);
}

void req_respond_json(struct req *q, int status, cJSON *o, const char *headers)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	if (!s) {
		req_respond_oom(q->env, q->http, q->label);
		return;
	}
	req_respond_copy(q, status, "application/json", headers, s, strlen(s));
	cJSON_free(s);
}

cJSON *req_json_u64(cJSON *obj, const char *name, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	return cJSON_AddRawToObject(obj, name, num);
}

const char *req_allow_list(struct req *q, uint64_t methods)
{
	char *s = http_req_alloc(q->http, 256);
	size_t len = 0;
	int m;

	if (!s)
		return "GET, HEAD, OPTIONS";
	for (m = 0; m < 64; m++)
		if (methods & REQ_M(m))
			len += (size_t)snprintf(s + len, 256 - len, "%s, ",
					       llhttp_method_name((llhttp_method_t)m));
	snprintf(s + len, 256 - len, "OPTIONS");
	return s;
}

/*
 * detail with every byte that does not start a valid UTF-8 character
 * written as the text \xHH (a backslash, x, two hex digits), into the
 * arena: details quote what clients sent (a Host, a key cut short by the
 * error buffer), and cJSON copies bytes >= 0x80 into its output unchecked,
 * so raw they would make the error body invalid JSON.
 */
static const char *valid_utf8(struct req *q, const char *detail)
{
	const unsigned char *s = (const unsigned char *)detail;
	size_t n = strlen(detail), i, k, len;
	char *out;

	for (i = 0; i < n && (k = jsonv_utf8_char(s + i, n - i)); i += k)
		;
	if (i == n)
		return detail;
	if (!(out = http_req_alloc(q->http, 4 * n + 1)))
		return "(detail not shown: invalid UTF-8)";
	for (i = len = 0; i < n; i += k) {
		if ((k = jsonv_utf8_char(s + i, n - i))) {
			memcpy(out + len, s + i, k);
			len += k;
		} else {
			len += (size_t)sprintf(out + len, "\\x%02x", s[i]);
			k = 1;
		}
	}
	out[len] = '\0';
	return out;
}

void req_respond_error(struct req *q, int status, const char *detail)
{
	cJSON *o = cJSON_CreateObject();
	char headers[320] = "Cache-Control: no-store\r\n";

	if (status == 405 && q->route)
		snprintf(headers, sizeof(headers), "Cache-Control: no-store\r\nAllow: %s\r\n",
			 req_allow_list(q, q->route->methods));
	else if (status == 503 || status == 429 || status == 504 || status == 409)
		strcat(headers, "Retry-After: 1\r\nAccess-Control-Expose-Headers: Retry-After\r\n");
	else if (status == 401)
		strcat(headers, "WWW-Authenticate: Bearer realm=\"terrain edits\"\r\n");
	if (q->count_rejects)
		metrics_edit_rejected(q->env->metrics, status);
	if (o && (!cJSON_AddStringToObject(o, "error", error_token(status)) ||
		  !cJSON_AddStringToObject(o, "detail", detail ? valid_utf8(q, detail) : ""))) {
		cJSON_Delete(o);
		o = NULL;
	}
	q->xcache = NULL;
	req_respond_json(q, status, o, headers);
}

/* ---- the request ------------------------------------------------------------ */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The byte at s, or the one an escape %XX there stands for, with the bytes
 * it takes in *used (s < end); -1 for a bad escape or a NUL. */
static int unescape(const char *s, const char *end, size_t *used)
{
	int hi, lo;

	if (*s != '%') {
		*used = 1;
		return *s ? (unsigned char)*s : -1;
	}
	if (end - s < 3 || (hi = hexval(s[1])) < 0 || (lo = hexval(s[2])) < 0)
		return -1;
	*used = 3;
	return hi * 16 + lo ? hi * 16 + lo : -1;
}

/* Percent-decode s (len bytes) into out (room for len + 1); rejects bad
 * escapes and NUL. Returns the decoded length or -1. */
static long decode(const char *s, size_t len, char *out)
{
	size_t i = 0, used, n = 0;

	while (i < len) {
		int c = unescape(s + i, s + len, &used);

		if (c < 0)
			return -1;
		out[n++] = (char)c;
		i += used;
	}
	out[n] = '\0';
	return (long)n;
}

int req_split_path(struct req *q)
{
	const char *p = q->http->path, *end = p + q->http->path_len;
	char *o;
	int n = 0;

	q->nseg = 0;
	if (*p != '/')
		return 0; /* "*" or garbage: matches nothing */
	o = http_req_alloc(q->http, q->http->path_len + 1);
	if (!o)
		return ERR_NOMEM;
	while (p < end) { /* at a '/' */
		char *seg = o;

		if (n == REQ_MAX_SEGS) {
			q->nseg = n + 1; /* too many: matches nothing */
			return 0;
		}
		for (p++; p < end && *p != '/'; ) {
			size_t used;
			int c = unescape(p, end, &used);

			if (c < 0) {
				q->detail = "bad percent-encoding or NUL in path";
				return ERR_INVAL;
			}
			*o++ = (char)c;
			p += used;
		}
		*o++ = '\0';
		q->seg[n] = seg;
		q->seglen[n++] = (size_t)(o - 1 - seg);
	}
	q->nseg = n;
	return 0;
}

const char *req_query(struct req *q, const char *name, size_t *len, int *rc)
{
	const char *s = q->http->query, *end;
	size_t nlen;

	*rc = 0;
	if (!s)
		return NULL;
	nlen = strlen(name);
	end = s + q->http->query_len;
	while (s < end) {
		const char *amp = memchr(s, '&', (size_t)(end - s));
		const char *stop = amp ? amp : end;

		if ((size_t)(stop - s) > nlen && !memcmp(s, name, nlen) && s[nlen] == '=') {
			char *v = http_req_alloc(q->http, (size_t)(stop - s));
			long n;

			if (!v) {
				*rc = ERR_NOMEM;
				return NULL;
			}
			n = decode(s + nlen + 1, (size_t)(stop - s) - nlen - 1, v);
			if (n < 0) {
				q->detail = "bad percent-encoding or NUL in query";
				*rc = ERR_INVAL;
				return NULL;
			}
			*len = (size_t)n;
			return v;
		}
		s = stop + 1;
	}
	return NULL;
}

int req_parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 20)
		return ERR_INVAL;
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return ERR_INVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int req_parse_i32(const char *s, size_t len, int32_t *out)
{
	int neg = len > 0 && s[0] == '-';
	uint64_t v;

	if (req_parse_u64(s + neg, len - (size_t)neg, &v))
		return ERR_INVAL;
	if (v > (uint64_t)INT32_MAX + (uint64_t)neg)
		return ERR_RANGE;
	*out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
	return 0;
}

int req_query_u64(struct req *q, const char *name, uint64_t *v, int *present,
		  const char *detail)
{
	size_t len = 0;
	int rc;
	const char *s = req_query(q, name, &len, &rc);

	if (present)
		*present = s != NULL;
	if (rc || !s)
		return rc;
	if (req_parse_u64(s, len, v)) {
		q->detail = detail;
		return ERR_INVAL;
	}
	return 0;
}

int req_query_i32(struct req *q, const char *name, int32_t *v, const char *detail)
{
	size_t len = 0;
	int rc;
	const char *s = req_query(q, name, &len, &rc);

	if (rc)
		return rc;
	if (!s || req_parse_i32(s, len, v)) {
		q->detail = detail;
		return ERR_INVAL;
	}
	return 0;
}

int req_world(struct req *q, const struct catalog *cat, uint64_t *seed, int *gen)
{
	const char *name;
	size_t glen = strlen(REQ_DEFAULT_GEN);
	int rc = seed_parse(q->seg[2], q->seglen[2], seed);

	if (rc) {
		q->detail = rc == ERR_RANGE ? "seed: decimal seed above 2^64-1" :
			    "seed: not a decimal or [A-Za-z0-9_-]{1,64} text seed";
		return rc;
	}
	name = req_query(q, "gen", &glen, &rc);
	if (rc)
		return rc;
	*gen = catalog_find(cat, name ? name : REQ_DEFAULT_GEN, glen);
	if (*gen < 0) {
		q->detail = "unknown generator";
		return ERR_NOTFOUND;
	}
	return 0;
}

/* ---- negotiation and validators --------------------------------------------- */

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A qvalue ("0", "0.5", "1.000") in thousandths, or -1. */
static int parse_q(const char *p, const char *end)
{
	int v, scale = 100;

	if (p == end || (*p != '0' && *p != '1'))
		return -1;
	v = (*p++ - '0') * 1000;
	if (p < end && *p == '.') {
		for (p++; p < end && *p >= '0' && *p <= '9' && scale; p++, scale /= 10)
			v += (*p - '0') * scale;
	}
	return p == end && v <= 1000 ? v : -1;
}

/* The q of one list element's parameters (1000 without q). */
static int element_q(const char *p, const char *end)
{
	while (p < end) {
		const char *semi;

		p = skip_ows(p);
		if (p < end && *p == ';')
			p = skip_ows(p + 1);
		semi = memchr(p, ';', (size_t)(end - p));
		if (!semi)
			semi = end;
		if (semi - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
			const char *e = semi;

			while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			return parse_q(p + 2, e);
		}
		p = semi;
	}
	return 1000;
}

/*
 * The q (thousandths) that an Accept or Accept-Encoding list gives each of
 * the n names into q[] (any case; the last valid mention wins), or -1 for
 * a name not listed. One pass over the list for all the names.
 */
static void list_qs(const char *list, const char *const *names, int n, int *q)
{
	int k;

	for (k = 0; k < n; k++)
		q[k] = -1;
	while (*list) {
		const char *end = strchr(list, ','), *tok, *tend;
		int v = -2;

		if (!end)
			end = list + strlen(list);
		tok = skip_ows(list);
		for (tend = tok; tend < end && *tend != ';' && *tend != ' ' && *tend != '\t'; tend++)
			;
		for (k = 0; k < n && tend > tok; k++) {
			size_t len = (size_t)(tend - tok);

			/* first letters first: most names differ there */
			if ((tok[0] | 0x20) != (names[k][0] | 0x20) ||
			    strncasecmp(tok, names[k], len) || names[k][len])
				continue;
			if (v == -2)
				v = element_q(tend, end);
			if (v >= 0)
				q[k] = v;
		}
		list = *end ? end + 1 : end;
	}
}

int req_accepts_zstd(const char *ae)
{
	static const char *const names[3] = { "zstd", "*", "identity" };
	int q[3], qz, qstar, qid;

	if (!ae)
		return 0;
	list_qs(ae, names, 3, q);
	qz = q[0];
	qstar = q[1];
	qid = q[2];
	if (qz < 0)
		qz = qstar > 0 ? qstar : 0;
	return qz > 0 && (qid < 0 || qz >= qid);
}

int req_coding(const char *ae)
{
	static const char *const names[5] = { "zstd", "gzip", "x-gzip", "*", "identity" };
	int q[5], qz, qg, qbest, best;

	if (!ae)
		return REQ_CODING_IDENTITY;
	list_qs(ae, names, 5, q);
	qz = q[0] >= 0 ? q[0] : q[3] > 0 ? q[3] : 0;
	qg = q[1] >= 0 || q[2] >= 0 ? (q[1] > q[2] ? q[1] : q[2]) : q[3] > 0 ? q[3] : 0;
	best = qz > 0 && qz >= qg ? REQ_CODING_ZSTD : qg > 0 ? REQ_CODING_GZIP : REQ_CODING_IDENTITY;
	qbest = best == REQ_CODING_ZSTD ? qz : qg;
	return best != REQ_CODING_IDENTITY && (q[4] < 0 || qbest >= q[4]) ? best :
	       REQ_CODING_IDENTITY;
}

int req_prefers(const char *accept, const char *type, const char *other)
{
	const char *names[2] = { type, other };
	int q[2];

	if (!accept)
		return 0;
	list_qs(accept, names, 2, q);
	return q[0] > 0 && q[0] >= q[1];
}

/*
 * RFC 9110 section 13.1.2: If-None-Match is "*" or a comma-separated list
 * of entity tags (weak ones compared weakly). A value that is neither, such
 * as two tags with no comma between them ("e""e"), is not a valid field
 * and matches nothing: the request is answered in full.
 */
int req_etag_matches(const char *inm, const char *etag)
{
	const char *p = inm, *e;
	size_t len;
	int match = 0;

	if (!p)
		return 0;
	len = strlen(etag);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '*') {
		for (p++; *p == ' ' || *p == '\t'; p++)
			;
		return !*p;
	}
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			return match;
		if (p[0] == 'W' && p[1] == '/')
			p += 2;
		if (*p != '"' || !(e = strchr(p + 1, '"')))
			return 0;
		match |= (size_t)(e - p + 1) == len && !memcmp(p, etag, len);
		for (p = e + 1; *p == ' ' || *p == '\t'; p++)
			;
		if (*p && *p != ',')
			return 0; /* no comma after a tag */
	}
}

void req_http_date(char out[30], long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 30, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* 0..11 for a month's three letters (any case), or -1. */
static int month_of(const char *m)
{
	static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	int i;

	for (i = 0; i < 12; i++)
		if (strlen(m) == 3 && !strncasecmp(names + 3 * i, m, 3))
			return i;
	return -1;
}

int req_parse_http_date(const char *s, long long *out)
{
	char wd[10], mon[4];
	int d, y, hh, mi, ss, n = 0;
	struct tm tm = { 0 };
	time_t t;

	if (!s)
		return ERR_INVAL;
	if (sscanf(s, "%3[A-Za-z], %2d %3[A-Za-z] %4d %2d:%2d:%2d GMT%n", wd, &d, mon, &y,
		   &hh, &mi, &ss, &n) == 7 && n && !s[n]) {
		/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
	} else if (n = 0, sscanf(s, "%9[A-Za-z], %2d-%3[A-Za-z]-%2d %2d:%2d:%2d GMT%n", wd, &d,
				 mon, &y, &hh, &mi, &ss, &n) == 7 && n && !s[n]) {
		y += y < 70 ? 2000 : 1900; /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
	} else if (n = 0, sscanf(s, "%3[A-Za-z] %3[A-Za-z] %2d %2d:%2d:%2d %4d%n", wd, mon, &d,
				 &hh, &mi, &ss, &y, &n) == 7 && n && !s[n]) {
		/* asctime: Sun Nov  6 08:49:37 1994 */
	} else {
		return ERR_INVAL;
	}
	if ((tm.tm_mon = month_of(mon)) < 0 || d < 1 || d > 31 || y < 1970 || hh > 23 ||
	    mi > 59 || ss > 60 || hh < 0 || mi < 0 || ss < 0)
		return ERR_INVAL;
	tm.tm_year = y - 1900;
	tm.tm_mday = d;
	tm.tm_hour = hh;
	tm.tm_min = mi;
	tm.tm_sec = ss;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return ERR_INVAL;
	*out = (long long)t;
	return 0;
}

int req_not_modified(const struct req *q, const char *etag, long long last_modified)
{
	const struct http_req *r = q->http;
	long long since;

	if (r->header[HTTP_H_IF_NONE_MATCH])
		return etag && req_etag_matches(r->header[HTTP_H_IF_NONE_MATCH], etag);
	if (!last_modified || (r->method != HTTP_GET && r->method != HTTP_HEAD) ||
	    req_parse_http_date(r->header[HTTP_H_IF_MODIFIED_SINCE], &since) != 0)
		return 0;
	return last_modified <= since;
}

int req_type_is(const char *ct, const char *type)
{
	size_t n = strlen(type);

	if (!ct)
		return 0;
	ct = skip_ows(ct);
	return !strncasecmp(ct, type, n) &&
	       (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t');
}

void req_hex64(char out[17], uint64_t v)
{
	snprintf(out, 17, "%016llx", (unsigned long long)v);
}

/* ---- versioned URLs --------------------------------------------------------- */

enum req_version req_version_match(uint64_t v, uint64_t version, uint64_t seq)
{
	if (v == version)
		return REQ_V_CURRENT;
	return v > seq ? REQ_V_AHEAD : REQ_V_MOVED;
}

/* Append n bytes of s to out (cap) at *len; 0, or -1 when they do not fit
 * with the NUL. */
static int append(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (n >= cap - *len)
		return -1;
	memcpy(out + *len, s, n);
	*len += n;
	return 0;
}

long req_query_set(const char *query, size_t qlen, const char *name, const char *value,
		   char *out, size_t cap)
{
	const char *s = query, *end = query ? query + qlen : NULL;
	size_t nlen = strlen(name), vlen = strlen(value), len = 0;
	int done = 0;

	if (!cap)
		return -1;
	while (s && s < end) {
		const char *amp = memchr(s, '&', (size_t)(end - s));
		const char *stop = amp ? amp : end;
		int ours = (size_t)(stop - s) >= nlen && !memcmp(s, name, nlen) &&
			   (s + nlen == stop || s[nlen] == '=');

		if (!ours || !done) {
			if ((len && append(out, cap, &len, "&", 1)) ||
			    (!ours && append(out, cap, &len, s, (size_t)(stop - s))) ||
			    (ours && (append(out, cap, &len, name, nlen) ||
				      append(out, cap, &len, "=", 1) ||
				      append(out, cap, &len, value, vlen))))
				return -1;
			done |= ours;
		}
		s = stop + 1;
	}
	if (!done && ((len && append(out, cap, &len, "&", 1)) ||
		      append(out, cap, &len, name, nlen) || append(out, cap, &len, "=", 1) ||
		      append(out, cap, &len, value, vlen)))
		return -1;
	out[len] = '\0';
	return (long)len;
}

/* The one mapping from error codes to statuses. */
static const struct {
	int err, status;
} err_statuses[] = {
	{ ERR_INVAL, 400 },    { ERR_RANGE, 400 }, { ERR_PARSE, 400 },
	{ ERR_NOTFOUND, 404 }, { ERR_TOOBIG, 413 }, { ERR_CONFLICT, 409 },
	{ ERR_BUSY, 503 },     { ERR_AGAIN, 503 },  { ERR_NOMEM, 503 },
};

int req_status(int err)
{
	size_t i;

	if (err > 0)
		return err;
	for (i = 0; i < ARRAY_LEN(err_statuses); i++)
		if (err_statuses[i].err == err)
			return err_statuses[i].status;
	return 500;
}

void req_fail(struct req *q, int rc)
{
	req_respond_error(q, req_status(rc), q->detail);
}
