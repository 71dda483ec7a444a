/*
 * pipeline.c - a preset's node tree evaluated into a tile (preset.h).
 *
 * The tile is generated row by row (one z at a time): every node writes one
 * row of values in [-1, 1] into its own buffer, children first. A warp node
 * evaluates its two warp fields on the row and hands its source the
 * displaced positions. The root's row is mapped to [min, max] metres and
 * rounded to the quantum. Every step is a pure function of the sample's
 * world position, so tiles agree on shared edges and LODs nest.
 */
#include <math.h>
#include <stdlib.h>

#include "err.h"
#include "node.h"
#include "preset.h"
#include "tile.h"

struct ctx {
	struct fbm fa[NODE_MAX_COUNT];   /* FBM: its sum; WARP: x field */
	struct fbm fb[NODE_MAX_COUNT];   /* WARP: z field */
	float *row[NODE_MAX_COUNT];      /* each node's output */
	float *wx[NODE_MAX_COUNT];       /* WARP: displaced offsets */
	float *wz[NODE_MAX_COUNT];
	struct fbm_scratch s;
	size_t n;
};

/* World positions of a row: x = x0 + i * step, z; plus optional offsets. */
struct pos {
	int64_t x0, step, z;
	const float *dx, *dz;
};

static float clamp1(float v)
{
	return v < -1.0f ? -1.0f : v > 1.0f ? 1.0f : v;
}

static float smooth01(float t)
{
	t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
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

static const float *eval(struct ctx *c, const struct node *nd, const struct pos *p);

static void eval_warp(struct ctx *c, const struct node *nd, const struct pos *p,
		      float *out)
{
	float *wx = c->wx[nd->index], *wz = c->wz[nd->index];
	float amp = (float)nd->amplitude;
	struct pos q = { p->x0, p->step, p->z, wx, wz };
	const float *src;
	size_t i;

	fbm_row(&c->fa[nd->index], p->x0, p->step, p->z, p->dx, p->dz, c->n, wx, &c->s);
	fbm_row(&c->fb[nd->index], p->x0, p->step, p->z, p->dx, p->dz, c->n, wz, &c->s);
	for (i = 0; i < c->n; i++) {
		wx[i] = (p->dx ? p->dx[i] : 0.0f) + amp * wx[i];
		wz[i] = (p->dz ? p->dz[i] : 0.0f) + amp * wz[i];
	}
	src = eval(c, nd->in[0], &q);
	for (i = 0; i < c->n; i++)
		out[i] = src[i];
}

static void eval_mix(struct ctx *c, const struct node *nd, const struct pos *p,
		     float *out)
{
	double total = 0;
	size_t i;
	int k;

	for (k = 0; k < nd->n_in; k++)
		total += fabs(nd->weight[k]);
	for (i = 0; i < c->n; i++)
		out[i] = 0.0f;
	for (k = 0; k < nd->n_in; k++) {
		const float *v = eval(c, nd->in[k], p);
		float w = (float)(nd->weight[k] / total);

		for (i = 0; i < c->n; i++)
			out[i] += w * v[i];
	}
}

static void eval_blend(struct ctx *c, const struct node *nd, const struct pos *p,
		       float *out)
{
	const float *a = eval(c, nd->in[0], p);
	const float *b = eval(c, nd->in[1], p);
	const float *t = eval(c, nd->in[2], p);
	float lo = (float)nd->a, inv = (float)(1.0 / (nd->b - nd->a));
	size_t i;

	for (i = 0; i < c->n; i++) {
		float s = smooth01((t[i] - lo) * inv);

		out[i] = a[i] + s * (b[i] - a[i]);
	}
}

static const float *eval(struct ctx *c, const struct node *nd, const struct pos *p)
{
	float *out = c->row[nd->index];
	const float *a, *b;
	size_t i;

	switch (nd->type) {
	case NODE_FBM:
		fbm_row(&c->fa[nd->index], p->x0, p->step, p->z, p->dx, p->dz,
			c->n, out, &c->s);
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
		a = eval(c, nd->in[0], p);
		b = eval(c, nd->in[1], p);
		for (i = 0; i < c->n; i++)
			out[i] = a[i] * b[i];
		break;
	case NODE_SCALE_BIAS:
		a = eval(c, nd->in[0], p);
		for (i = 0; i < c->n; i++)
			out[i] = clamp1(a[i] * (float)nd->a + (float)nd->b);
		break;
	case NODE_TERRACE:
		a = eval(c, nd->in[0], p);
		for (i = 0; i < c->n; i++)
			out[i] = terrace(a[i], (float)nd->a, (float)nd->b);
		break;
	default:
		break;
	}
	return out;
}

static void ctx_release(struct ctx *c, int nodes)
{
	int k;

	for (k = 0; k < nodes; k++) {
		free(c->row[k]);
		free(c->wx[k]);
		free(c->wz[k]);
	}
	fbm_scratch_release(&c->s);
	free(c);
}

static struct ctx *ctx_create(const struct preset *p, uint64_t seed, size_t n)
{
	struct ctx *c = calloc(1, sizeof(*c));
	int k, bad = 0;

	if (!c)
		return NULL;
	c->n = n;
	for (k = 0; k < p->n_nodes; k++) {
		const struct node *nd = &p->nodes[k];

		c->row[k] = malloc(n * sizeof(float));
		bad |= !c->row[k];
		if (nd->type == NODE_FBM)
			fbm_init(&c->fa[k], &nd->fbm, seed, (uint32_t)k);
		if (nd->type != NODE_WARP)
			continue;
		fbm_init(&c->fa[k], &nd->fbm, seed, (uint32_t)k + 0x10000);
		fbm_init(&c->fb[k], &nd->fbm, seed, (uint32_t)k + 0x20000);
		c->wx[k] = malloc(n * sizeof(float));
		c->wz[k] = malloc(n * sizeof(float));
		bad |= !c->wx[k] || !c->wz[k];
	}
	if (bad || fbm_scratch_init(&c->s, n)) {
		ctx_release(c, p->n_nodes);
		return NULL;
	}
	return c;
}

/* Map a row of [-1, 1] values to quanta: round-half-up of metres / quantum. */
static void quantise(const struct preset *p, const float *v, size_t n, int32_t *out)
{
	double half = 0.5 * (p->hmax - p->hmin), mid = p->hmin + half;
	double inv_q = 1e6 / p->quantum_um;
	size_t i;

	for (i = 0; i < n; i++) {
		double h = mid + half * (double)clamp1(v[i]);

		out[i] = (int32_t)floor(h * inv_q + 0.5);
	}
}

int pipeline_generate(const struct preset *p, uint64_t seed, int lod,
		      int32_t cx, int32_t cz, struct tile *out)
{
	struct ctx *c;
	struct pos pos;
	int64_t chunk;
	uint32_t j;
	int rc;

	if (!p || !out || lod < 0 || lod > p->chunk_log2)
		return ERR_INVAL;
	rc = tile_init(out, p->chunk_log2, lod);
	if (rc)
		return rc;
	out->fingerprint = p->fingerprint;
	out->seed = seed;
	out->cx = cx;
	out->cz = cz;
	out->quantum_um = p->quantum_um;
	c = ctx_create(p, seed, out->side);
	if (!c) {
		tile_release(out);
		return ERR_NOMEM;
	}
	chunk = INT64_C(1) << p->chunk_log2;
	pos = (struct pos){ (int64_t)cx * chunk, INT64_C(1) << lod, 0, NULL, NULL };
	for (j = 0; j < out->side; j++) {
		pos.z = (int64_t)cz * chunk + (int64_t)j * pos.step;
		quantise(p, eval(c, p->root, &pos), out->side, out->h + (size_t)j * out->side);
	}
	ctx_release(c, p->n_nodes);
	return 0;
}
