#!/bin/bash
# edits_api.sh - the edit API through curl: every bad edit rejected with
# its status and nothing applied, the token rules, CORS preflight, the
# metrics, and recovery from a corrupt log with repair-log.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

JSON=(-H 'Content-Type: application/json')
server_start --workers 2

# post WORLD BODY [CURL ARGS...]: prints the status, the body goes to $TMP/body
post() {
	local world=$1 body=$2
	shift 2
	"${CURL[@]}" -o "$TMP/body" -w '%{http_code}' -X POST "$@" --data-binary "$body" \
		"$BASE/v1/worlds/$world/edits"
}
seq_of() { "${CURL[@]}" "$BASE/v1/worlds/$1" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p'; }
hash_of() { "${CURL[@]}" "$BASE/v1/worlds/$1" | sed -n 's/.*"world_hash":"\([0-9a-f]*\)".*/\1/p'; }

ok='{"op":"raise","x":10,"z":10,"radius":5,"strength":1}'
check "a good edit is accepted" eq "$(post w "{\"edits\":[$ok]}" "${JSON[@]}")" 200
check "its answer has the fields" grep -qE \
	'^\{"first_seq":1,"last_seq":1,"seq":1,"author":"local","time":[0-9]{13},"world_hash":"[0-9a-f]{16}","chunks":\[\[0,0\]\]\}$' "$TMP/body"
hash1=$(hash_of w)

# ---- every bad edit: its status, a detail naming the field, nothing applied ------
big=$(printf '%*s' 66000 '' | tr ' ' ' ')
many=$(for i in $(seq 257); do printf '%s,' "$ok"; done)
while IFS='|' read -r want field body; do
	[ -n "$want" ] || continue
	got=$(post w "$body" "${JSON[@]}")
	check "$want for ${body:0:60}" eq "$got" "$want"
	check "detail names $field" grep -q "\"detail\":\"[^\"]*$field" "$TMP/body"
done <<EOF
400|body|{"edits":[
400|body|{"edits":[{"op":"raise","x":NaN,"z":0,"radius":1,"strength":1}]}
400|edits\[0\].op|{"edits":[{"op":"dig","x":0,"z":0,"radius":1,"strength":1}]}
400|edits\[0\].radius|{"edits":[{"op":"raise","x":0,"z":0,"strength":1}]}
400|edits\[0\].x|{"edits":[{"op":"raise","x":1e999,"z":0,"radius":1,"strength":1}]}
400|edits\[0\].x|{"edits":[{"op":"raise","x":"1","z":0,"radius":1,"strength":1}]}
400|edits\[1\].colour|{"edits":[$ok,{"op":"raise","x":0,"z":0,"radius":1,"strength":1,"colour":1}]}
400|edits\[0\].height|{"edits":[{"op":"raise","x":0,"z":0,"radius":1,"strength":1,"height":2}]}
400|edits|{"edits":{}}
400|edits|[]
422|edits\[0\].radius|{"edits":[{"op":"raise","x":0,"z":0,"radius":0,"strength":1}]}
422|edits\[0\].radius|{"edits":[{"op":"raise","x":0,"z":0,"radius":5000,"strength":1}]}
422|edits\[1\].strength|{"edits":[$ok,{"op":"lower","x":0,"z":0,"radius":1,"strength":1e9}]}
422|edits\[0\].strength|{"edits":[{"op":"flatten","x":0,"z":0,"radius":1,"strength":2,"height":0}]}
422|edits|{"edits":[]}
422|edits|{"edits":[${many%,}]}
EOF
check "415 without a JSON content type" eq "$(post w "{\"edits\":[$ok]}")" 415
check "413 for a 65 KiB body" eq "$(post w "{\"edits\":[$ok]}$big" "${JSON[@]}")" 413
check "GET is not POST" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' -X PUT "$BASE/v1/worlds/w/edits")" 405
check "nothing applied: seq still 1" eq "$(seq_of w)" 1
check "nothing applied: same world hash" eq "$(hash_of w)" "$hash1"
m=$("${CURL[@]}" "$BASE/metrics")
check "metrics count rejects by status" contains "$m" 'terrain_edit_rejects_total{status="422"} 6'
check "metrics count the 413" contains "$m" 'terrain_edit_rejects_total{status="413"} 1'
for k in terrain_edits_total terrain_edit_batches_total terrain_wal_commits_total \
	terrain_wal_last_commit_records terrain_sse_subscribers terrain_worlds; do
	check "metrics has $k" contains "$m" "$k "
done

# ---- reads, ranges, CORS -----------------------------------------------------------------
code() { "${CURL[@]}" -o "$TMP/body" -w '%{http_code}' "$@"; }
check "hashes of a rectangle" eq "$(code "$BASE/v1/worlds/w/hashes?cx0=-1&cz0=-1&cx1=1&cz1=1")" 200
check "hashes list the edited chunk" grep -qE '"chunks":\[\{"cx":0,"cz":0,"version":1,"hash":"[0-9a-f]{16}"\}\]' "$TMP/body"
check "hashes: 65 chunks wide is 400" eq "$(code "$BASE/v1/worlds/w/hashes?cx0=0&cz0=0&cx1=64&cz1=0")" 400
check "hashes: missing corner is 400" eq "$(code "$BASE/v1/worlds/w/hashes?cx0=0&cz0=0&cx1=1")" 400
check "edits: bad since is 400" eq "$(code "$BASE/v1/worlds/w/edits?since=-1")" 400
check "edits: limit 0 is 400" eq "$(code "$BASE/v1/worlds/w/edits?limit=0")" 400
check "edits of an unedited world" eq "$("${CURL[@]}" "$BASE/v1/worlds/other/edits?since=5" |
	sed 's/"world_hash":"[0-9a-f]*"/H/')" '{"since":5,"seq":0,H,"edits":[]}'
pre=$("${CURL[@]}" -X OPTIONS -D - -o /dev/null -H "Origin: http://127.0.0.1:$PORT" \
	-H 'Access-Control-Request-Method: POST' "$BASE/v1/worlds/w/edits" | tr -d '\r')
check "preflight allows POST from the server's own origin" \
	grep -q "Access-Control-Allow-Methods: GET, HEAD, POST, OPTIONS" <<<"$pre"
check "preflight allows Content-Type and Authorization" \
	grep -q "Access-Control-Allow-Headers: .*Content-Type, Authorization" <<<"$pre"
check "server stops with 0" server_stop

# ---- the token ----------------------------------------------------------------------------
TERRAIN_EDIT_TOKEN=s3cret server_start --data-dir "$TMP/token"
check "401 without a token" eq "$(post w "{\"edits\":[$ok]}" "${JSON[@]}" -D "$TMP/h")" 401
check "401 says WWW-Authenticate: Bearer" grep -qi '^www-authenticate: bearer' "$TMP/h"
check "401 with a wrong token" eq "$(post w "{\"edits\":[$ok]}" "${JSON[@]}" -H 'Authorization: Bearer s3cre')" 401
check "401 with another scheme" eq "$(post w "{\"edits\":[$ok]}" "${JSON[@]}" -H 'Authorization: Basic s3cret')" 401
check "200 with the token" eq "$(post w "{\"edits\":[$ok]}" "${JSON[@]}" -H 'Authorization: Bearer s3cret')" 200
check "reads stay open" eq "$(code "$BASE/v1/worlds/w/edits")" 200
check "one edit applied" eq "$(seq_of w)" 1
check "server stops with 0" server_stop
server_start --data-dir "$TMP/token2" --edit-token other
check "--edit-token works too" eq "$(post w "{\"edits\":[$ok]}" "${JSON[@]}" -H 'Authorization: Bearer other')" 200
check "server stops with 0" server_stop

# ---- a corrupt log: refuse to start, repair-log, start --------------------------------------
server_start --data-dir "$TMP/bad"
for i in 1 2 3; do post w "{\"edits\":[$ok]}" "${JSON[@]}" >/dev/null; done
check "three edits" eq "$(seq_of w)" 3
check "server stops with 0" server_stop
# file header 32 bytes; each record: 16-byte header + 86-byte payload
# (batch version 3 of world w by local: docs/edit-log.md)
rec2=$((32 + 102))
printf 'X' | dd of="$TMP/bad/edits.log" bs=1 seek=$((rec2 + 40)) conv=notrunc status=none
"$SERVER_BIN" serve --port 0 --data-dir "$TMP/bad" 2>"$TMP/err" &
pid=$!
SERVERS+=("$pid")
wait "$pid"
check "a corrupt record refuses to start" test $? -ne 0
check "and names the offset" grep -q "corrupt record at offset $rec2" "$TMP/err"
check "and the recovery command" grep -q "repair-log --data-dir $TMP/bad --truncate-at $rec2" "$TMP/err"
check "repair-log refuses a non-boundary" not "$SERVER_BIN" repair-log --data-dir "$TMP/bad" --truncate-at 100
check "repair-log needs its arguments" eq "$("$SERVER_BIN" repair-log --data-dir "$TMP/bad" 2>/dev/null; echo $?)" 2
check "repair-log cuts at the offset" "$SERVER_BIN" repair-log --data-dir "$TMP/bad" --truncate-at "$rec2"
check "the bytes cut are saved" test -s "$TMP/bad/edits.log.cut-$rec2"
server_start --data-dir "$TMP/bad"
check "the edit before the damage is there" eq "$(seq_of w)" 1
check "repair-log refuses while a server runs" not "$SERVER_BIN" repair-log --data-dir "$TMP/bad" \
	--truncate-at 32
check "a second server on the same data dir is refused" \
	not "$SERVER_BIN" serve --port 0 --data-dir "$TMP/bad" 2>/dev/null
check "server stops with 0" server_stop
finish
