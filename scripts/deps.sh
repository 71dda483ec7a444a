#!/bin/sh
# deps.sh - install the Debian packages a make target needs.
# Usage: scripts/deps.sh [build|test|bench|wasm|arm64|fresh-check|container]
#   build        make, make run:   the compiler and the libraries
#   test         make test:        build + clang (with its sanitizer runtime), curl,
#                                  gdal-bin, nodejs (node --test of the JS client),
#                                  nginx-light (tests/nginx_front.sh), python3, prometheus
#                                  (for promtool: tests/metrics.sh), mono-mcs, mono-runtime
#                                  and golang-go (the C# and Go bindings' tests),
#                                  godot3-server (tests/godot_export.sh), python3-jsonschema
#                                  (the TileJSON schema: tests/tilejson_schema.sh)
#   bench        make bench:       test + the anchors' packages
#   wasm         make wasm:        build + clang, lld (wasm-ld), wasi-libc, compiler-rt for
#                                  wasm32, dpkg-dev (dpkg-source unpacks Debian's cJSON
#                                  sources: scripts/cjson-src.sh); test and bench include it
#   arm64        make test-arm64:  build + the arm64 cross compiler, qemu-user and
#                                  the arm64 -dev libraries (adds dpkg's arm64 arch)
#   fresh-check  make fresh-check: debootstrap
#   container    make container-test: docker-compose and debootstrap (the Docker
#                                  daemon itself, docker.io, is the operator's to
#                                  install and start: the test says when it is missing)
# tests/viewer_browser.sh, maps_browser.sh and js_client.sh install Debian's
# chromium themselves and their npm packages (tests/browser/package.json) into
# tests/browser/node_modules, and the pages' (clients/web/package.json: what
# `make web` installs) into clients/web/node_modules (skipped without Node.js
# 20+ and npm). Skips apt-get entirely when every
# package is already installed. The README's "Packages" section lists them.
set -eu
BUILD_PKGS="make gcc pkg-config libuv1-dev node-llhttp libzstd-dev zlib1g-dev libcmocka-dev libxxhash-dev libcjson-dev libpng-dev libtiff-dev libgeotiff-dev libhiredis-dev zstd"
TEST_PKGS="clang libclang-rt-14-dev curl wget gdal-bin nginx-light python3 prometheus nodejs redis-server redis-tools mono-mcs mono-runtime golang-go godot3-server python3-jsonschema"
WASM_PKGS="clang lld wasi-libc libclang-rt-14-dev-wasm32 dpkg-dev"
BENCH_PKGS="libstb-dev libnoise-dev g++ wrk nginx-light h2o redis-server redis-tools liblerc-dev libwebp-dev hyperfine valgrind"
ARM64_PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user file libuv1-dev:arm64 libzstd-dev:arm64 libcjson-dev:arm64 libxxhash-dev:arm64 libpng-dev:arm64 libcmocka-dev:arm64 libtiff-dev:arm64 libgeotiff-dev:arm64 libhiredis-dev:arm64"
FRESH_PKGS="debootstrap git"
CONTAINER_PKGS="docker-compose debootstrap"

case "${1:-build}" in
	build) want="$BUILD_PKGS" ;;
	test)  want="$BUILD_PKGS $TEST_PKGS $WASM_PKGS" ;;
	bench) want="$BUILD_PKGS $TEST_PKGS $WASM_PKGS $BENCH_PKGS" ;;
	wasm)  want="$BUILD_PKGS $WASM_PKGS" ;;
	arm64) want="$BUILD_PKGS $ARM64_PKGS" ;;
	fresh-check) want="$FRESH_PKGS" ;;
	container) want="$CONTAINER_PKGS" ;;
	*) echo "usage: $0 [build|test|bench|wasm|arm64|fresh-check|container]" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing (run as root, or install them)" >&2
	exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
case "$want" in
	*:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64 ;;
esac
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends $missing >/dev/null
