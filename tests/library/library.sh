#!/bin/bash
# library.sh - libterrain as a user gets it (docs/library.md): the shared
# library's soname, and that it exports exactly the functions terrain.h
# declares (nm -D) and the static one no other global symbol; `make install-lib
# PREFIX=/opt/terrain DESTDIR=tmp` puts the header, both libraries and
# terrain.pc and the CMake package in place; bindings/c/example.c builds
# against the staged install with pkg-config and with CMake (find_package,
# the tree moved elsewhere; a major version too new refused), and
# shared and static (beside a program defining
# core names of its own, which the sealed archive must not clash with),
# runs, prints the golden heights hash of tile default/0/0 (0, 0), and
# writes a tile byte-identical to the real server's answer for the same URL.
. "$(dirname "$0")/../lib/lib.sh"

LIBDIR_B=$BUILD/lib
SO=$LIBDIR_B/libterrain.so.1
CC=${CC:-cc}
# an ASan/UBSan build's library needs its runtime in the program too
SAN=
nm -D "$SO" | grep -q ' U __asan' && SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"

# ---- symbols ----
sed -n 's/^TERRAIN_API [^(]*[ *]\(terrain_[a-z0-9_]*\)(.*/\1/p' common/terrain.h | sort >"$TMP/declared"
nm -D --defined-only "$SO" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort >"$TMP/exported"
check "terrain.h declares functions ($(wc -l <"$TMP/declared"))" test -s "$TMP/declared"
check "libterrain.so exports exactly the functions terrain.h declares" \
	diff "$TMP/declared" "$TMP/exported"
# 1.0's functions in TERRAIN_1.0; each later one in the node of its minor
# version, named whole in common/terrain.map
check "every export is in version node TERRAIN_1.0 or TERRAIN_1.1 (terrain_edits_revert_record, _record_by)" \
	not bash -c "nm -D --defined-only '$SO' | awk '\$2 != \"A\"' | grep -v '@@TERRAIN_1.0$' |
		grep -vE '^[0-9a-f]* T terrain_edits_(revert_record|record_by)@@TERRAIN_1.1$'"
check "soname libterrain.so.1" has <(readelf -d "$SO") 'SONAME.*\[libterrain\.so\.1\]'
nm --defined-only "$LIBDIR_B/libterrain.a" | awk '$2 ~ /^[A-TV-Z]$/ {print $3}' | sort -u >"$TMP/static"
check "libterrain.a defines no global symbol but terrain_*" \
	not grep -v '^terrain_' "$TMP/static"
check "libterrain.a defines every declared function" diff "$TMP/declared" "$TMP/static"

# ---- install ----
ROOT=$TMP/root
make --no-print-directory -s BUILD="$BUILD" PREFIX=/opt/terrain DESTDIR="$ROOT" install-lib \
	>"$TMP/install.log" 2>&1
check "make install-lib PREFIX=/opt/terrain DESTDIR=..." test $? = 0
LIBVER=$(sed -n 's/^#define TERRAIN_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' common/terrain.h | paste -sd.)
for f in include/terrain.h lib/libterrain.so.$LIBVER lib/libterrain.so.1 lib/libterrain.so \
	lib/libterrain.a lib/pkgconfig/terrain.pc; do
	check "installed $f" test -e "$ROOT/opt/terrain/$f"
done
check "libterrain.so.1 is a link to the versioned file" \
	test "$(readlink "$ROOT/opt/terrain/lib/libterrain.so.1")" = "libterrain.so.$LIBVER"
export PKG_CONFIG_SYSROOT_DIR=$ROOT PKG_CONFIG_PATH=$ROOT/opt/terrain/lib/pkgconfig
check "pkg-config knows terrain $(pkg-config --modversion terrain 2>&1)" \
	test "$(pkg-config --modversion terrain)" = "$(sed -n 's/^#define TERRAIN_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' common/terrain.h | paste -sd.)"

# ---- a program against it ----
golden=$(grep -o '{ "default", 0ULL, 0, 0, 0, 0x[0-9a-f]*ULL }' common/golden_tiles.inc |
	sed 's/.*0x\([0-9a-f]*\)ULL.*/\1/')
libdir=$ROOT/opt/terrain/lib
# shellcheck disable=SC2046,SC2086
$CC -std=c11 -Wall -Wextra -Werror $SAN bindings/c/example.c $(pkg-config --cflags --libs terrain) \
	-Wl,-rpath,"$libdir" -o "$TMP/ex-shared" 2>"$TMP/cc-shared.log"
check "example.c builds with pkg-config --cflags --libs terrain" test $? = 0
check "... and needs libterrain.so.1" has <(readelf -d "$TMP/ex-shared") 'NEEDED.*libterrain\.so\.1'
"$TMP/ex-shared" >"$TMP/shared.out" 2>&1
check "... runs and prints the golden hash $golden" has "$TMP/shared.out" "heights hash $golden"

# the static archive, beside a program that has core names of its own
cat >"$TMP/mine.c" <<'EOF'
int tile_decode(void);
int pipeline_generate(void);
int noise_perlin2(void);
int tile_decode(void) { return 1; }
int pipeline_generate(void) { return 2; }
int noise_perlin2(void) { return 3; }
EOF
# shellcheck disable=SC2046,SC2086
$CC -std=c11 -Wall -Wextra -Werror $SAN $(pkg-config --cflags terrain) bindings/c/example.c \
	"$TMP/mine.c" -L"$libdir" -l:libterrain.a \
	$(pkg-config --static --libs terrain | sed 's/-lterrain\b//') -o "$TMP/ex-static" \
	2>"$TMP/cc-static.log"
check "example.c links the sealed libterrain.a beside its own tile_decode()" test $? = 0
check "... and does not need libterrain.so" not has <(readelf -d "$TMP/ex-static") libterrain
"$TMP/ex-static" >"$TMP/static.out" 2>&1
check "... and prints what the shared build prints" cmp -s "$TMP/shared.out" "$TMP/static.out"

# ---- CMake: find_package(terrain), the imported targets ----
if command -v cmake >/dev/null; then
	for f in terrainConfig.cmake terrainConfigVersion.cmake; do
		check "installed lib/cmake/terrain/$f" test -e "$ROOT/opt/terrain/lib/cmake/terrain/$f"
	done
	# the installed tree moved elsewhere: the package's paths are relative
	cp -a "$ROOT/opt/terrain" "$TMP/moved"
	mkdir "$TMP/cm"
	cp bindings/c/example.c "$TMP/cm/"
	cat >"$TMP/cm/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(app C)
find_package(terrain ${WANT} REQUIRED)
add_executable(app example.c)
target_link_libraries(app PRIVATE terrain::terrain)
add_executable(app_static example.c)
target_link_libraries(app_static PRIVATE terrain::terrain_static)
message(STATUS "terrain ${terrain_VERSION} at ${terrain_DIR}")
EOF
	cmake -S "$TMP/cm" -B "$TMP/cm/b" -DCMAKE_PREFIX_PATH="$TMP/moved" -DWANT="$LIBVER" \
		-DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$SAN" >"$TMP/cmake.log" 2>&1 &&
		cmake --build "$TMP/cm/b" >>"$TMP/cmake.log" 2>&1
	check "find_package(terrain $LIBVER) + terrain::terrain and terrain::terrain_static build" test $? = 0
	check "... found $LIBVER in the moved tree" has "$TMP/cmake.log" "terrain $LIBVER at $TMP/moved/lib/cmake/terrain"
	"$TMP/cm/b/app" >"$TMP/cm.out" 2>&1
	check "... the shared one runs (CMake's rpath) and prints the golden hash" has "$TMP/cm.out" "heights hash $golden"
	check "... the static one needs no libterrain.so" not has <(readelf -d "$TMP/cm/b/app_static") libterrain
	"$TMP/cm/b/app_static" >"$TMP/cms.out" 2>&1
	check "... and prints the same" cmp -s "$TMP/cm.out" "$TMP/cms.out"
	next=$((${LIBVER%%.*} + 1))
	cmake -S "$TMP/cm" -B "$TMP/cm/b2" -DCMAKE_PREFIX_PATH="$TMP/moved" -DWANT="$next" \
		>"$TMP/cmake2.log" 2>&1
	check "find_package(terrain $next) is refused by the version file" \
		has "$TMP/cmake2.log" "version: $LIBVER"
else
	echo "skip: no cmake (scripts/deps.sh test installs it)"
fi

# ---- the server's bytes ----
"$TMP/ex-shared" alpine my-world 2 3 -1 "$TMP/lib.tile" >"$TMP/alpine.out" 2>&1
server_start
curl -s -o "$TMP/server.tile" "$BASE/v1/worlds/my-world/chunks/2/3/-1?gen=alpine"
check "the library's tile alpine/my-world/2/(3,-1) is the server's, byte for byte" \
	cmp -s "$TMP/lib.tile" "$TMP/server.tile"
etag=$(sed -n 's/.*ETag "\([0-9a-f]*\)".*/\1/p' "$TMP/alpine.out")
check "its checksum is the server's ETag" \
	has <(curl -s -D - -o /dev/null "$BASE/v1/worlds/my-world/chunks/2/3/-1?gen=alpine") \
	"etag: \"$etag\""
finish
