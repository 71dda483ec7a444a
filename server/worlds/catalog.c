/*
 * catalog.c - built-in and directory presets (see catalog.h).
 */
#include "catalog.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/files.h"
#include "embed.h"
#include "base/options.h"
#include "err.h"
#include "util.h"
#include "preset.h"

struct catalog {
	struct preset **v; /* preset_destroy_all() frees it */
	size_t n;
	long long mtime;   /* the newest source's modification time */
};

static int by_name(const void *a, const void *b)
{
	return strcmp(preset_name(*(struct preset *const *)a),
		      preset_name(*(struct preset *const *)b));
}

static int is_json(const char *name)
{
	size_t n = strlen(name);

	return n > 5 && name[0] != '.' && !strcmp(name + n - 5, ".json");
}

static int json_filter(const struct dirent *d)
{
	return is_json(d->d_name);
}

/* Add p, replacing a preset of the same name. */
static int add(struct catalog *c, struct preset *p)
{
	struct preset **v;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (!strcmp(preset_name(c->v[i]), preset_name(p))) {
			preset_destroy(c->v[i]);
			c->v[i] = p;
			return 0;
		}
	}
	v = realloc(c->v, (c->n + 1) * sizeof(*v));
	if (!v) {
		preset_destroy(p);
		return ERR_NOMEM;
	}
	c->v = v;
	c->v[c->n++] = p;
	return 0;
}

static int load_file(struct catalog *c, const char *dir, const char *file,
		     char *err, size_t errlen)
{
	char path[4096], name[256], msg[256] = "";
	struct preset *p;
	struct stat st;
	size_t len, nlen = strlen(file) - 5;
	char *json;
	int rc;

	if (nlen >= sizeof(name) ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path)) {
		snprintf(err, errlen, "%s/%s: name too long", dir, file);
		return ERR_INVAL;
	}
	memcpy(name, file, nlen);
	name[nlen] = '\0';
	if (stat(path, &st) == 0 && (long long)st.st_mtime > c->mtime)
		c->mtime = (long long)st.st_mtime;
	rc = files_read(path, CATALOG_FILE_MAX, &json, &len);
	if (rc) {
		snprintf(err, errlen, "%s: %s", path,
			 rc == ERR_IO ? strerror(errno) : err_str(rc));
		return rc;
	}
	rc = preset_parse(name, json, len, &p, msg, sizeof(msg));
	free(json);
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, msg[0] ? msg : err_str(rc));
		return rc;
	}
	return add(c, p);
}

static int load_dir(struct catalog *c, const char *dir, char *err, size_t errlen)
{
	struct dirent **list;
	int n, i, rc = 0;

	n = scandir(dir, &list, json_filter, alphasort);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return ERR_IO;
	}
	for (i = 0; i < n; i++) {
		if (!rc)
			rc = load_file(c, dir, list[i]->d_name, err, errlen);
		free(list[i]);
	}
	free(list);
	return rc;
}

static const struct option options[] = {
	OPTION(struct catalog_config, "presets", "TERRAIN_PRESETS", "DIR", "", OPTION_STR, presets,
	       0, 0, "extra generator presets: every DIR/NAME.json becomes ?gen=NAME"),
};
size_t catalog_options(const struct option **out)
{
	*out = options;
	return ARRAY_LEN(options);
}

int catalog_load(const char *dir, struct catalog **out, char *err,
		 size_t errlen)
{
	const struct embedded_file *f;
	struct catalog *c;
	int rc;

	if (!out || !err || !errlen)
		return ERR_INVAL;
	err[0] = '\0';
	c = calloc(1, sizeof(*c));
	if (!c)
		return ERR_NOMEM;
	rc = preset_load_builtin(&c->v, &c->n);
	if (rc) {
		snprintf(err, errlen, "built-in presets: %s", err_str(rc));
		free(c);
		return rc;
	}
	for (f = builtin_presets; f->name; f++)
		if (f->mtime > c->mtime)
			c->mtime = f->mtime;
	if (dir && (rc = load_dir(c, dir, err, errlen)) != 0) {
		catalog_destroy(c);
		return rc;
	}
	qsort(c->v, c->n, sizeof(*c->v), by_name);
	*out = c;
	return 0;
}

void catalog_destroy(struct catalog *c)
{
	if (!c)
		return;
	preset_destroy_all(c->v, c->n);
	free(c);
}

long long catalog_mtime(const struct catalog *c)
{
	return c->mtime;
}

size_t catalog_count(const struct catalog *c)
{
	return c->n;
}

const struct preset *catalog_at(const struct catalog *c, size_t i)
{
	return c->v[i];
}

int catalog_find(const struct catalog *c, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		const char *pn = preset_name(c->v[i]);

		if (strlen(pn) == len && !memcmp(pn, name, len))
			return (int)i;
	}
	return -1;
}
