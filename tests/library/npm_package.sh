#!/bin/bash
# run: once
# npm_package.sh - the JavaScript client as the npm package
# terrain-chunk-client (clients/js/package.json; docs/js-client.md,
# "Installation"), as a project gets it: make wasm, `npm pack clients/js`
# into a scratch folder (it must hold terrain.js, terrain.d.ts and this
# build's terrain.wasm, at the C library's version, and refuse to pack
# without terrain.wasm), `npm install --offline` of the tarball into a fresh
# project with an empty npm cache, then in that project
# (tests/library/npm_package/):
#   - installed.mjs: 'terrain-chunk-client' resolves into its node_modules,
#     loadWasm() finds terrain.wasm beside terrain.js (and through the
#     ./terrain.wasm export), and a tile generated equals terrain-server
#     generate's bytes, decoded by both decoders;
#   - the first example of docs/js-client.md, taken from the doc, runs in
#     Node.js against a real server (its address put in for
#     http://127.0.0.1:8080) and prints the grid and that the tile made
#     here is the server's;
#   - TypeScript 7 and 5 (the versions of tests/library/npm_package/package.json,
#     npm ci into $BUILD/npm-package-ts: needs the npm registry once, else
#     a skip: line), each: tsc --strict --noEmit takes usage.ts, a typed
#     use of every export (module nodenext and bundler), the declared
#     exports are terrain.js's exports one for one, every wrong/*.ts fails
#     with the error its first line expects (the types are not any), and
#     without terrain.d.ts the import fails with TS7016;
#   - the same example in headless Chromium, a plain page importing the
#     package through an import map (page.mjs; SKIP without Chromium and
#     tests/browser's npm packages).
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/lib.sh"
BROWSER_DIR=$HERE/../browser
. "$BROWSER_DIR/deps.sh"
ROOT=$(cd "$HERE/../.." && pwd)
PKG=$HERE/npm_package
# npm asks the registry only where this says so (npm ci of TypeScript)
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

skip() {
	echo "SKIP: $*"
	finish
	exit 0
}

node_ok 18 || skip "needs Node.js 18 or later ($(node --version 2>/dev/null || echo 'no node'))"
command -v npm >/dev/null || skip "needs npm (Debian's npm)"
[ -f /usr/lib/wasm32-wasi/libc.a ] && command -v wasm-ld >/dev/null ||
	skip "no wasi-libc or wasm-ld (scripts/deps.sh test installs wasi-libc, lld, libclang-rt-14-dev-wasm32)"
LIBVER=$(sed -n 's/^#define TERRAIN_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' common/terrain.h | paste -sd.)
NAME=terrain-chunk-client
TGZ=$TMP/pack/$NAME-$LIBVER.tgz

# ---- pack -----------------------------------------------------------------------------
# make wasm writes clients/js/terrain.wasm: pack under the lock that
# tests/library/wasm.sh and sameness.sh build it under
mkdir -p "$TMP/pack"
locked() { flock "$BUILD/.wasm.lock" "$@"; }
locked env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" --no-print-directory -j2 BUILD="$BUILD" wasm \
	>"$TMP/make.log" 2>&1 || { tail -n 30 "$TMP/make.log"; echo "FAIL: make wasm"; exit 1; }
locked npm pack "$ROOT/clients/js" --pack-destination "$TMP/pack" --cache "$TMP/npm-cache-pack" \
	>"$TMP/pack.log" 2>&1
check "npm pack clients/js" test $? = 0
check "... makes $NAME-$LIBVER.tgz: the C library's version (common/terrain.h)" test -f "$TGZ"
[ -f "$TGZ" ] || { cat "$TMP/pack.log"; finish; }
tar -tzf "$TGZ" | sort >"$TMP/files"
check "... holding package.json, terrain.d.ts, terrain.js and terrain.wasm, nothing else" \
	eq "$(tr '\n' ' ' <"$TMP/files")" "package/package.json package/terrain.d.ts package/terrain.js package/terrain.wasm "
mkdir "$TMP/unpacked" && tar -xzf "$TGZ" -C "$TMP/unpacked"
check "... terrain.wasm is this build's ($BUILD/terrain.wasm)" cmp -s "$TMP/unpacked/package/terrain.wasm" "$BUILD/terrain.wasm"
check "... terrain.js and terrain.d.ts are clients/js's" \
	eval 'cmp -s "$TMP/unpacked/package/terrain.js" clients/js/terrain.js && cmp -s "$TMP/unpacked/package/terrain.d.ts" clients/js/terrain.d.ts'

mkdir "$TMP/nowasm" && cp clients/js/package.json clients/js/terrain.js clients/js/terrain.d.ts "$TMP/nowasm/"
(cd "$TMP/nowasm" && npm pack --cache "$TMP/npm-cache-pack") >"$TMP/nowasm.log" 2>&1
check "without terrain.wasm, npm pack refuses, saying so" \
	eval '! ls "$TMP"/nowasm/*.tgz >/dev/null 2>&1 && has "$TMP/nowasm.log" "terrain.wasm is missing: run make wasm"'

# ---- install into a fresh project, offline ---------------------------------------------------
P=$TMP/project
mkdir "$P" && printf '{ "name": "npm-package-test-project", "private": true, "type": "module" }\n' >"$P/package.json"
(cd "$P" && timeout "$(scaled 300)" npm install --offline --no-audit --no-fund --cache "$TMP/npm-cache-empty" "$TGZ") \
	>"$TMP/install.log" 2>&1
check "npm install --offline ./$NAME-$LIBVER.tgz into a fresh project, empty cache" test $? = 0
I=$P/node_modules/$NAME
for f in terrain.js terrain.wasm terrain.d.ts; do
	check "... node_modules/$NAME/$f" test -s "$I/$f"
done
check "... its package.json: version $LIBVER, types and exports" node -e '
	const p = require(process.argv[1]), e = p.exports["."];
	process.exit(p.version === process.argv[2] && p.types === "./terrain.d.ts" && e.types === "./terrain.d.ts" &&
		e.import === "./terrain.js" && e.default === "./terrain.js" && p.exports["./terrain.wasm"] === "./terrain.wasm" ? 0 : 1)' \
	"$I/package.json" "$LIBVER"

# ---- Node.js: the installed module and terrain.wasm ------------------------------------------
KEY="alpine 7 1 -3 5 height,material"
set -- $KEY
"$SERVER_BIN" generate --gen "$1" --seed "$2" --lod "$3" --cx "$4" --cz "$5" --layers "$6" -o "$TMP/native.bin" ||
	{ echo "FAIL: terrain-server generate"; exit 1; }
cp "$PKG/installed.mjs" "$P/"
(cd "$P" && KEY=$KEY NATIVE=$TMP/native.bin timeout "$(scaled 120)" node installed.mjs) >"$TMP/installed.log" 2>&1
check "installed.mjs: loadWasm() true from the package, the tile equal to terrain-server generate's" test $? = 0
cat "$TMP/installed.log"
(cd "$P" && timeout "$(scaled 120)" node installed.mjs by-export) >"$TMP/by-export.log" 2>&1
check "installed.mjs by-export: loadWasm(the ./terrain.wasm export's URL)" test $? = 0
grep -v '^ok:' "$TMP/by-export.log"

# ---- the doc's first example, as written but for the server's address ----------------------
awk '/^```js$/ && !n { on = 1; n = 1; next } on && /^```$/ { exit } on' docs/js-client.md >"$TMP/example.doc.mjs"
check "docs/js-client.md's first example imports the package by name" \
	has "$TMP/example.doc.mjs" "^import \\{.*\\} from '$NAME';$"
check "... and names the server once, as 'http://127.0.0.1:8080'" eq "$(grep -c "'http://127.0.0.1:8080'" "$TMP/example.doc.mjs")" 1
server_start
sed "s|'http://127.0.0.1:8080'|'$BASE'|" "$TMP/example.doc.mjs" >"$P/example.mjs"
(cd "$P" && timeout "$(scaled 120)" node example.mjs) >"$TMP/example.out" 2>&1
check "node example.mjs runs" test $? = 0
cat "$TMP/example.out"
check "... 321 x 321 heights, 204800 triangles" has "$TMP/example.out" '^321 x 321 heights, 204800 triangles$'
check "... the tile made by terrain.wasm from the package is the server's" \
	has "$TMP/example.out" "^tile \\(0, 0\\) made here is the server's: true$"

# ---- TypeScript ----------------------------------------------------------------------------
# tsc from npm, once, into $BUILD (outside git) by npm ci from the lockfile:
# typescript (7, the native compiler) and typescript5 (npm:typescript@5.x,
# what most projects still have); TSCS their tsc
ts_deps() {
	local dir pkg want have
	dir=$(cd "$BUILD" && pwd)/npm-package-ts
	mkdir -p "$dir"
	exec 8>"$dir/.npm-install.lock"
	flock -w "$(scaled 600)" 8 || return 1
	installed() {
		for pkg in typescript typescript5; do
			want=$(node -p "require(process.argv[1]).dependencies.$pkg.replace(/.*@/, '')" "$PKG/package.json")
			have=$(node -p 'require(process.argv[1]).version' "$dir/node_modules/$pkg/package.json" 2>/dev/null)
			[ "$have" = "$want" ] || return 1
		done
		cmp -s "$PKG/package-lock.json" "$dir/package-lock.json"
	}
	if ! installed; then
		echo "installing typescript from npm into $dir/node_modules ($(node -p 'Object.values(require(process.argv[1]).dependencies).join(", ")' "$PKG/package.json"))..."
		cp "$PKG/package.json" "$PKG/package-lock.json" "$dir/"
		(cd "$dir" && timeout "$(scaled 300)" npm ci --no-audit --no-fund) >"$TMP/npm-ts.log" 2>&1 && installed ||
			{ rm -f "$dir/package-lock.json"; exec 8>&-; return 1; }
	fi
	exec 8>&-
	TSCS=("$dir/node_modules/typescript/bin/tsc" "$dir/node_modules/typescript5/bin/tsc")
}
# the module's exports at run time, and a file that fails unless the declarations name exactly those
(cd "$P" && node --input-type=module -e "console.log(Object.keys(await import('$NAME')).sort().join(' '))") >"$TMP/exports"
exports=$(cat "$TMP/exports")
check "terrain.js has 31 exports" eq "$(wc -w <"$TMP/exports")" 31
{
	echo "import * as T from '$NAME';"
	echo "type Runtime = '$(echo "$exports" | sed "s/ /' | '/g")';"
	echo "type Declared = keyof typeof T;"
	echo "const undeclared: [Exclude<Runtime, Declared>] extends [never] ? true : Exclude<Runtime, Declared> = true;"
	echo "const notExported: [Exclude<Declared, Runtime>] extends [never] ? true : Exclude<Declared, Runtime> = true;"
	echo "export { undeclared, notExported };"
} >"$P/exports.ts"
cp "$PKG/usage.ts" "$P/" && cp -r "$PKG/wrong" "$P/"
missing=
for e in $exports; do
	sed -n '/^import {/,/} from/p' "$P/usage.ts" | grep -qw "$e" || missing="$missing $e"
done
check "usage.ts imports every export" eq "$missing" ""
if ! ts_deps; then
	echo "skip: TypeScript: npm ci of typescript failed (is the npm registry reachable?): $(tail -n 3 "$TMP/npm-ts.log" 2>/dev/null | tr '\n' ' ')"
else
	for TSC in "${TSCS[@]}"; do
		tsc_q() { (cd "$P" && timeout "$(scaled 120)" node "$TSC" --strict --noEmit --target es2022 "$@"); }
		v=$(tsc_q --version)
		echo "-- tsc $v"
		tsc_q --module nodenext exports.ts >"$TMP/tsc-exports.log" 2>&1
		check "$v: terrain.d.ts declares exactly terrain.js's exports" test $? = 0
		cat "$TMP/tsc-exports.log"
		tsc_q --module nodenext usage.ts >"$TMP/tsc-usage.log" 2>&1
		check "$v: tsc --strict --noEmit --module nodenext usage.ts passes" test $? = 0
		cat "$TMP/tsc-usage.log"
		tsc_q --module preserve --moduleResolution bundler usage.ts >"$TMP/tsc-bundler.log" 2>&1
		check "$v: ... and with --moduleResolution bundler" test $? = 0
		cat "$TMP/tsc-bundler.log"
		for f in "$P"/wrong/*.ts; do
			w=wrong/$(basename "$f")
			code=$(sed -n '1s/^\/\/ expect \(TS[0-9]*\): .*/\1/p' "$f")
			tsc_q --module nodenext "$w" >"$TMP/tsc-wrong.log" 2>&1
			rc=$?
			check "$v: tsc refuses $w ($(sed -n '1s/^\/\/ expect TS[0-9]*: //p' "$f")): $code on line 3" \
				eval '[ $rc != 0 ] && [ -n "$code" ] && has "$TMP/tsc-wrong.log" "^${w//./\\.}\\(3,[0-9]+\\): error $code:"'
			[ $rc != 0 ] || echo "  tsc took it"
			grep -q "error $code" "$TMP/tsc-wrong.log" || cat "$TMP/tsc-wrong.log"
		done
		# what the package had before it carried its declarations
		mv "$I/terrain.d.ts" "$TMP/terrain.d.ts.away"
		tsc_q --module nodenext usage.ts >"$TMP/tsc-none.log" 2>&1
		check "$v: without terrain.d.ts, tsc --strict says TS7016 (no declaration file)" has "$TMP/tsc-none.log" 'error TS7016:'
		mv "$TMP/terrain.d.ts.away" "$I/terrain.d.ts"
	done
fi

# ---- the same example in a plain page ---------------------------------------------------------
browser_deps
PROJECT=$P EXAMPLE=$P/example.mjs LINES=$(cat "$TMP/example.out") timeout "$(scaled 240)" node "$PKG/page.mjs"
rc=$?
[ $rc = 124 ] && echo "FAIL: the browser test timed out"
check "headless Chromium: the example through an import map, terrain.wasm from the package" eq "$rc" 0
check "the server stops cleanly" server_stop
finish
