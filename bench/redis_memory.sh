#!/usr/bin/env bash
# bench/redis_memory.sh BUILD_DIR - Redis's memory under sustained edits
# with snapshots shared and the log trimmed: a primary (appendonly yes,
# appendfsync always) with a replica, two nodes with --snapshot-every N,
# 16 clients posting one-edit batches through both (brushes over a 6 km
# square, about 550 chunks) until at least CYCLES snapshots were shared.
# Every 0.25 s: used_memory, the stream's length, the shared snapshot.
# Prints one row per snapshot cycle and the bound of docs/cluster.md,
#   used_memory <= M0 + 2 S + L e
# (M0 Redis before the load, S the largest snapshot, L the longest stream
# seen, e the bytes an entry costs, measured before the first trim), beside
# what the stream would hold untrimmed. Figures printed, never asserted.
# Env: MEM_EVERY (20000), MEM_CYCLES (12), MEM_MAX_S (300).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/redis_memory.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"; bin="$build/terrain-server"; here="$(cd "$(dirname "$0")" && pwd)"
command -v redis-server >/dev/null || { echo "bench: redis-server missing" >&2; exit 0; }
every=${MEM_EVERY:-20000} cycles=${MEM_CYCLES:-12} max_s=${MEM_MAX_S:-300}
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/redis-mem.XXXXXX")"
trap cleanup EXIT
bench_make "$build" bench/cluster_load
redis_up() { # NAME PORT [ARGS]
	mkdir -p "$tmp/$1"
	redis-server --port "$2" --bind 127.0.0.1 --dir "$tmp/$1" --appendonly yes --appendfsync always \
		--save "" --repl-diskless-sync-delay 0 --replica-serve-stale-data no \
		--logfile "$tmp/$1.log" "${@:3}" &
	pids+=("$!")
	for _ in $(seq 1 100); do redis-cli -p "$2" PING >/dev/null 2>&1 && return; sleep 0.05; done
	say "redis $1 did not start"; exit 1
}
rp=$(free_port) rr=$(free_port)
redis_up primary "$rp"
redis_up replica "$rr" --replicaof 127.0.0.1 "$rp"
for _ in $(seq 1 100); do redis-cli -p "$rp" INFO replication | grep -q state=online && break; sleep 0.1; done
rc() { redis-cli -p "$rp" "$@" 2>/dev/null; }
ports=""
for n in a b; do
	TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0 "$bin" serve --port 0 --data-dir "$tmp/$n" \
		--edit-log "redis://127.0.0.1:$rp" --snapshot-every "$every" --workers 2 2>"$tmp/$n.log" &
	pids+=("$!")
	for _ in $(seq 1 400); do grep -q listening "$tmp/$n.log" && break; sleep 0.05; done
	ports="$ports${ports:+,}$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/$n.log")"
done
used() { rc INFO memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }
m0=$(used)
say "redis memory: 16 clients through 2 nodes, a snapshot every $every edits, until $cycles are shared"
"$build/bench/cluster_load" -t "$max_s" -r 3000 "$ports" 16 memory >"$tmp/load.out" &
lp=$!; pids+=("$lp")
t0=$(date +%s.%N)
: >"$tmp/samples"
while kill -0 "$lp" 2>/dev/null; do
	e=$(rc HGET terrain:snapshot:meta edits); b=$(rc HGET terrain:snapshot:meta bytes)
	x=$(rc XLEN terrain:log) u=$(used)
	echo "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }') ${u:-0} ${x:-0} ${e:-0} ${b:-0}" >>"$tmp/samples"
	[ "$(awk '{ print $4 }' "$tmp/samples" | uniq | grep -vc '^0$')" -gt "$cycles" ] && break
	sleep 0.25
done
kill -TERM "$lp" 2>/dev/null || true; wait "$lp" 2>/dev/null || true
acked=$(awk '{ print $4 }' "$tmp/load.out")
secs=$(awk '{ print $12 }' "$tmp/load.out")

python3 - "$tmp/samples" "$m0" "$acked" "$secs" "$every" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1])]
m0, acked, secs, every = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rows = [(float(t), int(u), int(x or 0), int(e), int(b or 0)) for t, u, x, e, b in rows]
# bytes per stream entry: growth before the first snapshot was shared
pre = [r for r in rows if r[3] == 0 and r[2] > 1000]
per = (pre[-1][1] - m0) / pre[-1][2] if pre else 130
cycles, cur = [], None
for t, u, x, e, b in rows:
    if cur is None or e != cur["edits"]:
        cur = {"edits": e, "t": t, "used": u, "len": x, "bytes": b}
        cycles.append(cur)
    cur["used"] = max(cur["used"], u)
    cur["len"] = max(cur["len"], x)
mib = lambda v: f"{v / 1048576:.1f}"
print(f"## Redis memory under sustained edits (bench/redis_memory.sh; --snapshot-every {every};"
      f" {acked} acknowledged edits in {secs:.0f} s, {acked / secs:.0f}/s)")
print()
print("| cycle | from s | edits in the shared snapshot | its size, MiB | longest stream, entries | most used_memory, MiB |")
print("| --- | --- | --- | --- | --- | --- |")
for i, c in enumerate(cycles):
    print(f"| {i} | {c['t']:.1f} | {c['edits']} | {mib(c['bytes'])} | {c['len']} | {mib(c['used'])} |")
full = [c for c in cycles[1:]]
smax = max([c["bytes"] for c in cycles] + [0])
lmax = max([c["len"] for c in cycles] + [0])
umax = max([c["used"] for c in cycles] + [m0])
half = len(full) // 2
first = max([c["used"] for c in full[:half]] or [0])
second = max([c["used"] for c in full[half:]] or [0])
bound = m0 + 2 * smax + lmax * per
print()
print(f"M0 {mib(m0)} MiB before the load; e = {per:.0f} bytes per entry (measured before the first trim);"
      f" S = {mib(smax)} MiB; L = {lmax} entries.")
print(f"Bound M0 + 2 S + L e = **{mib(bound)} MiB**; most used_memory seen **{mib(umax)} MiB**"
      f" ({umax / bound:.2f} of the bound). Most used in the first half of the cycles"
      f" {mib(first)} MiB, in the second {mib(second)} MiB ({(second / first if first else 0):.2f}x).")
print(f"Untrimmed, the stream would hold all {acked} entries: about {mib(m0 + acked * per)} MiB"
      f" ({(m0 + acked * per) / umax:.1f}x the most used here).")
EOF
