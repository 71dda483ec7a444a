#!/bin/bash
# swarm-test.sh - `make swarm-test`: docker/stack.yaml on a one-machine Docker
# Swarm. Builds the images when needed (scripts/docker-base.sh,
# scripts/docker-images.sh: cached layers when make container-test ran
# before), makes this engine a swarm of one (`docker swarm init` on
# 127.0.0.1), labels its machine for every Redis, Sentinel and the front,
# creates the four secrets, `docker stack deploy`s the stack with the front's
# port bound to 127.0.0.1 only (docker_gwbridge's host binding address), then:
#   - the secrets: mounted for uid 10001 only, and in no container's
#     environment; the front listens on 127.0.0.1 only;
#   - a tile and an edit through the front (the edit token from its secret;
#     none: 401), the front finding the nodes as tasks.terrain;
#   - edits under load while the nodes are scaled 3 -> 5 -> 2
#     (`docker service scale`): LOADERS clients edit through the front, each
#     edit with its own Idempotency-Key, retried with it until 200; then every
#     acknowledged edit is in the log (its first_seq and coordinates), every
#     intended edit exactly once, and every remaining node has one edit_seq
#     and world_hash (each reached by docker exec, curl on 127.0.0.1 inside
#     it);
#   - at the end of that load phase, the load tool's capacity table
#     (scripts/cluster-load.sh, capacity_report): edits acknowledged/s,
#     cold and warm tiles/s with the nodes' CPU per tile, each node's
#     resident memory, Redis used_memory, the nodes' CPU in cores; printed,
#     never asserted (the check is that its six lines are there);
#   - `docker stack rm` removes every container and the network, and
#     `docker swarm leave --force` leaves the engine as it was.
# Cleans up on every exit (trap): loaders by pid, the stack, its volumes,
# the secrets, the swarm, and docker_gwbridge when this made it. Exit
# status: 0 all passed, 1 a check failed (or the engine is already in a
# swarm: not touched), 77 no Docker engine answers. The last line is
# "swarm-test: N passed, N failed". ST_KEEP=1 leaves it all up. The load
# tool (keyed edits, loaders, log_of, the capacity table) is
# scripts/cluster-load.sh, shared with scripts/container-test.sh.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
say() { echo "swarm-test: $*" >&2; }
# check, post, keyed_post, loader, load_start, log_of, capacity_report, ...
. scripts/cluster-load.sh
need_engine
command -v ss >/dev/null || { say "ss is missing (Debian: apt-get install iproute2)"; exit 1; }
state=$(docker info -f '{{.Swarm.LocalNodeState}}')
if [ "$state" != inactive ]; then
	say "this engine is already in a swarm ($state): not touched (docker swarm leave --force first)"
	echo "swarm-test: 0 passed, 1 failed"
	exit 1
fi

LOADERS=${ST_LOADERS:-4}
STACK=terrain
EDIT_TOKEN=$(secret)
run=st$$.$(date +%s) # Idempotency-Keys unique to this run
tmp=$(mktemp -d /tmp/terrain-st.XXXXXX)
failed=0 passed=0
wait_for() { # SECONDS COMMAND...: until COMMAND succeeds
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 1
	done
}

# ---- clean-up, whatever happens ---------------------------------------------------------
loader_pids=() log_pids=() joined='' made_gwbridge=''
stack_gone() {
	[ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$STACK")" ] &&
		[ -z "$(docker network ls -q --filter "label=com.docker.stack.namespace=$STACK")" ]
}
volumes() { docker volume ls -q --filter "label=com.docker.stack.namespace=$STACK"; }
teardown() {
	local p
	touch "$tmp/stop"
	for p in "${loader_pids[@]}" "${log_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	if [ "${ST_KEEP:-0}" = 1 ]; then
		say "ST_KEEP=1: left up; docker stack rm $STACK; docker swarm leave --force"
		rm -rf "$tmp"
		return
	fi
	if [ -n "$joined" ]; then
		docker stack rm "$STACK" >/dev/null 2>&1 || true
		wait_for 90 stack_gone || say "the stack's containers are still there after 90 s"
		volumes | xargs -r docker volume rm >/dev/null 2>&1 || true
		docker swarm leave --force >/dev/null 2>&1 || true
	fi
	[ -z "$made_gwbridge" ] || docker network rm docker_gwbridge >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
t0=$SECONDS

# ---- images, swarm, labels, secrets -------------------------------------------------------
docker image inspect "${TERRAIN_BASE_IMAGE:-terrain-base:bookworm}" >/dev/null 2>&1 ||
	scripts/deps.sh container # debootstrap, for the base image
scripts/docker-base.sh "${TERRAIN_BASE_IMAGE:-terrain-base:bookworm}"
say "building the images (cached layers when they are current)"
LOG=$tmp/build.log scripts/docker-images.sh

# Ports published in host mode bind to docker_gwbridge's host binding
# address: 127.0.0.1, so that the front is on this machine's loopback only.
# The bridge must be made before the swarm; an unused one of other settings
# is made again (Docker makes its default one when it needs it).
gw_ip() { docker network inspect -f '{{index .Options "com.docker.network.bridge.host_binding_ipv4"}}' docker_gwbridge 2>/dev/null; }
if docker network inspect docker_gwbridge >/dev/null 2>&1 && [ "$(gw_ip)" != 127.0.0.1 ]; then
	[ -z "$(docker network inspect -f '{{range .Containers}}x{{end}}' docker_gwbridge)" ] ||
		{ say "docker_gwbridge is in use and binds to '$(gw_ip)', not 127.0.0.1: not touched"; exit 1; }
	docker network rm docker_gwbridge >/dev/null
fi
if ! docker network inspect docker_gwbridge >/dev/null 2>&1; then
	docker network create --opt com.docker.network.bridge.name=docker_gwbridge \
		--opt com.docker.network.bridge.enable_icc=false \
		--opt com.docker.network.bridge.enable_ip_masquerade=true \
		--opt com.docker.network.bridge.host_binding_ipv4=127.0.0.1 docker_gwbridge >/dev/null
	made_gwbridge=1
fi
joined=1
docker swarm init --advertise-addr 127.0.0.1 --listen-addr 127.0.0.1:2377 >"$tmp/init.log" 2>&1 ||
	{ cat "$tmp/init.log" >&2; exit 1; }
node=$(docker info -f '{{.Swarm.NodeID}}')
label() {
	docker node update --label-add terrain.redis1=true --label-add terrain.redis2=true \
		--label-add terrain.redis3=true --label-add terrain.front=true "$node" >/dev/null
}
check "a swarm of one (node ${node:0:12}), labelled for the three Redis pairs and the front" label
for s in edit_token redis_password redis_admin_password sentinel_password; do
	if [ $s = edit_token ]; then printf '%s\n' "$EDIT_TOKEN"; else secret; fi |
		docker secret create "terrain_$s" - >/dev/null
done
port=
for _ in $(seq 20); do
	p=$((20000 + RANDOM % 20000))
	ss -ltnH "sport = :$p" 2>/dev/null | grep -q . || { port=$p; break; }
done
F=http://127.0.0.1:$port
say "deploying the stack ($((SECONDS - t0)) s); the front on $F"
detach=()
docker stack deploy --help 2>/dev/null | grep -q -- '--detach' && detach=(--detach=true)
TERRAIN_PORT=$port TERRAIN_REPLICAS=3 docker stack deploy "${detach[@]}" --resolve-image never \
	-c docker/stack.yaml "$STACK" >"$tmp/deploy.log" 2>&1 ||
	{ cat "$tmp/deploy.log" >&2; exit 1; }

# the running containers of service $1 (terrain, front, redis1, ...)
ctrs() { docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_$1"; }
nodes() { ctrs terrain; }
# cluster-load.sh's hooks: GET PATH on node $1 (docker exec, curl inside
# it), redis-cli on data node $1 (redis1, ...)
node_get() { docker exec "$1" curl -sS --max-time 10 "http://127.0.0.1:8080$2" 2>/dev/null || true; }
redis_cli() { local c; c=$(ctrs "$1"); docker exec "$c" redis-node.sh cli "${@:2}"; }
healthy_n() { # SERVICE N: N running containers, each healthy
	local c n=0
	for c in $(ctrs "$1"); do
		[ "$(docker inspect -f '{{.State.Health.Status}}' "$c" 2>/dev/null)" = healthy ] || return 1
		n=$((n + 1))
	done
	[ "$n" = "$2" ]
}
all_healthy() {
	local s
	for s in s1 s2 s3 redis1 redis2 redis3 front; do healthy_n "$s" 1 || return 1; done
	healthy_n terrain "$1"
}
if ! wait_for 240 all_healthy 3; then
	say "not every service became healthy within 240 s:"
	docker service ls >&2
	for s in s1 redis1 terrain front; do docker service logs --tail 10 "${STACK}_$s" >&2 2>&1 || true; done
fi
check "every service healthy: three Redis, three Sentinels, three nodes, the front ($((SECONDS - t0)) s)" \
	all_healthy 3

# ---- secrets and the published port ------------------------------------------------------
n1=$(nodes | head -n 1)
check "the edit token is a secret for uid 10001 only (/run/secrets/edit_token, mode 400)" \
	test "$(docker exec "$n1" stat -c '%a %u' /run/secrets/edit_token 2>/dev/null)" = "400 10001"
no_secret_env() {
	local c
	for c in $(docker ps -q --filter "label=com.docker.stack.namespace=$STACK"); do
		docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$c" |
			grep -q -e "$EDIT_TOKEN" -e '_PASSWORD=' -e '_TOKEN=' && return 1
	done
	return 0
}
check "no password or token in any container's environment (files only)" no_secret_env
check "the front listens on 127.0.0.1:$port only ($(ss -ltnH "sport = :$port" | awk '{ print $4 }' | tr '\n' ' '))" \
	eval '[ -n "$(ss -ltnH "sport = :$port")" ] && ! ss -ltnH "sport = :$port" | awk "{ print \$4 }" | grep -vq "^127\.0\.0\.1:"'
front=$(ctrs front)
check "the front finds the three nodes as tasks.terrain" \
	test "$(docker exec "$front" getent ahostsv4 tasks.terrain | awk '{ print $1 }' | sort -u | wc -l)" = 3

# ---- a tile and an edit through the front -----------------------------------------------
code=$(curl -sS -o "$tmp/tile" -w '%{http_code}' --compressed --max-time 30 "$F/v1/worlds/42/chunks/0/0/0" || true)
check "a tile through the front (200, $(wc -c <"$tmp/tile") bytes)" test "$code" = 200
out=$(AUTH=wrong post 42 '{"edits":[{"op":"raise","x":5,"z":5,"radius":8,"strength":1}]}')
check "an edit with a wrong token: 401" test "${out##*$'\n'}" = 401
out=$(post 42 '{"edits":[{"op":"raise","x":5,"z":5,"radius":8,"strength":1}]}' "$run.first")
check "an edit through the front with the token from the secret: 200" test "${out##*$'\n'}" = 200

# ---- edits under load while the nodes are scaled 3 -> 5 -> 2 -----------------------------
# Loaders (cluster-load.sh's load_start) edit world LW until $tmp/stop, one
# edit a batch at coordinates no other uses, each with its own
# Idempotency-Key, retried with it on every answer but 200 (short backoff;
# 400/422 end it), for at most HOLD s once told to stop. Files of loader L:
# intended.L ("x z"), codes.L (every answer's status), tries.L ("x z
# attempts last-status"), acked.L ("first_seq x z").
LW=7 HOLD=60
# the front's slots for nodes that are UP (HAProxy's CSV statistics)
front_up() {
	docker exec "$front" curl -s --max-time 3 'http://127.0.0.1:8404/stats;csv' |
		awk -F, '$1 == "any" && $2 ~ /^node/ && $18 == "UP"' | wc -l
}
scale() { docker service scale --detach "${STACK}_terrain=$1" >"$tmp/scale.log" 2>&1 || { cat "$tmp/scale.log" >&2; return 1; }; }

say "edits: $LOADERS loaders through the front while the nodes go 3 -> 5 -> 2 ($((SECONDS - t0)) s)"
capacity_mark load0
load_t0=$(date +%s%3N)
load_start
sleep 5
a0=$(acked_now)
check "scale 3 -> 5: docker service scale ${STACK}_terrain=5 ($a0 edits acknowledged so far)" scale 5
check "... five nodes healthy within 120 s (the new ones restored the world from Redis)" \
	wait_for 120 healthy_n terrain 5
check "... and the front has all five in rotation within 20 s, not restarted" \
	wait_for 20 eval '[ "$(front_up)" = 5 ] && [ "$(ctrs front)" = "$front" ]'
sleep 5
before=$(nodes | sort)
for n in $before; do # each node's output until it is gone, to see it drain
	docker logs -f "$n" >"$tmp/nodelog.${n:0:12}" 2>&1 &
	log_pids+=($!)
done
a1=$(acked_now)
check "scale 5 -> 2: docker service scale ${STACK}_terrain=2 ($a1 edits acknowledged so far)" scale 2
check "... two nodes left within 60 s" wait_for 60 eval '[ "$(nodes | wc -l)" = 2 ]'
gone=$(nodes | sort | comm -13 - <(echo "$before"))
sleep 1
for p in "${log_pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${log_pids[@]}" 2>/dev/null || true
log_pids=()
drained() {
	local n
	for n in $gone; do
		grep -q draining "$tmp/nodelog.${n:0:12}" && ! grep -q "drain limit reached" "$tmp/nodelog.${n:0:12}" ||
			return 1
	done
}
check "... the three removed ($(for n in $gone; do printf '%s ' "${n:0:12}"; done)) each drained before its limit" \
	eval '[ "$(echo "$gone" | grep -c .)" = 3 ] && drained'
check "... and the front has the two left in rotation within 20 s" wait_for 20 eval '[ "$(front_up)" = 2 ]'
sleep 5
load_stop
load_s=$(awk -v t0="$load_t0" -v t1="$(date +%s%3N)" 'BEGIN { printf "%.1f", (t1 - t0) / 1000 }')
# the capacity table (its tile probe also waits out late attempts, below)
capacity_report "$(acked_now)" "$load_s" "$LOADERS loaders, one edit a request" >"$tmp/capacity" ||
	say "capacity_report failed (its figures are never asserted; the check below counts its lines)"
cat "$tmp/capacity"
check "the load tool printed its capacity table ($(capacity_lines "$tmp/capacity") of 6 figures)" \
	test "$(capacity_lines "$tmp/capacity")" = 6
# a late attempt (no answer) is in the log or never will be after the
# nodes' --edit-deadline (5 s) and the Redis timeout (3 s)
sleep 4

# ---- every acknowledged edit on every remaining node ----------------------------------------
cat "$tmp"/acked.* 2>/dev/null | sort -u >"$tmp/acked"
cat "$tmp"/intended.* 2>/dev/null | sort -u >"$tmp/intended"
cat "$tmp"/tries.* 2>/dev/null >"$tmp/tries"
a=$(wc -l <"$tmp/acked")
i=$(wc -l <"$tmp/intended")
converged() { # every node: one edit_seq, at least $1, and one world_hash
	local n s h first=
	for n in $(nodes); do
		node_get "$n" "/v1/worlds/$LW" >"$tmp/info"
		s=$(field edit_seq <"$tmp/info") h=$(field world_hash <"$tmp/info")
		[ -n "$s" ] && [ "$s" -ge "$1" ] || return 1
		[ -z "$first" ] && first="$s $h"
		[ "$s $h" = "$first" ] || return 1
	done
	echo "$first" >"$tmp/first"
}
wait_for 30 converged "$a" || true
check "the two nodes converged: one edit_seq and world_hash ($(cat "$tmp/first" 2>/dev/null))" converged "$a"
lost_total=0
for n in $(nodes); do
	log_of "$n" >"$tmp/logged.${n:0:12}"
	lost=$(comm -23 "$tmp/acked" "$tmp/logged.${n:0:12}" | wc -l)
	lost_total=$((lost_total + lost))
	[ "$lost" = 0 ] || { say "acknowledged but not in ${n:0:12}'s log:"; comm -23 "$tmp/acked" "$tmp/logged.${n:0:12}" | head -n 5 >&2; }
done
check "0 of $a acknowledged edits lost on every remaining node (first_seq and coordinates in each log)" \
	test "$lost_total" = 0 -a "$a" -gt 0
logged=$(ls "$tmp"/logged.* | head -n 1)
read -r once dup miss < <(awk 'NR == FNR { n[$2 " " $3]++; next }
	{ c = n[$1 " " $2]; if (c == 1) one++; else if (c > 1) dup++; else miss++ }
	END { print one + 0, dup + 0, miss + 0 }' "$logged" "$tmp/intended")
unres=$(awk '$4 != 200' "$tmp/tries" | wc -l)
check "exactly once: $i intended edits, $once in the log once, $dup duplicated, $miss missing, $unres unresolved; answers: $(statuses "$tmp"/codes.*)" \
	test "$once" = "$i" -a "$dup" = 0 -a "$miss" = 0 -a "$unres" = 0 -a "$i" -gt 0
check "the nodes' logs are the same, edit for edit" \
	test "$(cat "$tmp"/logged.* | sort | uniq -c | awk '$1 != 2' | wc -l)" = 0

# ---- docker stack rm, docker swarm leave --------------------------------------------------
if [ "$failed" != 0 ]; then
	mkdir -p "${BUILD:-build}/test-logs"
	for s in s1 s2 s3 redis1 redis2 redis3 terrain front; do
		echo "==== ${STACK}_$s"
		docker service logs -t --no-trunc "${STACK}_$s" 2>&1 | tail -n 300
	done >"${BUILD:-build}/test-logs/swarm-test.log"
	say "$failed checks failed; the services' logs: ${BUILD:-build}/test-logs/swarm-test.log"
fi
say "removing the stack ($((SECONDS - t0)) s)"
docker stack rm "$STACK" >/dev/null 2>&1 || true
check "docker stack rm: every container and the network gone within 90 s" wait_for 90 stack_gone
volumes | xargs -r docker volume rm >/dev/null 2>&1 || true
check "... and the stack's volumes removed" test -z "$(volumes)"
docker swarm leave --force >/dev/null 2>&1 || true
check "docker swarm leave --force: the engine is in no swarm" \
	test "$(docker info -f '{{.Swarm.LocalNodeState}}')" = inactive
joined=
say "done in $((SECONDS - t0)) s"
echo "swarm-test: $passed passed, $failed failed"
[ "$failed" = 0 ]
