/*
 * xxhash.c - the implementation of Debian's xxhash.h (libxxhash-dev) as one
 * unit of the WebAssembly build, where no libxxhash.so can be linked: the
 * same header the native build's library was built from, so the same
 * XXH3-64 the native core computes.
 */
#define XXH_IMPLEMENTATION
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
