#!/bin/bash
# run: once
# edit_disk_full.sh - edits resume by themselves once the disk has room
# again, against the real server on a disk that really fills: a 1 MiB
# tmpfs mounted for the test (as root), filled with a file until writes
# fail with ENOSPC, then freed. Where mounting is not allowed it says so
# and uses a real file-size limit instead (RLIMIT_FSIZE set on the running
# server with prlimit, raised again later: EFBIG, SIGXFSZ ignored). Either
# way: edits get 503 while writes fail, /readyz 503 and /healthz 200 (live:
# reads are served; a restart would not help), both saying why; nothing
# acknowledged is lost; once space is back the store's probe finds that a
# write succeeds and edits are taken again without a restart; /readyz is
# ok again; the log then holds exactly the acknowledged edits, also after
# kill -9 and a restart (no torn tail left behind). DISK_FULL_MODE=fsize
# runs the file-size limit where mounting works too.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

MNT=$TMP/disk
mkdir -p "$MNT"
unmount() { mountpoint -q "$MNT" && umount "$MNT"; cleanup; }
trap unmount EXIT

# post BATCH_NO: a batch of 64 edits whose x encode BATCH_NO; prints the
# status and records an acknowledged batch in $TMP/acked
post() {
	local b=$1 code
	python3 -c 'import json,sys; b=int(sys.argv[1]); print(json.dumps({"edits":[{"op":"raise","x":b*100+i,"z":7,"radius":3,"strength":0.5} for i in range(64)]}))' "$b" > "$TMP/req"
	code=$("${CURL[@]}" -o "$TMP/body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "@$TMP/req" "$BASE/v1/worlds/42/edits")
	[ "$code" = 200 ] && echo "$b" >> "$TMP/acked"
	echo "$code"
}
seq_of() { "${CURL[@]}" "$BASE/v1/worlds/42" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p'; }
health() { "${CURL[@]}" -o "$TMP/health" -w '%{http_code}' "$BASE/healthz"; }
ready() { "${CURL[@]}" -o "$TMP/ready" -w '%{http_code}' "$BASE/readyz"; }
# the log as served: one line "BATCH_NO" per batch, in order (x div 100)
served() {
	"${CURL[@]}" "$BASE/v1/worlds/42/edits?since=0&limit=100000" | python3 -c '
import json, sys
seen = []
for e in json.load(sys.stdin)["edits"]:
    b = int(e["x"]) // 100
    if not seen or seen[-1] != b:
        seen.append(b)
print("\n".join(map(str, seen)))'
}
# the acknowledged batches, as served: exactly those, in order
acked_kept() { cmp -s <(served) "$TMP/acked" || { diff <(served) "$TMP/acked" | head; return 1; }; }
# wait_ready CODE: /readyz answers CODE (within 120 s, scaled)
ready_is() { [ "$(ready)" = "$1" ]; }
wait_ready() { wait_until 120 ready_is "$1"; }
server_pid() { pgrep -P "$SERVER_PID" | head -n 1; }

: > "$TMP/acked"
# DISK_FULL_MODE=fsize takes the fallback even where mounting works
if [ "${DISK_FULL_MODE:-tmpfs}" = tmpfs ] &&
	mount -t tmpfs -o size=1m,mode=0700 tmpfs "$MNT" 2>"$TMP/mount.err"; then
	mode=tmpfs
	echo "disk: a 1 MiB tmpfs at $MNT"
	server_start --data-dir "$MNT/data"
	fill() { dd if=/dev/zero of="$MNT/filler" bs=4k 2>/dev/null; sync; }
	make_room() { rm -f "$MNT/filler"; }
else
	mode=fsize
	echo "disk: no tmpfs (${DISK_FULL_MODE:-$(cat "$TMP/mount.err")}); a file-size limit instead"
	server_start --data-dir "$MNT/data"
	fill() { prlimit --pid "$(server_pid)" --fsize="$(stat -c %s "$MNT/data/edits.log")":unlimited; }
	make_room() { prlimit --pid "$(server_pid)" --fsize=unlimited:unlimited; }
fi

for b in 1 2 3; do post "$b" >/dev/null; done
check "three batches before the disk fills" eq "$(seq_of)" 192
fill
# the log's last page may still have room for a batch or two
b=4 got=200
while [ "$got" = 200 ] && [ $b -lt 40 ]; do got=$(post "$b"); b=$((b + 1)); done
check "with the disk full, an edit is 503" eq "$got" 503
check "  its detail says the write failed and that the server retries" contains \
	"$(cat "$TMP/body")" "edit log write failed (a full disk?); the server retries"
check "  with Retry-After" contains "$("${CURL[@]}" -D - -o /dev/null -X POST \
	-H 'Content-Type: application/json' --data-binary "@$TMP/req" "$BASE/v1/worlds/42/edits")" \
	"Retry-After: 1"
check "the failure is on stderr" has "$SERVER_LOG" "store: write .*(No space left on device|File too large); edits get 503 until a write succeeds again"
check "/readyz is 503 while the disk is full" eq "$(ready)" 503
check "  degraded, reads ok, retrying, with the cause stderr gives (not \"i/o error\")" grep -Eq \
	'"status":"degraded","reads":"ok","edits":"unavailable","detail":"edit log write failed: (No space left on device|File too large); retrying until a write succeeds"' \
	"$TMP/ready"
check "/healthz stays 200 (live: reads are served), saying the same" eq "$(health)" 200
check "  degraded, retrying, the same cause" grep -Eq '"status":"degraded".*write failed: (No space left on device|File too large); retrying until a write succeeds' "$TMP/health"
sleep 1.5 # a few probes (100, 200, 400, 800 ms) fail meanwhile
check "edits stay 503 while the probes fail" eq "$(post 50)" 503
check "  the failed probe is on stderr" has "$SERVER_LOG" "store: .*probe write at offset [0-9]+: (No space left on device|File too large); still refusing edits"
check "reads go on" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$BASE/v1/worlds/42/chunks/0/0/0")" 200
check "every acknowledged batch is served ($(wc -l < "$TMP/acked") of them)" acked_kept

make_room
check "once there is room, /readyz is ok again by itself (probe with backoff)" wait_ready 200
check "  and /healthz says ok" grep -q '^{"status":"ok"}$' <(health >/dev/null; cat "$TMP/health")
check "  the recovery is on stderr" has "$SERVER_LOG" "store: .*writes succeed again \([0-9]+ failed probes"
check "edits are taken again, without a restart" eq "$(post 60)" 200
check "and more" eq "$(post 61)" 200
check "the sequence continues from the last acknowledged edit" eq "$(seq_of)" $(($(wc -l < "$TMP/acked") * 64))
check "every acknowledged batch is served, in order, and only those" acked_kept

# a second fill and recovery, then kill -9 and restart: the log on disk
# holds exactly the acknowledged edits
fill
got=200 b=70
while [ "$got" = 200 ] && [ $b -lt 110 ]; do got=$(post "$b"); b=$((b + 1)); done
check "the disk full a second time: 503" eq "$got" 503
make_room
check "recovered a second time" wait_ready 200
check "edits taken" eq "$(post 120)" 200
hash=$("${CURL[@]}" "$BASE/v1/worlds/42" | sed -n 's/.*"world_hash":"\([0-9a-f]*\)".*/\1/p')
kill -KILL "$(server_pid)"
wait "$SERVER_PID" 2>/dev/null
server_start --data-dir "$MNT/data"
check "after kill -9 and a restart, the same sequence" eq "$(seq_of)" $(($(wc -l < "$TMP/acked") * 64))
check "  and world hash" eq \
	"$("${CURL[@]}" "$BASE/v1/worlds/42" | sed -n 's/.*"world_hash":"\([0-9a-f]*\)".*/\1/p')" "$hash"
check "  every acknowledged batch, only those" acked_kept
check "  the log had no torn tail: the probe had cut it" not has "$SERVER_LOG" "torn"
check "server stops with 0" server_stop
echo "disk-full mode: $mode"
finish
