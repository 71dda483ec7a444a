/*
 * tilecode.c - entropy-coded heights, filters 2 and 3 of tile format
 * versions 3 and 4 (docs/tile-format.md, "Coded payload").
 *
 * Every sample but the first gets a prediction from samples already
 * decoded; the residual r = h - prediction (wrapping u32) is zigzagged to
 * z and split into a token (z itself below 16, else its bit length and
 * next bit) and raw extra bits. Tokens are coded by two interleaved rANS
 * states with one frequency table per context (16 contexts, 2^12 total),
 * sent in the payload; extra bits go to a separate bit stream. Filter 2
 * visits the samples coarse to fine, each predicted by cubic interpolation
 * between two known neighbours (smooth or splined terrain); filter 3 in
 * raster order with a causal 2D predictor (rough terrain). The encoder
 * takes the filter whose residuals have fewer significant bits in total,
 * and the decoder checks that rule, the tables and the stream ends, so that
 * the coding stays canonical.
 *
 * Bounds: the decoder reads the bit stream and the rANS stream from a copy
 * of the payload in which each is followed by more zero bytes than the
 * samples can consume, so no input can make it read outside its buffers
 * (overruns are seen afterwards from the positions reached); every index
 * into h is a sample position computed from w alone.
 */
#include "tilecode.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "le.h"

#define NTOK 72                 /* tokens: 0..15, then 2 per bit length 5..32 */
#define NCTX 16
#define PROB_BITS 10
#define PROB_M (1u << PROB_BITS)
#define RANS_L (1u << 16)       /* states live in [RANS_L, 2^32); 16-bit renormalisation */
#define ZSAT (1u << 24)         /* residual magnitudes saturate here in contexts */

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

/* Token of z, with the count and value of its extra bits (branch-free:
 * the bit lengths vary from sample to sample). */
static unsigned token_of(uint32_t z, unsigned *nb, uint32_t *extra)
{
	unsigned e = 31u - (unsigned)__builtin_clz(z | 1u), big = z >= 16;
	unsigned m = big ? e - 1 : 0;

	*nb = m;
	*extra = z & ((1u << m) - 1u);
	return big ? 16u + 2u * (e - 4u) + ((z >> m) & 1u) : z;
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

/*
 * Filter 2's predictions and contexts for one line of a level: cnt
 * samples at p[m * step], each between p[m * step -+ off] (and -+ 3 off
 * when cubic). LINE_EDGES: the first and last are linear (their outer
 * neighbour is off the tile), the rest cubic. Every neighbour belongs to
 * a coarser level, so the decoder computes the whole line before decoding
 * it and the encoder's loop has no branch per sample.
 */
static void hier_line(const int32_t *restrict p, size_t step, size_t off, size_t cnt,
		      int kind, const uint8_t *restrict map, uint32_t *restrict pred,
		      uint8_t *restrict ctx)
{
	size_t m = 0, end = cnt;

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

static uint32_t zsat(uint32_t z)
{
	return z < ZSAT ? z : ZSAT;
}

/* Filter 3: context from the saturated z of the row above (up, w values,
 * NULL in row 0) and of this row (cur, positions < i). */
static unsigned causal_ctx(const uint32_t *up, const uint32_t *cur, size_t w, size_t i)
{
	uint32_t a = 0;
	unsigned b;

	if (i >= 1)
		a += 4 * cur[i - 1];
	if (i >= 2)
		a += cur[i - 2];
	if (up) {
		a += 2 * up[i];
		if (i >= 1)
			a += up[i - 1];
		if (i + 1 < w)
			a += up[i + 1];
	}
	b = blen32(a >> 2);
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
 * refills without branches, never moves past end (reading zeros or
 * whatever follows there), and counts the bits it hands out in `used`, so
 * the caller can tell an overrun afterwards. */
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

/* Significant bits of filter 2's residuals over the cnt samples of a
 * hier_line() (pred: w words, ctx: w bytes of scratch). */
static uint64_t hier_line_bits(const int32_t *p, size_t step, size_t off, size_t cnt,
			       int kind, uint32_t d, uint32_t *pred, uint8_t *ctx)
{
	uint8_t map[65];
	uint64_t bits = 0;

	hier_ctx_map(d, map);
	hier_line(p, step, off, cnt, kind, map, pred, ctx);
	for (size_t m = 0; m < cnt; m++)
		bits += blen32(zigzag((uint32_t)p[m * step] - pred[m]));
	return bits;
}

/*
 * Filter 2's bits over row j, as the passes that visit it: the horizontal
 * pass of every level d up to the row's own spacing (j's lowest set bit)
 * takes the columns d mod 2d, the vertical pass of the row's level the
 * columns 0 mod 2d; rows 0 and w - 1 belong to no vertical pass and hold
 * the corners instead.
 */
static uint64_t hier_row_bits(const int32_t *h, size_t w, size_t j, uint32_t *pred,
			      uint8_t *ctx)
{
	size_t s = w - 1, dr, d;
	const int32_t *row = h + j * w;
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
				       (uint32_t)dr, pred, ctx);
	}
	for (d = 1; d <= dr; d *= 2)
		bits += hier_line_bits(row + d, 2 * d, d, s / (2 * d), LINE_EDGES, (uint32_t)d,
				       pred, ctx);
	return bits;
}

/* Filter 3's bits over row j (from sample 1 in row 0): the general
 * predictor, branch-free, from column 2 of row 2 on. */
static uint64_t causal_row_bits(const int32_t *h, size_t w, size_t j)
{
	const int32_t *p = h + j * w, *n = p - w, *nn = p - 2 * w;
	uint64_t bits = 0;
	size_t i;

	if (j < 2) {
		for (i = j ? 0 : 1; i < w; i++)
			bits += blen32(zigzag((uint32_t)p[i] - (uint32_t)causal_pred(h, w, i, j)));
		return bits;
	}
	for (i = 0; i < 2; i++)
		bits += blen32(zigzag((uint32_t)p[i] - (uint32_t)causal_pred(h, w, i, j)));
	for (i = 2; i < w; i++) {
		int64_t t = 3 * ((int64_t)n[i] + p[i - 1]) - 4 * (int64_t)n[i - 1] - p[i - 2] +
			    n[i - 2] - nn[i] + nn[i - 1];

		bits += blen32(zigzag((uint32_t)p[i] - (uint32_t)floor_shift(t, 1)));
	}
	return bits;
}

/*
 * Which filter codes h: the one whose residuals have fewer significant
 * bits in total over the sample rows j with j mod 32 < 4 (one in 8, with
 * filter 2's levels in their proportions: 3/4 at spacing 1, 3/16 at 2),
 * sample (0, 0) left out; filter 2 on a tie. scratch: w words and w
 * bytes.
 */
static unsigned choose(const int32_t *h, size_t w, uint32_t *scratch)
{
	uint64_t jh = 0, jc = 0;
	size_t j;

	for (j = 0; j < w; j += (j & 31) == 3 ? 29 : 1) {
		jh += hier_row_bits(h, w, j, scratch, (uint8_t *)(scratch + w));
		jc += causal_row_bits(h, w, j);
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

/* Scratch: z (u32) and the extra bits, n + 2 words each; the rANS bytes
 * (2n + 32 + 8w; before them choose()'s and filter 2's line of predictions
 * and contexts, filter 3's two rows of contexts); tokens and contexts. */
#define SCR_WORDS(n) ((n) + 8)

size_t tilecode_scratch_size(uint32_t w)
{
	size_t n = (size_t)w * w;

	return 2 * SCR_WORDS(n) * 4 + (2 * n + 32 + 8 * (size_t)w) + 2 * n + 64;
}

/* Filter 2 residuals and contexts in coding order; returns the count.
 * pred holds w words. */
static size_t hier_forward(const int32_t *h, size_t w, uint32_t *z, uint8_t *ctx,
			   uint32_t *pred)
{
	size_t s = w - 1, d, i, j, m, cnt, n = 0;
	uint8_t map[65];

	z[n] = zigzag((uint32_t)h[s] - (uint32_t)h[0]);
	ctx[n++] = CTX_CORNER;
	z[n] = zigzag((uint32_t)h[s * w] - (uint32_t)h[0]);
	ctx[n++] = CTX_CORNER;
	z[n] = zigzag((uint32_t)h[s * w + s] - (uint32_t)((int64_t)h[s] + h[s * w] - h[0]));
	ctx[n++] = CTX_CORNER;
	for (; s >= 2; s /= 2) {
		d = s / 2;
		hier_ctx_map((uint32_t)d, map);
		cnt = (w - 1) / s + 1;          /* columns 0, s, ..., w - 1 */
		for (j = d; j < w; j += s) {
			const int32_t *row = h + j * w;

			hier_line(row, s, d * w, cnt,
				  j >= 3 * d && j + 3 * d < w ? LINE_CUBIC : LINE_LINEAR,
				  map, pred, ctx + n);
			for (m = 0; m < cnt; m++)
				z[n + m] = zigzag((uint32_t)row[m * s] - pred[m]);
			n += cnt;
		}
		cnt = (w - 1) / s;              /* columns d, d + s, ..., w - 1 - d */
		for (j = 0; j < w; j += d) {
			const int32_t *row = h + j * w + d;

			hier_line(row, s, d, cnt, LINE_EDGES, map, pred, ctx + n);
			for (m = 0; m < cnt; m++)
				z[n + m] = zigzag((uint32_t)row[m * s] - pred[m]);
			n += cnt;
		}
	}
	(void)i;
	return n;
}

/* Filter 3 residuals and contexts in raster order from sample 1 (index
 * k - 1 for sample k); rowbuf holds 2w words. */
static void causal_forward(const int32_t *h, size_t w, uint32_t *z, uint8_t *ctx,
			   uint32_t *rowbuf)
{
	uint32_t *up = rowbuf, *cur = rowbuf + w, *t;
	size_t i, j;

	cur[0] = 0;
	for (j = 0; j < w; j++) {
		for (i = j ? 0 : 1; i < w; i++) {
			size_t k = j * w + i;
			uint32_t zk = zigzag((uint32_t)h[k] - (uint32_t)causal_pred(h, w, i, j));

			ctx[k - 1] = (uint8_t)causal_ctx(j ? up : NULL, cur, w, i);
			z[k - 1] = zk;
			cur[i] = zsat(zk);
		}
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
static void bq_put(struct bq *b, uint32_t v, unsigned nb)
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

int tilecode_encode(const int32_t *h, uint32_t w, void *scratch, uint8_t *out,
		    size_t cap, size_t *len, unsigned *filter)
{
	size_t n = (size_t)w * w - 1, k, tab_len, xb_len, rans_len;
	uint32_t *z = scratch, *xbw = z + SCR_WORDS(n);
	uint8_t *rbuf = (uint8_t *)(xbw + SCR_WORDS(n));
	uint8_t *rend = rbuf + 2 * n + 32 + 8 * (size_t)w;
	uint8_t *tok = rend, *ctx = tok + n + 32;
	uint32_t cnt[NCTX][NTOK], cnt2[2][NCTX][NTOK], freq[NTOK];
	uint64_t tot[NCTX] = { 0 };
	static const struct esym none = { 0 };
	struct esym es[NCTX][NTOK];
	struct bw b;
	struct bq q;
	uint32_t x0 = RANS_L, x1 = RANS_L;
	uint8_t *rp;
	unsigned c, t;

	*filter = choose(h, w, (uint32_t *)rbuf);
	if (*filter == TILECODE_FILTER_HIER)
		hier_forward(h, w, z, ctx, (uint32_t *)rbuf);
	else
		causal_forward(h, w, z, ctx, (uint32_t *)rbuf);

	/* tokens, counts and the extra bits; even and odd samples count into
	 * separate tables, so that runs of one token do not wait on the
	 * store of the previous increment */
	memset(cnt2, 0, sizeof(cnt2));
	q.p = (uint8_t *)xbw;
	q.acc = 0;
	q.n = 0;
	for (k = 0; k < n; k++) {
		unsigned nb;
		uint32_t extra;

		t = token_of(z[k], &nb, &extra);
		tok[k] = (uint8_t)t;
		cnt2[k & 1][ctx[k]][t]++;
		bq_put(&q, extra, nb);
	}
	for (c = 0; c < NCTX; c++)
		for (t = 0; t < NTOK; t++)
			cnt[c][t] = cnt2[0][c][t] + cnt2[1][c][t];
	xb_len = (size_t)(bq_end(&q) - (uint8_t *)xbw);

	/* the tables, padded to a whole byte */
	if (cap < 4)
		return ERR_TOOBIG;
	b.p = out + 4;
	b.end = out + cap;
	b.acc = 0;
	b.n = 0;
	b.over = 0;
	for (c = 0; c < NCTX; c++) {
		unsigned last = 0;
		uint32_t cum = 0;

		for (t = 0; t < NTOK; t++)
			tot[c] += cnt[c][t];
		if (!tot[c]) {
			bw_put(&b, 0, 1);
			continue;
		}
		normalize(cnt[c], tot[c], freq);
		for (t = 0; t < NTOK; t++)
			if (freq[t])
				last = t;
		bw_put(&b, 1, 1);
		bw_put(&b, last, 7);
		for (t = 0; t < NTOK; t++) {
			if (t <= last)
				bw_eg0(&b, freq[t]);
			es[c][t] = none;
			if (freq[t]) {
				es[c][t].freq = (uint16_t)freq[t];
				es[c][t].cum = (uint16_t)cum;
				es[c][t].rcp = ((UINT64_C(1) << RCP_SHIFT) + freq[t] - 1) / freq[t];
				es[c][t].xlim = (uint32_t)(((uint64_t)(RANS_L >> PROB_BITS) << 16) *
							   freq[t] - 1);
			}
			cum += freq[t];
		}
	}
	bw_flush(&b);
	if (b.over || (size_t)(b.end - b.p) < xb_len)
		return ERR_TOOBIG;
	tab_len = (size_t)(b.p - (out + 4));
	memcpy(out + 4 + tab_len, xbw, xb_len);
	le_put32(out, (uint32_t)(tab_len + xb_len));

	/* rANS, backwards; symbol k is coded by state k & 1. A state emits
	 * at most one 16-bit unit per symbol. */
	rp = rend;
	k = n;
	if (k & 1) {
		k--;
		rp = rans_put(&x0, &es[ctx[k]][tok[k]], rp);
	}
	while (k) {             /* pairs: k - 1 odd (x1), k - 2 even (x0) */
		k -= 2;
		rp = rans_put(&x1, &es[ctx[k + 1]][tok[k + 1]], rp);
		rp = rans_put(&x0, &es[ctx[k]][tok[k]], rp);
	}
	rp -= 8;
	le_put32(rp, x0);
	le_put32(rp + 4, x1);
	rans_len = (size_t)(rend - rp);
	if (cap - 4 - tab_len - xb_len < rans_len)
		return ERR_TOOBIG;
	memcpy(out + 4 + tab_len + xb_len, rp, rans_len);
	*len = 4 + tab_len + xb_len + rans_len;
	return 0;
}

/* ---- the decoder ----------------------------------------------------------- */

struct tabs {
	uint8_t sym[NCTX][PROB_M];
	uint16_t freq[NCTX][NTOK];
	uint16_t cum[NCTX][NTOK];
	uint32_t cnt[NCTX][NTOK];
	uint8_t used[NCTX];
};

/*
 * The decoder's moving parts; each loop keeps a copy in locals. Both
 * streams are read from a copy of the payload in which each is followed by
 * zero bytes, more than the samples can consume (see DECODE_Z), so the
 * branch-free readers need no bounds checks; the tables are read with the
 * clamping br_get(), and the checks at the end see any overrun.
 */
#define PAD 16

struct rd {
	uint32_t x0, x1;        /* x0 decodes the next symbol, then they swap */
	const uint8_t *rp, *rend;
	struct br b;
};

/* Read the tables and skip the padding to the byte; unused contexts
 * decode token 0 with certainty, so a sample landing there still decodes
 * (and fails the count check). */
static int read_tables(struct tabs *tb, struct br *b)
{
	unsigned c, t;
	int bad = 0;

	for (c = 0; c < NCTX; c++) {
		uint32_t sum = 0, last;

		tb->used[c] = (uint8_t)br_get(b, 1);
		memset(tb->freq[c], 0, sizeof(tb->freq[c]));
		if (!tb->used[c]) {
			tb->freq[c][0] = PROB_M;
		} else {
			last = br_get(b, 7);
			if (last >= NTOK)
				return ERR_CORRUPT;
			for (t = 0; t <= last; t++) {
				uint32_t f = br_eg0(b, &bad);

				if (bad || f > PROB_M)
					return ERR_CORRUPT;
				tb->freq[c][t] = (uint16_t)f;
				sum += f;
			}
			if (sum != PROB_M || !tb->freq[c][last])
				return ERR_CORRUPT;
		}
		sum = 0;
		for (t = 0; t < NTOK; t++) {
			tb->cum[c][t] = (uint16_t)sum;
			memset(tb->sym[c] + sum, (int)t, tb->freq[c][t]);
			sum += tb->freq[c][t];
		}
	}
	/* the padding bits up to the byte must be zero */
	return br_get(b, (8 - (unsigned)(b->used & 7)) & 7) ? ERR_CORRUPT : 0;
}

/*
 * The decoder's state lives in locals of each loop (a struct, even a local
 * one, ends up on the stack and puts a store and a load on every link of
 * the rANS and bit reader chains): RD_LOAD declares them from *r, RD_SAVE
 * writes them back, DECODE_Z decodes the next z in context c.
 */
#define RD_LOAD(r)                                                            \
	uint32_t x0 = (r)->x0, x1 = (r)->x1;                                  \
	const uint8_t *rp = (r)->rp;                                          \
	const uint8_t *bp = (r)->b.p;                                         \
	uint64_t pos = (r)->b.used

#define RD_SAVE(r)                                                            \
	do {                                                                  \
		(r)->x0 = x0, (r)->x1 = x1, (r)->rp = rp;                     \
		(r)->b.used = pos;                                            \
	} while (0)

/* The readers run unchecked: the copy of each stream is followed by more
 * zero bytes than the samples can consume (2 per sample for rANS, 8 per
 * sample for the bits, which take at most 30), and the caller compares
 * the positions reached with the stream ends afterwards. The extra bits
 * are read at a bit position pos from the base bp, 8 bytes at a time, so
 * the only chain from sample to sample is pos += nb (a refilled
 * accumulator would put a load on that chain). */
#define DECODE_Z(c, zout)                                                     \
	do {                                                                  \
		uint32_t x_ = x0, slot_ = x_ & (PROB_M - 1), take_;           \
		unsigned t_ = tb->sym[(c)][slot_], nb_ = tok_nb[t_];          \
		x_ = tb->freq[(c)][t_] * (x_ >> PROB_BITS) + slot_ -          \
		     tb->cum[(c)][t_];                                        \
		take_ = x_ < RANS_L;                                          \
		x_ = take_ ? x_ << 16 | ld16(rp) : x_;                    \
		rp += 2 * take_;                                              \
		x0 = x1;                                                      \
		x1 = x_;                                                      \
		tb->cnt[(c)][t_]++;                                           \
		(zout) = tok_base(t_) | (uint32_t)((ld64(bp + (pos >> 3)) >>  \
			 (pos & 7)) & ((UINT64_C(1) << nb_) - 1));            \
		pos += nb_;                                                   \
	} while (0)

/* Decode cnt samples at p[m * step] with the predictions and contexts
 * hier_line() gave. */
#define DECODE_LINE(p, step, cnt, pred, ctx)                                  \
	do {                                                                  \
		uint32_t *q_ = (uint32_t *)(p), z_;                           \
		for (size_t m_ = 0; m_ < (cnt); m_++) {                       \
			DECODE_Z((ctx)[m_], z_);                              \
			q_[m_ * (step)] = (pred)[m_] + unzigzag(z_);          \
		}                                                             \
	} while (0)

/* rowbuf: w words of predictions, then w bytes of contexts. */
static void hier_inverse(struct rd *r, struct tabs *tb, int32_t *h, size_t w,
			 uint32_t *rowbuf)
{
	RD_LOAD(r);
	size_t s = w - 1, d, j, cnt;
	uint32_t *hu = (uint32_t *)h, z, *pred = rowbuf;
	uint8_t *ctx = (uint8_t *)(rowbuf + w), map[65];

	DECODE_Z(CTX_CORNER, z);
	hu[s] = (uint32_t)h[0] + unzigzag(z);
	DECODE_Z(CTX_CORNER, z);
	hu[s * w] = (uint32_t)h[0] + unzigzag(z);
	DECODE_Z(CTX_CORNER, z);
	hu[s * w + s] = (uint32_t)((int64_t)h[s] + h[s * w] - h[0]) + unzigzag(z);
	for (; s >= 2; s /= 2) {
		d = s / 2;
		hier_ctx_map((uint32_t)d, map);
		cnt = (w - 1) / s + 1;
		for (j = d; j < w; j += s) {
			int32_t *row = h + j * w;

			hier_line(row, s, d * w, cnt,
				  j >= 3 * d && j + 3 * d < w ? LINE_CUBIC : LINE_LINEAR,
				  map, pred, ctx);
			DECODE_LINE(row, s, cnt, pred, ctx);
		}
		cnt = (w - 1) / s;
		for (j = 0; j < w; j += d) {
			int32_t *row = h + j * w + d;

			hier_line(row, s, d, cnt, LINE_EDGES, map, pred, ctx);
			DECODE_LINE(row, s, cnt, pred, ctx);
		}
	}
	RD_SAVE(r);
}

static void causal_inverse(struct rd *r, struct tabs *tb, int32_t *h, size_t w,
			   uint32_t *rowbuf)
{
	RD_LOAD(r);
	uint32_t *up = rowbuf, *cur = rowbuf + w, *t;
	uint32_t *hu = (uint32_t *)h, z;
	size_t i, j;

	cur[0] = 0;
	for (j = 0; j < w; j++) {
		for (i = j ? 0 : 1; i < w; i++) {
			size_t k = j * w + i;
			unsigned c = causal_ctx(j ? up : NULL, cur, w, i);

			DECODE_Z(c, z);
			hu[k] = (uint32_t)causal_pred(h, w, i, j) + unzigzag(z);
			cur[i] = zsat(z);
		}
		t = up;
		up = cur;
		cur = t;
	}
	RD_SAVE(r);
}

/* The counts must normalise to the tables sent. */
static int tables_match(const struct tabs *tb)
{
	uint32_t f[NTOK];

	for (unsigned c = 0; c < NCTX; c++) {
		uint64_t tot = 0;

		for (unsigned t = 0; t < NTOK; t++)
			tot += tb->cnt[c][t];
		if (!tot || !tb->used[c]) {
			if (tot || tb->used[c])
				return 0;
			continue;
		}
		normalize(tb->cnt[c], tot, f);
		for (unsigned t = 0; t < NTOK; t++)
			if (f[t] != tb->freq[c][t])
				return 0;
	}
	return 1;
}

int tilecode_decode(const uint8_t *in, size_t len, uint32_t w, unsigned filter,
		    uint32_t offset, int32_t *h)
{
	size_t bits_len, rans_len, bits_pad, rans_pad;
	struct tabs *tb;
	struct rd r;
	uint32_t *rowbuf = NULL;
	uint8_t *copy;
	int rc;

	if (filter != TILECODE_FILTER_HIER && filter != TILECODE_FILTER_CAUSAL)
		return ERR_CORRUPT;
	if (len < 4)
		return ERR_CORRUPT;
	bits_len = le_get32(in);
	if (bits_len > len - 4 || len - 4 - bits_len < 8 || (len - 4 - bits_len) % 2)
		return ERR_CORRUPT;
	rans_len = len - 4 - bits_len - 8;
	tb = malloc(sizeof(*tb));
	/* [bits][8 zero bytes per sample + PAD][rANS units][2 per sample + PAD] */
	bits_pad = 8 * (size_t)w * w + PAD;
	rans_pad = 2 * (size_t)w * w + PAD;
	copy = malloc(bits_len + bits_pad + rans_len + rans_pad);
	rowbuf = malloc(2 * (size_t)w * sizeof(*rowbuf));
	if (!tb || !copy || !rowbuf) {
		rc = ERR_NOMEM;
		goto out;
	}
	memcpy(copy, in + 4, bits_len);
	memset(copy + bits_len, 0, bits_pad);
	memcpy(copy + bits_len + bits_pad, in + 4 + bits_len + 8, rans_len);
	memset(copy + bits_len + bits_pad + rans_len, 0, rans_pad);
	memset(tb->cnt, 0, sizeof(tb->cnt));
	r.b.p = copy;
	r.b.end = copy + bits_len;
	r.b.acc = 0;
	r.b.n = 0;
	r.b.used = 0;
	r.rp = copy + bits_len + bits_pad;
	r.rend = r.rp + rans_len;
	r.x0 = le_get32(in + 4 + bits_len);
	r.x1 = le_get32(in + 4 + bits_len + 4);
	rc = read_tables(tb, &r.b);
	if (!rc && (r.b.used > (uint64_t)bits_len * 8 || r.x0 < RANS_L || r.x1 < RANS_L))
		rc = ERR_CORRUPT;
	if (rc)
		goto out;
	/* the extra bits start at the byte after the tables (used is a
	 * whole byte count now); br_get() may have clamped its pointer, so
	 * the loops read from the copy's start at bit position used */
	r.b.p = copy;
	h[0] = (int32_t)offset;
	if (filter == TILECODE_FILTER_HIER)
		hier_inverse(&r, tb, h, w, rowbuf);
	else
		causal_inverse(&r, tb, h, w, rowbuf);
	rc = ERR_CORRUPT;
	/* both streams used up exactly: no overrun, fewer than 8 bits left,
	 * and zero, both rANS states back at RANS_L */
	if (r.rp != r.rend || r.b.used > (uint64_t)bits_len * 8 ||
	    (uint64_t)bits_len * 8 - r.b.used >= 8)
		goto out;
	if (r.b.used & 7 && copy[bits_len - 1] >> (r.b.used & 7))
		goto out;
	if (r.x0 != RANS_L || r.x1 != RANS_L || !tables_match(tb))
		goto out;
	if (choose(h, w, rowbuf) != filter)
		goto out;
	rc = 0;
out:
	free(tb);
	free(copy);
	free(rowbuf);
	return rc;
}
