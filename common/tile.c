/*
 * tile.c - the heightmap tile and its binary format (docs/tile-format.md).
 *
 * Encoding: a 64-byte little-endian header, then the heights, checksummed
 * with XXH3-64. tile_encode() writes format version 7 (8 with layers):
 * the heights entropy-coded by common/tilecode.c (filter 2 or 3, tANS)
 * behind a u32 length; versions 5 and 6 are the same model coded by rANS
 * with 8 states (TILE_FORM_CODED8), 3 and 4 with 2 (TILE_FORM_CODED).
 * Versions 1 and 2, still decoded and written by
 * tile_encode_lz21(), hold filter 1 ("lz21": a separable 2D Lorenzo
 * predictor, second order along x and first order along z, in wrapping u32
 * arithmetic; zigzag; byte planes most significant first). Compression
 * is left to the transport (HTTP Content-Encoding: zstd); files, sockets
 * and caches to the callers.
 *
 * Every array index in the decoder is bounded by sizes validated against
 * the input length first, so no input can make it read or write out of
 * bounds.
 */
#include "tile.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "err.h"
#include "le.h"
#include "tilecode.h"

#define FILTER_LZ21 1
#define CODED_LEN 4     /* versions 3 and 4: u32 length of the coded heights */

/* Header field offsets (docs/tile-format.md, "Header"). */
enum {
	OFF_MAGIC = 0,
	OFF_VERSION = 4,
	OFF_HDRLEN = 6,
	OFF_FINGERPRINT = 8,
	OFF_SEED = 16,
	OFF_CX = 24,
	OFF_CZ = 28,
	OFF_LOD = 32,
	OFF_CHUNK_LOG2 = 33,
	OFF_FILTER = 34,
	OFF_PLANES = 35,
	OFF_SIDE = 36,
	OFF_QUANTUM = 40,
	OFF_OFFSET = 44,
	OFF_EDIT_SEQ = 48,
	OFF_CHECKSUM = 56,
};

/* The header fields that struct tile does not keep. */
struct hdr_extra {
	unsigned planes;   /* versions 1, 2 */
	unsigned filter;
	uint32_t offset;
	unsigned version;
	int coded;         /* versions 3 to 6 */
	unsigned states;   /* tilecode's coder: 2 rANS states (3, 4), 8 (5, 6),
			      8 | TILECODE_TANS (7, 8) */
	int layers;        /* versions 2, 4, 6 */
};

/* Format 2 appends a layer section after the planes: u8 layer count,
 * 3 zero bytes, then per layer u8 id, u8 encoding (0: raw bytes), u16 zero,
 * u32 length, the bytes. The only layer defined is the material layer. */
#define LAYERS_HEAD 4
#define LAYER_HEAD 8







/* Two's-complement reinterpretation without implementation-defined casts. */
static int32_t u32_to_i32(uint32_t v)
{
	int32_t s;

	memcpy(&s, &v, sizeof(s));
	return s;
}

static uint32_t zigzag(uint32_t r)
{
	return (r << 1) ^ (0u - (r >> 31));
}

static uint32_t unzigzag(uint32_t z)
{
	return (z >> 1) ^ (0u - (z & 1u));
}

static int shape_ok(int chunk_log2, int lod)
{
	return chunk_log2 >= TILE_MIN_CHUNK_LOG2 &&
	       chunk_log2 <= TILE_MAX_CHUNK_LOG2 &&
	       lod >= 0 && lod <= chunk_log2;
}

/* Samples per side for a valid (chunk_log2, lod) pair. */
static uint32_t side_for(int chunk_log2, int lod)
{
	return (1u << (chunk_log2 - lod)) + 1u;
}

int tile_init(struct tile *t, int chunk_log2, int lod)
{
	size_t side;

	if (!t)
		return ERR_INVAL;
	memset(t, 0, sizeof(*t));
	if (!shape_ok(chunk_log2, lod))
		return ERR_INVAL;
	side = side_for(chunk_log2, lod);
	t->h = calloc(side * side, sizeof(*t->h));
	if (!t->h)
		return ERR_NOMEM;
	t->chunk_log2 = (uint8_t)chunk_log2;
	t->lod = (uint8_t)lod;
	t->side = (uint32_t)side;
	return 0;
}

int tile_add_material(struct tile *t)
{
	if (!t || !t->side)
		return ERR_INVAL;
	free(t->material);
	t->material = calloc((size_t)t->side * t->side, 1);
	return t->material ? 0 : ERR_NOMEM;
}

void tile_release(struct tile *t)
{
	if (!t)
		return;
	free(t->h);
	free(t->material);
	memset(t, 0, sizeof(*t));
}

double tile_height_m(const struct tile *t, uint32_t i, uint32_t j)
{
	assert(i < t->side && j < t->side);
	return (double)t->h[(size_t)j * t->side + i] * (double)t->quantum_um /
	       1e6;
}

size_t tile_encode_bound(const struct tile *t)
{
	size_t side = t->side;

	size_t coded = CODED_LEN + tilecode_bound(t->side), planes = 4 * side * side;

	return TILE_HEADER_SIZE + (coded > planes ? coded : planes) +
	       (t->material ? LAYERS_HEAD + LAYER_HEAD + side * side : 0);
}

static size_t layers_size(const struct tile *t)
{
	size_t n = (size_t)t->side * t->side;

	return t->material ? LAYERS_HEAD + LAYER_HEAD + n : 0;
}

static void write_layers(const struct tile *t, uint8_t *out)
{
	size_t n = (size_t)t->side * t->side;

	memset(out, 0, LAYERS_HEAD + LAYER_HEAD);
	out[0] = 1;
	out[LAYERS_HEAD] = TILE_LAYER_MATERIAL;
	le_put32(out + LAYERS_HEAD + 4, (uint32_t)n);
	memcpy(out + LAYERS_HEAD + LAYER_HEAD, t->material, n);
}

/* Is t a tile that can be encoded? */
static int tile_valid(const struct tile *t)
{
	return t->h && shape_ok(t->chunk_log2, t->lod) &&
	       t->side == side_for(t->chunk_log2, t->lod) && t->quantum_um;
}

/*
 * The filter's loops walk whole rows in blocks of BLOCK samples, with a
 * fixed-size inner loop over restrict pointers: compilers vectorise that
 * form even at -O2 (gcc's "very cheap" cost model); a scalar loop does
 * the tail. Integer arithmetic makes both paths agree exactly.
 */
#define BLOCK 8

/* One row of the column pass, rows j >= 1: out = cur - up. */
static void col_diff(uint32_t *restrict out, const uint32_t *restrict cur,
		     const uint32_t *restrict up, size_t w)
{
	size_t i = 0;

	for (; i + BLOCK <= w; i += BLOCK)
		for (size_t b = 0; b < BLOCK; b++)
			out[i + b] = cur[i + b] - up[i + b];
	for (; i < w; i++)
		out[i] = cur[i] - up[i];
}

/*
 * One row of the row pass applied to c (a row of the column pass), then
 * zigzag, into z. Returns the OR of the row's z values.
 */
static uint32_t row_diff(uint32_t *restrict z, const uint32_t *restrict c,
			 size_t w)
{
	uint32_t acc[BLOCK] = { 0 }, any;
	size_t i = 2;

	z[0] = zigzag(c[0]);
	z[1] = zigzag(c[1] - c[0]);
	any = z[0] | z[1];
	for (; i + BLOCK <= w; i += BLOCK) {
		for (size_t b = 0; b < BLOCK; b++) {
			const uint32_t *p = c + i + b;

			z[i + b] = zigzag(p[0] - 2u * p[-1] + p[-2]);
			acc[b] |= z[i + b];
		}
	}
	for (; i < w; i++) {
		z[i] = zigzag(c[i] - 2u * c[i - 1] + c[i - 2]);
		any |= z[i];
	}
	for (size_t b = 0; b < BLOCK; b++)
		any |= acc[b];
	return any;
}

/*
 * Filter 1, forward: z = zigzag(row pass(column pass(h - offset))), with
 * offset = h[0]; c is a scratch row of w values. Returns the OR of all z,
 * whose width gives the number of planes. The offset cancels in rows 1..
 * of the column pass, whose weights sum to 0.
 */
static uint32_t lz21_forward(const int32_t *h, uint32_t w, uint32_t *z,
			     uint32_t *c)
{
	const uint32_t *hu = (const uint32_t *)h; /* same object, unsigned */
	size_t n = (size_t)w * w;
	uint32_t any;

	memset(c, 0, w * sizeof(*c)); /* quiets gcc -O1 maybe-uninitialized */
	for (size_t i = 0; i < w; i++)
		c[i] = hu[i] - hu[0];
	any = row_diff(z, c, w);
	for (size_t k = w; k < n; k += w) {
		col_diff(c, hu + k, hu + k - w, w);
		any |= row_diff(z + k, c, w);
	}
	return any;
}

static unsigned planes_for(uint32_t any)
{
	if (any < 1u << 8)
		return 1;
	if (any < 1u << 16)
		return 2;
	if (any < 1u << 24)
		return 3;
	return 4;
}

static void split_planes(const uint32_t *z, size_t n, unsigned planes,
			 uint8_t *out)
{
	for (unsigned p = 0; p < planes; p++) {
		unsigned shift = 8 * (planes - 1 - p);
		uint8_t *plane = out + p * n;

		for (size_t k = 0; k < n; k++)
			plane[k] = (uint8_t)(z[k] >> shift);
	}
}

/* XXH3-64 of buf[0..56) followed by the payload (len - 64 bytes). */
static int checksum_of(const uint8_t *buf, size_t len, uint64_t *sum)
{
	XXH3_state_t *st = XXH3_createState();
	int ok;

	if (!st)
		return ERR_NOMEM;
	ok = XXH3_64bits_reset(st) == XXH_OK &&
	     XXH3_64bits_update(st, buf, OFF_CHECKSUM) == XXH_OK &&
	     XXH3_64bits_update(st, buf + TILE_HEADER_SIZE,
				len - TILE_HEADER_SIZE) == XXH_OK;
	*sum = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return ok ? 0 : ERR_NOMEM;
}

static void write_header(const struct tile *t, unsigned version, unsigned filter,
			 unsigned planes, uint8_t *out)
{
	le_put32(out + OFF_MAGIC, TILE_MAGIC);
	le_put16(out + OFF_VERSION, (uint16_t)version);
	le_put16(out + OFF_HDRLEN, TILE_HEADER_SIZE);
	le_put64(out + OFF_FINGERPRINT, t->fingerprint);
	le_put64(out + OFF_SEED, t->seed);
	le_put32(out + OFF_CX, (uint32_t)t->cx);
	le_put32(out + OFF_CZ, (uint32_t)t->cz);
	out[OFF_LOD] = t->lod;
	out[OFF_CHUNK_LOG2] = t->chunk_log2;
	out[OFF_FILTER] = (uint8_t)filter;
	out[OFF_PLANES] = (uint8_t)planes;
	le_put32(out + OFF_SIDE, t->side);
	le_put32(out + OFF_QUANTUM, t->quantum_um);
	le_put32(out + OFF_OFFSET, (uint32_t)t->h[0]);
	le_put64(out + OFF_EDIT_SEQ, t->edit_seq);
	le_put64(out + OFF_CHECKSUM, 0);
}

static size_t lz21_scratch_size(const struct tile *t)
{
	return ((size_t)t->side * t->side + t->side) * sizeof(uint32_t);
}

size_t tile_encode_scratch_size(const struct tile *t)
{
	size_t a, b;

	if (!t)
		return 0;
	a = lz21_scratch_size(t);
	b = tilecode_scratch_size(t->side);
	return a > b ? a : b;
}

/* Checksum out[0..need) into its header. */
static int seal(uint8_t *out, size_t need)
{
	uint64_t sum;
	int rc = checksum_of(out, need, &sum);

	if (!rc)
		le_put64(out + OFF_CHECKSUM, sum);
	return rc;
}

static int encode_lz21_in(const struct tile *t, void *scratch, uint8_t *out, size_t cap,
			  size_t *len);

/* Versions 3 and 4 (states 2), 5 and 6 (states 8) or 7 and 8 (8 |
 * TILECODE_TANS) whatever the side. */
static int encode_coded_in(const struct tile *t, unsigned states, void *scratch, uint8_t *out,
			   size_t cap, size_t *len)
{
	size_t coded, need;
	unsigned filter, version;
	int rc;

	if (cap < TILE_HEADER_SIZE + CODED_LEN)
		return ERR_TOOBIG;
	rc = tilecode_encode(t->h, t->side, states, scratch, out + TILE_HEADER_SIZE + CODED_LEN,
			     cap - TILE_HEADER_SIZE - CODED_LEN, &coded, &filter);
	if (rc)
		return rc;
	need = TILE_HEADER_SIZE + CODED_LEN + coded + layers_size(t);
	if (cap < need)
		return ERR_TOOBIG;
	if (states == 2)
		version = t->material ? TILE_VERSION_CODED2_LAYERS : TILE_VERSION_CODED2;
	else if (states == 8)
		version = t->material ? TILE_VERSION_CODED8_LAYERS : TILE_VERSION_CODED8;
	else
		version = t->material ? TILE_VERSION_LAYERS : TILE_VERSION;
	write_header(t, version, filter, 0, out);
	le_put32(out + TILE_HEADER_SIZE, (uint32_t)coded);
	if (t->material)
		write_layers(t, out + TILE_HEADER_SIZE + CODED_LEN + coded);
	rc = seal(out, need);
	if (!rc)
		*len = need;
	return rc;
}

static int encode_lz21_in(const struct tile *t, void *scratch, uint8_t *out, size_t cap,
			  size_t *len)
{
	size_t n, need;
	unsigned planes;
	uint32_t *z = scratch;
	int rc;

	n = (size_t)t->side * t->side;
	planes = planes_for(lz21_forward(t->h, t->side, z, z + n)); /* residuals, a row */
	need = TILE_HEADER_SIZE + planes * n + layers_size(t);
	if (cap < need)
		return ERR_TOOBIG;
	write_header(t, t->material ? TILE_VERSION_LZ21_LAYERS : TILE_VERSION_LZ21,
		     FILTER_LZ21, planes, out);
	split_planes(z, n, planes, out + TILE_HEADER_SIZE);
	if (t->material)
		write_layers(t, out + TILE_HEADER_SIZE + planes * n);
	rc = seal(out, need);
	if (!rc)
		*len = need;
	return rc;
}

int tile_encode_lz21(const struct tile *t, uint8_t *out, size_t cap, size_t *len)
{
	void *z;
	int rc;

	if (!t || !out || !len || !tile_valid(t))
		return ERR_INVAL;
	z = malloc(lz21_scratch_size(t));
	if (!z)
		return ERR_NOMEM;
	rc = encode_lz21_in(t, z, out, cap, len);
	free(z);
	return rc;
}

int tile_encode_form_in(const struct tile *t, enum tile_form form, void *scratch,
			uint8_t *out, size_t cap, size_t *len)
{
	if (!t || !scratch || !out || !len || !tile_valid(t))
		return ERR_INVAL;
	if (form == TILE_FORM_CURRENT)
		form = t->side < TILE_CODED_MIN_SIDE ? TILE_FORM_LZ21 : TILE_FORM_TANS;
	if (form == TILE_FORM_BEFORE7)
		form = t->side < TILE_CODED_MIN_SIDE ? TILE_FORM_LZ21 : TILE_FORM_CODED8;
	if (form == TILE_FORM_BEFORE5)
		form = t->side < TILE_CODED_MIN_SIDE ? TILE_FORM_LZ21 : TILE_FORM_CODED;
	if (form == TILE_FORM_CODED)
		return encode_coded_in(t, 2, scratch, out, cap, len);
	if (form == TILE_FORM_CODED8)
		return encode_coded_in(t, 8, scratch, out, cap, len);
	if (form == TILE_FORM_TANS)
		return encode_coded_in(t, 8 | TILECODE_TANS, scratch, out, cap, len);
	if (form == TILE_FORM_LZ21)
		return encode_lz21_in(t, scratch, out, cap, len);
	return ERR_INVAL;
}

int tile_encode_in(const struct tile *t, void *scratch, uint8_t *out, size_t cap,
		   size_t *len)
{
	return tile_encode_form_in(t, TILE_FORM_CURRENT, scratch, out, cap, len);
}

int tile_encode(const struct tile *t, uint8_t *out, size_t cap, size_t *len)
{
	void *z;
	int rc;

	if (!t || !out || !len || !tile_valid(t))
		return ERR_INVAL;
	z = malloc(tile_encode_scratch_size(t));
	if (!z)
		return ERR_NOMEM;
	rc = tile_encode_in(t, z, out, cap, len);
	free(z);
	return rc;
}

/* Check the fields that only need the header; fill t and x. */
static int parse_header(const uint8_t *buf, size_t len, struct tile *t,
			struct hdr_extra *x)
{
	int clog2, lod;

	if (len < TILE_HEADER_SIZE)
		return ERR_TRUNC;
	if (le_get32(buf + OFF_MAGIC) != TILE_MAGIC)
		return ERR_MAGIC;
	x->version = le_get16(buf + OFF_VERSION);
	if (x->version < TILE_VERSION_LZ21 || x->version > TILE_VERSION_LAYERS)
		return ERR_VERSION;
	x->coded = x->version >= TILE_VERSION_CODED2;
	x->states = x->version >= TILE_VERSION ? 8 | TILECODE_TANS :
		    x->version >= TILE_VERSION_CODED8 ? 8 : 2;
	x->layers = x->version % 2 == 0;
	x->filter = buf[OFF_FILTER];
	if (le_get16(buf + OFF_HDRLEN) != TILE_HEADER_SIZE)
		return ERR_CORRUPT;
	if (x->coded ? (x->filter != TILECODE_FILTER_HIER && x->filter != TILECODE_FILTER_CAUSAL) ||
			       buf[OFF_PLANES] != 0
		     : x->filter != FILTER_LZ21 || buf[OFF_PLANES] < 1 || buf[OFF_PLANES] > 4)
		return ERR_CORRUPT;
	clog2 = buf[OFF_CHUNK_LOG2];
	lod = buf[OFF_LOD];
	if (clog2 < TILE_MIN_CHUNK_LOG2)
		return ERR_CORRUPT;
	if (clog2 > TILE_MAX_CHUNK_LOG2)
		return ERR_TOOBIG;
	if (lod > clog2 || le_get32(buf + OFF_SIDE) != side_for(clog2, lod) ||
	    le_get32(buf + OFF_QUANTUM) == 0)
		return ERR_CORRUPT;

	t->fingerprint = le_get64(buf + OFF_FINGERPRINT);
	t->seed = le_get64(buf + OFF_SEED);
	t->cx = u32_to_i32(le_get32(buf + OFF_CX));
	t->cz = u32_to_i32(le_get32(buf + OFF_CZ));
	t->lod = (uint8_t)lod;
	t->chunk_log2 = (uint8_t)clog2;
	t->side = side_for(clog2, lod);
	t->quantum_um = le_get32(buf + OFF_QUANTUM);
	t->edit_seq = le_get64(buf + OFF_EDIT_SEQ);
	t->h = NULL;
	x->planes = buf[OFF_PLANES];
	x->offset = le_get32(buf + OFF_OFFSET);
	return 0;
}

int tile_decode_header(const uint8_t *buf, size_t len, struct tile *t)
{
	struct hdr_extra x;
	int rc;

	if (!t)
		return ERR_INVAL;
	memset(t, 0, sizeof(*t));
	if (!buf)
		return ERR_INVAL;
	rc = parse_header(buf, len, t, &x);
	if (rc)
		memset(t, 0, sizeof(*t));
	return rc;
}

/* OR of n bytes: zero exactly when they all are. */
static uint8_t or_bytes(const uint8_t *restrict p, size_t n)
{
	uint8_t acc[BLOCK] = { 0 }, any = 0;
	size_t k = 0;

	for (; k + BLOCK <= n; k += BLOCK)
		for (size_t b = 0; b < BLOCK; b++)
			acc[b] |= p[k + b];
	for (; k < n; k++)
		any |= p[k];
	for (size_t b = 0; b < BLOCK; b++)
		any |= acc[b];
	return any;
}

/* z = (first ? 0 : z << 8) | plane, over n samples. */
static void join_plane(uint32_t *restrict z, const uint8_t *restrict plane,
		       size_t n, int first)
{
	uint32_t keep = first ? 0 : 0xffffffu; /* no shift by 32 */
	size_t k = 0;

	for (; k + BLOCK <= n; k += BLOCK)
		for (size_t b = 0; b < BLOCK; b++)
			z[k + b] = (z[k + b] & keep) << 8 | plane[k + b];
	for (; k < n; k++)
		z[k] = (z[k] & keep) << 8 | plane[k];
}

/*
 * Gather the byte planes into z. Returns ERR_CORRUPT for a non-canonical
 * payload: z[0] not 0, or a most significant plane that is all zero.
 */
static int join_planes(const uint8_t *pl, size_t n, unsigned planes,
		       uint32_t *z)
{
	if (planes > 1 && !or_bytes(pl, n))
		return ERR_CORRUPT;
	for (unsigned p = 0; p < planes; p++)
		join_plane(z, pl + p * n, n, p == 0);
	return z[0] ? ERR_CORRUPT : 0;
}

/* One row of the inverse column pass, rows j >= 1: cur += up. */
static void col_undiff(uint32_t *restrict cur, const uint32_t *restrict up,
		       size_t w)
{
	size_t i = 0;

	for (; i + BLOCK <= w; i += BLOCK)
		for (size_t b = 0; b < BLOCK; b++)
			cur[i + b] += up[i + b];
	for (; i < w; i++)
		cur[i] += up[i];
}

/*
 * One row of the inverse row pass, in place on zigzagged residuals: the
 * second difference is undone by two running sums, f (the first
 * difference) and e (the value), a dependency chain of one add each.
 */
static void row_undiff(uint32_t *row, size_t w)
{
	uint32_t e = unzigzag(row[0]), f = 0;

	row[0] = e;
	for (size_t i = 1; i < w; i++) {
		f += unzigzag(row[i]);
		e += f;
		row[i] = e;
	}
}

/*
 * Filter 1, inverse, in place on z (w x w): every row pass, then the
 * column pass a row at a time. Adding offset to row 0 before the column
 * pass is enough: it carries down the columns unchanged.
 */
static void lz21_inverse(uint32_t *z, uint32_t w, uint32_t offset)
{
	size_t n = (size_t)w * w;

	for (size_t k = 0; k < n; k += w)
		row_undiff(z + k, w);
	for (size_t i = 0; i < w; i++)
		z[i] += offset;
	for (size_t k = w; k < n; k += w)
		col_undiff(z + k, z + k - w, w);
}

static int decode_payload(const uint8_t *buf, const struct hdr_extra *x,
			  size_t coded, struct tile *t)
{
	size_t n = (size_t)t->side * t->side;
	uint32_t *z = malloc(n * sizeof(*z));
	int rc;

	if (!z)
		return ERR_NOMEM;
	if (x->coded) {
		rc = tilecode_decode(buf + TILE_HEADER_SIZE + CODED_LEN, coded, t->side, x->states,
				     x->filter, x->offset, (int32_t *)z);
		if (rc)
			free(z);
		else
			t->h = (int32_t *)z;
		return rc;
	}
	rc = join_planes(buf + TILE_HEADER_SIZE, n, x->planes, z);
	if (rc) {
		free(z);
		return rc;
	}
	lz21_inverse(z, t->side, x->offset);
	t->h = (int32_t *)z; /* int32_t may alias uint32_t storage */
	return 0;
}

/* The layer section of a version 2 tile that starts at `at`: exactly one
 * material layer of n raw bytes, zero reserved bytes. ERR_TRUNC when it is
 * cut short, ERR_VERSION for a layer this decoder does not know. */
static int check_layers(const uint8_t *buf, size_t len, size_t at, size_t n)
{
	const uint8_t *l = buf + at;

	if (len < at + LAYERS_HEAD + LAYER_HEAD)
		return ERR_TRUNC;
	if (l[0] != 1 || l[1] || l[2] || l[3])
		return ERR_CORRUPT;
	if (l[LAYERS_HEAD] != TILE_LAYER_MATERIAL || l[LAYERS_HEAD + 1] != 0)
		return ERR_VERSION;
	if (l[LAYERS_HEAD + 2] || l[LAYERS_HEAD + 3] || le_get32(l + LAYERS_HEAD + 4) != n)
		return ERR_CORRUPT;
	return 0;
}

int tile_decode(const uint8_t *buf, size_t len, struct tile *t)
{
	struct hdr_extra x;
	size_t need, coded = 0;
	uint64_t sum;
	int rc;

	if (!t)
		return ERR_INVAL;
	memset(t, 0, sizeof(*t));
	if (!buf)
		return ERR_INVAL;
	rc = parse_header(buf, len, t, &x);
	if (rc)
		goto fail;
	if (x.coded) {
		if (len < TILE_HEADER_SIZE + CODED_LEN) {
			rc = ERR_TRUNC;
			goto fail;
		}
		coded = le_get32(buf + TILE_HEADER_SIZE);
		if (coded > tilecode_bound(t->side)) {
			rc = ERR_CORRUPT;
			goto fail;
		}
		need = TILE_HEADER_SIZE + CODED_LEN + coded;
	} else {
		need = TILE_HEADER_SIZE + (size_t)x.planes * t->side * t->side;
	}
	if (x.layers) {
		rc = check_layers(buf, len, need, (size_t)t->side * t->side);
		need += LAYERS_HEAD + LAYER_HEAD + (size_t)t->side * t->side;
	}
	if (!rc)
		rc = len < need ? ERR_TRUNC : len > need ? ERR_TOOBIG : 0;
	if (rc)
		goto fail;
	rc = checksum_of(buf, len, &sum);
	if (!rc && sum != le_get64(buf + OFF_CHECKSUM))
		rc = ERR_CHECKSUM;
	if (!rc)
		rc = decode_payload(buf, &x, coded, t);
	if (!rc && x.layers) {
		size_t n = (size_t)t->side * t->side;
		uint8_t *m = malloc(n);

		if (!m) {
			free(t->h);
			rc = ERR_NOMEM;
			goto fail;
		}
		memcpy(m, buf + need - n, n);
		t->material = m;
	}
	if (!rc)
		return 0;
fail:
	memset(t, 0, sizeof(*t));
	return rc;
}

uint64_t tile_checksum(const uint8_t *buf)
{
	return le_get64(buf + OFF_CHECKSUM);
}

/* ---- precision ------------------------------------------------------------- */

static const struct {
	const char *name;
	uint32_t um;
} precisions[] = {
	{ "1cm", 10000 }, { "5cm", 50000 }, { "10cm", 100000 }, { "50cm", 500000 },
	{ "1m", 1000000 },
};

uint32_t tile_precision_um(const char *name, size_t len)
{
	size_t k;

	if (!name)
		return 0;
	for (k = 0; k < sizeof(precisions) / sizeof(precisions[0]); k++)
		if (strlen(precisions[k].name) == len && !memcmp(precisions[k].name, name, len))
			return precisions[k].um;
	return 0;
}

int tile_requantize(const int32_t *src, size_t n, uint32_t from_um, uint32_t to_um,
		    int32_t *dst)
{
	int64_t f, half, v;
	size_t k;

	if ((!src || !dst) && n)
		return ERR_INVAL;
	if (!from_um || !to_um || to_um % from_um)
		return ERR_INVAL;
	f = (int64_t)(to_um / from_um);
	half = f / 2;
	if (f == 1) {
		if (dst != src)
			memmove(dst, src, n * sizeof(*dst));
		return 0;
	}
	for (k = 0; k < n; k++) {
		v = src[k];
		/* |v| + f / 2 < 2^31 + 2^31: no overflow in 64 bits; C division
		 * truncates, so the magnitude rounds half up, the sign after */
		dst[k] = (int32_t)(v >= 0 ? (v + half) / f : -((-v + half) / f));
	}
	return 0;
}
