#!/bin/bash
# cross-compiler.sh DIR_A DIR_B - generate the same tiles with two builds
# (for example gcc in build/ and clang in build-clang/) and fail on any
# byte difference. Determinism across compilers is a promise of the format.
set -euo pipefail
A=${1:?usage: cross-compiler.sh DIR_A DIR_B}
B=${2:?usage: cross-compiler.sh DIR_A DIR_B}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

n=0
for f in presets/*.json; do
	gen=$(basename "$f" .json)
	for seed in 0 42 18446744073709551615 my-world; do
		for spec in "0 0 0" "3 -1 -1" "8 5 -7" "1 2147483647 -2147483648" "5 -123456 654321"; do
			set -- $spec
			args=(generate --gen "$gen" --seed "$seed" --lod "$1" --cx "$2" --cz "$3")
			"$A/terrain-server" "${args[@]}" -o "$tmp/a"
			"$B/terrain-server" "${args[@]}" -o "$tmp/b"
			if ! cmp -s "$tmp/a" "$tmp/b"; then
				echo "cross-compiler: $A and $B differ for ${args[*]}" >&2
				exit 1
			fi
			n=$((n + 1))
		done
	done
done
echo "cross-compiler: $n tiles identical between $A and $B"
