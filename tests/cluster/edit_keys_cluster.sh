#!/bin/bash
# edit_keys_cluster.sh - Idempotency-Key with the shared log in Redis (a
# primary with appendfsync always and one replica, real redis-server
# processes on 127.0.0.1) and two nodes: a retry on the other node gets the
# first answer; two nodes racing with one key apply it once (the append
# script decides in the log's order); a batch logged but not confirmed
# (the replica stopped) is answered 504, outcome unknown, and the retry
# with its key finds it applied, once; a node killed (kill -9) after its
# append and before its answer, the retry on the other node gets the
# first outcome; a second request with a key in flight is 409; and under
# writers without keys while a second replica is stopped again and again
# (?replicas=all), no edit answered 503 is in the log: 503 means not
# applied. Every process is killed by pid.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lib_redis.sh"

export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
unset TERRAIN_EDIT_TOKEN

BODY='{"edits":[{"op":"raise","x":50,"z":60,"radius":30,"strength":1}]}'
# post NODE KEY [SEED] [OUT]: the status; the answer in OUT ($TMP/ans)
post() {
	curl -s -o "${4:-$TMP/ans}" -w '%{http_code}' --max-time 60 -H 'Content-Type: application/json' \
		${2:+-H "Idempotency-Key: \"$2\""} -d "$BODY" \
		"http://127.0.0.1:${NPORT[$1]}/v1/worlds/${3:-5}/edits"
}
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print(json.dumps(v) if isinstance(v,(list,bool)) else v)' "${3:-$TMP/ans}" "$1"; }
seq_of() { # NODE [SEED]
	curl -s "http://127.0.0.1:${NPORT[$1]}/v1/worlds/${2:-5}" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["edit_seq"])'
}
xlen() { rcli "${RPORT[r1]}" XLEN terrain:log; }
metric() { curl -s "http://127.0.0.1:${NPORT[$1]}/metrics" | sed -n "s/^$2 //p"; }

redis_up r1
redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
wait_until 20 online_replica || { echo "replica did not sync"; exit 1; }
node_up a
node_up b

# ---- a retry on the other node -----------------------------------------------
check "a keyed edit on node a" eq "$(post a k1)" 200
cp "$TMP/ans" "$TMP/k1"
check "... its retry on node b: 200" eq "$(post b k1)" 200
check "... the first answer" eq "$(field first_seq)/$(field world_hash)/$(field chunks)" \
	"$(field first_seq "$TMP/k1")/$(field world_hash "$TMP/k1")/$(field chunks "$TMP/k1")"
check "... a replay" eq "$(field replay)" true
check "... one batch in the log" eq "$(xlen)" 1
check "... the same key with other edits on b: 422" eq "$(BODY='{"edits":[{"op":"raise","x":1,"z":1,"radius":9,"strength":1}]}' post b k1)" 422

# ---- two nodes racing with one key ----------------------------------------------
racers=()
for i in $(seq 1 40); do
	post a "race$i" 6 "$TMP/ra.$i" >"$TMP/sa.$i" &
	racers+=($!)
	post b "race$i" 6 "$TMP/rb.$i" >"$TMP/sb.$i" &
	racers+=($!)
done
wait "${racers[@]}"
same=0 ok=0
for i in $(seq 1 40); do
	[ "$(cat "$TMP/sa.$i")$(cat "$TMP/sb.$i")" = 200200 ] && ok=$((ok + 1))
	[ "$(field first_seq "$TMP/ra.$i")" = "$(field first_seq "$TMP/rb.$i")" ] && same=$((same + 1))
done
check "40 keys sent to both nodes at once: 80 answers 200" eq "$ok" 40
check "... each key's two answers name one batch" eq "$same" 40
check "... 40 batches in the world, not 80" eq "$(seq_of a 6)/$(seq_of b 6)" 40/40
check "... and in the log" eq "$(xlen)" 41

# ---- logged, not confirmed: 504, and the retry finds it ---------------------------
kill -STOP "${RPID[r2]}"
n0=$(xlen)
check "the replica stopped: a keyed edit gets 504 (outcome unknown)" eq "$(post a u1)" 504
check "... saying so" eq "$(field error)" outcome_unknown
check "... it is in the log" eq "$(xlen)" $((n0 + 1))
not_ready() { ! ready "$1"; }
check "... node a notices that it cannot read the replica (/readyz 503)" wait_until 40 not_ready "${NPORT[a]}"
check "... edits meanwhile get 503 (not applied)" eq "$(post a u2)" 503
check "... and are not in the log" eq "$(xlen)" $((n0 + 1))
kill -CONT "${RPID[r2]}"
wait_until 40 ready "${NPORT[a]}"
wait_until 40 ready "${NPORT[b]}"
s0=$(seq_of b)
check "the replica back: the retry of the 504 on node b is 200" eq "$(post b u1)" 200
check "... a replay of the logged batch" eq "$(field replay)/$(field first_seq)" "true/$s0"
check "... applied once" eq "$(seq_of b)/$(seq_of a)" "$s0/$s0"
check "the 503's retry is applied now" eq "$(post b u2)/$(field replay)" 200/None

# ---- a node killed between its append and its answer ------------------------------
kill -STOP "${RPID[r2]}"
n0=$(xlen)
post a dead1 >"$TMP/dead.status" &
BG+=($!)
appended() { [ "$(xlen)" = $((n0 + 1)) ]; }
check "node a appended (the replica stopped: no answer yet)" wait_until 30 appended
kill -9 "${NPID[a]}"
kill -CONT "${RPID[r2]}"
wait_until 40 ready "${NPORT[b]}"
s0=$(seq_of b)
check "node a killed (kill -9): the retry on node b is 200" eq "$(post b dead1)" 200
check "... the first outcome: the batch a appended" eq "$(field replay)/$(field first_seq)" "true/$s0"
check "... once in the log" eq "$(xlen)" $((n0 + 1))

# ---- a key in flight: 409 -----------------------------------------------------------
node_up c "?timeout=20000"
s0=$(seq_of c)
kill -STOP "${RPID[r1]}"
post c fly1 >"$TMP/fly.status" &
flying_pid=$!
BG+=($flying_pid)
in_flight() { [ "$(metric c terrain_edit_appends_in_flight)" = 1 ]; }
check "the primary stopped: an edit waits in node c" wait_until 30 in_flight
check "... the same key meanwhile: 409" eq "$(post c fly1)" 409
check "... with Retry-After" eq "$(curl -s -D - -o /dev/null -H 'Content-Type: application/json' \
	-H 'Idempotency-Key: "fly1"' -d "$BODY" "http://127.0.0.1:${NPORT[c]}/v1/worlds/5/edits" |
	tr -d '\r' | sed -n 's/^Retry-After: //p')" 1
kill -CONT "${RPID[r1]}"
wait "$flying_pid"
check "the primary back: the first answer came ($(cat "$TMP/fly.status"))" \
	has "$TMP/fly.status" '^(200|504)$'
wait_until 40 ready "${NPORT[c]}"
check "... the retry is 200" eq "$(post c fly1)" 200
check "... fly1 is applied once" eq "$(seq_of c)" $((s0 + 1))

# ---- 503 tells the truth: writers without keys, a replica stopped again and again --
redis_up r3 --replicaof 127.0.0.1 "${RPORT[r1]}"
two_online() { [ "$(rcli "${RPORT[r1]}" INFO replication | grep -c 'state=online')" = 2 ]; }
wait_until 20 two_online || echo "  (r3 did not come online)"
node_up d "?replicas=all"
node_up e "?replicas=all"
writer() { # I: unique brushes until $TMP/stop, "status x z" each
	local b=0 x code
	while [ ! -e "$TMP/stop" ]; do
		b=$((b + 1)) x=$(($1 * 100000 + b))
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 -H 'Content-Type: application/json' \
			-d "{\"edits\":[{\"op\":\"raise\",\"x\":$x,\"z\":7,\"radius\":3,\"strength\":0.5}]}" \
			"http://127.0.0.1:${NPORT[$([ $(($1 % 2)) = 0 ] && echo d || echo e)]}/v1/worlds/truth/edits")
		echo "$code $x" >>"$TMP/w.$1"
	done
}
rm -f "$TMP/stop"
writers=()
for i in $(seq 1 8); do writer "$i" & writers+=($!); done
BG+=("${writers[@]}")
some() { [ "$(cat "$TMP"/w.* 2>/dev/null | wc -l)" -ge "$1" ]; }
for round in 1 2 3; do
	wait_until 30 some $((round * 40))
	kill -STOP "${RPID[r3]}"
	sleep 1.5 # the fault: r3 stopped for 1.5 s (not a wait for a condition)
	kill -CONT "${RPID[r3]}"
done
wait_until 30 some 200
touch "$TMP/stop"
wait "${writers[@]}"
wait_until 40 ready "${NPORT[d]}"
logged() { # the x of every edit of world truth in d's log
	local since=0
	while :; do
		curl -s "http://127.0.0.1:${NPORT[d]}/v1/worlds/truth/edits?since=$since&limit=1000" >"$TMP/page"
		python3 -c 'import json,sys; [print(int(e["x"])) for e in json.load(open(sys.argv[1]))["edits"]]' "$TMP/page"
		since=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("next") or "")' "$TMP/page")
		[ -n "$since" ] || break
	done
}
settled() { [ "$(seq_of d truth)" = "$(seq_of e truth)" ]; }
wait_until 40 settled
logged | sort -u >"$TMP/logged"
cat "$TMP"/w.* >"$TMP/answers"
awk '$1 == 503 { print $2 }' "$TMP/answers" | sort -u >"$TMP/refused"
awk '$1 == 200 { print $2 }' "$TMP/answers" | sort -u >"$TMP/acked"
summary=$(awk '{ n[$1]++ } END { for (c in n) printf "%s%s x%d", s, c, n[c]; s = ", " }' "$TMP/answers")
echo "  answers: $summary; in the log: $(wc -l <"$TMP/logged")"
check "writers through a replica stopped three times: answers $summary" test -s "$TMP/acked"
check "... no edit answered 503 is in the log ($(wc -l <"$TMP/refused") answered 503)" \
	eq "$(comm -12 "$TMP/refused" "$TMP/logged" | wc -l)" 0
check "... every edit answered 200 is" eq "$(comm -23 "$TMP/acked" "$TMP/logged" | wc -l)" 0
check "no node logged a batch it could not follow" not grep -q 'could not be applied' "${NLOG[@]}"
finish
