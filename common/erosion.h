/*
 * erosion.h - particle (droplet) hydraulic erosion of a heightmap, and two
 * terrain measures that show it working.
 *
 * erosion_droplets() erodes a float heightmap (metres) in place. The map is
 * a w x h rectangle of the world's 1 m lattice: sample (i, j) is world
 * (x0 + i, z0 + j). Droplets are seeded per world cell of p->cell metres
 * from an integer hash of (cell x, cell z, seed, droplet index), so a
 * droplet starts at the same world position in every map that spawns its
 * cell, and they run one after another in a fixed order. Droplet positions
 * are map-local fixed point (Q24), never large floats, and all arithmetic
 * is float32 in a fixed order with sqrt as the only libm call: the same
 * (heights, x0, z0, seed, params) give the same bits everywhere.
 *
 * What this module leaves to others: choosing the regions to erode, their
 * apron and the cross-fade between overlapping regions (pipeline.c), and
 * caching eroded regions (server). Droplets that cross the map's edge die
 * there, so only maps of identical extent give identical results; a
 * caller that wants position-pure heights erodes fixed world regions.
 */
#ifndef EROSION_H
#define EROSION_H

#include <stddef.h>
#include <stdint.h>

#define EROSION_MAX_STEPS 1024
#define EROSION_MAX_CELL 256
#define EROSION_MAX_DROPLETS_PER_CELL 64
#define EROSION_MAX_RADIUS 8
#define EROSION_MAX_SIDE 16384      /* samples per side of a map */
#define EROSION_MAX_ABS_HEIGHT 1e6f /* metres; inputs beyond are rejected */

/*
 * Droplet parameters, with typical values for a 1 m lattice (those of
 * erosion_params_default()). One step moves a droplet one sample.
 *
 * Per step: the height and gradient g come from bilinear interpolation of
 * the 4 samples around the droplet; dir = normalise(dir * inertia -
 * g * (1 - inertia)); move; dh = new height - old height; capacity
 * C = max(-dh, min_slope) * speed * water * capacity (proportional to the
 * speed, as C = kc |v|, and to slope and water as in Beyer's formulation).
 * Carrying more than C, or going uphill, it deposits at the old position
 * (bilinearly): uphill min(dh, sediment) to fill the pit, else
 * deposit * (sediment - C). Otherwise it erodes min(erode * (C - s), -dh)
 * from a cone brush of `radius` around the nearest sample (radius 0: the
 * 4 bilinear samples instead). Then speed = sqrt(max(0, speed^2 -
 * dh * gravity)) (it speeds up downhill), water *= 1 - evaporation.
 *
 * Evaporation 0.05 rather than the often-quoted 0.01: with 0.01 a droplet
 * still has half its water after 64 steps and drops some 15% of all the
 * eroded sediment in single spots when it dies (spikes of up to 10 m on
 * a 1 m lattice); at 0.05 its load settles along the way (about 3%).
 */
struct erosion_params {
	float inertia;          /* 0..1: 0.05; share of the old direction kept */
	float capacity;         /* 0..1000: 4; sediment capacity factor (kc) */
	float min_slope;        /* 0..10: 0.01; keeps capacity > 0 on flats */
	float deposit;          /* 0..1: 0.3; share of a surplus dropped per step */
	float erode;            /* 0..1: 0.3; share of a deficit picked up per step */
	float evaporation;      /* 0..1: 0.05; share of water lost per step */
	float gravity;          /* 0..1000: 4; speed^2 gained per metre of descent */
	float init_speed;       /* 0..1000: 1 */
	float init_water;       /* 0..1000: 1 */
	int max_steps;          /* 1..1024: 64; a droplet's lifetime in steps */
	int cell;               /* 1..256: 4; metres per seeding cell side */
	int droplets_per_cell;  /* 1..64: 1 */
	int radius;             /* 0..8: 2; erosion brush radius in samples */
};

/* Totals of one erosion_droplets() call, summed in a fixed order. */
struct erosion_stats {
	uint64_t droplets;   /* droplets simulated */
	uint64_t steps;      /* steps taken, over all droplets */
	uint64_t exited;     /* droplets that left the map (the rest ran out of steps) */
	double eroded;       /* metres of height removed, summed over samples */
	double deposited;    /* metres of height added, summed over samples */
	double settled;      /* of which dropped by droplets that ran out of steps */
	double carried_out;  /* sediment lost: off the map, or left at its border */
};

/*
 * A droplet's start: world metre (x, z) plus a Q24 fraction, and its seed
 * cell and index.
 */
struct erosion_drop {
	int64_t x, z;
	uint32_t fx, fz;     /* fraction of a metre, Q24: 0 .. 2^24 - 1 */
	int64_t cx, cz;      /* seeding cell */
	int k;               /* droplet index within the cell */
};

/* The typical parameters listed in struct erosion_params. */
struct erosion_params erosion_params_default(void);

/*
 * Check p against the ranges above (NaN fails). Returns 0, or ERR_RANGE
 * with a static message naming the field in *why (why may be NULL).
 */
int erosion_params_check(const struct erosion_params *p, const char **why);

/*
 * Erode hm (w x h samples, row-major, row j at hm + j * w) in place, world
 * origin (x0, z0), with droplets seeded from seed. A seeding cell spawns
 * when its whole square [cx * cell, cx * cell + cell) x (the same in z)
 * lies in the map minus a margin of 1 sample on each side, i.e. within
 * world [x0 + 1, x0 + w - 2]; cells run row-major (z, then x, ascending),
 * then by droplet index. A droplet that leaves the map takes its sediment
 * with it; one that runs out of steps drops it where it stands. The
 * border samples (that margin) are read but never written: a fixed base
 * level, so outlets at the edge cannot dig themselves ever deeper. When
 * stats is not NULL it receives the totals. Uses no heap; time is bounded
 * by droplets * max_steps * (2 radius + 1)^2.
 *
 * Returns 0; ERR_INVAL for a NULL hm or p, or w, h outside 3..16384;
 * ERR_RANGE for bad parameters, |x0| or |z0| >= 2^62, or a height that is
 * not finite or beyond EROSION_MAX_ABS_HEIGHT (hm is then untouched).
 *
 *     struct erosion_params p = erosion_params_default();
 *     err = erosion_droplets(hm, 384, 384, x0, z0, seed, &p, NULL);
 */
int erosion_droplets(float *hm, int w, int h, int64_t x0, int64_t z0,
		     uint64_t seed, const struct erosion_params *p,
		     struct erosion_stats *stats);

/*
 * The droplet starts of the map erosion_droplets() would erode, in its
 * order: writes the first min(count, cap) of them to out (out may be NULL
 * when cap is 0) and the total count to *n. Same arguments and errors as
 * erosion_droplets(), without the heights.
 */
int erosion_drop_list(int w, int h, int64_t x0, int64_t z0, uint64_t seed,
		      const struct erosion_params *p, struct erosion_drop *out,
		      size_t cap, size_t *n);

/*
 * D8 flow accumulation over hm (w x h): every sample drains to its
 * steepest strictly lower neighbour of 8 (slope = drop / distance, the
 * diagonal distance sqrt 2; ties go to the first in the order (di, dj) =
 * (0,-1) (1,-1) (1,0) (1,1) (0,1) (-1,1) (-1,0) (-1,-1)); samples are
 * visited from high to low (ties by lower index first) and pass on their
 * upstream area, themselves included.
 * Writes to *share the fraction of samples whose area >= threshold
 * samples. Returns 0, ERR_INVAL (NULL, w or h < 1, threshold 0), ERR_RANGE
 * (a height not finite, more than 2^31 samples) or ERR_NOMEM.
 */
int erosion_channel_share(const float *hm, int w, int h, uint32_t threshold,
			  double *share);

/*
 * Hypsometric integral of n heights: (mean - min) / (max - min), in
 * [0, 1]; about 0.5 for symmetric relief, lower for a landscape worn down
 * to its valleys. Returns 0, ERR_INVAL (NULL or n == 0) or ERR_RANGE (a
 * height not finite, or max == min, where it is undefined).
 */
int erosion_hypsometric(const float *hm, size_t n, double *out);

#endif
