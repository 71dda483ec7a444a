#!/usr/bin/env bash
# bench/swarm.sh BUILD_DIR - the realistic load test (make bench, section 8):
# terrain-client swarm with 50 and with 500 simulated players walking in 10
# worlds against a fresh server, each for SWARM_S seconds (default 10),
# beside wrk's figure for the same server on one hot cached tile (the
# ceiling a request loop sees). After each swarm, the server's CPU over it
# (utime + stime of /proc/PID/stat): in cores, and per player. Figures are
# printed, never asserted. Env: SWARM_S, SWARM_PLAYERS (the swarms' player
# counts, "50 500"; a few players for long, e.g. SWARM_PLAYERS=20
# SWARM_S=40, ask what players ask rather than what the server can give),
# SWARM_WRK (1; 0: no wrk run), SWARM_ARGS (more terrain-client swarm
# options, e.g. "--speed 10").
# SWARM_BASELINE=/path/to/another/terrain-client runs that client too, right
# before this build's, each against its own fresh server, and prints the
# ratios of their rows (answers/s, tiles/s, MB/s, p50 and p99): e.g. the
# hand-written HTTP/1.1 pipelining client of before libcurl (docs/client.md).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/swarm.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
dur="${SWARM_S:-10}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/swarm-bench.XXXXXX")"
pid=
cleanup() {
	[ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT

start() {
	"$build/terrain-server" serve --port 0 --data-dir "$tmp/data" 2>"$tmp/server.log" &
	pid=$!
	for _ in $(seq 200); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/server.log")
		[ -n "$port" ] && return 0
		sleep 0.05
	done
	echo "swarm: server did not start" >&2
	exit 1
}
stop() { kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; pid=; }
# the server's user + system CPU so far, in clock ticks
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }

echo "## 8. Swarm: simulated players (terrain-client swarm), ${dur} s each"
echo
# swarm CLIENT PLAYERS: one run against a fresh server, its report on
# stdout, then the server's CPU over it
swarm() {
	local c0 t0
	start
	c0=$(ticks) t0=$(date +%s%N)
	# shellcheck disable=SC2086
	"$1" swarm --server "http://127.0.0.1:$port" --players "$2" --duration "$dur" \
		--quiet ${SWARM_ARGS:-} 2>&1 | tail -n 12
	awk -v c="$(($(ticks) - c0))" -v hz="$(getconf CLK_TCK)" -v ns="$(($(date +%s%N) - t0))" -v n="$2" 'BEGIN {
		printf "server CPU: %.2f s in %.1f s of wall: %.3f cores; %.2f ms of CPU per player-second\n",
			c / hz, ns / 1e9, (c / hz) / (ns / 1e9), 1000 * (c / hz) / (ns / 1e9) / n }'
	stop
}
# figures REPORT: answers/s tiles/s MB/s p50 p99
figures() {
	sed -n 's/.*answered (\([0-9.]*\)\/s), [0-9]* tiles (\([0-9.]*\)\/s).*(\([0-9.]*\) MB\/s).*/\1 \2 \3/p;
		s/^swarm: latency p50 \([0-9.]*\) ms, p90 [0-9.]* ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$1" | tr '\n' ' '
}
for players in ${SWARM_PLAYERS:-50 500}; do
	echo "### $players players, 10 worlds, 16 connections, fresh server"
	echo
	if [ -n "${SWARM_BASELINE:-}" ]; then
		swarm "$SWARM_BASELINE" "$players" >"$tmp/base"
		swarm "$build/terrain-client" "$players" >"$tmp/new"
		echo "baseline ($SWARM_BASELINE):"
		echo '```'
		cat "$tmp/base"
		echo '```'
		echo "this build:"
		echo '```'
		cat "$tmp/new"
		echo '```'
		echo
		read -r -a b <<<"$(figures "$tmp/base")"
		read -r -a n <<<"$(figures "$tmp/new")"
		[ "${#b[@]}" = 5 ] && [ "${#n[@]}" = 5 ] &&
			awk -v b="${b[*]}" -v n="${n[*]}" 'BEGIN { split(b, x, " "); split(n, y, " ")
				split("answers/s tiles/s MB/s p50 p99", k, " ")
				printf "this build / baseline:"
				for (i = 1; i <= 5; i++) printf(" %s %.3f", k[i], (x[i] > 0 ? y[i] / x[i] : 0))
				print "" }'
	else
		echo '```'
		swarm "$build/terrain-client" "$players"
		echo '```'
	fi
	echo
done
if [ "${SWARM_WRK:-1}" = 1 ] && command -v wrk >/dev/null; then
	start
	curl -s -o /dev/null -H 'Accept-Encoding: zstd' "http://127.0.0.1:$port/v1/worlds/42/chunks/0/0/0"
	echo "### wrk on one hot cached tile (64 connections, keep-alive, 5 s)"
	echo
	echo '```'
	wrk -t1 -c64 -d5 --latency -H 'Accept-Encoding: zstd' \
		"http://127.0.0.1:$port/v1/worlds/42/chunks/0/0/0" 2>&1 | grep -E "Requests/sec|Transfer|50%|99%"
	echo '```'
	stop
fi
echo
echo "- the swarm's players each keep the ring of chunks around them loaded (nearest first, LOD by"
echo "  distance), so most requests of a fresh server are cold generations: the swarm measures"
echo "  generation throughput and queueing, wrk the cache-hit ceiling"
