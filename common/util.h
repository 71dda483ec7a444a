/*
 * util.h - the few macros every module shares: container_of() to get from
 * an embedded member back to the struct around it (libuv handles, cache
 * waiters, per-request state), ARRAY_LEN() and the ull type for printf's
 * %llu. No functions, no state.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stddef.h>

/* The struct of type whose member is *ptr. */
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Elements of a true array (not a pointer). */
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* For printf("%llu", (ull)v) of uint64_t values. */
typedef unsigned long long ull;

#endif
