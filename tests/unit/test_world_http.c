/*
 * test_world_http.c - edits end to end against the real binary on
 * 127.0.0.1: tiles change exactly where a brush reaches and stay seamless
 * and nested; the raise at a brush centre is its strength; 16 concurrent
 * clients get distinct contiguous sequence numbers and a world hash that a
 * replay of GET /edits recomputes; acknowledged edits survive kill -9 with
 * the same hash and tiles; event streams deliver every batch once, in
 * order, and resume from Last-Event-ID.
 *
 * Servers are child processes (killed when this process dies, by
 * PR_SET_PDEATHSIG); each has its own data directory under /tmp. Tiles are
 * decoded and hashes recomputed with libcommon. Nothing measures time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "batch.h"
#include "edit.h"
#include "err.h"
#include "tile.h"

#include "harness.h"

#define IO_TIMEOUT_S 60

/* ---- HTTP ----------------------------------------------------------------------- */

/* The first place text occurs in s, ignoring case, or NULL. */
static const char *find_ci(const char *s, const char *text)
{
	size_t n = strlen(text);

	for (; *s; s++)
		if (!strncasecmp(s, text, n))
			return s;
	return NULL;
}

/* Read one answer by its Content-Length. */
static void read_resp(struct harness_reader *r, struct harness_resp *rp)
{
	assert_int_equal(harness_read_resp(r, rp, 0), 0);
}

/* A request on a kept-alive connection. */
static void exchange(struct harness_reader *r, const char *method, const char *path,
		     const char *headers, const char *body, struct harness_resp *rp)
{
	char head[1024];
	int n;

	n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s"
		     "Content-Length: %zu\r\n\r\n", method, path, headers ? headers : "",
		     body ? strlen(body) : 0);
	harness_send(r->fd, head, (size_t)n);
	if (body)
		harness_send(r->fd, body, strlen(body));
	read_resp(r, rp);
}

/* One request on a new connection. */
static void request(int port, const char *method, const char *path,
		    const char *headers, const char *body, struct harness_resp *rp)
{
	struct harness_reader r;

	harness_reader_init(&r, harness_connect(port, 0));
	exchange(&r, method, path, headers, body, rp);
	close(r.fd);
	free(r.buf);
}

#define JSON_CT "Content-Type: application/json\r\n"

/* POST one batch; returns the parsed answer (cJSON_Delete it). */
static cJSON *post(int port, const char *world, const char *batch, int want)
{
	char path[256];
	struct harness_resp rp;
	cJSON *o;

	snprintf(path, sizeof(path), "/v1/worlds/%s/edits", world);
	request(port, "POST", path, JSON_CT, batch, &rp);
	if (rp.status != want)
		fail_msg("POST %s: %d %s", batch, rp.status, rp.body);
	o = cJSON_Parse(rp.body);
	free(rp.body);
	assert_non_null(o);
	return o;
}

static cJSON *get_json(int port, const char *path)
{
	struct harness_resp rp;
	cJSON *o;

	request(port, "GET", path, NULL, NULL, &rp);
	assert_int_equal(rp.status, 200);
	o = cJSON_Parse(rp.body);
	free(rp.body);
	assert_non_null(o);
	return o;
}

static uint64_t num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	assert_true(cJSON_IsNumber(v));
	return (uint64_t)v->valuedouble;
}

static uint64_t hex(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	assert_true(cJSON_IsString(v));
	assert_int_equal(strlen(v->valuestring), 16);
	return strtoull(v->valuestring, NULL, 16);
}

/* The identity tile body (malloc'd, *len) of a chunk. */
static uint8_t *tile_bytes(int port, const char *world, int lod, int cx, int cz,
			   size_t *len)
{
	char path[256];
	struct harness_resp rp;

	snprintf(path, sizeof(path), "/v1/worlds/%s/chunks/%d/%d/%d", world, lod, cx, cz);
	request(port, "GET", path, NULL, NULL, &rp);
	assert_int_equal(rp.status, 200);
	*len = rp.body_len;
	return (uint8_t *)rp.body;
}

static void get_tile(int port, const char *world, int lod, int cx, int cz,
		     struct tile *t)
{
	size_t len;
	uint8_t *b = tile_bytes(port, world, lod, cx, cz, &len);

	assert_int_equal(tile_decode(b, len, t), 0);
	free(b);
}

/* ---- tiles ---------------------------------------------------------------------- */

static struct harness_server main_srv;

static void test_world_http_corner_edit_changes_exactly_four_chunks(void **state)
{
	static const int lods[] = { 0, 3 };
	uint8_t *before[2][16];
	size_t blen[2][16];
	int l, i;
	cJSON *o;

	(void)state;
	for (l = 0; l < 2; l++)
		for (i = 0; i < 16; i++)
			before[l][i] = tile_bytes(main_srv.port, "corner", lods[l],
						  i % 4 - 1, i / 4 - 1, &blen[l][i]);
	o = post(main_srv.port, "corner",
		 "{\"edits\":[{\"op\":\"raise\",\"x\":256,\"z\":256,\"radius\":40,\"strength\":25}]}",
		 200);
	assert_int_equal(num(o, "first_seq"), 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "chunks")), 4);
	cJSON_Delete(o);
	for (l = 0; l < 2; l++)
		for (i = 0; i < 16; i++) {
			int cx = i % 4 - 1, cz = i / 4 - 1, touched = cx >= 0 && cx <= 1 &&
							     cz >= 0 && cz <= 1;
			size_t len;
			uint8_t *after = tile_bytes(main_srv.port, "corner", lods[l], cx, cz, &len);
			struct tile t;

			if (touched)
				assert_false(len == blen[l][i] && !memcmp(after, before[l][i], len));
			else
				assert_true(len == blen[l][i] && !memcmp(after, before[l][i], len));
			assert_int_equal(tile_decode(after, len, &t), 0);
			assert_int_equal(t.edit_seq, touched ? 1 : 0);
			tile_release(&t);
			free(after);
			free(before[l][i]);
		}
}

static void test_world_http_seams_and_nesting_hold_after_edits(void **state)
{
	struct tile t[2][2], l1;
	uint32_t i, j, s;
	cJSON *o;

	(void)state;
	o = post(main_srv.port, "seams",
		 "{\"edits\":[{\"op\":\"raise\",\"x\":250,\"z\":262,\"radius\":60,\"strength\":40},"
		 "{\"op\":\"flatten\",\"x\":260,\"z\":250,\"radius\":30,\"strength\":0.7,\"height\":12.5},"
		 "{\"op\":\"set\",\"x\":256,\"z\":256,\"radius\":9,\"height\":-3,\"falloff\":\"linear\"}]}",
		 200);
	cJSON_Delete(o);
	for (i = 0; i < 4; i++)
		get_tile(main_srv.port, "seams", 0, (int)(i % 2), (int)(i / 2), &t[i / 2][i % 2]);
	s = t[0][0].side;
	for (j = 0; j < s; j++) { /* (0,*) right edge = (1,*) left edge */
		assert_int_equal(t[0][0].h[j * s + s - 1], t[0][1].h[j * s]);
		assert_int_equal(t[1][0].h[j * s + s - 1], t[1][1].h[j * s]);
	}
	for (i = 0; i < s; i++) { /* (*,0) top row = (*,1) bottom row */
		assert_int_equal(t[0][0].h[(s - 1) * s + i], t[1][0].h[i]);
		assert_int_equal(t[0][1].h[(s - 1) * s + i], t[1][1].h[i]);
	}
	get_tile(main_srv.port, "seams", 1, 0, 0, &l1);
	for (j = 0; j < l1.side; j++)
		for (i = 0; i < l1.side; i++)
			assert_int_equal(l1.h[j * l1.side + i], t[0][0].h[2 * j * s + 2 * i]);
	tile_release(&l1);
	for (i = 0; i < 4; i++)
		tile_release(&t[i / 2][i % 2]);
}

static void test_world_http_raise_at_the_centre_moves_by_its_strength(void **state)
{
	struct tile a, b;
	size_t k = 100 * 257 + 100; /* sample (100, 100) of chunk (0, 0) */
	cJSON *o;

	(void)state;
	get_tile(main_srv.port, "raise", 0, 0, 0, &a);
	o = post(main_srv.port, "raise",
		 "{\"edits\":[{\"op\":\"raise\",\"x\":100,\"z\":100,\"radius\":20,\"strength\":3.5}]}",
		 200);
	cJSON_Delete(o);
	get_tile(main_srv.port, "raise", 0, 0, 0, &b);
	assert_int_equal(b.h[k] - a.h[k], 350); /* 3.5 m in 1 cm quanta */
	assert_int_equal(b.h[k + 20], a.h[k + 20]); /* at the radius: untouched */
	assert_true(b.h[k + 10] > a.h[k + 10] && b.h[k + 10] - a.h[k + 10] < 350);
	tile_release(&a);
	tile_release(&b);
}

/* ---- concurrency and the hash chain -------------------------------------------- */

#define CLIENTS 16
#define PER_CLIENT 25

struct client {
	int port, id;
	uint64_t seqs[PER_CLIENT];
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct harness_reader r;
	int k;

	harness_reader_init(&r, harness_connect(c->port, 0));
	for (k = 0; k < PER_CLIENT; k++) {
		char body[256];
		struct harness_resp rp;
		cJSON *o;

		snprintf(body, sizeof(body), "{\"edits\":[{\"op\":\"%s\",\"x\":%d.25,\"z\":%d,"
			 "\"radius\":%d,\"strength\":%d.5}]}", k % 2 ? "lower" : "raise",
			 c->id * 97 - 700, k * 31 - 400, 3 + k, c->id % 7);
		exchange(&r, "POST", "/v1/worlds/busy/edits", JSON_CT, body, &rp);
		assert_int_equal(rp.status, 200);
		o = cJSON_Parse(rp.body);
		c->seqs[k] = num(o, "first_seq");
		assert_int_equal(num(o, "last_seq"), c->seqs[k]);
		cJSON_Delete(o);
		free(rp.body);
	}
	close(r.fd);
	free(r.buf);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Replay GET /edits?since=0 page by page into the chain from h. */
static uint64_t replay_chain(int port, const char *world, uint64_t h, uint64_t *seq)
{
	uint64_t since = 0;

	for (;;) {
		char path[256], err[128];
		cJSON *o, *arr, *it, *wrap, *copy;
		struct edit *e;
		size_t n, k;
		char *text;

		snprintf(path, sizeof(path), "/v1/worlds/%s/edits?since=%llu&limit=200", world,
			 (unsigned long long)since);
		o = get_json(port, path);
		*seq = num(o, "seq");
		arr = cJSON_GetObjectItem(o, "edits");
		if (cJSON_GetArraySize(arr) == 0) {
			assert_int_equal(hex(o, "world_hash"), h);
			cJSON_Delete(o);
			return h;
		}
		char who[200][65];
		uint64_t when[200];
		size_t m = 0;

		copy = cJSON_Duplicate(arr, 1);
		cJSON_ArrayForEach(it, copy) {
			const cJSON *a = cJSON_GetObjectItem(it, "author");

			assert_int_equal(num(it, "seq"), since + 1);
			since++;
			/* record version 3: who and when are in the chain (batch_link) */
			snprintf(who[m], sizeof(who[m]), "%s", cJSON_IsString(a) ? a->valuestring : "");
			when[m++] = a ? num(it, "time") : 0;
			cJSON_DeleteItemFromObject(it, "seq");
			cJSON_DeleteItemFromObject(it, "author");
			cJSON_DeleteItemFromObject(it, "time");
		}
		wrap = cJSON_CreateObject();
		cJSON_AddItemToObject(wrap, "edits", copy);
		text = cJSON_PrintUnformatted(wrap);
		assert_int_equal(edit_parse_batch(text, strlen(text), &e, &n, err, sizeof(err)), 0);
		for (k = 0; k < n; k++) {
			uint8_t wire[EDIT_WIRE_SIZE];

			edit_encode(&e[k], wire);
			h = who[k][0] ? batch_link(h, since - n + 1 + k, when[k], who[k], strlen(who[k]), 0,
						   wire) :
				edit_hash_next(h, since - n + 1 + k, &e[k]);
		}
		assert_true(cJSON_GetObjectItem(o, "next") != NULL || since == *seq);
		free(e);
		cJSON_free(text);
		cJSON_Delete(wrap);
		cJSON_Delete(o);
	}
}

static uint64_t start_hash(int port, const char *world)
{
	char path[128];
	cJSON *o;
	uint64_t fp, seed, h;

	snprintf(path, sizeof(path), "/v1/worlds/%s", world);
	o = get_json(port, path);
	fp = hex(o, "fingerprint");
	seed = strtoull(cJSON_GetObjectItem(o, "seed")->valuestring, NULL, 10);
	h = edit_hash_start(fp, seed);
	cJSON_Delete(o);
	return h;
}

static void test_world_http_16_clients_get_contiguous_seqs_and_a_replayable_hash(void **state)
{
	static struct client c[CLIENTS];
	static uint64_t all[CLIENTS * PER_CLIENT];
	pthread_t th[CLIENTS];
	uint64_t seq, h;
	int i, k;

	(void)state;
	for (i = 0; i < CLIENTS; i++) {
		c[i].port = main_srv.port;
		c[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, client_main, &c[i]), 0);
	}
	for (i = 0; i < CLIENTS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < CLIENTS; i++)
		for (k = 0; k < PER_CLIENT; k++) {
			all[i * PER_CLIENT + k] = c[i].seqs[k];
			if (k)
				assert_true(c[i].seqs[k] > c[i].seqs[k - 1]);
		}
	qsort(all, CLIENTS * PER_CLIENT, sizeof(all[0]), cmp_u64);
	for (k = 0; k < CLIENTS * PER_CLIENT; k++)
		assert_int_equal(all[k], (uint64_t)k + 1);
	h = replay_chain(main_srv.port, "busy", start_hash(main_srv.port, "busy"), &seq);
	assert_int_equal(seq, CLIENTS * PER_CLIENT);
	(void)h;
}

/* ---- durability ------------------------------------------------------------------- */

static void test_world_http_acknowledged_edits_survive_kill_9(void **state)
{
	struct harness_server s = { 0 };
	uint8_t *tiles[4];
	size_t lens[4], len;
	uint64_t hash, seq, seq2;
	pthread_t th[4];
	struct client c[4];
	cJSON *o;
	int i;

	(void)state;
	assert_int_equal(harness_start(&s, "--workers", "2", NULL), 0);
	for (i = 0; i < 4; i++) {
		c[i].port = s.port;
		c[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, client_main, &c[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	o = post(s.port, "busy", "{\"edits\":[{\"op\":\"set\",\"x\":-300,\"z\":-300,\"radius\":50,"
		 "\"height\":77},{\"op\":\"raise\",\"x\":0,\"z\":0,\"radius\":2,\"strength\":1}]}", 200);
	hash = hex(o, "world_hash");
	seq = num(o, "seq");
	cJSON_Delete(o);
	for (i = 0; i < 4; i++)
		tiles[i] = tile_bytes(s.port, "busy", i, -2 + i, -2 + i / 2, &lens[i]);
	harness_kill9(&s); /* right after the last acknowledgement */

	assert_int_equal(harness_restart(&s, "--workers", "2", NULL), 0);
	assert_true(harness_log_has(&s, "replayed"));
	o = get_json(s.port, "/v1/worlds/busy");
	assert_int_equal(num(o, "edit_seq"), seq);
	assert_int_equal(hex(o, "world_hash"), hash);
	cJSON_Delete(o);
	for (i = 0; i < 4; i++) {
		uint8_t *t = tile_bytes(s.port, "busy", i, -2 + i, -2 + i / 2, &len);

		assert_int_equal(len, lens[i]);
		assert_memory_equal(t, tiles[i], len);
		free(t);
		free(tiles[i]);
	}
	assert_int_equal(replay_chain(s.port, "busy", start_hash(s.port, "busy"), &seq2), hash);
	assert_int_equal(seq2, seq);

	/* A torn tail: the last record loses its end; replay drops it. */
	harness_kill9(&s);
	{
		char path[128], cmd[256];

		snprintf(path, sizeof(path), "%s/edits.log", s.dir);
		snprintf(cmd, sizeof(cmd), "truncate -s -5 '%s'", path);
		assert_int_equal(system(cmd), 0);
	}
	assert_int_equal(harness_restart(&s, "--workers", "2", NULL), 0);
	assert_true(harness_log_has(&s, "torn tail"));
	o = get_json(s.port, "/v1/worlds/busy");
	assert_int_equal(num(o, "edit_seq"), seq - 2); /* the last batch held 2 */
	cJSON_Delete(o);
	assert_int_equal(harness_stop(&s), 0);
	harness_clean(&s);
}

/* ---- event streams ---------------------------------------------------------------- */

/* Open an event stream; returns the reader after the response head. */
static void subscribe(struct harness_reader *r, int port, const char *world,
		      const char *last_id)
{
	char req[512], line[512];
	int n;

	harness_reader_init(r, harness_connect(port, 0));
	n = snprintf(req, sizeof(req), "GET /v1/worlds/%s/events HTTP/1.1\r\nHost: t\r\n"
		     "%s%s%sAccept: text/event-stream\r\n\r\n", world,
		     last_id ? "Last-Event-ID: " : "", last_id ? last_id : "",
		     last_id ? "\r\n" : "");
	harness_send(r->fd, req, (size_t)n);
	assert_int_equal(harness_read_line(r, line, sizeof(line)), 0);
	assert_string_equal(line, "HTTP/1.1 200 OK");
	do {
		assert_int_equal(harness_read_line(r, line, sizeof(line)), 0);
		assert_null(find_ci(line, "content-length"));
	} while (line[0]);
}

/* Read the next event (skipping comments); its id and data. */
static void next_event(struct harness_reader *r, uint64_t *id, cJSON **data)
{
	char line[8192];
	int got_id = 0;

	*data = NULL;
	for (;;) {
		assert_int_equal(harness_read_line(r, line, sizeof(line)), 0);
		if (!line[0] && got_id && *data)
			return;
		if (!strncmp(line, "id: ", 4)) {
			*id = strtoull(line + 4, NULL, 10);
			got_id = 1;
		} else if (!strncmp(line, "data: ", 6)) {
			*data = cJSON_Parse(line + 6);
			assert_non_null(*data);
		} else if (line[0] && line[0] != ':') {
			assert_string_equal(line, "event: edits");
		}
	}
}

static void test_world_http_events_deliver_each_batch_once_in_order_and_resume(void **state)
{
	struct harness_reader live, resumed;
	uint64_t id, hashes[6];
	struct pollfd p;
	cJSON *d, *o;
	int k;

	(void)state;
	subscribe(&live, main_srv.port, "events", NULL);
	for (k = 0; k < 6; k++) {
		char body[256];

		snprintf(body, sizeof(body), "{\"edits\":[{\"op\":\"raise\",\"x\":%d,\"z\":5,"
			 "\"radius\":3,\"strength\":1}%s]}", 300 * k + 100,
			 k == 2 ? ",{\"op\":\"lower\",\"x\":1,\"z\":1,\"radius\":1,\"strength\":1}" : "");
		o = post(main_srv.port, "events", body, 200);
		hashes[k] = hex(o, "world_hash");
		cJSON_Delete(o);
	}
	for (k = 0; k < 6; k++) { /* seqs 1, 2, 3-4, 5, 6, 7 */
		uint64_t last = (uint64_t)k + 1 + (k >= 2);

		next_event(&live, &id, &d);
		assert_int_equal(id, last);
		assert_int_equal(num(d, "last_seq"), last);
		assert_int_equal(num(d, "first_seq"), k == 2 ? 3 : last);
		assert_int_equal(hex(d, "world_hash"), hashes[k]);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "chunks")),
				 k == 2 ? 2 : 1);
		cJSON_Delete(d);
	}
	p = (struct pollfd){ live.fd, POLLIN, 0 };
	assert_int_equal(poll(&p, 1, 200), 0); /* nothing more: each batch once */

	subscribe(&resumed, main_srv.port, "events", "2");
	for (k = 2; k < 6; k++) {
		next_event(&resumed, &id, &d);
		assert_int_equal(id, (uint64_t)k + 2);
		assert_int_equal(hex(d, "world_hash"), hashes[k]);
		cJSON_Delete(d);
	}
	o = post(main_srv.port, "events",
		 "{\"edits\":[{\"op\":\"raise\",\"x\":9,\"z\":9,\"radius\":3,\"strength\":1}]}", 200);
	cJSON_Delete(o);
	next_event(&resumed, &id, &d); /* then live */
	assert_int_equal(id, 8);
	cJSON_Delete(d);
	next_event(&live, &id, &d);
	assert_int_equal(id, 8);
	cJSON_Delete(d);
	close(live.fd);
	close(resumed.fd);
	free(live.buf);
	free(resumed.buf);
}

/* The value of metric name on the main server. */
static double metric(const char *name)
{
	struct harness_resp rp;
	char pat[128];
	const char *p;
	double v;

	request(main_srv.port, "GET", "/metrics", NULL, NULL, &rp);
	snprintf(pat, sizeof(pat), "\n%s ", name);
	p = strstr(rp.body, pat);
	assert_non_null(p);
	v = strtod(p + strlen(pat), NULL);
	free(rp.body);
	return v;
}

static void test_world_http_drops_a_reader_that_does_not_read(void **state)
{
	double dropped = metric("terrain_sse_dropped_total");
	char body[4096], buf[65536];
	struct harness_reader r;
	size_t len;
	int k, e;

	(void)state;
	subscribe(&r, main_srv.port, "slow", NULL);
	/* Batches of 17 brushes of 4096 m: events of about 140 kB each, 10 MB
	 * in all, never read: more than the socket buffers and the bound. */
	for (k = 0; k < 70 && metric("terrain_sse_dropped_total") == dropped; k++) {
		len = (size_t)sprintf(body, "{\"edits\":[");
		for (e = 0; e < 17; e++)
			len += (size_t)sprintf(body + len, "%s{\"op\":\"raise\",\"x\":%d,\"z\":%d,"
					       "\"radius\":4096,\"strength\":0.01}", e ? "," : "",
					       (e % 5) * 20000, (e / 5) * 20000 + k);
		strcpy(body + len, "]}");
		cJSON_Delete(post(main_srv.port, "slow", body, 200));
	}
	assert_true(metric("terrain_sse_dropped_total") == dropped + 1);
	assert_true(metric("terrain_sse_subscribers") == 0 || k < 70);
	while (recv(r.fd, buf, sizeof(buf), 0) > 0)
		; /* what was sent, then the end */
	close(r.fd);
	free(r.buf);
}

static void test_world_http_sigterm_closes_event_streams(void **state)
{
	struct harness_server s = { 0 };
	struct harness_reader r;
	char line[256];

	(void)state;
	assert_int_equal(harness_start(&s, "--workers", "2", NULL), 0);
	subscribe(&r, s.port, "x", "0");
	kill(s.pid, SIGTERM);
	while (harness_read_line(&r, line, sizeof(line)) == 0)
		; /* the stream ends */
	assert_int_equal(harness_stop(&s), 0);
	close(r.fd);
	free(r.buf);
	harness_clean(&s);
}

static int setup(void **state)
{
	(void)state;
	alarm(900);
	return harness_start(&main_srv, "--workers", "2", "--edit-area", "0", NULL) /* big brushes below */;
}

static int teardown(void **state)
{
	int rc = harness_stop(&main_srv);

	(void)state;
	harness_clean(&main_srv);
	return rc == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_world_http_corner_edit_changes_exactly_four_chunks),
		cmocka_unit_test(test_world_http_seams_and_nesting_hold_after_edits),
		cmocka_unit_test(test_world_http_raise_at_the_centre_moves_by_its_strength),
		cmocka_unit_test(test_world_http_16_clients_get_contiguous_seqs_and_a_replayable_hash),
		cmocka_unit_test(test_world_http_acknowledged_edits_survive_kill_9),
		cmocka_unit_test(test_world_http_events_deliver_each_batch_once_in_order_and_resume),
		cmocka_unit_test(test_world_http_drops_a_reader_that_does_not_read),
		cmocka_unit_test(test_world_http_sigterm_closes_event_streams),
	};

	signal(SIGPIPE, SIG_IGN);
	harness_io_timeout_s = IO_TIMEOUT_S;
	return cmocka_run_group_tests(tests, setup, teardown);
}
