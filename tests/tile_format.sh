#!/bin/bash
# tile_format.sh - ?format= against the real server on 127.0.0.1: the
# default tile is format version 3 (4 with the material layer), ?format=1
# the lz21 form of versions 1 and 2 that decoders written before version 3
# read; both hold the same heights (terrain-client and the JS module), each
# has its own ETag and cache entry, ?format=3 is the default, anything else
# is 400 naming format; a bundle's members follow it; the streaming client
# asks for it with --format 1 and checks every seam.
. "$(dirname "$0")/lib.sh"

CLIENT=$BUILD/terrain-client
T="timeout -k 5 120"
server_start --access-log "$TMP/access.log"
U="$BASE/v1/worlds/42/chunks/0/3/-2"

curl -s -o "$TMP/3.tile" "$U"
curl -s -D "$TMP/h1" -o "$TMP/1.tile" "$U?format=1"
curl -s -D "$TMP/h1b" -o /dev/null "$U?format=1"
curl -s -o "$TMP/3b.tile" "$U?format=3"
curl -s -o "$TMP/m1.tile" "$U?format=1&layers=height,material"
curl -s -o "$TMP/m3.tile" "$U?layers=height,material"
for f in 3 1 m1 m3; do "$CLIENT" decode "$TMP/$f.tile" >"$TMP/$f.hdr"; done
check "the default tile is version 3" has "$TMP/3.hdr" '^version: 3$'
check "?format=1 is version 1" has "$TMP/1.hdr" '^version: 1$'
check "?format=1 with the material layer is version 2" has "$TMP/m1.hdr" '^version: 2$'
check "the material layer alone is version 4" has "$TMP/m3.hdr" '^version: 4$'
check "?format=3 is the default tile, byte for byte" cmp -s "$TMP/3.tile" "$TMP/3b.tile"
"$CLIENT" decode --heights "$TMP/3.tile" >"$TMP/3.txt"
"$CLIENT" decode --heights "$TMP/1.tile" >"$TMP/1.txt"
check "both forms hold the same heights" cmp -s "$TMP/3.txt" "$TMP/1.txt"
check "the heights are a whole LOD-0 tile" eq "$(wc -l <"$TMP/1.txt")" 257
s1=$(stat -c %s "$TMP/1.tile"); s3=$(stat -c %s "$TMP/3.tile")
echo "identity bodies: version 1 $s1 B, version 3 $s3 B"
check "the coded form is smaller than the byte planes" test "$s3" -lt "$s1"

# the JS module decodes both forms to the same heights
cat >"$TMP/js.mjs" <<JS
import { decodeTile } from '$(cd "$(dirname "$0")/.." && pwd)/clients/js/terrain.js';
import { readFileSync } from 'fs';
const a = decodeTile(new Uint8Array(readFileSync(process.argv[2])), { metres: false });
const b = decodeTile(new Uint8Array(readFileSync(process.argv[3])), { metres: false });
let same = a.quanta.length === b.quanta.length && a.quanta.length === 257 * 257;
for (let k = 0; same && k < a.quanta.length; k++) same = a.quanta[k] === b.quanta[k];
console.log(a.header.version, b.header.version, same ? 'same' : 'different');
JS
if command -v node >/dev/null; then
	node "$TMP/js.mjs" "$TMP/1.tile" "$TMP/3.tile" >"$TMP/js.txt" 2>&1
	cat "$TMP/js.txt"
	check "the JS module decodes versions 1 and 3 to the same heights" eq "$(cat "$TMP/js.txt")" "1 3 same"
fi

etag() { curl -s -D - -o /dev/null "$@" | sed -n 's/^ETag: *\(.*\)\r$/\1/ip'; }
e3=$(etag "$U"); e1=$(etag "$U?format=1"); e3b=$(etag "$U?format=3")
echo "etags: $e3 $e1 $e3b"
check "each form has its own ETag" not eq "$e1" "$e3"
check "?format=3 has the default's ETag" eq "$e3b" "$e3"
check "a first ?format=1 request is a miss" has "$TMP/h1" '^X-Cache: miss'
check "a repeated ?format=1 request is a cache hit" has "$TMP/h1b" '^X-Cache: hit'
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e1" "$U?format=1")
check "If-None-Match with the version-1 ETag gives 304" eq "$code" 304
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $e3" "$U?format=1")
check "the version-3 ETag does not revalidate the version-1 tile" eq "$code" 200
zs=$(curl -s --compressed -o "$TMP/1z.tile" -w '%{http_code}' "$U?format=1&precision=10cm")
check "?format=1 goes with ?precision= and zstd" eq "$zs" 200
"$CLIENT" decode "$TMP/1z.tile" >"$TMP/1z.hdr"
check "... a version-1 tile at 10 cm" has "$TMP/1z.hdr" '^quantum_m: 0\.1$'

for v in 2 4 0 01 v1 "" lz21; do
	code=$(curl -s -o "$TMP/err" -w '%{http_code}' "$U?format=$v")
	check "format=$v is 400" eq "$code" 400
	check "format=$v's detail names format" has "$TMP/err" '"detail":"format: '
done

# a bundle's members follow ?format=
B="$BASE/v1/worlds/42/chunks/0?cx0=2&cz0=-2&cx1=4&cz1=-2"
curl -s -o "$TMP/b1.bundle" "$B&format=1"
"$CLIENT" decode --heights --tile 3,-2 "$TMP/b1.bundle" >"$TMP/b1.txt"
check "a ?format=1 bundle's member has the tile's heights" cmp -s "$TMP/b1.txt" "$TMP/1.txt"
code=$(curl -s -o "$TMP/err" -w '%{http_code}' "$B&format=9")
check "a bundle with format=9 is 400" eq "$code" 400

# the streaming client
: >"$TMP/access.log"
check "walk --format 1 has 0 errors" $T "$CLIENT" walk --server "$BASE" --seed 10 \
	--path 0,0:400,0 --speed 20 --radius 768 --format 1 --quiet >"$TMP/walk.out" 2>&1
cat "$TMP/walk.out"
check "walk --format 1 reports 0 errors" has "$TMP/walk.out" ', 0 errors$'
check "walk --format 1 asks for format=1" grep -q 'format=1' "$TMP/access.log"
check "--format 2 is a usage error" not "$CLIENT" fetch --server "$BASE" --seed 9 \
	--radius 256 --format 2 -o "$TMP/x.png"
server_stop
finish
