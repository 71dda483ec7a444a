#!/bin/bash
# run: once
# run: alone
# maps_browser.sh - the world in the web map libraries people use, from npm:
# MapLibre GL JS (a raster-dem source with hillshade and 3D terrain, from
# the server's TileJSON) and Leaflet (CRS.Simple over the same {z}/{x}/{y}
# tiles), each drawn from the live server in headless Chromium. Both
# screenshots are not blank; the elevations MapLibre reports
# (queryTerrainElevation) and the heights the browser decodes from the
# Terrarium tiles Leaflet loaded equal `terrain-client decode --heights`
# within 1/512 m; the page's own zoom-14 3D view reports itself loaded
# (the time is printed, with the server's share from its access log); no
# map request of the browser is answered 4xx/5xx (access log); every
# request beyond 127.0.0.0/8 is refused, as offline. The pages are
# clients/web/*.html; the test itself is tests/browser/maps.test.mjs.
# Saves $BUILD/maplibre.png, $BUILD/leaflet.png.
# Runs alone in make test's pool: software WebGL in Chromium needs a core
# to draw the 3D view within its 120 s.
#
# Needs Debian's chromium (installed with apt-get when missing and running as
# root), Node.js 20+ and npm, and the packages of tests/browser/package.json
# (installed into tests/browser/node_modules, outside git). When one of them
# cannot be had, prints "SKIP: <reason>" and exits 0.
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/lib.sh"
BROWSER_DIR=$HERE
. "$BROWSER_DIR/deps.sh"
CLIENT=$BUILD/terrain-client

trap stop_all EXIT

skip() {
	echo "SKIP: $*"
	[ "$FAILED" = 0 ] || { echo "$FAILED failed"; exit 1; }
	exit 0
}

[ -x "$SERVER_BIN" ] && [ -x "$CLIENT" ] || { echo "FAIL: build $SERVER_BIN and $CLIENT first"; exit 1; }
server_start --access-log "$TMP/access.log"
status=$(curl -s -o "$TMP/tilejson" -w '%{http_code}' "$BASE/v1/worlds/42/maps/terrarium")
[ "$status" = 200 ] || { echo "FAIL: GET the TileJSON answered $status"; exit 1; }
check "the TileJSON is served with CORS" has <(curl -s -D - -o /dev/null "$BASE/v1/worlds/42/maps/terrarium") \
	'^access-control-allow-origin: \*'

browser_deps
BASE=$BASE CLIENT=$CLIENT WORK=$TMP SHOTS=$BUILD ACCESS_LOG=$TMP/access.log timeout "$(scaled 900)" node "$BROWSER_DIR/maps.test.mjs"
rc=$?
[ $rc = 124 ] && echo "FAIL: the browser test timed out"
[ $rc = 0 ] || FAILED=$((FAILED + 1))
# every answer the pages got on the map routes, from the server's access log
map_errors() {
	node -e '
		const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
		const maps = lines.filter((l) => /\/maps\//.test(l.path) && /Chrome/.test(l.user_agent || ""));
		const bad = maps.filter((l) => l.status >= 400);
		console.log(`  ${maps.length} map requests from the browser, ${bad.length} answered 4xx/5xx`);
		for (const l of bad.slice(0, 20)) console.log(`    ${l.status} ${l.method} ${l.path}`);
		process.exit(maps.length > 0 && bad.length === 0 ? 0 : 1);' "$TMP/access.log"
}
check "no map request of the browser sessions was answered with an error (access log)" map_errors
check "the server stops cleanly (SIGTERM, exit 0; sanitizers quiet)" server_stop
finish
