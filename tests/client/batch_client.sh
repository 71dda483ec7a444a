#!/bin/bash
# batch_client.sh - terrain-client fetch against the real server uses the
# batch endpoint for its far rings: a 2048 m radius around the origin
# loads, verifies and draws, no batch falls back to single tiles, and the
# server's access log and metrics show the bundles it answered.
. "$(dirname "$0")/../lib/lib.sh"

CLIENT=$BUILD/terrain-client
server_start --access-log "$TMP/access.log"
out=$TMP/fetch.out
check "fetch --radius 2048 exits 0" eval 'timeout -k 5 300 "$CLIENT" fetch --server "$BASE" \
	--seed 42 --x 0 --z 0 --radius 2048 -o "$TMP/m.png" >"$out" 2>"$TMP/fetch.err"'
cat "$out" "$TMP/fetch.err"
batches=$(sed -n 's/.* requests (\([0-9]*\) batches, \([0-9]*\) fell back.*/\1 \2/p' "$out")
check "fetch used batches ($batches)" test "${batches%% *}" -gt 0
check "no batch fell back to single tiles" eq "${batches##* }" 0
check "fetch wrote a 4096 px map" has <("$CLIENT" pngstat "$TMP/m.png") '^width: 4096$'
logged=$(grep -cE '"method":"GET","path":"/v1/worlds/42/chunks/[0-9]+\?cx0=[-0-9]+&cz0=[-0-9]+&cx1=[-0-9]+&cz1=[-0-9]+[^"]*","protocol":"HTTP/1.1","status":200,' \
	"$TMP/access.log")
check "the access log has the batches answered 200 ($logged)" eq "$logged" "${batches%% *}"
m=$(curl -sS --max-time 30 "$BASE/metrics")
check "metrics count the batch route" grep -qE 'terrain_requests_total\{route="batch",status="200"\} [1-9]' <<<"$m"
check "server stops with 0" server_stop
finish
