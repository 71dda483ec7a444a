/*
 * tilecode_enc.c - the encoder of the entropy-coded heights (tilecode.h;
 * the format and the model in tilecode.c): the range check that picks the
 * narrow loops, the forward passes that turn heights into residuals,
 * tokens and extra bits, the frequency tables, and rANS, backwards over
 * the tokens with interleaved states. Pure code: no I/O, no globals.
 */
#include "tilecode.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "le.h"
#include "simd.h"
#include "tilecode_int.h"

/* ---- narrow arithmetic: u32 forms that vectorise ---------------------------- */

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
		tilecode__hline_init(&l, (uint32_t)d, (uint32_t)h[0], narrow);
		cnt = (w - 1) / s + 1;          /* columns 0, s, ..., w - 1 */
		for (j = d; j < w; j += s) {
			const int32_t *row = h + j * w;

			tilecode__hier_line(row, s, d * w, cnt,
					    j >= 3 * d && j + 3 * d < w ? LINE_CUBIC : LINE_LINEAR, &l,
					    pred, ctx);
			fwd_line(f, row, s, cnt, pred, ctx);
		}
		cnt = (w - 1) / s;              /* columns d, d + s, ..., w - 1 - d */
		for (j = 0; j < w; j += d) {
			const int32_t *row = h + j * w + d;

			tilecode__hier_line(row, s, d, cnt, LINE_EDGES, &l, pred, ctx);
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

		tilecode__causal_row(h, w, j, narrow, pred);
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

/* Write the tables of the counts cnt (NIX) into b, padded to the byte, and
 * their frequencies into freq (all 0 for an unused context). */
static void write_tables(struct bw *b, const uint32_t *cnt, uint32_t (*freq)[NTOK])
{
	unsigned c, t;

	for (c = 0; c < NCTX; c++) {
		const uint32_t *cc = cnt + c * NTOK;
		uint32_t *f = freq[c];
		uint64_t tot = 0;
		unsigned last = 0;

		for (t = 0; t < NTOK; t++)
			tot += cc[t];
		if (!tot) {
			memset(f, 0, NTOK * sizeof(*f));
			bw_put(b, 0, 1);
			continue;
		}
		tilecode__normalize(cc, tot, f);
		for (t = 0; t < NTOK; t++)
			if (f[t])
				last = t;
		bw_put(b, 1, 1);
		bw_put(b, last, 7);
		for (t = 0; t <= last; t++)
			bw_eg0(b, f[t]);
	}
	bw_flush(b);
}

/* rANS's symbols of the frequencies freq. */
static void rans_symbols(uint32_t (*freq)[NTOK], struct esym *es)
{
	static const struct esym none = { 0 };

	for (unsigned c = 0; c < NCTX; c++) {
		uint32_t cum = 0;

		for (unsigned t = 0; t < NTOK; t++) {
			uint32_t f = freq[c][t];
			struct esym *e = es + c * NTOK + t;

			*e = none;
			if (f) {
				e->freq = (uint16_t)f;
				e->cum = (uint16_t)cum;
				e->rcp = ((UINT64_C(1) << RCP_SHIFT) + f - 1) / f;
				e->xlim = (uint32_t)(((uint64_t)(RANS_L >> PROB_BITS) << 16) * f - 1);
			}
			cum += f;
		}
	}
}

/* ---- tANS (versions 7 and 8) ---------------------------------------------- */

/*
 * A (context, token)'s step: from state x in [M, 2M) it writes the low
 * (x + nbd) >> 16 bits of x, leaving x >> bits in [f, 2f), and moves to
 * (x >> bits) + add = M + cum + (x >> bits) - f, the slot of the token's
 * range that the decoder maps back to x >> bits (docs/tile-format.md,
 * "tANS").
 */
struct etans {
	uint32_t nbd;
	uint32_t add;
};

/* The steps et (NIX) of the frequencies freq. */
static void tans_steps(uint32_t (*freq)[NTOK], struct etans *et)
{
	for (unsigned c = 0; c < NCTX; c++) {
		uint32_t cum = 0;

		for (unsigned t = 0; t < NTOK; t++) {
			uint32_t f = freq[c][t], mb = PROB_BITS + 1 - blen32(f);

			/* bits = mb or mb - 1, mb when x < f << mb */
			et[c * NTOK + t] = (struct etans){ (mb << 16) - (f << mb), PROB_M + cum - f };
			cum += f;
		}
	}
}

/* Append nb <= TANS_MAXBITS bits (bq_put for wider values), storing the
 * whole bytes only when they would not fit: b->n stays at most 56. */
static inline void bq_put64(struct bq *b, uint64_t v, unsigned nb)
{
	if (b->n + nb > 56) {
		st64(b->p, b->acc);
		b->p += b->n >> 3;
		b->acc >>= b->n & ~7u;
		b->n &= 7;
	}
	b->acc |= v << b->n;
	b->n += nb;
}

/* One sample into state *x: its state bits, then its extra bits above. */
static inline void tans_put(struct bq *q, uint32_t *x, const struct etans *e, uint32_t z,
			    unsigned nb)
{
	uint32_t v = *x, nbs = (v + e->nbd) >> 16;

	bq_put64(q, (v & ((1u << nbs) - 1u)) | (uint64_t)z << nbs, nbs + nb);
	*x = (v >> nbs) + e->add;
}

/*
 * The tANS stream of the n samples (ix, nb, z: their extra bits), written
 * forwards from p while coding backwards, sample k into state k mod 8;
 * then the final states, the one of sample 7 first, each less PROB_M in
 * PROB_BITS bits, and a one bit that marks the end. Returns the end. p has
 * room for 5 n + 32 bytes.
 */
CLONES_INT static uint8_t *tans_encode(const struct etans *et, const uint16_t *ix, const uint8_t *nb,
				       const uint32_t *z, size_t n, uint8_t *p)
{
	struct bq q = { p, 0, 0 };
	uint32_t x[TANS_STATES];
	size_t k, full = n - n % TANS_STATES;
	unsigned j;

	for (j = 0; j < TANS_STATES; j++)
		x[j] = PROB_M;
	for (j = TANS_STATES; j-- > 0;)         /* the last, partial group */
		if (j < n % TANS_STATES)
			tans_put(&q, &x[j], &et[ix[full + j]], z[full + j], nb[full + j]);
	for (k = full; k;) {
		k -= TANS_STATES;
		for (j = TANS_STATES; j-- > 0;)
			tans_put(&q, &x[j], &et[ix[k + j]], z[k + j], nb[k + j]);
	}
	for (j = TANS_STATES; j-- > 0;)
		bq_put64(&q, x[j] - PROB_M, PROB_BITS);
	bq_put64(&q, 1, 1);
	return bq_end(&q);
}

/* Counts of the (context, token) pairs, as count_and_bits() without the
 * bits. */
CLONES_INT static void count_only(const struct fwd *f, uint32_t (*cnt)[NIX])
{
	size_t k;

	memset(cnt, 0, 2 * sizeof(*cnt));
	for (k = 0; k + 1 < f->n; k += 2) {
		cnt[0][f->ix[k]]++;
		cnt[1][f->ix[k + 1]]++;
	}
	if (k < f->n)
		cnt[0][f->ix[k]]++;
	for (k = 0; k < NIX; k++)
		cnt[0][k] += cnt[1][k];
}

/* Versions 7 and 8: the tables, then the tANS stream. */
static int encode_tans(const struct fwd *f, uint8_t *out, size_t cap, size_t *len)
{
	uint32_t cnt[2][NIX], freq[NCTX][NTOK];
	struct etans et[NIX];
	struct bw b = { out, out + cap, 0, 0, 0 };
	uint8_t *p, *end;
	size_t most, room, n;

	count_only(f, cnt);
	write_tables(&b, cnt[0], freq);
	if (b.over)
		return ERR_TOOBIG;
	tans_steps(freq, et);
	/* at most TANS_MAXBITS bits a sample, the states, the end mark, and
	 * the 8 bytes a store writes; a buffer short of that (callers of
	 * tilecode_bound() never are) takes a copy */
	most = (size_t)(TANS_MAXBITS * (uint64_t)f->n / 8) + 32;
	room = (size_t)(b.end - b.p);
	p = room >= most ? b.p : malloc(most);
	if (!p)
		return ERR_NOMEM;
	end = tans_encode(et, f->ix, f->nb, f->z, f->n, p);
	n = (size_t)(end - p);
	if (p != b.p) {
		if (n <= room)
			memcpy(b.p, p, n);
		free(p);
		if (n > room)
			return ERR_TOOBIG;
	}
	*len = (size_t)(b.p - out) + n;
	return 0;
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
	uint32_t cnt[2][NIX], freq[NCTX][NTOK];
	struct esym es[NIX];
	struct fwd f = { z, ix, nb, 0 };
	int narrow = !(states & TILECODE_WIDE) && heights_narrow(h, n + 1);
	int tans = (states & TILECODE_TANS) != 0;
	struct bw b;
	uint8_t *rp;

	states &= ~(TILECODE_WIDE | TILECODE_TANS);
	if (states != 2 && states != 8 && !(tans && states == TANS_STATES))
		return ERR_INVAL;
	if (tans && states != TANS_STATES)
		return ERR_INVAL;
	*filter = tilecode__choose(h, w, narrow, lines);
	if (*filter == TILECODE_FILTER_HIER)
		hier_forward(h, w, narrow, &f, lines);
	else
		causal_forward(h, w, narrow, &f, lines);
	if (tans)
		return encode_tans(&f, out, cap, len);
	xb_len = (size_t)(count_and_bits(&f, cnt, (uint8_t *)xbw) - (uint8_t *)xbw);

	/* the tables, padded to a whole byte */
	if (cap < 4)
		return ERR_TOOBIG;
	b = (struct bw){ out + 4, out + cap, 0, 0, 0 };
	write_tables(&b, cnt[0], freq);
	rans_symbols(freq, es);
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
