/*
 * tilemake.c - a tile as served: generate, requantise, encode
 * (tilemake.h).
 */
#include "tilemake.h"

#include <stdlib.h>

#include "err.h"
#include "pipeline.h"
#include "tile.h"

int tilemake_init(struct tilemake *m)
{
	if (!m)
		return ERR_INVAL;
	*m = (struct tilemake){ 0 };
	return pipeline_work_create(&m->pw) ? ERR_NOMEM : 0;
}

void tilemake_release(struct tilemake *m)
{
	if (!m)
		return;
	pipeline_work_destroy(m->pw);
	free(m->qh);
	free(m->enc);
	free(m->scratch);
	*m = (struct tilemake){ 0 };
}

size_t tilemake_bytes(const struct tilemake *m)
{
	return pipeline_work_bytes(m->pw) + m->qh_cap + m->enc_cap + m->scratch_cap;
}

/* *buf holding at least n bytes (contents not kept). 0 or ERR_NOMEM. */
static int reserve(void **buf, size_t *cap, size_t n)
{
	if (*cap >= n)
		return 0;
	free(*buf);
	*buf = malloc(n ? n : 1);
	*cap = *buf ? n : 0;
	return *buf ? 0 : ERR_NOMEM;
}

int tilemake_reserve_enc(struct tilemake *m, size_t n)
{
	return reserve((void **)&m->enc, &m->enc_cap, n);
}

/* t with its heights requantised to quantum_um into m->qh: *c is a
 * shallow copy of t that points at them. */
static int requantize(struct tilemake *m, const struct tile *t, uint32_t quantum_um,
		      struct tile *c)
{
	size_t n = (size_t)t->side * t->side;
	int rc = reserve((void **)&m->qh, &m->qh_cap, n * sizeof(int32_t));

	if (rc)
		return rc;
	*c = *t;
	c->h = m->qh;
	c->quantum_um = quantum_um;
	return tile_requantize(t->h, n, t->quantum_um, quantum_um, c->h);
}

int tilemake_tile(struct tilemake *m, const struct preset *p, uint64_t seed, int lod,
		  int32_t cx, int32_t cz, const struct region_source *rs,
		  const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
		  uint32_t quantum_um, const struct tile **out)
{
	const struct tile *t;
	int rc;

	if (!m || !m->pw || !p || !out)
		return ERR_INVAL;
	rc = pipeline_tile_work(m->pw, p, seed, lod, cx, cz, rs, NULL, 0, bl, edit_seq,
				layers, &t);
	if (!rc && quantum_um && quantum_um != t->quantum_um &&
	    (rc = requantize(m, t, quantum_um, &m->coarse)) == 0)
		t = &m->coarse;
	if (!rc)
		*out = t;
	return rc;
}

int tilemake_encode(struct tilemake *m, const struct preset *p, uint64_t seed, int lod,
		    int32_t cx, int32_t cz, const struct region_source *rs,
		    const struct bake_layer *bl, uint64_t edit_seq, unsigned layers,
		    uint32_t quantum_um, enum tile_form form, const uint8_t **out,
		    size_t *len)
{
	const struct tile *t;
	int rc;

	if (!out || !len)
		return ERR_INVAL;
	rc = tilemake_tile(m, p, seed, lod, cx, cz, rs, bl, edit_seq, layers, quantum_um, &t);
	if (!rc)
		rc = tilemake_reserve_enc(m, tile_encode_bound(t));
	if (!rc)
		rc = reserve(&m->scratch, &m->scratch_cap, tile_encode_scratch_size(t));
	if (!rc)
		rc = tile_encode_form_in(t, form, m->scratch, m->enc, m->enc_cap, len);
	if (!rc)
		*out = m->enc;
	return rc;
}
