#!/bin/bash
# http_edges.sh - issue 34's protocol probes against the real server, each
# answered as RFC 9110/9112 say: a header field name that is not a token
# is 400 (and an edit carrying one is not applied); a request line of
# another HTTP version is 505; "Expect: 100-continue" gets its interim
# answer before the body is sent (or the final one at once when the body
# is refused anyway), another expectation 417; chunk extensions may come
# as a list but at most 4 KiB of them per chunk line; an If-None-Match
# that is not a comma-separated list matches nothing; and at
# --max-connections the connections kept for monitors still answer
# /healthz, /readyz and /metrics (others 503), until they too are taken.
. "$(dirname "$0")/../lib/lib.sh"


# raw TEXT: send TEXT (Python escapes) on one connection, half-close, read
# to the end; prints the status line's code and puts the answer in $TMP/ans
raw() {
	python3 - "$PORT" "$1" "$TMP/ans" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
s.sendall(sys.argv[2].encode("utf-8").decode("unicode_escape").encode("latin-1"))
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    try:
        b = s.recv(65536)
    except ConnectionResetError:
        break
    if not b:
        break
    data += b
open(sys.argv[3], "wb").write(data)
print(data.split(b" ")[1].decode() if data else "none")
PY
}
seq_of() { "${CURL[@]}" "$BASE/v1/worlds/42" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p'; }
alive() { [ "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$BASE/healthz")" = 200 ]; }
edit='{"edits":[{"op":"raise","x":10,"z":10,"radius":5,"strength":1}]}'
post_head="POST /v1/worlds/42/edits HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\n"

server_start --max-connections 4

# ---- field names are tokens --------------------------------------------------
check "a header name with a space is 400" eq "$(raw 'GET /healthz HTTP/1.1\r\nHost: a\r\nX A: b\r\n\r\n')" 400
check "  saying why" grep -q 'header field name is not a token' "$TMP/ans"
check "a name with a separator (X@A) is 400" eq "$(raw 'GET /healthz HTTP/1.1\r\nHost: a\r\nX@A: b\r\n\r\n')" 400
check "white space before the colon is 400" eq "$(raw 'GET /healthz HTTP/1.1\r\nHost: a\r\nAccept : */*\r\n\r\n')" 400
check "\"Content Length: 5\" beside a real Content-Length is 400" eq \
	"$(raw "${post_head}Content Length: 5\\r\\nContent-Length: ${#edit}\\r\\n\\r\\n$edit")" 400
check "  and the edit is not applied" eq "$(seq_of)" 0
check "every tchar is allowed in a name" eq \
	"$(raw "GET /healthz HTTP/1.1\\r\\nHost: a\\r\\nX!#\$%&'*+-.^_\`|~09az: b\\r\\nConnection: close\\r\\n\\r\\n")" 200

# ---- the HTTP version ----------------------------------------------------------
check "GET /healthz HTTP/2.0 as text is 505" eq "$(raw 'GET /healthz HTTP/2.0\r\nHost: a\r\n\r\n')" 505
check "  with a JSON body that says so" grep -q '"error":"http_version_not_supported"' "$TMP/ans"
check "HTTP/0.9 is 505" eq "$(raw 'GET /healthz HTTP/0.9\r\nHost: a\r\n\r\n')" 505
check "HTTP/1.0 is still served" eq "$(raw 'GET /healthz HTTP/1.0\r\n\r\n')" 200

# ---- Expect -------------------------------------------------------------------
# expect LEN [BODY]: send the head of a POST with Expect: 100-continue and
# Content-Length LEN, wait up to 20 s for a first answer without sending
# the body; print that answer's status, then send BODY (if any) and print
# the final status
expect() {
	python3 - "$PORT" "$1" "${2:-}" <<'PY'
import socket, sys
port, n, body = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
s = socket.create_connection(("127.0.0.1", port), timeout=20)
s.sendall(b"POST /v1/worlds/42/edits HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
          b"Content-Length: %d\r\n\r\n" % n)
first = s.recv(4096)
out = [first.split(b" ")[1].decode() if first else "none"]
if body:
    s.sendall(body)
    rest = first.split(b"\r\n\r\n", 1)[1] if first.startswith(b"HTTP/1.1 100") else b""
    while b"\r\n\r\n" not in rest:
        rest += s.recv(4096)
    out.append(rest.split(b" ")[1].decode())
print(" ".join(out))
PY
}
check "Expect: 100-continue gets 100 before the body, then the edit's 200" \
	eq "$(expect ${#edit} "$edit")" "100 200"
check "  and the edit is applied once" eq "$(seq_of)" 1
check "a body over the limit gets its 413 at once, no 100" eq "$(expect 5000000)" 413
check "an expectation other than 100-continue is 417" eq \
	"$(raw 'GET /healthz HTTP/1.1\r\nHost: a\r\nExpect: something-else\r\n\r\n')" 417

# ---- chunk extensions ------------------------------------------------------------
chunked() { # the edit as one chunk with extension $1
	printf '%sTransfer-Encoding: chunked\\r\\nConnection: close\\r\\n\\r\\n%x%s\\r\\n%s\\r\\n0\\r\\n\\r\\n' \
		"$post_head" "${#edit}" "$1" "$edit"
}
check "two chunk extensions (;a=b;c=d) are allowed" eq "$(raw "$(chunked ';a=b;c=d')")" 200
check "  and the edit applied" eq "$(seq_of)" 2
check "a list with names alone and a quoted value too" eq "$(raw "$(chunked ';a;b="x;y";c=d;e')")" 200
check "  applied" eq "$(seq_of)" 3
long=$(head -c 5000 /dev/zero | tr '\0' a)
check "5,000 bytes of chunk extension are 400" eq "$(raw "$(chunked ";x=$long")")" 400
check "  saying why" grep -q 'chunk extension too long' "$TMP/ans"
check "  and nothing applied" eq "$(seq_of)" 3
# up to 64 MiB of extension: the 400 comes once 4 KiB are read, while the
# client is still sending (socket buffers hold a few MiB at most)
big_ext() {
	python3 - "$PORT" <<'PY'
import select, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
s.sendall(b"POST /v1/worlds/42/edits HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5;x=")
sent, block, ans = 0, b"a" * 65536, b""
while sent < 64 << 20:
    r, w, _ = select.select([s], [s], [], 60)
    if r:
        ans = s.recv(4096)
        break
    if w:
        sent += s.send(block)
print("%s %s" % (ans.split(b" ")[1].decode() if ans else "none",
                 "early" if sent < 16 << 20 else "late (%d bytes sent)" % sent))
PY
}
check "64 MiB of chunk extension: 400 before 16 MiB are sent" eq "$(big_ext)" "400 early"
check "the server still answers" alive

# ---- If-None-Match ---------------------------------------------------------------
url=$BASE/v1/worlds/42/chunks/3/0/0
etag=$("${CURL[@]}" -D - -o /dev/null "$url" | sed -n 's/^ETag: \(.*\)\r$/\1/Ip')
inm() { "${CURL[@]}" -o /dev/null -w '%{http_code}' -H "If-None-Match: $1" "$url"; }
check "the tile has a strong ETag" grep -q '^"[0-9a-f]*"$' <<<"$etag"
check "If-None-Match: the tag is 304" eq "$(inm "$etag")" 304
check "  in a list, after another" eq "$(inm "\"x\", $etag")" 304
check "  W/ of it is 304 (weak comparison)" eq "$(inm "W/$etag")" 304
check "  * is 304" eq "$(inm '*')" 304
check "two tags with no comma (\"e\"\"e\") match nothing: 200" eq "$(inm "$etag$etag")" 200
check "  nor a tag followed by junk" eq "$(inm "$etag junk")" 200
check "  nor * with more after it" eq "$(inm "*, $etag")" 200

# ---- a Location made of the request's own bytes -----------------------------------
# ?v= of an older version is a 302 to the current one, the query kept: bytes
# that cannot stand in a header (a control byte, 0xff, UTF-8) percent-encoded
check "an old ?v= with odd bytes in the query is 302" eq \
	"$(raw 'GET /v1/worlds/42/chunks/3/0/0?a=\xff\x0c\xc3\xa9%41&v=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')" 302
check "  its Location is visible ASCII, the bytes percent-encoded" grep -aq \
	$'^Location: /v1/worlds/42/chunks/3/0/0?a=%FF%0C%C3%A9%41&v=[0-9]*\r$' "$TMP/ans"

# ---- monitors at --max-connections ------------------------------------------------
# hold N: N more connections, each with a request begun (so that the server
# has accepted them: it counts a connection once its first bytes come),
# held open until $TMP/release exists
holders=()
hold() {
	python3 - "$PORT" "$1" "$TMP/release" <<'PY' &
import os, socket, sys, time
port, n, release = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\n")
    socks.append(s)
t = time.time()
while not os.path.exists(release) and time.time() - t < 300:
    time.sleep(0.05)
PY
	holders+=($!)
}
code() { "${CURL[@]}" -o "$TMP/body" -w '%{http_code}' "$BASE$1"; }
# until_code PATH STATUS: wait (up to 600 tries, 60 s at least, times
# TEST_TIMEOUT_SCALE) until PATH answers STATUS
until_code() {
	local i
	for i in $(seq 1 "$(scaled 600)"); do
		[ "$(code "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
hold 4
check "with --max-connections 4 taken, the API answers 503" until_code /v1/worlds/42 503
check "  saying the connection is kept for monitors" grep -q 'kept for monitors' "$TMP/body"
check "  /healthz still answers 200" eq "$(code /healthz)" 200
check "  /readyz too" eq "$(code /readyz)" 200
check "  and /metrics, scraped whole" eq "$(code /metrics)" 200
check "    (it is Prometheus text)" grep -q '^terrain_connections_rejected_total' "$TMP/body"
hold 16
check "with the 16 monitor connections taken as well, /healthz is 503" until_code /healthz 503
check "  too many connections" grep -q 'too many connections' "$TMP/body"
touch "$TMP/release"
wait "${holders[@]}"
check "once they are gone, the API answers again" until_code /v1/worlds/42 200

check "the server still answers" alive
finish
