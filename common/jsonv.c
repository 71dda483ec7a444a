/*
 * jsonv.c - strict JSON validation (see jsonv.h): a recursive descent
 * over RFC 8259's grammar that builds nothing, with the depth bounded by
 * JSONV_MAX_DEPTH so that no input can exhaust the stack.
 */
#include "jsonv.h"

#include <stdint.h>
#include <string.h>

#include "err.h"

struct scan {
	const unsigned char *p;
	size_t len, pos;
	const char *why;
};

static int bad(struct scan *s, const char *why)
{
	s->why = why;
	return ERR_PARSE;
}

static int more(const struct scan *s)
{
	return s->pos < s->len;
}

static unsigned char peek(const struct scan *s)
{
	return more(s) ? s->p[s->pos] : 0;
}

/* RFC 8259 white space only: not every byte below 0x21, as cJSON has it. */
static void skip_ws(struct scan *s)
{
	while (more(s) && (peek(s) == ' ' || peek(s) == '\t' || peek(s) == '\n' ||
			   peek(s) == '\r'))
		s->pos++;
}

size_t jsonv_utf8_char(const unsigned char *s, size_t n)
{
	/* the first byte's range gives the length and the second byte's range */
	static const struct {
		unsigned char lo, hi, len, lo2, hi2;
	} form[] = {
		{ 0x00, 0x7f, 1, 0, 0 },
		{ 0xc2, 0xdf, 2, 0x80, 0xbf },
		{ 0xe0, 0xe0, 3, 0xa0, 0xbf },  /* no overlong forms */
		{ 0xe1, 0xec, 3, 0x80, 0xbf },
		{ 0xed, 0xed, 3, 0x80, 0x9f },  /* no surrogates */
		{ 0xee, 0xef, 3, 0x80, 0xbf },
		{ 0xf0, 0xf0, 4, 0x90, 0xbf },  /* no overlong forms */
		{ 0xf1, 0xf3, 4, 0x80, 0xbf },
		{ 0xf4, 0xf4, 4, 0x80, 0x8f },  /* nothing above U+10FFFF */
	};
	size_t i, k;

	if (n == 0)
		return 0;
	for (i = 0; i < sizeof(form) / sizeof(form[0]); i++) {
		if (s[0] < form[i].lo || s[0] > form[i].hi)
			continue;
		if (form[i].len == 1)
			return 1;
		if (n < form[i].len || s[1] < form[i].lo2 || s[1] > form[i].hi2)
			return 0;
		for (k = 2; k < form[i].len; k++)
			if ((s[k] & 0xc0) != 0x80)
				return 0;
		return form[i].len;
	}
	return 0;
}

static int hex4(struct scan *s, unsigned *out)
{
	unsigned v = 0;
	int i;

	for (i = 0; i < 4; i++, s->pos++) {
		unsigned char c = peek(s);
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

		if (!more(s) || d < 0)
			return bad(s, "\\u must be followed by four hex digits");
		v = v * 16 + (unsigned)d;
	}
	*out = v;
	return 0;
}

/* After the backslash: one of the RFC's escapes; surrogates in pairs. */
static int escape(struct scan *s)
{
	static const char simple[] = "\"\\/bfnrt";
	unsigned u, lo;
	unsigned char c = peek(s);

	if (!more(s))
		return bad(s, "unterminated string");
	if (c != 'u') {
		if (!c || !strchr(simple, c))
			return bad(s, "unknown escape in a string");
		s->pos++;
		return 0;
	}
	s->pos++;
	if (hex4(s, &u))
		return ERR_PARSE;
	if (u >= 0xdc00 && u <= 0xdfff) {
		s->pos -= 6;
		return bad(s, "unpaired low surrogate escape in a string");
	}
	if (u < 0xd800 || u > 0xdbff)
		return 0;
	if (s->len - s->pos < 6 || s->p[s->pos] != '\\' || s->p[s->pos + 1] != 'u') {
		s->pos -= 6;
		return bad(s, "unpaired high surrogate escape in a string");
	}
	s->pos += 2;
	if (hex4(s, &lo))
		return ERR_PARSE;
	if (lo < 0xdc00 || lo > 0xdfff) {
		s->pos -= 6;
		return bad(s, "high surrogate escape not followed by a low one");
	}
	return 0;
}

/* At the opening quote. */
static int string(struct scan *s)
{
	s->pos++;
	for (;;) {
		unsigned char c = peek(s);
		size_t n;

		if (!more(s))
			return bad(s, "unterminated string");
		if (c == '"') {
			s->pos++;
			return 0;
		}
		if (c < 0x20)
			return bad(s, "control character in a string (escape it)");
		if (c == '\\') {
			s->pos++;
			if (escape(s))
				return ERR_PARSE;
			continue;
		}
		if (!(n = jsonv_utf8_char(s->p + s->pos, s->len - s->pos)))
			return bad(s, "invalid UTF-8 in a string");
		s->pos += n;
	}
}

static size_t digits(struct scan *s)
{
	size_t start = s->pos;

	while (more(s) && peek(s) >= '0' && peek(s) <= '9')
		s->pos++;
	return s->pos - start;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int number(struct scan *s)
{
	if (peek(s) == '-')
		s->pos++;
	if (peek(s) == '0') {
		s->pos++;
		if (more(s) && peek(s) >= '0' && peek(s) <= '9')
			return bad(s, "number with a leading zero");
	} else if (!digits(s)) {
		return bad(s, "number without digits");
	}
	if (peek(s) == '.') {
		s->pos++;
		if (!digits(s))
			return bad(s, "number without digits after the decimal point");
	}
	if (peek(s) == 'e' || peek(s) == 'E') {
		s->pos++;
		if (peek(s) == '+' || peek(s) == '-')
			s->pos++;
		if (!digits(s))
			return bad(s, "number without digits in its exponent");
	}
	return 0;
}

static int literal(struct scan *s, const char *word)
{
	size_t n = strlen(word);

	if (s->len - s->pos < n || memcmp(s->p + s->pos, word, n))
		return bad(s, "unexpected byte");
	s->pos += n;
	return 0;
}

static int value(struct scan *s, int depth);

/* At '[' or '{': members (key: value for an object) between commas. */
static int container(struct scan *s, int depth)
{
	unsigned char close = peek(s) == '[' ? ']' : '}';

	if (depth >= JSONV_MAX_DEPTH)
		return bad(s, "arrays and objects nested too deep");
	s->pos++;
	skip_ws(s);
	if (peek(s) == close && more(s)) {
		s->pos++;
		return 0;
	}
	for (;;) {
		skip_ws(s);
		if (close == '}') {
			if (peek(s) != '"' || !more(s))
				return bad(s, more(s) ? "object key must be a string" :
					   "unexpected end of the body");
			if (string(s))
				return ERR_PARSE;
			skip_ws(s);
			if (peek(s) != ':' || !more(s))
				return bad(s, "':' expected after an object key");
			s->pos++;
		}
		if (value(s, depth + 1))
			return ERR_PARSE;
		skip_ws(s);
		if (!more(s))
			return bad(s, "unexpected end of the body");
		if (peek(s) == close) {
			s->pos++;
			return 0;
		}
		if (peek(s) != ',')
			return bad(s, close == '}' ? "',' or '}' expected" : "',' or ']' expected");
		s->pos++;
	}
}

static int value(struct scan *s, int depth)
{
	unsigned char c;

	skip_ws(s);
	if (!more(s))
		return bad(s, "unexpected end of the body");
	c = peek(s);
	if (c == '{' || c == '[')
		return container(s, depth);
	if (c == '"')
		return string(s);
	if (c == '-' || (c >= '0' && c <= '9'))
		return number(s);
	if (c == 't')
		return literal(s, "true");
	if (c == 'f')
		return literal(s, "false");
	if (c == 'n')
		return literal(s, "null");
	return bad(s, "unexpected byte");
}

int jsonv_check(const char *buf, size_t len, size_t *at, const char **why)
{
	struct scan s = { (const unsigned char *)buf, len, 0, NULL };
	int rc;

	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		rc = bad(&s, "a UTF-8 byte order mark (EF BB BF) before the JSON text; "
			 "send the JSON without it");
	else if (!(rc = value(&s, 0))) {
		skip_ws(&s);
		if (more(&s))
			rc = bad(&s, "bytes after the JSON value (one value, then only white space)");
	}
	*at = s.pos;
	*why = rc ? s.why : NULL;
	return rc;
}
