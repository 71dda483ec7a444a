/*
 * selfcheck.c - the start-up check of the generated world (selfcheck.h).
 * Owns nothing but the choice of tiles; the hashes are those of
 * common/golden_tiles.inc, shared with tests/unit/test_pipeline.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "err.h"
#include "pipeline.h"
#include "preset.h"
#include "selfcheck.h"
#include "tile.h"

static const struct selfcheck_tile golden[] = {
#include "golden_tiles.inc"
};
#define NGOLDEN (sizeof(golden) / sizeof(golden[0]))

/*
 * The tiles of golden[] checked at start, by key: five generators, LOD 0
 * to 8, the int32 corners, far from the origin. Eroded tiles (about 100 ms
 * each: their regions) are left to the test suite. About 10 ms in all
 * (tests/unit/test_selfcheck.c prints the figure).
 */
static const struct {
	const char *preset;
	int lod;
	int32_t cx, cz;
} start_keys[] = {
	{ "default", 0, 0, 0 },
	{ "islands", 0, INT32_MAX, INT32_MAX },
	{ "alpine", 1, INT32_MIN, INT32_MIN },
	{ "islands", 1, INT32_MIN, INT32_MAX },
	{ "mesa", 1, 123456, -654321 },
	{ "canyons", 2, -1, 3 },
	{ "mesa", 6, INT32_MIN, INT32_MIN },
	{ "default", 8, 0, 0 },
};

static uint64_t heights_hash(const struct tile *t, uint8_t *buf)
{
	size_t n = (size_t)t->side * t->side, i;

	for (i = 0; i < n; i++) {
		uint32_t v = (uint32_t)t->h[i];

		buf[4 * i] = (uint8_t)v;
		buf[4 * i + 1] = (uint8_t)(v >> 8);
		buf[4 * i + 2] = (uint8_t)(v >> 16);
		buf[4 * i + 3] = (uint8_t)(v >> 24);
	}
	return XXH3_64bits(buf, n * 4);
}

static const struct preset *find(struct preset **v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(preset_name(v[i]), name))
			return v[i];
	return NULL;
}

static int check_one(const struct preset *p, const struct selfcheck_tile *g, char *msg,
		     size_t cap)
{
	struct tile t;
	uint8_t *buf;
	uint64_t got;
	int rc = pipeline_generate_with(p, g->seed, g->lod, g->cx, g->cz, NULL, &t);

	if (rc) {
		snprintf(msg, cap, "self-check: tile %s seed %llu lod %d (%ld, %ld): %s",
			 g->preset, (unsigned long long)g->seed, g->lod, (long)g->cx,
			 (long)g->cz, err_str(rc));
		return rc;
	}
	buf = malloc((size_t)t.side * t.side * 4);
	if (!buf) {
		tile_release(&t);
		snprintf(msg, cap, "self-check: %s", err_str(ERR_NOMEM));
		return ERR_NOMEM;
	}
	got = heights_hash(&t, buf);
	free(buf);
	tile_release(&t);
	if (got == g->hash)
		return 0;
	snprintf(msg, cap,
		 "self-check: tile %s seed %llu lod %d (%ld, %ld) has heights hash "
		 "%016llx, expected %016llx: this binary was built with flags (or a "
		 "compiler) that change the world; rebuild without them (see the "
		 "Makefile's WORLD_FLAGS)",
		 g->preset, (unsigned long long)g->seed, g->lod, (long)g->cx, (long)g->cz,
		 (unsigned long long)got, (unsigned long long)g->hash);
	return ERR_CORRUPT;
}

int selfcheck_tiles(const struct selfcheck_tile *v, size_t n, char *msg, size_t cap)
{
	struct preset **presets;
	size_t np, i;
	int rc;

	if ((rc = preset_load_builtin(&presets, &np)) != 0) {
		snprintf(msg, cap, "self-check: built-in presets: %s", err_str(rc));
		return rc;
	}
	for (i = 0; i < n && !rc; i++) {
		const struct preset *p = find(presets, np, v[i].preset);

		if (!p) {
			snprintf(msg, cap, "self-check: no built-in preset %s", v[i].preset);
			rc = ERR_NOTFOUND;
		} else {
			rc = check_one(p, &v[i], msg, cap);
		}
	}
	preset_destroy_all(presets, np);
	return rc;
}

#define NSTART (sizeof(start_keys) / sizeof(start_keys[0]))

/* The golden rows of start_keys into v (NSTART). */
static int start_tiles(struct selfcheck_tile *v, char *msg, size_t cap)
{
	size_t n = 0, k, i;

	for (k = 0; k < NSTART; k++) {
		for (i = 0; i < NGOLDEN; i++)
			if (!strcmp(golden[i].preset, start_keys[k].preset) &&
			    golden[i].lod == start_keys[k].lod && golden[i].cx == start_keys[k].cx &&
			    golden[i].cz == start_keys[k].cz)
				break;
		if (i == NGOLDEN) {
			snprintf(msg, cap, "self-check: tile %s lod %d (%ld, %ld) is not in "
				 "golden_tiles.inc", start_keys[k].preset, start_keys[k].lod,
				 (long)start_keys[k].cx, (long)start_keys[k].cz);
			return ERR_NOTFOUND;
		}
		v[n++] = golden[i];
	}
	return 0;
}

int selfcheck_run(char *msg, size_t cap)
{
	struct selfcheck_tile v[NSTART];
	int rc = start_tiles(v, msg, cap);

	return rc ? rc : selfcheck_tiles(v, NSTART, msg, cap);
}

uint64_t selfcheck_digest(void)
{
	struct selfcheck_tile v[NSTART];
	uint8_t buf[8 * NSTART];
	char msg[160];
	size_t k;
	int b;

	if (start_tiles(v, msg, sizeof(msg)))
		return 0;
	for (k = 0; k < NSTART; k++)
		for (b = 0; b < 8; b++)
			buf[8 * k + (size_t)b] = (uint8_t)(v[k].hash >> (8 * b));
	return XXH3_64bits(buf, sizeof(buf));
}
