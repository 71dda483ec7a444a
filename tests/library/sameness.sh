#!/bin/bash
# run: once
# sameness.sh - the proof of sameness (issue 29): 1,000 random chunks
# (every preset, LODs 0-8, precisions, both tile forms, materials, edited
# and unedited, near the origin and at the int32 corners) give the same
# bytes from the real server, the native library (libterrain.so, through
# tests/library/sameness/lib_tiles.c) and the WebAssembly build in Node.js
# (tests/library/sameness/sameness.mjs). SAMENESS_N draws another count. About a
# minute; SKIP without Node.js 18+ or the wasm toolchain.
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/lib.sh"
ROOT=$(cd "$HERE/../.." && pwd)
skip() { echo "SKIP: $*"; finish; exit 0; }

command -v node >/dev/null && node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)' ||
	skip "needs Node.js 18 or later"
[ -f /usr/lib/wasm32-wasi/libc.a ] && command -v wasm-ld >/dev/null || skip "no wasi-libc or wasm-ld"
# under a lock: tests/library/wasm.sh makes the same wasm build in the same pool
flock "$BUILD/.wasm.lock" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" --no-print-directory -j2 BUILD="$BUILD" wasm \
	"$BUILD/lib/libterrain.so" >"$TMP/make.log" 2>&1 || { tail -n 20 "$TMP/make.log"; echo "FAIL: make"; exit 1; }
LIBDIR=$(cd "$BUILD/lib" && pwd)
${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -I"$ROOT/common" "$HERE/sameness/lib_tiles.c" \
	-L"$LIBDIR" -lterrain -Wl,-rpath,"$LIBDIR" -o "$TMP/lib_tiles" || { echo "FAIL: build lib_tiles"; exit 1; }
check "lib_tiles links libterrain.so" has <(ldd "$TMP/lib_tiles") 'libterrain\.so\.1 => '
server_start --edit-rate 0 --edit-area 0
start=$SECONDS
BASE=$BASE WASM=$(cd "$BUILD" && pwd)/terrain.wasm LIB_TILES=$TMP/lib_tiles timeout 400 \
	node "$HERE/sameness/sameness.mjs"
check "the server, libterrain and terrain.wasm give the same bytes ($((SECONDS - start)) s)" eq "$?" 0
check "the server stops cleanly" server_stop
finish
