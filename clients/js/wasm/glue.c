/*
 * glue.c - what terrain.wasm exports to clients/js/terrain.js besides the
 * core itself: a world handle over a parsed preset and a reusable
 * workspace, tile generation into the caller's buffers (heights,
 * materials and the encoded tile, at any LOD and precision, with edits in
 * their canonical record form), and decoding. Pointers are offsets into
 * the module's memory; the JavaScript side allocates with the exported
 * malloc/free. Errors are the negative ERR_* codes of common/err.h;
 * tw_err_str() names them. Pure: no I/O, no state beyond the handles the
 * caller holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "edit.h"
#include "embed.h"
#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"

#define EXPORT __attribute__((visibility("default")))

struct tw_world {
	struct preset *p;
	uint64_t seed;
	struct pipeline_work *work;
	uint8_t *scratch;       /* tile_encode scratch, grown as needed */
	size_t scratch_cap;
	int32_t *qh;            /* requantised heights */
	size_t qh_cap;
};

EXPORT const char *tw_err_str(int code)
{
	return err_str(code);
}

/*
 * Open world (preset, seed): json (json_len bytes) when not NULL, else the
 * built-in preset `name` (NUL-terminated). *out gets the handle. Returns 0,
 * ERR_NOTFOUND (no such built-in), or preset_parse()'s codes (err names
 * the field, errlen bytes).
 */
EXPORT int tw_world_open(const char *name, const char *json, size_t json_len, uint64_t seed,
			 struct tw_world **out, char *err, size_t errlen)
{
	struct tw_world *w;
	int rc = ERR_NOTFOUND;

	if (!out)
		return ERR_INVAL;
	*out = NULL;
	if (!(w = calloc(1, sizeof(*w))))
		return ERR_NOMEM;
	if (json) {
		rc = preset_parse(name, json, json_len, &w->p, err, errlen);
	} else {
		for (const struct embedded_file *f = builtin_presets; name && f->name; f++)
			if (!strcmp(f->name, name)) {
				rc = preset_parse(f->name, f->data, f->len, &w->p, err, errlen);
				break;
			}
	}
	if (!rc)
		rc = pipeline_work_create(&w->work);
	if (rc) {
		preset_destroy(w->p);
		free(w);
		return rc;
	}
	w->seed = seed;
	*out = w;
	return 0;
}

EXPORT void tw_world_close(struct tw_world *w)
{
	if (!w)
		return;
	pipeline_work_destroy(w->work);
	preset_destroy(w->p);
	free(w->scratch);
	free(w->qh);
	free(w);
}

EXPORT uint64_t tw_world_fingerprint(const struct tw_world *w)
{
	return preset_fingerprint(w->p);
}

EXPORT int tw_world_chunk_log2(const struct tw_world *w)
{
	return preset_chunk_log2(w->p);
}

EXPORT uint32_t tw_world_quantum_um(const struct tw_world *w)
{
	return preset_quantum_um(w->p);
}

static int grow(void **buf, size_t *cap, size_t need)
{
	void *p;

	if (need <= *cap)
		return 0;
	if (!(p = realloc(*buf, need)))
		return ERR_NOMEM;
	*buf = p;
	*cap = need;
	return 0;
}

/* n canonical edit records (EDIT_WIRE_SIZE bytes each) into a new array. */
static int decode_edits(const uint8_t *rec, size_t n, struct edit **out)
{
	struct edit *e;

	*out = NULL;
	if (!n)
		return 0;
	if (!rec || n > SIZE_MAX / sizeof(*e) || !(e = malloc(n * sizeof(*e))))
		return rec ? ERR_NOMEM : ERR_INVAL;
	for (size_t k = 0; k < n; k++)
		if (edit_decode(rec + k * EDIT_WIRE_SIZE, EDIT_WIRE_SIZE, &e[k])) {
			free(e);
			return ERR_CORRUPT;
		}
	*out = e;
	return 0;
}

/*
 * The tile of chunk (cx, cz) at lod, as the server makes it: generated,
 * the n_edits canonical records applied in order (those not touching the
 * chunk skipped), edit_seq in its header, with layers (1: the material
 * layer), at quantum_um (0: the preset's; else a whole multiple of it, the
 * server's ?precision=). Writes side * side heights to heights (quanta),
 * side * side materials to materials when layers has the material layer
 * (either may be NULL), and the encoded tile to tile (cap bytes, *len its
 * size; NULL: not encoded). Returns 0, ERR_INVAL, ERR_CORRUPT (a bad
 * record), ERR_TOOBIG (cap) or ERR_NOMEM.
 */
EXPORT int tw_generate(struct tw_world *w, int lod, int32_t cx, int32_t cz, unsigned layers,
		       uint32_t quantum_um, const uint8_t *edits, size_t n_edits,
		       uint64_t edit_seq, int32_t *heights, uint8_t *materials, uint8_t *tile,
		       size_t cap, size_t *len)
{
	const struct tile *t;
	struct tile coarse;
	struct edit *e;
	size_t n;
	int rc;

	if (!w)
		return ERR_INVAL;
	if ((rc = decode_edits(edits, n_edits, &e)) != 0)
		return rc;
	rc = pipeline_tile_work(w->work, w->p, w->seed, lod, cx, cz, NULL, e, n_edits, NULL,
				edit_seq, layers, &t);
	free(e);
	if (rc)
		return rc;
	n = (size_t)t->side * t->side;
	if (quantum_um && quantum_um != t->quantum_um) {
		if ((rc = grow((void **)&w->qh, &w->qh_cap, n * sizeof(int32_t))) != 0)
			return rc;
		coarse = *t;
		coarse.h = w->qh;
		coarse.quantum_um = quantum_um;
		if ((rc = tile_requantize(t->h, n, t->quantum_um, quantum_um, coarse.h)) != 0)
			return rc;
		t = &coarse;
	}
	if (heights)
		memcpy(heights, t->h, n * sizeof(*heights));
	if (materials && t->material)
		memcpy(materials, t->material, n);
	if (!tile)
		return 0;
	if ((rc = grow((void **)&w->scratch, &w->scratch_cap, tile_encode_scratch_size(t))) != 0)
		return rc;
	return tile_encode_in(t, w->scratch, tile, cap, len);
}

/* The largest encoded tile of a chunk of 2^chunk_log2 m at lod. */
EXPORT size_t tw_tile_bound(int chunk_log2, int lod, int materials)
{
	struct tile t = { 0 };

	if (chunk_log2 < TILE_MIN_CHUNK_LOG2 || chunk_log2 > TILE_MAX_CHUNK_LOG2 || lod < 0 ||
	    lod > chunk_log2)
		return 0;
	t.chunk_log2 = (uint8_t)chunk_log2;
	t.lod = (uint8_t)lod;
	t.side = (1u << (chunk_log2 - lod)) + 1;
	t.material = materials ? (uint8_t *)&t : NULL;
	return tile_encode_bound(&t);
}

/*
 * Decode tile (len bytes, any version) and copy its side * side heights to
 * heights (cap_samples of room) and, when it has one and materials is not
 * NULL, its material layer to materials. Returns 0, or tile_decode()'s
 * errors (ERR_TOOBIG when cap_samples is short).
 */
EXPORT int tw_decode(const uint8_t *tile, size_t len, int32_t *heights, size_t cap_samples,
		     uint8_t *materials)
{
	struct tile t;
	size_t n;
	int rc = tile_decode(tile, len, &t);

	if (rc)
		return rc;
	n = (size_t)t.side * t.side;
	if (n > cap_samples) {
		tile_release(&t);
		return ERR_TOOBIG;
	}
	memcpy(heights, t.h, n * sizeof(*heights));
	if (materials && t.material)
		memcpy(materials, t.material, n);
	tile_release(&t);
	return 0;
}

/* XXH3-64 (seed 0) of len bytes: the hash of golden tiles and checksums. */
EXPORT uint64_t tw_xxh3(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

/* The world hash before any edit (edit_hash_start). */
EXPORT uint64_t tw_hash_start(uint64_t fingerprint, uint64_t seed)
{
	return edit_hash_start(fingerprint, seed);
}

/* The next link of a hash chain over canonical record rec (42 bytes) with
 * sequence number seq (edit_hash_next); 0 for a record that does not
 * decode (*ok 0). */
EXPORT uint64_t tw_hash_next(uint64_t prev, uint64_t seq, const uint8_t *rec, int *ok)
{
	struct edit e;

	*ok = edit_decode(rec, EDIT_WIRE_SIZE, &e) == 0;
	return *ok ? edit_hash_next(prev, seq, &e) : 0;
}

/* Whether record rec's brush touches chunk (cx, cz) of 2^chunk_log2 m
 * chunks: 1, 0, or ERR_CORRUPT for a bad record. */
EXPORT int tw_edit_touches(const uint8_t *rec, int chunk_log2, int32_t cx, int32_t cz)
{
	struct edit e;

	if (edit_decode(rec, EDIT_WIRE_SIZE, &e))
		return ERR_CORRUPT;
	return edit_touches(&e, chunk_log2, cx, cz);
}

/*
 * Parse an edit batch {"edits": [...]} (json_len bytes, docs/edits.md) into
 * canonical records at out (cap records of 42 bytes); *n gets the count.
 * Returns 0, edit_parse_batch()'s codes with err naming the field, or
 * ERR_TOOBIG (cap).
 */
EXPORT int tw_edits_parse(const char *json, size_t json_len, uint8_t *out, size_t cap,
			  size_t *n, char *err, size_t errlen)
{
	struct edit *e;
	size_t k;
	int rc = edit_parse_batch(json, json_len, &e, n, err, errlen);

	if (rc)
		return rc;
	if (*n > cap) {
		free(e);
		return ERR_TOOBIG;
	}
	for (k = 0; k < *n; k++)
		edit_encode(&e[k], out + k * EDIT_WIRE_SIZE);
	free(e);
	return 0;
}
