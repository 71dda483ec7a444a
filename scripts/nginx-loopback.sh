#!/bin/sh
# nginx-loopback.sh - docker/nginx.conf rewritten for nodes on 127.0.0.1, on
# stdout: the same file the containers run, so tests/cluster/nginx_front.sh and
# bench/front.sh check what ships.
#
#   scripts/nginx-loopback.sh [--round-robin] LISTEN_PORT NODE_PORT...
#
# "listen 8080;" becomes "listen 127.0.0.1:LISTEN_PORT;"; the Nth
# "server terrainN:8080 ...;" line of each upstream points at 127.0.0.1 and
# the Nth NODE_PORT (lines past the ports given are dropped, so 1 to 3
# nodes); --round-robin drops the tiles' "hash ... consistent;" line (for
# the benchmark's comparison). Run as root, workers run as root too
# ("user root;"), so that they can write the cache under a private
# temporary prefix.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
rr=0
if [ "${1:-}" = --round-robin ]; then
	rr=1
	shift
fi
if [ $# -lt 2 ]; then
	echo "usage: $0 [--round-robin] LISTEN_PORT NODE_PORT..." >&2
	exit 2
fi
listen=$1
shift
user=
[ "$(id -u)" != 0 ] || user="user root;"
awk -v listen="$listen" -v ports="$*" -v rr="$rr" -v user="$user" '
BEGIN { n = split(ports, port, " ") }
/^worker_processes / && user != "" { print user }
/^[ \t]*listen 8080;/ { sub(/listen 8080;/, "listen 127.0.0.1:" listen ";") }
/^[ \t]*hash .* consistent;/ && rr == 1 { next }
/^[ \t]*server terrain[0-9]+:8080/ {
	match($0, /terrain[0-9]+/)
	k = substr($0, RSTART + 7, RLENGTH - 7) + 0
	if (k > n) next
	sub(/terrain[0-9]+:8080/, "127.0.0.1:" port[k])
}
{ print }
' "$here/docker/nginx.conf"
