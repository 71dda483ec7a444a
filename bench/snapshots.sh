#!/usr/bin/env bash
# bench/snapshots.sh BUILD_DIR - start-up and memory with a long history:
# a log of N edits (bench/mklog.c: raise brushes of 1-8 m over a 16 km
# square, 4,096 chunks, batches of 256) replayed whole; the snapshot the
# server then writes in the background; start-up from the snapshot plus
# the log (every batch skipped); start-up after --compact-log. Prints one
# markdown table (also BUILD_DIR/bench/snapshots-results.md); nothing is
# asserted.
#
# Env: SNAP_EDITS (space-separated counts, default "1000000 10000000").
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: bench/snapshots.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
bin="$build/terrain-server"
out="$build/bench"
counts="${SNAP_EDITS:-1000000 10000000}"
[ -x "$bin" ] || { echo "bench: $bin missing: make BUILD=$1 all" >&2; exit 1; }
mkdir -p "$out"
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/snap-bench.XXXXXX")"
trap cleanup EXIT

bench_make "$build" bench/mklog

port=""
start() { # DIR ARGS...: start and wait until listening; sets spid, port, secs, slog
	local dir=$1 t0 i
	shift
	slog="$tmp/server.$RANDOM.log"
	t0=$(date +%s.%N)
	TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0 "$bin" serve --bind 127.0.0.1 --port 0 \
		--data-dir "$dir" --bake-after 0 "$@" 2>"$slog" &
	spid=$!
	for i in $(seq 1 30000); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$slog")
		if [ -n "$port" ]; then
			secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
			return 0
		fi
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.01
	done
	say "server did not start:"; cat "$slog" >&2; exit 1
}
stop() { kill -TERM "$spid"; wait "$spid" || true; spid=""; }
rss() { awk '/VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$spid/status"; }
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.0f", b / 1048576 }'; }

rows=()
for n in $counts; do
	d="$tmp/d$n"
	say "$n edits: writing the log"
	"$out/mklog" "$d" "$n" 16000
	log_mb=$(mib "$d/edits.log")
	start "$d" --snapshot-every 1
	replay_s=$secs replay_rss=$(rss)
	say "$n edits: replayed in $replay_s s; one edit more starts a snapshot"
	curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
		--data-binary '{"edits":[{"op":"raise","x":1,"z":1,"radius":4,"strength":1}]}' \
		"http://127.0.0.1:$port/v1/worlds/replay/edits"
	for i in $(seq 1 6000); do
		[ "$(metric terrain_snapshots_written_total)" = 1 ] && break
		sleep 0.1
	done
	snap_ms=$(metric terrain_snapshot_write_seconds | awk '{ printf "%.0f", $1 * 1000 }')
	snap_mb=$(mib "$d/snapshot")
	stop
	start "$d" --snapshot-every 0
	from_s=$secs from_rss=$(rss) load_ms=$(metric terrain_snapshot_load_seconds | awk '{ printf "%.0f", $1 * 1000 }')
	stop
	start "$d" --snapshot-every 0 --compact-log 1
	stop
	start "$d" --snapshot-every 0
	comp_s=$secs comp_rss=$(rss) comp_kb=$(( $(stat -c %s "$d/edits.log") / 1024 ))
	stop
	rows+=("| $n | $log_mb MiB | $replay_s s, $replay_rss MiB | $snap_ms ms, $snap_mb MiB | $from_s s ($load_ms ms loading it), $from_rss MiB | $comp_s s, $comp_rss MiB ($comp_kb KiB of log) |")
	rm -rf "$d"
done

{
	echo "## 10. Snapshots (bench/snapshots.sh, $(date -u +%Y-%m-%d), $(nproc) cores, --bake-after 0)"
	echo
	echo "| edits | log | start-up replaying the whole log: time, RSS | snapshot written in the background | start-up from the snapshot + whole log | start-up after --compact-log |"
	echo "| --- | --- | --- | --- | --- | --- |"
	printf '%s\n' "${rows[@]}"
	echo
	echo "Edits: raise brushes of 1-8 m at random over a 16 km square (4,096 chunks of 256 m)."
	echo "Times are to the listening line, which comes after the start-up self-check."
} | tee "$out/snapshots-results.md"
