#!/bin/bash
# arm64.sh NATIVE_DIR ARM64_DIR - the same world on arm64: tiles of the
# cross-built ARM64_DIR/terrain-server (aarch64-linux-gnu-gcc, run under
# qemu-user) against NATIVE_DIR's, byte for byte: every preset, four seeds,
# LODs 0 to 6 with the int32 corners among the chunks, heights alone and
# with the material layer. Then the start-up self-check under qemu: it
# passes on the arm64 build, and fails on one built past the Makefile's
# guard with -ffp-contract=fast (gcc fuses multiply-adds on arm64).
# ARM64_TILES=0 skips the tiles, ARM64_UNSAFE=0 the second build.
# `make test-arm64` installs the packages, builds both and runs this (not
# executable, so tests/run.sh leaves it out of `make test`: about 5 min).
set -euo pipefail
A=${1:?usage: arm64.sh NATIVE_DIR ARM64_DIR}
B=${2:?usage: arm64.sh NATIVE_DIR ARM64_DIR}
QEMU=${QEMU:-qemu-aarch64}
SYSROOT=${SYSROOT:-/usr/aarch64-linux-gnu}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
arm() { QEMU_LD_PREFIX=$SYSROOT "$QEMU" "$@"; }

file -L "$B/terrain-server" | grep -q aarch64 || { echo "arm64: $B/terrain-server is not arm64" >&2; exit 1; }
start=$SECONDS n=0
[ "${ARM64_TILES:-1}" = 1 ] || presets_glob=none
specs=("0 0 0" "1 2147483647 -2147483648" "2 -1 -1" "3 -2147483648 2147483647"
	"4 5 -7" "5 2147483647 2147483647" "6 -123456 654321")
for f in ${presets_glob:-presets/*.json}; do
	[ -f "$f" ] || continue
	gen=$(basename "$f" .json)
	for seed in 0 42 18446744073709551615 my-world; do
		for spec in "${specs[@]}"; do
			set -- $spec
			for layers in height height,material; do
				args=(generate --gen "$gen" --seed "$seed" --lod "$1" --cx "$2" --cz "$3"
					--layers "$layers")
				"$A/terrain-server" "${args[@]}" -o "$tmp/a"
				arm "$B/terrain-server" "${args[@]}" -o "$tmp/b"
				if ! cmp -s "$tmp/a" "$tmp/b"; then
					echo "arm64: $A and $B (qemu) differ for ${args[*]}" >&2
					exit 1
				fi
				n=$((n + 1))
			done
		done
	done
done
echo "arm64: $n tiles identical between $A and $B under $QEMU ($((SECONDS - start)) s)"

# The start-up self-check under qemu (its cmocka test: `serve` itself hangs
# in qemu-user 7.2 before listening, so the check is run without it): it
# passes on this arm64 build...
arm "$B/tests/test_selfcheck" >"$tmp/check.log" 2>&1 ||
	{ echo "arm64: the self-check fails on $B:" >&2; cat "$tmp/check.log" >&2; exit 1; }
echo "arm64: the self-check passes under qemu ($(grep -o 'selfcheck_run: .* ms' "$tmp/check.log"))"

# ... and fails on one built with contraction forced past the Makefile's guard.
if [ "${ARM64_UNSAFE:-1}" = 1 ]; then
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" --no-print-directory -j2 \
		CC=aarch64-linux-gnu-gcc BUILD="$tmp/unsafe" WORLD_FLAGS_UNSAFE=1 \
		CFLAGS=-ffp-contract=fast "$tmp/unsafe/tests/test_selfcheck" >"$tmp/build.log" 2>&1 ||
		{ tail -n 20 "$tmp/build.log" >&2; exit 1; }
	if arm "$tmp/unsafe/tests/test_selfcheck" >"$tmp/check.log" 2>&1 ||
		! grep -q "that change the world" "$tmp/check.log"; then
		echo "arm64: the self-check passed a -ffp-contract=fast build:" >&2
		cat "$tmp/check.log" >&2
		exit 1
	fi
	echo "arm64: the self-check rejects the -ffp-contract=fast build:"
	grep -o "self-check: .*" "$tmp/check.log" | head -n 1
fi
