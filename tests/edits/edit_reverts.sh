#!/bin/bash
# edit_reverts.sh - reverts and undos (POST .../reverts) with the file log,
# on the real server: after a revert the heights of every chunk it changed
# are, tile by tile at LOD 0 and 1, those of a server whose log never had
# the reverted edits; an undo brings back the exact tiles and chunk hashes
# of before; the log shows who and when, the reverted edits, the revert's
# count; the lookups by author, time and point; the errors (a bad filter,
# an undo of what is not a revert, twice, beyond --history); a restart
# replays it, bakes made before it do not leak the reverted edits, and a
# snapshot cut after it restores the same world. The Redis log's side is
# edit_reverts_cluster.sh.
. "$(dirname "$0")/../lib/lib.sh"
unset TERRAIN_EDIT_TOKEN
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0 TERRAIN_BAKE_AFTER=2
CLIENT_BIN=$BUILD/terrain-client

E1='{"op":"raise","x":100,"z":100,"radius":60,"strength":5}'
E2='{"op":"lower","x":130,"z":120,"radius":50,"strength":4}'
E3='{"op":"flatten","x":300,"z":90,"radius":80,"strength":0.5,"height":40}'
E4='{"op":"raise","x":80,"z":140,"radius":30,"strength":2,"falloff":"linear"}'
E5='{"op":"set","x":700,"z":600,"radius":40,"height":12}'
E6='{"op":"raise","x":120,"z":110,"radius":70,"strength":1}'
CHUNKS="0,0 1,0 2,2 2,1"

post() { # post PATH BODY: status; answer in $TMP/ans
	curl -s -o "$TMP/ans" -w '%{http_code}' -H 'Content-Type: application/json' \
		-d "$2" "$BASE/v1/worlds/5/$1"
}
ans() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print(json.dumps(v) if isinstance(v,(list,bool,dict)) else v)' "$TMP/ans" "$1"; }
edit() { post edits "{\"edits\":[$1]}"; }
# heights DIR: every chunk of CHUNKS at LOD 0 and 1, as heights, into DIR
heights() {
	local c lod
	mkdir -p "$1"
	for c in $CHUNKS; do
		for lod in 0 1; do
			curl -s --compressed -o "$1/t" "$BASE/v1/worlds/5/chunks/$lod/${c/,//}" &&
				"$CLIENT_BIN" decode --heights "$1/t" >"$1/$lod.$c" || return 1
		done
	done
	rm -f "$1/t"
}
same() { diff -rq "$1" "$2" >/dev/null; }
hashes() { curl -s "$BASE/v1/worlds/5/hashes?cx0=0&cz0=0&cx1=2&cz1=2"; }
log() { curl -s "$BASE/v1/worlds/5/edits${1:-}"; }
has_bakes() { curl -s "$BASE/metrics" | grep -qE '^terrain_baked_chunks [1-9]'; }
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(json.dumps($1))"; }

# the reference: a log without edits 2 and 3
server_start --data-dir "$TMP/ref"
for e in "$E1" "$E4" "$E5" "$E6"; do edit "$e" >/dev/null; done
heights "$TMP/without"
server_stop

server_start
for e in "$E1" "$E2" "$E3" "$E4" "$E5" "$E6"; do edit "$e" >/dev/null; done
check "six edits, one batch each" eq "$(ans last_seq)" 6
check "... each with its author and time" eq "$(log | field '[e["author"] for e in d["edits"]]')" \
	'["local", "local", "local", "local", "local", "local"]'
check "... times that never go back" eq "$(log | field 'all(d["edits"][i]["time"] <= d["edits"][i+1]["time"] for i in range(5)) and d["edits"][0]["time"] > 1.7e12')" true
wait_until 60 has_bakes
heights "$TMP/before"
hashes >"$TMP/hashes.before"
check "the heights differ from the reference's" not same "$TMP/before" "$TMP/without"

curl -s -N --max-time "$(scaled 60)" "$BASE/v1/worlds/5/events?last_event_id=6" >"$TMP/events" &
EV=$!
check "a revert of edits 2..3: 200" eq "$(post reverts '{"seq_from":2,"seq_to":3}')" 200
check "... as sequence number 7" eq "$(ans first_seq)/$(ans last_seq)" 7/7
check "... reverting 2 edits" eq "$(ans count)/$(ans revert)" 2/true
check "... naming the chunks it changed" eq "$(ans chunks | tr -d ' ')" '[[0,0],[1,0]]'
heights "$TMP/reverted"
check "... tile by tile, the heights of a log without them" same "$TMP/reverted" "$TMP/without"
check "... the event stream says so" wait_until 30 has "$TMP/events" '"revert":true,"count":2'
check "the log shows them reverted" eq "$(log | field '[e.get("reverted", False) for e in d["edits"]]')" \
	'[false, true, true, false, false, false, false]'
check "... and the revert with its filter, floor and count" \
	eq "$(log '?since=6' | field '[d["edits"][0]["revert"], d["edits"][0]["count"]]')" \
	'[{"seq_from": 2, "seq_to": 3, "history_ms": 604800000, "floor": 1}, 2]'

check "an undo of the revert: 200" eq "$(post reverts '{"undo":7}')" 200
check "... as sequence number 8, changing the same chunks" eq "$(ans first_seq)/$(ans chunks | tr -d ' ')" \
	'8/[[0,0],[1,0]]'
heights "$TMP/undone"
check "... the tiles of before, exactly" same "$TMP/undone" "$TMP/before"
check "... the chunk hashes of before" eq "$(hashes | field 'sorted((c["cx"],c["cz"],c["hash"]) for c in d["chunks"])')" \
	"$(field 'sorted((c["cx"],c["cz"],c["hash"]) for c in d["chunks"])' <"$TMP/hashes.before")"
check "... and the revert is marked undone" eq "$(log '?since=6' | field 'd["edits"][0].get("undone")')" true
check "an undo again: 409" eq "$(post reverts '{"undo":7}')" 409
check "an undo of an edit: 422" eq "$(post reverts '{"undo":3}')" 422
check "... saying so" has "$TMP/ans" 'not a revert'
check "a revert without a filter: 400" eq "$(post reverts '{}')" 400
check "a filter with an unknown field: 400" eq "$(post reverts '{"player":"x"}')" 400
check "an area with x0 > x1: 422" eq "$(post reverts '{"area":[10,0,0,10]}')" 422
check "an undo with a filter: 400" eq "$(post reverts '{"undo":7,"author":"local"}')" 400
check "a revert in a world without edits: 422" \
	eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
		-d '{"seq_from":1}' "$BASE/v1/worlds/99/reverts")" 422
check "a revert by area takes edit 5 alone" eq "$(post reverts '{"area":[650,550,750,650]}')/$(ans count)" 200/1
check "... changing chunk (2, 2) only" eq "$(ans chunks | tr -d ' ')" '[[2,2]]'

check "lookup by author: all of local's" eq "$(log '?author=local' | field 'len(d["edits"])')" 9
check "... none of somebody else's" eq "$(log '?author=nobody' | field 'len(d["edits"])')" 0
check "... paged" eq "$(log '?author=local&limit=4' | field '[len(d["edits"]), d["next"]]')" '[4, 4]'
check "lookup by time: until before the first, nothing" \
	eq "$(log '?until_time=1000' | field 'len(d["edits"])')" 0
check "lookup by point: the brushes covering (110, 110), newest first" \
	eq "$(log '?x=110&z=110' | field '[e["seq"] for e in d["edits"]]')" '[6, 2, 1]'
check "... not those that stop short of it (edit 4, 42 m off, radius 30)" \
	eq "$(log '?x=80&z=140' | field '[e["seq"] for e in d["edits"]]')" '[6, 4, 1]'
check "... paged with before" eq "$(log '?x=110&z=110&limit=2' | field '[[e["seq"] for e in d["edits"]], d["next"]]')" \
	'[[6, 2], 2]'
check "... next page" eq "$(log '?x=110&z=110&before=2' | field '[e["seq"] for e in d["edits"]]')" '[1]'
check "a point needs x and z: 400" eq "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/worlds/5/edits?x=1")" 400

hash=$(curl -s "$BASE/v1/worlds/5" | field 'd["world_hash"]')
heights "$TMP/now"
kill "$EV" 2>/dev/null
server_stop
server_start
check "a restart replays the reverts: the same world hash" \
	eq "$(curl -s "$BASE/v1/worlds/5" | field 'd["world_hash"]')" "$hash"
heights "$TMP/replayed"
check "... and the same tiles" same "$TMP/replayed" "$TMP/now"
server_stop

# --history: a revert reaches only what lies within it
server_start --history 0
check "with --history 0, a revert reaches nothing: 422" eq "$(post reverts '{"seq_from":1}')" 422
check "... naming why" has "$TMP/ans" 'history'
server_stop

# a snapshot keeps the edits of the last --history one by one: restored
# from it, the world is the same, hash and tiles, and a revert still
# reaches them
server_start --snapshot-every 1
edit "$E2" >/dev/null
wait_until 60 has "$SERVER_LOG" 'snapshot of 10 edits'
hash=$(curl -s "$BASE/v1/worlds/5" | field 'd["world_hash"]')
heights "$TMP/snap.before"
server_stop
server_start
check "restored from a snapshot of 10 edits, all within --history: base 0" \
	eq "$(curl -s "$BASE/v1/worlds/5" | field '[d["edit_seq"], d["base"]]')" '[10, 0]'
check "... the same world hash" eq "$(curl -s "$BASE/v1/worlds/5" | field 'd["world_hash"]')" "$hash"
heights "$TMP/snap.restored"
check "... and tiles" same "$TMP/snap.restored" "$TMP/snap.before"
check "a revert of edit 10, which only the snapshot holds" \
	eq "$(post reverts '{"seq_from":10}')/$(ans count)" 200/1
heights "$TMP/snap.reverted"
check "... gives the tiles of before it" same "$TMP/snap.reverted" "$TMP/now"
check "... and its undo those of after" eq "$(post reverts '{"undo":11}')" 200
heights "$TMP/snap.undone"
check "... exactly" same "$TMP/snap.undone" "$TMP/snap.before"
server_stop

# with --history 1 (s), a snapshot folds the edits the log took more than
# a second before its newest: a revert no longer reaches them
now_ms() { date +%s%3N; }
server_start --data-dir "$TMP/short" --history 1 --snapshot-every 2
edit "$E1" >/dev/null
t1=$(ans time)
later() { [ "$(now_ms)" -gt $((t1 + 1500)) ]; }
check "a second later by the log's clock" wait_until 30 later
edit "$E5" >/dev/null
wait_until 60 has "$SERVER_LOG" 'snapshot of 2 edits'
heights "$TMP/short.before"
server_stop
server_start --data-dir "$TMP/short" --history 1
check "restored: edit 1 folded into the snapshot, edit 2 kept" \
	eq "$(curl -s "$BASE/v1/worlds/5" | field '[d["edit_seq"], d["base"]]')" '[2, 1]'
heights "$TMP/short.restored"
check "... the same tiles" same "$TMP/short.restored" "$TMP/short.before"
check "a revert of edit 1 is beyond history: 422" eq "$(post reverts '{"seq_to":1}')" 422
check "... saying so" has "$TMP/ans" 'history'
server_stop

# a revert taken within the window of an edit that a later snapshot folds
# (the edit older than --history before the newest batch, the revert not):
# restored, the chunk keeps the version that revert gave it, as on a node
# that never restarted. Timing by the log's clock; tried on a fresh world
# until the three times fall as needed. A history of 6 s leaves each step
# seconds of slack, for a loaded machine.
since_ms() { [ "$(now_ms)" -gt $(($1 + $2)) ]; }
hashes_of() { curl -s "$BASE/v1/worlds/$1/hashes?cx0=0&cz0=0&cx1=1&cz1=1"; }
fold_case() { # SEED: 0 when the times fell as needed
	local seed=$1 t1 tr t2 p
	p=$(curl -s -o "$TMP/ans" -w '%{http_code}' -H 'Content-Type: application/json' \
		-d "{\"edits\":[$E1]}" "$BASE/v1/worlds/$seed/edits")
	t1=$(ans time)
	[[ $p = 200 && $t1 =~ ^[0-9]+$ ]] || { echo "  edit 1 of world $seed: $p $(cat "$TMP/ans")"; return 1; }
	wait_until 30 since_ms "$t1" 3000
	curl -s -o "$TMP/ans" -H 'Content-Type: application/json' -d '{"seq_to":1}' \
		"$BASE/v1/worlds/$seed/reverts"
	tr=$(ans time)
	[[ $tr =~ ^[0-9]+$ ]] || { echo "  the revert in world $seed: $(cat "$TMP/ans")"; return 1; }
	wait_until 30 since_ms "$t1" 6100
	curl -s -o "$TMP/ans" -H 'Content-Type: application/json' -d "{\"edits\":[$E5]}" \
		"$BASE/v1/worlds/$seed/edits"
	t2=$(ans time)
	[[ $t2 =~ ^[0-9]+$ ]] || { echo "  edit 3 of world $seed: $(cat "$TMP/ans")"; return 1; }
	# edit 1 older than 6 s before edit 3, the revert (2) not
	[ $((t2 - t1)) -gt 6000 ] && [ $((t2 - tr)) -le 6000 ]
}
server_start --data-dir "$TMP/fold" --history 6 --snapshot-every 0
fell=1
for seed in 61 62 63; do
	if fold_case "$seed"; then fell=0; break; fi
done
check "the times fell as needed within three tries" test "$fell" = 0
hashes_of "$seed" >"$TMP/fold.hashes"
check "... the revert changed chunk (0, 0): version 2" has "$TMP/fold.hashes" '"cx":0,"cz":0,"version":2'
server_stop
server_start --data-dir "$TMP/fold" --history 6 --snapshot-every 1
edit_to() { curl -s -o /dev/null -H 'Content-Type: application/json' -d "{\"edits\":[$E6]}" \
	"$BASE/v1/worlds/99/edits"; }
edit_to
wait_until 60 has "$SERVER_LOG" 'snapshot of'
server_stop
server_start --data-dir "$TMP/fold" --history 6
check "restored with edit 1 folded into the snapshot (base 1)" \
	eq "$(curl -s "$BASE/v1/worlds/$seed" | field 'd["base"]')" 1
check "... the same chunk versions and hashes as before the restart" \
	eq "$(hashes_of "$seed")" "$(cat "$TMP/fold.hashes")"
server_stop

# players and moderators: who edited what, and a revert by author
printf 'a-secret-of-32-bytes-or-more-0123456789\n' >"$TMP/secret"
mint() { "$SERVER_BIN" token --secret-file "$TMP/secret" "$@"; }
ALICE=$(mint --sub alice) BOB=$(mint --sub bob) MOD=$(mint --sub mia --role moderator)
as() { local t=$1; shift; curl -s -o "$TMP/ans" -w '%{http_code}' -H "Authorization: Bearer $t" \
	-H 'Content-Type: application/json' "$@"; }
server_start --data-dir "$TMP/players" --token-secret-file "$TMP/secret"
check "alice and bob edit" eq "$(as "$ALICE" -d "{\"edits\":[$E1]}" "$BASE/v1/worlds/5/edits")$(as \
	"$BOB" -d "{\"edits\":[$E2,$E3]}" "$BASE/v1/worlds/5/edits")" 200200
check "... the log names them" eq "$(log | field '[e["author"] for e in d["edits"]]')" \
	'["alice", "bob", "bob"]'
check "a player may not revert: 403" eq "$(as "$ALICE" -d '{"author":"bob"}' "$BASE/v1/worlds/5/reverts")" 403
check "a moderator reverts bob's edits" \
	eq "$(as "$MOD" -d '{"author":"bob"}' "$BASE/v1/worlds/5/reverts")/$(ans count)" 200/2
check "... the revert is mia's" eq "$(log '?since=3' | field 'd["edits"][0]["author"]')" '"mia"'
check "... bob's edits are out, alice's stay" \
	eq "$(log '?author=bob' | field '[e.get("reverted", False) for e in d["edits"]]')/$(log \
	'?author=alice' | field '[e.get("reverted", False) for e in d["edits"]]')" '[true, true]/[false]'
server_stop
finish
