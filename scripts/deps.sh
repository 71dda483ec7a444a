#!/bin/sh
# deps.sh - install the Debian packages the build, tests or benchmarks need.
# Usage: scripts/deps.sh [build|test|bench]   (each set includes the ones before)
# Skips apt-get entirely when every package is already installed.
set -eu
BUILD_PKGS="make gcc pkg-config libuv1-dev node-llhttp libzstd-dev libcmocka-dev libxxhash-dev libcjson-dev libpng-dev zstd"
TEST_PKGS="clang libclang-rt-14-dev curl"
BENCH_PKGS="libstb-dev libnoise-dev g++ wrk nginx-light h2o redis-server redis-tools liblerc-dev libwebp-dev hyperfine valgrind"

case "${1:-build}" in
	build) want="$BUILD_PKGS" ;;
	test)  want="$BUILD_PKGS $TEST_PKGS" ;;
	bench) want="$BUILD_PKGS $TEST_PKGS $BENCH_PKGS" ;;
	*) echo "usage: $0 [build|test|bench]" >&2; exit 2 ;;
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
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends $missing >/dev/null
