#!/usr/bin/env bash
# bench/restart.sh BUILD_DIR - the first tile of a heavily edited chunk
# after a restart (issue 27): 10^5 edits posted to chunk (3, 3) of one world
# just before the server restarts, then, on the restarted server, a cold
# LOD-0 tile of an unedited chunk, the edited chunk's first tile, and
# another unedited cold tile (after one warm-up request of another world,
# as a client's first would be), each timed by wall clock (curl) and by the
# server's CPU (all threads, /proc/PID/task/*/schedstat). The ratio is the edited
# tile over the mean of the two unedited ones. Two kinds of edits:
#   smooth  raise/lower brushes of 4-64 m, 0.25 m (as bench/bake_bench.c)
#   rough   random 4 m bumps, 0.5 m up or down
# and two restarts: the log replayed whole (--snapshot-every 0), and with
# the default snapshots (the 10^5 edits end at a snapshot's cut). Each
# case RESTART_ROUNDS (3) restarts; medians. Prints one markdown table
# (also BUILD_DIR/bench/restart-results.md, and the medians in
# BUILD_DIR/bench/restart.tsv for bench/run.sh's summary); nothing is
# asserted.
#
# Env: RESTART_EDITS (100000), RESTART_ROUNDS (3), RESTART_WORKERS (2),
# RESTART_BASELINE (a terrain-server of another tree: its restarts are
# measured too, interleaved with this build's, on the same data).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: bench/restart.sh BUILD_DIR   (after: make BUILD=BUILD_DIR all)" >&2
	exit 2
fi
build="$(cd "$1" && pwd)"
bin="$build/terrain-server"
out="$build/bench"
nedits=${RESTART_EDITS:-100000}
rounds=${RESTART_ROUNDS:-3}
workers=${RESTART_WORKERS:-2}
[ -x "$bin" ] || { echo "bench: $bin missing: make BUILD=$1 all" >&2; exit 1; }
mkdir -p "$out"
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/restart-bench.XXXXXX")"
trap cleanup EXIT

baseline=${RESTART_BASELINE:-}
[ -z "$baseline" ] || [ -x "$baseline" ] || { echo "bench: RESTART_BASELINE $baseline is not a program" >&2; exit 1; }
server=$bin
start_server() { # DATA_DIR ARGS...: sets port, spid, slog, up_s (exec to listening)
	local dir=$1 t0 i
	shift
	slog="$tmp/server.$RANDOM.log"
	t0=$(date +%s.%N)
	TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0 "$server" serve --bind 127.0.0.1 --port 0 \
		--workers "$workers" --data-dir "$dir" "$@" 2>"$slog" &
	spid=$!
	for i in $(seq 1 30000); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$slog")
		if [ -n "$port" ]; then
			up_s=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
			return 0
		fi
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.01
	done
	say "server did not start:"; cat "$slog" >&2; exit 1
}
stop_server() { kill -TERM "$spid"; wait "$spid" || true; spid=""; }
# the server's CPU time so far, ns, all threads (schedstat: ns, not ticks)
cpu_ns() { cat /proc/"$spid"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
# tile PATH: "wall_ms cpu_ms bytes" of one zstd request
tile() {
	local c0 c1 r
	c0=$(cpu_ns)
	r=$(curl -s -o "$tmp/tile" -H 'Accept-Encoding: zstd' -w '%{time_total} %{size_download}' \
		"http://127.0.0.1:$port$1")
	c1=$(cpu_ns)
	awk -v r="$r" -v c0="$c0" -v c1="$c1" 'BEGIN { split(r, f, " ");
		printf "%.2f %.2f %d\n", f[1] * 1000, (c1 - c0) / 1e6, f[2] }'
}

# post KIND N WORLD: N edits of KIND in chunk (3, 3), in batches of 256 on
# one kept-alive connection
post() {
	python3 - "$port" "$1" "$2" "$3" <<'PY'
import http.client, json, random, sys
port, kind, n, world = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
rng = random.Random(27)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
left = n
while left:
    k = min(256, left)
    edits = []
    for _ in range(k):
        x, z = 768 + rng.random() * 256, 768 + rng.random() * 256
        op = "raise" if rng.random() < 0.5 else "lower"
        if kind == "smooth":
            e = {"op": op, "x": round(x, 3), "z": round(z, 3),
                 "radius": round(4 + rng.random() * 60, 3), "strength": 0.25}
        else:
            e = {"op": op, "x": round(x, 3), "z": round(z, 3), "radius": 4, "strength": 0.5}
        edits.append(e)
    c.request("POST", f"/v1/worlds/{world}/edits", json.dumps({"edits": edits}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"post: {r.status}")
    left -= k
PY
}

rows=()
: > "$out/restart.tsv"
for kind in smooth rough; do
	for snap in 0 100000; do
		dir="$tmp/$kind-$snap"
		say "restart: $nedits $kind edits on one chunk, --snapshot-every $snap"
		start_server "$dir" --snapshot-every "$snap"
		post "$kind" "$nedits" heavy
		# a snapshot due at the last batch: let it be written, as before a restart
		[ "$snap" = 0 ] || for i in $(seq 1 600); do
			[ -f "$dir/snapshot" ] && break
			sleep 0.1
		done
		stop_server
		res="$tmp/rounds"
		: > "$res"
		for r in $(seq 1 "$rounds"); do
			for who in this ${baseline:+baseline}; do
				[ "$who" = this ] && server=$bin || server=$baseline
				start_server "$dir" --snapshot-every "$snap"
				# the first request of a process pays for its start (threads,
				# page faults): one of another chunk first, as a client's first
				tile "/v1/worlds/warm$r/chunks/0/9/9" >/dev/null
				read -r aw ac _ < <(tile "/v1/worlds/plain$r-a/chunks/0/3/3")
				read -r ew ec ebytes < <(tile "/v1/worlds/heavy/chunks/0/3/3")
				read -r bw bc pbytes < <(tile "/v1/worlds/plain$r-b/chunks/0/3/3")
				stop_server
				echo "$who $up_s $ew $aw $bw $ec $ac $bc $ebytes $pbytes" >> "$res"
			done
		done
		server=$bin
		for who in this ${baseline:+baseline}; do
			col() { awk -v w="$who" -v c="$1" '$1 == w { print $c }' "$res"; }
			ratio() { awk -v w="$who" -v e="$1" -v a="$2" -v b="$3" '$1 == w && ($a + $b) > 0 { printf "%.2f\n", 2 * $e / ($a + $b) }' "$res"; }
			wall=$(ratio 3 4 5 | tr '\n' ' ')
			cpu=$(ratio 6 7 8 | tr '\n' ' ')
			printf '%s\t%s\t%s\t%s\t%s\n' "$kind" "$snap" "$who" "$(median $wall)" \
				"$(median $cpu)" >> "$out/restart.tsv"
			rows+=("| $kind | $([ "$snap" = 0 ] && echo "log replayed whole" || echo "snapshot every $snap") | $([ "$who" = this ] && echo "this build" || echo "baseline") | $(median $(col 2)) | $(median $(col 3)) | $(median $(col 4) $(col 5)) | **$(median $wall)x** (${wall% }) | $(median $(col 6)) / $(median $(col 7) $(col 8)) ms: **$(median $cpu)x** (${cpu% }) | $(col 9 | tail -n 1) / $(col 10 | tail -n 1) |")
		done
	done
done

{
	echo "## 17. First tile of a chunk with $nedits edits after a restart (bench/restart.sh, $(date -u +%Y-%m-%d), $(nproc) cores, $workers workers)"
	echo
	echo "| edits | restart | server | start-up to listening, s | edited tile, ms | unedited cold tile, ms | edited / unedited, wall (rounds) | server CPU, edited / unedited (rounds) | zstd bytes, edited / unedited |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	printf '%s\n' "${rows[@]}"
	echo
	echo "Each round is a fresh start on the same data; the unedited tiles are of new worlds, asked before and after the edited one; with a baseline, its restarts alternate with this build's. Target: edited / unedited <= 1.5x (wall)."
	[ -n "$baseline" ] && echo "Baseline: $baseline"
	echo "(load $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
} | tee "$out/restart-results.md"
