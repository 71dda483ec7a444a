/*
 * hclient_loop.c - libcurl's multi handle on the client's libuv loop
 * (hclient.h; the overview is in hclient.c). libcurl says which sockets to
 * watch for what (CURLMOPT_SOCKETFUNCTION: one uv_poll handle per socket)
 * and when to call it back (CURLMOPT_TIMERFUNCTION: one uv_timer); each
 * event goes back to it through curl_multi_socket_action(), after which
 * the finished transfers are read and delivered, outside every libcurl
 * callback, so user callbacks may submit requests or close the client.
 * The watchdog timer fails a sent request that has had no byte for its
 * allowed silence (timeout_ms, or a stream's idle_ms), which libcurl's
 * options can only say in whole seconds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <curl/curl.h>
#include <uv.h>

#include "err.h"
#include "hclient_int.h"
#include "util.h"

/* ---- handles ---- */

static void handle_closed(struct hclient *c)
{
	if (--c->handles == 0 && c->closing)
		hclient__destroy(c);
}

static void sock_closed(uv_handle_t *h)
{
	struct hsock *s = h->data;
	struct hclient *c = s->c;

	free(s);
	handle_closed(c);
}

static void timer_closed(uv_handle_t *h)
{
	handle_closed(h->data);
}

/* Stop watching s and close its handle (libcurl closes the socket). */
static void unwatch(struct hsock *s)
{
	struct hclient *c = s->c;

	if (s->prev)
		s->prev->next = s->next;
	else
		c->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	uv_poll_stop(&s->poll);
	uv_close((uv_handle_t *)&s->poll, sock_closed);
}

/* ---- libcurl's sockets and timer ---- */

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct hsock *s = h->data;
	struct hclient *c = s->c;
	int flags = 0, running;

	if (c->closing)
		return;
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(c->multi, s->fd, flags, &running);
	hclient__after_action(c);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp,
		     void *sockp)
{
	struct hclient *c = userp;
	struct hsock *s = sockp;
	int ev = 0;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			curl_multi_assign(c->multi, fd, NULL);
			unwatch(s);
		}
		return 0;
	}
	if (!s) {
		if (!(s = calloc(1, sizeof(*s))))
			return -1;
		if (uv_poll_init_socket(c->loop, &s->poll, fd) < 0) {
			free(s);
			return -1;
		}
		s->poll.data = s;
		s->c = c;
		s->fd = fd;
		s->next = c->socks;
		if (c->socks)
			c->socks->prev = s;
		c->socks = s;
		c->handles++;
		curl_multi_assign(c->multi, fd, s);
	}
	if (what & CURL_POLL_IN)
		ev |= UV_READABLE;
	if (what & CURL_POLL_OUT)
		ev |= UV_WRITABLE;
	return uv_poll_start(&s->poll, ev, on_poll) < 0 ? -1 : 0;
}

static void on_curl_timeout(uv_timer_t *t)
{
	struct hclient *c = container_of(t, struct hclient, curl_timer);
	int running;

	if (c->closing)
		return;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	hclient__after_action(c);
}

static int on_curl_timer(CURLM *m, long ms, void *userp)
{
	struct hclient *c = userp;

	(void)m;
	if (ms < 0)
		uv_timer_stop(&c->curl_timer);
	else
		uv_timer_start(&c->curl_timer, on_curl_timeout, (uint64_t)ms, 0);
	return 0;
}

void hclient__after_action(struct hclient *c)
{
	CURLMsg *m;
	int left;

	if (c->closing || !hclient__flush_streams(c))
		return;
	while (!c->closing && (m = curl_multi_info_read(c->multi, &left))) {
		void *r = NULL;
		CURLcode rc = m->data.result;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &r);
		hclient__done(r, rc);
	}
	if (!c->closing)
		hclient__pump(c);
}

/* ---- the watchdog ---- */

static uint64_t silence(const struct hreq *r)
{
	if (r->streaming && r->idle_ms)
		return r->idle_ms;
	return r->c->o.timeout_ms;
}

static void on_watchdog(uv_timer_t *t)
{
	struct hclient *c = container_of(t, struct hclient, watchdog);
	uint64_t now = uv_now(c->loop), next = UINT64_MAX;
	struct hreq *r;
	char why[64];

again:
	for (r = c->active.head; r; r = r->next) {
		if (!r->sent || r->due > now)
			continue;
		snprintf(why, sizeof(why), "timeout: no response in %llu ms",
			 (unsigned long long)silence(r));
		hclient__failed(r, why, 1);
		if (c->closing)
			return;
		goto again;
	}
	for (r = c->active.head; r; r = r->next)
		if (r->sent && r->due < next)
			next = r->due;
	if (next != UINT64_MAX) {
		c->watch_due = next;
		uv_timer_start(t, on_watchdog, next - now, 0);
	}
	hclient__pump(c);
}

void hclient__watch(struct hreq *r)
{
	struct hclient *c = r->c;

	r->due = uv_now(c->loop) + silence(r);
	if (!uv_is_active((uv_handle_t *)&c->watchdog) || r->due < c->watch_due) {
		c->watch_due = r->due;
		uv_timer_start(&c->watchdog, on_watchdog, silence(r), 0);
	}
}

/* ---- set-up and teardown ---- */

int hclient__loop_init(struct hclient *c)
{
	uv_timer_t *t[] = { &c->curl_timer, &c->watchdog, &c->backoff };

	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		uv_timer_init(c->loop, t[k]);
		t[k]->data = c;
		c->handles++;
	}
	if (curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket) ||
	    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c) ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer) ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c))
		return ERR_IO;
	return 0;
}

void hclient__loop_close(struct hclient *c)
{
	uv_timer_t *t[] = { &c->curl_timer, &c->watchdog, &c->backoff };

	/* stop polling before libcurl closes the sockets */
	while (c->socks)
		unwatch(c->socks);
	if (c->multi) {
		curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, NULL);
		curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, NULL);
		curl_multi_cleanup(c->multi);
		c->multi = NULL;
	}
	c->handles++; /* held while closing, dropped below */
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		uv_timer_stop(t[k]);
		uv_close((uv_handle_t *)t[k], timer_closed);
	}
	handle_closed(c);
}
