#!/bin/bash
# cluster_bound.sh - a shared Redis log trimmed from the first snapshot
# (real redis-server on 127.0.0.1), with the snapshots keeping the edits
# within --history (the default) as records. Checked: the FIRST snapshot
# shared trims the stream below its own entry (the stream then starts at
# it); node c, stopped (SIGTERM) before it and started after a second
# one, takes the shared snapshot and ends on the writer's world hash;
# node d, frozen (kill -STOP by pid) across two shared snapshots and
# continued while edits and snapshots keep coming, finds the entry it
# followed last trimmed away, restores from the shared snapshot and ends
# on the same hash; only one node sends a snapshot at a time (the lock);
# with --snapshot-bytes 0 each snapshot waits for half the last one's size
# of log records, whatever --snapshot-every 1 says; on a log of its own
# (database 1), --snapshot-bytes and --snapshot-interval each start a
# snapshot long before --snapshot-every would, and the log is trimmed
# below each. Waits on conditions only. About a minute.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lib_redis.sh"

LOAD=$BUILD/bench/cluster_load # make tests
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
EVERY=200
NOSIZE=4000000000 # --snapshot-bytes: no size trigger, and no floor below
KEEP_LOGS=cluster_bound

redis_up r1
redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
wait_for 10 online_replica || { echo "replica did not sync"; exit 1; }
DB=0
r1cli() { rcli "${RPORT[r1]}" -n "$DB" "$@"; }
# count only: the size and time policies off
by_count() {
	node_up "$1" --snapshot-every "$EVERY" --snapshot-bytes "$NOSIZE" --snapshot-interval 0 \
		--workers 2
}
state() {
	curl -s --max-time 5 "http://127.0.0.1:$1/v1/worlds/bound" |
		sed -n 's/.*"edit_seq":\([0-9]*\),"world_hash":"\([0-9a-f]*\)".*/\1 \2/p'
}
same_state() { local s; s=$(state "${NPORT[$1]}"); [ -n "$s" ] && [ "$s" = "$(state "${NPORT[$2]}")" ]; }
meta() { r1cli HGET terrain:snapshot:meta "$1"; }
# the oldest entry and the trim point, read in one script
oldest_and_trim() {
	r1cli EVAL "return {redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)[1][1], \
		redis.call('HGET', KEYS[1], 'trim')}" 2 terrain:snapshot:meta terrain:log | tr '\n' ' '
}
gone() { ! kill -0 "$1" 2>/dev/null; }
stop_node() { kill -TERM "${NPID[$1]}"; wait_for 10 gone "${NPID[$1]}"; }
shared_more_than() { [ "$(meta edits)" -gt "$1" ] 2>/dev/null; }
snapshots_in() { grep -c 'snapshot of [0-9]* edits' "$1"; }
metric() { curl -s "http://127.0.0.1:${NPORT[$1]}/metrics" | sed -n "s/^$2 //p"; }
# load N [WORLD]: N one-edit batches through a, one client
load() { "$LOAD" -n "$1" -r 400 "${NPORT[$WRITER]}" 1 "${2:-bound}" >>"$TMP/load.log"; }
WRITER=a

by_count a
by_count c
by_count d
load 20
check "c and d follow a" wait_for 10 same_state a c
wait_for 10 same_state a d
stop_node c
kill -STOP "${NPID[d]}"
echo "  c stopped, d frozen at $(state "${NPORT[a]}")"

# 250 batches: a writes one snapshot (at 200 edits) and shares it
load 250
check "the first snapshot is shared" wait_for 20 shared_more_than 0
check "... it is a's first" eq "$(metric a terrain_edit_log_snapshots_shared_total)" 1
read -r oldest trim <<<"$(oldest_and_trim)"
check "the first shared snapshot trimmed the log below its own entry" eq "$trim" "$(meta id)"
check "... so the stream starts at that entry" eq "$oldest" "$trim"
len=$(r1cli XLEN terrain:log)
check "... and holds only the batches after it ($len of 270)" test "$len" -le $((270 - EVERY + 1))
first=$(meta edits)
# 200 more: a second one, while d is still frozen
load 200
check "a second snapshot is shared while d is frozen" wait_for 20 shared_more_than "$first"
check "... a's second" eq "$(metric a terrain_edit_log_snapshots_shared_total)" 2
check "... and the lock it sent under is let go" eq "$(r1cli EXISTS terrain:snapshot:lock)" 0

# c, stopped before both, starts after the second trim
by_count c
check "c, started after the trim, takes the shared snapshot" has "${NLOG[c]}" 'took the shared snapshot'
check "... and ends on a's world hash" wait_for 10 same_state a c
# d, frozen across both, continued while 600 more batches (three more
# snapshots) come: it restores, maybe more than once, and ends converged
before=$(meta edits)
load 600 &
lp=$!
kill -CONT "${NPID[d]}"
check "d finds the entry it followed last trimmed away" wait_for 15 has "${NLOG[d]}" 'no longer holds entry'
check "... restores from the shared snapshot" wait_for 30 has "${NLOG[d]}" 'caught up from the shared snapshot'
wait "$lp"
check "snapshots kept coming meanwhile" shared_more_than "$before"
check "... and d ends on a's world hash" wait_for 20 same_state a d
echo "  d restored $(metric d terrain_edit_log_restores_total) time(s); snapshots shared by" \
	"a, c, d: $(for n in a c d; do grep -c 'snapshot shared' "${NLOG[$n]}"; done | paste -sd,)"
check "... c too" wait_for 10 same_state a c
check "... and no snapshot sent failed" \
	not has <(cat "${NLOG[a]}" "${NLOG[c]}" "${NLOG[d]}") 'snapshot not shared \('

# the floor: --snapshot-bytes 0 and --snapshot-every 1 on a, c and d off
stop_node c
stop_node d
stop_node a
node_up a --snapshot-every 1 --snapshot-bytes 0 --snapshot-interval 0 --workers 2
# R: the largest record the stream holds (a one-edit batch's)
rmax() {
	r1cli EVAL "local m = 0 for _, e in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do \
		for i = 2, #e[2], 2 do if e[2][i - 1] == 'r' then m = math.max(m, #e[2][i]) end end \
		end return m" 1 terrain:log
}
two_written() { [ "$(snapshots_in "${NLOG[a]}")" -ge 2 ]; }
# each edit loaded one at a time, 50 at a go, until two snapshots are written
loading() { load 50; two_written; }
check "--snapshot-every 1 with --snapshot-bytes 0 writes snapshots" wait_for 120 loading
R=$(rmax)
sed -n 's/.*snapshot of \([0-9]*\) edits in .* chunks, \([0-9]*\) bytes.*/\1 \2/p' "${NLOG[a]}" >"$TMP/written"
echo "  records up to $R bytes; written (edits bytes): $(paste -sd, "$TMP/written")"
# consecutive snapshots E1 B1, E2 B2: E2 - E1 batches of at most R bytes
# (a few more for varints) made at least B1 / 2 bytes of log
check "... each only after half the last one's size of log records" \
	awk -v r="$((R + 4))" 'NR > 1 && ($1 - pe) * r < pb / 2 { bad = 1; print "  " pe " (" pb " bytes) then " $1 }
		{ pe = $1; pb = $2 } END { exit bad }' "$TMP/written"
check "... which is well above one edit (the floor is not trivially met)" \
	test "$(awk 'NR == 2 { print $1 - pe } { pe = $1 }' "$TMP/written")" -gt 20

# the size and time policies on a log of their own (database 1): a fresh
# world, so the snapshots stay small and no floor applies
stop_node a
DB=1 WRITER=p
rurl="redis://127.0.0.1:${RPORT[r1]}/1"
node_up p "$rurl" --snapshot-every 1000000 --snapshot-bytes 8000 --snapshot-interval 0 --workers 2
# another node holds the lock: a writes its snapshot and does not send it
r1cli SET terrain:snapshot:lock someone PX 600000 >/dev/null
load 100 fresh
check "--snapshot-bytes starts a snapshot long before --snapshot-every" \
	wait_for 10 has "${NLOG[p]}" 'snapshot of [0-9]* edits in'
check "... which is not sent while another node holds the lock" \
	wait_for 10 has "${NLOG[p]}" 'not shared: another node is sending one'
check "... so none is shared" eq "$(meta edits)" ""
r1cli DEL terrain:snapshot:lock >/dev/null
load 100 fresh
check "the next one, the lock let go, is shared" wait_for 20 shared_more_than 0
read -r oldest trim <<<"$(oldest_and_trim)"
check "... and trims the log below it" eq "$trim" "$(meta id)"

stop_node p
# an interval well beyond what five edits take even under ASan on a busy
# machine (they took over 2 s there)
node_up p "$rurl" --snapshot-every 1000000 --snapshot-bytes "$NOSIZE" --snapshot-interval 15 \
	--workers 2
before=$(meta edits)
load 5 fresh
check "no snapshot in the first edits by time" eq "$(snapshots_in "${NLOG[p]}")" 0
started_at=$(date +%s)
# an edit at each try (about 20 a second) until one starts, 15 s after p started
ticking() { load 1 fresh; has "${NLOG[p]}" 'snapshot of [0-9]* edits'; }
check "--snapshot-interval starts a snapshot" wait_for 60 ticking
check "... which is shared" wait_for 20 shared_more_than "$before"
echo "  the time policy's snapshot came $(($(date +%s) - started_at)) s after the first edits"
read -r oldest trim <<<"$(oldest_and_trim)"
check "... and trims the log below it" eq "$trim" "$(meta id)"
check "every batch was acknowledged" not has "$TMP/load.log" ' (unavailable|other|errors) [1-9]'
finish
