/*
 * http_util.c - the http module's helpers that need no connection state:
 * limits' defaults, status lines, peer address checks and bearer tokens
 * (see http.h). Everything that touches a connection is in http.c,
 * http_parse.c and http_write.c.
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/options.h"
#include "err.h"
#include "util.h"

void http_limits_default(struct http_limits *l)
{
	l->max_connections = 10000;
	l->idle_timeout_ms = 60000;
	l->header_timeout_ms = 10000;
	l->max_url = 4096;
	l->max_header_bytes = 16384;
	l->max_headers = 100;
	l->max_body = 1 << 20;
	l->max_pipeline = 32;
	l->access_log = NULL;
	l->access_log_path = NULL;
	l->access_log_file = NULL;
	l->node_name = NULL;
}

#define ROW(...) OPTION(struct http_limits, __VA_ARGS__)

static const struct option options[] = {
	{ "node-name", "TERRAIN_NODE_NAME", "NAME", "hostname", "sent as X-Terrain-Node on "
	  "every response: which node of a cluster answered ([A-Za-z0-9._-], at most 64; "
	  "empty: not sent)", OPTION_STR, offsetof(struct http_limits, node_name), 0, 0,
	  http_node_name_valid },
	ROW("max-connections", "TERRAIN_MAX_CONNECTIONS", "N", "10000", OPTION_UINT,
	    max_connections, 0, 1 << 24, "open connections (counted from their first bytes); "
	    "beyond it clients get 503, but 16 more answer /healthz, /readyz and /metrics "
	    "(capped by RLIMIT_NOFILE)"),
	ROW("idle-timeout", "TERRAIN_IDLE_TIMEOUT", "SECONDS", "60", OPTION_MS, idle_timeout_ms,
	    0, 0, "close keep-alive connections idle this long; 0: never"),
	ROW("header-timeout", "TERRAIN_HEADER_TIMEOUT", "SECONDS", "10", OPTION_MS,
	    header_timeout_ms, 0, 0, "a request must arrive whole within this; else 408"),
	ROW("access-log", "TERRAIN_ACCESS_LOG", "FILE", "", OPTION_STR, access_log_file, 0, 0,
	    "append one line per response to FILE (- for stdout); default off"),
};
size_t http_options(const struct option **out)
{
	*out = options;
	return ARRAY_LEN(options);
}

void http_limits_resolve(struct http_limits *l)
{
	static char name[256];
	size_t n;

	if (l->node_name)
		return;
	if (gethostname(name, sizeof(name) - 1) < 0)
		name[0] = '\0';
	name[sizeof(name) - 1] = '\0';
	n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-");
	name[n < HTTP_NODE_NAME_MAX ? n : HTTP_NODE_NAME_MAX] = '\0';
	l->node_name = name;
}

int http_node_name_valid(const char *s)
{
	size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			  "0123456789._-");

	return n > 0 && n <= HTTP_NODE_NAME_MAX && s[n] == '\0';
}

const char *http_status_line(int status)
{
	switch (status) {
#define XX(code, text) case code: return "HTTP/1.1 " #code " " text "\r\n";
	HTTP_REASON_MAP(XX)
#undef XX
	}
	return "HTTP/1.1 500 Internal Server Error\r\n";
}


/* ---- peers and credentials ----------------------------------------------------------- */

int http_req_peer(const struct http_req *pub, struct sockaddr_storage *out)
{
	const struct conn_req *r = container_of(pub, const struct conn_req, pub);
	struct conn *c = r->conn;
	int len = sizeof(c->peer_addr);

	if (c->closing)
		return ERR_IO;
	if (c->mem) { /* http_server_feed() */
		*out = c->mem->peer;
		return 0;
	}
	/* a connection's peer never changes: one system call per connection,
	 * not one per request (an edit asks for it once or twice) */
	if (!c->has_peer) {
		if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&c->peer_addr, &len) < 0)
			return ERR_IO;
		c->has_peer = 1;
	}
	*out = c->peer_addr;
	return 0;
}

int http_peer_is_loopback(const struct sockaddr *sa)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		const uint8_t *a = in6->sin6_addr.s6_addr;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		       (!memcmp(a, mapped, sizeof(mapped)) && a[12] == 127);
	}
	return 0;
}

int http_bearer_matches(const char *h, const char *token)
{
	size_t i, n, m;
	unsigned diff;

	if (!h || !token || !*token)
		return 0;
	while (*h == ' ' || *h == '\t')
		h++;
	if (strncasecmp(h, "bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
		return 0;
	for (h += 6; *h == ' ' || *h == '\t'; h++)
		;
	n = strlen(h);
	while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
		n--;
	m = strlen(token);
	diff = n != m;
	for (i = 0; i < m; i++) /* no early exit: the time depends on m only */
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < n ? h[i] : 0);
	return diff == 0;
}

