#!/bin/bash
# access_log.sh - the access log against the real server: one JSON object
# per line with its fields escaped (a raw '"' and '\' in the query, a tab in
# the user agent), UTF-8 kept as UTF-8 and stray bytes (0xff, an overlong
# form, a surrogate, a cut sequence) as \xHH, bytes equal to the body sent, nothing but
# access lines in the file, SIGHUP reopening it at its path after a mv, and
# with "--access-log -" the lines on stdout, apart from stderr's messages.
. "$(dirname "$0")/../lib/lib.sh"

LOG=$TMP/access.log
server_start --access-log "$LOG"
PID=$(pgrep -P "$SERVER_PID") # the server itself, under timeout(1)

# field FILE NAME: field NAME of FILE's last line (json.loads must parse it)
field() {
	python3 -c 'import json, sys
line = open(sys.argv[1], "rb").read().splitlines()[-1]
print(json.loads(line)[sys.argv[2]])' "$1" "$2"
}
# field_is FILE NAME PY: that field equals the Python literal PY
field_is() {
	python3 -c 'import ast, json, sys
line = open(sys.argv[1], "rb").read().splitlines()[-1]
got, want = json.loads(line)[sys.argv[2]], ast.literal_eval(sys.argv[3])
sys.exit(0 if got == want else print("  got %a, want %a" % (got, want)) or 1)' "$1" "$2" "$3"
}
# all lines of FILE parse as JSON objects; prints how many
count_json() {
	python3 -c 'import json, sys
n = 0
for line in open(sys.argv[1], "rb"):
    assert isinstance(json.loads(line), dict)
    n += 1
print(n)' "$1"
}
# raw request bytes (printf format) to the server; prints the answer
raw() {
	local a
	exec 3<>"/dev/tcp/127.0.0.1/$PORT"
	printf "$1" >&3
	a=$(timeout 10 cat <&3 | head -c 200)
	exec 3>&-
	printf '%s' "$a"
}

a=$(raw 'GET /v1/presets?q="x\\y%%01 HTTP/1.1\r\nHost: t\r\nUser-Agent: ua "q" \\ \t\xff\r\nReferer: http://r/?"\r\nConnection: close\r\n\r\n')
check "the raw request is answered 200" contains "$a" "HTTP/1.1 200"
check "the line parses, with the exact path and query" \
	field_is "$LOG" path '"/v1/presets?q=\"x\\y%01"'
check "the user agent keeps its quote, backslash and tab; a stray byte 0xff reads \\xff" \
	field_is "$LOG" user_agent '"ua \"q\" \\ \t\\xff"'
check "  the line is valid UTF-8" python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$LOG"

check "the referer is logged" field_is "$LOG" referer '"http://r/?\""'
check "status and protocol" eq "$(field "$LOG" status) $(field "$LOG" protocol)" "200 HTTP/1.1"
check "the method" field_is "$LOG" method '"GET"'
check "the remote address" field_is "$LOG" remote '"127.0.0.1"'

# UTF-8 is kept as sent; bytes that are not well-formed UTF-8 (an overlong
# '/', a surrogate, a cut sequence) are written as \xHH, one per byte
a=$(raw 'GET /healthz HTTP/1.1\r\nHost: t\r\nUser-Agent: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x97\xba \xc0\xaf \xed\xa0\x80 \xe2\x82\r\nConnection: close\r\n\r\n')
check "a UTF-8 user agent is answered 200" contains "$a" "HTTP/1.1 200"
check "  its UTF-8 is written as UTF-8 (not as Latin-1 escapes)" \
	grep -q 'café € 🗺' <(tail -n 1 "$LOG")
check "  the invalid bytes as \\xHH, the line valid JSON" field_is "$LOG" user_agent \
	"'café € 🗺 \\\\xc0\\\\xaf \\\\xed\\\\xa0\\\\x80 \\\\xe2\\\\x82'"

curl -sS -o "$TMP/body" "$BASE/v1/worlds/42/chunks/3/0/0"
check "bytes is the body size of a tile" eq "$(field "$LOG" bytes)" "$(stat -c %s "$TMP/body")"
check "an absent referer is null" field_is "$LOG" referer None
curl -sS -I -o /dev/null "$BASE/v1/worlds/42/chunks/3/0/0"
check "a HEAD answer logs no body bytes" eq "$(field "$LOG" bytes)" "0"
check "the log holds only JSON access lines (4)" eq "$(count_json "$LOG")" 4
check "start-up messages stay on stderr" has "$SERVER_LOG" "listening on"
check "no access line on stderr" not has "$SERVER_LOG" '"status"'

# logrotate: mv, SIGHUP, and the next line lands in a new file at $LOG
mv "$LOG" "$LOG.1"
kill -HUP "$PID"
wait_until 60 test -e "$LOG"
check "SIGHUP creates the log again at its path" test -e "$LOG"
curl -sS -o /dev/null "$BASE/v1/presets?after=hup"
check "the next request lands in the new file" field_is "$LOG" path '"/v1/presets?after=hup"'
check "the new file holds just that line" eq "$(count_json "$LOG")" 1
check "the moved file keeps its 4 lines" eq "$(count_json "$LOG.1")" 4
check "the server survives SIGHUP" kill -0 "$PID"
check "server stops with 0" server_stop

# duration_ms: the request's time in ms with its fraction (uv_hrtime), > 0
check "duration_ms is a positive number" python3 -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().splitlines()[-1])["duration_ms"]
sys.exit(not (isinstance(d, float) and d > 0))' "$LOG"

# --access-log -: the lines on stdout, the messages alone on stderr
timeout -k 5 60 "$SERVER_BIN" serve --bind 127.0.0.1 --port 0 --data-dir "$TMP/data2" \
	--access-log - >"$TMP/out" 2>"$TMP/err" &
SERVERS+=("$!")
for i in $(seq 1 200); do
	PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/err")
	[ -n "$PORT" ] && break
	sleep 0.05
done
curl -sS -o /dev/null "http://127.0.0.1:$PORT/v1/presets?on=stdout"
curl -sS -o /dev/null "http://127.0.0.1:$PORT/healthz"
for i in $(seq 1 100); do [ "$(wc -l <"$TMP/out")" -ge 2 ] && break; sleep 0.05; done
check "with - the access lines go to stdout, as JSON" eq "$(count_json "$TMP/out")" 2
check "the first is the presets request" \
	python3 -c 'import json, sys; sys.exit(json.loads(open(sys.argv[1]).readline())["path"] != "/v1/presets?on=stdout")' "$TMP/out"
check "stderr holds the start-up messages" has "$TMP/err" "listening on"
check "and no access line" not has "$TMP/err" '"status"'
finish
