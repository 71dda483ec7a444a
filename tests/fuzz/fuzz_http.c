/*
 * fuzz_http.c - libFuzzer target for everything a client can send
 * (make fuzz).
 *
 * The real server runs in this process: server/service/main.c is compiled with its
 * main() renamed (-Dmain=terrain_server_main) and started on a thread with
 * ordinary options, on a free loopback port, a temporary data directory,
 * one worker and short timeouts. Each input is sent as the bytes of one
 * TCP connection, which is then half-closed; the answer is read until the
 * server closes or 500 ms pass (a cold tile may take longer: the client
 * then leaves mid-generation, also a path worth taking). The whole server
 * (llhttp, http.c, routes, cache, edits, tiles) is built with the
 * fuzzer's coverage and AddressSanitizer plus UBSan, so a crash, an
 * out-of-bounds access or undefined behaviour anywhere in it is a finding.
 * What comes back must parse as HTTP/1.1 responses (llhttp in response
 * mode; the input's methods, parsed as the server does, say which answers
 * are to HEAD and so carry no body), and when the server has closed, it
 * must not have cut an answer short. A malformed head, a Content-Length
 * that disagrees with the body, or a CR or LF reflected into a header
 * would each fail that.
 *
 * State carries over between inputs (the cache, the edit log), as it does
 * between clients; a finding is reproduced by running its input alone,
 * which usually suffices. Leak checking is off: the server keeps what it
 * cached until the process exits.
 *
 *   make fuzz && build-fuzz/fuzz_http -dict=tests/fuzz_http.dict \
 *       -max_total_time=600 build-fuzz/corpus-http tests/fuzz_http
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <llhttp.h>

int terrain_server_main(int argc, char **argv);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

#define ANSWER_MS 500
#define MAX_REQS 1024

static struct sockaddr_in server_addr;
static llhttp_settings_t req_cb, res_cb;

/* One connection's requests and answers, as two parsers see them. */
struct exchange {
	llhttp_t req, res;
	unsigned char method[MAX_REQS];  /* of each request, in order */
	size_t nreq, nres;               /* requests begun, final answers */
};

const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

_Noreturn static void fail(const char *what)
{
	fprintf(stderr, "fuzz_http: %s (%s)\n", what, strerror(errno));
	abort();
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A loopback port nobody listens on right now. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		fail("no free port");
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void *run_server(void *arg)
{
	char **argv = arg;
	int argc = 0;

	while (argv[argc])
		argc++;
	exit(terrain_server_main(argc, argv)); /* only if it could not start */
}

static int connect_server(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		fail("socket");
	if (connect(fd, (struct sockaddr *)&server_addr, sizeof(server_addr)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int on_request_method(llhttp_t *p)
{
	struct exchange *x = p->data;

	if (x->nreq < MAX_REQS)
		x->method[x->nreq] = p->method;
	x->nreq++;
	return 0;
}

_Noreturn static void bad_answer(const struct exchange *x, llhttp_errno_t e);

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

	if (p->status_code >= 200)
		x->nres++;
	return 0;
}

_Noreturn static void bad_answer(const struct exchange *x, llhttp_errno_t e)
{
	fprintf(stderr, "fuzz_http: answer %zu of %zu requests: %s: %s\n", x->nres + 1,
		x->nreq, llhttp_errno_name(e), llhttp_get_error_reason(&x->res));
	abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the data directory in memory where there is a tmpfs: an fsync per
	 * edit on a disk was much of an execution's time */
	static char port[16], shm[] = "/dev/shm/fuzz_http.XXXXXX", tmp[] = "/tmp/fuzz_http.XXXXXX";
	static char *args[] = {
		"terrain-server", "serve", "--bind", "127.0.0.1", "--port", port,
		"--data-dir", NULL, "--workers", "1", "--cache-mb", "64",
		"--region-cache-mb", "64", "--header-timeout", "1",
		"--idle-timeout", "1", NULL
	};
	pthread_t t;
	int i, fd;

	(void)argc;
	(void)argv;
	llhttp_settings_init(&req_cb);
	req_cb.on_method_complete = on_request_method;
	llhttp_settings_init(&res_cb);
	res_cb.on_headers_complete = on_answer_head;
	res_cb.on_message_complete = on_answer_done;
	if (!(args[7] = mkdtemp(shm)) && !(args[7] = mkdtemp(tmp)))
		fail("mkdtemp");
	snprintf(port, sizeof(port), "%d", free_port());
	server_addr.sin_family = AF_INET;
	server_addr.sin_port = htons((uint16_t)atoi(port));
	server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (pthread_create(&t, NULL, run_server, args) != 0)
		fail("pthread_create");
	for (i = 0; i < 500; i++) {
		if ((fd = connect_server()) >= 0) {
			close(fd);
			fprintf(stderr, "fuzz_http: server on 127.0.0.1:%s, data in %s\n",
				port, args[7]);
			return 0;
		}
		usleep(10 * 1000);
	}
	fail("the server did not start");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct exchange x;
	char buf[16384];
	int64_t end = now_ms() + ANSWER_MS;
	size_t off = 0;
	int fd = connect_server(), eof = 0;
	llhttp_errno_t e;

	if (fd < 0)
		fail("connect: the server is gone");
	/* Send what the kernel takes now; a server that stops reading (a full
	 * pipeline, a refused request) must not stall the fuzzer. */
	while (off < size) {
		ssize_t n = send(fd, data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	shutdown(fd, SHUT_WR);

	/* The methods of the requests the server got, in order. */
	x.nreq = x.nres = 0;
	llhttp_init(&x.req, HTTP_REQUEST, &req_cb);
	x.req.data = &x;
	if (off > 0)
		(void)llhttp_execute(&x.req, (const char *)data, off);
	llhttp_init(&x.res, HTTP_RESPONSE, &res_cb);
	x.res.data = &x;

	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = end - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0) {
			eof = n == 0;
			break;
		}
		if ((e = llhttp_execute(&x.res, buf, (size_t)n)) != HPE_OK)
			bad_answer(&x, e);
	}
	close(fd);
	if (eof && (e = llhttp_finish(&x.res)) != HPE_OK)
		bad_answer(&x, e);
	return 0;
}
