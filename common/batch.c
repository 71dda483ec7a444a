/*
 * batch.c - the canonical record of one edit batch (see batch.h).
 */
#include "batch.h"

#include <string.h>

#include "edit.h"
#include "err.h"
#include "le.h"

_Static_assert(BATCH_EDIT == EDIT_WIRE_SIZE, "batch edit size");
_Static_assert(BATCH_MAX >= 2 + 255 + 20 + EDIT_BATCH_MAX * EDIT_WIRE_SIZE + 9 + BATCH_KEY,
	       "batch max");

/* Version 1 carries neither a time nor a key. */
static int is_v1(const struct batch *b)
{
	return !b->time_ms && !b->key;
}

size_t batch_size(const struct batch *b)
{
	size_t n = 2 + b->gen_len + 20 + (size_t)b->count * BATCH_EDIT;

	return is_v1(b) ? n : n + 9 + (b->key ? BATCH_KEY : 0);
}

int batch_encode(const struct batch *b, uint8_t *out, size_t cap, size_t *len)
{
	size_t n, e;

	if (!b || !out || !len || !b->gen || b->gen_len == 0 || b->gen_len > 255 ||
	    b->count == 0 || b->count > EDIT_BATCH_MAX || !b->edits)
		return ERR_INVAL;
	if ((n = batch_size(b)) > cap)
		return ERR_TOOBIG;
	out[0] = is_v1(b) ? 1 : BATCH_VERSION;
	out[1] = (uint8_t)b->gen_len;
	memcpy(out + 2, b->gen, b->gen_len);
	out += 2 + b->gen_len;
	le_put64(out, b->seed);
	le_put64(out + 8, b->first_seq);
	le_put32(out + 16, b->count);
	e = (size_t)b->count * BATCH_EDIT;
	memcpy(out + 20, b->edits, e);
	if (!is_v1(b)) {
		le_put64(out + 20 + e, b->time_ms);
		out[28 + e] = b->key ? 1 : 0;
		if (b->key)
			memcpy(out + 29 + e, b->key, BATCH_KEY);
	}
	*len = n;
	return 0;
}

int batch_decode(const uint8_t *p, size_t len, struct batch *b)
{
	const uint8_t *q, *end = p + len;
	size_t e;

	if (!p || !b || len < 2)
		return ERR_CORRUPT;
	if (p[0] != 1 && p[0] != 2)
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
	if (b->count == 0 || b->count > EDIT_BATCH_MAX)
		return ERR_CORRUPT;
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
