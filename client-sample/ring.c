/*
 * ring.c - chunk sets and LODs around a player (ring.h).
 */
#include "ring.h"

#include <math.h>
#include <stdlib.h>

#include "err.h"

int ring_check(const struct ring_params *p)
{
	if (!p || p->chunk_log2 < 4 || p->chunk_log2 > 12 || p->max_lod < 0 ||
	    p->max_lod > p->chunk_log2 || p->lmax < 0 ||
	    !(p->d0 > 0) || !isfinite(p->d0) || !(p->radius > 0) ||
	    !isfinite(p->radius))
		return ERR_INVAL;
	return 0;
}

int ring_lod(const struct ring_params *p, double d)
{
	int cap = p->lmax < p->max_lod ? p->lmax : p->max_lod, l = 0;
	double edge = p->d0 * 2;

	/* the largest l with d >= d0 * 2^l: floor(log2(d / d0)), exactly */
	while (l < cap && d >= edge) {
		l++;
		edge *= 2;
	}
	return l;
}

/* The chunk holding v, or with end = 1 the last chunk before v. */
static int chunk_at(double v, double size, int end, int32_t *c)
{
	double f = end ? ceil(v / size) - 1 : floor(v / size);

	if (!(f >= INT32_MIN && f <= INT32_MAX))
		return ERR_RANGE;
	*c = (int32_t)f;
	return 0;
}

int ring_rect_of(const struct ring_params *p, double x0, double z0,
		 double x1, double z1, struct ring_rect *r)
{
	double size = (double)(1u << p->chunk_log2);

	if (!(x0 < x1) || !(z0 < z1) || !isfinite(x0) || !isfinite(x1) ||
	    !isfinite(z0) || !isfinite(z1))
		return ERR_RANGE;
	/* half-open: the chunk that starts exactly at x1 is not needed */
	if (chunk_at(x0, size, 0, &r->cx0) || chunk_at(z0, size, 0, &r->cz0) ||
	    chunk_at(x1, size, 1, &r->cx1) || chunk_at(z1, size, 1, &r->cz1))
		return ERR_RANGE;
	return 0;
}

uint32_t ring_span(const struct ring_params *p)
{
	double size = (double)(1u << p->chunk_log2);

	return (uint32_t)ceil(2 * p->radius / size) + 1;
}

static int by_ring(const void *a, const void *b)
{
	const struct ring_chunk *x = a, *y = b;

	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	if (x->cz != y->cz)
		return x->cz < y->cz ? -1 : 1;
	return (x->cx > y->cx) - (x->cx < y->cx);
}

long ring_list(const struct ring_params *p, double x, double z,
	       struct ring_chunk *out, size_t cap)
{
	double size = (double)(1u << p->chunk_log2);
	struct ring_rect r;
	int32_t pcx, pcz;
	size_t n = 0;
	int rc;

	if (ring_check(p))
		return ERR_INVAL;
	if ((rc = ring_rect_of(p, x - p->radius, z - p->radius, x + p->radius,
			       z + p->radius, &r)) != 0 ||
	    (rc = chunk_at(x, size, 0, &pcx)) != 0 ||
	    (rc = chunk_at(z, size, 0, &pcz)) != 0)
		return rc;
	if ((uint64_t)((int64_t)r.cx1 - r.cx0 + 1) *
		    (uint64_t)((int64_t)r.cz1 - r.cz0 + 1) > cap)
		return ERR_RANGE;
	for (int64_t cz = r.cz0; cz <= r.cz1; cz++) {
		for (int64_t cx = r.cx0; cx <= r.cx1; cx++) {
			struct ring_chunk *c = &out[n++];
			double dx = ((double)cx + 0.5) * size - x;
			double dz = ((double)cz + 0.5) * size - z;
			int64_t rx = llabs(cx - pcx), rz = llabs(cz - pcz);

			c->cx = (int32_t)cx;
			c->cz = (int32_t)cz;
			c->d = sqrt(dx * dx + dz * dz);
			c->lod = (uint8_t)ring_lod(p, c->d);
			c->ring = (uint32_t)(rx > rz ? rx : rz);
		}
	}
	qsort(out, n, sizeof(*out), by_ring);
	return (long)n;
}
