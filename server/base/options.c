/*
 * options.c - the modules' option tables, read and printed (options.h).
 */
#include "options.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Parse v into o's field of conf. 0, or -1 after printing why. */
static int set(const char *prog, const struct option *o, void *conf, const char *v,
	       const char *source)
{
	char *field = (char *)conf + o->offset, *end;
	unsigned long long u;
	double d;

	switch (o->type) {
	case OPTION_STR:
		if (o->valid && v[0] && !o->valid(v))
			break;
		*(const char **)(void *)field = v;
		return 0;
	case OPTION_UINT:
	case OPTION_MIB:
		errno = 0;
		u = strtoull(v, &end, 10);
		if (!*v || *end || errno || v[0] == '-' || u < o->min || u > o->max)
			break;
		if (o->type == OPTION_UINT)
			*(unsigned *)(void *)field = (unsigned)u;
		else
			*(size_t *)(void *)field = (size_t)u << 20;
		return 0;
	case OPTION_MS:
		errno = 0;
		d = strtod(v, &end);
		if (!*v || *end || errno || !(d >= 0 && d <= 1e6))
			break;
		*(uint64_t *)(void *)field = (uint64_t)(d * 1000 + 0.5);
		return 0;
	}
	fprintf(stderr, "%s: %s: bad value \"%s\" for --%s\n", prog, source, v, o->name);
	return -1;
}

/* Whether def is a value of o (else it only names the module's default). */
static int parsable(const struct option *o)
{
	if (o->type == OPTION_STR)
		return strcmp(o->def, "hostname") != 0;
	return o->def[0] >= '0' && o->def[0] <= '9';
}

static const struct option *find(const struct option_group *g, size_t ng, const char *name,
				 size_t len, void **conf)
{
	size_t i, j;

	for (i = 0; i < ng; i++)
		for (j = 0; j < g[i].n; j++)
			if (strlen(g[i].opts[j].name) == len &&
			    !strncmp(g[i].opts[j].name, name, len)) {
				*conf = g[i].conf;
				return &g[i].opts[j];
			}
	return NULL;
}

int options_read(const char *prog, const struct option_group *g, size_t ng, int argc,
		 char **argv)
{
	size_t i, j;
	int a;

	for (i = 0; i < ng; i++)
		for (j = 0; j < g[i].n; j++)
			if (parsable(&g[i].opts[j]) &&
			    set(prog, &g[i].opts[j], g[i].conf, g[i].opts[j].def, "default") < 0)
				return -1;
	for (i = 0; i < ng; i++)
		for (j = 0; j < g[i].n; j++) {
			const char *v = getenv(g[i].opts[j].env);

			if (v && set(prog, &g[i].opts[j], g[i].conf, v, g[i].opts[j].env) < 0)
				return -1;
		}
	for (a = 0; a < argc; a++) {
		const char *arg = argv[a], *eq, *v;
		const struct option *o;
		void *conf;

		if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
			return 1;
		if (strncmp(arg, "--", 2) != 0) {
			fprintf(stderr, "%s: unexpected argument \"%s\"\n", prog, arg);
			return -1;
		}
		eq = strchr(arg, '=');
		o = find(g, ng, arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2), &conf);
		if (!o) {
			fprintf(stderr, "%s: unknown option %s (see --help)\n", prog, arg);
			return -1;
		}
		v = eq ? eq + 1 : (a + 1 < argc ? argv[++a] : NULL);
		if (!v) {
			fprintf(stderr, "%s: --%s needs a value\n", prog, o->name);
			return -1;
		}
		if (set(prog, o, conf, v, "argument") < 0)
			return -1;
	}
	return 0;
}

void options_usage(FILE *f, const struct option_group *g, size_t ng)
{
	size_t i, j;

	for (i = 0; i < ng; i++) {
		fprintf(f, " %s:\n", g[i].module);
		for (j = 0; j < g[i].n; j++) {
			const struct option *o = &g[i].opts[j];
			char flag[48];

			snprintf(flag, sizeof(flag), "--%s %s", o->name, o->arg);
			fprintf(f, "  %-26s %s\n  %-26s env %s, default %s\n", flag, o->help, "",
				o->env, o->def[0] ? o->def : "none");
		}
	}
}
