/*
 * jsonv.h - strict JSON validation: is a buffer exactly one JSON text?
 *
 * cJSON builds the trees this project reads, and it is lenient where a
 * server taking edits must not be: it stops after the first value and
 * ignores what follows ("{...} garbage" parses), skips a UTF-8 byte order
 * mark and every byte below 0x21 as white space, copies invalid UTF-8 and
 * raw control characters out of strings, and reads numbers such as 01, 1.
 * or -.5 through strtod. jsonv_check() runs first and refuses all of that,
 * so that cJSON only ever sees RFC 8259 JSON: white space (space, tab, LF,
 * CR), one value, white space, the end of the buffer.
 *
 * Nothing is allocated and nothing is built; the check is one pass with a
 * depth-bounded recursion. The byte order mark is refused (RFC 8259
 * section 8.1 forbids sending one and lets a parser refuse it; the edit
 * API does, docs/edits.md). Pure code.
 *
 *   size_t at; const char *why;
 *   if (jsonv_check(body, len, &at, &why)) -> 400 "at offset <at>: <why>"
 */
#ifndef JSONV_H
#define JSONV_H

#include <stddef.h>

#define JSONV_MAX_DEPTH 64 /* arrays and objects inside each other */

/*
 * 0 when buf[0..len) is one JSON text (RFC 8259, with a value of any type
 * at the top) and nothing more; else ERR_PARSE with *at the offset of the
 * first byte that is not allowed (len at an early end) and *why a static
 * lowercase reason, e.g. "bytes after the JSON value". Strings must be
 * valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF)
 * with no control character below 0x20 and only the escapes of the RFC;
 * a \u escape of a surrogate must be a high one followed by a low one.
 */
int jsonv_check(const char *buf, size_t len, size_t *at, const char **why);

/*
 * The length (1..4) of the valid UTF-8 character that starts s[0..n), or
 * 0 when none does (a stray continuation byte, an overlong form, a
 * surrogate, a value above U+10FFFF, a sequence cut by n).
 */
size_t jsonv_utf8_char(const unsigned char *s, size_t n);

#endif
