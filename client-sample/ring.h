/*
 * ring.h - which chunks a player needs, and at which level of detail.
 *
 * A player at world (x, z) keeps loaded every chunk that overlaps the
 * square [x - R, x + R) x [z - R, z + R) (it holds the circle of radius R
 * and is what a square map image shows). Each chunk gets its LOD from the
 * distance d between its centre and the player:
 *
 *   LOD(d) = 0                              when d < d0
 *          = min(floor(log2(d / d0)), Lmax) otherwise
 *
 * capped by the generator's max LOD too. Chunks are listed ring by ring
 * (Chebyshev distance in chunks from the player's chunk), nearest first
 * within a ring, which is the order a streaming client should ask in.
 * Pure code: no I/O, no globals; view.c does the fetching.
 */
#ifndef RING_H
#define RING_H

#include <stddef.h>
#include <stdint.h>

struct ring_params {
	int chunk_log2; /* chunk side is 2^chunk_log2 m (8: 256 m) */
	int max_lod;    /* the generator's largest LOD (8) */
	double d0;      /* LOD 0 distance in metres (256) */
	int lmax;       /* LOD cap (6) */
	double radius;  /* half the side of the square in metres (1024) */
};

/* A chunk to load: coordinates, LOD, ring and centre distance. */
struct ring_chunk {
	int32_t cx, cz;
	uint8_t lod;
	uint32_t ring;
	double d;
};

/* Inclusive chunk range of a square. */
struct ring_rect {
	int32_t cx0, cz0, cx1, cz1;
};

/* Check p: chunk_log2 4..12, max_lod and lmax 0..chunk_log2, d0 and
 * radius positive and finite. Returns 0 or ERR_INVAL. */
int ring_check(const struct ring_params *p);

/* LOD for centre distance d in metres (the rule above). */
int ring_lod(const struct ring_params *p, double d);

/*
 * The chunks overlapping [x0, x1) x [z0, z1) into *r. Returns 0, or
 * ERR_RANGE when a chunk coordinate would leave int32 (or the bounds are
 * not finite and ordered).
 */
int ring_rect_of(const struct ring_params *p, double x0, double z0,
		 double x1, double z1, struct ring_rect *r);

/* The most chunks along one side of any player's square: the size of a
 * window that always holds a player's chunks. */
uint32_t ring_span(const struct ring_params *p);

/*
 * List the chunks of the square around (x, z) into out (cap entries, at
 * least ring_span()^2), sorted by ring, then distance, then cz, cx.
 * Returns the count, or a negative ERR_RANGE / ERR_INVAL.
 */
long ring_list(const struct ring_params *p, double x, double z,
	       struct ring_chunk *out, size_t cap);

#endif
