#!/bin/bash
# edit_log_damage.sh - a damaged edit log against the real binary: a flipped
# byte in the last record refuses to start until repair-log, a record cut
# short (truncate -s -3) is dropped and saved as a torn write, a file header
# that is not a log header says so, a file-size limit (ulimit -f) fails the
# log with 503 while the server lives on (the limit is never raised here:
# recovery is tests/edits/edit_disk_full.sh's), and edit JSON is strict.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

JSON=(-H 'Content-Type: application/json')
post() {
	"${CURL[@]}" -o "$TMP/body" -w '%{http_code}' -X POST "${JSON[@]}" --data-binary "$2" \
		"$BASE/v1/worlds/$1/edits"
}
seq_of() { "${CURL[@]}" "$BASE/v1/worlds/$1" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p'; }
ok='{"op":"raise","x":10,"z":10,"radius":5,"strength":1}'
# start_fails DIR: the server must exit non-zero at once; its stderr in $TMP/err
start_fails() {
	local rc
	timeout 60 "$SERVER_BIN" serve --bind 127.0.0.1 --port 0 --data-dir "$1" 2>"$TMP/err"
	rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ]
}
five_edits() {
	server_start --data-dir "$1"
	for i in 1 2 3 4 5; do post w "{\"edits\":[$ok]}" >/dev/null; done
	check "five edits in $1" eq "$(seq_of w)" 5
	check "server stops with 0" server_stop
}
# file header 32 bytes; each one-edit record of world w by local: 16 + 86
# bytes (batch version 3: docs/edit-log.md)
REC=102
last=$((32 + 4 * REC))

# ---- a flipped byte in the last record: refuse, repair-log, start ---------------------
five_edits "$TMP/flip"
printf 'X' | dd of="$TMP/flip/edits.log" bs=1 seek=$((last + 40)) conv=notrunc status=none
check "a flipped last record refuses to start" start_fails "$TMP/flip"
check "naming the offset" grep -q "corrupt record at offset $last (checksum mismatch" "$TMP/err"
check "and the recovery command" \
	grep -q "repair-log --data-dir $TMP/flip --truncate-at $last" "$TMP/err"
check "the log is untouched" eq "$(stat -c %s "$TMP/flip/edits.log")" $((last + REC))
check "repair-log cuts at the offset" "$SERVER_BIN" repair-log --data-dir "$TMP/flip" \
	--truncate-at "$last"
check "the bytes cut are saved" eq "$(stat -c %s "$TMP/flip/edits.log.cut-$last")" $REC
server_start --data-dir "$TMP/flip"
check "after repair the four edits before it are there" eq "$(seq_of w)" 4
check "and the next edit is 5" eq "$(post w "{\"edits\":[$ok]}")" 200
check "server stops with 0" server_stop

# ---- a record cut short at the end: a torn write, dropped and saved --------------------
five_edits "$TMP/torn"
cp "$TMP/torn/edits.log" "$TMP/whole.log"
truncate -s -3 "$TMP/torn/edits.log"
server_start --data-dir "$TMP/torn"
check "a torn last record starts with seq 4" eq "$(seq_of w)" 4
check "the torn bytes are saved beside the log" \
	cmp -s "$TMP/torn/edits.log.torn-$last" <(tail -c +$((last + 1)) "$TMP/whole.log" | head -c $((REC - 3)))
check "the server says so, naming the file" \
	grep -q "warning: .*dropped torn tail record at offset $last ($((REC - 3)) bytes.*kept aside in $TMP/torn/edits.log.torn-$last" \
	"$SERVER_LOG"
check "and says what is known: not a complete record, acknowledged only if the disk lost a write" \
	grep -q "the tail is not a complete record, so it was kept aside in .*; it was acknowledged only if the disk lost a write it had completed" \
	"$SERVER_LOG"
check "server stops with 0" server_stop

# ---- a file header that is not a log header ---------------------------------------------
five_edits "$TMP/hdr"
printf '\377' | dd of="$TMP/hdr/edits.log" bs=1 seek=5 conv=notrunc status=none
check "a damaged header refuses to start" start_fails "$TMP/hdr"
check "saying it is not an edit log" grep -q "not an edit log (file header checksum mismatch" "$TMP/err"
check "not a format version" not grep -q "65281" "$TMP/err"
check "with the way out" grep -q "docs/edit-log.md" "$TMP/err"

# ---- strict edit JSON ----------------------------------------------------------------------
server_start --data-dir "$TMP/json"
check "a NUL in a string is 400" eq "$(post w '{"edits":[{"op":"raise\u0000x","x":0,"z":0,"radius":1,"strength":1}]}')" 400
check "its detail names the NUL" grep -q 'u0000 (NUL)' "$TMP/body"
check "a duplicate key is 400" eq "$(post w '{"edits":[{"op":"raise","x":0,"x":1,"z":0,"radius":1,"strength":1}]}')" 400
check "its detail names the field" grep -q 'edits\[0\].x: duplicate field' "$TMP/body"
check "x beyond the coordinate range is 400" eq "$(post w '{"edits":[{"op":"raise","x":1e13,"z":0,"radius":1,"strength":1}]}')" 400
check "its detail says outside the world" grep -q 'edits\[0\].x: outside the world' "$TMP/body"
check "nothing was logged" eq "$(seq_of w)" 0
check "server stops with 0" server_stop

# ---- a file-size limit: 503, and the server lives on ---------------------------------------
log="$TMP/fsz.log"
(ulimit -f 40; exec timeout --foreground -k 5 300 "$SERVER_BIN" serve --bind 127.0.0.1 \
	--port 0 --data-dir "$TMP/fsz" 2>"$log") &
SERVER_PID=$!
SERVER_LOG=$log
SERVERS+=("$SERVER_PID")
wait_until 120 started "$log"
BASE="http://127.0.0.1:$PORT"
batch=$(for i in $(seq 50); do printf '{"op":"raise","x":%d,"z":0,"radius":1,"strength":1},' "$i"; done)
batch="{\"edits\":[${batch%,}]}"
got=200 n=0
while [ "$got" = 200 ] && [ $n -lt 100 ]; do # 40 KiB is about 19 batches of 50
	got=$(post w "$batch")
	n=$((n + 1))
done
check "past the file-size limit an edit is 503" eq "$got" 503
check "its detail says the edit log failed, and that the server retries" \
	grep -q '"detail":"edit log write failed (a full disk?); the server retries, and edits resume once a write succeeds: retry later"' "$TMP/body"
check "the server is still alive" kill -0 "$SERVER_PID"
check "it answers reads" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$BASE/v1/worlds/w")" 200
check "it answers a tile" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$BASE/v1/worlds/w/chunks/0/0/0")" 200
h=$("${CURL[@]}" -o "$TMP/ready" -w '%{http_code}' "$BASE/readyz")
check "/readyz turns 503 once a write failed" eq "$h" 503
check "and says why (as stderr does: File too large), with reads still ok" grep -q '"reads":"ok","edits":"unavailable","detail":"edit log write failed: File too large; retrying' "$TMP/ready"
h=$("${CURL[@]}" -o "$TMP/health" -w '%{http_code}' "$BASE/healthz")
check "/healthz stays 200: the server is live, and retries by itself" eq "$h" 200
check "the failure is on stderr" grep -q "store: write .*File too large" "$log"
check "later edits are 503 too" eq "$(post w "{\"edits\":[$ok]}")" 503
check "acknowledged edits are kept" test "$(seq_of w)" -eq $(((n - 1) * 50))
check "server stops with 0" server_stop
finish
