#!/bin/sh
# runtime-packages.sh - the Debian packages that hold the shared libraries
# the given programs link (their ELF NEEDED entries, found where ldd finds
# them, each mapped to its package with dpkg -S), one a line, sorted.
# docker/Dockerfile runs it in the build stage and installs exactly that
# list in each runtime image, so a library added to the Makefile's link line
# cannot be missing from an image. Fails when a library is not found or no
# package owns it.
#
#   docker/runtime-packages.sh build/terrain-server > build/terrain-server.pkgs
set -eu
[ $# -gt 0 ] || { echo "usage: $0 PROGRAM..." >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out" "$out.elf"' EXIT
for prog in "$@"; do
	objdump -p "$prog" >"$out.elf"
	for so in $(awk '$1 == "NEEDED" { print $2 }' "$out.elf"); do
		path=$(ldd "$prog" | awk -v so="$so" '$1 == so && $3 ~ /^\// { print $3 }')
		[ -n "$path" ] || { echo "runtime-packages: $prog: $so not found" >&2; exit 1; }
		real=$(realpath "$path")
		# merged /usr: dpkg may know the file under /lib or under /usr/lib
		pkg=$(dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null ||
			dpkg -S "/usr$real" 2>/dev/null) ||
			{ echo "runtime-packages: $prog: no package owns $real ($so)" >&2; exit 1; }
		printf '%s\n' "${pkg%%:*}" >>"$out"
	done
done
sort -u "$out"
