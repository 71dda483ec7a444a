/*
 * pipeline_eval.c - a preset's node tree evaluated, one row of a tile at a
 * time (preset.h; pipeline.c turns the rows into heights and tiles).
 *
 * The tile is generated row by row (one z at a time): every node writes one
 * row of values in [-1, 1] into its own buffer, children first. A warp node
 * evaluates its two warp fields on the row and hands its source the
 * displaced positions. The root's row is mapped to [min, max] metres and
 * rounded to the quantum (pipeline.c). Every step is a pure function of
 * the sample's world position, so tiles agree on shared edges and LODs
 * nest.
 *
 * A node with a grid (docs/presets.md) is evaluated exactly on the world
 * points that are multiples of g metres, a few grid rows at a time (cached
 * while the tile's rows move through them), and interpolated with
 * Catmull-Rom splines, first down the columns, then along the row. Where
 * every sample is a grid point (step a multiple of g) the interpolation is
 * the identity, so the node is evaluated directly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"
#include "pipeline_int.h"
#include "preset.h"
#include "simd.h"

static inline float smooth01(float t)
{
	t = t > 1.0f ? 1.0f : t;
	t = t < 0.0f ? 0.0f : t;
	return t * t * (3.0f - 2.0f * t);
}

static float terrace(float v, float steps, float smoothness)
{
	float u = (v + 1.0f) * 0.5f * steps;
	float k = (float)(int)u;             /* u >= 0: truncation is floor */
	float f = u - k, edge = 1.0f - smoothness;

	f = (smoothness <= 0.0f || f < edge) ? 0.0f : smooth01((f - edge) / smoothness);
	return (k + f) / steps * 2.0f - 1.0f;
}

/* A Catmull-Rom segment between p1 (t = 0, exactly) and p2 (t = 1). */
struct cubic {
	float a, b, c, d;
};

static inline struct cubic cubic_of(float p0, float p1, float p2, float p3)
{
	struct cubic k = {
		-0.5f * p0 + 1.5f * p1 - 1.5f * p2 + 0.5f * p3,
		p0 - 2.5f * p1 + 2.0f * p2 - 0.5f * p3,
		0.5f * (p2 - p0),
		p1,
	};
	return k;
}

/* The segment between c[1] and c[2], from the four values c[0..3]. */
static inline struct cubic cell_cubic(const float *c)
{
	return cubic_of(c[0], c[1], c[2], c[3]);
}

static inline float cubic_at(struct cubic k, float t)
{
	return ((k.a * t + k.b) * t + k.c) * t + k.d;
}

/*
 * At a knot (t = 0) a spline is its grid value: cubic_at(k, 0) is k.d = p1
 * but for the sign of a zero (-0 + 0 = +0), and a signed zero cannot reach
 * an integer height (every later step adds, scales, clamps or compares,
 * and quantise() rounds -0 and +0 alike). So knots take the grid value
 * without evaluating the cubic; the golden tile hashes hold.
 */

static void eval_exact(struct ctx *c, const struct node *nd, const struct pos *p,
		       float *out);

/* Exact values of quantity `which` of nd along grid row gz (cached); the
 * rows lo .. lo + 3 of the current window stay. */
static const float *grid_row(struct ctx *c, const struct node *nd, int which,
			     int64_t gz, int64_t lo, int64_t g)
{
	struct grid *gr = &c->grid[nd->index][which];
	struct pos q = { gr->gx0 * g, g, gz * g, NULL, NULL, gr->m };
	int k, slot = -1;

	for (k = 0; k < GRID_ROWS; k++)
		if (gr->used[k] && gr->tag[k] == gz)
			return gr->row[k];
	for (k = 0; k < GRID_ROWS && slot < 0; k++)
		if (!gr->used[k] || gr->tag[k] < lo || gr->tag[k] >= lo + GRID_ROWS)
			slot = k;
	if (slot < 0)
		slot = 0;   /* cannot happen: 4 slots, 4 rows needed */
	if (nd->type == NODE_WARP)
		fbm_row(which ? &c->fb[nd->index] : &c->fa[nd->index], q.x0, q.step,
			q.z, NULL, NULL, q.n, gr->row[slot], &c->s);
	else
		eval_exact(c, nd, &q, gr->row[slot]);
	gr->tag[slot] = gz;
	gr->used[slot] = 1;
	return gr->row[slot];
}

/*
 * Splines along a row: sample i is off0 + i * step metres right of grid
 * column 1 of v (g = 2^gl, step = 2^k < g, off0 >= 0 a multiple of step).
 * With r = g / step samples a cell and t = off0 / step, sample i is in
 * cell (t + i) / r at u = ((t + i) mod r) / r, exactly. Two samples a cell
 * (LOD 0 on a 2 m grid) go as pairs over whole cells, so the loop
 * vectorises across cells; wider cells go a cell at a time, each cell's
 * cubic computed once.
 */
CLONES
static void along_row(const float *v, int64_t off0, int64_t step, int gl, size_t n,
		      float *out)
{
	int lr = 0;
	size_t r, t = (size_t)(off0 / step), i = 0, k, cnt;
	float inv;

	while ((step << lr) < (INT64_C(1) << gl))
		lr++;
	r = (size_t)1 << lr;
	inv = 1.0f / (float)r;
	if (r == 2) {
		const float *c;
		float *o;

		if (t & 1) {   /* the row starts mid-cell */
			out[0] = clamp1(cubic_at(cell_cubic(v + (t >> 1)), 0.5f));
			i = 1;
		}
		c = v + ((t + i) >> 1);
		o = out + i;
		cnt = (n - i) / 2;
		for (k = 0; k < cnt; k++) {
			o[2 * k] = clamp1(c[k + 1]);   /* at_knot(): the grid point */
			o[2 * k + 1] = clamp1(cubic_at(cell_cubic(c + k), 0.5f));
		}
		i += 2 * cnt;
	}
	for (; i < n; i += cnt) {
		size_t ph = (t + i) & (r - 1);
		struct cubic cu = cell_cubic(v + ((t + i) >> lr));

		cnt = r - ph < n - i ? r - ph : n - i;
		for (k = 0; k < cnt; k++)
			out[i + k] = clamp1(cubic_at(cu, (float)(int32_t)(ph + k) * inv));
	}
}

/* The splines across four grid rows r at t, for m columns. */
CLONES
static void across_rows(const float *const r[GRID_ROWS], float t, size_t m, float *out)
{
	const float *r0 = r[0], *r1 = r[1], *r2 = r[2], *r3 = r[3];
	size_t i;

	if (t == 0.0f) {
		for (i = 0; i < m; i++)
			out[i] = r1[i];   /* at_knot() */
		return;
	}
	for (i = 0; i < m; i++)
		out[i] = cubic_at(cubic_of(r0[i], r1[i], r2[i], r3[i]), t);
}

/* Quantity `which` of a gridded node along an unwarped row with step < g. */
static void grid_eval(struct ctx *c, const struct node *nd, int which,
		      const struct pos *p, float *out)
{
	struct grid *gr = &c->grid[nd->index][which];
	int64_t g = INT64_C(1) << nd->grid_log2;
	int64_t gz = floor_div(p->z, g);
	float t = (float)(p->z - gz * g) / (float)g;   /* exact: g is 2^k <= 256 */
	int64_t gx0 = floor_div(p->x0, g) - 1;
	int64_t off0 = p->x0 - (gx0 + 1) * g;   /* 0 .. g - 1 */
	size_t m = (size_t)((off0 + ((int64_t)p->n - 1) * p->step) / g) + 4;
	const float *r[GRID_ROWS];
	int k;

	if (gr->gx0 != gx0 || gr->m != m) {
		for (k = 0; k < GRID_ROWS; k++)
			gr->used[k] = 0;
		gr->gx0 = gx0;
		gr->m = m;
	}
	for (k = 0; k < GRID_ROWS; k++)
		r[k] = grid_row(c, nd, which, gz - 1 + k, gz - 1, g);
	across_rows(r, t, m, c->tmp);
	along_row(c->tmp, off0, p->step, nd->grid_log2, p->n, out);
}

/* On a grid, unless every sample of the row is a grid point. */
static int gridded(const struct node *nd, const struct pos *p)
{
	return nd->grid_log2 > 0 && (p->step & ((INT64_C(1) << nd->grid_log2) - 1)) != 0;
}

/* w = d + amp * w, d NULL meaning zeros (0 + x, which turns -0 into +0). */
CLONES
static void warp_offsets(const float *d, float amp, size_t n, float *w)
{
	size_t i;

	if (d) {
		for (i = 0; i < n; i++)
			w[i] = d[i] + amp * w[i];
	} else {
		for (i = 0; i < n; i++)
			w[i] = 0.0f + amp * w[i];
	}
}

static void eval_warp(struct ctx *c, const struct node *nd, const struct pos *p,
		      float *out)
{
	float *wx = c->wx[nd->index], *wz = c->wz[nd->index];
	float amp = (float)nd->amplitude;
	struct pos q = { p->x0, p->step, p->z, wx, wz, p->n };
	const float *src;

	if (gridded(nd, p)) {
		grid_eval(c, nd, 0, p, wx);
		grid_eval(c, nd, 1, p, wz);
	} else {
		fbm_row(&c->fa[nd->index], p->x0, p->step, p->z, p->dx, p->dz, p->n, wx, &c->s);
		fbm_row(&c->fb[nd->index], p->x0, p->step, p->z, p->dx, p->dz, p->n, wz, &c->s);
	}
	warp_offsets(p->dx, amp, p->n, wx);
	warp_offsets(p->dz, amp, p->n, wz);
	src = pipeline__eval(c, nd->in[0], &q);
	memcpy(out, src, p->n * sizeof(*out));
}

static void eval_mix(struct ctx *c, const struct node *nd, const struct pos *p,
		     float *out)
{
	double total = 0;
	size_t i;
	int k;

	for (k = 0; k < nd->n_in; k++)
		total += fabs(nd->weight[k]);
	for (i = 0; i < p->n; i++)
		out[i] = 0.0f;
	for (k = 0; k < nd->n_in; k++) {
		const float *v = pipeline__eval(c, nd->in[k], p);
		float w = (float)(nd->weight[k] / total);

		for (i = 0; i < p->n; i++)
			out[i] += w * v[i];
	}
}

/* Samples from .. to - 1 of row p. */
static struct pos span(const struct pos *p, size_t from, size_t to)
{
	struct pos q = *p;

	q.x0 = p->x0 + (int64_t)from * p->step;
	q.dx = p->dx ? p->dx + from : NULL;
	q.dz = p->dz ? p->dz + from : NULL;
	q.n = to - from;
	return q;
}

CLONES
static void blend_weights(const float *t, float lo, float inv, size_t n, float *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		s[i] = smooth01((t[i] - lo) * inv);
}

/* out = (1 - s) a + s b, exactly a where s <= 0 and b where s >= 1; s and
 * out may be the same array. */
CLONES
static void blend_rows(const float *s, const float *a, const float *b, size_t n, float *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float w = s[i], m = (1.0f - w) * a[i] + w * b[i];

		out[i] = w <= 0.0f ? a[i] : w >= 1.0f ? b[i] : m;
	}
}

/*
 * (1 - s) a + s b, s = smoothstep(lo, hi, control): exactly a where s is
 * 0 and exactly b where s is 1. Each input is evaluated only over the span
 * of the row from its first to its last sample of nonzero weight (the
 * control field is slow, so a row crosses the band once or twice at
 * most); a sample is a function of its position alone, so a span gives
 * the same values as the whole row. Every sample lies in one span or
 * both, so one span starts the row and one ends it; outside their overlap
 * a sample is a copy from the span it lies in.
 */
static void eval_blend(struct ctx *c, const struct node *nd, const struct pos *p,
		       float *out)
{
	const float *t = pipeline__eval(c, nd->in[2], p), *a, *b;
	size_t n = p->n, a0 = 0, a1 = n, b0 = 0, b1 = n, lo, hi;
	struct pos qa, qb;

	/* s goes into out first: no child writes this node's row */
	blend_weights(t, (float)nd->a, (float)(1.0 / (nd->b - nd->a)), n, out);
	while (a0 < n && out[a0] >= 1.0f)     /* a: s < 1 */
		a0++;
	while (a1 > a0 && out[a1 - 1] >= 1.0f)
		a1--;
	while (b0 < n && out[b0] <= 0.0f)     /* b: s > 0 */
		b0++;
	while (b1 > b0 && out[b1 - 1] <= 0.0f)
		b1--;
	if (b0 == n) {
		memcpy(out, pipeline__eval(c, nd->in[0], p), n * sizeof(*out));
		return;
	}
	if (a0 == n) {
		memcpy(out, pipeline__eval(c, nd->in[1], p), n * sizeof(*out));
		return;
	}
	qa = span(p, a0, a1);
	qb = span(p, b0, b1);
	a = pipeline__eval(c, nd->in[0], &qa);   /* a[i - a0]: sample i of the row */
	b = pipeline__eval(c, nd->in[1], &qb);
	lo = a0 > b0 ? a0 : b0;   /* [lo, hi): both weights */
	hi = a1 < b1 ? a1 : b1;
	hi = hi > lo ? hi : lo;
	memcpy(out, a0 == 0 ? a : b, lo * sizeof(*out));
	blend_rows(out + lo, a + (lo - a0), b + (lo - b0), hi - lo, out + lo);
	if (a1 == n)
		memcpy(out + hi, a + (hi - a0), (n - hi) * sizeof(*out));
	else
		memcpy(out + hi, b + (hi - b0), (n - hi) * sizeof(*out));
}

/* A periodic C1 wave of period 1 in [-1, 1]: a smoothed triangle. */
static inline float wave(float t)
{
	float f = t - floorf(t);
	float tri = 1.0f - 4.0f * fabsf(f - 0.5f);

	return tri * (1.5f - 0.5f * tri * tri);
}

/*
 * Gully cells of one octave along a row: cells of 2^lg metres, each with a
 * hashed point. For the three cell rows around z and the cell columns
 * c0 .. c0 + m - 1, pts[(r * m + k) * 2 + {0, 1}] is the point's offset
 * within its cell, in cells.
 */
struct gully_cells {
	int64_t c0, cz;
	size_t m;
	int lg;
	float *pts;
};

static void gully_cells_fill(struct gully_cells *gc, uint64_t s)
{
	size_t k;
	int r;

	for (r = 0; r < 3; r++)
		for (k = 0; k < gc->m; k++) {
			uint64_t h = fbm_mix64(s ^ fbm_mix64((uint64_t)(gc->c0 + (int64_t)k) *
							     0x9e3779b97f4a7c15ULL +
							     (uint64_t)(gc->cz - 1 + r)));

			gc->pts[(r * gc->m + k) * 2] = (float)(h & 0xffff) * 0x1p-16f;
			gc->pts[(r * gc->m + k) * 2 + 1] = (float)((h >> 16) & 0xffff) * 0x1p-16f;
		}
}

/*
 * One octave of gully noise at world (x, z): around each cell's point a
 * bell-weighted wave runs across the slope (along the unit vector (px, pz)),
 * so its crests and troughs follow the slope downhill. The bell has a
 * radius of one cell, so the 3x3 cells around a sample hold every point
 * that reaches it; normalised by the weight sum (floored so that it stays
 * continuous where few points reach).
 */
static float gully_octave(const struct gully_cells *gc, int64_t x, int64_t z,
			  float px, float pz)
{
	int64_t g = INT64_C(1) << gc->lg;
	int64_t cx = floor_div(x, g);
	float inv = 1.0f / (float)g;
	float fx = (float)(x - cx * g) * inv, fz = (float)(z - gc->cz * g) * inv;
	size_t col = (size_t)(cx - gc->c0);
	float sv = 0.0f, sw = 0.0f;
	int dx, dz;

	for (dz = -1; dz <= 1; dz++)
		for (dx = -1; dx <= 1; dx++) {
			const float *pt = &gc->pts[((size_t)(dz + 1) * gc->m + col + (size_t)dx) * 2];
			float ox = (float)dx + pt[0] - fx, oz = (float)dz + pt[1] - fz;
			float r2 = ox * ox + oz * oz;
			float w = r2 < 1.0f ? (1.0f - r2) * (1.0f - r2) : 0.0f;

			sv += w * wave(ox * px + oz * pz);
			sw += w;
		}
	return sv / (sw > 0.5f ? sw : 0.5f);
}

/* The erosion filter (docs/presets.md): gullies across the slope of a
 * Perlin fBm, faded in with its gradient. */
static void eval_gullies(struct ctx *c, const struct node *nd, const struct pos *p,
			 float *out)
{
	const struct node *src = nd->in[0];
	float *v = c->row[src->index], *gx = c->wx[nd->index], *gz = c->wz[nd->index];
	float full = (float)nd->gully.full_slope, str = (float)nd->gully.strength;
	float ridges = (float)nd->gully.ridges, total = 0.0f;
	struct gully_cells gc[4];
	int lg0 = 0, k;
	size_t i;

	while ((double)(1 << lg0) < nd->gully.wavelength)
		lg0++;
	for (k = 0; k < nd->gully.octaves; k++) {
		int64_t g = INT64_C(1) << (lg0 - k);
		int64_t c1 = floor_div(p->x0 + ((int64_t)p->n - 1) * p->step, g) + 1;

		gc[k].lg = lg0 - k;
		gc[k].c0 = floor_div(p->x0, g) - 1;
		gc[k].cz = floor_div(p->z, g);
		gc[k].m = (size_t)(c1 - gc[k].c0 + 1);
		gc[k].pts = c->gcells + (size_t)k * c->gcells_per_octave;
		gully_cells_fill(&gc[k], fbm_mix64(c->seed ^ fbm_mix64(0x6a11e5ULL +
					(uint64_t)nd->index * 16 + (uint64_t)k)));
		total += 1.0f / (float)(1 << k);
	}
	fbm_row_d(&c->fa[src->index], p->x0, p->step, p->z, NULL, NULL, p->n, v, gx, gz,
		  &c->s);
	for (i = 0; i < p->n; i++) {
		float m = sqrtf(gx[i] * gx[i] + gz[i] * gz[i]);
		float px = m > 0.0f ? -gz[i] / m : 1.0f, pz = m > 0.0f ? gx[i] / m : 0.0f;
		float amp = 1.0f, sum = 0.0f, g;
		int64_t x = p->x0 + (int64_t)i * p->step;

		for (k = 0; k < nd->gully.octaves; k++) {
			sum += amp * gully_octave(&gc[k], x, p->z, px, pz);
			amp *= 0.5f;
		}
		g = sum / total;
		g = g < 0.0f ? g * (1.0f - ridges) : g * ridges;
		out[i] = clamp1(v[i] + str * smooth01(m / full) * g);
	}
}

CLONES
static void scale_bias(const float *a, float scale, float bias, size_t n, float *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = clamp1(a[i] * scale + bias);
}

static void eval_exact(struct ctx *c, const struct node *nd, const struct pos *p,
		       float *out)
{
	const float *a, *b;
	size_t i;

	switch (nd->type) {
	case NODE_FBM:
		fbm_row(&c->fa[nd->index], p->x0, p->step, p->z, p->dx, p->dz, p->n, out,
			&c->s);
		break;
	case NODE_WARP:
		eval_warp(c, nd, p, out);
		break;
	case NODE_MIX:
		eval_mix(c, nd, p, out);
		break;
	case NODE_BLEND:
		eval_blend(c, nd, p, out);
		break;
	case NODE_MUL:
		a = pipeline__eval(c, nd->in[0], p);
		b = pipeline__eval(c, nd->in[1], p);
		for (i = 0; i < p->n; i++)
			out[i] = a[i] * b[i];
		break;
	case NODE_SCALE_BIAS:
		scale_bias(pipeline__eval(c, nd->in[0], p), (float)nd->a, (float)nd->b, p->n, out);
		break;
	case NODE_TERRACE:
		a = pipeline__eval(c, nd->in[0], p);
		for (i = 0; i < p->n; i++)
			out[i] = terrace(a[i], (float)nd->a, (float)nd->b);
		break;
	case NODE_GULLIES:
		eval_gullies(c, nd, p, out);
		break;
	default:
		break;
	}
}

const float *pipeline__eval(struct ctx *c, const struct node *nd, const struct pos *p)
{
	float *out = c->row[nd->index];

	if (nd->type != NODE_WARP && gridded(nd, p))
		grid_eval(c, nd, 0, p, out);
	else
		eval_exact(c, nd, p, out);
	return out;
}

void pipeline__ctx_release(struct ctx *c)
{
	int k, w, r;

	if (!c)
		return;
	for (k = 0; k < NODE_MAX_COUNT; k++) {
		free(c->row[k]);
		free(c->wx[k]);
		free(c->wz[k]);
		for (w = 0; c->grid[k] && w < 2; w++)
			for (r = 0; r < GRID_ROWS; r++)
				free(c->grid[k][w].row[r]);
		free(c->grid[k]);
	}
	free(c->tmp);
	free(c->gcells);
	fbm_scratch_release(&c->s);
	free(c);
}

static int grid_alloc(struct ctx *c, int k)
{
	int w, r, bad = 0;

	c->grid[k] = calloc(2, sizeof(struct grid));
	if (!c->grid[k])
		return 1;
	for (w = 0; w < 2; w++)
		for (r = 0; r < GRID_ROWS; r++) {
			c->grid[k][w].row[r] = malloc(c->cap * sizeof(float));
			bad |= !c->grid[k][w].row[r];
		}
	return bad;
}

/* A row buffer of c, allocated when missing; 1 when out of memory. */
static int row_alloc(const struct ctx *c, float **row)
{
	if (!*row)
		*row = malloc(c->cap * sizeof(float));
	return !*row;
}

/* An empty context whose buffers hold cap values and gcells_per_octave
 * gully floats an octave. */
static struct ctx *ctx_alloc(size_t cap, size_t gcells_per_octave)
{
	struct ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cap = cap;
	c->gcells_per_octave = gcells_per_octave;
	c->gcells = malloc(4 * gcells_per_octave * sizeof(float));
	c->tmp = malloc(cap * sizeof(float));
	if (!c->gcells || !c->tmp || fbm_scratch_init(&c->s, cap)) {
		pipeline__ctx_release(c);
		return NULL;
	}
	return c;
}

/*
 * The context for rows of up to side samples of world (p, seed), in *slot:
 * the one there when its buffers are large enough (reused from an earlier
 * tile, of any preset), else a new one. Buffers hold cap >= side + 4 values
 * (a grid row of a row of n samples at step < g has (n - 1) * step / g + 4
 * <= n + 4 values), rounded up so that rows a few samples wider (a material
 * block) reuse them. metres is the longest row's length, for the gully
 * cells. Everything a node reads is set as a new context would have it:
 * buffer contents are never read before they are written, the fBm state is
 * zeroed then initialised, the grid caches are emptied. NULL when out of
 * memory (*slot is then freed).
 */
struct ctx *pipeline__ctx_prepare(struct ctx **slot, const struct preset *p, uint64_t seed,
				  size_t side, size_t metres)
{
	size_t cap = (side + 4 + 63) & ~(size_t)63;
	/* 3 cell rows of cells >= 2 m over a row of `metres`, 2 floats each */
	size_t gcells = 3 * (metres / 2 + 4) * 2;
	struct ctx *c = *slot;
	int k, w, r, bad = 0;

	if (c && (c->cap < cap || c->gcells_per_octave < gcells)) {
		pipeline__ctx_release(c);
		c = NULL;
	}
	if (!c && !(c = ctx_alloc(cap, gcells))) {
		*slot = NULL;
		return NULL;
	}
	*slot = c;
	c->seed = seed;
	for (k = 0; k < p->n_nodes; k++) {
		const struct node *nd = &p->nodes[k];

		memset(&c->fa[k], 0, sizeof(c->fa[k]));
		memset(&c->fb[k], 0, sizeof(c->fb[k]));
		bad |= row_alloc(c, &c->row[k]);
		if (nd->grid_log2 > 0 && !c->grid[k])
			bad |= grid_alloc(c, k);
		for (w = 0; nd->grid_log2 > 0 && c->grid[k] && w < 2; w++) {
			struct grid *gr = &c->grid[k][w];

			for (r = 0; r < GRID_ROWS; r++) {
				gr->tag[r] = 0;
				gr->used[r] = 0;
			}
			gr->gx0 = 0;
			gr->m = (size_t)-1;
		}
		if (nd->type == NODE_FBM)
			fbm_init(&c->fa[k], &nd->fbm, seed, (uint32_t)k);
		if (nd->type != NODE_WARP && nd->type != NODE_GULLIES)
			continue;
		if (nd->type == NODE_WARP) {
			fbm_init(&c->fa[k], &nd->fbm, seed, (uint32_t)k + 0x10000);
			fbm_init(&c->fb[k], &nd->fbm, seed, (uint32_t)k + 0x20000);
		}
		bad |= row_alloc(c, &c->wx[k]);
		bad |= row_alloc(c, &c->wz[k]);
	}
	if (bad) {
		pipeline__ctx_release(c);
		*slot = NULL;
		return NULL;
	}
	return c;
}
