/*
 * tilecode_dec.c - the decoder of the entropy-coded heights (tilecode.h;
 * the format, the model and the bounds the decoder keeps in tilecode.c):
 * the frequency tables read and checked, the loops that decode tokens by
 * rANS and read their extra bits, both filters backwards, and the checks
 * that keep the coding canonical. Pure code: no I/O, no globals.
 */
#include "tilecode.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "le.h"
#include "simd.h"
#include "tilecode_int.h"

/* ---- small helpers ------------------------------------------------------ */

static uint32_t unzigzag(uint32_t z)
{
	return (z >> 1) ^ (0u - (z & 1u));
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

static inline unsigned causal_ctx(const uint32_t *up, const uint32_t *cur, size_t i)
{
	const uint32_t *c = cur + i, *u = up + i;
	uint32_t a = 4 * c[-1] + c[-2] + 2 * u[0] + u[-1] + u[1];
	unsigned b = blen32(a >> 2);

	return b < 15 ? b : 15;
}

/* ---- bit stream: least significant bit first ----------------------------- */

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
	/* tANS (versions 7 and 8): */
	const uint8_t *in;       /* the payload: the stream is read backwards in it */
	const uint32_t *dt;      /* decoding entries, c << 10 | state: see tans_tables() */
	const uint32_t *zb;      /* each token's base value, by c << 7 | token */
	uint32_t (*tcnt)[DIX];   /* the (context, token) counts, two tables */
};

struct dl {
	uint32_t x[TILECODE_MAX_STATES]; /* x[j] decodes the next symbol */
	unsigned j;
	size_t ri;               /* units read */
	uint64_t pos;            /* bits read */
	uint32_t acc;            /* narrow_or() of the heights decoded so far */
	int bad;                 /* tANS: the stream ran out */
};

/* S, the rANS state count of the loops, or this for tANS. */
#define TANS 0

/* Read the tables into freq (DIX) and used, and skip the padding to the
 * byte; an unused context gets token 0 with certainty, so that a sample
 * landing there still decodes (and fails the count check). */
static int read_tables(uint16_t *freq, uint8_t *used, struct br *b)
{
	unsigned c, t;
	int bad = 0;

	for (c = 0; c < NCTX; c++) {
		uint16_t *f = freq + (c << 7);
		uint32_t sum = 0, last;

		used[c] = (uint8_t)br_get(b, 1);
		memset(f, 0, NTOK * sizeof(*f));
		if (!used[c]) {
			f[0] = PROB_M;
			continue;
		}
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
	/* the padding bits up to the byte must be zero */
	return br_get(b, (8 - (unsigned)(b->used & 7)) & 7) ? ERR_CORRUPT : 0;
}

/* rANS's look-ups of the frequencies in tb->freq. */
static void rans_tables(struct tabs *tb)
{
	for (unsigned c = 0; c < NCTX; c++) {
		const uint16_t *f = tb->freq + (c << 7);
		uint32_t sum = 0;

		for (unsigned t = 0; t < NTOK; t++) {
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

/* ---- tANS (versions 7 and 8) ---------------------------------------------- */

/*
 * The decoding entry of each state s of each context:
 * base | bits << 10 | (c << 7 | token) << 14 | (bits + extra bits) << 25.
 * Token t owns the states [cum, cum + f) in order; the k-th stands for
 * y = f + k, which the encoder left after writing bits = PROB_BITS + 1 -
 * blen(y) bits of its state, so the state before is (y << bits) - PROB_M +
 * those bits: base = (y << bits) - PROB_M. An unused context decodes
 * token 0 from any state, reading nothing.
 */
static void tans_tables(const uint16_t *freq, const uint8_t *used, uint32_t *dt)
{
	for (unsigned c = 0; c < NCTX; c++) {
		uint32_t *e = dt + (c << PROB_BITS);

		if (!used[c]) {
			for (unsigned u = 0; u < PROB_M; u++)
				e[u] = u | c << 21;
			continue;
		}
		for (unsigned t = 0; t < NTOK; t++) {
			uint32_t f = freq[(c << 7) + t], tag = (c << 7 | t) << 14, b = blen32(f);
			uint32_t y = f, top = f ? 1u << b : 0;   /* bits change at y = top */

			/* y in [f, top) reads PROB_BITS + 1 - b bits, [top, 2f) one less:
			 * two runs where each entry is the last plus 1 << bits */
			for (unsigned r = 0; r < 2; r++) {
				uint32_t end = r ? 2 * f : top < 2 * f ? top : 2 * f, nbs, e0;

				if (end == y)   /* an empty run: f = 0, or a power of two */
					continue;
				nbs = PROB_BITS + 1 - b - r;
				e0 = ((y << nbs) - PROB_M) | nbs << 10 | tag | (nbs + tok_nb[t]) << 25;
				for (uint32_t i = 0; i < end - y; i++)
					e[i] = e0 + (i << nbs);
				e += end - y;
				y = end;
			}
		}
	}
}

/* The nb <= TANS_MAXBITS bits below bit p of in, the stream read
 * backwards; p moves down. Unchecked (CHK 0): p >= 56 (tans_room()). Checked:
 * bytes before in read as zero, and running past its start sets *bad. */
static inline __attribute__((always_inline)) uint64_t
tans_bits(const uint8_t *in, uint64_t *p, unsigned nb, int *bad, const int CHK)
{
	uint64_t q = *p, w = 0;

	if (!CHK || q >= 64) {
		w = ld64(in + (q >> 3) - 7);
	} else {
		ptrdiff_t a = (ptrdiff_t)(q >> 3) - 7;

		for (unsigned i = 0; i < 8; i++)
			if (a + (ptrdiff_t)i >= 0)
				w |= (uint64_t)in[a + (ptrdiff_t)i] << 8 * i;
	}
	if (CHK && q < nb) {
		*bad = 1;
		q = nb;
	}
	*p = q - nb;
	return (w >> ((q & 7) + 56 - nb)) & ((UINT64_C(1) << nb) - 1);
}

/*
 * One sample of context c (shifted: c << PROB_BITS): its state's entry,
 * its bits, the next state and its zigzagged residual, which it returns;
 * counts its (context, token) in cn.
 */
#define TSTEP(xs, c, z, cn, CHK)                                              \
	do {                                                                  \
		uint32_t e_ = dt[(c) | (xs)];                                 \
		unsigned nbs_ = (e_ >> 10) & 15, k_ = (e_ >> 14) & (DIX - 1);  \
		uint64_t v_ = tans_bits(in, &p, e_ >> 25, &bad, CHK);         \
		(xs) = (e_ & (PROB_M - 1)) + ((uint32_t)v_ & ((1u << nbs_) - 1u)); \
		(cn)[k_]++;                                                   \
		(z) = zb[k_] + (uint32_t)(v_ >> nbs_);                        \
	} while (0)

#define TANS_LOCALS(d, r)                                                     \
	uint32_t *const x = (d)->x, add = (r)->add, acc = (d)->acc;          \
	const uint32_t *restrict const dt = (r)->dt, *restrict const zb = (r)->zb; \
	const uint8_t *const in = (r)->in;                                    \
	uint32_t *restrict const cn0 = (r)->tcnt[0], *restrict const cn1 = (r)->tcnt[1]; \
	uint64_t p = (d)->pos;                                                \
	unsigned j = (d)->j;                                                  \
	int bad = (d)->bad

#define TANS_SAVE(d)                                                          \
	do {                                                                  \
		(d)->j = j;                                                   \
		(d)->pos = p;                                                 \
		(d)->acc = acc;                                               \
		(d)->bad = bad;                                               \
	} while (0)

/*
 * A line of filter 2 in two loops: the residuals by tANS into zs, eight
 * samples a turn with the eight states in locals (xi is state j + i, so the
 * sample order is that of the format); then the heights.
 */
static inline __attribute__((always_inline)) void
tans_line(struct dl *d, const struct rd *r, const uint8_t *restrict ctx,
	  const uint32_t *restrict pred, uint32_t *out, size_t step, size_t cnt,
	  uint32_t *restrict zs, const int CHK)
{
	const uint32_t *restrict const dt = r->dt, *restrict const zb = r->zb;
	const uint8_t *const in = r->in;
	uint32_t *restrict const cn = r->tcnt[0], *restrict const co = r->tcnt[1];
	uint32_t *const x = d->x, add = r->add, acc = d->acc;
	const unsigned j = d->j;
	uint64_t p = d->pos;
	int bad = d->bad;
	uint32_t x0 = x[j], x1 = x[(j + 1) & 7], x2 = x[(j + 2) & 7], x3 = x[(j + 3) & 7];
	uint32_t x4 = x[(j + 4) & 7], x5 = x[(j + 5) & 7], x6 = x[(j + 6) & 7], x7 = x[(j + 7) & 7];
	size_t m = 0;

#define TS(xs, i, cn_) TSTEP(xs, (uint32_t)ctx[m + (i)] << PROB_BITS, zs[m + (i)], cn_, CHK)
	for (; m + 8 <= cnt; m += 8) {
		TS(x0, 0, cn); TS(x1, 1, co); TS(x2, 2, cn); TS(x3, 3, co);
		TS(x4, 4, cn); TS(x5, 5, co); TS(x6, 6, cn); TS(x7, 7, co);
	}
	if (m < cnt) {          /* fewer than 8 left */
		TS(x0, 0, cn);
		if (m + 1 < cnt) TS(x1, 1, co);
		if (m + 2 < cnt) TS(x2, 2, cn);
		if (m + 3 < cnt) TS(x3, 3, co);
		if (m + 4 < cnt) TS(x4, 4, cn);
		if (m + 5 < cnt) TS(x5, 5, co);
		if (m + 6 < cnt) TS(x6, 6, cn);
	}
#undef TS
	x[j] = x0; x[(j + 1) & 7] = x1; x[(j + 2) & 7] = x2; x[(j + 3) & 7] = x3;
	x[(j + 4) & 7] = x4; x[(j + 5) & 7] = x5; x[(j + 6) & 7] = x6; x[(j + 7) & 7] = x7;
	d->j = (unsigned)((j + cnt) & (TANS_STATES - 1));
	d->pos = p;
	d->bad = bad;
	for (m = 0; m < cnt; m++) {
		uint32_t v = pred[m] + unzigzag(zs[m]);

		out[m * step] = v;
		acc |= v + add;
	}
	d->acc = acc;
}

/*
 * Filter 3, one row (from column `first`), with tANS. What comes from the
 * rows above is summed first, a whole row at a time: U, the row above's
 * part of each context, and P, the part of each prediction that does not
 * read the row itself (columns 2 and on of rows 2 and on). Then each
 * sample waits only on the two before it.
 */
static inline __attribute__((always_inline)) void
tans_causal_row(struct dl *d, const struct rd *r, int32_t *h, size_t w, size_t row,
		size_t first, const uint32_t *up, uint32_t *cur, uint32_t *restrict U,
		int64_t *restrict P, const int CHK)
{
	TANS_LOCALS(d, r);
	uint32_t *hu = (uint32_t *)h + row * w, z, v, c1, c2;
	const int32_t *n = h + (row ? row - 1 : 0) * w, *nn = h + (row >= 2 ? row - 2 : 0) * w;
	int64_t W, WW;
	size_t i;

	for (i = 0; i < w; i++)
		U[i] = 2 * up[i] + up[i - 1] + up[i + 1];
	if (row >= 2)
		for (i = 2; i < w; i++)
			P[i] = 3 * (int64_t)n[i] - 4 * (int64_t)n[i - 1] + n[i - 2] - nn[i] +
			       nn[i - 1];
	for (i = first; i < 2; i++) {           /* columns 0 and 1 */
		uint32_t pred = (uint32_t)causal_pred(h, w, i, row);

		TSTEP(x[j], (uint32_t)causal_ctx(up, cur, i) << PROB_BITS, z, i & 1 ? cn1 : cn0, CHK);
		v = pred + unzigzag(z);
		hu[i] = v;
		acc |= v + add;
		cur[i] = zsat(z);
		j = (j + 1) & (TANS_STATES - 1);
	}
	c1 = cur[1];
	c2 = cur[0];
	W = (int32_t)hu[1];
	WW = (int32_t)hu[0];
	for (i = 2; i < w; i++) {
		int64_t pr = row >= 2 ? floor_shift(P[i] + 3 * W - WW, 1) :
			     row == 1 ? (int64_t)n[i] + W - n[i - 1] : 2 * W - WW;
		uint32_t b = blen32((4 * c1 + c2 + U[i]) >> 2);

		TSTEP(x[j], (b < 15 ? b : 15) << PROB_BITS, z, i & 1 ? cn1 : cn0, CHK);
		v = (uint32_t)pr + unzigzag(z);
		hu[i] = v;
		acc |= v + add;
		c2 = c1;
		c1 = zsat(z);
		cur[i] = c1;
		WW = W;
		W = (int32_t)v;
		j = (j + 1) & (TANS_STATES - 1);
	}
	TANS_SAVE(d);
}

/* Whether cnt samples can be read unchecked from bit d->pos down. */
static inline int tans_room(const struct dl *d, size_t cnt)
{
	return d->pos >= 64 + (uint64_t)TANS_MAXBITS * cnt;
}

/* A whole line (kx: cnt words of scratch), each loop unchecked when the
 * line cannot pass the end of its stream (a sample takes at most one
 * unit and 30 bits). */
static inline __attribute__((always_inline)) void
decode_line(struct dl *d, const struct rd *r, struct tabs *tb, const uint8_t *ctx,
	    const uint32_t *pred, uint32_t *out, size_t step, size_t cnt, uint16_t *kx,
	    const unsigned S)
{
	if (S == TANS) {
		if (tans_room(d, cnt))
			tans_line(d, r, ctx, pred, out, step, cnt, (uint32_t *)kx, 0);
		else
			tans_line(d, r, ctx, pred, out, step, cnt, (uint32_t *)kx, 1);
		return;
	}
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

			tilecode__hline_init(&l, (uint32_t)dd, hu[0], narrow && d->acc < 2 * NARROW);
			tilecode__hier_line((int32_t *)row, s, dd * w, cnt,
					    j >= 3 * dd && j + 3 * dd < w ? LINE_CUBIC : LINE_LINEAR, &l,
					    pred, ctx);
			decode_line(d, r, tb, ctx, pred, row, s, cnt, kx, S);
		}
		cnt = (w - 1) / s;
		for (j = 0; j < w; j += dd) {
			uint32_t *row = hu + j * w + dd;

			tilecode__hline_init(&l, (uint32_t)dd, hu[0], narrow && d->acc < 2 * NARROW);
			tilecode__hier_line((int32_t *)row, s, dd, cnt, LINE_EDGES, &l, pred, ctx);
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

/* Filter 3, backwards; rowbuf: 2 (w + 1 + ZPAD) words (tANS: TANS_ROWBUF). */
static inline __attribute__((always_inline)) void
causal_inverse(struct dl *d, const struct rd *r, struct tabs *tb, int32_t *h, size_t w,
	       uint32_t *rowbuf, const unsigned S)
{
	uint32_t *up = rowbuf + ZPAD, *cur = up + w + 1 + ZPAD, *t;
	uint32_t *U = cur + w + 1;              /* tANS: w words, then w int64 */
	int64_t *P = (int64_t *)(void *)(((uintptr_t)(U + w) + 7) & ~(uintptr_t)7);
	size_t j;

	memset(rowbuf, 0, 2 * (w + 1 + ZPAD) * sizeof(*rowbuf));
	for (j = 0; j < w; j++) {
		size_t first = j ? 0 : 1;

		if (S == TANS && tans_room(d, w))
			tans_causal_row(d, r, h, w, j, first, up, cur, U, P, 0);
		else if (S == TANS)
			tans_causal_row(d, r, h, w, j, first, up, cur, U, P, 1);
		else if (r->rlen >= d->ri && r->rlen - d->ri >= 2 * w)
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

CLONES_INT static void inverse_tans(struct dl *d, const struct rd *r, struct tabs *tb, int32_t *h,
				    size_t w, unsigned filter, uint32_t *rowbuf)
{
	if (filter == TILECODE_FILTER_HIER)
		hier_inverse(d, r, tb, h, w, rowbuf, TANS);
	else
		causal_inverse(d, r, tb, h, w, rowbuf, TANS);
}

/* The counts cnt (DIX) must normalise to the tables sent. */
static int tables_match(const uint32_t *cnt, const uint16_t *freq, const uint8_t *used)
{
	uint32_t f[NTOK];

	for (unsigned c = 0; c < NCTX; c++) {
		const uint32_t *cc = cnt + (c << 7);
		uint64_t tot = 0;

		for (unsigned t = 0; t < NTOK; t++)
			tot += cc[t];
		if (!tot || !used[c]) {
			if (tot || used[c])
				return 0;
			continue;
		}
		tilecode__normalize(cc, tot, f);
		for (unsigned t = 0; t < NTOK; t++)
			if (f[t] != freq[(c << 7) + t])
				return 0;
	}
	return 1;
}

/* What the tANS decoder allocates, followed by its line buffers. */
struct ttabs {
	uint32_t dt[NCTX << PROB_BITS];
	uint32_t cnt[2][DIX];
	uint32_t zb[DIX];        /* token base values, by c << 7 | token */
	uint16_t freq[DIX];
	uint8_t used[NCTX];
};

/* Words of line buffers: filter 2's 3 w, filter 3's 2 (w + 1 + ZPAD) and
 * w words and w int64 (aligned). */
#define TANS_ROWBUF(w) (5 * (size_t)(w) + 2 * ZPAD + 8)

/* The smallest stream: the states and the end mark. */
#define TANS_MIN_STREAM ((TANS_STATES * PROB_BITS + 1 + 7) / 8)

/* Versions 7 and 8: the tables from in[0], then the stream, backwards
 * from its end mark in in[len - 1] down to the byte after the tables. */
static int decode_tans(const uint8_t *in, size_t len, uint32_t w, unsigned filter,
		       uint32_t offset, int32_t *h, int wide)
{
	struct ttabs *tt;
	struct rd r;
	struct dl d;
	struct br b;
	uint64_t lo;
	uint32_t *rowbuf;
	size_t k;
	int rc = ERR_CORRUPT;

	/* the bit reader reads 8 bytes ahead: the tables end before the
	 * stream, which is at least TANS_MIN_STREAM > 8 bytes */
	if (len < 2 + TANS_MIN_STREAM || !in[len - 1])
		return ERR_CORRUPT;
	tt = malloc(sizeof(*tt) + TANS_ROWBUF(w) * sizeof(*rowbuf));
	if (!tt)
		return ERR_NOMEM;
	rowbuf = (uint32_t *)(tt + 1);
	b = (struct br){ in, in + len - 8, 0, 0, 0 };
	if (read_tables(tt->freq, tt->used, &b) || b.used / 8 + TANS_MIN_STREAM > len)
		goto out;
	lo = b.used;            /* a whole number of bytes */
	memset(tt->cnt, 0, sizeof(tt->cnt));
	for (k = 0; k < DIX; k++)
		tt->zb[k] = (k & 127) < NTOK ? tok_base((unsigned)k & 127) : 0;
	tans_tables(tt->freq, tt->used, tt->dt);
	memset(&d, 0, sizeof(d));
	r = (struct rd){ .add = NARROW - offset, .in = in, .dt = tt->dt, .zb = tt->zb,
			 .tcnt = tt->cnt };
	d.acc = wide ? UINT32_MAX : 0;
	d.pos = 8 * (uint64_t)(len - 1) + blen32(in[len - 1]) - 1;   /* the end mark */
	for (k = 0; k < TANS_STATES; k++)
		d.x[k] = (uint32_t)tans_bits(in, &d.pos, PROB_BITS, &d.bad, 1);
	if (d.pos < lo)
		goto out;
	h[0] = (int32_t)offset;
	inverse_tans(&d, &r, NULL, h, w, filter, rowbuf);
	/* the stream used up exactly, every state back at 0 (PROB_M) */
	if (d.bad || d.pos != lo)
		goto out;
	for (k = 0; k < TANS_STATES; k++)
		if (d.x[k])
			goto out;
	for (k = 0; k < DIX; k++)
		tt->cnt[0][k] += tt->cnt[1][k];
	if (!tables_match(tt->cnt[0], tt->freq, tt->used))
		goto out;
	if (tilecode__choose(h, w, narrow_base(offset) && d.acc < 2 * NARROW, rowbuf) != filter)
		goto out;
	rc = 0;
out:
	free(tt);
	return rc;
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
	if (states & TILECODE_TANS) {
		if (states != (TILECODE_TANS | TANS_STATES))
			return ERR_INVAL;
		if (filter != TILECODE_FILTER_HIER && filter != TILECODE_FILTER_CAUSAL)
			return ERR_CORRUPT;
		return decode_tans(in, len, w, filter, offset, h, wide);
	}
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
	r = (struct rd){ .units = in + 4 + bits_len + nstate, .rlen = len - 4 - bits_len - nstate,
			 .bp = in + 4, .blim = bits_len, .add = NARROW - offset, .S = states };
	memset(&d, 0, sizeof(d));
	d.acc = wide ? UINT32_MAX : 0;  /* UINT32_MAX: never narrow */
	rc = ERR_CORRUPT;
	for (k = 0; k < states; k++)
		if ((d.x[k] = le_get32(in + 4 + bits_len + 4 * k)) < RANS_L)
			goto out;
	b = (struct br){ in + 4, in + 4 + bits_len, 0, 0, 0 };
	rc = read_tables(tb->freq, tb->used, &b);
	if (!rc)
		rans_tables(tb);
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
	if (!tables_match(tb->cnt[0], tb->freq, tb->used))
		goto out;
	if (tilecode__choose(h, w, narrow_base(offset) && d.acc < 2 * NARROW, rowbuf) != filter)
		goto out;
	rc = 0;
out:
	free(tb);
	return rc;
}
