#!/bin/bash
# godot_export.sh - terrain-client export read by Godot, the way a Godot 3
# game would (tests/client/godot/read_export.gd), with Debian's headless Godot
# (godot3-server, 3.2): the .r16 with File.get_16() through the sidecar's
# offset and unit equals `terrain-client decode --heights` of the same
# tiles (fetched alone with curl) at every sample, exactly when the sidecar
# says "exact", else within its max_rounding_error_m; the 16-bit PNG, which
# Godot 3's Image.load reads as 8-bit, gives at every sample the 8-bit value
# of the 16-bit one (within one step: 65535/255 units), with no gamma
# conversion (a gAMA chunk made 380.47 m read as 565.11 m). Two exports:
# 2 x 2 chunks at LOD 2 (exact) and 6 x 6 at LOD 3 (over 655 m of relief:
# a unit of several quanta). SKIP (exit 0) without godot3-server when it
# cannot be installed.
. "$(dirname "$0")/../lib/lib.sh"

CLIENT=$BUILD/terrain-client
GODOT=godot3-server
SCRIPT=$(cd "$(dirname "$0")" && pwd)/godot/read_export.gd

if ! command -v $GODOT >/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q godot3-server \
			>"$TMP/apt.log" 2>&1 || true
	fi
	command -v $GODOT >/dev/null || { echo "SKIP: godot3-server is not installed and cannot be"; exit 0; }
fi
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 0; }
echo "Godot: $($GODOT --version 2>/dev/null | tail -n 1)"
server_start

# compare NAME: Godot's reading of $TMP/NAME.* against the decoded tiles
cat >"$TMP/compare.py" <<'PY'
import json, sys
tmp, name, seed, lod, cx0, cz0, cx1, cz1 = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:9])
side = json.load(open(f"{tmp}/{name}.json"))
tiles = {}
for cz in range(cz0, cz1 + 1):
    for cx in range(cx0, cx1 + 1):
        tiles[cx, cz] = [[float(v) for v in l.split()] for l in open(f"{tmp}/{name}.h.{cx}.{cz}")]
n = len(tiles[cx0, cz0]) - 1
W, H = (cx1 - cx0 + 1) * n + 1, (cz1 - cz0 + 1) * n + 1
ref = [[None] * W for _ in range(H)]
for (cx, cz), t in tiles.items():
    for j, row in enumerate(t):
        for i, v in enumerate(row):
            ref[(cz - cz0) * n + j][(cx - cx0) * n + i] = v
lines = open(f"{tmp}/{name}.godot").read().split("\n")
w, h, fmt = map(int, lines[0].split())
assert (w, h) == (W, H) == (side["width"], side["height"]), f"size {w} x {h}, want {W} x {H}"
unit, err = side["metres_per_unit"], side["max_rounding_error_m"]
worst16 = worst8 = 0.0
bad16 = bad8 = 0
for k, l in enumerate(lines[1:1 + W * H]):
    v, h16, red, h8 = l.split()
    want = ref[k // W][k % W]
    d16 = abs(float(h16) - want)
    # Godot's 8-bit red of the 16-bit value: red * 255 against v / 257
    d8 = abs(float(red) * 255 - int(v) / 257)
    worst16, worst8 = max(worst16, d16), max(worst8, abs(float(h8) - want))
    bad16 += d16 > err + 0.005     # 1 cm quanta printed as decimals
    bad8 += d8 > 1.0001
print(f"  {name}: {W} x {H}, unit {unit} m ({'exact' if side['exact'] else 'rounded'}), Godot image format {fmt}; "
      f".r16 off by {worst16:.4f} m at most, the 8-bit PNG by {worst8:.2f} m (one step is {65535 / 255 * unit:.2f} m)")
print(f"  {name}: .r16 samples off by more than {err} m: {bad16}; PNG samples not the 8-bit value: {bad8}")
sys.exit(1 if bad16 or bad8 else 0)
PY

# export_and_read NAME SEED LOD CX0 CZ0 CX1 CZ1
export_and_read() {
	local name=$1 seed=$2 lod=$3 cx0=$4 cz0=$5 cx1=$6 cz1=$7 cx cz
	check "$name: export exits 0" timeout -k 5 120 "$CLIENT" export --server "$BASE" --seed "$seed" \
		--lod "$lod" --cx0 "$cx0" --cz0 "$cz0" --cx1 "$cx1" --cz1 "$cz1" -o "$TMP/$name" --quiet
	for cz in $(seq "$cz0" "$cz1"); do for cx in $(seq "$cx0" "$cx1"); do
		curl -s -o "$TMP/$name.t.$cx.$cz" "$BASE/v1/worlds/$seed/chunks/$lod/$cx/$cz"
		"$CLIENT" decode --heights "$TMP/$name.t.$cx.$cz" >"$TMP/$name.h.$cx.$cz" ||
			echo "FAIL: decode --heights of tile $cx,$cz"
	done; done
	# in $TMP: Godot writes logs/ into the folder it runs in (its project)
	(cd "$TMP" && EXPORT_BASE=$TMP/$name GODOT_OUT=$TMP/$name.godot timeout -k 5 120 $GODOT -s "$SCRIPT" \
		>"$TMP/$name.godot.log" 2>&1)
	check "$name: Godot ran the script (exit 0)" eq "$?" 0 || grep -v locale "$TMP/$name.godot.log"
	check "$name: Godot's .r16 heights equal the decoded tiles', and its PNG the 8-bit values" \
		python3 "$TMP/compare.py" "$TMP" "$name" "$seed" "$lod" "$cx0" "$cz0" "$cx1" "$cz1"
}

export_and_read small 42 2 0 0 1 1
check "small: the sidecar says exact" grep -q '"exact": true' "$TMP/small.json"
export_and_read tall 42 3 -3 -3 2 2
check "tall: the sidecar says rounded (a unit of several quanta)" grep -q '"exact": false' "$TMP/tall.json"
finish
