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

#include <xxhash.h>

#include "bake.h"
#include "batch.h"
#include "edit.h"
#include "err.h"
#include "preset.h"
#include "revert.h"
#include "terrain.h"
#include "terrain_int.h"

#define MAX_EDIT_CHUNKS  4096   /* the server refuses edits touching more */
#define MAX_BATCH_CHUNKS 16384  /* and batches touching more (repeats count) */
#define NONE UINT32_MAX         /* out[] of a revert's own sequence number */

struct chunk {
	int32_t cx, cz;
	uint64_t version;          /* last touching sequence number, or the
				      last revert that changed its edits */
	uint64_t hash;             /* chain from 0 over its edits that count */
	struct edit *e;            /* the n edits touching it that count, in order */
	size_t n;
	uint32_t *t;               /* every edit touching it (seq - 1), in order */
	size_t nt, cap;            /* cap: room in both e and t */
	size_t pending;            /* touches of the batch being applied */
};

struct lbatch {                    /* an applied batch, or a revert */
	uint64_t first, last;
	uint64_t time_ms;          /* version 3: the log's time; else 0 */
	uint32_t author;           /* index + 1 into au[]; 0: none */
	uint32_t revert;           /* index + 1 into rv[]; 0: edits */
};

struct lrevert {
	struct revert r;
	uint64_t seq;
	int undone;
};

struct lauthor {
	uint8_t len;
	char name[REVERT_AUTHOR_MAX];
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
	struct edit *all;          /* edit seq is all[seq - 1] (zero: a revert) */
	uint32_t *out;             /* reverts taking edit seq out; NONE: a revert */
	size_t nall, allcap, outcap;
	struct lbatch *b;          /* every batch and revert, in order */
	size_t nb, bcap;
	struct lrevert *rv;
	size_t nrv, rvcap;
	struct lauthor *au;        /* distinct authors, interned */
	size_t nau, aucap;
	uint32_t *aslots;          /* open addressing: index + 1, 0 empty */
	size_t naslots;
	size_t *dirty;             /* chunks a revert changes: room for nc */
	size_t dcap;
};

/* Room for need elements of size bytes in the array at pv (cap of them). */
static int room(void *pv, size_t *cap, size_t need, size_t size)
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
	if (!(p = realloc(p, c * size)))
		return ERR_NOMEM;
	memcpy(pv, &p, sizeof(p));
	*cap = c;
	return 0;
}

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
	e->c[e->nc] = (struct chunk){ cx, cz, 0, 0, NULL, 0, NULL, 0, 0, 0 };
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
	for (i = 0; i < e->nc; i++) {
		free(e->c[i].e);
		free(e->c[i].t);
	}
	free(e->c);
	free(e->slots);
	free(e->xz);
	free(e->all);
	free(e->out);
	free(e->b);
	free(e->rv);
	free(e->au);
	free(e->aslots);
	free(e->dirty);
	free(e);
}

/* ---- authors --------------------------------------------------------------- */

static size_t author_slot(const struct terrain_edits *e, const char *name, size_t len)
{
	size_t mask = e->naslots - 1, i = (size_t)XXH3_64bits(name, len) & mask;

	for (;; i = (i + 1) & mask) {
		const struct lauthor *a;

		if (!e->aslots[i])
			return i;
		a = &e->au[e->aslots[i] - 1];
		if (a->len == len && !memcmp(a->name, name, len))
			return i;
	}
}

/* The index + 1 of author name (len 1..64 bytes), added when new; 0 when
 * out of memory. Names are interned: a batch keeps 4 bytes, not 65. */
static uint32_t author_id(struct terrain_edits *e, const char *name, size_t len)
{
	size_t i, k;

	if (2 * (e->nau + 1) > e->naslots) {
		size_t n = e->naslots ? 2 * e->naslots : 16;
		uint32_t *s = calloc(n, sizeof(*s));

		if (!s)
			return 0;
		free(e->aslots);
		e->aslots = s;
		e->naslots = n;
		for (k = 0; k < e->nau; k++)
			s[author_slot(e, e->au[k].name, e->au[k].len)] = (uint32_t)k + 1;
	}
	i = author_slot(e, name, len);
	if (e->aslots[i])
		return e->aslots[i];
	if (room(&e->au, &e->aucap, e->nau + 1, sizeof(*e->au)))
		return 0;
	e->au[e->nau].len = (uint8_t)len;
	memcpy(e->au[e->nau].name, name, len);
	e->aslots[i] = (uint32_t)++e->nau;
	return e->aslots[i];
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

/* Room for n more touches of chunk c, in both of its arrays. */
static int chunk_room(struct chunk *c, size_t n)
{
	size_t cap = c->cap ? c->cap : 2;
	struct edit *g;
	uint32_t *t;

	if (c->nt + n <= c->cap)
		return 0;
	while (cap < c->nt + n)
		cap *= 2;
	if (!(g = realloc(c->e, cap * sizeof(*g))))
		return ERR_NOMEM;
	c->e = g;
	if (!(t = realloc(c->t, cap * sizeof(*t))))
		return ERR_NOMEM;
	c->t = t;
	c->cap = cap;
	return 0;
}

/* Room for one more batch (or revert) of n log entries. */
static int log_room(struct terrain_edits *e, size_t n)
{
	if (room(&e->all, &e->allcap, e->nall + n, sizeof(*e->all)) ||
	    room(&e->out, &e->outcap, e->nall + n, sizeof(*e->out)) ||
	    room(&e->b, &e->bcap, e->nb + 1, sizeof(*e->b)))
		return ERR_NOMEM;
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

			if (!c)
				rc = ERR_NOMEM;
			else
				rc = chunk_room(c, ++c->pending);
		}
	}
	for (k = 0; k < e->nc; k++)
		e->c[k].pending = 0;
	return rc;
}

/*
 * Apply n checked edits as first, first + 1, ... (room reserved), of a
 * batch by author (0: none) at time_ms. The world hash chains each edit,
 * or, for a version-3 record m (NULL: none), the batch.
 */
static void commit(struct terrain_edits *e, uint64_t first, const struct edit *v, size_t n,
		   uint32_t author, const struct batch *m)
{
	size_t k, j, nc;

	e->b[e->nb++] = (struct lbatch){ first, first + n - 1, m ? m->time_ms : 0, author, 0 };
	for (k = 0; k < n; k++) {
		uint64_t seq = first + k;

		e->all[e->nall] = v[k];
		e->out[e->nall++] = 0;
		if (!m)
			e->hash = edit_hash_next(e->hash, seq, &v[k]);
		chunks_of(e, &v[k], &nc);
		for (j = 0; j < nc; j++) {
			struct chunk *c = (struct chunk *)find(e, e->xz[j],
							       e->xz[MAX_EDIT_CHUNKS + j]);

			c->t[c->nt++] = (uint32_t)(seq - 1);
			c->e[c->n++] = v[k];
			c->version = seq;
			c->hash = edit_hash_next(c->hash, seq, &v[k]);
		}
	}
	if (m)
		e->hash = batch_hash(e->hash, m);
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

/* Edits of a record (m NULL: raw edits, versions 1 and 2 alike). */
static int apply_edits(struct terrain_edits *e, uint64_t first_seq, const uint8_t *edits,
		       size_t count, const struct batch *m)
{
	uint32_t author = 0;
	struct edit *v;
	int rc;

	if ((rc = decode_all(edits, count, &v)) != 0)
		return rc;
	if ((rc = log_room(e, count)) == 0 && m &&
	    !(author = author_id(e, m->author, m->author_len)))
		rc = ERR_NOMEM;
	if (!rc && (rc = reserve(e, v, count)) == 0)
		commit(e, first_seq, v, count, author, m);
	free(v);
	return rc;
}

int terrain_edits_apply(struct terrain_edits *e, uint64_t first_seq, const uint8_t *edits,
			size_t count)
{
	if (!e || !edits || count == 0 || count > TERRAIN_BATCH_MAX)
		return TERRAIN_ERR_INVAL;
	if (first_seq != e->seq + 1)
		return TERRAIN_ERR_CONFLICT;
	return apply_edits(e, first_seq, edits, count, NULL);
}

/* ---- reverts --------------------------------------------------------------- */

/* The first batch whose last sequence number is seq or later (nb: none). */
static size_t batch_of(const struct terrain_edits *e, uint64_t seq)
{
	size_t lo = 0, hi = e->nb;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->b[mid].last < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Edit v starts or stops counting in revert seq: its chunks are dirty. */
static void mark(struct terrain_edits *e, const struct edit *v, uint64_t seq, size_t *nd)
{
	size_t j, nc;

	chunks_of(e, v, &nc);
	for (j = 0; j < nc; j++) {
		struct chunk *c = (struct chunk *)find(e, e->xz[j], e->xz[MAX_EDIT_CHUNKS + j]);

		if (c->version >= seq)
			continue; /* already this revert's */
		c->version = seq;
		e->dirty[(*nd)++] = (size_t)(c - e->c);
	}
}

/* The first sequence number the log took at or after time_ms - span_ms
 * (span 0: 1): where a revert reaches (revert.h), as server/worlds/world_revert.c. */
static uint64_t reach(const struct terrain_edits *e, uint64_t time_ms, uint64_t span_ms)
{
	size_t lo = 0, hi = e->nb;

	if (!span_ms || time_ms < span_ms)
		return 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->b[mid].time_ms < time_ms - span_ms)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < e->nb ? e->b[lo].first : e->seq + 1;
}

/*
 * Count (delta 1) or uncount (-1) the edits filter f, at sequence number
 * self, takes out: from lo to itself, as server/worlds/world_revert.c does.
 * Chunks whose edits change get version seq, into e->dirty.
 */
static void walk(struct terrain_edits *e, const struct revert *f, uint64_t self, uint64_t lo,
		 int delta, uint64_t seq, size_t *nd)
{
	uint64_t s;
	size_t i;

	for (i = batch_of(e, lo); i < e->nb && e->b[i].first < self; i++) {
		const struct lbatch *a = &e->b[i];
		const struct lauthor *au = a->author ? &e->au[a->author - 1] : NULL;

		if (a->revert)
			continue;
		for (s = a->first > lo ? a->first : lo; s <= a->last && s < self; s++) {
			uint32_t *o = &e->out[s - 1];
			int was = *o != 0;

			if (!revert_matches(f, self, s, &e->all[s - 1], au ? au->name : "",
					    au ? au->len : 0, a->time_ms))
				continue;
			*o = (uint32_t)((int64_t)*o + delta);
			if (was != (*o != 0))
				mark(e, &e->all[s - 1], seq, nd);
		}
	}
}

/* A chunk's edits that count, hash and count again from its touches. */
static void recount(struct terrain_edits *e, struct chunk *c)
{
	uint64_t h = 0;
	size_t k, n = 0;

	for (k = 0; k < c->nt; k++) {
		uint32_t idx = c->t[k];

		if (e->out[idx])
			continue;
		c->e[n++] = e->all[idx];
		h = edit_hash_next(h, (uint64_t)idx + 1, &e->all[idx]);
	}
	c->n = n;
	c->hash = h;
}

/* The revert an undo of seq cancels: a revert not undone yet, or NULL. */
static struct lrevert *undo_target(struct terrain_edits *e, uint64_t seq)
{
	size_t i = batch_of(e, seq);
	struct lrevert *t;

	if (i == e->nb || !e->b[i].revert)
		return NULL;
	t = &e->rv[e->b[i].revert - 1];
	return t->r.op == REVERT_REVERT && !t->undone ? t : NULL;
}

/* Revert record b (filter r) at b->first_seq: all or nothing. */
static int apply_revert(struct terrain_edits *e, const struct batch *b, const struct revert *r)
{
	uint64_t seq = b->first_seq;
	struct lrevert *target = NULL;
	size_t nd = 0, i;
	uint64_t lo;
	uint32_t author;

	if (log_room(e, 1) || room(&e->rv, &e->rvcap, e->nrv + 1, sizeof(*e->rv)) ||
	    room(&e->dirty, &e->dcap, e->nc, sizeof(*e->dirty)) ||
	    !(author = author_id(e, b->author, b->author_len)))
		return ERR_NOMEM;
	lo = reach(e, b->time_ms, r->history_ms);
	if (lo < r->floor)
		lo = r->floor;
	if (r->op == REVERT_UNDO && (target = undo_target(e, r->undo)) != NULL) {
		walk(e, &target->r, target->seq, lo > target->r.floor ? lo : target->r.floor, -1,
		     seq, &nd);
		target->undone = 1;
	} else if (r->op == REVERT_REVERT) {
		walk(e, r, seq, lo, 1, seq, &nd);
	} /* else an undo of nothing revertable: it changes no edit */
	for (i = 0; i < nd; i++)
		recount(e, &e->c[e->dirty[i]]);
	e->all[e->nall] = (struct edit){ 0 };
	e->out[e->nall++] = NONE;
	e->rv[e->nrv++] = (struct lrevert){ *r, seq, 0 };
	e->b[e->nb++] = (struct lbatch){ seq, seq, b->time_ms, author, (uint32_t)e->nrv };
	e->hash = batch_hash(e->hash, b);
	e->seq = seq;
	return 0;
}

int terrain_edits_apply_record(struct terrain_edits *e, const uint8_t *rec, size_t len)
{
	const char *name;
	struct revert r;
	struct batch b;
	int rc;

	if (!e || !rec)
		return TERRAIN_ERR_INVAL;
	if ((rc = batch_decode(rec, len, &b)) != 0)
		return rc;
	if (b.count == 0 || b.count > TERRAIN_BATCH_MAX)
		return TERRAIN_ERR_CORRUPT;
	if (b.revert && revert_decode(b.revert, REVERT_WIRE, &r))
		return TERRAIN_ERR_CORRUPT;
	name = preset_name(e->w->p);
	if (b.gen_len != strlen(name) || memcmp(b.gen, name, b.gen_len) || b.seed != e->w->seed)
		return TERRAIN_ERR_CONFLICT;
	if (b.first_seq != e->seq + 1)
		return TERRAIN_ERR_CONFLICT;
	if (b.revert)
		return apply_revert(e, &b, &r);
	return apply_edits(e, b.first_seq, b.edits, b.count, b.author_len ? &b : NULL);
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
	return terrain_edits_record_by(w, first_seq, json, json_len, NULL, 0, out, cap, len, msg,
				       msglen);
}

int terrain_edits_record_by(const struct terrain_world *w, uint64_t first_seq, const char *json,
			    size_t json_len, const char *author, uint64_t time_ms, uint8_t *out,
			    size_t cap, size_t *len, char *msg, size_t msglen)
{
	size_t alen = author ? strlen(author) : 0;
	uint8_t wire[EDIT_BATCH_MAX * EDIT_WIRE_SIZE];
	struct edit *v = NULL;
	struct batch b;
	size_t n = 0, k;
	int rc;

	if (msg && msglen)
		msg[0] = '\0';
	if (!w || !json || !out || !len || first_seq == 0)
		return TERRAIN_ERR_INVAL;
	if (author && !revert_author_ok(author, alen)) {
		if (msg && msglen)
			snprintf(msg, msglen, "author: must be 1..64 of A-Z a-z 0-9 _ . @ -");
		return TERRAIN_ERR_INVAL;
	}
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
			    .edits = wire, .author = author, .author_len = alen,
			    .time_ms = author ? time_ms : 0 };
	rc = batch_encode(&b, out, cap, len);
	if (rc == ERR_TOOBIG && msg && msglen)
		snprintf(msg, msglen, "record: %zu bytes, room for %zu", batch_size(&b), cap);
	return rc;
}

int terrain_edits_revert_record(const struct terrain_world *w, uint64_t seq, const char *json,
				size_t json_len, const char *author, uint64_t time_ms,
				uint64_t floor, uint8_t *out, size_t cap, size_t *len, char *msg,
				size_t msglen)
{
	uint8_t wire[REVERT_WIRE];
	struct revert r;
	struct batch b;
	size_t alen = author ? strlen(author) : 0;
	int rc;

	if (msg && msglen)
		msg[0] = '\0';
	if (!w || !json || !out || !len || seq == 0)
		return TERRAIN_ERR_INVAL;
	if (!revert_author_ok(author, alen)) {
		if (msg && msglen)
			snprintf(msg, msglen, "author: must be 1..64 of A-Z a-z 0-9 _ . @ -");
		return TERRAIN_ERR_INVAL;
	}
	if ((rc = revert_parse(json, json_len, &r, msg, msglen)) != 0)
		return rc;
	if (floor)
		r.floor = floor;
	else if (!r.floor)
		r.floor = 1;
	revert_encode(&r, wire);
	b = (struct batch){ .gen = preset_name(w->p), .gen_len = strlen(preset_name(w->p)),
			    .seed = w->seed, .first_seq = seq, .count = 1, .time_ms = time_ms,
			    .author = author, .author_len = alen, .revert = wire };
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
