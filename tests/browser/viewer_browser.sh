#!/bin/bash
# run: once
# viewer_browser.sh - the map viewer (GET /) in headless Chromium against the
# real server: the map draws and is not blank, the page's JavaScript tile
# decoder gives the same heights as `terrain-client decode --heights` for the
# same tiles (heights only, and with the material layer), the material ids
# the page colours with equal those of the same tile fetched with curl, the
# map shows the materials' colours and the colour toggle switches to the
# height ramp and back, its XXH3-64 equals libxxhash's, corrupt tiles are
# rejected, pan and zoom work, and (when the server has the edit endpoint)
# an edit made with the page's brush changes the terrain. Saves
# $BUILD/viewer.png.
#
# Needs Debian's chromium (installed with apt-get when missing and running as
# root), Node.js 20+ and npm, and playwright-core from npm (installed into
# tests/browser/node_modules). When one of them cannot be had, prints
# "SKIP: <reason>" and exits 0. The test itself is tests/browser/viewer.test.mjs.
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/lib.sh"
BROWSER_DIR=$HERE
CLIENT=$BUILD/terrain-client

trap stop_all EXIT

# Skip the browser part; the checks made before it still count.
skip() {
	echo "SKIP: $*"
	[ "$FAILED" = 0 ] || { echo "$FAILED failed"; exit 1; }
	exit 0
}

[ -x "$SERVER_BIN" ] && [ -x "$CLIENT" ] || { echo "FAIL: build $SERVER_BIN and $CLIENT first"; exit 1; }

# ---- the server --------------------------------------------------------------
server_start --data-dir "$TMP/data"
status=$(curl -s -o "$TMP/index.html" -w '%{http_code}' "$BASE/")
if [ "$status" = 404 ]; then
	skip "GET / answers 404: this server does not serve the viewer yet (server/service/static.c is not wired into routes.c)"
fi
[ "$status" = 200 ] || { echo "FAIL: GET / answered $status"; exit 1; }

# Do the edit and event endpoints exist yet? (OPTIONS on a known route: 204)
probe() { curl -s -o /dev/null -w '%{http_code}' -X OPTIONS "$BASE$1"; }
EDITS=0 EVENTS=0
[ "$(probe /v1/worlds/42/edits)" = 204 ] && EDITS=1
[ "$(probe /v1/worlds/42/events)" = 204 ] && EVENTS=1
echo "edit endpoint: $([ $EDITS = 1 ] && echo present || echo absent); event stream: $([ $EVENTS = 1 ] && echo present || echo absent)"

# XXH3-64 reference values from libxxhash: for the assets' ETags here, and for
# the page's JavaScript XXH3 (lengths 0..2100) below
XXH3_REF=
if ${CC:-cc} -O1 -o "$TMP/xxh3_ref" "$BROWSER_DIR/xxh3_ref.c" -lxxhash 2>"$TMP/cc.log"; then
	XXH3_REF=$TMP/xxh3_ref
	"$XXH3_REF" --table 2100 >"$TMP/xxh3.txt"
else
	echo "note: cannot build the XXH3 reference ($(head -n 1 "$TMP/cc.log")); ETags and the JS hash are checked against tiles only"
fi

# ---- the viewer's files, as served (server/service/static.c) ---------------------------
hdr() { curl -s -D - -o /dev/null "$@" | tr -d '\r'; }
check "GET /assets/app.js is text/javascript" has <(hdr "$BASE/assets/app.js") '^content-type: text/javascript'
check "GET /assets/style.css is text/css" has <(hdr "$BASE/assets/style.css") '^content-type: text/css'
etag=$(hdr "$BASE/assets/app.js" | sed -n 's/^ETag: //ip')
check "assets have a strong ETag" contains "$etag" '"'
[ -n "$XXH3_REF" ] &&
	check "the ETag is XXH3-64 of the file" eq "$etag" "\"$("$XXH3_REF" "$HERE/../../server/assets/app.js")\""
check "If-None-Match gives 304" eq "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$BASE/assets/app.js")" 304
check "HEAD / gives the length of GET /" has <(hdr -I "$BASE/") "^content-length: $(wc -c <"$TMP/index.html")\$"
check "the page has a same-origin Content-Security-Policy" has <(hdr "$BASE/") "^content-security-policy: default-src 'none'"
check "an unknown asset is 404 JSON" has <(curl -s "$BASE/assets/nope.js") '"error":"not_found"'
check "no directory listing or traversal" eq "$(curl -s -o /dev/null -w '%{http_code}' --path-as-is "$BASE/assets/../Makefile")" 404
check "POST / is 405" eq "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$BASE/")" 405

# ---- Chromium, Node.js, playwright-core -------------------------------------
if [ ! -x /usr/bin/chromium ]; then
	[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
		skip "no /usr/bin/chromium, and not root with apt-get to install it (apt-get install chromium)"
	echo "installing Debian's chromium (once)..."
	export DEBIAN_FRONTEND=noninteractive
	if ! timeout 600 apt-get install -y -qq chromium >"$TMP/apt.log" 2>&1; then
		timeout 300 apt-get update -qq >>"$TMP/apt.log" 2>&1
		timeout 600 apt-get install -y -qq chromium >>"$TMP/apt.log" 2>&1 ||
			skip "apt-get install chromium failed: $(tail -n 2 "$TMP/apt.log" | tr '\n' ' ')"
	fi
	[ -x /usr/bin/chromium ] || skip "chromium installed but /usr/bin/chromium is missing"
fi
command -v node >/dev/null && command -v npm >/dev/null || skip "Node.js and npm are not installed"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$node_major" -ge 20 ] 2>/dev/null || skip "playwright-core needs Node.js 20 or later, this is $(node --version)"
want=$(node -p 'require(process.argv[1]).dependencies["playwright-core"]' "$BROWSER_DIR/package.json")
have=$(node -p 'require(process.argv[1]).version' "$BROWSER_DIR/node_modules/playwright-core/package.json" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
	echo "installing playwright-core $want from npm into tests/browser/node_modules..."
	(cd "$BROWSER_DIR" && timeout 300 npm install --no-audit --no-fund) >"$TMP/npm.log" 2>&1 ||
		skip "npm install playwright-core failed: $(tail -n 3 "$TMP/npm.log" | tr '\n' ' ')"
fi

# ---- reference files: tiles fetched by curl, decoded by terrain-client ----------
# each tile twice: heights only (version 7) and with the material layer
# (version 8, -v2 files), as the page asks for it
TILES="2/0/0 0/3/-2 5/-1/1 8/7/7"
for t in $TILES; do
	for layers in "" "&layers=height,material"; do
		f=$TMP/tile-${t//\//_}${layers:+-v2}
		curl -sf --compressed -o "$f.bin" "$BASE/v1/worlds/42/chunks/$t?gen=default$layers" ||
			{ echo "FAIL: curl tile $t$layers"; exit 1; }
		"$CLIENT" decode --heights "$f.bin" >"$f.heights" && "$CLIENT" decode "$f.bin" >"$f.header" ||
			{ echo "FAIL: terrain-client decode $t$layers"; exit 1; }
	done
done
# a version 2 tile (the old form: heights as byte planes and a material
# layer) made by the reference encoder
if ${CC:-cc} -std=c11 -O1 -Icommon -o "$TMP/mkv2" "$BROWSER_DIR/mkv2.c" "$BUILD/libcommon.a" -lxxhash -lm 2>"$TMP/cc2.log" &&
	"$TMP/mkv2" "$TMP/tile-5_-1_1.bin" "$TMP/tile-v2.bin"; then
	"$CLIENT" decode --heights "$TMP/tile-v2.bin" >"$TMP/tile-v2.heights" || rm -f "$TMP/tile-v2.bin"
else
	echo "note: cannot build mkv2 ($(head -n 1 "$TMP/cc2.log")); format version 2 not tested"
fi

# ---- the browser test ------------------------------------------------------------
BASE=$BASE WORK=$TMP TILES=$TILES EDITS=$EDITS EVENTS=$EVENTS CLIENT=$CLIENT \
	SCREENSHOT=$BUILD/viewer.png \
	timeout "$(scaled 450)" node "$BROWSER_DIR/viewer.test.mjs"
rc=$?
[ $rc = 124 ] && echo "FAIL: the browser test timed out"
[ $rc = 0 ] || FAILED=$((FAILED + 1))
check "the server stops cleanly (SIGTERM, exit 0; sanitizers quiet)" server_stop
finish
