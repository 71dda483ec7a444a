#!/bin/bash
# cluster_bound.sh - a shared Redis log trimmed from the first snapshot
# (real redis-server on 127.0.0.1), with the snapshots keeping the edits
# within --history (the default) as records. Checked: the FIRST snapshot
# shared trims the stream below its own entry (the stream then starts at
# it); node c, stopped (SIGTERM) before that snapshot and started after
# the trim, takes the shared snapshot and ends on the writer's world hash;
# node d, frozen (SIGSTOP) before it and continued after, finds the entry
# it followed last trimmed away, restores from the shared snapshot and
# ends on the same hash; --snapshot-bytes and --snapshot-interval each
# start a snapshot long before --snapshot-every would, and the log is
# trimmed below each. Waits on conditions only. About 30 s.
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/lib_redis.sh"

LOAD=$BUILD/bench/cluster_load # make tests
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
EVERY=200
KEEP_LOGS=cluster_bound

redis_up r1
redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
wait_for 10 online_replica || { echo "replica did not sync"; exit 1; }
r1cli() { rcli "${RPORT[r1]}" "$@"; }
# count only: the size and time policies off
by_count() { node_up "$1" --snapshot-every "$EVERY" --snapshot-bytes 0 --snapshot-interval 0 --workers 2; }
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
# load N: N one-edit batches through a, one client
load() { "$LOAD" -n "$1" -r 400 "${NPORT[a]}" 1 bound >>"$TMP/load.log"; }

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
check "... it is a's first" has <(curl -s "http://127.0.0.1:${NPORT[a]}/metrics") '^terrain_edit_log_snapshots_shared_total 1$'
read -r oldest trim <<<"$(oldest_and_trim)"
check "the first shared snapshot trimmed the log below its own entry" eq "$trim" "$(meta id)"
check "... so the stream starts at that entry" eq "$oldest" "$trim"
len=$(r1cli XLEN terrain:log)
check "... and holds only the batches after it ($len of 270)" test "$len" -le $((270 - EVERY + 1))

# c, stopped before the snapshot, starts after the trim
node_up c --snapshot-every "$EVERY" --snapshot-bytes 0 --snapshot-interval 0 --workers 2
check "c, started after the trim, takes the shared snapshot" has "${NLOG[c]}" 'took the shared snapshot'
check "... and ends on a's world hash" wait_for 10 same_state a c
# d, frozen before it, continued after
kill -CONT "${NPID[d]}"
check "d finds the entry it followed last trimmed away" wait_for 15 has "${NLOG[d]}" 'no longer holds entry'
check "... restores from the shared snapshot" wait_for 30 has "${NLOG[d]}" 'caught up from the shared snapshot'
check "... and ends on a's world hash" wait_for 10 same_state a d
load 10
check "an edit after that reaches c and d" wait_for 10 same_state a c
wait_for 10 same_state a d
check "... d too" same_state a d

# the size policy: 100 batches of about 130 bytes pass 8000 bytes
stop_node a
node_up a --snapshot-every 1000000 --snapshot-bytes 8000 --snapshot-interval 0 --workers 2
before=$(meta edits)
load 100
check "--snapshot-bytes starts a snapshot long before --snapshot-every" \
	wait_for 10 has "${NLOG[a]}" 'snapshot of [0-9]* edits'
check "... which is shared" wait_for 20 shared_more_than "$before"
read -r oldest trim <<<"$(oldest_and_trim)"
check "... and trims the log below it" eq "$trim" "$(meta id)"

# the time policy: the first edit 2 s after the last snapshot started
stop_node a
node_up a --snapshot-every 1000000 --snapshot-bytes 0 --snapshot-interval 2 --workers 2
before=$(meta edits)
load 5
check "no snapshot in the first edits by time" eq "$(snapshots_in "${NLOG[a]}")" 0
started_at=$(date +%s)
# an edit at each try (about 20 a second) until one starts, 2 s after a started
ticking() { load 1; has "${NLOG[a]}" 'snapshot of [0-9]* edits'; }
check "--snapshot-interval starts a snapshot" wait_for 10 ticking
check "... which is shared" wait_for 20 shared_more_than "$before"
echo "  the time policy's snapshot came $(($(date +%s) - started_at)) s after the first edits"
read -r oldest trim <<<"$(oldest_and_trim)"
check "... and trims the log below it" eq "$trim" "$(meta id)"
check "c and d end on a's world hash" wait_for 10 same_state a c
wait_for 10 same_state a d
check "... d too" same_state a d
check "every batch was acknowledged" not has "$TMP/load.log" ' (unavailable|other|errors) [1-9]'
finish
