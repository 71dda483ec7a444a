#!/bin/bash
# numeric_edges.sh - every numeric parameter of every route at its edges:
# 0, -1, the type's largest value, one past it and a 30-digit number (and
# the edges of the ranges the docs give), in the path, the query, headers
# and POSTed edit JSON, each answering the status README.md, docs/edits.md,
# docs/maps.md and server/assets/openapi.json document, and the server
# still answering /healthz after each (issue 34: since=2^64-1 once stopped
# it). GET and HEAD where the route takes both; event streams by their
# status line. One server, one curl for the whole table (keep-alive),
# worlds with edits (42) and without (7). Then u64 fields printed exactly.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

# a token, so that edits may carry X-Request-Start (a proxy's sign)
server_start --workers 2 --edit-rate 0 --edit-area 0 --edit-token edge-token
AUTH=(-H 'Authorization: Bearer edge-token')

U64=18446744073709551615      # 2^64 - 1
U64P=18446744073709551616     # 2^64
D30=123456789012345678901234567890
I32=2147483647
I32P=2147483648
I32N=-2147483648
I32NN=-2147483649
U32=4294967295
U32P=4294967296
T64=$(printf 'a%.0s' $(seq 64))  # the longest text seed
T65=${T64}a

# ---- a world with edits: 42 has 3, all on chunk (0,0), so its version is 3
raise='{"op":"raise","x":10,"z":10,"radius":5,"strength":1}'
for i in 1 2 3; do
	"${CURL[@]}" -o /dev/null -X POST "${AUTH[@]}" -H 'Content-Type: application/json' \
		--data-binary "{\"edits\":[$raise]}" "$BASE/v1/worlds/42/edits" || exit 1
done
check "world 42 has 3 edits" grep -q '"edit_seq":3,' <("${CURL[@]}" "$BASE/v1/worlds/42")

# ---- the table -------------------------------------------------------------------
# want|methods|path|header|edit  (methods: G GET, H HEAD, E an event stream's
# GET, P POST of {"edits":[edit]} to world 99, or @FILE for a whole body
# from $TMP; '@' in a path stands for both worlds, 42 and 7)
# An edit's short form: raise X Z RADIUS STRENGTH, flatten X Z RADIUS
# STRENGTH HEIGHT, set X Z RADIUS HEIGHT; into $edit, without a fork.
json_edit() {
	local op=$1 x=$2 z=$3 radius=$4
	printf -v edit '{"op":"%s","x":%s,"z":%s,"radius":%s' "$op" "$x" "$z" "$radius"
	case $op in
	raise) edit+=",\"strength\":$5}" ;;
	flatten) edit+=",\"strength\":$5,\"height\":$6}" ;;
	set) edit+=",\"height\":$5}" ;;
	esac
}
many() {
	local i sep=
	printf '{"edits":['
	for ((i = 1; i <= $1; i++)); do
		json_edit raise "$i" 0 1 1
		printf '%s%s' "$sep" "$edit"
		sep=,
	done
	printf ']}'
}
many 256 >"$TMP/256.json"
many 257 >"$TMP/257.json"
tile=/v1/worlds/@/chunks
TABLE=$(cat <<EOF
# seeds (in the path): decimal u64 or a text seed of [A-Za-z0-9_-]{1,64}
200|GH|/v1/worlds/0|
200|GH|/v1/worlds/-1|
200|GH|/v1/worlds/$U64|
400|GH|/v1/worlds/$U64P|
400|GH|/v1/worlds/$D30|
200|GH|/v1/worlds/0000000000000000000000000000000000000000000000000000000000000042|
400|GH|/v1/worlds/00000000000000000000000000000000000000000000000000000000000000042|
200|GH|/v1/worlds/$T64|
400|GH|/v1/worlds/$T65|
200|GH|/v1/worlds/$U64/chunks/8/0/0|
400|GH|/v1/worlds/$U64P/chunks/8/0/0|
400|GH|/v1/worlds/$D30/chunks/8/0/0|
200|GH|/v1/worlds/-1/chunks/8/0/0|
400|GH|/v1/worlds/$U64P/edits|
200|GH|/v1/worlds/$U64/edits|
400|GH|/v1/worlds/$D30/hashes?cx0=0&cz0=0&cx1=0&cz1=0|
400|E|/v1/worlds/$U64P/events|
200|E|/v1/worlds/$U64/events|
400|GH|/v1/worlds/$D30/maps/terrarium|
400|GH|/v1/worlds/$U64P/maps/terrarium/17/65536/65536|
200|GH|/v1/worlds/$U64/objects/0/0|
400|GH|/v1/worlds/$D30/objects/0/0|
# tile: lod 0..max_lod (8 for default), cx and cz int32
200|GH|$tile/0/0/0|
400|GH|$tile/-1/0/0|
200|GH|$tile/8/0/0|
400|GH|$tile/9/0/0|
400|GH|$tile/$U32/0/0|
400|GH|$tile/$U64/0/0|
400|GH|$tile/$U64P/0/0|
400|GH|$tile/$D30/0/0|
200|GH|$tile/8/-1/-1|
200|GH|$tile/8/$I32/$I32|
200|GH|$tile/8/$I32N/$I32N|
400|GH|$tile/8/$I32P/0|
400|GH|$tile/8/0/$I32P|
400|GH|$tile/8/$I32NN/0|
400|GH|$tile/8/0/$I32NN|
400|GH|$tile/8/$U64/0|
400|GH|$tile/8/0/$D30|
400|GH|$tile/8/+1/0|
# ?v=: the chunk's edit version (42's (0,0): 3; 7's: 0); beyond the world's
# edit_seq 404; an older one 302; not a decimal u64 400
302|GH|/v1/worlds/42/chunks/8/0/0?v=0|
200|GH|/v1/worlds/42/chunks/8/0/0?v=3|
404|GH|/v1/worlds/42/chunks/8/0/0?v=4|
200|GH|/v1/worlds/7/chunks/8/0/0?v=0|
404|GH|/v1/worlds/7/chunks/8/0/0?v=1|
400|GH|$tile/8/0/0?v=-1|
404|GH|$tile/8/0/0?v=$U64|
400|GH|$tile/8/0/0?v=$U64P|
400|GH|$tile/8/0/0?v=$D30|
# ?precision= and ?format= (names, some of them numbers)
200|GH|$tile/8/0/0?precision=1cm|
200|GH|$tile/8/0/0?precision=1m|
400|GH|$tile/8/0/0?precision=0|
400|GH|$tile/8/0/0?precision=-1cm|
400|GH|$tile/8/0/0?precision=${U32}cm|
400|GH|$tile/8/0/0?precision=${D30}m|
200|GH|$tile/8/0/0?format=1|
200|GH|$tile/8/0/0?format=3|
200|GH|$tile/8/0/0?format=5|
400|GH|$tile/8/0/0?format=0|
400|GH|$tile/8/0/0?format=-1|
400|GH|$tile/8/0/0?format=6|
400|GH|$tile/8/0/0?format=$U64|
400|GH|$tile/8/0/0?format=$D30|
# Accept-Encoding q-values: never an error
200|GH|$tile/8/0/0|Accept-Encoding: zstd;q=0
200|GH|$tile/8/0/0|Accept-Encoding: zstd;q=-1, gzip;q=2
200|GH|$tile/8/0/0|Accept-Encoding: zstd;q=0.$D30
# bundles: the rectangle cx0..cx1 x cz0..cz1, at most 64 tiles
200|GH|$tile/8?cx0=0&cz0=0&cx1=0&cz1=0|
200|GH|$tile/8?cx0=-1&cz0=-1&cx1=-1&cz1=-1|
200|GH|$tile/8?cx0=$I32&cz0=$I32&cx1=$I32&cz1=$I32|
200|GH|$tile/8?cx0=$I32N&cz0=$I32N&cx1=$I32N&cz1=$I32N|
200|GH|$tile/8?cx0=0&cz0=0&cx1=7&cz1=7|
200|GH|$tile/8?cx0=0&cz0=0&cx1=63&cz1=0|
400|GH|$tile/8?cx0=0&cz0=0&cx1=64&cz1=0|
400|GH|$tile/8?cx0=0&cz0=0&cx1=7&cz1=8|
400|GH|$tile/8?cx0=$I32N&cz0=0&cx1=$I32&cz1=0|
400|GH|$tile/8?cx0=0&cz0=$I32N&cx1=0&cz1=$I32|
400|GH|$tile/8?cx0=1&cz0=0&cx1=0&cz1=0|
400|GH|$tile/8?cx0=$I32P&cz0=0&cx1=$I32P&cz1=0|
400|GH|$tile/8?cx0=$I32NN&cz0=0&cx1=0&cz1=0|
400|GH|$tile/8?cx0=0&cz0=0&cx1=0&cz1=$U64|
400|GH|$tile/8?cx0=$D30&cz0=0&cx1=0&cz1=0|
400|GH|$tile/8?cx0=0&cz0=0&cx1=0|
400|GH|$tile/-1?cx0=0&cz0=0&cx1=0&cz1=0|
400|GH|$tile/9?cx0=0&cz0=0&cx1=0&cz1=0|
400|GH|$tile/$D30?cx0=0&cz0=0&cx1=0&cz1=0|
200|GH|/v1/worlds/7/chunks/8?cx0=0&cz0=0&cx1=0&cz1=0&v=0|
404|GH|$tile/8?cx0=0&cz0=0&cx1=0&cz1=0&v=$U64|
400|GH|$tile/8?cx0=0&cz0=0&cx1=0&cz1=0&v=-1|
400|GH|$tile/8?cx0=0&cz0=0&cx1=0&cz1=0&v=$U64P|
400|GH|$tile/8?cx0=0&cz0=0&cx1=0&cz1=0&format=$U64|
400|GH|$tile/8?cx0=0&cz0=0&cx1=0&cz1=0&precision=0|
# objects/{cx}/{cz}
200|GH|/v1/worlds/@/objects/0/0|
200|GH|/v1/worlds/@/objects/-1/-1|
200|GH|/v1/worlds/@/objects/$I32/$I32|
200|GH|/v1/worlds/@/objects/$I32N/$I32N|
400|GH|/v1/worlds/@/objects/$I32P/0|
400|GH|/v1/worlds/@/objects/0/$I32NN|
400|GH|/v1/worlds/@/objects/$U64/0|
400|GH|/v1/worlds/@/objects/0/$D30|
404|GH|/v1/worlds/@/objects/0/0?v=$U64|
400|GH|/v1/worlds/@/objects/0/0?v=$U64P|
400|GH|/v1/worlds/@/objects/0/0?v=-1|
# maps: ?origin=CX,CZ two int32; z (0..17 in the pyramid, minzoom 9), x and
# y below 2^z, u32 in the path; outside the pyramid or the grid 404
200|GH|/v1/worlds/@/maps/terrarium?origin=0,0|
200|GH|/v1/worlds/@/maps/terrarium.json?origin=-1,-1|
200|GH|/v1/worlds/@/maps/shaded?origin=$I32,$I32|
200|GH|/v1/worlds/@/maps/terrarium?origin=$I32N,$I32N|
400|GH|/v1/worlds/@/maps/terrarium?origin=$I32P,0|
400|GH|/v1/worlds/@/maps/terrarium?origin=0,$I32NN|
400|GH|/v1/worlds/@/maps/terrarium?origin=$U64,0|
400|GH|/v1/worlds/@/maps/terrarium?origin=0,$D30|
400|GH|/v1/worlds/@/maps/terrarium?origin=0|
400|GH|/v1/worlds/@/maps/terrarium?origin=,|
200|GH|/v1/worlds/@/maps/terrarium/17/65536/65536|
200|GH|/v1/worlds/@/maps/terrarium/17/0/0.png|
200|GH|/v1/worlds/@/maps/shaded/17/131071/131071.png|
404|GH|/v1/worlds/@/maps/terrarium/0/0/0|
404|GH|/v1/worlds/@/maps/terrarium/8/0/0|
404|GH|/v1/worlds/@/maps/terrarium/18/0/0|
404|GH|/v1/worlds/@/maps/terrarium/64/0/0|
404|GH|/v1/worlds/@/maps/terrarium/65/0/0|
404|GH|/v1/worlds/@/maps/terrarium/$U32/0/0|
400|GH|/v1/worlds/@/maps/terrarium/$U32P/0/0|
400|GH|/v1/worlds/@/maps/terrarium/-1/0/0|
400|GH|/v1/worlds/@/maps/terrarium/$D30/0/0|
404|GH|/v1/worlds/@/maps/terrarium/17/131072/0|
404|GH|/v1/worlds/@/maps/terrarium/17/0/131072.png|
404|GH|/v1/worlds/@/maps/terrarium/17/$U32/0|
404|GH|/v1/worlds/@/maps/terrarium/17/0/$U32.png|
400|GH|/v1/worlds/@/maps/terrarium/17/$U32P/0|
400|GH|/v1/worlds/@/maps/terrarium/17/0/$U32P.png|
400|GH|/v1/worlds/@/maps/terrarium/17/-1/0|
400|GH|/v1/worlds/@/maps/terrarium/17/0/-1.png|
400|GH|/v1/worlds/@/maps/terrarium/17/$D30/0|
400|GH|/v1/worlds/@/maps/terrarium/17/0/$D30|
200|GH|/v1/worlds/@/maps/terrarium/17/65536/65536?origin=$I32,$I32|
404|GH|/v1/worlds/@/maps/terrarium/17/131071/131071?origin=$I32,$I32|
404|GH|/v1/worlds/@/maps/terrarium/17/0/0?origin=$I32N,$I32N|
400|GH|/v1/worlds/@/maps/terrarium/17/65536/65536?origin=$I32P,0|
# GET edits: ?since= and ?limit= decimal u64, limit at least 1 (above 1000
# counts as 1000); since beyond the log: an empty list
200|GH|/v1/worlds/@/edits?since=0|
400|GH|/v1/worlds/@/edits?since=-1|
200|GH|/v1/worlds/@/edits?since=3|
200|GH|/v1/worlds/@/edits?since=18446744073709551614|
200|GH|/v1/worlds/@/edits?since=$U64|
400|GH|/v1/worlds/@/edits?since=$U64P|
400|GH|/v1/worlds/@/edits?since=$D30|
400|GH|/v1/worlds/@/edits?since=|
400|GH|/v1/worlds/@/edits?limit=0|
400|GH|/v1/worlds/@/edits?limit=-1|
200|GH|/v1/worlds/@/edits?limit=1|
200|GH|/v1/worlds/@/edits?limit=$U64|
200|GH|/v1/worlds/@/edits?since=$U64&limit=$U64|
400|GH|/v1/worlds/@/edits?limit=$U64P|
400|GH|/v1/worlds/@/edits?limit=$D30|
# hashes: the rectangle, at most 64 x 64 chunks
200|GH|/v1/worlds/@/hashes?cx0=0&cz0=0&cx1=0&cz1=0|
200|GH|/v1/worlds/@/hashes?cx0=-1&cz0=-1&cx1=-1&cz1=-1|
200|GH|/v1/worlds/@/hashes?cx0=0&cz0=0&cx1=63&cz1=63|
400|GH|/v1/worlds/@/hashes?cx0=0&cz0=0&cx1=64&cz1=0|
400|GH|/v1/worlds/@/hashes?cx0=0&cz0=0&cx1=0&cz1=64|
200|GH|/v1/worlds/@/hashes?cx0=$((I32 - 63))&cz0=$((I32 - 63))&cx1=$I32&cz1=$I32|
200|GH|/v1/worlds/@/hashes?cx0=$I32N&cz0=$I32N&cx1=$((I32N + 63))&cz1=$((I32N + 63))|
400|GH|/v1/worlds/@/hashes?cx0=$I32N&cz0=0&cx1=$I32&cz1=0|
400|GH|/v1/worlds/@/hashes?cx0=$I32&cz0=0&cx1=$I32N&cz1=0|
400|GH|/v1/worlds/@/hashes?cx0=$I32&cz0=0&cx1=$I32P&cz1=0|
400|GH|/v1/worlds/@/hashes?cx0=$I32NN&cz0=0&cx1=0&cz1=0|
400|GH|/v1/worlds/@/hashes?cx0=0&cz0=$U64&cx1=0&cz1=0|
400|GH|/v1/worlds/@/hashes?cx0=0&cz0=0&cx1=0&cz1=$D30|
400|GH|/v1/worlds/@/hashes?cx0=0&cz0=0&cx1=0|
# events: Last-Event-ID (the header wins) or ?last_event_id=, decimal u64
200|E|/v1/worlds/@/events|
200|E|/v1/worlds/@/events|Last-Event-ID: 0
400|E|/v1/worlds/@/events|Last-Event-ID: -1
200|E|/v1/worlds/@/events|Last-Event-ID: 3
200|E|/v1/worlds/@/events|Last-Event-ID: $U64
400|E|/v1/worlds/@/events|Last-Event-ID: $U64P
400|E|/v1/worlds/@/events|Last-Event-ID: $D30
200|E|/v1/worlds/@/events?last_event_id=0|
400|E|/v1/worlds/@/events?last_event_id=-1|
200|E|/v1/worlds/@/events?last_event_id=$U64|
400|E|/v1/worlds/@/events?last_event_id=$U64P|
400|E|/v1/worlds/@/events?last_event_id=$D30|
400|E|/v1/worlds/@/events?last_event_id=|
200|E|/v1/worlds/@/events?last_event_id=-1|Last-Event-ID: 0
405|H|/v1/worlds/@/events|
# If-Modified-Since: an HTTP-date; a bad one is ignored
200|GH|/v1/presets|If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT
304|GH|/v1/presets|If-Modified-Since: Fri, 31 Dec 9999 23:59:59 GMT
200|GH|/v1/presets|If-Modified-Since: Sun, 99 Nov 1994 08:49:37 GMT
200|GH|/v1/presets|If-Modified-Since: Sun, 06 Nov -1 08:49:37 GMT
200|GH|/v1/presets|If-Modified-Since: Sun, 06 Nov 1994 99:99:99 GMT
200|GH|/v1/presets|If-Modified-Since: Sun, 06 Nov $D30 08:49:37 GMT
304|GH|/v1/openapi.json|If-Modified-Since: Fri, 31 Dec 9999 23:59:59 GMT
200|GH|/|If-Modified-Since: Sunday, 06-Nov-94 08:49:37 GMT
# POST edits (to world 99): x and z within the int32 chunk grid (else 400
# outside the world), radius (0, 4096], strength [0, 10000] (flatten
# [0, 1]), height [-100000, 100000] (else 422); not finite 400
200|P|/v1/worlds/99/edits||raise 0 0 1 1
200|P|/v1/worlds/99/edits||raise -1 -1 1 1
200|P|/v1/worlds/99/edits||raise 549755813888 549755813888 1 1
200|P|/v1/worlds/99/edits||raise -549755813888 -549755813888 1 1
400|P|/v1/worlds/99/edits||raise 549755813889 0 1 1
400|P|/v1/worlds/99/edits||raise 0 -549755813889 1 1
400|P|/v1/worlds/99/edits||raise 4503599627370.496 0 1 1
400|P|/v1/worlds/99/edits||raise 4503599627370.497 0 1 1
400|P|/v1/worlds/99/edits||raise 0 $U64 1 1
400|P|/v1/worlds/99/edits||raise $D30 0 1 1
400|P|/v1/worlds/99/edits||raise -$D30 0 1 1
400|P|/v1/worlds/99/edits||raise 1e400 0 1 1
422|P|/v1/worlds/99/edits||raise 0 0 0 1
422|P|/v1/worlds/99/edits||raise 0 0 -1 1
200|P|/v1/worlds/99/edits||raise 0 0 0.001 1
422|P|/v1/worlds/99/edits||raise 0 0 0.0009 1
200|P|/v1/worlds/99/edits||raise 0 0 4096 1
422|P|/v1/worlds/99/edits||raise 0 0 4096.001 1
422|P|/v1/worlds/99/edits||raise 0 0 $U64 1
422|P|/v1/worlds/99/edits||raise 0 0 $D30 1
400|P|/v1/worlds/99/edits||raise 0 0 1e400 1
200|P|/v1/worlds/99/edits||raise 0 0 1 0
422|P|/v1/worlds/99/edits||raise 0 0 1 -1
200|P|/v1/worlds/99/edits||raise 0 0 1 10000
422|P|/v1/worlds/99/edits||raise 0 0 1 10000.001
422|P|/v1/worlds/99/edits||raise 0 0 1 $U64
422|P|/v1/worlds/99/edits||raise 0 0 1 $D30
400|P|/v1/worlds/99/edits||raise 0 0 1 -1e400
200|P|/v1/worlds/99/edits||flatten 0 0 1 1 0
422|P|/v1/worlds/99/edits||flatten 0 0 1 1.000001 0
422|P|/v1/worlds/99/edits||flatten 0 0 1 -1 0
422|P|/v1/worlds/99/edits||flatten 0 0 1 $D30 0
200|P|/v1/worlds/99/edits||set 0 0 1 0
200|P|/v1/worlds/99/edits||set 0 0 1 -1
200|P|/v1/worlds/99/edits||set 0 0 1 100000
200|P|/v1/worlds/99/edits||set 0 0 1 -100000
422|P|/v1/worlds/99/edits||set 0 0 1 100000.000001
422|P|/v1/worlds/99/edits||set 0 0 1 -100001
422|P|/v1/worlds/99/edits||set 0 0 1 $U64
422|P|/v1/worlds/99/edits||set 0 0 1 -$D30
400|P|/v1/worlds/99/edits||set 0 0 1 1e400
# world 99 now has edits at the grid's corners; 4096 m brushes there reach
# past it (their chunks beyond int32 are not touched); then reads there,
# whose 3 x 3 neighbourhoods (materials, objects) stop at the edge
200|P|/v1/worlds/99/edits||raise 549755813888 549755813888 4096 1
200|P|/v1/worlds/99/edits||raise -549755813888 -549755813888 4096 1
200|GH|/v1/worlds/99/chunks/0/$I32/$I32?layers=height,material|
200|GH|/v1/worlds/99/chunks/0/$I32N/$I32N?layers=height,material|
200|GH|/v1/worlds/99/objects/$I32/$I32|
200|GH|/v1/worlds/99/objects/$I32N/$I32N|
200|GH|/v1/worlds/99/chunks/8?cx0=$((I32 - 7))&cz0=$((I32 - 7))&cx1=$I32&cz1=$I32&layers=height,material|
200|GH|/v1/worlds/99/chunks/8?cx0=$I32N&cz0=$I32N&cx1=$((I32N + 7))&cz1=$((I32N + 7))&layers=height,material|
200|GH|/v1/worlds/99/hashes?cx0=$((I32 - 63))&cz0=$((I32 - 63))&cx1=$I32&cz1=$I32|
200|GH|/v1/worlds/99/hashes?cx0=$I32N&cz0=$I32N&cx1=$((I32N + 63))&cz1=$((I32N + 63))|
200|GH|/v1/worlds/99/maps/shaded/17/65536/65536.png?origin=$I32,$I32|
200|GH|/v1/worlds/99/maps/terrarium/17/65535/65535.png?origin=$I32,$I32|
# (a map tile's samples and one more on each side must be in the grid)
200|GH|/v1/worlds/99/maps/shaded/17/65537/65537.png?origin=$I32N,$I32N|
404|GH|/v1/worlds/99/maps/shaded/17/65536/65536.png?origin=$I32N,$I32N|
404|GH|/v1/worlds/99/maps/terrarium/17/65536/65537.png?origin=$I32N,$I32N|
404|GH|/v1/worlds/99/maps/shaded/17/65537/65537.png?origin=$I32,$I32|
200|GH|/v1/worlds/99/edits?since=0&limit=$U64|
# the batch: 1..256 edits
422|P|/v1/worlds/99/edits||@empty
200|P|/v1/worlds/99/edits||@256.json
422|P|/v1/worlds/99/edits||@257.json
# X-Request-Start: late (past --edit-deadline) 503; not of its forms, or
# ahead of the clock, not judged
200|P|/v1/worlds/99/edits|X-Request-Start: t=0|raise 0 0 1 1
200|P|/v1/worlds/99/edits|X-Request-Start: -1|raise 0 0 1 1
503|P|/v1/worlds/99/edits|X-Request-Start: t=1|raise 0 0 1 1
503|P|/v1/worlds/99/edits|X-Request-Start: t=1.5|raise 0 0 1 1
200|P|/v1/worlds/99/edits|X-Request-Start: t=99999999999.999|raise 0 0 1 1
200|P|/v1/worlds/99/edits|X-Request-Start: 99999999999999999|raise 0 0 1 1
200|P|/v1/worlds/99/edits|X-Request-Start: t=$U64|raise 0 0 1 1
200|P|/v1/worlds/99/edits|X-Request-Start: t=$D30.$D30|raise 0 0 1 1
# Content-Length: past 64 KiB 413; not a number 400
413|P|/v1/worlds/99/edits|Content-Length: $U64|@nobody
400|P|/v1/worlds/99/edits|Content-Length: $U64P|@nobody
400|P|/v1/worlds/99/edits|Content-Length: $D30|@nobody
400|P|/v1/worlds/99/edits|Content-Length: -1|@nobody
EOF
)
printf '{"edits":[]}' >"$TMP/empty"

# ---- one curl for every row, /healthz after each ------------------------------------
args=()
rows=()
add() { # want method path header edit
	local want=$1 m=$2 path=$3 hdr=$4 edit=$5 a=(-sg -o /dev/null -w '%{http_code}\n')
	[ ${#args[@]} = 0 ] || args+=(--next)
	case $m in
	G) a+=(--max-time 30) ;;
	H) a+=(--max-time 30 -I) ;;
	E) a+=(--max-time 0.3) ;;
	P) a+=(--max-time 30 -X POST "${AUTH[@]}" -H 'Content-Type: application/json')
	   case $edit in
	   @nobody) ;;
	   @*) a+=(--data-binary "@$TMP/${edit#@}") ;;
	   *) json_edit $edit
	      a+=(--data-binary "{\"edits\":[$edit]}") ;;
	   esac ;;
	esac
	[ -z "$hdr" ] || a+=(-H "$hdr")
	args+=("${a[@]}" "$BASE$path" --next -s -o /dev/null -w '%{http_code}\n' --max-time 30
	       "$BASE/healthz")
	rows+=("$want|$m|$path|$hdr|$edit")
}
while IFS='|' read -r want methods path hdr edit; do
	[[ -n $want && $want != \#* ]] || continue
	worlds=(42 7)
	[[ $path == *@* ]] || worlds=(x)
	for w in "${worlds[@]}"; do
		for ((k = 0; k < ${#methods}; k++))
		do add "$want" "${methods:k:1}" "${path//@/$w}" "$hdr" "$edit"; done
	done
done <<<"$TABLE"

start=$SECONDS
mapfile -t got < <(timeout $((300 * ${TEST_TIMEOUT_SCALE:-1})) curl "${args[@]}" 2>/dev/null)
echo "# ${#rows[@]} requests in $((SECONDS - start)) s"
for ((i = 0; i < ${#rows[@]}; i++)); do
	IFS='|' read -r want m path hdr edit <<<"${rows[i]}"
	case $m in G) m=GET ;; H) m=HEAD ;; E) m="GET (stream)" ;; P) m=POST ;; esac
	what="$m $path${hdr:+ [$hdr]}${edit:+ ${edit:0:90}}"
	check "$what: $want, then /healthz 200" \
		eq "${got[2 * i]:-none} ${got[2 * i + 1]:-none}" "$want 200"
done
check "the server still runs" kill -0 "$SERVER_PID"

# ---- u64 fields printed exactly (not through a double: 1.8446744073709552e+19) ---
body() { "${CURL[@]}" "$BASE$1"; }
exact() { # PATH TEXT: the body holds TEXT, and no number (outside strings) in exponent form
	local b
	b=$(body "$1")
	contains "$b" "$2" && [[ ! $(sed 's/"[^"]*"//g' <<<"$b") =~ [0-9][eE][-+]?[0-9] ]] ||
		{ echo "  got ${b:0:300}"; return 1; }
}
for s in 18446744073709551614 18446744073709551615 9007199254740993; do
	check "since=$s answers \"since\":$s exactly" \
		exact "/v1/worlds/42/edits?since=$s" "{\"since\":$s,\"seq\":3,"
done
check "a cut page's next and each edit's seq are integers" \
	exact "/v1/worlds/42/edits?since=1&limit=1" '"edits":[{"seq":2,"op":"raise",'
check "... next" exact "/v1/worlds/42/edits?since=1&limit=1" '"next":2}'
check "world info: edit_seq and base" exact /v1/worlds/42 '"edit_seq":3,"world_hash":'
check "world info: base" exact /v1/worlds/42 '"base":0,'
check "an unedited world: edit_seq 0" exact /v1/worlds/7 '"edit_seq":0,'
check "hashes: seq and a chunk's version" \
	exact "/v1/worlds/42/hashes?cx0=0&cz0=0&cx1=0&cz1=0" '{"seq":3,"world_hash":'
check "... version" exact "/v1/worlds/42/hashes?cx0=0&cz0=0&cx1=0&cz1=0" \
	'"chunks":[{"cx":0,"cz":0,"version":3,"hash":'
check "the 302 of an old ?v= names the version exactly" \
	exact "/v1/worlds/42/chunks/8/0/0?v=1" '{"version":3}'

finish
