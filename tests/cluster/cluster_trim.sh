#!/bin/bash
# cluster_trim.sh - a shared Redis log that stops growing: three nodes
# (snapshots every 300 edits) on a primary with a replica (real
# redis-server on 127.0.0.1) under sustained edits. Checked: the shared
# snapshot is replaced cycle after cycle and the stream is trimmed below
# the newest one's entry, so its length stays bounded while the edits grow
# (cluster_bound.sh: from the first snapshot, and the size and time
# policies); Redis
# holds at most two snapshots; node C, stopped (SIGSTOP by pid) across
# several cycles and then continued, finds the log trimmed past what it
# followed, restores from the shared snapshot while serving reads, and
# ends on the nodes' world hash, with byte-identical tiles; its event
# streams end; a node joining afterwards on an empty data directory starts
# from the shared snapshot plus the trimmed log. An edit with an
# Idempotency-Key made before all that is still answered as a replay on c
# and on the late joiner, its batch trimmed away long since. About 40 s.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lib_redis.sh"

LOAD=$BUILD/bench/cluster_load # make tests
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
# snapshots fold every edit (--history 0), as this test expects of their
# bases; edit_reverts_cluster.sh has them keep the last --history
export TERRAIN_HISTORY=0
EVERY=300
KEEP_LOGS=cluster_trim

redis_up r1
redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
wait_for 10 online_replica || { echo "replica did not sync"; exit 1; }
r1cli() { rcli "${RPORT[r1]}" "$@"; }
# redis_node NAME: a node of the log in r1 (lib_redis.sh), snapshots every $EVERY
redis_node() { node_up "$1" --snapshot-every "$EVERY" --snapshot-bytes 0 --snapshot-interval 0 --workers 2; }
# alive: /healthz answers 200 (reads served)
healthy() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/healthz")" = 200 ]; }
state() {
	curl -s --max-time 5 "http://127.0.0.1:$1/v1/worlds/trim" |
		sed -n 's/.*"edit_seq":\([0-9]*\),"world_hash":"\([0-9a-f]*\)".*/\1 \2/p'
}
head_seq() { r1cli HGET terrain:heads "default:$(curl -s "http://127.0.0.1:${NPORT[a]}/v1/worlds/trim" | sed -n 's/.*"seed":"\([0-9]*\)".*/\1/p')"; }
# every node given at the log's head, with one hash
converged() {
	local h s0 n
	h=$(head_seq) s0=$(state "${NPORT[$1]}")
	[ -n "$s0" ] && [ "${s0%% *}" = "${h:-0}" ] || return 1
	for n in "$@"; do [ "$(state "${NPORT[$n]}")" = "$s0" ] || return 1; done
}
meta() { r1cli HGET terrain:snapshot:meta "$1"; }
snapshots() { r1cli --scan --pattern 'terrain:snapshot:*:*' | wc -l; }
tile() { curl -s -H 'Accept-Encoding: identity' "http://127.0.0.1:$1/v1/worlds/trim/chunks/0/$2/$3" | md5sum; }
same_tiles() {
	local cx cz
	for cx in -3 -1 0 2; do for cz in -2 0 1 3; do
		[ "$(tile "${NPORT[$1]}" $cx $cz)" = "$(tile "${NPORT[$2]}" $cx $cz)" ] ||
			{ echo "  chunk $cx,$cz differs"; return 1; }
	done; done
}

redis_node a
redis_node b
redis_node c
curl -sN --max-time 120 "http://127.0.0.1:${NPORT[c]}/v1/worlds/trim/events" >"$TMP/sse.c" &
SSE=$!
BG+=($SSE)

# a keyed edit first: its batch is trimmed away below
keyed() { # NODE: POST the keyed edit there; the answer's "first_seq world_hash replay"
	curl -s -H 'Content-Type: application/json' -H 'Idempotency-Key: "early-1"' \
		-d '{"edits":[{"op":"lower","x":-300,"z":40,"radius":25,"strength":2}]}' \
		"http://127.0.0.1:${NPORT[$1]}/v1/worlds/trim/edits" |
		python3 -c 'import json,sys; a=json.load(sys.stdin); print(a.get("first_seq"), a.get("world_hash"), a.get("replay", False))'
}
early=$(keyed a)
echo "  the keyed edit: $early"

# sustained edits through a and b; c stopped after the first cycles
"$LOAD" -t 3600 -r 1000 "${NPORT[a]},${NPORT[b]}" 8 trim >"$TMP/load.log" &
LP=$!
BG+=($LP)
wait_for 60 sh -c "[ \"\$(redis-cli -p ${RPORT[r1]} HGET terrain:snapshot:meta edits 2>/dev/null)\" -ge $EVERY ] 2>/dev/null" ||
	{ echo "no snapshot shared"; cat "${NLOG[a]}"; exit 1; }
check "a snapshot is shared while the edits go on" test "$(meta edits)" -ge "$EVERY"
state "${NPORT[c]}" >"$TMP/c.before"
kill -STOP "${NPID[c]}"
echo "  node c stopped at $(cat "$TMP/c.before")"

# at least four more shares: the log is trimmed below c's last entry
first=$(meta edits) cycles=0 maxlen=0 maxsnaps=0 prev=$first
for i in $(seq 1 600); do
	sleep 0.1
	e=$(meta edits) len=$(r1cli XLEN terrain:log) ns=$(snapshots)
	[ -n "$len" ] && [ "$len" -gt "$maxlen" ] && maxlen=$len
	[ "$ns" -gt "$maxsnaps" ] && maxsnaps=$ns
	[ -n "$e" ] && [ "$e" != "$prev" ] && { cycles=$((cycles + 1)); prev=$e; }
	[ "$cycles" -ge 5 ] && break
done
head=$(head_seq)
echo "  $cycles snapshots shared while c was stopped (held edits $first -> $(meta edits), head $head);" \
	"stream length at most $maxlen entries, snapshots in Redis at most $maxsnaps"
check "five snapshot cycles while c is stopped" test "$cycles" -ge 5
check "the log was trimmed" test -n "$(meta trim)"
len=$(r1cli XLEN terrain:log)
# the oldest entry and the trim point in one script: the load goes on, and
# a snapshot shared between two reads would move the trim under them
both=$(r1cli EVAL "return {redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1][1], \
	redis.call('HGET', KEYS[1], 'trim'), redis.call('HGET', KEYS[1], 'id')}" 2 \
	terrain:snapshot:meta terrain:log | tr '\n' ' ')
read -r oldest trim id <<<"$both"
check "the log starts where it was trimmed" eq "$oldest" "$trim"
check "... at the shared snapshot's own entry" eq "$trim" "$id"
check "... so it holds the batches of about one cycle ($len entries) of the $head edits" \
	test "$len" -lt $((head - first))
check "Redis holds at most two snapshots (the shared one, the next being sent)" test "$maxsnaps" -le 2

# c comes back: the log no longer holds what c followed last
kill -CONT "${NPID[c]}"
check "node c says it fell behind the trim" wait_for 15 has "${NLOG[c]}" 'no longer holds entry'
check "... and restores from the shared snapshot" wait_for 30 has "${NLOG[c]}" 'caught up from the shared snapshot'
check "... reads kept working meanwhile" test "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:${NPORT[c]}/v1/worlds/trim/chunks/0/0/0")" = 200
gone() { ! kill -0 "$1" 2>/dev/null; }
check "... its event stream was ended (clients resume from the snapshot)" wait_for 5 gone "$SSE"
check "... it takes edits again" wait_for 15 healthy "${NPORT[c]}"
healthy "${NPORT[c]}" || { echo "  node c's log, the end:"; tail -40 "${NLOG[c]}" | sed 's/^/    /'; }
check "... and counts the restore" has <(curl -s "http://127.0.0.1:${NPORT[c]}/metrics") '^terrain_edit_log_restores_total 1$'
check "the sharing nodes count the snapshots the log took" has <(curl -s "http://127.0.0.1:${NPORT[a]}/metrics"; curl -s "http://127.0.0.1:${NPORT[b]}/metrics") '^terrain_edit_log_snapshots_shared_total [1-9]'

kill -TERM "$LP"
wait "$LP"
cat "$TMP/load.log"
check "the load was acknowledged throughout" has "$TMP/load.log" ' ok [1-9][0-9]{3,} '
check "a, b and c end on one world hash at the log's head" wait_for 20 converged a b c
check "... with byte-identical tiles on c and a" same_tiles a c
check "c's world starts at the snapshot it restored" test "$(curl -s "http://127.0.0.1:${NPORT[c]}/v1/worlds/trim" | sed -n 's/.*"base":\([0-9]*\).*/\1/p')" -gt "$(cut -d' ' -f1 "$TMP/c.before")"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${NPORT[c]}/v1/worlds/trim/edits?since=1")
check "... and answers 410 for the log before it" eq "$code" 410

# an edit on c reaches the others
curl -s -o /dev/null -H 'Content-Type: application/json' \
	-d '{"edits":[{"op":"raise","x":10,"z":20,"radius":30,"strength":1}]}' \
	"http://127.0.0.1:${NPORT[c]}/v1/worlds/trim/edits"
check "an edit on c reaches a and b" wait_for 10 converged a b c

# a node joining now: the shared snapshot plus the trimmed log
redis_node d
check "a late joiner takes the shared snapshot" has "${NLOG[d]}" 'took the shared snapshot'
check "... and converges" wait_for 20 converged a b c d
check "the keyed edit (the first) was trimmed away: the log holds fewer batches than edits" \
	test "$(r1cli XLEN terrain:log)" -lt "$(head_seq)"
check "its retry on c, restored from the shared snapshot, is a replay of it" \
	eq "$(keyed c)" "${early% *} True"
check "... and on the late joiner" eq "$(keyed d)" "${early% *} True"
finish
