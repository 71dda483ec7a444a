#!/bin/bash
# bindings_go.sh - the Go binding (bindings/go, cgo) with Debian's golang-go
# against $BUILD's libterrain.so: every golden tile hash, every format
# version decoded and re-encoded, edits and hashes, one World shared by
# goroutines, and a real server on 127.0.0.1 agreeing with it on an edited
# world's hashes and tiles (fetched here with curl; bindings/go/terrain_test.go
# compares); then the example runs, and a module of a user's
# requires terrain.example/terrain through `go get` with a replace line
# and through a go.work. cgo finds the library with pkg-config (the build
# tree's terrain-uninstalled.pc). Offline: no module downloads (GOPROXY=off,
# no dependencies); the build cache is kept in $BUILD/go-cache, so only the
# first run compiles the standard library.
# run: once
. "$(dirname "$0")/../lib/lib.sh"

command -v go >/dev/null || { echo "skip: no go (scripts/deps.sh test installs golang-go)"; exit 0; }
ROOT=$PWD
export GOCACHE=$ROOT/$BUILD/go-cache GOPATH=$TMP/gopath GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
# the header and library through `#cgo pkg-config: terrain` (CGO_CFLAGS in
# the environment would make go rebuild the cgo parts of the standard
# library, tens of seconds)
make --no-print-directory -s BUILD="$BUILD" "$BUILD/lib/pkgconfig/terrain-uninstalled.pc"
export PKG_CONFIG_PATH=$ROOT/$BUILD/lib/pkgconfig
export LD_LIBRARY_PATH=$ROOT/$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
server_start
S=$TMP/server
mkdir -p "$S"
cat >"$S/batch.json" <<'JSON'
{"edits": [{"op": "lower", "x": 70, "z": 250, "radius": 30, "strength": 2},
 {"op": "raise", "x": 60, "z": 270, "radius": 12, "strength": 1.5, "falloff": "linear"}]}
JSON
curl -s -X POST -H 'Content-Type: application/json' --data-binary @"$S/batch.json" \
	"$BASE/v1/worlds/go/edits" >"$S/answer.json"
curl -s -o "$S/hashes.json" "$BASE/v1/worlds/go/hashes?cx0=0&cz0=0&cx1=0&cz1=1"
curl -s -o "$S/t1.tile" "$BASE/v1/worlds/go/chunks/0/0/0"
curl -s -o "$S/t2.tile" "$BASE/v1/worlds/go/chunks/0/0/1?layers=height,material"
curl -s -o "$S/t3.tile" "$BASE/v1/worlds/go/chunks/3/0/1?precision=50cm&format=1"
(cd bindings/go && TERRAIN_SERVER_DIR=$S timeout 500 go test -count=1 -v .) >"$TMP/test.log" 2>&1
rc=$?
cat "$TMP/test.log"
check "go test passes" test $rc = 0
check "... with no test skipped" not has "$TMP/test.log" '--- SKIP'
check "... the server's check among them" has "$TMP/test.log" '--- PASS: TestTheServerAgrees'
(cd bindings/go && timeout 300 go build -o "$TMP/example" ./example) >"$TMP/build.log" 2>&1
check "the example builds" test $? = 0
cat "$TMP/build.log"
timeout 60 "$TMP/example" >"$TMP/example.log" 2>&1
cat "$TMP/example.log"
check "... and prints what the Python example prints" \
	cmp -s "$TMP/example.log" <(cd bindings/python && TERRAIN_LIB=$ROOT/$BUILD/lib/libterrain.so.1 python3 example.py 2>&1)

# a user's module: go get through a replace line, then through a go.work
MOD=terrain.example/terrain
check "the module path is $MOD" has bindings/go/go.mod "^module $MOD\$"
mkdir -p "$TMP/app"
cat >"$TMP/app/main.go" <<'EOF'
package main

import (
	"fmt"

	"terrain.example/terrain"
)

func main() {
	w, err := terrain.Open("default", 42)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	t, err := w.Tile(terrain.Request{}, nil)
	if err != nil {
		panic(err)
	}
	var side int = t.Side // idiomatic ints: no conversion
	fmt.Printf("side %d, heights hash %016x, %.3f m\n", side, terrain.HeightsHash(t.Heights), t.Metres(side-1, side-1))
}
EOF
golden=$(sed -n 's/.*heights hash \([0-9a-f]\{16\}\).*/\1/p' "$TMP/example.log")  # default/42 (0, 0)
(cd "$TMP/app" && go mod init example.com/app && go mod edit -replace "$MOD=$ROOT/bindings/go" &&
	timeout 300 go get "$MOD" && timeout 300 go build -o app . && ./app) >"$TMP/app.log" 2>&1
cat "$TMP/app.log"
check "go get $MOD (replace line) builds and runs a user's module" has "$TMP/app.log" "^side 257, heights hash ${golden:-none}"
rm -f "$TMP/app/go.mod" "$TMP/app/go.sum" "$TMP/app/app"
(cd "$TMP/app" && export GOFLAGS= && go mod init example.com/app && go work init . "$ROOT/bindings/go" &&
	timeout 300 go build -o app . && ./app) >"$TMP/work.log" 2>&1
cat "$TMP/work.log"
check "... and through a go.work" has "$TMP/work.log" "^side 257, heights hash ${golden:-none}"
finish
