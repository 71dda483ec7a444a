/*
 * editcmd.c - terrain-client edit (editcmd.h).
 *
 *   edit --server URL --seed S [--gen G] --op raise|lower|flatten|set
 *        --x X --z Z --radius R [--strength V] [--height H]
 *        [--falloff linear|smooth] [--token T] [--timeout-ms T]
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
 * out of process listings) and goes as "Authorization: Bearer T". The
 * request is never sent twice: if the connection fails after the write,
 * the edit may or may not have been applied, and the message says so.
 *
 * Output, one "key: value" line each: first_seq, last_seq, world_hash and
 * chunks (the touched chunks as "cx,cz", space-separated).
 */
#include "editcmd.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cli.h"
#include "err.h"
#include "hclient.h"
#include "seed.h"

#define CMD "edit"

struct post_wait {
	int done;
	int status;
	int err;
	char detail[200];
	uint8_t *body;
	size_t len;
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

static void on_post(void *arg, struct hclient_resp *r)
{
	struct post_wait *w = arg;

	w->done = 1;
	w->status = r->status;
	w->err = r->err;
	snprintf(w->detail, sizeof(w->detail), "%s",
		 r->err ? (r->detail ? r->detail : err_str(r->err)) : "");
	if (!r->err)
		w->body = hclient_resp_detach(r, &w->len);
}

static int print_answer(const char *what, const uint8_t *body, size_t len)
{
	struct api_batch b;

	if (api_batch_parse((const char *)body, len, &b))
		return cli_fail(what, "not the answer JSON expected");
	printf("first_seq: %" PRIu64 "\nlast_seq: %" PRIu64 "\n"
	       "world_hash: %016" PRIx64 "\nchunks:", b.first_seq, b.last_seq,
	       b.world_hash);
	for (size_t k = 0; k < b.nchunks; k++)
		printf(" %" PRId32 ",%" PRId32, b.chunks[2 * k],
		       b.chunks[2 * k + 1]);
	printf("\n");
	api_batch_free(&b);
	return fflush(stdout) ? cli_fail("stdout", "write failed") : 0;
}

/* Say what a failed POST means; returns EXIT_FAILURE. */
static int report(const struct cli_session *s, const char *what,
		  const struct post_wait *w)
{
	char text[300], msg[400];

	if (!w->status && strncmp(w->detail, "connect:", 8) == 0) {
		snprintf(text, sizeof(text), "cannot reach the server (%s); is "
			 "it running?", w->detail);
		return cli_fail(hclient_authority(s->hc), text);
	}
	if (!w->status) {
		snprintf(msg, sizeof(msg), "no answer (%s): the edit may or may "
			 "not have been applied", w->detail);
		return cli_fail(what, msg);
	}
	if (w->err)
		return cli_fail(what, w->detail);
	api_error_text(w->body, w->len, text, sizeof(text));
	snprintf(msg, sizeof(msg), "HTTP %d%s%s%s", w->status,
		 text[0] ? ": " : "", text,
		 w->status == 401 ? " (give the token with --token or "
		 "TERRAIN_EDIT_TOKEN)" : "");
	return cli_fail(what, msg);
}

int editcmd_main(int argc, char **argv)
{
	struct cli_opts o;
	struct cli_session s;
	struct post_wait w = { 0 };
	struct hclient_req q = { 0 };
	char body[1024], headers[1200], target[256], what[400];
	const char *token;
	uint64_t seed;
	int rc;

	cli_defaults(&o);
	o.radius_min = 1e-3;
	o.connections = 1;
	if ((rc = cli_parse(argc, argv,
			    "--server --seed --gen --op --x --z --radius "
			    "--strength --height --falloff --token --timeout-ms",
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
	snprintf(headers, sizeof(headers),
		 "Content-Type: application/json\r\n%s%s%s",
		 token ? "Authorization: Bearer " : "", token ? token : "",
		 token ? "\r\n" : "");
	if (api_edits_path(target, sizeof(target), o.seed, o.gen))
		return usage("--seed or --gen too long");
	snprintf(what, sizeof(what), "POST %s%s", o.server, target);
	if (cli_connect(&s, &o))
		return EXIT_FAILURE;
	q = (struct hclient_req){ .method = "POST", .target = target,
				  .headers = headers, .body = body,
				  .body_len = strlen(body), .once = 1 };
	if ((rc = hclient_request(s.hc, &q, on_post, &w)) != 0) {
		cli_close(&s);
		return cli_fail(what, err_str(rc));
	}
	if (cli_run_until(&s, &w.done))
		rc = cli_fail(what, "no answer");
	else if (w.status >= 200 && w.status < 300 && !w.err)
		rc = print_answer(what, w.body, w.len);
	else
		rc = report(&s, what, &w);
	free(w.body);
	cli_close(&s);
	return rc;
}
