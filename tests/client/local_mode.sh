#!/bin/bash
# local_mode.sh - terrain-client fetch and walk --local against the real
# server (issue 29): a world with edits, the map of `fetch --local` byte for
# byte the map of `fetch` (heights and materials, every ring at its
# precision, edited chunks and their neighbours among them), most tiles
# made here and the edited ones fetched; `walk --local` without errors,
# few requests; `follow --local` applying the log here and comparing every
# touched chunk's version and hash with GET /hashes, through edits, a
# revert, its undo and a revert by author; and the refusals,
# through a lying proxy
# (tests/lib/local_proxy.py): another generator fingerprint, another
# golden-tile digest, none, a tile whose edit_seq is not the version
# GET /hashes gives, and a generator this client does not have.
. "$(dirname "$0")/../lib/lib.sh"
CLIENT=$BUILD/terrain-client
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$TMP/presets"
sed 's/"name": *"[^"]*"/"name": "mine"/' "$ROOT/presets/alpine.json" >"$TMP/presets/mine.json"
server_start --presets "$TMP/presets" --edit-rate 0 --edit-area 0

post() {
	curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -d "$2" "$BASE/v1/worlds/$1/edits"
}
# one on a chunk corner (four chunks), one inside a chunk, one far away
check "edits posted" post 77 '{"edits":[{"op":"raise","x":256,"z":0,"radius":30,"strength":6},
	{"op":"flatten","x":-300,"z":420,"radius":60,"strength":0.8,"height":12},
	{"op":"lower","x":900,"z":-700,"radius":25,"strength":3,"falloff":"linear"}]}'

fetch() { # NAME ARGS...: the map and the report
	local name=$1
	shift
	"$CLIENT" fetch --server "$BASE" --seed 77 --x 40 --z 60 --radius 1024 -o "$TMP/$name.png" "$@" \
		>"$TMP/$name.out" 2>&1
}
check "fetch (every tile from the server)" fetch remote
check "fetch --local" fetch local --local
check "the two maps are byte for byte the same" cmp "$TMP/remote.png" "$TMP/local.png"
cat "$TMP/local.out"
made=$(sed -n 's/.*local mode: \([0-9]*\) tiles generated here, \([0-9]*\) fetched.*/\1 \2/p' "$TMP/local.out")
check "most tiles made here, the edited chunks' (and their neighbours') fetched: $made" \
	test "${made% *}" -gt 40 -a "${made#* }" -ge 9 -a "${made#* }" -lt 40
check "fetch --exact --local too" fetch exact-local --exact --local
check "fetch --exact" fetch exact --exact
check "  the same maps" cmp "$TMP/exact.png" "$TMP/exact-local.png"
check "an edited world: the maps with and without edits differ" \
	not cmp -s "$TMP/local.png" <("$CLIENT" fetch --server "$BASE" --seed 78 --x 40 --z 60 --radius 1024 \
		-o /dev/stdout 2>/dev/null)

walk() {
	"$CLIENT" walk --server "$BASE" --seed 77 --path -600,0:900,300 --speed 30 --radius 1024 \
		--quiet --revalidate 5 "$@" >"$TMP/walk.out" 2>&1
}
check "walk --local: no errors" walk --local
cat "$TMP/walk.out"
check "  it made tiles and asked GET /hashes" has "$TMP/walk.out" 'local mode: [1-9][0-9]* tiles generated here, [0-9]+ fetched, [1-9]'
check "  far fewer requests than tiles" \
	awk '/^walk: [0-9]+ steps/ { r = $4; t = $10 } END { exit !(r * 5 < t) }' "$TMP/walk.out"

# ---- follow --local: edits applied here, hashes compared, nothing refetched -----------
# --duration only bounds it: it is stopped (SIGTERM, exit 0) once it has
# checked the three batches, however long that takes on a busy machine
"$CLIENT" follow --server "$BASE" --seed 77 --local --duration "$(scaled 300)" >"$TMP/follow.out" 2>&1 &
FOLLOW=$!
following() { grep -q "$1" "$TMP/follow.out" || ! kill -0 "$FOLLOW" 2>/dev/null; }
wait_until 120 following 'following its edits'
check "follow --local started on the log so far" has "$TMP/follow.out" 'at seq 3, world_hash'
post 77 '{"edits":[{"op":"raise","x":10,"z":10,"radius":300,"strength":2}]}'
post 77 '{"edits":[{"op":"set","x":-512,"z":-512,"radius":5,"height":40},{"op":"lower","x":5000,"z":5000,"radius":9,"strength":1}]}'
post 77 '{"edits":[{"op":"flatten","x":128,"z":128,"radius":700,"strength":0.5,"height":3}]}'
wait_until 300 following '^seq [0-9]*\.\.7 '
# reverts (issue 36): as a loopback client; follow applies them here too
revert() {
	curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -d "$1" "$BASE/v1/worlds/77/reverts"
}
check "a revert of edits 5 on (seq 8)" revert '{"seq_from":5}'
wait_until 300 following '^seq 8\.\.8 '
check "an undo of it (seq 9)" revert '{"undo":8}'
wait_until 300 following '^seq 9\.\.9 '
check "a revert of the loopback author's edits (seq 10)" revert '{"author":"local"}'
wait_until 300 following '^seq 10\.\.10 '
kill -TERM "$FOLLOW" 2>/dev/null
wait "$FOLLOW"
rc=$?
cat "$TMP/follow.out"
check "follow --local exits 0 on SIGTERM once it has checked them" eq "$rc" 0
check "  each batch: its chunks made here, their hashes equal GET /hashes'" \
	eq "$(grep -c 'ok, [0-9]* chunks made here, hashes equal' "$TMP/follow.out")" 6
check "  the revert, the undo and the author's revert followed, hashes equal" \
	eq "$(grep -c '^seq \(8\.\.8\|9\.\.9\|10\.\.10\) .* ok, [1-9][0-9]* chunks made here, hashes equal' \
		"$TMP/follow.out")" 3
check "  the last batch's 25 or so chunks" has "$TMP/follow.out" 'seq 7\.\.7 .* ok, [1-9][0-9] chunks made here'

# ---- refusals ------------------------------------------------------------------------
proxy() { # MODE: a lying proxy in front of the server, listening; sets PBASE
	# a log of its own: one shared with the last proxy (truncated by the
	# new one when it gets to run) would give that one's port, now closed
	local log=$TMP/proxy.$1.log
	python3 "$ROOT/tests/lib/local_proxy.py" "$BASE" "$1" >"$log" 2>&1 &
	PROXY=$!
	proxy_port() {
		PPORT=$(sed -n 's/listening on 127\.0\.0\.1:\([0-9]*\)/\1/p' "$log")
		[ -n "$PPORT" ] || ! kill -0 "$PROXY" 2>/dev/null
	}
	wait_until 120 proxy_port
	[ -n "$PPORT" ] || { echo "the proxy did not start:"; cat "$log"; }
	PBASE=http://127.0.0.1:$PPORT
}
refused() { # MODE WHAT: fetch --local through the proxy exits 1 naming WHAT
	proxy "$1"
	"$CLIENT" fetch --server "$PBASE" --seed 77 --x 40 --z 60 --radius 300 -o "$TMP/no.png" --local \
		>"$TMP/refused.out" 2>&1
	local rc=$?
	kill "$PROXY" 2>/dev/null
	wait "$PROXY" 2>/dev/null
	cat "$TMP/refused.out"
	[ "$rc" = 1 ] && grep -q -- "$2" "$TMP/refused.out"
}
check "refused: another generator fingerprint" refused fingerprint "fingerprint is"
check "refused: other golden tiles" refused selfcheck "other golden tiles"
check "refused: a server that names no golden tiles" refused noselfcheck 'no "selfcheck"'
check "refused: a tile whose edit_seq is not /hashes' version" refused hashes "GET /hashes says version 99"
passes() { # the truth, through the proxy: fetch --local takes it
	proxy none
	"$CLIENT" fetch --server "$PBASE" --seed 77 --x 40 --z 60 --radius 300 -o "$TMP/p.png" --local >/dev/null
	local rc=$?
	kill "$PROXY" 2>/dev/null
	wait "$PROXY" 2>/dev/null
	return $rc
}
check "the lying proxy passes the truth through (fetch --local)" passes
"$CLIENT" fetch --server "$BASE" --seed 77 --gen mine --x 0 --z 0 --radius 300 -o "$TMP/m.png" --local \
	>"$TMP/mine.out" 2>&1
rc=$?
check "refused: a generator not built into the client ($(head -c 120 "$TMP/mine.out"))" \
	eq "$rc $(grep -c 'built-in presets' "$TMP/mine.out")" "1 1"
check "the server stops cleanly" server_stop
finish
