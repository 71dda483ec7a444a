#!/usr/bin/env bash
# bench/reverts.sh BUILD_DIR - the cost of a revert (issue 36, item 8), all
# in one run:
#   - a world of REVERTS_EDITS (10^6) edits written as a file log by
#     bench/mklog.c (record version 3, batches of REVERTS_PER_BATCH, 16):
#     1,000 players' raise brushes of 1-8 m over a 16 km square (about
#     4,000 chunks, ~250 edits each), and REVERTS_GRIEFER (10^4) lower
#     brushes of 2-12 m by "griefer" over a 4 km square (16 x 16 chunks
#     and the ring around), interleaved evenly through the log (one
#     batch in 100); replayed by a real terrain-server (--snapshot-every 0,
#     so that every edit stays revertible; --workers REVERTS_WORKERS, 2)
#     and left to bake every chunk
#   - per round: the griefer's square warmed (LOD 0 tiles fetched), then
#     POST .../reverts {"author":"griefer"} as a tokenless loopback client
#     (admin): (a) the POST's latency, (b) from the POST until every chunk
#     the answer names is served at LOD 0 with the revert's version (the
#     POST's latency plus the fetch asked right after it)
#     (?v=SEQ answering 200, not a 302 to another version: curl, 16
#     parallel keep-alive connections), the bakes redone; the anchor
#     (c) the same tiles from a fresh server with no edits and an empty
#     cache (same seed, same workers), asked the same way; then the undo
#     of the revert, timed the same way
#   - the log's bytes per edit: REVERTS_BYTES_N edits written by mklog as
#     record version 2 (issue 35's server) and 3 (an 8-character author),
#     in batches of 1 and 16; and what the server itself writes (author
#     "local") for POSTs of 1 and 16 edits
# Prints one markdown table (also BUILD_DIR/bench/reverts-results.md);
# nothing is asserted. About 2 minutes on 2 cores.
#
# Env (defaults): REVERTS_EDITS (1000000), REVERTS_GRIEFER (10000),
# REVERTS_PER_BATCH (16), REVERTS_ROUNDS (3), REVERTS_WORKERS (2),
# REVERTS_BYTES_N (10000).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: bench/reverts.sh BUILD_DIR   (after: make BUILD=BUILD_DIR all)" >&2
	exit 2
fi
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$build/bench"
bin="$build/terrain-server"
n="${REVERTS_EDITS:-1000000}"
g="${REVERTS_GRIEFER:-10000}"
per="${REVERTS_PER_BATCH:-16}"
rounds="${REVERTS_ROUNDS:-3}"
workers="${REVERTS_WORKERS:-2}"
bn="${REVERTS_BYTES_N:-10000}"
world=reverts
# the griefer's square: 4096 m centred on (3072, 3072), chunks 4..19 of 256 m
gspan=4096 gx=3072 gz=3072
[ -x "$bin" ] || { echo "bench: $bin missing: make BUILD=$1 all" >&2; exit 1; }
mkdir -p "$out"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/reverts-bench.XXXXXX")"
trap cleanup EXIT
trap 'exit 130' INT TERM

cd "$root"
bench_make "$build" bench/mklog bench/edit_load

# ---------------------------------------------------------------- servers
start() { # DATA_DIR ARGS...: starts a server; sets spid, port, slog
	local dir=$1
	shift
	slog="$tmp/server.$RANDOM.log"
	TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0 "$bin" serve --bind 127.0.0.1 --port 0 \
		--workers "$workers" --data-dir "$dir" "$@" </dev/null 2>"$slog" &
	spid=$!
	pids+=("$spid")
	for _ in $(seq 1 30000); do
		port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$slog")
		[ -n "$port" ] && return 0
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.01
	done
	say "server did not start:"; cat "$slog" >&2; exit 1
}
stop() { # PID
	local keep=() p
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}
now() { date +%s.%N; }
secs() { awk -v a="$2" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v k="$2" '$1 == k { print $2 }'; }
size() { stat -c %s "$1"; }
# CPU seconds of all a server's threads so far (schedstat's run time)
cpu() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.4f\n", s / 1e9 }'; }
wait_bakes() { # PORT: until no chunk waits for a bake (at most 10 minutes)
	for _ in $(seq 1 6000); do
		[ "$(metric "$1" terrain_bake_queue)" = 0 ] && return 0
		sleep 0.1
	done
	say "bakes still queued after 10 minutes"
}
# fetch PORT CHUNKS_FILE [V]: every LOD-0 tile of the chunks ("cx cz" lines),
# 16 parallel keep-alive connections; ?v=V when given. Prints "seconds ok";
# ok counts the 200 answers (a stale version would be a 302).
fetch() {
	local t0 t1 cfg="$tmp/fetch.cfg"
	awk -v p="$1" -v w="$world" -v v="${3:-}" '{
		printf "url = \"http://127.0.0.1:%s/v1/worlds/%s/chunks/0/%d/%d%s\"\noutput = \"/dev/null\"\n",
			p, w, $1, $2, v == "" ? "" : "?v=" v }' "$2" >"$cfg"
	t0=$(now)
	curl -sS --parallel --parallel-immediate --parallel-max 16 --max-time 300 \
		-H 'Accept-Encoding: zstd' -w '%{http_code}\n' -K "$cfg" >"$tmp/codes" 2>"$tmp/curl.err" || true
	t1=$(now)
	echo "$(secs "$t0" "$t1") $(grep -c '^200$' "$tmp/codes" || true)"
}
post() { # PORT BODY: POST .../reverts; prints "http_code seconds", the answer in $tmp/answer
	curl -s -o "$tmp/answer" -w '%{http_code} %{time_total}\n' -X POST \
		-H 'Content-Type: application/json' --data-binary "$2" \
		"http://127.0.0.1:$1/v1/worlds/$world/reverts"
}
ms() { awk -v s="$1" 'BEGIN { printf "%.0f", s * 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'; }

# ---------------------------------------------------------------- the world
say "writing $n edits ($g by griefer) in batches of $per, record version 3"
t0=$(now)
"$out/mklog" -v 3 -b "$per" -p 1000 -g "$g,$gspan,$gx,$gz" "$tmp/world" "$n" 16000 "$world"
mklog_s=$(secs "$t0" "$(now)")
log_mib=$(awk -v b="$(size "$tmp/world/edits.log")" 'BEGIN { printf "%.1f", b / 1048576 }')
t0=$(now)
start "$tmp/world" --snapshot-every 0
main_pid=$spid main_port=$port
up_s=$(secs "$t0" "$(now)")
replayed=$(sed -n 's/.*terrain-server: \(replayed .*\)/\1/p' "$slog")
wait_bakes "$main_port"
baked_s=$(secs "$t0" "$(now)")
say "replayed and baked in $baked_s s ($replayed)"

# the chunks a brush of the square may touch: its chunks and the ring around
awk -v x="$gx" -v z="$gz" -v s="$gspan" 'function fl(v) { return v < 0 && v != int(v) ? int(v) - 1 : int(v) }
	BEGIN { for (cx = fl((x - s / 2 - 12) / 256); cx <= fl((x + s / 2 + 12) / 256); cx++)
		for (cz = fl((z - s / 2 - 12) / 256); cz <= fl((z + s / 2 + 12) / 256); cz++) print cx, cz }' >"$tmp/square"
nsquare=$(wc -l <"$tmp/square")

post_s=() served_s=() ratios=() cpu_b=() cpu_bake=() cpu_c=() cpu_ratios=() fetch_s=() rebake_s=() cold_s=() hit_s=() undo_post_s=() undo_served_s=() bad=0
for r in $(seq 1 "$rounds"); do
	say "round $r: warming $nsquare LOD-0 tiles, revert by author, the same tiles cold on a fresh server, undo"
	read -r _ _ < <(fetch "$main_port" "$tmp/square")
	wait_bakes "$main_port"
	log0=$(size "$tmp/world/edits.log")
	t0=$(now) c0=$(cpu "$main_pid")
	res=$(post "$main_port" '{"author":"griefer"}')
	read -r code s <<<"$res"
	[ "$code" = 200 ] || { say "revert answered $code: $(cat "$tmp/answer")"; exit 1; }
	rseq=$(sed -n 's/.*"first_seq":\([0-9]*\).*/\1/p' "$tmp/answer")
	count=$(sed -n 's/.*"count":\([0-9]*\).*/\1/p' "$tmp/answer")
	sed 's/.*"chunks":\[//' "$tmp/answer" | grep -o '\[-\?[0-9]*,-\?[0-9]*\]' | tr -d '[]' | tr ',' ' ' >"$tmp/chunks"
	nchunks=$(wc -l <"$tmp/chunks")
	read -r fs ok < <(fetch "$main_port" "$tmp/chunks" "$rseq")
	c1=$(cpu "$main_pid")
	[ "$ok" = "$nchunks" ] || { say "round $r: $ok of $nchunks tiles at version $rseq"; bad=1; }
	wait_bakes "$main_port"
	rebake_s+=("$(secs "$t0" "$(now)")") cpu_b+=("$(secs "$c0" "$c1")") cpu_bake+=("$(secs "$c0" "$(cpu "$main_pid")")")
	rec_bytes=$(( $(size "$tmp/world/edits.log") - log0 ))
	read -r hs _ < <(fetch "$main_port" "$tmp/chunks" "$rseq")
	# (b): the POST's latency and then the fetch, as a client that asks at once
	post_s+=("$s") served_s+=("$(awk -v a="$s" -v b="$fs" 'BEGIN { printf "%.3f", a + b }')")
	fetch_s+=("$fs") hit_s+=("$hs")

	start "$tmp/cold$r"
	c0=$(cpu "$spid")
	read -r cs cok < <(fetch "$port" "$tmp/chunks")
	cpu_c+=("$(secs "$c0" "$(cpu "$spid")")")
	stop "$spid"
	[ "$cok" = "$nchunks" ] || { say "round $r: cold server answered $cok of $nchunks"; bad=1; }
	cold_s+=("$cs") ratios+=("$(ratio "${served_s[-1]}" "$cs")")
	cpu_ratios+=("$(ratio "${cpu_b[-1]}" "${cpu_c[-1]}")")

	res=$(post "$main_port" "{\"undo\":$rseq}")
	read -r code s <<<"$res"
	[ "$code" = 200 ] || { say "undo answered $code: $(cat "$tmp/answer")"; exit 1; }
	useq=$(sed -n 's/.*"first_seq":\([0-9]*\).*/\1/p' "$tmp/answer")
	read -r fs ok < <(fetch "$main_port" "$tmp/chunks" "$useq")
	undo_served_s+=("$(awk -v a="$s" -v b="$fs" 'BEGIN { printf "%.3f", a + b }')") undo_post_s+=("$s")
	[ "$ok" = "$nchunks" ] || { say "round $r: $ok of $nchunks tiles at the undo's version $useq"; bad=1; }
	wait_bakes "$main_port"
done
rss_mib=$(awk '/VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$main_pid/status")
stop "$main_pid"

# ---------------------------------------------------------------- bytes per edit
say "bytes per edit: $bn edits as record versions 2 and 3, batches of 1 and 16"
declare -A bpe
for v in 2 3; do
	for b in 1 16; do
		"$out/mklog" -v "$v" -b "$b" "$tmp/bytes$v-$b" "$bn" 16000 "$world"
		bpe[$v-$b]=$(awk -v s="$(size "$tmp/bytes$v-$b/edits.log")" -v n="$bn" 'BEGIN { printf "%.1f", (s - 32) / n }')
	done
done
start "$tmp/served"
for b in 1 16; do
	s0=$(size "$tmp/served/edits.log" 2>/dev/null || echo 32)
	"$out/edit_load" "$port" 4 $(( bn / 10 / b )) "$b" "$world" 16000 >/dev/null
	s1=$(size "$tmp/served/edits.log")
	bpe[server-$b]=$(awk -v a="$s0" -v z="$s1" -v n="$(( bn / 10 / b * b ))" 'BEGIN { printf "%.1f", (z - a) / n }')
done
stop "$spid"

pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }'; }
list() { local x o=""; for x in "$@"; do o="$o$(ms "$x") "; done; echo "${o% }"; }
served=$(median_mean "${served_s[@]}") cold=$(median_mean "${cold_s[@]}")
{
	echo "## 18. Reverts (bench/reverts.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the end, $workers workers)"
	echo
	echo "| what | figure |"
	echo "| --- | --- |"
	echo "| the world | $n edits in batches of $per, record version 3 ($log_mib MiB): 1,000 players over 16 km, $g by griefer over ${gspan} m, one batch in $(( (n + per - 1) / per / ((g + per - 1) / per) )); written by mklog in $mklog_s s |"
	echo "| start-up: replay to listening; and every chunk baked | $up_s s; $baked_s s (${replayed:-?}) |"
	echo "| the revert {\"author\":\"griefer\"} | $count edits reverted, $nchunks chunks named; $rec_bytes bytes on disk |"
	echo "| (a) POST latency, median (rounds) | **$(ms "$(median_mean "${post_s[@]}")") ms** ($(list "${post_s[@]}")) |"
	echo "| (b) POST to every named LOD-0 tile served at the revert's version, median (rounds) | **$(ms "$served") ms** ($(list "${served_s[@]}")); of it the fetch $(ms "$(median_mean "${fetch_s[@]}")") ms |"
	echo "| (c) anchor: the same $nchunks tiles cold from a fresh server without edits (rounds) | **$(ms "$cold") ms** ($(list "${cold_s[@]}")) |"
	echo "| (b) / (c): of the medians; median of the rounds' (rounds) | **$(ratio "$served" "$cold")x**; $(median_mean "${ratios[@]}")x (${ratios[*]}) |"
	echo "| server CPU (all threads): POST and the fetch (b); the cold fetch (c); (b) / (c), median of the rounds' (rounds) | $(ms "$(median_mean "${cpu_b[@]}")") ms; $(ms "$(median_mean "${cpu_c[@]}")") ms; **$(median_mean "${cpu_ratios[@]}")x** (${cpu_ratios[*]}) |"
	echo "| the same tiles again at the revert's version (cache hits) | $(ms "$(median_mean "${hit_s[@]}")") ms ($(list "${hit_s[@]}")) |"
	echo "| POST to the bake queue empty again (the reverted chunks re-baked): wall; server CPU | $(ms "$(median_mean "${rebake_s[@]}")") ms ($(list "${rebake_s[@]}")); $(ms "$(median_mean "${cpu_bake[@]}")") ms ($(list "${cpu_bake[@]}")) |"
	echo "| undo of the revert: POST latency; POST to every tile served at the undo's version | $(ms "$(median_mean "${undo_post_s[@]}")") ms ($(list "${undo_post_s[@]}")); $(ms "$(median_mean "${undo_served_s[@]}")") ms ($(list "${undo_served_s[@]}")) |"
	echo "| server RSS after the rounds | $rss_mib MiB |"
	echo "| log bytes per edit, batches of 1: version 2 (before) / version 3, author of 8 characters | ${bpe[2-1]} / **${bpe[3-1]}** ($(pct "${bpe[3-1]}" "${bpe[2-1]}")) |"
	echo "| the same, batches of 16 | ${bpe[2-16]} / **${bpe[3-16]}** ($(pct "${bpe[3-16]}" "${bpe[2-16]}")) |"
	echo "| what the server writes (version 3, author \`local\`), POSTs of 1 / of 16 edits | ${bpe[server-1]} / ${bpe[server-16]} |"
	echo
	echo "Rounds: $rounds, each warming the griefer's square ($nsquare LOD-0 tiles), reverting, fetching, then undoing;"
	echo "tiles fetched with curl, 16 parallel keep-alive connections, zstd, on the same 2 shared cores as the servers;"
	echo "(b) is the POST's latency plus the wall time of the fetch that follows it (the script's parsing between them"
	echo "not counted), (c) the wall time of the same fetch. Bytes per edit: (file size - 32-byte header) / edits, $bn edits (the server rows: $((bn / 10)))."
	[ "$bad" = 0 ] || echo "**Some tiles were not served at the expected version: see the messages above.**"
} | tee "$out/reverts-results.md"
