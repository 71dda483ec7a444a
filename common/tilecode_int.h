/*
 * tilecode_int.h - what the three files of the tile codec share:
 * tilecode.c (the model: both filters' predictions and contexts, the
 * normalisation of the frequency tables, the rule that picks the filter),
 * tilecode_enc.c (the encoder) and tilecode_dec.c (the decoder). The
 * format's constants, the stream loads and stores, the small integer
 * helpers that the hot loops of every file inline, and the model's entry
 * points (tilecode__*). Not installed: the public header is tilecode.h.
 * Pure code: no I/O, no globals.
 */
#ifndef TILECODE_INT_H
#define TILECODE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "le.h"

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

/* ---- small helpers (inlined where they are used) ------------------------ */

static inline unsigned blen32(uint32_t v)
{
	return v ? 32u - (unsigned)__builtin_clz(v) : 0u;
}

static inline uint32_t zigzag(uint32_t r)
{
	return (r << 1) ^ (0u - (r >> 31));
}

/* floor(x / 2^s) for |x| < 2^40, without shifting a negative number. */
static inline int64_t floor_shift(int64_t x, unsigned s)
{
	const int64_t bias = INT64_C(1) << 40;

	return (int64_t)((uint64_t)(x + bias) >> s) - (bias >> s);
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
static inline int narrow_base(uint32_t base)
{
	uint32_t b = base ^ 0x80000000u;

	return b >= NARROW && b <= 0u - NARROW;
}

/* ---- predictors and contexts (shared by both directions) ---------------- */

#define CTX_CORNER 15

enum { LINE_CUBIC, LINE_LINEAR, LINE_EDGES };

/* What a line of filter 2 needs besides its samples. */
struct hline {
	uint32_t d;          /* half step: 1, 2, 4, ... */
	uint32_t base;       /* h[0]: narrow sums are taken relative to it */
	int narrow;          /* heights within NARROW of base: the u32 loops */
	uint8_t map[65];     /* hier_ctx_map(d) */
};

/* l for the lines of half step d of a tile whose h[0] is base (narrow:
 * every height within NARROW of it). */
void tilecode__hline_init(struct hline *l, uint32_t d, uint32_t base, int narrow);

/* Filter 2's predictions and contexts for one line (tilecode.c). */
void tilecode__hier_line(const int32_t *restrict p, size_t step, size_t off, size_t cnt,
			 int kind, const struct hline *l, uint32_t *restrict pred,
			 uint8_t *restrict ctx);

/* Filter 3: prediction of sample (i, j) from decoded heights. */
static inline int64_t causal_pred(const int32_t *h, size_t w, size_t i, size_t j)
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

/* Filter 3's predictions of row j, all w samples (tilecode.c). */
void tilecode__causal_row(const int32_t *h, size_t w, size_t j, int narrow, uint32_t *pred);

/* ---- frequency tables and the filter rule -------------------------------- */

/* ---- tANS (versions 7 and 8) ---------------------------------------------- */

#define TANS_STATES 8           /* interleaved: sample n uses state n mod 8 */
#define TANS_MAXBITS (PROB_BITS + 30) /* a sample's bits: its state's, its extra */

/* Counts c (NTOK, total t > 0) normalised to frequencies f summing to
 * PROB_M, the one rule of the encoder's tables and the decoder's check. */
void tilecode__normalize(const uint32_t *c, uint64_t t, uint32_t *f);

/* The filter that codes h (TILECODE_FILTER_*), by the format's rule;
 * scratch: w words and w bytes. */
unsigned tilecode__choose(const int32_t *h, size_t w, int narrow, uint32_t *scratch);

#endif
