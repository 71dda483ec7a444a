#!/bin/bash
# run: once
# wasm.sh - the core as WebAssembly (make wasm: $BUILD/terrain.wasm) against
# the native x86-64 build, in Node.js (tests/library/wasm/core.test.mjs): every
# golden tile of common/golden_tiles.inc (the hashes the native suites and
# the arm64 check under qemu hold too), the same with a build without
# simd128, tile bytes equal to `terrain-server generate`'s for every preset,
# LODs 0 to 8, the int32 corners, heights and materials; fingerprints equal
# the server's, JSON presets, precisions, edit records, and the wasm
# decoder's errors equal the JavaScript decoder's; local mode (openLocal,
# tests/library/wasm/local.test.mjs) against the real server. Then the same golden
# tiles in headless Chromium (tests/library/wasm/browser.mjs), which needs Debian's
# chromium and tests/browser's npm packages: SKIP without them.
#
# Builds what it needs (make wasm, and a second build without simd128 in
# $BUILD/wasm-nosimd); without clang's wasm32 target, wasi-libc or
# wasm-ld (scripts/deps.sh test installs them) it says SKIP.
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/lib.sh"
BROWSER_DIR=$HERE/../browser
. "$BROWSER_DIR/deps.sh"
ROOT=$(cd "$HERE/../.." && pwd)

skip() {
	echo "SKIP: $*"
	finish
	exit 0
}

node_ok 18 || skip "needs Node.js 18 or later ($(node --version 2>/dev/null || echo 'no node'))"
[ -f /usr/lib/wasm32-wasi/libc.a ] && command -v wasm-ld >/dev/null ||
	skip "no wasi-libc or wasm-ld (scripts/deps.sh test installs wasi-libc, lld, libclang-rt-14-dev-wasm32)"
# under a lock: tests/library/sameness.sh makes the same wasm build in the same pool
make_q() { flock "$BUILD/.wasm.lock" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" --no-print-directory -j2 "$@"; }
make_q BUILD="$BUILD" wasm >"$TMP/make.log" 2>&1 || { tail -n 30 "$TMP/make.log"; echo "FAIL: make wasm"; exit 1; }
make_q BUILD="$BUILD/wasm-nosimd" WASM_SIMD= CJSON_SRC="$BUILD/wasm/cjson" "$BUILD/wasm-nosimd/terrain.wasm" \
	>"$TMP/make2.log" 2>&1 || { tail -n 30 "$TMP/make2.log"; echo "FAIL: make the wasm build without simd128"; exit 1; }
WASM=$(cd "$BUILD" && pwd)/terrain.wasm
NOSIMD=$(cd "$BUILD/wasm-nosimd" && pwd)/terrain.wasm
check "terrain.wasm is WebAssembly" has <(file "$WASM" 2>/dev/null || od -An -c -N4 "$WASM") 'WebAssembly|\\0   a   s   m'

# ---- native references -------------------------------------------------------------
cp "$ROOT/common/golden_tiles.inc" "$TMP/golden.inc"
specs=("0 0 0" "1 2147483647 -2147483648" "2 -1 -1" "3 -2147483648 2147483647" "4 5 -7"
	"5 2147483647 2147483647" "6 -123456 654321" "7 9 9" "8 -2147483648 -2147483648")
: >"$TMP/keys.txt"
k=0
for gen in default alpine islands mesa canyons; do
	for spec in "${specs[@]}"; do
		set -- $spec
		layers=height
		[ $(( ($1 + ${#gen}) % 2 )) = 0 ] && layers=height,material
		seed=$(( $1 * 7919 + ${#gen} ))
		echo "$gen $seed $1 $2 $3 $layers" >>"$TMP/keys.txt"
		"$SERVER_BIN" generate --gen "$gen" --seed "$seed" --lod "$1" --cx "$2" --cz "$3" \
			--layers "$layers" -o "$TMP/native-$k.bin" || { echo "FAIL: terrain-server generate"; exit 1; }
		k=$((k + 1))
	done
done
echo "eroded 42 3 -1 -1 height,material" >>"$TMP/keys.txt"
"$SERVER_BIN" generate --gen eroded --seed 42 --lod 3 --cx -1 --cz -1 --layers height,material \
	-o "$TMP/native-$k.bin"
server_start --edit-rate 0 --edit-area 0
curl -sf "$BASE/v1/presets" >"$TMP/presets.json" || { echo "FAIL: GET /v1/presets"; exit 1; }

# ---- node --test (local.test.mjs uses the server too) ---------------------------------
BASE=$BASE WASM=$WASM WASM_NOSIMD=$NOSIMD WORK=$TMP timeout "$(scaled 300)" node --test --test-reporter=spec "$HERE/wasm/" 2>&1 |
	tee "$TMP/node-test.log"
rc=${PIPESTATUS[0]}
[ $rc = 124 ] && echo "FAIL: node --test timed out"
check "node --test tests/library/wasm/ passes" eq "$rc" 0
check "the server stops cleanly" server_stop

# ---- headless Chromium -----------------------------------------------------------------
browser_deps
WASM=$WASM WORK=$TMP timeout "$(scaled 240)" node "$HERE/wasm/browser.mjs"
rc=$?
[ $rc = 124 ] && echo "FAIL: the browser test timed out"
check "headless Chromium: the golden tiles through terrain.wasm and terrain.js" eq "$rc" 0
finish
