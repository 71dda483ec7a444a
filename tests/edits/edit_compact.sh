#!/bin/bash
# edit_compact.sh - the file log compacts while serving (--compact-log 1):
# under sustained edits (8 clients, snapshots every 300 edits) each
# snapshot lets the log drop what it holds while appends go on, so the
# file stays small; and kill -9 in the middle of a compaction loses no
# acknowledged edit: once while the new file is being copied (killed the
# moment DIR/edits.log.compact appears, tests/lib/kill_on.c), once the moment
# it is renamed over the log. After each kill the server starts again
# (removing the leftover), and every acknowledged batch's world hash is
# the one the restarted server has at that sequence number (the hash
# chains over every edit before it, snapshot included). About 30 s; each
# phase waits for its event (bounded by minutes), not for a fixed time.
. "$(dirname "$0")/../lib/lib.sh"

command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 0; }
LOAD=$BUILD/bench/cluster_load KILL_ON=$BUILD/tests/kill_on # make tests
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
DIR=$TMP/data
RT="chrt -f 10"
$RT true 2>/dev/null || { RT=""; echo "  (no real-time priority here: the kills land a little later)"; }
ARGS=(--data-dir "$DIR" --snapshot-every 300 --compact-log 1 --workers 2)
BG=()
trap 'kill_ours KILL "${BG[@]}"; [ "$FAILED" = 0 ] || { mkdir -p "$BUILD/test-logs/edit_compact"; cp "$TMP"/*.log "$BUILD/test-logs/edit_compact/"; }; cleanup' EXIT

up() {
	server_start "${ARGS[@]}"
	NPID=$(pgrep -P "$SERVER_PID")
}
state() { curl -s --max-time 60 "$BASE/v1/worlds/compact" | sed -n 's/.*"edit_seq":\([0-9]*\),"world_hash":"\([0-9a-f]*\)".*/\1 \2/p'; }
# verified ACKS: every acknowledged batch is in the restarted server's
# world: its sequence number at most the world's, and the world hash after
# it (from the event stream's replay, or the world's own at its base) the
# one its answer gave
verified() {
	python3 - "$BASE" "$1" <<-'EOF'
	import json, sys, urllib.request
	base, acks = sys.argv[1], [l.split() for l in open(sys.argv[2])]
	info = json.load(urllib.request.urlopen(base + "/v1/worlds/compact"))
	seq, wbase = info["edit_seq"], info.get("base", 0)
	want = {int(a[0]): a[4] for a in acks}
	if not want or max(want) > seq:
	    print(f"  {len(want)} acks, the last at {max(want, default=0)}, the world at {seq}")
	    sys.exit(1)
	got = {}
	if wbase:
	    got[wbase] = None   # checked through every later hash of the chain
	req = urllib.request.Request(base + "/v1/worlds/compact/events",
	                             headers={"Last-Event-ID": str(wbase)})
	with urllib.request.urlopen(req, timeout=60) as r:
	    while len(got) < seq - wbase + (1 if wbase else 0):
	        line = r.readline().decode()
	        if line.startswith("data: "):
	            b = json.loads(line[6:])
	            got[b["last_seq"]] = b["world_hash"]
	bad = [s for s, h in want.items() if s > wbase and got.get(s) != h]
	folded = sum(1 for s in want if s <= wbase)
	print(f"  {len(want)} acknowledged, {folded} in the snapshot (base {wbase}), the rest checked"
	      f" hash by hash: {len(bad)} differ")
	sys.exit(1 if bad or not [s for s in want if s > wbase] else 0)
	EOF
}
log_bytes() { stat -c %s "$DIR/edits.log"; }
# the header's base: the batches compacted away
log_base() { od -An -tu8 -j8 -N8 "$DIR/edits.log" | tr -d ' '; }
compactions() { grep -c 'compacted below the snapshot' "$SERVER_LOG"; }
# three compactions done, the third in the log's header too (or the load gone)
compacted() {
	{ [ "$(compactions)" -ge 3 ] && [ "$(log_base)" -ge $((3 * 300)) ] 2>/dev/null; } || ! kill -0 "$lp" 2>/dev/null
}

# ---------------------------------------------------------------- while serving
# the load goes on until the log has compacted three times (a bound of
# minutes: under ASan on a busy machine it takes many times the usual 5 s)
up
"$LOAD" -h -t "$(scaled 300)" -r 600 -a "$TMP/acks.0" "$PORT" 8 compact >"$TMP/load.0" &
lp=$!
BG+=($lp)
wait_until 300 compacted
kill -TERM "$lp" 2>/dev/null
wait "$lp"
cat "$TMP/load.0"
n=$(compactions)
acked=$(wc -l <"$TMP/acks.0")
echo "  $n compactions while serving; edits.log $(log_bytes) bytes for $acked batches"
check "the log compacts below each snapshot while serving ($n times)" test "$n" -ge 3
check "... with no edit refused meanwhile" has "$TMP/load.0" ' unavailable 0 other 0 errors 0 '
# one-edit batches of "default" by "local" take 102 bytes each (record
# version 3, docs/edit-log.md); the header's base
# counts those compacted away
# (both from one open file: the last snapshot's compaction may still be
# renaming a new one over it; either holds every acknowledged batch)
exec 3<"$DIR/edits.log"
base=$(od -An -tu8 -j8 -N8 <&3 | tr -d ' ')
kept=$(( ($(stat -L -c %s /dev/fd/3) - 32) / 102 ))
exec 3<&-
echo "  the log: $base batches compacted away, $kept kept"
check "... it dropped what the snapshots hold, kept every batch after ($base + $kept = $acked)" \
	test "$base" -ge $((3 * 300)) -a $((base + kept)) = "$acked"
# a few batches more than the last snapshot holds (the load may end just as
# one is cut), so that the check below compares hashes beyond the snapshot
"$LOAD" -h -n 20 -a "$TMP/acks.tail" "$PORT" 1 compact >/dev/null
cat "$TMP/acks.tail" >>"$TMP/acks.0"
server_stop >/dev/null
up
check "a restart after it holds every acknowledged batch" verified "$TMP/acks.0"

# ---------------------------------------------------------------- kill -9 mid-compaction
for when in create moved; do
	# real-time priority, where allowed: the kill lands before the server's
	# next system call, in the middle of the compaction
	# (the load, bounded as kill_on, stops once kill_on has)
	$RT "$KILL_ON" "$DIR" edits.log.compact "$when" "$NPID" "$(scaled 240)" >"$TMP/kill.$when" &
	kp=$!
	"$LOAD" -h -t "$(scaled 240)" -r 600 -a "$TMP/acks.$when" "$PORT" 8 compact >"$TMP/load.$when" &
	lp=$!
	BG+=($kp $lp)
	wait "$kp"
	sleep 0.2
	kill -TERM "$lp" 2>/dev/null
	wait "$lp"
	check "kill -9 the moment the compacted file is ${when/moved/renamed over the log}${when/create/d}" \
		has "$TMP/kill.$when" killed
	if [ "$when" = create ] && [ -n "$RT" ]; then
		check "... which it left behind, unfinished" test -e "$DIR/edits.log.compact"
	fi
	cat "$TMP/acks.0" >>"$TMP/acks.$when"
	up
	check "... the server starts again" test -n "$(state)"
	check "... without the leftover" test ! -e "$DIR/edits.log.compact"
	check "... holding every acknowledged batch" verified "$TMP/acks.$when"
	cat "$TMP/acks.$when" >"$TMP/acks.0"
done
finish
