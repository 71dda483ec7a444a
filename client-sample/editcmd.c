/*
 * editcmd.c - terrain-client edit (editcmd.h).
 *
 *   edit --server URL --seed S [--gen G] --op raise|lower|flatten|set
 *        --x X --z Z --radius R [--strength V] [--height H]
 *        [--falloff linear|smooth] [--token T] [--timeout-ms T]
 *        [--attempts N] [--idempotency-key KEY]
 *
 * Posts {"edits": [ONE]} to /v1/worlds/{seed}/edits (docs/edits.md) with
 * only the fields the op uses: raise and lower take --strength, flatten
 * --strength and --height, set --height; falloff only when given (the
 * server's default is smooth). Which fields an op takes is checked here
 * (exit 2); the ranges are the server's to check (422, exit 1 with its
 * detail). Numbers travel as the shortest decimal that reads back as the
 * same double, so the server rounds exactly what was typed.
 *
 * The token comes from --token or else TERRAIN_EDIT_TOKEN (which keeps it
 * out of process listings) and goes as "Authorization: Bearer T".
 *
 * Exactly once (issue 35): the batch carries an Idempotency-Key, fresh
 * for each run (128 bits from uv_random, 32 hex digits) unless given, and
 * every attempt sends the same one, so the server applies it at most once
 * and answers a retry with the first outcome ("replay": true). Attempts
 * are retried, up to --attempts (8), on 503 and 429 (not applied), on 409
 * (the same key still in flight), and on 502, 504, a timeout (--timeout-ms
 * per attempt) or a lost connection (outcome unknown); each waits its
 * Retry-After, else 100 ms doubling up to 2 s, jittered to 50..100 %.
 * Other answers (400, 401, 422: the key came with another body...) end
 * it. Giving up exits 1 naming the attempts and the last answer; when some
 * attempt's outcome was unknown the message says so and prints the key,
 * so that the user can run the same edit again with it and learn the
 * outcome.
 *
 * Output, one "key: value" line each: first_seq, last_seq, world_hash,
 * chunks (the touched chunks as "cx,cz", space-separated), attempts, and
 * "replay: true" when the answer was the stored one of an earlier attempt.
 */
#include "editcmd.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "api.h"
#include "cli.h"
#include "err.h"
#include "hclient.h"
#include "seed.h"

#define CMD "edit"
#define BACKOFF_MS 100      /* first wait between attempts, doubling */
#define BACKOFF_MAX_MS 2000 /* the longest wait without a Retry-After */
#define KEY_MAX 255         /* an Idempotency-Key's longest value */
#define RETRY_AFTER_MAX 300 /* s: a longer Retry-After is waited this long */

struct post_wait {
	int done;
	int status;
	int err;
	long retry_after;   /* s, -1: none */
	int replayed;       /* Idempotent-Replayed: true */
	char detail[200];
	uint8_t *body;
	size_t len;
};

/* What an attempt's answer means for the batch. */
enum verdict { V_DONE, V_STOP, V_RETRY, V_UNKNOWN };

/* The statuses worth another attempt with the same key. */
static const struct { int status; enum verdict v; } retryable[] = {
	{ 503, V_RETRY },   /* certainly not applied */
	{ 429, V_RETRY },   /* rate limited: not applied */
	{ 409, V_UNKNOWN }, /* the same key is in flight */
	{ 502, V_UNKNOWN }, /* a proxy lost the upstream */
	{ 504, V_UNKNOWN }, /* outcome_unknown, or a proxy's timeout */
};

static int usage(const char *msg)
{
	fprintf(stderr, CLI_PROG " " CMD ": %s (see " CLI_PROG " " CMD
		" --help)\n", msg);
	return CLI_EXIT_USAGE;
}

/* The shortest %g form of v that reads back as v (v finite). */
static void num(char *out, size_t cap, double v)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, cap, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

/* Append ,"name":v to the body. */
static size_t add_num(char *b, size_t cap, size_t n, const char *name,
		      double v)
{
	char t[40];

	num(t, sizeof(t), v);
	return n + (size_t)snprintf(b + n, cap - n, ",\"%s\":%s", name, t);
}

/* Check which fields --op takes; write the body into b. Returns 0 or
 * CLI_EXIT_USAGE after a message. */
static int build_body(const struct cli_opts *o, char *b, size_t cap)
{
	static const char *const ops[] = { "raise", "lower", "flatten", "set" };
	int op = -1, strength, height;
	size_t n;

	for (int k = 0; k < 4; k++)
		if (strcmp(o->op, ops[k]) == 0)
			op = k;
	if (op < 0)
		return usage("--op: expected raise, lower, flatten or set");
	if (o->falloff && strcmp(o->falloff, "linear") != 0 &&
	    strcmp(o->falloff, "smooth") != 0)
		return usage("--falloff: expected linear or smooth");
	strength = op != 3; /* raise, lower, flatten */
	height = op >= 2;   /* flatten, set */
	if (!strength && !isnan(o->strength))
		return usage("--op set takes no --strength");
	if (!height && !isnan(o->height))
		return usage("--op raise and lower take no --height");
	if (strength && isnan(o->strength))
		return usage(op == 2 ? "--op flatten needs --strength (a "
			     "fraction in [0, 1]) and --height" :
			     "--op raise and lower need --strength (metres)");
	if (height && isnan(o->height))
		return usage("--op flatten and set need --height (metres)");
	n = (size_t)snprintf(b, cap, "{\"edits\":[{\"op\":\"%s\"", ops[op]);
	n = add_num(b, cap, n, "x", o->x);
	n = add_num(b, cap, n, "z", o->z);
	n = add_num(b, cap, n, "radius", o->radius);
	if (strength)
		n = add_num(b, cap, n, "strength", o->strength);
	if (height)
		n = add_num(b, cap, n, "height", o->height);
	if (o->falloff)
		n += (size_t)snprintf(b + n, cap - n, ",\"falloff\":\"%s\"",
				      o->falloff);
	snprintf(b + n, cap - n, "}]}");
	return 0;
}

/* A bearer token: 1..1024 visible ASCII characters. */
static int token_ok(const char *t)
{
	size_t n = strlen(t);

	if (n < 1 || n > 1024)
		return 0;
	for (size_t k = 0; k < n; k++)
		if (t[k] < 0x21 || t[k] > 0x7e)
			return 0;
	return 1;
}

/*
 * An Idempotency-Key value (a Structured-Field string): 1..KEY_MAX
 * visible ASCII characters other than '"' and '\', which would need
 * escaping.
 */
static int key_ok(const char *k)
{
	size_t n = strlen(k);

	return n >= 1 && n <= KEY_MAX && strspn(k, "!#$%&'()*+,-./0123456789"
		":;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz"
		"{|}~") == n;
}

/* A fresh key: 128 random bits (getrandom(2) through uv_random) as 32
 * lowercase hex digits. Returns 0 or a libuv error. */
static int new_key(char out[33])
{
	uint8_t b[16];
	int rc = uv_random(NULL, NULL, b, sizeof(b), 0, NULL);

	for (size_t k = 0; !rc && k < sizeof(b); k++)
		snprintf(out + 2 * k, 3, "%02x", b[k]);
	return rc;
}

/* The wait before attempt n + 1 (n >= 1): the answer's Retry-After (at
 * most RETRY_AFTER_MAX), else BACKOFF_MS doubling to BACKOFF_MAX_MS, a
 * uniform 50..100 % of it. */
static uint64_t backoff_ms(const struct post_wait *w, unsigned n)
{
	uint64_t d = BACKOFF_MS << (n - 1 < 5 ? n - 1 : 5);
	uint32_t r = 0;

	if (w->retry_after >= 0)
		return (uint64_t)(w->retry_after < RETRY_AFTER_MAX ?
				  w->retry_after : RETRY_AFTER_MAX) * 1000;
	d = d < BACKOFF_MAX_MS ? d : BACKOFF_MAX_MS;
	uv_random(NULL, NULL, &r, sizeof(r), 0, NULL);
	return d / 2 + r % (d / 2 + 1);
}

/* What attempt w's answer means for the batch (enum verdict). */
static enum verdict judge(const struct post_wait *w)
{
	if (!w->status) /* nothing sent when it could not connect */
		return strncmp(w->detail, "connect:", 8) == 0 ? V_RETRY :
		       V_UNKNOWN;
	if (w->status >= 200 && w->status < 300)
		return V_DONE;
	for (size_t k = 0; k < sizeof(retryable) / sizeof(retryable[0]); k++)
		if (retryable[k].status == w->status)
			return retryable[k].v;
	return V_STOP;
}

static void on_post(void *arg, struct hclient_resp *r)
{
	struct post_wait *w = arg;

	w->done = 1;
	w->status = r->status;
	w->err = r->err;
	w->retry_after = r->retry_after;
	w->replayed = r->replayed;
	snprintf(w->detail, sizeof(w->detail), "%s",
		 r->err ? (r->detail ? r->detail : err_str(r->err)) : "");
	if (!r->err)
		w->body = hclient_resp_detach(r, &w->len);
}

static int print_answer(const char *what, const struct post_wait *w,
			unsigned attempts)
{
	struct api_batch b;

	if (api_batch_parse((const char *)w->body, w->len, &b))
		return cli_fail(what, "not the answer JSON expected");
	printf("first_seq: %" PRIu64 "\nlast_seq: %" PRIu64 "\n"
	       "world_hash: %016" PRIx64 "\nchunks:", b.first_seq, b.last_seq,
	       b.world_hash);
	for (size_t k = 0; k < b.nchunks; k++)
		printf(" %" PRId32 ",%" PRId32, b.chunks[2 * k],
		       b.chunks[2 * k + 1]);
	printf("\nattempts: %u\n%s", attempts,
	       b.replay || w->replayed ? "replay: true\n" : "");
	api_batch_free(&b);
	return fflush(stdout) ? cli_fail("stdout", "write failed") : 0;
}

/* The answer of one attempt, in words, into out. */
static void describe(const struct cli_session *s, const struct post_wait *w,
		     char *out, size_t cap)
{
	char text[300];

	if (!w->status && strncmp(w->detail, "connect:", 8) == 0) {
		snprintf(out, cap, "cannot reach the server %s (%s)",
			 hclient_authority(s->hc), w->detail);
	} else if (!w->status) {
		snprintf(out, cap, "no answer (%s)", w->detail);
	} else if (w->err) {
		snprintf(out, cap, "HTTP %d: %s", w->status, w->detail);
	} else {
		api_error_text(w->body, w->len, text, sizeof(text));
		snprintf(out, cap, "HTTP %d%s%s%s", w->status,
			 text[0] ? ": " : "", text, w->status == 401 ?
			 " (give the token with --token or TERRAIN_EDIT_TOKEN)" :
			 "");
	}
}

/*
 * Say how the edit ended without success after n attempts, v the last
 * one's verdict, unknown whether any attempt may have applied it; returns
 * EXIT_FAILURE.
 */
static int report(const struct cli_session *s, const char *what,
		  const struct post_wait *w, enum verdict v, unsigned n,
		  int unknown, const char *key)
{
	char last[400], msg[1000];
	size_t len;

	describe(s, w, last, sizeof(last));
	if (v == V_STOP)
		len = (size_t)snprintf(msg, sizeof(msg), "%s%s", last,
				       n > 1 ? " (not retried)" : "");
	else
		len = (size_t)snprintf(msg, sizeof(msg), "gave up after %u "
				       "attempt%s; the last: %s", n,
				       n > 1 ? "s" : "", last);
	if (unknown)
		snprintf(msg + len, sizeof(msg) - len, "; the outcome is unknown: "
			 "the edit may or may not have been applied; run the "
			 "same edit again with --idempotency-key %s to apply it "
			 "once and learn its outcome", key);
	else if (v != V_STOP)
		snprintf(msg + len, sizeof(msg) - len, "; the edit was not "
			 "applied");
	return cli_fail(what, msg);
}

/*
 * Post body with the key until an answer ends it or o->edit_attempts are
 * spent (editcmd.c's header says which answers are retried). Returns the
 * exit status after printing the answer or saying why not.
 */
static int post(struct cli_session *s, const struct cli_opts *o,
		const struct hclient_req *q, const char *what, const char *key)
{
	struct post_wait w = { 0 };
	enum verdict v = V_STOP;
	int unknown = 0, rc;
	unsigned n;
	uint64_t ms;
	char last[400];

	for (n = 1;; n++) {
		free(w.body);
		w = (struct post_wait){ 0 };
		if ((rc = hclient_request(s->hc, q, on_post, &w)) != 0)
			return cli_fail(what, err_str(rc));
		if (cli_run_until(s, &w.done))
			return cli_fail(what, "no answer");
		v = judge(&w);
		unknown |= v == V_UNKNOWN;
		if (v == V_STOP || v == V_DONE || n >= (unsigned)o->edit_attempts)
			break;
		ms = backoff_ms(&w, n);
		describe(s, &w, last, sizeof(last));
		fprintf(stderr, CLI_PROG ": %s: %s; attempt %u of %ld, retrying "
			"in %" PRIu64 " ms\n", what, last, n + 1, o->edit_attempts, ms);
		uv_sleep((unsigned)ms);
	}
	if (v == V_DONE && !w.err)
		rc = print_answer(what, &w, n);
	else
		rc = report(s, what, &w, v, n, unknown, key);
	free(w.body);
	return rc;
}

int editcmd_main(int argc, char **argv)
{
	struct cli_opts o;
	struct cli_session s;
	struct hclient_req q = { 0 };
	char body[1024], headers[1600], target[256], what[400], key[KEY_MAX + 1];
	const char *token;
	uint64_t seed;
	int rc;

	cli_defaults(&o);
	o.radius_min = 1e-3;
	o.connections = 1;
	if ((rc = cli_parse(argc, argv,
			    "--server --seed --gen --op --x --z --radius "
			    "--strength --height --falloff --token --timeout-ms "
			    "--attempts --idempotency-key",
			    "--server --seed --op --x --z --radius", &o)))
		return rc;
	if ((rc = build_body(&o, body, sizeof(body))))
		return rc;
	if (!api_name_ok(o.seed) || seed_parse(o.seed, strlen(o.seed), &seed))
		return usage("--seed: expected a decimal u64 or 1..64 of "
			     "[A-Za-z0-9_-]");
	token = o.token ? o.token : getenv("TERRAIN_EDIT_TOKEN");
	if (token && !o.token && !token[0])
		token = NULL;
	if (token && !token_ok(token))
		return usage("--token: expected 1..1024 visible ASCII characters");
	if (o.idem_key && !key_ok(o.idem_key))
		return usage("--idempotency-key: expected 1..255 visible ASCII "
			     "characters other than '\"' and '\\'");
	if (o.idem_key)
		snprintf(key, sizeof(key), "%s", o.idem_key);
	else if ((rc = new_key(key)) != 0)
		return cli_fail("uv_random", uv_strerror(rc));
	snprintf(headers, sizeof(headers),
		 "Content-Type: application/json\r\n"
		 "Idempotency-Key: \"%s\"\r\n%s%s%s", key,
		 token ? "Authorization: Bearer " : "", token ? token : "",
		 token ? "\r\n" : "");
	if (api_edits_path(target, sizeof(target), o.seed, o.gen))
		return usage("--seed or --gen too long");
	snprintf(what, sizeof(what), "POST %s%s", o.server, target);
	o.attempts = 1; /* every try is one of ours, with its own verdict */
	if (cli_connect(&s, &o))
		return EXIT_FAILURE;
	q = (struct hclient_req){ .method = "POST", .target = target,
				  .headers = headers, .body = body,
				  .body_len = strlen(body), .once = 1 };
	rc = post(&s, &o, &q, what, key);
	cli_close(&s);
	return rc;
}
