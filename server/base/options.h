/*
 * options.h - the server's options as tables that each module declares
 * beside its configuration struct, as nginx modules declare their
 * directives (ngx_command_t): one row per option with its flag, its
 * environment variable, its default, how its value is parsed into the
 * module's struct, and its help. main.c reads every module's table from
 * the defaults, then the environment, then argv (the flag wins), and
 * --help prints the same tables: adding an option is one row and one
 * field, in the module that uses it.
 *
 * Pure apart from getenv() and the messages on stderr.
 */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stddef.h>
#include <stdio.h>

enum option_type {
	OPTION_STR,  /* const char *: the text as given (argv or environment) */
	OPTION_UINT, /* unsigned: decimal, min..max */
	OPTION_MIB,  /* size_t bytes: decimal MiB, min..max, times 2^20 */
	OPTION_MS,   /* uint64_t milliseconds: decimal seconds (fractions too),
			0..1e6 */
};

struct option {
	const char *name;  /* the flag without "--" */
	const char *env;   /* its environment variable */
	const char *arg;   /* the value's name in --help */
	const char *def;   /* the default's text; one that is not a valid value
			      ("cores", "hostname") is printed and not parsed:
			      the field keeps 0 or NULL, which the module
			      reads as that default */
	const char *help;
	enum option_type type;
	size_t offset;     /* of the field in the module's struct */
	unsigned min, max; /* OPTION_UINT and OPTION_MIB */
	int (*valid)(const char *s); /* OPTION_STR: when set, a non-empty value
					must pass it */
};

/* A row of the table of module struct type: name, env, arg, def, type,
 * field, min, max, help. */
#define OPTION(type_, name, env, arg, def, kind, field, min, max, help) \
	{ name, env, arg, def, help, kind, offsetof(type_, field), min, max, NULL }

/* One module's table and the struct its rows fill. */
struct option_group {
	const char *module;          /* heading in --help ("http", "tiles") */
	const struct option *opts;
	size_t n;
	void *conf;
};

/*
 * Fill every group's struct from its defaults, then the environment, then
 * argv (argc arguments, "--name VALUE" or "--name=VALUE"). Returns 0, 1
 * for --help or -h, or -1 after printing why on stderr, prefixed with
 * prog.
 */
int options_read(const char *prog, const struct option_group *g, size_t ng, int argc,
		 char **argv);

/* Print every group's options to f: flag, help, environment variable and
 * default, under the module's heading. */
void options_usage(FILE *f, const struct option_group *g, size_t ng);

#endif
