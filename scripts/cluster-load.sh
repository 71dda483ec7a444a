# cluster-load.sh - the load tool of the cluster tests, sourced (never run)
# by scripts/container-test.sh and scripts/swarm-test.sh: checks, keyed
# edits through the front, loaders, a node's log, and the capacity table.
#
# The sourcing script sets, before it calls these:
#   tmp         a folder of its own (the loaders' files; $tmp/stop stops them)
#   F           the front's base URL (http://127.0.0.1:PORT)
#   EDIT_TOKEN  the edit token post sends (AUTH=... for one call overrides it)
#   run         a prefix of Idempotency-Keys unique to the run
#   LW          the world the loaders edit
#   LOADERS     how many loaders load_start starts
#   HOLD        s a stopped loader may still retry the edit it holds (60)
#   passed, failed  check's counters
# and defines say MSG (one line on stderr) and:
#   node_get NODE PATH   the body of GET PATH on node NODE (curl on
#                        127.0.0.1:8080 inside its container), empty if none
#   nodes                the node containers' ids, one a line
#   redis_cli SERVICE ARGS...  redis-cli (redis-node.sh cli) on the data
#                        node SERVICE (redis1, redis2, redis3)
# NODE is what the script's node_get takes (an id, or @ID in the container
# test); capacity_* pass node_ref ID through it (default: ID as is).
# shellcheck shell=bash

# need_engine: return when a Docker engine answers, else say why in one line
# (the sourcing script's say) and exit 77, which .ci/run tells apart from a
# failed check
need_engine() {
	local err
	if ! command -v docker >/dev/null; then
		say "no Docker engine: the docker command is missing (Debian: apt-get install docker.io; then start dockerd)"
		exit 77
	fi
	if ! err=$(docker info 2>&1 >/dev/null); then
		say "no Docker engine: $(printf '%s\n' "$err" | grep . | tail -n 1)"
		exit 77
	fi
}

check() {
	local msg=$1
	shift
	if "$@"; then
		echo "ok: $msg"
		passed=$((passed + 1))
	else
		echo "FAIL: $msg"
		failed=$((failed + 1))
	fi
}
secret() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
# status counts of files: "503 x4, 504 x1"
statuses() { cat "$@" 2>/dev/null | sort | uniq -c | awk '{ c = $1; $1 = ""; printf "%s%s x%s", s, substr($0, 2), c; s = ", " }'; }
# the value of JSON field $1 (a number or a hex string) in stdin
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([0-9a-f]*\)\"\{0,1\}[,}].*/\1/p"; }

post() { # WORLD BODY [KEY] -> the answer's body, then its status on the last line
	local key=()
	[ -z "${3:-}" ] || key=(-H "Idempotency-Key: \"$3\"")
	curl -sS --max-time "${CURL_MAX:-30}" -w '\n%{http_code}\n' -X POST \
		-H "Authorization: Bearer ${AUTH-$EDIT_TOKEN}" -H 'Content-Type: application/json' \
		"${key[@]}" -d "$2" "$F/v1/worlds/$1/edits" 2>/dev/null || printf '\n000\n'
}
# WORLD BODY KEY CODES LIMIT: post BODY with Idempotency-Key KEY until it
# gets 200, retrying the same key on every other answer (503, 504, 409,
# the front's 502/503, 000 for none) after a short backoff; 400 and 422 end it
# (a bug: the key is good and the body the same). Gives up LIMIT s after
# the first attempt, or HOLD s after $tmp/stop appears. Appends each
# answer's status to the file CODES ("200 replay" for a replayed one);
# prints the last answer (body, status), then the attempts on a line.
keyed_post() {
	local n=0 end=$((SECONDS + $5)) held='' out code
	while :; do
		n=$((n + 1))
		out=$(post "$1" "$2" "$3")
		code=${out##*$'\n'}
		case $code,$out in
		200,*'"replay":true'*) echo "200 replay" ;;
		*) echo "$code" ;;
		esac >>"$4"
		case $code in 200 | 400 | 422) break ;; esac
		if [ -e "$tmp/stop" ] && [ -z "$held" ]; then
			held=1
			[ $((SECONDS + ${HOLD:-60})) -ge "$end" ] || end=$((SECONDS + ${HOLD:-60}))
		fi
		[ "$SECONDS" -lt "$end" ] || break
		sleep "0.$((n < 5 ? n * 2 : 9))"
	done
	printf '%s\n%s\n' "$out" "$n"
}

# ---- loaders -------------------------------------------------------------------------------
# loader L [TAG]: edits world LW through the front until $tmp/stop, one edit
# a batch at coordinates no other loader uses, each with its own
# Idempotency-Key, retried with it until 200 (keyed_post; at most HOLD s
# once told to stop). Files: TAGintended.L ("x z" of every edit meant),
# TAGcodes.L (every answer's status), TAGtries.L ("x z attempts
# last-status"); acked.L ("first_seq x z" of each acknowledged one, untagged:
# every round's).
loader() {
	local l=$1 tag=${2:-} b=0 x z res out code seq
	while [ ! -e "$tmp/stop" ]; do
		b=$((b + 1))
		x=$((l * 100000 + b)) z=$((-b))
		echo "$x $z" >>"$tmp/${tag}intended.$l"
		res=$(CURL_MAX=5 keyed_post "$LW" "{\"edits\":[{\"op\":\"raise\",\"x\":$x,\"z\":$z,\"radius\":4,\"strength\":0.25}]}" \
			"$run.$l.$b" "$tmp/${tag}codes.$l" 600)
		out=${res%$'\n'*}
		code=${out##*$'\n'}
		echo "$x $z ${res##*$'\n'} $code" >>"$tmp/${tag}tries.$l"
		if [ "$code" = 200 ]; then
			seq=$(printf '%s' "$out" | sed -n 's/.*"first_seq":\([0-9]*\).*/\1/p')
			echo "$seq $x $z" >>"$tmp/acked.$l"
		fi
	done
}
# load_start [ROUND]: LOADERS loaders in the background (pids in
# loader_pids); with ROUND, loaders L + 10 ROUND whose files are tagged
# "ROUND." (the container test's fault rounds), else loaders 1..LOADERS
load_start() {
	local l
	rm -f "$tmp/stop"
	loader_pids=()
	for l in $(seq "$LOADERS"); do
		if [ -n "${1:-}" ]; then loader "$((l + 10 * $1))" "$1." & else loader "$l" & fi
		loader_pids+=($!)
	done
}
load_stop() {
	touch "$tmp/stop"
	wait "${loader_pids[@]}" 2>/dev/null || true
	loader_pids=()
}
acked_now() { cat "$tmp"/acked.* 2>/dev/null | wc -l; }
# the edits of world LW in the log of node $1, as "seq x z"
log_of() {
	local since=0 next
	: >"$tmp/log"
	while :; do
		node_get "$1" "/v1/worlds/$LW/edits?since=$since&limit=1000" >"$tmp/page"
		echo >>"$tmp/page" # its last line, which sed would leave unended
		sed 's/},{/}\n{/g' "$tmp/page" |
			sed -n 's/.*"seq":\([0-9]*\),"op":"raise","x":\(-\{0,1\}[0-9]*\),"z":\(-\{0,1\}[0-9]*\),.*/\1 \2 \3/p' \
				>>"$tmp/log"
		next=$(grep -o '"next":[0-9]*' "$tmp/page" | cut -d: -f2 || true)
		[ -n "$next" ] || break
		since=$next
	done
	sort -u "$tmp/log"
}

# ---- capacity: what the load cost, printed, never asserted ---------------------------------
# capacity_mark NAME: each node's process CPU seconds, resident bytes and
# tile cache hits and misses (its /metrics), and the time, in $tmp/cap.NAME
# as "id cpu rss hits misses" lines after a "time MS" line.
node_ref() { echo "$1"; }
capacity_mark() {
	local n
	echo "time $(date +%s%3N)" >"$tmp/cap.$1"
	for n in $(nodes); do
		node_get "$(node_ref "$n")" /metrics | awk -v id="${n:0:12}" '
			$1 == "process_cpu_seconds_total" { c = $2 }
			$1 == "process_resident_memory_bytes" { r = $2 }
			$1 == "terrain_cache_hits_total" { h = $2 }
			$1 == "terrain_cache_misses_total" { m = $2 }
			END { if (c != "") print id, c, r + 0, h + 0, m + 0 }' >>"$tmp/cap.$1"
	done
}
# capacity_delta A B: over the nodes in both marks, "seconds cpu hits misses
# nodes" from mark A to mark B
capacity_delta() {
	awk 'FNR == 1 { t[FILENAME == ARGV[1]] = $2; next }
	     FILENAME == ARGV[1] { c[$1] = $2; h[$1] = $4; m[$1] = $5; next }
	     $1 in c { cpu += $2 - c[$1]; hits += $4 - h[$1]; miss += $5 - m[$1]; n++ }
	     END { printf "%.3f %.2f %d %d %d\n", (t[0] - t[1]) / 1000, cpu, hits, miss, n }' \
		"$tmp/cap.$1" "$tmp/cap.$2"
}
# fetch_tiles FILE CONNS: GET every URL path of FILE through the front (zstd,
# CONNS parallel kept-alive connections, one curl); prints the 200s
fetch_tiles() {
	awk -v f="$F" '{ printf "url = \"%s%s\"\noutput = \"/dev/null\"\n", f, $0 }' "$1" >"$tmp/cap.curl"
	curl -s --parallel --parallel-max "$2" -H 'Accept-Encoding: zstd' --max-time 60 \
		-w '%{http_code}\n' -K "$tmp/cap.curl" 2>/dev/null | grep -c '^200$' || true
}
# capacity_report EDITS SECONDS WHO: after a load phase that got EDITS
# acknowledged edits in SECONDS s (WHO: the clients that made them), with
# capacity_mark load0 taken when it began and the loaders stopped:
#   - tiles: CAP_TILES (200) LOD-0 tiles of world 42 never asked before
#     (cold: columns far out, unique to the run), then the same tiles
#     CAP_WARM (10) times again (warm: consistent hashing sends each to the
#     node that made it), CAP_CONNS (8) connections through the front; wall
#     tiles/s, the nodes' CPU per tile (process_cpu_seconds_total, 10 ms
#     ticks; idle work included), and so tiles/s per node core;
#   - each node's resident memory, Redis used_memory on the primary;
#   - the nodes' CPU over the load phase, in cores, for the nodes present
#     at both ends.
# Prints lines "capacity: FIGURE: VALUE ..." to stdout (7 of them, the first a
# heading); figures, never asserted. Wall figures on a shared 2-core machine
# are noisy: compare within one run.
capacity_report() {
	local edits=$1 secs=$2 who=$3 tiles=${CAP_TILES:-200} warm=${CAP_WARM:-10} conns=${CAP_CONNS:-8}
	local base i ok s d hits miss n ls lc ln mem line
	capacity_mark load1
	read -r ls lc _ _ ln < <(capacity_delta load0 load1)
	# cold: a block of columns no test asks for, different in each run
	base=$((100000 + ($(date +%s) % 100000) * 40 + RANDOM % 40))
	for i in $(seq 0 $((tiles - 1))); do echo "/v1/worlds/42/chunks/0/$((base + i / 20))/$((i % 20 - 10))"; done \
		>"$tmp/cap.tiles"
	for i in $(seq "$warm"); do cat "$tmp/cap.tiles"; done >"$tmp/cap.warm"
	capacity_mark t0
	ok=$(fetch_tiles "$tmp/cap.tiles" "$conns")
	capacity_mark t1
	i=$(fetch_tiles "$tmp/cap.warm" "$conns")
	capacity_mark t2
	echo "capacity: the load tool's figures (this run, this machine: noisy when shared; printed, never asserted)"
	awk -v e="$edits" -v s="$secs" -v who="$who" 'BEGIN {
		printf "capacity: edits acknowledged/s: %.1f (%d in %.1f s by %s, each waiting for its answer: client-bound, not the primary'"'"'s ceiling)\n", (s > 0 ? e / s : 0), e, s, who }'
	for line in "cold $ok $tiles t0 t1 new" "warm $i $((tiles * warm)) t1 t2 repeated"; do
		set -- $line
		read -r s d hits miss n < <(capacity_delta "$4" "$5")
		awk -v k="$1" -v ok="$2" -v all="$3" -v what="$6" -v s="$s" -v cpu="$d" -v h="$hits" -v m="$miss" \
			-v n="$n" -v c="$conns" 'BEGIN {
			printf "capacity: tiles/s %s: %.0f wall (%d of %d %s LOD-0 tiles answered 200 in %.2f s, %d connections through the front); node CPU %.2f s, %.2f ms a tile: %s tiles/s per node core; node cache %d misses, %d hits (%d nodes)\n",
				k, (s > 0 ? ok / s : 0), ok, all, what, s, c, cpu, (ok > 0 ? 1000 * cpu / ok : 0),
				(cpu > 0 ? sprintf("%.0f", ok / cpu) : "? (under a tick)"), m, h, n }'
	done
	mem=$(awk 'FNR > 1 { printf "%s%s %.1f MiB", s, $1, $3 / 1048576; s = ", "; t += $3; n++ }
		END { if (n) printf "; mean %.1f MiB", t / n / 1048576 }' "$tmp/cap.t2")
	echo "capacity: node memory (resident): ${mem:-none answered}"
	mem=
	for s in redis1 redis2 redis3; do
		[ "$(redis_cli "$s" --raw ROLE 2>/dev/null | head -n 1 | tr -d '\r')" = master ] || continue
		mem=$(redis_cli "$s" INFO memory 2>/dev/null | tr -d '\r' |
			awk -F: -v s="$s" '$1 == "used_memory" { b = $2 } $1 == "used_memory_rss" { r = $2 }
				END { if (b != "") printf "%.1f MiB (used_memory %d; resident %.1f MiB) on the primary, %s", b / 1048576, b, r / 1048576, s }')
		break
	done
	echo "capacity: Redis used_memory: ${mem:-no primary answered}"
	awk -v s="$secs" -v d="$ls" -v p="$lc" -v n="$ln" 'BEGIN {
		printf "capacity: node CPU over the load phase: %.2f cores (%.1f CPU s in %.1f s over %d nodes present throughout: %.2f cores a node)\n",
			(d > 0 ? p / d : 0), p, d, n, ((d > 0 && n > 0) ? p / d / n : 0) }'
}
# the capacity table's lines in FILE, each with a figure: 6 when all are there
capacity_lines() {
	grep -cE '^capacity: (edits acknowledged/s: [0-9]|tiles/s cold: [0-9]|tiles/s warm: [0-9]|node memory \(resident\): [0-9a-f]{12} [0-9]|Redis used_memory: [0-9]|node CPU over the load phase: [0-9])' "$1" || true
}
