#!/bin/bash
# client_cli.sh - integration test of terrain-client's tile tools (decode,
# decode --heights, png) on a tile made by `terrain-server generate`.
# Builds nothing: uses the binaries in $BUILD (default build). Prints SKIP
# and exits 0 while terrain-server has no generate command yet.
# TILE=path uses that 257 x 257, 1 cm tile instead of generating one.
set -eu
BUILD=${BUILD:-build}
CLIENT=$BUILD/terrain-client
SERVER=$BUILD/terrain-server

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

ok() {
	echo "ok: $*"
}

[ -x "$CLIENT" ] || { echo "FAIL: $CLIENT not built" >&2; exit 1; }

tile=$tmp/t.tile
if [ -n "${TILE:-}" ]; then
	cp "$TILE" "$tile"
elif [ ! -x "$SERVER" ]; then
	echo "SKIP: $SERVER not built, no tile to test with"
	exit 0
elif ! "$SERVER" generate --seed 42 --lod 0 --cx 0 --cz 0 -o "$tile" \
		2>"$tmp/gen.err"; then
	if ! "$SERVER" --help 2>&1 | grep -qw generate; then
		echo "SKIP: $SERVER has no generate command yet"
		exit 0
	fi
	echo "FAIL: $SERVER generate failed:" >&2
	cat "$tmp/gen.err" >&2
	exit 1
fi

# decode: the header as key: value lines
if "$CLIENT" decode "$tile" >"$tmp/hdr"; then
	grep -qx 'side: 257' "$tmp/hdr" && ok "decode prints side: 257" ||
		fail "decode: no 'side: 257' line"
	grep -qx 'magic: TRRN' "$tmp/hdr" && grep -qx "version: 7" "$tmp/hdr" &&
		grep -qE '^checksum: [0-9a-f]{16}$' "$tmp/hdr" &&
		grep -qE '^fingerprint: [0-9a-f]{16}$' "$tmp/hdr" &&
		ok "decode prints magic, version, fingerprint, checksum" ||
		fail "decode: header lines malformed: $(tr '\n' ' ' <"$tmp/hdr")"
else
	fail "decode exited $?"
fi

# decode --heights: 257 rows of 257 numbers with the quantum's decimals
if "$CLIENT" decode --heights "$tile" >"$tmp/h"; then
	awk 'NF != 257 { bad++ } END { exit (bad || NR != 257) }' "$tmp/h" &&
		ok "--heights prints 257 lines of 257 numbers" ||
		fail "--heights: not 257 x 257 ($(wc -l <"$tmp/h") lines)"
	if grep -qx 'quantum_m: 0.01' "$tmp/hdr"; then
		tr ' ' '\n' <"$tmp/h" | grep -vqxE -- '-?[0-9]+\.[0-9]{2}' &&
			fail "--heights: a value without exactly 2 decimals" ||
			ok "--heights prints exact centimetres"
	fi
	min=$(tr ' ' '\n' <"$tmp/h" | sort -g | head -n 1)
	grep -qx "min_height_m: $min" "$tmp/hdr" &&
		ok "decode's min_height_m matches the heights" ||
		fail "min_height_m differs from the smallest height $min"
else
	fail "decode --heights exited $?"
fi

# FILE - reads standard input
"$CLIENT" decode - <"$tile" | cmp -s - "$tmp/hdr" &&
	ok "decode - reads standard input" || fail "decode - differs from decode FILE"

# png: a valid PNG, 257 pixels wide
if "$CLIENT" png "$tile" -o "$tmp/t.png"; then
	sig=$(od -An -tx1 -N8 "$tmp/t.png" | tr -d ' \n')
	ihdr=$(od -An -tx1 -j12 -N8 "$tmp/t.png" | tr -d ' \n')
	[ "$sig" = 89504e470d0a1a0a ] && ok "png writes the PNG signature" ||
		fail "png: bad signature $sig"
	[ "$ihdr" = 4948445200000101 ] && ok "png's IHDR is 257 pixels wide" ||
		fail "png: IHDR/width bytes $ihdr"
else
	fail "png exited $?"
fi

# a truncated tile: non-zero exit, one line naming the file and the error
head -c 1000 "$tile" >"$tmp/short.tile"
if "$CLIENT" decode "$tmp/short.tile" >/dev/null 2>"$tmp/err"; then
	fail "decode accepted a truncated tile"
else
	grep -q "short.tile: truncated input" "$tmp/err" &&
		[ "$(wc -l <"$tmp/err")" = 1 ] &&
		ok "truncated tile: exit non-zero, $(cat "$tmp/err")" ||
		fail "truncated tile: message was: $(cat "$tmp/err")"
fi
"$CLIENT" png "$tmp/short.tile" -o "$tmp/short.png" 2>/dev/null &&
	fail "png accepted a truncated tile" || ok "png rejects a truncated tile"

# a flipped payload byte: checksum mismatch
cp "$tile" "$tmp/bad.tile"
printf '\377' | dd of="$tmp/bad.tile" bs=1 seek=5000 conv=notrunc 2>/dev/null
"$CLIENT" decode "$tmp/bad.tile" >/dev/null 2>"$tmp/err" &&
	fail "decode accepted a corrupt tile" ||
	{ grep -q "bad.tile: checksum mismatch" "$tmp/err" &&
		ok "corrupt tile: checksum mismatch" ||
		fail "corrupt tile: message was: $(cat "$tmp/err")"; }

# usage errors exit 2; --help exits 0
set +e
"$CLIENT" frobnicate 2>/dev/null; rc=$?
[ $rc = 2 ] && ok "unknown command exits 2" || fail "unknown command exited $rc"
"$CLIENT" --help | grep -q 'decode' && ok "--help lists decode" ||
	fail "--help does not list decode"
set -e

[ $fails = 0 ] && echo "client_cli: all passed" || echo "client_cli: $fails failed"
[ $fails = 0 ]
