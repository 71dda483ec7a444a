#!/bin/bash
# run: once
# cluster_snapshot.sh - a late joiner on a shared Redis log catches up from
# the snapshot another node shared, plus the log after it: node A (its
# snapshots every 100 edits) writes 300 edits and shares its snapshot in
# Redis; node B, started afterwards on an empty data directory, takes that
# snapshot, skips the batches it holds, and serves the same world (edit
# sequence, world hash, tiles) as A; a node with a newer local snapshot
# keeps its own.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

for b in redis-server redis-cli python3; do
	command -v "$b" >/dev/null || { echo "skip: $b missing (scripts/deps.sh test)"; exit 0; }
done
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
# snapshots fold every edit (--history 0), as this test expects of their
# bases; edit_reverts_cluster.sh has them keep the last --history
export TERRAIN_HISTORY=0
RPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$TMP/redis"
redis-server --port "$RPORT" --bind 127.0.0.1 --dir "$TMP/redis" --appendonly yes \
	--appendfsync always --save "" --logfile "$TMP/redis.log" &
RPID=$!
trap 'kill_ours KILL "$RPID"; cleanup' EXIT
pong() { [ "$(redis-cli -p "$RPORT" PING 2>/dev/null)" = PONG ]; }
wait_until 60 pong
LOG="redis://127.0.0.1:$RPORT?replicas=0"

metric() { "${CURL[@]}" "$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
world() { "${CURL[@]}" "$1/v1/worlds/late" | sed 's/,"base":[0-9]*//'; }
post() { # BASE N: one batch of 10 brushes
	local body='{"edits":[' i n
	for i in $(seq 0 9); do
		n=$(($2 * 10 + i))
		body+="{\"op\":\"raise\",\"x\":$(( (n * 37) % 600 - 300 )),\"z\":$(( (n * 53) % 600 - 300 )),\"radius\":$((10 + n % 60)),\"strength\":1.5}"
		[ "$i" -lt 9 ] && body+=","
	done
	body+=']}'
	[ "$("${CURL[@]}" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "$body" "$1/v1/worlds/late/edits")" = 200 ]
}
tiles() { # BASE DIR
	local cx cz
	mkdir -p "$2"
	for cx in -2 -1 0 1; do for cz in -2 -1 0 1; do
		"${CURL[@]}" -o "$2/t_${cx}_$cz" "$1/v1/worlds/late/chunks/0/$cx/$cz?layers=height,material" || return 1
	done; done
	world "$1" >"$2/world"
}

server_start --data-dir "$TMP/a" --edit-log "$LOG" --snapshot-every 100 --workers 2
A=$BASE A_LOG=$SERVER_LOG A_PID=$SERVER_PID
for b in $(seq 0 29); do post "$A" "$b" || { echo "POST $b failed"; exit 1; }; done
shared() { has "$A_LOG" "snapshot shared" && [ "$(metric "$A" terrain_snapshots_written_total)" -ge 3 ] &&
	[ -n "$(redis-cli -p "$RPORT" HGET terrain:snapshot:meta edits)" ] &&
	[ "$(redis-cli -p "$RPORT" HGET terrain:snapshot:meta edits)" -ge 200 ]; }
wait_until 120 shared
check "node A shared its snapshot in Redis" shared
held=$(redis-cli -p "$RPORT" HGET terrain:snapshot:meta edits)
for b in 30 31; do post "$A" "$b" || exit 1; done # edits after it
tiles "$A" "$TMP/a_tiles"

server_start --data-dir "$TMP/b" --edit-log "$LOG" --snapshot-every 0 --workers 2
B=$BASE
check "node B took the shared snapshot" has "$SERVER_LOG" "took the shared snapshot"
check "and started from it plus the log after it" has "$SERVER_LOG" "\\($held edits from a snapshot of [0-9]+ chunks, [0-9]+ batches of the log skipped\\)"
caught_up() { [ "$(world "$B")" = "$(cat "$TMP/a_tiles/world")" ]; }
wait_until 60 caught_up
tiles "$B" "$TMP/b_tiles"
check "node B serves node A's world, tile for tile" diff -r "$TMP/a_tiles" "$TMP/b_tiles"
check "node B's world has the snapshot as its base" test "$("${CURL[@]}" "$B/v1/worlds/late" | sed -n 's/.*"base":\([0-9]*\).*/\1/p')" -ge 200
post "$B" 32 || exit 1
same_world() { [ "$(world "$A")" = "$(world "$B")" ]; }
wait_until 60 same_world
check "an edit on B reaches A" eq "$(world "$A")" "$(world "$B")"
server_stop >/dev/null

# A's local snapshot is the one it shared: a restart keeps its own
SERVER_PID=$A_PID; server_stop >/dev/null
server_start --data-dir "$TMP/a" --edit-log "$LOG" --snapshot-every 0 --workers 2
check "a node whose own snapshot is as new keeps it" not has "$SERVER_LOG" "took the shared snapshot"
check "and starts from it" has "$SERVER_LOG" "from a snapshot"
finish
