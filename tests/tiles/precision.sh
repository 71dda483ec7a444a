#!/bin/bash
# precision.sh - ?precision= against the real server on 127.0.0.1: a 10 cm
# and a 1 m tile decode with terrain-client to the canonical heights
# rounded half away from zero to 10 cm and 1 m, exactly, their headers
# carry the quantum; 1cm is the canonical tile (same ETag); unknown or finer
# values are 400 with a detail naming precision; each precision has its own
# ETag, a repeat is a cache hit and If-None-Match gives 304; a bundle's
# members at 10 cm are the single 10 cm tiles; objects ignore it. The
# streaming client asks for its far rings at coarser precision (LOD 0
# never), --exact turns that off, and both verify every seam with 0 errors.
. "$(dirname "$0")/../lib/lib.sh"

CLIENT=$BUILD/terrain-client
T="timeout -k 5 120"
server_start --access-log "$TMP/access.log"
U="$BASE/v1/worlds/42/chunks/2/3/-2"

curl -s -o "$TMP/c.tile" "$U"
curl -s -D "$TMP/h10" -o "$TMP/10.tile" "$U?precision=10cm"
curl -s -D "$TMP/h10b" -o /dev/null "$U?precision=10cm"
curl -s -o "$TMP/1m.tile" "$U?precision=1m"
"$CLIENT" decode --heights "$TMP/c.tile" >"$TMP/c.txt"
"$CLIENT" decode --heights "$TMP/10.tile" >"$TMP/10.txt"
"$CLIENT" decode --heights "$TMP/1m.tile" >"$TMP/1m.txt"
"$CLIENT" decode "$TMP/10.tile" >"$TMP/10.hdr"
"$CLIENT" decode "$TMP/1m.tile" >"$TMP/1m.hdr"
check "the 10 cm tile's header says quantum 0.1 m" has "$TMP/10.hdr" '^quantum_m: 0\.1$'
check "the 1 m tile's header says quantum 1 m" has "$TMP/1m.hdr" '^quantum_m: 1$'

# rounded FACTOR CANON COARSE: every sample of COARSE (metres) is the one of
# CANON (centimetres, 2 decimals) rounded half away from zero to FACTOR cm
rounded() {
	paste -d' ' "$2" "$3" | awk -v f="$1" '
	/^[-0-9. ]+$/ {
		n = NF / 2
		for (i = 1; i <= n; i++) {
			cm = sprintf("%.0f", $i * 100) + 0
			a = cm < 0 ? -cm : cm
			q = int((a + int(f / 2)) / f)
			if (cm < 0) q = -q
			got = sprintf("%.0f", $(i + n) * 100 / f) + 0
			if (got != q) { print "sample " NR "," i ": " $i " -> " $(i + n); bad++ }
			k++
		}
	}
	END { print k " samples compared"; exit bad > 0 || k < 1000 }'
}
check "10 cm heights = round(canonical / 10 cm) * 10 cm exactly" rounded 10 "$TMP/c.txt" "$TMP/10.txt"
check "1 m heights = round(canonical / 1 m) * 1 m exactly" rounded 100 "$TMP/c.txt" "$TMP/1m.txt"

# the JS module (clients/js/terrain.js) reads the 10 cm tile as it is
cat >"$TMP/js.mjs" <<JS
import { decodeTile } from '$(cd "$(dirname "$0")/../.." && pwd)/clients/js/terrain.js';
import { readFileSync } from 'fs';
const t = decodeTile(new Uint8Array(readFileSync(process.argv[2])));
const rows = [];
for (let j = 0; j < t.header.side; j++)
	rows.push(Array.from(t.heights.slice(j * t.header.side, (j + 1) * t.header.side),
			     (h) => h.toFixed(1)).join(' '));
console.log(t.header.quantumUm);
console.log(rows.join('\n'));
JS
node "$TMP/js.mjs" "$TMP/10.tile" >"$TMP/js.txt" 2>&1
check "the JS module decodes the 10 cm tile: quantum 100000 um" eq "$(head -1 "$TMP/js.txt")" 100000
check "the JS module's heights are terrain-client's" \
	rounded 10 "$TMP/c.txt" <(tail -n +2 "$TMP/js.txt")

etag() { curl -s -D - -o /dev/null "$@" | sed -n 's/^ETag: *\(.*\)\r$/\1/ip'; }
e_c=$(etag "$U"); e_1cm=$(etag "$U?precision=1cm"); e_10=$(etag "$U?precision=10cm")
e_5=$(etag "$U?precision=5cm"); e_50=$(etag "$U?precision=50cm"); e_1m=$(etag "$U?precision=1m")
echo "etags: $e_c $e_1cm $e_5 $e_10 $e_50 $e_1m"
check "1cm is the canonical tile (same ETag)" eq "$e_1cm" "$e_c"
n=$(printf '%s\n' "$e_c" "$e_5" "$e_10" "$e_50" "$e_1m" | sort -u | grep -c .)
check "each precision has its own ETag" eq "$n" 5
check "a first 10 cm request is a miss" has "$TMP/h10" '^X-Cache: miss'
check "a repeated 10 cm request is a cache hit" has "$TMP/h10b" '^X-Cache: hit'
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e_10" "$U?precision=10cm")
check "If-None-Match with the 10 cm ETag gives 304" eq "$code" 304
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e_c" "$U?precision=10cm")
check "the canonical ETag does not revalidate the 10 cm tile" eq "$code" 200

for v in 1mm 2cm 10CM "" 1m0 20cm; do
	code=$(curl -s -o "$TMP/err" -w '%{http_code}' "$U?precision=$v")
	check "precision=$v is 400" eq "$code" 400
	check "precision=$v's detail names precision" has "$TMP/err" '"detail":"precision: '
done

# a bundle at 10 cm: its members are the single 10 cm tiles
curl -s -o "$TMP/b.bundle" "$BASE/v1/worlds/42/chunks/2?cx0=2&cz0=-2&cx1=4&cz1=-2&precision=10cm"
"$CLIENT" decode --heights --tile 3,-2 "$TMP/b.bundle" >"$TMP/b.txt"
check "a bundle's member at 10 cm is the single 10 cm tile" cmp -s "$TMP/b.txt" "$TMP/10.txt"
code=$(curl -s -o "$TMP/err" -w '%{http_code}' "$BASE/v1/worlds/42/chunks/2?cx0=2&cz0=-2&cx1=4&cz1=-2&precision=3cm")
check "a bundle with precision=3cm is 400" eq "$code" 400
b_c=$(etag "$BASE/v1/worlds/42/chunks/2?cx0=2&cz0=-2&cx1=4&cz1=-2")
b_10=$(etag "$BASE/v1/worlds/42/chunks/2?cx0=2&cz0=-2&cx1=4&cz1=-2&precision=10cm")
check "a bundle's ETag differs per precision" not eq "$b_c" "$b_10"
o1=$(curl -s "$BASE/v1/worlds/42/objects/3/-2" | md5sum)
o2=$(curl -s "$BASE/v1/worlds/42/objects/3/-2?precision=1m" | md5sum)
check "objects ignore precision" eq "$o2" "$o1"

# ---- the streaming client ----
: >"$TMP/access.log"
check "fetch with far rings at coarser precision exits 0" $T "$CLIENT" fetch --server "$BASE" \
	--seed 9 --radius 1024 -o "$TMP/map.png" >"$TMP/fetch.out" 2>&1
cat "$TMP/fetch.out"
check "fetch checked seams" has "$TMP/fetch.out" '[1-9][0-9]* seams checked'
check "LOD 0 goes without precision" not grep -qE 'chunks/0/[^ ]*precision' "$TMP/access.log"
check "LOD 1 goes at 10 cm" grep -qE 'chunks/1/[^ ]*precision=10cm' "$TMP/access.log"
check "LOD 2 goes at 50 cm" grep -qE "chunks/2[/?][^ ]*precision=50cm" "$TMP/access.log"
: >"$TMP/access.log"
check "fetch --exact exits 0" $T "$CLIENT" fetch --server "$BASE" --seed 9 --radius 1024 \
	--exact -o "$TMP/map2.png" >"$TMP/fetch2.out" 2>&1
check "fetch --exact asks for no precision" not grep -q 'precision=' "$TMP/access.log"
check "walk with coarser far rings has 0 errors" $T "$CLIENT" walk --server "$BASE" --seed 10 \
	--path 0,0:600,0 --speed 20 --radius 1024 --revalidate 2 --quiet >"$TMP/walk.out" 2>&1
cat "$TMP/walk.out"
check "walk reports 0 errors" has "$TMP/walk.out" ', 0 errors$'
check "--precisions rejects an unknown name" not "$CLIENT" fetch --server "$BASE" --seed 9 \
	--radius 256 --precisions 1cm,3cm -o "$TMP/x.png"
server_stop
finish
