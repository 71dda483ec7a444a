/*
 * bake.h - edits folded into per-chunk height deltas, so that a tile's
 * cost does not grow with its chunk's history.
 *
 * Edits are pointwise: each sample's edited height is a function of its
 * position and its unedited height, applied edit after edit in sequence
 * order. So the edits of a chunk up to some sequence number fold into one
 * delta over the chunk's LOD-0 samples (edited minus unedited, in quanta),
 * and every LOD's sample, being a LOD-0 sample too, takes its share of
 * the delta exactly; the edits after it are applied on top as before. A
 * baked block is byte-identical to one with every edit applied in order.
 *
 * A sample takes the delta and later edits of the first chunk of the
 * layer whose closed square holds it: every edit that reaches a sample
 * touches every chunk whose closed square holds it (docs/edits.md,
 * coverage), so any such chunk gives the same height. A layer must list
 * every chunk with edits whose closed square holds one of the block's
 * samples (the server lists the 3 x 3 chunks around a tile). Pure.
 */
#ifndef BAKE_H
#define BAKE_H

#include <stddef.h>
#include <stdint.h>

struct edit;

/* One chunk's edits: a delta for those up to its bake, then the rest. */
struct bake_chunk {
	int32_t cx, cz;
	const int32_t *delta;      /* (2^chunk_log2 + 1)^2 LOD-0 quanta, rows
				      of z; NULL: nothing baked */
	const struct edit *edits;  /* edits after the delta, in order */
	size_t n;
};

/* The edits of the chunks around a block (chunks absent have none). */
struct bake_layer {
	int chunk_log2;
	const struct bake_chunk *chunks;
	size_t nchunks;
};

/* Samples per side of a delta for chunks of 2^chunk_log2. */
size_t bake_side(int chunk_log2);

/*
 * Apply l to the w x hgt block h of the LOD-lod lattice at world (x0, z0)
 * (multiples of 2^lod), as edit_apply_block() applies an edit list:
 * every sample gets one holding chunk's delta, then its later edits.
 * Returns 0 or ERR_NOMEM (h is then partly edited: discard it).
 */
int bake_apply(const struct bake_layer *l, int32_t *h, int64_t x0, int64_t z0, int lod,
		uint32_t w, uint32_t hgt, uint32_t quantum_um);

/*
 * delta = edited - base over n samples. Returns 0, or ERR_RANGE when a
 * difference does not fit int32 (the chunk then stays unbaked).
 */
int bake_delta(const int32_t *edited, const int32_t *base, size_t n, int32_t *delta);

/* edited = base + delta (the inverse; never overflows for a delta that
 * bake_delta() made from these base heights). */
void bake_add(int32_t *h, const int32_t *delta, size_t n);

#endif
