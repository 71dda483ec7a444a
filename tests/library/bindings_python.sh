#!/bin/bash
# bindings_python.sh - the Python binding (bindings/python/terrain,
# ctypes, standard library only) against $BUILD's libterrain.so: every
# golden tile hash, tiles and their decoding, edits and hashes, and a real
# server on 127.0.0.1 agreeing with it on an edited world's hashes and
# tiles (bindings/python/test_terrain.py); then the example runs. Then the
# package: `pip install` of bindings/python into a venv, offline (build
# isolation with setuptools and wheel from Debian's /usr/share/python-wheels,
# packages python3-venv, python3-setuptools-whl, python3-wheel-whl), the same
# tests from the installed package, the library found through its install
# prefix (pkg-config) with no TERRAIN_LIB, and the error naming both when
# it is nowhere.
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

# ---- the package ----
VPY=/usr/bin/python3 WHEELS=/usr/share/python-wheels
if ! "$VPY" -c 'import venv, ensurepip' 2>/dev/null || ! ls "$WHEELS"/setuptools-*.whl "$WHEELS"/wheel-*.whl >/dev/null 2>&1; then
	echo "skip: the package (scripts/deps.sh test installs python3-venv, python3-setuptools-whl, python3-wheel-whl)"
	finish
fi
cp -r bindings/python "$TMP/src"     # pip builds in the source folder: not in the tree
"$VPY" -m venv "$TMP/venv" >"$TMP/venv.log" 2>&1
(cd "$TMP" && timeout 300 "$TMP/venv/bin/pip" install --no-index --find-links "$WHEELS" "$TMP/src") \
	>"$TMP/pip.log" 2>&1
check "pip install ./bindings/python into a venv, offline" test $? = 0
tail -n 2 "$TMP/pip.log"
LIBVER=$(sed -n 's/^#define TERRAIN_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' common/terrain.h | paste -sd.)
check "... version $LIBVER, the C library's" has "$TMP/pip.log" "Successfully installed libterrain-$LIBVER"
mkdir "$TMP/t" && cp bindings/python/test_terrain.py bindings/python/golden.py "$TMP/t/"
(cd "$TMP/t" && "$TMP/venv/bin/python" -c 'import terrain; print(terrain.__file__)') >"$TMP/where" 2>&1
check "import terrain finds the installed package" has "$TMP/where" "^$TMP/venv/lib/python3[.0-9]*/site-packages/terrain/__init__.py"
check "... with its type marker (py.typed)" test -e "$(dirname "$(cat "$TMP/where")")/py.typed"
(export TERRAIN_GOLDEN=$PWD/common/golden_tiles.inc; cd "$TMP/t" && TERRAIN_BASE=$BASE \
	TERRAIN_TEST_WORLD=py-installed timeout 300 "$TMP/venv/bin/python" test_terrain.py) >"$TMP/inst.log" 2>&1
rc=$?
check "the tests pass from the installed package" test $rc = 0
if [ $rc = 0 ]; then tail -n 3 "$TMP/inst.log"; else cat "$TMP/inst.log"; fi
check "... with no test skipped" not has "$TMP/inst.log" 'skipped' 

# the library through its install prefix, then nowhere
make --no-print-directory -s BUILD="$BUILD" PREFIX="$TMP/prefix" install-lib >"$TMP/install.log" 2>&1
check "make install-lib PREFIX=\$TMP/prefix" test $? = 0
(cd "$TMP/t" && env -u TERRAIN_LIB PKG_CONFIG_PATH="$TMP/prefix/lib/pkgconfig" \
	"$TMP/venv/bin/python" -c 'import terrain; print("found", terrain.version())') >"$TMP/prefix.log" 2>&1
check "no TERRAIN_LIB: found in the prefix pkg-config names" has "$TMP/prefix.log" "^found $LIBVER"
(cd "$TMP/t" && env -u TERRAIN_LIB PKG_CONFIG_PATH=/nonexistent "$TMP/venv/bin/python" -c 'import terrain') \
	>"$TMP/none.log" 2>&1
cat "$TMP/none.log" | tail -n 1
check "nowhere: LibraryNotFound naming TERRAIN_LIB and the prefix" \
	has "$TMP/none.log" "terrain.LibraryNotFound: .*make install PREFIX=.*TERRAIN_LIB"
(cd "$TMP/t" && TERRAIN_LIB=$TMP/nothing.so "$TMP/venv/bin/python" -c 'import terrain') >"$TMP/bad.log" 2>&1
check "a TERRAIN_LIB that does not load is named" has "$TMP/bad.log" "TERRAIN_LIB=$TMP/nothing.so does not load"
finish
