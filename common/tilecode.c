/*
 * tilecode.c - entropy-coded heights, filters 2 and 3 of tile format
 * versions 3 to 6 (docs/tile-format.md, "Coded payload").
 *
 * Every sample but the first gets a prediction from samples already
 * decoded; the residual r = h - prediction (wrapping u32) is zigzagged to
 * z and split into a token (z itself below 16, else its bit length and
 * next bit) and raw extra bits. Tokens are coded by interleaved rANS
 * states (2 in versions 3 and 4, 8 in 5 and 6: sample n uses state
 * n mod states) with one frequency table per context (16 contexts, 2^10
 * total), sent in the payload; extra bits go to a separate bit stream.
 * Filter 2 visits the samples coarse to fine, each predicted by cubic
 * interpolation between two known neighbours (smooth or splined terrain);
 * filter 3 in raster order with a causal 2D predictor (rough terrain). The
 * encoder takes the filter whose residuals have fewer significant bits in
 * total, and the decoder checks that rule, the tables and the stream ends,
 * so that the coding stays canonical.
 *
 * Speed: the format's predictions are exact integers of up to 37 bits.
 * When every height lies within 2^25 of h[0] (all real terrain) they fit
 * in 32 bits, and the "narrow" loops compute them in wrapping u32
 * arithmetic, a whole line at a time in a form gcc vectorises, with the
 * same results as the 64-bit "wide" loops that any other tile takes
 * (tests/unit/test_tile.c compares the two on every test tile). The decoder
 * keeps its rANS states in an array (the per-state chains run
 * interleaved) and reads the extra bits at a bit position, so the only
 * chains from sample to sample are that position and the unit pointer.
 *
 * Bounds: the decoder reads the payload in place. The bit reader clamps
 * its byte index to the end of the bit stream, which is followed by at
 * least 8 bytes of rANS states; the unit reader checks, before each run of
 * samples, that the run cannot pass the end of the units, and reads zeros
 * past it otherwise. Overruns are seen afterwards from the positions
 * reached; every index into h is a sample position computed from w alone.
 */
#include "tilecode.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "le.h"
#include "simd.h"

#define NTOK 72                 /* tokens: 0..15, then 2 per bit length 5..32 */
#define NCTX 16
#define NIX (NCTX * NTOK)       /* (context, token) pairs, index c * NTOK + t */
#define DIX (NCTX << 7)         /* the decoder's: index c << 7 | t */
#define PROB_BITS 10
#define PROB_M (1u << PROB_BITS)
#define RANS_L (1u << 16)       /* states live in [RANS_L, 2^32); 16-bit renormalisation */
#define ZSAT (1u << 24)         /* residual magnitudes saturate here in contexts */
#define NARROW (1u << 25)       /* heights within this of h[0]: 32-bit predictions */

/* Little-endian loads and stores of the bit and rANS streams: one move on
 * a little-endian machine (gcc does not always merge le.h's byte-wise
 * form inside the hot loops), le.h's form elsewhere. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint16_t ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline void st64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline void st16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}
#else
#define ld64 le_get64
#define ld16 le_get16
#define st64 le_put64
#define st16 le_put16
#endif

/* ---- small helpers ------------------------------------------------------ */

static unsigned blen32(uint32_t v)
{
	return v ? 32u - (unsigned)__builtin_clz(v) : 0u;
}

static unsigned blen64(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

static uint32_t zigzag(uint32_t r)
{
	return (r << 1) ^ (0u - (r >> 31));
}

static uint32_t unzigzag(uint32_t z)
{
	return (z >> 1) ^ (0u - (z & 1u));
}

/* floor(x / 2^s) for |x| < 2^40, without shifting a negative number. */
static int64_t floor_shift(int64_t x, unsigned s)
{
	const int64_t bias = INT64_C(1) << 40;

	return (int64_t)((uint64_t)(x + bias) >> s) - (bias >> s);
}

/* Extra bits and base value of each token. */
static const uint8_t tok_nb[NTOK] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12,
	13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21,
	22, 22, 23, 23, 24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30,
};

static uint32_t tok_base(unsigned t)
{
	return t < 16 ? t : (2u | (t & 1u)) << tok_nb[t];
}

/* ---- narrow arithmetic: u32 forms that vectorise ---------------------------- */

/* floor(x / 2^s) of x read as a signed 32-bit number, as a u32. */
static inline uint32_t fsh32(uint32_t x, unsigned s)
{
	return ((x ^ 0x80000000u) >> s) - (0x80000000u >> s);
}

/* |x| of x read as a signed 32-bit number above -2^31. */
static inline uint32_t abs32(uint32_t x)
{
	uint32_t m = 0u - (x >> 31);

	return (x ^ m) - m;
}

/* blen(v) for v < 2^16, from the exponent of the (exact) float of v:
 * no branch and no clz, so that the loops around it vectorise. */
static inline uint32_t blen16(uint32_t v)
{
	float f = (float)(int32_t)v;
	uint32_t e;

	memcpy(&e, &f, sizeof(e));
	e >>= 23;
	return (e > 126 ? e : 126) - 126;
}

/* blen(v) for any u32, branch-free. */
static inline uint32_t blen32v(uint32_t v)
{
	uint32_t hi = v >> 16, m = 0u - (hi != 0);

	return (m & (blen16(hi) + 16)) | (~m & blen16(v & 0xffffu));
}

/* Whether base (h[0], as u32) is at least NARROW inside the int32 range,
 * so that "every height within NARROW of base" can be tested on u32
 * differences without aliasing. */
static int narrow_base(uint32_t base)
{
	uint32_t b = base ^ 0x80000000u;

	return b >= NARROW && b <= 0u - NARROW;
}

/* OR over h[0..n) of h + (NARROW - base): below 2 NARROW exactly when every
 * height is within [base - NARROW, base + NARROW) (given narrow_base()). */
CLONES_INT static uint32_t narrow_or(const int32_t *h, size_t n, uint32_t base)
{
	const uint32_t *u = (const uint32_t *)h, add = NARROW - base;
	uint32_t acc = 0;

	for (size_t k = 0; k < n; k++)
		acc |= u[k] + add;
	return acc;
}

static int heights_narrow(const int32_t *h, size_t n)
{
	return narrow_base((uint32_t)h[0]) && narrow_or(h, n, (uint32_t)h[0]) < 2 * NARROW;
}

/* ---- predictors and contexts (shared by both directions) ---------------- */

#define CTX_CORNER 15

/*
 * Filter 2 predicts the sample halfway between p1 and p2; p0 and p3 lie
 * one step further out on either side when both exist. Catmull-Rom at
 * t = 1/2, floor((9 (p1 + p2) - p0 - p3 + 8) / 16), else the floored mean.
 * The context is the bit length b of |p0 + p3 - p1 - p2| (cubic) or
 * |p1 - p2| (linear), mapped by the spacing d (the half step): this table
 * over b (0..64) for one d, so a whole line maps b without branches.
 */
static void hier_ctx_map(uint32_t d, uint8_t *map)
{
	for (unsigned b = 0; b <= 64; b++)
		map[b] = (uint8_t)(d == 1 ? (b < 10 ? b : 10) :
				   d == 2 ? 11 + ((b >> 2) < 2 ? (b >> 2) : 2) : 14);
}

/* Filter 2 at one sample from its four neighbours (Catmull-Rom). */
static inline void hier_cubic(int64_t p0, int64_t p1, int64_t p2, int64_t p3,
			      const uint8_t *restrict map, uint32_t *restrict pred,
			      uint8_t *restrict ctx)
{
	int64_t c = p0 + p3 - p1 - p2;

	*pred = (uint32_t)floor_shift(9 * (p1 + p2) - p0 - p3 + 8, 4);
	*ctx = map[blen64((uint64_t)(c < 0 ? -c : c))];
}

/* Filter 2 at one sample from its two neighbours (an edge of the tile). */
static inline void hier_linear(int64_t p1, int64_t p2, const uint8_t *restrict map,
			       uint32_t *restrict pred, uint8_t *restrict ctx)
{
	*pred = (uint32_t)floor_shift(p1 + p2, 1);
	*ctx = map[blen64((uint64_t)(p1 > p2 ? p1 - p2 : p2 - p1))];
}

enum { LINE_CUBIC, LINE_LINEAR, LINE_EDGES };

/* What a line of filter 2 needs besides its samples. */
struct hline {
	uint32_t d;          /* half step: 1, 2, 4, ... */
	uint32_t base;       /* h[0]: narrow sums are taken relative to it */
	int narrow;          /* heights within NARROW of base: the u32 loops */
	uint8_t map[65];     /* hier_ctx_map(d) */
};

static void hline_init(struct hline *l, uint32_t d, uint32_t base, int narrow)
{
	l->d = d;
	l->base = base;
	l->narrow = narrow;
	hier_ctx_map(d, l->map);
}

/* The context of a narrow |c| at spacing d: min(blen, 10) at d = 1,
 * 11 + min(blen / 4, 2) at d = 2, 14 beyond; blen(min(v, 1023)) gives
 * both without a table. */
static inline uint8_t narrow_ctx(uint32_t v, uint32_t d)
{
	uint32_t b = blen16(v < 1023 ? v : 1023);

	return (uint8_t)(d == 1 ? b : d == 2 ? 11 + (b >= 8 ? 2 : b >> 2) : 14);
}

/* Narrow cubic predictions of cnt samples at p[m * step]. */
static inline void cubic32(const uint32_t *restrict p, size_t step, size_t off, size_t cnt,
			   uint32_t base, uint32_t d, uint32_t *restrict pred,
			   uint8_t *restrict ctx)
{
	uint32_t k16 = (base << 4) - 8;

	for (size_t m = 0; m < cnt; m++) {
		const uint32_t *q = p + m * step;
		uint32_t p0 = q[-3 * (ptrdiff_t)off], p1 = q[-(ptrdiff_t)off], p2 = q[off],
			 p3 = q[3 * off];

		pred[m] = base + fsh32(9 * (p1 + p2) - p0 - p3 - k16, 4);
		ctx[m] = narrow_ctx(abs32(p0 + p3 - p1 - p2), d);
	}
}

/* Narrow linear prediction of one sample between p1 and p2. */
static inline void linear32(uint32_t p1, uint32_t p2, uint32_t base, uint32_t d,
			    uint32_t *pred, uint8_t *ctx)
{
	*pred = base + fsh32(p1 + p2 - 2 * base, 1);
	*ctx = narrow_ctx(abs32(p1 - p2), d);
}

/* The narrow form of hier_line() below; step 2 (3/4 of the samples) gets
 * its own copy of the loop, which gcc vectorises. */
CLONES_INT static void hier_line32(const uint32_t *p, size_t step, size_t off, size_t cnt, int kind,
			const struct hline *l, uint32_t *restrict pred, uint8_t *restrict ctx)
{
	size_t m = 0, end = cnt;

	if (kind == LINE_LINEAR) {
		const uint32_t *lo = p - off, *hi = p + off;

		for (; m < cnt; m++)
			linear32(lo[m * step], hi[m * step], l->base, l->d, pred + m, ctx + m);
		return;
	}
	if (kind == LINE_EDGES) {
		linear32(p[-(ptrdiff_t)off], p[off], l->base, l->d, pred, ctx);
		if (cnt == 1)
			return;
		m = 1;
		end = cnt - 1;
		linear32(p[end * step - off], p[end * step + off], l->base, l->d, pred + end,
			 ctx + end);
	}
	if (step == 2)
		cubic32(p + m * 2, 2, off, end - m, l->base, l->d, pred + m, ctx + m);
	else
		cubic32(p + m * step, step, off, end - m, l->base, l->d, pred + m, ctx + m);
}

/*
 * Filter 2's predictions and contexts for one line of a level: cnt
 * samples at p[m * step], each between p[m * step -+ off] (and -+ 3 off
 * when cubic). LINE_EDGES: the first and last are linear (their outer
 * neighbour is off the tile), the rest cubic. Every neighbour belongs to
 * a coarser level, so the decoder computes the whole line before decoding
 * it and the encoder's loop has no branch per sample.
 */
static void hier_line(const int32_t *restrict p, size_t step, size_t off, size_t cnt,
		      int kind, const struct hline *l, uint32_t *restrict pred,
		      uint8_t *restrict ctx)
{
	const uint8_t *map = l->map;
	size_t m = 0, end = cnt;

	if (l->narrow) {
		hier_line32((const uint32_t *)p, step, off, cnt, kind, l, pred, ctx);
		return;
	}
	if (kind == LINE_LINEAR) {
		for (; m < cnt; m++, p += step)
			hier_linear(p[-(ptrdiff_t)off], p[off], map, pred + m, ctx + m);
		return;
	}
	if (kind == LINE_EDGES) {
		hier_linear(p[-(ptrdiff_t)off], p[off], map, pred, ctx);
		if (cnt == 1)
			return;
		m = 1;
		p += step;
		end = cnt - 1;
	}
	for (; m < end; m++, p += step)
		hier_cubic(p[-3 * (ptrdiff_t)off], p[-(ptrdiff_t)off], p[off], p[3 * off], map,
			   pred + m, ctx + m);
	if (kind == LINE_EDGES)
		hier_linear(p[-(ptrdiff_t)off], p[off], map, pred + m, ctx + m);
}

/* Filter 3: prediction of sample (i, j) from decoded heights. */
static int64_t causal_pred(const int32_t *h, size_t w, size_t i, size_t j)
{
	const int32_t *p = h + j * w + i;

	if (j == 0)
		return i == 1 ? p[-1] : 2 * (int64_t)p[-1] - p[-2];
	if (i == 0)
		return p[-(ptrdiff_t)w];
	if (i == 1 || j == 1)
		return (int64_t)p[-(ptrdiff_t)w] + p[-1] - p[-(ptrdiff_t)w - 1];
	{
		const int32_t *n = p - w, *nn = p - 2 * w;
		int64_t s = 3 * ((int64_t)n[0] + p[-1]) - 4 * (int64_t)n[-1] - p[-2] +
			    n[-2] - nn[0] + nn[-1];

		return floor_shift(s, 1);
	}
}

static inline uint32_t zsat(uint32_t z)
{
	return z < ZSAT ? z : ZSAT;
}

/*
 * Filter 3's context buffers: a row of saturated z with two zeros before
 * sample 0 and one after sample w - 1, so that the context of (i, j) is
 * one branch-free expression: up is row j - 1 (all zeros for row 0), cur
 * row j up to i - 1.
 */
#define ZPAD 2

static inline unsigned causal_ctx(const uint32_t *up, const uint32_t *cur, size_t i)
{
	const uint32_t *c = cur + i, *u = up + i;
	uint32_t a = 4 * c[-1] + c[-2] + 2 * u[0] + u[-1] + u[1];
	unsigned b = blen32(a >> 2);

	return b < 15 ? b : 15;
}

/* ---- frequency tables ---------------------------------------------------- */

/*
 * Normalise counts c (total t > 0) to frequencies f summing to PROB_M:
 * round(c * M / t), at least 1 where c > 0; then the largest frequency
 * (the first of equals) takes up the difference, one unit at a time when
 * it must give some back.
 */
static void normalize(const uint32_t *c, uint64_t t, uint32_t *f)
{
	uint32_t sum = 0;
	unsigned k, big = 0;

	for (k = 0; k < NTOK; k++) {
		f[k] = c[k] ? (uint32_t)(((uint64_t)c[k] * PROB_M + t / 2) / t) : 0;
		if (c[k] && !f[k])
			f[k] = 1;
		sum += f[k];
		if (f[k] > f[big])
			big = k;
	}
	if (sum < PROB_M) {
		f[big] += PROB_M - sum;
		return;
	}
	while (sum > PROB_M) {
		for (big = 0, k = 1; k < NTOK; k++)
			if (f[k] > f[big])
				big = k;
		f[big]--;
		sum--;
	}
}

/* ---- bit stream: least significant bit first ----------------------------- */

struct bw {
	uint8_t *p, *end;
	uint64_t acc;
	unsigned n;
	int over;
};

static void bw_put(struct bw *b, uint32_t v, unsigned nb)
{
	if (!nb)
		return;
	b->acc |= (uint64_t)v << b->n;
	b->n += nb;
	while (b->n >= 8) {
		if (b->p < b->end)
			*b->p++ = (uint8_t)b->acc;
		else
			b->over = 1;
		b->acc >>= 8;
		b->n -= 8;
	}
}

static void bw_flush(struct bw *b)
{
	if (b->n)
		bw_put(b, 0, 8 - b->n);
}

/* Exp-Golomb of order 0: m zeros, a one, the low m bits of v + 1. */
static void bw_eg0(struct bw *b, uint32_t v)
{
	unsigned m = blen32(v + 1) - 1;

	bw_put(b, 0, m);
	bw_put(b, 1, 1);
	bw_put(b, (v + 1) & ((1u << m) - 1u), m);
}

/* A bit reader over a buffer followed by at least 8 readable bytes: it
 * refills without branches, never moves past end (reading whatever
 * follows there), and counts the bits it hands out in `used`, so the
 * caller can tell an overrun afterwards. */
struct br {
	const uint8_t *p, *end;
	uint64_t acc;
	unsigned n;       /* valid bits in acc */
	uint64_t used;    /* bits handed out */
};

static inline void br_fill(struct br *b)
{
	b->acc |= ld64(b->p) << b->n;
	b->p += (63 - b->n) >> 3;
	b->n |= 56;
	b->p = b->p < b->end ? b->p : b->end;
}

/* nb <= 32 bits. */
static inline uint32_t br_get(struct br *b, unsigned nb)
{
	uint32_t v;

	br_fill(b);
	v = (uint32_t)(b->acc & ((UINT64_C(1) << nb) - 1));
	b->acc >>= nb;
	b->n -= nb;
	b->used += nb;
	return v;
}

/* Exp-Golomb 0 of at most PROB_BITS + 1 significant bits (else *bad). */
static uint32_t br_eg0(struct br *b, int *bad)
{
	unsigned m = 0;

	while (!br_get(b, 1)) {
		if (++m > PROB_BITS) {
			*bad = 1;
			return 0;
		}
	}
	return ((1u << m) | br_get(b, m)) - 1u;
}

/* ---- the filter rule ------------------------------------------------------ */

/* Sum of blen(zigzag(p[m * step] - pred[m])) over a line. */
CLONES_INT static uint64_t line_bits(const int32_t *p, size_t step, size_t cnt, const uint32_t *pred)
{
	const uint32_t *u = (const uint32_t *)p;
	uint32_t bits = 0;      /* at most 32 a sample, w < 2^13 samples */

	for (size_t m = 0; m < cnt; m++)
		bits += blen32v(zigzag(u[m * step] - pred[m]));
	return bits;
}

/* Significant bits of filter 2's residuals over the cnt samples of a
 * hier_line() (pred: w words, ctx: w bytes of scratch). */
static uint64_t hier_line_bits(const int32_t *p, size_t step, size_t off, size_t cnt,
			       int kind, uint32_t d, uint32_t base, int narrow, uint32_t *pred,
			       uint8_t *ctx)
{
	struct hline l;

	hline_init(&l, d, base, narrow);
	hier_line(p, step, off, cnt, kind, &l, pred, ctx);
	return line_bits(p, step, cnt, pred);
}

/*
 * Filter 2's bits over row j, as the passes that visit it: the horizontal
 * pass of every level d up to the row's own spacing (j's lowest set bit)
 * takes the columns d mod 2d, the vertical pass of the row's level the
 * columns 0 mod 2d; rows 0 and w - 1 belong to no vertical pass and hold
 * the corners instead.
 */
static uint64_t hier_row_bits(const int32_t *h, size_t w, size_t j, int narrow,
			      uint32_t *pred, uint8_t *ctx)
{
	size_t s = w - 1, dr, d;
	const int32_t *row = h + j * w;
	uint32_t base = (uint32_t)h[0];
	uint64_t bits = 0;

	if (j == 0 || j == s) {
		if (j == 0)
			bits += blen32(zigzag((uint32_t)h[s] - (uint32_t)h[0]));
		else
			bits += blen32(zigzag((uint32_t)h[s * w] - (uint32_t)h[0])) +
				blen32(zigzag((uint32_t)h[s * w + s] -
					      (uint32_t)((int64_t)h[s] + h[s * w] - h[0])));
		dr = s / 2;
	} else {
		dr = j & (0 - j);
		bits += hier_line_bits(row, 2 * dr, dr * w, s / (2 * dr) + 1,
				       j >= 3 * dr && j + 3 * dr < w ? LINE_CUBIC : LINE_LINEAR,
				       (uint32_t)dr, base, narrow, pred, ctx);
	}
	for (d = 1; d <= dr; d *= 2)
		bits += hier_line_bits(row + d, 2 * d, d, s / (2 * d), LINE_EDGES, (uint32_t)d,
				       base, narrow, pred, ctx);
	return bits;
}

/* Filter 3's narrow predictions of row j >= 2 from column 2 on. */
CLONES_INT static void causal_row32(const uint32_t *restrict p, const uint32_t *restrict n,
			 const uint32_t *restrict nn, size_t w, uint32_t base,
			 uint32_t *restrict pred)
{
	uint32_t k2 = 2 * base;

	for (size_t i = 2; i < w; i++)
		pred[i] = base + fsh32(3 * (n[i] + p[i - 1]) - 4 * n[i - 1] - p[i - 2] + n[i - 2] -
					       nn[i] + nn[i - 1] - k2,
				       1);
}

/* Filter 3's predictions of row j (all w samples; sample 0 of row 0
 * gets 0): the general rule from column 2 of row 2 on, narrow or wide. */
static void causal_row(const int32_t *h, size_t w, size_t j, int narrow, uint32_t *pred)
{
	const int32_t *p = h + j * w;
	size_t i;

	if (j < 2) {
		pred[0] = j ? (uint32_t)p[-(ptrdiff_t)w] : 0;
		for (i = 1; i < w; i++)
			pred[i] = (uint32_t)causal_pred(h, w, i, j);
		return;
	}
	pred[0] = (uint32_t)causal_pred(h, w, 0, j);
	pred[1] = (uint32_t)causal_pred(h, w, 1, j);
	if (narrow) {
		causal_row32((const uint32_t *)p, (const uint32_t *)(p - w),
			     (const uint32_t *)(p - 2 * w), w, (uint32_t)h[0], pred);
		return;
	}
	for (i = 2; i < w; i++)
		pred[i] = (uint32_t)causal_pred(h, w, i, j);
}

/* Filter 3's bits over row j (from sample 1 in row 0). */
static uint64_t causal_row_bits(const int32_t *h, size_t w, size_t j, int narrow,
				uint32_t *pred)
{
	causal_row(h, w, j, narrow, pred);
	if (j == 0)
		return line_bits(h + 1, 1, w - 1, pred + 1);
	return line_bits(h + j * w, 1, w, pred);
}

/*
 * Which filter codes h: the one whose residuals have fewer significant
 * bits in total over the sample rows j with j mod 32 < 4 (one in 8, with
 * filter 2's levels in their proportions: 3/4 at spacing 1, 3/16 at 2),
 * sample (0, 0) left out; filter 2 on a tie. scratch: w words and w
 * bytes.
 */
static unsigned choose(const int32_t *h, size_t w, int narrow, uint32_t *scratch)
{
	uint64_t jh = 0, jc = 0;
	size_t j;

	for (j = 0; j < w; j += (j & 31) == 3 ? 29 : 1) {
		jh += hier_row_bits(h, w, j, narrow, scratch, (uint8_t *)(scratch + w));
		jc += causal_row_bits(h, w, j, narrow, scratch);
	}
	return jh <= jc ? TILECODE_FILTER_HIER : TILECODE_FILTER_CAUSAL;
}

/* ---- the encoder ---------------------------------------------------------- */

size_t tilecode_bound(uint32_t w)
{
	size_t n = (size_t)w * w;

	/* per sample at most 30 extra bits + 12 bits of rANS, plus the
	 * tables (16 x (8 + 72 x 25) bits), lengths and states */
	return n * 6 + 4096;
}

/*
 * Scratch, in order: z (n + 8 words, then the extra bits of each sample);
 * the extra-bit stream (n + 8 words); the (context, token) index of each
 * sample (n + 8 u16) and its count of extra bits (n + 16 bytes); the rANS
 * bytes (RANS_BYTES); line buffers (4w + 16 words: predictions, contexts,
 * filter 3's rows).
 */
#define SCR_WORDS(n) ((n) + 8)
#define RANS_BYTES(n) (2 * (n) + 4 * TILECODE_MAX_STATES + 64)

size_t tilecode_scratch_size(uint32_t w)
{
	size_t n = (size_t)w * w;

	return 2 * SCR_WORDS(n) * 4 + SCR_WORDS(n) * 2 + (n + 16) + RANS_BYTES(n) +
	       (4 * (size_t)w + 16) * 4 + 64;
}

/* Tokens of a run of residuals (in place: z becomes its extra bits) with
 * their context c: ix = c * NTOK + token, nb the count of extra bits. */
CLONES_INT static void tokens(uint32_t *restrict z, const uint8_t *restrict c, size_t cnt,
		   uint16_t *restrict ix, uint8_t *restrict nb)
{
	for (size_t m = 0; m < cnt; m++) {
		uint32_t v = z[m], b = blen32v(v), big = 0u - (v >= 16), e = big & (b - 2);
		uint32_t t = (big & (2 * b + 6 + ((v >> e) & 1u))) | (~big & v);

		ix[m] = (uint16_t)(c[m] * NTOK + t);
		nb[m] = (uint8_t)e;
		z[m] = v & ((1u << e) - 1u);
	}
}

/* Where the forward passes put their results. */
struct fwd {
	uint32_t *z;            /* residuals, then extra bits, in coding order */
	uint16_t *ix;
	uint8_t *nb;
	size_t n;               /* samples so far */
};

/* Residuals of a line of cnt samples at p[m * step] against pred, with
 * contexts ctx, appended to f. */
static void fwd_line(struct fwd *f, const int32_t *p, size_t step, size_t cnt,
		     const uint32_t *pred, const uint8_t *ctx)
{
	const uint32_t *u = (const uint32_t *)p;
	uint32_t *z = f->z + f->n;

	for (size_t m = 0; m < cnt; m++)
		z[m] = zigzag(u[m * step] - pred[m]);
	tokens(z, ctx, cnt, f->ix + f->n, f->nb + f->n);
	f->n += cnt;
}

/* Filter 2 residuals and contexts in coding order. pred holds w words,
 * then w bytes of contexts. */
static void hier_forward(const int32_t *h, size_t w, int narrow, struct fwd *f,
			 uint32_t *pred)
{
	uint8_t *ctx = (uint8_t *)(pred + w);
	size_t s = w - 1, d, j, cnt;
	uint32_t corner[3];
	struct hline l;

	corner[0] = (uint32_t)h[0];
	corner[1] = (uint32_t)h[0];
	corner[2] = (uint32_t)((int64_t)h[s] + h[s * w] - h[0]);
	memset(ctx, CTX_CORNER, 3);
	f->z[0] = zigzag((uint32_t)h[s] - corner[0]);
	f->z[1] = zigzag((uint32_t)h[s * w] - corner[1]);
	f->z[2] = zigzag((uint32_t)h[s * w + s] - corner[2]);
	tokens(f->z, ctx, 3, f->ix, f->nb);
	f->n = 3;
	for (; s >= 2; s /= 2) {
		d = s / 2;
		hline_init(&l, (uint32_t)d, (uint32_t)h[0], narrow);
		cnt = (w - 1) / s + 1;          /* columns 0, s, ..., w - 1 */
		for (j = d; j < w; j += s) {
			const int32_t *row = h + j * w;

			hier_line(row, s, d * w, cnt,
				  j >= 3 * d && j + 3 * d < w ? LINE_CUBIC : LINE_LINEAR, &l,
				  pred, ctx);
			fwd_line(f, row, s, cnt, pred, ctx);
		}
		cnt = (w - 1) / s;              /* columns d, d + s, ..., w - 1 - d */
		for (j = 0; j < w; j += d) {
			const int32_t *row = h + j * w + d;

			hier_line(row, s, d, cnt, LINE_EDGES, &l, pred, ctx);
			fwd_line(f, row, s, cnt, pred, ctx);
		}
	}
}

/* Filter 3's contexts of a row from its saturated z (cur) and the row
 * above (up), both padded (ZPAD). */
CLONES_INT static void causal_ctx_row(const uint32_t *restrict up, const uint32_t *restrict cur, size_t w,
			   uint8_t *restrict ctx)
{
	const uint32_t *c1 = cur - 1, *c2 = cur - 2, *u1 = up - 1, *u2 = up + 1;

	for (size_t i = 0; i < w; i++) {
		uint32_t a = 4 * c1[i] + c2[i] + 2 * up[i] + u1[i] + u2[i];
		uint32_t b = blen32v(a >> 2);

		ctx[i] = (uint8_t)(b < 15 ? b : 15);
	}
}

/* Filter 3 residuals and contexts in raster order from sample 1. rowbuf
 * holds 4w + 16 words. */
static void causal_forward(const int32_t *h, size_t w, int narrow, struct fwd *f,
			   uint32_t *rowbuf)
{
	uint32_t *pred = rowbuf, *up = rowbuf + w + ZPAD, *cur = up + w + 1 + ZPAD, *t;
	uint8_t *ctx = (uint8_t *)(cur + w + 1);
	size_t i, j;

	memset(up - ZPAD, 0, (w + 1 + ZPAD) * sizeof(*up));
	memset(cur - ZPAD, 0, (w + 1 + ZPAD) * sizeof(*cur));
	for (j = 0; j < w; j++) {
		const uint32_t *u = (const uint32_t *)(h + j * w);
		uint32_t *z = f->z + f->n;
		size_t first = j ? 0 : 1;

		causal_row(h, w, j, narrow, pred);
		cur[0] = 0;
		for (i = first; i < w; i++)
			cur[i] = zigzag(u[i] - pred[i]);
		memcpy(z, cur + first, (w - first) * sizeof(*z));
		for (i = first; i < w; i++)
			cur[i] = zsat(cur[i]);
		causal_ctx_row(up, cur, w, ctx);
		tokens(z, ctx + first, w - first, f->ix + f->n, f->nb + f->n);
		f->n += w - first;
		t = up;
		up = cur;
		cur = t;
	}
}

/* A bit writer into a buffer known to be large enough. */
struct bq {
	uint8_t *p;
	uint64_t acc;
	unsigned n;
};

/* Append nb <= 30 bits; writes 8 bytes at p every time (the buffer has
 * room), keeps fewer than 8 bits pending. */
static inline void bq_put(struct bq *b, uint32_t v, unsigned nb)
{
	b->acc |= (uint64_t)v << b->n;
	b->n += nb;
	st64(b->p, b->acc);
	b->p += b->n >> 3;
	b->acc >>= b->n & ~7u;
	b->n &= 7;
}

/* Flush to a whole byte; returns the end. */
static uint8_t *bq_end(struct bq *b)
{
	while (b->n > 0) {
		*b->p++ = (uint8_t)b->acc;
		b->acc >>= 8;
		b->n = b->n > 8 ? b->n - 8 : 0;
	}
	return b->p;
}

/* The exact quotient floor(v / f) of a 32-bit v by f <= PROB_M as a
 * multiply: with rcp = ceil(2^42 / f), rcp * f - 2^42 = e < f <= 2^10, so
 * v * rcp / 2^42 exceeds v / f by v * e / (f 2^42) < 1 / f, never enough
 * to reach the next integer. One 64 x 64 -> 128 multiply instead of a
 * division. */
__extension__ typedef unsigned __int128 u128;
#define RCP_SHIFT 42

struct esym {            /* 16 bytes: the index is a shift */
	uint64_t rcp;    /* ceil(2^RCP_SHIFT / freq) */
	uint32_t xlim;   /* renormalise while the state exceeds this: 2^22 freq - 1 */
	uint16_t freq, cum;
};

/* Code one symbol into *x, renormalising into the bytes before rp (always
 * writes the two bytes before it); returns the new start. */
static inline uint8_t *rans_put(uint32_t *x, const struct esym *e, uint8_t *rp)
{
	uint32_t v = *x, take = v > e->xlim, qt;

	st16(rp - 2, (uint16_t)v);
	rp -= 2 * take;
	v = take ? v >> 16 : v;
	qt = (uint32_t)(((u128)v * e->rcp) >> RCP_SHIFT);
	*x = (qt << PROB_BITS) + (v - qt * e->freq) + e->cum;
	return rp;
}

/*
 * rANS over the n symbols ix, backwards, symbol k into state k mod S,
 * from rend down; then the states, the one of sample 0 first. Returns the
 * start. A state emits at most one 16-bit unit per symbol. S is a
 * constant in each caller, so the states of a group stay in registers.
 */
static inline __attribute__((always_inline)) uint8_t *
rans_encode(const struct esym *es, const uint16_t *ix, size_t n, uint8_t *rend, const unsigned S)
{
	uint32_t x[TILECODE_MAX_STATES];
	uint8_t *rp = rend;
	size_t k = n, full = n - n % S;
	unsigned j;

	for (j = 0; j < S; j++)
		x[j] = RANS_L;
	for (j = S; j-- > 0;)           /* the last, partial group */
		if (j < n % S)
			rp = rans_put(&x[j], &es[ix[full + j]], rp);
	for (k = full; k; ) {
		k -= S;
		for (j = S; j-- > 0;)
			rp = rans_put(&x[j], &es[ix[k + j]], rp);
	}
	rp -= 4 * S;
	for (j = 0; j < S; j++)
		le_put32(rp + 4 * j, x[j]);
	return rp;
}

CLONES_INT static uint8_t *rans_encode2(const struct esym *es, const uint16_t *ix, size_t n, uint8_t *rend)
{
	return rans_encode(es, ix, n, rend, 2);
}

CLONES_INT static uint8_t *rans_encode8(const struct esym *es, const uint16_t *ix, size_t n, uint8_t *rend)
{
	return rans_encode(es, ix, n, rend, 8);
}

/* Counts of the (context, token) pairs and the extra-bit stream; even and
 * odd samples count into separate tables, so that runs of one pair do not
 * wait on the store of the previous increment. Returns the stream's end. */
CLONES_INT static uint8_t *count_and_bits(const struct fwd *f, uint32_t (*cnt)[NIX], uint8_t *xb)
{
	struct bq q = { xb, 0, 0 };
	size_t k;

	memset(cnt, 0, 2 * sizeof(*cnt));
	for (k = 0; k + 1 < f->n; k += 2) {
		cnt[0][f->ix[k]]++;
		cnt[1][f->ix[k + 1]]++;
		bq_put(&q, f->z[k], f->nb[k]);
		bq_put(&q, f->z[k + 1], f->nb[k + 1]);
	}
	if (k < f->n) {
		cnt[0][f->ix[k]]++;
		bq_put(&q, f->z[k], f->nb[k]);
	}
	for (k = 0; k < NIX; k++)
		cnt[0][k] += cnt[1][k];
	return bq_end(&q);
}

/* Write the tables of the counts cnt (NIX) into b and fill es. */
static void write_tables(struct bw *b, const uint32_t *cnt, struct esym *es)
{
	static const struct esym none = { 0 };
	uint32_t freq[NTOK];
	unsigned c, t;

	for (c = 0; c < NCTX; c++) {
		const uint32_t *cc = cnt + c * NTOK;
		struct esym *e = es + c * NTOK;
		uint64_t tot = 0;
		unsigned last = 0;
		uint32_t cum = 0;

		for (t = 0; t < NTOK; t++)
			tot += cc[t];
		if (!tot) {
			bw_put(b, 0, 1);
			continue;
		}
		normalize(cc, tot, freq);
		for (t = 0; t < NTOK; t++)
			if (freq[t])
				last = t;
		bw_put(b, 1, 1);
		bw_put(b, last, 7);
		for (t = 0; t < NTOK; t++) {
			if (t <= last)
				bw_eg0(b, freq[t]);
			e[t] = none;
			if (freq[t]) {
				e[t].freq = (uint16_t)freq[t];
				e[t].cum = (uint16_t)cum;
				e[t].rcp = ((UINT64_C(1) << RCP_SHIFT) + freq[t] - 1) / freq[t];
				e[t].xlim = (uint32_t)(((uint64_t)(RANS_L >> PROB_BITS) << 16) *
						       freq[t] - 1);
			}
			cum += freq[t];
		}
	}
	bw_flush(b);
}

int tilecode_encode(const int32_t *h, uint32_t w, unsigned states, void *scratch,
		    uint8_t *out, size_t cap, size_t *len, unsigned *filter)
{
	size_t n = (size_t)w * w - 1, tab_len, xb_len, rans_len;
	uint32_t *z = scratch, *xbw = z + SCR_WORDS(n);
	uint16_t *ix = (uint16_t *)(xbw + SCR_WORDS(n));
	uint8_t *nb = (uint8_t *)(ix + SCR_WORDS(n)), *rbuf = nb + n + 16;
	uint8_t *rend = rbuf + RANS_BYTES(n);
	uint32_t *lines = (uint32_t *)(void *)(((uintptr_t)rend + 15) & ~(uintptr_t)15);
	uint32_t cnt[2][NIX];
	struct esym es[NIX];
	struct fwd f = { z, ix, nb, 0 };
	int narrow = !(states & TILECODE_WIDE) && heights_narrow(h, n + 1);
	struct bw b;
	uint8_t *rp;

	states &= ~TILECODE_WIDE;
	if (states != 2 && states != 8)
		return ERR_INVAL;
	*filter = choose(h, w, narrow, lines);
	if (*filter == TILECODE_FILTER_HIER)
		hier_forward(h, w, narrow, &f, lines);
	else
		causal_forward(h, w, narrow, &f, lines);
	xb_len = (size_t)(count_and_bits(&f, cnt, (uint8_t *)xbw) - (uint8_t *)xbw);

	/* the tables, padded to a whole byte */
	if (cap < 4)
		return ERR_TOOBIG;
	b = (struct bw){ out + 4, out + cap, 0, 0, 0 };
	write_tables(&b, cnt[0], es);
	if (b.over || (size_t)(b.end - b.p) < xb_len)
		return ERR_TOOBIG;
	tab_len = (size_t)(b.p - (out + 4));
	memcpy(out + 4 + tab_len, xbw, xb_len);
	le_put32(out, (uint32_t)(tab_len + xb_len));

	rp = states == 2 ? rans_encode2(es, ix, n, rend) : rans_encode8(es, ix, n, rend);
	rans_len = (size_t)(rend - rp);
	if (cap - 4 - tab_len - xb_len < rans_len)
		return ERR_TOOBIG;
	memcpy(out + 4 + tab_len + xb_len, rp, rans_len);
	*len = 4 + tab_len + xb_len + rans_len;
	return 0;
}

/* ---- the decoder ----------------------------------------------------------- */

struct tabs {
	uint8_t sym[NCTX * PROB_M]; /* the token of each slot, c << 10 | slot */
	/* by (context, token), index c << 7 | t: */
	uint64_t fc[DIX];          /* freq | cum << 16 | token base << 32 */
	uint32_t fq[DIX];          /* freq | cum << 16 */
	uint32_t base[DIX];        /* the token's base value */
	uint32_t mask[DIX];        /* its extra bits' mask */
	uint8_t nb[DIX];           /* the token's count of extra bits */
	uint16_t freq[DIX];
	uint32_t cnt[2][DIX];
	uint8_t used[NCTX];
};

/*
 * The decoder's moving parts. The loops copy them into a local struct
 * dl, whose fields other than the states stay in registers.
 */
struct rd {
	const uint8_t *units;    /* the rANS units, rlen bytes */
	size_t rlen;
	const uint8_t *bp;       /* the bit stream, blim bytes (8 more are readable) */
	size_t blim;
	uint32_t add;            /* NARROW - h[0]: see narrow_or() */
	unsigned S;              /* rANS states */
};

struct dl {
	uint32_t x[TILECODE_MAX_STATES]; /* x[j] decodes the next symbol */
	unsigned j;
	size_t ri;               /* units read */
	uint64_t pos;            /* bits read */
	uint32_t acc;            /* narrow_or() of the heights decoded so far */
};

/* Read the tables and skip the padding to the byte; unused contexts
 * decode token 0 with certainty, so a sample landing there still decodes
 * (and fails the count check). */
static int read_tables(struct tabs *tb, struct br *b)
{
	unsigned c, t;
	int bad = 0;

	for (c = 0; c < NCTX; c++) {
		uint16_t *f = tb->freq + (c << 7);
		uint32_t sum = 0, last;

		tb->used[c] = (uint8_t)br_get(b, 1);
		memset(f, 0, NTOK * sizeof(*f));
		if (!tb->used[c]) {
			f[0] = PROB_M;
		} else {
			last = br_get(b, 7);
			if (last >= NTOK)
				return ERR_CORRUPT;
			for (t = 0; t <= last; t++) {
				uint32_t v = br_eg0(b, &bad);

				if (bad || v > PROB_M)
					return ERR_CORRUPT;
				f[t] = (uint16_t)v;
				sum += v;
			}
			if (sum != PROB_M || !f[last])
				return ERR_CORRUPT;
		}
		sum = 0;
		for (t = 0; t < NTOK; t++) {
			unsigned k = c << 7 | t;

			tb->fc[k] = f[t] | (uint64_t)sum << 16 | (uint64_t)tok_base(t) << 32;
			tb->fq[k] = f[t] | sum << 16;
			tb->base[k] = tok_base(t);
			tb->nb[k] = tok_nb[t];
			tb->mask[k] = (1u << tok_nb[t]) - 1u;
			memset(tb->sym + (c << PROB_BITS) + sum, (int)t, f[t]);
			sum += f[t];
		}
	}
	/* the padding bits up to the byte must be zero */
	return br_get(b, (8 - (unsigned)(b->used & 7)) & 7) ? ERR_CORRUPT : 0;
}

static const uint8_t zero_unit[2];

/*
 * The decoding loops keep the decoder's moving parts in locals: DL_LOAD
 * declares them from struct dl *d and struct rd *r, DL_SAVE writes the
 * moving ones back (the states stay in d->x: they are indexed by j).
 * DSTEP decodes one sample in context c against prediction pred into v
 * (and its z), counting its (context, token) in the table cnt_. With
 * CHK, a unit past the end of the stream reads as zero (ri goes on
 * counting, for the check at the end); without, the caller has checked
 * that the run cannot reach that far. The bit reader's byte index is
 * clamped to the stream, after which 8 more bytes are readable.
 */
#define DL_LOAD(d, r, tb)                                                     \
	uint32_t *const x = (d)->x;                                           \
	unsigned j = (d)->j;                                                  \
	size_t ri = (d)->ri;                                                  \
	uint64_t pos = (d)->pos;                                              \
	uint32_t acc = (d)->acc;                                              \
	const uint8_t *const units = (r)->units, *const bp = (r)->bp;         \
	const size_t rlen = (r)->rlen, blim = (r)->blim;                      \
	const uint32_t add = (r)->add;                                        \
	const uint8_t *const sym = (tb)->sym;                                 \
	const uint64_t *const fc = (tb)->fc;                                  \
	uint32_t *const cnt0 = (tb)->cnt[0], *const cnt1 = (tb)->cnt[1];      \
	(void)rlen

#define DL_SAVE(d)                                                            \
	do {                                                                  \
		(d)->j = j;                                                   \
		(d)->ri = ri;                                                 \
		(d)->pos = pos;                                               \
		(d)->acc = acc;                                               \
	} while (0)

#define DSTEP(c, pred, v, z, cnt_, S, CHK)                                    \
	do {                                                                  \
		uint32_t xs_ = x[j], slot_ = xs_ & (PROB_M - 1), take_;       \
		unsigned c_ = (c), k_ = c_ << 7 | sym[c_ << PROB_BITS | slot_]; \
		unsigned nb_ = (tb)->nb[k_];                                  \
		uint64_t fc_ = fc[k_];                                        \
		size_t b_ = (size_t)(pos >> 3);                               \
		const uint8_t *u_ = !(CHK) || ri < rlen ? units + ri : zero_unit; \
		xs_ = ((uint32_t)fc_ & 0xffffu) * (xs_ >> PROB_BITS) + slot_ -  \
		      ((uint32_t)fc_ >> 16);                                  \
		take_ = 0u - (xs_ < RANS_L);                                  \
		xs_ = xs_ << (16 & take_) | (ld16(u_) & take_);               \
		ri += 2 & take_;                                              \
		x[j] = xs_;                                                   \
		j = (j + 1) & ((S) - 1);                                      \
		b_ = b_ < blim ? b_ : blim;                                   \
		(z) = (uint32_t)(fc_ >> 32) |                                 \
		      (uint32_t)((ld64(bp + b_) >> (pos & 7)) &               \
				 ((UINT64_C(1) << nb_) - 1));                 \
		pos += nb_;                                                   \
		(cnt_)[k_]++;                                                 \
		(v) = (pred) + unzigzag(z);                                   \
		acc |= (v) + add;                                             \
	} while (0)

/*
 * Filter 2's lines in two loops, each with few live values. First the
 * tokens of the line by rANS: the (context, token) index of sample m into
 * kx[m]. CHK as in DSTEP.
 */
#define TOKSTEP(xs, mm, CHK)                                                  \
	do {                                                                  \
		uint32_t slot_ = (xs) & (PROB_M - 1), c7_ = (uint32_t)ctx[mm] << 7; \
		uint32_t k_ = c7_ | tb->sym[c7_ << 3 | slot_], f_ = tb->fq[k_], t_, u_; \
		(xs) = (f_ & 0xffffu) * ((xs) >> PROB_BITS) + slot_ - (f_ >> 16); \
		/* branch-free: whether a state renormalises is data */       \
		t_ = 0u - ((xs) < RANS_L);                                    \
		u_ = ld16(!(CHK) || ri < rlen ? units + ri : zero_unit);      \
		(xs) = (xs) << (16 & t_) | (u_ & t_);                         \
		ri += 2 & t_;                                                 \
		kx[mm] = (uint16_t)k_;                                        \
	} while (0)

static inline __attribute__((always_inline)) void
line_tokens(struct dl *d, const struct rd *r, const struct tabs *restrict tb,
	    const uint8_t *restrict ctx, uint16_t *restrict kx, size_t cnt, const unsigned S,
	    const int CHK)
{
	uint32_t *restrict x = d->x;
	unsigned j = d->j;
	const uint8_t *units = r->units;
	size_t m = 0, ri = d->ri, rlen = r->rlen;

	for (; m < cnt; m++, j = (j + 1) & (S - 1))
		TOKSTEP(x[j], m, CHK);
	d->j = j;
	d->ri = ri;
}

static inline __attribute__((always_inline)) uint32_t
value_at(struct tabs *restrict tb, uint32_t *restrict cnt, const uint8_t *bp, uint64_t *pos,
	 size_t blim, unsigned k, uint32_t pred, const int CHK)
{
	size_t b = (size_t)(*pos >> 3);
	uint32_t z;

	z = tb->base[k];
	if (tb->nb[k]) {        /* most samples of smooth terrain have none */
		if (CHK)
			b = b < blim ? b : blim;
		z |= (uint32_t)(ld64(bp + b) >> (*pos & 7)) & tb->mask[k];
		*pos += tb->nb[k];
	}
	cnt[k]++;
	return pred + unzigzag(z);
}

static inline __attribute__((always_inline)) void
line_values(struct dl *d, const struct rd *r, struct tabs *restrict tb,
	    const uint16_t *restrict kx, const uint32_t *restrict pred, uint32_t *out,
	    size_t step, size_t cnt, const int CHK)
{
	const uint8_t *bp = r->bp;
	uint64_t pos = d->pos;
	uint32_t acc = d->acc, add = r->add, v;
	size_t blim = r->blim, m;

	for (m = 0; m + 1 < cnt; m += 2) {
		v = value_at(tb, tb->cnt[0], bp, &pos, blim, kx[m], pred[m], CHK);
		out[m * step] = v;
		acc |= v + add;
		v = value_at(tb, tb->cnt[1], bp, &pos, blim, kx[m + 1], pred[m + 1], CHK);
		out[(m + 1) * step] = v;
		acc |= v + add;
	}
	if (m < cnt) {
		v = value_at(tb, tb->cnt[0], bp, &pos, blim, kx[m], pred[m], CHK);
		out[m * step] = v;
		acc |= v + add;
	}
	d->pos = pos;
	d->acc = acc;
}

/* A whole line (kx: cnt words of scratch), each loop unchecked when the
 * line cannot pass the end of its stream (a sample takes at most one
 * unit and 30 bits). */
static inline __attribute__((always_inline)) void
decode_line(struct dl *d, const struct rd *r, struct tabs *tb, const uint8_t *ctx,
	    const uint32_t *pred, uint32_t *out, size_t step, size_t cnt, uint16_t *kx,
	    const unsigned S)
{
	if (r->rlen >= d->ri && r->rlen - d->ri >= 2 * cnt)
		line_tokens(d, r, tb, ctx, kx, cnt, S, 0);
	else
		line_tokens(d, r, tb, ctx, kx, cnt, S, 1);
	if ((d->pos >> 3) + 4 * (uint64_t)cnt <= r->blim)
		line_values(d, r, tb, kx, pred, out, step, cnt, 0);
	else
		line_values(d, r, tb, kx, pred, out, step, cnt, 1);
}

/* Filter 2, backwards; rowbuf: w words of predictions, w bytes of
 * contexts, w u16 indices. */
static inline __attribute__((always_inline)) void
hier_inverse(struct dl *d, const struct rd *r, struct tabs *tb, int32_t *h, size_t w,
	     uint32_t *rowbuf, const unsigned S)
{
	size_t s = w - 1, dd, j, cnt;
	uint32_t *hu = (uint32_t *)h, *pred = rowbuf, corner;
	uint8_t *ctx = (uint8_t *)(rowbuf + w);
	uint16_t *kx = (uint16_t *)(rowbuf + 2 * w);
	int narrow = narrow_base(hu[0]);
	struct hline l;

	memset(ctx, CTX_CORNER, 3);
	pred[0] = hu[0];
	decode_line(d, r, tb, ctx, pred, hu + s, 0, 1, kx, S);
	decode_line(d, r, tb, ctx, pred, hu + s * w, 0, 1, kx, S);
	corner = (uint32_t)((int64_t)h[s] + h[s * w] - h[0]);
	decode_line(d, r, tb, ctx, &corner, hu + s * w + s, 0, 1, kx, S);
	for (; s >= 2; s /= 2) {
		dd = s / 2;
		cnt = (w - 1) / s + 1;
		for (j = dd; j < w; j += s) {
			uint32_t *row = hu + j * w;

			hline_init(&l, (uint32_t)dd, hu[0], narrow && d->acc < 2 * NARROW);
			hier_line((int32_t *)row, s, dd * w, cnt,
				  j >= 3 * dd && j + 3 * dd < w ? LINE_CUBIC : LINE_LINEAR, &l,
				  pred, ctx);
			decode_line(d, r, tb, ctx, pred, row, s, cnt, kx, S);
		}
		cnt = (w - 1) / s;
		for (j = 0; j < w; j += dd) {
			uint32_t *row = hu + j * w + dd;

			hline_init(&l, (uint32_t)dd, hu[0], narrow && d->acc < 2 * NARROW);
			hier_line((int32_t *)row, s, dd, cnt, LINE_EDGES, &l, pred, ctx);
			decode_line(d, r, tb, ctx, pred, row, s, cnt, kx, S);
		}
	}
}

/* Filter 3, one row (from column `first`), backwards. */
static inline __attribute__((always_inline)) void
causal_row_inverse(struct dl *d, const struct rd *r, struct tabs *tb, int32_t *h, size_t w,
		   size_t row, size_t first, const uint32_t *up, uint32_t *cur, const unsigned S,
		   const int CHK)
{
	DL_LOAD(d, r, tb);
	uint32_t *hu = (uint32_t *)h + row * w, v, z;

	for (size_t i = first; i < w; i++) {
		unsigned c = causal_ctx(up, cur, i);
		uint32_t pred = (uint32_t)causal_pred(h, w, i, row);

		DSTEP(c, pred, v, z, (i & 1 ? cnt1 : cnt0), S, CHK);
		hu[i] = v;
		cur[i] = zsat(z);
	}
	DL_SAVE(d);
}

/* Filter 3, backwards; rowbuf: 2 (w + 1 + ZPAD) words. */
static inline __attribute__((always_inline)) void
causal_inverse(struct dl *d, const struct rd *r, struct tabs *tb, int32_t *h, size_t w,
	       uint32_t *rowbuf, const unsigned S)
{
	uint32_t *up = rowbuf + ZPAD, *cur = up + w + 1 + ZPAD, *t;
	size_t j;

	memset(rowbuf, 0, 2 * (w + 1 + ZPAD) * sizeof(*rowbuf));
	for (j = 0; j < w; j++) {
		size_t first = j ? 0 : 1;

		if (r->rlen >= d->ri && r->rlen - d->ri >= 2 * w)
			causal_row_inverse(d, r, tb, h, w, j, first, up, cur, S, 0);
		else
			causal_row_inverse(d, r, tb, h, w, j, first, up, cur, S, 1);
		t = up;
		up = cur;
		cur = t;
	}
}

/* The heights of either filter, by the state count. */
CLONES_INT static void inverse2(struct dl *d, const struct rd *r, struct tabs *tb, int32_t *h,
			    size_t w, unsigned filter, uint32_t *rowbuf)
{
	if (filter == TILECODE_FILTER_HIER)
		hier_inverse(d, r, tb, h, w, rowbuf, 2);
	else
		causal_inverse(d, r, tb, h, w, rowbuf, 2);
}

CLONES_INT static void inverse8(struct dl *d, const struct rd *r, struct tabs *tb, int32_t *h,
			    size_t w, unsigned filter, uint32_t *rowbuf)
{
	if (filter == TILECODE_FILTER_HIER)
		hier_inverse(d, r, tb, h, w, rowbuf, 8);
	else
		causal_inverse(d, r, tb, h, w, rowbuf, 8);
}

/* The counts must normalise to the tables sent. */
static int tables_match(struct tabs *tb)
{
	uint32_t f[NTOK];

	for (unsigned c = 0; c < NCTX; c++) {
		const uint32_t *cc = tb->cnt[0] + (c << 7);
		uint64_t tot = 0;

		for (unsigned t = 0; t < NTOK; t++)
			tot += cc[t];
		if (!tot || !tb->used[c]) {
			if (tot || tb->used[c])
				return 0;
			continue;
		}
		normalize(cc, tot, f);
		for (unsigned t = 0; t < NTOK; t++)
			if (f[t] != tb->freq[(c << 7) + t])
				return 0;
	}
	return 1;
}

int tilecode_decode(const uint8_t *in, size_t len, uint32_t w, unsigned states,
		    unsigned filter, uint32_t offset, int32_t *h)
{
	size_t bits_len, nstate, k;
	struct tabs *tb;
	struct rd r;
	struct dl d;
	struct br b;
	uint32_t *rowbuf;
	int rc, wide = (states & TILECODE_WIDE) != 0;

	states &= ~TILECODE_WIDE;
	nstate = 4 * (size_t)states;
	if (states != 2 && states != 8)
		return ERR_INVAL;
	if (filter != TILECODE_FILTER_HIER && filter != TILECODE_FILTER_CAUSAL)
		return ERR_CORRUPT;
	if (len < 4)
		return ERR_CORRUPT;
	bits_len = le_get32(in);
	if (bits_len > len - 4 || len - 4 - bits_len < nstate || (len - 4 - bits_len) % 2)
		return ERR_CORRUPT;
	tb = malloc(sizeof(*tb) + (3 * (size_t)w + 2 * ZPAD + 2) * sizeof(*rowbuf));
	if (!tb)
		return ERR_NOMEM;
	rowbuf = (uint32_t *)(tb + 1);
	memset(tb->cnt, 0, sizeof(tb->cnt));
	r = (struct rd){ in + 4 + bits_len + nstate, len - 4 - bits_len - nstate, in + 4,
			 bits_len, NARROW - offset, states };
	memset(&d, 0, sizeof(d));
	d.acc = wide ? UINT32_MAX : 0;  /* UINT32_MAX: never narrow */
	rc = ERR_CORRUPT;
	for (k = 0; k < states; k++)
		if ((d.x[k] = le_get32(in + 4 + bits_len + 4 * k)) < RANS_L)
			goto out;
	b = (struct br){ in + 4, in + 4 + bits_len, 0, 0, 0 };
	rc = read_tables(tb, &b);
	if (!rc && b.used > (uint64_t)bits_len * 8)
		rc = ERR_CORRUPT;
	if (rc)
		goto out;
	/* the extra bits start at the byte after the tables (used is a
	 * whole byte count now) */
	d.pos = b.used;
	h[0] = (int32_t)offset;
	(states == 2 ? inverse2 : inverse8)(&d, &r, tb, h, w, filter, rowbuf);
	rc = ERR_CORRUPT;
	/* both streams used up exactly: no overrun, fewer than 8 bits left,
	 * and zero, every rANS state back at RANS_L */
	if (d.ri != r.rlen || d.pos > (uint64_t)bits_len * 8 ||
	    (uint64_t)bits_len * 8 - d.pos >= 8)
		goto out;
	if (d.pos & 7 && in[4 + bits_len - 1] >> (d.pos & 7))
		goto out;
	for (k = 0; k < states; k++)
		if (d.x[k] != RANS_L)
			goto out;
	for (k = 0; k < DIX; k++)
		tb->cnt[0][k] += tb->cnt[1][k];
	if (!tables_match(tb))
		goto out;
	if (choose(h, w, narrow_base(offset) && d.acc < 2 * NARROW, rowbuf) != filter)
		goto out;
	rc = 0;
out:
	free(tb);
	return rc;
}
