/*
 * selfcheck.h - does this binary make the world it was built to make?
 *
 * The world is a pure function of (preset, seed, chunk, LOD), promised
 * identical on every machine and compiler. Flags that change floating point
 * (FMA contraction, fast-math; the Makefile refuses them) or a miscompiling
 * compiler would make a server that serves another world under the same
 * names. At start, `terrain-server serve` generates a few golden tiles of
 * the built-in presets (common/golden_tiles.inc, the hashes the test suite
 * checks too) and refuses to start when one differs.
 */
#ifndef SELFCHECK_H
#define SELFCHECK_H

#include <stddef.h>
#include <stdint.h>

/* One golden tile: the layout of the rows of common/golden_tiles.inc. */
struct selfcheck_tile {
	const char *preset;  /* a built-in preset */
	uint64_t seed;
	int lod;
	int32_t cx, cz;
	uint64_t hash;       /* XXH3-64 of the heights as little-endian int32 */
};

/*
 * Generate the n tiles of v with the built-in presets and compare their
 * height hashes. 0 when all match; ERR_CORRUPT at the first mismatch,
 * ERR_NOTFOUND for an unknown preset, ERR_INVAL or ERR_NOMEM from
 * generation; on any failure msg (cap bytes) names the tile and, for a
 * mismatch, the expected and computed hashes.
 */
int selfcheck_tiles(const struct selfcheck_tile *v, size_t n, char *msg, size_t cap);

/* The start-up check: selfcheck_tiles() of the golden tiles chosen in
 * selfcheck.c (five presets, LOD 0 to 8, the
 * int32 corners). About 10 ms. */
int selfcheck_run(char *msg, size_t cap);

/* XXH3-64 of the start-up check's tile hashes (little-endian, in order):
 * what a shared edit log records, so that every node on it checked the
 * same world. */
uint64_t selfcheck_digest(void);

#endif
