#!/usr/bin/env bash
# bench/redis_memory.sh BUILD_DIR - Redis's memory under sustained edits
# with the default snapshot policy (--snapshot-every 100000,
# --snapshot-bytes 2 MiB, --snapshot-interval 300 s, --history 7 days, so
# that every edit stays in the snapshots as a record): a primary
# (appendonly yes, appendfsync always) with a replica, two nodes, 16
# clients posting batches of MEM_BATCH edits through both (brushes over a
# 6 km square) in slices of one second until MEM_EDITS edits were
# acknowledged. Every 0.25 s: used_memory, the stream's length, the shared
# snapshot, and the nodes' snapshot lines. Prints one row per snapshot
# cycle, the bound of docs/cluster.md,
#   used_memory <= M0 + 2 f P + (max(B, P / 2) / r + v T) e + R
# (M0 Redis before the load, P the largest snapshot, f what a snapshot
# costs Redis over its bytes, MEMORY USAGE of the shared one at the end
# (1.25 when chunks were 256 KiB), B --snapshot-bytes, r
# the bytes of a batch's record as the stream holds it, e what an entry
# costs Redis, measured before the first trim; v the batches a second, T
# the longest write plus the longest share; R the replication backlog and
# one chunk in flight three times over; no idempotency keys) beside
# the most used_memory seen; the snapshot write and share times at the
# first snapshot of at least 0.9 x 10^5 and 10^6 edits; and the append
# latency p99 of the one-second slices while a snapshot is being written
# (on a node), while one is being sent to Redis, and with neither (median
# over the slices). Figures printed, never asserted.
# Env: MEM_EDITS (1000000), MEM_BATCH (16 edits a batch: 10^6 edits in a few
# minutes), MEM_MAX_S (540), MEM_EVERY, MEM_BYTES, MEM_INTERVAL, MEM_HISTORY
# (the nodes' --snapshot-* and --history; unset: the defaults).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/redis_memory.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"; bin="$build/terrain-server"; here="$(cd "$(dirname "$0")" && pwd)"
command -v redis-server >/dev/null || { echo "bench: redis-server missing" >&2; exit 0; }
edits=${MEM_EDITS:-1000000} max_s=${MEM_MAX_S:-540} batch=${MEM_BATCH:-16}
policy=()
[ -z "${MEM_EVERY:-}" ] || policy+=(--snapshot-every "$MEM_EVERY")
[ -z "${MEM_BYTES:-}" ] || policy+=(--snapshot-bytes "$MEM_BYTES")
[ -z "${MEM_INTERVAL:-}" ] || policy+=(--snapshot-interval "$MEM_INTERVAL")
[ -z "${MEM_HISTORY:-}" ] || policy+=(--history "$MEM_HISTORY")
bytes=${MEM_BYTES:-2097152}
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
		--edit-log "redis://127.0.0.1:$rp" ${policy[@]+"${policy[@]}"} --workers 2 2>"$tmp/$n.log" &
	pids+=("$!")
	for _ in $(seq 1 400); do grep -q listening "$tmp/$n.log" && break; sleep 0.05; done
	ports="$ports${ports:+,}$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/$n.log")"
done
used() { rc INFO memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }
now() { awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }'; }
m0=$(used)
say "redis memory: 16 clients through 2 nodes, $batch edits a batch (snapshot policy: ${policy[*]:-the defaults}), until $edits edits"
t0=$(date +%s.%N)
: >"$tmp/samples"; : >"$tmp/lines"; : >"$tmp/slices"
sampler() {
	while :; do
		e=$(rc HGET terrain:snapshot:meta edits); b=$(rc HGET terrain:snapshot:meta bytes)
		x=$(rc XLEN terrain:log) u=$(used) t=$(now)
		echo "$t ${u:-0} ${x:-0} ${e:-0} ${b:-0}" >>"$tmp/samples"
		for n in a b; do
			grep -n 'snapshot of [0-9]* edits\|snapshot shared\|not shared' "$tmp/$n.log" | sed "s/^/$t $n /" >>"$tmp/lines" || true
		done
		sleep 0.25
	done
}
sampler &
sp=$!; pids+=("$sp")
acked=0
# until MEM_EDITS edits, and a shared snapshot of at least 0.9 x MEM_EDITS
shared() { local e; e=$(rc HGET terrain:snapshot:meta edits); echo "${e:-0}"; }
while [ "$acked" -lt "$edits" ] || [ "$(shared)" -lt $((edits * 9 / 10)) ]; do
	s0=$(now)
	"$build/bench/cluster_load" -l -t 1 -r 3000 -e "$batch" "$ports" 16 memory >"$tmp/slice.out" 2>/dev/null || true
	ok=$(awk '/^sent/ { print $4 }' "$tmp/slice.out") p99=$(awk '/^latency_ms/ { print $5 }' "$tmp/slice.out")
	echo "$s0 $(now) ${ok:-0} ${p99:-0}" >>"$tmp/slices"
	acked=$((acked + ${ok:-0} * batch))
	[ "$(awk -v a="$(now)" -v m="$max_s" 'BEGIN { print (a > m) }')" = 1 ] && break
done
sleep 1 # the last sample
kill -TERM "$sp" 2>/dev/null || true; wait "$sp" 2>/dev/null || true
# r: the bytes of the newest entry's values (a one-edit batch's record)
# e: what an entry costs Redis, the stream's own memory over its length
per=$(rc MEMORY USAGE terrain:log SAMPLES 0) len=$(rc XLEN terrain:log)
per=$(( ${per:-0} / (${len:-0} > 0 ? len : 1) ))
backlog=$(rc CONFIG GET repl-backlog-size | tail -1)
# f: the shared snapshot's cost in Redis over its bytes
f=$(rc EVAL "local k = redis.call('HGET', KEYS[1], 'key') \
	if not k then return '1' end \
	return tostring(redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0') / \
		tonumber(redis.call('HGET', KEYS[1], 'bytes')))" 1 terrain:snapshot:meta)
rec=$(rc EVAL "local e = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1][2] \
	local n = 0 for i = 2, #e, 2 do n = n + string.len(e[i]) end return n" 1 terrain:log)

python3 - "$tmp" "$m0" "$acked" "$bytes" "${rec:-0}" "$batch" "$per" "${backlog:-1048576}" "${f:-1}" <<'EOF'
import re, statistics, sys
tmp, m0, acked, B, rec = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
batch, per, R = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]) + 3 * 327680
f = float(sys.argv[9])
rows = [(float(t), int(u), int(x or 0), int(e), int(b or 0))
        for t, u, x, e, b in (l.split() for l in open(tmp + "/samples"))]
secs = rows[-1][0] if rows else 1
# each node's snapshot lines, stamped when first seen
seen = {}
for l in open(tmp + "/lines"):
    t, n, rest = l.split(" ", 2)
    k = (n, rest.split(":", 1)[0])
    seen.setdefault(k, (float(t), rest))
writes, shares = [], []     # (seen at, edits, seconds)
cuts, skipped = [], 0       # (cut ms, its CPU ms, longest slice ms) on a node's loop; sends the lock spared
for (n, _), (t, rest) in seen.items():
    m = re.search(r"snapshot of (\d+) edits in .* in (\d+) ms", rest)
    if m:
        writes.append((t, int(m.group(1)), int(m.group(2)) / 1e3))
        m = re.search(r"the cut ([\d.]+) ms, ([\d.]+) ms of CPU; \d+ records in slices of at most ([\d.]+) ms"
                      r"(?:, ([\d.]+) ms of CPU)?", rest)
        cuts += [tuple(float(x or 0) for x in m.groups())] if m else []
    skipped += "not shared: another node" in rest
    m = re.search(r"snapshot shared \((\d+) edits, (\d+) bytes in \d+ chunks, ([\d.]+) s\)", rest)
    if m:
        shares.append((t, int(m.group(1)), float(m.group(3))))
wbusy = [(t - s - 0.25, t) for t, _, s in writes]
sbusy = [(t - s - 0.25, t) for t, _, s in shares]
slices = [tuple(map(float, l.split())) for l in open(tmp + "/slices")]
over = lambda a, b, busy: any(x < b and a < y for x, y in busy)
sh = [p for a, b, ok, p in slices if ok and over(a, b, sbusy)]
wr = [p for a, b, ok, p in slices if ok and not over(a, b, sbusy) and over(a, b, wbusy)]
wo = [p for a, b, ok, p in slices if ok and not over(a, b, sbusy + wbusy)]
rec = rec or 90 * batch  # bytes of a batch's record, as read above
cycles, cur = [], None
for t, u, x, e, b in rows:
    if cur is None or e != cur["edits"]:
        cur = {"edits": e, "t": t, "used": u, "len": x, "bytes": b}
        cycles.append(cur)
    cur["used"] = max(cur["used"], u)
    cur["len"] = max(cur["len"], x)
mib = lambda v: f"{v / 1048576:.1f}"
print(f"## 14. Redis memory under sustained edits (bench/redis_memory.sh; {acked} acknowledged edits"
      f" in batches of {batch}, in {secs:.0f} s, {acked / secs:.0f}/s)")
print()
print("| cycle | from s | edits in the shared snapshot | its size, MiB | longest stream, entries | most used_memory, MiB |")
print("| --- | --- | --- | --- | --- | --- |")
for i, c in enumerate(cycles):
    print(f"| {i} | {c['t']:.1f} | {c['edits']} | {mib(c['bytes'])} | {c['len']} | {mib(c['used'])} |")
pmax = max([c["bytes"] for c in cycles] + [0])
lmax = max([c["len"] for c in cycles] + [0])
umax = max([c["used"] for c in cycles] + [m0])
v = acked / batch / secs
T = max([x[2] for x in writes] + [0]) + max([x[2] for x in shares] + [0])
F = max(B, pmax / 2)
bound = m0 + 2 * f * pmax + (F / rec + v * T) * per + R
print()
print(f"M0 {mib(m0)} MiB before the load; e = {per:.0f} bytes per entry (MEMORY USAGE of the stream over its length, at the end);"
      f" P = {mib(pmax)} MiB (the largest shared), f = {f:.3f}; max(B, P / 2) / r = {F:.0f} / {rec} = {F / rec:.0f} entries;"
      f" v T = {v:.0f} batches/s x {T:.2f} s (the longest write plus the longest share) = {v * T:.0f} entries;"
      f" R = {mib(R)} MiB (the backlog, and a chunk three times); longest stream seen {lmax} entries.")
print(f"Bound M0 + 2 f P + (max(B, P / 2) / r + v T) e + R = **{mib(bound)} MiB**; most used_memory seen"
      f" **{mib(umax)} MiB** ({umax / bound:.2f} of the bound) over {len(cycles) - 1} shared snapshots.")
print(f"Untrimmed, the stream would hold all {acked // batch} entries: about {mib(m0 + acked / batch * per)} MiB.")
print()
for n in (10**5, 10**6):
    ws = [x for x in writes if x[1] >= 0.9 * n]
    ss = [x for x in shares if x[1] >= 0.9 * n]
    if ws:
        print(f"Snapshot of {ws[0][1]} edits (the first of at least 0.9 x {n}): written in {ws[0][2]:.2f} s"
              + (f", shared in {ss[0][2]:.2f} s ({ss[0][1]} edits)" if ss else ", not shared yet"))
    else:
        print(f"No snapshot of {n} edits or more in this run (MEM_EDITS={n} for it)")
if writes:
    print(f"Writes: {len(writes)}, longest {max(x[2] for x in writes):.2f} s; shares: {len(shares)}, longest"
          f" {max([x[2] for x in shares] + [0]):.2f} s")
    if cuts:
        print(f"On a node's loop: the cut at most {max(c[0] for c in cuts):.1f} ms ({max(c[1] for c in cuts):.1f} ms"
              f" of CPU), the records' slices at most {max(c[2] for c in cuts):.1f} ms"
              f" ({max(c[3] for c in cuts):.1f} ms of CPU)")
    print(f"Snapshots not sent because the other node was sending one: {skipped}")
med = lambda v: f"{statistics.median(v):.2f} ms over {len(v)} slices" if v else "no slice"
print(f"Append p99 (one-second slices, median): while a snapshot is sent to Redis {med(sh)};"
      f" while one is written (none sent) {med(wr)}; with neither {med(wo)}")
EOF
