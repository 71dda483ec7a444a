/*
 * view_local.c - a player's view in local mode (view.h, p.local): GET
 * /hashes says which chunks have edits; a chunk that no edit reaches is
 * generated here with the library (terrain.h), the others are fetched.
 * view.c keeps the window and verifies every tile, made or fetched.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "err.h"
#include "hclient.h"
#include "terrain.h"
#include "view_int.h"

#define HASHES_SIDE 64 /* chunks per side of one GET /hashes (its limit) */
#define LOCAL_LIFE_MS 60000 /* local mode: /hashes kept without --revalidate */

/* ---- local mode: generate what no edit reaches, fetch the rest ---- */

static int cmp_chunk(const void *a, const void *b)
{
	const struct api_chunk_hash *x = a, *y = b;

	if (x->cz != y->cz)
		return x->cz < y->cz ? -1 : 1;
	return (x->cx > y->cx) - (x->cx < y->cx);
}

/* Chunk (cx, cz)'s edit version as the last /hashes said (0: no edits). */
uint64_t view__local_version(const struct view *v, int64_t cx, int64_t cz)
{
	struct api_chunk_hash key, *hit;

	if (cx < INT32_MIN || cx > INT32_MAX || cz < INT32_MIN || cz > INT32_MAX ||
	    !v->nedited)
		return 0;
	key.cx = (int32_t)cx;
	key.cz = (int32_t)cz;
	hit = bsearch(&key, v->edited, v->nedited, sizeof(key), cmp_chunk);
	return hit ? hit->version : 0;
}

/* The version a tile of e reads: its own, or with materials (which read
 * one sample beyond the chunk) the largest of the 3 x 3 around it. */
static uint64_t local_reads(const struct view *v, const struct entry *e)
{
	uint64_t r = 0, x;

	if (!v->p.materials)
		return view__local_version(v, e->cx, e->cz);
	for (int dz = -1; dz <= 1; dz++)
		for (int dx = -1; dx <= 1; dx++)
			if ((x = view__local_version(v, (int64_t)e->cx + dx, (int64_t)e->cz + dz)) > r)
				r = x;
	return r;
}

/* Make e's tile here (no edit reaches it) and take it as if it came. */
static int local_make(struct view *v, struct entry *e)
{
	struct terrain_tile_request rq = { sizeof(rq), e->want, e->cx, e->cz,
					   view_precision_um(&v->p, e->want),
					   v->p.materials ? TERRAIN_LAYER_MATERIAL : 0,
					   (uint32_t)v->p.format, 0 };  /* ?format= numbers */
	size_t need = terrain_tile_bound(v->p.local, &rq), len;
	int rc;

	if (need > v->gen_cap) {
		uint8_t *b = realloc(v->gen, need);

		if (!b)
			return ERR_NOMEM;
		v->gen = b;
		v->gen_cap = need;
	}
	rc = terrain_generate_encoded(v->p.local, NULL, v->work, &rq, v->gen, v->gen_cap, &len);
	if (rc) {
		view__report(v, "chunk %d/%" PRId32 "/%" PRId32 " (lod/cx/cz): local generation: %s",
			     e->want, e->cx, e->cz, terrain_strerror(rc));
		return 0;
	}
	v->st.generated++;
	view__accept_tile(v, e->cx, e->cz, e->want, v->gen, len, NULL, 0);
	return 0;
}

/* What e needs now that the versions are known: nothing, its tile made
 * here, or its tile fetched (an edited chunk). Returns requests sent. */
static long local_want(struct view *v, struct entry *e)
{
	uint64_t reads = local_reads(v, e);

	if (e->lod == e->want && e->reads == reads)
		return 0;
	if (e->inflight == e->want && e->reads == reads)
		return 0;
	e->reads = reads;
	if (!reads)
		return local_make(v, e);
	return view__single(v, e, 0);
}

static long local_pass(struct view *v)
{
	long sent = 0, rc;

	for (size_t k = 0; k < v->nlist; k++) {
		struct entry *e = view__find(v, v->list[k].cx, v->list[k].cz);

		if (e && (rc = local_want(v, e)) < 0)
			return rc;
		else if (e)
			sent += rc;
	}
	return sent;
}

/* The square's chunks and one more on each side, clamped to int32. */
static struct ring_rect local_rect(const struct view *v)
{
	struct ring_rect r = { INT32_MAX, INT32_MAX, INT32_MIN, INT32_MIN };

	for (size_t k = 0; k < v->nlist; k++) {
		const struct ring_chunk *c = &v->list[k];

		r.cx0 = c->cx < r.cx0 ? c->cx : r.cx0;
		r.cz0 = c->cz < r.cz0 ? c->cz : r.cz0;
		r.cx1 = c->cx > r.cx1 ? c->cx : r.cx1;
		r.cz1 = c->cz > r.cz1 ? c->cz : r.cz1;
	}
	r.cx0 -= r.cx0 > INT32_MIN;
	r.cz0 -= r.cz0 > INT32_MIN;
	r.cx1 += r.cx1 < INT32_MAX;
	r.cz1 += r.cz1 < INT32_MAX;
	return r;
}

static int inside(const struct ring_rect *a, const struct ring_rect *b)
{
	return a->cx0 >= b->cx0 && a->cz0 >= b->cz0 && a->cx1 <= b->cx1 && a->cz1 <= b->cz1;
}

static void on_hashes(void *arg, struct hclient_resp *r);

/* GET /hashes of v->asking, in pieces of at most 64 x 64 chunks. */
static long local_ask(struct view *v)
{
	const struct ring_rect *a = &v->asking;
	long sent = 0;

	v->nedited = 0;
	for (int64_t z = a->cz0; z <= a->cz1; z += HASHES_SIDE)
		for (int64_t x = a->cx0; x <= a->cx1; x += HASHES_SIDE) {
			struct vreq *q = malloc(sizeof(*q));
			int64_t x1 = x + HASHES_SIDE - 1 < a->cx1 ? x + HASHES_SIDE - 1 : a->cx1;
			int64_t z1 = z + HASHES_SIDE - 1 < a->cz1 ? z + HASHES_SIDE - 1 : a->cz1;
			char target[512];

			if (!q)
				return ERR_NOMEM;
			*q = (struct vreq){ v, (int32_t)x, (int32_t)z, (int32_t)x1, (int32_t)z1,
					    0, 0, 0 };
			if (api_hashes_path(target, sizeof(target), v->p.seed, v->p.gen, q->cx0,
					    q->cz0, q->cx1, q->cz1)) {
				free(q);
				return ERR_INVAL;
			}
			if (hclient_get(v->hc, target, NULL, on_hashes, q)) {
				view__report(v, "request %s: cannot send it", target);
				free(q);
				continue;
			}
			v->outstanding++;
			v->st.requests++;
			v->hashes_waiting++;
			sent++;
		}
	return sent;
}

/* Add one /hashes answer's chunks to v->edited. */
static int local_add(struct view *v, const struct api_chunk_hash *c, size_t n)
{
	if (v->nedited + n > v->edited_cap) {
		size_t cap = 2 * (v->nedited + n);
		struct api_chunk_hash *e = realloc(v->edited, cap * sizeof(*e));

		if (!e)
			return ERR_NOMEM;
		v->edited = e;
		v->edited_cap = cap;
	}
	memcpy(v->edited + v->nedited, c, n * sizeof(*c));
	v->nedited += n;
	return 0;
}

static void on_hashes(void *arg, struct hclient_resp *r)
{
	struct vreq *q = arg;
	struct view *v = q->v;
	struct api_chunk_hash *c = NULL;
	char what[160];
	uint64_t seq;
	size_t n;

	snprintf(what, sizeof(what), "hashes %" PRId32 ",%" PRId32 "..%" PRId32 ",%" PRId32,
		 q->cx0, q->cz0, q->cx1, q->cz1);
	v->hashes_waiting--;
	if (view__answered(v, q, r, what)) {
		if (api_hashes_parse((const char *)r->body, r->body_len, &c, &n, &seq) ||
		    local_add(v, c, n))
			view__report(v, "%s: not the hashes answer expected", what);
		else
			v->st.hashes++;
		free(c);
	}
	free(q);
	if (v->hashes_waiting)
		return;
	qsort(v->edited, v->nedited, sizeof(*v->edited), cmp_chunk);
	v->known = v->asking;
	v->have_known = 1;
	v->known_until = v->now + (uint64_t)(v->p.revalidate_ms >= 0 ? v->p.revalidate_ms :
					     LOCAL_LIFE_MS);
	local_pass(v);
}

/* view_update() in local mode, after claim(): ask /hashes when the square
 * left what the last answer covers or it is older than its lifetime, else
 * settle every chunk at once. */
long view__local_update(struct view *v)
{
	struct ring_rect need = local_rect(v);

	if (v->hashes_waiting)
		return 0;  /* its answer settles the chunks */
	if (!v->have_known || !inside(&need, &v->known) || v->now >= v->known_until) {
		v->asking = need;
		return local_ask(v);
	}
	return local_pass(v);
}

