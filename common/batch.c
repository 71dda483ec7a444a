/*
 * batch.c - the canonical record of one edit batch (see batch.h).
 */
#include "batch.h"

#include <string.h>

#include "edit.h"
#include "err.h"
#include "le.h"
#include "revert.h"

#include <xxhash.h>

_Static_assert(BATCH_EDIT == EDIT_WIRE_SIZE, "batch edit size");
_Static_assert(BATCH_MAX >= 2 + 255 + 20 + EDIT_BATCH_MAX * EDIT_WIRE_SIZE + 10 +
	       REVERT_AUTHOR_MAX + BATCH_KEY, "batch max");

#define F_KEY    1
#define F_REVERT 2

/* The version batch_encode() writes: 3 with an author, 2 with a time or
 * a key, else 1. */
static int version(const struct batch *b)
{
	return b->author_len || b->revert ? 3 : b->time_ms || b->key ? 2 : 1;
}

static size_t body_size(const struct batch *b)
{
	return b->revert ? REVERT_WIRE : (size_t)b->count * BATCH_EDIT;
}

size_t batch_size(const struct batch *b)
{
	size_t n = 2 + b->gen_len + 20 + body_size(b), key = b->key ? BATCH_KEY : 0;

	switch (version(b)) {
	case 1: return n;
	case 2: return n + 9 + key;
	default: return n + 10 + b->author_len + key;
	}
}

/* The version-3 tail after the header: time, flags, author, key, body. */
static void encode_v3(const struct batch *b, uint8_t *out)
{
	le_put64(out, b->time_ms);
	out[8] = (uint8_t)((b->key ? F_KEY : 0) | (b->revert ? F_REVERT : 0));
	out[9] = (uint8_t)b->author_len;
	memcpy(out + 10, b->author, b->author_len);
	out += 10 + b->author_len;
	if (b->key) {
		memcpy(out, b->key, BATCH_KEY);
		out += BATCH_KEY;
	}
	memcpy(out, b->revert ? b->revert : b->edits, body_size(b));
}

int batch_encode(const struct batch *b, uint8_t *out, size_t cap, size_t *len)
{
	size_t n, e;

	if (!b || !out || !len || !b->gen || b->gen_len == 0 || b->gen_len > 255 ||
	    b->count == 0 || b->count > EDIT_BATCH_MAX || (!b->edits && !b->revert) ||
	    (b->revert && (b->count != 1 || !b->author_len)) ||
	    (b->author_len && !revert_author_ok(b->author, b->author_len)))
		return ERR_INVAL;
	if ((n = batch_size(b)) > cap)
		return ERR_TOOBIG;
	out[0] = (uint8_t)version(b);
	out[1] = (uint8_t)b->gen_len;
	memcpy(out + 2, b->gen, b->gen_len);
	out += 2 + b->gen_len;
	le_put64(out, b->seed);
	le_put64(out + 8, b->first_seq);
	le_put32(out + 16, b->count);
	if (version(b) == 3) {
		encode_v3(b, out + 20);
		*len = n;
		return 0;
	}
	e = (size_t)b->count * BATCH_EDIT;
	memcpy(out + 20, b->edits, e);
	if (version(b) == 2) {
		le_put64(out + 20 + e, b->time_ms);
		out[28 + e] = b->key ? 1 : 0;
		if (b->key)
			memcpy(out + 29 + e, b->key, BATCH_KEY);
	}
	*len = n;
	return 0;
}

/* The version-3 tail (n bytes at q) into b. */
static int decode_v3(const uint8_t *q, size_t n, struct batch *b)
{
	uint8_t flags;
	size_t body;

	if (n < 10 || (q[8] & ~(F_KEY | F_REVERT)) || n < 10 + (size_t)q[9])
		return ERR_CORRUPT;
	b->time_ms = le_get64(q);
	flags = q[8];
	b->author_len = q[9];
	b->author = (const char *)q + 10;
	if (!revert_author_ok(b->author, b->author_len))
		return ERR_CORRUPT;
	n -= 10 + b->author_len;
	q += 10 + b->author_len;
	if (flags & F_KEY) {
		if (n < BATCH_KEY)
			return ERR_CORRUPT;
		b->key = q;
		q += BATCH_KEY;
		n -= BATCH_KEY;
	}
	if (flags & F_REVERT) {
		b->revert = q;
		b->edits = NULL;
		body = REVERT_WIRE;
		if (b->count != 1)
			return ERR_CORRUPT;
	} else {
		b->edits = q;
		body = (size_t)b->count * BATCH_EDIT;
	}
	return n == body ? 0 : ERR_CORRUPT;
}

int batch_decode(const uint8_t *p, size_t len, struct batch *b)
{
	const uint8_t *q, *end = p + len;
	size_t e;

	if (!p || !b || len < 2)
		return ERR_CORRUPT;
	if (p[0] < 1 || p[0] > 3)
		return ERR_VERSION;
	if (p[1] == 0 || len < 2 + (size_t)p[1] + 20)
		return ERR_CORRUPT;
	b->gen = (const char *)p + 2;
	b->gen_len = p[1];
	q = p + 2 + b->gen_len;
	b->seed = le_get64(q);
	b->first_seq = le_get64(q + 8);
	b->count = le_get32(q + 16);
	b->edits = q + 20;
	b->time_ms = 0;
	b->key = NULL;
	b->author = NULL;
	b->author_len = 0;
	b->revert = NULL;
	if (b->count == 0 || b->count > EDIT_BATCH_MAX)
		return ERR_CORRUPT;
	if (p[0] == 3)
		return decode_v3(q + 20, (size_t)(end - q) - 20, b);
	e = (size_t)b->count * BATCH_EDIT;
	if (p[0] == 1)
		return (size_t)(end - q) == 20 + e ? 0 : ERR_CORRUPT;
	if ((size_t)(end - q) < 29 + e || q[28 + e] > 1 ||
	    (size_t)(end - q) != 29 + e + (q[28 + e] ? BATCH_KEY : 0))
		return ERR_CORRUPT;
	b->time_ms = le_get64(q + 20 + e);
	b->key = q[28 + e] ? q + 29 + e : NULL;
	return 0;
}

uint64_t batch_link(uint64_t prev, uint64_t seq, uint64_t time_ms, const char *author,
		    size_t author_len, int revert, const uint8_t *body)
{
	uint8_t buf[26 + REVERT_AUTHOR_MAX + REVERT_WIRE];
	size_t n, len = revert ? REVERT_WIRE : BATCH_EDIT;

	le_put64(buf, (int64_t)prev);
	le_put64(buf + 8, (int64_t)seq);
	le_put64(buf + 16, (int64_t)time_ms);
	buf[24] = (uint8_t)author_len;
	memcpy(buf + 25, author, author_len);
	n = 25 + author_len;
	buf[n++] = revert ? 1 : 0;
	memcpy(buf + n, body, len);
	return XXH3_64bits(buf, n + len);
}

uint64_t batch_hash(uint64_t prev, const struct batch *b)
{
	uint32_t k;

	if (b->revert)
		return batch_link(prev, b->first_seq, b->time_ms, b->author, b->author_len, 1,
				  b->revert);
	for (k = 0; k < b->count; k++)
		prev = batch_link(prev, b->first_seq + k, b->time_ms, b->author, b->author_len, 0,
				  b->edits + (size_t)k * BATCH_EDIT);
	return prev;
}
