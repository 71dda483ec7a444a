/*
 * embed.h - files compiled into the binary by tools/embed.c.
 *
 * The built-in generator presets (the JSON files in presets/) and the
 * viewer's assets (the files in server/assets/) become arrays of these, ending with a NULL name.
 */
#ifndef EMBED_H
#define EMBED_H

#include <stddef.h>

struct embedded_file {
	const char *name;  /* base name; ".json" dropped for presets */
	const char *data;  /* file bytes, NUL-terminated */
	size_t len;        /* bytes, without the NUL */
	long long mtime;   /* the file's modification time at build time,
			      seconds since the epoch (clamped to
			      SOURCE_DATE_EPOCH when set): Last-Modified */
};

/* The presets in presets/, sorted by name; terminated by { NULL }. */
extern const struct embedded_file builtin_presets[];

#endif
