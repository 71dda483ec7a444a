#!/bin/bash
# fresh-debian.sh [--test] - the README's first commands on a fresh Debian 12:
# debootstrap a bookworm minbase chroot (outside the repository, from the
# mirror apt uses here), copy a clean `git archive` of HEAD into it, install
# make (the one thing the README asks for first), then `make run` must build
# and serve: /healthz on 127.0.0.1 answers 200, then the server is stopped by
# its pid. With --test, `make test` runs there too. Needs root, debootstrap
# and the mirror; not part of `make test` (not executable: tests/run.sh
# skips it). `make fresh-check FRESH_ARGS=--test` runs it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
want_test=0
[ "${1:-}" = --test ] && want_test=1
[ "$(id -u)" = 0 ] || { echo "fresh-debian: needs root (debootstrap, chroot)" >&2; exit 1; }
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -m1 '/debian$' || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
dir=$(mktemp -d /var/tmp/terrain-fresh.XXXXXX)
port=${FRESH_PORT:-18080}
cleanup() {
	for m in dev/pts dev proc sys; do umount -l "$dir/root/$m" 2>/dev/null || true; done
	[ "${FRESH_KEEP:-0}" = 1 ] || rm -rf --one-file-system "$dir"
}
trap cleanup EXIT
t() { echo "fresh-debian: $* ($((SECONDS - t0)) s)"; }

t0=$SECONDS
debootstrap --variant=minbase bookworm "$dir/root" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
	{ tail -n 20 "$dir/debootstrap.log" >&2; exit 1; }
t "debootstrapped bookworm minbase from $mirror into $dir/root"
for m in proc sys dev dev/pts; do mount --bind "/$m" "$dir/root/$m"; done
cp /etc/resolv.conf "$dir/root/etc/resolv.conf"
mkdir -p "$dir/root/src"
git -C "$ROOT" archive HEAD | tar -x -C "$dir/root/src"
in_root() { chroot "$dir/root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
in_root sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make' \
	>"$dir/make.log" 2>&1 || { tail -n 20 "$dir/make.log" >&2; exit 1; }
t "installed make"

t1=$SECONDS
in_root sh -c "cd /src && timeout 1800 make run RUN_ARGS='--bind 127.0.0.1 --port $port --data-dir /tmp/data'" \
	>"$dir/run.log" 2>&1 &
run_pid=$!
ok=0
for i in $(seq 1 3600); do
	if grep -q "listening on 127.0.0.1:$port" "$dir/run.log"; then ok=1; break; fi
	kill -0 "$run_pid" 2>/dev/null || break
	sleep 0.5
done
if [ "$ok" != 1 ]; then
	echo "fresh-debian: make run did not serve:" >&2; tail -n 30 "$dir/run.log" >&2; exit 1
fi
t "make run: installed the packages, built, listening after $((SECONDS - t1)) s"
# the chroot shares the network: ask from here, without curl
code=$(bash -c "exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3; head -n 1 <&3")
echo "fresh-debian: GET /healthz: $code"
pid=""
for p in $(pgrep -f -x ".*/terrain-server serve --bind 127.0.0.1 --port $port .*" || true); do
	[ "$(readlink "/proc/$p/root")" = "$dir/root" ] && pid=$p
done
[ -n "$pid" ] && kill -TERM "$pid"
wait "$run_pid" || true
case $code in *" 200"*) ;; *) echo "fresh-debian: /healthz did not answer 200" >&2; exit 1 ;; esac
t "server (pid $pid) stopped"

if [ "$want_test" = 1 ]; then
	t1=$SECONDS
	in_root sh -c 'cd /src && timeout 1800 make test' >"$dir/test.log" 2>&1 ||
		{ tail -n 40 "$dir/test.log" >&2; exit 1; }
	grep -E "passed, .* failed|identical" "$dir/test.log"
	t "make test passed in $((SECONDS - t1)) s"
fi
