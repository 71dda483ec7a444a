#!/usr/bin/env bash
# bench/run.sh BUILD_DIR - benchmarks of the terrain core (`make bench`).
#
# Has make build the bench programs of this folder into BUILD_DIR/bench/
# (`make -k BUILD=BUILD_DIR OPT=-O3 bench-programs`), runs them single-threaded (pinned to one CPU with
# taskset when it can), and prints one markdown table per section, with the
# anchors measured in the same run:
#   1. noise     ns/sample of a 6-octave fBm per noise kind; stb_perlin, libnoise,
#                FastNoise2 (at the best SIMD level this CPU runs, named in its row, and
#                at AVX2), FastNoiseLite: every row in one process, interleaved
#   2. presets   ms per tile: generate, + encode, + zstd (zparams.h); LOD 0, 2, 4
#   3. size      bytes per LOD-0 tile of every preset: encoded, zstd 1/19, the v1 format,
#                16-bit PNG, LERC lossless at the tile's 1 cm quantum; then the shared
#                anchor harness ../shared/bench/compress (PNG16, Terrain-RGB, LERC on its
#                own terrain), HARNESS_ROUNDS rounds
#   4. decode    MB/s of tile_decode, and of zstd -d + tile_decode; zstd -d alone on the
#                v1 frame; the JavaScript decoder (clients/js/terrain.js) on the same
#                tiles, in Node.js
#   5. http      bench/http.sh: the server vs nginx on cache hits, cold tiles, RSS,
#                user-space instructions per hit (callgrind)
#   6. edits     bench/edits.sh: durable edits/s vs Redis appendfsync always, replay
#   7. erosion   ms per eroded region and tile (cold, warm), canyons; channel measures
#   8. swarm     bench/swarm.sh: 50 and 500 simulated players, beside wrk
#   9. bakes     a cold tile of a chunk with 0, 10^3, 10^5 edits: replayed, baked
#  10. snapshots bench/snapshots.sh: start-up and RSS with 10^6 and 10^7 logged edits,
#                whole log, from a snapshot, after --compact-log (about 3 minutes)
#  11. front     bench/front.sh: the swarm through nginx (docker/nginx.conf): node cache
#                hits with consistent hashing, round robin, one node; tiles/s, CPU/request
#  12. cold      bench/cold.sh: server CPU per cold tile beside the same tiles made in
#                process, cold tiles/s on 2 workers, beside COLD_BASELINE (a server
#                binary of the tree before) when set
#  13. maps      a cold web map tile (Terrarium, shaded; PNG) beside a cold LOD-0 tile
#  14. cluster   bench/cluster.sh: 3 nodes on one Redis edit log: edits/s vs Redis XADD,
#                visibility lag across nodes; bench/late_joiner.sh: a node joining after
#                10^6 and 10^7 edits, append latency while snapshots are shared;
#                bench/redis_memory.sh: Redis used_memory against its bound up to 10^6 edits,
#                snapshot write and share times, append p99 with and without one
#  15. precision bench/precision.sh: bytes and requests per player-minute of a 20 m/s
#                walk, today's client beside far rings at ?precision=; zstd per LOD
#                and precision beside PNG16; local mode (--local) in a world with 1% of
#                its chunks edited beside the precision client
#  16. wasm      bench/wasm.sh: terrain.wasm in Node.js: decoding beside the JavaScript
#                decoder, generation beside the native scalar and SIMD builds
#  17. restart   bench/restart.sh: the first tile of a chunk with 10^5 edits after a
#                restart, beside unedited cold tiles asked before and after it; smooth
#                and rough edits, the log replayed whole or from a snapshot; beside
#                RESTART_BASELINE (a server binary of the tree before) when set
#  18. reverts   bench/reverts.sh: a revert of 10^4 edits by one player in a world of
#                10^6 edits: its latency, and until every affected tile is served at
#                its version, beside the same tiles cold; log bytes per edit, record
#                versions 2 and 3 (about a minute)
# and a summary of the issue's targets. Figures are printed, never asserted.
# Timed figures are medians of interleaved rounds (bench.h: the figures of a
# table, or of a row, take turns batch by batch), and the rows of sections
# 1 to 4 end with "load", the 1-minute load average they ran at.
# The same text goes to BUILD_DIR/bench/results.md. About 4 minutes for
# sections 1-4, plus about 4-6 for section 5 (its tables also in
# BUILD_DIR/bench/http-results.md).
#
# An anchor that cannot be built here (its package or source missing, see
# below) is skipped with a line saying why, and so is a program that does
# not build or fails: the run goes on. `make bench` installs the packages
# first (scripts/deps.sh bench).
#
# Env: CC (cc), CXX (g++) (make's, through the environment), BENCH_OPT (the
# programs' OPT, -O3), BENCH_CPU (CPU to pin to, default 1; empty: no
# pinning), BENCH_SECTIONS (default "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", any subset), TILEBENCH_ARGS
# (the harness options, default below), HARNESS_ROUNDS (section 3's rounds
# of the harness, default 3; about 40 s each), COLD_BASELINE (a
# terrain-server of another tree, section 12's anchor; bench/cold.sh), and
# section 1's anchors from outside this repository (absent: skipped, with a
# line; paths may be relative to where this script starts):
#   FASTNOISE2     a FastNoise2 source folder (github.com/Auburn/FastNoise2;
#                  FASTNOISE2_DIR works too), and FASTSIMD its FastSIMD
#                  dependency at the commit its src/CMakeLists.txt names
#                  (default FASTNOISE2/../FastSIMD): the Makefile has CMake
#                  build them in BUILD_DIR/bench/fastnoise2, never
#                  downloading. FastSIMD picks the level at run time, so the
#                  build runs on any x86-64 CPU.
#   FASTNOISELITE  FastNoiseLite's C header, the file C/FastNoiseLite.h of
#                  github.com/Auburn/FastNoiseLite: compiled on its own into
#                  BUILD_DIR/bench/fnl.
# For example, with both fetched into /work/scratch:
#   FASTNOISE2=/work/scratch/fn2/FastNoise2 \
#   FASTNOISELITE=/work/scratch/fnl/FastNoiseLite/C/FastNoiseLite.h \
#       BENCH_SECTIONS="1 3" bash bench/run.sh build-bench
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: bench/run.sh BUILD_DIR   (after: make BUILD=BUILD_DIR OPT=-O3 all)" >&2
	exit 2
fi
[ -d "$1" ] || { echo "bench: no build folder $1" >&2; exit 1; }
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || (cd "$here/.." && pwd))"
out="$build/bench"
results="$out/results.md"
cc="${CC:-cc}"
cpu="${BENCH_CPU-1}"
sections="${BENCH_SECTIONS:-1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18}"
tilebench_args="${TILEBENCH_ARGS:---quick -c png16,lerc,trgb-png,=q1cm-lz21-shuf+zstd3 -V smooth,gentle -L 0}"

# The anchors' sources outside this repository, named relative to where
# this script was started: absolute for make, which runs at the root.
for anchor_var in FASTNOISE2 FASTNOISE2_DIR FASTSIMD FASTSIMD_DIR FASTNOISELITE; do
	anchor_path="${!anchor_var:-}"
	case "$anchor_path" in
	"" | /*) ;;
	*) [ -e "$anchor_path" ] && export "$anchor_var=$(cd "$(dirname "$anchor_path")" && pwd)/$(basename "$anchor_path")" ;;
	esac
done

if [ ! -f "$build/libcommon.a" ]; then
	echo "bench: $build/libcommon.a missing: make BUILD=$1 OPT=-O3 $1/libcommon.a" >&2
	exit 1
fi
cd "$root"
mkdir -p "$out"
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

# ---------------------------------------------------------------- build

# Every program comes from the Makefile (`make bench-programs`: the world's
# flags, the same libraries as the server); the anchors it cannot build
# here (FastNoise2 without FASTNOISE2, FastNoiseLite without FASTNOISELITE,
# libnoise without libnoise-dev, stb without libstb-dev, LERC without
# liblerc-dev) are left out, and the sections say so. A program that fails
# to build stops only the sections that run it (make -k), each saying so.
say "building the bench programs into $out (make bench-programs)"
if ! bench_make "$build" -k bench-programs; then
	say "some bench programs did not build (make's output above): their sections say so and are skipped"
fi
pin=()
if [ -n "$cpu" ] && command -v taskset >/dev/null && taskset -c "$cpu" true 2>/dev/null; then
	pin=(taskset -c "$cpu")
fi
run() { "${pin[@]}" "$@"; }

# ---------------------------------------------------------------- output

# TSV on stdin (header row, rows, "note: " lines) to a padded markdown
# table; columns whose cells are all numbers are right-aligned.
table() {
	awk -F '\t' '
	function rep(c, n,   s) { s = ""; while (n-- > 0) s = s c; return s }
	/^note: / { notes[++nn] = substr($0, 7); next }
	{
		nr++
		if (NF > nf) nf = NF
		for (i = 1; i <= NF; i++) {
			cell[nr, i] = $i
			if (length($i) > w[i]) w[i] = length($i)
			if (nr > 1 && $i !~ /^[-+]?[0-9.]+x?( \*)?$/ && $i !~ /^[0-9]+\/[0-9]+( \*)?$/ && $i != "n/a")
				text[i] = 1
		}
	}
	END {
		for (r = 1; r <= nr; r++) {
			line = "|"
			for (i = 1; i <= nf; i++) {
				c = cell[r, i]; pad = rep(" ", w[i] - length(c))
				line = line " " (r > 1 && !text[i] ? pad c : c pad) " |"
			}
			print line
			if (r > 1) continue
			line = "|"
			for (i = 1; i <= nf; i++)
				line = line (text[i] ? " " rep("-", w[i]) " |" : " " rep("-", w[i] - 1) ": |")
			print line
		}
		if (nn) print ""
		for (k = 1; k <= nn; k++) print "- " notes[k]
	}'
}

emit() { tee -a "$results"; }

section() { printf '\n## %s\n\n' "$1" | emit; }

# ---------------------------------------------------------------- sections

# The note of an anchor the Makefile skipped (BUILD_DIR/bench/NAME.skip
# says why): "note: LABEL anchor skipped: why", nothing when it was built.
skip_note() {
	[ -s "$out/$1.skip" ] && echo "note: $2 anchor skipped: $(cat "$out/$1.skip")"
	return 0
}

# have PROG WHAT: whether BUILD_DIR/bench/PROG was built; if not, a line
# saying that WHAT is skipped.
have() {
	[ -x "$out/$1" ] && return 0
	echo "$1 was not built (see make's output above): $2 skipped" | emit
	return 1
}

# bench_table PROG TSV [ARG...]: the rows of BUILD_DIR/bench/PROG ARG...
# as a table (into TSV too, unless TSV is ""); when PROG was not built or
# fails, a line saying so instead, and the run goes on.
bench_table() {
	local prog="$1" tsv="$2" rc=0
	shift 2
	have "$prog" "its table" || return 0
	run "$out/$prog" "$@" | tee ${tsv:+"$tsv"} | table | emit || rc=$?
	if [ "$rc" != 0 ]; then
		echo "$prog failed (exit $rc): its table is skipped" | emit
		[ -z "$tsv" ] || rm -f "$tsv"
	fi
	return 0
}

noise() {
	local rc=0
	section "1. Noise: 6-octave fBm (wavelength 1024 m, gain 0.5, lacunarity 2), ns per sample"
	say "section 1: noise"
	if [ ! -x "$out/noise_bench" ]; then
		echo "noise_bench not built: stb_perlin.h missing (libstb-dev: scripts/deps.sh bench), skipped" | emit
		return 0
	fi
	run "$out/noise_bench" >"$out/noise.tsv" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "noise_bench failed (exit $rc), section 1 skipped" | emit
		rm -f "$out/noise.tsv"
		return 0
	fi
	{
		awk -F '\t' '
		/^note: / { print; next }
		!seen++ { print $1 "\t" $2 "\tMsamples/s\tstb_perlin time / this\tthis / FastNoise2 best\t" $3; next }
		{ name[++n] = $1; ns[n] = $2; load[n] = $3; if ($1 ~ /stb_perlin/) stb = $2
		  if ($1 ~ /FastNoise2.*this CPU.s best/) fn2 = $2 }
		END {
			for (i = 1; i <= n; i++)
				printf "%s\t%s\t%.1f\t%s\t%s\t%s\n", name[i], ns[i], 1000 / ns[i],
				       stb ? sprintf("%.2fx", stb / ns[i]) : "n/a",
				       fn2 ? sprintf("%.2fx", ns[i] / fn2) : "n/a", load[i]
		}' "$out/noise.tsv"
		skip_note fastnoise2 FastNoise2
		skip_note fastnoiselite FastNoiseLite
		echo "note: every row is timed in one process, its batches interleaved with every other" \
			"row's (7 rounds, the median); load: the 1-minute load average when they ended"
		echo "note: each kind timed as the generator runs it: fbm_init + fbm_row over 257 rows" \
			"of 257 samples (a LOD-0 tile), cycling over 16 chunks"
		echo "note: stb_perlin and libnoise evaluate 3D noise point by point (libnoise in double)"
		echo "note: the clone rows run copies of noise.c and fbm.c built for one instruction set" \
			"each (bench/variant.h), checked bit for bit against the library first; \"ours: perlin\"" \
			"is the clone the loader picked"
		grep -q '^anchor: FastNoise2 ' "$out/noise.tsv" &&
			echo "note: FastNoise2: FractalFBm over Perlin, GenUniformGrid2D of the whole tile," \
				"feature scale 1024, at the best SIMD level FastSIMD detects on this CPU, and" \
				"capped at AVX2 when the best is above it; its commit and level in the name"
		grep -q '^anchor: FastNoiseLite ' "$out/noise.tsv" &&
			echo "note: FastNoiseLite: its C header (FASTNOISELITE), fnlGetNoise2D of a Perlin" \
				"FBm (6 octaves, gain 0.5, lacunarity 2, frequency 1/1024, seed 42) point by" \
				"point; built -O3 -fwrapv with the world flags, no -march: scalar"
		echo "note: targets: perlin >= 5x faster than stb_perlin; at most 0.5x FastNoise2 at" \
			"this CPU's best level (issue 20, AVX-512 there)"
	} | table | emit
}

presets() {
	section "2. Presets: one tile, single-threaded, ms per tile"
	say "section 2: presets"
	bench_table preset_bench "$out/presets.tsv"
}

# One round of the shared harness into DIR (its CSV and tables there),
# installing its -dev packages once when it asks for them and may.
harness_round() {
	local shared="$1" dir="$2" rc=0
	mkdir -p "$dir"
	# shellcheck disable=SC2086
	RESULTS="$dir" WORK="$out/compress/work" PIN_CPU="$cpu" \
		bash "$shared/compress/run.sh" $tilebench_args >"$dir/tilebench.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ] && grep -q "rerun with --install" "$dir/tilebench.log" && [ "$(id -u)" = 0 ]; then
		say "harness needs its -dev packages: rerunning with --install"
		rc=0
		# shellcheck disable=SC2086
		RESULTS="$dir" WORK="$out/compress/work" PIN_CPU="$cpu" \
			bash "$shared/compress/run.sh" --install $tilebench_args >"$dir/tilebench.log" 2>&1 || rc=$?
	fi
	return "$rc"
}

# The shared anchor harness (PNG16, Terrain-RGB, LERC on its own terrain):
# HARNESS_ROUNDS rounds, each running every codec in turn; sizes from the
# first (the same in every round), speeds the median over the rounds.
harness() {
	local shared="$root/../shared/bench" dir="$out/compress" rounds="${HARNESS_ROUNDS:-3}"
	local r rc csv md csvs=() loads=()
	if [ ! -x "$shared/compress/run.sh" ] && [ ! -f "$shared/compress/run.sh" ]; then
		echo "anchor harness not found at $shared/compress, skipped" | emit
		return 0
	fi
	rm -rf "$dir"
	for ((r = 1; r <= rounds; r++)); do
		say "section 3: anchor harness $shared/compress, round $r of $rounds ($tilebench_args; about 40 s)"
		rc=0
		harness_round "$shared" "$dir/round$r" || rc=$?
		# shellcheck disable=SC2012  # the harness names its files tilebench-<stamp>.csv
		csv="$(ls -t "$dir/round$r"/tilebench-*.csv 2>/dev/null | head -n 1 || true)"
		if [ "$rc" != 0 ] || [ -z "$csv" ]; then
			echo "anchor harness failed (exit $rc: $(tail -n 1 "$dir/round$r/tilebench.log" 2>/dev/null)," \
				"see $dir/round$r/tilebench.log), skipped" | emit
			return 0
		fi
		csvs+=("$csv")
		loads+=("$(cut -d' ' -f1 /proc/loadavg)")
	done
	md="${csvs[0]%.csv}.md"
	# shellcheck disable=SC2016  # the backquotes are markdown
	printf '\nAnchor harness `%s` (`%s`), on its own synthetic terrain, rounds: %s; full tables in `%s`:\n\n' \
		"../shared/bench/compress/run.sh" "$tilebench_args" "$rounds" "${md#"$root"/}" | emit
	awk -F ',' -v loads="${loads[*]}" '
	function median(v, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	FNR == 1 { r++; for (i = 1; i <= NF; i++) col[$i] = i; next }
	{ k = $col["dataset"] SUBSEP $col["codec"]
	  if (r == 1) {
		n++; key[n] = k; ds[n] = $col["dataset"]; name[n] = $col["codec"]; step[n] = $col["step_m"]
		b[n] = $col["bytes_med"]; bps[n] = $col["bits_per_sample_med"]; wide[n] = $col["wide_tiles"]
		if ($col["codec"] == "png16-1cm-def") png[$col["dataset"]] = $col["bytes_med"]
	  } else if ($col["bytes_med"] != b1[k])
		differ[k] = 1
	  if (r == 1) b1[k] = $col["bytes_med"]
	  dec[k, r] = $col["dec_MBps_med"] }
	END {
		nl = split(loads, l, " ")
		load = median(l, nl)
		print "harness dataset\tencoding\tstep m\tmedian B/tile\tbits/sample\t" \
		      "/ png16-1cm-def\tdec MB/s\tload"
		for (i = 1; i <= n; i++) {
			for (j = 1; j <= r; j++) v[j] = dec[key[i], j]
			printf "%s\t%s\t%s\t%.0f\t%.2f\t%s\t%.0f\t%.2f\n", ds[i],
			       name[i] (wide[i] > 0 ? " *" : "") (differ[key[i]] ? " +" : ""),
			       step[i], b[i], bps[i], png[ds[i]] ? sprintf("%.3f", b[i] / png[ds[i]]) : "n/a",
			       median(v, r), load
		}
	}' "${csvs[@]}" >"$out/harness.tsv"
	{
		cat "$out/harness.tsv"
		sed -n 's/^## \([^:]*\): .*tile range median \([0-9.]*\) m.*rms |grad| \([0-9.]*\) m\/m, \([0-9]*\/[0-9]*\) tiles.*/note: \1: tile range median \2 m, rms |grad| \3 m\/m, \4 tiles need > u16 at 1 cm/p' "$md"
		echo "note: * some tiles did not fit 16 bits at this step: a coarser step was used there"
		grep -q ' +	' "$out/harness.tsv" &&
			echo "note: + its median size differed between rounds: the first round's is shown"
		echo "note: q1cm-lz21-shuf+zstd3 is the harness codec closest to our tile format" \
			"(lz21 predictor, byte planes, zstd3), on the harness terrain"
		echo "note: sizes from the first round (the harness's terrain is fixed); dec MB/s: the" \
			"median over the rounds (HARNESS_ROUNDS=$rounds), each round running every codec in" \
			"turn and giving the harness's median of its passes; load: the median of the 1-minute" \
			"load averages at the rounds' ends (${loads[*]})"
	} | table | emit
}

size() {
	section "3. Size: bytes per LOD-0 tile (257 x 257 at 1 cm), median of 16 tiles"
	say "section 3: size"
	bench_table size_bench "$out/size.tsv"
	harness
}

decode() {
	section "4. Decode: LOD-0 tiles, single-threaded"
	say "section 4: decode"
	mkdir -p "$out/jstiles"
	bench_table decode_bench "$out/decode.tsv" "$out/jstiles"
	if ! command -v node >/dev/null; then
		echo "JavaScript decoder: skipped (no node)" | emit
	elif [ ! -f "$out/decode.tsv" ]; then
		echo "JavaScript decoder: skipped (no tiles from decode_bench)" | emit
	else
		echo | emit
		run node "$here/js_decode.mjs" "$out/jstiles" | tee "$out/js_decode.tsv" | table | emit ||
			echo "JavaScript decoder failed (exit $?), skipped" | emit
	fi
}

# The issue's four targets, from the TSV files of this run.
summary() {
	local perlin stb fn2 fn2l gen size dec decv1 decv5 enc encv1 encv5 cold coldx prec localc localr wdec wgen jsdec restart
	section "Targets (issues 2, 20, 27, 29, 30 and 40), this run; n/a: its section did not run"
	perlin="$(awk -F '\t' '$1 == "ours: perlin" { print $2 }' "$out/noise.tsv" 2>/dev/null || true)"
	stb="$(awk -F '\t' '$1 ~ /stb_perlin/ { print $2 }' "$out/noise.tsv" 2>/dev/null || true)"
	fn2="$(awk -F '\t' '$1 ~ /FastNoise2.*this CPU.s best/ { print $2 }' "$out/noise.tsv" 2>/dev/null || true)"
	fn2l="$(sed -n 's/^anchor: FastNoise2 .*, \([^ ]*\) (this CPU.s best)\t.*/\1/p' "$out/noise.tsv" 2>/dev/null || true)"
	gen="$(awk -F '\t' '$1 == "default" { print $5 }' "$out/presets.tsv" 2>/dev/null || true)"
	size="$(awk -F '\t' '$1 == "default" { print $14 }' "$out/size.tsv" 2>/dev/null || true)"
	sizea="$(awk -F '\t' '$1 == "alpine" { print $14 }' "$out/size.tsv" 2>/dev/null || true)"
	dec="$(awk -F '\t' '$1 == "default" { print $2 }' "$out/decode.tsv" 2>/dev/null || true)"
	decz="$(awk -F '\t' '$1 == "default" { print $4 }' "$out/decode.tsv" 2>/dev/null || true)"
	# issue 40: version 7 against version 1 (and 5) in the same rows
	decv1="$(awk -F '\t' '$1 == "default" { print $4 / $7 }' "$out/decode.tsv" 2>/dev/null || true)"
	enc="$(awk -F '\t' '$1 == "default" { print $10 }' "$out/decode.tsv" 2>/dev/null || true)"
	encv1="$(awk -F '\t' '$1 == "default" { print $10 / $12 }' "$out/decode.tsv" 2>/dev/null || true)"
	encv5="$(awk -F '\t' '$1 == "default" { print $10 / $11 }' "$out/decode.tsv" 2>/dev/null || true)"
	decv5="$(awk -F '\t' '$1 == "default" { print $4 / $6 }' "$out/decode.tsv" 2>/dev/null || true)"
	cold="$(awk -F '\t' '$1 == "this" { sub(/x$/, "", $3); print $3 }' "$out/cold.tsv" 2>/dev/null || true)"
	prec="$(awk -F '\t' '$1 == "revalidating" && $2 == "precision" { sub(/x$/, "", $8); print $8 }' "$out/precision.tsv" 2>/dev/null || true)"
	coldx="$(awk -F '\t' '$1 == "this" && $10 != "n/a" { sub(/x$/, "", $10); print $10 }' "$out/cold.tsv" 2>/dev/null || true)"
	localc="$(awk -F '\t' '$1 == "cold" && $2 == "local" { sub(/x$/, "", $9); print $9 }' "$out/precision_local.tsv" 2>/dev/null || true)"
	wdec="$(awk -F '\t' '$1 ~ /^decode \(/ { print $5 / $4 }' "$out/wasm.tsv" 2>/dev/null || true)"
	wold="$(awk -F '\t' '$1 ~ /^decode, version 3/ && $5 != "-" { print $5 / $4 }' "$out/wasm.tsv" 2>/dev/null || true)"
	wgen="$(awk -F '\t' '$1 ~ /^generate/ { sub(/x$/, "", $6); print $6 }' "$out/wasm.tsv" 2>/dev/null || true)"
	localr="$(awk -F '\t' '$1 == "revalidating" && $2 == "local" { sub(/x$/, "", $9); print $9 }' "$out/precision_local.tsv" 2>/dev/null || true)"
	jsdec="$(awk -F '\t' '$1 == "format version 7" { print $2 }' "$out/js_decode.tsv" 2>/dev/null || true)"
	restart="$(awk -F '\t' '$1 == "smooth" && $2 != 0 && $3 == "this" { print $4 }' "$out/restart.tsv" 2>/dev/null || true)"
	awk -F '\t' -v p="$perlin" -v s="$stb" -v q="$fn2" -v ql="$fn2l" -v g="$gen" -v z="$size" -v d="$dec" \
		-v za="$sizea" -v dz="$decz" -v js="$jsdec" -v d1="$decv1" -v d5="$decv5" -v e="$enc" \
		-v e1="$encv1" -v e5="$encv5" \
		-v c="$cold" -v cx="$coldx" -v pr="$prec" -v lc="$localc" -v lr="$localr" -v wd="$wdec" -v wo="$wold" -v wg="$wgen" -v rs="$restart" '
	function row(what, goal, v, fmt, ok) {
		if (v == "") { printf "%s\t%s\tn/a\tn/a\n", what, goal; return }
		printf "%s\t%s\t" fmt "\t%s\n", what, goal, v, ok ? "yes" : "no"
	}
	BEGIN {
		print "target\tgoal\tthis run\tmet"
		row("perlin fBm: stb_perlin time / ours", ">= 5x", p && s ? s / p : "", "%.2fx", p && s / p >= 5)
		row("perlin fBm ns/sample (aim)", "<= 10 ns", p, "%.1f ns", p <= 10)
		row("perlin fBm: ours / FastNoise2 at this CPU\047s best level" (ql != "" ? ", " ql : "") \
		    " (issue 20: AVX-512)", "<= 0.5x",
		    p && q ? p / q : "", "%.2fx", p && q && p / q <= 0.5)
		row("default: generate + encode + zstd, LOD 0", "< 2 ms", g, "%.2f ms", g < 2)
		row("the same (issue 20)", "< 0.6 ms", g, "%.2f ms", g < 0.6)
		row("default: zstd / PNG16 (libpng default)", "<= 0.4", z, "%.3f", z <= 0.4)
		row("default: zstd / PNG16 (issue 20)", "<= 0.30", z, "%.3f", z <= 0.30)
		row("alpine: zstd / PNG16 (issue 20)", "<= 0.50", za, "%.3f", za <= 0.50)
		row("default: tile_decode", "> 500 MB/s", d, "%.0f MB/s", d > 500)
		row("default: zstd -d + tile_decode (issue 20)", ">= 1000 MB/s", dz, "%.0f MB/s", dz >= 1000)
		row("the same (issues 30, 40)", ">= 1500 MB/s", dz, "%.0f MB/s", dz >= 1500)
		row("the same, version 7 / version 1 (issue 40)", ">= 1x", d1, "%.2fx", d1 >= 1)
		row("the same, version 7 / version 5", "> 1x", d5, "%.2fx", d5 > 1)
		row("default: tile_encode (issue 40)", "<= 150 us", e, "%.0f us", e <= 150)
		row("the same, time of version 7 / version 1 (issue 40)", "<= 1x", e1, "%.2fx", e1 <= 1)
		row("the same, time of version 7 / version 5", "< 1x", e5, "%.2fx", e5 < 1)
		row("JavaScript decoder, warm default LOD-0 tile (issue 30)", "<= 1 ms", js, "%.2f ms", js <= 1)
		row("server CPU per cold tile / in process (issue 20)", "<= 1.15x", c, "%.2fx", c <= 1.15)
		row("cold tiles/s, 2 workers / the tree before (issue 20)", ">= 1.6x", cx, "%.2fx", cx >= 1.6)
		row("bytes per player-minute, precision client / today, revalidating (issue 20)", "<= 0.5x",
		    pr, "%.2fx", pr <= 0.5)
		row("bytes per player-minute, --local / precision client, 1% edited, cold (issue 29)", "<= 0.05x",
		    lc, "%.4fx", lc <= 0.05)
		row("the same, revalidating every 10 s (issue 29)", "<= 0.05x", lr, "%.4fx", lr <= 0.05)
		row("LOD-0 tile decoding, JavaScript decoder / terrain.wasm in Node.js (issue 29)", ">= 5x",
		    wd, "%.2fx", wd >= 5)
		row("the same, the JavaScript decoder the issue measured (version 3 tiles)", ">= 5x",
		    wo, "%.2fx", wo >= 5)
		row("version-7 (tANS) tile decoding, JavaScript decoder / terrain.wasm in Node.js", "<= 2x",
		    wd, "%.2fx", wd <= 2)
		row("default LOD-0 generation, terrain.wasm in Node.js / native scalar (issue 29)", "<= 3x",
		    wg, "%.2fx", wg <= 3)
		row("first tile of a chunk with 10^5 edits after a restart / unedited (issue 27)",
		    "<= 1.5x", rs, "%.2fx", rs <= 1.5)
	}' | table | emit
}

preamble() {
	local commit host
	commit="$(git describe --always --dirty 2>/dev/null || echo unknown)"
	host="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
	{
		echo "# Terrain core benchmarks"
		echo
		echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, build \`${build#"$root"/}\`"
		echo "- host: ${host:-unknown}, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" \
			"at start; ${pin[*]:-no pinning}"
		echo "- $("$cc" --version | head -n 1); zstd $(pkg-config --modversion libzstd 2>/dev/null ||
			echo '?'), libpng $(pkg-config --modversion libpng 2>/dev/null || echo '?')"
		echo "- times: thread CPU time, median of 7 interleaved batches of >= 40 ms each" \
			"after a warm-up; single thread; seed 42"
		echo "- reproduce: \`make bench\` (or \`bash bench/run.sh ${build#"$root"/}\`" \
			"after building libcommon.a with OPT=-O3)"
	} | emit
}

: >"$results"
rm -f "$out"/noise.tsv "$out"/presets.tsv "$out"/size.tsv "$out"/decode.tsv "$out"/harness.tsv \
	"$out"/cold.tsv "$out"/cold_inproc.tsv "$out"/precision.tsv "$out"/precision_local.tsv "$out"/wasm.tsv \
	"$out"/js_decode.tsv "$out"/restart.tsv
preamble
for s in $sections; do
	case "$s" in
	1) noise ;;
	2) presets ;;
	3) size ;;
	4) decode ;;
	5) bash "$here/http.sh" "$build" | emit || say "section 5: bench/http.sh failed (exit $?)" ;;
	6) bash "$here/edits.sh" "$build" | emit || say "section 6: bench/edits.sh failed (exit $?)" ;;
	7) section "7. Erosion: cost and effect, single-threaded"
	   say "section 7: erosion"
	   bench_table erosion_bench "" ;;
	8) bash "$here/swarm.sh" "$build" | emit || say "section 8: bench/swarm.sh failed (exit $?)" ;;
	9) section "9. Baked edits: a cold LOD-0 default tile of a chunk with 0, 10^3, 10^5 edits"
	   say "section 9: baked edits"
	   bench_table bake_bench "" ;;
	10) bash "$here/snapshots.sh" "$build" | emit || say "section 10: bench/snapshots.sh failed (exit $?)" ;;
	11) bash "$here/front.sh" "$build" | emit || say "section 11: bench/front.sh failed (exit $?)" ;;
	12) section "12. Cold tiles: what the server adds (issues 20, 40)"
	    say "section 12: cold tiles (bench/cold.sh)"
	    if bash "$here/cold.sh" "$build" | emit; then
		    table <"$out/cold_inproc.tsv" | emit
		    echo | emit
		    table <"$out/cold.tsv" | emit
		    echo | emit
		    table <"$out/cold_rounds.tsv" | emit
	    else
		    say "section 12: bench/cold.sh failed (exit $?)"
	    fi ;;
	13) section "13. Web map tiles: a cold 256 x 256 PNG beside a cold LOD-0 binary tile, single-threaded"
	   say "section 13: map tiles"
	   bench_table maps_bench "" ;;
	14) bash "$here/cluster.sh" "$build" | emit || say "section 14: bench/cluster.sh failed (exit $?)"
	    bash "$here/late_joiner.sh" "$build" | emit || say "section 14: bench/late_joiner.sh failed (exit $?)"
	    bash "$here/redis_memory.sh" "$build" | emit || say "section 14: bench/redis_memory.sh failed (exit $?)" ;;
	15) section "15. Fewer bytes per player: coarser heights for far rings (issue 20)"
	    if bash "$here/precision.sh" "$build" >"$out/precision.out"; then
		    table <"$out/precision.tsv" | emit
		    echo | emit
		    table <"$out/precision_local.tsv" | emit
		    echo | emit
		    table <"$out/precision_size.tsv" | emit
	    else
		    say "section 15: bench/precision.sh failed (exit $?)"
	    fi ;;
	16) section "16. WebAssembly: the core in Node.js (issue 29)"
	    if bash "$here/wasm.sh" "$build" >"$out/wasm.out"; then
		    table <"$out/wasm.tsv" | emit
	    else
		    say "section 16: bench/wasm.sh failed (exit $?)"
	    fi ;;
	17) say "section 17: the first tile after a restart (bench/restart.sh)"
	    bash "$here/restart.sh" "$build" | emit || say "section 17: bench/restart.sh failed (exit $?)" ;;
	18) say "section 18: reverts (bench/reverts.sh)"
	    bash "$here/reverts.sh" "$build" | emit || say "section 18: bench/reverts.sh failed (exit $?)" ;;
	*) say "unknown section $s" ;;
	esac
done
summary
printf '\n(load %s at the end)\n' "$(cut -d' ' -f1-3 /proc/loadavg)" | emit
say "written $results"
