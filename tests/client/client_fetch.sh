#!/bin/bash
# client_fetch.sh - terrain-client's network commands against the real
# server on 127.0.0.1: fetch writes a non-uniform PNG sized 2R / spacing,
# coloured by the tiles' material layer (several materials' map colours
# show in it) and by height when the tiles come without the layer,
# walk and swarm run briefly with zero errors and print their reports, a
# tile corrupted by a fault-injecting proxy is caught and named, and a
# server that is down or answers an error status gives a clear message and
# a non-zero exit; decode on a bundle lists its tiles, decodes one member
# as the single tile, and refuses a cut or corrupt bundle. Servers and the
# proxy are killed on exit (lib.sh).
. "$(dirname "$0")/../lib/lib.sh"

CLIENT=$BUILD/terrain-client
T="timeout -k 5 120"
# to OUT ERR CMD...: run CMD with its output in OUT and ERR (so that the
# redirections do not swallow check's own "ok:" line)
to() { local o=$1 e=$2; shift 2; "$@" >"$o" 2>"$e"; }
server_start

# ---- fetch ----
out=$TMP/fetch.out
check "fetch exits 0" to "$out" "$TMP/fetch.err" $T "$CLIENT" fetch \
	--server "$BASE" --seed 42 --x 100 --z -50 --radius 512 -o "$TMP/map.png"
cat "$out" "$TMP/fetch.err"
check "fetch reports chunks" has "$out" '^fetch: [0-9]+ chunks \(lod 0: [0-9]+'
check "fetch reports wire and decoded bytes and time" \
	has "$out" '[0-9]+ bytes on the wire, [0-9]+ bytes decoded, [0-9.]+ s'
check "fetch verified seams" has "$out" '[1-9][0-9]* seams checked'
"$CLIENT" pngstat "$TMP/map.png" >"$TMP/stat" 2>&1
cat "$TMP/stat"
check "map.png is 2R / 1 m = 1024 px wide" has "$TMP/stat" '^width: 1024$'
check "map.png is square" has "$TMP/stat" '^height: 1024$'
colours=$(sed -n 's/^colours: //p' "$TMP/stat")
check "map.png is not uniform ($colours colours)" test "${colours:-0}" -gt 100
check "fetch asked for the material layer and coloured every tile by it" \
	has "$out" '^fetch: coloured by material on ([0-9]+) of \1 tiles'

# Which materials' map colours does a PNG show? A pixel is a material's
# colour times the hillshade, so it keeps the colour's chromaticity:
# count the pixels near each table colour's (docs/tile-format.md; rock and
# snow, both grey, told apart by brightness). Reads the PNG with zlib only.
cat >"$TMP/pngmat.py" <<'EOF'
import struct, sys, zlib
TABLE = {"water": 0x2a5d8f, "sand": 0xd8c78e, "grass": 0x6f9e4a,
         "forest": 0x3b6a35, "rock": 0x8a8580, "snow": 0xf2f4f7}
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, []
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype == 2 and lace == 0, "not 8-bit RGB"
    elif kind == b"IDAT":
        idat.append(body)
    pos += 12 + n
raw, stride = zlib.decompress(b"".join(idat)), 3 * w
prev, rows = bytearray(stride), []
for r in range(h):
    f = raw[r * (stride + 1)]
    line = bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
    for i in range(stride) if f else ():
        a = line[i - 3] if i >= 3 else 0
        b, c = prev[i], prev[i - 3] if i >= 3 else 0
        if f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            a = a if pa <= pb and pa <= pc else b if pb <= pc else c
        line[i] = (line[i] + (a if f in (1, 4) else b if f == 2 else (a + b) // 2)) & 255
    rows.append(line)
    prev = line
def chroma(r, g, b):
    return r / (r + g + b), g / (r + g + b)
ref = {k: chroma(v >> 16, (v >> 8) & 255, v & 255) for k, v in TABLE.items()}
count = dict.fromkeys(TABLE, 0)
for line in rows:
    for i in range(0, stride, 3):
        r, g, b = line[i], line[i + 1], line[i + 2]
        if r + g + b < 90:
            continue
        x, y = chroma(r, g, b)
        name, d = min(((k, (x - c[0]) ** 2 + (y - c[1]) ** 2)
                       for k, c in ref.items()), key=lambda t: t[1])
        if d > 0.012 ** 2:
            continue
        if name in ("rock", "snow"):
            name = "snow" if max(r, g, b) > 190 else "rock"
        count[name] += 1
for k, n in sorted(count.items(), key=lambda t: -t[1]):
    print(f"{k} {n / (w * h):.4f}")
EOF
# materials PNG: print the shares, and in PNG.n how many table colours
# cover at least 0.5% of the pixels
materials() {
	python3 "$TMP/pngmat.py" "$1" >"$1.mat" && cat "$1.mat" &&
		awk '$2 >= 0.005 { n++ } END { print n + 0 }' "$1.mat" >"$1.n"
}

# a lake below a snowy range (seed 42), 4 m per px
check "fetch of a lake below a range exits 0" to "$TMP/lake.out" \
	"$TMP/lake.err" $T "$CLIENT" fetch --server "$BASE" --seed 42 \
	--x 4608 --z -4608 --radius 1024 --d0 32 -o "$TMP/lake.png"
cat "$TMP/lake.out" "$TMP/lake.err"
if command -v python3 >/dev/null; then
	materials "$TMP/lake.png"
	check "the PNG shows at least 5 materials' map colours" \
		test "$(cat "$TMP/lake.png.n")" -ge 5
	check "water, grass, forest and rock among them" eq "$(awk \
		'$2 >= 0.005 && /^(water|grass|forest|rock) / { n++ } END { print n + 0 }' \
		"$TMP/lake.png.mat")" 4
else
	echo "skip: the PNG's material colours need python3"
fi

# a coarser image: a small d0 makes the player's chunk LOD 1, 2 m per px
check "fetch with --d0 32 --gen alpine and a text seed" to "$TMP/coarse.out" \
	"$TMP/coarse.err" $T "$CLIENT" fetch --server "$BASE" --seed my-world \
	--gen alpine --x 0 --z 0 --radius 300 --d0 32 --lmax 3 -o "$TMP/coarse.png"
cat "$TMP/coarse.out" "$TMP/coarse.err"
"$CLIENT" pngstat "$TMP/coarse.png" >"$TMP/cstat" 2>&1
check "coarse map is 2R / spacing wide" eq "$(sed -n 's/^width: //p' "$TMP/cstat")" \
	"$(awk '/m per px/ { for (i = 1; i <= NF; i++) if ($i == "per") print 600 / $(i - 2) }' "$TMP/coarse.out")"

# ---- walk ----
out=$TMP/walk.out
check "walk exits 0" to "$out" "$TMP/walk.err" $T "$CLIENT" walk \
	--server "$BASE" --seed 42 --path 0,0:300,0:300,200 --speed 100 \
	--step-ms 500 --radius 512 --revalidate 1
head -n 3 "$out"; tail -n 3 "$out"; cat "$TMP/walk.err"
check "walk prints per-step lines" has "$out" '^step 1 t=0\.5s .* requests .* ms$'
check "walk reports 0 errors" has "$out" '^walk: [0-9]+ steps, .* 0 errors$'
check "walk revalidated with 304s" has "$out" 'answered 200, [1-9][0-9]* 304'
check "walk reports latency" has "$out" '^walk: step latency p50 [0-9.]+ ms'

# ---- swarm ----
out=$TMP/swarm.out
check "swarm exits 0" to "$out" "$TMP/swarm.err" $T "$CLIENT" swarm \
	--server "$BASE" --players 6 --duration 2 --radius 300 --connections 4 \
	--seed-base 7
cat "$out" "$TMP/swarm.err"
check "swarm prints rates" has "$out" 'answered \([0-9.]+/s\), [0-9]+ tiles \([0-9.]+/s\), [0-9.]+ MB on the wire \([0-9.]+ MB/s\)'
check "swarm prints the cache-hit share" has "$out" '^swarm: cache hits [0-9.]+%'
check "swarm prints latency percentiles" has "$out" 'p50 [0-9.]+ ms, p90 [0-9.]+ ms, p99 [0-9.]+ ms, max [0-9.]+ ms'
check "swarm reports 0 errors" has "$out" '^swarm: 0 errors'

# ---- errors: bad status, server down ----
check "unknown generator: exit 1" not to /dev/null "$TMP/err" $T "$CLIENT" \
	fetch --server "$BASE" --seed 42 --gen no-such-preset --radius 256 \
	-o "$TMP/x.png"
cat "$TMP/err"
check "unknown generator: names the status" has "$TMP/err" 'HTTP 404'

check "usage error: exit 2" eq "$("$CLIENT" fetch --server "$BASE" --seed 42 \
	-o "$TMP/x.png" >/dev/null 2>&1; echo $?)" 2

down_port=$PORT
server_stop
start=$SECONDS
check "server down: exit 1" not to /dev/null "$TMP/err" $T "$CLIENT" fetch \
	--server "http://127.0.0.1:$down_port" --seed 42 --radius 256 \
	-o "$TMP/x.png"
cat "$TMP/err"
check "server down: a clear message" has "$TMP/err" 'cannot reach the server .*connection refused'
check "server down: gives up within 10 s" test $((SECONDS - start)) -lt 10
check "server down: walk exits 1" not to /dev/null /dev/null $T "$CLIENT" \
	walk --server "http://127.0.0.1:$down_port" --seed 42 --path 0,0 \
	--speed 1
check "server down: no PNG written" test ! -e "$TMP/x.png"

# ---- a corrupt tile, through a fault-injecting proxy ----
if ! command -v python3 >/dev/null; then
	echo "skip: corrupt-tile test needs python3"
	finish
	exit 0
fi
server_start
cat >"$TMP/proxy.py" <<'EOF'
# Forward GETs to the upstream server (identity coding), flipping one byte
# of the body of the tiles whose path matches CORRUPT (a regex); with a
# fourth argument "strip-layers", drop the layers parameter from every
# query, as a server without layers would ignore it.
import http.client, http.server, re, sys
upstream, pattern, portfile = sys.argv[1], re.compile(sys.argv[2]), sys.argv[3]
strip = sys.argv[4:] == ["strip-layers"]

def forward(path):
    if not strip or "?" not in path:
        return path
    base, query = path.split("?", 1)
    q = [kv for kv in query.split("&") if kv and not kv.startswith("layers=")]
    return base + ("?" + "&".join(q) if q else "")

class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        if not hasattr(self, "up"):
            self.up = http.client.HTTPConnection(upstream, timeout=60)
        self.up.request("GET", forward(self.path))
        r = self.up.getresponse()
        body = bytearray(r.read())
        if r.status == 200 and pattern.search(self.path) and len(body) > 100:
            body[100] ^= 0x5a
        self.send_response(r.status)
        for h in ("Content-Type", "ETag", "X-Cache", "Cache-Control"):
            if r.getheader(h):
                self.send_header(h, r.getheader(h))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
with open(portfile, "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
EOF
# started directly (no timeout wrapper) so that lib.sh's cleanup kills it
python3 "$TMP/proxy.py" "127.0.0.1:$PORT" '/chunks/0/1/0($|\?)' \
	"$TMP/proxy.port" >/dev/null 2>"$TMP/proxy.log" &
PROXY_PID=$!
SERVERS+=("$PROXY_PID")
wait_until 60 test -s "$TMP/proxy.port"
PROXY="http://127.0.0.1:$(cat "$TMP/proxy.port")"
check "through the proxy, untouched tiles pass" to /dev/null "$TMP/err" \
	$T "$CLIENT" fetch --server "$PROXY" --seed 42 --x -300 --z 100 \
	--radius 200 -o "$TMP/ok.png"
cat "$TMP/err"
check "corrupt tile: exit 1" not to /dev/null "$TMP/err" $T "$CLIENT" fetch \
	--server "$PROXY" --seed 42 --x 300 --z 100 --radius 200 -o "$TMP/bad.png"
cat "$TMP/err"
check "corrupt tile: names chunk 0/1/0 and the checksum" \
	has "$TMP/err" 'chunk 0/1/0 \(lod/cx/cz\): corrupt tile: checksum mismatch'
check "corrupt tile: no PNG written" test ! -e "$TMP/bad.png"
check "corrupt tile: walk exits 1" not to /dev/null "$TMP/err" $T "$CLIENT" \
	walk --server "$PROXY" --seed 42 --path 300,100 --speed 1 --radius 200
check "corrupt tile: walk names it" has "$TMP/err" 'chunk 0/1/0 .*checksum mismatch'
kill "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null

# ---- tiles without a material layer: coloured by height ----
rm -f "$TMP/proxy.port"
python3 "$TMP/proxy.py" "127.0.0.1:$PORT" '^$' "$TMP/proxy.port" \
	strip-layers >/dev/null 2>"$TMP/proxy.log" &
PROXY_PID=$!
SERVERS+=("$PROXY_PID")
wait_until 60 test -s "$TMP/proxy.port"
PROXY="http://127.0.0.1:$(cat "$TMP/proxy.port")"
check "tiles without the layer: fetch exits 0" to "$TMP/plain.out" \
	"$TMP/plain.err" $T "$CLIENT" fetch --server "$PROXY" --seed 42 \
	--x 4608 --z -4608 --radius 1024 --d0 32 -o "$TMP/plain.png"
cat "$TMP/plain.out" "$TMP/plain.err"
check "tiles without the layer: coloured by height" has "$TMP/plain.out" \
	'^fetch: coloured by material on 0 of [1-9][0-9]* tiles'
"$CLIENT" pngstat "$TMP/plain.png" >"$TMP/pstat" 2>&1
check "tiles without the layer: the PNG is not uniform" \
	test "$(sed -n 's/^colours: //p' "$TMP/pstat")" -gt 100
check "tiles without the layer: the PNG differs from the material one" \
	not cmp -s "$TMP/plain.png" "$TMP/lake.png"
materials "$TMP/plain.png"
check "tiles without the layer: the height ramp shows fewer table colours" \
	test "$(cat "$TMP/plain.png.n")" -lt "$(cat "$TMP/lake.png.n")"
kill "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null
# ---- decode on a bundle (the batch endpoint's answer) ----
# the rectangle -1..1 x 2..3 at LOD 3 fetched as one bundle with curl:
# decode lists exactly its six chunks, each member decodes with --tile as
# the same chunk fetched alone, and a cut bundle is refused.
curl -s -o "$TMP/b.bin" -w '%{content_type}' \
	"$BASE/v1/worlds/42/chunks/3?cx0=-1&cz0=2&cx1=1&cz1=3" >"$TMP/b.ct"
check "the batch answer is a bundle" eq "$(cat "$TMP/b.ct")" \
	application/vnd.terrain.bundle
check "decode on a bundle exits 0" to "$TMP/b.list" "$TMP/b.err" \
	"$CLIENT" decode "$TMP/b.bin"
cat "$TMP/b.list" "$TMP/b.err"
check "decode on a bundle counts 6 tiles" has "$TMP/b.list" '^bundle: 6 tiles'
awk 'NR > 2 { print $1 "," $2 }' "$TMP/b.list" | sort >"$TMP/b.got"
for cz in 2 3; do for cx in -1 0 1; do echo "$cx,$cz"; done; done |
	sort >"$TMP/b.want"
check "the list is the requested rectangle" cmp -s "$TMP/b.got" "$TMP/b.want"
check "every member at lod 3, side 33, checksum ok" test "$(awk \
	'NR > 2 && $3 == 3 && $4 == 33 && $8 == "yes"' "$TMP/b.list" | wc -l)" = 6
for cxz in -1,2 1,3; do
	curl -s -o "$TMP/one.tile" "$BASE/v1/worlds/42/chunks/3/${cxz%,*}/${cxz#*,}"
	"$CLIENT" decode "$TMP/one.tile" >"$TMP/one.hdr"
	"$CLIENT" decode --tile "$cxz" "$TMP/b.bin" >"$TMP/mem.hdr"
	check "--tile $cxz: header equals the single tile's" \
		cmp -s "$TMP/one.hdr" "$TMP/mem.hdr"
	"$CLIENT" decode --heights "$TMP/one.tile" >"$TMP/one.h"
	"$CLIENT" decode --heights --tile "$cxz" "$TMP/b.bin" >"$TMP/mem.h"
	check "--tile $cxz --heights: equals the single tile's" \
		cmp -s "$TMP/one.h" "$TMP/mem.h"
done
check "checksum column equals the single tile's" has "$TMP/b.list" \
	"^1 3 3 33 [0-9]+ 0 $(sed -n 's/^checksum: //p' "$TMP/one.hdr") yes$"
check "--tile of a chunk not in the bundle fails" not "$CLIENT" decode \
	--tile 5,5 "$TMP/b.bin" 2>"$TMP/b5.err"
check "... and says so" has "$TMP/b5.err" 'bundle has no tile 5,5'
size=$(stat -c %s "$TMP/b.bin")
for cut in 10 100 $((size - 1)); do
	head -c "$cut" "$TMP/b.bin" >"$TMP/cut.bin"
	"$CLIENT" decode "$TMP/cut.bin" >/dev/null 2>"$TMP/cut.err"
	check "a bundle cut to $cut bytes is refused (exit 1)" eq "$?" 1
	check "... with a message, no crash" has "$TMP/cut.err" \
		'^terrain-client: .*bundle: (truncated|corrupt)'
done
# a member's byte flipped: listed with its error, exit 1
cp "$TMP/b.bin" "$TMP/flip.bin"
printf '\377' | dd of="$TMP/flip.bin" bs=1 seek=$((size - 5)) conv=notrunc \
	2>/dev/null
"$CLIENT" decode "$TMP/flip.bin" >"$TMP/flip.list" 2>&1
check "a corrupt member is refused (exit 1)" eq "$?" 1
check "... and named in the list" has "$TMP/flip.list" '^1 3 - - .*checksum'
check "... the others still listed ok" test "$(grep -c ' yes$' \
	"$TMP/flip.list")" = 5

server_stop
finish
