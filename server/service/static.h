/*
 * static.h - the map viewer's files, compiled into the binary.
 *
 * Every file in server/assets/ is embedded by tools/embed.c as the array
 * assets[] (common/embed.h). This module indexes them for service.c:
 *
 *   GET|HEAD /              index.html
 *   GET|HEAD /assets/NAME   the file NAME (exact base name, no decoding:
 *                           asset names are plain [A-Za-z0-9._-])
 *
 * Each file comes with its Content-Type (by extension), a strong ETag (the
 * 16 lowercase hex digits of XXH3-64 of its bytes, in quotes, like a
 * tile's), a Last-Modified date (the file's modification time when it was
 * compiled in, common/embed.h, but never later than static_create()'s
 * clock, as RFC 9110 8.8.2.1 asks) and two prebuilt response heads, 200
 * and 304, so an answer is one write of static bytes with no allocation. Files are sent with
 * "Cache-Control: no-cache" (the browser keeps them and revalidates with
 * If-None-Match, so a new server build is picked up at once) and
 * "X-Content-Type-Options: nosniff"; HTML pages also get a
 * Content-Security-Policy that allows only this origin (no external
 * scripts, styles, images or connections) and workers from it.
 *
 * Everything is built once by static_create() and read-only after, so the
 * lookups are safe from any thread.
 */
#ifndef STATIC_H
#define STATIC_H

#include <stddef.h>

struct embedded_file;

/* One servable file. */
struct static_file {
	const char *name;     /* base name, "app.js" */
	const char *type;     /* Content-Type */
	const char *data;     /* the bytes (embedded, not copied) */
	size_t len;
	char etag[20];        /* "\"<16 hex>\"" */
	long long mtime;      /* Last-Modified, seconds since the epoch */
	const char *head;     /* "HTTP/1.1 200 OK\r\n" ... every header line */
	size_t head_len;
	const char *head_304; /* the same for 304 (no Content-Type/Length) */
	size_t head_304_len;
};

struct static_files;

/*
 * Index files (an array ending with a NULL name; NULL: the embedded
 * assets[]). extra is header lines added to every head, each ending in
 * "\r\n" (service.c passes its CORS line), or NULL. Returns 0, ERR_INVAL
 * (a name twice, or a head too long) or ERR_NOMEM.
 */
int static_create(const struct embedded_file *files, const char *extra,
		  struct static_files **out);

/* NULL does nothing. */
void static_destroy(struct static_files *sf);

/*
 * The file for a raw request path (up to '?', not percent-decoded): "/"
 * gives index.html, "/assets/NAME" gives NAME. NULL for anything else, or
 * when there is no such file.
 */
const struct static_file *static_find(const struct static_files *sf,
				      const char *path, size_t len);

/* The file called name (len bytes), or NULL. */
const struct static_file *static_get(const struct static_files *sf,
				     const char *name, size_t len);

/* Content-Type for a file name by its extension (case-insensitive);
 * "application/octet-stream" for an unknown one. */
const char *static_content_type(const char *name);

/* Write the strong ETag of data ("\"<16 hex of XXH3-64>\"", 18 characters
 * and a NUL) into out. */
void static_etag(const void *data, size_t len, char out[20]);

/* Number of files indexed. */
size_t static_count(const struct static_files *sf);

#endif
