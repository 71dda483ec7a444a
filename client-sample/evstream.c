/*
 * evstream.c - incremental text/event-stream parser (evstream.h).
 */
#include "evstream.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

void evstream_init(struct evstream *p)
{
	memset(p, 0, sizeof(*p));
	p->retry_ms = -1;
}

void evstream_reset(struct evstream *p)
{
	p->len = 0;
	p->dlen = 0;
	p->type[0] = 0;
	p->cr = 0;
	p->started = 0;
}

void evstream_free(struct evstream *p)
{
	free(p->line);
	free(p->data);
	p->line = p->data = NULL;
	p->len = p->cap = p->dlen = p->dcap = 0;
}

/* Make room for `more` bytes after *len in *buf (capacity *cap), up to max
 * bytes in all. Returns 0, ERR_TOOBIG or ERR_NOMEM. */
static int reserve(char **buf, size_t *cap, size_t len, size_t more, size_t max)
{
	size_t want, c;
	char *nb;

	if (more > max || len > max - more)
		return ERR_TOOBIG;
	want = len + more;
	if (want <= *cap)
		return 0;
	for (c = *cap ? *cap : 256; c < want; c *= 2)
		;
	if (!(nb = realloc(*buf, c)))
		return ERR_NOMEM;
	*buf = nb;
	*cap = c;
	return 0;
}

static int field_is(const char *name, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(name, want, n) == 0;
}

static int dispatch(struct evstream *p, evstream_cb cb, void *arg)
{
	int rc;

	if (!p->dlen) {
		p->type[0] = 0;
		return 0;
	}
	p->data[--p->dlen] = 0; /* the last data line's '\n' */
	p->events++;
	rc = cb(arg, p->type[0] ? p->type : "message", p->last_id, p->data,
		p->dlen);
	p->dlen = 0;
	p->type[0] = 0;
	return rc;
}

static int process_line(struct evstream *p, evstream_cb cb, void *arg)
{
	const char *l = p->line, *colon, *v;
	size_t n = p->len, nlen, vlen;
	int rc;

	if (!p->started) {
		p->started = 1;
		if (n >= 3 && memcmp(l, "\xEF\xBB\xBF", 3) == 0) {
			l += 3;
			n -= 3;
		}
	}
	if (n == 0)
		return dispatch(p, cb, arg);
	if (l[0] == ':') {
		p->comments++;
		return 0;
	}
	colon = memchr(l, ':', n);
	nlen = colon ? (size_t)(colon - l) : n;
	v = colon ? colon + 1 : l + n;
	vlen = n - (size_t)(v - l);
	if (vlen && *v == ' ') {
		v++;
		vlen--;
	}
	if (field_is(l, nlen, "event")) {
		if (vlen > EVSTREAM_TYPE_MAX)
			return ERR_TOOBIG;
		memcpy(p->type, v, vlen);
		p->type[vlen] = 0;
	} else if (field_is(l, nlen, "data")) {
		/* room for the line, its '\n' and the final NUL */
		if ((rc = reserve(&p->data, &p->dcap, p->dlen, vlen + 2,
				  EVSTREAM_MAX_DATA)) != 0)
			return rc;
		memcpy(p->data + p->dlen, v, vlen);
		p->dlen += vlen;
		p->data[p->dlen++] = '\n';
	} else if (field_is(l, nlen, "id")) {
		if (memchr(v, 0, vlen))
			return 0; /* the standard ignores such an ID */
		if (vlen > EVSTREAM_ID_MAX)
			return ERR_TOOBIG;
		memcpy(p->last_id, v, vlen);
		p->last_id[vlen] = 0;
	} else if (field_is(l, nlen, "retry")) {
		long ms = 0;
		size_t k;

		for (k = 0; k < vlen && v[k] >= '0' && v[k] <= '9'; k++)
			ms = ms < 100000000 ? ms * 10 + (v[k] - '0') : ms;
		if (k == vlen && vlen)
			p->retry_ms = ms;
	}
	return 0;
}

int evstream_feed(struct evstream *p, const char *buf, size_t n,
		  evstream_cb cb, void *arg)
{
	while (n) {
		size_t k = 0;
		int rc;

		if (p->cr) {
			p->cr = 0;
			if (*buf == '\n') {
				buf++;
				n--;
				continue;
			}
		}
		while (k < n && buf[k] != '\r' && buf[k] != '\n')
			k++;
		if ((rc = reserve(&p->line, &p->cap, p->len, k,
				  EVSTREAM_MAX_LINE)) != 0)
			return rc;
		if (k)
			memcpy(p->line + p->len, buf, k);
		p->len += k;
		if (k == n)
			break;
		p->cr = buf[k] == '\r';
		buf += k + 1;
		n -= k + 1;
		rc = process_line(p, cb, arg);
		p->len = 0;
		if (rc)
			return rc;
	}
	return 0;
}
