#!/bin/sh
# deps.sh - install the Debian packages a make target needs.
# Usage: scripts/deps.sh [build|test|bench|wasm|arm64|fresh-check|container]
#   build        make, make run:   the compiler and the libraries
#   test         make test:        build + clang (with its sanitizer runtime), curl,
#                                  gdal-bin, nodejs (node --test of the JS client),
#                                  nginx-light (tests/cluster/nginx_front.sh), python3 (with
#                                  python3-venv and the setuptools and wheel wheels for the
#                                  package test), prometheus
#                                  (for promtool: tests/http/metrics.sh), mono-mcs, mono-runtime
#                                  and golang-go (the C# and Go bindings' tests),
#                                  godot3-server (tests/client/godot_export.sh), python3-jsonschema
#                                  (the TileJSON schema: tests/tiles/tilejson_schema.sh), python3-jwt
#                                  and openssl (players' tokens: tests/edits/edit_tokens.sh),
#                                  systemd (systemd-analyze, never started), man-db and strace
#                                  (the operator's install: tests/platform/install.sh)
#   bench        make bench:       test + the anchors' packages (stb, libnoise, g++,
#                                  wrk, nginx, h2o, Redis, LERC, WebP, hyperfine,
#                                  valgrind) and the tools bench/*.sh use: bc,
#                                  procps (ps, pgrep), iproute2 (ss)
#   wasm         make wasm:        build + clang, lld (wasm-ld), wasi-libc, compiler-rt for
#                                  wasm32, dpkg-dev (dpkg-source unpacks Debian's cJSON
#                                  sources: scripts/cjson-src.sh); test and bench include it
#   arm64        make test-arm64:  build + the arm64 cross compiler, qemu-user and
#                                  the arm64 -dev libraries (adds dpkg's arm64 arch);
#                                  .ci/run runs it after make test
#   fresh-check  make fresh-check: debootstrap
#   container    make container-test: docker-compose and debootstrap (the Docker
#                                  daemon itself, docker.io, is the operator's to
#                                  install and start: the test says when it is missing)
# tests/browser/viewer_browser.sh, maps_browser.sh and js_client.sh install Debian's
# chromium themselves and their npm packages (tests/browser/package.json) into
# tests/browser/node_modules, and the pages' (clients/web/package.json: what
# `make web` installs) into clients/web/node_modules (skipped without Node.js
# 20+ and npm). Skips apt-get entirely when every
# package is already installed. docs/operations.md's "Packages each target installs" lists them.
# While another apt-get or dpkg holds the dpkg lock, it says so and waits
# (up to DEPS_LOCK_TIMEOUT seconds, default 600) instead of failing with
# "Could not get lock /var/lib/dpkg/lock-frontend"; apt-get itself gets
# -o DPkg::Lock::Timeout for the same wait. For tests/platform/newcomer.sh: DEPS_LOCKS
# (the lock files watched), APT_GET and DPKG_QUERY (the commands run).
set -eu
BUILD_PKGS="make gcc pkg-config libuv1-dev node-llhttp libzstd-dev zlib1g-dev libcmocka-dev libxxhash-dev libcjson-dev libpng-dev libtiff-dev libgeotiff-dev libhiredis-dev libjwt-dev libssl-dev libcurl4-gnutls-dev zstd"
TEST_PKGS="clang cmake libclang-rt-14-dev curl wget gdal-bin nginx-light python3 python3-venv python3-setuptools-whl python3-wheel-whl prometheus nodejs redis-server redis-tools mono-mcs mono-runtime golang-go godot3-server python3-jsonschema python3-jwt openssl systemd man-db strace"
WASM_PKGS="clang lld wasi-libc libclang-rt-14-dev-wasm32 dpkg-dev"
BENCH_PKGS="libstb-dev libnoise-dev g++ wrk nginx-light h2o redis-server redis-tools liblerc-dev libwebp-dev hyperfine valgrind bc procps iproute2"
ARM64_PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user file libuv1-dev:arm64 libzstd-dev:arm64 libcjson-dev:arm64 libxxhash-dev:arm64 libpng-dev:arm64 libcmocka-dev:arm64 libtiff-dev:arm64 libgeotiff-dev:arm64 libhiredis-dev:arm64 libjwt-dev:arm64 libssl-dev:arm64 zlib1g-dev:arm64 libcurl4-gnutls-dev:arm64"
FRESH_PKGS="debootstrap git"
CONTAINER_PKGS="docker-compose debootstrap wrk"

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

APT_GET=${APT_GET:-apt-get}
DPKG_QUERY=${DPKG_QUERY:-dpkg-query}
LOCK_TIMEOUT=${DEPS_LOCK_TIMEOUT:-600}
LOCKS=${DEPS_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}

# The pid holding a POSIX lock on one of $LOCKS (as apt and dpkg take
# them), from /proc/locks, which names files by device and inode; none: "".
lock_holder() {
	for f in $LOCKS; do
		[ -e "$f" ] || continue
		ino=$(stat -c %i "$f")
		pid=$(awk -v ino="$ino" '$2 != "->" { n = split($6, d, ":"); if (d[n] == ino) { print $5; exit } }' /proc/locks)
		[ -n "$pid" ] && { echo "$pid $f"; return; }
	done
	return 0
}

# Wait while another apt-get or dpkg holds the lock, saying so once.
wait_for_lock() {
	waited=0
	while held=$(lock_holder) && [ -n "$held" ]; do
		if [ "$waited" = 0 ]; then
			pid=${held%% *}
			echo "deps: waiting for the dpkg lock (${held#* } is held by pid $pid," \
				"$(cat "/proc/$pid/comm" 2>/dev/null || echo '?'): another apt-get or" \
				"dpkg is running; up to ${LOCK_TIMEOUT}s)" >&2
		fi
		if [ "$waited" -ge "$LOCK_TIMEOUT" ]; then
			echo "deps: the dpkg lock is still held after ${LOCK_TIMEOUT}s; giving up" >&2
			exit 1
		fi
		sleep 1
		waited=$((waited + 1))
	done
	[ "$waited" = 0 ] || echo "deps: the dpkg lock is free after ${waited}s" >&2
}

missing=""
for p in $want; do
	$DPKG_QUERY -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
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
wait_for_lock
$APT_GET -o DPkg::Lock::Timeout="$LOCK_TIMEOUT" update -qq >/dev/null
wait_for_lock
$APT_GET -o DPkg::Lock::Timeout="$LOCK_TIMEOUT" install -y -qq --no-install-recommends $missing >/dev/null
