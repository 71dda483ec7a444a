#!/bin/sh
# cjson-src.sh DIR - Debian's cJSON sources (the source package `cjson`, at
# the version of the installed libcjson-dev when there is one, its patches
# applied) unpacked into DIR, for the WebAssembly build (make wasm), which
# compiles cJSON.c itself: Debian ships cJSON for wasm32 only as source.
#
# apt-get source with a private deb-src list and private lists/cache under
# DIR.apt, so the machine's apt configuration is left as it is; needs
# dpkg-source (dpkg-dev) and the Debian mirror the machine's sources name.
set -eu
dir=${1:?usage: scripts/cjson-src.sh DIR}
[ -f "$dir/cJSON.c" ] && exit 0
mkdir -p "$(dirname "$dir")"
dir="$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")"
work="$dir.apt"
rm -rf "$work" && mkdir -p "$work/parts" "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p; s/^deb \(http[^ ]*debian\) .*/\1/p' \
	/etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
	head -n 1)
suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)
echo "deb-src ${mirror:-http://deb.debian.org/debian} ${suite:-bookworm} main" >"$work/sources.list"
echo "deb-src ${mirror:-http://deb.debian.org/debian} ${suite:-bookworm}-updates main" >>"$work/sources.list"
sec=$(echo "${mirror:-http://deb.debian.org/debian}" | sed 's|/debian$|/debian-security|')
echo "deb-src $sec ${suite:-bookworm}-security main" >>"$work/sources.list"
apt() {
	apt-get -q -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts="$work/parts" \
		-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root "$@"
}
apt update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }
# one line per architecture installed (amd64 and arm64 for make test-arm64)
version=$(dpkg-query -W -f='${Version}\n' libcjson-dev 2>/dev/null | head -n 1 || true)
(cd "$work/src" && apt source --download-only "cjson${version:+=$version}") >>"$work/apt.log" 2>&1 ||
	{ cat "$work/apt.log" >&2; exit 1; }
(cd "$work/src" && dpkg-source -x ./*.dsc cjson) >>"$work/apt.log" 2>&1 ||
	{ cat "$work/apt.log" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$(dirname "$dir")" && mv "$work/src/cjson" "$dir"
echo "cjson-src: $(sed -n 's/^Version: //p' "$work"/src/*.dsc) in $dir" >&2
rm -rf "$work"
