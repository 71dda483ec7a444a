/*
 * world_map.c - the map of worlds by (preset index, seed), and the follow
 * path that applies the edit log's records to them (see world.h).
 */
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
#include "world.h"
#include "world_int.h"

/* ---- the map of worlds -------------------------------------------------------- */

struct map_entry {
	int gen;
	uint64_t seed;
	struct world *w;
};

struct world_map {
	const struct catalog *cat;
	struct map_entry *v;
	size_t n, cap;
	uint32_t *slots;         /* entry index + 1, 0: empty */
	size_t nslots;
};

int world_map_create(const struct catalog *cat, struct world_map **out)
{
	struct world_map *m;

	if (!cat || !out)
		return ERR_INVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return ERR_NOMEM;
	m->cat = cat;
	*out = m;
	return 0;
}

void world_map_destroy(struct world_map *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		world_destroy(m->v[i].w);
	free(m->v);
	free(m->slots);
	free(m);
}

/* The slot where (gen, seed) would sit in a table without collisions. */
static size_t map_home(const struct world_map *m, int gen, uint64_t seed)
{
	uint64_t k[2] = { (uint64_t)gen, seed };

	return (size_t)XXH3_64bits(k, sizeof(k)) & (m->nslots - 1);
}

/* The slot of (gen, seed): *found says whether it holds it, else it is
 * the empty slot where it goes. The table must not be empty. */
static size_t map_slot(const struct world_map *m, int gen, uint64_t seed,
		       int *found)
{
	size_t mask = m->nslots - 1, i = map_home(m, gen, seed);

	for (;; i = (i + 1) & mask) {
		const struct map_entry *e;

		if (!m->slots[i]) {
			*found = 0;
			return i;
		}
		e = &m->v[m->slots[i] - 1];
		if (e->gen == gen && e->seed == seed) {
			*found = 1;
			return i;
		}
	}
}

struct world *world_map_find(const struct world_map *m, int gen, uint64_t seed)
{
	int found;
	size_t i;

	if (!m->nslots)
		return NULL;
	i = map_slot(m, gen, seed, &found);
	return found ? m->v[m->slots[i] - 1].w : NULL;
}

/* Make room for one more world. */
static int map_room(struct world_map *m)
{
	size_t n = m->nslots ? m->nslots : MIN_SLOTS, k;
	uint32_t *slots;

	if (m->n + 1 >= NONE / 2 || world__grow(&m->v, &m->cap, m->n + 1, sizeof(*m->v)))
		return ERR_NOMEM;
	while (n < 2 * (m->n + 1))
		n *= 2;
	if (n == m->nslots)
		return 0;
	if (!(slots = calloc(n, sizeof(*slots))))
		return ERR_NOMEM;
	free(m->slots);
	m->slots = slots;
	m->nslots = n;
	for (k = 0; k < m->n; k++) {
		int found;

		slots[map_slot(m, m->v[k].gen, m->v[k].seed, &found)] = (uint32_t)k + 1;
	}
	return 0;
}

int world_map_get(struct world_map *m, int gen, uint64_t seed,
		  struct world **out)
{
	const struct preset *p;
	struct world *w = world_map_find(m, gen, seed);
	int found, rc;

	if (w) {
		*out = w;
		return 0;
	}
	if (gen < 0 || (size_t)gen >= catalog_count(m->cat))
		return ERR_INVAL;
	p = catalog_at(m->cat, (size_t)gen);
	if ((rc = map_room(m)) != 0 ||
	    (rc = world_create(preset_fingerprint(p), seed, preset_chunk_log2(p), &w)) != 0)
		return rc;
	w->gen = gen;
	m->v[m->n] = (struct map_entry){ gen, seed, w };
	m->slots[map_slot(m, gen, seed, &found)] = (uint32_t)++m->n;
	*out = w;
	return 0;
}

/* Empty slot hole of the table: shift back the entries after it in its
 * cluster that may sit there (their home is not in (hole, slot]), so
 * every entry stays reachable from its home without tombstones. */
static void map_close_hole(struct world_map *m, size_t hole)
{
	size_t mask = m->nslots - 1, j;

	for (j = (hole + 1) & mask; m->slots[j]; j = (j + 1) & mask) {
		const struct map_entry *e = &m->v[m->slots[j] - 1];
		size_t home = map_home(m, e->gen, e->seed);

		if (((j - home) & mask) >= ((j - hole) & mask)) {
			m->slots[hole] = m->slots[j];
			hole = j;
		}
	}
	m->slots[hole] = 0;
}

int world_map_remove(struct world_map *m, int gen, uint64_t seed)
{
	size_t i, idx, last = m->n - 1;
	int found;

	if (!m->nslots)
		return ERR_NOTFOUND;
	i = map_slot(m, gen, seed, &found);
	if (!found)
		return ERR_NOTFOUND;
	idx = m->slots[i] - 1;
	if (!world_empty(m->v[idx].w))
		return ERR_BUSY;
	world_destroy(m->v[idx].w);
	map_close_hole(m, i);
	if (idx != last) { /* the last entry fills the dense array's hole */
		m->v[idx] = m->v[last];
		i = map_slot(m, m->v[idx].gen, m->v[idx].seed, &found);
		assert(found && m->slots[i] == last + 1);
		m->slots[i] = (uint32_t)idx + 1;
	}
	m->n--;
	return 0;
}

size_t world_map_count(const struct world_map *m)
{
	return m->n;
}

struct world *world_map_at(const struct world_map *m, size_t i, int *gen)
{
	assert(i < m->n);
	if (gen)
		*gen = m->v[i].gen;
	return m->v[i].w;
}

int world_map_follow(struct world_map *m, const struct batch *b, int reserved,
		     struct world **out, char *err, size_t errlen)
{
	struct edit e[EDIT_BATCH_MAX];
	struct revert r;
	struct world *w;
	size_t k;
	int gen, rc;

	if (b->count < 1 || b->count > EDIT_BATCH_MAX) {
		snprintf(err, errlen, "malformed edit batch");
		return ERR_CORRUPT;
	}
	if (b->revert && revert_decode(b->revert, REVERT_WIRE, &r)) {
		snprintf(err, errlen, "world %.*s/%llu: revert %llu malformed", (int)b->gen_len,
			 b->gen, (ull)b->seed, (ull)b->first_seq);
		return ERR_CORRUPT;
	}
	for (k = 0; !b->revert && k < b->count; k++)
		if (edit_decode(b->edits + k * EDIT_WIRE_SIZE, EDIT_WIRE_SIZE, &e[k])) {
			snprintf(err, errlen, "world %.*s/%llu: edit %llu out of range",
				 (int)b->gen_len, b->gen, (ull)b->seed, (ull)(b->first_seq + k));
			return ERR_CORRUPT;
		}
	gen = catalog_find(m->cat, b->gen, b->gen_len);
	if (gen < 0) {
		snprintf(err, errlen, "generator \"%.*s\" is not loaded", (int)b->gen_len, b->gen);
		return ERR_NOTFOUND;
	}
	if ((rc = world_map_get(m, gen, b->seed, &w)) != 0) {
		snprintf(err, errlen, "%s", err_str(rc));
		return rc;
	}
	if (b->first_seq != w->seq + 1) {
		snprintf(err, errlen, "world %.*s/%llu: batch at seq %llu follows seq %llu",
			 (int)b->gen_len, b->gen, (ull)b->seed, (ull)b->first_seq, (ull)w->seq);
		return ERR_CORRUPT;
	}
	rc = world__apply(w, b->first_seq, b->revert ? NULL : e, b->count, reserved && w->pend_batches,
		   NULL, b, b->revert ? &r : NULL);
	if (rc)
		snprintf(err, errlen, "world %.*s/%llu: batch at seq %llu: %s",
			 (int)b->gen_len, b->gen, (ull)b->seed, (ull)b->first_seq,
			 rc == ERR_TOOBIG ? "touches too many chunks" : err_str(rc));
	else if (out)
		*out = w;
	return rc;
}

int world_map_replay(struct world_map *m, const uint8_t *payload, size_t len,
		     char *err, size_t errlen)
{
	struct batch b;

	if (batch_decode(payload, len, &b)) {
		snprintf(err, errlen, "malformed edit batch");
		return ERR_CORRUPT;
	}
	return world_map_follow(m, &b, 0, NULL, err, errlen);
}
