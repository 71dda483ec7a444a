#!/bin/bash
# world_flags.sh - flags that change floating point cannot slip into a build,
# and a binary built with them anyway refuses to serve.
#
# 1. `make CFLAGS=<flag>` (and OPT=-Ofast) stops before compiling anything,
#    naming the flag; the world's flags come after CFLAGS on compile lines.
# 2. Past the guard (WORLD_FLAGS_UNSAFE=1, CFLAGS="-ffp-contract=fast
#    -ffast-math": reassociation changes the tiles of gcc on any x86-64, FMA
#    contraction those of arm64 or -march with FMA), the binary's tiles
#    differ from $BUILD's, and `serve` exits 1 naming the tile and both
#    hashes (common/selfcheck.c). Should the flags change nothing on some
#    machine, the server must start instead.
# Tests the Makefile, so runs in the gcc suite only (skips under CC=clang
# and SAN=1, where it would repeat the same build).
. "$(dirname "$0")/../lib/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_ABS=$(cd "$BUILD" && pwd)

case "${CC:-cc}:${SAN:-}" in
	cc: | gcc:) ;;
	*) echo "skip: CC=${CC:-} SAN=${SAN:-}: this checks the Makefile, in the gcc suite"; exit 0 ;;
esac
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CFLAGS -u BUILD make -C "$ROOT" --no-print-directory "$@"; }

for flag in -ffp-contract=fast -ffp-contract=on -ffast-math -funsafe-math-optimizations \
	-fassociative-math -freciprocal-math -ffinite-math-only; do
	mk BUILD="$TMP/refused" CFLAGS="-g $flag" >"$TMP/refused.log" 2>&1
	check "CFLAGS=$flag is refused" eq "$?" 2
	check "  with a message naming it" has "$TMP/refused.log" "contain $flag, which change the generated world"
done
mk BUILD="$TMP/refused" OPT=-Ofast >"$TMP/refused.log" 2>&1
check "OPT=-Ofast is refused" has "$TMP/refused.log" "contain -Ofast"
check "nothing was built by a refused make" not test -e "$TMP/refused"

mk -n BUILD="$TMP/dry" CFLAGS=-DUSER_FLAG "$TMP/dry/common/noise.o" >"$TMP/dry.log" 2>&1
line=$(grep -- '-c common/noise.c' "$TMP/dry.log")
check "the world's flags come after CFLAGS on a compile line" \
	contains "$line" "-DUSER_FLAG -ffp-contract=off -fno-fast-math"

unsafe="-ffp-contract=fast -ffast-math"
# The world is common/'s code: only that is compiled again with the unsafe
# flags; the server's objects are $BUILD's (make test's builds are shared).
mkdir -p "$TMP/unsafe"
cp -a "$BUILD_ABS/server" "$BUILD_ABS/llhttp" "$BUILD_ABS/tools" "$TMP/unsafe/"
[ -d "$BUILD_ABS/gen" ] && cp -a "$BUILD_ABS/gen" "$TMP/unsafe/"
find "$TMP/unsafe" -name '*.d' -delete
rm -f "$TMP/unsafe/gen/builtin_presets.o"
mk -j2 BUILD="$TMP/unsafe" WORLD_FLAGS_UNSAFE=1 CFLAGS="$unsafe" "$TMP/unsafe/terrain-server" \
	>"$TMP/unsafe.log" 2>&1
check "  compiling the world's code again, not the server's (but its version)" \
	eq "$(grep '^  CC    .*/server/' "$TMP/unsafe.log" | grep -vc '/server/buildinfo\.o')" 0
check "WORLD_FLAGS_UNSAFE=1 builds with CFLAGS=\"$unsafe\"" test -x "$TMP/unsafe/terrain-server"
"$BUILD_ABS/terrain-server" generate --seed 0 --lod 0 --cx 0 --cz 0 -o "$TMP/good.bin"
"$TMP/unsafe/terrain-server" generate --seed 0 --lod 0 --cx 0 --cz 0 -o "$TMP/unsafe.bin"
timeout 60 "$TMP/unsafe/terrain-server" serve --bind 127.0.0.1 --port 0 \
	--data-dir "$TMP/data" >"$TMP/serve.log" 2>&1 &
serve_pid=$!
if ! cmp -s "$TMP/good.bin" "$TMP/unsafe.bin"; then
	echo "the unsafe build's tile default/0/0/0 differs from $BUILD's"
	wait "$serve_pid"
	check "serve refuses to start (exit 1)" eq "$?" 1
	check "  naming the tile" has "$TMP/serve.log" "self-check: tile default seed 0 lod 0 \(0, 0\)"
	check "  with the expected hash" has "$TMP/serve.log" "expected 473d0381e8c1c52f"
	check "  and the reason" has "$TMP/serve.log" "built with flags .* that change the world"
	check "  before listening" not has "$TMP/serve.log" "listening on"
else
	echo "note: \"$unsafe\" did not change tile default/0/0/0 with this compiler"
	wait_until 120 has "$TMP/serve.log" "listening on"
	check "serve starts (its self-check passes)" has "$TMP/serve.log" "listening on"
	kill -TERM "$serve_pid"; wait "$serve_pid"
fi
finish
