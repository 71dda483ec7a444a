/*
 * view.c - one player's chunks, fetched, verified and kept current (view.h).
 *
 * Entry (cx, cz) lives in window slot (cx mod W, cz mod W), W =
 * ring_span(): a player's square never holds two chunks of one slot, so a
 * slot holding another chunk is simply taken over. A request carries its
 * chunk coordinates and LOD, not a pointer: an answer for a chunk that has
 * left (or changed LOD) meanwhile is verified, counted as stale and
 * dropped.
 *
 * Local mode (p.local: /hashes, and tiles made here where no edit
 * reaches) is view_local.c; view_int.h has what the two files share.
 */
#include "view.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "hclient.h"
#include "terrain.h"
#include "tile.h"
#include "api.h"
#include "view_int.h"

#define BATCH_MAX 64   /* tiles per batch request (the endpoint's limit) */

enum { EDGE_W, EDGE_E, EDGE_N, EDGE_S };

static int64_t pmod(int64_t a, int64_t m)
{
	int64_t r = a % m;

	return r < 0 ? r + m : r;
}

static struct entry *slot(const struct view *v, int64_t cx, int64_t cz)
{
	return &v->e[pmod(cz, v->w) * v->w + pmod(cx, v->w)];
}

/* The entry of (cx, cz) if the window holds it, else NULL. */
struct entry *view__find(const struct view *v, int64_t cx, int64_t cz)
{
	struct entry *e;

	if (cx < INT32_MIN || cx > INT32_MAX || cz < INT32_MIN || cz > INT32_MAX)
		return NULL;
	e = slot(v, cx, cz);
	return e->used && e->cx == cx && e->cz == cz ? e : NULL;
}

void view__report(struct view *v, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	v->st.errors++;
	if (v->h.error)
		v->h.error(v->h.arg, v, msg);
}

/* ---- edges and seams ---- */

/* Sample k of edge `which` of t. */
static int32_t edge_at(const struct tile *t, int which, uint32_t k)
{
	uint32_t last = t->side - 1;

	switch (which) {
	case EDGE_W: return t->h[(size_t)k * t->side];
	case EDGE_E: return t->h[(size_t)k * t->side + last];
	case EDGE_N: return t->h[k];
	default:     return t->h[(size_t)last * t->side + k];
	}
}

static void edge_hashes(const struct tile *t, uint64_t out[4], int32_t *tmp)
{
	for (int which = 0; which < 4; which++) {
		for (uint32_t k = 0; k < t->side; k++)
			tmp[k] = edge_at(t, which, k);
		out[which] = XXH3_64bits(tmp, t->side * sizeof(*tmp));
	}
}

static double metres(const struct tile *t, int32_t h)
{
	return (double)h * t->quantum_um / 1e6;
}

/*
 * Compare the edge `which` of a (chunk ea) with the opposite edge of its
 * neighbour b: sample by sample on the coarser spacing when both tiles are
 * kept, else by hash (equal LODs only).
 */
static void seam(struct view *v, const struct entry *ea, int which,
		 const struct entry *eb)
{
	static const int opposite[4] = { EDGE_E, EDGE_W, EDGE_S, EDGE_N };
	const struct tile *a = &ea->t, *b = &eb->t;
	const struct tile *fine = ea->lod <= eb->lod ? a : b;
	const struct tile *coarse = fine == a ? b : a;
	int fw = fine == a ? which : opposite[which];
	int cw = fine == a ? opposite[which] : which;
	uint32_t step, chunk = 1u << v->p.ring.chunk_log2;

	if (!v->p.keep_heights) {
		if (ea->lod != eb->lod)
			return;
		v->st.seams++;
		if (ea->edge[which] != eb->edge[opposite[which]])
			view__report(v, "seam mismatch between chunk %d/%" PRId32 "/%"
				     PRId32 " and chunk %d/%" PRId32 "/%" PRId32
				     " (lod/cx/cz): shared edges differ",
				     ea->lod, ea->cx, ea->cz, eb->lod, eb->cx, eb->cz);
		return;
	}
	v->st.seams++;
	step = 1u << (coarse->lod - fine->lod);
	for (uint32_t k = 0; k < coarse->side; k++) {
		int32_t hf = edge_at(fine, fw, k * step);
		int32_t hc = edge_at(coarse, cw, k);
		int64_t along = (int64_t)k << coarse->lod, x, z;

		if (hf == hc && fine->quantum_um == coarse->quantum_um)
			continue;
		/* at different precisions both are roundings of one canonical
		 * height: within half of each quantum of it */
		if (fine->quantum_um != coarse->quantum_um &&
		    llabs((int64_t)hf * fine->quantum_um - (int64_t)hc * coarse->quantum_um) * 2 <=
		    (int64_t)fine->quantum_um + coarse->quantum_um)
			continue;
		/* the world point: on the shared line, `along` metres in */
		x = (which == EDGE_W ? (int64_t)ea->cx : which == EDGE_E ?
		     (int64_t)ea->cx + 1 : ea->cx) * chunk;
		z = (which == EDGE_N ? (int64_t)ea->cz : which == EDGE_S ?
		     (int64_t)ea->cz + 1 : ea->cz) * chunk;
		if (which == EDGE_W || which == EDGE_E)
			z += along;
		else
			x += along;
		view__report(v, "seam mismatch between chunk %d/%" PRId32 "/%" PRId32
			     " and chunk %d/%" PRId32 "/%" PRId32 " (lod/cx/cz) at x=%"
			     PRId64 " z=%" PRId64 ": %.2f m vs %.2f m",
			     ea->lod, ea->cx, ea->cz, eb->lod, eb->cx, eb->cz, x, z,
			     metres(a, a == fine ? hf : hc),
			     metres(b, b == fine ? hf : hc));
		return;
	}
}

static void seams_of(struct view *v, const struct entry *e)
{
	static const int dx[4] = { -1, 1, 0, 0 }, dz[4] = { 0, 0, -1, 1 };

	for (int which = 0; which < 4; which++) {
		const struct entry *n = view__find(v, (int64_t)e->cx + dx[which],
						   (int64_t)e->cz + dz[which]);

		if (n && n->lod >= 0)
			seam(v, e, which, n);
	}
}

/* ---- tiles ---- */


static uint64_t fresh_until(const struct view *v, long max_age)
{
	if (v->p.revalidate_ms >= 0)
		return v->now + (uint64_t)v->p.revalidate_ms;
	return v->now + (max_age > 0 ? (uint64_t)max_age * 1000 : 0);
}

/* Verify and keep one tile body for chunk lod/cx/cz. */
void view__accept_tile(struct view *v, int32_t cx, int32_t cz, int lod,
		       const uint8_t *buf, size_t len, const char *etag,
		       long max_age)
{
	struct entry *e;
	struct tile t;
	int32_t *tmp;
	int rc = tile_decode(buf, len, &t);

	if (rc) {
		view__report(v, "chunk %d/%" PRId32 "/%" PRId32 " (lod/cx/cz): "
			     "corrupt tile: %s", lod, cx, cz, err_str(rc));
		return;
	}
	if (t.seed != v->p.seed_value || t.cx != cx || t.cz != cz ||
	    t.lod != lod || t.chunk_log2 != v->p.ring.chunk_log2 ||
	    (v->p.fingerprint && t.fingerprint != v->p.fingerprint) ||
	    (view_precision_um(&v->p, lod) && t.quantum_um != view_precision_um(&v->p, lod))) {
		view__report(v, "chunk %d/%" PRId32 "/%" PRId32 " (lod/cx/cz): wrong "
			     "tile: header says seed %" PRIu64 ", chunk %u/%" PRId32
			     "/%" PRId32 ", chunk size %lu, generator %016" PRIx64
			     ", quantum %" PRIu32 " um",
			     lod, cx, cz, t.seed, t.lod, t.cx, t.cz,
			     1ul << t.chunk_log2, t.fingerprint, t.quantum_um);
		tile_release(&t);
		return;
	}
	if (v->p.local && t.edit_seq != view__local_version(v, cx, cz)) {
		view__report(v, "chunk %d/%" PRId32 "/%" PRId32 " (lod/cx/cz): the tile's "
			     "edit_seq is %" PRIu64 ", GET /hashes says version %" PRIu64,
			     lod, cx, cz, t.edit_seq, view__local_version(v, cx, cz));
		tile_release(&t);
		return;
	}
	v->st.tiles++;
	v->st.material_tiles += t.material != NULL;
	v->st.bytes_decoded += len;
	e = view__find(v, cx, cz);
	if (!e || e->want != lod) {
		v->st.stale++;
		tile_release(&t);
		return;
	}
	if (!(tmp = malloc(t.side * sizeof(*tmp)))) {
		view__report(v, "chunk %d/%" PRId32 "/%" PRId32 ": out of memory",
			     lod, cx, cz);
		tile_release(&t);
		return;
	}
	edge_hashes(&t, e->edge, tmp);
	free(tmp);
	tile_release(&e->t);
	if (v->p.keep_heights)
		e->t = t;
	else
		tile_release(&t);
	e->lod = (int8_t)lod;
	/* local mode: /hashes says when a tile is stale, not its max-age */
	e->fresh_until = v->p.local ? UINT64_MAX : fresh_until(v, max_age);
	snprintf(e->etag, sizeof(e->etag), "%s",
		 etag && strlen(etag) < sizeof(e->etag) ? etag : "");
	seams_of(v, e);
}

/* ---- requests ---- */

/* The layers a view asks for: the material layer with the heights when
 * p.materials (a version-2 tile; heights identical to the version-1 one). */
static int add_layers(const struct view *v, char *target, size_t cap)
{
	return v->p.materials ? api_add_layers(target, cap, "height,material")
			      : 0;
}

uint32_t view_precision_um(const struct view_params *p, int lod)
{
	uint32_t um;

	if (lod < 0 || lod >= VIEW_LODS)
		return 0;
	um = p->precision_um[lod];
	return um == TILE_DEFAULT_QUANTUM_UM ? 0 : um;
}

int view_parse_precisions(const char *list, uint32_t out[])
{
	const char *s = list, *end;
	int n = 0;

	if (!list || !*list)
		return ERR_INVAL;
	for (;;) {
		end = strchr(s, ',');
		if (!end)
			end = s + strlen(s);
		if (n >= VIEW_LODS || !(out[n] = tile_precision_um(s, (size_t)(end - s))))
			return ERR_INVAL;
		n++;
		if (!*end)
			break;
		s = end + 1;
	}
	for (; n < VIEW_LODS; n++)
		out[n] = out[n - 1];
	return 0;
}

/* The layers, then ?precision= of lod (none for the canonical heights),
 * then ?format=1, 3 or 5 when asked for. */
static int add_query(const struct view *v, int lod, char *target, size_t cap)
{
	uint32_t um = view_precision_um(&v->p, lod);
	size_t n;
	int rc = add_layers(v, target, cap), w = 0;

	if (rc || (!um && !v->p.format))
		return rc;
	n = strlen(target);
	if (um)
		w = snprintf(target + n, cap - n, "%sprecision=%s", strchr(target, '?') ? "&" : "?",
			     um == 1000000u ? "1m" : um == 500000u ? "50cm" : um == 100000u ?
			     "10cm" : um == 50000u ? "5cm" : "1cm");
	if (w >= 0 && (size_t)w < cap - n && v->p.format)
		w += snprintf(target + n + w, cap - n - (size_t)w, "%sformat=%d",
			      strchr(target, '?') ? "&" : "?", v->p.format);
	if (w < 0 || (size_t)w >= cap - n) {
		target[n] = 0;
		return ERR_TOOBIG;
	}
	return 0;
}

static void on_tile(void *arg, struct hclient_resp *r);
static void on_batch(void *arg, struct hclient_resp *r);

static int send_req(struct view *v, struct vreq *q, const char *target,
		    const char *inm)
{
	int rc = hclient_get(v->hc, target, inm, q->batch ? on_batch : on_tile,
			     q);

	if (rc) {
		view__report(v, "request %s: %s", target, err_str(rc));
		free(q);
		return rc;
	}
	v->outstanding++;
	v->st.requests++;
	v->st.batches += q->batch;
	v->st.revalidations += q->reval;
	return 0;
}

/* GET one tile of e at its wanted LOD (conditional when reval). */
long view__single(struct view *v, struct entry *e, int reval)
{
	struct vreq *q = malloc(sizeof(*q));
	char target[512];

	if (!q)
		return ERR_NOMEM;
	*q = (struct vreq){ v, e->cx, e->cz, e->cx, e->cz, (uint8_t)e->want,
			    0, (uint8_t)reval };
	if (api_tile_path(target, sizeof(target), v->p.seed, v->p.gen,
			  e->want, e->cx, e->cz) ||
	    add_query(v, e->want, target, sizeof(target))) {
		free(q);
		return ERR_INVAL;
	}
	if (send_req(v, q, target, reval ? e->etag : NULL))
		return 0;
	e->inflight = e->want;
	return 1;
}

static int by_row(const void *a, const void *b)
{
	const struct ring_chunk *x = a, *y = b;

	if (x->lod != y->lod)
		return x->lod < y->lod ? -1 : 1;
	if (x->cz != y->cz)
		return x->cz < y->cz ? -1 : 1;
	return (x->cx > y->cx) - (x->cx < y->cx);
}

static long batch(struct view *v, int lod, int32_t cz, int32_t cx0,
		  int32_t cx1)
{
	struct vreq *q = malloc(sizeof(*q));
	char target[512];

	if (!q)
		return ERR_NOMEM;
	*q = (struct vreq){ v, cx0, cz, cx1, cz, (uint8_t)lod, 1, 0 };
	if (api_batch_path(target, sizeof(target), v->p.seed, v->p.gen, lod,
			   cx0, cz, cx1, cz) ||
	    add_query(v, lod, target, sizeof(target))) {
		free(q);
		return ERR_INVAL;
	}
	if (send_req(v, q, target, NULL))
		return 0;
	for (int64_t cx = cx0; cx <= cx1; cx++)
		view__find(v, cx, cz)->inflight = (int8_t)lod;
	return 1;
}

/*
 * The far chunks (n of them): the one place that chooses between the
 * batch endpoint and single tiles. Chunks are grouped by LOD into runs
 * along rows, at most BATCH_MAX per request; a lone chunk, or any chunk
 * once the server has shown it has no batch endpoint, goes alone.
 */
static long request_far(struct view *v, struct ring_chunk *far, size_t n)
{
	long sent = 0, rc;
	size_t k = 0;

	qsort(far, n, sizeof(*far), by_row);
	while (k < n) {
		size_t m = 1;

		while (k + m < n && m < BATCH_MAX && far[k + m].lod == far[k].lod &&
		       far[k + m].cz == far[k].cz &&
		       far[k + m].cx == far[k].cx + (int64_t)m)
			m++;
		if (m == 1 || v->batch_off) {
			for (size_t j = k; j < k + m; j++)
				if ((rc = view__single(v, view__find(v, far[j].cx, far[j].cz),
						       0)) < 0)
					return rc;
				else
					sent += rc;
		} else if ((rc = batch(v, far[k].lod, far[k].cz, far[k].cx,
				       far[k + m - 1].cx)) < 0) {
			return rc;
		} else {
			sent += rc;
		}
		k += m;
	}
	return sent;
}

/* Common bookkeeping of an answer; 1 when the caller should go on. */
int view__answered(struct view *v, struct vreq *q, struct hclient_resp *r,
		   const char *what)
{
	char text[200];

	assert(v->outstanding > 0);
	v->outstanding--;
	if (r->err && !r->status && strcmp(r->detail, "cancelled") == 0) {
		v->st.cancelled++;
		return 0;
	}
	if (v->h.response)
		v->h.response(v->h.arg, v, r);
	v->st.bytes_wire += r->wire_len;
	v->st.hits += r->xcache == HCLIENT_XCACHE_HIT;
	v->st.misses += r->xcache == HCLIENT_XCACHE_MISS;
	if (!r->status) {
		view__report(v, "%s: %s", what, r->detail);
		return 0;
	}
	v->st.ok += r->status == 200;
	v->st.not_modified += r->status == 304;
	if (r->status == 304 && !q->batch && q->reval)
		return 1;
	if (r->status == 404 && q->batch)
		return 1;
	if (r->status != 200) {
		api_error_text(r->body, r->body_len, text, sizeof(text));
		view__report(v, "%s: HTTP %d%s%s", what, r->status, text[0] ? ": " : "",
			     text);
		return 0;
	}
	if (r->err) {
		view__report(v, "%s: corrupt tile: %s", what,
			     r->detail ? r->detail : err_str(r->err));
		return 0;
	}
	return 1;
}

static void on_tile(void *arg, struct hclient_resp *r)
{
	struct vreq *q = arg;
	struct view *v = q->v;
	struct entry *e;
	char what[96];

	snprintf(what, sizeof(what), "chunk %d/%" PRId32 "/%" PRId32
		 " (lod/cx/cz)", q->lod, q->cx0, q->cz0);
	/* answered, well or not: a failed chunk is asked again next update */
	if ((e = view__find(v, q->cx0, q->cz0)) != NULL && e->inflight == q->lod)
		e->inflight = -1;
	if (view__answered(v, q, r, what)) {
		if (r->status != 304)
			view__accept_tile(v, q->cx0, q->cz0, q->lod, r->body,
					  r->body_len, r->etag, r->max_age);
		else if (e && e->lod == q->lod)
			e->fresh_until = fresh_until(v, r->max_age);
	}
	free(q);
}

/* The batch did not come as a bundle: ask for its chunks one by one. */
static void batch_fallback(struct view *v, const struct vreq *q)
{
	v->batch_off = 1;
	v->st.batch_fallbacks++;
	for (int64_t cx = q->cx0; cx <= q->cx1; cx++) {
		struct entry *e = view__find(v, cx, q->cz0);

		if (e && e->want == q->lod && e->lod != q->lod &&
		    e->inflight != q->lod)
			view__single(v, e, 0);
	}
}

static void unpack(struct view *v, const struct vreq *q, struct hclient_resp *r,
		   const char *what)
{
	struct api_bundle_entry ent[BATCH_MAX];
	char seen[BATCH_MAX] = { 0 }, etag[40];
	size_t n, want = (size_t)((int64_t)q->cx1 - q->cx0 + 1);
	int rc = api_bundle_parse(r->body, r->body_len, ent, BATCH_MAX, &n);

	if (rc == ERR_MAGIC || rc == ERR_VERSION) {
		batch_fallback(v, q);
		return;
	}
	if (rc) {
		view__report(v, "%s: corrupt bundle: %s", what, err_str(rc));
		return;
	}
	for (size_t k = 0; k < n; k++) {
		int64_t i = (int64_t)ent[k].cx - q->cx0;

		if (ent[k].cz != q->cz0 || i < 0 || (size_t)i >= want || seen[i]) {
			view__report(v, "%s: bundle holds an unexpected chunk %" PRId32
				     "/%" PRId32, what, ent[k].cx, ent[k].cz);
			continue;
		}
		seen[i] = 1;
		/* the ETag a single tile would carry with zstd (tile-format.md) */
		snprintf(etag, sizeof(etag), "\"%016" PRIx64 "-z\"",
			 ent[k].len >= TILE_HEADER_SIZE ?
			 tile_checksum(ent[k].tile) : 0);
		view__accept_tile(v, ent[k].cx, ent[k].cz, q->lod, ent[k].tile,
				  ent[k].len, etag, r->max_age);
	}
	for (size_t i = 0; i < want; i++)
		if (!seen[i])
			view__report(v, "%s: bundle lacks chunk %" PRId64 "/%" PRId32,
				     what, q->cx0 + (int64_t)i, q->cz0);
}

static void on_batch(void *arg, struct hclient_resp *r)
{
	struct vreq *q = arg;
	struct view *v = q->v;
	char what[128];

	snprintf(what, sizeof(what), "batch lod %d cx %" PRId32 "..%" PRId32
		 " cz %" PRId32, q->lod, q->cx0, q->cx1, q->cz0);
	for (int64_t cx = q->cx0; cx <= q->cx1; cx++) {
		struct entry *e = view__find(v, cx, q->cz0);

		if (e && e->inflight == q->lod)
			e->inflight = -1;
	}
	if (view__answered(v, q, r, what)) {
		if (r->status == 404)
			batch_fallback(v, q);
		else
			unpack(v, q, r, what);
	}
	free(q);
}
/* ---- updates ---- */

static void evict(struct view *v, struct entry *e)
{
	if (e->lod >= 0)
		v->st.dropped++;
	tile_release(&e->t);
	memset(e, 0, sizeof(*e));
}

/* Claim the entries of the listed chunks; drop the ones no longer listed. */
static void claim(struct view *v, const struct ring_chunk *list, size_t n)
{
	v->mark++;
	for (size_t k = 0; k < n; k++) {
		struct entry *e = slot(v, list[k].cx, list[k].cz);

		if (e->used && (e->cx != list[k].cx || e->cz != list[k].cz))
			evict(v, e);
		if (!e->used) {
			e->used = 1;
			e->cx = list[k].cx;
			e->cz = list[k].cz;
			e->lod = e->inflight = -1;
			e->reads = UINT64_MAX;
		}
		e->want = (int8_t)list[k].lod;
		e->mark = v->mark;
	}
	for (size_t k = 0; k < (size_t)v->w * v->w; k++)
		if (v->e[k].used && v->e[k].mark != v->mark)
			evict(v, &v->e[k]);
}

long view_update(struct view *v, double x, double z, uint64_t now_ms)
{
	long n = ring_list(&v->p.ring, x, z, v->list, (size_t)v->w * v->w);
	long sent = 0, rc;
	size_t nfar = 0;

	if (n < 0)
		return n;
	v->now = now_ms;
	claim(v, v->list, (size_t)n);
	v->nlist = (size_t)n;
	if (v->p.local)
		return view__local_update(v);
	for (long k = 0; k < n; k++) {
		struct entry *e = slot(v, v->list[k].cx, v->list[k].cz);

		rc = 0;
		if (e->lod == e->want) {
			if (now_ms >= e->fresh_until && e->inflight != e->want &&
			    e->etag[0])
				rc = view__single(v, e, 1);
		} else if (e->inflight != e->want) {
			if (v->p.batch_lod >= 0 && e->want >= v->p.batch_lod)
				v->far[nfar++] = v->list[k];
			else
				rc = view__single(v, e, 0);
		}
		if (rc < 0)
			return rc;
		sent += rc;
	}
	if (nfar) {
		if ((rc = request_far(v, v->far, nfar)) < 0)
			return rc;
		sent += rc;
	}
	return sent;
}

/* ---- queries ---- */

size_t view_outstanding(const struct view *v)
{
	return v->outstanding;
}

const struct view_stats *view_stats(const struct view *v)
{
	return &v->st;
}

size_t view_loaded(const struct view *v, size_t *counts, size_t n)
{
	size_t missing = 0;

	memset(counts, 0, n * sizeof(*counts));
	for (size_t k = 0; k < (size_t)v->w * v->w; k++) {
		const struct entry *e = &v->e[k];

		if (!e->used)
			continue;
		if (e->lod >= 0 && (size_t)e->lod < n)
			counts[e->lod]++;
		missing += e->lod != e->want;
	}
	return missing;
}

int view_finest_lod(const struct view *v)
{
	int best = -1;

	for (size_t k = 0; k < (size_t)v->w * v->w; k++)
		if (v->e[k].used && v->e[k].lod >= 0 &&
		    (best < 0 || v->e[k].lod < best))
			best = v->e[k].lod;
	return best;
}

/*
 * The kept tile holding world (x, z), the sample (*i, *j) at the north-west
 * corner of the cell around the point (i, j <= side - 2) and the point's
 * offsets (*u, *w) inside that cell, 0..1 (a little beyond at the far
 * border). NULL when the chunk holds no kept tile.
 */
static const struct tile *cell(const struct view *v, double x, double z,
			       uint32_t *i, uint32_t *j, double *u, double *w)
{
	double size = (double)(1u << v->p.ring.chunk_log2);
	double fx = floor(x / size), fz = floor(z / size);
	const struct entry *e;
	const struct tile *t;
	uint32_t s;

	if (!(fx >= INT32_MIN && fx <= INT32_MAX && fz >= INT32_MIN &&
	      fz <= INT32_MAX))
		return NULL;
	e = view__find(v, (int64_t)fx, (int64_t)fz);
	if (!e || e->lod < 0 || !e->t.h)
		return NULL;
	t = &e->t;
	s = t->side;
	*u = (x - fx * size) / (double)(1u << t->lod);
	*w = (z - fz * size) / (double)(1u << t->lod);
	*i = *u <= 0 ? 0 : *u >= s - 1 ? s - 2 : (uint32_t)*u;
	*j = *w <= 0 ? 0 : *w >= s - 1 ? s - 2 : (uint32_t)*w;
	*u -= *i;
	*w -= *j;
	return t;
}

int view_height(const struct view *v, double x, double z, double *h_m)
{
	const struct tile *t;
	uint32_t i, j;
	double u, w, a, b;

	if (!(t = cell(v, x, z, &i, &j, &u, &w)))
		return ERR_NOTFOUND;
	a = tile_height_m(t, i, j) * (1 - u) + tile_height_m(t, i + 1, j) * u;
	b = tile_height_m(t, i, j + 1) * (1 - u) +
	    tile_height_m(t, i + 1, j + 1) * u;
	*h_m = a * (1 - w) + b * w;
	return 0;
}

int view_materials(const struct view *v, double x, double z, uint8_t id[4],
		   double wt[4])
{
	const struct tile *t;
	uint32_t i, j;
	double u, w;
	size_t k;

	if (!(t = cell(v, x, z, &i, &j, &u, &w)) || !t->material)
		return ERR_NOTFOUND;
	k = (size_t)j * t->side + i;
	id[0] = t->material[k];
	id[1] = t->material[k + 1];
	id[2] = t->material[k + t->side];
	id[3] = t->material[k + t->side + 1];
	wt[0] = (1 - u) * (1 - w);
	wt[1] = u * (1 - w);
	wt[2] = (1 - u) * w;
	wt[3] = u * w;
	return 0;
}

/* ---- life ---- */

int view_create(struct hclient *hc, const struct view_params *p,
		const struct view_hooks *h, struct view **out)
{
	struct view *v;
	size_t n;

	if (!hc || !p || !p->seed || !out || ring_check(&p->ring) ||
	    p->batch_lod > TILE_MAX_CHUNK_LOG2)
		return ERR_INVAL;
	if (!(v = calloc(1, sizeof(*v))))
		return ERR_NOMEM;
	v->hc = hc;
	v->p = *p;
	if (h)
		v->h = *h;
	v->w = ring_span(&p->ring);
	n = (size_t)v->w * v->w;
	v->e = calloc(n, sizeof(*v->e));
	v->list = calloc(n, sizeof(*v->list));
	v->far = calloc(n, sizeof(*v->far));
	if (!v->e || !v->list || !v->far || (p->local && terrain_work_create(&v->work))) {
		view_destroy(v);
		return ERR_NOMEM;
	}
	*out = v;
	return 0;
}

void view_destroy(struct view *v)
{
	if (!v)
		return;
	assert(v->outstanding == 0);
	for (size_t k = 0; v->e && k < (size_t)v->w * v->w; k++)
		tile_release(&v->e[k].t);
	free(v->e);
	free(v->list);
	free(v->far);
	terrain_work_destroy(v->work);
	free(v->gen);
	free(v->edited);
	free(v);
}
