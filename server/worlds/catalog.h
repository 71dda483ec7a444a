/*
 * catalog.h - the generator presets this server offers.
 *
 * The built-in presets (the JSON files of presets/, compiled in) plus, with
 * --presets DIR, every DIR/NAME.json, named NAME; a file replaces a built-in
 * preset of the same name. This is the only place that reads preset files.
 * Once loaded a catalog is immutable, so worker threads may use its
 * presets freely. Sorted by name.
 */
#ifndef CATALOG_H
#define CATALOG_H

#include <stddef.h>

struct catalog;
struct preset;

/* Largest preset file read, in bytes. */
#define CATALOG_FILE_MAX (1 << 20)

/* The module's option (catalog_options: --presets). */
struct catalog_config {
	const char *presets; /* a folder of NAME.json presets; NULL or "": none */
};

struct option;
/* The module's option table (options.h); returns its length. */
size_t catalog_options(const struct option **out);

/*
 * Load the built-in presets and those of dir (NULL: none). On failure
 * returns ERR_IO / ERR_PARSE / ERR_INVAL / ERR_RANGE / ERR_TOOBIG / ERR_NOMEM
 * and writes a message naming the file into err (errlen bytes).
 */
int catalog_load(const char *dir, struct catalog **out, char *err,
		 size_t errlen);

/* NULL does nothing. */
void catalog_destroy(struct catalog *c);

size_t catalog_count(const struct catalog *c);

/* The newest modification time of the presets' sources (the built-in files
 * when compiled in, common/embed.h, and the files of dir when loaded),
 * seconds since the epoch: /v1/presets's Last-Modified. */
long long catalog_mtime(const struct catalog *c);

/* The i-th preset (i < catalog_count), owned by the catalog. */
const struct preset *catalog_at(const struct catalog *c, size_t i);

/* Index of the preset named name (len bytes), or -1. */
int catalog_find(const struct catalog *c, const char *name, size_t len);

#endif
