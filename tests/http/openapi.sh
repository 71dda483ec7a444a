#!/bin/bash
# openapi.sh - the OpenAPI 3.1 description (server/assets/openapi.json)
# against the real server: served as is at /v1/openapi.json, the same
# routes as `terrain-server routes`, and every operation's real answers
# (examples, errors, conditionals, the event stream, a token server's 401s,
# the 410s of a server restarted from a snapshot; content codings, ?v=
# versioned URLs, web maps) valid against it, and X-Terrain-Node on every
# answer. The checks are tests/lib/openapi_check.py (standard library only).
. "$(dirname "$0")/../lib/lib.sh"

"$SERVER_BIN" routes >"$TMP/routes"
check "terrain-server routes prints the table" test -s "$TMP/routes"

# a world whose first edits are in a snapshot: write it, then restart from it
# (--history 0: the snapshot folds them, rather than keep them for reverts)
NODE=openapi-node
server_start --data-dir "$TMP/snap" --snapshot-every 2 --node-name "$NODE" --history 0
for x in 10 20; do
	curl -sS -o /dev/null -X POST -H 'Content-Type: application/json' \
		-d "{\"edits\":[{\"op\":\"raise\",\"x\":$x,\"z\":5,\"radius\":4,\"strength\":1}]}" \
		"$BASE/v1/worlds/gone-check/edits"
done
written() {
	curl -sS "$BASE/metrics" | awk '$1 == "terrain_snapshots_written_total" { print $2 }'
}
wrote_one() { [ "$(written)" -ge 1 ] 2>/dev/null; }
wait_until 120 wrote_one
check "a snapshot was written" test "$(written)" -ge 1
check "that server stops with 0" server_stop
server_start --data-dir "$TMP/snap" --node-name "$NODE" --history 0
SNAP_BASE=$BASE

server_start --edit-rate 0 --node-name "$NODE"
BASE1=$BASE
TOKEN=openapi-check-token
server_start --data-dir "$TMP/data2" --edit-token "$TOKEN" --node-name "$NODE"
check "the description holds for all three servers" \
	python3 tests/lib/openapi_check.py server/assets/openapi.json "$TMP/routes" "$BASE1" \
	--token-base "$BASE" --token "$TOKEN" --snapshot-base "$SNAP_BASE" --snapshot-world gone-check \
	--node "$NODE"
finish
