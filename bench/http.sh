#!/usr/bin/env bash
# bench/http.sh BUILD_DIR - HTTP benchmarks of BUILD_DIR/terrain-server (issue 3),
# all on 127.0.0.1, about 4-5 minutes on a 2-core machine:
#   5.1 export   a fresh server warms tiles 0..31 x 0..31 of world 42, LOD 0, and
#                their exact zstd response bodies are saved as DIR/X/Z.bin
#   5.2 hits     ../shared/bench/http/run-anchors.sh (used in place) serves DIR with
#                nginx and runs the server as its candidate on its own tile URLs:
#                req/s, server CPU us/req, p50/p99, 64/256 connections keep-alive
#                and Connection: close, with the issue's targets vs nginx-1w
#   5.3 cold     N never-generated LOD-0 tiles (another seed, far from the origin),
#                16 concurrent clients, all workers: tiles/s, p50/p99, generations
#   5.4 RSS      --cache-mb 64 filled well past its bound: VmHWM/VmRSS vs
#                cache-mb + base (RSS right after start), cache bytes/evictions
#   5.5 user     user-space instructions per cache hit, counted by callgrind
#                (deterministic, unlike the CPU times of 5.2): the server under
#                valgrind serves one hot tile to wrk (16 connections, 5 s); a
#                second run with one request is subtracted (start and stop)
#   5.6 codings  hot tiles in each content coding (issue 21): zstd, gzip and
#                identity, wrk -t1 -c64 over 64 warmed LOD-0 tiles: req/s, bytes
#                per response, server CPU per request, cache bytes per tile; the
#                same for HTTP_BENCH_BASELINE (a terrain-server of the tree
#                before, which served identity by a worker job per request and
#                had no gzip) when set
# Markdown on stdout and in BUILD_DIR/bench/http-results.md (the harness's
# per-run rows of 5.2 in BUILD_DIR/bench/http-raw.tsv); progress on stderr.
# Figures are printed, never asserted; the exit status is non-zero only when a
# section could not run (server did not start, wrong bytes, harness failed).
#
# Cache-hit runs must not include generation. The harness starts the candidate
# fresh and measures right after a 2 s warm-up per server, while generating the
# 1024 tiles takes several seconds, so this script pauses the harness (SIGSTOP
# to its own bash process, which this script started) once the candidate
# answers, requests all 1024 tiles through it (from outside the candidate's
# process group, whose CPU the harness measures), checks them byte for byte
# against DIR and that the cache holds 1024 tiles with 1024 generations and no
# eviction, and resumes the harness (SIGCONT) before any measured wrk run.
#
# Env (defaults): HTTP_BENCH_SERVERS (nginx-1w), HTTP_BENCH_SCENARIOS
# ("random:64:ka random:256:ka random:64:close"), HTTP_BENCH_RUNS (5: nginx-1w alone
# varies 17-24 us per request between runs of one pass on this machine),
# HTTP_BENCH_DURATION (5 s), HTTP_BENCH_PORT (18199: the candidate; the anchors
# use HTTP_BENCH_PORT-19 and up; a busy block moves both up by 100; not the
# harness's own defaults 18080/18099, which other sessions run it with),
# HTTP_BENCH_COLD_TILES (400), HTTP_BENCH_FILL_TILES (3000), HTTP_BENCH_FILL_MB
# (64), HTTP_BENCH_WAIT (300 s: how long to wait for another run-anchors.sh on
# this machine to finish), HTTP_BENCH_SECTIONS ("1 2 3 4 5 6"; 2 needs 1),
# HTTP_BENCH_BASELINE (none: section 5.6's anchor binary), HTTP_BENCH_CODING_RUNS (3).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: bench/http.sh BUILD_DIR   (after: make BUILD=BUILD_DIR OPT=-O3 all)" >&2
	exit 2
fi
[ -x "$1/terrain-server" ] || { echo "http bench: no $1/terrain-server (make BUILD=$1 OPT=-O3 all)" >&2; exit 1; }
build="$(cd "$1" && pwd)"
server="$build/terrain-server"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || (cd "$here/.." && pwd))"
anchors="$root/../shared/bench/http/run-anchors.sh"
out="$build/bench"
results="$out/http-results.md"

servers="${HTTP_BENCH_SERVERS:-nginx-1w}"
scenarios="${HTTP_BENCH_SCENARIOS:-random:64:ka random:256:ka random:64:close}"
runs="${HTTP_BENCH_RUNS:-5}"
duration="${HTTP_BENCH_DURATION:-5}"
cand_port="${HTTP_BENCH_PORT:-18199}"
cold_n="${HTTP_BENCH_COLD_TILES:-400}"
fill_n="${HTTP_BENCH_FILL_TILES:-3000}"
fill_mb="${HTTP_BENCH_FILL_MB:-64}"
wait_other="${HTTP_BENCH_WAIT:-300}"
sections="${HTTP_BENCH_SECTIONS:-1 2 3 4 5 6}"
baseline="${HTTP_BENCH_BASELINE:-}"
coding_runs="${HTTP_BENCH_CODING_RUNS:-3}"
ncpu="$(nproc)"
hz="$(getconf CLK_TCK)"

mkdir -p "$out"
W="$(mktemp -d "${TMPDIR:-/tmp}/terrain-http-bench.XXXXXX")"
chmod 755 "$W"   # the harness's work dir goes inside; nginx workers must reach it
SRV_PIDS=()   # servers started with setsid: PID == PGID
HARNESS=""    # run-anchors.sh (its bash), stopped and continued by section 5.2
CHILD=""      # the current long-running foreground helper (curl), run in background
failed=0

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SAY_AS="http bench"
# cleanup and free_port below are this script's own, over lib.sh's: its
# servers stop by process group, and free_port PORT asks about one port.
alive() { local s; s="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1; [[ $s != Z* ]]; }

stop_group() {  # pid: TERM its process group, KILL it after 10 s; exit status in STOP_RC
	local p=$1 i q keep=()
	STOP_RC=0
	kill -TERM -- "-$p" 2>/dev/null || true
	for i in $(seq 100); do alive "$p" || break; sleep 0.1; done
	alive "$p" && { say "pid $p still there after 10 s: KILL"; kill -KILL -- "-$p" 2>/dev/null || true; }
	wait "$p" 2>/dev/null || STOP_RC=$?
	for q in "${SRV_PIDS[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done
	SRV_PIDS=("${keep[@]}")
}
stop_harness() {  # TERM run-anchors.sh (it stops its own servers), KILL it after 15 s
	local i
	[ -n "$HARNESS" ] || return 0
	if alive "$HARNESS"; then
		kill -CONT "$HARNESS" 2>/dev/null || true
		kill -TERM "$HARNESS" 2>/dev/null || true
		for i in $(seq 150); do alive "$HARNESS" || break; sleep 0.1; done
		if alive "$HARNESS"; then kill -KILL "$HARNESS" 2>/dev/null || true; fi
	fi
	wait "$HARNESS" 2>/dev/null || true
	HARNESS=""
}

# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
	local p
	[ -z "$CHILD" ] || kill -TERM "$CHILD" 2>/dev/null || true
	stop_harness
	for p in "${SRV_PIDS[@]}"; do stop_group "$p"; done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Run a helper in the background and wait for it, so that INT/TERM traps run at once.
bg() { "$@" & CHILD=$!; local rc=0; wait "$CHILD" || rc=$?; CHILD=""; return "$rc"; }

# start_server NAME ARGS...: sets SRV_PID and SRV_PORT (the server picks a free port);
# the command in WRAP (an array, empty by default) runs the server
WRAP=()
start_server() {
	local name=$1 i; shift
	setsid "${WRAP[@]}" "$server" serve --port 0 "$@" </dev/null >"$W/$name.log" 2>&1 &
	SRV_PID=$!; SRV_PIDS+=("$SRV_PID"); SRV_PORT=""
	for i in $(seq 300); do
		SRV_PORT="$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$W/$name.log" | head -n 1)"
		[ -z "$SRV_PORT" ] || return 0
		alive "$SRV_PID" || break
		sleep 0.1
	done
	say "server $name did not start: $(tail -n 3 "$W/$name.log")"
	return 1
}
stop_server() {  # pid name: stop it, report a non-zero exit status on TERM
	stop_group "$1"
	[ "$STOP_RC" = 0 ] || {
		say "server $2 exited with status $STOP_RC on SIGTERM (expected 0; log: $(tail -n 2 "$W/$2.log" | tr '\n' ' '))"
		echo "- WARNING: the $2 server exited with status $STOP_RC on SIGTERM (0 expected)" | emit; }
}

metric() {  # port name [labels]: the value of one Prometheus sample
	curl -fsS --max-time 10 "http://127.0.0.1:$1/metrics" |
		awk -v n="$2" '$1 == n { print $2; f = 1; exit } END { if (!f) print "n/a" }'
}
vm() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }   # pid VmRSS|VmHWM -> kB
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
now() { date +%s.%N; }

# fetch PORT LIST PARALLEL [OUTDIR]: GET each path of LIST (one per line) with
# Accept-Encoding: zstd and no decoding; the body goes to OUTDIR/<path tail> or
# nowhere; one line "status seconds bytes" per transfer in LIST.w
fetch() {
	local port=$1 list=$2 par=$3 dir=${4:-} p
	while read -r p; do
		printf 'url = "http://127.0.0.1:%s%s"\n' "$port" "$p"
		if [ -n "$dir" ]; then printf 'output = "%s/%s.bin"\n' "$dir" "$(echo "$p" | awk -F/ '{ print $(NF-1) "/" $NF }')"
		else echo 'output = "/dev/null"'; fi
	done <"$list" >"$list.cfg"
	bg curl -sS --no-progress-meter --parallel --parallel-immediate --parallel-max "$par" --max-time 120 --create-dirs \
		-H 'Accept-Encoding: zstd' -w '%{http_code} %{time_total} %{size_download}\n' \
		-K "$list.cfg" >"$list.w" 2>"$list.err" || true
	[ "$(wc -l <"$list.w")" = "$(wc -l <"$list")" ] && ! awk '$1 != 200 { bad = 1 } END { exit !bad }' "$list.w"
}
status_summary() { awk '{ n[$1]++ } END { for (s in n) printf "%s%s x%d", sep, s, n[s]; sep = ", " }' "$1"; }
pct() {  # file(one number per line) p -> nearest-rank percentile
	sort -g "$1" | awk -v p="$2" '{ a[NR] = $1 } END { if (!NR) { print "n/a"; exit } i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; print a[i] }'
}

# TSV on stdin (header row, rows, "note: " lines) to a padded markdown table
# (numeric columns right-aligned); the same function as bench/run.sh's.
table() {
	awk -F '\t' '
	function rep(c, n,   s) { s = ""; while (n-- > 0) s = s c; return s }
	/^note: / { notes[++nn] = substr($0, 7); next }
	{
		nr++
		if (NF > nf) nf = NF
		for (i = 1; i <= NF; i++) {
			cell[nr, i] = $i
			if (length($i) > w[i]) w[i] = length($i)
			if (nr > 1 && $i !~ /^[-+]?[0-9.]+x?$/ && $i != "n/a") text[i] = 1
		}
	}
	END {
		for (r = 1; r <= nr; r++) {
			line = "|"
			for (i = 1; i <= nf; i++) {
				c = cell[r, i]; pad = rep(" ", w[i] - length(c))
				line = line " " (r > 1 && !text[i] ? pad c : c pad) " |"
			}
			print line
			if (r > 1) continue
			line = "|"
			for (i = 1; i <= nf; i++)
				line = line (text[i] ? " " rep("-", w[i]) " |" : " " rep("-", w[i] - 1) ": |")
			print line
		}
		if (nn) print ""
		for (k = 1; k <= nn; k++) print "- " notes[k]
	}'
}
emit() { tee -a "$results"; }
heading() { printf '\n%s\n\n' "$1" | emit; }
TARGETS="$W/targets.tsv"   # rows of the closing targets table
printf 'target\tgoal\tthis run\tmet\n' >"$TARGETS"

# ---------------------------------------------------------------- 5.1 export

TILES="$W/tiles"
export_tiles() {
	heading "### 5.1 Tiles for the comparison: world 42, LOD 0, 0..31 x 0..31, zstd bodies"
	say "5.1: export: warming 1024 tiles and saving their zstd bodies"
	seq 0 31 | while read -r x; do seq 0 31 | sed "s|^|/v1/worlds/42/chunks/0/$x/|"; done >"$W/grid"
	start_server export --cache-mb 256 || return 1
	local port=$SRV_PORT pid=$SRV_PID t0 t1 gens
	t0=$(now)
	fetch "$port" "$W/grid" 8 || { say "5.1: warm-up: $(status_summary "$W/grid.w") $(head -c 300 "$W/grid.err")"; return 1; }
	t1=$(now)
	fetch "$port" "$W/grid" 8 "$TILES" || { say "5.1: export: $(status_summary "$W/grid.w")"; return 1; }
	gens=$(metric "$port" terrain_generations_total)
	stop_server "$pid" export
	if [ "$(find "$TILES" -name '*.bin' | wc -l)" != 1024 ] ||
		[ "$(od -An -tx1 -N4 "$TILES/0/0.bin" | tr -d ' ')" != 28b52ffd ]; then
		say "5.1: the exported tiles are not 1024 zstd frames"; return 1
	fi
	awk -v dt="$(echo "$t1 - $t0" | bc)" -v g="$gens" '{ b += $3; if (!mn || $3 < mn) mn = $3; if ($3 > mx) mx = $3 }
		END { printf "- 1024 tiles, zstd bodies %d..%d B, mean %.0f B (the anchors serve these files; their" \
			" default is 20480 B); first pass %.1f s, %s generations\n", mn, mx, b / NR, dt, g }' "$W/grid.w" | emit
}

# ---------------------------------------------------------------- 5.2 hits

free_port() { ! ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }
hits() {
	heading "### 5.2 Cache hits: the server vs nginx (../shared/bench/http/run-anchors.sh)"
	if [ ! -f "$anchors" ]; then
		echo "anchor harness not found at ../shared/bench/http/run-anchors.sh, skipped" | emit
		return 0
	fi
	[ -d "$TILES" ] || { echo "no exported tiles (section 5.1 did not run), skipped" | emit; return 1; }
	local i others="" nserv base port hdir t0 t1 gens entries evict hout
	# another run of the harness (other sessions share this machine) would share
	# its fixed ports and both cores: wait for it, bounded
	for ((i = 0; i < wait_other; i += 5)); do
		others="$(pgrep -f 'bench/http/run-anchors\.sh' || true)"
		[ -n "$others" ] || break
		((i % 60)) || say "5.2: another run-anchors.sh is running (pid $(tr '\n' ' ' <<<"$others")); waiting (up to ${wait_other}s)"
		sleep 5
	done
	[ -z "$others" ] || say "5.2: still another run-anchors.sh after ${wait_other}s: going ahead on other ports"
	nserv=$(wc -w <<<"$servers")
	port=$cand_port
	for i in $(seq 10); do
		base=$((port - 19)); local ok=1 p
		for p in $(seq "$base" $((base + nserv - 1))) "$port"; do free_port "$p" || ok=0; done
		[ $ok = 0 ] || break
		port=$((port + 100))
	done
	[ "$port" = "$cand_port" ] || say "5.2: ports $cand_port and $((cand_port - 19))+ busy: candidate on $port, anchors on $base+"
	hdir="$W/anchors"; mkdir -p "$hdir"
	say "5.2: run-anchors.sh --servers '$servers' --scenarios '$scenarios' --runs $runs --duration $duration (about $((runs * $(wc -w <<<"$scenarios") * (nserv + 1) * (duration + 1) + 30)) s)"
	# its work dir in ours (TMPDIR), out of reach of anyone cleaning /tmp/anchor-http.*
	TMPDIR="$W" bash "$anchors" --tiles-from "$TILES" \
		--candidate "exec $(printf %q "$server") serve --port $port --cache-mb 256" \
		--candidate-url "http://127.0.0.1:$port/" \
		--candidate-template '/v1/worlds/42/chunks/0/{x}/{z}' --candidate-header 'Accept-Encoding: zstd' \
		--servers "$servers" --scenarios "$scenarios" --runs "$runs" --duration "$duration" \
		--port-base "$base" --out "$hdir/raw.tsv" >"$hdir/out" 2>"$hdir/err" </dev/null &
	HARNESS=$!
	# pause the harness as soon as the candidate answers, warm it, resume
	for i in $(seq 300); do
		curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$port/healthz" 2>/dev/null && break
		alive "$HARNESS" || break
		sleep 0.05
	done
	if ! alive "$HARNESS"; then
		wait "$HARNESS" || true; HARNESS=""
		say "5.2: run-anchors.sh ended before the candidate answered: $(tail -n 5 "$hdir/err")"
		echo "run-anchors.sh failed before the candidate started (see stderr), skipped" | emit
		return 1
	fi
	kill -STOP "$HARNESS"
	say "5.2: harness paused; warming the candidate with the 1024 tiles"
	t0=$(now)
	fetch "$port" "$W/grid" 8 "$hdir/check" || { say "5.2: warm-up: $(status_summary "$W/grid.w")"; stop_harness; return 1; }
	t1=$(now)
	gens=$(metric "$port" terrain_generations_total)
	entries=$(metric "$port" terrain_cache_entries)
	evict=$(metric "$port" terrain_cache_evictions_total)
	if ! diff -rq "$TILES" "$hdir/check" >"$hdir/diff" 2>&1; then
		say "5.2: the candidate's bodies differ from the exported ones: $(head -n 3 "$hdir/diff")"
		echo "- WARNING: $(wc -l <"$hdir/diff") of 1024 bodies from the candidate differ from the export (another process)" | emit
	fi
	kill -CONT "$HARNESS"
	printf -- '- candidate warmed while the harness was paused, before any measured run: %.1f s; then %s generations, %s cached tiles, %s evictions (1024, 1024, 0 expected: every measured request is a hit)\n' \
		"$(echo "$t1 - $t0" | bc)" "$gens" "$entries" "$evict" | emit
	# bounded: the expected time twice over, plus 2 minutes
	local limit=$((2 * runs * $(wc -w <<<"$scenarios") * (nserv + 1) * (duration + 1) + 120)) rc=0
	for ((i = 0; i < limit; i++)); do alive "$HARNESS" || break; sleep 1; done
	if alive "$HARNESS"; then
		say "5.2: run-anchors.sh still running after ${limit}s: stopping it"
		stop_harness; rc=124
	else
		wait "$HARNESS" || rc=$?
		HARNESS=""
	fi
	if [ "$rc" != 0 ] || ! grep -q '^candidate/anchor' "$hdir/out"; then
		say "5.2: run-anchors.sh exit $rc: $(tail -n 5 "$hdir/err")"
		echo "run-anchors.sh failed (exit $rc): $(tail -n 1 "$hdir/err")" | emit
		return 1
	fi
	grep -v '^# run ' "$hdir/err" | sed 's/^/  harness: /' >&2 || true
	cp "$hdir/raw.tsv" "$out/http-raw.tsv" 2>/dev/null || true   # every run, for a closer look
	hout="$hdir/out"
	{
		# shellcheck disable=SC2016  # markdown backquotes
		printf 'run-anchors.sh output (medians of %s runs of %s s, wrk -t1; "cand" = terrain-server on `/v1/worlds/42/chunks/0/{x}/{z}` with `Accept-Encoding: zstd`):\n\n```\n' "$runs" "$duration"
		cat "$hout"
		printf '```\n\n'
	} | emit
	# the issue's targets per scenario, from the harness's own medians and ratios
	awk -v scen="$scenarios" -v targets="$TARGETS" '
	/^candidate\/anchor/ { ratios = 1; next }
	!ratios && $1 != "server" && $1 !~ /^#/ && NF >= 13 { k = $1 SUBSEP $2 ":" $3 ":" $4
		rps[k] = $5; p50[k] = $7; p99[k] = $8; us[k] = $9; errs[k] = $11; other[k] = $12 }
	ratios && $1 ~ /:/ { r_rps[$1] = $2; r_p99[$1] = $5; r_us[$1] = $6 }
	function yn(v, ok) { return v == "-" || v == "" ? "n/a" : (ok ? "yes" : "no") }
	function pf(v) { return v == "" ? "-" : v }
	END {
		print "scenario\treq/s cand / nginx-1w\tratio (>= 1.00)\tmet\tus/req cand / nginx-1w\tratio (<= 0.80)\tmet\tp99 ms cand / nginx-1w\tratio (<= 1.00)\tmet\tp50 ms cand / nginx-1w\tcand errs\tother% cand / nginx-1w"
		n = split(scen, S, " ")
		for (i = 1; i <= n; i++) { s = S[i]; c = "cand" SUBSEP s; g = "nginx-1w" SUBSEP s
			printf "%s\t%s / %s\t%s\t%s\t%s / %s\t%s\t%s\t%s / %s\t%s\t%s\t%s / %s\t%s\t%s / %s\n", s,
				pf(rps[c]), pf(rps[g]), pf(r_rps[s]), yn(r_rps[s], r_rps[s] >= 1.0),
				pf(us[c]), pf(us[g]), pf(r_us[s]), yn(r_us[s], r_us[s] <= 0.8),
				pf(p99[c]), pf(p99[g]), pf(r_p99[s]), yn(r_p99[s], r_p99[s] <= 1.0),
				pf(p50[c]), pf(p50[g]), pf(errs[c]), pf(other[c]), pf(other[g])
			if (other[c] > 10 || other[g] > 10) busy = 1
			printf "cache hit %s: us/req / nginx-1w\t<= 0.80\t%s\t%s\n", s, pf(r_us[s]), yn(r_us[s], r_us[s] <= 0.8) >> targets
			printf "cache hit %s: req/s / nginx-1w\t>= 1.00\t%s\t%s\n", s, pf(r_rps[s]), yn(r_rps[s], r_rps[s] >= 1.0) >> targets
			printf "cache hit %s: p99 / nginx-1w\t<= 1.00\t%s\t%s\n", s, pf(r_p99[s]), yn(r_p99[s], r_p99[s] <= 1.0) >> targets
		}
		if (busy) print "note: WARNING: other processes used more than 10% of the CPU during some runs (other%):" \
			" the machine was shared, distrust those rows and rerun when it is quiet"
		print "note: ratios are the harness medians of per-run ratios (cand / nginx-1w, same scenario, adjacent runs);" \
			" us/req = CPU time of the whole server process group per request"
		print "note: wrk -t1 and the server share the cores: req/s saturates near wrk'"'"'s limit for every fast" \
			" server, so us/req is the steadier figure; other% > 10 means other processes were busy"
	}' "$hout" | table | emit
	if awk '$1 == "cand" && $11 > 0 { f = 1 } END { exit !f }' "$hout"; then
		echo "- WARNING: wrk counted errors (socket errors or non-2xx/3xx) against the candidate" | emit
	fi
}

# ---------------------------------------------------------------- 5.3 cold

cold() {
	heading "### 5.3 Cold tiles: $cold_n never-generated LOD-0 tiles, 16 concurrent clients, $ncpu workers"
	say "5.3: cold: $cold_n tiles of world 918273645 near cx = 1e6, cz = -1e6"
	# a 20-wide strip of distinct tiles of another world, far from every other request
	awk -v n="$cold_n" 'BEGIN { for (i = 0; i < n; i++)
		printf "/v1/worlds/918273645/chunks/0/%d/%d\n", 1000000 + int(i / 20), -1000000 + i % 20 }' >"$W/cold"
	start_server cold --cache-mb 256 --workers "$ncpu" || return 1
	local port=$SRV_PORT pid=$SRV_PID g0 g1 c0 c1 t0 t1 ok=1 co hsum hcnt
	g0=$(metric "$port" terrain_generations_total)
	c0=$(cpu_ticks "$pid"); t0=$(now)
	fetch "$port" "$W/cold" 16 || ok=0
	t1=$(now); c1=$(cpu_ticks "$pid")
	g1=$(metric "$port" terrain_generations_total)
	co=$(metric "$port" terrain_cache_coalesced_total)
	hsum=$(metric "$port" terrain_generation_seconds_sum)
	hcnt=$(metric "$port" terrain_generation_seconds_count)
	stop_server "$pid" cold
	awk '{ print $2 * 1000 }' "$W/cold.w" >"$W/cold.ms"
	{
		printf 'tiles\tseconds\ttiles/s\tp50 ms\tp99 ms\tmax ms\tserver CPU ms/tile\tgeneration ms (server mean)\tgenerations\tstatuses\n'
		awk -v n="$cold_n" -v dt="$(echo "$t1 - $t0" | bc)" -v p50="$(pct "$W/cold.ms" 50)" \
			-v p99="$(pct "$W/cold.ms" 99)" -v mx="$(pct "$W/cold.ms" 100)" -v cpu=$((c1 - c0)) -v hz="$hz" \
			-v g="$g0 $g1" -v hs="$hsum" -v hc="$hcnt" -v st="$(status_summary "$W/cold.w")" 'BEGIN {
			split(g, G, " ")
			printf "%d\t%.2f\t%.0f\t%.1f\t%.1f\t%.1f\t%.2f\t%s\t%d\t%s\n", n, dt, n / dt, p50, p99, mx,
				cpu * 1000 / hz / n, (hc > 0 ? sprintf("%.2f", hs * 1000 / hc) : "n/a"), G[2] - G[1], st }'
		echo "note: one curl process, 16 parallel keep-alive connections, each tile requested once (Accept-Encoding: zstd);" \
			"latency = curl time_total per request; generations = terrain_generations_total delta (expected $cold_n; coalesced $co)"
		if [ -f "$out/presets.tsv" ]; then
			awk -F '\t' -v c="$ncpu" '$1 == "default" && $5 > 0 { printf "note: bench/run.sh section 2 (this build): default LOD 0" \
				" generate + encode + zstd = %.2f ms on one core, i.e. at most ~%.0f tiles/s on %d cores\n", $5, c * 1000 / $5, c }' "$out/presets.tsv"
		fi
	} | table | emit
	[ "$g1" = n/a ] || [ $((g1 - g0)) = "$cold_n" ] ||
		echo "- WARNING: $((g1 - g0)) generations for $cold_n distinct tiles" | emit
	[ $ok = 1 ] || { echo "- WARNING: not every cold request got 200: $(status_summary "$W/cold.w")" | emit; return 1; }
}

# ---------------------------------------------------------------- 5.4 RSS

rss() {
	heading "### 5.4 Memory at a full cache: --cache-mb $fill_mb, $fill_n distinct LOD-0 tiles"
	say "5.4: RSS: filling a $fill_mb MiB cache with $fill_n tiles"
	start_server rss --cache-mb "$fill_mb" --workers "$ncpu" || return 1
	local port=$SRV_PORT pid=$SRV_PID base hwm rssk step round done_n=0 ok=1
	sleep 0.3
	base=$(vm "$pid" VmRSS)
	# three worlds, tiles in a band far from the other sections; filled in rounds so that
	# growth after the cache reaches its bound shows
	awk -v n="$fill_n" 'BEGIN { for (i = 0; i < n; i++) { s = 101 + i % 3; j = int(i / 3)
		printf "/v1/worlds/%d/chunks/0/%d/%d\n", s, 5000 + int(j / 40), -3000 + j % 40 } }' >"$W/fill"
	step=$(((fill_n + 3) / 4))
	{
		printf 'tiles requested\tcache MiB (metric)\tentries\tevictions\tVmRSS MiB\tVmHWM MiB\tstatuses\n'
		printf '0 (after start)\t0\t0\t0\t%.1f\t%.1f\t-\n' "$(echo "$base / 1024" | bc -l)" "$(echo "$(vm "$pid" VmHWM) / 1024" | bc -l)"
		for round in 1 2 3 4; do
			sed -n "$(((round - 1) * step + 1)),$((round * step))p" "$W/fill" >"$W/fill.$round"
			[ -s "$W/fill.$round" ] || continue
			fetch "$port" "$W/fill.$round" 16 || ok=0
			done_n=$((done_n + $(wc -l <"$W/fill.$round")))
			printf '%d\t%.1f\t%s\t%s\t%.1f\t%.1f\t%s\n' "$done_n" \
				"$(echo "$(metric "$port" terrain_cache_bytes) / 1048576" | bc -l)" \
				"$(metric "$port" terrain_cache_entries)" "$(metric "$port" terrain_cache_evictions_total)" \
				"$(echo "$(vm "$pid" VmRSS) / 1024" | bc -l)" "$(echo "$(vm "$pid" VmHWM) / 1024" | bc -l)" \
				"$(status_summary "$W/fill.$round.w")"
		done
	} >"$W/rss.tsv"
	hwm=$(vm "$pid" VmHWM); rssk=$(vm "$pid" VmRSS)
	local cap bytes
	cap=$(metric "$port" terrain_cache_capacity_bytes); bytes=$(metric "$port" terrain_cache_bytes)
	stop_server "$pid" rss
	{
		cat "$W/rss.tsv"
		awk -v b="$base" -v h="$hwm" -v r="$rssk" -v mb="$fill_mb" -v cap="$cap" -v bytes="$bytes" 'BEGIN {
			lim = (mb * 1024 + b) * 1.10
			printf "note: base = VmRSS right after start = %.1f MiB; target: peak RSS (VmHWM) <= 1.10 x (%d MiB + base) = %.1f MiB:" \
				" peak %.1f MiB = %.2f x (cache-mb + base)\n", b / 1024, mb, lim / 1024, h / 1024, h / (mb * 1024 + b)
			printf "note: at the end: cache %.1f of %.1f MiB (metric, overhead included), VmRSS - cache bytes = %.1f MiB\n",
				bytes / 1048576, cap / 1048576, (r * 1024 - bytes) / 1048576 }'
		echo "note: $fill_n tiles of worlds 101-103 (~40 KB zstd each, ~$((fill_n * 40 / 1024)) MiB in all), 16 parallel connections, in 4 rounds"
	} | table | emit
	awk -v b="$base" -v h="$hwm" -v mb="$fill_mb" -v t="$TARGETS" 'BEGIN {
		printf "peak RSS at a full cache (--cache-mb %d)\t<= 1.10 x (cache-mb + base %.1f MiB)\t%.1f MiB = %.2fx\t%s\n",
			mb, b / 1024, h / 1024, h / (mb * 1024 + b), h <= 1.10 * (mb * 1024 + b) ? "yes" : "no" >> t }'
	[ $ok = 1 ] || { echo "- WARNING: not every fill request got 200" | emit; return 1; }
}

# ---------------------------------------------------------------- 5.5 user space

# callgrind_run NAME SECONDS: the server under callgrind, one request for the hot
# tile, then wrk on it for SECONDS (none when 0); prints "instructions requests"
callgrind_run() {
	local name=$1 secs=$2 port pid n=1 tile=/v1/worlds/42/chunks/0/3/5
	WRAP=(valgrind --tool=callgrind --callgrind-out-file="$W/$name.cg")
	if ! start_server "$name" --workers 1 --data-dir "$W/$name.data"; then WRAP=(); return 1; fi
	WRAP=()
	port=$SRV_PORT; pid=$SRV_PID
	curl -fsS -o /dev/null --max-time 120 -H 'Accept-Encoding: zstd' "http://127.0.0.1:$port$tile" || {
		stop_server "$pid" "$name"; return 1; }
	if [ "$secs" != 0 ]; then
		n=$(ANCHOR_MODE=fixed ANCHOR_TEMPLATE="$tile" ANCHOR_HEADER='Accept-Encoding: zstd' \
			bg wrk -t1 -c16 -d"${secs}s" -s "$root/../shared/bench/http/tiles.lua" "http://127.0.0.1:$port/" |
			sed -n 's/^ANCHOR requests=\([0-9]*\).*/\1/p') || n=""
		[ -n "$n" ] || { stop_server "$pid" "$name"; return 1; }
		n=$((n + 1))
	fi
	stop_server "$pid" "$name"
	[ -s "$W/$name.cg" ] || return 1
	echo "$(awk '/^summary:/ { print $2; exit }' "$W/$name.cg") $n"
}

user_space() {
	heading "### 5.5 User space per cache hit (callgrind instructions)"
	command -v valgrind >/dev/null || { echo "valgrind not installed (scripts/deps.sh bench), skipped" | emit; return 0; }
	say "5.5: user space: the server under callgrind, once with one request and once under wrk"
	local base hot
	base=$(callgrind_run cg-base 0) || { say "5.5: the baseline run failed: $(tail -n 3 "$W/cg-base.log")"; return 1; }
	hot=$(callgrind_run cg-hot 5) || { say "5.5: the loaded run failed: $(tail -n 3 "$W/cg-hot.log")"; return 1; }
	# every function of the loaded run, largest first, as "name<TAB>instructions per hit",
	# from lines "1,234 (5.6%)  file:function [object]"
	callgrind_annotate --threshold=100 "$W/cg-hot.cg" 2>/dev/null | awk -v h="$hot" '
		BEGIN { split(h, H, " ") }
		/PROGRAM TOTALS/ || !/^ *[0-9,]+ +\( *[0-9.]+%\) +[^ ]*:/ { next }
		{
			n = $1; gsub(",", "", n); f = $0
			sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", f); sub(/ \[.*/, "", f); sub(/.*:/, "", f)
			printf "%s\t%.0f\n", f, n / H[2] }' >"$W/cg-hot.tsv" || true
	{
		printf 'hits\tinstructions per hit\tof which llhttp\n'
		awk -v b="$base" -v h="$hot" -v l="$(awk -F '\t' '$1 == "llhttp__internal__run" { print $2; exit }' "$W/cg-hot.tsv")" '
			BEGIN { split(b, B, " "); split(h, H, " ")
			n = H[2] - B[2]; printf "%d\t%.0f\t%s\n", n, (H[1] - B[1]) / n, l == "" ? "n/a" : l }'
		echo "note: one LOD-0 tile of world 42 (zstd), kept alive by 16 connections of wrk -t1; (instructions of that run - those of a run with one request) / hits; libuv, libc and llhttp included, the kernel not"
	} | table | emit
	echo | emit
	{
		printf 'function (the loaded run)\tinstructions per hit\n'
		head -n 10 "$W/cg-hot.tsv"
	} | table | emit
}

# ---------------------------------------------------------------- 5.6 codings

run_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# warm PORT HEADER: GET the 64 tiles once with HEADER; statuses in $W/warm.w
warm() {
	local x z
	for x in $(seq 0 7); do for z in $(seq 0 7); do
		printf 'url = "http://127.0.0.1:%s/v1/worlds/42/chunks/0/%d/%d"\noutput = "/dev/null"\n' "$1" "$x" "$z"
	done; done >"$W/warm.cfg"
	bg curl -sS --parallel --parallel-max 8 --max-time 120 -H "$2" -w '%{http_code}\n' -K "$W/warm.cfg" \
		>"$W/warm.w" 2>/dev/null || true
	! grep -qv '^200$' "$W/warm.w"
}

codings() {
	heading "### 5.6 Content codings of hot tiles: zstd, gzip, identity (issue 21)"
	command -v wrk >/dev/null || { echo "wrk not installed (scripts/deps.sh bench), skipped" | emit; return 0; }
	local names=(this) bins=("$server") i r c port pid b0 b1 ns0 ns1 line ok=1
	local codes=("zstd:Accept-Encoding: zstd" "gzip:Accept-Encoding: gzip" "identity:Accept-Encoding: identity")
	if [ -n "$baseline" ]; then
		[ -x "$baseline" ] || { say "5.6: HTTP_BENCH_BASELINE=$baseline is not an executable"; return 1; }
		names=(baseline this); bins=("$baseline" "$server")
	fi
	# random tiles of the 8 x 8, one header; prints the harness's ANCHOR line
	cat >"$W/codings.lua" <<'EOF'
local reqs, n = {}, 0
function init(args)
  local hn, hv = (os.getenv("CODING_HEADER") or ""):match("^([^:]+):%s*(.*)$")
  local hdrs = {}
  if hn then hdrs[hn] = hv end
  for x = 0, 7 do for z = 0, 7 do
    n = n + 1
    reqs[n] = wrk.format("GET", "/v1/worlds/42/chunks/0/" .. x .. "/" .. z, hdrs)
  end end
  math.randomseed(os.time() + (tonumber((tostring(reqs):match("0x(%x+)")) or "0", 16) or 0) % 100003)
end
function request() return reqs[math.random(n)] end
function done(summary, latency, requests)
  local s, e = summary.duration / 1e6, summary.errors
  io.write(string.format("ANCHOR requests=%d rps=%.1f mbps=%.2f p50=%d p99=%d errors=%d\n",
    summary.requests, summary.requests / s, summary.bytes / s / 1e6, latency:percentile(50),
    latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))
end
EOF
	: >"$W/codings"
	for i in "${!names[@]}"; do
		say "5.6: ${names[$i]}: warming 64 tiles in each coding, then wrk -t1 -c64 ${duration}s x $coding_runs per coding"
		local saved=$server; server=${bins[$i]}
		start_server "codings-${names[$i]}" --cache-mb 256 --workers "$ncpu"; local started=$?
		server=$saved
		[ $started = 0 ] || return 1
		port=$SRV_PORT; pid=$SRV_PID
		for c in "${codes[@]}"; do
			b0=$(metric "$port" terrain_cache_bytes)
			warm "$port" "${c#*:}" || ok=0
			b1=$(metric "$port" terrain_cache_bytes)
			echo "${names[$i]} ${c%%:*} cache $(( (b1 - b0) / 64 ))" >>"$W/codings"
		done
		for r in $(seq "$coding_runs"); do
			for c in "${codes[@]}"; do
				ns0=$(run_ns "$pid")
				line=$(CODING_HEADER="${c#*:}" bg wrk -t1 -c64 -d"${duration}s" -s "$W/codings.lua" \
					"http://127.0.0.1:$port/" | grep '^ANCHOR ') || line=""
				ns1=$(run_ns "$pid")
				[ -n "$line" ] || { say "5.6: wrk failed (${names[$i]}, ${c%%:*})"; ok=0; continue; }
				echo "${names[$i]} ${c%%:*} run $((ns1 - ns0)) $line" >>"$W/codings"
			done
		done
		stop_server "$pid" "codings-${names[$i]}"
	done
	{
		printf 'server\tcoding asked\treq/s\tbytes per response\tserver CPU us/req\tcache bytes per tile (this coding)\twrk errors\n'
		awk '$3 == "cache" { cache[$1 " " $2] = $4; next }
		$3 == "run" { k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
			for (i = 5; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			m = ++cnt[k]; rps[k, m] = v["rps"]; bpr[k, m] = v["mbps"] * 1e6 / v["rps"]
			us[k, m] = $4 / 1e3 / v["requests"]; err[k] += v["errors"] }
		function med(a, k, c,   i, j, t, x) { for (i = 1; i <= c; i++) x[i] = a[k, i]
			for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
			return c % 2 ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2 }
		END { for (i = 1; i <= n; i++) { k = order[i]; split(k, S, " ")
			printf "%s\t%s\t%.0f\t%.0f\t%.1f\t%s\t%d\n", S[1], S[2], med(rps, k, cnt[k]), med(bpr, k, cnt[k]),
				med(us, k, cnt[k]), (k in cache) ? cache[k] : "n/a", err[k] } }' "$W/codings"
		echo "note: 64 LOD-0 tiles of world 42 (0..7 x 0..7), warmed in each coding first; wrk -t1 -c64, keep-alive," \
			"${duration} s per run, medians of $coding_runs runs per coding, the codings interleaved; bytes per response" \
			"= wrk's bytes / requests (head included); CPU = all server threads' run time (schedstat) / requests"
		echo "note: cache bytes per tile: terrain_cache_bytes growth / 64 while warming that coding after the ones above" \
			"(a gzip or identity value sits beside the zstd one it was made from)"
		[ -z "$baseline" ] || echo "note: baseline \`$baseline\`: identity was decompressed by a worker job per request" \
			"and gzip was not served (gzip rows get identity)"
	} | table | emit
	[ $ok = 1 ] || { echo "- WARNING: some warm-up request or wrk run failed" | emit; return 1; }
}

# ---------------------------------------------------------------- main

: >"$results"
{
	echo "## 5. HTTP serving (bench/http.sh)"
	echo
	echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)," \
		"\`${server#"$root"/}\`, $ncpu CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at start"
	echo "- reproduce: \`make BUILD=build-bench OPT=-O3 all && bash bench/http.sh build-bench\`" \
		"(scripts/deps.sh bench first, as root: wrk, nginx-light, h2o)"
} | emit
for s in $sections; do
	case "$s" in
	1) export_tiles || { failed=1; echo "- section 5.1 failed (see stderr)" | emit; } ;;
	2) hits || { failed=1; echo "- section 5.2 failed (see stderr)" | emit; } ;;
	3) cold || { failed=1; echo "- section 5.3 failed (see stderr)" | emit; } ;;
	4) rss || { failed=1; echo "- section 5.4 failed (see stderr)" | emit; } ;;
	5) user_space || { failed=1; echo "- section 5.5 failed (see stderr)" | emit; } ;;
	6) codings || { failed=1; echo "- section 5.6 failed (see stderr)" | emit; } ;;
	*) say "unknown section $s" ;;
	esac
done
if [ "$(wc -l <"$TARGETS")" -gt 1 ]; then
	heading "### Targets (issue 3), this run"
	table <"$TARGETS" | emit
fi
printf '\n(load %s at the end)\n' "$(cut -d' ' -f1-3 /proc/loadavg)" | emit
say "written $results"
exit "$failed"
