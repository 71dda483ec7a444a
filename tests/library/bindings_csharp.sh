#!/bin/bash
# bindings_csharp.sh - the C# binding (bindings/csharp/Terrain, P/Invoke)
# on Debian's Mono against $BUILD's libterrain.so: built as Terrain.dll
# (what Terrain.csproj makes) beside Terrain.dll.config, then every golden
# tile hash, every format version decoded and re-encoded, edits and their
# hashes, and a real server on 127.0.0.1 agreeing with it on an edited
# world's hashes and tiles (bindings/csharp/Tests); then the example runs.
# The library folder holds libterrain.so.1 alone (a runtime-only install):
# DllImport("terrain") reaches it through the config's map, and without
# the config it is not found. The project files are checked for what
# `dotnet` would read (no dotnet here). Mono comes from scripts/deps.sh
# test (mono-mcs, mono-runtime).
# run: once
. "$(dirname "$0")/../lib/lib.sh"

if ! command -v mcs >/dev/null || ! command -v mono >/dev/null; then
	echo "skip: no mcs/mono (scripts/deps.sh test installs mono-mcs and mono-runtime)"
	exit 0
fi
mkdir -p "$TMP/native" "$TMP/bin"
cp -L "$BUILD/lib/libterrain.so.1" "$TMP/native/"   # the versioned name alone
export LD_LIBRARY_PATH=$TMP/native${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
C=bindings/csharp
mcs -nologo -warnaserror -target:library -out:"$TMP/bin/Terrain.dll" $C/Terrain/*.cs >"$TMP/mcs.log" 2>&1
check "Terrain.dll compiles (mcs -warnaserror)" test $? = 0
cp $C/Terrain/Terrain.dll.config "$TMP/bin/"
mcs -nologo -warnaserror -r:"$TMP/bin/Terrain.dll" -out:"$TMP/bin/test.exe" $C/Tests/*.cs >>"$TMP/mcs.log" 2>&1
check "the tests compile against it" test $? = 0
mcs -nologo -warnaserror -r:"$TMP/bin/Terrain.dll" -out:"$TMP/bin/example.exe" $C/Example/*.cs >>"$TMP/mcs.log" 2>&1
check "the example compiles against it" test $? = 0
cat "$TMP/mcs.log"

# the project files: what dotnet build would read
LIBVER=$(sed -n 's/^#define TERRAIN_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' common/terrain.h | paste -sd.)
python3 - "$C" "$LIBVER" >"$TMP/proj.log" 2>&1 <<'EOF'
import glob, os, sys
import xml.etree.ElementTree as ET
c, ver = sys.argv[1], sys.argv[2]
for p in sorted(glob.glob(c + "/*/*.csproj")):
    root = ET.parse(p).getroot()
    assert root.tag == "Project" and root.get("Sdk") == "Microsoft.NET.Sdk", p
    # an SDK project compiles every .cs of its folder: one project's sources a folder
    print("ok", p, sorted(os.path.basename(f) for f in glob.glob(os.path.dirname(p) + "/*.cs")))
t = ET.parse(c + "/Terrain/Terrain.csproj").getroot()
assert t.findtext("PropertyGroup/Version") == ver, t.findtext("PropertyGroup/Version")
assert "netstandard2.0" in t.findtext("PropertyGroup/TargetFrameworks")
for ref in ("Example", "Tests"):
    r = ET.parse(f"{c}/{ref}/{ref}.csproj").getroot().find("ItemGroup/ProjectReference")
    assert r.get("Include") == "../Terrain/Terrain.csproj", ref
m = ET.parse(c + "/Terrain/Terrain.dll.config").getroot().findall("dllmap")
assert any(d.get("dll") == "terrain" and d.get("os") == "linux" and d.get("target") == "libterrain.so.1" for d in m)
print("project files ok")
EOF
check "Terrain.csproj: SDK-style, version $LIBVER, netstandard2.0; Example and Tests reference it" \
	has "$TMP/proj.log" '^project files ok'
cat "$TMP/proj.log"
check "Terrain.cs imports the bare name" has $C/Terrain/Terrain.cs '^[[:space:]]*const string Lib = "terrain";'
server_start
timeout 300 mono "$TMP/bin/test.exe" common/golden_tiles.inc "$BASE" >"$TMP/test.log" 2>&1
rc=$?
cat "$TMP/test.log"
check "TestTerrain passes" test $rc = 0
check "... including the server's checks" has "$TMP/test.log" "^ok: tile .* is the server's"
timeout 60 mono "$TMP/bin/example.exe" >"$TMP/example.log" 2>&1
check "Example runs" has "$TMP/example.log" '^after one edit: world hash [0-9a-f]{16}'
cat "$TMP/example.log"
check "... and prints what the Python example prints" \
	cmp -s "$TMP/example.log" <(cd bindings/python && TERRAIN_LIB=$PWD/../../$BUILD/lib/libterrain.so.1 python3 example.py 2>&1)
rm "$TMP/bin/Terrain.dll.config"
timeout 60 mono "$TMP/bin/example.exe" >"$TMP/nomap.log" 2>&1
check "without the config's map, libterrain.so.1 alone is not found" has "$TMP/nomap.log" 'DllNotFoundException'
finish
