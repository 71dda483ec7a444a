#!/bin/bash
# container-test.sh - `make container-test`: the cluster of
# docker/compose.cluster.yaml for real. Builds the base image from Debian's
# packages (scripts/docker-base.sh) and the images, starts three terrain
# nodes, nginx, a Redis primary and replica and three Sentinels with Debian's
# docker.io and docker-compose (v1), then:
#   - edits: WRITERS clients post BATCHES batches each through nginx, at once;
#   - the swarm load test (terrain-client swarm) through nginx;
#   - convergence: every node reports the same edit_seq (every acknowledged
#     edit) and world_hash, and the same bytes for an edited tile;
#   - nginx: tiles spread over the nodes, a ?v= tile is served from its cache;
# and tears everything down (volumes too). Outside `make test`: it needs a
# Docker daemon. Without one it says so and exits with status 2; a failed
# check exits 1. CT_KEEP=1 leaves the cluster up for a look.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
say() { echo "container-test: $*" >&2; }

if ! command -v docker >/dev/null; then
	say "no Docker daemon: the docker command is missing (Debian: apt-get install docker.io; it starts dockerd)"
	exit 2
fi
if ! err=$(docker info 2>&1 >/dev/null); then
	say "no Docker daemon: $(printf '%s\n' "$err" | grep . | tail -n 1)"
	say "start one (systemctl start docker) or point DOCKER_HOST at one; this test is outside make test"
	exit 2
fi
scripts/deps.sh container
command -v docker-compose >/dev/null || { say "docker-compose missing after scripts/deps.sh container"; exit 1; }

WRITERS=${CT_WRITERS:-4}
BATCHES=${CT_BATCHES:-25}
export TERRAIN_EDIT_TOKEN
TERRAIN_EDIT_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
export TERRAIN_PUBLISH=127.0.0.1: # a free port, read back below
export SWARM_PLAYERS=${CT_PLAYERS:-50} SWARM_SECONDS=${CT_SECONDS:-10}
project=terrainct$$
dc() { docker-compose -p "$project" -f docker/compose.cluster.yaml "$@"; }
tmp=$(mktemp -d /tmp/terrain-ct.XXXXXX)
failed=0
check() {
	local msg=$1
	shift
	if "$@"; then echo "ok: $msg"; else echo "FAIL: $msg"; failed=$((failed + 1)); fi
}
teardown() {
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
dc --profile swarm build >"$tmp/build.log" 2>&1 || { tail -n 30 "$tmp/build.log" >&2; exit 1; }
for i in terrain-server terrain-client terrain-nginx terrain-redis; do
	say "$i:local $(docker image inspect -f '{{.Size}}' "$i:local" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
done
say "starting the cluster ($((SECONDS - t0)) s)"
dc up -d >"$tmp/up.log" 2>&1 || { cat "$tmp/up.log" >&2; dc logs --tail 30 >&2; exit 1; }

# every service healthy, within 120 s
services="redis1 redis2 s1 s2 s3 terrain1 terrain2 terrain3 nginx"
healthy() {
	local s id
	for s in $services; do
		id=$(dc ps -q "$s")
		[ "$(docker inspect -f '{{.State.Health.Status}}' "$id" 2>/dev/null)" = healthy ] || return 1
	done
}
for _ in $(seq 120); do healthy && break; sleep 1; done
if ! healthy; then
	say "not every service became healthy:"
	dc ps >&2
	dc logs --tail 20 >&2
	exit 1
fi
port=$(dc port nginx 8080 | sed 's/.*://')
F=http://127.0.0.1:$port
say "healthy; nginx on $F ($((SECONDS - t0)) s)"

# ---- edits through nginx, WRITERS at once ----------------------------------------
writer() {
	local w=$1 b x z
	for b in $(seq "$BATCHES"); do
		x=$(((w * 97 + b * 31) % 2048 - 1024))
		z=$(((w * 53 + b * 71) % 2048 - 1024))
		curl -sS --max-time 30 -o "$tmp/ack.$w.$b" -w '%{http_code}\n' -X POST \
			-H "Authorization: Bearer $TERRAIN_EDIT_TOKEN" -H 'Content-Type: application/json' \
			-d "{\"edits\":[{\"op\":\"raise\",\"x\":$x,\"z\":$z,\"radius\":30,\"strength\":1},
			     {\"op\":\"lower\",\"x\":$z,\"z\":$x,\"radius\":20,\"strength\":0.5}]}" \
			"$F/v1/worlds/42/edits" >>"$tmp/codes.$w"
	done
}
for w in $(seq "$WRITERS"); do writer "$w" & done
wait
acked=$(cat "$tmp"/codes.* | grep -c '^200$' || true)
check "every edit batch acknowledged ($acked of $((WRITERS * BATCHES)))" test "$acked" = $((WRITERS * BATCHES))
want_seq=$((acked * 2))

# ---- the swarm --------------------------------------------------------------------------
say "swarm: $SWARM_PLAYERS players for $SWARM_SECONDS s through nginx"
if dc --profile swarm run --rm swarm >"$tmp/swarm.log" 2>&1; then swarm_ok=1; else swarm_ok=0; fi
sed 's/^/  /' "$tmp/swarm.log"
check "the swarm ran without errors" test "$swarm_ok" = 1

# ---- convergence ------------------------------------------------------------------------
node_info() { dc exec -T "$1" curl -fsS http://127.0.0.1:8080/v1/worlds/42 2>/dev/null || true; }
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([0-9a-f]*\)\"\{0,1\}[,}].*/\1/p"; }
converged() {
	local n seq hash first=
	for n in terrain1 terrain2 terrain3; do
		node_info "$n" >"$tmp/info.$n"
		seq=$(field edit_seq <"$tmp/info.$n")
		hash=$(field world_hash <"$tmp/info.$n")
		[ "$seq" = "$want_seq" ] || return 1
		[ -z "$first" ] && first=$hash
		[ "$hash" = "$first" ] || return 1
	done
}
for _ in $(seq 60); do converged && break; sleep 0.5; done
for n in terrain1 terrain2 terrain3; do
	echo "  $n: edit_seq $(field edit_seq <"$tmp/info.$n") world_hash $(field world_hash <"$tmp/info.$n")"
done
check "every node: edit_seq $want_seq and one world_hash" converged
for n in terrain1 terrain2 terrain3; do
	dc exec -T "$n" sh -c 'curl -fsS http://127.0.0.1:8080/v1/worlds/42/chunks/0/0/0 | sha256sum' \
		>"$tmp/tile.$n" 2>/dev/null || true
done
check "an edited tile has the same bytes on every node" test "$(sort -u "$tmp"/tile.terrain* | wc -l)" = 1

# ---- nginx in front ---------------------------------------------------------------------
for cx in 0 1 2 3 4 5 6 7; do
	curl -sS -o /dev/null -D - "$F/v1/worlds/42/chunks/3/$cx/0" | tr -d '\r' |
		sed -n 's/^[Xx]-[Tt]errain-[Nn]ode: //p'
done | sort -u >"$tmp/nodes"
check "tiles spread over the nodes ($(tr '\n' ' ' <"$tmp/nodes"))" test "$(wc -l <"$tmp/nodes")" -ge 2
xcs() { curl -sS -o /dev/null -D - --compressed "$1" | tr -d '\r' | sed -n 's/^[Xx]-[Cc]ache-[Ss]tatus: //p'; }
v=$(curl -sS "$F/v1/worlds/42/hashes?cx0=0&cz0=0&cx1=0&cz1=0" | grep -o '"version":[0-9]*' | cut -d: -f2)
v=${v:-0}
xcs "$F/v1/worlds/42/chunks/2/0/0?v=$v" >/dev/null
check "a ?v= tile comes from nginx's cache" test "$(xcs "$F/v1/worlds/42/chunks/2/0/0?v=$v")" = HIT

say "done in $((SECONDS - t0)) s"
if [ "$failed" != 0 ]; then
	say "$failed checks failed; logs:"
	dc logs --tail 20 >&2 || true
	exit 1
fi
echo "container-test: all passed"
