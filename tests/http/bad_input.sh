#!/bin/bash
# bad_input.sh - issue 27's probes against the real server: an edit body
# is one strict JSON value and nothing more (trailing bytes, a second
# value, a byte order mark, invalid UTF-8, numbers and white space cJSON
# alone would take), error bodies stay valid JSON whatever bytes they
# quote, an HTTP/1.1 request needs exactly one valid Host, an absolute-form
# target's authority is the host, and every proxy header makes a tokenless
# edit 403. Each refusal is checked to have changed nothing.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

ok='{"edits":[{"op":"raise","x":10,"z":10,"radius":5,"strength":1}]}'

# post BODY [CURL ARGS...]: the status; the answer's body in $TMP/body
post() {
	local body=$1
	shift
	printf '%s' "$body" > "$TMP/req"
	"${CURL[@]}" -o "$TMP/body" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' "$@" \
		--data-binary "@$TMP/req" "$BASE/v1/worlds/42/edits"
}
seq_of() { "${CURL[@]}" "$BASE/v1/worlds/42" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p'; }
# valid_json FILE: the file is one JSON value (Python's json, strict UTF-8)
valid_json() {
	python3 -c 'import json,sys; json.loads(open(sys.argv[1],"rb").read().decode("utf-8"))' "$1"
}
# raw TEXT: send TEXT (printf escapes) on one connection; the status, and
# the answer's body in $TMP/body
raw() {
	python3 - "$PORT" "$1" "$TMP/body" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(sys.argv[2].encode("utf-8").decode("unicode_escape").encode("latin-1"))
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
head, _, body = data.partition(b"\r\n\r\n")
open(sys.argv[3], "wb").write(body)
print(head.split(b" ")[1].decode())
PY
}
# detail: the error body's detail
detail() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["detail"])' "$TMP/body"; }

server_start

check "a well-formed edit is 200" eq "$(post "$ok")" 200
check "and applied" eq "$(seq_of)" 1

# ---- one JSON value, then only white space ---------------------------------
check "trailing garbage after the body is 400" eq "$(post "$ok garbage")" 400
check "  its detail gives the offset and why" eq "$(detail)" \
	"body: invalid JSON at offset 65: bytes after the JSON value (one value, then only white space)"
check "a second JSON value after the first is 400" eq "$(post "$ok$ok")" 400
check "a second value after a newline is 400" eq "$(post "$ok"$'\n'"$ok")" 400
check "a lone ] after the body is 400" eq "$(post "$ok]")" 400
check "trailing white space (space, tab, CR, LF) is fine" eq "$(post "$ok "$'\t\r\n')" 200
check "leading white space too" eq "$(post $'\r\n '"$ok")" 200
check "a vertical tab is not JSON white space: 400" eq "$(post "$ok"$'\v')" 400
check "a form feed before the body: 400" eq "$(post $'\f'"$ok")" 400
check "a leading zero (cJSON takes 010 as 10): 400" eq \
	"$(post '{"edits":[{"op":"raise","x":010,"z":10,"radius":5,"strength":1}]}')" 400
check "a trailing decimal point (1.): 400" eq \
	"$(post '{"edits":[{"op":"raise","x":1.,"z":10,"radius":5,"strength":1}]}')" 400
check "a raw tab inside a string: 400" eq \
	"$(post $'{"edits":[{"op":"rai\tse","x":1,"z":10,"radius":5,"strength":1}]}')" 400
check "  none of these was applied" eq "$(seq_of)" 3

# ---- invalid UTF-8 is never echoed raw ----------------------------------------
bad_key=$'{"edits":[{"op":"raise","x":10,"z":10,"radius":5,"strength":1,"n\xc3":1}]}'
check "an unknown key holding invalid UTF-8 is 400" eq "$(post "$bad_key")" 400
check "  the error body is valid JSON" valid_json "$TMP/body"
check "  and says where the bad byte is" eq "$(detail)" \
	"body: invalid JSON at offset 64: invalid UTF-8 in a string"
check "  no raw 0xc3 byte is in it" not grep -q $'\xc3' "$TMP/body"
check "an overlong '/' in a value is 400 with valid JSON" eq \
	"$(post $'{"edits":[{"op":"ra\xc0\xafise","x":1,"z":1,"radius":5,"strength":1}]}')" 400
check "  valid JSON" valid_json "$TMP/body"
check "a Host with invalid UTF-8 (no edit reaches the parser) is 400" eq \
	"$(post "$ok" -H $'Host: h\xff\xfe')" 400
check "  valid JSON" valid_json "$TMP/body"
# valid UTF-8 cut by the detail's length limit is still valid JSON
long=$(printf 'é%.0s' $(seq 1 300))
check "a long unknown key of two-byte characters is 400" eq \
	"$(post "{\"edits\":[{\"op\":\"raise\",\"x\":1,\"z\":1,\"radius\":5,\"strength\":1,\"$long\":1}]}")" 400
check "  its body is valid JSON although the detail was cut" valid_json "$TMP/body"
check "  and the character cut in two shows as text" contains "$(detail)" \
	"edits[0].$(printf 'é%.0s' $(seq 1 31))\\xc3: unknown field"

# ---- the byte order mark: refused (docs/edits.md) ------------------------------
check "a UTF-8 byte order mark before the body is 400" eq "$(post $'\xef\xbb\xbf'"$ok")" 400
check "  its detail says to send JSON without it" contains "$(detail)" \
	"at offset 0: a UTF-8 byte order mark (EF BB BF) before the JSON text; send the JSON without it"
check "  valid JSON" valid_json "$TMP/body"
check "none of the bad bodies was applied" eq "$(seq_of)" 3

# ---- Host (RFC 9112 section 3.2) ------------------------------------------------------
check "HTTP/1.1 POST without Host is 400" eq "$(post "$ok" -H 'Host:')" 400
check "  its detail names the rule" contains "$(detail)" "without a Host header"
check "HTTP/1.1 GET without Host is 400 too" eq \
	"$("${CURL[@]}" -o /dev/null -w '%{http_code}' -H 'Host:' "$BASE/healthz")" 400
check "HTTP/1.0 without Host is fine" eq \
	"$("${CURL[@]}" -0 -o /dev/null -w '%{http_code}' -H 'Host:' "$BASE/healthz")" 200
check "two Host headers are 400" eq "$(raw "POST /v1/worlds/42/edits HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: ${#ok}\r\n\r\n$ok")" 400
check "  its detail says so" contains "$(detail)" "more than one Host header"
check "a Host with a space inside is 400" eq "$(post "$ok" -H 'Host: 127.0.0.1 evil')" 400
check "a Host with a path is 400" eq "$(post "$ok" -H 'Host: 127.0.0.1/x')" 400
check "a Host with a bad port is 400" eq "$(post "$ok" -H 'Host: 127.0.0.1:8x')" 400
check "an empty Host (valid syntax) is not a loopback name: 403 without a token" eq \
	"$(post "$ok" -H 'Host;')" 403
check "a bracketed IPv6 Host with a port passes the syntax (and is loopback)" eq \
	"$(post "$ok" -H 'Host: [::1]:80')" 200
check "  one applied" eq "$(seq_of)" 4

# ---- absolute-form targets (RFC 9112 section 3.2.2) ---------------------------------
check "an absolute-form target with a foreign authority is judged by it: 403" eq \
	"$(post "$ok" --request-target "http://evil.example/v1/worlds/42/edits" -H "Host: 127.0.0.1")" 403
check "  the detail names that host" contains "$(detail)" "host: evil.example is not a loopback name"
check "an absolute-form target with a loopback authority may edit" eq \
	"$(post "$ok" --request-target "http://127.0.0.1:$PORT/v1/worlds/42/edits" -H 'Host: evil.example')" 200
check "an https absolute-form target too (any case)" eq \
	"$(post "$ok" --request-target "HTTPS://localhost/v1/worlds/42/edits")" 200
check "an absolute-form target without a host is 400" eq \
	"$(post "$ok" --request-target "http:///v1/worlds/42/edits")" 400
check "an absolute-form target with userinfo is 400" eq \
	"$(post "$ok" --request-target "http://127.0.0.1@evil.example/v1/worlds/42/edits")" 400
check "an absolute-form target without a path is /" eq \
	"$("${CURL[@]}" -o /dev/null -w '%{http_code}' --request-target "http://127.0.0.1" "$BASE/")" 200
check "an absolute-form GET with a query keeps it" eq \
	"$("${CURL[@]}" --request-target "http://127.0.0.1/v1/worlds/42/edits?since=4" "$BASE/" |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin)["edits"]))')" 2
check "  two applied" eq "$(seq_of)" 6
check "an absolute-form origin page of the same authority may edit (Origin = http:// + authority)" eq \
	"$(post "$ok" --request-target "http://localhost:$PORT/v1/worlds/42/edits" \
		-H "Origin: http://localhost:$PORT" -H 'Host: 127.0.0.1')" 200

# ---- every proxy header makes a tokenless edit 403 ---------------------------------
for h in 'X-Real-IP: 1.2.3.4' 'X-Forwarded-Host: evil.example' 'X-Forwarded-Proto: https' \
	'Via: 1.1 proxy' 'True-Client-IP: 1.2.3.4' 'CF-Connecting-IP: 1.2.3.4' \
	'X-Client-IP: 1.2.3.4' 'X-Forwarded-For: 1.2.3.4' 'Forwarded: for=1.2.3.4' \
	'x-real-ip: 1.2.3.4' 'X-Forwarded-Port: 443' 'X-Cluster-Client-IP: 1.2.3.4' \
	'Fastly-Client-IP: 1.2.3.4'; do
	check "a tokenless edit with '$h' is 403" eq "$(post "$ok" -H "$h")" 403
	check "  the detail names ${h%%:*}" contains "$(detail)" \
		"$(tr 'A-Z' 'a-z' <<< "${h%%:*}"): edits through a proxy need --edit-token"
done
check "none of them was applied" eq "$(seq_of)" 7
check "reads through a proxy are fine" eq \
	"$("${CURL[@]}" -o /dev/null -w '%{http_code}' -H 'X-Real-IP: 1.2.3.4' "$BASE/v1/worlds/42")" 200

# with a token, the token is the authority: proxies are fine
server_stop
server_start --edit-token s3cret
check "with the token, an edit through a proxy (Via, X-Real-IP) is 200" eq \
	"$(post "$ok" -H 'Authorization: Bearer s3cret' -H 'Via: 1.1 nginx' -H 'X-Real-IP: 1.2.3.4')" 200
check "without it, 401" eq "$(post "$ok" -H 'Via: 1.1 nginx')" 401
check "trailing bytes are 400 with the token too" eq \
	"$(post "$ok x" -H 'Authorization: Bearer s3cret')" 400
server_stop
finish
