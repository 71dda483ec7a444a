/*
 * bake_bench.c - a cold LOD-0 `default` tile of a chunk with 0, 10^3 and
 * 10^5 edits (issue 18): with every edit replayed, as the server did
 * before bakes, and from a baked delta plus BAKES_AFTER - 1 edits since
 * (the most a served tile applies beyond its delta), beside the unedited
 * tile in the same run. Also the cost of one bake. In-process, one
 * thread, CPU time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "bench.h"
#include "edit.h"
#include "pipeline.h"
#include "preset.h"
#include "tile.h"
#include "worlds/bakes.h"

#define PENDING (BAKES_AFTER - 1) /* the most a served tile applies */
#define SIDE 257

static const struct preset *p;
static struct edit *edits;
static size_t nedits;
static struct bake_layer layer, steady;
static struct bake_chunk chunk, all;

static void replay(void *arg)
{
	struct tile t;

	(void)arg;
	if (pipeline_tile(p, 42, 0, 0, 0, NULL, edits, nedits, 1, 0, &t))
		bench_die("pipeline_tile", 1);
	bench_keep(t.h[SIDE * 128 + 128]);
	tile_release(&t);
}

static void baked(void *arg)
{
	struct tile t;

	(void)arg;
	if (pipeline_tile_baked(p, 42, 0, 0, 0, NULL, &layer, 1, 0, &t))
		bench_die("pipeline_tile_baked", 1);
	bench_keep(t.h[SIDE * 128 + 128]);
	tile_release(&t);
}

static void baked_steady(void *arg)
{
	struct tile t;

	(void)arg;
	if (pipeline_tile_baked(p, 42, 0, 0, 0, NULL, &steady, 1, 0, &t))
		bench_die("pipeline_tile_baked", 1);
	bench_keep(t.h[SIDE * 128 + 128]);
	tile_release(&t);
}

static void unedited(void *arg)
{
	struct tile t;

	(void)arg;
	if (pipeline_tile(p, 42, 0, 0, 0, NULL, NULL, 0, 0, 0, &t))
		bench_die("pipeline_tile", 1);
	bench_keep(t.h[0]);
	tile_release(&t);
}

/*
 * Bake the first n - PENDING edits into delta; returns the time of the
 * server's step, an incremental bake: the chunk's LOD-0 heights, plus the
 * delta so far, plus the last PENDING + 1 of those edits, into a delta.
 */
static double bake(size_t n, int32_t *delta)
{
	int32_t *base = malloc(SIDE * SIDE * sizeof(*base)), *h = malloc(SIDE * SIDE * sizeof(*h));
	size_t folded = n > PENDING ? n - PENDING : 0;
	size_t step = folded > PENDING + 1 ? PENDING + 1 : folded;
	double t0;

	if (!base || !h || pipeline_heights(p, 42, 0, 0, 0, SIDE, SIDE, NULL, base))
		bench_die("bake", 1);
	memcpy(h, base, SIDE * SIDE * sizeof(*h));
	edit_apply_block(h, 0, 0, 0, SIDE, SIDE, preset_quantum_um(p), edits, folded - step);
	if (bake_delta(h, base, SIDE * SIDE, delta))
		bench_die("bake_delta", 1);
	t0 = bench_now();
	if (pipeline_heights(p, 42, 0, 0, 0, SIDE, SIDE, NULL, base))
		bench_die("bake", 1);
	memcpy(h, base, SIDE * SIDE * sizeof(*h));
	bake_add(h, delta, SIDE * SIDE);
	edit_apply_block(h, 0, 0, 0, SIDE, SIDE, preset_quantum_um(p), edits + folded - step,
			 step);
	if (bake_delta(h, base, SIDE * SIDE, delta))
		bench_die("bake_delta", 1);
	t0 = bench_now() - t0;
	free(base);
	free(h);
	return t0;
}

int main(void)
{
	static const size_t counts[] = { 0, 1000, 100000 };
	struct preset **presets;
	size_t np, i, k;
	int32_t *delta = malloc(SIDE * SIDE * sizeof(*delta));
	double t_plain;
	uint64_t r = 88172645463325252u;

	if (!delta || preset_load_builtin(&presets, &np))
		bench_die("presets", 1);
	for (i = 0; i < np; i++)
		if (!strcmp(preset_name(presets[i]), "default"))
			p = presets[i];
	edits = malloc(100000 * sizeof(*edits));
	for (k = 0; k < 100000; k++) { /* raise/lower brushes of 4-64 m in the chunk */
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		edits[k] = (struct edit){ (uint8_t)(r % 2 ? EDIT_RAISE : EDIT_LOWER), EDIT_SMOOTH,
					  (int64_t)(r >> 8 & 0xffff) % 256000,
					  (int64_t)(r >> 24 & 0xffff) % 256000,
					  4000 + (int64_t)(r >> 40) % 60000, 250000, 0 };
	}
	t_plain = bench_time(unedited, NULL);
	printf("edits\treplay ms\tbaked ms\tbaked + %d since ms\tunedited ms\tbaked / unedited\t"
	       "+ %d since / unedited\tincremental bake ms\n", PENDING, PENDING);
	for (i = 0; i < 3; i++) {
		size_t n = counts[i], folded = n > PENDING ? n - PENDING : 0;
		int32_t *full = malloc(SIDE * SIDE * sizeof(*full));
		double t_replay, t_baked, t_steady, t_bake;

		nedits = n;
		t_bake = bake(n + PENDING, full); /* every edit folded */
		all = (struct bake_chunk){ 0, 0, full, NULL, 0 };
		steady = (struct bake_layer){ preset_chunk_log2(p), &all, 1 };
		t_bake = bake(n, delta);
		chunk = (struct bake_chunk){ 0, 0, delta, edits + folded, n - folded };
		layer = (struct bake_layer){ preset_chunk_log2(p), &chunk, 1 };
		if (n > 1000) { /* seconds: one call */
			double t0 = bench_now();

			replay(NULL);
			t_replay = bench_now() - t0;
		} else {
			t_replay = bench_time(replay, NULL);
		}
		{
			struct bench_fig f[3] = { { baked_steady, NULL }, { baked, NULL },
						  { unedited, NULL } };
			double sec[3];

			bench_times(f, 3, sec);
			t_steady = sec[0];
			t_baked = sec[1];
			t_plain = sec[2];
		}
		printf("%zu\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.1f\n", n, t_replay * 1e3,
		       t_steady * 1e3, t_baked * 1e3, t_plain * 1e3, t_steady / t_plain,
		       t_baked / t_plain, t_bake * 1e3);
		free(full);
	}
	printf("note: baked = every edit in the chunk's delta (the steady state); + %d since ="
	       " the delta of all but the last %d, then those (the most a served tile applies:"
	       " a server bakes a chunk once %d edits are unbaked, --bake-after, in the"
	       " background); incremental bake = one such bake on a worker\n",
	       PENDING, PENDING, PENDING + 1);
	free(edits);
	free(delta);
	preset_destroy_all(presets, np);
	return 0;
}
