#!/bin/bash
# server_cli.sh - the command line: generate's argument errors (exit 2),
# --help, options from flags and environment, --presets DIR, and the
# errors that name the address (a busy port, an address not here).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

gen() { "$SERVER_BIN" generate "$@" -o "$TMP/out" 2>"$TMP/err"; }
status() { "$@"; echo $?; }

check "generate writes a tile" eq "$(status gen --seed 42 --lod 2 --cx 1 --cz 2)" 0
check "tile has the TRRN magic" eq "$(head -c 4 "$TMP/out")" TRRN
check "generate to stdout equals -o" cmp -s "$TMP/out" \
	<("$SERVER_BIN" generate --seed 42 --lod 2 --cx 1 --cz 2)
check "generate --layers height is the default" cmp -s "$TMP/out" \
	<("$SERVER_BIN" generate --seed 42 --lod 2 --cx 1 --cz 2 --layers height)
check "generate --layers height,material writes format version 8" \
	eq "$(gen --seed 42 --lod 2 --cx 1 --cz 2 --layers height,material &&
		od -An -tu2 -j4 -N2 "$TMP/out" | tr -d ' ')" 8
for bad in "--seed 18446744073709551616 --lod 0 --cx 0 --cz 0" \
	"--seed bad.seed --lod 0 --cx 0 --cz 0" \
	"--seed 42 --lod 9 --cx 0 --cz 0" \
	"--seed 42 --lod -1 --cx 0 --cz 0" \
	"--seed 42 --lod 0 --cx 2147483648 --cz 0" \
	"--seed 42 --lod 0 --cx 0 --cz -2147483649" \
	"--seed 42 --lod 0 --cx 1e3 --cz 0" \
	"--seed 42 --lod 0 --cx 0 --cz 0 --gen nope" \
	"--seed 42 --lod 0 --cx 0" \
	"--seed 42 --lod 0 --cx 0 --cz 0 --bogus 1" \
	"--seed 42 --lod 0 --cx 0 --cz 0 --layers height,bogus" \
	"--seed 42 --lod 0 --cx 0 --cz 0 --layers"; do
	# shellcheck disable=SC2086
	check "generate $bad exits 2" eq "$(status gen $bad)" 2
	check "generate $bad says why" test -s "$TMP/err"
done
check "unknown command exits 2" eq "$(status "$SERVER_BIN" frobnicate 2>/dev/null)" 2
check "bad option value exits 2" eq "$(status "$SERVER_BIN" serve --port 70000 2>/dev/null)" 2
check "unknown option exits 2" eq "$(status "$SERVER_BIN" serve --nope 1 2>/dev/null)" 2

"$SERVER_BIN" --help >"$TMP/help"
for o in bind:TERRAIN_BIND port:TERRAIN_PORT cache-mb:TERRAIN_CACHE_MB workers:TERRAIN_WORKERS \
	presets:TERRAIN_PRESETS data-dir:TERRAIN_DATA_DIR max-connections:TERRAIN_MAX_CONNECTIONS \
	idle-timeout:TERRAIN_IDLE_TIMEOUT header-timeout:TERRAIN_HEADER_TIMEOUT \
	access-log:TERRAIN_ACCESS_LOG max-age:TERRAIN_MAX_AGE edit-token:TERRAIN_EDIT_TOKEN \
	region-cache-mb:TERRAIN_REGION_CACHE_MB; do
	check "--help documents --${o%%:*}" grep -q -- "--${o%%:*} " "$TMP/help"
	check "--help names ${o#*:}" grep -q "env ${o#*:}, default" "$TMP/help"
done

# Environment and flags: the flag wins; --presets DIR adds ?gen=NAME.
mkdir -p "$TMP/presets"
cp presets/alpine.json "$TMP/presets/custom.json"
TERRAIN_MAX_AGE=5 TERRAIN_PRESETS="$TMP/presets" server_start --max-age 7 --access-log "$TMP/access.log"
hdr=$(curl -sS -D - -o "$TMP/tile" "$BASE/v1/worlds/42/chunks/3/0/0?gen=custom" | tr -d '\r')
check "a --presets DIR preset is served" contains "$hdr" "HTTP/1.1 200"
check "the flag beats the environment" contains "$hdr" "max-age=7"
"$SERVER_BIN" generate --presets "$TMP/presets" --gen custom --seed 42 --lod 3 --cx 0 --cz 0 -o "$TMP/cli"
check "generate --presets matches the server" cmp -s "$TMP/cli" "$TMP/tile"
check "presets lists custom" contains "$(curl -sS "$BASE/v1/presets")" '"name":"custom"'
check "server stops with 0" server_stop
check "access log has one line per response" grep -q '"path":"/v1/worlds/42/chunks/3/0/0?gen=custom","protocol":"HTTP/1.1","status":200,' "$TMP/access.log"

echo '{"name": "broken"' >"$TMP/presets/broken.json"
check "a broken preset file stops startup with 2" \
	eq "$(status "$SERVER_BIN" serve --port 0 --presets "$TMP/presets" 2>"$TMP/err")" 2
check "and names the file" grep -q broken.json "$TMP/err"

# Every error about the address names it. A second server on a busy port
# (libuv reports the bind's EADDRINUSE at listen), addresses this machine
# does not have (TEST-NET-1 of RFC 5737, 2001:db8::/32 of RFC 3849), a name.
server_start
other() { timeout "$(scaled 120)" "$SERVER_BIN" serve --data-dir "$TMP/data2" "$@" 2>"$TMP/err"; }
check "a second server on the busy port exits 1" eq "$(status other --bind 127.0.0.1 --port "$PORT")" 1
check "... saying listen 127.0.0.1:$PORT: address already in use" \
	has "$TMP/err" "^terrain-server: listen 127\.0\.0\.1:$PORT: address already in use$"
check "the first server still answers" "${CURL[@]}" -fo /dev/null "$BASE/healthz"
check "bind to an address not here exits 1" eq "$(status other --bind 192.0.2.1 --port "$PORT")" 1
check "... naming it: bind 192.0.2.1:$PORT" has "$TMP/err" "^terrain-server: bind 192\.0\.2\.1:$PORT: "
check "an IPv6 one exits 1" eq "$(status other --bind 2001:db8::1 --port "$PORT")" 1
check "... naming it in brackets: bind [2001:db8::1]:$PORT" \
	has "$TMP/err" "^terrain-server: bind \[2001:db8::1\]:$PORT: "
check "a host name for --bind exits 2" eq "$(status other --bind nohost.invalid --port "$PORT")" 2
check "... naming it" has "$TMP/err" "^terrain-server: --bind nohost\.invalid: not an IPv4 or IPv6 address$"
check "server stops with 0" server_stop
finish
