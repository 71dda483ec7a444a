/*
 * files.h - the files the server opens besides the edit log: preset files,
 * tiles written by `generate`, key files, the access log. Plain POSIX I/O,
 * no state: any thread may call them.
 */
#ifndef FILES_H
#define FILES_H

#include <stddef.h>
#include <stdio.h>

/* Read path whole (at most max bytes, else ERR_TOOBIG) into a new buffer
 * with a NUL after the len bytes; the caller frees *out. ERR_IO (errno
 * says why) or ERR_NOMEM. */
int files_read(const char *path, size_t max, char **out, size_t *len);

/* Write len bytes to path (created or truncated), or to standard output
 * when path is NULL. 0 or ERR_IO (errno says why). */
int files_write(const char *path, const void *buf, size_t len);

/* Open path for appending lines, line-buffered; "-" is standard output
 * (made line-buffered: call before anything is written to it). NULL on
 * failure (errno says why). */
FILE *files_open_append(const char *path);

/* Point f (opened by files_open_append()) at path anew, after logrotate
 * moved the file: buffered lines go to the old file first. 0 or ERR_IO. */
int files_reopen_append(FILE *f, const char *path);

#endif
