#!/bin/bash
# edit_reverts_cluster.sh - reverts on two nodes of one Redis log (a
# primary and a replica): players alice and bob edit through both nodes, a
# moderator reverts bob's edits on one node, and both nodes serve, tile by
# tile at LOD 0 and 1, the heights of a server whose log never had bob's
# edits, with the same world and chunk hashes; an undo on the other node
# brings back the tiles of before on both. A node started afresh from the
# shared snapshot (which keeps the last --history of edits one by one)
# is the same world, and a revert taken on the other node after that
# reaches the edits the snapshot holds, on both. The file log's side is
# edit_reverts.sh.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lib_redis.sh"
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
unset TERRAIN_EDIT_TOKEN
CLIENT_BIN=$BUILD/terrain-client

printf 'a-secret-of-32-bytes-or-more-0123456789\n' >"$TMP/secret"
mint() { "$SERVER_BIN" token --secret-file "$TMP/secret" "$@"; }
ALICE=$(mint --sub alice) BOB=$(mint --sub bob) MOD=$(mint --sub mia --role moderator)
AUTH=(--token-secret-file "$TMP/secret")
A1='{"op":"raise","x":100,"z":100,"radius":60,"strength":5}'
A2='{"op":"set","x":700,"z":300,"radius":40,"height":12}'
B1='{"op":"lower","x":130,"z":120,"radius":50,"strength":4}'
B2='{"op":"flatten","x":300,"z":90,"radius":80,"strength":0.5,"height":40}'
B3='{"op":"raise","x":650,"z":330,"radius":30,"strength":2}'
CHUNKS="0,0 1,0 2,1"

# as TOKEN PORT PATH BODY: status; answer in $TMP/ans
as() {
	curl -s -o "$TMP/ans" -w '%{http_code}' --max-time 60 -H "Authorization: Bearer $1" \
		-H 'Content-Type: application/json' -d "$4" "http://127.0.0.1:$2/v1/worlds/5/$3"
}
ans() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print(json.dumps(v) if isinstance(v,(list,bool,dict)) else v)' "$TMP/ans" "$1"; }
edit() { as "$1" "$2" edits "{\"edits\":[$3]}"; }
# heights PORT DIR: the chunks of CHUNKS at LOD 0 and 1, as heights
heights() {
	local c lod
	mkdir -p "$2"
	for c in $CHUNKS; do
		for lod in 0 1; do
			curl -s --compressed -o "$2/t" "http://127.0.0.1:$1/v1/worlds/5/chunks/$lod/${c/,//}" &&
				"$CLIENT_BIN" decode --heights "$2/t" >"$2/$lod.$c" || return 1
		done
	done
	rm -f "$2/t"
}
same() { diff -rq "$1" "$2" >/dev/null; }
state() { # PORT: seq, world hash and chunk hashes
	curl -s "http://127.0.0.1:$1/v1/worlds/5/hashes?cx0=-1&cz0=-1&cx1=3&cz1=3"
}
seq_is() { [ "$(curl -s "http://127.0.0.1:$1/v1/worlds/5" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["edit_seq"])')" = "$2" ]; }

# the reference: a file log with alice's edits alone
server_start --data-dir "$TMP/ref" "${AUTH[@]}"
edit "$ALICE" "$PORT" "$A1" >/dev/null
edit "$ALICE" "$PORT" "$A2" >/dev/null
heights "$PORT" "$TMP/alice"
server_stop

redis_up r1
redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
wait_until 20 online_replica || { echo "replica did not sync"; exit 1; }
node_up a "${AUTH[@]}" --snapshot-every 3
node_up b "${AUTH[@]}" --snapshot-every 3
A=${NPORT[a]} B=${NPORT[b]}

check "alice and bob edit through both nodes" \
	eq "$(edit "$ALICE" "$A" "$A1")$(edit "$BOB" "$B" "$B1")$(edit "$BOB" "$A" "$B2")$(edit \
	"$ALICE" "$B" "$A2")$(edit "$BOB" "$B" "$B3")" 200200200200200
check "... both nodes hold the 5 edits" wait_until 30 seq_is "$A" 5
wait_until 30 seq_is "$B" 5
heights "$A" "$TMP/before"
check "... the same world on both" eq "$(state "$A")" "$(state "$B")"

check "a player may not revert: 403" eq "$(as "$ALICE" "$B" reverts '{"author":"bob"}')" 403
check "the moderator reverts bob's edits on node b" \
	eq "$(as "$MOD" "$B" reverts '{"author":"bob"}')/$(ans count)/$(ans first_seq)" 200/3/6
check "... node a follows" wait_until 30 seq_is "$A" 6
check "... the same world hash and chunk hashes on both nodes" eq "$(state "$A")" "$(state "$B")"
heights "$A" "$TMP/a.reverted"
heights "$B" "$TMP/b.reverted"
check "... node a serves, tile by tile, a log without bob's edits" same "$TMP/a.reverted" "$TMP/alice"
check "... and so does node b" same "$TMP/b.reverted" "$TMP/alice"

check "an undo on node a" eq "$(as "$MOD" "$A" reverts '{"undo":6}')" 200
check "... node b follows" wait_until 30 seq_is "$B" 7
heights "$A" "$TMP/a.undone"
heights "$B" "$TMP/b.undone"
check "... both serve the tiles of before, exactly" \
	eval 'same "$TMP/a.undone" "$TMP/before" && same "$TMP/b.undone" "$TMP/before"'
check "... the same hashes on both" eq "$(state "$A")" "$(state "$B")"

# a node started afresh takes the shared snapshot
check "a snapshot was shared" wait_until 60 has "${NLOG[a]}" 'snapshot of [0-9]+ edits'
kill -KILL "${NPID[b]}"
rm -rf "$TMP/b"
node_up b "${AUTH[@]}"
B=${NPORT[b]}
check "node b afresh took the shared snapshot" has "${NLOG[b]}" 'took the shared snapshot|restored'
check "... and is the same world" wait_until 30 eval '[ "$(state "$A")" = "$(state "$B")" ]'
check "a revert of bob's edits on node a, after the snapshot" \
	eq "$(as "$MOD" "$A" reverts '{"author":"bob"}')/$(ans count)" 200/3
check "... node b follows" wait_until 30 seq_is "$B" 8
heights "$B" "$TMP/b.again"
check "... node b, restored from the snapshot, takes out the same edits" same "$TMP/b.again" "$TMP/alice"
check "... the same hashes on both" eq "$(state "$A")" "$(state "$B")"
finish
