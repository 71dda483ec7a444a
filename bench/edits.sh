#!/usr/bin/env bash
# bench/edits.sh BUILD_DIR - durable edits: acknowledged edits/s with group
# commit, beside Redis with appendfsync always measured in the same run; the
# cold latency of a tile with 1,000 edits on its chunk; and the start-up
# time of a server replaying 1,000,000 logged edits. Prints one markdown
# table (also BUILD_DIR/bench/edits-results.md); figures are never
# asserted. Needs BUILD_DIR/terrain-server and curl; the Redis anchor needs
# redis-server and redis-benchmark (skipped without them). About a minute.
#
# Env: EDITS_N (batches per load run, 20000), REPLAY_EDITS (1000000).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: bench/edits.sh BUILD_DIR   (after: make BUILD=BUILD_DIR all)" >&2
	exit 2
fi
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$build/bench"
bin="$build/terrain-server"
n="${EDITS_N:-20000}"
replay_edits="${REPLAY_EDITS:-1000000}"
[ -x "$bin" ] || { echo "bench: $bin missing: make BUILD=$1 all" >&2; exit 1; }
mkdir -p "$out"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/edits-bench.XXXXXX")"
trap cleanup EXIT

# ---------------------------------------------------------------- the loader
# edit_load PORT CLIENTS BATCHES EDITS_PER_BATCH WORLD (bench/edit_load.c):
# CLIENTS kept-alive connections driven by one epoll thread, as
# redis-benchmark drives Redis; each waits for its answer before posting the
# next batch, so every edit counted was acknowledged (in the fsync'd log).
bench_make "$build" bench/edit_load

# ---------------------------------------------------------------- servers
port=""
start_server() { # DATA_DIR: starts; sets port, spid, slog and started_s (to listening)
	local log="$tmp/server.$RANDOM.log" t0 i
	t0=$(date +%s.%N)
	TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0 "$bin" serve --bind 127.0.0.1 --port 0 --data-dir "$1" 2>"$log" &
	spid=$!
	pids+=("$spid")
	slog=$log
	for i in $(seq 1 6000); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
		if [ -n "$port" ]; then
			started_s=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
			return 0
		fi
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.01
	done
	say "server did not start:"; cat "$log" >&2; exit 1
}
stop_server() { kill -TERM "$spid"; wait "$spid" || true; }
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
load() { # CLIENTS BATCHES PER_BATCH WORLD -> "edits/s fsyncs edits"
	local c0 c1 r
	c0=$(metric terrain_wal_commits_total)
	r=$("$out/edit_load" "$port" "$@")
	c1=$(metric terrain_wal_commits_total)
	awk -v r="$r" -v c=$((c1 - c0)) 'BEGIN { split(r, f, " ");
		printf "%.0f %d %d\n", f[2] / f[6], c, f[2] }'
}

# ---------------------------------------------------------------- Redis, same machine, same run
have_redis=0
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	have_redis=1
	rport=""
	for p in $(shuf -i 20000-60000 -n 50); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then rport=$p; break; fi
	done
	mkdir -p "$tmp/redis"
	redis-server --bind 127.0.0.1 --port "$rport" --dir "$tmp/redis" --appendonly yes \
		--appendfsync always --save '' --daemonize no >"$tmp/redis.log" 2>&1 &
	pids+=("$!")
	for i in $(seq 1 200); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.05; done
fi
rb() { redis-benchmark -h 127.0.0.1 -p "$rport" -t set -d 64 -q "$@" |
	tr '\r' '\n' | sed -n 's/^SET: \([0-9.]*\) requests per second.*/\1/p' | tail -1 |
	awk '{ printf "%.0f", $1 }'; }
ratio() { awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { if (b + 0 > 0) printf "%.*f", d, a / b; else printf "n/a" }'; }

# Five rounds, ours and Redis's interleaved, so that both see the same
# disk and the same neighbours; medians are reported.
say "edits/s: $n single-edit batches at 16 clients (without and with keys), $((n / 4)) at 1, 5 rounds beside Redis"
start_server "$tmp/data"
ours16=() ours16k=() ours1=() red16=() red1=() per_fsync=()
# with and without keys in turns, each going first in every other round
plain16() {
	read -r eps fs e < <(load 16 "$n" 1 "bench16-$round")
	ours16+=("$eps")
	per_fsync+=("$(awk -v e="$e" -v f="$fs" 'BEGIN { printf "%.1f", e / (f ? f : 1) }')")
}
keyed16() {
	read -r eps fs e < <(EDIT_LOAD_KEYS=1 load 16 "$n" 1 "bench16k-$round")
	ours16k+=("$eps")
}
for round in 1 2 3 4 5; do
	if [ $((round % 2)) = 1 ]; then plain16; keyed16; else keyed16; plain16; fi
	read -r eps fs e < <(load 1 $((n / 4)) 1 "bench1-$round")
	ours1+=("$eps")
	if [ "$have_redis" = 1 ]; then
		red16+=("$(rb -c 16 -n "$n")")
		red1+=("$(rb -c 1 -n $((n / 4)))")
	fi
done
read -r epsb fsb eb < <(load 16 $((n / 8)) 16 benchb)
nkeys=$(metric terrain_idempotency_keys)
key_bytes=$(metric terrain_idempotency_keys_bytes)
[ "$have_redis" = 1 ] && redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true

# ---------------------------------------------------------------- a tile with 1,000 edits
say "tile latency: a chunk with 1,000 edits"
tile_ms() { curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$port$1" | awk '{ printf "%.2f", $1 * 1000 }'; }
batch_on_chunk() { # N edits inside chunk (3, 3) of world dense
	local i s="" x z
	for i in $(seq 1 "$1"); do
		x=$((768 + (i * 37) % 256)); z=$((768 + (i * 91) % 256))
		s="$s{\"op\":\"raise\",\"x\":$x,\"z\":$z,\"radius\":$((8 + i % 40)),\"strength\":0.5},"
	done
	curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
		--data-binary "{\"edits\":[${s%,}]}" "http://127.0.0.1:$port/v1/worlds/dense/edits"
}
for i in 1 2 3 4; do batch_on_chunk 250; done
edited=() plain=()
for i in 1 2 3 4 5 6 7; do
	batch_on_chunk 1 # a new version: the next fetch is cold
	edited+=("$(tile_ms /v1/worlds/dense/chunks/0/3/3)")
	plain+=("$(tile_ms /v1/worlds/plain$i/chunks/0/3/3)")
done
edits_on_chunk=$(curl -s "http://127.0.0.1:$port/v1/worlds/dense/hashes?cx0=3&cz0=3&cx1=3&cz1=3" |
	sed -n 's/.*"version":\([0-9]*\).*/\1/p')
stop_server

# ---------------------------------------------------------------- replay of 1,000,000 edits
say "replay: logging $replay_edits edits in batches of 256"
start_server "$tmp/replay"
"$out/edit_load" "$port" 4 $(( (replay_edits + 255) / 256 )) 256 replay >/dev/null
logged=$(curl -s "http://127.0.0.1:$port/v1/worlds/replay" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p')
log_mb=$(( $(stat -c %s "$tmp/replay/edits.log") / 1048576 ))
stop_server
start_server "$tmp/replay"
replay_s=$started_s
replay_line=$(sed -n 's/.*terrain-server: \(replayed .*\)/\1/p' "$slog")
rss_mb=$(awk '/VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$spid/status")
stop_server

{
	echo "## 6. Edits (bench/edits.sh, $(date -u +%Y-%m-%d), $(nproc) cores, data in ${TMPDIR:-/tmp})"
	echo
	echo "| what | figure |"
	echo "| --- | --- |"
	echo "| acknowledged edits/s, 16 clients, 1 edit per POST (group commit) | **$(median "${ours16[@]}")** (rounds: ${ours16[*]}; edits per fsync: ${per_fsync[*]}) |"
	echo "| the same, each POST with an Idempotency-Key | **$(median "${ours16k[@]}")** (rounds: ${ours16k[*]}); $(ratio "$(median "${ours16k[@]}")" "$(median "${ours16[@]}")")x of without keys |"
	echo "| anchor: Redis SET, appendfsync always, 16 clients, -d 64 | **$(median "${red16[@]:-n/a}")** (rounds: ${red16[*]:-n/a}); with keys $(ratio "$(median "${ours16k[@]}")" "$(median "${red16[@]:-0}")")x of it, without $(ratio "$(median "${ours16[@]}")" "$(median "${red16[@]:-0}")")x |"
	echo "| memory per remembered key (terrain_idempotency_keys_bytes / terrain_idempotency_keys) | $(ratio "$key_bytes" "$nkeys" 0) bytes ($nkeys keys, $key_bytes bytes) |"
	echo "| acknowledged edits/s, 1 client | $(median "${ours1[@]}") (rounds: ${ours1[*]}) |"
	echo "| anchor: Redis SET, appendfsync always, 1 client | $(median "${red1[@]:-n/a}") (rounds: ${red1[*]:-n/a}) |"
	echo "| acknowledged edits/s, 16 clients, 16 edits per POST | $epsb ($fsb fsyncs) |"
	echo "| cold LOD 0 tile of a chunk with $edits_on_chunk edits (median of 7) | $(median "${edited[@]}") ms |"
	echo "| cold LOD 0 tile of an unedited chunk (median of 7) | $(median "${plain[@]}") ms |"
	echo "| start-up replaying $logged logged edits (${log_mb} MiB log) to listening | ${replay_s} s; RSS ${rss_mb} MiB |"
	echo "| the server's own line | $replay_line |"
	echo
	echo "Targets: edits/s at 16 clients with keys >= Redis's at 16 clients in the same run;"
	echo "with keys at most 5% slower than without (ratio >= 0.95)."
} | tee "$out/edits-results.md"
