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
 *
 * The codec's files: this one holds the model that both directions share
 * (the filters' predictions and contexts, the frequency tables' rule, the
 * rule that picks the filter); tilecode_enc.c codes (tilecode_encode()),
 * tilecode_dec.c decodes (tilecode_decode()); tilecode_int.h has the
 * constants and small helpers all three inline.
 */
#include "tilecode.h"

#include "simd.h"
#include "tilecode_int.h"

/* ---- small helpers ------------------------------------------------------ */

static unsigned blen64(uint64_t v)
{
	return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
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

/* ---- predictors and contexts (shared by both directions) ---------------- */

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

void tilecode__hline_init(struct hline *l, uint32_t d, uint32_t base, int narrow)
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

/* The narrow form of tilecode__hier_line() below; steps 2 and 4 (3/4 and
 * 3/16 of the samples) get their own copies of the loop, which gcc
 * vectorises. */
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
	else if (step == 4)
		cubic32(p + m * 4, 4, off, end - m, l->base, l->d, pred + m, ctx + m);
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
void tilecode__hier_line(const int32_t *restrict p, size_t step, size_t off, size_t cnt,
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

/* ---- frequency tables ---------------------------------------------------- */

/*
 * Normalise counts c (total t > 0) to frequencies f summing to PROB_M:
 * round(c * M / t), at least 1 where c > 0; then the largest frequency
 * (the first of equals) takes up the difference, one unit at a time when
 * it must give some back.
 */
void tilecode__normalize(const uint32_t *c, uint64_t t, uint32_t *f)
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
 * tilecode__hier_line() (pred: w words, ctx: w bytes of scratch). */
static uint64_t hier_line_bits(const int32_t *p, size_t step, size_t off, size_t cnt,
			       int kind, uint32_t d, uint32_t base, int narrow, uint32_t *pred,
			       uint8_t *ctx)
{
	struct hline l;

	tilecode__hline_init(&l, d, base, narrow);
	tilecode__hier_line(p, step, off, cnt, kind, &l, pred, ctx);
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
void tilecode__causal_row(const int32_t *h, size_t w, size_t j, int narrow, uint32_t *pred)
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
	tilecode__causal_row(h, w, j, narrow, pred);
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
unsigned tilecode__choose(const int32_t *h, size_t w, int narrow, uint32_t *scratch)
{
	uint64_t jh = 0, jc = 0;
	size_t j;

	for (j = 0; j < w; j += (j & 31) == 3 ? 29 : 1) {
		jh += hier_row_bits(h, w, j, narrow, scratch, (uint8_t *)(scratch + w));
		jc += causal_row_bits(h, w, j, narrow, scratch);
	}
	return jh <= jc ? TILECODE_FILTER_HIER : TILECODE_FILTER_CAUSAL;
}
