/*
 * pipeline_int.h - what the pipeline's two files share: pipeline_eval.c
 * (a preset's node tree evaluated one row at a time) and pipeline.c
 * (regions, height grids, served tiles and workspaces, pipeline.h). The
 * evaluation context and the row it evaluates, and the evaluator's entry
 * points (pipeline__*). Not installed. Pure code: no I/O, no globals.
 */
#ifndef PIPELINE_INT_H
#define PIPELINE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "fbm.h"
#include "node.h"

struct preset;

#define GRID_ROWS 4   /* Catmull-Rom needs rows gz - 1 .. gz + 2 */

/* Exact grid rows of one quantity (a node's output or a warp field). */
struct grid {
	int64_t tag[GRID_ROWS];   /* grid row index in each slot */
	int used[GRID_ROWS];
	float *row[GRID_ROWS];
	int64_t gx0;              /* grid column of row[.][0] */
	size_t m;                 /* values per row */
};

struct ctx {
	struct fbm fa[NODE_MAX_COUNT];   /* FBM: its sum; WARP: x field */
	struct fbm fb[NODE_MAX_COUNT];   /* WARP: z field */
	float *row[NODE_MAX_COUNT];      /* each node's output */
	float *wx[NODE_MAX_COUNT];       /* WARP: displaced offsets */
	float *wz[NODE_MAX_COUNT];
	struct grid *grid[NODE_MAX_COUNT]; /* gridded nodes: [0] output or x field,
					      [1] z field */
	float *tmp;                      /* column-interpolated grid values */
	struct fbm_scratch s;
	size_t cap;                      /* length of every buffer */
	uint64_t seed;                   /* the world's */
	float *gcells;                   /* gully cell points, per octave */
	size_t gcells_per_octave;
};

/* World positions of a row: x = x0 + i * step, z; plus optional offsets. */
struct pos {
	int64_t x0, step, z;
	const float *dx, *dz;
	size_t n;
};

/* Clamps written one bound at a time, the forms x86 min/max compute, so
 * loops that call them vectorise. */
static inline float clamp1(float v)
{
	v = v > 1.0f ? 1.0f : v;
	return v < -1.0f ? -1.0f : v;
}

/* a / b rounded towards minus infinity (b != 0). */
static inline int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The row of node nd at the positions p, in c->row[nd->index] (valid until
 * the next row of that node). */
const float *pipeline__eval(struct ctx *c, const struct node *nd, const struct pos *p);

/* Free c and everything it holds; NULL does nothing. */
void pipeline__ctx_release(struct ctx *c);

/* The context for rows of up to side samples of world (p, seed), kept in
 * *slot between calls (pipeline_eval.c says what is reused); NULL when out
 * of memory. */
struct ctx *pipeline__ctx_prepare(struct ctx **slot, const struct preset *p, uint64_t seed,
				  size_t side, size_t metres);

#endif
