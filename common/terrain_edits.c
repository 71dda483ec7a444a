/*
 * terrain_edits.c - the library's edit log (terrain.h, "edits"): batches
 * applied in sequence order, the world hash chained over them, and for
 * each chunk its edit version, its chunk hash and a copy of the edits that
 * touch it, in order, which is what generation reads (as a bake layer
 * without deltas, terrain__layer()). The rules are docs/edits.md's and the
 * arithmetic common/edit.c's, so the hashes are the server's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "batch.h"
#include "edit.h"
#include "err.h"
#include "preset.h"
#include "terrain.h"
#include "terrain_int.h"

#define MAX_EDIT_CHUNKS  4096   /* the server refuses edits touching more */
#define MAX_BATCH_CHUNKS 16384  /* and batches touching more (repeats count) */

struct chunk {
	int32_t cx, cz;
	uint64_t version;          /* last touching sequence number */
	uint64_t hash;             /* chain from 0 over its edits */
	struct edit *e;            /* the edits touching it, in order */
	size_t n, cap;
	size_t pending;            /* touches of the batch being applied */
};

struct terrain_edits {
	const struct terrain_world *w;
	int chunk_log2;
	uint64_t seq, hash;
	struct chunk *c;           /* nc chunks, in first-touch order */
	size_t nc, ccap;
	uint32_t *slots;           /* open addressing: index + 1, 0 empty */
	size_t nslots;             /* a power of two, or 0 */
	int32_t *xz;               /* edit_chunks() output: MAX_EDIT_CHUNKS pairs */
};

/* ---- chunk map ------------------------------------------------------------- */

static size_t mix(int32_t cx, int32_t cz)
{
	uint64_t k = (uint64_t)(uint32_t)cx << 32 | (uint32_t)cz;

	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	k ^= k >> 33;
	return (size_t)k;
}

/* Where (cx, cz) is, or the empty slot where it would go. */
static size_t slot_of(const struct terrain_edits *e, int32_t cx, int32_t cz)
{
	size_t i = mix(cx, cz) & (e->nslots - 1);

	while (e->slots[i]) {
		const struct chunk *c = &e->c[e->slots[i] - 1];

		if (c->cx == cx && c->cz == cz)
			break;
		i = (i + 1) & (e->nslots - 1);
	}
	return i;
}

static const struct chunk *find(const struct terrain_edits *e, int32_t cx, int32_t cz)
{
	size_t i;

	if (!e || !e->nslots)
		return NULL;
	i = slot_of(e, cx, cz);
	return e->slots[i] ? &e->c[e->slots[i] - 1] : NULL;
}

/* Room for one more chunk, at a load of at most one half. */
static int grow(struct terrain_edits *e)
{
	size_t n = e->nslots ? e->nslots : 64, i;
	uint32_t *s;

	if (e->nc == e->ccap) {
		size_t cap = e->ccap ? 2 * e->ccap : 32;
		struct chunk *c = realloc(e->c, cap * sizeof(*c));

		if (!c || cap > UINT32_MAX - 1)
			return ERR_NOMEM;
		e->c = c;
		e->ccap = cap;
	}
	while (n / 2 < e->nc + 1)
		n *= 2;
	if (n == e->nslots)
		return 0;
	if (!(s = calloc(n, sizeof(*s))))
		return ERR_NOMEM;
	free(e->slots);
	e->slots = s;
	e->nslots = n;
	for (i = 0; i < e->nc; i++)
		e->slots[slot_of(e, e->c[i].cx, e->c[i].cz)] = (uint32_t)(i + 1);
	return 0;
}

/* The chunk (cx, cz), added empty when new (an empty chunk is the same as
 * no chunk). NULL when out of memory. */
static struct chunk *find_or_add(struct terrain_edits *e, int32_t cx, int32_t cz)
{
	size_t i;

	if (e->nslots && e->slots[i = slot_of(e, cx, cz)])
		return &e->c[e->slots[i] - 1];
	if (grow(e))
		return NULL;
	e->c[e->nc] = (struct chunk){ cx, cz, 0, 0, NULL, 0, 0, 0 };
	e->slots[slot_of(e, cx, cz)] = (uint32_t)(e->nc + 1);
	return &e->c[e->nc++];
}

/* ---- create ---------------------------------------------------------------- */

int terrain_edits_create(const struct terrain_world *w, struct terrain_edits **out)
{
	struct terrain_edits *e;

	if (!w || !out)
		return TERRAIN_ERR_INVAL;
	if (!(e = calloc(1, sizeof(*e))) ||
	    !(e->xz = malloc(2 * MAX_EDIT_CHUNKS * sizeof(*e->xz)))) {
		free(e);
		return TERRAIN_ERR_NOMEM;
	}
	e->w = w;
	e->chunk_log2 = preset_chunk_log2(w->p);
	e->hash = edit_hash_start(preset_fingerprint(w->p), w->seed);
	*out = e;
	return 0;
}

void terrain_edits_destroy(struct terrain_edits *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->nc; i++)
		free(e->c[i].e);
	free(e->c);
	free(e->slots);
	free(e->xz);
	free(e);
}

/* ---- apply ----------------------------------------------------------------- */

/* The chunks of edit v into e->xz (*n of them): ERR_RANGE for an edit
 * the server refuses (none on the grid, or more than MAX_EDIT_CHUNKS). */
static int chunks_of(struct terrain_edits *e, const struct edit *v, size_t *n)
{
	if (edit_chunks(v, e->chunk_log2, e->xz, e->xz + MAX_EDIT_CHUNKS, MAX_EDIT_CHUNKS, n) ||
	    *n == 0)
		return ERR_RANGE;
	return 0;
}

/* Make room in every chunk v[0..n) touches, counting them in pending. */
static int reserve(struct terrain_edits *e, const struct edit *v, size_t n)
{
	size_t k, j, nc, total = 0;
	int rc = 0;

	for (k = 0; !rc && k < n; k++) {
		if ((rc = chunks_of(e, &v[k], &nc)) != 0 ||
		    (total += nc) > MAX_BATCH_CHUNKS) {
			rc = ERR_RANGE;
			break;
		}
		for (j = 0; !rc && j < nc; j++) {
			struct chunk *c = find_or_add(e, e->xz[j], e->xz[MAX_EDIT_CHUNKS + j]);

			if (!c) {
				rc = ERR_NOMEM;
			} else if (c->n + ++c->pending > c->cap) {
				size_t cap = c->cap ? 2 * c->cap : 4;
				struct edit *g = realloc(c->e, cap * sizeof(*g));

				if (g) {
					c->e = g;
					c->cap = cap;
				} else {
					rc = ERR_NOMEM;
				}
			}
		}
	}
	if (rc)
		for (k = 0; k < e->nc; k++)
			e->c[k].pending = 0;
	return rc;
}

/* Apply n checked edits as first, first + 1, ... (room reserved). */
static void commit(struct terrain_edits *e, uint64_t first, const struct edit *v, size_t n)
{
	size_t k, j, nc;

	for (k = 0; k < n; k++) {
		uint64_t seq = first + k;

		e->hash = edit_hash_next(e->hash, seq, &v[k]);
		chunks_of(e, &v[k], &nc);
		for (j = 0; j < nc; j++) {
			struct chunk *c = (struct chunk *)find(e, e->xz[j],
							       e->xz[MAX_EDIT_CHUNKS + j]);

			c->e[c->n++] = v[k];
			c->pending--;
			c->version = seq;
			c->hash = edit_hash_next(c->hash, seq, &v[k]);
		}
	}
	e->seq = first + n - 1;
}

/* Decode count canonical edits into a new array *v. */
static int decode_all(const uint8_t *bytes, size_t count, struct edit **v)
{
	size_t k;

	if (!(*v = malloc((count ? count : 1) * sizeof(**v))))
		return ERR_NOMEM;
	for (k = 0; k < count; k++)
		if (edit_decode(bytes + k * EDIT_WIRE_SIZE, EDIT_WIRE_SIZE, &(*v)[k])) {
			free(*v);
			return ERR_CORRUPT;
		}
	return 0;
}

int terrain_edits_apply(struct terrain_edits *e, uint64_t first_seq, const uint8_t *edits,
			size_t count)
{
	struct edit *v;
	int rc;

	if (!e || !edits || count == 0 || count > TERRAIN_BATCH_MAX)
		return TERRAIN_ERR_INVAL;
	if (first_seq != e->seq + 1)
		return TERRAIN_ERR_CONFLICT;
	if ((rc = decode_all(edits, count, &v)) != 0)
		return rc;
	if ((rc = reserve(e, v, count)) == 0)
		commit(e, first_seq, v, count);
	free(v);
	return rc;
}

int terrain_edits_apply_record(struct terrain_edits *e, const uint8_t *rec, size_t len)
{
	const char *name;
	struct batch b;
	int rc;

	if (!e || !rec)
		return TERRAIN_ERR_INVAL;
	if ((rc = batch_decode(rec, len, &b)) != 0)
		return rc;
	if (b.count == 0 || b.count > TERRAIN_BATCH_MAX)
		return TERRAIN_ERR_CORRUPT;
	name = preset_name(e->w->p);
	if (b.gen_len != strlen(name) || memcmp(b.gen, name, b.gen_len) || b.seed != e->w->seed)
		return TERRAIN_ERR_CONFLICT;
	return terrain_edits_apply(e, b.first_seq, b.edits, b.count);
}

/* ---- records --------------------------------------------------------------- */

static int say(char *msg, size_t msglen, int rc, const char *what, size_t k)
{
	if (msg && msglen)
		snprintf(msg, msglen, "edits[%zu]: %s", k, what);
	return rc;
}

/* The server's bounds on where an edit may be and how much it touches. */
static int check_reach(const struct terrain_world *w, const struct edit *v, size_t n,
		       char *msg, size_t msglen)
{
	int log2 = preset_chunk_log2(w->p);
	size_t k, c, total = 0;

	for (k = 0; k < n; k++) {
		edit_chunks(&v[k], log2, NULL, NULL, 0, &c);
		if (c == 0)
			return say(msg, msglen, ERR_RANGE, "outside the world", k);
		if (c > MAX_EDIT_CHUNKS)
			return say(msg, msglen, ERR_RANGE, "touches more than 4096 chunks", k);
		total += c;
	}
	if (total > MAX_BATCH_CHUNKS)
		return say(msg, msglen, ERR_RANGE, "the batch touches more than 16384 chunks",
			   n - 1);
	return 0;
}

int terrain_edits_record(const struct terrain_world *w, uint64_t first_seq, const char *json,
			 size_t json_len, uint8_t *out, size_t cap, size_t *len, char *msg,
			 size_t msglen)
{
	uint8_t wire[EDIT_BATCH_MAX * EDIT_WIRE_SIZE];
	struct edit *v = NULL;
	struct batch b;
	size_t n = 0, k;
	int rc;

	if (msg && msglen)
		msg[0] = '\0';
	if (!w || !json || !out || !len || first_seq == 0)
		return TERRAIN_ERR_INVAL;
	rc = edit_parse_batch(json, json_len, &v, &n, msg, msglen);
	if (!rc)
		rc = check_reach(w, v, n, msg, msglen);
	for (k = 0; !rc && k < n; k++)
		edit_encode(&v[k], wire + k * EDIT_WIRE_SIZE);
	free(v);
	if (rc)
		return rc;
	b = (struct batch){ .gen = preset_name(w->p), .gen_len = strlen(preset_name(w->p)),
			    .seed = w->seed, .first_seq = first_seq, .count = (uint32_t)n,
			    .edits = wire };
	rc = batch_encode(&b, out, cap, len);
	if (rc == ERR_TOOBIG && msg && msglen)
		snprintf(msg, msglen, "record: %zu bytes, room for %zu", batch_size(&b), cap);
	return rc;
}

/* ---- queries --------------------------------------------------------------- */

uint64_t terrain_edits_seq(const struct terrain_edits *e)
{
	return e ? e->seq : 0;
}

uint64_t terrain_edits_world_hash(const struct terrain_edits *e)
{
	return e ? e->hash : 0;
}

int terrain_edits_chunk(const struct terrain_edits *e, int32_t cx, int32_t cz,
			uint64_t *version, uint64_t *hash)
{
	const struct chunk *c;

	if (!e || !version || !hash)
		return TERRAIN_ERR_INVAL;
	c = find(e, cx, cz);
	*version = c ? c->version : 0;
	*hash = c ? c->hash : 0;
	return 0;
}

uint64_t terrain__version(const struct terrain_edits *e, int32_t cx, int32_t cz)
{
	const struct chunk *c = find(e, cx, cz);

	return c ? c->version : 0;
}

uint64_t terrain_hash_start(uint64_t fingerprint, uint64_t seed)
{
	return edit_hash_start(fingerprint, seed);
}

int terrain_hash_next(uint64_t prev, uint64_t seq, const uint8_t edit[TERRAIN_EDIT_SIZE],
		      uint64_t *out)
{
	struct edit v;

	if (!edit || !out)
		return TERRAIN_ERR_INVAL;
	if (edit_decode(edit, EDIT_WIRE_SIZE, &v))
		return TERRAIN_ERR_CORRUPT;
	*out = edit_hash_next(prev, seq, &v);
	return 0;
}

/* ---- layers for generation ------------------------------------------------- */

static int row_order(const void *a, const void *b)
{
	const struct bake_chunk *x = a, *y = b;

	if (x->cz != y->cz)
		return x->cz < y->cz ? -1 : 1;
	return x->cx < y->cx ? -1 : x->cx > y->cx;
}

static struct bake_chunk layer_chunk(const struct chunk *c)
{
	return (struct bake_chunk){ c->cx, c->cz, NULL, c->e, c->n };
}

int terrain__layer(const struct terrain_edits *e, int64_t cx0, int64_t cz0, int64_t cx1,
		   int64_t cz1, struct bake_chunk **out, size_t *n)
{
	uint64_t area = (uint64_t)(cx1 - cx0 + 1) * (uint64_t)(cz1 - cz0 + 1);
	struct bake_chunk *v;
	int64_t x, z;
	size_t k = 0, i;

	*out = NULL;
	*n = 0;
	if (!e || !e->nc || cx1 < cx0 || cz1 < cz0)
		return 0;
	if (!(v = malloc((area < e->nc ? area : e->nc) * sizeof(*v))))
		return ERR_NOMEM;
	if (area <= e->nc) { /* look the rectangle's chunks up, in row order */
		for (z = cz0; z <= cz1; z++)
			for (x = cx0; x <= cx1; x++) {
				const struct chunk *c;

				if (x < INT32_MIN || x > INT32_MAX || z < INT32_MIN || z > INT32_MAX)
					continue;
				if ((c = find(e, (int32_t)x, (int32_t)z)) && c->n)
					v[k++] = layer_chunk(c);
			}
	} else { /* fewer edited chunks than the rectangle has: filter them */
		for (i = 0; i < e->nc; i++)
			if (e->c[i].n && e->c[i].cx >= cx0 && e->c[i].cx <= cx1 &&
			    e->c[i].cz >= cz0 && e->c[i].cz <= cz1)
				v[k++] = layer_chunk(&e->c[i]);
		qsort(v, k, sizeof(*v), row_order);
	}
	if (!k) {
		free(v);
		v = NULL;
	}
	*out = v;
	*n = k;
	return 0;
}
