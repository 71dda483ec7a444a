#!/bin/bash
# tile_format.sh - ?format= against the real server on 127.0.0.1: the
# default tile is format version 7 (8 with the material layer, tANS),
# ?format=5 versions 5 and 6 (8 rANS states, for decoders written before
# version 7), ?format=3 versions 3 and 4 (2 rANS states, before version 5),
# ?format=1 the lz21 form of versions 1 and 2 that decoders written before
# version 3 read; all hold the same heights (terrain-client and the JS
# module), each has its own ETag and cache entry, ?format=7 is the default,
# anything else is 400 naming format; a bundle's members follow it; the
# streaming client asks for it with --format 1, 3 or 5 and checks every
# seam.
. "$(dirname "$0")/../lib/lib.sh"

CLIENT=$BUILD/terrain-client
T="timeout -k 5 120"
server_start --access-log "$TMP/access.log"
U="$BASE/v1/worlds/42/chunks/0/3/-2"

curl -s -o "$TMP/7.tile" "$U"
curl -s -D "$TMP/h1" -o "$TMP/1.tile" "$U?format=1"
curl -s -D "$TMP/h1b" -o /dev/null "$U?format=1"
curl -s -o "$TMP/7b.tile" "$U?format=7"
curl -s -D "$TMP/h5" -o "$TMP/5.tile" "$U?format=5"
curl -s -D "$TMP/h3" -o "$TMP/3.tile" "$U?format=3"
curl -s -o "$TMP/m1.tile" "$U?format=1&layers=height,material"
curl -s -o "$TMP/m3.tile" "$U?format=3&layers=height,material"
curl -s -o "$TMP/m5.tile" "$U?format=5&layers=height,material"
curl -s -o "$TMP/m7.tile" "$U?layers=height,material"
for f in 7 5 3 1 m1 m3 m5 m7; do "$CLIENT" decode "$TMP/$f.tile" >"$TMP/$f.hdr"; done
check "the default tile is version 7" has "$TMP/7.hdr" '^version: 7$'
check "?format=5 is version 5" has "$TMP/5.hdr" '^version: 5$'
check "?format=3 is version 3" has "$TMP/3.hdr" '^version: 3$'
check "?format=1 is version 1" has "$TMP/1.hdr" '^version: 1$'
check "?format=1 with the material layer is version 2" has "$TMP/m1.hdr" '^version: 2$'
check "?format=3 with the material layer is version 4" has "$TMP/m3.hdr" '^version: 4$'
check "?format=5 with the material layer is version 6" has "$TMP/m5.hdr" '^version: 6$'
check "the material layer alone is version 8" has "$TMP/m7.hdr" '^version: 8$'
check "?format=7 is the default tile, byte for byte" cmp -s "$TMP/7.tile" "$TMP/7b.tile"
for f in 7 5 3 1; do "$CLIENT" decode --heights "$TMP/$f.tile" >"$TMP/$f.txt"; done
check "versions 7 and 1 hold the same heights" cmp -s "$TMP/7.txt" "$TMP/1.txt"
check "versions 7 and 3 hold the same heights" cmp -s "$TMP/7.txt" "$TMP/3.txt"
check "versions 7 and 5 hold the same heights" cmp -s "$TMP/7.txt" "$TMP/5.txt"
check "the heights are a whole LOD-0 tile" eq "$(wc -l <"$TMP/1.txt")" 257
s1=$(stat -c %s "$TMP/1.tile"); s3=$(stat -c %s "$TMP/3.tile"); s5=$(stat -c %s "$TMP/5.tile")
s7=$(stat -c %s "$TMP/7.tile")
echo "identity bodies: version 1 $s1 B, version 3 $s3 B, version 5 $s5 B, version 7 $s7 B"
check "the coded form is smaller than the byte planes" test "$s7" -lt "$s1"
check "8 rANS states cost at most 0.5% over 2" test "$((s5 * 1000))" -le "$((s3 * 1005))"
check "tANS costs at most 2% over 8 rANS states" test "$((s7 * 100))" -le "$((s5 * 102))"

# the JS module decodes the four forms to the same heights
cat >"$TMP/js.mjs" <<JS
import { decodeTile } from '$(cd "$(dirname "$0")/../.." && pwd)/clients/js/terrain.js';
import { readFileSync } from 'fs';
const t = process.argv.slice(2).map((f) => decodeTile(new Uint8Array(readFileSync(f)), { metres: false }));
let same = t.every((x) => x.quanta.length === 257 * 257);
for (let k = 0; same && k < 257 * 257; k++) same = t.every((x) => x.quanta[k] === t[0].quanta[k]);
console.log(t.map((x) => x.header.version).join(' '), same ? 'same' : 'different');
JS
if command -v node >/dev/null; then
	node "$TMP/js.mjs" "$TMP/1.tile" "$TMP/3.tile" "$TMP/5.tile" "$TMP/7.tile" >"$TMP/js.txt" 2>&1
	cat "$TMP/js.txt"
	check "the JS module decodes versions 1, 3, 5 and 7 to the same heights" eq "$(cat "$TMP/js.txt")" "1 3 5 7 same"
fi

etag() { curl -s -D - -o /dev/null "$@" | sed -n 's/^ETag: *\(.*\)\r$/\1/ip'; }
e7=$(etag "$U"); e1=$(etag "$U?format=1"); e7b=$(etag "$U?format=7"); e3=$(etag "$U?format=3")
e5=$(etag "$U?format=5")
echo "etags: $e7 $e5 $e3 $e1 $e7b"
check "each form has its own ETag (1)" not eq "$e1" "$e7"
check "each form has its own ETag (3)" not eq "$e3" "$e7"
check "each form has its own ETag (5)" not eq "$e5" "$e7"
check "?format=7 has the default's ETag" eq "$e7b" "$e7"
check "a first ?format=1 request is a miss" has "$TMP/h1" '^X-Cache: miss'
check "a first ?format=3 request is a miss" has "$TMP/h3" '^X-Cache: miss'
check "a first ?format=5 request is a miss" has "$TMP/h5" '^X-Cache: miss'
check "a repeated ?format=1 request is a cache hit" has "$TMP/h1b" '^X-Cache: hit'
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e1" "$U?format=1")
check "If-None-Match with the version-1 ETag gives 304" eq "$code" 304
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e3" "$U?format=3")
check "If-None-Match with the version-3 ETag gives 304" eq "$code" 304
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e5" "$U?format=5")
check "If-None-Match with the version-5 ETag gives 304" eq "$code" 304
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e7" "$U?format=1")
check "the version-7 ETag does not revalidate the version-1 tile" eq "$code" 200
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e7" "$U?format=5")
check "the version-7 ETag does not revalidate the version-5 tile" eq "$code" 200
zs=$(curl -s --compressed -o "$TMP/1z.tile" -w '%{http_code}' "$U?format=1&precision=10cm")
check "?format=1 goes with ?precision= and zstd" eq "$zs" 200
"$CLIENT" decode "$TMP/1z.tile" >"$TMP/1z.hdr"
check "... a version-1 tile at 10 cm" has "$TMP/1z.hdr" '^quantum_m: 0\.1$'

for v in 2 4 6 8 0 01 v1 v7 "" lz21; do
	code=$(curl -s -o "$TMP/err" -w '%{http_code}' "$U?format=$v")
	check "format=$v is 400" eq "$code" 400
	check "format=$v's detail names format" has "$TMP/err" '"detail":"format: '
done

# a bundle's members follow ?format=
B="$BASE/v1/worlds/42/chunks/0?cx0=2&cz0=-2&cx1=4&cz1=-2"
curl -s -o "$TMP/b1.bundle" "$B&format=1"
"$CLIENT" decode --heights --tile 3,-2 "$TMP/b1.bundle" >"$TMP/b1.txt"
check "a ?format=1 bundle's member has the tile's heights" cmp -s "$TMP/b1.txt" "$TMP/1.txt"
curl -s -o "$TMP/b3.bundle" "$B&format=3"
"$CLIENT" decode --tile 3,-2 "$TMP/b3.bundle" >"$TMP/b3.hdr"
check "a ?format=3 bundle's member is version 3" has "$TMP/b3.hdr" '^version: 3$'
"$CLIENT" decode --heights --tile 3,-2 "$TMP/b3.bundle" >"$TMP/b3.txt"
check "a ?format=3 bundle's member has the tile's heights" cmp -s "$TMP/b3.txt" "$TMP/3.txt"
code=$(curl -s -o "$TMP/err" -w '%{http_code}' "$B&format=9")
check "a bundle with format=9 is 400" eq "$code" 400

# the streaming client
: >"$TMP/access.log"
check "walk --format 1 has 0 errors" $T "$CLIENT" walk --server "$BASE" --seed 10 \
	--path 0,0:400,0 --speed 20 --radius 768 --format 1 --quiet >"$TMP/walk.out" 2>&1
cat "$TMP/walk.out"
check "walk --format 1 reports 0 errors" has "$TMP/walk.out" ', 0 errors$'
check "walk --format 1 asks for format=1" grep -q 'format=1' "$TMP/access.log"
: >"$TMP/access.log"
check "walk --format 3 has 0 errors" $T "$CLIENT" walk --server "$BASE" --seed 10 \
	--path 0,0:400,0 --speed 20 --radius 768 --format 3 --quiet >"$TMP/walk3.out" 2>&1
cat "$TMP/walk3.out"
check "walk --format 3 reports 0 errors" has "$TMP/walk3.out" ', 0 errors$'
check "walk --format 3 asks for format=3" grep -q 'format=3' "$TMP/access.log"
check "walk --format 3 asks for nothing else" not grep -q 'format=1' "$TMP/access.log"
: >"$TMP/access.log"
check "walk --format 5 has 0 errors" $T "$CLIENT" walk --server "$BASE" --seed 10 \
	--path 0,0:400,0 --speed 20 --radius 768 --format 5 --quiet >"$TMP/walk5.out" 2>&1
check "walk --format 5 reports 0 errors" has "$TMP/walk5.out" ', 0 errors$'
check "walk --format 5 asks for format=5" grep -q 'format=5' "$TMP/access.log"
check "--format 2 is a usage error" not "$CLIENT" fetch --server "$BASE" --seed 9 \
	--radius 256 --format 2 -o "$TMP/x.png"
server_stop
finish
