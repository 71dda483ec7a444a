#!/bin/bash
# run: once
# js_client.sh - the JavaScript client module (clients/js/terrain.js) under
# Node's own test runner against the live server (tests/client/js/terrain.test.mjs:
# decoding equals `terrain-client decode --heights` on the same tiles of
# every format version (7 and 8 by default, 5, 3 and 1 by ?format=), fetch
# of tiles and bundles, text seeds, stitching, meshes, bad tiles and bundles
# refused, damaged version-7 and 8 streams refused as terrain-client
# refuses them), then the three.js example page (clients/web/three.html) in
# headless Chromium, offline (every request beyond 127.0.0.0/8 refused): a
# ring of tiles as one closed mesh, with no background inside the
# terrain's outline and the tiles' shared edges meeting within a pixel
# (tests/browser/three.test.mjs; saves $BUILD/three.png, three-lod3.png).
#
# The Node tests need Node.js 18+ (no npm packages). The page needs Debian's
# chromium, Node.js 20+, npm, the packages of tests/browser/package.json
# and clients/web/package.json (installed into their node_modules, outside
# git; the latter is what `make web` installs). What cannot be
# had is reported as "SKIP: <reason>"; the parts before it still count.
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/lib.sh"
BROWSER_DIR=$HERE/../browser
. "$BROWSER_DIR/deps.sh"
CLIENT=$BUILD/terrain-client

trap stop_all EXIT

skip() {
	echo "SKIP: $*"
	check "the server stops cleanly (SIGTERM, exit 0; sanitizers quiet)" server_stop
	finish
	exit 0
}

[ -x "$SERVER_BIN" ] && [ -x "$CLIENT" ] || { echo "FAIL: build $SERVER_BIN and $CLIENT first"; exit 1; }
node_ok 18 || { echo "SKIP: the Node.js tests need Node.js 18 or later ($(node --version 2>/dev/null || echo 'no node'))"; exit 0; }
server_start --edit-rate 0 --edit-area 0

# ---- the module as the server serves it --------------------------------------
check "GET /assets/terrain.js is the module, byte for byte" \
	cmp -s <(curl -s "$BASE/assets/terrain.js") "$HERE/../../clients/js/terrain.js"
check "GET /assets/terrain.js is text/javascript with CORS" \
	has <(curl -s -D - -o /dev/null "$BASE/assets/terrain.js" | tr -d '\r') '^access-control-allow-origin: \*'

# ---- reference files: tiles fetched by curl, decoded by terrain-client ---------
# an edited tile too (edit_seq in its header). Versions 7 and 8 (the
# default): v1b and edited (filter 2), rough (filter 3), v2b (materials);
# c5* the same as versions 5 and 6 (?format=5), c3* as 3 and 4
curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' \
	-d '{"edits":[{"op":"raise","x":100,"z":60,"radius":40,"strength":7}]}' "$BASE/v1/worlds/jsedit/edits" ||
	{ echo "FAIL: POST an edit"; exit 1; }
TILES="v1=/v1/worlds/42/chunks/2/0/0?gen=default
v1b=/v1/worlds/42/chunks/0/3/-2?gen=default
text=/v1/worlds/my-world/chunks/5/-1/1?gen=alpine
rough=/v1/worlds/42/chunks/0/2/2?gen=alpine
v2=/v1/worlds/42/chunks/8/7/7?gen=default&layers=height,material
v2b=/v1/worlds/9/chunks/1/-4/2?gen=mesa&layers=height,material
c5=/v1/worlds/42/chunks/0/3/-2?gen=default&format=5
c5rough=/v1/worlds/42/chunks/0/2/2?gen=alpine&format=5
c6=/v1/worlds/9/chunks/1/-4/2?gen=mesa&layers=height,material&format=5
c3=/v1/worlds/42/chunks/0/3/-2?gen=default&format=3
c3rough=/v1/worlds/42/chunks/0/2/2?gen=alpine&format=3
c4=/v1/worlds/9/chunks/1/-4/2?gen=mesa&layers=height,material&format=3
edited=/v1/worlds/jsedit/chunks/0/0/0?gen=default"
for t in $TILES; do
	name=${t%%=*} path=${t#*=}
	curl -sf --compressed -o "$TMP/tile-$name.bin" "$BASE$path" || { echo "FAIL: curl $path"; exit 1; }
	"$CLIENT" decode --heights "$TMP/tile-$name.bin" >"$TMP/tile-$name.heights" &&
		"$CLIENT" decode "$TMP/tile-$name.bin" >"$TMP/tile-$name.header" ||
		{ echo "FAIL: terrain-client decode $path"; exit 1; }
done
check "the edited reference tile has edits" has "$TMP/tile-edited.header" '^edit_seq: [1-9]'
# XXH3-64 reference values from libxxhash (optional)
${CC:-cc} -O1 -o "$TMP/xxh3_ref" "$BROWSER_DIR/xxh3_ref.c" -lxxhash 2>/dev/null &&
	"$TMP/xxh3_ref" --table 2100 >"$TMP/xxh3.txt"

# ---- node --test -----------------------------------------------------------------
BASE=$BASE WORK=$TMP CLIENT=$CLIENT TILES=$(echo $TILES) timeout "$(scaled 240)" node --test --test-reporter=spec "$HERE/js/" 2>&1 |
	tee "$TMP/node-test.log"
rc=${PIPESTATUS[0]}
[ $rc = 124 ] && echo "FAIL: node --test timed out"
check "node --test tests/client/js/ passes" eq "$rc" 0

# ---- the three.js example page ------------------------------------------------------
browser_deps
BASE=$BASE CLIENT=$CLIENT WORK=$TMP SHOTS=$BUILD timeout "$(scaled 600)" node "$BROWSER_DIR/three.test.mjs"
rc=$?
[ $rc = 124 ] && echo "FAIL: the browser test timed out"
[ $rc = 0 ] || FAILED=$((FAILED + 1))
check "the server stops cleanly (SIGTERM, exit 0; sanitizers quiet)" server_stop
finish
