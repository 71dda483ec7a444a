#!/bin/bash
# client_edit.sh - terrain-client edit and follow against the real server on
# 127.0.0.1: a raise on a chunk corner touches 4 chunks and lifts the
# corner sample of all four tiles by the strength; usage errors exit 2 and
# server-side rejections exit 1 with the server's detail; follow prints one
# ok line per batch, in order, with the hashes the edits answered, and
# exits 0 at --duration; it resumes with Last-Event-ID across a server
# restart and exits 0 on SIGINT; a tampered event hash or a corrupt tile
# (through a fault-injecting proxy) exits 1 naming it; the token rules; a
# server that is down. Servers and the proxy are killed on exit (lib.sh).
. "$(dirname "$0")/../lib/lib.sh"
unset TERRAIN_EDIT_TOKEN

CLIENT=$BUILD/terrain-client
T="timeout -k 5 60"
# to OUT ERR CMD...: run CMD with its output in OUT and ERR
to() { local o=$1 e=$2; shift 2; "$@" >"$o" 2>"$e"; }
# status CMD...: print CMD's exit status (its output discarded)
status() { "$@" >/dev/null 2>&1; echo $?; }
# wait_for FILE REGEX [SECONDS]: until a line of FILE matches (60 s, scaled)
wait_for() {
	wait_until "${3:-60}" grep -qE -- "$2" "$1" 2>/dev/null && return 0
	echo "  timed out waiting for '$2' in $1:"; cat "$1"
	return 1
}
# heights SEED CX CZ OUT: the LOD 0 tile's heights, one row per line
heights() {
	"${CURL[@]}" -o "$TMP/tile.bin" "$BASE/v1/worlds/$1/chunks/0/$2/$3" &&
		"$CLIENT" decode --heights "$TMP/tile.bin" >"$4"
}
# at FILE I J: sample (I, J) of a heights file (row J, column I)
at() { awk -v i=$(($2 + 1)) -v j=$(($3 + 1)) 'NR == j { print $i }' "$1"; }
plus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a + b }'; }
# field FILE KEY: the value of "KEY: value" in an edit's answer
field() { sed -n "s/^$2: //p" "$1"; }

server_start --workers 2
W=corner-world

# ---- edit: a raise on the corner of chunks (0,0), (1,0), (0,1), (1,1) ----
for c in "0 0" "1 0" "0 1" "1 1"; do
	set -- $c
	heights $W "$1" "$2" "$TMP/before.$1.$2"
done
check "edit raise exits 0" to "$TMP/e1" "$TMP/e1.err" $T "$CLIENT" edit \
	--server "$BASE" --seed $W --op raise --x 256 --z 256 --radius 40 \
	--strength 3
cat "$TMP/e1" "$TMP/e1.err"
check "answer: first_seq 1" has "$TMP/e1" '^first_seq: 1$'
check "answer: last_seq 1" has "$TMP/e1" '^last_seq: 1$'
check "answer: a world hash" has "$TMP/e1" '^world_hash: [0-9a-f]{16}$'
check "answer: the 4 chunks of the corner" has "$TMP/e1" '^chunks: 0,0 1,0 0,1 1,1$'
check "the answer's hash is the world's" contains \
	"$("${CURL[@]}" "$BASE/v1/worlds/$W")" "\"world_hash\":\"$(field "$TMP/e1" world_hash)\""
# the corner (256, 256) is sample (256, 256) of (0,0), (0, 256) of (1,0),
# (256, 0) of (0,1) and (0, 0) of (1,1)
for c in "0 0 256 256" "1 0 0 256" "0 1 256 0" "1 1 0 0"; do
	set -- $c
	heights $W "$1" "$2" "$TMP/after.$1.$2"
	b=$(at "$TMP/before.$1.$2" "$3" "$4")
	a=$(at "$TMP/after.$1.$2" "$3" "$4")
	check "chunk $1,$2: the centre rose by 3 m ($b -> $a)" eq "$a" "$(plus "$b" 3)"
done
check "a sample beyond the radius did not move" eq \
	"$(at "$TMP/after.0.0" 100 100)" "$(at "$TMP/before.0.0" 100 100)"
"${CURL[@]}" -o "$TMP/tile.bin" "$BASE/v1/worlds/$W/chunks/0/1/1"
check "the edited tile's header has edit_seq 1" has \
	<("$CLIENT" decode "$TMP/tile.bin") '^edit_seq: 1$'

# ---- usage errors: exit 2, nothing sent ----
E=("$CLIENT" edit --server "$BASE" --seed $W --x 0 --z 0)
check "bad op: exit 2" eq "$(status "${E[@]}" --op dig --radius 5 --strength 1)" 2
"${E[@]}" --op dig --radius 5 --strength 1 2>"$TMP/err"
check "bad op: says which ops exist" has "$TMP/err" 'raise, lower, flatten or set'
check "set with --strength: exit 2" eq "$(status "${E[@]}" --op set --radius 5 --strength 1 --height 2)" 2
check "raise without --strength: exit 2" eq "$(status "${E[@]}" --op raise --radius 5)" 2
check "flatten without --height: exit 2" eq "$(status "${E[@]}" --op flatten --radius 5 --strength 0.5)" 2
check "bad falloff: exit 2" eq "$(status "${E[@]}" --op raise --radius 5 --strength 1 --falloff cubic)" 2
check "missing --radius: exit 2" eq "$(status "${E[@]}" --op raise --strength 1)" 2
check "bad seed: exit 2" eq "$(status "$CLIENT" edit --server "$BASE" --seed 'a b' --x 0 --z 0 --op raise --radius 5 --strength 1)" 2

# ---- rejected by the server: exit 1 with its detail, nothing applied ----
check "radius 5000: exit 1" not to /dev/null "$TMP/err" $T "${E[@]}" \
	--op raise --radius 5000 --strength 1
cat "$TMP/err"
check "radius 5000: the server's detail" has "$TMP/err" \
	'HTTP 422: .*edits\[0\]\.radius: must be in \(0, 4096\]'
check "strength 20000: exit 1" not to /dev/null "$TMP/err" $T "${E[@]}" \
	--op lower --radius 5 --strength 20000
check "strength 20000: the server's detail" has "$TMP/err" 'HTTP 422: .*strength'
check "unknown generator: exit 1 with HTTP 404" not to /dev/null "$TMP/err" \
	$T "${E[@]}" --gen no-such --op raise --radius 5 --strength 1
check "unknown generator: HTTP 404" has "$TMP/err" 'HTTP 404'
check "nothing applied: edit_seq still 1" contains \
	"$("${CURL[@]}" "$BASE/v1/worlds/$W")" '"edit_seq":1,'

# ---- follow: one ok line per batch, in order; exit 0 at --duration ----
check "follow --lod too fine for the preset: exit 2" eq \
	"$(status $T "$CLIENT" follow --server "$BASE" --seed $W --lod 12 --duration 1)" 2
check "follow exits 0 at --duration" eq \
	"$(status $T "$CLIENT" follow --server "$BASE" --seed $W --duration 1)" 0
# no --duration: stopped once the last batch is seen (a slow machine may
# take longer than any fixed duration to post the five batches)
timeout -k 5 "$(scaled 300)" "$CLIENT" follow --server "$BASE" --seed $W \
	>"$TMP/follow.out" 2>"$TMP/follow.err" &
FOLLOW=$!
check "follow starts from the log (seq 1)" wait_for "$TMP/follow.out" \
	"^follow: world $W at seq 1, world_hash $(field "$TMP/e1" world_hash); following its edits$"
want=()
k=2
for args in "--op lower --x 600 --z 40 --radius 300 --strength 2" \
	    "--op flatten --x -20 --z 500 --radius 60 --strength 0.5 --height 12 --falloff linear" \
	    "--op set --x 1000.25 --z -1000.75 --radius 3.5 --height -4" \
	    "--op raise --x 256 --z 256 --radius 1 --strength 0.004"; do
	$T "$CLIENT" edit --server "$BASE" --seed $W $args >"$TMP/e$k" 2>&1
	n=$(field "$TMP/e$k" chunks | wc -w)
	want+=("seq $k..$k world_hash $(field "$TMP/e$k" world_hash) ok, refetched $n chunks")
	k=$((k + 1))
done
# a batch of three edits in one POST
"${CURL[@]}" -o "$TMP/batch" -H 'Content-Type: application/json' --data-binary \
	'{"edits":[{"op":"raise","x":-300,"z":-300,"radius":20,"strength":1},
	 {"op":"lower","x":-290,"z":-300,"radius":20,"strength":1},
	 {"op":"set","x":5000,"z":5000,"radius":600,"height":7}]}' \
	"$BASE/v1/worlds/$W/edits"
h=$(sed -n 's/.*"world_hash":"\([0-9a-f]*\)".*/\1/p' "$TMP/batch")
n=$(grep -o '\[-\?[0-9]*,-\?[0-9]*\]' "$TMP/batch" | wc -l)
want+=("seq 6..8 world_hash $h ok, refetched $n chunks")
check "follow sees the last batch" wait_for "$TMP/follow.out" '^seq 6\.\.8 '
kill -INT $(pgrep -P "$FOLLOW") # follow itself, as in the SIGINT check below
wait "$FOLLOW"
rc=$?
cat "$TMP/follow.out" "$TMP/follow.err"
check "follow exits 0 on SIGINT" eq "$rc" 0
check "one ok line per batch, in order" eq "$(grep '^seq ' "$TMP/follow.out")" \
	"$(printf '%s\n' "${want[@]}")"
check "follow sums up" has "$TMP/follow.out" \
	'^follow: 5 batches \(7 edits\) checked, [0-9]+ chunks refetched, 0 reconnects$'

# ---- follow resumes with Last-Event-ID across a restart; SIGINT: exit 0 ----
$T "$CLIENT" follow --server "$BASE" --seed $W --lod 2 \
	>"$TMP/resume.out" 2>"$TMP/resume.err" &
FOLLOW=$!
check "follow at LOD 2 starts at seq 8" wait_for "$TMP/resume.out" 'at seq 8, '
port=$PORT
check "the server stops cleanly" server_stop
server_start --workers 2 --port "$port"
check "the server is back on the same port" eq "$PORT" "$port"
$T "$CLIENT" edit --server "$BASE" --seed $W --op raise --x 10 --z 10 \
	--radius 5 --strength 1 >"$TMP/e9" 2>&1
check "the edit after the restart is checked" wait_for "$TMP/resume.out" \
	"^seq 9\.\.9 world_hash $(field "$TMP/e9" world_hash) ok, refetched 1 chunks$"
# SIGINT to follow itself, as Ctrl-C sends it (through timeout(1), which
# follows it with SIGCONT, ASan's exit-time leak check can hang under load)
kill -INT $(pgrep -P "$FOLLOW")
wait "$FOLLOW"
rc=$?
cat "$TMP/resume.out" "$TMP/resume.err"
check "follow exits 0 on SIGINT" eq "$rc" 0
check "the drop was reported" has "$TMP/resume.err" 'event stream: .*reconnecting in [0-9]+ ms \(Last-Event-ID: 8\)'
check "the stream resumed" has "$TMP/resume.err" 'event stream resumed after seq 8'

# ---- follow catches a tampered event hash and a corrupt tile ----
if command -v python3 >/dev/null; then
	cat >"$TMP/proxy.py" <<'EOF'
# Forward GETs to the upstream server. MODE hash: flip a hex digit of the
# world hash in every event; MODE tile: flip a byte of every tile body.
# Event streams are forwarded line by line as they come.
import http.client, http.server, sys
upstream, mode, portfile = sys.argv[1], sys.argv[2], sys.argv[3]

class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        up = http.client.HTTPConnection(upstream, timeout=60)
        hdrs = {h: self.headers[h] for h in ("Last-Event-ID", "Accept")
                if self.headers[h]}
        up.request("GET", self.path, headers=hdrs)
        r = up.getresponse()
        if r.getheader("Content-Type", "").startswith("text/event-stream"):
            self.send_response(r.status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            while True:
                line = r.readline()
                if not line:
                    return
                if mode == "hash" and line.startswith(b"data: "):
                    i = line.index(b'"world_hash":"') + 14
                    line = line[:i] + (b"1" if line[i:i + 1] == b"0" else b"0") + line[i + 1:]
                self.wfile.write(line)
                self.wfile.flush()
        body = bytearray(r.read())
        if mode == "tile" and "/chunks/" in self.path and r.status == 200:
            body[100] ^= 0x5a
        self.send_response(r.status)
        for h in ("Content-Type", "ETag", "Cache-Control"):
            if r.getheader(h):
                self.send_header(h, r.getheader(h))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
srv.daemon_threads = True
with open(portfile, "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
EOF
	for mode in hash tile; do
		rm -f "$TMP/proxy.port"
		# started directly (no timeout wrapper) so that cleanup kills it
		python3 "$TMP/proxy.py" "127.0.0.1:$PORT" $mode "$TMP/proxy.port" \
			>/dev/null 2>"$TMP/proxy.log" &
		PROXY_PID=$!
		SERVERS+=("$PROXY_PID")
		wait_for "$TMP/proxy.port" . >/dev/null
		$T "$CLIENT" follow --server "http://127.0.0.1:$(cat "$TMP/proxy.port")" \
			--seed $W --duration 20 >"$TMP/$mode.out" 2>"$TMP/$mode.err" &
		FOLLOW=$!
		wait_for "$TMP/$mode.out" 'following its edits' >/dev/null
		$T "$CLIENT" edit --server "$BASE" --seed $W --op raise --x 700 \
			--z 700 --radius 5 --strength 1 >/dev/null 2>&1
		wait "$FOLLOW"
		rc=$?
		cat "$TMP/$mode.out" "$TMP/$mode.err"
		check "$mode tampered: follow exits 1" eq "$rc" 1
		kill "$PROXY_PID"
		wait "$PROXY_PID" 2>/dev/null
	done
	check "a tampered event hash is named" has "$TMP/hash.err" \
		'seq 10\.\.10: world hash mismatch: the event says [0-9a-f]{16}, the log gives [0-9a-f]{16}'
	check "a corrupt tile is named" has "$TMP/tile.err" \
		'chunk 0/2/2 \(lod/cx/cz\): corrupt tile: checksum mismatch'
else
	echo "skip: tampering tests need python3"
fi

# ---- a server with an edit token ----
server_stop
server_start --workers 2 --edit-token s3cret-T0ken
E=("$CLIENT" edit --server "$BASE" --seed $W --op raise --x 1 --z 1 --radius 2 --strength 1)
check "no token: exit 1" not to /dev/null "$TMP/err" $T "${E[@]}"
cat "$TMP/err"
check "no token: says 401" has "$TMP/err" 'HTTP 401'
check "wrong token: exit 1 with 401" not to /dev/null "$TMP/err" $T "${E[@]}" --token nope
check "wrong token: says 401" has "$TMP/err" 'HTTP 401'
check "the right token: ok" to "$TMP/tok" "$TMP/err" $T "${E[@]}" --token s3cret-T0ken
check "the right token: an answer" has "$TMP/tok" '^first_seq: 1[0-9]$'
check "the token from TERRAIN_EDIT_TOKEN: ok" to /dev/null "$TMP/err" \
	env TERRAIN_EDIT_TOKEN=s3cret-T0ken $T "${E[@]}"
check "a token with a newline: exit 2" eq "$(status "${E[@]}" --token "$(printf 'a\nb')")" 2

# ---- a server that is down ----
down=$PORT
server_stop
check "server down: edit exits 1" not to /dev/null "$TMP/err" $T "$CLIENT" edit \
	--server "http://127.0.0.1:$down" --seed $W --op raise --x 1 --z 1 \
	--radius 2 --strength 1
cat "$TMP/err"
check "server down: a clear message" has "$TMP/err" 'cannot reach the server .*connection refused'
check "server down: follow exits 1" not to /dev/null "$TMP/err" $T "$CLIENT" \
	follow --server "http://127.0.0.1:$down" --seed $W --duration 5
check "server down: follow says so" has "$TMP/err" 'cannot reach the server'
finish
