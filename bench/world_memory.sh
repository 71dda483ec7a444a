#!/usr/bin/env bash
# bench/world_memory.sh BUILD_DIR [N] - the memory a world costs: the
# server's resident set (VmRSS of /proc/PID/status) at start and after one
# edit was POSTed to each of N new worlds (default 10000) over loopback,
# one curl for all of them on one kept-alive connection. Prints both and
# the growth per world (docs/edits.md, Limits and costs). Figures printed,
# never asserted.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: bench/world_memory.sh BUILD_DIR [N]" >&2; exit 2; }
bin="$(cd "$1" && pwd)/terrain-server"
n=${2:-10000}
tmp="$(mktemp -d "${TMPDIR:-/tmp}/world-mem.XXXXXX")"
pid=
trap '[ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT

"$bin" serve --port 0 --data-dir "$tmp/data" --edit-rate 0 --edit-area 0 2>"$tmp/log" &
pid=$!
port=
for _ in $(seq 1 600); do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { echo "bench: the server did not start" >&2; cat "$tmp/log" >&2; exit 1; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }

printf '{"edits":[{"op":"raise","x":10,"z":10,"radius":5,"strength":1}]}' >"$tmp/edit.json"
for ((i = 1; i <= n; i++)); do
	printf 'url = "http://127.0.0.1:%s/v1/worlds/%d/edits"\n' "$port" "$i"
	printf 'header = "Content-Type: application/json"\n'
	printf 'data-binary = "@%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
		"$tmp/edit.json"
	[ "$i" = "$n" ] || printf 'next\n'
done >"$tmp/curl.cfg"

before=$(rss_kib)
ok=$(curl -s -K "$tmp/curl.cfg" | grep -c '^200$' || true)
after=$(rss_kib)
[ "$ok" = "$n" ] || { echo "bench: only $ok of $n edits answered 200" >&2; exit 1; }
echo "worlds: $n, one edit each; VmRSS at start $before KiB, after $after KiB:" \
	"+$(((after - before) / 1024)) MiB, $(((after - before) * 1024 / n)) bytes a world"
