/*
 * edit.c - brush edits: parsing, canonical bytes, hash chains, chunk
 * coverage and application (see edit.h).
 *
 * Distances are computed from integer millimetres: the squared distance of
 * a sample to a brush centre is an exact integer below 2^53, so the only
 * rounding is in sqrt and the blend, both IEEE-exact operations in a fixed
 * order. Heights are int32 quanta; each edit's result is rounded back to
 * the quantum before the next edit applies.
 */
#include "edit.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "jsonv.h"
#include "le.h"
#include "tile.h"

static const char *const op_names[EDIT_OP_COUNT] = { "raise", "lower", "flatten", "set" };
static const char *const falloff_names[EDIT_FALLOFF_COUNT] = { "linear", "smooth" };

const char *edit_op_name(enum edit_op op)
{
	return (unsigned)op < EDIT_OP_COUNT ? op_names[op] : NULL;
}

const char *edit_falloff_name(enum edit_falloff f)
{
	return (unsigned)f < EDIT_FALLOFF_COUNT ? falloff_names[f] : NULL;
}

int edit_check(const struct edit *e, const char **why)
{
	*why = NULL;
	if (e->op >= EDIT_OP_COUNT)
		*why = "op: unknown";
	else if (e->falloff >= EDIT_FALLOFF_COUNT)
		*why = "falloff: unknown";
	else if (e->x_mm < -EDIT_MAX_COORD_MM || e->x_mm > EDIT_MAX_COORD_MM)
		*why = "x: out of range";
	else if (e->z_mm < -EDIT_MAX_COORD_MM || e->z_mm > EDIT_MAX_COORD_MM)
		*why = "z: out of range";
	else if (e->radius_mm < 1 || e->radius_mm > EDIT_MAX_RADIUS_MM)
		*why = "radius: must be in (0, 4096]";
	else if ((e->op == EDIT_RAISE || e->op == EDIT_LOWER) &&
		 (e->strength < 0 || e->strength > EDIT_MAX_STRENGTH_UM))
		*why = "strength: must be in [0, 10000] metres";
	else if (e->op == EDIT_FLATTEN && (e->strength < 0 || e->strength > 1000000))
		*why = "strength: must be a fraction in [0, 1]";
	else if (e->op == EDIT_SET && e->strength != 0)
		*why = "strength: not used by set";
	else if (e->height_um < -EDIT_MAX_HEIGHT_UM || e->height_um > EDIT_MAX_HEIGHT_UM)
		*why = "height: must be in [-100000, 100000] metres";
	else if ((e->op == EDIT_RAISE || e->op == EDIT_LOWER) && e->height_um != 0)
		*why = "height: not used by raise and lower";
	return *why ? ERR_RANGE : 0;
}

/* ---------------------------------------------------------------- JSON */

/* Bytes of an unknown or repeated key that an error quotes. The cut may
 * fall inside a UTF-8 character; whoever prints the error as JSON must
 * escape what is not valid UTF-8 (server/api/request.c does). */
#define KEY_SHOWN 63

struct jerr {
	char *buf;
	size_t len;
};

static int jfail(struct jerr *je, int rc, const char *fmt, ...)
{
	va_list ap;

	if (je->buf && je->len) {
		va_start(ap, fmt);
		vsnprintf(je->buf, je->len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* A finite number in [lo, hi] scaled by `scale` and rounded to int64. */
static int jnum(struct jerr *je, const cJSON *o, int k, const char *key, int need,
		double lo, double hi, const char *range, double scale, int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!v) {
		*out = 0;
		return need ? jfail(je, ERR_PARSE, "edits[%d].%s: missing", k, key) : 0;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return jfail(je, ERR_PARSE, "edits[%d].%s: must be a finite number", k, key);
	if (!(v->valuedouble >= lo && v->valuedouble <= hi))
		return jfail(je, range ? ERR_RANGE : ERR_INVAL,
			     range ? "edits[%d].%s: must be in %s" :
			     "edits[%d].%s: outside the world (|%s| <= %.0f m)", k, key,
			     range ? range : key, hi);
	*out = (int64_t)llround(v->valuedouble * scale);
	return 0;
}

static int jname(struct jerr *je, const cJSON *o, int k, const char *key, int need,
		 const char *const *names, int count, int def, uint8_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	int i;

	*out = (uint8_t)def;
	if (!v)
		return need ? jfail(je, ERR_PARSE, "edits[%d].%s: missing", k, key) : 0;
	for (i = 0; cJSON_IsString(v) && i < count; i++)
		if (strcmp(v->valuestring, names[i]) == 0) {
			*out = (uint8_t)i;
			return 0;
		}
	return jfail(je, ERR_PARSE, "edits[%d].%s: unknown value", k, key);
}

/* The second of two members of o with the same key, or NULL. */
static const cJSON *duplicate(const cJSON *o)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, o)
		if (cJSON_GetObjectItemCaseSensitive(o, it->string) != it)
			return it;
	return NULL;
}

static int parse_one(struct jerr *je, const cJSON *o, int k, struct edit *e)
{
	static const char *const keys[] = { "op", "x", "z", "radius", "strength",
		"height", "falloff", NULL };
	const double max_m = (double)EDIT_MAX_COORD_MM / 1000.0;
	const cJSON *it;
	const char *why;
	int rc, flat;

	if (!cJSON_IsObject(o))
		return jfail(je, ERR_PARSE, "edits[%d]: must be an object", k);
	cJSON_ArrayForEach(it, o) {
		const char *const *a;

		for (a = keys; *a && strcmp(*a, it->string) != 0; a++)
			;
		if (!*a)
			return jfail(je, ERR_PARSE, "edits[%d].%.*s: unknown field", k,
				     KEY_SHOWN, it->string);
	}
	if ((it = duplicate(o)))
		return jfail(je, ERR_PARSE, "edits[%d].%.*s: duplicate field", k, KEY_SHOWN,
			     it->string);
	if ((rc = jname(je, o, k, "op", 1, op_names, EDIT_OP_COUNT, 0, &e->op)) ||
	    (rc = jname(je, o, k, "falloff", 0, falloff_names, EDIT_FALLOFF_COUNT,
			EDIT_SMOOTH, &e->falloff)))
		return rc;
	flat = e->op == EDIT_FLATTEN || e->op == EDIT_SET;
	if ((rc = jnum(je, o, k, "x", 1, -max_m, max_m, NULL, 1e3, &e->x_mm)) ||
	    (rc = jnum(je, o, k, "z", 1, -max_m, max_m, NULL, 1e3, &e->z_mm)) ||
	    (rc = jnum(je, o, k, "radius", 1, 1e-3, 4096, "(0, 4096]", 1e3, &e->radius_mm)) ||
	    (rc = jnum(je, o, k, "height", flat, -1e5, 1e5, "[-100000, 100000]", 1e6,
		       &e->height_um)))
		return rc;
	if (e->op == EDIT_FLATTEN)
		rc = jnum(je, o, k, "strength", 1, 0, 1, "[0, 1]", 1e6, &e->strength);
	else if (e->op != EDIT_SET)
		rc = jnum(je, o, k, "strength", 1, 0, 1e4, "[0, 10000]", 1e6, &e->strength);
	if (rc)
		return rc;
	if (e->op == EDIT_SET || !flat) {
		/* fields the op does not use must not be sent, so nothing is lost */
		if (e->op == EDIT_SET && cJSON_GetObjectItemCaseSensitive(o, "strength"))
			return jfail(je, ERR_PARSE, "edits[%d].strength: not used by set", k);
		if (!flat && cJSON_GetObjectItemCaseSensitive(o, "height"))
			return jfail(je, ERR_PARSE, "edits[%d].height: not used by %s", k,
				     op_names[e->op]);
	}
	if (edit_check(e, &why))
		return jfail(je, ERR_RANGE, "edits[%d].%s", k, why);
	return 0;
}

/*
 * cJSON ends a string at a NUL, so "raise\u0000x" would read as "raise":
 * refuse a NUL byte or a \u0000 escape anywhere in the body. An escape is
 * a backslash preceded by an even number of backslashes.
 */
static int no_nul(struct jerr *je, const char *json, size_t len)
{
	size_t i, run = 0;

	for (i = 0; i < len; i++) {
		if (json[i] == '\0')
			return jfail(je, ERR_PARSE, "body: NUL byte at offset %zu", i);
		if (json[i] != '\\') {
			run = 0;
			continue;
		}
		if (run++ % 2 == 0 && len - i >= 6 && !memcmp(json + i + 1, "u0000", 5))
			return jfail(je, ERR_PARSE,
				     "body: \\u0000 (NUL) in a string at offset %zu", i);
	}
	return 0;
}

int edit_parse_batch(const char *json, size_t len, struct edit **out, size_t *n,
		     char *err, size_t errlen)
{
	struct jerr je = { err, errlen };
	cJSON *root, *arr, *it;
	struct edit *v = NULL;
	const char *why;
	size_t at;
	int rc = 0, k = 0, count;

	*out = NULL;
	*n = 0;
	if (err && errlen)
		err[0] = '\0';
	if ((rc = no_nul(&je, json, len)))
		return rc;
	if (jsonv_check(json, len, &at, &why))
		return jfail(&je, ERR_PARSE, "body: invalid JSON at offset %zu: %s", at, why);
	root = cJSON_ParseWithLength(json, len);
	if (!root)
		return jfail(&je, ERR_PARSE, "body: invalid JSON");
	arr = cJSON_GetObjectItemCaseSensitive(root, "edits");
	count = cJSON_GetArraySize(arr);
	if (!cJSON_IsObject(root) || !cJSON_IsArray(arr))
		rc = jfail(&je, ERR_PARSE, "edits: must be an array");
	else if (count < 1 || count > EDIT_BATCH_MAX)
		rc = jfail(&je, ERR_RANGE, "edits: must hold 1..%d edits", EDIT_BATCH_MAX);
	else if (cJSON_GetArraySize(root) != 1)
		rc = jfail(&je, ERR_PARSE, duplicate(root) ? "edits: duplicate field" :
			   "body: only \"edits\" is allowed");
	else if (!(v = calloc((size_t)count, sizeof(*v))))
		rc = ERR_NOMEM;
	if (rc)
		arr = NULL;
	cJSON_ArrayForEach(it, arr) {
		if ((rc = parse_one(&je, it, k, &v[k])) != 0)
			break;
		k++;
	}
	cJSON_Delete(root);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = (size_t)count;
	return 0;
}

int edit_to_json(const struct edit *e, uint64_t seq, void *arr)
{
	cJSON *o = cJSON_CreateObject();
	char num[24];

	if (!o || !cJSON_AddItemToArray(arr, o)) {
		cJSON_Delete(o);
		return ERR_NOMEM;
	}
	/* raw digits: a cJSON number is a double, exact only up to 2^53 */
	snprintf(num, sizeof(num), "%llu", (unsigned long long)seq);
	cJSON_AddRawToObject(o, "seq", num);
	cJSON_AddStringToObject(o, "op", op_names[e->op]);
	cJSON_AddNumberToObject(o, "x", (double)e->x_mm / 1e3);
	cJSON_AddNumberToObject(o, "z", (double)e->z_mm / 1e3);
	cJSON_AddNumberToObject(o, "radius", (double)e->radius_mm / 1e3);
	if (e->op != EDIT_SET)
		cJSON_AddNumberToObject(o, "strength", (double)e->strength / 1e6);
	if (e->op == EDIT_FLATTEN || e->op == EDIT_SET)
		cJSON_AddNumberToObject(o, "height", (double)e->height_um / 1e6);
	cJSON_AddStringToObject(o, "falloff", falloff_names[e->falloff]);
	return 0;
}

/* ---------------------------------------------------------------- bytes */



void edit_encode(const struct edit *e, uint8_t out[EDIT_WIRE_SIZE])
{
	out[0] = e->op;
	out[1] = e->falloff;
	le_put64(out + 2, e->x_mm);
	le_put64(out + 10, e->z_mm);
	le_put64(out + 18, e->radius_mm);
	le_put64(out + 26, e->strength);
	le_put64(out + 34, e->height_um);
}

int edit_decode(const uint8_t *in, size_t len, struct edit *e)
{
	const char *why;

	if (len < EDIT_WIRE_SIZE)
		return ERR_CORRUPT;
	e->op = in[0];
	e->falloff = in[1];
	e->x_mm = le_get64(in + 2);
	e->z_mm = le_get64(in + 10);
	e->radius_mm = le_get64(in + 18);
	e->strength = le_get64(in + 26);
	e->height_um = le_get64(in + 34);
	return edit_check(e, &why) ? ERR_CORRUPT : 0;
}

uint64_t edit_hash_start(uint64_t fingerprint, uint64_t seed)
{
	uint8_t b[16];

	le_put64(b, (int64_t)fingerprint);
	le_put64(b + 8, (int64_t)seed);
	return XXH3_64bits(b, sizeof(b));
}

uint64_t edit_hash_next(uint64_t prev, uint64_t seq, const struct edit *e)
{
	uint8_t b[16 + EDIT_WIRE_SIZE];

	le_put64(b, (int64_t)prev);
	le_put64(b + 8, (int64_t)seq);
	edit_encode(e, b + 16);
	return XXH3_64bits(b, sizeof(b));
}

/* ---------------------------------------------------------------- coverage */

/* Distance (mm) from v to the closed interval [lo, hi], 0 inside. */
static int64_t gap(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo - v : v > hi ? v - hi : 0;
}

int edit_touches(const struct edit *e, int chunk_log2, int32_t cx, int32_t cz)
{
	int64_t c = (INT64_C(1000) << chunk_log2);
	int64_t dx = gap(e->x_mm, cx * c, cx * c + c);
	int64_t dz = gap(e->z_mm, cz * c, cz * c + c);

	if (dx >= e->radius_mm || dz >= e->radius_mm)
		return 0;
	return dx * dx + dz * dz < e->radius_mm * e->radius_mm;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int32_t clamp32(int64_t v)
{
	return v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

int edit_chunks(const struct edit *e, int chunk_log2, int32_t *cx, int32_t *cz,
		size_t cap, size_t *n)
{
	int64_t c = (INT64_C(1000) << chunk_log2);
	int32_t x0 = clamp32(floor_div(e->x_mm - e->radius_mm, c));
	int32_t x1 = clamp32(floor_div(e->x_mm + e->radius_mm, c));
	int32_t z0 = clamp32(floor_div(e->z_mm - e->radius_mm, c));
	int32_t z1 = clamp32(floor_div(e->z_mm + e->radius_mm, c));
	int64_t x, z;
	size_t k = 0;

	for (z = z0; z <= z1; z++)
		for (x = x0; x <= x1; x++) {
			if (!edit_touches(e, chunk_log2, (int32_t)x, (int32_t)z))
				continue;
			if (k < cap) {
				cx[k] = (int32_t)x;
				cz[k] = (int32_t)z;
			}
			k++;
		}
	*n = k;
	return k > cap ? ERR_TOOBIG : 0;
}

/* ---------------------------------------------------------------- apply */

static double weight(const struct edit *e, double d2)
{
	double t = sqrt(d2) / (double)e->radius_mm;

	if (e->falloff == EDIT_LINEAR)
		return 1.0 - t;
	return 1.0 - t * t * (3.0 - 2.0 * t);
}

static int32_t to_quanta(double um, double quantum)
{
	double q = floor(um / quantum + 0.5);

	return q < (double)INT32_MIN ? INT32_MIN : q > (double)INT32_MAX ? INT32_MAX : (int32_t)q;
}

static int32_t apply_one(const struct edit *e, int32_t h, double quantum, double w)
{
	double cur = (double)h * quantum, target = (double)e->height_um;

	switch (e->op) {
	case EDIT_RAISE:   return to_quanta(cur + (double)e->strength * w, quantum);
	case EDIT_LOWER:   return to_quanta(cur - (double)e->strength * w, quantum);
	case EDIT_FLATTEN: return to_quanta(cur + (double)e->strength * 1e-6 * w *
					    (target - cur), quantum);
	default:           return to_quanta(cur + w * (target - cur), quantum);
	}
}

/* Apply one edit to a block: sample (i, j) at world (x0 + i * step,
 * z0 + j * step) metres. */
static void apply_edit(const struct edit *e, int32_t *hm, int64_t x0, int64_t z0,
		       int64_t step, uint32_t w, uint32_t hgt, double quantum)
{
	int64_t r2 = e->radius_mm * e->radius_mm, smm = step * 1000;
	/* only the columns the brush's box reaches; the test below is exact */
	int64_t lo = floor_div(e->x_mm - e->radius_mm - x0 * 1000, smm);
	int64_t hi = floor_div(e->x_mm + e->radius_mm - x0 * 1000, smm) + 1;
	uint32_t i0 = lo < 0 ? 0 : lo > (int64_t)w ? w : (uint32_t)lo;
	uint32_t i1 = hi < 0 ? 0 : hi > (int64_t)w ? w : (uint32_t)hi;
	uint32_t i, j;

	for (j = 0; j < hgt; j++) {
		int64_t dz = (z0 + (int64_t)j * step) * 1000 - e->z_mm;

		if (dz <= -e->radius_mm || dz >= e->radius_mm)
			continue;
		for (i = i0; i < i1; i++) {
			int64_t dx = (x0 + (int64_t)i * step) * 1000 - e->x_mm;
			int32_t *h = &hm[(size_t)j * w + i];

			if (dx <= -e->radius_mm || dx >= e->radius_mm ||
			    dx * dx + dz * dz >= r2)
				continue;
			*h = apply_one(e, *h, quantum, weight(e, (double)(dx * dx + dz * dz)));
		}
	}
}

void edit_apply_block(int32_t *h, int64_t x0, int64_t z0, int lod, uint32_t w,
		      uint32_t hgt, uint32_t quantum_um, const struct edit *edits, size_t n)
{
	int64_t step = INT64_C(1) << lod;
	int64_t x1 = (x0 + (int64_t)(w - 1) * step) * 1000;
	int64_t z1 = (z0 + (int64_t)(hgt - 1) * step) * 1000;
	size_t k;

	for (k = 0; k < n; k++) {
		const struct edit *e = &edits[k];

		/* skip brushes whose box misses the block's */
		if (e->x_mm + e->radius_mm <= x0 * 1000 || e->x_mm - e->radius_mm >= x1 ||
		    e->z_mm + e->radius_mm <= z0 * 1000 || e->z_mm - e->radius_mm >= z1)
			continue;
		apply_edit(e, h, x0, z0, step, w, hgt, (double)quantum_um);
	}
}

void edit_apply(struct tile *t, const struct edit *edits, size_t n)
{
	int64_t c = INT64_C(1) << t->chunk_log2;

	edit_apply_block(t->h, (int64_t)t->cx * c, (int64_t)t->cz * c, t->lod, t->side,
			 t->side, t->quantum_um, edits, n);
}
