/*
 * example.c - libterrain from C: one tile of a world, its heights hash (the
 * golden tiles' hash), a height anywhere, the tile's bytes as the server
 * sends them, and an edit applied with the hashes the server publishes.
 *
 *	cc example.c $(pkg-config --cflags --libs terrain) -o example
 *	./example [PRESET SEED LOD CX CZ [OUT.tile]]    (default 0 0 0 0)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <terrain.h>

static int fail(const char *what, int rc)
{
	fprintf(stderr, "example: %s: %s\n", what, terrain_strerror(rc));
	return 1;
}

static int edit_and_hash(const struct terrain_world *w, const struct terrain_tile_request *rq)
{
	static const char json[] = "{\"edits\": [{\"op\": \"raise\", \"x\": 128, \"z\": 128, "
				   "\"radius\": 20, \"strength\": 5}]}";
	struct terrain_edits *e;
	uint8_t rec[512];
	char msg[256];
	size_t len;
	uint64_t version, hash;
	double xz[2] = { 128, 128 }, m;
	int rc;

	if ((rc = terrain_edits_create(w, &e)) != 0)
		return fail("edits", rc);
	rc = terrain_edits_record(w, 1, json, strlen(json), rec, sizeof(rec), &len, msg, sizeof(msg));
	if (!rc)
		rc = terrain_edits_apply_record(e, rec, len);
	if (!rc)
		rc = terrain_edits_chunk(e, rq->cx, rq->cz, &version, &hash);
	if (!rc)
		rc = terrain_sample(w, e, NULL, xz, 1, &m);
	if (!rc)
		printf("after a raise at (128, 128): %.2f m, world hash %016llx, chunk (%d, %d) "
		       "version %llu hash %016llx\n", m,
		       (unsigned long long)terrain_edits_world_hash(e), rq->cx, rq->cz,
		       (unsigned long long)version, (unsigned long long)hash);
	terrain_edits_destroy(e);
	return rc ? fail(msg[0] ? msg : "edit", rc) : 0;
}

int main(int argc, char **argv)
{
	struct terrain_tile_request rq = { .size = sizeof(rq) };
	struct terrain_tile_info info = { .size = sizeof(info) };
	const char *preset = argc > 1 ? argv[1] : "default";
	struct terrain_world *w;
	uint64_t seed = 0;
	double xz[2] = { 0.5, 0.5 }, m;
	int32_t *h = NULL;
	uint8_t *tile = NULL;
	size_t n, cap, len;
	int rc;

	if (argc > 2 && (rc = terrain_seed_parse(argv[2], strlen(argv[2]), &seed)) != 0)
		return fail("seed", rc);
	if (argc > 5) {
		rq.lod = atoi(argv[3]);
		rq.cx = atoi(argv[4]);
		rq.cz = atoi(argv[5]);
	}
	if ((rc = terrain_world_create(preset, seed, &w)) != 0)
		return fail(preset, rc);
	printf("libterrain %s\n", terrain_version_string());
	n = (size_t)terrain_tile_side(w, rq.lod) * terrain_tile_side(w, rq.lod);
	cap = terrain_tile_bound(w, &rq);
	if (!n || !(h = malloc(n * sizeof(*h))) || !(tile = malloc(cap)))
		rc = n ? TERRAIN_ERR_NOMEM : TERRAIN_ERR_INVAL;
	if (!rc)
		rc = terrain_generate(w, NULL, NULL, &rq, h, n, NULL, 0, &info);
	if (!rc)
		printf("tile %s seed %llu lod %d (%d, %d): %u x %u, heights hash %016llx\n", preset,
		       (unsigned long long)seed, rq.lod, rq.cx, rq.cz, info.side, info.side,
		       (unsigned long long)terrain_heights_hash(h, n));
	if (!rc)
		rc = terrain_sample(w, NULL, NULL, xz, 1, &m);
	if (!rc)
		printf("height at (0.5, 0.5): %.4f m\n", m);
	if (!rc)
		rc = terrain_generate_encoded(w, NULL, NULL, &rq, tile, cap, &len);
	if (!rc && (rc = terrain_decode(tile, len, &info, h, n, NULL, 0)) == 0)
		printf("encoded: %zu bytes, format version %u, ETag \"%016llx\"\n", len, info.version,
		       (unsigned long long)info.checksum);
	if (!rc && argc > 6) {
		FILE *f = fopen(argv[6], "wb");

		if (!f || fwrite(tile, 1, len, f) != len || fclose(f))
			rc = TERRAIN_ERR_INVAL;
	}
	if (!rc)
		rc = edit_and_hash(w, &rq) ? TERRAIN_ERR_INVAL : 0;
	free(h);
	free(tile);
	terrain_world_destroy(w);
	return rc ? fail("tile", rc) : 0;
}
