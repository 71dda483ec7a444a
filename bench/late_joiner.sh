#!/usr/bin/env bash
# bench/late_joiner.sh BUILD_DIR - a node joining a shared Redis log after
# N edits, and what sharing a snapshot costs the appends.
#
# One redis-server on loopback (appendonly yes, appendfsync always), node A
# with the default --snapshot-every (100000): it takes N edits
# (bench/edit_load.c: 16 clients, batches of 256, brushes of 1-8 m over a
# 16 km square, 4,096 chunks, as bench/snapshots.sh), sharing a snapshot
# every cycle, the log trimmed below the one before. Once the last
# snapshot is shared, node B starts on an empty data folder: how soon it
# listens and its RSS (targets at 10^7: 2 s, 200 MiB), beside Redis's
# used_memory and the stream's length then.
#
# Then, on the largest N, append latency while a snapshot is shared:
# node C (--snapshot-every 1, data in /dev/shm so that its snapshot
# writes do not load the disk Redis fsyncs to) writes and shares a
# snapshot after every edit, back to back, while one client posts one edit
# at a time to node D (which shares nothing) and then to C itself: p50 /
# p99 / p999 beside the same client on D with no share going on, and
# beside D while redis-cli sends a value of the snapshot's size in one SET
# (what a snapshot in one command costs Redis and whoever is behind it).
# Prints markdown tables. Env: LATE_EDITS ("1000000 10000000"), PROBE_S (8).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/late_joiner.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"; bin="$build/terrain-server"; here="$(cd "$(dirname "$0")" && pwd)"
command -v redis-server >/dev/null || { echo "bench: redis-server missing" >&2; exit 0; }
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/late.XXXXXX")"; shm="$(mktemp -d /dev/shm/late.XXXXXX)"; tmp_dirs=("$shm")
trap cleanup EXIT
bench_make "$build" bench/edit_load bench/cluster_load
load="$build/bench"
listening() { local i; for i in $(seq 1 30000); do grep -q listening "$1" && return 0; sleep 0.01; done; return 1; }
port_of() { sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f MiB", b / 1048576 }'; }
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
probe_s=${PROBE_S:-8}
sizes=(${LATE_EDITS:-1000000 10000000})
rows=() probe=()
for n in "${sizes[@]}"; do
	rp=$(free_port); d="$tmp/$n"; mkdir -p "$d"
	redis-server --port "$rp" --bind 127.0.0.1 --dir "$d" --appendonly yes --appendfsync always \
		--save "" --logfile "$d/redis.log" & pids+=("$!")
	for i in $(seq 1 50); do [ "$(redis-cli -p "$rp" PING 2>/dev/null)" = PONG ] && break; sleep 0.1; done
	rc() { redis-cli -p "$rp" "$@" 2>/dev/null; }
	log="redis://127.0.0.1:$rp?replicas=0"
	"$bin" serve --port 0 --data-dir "$d/a" --edit-log "$log" --bake-after 0 2>"$d/a.log" &
	pids+=("$!"); listening "$d/a.log"; ap=$(port_of "$d/a.log")
	say "late joiner: $n edits into node A"
	t0=$(date +%s.%N)
	"$load/edit_load" "$ap" 16 $((n / 256)) 256 late 16000 >/dev/null
	posted=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f s", a - b }')
	# what A holds (posts that met a Redis stall got 503: the load does not retry)
	acked=$(curl -s "http://127.0.0.1:$ap/v1/worlds/late" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p')
	# the last snapshot shared: it holds all but the last cycle's edits
	held() { rc HGET terrain:snapshot:meta edits; }
	for i in $(seq 1 1800); do
		h=$(held); [ -n "$h" ] && [ "$h" -ge $((acked - 100000)) ] && break
		sleep 0.2
	done
	sleep 2
	shares=$(grep -c 'snapshot shared' "$d/a.log" || true)
	used=$(rc INFO memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')
	xlen=$(rc XLEN terrain:log) sbytes=$(rc HGET terrain:snapshot:meta bytes)
	t0=$(date +%s.%N)
	"$bin" serve --port 0 --data-dir "$d/b" --edit-log "$log" --bake-after 0 2>"$d/b.log" &
	b=$!; pids+=("$b"); listening "$d/b.log"
	secs=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f s", a - b }')
	rss=$(awk '/VmRSS/ { printf "%d MiB", $2 / 1024 }' "/proc/$b/status")
	skipped=$(sed -n 's/.*replayed \([0-9]*\) edits.*(\([0-9]*\) edits from a snapshot.*/\1 \2/p' "$d/b.log" |
		awk '{ print $1 - $2 }')
	rows+=("| $acked | $posted | $shares | $(mib "$used") | $xlen ($(held) in the snapshot, $(mib "$sbytes")) | **$secs** | **$rss** | ${skipped:-?} |")
	kill -TERM "$b"; wait "$b" || true
	[ "$n" = "${sizes[-1]}" ] || { kill -KILL "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true; pids=(); continue; }

	# ---- append latency while snapshots are shared, on the largest world
	say "late joiner: append latency while node C shares its snapshot ($(mib "$sbytes")), ${probe_s} s a probe"
	"$bin" serve --port 0 --data-dir "$d/d" --edit-log "$log" --snapshot-every 0 --bake-after 0 2>"$d/d.log" &
	pids+=("$!"); listening "$d/d.log"; dp=$(port_of "$d/d.log")
	lat() { { "$load/cluster_load" -l -r 100 -t "$probe_s" "$1" 1 "$2" || true; } | sed -n 's/^latency_ms //p'; }
	"$bin" serve --port 0 --data-dir "$shm/c" --edit-log "$log" --snapshot-every 1 --bake-after 0 2>"$d/c.log" &
	cpid=$!; pids+=("$cpid"); listening "$d/c.log"; cp=$(port_of "$d/c.log")
	head -c "$sbytes" /dev/zero | tr '\0' s >"$tmp/big"
	shared() { grep -c 'snapshot shared' "$d/c.log" || true; }
	# three rounds of: D quiet; D while C shares (C snapshots after each
	# edit of a feeding client, so one share follows another); C's own
	# appends then; D while one SET of the snapshot's size goes over and over
	for round in 1 2 3; do
		q[$round]=$(lat "$dp" probe-quiet)
		"$load/cluster_load" -r 100 -t $((2 * probe_s + 60)) -w 200 "$cp" 1 probe-feed >/dev/null &
		fp=$!; pids+=("$fp")
		s0=$(shared)
		for i in $(seq 1 600); do [ "$(shared)" -gt "$s0" ] && break; sleep 0.1; done
		s0=$(shared)
		dur[$round]=$(lat "$dp" probe-during)
		s1=$(shared)
		own[$round]=$(lat "$cp" probe-own)
		s2=$(shared)
		kill -TERM "$fp" 2>/dev/null; wait "$fp" 2>/dev/null || true
		nd[$round]=$((s1 - s0)) no[$round]=$((s2 - s1))
	done
	# last: its values bloat the AOF, whose rewrites would load the rounds above
	for round in 1 2 3; do
		( while :; do redis-cli -p "$rp" -x SET bench:big <"$tmp/big" >/dev/null; done ) &
		sp=$!; pids+=("$sp")
		sleep 0.5
		one[$round]=$(lat "$dp" probe-set)
		kill -KILL "$sp" 2>/dev/null; wait "$sp" 2>/dev/null || true
		redis-cli -p "$rp" DEL bench:big >/dev/null
	done
	kill -TERM "$cpid" 2>/dev/null; wait "$cpid" 2>/dev/null || true
	share_s=$(sed -n 's/.*snapshot shared (.* in [0-9]* chunks, \([0-9.]*\) s).*/\1/p' "$d/c.log" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "%s-%s s", v[1], v[NR] }')
	rounds() { local a=("$@"); printf '%s; ' "${a[@]}" | sed 's/; $//'; }
	probe+=("| node D, no snapshot being shared | $(rounds "${q[@]}") |")
	probe+=("| node D, while node C shares (shares during the probes: ${nd[*]}; each took ${share_s:-?}) | $(rounds "${dur[@]}") |")
	probe+=("| node C, its own appends while it shares (shares: ${no[*]}) | $(rounds "${own[@]}") |")
	probe+=("| anchor: node D while redis-cli sends one SET of $(mib "$sbytes"), over and over | $(rounds "${one[@]}") |")
done

echo "## 14. Late joiner on a shared Redis log (bench/late_joiner.sh, $(date -u +%Y-%m-%d), $(nproc) cores)"
echo
echo "| edits acknowledged | posted in | snapshots shared | Redis used_memory then | stream entries | late joiner listening after | its RSS | edits it replayed from the stream |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
echo
echo "Targets at 10^7 edits: listening within 2 s, under 200 MiB. Before the stream was trimmed"
echo "and the snapshot shared in chunks, the joiner read the whole stream: 9.1 s, 679 MiB at 10^7."
echo
echo "Append latency, one client posting one edit at a time, ${probe_s} s a probe, three rounds"
echo "(ms: p50 p99 p999 max; the machine is shared, so compare within a round):"
echo
echo "| probe | latency |"
echo "| --- | --- |"
printf '%s\n' "${probe[@]}"
exit 0
