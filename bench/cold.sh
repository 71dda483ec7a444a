#!/usr/bin/env bash
# bench/cold.sh BUILD_DIR - section 12 of `make bench` (issues 20 and 40):
# what the server adds to a cold tile, the server and the same tiles in
# process measured in the same rounds.
#
# COLD_ROUNDS rounds (5), each of:
#   - in process: BUILD_DIR/bench/cold_bench (built by make) makes the
#     COLD_TILES LOD-0 `default` tiles once each, generate + encode + zstd,
#     one-off calls (section 2's way) and a kept workspace (a server
#     worker's way): this thread's CPU time per tile, pinned to BENCH_CPU
#   - server: a fresh BUILD_DIR/terrain-server --workers COLD_WORKERS; curl
#     first fetches COLD_WARMUP other tiles (the workers' first tiles, which
#     make their workspaces, as cold_bench's warm-up tile does), then every
#     one of the same COLD_TILES tiles once over loopback (Accept-Encoding:
#     zstd, 16 keep-alive connections): server CPU per tile (the sum of
#     /proc/PID/task/*/schedstat run times before and after; the main,
#     event-loop thread's part on its own, and the workers' part against
#     the in-process workspace way), kernel share (stime of utime + stime),
#     minor faults per tile, tiles/s (wall). Every tile must answer 200 with
#     X-Cache: miss, and the bodies must add up to the bytes cold_bench
#     made: the same tiles, format and zstd parameters, really cold.
#   - anchor: COLD_BASELINE, a terrain-server built from another tree (the
#     tree before a change), run in the same rounds; absent: its rows say so
# The two sides alternate: odd rounds run the server(s) first, even rounds
# in process first (and the baseline before this server). Each round's ratio is its own server CPU over its own
# in-process time; the tables give medians over the rounds, and the load
# average (/proc/loadavg) each round started at.
#
# Bullet lines on stdout; the tables as TSV (bench.h's form) in
# BUILD_DIR/bench/cold_inproc.tsv, cold.tsv and cold_rounds.tsv, which
# bench/run.sh prints and reads for its summary. Figures are printed,
# never asserted.
#
# Env (defaults): COLD_TILES (400), COLD_ROUNDS (5), COLD_WORKERS (2),
# COLD_WARMUP (16), COLD_CACHE_MB (256), COLD_BASELINE (none), BENCH_CPU
# (1: the CPU cold_bench is pinned to).
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
rounds="${COLD_ROUNDS:-5}"
workers="${COLD_WORKERS:-2}"
warm="${COLD_WARMUP:-16}"
cache_mb="${COLD_CACHE_MB:-256}"
base="${COLD_BASELINE:-}"
cpu="${BENCH_CPU-1}"
seed=918273645 cx0=3000000 cz0=-3000000 width=20
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SAY_AS="cold bench"
if [ -x "$server" ]; then bench_make "$build" bench/cold_bench; fi
if [ ! -x "$server" ] || [ ! -x "$inproc" ]; then
	echo "cold bench: need $server and $inproc" >&2
	exit 1
fi
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
	rm -rf "$W/$2.data"
	"$1" serve --port 0 --workers "$workers" --cache-mb "$cache_mb" --data-dir "$W/$2.data" \
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
load1() { cut -d' ' -f1 /proc/loadavg; }

# urls PORT CZ0 COUNT: curl's config for COUNT tiles from (cx0, CZ0), width per column
urls() {
	awk -v n="$3" -v p="$1" -v s="$seed" -v x="$cx0" -v z="$2" -v w="$width" 'BEGIN {
		for (i = 0; i < n; i++) printf "url = \"http://127.0.0.1:%s/v1/worlds/%s/chunks/0/%d/%d\"\noutput = \"/dev/null\"\n",
			p, s, x + int(i / w), z + i % w }'
}
fetch() {
	curl -sS --parallel --parallel-immediate --parallel-max 16 --max-time 120 -H 'Accept-Encoding: zstd' \
		-w '%{http_code} %{size_download} %header{x-cache}\n' -K "$1" 2>"$W/curl.err" || true
}

# server BINARY NAME: one round of one server; prints "cpu_ms_per_tile tiles_per_s
# faults_per_tile kernel_share loop_ms_per_tile body_bytes_per_tile"
server_round() {
	local bin=$1 name=$2 ns0 ns1 t0 t1 f0 f1 u0 u1 s0 s1 l0 l1 ok
	start "$bin" "$name" || return 1
	urls "$PORT" "$cz0" "$n" >"$W/$name.cfg"
	# the warm-up: other chunks (a column 1000 chunks away), never measured
	urls "$PORT" "$((cz0 - 1000))" "$warm" >"$W/$name.warm"
	curl -fsS -o /dev/null --max-time 30 "http://127.0.0.1:$PORT/healthz"
	fetch "$W/$name.warm" >"$W/$name.warm.codes"
	ns0=$(run_ns "$PID"); l0=$(loop_ns "$PID"); f0=$(stat_field "$PID" 10); u0=$(stat_field "$PID" 14); s0=$(stat_field "$PID" 15); t0=$(now)
	fetch "$W/$name.cfg" >"$W/$name.codes"
	t1=$(now); ns1=$(run_ns "$PID"); l1=$(loop_ns "$PID"); f1=$(stat_field "$PID" 10); u1=$(stat_field "$PID" 14); s1=$(stat_field "$PID" 15)
	stop "$PID"
	ok=$(awk '$1 == 200 && tolower($3) == "miss"' "$W/$name.codes" | wc -l)
	if [ "$ok" != "$n" ]; then
		say "$name: not every tile answered 200, X-Cache: miss: $(awk '{ print $1, $3 }' "$W/$name.codes" |
			sort | uniq -c | tr '\n' ' ')$(head -c 300 "$W/curl.err")"
		return 1
	fi
	awk -v n="$n" -v ns="$((ns1 - ns0))" -v dt="$(echo "$t1 - $t0" | bc)" -v f="$((f1 - f0))" \
		-v u="$((u1 - u0))" -v s="$((s1 - s0))" -v l="$((l1 - l0))" '
		{ bytes += $2 }
		END { printf "%.3f %.0f %.1f %.2f %.3f %.1f\n", ns / 1e6 / n, n / dt, f / n,
			((u + s) > 0 ? s / (u + s) : 0), l / 1e6 / n, bytes / n }' "$W/$name.codes"
}

pin=()
if [ -n "$cpu" ] && command -v taskset >/dev/null && taskset -c "$cpu" true 2>/dev/null; then pin=(taskset -c "$cpu"); fi

# inproc_round: one pass of each way over the tiles; prints "one_off_ms kept_ms
# one_off_faults kept_faults bytes_per_tile"
inproc_round() {
	"${pin[@]}" "$inproc" "$seed" "$cx0" "$cz0" "$n" "$width" 1 >"$W/inproc.tsv"
	awk -F '\t' 'NR == 2 { o = $2; of = $5; b = $6 } NR == 3 { k = $2; kf = $5 }
		END { print o, k, of, kf, b }' "$W/inproc.tsv"
}

names=(this); bins=("$server")
[ -z "$base" ] || { names=(this baseline); bins=("$server" "$base"); }
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
# $W/rounds: "r load1 order in_one in_kept in_one_faults in_kept_faults in_bytes", then
# per server "name cpu tps faults kernel loop bytes"
: >"$W/rounds"
# run_servers: round r of every server, appended to srv (with a baseline,
# in turns: this first in odd rounds, the baseline first in even ones)
run_servers() {
	local i res turn=("${!names[@]}")
	if [ $((r % 2)) = 0 ] && [ ${#names[@]} = 2 ]; then turn=(1 0); fi
	for i in "${turn[@]}"; do
		say "round $r: ${names[$i]} (${bins[$i]}), $workers workers, $n cold tiles (load $(load1))"
		res=$(server_round "${bins[$i]}" "${names[$i]}") || { say "round $r of ${names[$i]} failed"; exit 1; }
		srv="$srv ${names[$i]} $res"
	done
}
for r in $(seq "$rounds"); do
	l=$(load1)
	srv=""
	if [ $((r % 2)) = 1 ]; then
		run_servers
		say "round $r: in process, $n tiles each way (load $(load1))"
		ip=$(inproc_round); order="servers first"
	else
		say "round $r: in process, $n tiles each way (load $(load1))"
		ip=$(inproc_round); order="in process first"
		run_servers
	fi
	echo "$r $l ${order// /_} $ip$srv" >>"$W/rounds"
done

# field NAME K: the Kth figure (1 = cpu) of server NAME in a rounds line, as awk code
# shellcheck disable=SC2016  # awk code
srv_awk='function srv(name, k,   i) { for (i = 9; i <= NF; i += 7) if ($i == name) return $(i + k); return "" }'
# shellcheck disable=SC2119  # median_mean reads stdin here
med() { awk "$srv_awk"' { print '"$1"' }' "$W/rounds" | median_mean; }

echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $load_start at the start and" \
	"$(cut -d' ' -f1-3 /proc/loadavg) at the end; $n LOD-0 \`default\` tiles of world $seed" \
	"at ($cx0 + i / $width, $cz0 + i % $width), $rounds rounds"
echo "- this: \`${server}\`; baseline: \`${base:-none (COLD_BASELINE: a terrain-server of the tree before)}\`"
echo

# the same work: every server's bodies add up to cold_bench's bytes, every round
bodies=$(awk '{ for (i = 9; i <= NF; i += 7) if ($(i + 6) != $8) bad++; b = $8 }
	END { if (bad) printf "%d servers'"'"' rounds sent other bytes than cold_bench made (not the same work)", bad
	      else printf "every round, the bytes cold_bench made (%s a tile): the same tiles, format and zstd", b }' "$W/rounds")
way_names=([1]="in process, one-off calls (as section 2)" [2]="in process, kept workspace (a server worker)")
{
	printf 'way\tms per tile\tmin\tmax\tminor faults per tile\tcold tiles/s per core\n'
	for k in 1 2; do
		m=$(med "\$$((3 + k))")
		awk -v k="$k" -v m="$m" -v name="${way_names[$k]}" '
			{ v[NR] = $(3 + k); f += $(5 + k) }
			END {
				lo = v[1]; hi = v[1]
				for (i = 1; i <= NR; i++) { lo = v[i] < lo ? v[i] : lo; hi = v[i] > hi ? v[i] : hi }
				printf "%s\t%.3f\t%.3f\t%.3f\t%.1f\t%.0f\n", name, m, lo, hi, f / NR, 1000 / m
			}' "$W/rounds"
	done
	echo "note: every tile once a round, $rounds rounds interleaved with the server's (below); this thread's" \
		"CPU time, pinned: ${pin[*]:-no pinning}; cold tiles/s per core = 1000 / ms per tile"
} >"$out/cold_inproc.tsv"

{
	printf 'server\tCPU ms per cold tile\t/ in process, one-off\t/ in process, kept workspace\tof which the loop thread, ms\tworkers / in process, kept workspace\tkernel share\tminor faults per tile\tcold tiles/s (%s workers)\t/ baseline\tcold tiles/s per core\n' "$workers"
	for s in "${names[@]}"; do
		cpu_ms=$(med "srv(\"$s\", 1)"); tps=$(med "srv(\"$s\", 2)"); flt=$(med "srv(\"$s\", 3)")
		ker=$(med "srv(\"$s\", 4)"); loop=$(med "srv(\"$s\", 5)")
		r1=$(med "srv(\"$s\", 1) / \$4"); r2=$(med "srv(\"$s\", 1) / \$5")
		rw=$(med "(srv(\"$s\", 1) - srv(\"$s\", 5)) / \$5")
		btps=""
		[ -z "$base" ] || btps=$(med 'srv("this", 2) / srv("baseline", 2)')
		awk -v s="$s" -v c="$cpu_ms" -v r1="$r1" -v r2="$r2" -v rw="$rw" -v t="$tps" -v f="$flt" \
			-v ks="$ker" -v b="$btps" -v l="$loop" 'BEGIN {
			printf "%s\t%.3f\t%.2fx\t%.2fx\t%.3f\t%.2fx\t%.0f%%\t%.1f\t%.0f\t%s\t%.0f\n", s, c, r1, r2, l, rw,
				100 * ks, f, t, (s == "this" && b != "") ? sprintf("%.2fx", b) : "n/a", 1000 / c }'
	done
	echo "note: medians of $rounds rounds, each a fresh server (cache $cache_mb MiB, empty: every tile goes into new" \
		"memory), $warm warm-up tiles of other chunks first, then the $n tiles once each over 16 parallel keep-alive" \
		"connections, curl on the same CPUs; ratios: the median of each round's server CPU over that round's" \
		"in-process time; CPU = all threads' run time (schedstat); kernel share and faults from /proc/PID/stat"
	echo "note: bodies: $bodies"
	echo "note: the loop thread is the server's main thread (HTTP, cache, socket writes: mostly kernel time for" \
		"loopback TCP); workers: the rest, the threads that generate, encode and compress; cold tiles/s per" \
		"core = 1000 / CPU ms per cold tile"
	echo "note: targets: server CPU per cold tile <= 1.15x the in-process generate + encode + zstd time" \
		"(section 2's one-off way; issues 20, 40); cold tiles/s on $workers workers >= 1.6x the baseline's (issue 20)"
} >"$out/cold.tsv"

{
	printf 'round\tload (1 min)\torder\tin process, one-off, ms\tkept workspace, ms'
	for s in "${names[@]}"; do printf '\t%s: CPU ms\t/ one-off\tloop thread, ms\ttiles/s' "$s"; done
	printf '\n'
	awk -v names="${names[*]}" "$srv_awk"' {
		printf "%s\t%s\t%s\t%.3f\t%.3f", $1, $2, $3, $4, $5
		ns = split(names, nm, " ")
		for (j = 1; j <= ns; j++)
			printf "\t%.3f\t%.2fx\t%.3f\t%.0f", srv(nm[j], 1), srv(nm[j], 1) / $4, srv(nm[j], 5), srv(nm[j], 2)
		printf "\n" }' "$W/rounds" | tr '_' ' '
	echo "note: each round as measured, in its order$([ -z "$base" ] || echo " (this server before the baseline in odd rounds, after it in even ones)");" \
		"load: /proc/loadavg's 1-minute figure as the round began"
} >"$out/cold_rounds.tsv"
