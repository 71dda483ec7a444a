#!/bin/bash
# cluster_load_tool.sh - scripts/cluster-load.sh, the load tool that
# scripts/container-test.sh and scripts/swarm-test.sh source, without
# Docker: two nodes (--edit-token) on one Redis log (a primary and a
# replica on loopback) stand in for the containers, the first node for the
# front, and the hooks (node_get, nodes, redis_cli, node_ref) are this
# script's. Checked: a wrong token gets 401 through post; a keyed edit sent
# twice is answered once and then as a replay ("200 replay" in its codes);
# loaders in a round (load_start ROUND: the container test's fault rounds,
# files tagged "ROUND.") and untagged (load_start: the swarm test's) put
# every intended edit in the log exactly once, read back by log_of through
# node_get with @ID (the container test's form); capacity_report prints its
# six figures (edits/s, cold and warm tiles/s, node memory, Redis
# used_memory, node CPU), cold tiles generated and warm ones from the
# nodes' caches. Its figures are not asserted. About 25 s.
# run: once
. "$(dirname "$0")/../../scripts/cluster-load.sh"
. "$(dirname "$0")/../lib/lib.sh" # its check, after the load tool's
. "$(dirname "$0")/../lib/lib_redis.sh"
export TERRAIN_EDIT_RATE=0 TERRAIN_EDIT_AREA=0
KEEP_LOGS=cluster_load_tool

redis_up r1
redis_up r2 --replicaof 127.0.0.1 "${RPORT[r1]}"
wait_for 10 online_replica || { echo "replica did not sync"; exit 1; }
EDIT_TOKEN=$(secret)
node_up a --edit-token "$EDIT_TOKEN" --workers 2
node_up b --edit-token "$EDIT_TOKEN" --workers 2

# the load tool's inputs and hooks: nodes by 12-digit ids as Docker's
declare -A IDPORT=([aaaaaaaaaaaa]=${NPORT[a]} [bbbbbbbbbbbb]=${NPORT[b]})
nodes() { printf '%s\n' aaaaaaaaaaaa bbbbbbbbbbbb; }
node_ref() { echo "@$1"; }
node_get() { curl -sS --max-time 10 "http://127.0.0.1:${IDPORT[${1#@}]}$2" 2>/dev/null || true; }
redis_cli() {
	case $1 in
	redis1) rcli "${RPORT[r1]}" "${@:2}" ;;
	redis2) rcli "${RPORT[r2]}" "${@:2}" ;;
	*) return 1 ;;
	esac
}
tmp=$TMP/load
mkdir -p "$tmp"
F=http://127.0.0.1:${NPORT[a]}
run=lt$$.$(date +%s) LW=7 LOADERS=3 HOLD=10
body='{"edits":[{"op":"raise","x":5,"z":5,"radius":8,"strength":1}]}'

out=$(AUTH=wrong post "$LW" "$body")
check "post with a wrong token: 401" eq "${out##*$'\n'}" 401
res=$(keyed_post "$LW" "$body" "$run.once" "$tmp/once.codes" 30)
res=$(keyed_post "$LW" "$body" "$run.once" "$tmp/once.codes" 30)
check "keyed_post: a key sent twice is answered, then replayed ($(statuses "$tmp/once.codes"))" \
	eq "$(statuses "$tmp/once.codes")" "200 x1, 200 replay x1"

# exactly once: the edits "x z" of file $1 in the log "seq x z" of file $2
once() {
	awk 'NR == FNR { n[$2 " " $3]++; next } { c = n[$1 " " $2]; if (c == 1) one++; else bad++ }
	     END { print one + 0, bad + 0 }' "$2" "$1"
}
enough() { [ "$(acked_now)" -ge "$1" ]; }
capacity_mark load0
t0=$(date +%s%3N)
load_start 1 # the container test's way
wait_for 10 enough 30
load_stop
load_start # the swarm test's way
wait_for 10 enough 60
load_stop
secs=$(awk -v t0="$t0" -v t1="$(date +%s%3N)" 'BEGIN { printf "%.1f", (t1 - t0) / 1000 }')
cat "$tmp"/1.intended.* | sort -u >"$tmp/round"
cat "$tmp"/intended.* | sort -u >"$tmp/untagged"
check "load_start 1 tags its loaders' files (1.intended.11..13: $(ls "$tmp" | grep -c '^1\.intended\.1[123]$')) and load_start does not (intended.1..3: $(ls "$tmp" | grep -c '^intended\.[123]$'))" \
	test "$(ls "$tmp" | grep -c '^1\.intended\.1[123]$')" = 3 -a "$(ls "$tmp" | grep -c '^intended\.[123]$')" = 3
wait_for 10 eval '[ "$(log_of @bbbbbbbbbbbb | wc -l)" -ge "$(acked_now)" ]' || true
log_of @bbbbbbbbbbbb >"$tmp/logged"
read -r r1 r1bad < <(once "$tmp/round" "$tmp/logged")
read -r r0 r0bad < <(once "$tmp/untagged" "$tmp/logged")
check "log_of @ID: every intended edit of both ways once in the log ($r1 + $r0 once of $(wc -l <"$tmp/round") + $(wc -l <"$tmp/untagged"), $((r1bad + r0bad)) not once), $(acked_now) acknowledged ($(statuses "$tmp"/*codes.*))" \
	test "$r1bad$r0bad" = 00 -a "$r1" -gt 0 -a "$r0" -gt 0
acked_in_log() { cat "$tmp"/acked.* | sort -u | comm -23 - "$tmp/logged" | grep -c . || true; }
check "... and each acknowledged edit's first_seq and coordinates in it ($(acked_in_log) missing)" \
	test "$(acked_in_log)" = 0

CAP_TILES=40 CAP_WARM=3 capacity_report "$(acked_now)" "$secs" "$LOADERS loaders" >"$tmp/capacity"
sed 's/^/  /' "$tmp/capacity"
check "capacity_report: its six figures ($(capacity_lines "$tmp/capacity") of 6)" eq "$(capacity_lines "$tmp/capacity")" 6
check "... the cold tiles all answered and generated (40 misses, no hit)" \
	grep -q '^capacity: tiles/s cold: .*(40 of 40 new .* node cache 40 misses, 0 hits' "$tmp/capacity"
check "... the warm ones all answered from the cache (120 hits, no miss)" \
	grep -q '^capacity: tiles/s warm: .*(120 of 120 repeated .* node cache 0 misses, 120 hits' "$tmp/capacity"
check "... Redis used_memory of the primary, redis1" grep -q '^capacity: Redis used_memory: .* on the primary, redis1$' "$tmp/capacity"
finish
