#!/bin/bash
# edit_origins.sh - who may edit from a browser, through DNS rebinding or
# behind a proxy (docs/edits.md, "Who may edit"), against the real server:
# the forged cross-origin POST of issue 18 is refused and changes nothing,
# the server's own origin and --cors-origins ones may edit, the preflight
# allows POST only to those, a rebinding Host and a proxied request are
# refused without a token, reads stay open to any origin, and a server
# bound beyond loopback with no token warns at start.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

JSON=(-H 'Content-Type: application/json')
wipe='{"edits":[{"op":"set","x":0,"z":0,"radius":4096,"height":-100000}]}'
small='{"edits":[{"op":"raise","x":10,"z":10,"radius":5,"strength":1}]}'

# post BODY [CURL ARGS...]: prints the status; the body goes to $TMP/body
post() {
	local body=$1
	shift
	"${CURL[@]}" -o "$TMP/body" -w '%{http_code}' -X POST "${JSON[@]}" "$@" \
		--data-binary "$body" "$BASE/v1/worlds/42/edits"
}
seq_of() { "${CURL[@]}" "$BASE/v1/worlds/42" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p'; }
# preflight ORIGIN: the Allow-Methods line of an OPTIONS for POST
preflight() {
	"${CURL[@]}" -X OPTIONS -D - -o /dev/null -H "Origin: $1" \
		-H 'Access-Control-Request-Method: POST' "$BASE/v1/worlds/42/edits" |
		tr -d '\r' | sed -n 's/^Access-Control-Allow-Methods: //p'
}

server_start --cors-origins 'https://game.example, http://localhost:3000'

# ---- the forged POST of the issue -----------------------------------------------
check "forged cross-origin POST with a foreign Host is 403" eq \
	"$(post "$wipe" -H 'Host: attacker.example:8080' -H 'Origin: http://attacker.example')" 403
check "its detail names the origin" grep -q 'origin: http://attacker.example may not edit' "$TMP/body"
check "a foreign origin is refused even with a loopback Host" eq \
	"$(post "$wipe" -H 'Origin: http://attacker.example')" 403
check "nothing was applied" eq "$(seq_of)" 0

# ---- allowed origins ---------------------------------------------------------------
check "the server's own origin may edit (the viewer)" eq \
	"$(post "$small" -H "Origin: http://127.0.0.1:$PORT")" 200
check "a --cors-origins origin may edit" eq "$(post "$small" -H 'Origin: https://game.example')" 200
check "the second listed origin too" eq "$(post "$small" -H 'Origin: http://localhost:3000')" 200
check "a request without Origin (curl, a game backend) may edit" eq "$(post "$small")" 200
check "three edits applied" eq "$(seq_of)" 4

# ---- preflight ---------------------------------------------------------------------
check "preflight offers POST to a listed origin" eq "$(preflight https://game.example)" \
	"GET, HEAD, POST, OPTIONS"
check "preflight offers POST to the server's own origin" eq \
	"$(preflight "http://127.0.0.1:$PORT")" "GET, HEAD, POST, OPTIONS"
check "preflight does not offer POST to another origin" eq \
	"$(preflight http://attacker.example)" "GET, HEAD, OPTIONS"

# ---- DNS rebinding and proxies (no token) ------------------------------------------
check "a rebinding Host (no Origin) is 403" eq "$(post "$small" -H 'Host: attacker.example')" 403
check "its detail says why" grep -q 'not a loopback name' "$TMP/body"
check "Host localhost with a port is loopback" eq "$(post "$small" -H 'Host: localhost:8080')" 200
check "Host [::1] is loopback" eq "$(post "$small" -H 'Host: [::1]:8080')" 200
check "Host 127.1.2.3 is loopback" eq "$(post "$small" -H 'Host: 127.1.2.3')" 200
check "Host 127.0.0.1.attacker.example is not" eq \
	"$(post "$small" -H 'Host: 127.0.0.1.attacker.example')" 403
check "X-Forwarded-For is refused without a token" eq \
	"$(post "$small" -H 'X-Forwarded-For: 203.0.113.9')" 403
check "its detail names the proxy" grep -q 'through a proxy' "$TMP/body"
check "Forwarded is refused without a token" eq "$(post "$small" -H 'Forwarded: for=203.0.113.9')" 403
check "reads stay open to any origin" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' \
	-H 'Origin: http://attacker.example' -H 'Host: attacker.example' \
	"$BASE/v1/worlds/42/chunks/6/0/0")" 200
check "reads carry Access-Control-Allow-Origin: *" grep -qi '^access-control-allow-origin: \*' \
	<("${CURL[@]}" -D - -o /dev/null -H 'Origin: http://attacker.example' "$BASE/v1/worlds/42")
server_stop >/dev/null

# ---- --allowed-hosts, and a token behind a proxy -----------------------------------
server_start --allowed-hosts terrain.lan --data-dir "$TMP/data2"
check "a listed Host may edit without a token" eq "$(post "$small" -H 'Host: terrain.lan:8080')" 200
server_stop >/dev/null
server_start --edit-token s3cret --data-dir "$TMP/data3"
check "with a token, a proxied edit is fine" eq "$(post "$small" -H 'Authorization: Bearer s3cret' \
	-H 'X-Forwarded-For: 203.0.113.9' -H 'Host: terrain.example')" 200
check "with a token, a foreign origin is still refused" eq "$(post "$small" \
	-H 'Authorization: Bearer s3cret' -H 'Origin: http://attacker.example')" 403
server_stop >/dev/null

# ---- the warning at start --------------------------------------------------------------
timeout "$(scaled 120)" "$SERVER_BIN" serve --bind 0.0.0.0 --port 0 --data-dir "$TMP/data4" 2>"$TMP/warn.log" &
wpid=$!
wait_until 120 has "$TMP/warn.log" 'listening on'
kill -TERM "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
check "binding 0.0.0.0 without a token warns" has "$TMP/warn.log" 'warning: listening on 0.0.0.0 with no --edit-token'
finish
