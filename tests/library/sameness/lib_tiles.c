/*
 * lib_tiles.c - the native side of tests/library/sameness.sh: libterrain (the
 * shared library, through common/terrain.h only) answering commands on
 * stdin, one per line:
 *
 *   world GEN SEED             open world (built-in preset GEN, u64 SEED)
 *                              with an empty edit log
 *   edits FIRST_SEQ AUTHOR TIME JSON
 *                              apply a batch ({"edits": [...]}, the POST's
 *                              JSON, sent by AUTHOR at the log's TIME, as
 *                              the server's answer says) to the last
 *                              world's log
 *   tile LOD CX CZ LAYERS UM FORMAT
 *                              the encoded tile (terrain_generate_encoded):
 *                              prints "LEN HASH" (XXH3-64 of its bytes)
 *
 * Errors print "error CODE TEXT" for the line and go on. Not a cmocka
 * suite: a tool of that one test.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terrain.h"

static struct terrain_world *w;
static struct terrain_edits *e;
static struct terrain_work *work;
static uint8_t *out;
static size_t cap;

static void world(const char *gen, uint64_t seed)
{
	int rc;

	terrain_edits_destroy(e);
	terrain_world_destroy(w);
	e = NULL;
	if ((rc = terrain_world_create(gen, seed, &w)) || (rc = terrain_edits_create(w, &e)))
		printf("error %d %s\n", rc, terrain_strerror(rc));
	else
		printf("ok\n");
}

static void edits(uint64_t first, const char *author, uint64_t time_ms, const char *json)
{
	uint8_t rec[12000];
	char msg[256];
	size_t len;
	int rc = terrain_edits_record_by(w, first, json, strlen(json), author, time_ms, rec,
					 sizeof(rec), &len, msg, sizeof(msg));

	if (!rc)
		rc = terrain_edits_apply_record(e, rec, len);
	if (rc)
		printf("error %d %s %s\n", rc, terrain_strerror(rc), msg);
	else
		printf("ok %" PRIu64 " %016" PRIx64 "\n", terrain_edits_seq(e),
		       terrain_edits_world_hash(e));
}

static void tile(int lod, int32_t cx, int32_t cz, uint32_t layers, uint32_t um, uint32_t format)
{
	struct terrain_tile_request rq = { sizeof(rq), lod, cx, cz, um, layers, format, 0 };
	size_t need = terrain_tile_bound(w, &rq), len;
	int rc;

	if (need > cap) {
		free(out);
		cap = need;
		out = malloc(cap);
	}
	rc = out ? terrain_generate_encoded(w, e, work, &rq, out, cap, &len) : TERRAIN_ERR_NOMEM;
	if (rc)
		printf("error %d %s\n", rc, terrain_strerror(rc));
	else
		printf("%zu %016" PRIx64 "\n", len, terrain_xxh3(out, len));
}

int main(void)
{
	char author[65];
	unsigned long long time_ms;
	static char line[70000];
	char gen[80];
	unsigned long long seed, first;
	long lod, cx, cz, layers, um, format;
	int n;

	if (terrain_work_create(&work))
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "world %79s %llu", gen, &seed) == 2)
			world(gen, seed);
		else if (sscanf(line, "edits %llu %64s %llu %n", &first, author, &time_ms, &n) == 3)
			edits(first, author, time_ms, line + n);
		else if (sscanf(line, "tile %ld %ld %ld %ld %ld %ld", &lod, &cx, &cz, &layers, &um,
				&format) == 6)
			tile((int)lod, (int32_t)cx, (int32_t)cz, (uint32_t)layers, (uint32_t)um,
			     (uint32_t)format);
		else
			printf("error bad line\n");
		fflush(stdout);
	}
	free(out);
	terrain_work_destroy(work);
	terrain_edits_destroy(e);
	terrain_world_destroy(w);
	return 0;
}
