#!/bin/bash
# fuzz-long.sh - run every libFuzzer target of a build for a set time, all
# at once, each under nice, each with its corpus kept between runs.
# Usage: scripts/fuzz-long.sh [BUILD_DIR [CORPUS_DIR]]   (make fuzz-long)
#   FUZZ_TIME   seconds per target (default 3600)
#   FUZZ_RUNS   also stop a target after this many executions (default: none)
#   FUZZ_NICE   nice level (default 19: the machine is shared)
#   FUZZ_ONLY   space-separated target names to run (default: every
#               BUILD_DIR/fuzz_* binary)
#   FUZZ_JOBS   processes per target (default 1), each with its own log
#               (NAME.K.log past the first) and -seed, all growing the same
#               corpus; their executions are added up
# Target NAME (BUILD_DIR/fuzz_NAME) grows CORPUS_DIR/NAME, starting from the
# seeds in tests/fuzz/fuzz_NAME/ when that folder exists, with the dictionary
# tests/fuzz/fuzz_NAME.dict when it exists. Its log is CORPUS_DIR/NAME.log; a
# crash is saved as CORPUS_DIR/NAME-crash-*. Each run adds one line per
# target to CORPUS_DIR/runs.log: date, target, seconds, executions this
# run, executions over every run so far, corpus size, exit status. Exits 1
# when a target found something.
set -u
build=${1:-build-fuzz}
corpus=${2:-fuzz-corpus}
time=${FUZZ_TIME:-3600}
nice=${FUZZ_NICE:-19}
jobs=${FUZZ_JOBS:-1}
mkdir -p "$corpus"

names=()
for bin in "$build"/fuzz_*; do
	[ -x "$bin" ] && [ -f "$bin" ] || continue
	names+=("${bin##*/fuzz_}")
done
[ -n "${FUZZ_ONLY:-}" ] && read -r -a names <<< "$FUZZ_ONLY"
[ ${#names[@]} -gt 0 ] || { echo "fuzz-long: no $build/fuzz_* (make fuzz first)" >&2; exit 2; }

# log NAME K: the log of job K (1..) of target NAME
log() { if [ "$2" = 1 ]; then echo "$corpus/$1.log"; else echo "$corpus/$1.$2.log"; fi; }

pids=()
for n in "${names[@]}"; do
	args=(-max_total_time="$time" -print_final_stats=1 -artifact_prefix="$corpus/$n-crash-")
	[ -n "${FUZZ_RUNS:-}" ] && args+=(-runs="$(( (FUZZ_RUNS + jobs - 1) / jobs ))")
	[ -f "tests/fuzz/fuzz_$n.dict" ] && args+=(-dict="tests/fuzz/fuzz_$n.dict")
	mkdir -p "$corpus/$n"
	seeds=()
	[ -d "tests/fuzz/fuzz_$n" ] && seeds=("tests/fuzz/fuzz_$n")
	echo "fuzz-long: $n for ${time}s under nice $nice, $jobs job(s) (log: $corpus/$n.log)"
	for k in $(seq 1 "$jobs"); do
		# With the kernel's autogroups, nice orders threads only inside
		# their session: the target gets a session of its own (setsid)
		# and gives it the nice level too, from inside it, before it starts.
		setsid sh -c 'echo "$1" > /proc/self/autogroup 2>/dev/null; shift; exec nice -n "$0" "$@"' \
			"$nice" "$nice" "$build/fuzz_$n" "${args[@]}" -seed="$((RANDOM * 32768 + RANDOM + k))" \
			"$corpus/$n" "${seeds[@]}" > "$(log "$n" "$k")" 2>&1 &
		pids+=($!)
	done
done

status=0
for i in "${!names[@]}"; do
	n=${names[$i]}
	rc=0 execs=0
	for k in $(seq 1 "$jobs"); do
		wait "${pids[$((i * jobs + k - 1))]}" || rc=$?
		f=$(log "$n" "$k")
		e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$f" | tail -n 1)
		# no final stats (fuzz_http's server stops on SIGINT first): the
		# last status line's count
		[ -n "$e" ] || e=$(grep -ao '^#[0-9]*' "$f" | tail -n 1 | tr -d '#')
		execs=$((execs + ${e:-0}))
	done
	[ "$rc" = 0 ] || status=1
	prev=$(awk -v n="$n" '$2 == n { s = $5 } END { print s + 0 }' "$corpus/runs.log" 2>/dev/null)
	total=$((prev + ${execs:-0}))
	size=$(find "$corpus/$n" -type f | wc -l)
	echo "$(date -u +%FT%TZ) $n ${time}s ${execs:-0} $total $size rc=$rc" >> "$corpus/runs.log"
	printf 'fuzz-long: %-6s %12s executions this run, %12s over all runs, corpus %s files, exit %s\n' \
		"$n" "${execs:-0}" "$total" "$size" "$rc"
	[ "$rc" = 0 ] || for k in $(seq 1 "$jobs"); do tail -n 30 "$(log "$n" "$k")"; done
done
exit "$status"
