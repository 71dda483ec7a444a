/*
 * static.c - the viewer's embedded files with their types, ETags and
 * prebuilt response heads (see static.h).
 */
#include "static.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <xxhash.h>

#include "api/request.h"
#include "embed.h"
#include "err.h"
#include "http/http.h"

/* Made by tools/embed.c from server/assets/ (Makefile: $(BUILD)/gen/assets.c). */
extern const struct embedded_file assets[];

#define INDEX "index.html"
#define ASSET_PREFIX "/assets/"

/* Only this origin: the page loads nothing from elsewhere. */
#define CSP "Content-Security-Policy: default-src 'none'; script-src 'self'; " \
	"style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; " \
	"worker-src 'self'; base-uri 'none'; form-action 'none'; " \
	"frame-ancestors 'none'\r\n"

struct static_files {
	size_t n;
	struct static_file *files;
	char *heads; /* every head, back to back */
};

static const struct {
	const char *ext;
	const char *type;
} types[] = {
	{ "html", "text/html; charset=utf-8" },
	{ "htm", "text/html; charset=utf-8" },
	{ "js", "text/javascript; charset=utf-8" },
	{ "mjs", "text/javascript; charset=utf-8" },
	{ "css", "text/css; charset=utf-8" },
	{ "json", "application/json" },
	{ "map", "application/json" },
	{ "svg", "image/svg+xml" },
	{ "png", "image/png" },
	{ "jpg", "image/jpeg" },
	{ "jpeg", "image/jpeg" },
	{ "gif", "image/gif" },
	{ "webp", "image/webp" },
	{ "ico", "image/x-icon" },
	{ "wasm", "application/wasm" },
	{ "txt", "text/plain; charset=utf-8" },
	{ "md", "text/markdown; charset=utf-8" },
	{ "woff2", "font/woff2" },
};

const char *static_content_type(const char *name)
{
	const char *dot = name ? strrchr(name, '.') : NULL;
	size_t i;

	if (dot)
		for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (!strcasecmp(dot + 1, types[i].ext))
				return types[i].type;
	return "application/octet-stream";
}

void static_etag(const void *data, size_t len, char out[20])
{
	snprintf(out, 20, "\"%016llx\"",
		 (unsigned long long)XXH3_64bits(data, len));
}

static int is_html(const char *type)
{
	return !strncmp(type, "text/html", 9);
}

/* Format f's two heads at buf (cap bytes); returns the bytes used or -1. */
static long format_heads(struct static_file *f, const char *extra, char *buf,
			 size_t cap)
{
	const char *more = is_html(f->type) ? CSP "Referrer-Policy: no-referrer\r\n" : "";
	char date[30];
	int n, m;

	req_http_date(date, f->mtime);
	n = snprintf(buf, cap,
		     "%sContent-Type: %s\r\nContent-Length: %zu\r\nETag: %s\r\n"
		     "Last-Modified: %s\r\n"
		     "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n%s%s",
		     http_status_line(200), f->type, f->len, f->etag, date, more,
		     extra ? extra : "");
	if (n < 0 || (size_t)n >= cap)
		return -1;
	m = snprintf(buf + n, cap - (size_t)n,
		     "%sETag: %s\r\nLast-Modified: %s\r\nCache-Control: no-cache\r\n%s",
		     http_status_line(304), f->etag, date, extra ? extra : "");
	if (m < 0 || (size_t)m >= cap - (size_t)n)
		return -1;
	f->head = buf;
	f->head_len = (size_t)n;
	f->head_304 = buf + n;
	f->head_304_len = (size_t)m;
	return (long)n + m;
}

int static_create(const struct embedded_file *files, const char *extra,
		  struct static_files **out)
{
	/* Room for both heads of one file: the CSP and extra lines dominate. */
	const size_t per_file = 1024 + (extra ? 2 * strlen(extra) : 0);
	struct static_files *sf;
	size_t i, j, used = 0;
	long long now = (long long)time(NULL);

	if (!out)
		return ERR_INVAL;
	*out = NULL;
	if (!files)
		files = assets;
	sf = calloc(1, sizeof(*sf));
	if (!sf)
		return ERR_NOMEM;
	while (files[sf->n].name)
		sf->n++;
	sf->files = calloc(sf->n ? sf->n : 1, sizeof(*sf->files));
	sf->heads = malloc(sf->n ? sf->n * per_file : 1);
	if (!sf->files || !sf->heads) {
		static_destroy(sf);
		return ERR_NOMEM;
	}
	for (i = 0; i < sf->n; i++) {
		struct static_file *f = &sf->files[i];
		long n;

		for (j = 0; j < i; j++)
			if (!strcmp(sf->files[j].name, files[i].name)) {
				static_destroy(sf);
				return ERR_INVAL;
			}
		f->name = files[i].name;
		f->data = files[i].data;
		f->len = files[i].len;
		f->type = static_content_type(f->name);
		f->mtime = files[i].mtime < now ? files[i].mtime : now;
		static_etag(f->data, f->len, f->etag);
		n = format_heads(f, extra, sf->heads + used, per_file);
		if (n < 0) {
			static_destroy(sf);
			return ERR_INVAL;
		}
		used += (size_t)n;
	}
	*out = sf;
	return 0;
}

void static_destroy(struct static_files *sf)
{
	if (!sf)
		return;
	free(sf->files);
	free(sf->heads);
	free(sf);
}

const struct static_file *static_get(const struct static_files *sf,
				     const char *name, size_t len)
{
	size_t i;

	if (!sf || !name)
		return NULL;
	for (i = 0; i < sf->n; i++)
		if (strlen(sf->files[i].name) == len &&
		    !memcmp(sf->files[i].name, name, len))
			return &sf->files[i];
	return NULL;
}

const struct static_file *static_find(const struct static_files *sf,
				      const char *path, size_t len)
{
	const size_t plen = sizeof(ASSET_PREFIX) - 1;

	if (!path)
		return NULL;
	if (len == 1 && path[0] == '/')
		return static_get(sf, INDEX, sizeof(INDEX) - 1);
	if (len > plen && !memcmp(path, ASSET_PREFIX, plen) &&
	    !memchr(path + plen, '/', len - plen))
		return static_get(sf, path + plen, len - plen);
	return NULL;
}

size_t static_count(const struct static_files *sf)
{
	return sf ? sf->n : 0;
}
