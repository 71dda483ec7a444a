#!/bin/bash
# edit_keys.sh - Idempotency-Key on POST .../edits with the file log, on
# the real server: a retry with the same key and edits gets the first
# answer (marked as a replay) and changes nothing; the same key with other
# edits is 422; malformed keys are 400; a key belongs to its world and its
# sender (loopback vs --edit-token); the keys survive a restart, a snapshot
# and the compaction of the log below it; they are forgotten past
# --idempotency-window (by the log's clock) and --idempotency-keys. The
# Redis log's side (two nodes racing, outcomes unknown) is
# edit_keys_cluster.sh.
. "$(dirname "$0")/../lib/lib.sh"
unset TERRAIN_EDIT_TOKEN
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0

A='{"edits":[{"op":"raise","x":100,"z":100,"radius":40,"strength":2}]}'
B='{"edits":[{"op":"lower","x":900,"z":300,"radius":80,"strength":1}]}'
# post SEED KEY BODY [CURL ARGS...]: answer body in $TMP/ans, headers in
# $TMP/hdr; prints the status. KEY "" sends no header.
post() {
	local seed=$1 key=$2 body=$3
	shift 3
	curl -s -o "$TMP/ans" -D "$TMP/hdr" -w '%{http_code}' -H 'Content-Type: application/json' \
		${key:+-H "Idempotency-Key: $key"} "$@" -d "$body" "$BASE/v1/worlds/$seed/edits"
}
# ans KEY: a field of the last answer
ans() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print(json.dumps(v) if isinstance(v,(list,bool)) else v)' "$TMP/ans" "$1"; }
seq_of() { curl -s "$BASE/v1/worlds/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["edit_seq"])'; }
# same_answer: the last answer is FIRST's, field by field, and a replay
answer_is() {
	local f
	for f in first_seq last_seq world_hash chunks; do
		eq "$(ans $f)" "$(sed -n "s/^$f=//p" "$1")" || return 1
	done
}
keep() { local f; for f in first_seq last_seq world_hash chunks; do echo "$f=$(ans $f)"; done >"$1"; }

server_start
check "a keyed edit is applied" eq "$(post 7 '"k-1"' "$A")" 200
keep "$TMP/first"
check "... not as a replay" eq "$(ans replay)" None
check "the same key and edits again: 200" eq "$(post 7 '"k-1"' "$A")" 200
check "... the first answer" answer_is "$TMP/first"
check "... marked as a replay" eq "$(ans replay)" true
check "... and by Idempotent-Replayed" has "$TMP/hdr" '^Idempotent-Replayed: true'
check "... which a page may read, as Retry-After" \
	has "$TMP/hdr" 'Access-Control-Expose-Headers: .*Retry-After, Idempotent-Replayed'
check "... nothing applied twice (edit_seq 1)" eq "$(seq_of 7)" 1
check "the same key, other edits: 422" eq "$(post 7 '"k-1"' "$B")" 422
check "... saying so" has "$TMP/ans" 'already used for other edits \(edits 1\.\.1'
check "... nothing applied" eq "$(seq_of 7)" 1
check "the same edits with a new key are applied again" eq "$(post 7 '"k-2"' "$A")" 200
check "... as edit 2" eq "$(ans first_seq)" 2
check "without a key, edits are applied each time" eq "$(post 7 '' "$A")$(post 7 '' "$A")" 200200
check "... (edit_seq 4)" eq "$(seq_of 7)" 4
check "the key in another world is that world's" eq "$(post 8 '"k-1"' "$A")" 200
check "... applied there as its edit 1" eq "$(ans first_seq)/$(ans replay)" 1/None
check "a bare key (no quotes) is taken" eq "$(post 7 'bare-key_1' "$B")" 200
check "... and is the same key when quoted" eq "$(post 7 '"bare-key_1"' "$B")/$(ans replay)" 200/true
check "escapes: \"a\\\"b\" is a\"b" eq "$(post 7 '"a\"b"' "$A")/$(post 7 '"a\"b"' "$A")/$(ans replay)" \
	200/200/true
long=$(head -c 255 /dev/zero | tr '\0' x)
check "255 characters are a key" eq "$(post 7 "\"$long\"" "$A")" 200
for bad in '""' '"open' "\"${long}y\"" '"a\b"' 'two words' '"tab	in"' 'quo"te'; do
	check "malformed key [$bad]: 400" eq "$(post 7 "$bad" "$A")" 400
done
check "... saying what a key is" has "$TMP/ans" 'idempotency-key: expected a quoted string'
check "a page may send the header (CORS preflight)" has <(curl -s -D - -o /dev/null -X OPTIONS \
	-H 'Origin: http://game.example' -H 'Access-Control-Request-Method: POST' \
	"$BASE/v1/worlds/7/edits") 'Access-Control-Allow-Headers: .*Idempotency-Key'
n=$(seq_of 7)
check "metrics count the replays" has <(curl -s "$BASE/metrics") '^terrain_edit_replays_total 3$'
check "metrics count the keys remembered" has <(curl -s "$BASE/metrics") '^terrain_idempotency_keys 6$'

# ---- a restart, a snapshot, compaction: the keys stay -----------------------
server_stop || exit 1
server_start --snapshot-every 1 --compact-log 1
check "after a restart the retry gets the first answer" eq "$(post 7 '"k-1"' "$A")" 200
check "... the same" answer_is "$TMP/first"
check "... a replay" eq "$(ans replay)/$(seq_of 7)" "true/$n"
check "a new edit (a snapshot follows each)" eq "$(post 7 '"k-3"' "$B")" 200
keep "$TMP/third"
snapped() { has "$SERVER_LOG" 'compacted below the snapshot'; }
check "... the log is compacted below a snapshot" wait_until 60 snapped
server_stop || exit 1
check "the log holds no batch now (32 bytes: its header)" eq "$(stat -c %s "$TMP/data/edits.log")" 32
server_start
check "from the snapshot alone: the retry of edit 1 gets its answer" eq "$(post 7 '"k-1"' "$A")" 200
check "... the same first_seq, hash and chunks" answer_is "$TMP/first"
check "... of the newest edit too" eq "$(post 7 '"k-3"' "$B")/$(ans replay)" 200/true
check "... the same" answer_is "$TMP/third"
check "... nothing applied" eq "$(seq_of 7)" $((n + 1))
server_stop || exit 1

# ---- the sender is part of the key --------------------------------------------
server_start --edit-token sesame
tok=(-H 'Authorization: Bearer sesame')
check "with a token, a key used by a loopback client is another key" \
	eq "$(post 7 '"k-1"' "$A" "${tok[@]}")/$(ans replay)" 200/None
check "... then the token's own retry is a replay" \
	eq "$(post 7 '"k-1"' "$A" "${tok[@]}")/$(ans replay)" 200/true
server_stop || exit 1

# ---- forgotten past the window and the most ------------------------------------
server_start --idempotency-window 1 --idempotency-keys 3
t0=$(date +%s%N)
check "window 1 s: a keyed edit" eq "$(post 9 '"w-1"' "$A")" 200
check "... retried at once: a replay" eq "$(ans replay)/$(post 9 '"w-1"' "$A")/$(ans replay)" None/200/true
later() { [ $(($(date +%s%N) - t0)) -gt 1300000000 ]; }
wait_until 10 later
check "1.3 s later, another keyed edit moves the log's clock on" eq "$(post 9 '"w-2"' "$B")" 200
check "... and the first key is forgotten: applied again" \
	eq "$(post 9 '"w-1"' "$A")/$(ans replay)/$(ans first_seq)" 200/None/3
server_stop

# The most keys, apart from the window: a slow machine may take more than
# the 1 s window above between two posts, which would forget keys by time.
server_start --idempotency-keys 3
check "most 3 keys: m-1 to m-4" eq \
	"$(post 9 '"m-1"' "$B")$(post 9 '"m-2"' "$B")$(post 9 '"m-3"' "$B")$(post 9 '"m-4"' "$B")" \
	200200200200
check "... m-1, the oldest, is forgotten" eq "$(post 9 '"m-1"' "$B")/$(ans replay)" 200/None
check "... m-4 is remembered" eq "$(post 9 '"m-4"' "$B")/$(ans replay)" 200/true
check "... 3 keys held" has <(curl -s "$BASE/metrics") '^terrain_idempotency_keys 3$'
server_stop
finish
