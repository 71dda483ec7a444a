/*
 * world.c - edit logs, the chunk edit table, hash chains and batch records
 * of the worlds in memory (see world.h).
 *
 * A world keeps flat arrays that only grow: the edits, the batches, the
 * (cx, cz) pairs each batch touched, the chunks, and one node per (chunk,
 * edit) touch that links a chunk's edits in sequence order. An open-
 * addressing table (linear probing, at most half full) maps (cx, cz) to
 * its chunk. Reservations count what their batches will add, and
 * world_reserve() grows every array for it, so world_apply() of a
 * reserved batch only writes into memory it already has.
 */
#include "world.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "batch.h"
#include "catalog.h"
#include "edit.h"
#include "err.h"
#include "preset.h"
#include "revert.h"
#include "util.h"

#include "world_int.h"

/* ---- arrays and the chunk table ------------------------------------------ */

/* Grow the array *pv (element size, capacity *cap) to hold need elements. */
int world__grow(void *pv, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / size)
		return ERR_NOMEM;
	memcpy(&p, pv, sizeof(p));
	p = realloc(p, c * size);
	if (!p)
		return ERR_NOMEM;
	memcpy(pv, &p, sizeof(p));
	*cap = c;
	return 0;
}

static size_t chunk_slot_hash(int32_t cx, int32_t cz)
{
	uint32_t k[2] = { (uint32_t)cx, (uint32_t)cz };

	return (size_t)XXH3_64bits(k, sizeof(k));
}

/* The slot of chunk (cx, cz): *found says whether it holds it, else it is
 * the empty slot where it goes. The table must not be empty. */
static size_t chunk_slot(const struct world *w, int32_t cx, int32_t cz,
			 int *found)
{
	size_t mask = w->nslots - 1, i = chunk_slot_hash(cx, cz) & mask;

	for (;; i = (i + 1) & mask) {
		const struct chunk *c;

		if (!w->slots[i]) {
			*found = 0;
			return i;
		}
		c = &w->chunks[w->slots[i] - 1];
		if (c->cx == cx && c->cz == cz) {
			*found = 1;
			return i;
		}
	}
}

static const struct chunk *chunk_get(const struct world *w, int32_t cx,
				     int32_t cz)
{
	int found;
	size_t i;

	if (!w->nslots)
		return NULL;
	i = chunk_slot(w, cx, cz, &found);
	return found ? &w->chunks[w->slots[i] - 1] : NULL;
}

struct chunk *world__chunk(struct world *w, int32_t cx, int32_t cz)
{
	return (struct chunk *)chunk_get(w, cx, cz);
}

/* Rebuild the table with n slots. */
static int rehash(struct world *w, size_t n)
{
	uint32_t *old = w->slots;
	size_t k;

	w->slots = calloc(n, sizeof(*w->slots));
	if (!w->slots) {
		w->slots = old;
		return ERR_NOMEM;
	}
	free(old);
	w->nslots = n;
	for (k = 0; k < w->nchunks; k++) {
		int found;
		size_t i = chunk_slot(w, w->chunks[k].cx, w->chunks[k].cz, &found);

		w->slots[i] = (uint32_t)k + 1;
	}
	return 0;
}

/* Room for `edits` more edits, `touches` more touches and `batches` more
 * batches beyond what is applied and reserved. */
static int room(struct world *w, size_t edits, size_t touches, size_t batches)
{
	size_t ne = w->nedits + w->pend_edits + edits;
	size_t nt = w->pend_touches + touches;
	size_t nc = w->nchunks + nt, slots = w->nslots ? w->nslots : MIN_SLOTS;

	if (ne >= NONE || w->nnodes + nt >= NONE || nc >= NONE / 2)
		return ERR_NOMEM; /* indexes are 32-bit */
	while (slots < 2 * nc)
		slots *= 2;
	if (world__grow(&w->edits, &w->cap_edits, ne, sizeof(*w->edits)) ||
	    world__grow(&w->out, &w->cap_out, ne, sizeof(*w->out)) ||
	    world__grow(&w->nodes, &w->cap_nodes, w->nnodes + nt, sizeof(*w->nodes)) ||
	    world__grow(&w->bchunks, &w->cap_bchunks, 2 * (w->npairs + nt),
		 sizeof(*w->bchunks)) ||
	    world__grow(&w->batches, &w->cap_batches,
		 w->nbatches + w->pend_batches + batches, sizeof(*w->batches)) ||
	    world__grow(&w->chunks, &w->cap_chunks, nc, sizeof(*w->chunks)))
		return ERR_NOMEM;
	return slots != w->nslots ? rehash(w, slots) : 0;
}

/* ---- worlds ------------------------------------------------------------------ */

int world_create(uint64_t fingerprint, uint64_t seed, int chunk_log2,
		 struct world **out)
{
	struct world *w;

	if (!out || chunk_log2 < 1 || chunk_log2 > 30)
		return ERR_INVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return ERR_NOMEM;
	w->fingerprint = fingerprint;
	w->seed = seed;
	w->chunk_log2 = chunk_log2;
	w->hash = w->base_hash = edit_hash_start(fingerprint, seed);
	w->gen = -1;
	*out = w;
	return 0;
}

void world_destroy(struct world *w)
{
	if (!w)
		return;
	free(w->edits);
	free(w->out);
	free(w->batches);
	free(w->bchunks);
	free(w->chunks);
	free(w->nodes);
	free(w->slots);
	world__free_reverts(w);
	free(w);
}

uint64_t world_seed(const struct world *w)
{
	return w->seed;
}

uint64_t world_seq(const struct world *w)
{
	return w->seq;
}

uint64_t world_hash(const struct world *w)
{
	return w->hash;
}

void **world_user(struct world *w)
{
	return &w->user;
}

int world_gen(const struct world *w)
{
	return w->gen;
}

int world_empty(const struct world *w)
{
	return !w->seq && !w->base && w->reserved == 0 && !w->pend_batches && !w->nedits &&
	       !w->nbatches && !w->nchunks && !w->user;
}

/* Chunk touches of n edits, checked against the bounds. */
static int count_touches(const struct world *w, const struct edit *e, size_t n,
			 size_t *total, size_t *bad)
{
	size_t k, c, t = 0;

	for (k = 0; e && k < n; k++) { /* e NULL: a revert, no touches of its own */
		edit_chunks(&e[k], w->chunk_log2, NULL, NULL, 0, &c);
		if (c > WORLD_MAX_EDIT_CHUNKS) {
			*bad = k;
			return ERR_TOOBIG;
		}
		t += c;
	}
	if (t > WORLD_MAX_BATCH_CHUNKS) {
		*bad = n;
		return ERR_TOOBIG;
	}
	*total = t;
	return 0;
}

int world_check(const struct world *w, const struct edit *e, size_t n,
		size_t *bad)
{
	size_t total;

	return count_touches(w, e, n, &total, bad);
}

int world_reserve(struct world *w, const struct edit *e, size_t n,
		  uint64_t *first)
{
	size_t total, bad;
	int rc;

	if (!n || !first)
		return ERR_INVAL;
	if ((rc = count_touches(w, e, n, &total, &bad)) != 0 ||
	    (rc = room(w, n, total, 1)) != 0)
		return rc;
	w->pend_edits += n;
	w->pend_touches += total;
	w->pend_batches++;
	*first = w->reserved + 1;
	w->reserved += n;
	return 0;
}

void world_cancel(struct world *w, const struct edit *e, size_t n,
		  uint64_t first)
{
	size_t total = 0, bad;

	assert(n && first + n - 1 == w->reserved && first > w->seq);
	count_touches(w, e, n, &total, &bad);
	w->pend_edits -= n;
	w->pend_touches -= total;
	w->pend_batches--;
	w->reserved -= n;
}

void world_cancel_all(struct world *w)
{
	w->reserved = w->seq;
	w->pend_edits = w->pend_touches = w->pend_batches = 0;
}

void world_release(struct world *w, const struct edit *e, size_t n, uint64_t first)
{
	size_t total = 0, bad;

	if (!w->pend_batches) /* world_cancel_all() gave it back already */
		return;
	assert(n && w->pend_edits >= n);
	count_touches(w, e, n, &total, &bad);
	w->pend_edits -= n;
	w->pend_touches -= total;
	w->pend_batches--;
	if (first + n - 1 == w->reserved)
		w->reserved = first - 1 > w->seq ? first - 1 : w->seq;
}

/* Record that edit idx (sequence seq) of batch b touches (cx, cz). */
static void touch(struct world *w, struct applied *b, int32_t cx, int32_t cz,
		  uint32_t idx, uint64_t seq)
{
	uint32_t nd = (uint32_t)w->nnodes++;
	struct chunk *c;
	int found;
	size_t i = chunk_slot(w, cx, cz, &found);

	if (!found) {
		w->slots[i] = (uint32_t)++w->nchunks;
		w->chunks[w->nchunks - 1] = (struct chunk){ cx, cz, NONE, NONE, 0, 0, 0, 0, 0, 0 };
	}
	c = &w->chunks[w->slots[i] - 1];
	if (c->version < b->first) { /* first touch in this batch */
		w->bchunks[2 * w->npairs] = cx;
		w->bchunks[2 * w->npairs + 1] = cz;
		w->npairs++;
		b->n++;
	}
	w->nodes[nd] = (struct node){ idx, NONE };
	if (c->tail == NONE)
		c->head = nd;
	else
		w->nodes[c->tail].next = nd;
	c->tail = nd;
	c->nedits++;
	c->version = seq;
	c->hash = edit_hash_next(c->hash, seq, &w->edits[idx]);
}

/*
 * world_apply(); reserved: the batch has a reservation's room. m (may be
 * NULL) is the record when it says more than its edits: a version-3
 * record's time and author, chained with batch_hash(), or a revert (e
 * NULL, n 1, r its filter).
 */
int world__apply(struct world *w, uint64_t first, const struct edit *e, size_t n,
		 int reserved, struct world_batch *out, const struct batch *m,
		 const struct revert *r)
{
	int32_t xs[WORLD_MAX_EDIT_CHUNKS], zs[WORLD_MAX_EDIT_CHUNKS];
	size_t total, bad, k, j, nc;
	struct applied *b;
	int rc;

	if (!n || first != w->seq + 1 || (!e && !r))
		return ERR_INVAL;
	if ((rc = count_touches(w, e, n, &total, &bad)) != 0)
		return rc;
	if (reserved) { /* the room is there */
		w->pend_edits -= n;
		w->pend_touches -= total;
		w->pend_batches--;
	} else if ((rc = room(w, n, total, 1)) != 0) {
		return rc;
	}
	b = &w->batches[w->nbatches];
	*b = (struct applied){ first, first + n - 1, 0, w->npairs, 0, 0, 0, 0 };
	if (m && m->author_len) {
		b->time_ms = m->time_ms;
		b->author = world__author(w, m->author, m->author_len);
	}
	if (r) {
		w->edits[w->nedits] = (struct edit){ 0 };
		w->out[w->nedits++] = NONE; /* a revert's slot: never an edit */
		if ((rc = world__revert(w, b, r, first)) != 0)
			return rc;
	}
	for (k = 0; e && k < n; k++) {
		uint32_t idx = (uint32_t)w->nedits++;

		w->edits[idx] = e[k];
		w->out[idx] = 0;
		if (!(m && m->author_len))
			w->hash = edit_hash_next(w->hash, first + k, &e[k]);
		edit_chunks(&e[k], w->chunk_log2, xs, zs, WORLD_MAX_EDIT_CHUNKS, &nc);
		for (j = 0; j < nc; j++)
			touch(w, b, xs[j], zs[j], idx, first + k);
	}
	if (m && m->author_len)
		w->hash = batch_hash(w->hash, m);
	b->hash = w->hash;
	w->nbatches++;
	w->seq = b->last;
	if (w->reserved < w->seq)
		w->reserved = w->seq;
	if (out)
		world_batch(w, w->nbatches - 1, out);
	return 0;
}

int world_apply(struct world *w, uint64_t first, const struct edit *e,
		size_t n, struct world_batch *out)
{
	return world__apply(w, first, e, n, first + n - 1 <= w->reserved, out, NULL, NULL);
}

const struct edit *world_edit(const struct world *w, uint64_t seq)
{
	return seq > w->base && seq <= w->seq && w->out[seq - w->base - 1] != NONE ?
	       &w->edits[seq - w->base - 1] : NULL;
}

int world_edit_out(const struct world *w, uint64_t seq)
{
	return world_edit(w, seq) && w->out[seq - w->base - 1];
}

int world_reserve_revert(struct world *w, uint64_t *first)
{
	int rc;

	if (!first)
		return ERR_INVAL;
	if ((rc = room(w, 1, 0, 1)) != 0)
		return rc;
	w->pend_edits++;
	w->pend_batches++;
	*first = ++w->reserved;
	return 0;
}

size_t world_batch_of(const struct world *w, uint64_t seq)
{
	size_t i = seq ? world_batch_after(w, seq - 1) : w->nbatches;

	return i < w->nbatches && w->batches[i].first <= seq ? i : w->nbatches;
}

uint64_t world_floor(const struct world *w)
{
	return w->base + 1;
}

void world_chunk(const struct world *w, int32_t cx, int32_t cz,
		 struct world_chunk *out)
{
	const struct chunk *c = chunk_get(w, cx, cz);

	*out = c ? (struct world_chunk){ c->version, c->hash, c->nedits } :
		   (struct world_chunk){ 0, 0, 0 };
}

int world_chunk_edits(const struct world *w, int32_t cx, int32_t cz,
		      struct edit **out, size_t *n)
{
	const struct chunk *c = chunk_get(w, cx, cz);
	struct edit *v;
	uint32_t nd;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (!c || c->nedits == c->folded)
		return 0;
	v = malloc((c->nedits - c->folded) * sizeof(*v));
	if (!v)
		return ERR_NOMEM;
	for (nd = c->head; nd != NONE; nd = w->nodes[nd].next)
		if (!w->out[w->nodes[nd].edit])
			v[k++] = w->edits[w->nodes[nd].edit];
	assert(k == c->nedits - c->folded);
	*out = v;
	*n = k;
	return 0;
}

int world_chunk_edits_from(const struct world *w, int32_t cx, int32_t cz, uint64_t *pos,
			   struct edit **out, size_t *n)
{
	const struct chunk *c = chunk_get(w, cx, cz);
	uint32_t nd, first;
	size_t k = 0, cnt = 0;
	struct edit *v;

	*out = NULL;
	*n = 0;
	if (!c || c->head == NONE)
		return 0;
	first = *pos ? w->nodes[*pos - 1].next : c->head;
	for (nd = first; nd != NONE; nd = w->nodes[nd].next)
		cnt += !w->out[w->nodes[nd].edit];
	*pos = (uint64_t)c->tail + 1;
	if (!cnt)
		return 0;
	if (!(v = malloc(cnt * sizeof(*v))))
		return ERR_NOMEM;
	for (nd = first; nd != NONE; nd = w->nodes[nd].next)
		if (!w->out[w->nodes[nd].edit])
			v[k++] = w->edits[w->nodes[nd].edit];
	*out = v;
	*n = k;
	return 0;
}

/* The chunks of the 3 x 3 block around (cx, cz) that exist and have
 * edits, into c (9); returns their count. */
static size_t around(const struct world *w, int32_t cx, int32_t cz,
		     const struct chunk *c[9])
{
	size_t k = 0;
	int64_t x, z;

	for (z = (int64_t)cz - 1; z <= (int64_t)cz + 1; z++)
		for (x = (int64_t)cx - 1; x <= (int64_t)cx + 1; x++)
			if (x >= INT32_MIN && x <= INT32_MAX && z >= INT32_MIN &&
			    z <= INT32_MAX && (c[k] = chunk_get(w, (int32_t)x, (int32_t)z)))
				k++;
	return k;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int world_around_edits(const struct world *w, int32_t cx, int32_t cz,
		       struct edit **out, size_t *n)
{
	const struct chunk *c[9];
	size_t nc = around(w, cx, cz, c), total = 0, i, k = 0, m = 0;
	uint32_t *idx, nd;

	*out = NULL;
	*n = 0;
	for (i = 0; i < nc; i++)
		total += c[i]->nedits - c[i]->folded;
	if (!total)
		return 0;
	idx = malloc(total * sizeof(*idx));
	*out = malloc(total * sizeof(**out));
	if (!idx || !*out) {
		free(idx);
		free(*out);
		*out = NULL;
		return ERR_NOMEM;
	}
	for (i = 0; i < nc; i++)
		for (nd = c[i]->head; nd != NONE; nd = w->nodes[nd].next)
			if (!w->out[w->nodes[nd].edit])
				idx[k++] = w->nodes[nd].edit;
	total = k;
	qsort(idx, total, sizeof(*idx), cmp_u32);
	for (k = 0; k < total; k++)
		if (k == 0 || idx[k] != idx[k - 1])
			(*out)[m++] = w->edits[idx[k]];
	free(idx);
	*n = m;
	return 0;
}

uint64_t world_around_version(const struct world *w, int32_t cx, int32_t cz)
{
	const struct chunk *c[9];
	size_t nc = around(w, cx, cz, c), i;
	uint64_t v = 0;

	for (i = 0; i < nc; i++)
		if (c[i]->version > v)
			v = c[i]->version;
	return v;
}

/* Count chunk c (with edits) for world_rect_chunks(). */
static void rect_take(const struct chunk *c, uint64_t *version, int32_t *out, size_t cap,
		      size_t *n)
{
	if (!c || !c->nedits)
		return;
	if (c->version > *version)
		*version = c->version;
	if (out && *n < cap) {
		out[2 * *n] = c->cx;
		out[2 * *n + 1] = c->cz;
	}
	(*n)++;
}

size_t world_rect_chunks(const struct world *w, int32_t cx0, int32_t cz0, int32_t cx1,
			 int32_t cz1, uint64_t *version, int32_t *out, size_t cap)
{
	uint64_t area;
	size_t n = 0, i;
	int64_t x, z;

	*version = 0;
	if (!w || cx1 < cx0 || cz1 < cz0 || !w->nchunks)
		return 0;
	area = (uint64_t)((int64_t)cx1 - cx0 + 1) * (uint64_t)((int64_t)cz1 - cz0 + 1);
	if (area <= w->nchunks) {
		for (z = cz0; z <= cz1; z++)
			for (x = cx0; x <= cx1; x++)
				rect_take(chunk_get(w, (int32_t)x, (int32_t)z), version, out,
					  cap, &n);
		return n;
	}
	for (i = 0; i < w->nchunks; i++) {
		const struct chunk *c = &w->chunks[i];

		if (c->cx >= cx0 && c->cx <= cx1 && c->cz >= cz0 && c->cz <= cz1)
			rect_take(c, version, out, cap, &n);
	}
	return n;
}

size_t world_batches(const struct world *w)
{
	return w->nbatches;
}

void world_batch(const struct world *w, size_t i, struct world_batch *out)
{
	const struct applied *b = &w->batches[i];

	const struct wauthor *a = b->author ? &w->authors[b->author - 1] : NULL;
	const struct wrevert *r = b->revert ? &w->reverts[b->revert - 1] : NULL;

	assert(i < w->nbatches);
	*out = (struct world_batch){ b->first, b->last, b->hash,
				     w->bchunks + 2 * b->off, b->n, b->time_ms,
				     a ? a->name : "", a ? a->len : 0, r ? &r->r : NULL,
				     r ? r->count : 0, r ? r->undone : 0 };
}

size_t world_batch_after(const struct world *w, uint64_t seq)
{
	size_t lo = 0, hi = w->nbatches;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->batches[mid].last <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t world_chunks(const struct world *w)
{
	return w->nchunks;
}

void world_chunk_at(const struct world *w, size_t i, int32_t *cx, int32_t *cz,
		    struct world_chunk *out)
{
	const struct chunk *c = &w->chunks[i];

	assert(i < w->nchunks);
	*cx = c->cx;
	*cz = c->cz;
	*out = (struct world_chunk){ c->version, c->hash, c->nedits };
}

uint64_t world_base(const struct world *w)
{
	return w->base;
}

int world_restore(struct world *w, uint64_t seq, uint64_t hash)
{
	if (w->seq || w->reserved || w->nchunks)
		return ERR_INVAL;
	w->seq = w->reserved = w->base = seq;
	w->hash = w->base_hash = hash;
	return 0;
}

void world_rebase(struct world *w)
{
	struct world keep = *w;

	free(w->edits);
	free(w->out);
	free(w->batches);
	free(w->bchunks);
	free(w->chunks);
	free(w->nodes);
	free(w->slots);
	world__free_reverts(w);
	memset(w, 0, sizeof(*w));
	w->fingerprint = keep.fingerprint;
	w->seed = keep.seed;
	w->chunk_log2 = keep.chunk_log2;
	w->user = keep.user;
	w->gen = keep.gen;
	w->hash = w->base_hash = edit_hash_start(w->fingerprint, w->seed);
}

int world_restore_chunk(struct world *w, int32_t cx, int32_t cz,
			const struct world_chunk *st)
{
	size_t i;
	int found;

	if (w->nedits || st->nedits >= NONE || st->version == 0)
		return ERR_INVAL;
	if (room(w, 0, 1, 0))
		return ERR_NOMEM;
	i = chunk_slot(w, cx, cz, &found);
	if (found)
		return ERR_INVAL;
	w->slots[i] = (uint32_t)++w->nchunks;
	w->chunks[w->nchunks - 1] = (struct chunk){ cx, cz, NONE, NONE, (uint32_t)st->nedits,
						    (uint32_t)st->nedits,
						    st->version > w->seq ? w->seq : st->version,
						    st->hash, st->hash,
						    st->version > w->seq ? st->version : 0 };
	return 0;
}
