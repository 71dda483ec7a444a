/*
 * batch.c - the canonical record of one edit batch (see batch.h).
 */
#include "batch.h"

#include <string.h>

#include "edit.h"
#include "err.h"
#include "le.h"

_Static_assert(BATCH_EDIT == EDIT_WIRE_SIZE, "batch edit size");
_Static_assert(BATCH_MAX >= 2 + 255 + 20 + EDIT_BATCH_MAX * EDIT_WIRE_SIZE, "batch max");

size_t batch_size(const struct batch *b)
{
	return 2 + b->gen_len + 20 + (size_t)b->count * BATCH_EDIT;
}

int batch_encode(const struct batch *b, uint8_t *out, size_t cap, size_t *len)
{
	size_t n;

	if (!b || !out || !len || !b->gen || b->gen_len == 0 || b->gen_len > 255 ||
	    b->count == 0 || b->count > EDIT_BATCH_MAX || !b->edits)
		return ERR_INVAL;
	if ((n = batch_size(b)) > cap)
		return ERR_TOOBIG;
	out[0] = BATCH_VERSION;
	out[1] = (uint8_t)b->gen_len;
	memcpy(out + 2, b->gen, b->gen_len);
	out += 2 + b->gen_len;
	le_put64(out, b->seed);
	le_put64(out + 8, b->first_seq);
	le_put32(out + 16, b->count);
	memcpy(out + 20, b->edits, (size_t)b->count * BATCH_EDIT);
	*len = n;
	return 0;
}

int batch_decode(const uint8_t *p, size_t len, struct batch *b)
{
	const uint8_t *q;

	if (!p || !b || len < 2)
		return ERR_CORRUPT;
	if (p[0] != BATCH_VERSION)
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
	if (b->count == 0 || b->count > EDIT_BATCH_MAX || len != batch_size(b))
		return ERR_CORRUPT;
	return 0;
}
