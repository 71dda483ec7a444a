/*
 * http_log.c - the access log: one JSON object per line for each response
 * written (see http.h, struct http_limits.access_log), and reopening its
 * file on SIGHUP (http_server_reopen_log(), called by loop.c). When a
 * response counts as written is http_write.c's business; opening the file
 * at start-up is main.c's.
 *
 * JSON lines rather than the combined log format: every field is named and
 * typed, and one escaping rule (RFC 8259) covers every field, so jq, Python
 * or a log shipper read a line whatever a client put in its request line or
 * headers; the combined format has no standard escape for '"' inside the
 * request or the user agent. Here '"' and '\' are escaped, control bytes
 * (below 0x20, and 0x7f) are written as \u00XX, and UTF-8 is kept as it
 * came ("é" stays "é"), so a line is always valid UTF-8 JSON. A byte that
 * is not part of well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF) is written as the four characters
 * \xHH (in the file: \\xHH), so the line stays valid and the byte is
 * still there to read.
 *
 *   {"time":"2026-12-01T22:00:00Z","remote":"127.0.0.1","method":"GET",
 *    "path":"/v1/worlds/42/chunks/0/3/4?gen=alpine","protocol":"HTTP/1.1",
 *    "status":200,"bytes":1234,"duration_ms":0.412,"user_agent":"curl/7.88.1",
 *    "referer":null}
 *
 * (on one line). bytes is the body size sent (0 for HEAD, 204, 304 and the
 * head of a stream), Apache's %b; duration_ms is the time from the
 * request's first byte parsed to its response written (uv_hrtime(), the
 * same span as the terrain_request_duration_seconds histogram), with 3
 * decimals; absent headers are null.
 */
#include "http_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/files.h"
#include "err.h"

/* The length of the well-formed UTF-8 sequence at s[0..n) that starts
 * with a byte from 0x80 up (RFC 3629, table 3-7 of Unicode), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;      /* no overlong 3-byte forms */
	else if (s[0] == 0xed)
		hi = 0x9f;      /* no surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;      /* no overlong 4-byte forms */
	else if (s[0] == 0xf4)
		hi = 0x8f;      /* nothing past U+10FFFF */
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* s[0..n) escaped for a JSON string, without the quotes. */
static void put_esc(FILE *f, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i, k;

	for (i = 0; i < n; i++) {
		unsigned char ch = u[i];

		if (ch == '"' || ch == '\\') {
			putc_unlocked('\\', f);
			putc_unlocked(ch, f);
		} else if (ch < 0x20 || ch == 0x7f) {
			fputs("\\u00", f);
			putc_unlocked(hex[ch >> 4], f);
			putc_unlocked(hex[ch & 15], f);
		} else if (ch < 0x80) {
			putc_unlocked(ch, f);
		} else if ((k = utf8_len(u + i, n - i)) != 0) {
			fwrite(u + i, 1, k, f);
			i += k - 1;
		} else {
			fputs("\\\\x", f);
			putc_unlocked(hex[ch >> 4], f);
			putc_unlocked(hex[ch & 15], f);
		}
	}
}

/* ,"name":"value" for the NUL-terminated s, or ,"name":null. */
static void put_field(FILE *f, const char *name, const char *s)
{
	fprintf(f, ",\"%s\":", name);
	if (!s) {
		fputs("null", f);
		return;
	}
	putc_unlocked('"', f);
	put_esc(f, s, strlen(s));
	putc_unlocked('"', f);
}

void http__log_access(struct http_server *s, struct conn_req *r, size_t body, uint64_t ns)
{
	FILE *f = s->lim.access_log;
	const struct http_req *q = &r->pub;
	char when[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	flockfile(f);
	fprintf(f, "{\"time\":\"%s\"", when);
	put_field(f, "remote", r->conn->peer[0] ? r->conn->peer : NULL);
	put_field(f, "method", q->method_name);
	fputs(",\"path\":\"", f);
	put_esc(f, q->path, q->path_len);
	if (q->query) {
		putc_unlocked('?', f);
		put_esc(f, q->query, q->query_len);
	}
	fprintf(f, "\",\"protocol\":\"HTTP/1.%d\",\"status\":%d,\"bytes\":%zu,"
		"\"duration_ms\":%.3f", r->http_minor, r->resp.status, body, (double)ns / 1e6);
	put_field(f, "user_agent", q->header[HTTP_H_USER_AGENT]);
	put_field(f, "referer", q->header[HTTP_H_REFERER]);
	fputs("}\n", f);
	funlockfile(f);
}

int http_server_reopen_log(struct http_server *s)
{
	if (!s->lim.access_log || !s->lim.access_log_path)
		return 0;
	return files_reopen_append(s->lim.access_log, s->lim.access_log_path);
}
