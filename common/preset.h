/*
 * preset.h - generator presets and the generation pipeline.
 *
 * A preset is a declarative generator (JSON, docs/presets.md): a tree of
 * noise sources (fBm, ridged, billow over Perlin, Simplex, value or cellular
 * noise), domain warps, mixes, blends and terraces, mapped to [min, max]
 * metres and quantised. A world is (preset, seed); the tile of chunk (cx, cz)
 * at a LOD is a pure function of them. Parsing validates everything; a
 * parsed preset is immutable and can be shared by any number of threads.
 */
#ifndef PRESET_H
#define PRESET_H

#include <stddef.h>
#include <stdint.h>

struct edit;
struct preset;
struct tile;

/* Algorithm version; part of every fingerprint. Bump when output changes. */
#define PRESET_ALGO_VERSION 1

/*
 * Parse a preset from JSON text (len bytes). name overrides the JSON's own
 * "name" when not NULL. On success *out owns a new preset (preset_destroy).
 * On failure returns ERR_PARSE / ERR_INVAL / ERR_RANGE / ERR_NOMEM and, when
 * err is not NULL, writes a message naming the offending field into it.
 */
int preset_parse(const char *name, const char *json, size_t len,
		 struct preset **out, char *err, size_t errlen);

/* Free a preset. preset_destroy(NULL) does nothing. */
void preset_destroy(struct preset *p);

/* Parse every built-in preset (presets/ compiled in, sorted by name) into
 * a new array of *n presets. Free with preset_destroy_all(). */
int preset_load_builtin(struct preset ***out, size_t *n);
void preset_destroy_all(struct preset **v, size_t n);

const char *preset_name(const struct preset *p);
const char *preset_description(const struct preset *p);

/* Hash (XXH3-64) of PRESET_ALGO_VERSION and the canonical parameters. */
uint64_t preset_fingerprint(const struct preset *p);

/* Canonical JSON of the parameters (what the fingerprint hashes). Owned by
 * the preset. */
const char *preset_canonical(const struct preset *p);

int preset_chunk_log2(const struct preset *p);   /* 8: 256 m chunks */
int preset_max_lod(const struct preset *p);      /* chunk_log2 */
uint32_t preset_quantum_um(const struct preset *p);
double preset_min_height(const struct preset *p); /* metres */
double preset_max_height(const struct preset *p);
double preset_sea_level(const struct preset *p);

/*
 * Hydraulic erosion (presets with "hydraulic", docs/presets.md). The world
 * is cut into square regions along borders at k * region + chunk / 2; each
 * region is generated at 1 m with a band and an apron around it and eroded
 * by droplets seeded per world cell, and a sample's height is the blend of
 * the eroded regions whose band it lies in, with weights that depend only
 * on its position. Regions are expensive (tens of ms) and shared by the
 * chunks they cover, so callers keep them in a cache: a region_source.
 */
int preset_is_eroded(const struct preset *p);

#endif
