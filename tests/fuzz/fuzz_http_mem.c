/*
 * fuzz_http_mem.c - libFuzzer target for everything a client can send, in
 * process and without sockets (make fuzz; make fuzz-long runs it as
 * "http_mem").
 *
 * The server is built here as serve_with() in server/service/main.c builds it
 * (catalog, service_create(), service_replay(), http_server_create()) on a
 * libuv loop of this thread's own, with a data directory in /dev/shm (or
 * /tmp), one worker thread, 64 MiB caches, bakes off, a pipeline of 8,
 * 64 connections, one-second header and idle timeouts and an access log
 * to /dev/null. No listener: each input is the bytes of one connection
 * made by http_server_feed(), which reads them (then EOF, as a client
 * that half-closed) through the same parsing, limits, pipelining,
 * handlers, response ordering, closing and access log as a TCP
 * connection, and hands the server's output to this file. The loop runs
 * (UV_RUN_ONCE) until that connection is freed, at most ANSWER_MS (20
 * ms; FUZZ_ANSWER_MS=N in the environment sets another): past that every
 * connection is closed, as a client that gives up would, and the worker
 * finishes its tile for the cache. The whole server (llhttp, http*.c,
 * routes, request parsing, tiles, maps, edits, events, the edit log) is
 * built with the fuzzer's coverage, ASan and UBSan, so a crash, an
 * out-of-bounds access or undefined behaviour anywhere in it is a
 * finding. common/ comes from build-fuzz/gen: -O2 and no trace-cmp hooks,
 * since the generator, not what this target fuzzes, was most of its time.
 *
 * An input's hash picks, for a quarter of inputs, a read size of 1..64
 * bytes (so that llhttp's callbacks see targets and headers split across
 * reads; each read is its own heap buffer, freed after it), and for one
 * in sixteen a peer that is not loopback (edits then need a token: 403).
 * A custom mutator sets numbers to their edges (LLVMFuzzerCustomMutator()).
 *
 * Checks on the output: it parses as HTTP/1.1 responses (llhttp in
 * response mode; the input's methods, parsed as the server does, say which
 * answers are to HEAD and so carry no body), there are no more final
 * answers than requests plus one (a protocol error), and once the server
 * has closed, no answer was cut short, and nothing was written after the
 * server's shutdown. A malformed head, a Content-Length that disagrees
 * with the body or a CR or LF reflected into a header each fail that.
 *
 * State carries over between inputs (caches, worlds, the edit log) as it
 * does between clients; a finding usually reproduces with its input
 * alone. Writes never queue here (http.h), so the uv_write() paths are
 * fuzz_http's, which sends each input over a real socket to a server
 * thread: slower, but the whole I/O path. Leak checking is off: the
 * server keeps what it caches.
 *
 *   make fuzz && build-fuzz/fuzz_http_mem -dict=tests/fuzz_http_mem.dict \
 *       -max_total_time=600 build-fuzz/corpus-http-mem tests/fuzz_http_mem
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <llhttp.h>
#include <uv.h>

#include "edits/edits.h"
#include "http/http.h"
#include "service/service.h"
#include "worlds/catalog.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);

#ifndef ANSWER_MS
#define ANSWER_MS 20 /* FUZZ_ANSWER_MS overrides */
#endif
#define MAX_REQS 1024

static uv_loop_t loop;
static struct http_server *server;
static uv_timer_t bound;       /* ends an input's wait for its answers */
static uint64_t answer_ms = ANSWER_MS;
static int cut;                /* the bound ran out: answers cut short */
static llhttp_settings_t req_cb, res_cb;

/* One connection's requests and answers, as two parsers see them. */
struct exchange {
	llhttp_t req, res;
	unsigned char method[MAX_REQS];  /* of each request, in order */
	size_t nreq, nres;               /* requests begun, final answers */
	int shut, closed;                /* the server's FIN; freed */
};

const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

const char *__ubsan_default_options(void)
{
	return "print_stacktrace=1";
}

_Noreturn static void fail(const char *what, const char *why)
{
	fprintf(stderr, "fuzz_http_mem: %s: %s\n", what, why);
	abort();
}

static int on_request_method(llhttp_t *p)
{
	struct exchange *x = p->data;

	if (x->nreq < MAX_REQS)
		x->method[x->nreq] = p->method;
	x->nreq++;
	return 0;
}

_Noreturn static void bad_answer(const struct exchange *x, llhttp_errno_t e)
{
	fprintf(stderr, "fuzz_http_mem: answer %zu of %zu requests: %s: %s\n", x->nres + 1,
		x->nreq, llhttp_errno_name(e), llhttp_get_error_reason(&x->res));
	abort();
}

/* Every answer is HTTP/1.1. One to HEAD has a Content-Length but no body:
 * 1 skips it. */
static int on_answer_head(llhttp_t *p)
{
	struct exchange *x = p->data;

	if (p->http_major != 1 || p->http_minor != 1)
		bad_answer(x, HPE_INVALID_VERSION);
	return p->status_code >= 200 && x->nres < x->nreq && x->nres < MAX_REQS &&
	       x->method[x->nres] == HTTP_HEAD;
}

static int on_answer_done(llhttp_t *p)
{
	struct exchange *x = p->data;

	if (p->status_code >= 200 && ++x->nres > x->nreq + 1) {
		fprintf(stderr, "fuzz_http_mem: %zu answers to %zu requests\n", x->nres, x->nreq);
		abort();
	}
	return 0;
}

static int on_write(void *arg, const void *data, size_t len)
{
	struct exchange *x = arg;
	llhttp_errno_t e;

	if (x->shut || x->closed)
		fail("write", "after the server's shutdown or close");
	if ((e = llhttp_execute(&x->res, data, len)) != HPE_OK)
		bad_answer(x, e);
	return 0;
}

static void on_shutdown(void *arg)
{
	((struct exchange *)arg)->shut = 1;
}

static void on_closed(void *arg)
{
	((struct exchange *)arg)->closed = 1;
}

/* The client gives up: every connection closes now. */
static void on_bound(uv_timer_t *t)
{
	(void)t;
	cut = 1;
	http_server_close_all(server);
}

/* FNV-1a of the input: picks its read size and peer. */
static uint32_t input_hash(const uint8_t *data, size_t size)
{
	uint32_t h = 2166136261u;

	while (size--)
		h = (h ^ *data++) * 16777619u;
	return h;
}

/* ---- numeric edges ---------------------------------------------------- */

/* The edges of every number a request carries: 0, -1, the int32, uint32,
 * int64 and uint64 limits and one past them, 2^53 + 1, 30 digits. */
static const char *const edges[] = {
	"0", "-1", "1", "2147483647", "2147483648", "-2147483648", "-2147483649",
	"4294967295", "4294967296", "9007199254740993", "9223372036854775807",
	"9223372036854775808", "-9223372036854775808", "18446744073709551615",
	"18446744073709551616", "123456789012345678901234567890",
};

/* Where a number is, or a value is empty ("x=" before '&', ' ', '\r', '/',
 * ',' or the end): the spans an edge may replace. */
static size_t number_spans(const uint8_t *d, size_t n, size_t *at, size_t *len, size_t max)
{
	size_t i = 0, k = 0, j;

	while (i < n && k < max) {
		if (d[i] >= '0' && d[i] <= '9') {
			j = i > 0 && d[i - 1] == '-' ? i - 1 : i;
			while (i < n && d[i] >= '0' && d[i] <= '9')
				i++;
			at[k] = j;
			len[k++] = i - j;
		} else if (d[i] == '=' && (i + 1 == n || strchr("& \r/,", d[i + 1]))) {
			at[k] = i + 1;
			len[k++] = 0;
			i++;
		} else {
			i++;
		}
	}
	return k;
}

/*
 * One mutation in four sets a number of the input (a path segment, a
 * query value, a JSON field, a header) or an empty value to one of
 * edges[]: the class of bug that a parameter's edge crashes is what this
 * target is for, and libFuzzer's own mutations reach an exact 20-digit
 * value only by chance (its ChangeASCIIInteger keeps the width; a
 * dictionary word must land exactly in the value). The rest are
 * libFuzzer's, with the dictionary.
 */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	size_t at[64], len[64], n, k, e, elen;

	if (seed % 4 != 0 || !(n = number_spans(data, size, at, len, 64)))
		return LLVMFuzzerMutate(data, size, max_size);
	k = (seed / 4) % n;
	e = (seed / 4 / n) % (sizeof(edges) / sizeof(edges[0]));
	elen = strlen(edges[e]);
	if (size - len[k] + elen > max_size)
		return LLVMFuzzerMutate(data, size, max_size);
	memmove(data + at[k] + elen, data + at[k] + len[k], size - at[k] - len[k]);
	memcpy(data + at[k], edges[e], elen);
	return size - len[k] + elen;
}

/* A fresh directory for the edit log, in memory where there is a tmpfs
 * (an fsync per edit on a disk would be most of an execution). */
static char *data_dir(void)
{
	static char shm[] = "/dev/shm/fuzz_http_mem.XXXXXX", tmp[] = "/tmp/fuzz_http_mem.XXXXXX";
	char *d = mkdtemp(shm);

	if (!d && !(d = mkdtemp(tmp)))
		fail("mkdtemp", strerror(errno));
	return d;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct service_config rc;
	struct http_limits lim;
	struct http_handler h;
	struct catalog *cat;
	struct service *rt;
	char err[512], warn[512];
	const char *ms;

	(void)argc;
	(void)argv;
	llhttp_settings_init(&req_cb);
	req_cb.on_method_complete = on_request_method;
	llhttp_settings_init(&res_cb);
	res_cb.on_headers_complete = on_answer_head;
	res_cb.on_message_complete = on_answer_done;
	if ((ms = getenv("FUZZ_ANSWER_MS")) && *ms)
		answer_ms = strtoull(ms, NULL, 10);
	setenv("UV_THREADPOOL_SIZE", "1", 1); /* before the loop's first work */
	service_config_init(&rc);
	rc.api.response_bytes = 4 << 20;
	rc.tiles = (struct tiles_config){ .cache_bytes = 64 << 20, .region_bytes = 64 << 20,
					  .max_age = 60, .max_generations = 64, .bake_after = 0 };
	rc.edits.rate = 1000;
	rc.edits.area_km2 = 200;
	rc.edits.deadline_ms = 5000;
	rc.snapshots.every = 1000;
	rc.log.data_dir = data_dir();
	if (uv_loop_init(&loop) < 0 || uv_timer_init(&loop, &bound) < 0)
		fail("uv_loop_init", "failed");
	if (catalog_load(NULL, &cat, err, sizeof(err)) < 0)
		fail("catalog", err);
	if (service_create(&loop, cat, &rc, &rt, err, sizeof(err)) < 0)
		fail("service_create", err);
	if (service_replay(rt, err, sizeof(err), warn, sizeof(warn)) < 0)
		fail("service_replay", err);
	service_handler(rt, &h);
	http_limits_default(&lim);
	lim.max_connections = 64;
	lim.idle_timeout_ms = 1000;
	lim.header_timeout_ms = 1000;
	lim.max_pipeline = 8;
	lim.max_body = EDITS_MAX_BODY;
	lim.node_name = "fuzz";
	if (!(lim.access_log = fopen("/dev/null", "w")))
		fail("/dev/null", strerror(errno));
	if (http_server_create(&loop, &lim, &h, &server) < 0)
		fail("http_server_create", "out of memory");
	service_set_server(rt, server);
	fprintf(stderr, "fuzz_http_mem: %zu presets, data in %s\n", catalog_count(cat),
		rc.log.data_dir);
	return 0; /* the server lives as long as the process */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct exchange x;
	struct sockaddr_in other = { .sin_family = AF_INET };
	uint32_t h = input_hash(data, size);
	struct http_feed f = { data, size, h % 4 == 0 ? 1 + (h >> 8) % 64 : 0, NULL,
			       on_write, on_shutdown, on_closed, &x };
	llhttp_errno_t e;

	x.nreq = x.nres = 0;
	x.shut = x.closed = 0;
	llhttp_init(&x.req, HTTP_REQUEST, &req_cb);
	x.req.data = &x;
	(void)llhttp_execute(&x.req, (const char *)data, size);
	llhttp_init(&x.res, HTTP_RESPONSE, &res_cb);
	x.res.data = &x;
	if (h % 16 == 1) {
		other.sin_addr.s_addr = htonl(0xc0000201); /* 192.0.2.1 */
		f.peer = (const struct sockaddr *)&other;
	}
	if (http_server_feed(server, &f) < 0)
		fail("http_server_feed", "failed");
	cut = 0;
	uv_update_time(&loop);
	uv_timer_start(&bound, on_bound, answer_ms, 0);
	while (!x.closed)
		uv_run(&loop, UV_RUN_ONCE);
	uv_timer_stop(&bound);
	if (!cut && (e = llhttp_finish(&x.res)) != HPE_OK)
		bad_answer(&x, e);
	return 0;
}
