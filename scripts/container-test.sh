#!/bin/bash
# container-test.sh - `make container-test`: the cluster of
# docker/compose.cluster.yaml for real. Builds the base image from Debian's
# packages (scripts/docker-base.sh) and the images (scripts/docker-images.sh),
# starts the `terrain` service scaled to three nodes, the HAProxy front, three
# Redis data nodes and three Sentinels with Debian's docker.io and
# docker-compose (v1), then:
#   - edits under a read load: WRITERS clients post BATCHES batches each
#     through the front, at once, each batch with its own Idempotency-Key
#     (retried with it until 200), while READERS connections fetch random
#     tiles through the front (wrk when installed, else curl loops): every batch
#     must get 200 at its first attempt (issue 35: no error answer without a
#     fault; the check says how many did not), and the read load's numbers
#     are printed;
#   - the load tool's capacity table at the end of that phase
#     (scripts/cluster-load.sh, capacity_report): edits acknowledged/s,
#     cold and warm tiles/s with the nodes' CPU per tile, each node's
#     resident memory, Redis used_memory, the nodes' CPU in cores; printed,
#     never asserted (the check is that its six lines are there);
#   - the swarm load test (terrain-client swarm) through the front;
#   - convergence: every node reports the same edit_seq (every acknowledged
#     edit, once) and world_hash, and the same bytes for an edited tile;
#   - the front: tiles spread over the nodes, a ?v= tile is served from its
#     cache;
#   - faults, each under a load of LOADERS clients editing through the front:
#     kill -9 of the primary's redis-server twice in a row (the restart
#     policy brings it back in between), docker kill + docker start of the
#     primary, docker pause of the primary, docker pause of a node, docker
#     network disconnect of a node (its reads and liveness stay, readiness
#     says edits are down) and back. Each intended edit (coordinates no
#     other uses) has its own Idempotency-Key and is retried with it on
#     every answer but 200 (503, 504, 409, the front's 502 or 503, no answer
#     within 5 s), with a short backoff, until 200; 400 and 422 would be
#     bugs (counted, not retried); a loader told to stop finishes the edit it
#     holds, for at most HOLD s (unresolved ones fail the check). After
#     each: edits answer 200 again within BOUND s (Sentinel's down-after
#     plus CT_SLACK), not one acknowledged edit is missing from the log
#     (each one's first_seq and coordinates), every intended edit is in the
#     log exactly once (0 missing, 0 duplicated; the check gives the
#     answers by status and the retries), every node has one world hash,
#     and Redis is one primary with two connected replicas again;
#   - elastic nodes, each step under the same load and checked the same way:
#     scale 3 -> 5 (the new nodes answer through the front once healthy, the
#     front not restarted), then 5 -> 2 (the removed nodes drained: each
#     said so and did not hit its drain limit; the front answers from the
#     others only); and over all rounds, every intended edit exactly once
#     and nothing else;
#   - a fresh node replaying the log from Redis holds every intended edit
#     exactly once and the nodes' log edit for edit;
# and tears everything down (volumes too). Outside `make test`: it needs a
# Docker engine. Exit status: 0 all passed, 1 a check failed, 77 no Docker
# engine answers (said in one line; nothing was built). CT_KEEP=1 leaves the
# cluster up for a look. Processes and containers are killed by pid and by
# container id, never by name patterns.
# The load tool (post, keyed_post, the loaders, log_of, the capacity table)
# is scripts/cluster-load.sh, shared with scripts/swarm-test.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
say() { echo "container-test: $*" >&2; }
# check, post, keyed_post, loader, load_start, log_of, capacity_report, ...
. scripts/cluster-load.sh
need_engine
scripts/deps.sh container
command -v docker-compose >/dev/null || { say "docker-compose missing after scripts/deps.sh container"; exit 1; }

WRITERS=${CT_WRITERS:-4}
BATCHES=${CT_BATCHES:-25}
LOADERS=${CT_LOADERS:-4}
READERS=${CT_READERS:-16} # connections of the read load beside the writers
HOLD=${CT_HOLD:-60}       # s a stopped loader may still retry the edit it holds
DOWN_MS=${CT_DOWN_MS:-2000}
SLACK=${CT_SLACK:-8}
BOUND=$((DOWN_MS / 1000 + SLACK))
export TERRAIN_SENTINEL_DOWN_MS=$DOWN_MS
export TERRAIN_EDIT_TOKEN TERRAIN_REDIS_PASSWORD TERRAIN_REDIS_ADMIN_PASSWORD TERRAIN_SENTINEL_PASSWORD
TERRAIN_EDIT_TOKEN=$(secret)
EDIT_TOKEN=$TERRAIN_EDIT_TOKEN # post's
TERRAIN_REDIS_PASSWORD=$(secret) TERRAIN_REDIS_ADMIN_PASSWORD=$(secret) TERRAIN_SENTINEL_PASSWORD=$(secret)
export TERRAIN_PUBLISH=127.0.0.1: # a free port, read back below
export SWARM_PLAYERS=${CT_PLAYERS:-50} SWARM_SECONDS=${CT_SECONDS:-10}
project=terrainct$$
run=$project.$(date +%s) # Idempotency-Keys unique to this run
dc() { docker-compose -p "$project" -f docker/compose.cluster.yaml "$@"; }
tmp=$(mktemp -d /tmp/terrain-ct.XXXXXX)
failed=0 passed=0
loader_pids=() reader_pids=() log_pids=()
teardown() {
	local p
	touch "$tmp/stop" "$tmp/reads.stop"
	for p in "${loader_pids[@]}" "${reader_pids[@]}" "${log_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ "${CT_KEEP:-0}" = 1 ]; then
		say "CT_KEEP=1: left up; docker-compose -p $project -f docker/compose.cluster.yaml down -v"
	else
		dc --profile swarm down -v --remove-orphans >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap teardown EXIT
t0=$SECONDS

scripts/docker-base.sh "${TERRAIN_BASE_IMAGE:-terrain-base:bookworm}"
say "building the images"
LOG=$tmp/build.log scripts/docker-images.sh
say "starting the cluster ($((SECONDS - t0)) s)"
dc up -d --scale terrain=3 >"$tmp/up.log" 2>&1 || { cat "$tmp/up.log" >&2; dc logs --tail 30 >&2; exit 1; }

id_of() { dc ps -q "$1"; }
# the containers of the scaled node service, by id; a node's name
# (X-Terrain-Node) is its host name, the first 12 digits of its id
nodes() { dc ps -q terrain; }
name_of() { echo "${1:0:12}"; }
# every service healthy, within 120 s
services="redis1 redis2 redis3 s1 s2 s3 front"
healthy() {
	local s
	for s in $(for s in $services; do id_of "$s"; done) $(nodes); do
		[ "$(docker inspect -f '{{.State.Health.Status}}' "$s" 2>/dev/null)" = healthy ] ||
			return 1
	done
}
for _ in $(seq 120); do healthy && break; sleep 1; done
if ! healthy; then
	say "not every service became healthy:"
	dc ps >&2
	dc logs --tail 20 >&2
	exit 1
fi
# a lost DNS answer costs 1 s, not glibc's 5 (compose.cluster.yaml's x-dns)
resolv_ok() {
	local n
	for n in s1 s2 s3 redis1 redis2 redis3; do
		dc exec -T "$n" grep -q '^options.*timeout:1' /etc/resolv.conf || return 1
	done
	for n in $(nodes); do
		docker exec "$n" grep -q '^options.*timeout:1' /etc/resolv.conf || return 1
	done
}
check "every Redis, Sentinel and node waits 1 s for a DNS answer (resolv.conf)" resolv_ok
# ---- credentials -------------------------------------------------------------------------
rules() { sed -n 's/^user terrain on >PASSWORD //p' "$1"; }
check "the nodes' Redis user has exactly docs/cluster.md's rules" \
	test "$(rules docs/cluster.md)" = "$(sed -n "s/^TERRAIN_RULES='\(.*\)'$/\1/p" docker/redis-node.sh)"
nopass() { dc exec -T redis1 redis-cli --raw "$@" 2>&1 || true; }
check "Redis refuses a client without credentials (the default user is off)" \
	eval '[[ "$(nopass XLEN terrain:log)" == *NOAUTH* ]]'
check "... and the nodes' user outside its keys and commands" \
	eval '[[ "$(dc exec -T -e REDISCLI_AUTH="$TERRAIN_REDIS_PASSWORD" redis1 redis-cli --user terrain --raw FLUSHALL 2>&1)" == *NOPERM* ]]'
check "a Sentinel refuses a client without its password" \
	eval '[[ "$(dc exec -T s1 redis-cli -p 26379 --raw SENTINEL masters 2>&1)" == *NOAUTH* ]]'
check "a node with a wrong Redis password refuses to start, saying why" \
	eval '[[ "$(dc run --rm --no-deps -e TERRAIN_REDIS_PASSWORD=wrong -e TERRAIN_DATA_DIR=/tmp/d \
		terrain 2>&1)" == *"refusing to start"*WRONGPASS* ]]'
check "three nodes, each its own name (its container id): $(nodes | cut -c1-12 | tr '\n' ' ')" \
	test "$(nodes | cut -c1-12 | sort -u | wc -l)" = 3
port=$(dc port front 8080 | sed 's/.*://')
F=http://127.0.0.1:$port
say "healthy; the front on $F ($((SECONDS - t0)) s)"

# GET PATH of node $1: a service, or @ID for a container by its id (the nodes)
node_get() {
	case $1 in
	@*) docker exec "${1#@}" curl -sS --max-time 5 "http://127.0.0.1:8080$2" 2>/dev/null || true ;;
	*) dc exec -T "$1" curl -sS --max-time 5 "http://127.0.0.1:8080$2" 2>/dev/null || true ;;
	esac
}
# cluster-load.sh's hooks: node_get above, its name for a node by id,
# redis-cli on a data node
node_ref() { echo "@$1"; }
redis_cli() { dc exec -T "$1" redis-node.sh cli "${@:2}"; }

# ---- edits through the front, WRITERS at once, under a read load ------------------
# READERS connections fetch tiles of world 42 at random (LOD 0 to 2, cx and
# cz in [-512, 512)) through the front: unversioned, so each one goes to its node
# and most are generated there. wrk (Debian's package) when installed, else
# one curl loop per 4 connections.
reads=
read_load_start() {
	local r
	rm -f "$tmp/reads.stop"
	if command -v wrk >/dev/null; then
		cat >"$tmp/tiles.lua" <<-'EOF'
			math.randomseed(os.time())
			request = function()
				return wrk.format("GET", "/v1/worlds/42/chunks/" .. math.random(0, 2) .. "/" ..
					math.random(-512, 511) .. "/" .. math.random(-512, 511))
			end
		EOF
		reads=wrk
		wrk -t2 -c"$READERS" -d3600s --timeout 10s -s "$tmp/tiles.lua" "$F/" >"$tmp/wrk.out" 2>&1 &
		reader_pids=($!)
		return
	fi
	reads="curl loops"
	reader_pids=()
	for r in $(seq $(((READERS + 3) / 4))); do
		while [ ! -e "$tmp/reads.stop" ]; do
			curl -s -o /dev/null --max-time 10 -w '%{http_code}\n' \
				"$F/v1/worlds/42/chunks/$((RANDOM % 3))/$((RANDOM % 1024 - 512))/$((RANDOM % 1024 - 512))" ||
				true
		done >"$tmp/reads.$r" &
		reader_pids+=($!)
	done
}
# stops the read load (wrk on SIGINT prints its summary); prints what it
# did, its first word the requests (not in $(...): it waits for its children)
read_load_stop() {
	local s n
	touch "$tmp/reads.stop"
	if [ "$reads" = wrk ]; then
		kill -INT "${reader_pids[0]}" 2>/dev/null || true
		wait "${reader_pids[0]}" || true
		reader_pids=()
		sed 's/^/  wrk: /' "$tmp/wrk.out" >&2
		n=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$tmp/wrk.out")
		s=$(sed -n 's/^ *[0-9]* requests in \([0-9.]*[a-z]*\),.*/\1/p' "$tmp/wrk.out")
		echo "${n:-0} tile reads in ${s:-?} ($(sed -n 's/^Requests\/sec: *//p' "$tmp/wrk.out")/s," \
			"latency avg/max $(awk '$1 == "Latency" { print $2 "/" $4 }' "$tmp/wrk.out"));" \
			"non-2xx/3xx: $(sed -n 's/^ *Non-2xx or 3xx responses: //p' "$tmp/wrk.out" | grep . || echo 0);" \
			"socket errors: $(sed -n 's/^ *Socket errors: //p' "$tmp/wrk.out" | grep . || echo none)"
		return
	fi
	wait "${reader_pids[@]}" || true
	reader_pids=()
	n=$(cat "$tmp"/reads.[0-9]* 2>/dev/null | wc -l)
	echo "$n tile reads ($(statuses "$tmp"/reads.[0-9]*))"
}
writer() {
	local w=$1 b x z res
	for b in $(seq "$BATCHES"); do
		x=$(((w * 97 + b * 31) % 2048 - 1024))
		z=$(((w * 53 + b * 71) % 2048 - 1024))
		res=$(keyed_post 42 "{\"edits\":[{\"op\":\"raise\",\"x\":$x,\"z\":$z,\"radius\":30,\"strength\":1},
			     {\"op\":\"lower\",\"x\":$z,\"z\":$x,\"radius\":20,\"strength\":0.5}]}" \
			"$run.w$w.$b" "$tmp/answers.$w.$b" 60)
		printf '%s\n' "${res%$'\n'*}" >"$tmp/ack.$w.$b"
		tail -n 1 "$tmp/ack.$w.$b" >>"$tmp/codes.$w"
		head -n 1 "$tmp/answers.$w.$b" >>"$tmp/firsts"
		echo "${res##*$'\n'}" >>"$tmp/tries"
	done
}
say "edits: $WRITERS writers x $BATCHES batches through the front, under a read load of $READERS connections"
capacity_mark load0
load_t0=$(date +%s%3N)
read_load_start
writer_pids=()
for w in $(seq "$WRITERS"); do
	writer "$w" &
	writer_pids+=($!)
done
wait "${writer_pids[@]}"
load_s=$(awk -v t0="$load_t0" -v t1="$(date +%s%3N)" 'BEGIN { printf "%.1f", (t1 - t0) / 1000 }')
load_avg=$(cut -d ' ' -f 1 /proc/loadavg)
read_load_stop >"$tmp/read_stats"
read_stats=$(cat "$tmp/read_stats")
acked=$(cat "$tmp"/codes.* | grep -c '^200$' || true)
check "every edit batch acknowledged ($acked of $((WRITERS * BATCHES)), in $(awk '{ n += $1 } END { print n }' "$tmp/tries") attempts; answers: $(statuses "$tmp"/answers.*))" \
	test "$acked" = $((WRITERS * BATCHES))
first_ok=$(grep -c '^200$' "$tmp/firsts" || true)
check "no error answer without a fault: $((WRITERS * BATCHES - first_ok)) of $((WRITERS * BATCHES)) batches did not get 200 at their first attempt (first answers: $(statuses "$tmp/firsts")) beside the read load" \
	test "$first_ok" = $((WRITERS * BATCHES))
check "the read load ran beside them ($reads, $READERS connections: $read_stats; load average $load_avg)" \
	test "${read_stats%% *}" -gt 0
want_seq=$((acked * 2))
capacity_report "$want_seq" "$load_s" "$WRITERS writers of 2-edit batches, beside the read load" >"$tmp/capacity" ||
	say "capacity_report failed (its figures are never asserted; the check below counts its lines)"
cat "$tmp/capacity"
check "the load tool printed its capacity table ($(capacity_lines "$tmp/capacity") of 6 figures)" \
	test "$(capacity_lines "$tmp/capacity")" = 6

# ---- the swarm --------------------------------------------------------------------------
say "swarm: $SWARM_PLAYERS players for $SWARM_SECONDS s through the front"
if dc --profile swarm run --rm swarm >"$tmp/swarm.log" 2>&1; then swarm_ok=1; else swarm_ok=0; fi
sed 's/^/  /' "$tmp/swarm.log"
check "the swarm ran without errors" test "$swarm_ok" = 1

# ---- convergence ------------------------------------------------------------------------
# every node (every container of the service now): the same edit_seq (and
# at least $2) and world_hash of world $1; $tmp/info.first is the first one's
converged() {
	local world=$1 least=$2 n seq hash first=
	rm -f "$tmp"/info.*
	for n in $(nodes); do
		node_get "@$n" "/v1/worlds/$world" >"$tmp/info.$(name_of "$n")"
		seq=$(field edit_seq <"$tmp/info.$(name_of "$n")")
		hash=$(field world_hash <"$tmp/info.$(name_of "$n")")
		[ -n "$first" ] || cp "$tmp/info.$(name_of "$n")" "$tmp/info.first"
		[ -n "$seq" ] && [ "$seq" -ge "$least" ] || return 1
		[ -z "$first" ] && first="$seq $hash"
		[ "$seq $hash" = "$first" ] || return 1
	done
}
show_nodes() {
	local n
	for n in $(nodes); do
		n=$(name_of "$n")
		echo "  $n: edit_seq $(field edit_seq <"$tmp/info.$n") world_hash $(field world_hash <"$tmp/info.$n")"
	done
}
for _ in $(seq 60); do converged 42 "$want_seq" && break; sleep 0.5; done
show_nodes
check "every node: edit_seq $want_seq and one world_hash" converged 42 "$want_seq"
check "... and no more (edit_seq = acknowledged edits)" test "$(field edit_seq <"$tmp/info.first")" = "$want_seq"
# a chunk the first batch touched
chunk=$(head -n 1 "$tmp/ack.1.1" | sed -n 's/.*"chunks":\[\[\(-\{0,1\}[0-9]*\),\(-\{0,1\}[0-9]*\)\].*/\1 \2/p')
cx=${chunk% *} cz=${chunk#* }
for n in $(nodes); do
	docker exec "$n" sh -c "curl -fsS http://127.0.0.1:8080/v1/worlds/42/chunks/0/$cx/$cz | sha256sum" \
		>"$tmp/tile.$(name_of "$n")" 2>/dev/null || true
done
check "an edited tile (0/$cx/$cz) has the same bytes on every node" \
	test "$(sort -u "$tmp"/tile.* | wc -l)" = 1 -a -n "$cx"

# ---- the front (HAProxy) ----------------------------------------------------------------
for x in 0 1 2 3 4 5 6 7; do
	curl -sS -o /dev/null -D - "$F/v1/worlds/42/chunks/3/$x/0" | tr -d '\r' |
		sed -n 's/^[Xx]-[Tt]errain-[Nn]ode: //p'
done | sort -u >"$tmp/nodes"
check "tiles spread over the nodes ($(tr '\n' ' ' <"$tmp/nodes"))" test "$(wc -l <"$tmp/nodes")" -ge 2
xcs() { curl -sS -o /dev/null -D - --compressed "$1" | tr -d '\r' | sed -n 's/^[Xx]-[Cc]ache-[Ss]tatus: //p'; }
v=$(curl -sS "$F/v1/worlds/42/hashes?cx0=$cx&cz0=$cz&cx1=$cx&cz1=$cz" | grep -o '"version":[0-9]*' |
	cut -d: -f2 || true)
check "the edited chunk has a version ($v)" test "${v:-0}" -gt 0
xcs "$F/v1/worlds/42/chunks/2/$cx/$cz?v=${v:-0}" >/dev/null
check "a ?v= tile comes from the front's cache" test "$(xcs "$F/v1/worlds/42/chunks/2/$cx/$cz?v=${v:-0}")" = HIT

# ---- faults ------------------------------------------------------------------------------
# Loaders (cluster-load.sh's load_start ROUND) edit world LW through the
# front until $tmp/stop, one edit a batch at coordinates no other batch
# uses, each with its own Idempotency-Key, retried with it until 200
# (keyed_post; at most HOLD s once told to stop). Files of round R, loader
# L: R.intended.L ("x z" of every edit meant), R.codes.L (every answer's
# status), R.tries.L ("x z attempts last-status"); acked.L ("first_seq x z"
# of each acknowledged one, all rounds).
LW=7
# Probe: one edit through the front every 0.2 s until one is acknowledged;
# prints the seconds since $1 (a time from now_ms) that took, or fails after $2 s.
now_ms() { date +%s%3N; }
edits_back() {
	local from=$1 limit=$2 out
	while [ $(($(now_ms) - from)) -lt $((limit * 1000)) ]; do
		out=$(CURL_MAX=2 post 8 '{"edits":[{"op":"raise","x":1,"z":1,"radius":2,"strength":0.1}]}')
		if [ "${out##*$'\n'}" = 200 ]; then
			awk -v ms=$(($(now_ms) - from)) 'BEGIN { printf "%.1f", ms / 1000 }'
			return 0
		fi
		sleep 0.2
	done
	return 1
}
sentinel_primary() { # the service the Sentinels name primary (by quorum)
	local s
	for s in s1 s2 s3; do
		a=$(dc exec -T "$s" redis-node.sh scli --raw SENTINEL get-master-addr-by-name terrain \
			2>/dev/null || true)
		echo "${a%%[!a-z0-9]*}"
	done | sort | uniq -c | awk '$1 >= 2 && $2 != "" { print $2; exit }'
}
# one primary with two connected replicas, the one the Sentinels name
topology_ok() {
	local p r roles
	p=$(sentinel_primary)
	[ -n "$p" ] || return 1
	roles=$(dc exec -T "$p" redis-node.sh cli --raw ROLE 2>/dev/null || true)
	[ "${roles%%[!a-z]*}" = master ] || return 1
	r=$(dc exec -T "$p" redis-node.sh cli INFO replication 2>/dev/null | tr -d '\r' |
		grep -c '^slave[0-9]*:.*state=online' || true)
	[ "$r" = 2 ]
}
all_ready() {
	local n
	for n in $(nodes); do
		[ "$(docker exec "$n" curl -s -o /dev/null -w '%{http_code}' --max-time 3 \
			http://127.0.0.1:8080/readyz 2>/dev/null)" = 200 ] || return 1
	done
}
wait_for() { # SECONDS COMMAND...: until COMMAND succeeds
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.5
	done
}
round=0 total_acked=0
fault_start() { # NAME: a fault round under load
	round=$((round + 1))
	fault=$1
	say "fault $round: $fault"
	load_start "$round"
	sleep 2
}
# exactly-once counts of the edits "x z" in file $1 against the log "seq x z"
# in file $2: "in-the-log-once duplicated missing"
once() {
	awk 'NR == FNR { n[$2 " " $3]++; next }
	     { c = n[$1 " " $2]; if (c == 1) one++; else if (c > 1) dup++; else miss++ }
	     END { print one + 0, dup + 0, miss + 0 }' "$2" "$1"
}
# the edits "x z" of file $1 not exactly once in the log "seq x z" of file $2,
# as "x z times", at most 5 of them
not_once() {
	awk 'NR == FNR { n[$2 " " $3]++; next } n[$1 " " $2] != 1 { print $1, $2, n[$1 " " $2] + 0 }' \
		"$2" "$1" | head -n 5
}
# After the fault: stop the load, then check the log and the nodes.
fault_end() {
	local a lost i e d m n bad
	sleep 2
	load_stop
	# An attempt with no answer is in the log, or never will be, within the
	# nodes' --edit-deadline (5 s) + Redis timeout (3 s) of the front's stamp;
	# the loaders gave up on theirs after 5 s (docs/cluster.md, Late edits).
	# With its key a late one is a replay: wait that out, then count.
	sleep 4
	cat "$tmp"/acked.* 2>/dev/null | sort -u >"$tmp/acked"
	a=$(wc -l <"$tmp/acked")
	for _ in $(seq 60); do converged $LW "$a" && break; sleep 0.5; done
	check "$fault: one world hash on every node ($(nodes | wc -l); edit_seq $(field edit_seq <"$tmp/info.first"))" \
		converged $LW "$a"
	log_of "@$(nodes | head -n 1)" >"$tmp/logged"
	comm -23 "$tmp/acked" "$tmp/logged" >"$tmp/lost"
	lost=$(wc -l <"$tmp/lost")
	[ "$lost" = 0 ] || { say "acknowledged (first_seq x z) but not so in the log:"; head -n 5 "$tmp/lost" >&2; }
	check "$fault: 0 of $a acknowledged edits lost (first_seq and coordinates in the log)" \
		test "$lost" = 0 -a "$a" -gt 0
	# this round's intended edits, each in the log exactly once
	cat "$tmp/$round".intended.* 2>/dev/null | sort -u >"$tmp/intended"
	cat "$tmp/$round".tries.* 2>/dev/null >"$tmp/tries"
	i=$(wc -l <"$tmp/intended")
	read -r e d m < <(once "$tmp/intended" "$tmp/logged")
	n=$(awk '$4 != 200' "$tmp/tries" | wc -l)
	bad=$(awk '$4 == 400 || $4 == 422' "$tmp/tries" | wc -l)
	[ "$n" = 0 ] || { say "edits unresolved (x z attempts last-status):"; awk '$4 != 200' "$tmp/tries" | head -n 5 >&2; }
	[ "$d$m" = 00 ] || { say "intended edits not once in the log (x z times):"; not_once "$tmp/intended" "$tmp/logged" >&2; }
	check "$fault: exactly once: $i intended edits, $e in the log once, $d duplicated, $m missing, $n unresolved ($bad 400/422); answers: $(statuses "$tmp/$round".codes.*); $(awk '{ r += $3 - 1; if ($3 > m) m = $3 } END { printf "%d retries, at most %d attempts for one edit", r, m }' "$tmp/tries")" \
		test "$e" = "$i" -a "$d" = 0 -a "$m" = 0 -a "$n" = 0 -a "$i" -gt 0
	check "$fault: Redis is one primary with two online replicas again" wait_for 60 topology_ok
	check "$fault: every node takes edits again (/readyz 200)" wait_for 30 all_ready
	total_acked=$a
}
# edits back within BOUND s of $1 (now_ms when the fault began)
check_back() {
	local t
	if t=$(edits_back "$1" "$BOUND"); then
		check "$fault: edits answer 200 again after $t s (bound $BOUND s)" true
	else
		check "$fault: edits answer 200 again within $BOUND s" false
	fi
}
# the host pid of a container's redis-server (its pid 1: redis-node.sh execs it)
redis_pid() {
	local pid
	pid=$(docker inspect -f '{{.State.Pid}}' "$1")
	[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = redis-server ] || { say "pid $pid of $1 is not redis-server"; return 1; }
	echo "$pid"
}
restarts() { docker inspect -f '{{.RestartCount}}' "$1"; }
running() { [ "$(docker inspect -f '{{.State.Running}}' "$1")" = true ]; }

say "faults: each under $LOADERS clients editing world $LW through the front; edits must be back within $BOUND s (down-after $DOWN_MS ms + $SLACK s)"
for k in 1 2; do
	fault_start "kill -9 of the primary's redis-server ($k of 2)"
	p=$(sentinel_primary)
	id=$(id_of "$p")
	n0=$(restarts "$id")
	pid=$(redis_pid "$id")
	t=$(now_ms)
	kill -9 "$pid"
	say "killed redis-server pid $pid of $p"
	check_back "$t"
	wait_for 30 eval '[ "$(restarts "$id")" -gt "$n0" ] && running "$id"' || true
	check "$fault: the restart policy brought $p back (restarts $n0 -> $(restarts "$id"))" \
		test "$(restarts "$id")" -gt "$n0"
	fault_end
done

fault_start "docker kill of the primary, then docker start"
p=$(sentinel_primary)
id=$(id_of "$p")
t=$(now_ms)
docker kill "$id" >/dev/null
say "docker kill $p (${id:0:12})"
check_back "$t"
check "$fault: edits go on while $p stays down (5 s)" eval 'sleep 5; edits_back "$(now_ms)" 3 >/dev/null'
docker start "$id" >/dev/null
say "docker start $p"
fault_end
check "$fault: $p is back as a replica" test "$(sentinel_primary)" != "$p"

fault_start "docker pause of the primary"
p=$(sentinel_primary)
id=$(id_of "$p")
t=$(now_ms)
docker pause "$id" >/dev/null
say "docker pause $p"
check_back "$t"
check "$fault: the Sentinels named another primary" test "$(sentinel_primary)" != "$p"
docker unpause "$id" >/dev/null
say "docker unpause $p"
fault_end

# the distinct X-Terrain-Node values of $1 tile answers through the front
# (tiles of LOD 3 from column $2 on, unversioned: each asks its node), or
# "status-N" for an answer other than 200
front_nodes() {
	local i
	for i in $(seq "$1"); do
		curl -sS -o /dev/null -D - --max-time 10 "$F/v1/worlds/42/chunks/3/$(($2 + i))/$2" 2>/dev/null |
			tr -d '\r' | awk '/^HTTP/ { c = $2 } tolower($1) == "x-terrain-node:" { n = $2 }
				END { if (c == 200) print n; else print "status-" (c == "" ? "000" : c) }'
	done | sort -u
}
# when the front's container started, and its restarts: the same all along
# means the front followed every change of the nodes by itself
front_started() { docker inspect -f '{{.State.StartedAt}} restarts {{.RestartCount}}' "$(id_of front)"; }
front0=$(front_started)
# the front's slots for nodes that are UP, as "nodeN ADDRESS" (HAProxy's CSV
# statistics, on 127.0.0.1 inside its container)
front_up() {
	docker exec "$(id_of front)" curl -s --max-time 3 'http://127.0.0.1:8404/stats;csv' |
		awk -F, '$1 == "tiles" && $2 ~ /^node/ && $18 == "UP" { print $2, $74 }'
}

fault_start "docker pause of a node"
id=$(nodes | sed -n 2p)
nn=$(name_of "$id")
t=$(now_ms)
docker pause "$id" >/dev/null
say "docker pause $nn"
check_back "$t"
sleep 3
docker unpause "$id" >/dev/null
say "docker unpause $nn"
fault_end

fault_start "docker network disconnect of a node, and back"
id=$(nodes | sed -n 3p)
nn=$(name_of "$id")
net=${project}_default
ip=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$id")
t=$(now_ms)
docker network disconnect "$net" "$id"
say "$nn ($ip) disconnected from $net"
check_back "$t"
ready_code() { docker exec "$id" curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:8080/$1" 2>/dev/null || true; }
check "$fault: $nn says it is not ready for edits (/readyz 503)" wait_for 15 eval '[ "$(ready_code readyz)" = 503 ]'
check "... alive all the same (/healthz 200)" test "$(ready_code healthz)" = 200
check "... and serves reads (a tile)" test "$(ready_code v1/worlds/42/chunks/0/5/5)" = 200
node_get "@$id" /metrics >"$tmp/metrics"
check "... and the metrics say edits are down (terrain_edit_log_up 0)" grep -q '^terrain_edit_log_up 0' "$tmp/metrics"
sleep 16 # three health checks of 5 s
check "... and Docker still finds it healthy" \
	test "$(docker inspect -f '{{.State.Health.Status}}' "$id")" = healthy
# back under the service's name, as compose connected it
docker network connect --alias terrain --alias "$nn" "$net" "$id"
ip2=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$id")
say "$nn connected again ($ip2$([ "$ip2" = "$ip" ] || echo ", was $ip"))"
check "$fault: $nn ready for edits again within $BOUND s" \
	wait_for "$BOUND" eval '[ "$(ready_code readyz)" = 200 ]'
check "$fault: the front has $nn ($ip2) in rotation again within $BOUND s, by DNS" \
	wait_for "$BOUND" eval 'front_up | grep -q " $ip2:8080$"'
fault_end

# ---- elastic nodes: scale up, then down, under the same load -------------------------
# `up --scale` with --no-recreate: nothing but the node count changes.
scale() { dc up -d --no-recreate --scale terrain="$1" >"$tmp/scale.log" 2>&1 || { cat "$tmp/scale.log" >&2; return 1; }; }
names() { local n; for n in "$@"; do name_of "$n"; done | tr '\n' ' '; }

fault_start "scale 3 -> 5 nodes"
before=$(nodes | sort)
check "$fault: docker-compose up --scale terrain=5" scale 5
new=$(nodes | sort | comm -13 <(echo "$before") -)
say "new nodes: $(names $new)"
check "$fault: two new nodes, each its own name ($(names $new))" \
	test "$(echo "$new" | grep -c .)" = 2 -a "$(nodes | cut -c1-12 | sort -u | wc -l)" = 5
new_healthy() {
	local n
	for n in $new; do
		[ "$(docker inspect -f '{{.State.Health.Status}}' "$n")" = healthy ] || return 1
	done
}
check "$fault: the new nodes healthy within 60 s (each restored the world from Redis)" wait_for 60 new_healthy
new_answer() {
	local n
	front_nodes 60 $((RANDOM % 1000 + 100)) >"$tmp/answered"
	for n in $new; do grep -qx "$(name_of "$n")" "$tmp/answered" || return 1; done
	! grep -q '^status-' "$tmp/answered"
}
check "$fault: the front sends to the new nodes once healthy (60 tiles answered by $(wait_for "$BOUND" new_answer; tr '\n' ' ' <"$tmp/answered"))" \
	new_answer
check "$fault: ... with no front restart ($(front_started))" test "$(front_started)" = "$front0"
fault_end

fault_start "scale 5 -> 2 nodes"
before=$(nodes | sort)
log_pids=()
for n in $before; do # each node's output until it is gone, to see it drain
	docker logs -f "$n" >"$tmp/nodelog.$(name_of "$n")" 2>&1 &
	log_pids+=($!)
done
check "$fault: docker-compose up --scale terrain=2" scale 2
after=$(nodes | sort)
gone=$(echo "$after" | comm -23 <(echo "$before") -)
say "removed: $(names $gone); left: $(names $after)"
check "$fault: three nodes removed, two left" \
	test "$(echo "$gone" | grep -c .)" = 3 -a "$(echo "$after" | grep -c .)" = 2
sleep 1
for p in "${log_pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${log_pids[@]}" 2>/dev/null || true
log_pids=()
for n in $gone; do
	nn=$(name_of "$n")
	check "$fault: $nn drained: stopped by SIGTERM, its drain ended before the limit" \
		eval 'grep -q "draining" "$tmp/nodelog.$nn" && ! grep -q "drain limit reached" "$tmp/nodelog.$nn"'
done
only_left() {
	local n
	front_nodes 30 $((RANDOM % 1000 + 100)) >"$tmp/answered"
	for n in $(cat "$tmp/answered"); do
		case " $(names $after)" in *" $n "*) ;; *) return 1 ;; esac
	done
}
check "$fault: the front answers from the nodes left only, within $BOUND s (30 tiles answered by $(wait_for "$BOUND" only_left; tr '\n' ' ' <"$tmp/answered"))" \
	only_left
check "$fault: ... with no front restart ($(front_started))" test "$(front_started)" = "$front0"
fault_end

say "faults and scaling: $total_acked edits acknowledged in world $LW over $round rounds"
# every round's intended edits, each in the log exactly once, and nothing else
cat "$tmp"/[0-9]*.intended.* 2>/dev/null | sort -u >"$tmp/intended"
cat "$tmp"/[0-9]*.tries.* 2>/dev/null >"$tmp/tries"
i=$(wc -l <"$tmp/intended")
read -r e d m < <(once "$tmp/intended" "$tmp/logged")
[ "$d$m" = 00 ] || { say "intended edits not once in the log (x z times):"; not_once "$tmp/intended" "$tmp/logged" >&2; }
# "seq x z" of the log that no loader meant
strangers() { awk 'NR == FNR { meant[$1 " " $2] = 1; next } !meant[$2 " " $3]' "$1" "$2"; }
u=$(strangers "$tmp/intended" "$tmp/logged" | wc -l)
lseq=$(field edit_seq <"$tmp/info.first")
check "faults and scaling, all $round rounds: exactly once: $i intended edits, $e in the log once, $d duplicated, $m missing, $u not intended; edit_seq $lseq; answers: $(statuses "$tmp"/[0-9]*.codes.*); $(awk '{ r += $3 - 1 } END { printf "%d retries", r }' "$tmp/tries")" \
	test "$e" = "$i" -a "$d" = 0 -a "$m" = 0 -a "$u" = 0 -a "$lseq" = "$i" -a "$i" -gt 0

# ---- what the log in Redis holds: a fresh node replays it ---------------------------
fresh=$(dc run -d --no-deps -e TERRAIN_DATA_DIR=/tmp/fresh -e TERRAIN_NODE_NAME=fresh terrain | tail -n 1)
fresh_up() { [ -n "$(node_get "@$fresh" "/v1/worlds/$LW" | field edit_seq)" ]; }
wait_for 60 fresh_up || true
log_of "@$fresh" >"$tmp/fresh"
comm -23 "$tmp/acked" "$tmp/fresh" >"$tmp/lost"
[ -s "$tmp/lost" ] && { say "acknowledged but not in the replayed log:"; head -n 5 "$tmp/lost" >&2; }
check "a fresh node replaying the log from Redis has every acknowledged edit ($total_acked; it holds $(wc -l <"$tmp/fresh"))" \
	test ! -s "$tmp/lost" -a -s "$tmp/fresh"
read -r e d m < <(once "$tmp/intended" "$tmp/fresh")
u=$(strangers "$tmp/intended" "$tmp/fresh" | wc -l)
[ "$d$m" = 00 ] || { say "intended edits not once in the replayed log (x z times):"; not_once "$tmp/intended" "$tmp/fresh" >&2; }
check "... and every intended edit exactly once ($i intended, $e once, $d duplicated, $m missing, $u not intended)" \
	test "$e" = "$i" -a "$d" = 0 -a "$m" = 0 -a "$u" = 0 -a "$i" -gt 0
check "... and the nodes' log, edit for edit" cmp -s "$tmp/fresh" "$tmp/logged"
docker rm -f "$fresh" >/dev/null 2>&1 || true
say "done in $((SECONDS - t0)) s"
echo "container-test: $passed passed, $failed failed"
if [ "$failed" != 0 ]; then
	mkdir -p "${BUILD:-build}/test-logs"
	dc logs -t --no-color >"${BUILD:-build}/test-logs/container-test.log" 2>&1 || true
	say "$failed checks failed; every service's log: ${BUILD:-build}/test-logs/container-test.log; the last lines:"
	dc logs --tail 20 >&2 || true
	exit 1
fi
