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
 * Bounds: the decoder reads the bit stream and the rANS stream through
 * readers that return zeros past their end and remember the overrun, so no
 * input can make it read outside in[0..len); every index into h is a
 * sample position computed from w alone.
 */
#include "tilecode.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "le.h"

#define NTOK 72                 /* tokens: 0..15, then 2 per bit length 5..32 */
#define NCTX 16
#define PROB_BITS 12
#define PROB_M (1u << PROB_BITS)
#define RANS_L (1u << 23)       /* states live in [RANS_L, 256 * RANS_L) */
#define ZSAT (1u << 24)         /* residual magnitudes saturate here in contexts */

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

/* Token of z, with the count and value of its extra bits. */
static unsigned token_of(uint32_t z, unsigned *nb, uint32_t *extra)
{
	unsigned e;

	if (z < 16) {
		*nb = 0;
		*extra = 0;
		return z;
	}
	e = 31u - (unsigned)__builtin_clz(z);
	*nb = e - 1;
	*extra = z & ((1u << (e - 1)) - 1u);
	return 16u + 2u * (e - 4u) + ((z >> (e - 1)) & 1u);
}

/* ---- predictors and contexts (shared by both directions) ---------------- */

/*
 * Filter 2: the sample halfway between p1 and p2; p0 and p3 lie one step
 * further out on either side when `cubic` (both exist). Catmull-Rom at
 * t = 1/2, floor((9 (p1 + p2) - p0 - p3 + 8) / 16), else the floored mean.
 * Returns the context for spacing d (the half step).
 */
static unsigned hier_pred(int64_t p0, int64_t p1, int64_t p2, int64_t p3, int cubic,
			  uint32_t d, int64_t *pred)
{
	uint64_t cv;
	unsigned b;

	if (cubic) {
		*pred = floor_shift(9 * (p1 + p2) - p0 - p3 + 8, 4);
		cv = (uint64_t)(p0 + p3 - p1 - p2 < 0 ? p1 + p2 - p0 - p3 : p0 + p3 - p1 - p2);
	} else {
		*pred = floor_shift(p1 + p2, 1);
		cv = (uint64_t)(p1 > p2 ? p1 - p2 : p2 - p1);
	}
	b = blen64(cv);
	if (d == 1)
		return b < 10 ? b : 10;
	if (d == 2)
		return 11 + ((b >> 2) < 2 ? (b >> 2) : 2);
	return 14;
}

#define CTX_CORNER 15

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

struct br {
	const uint8_t *p, *end;
	uint64_t acc;
	unsigned n;       /* valid bits in acc */
	size_t over;      /* bytes filled in past the end (as zeros) */
};

static void br_fill(struct br *b)
{
	if (b->end - b->p >= 8) {
		b->acc |= le_get64(b->p) << b->n;
		b->p += (63 - b->n) >> 3;
		b->n |= 56;
		return;
	}
	while (b->n <= 56) {
		if (b->p < b->end)
			b->acc |= (uint64_t)*b->p++ << b->n;
		else
			b->over++;
		b->n += 8;
	}
}

/* nb <= 32 bits. */
static uint32_t br_get(struct br *b, unsigned nb)
{
	uint32_t v;

	if (!nb)
		return 0;
	if (b->n < nb)
		br_fill(b);
	v = (uint32_t)(b->acc & ((UINT64_C(1) << nb) - 1));
	b->acc >>= nb;
	b->n -= nb;
	return v;
}

/* Exp-Golomb 0, at most 13 significant bits (else *bad). */
static uint32_t br_eg0(struct br *b, int *bad)
{
	unsigned m = 0;

	while (!br_get(b, 1)) {
		if (++m > 12) {
			*bad = 1;
			return 0;
		}
	}
	return ((1u << m) | br_get(b, m)) - 1u;
}

/* ---- the encoder ---------------------------------------------------------- */

size_t tilecode_bound(uint32_t w)
{
	size_t n = (size_t)w * w;

	/* per sample at most 30 extra bits + 12 bits of rANS, plus the
	 * tables (16 x (8 + 72 x 25) bits), lengths and states */
	return n * 6 + 4096;
}

/* Scratch layout: z[n] u32 (residuals in coding order), aux[n] u32 (the
 * other filter's residuals, then the rANS output), tok[n] and ctx[n]
 * bytes. */
size_t tilecode_scratch_size(uint32_t w)
{
	size_t n = (size_t)w * w;

	return n * (4 + 4 + 1 + 1) + 64;
}

/* Filter 2 residuals and contexts in coding order; returns the count. */
static size_t hier_forward(const int32_t *h, size_t w, uint32_t *z, uint8_t *ctx)
{
	size_t s = w - 1, d, i, j, n = 0;
	int64_t pred;

#define EMIT(k, pr, c) do { z[n] = zigzag((uint32_t)h[k] - (uint32_t)(pr)); ctx[n++] = (uint8_t)(c); } while (0)
	EMIT(s, h[0], CTX_CORNER);
	EMIT(s * w, h[0], CTX_CORNER);
	EMIT(s * w + s, (int64_t)h[s] + h[s * w] - h[0], CTX_CORNER);
	for (; s >= 2; s /= 2) {
		d = s / 2;
		for (j = d; j < w; j += s)
			for (i = 0; i < w; i += s) {
				int cubic = j >= 3 * d && j + 3 * d < w;
				unsigned c = hier_pred(cubic ? h[(j - 3 * d) * w + i] : 0, h[(j - d) * w + i],
						       h[(j + d) * w + i], cubic ? h[(j + 3 * d) * w + i] : 0,
						       cubic, (uint32_t)d, &pred);

				EMIT(j * w + i, pred, c);
			}
		for (j = 0; j < w; j += d) {
			const int32_t *row = h + j * w;

			for (i = d; i < w; i += s) {
				int cubic = i >= 3 * d && i + 3 * d < w;
				unsigned c = hier_pred(cubic ? row[i - 3 * d] : 0, row[i - d], row[i + d],
						       cubic ? row[i + 3 * d] : 0, cubic, (uint32_t)d, &pred);

				EMIT(j * w + i, pred, c);
			}
		}
	}
#undef EMIT
	return n;
}

/* Filter 3 residuals in raster order from sample 1 (z[k - 1] for sample k). */
static void causal_forward(const int32_t *h, size_t w, uint32_t *z)
{
	size_t i, j;

	for (j = 0; j < w; j++)
		for (i = j ? 0 : 1; i < w; i++)
			z[j * w + i - 1] = zigzag((uint32_t)h[j * w + i] -
						  (uint32_t)causal_pred(h, w, i, j));
}

/* Filter 3 contexts from its residuals (z[k - 1] for sample k). */
static void causal_contexts(const uint32_t *z, size_t w, uint8_t *ctx, uint32_t *rowbuf)
{
	uint32_t *up = rowbuf, *cur = rowbuf + w, *t;
	size_t i, j;

	for (j = 0; j < w; j++) {
		for (i = 0; i < w; i++) {
			size_t k = j * w + i;

			if (k)
				ctx[k - 1] = (uint8_t)causal_ctx(j ? up : NULL, cur, w, i);
			cur[i] = k ? zsat(z[k - 1]) : 0;
		}
		t = up;
		up = cur;
		cur = t;
	}
}

static uint64_t bits_total(const uint32_t *z, size_t n)
{
	uint64_t s = 0;

	for (size_t k = 0; k < n; k++)
		s += blen32(z[k]);
	return s;
}

int tilecode_encode(const int32_t *h, uint32_t w, void *scratch, uint8_t *out,
		    size_t cap, size_t *len, unsigned *filter)
{
	size_t n = (size_t)w * w - 1, k, bits_len, rans_len;
	uint32_t *z = scratch, *aux = z + n + 1;
	uint8_t *tok = (uint8_t *)(aux + n + 1), *ctx = tok + n + 1;
	uint32_t cnt[NCTX][NTOK], freq[NCTX][NTOK], cum[NCTX][NTOK + 1];
	uint64_t tot[NCTX] = { 0 };
	struct bw b;
	uint32_t st[2] = { RANS_L, RANS_L };
	uint8_t *rp, *rend;
	unsigned c, t;

	if (cap < 4)
		return ERR_TOOBIG;
	/* both filters' residuals; the one with fewer significant bits wins,
	 * filter 2 on a tie */
	hier_forward(h, w, z, ctx);
	causal_forward(h, w, aux);
	if (bits_total(z, n) <= bits_total(aux, n)) {
		*filter = TILECODE_FILTER_HIER;
	} else {
		*filter = TILECODE_FILTER_CAUSAL;
		memcpy(z, aux, n * sizeof(*z));
		causal_contexts(z, w, ctx, aux);
	}

	memset(cnt, 0, sizeof(cnt));
	for (k = 0; k < n; k++) {
		unsigned nb;
		uint32_t extra;

		tok[k] = (uint8_t)token_of(z[k], &nb, &extra);
		cnt[ctx[k]][tok[k]]++;
		tot[ctx[k]]++;
	}

	/* bit stream: tables, then the extra bits in coding order */
	b.p = out + 4;
	b.end = out + cap;
	b.acc = 0;
	b.n = 0;
	b.over = 0;
	for (c = 0; c < NCTX; c++) {
		unsigned last = 0;

		if (!tot[c]) {
			bw_put(&b, 0, 1);
			continue;
		}
		normalize(cnt[c], tot[c], freq[c]);
		for (t = 0; t < NTOK; t++)
			if (freq[c][t])
				last = t;
		bw_put(&b, 1, 1);
		bw_put(&b, last, 7);
		cum[c][0] = 0;
		for (t = 0; t <= last; t++)
			bw_eg0(&b, freq[c][t]);
		for (t = 0; t < NTOK; t++)
			cum[c][t + 1] = cum[c][t] + freq[c][t];
	}
	for (k = 0; k < n; k++) {
		unsigned nb;
		uint32_t extra;

		token_of(z[k], &nb, &extra);
		bw_put(&b, extra, nb);
	}
	bw_flush(&b);
	if (b.over)
		return ERR_TOOBIG;
	bits_len = (size_t)(b.p - (out + 4));
	le_put32(out, (uint32_t)bits_len);

	/* rANS, backwards into aux (as bytes), then copied after the bits */
	rend = (uint8_t *)aux + (n + 1) * sizeof(*aux);
	rp = rend;
	for (k = n; k-- > 0;) {
		uint32_t *x = &st[k & 1];
		uint32_t f = freq[ctx[k]][tok[k]];
		uint32_t xmax = ((RANS_L >> PROB_BITS) << 8) * f;

		while (*x >= xmax) {
			*--rp = (uint8_t)*x;
			*x >>= 8;
		}
		*x = ((*x / f) << PROB_BITS) + (*x % f) + cum[ctx[k]][tok[k]];
	}
	rp -= 8;
	le_put32(rp, st[0]);
	le_put32(rp + 4, st[1]);
	rans_len = (size_t)(rend - rp);
	if (cap - 4 - bits_len < rans_len)
		return ERR_TOOBIG;
	memcpy(out + 4 + bits_len, rp, rans_len);
	*len = 4 + bits_len + rans_len;
	return 0;
}

/* ---- the decoder ----------------------------------------------------------- */

struct dec {
	uint8_t sym[NCTX][PROB_M];
	uint16_t freq[NCTX][NTOK];
	uint16_t cum[NCTX][NTOK];
	uint32_t cnt[NCTX][NTOK];
	uint8_t used[NCTX];
	struct br bits;
	const uint8_t *rp, *rend;
	size_t rover;
	uint32_t st[2];
	uint64_t total;   /* significant bits of the decoded z */
};

/* Read the tables; unused contexts decode token 0 with certainty, so that
 * a sample landing there decodes (and is caught by the count check). */
static int read_tables(struct dec *d)
{
	unsigned c, t;
	int bad = 0;

	for (c = 0; c < NCTX; c++) {
		uint32_t sum = 0, last;

		d->used[c] = (uint8_t)br_get(&d->bits, 1);
		memset(d->freq[c], 0, sizeof(d->freq[c]));
		if (!d->used[c]) {
			d->freq[c][0] = PROB_M;
		} else {
			last = br_get(&d->bits, 7);
			if (last >= NTOK)
				return ERR_CORRUPT;
			for (t = 0; t <= last; t++) {
				uint32_t f = br_eg0(&d->bits, &bad);

				if (bad || f > PROB_M)
					return ERR_CORRUPT;
				d->freq[c][t] = (uint16_t)f;
				sum += f;
			}
			if (sum != PROB_M || !d->freq[c][last])
				return ERR_CORRUPT;
		}
		sum = 0;
		for (t = 0; t < NTOK; t++) {
			d->cum[c][t] = (uint16_t)sum;
			memset(d->sym[c] + sum, (int)t, d->freq[c][t]);
			sum += d->freq[c][t];
		}
	}
	return 0;
}

static uint8_t rans_byte(struct dec *d)
{
	if (d->rp < d->rend)
		return *d->rp++;
	d->rover++;
	return 0;
}

/* Decode the next z in context c; n is its index in coding order. */
static inline uint32_t decode_z(struct dec *d, unsigned c, size_t n)
{
	uint32_t *x = &d->st[n & 1];
	uint32_t slot = *x & (PROB_M - 1);
	unsigned t = d->sym[c][slot];
	uint32_t z;

	*x = d->freq[c][t] * (*x >> PROB_BITS) + slot - d->cum[c][t];
	while (*x < RANS_L)
		*x = *x << 8 | rans_byte(d);
	d->cnt[c][t]++;
	if (t < 16) {
		d->total += blen32(t);
		return t;
	}
	{
		unsigned e = ((t - 16) >> 1) + 4;

		z = (2u | (t & 1u)) << (e - 1);
		d->total += e + 1;
		return z | br_get(&d->bits, e - 1);
	}
}

static void hier_inverse(struct dec *d, int32_t *h, size_t w)
{
	size_t s = w - 1, dd, i, j, n = 0;
	uint32_t *hu = (uint32_t *)h;
	int64_t pred;

#define PUT(k, pr, c) do { uint32_t z_ = decode_z(d, (c), n++); hu[k] = (uint32_t)(pr) + unzigzag(z_); } while (0)
	PUT(s, h[0], CTX_CORNER);
	PUT(s * w, h[0], CTX_CORNER);
	PUT(s * w + s, (int64_t)h[s] + h[s * w] - h[0], CTX_CORNER);
	for (; s >= 2; s /= 2) {
		dd = s / 2;
		for (j = dd; j < w; j += s)
			for (i = 0; i < w; i += s) {
				int cubic = j >= 3 * dd && j + 3 * dd < w;
				unsigned c = hier_pred(cubic ? h[(j - 3 * dd) * w + i] : 0,
						       h[(j - dd) * w + i], h[(j + dd) * w + i],
						       cubic ? h[(j + 3 * dd) * w + i] : 0, cubic,
						       (uint32_t)dd, &pred);

				PUT(j * w + i, pred, c);
			}
		for (j = 0; j < w; j += dd) {
			int32_t *row = h + j * w;

			for (i = dd; i < w; i += s) {
				int cubic = i >= 3 * dd && i + 3 * dd < w;
				unsigned c = hier_pred(cubic ? row[i - 3 * dd] : 0, row[i - dd], row[i + dd],
						       cubic ? row[i + 3 * dd] : 0, cubic, (uint32_t)dd,
						       &pred);

				PUT(j * w + i, pred, c);
			}
		}
	}
#undef PUT
}

static void causal_inverse(struct dec *d, int32_t *h, size_t w, uint32_t *rowbuf)
{
	uint32_t *up = rowbuf, *cur = rowbuf + w, *t;
	uint32_t *hu = (uint32_t *)h;
	size_t i, j;

	cur[0] = 0;
	for (j = 0; j < w; j++) {
		for (i = j ? 0 : 1; i < w; i++) {
			size_t k = j * w + i;
			unsigned c = causal_ctx(j ? up : NULL, cur, w, i);
			uint32_t z = decode_z(d, c, k - 1);

			hu[k] = (uint32_t)causal_pred(h, w, i, j) + unzigzag(z);
			cur[i] = zsat(z);
		}
		t = up;
		up = cur;
		cur = t;
	}
}

/* The counts must normalise to the tables sent. */
static int tables_match(const struct dec *d)
{
	uint32_t f[NTOK];

	for (unsigned c = 0; c < NCTX; c++) {
		uint64_t tot = 0;

		for (unsigned t = 0; t < NTOK; t++)
			tot += d->cnt[c][t];
		if (!tot) {
			if (d->used[c])
				return 0;
			continue;
		}
		if (!d->used[c])
			return 0;
		normalize(d->cnt[c], tot, f);
		for (unsigned t = 0; t < NTOK; t++)
			if (f[t] != d->freq[c][t])
				return 0;
	}
	return 1;
}

/* Significant bits of the other filter's residuals over decoded heights. */
static uint64_t other_total(const int32_t *h, size_t w, unsigned filter, void *buf)
{
	size_t n = w * w - 1;

	if (filter == TILECODE_FILTER_HIER) {
		causal_forward(h, w, buf);
	} else {
		hier_forward(h, w, buf, (uint8_t *)((uint32_t *)buf + n + 1));
	}
	return bits_total(buf, n);
}

int tilecode_decode(const uint8_t *in, size_t len, uint32_t w, unsigned filter,
		    uint32_t offset, int32_t *h)
{
	size_t n = (size_t)w * w, bits_len;
	struct dec *d;
	void *buf;
	int rc;

	if (filter != TILECODE_FILTER_HIER && filter != TILECODE_FILTER_CAUSAL)
		return ERR_CORRUPT;
	if (len < 4)
		return ERR_CORRUPT;
	bits_len = le_get32(in);
	if (bits_len > len - 4 || len - 4 - bits_len < 8)
		return ERR_CORRUPT;
	d = malloc(sizeof(*d));
	buf = malloc(n * 5 + 64);
	if (!d || !buf) {
		free(d);
		free(buf);
		return ERR_NOMEM;
	}
	memset(d->cnt, 0, sizeof(d->cnt));
	d->bits.p = in + 4;
	d->bits.end = in + 4 + bits_len;
	d->bits.acc = 0;
	d->bits.n = 0;
	d->bits.over = 0;
	d->rp = in + 4 + bits_len + 8;
	d->rend = in + len;
	d->rover = 0;
	d->st[0] = le_get32(in + 4 + bits_len);
	d->st[1] = le_get32(in + 4 + bits_len + 4);
	d->total = 0;
	rc = read_tables(d);
	if (!rc && (d->st[0] < RANS_L || d->st[0] >= RANS_L << 8 ||
		    d->st[1] < RANS_L || d->st[1] >= RANS_L << 8))
		rc = ERR_CORRUPT;
	if (rc)
		goto out;
	h[0] = (int32_t)offset;
	if (filter == TILECODE_FILTER_HIER)
		hier_inverse(d, h, w);
	else
		causal_inverse(d, h, w, buf);
	rc = ERR_CORRUPT;
	/* both streams used up exactly: no overrun, no whole byte left over,
	 * zero padding bits, final rANS states back at RANS_L */
	if (d->rover || d->rp != d->rend)
		goto out;
	{
		/* unread bits of the stream: the low `left` bits of acc */
		int64_t left = (int64_t)(d->bits.end - d->bits.p) * 8 + d->bits.n -
			       (int64_t)d->bits.over * 8;

		if (left < 0 || left >= 8 || (d->bits.acc & ((UINT64_C(1) << left) - 1)))
			goto out;
	}
	if (d->st[0] != RANS_L || d->st[1] != RANS_L || !tables_match(d))
		goto out;
	{
		uint64_t other = other_total(h, w, filter, buf);

		if (filter == TILECODE_FILTER_HIER ? d->total > other : other <= d->total)
			goto out;
	}
	rc = 0;
out:
	free(d);
	free(buf);
	return rc;
}
