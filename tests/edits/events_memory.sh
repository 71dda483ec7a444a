#!/bin/bash
# events_memory.sh - event streams on worlds without edits create nothing.
# 2,000 streams on distinct seeds, opened and closed, leave the world count
# (terrain_worlds) where it was and resident memory within a generous bound;
# streams waiting on such a world still get its first edit (live and
# resumed), and one opened once the world exists gets the next; a POST
# refused after its world was looked up (422: one edit over the chunk bound
# on a preset of 16 m chunks) leaves no world behind either.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

JSON=(-H 'Content-Type: application/json')
ok='{"edits":[{"op":"raise","x":10,"z":10,"radius":5,"strength":1}]}'
mkdir -p "$TMP/presets"
sed 's/"chunk_size": 256/"chunk_size": 16/; s/"name": "canyons"/"name": "small"/' \
	presets/canyons.json >"$TMP/presets/small.json"
server_start --presets "$TMP/presets"
trap stop_all EXIT
PID=$(pgrep -P "$SERVER_PID" | head -1) # the server under timeout(1)

metric() { "${CURL[@]}" "$BASE/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
subs_are() { [ "$(metric terrain_sse_subscribers)" = "$1" ]; }
subs_at_least() { [ "$(metric terrain_sse_subscribers)" -ge "$1" ]; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status"; }
# post SEED BODY [QUERY]: prints the status; the body goes to $TMP/body
post() {
	"${CURL[@]}" -o "$TMP/body" -w '%{http_code}' -X POST "${JSON[@]}" --data-binary "$2" \
		"$BASE/v1/worlds/$1/edits${3:-}"
}
# streams FIRST N: open event streams on the N (at most 300) seeds FIRST..
# at once beside the BEFORE streams already open, wait until the server
# holds them all, close them and wait until it has let them go. Fails when
# either does not happen.
streams() {
	local i pid rc=0 before
	before=$(metric terrain_sse_subscribers)
	for ((i = $1; i < $1 + $2; i++)); do
		printf 'url = "%s/v1/worlds/%d/events"\noutput = "/dev/null"\n' "$BASE" "$i"
	done >"$TMP/streams.cfg"
	curl -s --parallel --parallel-immediate --parallel-max 300 --max-time "$(scaled 120)" \
		-K "$TMP/streams.cfg" >/dev/null 2>&1 &
	pid=$!
	wait_until 60 subs_are $((before + $2)) || rc=1
	[ "$rc" = 0 ] && [ "$(metric terrain_worlds)" != "$worlds0" ] && rc=2
	kill_ours TERM "$pid"
	wait "$pid" 2>/dev/null
	wait_until 60 subs_are "$before" || rc=1
	return "$rc"
}

# ---- 2,000 streams on distinct seeds: no world, no growth -------------------------
worlds0=$(metric terrain_worlds)
streams 5000000 250 # warm up: connection buffers, the allocator
rss0=$(rss_kib)
for ((k = 0, bad = 0; k < 8; k++)); do # 8 x 250 = 2,000 seeds
	streams $((1000000 + k * 250)) 250 || bad=$((bad + 1))
done
check "2,000 streams on distinct seeds opened (250 held at once) and closed" eq "$bad" 0
rss1=$(rss_kib)
echo "  terrain_worlds $worlds0 -> $(metric terrain_worlds); VmRSS $rss0 -> $rss1 KiB"
check "2,000 streams on distinct seeds made no world" eq "$(metric terrain_worlds)" "$worlds0"
check "resident memory grew less than 64 MiB (a leak guard; ASan quarantines)" \
	test $((rss1 - rss0)) -lt 65536

# ---- streams that wait for a world still get its edits -----------------------------
curl -sSN --max-time "$(scaled 120)" "$BASE/v1/worlds/777/events" >"$TMP/ev1" 2>&1 &
ev1=$!
curl -sSN --max-time "$(scaled 120)" "$BASE/v1/worlds/777/events?last_event_id=0" \
	>"$TMP/ev3" 2>&1 &
ev3=$!
check "two streams wait on world 777" wait_until 60 subs_are 2
check "300 streams on other seeds come and go meanwhile" streams 2000000 300
check "world 777 does not exist yet" eq "$(metric terrain_worlds)" "$worlds0"
check "an edit of world 777 is accepted" eq "$(post 777 "$ok")" 200
check "the waiting stream gets it" wait_until 30 grep -q '^id: 1$' "$TMP/ev1"
check "the waiting resumed stream gets it" wait_until 30 grep -q '^id: 1$' "$TMP/ev3"
curl -sSN --max-time "$(scaled 120)" "$BASE/v1/worlds/777/events" >"$TMP/ev2" 2>&1 &
ev2=$!
check "a third stream opens on the world that now exists" wait_until 60 subs_are 3
check "a second edit is accepted" eq "$(post 777 "$ok")" 200
check "the first stream gets the second edit" wait_until 30 grep -q '^id: 2$' "$TMP/ev1"
check "the resumed stream gets it" wait_until 30 grep -q '^id: 2$' "$TMP/ev3"
check "the third stream gets it" wait_until 30 grep -q '^id: 2$' "$TMP/ev2"
check "... and only it" eq "$(grep -c '^id: ' "$TMP/ev2")" 1
check "each edit came once to the first stream" eq "$(grep -c '^id: ' "$TMP/ev1")" 2
check "world 777 is the one world made" eq "$(metric terrain_worlds)" $((worlds0 + 1))
kill_ours TERM "$ev1" "$ev2" "$ev3"
wait "$ev1" "$ev2" "$ev3" 2>/dev/null
check "their streams close" wait_until 60 subs_are 0

# ---- a POST refused after the world lookup leaves none ----------------------------
huge='{"edits":[{"op":"raise","x":0,"z":0,"radius":1000,"strength":1}]}'
check "an edit over 4096 chunks of 16 m is refused" eq "$(post 888 "$huge" '?gen=small')" 422
check "... naming the bound" grep -q 'touches more than 4096 chunks' "$TMP/body"
check "... and made no world" eq "$(metric terrain_worlds)" $((worlds0 + 1))
check "a good edit of that world is then accepted" eq "$(post 888 "$ok" '?gen=small')" 200
check "... and makes it" eq "$(metric terrain_worlds)" $((worlds0 + 2))
check "the server still answers" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' \
	"$BASE/healthz")" 200
check "server stops with 0 (no leak under ASan)" server_stop
finish
