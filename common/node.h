/*
 * node.h - the parsed form of a generator preset, shared by preset.c (which
 * builds and validates it) and pipeline_eval.c (which evaluates it). Not
 * part of the public API: callers use preset.h.
 */
#ifndef NODE_H
#define NODE_H

#include <stdint.h>

#include "erosion.h"
#include "fbm.h"

#define NODE_MAX_INPUTS 8
#define NODE_MAX_COUNT  64
#define NODE_MAX_DEPTH  16

enum node_type {
	NODE_FBM,        /* fractal noise */
	NODE_WARP,       /* evaluate source at p + amplitude * (warp_a(p), warp_b(p)) */
	NODE_MIX,        /* sum w_k * in_k / sum |w_k| */
	NODE_BLEND,      /* a..b by smoothstep(lo, hi, control) */
	NODE_MUL,        /* a * b */
	NODE_SCALE_BIAS, /* clamp(src * scale + bias, -1, 1) */
	NODE_TERRACE,    /* steps with smooth risers */
	NODE_GULLIES,    /* erosion filter: slope-aligned gullies on a Perlin fBm */
	NODE_TYPE_COUNT
};

struct node {
	enum node_type type;
	int index;                       /* depth-first number: salt and buffer */
	int grid_log2;                   /* sampled on a 2^grid_log2 m grid (0: exact) */
	struct fbm_params fbm;           /* FBM; WARP: the warp field */
	double amplitude;                /* WARP: metres */
	double a, b;                     /* BLEND: lo, hi; SCALE_BIAS: scale, bias;
					    TERRACE: steps, smoothness */
	struct {
		double strength;     /* 0..1 of the [-1, 1] range */
		double wavelength;   /* metres between gullies, a power of two */
		double ridges;       /* 0: carve valleys only .. 1: raise ridges only */
		double full_slope;   /* source gradient (per metre) of full effect */
		int octaves;         /* 1..4 */
	} gully;                         /* GULLIES; in[0] is the Perlin fBm */
	int n_in;
	double weight[NODE_MAX_INPUTS];  /* MIX */
	struct node *in[NODE_MAX_INPUTS];/* MIX: inputs; WARP, SCALE_BIAS, TERRACE:
					    in[0]; BLEND: a, b, control; MUL: a, b */
};

struct preset {
	char *name;
	char *description;
	char *canonical;
	uint64_t fingerprint;
	int chunk_log2;
	uint32_t quantum_um;
	double hmin, hmax, sea_level;
	int eroded;                      /* "hydraulic" present */
	struct erosion_params ero;
	int region_log2;                 /* regions of 2^region_log2 m */
	int band, apron;                 /* cross-fade band, erosion apron (m) */
	int n_nodes;
	struct node *root;
	struct node nodes[NODE_MAX_COUNT];
};

#endif
