#!/usr/bin/env bash
# bench/wasm.sh BUILD_DIR - make bench, section 16: the core as WebAssembly
# (issue 29). In Node.js, on the 16 LOD-0 `default` tiles of bench_chunk()
# (seed 42): ms per tile of decodeTile() by the JavaScript decoder and by
# terrain.wasm, on their version-7 encodings (what the server sends) and
# their version-5 ones (?format=5), and of generating the same chunks' heights through
# terrain.wasm; beside the native anchors of the same run
# (bench/wasm_native.c, built by the Makefile): generation and
# tile_decode() with the build's libcommon.a (BUILD_DIR/bench/wasm_native:
# SIMD clones, as loaded) and with common/ compiled with -DTERRAIN_NO_CLONES
# (BUILD_DIR/bench/wasm_native_scalar: the baseline x86-64 code, "native
# scalar"). Writes
# BUILD_DIR/bench/wasm.tsv (the summary reads it). Figures are printed,
# never asserted. About 30 s (the first run builds terrain.wasm).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: bench/wasm.sh BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$build/bench"
dir="$out/wasm"
mkdir -p "$dir"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
cd "$root"

echo "## 16. WebAssembly: the core in Node.js (issue 29)"
echo
say "section 16: make wasm, native anchors"
if ! bench_make "$build" "$build/terrain.wasm" 2>"$dir/make.log"; then
	echo "make wasm failed (scripts/deps.sh wasm; $dir/make.log): skipped"
	exit 0
fi
command -v node >/dev/null || { echo "no Node.js: skipped"; exit 0; }
bench_make "$build" bench/wasm_native bench/wasm_native_scalar
native_clones="$out/wasm_native" native_scalar="$out/wasm_native_scalar"
"$native_clones" --chunks >"$dir/chunks.txt"
# The anchor of issue 29's decoding target: the JavaScript module of the
# commit the issue was filed on (its decoder, about 4.5 ms a tile then), on
# the version-3 tiles it decoded; without git, that row says "-".
BEFORE_JS=${BEFORE_JS:-5cd773bc4663f636648877f5f0990c44b7776d8d}
git -C "$root" show "$BEFORE_JS:clients/js/terrain.js" >"$dir/terrain-before.mjs" 2>/dev/null ||
	rm -f "$dir/terrain-before.mjs"
pin=()
if command -v taskset >/dev/null && taskset -c "${BENCH_CPU-1}" true 2>/dev/null; then
	pin=(taskset -c "${BENCH_CPU-1}")
fi
say "section 16: timing (native clones, native scalar, Node.js)"
"${pin[@]}" "$native_clones" --tiles "$dir" | tail -n 1 >"$dir/clones.tsv"
"${pin[@]}" "$native_scalar" | tail -n 1 >"$dir/scalar.tsv"
"${pin[@]}" node bench/wasm_bench.mjs "$build/terrain.wasm" "$dir" | tail -n 1 >"$dir/node.tsv"
read -r gen_c dec_c <"$dir/clones.tsv"
read -r gen_s dec_s <"$dir/scalar.tsv"
read -r js_dec w_dec w_gen node_v old_dec js5_dec w5_dec <"$dir/node.tsv"
awk -v gc="$gen_c" -v dc="$dec_c" -v gs="$gen_s" -v ds="$dec_s" -v jd="$js_dec" -v wd="$w_dec" \
	-v wg="$w_gen" -v nv="$node_v" -v od="${old_dec:--}" -v bj="${BEFORE_JS:0:7}" \
	-v jd5="$js5_dec" -v wd5="$w5_dec" 'BEGIN {
	print "LOD-0 default tile, ms\tnative, SIMD clones\tnative scalar\tterrain.wasm in Node.js\tJavaScript decoder\twasm / scalar\tJS / wasm"
	printf "generate heights\t%.3f\t%.3f\t%.3f\t\t%.2fx\t\n", gc, gs, wg, wg / gs
	printf "decode (tile_decode, decodeTile)\t%.3f\t%.3f\t%.3f\t%.3f\t%.2fx\t%.2fx\n", dc, ds, wd, jd, wd / ds, jd / wd
	printf "decode, version 5 (?format=5)\t\t\t%.3f\t%.3f\t\t%.2fx\n", wd5, jd5, jd5 / wd5
	if (od == "-")
		printf "decode, version 3, JavaScript decoder before issue 30\t\t\t%.3f\t-\t\t\n", wd
	else
		printf "decode, version 3, JavaScript decoder before issue 30\t\t\t%.3f\t%.3f\t\t%.2fx\n", wd, od, od / wd
	print "note: decode: the version-7 tiles (tANS), what the server sends; Node.js " nv "; terrain.wasm: clang 14 -O3 -msimd128 for wasm32-wasi (make wasm), decodeTile()" \
	      " through it (the reference decoder, checksum included) and World.tile(..., { encode: false })," \
	      " copies in and out of its memory included; CPU time, medians of 7 interleaved batches"
	print "note: native scalar: common/ with -DTERRAIN_NO_CLONES (baseline x86-64, SSE2); the SIMD" \
	      " clones: the build as loaded (AVX-512 where the CPU has it)"
	print "note: the decoder before issue 30: clients/js/terrain.js of " bj \
	      " (the tree issue 29 was filed on), on the same chunks encoded as version 3, as servers sent them then" \
	      " (terrain.wasm decodes version 7)"
	print "note: targets (issue 29): wasm decode >= 5x the JavaScript decoder (JS / wasm);" \
	      " wasm generation <= 3x native scalar (wasm / scalar); versions 7 and 8 (tANS): the" \
	      " JavaScript decoder within 2x of terrain.wasm (JS / wasm <= 2x, the decode row)"
}' | tee "$out/wasm.tsv"
