#!/bin/bash
# check-versions.sh [BUILD_DIR] - the tile format versions the words name
# are the ones the code writes and reads (tests/tiles/doc_versions.sh runs it in
# make test; issue 37, part 6).
#
# The code's side: TILE_VERSION, TILE_VERSION_LAYERS, the small tiles'
# TILE_VERSION_LZ21 and _LZ21_LAYERS from common/tile.h, the highest version
# tile_decode() reads (the bound of its version check in common/tile.c), the
# ?format= value of the current form (server/tiles/tiles.c), the library's
# TERRAIN_FORMAT_CURRENT (common/terrain.h) and the client's default far-ring
# precisions (VIEW_PRECISIONS, client-sample/view.h). Then what the build
# writes: BUILD_DIR/terrain-server generate, the version field of its
# header (u16 at offset 4, docs/tile-format.md), heights alone and with
# materials, LOD 0 and a small LOD-6 tile. The words' side: the phrases of
# terrain-server --help (its generate text), terrain-client --help,
# README.md, docs/tile-format.md, docs/library.md, the comments of
# server/service/routes.h, server/gen/tilegen.h and tiles_int.h, and the
# JavaScript decoder's error text. Each phrase is found in the file's text
# with its line breaks and comment stars taken out; a phrase that is gone
# fails too (reword it here along with the text).
#
# Prints one line per check ("ok: ..." or "FAIL: ...: says X, the code Y")
# and exits 1 when any failed, 2 when it could not run.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-build}}
cd "$ROOT" || exit 2
SERVER=$BUILD/terrain-server CLIENT=$BUILD/terrain-client
for b in "$SERVER" "$CLIENT"; do
	[ -x "$b" ] || { echo "check-versions: $b missing (make BUILD=$BUILD all)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

# define FILE NAME: the value of #define NAME in FILE
define() { sed -n "s/^#define $2[[:space:]]\{1,\}\([0-9]*\).*/\1/p" "$1" | head -n 1; }
# flat: stdin as one line: comment stars at line starts and runs of white
# space become one space, so a phrase may break across lines
flat() { sed 's/^[[:space:]]*\*\{1,\}[[:space:]]\{0,1\}//; s/^[[:space:]]*\/\/[[:space:]]*//' | tr -s ' \t\n' '   '; }
# found WHAT PERL_REGEX: the regex's groups, joined by spaces, in stdin flattened
found() { flat | perl -ne 'if (/'"$1"'/) { print join(" ", grep { defined } ($1, $2, $3, $4)); exit }'; }
# want WHAT GOT WANT: one check line
want() {
	if [ "$2" = "$3" ]; then
		echo "ok: $1: $3"
	else
		echo "FAIL: $1: says '${2:-(phrase not found)}', the code: '$3'"
		failed=$((failed + 1))
	fi
}
# phrase WHAT FILE|- PERL_REGEX WANT: the regex's groups in FILE (or stdin) are WANT
phrase() {
	local what=$1 file=$2 re=$3 expect=$4
	if [ "$file" = - ]; then
		want "$what" "$(found "$re")" "$expect"
	else
		want "$what" "$(found "$re" <"$file")" "$expect"
	fi
}

# ---- the code
v=$(define common/tile.h TILE_VERSION)
vl=$(define common/tile.h TILE_VERSION_LAYERS)
v1=$(define common/tile.h TILE_VERSION_LZ21)
v1l=$(define common/tile.h TILE_VERSION_LZ21_LAYERS)
bound=$(sed -n 's/.*version > \(TILE_VERSION[A-Z0-9_]*\).*/\1/p' common/tile.c | head -n 1)
max=$(define common/tile.h "$bound")
min_name=$(sed -n 's/.*version < \(TILE_VERSION[A-Z0-9_]*\).*/\1/p' common/tile.c | head -n 1)
min=$(define common/tile.h "$min_name")
fmt=$(sed -n "s/.*{ '\([0-9]\)', TILE_FORM_CURRENT }.*/\1/p" server/tiles/tiles.c | head -n 1)
lib_fmt=$(define common/terrain.h TERRAIN_FORMAT_CURRENT)
precisions=$(sed -n 's/^#define VIEW_PRECISIONS "\(.*\)".*/\1/p' client-sample/view.h)
for x in v vl v1 v1l max min fmt lib_fmt precisions; do
	[ -n "${!x}" ] || { echo "check-versions: could not read $x from the sources" >&2; exit 2; }
done
echo "code: writes $v ($vl with layers; $v1 and $v1l for small tiles), reads $min to $max," \
	"?format=$fmt is the current form; far-ring precisions $precisions"

# ---- what the build writes
written() { # ARGS...: the version field of what terrain-server generate ARGS writes
	"$SERVER" generate --seed 42 --cx 0 --cz 0 "$@" -o "$tmp/tile" 2>"$tmp/err" ||
		{ cat "$tmp/err" >&2; return 0; }
	od -An -tu2 -j4 -N2 --endian=little "$tmp/tile" | tr -d ' '
}
want "terrain-server generate --lod 0 writes" "$(written --lod 0)" "$v"
want "terrain-server generate --lod 0 --layers height,material writes" \
	"$(written --lod 0 --layers height,material)" "$vl"
want "terrain-server generate --lod 6 (a small tile) writes" "$(written --lod 6)" "$v1"
want "terrain-server generate --lod 6 --layers height,material writes" \
	"$(written --lod 6 --layers height,material)" "$v1l"
want "common/terrain.h TERRAIN_FORMAT_CURRENT is the tile format written" "$lib_fmt" "$v"
want "server/tiles/tiles.c: ?format= of the current form" "$fmt" "$v"

# ---- the words
"$SERVER" --help >"$tmp/server-help" 2>&1
"$CLIENT" --help >"$tmp/client-help" 2>&1
phrase "terrain-server --help, generate" - '"height" \(format version (\d+), (\d+) for the smallest tiles; "height,material" adds the material layer: (\d+), or (\d+)\)' \
	"$v $v1 $vl $v1l" <"$tmp/server-help"
phrase "terrain-client --help, fetch: far-ring precisions" - 'LOD n at the nth of --precisions \(([^;]*); the last' \
	"$precisions" <"$tmp/client-help"
phrase "terrain-client --help, walk: --precisions" - 'walk .*? (far rings at coarser precision as fetch \(--precisions)' \
	"far rings at coarser precision as fetch (--precisions" <"$tmp/client-help"
phrase "README.md" README.md 'Tiles are format version (\d+) \((\d+) with materials, (\d+) and (\d+) below LOD' \
	"$v $vl $v1 $v1l"
phrase "README.md, generate's example" README.md 'the material layer too \(tile format version (\d+)\)' "$vl"
phrase "docs/tile-format.md, title" docs/tile-format.md '^# Tile format, versions (\d+) to (\d+) ' "$min $max"
phrase "docs/tile-format.md, what the server sends" docs/tile-format.md 'Versions (\d+) and (\d+) are what the server sends' \
	"$v $vl"
phrase "docs/tile-format.md, the header's version field" docs/tile-format.md '\| version \| format version: (\d+) \(coded heights\), (\d+) \(coded heights \+ layers\)' \
	"$v $vl"
phrase "docs/library.md, the API table" docs/library.md 'versions (\d+) to (\d+): every version the server sends' "$min $max"
phrase "docs/library.md, terrain_decode()" docs/library.md '`terrain_decode\(\)` reads every version the server has sent \((\d+) to (\d+)\)' \
	"$min $max"
phrase "docs/library.md, TERRAIN_FORMAT_CURRENT" docs/library.md '`TERRAIN_FORMAT_CURRENT` = (\d+), versions (\d+) and (\d+)' \
	"$v $v $vl"
phrase "server/service/routes.h" server/service/routes.h 'gives a version-(\d+) tile \((\d+) for a small tile\); layers=height,material a version-(\d+) tile' \
	"$v $v1 $vl"
phrase "server/gen/tilegen.h" server/gen/tilegen.h 'format version (\d+), (\d+) with materials; (\d+) and (\d+) for small tiles' \
	"$v $vl $v1 $v1l"
phrase "server/tiles/tiles_int.h, ?format=" server/tiles/tiles_int.h 'absent or (\d+), the current form \(versions (\d+) and (\d+)\)' \
	"$fmt $v $vl"
phrase "clients/js/terrain.js, the JavaScript decoder" clients/js/terrain.js 'h\.version < (\d+) \|\| h\.version > (\d+)\) throw' \
	"$min $max"

if [ "$failed" != 0 ]; then
	echo "check-versions: $failed of the words above do not match the code: fix the words (or the code)"
	exit 1
fi
echo "check-versions: every version named matches the code"
