/*
 * err.h - the error codes of the terrain core.
 *
 * Functions that can fail return 0 or a negative ERR_* code; err_str()
 * names it. The server maps codes to HTTP statuses in one table (routes.c).
 */
#ifndef ERR_H
#define ERR_H

#define ERR_MAP(XX)                                        \
	XX(INVAL,    -1, "invalid argument")               \
	XX(NOMEM,    -2, "out of memory")                  \
	XX(RANGE,    -3, "value out of range")             \
	XX(TRUNC,    -4, "truncated input")                \
	XX(MAGIC,    -5, "bad magic")                      \
	XX(VERSION,  -6, "unsupported format version")     \
	XX(CORRUPT,  -7, "corrupt data")                   \
	XX(CHECKSUM, -8, "checksum mismatch")              \
	XX(TOOBIG,   -9, "input too large")                \
	XX(NOTFOUND, -10, "not found")                     \
	XX(PARSE,    -11, "parse error")                   \
	XX(ZSTD,     -12, "zstd error")                    \
	XX(IO,       -13, "i/o error")                     \
	XX(BUSY,     -14, "resource busy")                  \
	XX(AGAIN,    -15, "temporarily unavailable")        \
	XX(CONFLICT, -16, "conflict")                       \
	XX(ZLIB,     -17, "zlib error")                     \
	XX(UNKNOWN,  -18, "outcome unknown")                \
	XX(EXISTS,   -19, "already done")

enum {
	ERR_OK = 0,
#define XX(name, code, text) ERR_##name = (code),
	ERR_MAP(XX)
#undef XX
};

/* Static text for an ERR_* code ("ok" for 0, "unknown error" otherwise). */
const char *err_str(int code);

#endif
