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
		tilecode__normalize(cc, tot, f);
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
	if (tilecode__choose(h, w, narrow_base(offset) && d.acc < 2 * NARROW, rowbuf) != filter)
		goto out;
	rc = 0;
out:
	free(tb);
	return rc;
}
