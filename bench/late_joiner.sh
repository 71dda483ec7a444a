#!/usr/bin/env bash
# bench/late_joiner.sh BUILD_DIR - how soon a node that starts after N
# edits on a shared Redis log is listening: one redis-server on loopback,
# node A takes N edits (bench/edit_load.c: 16 clients, batches of 256),
# then node B starts on an empty data folder and replays the stream.
# Prints one markdown row per N. Env: LATE_EDITS ("1000000").
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/late_joiner.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"; bin="$build/terrain-server"; here="$(cd "$(dirname "$0")" && pwd)"
command -v redis-server >/dev/null || { echo "bench: redis-server missing" >&2; exit 0; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/late.XXXXXX")"; pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"${CC:-cc}" -O2 -Wall "$here/edit_load.c" -o "$tmp/edit_load"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { local i; for i in $(seq 1 30000); do grep -q listening "$1" && return 0; sleep 0.01; done; return 1; }
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
echo "| edits in the log | posted in | late joiner listening after | its RSS |"
echo "| --- | --- | --- | --- |"
for n in ${LATE_EDITS:-1000000}; do
	rp=$(free_port); ap=$(free_port); bp=$(free_port); d="$tmp/$n"; mkdir -p "$d"
	redis-server --port "$rp" --bind 127.0.0.1 --dir "$d" --appendonly yes --appendfsync always \
		--save "" --logfile "$d/redis.log" & pids+=("$!")
	for i in $(seq 1 50); do [ "$(redis-cli -p "$rp" PING 2>/dev/null)" = PONG ] && break; sleep 0.1; done
	log="redis://127.0.0.1:$rp?replicas=0"
	"$bin" serve --port "$ap" --data-dir "$d/a" --edit-log "$log" --snapshot-every 0 --bake-after 0 2>"$d/a.log" &
	pids+=("$!"); listening "$d/a.log"
	t0=$(date +%s.%N)
	"$tmp/edit_load" "$ap" 16 $((n / 256)) 256 late >/dev/null
	posted=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f s", a - b }')
	t0=$(date +%s.%N)
	"$bin" serve --port "$bp" --data-dir "$d/b" --edit-log "$log" --snapshot-every 0 --bake-after 0 2>"$d/b.log" &
	b=$!; pids+=("$b"); listening "$d/b.log"
	secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f s", a - b }')
	echo "| $((n / 256 * 256)) | $posted | $secs | $(awk '/VmRSS/ { printf "%d MiB", $2 / 1024 }' "/proc/$b/status") |"
done
