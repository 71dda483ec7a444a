/*
 * preset.c - parse, validate and fingerprint generator presets (preset.h).
 *
 * The JSON schema is in docs/presets.md. Parsing is strict: unknown keys,
 * wrong types and out-of-range values are errors that name the field by
 * its path ("root.source.octaves: must be 1..16"). The canonical form is
 * the same tree re-emitted with every default filled in and keys in a fixed
 * order; the fingerprint hashes it with the algorithm version.
 */
#include "preset.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "embed.h"
#include "err.h"
#include "node.h"
#include "tile.h"

struct parser {
	struct preset *p;
	char *err;
	size_t errlen;
	int rc;
	int warps;      /* warps enclosing the node being parsed */
};

static const char *const type_names[NODE_TYPE_COUNT] = {
	[NODE_FBM] = "fbm", [NODE_WARP] = "warp", [NODE_MIX] = "mix",
	[NODE_BLEND] = "blend", [NODE_MUL] = "mul",
	[NODE_SCALE_BIAS] = "scale_bias", [NODE_TERRACE] = "terrace",
	[NODE_GULLIES] = "gullies",
};

static const char *const mode_names[FBM_MODE_COUNT] = {
	[FBM_PLAIN] = "fbm", [FBM_RIDGED] = "ridged", [FBM_BILLOW] = "billow",
};

static int fail(struct parser *ps, int rc, const char *path, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	if (ps->rc)
		return ps->rc;
	ps->rc = rc;
	if (!ps->err || ps->errlen == 0)
		return rc;
	n = (size_t)snprintf(ps->err, ps->errlen, "%s%s", path, *path ? ": " : "");
	if (n < ps->errlen) {
		va_start(ap, fmt);
		vsnprintf(ps->err + n, ps->errlen - n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* path.key into out; a path too long for out is cut short, not overrun. */
static void join(char *out, size_t len, const char *path, const char *key)
{
	if (snprintf(out, len, "%s%s%s", path, *path ? "." : "", key) >= (int)len)
		out[len - 1] = '\0';
}

/* Every key of obj must be in the NULL-terminated list allowed. */
static int only_keys(struct parser *ps, const cJSON *obj, const char *path,
		     const char *const *allowed)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, obj) {
		const char *const *a;

		for (a = allowed; *a; a++)
			if (strcmp(*a, it->string) == 0)
				break;
		if (!*a) {
			char p[256];

			join(p, sizeof(p), path, it->string);
			return fail(ps, ERR_PARSE, p, "unknown key");
		}
	}
	return 0;
}

/* A finite number under key, or def when absent and not required. */
static int number(struct parser *ps, const cJSON *obj, const char *path,
		  const char *key, int required, double def, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char p[256];

	join(p, sizeof(p), path, key);
	if (!v) {
		if (required)
			return fail(ps, ERR_PARSE, p, "missing");
		*out = def;
		return 0;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return fail(ps, ERR_PARSE, p, "must be a number");
	*out = v->valuedouble;
	return 0;
}

static int in_range(struct parser *ps, const char *path, const char *key,
		    double v, double lo, double hi)
{
	char p[256];

	if (v >= lo && v <= hi)
		return 0;
	join(p, sizeof(p), path, key);
	return fail(ps, ERR_RANGE, p, "must be in [%g, %g]", lo, hi);
}

static int name_index(const char *s, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (names[i] && strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static int fbm_parse(struct parser *ps, const cJSON *obj, const char *path,
		     struct fbm_params *f)
{
	const cJSON *noise = cJSON_GetObjectItemCaseSensitive(obj, "noise");
	const cJSON *mode = cJSON_GetObjectItemCaseSensitive(obj, "mode");
	const char *why;
	double oct = 0.0;
	char p[256];

	f->noise = NOISE_PERLIN;
	f->mode = FBM_PLAIN;
	if (noise) {
		join(p, sizeof(p), path, "noise");
		if (!cJSON_IsString(noise) || noise_kind_parse(noise->valuestring) < 0)
			return fail(ps, ERR_PARSE, p, "must be one of perlin, simplex, "
				    "value, value_quintic, worley_f1, worley_f2f1");
		f->noise = (enum noise_kind)noise_kind_parse(noise->valuestring);
	}
	if (mode) {
		join(p, sizeof(p), path, "mode");
		if (!cJSON_IsString(mode) ||
		    name_index(mode->valuestring, mode_names, FBM_MODE_COUNT) < 0)
			return fail(ps, ERR_PARSE, p, "must be fbm, ridged or billow");
		f->mode = (enum fbm_mode)name_index(mode->valuestring, mode_names,
						    FBM_MODE_COUNT);
	}
	if (number(ps, obj, path, "octaves", 0, 6, &oct) ||
	    number(ps, obj, path, "wavelength", 0, 1024, &f->wavelength) ||
	    number(ps, obj, path, "gain", 0, 0.5, &f->gain) ||
	    number(ps, obj, path, "lacunarity", 0, 2.0, &f->lacunarity) ||
	    number(ps, obj, path, "sharpness", 0, 2.0, &f->sharpness))
		return ps->rc;
	if (oct != floor(oct) || oct < 1 || oct > FBM_MAX_OCTAVES) {
		join(p, sizeof(p), path, "octaves");
		return fail(ps, ERR_RANGE, p, "must be an integer 1..16");
	}
	f->octaves = (int)oct;
	if (fbm_params_check(f, &why))
		return fail(ps, ERR_RANGE, path, "%s", why);
	return 0;
}

static int node_parse(struct parser *ps, const cJSON *obj, const char *path,
		      int depth, struct node **out);

static int child(struct parser *ps, const cJSON *obj, const char *path,
		 const char *key, int depth, struct node **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	char p[256];

	join(p, sizeof(p), path, key);
	if (!v)
		return fail(ps, ERR_PARSE, p, "missing");
	return node_parse(ps, v, p, depth + 1, out);
}

static int parse_fbm(struct parser *ps, const cJSON *o, const char *path, struct node *n)
{
	static const char *const keys[] = { "type", "grid", "noise", "mode", "octaves",
		"wavelength", "gain", "lacunarity", "sharpness", NULL };

	if (only_keys(ps, o, path, keys))
		return ps->rc;
	return fbm_parse(ps, o, path, &n->fbm);
}

static int parse_warp(struct parser *ps, const cJSON *o, const char *path,
		      int depth, struct node *n)
{
	static const char *const keys[] = { "type", "grid", "amplitude", "warp", "source", NULL };
	static const char *const wkeys[] = { "noise", "mode", "octaves",
		"wavelength", "gain", "lacunarity", "sharpness", NULL };
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "warp");
	char p[256];

	join(p, sizeof(p), path, "warp");
	if (only_keys(ps, o, path, keys) ||
	    number(ps, o, path, "amplitude", 1, 0, &n->amplitude) ||
	    in_range(ps, path, "amplitude", n->amplitude, 0, 1e5))
		return ps->rc;
	if (!cJSON_IsObject(w))
		return fail(ps, ERR_PARSE, p, "must be an object of fbm parameters");
	if (only_keys(ps, w, p, wkeys) || fbm_parse(ps, w, p, &n->fbm))
		return ps->rc;
	n->n_in = 1;
	ps->warps++;
	child(ps, o, path, "source", depth, &n->in[0]);
	ps->warps--;
	return ps->rc;
}

static int parse_mix(struct parser *ps, const cJSON *o, const char *path,
		     int depth, struct node *n)
{
	static const char *const keys[] = { "type", "grid", "inputs", NULL };
	static const char *const ikeys[] = { "weight", "source", NULL };
	const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "inputs"), *it;
	double total = 0;
	char p[256];

	join(p, sizeof(p), path, "inputs");
	if (only_keys(ps, o, path, keys))
		return ps->rc;
	if (!cJSON_IsArray(in) || cJSON_GetArraySize(in) < 1 ||
	    cJSON_GetArraySize(in) > NODE_MAX_INPUTS)
		return fail(ps, ERR_PARSE, p, "must be an array of 1..8 inputs");
	cJSON_ArrayForEach(it, in) {
		char q[256];
		int k = n->n_in++;

		if (snprintf(q, sizeof(q), "%s[%d]", p, k) >= (int)sizeof(q))
			return fail(ps, ERR_RANGE, p, "nested too deeply");
		if (!cJSON_IsObject(it))
			return fail(ps, ERR_PARSE, q, "must be {\"weight\", \"source\"}");
		if (only_keys(ps, it, q, ikeys) ||
		    number(ps, it, q, "weight", 0, 1.0, &n->weight[k]) ||
		    in_range(ps, q, "weight", n->weight[k], -1e3, 1e3) ||
		    child(ps, it, q, "source", depth, &n->in[k]))
			return ps->rc;
		total += fabs(n->weight[k]);
	}
	if (total <= 0)
		return fail(ps, ERR_RANGE, p, "weights must not all be 0");
	return 0;
}

static int parse_blend(struct parser *ps, const cJSON *o, const char *path,
		       int depth, struct node *n)
{
	static const char *const keys[] = { "type", "grid", "a", "b", "control", "lo", "hi", NULL };

	if (only_keys(ps, o, path, keys) ||
	    number(ps, o, path, "lo", 0, -0.5, &n->a) ||
	    number(ps, o, path, "hi", 0, 0.5, &n->b) ||
	    in_range(ps, path, "lo", n->a, -1, 1) ||
	    in_range(ps, path, "hi", n->b, n->a + 1e-3, 1))
		return ps->rc;
	n->n_in = 3;
	if (child(ps, o, path, "a", depth, &n->in[0]) ||
	    child(ps, o, path, "b", depth, &n->in[1]))
		return ps->rc;
	return child(ps, o, path, "control", depth, &n->in[2]);
}

static int parse_mul(struct parser *ps, const cJSON *o, const char *path,
		     int depth, struct node *n)
{
	static const char *const keys[] = { "type", "grid", "a", "b", NULL };

	if (only_keys(ps, o, path, keys))
		return ps->rc;
	n->n_in = 2;
	if (child(ps, o, path, "a", depth, &n->in[0]))
		return ps->rc;
	return child(ps, o, path, "b", depth, &n->in[1]);
}

static int parse_scale_bias(struct parser *ps, const cJSON *o, const char *path,
			    int depth, struct node *n)
{
	static const char *const keys[] = { "type", "grid", "scale", "bias", "source", NULL };

	if (only_keys(ps, o, path, keys) ||
	    number(ps, o, path, "scale", 0, 1.0, &n->a) ||
	    number(ps, o, path, "bias", 0, 0.0, &n->b) ||
	    in_range(ps, path, "scale", n->a, -1e3, 1e3) ||
	    in_range(ps, path, "bias", n->b, -1e3, 1e3))
		return ps->rc;
	n->n_in = 1;
	return child(ps, o, path, "source", depth, &n->in[0]);
}

static int parse_terrace(struct parser *ps, const cJSON *o, const char *path,
			 int depth, struct node *n)
{
	static const char *const keys[] = { "type", "grid", "steps", "smoothness", "source", NULL };
	char p[256];

	if (only_keys(ps, o, path, keys) ||
	    number(ps, o, path, "steps", 1, 0, &n->a) ||
	    number(ps, o, path, "smoothness", 0, 0.25, &n->b) ||
	    in_range(ps, path, "smoothness", n->b, 0, 1))
		return ps->rc;
	if (n->a != floor(n->a) || n->a < 1 || n->a > 256) {
		join(p, sizeof(p), path, "steps");
		return fail(ps, ERR_RANGE, p, "must be an integer 1..256");
	}
	n->n_in = 1;
	return child(ps, o, path, "source", depth, &n->in[0]);
}

static int power_of_two(double v, double lo, double hi)
{
	double p;

	for (p = lo; p <= hi; p *= 2)
		if (v == p)
			return 1;
	return 0;
}

/* The erosion filter: its source must be a plain Perlin fBm (for the
 * analytic gradient) and it must not sit under a warp (its gully lattice
 * is the world's). */
static int parse_gullies(struct parser *ps, const cJSON *o, const char *path,
			 int depth, struct node *n)
{
	static const char *const keys[] = { "type", "grid", "strength", "wavelength",
		"octaves", "ridges", "full_slope", "source", NULL };
	double oct = 0.0;
	char p[256];

	if (only_keys(ps, o, path, keys) ||
	    number(ps, o, path, "strength", 0, 0.2, &n->gully.strength) ||
	    number(ps, o, path, "wavelength", 0, 32, &n->gully.wavelength) ||
	    number(ps, o, path, "octaves", 0, 3, &oct) ||
	    number(ps, o, path, "ridges", 0, 0.25, &n->gully.ridges) ||
	    number(ps, o, path, "full_slope", 0, 0.001, &n->gully.full_slope) ||
	    in_range(ps, path, "strength", n->gully.strength, 0, 1) ||
	    in_range(ps, path, "ridges", n->gully.ridges, 0, 1) ||
	    in_range(ps, path, "full_slope", n->gully.full_slope, 1e-6, 1) ||
	    in_range(ps, path, "octaves", oct, 1, 4))
		return ps->rc;
	join(p, sizeof(p), path, "octaves");
	if (oct != floor(oct))
		return fail(ps, ERR_RANGE, p, "must be an integer 1..4");
	n->gully.octaves = (int)oct;
	join(p, sizeof(p), path, "wavelength");
	if (!power_of_two(n->gully.wavelength, 4, 1024) ||
	    n->gully.wavelength / (1 << (n->gully.octaves - 1)) < 2)
		return fail(ps, ERR_RANGE, p, "must be a power of two 4..1024 whose "
			    "last octave is at least 2 m");
	if (ps->warps > 0)
		return fail(ps, ERR_RANGE, path, "gullies: not allowed under a warp");
	n->n_in = 1;
	if (child(ps, o, path, "source", depth, &n->in[0]))
		return ps->rc;
	join(p, sizeof(p), path, "source");
	if (n->in[0]->type != NODE_FBM || n->in[0]->fbm.noise != NOISE_PERLIN ||
	    n->in[0]->fbm.mode != FBM_PLAIN || n->in[0]->grid_log2 != 0)
		return fail(ps, ERR_RANGE, p, "must be a plain Perlin fbm without grid");
	return 0;
}

/*
 * "grid": g evaluates the node (for a warp: its warp field) exactly at the
 * world points that are multiples of g metres and interpolates between them
 * (Catmull-Rom, C1), a pure function of position that costs a fraction of
 * the samples. Only where positions are unwarped, so the grid is the world's.
 */
static int parse_grid(struct parser *ps, const cJSON *obj, const char *path,
		      struct node *n)
{
	double g = 0.0;
	char p[256];

	join(p, sizeof(p), path, "grid");
	if (number(ps, obj, path, "grid", 0, 1, &g))
		return ps->rc;
	for (n->grid_log2 = 0; n->grid_log2 <= 8; n->grid_log2++)
		if (g == (double)(1 << n->grid_log2))
			break;
	if (n->grid_log2 > 8 || n->grid_log2 > ps->p->chunk_log2)
		return fail(ps, ERR_RANGE, p, "must be a power of two from 1 to 256 "
			    "and at most chunk_size");
	if (n->grid_log2 > 0 && ps->warps > 0)
		return fail(ps, ERR_RANGE, p, "not allowed under a warp");
	return 0;
}

static int node_parse(struct parser *ps, const cJSON *obj, const char *path,
		      int depth, struct node **out)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(obj, "type");
	struct node *n;
	int t;

	if (depth > NODE_MAX_DEPTH)
		return fail(ps, ERR_RANGE, path, "nested deeper than %d", NODE_MAX_DEPTH);
	if (!cJSON_IsObject(obj))
		return fail(ps, ERR_PARSE, path, "must be an object");
	if (!cJSON_IsString(type) ||
	    (t = name_index(type->valuestring, type_names, NODE_TYPE_COUNT)) < 0)
		return fail(ps, ERR_PARSE, path, "type must be one of fbm, warp, mix, "
			    "blend, mul, scale_bias, terrace, gullies");
	if (ps->p->n_nodes >= NODE_MAX_COUNT)
		return fail(ps, ERR_RANGE, path, "more than %d nodes", NODE_MAX_COUNT);
	n = &ps->p->nodes[ps->p->n_nodes];
	n->index = ps->p->n_nodes++;
	n->type = (enum node_type)t;
	*out = n;
	if (parse_grid(ps, obj, path, n))
		return ps->rc;
	switch (n->type) {
	case NODE_FBM:        return parse_fbm(ps, obj, path, n);
	case NODE_WARP:       return parse_warp(ps, obj, path, depth, n);
	case NODE_MIX:        return parse_mix(ps, obj, path, depth, n);
	case NODE_BLEND:      return parse_blend(ps, obj, path, depth, n);
	case NODE_MUL:        return parse_mul(ps, obj, path, depth, n);
	case NODE_SCALE_BIAS: return parse_scale_bias(ps, obj, path, depth, n);
	case NODE_TERRACE:    return parse_terrace(ps, obj, path, depth, n);
	case NODE_GULLIES:    return parse_gullies(ps, obj, path, depth, n);
	default:              return fail(ps, ERR_PARSE, path, "bad type");
	}
}

static char *dup_string(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

static int valid_name(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

/*
 * "hydraulic": particle erosion of the whole world in regions (docs/
 * presets.md). Every parameter is optional; erosion.h gives the defaults.
 */
static int parse_hydraulic(struct parser *ps, const cJSON *h)
{
	static const char *const keys[] = { "region", "band", "apron", "inertia",
		"capacity", "min_slope", "deposit", "erode", "evaporation", "gravity",
		"init_speed", "init_water", "max_steps", "cell", "droplets_per_cell",
		"radius", NULL };
	static const struct {
		const char *key;
		size_t off;
	} floats[] = {
#define F(name) { #name, offsetof(struct erosion_params, name) }
		F(inertia), F(capacity), F(min_slope), F(deposit), F(erode),
		F(evaporation), F(gravity), F(init_speed), F(init_water),
#undef F
	};
	struct preset *p = ps->p;
	double region = 0, band = 0, apron = 0, v = 0;
	const char *why;
	size_t k;

	if (!h)
		return 0;
	if (!cJSON_IsObject(h))
		return fail(ps, ERR_PARSE, "hydraulic", "must be an object");
	if (only_keys(ps, h, "hydraulic", keys))
		return ps->rc;
	p->eroded = 1;
	p->ero = erosion_params_default();
	for (k = 0; k < sizeof(floats) / sizeof(floats[0]); k++) {
		float *f = (float *)(void *)((char *)&p->ero + floats[k].off);

		if (number(ps, h, "hydraulic", floats[k].key, 0, *f, &v))
			return ps->rc;
		*f = (float)v;
	}
	if (number(ps, h, "hydraulic", "max_steps", 0, p->ero.max_steps, &v))
		return ps->rc;
	p->ero.max_steps = v == floor(v) && fabs(v) < 1e6 ? (int)v : -1;
	if (number(ps, h, "hydraulic", "cell", 0, p->ero.cell, &v))
		return ps->rc;
	p->ero.cell = v == floor(v) && fabs(v) < 1e6 ? (int)v : -1;
	if (number(ps, h, "hydraulic", "droplets_per_cell", 0, p->ero.droplets_per_cell, &v))
		return ps->rc;
	p->ero.droplets_per_cell = v == floor(v) && fabs(v) < 1e6 ? (int)v : -1;
	if (number(ps, h, "hydraulic", "radius", 0, p->ero.radius, &v))
		return ps->rc;
	p->ero.radius = v == floor(v) && fabs(v) < 1e6 ? (int)v : -1;
	if (erosion_params_check(&p->ero, &why))
		return fail(ps, ERR_RANGE, "hydraulic", "%s", why);
	if (number(ps, h, "hydraulic", "region", 0, 256, &region) ||
	    number(ps, h, "hydraulic", "band", 0, 32, &band) ||
	    number(ps, h, "hydraulic", "apron", 0, 32, &apron))
		return ps->rc;
	for (p->region_log2 = 6; p->region_log2 <= 11; p->region_log2++)
		if (region == (double)(1 << p->region_log2))
			break;
	if (p->region_log2 > 11 || p->region_log2 < p->chunk_log2)
		return fail(ps, ERR_RANGE, "hydraulic.region", "must be a power of two "
			    "from chunk_size to 2048");
	if (band != floor(band) || band < 2 || band > region / 2 || (int)band % 2)
		return fail(ps, ERR_RANGE, "hydraulic.band", "must be an even number of "
			    "metres in [2, region / 2]");
	if (apron != floor(apron) || apron < 0 || apron > 512)
		return fail(ps, ERR_RANGE, "hydraulic.apron", "must be 0..512 metres");
	p->band = (int)band;
	p->apron = (int)apron;
	return 0;
}

static int parse_world(struct parser *ps, const cJSON *root, const char *name)
{
	static const char *const keys[] = { "name", "description", "chunk_size",
		"quantum_m", "height", "sea_level", "hydraulic", "root", NULL };
	static const char *const hkeys[] = { "min", "max", NULL };
	const cJSON *jn = cJSON_GetObjectItemCaseSensitive(root, "name");
	const cJSON *jd = cJSON_GetObjectItemCaseSensitive(root, "description");
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "height");
	struct preset *p = ps->p;
	double chunk, quantum, steps;

	if (!cJSON_IsObject(root))
		return fail(ps, ERR_PARSE, "", "a preset must be a JSON object");
	if (only_keys(ps, root, "", keys))
		return ps->rc;
	if (!name && !cJSON_IsString(jn))
		return fail(ps, ERR_PARSE, "name", "missing");
	name = name ? name : jn->valuestring;
	if (!valid_name(name))
		return fail(ps, ERR_PARSE, "name", "must be 1..64 of [A-Za-z0-9_-]");
	if (jd && !cJSON_IsString(jd))
		return fail(ps, ERR_PARSE, "description", "must be a string");
	p->name = dup_string(name);
	p->description = dup_string(jd ? jd->valuestring : "");
	if (!p->name || !p->description)
		return fail(ps, ERR_NOMEM, "", "out of memory");
	if (number(ps, root, "", "chunk_size", 0, 256, &chunk) ||
	    number(ps, root, "", "quantum_m", 0, 0.01, &quantum) ||
	    number(ps, root, "", "sea_level", 0, 0, &p->sea_level))
		return ps->rc;
	for (p->chunk_log2 = TILE_MIN_CHUNK_LOG2; p->chunk_log2 <= TILE_MAX_CHUNK_LOG2;
	     p->chunk_log2++)
		if (chunk == (double)(1 << p->chunk_log2))
			break;
	if (p->chunk_log2 > TILE_MAX_CHUNK_LOG2)
		return fail(ps, ERR_RANGE, "chunk_size", "must be a power of two 16..4096");
	if (!(quantum >= 1e-6 && quantum <= 1.0) ||
	    fabs(quantum * 1e6 - floor(quantum * 1e6 + 0.5)) > 1e-6)
		return fail(ps, ERR_RANGE, "quantum_m", "must be a whole number of "
			    "micrometres in [1e-6, 1]");
	p->quantum_um = (uint32_t)floor(quantum * 1e6 + 0.5);
	if (!cJSON_IsObject(h))
		return fail(ps, ERR_PARSE, "height", "must be {\"min\", \"max\"}");
	if (only_keys(ps, h, "height", hkeys) ||
	    number(ps, h, "height", "min", 1, 0, &p->hmin) ||
	    number(ps, h, "height", "max", 1, 0, &p->hmax) ||
	    in_range(ps, "height", "min", p->hmin, -1e5, 1e5) ||
	    in_range(ps, "height", "max", p->hmax, p->hmin + 0.01, 1e5) ||
	    in_range(ps, "", "sea_level", p->sea_level, -1e5, 1e5))
		return ps->rc;
	steps = (p->hmax - p->hmin) * 1e6 / p->quantum_um;
	if (fabs(p->hmin) * 1e6 / p->quantum_um + steps > 2e9)
		return fail(ps, ERR_RANGE, "height", "too many quanta for int32");
	if (child(ps, root, "", "root", 0, &p->root))
		return ps->rc;
	return parse_hydraulic(ps, cJSON_GetObjectItemCaseSensitive(root, "hydraulic"));
}

/* Canonical form: every field, defaults filled in, fixed key order. */
static cJSON *fbm_emit(cJSON *o, const struct fbm_params *f)
{
	cJSON_AddStringToObject(o, "noise", noise_kind_name(f->noise));
	cJSON_AddStringToObject(o, "mode", mode_names[f->mode]);
	cJSON_AddNumberToObject(o, "octaves", f->octaves);
	cJSON_AddNumberToObject(o, "wavelength", f->wavelength);
	cJSON_AddNumberToObject(o, "gain", f->gain);
	cJSON_AddNumberToObject(o, "lacunarity", f->lacunarity);
	cJSON_AddNumberToObject(o, "sharpness", f->sharpness);
	return o;
}

static cJSON *node_emit(const struct node *n)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	int k;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "type", type_names[n->type]);
	cJSON_AddNumberToObject(o, "grid", 1 << n->grid_log2);
	switch (n->type) {
	case NODE_FBM:
		fbm_emit(o, &n->fbm);
		break;
	case NODE_WARP:
		cJSON_AddNumberToObject(o, "amplitude", n->amplitude);
		cJSON_AddItemToObject(o, "warp", fbm_emit(cJSON_CreateObject(), &n->fbm));
		cJSON_AddItemToObject(o, "source", node_emit(n->in[0]));
		break;
	case NODE_MIX:
		arr = cJSON_AddArrayToObject(o, "inputs");
		for (k = 0; arr && k < n->n_in; k++) {
			cJSON *in = cJSON_CreateObject();

			cJSON_AddNumberToObject(in, "weight", n->weight[k]);
			cJSON_AddItemToObject(in, "source", node_emit(n->in[k]));
			cJSON_AddItemToArray(arr, in);
		}
		break;
	case NODE_BLEND:
		cJSON_AddNumberToObject(o, "lo", n->a);
		cJSON_AddNumberToObject(o, "hi", n->b);
		cJSON_AddItemToObject(o, "a", node_emit(n->in[0]));
		cJSON_AddItemToObject(o, "b", node_emit(n->in[1]));
		cJSON_AddItemToObject(o, "control", node_emit(n->in[2]));
		break;
	case NODE_MUL:
		cJSON_AddItemToObject(o, "a", node_emit(n->in[0]));
		cJSON_AddItemToObject(o, "b", node_emit(n->in[1]));
		break;
	case NODE_SCALE_BIAS:
		cJSON_AddNumberToObject(o, "scale", n->a);
		cJSON_AddNumberToObject(o, "bias", n->b);
		cJSON_AddItemToObject(o, "source", node_emit(n->in[0]));
		break;
	case NODE_TERRACE:
		cJSON_AddNumberToObject(o, "steps", n->a);
		cJSON_AddNumberToObject(o, "smoothness", n->b);
		cJSON_AddItemToObject(o, "source", node_emit(n->in[0]));
		break;
	case NODE_GULLIES:
		cJSON_AddNumberToObject(o, "strength", n->gully.strength);
		cJSON_AddNumberToObject(o, "wavelength", n->gully.wavelength);
		cJSON_AddNumberToObject(o, "octaves", n->gully.octaves);
		cJSON_AddNumberToObject(o, "ridges", n->gully.ridges);
		cJSON_AddNumberToObject(o, "full_slope", n->gully.full_slope);
		cJSON_AddItemToObject(o, "source", node_emit(n->in[0]));
		break;
	default:
		break;
	}
	return o;
}

static char *canonical(const struct preset *p)
{
	cJSON *o = cJSON_CreateObject(), *h;
	char *s = NULL;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "algorithm", PRESET_ALGO_VERSION);
	cJSON_AddNumberToObject(o, "chunk_size", 1 << p->chunk_log2);
	cJSON_AddNumberToObject(o, "quantum_m", p->quantum_um / 1e6);
	h = cJSON_AddObjectToObject(o, "height");
	cJSON_AddNumberToObject(h, "min", p->hmin);
	cJSON_AddNumberToObject(h, "max", p->hmax);
	cJSON_AddNumberToObject(o, "sea_level", p->sea_level);
	if (p->eroded) {
		cJSON *e = cJSON_AddObjectToObject(o, "hydraulic");

		cJSON_AddNumberToObject(e, "region", 1 << p->region_log2);
		cJSON_AddNumberToObject(e, "band", p->band);
		cJSON_AddNumberToObject(e, "apron", p->apron);
		cJSON_AddNumberToObject(e, "inertia", p->ero.inertia);
		cJSON_AddNumberToObject(e, "capacity", p->ero.capacity);
		cJSON_AddNumberToObject(e, "min_slope", p->ero.min_slope);
		cJSON_AddNumberToObject(e, "deposit", p->ero.deposit);
		cJSON_AddNumberToObject(e, "erode", p->ero.erode);
		cJSON_AddNumberToObject(e, "evaporation", p->ero.evaporation);
		cJSON_AddNumberToObject(e, "gravity", p->ero.gravity);
		cJSON_AddNumberToObject(e, "init_speed", p->ero.init_speed);
		cJSON_AddNumberToObject(e, "init_water", p->ero.init_water);
		cJSON_AddNumberToObject(e, "max_steps", p->ero.max_steps);
		cJSON_AddNumberToObject(e, "cell", p->ero.cell);
		cJSON_AddNumberToObject(e, "droplets_per_cell", p->ero.droplets_per_cell);
		cJSON_AddNumberToObject(e, "radius", p->ero.radius);
	}
	cJSON_AddItemToObject(o, "root", node_emit(p->root));
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

int preset_parse(const char *name, const char *json, size_t len,
		 struct preset **out, char *err, size_t errlen)
{
	struct parser ps = { NULL, err, errlen, 0, 0 };
	const char *end = NULL;
	cJSON *root;

	if (!json || !out)
		return ERR_INVAL;
	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	ps.p = calloc(1, sizeof(*ps.p));
	if (!ps.p)
		return ERR_NOMEM;
	root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
	if (!root) {
		fail(&ps, ERR_PARSE, "", "invalid JSON near byte %ld",
		     end ? (long)(end - json) : 0L);
	} else if (parse_world(&ps, root, name) == 0) {
		ps.p->canonical = canonical(ps.p);
		if (!ps.p->canonical)
			fail(&ps, ERR_NOMEM, "", "out of memory");
		else
			ps.p->fingerprint = XXH3_64bits(ps.p->canonical,
							strlen(ps.p->canonical));
	}
	cJSON_Delete(root);
	if (ps.rc) {
		preset_destroy(ps.p);
		return ps.rc;
	}
	*out = ps.p;
	return 0;
}

void preset_destroy(struct preset *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->description);
	cJSON_free(p->canonical);
	free(p);
}

int preset_load_builtin(struct preset ***out, size_t *n)
{
	const struct embedded_file *f;
	struct preset **v;
	size_t count = 0, i = 0;
	int rc;

	for (f = builtin_presets; f->name; f++)
		count++;
	v = calloc(count ? count : 1, sizeof(*v));
	if (!v)
		return ERR_NOMEM;
	for (f = builtin_presets; f->name; f++, i++) {
		rc = preset_parse(f->name, f->data, f->len, &v[i], NULL, 0);
		if (rc) {
			preset_destroy_all(v, i);
			return rc;
		}
	}
	*out = v;
	*n = count;
	return 0;
}

void preset_destroy_all(struct preset **v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		preset_destroy(v[i]);
	free(v);
}

const char *preset_name(const struct preset *p) { return p->name; }
const char *preset_description(const struct preset *p) { return p->description; }
uint64_t preset_fingerprint(const struct preset *p) { return p->fingerprint; }
const char *preset_canonical(const struct preset *p) { return p->canonical; }
int preset_chunk_log2(const struct preset *p) { return p->chunk_log2; }
int preset_max_lod(const struct preset *p) { return p->chunk_log2; }
uint32_t preset_quantum_um(const struct preset *p) { return p->quantum_um; }
double preset_min_height(const struct preset *p) { return p->hmin; }
double preset_max_height(const struct preset *p) { return p->hmax; }
double preset_sea_level(const struct preset *p) { return p->sea_level; }
int preset_is_eroded(const struct preset *p) { return p->eroded; }
