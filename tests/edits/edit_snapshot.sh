#!/bin/bash
# run: once
# edit_snapshot.sh - snapshots and log compaction against the real binary:
# a server restarted from its snapshot plus the log after it serves the
# same world (seq, world hash, tiles of LODs 0 and 3 with the material
# layer, objects) as one replaying the whole log, and as the server before
# the kill -9; history before the snapshot answers 410; --compact-log
# shrinks the log and keeps the world; a compacted log without its
# snapshot refuses to start, a whole log replays around a damaged one;
# a snapshot ahead of its log refuses to start.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh
# snapshots fold every edit here (--history 0); edit_reverts.sh has them
# keep the last --history one by one
export TERRAIN_HISTORY=0

metric() { "${CURL[@]}" "$BASE/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
field() { sed -n "s/.*\"$2\":\"\{0,1\}\([0-9a-f]*\)\"\{0,1\}[,}].*/\1/p" <<<"$1"; }
world() { "${CURL[@]}" "$BASE/v1/worlds/$1"; }
post() { # WORLD BATCH_INDEX: 10 mixed brushes around chunk (0, 0)
	local body='{"edits":[' i n x z e code
	for i in $(seq 0 9); do
		n=$(($2 * 10 + i))
		x=$(( (n * 37) % 700 - 250 )); z=$(( (n * 53) % 700 - 250 ))
		case $((n % 4)) in
		0) e="{\"op\":\"raise\",\"x\":$x.5,\"z\":$z,\"radius\":$((20 + n % 280)),\"strength\":$((n % 9)).25}" ;;
		1) e="{\"op\":\"lower\",\"x\":$x,\"z\":$z.25,\"radius\":$((10 + n % 150)),\"strength\":3,\"falloff\":\"linear\"}" ;;
		2) e="{\"op\":\"flatten\",\"x\":$x,\"z\":$z,\"radius\":$((30 + n % 90)),\"height\":$((n % 40)),\"strength\":0.5}" ;;
		3) e="{\"op\":\"set\",\"x\":$x,\"z\":$z,\"radius\":$((5 + n % 40)),\"height\":-$((n % 13))}" ;;
		esac
		body+="${e}"; [ "$i" -lt 9 ] && body+=","
	done
	body+=']}'
	code=$("${CURL[@]}" -o "$TMP/post" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "$body" "$BASE/v1/worlds/$1/edits")
	[ "$code" = 200 ] || { echo "POST $1 $2: $code $(cat "$TMP/post")"; return 1; }
}
fetch_all() { # DIR: tiles and objects of the chunks around (0, 0) of world snap, and world 7
	local dir=$1 cx cz lod
	mkdir -p "$dir"
	for cx in -1 0 1; do for cz in -1 0 1; do
		for lod in 0 3; do
			"${CURL[@]}" -o "$dir/t_${cx}_${cz}_$lod" \
				"$BASE/v1/worlds/snap/chunks/$lod/$cx/$cz?layers=height,material" || return 1
		done
		"${CURL[@]}" -o "$dir/o_${cx}_${cz}" "$BASE/v1/worlds/snap/objects/$cx/$cz" || return 1
		"${CURL[@]}" -o "$dir/w7_${cx}_${cz}" "$BASE/v1/worlds/7/chunks/0/$cx/$cz" || return 1
	done; done
	world snap | sed 's/,"base":[0-9]*//' >"$dir/world_snap"
	world 7 | sed 's/,"base":[0-9]*//' >"$dir/world_7"
}
wait_snapshots() { # N: at least N written and none running
	local i
	for i in $(seq 1 1200); do
		[ "$(metric terrain_snapshots_written_total)" -ge "$1" ] && [ -f "$TMP/data/snapshot" ] &&
			[ ! -f "$TMP/data/snapshot.tmp" ] && return 0
		sleep 0.1
	done
	return 1
}
start_fails() { # DATA_DIR LOG ARGS...: the server exits non-zero without listening
	local dir=$1 log=$2
	shift 2
	! timeout 60 "$SERVER_BIN" serve --bind 127.0.0.1 --port 0 --data-dir "$dir" "$@" 2>"$log"
}

# ---- a world with a snapshot and edits after it
server_start --snapshot-every 100 --workers 2
for b in $(seq 0 23); do post snap "$b" || exit 1; done
for b in 0 1; do post 7 "$b" || exit 1; done
check "two snapshots were written in the background" wait_snapshots 2
for b in 24 25 26; do post snap "$b" || exit 1; done  # 30 edits after the last one
snap_edits=$(metric terrain_snapshot_edits)
check "the snapshot holds edits of both worlds" test "$snap_edits" -ge 200
fetch_all "$TMP/before"
kill -KILL "$(pgrep -P "$SERVER_PID")"; wait "$SERVER_PID" 2>/dev/null  # the server, under timeout(1)
cp -a "$TMP/data" "$TMP/whole"

# ---- restart from the snapshot
server_start --snapshot-every 0 --workers 2
check "start-up read the snapshot" has "$SERVER_LOG" "from a snapshot of [0-9]+ chunks, [0-9]+ batches of the log skipped"
fetch_all "$TMP/restored"
check "the restored world serves the bytes it served before the kill" diff -r -q "$TMP/before" "$TMP/restored"
w=$(world snap)
base=$(field "$w" base)
check "the world says where its snapshot is" test "$base" -gt 0
check "edits before the snapshot answer 410" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$BASE/v1/worlds/snap/edits?since=0")" 410
check "edits from the snapshot on answer 200" eq "$("${CURL[@]}" -o "$TMP/tail.json" -w '%{http_code}' "$BASE/v1/worlds/snap/edits?since=$base")" 200
check "and list the edits after it" has "$TMP/tail.json" "\"seq\":$((base + 1))[,}]"
check "events resumed before the snapshot answer 410" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$BASE/v1/worlds/snap/events?last_event_id=1")" 410
post snap 27 || exit 1
check "new edits go on from the restored sequence" eq "$(field "$(world snap)" edit_seq)" $(( $(field "$w" edit_seq) + 10 ))
server_stop >/dev/null

# ---- the same log replayed whole, without the snapshot
mv "$TMP/whole/snapshot" "$TMP/snapshot.saved"
server_start --data-dir "$TMP/whole" --snapshot-every 0 --workers 2
fetch_all "$TMP/replayed"
check "the whole log replays to the same world, byte for byte" diff -r -q "$TMP/before" "$TMP/replayed"
server_stop >/dev/null

# ---- a damaged snapshot beside a whole log: replay around it
cp "$TMP/snapshot.saved" "$TMP/whole/snapshot"
printf 'X' | dd of="$TMP/whole/snapshot" bs=1 seek=200 conv=notrunc status=none
server_start --data-dir "$TMP/whole" --snapshot-every 0 --workers 2
check "a damaged snapshot is named and not used" has "$SERVER_LOG" "snapshot not used .*checksum mismatch"
fetch_all "$TMP/around"
check "and the whole log still gives the same world" diff -r -q "$TMP/before" "$TMP/around"
server_stop >/dev/null

# ---- compaction
cp "$TMP/snapshot.saved" "$TMP/whole/snapshot"
size0=$(stat -c %s "$TMP/whole/edits.log")
server_start --data-dir "$TMP/whole" --snapshot-every 0 --compact-log 1 --workers 2
check "start-up compacted the log" has "$SERVER_LOG" "compacted away"
size1=$(stat -c %s "$TMP/whole/edits.log")
check "the log is smaller ($size0 -> $size1 bytes)" test "$size1" -lt $((size0 / 2))
check "the compacted batches are counted" test "$(metric terrain_wal_compacted_batches)" -ge 20
fetch_all "$TMP/compacted"
check "the compacted world is the same world" diff -r -q "$TMP/before" "$TMP/compacted"
post snap 27 || exit 1
seq_c=$(field "$(world snap)" edit_seq)
server_stop >/dev/null
server_start --data-dir "$TMP/whole" --snapshot-every 0 --workers 2
check "after a restart the compacted log and its snapshot hold every edit" eq "$(field "$(world snap)" edit_seq)" "$seq_c"
server_stop >/dev/null

cp "$TMP/whole/snapshot" "$TMP/snapshot.compacted"
printf 'X' | dd of="$TMP/whole/snapshot" bs=1 seek=200 conv=notrunc status=none
check "a compacted log with a damaged snapshot refuses to start" start_fails "$TMP/whole" "$TMP/refuse.log" --snapshot-every 0
check "and says why" has "$TMP/refuse.log" "compacted below it, so this server cannot start without it"
rm "$TMP/whole/snapshot"
check "a compacted log without a snapshot refuses to start" start_fails "$TMP/whole" "$TMP/refuse2.log" --snapshot-every 0
check "naming the compaction" has "$TMP/refuse2.log" "compacted"

# ---- a log compacted to its header alone
server_start --data-dir "$TMP/all" --snapshot-every 10 --workers 2
post snap 0 || exit 1
for i in $(seq 1 1200); do [ -f "$TMP/all/snapshot" ] && [ ! -f "$TMP/all/snapshot.tmp" ] && break; sleep 0.1; done
server_stop >/dev/null
server_start --data-dir "$TMP/all" --snapshot-every 0 --compact-log 1
server_stop >/dev/null
check "a snapshot of every edit compacts the log to its header" eq "$(stat -c %s "$TMP/all/edits.log")" 32
server_start --data-dir "$TMP/all" --snapshot-every 0
check "which starts with every edit" eq "$(field "$(world snap)" edit_seq)" 10
server_stop >/dev/null

# ---- a snapshot ahead of its log
mkdir -p "$TMP/ahead"
cp "$TMP/snapshot.saved" "$TMP/ahead/snapshot"
check "a snapshot whose edits the log does not hold refuses to start" start_fails "$TMP/ahead" "$TMP/ahead.log" --snapshot-every 0
check "and says so" has "$TMP/ahead.log" "the snapshot holds edits that the log does not"
finish
