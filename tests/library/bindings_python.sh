#!/bin/bash
# bindings_python.sh - the Python binding (bindings/python/terrain.py,
# ctypes, standard library only) against $BUILD's libterrain.so: every
# golden tile hash, tiles and their decoding, edits and hashes, and a real
# server on 127.0.0.1 agreeing with it on an edited world's hashes and
# tiles (bindings/python/test_terrain.py); then the example runs.
# run: once
. "$(dirname "$0")/../lib/lib.sh"

PY=$(command -v python3) || { echo "skip: no python3 (scripts/deps.sh test installs it)"; exit 0; }
export TERRAIN_LIB=$PWD/$BUILD/lib/libterrain.so.1
server_start
TERRAIN_BASE=$BASE timeout 300 "$PY" bindings/python/test_terrain.py -v >"$TMP/py.log" 2>&1
rc=$?
cat "$TMP/py.log"
check "bindings/python/test_terrain.py passes" test $rc = 0
check "... with no test skipped" not has "$TMP/py.log" 'skipped'
(cd bindings/python && timeout 60 "$PY" example.py) >"$TMP/example.log" 2>&1
check "bindings/python/example.py runs" has "$TMP/example.log" '^after one edit: world hash [0-9a-f]{16}'
cat "$TMP/example.log"
finish
