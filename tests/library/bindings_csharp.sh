#!/bin/bash
# bindings_csharp.sh - the C# binding (bindings/csharp/Terrain.cs, P/Invoke)
# on Debian's Mono against $BUILD's libterrain.so: every golden tile hash,
# every format version decoded and re-encoded, edits and their hashes, and
# a real server on 127.0.0.1 agreeing with it on an edited world's hashes
# and tiles (bindings/csharp/TestTerrain.cs); then the example runs. Mono
# comes from scripts/deps.sh test (mono-mcs, mono-runtime).
# run: once
. "$(dirname "$0")/../lib/lib.sh"

if ! command -v mcs >/dev/null || ! command -v mono >/dev/null; then
	echo "skip: no mcs/mono (scripts/deps.sh test installs mono-mcs and mono-runtime)"
	exit 0
fi
export LD_LIBRARY_PATH=$PWD/$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
C=bindings/csharp
mcs -nologo -warnaserror -out:"$TMP/test.exe" $C/Terrain.cs $C/TestTerrain.cs >"$TMP/mcs.log" 2>&1
check "TestTerrain.cs compiles (mcs -warnaserror)" test $? = 0
mcs -nologo -warnaserror -out:"$TMP/example.exe" $C/Terrain.cs $C/Example.cs >>"$TMP/mcs.log" 2>&1
check "Example.cs compiles" test $? = 0
cat "$TMP/mcs.log"
server_start
timeout 300 mono "$TMP/test.exe" common/golden_tiles.inc "$BASE" >"$TMP/test.log" 2>&1
rc=$?
cat "$TMP/test.log"
check "TestTerrain passes" test $rc = 0
check "... including the server's checks" has "$TMP/test.log" "^ok: tile .* is the server's"
timeout 60 mono "$TMP/example.exe" >"$TMP/example.log" 2>&1
check "Example runs" has "$TMP/example.log" '^after one edit: world hash [0-9a-f]{16}'
cat "$TMP/example.log"
check "... and prints what the Python example prints" \
	cmp -s "$TMP/example.log" <(cd bindings/python && TERRAIN_LIB=$PWD/../../$BUILD/lib/libterrain.so.1 python3 example.py 2>&1)
finish
