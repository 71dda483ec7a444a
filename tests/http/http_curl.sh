#!/bin/bash
# http_curl.sh - the HTTP API seen through curl: bodies equal the CLI's
# tiles (identity and zstd; eroded presets and the material layer too),
# 304 round trips, HEAD, the JSON endpoints, metrics, CORS, and SIGTERM
# during a load (exit 0, no response cut).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

server_start --workers 2

# ---- tiles equal `generate`, identity and zstd ---------------------------------
for t in "42 0 0 0 default" "42 3 -5 7 default" "my-world 1 2147483647 -2147483648 alpine" \
	"18446744073709551615 8 0 0 mesa" "7 2 -1 -1 islands"; do
	set -- $t
	check "generate $t" "$SERVER_BIN" generate --seed "$1" --lod "$2" --cx "$3" --cz "$4" \
		--gen "$5" -o "$TMP/cli"
	url="$BASE/v1/worlds/$1/chunks/$2/$3/$4?gen=$5"
	"${CURL[@]}" -D "$TMP/h_id" -o "$TMP/id" "$url"
	check "identity body equals generate ($t)" cmp -s "$TMP/cli" "$TMP/id"
	"${CURL[@]}" --compressed -D "$TMP/h_z" -o "$TMP/z" "$url"
	check "zstd body decodes to generate ($t)" cmp -s "$TMP/cli" "$TMP/z"
	check "zstd negotiated by --compressed ($t)" has "$TMP/h_z" '^content-encoding: zstd'
	check "identity without Accept-Encoding ($t)" not has "$TMP/h_id" '^content-encoding'
done
# eroded presets (regions from the server's cache, computed alone by generate)
# and the material layer (format version 8; 7 without layers; 2 and 1 for
# tiles of side below 33, LOD 4 and coarser)
for t in "42 0 1 1 eroded height" "42 2 -3 5 eroded height,material" \
	"9 0 2 -1 default height,material" "my-world 4 7 7 canyons material,height"; do
	set -- $t
	"$SERVER_BIN" generate --seed "$1" --lod "$2" --cx "$3" --cz "$4" --gen "$5" \
		--layers "$6" -o "$TMP/cli"
	"${CURL[@]}" -o "$TMP/id" "$BASE/v1/worlds/$1/chunks/$2/$3/$4?gen=$5&layers=$6"
	check "identity body equals generate --layers ($t)" cmp -s "$TMP/cli" "$TMP/id"
	v=$([ "$6" = height ] && echo 7 || echo 8)
	[ "$2" -lt 4 ] || v=$((v - 6))
	check "format version $v ($t)" eq "$(od -An -tu2 -j4 -N2 "$TMP/id" | tr -d ' ')" "$v"
done
check "tile content type" has "$TMP/h_id" '^content-type: application/vnd\.terrain\.tile'
check "Vary: Accept-Encoding" has "$TMP/h_id" '^vary: accept-encoding'
check "CORS on tiles" has "$TMP/h_id" '^access-control-allow-origin: \*'
check "Cache-Control max-age" has "$TMP/h_id" '^cache-control: public, max-age=60'
check "X-Cache header" has "$TMP/h_id" '^x-cache: (hit|miss)'

# ---- Accept-Encoding q-values ----------------------------------------------------
url="$BASE/v1/worlds/42/chunks/4/1/1"
ce() {
	"${CURL[@]}" -o /dev/null -D - -H "Accept-Encoding: $1" "$url" | tr -d '\r' |
		sed -n 's/^[Cc]ontent-[Ee]ncoding: //p'
}
check "zstd;q=0 gives identity" eq "$(ce 'zstd;q=0')" ""
check "* allows zstd" eq "$(ce 'br, *;q=0.1')" zstd
check "explicit zstd;q=0 beats *, which stands for gzip" eq "$(ce '*;q=0.5, zstd;q=0')" gzip
check "q-values parsed" eq "$(ce 'br;q=1.0, zstd;q=0.8, gzip;q=0.5')" zstd
check "the higher q wins" eq "$(ce 'br;q=1.0, zstd;q=0.8, gzip')" gzip
check "identity preferred over zstd wins" eq "$(ce 'identity;q=1, zstd;q=0.5')" ""
check "coding names ignore case" eq "$(ce 'ZSTD')" zstd

# ---- ETag and If-None-Match ---------------------------------------------------------
url="$BASE/v1/worlds/42/chunks/0/0/0"
etag_of() { "${CURL[@]}" -o /dev/null -D - "$@" "$url" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p'; }
etag=$(etag_of)
etag_z=$(etag_of --compressed)
check "strong ETag of 16 hex digits ($etag)" grep -qE '^"[0-9a-f]{16}"$' <<<"$etag"
check "zstd ETag ends in -z ($etag_z)" eq "$etag_z" "${etag%\"}-z\""
code() { "${CURL[@]}" -o "$TMP/body" -w '%{http_code}' "$@"; }
check "304 for the tag" eq "$(code -H "If-None-Match: $etag" "$url")" 304
check "304 has no body" not test -s "$TMP/body"
check "304 for a list with a weak tag" eq "$(code -H "If-None-Match: \"x\", W/$etag" "$url")" 304
check "304 for *" eq "$(code -H 'If-None-Match: *' "$url")" 304
check "200 when no tag matches" eq "$(code -H 'If-None-Match: "0000000000000000"' "$url")" 200
check "304 for the zstd tag" eq "$(code --compressed -H "If-None-Match: $etag_z" "$url")" 304
check "identity tag does not match zstd" eq "$(code --compressed -H "If-None-Match: $etag" "$url")" 200
"${CURL[@]}" -o /dev/null -D "$TMP/h304" -H "If-None-Match: $etag" "$url"
check "304 carries ETag" has "$TMP/h304" '^etag: '
check "304 carries Cache-Control" has "$TMP/h304" '^cache-control: '

# ---- HEAD ---------------------------------------------------------------------------
len_head=$("${CURL[@]}" -I "$url" | tr -d '\r' | sed -n 's/^[Cc]ontent-[Ll]ength: //p')
len_get=$("${CURL[@]}" -o /dev/null -w '%{size_download}' "$url")
check "HEAD Content-Length equals the GET body ($len_head)" eq "$len_head" "$len_get"
check "HEAD has no body" eq "$("${CURL[@]}" -I -o /dev/null -w '%{size_download}' "$url")" 0

# ---- JSON endpoints, metrics, CORS ----------------------------------------------------
json() { "${CURL[@]}" "$BASE$1"; }
w=$(json /v1/worlds/42)
for f in '"generator":"default"' '"fingerprint":"[0-9a-f]{16}"' '"chunk_size":256' '"min_lod":0' \
	'"max_lod":8' '"tile_format_version":7' '"edit_seq":0' '"world_hash":"[0-9a-f]{16}"' \
	'"tiles":\["/v1/worlds/42/chunks/\{lod\}/\{cx\}/\{cz\}\?gen=default"\]'; do
	check "world info has $f" grep -qE "$f" <<<"$w"
done
check "world info honours ?gen=" contains "$(json '/v1/worlds/my-world?gen=alpine')" '"generator":"alpine"'
check "world info is stable" eq "$(json /v1/worlds/42)" "$w"
p=$(json /v1/presets)
for n in default alpine islands mesa; do
	check "presets lists $n" contains "$p" "\"name\":\"$n\""
done
check "presets carry their parameters" contains "$p" '"params":{'
check "healthz" eq "$(json /healthz)" '{"status":"ok"}'
m=$(json /metrics)
for k in terrain_requests_total terrain_response_bytes_total terrain_connections_open \
	terrain_cache_hits_total terrain_cache_misses_total terrain_cache_evictions_total \
	terrain_cache_entries terrain_cache_bytes terrain_generations_in_flight \
	terrain_generations_total 'terrain_generation_seconds_bucket{le="+Inf"}' \
	terrain_generation_seconds_count terrain_region_cache_hits_total \
	terrain_region_cache_misses_total terrain_region_cache_evictions_total \
	terrain_region_cache_bytes terrain_region_compute_seconds_total; do
	check "metrics has $k" contains "$m" "$k"
done
check "metrics count by route and status" contains "$m" 'terrain_requests_total{route="tile",status="304"}'
pre=$("${CURL[@]}" -X OPTIONS -D - -o /dev/null -H 'Origin: http://example.test' \
	-H 'Access-Control-Request-Method: GET' "$url" | tr -d '\r')
check "preflight is 204" contains "$pre" "HTTP/1.1 204"
check "preflight allows GET, HEAD, OPTIONS" contains "$pre" "Access-Control-Allow-Methods: GET, HEAD, OPTIONS"
check "preflight allows If-None-Match" contains "$pre" "If-None-Match"
check "405 as JSON" eq "$(code -X POST "$BASE/healthz")" 405
check "405 body" grep -q '"error":"method_not_allowed"' "$TMP/body"
check "400 as JSON" eq "$(code "$BASE/v1/worlds/42/chunks/0/x/0")" 400
check "400 body" grep -q '"detail":' "$TMP/body"
check "server exits 0 on SIGTERM" server_stop

# ---- SIGTERM during a load --------------------------------------------------------------
server_start --workers 2
load() { # $1: world; fresh connections, cold and cached tiles
	local i=0
	while [ ! -e "$TMP/stop" ] && [ $i -lt 2000 ]; do
		curl -s --max-time 30 -o /dev/null -w '%{http_code} %{size_download} %{exitcode}\n' \
			"$BASE/v1/worlds/$1/chunks/0/$((i % 40))/$((i / 40))" >>"$TMP/load.$1"
		i=$((i + 1))
	done
}
keepalive_load() { # many requests over one reused connection
	local args=() i
	for i in $(seq 0 300); do args+=(-o /dev/null "$BASE/v1/worlds/ka/chunks/1/$i/0"); done
	curl -s --max-time 60 --compressed -w '%{http_code} %{size_download} %{exitcode}\n' \
		"${args[@]}" >>"$TMP/load.ka"
}
for w in 1 2 3 4 5 6; do load $w & done
keepalive_load &
sleep 1.5
check "SIGTERM during a load exits 0" server_stop
touch "$TMP/stop"
wait
# A response is cut when its status line arrived but its body did not
# (curl 18, or any error after a status). Connections refused once the
# listener closed (status 000) are not cuts.
cat "$TMP"/load.* >"$TMP/all"
total=$(wc -l <"$TMP/all")
complete=$(awk '$1 == 200 && $3 == 0' "$TMP/all" | wc -l)
cut=$(awk '($1 != "000" && $3 != 0) || $3 == 18' "$TMP/all" | wc -l)
awk '{print $1, $3}' "$TMP/all" | sort | uniq -c
echo "load: $total requests, $complete complete, $cut cut"
check "requests completed under load" test "$complete" -gt 0
check "no response cut by SIGTERM" eq "$cut" 0
finish
