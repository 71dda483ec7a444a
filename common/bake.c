/*
 * bake.c - applying baked chunk deltas and the edits after them (see
 * bake.h).
 */
#include "bake.h"

#include <stdlib.h>
#include <string.h>

#include "edit.h"
#include "err.h"

size_t bake_side(int chunk_log2)
{
	return ((size_t)1 << chunk_log2) + 1;
}

/* The first and one-past-last block index i (of w) whose position
 * x0 + i * step lies in [lo, hi]. */
static void index_range(int64_t x0, int64_t step, uint32_t w, int64_t lo, int64_t hi,
			uint32_t *i0, uint32_t *i1)
{
	int64_t a = lo <= x0 ? 0 : (lo - x0 + step - 1) / step;
	int64_t b = hi < x0 ? -1 : (hi - x0) / step;

	if (b > (int64_t)w - 1)
		b = (int64_t)w - 1;
	*i0 = (uint32_t)(a > b ? 0 : a);
	*i1 = (uint32_t)(a > b ? 0 : b + 1);
}

/* What one bake_apply() call works on. */
struct pass {
	int32_t *h;
	uint8_t *done;               /* per sample: a chunk has applied it */
	int64_t x0, z0, step;
	uint32_t w;
	int lod;
	uint32_t quantum_um;
};

/*
 * Give the samples of [i0, i1) x [j0, j1) (all in c's closed square) that
 * no chunk has taken yet c's delta and later edits. The edits run over a
 * copy of the rectangle, of which only those samples are kept.
 */
static int apply_chunk(const struct pass *a, const struct bake_chunk *c, int chunk_log2,
		       uint32_t i0, uint32_t i1, uint32_t j0, uint32_t j1)
{
	int64_t size = INT64_C(1) << chunk_log2;
	int64_t bx = (int64_t)c->cx * size, bz = (int64_t)c->cz * size;
	size_t side = bake_side(chunk_log2), sw = i1 - i0, sh = j1 - j0;
	int32_t *sub = NULL;
	uint32_t i, j;

	if (c->n) {
		if (!(sub = malloc(sw * sh * sizeof(*sub))))
			return ERR_NOMEM;
		for (j = j0; j < j1; j++)
			memcpy(sub + (j - j0) * sw, a->h + (size_t)j * a->w + i0, sw * sizeof(*sub));
	}
	for (j = j0; j < j1; j++) {
		const int32_t *row = c->delta ?
			c->delta + (size_t)(a->z0 + j * a->step - bz) * side : NULL;

		for (i = i0; i < i1; i++) {
			size_t at = (size_t)j * a->w + i;
			int32_t d = row ? row[a->x0 + i * a->step - bx] : 0;

			if (a->done[at])
				continue;
			if (sub)
				sub[(j - j0) * sw + (i - i0)] = (int32_t)((int64_t)a->h[at] + d);
			else
				a->h[at] = (int32_t)((int64_t)a->h[at] + d);
		}
	}
	if (sub)
		edit_apply_block(sub, a->x0 + i0 * a->step, a->z0 + j0 * a->step, a->lod,
				 (uint32_t)sw, (uint32_t)sh, a->quantum_um, c->edits, c->n);
	for (j = j0; j < j1; j++)
		for (i = i0; i < i1; i++) {
			size_t at = (size_t)j * a->w + i;

			if (!a->done[at] && sub)
				a->h[at] = sub[(j - j0) * sw + (i - i0)];
			a->done[at] = 1;
		}
	free(sub);
	return 0;
}

/* Whether chunk c's closed square holds the whole block (a tile of it). */
static int covers(const struct bake_layer *l, const struct bake_chunk *c, int64_t x0,
		  int64_t z0, int64_t step, uint32_t w, uint32_t hgt)
{
	int64_t size = INT64_C(1) << l->chunk_log2;
	int64_t bx = (int64_t)c->cx * size, bz = (int64_t)c->cz * size;

	return x0 >= bx && z0 >= bz && x0 + (int64_t)(w - 1) * step <= bx + size &&
	       z0 + (int64_t)(hgt - 1) * step <= bz + size;
}

/* The common case, one chunk holding every sample: its delta, then its
 * edits in place. */
static int apply_whole(const struct pass *a, const struct bake_chunk *c, int chunk_log2,
		       uint32_t hgt)
{
	int64_t size = INT64_C(1) << chunk_log2;
	int64_t ox = a->x0 - (int64_t)c->cx * size, oz = a->z0 - (int64_t)c->cz * size;
	size_t side = bake_side(chunk_log2);
	uint32_t i, j;

	if (c->delta)
		for (j = 0; j < hgt; j++) {
			const int32_t *row = c->delta + (size_t)(oz + j * a->step) * side + ox;
			int32_t *out = a->h + (size_t)j * a->w;

			for (i = 0; i < a->w; i++)
				out[i] = (int32_t)((int64_t)out[i] + row[(size_t)i * (size_t)a->step]);
		}
	edit_apply_block(a->h, a->x0, a->z0, a->lod, a->w, hgt, a->quantum_um, c->edits, c->n);
	return 0;
}

int bake_apply(const struct bake_layer *l, int32_t *h, int64_t x0, int64_t z0, int lod,
	       uint32_t w, uint32_t hgt, uint32_t quantum_um)
{
	int64_t size = INT64_C(1) << l->chunk_log2;
	struct pass a = { h, NULL, x0, z0, INT64_C(1) << lod, w, lod, quantum_um };
	size_t k;
	int rc = 0;

	if (!l->nchunks)
		return 0;
	if (covers(l, &l->chunks[0], x0, z0, a.step, w, hgt))
		return apply_whole(&a, &l->chunks[0], l->chunk_log2, hgt);
	if (!(a.done = calloc((size_t)w * hgt, 1)))
		return ERR_NOMEM;
	for (k = 0; !rc && k < l->nchunks; k++) {
		const struct bake_chunk *c = &l->chunks[k];
		int64_t bx = (int64_t)c->cx * size, bz = (int64_t)c->cz * size;
		uint32_t i0, i1, j0, j1;

		/* the samples in the chunk's closed square */
		index_range(x0, a.step, w, bx, bx + size, &i0, &i1);
		index_range(z0, a.step, hgt, bz, bz + size, &j0, &j1);
		if (i0 < i1 && j0 < j1)
			rc = apply_chunk(&a, c, l->chunk_log2, i0, i1, j0, j1);
	}
	free(a.done);
	return rc;
}

int bake_delta(const int32_t *edited, const int32_t *base, size_t n, int32_t *delta)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int64_t d = (int64_t)edited[i] - base[i];

		if (d < INT32_MIN || d > INT32_MAX)
			return ERR_RANGE;
		delta[i] = (int32_t)d;
	}
	return 0;
}

void bake_add(int32_t *h, const int32_t *delta, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h[i] = (int32_t)((int64_t)h[i] + delta[i]);
}
