#!/usr/bin/env bash
# bench/precision.sh BUILD_DIR - make bench, section 15: bytes and requests
# per player-minute of a player walking at 20 m/s through `default` with the
# client's LOD rings (terrain-client walk, radius 2 km, d0 256 m, Lmax 6),
# today's client (the one before issue 20: --exact --format 1, every ring at
# the canonical 1 cm in version-1 tiles) beside the exact client on version-3
# tiles (--exact) and the precision client (the default: version 3,
# --precisions 1cm,10cm,50cm,1m of LOD 0, 1, 2, >= 3), against one server,
# in the same run, two ways:
#   cold          each tile fetched once, never revalidated
#   revalidating  held tiles revalidated with If-None-Match every 10 s
#                 (simulated) of the walk; a 304 costs its head
# then the zstd body (Content-Encoding: zstd, the server's level) of LOD
# 0..5 `default` tiles at each ?precision= beside the 16-bit PNG of the same
# canonical heights (terrain-client export: 1 quantum per unit, exact), the
# mean of 8 chunks. Writes BUILD_DIR/bench/precision.tsv (the ratio the
# summary reads) and precision_size.tsv. Figures are printed, never asserted. About 30 s.
#
# Env: PRECISION_WALK_M (metres walked, 2400: two minutes at 20 m/s).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/precision.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
walk_m="${PRECISION_WALK_M:-2400}"
out="$build/bench"
mkdir -p "$out"
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/precision-bench.XXXXXX")"
trap cleanup EXIT
client="$build/terrain-client"

say "section 15: precision (bench/precision.sh)"
"$build/terrain-server" serve --bind 127.0.0.1 --port 0 --data-dir "$tmp/data" \
	--max-age 60 2>"$tmp/server.log" &
spid=$!
for _ in $(seq 1 200); do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/server.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "${port:-}" ] || { echo "server did not start"; cat "$tmp/server.log"; exit 1; }
base="http://127.0.0.1:$port"
minutes=$(awk -v m="$walk_m" 'BEGIN { print m / 20 / 60 }')

echo "## 15. Fewer bytes per player: coarser heights for far rings (issue 20)"
echo
# walk MODE CLIENT ARGS...: one line of the table
walk() {
	local mode=$1 who=$2 f="$tmp/walk.$RANDOM"
	shift 2
	"$client" walk --server "$base" --seed 42 --path "0,0:$walk_m,0" --speed 20 \
		--radius 2048 --quiet "$@" >"$f" 2>&1 || { cat "$f" >&2; return 1; }
	awk -v mode="$mode" -v who="$who" -v min="$minutes" '
	/^walk: [0-9]+ steps/ { req = $4; ok = $6; sub(/\(/, "", ok); nm = $9; errs = $(NF - 1) }
	/bytes on the wire/ { wire = $2 }
	END { printf "%s\t%s\t%.0f\t%.0f\t%.0f\t%.1f\t%s\n", mode, who, req / min, ok / min,
	      nm / min, wire / min / 1024, errs }' "$f"
}
{
	printf 'walk\tclient\trequests/min\t200/min\t304/min\tKB/min on the wire\terrors\n'
	walk cold today --exact --format 1 --revalidate 1000000
	walk cold exact --exact --revalidate 1000000
	walk cold precision --revalidate 1000000
	walk revalidating today --exact --format 1 --revalidate 10
	walk revalidating exact --exact --revalidate 10
	walk revalidating precision --revalidate 10
} >"$tmp/walk.tsv"
awk -F '\t' '
	NR == 1 { print $0 "\t/ today"; next }
	{ line[NR] = $0; kb[$1, $2] = $6; mode[NR] = $1; who[NR] = $2 }
	END {
		for (i = 2; i <= NR; i++) {
			r = ""
			if (who[i] != "today" && kb[mode[i], "today"])
				r = sprintf("%.2fx", kb[mode[i], who[i]] / kb[mode[i], "today"])
			printf "%s\t%s\n", line[i], r
		}
	}' "$tmp/walk.tsv" >"$out/precision.tsv"
{
echo "note: terrain-client walk --seed 42 --path 0,0:${walk_m},0 --speed 20 --radius 2048 (d0 256," \
	"Lmax 6: LOD 0..3 inside 2 km); today: the client before issue 20 (--exact --format 1: every" \
	"ring at 1 cm, tiles in the lz21 form of versions 1 and 2); exact: --exact (version 3 tiles);" \
	"precision: the default client (version 3, --precisions 1cm,10cm,50cm,1m); per minute of" \
	"simulated walk ($minutes min); wire bytes are heads + bodies (zstd), heights only"
echo "note: cold: --revalidate 1000000 (never); revalidating: --revalidate 10 (If-None-Match every" \
	"10 s of the walk)"
echo "note: target (issue 20): precision / today <= 0.5x, the map unchanged at LOD 0 (exact) and" \
	"within the chosen precision beyond"
} >>"$out/precision.tsv"
cat "$out/precision.tsv"
echo

# ---- local mode (issue 29): a world with 1% of its chunks edited ----
# World 43: one small raise at the centre of 1% of the chunks of a square
# around the walk (a hash of the chunk picks them), each touching only its
# chunk. The precision client beside terrain-client --local, which makes
# unedited chunks itself and asks only GET /hashes and edited chunks' tiles.
awk 'BEGIN {
	n = 0
	for (cz = -40; cz <= 40; cz++) for (cx = -40; cx <= 56; cx++) {
		h = (cx * 73856093 + cz * 19349663) % 1000003; if (h < 0) h += 1000003
		if (h % 100) continue
		if (n % 200 == 0) {
			if (n > 0) print "]}"
			printf "%s", "{\"edits\":["
			sep = ""
		}
		printf "%s{\"op\":\"raise\",\"x\":%d,\"z\":%d,\"radius\":24,\"strength\":2}", sep,
			cx * 256 + 128, cz * 256 + 128
		sep = ","
		n++
	}
	print "]}"
}' >"$tmp/edits.jsonl"
while read -r batch; do
	curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -d "$batch" \
		"$base/v1/worlds/43/edits" || { echo "POST edits failed" >&2; exit 1; }
done <"$tmp/edits.jsonl"
edited=$(curl -s "$base/v1/worlds/43" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p')
walk43() {
	local mode=$1 who=$2 f="$tmp/walk.$RANDOM"
	shift 2
	"$client" walk --server "$base" --seed 43 --path "0,0:$walk_m,0" --speed 20 \
		--radius 2048 --quiet "$@" >"$f" 2>&1 || { cat "$f" >&2; return 1; }
	awk -v mode="$mode" -v who="$who" -v min="$minutes" '
	/^walk: [0-9]+ steps/ { req = $4; errs = $(NF - 1) }
	/bytes on the wire/ { wire = $2 }
	/^walk: local mode/ { gen = $4; got = $8; hashes = $10 }
	END { printf "%s\t%s\t%.0f\t%.1f\t%s\t%s\t%s\t%s\n", mode, who, req / min, wire / min / 1024,
	      (gen == "" ? "-" : gen), (got == "" ? "-" : got), (hashes == "" ? "-" : hashes), errs }' "$f"
}
{
	printf 'walk\tclient\trequests/min\tKB/min on the wire\ttiles made here\tedited tiles fetched\tGET /hashes\terrors\n'
	walk43 cold precision --revalidate 1000000
	walk43 cold local --local --revalidate 1000000
	walk43 revalidating precision --revalidate 10
	walk43 revalidating local --local --revalidate 10
} >"$tmp/local.tsv"
awk -F '\t' '
	NR == 1 { print $0 "\t/ precision"; next }
	{ line[NR] = $0; kb[$1, $2] = $4; mode[NR] = $1; who[NR] = $2 }
	END {
		for (i = 2; i <= NR; i++) {
			r = ""
			if (who[i] == "local" && kb[mode[i], "precision"])
				r = sprintf("%.4fx", kb[mode[i], "local"] / kb[mode[i], "precision"])
			printf "%s\t%s\n", line[i], r
		}
	}' "$tmp/local.tsv" >"$out/precision_local.tsv"
{
echo "note: world 43 (default) with $edited edits: a 24 m raise at the centre of 1% of the chunks of" \
	"cx -40..56, cz -40..40 (each touches only its chunk); the same walk as above; precision:" \
	"the default client; local: terrain-client walk --local (libterrain makes every chunk no" \
	"edit reaches, the server answers GET /hashes of the square, then again after --revalidate or" \
	"when the square leaves it, and the tiles of edited chunks)"
echo "note: target (issue 29): local / precision <= 0.05x, with identical heights (tests/client/local_mode.sh" \
	"compares the maps of fetch and fetch --local byte for byte)"
} >>"$out/precision_local.tsv"
cat "$out/precision_local.tsv"
echo

# ---- tile sizes per LOD and precision ----
printf 'LOD\tsamples\tPNG16 bytes\t1cm zstd\t5cm\t10cm\t50cm\t1m\t1cm / PNG16\t10cm / PNG16\t1m / PNG16\n' \
	>"$tmp/size.tsv"
for lod in 0 1 2 3 4 5; do
	png=0
	declare -A z=()
	for c in 0 1 2 3 4 5 6 7; do
		"$client" export --server "$base" --seed 42 --lod "$lod" --cx0 "$c" --cz0 $((c - 3)) \
			--cx1 "$c" --cz1 $((c - 3)) -o "$tmp/ex" >/dev/null 2>&1
		png=$((png + $(stat -c %s "$tmp/ex.png")))
		for p in 1cm 5cm 10cm 50cm 1m; do
			n=$(curl -s -H 'Accept-Encoding: zstd' \
				"$base/v1/worlds/42/chunks/$lod/$c/$((c - 3))?precision=$p" | wc -c)
			z[$p]=$(( ${z[$p]:-0} + n ))
		done
	done
	awk -v l="$lod" -v png="$png" -v a="${z[1cm]}" -v b="${z[5cm]}" -v c="${z[10cm]}" \
		-v d="${z[50cm]}" -v e="${z[1m]}" 'BEGIN {
		s = 256 / 2 ^ l + 1
		printf "%d\t%d x %d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.3f\t%.3f\t%.3f\n", l, s, s,
		       png / 8, a / 8, b / 8, c / 8, d / 8, e / 8, a / png, c / png, e / png }' \
		>>"$tmp/size.tsv"
	unset z
done
{
echo "note: mean of 8 default chunks (c, c - 3), c = 0..7, seed 42, heights only; zstd: the" \
	"server's Content-Encoding body; PNG16: terrain-client export of the same chunk (libpng" \
	"default, 1 cm per unit, exact)"
} >>"$tmp/size.tsv"
cp "$tmp/size.tsv" "$out/precision_size.tsv"
cat "$out/precision_size.tsv"
