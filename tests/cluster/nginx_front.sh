#!/bin/bash
# run: once
# nginx_front.sh - docker/nginx.conf for real: three terrain-server nodes and
# Debian's nginx on 127.0.0.1 (the shipped file, node addresses and port
# rewritten by scripts/nginx-loopback.sh, under a temporary prefix).
#
# Nodes with the default file log are separate worlds, so this checks reads,
# caching and routing: every node is given the same edits directly, which
# makes their worlds equal. Checked: nginx -t; one tile URL always lands on
# one node (X-Terrain-Node) and the URLs spread over the nodes; bodies are
# byte-identical through nginx (zstd, identity, gzip made by nginx); ?v= tiles
# come from nginx's cache (X-Cache-Status) whatever the Accept-Encoding
# spelling, unversioned ones never do, redirects and 404s are not kept; an
# event reaches a client through nginx while its stream is open, in order;
# after kill -9 of a node every request still succeeds, from the others or,
# for a cached ?v= tile, from nginx; edits through nginx need the token.
# Also --node-name: its default, "" and a bad value; and, when docker-compose
# is installed, that docker-compose accepts the compose files.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
if [ ! -x "$NGINX" ]; then
	echo "FAIL: nginx not installed (scripts/deps.sh test installs nginx-light)"
	exit 1
fi
TOK=front-test-token
AUTH=(-H "Authorization: Bearer $TOK")
SSE_PID=
stop_front() {
	[ -z "$SSE_PID" ] || kill_ours KILL "$SSE_PID"
	nginx_down
	cleanup
}
trap stop_front EXIT

# ---- the compose files, when Debian's docker-compose is installed (no daemon needed) ----
if command -v docker-compose >/dev/null; then
	check "docker-compose accepts docker/compose.yaml" docker-compose -f docker/compose.yaml config -q
	check "docker-compose accepts docker/compose.cluster.yaml" \
		env TERRAIN_EDIT_TOKEN=t docker-compose -f docker/compose.cluster.yaml config -q
	# no :? checks: ps, logs and down work without the secrets (redis-node.sh
	# refuses to start Redis without them; make container-test checks that)
	check "the cluster file reads without the secrets (ps, logs, down)" \
		env -u TERRAIN_EDIT_TOKEN -u TERRAIN_REDIS_PASSWORD docker-compose -f docker/compose.cluster.yaml config -q
	check "nodes get the shared log by name, as user terrain" \
		grep -q 'TERRAIN_EDIT_LOG: sentinel://terrain@s1:26379,s2:26379,s3:26379/terrain' \
		<(TERRAIN_EDIT_TOKEN=t docker-compose -f docker/compose.cluster.yaml config)
	check "published on 127.0.0.1 by default" grep -q -- '- 127.0.0.1:8080:8080' \
		<(docker-compose -f docker/compose.yaml config)
	check "no ulimits in the compose files" not grep -q ulimits \
		<(docker-compose -f docker/compose.yaml config; TERRAIN_EDIT_TOKEN=t \
		  docker-compose -f docker/compose.cluster.yaml config)
else
	echo "skip: docker-compose not installed (scripts/deps.sh container): compose files not checked"
fi

# ---- --node-name ---------------------------------------------------------------------
check "a bad --node-name is refused (status 2)" eq \
	"$("$SERVER_BIN" serve --port 0 --data-dir "$TMP/bad" --node-name 'a b' 2>/dev/null; echo $?)" 2
server_start --data-dir "$TMP/d0"
name=$("${CURL[@]}" -D - -o /dev/null "$BASE/healthz" | tr -d '\r' | sed -n 's/^X-Terrain-Node: //p')
check "default node name: the host name ($name)" eq "$name" "$(hostname | cut -d. -f1 | cut -c1-64)"
server_stop
server_start --data-dir "$TMP/d00" --node-name ''
check "--node-name '': no header" not grep -qi '^x-terrain-node' \
	<("${CURL[@]}" -D - -o /dev/null "$BASE/healthz")
server_stop

# ---- three nodes, nginx in front -------------------------------------------------------
NODE_PORT=() NODE_PID=()
for k in 1 2 3; do
	server_start --data-dir "$TMP/n$k" --node-name "node$k" --workers 1 --edit-token "$TOK" \
		--edit-deadline 2000
	NODE_PORT[k]=$PORT
	NODE_PID[k]=$(pgrep -P "$SERVER_PID") # the server itself, under timeout(1)
done
node_url() { echo "http://127.0.0.1:${NODE_PORT[$1]}"; }
front_conf() { scripts/nginx-loopback.sh "$FPORT" "${NODE_PORT[1]}" "${NODE_PORT[2]}" "${NODE_PORT[3]}"; }
nginx_up "$TMP/nginx" front_conf
check "nginx -t accepts the rendered docker/nginx.conf" \
	"$NGINX" -e stderr -t -q -p "$TMP/nginx/" -c nginx.conf
F="http://127.0.0.1:$FPORT"

# get URL [CURL ARGS...]: headers in $TMP/h (lowercase names, no CR), body in
# $TMP/b; prints the status.
get() {
	local url=$1
	shift
	"${CURL[@]}" -D "$TMP/h.raw" -o "$TMP/b" -w '%{http_code}' "$@" "$url"
	tr -d '\r' <"$TMP/h.raw" | sed 's/^\([^:]*\):/\L\1:/' >"$TMP/h"
}
hdr() { sed -n "s/^$1: //p" "$TMP/h" | head -n 1; }
# xcs URL [CURL ARGS...]: get, then print X-Cache-Status only
xcs() { get "$@" >/dev/null; hdr x-cache-status; }

# the same edit on every node, directly: their worlds stay equal
edit_all() {
	local k
	for k in 1 2 3; do
		[ -n "${NODE_PID[k]}" ] || continue
		"${CURL[@]}" -X POST "${AUTH[@]}" -H 'Content-Type: application/json' -d "$1" \
			"$(node_url "$k")/v1/worlds/42/edits" >"$TMP/post.$k"
	done
}

# ---- routing: one URL, one node ---------------------------------------------------------
urls=()
for cx in 0 1 2 3 4 5; do
	for cz in 0 1 2 3; do
		urls+=("/v1/worlds/42/chunks/3/$cx/$cz")
	done
done
urls+=("/v1/worlds/42/objects/1/1" "/v1/worlds/42/chunks/3?cx0=0&cz0=0&cx1=1&cz1=1")
declare -A owner
stable=1 spread=
for u in "${urls[@]}"; do
	for round in 1 2 3; do
		st=$(get "$F$u" --compressed)
		n=$(hdr x-terrain-node)
		[ "$st" = 200 ] || { echo "  $u: status $st"; stable=0; }
		if [ "$round" = 1 ]; then
			owner[$u]=$n
		elif [ "$n" != "${owner[$u]}" ]; then
			echo "  $u: ${owner[$u]} then $n"
			stable=0
		fi
	done
	spread="$spread ${owner[$u]}"
done
check "each tile URL always lands on the same node" eq "$stable" 1
nodes_used=$(tr ' ' '\n' <<<"$spread" | grep . | sort -u | wc -l)
check "the URLs spread over the nodes ($nodes_used of 3)" test "$nodes_used" -ge 2
check "unversioned tiles bypass nginx's cache" eq "$(xcs "$F${urls[0]}")" BYPASS
check "...every time" eq "$(xcs "$F${urls[0]}")" BYPASS

# ---- bytes through nginx ------------------------------------------------------------------
u=/v1/worlds/42/chunks/0/3/-2
"$SERVER_BIN" generate --seed 42 --lod 0 --cx 3 --cz -2 -o "$TMP/gen"
get "$F$u" >/dev/null
check "identity tile through nginx equals generate" cmp -s "$TMP/b" "$TMP/gen"
check "identity through nginx: no Content-Encoding" eq "$(hdr content-encoding)" ""
"${CURL[@]}" -H 'Accept-Encoding: zstd' -o "$TMP/z.front" "$F$u"
"${CURL[@]}" -H 'Accept-Encoding: zstd' -o "$TMP/z.node" "$(node_url 1)$u"
check "zstd bytes through nginx equal a node's" cmp -s "$TMP/z.front" "$TMP/z.node"
check "a browser's spelling gets zstd" eq \
	"$(get "$F$u" -H 'Accept-Encoding: gzip, deflate, br, zstd' >/dev/null; hdr content-encoding)" zstd
check "zstd;q=0 gets no zstd" test \
	"$(get "$F$u" -H 'Accept-Encoding: zstd;q=0, gzip' >/dev/null; hdr content-encoding)" != zstd
check "a gzip-only client gets gzip from nginx" eq \
	"$(get "$F$u" -H 'Accept-Encoding: gzip' >/dev/null; hdr content-encoding)" gzip
check "which decodes to the tile" cmp -s <(gzip -dc "$TMP/b") "$TMP/gen"

# ---- versioned tiles are kept by nginx ------------------------------------------------------
V="$F/v1/worlds/42/chunks/1/2/2?v=0"
check "?v=0 first: 200" eq "$(get "$V" -H 'Accept-Encoding: zstd')" 200
check "?v=0 first: a cache MISS" eq "$(hdr x-cache-status)" MISS
check "?v=0: immutable" eq "$(hdr cache-control)" "public, max-age=31536000, immutable"
cp "$TMP/b" "$TMP/v0.z"
check "?v=0 again: a HIT" eq "$(xcs "$V" -H 'Accept-Encoding: zstd')" HIT
check "the HIT has the same bytes" cmp -s "$TMP/b" "$TMP/v0.z"
check "another zstd spelling: the same entry (HIT)" eq \
	"$(xcs "$V" -H 'Accept-Encoding: br;q=1.0, zstd;q=0.8, gzip')" HIT
check "identity: its own entry (MISS first)" eq "$(xcs "$V")" MISS
check "identity again: HIT" eq "$(xcs "$V")" HIT
cp "$TMP/b" "$TMP/v0.id"
check "gzip-only shares the identity entry (HIT)" eq \
	"$(xcs "$V" -H 'Accept-Encoding: gzip')" HIT
check "gzip of the cached identity decodes to it" cmp -s <(gzip -dc "$TMP/b") "$TMP/v0.id"
check "?v=7 (beyond the world): 404" eq "$(get "$F/v1/worlds/42/chunks/1/2/2?v=7")" 404
check "404 not kept (MISS again)" eq "$(xcs "$F/v1/worlds/42/chunks/1/2/2?v=7")" MISS

edit_all '{"edits":[{"op":"raise","x":700,"z":700,"radius":20,"strength":4}]}'
check "the edit is seq 1 on every node" eq "$(cat "$TMP"/post.* | grep -o '"first_seq":1,' | wc -l)" 3
# ?v=0 names the tile as it was at version 0: nginx keeps serving those
# bytes; the node itself now redirects to the current version
check "the cached ?v=0 stays (HIT)" eq "$(xcs "$V")" HIT
check "with its old bytes" cmp -s "$TMP/b" "$TMP/v0.id"
NV="$(node_url 1)/v1/worlds/42/chunks/1/2/2?v=0"
check "a node now redirects ?v=0" eq "$(get "$NV")" 302
check "to ?v=1" eq "$(hdr location)" "/v1/worlds/42/chunks/1/2/2?v=1"
V2="$F/v1/worlds/42/chunks/2/2/2?v=0"
check "an uncached old version through nginx: 302" eq "$(get "$V2")" 302
check "to ?v=1 (lod 2)" eq "$(hdr location)" "/v1/worlds/42/chunks/2/2/2?v=1"
check "the 302 is not kept (MISS again)" eq "$(xcs "$V2")" MISS
V1="$F/v1/worlds/42/chunks/1/2/2?v=1"
check "?v=1: a MISS, then" eq "$(xcs "$V1" --compressed)" MISS
check "a HIT" eq "$(xcs "$V1" --compressed)" HIT
cp "$TMP/b" "$TMP/v1"
"${CURL[@]}" --compressed -o "$TMP/v1.node" "$(node_url 2)/v1/worlds/42/chunks/1/2/2"
check "the cached ?v=1 is the edited tile of a node" cmp -s "$TMP/v1" "$TMP/v1.node"
check "unlike ?v=0's" not cmp -s "$TMP/v1" "$TMP/v0.id"
vowner=$(get "$V1" >/dev/null; hdr x-terrain-node)

# ---- events through nginx: each one while the stream is open, in order ---------------------
"${CURL[@]}" --max-time 120 -N -D "$TMP/sse.h" -o "$TMP/sse" "$F/v1/worlds/42/events" &
SSE_PID=$!
wait_until 60 grep -qi '^x-terrain-node' "$TMP/sse.h" 2>/dev/null
check "the stream's head came through" grep -qi '^content-type: text/event-stream' "$TMP/sse.h"
wait_event() { # wait_event ID: until "id: ID" is in the stream (bounded)
	wait_until 60 grep -q "^id: $1\$" "$TMP/sse"
}
edit_all '{"edits":[{"op":"raise","x":-300,"z":40,"radius":5,"strength":1}]}'
check "event 2 arrives through nginx" wait_event 2
check "while the stream is still open" kill -0 "$SSE_PID"
edit_all '{"edits":[{"op":"lower","x":-300,"z":40,"radius":5,"strength":1}]}'
check "event 3 arrives" wait_event 3
check "stream still open" kill -0 "$SSE_PID"
check "events in order, each once" eq "$(grep '^id: ' "$TMP/sse" | tr '\n' ' ')" "id: 2 id: 3 "
kill -KILL "$SSE_PID" 2>/dev/null
wait "$SSE_PID" 2>/dev/null
SSE_PID=

# ---- edits through nginx ------------------------------------------------------------------
E='{"edits":[{"op":"raise","x":1,"z":1,"radius":2,"strength":1}]}'
check "an edit through nginx without the token: 401" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' \
	-X POST -H 'Content-Type: application/json' -d "$E" "$F/v1/worlds/777/edits")" 401
check "with the token: 200" eq "$(get "$F/v1/worlds/777/edits" -X POST "${AUTH[@]}" \
	-H 'Content-Type: application/json' -d "$E")" 200
check "answered by a node" grep -q '^x-terrain-node: node[123]$' "$TMP/h"
# An edit that waits in a stopped node's socket past --edit-deadline (2 s
# here), its client long gone, is not applied when the node resumes: nginx
# stamps X-Request-Start and the node judges the wait by it.
kill -STOP "${NODE_PID[1]}" "${NODE_PID[2]}" "${NODE_PID[3]}"
check "with every node stopped, an edit gets no answer (the client gives up)" eq \
	"$(curl -sS --max-time 1 -o /dev/null -w '%{http_code}' -X POST "${AUTH[@]}" \
		-H 'Content-Type: application/json' -d "$E" "$F/v1/worlds/778/edits" 2>/dev/null)" 000
sleep 2.5
kill -CONT "${NODE_PID[1]}" "${NODE_PID[2]}" "${NODE_PID[3]}"
late_seq() {
	local k s=
	for k in 1 2 3; do
		s+=$("${CURL[@]}" "$(node_url "$k")/v1/worlds/778" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p')
	done
	echo "$s"
}
late_refused() { grep -q "refused an edit that arrived" "$TMP"/server.*.log && [ "$(late_seq)" = 000 ]; }
check "resumed, the nodes refuse it as late: no node applied it" wait_until 60 late_refused

# ---- kill -9 a node -----------------------------------------------------------------------------
# the node that owns the cached ?v=1 tile dies
dead=${vowner#node}
check "the ?v=1 tile has an owner ($vowner)" test -n "$dead"
kill -KILL "${NODE_PID[dead]}"
while kill -0 "${NODE_PID[dead]}" 2>/dev/null; do sleep 0.05; done
NODE_PID[dead]=
check "the cached ?v=1 tile still comes from nginx (HIT)" eq "$(xcs "$V1" --compressed)" HIT
check "with the same bytes" cmp -s "$TMP/b" "$TMP/v1"
declare -A after
ok=1 moved=1
for u in "${urls[@]}"; do
	for round in 1 2; do
		st=$(get "$F$u" --compressed)
		n=$(hdr x-terrain-node)
		if [ "$st" != 200 ] || [ "$n" = "node$dead" ] || [ -z "$n" ]; then
			echo "  $u: status $st from '$n'"
			ok=0
		fi
		[ "$round" = 1 ] && after[$u]=$n
		[ "$round" = 2 ] && [ "$n" != "${after[$u]}" ] && moved=0
		[ "${owner[$u]}" != "node$dead" ] && [ "$n" != "${owner[$u]}" ] && moved=0
	done
done
check "every tile request succeeds with a node dead, never from it" eq "$ok" 1
check "only the dead node's URLs move, and they stay put" eq "$moved" 1
check "world info through nginx still answers" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$F/v1/worlds/42")" 200
check "a ?v=1 tile not cached yet still answers" eq "$(get "$F/v1/worlds/42/chunks/3/2/2?v=1")" 200
check "...and is cached now" eq "$(xcs "$F/v1/worlds/42/chunks/3/2/2?v=1")" HIT

finish
