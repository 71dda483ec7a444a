/*
 * world_revert.c - who sent each batch, and reverts (see world.h, revert.h).
 *
 * Authors are interned per world: a batch keeps a 32-bit index into a
 * table of distinct names (open addressing on their hash), so a world of
 * a million batches by a thousand players keeps a thousand names.
 *
 * An edit counts while no revert takes it out: w->out[] counts the reverts
 * that do. A revert walks the batches from its floor to itself and counts
 * every edit its filter matches; an undo walks its revert's range again
 * and uncounts them. An edit that starts or stops counting makes its
 * chunks dirty; each dirty chunk's hash (the chain from its hash at the
 * snapshot over the edits that count) and edit count are computed again
 * from its list of touches, and its version becomes the revert's
 * sequence number, so its tiles are made afresh.
 */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "err.h"
#include "world.h"
#include "world_int.h"

static size_t author_slot(const struct world *w, const char *name, size_t len, int *found)
{
	size_t mask = w->naslots - 1, i = (size_t)XXH3_64bits(name, len) & mask;

	for (;; i = (i + 1) & mask) {
		const struct wauthor *a;

		if (!w->aslots[i]) {
			*found = 0;
			return i;
		}
		a = &w->authors[w->aslots[i] - 1];
		if (a->len == len && !memcmp(a->name, name, len)) {
			*found = 1;
			return i;
		}
	}
}

static int author_rehash(struct world *w, size_t n)
{
	uint32_t *s = calloc(n, sizeof(*s));
	size_t k;
	int found;

	if (!s)
		return ERR_NOMEM;
	free(w->aslots);
	w->aslots = s;
	w->naslots = n;
	for (k = 0; k < w->nauthors; k++)
		s[author_slot(w, w->authors[k].name, w->authors[k].len, &found)] = (uint32_t)k + 1;
	return 0;
}

uint32_t world__author(struct world *w, const char *name, size_t len)
{
	size_t i;
	int found;

	if (len > REVERT_AUTHOR_MAX)
		len = REVERT_AUTHOR_MAX;
	if (2 * (w->nauthors + 1) > w->naslots &&
	    author_rehash(w, w->naslots ? 2 * w->naslots : 16))
		return 0;
	i = author_slot(w, name, len, &found);
	if (found)
		return w->aslots[i];
	if (world__grow(&w->authors, &w->cap_authors, w->nauthors + 1, sizeof(*w->authors)))
		return 0;
	w->authors[w->nauthors].len = (uint8_t)len;
	memcpy(w->authors[w->nauthors].name, name, len);
	w->aslots[i] = (uint32_t)++w->nauthors;
	return w->aslots[i];
}

void world__free_reverts(struct world *w)
{
	free(w->authors);
	free(w->aslots);
	free(w->reverts);
}

/* Chunk (cx, cz) changes in revert batch b (sequence number seq). */
static int dirty(struct world *w, struct applied *b, int32_t cx, int32_t cz, uint64_t seq)
{
	struct chunk *c = world__chunk(w, cx, cz);

	if (!c || c->version >= seq)
		return 0; /* already this revert's */
	if (world__grow(&w->bchunks, &w->cap_bchunks, 2 * (w->npairs + 1), sizeof(*w->bchunks)))
		return ERR_NOMEM;
	c->version = seq;
	w->bchunks[2 * w->npairs] = cx;
	w->bchunks[2 * w->npairs + 1] = cz;
	w->npairs++;
	b->n++;
	return 0;
}

/* The hash and count of a chunk from its touches that count. */
static void recount(struct world *w, struct chunk *c)
{
	uint64_t h = c->base_hash;
	uint32_t n = c->folded, nd;

	for (nd = c->head; nd != NONE; nd = w->nodes[nd].next) {
		uint32_t idx = w->nodes[nd].edit;

		if (w->out[idx])
			continue;
		h = edit_hash_next(h, w->base + idx + 1, &w->edits[idx]);
		n++;
	}
	c->hash = h;
	c->nedits = n;
}

uint64_t world_reach(const struct world *w, uint64_t from_ms)
{
	size_t lo = 0, hi = w->nbatches;

	while (lo < hi) { /* the batches' times never go back */
		size_t mid = lo + (hi - lo) / 2;

		if (w->batches[mid].time_ms < from_ms)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->nbatches ? w->batches[lo].first : w->seq + 1;
}

/* Where a revert at time_ms with history span_ms reaches (0: no bound). */
static uint64_t reach(const struct world *w, uint64_t time_ms, uint64_t span_ms)
{
	return span_ms && time_ms >= span_ms ? world_reach(w, time_ms - span_ms) : 1;
}

/* Count (delta 1) or uncount (-1) the edits filter f at sequence number
 * self takes out, from lo on; *matched gets how many it matched. */
static int walk(struct world *w, struct applied *b, const struct revert *f, uint64_t self,
		uint64_t lo, int delta, uint64_t seq, uint64_t *matched)
{
	int32_t xs[WORLD_MAX_EDIT_CHUNKS], zs[WORLD_MAX_EDIT_CHUNKS];
	size_t i, j, nc;
	uint64_t s;

	*matched = 0;
	for (i = world_batch_after(w, lo - 1); i < w->nbatches && w->batches[i].first < self; i++) {
		const struct applied *a = &w->batches[i];
		const struct wauthor *au = a->author ? &w->authors[a->author - 1] : NULL;

		if (a->revert)
			continue;
		for (s = a->first > lo ? a->first : lo; s <= a->last && s < self; s++) {
			uint32_t idx = (uint32_t)(s - w->base - 1);
			int was;

			if (!revert_matches(f, self, s, &w->edits[idx], au ? au->name : "",
					    au ? au->len : 0, a->time_ms))
				continue;
			++*matched;
			was = w->out[idx] != 0;
			w->out[idx] = (uint32_t)((int64_t)w->out[idx] + delta);
			if (was == (w->out[idx] != 0))
				continue;
			edit_chunks(&w->edits[idx], w->chunk_log2, xs, zs, WORLD_MAX_EDIT_CHUNKS, &nc);
			for (j = 0; j < nc; j++)
				if (dirty(w, b, xs[j], zs[j], seq))
					return ERR_NOMEM;
		}
	}
	return 0;
}

int world__revert(struct world *w, struct applied *b, const struct revert *r, uint64_t seq)
{
	struct wrevert *target = NULL;
	uint64_t matched = 0, lo = reach(w, b->time_ms, r->history_ms);
	size_t i;
	int rc;

	if (lo <= w->base)
		lo = w->base + 1;
	if (lo < r->floor)
		lo = r->floor;
	if (world__grow(&w->reverts, &w->cap_reverts, w->nreverts + 1, sizeof(*w->reverts)))
		return ERR_NOMEM;
	if (r->op == REVERT_UNDO) {
		i = world_batch_of(w, r->undo);
		if (i < w->nbatches && w->batches[i].revert &&
		    !w->reverts[w->batches[i].revert - 1].undone &&
		    w->reverts[w->batches[i].revert - 1].r.op == REVERT_REVERT)
			target = &w->reverts[w->batches[i].revert - 1];
		/* else nothing to undo here: the node that took it checked; a
		 * revert below this world's snapshot is folded into it */
		if (target && lo < target->r.floor)
			lo = target->r.floor;
		rc = target ? walk(w, b, &target->r, target->seq, lo, -1, seq, &matched) : 0;
		if (target)
			target->undone = 1;
	} else {
		rc = walk(w, b, r, seq, lo, 1, seq, &matched);
	}
	for (i = 0; i < b->n; i++) {
		const int32_t *p = w->bchunks + 2 * (b->off + i);

		recount(w, world__chunk(w, p[0], p[1]));
	}
	w->reverts[w->nreverts] = (struct wrevert){ *r, seq, matched, 0 };
	b->revert = (uint32_t)++w->nreverts;
	return rc;
}

/* Whether edit e covers the point (x_mm, z_mm): closer than its radius. */
static int covers(const struct edit *e, int64_t x_mm, int64_t z_mm)
{
	double dx = (double)x_mm - (double)e->x_mm, dz = (double)z_mm - (double)e->z_mm;
	double r = (double)e->radius_mm;

	return dx * dx + dz * dz < r * r;
}

size_t world_point_edits(const struct world *w, int64_t x_mm, int64_t z_mm, uint64_t before,
			 uint64_t *seqs, size_t cap)
{
	int64_t side = INT64_C(1000) << w->chunk_log2;
	int64_t cx = x_mm >= 0 ? x_mm / side : -((-x_mm - 1) / side) - 1;
	int64_t cz = z_mm >= 0 ? z_mm / side : -((-z_mm - 1) / side) - 1;
	const struct chunk *c = cx < INT32_MIN || cx > INT32_MAX || cz < INT32_MIN ||
				cz > INT32_MAX ? NULL :
				world__chunk((struct world *)w, (int32_t)cx, (int32_t)cz);
	size_t total = 0, n = 0, k;
	uint32_t nd;
	int pass;

	for (pass = 0; pass < 2; pass++) /* count, then keep the newest cap */
		for (nd = c ? c->head : NONE; nd != NONE; nd = w->nodes[nd].next) {
			uint64_t seq = w->base + w->nodes[nd].edit + 1;

			if (seq >= before || !covers(&w->edits[w->nodes[nd].edit], x_mm, z_mm))
				continue;
			if (!pass)
				total++;
			else if (total-- <= cap)
				seqs[n++] = seq;
		}
	for (k = 0; k < n / 2; k++) { /* newest first */
		uint64_t t = seqs[k];

		seqs[k] = seqs[n - 1 - k];
		seqs[n - 1 - k] = t;
	}
	return n;
}
