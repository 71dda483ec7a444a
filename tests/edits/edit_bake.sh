#!/bin/bash
# edit_bake.sh - baked edits serve the same bytes as replaying the log:
# a server that folds chunks' edits into deltas (--bake-after 8) and one
# that never bakes (--bake-after 0), on the same edit log, give
# byte-identical tiles (LODs 0, 2 and 5, with and without the material
# layer, which reads the neighbours' edits too) and objects; the baker
# reports its bakes in /metrics; bakes are rebuilt after a restart, and
# the warm-up right after it keeps the deltas decoded (hot) before any tile
# asks, which then serve the same bytes.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

metric() { "${CURL[@]}" "$BASE/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

server_start --bake-after 8 --workers 2
# 24 batches of 10 mixed brushes around chunk (0, 0), up to 300 m wide
for b in $(seq 0 23); do
	body='{"edits":['
	for i in $(seq 0 9); do
		n=$((b * 10 + i))
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
		--data-binary "$body" "$BASE/v1/worlds/bake/edits")
	[ "$code" = 200 ] || { echo "POST $b: $code $(cat "$TMP/post")"; exit 1; }
done
wait_bakes() {
	baked() { [ "$(metric terrain_bake_queue)" = 0 ] && [ "${1:-1}" -le "$(metric terrain_bakes_total)" ]; }
	wait_until 120 baked "$@"
}
check "the baker baked chunks" wait_bakes 1
bakes=$(metric terrain_bakes_total)
check "several chunks have a delta" test "$(metric terrain_baked_chunks)" -ge 4
echo "  ($bakes bakes, $(metric terrain_baked_chunks) chunks, $(metric terrain_baked_bytes) bytes)"

fetch_all() { # DIR: tiles and objects of the chunks around (0, 0)
	local dir=$1 cx cz lod l
	mkdir -p "$dir"
	for cx in -1 0 1; do for cz in -1 0 1; do
		for lod in 0 2 5; do for l in height height,material; do
			"${CURL[@]}" -o "$dir/t_${cx}_${cz}_${lod}_$l" \
				"$BASE/v1/worlds/bake/chunks/$lod/$cx/$cz?layers=$l" || return 1
		done; done
		"${CURL[@]}" -o "$dir/o_${cx}_${cz}" "$BASE/v1/worlds/bake/objects/$cx/$cz" || return 1
	done; done
}
fetch_all "$TMP/baked"
check "bakes keep their deltas decoded (hot) for the next tiles" \
	test "$(metric terrain_bake_hot_chunks)" -ge 4
check "  at 257 x 257 quanta each" eq "$(metric terrain_bake_hot_bytes)" \
	$(( $(metric terrain_bake_hot_chunks) * 257 * 257 * 4 ))
server_stop >/dev/null

server_start --bake-after 0 --workers 2
fetch_all "$TMP/replayed"
check "the replaying server makes no bakes" eq "$(metric terrain_bakes_total)" 0
server_stop >/dev/null
check "108 baked answers equal the replayed ones byte for byte" diff -r -q "$TMP/baked" "$TMP/replayed"
check "the edits changed the tiles (not a trivial match)" not cmp -s \
	"$TMP/baked/t_0_0_0_height" <("$SERVER_BIN" generate --seed bake --lod 0 --cx 0 --cz 0)

server_start --bake-after 8 --workers 2
check "a restarted baker bakes again from the log" wait_bakes 1
check "the warm-up after the restart made the deltas hot before any tile" \
	test "$(metric terrain_bake_hot_chunks)" -ge 4
fetch_all "$TMP/again"
check "and serves the same bytes from them" diff -r -q "$TMP/baked" "$TMP/again"
server_stop >/dev/null

# A chunk whose history no bake holds after a restart (the log replayed
# whole): its tiles, asked at once and at every LOD, wait for the one bake
# of its 2,048 edits instead of each applying them, and are the same bytes
# as a server that never bakes.
heavy() { # batches of 256 brushes of 20-80 m in chunk (4, 4)
	local b i body
	for b in $(seq 0 7); do
		body='{"edits":['
		for i in $(seq 0 255); do
			n=$((b * 256 + i))
			body+="{\"op\":\"$([ $((n % 2)) = 0 ] && echo raise || echo lower)\",\"x\":$((1024 + (n * 37) % 256)),\"z\":$((1024 + (n * 91) % 256)),\"radius\":$((20 + n % 60)),\"strength\":0.25}"
			[ "$i" -lt 255 ] && body+=","
		done
		"${CURL[@]}" -o /dev/null -X POST -H 'Content-Type: application/json' \
			--data-binary "$body]}" "$BASE/v1/worlds/heavy/edits" || return 1
	done
}
fetch_heavy() { # DIR: LOD 0..5 of chunk (4, 4) at once
	local lod pids=()
	mkdir -p "$1"
	for lod in 0 1 2 3 4 5; do
		"${CURL[@]}" -o "$1/t_$lod" "$BASE/v1/worlds/heavy/chunks/$lod/4/4" &
		pids+=($!)
	done
	wait "${pids[@]}" # not the server
}
server_start --bake-after 8 --workers 2 --snapshot-every 0 --data-dir "$TMP/heavy"
check "2,048 edits on one chunk" heavy
server_stop >/dev/null
server_start --bake-after 0 --workers 2 --snapshot-every 0 --data-dir "$TMP/heavy"
fetch_heavy "$TMP/heavy-replayed"
server_stop >/dev/null
server_start --bake-after 8 --workers 2 --snapshot-every 0 --data-dir "$TMP/heavy"
fetch_heavy "$TMP/heavy-first"
check "the first tiles after a restart, during the chunk's bake, are the replayed bytes" \
	diff -r -q "$TMP/heavy-first" "$TMP/heavy-replayed"
check "  and the bake is made once, its delta kept hot" test "$(metric terrain_bake_hot_chunks)" -ge 1
finish
