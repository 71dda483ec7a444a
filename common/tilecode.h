/*
 * tilecode.h - the entropy-coded heights of tile format versions 3 and 4
 * (docs/tile-format.md, "Coded payload"): filter 2 ("hier", hierarchical
 * cubic interpolation) and filter 3 ("causal", a causal 2D predictor), each
 * residual coded as a token by rANS with per-tile frequency tables in 16
 * contexts plus raw extra bits. tile.c frames it (header, layers,
 * checksum); this module only maps side x side heights to bytes and back.
 * Pure code: no I/O, no globals.
 */
#ifndef TILECODE_H
#define TILECODE_H

#include <stddef.h>
#include <stdint.h>

#define TILECODE_FILTER_HIER   2
#define TILECODE_FILTER_CAUSAL 3
#define TILECODE_MAX_STATES    8    /* interleaved rANS states: 2 (versions 3
					and 4) or 8 (versions 5 and 6) */
#define TILECODE_TANS     0x200u    /* or'ed into 8 states: tANS, versions 7
					and 8 (else rANS) */
#define TILECODE_WIDE     0x100u    /* or'ed into states: the 64-bit loops
					whatever the heights, for tests that
					compare them with the 32-bit ones */

/* The most bytes tilecode_encode() writes for side w (w >= 2). */
size_t tilecode_bound(uint32_t w);

/* Bytes of scratch tilecode_encode() needs for side w (aligned for
 * uint32_t). */
size_t tilecode_scratch_size(uint32_t w);

/*
 * Code the w x w heights h (h[0] is the tile's offset and is not coded)
 * into out (cap bytes) with `states` interleaved rANS states (2 or 8):
 * stores the byte count in *len and the filter it chose (the one the
 * format's rule picks) in *filter. Returns 0, ERR_TOOBIG when cap is
 * short, ERR_INVAL for another state count. The bytes are a pure function
 * of h, w and states.
 */
int tilecode_encode(const int32_t *h, uint32_t w, unsigned states, void *scratch,
		    uint8_t *out, size_t cap, size_t *len, unsigned *filter);

/*
 * Decode len bytes of filter `filter`, coded with `states` rANS states,
 * for side w into h (w * w heights), with h[0] = offset. Returns 0,
 * ERR_CORRUPT for anything but the one canonical coding of some heights
 * (bad tables, a stream that is cut short or has bytes left over, the
 * other filter being the one the rule picks), ERR_INVAL for a state count
 * other than 2 or 8, or ERR_NOMEM. Never reads outside in[0..len) nor
 * writes outside h.
 */
int tilecode_decode(const uint8_t *in, size_t len, uint32_t w, unsigned states,
		    unsigned filter, uint32_t offset, int32_t *h);

#endif
