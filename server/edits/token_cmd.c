/*
 * token_cmd.c - `terrain-server token`: mint a player's token (token.h)
 * and print it, for game backends written in shell and for tests.
 *
 *   terrain-server token --secret-file F --sub NAME [--world S]...
 *       [--area x0,z0,x1,z1]... [--role R] [--ttl SECONDS] [--rate N]
 *       [--not-before SECONDS] [--now SECONDS]
 *   terrain-server token --private-key-file F --sub NAME ...   (ES256/384/512, RS256)
 *
 * --secret-file defaults to $TERRAIN_TOKEN_SECRET_FILE; --ttl to 3600;
 * --now (the token's iat, seconds since 1970) to the clock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/files.h"
#include "err.h"
#include "seed.h"
#include "token.h"

#define USAGE "usage: terrain-server token (--secret-file F | --private-key-file F) --sub NAME\n" \
	"         [--world S]... [--area x0,z0,x1,z1]... [--role player|moderator|admin]\n" \
	"         [--ttl SECONDS] [--rate EDITS_PER_S] [--not-before SECONDS] [--now SECONDS]\n"

struct cmd {
	const char *secret_file, *key_file;
	const char *worlds[TOKEN_WORLDS_MAX];
	double areas[TOKEN_AREAS_MAX][4];
	struct token_mint m;
};

static int bad(const char *msg, const char *arg)
{
	fprintf(stderr, "terrain-server token: %s%s\n" USAGE, msg, arg ? arg : "");
	return 2;
}

/* A number with nothing after it: 0, or -1. */
static int number(const char *s, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return *s && !*end && !errno ? 0 : -1;
}

static int area(struct cmd *c, const char *s)
{
	double *v = c->areas[c->m.nareas];
	char *end;
	int i;

	if (c->m.nareas == TOKEN_AREAS_MAX)
		return bad("too many --area", NULL);
	for (i = 0; i < 4; i++, s = end + 1) {
		errno = 0;
		v[i] = strtod(s, &end);
		if (end == s || errno || *end != (i < 3 ? ',' : '\0'))
			return bad("--area wants x0,z0,x1,z1 (metres): ", s);
	}
	if (v[0] > v[2] || v[1] > v[3])
		return bad("--area: need x0 <= x1 and z0 <= z1", NULL);
	c->m.nareas++;
	return 0;
}

/* One flag and its value into c: 0, or 2 after saying why. */
static int flag(struct cmd *c, const char *f, const char *v)
{
	uint64_t seed;

	if (!strcmp(f, "--secret-file"))
		c->secret_file = v;
	else if (!strcmp(f, "--private-key-file"))
		c->key_file = v;
	else if (!strcmp(f, "--sub"))
		c->m.sub = v;
	else if (!strcmp(f, "--role")) {
		if (strcmp(v, "player") && strcmp(v, "moderator") && strcmp(v, "admin"))
			return bad("--role: player, moderator or admin, not ", v);
		c->m.role = v;
	} else if (!strcmp(f, "--world")) {
		if (seed_parse(v, strlen(v), &seed))
			return bad("--world: not a seed (decimal, or [A-Za-z0-9_-]{1,64}): ", v);
		if (c->m.nworlds == TOKEN_WORLDS_MAX)
			return bad("too many --world", NULL);
		c->worlds[c->m.nworlds++] = v;
	} else if (!strcmp(f, "--area"))
		return area(c, v);
	else if (!strcmp(f, "--ttl")) {
		if (number(v, &c->m.ttl))
			return bad("--ttl: not a number of seconds: ", v);
	} else if (!strcmp(f, "--rate")) {
		if (number(v, &c->m.rate) || !(c->m.rate > 0))
			return bad("--rate: not a positive number of edits a second: ", v);
	} else if (!strcmp(f, "--not-before")) {
		if (number(v, &c->m.not_before))
			return bad("--not-before: not a number of seconds: ", v);
	} else if (!strcmp(f, "--now")) {
		if (number(v, &c->m.now))
			return bad("--now: not a number of seconds since 1970: ", v);
	} else {
		return bad("unknown argument ", f);
	}
	return 0;
}

/* The key file into c->m. 0 or 1 after saying why. */
static int read_key(struct cmd *c, char **buf)
{
	char err[300];
	size_t len;

	if (c->key_file) {
		if (files_read(c->key_file, 65536, buf, &len) != 0) {
			fprintf(stderr, "terrain-server token: --private-key-file %s: %s\n",
				c->key_file, strerror(errno));
			return 1;
		}
		c->m.private_pem = *buf;
		c->m.private_pem_len = len;
		return 0;
	}
	if (token_read_secret("secret-file", c->secret_file, buf, &len, err, sizeof(err))) {
		fprintf(stderr, "terrain-server token: %s\n", err);
		return 1;
	}
	c->m.secret = (const uint8_t *)*buf;
	c->m.secret_len = len;
	return 0;
}

int token_cmd(int argc, char **argv)
{
	struct cmd c = { .m = { .ttl = 3600, .now = (double)time(NULL) } };
	char err[300], *key = NULL, *tok = NULL;
	int a, rc;

	if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
		fputs(USAGE, stdout);
		return 0;
	}
	for (a = 0; a < argc; a += 2) {
		if (a + 1 >= argc)
			return bad("missing value for ", argv[a]);
		if ((rc = flag(&c, argv[a], argv[a + 1])) != 0)
			return rc;
	}
	if (!c.secret_file && !c.key_file && getenv("TERRAIN_TOKEN_SECRET_FILE"))
		c.secret_file = getenv("TERRAIN_TOKEN_SECRET_FILE");
	if (!c.secret_file == !c.key_file)
		return bad("one of --secret-file and --private-key-file is required", NULL);
	if (!c.m.sub)
		return bad("--sub is required", NULL);
	c.m.worlds = c.m.nworlds ? c.worlds : NULL;
	c.m.areas = (const double (*)[4])c.areas;
	if (read_key(&c, &key))
		return 1;
	rc = token_mint(&c.m, &tok, err, sizeof(err));
	if (key)
		memset(key, 0, c.m.secret_len ? c.m.secret_len : c.m.private_pem_len);
	free(key);
	if (rc) {
		fprintf(stderr, "terrain-server token: %s\n", err);
		return rc == ERR_INVAL ? 2 : 1;
	}
	printf("%s\n", tok);
	free(tok);
	return 0;
}
