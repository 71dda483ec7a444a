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

#include "err.h"

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
	l->node_name = NULL;
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
	int len = sizeof(*out);

	if (r->conn->closing)
		return ERR_IO;
	if (r->conn->mem) /* http_server_feed() */
		*out = r->conn->mem->peer;
	else if (uv_tcp_getpeername(&r->conn->tcp, (struct sockaddr *)out, &len) < 0)
		return ERR_IO;
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

