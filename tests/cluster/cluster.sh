#!/bin/bash
# run: once
# cluster.sh - many nodes, one world: three terrain-server nodes on one edit
# log in Redis (a primary with appendonly yes + appendfsync always, a
# replica, three Sentinels; real redis-server processes on 127.0.0.1), and
# the faults of the durability table in docs/edits.md: convergence under 16
# clients, the file log against the Redis log, a node killed, the primary
# killed ten times (Sentinel fails over; acknowledged edits lost must be
# 0), the replica stopped, the whole of Redis stopped, Redis restarted,
# two nodes appending to one world at once. Every process is killed by pid.
# CLUSTER_ROUNDS: primary kills (10; make test runs 3 for its clang and
# ASan builds); CLUSTER_KEEP=1 keeps the logs in BUILD/test-logs/cluster/
# (they are kept anyway when a check fails). About 90 s.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lib_redis.sh"

CLIENT=$BUILD/terrain-client
LOAD=$BUILD/bench/cluster_load # make tests
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
ROUNDS=${CLUSTER_ROUNDS:-10}
KEEP_LOGS=cluster

# the nodes' log: the Sentinels' (set once they are up), a 1 s timeout
SPEC="sentinel://127.0.0.1:PORT1,127.0.0.1:PORT2,127.0.0.1:PORT3/m"
sentinel_node() { node_up "$1" "$SPEC?timeout=1000"; }
# (ready, lib_redis.sh: ready for edits, /readyz; /healthz is liveness)
all_ready() { local i; for i in 1 2 3; do ready "${NPORT[$i]}" || return 1; done; }
ports() { echo "${NPORT[1]},${NPORT[2]},${NPORT[3]}"; }
# "edit_seq world_hash" of world SEED on node port
state() {
	curl -s "http://127.0.0.1:$1/v1/worlds/$2" |
		sed -n 's/.*"edit_seq":\([0-9]*\),"world_hash":"\([0-9a-f]*\)".*/\1 \2/p'
}
# the log's head of world SEED (its numeric seed names it in terrain:heads)
head_seq() {
	local id
	id=$(curl -s "http://127.0.0.1:${NPORT[1]}/v1/worlds/$1" | sed -n 's/.*"seed":"\([0-9]*\)".*/\1/p')
	rcli "${RPORT[$(master)]}" HGET terrain:heads "default:$id"
}
# every node at the log's head of world SEED, with one hash
converged() {
	local s1 s2 s3 h
	h=$(head_seq "$1")
	s1=$(state "${NPORT[1]}" "$1") s2=$(state "${NPORT[2]}" "$1") s3=$(state "${NPORT[3]}" "$1")
	[ -n "$s1" ] && [ "$s1" = "$s2" ] && [ "$s2" = "$s3" ] && [ "${s1%% *}" = "${h:-0}" ]
}
# the whole log of world SEED on node port, one edit a line
dump() {
	python3 - "$1" "$2" <<-'EOF'
	import json, sys, urllib.request
	port, seed, since = sys.argv[1], sys.argv[2], 0
	while True:
	    url = f"http://127.0.0.1:{port}/v1/worlds/{seed}/edits?since={since}&limit=1000"
	    page = json.load(urllib.request.urlopen(url))
	    for e in page["edits"]:
	        print(e["seq"], round(e["x"] * 1000), round(e["z"] * 1000), round(e["radius"] * 1000))
	    if "next" not in page:
	        break
	    since = page["next"]
	EOF
}
# lost ACKS DUMP: acknowledged batches the log does not hold as acked
lost() {
	python3 - "$1" "$2" <<-'EOF'
	import sys
	log = {int(l.split()[0]): l.split()[1:] for l in open(sys.argv[2])}
	lost = [l for l in open(sys.argv[1]) if log.get(int(l.split()[0])) != l.split()[1:]]
	print(len(lost))
	EOF
}
# gapless DUMP: seqs 1..N once each, in order
gapless() {
	awk '$1 != NR { bad = 1 } END { exit bad }' "$1"
}
# events FILE N: a recorded event stream carried batches 1..N, in order
events() {
	python3 - "$1" "$2" <<-'EOF'
	import json, sys
	want = 1
	for line in open(sys.argv[1]):
	    if line.startswith("data: "):
	        b = json.loads(line[6:])
	        if b["first_seq"] != want:
	            print(f"  event at {b['first_seq']}, expected {want}")
	            sys.exit(1)
	        want = b["last_seq"] + 1
	if want != int(sys.argv[2]) + 1:
	    print(f"  events end at {want - 1}, log at {sys.argv[2]}")
	    sys.exit(1)
	EOF
}
tile() {
	curl -s -H 'Accept-Encoding: identity' "http://127.0.0.1:$1/v1/worlds/$2/chunks/0/$3/$4" | md5sum
}
# same_tiles SEED ACKS: byte-identical tiles on every node for (up to 12)
# chunks the acknowledged edits touched
same_tiles() {
	local x z cx cz a b c
	while read -r _ x z _; do
		cx=$(( (x / 1000 + 100000 * 256) / 256 - 100000 )) cz=$(( (z / 1000 + 100000 * 256) / 256 - 100000 ))
		a=$(tile "${NPORT[1]}" "$1" $cx $cz) b=$(tile "${NPORT[2]}" "$1" $cx $cz) c=$(tile "${NPORT[3]}" "$1" $cx $cz)
		[ "$a" = "$b" ] && [ "$b" = "$c" ] || { echo "  chunk $cx,$cz differs"; return 1; }
	done < <(head -n 12 "$2")
}
post() { # PORT SEED BODY: prints the status
	curl -s -o /dev/null -w '%{http_code}' --max-time "${3:-5}" -H 'Content-Type: application/json' \
		-d '{"edits":[{"op":"raise","x":1,"z":2,"radius":3,"strength":0.5}]}' \
		"http://127.0.0.1:$1/v1/worlds/$2/edits"
}
# edit_ok: every node takes an edit (each finds the new primary on its own)
edit_ok() {
	local i
	for i in 1 2 3; do [ "$(post "${NPORT[$i]}" probe)" = 200 ] || return 1; done
}

# ---------------------------------------------------------------- the cluster
redis_up r1
redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
wait_for 10 online_replica || { echo "replica did not sync"; exit 1; }
sentinel_up s1
sentinel_up s2
sentinel_up s3
SPEC="sentinel://127.0.0.1:${RPORT[s1]},127.0.0.1:${RPORT[s2]},127.0.0.1:${RPORT[s3]}/m"
sentinel_node 1
sentinel_node 2
sentinel_node 3
check "three nodes on one Redis log are healthy" all_ready
check "metrics name the redis backend" has <(curl -s "http://127.0.0.1:${NPORT[1]}/metrics") \
	'^terrain_edit_log_info\{backend="redis"\} 1'

# a node that would make another world is refused, saying why
mkdir -p "$TMP/presets"
sed 's/"octaves": *[0-9]*/"octaves": 3/' presets/default.json >"$TMP/presets/default.json"
timeout 40 "$SERVER_BIN" serve --port 0 --data-dir "$TMP/other" --edit-log "$SPEC" \
	--presets "$TMP/presets" >"$TMP/other.log" 2>&1
check "a node with another generator is refused ($?)" has "$TMP/other.log" \
	'refusing to start: .*another world.*default'

# a node that wants two replicas to confirm (WAIT 2) gets one here: the
# batch is on the primary, not confirmed: 504, outcome unknown
server_start --data-dir "$TMP/node4" --edit-log "$SPEC?replicas=2&timeout=1000"
wait_for 10 ready "$PORT"
check "?replicas=2 with one replica: edits get 504 (WAIT 2 short)" eq "$(post "$PORT" two 3)" 504
server_stop >/dev/null

# ?replicas=all with two replicas: an acknowledged edit is on both (WAIT 2),
# so whichever a failover promotes holds it; a stopped replica (still listed
# by the primary) slows edits to the WAIT's timeout but does not stop them
redis_up r3 --replicaof 127.0.0.1 "${RPORT[r1]}"
two_online() { [ "$(rcli "${RPORT[r1]}" INFO replication | grep -c 'state=online')" = 2 ]; }
wait_for 10 two_online || echo "  (r3 did not come online)"
server_start --data-dir "$TMP/node5" --edit-log "$SPEC?replicas=all&timeout=1000"
wait_for 10 ready "$PORT"
sleep 0.6 # a beat: the node learns both replicas from ROLE
"$LOAD" -n 300 "$PORT" 4 all >"$TMP/load.all"
xlen() { rcli "${RPORT[$1]}" XLEN terrain:log; }
lens="$(xlen r1) $(xlen r2) $(xlen r3)"
check "?replicas=all: 300 edits acknowledged" has "$TMP/load.all" ' ok 300 '
check "... each on both replicas when acknowledged (stream lengths $lens)" \
	eq "$(echo "$lens" | tr ' ' '\n' | sort -u | wc -l)" 1
kill -STOP "${RPID[r3]}"
check "... one replica stopped: edits are still acknowledged" eq "$(post "$PORT" all 3)" 200
check "... and the node says they are on fewer replicas" \
	wait_for 5 has "$SERVER_LOG" '1 of 2 replicas confirmed.*fewer replicas'
kill -CONT "${RPID[r3]}"
check "... back: the node says every replica confirms again" \
	wait_for 10 sh -c "curl -s -o /dev/null --max-time 3 -H 'Content-Type: application/json' \
		-d '{\"edits\":[{\"op\":\"raise\",\"x\":1,\"z\":2,\"radius\":3,\"strength\":0.5}]}' \
		http://127.0.0.1:$PORT/v1/worlds/all/edits; grep -q 'every replica confirms again' '$SERVER_LOG'"
server_stop >/dev/null
kill_ours KILL "${RPID[r3]}"
wait "${RPID[r3]}" 2>/dev/null
unset 'RPID[r3]'

# ---------------------------------------------------------------- convergence
for i in 1 2 3; do
	curl -sN --max-time 120 "http://127.0.0.1:${NPORT[$i]}/v1/worlds/conv/events" >"$TMP/sse.$i" &
	BG+=($!) SSE[$i]=$!
done
sleep 0.3
"$LOAD" -n 4000 -a "$TMP/acks.conv" "$(ports)" 16 conv >"$TMP/load.conv"
cat "$TMP/load.conv"
check "16 clients on 3 nodes: every batch acknowledged" has "$TMP/load.conv" ' ok 4000 '
check "every node at the log head with one world hash" wait_for 10 converged conv
for i in 1 2 3; do dump "${NPORT[$i]}" conv >"$TMP/dump.conv.$i"; done
check "every node holds the same log" cmp -s "$TMP/dump.conv.1" "$TMP/dump.conv.2"
check "... on all three" cmp -s "$TMP/dump.conv.1" "$TMP/dump.conv.3"
check "the log has seqs 1..N once each" gapless "$TMP/dump.conv.1"
check "every acknowledged batch is in the log as acknowledged" eq "$(lost "$TMP/acks.conv" "$TMP/dump.conv.1")" 0
check "touched chunks: byte-identical tiles on every node" same_tiles conv "$TMP/acks.conv"
sleep 0.3
for i in 1 2 3; do kill "${SSE[$i]}" 2>/dev/null; done
head=$(head_seq conv)
for i in 1 2 3; do
	check "node $i's event stream carried every batch in order" events "$TMP/sse.$i" "$head"
done

# ---------------------------------------------------------------- conflicts
"$LOAD" -p -n 3000 -a "$TMP/acks.race" "${NPORT[1]},${NPORT[2]}" 2 race >"$TMP/load.race"
cat "$TMP/load.race"
check "two nodes appending to one world: all acknowledged" has "$TMP/load.race" ' ok 3000 '
check "... every node at the head" wait_for 10 converged race
dump "${NPORT[3]}" race >"$TMP/dump.race"
check "... no gap, no duplicate" gapless "$TMP/dump.race"
check "... the log is as long as the acknowledged batches" eq "$(wc -l <"$TMP/dump.race")" 3000
check "... each acknowledged at its own seq" eq "$(cut -d' ' -f1 "$TMP/acks.race" | sort -u | wc -l)" 3000
check "... every acknowledged batch in the log" eq "$(lost "$TMP/acks.race" "$TMP/dump.race")" 0
for i in 1 2 3; do
	check "... node $i: the hash chain verifies from the start" \
		"$CLIENT" follow --server "http://127.0.0.1:${NPORT[$i]}" --seed race --duration 1
done

# ---------------------------------------------------------------- differential
server_start --data-dir "$TMP/filelog" --edit-log file
FPORT=$PORT
for i in $(seq 1 40); do
	case $((i % 4)) in
	0) e="{\"op\":\"raise\",\"x\":$((i * 37)).25,\"z\":$((i * -53)),\"radius\":$((5 + i)),\"strength\":1.5}" ;;
	1) e="{\"op\":\"lower\",\"x\":$((i * 41)),\"z\":$((i * 29)),\"radius\":$((9 + i)),\"strength\":0.75}" ;;
	2) e="{\"op\":\"flatten\",\"x\":$((i * -17)),\"z\":$((i * 13)),\"radius\":40,\"strength\":0.5,\"height\":$i}" ;;
	3) e="{\"op\":\"set\",\"x\":$((i * 11)),\"z\":$((i * 7)),\"radius\":20,\"height\":$((i * 3)),\"falloff\":\"linear\"}" ;;
	esac
	for p in "$FPORT" "${NPORT[$(( i % 3 + 1 ))]}"; do
		curl -s -o /dev/null -H 'Content-Type: application/json' -d "{\"edits\":[$e]}" \
			"http://127.0.0.1:$p/v1/worlds/diff/edits"
	done
done
wait_for 5 converged diff
# the world hash of version-3 records covers each log's own time, so two
# logs of the same edits agree on the edits and the chunks, not on it
check "file log and Redis log: the same edit count" eq "$(state "$FPORT" diff | cut -d' ' -f1)" \
	"$(state "${NPORT[2]}" diff | cut -d' ' -f1)"
chunks_of() { curl -s "http://127.0.0.1:$1/v1/worlds/diff/hashes?cx0=-4&cz0=-4&cx1=4&cz1=4" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["chunks"])'; }
check "... and the same chunk versions and hashes" eq "$(chunks_of "$FPORT")" "$(chunks_of "${NPORT[2]}")"
tiles_equal() {
	local cz cx
	for cz in -3 -1 0 1; do for cx in -3 -1 0 1 5; do
		[ "$(tile "$FPORT" diff $cx $cz)" = "$(tile "${NPORT[3]}" diff $cx $cz)" ] || return 1
	done; done
}
check "... and byte-identical tiles" tiles_equal

# ---------------------------------------------------------------- node kill
"$LOAD" -t 4 -a "$TMP/acks.kill" "$(ports)" 16 kill >"$TMP/load.kill" &
lp=$!
BG+=($lp)
sleep 1.5
kill -KILL "${NPID[3]}"
wait "$lp"
cat "$TMP/load.kill"
sentinel_node 3
check "the restarted node catches up" wait_for 15 converged kill
dump "${NPORT[1]}" kill >"$TMP/dump.kill"
check "node kill -9: every acknowledged batch is in the log" eq "$(lost "$TMP/acks.kill" "$TMP/dump.kill")" 0
dump "${NPORT[3]}" kill >"$TMP/dump.kill.3"
check "... and the restarted node holds the same log" cmp -s "$TMP/dump.kill" "$TMP/dump.kill.3"

# ---------------------------------------------------------------- primary kill -9
before=$(curl -s "http://127.0.0.1:${NPORT[1]}/metrics" | sed -n 's/^terrain_edit_log_reconnects_total //p')
"$LOAD" -t 600 -w 2 -a "$TMP/acks.fail" "$(ports)" 8 fail >"$TMP/load.fail" &
lp=$!
BG+=($lp)
failovers=0
for round in $(seq 1 "$ROUNDS"); do
	sleep 1
	m=$(master)
	t0=$SECONDS
	kill -KILL "${RPID[$m]}"
	wait "${RPID[$m]}" 2>/dev/null
	wait_for 15 sh -c "[ \"\$(redis-cli -p ${RPORT[s1]} SENTINEL get-master-addr-by-name m | sed -n 2p)\" != ${RPORT[$m]} ]" &&
		failovers=$((failovers + 1))
	t1=$SECONDS
	redis_up "$m" --replicaof 127.0.0.1 "${RPORT[$(master)]}" # as Sentinel would
	wait_for 20 online_replica; t2=$SECONDS
	wait_for 20 all_ready; t3=$SECONDS
	echo "  round $round: failover $((t1 - t0)) s, replica $((t2 - t1)) s, nodes $((t3 - t2)) s"
	if ! { wait_for 20 online_replica && wait_for 20 all_ready && wait_for 10 edit_ok; }; then
		echo "  round $round: the cluster did not come back"
		break
	fi
done
kill -TERM "$lp"
wait "$lp"
cat "$TMP/load.fail"
check "$ROUNDS primary kills, $failovers Sentinel failovers" eq "$failovers" "$ROUNDS"
check "nodes follow the new primary without a restart" all_ready
check "... and converge" wait_for 15 converged fail
dump "${NPORT[1]}" fail >"$TMP/dump.fail"
n_lost=$(lost "$TMP/acks.fail" "$TMP/dump.fail")
echo "  acknowledged: $(wc -l <"$TMP/acks.fail"), lost: $n_lost"
check "primary kill -9 x $ROUNDS: no acknowledged edit lost" eq "$n_lost" 0
check "... some edits were acknowledged" test -s "$TMP/acks.fail"
check "the log of the failovers has seqs 1..N once each" gapless "$TMP/dump.fail"
after=$(curl -s "http://127.0.0.1:${NPORT[1]}/metrics" | sed -n 's/^terrain_edit_log_reconnects_total //p')
check "reconnects are counted ($before -> $after)" test "$after" -gt "$before"

# ---------------------------------------------------------------- the replica stopped
rep=$(other "$(master)")
kill -STOP "${RPID[$rep]}"
sleep 0.2
codes=""
for i in 1 2 3; do codes="$codes $(post "${NPORT[$i]}" stop 3)"; done
# 504 (sent, not confirmed: the batch may be in the log) or 503 (not sent)
refused() { [[ $1 =~ ^(\ 50[34]){3}$ ]]; }
check "replica stopped: edits get 503 or 504 within the timeout (1 s; curl waits 3):$codes" refused "$codes"
"$LOAD" -t 2 -a "$TMP/acks.stop" "$(ports)" 4 stop >"$TMP/load.stop"
check "... and none is acknowledged" has "$TMP/load.stop" ' ok 0 '
check "... while reads work" eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${NPORT[1]}/v1/worlds/conv/chunks/0/7/7")" 200
kill -CONT "${RPID[$rep]}"
check "replica back: edits are acknowledged again" wait_for 15 edit_ok

# ---------------------------------------------------------------- all of Redis stopped
for n in r1 r2 s1 s2 s3; do kill -STOP "${RPID[$n]}"; done
sleep 0.2
check "Redis stopped: edits get 503 or 504 within the timeout" has <(post "${NPORT[2]}" probe 3) '^50[34]$'
check "... with Retry-After" has <(curl -s -i --max-time 3 -H 'Content-Type: application/json' \
	-d '{"edits":[{"op":"raise","x":1,"z":2,"radius":3,"strength":0.5}]}' \
	"http://127.0.0.1:${NPORT[2]}/v1/worlds/probe/edits") '^Retry-After: [0-9]'
check "... reads work: world info" eq "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:${NPORT[2]}/v1/worlds/conv")" 200
check "... a tile never made before" eq "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:${NPORT[2]}/v1/worlds/conv/chunks/0/99/-99")" 200
check "... the log" eq "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:${NPORT[2]}/v1/worlds/conv/edits")" 200
check "... /readyz says edits are down" wait_for 5 not ready "${NPORT[2]}"
check "... in its body" has <(curl -s "http://127.0.0.1:${NPORT[2]}/readyz") '"edits":"unavailable"'
check "... /healthz stays 200 (alive, reads served), saying so too" \
	has <(curl -s -w ' %{http_code}' "http://127.0.0.1:${NPORT[2]}/healthz") '"edits":"unavailable".* 200$'
for n in r1 r2; do kill -CONT "${RPID[$n]}"; done
sleep 0.2
for n in s1 s2 s3; do kill -CONT "${RPID[$n]}"; done
check "Redis back: nodes recover by themselves" wait_for 20 all_ready
check "... and take edits" wait_for 15 edit_ok

# ---------------------------------------------------------------- Redis restarted
m=$(master)
kill -TERM "${RPID[$(other "$m")]}"
wait "${RPID[$(other "$m")]}"
redis_up "$(other "$m")" --replicaof 127.0.0.1 "${RPORT[$m]}"
kill -TERM "${RPID[$m]}"
wait "${RPID[$m]}"
redis_up "$m"
check "Redis restarted: nodes reconnect by themselves" wait_for 30 all_ready
check "... and take edits" wait_for 20 edit_ok

finish
