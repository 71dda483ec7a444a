/*
 * cli.c - options, session set-up and messages of the network commands
 * (cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hclient.h"
#include "seed.h"
#include "terrain.h"
#include "view.h"

enum kind { K_STR, K_DBL, K_LONG, K_U64, K_FLAG };

struct opt {
	const char *name;
	enum kind kind;
	size_t off;
	double lo, hi; /* numeric range, inclusive */
};

#define O(f) offsetof(struct cli_opts, f)

static const struct opt table[] = {
	{ "--server", K_STR, O(server), 0, 0 },
	{ "--cacert", K_STR, O(cacert), 0, 0 },
	{ "--seed", K_STR, O(seed), 0, 0 },
	{ "--gen", K_STR, O(gen), 0, 0 },
	{ "-o", K_STR, O(out), 0, 0 },
	{ "--path", K_STR, O(path), 0, 0 },
	{ "--op", K_STR, O(op), 0, 0 },
	{ "--falloff", K_STR, O(falloff), 0, 0 },
	{ "--token", K_STR, O(token), 0, 0 },
	{ "--idempotency-key", K_STR, O(idem_key), 0, 0 },
	{ "--attempts", K_LONG, O(edit_attempts), 1, 1000 },
	{ "--x", K_DBL, O(x), -1e15, 1e15 },
	{ "--z", K_DBL, O(z), -1e15, 1e15 },
	{ "--radius", K_DBL, O(radius), 1e-3, 1e6 }, /* and radius_min */
	{ "--strength", K_DBL, O(strength), -1e15, 1e15 },
	{ "--height", K_DBL, O(height), -1e15, 1e15 },
	{ "--d0", K_DBL, O(d0), 1e-3, 1e9 },
	{ "--speed", K_DBL, O(speed), 1e-3, 1e6 },
	{ "--duration", K_DBL, O(duration), 1e-3, 86400 },
	{ "--revalidate", K_DBL, O(revalidate), 0, 1e9 },
	{ "--lmax", K_LONG, O(lmax), 0, 12 },
	{ "--connections", K_LONG, O(connections), 1, 256 },
	{ "--pipeline", K_LONG, O(pipeline), 1, 64 },
	{ "--players", K_LONG, O(players), 1, 100000 },
	{ "--worlds", K_LONG, O(worlds), 1, 1000000 },
	{ "--step-ms", K_LONG, O(step_ms), 1, 3600000 },
	{ "--batch-lod", K_LONG, O(batch_lod), -1, 12 },
	{ "--timeout-ms", K_LONG, O(timeout_ms), 1, 3600000 },
	{ "--lod", K_LONG, O(lod), 0, 12 },
	{ "--cx0", K_LONG, O(cx0), INT32_MIN, INT32_MAX },
	{ "--cz0", K_LONG, O(cz0), INT32_MIN, INT32_MAX },
	{ "--cx1", K_LONG, O(cx1), INT32_MIN, INT32_MAX },
	{ "--cz1", K_LONG, O(cz1), INT32_MIN, INT32_MAX },
	{ "--seed-base", K_U64, O(seed_base), 0, 0 },
	{ "--quiet", K_FLAG, O(quiet), 0, 0 },
	{ "--exact", K_FLAG, O(exact), 0, 0 },
	{ "--precisions", K_STR, O(precisions), 0, 0 },
	{ "--format", K_LONG, O(format), 1, 7 },
	{ "--local", K_FLAG, O(local), 0, 0 },
};

void cli_defaults(struct cli_opts *o)
{
	*o = (struct cli_opts){ .radius = 1024, .radius_min = 1,
				.strength = NAN, .height = NAN, .d0 = 256, .speed = 10,
				.duration = 5, .revalidate = -1, .lmax = 6,
				.connections = 4, .pipeline = 8, .players = 10,
				.worlds = 10, .step_ms = 500, .batch_lod = 2,
				.timeout_ms = 10000, .edit_attempts = 8,
				.seed_base = 1 };
}

int cli_fail(const char *what, const char *detail)
{
	fprintf(stderr, CLI_PROG ": %s: %s\n", what, detail);
	return EXIT_FAILURE;
}

static int usage(const char *cmd, const char *msg, const char *arg)
{
	fprintf(stderr, CLI_PROG " %s: %s%s%s (see " CLI_PROG " %s --help)\n",
		cmd, msg, arg ? " " : "", arg ? arg : "", cmd);
	return CLI_EXIT_USAGE;
}

/* Is name one of the space-separated words of list? */
static int listed(const char *list, const char *name, size_t n)
{
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, " ");

		if (w == n && memcmp(p, name, n) == 0)
			return 1;
		p += w;
		p += strspn(p, " ");
	}
	return 0;
}

static int set_value(const struct opt *d, const char *val, struct cli_opts *o)
{
	char *base = (char *)o + d->off, *end;
	double dv;
	long lv;

	errno = 0;
	switch (d->kind) {
	case K_STR:
		*(const char **)(void *)base = val;
		return 1;
	case K_DBL:
		dv = strtod(val, &end);
		if (end == val || *end || !isfinite(dv) || dv < d->lo || dv > d->hi)
			return 0;
		*(double *)(void *)base = dv;
		return 1;
	case K_LONG:
		lv = strtol(val, &end, 10);
		if (end == val || *end || errno || lv < d->lo || lv > d->hi)
			return 0;
		*(long *)(void *)base = lv;
		return 1;
	case K_U64:
		return seed_parse(val, strlen(val), (uint64_t *)(void *)base) == 0 &&
		       val[strspn(val, "0123456789")] == 0;
	default:
		*(int *)(void *)base = 1;
		return 1;
	}
}

static const struct opt *lookup(const char *name, size_t n)
{
	for (size_t k = 0; k < sizeof(table) / sizeof(table[0]); k++)
		if (strlen(table[k].name) == n && memcmp(table[k].name, name, n) == 0)
			return &table[k];
	return NULL;
}

int cli_parse(int argc, char **argv, const char *allowed,
	      const char *required, struct cli_opts *o)
{
	char given[sizeof(table) / sizeof(table[0])] = { 0 };

	for (int k = 1; k < argc; k++) {
		const char *a = argv[k], *eq = strchr(a, '=');
		size_t n = eq && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
		const struct opt *d = lookup(a, n);
		const char *val;

		/* every command with --server takes --cacert */
		if (!d || !(listed(allowed, a, n) ||
			    (d->off == O(cacert) && listed(allowed, "--server", 8))))
			return usage(argv[0], "unknown option", a);
		if (d->kind == K_FLAG && !eq) {
			val = "";
		} else if (eq && a[1] == '-') {
			val = eq + 1;
		} else if (k + 1 < argc) {
			val = argv[++k];
		} else {
			return usage(argv[0], "missing value for", a);
		}
		if (!set_value(d, val, o) ||
		    (d->off == O(radius) && o->radius < o->radius_min)) {
			fprintf(stderr, CLI_PROG " %s: bad value for %.*s: '%s'\n",
				argv[0], (int)n, a, val);
			return CLI_EXIT_USAGE;
		}
		given[d - table] = 1;
	}
	for (size_t k = 0; k < sizeof(table) / sizeof(table[0]); k++)
		if (!given[k] && listed(required, table[k].name,
					strlen(table[k].name)))
			return usage(argv[0], "missing", table[k].name);
	if (o->gen && !api_name_ok(o->gen))
		return usage(argv[0], "bad --gen, expected [A-Za-z0-9_-]{1,64}:",
			     o->gen);
	return 0;
}

/* ---- session ---- */

struct info_wait {
	int done;
	int status;
	char detail[200];
	uint8_t *body;
	size_t len;
};

static void on_info(void *arg, struct hclient_resp *r)
{
	struct info_wait *w = arg;

	w->done = 1;
	w->status = r->status;
	snprintf(w->detail, sizeof(w->detail), "%s",
		 r->err ? (r->detail ? r->detail : err_str(r->err)) : "");
	if (!r->err)
		w->body = hclient_resp_detach(r, &w->len);
}

int cli_run_until(struct cli_session *s, const int *flag)
{
	while (!*flag)
		if (!uv_run(&s->loop, UV_RUN_ONCE) && !*flag)
			return -1;
	return 0;
}

static int world_info(struct cli_session *s, const struct cli_opts *o,
		      const char *seed)
{
	struct info_wait w = { 0 };
	char target[256], text[256], what[320];
	int rc;

	api_info_path(target, sizeof(target), seed, o->gen);
	snprintf(what, sizeof(what), "GET %s%s", o->server, target);
	if ((rc = hclient_get(s->hc, target, NULL, on_info, &w)) != 0)
		return cli_fail(what, err_str(rc));
	if (cli_run_until(s, &w.done))
		return cli_fail(what, "no answer");
	rc = EXIT_FAILURE;
	if (!w.status && strncmp(w.detail, "tls:", 4) == 0) {
		snprintf(text, sizeof(text), "TLS failed (%.180s); a certificate "
			 "from a CA of your own needs --cacert FILE", w.detail);
		cli_fail(hclient_authority(s->hc), text);
	} else if (!w.status) {
		snprintf(text, sizeof(text), "cannot reach the server (%s); "
			 "is it running?", w.detail);
		cli_fail(hclient_authority(s->hc), text);
	} else if (w.status != 200) {
		char msg[300];

		api_error_text(w.body, w.len, text, sizeof(text));
		snprintf(msg, sizeof(msg), "HTTP %d%s%s", w.status,
			 text[0] ? ": " : "", text);
		cli_fail(what, msg);
	} else if (w.detail[0]) {
		cli_fail(what, w.detail);
	} else if (api_world_parse((const char *)w.body, w.len, &s->wi)) {
		cli_fail(what, "not the world info JSON expected");
	} else {
		rc = 0;
	}
	free(w.body);
	return rc;
}

int cli_connect(struct cli_session *s, const struct cli_opts *o)
{
	struct hclient_opts ho;
	const char *detail;
	int rc;

	memset(s, 0, sizeof(*s));
	signal(SIGPIPE, SIG_IGN);
	if ((rc = uv_loop_init(&s->loop)) < 0)
		return cli_fail("uv_loop_init", uv_strerror(rc));
	s->open = 1;
	hclient_opts_default(&ho);
	ho.connections = (unsigned)o->connections;
	ho.pipeline = (unsigned)o->pipeline;
	ho.timeout_ms = (uint64_t)o->timeout_ms;
	if (o->attempts)
		ho.attempts = o->attempts;
	/* as curl(1) does: --cacert, else CURL_CA_BUNDLE, else SSL_CERT_FILE */
	ho.cacert = o->cacert;
	if (!ho.cacert || !*ho.cacert)
		ho.cacert = getenv("CURL_CA_BUNDLE");
	if (!ho.cacert || !*ho.cacert)
		ho.cacert = getenv("SSL_CERT_FILE");
	if (ho.cacert && !*ho.cacert)
		ho.cacert = NULL;
	if ((rc = hclient_create(&s->loop, o->server, &ho, &s->hc, &detail))) {
		cli_fail(o->server, detail ? detail : err_str(rc));
		cli_close(s);
		return EXIT_FAILURE;
	}
	return 0;
}

int cli_open(struct cli_session *s, const struct cli_opts *o,
	     const char *seed)
{
	uint64_t v;

	memset(s, 0, sizeof(*s));
	if (!api_name_ok(seed) || seed_parse(seed, strlen(seed), &v))
		return cli_fail(seed, "bad seed: expected a decimal u64 or "
				"1..64 of [A-Za-z0-9_-]");
	if (cli_connect(s, o))
		return EXIT_FAILURE;
	if (world_info(s, o, seed)) {
		cli_close(s);
		return EXIT_FAILURE;
	}
	return 0;
}

void cli_close(struct cli_session *s)
{
	if (!s->open)
		return;
	hclient_close(s->hc);
	s->hc = NULL;
	uv_run(&s->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&s->loop) < 0)
		fprintf(stderr, CLI_PROG ": warning: handles left open\n");
	s->open = 0;
}

int cli_view_params(const struct cli_opts *o, const struct cli_session *s,
		    const char *seed, struct view_params *p)
{
	uint64_t value;

	if (seed_parse(seed, strlen(seed), &value))
		return cli_fail(seed, "bad seed");
	if (ceil(2 * o->radius / (double)(1u << s->wi.chunk_log2)) + 1 >
	    CLI_MAX_SPAN) {
		fprintf(stderr, CLI_PROG ": --radius: at most %d chunks across "
			"(%g m here)\n", CLI_MAX_SPAN - 1,
			(CLI_MAX_SPAN - 1) / 2.0 * (1u << s->wi.chunk_log2));
		return CLI_EXIT_USAGE;
	}
	*p = (struct view_params){
		.ring = { .chunk_log2 = s->wi.chunk_log2,
			  .max_lod = s->wi.max_lod, .d0 = o->d0,
			  .lmax = (int)o->lmax, .radius = o->radius },
		.seed = seed, .seed_value = value, .gen = o->gen,
		.fingerprint = s->wi.fingerprint, .batch_lod = (int)o->batch_lod,
		.revalidate_ms = o->revalidate < 0 ? -1 :
				 (long)(o->revalidate * 1000),
		.format = o->format == 1 || o->format == 3 || o->format == 5 ? (int)o->format : 0,
	};
	if (o->format && o->format % 2 == 0) {
		fprintf(stderr, CLI_PROG ": --format: 1 (the lz21 form of tile versions 1 and 2), "
			"3 (versions 3 and 4), 5 (versions 5 and 6) or 7 (the current, the "
			"default)\n");
		return CLI_EXIT_USAGE;
	}
	if (!o->exact && view_parse_precisions(o->precisions ? o->precisions : VIEW_PRECISIONS,
					       p->precision_um)) {
		fprintf(stderr, CLI_PROG ": --precisions: expected a comma list of 1cm, 5cm, "
			"10cm, 50cm, 1m (one per LOD from 0, at most %d)\n", VIEW_LODS);
		return CLI_EXIT_USAGE;
	}
	return 0;
}

int cli_local_world(const struct cli_opts *o, const struct cli_session *s, uint64_t seed,
		    struct terrain_world **out)
{
	const char *gen = o->gen ? o->gen : "default";
	struct terrain_world_info info = { .size = sizeof(info) };
	char msg[400], why[512];
	int rc;

	*out = NULL;
	if ((rc = terrain_world_create(gen, seed, out)) != 0) {
		snprintf(why, sizeof(why), "generator %s: %s (local mode generates only the "
			 "built-in presets)", gen, terrain_strerror(rc));
		return cli_fail("--local", why);
	}
	terrain_world_info(*out, &info);
	if (info.fingerprint != s->wi.fingerprint) {
		snprintf(why, sizeof(why), "generator %s: the server's fingerprint is %016" PRIx64
			 ", this client's %016" PRIx64 ": another world; refusing to generate it",
			 gen, s->wi.fingerprint, info.fingerprint);
		goto refuse;
	}
	if ((rc = terrain_selfcheck(msg, sizeof(msg))) != 0) {
		snprintf(why, sizeof(why), "this client's own self-check fails: %s", msg);
		goto refuse;
	}
	if (!s->wi.has_selfcheck) {
		snprintf(why, sizeof(why), "the server does not say which golden tiles it "
			 "checked (no \"selfcheck\" in its world info): refusing to generate "
			 "its world");
		goto refuse;
	}
	if (s->wi.selfcheck != terrain_selfcheck_digest()) {
		snprintf(why, sizeof(why), "the server checked other golden tiles at start "
			 "(digest %016" PRIx64 ", this client's %016" PRIx64 "): refusing to "
			 "generate its world", s->wi.selfcheck, terrain_selfcheck_digest());
		goto refuse;
	}
	return 0;
refuse:
	terrain_world_destroy(*out);
	*out = NULL;
	return cli_fail("--local", why);
}

double cli_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

const char *cli_protocol(int http_version)
{
	switch (http_version) {
	case 10: return "HTTP/1.0";
	case 11: return "HTTP/1.1";
	case 20: return "HTTP/2";
	case 30: return "HTTP/3";
	default: return "no answer";
	}
}

uint64_t cli_percentile(const uint64_t *sorted, size_t n, double p)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)ceil(p / 100 * (double)n);
	return sorted[k ? k - 1 : 0];
}
