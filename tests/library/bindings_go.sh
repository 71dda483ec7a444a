#!/bin/bash
# bindings_go.sh - the Go binding (bindings/go, cgo) with Debian's golang-go
# against $BUILD's libterrain.so: every golden tile hash, every format
# version decoded and re-encoded, edits and hashes, one World shared by
# goroutines, and a real server on 127.0.0.1 agreeing with it on an edited
# world's hashes and tiles (fetched here with curl; bindings/go/terrain_test.go
# compares); then the example
# runs. Offline: no module downloads (GOPROXY=off, no dependencies); the
# build cache is kept in $BUILD/go-cache, so only the first run compiles
# the standard library.
# run: once
. "$(dirname "$0")/../lib/lib.sh"

command -v go >/dev/null || { echo "skip: no go (scripts/deps.sh test installs golang-go)"; exit 0; }
ROOT=$PWD
export GOCACHE=$ROOT/$BUILD/go-cache GOPATH=$TMP/gopath GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
# the header and library through the C compiler's own search paths: cgo
# flags in the environment would make go rebuild the cgo parts of the
# standard library (tens of seconds)
export C_INCLUDE_PATH=$ROOT/common${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}
export LIBRARY_PATH=$ROOT/$BUILD/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
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
finish
