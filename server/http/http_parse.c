/*
 * http_parse.c - HTTP/1.1 requests: the llhttp callbacks, the limits they
 * enforce (target, header and body sizes, header count, pipeline depth),
 * the request structs with their text buffers and arena, handing each
 * complete request to the handler, and protocol errors (see http.h and
 * http_int.h). Reading the socket is http.c's, answering http_write.c's.
 *
 * A request joins its connection's queue when its first byte is parsed,
 * goes to the handler when complete, and leaves when its response has been
 * written (http_write.c frees it). The bytes a request keeps (its target,
 * the headers of HTTP_HEADER_MAP, its body) are copied out of the shared
 * read buffer into a request struct taken from a server-wide stack of freed
 * ones, so that the next request reuses the struct still in cache from the
 * last.
 */
#include "http_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"

static const struct {
	const char *name;
	size_t len;
} header_names[HTTP_H_COUNT] = {
#define XX(id, name) { name, sizeof(name) - 1 },
	HTTP_HEADER_MAP(XX)
#undef XX
};

/* Headers that only a proxy adds: a request carrying one did not come
 * straight from its client, whatever its peer address (edits.c). */
static const struct {
	const char *name;
	size_t len;
} proxy_names[] = {
#define P(name) { name, sizeof(name) - 1 }
	P("forwarded"), P("x-forwarded-for"), P("x-forwarded-host"),
	P("x-forwarded-proto"), P("x-forwarded-port"), P("x-forwarded-server"),
	P("x-real-ip"), P("via"), P("true-client-ip"), P("cf-connecting-ip"),
	P("x-client-ip"), P("x-cluster-client-ip"), P("fastly-client-ip"),
	P("x-original-forwarded-for"), P("x-request-start"),
#undef P
};

/* ---- small buffers ---------------------------------------------------- */

/* Room for n more bytes in t. */
static int text_reserve(struct text *t, size_t n)
{
	size_t cap = t->cap ? t->cap : 256;
	char *p;

	if (t->len + n <= t->cap)
		return 0;
	while (cap < t->len + n)
		cap *= 2;
	p = t->heap ? realloc(t->p, cap) : malloc(cap);
	if (!p)
		return ERR_NOMEM;
	if (!t->heap && t->len)
		memcpy(p, t->p, t->len);
	t->p = p;
	t->cap = cap;
	t->heap = 1;
	return 0;
}

static int text_add(struct text *t, const char *s, size_t n)
{
	if (text_reserve(t, n) < 0)
		return ERR_NOMEM;
	memcpy(t->p + t->len, s, n);
	t->len += n;
	return 0;
}

/* Append a copy of t's own bytes [off, off + n). */
static int text_dup(struct text *t, size_t off, size_t n)
{
	if (text_reserve(t, n) < 0)
		return ERR_NOMEM;
	memcpy(t->p + t->len, t->p + off, n);
	t->len += n;
	return 0;
}

void *http_req_alloc(struct http_req *pub, size_t n)
{
	struct conn_req *r = container_of(pub, struct conn_req, pub);
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (n > r->arena_left) {
		size_t cap = n > 4096 ? n : 4096;
		struct chunk *ch = malloc(sizeof(*ch) + cap);

		if (!ch)
			return NULL;
		ch->next = r->chunks;
		r->chunks = ch;
		r->arena = (char *)ch->data;
		r->arena_left = cap;
	}
	p = r->arena;
	r->arena += n;
	r->arena_left -= n;
	return p;
}

size_t *http_req_held(struct http_req *pub)
{
	return &container_of(pub, struct conn_req, pub)->conn->held;
}

uint64_t http_req_age_ms(const struct http_req *pub)
{
	const struct conn_req *r = container_of(pub, const struct conn_req, pub);

	return uv_now(r->conn->srv->loop) - r->start;
}

/* ---- requests ---------------------------------------------------------- */

/* A request struct is some 3 KiB, past malloc's per-thread cache. The
 * server keeps the ones freed last on a stack and hands out the top one,
 * still in cache from the request just answered (on any connection). */
static struct conn_req *req_new(struct conn *c)
{
	struct http_server *s = c->srv;
	struct conn_req *r = NULL;

	if (!list_empty(&s->free_reqs)) {
		r = http__req_of(list_first(&s->free_reqs));
		list_remove(&r->node);
		s->nfree_reqs--;
	} else if (!(r = malloc(sizeof(*r)))) {
		return NULL;
	}
	memset(r, 0, offsetof(struct conn_req, text_inline));
	r->text.p = r->text_inline;
	r->text.cap = sizeof(r->text_inline);
	r->arena = r->arena_inline;
	r->arena_left = sizeof(r->arena_inline);
	r->conn = c;
	r->start = uv_now(c->srv->loop);
	r->start_ns = uv_hrtime();
	r->pub.method = -1;
	r->pub.method_name = "-";
	r->pub.path = "";
	list_insert_tail(&c->reqs, &r->node);
	c->nreqs++;
	return r;
}

void http__req_free(struct conn_req *r)
{
	struct conn *c = r->conn;
	struct http_server *s = c->srv;
	struct chunk *ch, *next;

	if ((r->state == R_READY || r->state == R_WRITING) && r->resp.release)
		r->resp.release(r->resp.arg);
	list_remove(&r->node);
	if (c->cur == r)
		c->cur = NULL;
	c->nreqs--;
	for (ch = r->chunks; ch; ch = next) {
		next = ch->next;
		free(ch);
	}
	if (r->text.heap)
		free(r->text.p);
	free(r->body.p);
	if (s->nfree_reqs < REQ_POOL) {
		list_insert_head(&s->free_reqs, &r->node);
		s->nfree_reqs++;
	} else {
		free(r);
	}
}

/* Point the public fields into the finished text buffer. */
static void req_publish(struct conn_req *r)
{
	char *url, *q;
	size_t i;

	if (r->method_done) {
		r->pub.method = llhttp_get_method(&r->conn->parser);
		r->pub.method_name = llhttp_method_name(r->pub.method);
	}
	r->http_minor = llhttp_get_http_minor(&r->conn->parser);
	if (r->url_done) {
		/* absolute-form: the path after the authority ("/" when none) */
		url = r->text.p + r->auth_end;
		q = strchr(url, '?');
		if (q) {
			*q = '\0';
			r->pub.query = q + 1;
			r->pub.query_len = strlen(q + 1);
		}
		r->pub.path = *url ? url : "/";
		r->pub.path_len = strlen(r->pub.path);
	}
	for (i = 0; i < HTTP_H_COUNT; i++)
		r->pub.header[i] = r->hset[i] ? r->text.p + r->hoff[i] : NULL;
	r->pub.body = r->body.len ? r->body.p : NULL;
	r->pub.body_len = r->body.len;
}

/* ---- protocol errors ---------------------------------------------------- */

void http__conn_error(struct conn *c, int status, const char *detail)
{
	struct http_server *s = c->srv;
	struct conn_req *r = c->cur;

	if (!c->rejected)
		s->st.protocol_errors++;
	c->stopped = 1;
	c->linger = 1;
	c->in_req = 0;
	c->fresh = 0;
	http__conn_stop_reading(c);
	if (!r && !(r = req_new(c))) {
		http__conn_close(c);
		return;
	}
	c->cur = NULL;
	req_publish(r);
	r->keepalive = 0;
	r->state = R_HANDLING;
	s->h.error(s->h.ctx, &r->pub, status, detail);
}

/* Record a limit or resource failure from a parser callback. */
static int fail(struct conn *c, int status, const char *detail)
{
	c->err_status = status;
	c->err_detail = detail;
	return HPE_USER;
}

/* ---- llhttp callbacks --------------------------------------------------- */

static int on_message_begin(llhttp_t *p)
{
	struct conn *c = p->data;

	c->cur = req_new(c);
	if (!c->cur)
		return fail(c, 503, "out of memory");
	c->fresh = 0;
	c->in_req = 1;
	c->header_bytes = 0;
	c->nheaders = 0;
	c->field_len = 0;
	c->field_id = -1;
	c->chunk_ext = 0;
	return 0;
}

static int on_method_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	c->cur->method_done = 1;
	return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct conn_req *r = c->cur;

	if (r->url_len + n > c->srv->lim.max_url)
		return fail(c, 414, "request target too long");
	if (text_add(&r->text, at, n) < 0)
		return fail(c, 503, "out of memory");
	r->url_len += n;
	return 0;
}

static int on_url_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	if (text_add(&c->cur->text, "", 1) < 0)
		return fail(c, 503, "out of memory");
	c->cur->url_done = 1;
	return 0;
}

static int count_header_bytes(struct conn *c, size_t n)
{
	c->header_bytes += n;
	return c->header_bytes > c->srv->lim.max_header_bytes;
}

/* RFC 9110 section 5.6.2: tchar, the bytes of a field name. */
static const unsigned char tchar[256] = {
	['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1,
	['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1,
	['~'] = 1,
	['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,
	['7'] = 1, ['8'] = 1, ['9'] = 1,
	['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1,
	['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1,
	['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,
	['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
	['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1,
	['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
	['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,
	['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/*
 * A field name is a token (RFC 9112 section 5): llhttp 8 lets a space
 * through ("Content Length: 5"), and a proxy that reads such a line
 * otherwise than this server is the start of request smuggling, so any
 * byte outside tchar is a 400 here.
 */
static int on_header_field(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	size_t i;

	if (count_header_bytes(c, n))
		return fail(c, 431, "request headers too large");
	for (i = 0; i < n; i++)
		if (!tchar[(unsigned char)at[i]])
			return fail(c, 400, "header field name is not a token (RFC 9112"
				    " section 5: no spaces or separators in a name)");
	if (c->field_len + n <= FIELD_MAX)
		memcpy(c->field + c->field_len, at, n);
	c->field_len += n;
	return 0;
}

static const char *proxy_sign(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(proxy_names); i++)
		if (proxy_names[i].len == len && !strncasecmp(proxy_names[i].name, name, len))
			return proxy_names[i].name;
	return NULL;
}

static int find_header(const char *name, size_t len)
{
	int i;

	for (i = 0; i < HTTP_H_COUNT; i++)
		if (header_names[i].len == len &&
		    !strncasecmp(header_names[i].name, name, len))
			return i;
	return -1;
}

/* Start a kept header's value; a repeat copies the earlier value first so
 * that the joined value is contiguous. */
static int on_header_field_complete(llhttp_t *p)
{
	struct conn *c = p->data;
	struct conn_req *r = c->cur;
	int id;

	if (++c->nheaders > c->srv->lim.max_headers)
		return fail(c, 431, "too many request headers");
	id = c->field_len <= FIELD_MAX ? find_header(c->field, c->field_len) : -1;
	if (!r->pub.proxy && c->field_len <= FIELD_MAX)
		r->pub.proxy = proxy_sign(c->field, c->field_len);
	if (id == HTTP_H_HOST && r->hset[id])
		return fail(c, 400, "more than one Host header (RFC 9112 section 3.2)");
	if (id >= HTTP_H_USER_AGENT && !c->srv->lim.access_log)
		id = -1; /* only the access log reads these */
	c->field_len = 0;
	c->field_id = id;
	if (id < 0)
		return 0;
	if (r->hset[id]) {
		size_t off = r->text.len, len = r->hlen[id];

		if (text_dup(&r->text, r->hoff[id], len) < 0 ||
		    text_add(&r->text, ", ", 2) < 0)
			return fail(c, 503, "out of memory");
		r->hoff[id] = off;
		r->hlen[id] = len + 2;
		r->hset[id] = 0; /* published again once its value is complete */
	} else {
		r->hoff[id] = r->text.len;
		r->hlen[id] = 0;
	}
	return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct conn_req *r = c->cur;

	if (count_header_bytes(c, n))
		return fail(c, 431, "request headers too large");
	if (c->field_id < 0)
		return 0;
	if (text_add(&r->text, at, n) < 0)
		return fail(c, 503, "out of memory");
	r->hlen[c->field_id] += n;
	return 0;
}

static int on_header_value_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	if (c->field_id < 0)
		return 0;
	if (text_add(&c->cur->text, "", 1) < 0)
		return fail(c, 503, "out of memory");
	c->cur->hset[c->field_id] = 1;
	c->field_id = -1;
	return 0;
}

/*
 * Whether s[0..n) is a Host value (RFC 9110 section 7.2: uri-host, then an
 * optional ":" port): an IP literal in brackets or reg-name characters
 * (RFC 3986: unreserved, percent escapes, sub-delims), then digits.
 * Empty is allowed (a target without an authority).
 */
static int host_valid(const char *s, size_t n)
{
	static const char reg[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789-._~%!$&'()*+,;=";
	size_t i = 0;

	if (n && s[0] == '[') {
		for (i = 1; i < n && s[i] != ']'; i++)
			if (!strchr("0123456789abcdefABCDEF:.vV", s[i]) || !s[i])
				return 0;
		if (i == n || i == 1)
			return 0;
		i++;
	} else {
		while (i < n && s[i] && strchr(reg, s[i]))
			i++;
	}
	if (i < n && s[i] == ':')
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
	return i == n;
}

/*
 * RFC 9112 section 3.2: an HTTP/1.1 request has exactly one Host, and a
 * valid one; an absolute-form target's authority is the host, whatever
 * Host says (3.2.2), so it takes Host's place. r->auth_end marks where the
 * path begins.
 */
static int check_host(struct conn *c, struct conn_req *r, const llhttp_t *p)
{
	const char *url = r->text.p, *a;
	size_t n, off;

	if (r->url_done && (!strncasecmp(url, "http://", 7) ||
			    !strncasecmp(url, "https://", 8))) {
		a = strstr(url, "://") + 3;
		n = strcspn(a, "/?#");
		if (!n || memchr(a, '@', n) || !host_valid(a, n))
			return fail(c, 400, n ? "absolute-form target: bad authority" :
				    "absolute-form target without a host");
		r->auth_end = (size_t)(a - url) + n;
		off = r->text.len;
		if (text_dup(&r->text, (size_t)(a - url), n) < 0 || text_add(&r->text, "", 1) < 0)
			return fail(c, 503, "out of memory");
		r->hoff[HTTP_H_HOST] = off;
		r->hlen[HTTP_H_HOST] = n;
		r->hset[HTTP_H_HOST] = 1;
		return 0;
	}
	if (!r->hset[HTTP_H_HOST])
		return p->http_major == 1 && p->http_minor == 0 ? 0 :
		       fail(c, 400, "HTTP/1.1 request without a Host header (RFC 9112 section 3.2)");
	if (!host_valid(r->text.p + r->hoff[HTTP_H_HOST], r->hlen[HTTP_H_HOST]))
		return fail(c, 400, "bad Host header");
	return 0;
}

/*
 * Expect (RFC 9110 section 10.1.1): "100-continue" is the one expectation
 * there is. A request that will be refused whatever its body (too large)
 * has had its final status by now; any other gets "100 Continue" at once,
 * when a body is still to come and nothing is before it on the
 * connection (an interim answer must not overtake a final one). Any other
 * expectation: 417.
 */
static int check_expect(struct conn *c, struct conn_req *r, const llhttp_t *p)
{
	const char *v = r->hset[HTTP_H_EXPECT] ? r->text.p + r->hoff[HTTP_H_EXPECT] : NULL;

	if (!v)
		return 0;
	if (strcasecmp(v, "100-continue") != 0)
		return fail(c, 417, "unsupported Expect (only 100-continue)");
	if (p->http_minor >= 1 && list_first(&c->reqs) == &r->node &&
	    ((p->flags & F_CHUNKED) || ((p->flags & F_CONTENT_LENGTH) && p->content_length)) &&
	    http__conn_continue(c) < 0)
		return fail(c, -1, NULL); /* the kernel's buffer is full: close */
	return 0;
}

static int on_headers_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	if (p->http_major != 1) { /* llhttp takes "HTTP/2.0" as text */
		fail(c, 505, "HTTP version not supported: this server speaks HTTP/1.1");
		return -1;
	}
	if (check_host(c, c->cur, p))
		return -1;
	if ((p->flags & F_CONTENT_LENGTH) &&
	    p->content_length > c->srv->lim.max_body) {
		fail(c, 413, "request body too large");
		return -1;
	}
	if (check_expect(c, c->cur, p))
		return -1;
	return 0;
}

/*
 * Chunk extensions (RFC 9112 section 7.1.1) are read and dropped, at most
 * CHUNK_EXT_MAX bytes of them per chunk line: past it, 400.
 */
static int on_chunk_ext(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;

	(void)at;
	c->chunk_ext += n;
	if (c->chunk_ext > CHUNK_EXT_MAX)
		return fail(c, 400, "chunk extension too long");
	return 0;
}

/* llhttp 8.1.0 consumes the ';' that ends an unquoted extension value
 * ("3;a=b;c=d" then fails as a bad chunk size): pause here, so that
 * parse_some() can give the ';' back (see unpause_ext()). */
static int on_chunk_ext_value_complete(llhttp_t *p)
{
	struct conn *c = p->data;

	c->ext_paused = 1;
	return HPE_PAUSED;
}

static int on_chunk_header(llhttp_t *p)
{
	struct conn *c = p->data;

	c->chunk_ext = 0; /* the next chunk line starts afresh */
	return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n)
{
	struct conn *c = p->data;
	struct conn_req *r = c->cur;

	if (r->body.len + n > c->srv->lim.max_body)
		return fail(c, 413, "request body too large");
	if (text_add(&r->body, at, n) < 0)
		return fail(c, 503, "out of memory");
	return 0;
}

/* Pause after each request, so that http__conn_parse() can hand it over and
 * respect the pipeline limit. */
static int on_message_complete(llhttp_t *p)
{
	struct conn *c = p->data;
	struct conn_req *r = c->cur;

	r->keepalive = llhttp_should_keep_alive(p) && !llhttp_get_upgrade(p) &&
		       !c->srv->draining;
	req_publish(r);
	c->in_req = 0;
	return HPE_PAUSED;
}

/* ---- parsing -------------------------------------------------------------- */

/* Hand the request just completed to the handler. */
static void dispatch(struct conn *c)
{
	struct http_server *s = c->srv;
	struct conn_req *r = c->cur;

	c->cur = NULL;
	if (!r->keepalive)
		c->stopped = 1;
	r->pub.reserve = c->reserve;
	r->state = R_HANDLING;
	s->h.request(s->h.ctx, &r->pub);
}

/*
 * After an extension value's pause at data + done: when llhttp consumed the
 * ';' after it, the parser stands where a ';' or the line's end must come,
 * so that ';' is fed again. Returns 1 when that failed (answered).
 */
static int unpause_ext(struct conn *c, const char *data, size_t done)
{
	llhttp_errno_t e;

	c->ext_paused = 0;
	if (!done || data[done - 1] != ';')
		return 0;
	e = llhttp_execute(&c->parser, ";", 1);
	if (e == HPE_OK)
		return 0;
	http__conn_error(c, c->err_status ? c->err_status : 400,
			 c->err_status ? c->err_detail : "malformed chunk extension");
	return 1;
}

/* Parse up to len bytes; returns how many were used. Stops early when the
 * pipeline is full (the caller keeps the rest) or parsing ends. */
static size_t parse_some(struct conn *c, const char *data, size_t len)
{
	size_t done = 0;

	while (done < len && !c->stopped && !c->closing) {
		llhttp_errno_t e;

		if (c->nreqs >= c->srv->lim.max_pipeline && !c->in_req)
			break;
		e = llhttp_execute(&c->parser, data + done, len - done);
		if (e == HPE_OK)
			return len;
		if (e == HPE_PAUSED) {
			done = (size_t)(llhttp_get_error_pos(&c->parser) - data);
			llhttp_resume(&c->parser);
			if (c->ext_paused) {
				if (unpause_ext(c, data, done))
					return len;
				continue;
			}
			dispatch(c);
			continue;
		}
		if (c->err_status < 0)
			http__conn_close(c); /* no answer can follow a cut interim one */
		else if (c->err_status)
			http__conn_error(c, c->err_status, c->err_detail);
		else if (e == HPE_PAUSED_H2_UPGRADE)
			http__conn_error(c, 400, "http/2 is not supported");
		else
			http__conn_error(c, 400, "malformed request");
		return len;
	}
	if (c->stopped && done < len)
		c->linger = 1; /* input after the last request is dropped */
	return c->stopped || c->closing ? len : done;
}

size_t http__conn_parse(struct conn *c, const char *data, size_t len)
{
	size_t n;

	c->parsing = 1; /* answers given meanwhile must not re-enter */
	n = parse_some(c, data, len);
	c->parsing = 0;
	return n;
}

/* ---- the parser's table ----------------------------------------------------- */

void http__parser_settings(llhttp_settings_t *st)
{
	llhttp_settings_init(st);
	st->on_message_begin = on_message_begin;
	st->on_method_complete = on_method_complete;
	st->on_url = on_url;
	st->on_url_complete = on_url_complete;
	st->on_header_field = on_header_field;
	st->on_header_field_complete = on_header_field_complete;
	st->on_header_value = on_header_value;
	st->on_header_value_complete = on_header_value_complete;
	st->on_headers_complete = on_headers_complete;
	st->on_body = on_body;
	st->on_chunk_header = on_chunk_header;
	st->on_chunk_extension_name = on_chunk_ext;
	st->on_chunk_extension_value = on_chunk_ext;
	st->on_chunk_extension_value_complete = on_chunk_ext_value_complete;
	st->on_message_complete = on_message_complete;
}
