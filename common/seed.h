/*
 * seed.h - world seeds: decimal numbers or short text names.
 *
 * A seed is an unsigned 64-bit integer. Clients may also name a world with
 * text: a string of 1..64 characters from [A-Za-z0-9_-] that is not all
 * digits is hashed with XXH3-64 (seed 0) over its bytes. So "42" is 42 and
 * "my-world" is XXH3_64bits("my-world", 8).
 */
#ifndef SEED_H
#define SEED_H

#include <stddef.h>
#include <stdint.h>

#define SEED_TEXT_MAX 64

/*
 * Parse s (len bytes, not necessarily NUL-terminated) into *out.
 * Returns 0, ERR_RANGE for a digits-only value above 2^64-1, or ERR_INVAL
 * for an empty, too long or badly formed seed.
 */
int seed_parse(const char *s, size_t len, uint64_t *out);

#endif
