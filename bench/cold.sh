#!/usr/bin/env bash
# bench/cold.sh BUILD_DIR - section 10 of `make bench` (issue 20, section 1):
# what the server adds to a cold tile, all measured in one run.
#   - in process: BUILD_DIR/bench/cold_bench (built by make) makes the
#     same COLD_TILES LOD-0 `default` tiles that the servers are then asked
#     for, generate + encode + zstd, one-off calls (section 2's way) and a
#     kept workspace (a server worker's way): CPU ms per tile, pinned
#   - server: a fresh BUILD_DIR/terrain-server --workers COLD_WORKERS per
#     round; curl fetches every tile once over loopback (Accept-Encoding:
#     zstd, 16 keep-alive connections): server CPU per tile (the sum of
#     /proc/PID/task/*/schedstat run times before and after; the main,
#     event-loop thread's part on its own, and the workers' part against
#     the in-process workspace way), kernel share
#     (stime of utime + stime), minor faults per tile, tiles/s (wall)
#   - anchor: COLD_BASELINE, a terrain-server built from another tree (the
#     tree before a change), run in the same rounds, interleaved; absent:
#     its rows say so
# Two bullet lines on stdout; the tables as TSV (bench.h's form) in
# BUILD_DIR/bench/cold_inproc.tsv and cold.tsv, which bench/run.sh prints
# and reads for its summary. Figures are printed, never asserted.
#
# Env (defaults): COLD_TILES (400), COLD_ROUNDS (3), COLD_WORKERS (2),
# COLD_BASELINE (none), BENCH_CPU (1: the CPU cold_bench is pinned to).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: bench/cold.sh BUILD_DIR   (after: make BUILD=BUILD_DIR OPT=-O3 all)" >&2
	exit 2
fi
build="$(cd "$1" && pwd)"
server="$build/terrain-server"
inproc="$build/bench/cold_bench"
out="$build/bench"
n="${COLD_TILES:-400}"
rounds="${COLD_ROUNDS:-3}"
workers="${COLD_WORKERS:-2}"
base="${COLD_BASELINE:-}"
cpu="${BENCH_CPU-1}"
seed=918273645 cx0=3000000 cz0=-3000000 width=20
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SAY_AS="cold bench"
if [ -x "$server" ]; then bench_make "$build" bench/cold_bench; fi
[ -x "$server" ] && [ -x "$inproc" ] || { echo "cold bench: need $server and $inproc" >&2; exit 1; }
if [ -n "$base" ] && [ ! -x "$base" ]; then
	echo "cold bench: COLD_BASELINE=$base is not an executable" >&2
	exit 1
fi

W="$(mktemp -d "${TMPDIR:-/tmp}/terrain-cold-bench.XXXXXX")"
tmp="$W"
trap cleanup EXIT
trap 'exit 130' INT TERM

# start BINARY NAME: a fresh server with its own data dir; sets PID and PORT
start() {
	local i
	"$1" serve --port 0 --workers "$workers" --cache-mb 256 --data-dir "$W/$2.data" \
		</dev/null >"$W/$2.log" 2>&1 &
	PID=$!; pids+=("$PID"); PORT=""
	for i in $(seq 300); do
		PORT="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$W/$2.log" | head -n 1)"
		[ -z "$PORT" ] || return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	say "$2 did not start: $(tail -n 3 "$W/$2.log")"
	return 1
}
stop() {
	local keep=() p
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}
run_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
# the main (event-loop) thread's alone: its task id is the process id
loop_ns() { awk '{ print $1 }' /proc/"$1"/task/"$1"/schedstat 2>/dev/null || echo 0; }
stat_field() { sed 's/^.*) //' "/proc/$1/stat" | awk -v f="$2" '{ print $(f - 2) }'; }  # field number as in proc(5)
now() { date +%s.%N; }

# one round of one server: prints "cpu_ms_per_tile tiles_per_s faults_per_tile kernel_share
# loop_ms_per_tile"
round() {
	local bin=$1 name=$2 ns0 ns1 t0 t1 f0 f1 u0 u1 s0 s1 l0 l1
	start "$bin" "$name" || return 1
	awk -v n="$n" -v p="$PORT" -v s="$seed" -v x="$cx0" -v z="$cz0" -v w="$width" 'BEGIN {
		for (i = 0; i < n; i++) printf "url = \"http://127.0.0.1:%s/v1/worlds/%s/chunks/0/%d/%d\"\noutput = \"/dev/null\"\n",
			p, s, x + int(i / w), z + i % w }' >"$W/$name.cfg"
	curl -fsS -o /dev/null --max-time 30 "http://127.0.0.1:$PORT/healthz"
	ns0=$(run_ns "$PID"); l0=$(loop_ns "$PID"); f0=$(stat_field "$PID" 10); u0=$(stat_field "$PID" 14); s0=$(stat_field "$PID" 15); t0=$(now)
	curl -sS --parallel --parallel-immediate --parallel-max 16 --max-time 120 -H 'Accept-Encoding: zstd' \
		-w '%{http_code}\n' -K "$W/$name.cfg" >"$W/$name.codes" 2>"$W/$name.err" || true
	t1=$(now); ns1=$(run_ns "$PID"); l1=$(loop_ns "$PID"); f1=$(stat_field "$PID" 10); u1=$(stat_field "$PID" 14); s1=$(stat_field "$PID" 15)
	stop "$PID"
	if [ "$(grep -c '^200$' "$W/$name.codes")" != "$n" ]; then
		say "$name: not every tile answered 200: $(sort "$W/$name.codes" | uniq -c | tr '\n' ' ')"
		return 1
	fi
	awk -v n="$n" -v ns="$((ns1 - ns0))" -v dt="$(echo "$t1 - $t0" | bc)" -v f="$((f1 - f0))" \
		-v u="$((u1 - u0))" -v s="$((s1 - s0))" -v l="$((l1 - l0))" 'BEGIN {
		printf "%.3f %.0f %.1f %.2f %.3f\n", ns / 1e6 / n, n / dt, f / n, ((u + s) > 0 ? s / (u + s) : 0),
			l / 1e6 / n }'
}


pin=()
if [ -n "$cpu" ] && command -v taskset >/dev/null && taskset -c "$cpu" true 2>/dev/null; then pin=(taskset -c "$cpu"); fi
say "in process: $n tiles, 5 passes"
"${pin[@]}" "$inproc" "$seed" "$cx0" "$cz0" "$n" "$width" 5 >"$W/inproc.tsv"
one=$(awk -F '\t' 'NR == 2 { print $2 }' "$W/inproc.tsv")
kept=$(awk -F '\t' 'NR == 3 { print $2 }' "$W/inproc.tsv")

names=(this); bins=("$server")
[ -z "$base" ] || { names=(baseline this); bins=("$base" "$server"); }
: >"$W/rounds"
for r in $(seq "$rounds"); do
	for i in "${!names[@]}"; do
		say "round $r: ${names[$i]} (${bins[$i]}), $workers workers, $n cold tiles"
		res=$(round "${bins[$i]}" "${names[$i]}") || { say "round $r of ${names[$i]} failed"; exit 1; }
		echo "${names[$i]} $res" >>"$W/rounds"
	done
done

# shellcheck disable=SC2119  # median_mean reads stdin here
med() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$W/rounds" | median_mean; }
echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the end;" \
	"$n LOD-0 \`default\` tiles of world $seed at ($cx0 + i / $width, $cz0 + i % $width)"
echo "- this: \`${server}\`; baseline: \`${base:-none (COLD_BASELINE: a terrain-server of the tree before)}\`"
echo
cp "$W/inproc.tsv" "$out/cold_inproc.tsv"
{
	printf 'server\tCPU ms per cold tile\t/ in process, one-off\t/ in process, kept workspace\tof which the loop thread, ms\tworkers / in process, kept workspace\tkernel share\tminor faults per tile\tcold tiles/s (%s workers)\t/ baseline\n' "$workers"
	for s in "${names[@]}"; do
		cpu_ms=$(med "$s" 2); tps=$(med "$s" 3); flt=$(med "$s" 4); ker=$(med "$s" 5); loop=$(med "$s" 6)
		btps=""
		[ -z "$base" ] || btps=$(med baseline 3)
		awk -v s="$s" -v c="$cpu_ms" -v o="$one" -v k="$kept" -v t="$tps" -v f="$flt" -v ks="$ker" -v b="$btps" \
			-v l="$loop" 'BEGIN {
			printf "%s\t%.3f\t%.2fx\t%.2fx\t%.3f\t%.2fx\t%.0f%%\t%.1f\t%.0f\t%s\n", s, c, c / o, c / k, l, (c - l) / k,
				100 * ks, f, t, b != "" ? sprintf("%.2fx", t / b) : "n/a" }'
	done
	echo "note: medians of $rounds rounds, each a fresh server (servers interleaved round by round); CPU = all" \
		"threads' run time (schedstat) while curl fetched the $n tiles once each, 16 parallel keep-alive connections," \
		"curl on the same CPUs; kernel share and faults from /proc/PID/stat"
	echo "note: each round (CPU ms, tiles/s, faults, kernel share, loop thread ms):" \
		"$(awk '{ printf "%s%s %s/%s/%s/%s/%s", sep, $1, $2, $3, $4, $5, $6; sep = "; " }' "$W/rounds")"
	echo "note: the loop thread is the server's main thread (HTTP, cache, socket writes: mostly kernel time for" \
		"loopback TCP, which callgrind does not see); workers: the rest, the threads that generate, encode and compress"
	echo "note: targets (issue 20): server CPU per cold tile <= 1.15x the in-process generate + encode + zstd time" \
		"(section 2's one-off way); cold tiles/s on $workers workers >= 1.6x the baseline's"
} >"$out/cold.tsv"
