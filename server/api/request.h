/*
 * request.h - the plumbing every resource's handlers share, knowing no
 * resource: the common per-request state, answers (copied, JSON, errors,
 * the static 503), the budget of bodies made for single requests, path
 * and query parsing, content negotiation and validators.
 *
 * A request is matched by routes.c, which allocates the route's state
 * from the request's arena: a resource's own struct with struct req as
 * its first member, recovered in its handler with container_of(), as
 * h2o's handlers embed h2o_generator_t. The plumbing never learns those
 * fields. Loop thread only.
 */
#ifndef REQUEST_H
#define REQUEST_H

#include <stddef.h>
#include <stdint.h>

struct catalog;
struct cJSON;
struct http_req;
struct metrics;

#define REQ_MAX_SEGS 8
#define REQ_CORS "Access-Control-Allow-Origin: *\r\n"
#define REQ_EXPOSE "Access-Control-Expose-Headers: ETag, X-Cache, X-Terrain-Node\r\n"
#define REQ_DEFAULT_GEN "default"

/* Bit of an HTTP method (llhttp's HTTP_GET...) in a route's method set. */
#define REQ_M(method) (UINT64_C(1) << (method))

/* Route flags. */
#define REQ_COUNT_REJECTS 1u   /* POST refusals count as rejected edits */
#define REQ_UNCHARGED     2u   /* bodies are never refused by the budget
				  (/metrics: how the budget is watched) */
#define REQ_MONITOR       4u   /* answered also on the connections kept for
				  monitors past --max-connections */

struct req;

/*
 * A route as a resource declares it: literal path segments (NULL matches
 * any), the methods it takes (OPTIONS is implied), flags, the size of its
 * per-request state (a struct whose first member is struct req; at least
 * sizeof(struct req)) and its handler. A handler returns 0 when it has
 * answered or will answer later, or an HTTP status or negative ERR_* with
 * q->detail set, which routes.c turns into the JSON error.
 */
struct route {
	const char *label;             /* metrics label */
	const char *seg[REQ_MAX_SEGS];
	int nseg;
	uint64_t methods;
	unsigned flags;
	size_t size;
	int (*handler)(struct req *q);
	/* optional: the methods a CORS preflight allows this request's
	 * Origin, of methods (NULL: all of them) */
	uint64_t (*cors_methods)(struct req *q, uint64_t methods);
};

/* What every answer shares: metrics and the budget of made bodies. */
struct req_env {
	struct metrics *metrics;
	size_t made, max_made;           /* bytes of bodies made per request */
	char oom_head[256];
	size_t oom_head_len;
};

/* The common per-request state, from the request's arena. */
struct req {
	struct req_env *env;
	struct http_req *http;
	void *module;                    /* the resource the route belongs to */
	const struct route *route;       /* NULL: no route matched */
	unsigned label;                  /* metrics label index */
	const char *detail;              /* for an error answer */
	const char *xcache;              /* extra static header lines ("X-Cache:
					    ...", the Cache-Control of an
					    immutable answer) or NULL */
	int count_rejects;               /* an error answer is a rejected edit */
	const char *seg[REQ_MAX_SEGS];   /* decoded path segments */
	size_t seglen[REQ_MAX_SEGS];
	int nseg;
};

/* The module's option (req_options: --response-mb). */
struct req_config {
	size_t response_bytes; /* bodies made for single requests and not yet
				  sent (64 MiB; 0: 1 MiB) */
};

struct option;
/* The module's option table (options.h); returns its length. */
size_t req_options(const struct option **out);

/* Set up env: max_made bytes of made bodies (0: 1 MiB). */
void req_env_init(struct req_env *env, struct metrics *m, size_t max_made);

/* ---- answers ---- */

/* Send head and body as they are; release(arg) runs once they are sent. */
void req_send(struct req *q, int status, const void *head, size_t hlen,
	      const void *body, size_t blen, void (*release)(void *), void *arg);

/* Answer with a copy of body under a head of status, Content-Type type
 * (unused for 204 and 304, which get no Content-Type or Content-Length)
 * and extra header lines; bodies of 4 KiB or more are charged to the
 * budget (a 503 when it is spent). */
void req_respond_copy(struct req *q, int status, const char *type,
		      const char *headers, const char *body, size_t blen);

/* Answer with o printed (o is freed; NULL answers the static 503). */
void req_respond_json(struct req *q, int status, struct cJSON *o,
		      const char *headers);

/*
 * Add the member name = v to the JSON object obj as an exact decimal
 * integer: cJSON keeps numbers as doubles, exact only up to 2^53, so a
 * u64 (sequence numbers, versions, counts) goes through this, never
 * cJSON_AddNumberToObject. Returns the new item, or NULL (out of memory).
 *
 *	req_json_u64(o, "since", since);   ->  "since":18446744073709551614
 */
struct cJSON *req_json_u64(struct cJSON *obj, const char *name, uint64_t v);

/* The JSON error {"error": token of status, "detail": detail}; bytes of
 * detail that are not valid UTF-8 are written as the text \xHH, so the
 * body is valid JSON whatever the detail quotes. */
void req_respond_error(struct req *q, int status, const char *detail);

/* The static 503 "out of memory", which needs no allocation. */
void req_respond_oom(struct req_env *env, struct http_req *http, unsigned label);

/* "GET, HEAD, OPTIONS" for a method set, from the arena. */
const char *req_allow_list(struct req *q, uint64_t methods);

/*
 * Charge n bytes of a body made for q to the budget: all requests at most
 * max_made, one connection at most a quarter of it once it holds a body.
 * Returns 0 or ERR_BUSY with q->detail set. req_made_give() returns them.
 */
int req_made_take(struct req *q, size_t n);
void req_made_give(struct req *q, size_t n);

/* ---- the request ---- */

/* Split and percent-decode the path into q->seg (a path not starting with
 * '/', or with too many segments, matches nothing). 0, ERR_INVAL (bad
 * escape or NUL: q->detail set) or ERR_NOMEM. */
int req_split_path(struct req *q);

/* The decoded value of query parameter name (length in *len), or NULL
 * when absent; *rc is 0, or ERR_INVAL / ERR_NOMEM (NULL returned). */
const char *req_query(struct req *q, const char *name, size_t *len, int *rc);

/* Decimal uint64 (at most 20 digits, no sign). 0 or ERR_INVAL. */
int req_parse_u64(const char *s, size_t len, uint64_t *out);

/* Parse s (len bytes): an optional '-' and decimal digits fitting int32.
 * Returns 0, ERR_INVAL (not a number) or ERR_RANGE. */
int req_parse_i32(const char *s, size_t len, int32_t *out);

/* Query parameter name as uint64 into *v (left alone when absent, and
 * *present, when not NULL, says whether it was there); a bad value is
 * ERR_INVAL with detail. */
int req_query_u64(struct req *q, const char *name, uint64_t *v, int *present,
		  const char *detail);

/* Required query parameter name as int32; ERR_INVAL with detail. */
int req_query_i32(struct req *q, const char *name, int32_t *v, const char *detail);

/* Seed (path segment 2) and generator (?gen=, default "default") of a
 * world request: ERR_INVAL / ERR_RANGE for a bad seed, ERR_NOTFOUND for
 * an unknown generator, with q->detail. */
int req_world(struct req *q, const struct catalog *cat, uint64_t *seed, int *gen);

/* ---- negotiation and validators ---- */

/* Whether Accept-Encoding ae lets us send zstd: q-values honoured,
 * "zstd;q=0" forbids it, "*" counts for it, an explicit identity q above
 * zstd's wins. NULL: no. */
int req_accepts_zstd(const char *ae);

/* The content codings a tile may travel in (req_coding()). */
enum req_coding {
	REQ_CODING_IDENTITY,
	REQ_CODING_ZSTD,
	REQ_CODING_GZIP,
};

/*
 * The coding to answer Accept-Encoding ae with: zstd or gzip (x-gzip is
 * its alias), whichever has the higher q above 0, zstd on a tie; "*"
 * stands for a coding the list does not name. identity when neither is
 * acceptable, when ae is NULL or empty, or when identity is named with a
 * q above the chosen coding's (a list that forbids identity still gets
 * it when nothing else is acceptable: no 406). q-values as in
 * req_accepts_zstd(): "gzip;q=0" forbids gzip.
 *
 *	req_coding("gzip, deflate, br, zstd")  -> REQ_CODING_ZSTD
 *	req_coding("gzip, zstd;q=0.5")          -> REQ_CODING_GZIP
 */
int req_coding(const char *ae);

/* Whether Accept names type with a q above 0 and not below other's. */
int req_prefers(const char *accept, const char *type, const char *other);

/* Whether If-None-Match inm (NULL, a list, W/ forms, or *) matches etag. */
int req_etag_matches(const char *inm, const char *etag);

/* Write t (seconds since the epoch) as an IMF-fixdate, "Sun, 06 Nov 1994
 * 08:49:37 GMT" (29 characters and a NUL). */
void req_http_date(char out[30], long long t);

/* Parse an HTTP-date (RFC 9110 5.6.7: IMF-fixdate, or the obsolete RFC 850
 * and asctime forms) into seconds since the epoch. 0 or ERR_INVAL. */
int req_parse_http_date(const char *s, long long *out);

/*
 * Whether q's conditional headers make its answer a 304 (RFC 9110 13.2.2):
 * with If-None-Match, whether it matches etag (NULL: none), and then
 * If-Modified-Since is ignored; without, for GET and HEAD, whether
 * If-Modified-Since is a valid HTTP-date no earlier than last_modified
 * (seconds since the epoch; 0: unknown, never 304 by date).
 */
int req_not_modified(const struct req *q, const char *etag, long long last_modified);

/* Whether Content-Type ct is type (parameters allowed). */
int req_type_is(const char *ct, const char *type);

/* "%016llx" of v. */
void req_hex64(char out[17], uint64_t v);

/* ---- versioned URLs (?v=SEQ) ---- */

/* What ?v=SEQ names, against the version of what the URL reads. */
enum req_version {
	REQ_V_CURRENT,   /* v is the current version: the answer never changes */
	REQ_V_MOVED,     /* v is another version this node knows: redirect */
	REQ_V_AHEAD,     /* v is beyond the world's last sequence number */
};

/*
 * Compare the version v a URL names with the current edit version of what
 * it reads (a chunk's version, or the largest of its neighbourhood's) in a
 * world whose last applied sequence number is seq (version <= seq).
 * REQ_V_CURRENT when v == version; REQ_V_AHEAD when v > seq (a node that
 * has not applied v yet, or a made-up number); REQ_V_MOVED otherwise (an
 * older version, or a later sequence number at which the thing read had
 * not changed: both redirect to the one canonical URL). Pure.
 */
enum req_version req_version_match(uint64_t v, uint64_t version, uint64_t seq);

/*
 * Write query (qlen bytes, raw, may be NULL) into out (cap bytes) with
 * parameter name set to value: its first occurrence replaced in place,
 * later ones dropped, appended when absent; the other parameters keep
 * their order and bytes. out is NUL-terminated. Returns the length, or -1
 * when it does not fit. Pure. For example, "gen=alpine&v=3" with v = "7"
 * gives "gen=alpine&v=7".
 */
long req_query_set(const char *query, size_t qlen, const char *name, const char *value,
		   char *out, size_t cap);

/* The HTTP status of a handler's result: a status (> 0) as it is, an
 * ERR_* code by the one table. */
int req_status(int err);

/* Answer q with the JSON error of rc (a status or ERR_*) and q->detail. */
void req_fail(struct req *q, int rc);

#endif
