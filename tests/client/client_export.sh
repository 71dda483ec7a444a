#!/bin/bash
# client_export.sh - terrain-client export against the real server, read
# back by readers nobody here wrote: GDAL (gdal-bin: gdalinfo -stats,
# gdallocationinfo, gdaldem hillshade) on the GeoTIFF and the 16-bit PNG,
# od on the .r16, and python3's zlib on the PNG. Every height must equal
# the one `terrain-client decode --heights` prints for the same tiles
# (fetched separately with curl), through the sidecar's offset and scale.
# A world whose relief exceeds 65535 quanta gets the smallest unit that
# fits, rounded within the stated error. SKIP (exit 0) when gdal-bin is
# missing and cannot be installed.
. "$(dirname "$0")/../lib/lib.sh"

CLIENT=$BUILD/terrain-client
T="timeout -k 5 120"
to() { local o=$1 e=$2; shift 2; "$@" >"$o" 2>"$e"; }

if ! command -v gdalinfo >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q gdal-bin \
			>"$TMP/apt.log" 2>&1 || true
	fi
	if ! command -v gdalinfo >/dev/null; then
		echo "SKIP: gdal-bin is not installed and cannot be (not root, or apt-get failed)"
		exit 0
	fi
fi
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 0; }

server_start
SEED=exportworld
LOD=2
CX0=-1 CZ0=3 CX1=0 CZ1=4

# ---- the export ----
check "export exits 0" to "$TMP/ex.out" "$TMP/ex.err" $T "$CLIENT" export \
	--server "$BASE" --seed $SEED --lod $LOD --cx0 $CX0 --cz0 $CZ0 \
	--cx1 $CX1 --cz1 $CZ1 -o "$TMP/w"
cat "$TMP/ex.out" "$TMP/ex.err"
for f in png r16 json tif; do
	check "export wrote w.$f" test -s "$TMP/w.$f"
done

# ---- the reference: each tile fetched alone and decoded ----
for cz in $(seq $CZ0 $CZ1); do for cx in $(seq $CX0 $CX1); do
	curl -s -o "$TMP/t.$cx.$cz" "$BASE/v1/worlds/$SEED/chunks/$LOD/$cx/$cz"
	"$CLIENT" decode --heights "$TMP/t.$cx.$cz" >"$TMP/h.$cx.$cz" ||
		echo "FAIL: decode --heights of tile $cx,$cz"
done; done

# ref.py: stitch the decoded tiles into the expected mosaic (heights as
# exact decimal strings, compared as integer centimetres... of the
# quantum: here 1 cm) and answer questions about it.
cat >"$TMP/ref.py" <<'PY'
import json, os, struct, sys, zlib
tmp, cx0, cz0, cx1, cz1 = sys.argv[1], *map(int, sys.argv[2:6])
def q(s):  # "123.45" -> 12345 (1 cm quantum: two decimals)
    neg = s.startswith("-"); s = s.lstrip("-")
    w, _, f = s.partition("."); v = int(w) * 100 + int((f + "00")[:2])
    return -v if neg else v
tiles = {}
for cz in range(cz0, cz1 + 1):
    for cx in range(cx0, cx1 + 1):
        tiles[cx, cz] = [[q(v) for v in line.split()]
                         for line in open(f"{tmp}/h.{cx}.{cz}")]
side = len(tiles[cx0, cz0]); step = side - 1
W, H = (cx1 - cx0 + 1) * step + 1, (cz1 - cz0 + 1) * step + 1
ref = [[None] * W for _ in range(H)]
for (cx, cz), t in tiles.items():
    for j in range(side):
        for i in range(side):
            r, c = (cz - cz0) * step + j, (cx - cx0) * step + i
            assert ref[r][c] in (None, t[j][i]), "seam mismatch in the tiles"
            ref[r][c] = t[j][i]
flat = [v for row in ref for v in row]
side_js = json.load(open(f"{tmp}/w.json"))
def cm(m):  # sidecar metres (exact decimals) -> quanta
    return q(repr(m) if isinstance(m, float) else str(m))
off, scale = cm(side_js["offset_m"]), cm(side_js["metres_per_unit"])
cmd = sys.argv[6]
if cmd == "size":
    print(W, H)
elif cmd == "minmax":
    print("%.2f %.2f" % (min(flat) / 100, max(flat) / 100))
elif cmd == "at":  # c r -> metres
    c, r = int(sys.argv[7]), int(sys.argv[8]); print("%.2f" % (ref[r][c] / 100))
elif cmd == "r16":  # the whole .r16 through the sidecar equals ref
    raw = open(f"{tmp}/w.r16", "rb").read()
    assert len(raw) == 2 * W * H, "r16 size %d" % len(raw)
    vals = struct.unpack("<%dH" % (W * H), raw)
    bad = sum(off + v * scale != h for v, h in zip(vals, flat))
    print(bad)
elif cmd == "png":  # the whole PNG (zlib only) through the sidecar
    data = open(f"{tmp}/w.png", "rb").read(); pos, idat = 8, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8]); body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
            assert (w, h, depth, ctype, lace) == (W, H, 16, 0, 0), "not 16-bit grey WxH"
        elif kind == b"IDAT":
            idat.append(body)
        # no colour space: readers that honour one change the values
        assert kind not in (b"gAMA", b"sRGB", b"cHRM", b"iCCP"), "a %s chunk" % kind.decode()
        pos += 12 + n
    raw, stride, bpp = zlib.decompress(b"".join(idat)), 2 * W, 2
    prev, vals = bytearray(stride), []
    for r in range(H):
        f = raw[r * (stride + 1)]; line = bytearray(raw[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0; b = prev[i]; c = prev[i - bpp] if i >= bpp else 0
            if f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
            else:
                pr = (0, a, b, (a + b) // 2)[f] if f < 4 else 0
            line[i] = (line[i] + pr) & 255
        vals += struct.unpack(">%dH" % W, bytes(line)); prev = line
    print(sum(off + v * scale != h for v, h in zip(vals, flat)))
elif cmd == "value":  # metres of 16-bit value v
    print("%.2f" % ((off + int(sys.argv[7]) * scale) / 100))
PY
ref() { python3 "$TMP/ref.py" "$TMP" $CX0 $CZ0 $CX1 $CZ1 "$@"; }

size=$(ref size)
check "mosaic is 2 * 256 / 2^$LOD + 1 samples a side (got $size)" eq "$size" "129 129"
check "sidecar: exact import at the 1 cm quantum" \
	python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (j['exact'] and j['metres_per_unit']==0.01 and j['sample_spacing_m']==4 and j['width']==129 and j['world_rect_m']=={'x0':-256,'z0':768,'x1':256,'z1':1280} and j['seed']=='exportworld' and j['lod']==2))" "$TMP/w.json"

# ---- GeoTIFF: gdalinfo -stats ----
gdalinfo -stats -json "$TMP/w.tif" >"$TMP/gi.json" 2>"$TMP/gi.err"
check "gdalinfo reads the GeoTIFF" test -s "$TMP/gi.json"
read -r gsize gtype gmin gmax gpoint <<<"$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); b = j["bands"][0]
print("%d,%d" % tuple(j["size"]), b["type"], "%.2f" % b["minimum"], "%.2f" % b["maximum"],
      j["metadata"][""].get("AREA_OR_POINT"))' "$TMP/gi.json")"
check "gdalinfo: size 129 x 129" eq "$gsize" "129,129"
check "gdalinfo: Float32" eq "$gtype" Float32
check "gdalinfo: min and max equal the decoded tiles' ($(ref minmax))" \
	eq "$gmin $gmax" "$(ref minmax)"
check "gdalinfo: pixel is point" eq "$gpoint" Point
check "gdalinfo: a local CRS in metres" has "$TMP/gi.json" 'metre'

# ---- gdallocationinfo: pixels, and world positions (X = x, Y = -z) ----
for pt in "0 0" "128 128" "5 7" "64 64" "127 3" "0 128" "100 17"; do
	set -- $pt
	got=$(gdallocationinfo -valonly "$TMP/w.tif" "$1" "$2")
	check "gdallocationinfo pixel ($1, $2) = decoded height" \
		eq "$(printf '%.2f' "$got")" "$(ref at "$1" "$2")"
	x=$(( CX0 * 256 + $1 * 4 )) z=$(( CZ0 * 256 + $2 * 4 ))
	got=$(gdallocationinfo -valonly -geoloc "$TMP/w.tif" "$x" "$(( -z ))")
	check "gdallocationinfo world ($x, z $z) = decoded height" \
		eq "$(printf '%.2f' "$got")" "$(ref at "$1" "$2")"
	v=$(gdallocationinfo -valonly "$TMP/w.png" "$1" "$2")
	check "PNG by GDAL at ($1, $2) via the sidecar = decoded height" \
		eq "$(ref value "$v")" "$(ref at "$1" "$2")"
	v=$(od -An -tu2 --endian=little -j $(( 2 * ($2 * 129 + $1) )) -N2 "$TMP/w.r16" | tr -d ' ')
	check "r16 by od at ($1, $2) via the sidecar = decoded height" \
		eq "$(ref value "$v")" "$(ref at "$1" "$2")"
done
check "every r16 value via the sidecar equals the decoded mosaic" eq "$(ref r16)" 0
check "every PNG value (python3 zlib) via the sidecar equals the mosaic" eq "$(ref png)" 0

# ---- gdaldem hillshade ----
check "gdaldem hillshade runs over the GeoTIFF" to "$TMP/hs.out" "$TMP/hs.err" \
	gdaldem hillshade "$TMP/w.tif" "$TMP/hs.tif"
check "gdaldem wrote a 129 x 129 hillshade" has <(gdalinfo "$TMP/hs.tif" 2>&1) \
	'^Size is 129, 129'

# ---- a range over 65535 quanta: the unit grows, values are rounded ----
# alpine, 8 x 8 chunks at LOD 4: more than 655 m of relief. The unit must
# be the smallest multiple k of 1 cm that fits, the sidecar must say the
# import is not exact, and every .r16 value must land within
# max_rounding_error_m of the GeoTIFF's height (exact to the cm, above).
check "alpine export exits 0" to "$TMP/al.out" "$TMP/al.err" $T "$CLIENT" \
	export --server "$BASE" --seed 7 --gen alpine --lod 4 --cx0 -4 --cz0 -4 \
	--cx1 3 --cz1 3 -o "$TMP/al"
cat "$TMP/al.out" "$TMP/al.err"
gdal_translate -q -of AAIGrid "$TMP/al.tif" "$TMP/al.asc" 2>/dev/null
check "alpine: rounded to the smallest unit that fits, within the stated error" \
	python3 - "$TMP/al" <<'PY'
import json, math, struct, sys
base = sys.argv[1]
j = json.load(open(base + ".json"))
lines = open(base + ".asc").read().split("\n")
hdr = {l.split()[0].lower(): l.split()[1] for l in lines[:6] if l and l.split()[0].isalpha()}
vals = [float(v) for l in lines[len(hdr):] for v in l.split()]
W, H = j["width"], j["height"]
raw = struct.unpack("<%dH" % (W * H), open(base + ".r16", "rb").read())
cm = [round(v * 100) for v in vals]
rng = max(cm) - min(cm)
k = round(j["metres_per_unit"] * 100)
assert not j["exact"], "sidecar says exact"
assert rng > 65535 and k == math.ceil(rng / 65535), (rng, k)
assert round(j["offset_m"] * 100) == min(cm)
err = round(j["max_rounding_error_m"] * 100)
assert err == k // 2, (err, k)
worst = max(abs(min(cm) + v * k - h) for v, h in zip(raw, cm))
assert worst <= err, (worst, err)
assert max(raw) == j["value_max"] <= 65535
print("  range %d cm, unit %d cm, worst %d cm" % (rng, k, worst))
PY

# ---- errors ----
check "export with cx1 < cx0 fails" not "$CLIENT" export --server "$BASE" \
	--seed 1 --cx0 2 --cz0 0 --cx1 1 --cz1 0 -o "$TMP/bad" 2>/dev/null
check "export with a LOD above max_lod fails" not "$CLIENT" export \
	--server "$BASE" --seed 1 --lod 12 --cx0 0 --cz0 0 --cx1 0 --cz1 0 \
	-o "$TMP/bad" 2>/dev/null
server_stop
check "export to a server that is down fails with a message" not to \
	"$TMP/down.out" "$TMP/down.err" "$CLIENT" export --server "$BASE" \
	--seed 1 --cx0 0 --cz0 0 --cx1 0 --cz1 0 -o "$TMP/bad"
check "... saying it cannot reach the server" has "$TMP/down.err" 'cannot reach'
finish
