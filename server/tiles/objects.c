/*
 * objects.c - a chunk's objects as JSON or binary (see objects.h).
 *
 * Numbers in the JSON are written from the integers of struct
 * scatter_object with fixed decimals, so they are exact (x and z to the
 * millimetre, y to the micrometre, scale to the thousandth) and the two
 * forms agree; only rotation, in radians, is rounded (4 decimals).
 */
#include "objects.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "le.h"
#include "scatter.h"

#define JSON_HEAD_MAX   128  /* {"cx":...,"objects":[ */
#define JSON_OBJECT_MAX 192  /* one object, longest numbers included */
#define TURN_RADIANS    6.283185307179586

/* v / unit with digits decimals, exactly: "-12.345". */
static int fixed(char *buf, size_t cap, int64_t v, uint64_t unit, int digits)
{
	uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	return snprintf(buf, cap, "%s%" PRIu64 ".%0*" PRIu64, v < 0 ? "-" : "",
			a / unit, digits, a % unit);
}

static size_t json_object(char *buf, size_t cap, const struct scatter_object *o)
{
	char x[32], z[32], y[32], s[16];

	fixed(x, sizeof(x), o->x_mm, 1000, 3);
	fixed(z, sizeof(z), o->z_mm, 1000, 3);
	fixed(y, sizeof(y), o->y_um, 1000000, 6);
	fixed(s, sizeof(s), o->scale, 1000, 3);
	return (size_t)snprintf(buf, cap,
		"{\"type\":\"%s\",\"x\":%s,\"z\":%s,\"y\":%s,\"rotation\":%.4f,\"scale\":%s}",
		scatter_type_name(o->type), x, z, y,
		(double)o->rotation * (TURN_RADIANS / 65536.0), s);
}

static int write_json(const struct scatter_object *v, size_t count, int32_t cx,
		      int32_t cz, uint64_t edit_seq, uint8_t **out, size_t *len)
{
	size_t cap = JSON_HEAD_MAX + count * (JSON_OBJECT_MAX + 1) + 4, n, k;
	char *buf = malloc(cap);

	if (!buf)
		return ERR_NOMEM;
	n = (size_t)snprintf(buf, cap, "{\"cx\":%" PRId32 ",\"cz\":%" PRId32
			     ",\"edit_seq\":%" PRIu64 ",\"objects\":[", cx, cz, edit_seq);
	for (k = 0; k < count; k++) {
		if (k)
			buf[n++] = ',';
		n += json_object(buf + n, cap - n, &v[k]);
	}
	memcpy(buf + n, "]}", 2);
	*out = (uint8_t *)buf;
	*len = n + 2;
	return 0;
}


static int write_binary(const struct scatter_object *v, size_t count,
			uint8_t **out, size_t *len)
{
	size_t n = OBJECTS_HEADER + count * SCATTER_WIRE_SIZE, k;
	uint8_t *buf = calloc(1, n);

	if (!buf)
		return ERR_NOMEM;
	memcpy(buf, OBJECTS_MAGIC, 4);
	buf[4] = OBJECTS_VERSION;
	le_put32(buf + 8, (uint32_t)count);
	for (k = 0; k < count; k++)
		scatter_encode(&v[k], buf + OBJECTS_HEADER + k * SCATTER_WIRE_SIZE);
	*out = buf;
	*len = n;
	return 0;
}

int objects_encode(const struct preset *p, uint64_t seed, int32_t cx, int32_t cz,
		   const struct region_source *rs, const struct bake_layer *bl,
		   uint64_t edit_seq, enum objects_form form, uint8_t **out,
		   size_t *len)
{
	struct scatter_object *v;
	size_t count;
	int rc;

	if (!p || !out || !len)
		return ERR_INVAL;
	rc = bl ? scatter_chunk_baked(p, seed, cx, cz, rs, bl, &v, &count) :
	     scatter_chunk(p, seed, cx, cz, rs, NULL, 0, &v, &count);
	if (rc)
		return rc;
	if (form == OBJECTS_BINARY)
		rc = write_binary(v, count, out, len);
	else
		rc = write_json(v, count, cx, cz, edit_seq, out, len);
	free(v);
	return rc;
}
