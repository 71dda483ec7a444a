/*
 * token.h - players' credentials: JSON Web Tokens (RFC 7519) that a game
 * backend mints and the server verifies, signed with HS256/384/512 (a
 * shared secret) or ES256/384/512, RS256/384/512 (a key pair: nodes hold
 * only the public key, so they cannot mint). Signatures are libjwt's
 * (Debian's libjwt 1.10, OpenSSL backend); everything around them is
 * here: the token's shape and its header's alg, checked before libjwt sees
 * it (only the configured key's family is accepted, never "none"), and
 * the claims, read and checked with cJSON (docs/edits.md, "Players and
 * tokens").
 *
 * Who may do what with a verified token (worlds, areas, roles, rates) is
 * access.h's; this module only reads and checks the claims. Time is a
 * parameter. The command `terrain-server token` (token_cmd()) mints.
 */
#ifndef TOKEN_H
#define TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_SUB_MAX 64      /* sub: 1..64 of [A-Za-z0-9_.@-] */
#define TOKEN_WORLDS_MAX 32   /* entries of the worlds claim */
#define TOKEN_AREAS_MAX 32    /* rectangles of the area claim */
#define TOKEN_MAX_LEN 8192    /* bytes of a compact token */
#define TOKEN_SKEW_S 60       /* clock skew allowed on exp, nbf and iat */
#define TOKEN_SECRET_MIN 32   /* bytes of an HS256 secret (RFC 7518 3.2) */

/* What a token may do, from its role claim; ordered. */
enum token_role { TOKEN_PLAYER, TOKEN_MODERATOR, TOKEN_ADMIN };

/* The claims of a verified token. */
struct token_claims {
	char sub[TOKEN_SUB_MAX + 1];     /* the player */
	enum token_role role;            /* player when absent */
	double rate;                     /* edits a second; 0: none given */
	double exp, nbf, iat;            /* NumericDates; nbf, iat 0 when absent */
	size_t nworlds;                  /* 0 with all_worlds: every world */
	int all_worlds;                  /* no worlds claim */
	uint64_t worlds[TOKEN_WORLDS_MAX];  /* seeds (seed.h) */
	size_t nareas;                   /* 0: anywhere */
	int64_t areas[TOKEN_AREAS_MAX][4];  /* x0, z0, x1, z1 in mm, x0 <= x1,
					       z0 <= z1 */
};

struct token_keys;

/*
 * The keys tokens are verified with: an HMAC secret (secret_len bytes, at
 * least TOKEN_SECRET_MIN; NULL for none) and a PEM public key (an EC key
 * on P-256, P-384 or P-521, or an RSA key of 2048 bits or more; NULL for
 * none). At least one. Into a new *out (token_keys_destroy()); 0, or
 * ERR_INVAL with the reason in err.
 */
int token_keys_create(const uint8_t *secret, size_t secret_len, const char *pem,
		      size_t pem_len, struct token_keys **out, char *err, size_t errlen);

/* Free k; NULL does nothing. */
void token_keys_destroy(struct token_keys *k);

/* The algorithms k accepts, for people: "HS256, HS384, HS512" or "ES256". */
const char *token_keys_algs(const struct token_keys *k);

/*
 * Verify the compact token jwt (len bytes, no NUL needed) at time now
 * (seconds since 1970) into *out. 0, or ERR_INVAL with why (lowercase,
 * for the 401's detail) naming the cause: "malformed: ...", "alg none is
 * not accepted", "alg RS256 is not accepted (...)", "bad signature",
 * "token expired", "token not yet valid", "exp: ...", "sub: ...",
 * "worlds: ...", "area: ...", "role: ...", "rate: ...". exp is
 * required; exp, nbf and iat allow TOKEN_SKEW_S of clock skew.
 */
int token_verify(const struct token_keys *k, const char *jwt, size_t len, double now,
		 struct token_claims *out, char *why, size_t whylen);

/*
 * Check claims (the payload) alone, signature aside: what token_verify()
 * does after libjwt. For the unit tests. 0 or ERR_INVAL with why.
 */
int token_check_claims(const char *json, size_t len, double now, struct token_claims *out,
		       char *why, size_t whylen);

/* What to mint. */
struct token_mint {
	const uint8_t *secret;           /* HS256 with this secret, or */
	size_t secret_len;
	const char *private_pem;         /* ES*, RS* by this PEM private key */
	size_t private_pem_len;
	const char *sub;
	const char *role;                /* NULL: no role claim (player) */
	const char *const *worlds;       /* seeds or names as given; NULL: all */
	size_t nworlds;
	const double (*areas)[4];        /* metres; nareas of them */
	size_t nareas;
	double rate;                     /* 0: no rate claim */
	double now;                      /* iat */
	double ttl;                      /* exp = now + ttl */
	double not_before;               /* nbf = now + not_before when not 0 */
};

/* Mint m into a new string *out (free()). 0, or ERR_* with err. */
int token_mint(const struct token_mint *m, char **out, char *err, size_t errlen);

/*
 * The first line of file, as bytes (a secret: what --token-secret-file
 * and --redis-password-file read), into a new *out of *len bytes with a
 * NUL after them. 0, or ERR_* with err naming flag and file.
 */
int token_read_secret(const char *flag, const char *file, char **out, size_t *len, char *err,
		      size_t errlen);

/* `terrain-server token ...`: mint and print a token (argv after the
 * command word). The exit status: 0, 1 (failed) or 2 (bad arguments). */
int token_cmd(int argc, char **argv);

#endif
