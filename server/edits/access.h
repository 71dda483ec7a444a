/*
 * access.h - who may write to a world, and how much: the checks that run
 * before a writing handler (POST edits, POST reverts), as nginx's access
 * and limit modules run before its content handler. Each check passes or
 * answers; the handler never repeats them (docs/edits.md, "Who may edit"
 * and "Players and tokens"; docs/design.md, "The access chain").
 *
 * Two steps, because a handler learns what it writes only from its body:
 *
 *   access_identify()   Origin, then the credential: the edit token
 *                       (--edit-token: author "admin", role admin), a
 *                       player's JWT (token.h: its sub and claims), or,
 *                       with neither configured, a loopback client that
 *                       names a loopback Host and comes straight (author
 *                       "local", role admin). The principal: struct
 *                       access_who.
 *   access_admit()      role, world (the token's worlds), area (every
 *                       brush inside one of the token's rectangles),
 *                       deadline (X-Request-Start, --edit-deadline), then
 *                       the budgets (--edit-rate, --edit-area, the
 *                       token's rate), per author, or per peer address
 *                       for "local".
 *
 * access_check() runs both. Every check answers with an HTTP status and
 * q->detail (from the request's arena, or static), or ERR_NOMEM. Loop
 * thread only.
 */
#ifndef ACCESS_H
#define ACCESS_H

#include <stddef.h>
#include <stdint.h>

#include "token.h"

struct access;
struct edit;
struct req;
struct uv_loop_s;

/* What a principal may do; ordered: a check asks for at least one. */
enum access_role {
	ACCESS_PLAYER = TOKEN_PLAYER,
	ACCESS_MODERATOR = TOKEN_MODERATOR,
	ACCESS_ADMIN = TOKEN_ADMIN
};

/* How the principal proved who it is. */
enum access_via { ACCESS_VIA_LOOPBACK, ACCESS_VIA_EDIT_TOKEN, ACCESS_VIA_JWT };

/* The principal of a request (access_identify()). */
struct access_who {
	char sub[TOKEN_SUB_MAX + 1];     /* the author: a JWT's sub, "admin"
					    (the edit token) or "local"
					    (tokenless loopback) */
	enum access_role role;
	enum access_via via;
	const struct token_claims *token; /* via JWT: its claims (worlds,
					     area, rate), in the request's
					     arena; else NULL */
};

/* What the request asks to do (access_admit()). */
struct access_ask {
	uint64_t seed;                   /* the world it writes */
	enum access_role need;           /* the least role that may */
	const struct edit *edits;        /* its brushes (area and budget checks), */
	size_t nedits;                   /* or NULL, 0: none (a revert) */
};

/* Per-author budgets (token buckets refilled by time; a rate of 0 is off). */
struct access_limits {
	double edits_per_s;      /* --edit-rate (default 1000) */
	double edit_burst;       /* edits at once (default 5 s of the rate) */
	double area_m2_per_s;    /* --edit-area as m^2/s (default 200 km^2/s) */
	double area_burst_m2;    /* at once (default 5 s of the rate) */
	unsigned deadline_ms;    /* --edit-deadline (0: off) */
};

struct access_config {
	const char *edit_token;          /* --edit-token; NULL or "": none */
	const char *cors_origins;        /* --cors-origins, comma-separated */
	const char *allowed_hosts;       /* --allowed-hosts, comma-separated */
	const uint8_t *token_secret;     /* --token-secret-file's key, or NULL */
	size_t token_secret_len;
	const char *token_public_key;    /* --token-public-key-file's PEM, or NULL */
	size_t token_public_key_len;
	struct access_limits limits;
};

/*
 * Create the chain from cfg (everything copied). 0, or ERR_INVAL (a key
 * that cannot verify tokens: err says why) or ERR_NOMEM.
 */
int access_create(struct uv_loop_s *loop, const struct access_config *cfg,
		  struct access **out, char *err, size_t errlen);

/* Free a; NULL does nothing. */
void access_destroy(struct access *a);

/*
 * Step one: the request's Origin and credential, into *who. 0, or 403
 * (an Origin that may not write, a proxied or non-loopback request
 * without a credential configured) or 401 (no, a wrong or a bad bearer
 * token: "authorization: token expired", "... bad signature", ...), with
 * q->detail set.
 */
int access_identify(struct access *a, struct req *q, struct access_who *who);

/*
 * Step two: may who do ask? 0, or 403 (role too low, a world not among
 * the token's, a brush outside its area), 503 (past --edit-deadline), 422
 * (a batch larger than the author's whole burst) or 429 (the author's
 * budget is spent: Retry-After), with q->detail set. Passing charges the
 * author's budget with ask's edits.
 */
int access_admit(struct access *a, struct req *q, const struct access_who *who,
		 const struct access_ask *ask);

/*
 * Both steps, for a handler that has its whole ask at once: e.g. a
 * revert, for moderators,
 *
 *	struct access_ask ask = { seed, ACCESS_MODERATOR, NULL, 0 };
 *	if ((rc = access_check(a, q, &ask, &x->who)) != 0) return rc;
 */
int access_check(struct access *a, struct req *q, const struct access_ask *ask,
		 struct access_who *who);

/* The methods a CORS preflight may allow q's Origin, of methods: no POST
 * for an Origin that may not write (a route's cors_methods). */
uint64_t access_cors_methods(const struct access *a, const struct req *q, uint64_t methods);

/* Whether a credential is configured (the edit token or a token key):
 * then every writer is named by it. */
int access_has_credentials(const struct access *a);

#endif
