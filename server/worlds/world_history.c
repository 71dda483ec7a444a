/*
 * world_history.c - a world as it was at an earlier sequence number, for
 * snapshots that keep the last --history of edits one by one (see
 * world.h, snapshots.h).
 *
 * A snapshot cut at seq S folds only the edits up to H, the last batch the
 * log took more than --history before its newest one; the batches after H
 * go into the snapshot as records and are replayed when it is restored.
 * A revert never reaches below H (revert.h), so which edits up to H count
 * is settled at the cut: the chunks' states at H take the edits up to H
 * that count now.
 */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "err.h"
#include "revert.h"
#include "world.h"
#include "world_int.h"

uint64_t world_cut(const struct world *w, uint64_t history_ms)
{
	uint64_t newest;

	if (!history_ms || !w->nbatches)
		return w->seq;
	newest = w->batches[w->nbatches - 1].time_ms;
	/* the batches are contiguous: the one before the first within the
	 * window ends right before it (at the base when there is none) */
	return newest < history_ms ? w->base : world_reach(w, newest - history_ms) - 1;
}

void world_mark_snapshot(struct world *w)
{
	size_t i;

	w->snap = w->seq;
	for (i = 0; i < w->nchunks; i++) {
		struct chunk *c = &w->chunks[i];

		if (c->later > c->version && c->later <= w->seq)
			c->version = c->later;
		c->later = 0;
	}
}

uint64_t world_snapshot(const struct world *w)
{
	return w->snap > w->base ? w->snap : w->base;
}

uint64_t world_hash_at(const struct world *w, uint64_t seq)
{
	size_t i;

	if (seq <= w->base)
		return w->base_hash;
	i = world_batch_of(w, seq);
	return i < w->nbatches ? w->batches[i].hash : w->hash;
}

int world_chunk_upto(const struct world *w, int32_t cx, int32_t cz, uint64_t upto,
		     struct world_chunk *st, struct edit **edits, size_t *n)
{
	const struct chunk *c = world__chunk((struct world *)w, cx, cz);
	uint64_t h;
	uint32_t nd;
	size_t k = 0, cnt = 0, seen = 0;

	*edits = NULL;
	*n = 0;
	if (!c)
		return 0;
	for (nd = c->head; nd != NONE && w->base + w->nodes[nd].edit + 1 <= upto;
	     nd = w->nodes[nd].next) {
		seen++;
		cnt += !w->out[w->nodes[nd].edit];
	}
	if (c->version > upto && !c->folded && !seen)
		return 0; /* it came to be after upto */
	if (cnt && !(*edits = malloc(cnt * sizeof(**edits))))
		return ERR_NOMEM;
	h = c->base_hash;
	for (nd = c->head; nd != NONE && w->base + w->nodes[nd].edit + 1 <= upto;
	     nd = w->nodes[nd].next) {
		uint32_t idx = w->nodes[nd].edit;

		if (w->out[idx])
			continue;
		h = edit_hash_next(h, w->base + idx + 1, &w->edits[idx]);
		(*edits)[k++] = w->edits[idx];
	}
	*n = k;
	/* a version above upto stays: a restore gives it back after the
	 * records after upto (world_restore_chunk(), world_mark_snapshot()) */
	*st = (struct world_chunk){ c->version, h, c->folded + k };
	return 1;
}

int world_record(const struct world *w, size_t i, const char *gen, uint8_t *out, size_t cap,
		 size_t *len)
{
	const struct applied *a = &w->batches[i];
	const struct wauthor *au = a->author ? &w->authors[a->author - 1] : NULL;
	uint8_t wire[EDIT_BATCH_MAX * EDIT_WIRE_SIZE], rw[REVERT_WIRE];
	uint64_t s;
	struct batch b = { .gen = gen, .gen_len = strlen(gen), .seed = w->seed,
			   .first_seq = a->first, .count = (uint32_t)(a->last - a->first + 1),
			   .time_ms = a->time_ms, .author = au ? au->name : NULL,
			   .author_len = au ? au->len : 0 };

	if (a->revert) {
		revert_encode(&w->reverts[a->revert - 1].r, rw);
		b.revert = rw;
	} else {
		for (s = a->first; s <= a->last; s++)
			edit_encode(&w->edits[s - w->base - 1], wire + (s - a->first) * EDIT_WIRE_SIZE);
		b.edits = wire;
	}
	return batch_encode(&b, out, cap, len);
}
